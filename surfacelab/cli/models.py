"""``surfacelab models``: the model presets."""

from __future__ import annotations

import argparse
from typing import Any


def run(args: argparse.Namespace) -> int:
    """Print the model presets."""
    from ..models import list_presets

    print(list_presets().to_string(index=False))
    return 0


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``models`` sub-command to an ``add_subparsers()`` object."""
    p = subparsers.add_parser("models", help="list the model presets")
    p.set_defaults(func=run)
    return p
