"""``WhyResult``: the account of why the gold option lost (or won) against one other option, as frames, with its
verdict, ``explain()`` in plain words and ``show()`` (``viz.why_figure``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .._format import gap, percent
from .._results import JSONResult
from ..scorers import get_scorer


def quoted(option: str) -> str:
    return repr(option.strip() if option.strip() else option)


@dataclass
class WhyResult(JSONResult):
    """A contrastive account of why ``options[gold]`` lost to (or beat) ``options[against]``.

    Attributes:
        premise, options, domain_premise, model: the item and the model's name.
        gold, against: option indices compared; ``scorer``: the scorer that chose ``against``.
        table: ``MCResult.table`` (one row per option, every scorer's column and rank).
        terms: one row per number with its sentence (group, term, value, unit, formula, sentence):
            group ``gap`` (length, prior per token, premise evidence, LM gap: the first three sum
            to the last), ``prior``, ``length`` (the LM gap split by tokens and by characters),
            ``scorer`` (gold − against under every scorer), ``first token`` (where the gold's probability went
            at the first token where the options differ) and ``verdict``.
        tokens: both options' tokens (see ``_tokens_frame``: logprob, prior_logprob, evidence,
            gap_lm / gap_prior / gap_evidence, shared (a token prefix both options share, whose
            parts cancel), rank_cost and rank_evidence (1 = the token that costs the gold most,
            among the tokens not shared; 0 for shared ones)).
        attribution: one row per (premise unit, method): unit ("word"/"sentence"), index, text,
            start/end (character span in the premise), method ("remove", "replace",
            "grad_x_input"), occluded (the premise scored), lm_margin / dcpmi_margin (gold − against
            after occlusion), delta_lm / delta_dcpmi (their change; < 0: the unit supported the gold),
            lm_winner / dcpmi_winner (option index after occlusion), gold_wins_lm / gold_wins_dcpmi.
            ``grad_x_input`` rows fill only delta_* (margins NaN, winners −1, gold_wins False).
        competitors: see ``competitors_frame``.
        verdict: the label (``LABELS``).
        meta: prior context, neutral word, top_k, where the mass was read, costs of each engine call.
    """

    premise: str
    options: list[str]
    domain_premise: str | None
    model: str
    gold: int
    against: int
    scorer: str
    table: pd.DataFrame
    terms: pd.DataFrame
    tokens: pd.DataFrame
    attribution: pd.DataFrame
    competitors: pd.DataFrame
    verdict: str
    meta: dict = field(default_factory=dict)

    def term(self, name: str, group: str | None = None) -> float:
        """The value of one row of ``.terms`` (by term name, optionally within ``group``)."""
        rows = self.terms[(self.terms["term"] == name) & ((self.terms["group"] == group) if group else True)]
        if rows.empty:
            raise ValueError(f"name: no term {name!r}; known: {sorted(set(self.terms['term']))}")
        return float(rows["value"].iloc[0])

    def explain(self) -> str:
        """Plain words: the gap and its parts, the costly tokens, the premise words, the mass, the verdict."""
        t = self.terms
        og, oa = quoted(self.options[self.gold]), quoted(self.options[self.against])
        lines = []
        lm_gap = self.term("LM gap", "gap")
        under = get_scorer(self.scorer).label
        winner = self.meta.get("winner", self.against if lm_gap < 0 else self.gold)
        if not self.meta.get("gold_lost", lm_gap < 0):
            lead = f"The gold {og} wins under {under}; compared here with {oa}"
        elif winner == self.against:
            lead = f"The gold {og} loses to {oa} under {under}"
        else:
            lead = f"The gold {og} loses to {quoted(self.options[winner])} under {under}; compared here with {oa}"
        lines.append(f"{lead}. " + t[(t.group == "gap") & (t.term == "LM gap")]["sentence"].iloc[0])
        lines.append("That gap is length + prior per token + premise evidence: "
                     + " ".join(t[(t.group == "gap") & (t.term != "LM gap")]["sentence"]))
        norm = t[(t.group == "scorer") & t.term.isin(["avg", "per_char", "per_byte", "dcpmi"])]
        lines.append("Other scorers: " + " ".join(norm["sentence"]))
        tok = self.tokens[(self.tokens["rank_cost"] > 0) & (self.tokens["side"] == "gold")]
        tok = tok.sort_values("rank_cost").head(3)
        lines.append("Costliest tokens for the gold: " + ", ".join(
            f"{r.token!r} in {quoted(r.option)} ({gap(-r.gap_lm)} nats)" for r in tok.itertuples()) + ".")
        ev = self.tokens[(self.tokens["rank_evidence"] > 0) & (self.tokens["gap_evidence"] < 0)]
        ev = ev.sort_values("rank_evidence").head(2)
        if len(ev):
            lines.append("Tokens where the premise works against the gold most: " + ", ".join(
                f"{r.token!r} in {quoted(r.option)} ({gap(-r.gap_evidence)} nats)" for r in ev.itertuples()) + ".")
        occ = self.attribution[self.attribution["method"] == "remove"]
        if len(occ):
            pro = occ[occ["delta_lm"] < 0].nsmallest(3, "delta_lm")
            con = occ[occ["delta_lm"] > 0].nlargest(2, "delta_lm")
            # a word's support for the gold is −delta_lm (as the premise map draws it): said by side, unsigned
            sides = (("that support the gold most", f"lowers the gold's LM margin over {oa}", pro),
                     (f"that work against the gold, for {oa}", "raises the gold's margin", con))
            words = [f"{side} (removing one {verb} by): "
                     + ", ".join(f"{r.text!r} {gap(abs(r.delta_lm))}" for r in part.itertuples())
                     for side, verb, part in sides if len(part)]
            if words:
                lines.append("Premise words " + "; ".join(words) + ".")
            # as the attribution frame: the gold against every option, or against the compared one alone
            rival, won = (("every other option", self.meta.get("gold_wins_lm", lm_gap > 0))
                          if self.meta.get("all_options", True) else (oa, lm_gap > 0))
            flips = occ[occ["gold_wins_lm"] != won]
            if len(flips):
                lines.append(f"Removing {', '.join(repr(x) for x in flips['text'])} would make the gold "
                             f"{'lose to' if won else 'beat'} {rival} under LM.")
        mass = t[t.group == "first token"].set_index("term")
        # dict.fromkeys: a sentence both options' rows hold (one token starts both) is said once
        lines += dict.fromkeys(mass.loc[k, "sentence"] for k in ("unavailable", "gold listed", "gold unlisted",
                                                                  "against listed", "against unlisted", "mass gain")
                               if k in mass.index)
        if len(self.competitors):
            top = self.competitors.iloc[0]
            lines.append(f"The model's top token there is {top['token']!r} "
                         f"(P = {percent(top['prob'])}, {top['group']}).")
        lines += list(t[t.group == "verdict"]["sentence"])
        return "\n".join(lines)

    def show(self, view: str | None = None) -> Any:
        """The figures of this result (``surfacelab.viz.why``): all four as a dict, or one by name
        ("gap", "tokens", "attribution", "competitors")."""
        from .. import viz

        figs = viz.why_figures(self)
        if view is None:
            return figs
        if view not in figs:
            raise ValueError(f"view: expected one of {list(figs)}, got {view!r}")
        return figs[view]

    def _repr_html_(self) -> str:
        t = self.terms[self.terms["group"].isin(["gap", "verdict"])][["term", "value", "sentence"]]
        return t.to_html(index=False, float_format=lambda v: f"{v:+.3f}")


# ----------------------------------------------------------------------------- entry points
