"""``report(runs, "report.html")``: a run's finding as one self-contained page to share. It opens offline in any
browser, with no kernel: the sources of each run, accuracy per scorer (and per task and group of a run of several
tasks) with 95% bootstrap CIs, who rescues whom, the verdict labels, the flipped items (the scorers or runs
disagree) each with its verdict in words, and the item table (search, filters, sort). ``content`` computes what it
shows from the runs' frames; ``page`` writes it (escaped, nothing fetched).

>>> import pathlib, tempfile
>>> run = sl.evaluate(lm, "copa", ["lm", "dcpmi"], limit=6, progress=False, n_boot=50)
>>> path = sl.report(run, pathlib.Path(tempfile.mkdtemp()) / "report.html")
>>> path.stat().st_size < 100_000
True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from .content import check_runs, content
from .page import write_report

__all__ = ["report"]


def report(runs: Any, path: str | os.PathLike, *, title: str | None = None,
           sources: Mapping[str, Mapping] | None = None) -> Path:
    """Write the report of ``runs`` to ``path`` (one HTML file, see the module docstring).

    Args:
        runs: an ``EvalResult``, a list of them, or ``{name: EvalResult}`` as the explorer holds its runs side by
            side (the same items in the same order).
        path: the ``.html`` file to write (its folder is made).
        title: the page's title; default "<task>/<split> · <model>" of the first run.
        sources: per run name, what made it (the explorer's sources: task, split, template parts), shown with it.

    Returns:
        the path written.

    Raises:
        ValueError / TypeError: naming the argument, for runs that are not runs or not on the same items, a path that
            is not ``.html``, a title that is not text.
    """
    named = check_runs(runs)
    path = Path(path).expanduser()
    if path.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"path: expected an .html file, got {path.name!r}")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title: expected a string, got {type(title).__name__}")
    if sources is not None and not isinstance(sources, Mapping):
        raise TypeError(f"sources: expected a {{run name: mapping}}, got {type(sources).__name__}")
    first = next(iter(named.values()))
    return write_report(path, title or f"{first.task}/{first.split} · {first.model}", content(named, sources))
