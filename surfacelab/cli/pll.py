"""``surfacelab pll``: PLL of sentences (with subword breakdowns) or BLiMP accuracy of a masked LM.

Examples::

    surfacelab pll --sentence "I bought a souvenir." --metric original --metric word_l2r --tokens
    surfacelab pll --sentence "a souvenir." --prefix "I bought"
    surfacelab pll --blimp data/eval/blimp --limit 100 --format markdown
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..pll import METRICS
from . import _checks, _output
from ..paths import write_atomic
from ..safecsv import to_csv

if TYPE_CHECKING:
    from ..models import MLM


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``pll`` sub-command to an ``add_subparsers()`` object; its ``func`` is ``run``."""
    p = subparsers.add_parser("pll", help="masked-LM pseudo-log-likelihood of sentences, or BLiMP accuracy",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--sentence", action="append", help="a sentence to score; repeat for several")
    what.add_argument("--blimp", metavar="DATA_DIR", help="evaluate BLiMP from this folder of <UID>.jsonl files")
    p.add_argument("--metric", action="append", choices=[*METRICS, "all"],
                   help="PLL metric; repeat for several (default: word_l2r for sentences, all for --blimp)")
    p.add_argument("--prefix", default=None, help="score each sentence given this prefix (never masked)")
    p.add_argument("--tokens", action="store_true", help="also print the subword breakdown")
    p.add_argument("--paradigm", action="append", help="BLiMP paradigm UID; repeat for several (default: all)")
    p.add_argument("--limit", type=int, default=None, help="BLiMP: first N pairs of each paradigm")
    p.add_argument("--by-paradigm", action="store_true", help="BLiMP: also print the per-paradigm accuracy")
    p.add_argument("--markdown", action="store_const", const="markdown", dest="format", default="table",
                   help="the same as --format markdown (kept for existing scripts)")
    p.add_argument("--model", default=None, help="masked-LM preset, hub id or folder (default: splade-tiny)")
    p.add_argument("--device", default=None, help="cuda, cuda:N, mps or cpu (default: auto)")
    p.add_argument("--batch-size", default="auto", help="masked copies per batch, or auto (default)")
    p.add_argument("--csv", default=None, help="write the sentence table (or BLiMP per-paradigm table) to this .csv")
    _output.add_arguments(p)
    p.set_defaults(func=run)
    return p


def _metrics(chosen: list[str] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if not chosen:
        return default
    return METRICS if "all" in chosen else tuple(dict.fromkeys(chosen))


def _blimp(args: argparse.Namespace, mlm: MLM, batch: int | str, printer: _output.Printer) -> pd.DataFrame:
    """Run BLiMP; print the summary (and the per-paradigm table); return the per-paradigm table for --csv."""
    from ..pll import pll_blimp

    res = pll_blimp(mlm, args.blimp, paradigms=args.paradigm, metrics=_metrics(args.metric, METRICS),
                    limit=args.limit, batch_size=batch)
    printer.note(f"BLiMP accuracy ({mlm.name}; {int(res.overall['n'].iloc[0])} pairs, "
                 f"{res.paradigms['paradigm'].nunique()} paradigms)")
    summary = res.summary().rename_axis("field").reset_index()
    metrics = list(res.metrics)
    best = summary[metrics].eq(summary[metrics].max(axis=1), axis=0)
    views = [_output.TableSpec("summary", summary, ["field", *metrics], best={m: best[m] for m in metrics},
                          caption="* the best metric of the row (mean of paradigm accuracies)")]
    wide = res.paradigms.pivot(index=["field", "paradigm"], columns="metric", values="accuracy")
    wide = wide[metrics].reset_index()
    if args.by_paradigm or args.format == "json":
        views.append(_output.TableSpec("paradigms", wide, ["paradigm", *metrics], title="per paradigm"))
    printer.show(views, extra={"model": mlm.name, "note": mlm.note})
    return wide


def _sentences(args: argparse.Namespace, mlm: MLM, batch: int | str, printer: _output.Printer) -> pd.DataFrame:
    """Score the sentences; print their table (and the subword breakdown); return the table for --csv."""
    from ..pll import pll_metrics

    results = pll_metrics(mlm, args.sentence, _metrics(args.metric, ("word_l2r",)), batch_size=batch,
                          prefix=args.prefix, progress=False)
    table = pd.concat([res.table.assign(metric=metric) for metric, res in results.items()], ignore_index=True)
    table = table[["metric", "sentence_idx", "sentence", "pll", "n_tokens", "n_words"]]
    views = [_output.TableSpec("sentences", table, ["metric", "sentence", "pll", "n_tokens", "n_words"],
                          headers={"n_tokens": "tokens", "n_words": "words"})]
    if args.tokens:
        cols = ["sentence_idx", "word", "subword", "position", "masked", "logprob", "rank"]
        views += [_output.TableSpec(f"tokens_{metric}", res.tokens[cols].assign(masked=res.tokens["masked"].map(str)),
                               cols, headers={"sentence_idx": "sentence"}, title=f"subwords under {metric}")
                  for metric, res in results.items()]
    printer.show(views, extra={"model": mlm.name, "note": mlm.note})
    return table


def run(args: argparse.Namespace) -> int:
    """Run ``surfacelab pll`` from parsed arguments; prints the results and returns the exit code."""
    batch = _checks.batch_size(args.batch_size)
    _checks.machine(args.device)
    csv_path = _checks.output_file(args.csv, "--csv", ".csv")
    mlm = _checks.masked_lm(args)
    printer = _output.Printer(args.format, args.wide)
    if mlm.note:
        printer.note(f"note: {mlm.note}")
    table = (_blimp if args.blimp else _sentences)(args, mlm, batch, printer)
    if csv_path is not None:
        printer.note(f"wrote {write_atomic(csv_path, lambda p: to_csv(table, p))}")
    return 0
