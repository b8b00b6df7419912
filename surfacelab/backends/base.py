"""The backend contract: what a backend promises the engine for a list of already-encoded requests.

The engine (``surfacelab.engine``) owns everything that must be identical whatever runs the model:
``text.encode`` (joint encoding, the whitespace rule, BOS policy, truncation), deduplication, the
disk cache and its keys, the in-memory top-k cache and the result objects. A backend only computes.
(A masked LM's copies, PLL's forward passes, run under their own contract: ``masked``.)

* ``score(encodings, top_k=k, ...)``: for each ``text.Encoding``, one ``TokenScores`` with one row
  per scored token (``encoding.scored_ids``, the tokens from ``encoding.start`` on): the target's
  log-prob, its rank (1 = the model's most likely token; a token outranks the target only if it is
  more likely by more than ``RANK_TOL`` nats, so float noise between batch layouts cannot reorder
  near-ties), the entropy of the next-token distribution (NaN where the backend cannot compute it,
  e.g. a server that returns only the top-k) and the k most likely tokens with their log-probs
  (k = 0: arrays of shape (n, 0)). A server that reports ranks without ``RANK_TOL`` reports its own.
* ``next_token(prompts, token_ids=..., top_k=k, ...)``: for each prompt (token ids from
  ``text.encode_prompt``), the distribution of the token after its last token: the log-probs of
  the asked ``token_ids`` in their order, the top-k, and the entropy (NaN where unavailable). A
  server that cannot return arbitrary token log-probs may score each asked id by appending it to
  the prompt (``score`` on ``prompt + (id,)``); the contract does not care how.

Log-probs are natural logs of a float32 log-softmax. Results come back in the order given.
``batch_size`` is a cap on requests per batch (``None``: the backend plans batches itself); a
backend may treat it as requests per HTTP call. A backend reports its work into the
``EngineStats`` it is handed (forwarded tokens, batches, which execution path ran) and calls
``on_done(indices, results)`` as soon as a batch of requests is finished (``indices``: positions in
the list given), so that the engine commits finished work to the cache before the call ends: a
crash or SIGKILL mid-call then loses at most the batches in flight.

What a backend reports and honours besides its results:

* **Counters.** It fills the ``EngineStats`` of the call it serves (a call's stats come back with its results,
  ``Results.stats``, never through a module global): forwarded tokens, batches, ``paths`` (how many requests ran on
  which execution path: ``"plain"``, one row per request; ``"packed"``, rows of several requests, each shared prefix
  once, under a 4-D mask; ``"kv"``, a prefix pass with a key/value cache, then the suffixes on it; ``"server"``, a
  completions server), ``rule`` (why the transformers backend may or may not pack rows on this model) and
  ``plan_seconds`` (the time it spent planning; 0 where it plans nothing). ``RANK_TOL`` and ``EngineStats`` live
  here; the engine re-exports them.
* **Cancellation.** Inside ``cancelled_when(check)`` an in-process backend calls ``raise_if_cancelled``
  between batches and between the model's layers: a forward whose result is no longer wanted (a
  live view after a newer edit) stops within a layer with ``Cancelled``. The batches finished before
  it are committed as usual. A server backend checks before each HTTP call. Its forward pre-hook is the one hook
  that leaves the caches on: any other forward hook on the model (``foreign_hooks``) switches them off for a call.
* **Progress.** Inside ``reporting(on_batch)`` the engine passes each batch a backend reports to ``on_done`` on to
  ``on_batch`` (requests done of the call's total), so that a caller's progress bar moves within one long call;
  ``next_token`` takes ``progress`` like ``score``.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Iterator, Protocol, Sequence

import numpy as np

#: A token outranks the target only if more likely by more than this (nats).
RANK_TOL = 1e-4


class Cancelled(Exception):
    """A computation stopped because its ``cancelled_when`` check said that its result is no longer wanted."""


_cancel = threading.local()
_report = threading.local()


@contextmanager
def _set_for_thread(store: threading.local, value: Any) -> Iterator[None]:
    """``store.value`` is ``value`` within the block (on this thread), and what it was before after it."""
    before = getattr(store, "value", None)
    store.value = value
    try:
        yield
    finally:
        store.value = before


def cancelled_when(check: Callable[[], bool] | None) -> ContextManager[None]:
    """Within the block, on this thread, forward passes stop with ``Cancelled`` as soon as ``check()`` is true
    (checked between batches and between layers); None: never (e.g. a self-check that must run to its end)."""
    return _set_for_thread(_cancel, check)


def reporting(on_batch: Callable[[int, int], None] | None) -> ContextManager[None]:
    """Within the block, on this thread, every ``engine.logprobs`` call reports its progress: ``on_batch(done,
    total)`` after each batch it forwards, in distinct requests (those the cache answered count as done from the
    start). A progress bar follows a long call with it; None: no reports."""
    return _set_for_thread(_report, on_batch)


def progress_callback() -> Callable[[int, int], None] | None:
    """This thread's ``reporting`` callback (None outside one)."""
    return getattr(_report, "value", None)


def raise_if_cancelled(*_: Any) -> None:
    """Raise ``Cancelled`` if this thread's ``cancelled_when`` check is true (the arguments are ignored: it is
    also a forward pre-hook)."""
    check = getattr(_cancel, "value", None)
    if check is not None and check():
        raise Cancelled("cancelled: its result is no longer wanted")


