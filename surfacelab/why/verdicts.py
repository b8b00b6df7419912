"""The ``why`` labels of an evaluation run (column ``why`` of ``EvalResult.items``): the verdict labels of
:func:`surfacelab.why.verdict` (rules and thresholds in :mod:`surfacelab.why`), one scheme for
``sl.why`` and ``evaluate``. They explain the LM comparison of the gold with LM's pick (with the LM
runner-up when LM is right): ``right``, ``tie``, ``premise evidence``, ``split mass``, ``length``,
``prior`` / ``letter bias``, ``mixed`` (``lost`` if no prior context was scored). The numbers behind
them are columns: ``against`` (the option compared), ``gap_lm`` = ``gap_length`` +
``gap_prior_per_token`` + ``gap_evidence`` (exact), ``prior`` (which context plays the prior: the
domain premise if a scorer needed it, else the empty context if PMI-null ran, else none),
``mass_ratio`` and ``mass_gain`` (the gold's unlisted-forms ratio at the first token where the
options differ, from ONE extra batched next-token call over the items whose label it can decide: LM
wrong, not a tie, not "premise evidence"; NaN elsewhere and on flipped tasks; its cost is in
``meta["why_cost"]``), and ``rescued_by`` (the
scorers that pick the gold on an item LM gets wrong). ``EvalResult.labels`` counts the labels and,
per scorer, how many of each label's items it gets right; ``runs.label_table`` stacks those of
several runs (datasets).

``evaluate`` builds its items frame with ``verdict_columns`` (after ``split_mass``) and its
``labels`` frame with ``label_counts``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from .. import engine
from ..engine.requests import LOGPROB_COLUMNS
from ..tasks import Task
from .first_token import first_token_numbers, first_token_plan
from .rules import EVIDENCE_SHARE, LABELS, decompose, is_option_ids, shares, verdict

if TYPE_CHECKING:
    from ..models import LM


def _gaps(task: Task, scores: pd.DataFrame) -> pd.DataFrame:
    """Per item: LM's pick (``pick``, first on ties), the option compared (``against``: the pick, or LM's
    runner-up when the pick is the gold), the gap terms of ``why.decompose`` and which context is the prior."""
    prior = next((c for c in ("domain", "null") if scores[LOGPROB_COLUMNS[c]].notna().all()), "")
    pcol = LOGPROB_COLUMNS.get(prior)
    rows = []
    for i, g in scores.groupby("item", sort=True):
        gold = task.items[int(i)].gold
        lp = g["logprob"].to_numpy(dtype=float)
        pick = int(np.argmax(lp))
        against = pick if pick != gold else int(np.argmax(np.where(np.arange(len(lp)) == gold, -np.inf, lp)))
        n = g["n_tokens"].to_numpy()
        pr = g[pcol].to_numpy(dtype=float) if pcol else np.full(len(lp), np.nan)
        d = decompose(lp[gold], lp[against], pr[gold], pr[against], int(n[gold]), int(n[against]))
        rows.append({"pick": pick, "against": against, "gap_lm": d["lm"], "gap_length": d["length"],
                     "gap_prior_per_token": d["prior_per_token"], "gap_evidence": d["evidence"], "prior": prior})
    return pd.DataFrame(rows)


def verdict_columns(task: Task, scores: pd.DataFrame, mass: dict[int, dict[str, float]]) -> pd.DataFrame:
    """The verdict columns of the items frame (see the module docstring).

    Args:
        task: the task evaluated.
        scores: its long (item, option) frame (``EvalResult.scores``: raw log-probs and ``n_tokens``).
        mass: item -> ``why.first_token_numbers`` of the items whose split mass was measured (``split_mass``).

    Returns:
        One row per item: ``against``, ``gap_*``, ``prior``, ``mass_ratio``, ``mass_gain`` and ``why``.
    """
    cols = _gaps(task, scores)
    cols["mass_ratio"] = [mass.get(i, {}).get("gold_ratio", np.nan) for i in range(len(cols))]
    cols["mass_gain"] = [mass.get(i, {}).get("mass_gain", np.nan) for i in range(len(cols))]
    cols["why"] = [verdict(r.gap_lm, r.gap_length, r.gap_prior_per_token, r.gap_evidence,
                           gold_wins=r.pick == it.gold, mass_ratio=r.mass_ratio, mass_gain=r.mass_gain,
                           letters=is_option_ids(it.options)) for r, it in zip(cols.itertuples(), task.items)]
    return cols.drop(columns="pick")


def split_mass(lm: LM, jobs: list[tuple[int, Task, pd.DataFrame]], batch_size: int | str) -> tuple[dict, dict]:
    """The split-mass numbers of the items whose label they can decide, with ONE next-token call over all.

    Those are the items LM gets wrong, not on an exact tie, whose evidence term holds less than
    ``why.EVIDENCE_SHARE`` of the loss ("premise evidence" comes first in the rules); flipped tasks are
    skipped (one shared continuation).

    Args:
        lm: the loaded ``LM``.
        jobs: ``(job, task, scores)`` per task of the run (``scores`` as in ``verdict_columns``).
        batch_size: as in ``engine.next_token_logprobs``.

    Returns:
        ``({job: {item: first_token_numbers}}, cost)``: cost counts the prompts, token ids, tokens forwarded,
        cached prompts and seconds of that call.
    """
    t0 = time.perf_counter()
    plans = []
    for j, task, scores in jobs:
        if task.template.per_option_premise is not None:
            continue
        for r, it in zip(_gaps(task, scores).itertuples(), task.items):
            if (r.pick != it.gold and r.gap_lm != 0
                    and shares(r.gap_length, r.gap_prior_per_token, r.gap_evidence)["premise evidence"]
                    < EVIDENCE_SHARE):
                plan = first_token_plan(lm, it.contexts()[it.gold], it.options)
                if not plan.reason:
                    plans.append((j, r.Index, it.gold, r.pick, plan))
    planned = time.perf_counter() - t0
    ids = sorted({t for *_, p in plans for t in p.token_ids})
    nexts = engine.next_token_logprobs(lm, [p.prompt for *_, p in plans], token_ids=ids, batch_size=batch_size,
                                       cache=True) if plans else []
    column = {t: k for k, t in enumerate(ids)}
    out: dict[int, dict[int, dict[str, float]]] = {}
    for (j, i, gold, pred, plan), nt in zip(plans, nexts):
        lp = {t: float(nt.selected[column[t]]) for t in plan.token_ids}
        out.setdefault(j, {})[i] = first_token_numbers(plan, lp, gold, pred)
    s = nexts.stats if plans else None
    cost = {"prompts": len(plans), "token_ids": len(ids), "tokens_forwarded": s.tokens_forwarded if plans else 0,
            "cached": s.cached if plans else 0, "plan_seconds": planned,
            "seconds": time.perf_counter() - t0}
    return out, cost


def label_counts(items: pd.DataFrame, scorers: Sequence[str]) -> pd.DataFrame:
    """Counts of the ``why`` labels and, per scorer, how many of each label's items it gets right.

    Args:
        items: ``EvalResult.items``.
        scorers: the scorers evaluated.

    Returns:
        One row per label present (in ``why.LABELS`` order): ``why``, ``n``, ``share`` of the items and
        ``rescued_<scorer>`` (for "right" items LM gets them right by definition).
    """
    rows = []
    for label in LABELS:
        sub = items[items["why"] == label]
        if len(sub):
            rows.append({"why": label, "n": len(sub), "share": len(sub) / len(items),
                         **{f"rescued_{s}": int(sub[f"correct_{s}"].sum()) for s in scorers}})
    return pd.DataFrame(rows, columns=["why", "n", "share", *[f"rescued_{s}" for s in scorers]])
