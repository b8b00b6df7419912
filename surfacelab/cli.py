"""Command line: ``surfacelab score | models | pll | eval``."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ._cli_pll import add_cli as add_pll_cli
from .evaluate import add_cli as add_eval_cli


def _score(args: argparse.Namespace) -> int:
    from .models import load_lm
    from .scoring import score

    result = score(load_lm(args.model, device=args.device), args.premise, args.option, domain_premise=args.domain)
    with __import__("pandas").option_context("display.width", 200, "display.max_columns", 30):
        print(result.table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print()
    print(result.explain())
    for path in (args.csv, args.json):
        if path:
            print(f"wrote {result.save(path)}")
    return 0


def _models(args: argparse.Namespace) -> int:
    from .models import list_presets

    print(list_presets().to_string(index=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``surfacelab`` argument parser with all sub-commands."""
    parser = argparse.ArgumentParser(prog="surfacelab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("score", help="score options under a premise with every scorer")
    p.add_argument("--premise", required=True, help="the premise (context)")
    p.add_argument("--option", action="append", required=True, help="an option; repeat for each option")
    p.add_argument("--domain", default=None, help="domain premise for Unc and DC-PMI")
    p.add_argument("--model", default=None, help="preset, hub id or folder (default: smollm2-135m)")
    p.add_argument("--device", default=None, help="cuda, mps or cpu (default: auto)")
    p.add_argument("--csv", default=None, help="write the option table to this CSV file")
    p.add_argument("--json", default=None, help="write both frames to this JSON file")
    p.set_defaults(func=_score)
    m = sub.add_parser("models", help="list the model presets")
    m.set_defaults(func=_models)
    add_pll_cli(sub)
    add_eval_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``surfacelab`` command."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError) as err:
        print(f"surfacelab: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
