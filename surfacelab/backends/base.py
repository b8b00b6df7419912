"""The backend contract: what a backend promises the engine for a list of already-encoded requests.

The engine (``surfacelab.engine``) owns everything that must be identical whatever runs the model:
``text.encode`` (joint encoding, the whitespace rule, BOS policy, truncation), deduplication, the
disk cache and its keys, and the result objects. A backend only computes.

* ``score(encodings, top_k=k)``: for each ``text.Encoding``, one ``TokenScores`` with one entry per
  scored token (``encoding.scored_ids``, the tokens from ``encoding.start`` on): the target's
  log-prob, its rank (1 = the model's most likely token; a token outranks the target only if it is
  more likely by more than ``RANK_TOL`` nats, so float noise between batch layouts cannot reorder
  near-ties), the entropy of the next-token distribution (NaN where the backend cannot compute it,
  e.g. a server that returns only the top-k), and the k most likely tokens with their log-probs.
* ``next_token(prompts, token_ids=..., top_k=k)``: for each prompt (token ids from
  ``text.encode_prompt``), the next-token distribution after its last token: the log-probs of the
  asked ``token_ids`` in their order, the top-k, and the entropy (NaN where unavailable).

Log-probs are natural logs of a float32 log-softmax. Results come back in the order given. A
backend reports its work into the ``EngineStats`` it is handed (forwarded tokens, batches, path
taken) and calls ``on_done(indices, scores)`` as soon as a batch of requests is finished, so that
the engine can commit finished work to the cache before the call ends (a crash mid-call then
loses at most the batches in flight).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np

#: A token outranks the target only if more likely by more than this (nats).
RANK_TOL = 1e-4


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


#: ``on_done(indices, scores)``: requests ``indices`` (positions in the list given) are finished.
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

    def score(self, encodings: Sequence[Any], *, top_k: int, batch_size: int | None, progress: bool,
              stats: Any, on_done: OnDone | None = None) -> list[TokenScores]:
        """Per-token scores of every encoded request, in the order given."""

    def next_token(self, prompts: Sequence[tuple[int, ...]], *, token_ids: Sequence[int], top_k: int,
                   batch_size: int | None, stats: Any, on_done: OnDone | None = None) -> list[NextTokenScores]:
        """The next-token distribution after every prompt, in the order given."""
