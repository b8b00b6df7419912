"""Reading option IDs at the answer cue: how each ID is tokenised after the cue, and the full-vocabulary log-probs
of its two variants (" A" and "A") after each prompt, from the engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import engine, text
from ..engine.cache import ScoreCache
from ..engine.requests import Entry, Plan

if TYPE_CHECKING:
    from ..models import LM


def id_variants(lm: LM, ids: Sequence[str], cue: str = "Answer:") -> pd.DataFrame:
    """How each ID is read after the cue: one row per (ID, variant) with its tokens.

    Columns: id, variant (" A" or "A"), token_ids, single (one token: read from the next-token
    distribution), duplicate (same tokens as the ID's other variant: counted once).
    """
    rows = []
    for i in ids:
        seen: set[tuple[int, ...]] = set()
        for v in (" " + i, i):
            enc = text.encode(lm, cue, v)
            toks = tuple(enc.scored_ids)
            rows.append({"id": i, "variant": v, "token_ids": toks,
                         "single": len(toks) == 1 and not enc.merged, "duplicate": toks in seen})
            seen.add(toks)
    return pd.DataFrame(rows)


def variant_logprobs(lm: LM, prompts: list[str], ids: tuple[str, ...], cue: str,
                      cache: bool | ScoreCache) -> np.ndarray:
    """Full-vocabulary log-probs of each ID's variants after each prompt: (prompts, ids, 2) float64.

    One ``next_token_logprobs`` forward per prompt for single-token variants, one ``engine.logprobs``
    call for the rest; a duplicate variant is -inf (counted once).
    """
    plan = id_variants(lm, ids, cue)
    out = np.full((len(prompts), len(ids), 2), -np.inf)
    single = plan[plan.single & ~plan.duplicate]
    multi = plan[~plan.single & ~plan.duplicate]
    if len(single):
        tids = [t[0] for t in single.token_ids]
        res = engine.next_token_logprobs(lm, prompts, token_ids=tids, cache=cache)
        lp = np.stack([r.selected for r in res])
        for col, idx in enumerate(single.index):
            out[:, idx // 2, idx % 2] = lp[:, col]
    if len(multi):
        variants = tuple(multi.variant)
        plan = Plan([[Entry((p,) * len(variants), variants, None) for p in prompts]], conditions=("premise",))
        scores = plan.run(lm, cache=cache, progress=False)
        for row in range(len(prompts)):
            for idx, s in zip(multi.index, plan.results(scores, row)):
                out[row, idx // 2, idx % 2] = s.total
    return out
