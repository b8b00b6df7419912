"""Where the forward passes run: in-process transformers, or a vLLM / OpenAI-compatible completions server.

Every backend honours the contract in ``base``: it receives requests that ``text.encode`` (or
``text.encode_prompt``) already turned into token ids, and returns per scored position the target's
log-prob and rank, the top-k alternatives, and the entropy where it can compute it (NaN where not).
Encoding, deduplication, the disk cache and result objects stay in ``engine``, the same for every backend.
A masked LM's copies (PLL) run in ``masked``, under its own contract (per masked copy: the scored targets'
log-probs and ranks).
"""

from .base import Backend, NextTokenScores, TokenScores

__all__ = ["Backend", "NextTokenScores", "TokenScores"]
