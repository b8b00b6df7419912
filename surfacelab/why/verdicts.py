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

import functools
import hashlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from .. import engine
from ..engine.requests import LOGPROB_COLUMNS
from ..tasks import Task
from .first_token import FIRST_TOKEN_KEYS, first_token_numbers, first_token_plan
from .result import quoted
from .rules import EVIDENCE_SHARE, LABELS, decompose, is_option_ids, shares, verdict_sentence, verdicts

if TYPE_CHECKING:
    from ..models import LM


def _first_best(key: np.ndarray, starts: np.ndarray, counts: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Per item (rows ``starts[k]`` .. + ``counts[k]``): the position of its first largest ``key`` (``np.argmax``)."""
    best = np.repeat(np.maximum.reduceat(key, starts), counts)
    return np.minimum.reduceat(np.where(key == best, position, np.iinfo(np.int64).max), starts)


def _gaps(task: Task, scores: pd.DataFrame) -> pd.DataFrame:
    """Per item: LM's pick (``pick``, first on ties), the option compared (``against``: the pick, or LM's
    runner-up when the pick is the gold), the gap terms of ``why.decompose`` and which context is the prior."""
    prior = next((c for c in ("domain", "null") if scores[LOGPROB_COLUMNS[c]].notna().all()), "")
    rows = scores.sort_values(["item", "option_index"], kind="stable")
    item = rows["item"].to_numpy()
    starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]])
    counts = np.diff(np.r_[starts, len(item)])
    position = np.arange(len(item)) - np.repeat(starts, counts)  # the option's index within its item
    gold = np.array([task.items[int(i)].gold for i in item[starts]], dtype=np.int64)
    lp = rows["logprob"].to_numpy(dtype=float)
    key = np.where(np.isnan(lp), np.inf, lp)  # np.argmax takes the first NaN as the largest
    pick = _first_best(key, starts, counts, position)
    runner_up = _first_best(np.where(position == np.repeat(gold, counts), -np.inf, key), starts, counts, position)
    against = np.where(pick != gold, pick, runner_up)
    n = rows["n_tokens"].to_numpy()
    pr = rows[LOGPROB_COLUMNS[prior]].to_numpy(dtype=float) if prior else np.full(len(lp), np.nan)
    g, a = starts + gold, starts + against
    d = decompose(lp[g], lp[a], pr[g], pr[a], n[g].astype(np.int64), n[a].astype(np.int64))
    return pd.DataFrame({"pick": pick, "against": against, "gap_lm": d["lm"], "gap_length": d["length"],
                         "gap_prior_per_token": d["prior_per_token"], "gap_evidence": d["evidence"], "prior": prior})


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
    golds = np.array([it.gold for it in task.items])
    cols["why"] = verdicts(cols["gap_lm"].to_numpy(), cols["gap_length"].to_numpy(),
                           cols["gap_prior_per_token"].to_numpy(), cols["gap_evidence"].to_numpy(),
                           gold_wins=cols["pick"].to_numpy() == golds, mass_ratio=cols["mass_ratio"].to_numpy(),
                           mass_gain=cols["mass_gain"].to_numpy(),
                           letters=np.array([is_option_ids(it.options) for it in task.items], dtype=bool))
    return cols.drop(columns="pick")


@functools.cache
def _code_version() -> str:
    """A digest of the code and the data the split-mass numbers come from (the first-token plan, the surface forms,
    the encoding rules, inflect's version), so that a changed rule never reads entries an older one cached."""
    from importlib.metadata import version

    from .. import surface_forms, text
    from . import first_token

    h = hashlib.sha256(version("inflect").encode())
    for module in (first_token, surface_forms, text):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


def _candidates(task: Task, scores: pd.DataFrame) -> list[tuple[int, int]]:
    """(item, LM's pick) of the items whose label split mass can decide: LM wrong, not an exact tie, the evidence
    term below ``why.EVIDENCE_SHARE`` of the loss ("premise evidence" comes first in the rules)."""
    g = _gaps(task, scores)
    golds = np.array([it.gold for it in task.items])
    evidence = shares(g["gap_length"].to_numpy(), g["gap_prior_per_token"].to_numpy(), g["gap_evidence"].to_numpy())
    keep = ((g["pick"].to_numpy() != golds) & (g["gap_lm"].to_numpy() != 0)
            & (np.asarray(evidence["premise evidence"]) < EVIDENCE_SHARE))
    return [(int(i), int(p)) for i, p in zip(np.flatnonzero(keep), g["pick"].to_numpy()[keep])]


def split_mass(lm: LM, jobs: list[tuple[int, Task, pd.DataFrame]], batch_size: int | str) -> tuple[dict, dict]:
    """The split-mass numbers of the items whose label they can decide, each cached on its own.

    Those are the items LM gets wrong, not on an exact tie, whose evidence term holds less than
    ``why.EVIDENCE_SHARE`` of the loss ("premise evidence" comes first in the rules); flipped tasks are
    skipped (one shared continuation). An item's numbers are kept in the score cache under the model, the item's
    context, options, gold and LM pick and the code's version (``engine.derived``), so a rerun, another item set or
    another chunking reads them back with no tokenizer work; the items not found plan their first token
    (``why.first_token_plan``) and share ONE next-token call, each prompt keyed by its own token ids.

    Args:
        lm: the loaded ``LM``.
        jobs: ``(job, task, scores)`` per task of the run (``scores`` as in ``verdict_columns``).
        batch_size: as in ``engine.next_token_logprobs``.

    Returns:
        ``({job: {item: first_token_numbers}}, cost)``: cost counts the items measured (``items``), those read from
        the cache (``items_cached``), and of the next-token call its prompts, token ids, tokens forwarded and cached
        prompts, and the seconds spent planning and in all.
    """
    t0 = time.perf_counter()
    wanted = []  # (job, item, context, options, gold, pick)
    for j, task, scores in jobs:
        if task.template.per_option_premise is not None:
            continue
        for i, pick in _candidates(task, scores):
            it = task.items[i]
            wanted.append((j, i, it.contexts()[it.gold], tuple(it.options), it.gold, pick))
    cost = {"items": len(wanted), "items_cached": 0, "prompts": 0, "token_ids": 0, "tokens_forwarded": 0,
            "cached": 0, "plan_seconds": 0.0}

    def measure(positions: list[int]) -> list[np.ndarray]:
        t1 = time.perf_counter()
        plans = [first_token_plan(lm, *wanted[k][2:4]) for k in positions]
        asked = [p for p in plans if not p.reason]
        cost["plan_seconds"] = time.perf_counter() - t1
        if asked:
            res = engine.next_token_logprobs(lm, [p.prompt for p in asked], token_ids=[p.token_ids for p in asked],
                                             batch_size=batch_size, cache=True)
            cost.update(prompts=len(asked), token_ids=len({t for p in asked for t in p.token_ids}),
                        tokens_forwarded=res.stats.tokens_forwarded, cached=res.stats.cached)
        nexts = iter(res if asked else [])
        out = []
        for k, plan in zip(positions, plans):
            lp = {} if plan.reason else dict(zip(plan.token_ids, next(nexts).selected.astype(np.float64).tolist()))
            numbers = first_token_numbers(plan, lp, *wanted[k][4:6])
            out.append(np.array([numbers[name] for name in FIRST_TOKEN_KEYS], dtype=np.float64))
        return out

    values, cost["items_cached"] = engine.derived(
        lm, f"split-mass|{_code_version()}", [json.dumps(w[2:]) for w in wanted], measure)
    out: dict[int, dict[int, dict[str, float]]] = {}
    for (j, i, *_), v in zip(wanted, values):
        out.setdefault(j, {})[i] = dict(zip(FIRST_TOKEN_KEYS, v.tolist()))
    cost["seconds"] = time.perf_counter() - t0
    return out, cost


def verdict_sentences(items: pd.DataFrame, options: Sequence[Sequence[str]]) -> list[str]:
    """Each item's verdict in words (``rules.verdict_sentence``: "Verdict: prior — the words of 'x' are rarer a
    priori ..."), read from a run's verdict columns.

    Args:
        items: rows of ``EvalResult.items`` (with ``gold``, ``why``, ``against`` and the ``gap_*`` / ``mass_*``
            columns; ``pred_lm`` names the LM winner where LM was run).
        options: each row's options, in option order.
    """
    out = []
    for r, opts in zip(items.itertuples(index=False), options):
        winner = int(getattr(r, "pred_lm", r.against))
        d = {"lm": r.gap_lm, "length": r.gap_length, "prior_per_token": r.gap_prior_per_token,
             "evidence": r.gap_evidence}
        out.append(verdict_sentence(str(r.why), d, quoted(opts[int(r.gold)]), quoted(opts[int(r.against)]),
                                    {"gold_ratio": r.mass_ratio, "mass_gain": r.mass_gain}, quoted(opts[winner])))
    return out


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
