"""Top alternatives at every scored position: what the model preferred instead of each token.

``alternatives(lm, requests, k=5)`` encodes each (context, continuation) request exactly as the
engine does (``text.encode``), runs one forward pass per batch and returns, for every scored
token, the ``k`` most likely next tokens with their log-probs (float32 log-softmax). Identical
encodings are computed once; results stay in a small in-memory cache keyed by the model
fingerprint and the exact token ids, so a live view that re-asks for unchanged requests (the
domain condition while the premise is edited) pays nothing.

>>> alt = alternatives(lm, [("The man took a bath in the", " tub")], k=3)  # doctest: +SKIP
>>> alt.columns.tolist()                                                  # doctest: +SKIP
['request', 'position', 'alt_rank', 'alt_id', 'alt_token', 'alt_logprob']
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch

from . import engine, text

#: Entries kept in the in-memory cache (one entry = one encoding at one k).
CACHE_SIZE = 4096

_CACHE: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()

COLUMNS = ["request", "position", "alt_rank", "alt_id", "alt_token", "alt_logprob"]


def _forward(lm: Any, encs: list[text.Encoding], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Top-k ids and log-probs at the scored positions of each encoding (one batch)."""
    width = max(len(e.input_ids) for e in encs)
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    ids = torch.full((len(encs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(encs), width), dtype=torch.long)
    rows, cols = [], []
    for r, e in enumerate(encs):
        n = len(e.input_ids)
        ids[r, :n] = torch.tensor(e.input_ids)
        mask[r, :n] = 1
        rows += [r] * (n - e.start)
        cols += list(range(e.start - 1, n - 1))
    with torch.inference_mode():
        hidden = engine._last_hidden(engine._hidden(lm, ids.to(lm.device), mask.to(lm.device)))
        picked = hidden[torch.tensor(rows, device=lm.device), torch.tensor(cols, device=lm.device)]
        logp = torch.log_softmax(engine._project(lm, picked), dim=-1)
        top = logp.topk(k, dim=-1)
    top_ids, top_lp = top.indices.cpu().numpy(), top.values.cpu().numpy()
    out, i = [], 0
    for e in encs:
        n = len(e.input_ids) - e.start
        out.append((top_ids[i:i + n], top_lp[i:i + n]))
        i += n
    return out


def alternatives(lm: Any, requests: Sequence[tuple[str, str]], *, k: int = 5, batch_rows: int = 16) -> pd.DataFrame:
    """The ``k`` most likely tokens at every scored position of every request.

    Args:
        lm: a loaded ``LM``.
        requests: (context, continuation) pairs, encoded as ``engine.logprobs`` encodes them.
        k: alternatives per position (the scored token itself appears among them when it ranks <= k).
        batch_rows: requests per forward pass.

    Returns:
        A frame with one row per (request, position, alternative): ``request`` (index into
        ``requests``), ``position`` (index of the scored token, as in ``Scored.frame()``),
        ``alt_rank`` (1 = most likely), ``alt_id``, ``alt_token`` (decoded) and ``alt_logprob``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k: expected an int >= 1, got {k!r}")
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ValueError(f"batch_rows: expected an int >= 1, got {batch_rows!r}")
    reqs = engine._check_requests(requests)
    encs = [text.encode(lm, c, x) for c, x in reqs]
    keys = [(lm.fingerprint, e.key, k) for e in encs]
    todo: dict[tuple, text.Encoding] = {}
    for key, e in zip(keys, encs):
        if key not in _CACHE:
            todo.setdefault(key, e)
    pending = sorted(todo.items(), key=lambda kv: -len(kv[1].input_ids))
    for b in range(0, len(pending), batch_rows):
        chunk = pending[b:b + batch_rows]
        for (key, _), res in zip(chunk, _forward(lm, [e for _, e in chunk], k)):
            _CACHE[key] = res
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
    frames = []
    for r, key in enumerate(keys):
        _CACHE.move_to_end(key)
        ids, lps = _CACHE[key]
        n = ids.shape[0]
        flat = ids.reshape(-1)
        frames.append(pd.DataFrame({
            "request": r,
            "position": np.repeat(np.arange(n), k),
            "alt_rank": np.tile(np.arange(1, k + 1), n),
            "alt_id": flat.astype(np.int64),
            "alt_token": lm.tokenizer.batch_decode(flat.reshape(-1, 1).tolist()) if n else [],
            "alt_logprob": lps.reshape(-1).astype(np.float64),
        }))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def clear_cache() -> None:
    """Empty the in-memory cache of alternatives."""
    _CACHE.clear()


def token_view(lm: Any, result: Any, *, k: int = 5) -> pd.DataFrame:
    """Per-token rows of an ``MCResult`` under the premise and the domain premise, with alternatives.

    The per-token DC-PMI contribution of an option token is log P(t | premise, t<) − log P(t | domain, t<);
    it is filled where the option is tokenized identically in both conditions (else NaN), and the
    contributions of an option sum to its ``dcpmi``.

    Args:
        lm: the ``LM`` that produced ``result``.
        result: an ``MCResult`` (see ``surfacelab.score``).
        k: top alternatives per position.

    Returns:
        ``result.tokens`` rows of the premise and domain conditions plus ``contribution`` and
        ``alternatives`` (list of (token, log-prob) pairs, most likely first).
    """
    tokens = result.tokens
    conds = [("premise", result.premise)]
    if result.domain_premise is not None:
        conds.append(("domain", result.domain_premise))
    requests = [(ctx, opt) for _, ctx in conds for opt in result.options]
    alts = alternatives(lm, requests, k=k)
    index = {(cond, opt): i for i, (cond, opt) in enumerate((c, o) for c, _ in conds for o in result.options)}
    grouped = {r: list(zip(g["alt_token"], g["alt_logprob"])) for r, g in
               alts.sort_values(["request", "position", "alt_rank"]).groupby(["request", "position"], sort=False)}
    t = tokens[tokens["condition"].isin([c for c, _ in conds])].reset_index(drop=True).copy()
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
