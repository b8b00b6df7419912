"""``surfacelab eval --from-log PATH``: another framework's per-document log (lm-evaluation-harness's samples log, ...;
``--reader`` names the framework when the path does not tell), beside DC-PMI.

Example::

    surfacelab eval --from-log out/my-model/ --domain " the answer is:" --model my-model

Without ``--model`` the log is read as it is (``acc`` and ``acc_norm`` from the logged log-likelihoods); with it,
the same strings are scored again (the log's model, so LM equals the logged values: the check is printed) and
``--domain`` adds Unc and DC-PMI. A folder of one run is read whole (every multiple-choice task, each document keeping
its task); ``--task`` picks one task or group of it (``--task mmlu_stem``). A run with groups (lm-eval's ``mmlu``) also
prints each group's accuracy beside the framework's own aggregate (``--wide``: every task as well). A log of lm-eval's
``--apply_chat_template`` has ``--domain`` rendered through the log's own chat template when it is the model's
(``--chat-template FILE`` names another; ``--system-instruction`` replaces the log's).
"""

from __future__ import annotations

import argparse
import re
import warnings
from pathlib import Path
from typing import Any

from . import _checks, _output
from .score import DEFAULT_SCORERS


def _views(res: Any, wide: bool) -> list[_output.TableSpec]:
    """The accuracy table (each scorer's metric in the framework and the framework's own aggregate beside it; the
    count of documents is in the line above it, so that the table fits 80 columns with every metric name), the
    groups of a run with groups (every task too when ``wide``; the tasks of a run of several tasks without groups),
    then the paired tests."""
    from ..task_groups import by_task

    acc, reader = res.accuracy, res.meta["reader"]
    accuracy = _output.TableSpec("accuracy", acc, ["scorer", "log_metric", "correct", "accuracy", "ci_low", "ci_high",
                                              "log_value"],
                            headers={"log_metric": reader, "ci_low": "CI low", "ci_high": "CI high",
                                     "log_value": f"{reader}'s"},
                            best={"accuracy": acc["accuracy"] == acc["accuracy"].max()},
                            caption=f"* the best scorer; CI: 95% percentile bootstrap over documents; {reader}'s: the "
                                    "aggregate the framework recorded for the run")
    views = [accuracy]
    table = by_task(res)
    several = table["task"].nunique() > 1
    if several:
        shown = table if wide or not (table["kind"] == "group").any() else table[table["kind"] == "group"]
        shown = shown.assign(shown=_shown_names(shown["task"].tolist(), shown["depth"].tolist()))
        views.append(_output.TableSpec(
            "by_task", shown, ["shown", "scorer", "n", "accuracy", "ci_low", "ci_high", "log_value", "log_stderr"],
            headers={"shown": "task", "ci_low": "low", "ci_high": "high", "log_value": reader,
                     "log_stderr": "± se", "mean": f"{reader} way", "stderr": "± se (its way)"},
            title="per group" if len(shown) < len(table) else "per group and task",
            caption=_by_task_caption(reader, res.meta.get("task_groups", {}), more=len(shown) < len(table))))
    return views + [_output.TableSpec("paired", res.paired, [str(c) for c in res.paired.columns],
                                      title="paired tests (exact McNemar)")]


def _shown_names(names: list[str], depths: list[int]) -> list[str]:
    """Each task or group as the per-group table shows it: indented by its depth, without the name of a group above it
    that it starts with (``mmlu`` > ``mmlu_stem`` > ``mmlu_anatomy``: ``mmlu``, ``  stem``, ``    anatomy``), so that
    the table fits 80 columns; ``--format json`` keeps the full names."""
    above: list[str] = []
    out = []
    for name, depth in zip(names, depths):
        above = above[:depth]
        prefix = max((a for a in above if name.startswith(a + "_")), key=len, default="")
        out.append("  " * depth + name[len(prefix) + 1 if prefix else 0:])
        above.append(name)
    return out


