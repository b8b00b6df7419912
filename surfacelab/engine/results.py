"""What the engine returns: ``Scored`` (the scored tokens of one request), ``NextToken`` (the next-token distribution
after one prompt) and ``Results`` (one call's list of them, with that call's counters); and the readable token strings
of a request's continuation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
import pandas as pd

from .. import text
from ..backends.base import EngineStats
from ..backends.masked import MaskedStats

if TYPE_CHECKING:
    from ..models import LM

Request = tuple[str, str]


@dataclass
class Scored:
    """The scored tokens of one request.

    Arrays have one entry per continuation token: ``token_ids``, ``logprob`` (natural log,
    computed in float32), ``rank`` (1 = the model's top choice; tokens within ``RANK_TOL`` nats
    tie), ``entropy`` (nats, of the
    next-token distribution at that position) and ``greedy`` (rank == 1).
    """

    request: Request
    encoding: text.Encoding
    logprob: np.ndarray
    rank: np.ndarray
    entropy: np.ndarray
    greedy: np.ndarray
    tokens: list[str] = field(default_factory=list)
    top_ids: np.ndarray | None = None  # (n_tokens, k) most likely tokens at each position, with ``top_k``
    top_logprobs: np.ndarray | None = None  # (n_tokens, k) their log-probs, most likely first

    @property
    def total(self) -> float:
        """Summed log-prob of the continuation."""
        return float(self.logprob.astype(np.float64).sum())

    @property
    def n_tokens(self) -> int:
        """Number of scored tokens."""
        return len(self.logprob)

    @property
    def flags(self) -> list[str]:
        """Per-token flags: 'boundary_merge' on a token straddling the join, 'truncated' where the context was cut."""
        out = []
        for i in range(self.n_tokens):
            f = []
            if i == 0 and self.encoding.merged:
                f.append("boundary_merge")
            if self.encoding.truncated:
                f.append(f"truncated:{self.encoding.truncated}")
            out.append(",".join(f))
        return out

    def frame(self) -> pd.DataFrame:
        """One row per scored token."""
        enc = self.encoding
        return pd.DataFrame({
            "position": np.arange(self.n_tokens),
            "token": self.tokens,
            "token_id": np.asarray(enc.scored_ids, dtype=np.int64),
            "char_start": [s for s, _ in enc.spans],
            "char_end": [e for _, e in enc.spans],
            "logprob": self.logprob.astype(np.float64),
            "rank": self.rank,
            "entropy": self.entropy.astype(np.float64),
            "greedy": self.greedy,
            "flags": self.flags,
        })


class Results(list):
    """The per-request results of one engine call (a plain list) with that call's ``stats`` (a ``MaskedStats`` for
    ``masked_logprobs``)."""

    def __init__(self, items: Iterable[Any] = (), stats: EngineStats | MaskedStats | None = None) -> None:
        super().__init__(items)
        self.stats = stats if stats is not None else EngineStats()


@dataclass
class NextToken:
    """The next-token distribution after one prompt (float32 log-softmax)."""

    context: str
    input_ids: tuple[int, ...]
    selected: np.ndarray  # log-probs of the requested token ids, in their order
    top_ids: np.ndarray
    top_logprobs: np.ndarray
    top_tokens: list[str]
    entropy: float


#: The token string of a byte piece whose character an earlier token already shows (" 🎉" in three byte-level
#: tokens reads "␣🎉", "…", "…", not the emoji three times).
SAME_CHARACTER = "…"


def token_strings(lm: LM, enc: text.Encoding) -> list[str]:
    """Readable token strings: the continuation text each token covers (``SAME_CHARACTER`` for a byte piece of a
    character an earlier token shows), or its decoded form."""
    out = []
    shown = 0  # the continuation's characters shown so far
    for tid, (s, e) in zip(enc.scored_ids, enc.spans):
        piece = enc.continuation[s:e]
        out.append(SAME_CHARACTER if piece and e <= shown else piece or lm.tokenizer.decode([tid]))
        shown = max(shown, e)
    return out
