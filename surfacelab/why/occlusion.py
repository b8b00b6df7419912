"""Premise attribution (for :mod:`surfacelab.why`): every premise word (and sentence) removed or replaced by a
neutral word, all occluded premises scored in one engine call, and the change of the gold-vs-against margin under
LM and DC-PMI; optionally gradient x input (in-process models only).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import engine, text
from ..engine.requests import Entry, Plan
from ..scoring import MCResult

if TYPE_CHECKING:
    from ..models import LM

#: What one occluded unit is: a word (letters/digits, inner apostrophes, hyphens and points kept).
WORD = re.compile(r"[^\W_]+(?:['’\-.][^\W_]+)*")
#: A sentence: up to a terminal . ! or ? followed by whitespace, a newline, or the end.
SENTENCE = re.compile(r"\S[^\n]*?(?:[.!?](?=\s|$)|(?=\n)|$)")


def premise_units(premise: str, *, sentences: bool = False) -> pd.DataFrame:
    """The premise's words (and sentences) with their character spans: unit, index, text, start, end."""
    rows = [{"unit": "word", "index": k, "text": m.group(), "start": m.start(), "end": m.end()}
            for k, m in enumerate(WORD.finditer(premise))]
    if sentences:
        rows += [{"unit": "sentence", "index": k, "text": m.group(), "start": m.start(), "end": m.end()}
                 for k, m in enumerate(SENTENCE.finditer(premise))]
    return pd.DataFrame(rows, columns=["unit", "index", "text", "start", "end"])


def occlude(premise: str, start: int, end: int, replacement: str | None = None) -> str:
    """The premise with ``premise[start:end]`` replaced, or removed with one adjacent run of whitespace.

    Removal takes the whitespace after the unit, or before it when punctuation or the end follows
    ("the door." without "door" is "the.").
    """
    if replacement is not None:
        return premise[:start] + replacement + premise[end:]
    after = len(premise[end:]) - len(premise[end:].lstrip())
    if after and end + after < len(premise):
        return premise[:start] + premise[end + after:]
    before = len(premise[:start]) - len(premise[:start].rstrip())
    return premise[:start - before] + premise[end + after:]


def _grad_x_input(lm: LM, premise: str, gold: str, against: str, units: pd.DataFrame) -> np.ndarray:
    """Per unit: −Σ (∂margin/∂embedding · embedding) over the premise tokens inside the unit."""
    import torch

    model = getattr(lm, "model", None)
    if not isinstance(model, torch.nn.Module):
        raise ValueError("gradient: gradient × input needs an in-process model (this LM has no torch module)")
    per_token = []
    for option, sign in ((gold, 1.0), (against, -1.0)):
        e = text.encode(lm, premise, option)
        ids = torch.tensor([e.input_ids], device=lm.device)
        emb = model.get_input_embeddings()(ids).detach().requires_grad_(True)
        with torch.enable_grad():
            logits = model(inputs_embeds=emb, use_cache=False).logits[0, e.start - 1:-1].float()
            lp = torch.log_softmax(logits, -1).gather(1, ids[0, e.start:, None]).sum()
            (grad,) = torch.autograd.grad(lp, emb)
        per_token.append((sign * (grad * emb).sum(-1)[0].detach().float().cpu().numpy(), e))
    (a_g, e_g), (a_a, e_a) = per_token
    n = min(e_g.start, e_a.start)  # context positions the two sequences share
    while n and e_g.input_ids[:n] != e_a.input_ids[:n]:
        n -= 1
    # character spans of the context tokens: text.encode's joint tokenization, offsets included
    full = lm.tokenizer(e_g.context + e_g.continuation, add_special_tokens=False, return_offsets_mapping=True)
    first = len(full["input_ids"]) - len(e_g.scored_ids)
    head = e_g.start - (first - e_g.truncated)  # BOS / prefix tokens before the kept context
    starts, ends = units["start"].to_numpy(), units["end"].to_numpy()
    out = np.zeros(len(units))
    for pos in range(head, n):
        s, t = full["offset_mapping"][pos - head + e_g.truncated]
        out[(starts < t) & (ends > s)] += a_g[pos] + a_a[pos]
    return -out


