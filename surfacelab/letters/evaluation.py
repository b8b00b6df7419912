"""Option-ID methods over a dataset: :func:`evaluate` plans every method's prompts, scores them in one engine
pass and summarises accuracy, RStd, cost and the chosen-ID distribution (:class:`LetterEval`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._checks import check_int, is_number
from .._results import JSONResult, macro_ci, model_meta
from ..engine.cache import ScoreCache
from ..tasks.loader import subset_indices
from .math import normalise, rstd
from .methods import LetterMethod, LetterRun, Prediction, check_methods, pride_priors
from .prompts import DOMAIN_SAMPLES, LetterTemplate, as_items, check_ids, get_template
from .reading import variant_logprobs

if TYPE_CHECKING:
    from ..models import LM


@dataclass
class LetterEval(JSONResult):
    """Results of :func:`evaluate` (``save(path)`` / ``LetterEval.load(path)``: one JSON file).

    ``summary``: one row per method: method, n_items, accuracy (%), rstd (%-points), cost (forwards
    per item), prior (the ID prior the method divides out, averaged over items, or per option count for PriDe and
    Batch Calibration on items of several sizes; None for default and probes), chosen_<ID> (% of items answered with
    that ID).
    ``items``: one row per (item, method): item (index), item_id, subject, n_options, method, role
    ("estimate" / "debias" for PriDe), gold and pred (IDs), correct, probs (final distribution,
    over IDs in the order shown).
    ``prior``: the PriDe prior per option count (pass it as ``prior=`` to transfer it).
    ``gold_share``: % of items whose gold answer has each ID.
    ``meta``: fingerprint, backend, template, ids, methods, alpha, seed, limit, sample, max_permutations,
    domain_samples and, when the "domain" method ran, domain_texts (the random in-domain questions it averaged
    over), whether a prior was transferred.
    """

    summary: pd.DataFrame
    items: pd.DataFrame
    prior: dict[int, np.ndarray] = field(default_factory=dict)
    gold_share: pd.Series | None = None
    model: str = ""
    n_prompts: int = 0  # unique prompts scored (one forward each, before the cache)
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # what ``load`` reads back from JSON: option counts as keys, lists for arrays, a dict for the series
        self.prior = {int(k): np.asarray(v, dtype=float) for k, v in self.prior.items()}
        if self.gold_share is not None and not isinstance(self.gold_share, pd.Series):
            self.gold_share = pd.Series(self.gold_share, name="gold_share", dtype=float)

    def show(self) -> Any:
        """Accuracy per method with a 95% CI (normal approximation) and the chance line (``viz.accuracy_ci``)."""
        from .. import viz

        ci = [macro_ci([acc / 100], [n]) for acc, n in zip(self.summary["accuracy"], self.summary["n_items"])]
        frame = pd.DataFrame(ci, columns=["accuracy", "ci_low", "ci_high"]).assign(
            scorer=self.summary["method"].to_numpy(), model=self.model or "model")
        first = self.items[self.items["method"] == self.summary["method"].iloc[0]]
        chance = float((1 / first["n_options"]).mean()) if len(first) else None
        return viz.accuracy_ci(frame, "model", chance=chance, title="Option-ID methods: accuracy with 95% CI")


def _check_prior(prior: Any) -> dict[int, np.ndarray] | None:
    if prior is None:
        return None
    if isinstance(prior, LetterEval):
        prior = prior.prior
    out = {int(k): normalise(v) for k, v in prior.items()} if isinstance(prior, Mapping) else {0: normalise(prior)}
    for k, arr in list(out.items()):
        if arr.ndim != 1 or (k and len(arr) != k) or np.any(arr == 0):
            raise ValueError(f"prior: expected positive distributions over the IDs (one per option count), "
                             f"got {arr.tolist()}")
    return {len(arr): arr for arr in out.values()}


def _alpha(alpha: Any) -> float:
    if not is_number(alpha) or not 0 < alpha <= 1:
        raise ValueError(f"alpha: expected a fraction in (0, 1], got {alpha!r}")
    return float(alpha)


def _summarise(run: LetterRun, method: LetterMethod, preds: list[Prediction]) -> tuple[list[dict], dict]:
    """The item rows and the summary row of one method."""
    items, ids = run.items, run.ids
    picks = [int(np.argmax(p.logp)) for p in preds]
    golds = [it.gold if p.gold is None else p.gold for it, p in zip(items, preds)]
    rows = [{"item": i, "item_id": it.id, "subject": it.subject, "n_options": len(it.options), "method": method.name,
             "role": p.role, "gold": ids[g], "pred": ids[k], "correct": k == g, "probs": np.exp(p.logp).tolist()}
            for i, (it, p, k, g) in enumerate(zip(items, preds, picks, golds))]
    used = [p.prior for p in preds if p.prior is not None]
    if method.summary_prior is not None:
        prior = method.summary_prior(run)
    else:
        prior = np.mean(used, axis=0).tolist() if used and len(run.sizes) == 1 else None
    chosen = np.bincount(picks, minlength=len(ids)) / len(picks) * 100
    summary = {"method": method.name, "n_items": len(items),
               "accuracy": float(np.mean(np.asarray(picks) == np.asarray(golds)) * 100),
               "rstd": rstd(golds, picks), "cost": float(np.mean([p.cost for p in preds])), "prior": prior,
               **{f"chosen_{ids[j]}": float(chosen[j]) for j in range(len(ids))}}
    return rows, summary


def evaluate(
    lm: LM,
    task: Any,
    methods: Sequence[str] = ("default", "calibrated", "cyclic", "pride"),
    *,
    alpha: float = 0.05,
    seed: int = 0,
    limit: int | None = None,
    sample: int | None = None,
    ids: str | Sequence[str] | None = None,
    template: LetterTemplate | str = "pride",
    prior: Any = None,
    max_permutations: int = 24,
    domain_samples: int = DOMAIN_SAMPLES,
    cache: bool | ScoreCache = True,
) -> LetterEval:
    """Accuracy, RStd, cost and chosen-ID distribution of option-ID scoring methods on a dataset.

    Methods: "default" (observed argmax), "calibrated" (content-free prior, +3 forwards),
    "cyclic" / "full" (permutation debiasing, n / n! forwards), "pride" (prior from a fraction
    ``alpha`` of the items, then one forward each), "batch" (Batch Calibration, Zhou et al. 2024: the mean
    observed ID distribution of the run's items with as many options divided out; no extra forward), "domain"
    (domain-context calibration, Fei et al. 2023: the content-free prior of ``domain_samples`` random texts of the
    run's question words, +``domain_samples`` forwards) and "gold@X" (the gold option swapped to ID X). Methods
    are registered in ``METHODS`` (``register_method``).
    Every prompt of every method is deduplicated and scored in one engine pass.

    Args:
        lm: a loaded causal ``LM``.
        task: a ``Task`` or anything :func:`as_items` accepts; items need a gold answer.
        methods: the methods to run.
        alpha: PriDe's estimation fraction (per option count, at least one item).
        seed: seeds the ``sample`` draw and PriDe's estimation draw.
        limit: evaluate the first this many items (as lm-evaluation-harness's ``--limit``).
        sample: evaluate a random sample of this many items drawn with ``seed`` (not with ``limit``).
        ids: option IDs (see :func:`score`).
        template: a ``LetterTemplate`` or a name in ``TEMPLATES``.
        prior: a PriDe prior to transfer (array for one option count, {n: array}, or a LetterEval):
            PriDe then estimates nothing and costs one forward per item.
        max_permutations: limit of the "full" method.
        domain_samples: how many random in-domain texts the "domain" method averages over (drawn with ``seed``).
        cache: use the engine's on-disk cache.
    """
    items = as_items(task)
    items = [items[i] for i in subset_indices(len(items), limit=limit, sample=sample, seed=seed)]
    for i, it in enumerate(items):
        if it.gold is None:
            raise ValueError(f"task[{i}]: item {it.id!r} has no gold answer")
    tpl = get_template(template)
    all_ids = check_ids(ids, max(len(it.options) for it in items))
    chosen = check_methods(methods, all_ids)
    run = LetterRun(items, all_ids, tpl, seed, _alpha(alpha), _check_prior(prior), max_permutations,
                    check_int("domain_samples", domain_samples, 1))
    for m in chosen:  # plan
        if m.setup is not None:
            m.setup(run)
    for i in range(len(items)):
        run.ask("default", i, [(items[i].question, range(len(items[i].options)))])
        for m in chosen:
            m.prompts(run, i)
    run.logp = variant_logprobs(lm, list(run.prompts), all_ids, tpl.cue, cache)  # run
    rows, summary = [], []
    for m in chosen:  # apply, summarise
        method_rows, line = _summarise(run, m, [m.predict(run, i) for i in range(len(items))])
        rows += method_rows
        summary.append(line)
    gold_share = pd.Series(np.bincount([it.gold for it in items], minlength=len(all_ids)) / len(items) * 100,
                           index=list(all_ids), name="gold_share")
    priors = pride_priors(run) if "pride_estimate" in run.memo else {}
    meta = model_meta(lm, template=tpl.name, ids=list(all_ids), methods=[m.name for m in chosen], alpha=run.alpha,
                      seed=seed, limit=limit, sample=sample, max_permutations=max_permutations,
                      domain_samples=run.domain_samples, prior_given=run.given is not None,
                      **({"domain_texts": run.memo["domain_texts"]} if "domain_texts" in run.memo else {}))
    return LetterEval(pd.DataFrame(summary), pd.DataFrame(rows), priors, gold_share, getattr(lm, "name", ""),
                      len(run.prompts), meta)
