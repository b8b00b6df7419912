"""The scheduler on its own: ``Runner`` (background runs: debounce, coalescing, cancellation, progress, errors) and
``Updates`` (the Workbench's lanes) over plain views and a plain host, on real threads, without ipywidgets."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from surfacelab.backends.base import raise_if_cancelled
from surfacelab.engine import Cancelled
from surfacelab.widgets.kit.runner import Runner
from surfacelab.widgets.workbench import updates as scheduler
from surfacelab.widgets.workbench.updates import Lane, Updates, ViewState

pytestmark = pytest.mark.timeout(60)  # nothing here may hang


def _until(condition, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_the_scheduler_imports_no_widget_library():
    # bare packages: the runner and the update lanes alone, without the widgets of their packages
    code = ("import sys, types, pathlib, surfacelab\n"
            "root = pathlib.Path(surfacelab.__file__).parent / 'widgets'\n"
            "for name, path in (('surfacelab.widgets', root), ('surfacelab.widgets.kit', root / 'kit'),\n"
            "                   ('surfacelab.widgets.workbench', root / 'workbench')):\n"
            "    pkg = types.ModuleType(name)\n"
            "    pkg.__path__ = [str(path)]\n"
            "    sys.modules[name] = pkg\n"
            "import surfacelab.widgets.kit.runner, surfacelab.widgets.workbench.updates\n"
            "print(sorted(m for m in ('ipywidgets', 'anywidget', 'traitlets') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out


# --- Runner -------------------------------------------------------------------------------------

def test_debounce_coalesces_submits_into_one_run():
    runner = Runner("test-debounce")
    ran = []
    runs = [runner.submit(lambda run, i=i: ran.append(i), delay=0.15) for i in range(5)]
    time.sleep(0.05)
    assert ran == []  # the delay is not over
    assert runner.wait(5) and ran == [4]  # the last request alone
    assert all(r.cancelled for r in runs[:4]) and not runs[4].cancelled and runs[4].wait(0)


def test_a_submit_during_a_run_waits_for_it_and_replaces_an_older_waiting_one():
    runner = Runner("test-coalesce")
    gate, started, ran = threading.Event(), threading.Event(), []

    def first(run):
        started.set()
        gate.wait(10)
        ran.append("first")

    runner.submit(first)
    assert started.wait(5)
    older = runner.submit(lambda run: ran.append("older"))
    runner.submit(lambda run: ran.append("newer"))
    assert older.cancelled and older.wait(0) and runner.pending
    gate.set()
    assert runner.wait(5) and ran == ["first", "newer"] and runner.idle


def test_cancel_stops_the_running_job_and_its_forward_passes():
    runner = Runner("test-cancel")
    started, steps = threading.Event(), []

    def job(run):
        started.set()
        for i in range(1000):
            raise_if_cancelled()  # what a forward pass checks between layers (engine.cancelled_when)
            steps.append(i)
            time.sleep(0.005)

    run = runner.submit(job)
    assert started.wait(5)
    runner.cancel()
    assert run.wait(5) and run.cancelled and run.error is None and len(steps) < 1000
    # a newer request can cancel the run in progress too (an explorer's new query)
    started.clear()
    old = runner.submit(job)
    assert started.wait(5)
    new = runner.submit(lambda run: "done", cancel_running=True)
    assert old.wait(5) and old.cancelled and new.wait(5) and not new.cancelled


def test_progress_is_reported_and_a_job_checks_for_cancellation():
    seen = []
    runner = Runner("test-progress", on_progress=lambda fraction, note: seen.append((fraction, note)))

    def job(run):
        for i in range(3):
            run.check()
            run.progress((i + 1) / 3, f"chunk {i + 1} of 3")

    assert runner.submit(job).wait(5)
    assert seen == [(1 / 3, "chunk 1 of 3"), (2 / 3, "chunk 2 of 3"), (1.0, "chunk 3 of 3")]
    assert runner.run(lambda run: (run.progress(note="now"), 7)[1]) == 7 and seen[-1] == (None, "now")


def test_exceptions_reach_the_callers_error_path_and_the_lane_goes_on():
    errors = []
    runner = Runner("test-errors", on_error=errors.append)
    bad = runner.submit(lambda run: 1 / 0)
    assert bad.wait(5) and isinstance(bad.error, ZeroDivisionError) and errors == [bad.error]
    ok = runner.submit(lambda run: None)
    assert ok.wait(5) and ok.error is None and runner.wait(5)
    with pytest.raises(ZeroDivisionError):  # a run on the calling thread raises there
        runner.run(lambda run: 1 / 0)
    cancelled = runner.submit(lambda run: run.cancel() or run.check())
    assert cancelled.wait(5) and cancelled.error is None and len(errors) == 1  # a cancellation is no error


def test_a_closed_runner_refuses_jobs_and_a_job_cannot_wait_for_itself():
    runner = Runner("test-close")
    inside = []
    assert runner.submit(lambda run: inside.append(runner.wait(5))).wait(5) and inside == [False]
    runner.close()
    run = runner.submit(lambda run: inside.append("ran"))
    assert run.cancelled and run.wait(0) and runner.wait(1) and inside == [False]


def test_background_runs_use_the_context_and_the_calling_thread_does_not():
    entered = []
    runner = Runner("test-context", context=lambda: _Marker(entered))
    assert runner.submit(lambda run: None).wait(5)
    runner.run(lambda run: None)
    assert entered == ["in", "out"]


class _Marker:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("in")

    def __exit__(self, *exc):
        self.log.append("out")


# --- Updates: the workbench's lanes ---------------------------------------------------------------

class FakeView:
    """A view as the lanes see it (``scheduler.Scheduled``): its key is the inputs it reads; computing it takes
    ``steps`` forward-like steps, each a cancellation point."""

    def __init__(self, name, order, needs=("premise",), slow=False, steps=3):
        self.name, self.title, self.order, self.needs, self.slow, self.steps = name, name, order, needs, slow, steps
        self.state, self.shown_key, self.preview_key, self.in_sight = ViewState.EMPTY, None, None, True
        self.log: list[tuple] = []
        self.shown = None
        self.gate: threading.Event | None = None  # when set: the next computation waits for it
        self.entered = threading.Event()

    def key(self, inp):
        return tuple(inp[n] for n in self.needs)

    def compute(self, inp):
        self.log.append(("start", self.key(inp), time.monotonic()))
        gate, self.gate = self.gate, None
        self.entered.set()
        try:
            if gate is not None:
                gate.wait(10)
            for _ in range(self.steps):
                raise_if_cancelled()
                time.sleep(0.01)
        except Cancelled:
            self.log.append(("cancelled", self.key(inp), time.monotonic()))
            raise
        self.log.append(("done", self.key(inp), time.monotonic()))
        if inp["premise"] == "boom":
            raise RuntimeError("no numbers for boom")
        return f"{self.name}: {self.key(inp)}"

    def preview(self, inp):
        return f"{self.name} (first part): {self.key(inp)}" if self.slow else None

    def publish(self, inp, result, key):
        self.shown = result

    def fail(self, message):
        self.shown, self.shown_key = message, None
        self.set_state(ViewState.ERROR)

    def set_state(self, state, note=None):
        self.state = state


class FakeHost:
    """The widget side of the lanes (``scheduler.Host``): inputs, problems and the status line, as plain data."""

    live = True

    def __init__(self, *views):
        self.views = {v.name: v for v in views}
        self.values = {"premise": "The cat", "domain": " the"}
        self.reports, self.done, self.errors = [], [], []
        self.updates = Updates(self)

    def edit(self, debounce=0.05, **values):
        self.values.update(values)
        self.updates.edit()
        self.updates.schedule(debounce)

    def inputs(self):
        return dict(self.values)

    def held(self, inp):
        return not inp["premise"]

    def prepare(self, timing):
        return 0.0

    def blocks(self, view):
        return False

    def report(self, fraction, note):
        self.reports.append((fraction, note))

    def report_done(self, rest):
        self.done.append("rest" if rest else "done")

    def report_background_done(self):
        self.done.append("background done")

    def report_error(self, err):
        self.errors.append(err)


def test_a_pass_computes_in_order_and_reports_progress():
    a, b, c = FakeView("a", 2), FakeView("b", 0), FakeView("c", 1, needs=("domain",))
    host = FakeHost(a, b, c)
    host.updates.update()
    starts = sorted((v.log[0][2], v.name) for v in (a, b, c))
    assert [name for _, name in starts] == ["b", "c", "a"]  # View.order: lower first
    assert all(v.state == ViewState.READY and v.shown == f"{v.name}: {v.key(host.inputs())}" for v in (a, b, c))
    fractions = [f for f, _ in host.reports if f is not None]
    assert fractions == [0.0, 1 / 3, 2 / 3, 1.0] and (None, "computing b…") in host.reports
    assert host.done == ["done"] and host.updates.last_update_s is not None
    assert host.updates.lane(a, a.key(host.inputs()), everything=False) is Lane.READY


def test_live_edits_are_debounced_into_one_pass():
    view = FakeView("a", 0)
    host = FakeHost(view)
    for premise in ["The d", "The do", "The dog"]:
        host.edit(debounce=0.1, premise=premise)
    host.updates.wait(10)
    assert [entry[:2] for entry in view.log] == [("start", ("The dog",)), ("done", ("The dog",))]


def test_an_edit_cancels_the_views_it_outdates_and_spares_the_others():
    premise_view = FakeView("premise", 0, steps=200)
    domain_view = FakeView("domain", 1, needs=("domain",), steps=20)
    host = FakeHost(premise_view, domain_view)
    host.updates.update()
    premise_view.log.clear()
    domain_view.log.clear()
    # the domain changes: the domain view alone is computed again
    host.edit(domain=" a")
    _until(lambda: premise_view.log or domain_view.log)
    host.updates.wait(10)
    assert [e[0] for e in domain_view.log] == ["start", "done"] and premise_view.log == []
    # the premise changes while the premise view computes: that run stops, the new premise is drawn
    host.edit(premise="The dog")
    _until(lambda: premise_view.log)
    time.sleep(0.05)
    host.edit(premise="The dog sat")
    host.updates.wait(10)
    events = [e[:2] for e in premise_view.log]
    assert events[:2] == [("start", ("The dog",)), ("cancelled", ("The dog",))]
    assert events[-1] == ("done", ("The dog sat",)) and premise_view.state == ViewState.READY
    assert premise_view.shown == "premise: ('The dog sat',)"


def test_an_unrelated_edit_during_a_computation_does_not_cancel_it():
    view = FakeView("premise", 0, steps=30)
    host = FakeHost(view)
    host.updates.update()
    view.log.clear()
    host.edit(premise="The dog")
    _until(lambda: view.log)
    host.edit(domain=" a")  # a newer edit the view does not read
    host.updates.wait(10)
    assert [e[:2] for e in view.log] == [("start", ("The dog",)), ("done", ("The dog",))]
    assert view.state == ViewState.READY


def test_the_slow_lane_runs_after_the_fast_lane_with_a_preview_first():
    fast, slow = FakeView("fast", 1), FakeView("slow", 0, slow=True, steps=5)
    host = FakeHost(fast, slow)
    host.updates.update()
    fast.log.clear()
    slow.log.clear()
    slow.gate = gate = threading.Event()
    slow.entered.clear()
    host.edit(premise="The dog")
    assert slow.entered.wait(5)  # the slow lane computes it: the pass is over
    _until(lambda: host.updates.main.idle)
    assert fast.state == ViewState.READY and slow.state == ViewState.BUSY
    assert slow.shown == "slow (first part): ('The dog',)"  # its preview, drawn in the pass
    assert host.done[-1] == "rest"  # the status line says the background finishes the rest
    gate.set()
    host.updates.wait(10)
    assert slow.log[0][2] >= fast.log[-1][2]  # after the fast lane, though its order is lower
    assert slow.state == ViewState.READY and slow.shown == "slow: ('The dog',)"
    assert host.done[-2:] == ["done", "background done"]


def test_views_out_of_sight_wait_for_a_pause_in_the_edits(monkeypatch):
    monkeypatch.setattr(scheduler, "BACKGROUND_IDLE_S", 1.0)
    near, far = FakeView("near", 0), FakeView("far", 1)
    host = FakeHost(near, far)
    host.updates.update()
    far.in_sight = False
    edited = time.monotonic()
    host.edit(premise="The dog")
    _until(lambda: near.state == ViewState.READY and host.updates.main.idle)
    # deferred while the pause lasts (a loaded machine may take the whole pause to finish the view in sight)
    assert far.state == ViewState.DEFERRED or time.monotonic() - edited >= 1.0
    host.updates.wait(10)
    assert far.state == ViewState.READY and far.log[-1][2] - edited >= 1.0


def test_a_failing_view_shows_its_error_and_a_failing_pass_reaches_the_error_path():
    view = FakeView("a", 0)
    host = FakeHost(view)
    host.edit(premise="boom")
    host.updates.wait(10)
    assert view.state == ViewState.ERROR and view.shown == "RuntimeError: no numbers for boom"
    host.prepare = lambda timing: 1 / 0  # a failure outside any view
    host.edit(premise="The dog")
    host.updates.wait(10)
    assert len(host.errors) == 1 and isinstance(host.errors[0], ZeroDivisionError)
    del host.prepare
    host.edit(premise="The dog sat")  # the lane goes on
    host.updates.wait(10)
    assert view.state == ViewState.READY and view.shown == "a: ('The dog sat',)"
    with pytest.raises(ZeroDivisionError):  # a synchronous update raises in its caller
        host.prepare = lambda timing: 1 / 0
        host.updates.update()


def test_held_inputs_compute_nothing_and_close_stops_the_lanes():
    view = FakeView("a", 0)
    host = FakeHost(view)
    host.edit(premise="")
    host.updates.wait(10)
    assert view.log == [] and host.reports == []  # nothing runs: no progress (the host hides its bar)
    host.updates.close()
    host.edit(premise="The dog")
    host.updates.wait(1)
    assert view.log == []