def premise_attribution(lm: LM, result: MCResult, gold: int, against: int, prior: np.ndarray, *, neutral: str,
                 sentences: bool, all_options: bool, gradient: bool, batch_size: int | str, cache: bool,
                 cost: dict, occlusion: bool = True) -> pd.DataFrame:
    premise, options = result.premise, result.options
    units = premise_units(premise, sentences=sentences)
    if not occlusion:  # a quick account: no premise unit is occluded (or differentiated)
        units = units.iloc[:0]
    modes = [("remove", None), ("replace", neutral)]
    scored_opts = list(range(len(options))) if all_options else [gold, against]
    occluded = [(u.Index, mode, occlude(premise, u.start, u.end, rep)) for u in units.itertuples()
                for mode, rep in modes]
    # one plan item per occluded premise, its options the scored ones (``scored_opts`` order)
    plan = Plan([[Entry((p,) * len(scored_opts), tuple(options[i] for i in scored_opts)) for *_, p in occluded]],
                ["premise"])
    scores: dict = {}
    if len(plan):
        t0 = time.perf_counter()
        scores = plan.run(lm, batch_size=batch_size, progress=False, cache=cache)
        cost["occlusion"] = engine_cost(t0, scores.stats)
    base = result.table["logprob"].to_numpy(dtype=float)
    lm_margin0 = base[gold] - base[against]
    cols = ["unit", "index", "text", "start", "end", "method", "occluded", "lm_margin", "dcpmi_margin", "delta_lm",
            "delta_dcpmi", "lm_winner", "dcpmi_winner", "gold_wins_lm", "gold_wins_dcpmi"]
    rows = []
    for j, (u, mode, p) in enumerate(occluded):
        lp = np.full(len(options), -np.inf)
        for i, s in zip(scored_opts, plan.results(scores, j)):
            lp[i] = s.total
        pmi = lp - prior
        lm_margin, pmi_margin = lp[gold] - lp[against], pmi[gold] - pmi[against]
        unit = units.loc[u]
        rows.append({"unit": unit["unit"], "index": int(unit["index"]), "text": unit["text"],
                     "start": int(unit["start"]), "end": int(unit["end"]), "method": mode, "occluded": p,
                     "lm_margin": lm_margin, "dcpmi_margin": pmi_margin, "delta_lm": lm_margin - lm_margin0,
                     "delta_dcpmi": pmi_margin - (lm_margin0 - (prior[gold] - prior[against])),
                     "lm_winner": int(np.argmax(lp)), "dcpmi_winner": int(np.argmax(pmi)),
                     "gold_wins_lm": bool(np.argmax(lp) == gold), "gold_wins_dcpmi": bool(np.argmax(pmi) == gold)})
    if gradient and len(units):
        t0 = time.perf_counter()
        g = _grad_x_input(lm, premise, options[gold], options[against], units)
        cost["gradient"] = {"seconds": time.perf_counter() - t0, "forwards": 2, "backwards": 2}
        for u, val in zip(units.itertuples(), g):
            rows.append({"unit": u.unit, "index": int(u.index), "text": u.text, "start": int(u.start),
                         "end": int(u.end), "method": "grad_x_input", "occluded": "", "lm_margin": np.nan,
                         "dcpmi_margin": np.nan, "delta_lm": float(val), "delta_dcpmi": float(val),
                         "lm_winner": -1, "dcpmi_winner": -1, "gold_wins_lm": False, "gold_wins_dcpmi": False})
    return pd.DataFrame(rows, columns=cols)


def engine_cost(t0: float, s: engine.EngineStats) -> dict[str, float]:
    """Counters of an engine call (its ``Results.stats``) and the seconds since ``t0``."""
    return {"seconds": time.perf_counter() - t0, "requests": s.requests, "unique": s.unique, "cached": s.cached,
            "tokens_forwarded": s.tokens_forwarded, "tokens_needed": s.tokens_needed,
            "tokens_unique": s.tokens_unique, "batches": s.batches}