def _by_task_caption(reader: str, groups: dict[str, Any], more: bool) -> str:
    """What the per-group table's columns mean, and how the framework averages the tasks of a group."""
    how = {"size": "size-weighted: the mean over its documents, the pooled standard error",
           "plain": "the plain mean of its tasks, sqrt(sum se^2) / k"}
    rules = "; ".join(how[w] for w in dict.fromkeys(g["weighting"] for g in groups.values()))
    return (f"low, high: 95% bootstrap CI over documents; {reader} ± se: the score {reader} recorded"
            + (f" (a group's {rules})" if rules else "") + "; --wide: " + ("every task, and " if more else "")
            + f"surfacelab's numbers averaged the {reader} way")


def _notes(res: Any) -> list[str]:
    """What the table does not show (``log_notes``: the model's log-prob check, recomputed metrics that disagree
    with the log, a task hash that does not match, scorers left out, files passed over), and truncated contexts."""
    from ..logs import log_notes

    out = [f"note: {line}" for line in log_notes(res.meta)]
    cut = res.items[res.items["truncated"] > 0]
    if len(cut):
        out.append(f"note: the context of {len(cut)} documents was cut from the left to fit the model's window")
    return out


def run(args: argparse.Namespace) -> int:
    """Read ``args.from_log`` (a log file or folder), score it with ``--model`` if given, print the accuracies and
    write the per-document CSV; returns the exit code."""
    from ..logs import from_log

    if args.domain is not None and args.model is None:
        raise ValueError("--domain: scoring the domain premise needs --model (the model the log was run on)")
    batch = _checks.batch_size(args.batch_size)
    out = _checks.output_file(args.out, "--out", ".csv")
    save_dir = _checks.output_dir(args.save_dir, "--save-dir")
    chat_template = _checks.chat_template(args)
    lm = None
    if args.model is not None:
        _checks.machine(args.device)
        lm = _checks.causal_lm(args)
    # eval's default scorer list names model scorers; a log's run takes every scorer the log (and model) can give
    scorers = None if args.scorers == DEFAULT_SCORERS else args.scorers
    with warnings.catch_warnings():  # what the warnings say is printed as notes (log_notes)
        warnings.simplefilter("ignore", UserWarning)
        try:
            res = from_log(args.from_log, reader=args.reader, task=args.task, lm=lm, domain_premise=args.domain,
                           scorers=scorers, batch_size=batch, progress=not args.no_progress,
                           chat_template=chat_template)
        except ValueError as err:  # name the flags, not from_log's arguments
            arg, sep, rest = str(err).partition(": ")
            flags = {"path": "--from-log", "reader": "--reader", "task": "--task", "domain_premise": "--domain",
                     "scorers": "--scorers", **_checks.CHAT_FLAGS}
            rest = rest.replace("task=", "--task")
            raise ValueError(f"{flags[arg]}: {rest}" if sep and arg in flags else str(err)) from None
    if out is None:
        out = _checks.output_file(f"eval-{re.sub(r'[^A-Za-z0-9_.+-]', '_', res.task)}-{res.meta['reader']}-log.csv",
                                  "--out", ".csv")
    printer = _output.Printer(args.format, args.wide)
    n_tasks = res.items["task"].nunique()
    files = [Path(f) for f in res.meta["files"]]
    chat = res.meta.get("chat_template")
    printer.header([f"{res.task} ({res.template})", res.model or "model not named",
                    f"{len(res.items)} documents" + (f" of {n_tasks} tasks" if n_tasks > 1 else ""),
                    files[0].name if n_tasks == 1 else f"{len(files)} files in {files[0].parent}"]
                   + ([f"domain premise as a chat turn (template sha256 {chat['sha'][:12]})"] if chat else []))
    views = _views(res, args.wide)
    printer.show(views if args.wide or args.format == "json" else views[:-1],
                 extra={"meta": {"task": res.task, "split": res.split, "model": res.model, **res.meta}})
    _output.finish(printer, res, _notes(res), out, save_dir)
    return 0
