"""Where the gold's probability went at the first token where the options differ (for :mod:`surfacelab.why`): the
model's top-k next tokens and the first tokens of every option's surface variants there, grouped as the gold's
listed token, tokens that start only unlisted forms of the gold, the same for the other options, tokens shared by
forms of several options, and everything else; ``first_token_numbers`` turns them into the ratios the "split mass"
verdict reads, and ``first_token_terms`` into the ``first token`` rows (and sentences) of ``WhyResult.terms``.
(A concept's mass over whole forms is :mod:`surfacelab.paraphrase`'s; this is the next-token view of it.)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from .. import engine, text
from .._format import gap, percent, signed
from ..surface_forms import variant_rules

if TYPE_CHECKING:
    from ..models import LM

_FIRST_WORD = re.compile(r"\s*\S*")


#: Kinds of competitor groups (the issue's (a) gold forms, (b) other options' forms, (c) everything else).
GROUP_KIND = {"gold": "gold", "gold form": "gold", "against": "other options", "against form": "other options",
              "other option": "other options", "other option form": "other options", "shared": "shared",
              "elsewhere": "elsewhere"}


@dataclass
class FirstTokenPlan:
    """Where to look for the gold's mass: the first token at which the options differ.

    Attributes:
        prompt: the text whose next token is that position (premise plus the shared tokens).
        shared: how many tokens every option shares before it.
        listed: each option's own token id there.
        forms: one row per surface form with a token there: ``option`` (index), ``form`` (the
            option string with the variant in place), ``rule``, ``token_id``.
        owners: token id -> the option indices whose forms start with it there.
        reason: why the analysis is not available ("" when it is).
    """

    prompt: str
    shared: int
    listed: list[int]
    forms: pd.DataFrame
    owners: dict[int, set[int]]
    reason: str = ""

    @property
    def token_ids(self) -> list[int]:
        """Every token id some form starts with, sorted."""
        return sorted(self.owners)

    def unlisted(self, option: int) -> list[int]:
        """Tokens that start only unlisted forms of ``option`` (not its listed token, no other option's)."""
        return [t for t, o in self.owners.items() if o == {option} and t != self.listed[option]]


def _common_suffix(strings: Sequence[str]) -> str:
    """The longest common suffix of punctuation and quotes (never letters, digits or spaces)."""
    out = ""
    for chars in zip(*(s[::-1] for s in strings)):
        c = chars[0]
        if any(x != c for x in chars) or c.isalnum() or c.isspace():
            break
        out = c + out
    return out


def first_token_plan(lm: LM, context: str, options: Sequence[str]) -> FirstTokenPlan:
    """Plan the "where did the gold's mass go" look-up for one item (tokenizer only, no forward).

    The position is the first token at which the options' tokens (after ``context``) differ; the
    variants of each option (``variants.variants`` of the text after the shared tokens and before a
    shared closing punctuation) are encoded after the same context, and their token there is read.
    Forms that agree up to the end of their first word and the character after it share that token
    (tokenizers pre-split at whitespace), so only one of them is encoded.
    """
    encs = [text.encode(lm, context, o) for o in options]
    empty = FirstTokenPlan("", 0, [], pd.DataFrame(columns=["option", "form", "rule", "token_id"]), {})
    if any(e.merged for e in encs):
        empty.reason = "an option's first token merges with the premise"
        return empty
    if any(e.truncated for e in encs):
        empty.reason = "the premise was cut to the model's window"
        return empty
    seqs = [e.scored_ids for e in encs]
    d = 0
    while all(len(s) > d for s in seqs) and len({s[d] for s in seqs}) == 1:
        d += 1
    if any(len(s) <= d for s in seqs):
        empty.reason = "an option's tokens are a prefix of every other option's"
        return empty
    head = encs[0].spans[d - 1][1] if d else 0
    prefix = encs[0].continuation[:head]
    prompt = encs[0].context + prefix
    if text.encode_prompt(lm, prompt) != encs[0].input_ids[:encs[0].start + d]:
        empty.reason = "the shared prefix tokenizes differently on its own"
        return empty
    conts = [e.continuation for e in encs]
    suffix = _common_suffix(conts)
    rows = []
    owners: dict[int, set[int]] = {}
    for i, (cont, seq) in enumerate(zip(conts, seqs)):
        owners.setdefault(seq[d], set()).add(i)
        core = cont[head:len(cont) - len(suffix)]
        if not core.strip():
            continue
        read: dict[str, int | None] = {}  # first word (and the character after it) -> token there
        for variant, rule in variant_rules(core):
            form = prefix + variant + suffix
            if form == cont:
                continue
            key = prefix + variant[:_FIRST_WORD.match(variant).end() + 1]
            if key not in read:
                ids = text.encode(lm, encs[0].context, form).scored_ids
                read[key] = int(ids[d]) if len(ids) > d and ids[:d] == seqs[0][:d] else None
            if read[key] is not None:
                rows.append({"option": i, "form": form, "rule": rule, "token_id": read[key]})
                owners.setdefault(read[key], set()).add(i)
    forms = pd.DataFrame(rows, columns=["option", "form", "rule", "token_id"])
    return FirstTokenPlan(prompt, d, [int(s[d]) for s in seqs], forms, owners)


FIRST_TOKEN_KEYS = ("gold_listed", "gold_unlisted", "gold_ratio", "against_listed", "against_unlisted", "against_ratio",
             "shared", "mass_gain")


def first_token_numbers(plan: FirstTokenPlan, logprob: dict[int, float], gold: int, against: int) -> dict[str, float]:
    """The mass summary of one item from the next-token log-probs of ``plan.token_ids``.

    Returns:
        ``gold_listed`` / ``against_listed`` (probability of each option's own token),
        ``gold_unlisted`` / ``against_unlisted`` (tokens that start only unlisted forms of it),
        ``gold_ratio`` / ``against_ratio`` (unlisted / listed), ``shared`` (tokens of several options'
        forms), ``mass_gain`` = log(1 + gold_ratio) − log(1 + against_ratio). NaN where unavailable.
    """
    if plan.reason:
        return dict.fromkeys(FIRST_TOKEN_KEYS, float("nan"))
    p = {t: math.exp(lp) for t, lp in logprob.items()}
    out = {}
    for side, i in (("gold", gold), ("against", against)):
        listed = p[plan.listed[i]]
        out[f"{side}_listed"] = listed
        out[f"{side}_unlisted"] = sum(p[t] for t in plan.unlisted(i))
        out[f"{side}_ratio"] = out[f"{side}_unlisted"] / listed if listed > 0 else float("inf")
    out["shared"] = sum(p[t] for t, o in plan.owners.items() if len(o) > 1)
    out["mass_gain"] = math.log1p(out["gold_ratio"]) - math.log1p(out["against_ratio"])
    return {k: float(out[k]) for k in FIRST_TOKEN_KEYS}


def _group(token: int, plan: FirstTokenPlan, gold: int, against: int) -> str:
    owners = plan.owners.get(token, set())
    if not owners:
        return "elsewhere"
    if len(owners) > 1:
        return "shared"
    (i,) = owners
    name = "gold" if i == gold else "against" if i == against else "other option"
    return name if plan.listed[i] == token else f"{name} form"


COMPETITOR_COLUMNS = ["token", "token_id", "logprob", "prob", "rank", "in_top_k", "group", "kind", "options",
                      "forms"]


def competitors_frame(lm: LM, plan: FirstTokenPlan, nt: engine.NextToken, options: Sequence[str], gold: int,
                      against: int) -> pd.DataFrame:
    """One row per token that is in the top-k or starts some option's form, most likely first.

    Columns: token, token_id, logprob, prob, rank (1.. in the top-k; 0 outside it), in_top_k,
    group (gold, gold form, against, against form, other option, other option form, shared,
    elsewhere), kind (gold / other options / shared / elsewhere), options (indices of the options
    whose forms start with it, comma-separated), forms (the listed options and the variant forms
    that start with it, " | "-separated).
    """
    lp = dict(zip(plan.token_ids, nt.selected.astype(np.float64).tolist()))
    rank = {int(t): k + 1 for k, t in enumerate(nt.top_ids)}
    lp.update({int(t): float(v) for t, v in zip(nt.top_ids, nt.top_logprobs)})
    forms: dict[int, list[str]] = {}
    for i, t in enumerate(plan.listed):
        forms.setdefault(t, []).append(f"{options[i]!r} (listed)")
    for t, f in zip(plan.forms["token_id"], plan.forms["form"]):
        forms.setdefault(int(t), []).append(repr(f))
    rows = []
    for t, v in lp.items():
        group = _group(t, plan, gold, against)
        rows.append({"token": lm.tokenizer.decode([t]), "token_id": t, "logprob": v, "prob": math.exp(v),
                     "rank": rank.get(t, 0), "in_top_k": t in rank, "group": group, "kind": GROUP_KIND[group],
                     "options": ",".join(str(i) for i in sorted(plan.owners.get(t, ()))),
                     "forms": " | ".join(forms.get(t, []))})
    frame = pd.DataFrame(rows, columns=COMPETITOR_COLUMNS)
    return frame.sort_values("logprob", ascending=False, kind="stable").reset_index(drop=True)


def first_token_terms(plan: FirstTokenPlan, mass: dict[str, float], competitors: pd.DataFrame, premise: str,
                      lm_gap: float, gold: int, against: int,
                      names: tuple[str, str]) -> list[tuple[str, float, str, str, str]]:
    """The ``first token`` rows of ``WhyResult.terms``: (term, value, unit, formula, sentence) each.

    Args:
        plan, mass: the item's ``first_token_plan`` and ``first_token_numbers``.
        competitors: its ``competitors_frame`` (the text of each token id).
        premise: the premise the plan's prompt starts with.
        lm_gap: the LM gap (gold − against) that counting every form moves.
        gold, against: the option indices compared; ``names``: how the sentences quote them.

    When the gold and the other option start with the same token there (a third option starts
    differently), both "listed" rows hold one sentence that says so, not two that read as a copy.
    """
    if plan.reason:
        return [("unavailable", float("nan"), "", "", f"Where the gold's mass went: not measured ({plan.reason}).")]
    at = (f"after the shared {plan.prompt[len(premise.rstrip()):]!r}" if plan.shared
          else "at the options' first token")
    at = at[:1].upper() + at[1:]
    token = dict(zip(competitors["token_id"], competitors["token"]))
    same = plan.listed[gold] == plan.listed[against]
    rows = []
    for side, i, name in (("gold", gold, names[0]), ("against", against, names[1])):
        listed, unlisted, ratio = (mass[f"{side}_{k}"] for k in ("listed", "unlisted", "ratio"))
        first = f"{token[plan.listed[i]]!r} (P = {percent(listed)})"
        starts = (f"{at}, {names[0]} and {names[1]} both start with the same token {first}." if same
                  else f"{at}, the gold {name} starts with {first}." if side == "gold"
                  else f"{name} starts with {first}.")
        rows += [(f"{side} listed", listed, "prob", f"P({side}'s own token)", starts),
                 (f"{side} unlisted", unlisted, "prob", f"Σ P(tokens of unlisted {side} forms only)",
                  f"Tokens that start only unlisted forms of {name} hold {percent(unlisted)} "
                  f"({gap(ratio)}× the listed token)."),
                 (f"{side} ratio", ratio, "ratio", f"{side} unlisted / {side} listed",
                  f"Unlisted forms of {name} hold {gap(ratio)}× its listed token's probability.")]
    return rows + [
        ("shared", mass["shared"], "prob", "Σ P(tokens that start forms of several options)",
         f"Tokens that start forms of several options (articles, quotes) hold {percent(mass['shared'])}."),
        ("mass gain", mass["mass_gain"], "nats", "log(1 + ratio_g) − log(1 + ratio_a)",
         f"Counting every form of each option would move the LM gap by {signed(mass['mass_gain'])} nats "
         f"(to {signed(lm_gap + mass['mass_gain'])}).")]
