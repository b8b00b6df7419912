"""The masked-LM backend: where the forward passes of PLL's masked copies run, and its contract with the engine.

The engine (``engine.masked_logprobs``) owns what must be identical whatever runs the model: deduplication,
the disk cache and its keys, and the fingerprint. A masked backend only computes:

* ``score(copies, *, batch_size, progress, stats, on_done)``: for each ``MaskedCopy`` (the token ids of one
  input, special tokens included; the positions to replace by the mask token; the scored positions), one
  ``MaskedScores`` with one row per scored position, in the copy's order: the log-prob of the token id the
  input has there (a float32 log-softmax, natural log) given the masked input, and its rank (1 = the model's
  most likely token; a token outranks the target only if it is strictly more likely). Results come back in
  the order given.
* ``batch_size`` caps copies per batch; ``None``: a token budget per batch (``MASKED_TOKEN_BUDGET`` by
  device type; on CUDA scaled to the free memory, see ``budget.token_budget``) that halves on
  out-of-memory, the unfinished copies planned again (``budget.back_off``; a fixed ``batch_size`` or a
  one-copy batch re-raises it).
* The backend reports its work into the ``MaskedStats`` it is handed and calls ``on_done(indices, results)``
  as soon as a batch is finished (``indices``: positions in the list given), so that the engine commits
  finished copies to the cache before the call ends.
* **Cancellation.** Inside ``base.cancelled_when(check)`` the check runs before every batch: a run whose
  result is no longer wanted stops with ``Cancelled`` between batches; the batches finished before it have
  been handed to ``on_done`` as usual.

The in-process implementation (``MaskedBackend``): copies are sorted by length, longest first (a stable sort),
and every batch holds copies of one length only, so nothing is padded and no attention mask is needed. The
vocabulary head runs only at the scored positions where the model's head is one module (``head``); otherwise
the full logits are computed and the scored positions gathered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from . import openmp
from .base import OnDone, raise_if_cancelled
from .budget import back_off, token_budget

#: Token budget of one automatic batch of masked copies (rows x length), by device type: on CPU half the causal
#: ``transformers.TOKEN_BUDGET``, every copy being as long as its whole sentence.
MASKED_TOKEN_BUDGET = {"cpu": 2048, "mps": 16384, "cuda": 65536}


@dataclass(frozen=True)
class MaskedCopy:
    """One masked copy of an input: ``input_ids`` (special tokens included), the ``masked`` positions (replaced
    by the mask token) and the ``scored`` positions (each scored against the token id ``input_ids`` has there)."""

    input_ids: tuple[int, ...]
    masked: tuple[int, ...]
    scored: tuple[int, ...]


@dataclass
class MaskedScores:
    """A backend's answer for one masked copy; arrays have one row per scored position, in order.

    Attributes:
        logprob: (n,) float32 log P(target | the masked input).
        rank: (n,) int64 rank of the target (1 = most likely; only strictly more likely tokens outrank it).
    """

    logprob: np.ndarray
    rank: np.ndarray


@dataclass
class MaskedStats:
    """Counters of one ``engine.masked_logprobs`` call.

    ``requests`` copies were asked for, ``unique`` of them distinct, ``cached`` of those answered by the disk
    cache; the rest ran in ``batches`` forwards of ``tokens_forwarded`` tokens in all (no padding), the largest
    ``max_rows`` copies and ``max_tokens`` tokens; ``oom_backoffs`` counts the halvings of the token budget.
    """

    requests: int = 0
    unique: int = 0
    cached: int = 0
    backend: str = ""
    batches: int = 0
    max_rows: int = 0
    max_tokens: int = 0
    tokens_forwarded: int = 0
    oom_backoffs: int = 0


def head(model: Any) -> torch.nn.Module | None:
    """The MLM head that maps final hidden states to vocabulary logits, where the model has one."""
    for name in ("cls", "lm_head", "predictions"):
        mod = getattr(model, name, None)
        if isinstance(mod, torch.nn.Module):
            return mod
    return None


def plan(lengths: list[int], rows: int | None, budget: int) -> list[list[int]]:
    """Batches of indices into ``lengths`` (sorted longest first): one length per batch, so no padding; at most
    ``rows`` copies each, or (``rows`` None) as many as ``budget`` tokens hold (at least one)."""
    batches: list[list[int]] = []
    start = 0
    while start < len(lengths):
        end = start
        while end < len(lengths) and lengths[end] == lengths[start]:
            end += 1
        size = rows if rows is not None else max(1, budget // lengths[start])
        batches += [list(range(i, min(i + size, end))) for i in range(start, end, size)]
        start = end
    return batches


class MaskedBackend:
    """Runs the masked copies of a transformers masked LM in this process (see the module docstring)."""

    kind = "transformers"

    def __init__(self, model: Any, device: torch.device, *, mask_id: int, name: str) -> None:
        self.model = model
        self.device = device
        self.mask_id = mask_id
        self.name = name
        self.head = head(model)

    def forward(self, ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor,
                targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-prob and rank of ``targets`` at (rows, cols) of the unpadded, masked ``ids``; the head runs only
        there."""
        if self.head is not None:
            hidden = self.model.base_model(input_ids=ids)[0]
            logits = self.head(hidden[rows, cols])
        else:  # architectures whose head is not one module: full logits, then gather
            logits = self.model(input_ids=ids).logits[rows, cols]
        logp = torch.log_softmax(logits.float(), dim=-1)
        lp = logp.gather(1, targets[:, None])[:, 0]
        rank = (logp > lp[:, None]).sum(1, dtype=torch.int32) + 1
        return lp, rank

    def score(self, copies: Sequence[MaskedCopy], *, batch_size: int | None, progress: bool, stats: MaskedStats,
              on_done: OnDone | None = None) -> list[MaskedScores]:
        """Per-position scores of every masked copy, in the order given."""
        from tqdm.auto import tqdm

        order = sorted(range(len(copies)), key=lambda k: -len(copies[k].input_ids))
        lengths = [len(copies[k].input_ids) for k in order]
        # every copy's scores are a slice of two arrays allocated here, filled batch by batch: no small array
        # outlives its batch between the forwards' large buffers (they fragmented the heap: +50% peak memory)
        starts = np.cumsum([0] + [len(c.scored) for c in copies])
        logprob = np.zeros(starts[-1], dtype=np.float32)
        rank = np.zeros(starts[-1], dtype=np.int64)
        out = [MaskedScores(logprob[a:b], rank[a:b]) for a, b in zip(starts[:-1], starts[1:])]
        budget = token_budget(MASKED_TOKEN_BUDGET, self.device, self.model.config)
        bar = tqdm(total=len(copies), desc=f"PLL ({self.name})", unit="copy",
                   disable=not progress or len(copies) < 5000)
        batches = plan(lengths, batch_size, budget)  # indices into ``order``
        step = 0
        with torch.inference_mode():
            while step < len(batches):
                raise_if_cancelled()
                batch = [order[j] for j in batches[step]]
                ids = torch.tensor([copies[k].input_ids for k in batch], dtype=torch.long)
                m_rows, m_cols, s_rows, s_cols, slots = [], [], [], [], []
                for r, k in enumerate(batch):
                    m_rows += [r] * len(copies[k].masked)
                    m_cols += copies[k].masked
                    s_rows += [r] * len(copies[k].scored)
                    s_cols += copies[k].scored
                    slots += range(starts[k], starts[k + 1])
                targets = ids[s_rows, s_cols]
                ids[m_rows, m_cols] = self.mask_id
                try:
                    lp, rk = self.forward(ids.to(self.device), torch.tensor(s_rows, device=self.device),
                                          torch.tensor(s_cols, device=self.device), targets.to(self.device))
                except torch.OutOfMemoryError:
                    budget = back_off(budget, self.device, fixed=batch_size is not None or len(batch) == 1)
                    stats.oom_backoffs += 1
                    done = batches[step][0]
                    batches = batches[:step] + [[done + j for j in b] for b in plan(lengths[done:], None, budget)]
                    continue
                logprob[slots] = lp.cpu().numpy()
                rank[slots] = rk.cpu().numpy()
                if on_done is not None:
                    on_done(batch, [out[k] for k in batch])
                stats.batches += 1
                stats.max_rows = max(stats.max_rows, len(batch))
                stats.max_tokens = max(stats.max_tokens, int(ids.numel()))
                stats.tokens_forwarded += int(ids.numel())
                step += 1
                bar.update(len(batch))
        bar.close()
        openmp.release()
        return out
