"""``Prefetch``: the workbench's scores (with their top-k alternatives) of the items a person is about to open,
computed in the background, so that opening one from the explorer draws its views from the engine's caches.

The workbench's scorer and token views read ``score_items(..., top_k=k)``: its log-probs are on the disk cache a run
filled, but the top-k alternatives live in the engine's in-memory cache only, so a new item costs a forward pass
when it is opened. The explorer asks for the first rows of its table after a run and after every filter change;
opening an item cancels what is left (the click's own update has the CPU to itself) and, a moment later, scores the
rows after it (what "next" opens).
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Iterable

from ...scoring import score_items
from ..kit.runner import Job, Runner

#: Rows of the table whose workbench scores are computed ahead of a click.
ROWS = 10
#: Seconds a prefetch waits after an item was opened: the views in sight of that item go first.
AFTER_OPEN_S = 1.0


class Prefetch:
    """A background ``Runner`` that scores items as the workbench will (one newer request replaces an older one)."""

    def __init__(self) -> None:
        self.runner = Runner("surfacelab-prefetch")

    def start(self, lm: Any, items: Iterable[tuple[str, list[str], str | None]], top_k: int, *,
              delay: float = 0.0) -> Job:
        """Score the first ``ROWS`` of ``items`` ((premise, options, domain premise), as the workbench loads them;
        read in the background) with ``top_k`` alternatives, one item at a time, in the background after ``delay``
        seconds; a newer ``start`` or ``cancel`` stops it."""

        def job(run: Job) -> None:
            for item in islice(items, ROWS):
                run.check()
                score_items(lm, [item], progress=False, top_k=top_k)

        return self.runner.submit(job, delay=delay, cancel_running=True)

    def cancel(self) -> None:
        """Stop the prefetch (an item is being opened)."""
        self.runner.cancel()

    def close(self) -> None:
        self.runner.close()
