"""Top alternatives at every scored position: what the model preferred instead of each token.

``alternatives(lm, requests, top_k=5)`` lays out ``engine.logprobs(lm, requests, top_k=top_k)`` as a frame:
for every scored token, the ``top_k`` most likely next tokens with their log-probs (float32
log-softmax), from the same forward pass that scores the request. The engine keeps recent top-k
results in memory, so a live view that re-asks for unchanged requests (the domain condition while
the premise is edited, or requests the scorer view just ran with ``top_k``) pays nothing.

>>> alt = alternatives(lm, [("The man took a bath in the", " tub")], top_k=3)
>>> alt.columns.tolist()
['request', 'position', 'alt_rank', 'alt_id', 'alt_token', 'alt_logprob']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from ._checks import check_int
from . import engine

if TYPE_CHECKING:
    from .models import LM

COLUMNS = ["request", "position", "alt_rank", "alt_id", "alt_token", "alt_logprob"]


def alternatives(lm: LM, requests: Sequence[tuple[str, str]], *, top_k: int = 5,
                 batch_size: int | str = "auto") -> pd.DataFrame:
    """The ``top_k`` most likely tokens at every scored position of every request.

    Args:
        lm: a loaded ``LM``.
        requests: (context, continuation) pairs, as for ``engine.logprobs``.
        top_k: alternatives per position (the scored token itself appears among them when it ranks <= top_k).
        batch_size: rows per batch, or "auto" (the engine's plan: shared prefixes run once).

    Returns:
        A frame with one row per (request, position, alternative): ``request`` (index into
        ``requests``), ``position`` (index of the scored token, as in ``Scored.frame()``),
        ``alt_rank`` (1 = most likely), ``alt_id``, ``alt_token`` (decoded) and ``alt_logprob``.
    """
    check_int("top_k", top_k, 1)
    scored = engine.logprobs(lm, requests, batch_size=batch_size, progress=False, top_k=top_k)
    frames = []
    for r, s in enumerate(scored):
        n = s.n_tokens
        flat = s.top_ids.reshape(-1)
        frames.append(pd.DataFrame({
            "request": r,
            "position": np.repeat(np.arange(n), top_k),
            "alt_rank": np.tile(np.arange(1, top_k + 1), n),
            "alt_id": flat.astype(np.int64),
            "alt_token": lm.tokenizer.batch_decode(flat.reshape(-1, 1).tolist()),
            "alt_logprob": s.top_logprobs.reshape(-1).astype(np.float64),
        }))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def token_view(lm: LM, result: Any, *, top_k: int = 5) -> pd.DataFrame:
    """Per-token rows of an ``MCResult`` under the premise and the domain premise, with alternatives.

    The per-token DC-PMI contribution of an option token is log P(t | premise, t<) − log P(t | domain, t<);
    it is filled where the option is tokenized identically in both conditions (else NaN), and the
    contributions of an option sum to its ``dcpmi``.

    Args:
        lm: the ``LM`` that produced ``result``.
        result: an ``MCResult`` (see ``surfacelab.score``).
        top_k: alternatives per position.

    Returns:
        ``result.tokens`` rows of the premise and domain conditions plus ``contribution`` and
        ``alternatives`` (list of (token, log-prob) pairs, most likely first).
    """
    tokens = result.tokens
    conds = [("premise", result.premise)]
    if result.domain_premise is not None:
        conds.append(("domain", result.domain_premise))
    pairs = [(cond, ctx, opt) for cond, ctx in conds for opt in result.options]
    # rows in (request, position, rank) order
    alts = alternatives(lm, [(ctx, opt) for _, ctx, opt in pairs], top_k=top_k)
    index = {(cond, opt): i for i, (cond, _, opt) in enumerate(pairs)}
    grouped = {r: list(zip(g["alt_token"], g["alt_logprob"])) for r, g in
               alts.groupby(["request", "position"], sort=False)}
    t = tokens[tokens["condition"].isin([c for c, _ in conds])].reset_index(drop=True)
    t["alternatives"] = [grouped.get((index[(c, o)], p), []) for c, o, p in
                         zip(t["condition"], t["option"], t["position"])]
    prem = t[t["condition"] == "premise"].set_index(["option", "position"])
    contribution = pd.Series(np.nan, index=prem.index)
    if result.domain_premise is not None:
        dom = t[t["condition"] == "domain"].set_index(["option", "position"])
        for opt in result.options:
            p, d = prem.loc[opt], dom.loc[opt]
            if len(p) == len(d) and (p["token_id"].to_numpy() == d["token_id"].to_numpy()).all():
                contribution.loc[opt] = (p["logprob"] - d["logprob"]).to_numpy()
    t["contribution"] = [contribution.get((o, p), np.nan) for o, p in zip(t["option"], t["position"])]
    return t
