"""``surfacelab eval``: evaluate a model on a dataset split with several scorers.

Example::

    surfacelab eval --task copa --split val --scorers lm,avg,per_char,unc,dcpmi
    surfacelab eval --from-log out/my-model/ --domain " the answer is:" --model my-model
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

from ..logs import READERS
from . import _checks, _output, from_log
from ..tasks.registry import FAMILIES
from .score import DEFAULT_SCORERS, scorer_list


def _views(res: Any) -> list[_output.TableSpec]:
    acc = res.accuracy
    accuracy = _output.TableSpec("accuracy", acc, ["scorer", "n", "correct", "accuracy", "ci_low", "ci_high", "ties"],
                            headers={"ci_low": "95% CI low", "ci_high": "high"},
                            best={"accuracy": acc["accuracy"] == acc["accuracy"].max()},
                            caption="* the best scorer; CI: percentile bootstrap over items")
    why = res.items["why"].value_counts().rename_axis("why").reset_index(name="items")
    return [accuracy, _output.TableSpec("why", why, ["why", "items"]),
            _output.TableSpec("paired", res.paired, [str(c) for c in res.paired.columns],
                         title="paired tests (exact McNemar)")]


def _notes(res: Any) -> list[str]:
    """What the numbers above leave out: skipped items, truncated contexts, scorers that do not apply to the task."""
    out = []
    skipped = res.meta.get("skipped_too_long", [])
    if skipped:
        shown = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
        out.append(f"note: {len(skipped)} item{'s were' if len(skipped) > 1 else ' was'} skipped because an option "
                   f"does not fit the model's window ({shown}); the accuracy is over the other {len(res.items)}")
    cut = res.items[res.items["truncated"] > 0]
    if len(cut):
        out.append(f"note: the context of {len(cut)} item{'s' if len(cut) > 1 else ''} was cut from the left to fit "
                   f"the model's window (up to {int(cut['truncated'].max())} tokens); in "
                   f"{int(cut['truncation_differs'].sum())} of them the options were cut by different amounts "
                   "(columns truncated, truncation_differs of the per-item CSV)")
    out += [f"note: {s} is {why}" for s, why in res.meta.get("not_applicable", {}).items()]
    return out


#: tasks.load's argument names -> the flags that set them
LOAD_FLAGS = {"name": "--task", "split": "--split", "source": "--data-dir", "limit": "--limit", "sample": "--sample",
              "seed": "--seed",
              "variant": "--variant", "n_shot": "--n-shot", "shot_seed": "--shot-seed"}


def run(args: argparse.Namespace) -> int:
    """Run ``surfacelab eval`` from parsed arguments; prints the results and returns the exit code."""
    from .. import tasks
    from ..evaluate import evaluate
    from ..models import DEFAULT_LM

    if args.from_log is not None:
        return from_log.run(args)
    if args.task is None:
        raise ValueError("--task: required (or read another framework's log with --from-log PATH)")
    for flag, value, why in (("--domain", args.domain, "a task's domain premise comes from its template"),
                             ("--reader", args.reader, "it names the framework of a log")):
        if value is not None:
            raise ValueError(f"{flag}: only with --from-log ({why})")
    scorers = scorer_list(args.scorers)
    batch = _checks.batch_size(args.batch_size)
    _checks.machine(args.device)
    out = _checks.output_file(args.out, "--out", ".csv")
    save_dir = _checks.output_dir(args.save_dir, "--save-dir")
    chat_template = _checks.chat_template(args)
    with _checks.flags(LOAD_FLAGS):  # name the flag, not tasks.load's argument
        task = tasks.load(args.task, args.split, source=args.data_dir, limit=args.limit, sample=args.sample,
                          seed=args.seed,
                          variant=args.variant, n_shot=args.n_shot, shot_seed=args.shot_seed)
    if out is None:
        model = (args.model or DEFAULT_LM).replace("/", "_")
        out = _checks.output_file(f"eval-{task.name}-{task.split}-{model}.csv", "--out", ".csv")
    lm = _checks.causal_lm(args)
    with warnings.catch_warnings():  # truncation is reported below, as a note
        warnings.filterwarnings("ignore", message="Truncated to fit")
        with _checks.flags(_checks.CHAT_FLAGS):
            res = evaluate(lm, task, scorers, batch_size=batch, progress=not args.no_progress, too_long=args.too_long,
                           chat_template=chat_template)
    printer = _output.Printer(args.format, args.wide)
    chat = res.meta.get("chat_template")
    printer.header([f"{res.task}/{res.split}", res.model, f"template {res.template}", f"{len(res.items)} items"]
                   + ([f"as chat turns (template sha256 {chat['sha'][:12]})"] if chat else []))
    views = _views(res)
    printer.show(views if args.wide or args.format == "json" else views[:2],
                 extra={"meta": {"task": res.task, "split": res.split, "model": res.model, "template": res.template,
                                 **res.meta}})
    _output.finish(printer, res, _notes(res), out, save_dir)
    return 0


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``eval`` sub-command to an ``argparse`` sub-parser set (``surfacelab eval ...``)."""
    p = subparsers.add_parser("eval", help="evaluate a model on a dataset split with several scorers",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default=None, help="task name (see surfacelab.tasks.list_tasks()); with --from-log: the "
                                                "framework's task to read of a folder that holds several")
    p.add_argument("--from-log", default=None, metavar="PATH",
                   help="read another framework's per-document log, file or folder (lm-evaluation-harness "
                        "--log_samples, ...), instead of --task; with --model, LM is checked against the log and "
                        "--domain adds Unc and DC-PMI")
    p.add_argument("--reader", default=None, choices=list(READERS),
                   help="with --from-log: the framework that wrote the log (default: found from the path)")
    p.add_argument("--domain", default=None,
                   help="with --from-log: the domain premise for Unc / DC-PMI, e.g. ' the answer is:'")
    _checks.add_chat_arguments(p)
    p.add_argument("--split", default=None, help="split (default: the task's default split)")
    p.add_argument("--model", default=None,
                   help="preset, hub id or folder (default: smollm2-135m; with --from-log: none unless given)")
    p.add_argument("--data-dir", default=None,
                   help="data root laid out like data/eval (default: $SURFACELAB_DATA or data/eval), a dataset folder "
                        "or a .jsonl")
    p.add_argument("--scorers", default=DEFAULT_SCORERS, help=f"comma-separated (default: {DEFAULT_SCORERS})")
    subset = p.add_mutually_exclusive_group()
    subset.add_argument("--limit", type=int, default=None, metavar="N",
                        help="evaluate the first N items (as lm-evaluation-harness's --limit)")
    subset.add_argument("--sample", type=int, default=None, metavar="N",
                        help="evaluate a random sample of N items (see --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed of the --sample draw")
    p.add_argument("--variant", default="paper", choices=list(FAMILIES),
                   help="template family (default: paper, the templates of the paper's public code; "
                        "paper_table: its Table 7)")
    p.add_argument("--n-shot", type=int, default=0, help="few-shot examples prepended to every premise")
    p.add_argument("--shot-seed", type=int, default=0, help="seed of the few-shot draw")
    p.add_argument("--too-long", default="error", choices=["error", "skip"],
                   help="an item with an option longer than the model's window: stop and name it (default), or "
                        "skip it and report the count")
    p.add_argument("--device", default=None, help="cuda, cuda:N, mps or cpu (default: auto)")
    p.add_argument("--server", default=None,
                   help="score on a vLLM server that serves --model, e.g. http://127.0.0.1:8000/v1 (its API key, if "
                        "any, from $SURFACELAB_API_KEY, sent only when $SURFACELAB_SERVER names this server)")
    p.add_argument("--served-model", default=None, help="the model's name on --server, if it serves several")
    p.add_argument("--batch-size", default="auto", help="rows per batch or 'auto'")
    p.add_argument("--out", default=None, help="per-item .csv (default: eval-<task>-<split>-<model>.csv)")
    p.add_argument("--save-dir", default=None, help="also write every frame (items, scores, accuracy, paired)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _output.add_arguments(p)
    p.set_defaults(func=run)
    return p
