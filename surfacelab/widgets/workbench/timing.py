"""Where a workbench update's time went (no ipywidgets): ``Load`` (one model load, step by step, timed by
``StepClock``) and ``Timing`` (the models loaded for an update, each view's computation in the kernel, the drawing of
its figures in the browser), with the words the status line's "where the time went" shows."""

from __future__ import annotations

import html
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

#: Steps of a load shorter than this are not named (they would only crowd the breakdown).
STEP_MIN_S = 0.05
#: An update (with its model loads) at least this long names its largest part beside the status line, unasked.
SLOW_S = 5.0


@dataclass
class Load:
    """One model load: the model's name, its seconds, and its steps as the load reported them (each step's text and
    seconds: it lasts until the next one starts); ``loaded``: it succeeded; ``before``: made before any update (the
    workbench's constructor), so no update's time holds it."""

    name: str
    seconds: float
    steps: list[tuple[str, float]] = field(default_factory=list)
    loaded: bool = True
    before: bool = False

    def words(self) -> str:
        """"name 19.5 s (step 17.2 s; step 1.1 s)": the steps that took a visible time."""
        steps = "; ".join(f"{step} {s:.1f} s" for step, s in self.steps if s >= STEP_MIN_S)
        failed = "" if self.loaded else ", could not be loaded"
        return f"{self.name} {self.seconds:.1f} s" + (f" ({steps}{failed})" if steps or failed else "")


class StepClock:
    """A model load's progress callback (``load_lm(progress=...)``) that times its steps and passes each on to
    ``forward`` (a display; None: none). ``done()`` is the ``Load``."""

    def __init__(self, name: str, forward: Callable[[float, str], None] | None = None) -> None:
        self.name, self.forward = name, forward
        self.start = time.monotonic()
        self._marks: list[tuple[str, float]] = []

    def __call__(self, fraction: float, step: str) -> None:
        self._marks.append((step, time.monotonic()))
        if self.forward is not None:
            self.forward(fraction, step)

    def done(self, loaded: bool = True) -> Load:
        """The load as it went: its seconds and each step's (``loaded``: it succeeded)."""
        end = time.monotonic()
        ends = [t for _, t in self._marks[1:]] + [end]
        return Load(self.name, end - self.start, [(step, stop - t) for (step, t), stop in zip(self._marks, ends)],
                    loaded=loaded)


@dataclass
class Timing:
    """Where one update's time went.

    Attributes:
        loads: the models loaded for it: by the pass (its time leaves them out) or, for the first update, by the
            workbench before it (``Load.before``).
        views: each view's computation in the kernel (its title -> seconds), in the order computed.
        later: the titles of the views computed after the wait, in the background (out of sight at the time).
        drawn: seconds the browser spent drawing figures since the update began, and ``figures`` how many draws.
        waited: seconds the browser waited for plotly.js before its first figure (once a page).
    """

    loads: list[Load] = field(default_factory=list)
    views: dict[str, float] = field(default_factory=dict)
    later: set[str] = field(default_factory=set)
    drawn: float = 0.0
    figures: int = 0
    waited: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def computed(self, title: str, seconds: float, *, later: bool = False) -> None:
        """A view was computed (``later``: in the background, after the wait)."""
        with self._lock:
            self.views[title] = self.views.get(title, 0.0) + seconds
            if later:
                self.later.add(title)

    def draw(self, seconds: float, waited: float) -> None:
        """The browser drew a figure in ``seconds``, after waiting ``waited`` seconds for plotly.js."""
        with self._lock:
            self.drawn += seconds
            self.figures += 1
            self.waited += waited

    def parts(self) -> list[tuple[str, float]]:
        """Every part, as (words, seconds): each model load, each view's computation, the figures' drawing."""
        with self._lock:
            out = [(f"loading {load.name}", load.seconds) for load in self.loads]
            out += [(f"computing {title}", s) for title, s in self.views.items()]
            if self.figures:
                out.append(("drawing the figures in the browser", self.drawn + self.waited))
        return out

    def largest(self) -> tuple[str, float] | None:
        """The largest part when the whole took at least ``SLOW_S`` seconds (else None)."""
        parts = self.parts()
        if not parts or sum(s for _, s in parts) < SLOW_S:
            return None
        return max(parts, key=lambda p: p[1])

    def html(self) -> str:
        """The breakdown as the status line's "where the time went" shows it (escaped; empty before an update)."""
        with self._lock:
            views, later, loads = dict(self.views), set(self.later), list(self.loads)
            drawn, figures, waited = self.drawn, self.figures, self.waited
        if not (views or loads):
            return ""
        lines = []
        for before, what in ((True, "models loaded before the first update"), (False, "models loaded")):
            some = [load for load in loads if load.before == before]
            if some:
                lines.append(f"<b>{what}</b>: " + " · ".join(html.escape(load.words()) for load in some))
        now = [f"{html.escape(t)} {s:.2f} s" for t, s in views.items() if t not in later]
        if now:
            lines.append("<b>views computed in the kernel</b>: " + " · ".join(now))
        rest = [f"{html.escape(t)} {s:.2f} s" for t, s in views.items() if t in later]
        if rest:
            lines.append("<b>then in the background</b> (out of sight): " + " · ".join(rest))
        if figures:
            read = f"; plotly.js read first: {waited:.2f} s" if waited >= 0.01 else ""
            lines.append(f"<b>figures drawn in the browser</b>: {figures} in {drawn:.2f} s{read}")
        big = self.largest()
        head = f"where the time went: mostly {html.escape(big[0])} ({big[1]:.1f} s)" if big else "where the time went"
        body = "".join(f"<div>{line}</div>" for line in lines)
        return (f"<details class='sl-timing'><summary>{head}</summary>"
                f"<div class='sl-timing-parts'>{body}</div></details>")
