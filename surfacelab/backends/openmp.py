"""The OpenMP workers of torch's CPU kernels: the main thread lets its own go after each call.

libgomp (the OpenMP runtime of torch's Linux CPU wheels) gives every thread that runs a parallel region a pool of
worker threads of its own, kept until that thread ends. While libgomp manages more threads than there are CPUs, its
workers stop spinning between parallel regions and sleep on a futex instead, to be woken at the next one. A Jupyter
kernel's main thread never ends, so after one computation there (a model load, an ``evaluate`` in a cell) every
background run (the explorer's, the workbench's lanes) would run in that slower mode (measured in
docs/benchmarks.md, "The explorer in the browser").

``release`` frees the calling thread's pool (``omp_pause_resource_all``); the in-process backends call it after
their forward passes on the main thread, and ``load_lm`` after a load. The next parallel region there starts a new
pool (one thread per extra core: well under a millisecond). Where torch does not run on libgomp (macOS, Windows, a
build with another OpenMP), there is nothing to release.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

#: ``omp_pause_soft`` (OpenMP 5.0): the runtime frees its threads; a later parallel region starts them again.
PAUSE_SOFT = 1


@functools.cache
def _runtime() -> ctypes.CDLL | None:
    """The libgomp torch loaded (the one in torch's own ``lib`` folder), or None when it uses no libgomp."""
    import torch

    found = sorted((Path(torch.__file__).parent / "lib").glob("libgomp*.so*"))
    if not found:
        return None
    lib = ctypes.CDLL(str(found[0]))  # already loaded by torch: this returns the same library
    return lib if hasattr(lib, "omp_pause_resource_all") else None


def release() -> bool:
    """On the main thread, free its OpenMP worker threads (see the module); True when there was a runtime to ask
    and it agreed. Elsewhere nothing: a background thread's pool goes when that thread ends."""
    if threading.current_thread() is not threading.main_thread():
        return False
    lib = _runtime()
    return lib is not None and lib.omp_pause_resource_all(PAUSE_SOFT) == 0


@contextmanager
def torch_threads(n: int, after: int) -> Iterator[None]:
    """Run the block on ``n`` torch threads, then set ``after`` (the process default read on the main thread). torch
    keeps the setting per running thread, but also records it as the default of threads started later: setting
    ``after`` keeps that default from drifting."""
    import torch

    torch.get_num_threads()  # a new thread first takes the default (lazily, at its first call): before ours
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(after)
