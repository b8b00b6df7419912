"""Background jobs for the widgets (no ipywidgets here).

``Runner``: one background lane. A job is a function of one ``Job``; the runner runs its jobs one at a time
(``run`` on the calling thread, ``submit`` on its own thread) and keeps at most one job waiting:

>>> runner = Runner("explorer", on_progress=lambda fraction, note: print(fraction, note))  # doctest: +SKIP
>>> def job(run):                                                                         # doctest: +SKIP
...     for i, chunk in enumerate(chunks):
...         run.check()                       # stop here once cancelled (raises engine.Cancelled)
...         evaluate(lm, chunk)               # its forward passes stop at the next layer once cancelled
...         run.progress((i + 1) / len(chunks), f"chunk {i + 1} of {len(chunks)}")
>>> run = runner.submit(job)                  # returns at once; cancel_button: runner.cancel()  # doctest: +SKIP

- ``submit(job, delay=0.0, cancel_running=False) -> Run``: run ``job`` on the runner's thread once ``delay``
  seconds pass without a newer submit (debounce). A newer submit replaces a job still waiting (its run is
  cancelled and never starts: requests coalesce); ``cancel_running`` also cancels the run in progress.
- ``run(job)``: run ``job`` now on the calling thread, after the run in progress; its exception is raised.
- ``cancel()``: drop the waiting job and cancel the running one; ``close()``: that, and refuse later jobs.
- ``idle``, ``pending``, ``wait(timeout) -> bool`` (True once idle).
- ``Job``: ``cancelled``, ``check()``, ``progress(fraction=None, note=None)`` (calls ``on_progress``),
  ``error`` and ``wait(timeout)``. Inside a job, ``engine.cancelled_when`` stops the forward passes of a
  cancelled run. A job's exception (other than ``Cancelled``) goes to ``on_error`` (default: ``Job.error``
  alone), and the runner goes on with its next job.
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import Any, Callable, ContextManager

from ...engine import Cancelled, cancelled_when


class Job:
    """One job's handle: cancel it, check for cancellation inside it, report its progress."""

    def __init__(self, on_progress: Callable[[float | None, str | None], None] | None = None) -> None:
        self._on_progress = on_progress
        self._cancelled = threading.Event()
        self._done = threading.Event()
        self.error: BaseException | None = None

    @property
    def cancelled(self) -> bool:
        """True once the run was cancelled (by ``cancel``, a newer submit or the runner's ``cancel``/``close``)."""
        return self._cancelled.is_set()

    def cancel(self) -> None:
        self._cancelled.set()

    def check(self) -> None:
        """Raise ``Cancelled`` if the run was cancelled (a job's checkpoint)."""
        if self.cancelled:
            raise Cancelled("cancelled: its result is no longer wanted")

    def progress(self, fraction: float | None = None, note: str | None = None) -> None:
        """Report how far the job is (0 to 1; None: unchanged) and what it is doing (None: nothing new)."""
        if self._on_progress is not None:
            self._on_progress(fraction, note)

    def finish(self) -> None:
        """Mark the run over (the runner calls it): ``wait`` returns."""
        self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run is over (done, failed, cancelled or dropped); False on timeout."""
        return self._done.wait(timeout)


Work = Callable[["Job"], Any]


class Runner:
    """Jobs run one at a time on one background thread (started when needed, gone when idle); see the module.

    Args:
        name: the thread's name.
        on_progress: called with ``(fraction, note)`` by ``Job.progress``, on the job's thread.
        on_error: called with a job's exception (other than ``Cancelled``), on the job's thread.
        context: entered around each background run (e.g. ``torch_threads``); not around ``run``.
    """

    def __init__(self, name: str, *, on_progress: Callable[[float | None, str | None], None] | None = None,
                 on_error: Callable[[BaseException], None] | None = None,
                 context: Callable[[], ContextManager] = nullcontext) -> None:
        self.name, self.on_progress, self.on_error, self.context = name, on_progress, on_error, context
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._running = threading.RLock()  # one run at a time, on whichever thread
        self._next: tuple[Work, Job] | None = None  # the job waiting (for its delay, or for the run in progress)
        self._timer: threading.Timer | None = None  # while set, the waiting job's delay is not over
        self._thread: threading.Thread | None = None
        self._current: Job | None = None
        self._closed = False

    @property
    def idle(self) -> bool:
        """No job waiting and no background run."""
        with self._lock:
            return self._next is None and self._thread is None

    @property
    def pending(self) -> bool:
        """A job is waiting."""
        with self._lock:
            return self._next is not None

    def submit(self, job: Work, *, delay: float = 0.0, cancel_running: bool = False) -> Job:
        """Run ``job`` on the runner's thread once ``delay`` seconds pass without a newer submit; see the module."""
        run = Job(self.on_progress)
        with self._lock:
            if self._closed:
                run.cancel()
                run.finish()
                return run
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._next is not None:
                self._drop(self._next[1])
            if cancel_running and self._current is not None:
                self._current.cancel()
            self._next = (job, run)
            if delay > 0:
                self._timer = threading.Timer(delay, self._due, args=(run,))
                self._timer.daemon = True
                self._timer.start()
            else:
                self._start()
        return run

    def run(self, job: Work) -> Any:
        """Run ``job`` now on the calling thread (after the run in progress) and return its result."""
        run = Job(self.on_progress)
        with self._running:
            self._current = run
            try:
                with cancelled_when(lambda: run.cancelled):
                    return job(run)
            finally:
                self._current = None
                run.finish()

    def cancel(self) -> None:
        """Drop the waiting job and cancel the run in progress."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._next is not None:
                self._drop(self._next[1])
                self._next = None
                self._idle.notify_all()
            if self._current is not None:
                self._current.cancel()

    def close(self) -> None:
        """``cancel``, and refuse later jobs."""
        with self._lock:
            self._closed = True
        self.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``idle``; False on timeout, or at once on the runner's own thread (a job cannot wait for
        itself)."""
        with self._lock:
            if self._thread is threading.current_thread():
                return False
            return self._idle.wait_for(lambda: self._next is None and self._thread is None, timeout)

    @staticmethod
    def _drop(run: Job) -> None:
        run.cancel()
        run.finish()

    def _due(self, run: Job) -> None:
        with self._lock:
            if self._next is not None and self._next[1] is run:  # not replaced meanwhile
                self._timer = None
                self._start()

    def _start(self) -> None:  # with self._lock held
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True, name=self.name)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._next is None or self._timer is not None:  # nothing to run now: the thread ends
                    self._thread = None
                    self._idle.notify_all()
                    return
                (job, run), self._next = self._next, None
            with self._running:
                self._current = run
                try:
                    with self.context(), cancelled_when(lambda: run.cancelled):
                        job(run)
                except Cancelled:
                    pass
                except Exception as err:  # the caller's error path; the lane goes on with its next job
                    run.error = err
                    if self.on_error is not None:
                        self.on_error(err)
                finally:
                    self._current = None
                    run.finish()
