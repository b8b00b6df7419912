"""The Workbench's update lanes: ``Updates``, its update policy on two runners (``kit.runner.Runner``). A pass
(``main`` lane, debounced after an edit) computes the views in sight in ``View.order``; a slow view (``View.slow``)
shows its preview there and is computed in the ``slow`` lane after the pass; views out of sight follow in that lane
once the edits pause (``BACKGROUND_IDLE_S``), or at once when they come into sight or their data is asked for. An
edit cancels the forward passes of the views whose key it changes, and only those. ``Updates`` reads the widget
through ``Display`` and each view through ``Scheduled``.
"""

from __future__ import annotations

import threading
import time
from enum import Enum
from typing import Any, Callable, Mapping, Protocol

import torch

from ...backends.openmp import torch_threads
from ...engine import Cancelled, cancelled_when
from ..kit.runner import Job, Runner
from .timing import Timing

#: Seconds without an edit before the views out of sight are computed in the background (so that a person who
#: scrolls down after typing finds them drawn, and one who keeps typing is not slowed by them).
BACKGROUND_IDLE_S = 1.0
#: The cue of a slow view whose preview (first part) is shown while the rest computes.
PREVIEW_CUE = "first part shown · computing the rest…"


class ViewState(str, Enum):
    """What a view shows: its CSS classes and cue follow it (``View.set_state``); ``.value`` is the plain name."""

    EMPTY = "empty"  # never computed
    READY = "ready"  # up to date with the inputs
    STALE = "stale"  # the inputs changed since (an update follows, or Score when not live)
    BUSY = "busy"  # being computed
    BLOCKED = "blocked"  # a problem with the inputs holds it
    DEFERRED = "deferred"  # out of sight: computed after the views in sight
    ERROR = "error"  # its computation failed: the message is shown instead


class Lane(Enum):
    """Where a pass puts a view (``Updates.lane``)."""

    IN_FLIGHT = "in flight"  # another thread computes it for these inputs: that thread draws it
    BLOCKED = "blocked"  # a problem with the inputs holds it
    LATER = "later"  # out of sight: the slow lane computes it once the edits pause
    SLOW = "slow"  # its preview now, the rest in the slow lane
    NOW = "now"  # computed in this pass
    READY = "ready"  # up to date


class Scheduled(Protocol):
    """A view as the update lanes see it (``surfacelab.widgets.view.View``)."""

    name: str
    title: str
    order: int  # compute order: lower first
    slow: bool  # computed in the slow lane, after its preview
    state: ViewState
    shown_key: tuple | None  # the key of the result shown
    preview_key: tuple | None  # the key of the preview shown

    @property
    def in_sight(self) -> bool: ...
    def key(self, inp: Any) -> tuple: ...
    def compute(self, inp: Any) -> Any: ...
    def preview(self, inp: Any) -> Any: ...
    def publish(self, inp: Any, result: Any, key: tuple) -> None: ...
    def fail(self, message: str) -> None: ...
    def set_state(self, state: ViewState, note: str | None = None) -> None: ...


class Display(Protocol):
    """What the update lanes ask of the widget that shows the views (the ``Workbench``)."""

    live: bool
    views: Mapping[str, Scheduled]

    def inputs(self) -> Any:
        """A snapshot of the inputs (what ``Scheduled.key`` and ``compute`` read)."""

    def held(self, inp: Any) -> bool:
        """Show the problems of ``inp``; True when one holds every view (the host marks the views)."""

    def prepare(self, timing: Timing) -> float:
        """Load what the views need (a failure is the host's message; the loads go into ``timing``); the seconds
        spent loading."""

    def blocks(self, view: str) -> bool:
        """A problem with the inputs holds ``view``."""

    def report(self, fraction: float | None, note: str | None) -> None:
        """Progress of a pass: the fraction of views done (None: unchanged) and what it computes (None: same)."""

    def report_done(self, rest: bool) -> None:
        """A pass is over (``Updates.last_update_s``); ``rest``: views are still finished in the background."""

    def report_background_done(self) -> None:
        """The background lane has nothing left (a "finishing in the background" note goes)."""

    def report_error(self, err: BaseException) -> None:
        """An update failed outside any view (a view's own failure is shown inside it)."""


