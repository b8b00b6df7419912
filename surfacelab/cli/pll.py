"""``surfacelab pll``: PLL of sentences (with subword breakdowns) or BLiMP accuracy of a masked LM.

Examples::

    surfacelab pll --sentence "I bought a souvenir." --metric original --metric word_l2r --tokens
    surfacelab pll --sentence "a souvenir." --prefix "I bought"
    surfacelab pll --blimp ../shared/data/blimp --limit 100 --markdown
"""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd

from ..pll import METRICS


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
    p.add_argument("--markdown", action="store_true", help="BLiMP: print the summary as a markdown table")
    p.add_argument("--model", default=None, help="masked-LM preset, hub id or folder (default: splade-tiny)")
    p.add_argument("--device", default=None, help="cuda, mps or cpu (default: auto)")
    p.add_argument("--batch-size", default="auto", help="masked copies per batch, or auto (default)")
    p.add_argument("--csv", default=None, help="write the sentence table (or BLiMP per-paradigm table) here")
    p.set_defaults(func=run)
    return p


def _metrics(chosen: list[str] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if not chosen:
        return default
    return METRICS if "all" in chosen else tuple(dict.fromkeys(chosen))


def _batch(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"batch_size: expected a positive int or 'auto', got {value!r}") from None


def _markdown(frame: pd.DataFrame) -> str:
    cols = [frame.index.name or ""] + [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for idx, row in frame.iterrows():
        lines.append("| " + " | ".join([str(idx)] + [f"{v:.3f}" for v in row]) + " |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``surfacelab pll`` from parsed arguments; prints the results and returns the exit code."""
    from ..models import load_mlm
    from ..pll import pll_blimp, pll_metrics

    mlm = load_mlm(args.model, device=args.device)
    batch = _batch(args.batch_size)
    fmt = {"float_format": lambda v: f"{v:.4f}", "index": False}
    if mlm.note:
        print(f"note: {mlm.note}")
    if args.blimp:
        res = pll_blimp(mlm, args.blimp, paradigms=args.paradigm, metrics=_metrics(args.metric, METRICS),
                        limit=args.limit, batch_size=batch)
        print(f"BLiMP accuracy ({mlm.name}; {int(res.overall['n'].iloc[0])} pairs, "
              f"{res.paradigms['paradigm'].nunique()} paradigms)")
        summary = res.summary()
        print(_markdown(summary) if args.markdown else summary.to_string(float_format=lambda v: f"{v:.3f}"))
        wide = res.paradigms.pivot(index=["field", "paradigm"], columns="metric", values="accuracy")
        wide = wide[list(res.metrics)].reset_index()
        if args.by_paradigm:
            print()
            print(wide.to_string(**fmt))
        if args.csv:
            wide.to_csv(args.csv, index=False)
            print(f"wrote {args.csv}")
        return 0
    tables = []
    results = pll_metrics(mlm, args.sentence, _metrics(args.metric, ("word_l2r",)), batch_size=batch,
                          prefix=args.prefix, progress=False)
    for metric, res in results.items():
        tables.append(res.table.assign(metric=metric))
        if args.tokens:
            print(f"[{metric}]")
            cols = ["sentence_idx", "word", "subword", "position", "masked", "logprob", "rank"]
            with pd.option_context("display.width", 200):
                print(res.tokens[cols].to_string(**fmt))
            print()
    table = pd.concat(tables, ignore_index=True)
    table = table[["metric", "sentence_idx", "sentence", "pll", "n_tokens", "n_words"]]
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(table.to_string(**fmt))
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    return 0
