"""What the report scripts share: the CPU lock, per-model item caps from the command line, and the cells of their
markdown tables (an accuracy with its CI, a McNemar p-value)."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
from collections.abc import Iterator, Sequence


@contextlib.contextmanager
def cpu_lock(path: str | None) -> Iterator[None]:
    """Hold the shared CPU lock at ``path`` (``flock``) for the block; no lock for '' or None."""
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def parse_caps(parser: argparse.ArgumentParser, given: Sequence[str], defaults: dict[str, int]) -> dict[str, int]:
    """``defaults`` with each ``MODEL=N`` of ``given`` applied; anything else is a ``parser.error`` naming --cap."""
    caps = dict(defaults)
    for c in given:
        model, _, n = c.partition("=")
        if model not in caps or not n.isdigit():
            parser.error(f"--cap: expected MODEL=N with MODEL in {list(defaults)}, got {c!r}")
        caps[model] = int(n)
    return caps


def pct_ci(accuracy: float, low: float, high: float, bold: bool = False) -> str:
    """An accuracy in [0, 1] with its CI as percentages: '58.0 [52.1, 63.0]' (bold when ``bold``)."""
    text = f"{100 * accuracy:.1f} [{100 * low:.1f}, {100 * high:.1f}]"
    return f"**{text}**" if bold else text


def p_text(p: float) -> str:
    """A p-value as a table shows it: '<0.001' below 0.001, three decimals otherwise, bold when p < 0.05."""
    text = "<0.001" if p < 0.001 else f"{p:.3f}"
    return f"**{text}**" if p < 0.05 else text
