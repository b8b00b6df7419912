"""``surfacelab score``: every scorer on the options of one premise."""

from __future__ import annotations

import argparse
from typing import Any


def run(args: argparse.Namespace) -> int:
    """Run ``surfacelab score`` from parsed arguments; prints the results and returns the exit code."""
    import pandas as pd

    from ..models import load_lm
    from ..scoring import score

    result = score(load_lm(args.model, device=args.device), args.premise, args.option, domain_premise=args.domain)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(result.table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print()
    print(result.explain())
    for path in (args.csv, args.json):
        if path:
            print(f"wrote {result.save(path)}")
    return 0


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``score`` sub-command to an ``add_subparsers()`` object."""
    p = subparsers.add_parser("score", help="score options under a premise with every scorer")
    p.add_argument("--premise", required=True, help="the premise (context)")
    p.add_argument("--option", action="append", required=True, help="an option; repeat for each option")
    p.add_argument("--domain", default=None, help="domain premise for Unc and DC-PMI")
    p.add_argument("--model", default=None, help="preset, hub id or folder (default: smollm2-135m)")
    p.add_argument("--device", default=None, help="cuda, mps or cpu (default: auto)")
    p.add_argument("--csv", default=None, help="write the option table to this CSV file")
    p.add_argument("--json", default=None, help="write both frames to this JSON file")
    p.set_defaults(func=run)
    return p
