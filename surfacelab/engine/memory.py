"""The engine's in-memory cache of top-k alternatives (the disk cache keeps no alternatives): the last
``TOP_CACHE_SIZE`` requests of ``logprobs(..., top_k=k)`` and prompts of ``next_token_logprobs(..., top_k=k)``, so a
live view that asks again pays nothing."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

#: Requests whose top-k alternatives are kept in memory.
TOP_CACHE_SIZE = 4096


class TopCache:
    """In-memory LRU of ``logprobs(..., top_k=k)`` results, safe to share between threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, int], dict[str, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, keys: list[str], k: int) -> dict[str, dict[str, np.ndarray]]:
        """The entries held for ``keys`` at this k (marked as recently used)."""
        with self._lock:
            out = {}
            for key in keys:
                entry = self._items.get((key, k))
                if entry is not None:
                    self._items.move_to_end((key, k))
                    out[key] = entry
            return out

    def put_many(self, entries: dict[str, dict[str, np.ndarray]], k: int) -> None:
        """Store entries; the least recently used go beyond ``size``."""
        with self._lock:
            for key, entry in entries.items():
                self._items[(key, k)] = entry
                self._items.move_to_end((key, k))
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


#: The one instance the engine reads and writes.
TOP_CACHE = TopCache(TOP_CACHE_SIZE)


def clear_top_cache() -> None:
    """Empty the in-memory cache of ``logprobs(..., top_k=k)`` results."""
    TOP_CACHE.clear()
