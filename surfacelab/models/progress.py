"""A model load's progress: the callback the current load reports its steps to, and transformers' own progress
bars switched off while someone else shows the load."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Callable, Iterator


#: A load's progress callback: (fraction of the load done, in [0, 1]; the step that starts now).
Progress = Callable[[float, str], None]
_CURRENT: ContextVar[Progress | None] = ContextVar("surfacelab_load_progress", default=None)


#: The first step of every load: the caller names the model (the workbench's status line says "loading <name>: <step>").
FIRST_STEP = "reading the model's files"
#: The last step of an in-process causal load: the model's first forward passes (the backend's self-check of its
#: shortcuts against a plain forward). They cost a first call seconds (the CPU kernels' first use, lazy set-up in
#: torch and transformers) that would otherwise be charged to whichever view scores first (docs/benchmarks.md).
WARM_UP = "first forwards (warm-up)"


def start_progress(progress: Progress | None) -> None:
    """Make ``progress`` the current load's callback (None: silent) and report the start (``FIRST_STEP``)."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: expected a callable (fraction, step) or None, got {type(progress).__name__}")
    _CURRENT.set(progress)
    report_step(0.0, FIRST_STEP)


def report_step(fraction: float, step: str) -> None:
    """Tell the current load's progress callback (if any) that ``step`` starts at ``fraction``."""
    callback = _CURRENT.get()
    if callback is not None:
        callback(fraction, step)


@contextlib.contextmanager
def bars_off(quiet: bool = False) -> Iterator[None]:
    """transformers' own progress bars off while a progress callback reports the load (its caller shows the load,
    e.g. the workbench's bar, and the bars would print beside it into the notebook cell), or when ``quiet``: a
    preset's converted copy loads in about a second, and its "Loading weights" bar would print on every run."""
    from transformers.utils import logging as hf_logging

    if not (quiet or _CURRENT.get() is not None) or not hf_logging.is_progress_bar_enabled():
        yield
        return
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()
