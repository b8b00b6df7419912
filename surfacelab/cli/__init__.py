"""Command line: ``surfacelab score | models | pll | eval``.

One module per sub-command (``score``, ``models``, ``pll``, ``evaluate``), each with ``add_cli(subparsers)``
and ``run(args)``; ``main`` is the ``surfacelab`` console script.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from . import evaluate, models, pll, score


def build_parser() -> argparse.ArgumentParser:
    """The ``surfacelab`` argument parser with all sub-commands."""
    parser = argparse.ArgumentParser(prog="surfacelab", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (score, models, pll, evaluate):
        command.add_cli(sub)
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
