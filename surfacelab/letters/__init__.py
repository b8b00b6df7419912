"""Option-ID scoring: letter priors, contextual calibration, permutation debiasing and PriDe.

A question is rendered with its options labelled by IDs (A/B/C/D..., or 1/2/3...) and an answer
cue ("Answer:", never followed by a space). The model's answer is read from the next-token
distribution at the cue:

* **Observed.** For each ID the probabilities of its two variants, " A" and "A", are summed
  (PriDe's rule), then renormalised over the IDs. Variants that are one token after the cue come
  from a single forward pass (``engine.next_token_logprobs``); a variant that spans several tokens
  (" 10" for most tokenizers) is scored as a continuation by ``engine.logprobs``.
* **Content-free prior and calibration** (Zhao et al. 2021). The same prompt with the question
  replaced by "N/A", "" and "[MASK]" (options kept); the three ID distributions are averaged into
  ``p_cf`` and the calibrated distribution is ``normalise(p / p_cf)``, i.e. W = diag(p_cf)^-1.
* **Permutation debiasing** (Zheng et al. 2024, PriDe, section 3.1). The options are shown under
  several orders (cyclic: n forwards; full: n! forwards); the debiased probability of an option is
  the geometric mean of its observed probabilities over the orders (each read at the ID it was
  shown under), renormalised. The same forwards give the sample's ID prior: the geometric mean of
  the observed probability of each ID over the orders, renormalised.
* **PriDe.** The prior is estimated on a seeded fraction ``alpha`` of the items with cyclic
  permutations (the per-sample priors are averaged as probabilities, as the public code does);
  every other item is debiased with one forward: ``argmax(log p - log prior)``. Estimation items
  keep their cyclic-permutation prediction. Cost = forwards per item.
* **RStd**: the population standard deviation (numpy's default, as in the PriDe code) of the
  per-gold-ID recalls, x100, over the IDs that occur as gold answers.

Probabilities are handled as float64 log-probabilities; the model's log-softmax runs in float32
inside the engine.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from .. import engine, text
from .._checks import is_number
from .._results import JSONResult, macro_ci, model_meta
from ..engine.cache import ScoreCache
from ..engine.requests import Entry, Plan
from ..registry import Registry
from ..tasks.loader import subset_indices
from .math import (calibrate, cyclic_permutations, full_permutations, log_normalise, normalise, permutation_debias,
                   permutation_debias_log, pride_debias, rstd)
from .prompts import (CONTENT_FREE, PLAIN, PRIDE, TEMPLATES, LetterItem, LetterTemplate, as_items, check_ids,
                      drop_cross_references, get_template, make_item, move_gold, refers_to_other_options,
                      register_letter_template, stratified_sample, swap_order)

if TYPE_CHECKING:
    from ..models import LM

__all__ = [
    "CONTENT_FREE",
    "METHODS",
    "PLAIN",
    "PRIDE",
    "TEMPLATES",
    "as_items",
    "calibrate",
    "cyclic_permutations",
    "drop_cross_references",
    "evaluate",
    "full_permutations",
    "id_variants",
    "LetterEval",
    "LetterItem",
    "LetterMethod",
    "LetterResult",
    "LetterTemplate",
    "move_gold",
    "normalise",
    "permutation_debias",
    "Prediction",
    "pride_debias",
    "refers_to_other_options",
    "register_letter_template",
    "register_method",
    "rstd",
    "Run",
    "score",
    "stratified_sample",
]


# ----------------------------------------------------------------------------- reading IDs at the cue
def id_variants(lm: LM, ids: Sequence[str], cue: str = "Answer:") -> pd.DataFrame:
    """How each ID is read after the cue: one row per (ID, variant) with its tokens.

    Columns: id, variant (" A" or "A"), token_ids, single (one token: read from the next-token
    distribution), duplicate (same tokens as the ID's other variant: counted once).
    """
    rows = []
    for i in ids:
        seen: set[tuple[int, ...]] = set()
        for v in (" " + i, i):
            enc = text.encode(lm, cue, v)
            toks = tuple(enc.scored_ids)
            rows.append({"id": i, "variant": v, "token_ids": toks,
                         "single": len(toks) == 1 and not enc.merged, "duplicate": toks in seen})
            seen.add(toks)
    return pd.DataFrame(rows)


def _variant_logprobs(lm: LM, prompts: list[str], ids: tuple[str, ...], cue: str,
                      cache: bool | ScoreCache) -> np.ndarray:
    """Full-vocabulary log-probs of each ID's variants after each prompt: (prompts, ids, 2) float64.

    One ``next_token_logprobs`` forward per prompt for single-token variants, one ``engine.logprobs``
    call for the rest; a duplicate variant is -inf (counted once).
    """
    plan = id_variants(lm, ids, cue)
    out = np.full((len(prompts), len(ids), 2), -np.inf)
    single = plan[plan.single & ~plan.duplicate]
    multi = plan[~plan.single & ~plan.duplicate]
    if len(single):
        tids = [t[0] for t in single.token_ids]
        res = engine.next_token_logprobs(lm, prompts, token_ids=tids, cache=cache)
        lp = np.stack([r.selected for r in res])
        for col, idx in enumerate(single.index):
            out[:, idx // 2, idx % 2] = lp[:, col]
    if len(multi):
        variants = tuple(multi.variant)
        plan = Plan([[Entry((p,) * len(variants), variants, None) for p in prompts]], conditions=("premise",))
        scores = plan.run(lm, cache=cache, progress=False)
        for row in range(len(prompts)):
            for idx, s in zip(multi.index, plan.results(scores, row)):
                out[row, idx // 2, idx % 2] = s.total
    return out


# ----------------------------------------------------------------------------- single question
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
    var = _variant_logprobs(lm, perm_prompts + cf_prompts, id_set, tpl.cue, cache)
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


# ----------------------------------------------------------------------------- datasets
@dataclass
class LetterEval(JSONResult):
    """Results of :func:`evaluate` (``save(path)`` / ``LetterEval.load(path)``: one JSON file).

    ``summary``: one row per method: method, n_items, accuracy (%), rstd (%-points), cost (forwards
    per item), prior (the ID prior the method divides out, averaged over items; None for default and
    probes), chosen_<ID> (% of items answered with that ID).
    ``items``: one row per (item, method): item (index), item_id, subject, n_options, method, role
    ("estimate" / "debias" for PriDe), gold and pred (IDs), correct, probs (final distribution,
    over IDs in the order shown).
    ``prior``: the PriDe prior per option count (pass it as ``prior=`` to transfer it).
    ``gold_share``: % of items whose gold answer has each ID.
    ``meta``: fingerprint, backend, template, ids, methods, alpha, seed, limit, sample, max_permutations,
    whether a prior was transferred.
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


# ----------------------------------------------------------------------------- methods
class Prediction(NamedTuple):
    """What a method makes of one item: log-probabilities over the item's IDs (argmax = the prediction),
    forwards spent, the ID prior it divided out (or None), its role ("estimate" / "debias" for PriDe)
    and the gold index it is scored against (None: the item's)."""

    logp: np.ndarray
    cost: int
    prior: np.ndarray | None = None
    role: str = ""
    gold: int | None = None


@dataclass
class Run:
    """One :func:`evaluate` run as the methods see it: plan prompts with :meth:`ask`, read them with :meth:`dist`.

    Attributes:
        items, ids, template: the items, every ID and the letter template.
        seed, alpha, given, max_permutations: the arguments of :func:`evaluate` (``given``: a transferred prior).
        memo: per-run values a method computes once (PriDe's estimation items and prior).
    """

    items: list[LetterItem]
    ids: tuple[str, ...]
    template: LetterTemplate
    seed: int = 0
    alpha: float = 0.05
    given: dict[int, np.ndarray] | None = None
    max_permutations: int = 24
    memo: dict[Any, Any] = field(default_factory=dict)
    prompts: dict[str, int] = field(default_factory=dict)
    need: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    logp: np.ndarray | None = None  # (prompts, ids, 2) variant log-probs, after the engine call

    @property
    def sizes(self) -> list[int]:
        """The option counts of the items, sorted."""
        return sorted({len(it.options) for it in self.items})

    def ask(self, stage: str, i: int, orders: Sequence[tuple[str, Sequence[int]]]) -> None:
        """Plan the prompts of ``stage`` for item ``i``: one per (question, option order); asked once per stage."""
        it = self.items[i]
        if (stage, i) not in self.need:
            self.need[(stage, i)] = [self.prompts.setdefault(
                self.template.render(q, [it.options[c] for c in order], self.ids[:len(order)], it.subject),
                len(self.prompts)) for q, order in orders]

    def dist(self, stage: str, i: int) -> np.ndarray:
        """Log-normalised ID distributions of the prompts of ``stage`` for item ``i``: (prompts, n_options)."""
        return log_normalise(logsumexp(self.logp[self.need[(stage, i)], :len(self.items[i].options)], axis=-1))

    def once(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` the first time ``key`` is asked for in this run, the stored value afterwards."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]


@dataclass(frozen=True)
class LetterMethod:
    """An option-ID scoring method of :func:`evaluate`: what it asks the model and what it predicts.

    Attributes:
        name: its name in ``evaluate(methods=...)``.
        prompts: ``prompts(run, i)`` plans item ``i``'s prompts with ``run.ask(stage, i, [(question, order)])``
            (every item's observed prompt, stage ``"default"``, is always planned).
        predict: ``predict(run, i)`` -> a :class:`Prediction`, from ``run.dist(stage, i)``.
        description: one line.
        setup: optional ``setup(run)`` before planning (PriDe draws its estimation items there).
        summary_prior: optional ``summary_prior(run)`` for the summary's ``prior`` column; default: the mean of
            the predictions' priors when every item has the same number of options.
    """

    name: str
    prompts: Callable[[Run, int], None]
    predict: Callable[[Run, int], Prediction]
    description: str = ""
    setup: Callable[[Run], None] | None = None
    summary_prior: Callable[[Run], Any] | None = None


#: The methods of :func:`evaluate` (``register_method`` adds to it); ``"gold@X"`` (X an ID) is the answer-moving probe.
METHODS: Registry[LetterMethod] = Registry("letter method", argument="methods")


def register_method(method: LetterMethod, *, overwrite: bool = False) -> LetterMethod:
    """Add an option-ID method to :func:`evaluate`; a taken name needs ``overwrite``."""
    if not isinstance(method, LetterMethod):
        raise TypeError(f"method: expected a LetterMethod, got {type(method).__name__}")
    if method.name.startswith("gold@"):
        raise ValueError(f"method: names starting with 'gold@' are the answer-moving probe, got {method.name!r}")
    return METHODS.register(method.name, method, overwrite=overwrite)


def _n(run: Run, i: int) -> int:
    return len(run.items[i].options)


def _observed(run: Run, i: int) -> np.ndarray:
    return run.dist("default", i)[0]


def _ask_cyclic(run: Run, i: int) -> None:
    run.ask("cyclic", i, [(run.items[i].question, pm) for pm in cyclic_permutations(_n(run, i))])


def _cyclic(run: Run, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Item ``i``'s cyclic-permutation debiased log-probs and its log ID prior (once per run)."""
    return run.once(("cyclic", i), lambda: permutation_debias_log(
        run.dist("cyclic", i), np.asarray(cyclic_permutations(_n(run, i)))))


def _ask_full(run: Run, i: int) -> None:
    run.ask("full", i, [(run.items[i].question, pm) for pm in full_permutations(_n(run, i), run.max_permutations)])


def _full(run: Run, i: int) -> Prediction:
    perms = full_permutations(_n(run, i), run.max_permutations)
    lp, prior = permutation_debias_log(run.dist("full", i), np.asarray(perms))
    return Prediction(lp, len(perms), np.exp(prior))


def _calibrated(run: Run, i: int) -> Prediction:
    p_cf = np.exp(run.dist("cf", i)).mean(0)
    return Prediction(np.log(calibrate(np.exp(_observed(run, i)), p_cf)), 1 + len(CONTENT_FREE), p_cf)


def _pride_setup(run: Run) -> None:
    """PriDe's estimation items: a seeded shuffle, the first max(1, int(alpha * N_n)) of each option count;
    none when a prior is transferred (which must then cover every option count)."""
    estimate: set[int] = set()
    if run.given is None:
        order = list(range(len(run.items)))
        random.Random(run.seed).shuffle(order)
        for n in run.sizes:
            group = [i for i in order if len(run.items[i].options) == n]
            estimate.update(group[:max(1, int(len(group) * run.alpha))])
    else:
        missing = [n for n in run.sizes if n not in run.given]
        if missing:
            raise ValueError(f"prior: no prior for items with {missing} options (have {sorted(run.given)})")
    run.memo["pride_estimate"] = estimate


def _pride_priors(run: Run) -> dict[int, np.ndarray]:
    """The PriDe prior per option count: transferred, or the mean per-sample prior of the estimation items."""
    def estimate() -> dict[int, np.ndarray]:
        est = sorted(run.memo["pride_estimate"])
        return {n: np.mean([np.exp(_cyclic(run, i)[1]) for i in est if _n(run, i) == n], axis=0) for n in run.sizes}

    return run.given if run.given is not None else run.once("pride_prior", estimate)


def _pride(run: Run, i: int) -> Prediction:
    if i in run.memo["pride_estimate"]:
        return Prediction(_cyclic(run, i)[0], _n(run, i), role="estimate")
    prior = _pride_priors(run)[_n(run, i)]
    return Prediction(log_normalise(_observed(run, i) - np.log(prior)), 1, role="debias")


def _pride_summary(run: Run) -> Any:
    priors = _pride_priors(run)
    return priors[run.sizes[0]].tolist() if len(run.sizes) == 1 else {k: v.tolist() for k, v in priors.items()}


for _m in [
    LetterMethod("default", lambda run, i: None, lambda run, i: Prediction(_observed(run, i), 1),
                 "observed argmax (one forward)"),
    LetterMethod("calibrated", lambda run, i: run.ask("cf", i, [(q, range(_n(run, i))) for q in CONTENT_FREE]),
                 _calibrated, "contextual calibration by the content-free prior (+3 forwards)"),
    LetterMethod("cyclic", _ask_cyclic, lambda run, i: Prediction(_cyclic(run, i)[0], _n(run, i),
                                                                  np.exp(_cyclic(run, i)[1])),
                 "cyclic permutation debiasing (n forwards)"),
    LetterMethod("full", _ask_full, _full, "full permutation debiasing (n! forwards)"),
    LetterMethod("pride", lambda run, i: _ask_cyclic(run, i) if i in run.memo["pride_estimate"] else None, _pride,
                 "PriDe: prior from a fraction alpha of the items, then one forward each", _pride_setup,
                 _pride_summary),
]:
    register_method(_m)


def _gold_at(id_: str) -> LetterMethod:
    """The answer-moving probe ``gold@<id_>``: the gold option swapped to ID ``id_``, scored against that ID."""
    name = f"gold@{id_}"

    def prompts(run: Run, i: int) -> None:
        it = run.items[i]
        run.ask(name, i, [(it.question, swap_order(len(it.options), it.gold, run.ids.index(id_)))])

    return LetterMethod(name, prompts, lambda run, i: Prediction(run.dist(name, i)[0], 1, gold=run.ids.index(id_)),
                        f"the gold option moved to ID {id_}")


def _check_methods(methods: Any, ids: tuple[str, ...]) -> list[LetterMethod]:
    if isinstance(methods, str) or not isinstance(methods, Iterable):
        raise TypeError(f"methods: expected a list of method names, got {methods!r}")
    methods = tuple(methods)
    for m in methods:
        if not (m in METHODS or (isinstance(m, str) and m.startswith("gold@") and m[5:] in ids)):
            close = METHODS.close_matches(m)
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
            raise ValueError(f"methods: unknown method {m!r}{hint}; choose from {list(METHODS)} or 'gold@<ID>' "
                             f"with an ID in {list(ids)}")
    if not methods or len(set(methods)) != len(methods):
        raise ValueError(f"methods: expected distinct method names, got {methods!r}")
    return [METHODS[m] if m in METHODS else _gold_at(m[5:]) for m in methods]


def _summarise(run: Run, method: LetterMethod, preds: list[Prediction]) -> tuple[list[dict], dict]:
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
    cache: bool | ScoreCache = True,
) -> LetterEval:
    """Accuracy, RStd, cost and chosen-ID distribution of option-ID scoring methods on a dataset.

    Methods: "default" (observed argmax), "calibrated" (content-free prior, +3 forwards),
    "cyclic" / "full" (permutation debiasing, n / n! forwards), "pride" (prior from a fraction
    ``alpha`` of the items, then one forward each) and "gold@X" (the gold option swapped to ID X).
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
        cache: use the engine's on-disk cache.
    """
    items = as_items(task)
    items = [items[i] for i in subset_indices(len(items), limit=limit, sample=sample, seed=seed)]
    for i, it in enumerate(items):
        if it.gold is None:
            raise ValueError(f"task[{i}]: item {it.id!r} has no gold answer")
    tpl = get_template(template)
    all_ids = check_ids(ids, max(len(it.options) for it in items))
    chosen = _check_methods(methods, all_ids)
    run = Run(items, all_ids, tpl, seed, _alpha(alpha), _check_prior(prior), max_permutations)
    for m in chosen:  # plan
        if m.setup is not None:
            m.setup(run)
    for i in range(len(items)):
        run.ask("default", i, [(items[i].question, range(len(items[i].options)))])
        for m in chosen:
            m.prompts(run, i)
    run.logp = _variant_logprobs(lm, list(run.prompts), all_ids, tpl.cue, cache)  # run
    rows, summary = [], []
    for m in chosen:  # apply, summarise
        method_rows, line = _summarise(run, m, [m.predict(run, i) for i in range(len(items))])
        rows += method_rows
        summary.append(line)
    gold_share = pd.Series(np.bincount([it.gold for it in items], minlength=len(all_ids)) / len(items) * 100,
                           index=list(all_ids), name="gold_share")
    priors = _pride_priors(run) if "pride_estimate" in run.memo else {}
    meta = model_meta(lm, template=tpl.name, ids=list(all_ids), methods=[m.name for m in chosen], alpha=run.alpha,
                      seed=seed, limit=limit, sample=sample, max_permutations=max_permutations,
                      prior_given=run.given is not None)
    return LetterEval(pd.DataFrame(summary), pd.DataFrame(rows), priors, gold_share, getattr(lm, "name", ""),
                      len(run.prompts), meta)
