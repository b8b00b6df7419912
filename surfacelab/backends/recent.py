"""The next-token distributions after the contexts of recent small scoring calls, per model: a scoring call on one
question computes them at its first scored positions anyway, and ``next_token_logprobs`` on the same prompt (Why's
first part) reads them instead of forwarding again (``TransformersBackend.remembered``)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Sequence

import torch

#: A scoring call with at most this many distinct contexts (one question's) keeps the next-token distribution after
#: each; the last ``RECENT_CONTEXTS`` are kept, per model.
REMEMBER_MAX_CONTEXTS = 8
RECENT_CONTEXTS = 32


class RecentContexts:
    """(model identity, context token ids) -> the float32 log-softmax of the next token after them; the last
    ``RECENT_CONTEXTS``, safe to share between threads."""

    def __init__(self) -> None:
        self._rows: OrderedDict[tuple[str, tuple[int, ...]], torch.Tensor] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, identity: str, prompts: Sequence[Sequence[int]]) -> dict[int, torch.Tensor]:
        """The rows kept for ``prompts``, by index in ``prompts`` (the others left out)."""
        with self._lock:
            rows = {i: self._rows.get((identity, tuple(p))) for i, p in enumerate(prompts)}
        return {i: r for i, r in rows.items() if r is not None}

    def missing(self, identity: str, contexts: Sequence[tuple[Sequence[int], int]]) -> dict[tuple[int, ...], int]:
        """Of (context ids, where its row is) pairs, those not kept yet: context ids -> where its row is."""
        fresh: dict[tuple[int, ...], int] = {}
        with self._lock:
            for ids, at in contexts:
                if (identity, tuple(ids)) not in self._rows:
                    fresh.setdefault(tuple(ids), at)
        return fresh

    def keep(self, identity: str, rows: dict[tuple[int, ...], torch.Tensor]) -> None:
        """Keep ``rows`` (context ids -> log-softmax row), the oldest going beyond ``RECENT_CONTEXTS``."""
        with self._lock:
            for ids, row in rows.items():
                key = (identity, ids)
                self._rows[key] = row.clone()
                self._rows.move_to_end(key)
            while len(self._rows) > RECENT_CONTEXTS:
                self._rows.popitem(last=False)
