"""The workbench's status (a part of the ``Workbench``): the status line, the progress bar under it (in sight only
while an update or a model load runs: a full bar left behind reads as stuck) and "where the time went" beside it
(``timing.Timing``: the models loaded, each view's computation, the figures' drawing in the browser). Opening the
breakdown lays it over the views: nothing below it moves."""

from __future__ import annotations

import html

import ipywidgets as w

from ..kit.layout import classed
from .timing import Timing


class StatusLine:
    """The status line, the progress bar and the breakdown of a ``Workbench``'s last update.

    Attributes:
        status: the status line (an update's note while it runs, then "updated in … s").
        progress: the progress bar (hidden while nothing runs).
        breakdown: "where the time went" of the last update done (a disclosure; empty before the first update).
        box: the three, the bar under the line.
    """

    def __init__(self) -> None:
        self.status = w.HTML("")
        self.progress = w.FloatProgress(value=0, min=0, max=1)
        self.breakdown = w.HTML("")
        self._shown: Timing | None = None  # the timing the breakdown shows
        line = w.HBox([self.status, self.breakdown])
        self.box = w.VBox([line, self.progress])
        classed([(self.status, "sl-status"), (self.progress, "sl-progress"), (self.breakdown, "sl-timing-line"),
                 (line, "sl-status-line"), (self.box, "sl-status-box")])
        self.working(False)

    def working(self, on: bool) -> None:
        """Show the progress bar (an update or a load runs) or hide it, keeping its room (nothing moves)."""
        self.progress.layout.visibility = "visible" if on else "hidden"
        if not on:
            self.progress.value = 0

    def report(self, fraction: float | None, note: str | None) -> None:
        """An update's progress: the bar (``fraction``, shown) and the status line (``note``)."""
        if fraction is not None:
            self.progress.value = fraction
            self.working(True)
        if note is not None:
            self.status.value = f"<i>{html.escape(note)}</i>"

    def done(self, seconds: float, timing: Timing, rest: bool) -> None:
        """The status line after an update: its time (``seconds``), the models loaded for it (named, with their
        seconds) and whether views are still being finished in the background (``rest``); beside it, where the
        time went (``timing``)."""
        loaded = [load for load in timing.loads if load.loaded]
        named = (f" · loaded {' and '.join(x.name for x in loaded)} in {sum(x.seconds for x in loaded):.1f} s"
                 if loaded else "")
        self.status.value = f"updated in {seconds:.2f} s{html.escape(named)}" + (
            " · finishing the other views in the background…" if rest else "")
        self.working(False)
        self._shown = timing
        self.breakdown.value = timing.html()

    def background_done(self, seconds: float, timing: Timing) -> None:
        """The background has finished: the status line drops its "finishing" note (unless it says more now)."""
        if self.status.value.startswith("updated in"):
            self.done(seconds, timing, rest=False)

    def failed(self, err: BaseException) -> None:
        """An update failed outside any view: the status line says why (the next edit tries again)."""
        self.status.value = (f"<span class='sl-error'>⚠ update failed: "
                             f"{html.escape(f'{type(err).__name__}: {err}')}</span>")
        self.working(False)

    def drawn(self, timing: Timing, seconds: float, waited: float) -> None:
        """The browser drew a figure of the update ``timing`` is for (in ``seconds``; ``waited`` for plotly.js
        first): its breakdown says so once it is shown."""
        timing.draw(seconds, waited)
        if timing is self._shown:
            self.breakdown.value = timing.html()
