"""The verdict rules: which term of an item's LM gap explains why the gold lost.

Verdict labels (``verdict()``; the first rule that holds). Let Δ < 0 (gold loses under LM) and take
the negative parts of the three gap terms; each term's *share* is its negative part over their sum:

1. ``"right"``: the gold is the LM winner (the first option on a tie); ``"ahead"``: it is not, but it
   leads the option it is compared with (an ``against`` other than the LM winner); ``"tie"``: it ties
   the other option exactly and loses the tie-break.
2. ``"premise evidence"``: the evidence term holds ≥ ``EVIDENCE_SHARE`` (0.5) of the loss: the
   premise itself raises the other option more (DC-PMI does not rescue the gold against it).
3. ``"split mass"``: ``ratio_g`` ≥ ``MASS_RATIO`` (0.5: unlisted forms of the gold hold at least
   half its listed token's probability) and Δ + mass_gain ≥ 0 (counting every option's forms
   would flip the pair).
4. ``"length"``: the length term holds ≥ ``LENGTH_SHARE`` (0.5) of the loss.
5. ``"prior"``: the prior-per-token term holds ≥ ``PRIOR_SHARE`` (0.5) of the loss; ``"letter
   bias"`` instead when every option is an option ID (" A", "(B)", "3").
6. ``"mixed"``: no term holds half; ``"lost"``: no prior context was scored (evaluate only).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from .._format import gap, signed

#: Verdict labels, in the order of the rules (see the module docstring).
LABELS = ("right", "ahead", "tie", "premise evidence", "split mass", "length", "prior", "letter bias", "mixed", "lost")
#: Share of the loss the evidence term must hold for "premise evidence".
EVIDENCE_SHARE = 0.5
#: Share of the loss the length term must hold for "length".
LENGTH_SHARE = 0.5
#: Share of the loss the prior-per-token term must hold for "prior" / "letter bias".
PRIOR_SHARE = 0.5
#: Smallest P(unlisted gold forms) / P(listed gold token) at the first distinguishing token for "split mass".
MASS_RATIO = 0.5
_OPTION_ID = re.compile(r"\(?[A-Za-z0-9]\)?[.:]?")


def decompose(lp_gold: float, lp_against: float, prior_gold: float, prior_against: float,
              n_gold: int, n_against: int) -> dict[str, float]:
    """The exact decomposition of the LM gap (see :mod:`surfacelab.why`).

    Args:
        lp_gold, lp_against: Σ log P(y|x) of the two options.
        prior_gold, prior_against: Σ log P(y|x_p) under the prior context (NaN if none).
        n_gold, n_against: token counts of the options.

    Returns:
        ``lm``, ``prior``, ``evidence`` (= lm − prior), ``length`` and ``prior_per_token``
        (length + prior_per_token = prior), ``rate`` (the mean prior per token).
    """
    lm = lp_gold - lp_against
    prior = prior_gold - prior_against
    ug, ua = prior_gold / n_gold, prior_against / n_against
    return {"lm": lm, "prior": prior, "evidence": lm - prior, "length": (n_gold - n_against) * (ug + ua) / 2,
            "prior_per_token": (n_gold + n_against) / 2 * (ug - ua), "rate": (ug + ua) / 2}


def is_option_ids(options: Sequence[str]) -> bool:
    """True when every option is an option ID such as " A", "(B)" or "3." (letter bias replaces prior)."""
    return all(_OPTION_ID.fullmatch(o.strip()) for o in options)


def shares(length: Any, prior_per_token: Any, evidence: Any) -> dict[str, Any]:
    """Each term's share of the loss: its negative part over the sum of the negative parts (0 if none). Numbers or
    arrays of them (one share per element)."""
    terms = {"premise evidence": evidence, "length": length, "prior": prior_per_token}
    neg = sum(np.minimum(v, 0.0) for v in terms.values())
    with np.errstate(divide="ignore", invalid="ignore"):
        return {k: np.where(neg < 0, np.minimum(v, 0.0) / neg, 0.0)[()] for k, v in terms.items()}


def verdicts(lm_gap: np.ndarray, length: np.ndarray, prior_per_token: np.ndarray, evidence: np.ndarray, *,
             gold_wins: np.ndarray, mass_ratio: np.ndarray, mass_gain: np.ndarray, letters: np.ndarray) -> np.ndarray:
    """The verdict label of every item from arrays of its numbers (one element per item; arguments as in
    ``verdict``): an object array of labels."""
    lm_gap = np.asarray(lm_gap, dtype=float)
    share = shares(length, prior_per_token, evidence)
    lost = ~(np.isfinite(length) & np.isfinite(prior_per_token) & np.isfinite(evidence))
    prior = share["prior"] >= PRIOR_SHARE
    rules = [(gold_wins, "right"), (lm_gap > 0, "ahead"), (lm_gap == 0, "tie"), (lost, "lost"),
             (share["premise evidence"] >= EVIDENCE_SHARE, "premise evidence"),
             ((mass_ratio >= MASS_RATIO) & (lm_gap + mass_gain >= 0), "split mass"),
             (share["length"] >= LENGTH_SHARE, "length"), (prior & letters, "letter bias"), (prior, "prior")]
    return np.select([np.asarray(c, dtype=bool) for c, _ in rules], [label for _, label in rules],
                     "mixed").astype(object)


def verdict(lm_gap: float, length: float, prior_per_token: float, evidence: float, *, gold_wins: bool,
            mass_ratio: float = float("nan"), mass_gain: float = float("nan"), letters: bool = False) -> str:
    """The verdict label of one item from its numbers (the rules and thresholds above).

    Args:
        lm_gap: Δ, gold − against under LM.
        length, prior_per_token, evidence: the three terms (they sum to ``lm_gap``; NaN: no prior).
        gold_wins: the gold is the LM winner (otherwise ``lm_gap`` > 0 means it leads only the compared option).
        mass_ratio, mass_gain: the gold's ``ratio`` and ``mass_gain`` (NaN: not measured).
        letters: the options are option IDs.
    """
    one = [np.array([v], dtype=float) for v in (lm_gap, length, prior_per_token, evidence, mass_ratio, mass_gain)]
    return str(verdicts(*one[:4], gold_wins=np.array([gold_wins]), mass_ratio=one[4], mass_gain=one[5],
                        letters=np.array([letters]))[0])


def verdict_sentence(label: str, d: dict[str, float], og: str, oa: str, mass: dict[str, float], winner: str) -> str:
    """The verdict in words: "Verdict: <label> — <why>", with the number that decided it.

    Args:
        label: the verdict label (``verdict``).
        d: the gap terms (``decompose``: ``lm``, ``length``, ``prior_per_token``, ``evidence``).
        og, oa, winner: the gold, the option it is compared with and the LM winner, quoted for the sentence.
        mass: ``gold_ratio`` and ``mass_gain`` (read for "split mass" only).
    """
    share = shares(d["length"], d["prior_per_token"], d["evidence"])
    share["letter bias"] = share["prior"]
    if label == "right":
        return f"Verdict: right — {og} is the LM winner; it leads {oa} by {gap(d['lm'])} nats."
    if label == "ahead":
        return (f"Verdict: ahead — {og} leads {oa} by {gap(d['lm'])} nats under LM, but loses to {winner}; compare "
                f"it with {winner} to see why.")
    if label == "tie":
        return f"Verdict: tie — {og} ties {oa} exactly under LM and loses the tie-break."
    # these labels need their term < 0 (it holds half the loss): each is said as an unsigned cost to the gold
    what = {"premise evidence": f"the premise itself favours {oa} (its evidence costs the gold "
                                f"{gap(-d['evidence'])} nats)",
            "length": f"{og} is longer (its length costs it {gap(-d['length'])} nats)",
            "prior": f"the words of {og} are rarer a priori (the per-token prior costs it "
                     f"{gap(-d['prior_per_token'])} nats)",
            "letter bias": f"the model prefers the letter of {oa} a priori (by {gap(-d['prior_per_token'])} nats)",
            "split mass": f"the probability of {og} is split over unlisted forms ({gap(mass['gold_ratio'])}× its "
                          f"listed token; counting them moves the gap by {signed(mass['mass_gain'])} nats)",
            "mixed": "no single term holds half of the loss",
            "lost": "no prior context was scored"}[label]
    detail = (f" ({share[label]:.0%} of what counts against the gold)"
              if label in ("premise evidence", "length", "prior", "letter bias") else "")
    return f"Verdict: {label} — {what}{detail}."
