"""Why did the gold option lose? A contrastive account of gold vs one other option.

``why(lm, premise, options, gold=...)`` compares the gold option with ``against`` (by default the
winner under ``scorer``, or the runner-up when the gold wins) and returns a :class:`WhyResult`:

* **The gap, decomposed** (``.terms``, group ``"gap"``). With y_g the gold, y_a the other option,
  x the premise and x_p the *prior context* (the domain premise, or the empty context — BOS/EOS —
  when there is none), all log-probs summed over the option's tokens, natural log::

      LM gap        Δ  = log P(y_g|x) − log P(y_a|x)
      prior gap     Δp = log P(y_g|x_p) − log P(y_a|x_p)
      evidence gap  Δe = DC-PMI(y_g) − DC-PMI(y_a) = Δ − Δp        (exact)
      Δp = length + prior per token                                  (exact)
         length            = (n_g − n_a) · (u_g + u_a) / 2
         prior per token   = (n_g + n_a) / 2 · (u_g − u_a)
      with n = the option's token count and u = log P(y|x_p) / n (its prior per token).

  So Δ = length + prior per token + evidence, exactly: what the extra tokens cost at the average
  prior rate, how much rarer the gold's words are per token, and how much more the premise raises
  one option than the other. The LM gap's own split into length and per-token (or per-character)
  quality, and the gap under every other scorer (Avg, per-char, per-byte, Unc, DC-PMI, PMI-null),
  are rows too.
* **Token alignment** (``.tokens``): both options' tokens with their log-probs under the premise
  and the prior context, the per-token evidence, and each token's signed part of the gaps
  (``gap_lm`` sums to Δ, ``gap_prior`` to Δp and ``gap_evidence`` to Δe where the option is
  tokenized alike in both contexts).
* **Premise attribution** (``.attribution``): every premise word (and, with ``sentences=True``,
  every sentence) is removed, and replaced by a neutral word; all occluded premises go to the
  engine in one call. ``delta_lm`` / ``delta_dcpmi`` are the change of the gold-vs-against margin
  (occluded − original): negative means the word supported the gold. The prior context does not
  contain the premise, so both deltas are equal; the two scorers differ in the margin they start
  from, so one word can flip one scorer and not the other (``gold_wins_lm`` / ``gold_wins_dcpmi``,
  over every option when ``all_options``). With ``gradient=True`` (in-process models only) rows of
  method ``"grad_x_input"`` hold a different method: −Σ gradient·embedding of the word's tokens,
  the first-order estimate of the margin's change were the word's embeddings zeroed.
* **Where the gold's mass went** (``.competitors``): at the first token where the options differ
  (after any tokens all options share, such as an opening quote or article), the model's top-k
  next tokens and the first tokens of every option's surface variants (``variants.variants``:
  case, article, number, period, leading space), grouped as the gold's listed token, tokens that
  start only unlisted forms of the gold, the same for the other options, tokens shared by forms
  of several options, and everything else. ``ratio`` = P(unlisted gold-only tokens) / P(gold's
  listed token); counting each option's unlisted forms scales it by (1 + ratio), a first-token
  approximation of concept mass, so ``mass_gain`` = log(1 + ratio_g) − log(1 + ratio_a).

The verdict label of an item follows the rules of :mod:`surfacelab.why.rules`.

>>> r = why(lm, " The man took a bath in the", [" bathtub", " sink"], gold=0,
...         domain_premise=" in the")
>>> r.verdict in LABELS, isinstance(r.explain(), str)
(True, True)
>>> r.terms[r.terms.group == "gap"].term.tolist()
['length', 'prior per token', 'premise evidence', 'LM gap']
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from .. import engine, text
from ..engine.requests import LOGPROB_COLUMNS
from .._checks import check_int, is_int
from .._format import change, gap, signed
from ..scorers import get_scorer
from ..scoring import MCResult, score
from .first_token import (COMPETITOR_COLUMNS, FIRST_TOKEN_KEYS, FirstTokenPlan, competitors_frame, first_token_numbers,
                          first_token_plan, first_token_terms)
from .occlusion import engine_cost, premise_attribution
from .result import WhyResult, quoted
from .rules import LABELS, decompose, is_option_ids, verdict, verdict_sentence

if TYPE_CHECKING:
    from ..models import LM

__all__ = ["LABELS", "NEUTRAL", "WhyResult", "from_result", "why"]

#: Default neutral word for occlusion by replacement.
NEUTRAL = "something"


# ----------------------------------------------------------------------------- frames
def _tokens_frame(result: MCResult, gold: int, against: int, prior_cond: str) -> pd.DataFrame:
    t = result.tokens
    frames = []
    for side, i, sign in (("gold", gold, 1.0), ("against", against, -1.0)):
        opt = result.options[i]
        p = t[(t["option"] == opt) & (t["condition"] == "premise")].reset_index(drop=True)
        d = t[(t["option"] == opt) & (t["condition"] == prior_cond)].reset_index(drop=True)
        aligned = len(p) == len(d) and bool((p["token_id"].to_numpy() == d["token_id"].to_numpy()).all())
        prior_lp = d["logprob"].to_numpy(dtype=float) if aligned else np.full(len(p), np.nan)
        f = pd.DataFrame({
            "side": side, "option_index": i, "option": opt, "position": p["position"].to_numpy(),
            "token": p["token"], "token_id": p["token_id"].to_numpy(), "char_start": p["char_start"].to_numpy(),
            "char_end": p["char_end"].to_numpy(), "logprob": p["logprob"].to_numpy(dtype=float),
            "rank": p["rank"].to_numpy(), "prior_logprob": prior_lp,
            "prior_rank": d["rank"].to_numpy() if aligned else np.zeros(len(p), dtype=np.int64),
            "evidence": p["logprob"].to_numpy(dtype=float) - prior_lp, "aligned": aligned})
        f["gap_lm"] = sign * f["logprob"]
        f["gap_prior"] = sign * f["prior_logprob"]
        f["gap_evidence"] = sign * f["evidence"]
        frames.append(f)
    out = pd.concat(frames, ignore_index=True)
    ids = [tuple(out.loc[out["side"] == side, "token_id"]) for side in ("gold", "against")]
    common = next((k for k, (x, y) in enumerate(zip(*ids)) if x != y), min(map(len, ids)))
    out["shared"] = out["position"] < common  # a token prefix both options share: its parts cancel
    for col, rank in (("gap_lm", "rank_cost"), ("gap_evidence", "rank_evidence")):
        ranked = out.loc[~out["shared"], col].rank(method="first", na_option="bottom")
        out[rank] = ranked.reindex(out.index).fillna(0).astype(np.int64)
    return out


def _gap_word(x: float) -> str:
    return "leads" if x > 0 else "trails" if x < 0 else "ties"


def _terms_frame(result: MCResult, gold: int, against: int, d: dict[str, float], prior_cond: str, prior_desc: str,
                 mass: list[tuple[str, float, str, str, str]], label: str, label_detail: str) -> pd.DataFrame:
    # ~50 lines kept whole: one row per term in display order, each with its sentence; split, the order would scatter
    t = result.table
    g, a = t.iloc[gold], t.iloc[against]
    og, oa = quoted(result.options[gold]), quoted(result.options[against])
    pcol = LOGPROB_COLUMNS[prior_cond]
    ng, na = int(g["n_tokens"]), int(a["n_tokens"])
    rows = []

    def add(group: str, term: str, value: float, unit: str, formula: str, sentence: str) -> None:
        rows.append({"group": group, "term": term, "value": float(value) + 0.0, "unit": unit, "formula": formula,
                     "sentence": sentence})

    add("gap", "length", d["length"], "nats", "(n_g − n_a)·(u_g + u_a)/2",
        f"Length: {og} has {ng} token{'s' * (ng != 1)} against {na}; at the prior's mean rate of "
        f"{d['rate']:.2f} nats per token that is worth {signed(d['length'])} nats to the gold.")
    add("gap", "prior per token", d["prior_per_token"], "nats", "(n_g + n_a)/2·(u_g − u_a)",
        f"Prior per token: {prior_desc} gives {og} {g[pcol] / ng:.2f} and {oa} {a[pcol] / na:.2f} nats per token, "
        f"worth {signed(d['prior_per_token'])} nats to the gold.")
    add("gap", "premise evidence", d["evidence"], "nats", "DC-PMI(g) − DC-PMI(a)",
        f"Premise evidence: over {prior_desc}, the premise {change(g['logprob'] - g[pcol], og)} and "
        f"{change(a['logprob'] - a[pcol], oa)}: {signed(d['evidence'])} nats to the gold.")
    add("gap", "LM gap", d["lm"], "nats", "log P(g|x) − log P(a|x)",
        f"Under LM {og} {_gap_word(d['lm'])} {oa} by {gap(abs(d['lm']))} nats "
        f"({g['logprob']:.2f} against {a['logprob']:.2f}).")
    add("prior", "prior gap", d["prior"], "nats", "log P(g|x_p) − log P(a|x_p) = length + prior per token",
        f"Under {prior_desc} alone {og} {_gap_word(d['prior'])} {oa} by {gap(abs(d['prior']))} nats.")
    # the LM gap split by length at LM level, per token and per character
    for unit, col, ncol in (("token", "avg_token", "n_tokens"), ("char", "per_char", "n_chars")):
        rate = (g[col] + a[col]) / 2
        length = (g[ncol] - a[ncol]) * rate
        add("length", f"LM length ({unit}s)", length, "nats", f"(n_g − n_a)·mean LM per {unit}",
            f"At LM's mean of {rate:.3f} nats per {unit}, the {int(g[ncol] - a[ncol]):+d} {unit}s of {og} are worth "
            f"{signed(length)} nats to the gold.")
        add("length", f"LM per {unit}", d["lm"] - length, "nats", f"mean length·(LM per {unit} gap)",
            f"Per {unit} {og} {_gap_word(g[col] - a[col])} {oa} by {abs(g[col] - a[col]):.3f} nats/{unit}, worth "
            f"{signed(d['lm'] - length)} nats to the gold over the mean length.")
    for name, unit in (("lm", "nats"), ("avg", "nats/token"), ("per_char", "nats/char"), ("per_byte", "nats/byte"),
                       ("unc", "nats"), ("dcpmi", "nats"), ("pmi_null", "nats")):
        s = get_scorer(name)
        if not np.isfinite(t[s.column]).all():
            continue
        diff = g[s.column] - a[s.column]
        top = int(np.argmax(t[s.column].to_numpy()))  # the first best option, as MCResult.winner
        add("scorer", name, diff, unit, s.formula,
            f"{s.label}: {og} {_gap_word(diff)} {oa} by {abs(diff):.3g} {unit}; "
            + ("the gold wins." if top == gold else f"the top option is {quoted(result.options[top])}."))
    for row in mass:
        add("first token", *row)
    add("verdict", label, 0.0 if label in ("right", "tie") else float("nan"), "", "", label_detail)
    return pd.DataFrame(rows, columns=["group", "term", "value", "unit", "formula", "sentence"])


# ----------------------------------------------------------------------------- result
def _index(value: Any, options: list[str], name: str) -> int:
    if isinstance(value, str):
        if value not in options:
            raise ValueError(f"{name}: {value!r} is not one of the options {options}")
        return options.index(value)
    if not is_int(value) or not 0 <= value < len(options):
        raise ValueError(f"{name}: expected an option index in [0, {len(options)}) or an option string, got {value!r}")
    return int(value)


def _where_mass_went(lm: LM, plan: FirstTokenPlan, options: list[str], gold: int, against: int, top_k: int,
                     batch_size: int | str, cache: bool, cost: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, float]]:
    """The competitors frame and the mass numbers from one prompt's next-token distribution (top-k and every
    form's first token); empty / NaN when ``plan`` says why it could not be measured. Adds ``cost["next_token"]``."""
    if plan.reason:
        return (pd.DataFrame({c: pd.Series(dtype=object) for c in COMPETITOR_COLUMNS}),
                dict.fromkeys(FIRST_TOKEN_KEYS, float("nan")))
    t0 = time.perf_counter()
    # with top_k the engine keeps it in memory: a second account of the question (the rest after a first part)
    # reuses it
    nts = engine.next_token_logprobs(lm, [plan.prompt], token_ids=plan.token_ids, top_k=top_k, batch_size=batch_size,
                                     cache=cache)
    cost["next_token"] = engine_cost(t0, nts.stats)
    selected = dict(zip(plan.token_ids, nts[0].selected.astype(np.float64).tolist()))
    return (competitors_frame(lm, plan, nts[0], options, gold, against),
            first_token_numbers(plan, selected, gold, against))


