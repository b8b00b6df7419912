"""One question's option-ID scores: observed, content-free prior, calibrated and permutation-debiased
(:func:`score` -> :class:`LetterResult`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from .._results import JSONResult
from ..engine.cache import ScoreCache
from .math import calibrate, cyclic_permutations, full_permutations, log_normalise, permutation_debias_log
from .prompts import CONTENT_FREE, LetterTemplate, check_ids, get_template, make_item
from .reading import variant_logprobs

if TYPE_CHECKING:
    from ..models import LM


@dataclass
class LetterResult(JSONResult):
    """Option-ID scores of one question.

    ``table``: one row per ID (default order): id, position, option, gold, p_space / p_bare (full-
    vocabulary probability of " A" / "A"; a duplicate variant is 0), observed, prior (content-free),
    calibrated, perm_prior (the sample's PriDe prior from the permutations), debiased.
    ``permutations``: one row per (permutation, position): perm, position, id, option_index, option,
    observed. ``content_free``: one row per (content-free question, ID): question, id, observed.
    """

    question: str
    options: list[str]
    ids: list[str]
    gold: int | None
    prompt: str
    permutation: str
    table: pd.DataFrame
    permutations: pd.DataFrame
    content_free: pd.DataFrame

    def winner(self, column: str = "observed") -> str:
        """The ID with the highest value in ``column`` (observed, calibrated, debiased, ...)."""
        cols = ("observed", "prior", "calibrated", "perm_prior", "debiased")
        if column not in cols:
            raise ValueError(f"column: expected one of {cols}, got {column!r}")
        return str(self.table.loc[self.table[column].idxmax(), "id"])

    def show(self) -> Any:
        """The observed / prior / calibrated / debiased ID distributions (``viz.letter_priors``)."""
        from .. import viz

        return viz.letter_priors(self.table, gold=self.gold)


def score(
    lm: LM,
    question: str,
    options: Sequence[str],
    *,
    ids: str | Sequence[str] | None = None,
    template: LetterTemplate | str = "pride",
    subject: str = "",
    gold: int | None = None,
    permutation: str = "cyclic",
    max_permutations: int = 24,
    cache: bool | ScoreCache = True,
) -> LetterResult:
    """Observed, content-free, calibrated and permutation-debiased ID distributions of one question.

    Args:
        lm: a loaded causal ``LM``.
        question: the question text (stripped when rendered).
        options: option texts, in the default order.
        ids: option IDs: a string of one-character IDs ("ABCD", "1234") or a list ("1", ..., "10");
            default A, B, C, ...
        template: a ``LetterTemplate`` or a name in ``TEMPLATES`` (default PriDe's prompt).
        subject: fills " about <subject>" in the template's instruction (MMLU).
        gold: index of the correct option, if known.
        permutation: "cyclic" (n forwards) or "full" (n! forwards).
        max_permutations: refuse a full permutation with more orders than this.
        cache: use the engine's on-disk cache.

    Example:
        >>> t = score(lm, "2 + 2 =", ["3", "4", "5", "22"], template="plain").table
        >>> t.id.tolist(), round(float(t.observed.sum()), 6), round(float(t.debiased.sum()), 6)
        (['A', 'B', 'C', 'D'], 1.0, 1.0)
    """
    it = make_item(question, options, gold, subject, "", "score:", distinct=True)
    tpl = get_template(template)
    n = len(it.options)
    id_set = check_ids(ids, n)
    if permutation not in ("cyclic", "full"):
        raise ValueError(f"permutation: expected 'cyclic' or 'full', got {permutation!r}")
    perms = cyclic_permutations(n) if permutation == "cyclic" else full_permutations(n, max_permutations)
    perm_prompts = [tpl.render(it.question, [it.options[c] for c in pm], id_set, it.subject) for pm in perms]
    cf_prompts = [tpl.render(q, it.options, id_set, it.subject) for q in CONTENT_FREE]
    var = variant_logprobs(lm, perm_prompts + cf_prompts, id_set, tpl.cue, cache)
    logp = log_normalise(logsumexp(var, axis=-1))
    perm_lp, cf_lp = logp[:len(perms)], logp[len(perms):]
    debiased, perm_prior = permutation_debias_log(perm_lp, np.asarray(perms))
    observed = np.exp(perm_lp[0])
    p_cf = np.exp(cf_lp).mean(0)
    table = pd.DataFrame({
        "id": list(id_set),
        "position": np.arange(n),
        "option": list(it.options),
        "gold": [it.gold == j for j in range(n)],
        "p_space": np.exp(var[0, :, 0]),
        "p_bare": np.exp(var[0, :, 1]),
        "observed": observed,
        "prior": p_cf,
        "calibrated": calibrate(observed, p_cf),
        "perm_prior": np.exp(perm_prior),
        "debiased": np.exp(debiased),
    })
    perm_rows = [{"perm": k, "position": pos, "id": id_set[pos], "option_index": c, "option": it.options[c],
                  "observed": float(np.exp(perm_lp[k, pos]))}
                 for k, pm in enumerate(perms) for pos, c in enumerate(pm)]
    cf_rows = [{"question": q, "id": id_set[j], "observed": float(np.exp(cf_lp[m, j]))}
               for m, q in enumerate(CONTENT_FREE) for j in range(n)]
    return LetterResult(it.question, list(it.options), list(id_set), it.gold, perm_prompts[0], permutation,
                        table, pd.DataFrame(perm_rows), pd.DataFrame(cf_rows))