def foreign_hooks(model: Any) -> list[str]:
    """The modules of ``model`` (by name; "*" for a global hook, which sees every module) that carry a forward hook
    or pre-hook other than ``raise_if_cancelled`` (the only hook surfacelab registers: it changes no output). Such
    a hook may change what the model computes, so no cache may answer for it or keep what it gives."""
    from torch.nn.modules import module as torch_module

    def foreign(forward_hooks: dict, pre_hooks: dict) -> bool:
        return bool(forward_hooks) or any(h is not raise_if_cancelled for h in pre_hooks.values())

    found = ["*"] if foreign(torch_module._global_forward_hooks, torch_module._global_forward_pre_hooks) else []
    return found + [name or type(model).__name__ for name, m in model.named_modules()
                    if foreign(m._forward_hooks, m._forward_pre_hooks)]


@dataclass
class TokenScores:
    """A backend's answer for one encoded request; arrays have one row per scored token.

    Attributes:
        logprob: (n,) float32 log P(target | everything before it).
        rank: (n,) int64 rank of the target (1 = most likely, ties within ``RANK_TOL``).
        entropy: (n,) float32 entropy (nats) of the next-token distribution; NaN where unavailable.
        top_ids: (n, k) int64 the k most likely tokens at each position, most likely first (k may be 0).
        top_logprobs: (n, k) float32 their log-probs.
    """

    logprob: np.ndarray
    rank: np.ndarray
    entropy: np.ndarray
    top_ids: np.ndarray
    top_logprobs: np.ndarray


@dataclass
class NextTokenScores:
    """A backend's answer for one prompt: the distribution of the token after it.

    Attributes:
        selected: (len(token_ids),) float32 log-probs of the asked token ids, in their order.
        entropy: entropy (nats) of the distribution; NaN where unavailable.
        top_ids: (k,) int64 the k most likely next tokens, most likely first.
        top_logprobs: (k,) float32 their log-probs.
    """

    selected: np.ndarray
    entropy: float
    top_ids: np.ndarray
    top_logprobs: np.ndarray


@dataclass
class EngineStats:
    """Counters of one ``logprobs`` or ``next_token_logprobs`` call.

    Token counts cover the requests computed in this call (not those served by a cache). A request
    of n tokens needs n - 1 positions forwarded (its last token is only a target; a prompt of n
    tokens needs n), so: ``tokens_needed`` is what a plan without prefix reuse forwards,
    ``tokens_unique`` what an ideal plan forwards (every distinct token prefix once), and
    ``tokens_forwarded`` what was actually forwarded; ``redundancy`` = forwarded / unique (1.0 is
    ideal). ``prefix_groups`` and ``reused`` count only prefixes that really ran once for several
    requests.
    """

    requests: int = 0
    unique: int = 0
    cached: int = 0
    backend: str = ""
    batches: int = 0
    tokens_forwarded: int = 0  # non-pad tokens run through the model (prefix and suffix passes)
    tokens_padded: int = 0  # positions actually computed, padding included
    tokens_needed: int = 0  # sum of forwarded lengths of the unique requests computed
    tokens_unique: int = 0  # distinct token prefixes among them (the unique-prefix plan)
    tokens_scored: int = 0  # positions projected onto the vocabulary
    prefix_groups: int = 0  # shared prefixes run once and reused
    reused: int = 0  # requests scored on top of a shared prefix
    oom_backoffs: int = 0  # times the automatic token budget was halved
    plan_seconds: float = 0.0  # time spent planning batches (not running them)
    paths: dict[str, int] = field(default_factory=dict)  # requests per execution path
    rule: str = ""  # why rows may (not) be packed on this model

    @property
    def redundancy(self) -> float:
        """Tokens forwarded per token an ideal unique-prefix plan needs."""
        return self.tokens_forwarded / self.tokens_unique if self.tokens_unique else 1.0

    def count_path(self, path: str, requests: int) -> None:
        """Record that ``requests`` requests ran on execution path ``path``."""
        self.paths[path] = self.paths.get(path, 0) + requests

    def as_dict(self) -> dict[str, Any]:
        """The counters (and ``redundancy``) as a plain dict."""
        return {**self.__dict__, "paths": dict(self.paths), "redundancy": self.redundancy}


#: ``on_done(indices, results)``: requests ``indices`` (positions in the list given) are finished.
OnDone = Callable[[list[int], list[Any]], None]


class Backend(Protocol):
    """What runs the forward passes for an ``LM`` (see the module docstring)."""

    #: short name shown in stats, result ``meta`` and views: "transformers", "vllm", ...
    kind: str
    #: number of rows of the output distribution (token ids are valid below it)
    vocab_size: int
    #: False where entropy cannot be computed (views then say so instead of showing NaN)
    has_entropy: bool

    def identity(self) -> str:
        """What the model fingerprint must include so that other weights never reuse cached numbers."""

    def warm_up(self) -> None:
        """The backend's first-use work (the transformers backend's self-check of its shortcuts), run by ``load_lm``
        as the load's last step ("first forwards (warm-up)") so that no first score pays for it; nothing where
        there is none."""

    def score(self, encodings: Sequence[Any], *, top_k: int, batch_size: int | None, progress: bool,
              stats: EngineStats, on_done: OnDone | None = None) -> list[TokenScores]:
        """Per-token scores of every encoded request, in the order given."""

    def next_token(self, prompts: Sequence[tuple[int, ...]], *, token_ids: Sequence[int], top_k: int,
                   batch_size: int | None, progress: bool, stats: EngineStats,
                   on_done: OnDone | None = None) -> list[NextTokenScores]:
        """The next-token distribution after every prompt, in the order given."""