def from_result(
    lm: LM,
    result: MCResult,
    *,
    gold: int | str | None = None,
    against: int | str | None = None,
    scorer: str = "lm",
    neutral: str = NEUTRAL,
    sentences: bool = False,
    all_options: bool = True,
    gradient: bool = False,
    top_k: int = 20,
    batch_size: int | str = "auto",
    cache: bool = True,
    occlusion: bool = True,
) -> WhyResult:
    """``why`` on an existing ``MCResult`` (its scores are reused; see ``why`` for the arguments)."""
    if not isinstance(result, MCResult):
        raise TypeError(f"result: expected an MCResult, got {type(result).__name__}")
    options = result.options
    if len(options) < 2:
        raise ValueError("options: need at least two options to compare")
    gold = result.gold if gold is None else gold
    if gold is None:
        raise ValueError("gold: the result has no gold option; pass gold=")
    gold = _index(gold, options, "gold")
    scores = result.finite_scores(scorer).to_numpy(dtype=float)
    check_int("top_k", top_k, 1)
    text.check_text(neutral, "neutral", allow_empty=False)
    if not neutral.strip():
        raise ValueError("neutral: must contain more than whitespace")
    ranked = [int(i) for i in np.argsort(-scores, kind="stable")]
    gold_won = ranked[0] == gold
    if against is None:
        against = next(i for i in ranked if i != gold)
    else:
        against = _index(against, options, "against")
        if against == gold:
            raise ValueError("against: must be another option than the gold")
    prior_cond = "domain" if result.domain_premise is not None else "null"
    prior_desc = (f"the domain premise {result.domain_premise!r}" if prior_cond == "domain"
                  else "the empty context")
    prior = result.table[LOGPROB_COLUMNS[prior_cond]].to_numpy(dtype=float)
    cost: dict[str, Any] = {}
    plan = first_token_plan(lm, result.premise, options)
    competitors, mass = _where_mass_went(lm, plan, options, gold, against, top_k, batch_size, cache, cost)
    attribution = premise_attribution(lm, result, gold, against, prior, neutral=neutral, sentences=sentences,
                               all_options=all_options, gradient=gradient, batch_size=batch_size, cache=cache,
                               cost=cost, occlusion=occlusion)
    t = result.table
    lm_scores = t["logprob"].to_numpy(dtype=float)
    d = decompose(lm_scores[gold], lm_scores[against], prior[gold], prior[against], int(t["n_tokens"].iloc[gold]),
                  int(t["n_tokens"].iloc[against]))
    lm_winner = int(np.argmax(lm_scores))  # the first best option, as MCResult.winner
    label = verdict(d["lm"], d["length"], d["prior_per_token"], d["evidence"], gold_wins=lm_winner == gold,
                    mass_ratio=mass["gold_ratio"], mass_gain=mass["mass_gain"], letters=is_option_ids(options))
    detail = verdict_sentence(label, d, quoted(options[gold]), quoted(options[against]), mass,
                             quoted(options[lm_winner]))
    mass_rows = first_token_terms(plan, mass, competitors, result.premise, d["lm"], gold, against,
                                  (quoted(options[gold]), quoted(options[against])))
    terms = _terms_frame(result, gold, against, d, prior_cond, prior_desc, mass_rows, label, detail)
    meta = {"prior": prior_cond, "prior_context": result.domain_premise if prior_cond == "domain" else "",
            "neutral": neutral, "top_k": top_k, "all_options": all_options, "occlusion": occlusion,
            "gold_lost": not gold_won, "winner": ranked[0],
            "gold_wins_lm": lm_winner == gold,
            "first_token_prompt": plan.prompt, "first_token_shared": plan.shared,
            "first_token_unavailable": plan.reason,
            "cost": cost, "forwarded_tokens": int(sum(c.get("tokens_forwarded", 0) for c in cost.values())),
            "methods": {"remove": "occlusion: the unit and one adjacent whitespace run deleted",
                        "replace": f"occlusion: the unit replaced by {neutral!r}",
                        "grad_x_input": "gradient × input (a different method: first-order, in-process only)"}}
    return WhyResult(result.premise, list(options), result.domain_premise, result.model, gold, against, scorer,
                     t.copy(), terms, _tokens_frame(result, gold, against, prior_cond), attribution, competitors,
                     label, meta)