class Updates:
    """The Workbench's update lanes (see the module): debounced passes, slow and deferred views, cancellation.

    Attributes:
        generation: the edit count; a result computed for an older edit than the one a view shows is dropped.
        last_update_s: seconds from the request to the views in sight drawn, less any model load (None: never).
        timing: where the time of the pass whose results were drawn last went (``Timing``).
        publishing: held while a view's result and key change together (hold it to read the two together).
    """

    def __init__(self, host: Display) -> None:
        self.host = host
        self.generation = 0
        self.last_update_s: float | None = None
        self.timing = Timing()
        self.publishing = threading.Lock()
        self._last_edit = 0.0
        # when the person asked for what the next pass shows (an edit, a view scrolled into sight, Score): the
        # update time runs from here, as the person waits, less any model load (said on its own)
        self._asked_at = time.monotonic()
        self._lock = threading.Lock()  # a slow-lane job and the status line's "finishing" note change together
        self._inflight: set[tuple[str, tuple]] = set()  # (view, key) being computed, by whichever thread
        self._changed = threading.Condition()  # notified when a computation ends
        self._shown_gen: dict[str, int] = {}  # per view: the edit its content is for
        self._hurry = False  # data asked for (frames, figures): the background stops waiting for a pause
        # the background lanes leave a core to the browser that draws the views and to the Jupyter server
        threads = (max(1, torch.get_num_threads() - 1), torch.get_num_threads())
        self.main = Runner("surfacelab-workbench", on_progress=host.report, on_error=host.report_error,
                           context=lambda: torch_threads(*threads))
        self.slow = Runner("surfacelab-slow", on_error=host.report_error, context=lambda: torch_threads(*threads))

    # --- requests -----------------------------------------------------------------------------

    def edit(self) -> None:
        """An input changed: computations of the views whose key it changes stop (``schedule`` updates them)."""
        self.generation += 1
        self._last_edit = self._asked_at = time.monotonic()

    def schedule(self, delay: float) -> None:
        """A live pass once ``delay`` seconds pass without another edit."""
        self.main.submit(self._live_pass, delay=delay)

    def request(self) -> None:
        """A live pass now (a view came into sight, Score): the update time runs from here."""
        self._asked_at = time.monotonic()
        self.main.submit(self._live_pass)

    def sighted(self, view: Scheduled, seen: bool) -> None:
        """A view left for later by a live pass came into sight: update it now."""
        if seen and view.state in (ViewState.DEFERRED, ViewState.STALE) and self.host.live:
            self.request()

    def update(self, everything: bool = True) -> None:
        """One pass now, on the calling thread (after the pass in progress). ``everything``: every view, each
        waited for; otherwise as a live pass (views out of sight deferred, slow views in the slow lane)."""
        self._asked_at = time.monotonic()
        self.main.run(lambda run: self._pass(run, everything))

    def behind(self) -> bool:
        """Hurry the slow lane to its end and wait for it; True when views are still behind the inputs (deferred,
        or left stale by a newer edit): an ``update`` brings them up to date."""
        self._hurry = True
        try:
            self.slow.wait()
        finally:
            self._hurry = False
        return any(v.state in (ViewState.DEFERRED, ViewState.BUSY, ViewState.STALE) for v in self.host.views.values())

    def wait(self, timeout: float = 120.0) -> None:
        """Block until both lanes are idle; ``TimeoutError`` after ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while not (self.main.idle and self.slow.idle):
            if not (self.main.wait(max(end - time.monotonic(), 0)) and self.slow.wait(max(end - time.monotonic(), 0))):
                raise TimeoutError(f"timeout: updates still running after {timeout} s")

    def close(self) -> None:
        """Stop: the lanes refuse new jobs, a pass stops at its next view."""
        self.generation += 1
        self.main.close()
        self.slow.close()

    # --- a pass -------------------------------------------------------------------------------

    def _live_pass(self, run: Job) -> None:
        self._pass(run, everything=False)

    def lane(self, view: Scheduled, key: tuple, everything: bool) -> Lane:
        """Where a pass puts ``view`` (its key ``key``); ``everything``: every view now, none in flight or later."""
        outdated = key != view.shown_key or view.state in (ViewState.ERROR, ViewState.EMPTY)
        if not everything and (view.name, key) in self._inflight:
            return Lane.IN_FLIGHT
        if self.host.blocks(view.name):
            return Lane.BLOCKED
        if outdated and not everything and not view.in_sight and view.state != ViewState.EMPTY:
            return Lane.LATER
        if outdated and view.slow and not everything:
            return Lane.SLOW
        return Lane.NOW if outdated else Lane.READY

    def _pass(self, run: Job, everything: bool) -> None:
        """Bring the views up to date with the inputs (see ``lane``); views left for later go to the slow lane."""
        asked, gen, host = self._asked_at, self.generation, self.host
        inp = host.inputs()
        if host.held(inp):
            return
        timing = Timing()
        start = asked + host.prepare(timing)  # the wait, less the load
        order = sorted(host.views.values(), key=lambda v: v.order)
        run.progress(0.0)
        slow, later = [], []
        worked = False
        for k, view in enumerate(order):
            if host.live and self.generation != gen:
                run.progress(None, "newer edit: starting over…")
                return
            key = view.key(inp)
            lane = self.lane(view, key, everything)
            if lane is Lane.BLOCKED:
                view.set_state(ViewState.BLOCKED)
            elif lane is Lane.LATER:
                view.set_state(ViewState.DEFERRED)
                later.append(view)
            elif lane is Lane.SLOW:
                if view.preview_key != key:
                    run.progress(None, f"computing {view.title} (first part)…")
                    self._preview(view, inp, key, gen, timing)
                    worked = True
                view.set_state(ViewState.BUSY, PREVIEW_CUE if view.preview_key == key else
                               "computing… (after the other views)")
                slow.append(view)
            elif lane is Lane.NOW:
                run.progress(None, f"computing {view.title}…")
                self._compute(view, inp, key, gen, timing, wait=everything)
                worked = True
            elif lane is Lane.READY and self.generation == gen:
                view.set_state(ViewState.READY)
            run.progress((k + 1) / len(order))
        if worked or self.last_update_s is None:  # a pass that only marked views keeps the last time shown
            self.last_update_s = time.monotonic() - start
        if slow or later:
            later.sort(key=lambda v: v.slow)  # out of sight, the slow ones last (their first part is cheap)
            with self._lock:
                host.report_done(rest=True)
                self.slow.submit(lambda _: self._background(gen, inp, slow, later, start, timing))
        else:
            host.report_done(rest=False)

    def _background(self, gen: int, inp: Any, views: list[Scheduled], later: list[Scheduled], start: float,
                    timing: Timing) -> None:
        """The slow lane's job: the slow views in sight, then (once the edits pause) the views out of sight.
        ``start``: when the wait began (the update time runs until the slow views in sight are drawn); ``timing``:
        the pass's, which the computations here join."""
        host = self.host
        for view in views:
            if host.live and self.generation != gen:  # a newer edit: its pass schedules the view again
                break
            self._compute(view, inp, view.key(inp), gen, timing)
        else:
            if views and self.generation == gen:  # the views in sight are all drawn: that is the wait
                self.last_update_s = time.monotonic() - start
                host.report_done(rest=bool(later))
        for view in later:  # each unless drawn meanwhile (scrolled into sight)
            if not self._paused(gen):
                break
            self._compute(view, inp, view.key(inp), gen, timing, later=True)
        with self._lock:
            if not self.slow.pending:
                host.report_background_done()

    def _paused(self, gen: int) -> bool:
        """Wait until the edits have paused for ``BACKGROUND_IDLE_S`` and no pass runs; False when a newer edit
        came (its pass schedules the background work again)."""
        while self.generation == gen:
            left = BACKGROUND_IDLE_S - (time.monotonic() - self._last_edit)
            if self._hurry or (left <= 0 and self.main.idle):
                return True
            time.sleep(min(max(left, 0.0), 0.05) or 0.02)
        return False

    # --- one view -----------------------------------------------------------------------------

    def _compute(self, view: Scheduled, inp: Any, key: tuple, gen: int, timing: Timing, *, wait: bool = False,
                 later: bool = False) -> None:
        """Compute and draw ``view`` for ``inp`` (its key ``key``, for edit ``gen``): ready, or stale when the inputs
        changed meanwhile; its seconds go into ``timing`` (``later``: after the wait). Another thread computing the
        same: nothing, or (``wait``) wait for it."""
        with self._changed:
            while (view.name, key) in self._inflight:
                if not wait:
                    return
                self._changed.wait()
            if view.shown_key == key and view.state != ViewState.ERROR:  # drawn meanwhile, by another thread
                return
            self._inflight.add((view.name, key))
        view.set_state(ViewState.BUSY, PREVIEW_CUE if view.preview_key == key else None)
        began = time.monotonic()
        try:
            with cancelled_when(None if wait else self._outdated(view, key, gen)):
                result = view.compute(inp)
            timing.computed(view.title, time.monotonic() - began, later=later)
            self.timing = timing  # what is drawn now is this pass's
            self._show(view, inp, result, key, gen)
        except Cancelled:  # a newer edit changed its inputs: the pass for that edit draws it (or has drawn it)
            with self._changed:
                drawing = any(n == view.name and k != key for n, k in self._inflight)
            if not drawing and view.shown_key != view.key(self.host.inputs()):
                view.set_state(ViewState.STALE)
        except Exception as err:  # every failure becomes a message inside its view
            view.fail(str(err) if isinstance(err, (ValueError, TypeError, ModuleNotFoundError))
                      else f"{type(err).__name__}: {err}")
        finally:
            with self._changed:
                self._inflight.discard((view.name, key))
                self._changed.notify_all()

    def _outdated(self, view: Scheduled, key: tuple, gen: int) -> Callable[[], bool]:
        """A check that turns true once an edit newer than ``gen`` has changed ``view``'s key (no longer ``key``):
        the forward passes computing it then stop (``engine.cancelled_when``); an edit it does not read spares them."""
        seen = {"gen": gen, "outdated": False}

        def check() -> bool:
            if self.generation != seen["gen"]:
                seen["gen"] = self.generation
                seen["outdated"] = view.key(self.host.inputs()) != key
            return seen["outdated"]
        return check

    def _show(self, view: Scheduled, inp: Any, result: Any, key: tuple, gen: int, *, preview: bool = False) -> None:
        """Draw ``result`` unless the view shows a newer edit's; a full result leaves the view ready, or stale
        (blocked) when the inputs changed meanwhile."""
        with self.publishing:
            if gen < self._shown_gen.get(view.name, -1):
                return
            view.publish(inp, result, key)
            self._shown_gen[view.name] = gen
            if preview:
                view.preview_key = key
            else:
                view.shown_key = key
                now = self.host.inputs()
                view.set_state(ViewState.READY if key == view.key(now) else
                               ViewState.BLOCKED if self.host.live and self.host.blocks(view.name) else
                               ViewState.STALE)

    def _preview(self, view: Scheduled, inp: Any, key: tuple, gen: int, timing: Timing) -> None:
        """Show a slow view's preview for ``inp``, if it has one (its seconds go into ``timing``); a failure shows
        nothing (the full computation that follows reports it)."""
        began = time.monotonic()
        try:
            with cancelled_when(self._outdated(view, key, gen)):
                result = view.preview(inp)
            timing.computed(f"{view.title} (first part)", time.monotonic() - began)
            self.timing = timing
            if result is not None:
                self._show(view, inp, result, key, gen, preview=True)
        except Exception:  # the full computation reports every failure inside its view
            view.preview_key = None
