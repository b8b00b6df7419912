"""The option-ID methods of :func:`surfacelab.letters.evaluate`: what each asks the model per item
(:meth:`LetterRun.ask`) and what it predicts from the ID distributions (:class:`Prediction`); ``METHODS`` is their
registry (``register_method``) and ``gold@<ID>`` the answer-moving probe."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from scipy.special import logsumexp

from ..registry import Registry
from .math import (batch_prior, calibrate, cyclic_permutations, full_permutations, log_normalise,
                   permutation_debias_log)
from .prompts import CONTENT_FREE, DOMAIN_SAMPLES, LetterItem, LetterTemplate, domain_texts, swap_order


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
class LetterRun:
    """One :func:`evaluate` run as the methods see it: plan prompts with :meth:`ask`, read them with :meth:`dist`.

    Attributes:
        items, ids, template: the items, every ID and the letter template.
        seed, alpha, given, max_permutations, domain_samples: the arguments of :func:`evaluate` (``given``: a
            transferred prior).
        memo: per-run values a method computes once (PriDe's estimation items and prior, the domain texts, the
            batch priors).
    """

    items: list[LetterItem]
    ids: tuple[str, ...]
    template: LetterTemplate
    seed: int = 0
    alpha: float = 0.05
    given: dict[int, np.ndarray] | None = None
    max_permutations: int = 24
    domain_samples: int = DOMAIN_SAMPLES
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
    prompts: Callable[[LetterRun, int], None]
    predict: Callable[[LetterRun, int], Prediction]
    description: str = ""
    setup: Callable[[LetterRun], None] | None = None
    summary_prior: Callable[[LetterRun], Any] | None = None


#: The methods of :func:`evaluate` (``register_method`` adds to it); ``"gold@X"`` (X an ID) is the answer-moving probe.
METHODS: Registry[LetterMethod] = Registry("letter method", argument="methods")


def register_method(method: LetterMethod, *, overwrite: bool = False) -> LetterMethod:
    """Add an option-ID method to :func:`evaluate`; a taken name needs ``overwrite``."""
    if not isinstance(method, LetterMethod):
        raise TypeError(f"method: expected a LetterMethod, got {type(method).__name__}")
    if method.name.startswith("gold@"):
        raise ValueError(f"method: names starting with 'gold@' are the answer-moving probe, got {method.name!r}")
    return METHODS.register(method.name, method, overwrite=overwrite)


def _n(run: LetterRun, i: int) -> int:
    return len(run.items[i].options)


def _observed(run: LetterRun, i: int) -> np.ndarray:
    return run.dist("default", i)[0]


def _ask_cyclic(run: LetterRun, i: int) -> None:
    run.ask("cyclic", i, [(run.items[i].question, pm) for pm in cyclic_permutations(_n(run, i))])


def _cyclic(run: LetterRun, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Item ``i``'s cyclic-permutation debiased log-probs and its log ID prior (once per run)."""
    return run.once(("cyclic", i), lambda: permutation_debias_log(
        run.dist("cyclic", i), np.asarray(cyclic_permutations(_n(run, i)))))


def _ask_full(run: LetterRun, i: int) -> None:
    run.ask("full", i, [(run.items[i].question, pm) for pm in full_permutations(_n(run, i), run.max_permutations)])


def _full(run: LetterRun, i: int) -> Prediction:
    perms = full_permutations(_n(run, i), run.max_permutations)
    lp, prior = permutation_debias_log(run.dist("full", i), np.asarray(perms))
    return Prediction(lp, len(perms), np.exp(prior))


def _divided(run: LetterRun, i: int, prior: np.ndarray, cost: int) -> Prediction:
    """Item ``i``'s observed distribution with ``prior`` divided out (contextual calibration's rule)."""
    return Prediction(np.log(calibrate(np.exp(_observed(run, i)), prior)), cost, prior)


def _calibrated(run: LetterRun, i: int) -> Prediction:
    return _divided(run, i, np.exp(run.dist("cf", i)).mean(0), 1 + len(CONTENT_FREE))


def _domain_setup(run: LetterRun) -> None:
    """Domain-context calibration's inputs: random texts of the run's own question words (one draw per run)."""
    run.memo["domain_texts"] = domain_texts([it.question for it in run.items], run.domain_samples, run.seed)


def _domain(run: LetterRun, i: int) -> Prediction:
    return _divided(run, i, np.exp(run.dist("domain", i)).mean(0), 1 + len(run.memo["domain_texts"]))


def batch_priors(run: LetterRun) -> dict[int, np.ndarray]:
    """Batch Calibration's prior per option count: the mean observed ID distribution of the run's items with that
    many options (the batch is the run)."""
    return run.once("batch_prior", lambda: {n: batch_prior(np.exp([_observed(run, i) for i in range(len(run.items))
                                                                    if _n(run, i) == n])) for n in run.sizes})


def _batch(run: LetterRun, i: int) -> Prediction:
    return _divided(run, i, batch_priors(run)[_n(run, i)], 1)


def _per_size(priors: dict[int, np.ndarray], sizes: list[int]) -> Any:
    """A summary's prior: the one distribution when every item has as many options, else one per option count."""
    return priors[sizes[0]].tolist() if len(sizes) == 1 else {k: v.tolist() for k, v in priors.items()}


def _pride_setup(run: LetterRun) -> None:
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


def pride_priors(run: LetterRun) -> dict[int, np.ndarray]:
    """The PriDe prior per option count: transferred, or the mean per-sample prior of the estimation items."""
    def estimate() -> dict[int, np.ndarray]:
        est = sorted(run.memo["pride_estimate"])
        return {n: np.mean([np.exp(_cyclic(run, i)[1]) for i in est if _n(run, i) == n], axis=0) for n in run.sizes}

    return run.given if run.given is not None else run.once("pride_prior", estimate)


def _pride(run: LetterRun, i: int) -> Prediction:
    if i in run.memo["pride_estimate"]:
        return Prediction(_cyclic(run, i)[0], _n(run, i), role="estimate")
    prior = pride_priors(run)[_n(run, i)]
    return Prediction(log_normalise(_observed(run, i) - np.log(prior)), 1, role="debias")




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
                 lambda run: _per_size(pride_priors(run), run.sizes)),
    LetterMethod("batch", lambda run, i: None, _batch,
                 "Batch Calibration: the mean ID distribution of the run's items divided out (no extra forward)",
                 summary_prior=lambda run: _per_size(batch_priors(run), run.sizes)),
    LetterMethod("domain", lambda run, i: run.ask("domain", i, [(q, range(_n(run, i)))
                                                                for q in run.memo["domain_texts"]]),
                 _domain, "domain-context calibration: the prior of random in-domain words (+domain_samples "
                 "forwards)", _domain_setup),
]:
    register_method(_m)


def gold_at(id_: str) -> LetterMethod:
    """The answer-moving probe ``gold@<id_>``: the gold option swapped to ID ``id_``, scored against that ID."""
    name = f"gold@{id_}"

    def prompts(run: LetterRun, i: int) -> None:
        it = run.items[i]
        run.ask(name, i, [(it.question, swap_order(len(it.options), it.gold, run.ids.index(id_)))])

    return LetterMethod(name, prompts, lambda run, i: Prediction(run.dist(name, i)[0], 1, gold=run.ids.index(id_)),
                        f"the gold option moved to ID {id_}")


def check_methods(methods: Any, ids: tuple[str, ...]) -> list[LetterMethod]:
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
    return [METHODS[m] if m in METHODS else gold_at(m[5:]) for m in methods]