def why(
    lm: LM,
    premise: str | MCResult,
    options: Sequence[str] | None = None,
    *,
    gold: int | str | None = None,
    domain_premise: str | None = None,
    against: int | str | None = None,
    scorer: str = "lm",
    neutral: str = NEUTRAL,
    sentences: bool = False,
    all_options: bool = True,
    gradient: bool = False,
    top_k: int = 20,
    batch_size: int | str = "auto",
    cache: bool = True,
    occlusion: bool = True,
) -> WhyResult:
    """Why the gold option lost (or won): gap decomposition, tokens, premise attribution, competitors.

    Three engine calls: the item's scores (``score``; cached on disk), the next-token distribution at
    the first token where the options differ (one prompt), and every occluded premise with the
    options (one call; the occluded premises share prefixes, so the engine's plan forwards them
    once). Their counters and seconds are in ``meta["cost"]``.

    Args:
        lm: a loaded ``LM``.
        premise, options, domain_premise: as in ``score``; without a domain premise the empty
            context (BOS/EOS) is the prior context. ``premise`` may instead be an ``MCResult`` (of ``score``),
            whose scores are reused: then no ``options`` or ``domain_premise``.
        gold: the correct option (index or string); for an ``MCResult``, default its own gold.
        against: the option to compare with; default: the winner under ``scorer``, or its
            runner-up when the gold wins.
        scorer: the scorer that picks ``against`` (the decomposition is always of the LM gap).
        neutral: the word that replaces an occluded unit.
        sentences: also occlude each sentence of the premise.
        all_options: score every option under each occluded premise (winner columns), not only the pair.
        gradient: add gradient × input rows (in-process models only; a different method).
        top_k: next tokens listed in ``.competitors``.
        batch_size, cache: as in ``engine.logprobs``.
        occlusion: occlude the premise (the attribution); False: a quick account without it (the
            attribution frame empty, no gradient rows; every other frame as with it).

    Returns:
        A :class:`WhyResult`.

    Example:
        >>> r = why(lm, " The man took a bath in the", [" bathtub", " sink"], gold=0)
        >>> parts = r.term("length") + r.term("prior per token") + r.term("premise evidence")
        >>> r.verdict in LABELS, abs(r.term("LM gap") - parts) < 1e-6  # the gap splits exactly into its terms
        (True, True)
    """
    settings = dict(against=against, scorer=scorer, neutral=neutral, sentences=sentences, all_options=all_options,
                    gradient=gradient, top_k=top_k, batch_size=batch_size, cache=cache, occlusion=occlusion)
    if isinstance(premise, MCResult):
        for name, value in (("options", options), ("domain_premise", domain_premise)):
            if value is not None:
                raise ValueError(f"{name}: not with a scored MCResult (it holds its own); pass the result alone")
        return from_result(lm, premise, gold=gold, **settings)
    if options is None:
        raise ValueError("options: the options to compare are needed (or pass an MCResult as premise)")
    if gold is None:
        raise ValueError("gold: the correct option is needed (an index or the option's text)")
    opts = list(options) if not isinstance(options, str) else options
    t0 = time.perf_counter()
    result = score(lm, premise, opts, domain_premise=domain_premise, batch_size=batch_size, cache=cache)
    cost = engine_cost(t0, result.meta["engine"])
    out = from_result(lm, result, gold=_index(gold, result.options, "gold"), **settings)
    out.meta["cost"] = {"score": cost, **out.meta["cost"]}
    out.meta["forwarded_tokens"] += int(cost["tokens_forwarded"])
    return out
