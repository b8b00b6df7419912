"""``surfacelab models``: the model presets (``--wide`` adds the install command and the hub id)."""

from __future__ import annotations

import argparse
from typing import Any

from . import _output


def run(args: argparse.Namespace) -> int:
    """Print the model presets."""
    from ..models import list_presets

    presets = list_presets()
    printer = _output.Printer(args.format, args.wide)
    printer.show([_output.TableSpec("presets", presets, ["preset", "kind", "installed", "description"])])
    if args.format in ("table", "markdown") and not args.wide:
        for row in presets.itertuples():
            if row.note:
                printer.note(f"note: {row.note}")
            if not row.installed:
                printer.note(f"{row.preset} is not installed: {row.install}")
        printer.note("--wide adds the install commands and hub ids")
    return 0


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``models`` sub-command to an ``add_subparsers()`` object."""
    p = subparsers.add_parser("models", help="list the model presets")
    _output.add_arguments(p)
    p.set_defaults(func=run)
    return p
