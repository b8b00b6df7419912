"""The arithmetic of option-ID distributions: normalising, contextual calibration, Batch Calibration's prior,
permutation debiasing (PriDe's geometric means), PriDe's one-forward debiasing and RStd. Float64, in log space
where it matters.

>>> calibrate([0.6, 0.4], [0.75, 0.25]).round(3).tolist()
[0.333, 0.667]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .._checks import check_int


def log_normalise(x: np.ndarray) -> np.ndarray:
    return x - logsumexp(x, axis=-1)[..., None]


def _probs(p: Any, name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim < 1 or arr.shape[-1] < 2 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name}: expected non-negative finite probabilities over >= 2 IDs, got shape {arr.shape}")
    if np.any(arr.sum(-1) <= 0):
        raise ValueError(f"{name}: a distribution sums to zero")
    return arr


def normalise(p: Any) -> np.ndarray:
    """Rescale non-negative scores to sum to one along the last axis."""
    arr = _probs(p, "p")
    return arr / arr.sum(-1, keepdims=True)


def calibrate(p: Any, p_cf: Any) -> np.ndarray:
    """Contextual calibration: ``normalise(p / p_cf)``, i.e. W = diag(p_cf)^-1, b = 0 (Zhao et al. 2021)."""
    p_arr, cf = _probs(p, "p"), _probs(p_cf, "p_cf")
    if p_arr.shape[-1] != cf.shape[-1]:
        raise ValueError(f"p_cf: {cf.shape[-1]} IDs, but p has {p_arr.shape[-1]}")
    if np.any(cf == 0):
        raise ValueError("p_cf: a content-free probability is zero; W = diag(p_cf)^-1 is undefined")
    return normalise(p_arr / cf)


def batch_prior(observed: Any) -> np.ndarray:
    """Batch Calibration's contextual prior (Zhou et al., ICLR 2024): the mean of a batch's observed ID
    distributions, ``p(y | C) = 1/M sum_i p(y | x_i, C)`` (rows of ``observed``: the M items). Dividing it out
    (:func:`calibrate`) is ``log p(y | x) - log p(y | C)``, label-free and with no content-free input."""
    arr = _probs(observed, "observed")
    if arr.ndim != 2:
        raise ValueError(f"observed: expected one ID distribution per item (2 dimensions), got shape {arr.shape}")
    return normalise(arr).mean(0)


def cyclic_permutations(n: int) -> list[tuple[int, ...]]:
    """The n cyclic shifts: permutation k shows option ``(pos + k) % n`` at position ``pos`` (PriDe's order)."""
    _check_n(n)
    return [tuple((pos + k) % n for pos in range(n)) for k in range(n)]


def full_permutations(n: int, max_permutations: int = 24) -> list[tuple[int, ...]]:
    """All n! orders (sorted, identity first); raises if n! exceeds ``max_permutations``."""
    _check_n(n)
    if math.factorial(n) > max_permutations:
        raise ValueError(f"max_permutations: {n} options need {math.factorial(n)} permutations, more than "
                         f"max_permutations={max_permutations}; raise it or use cyclic permutations")
    return sorted(itertools.permutations(range(n)))


def _check_n(n: Any) -> None:
    check_int("n", n, 2)


def _check_perms(perms: Any, n: int) -> np.ndarray:
    arr = np.asarray(perms)
    if arr.ndim != 2 or arr.shape[1] != n or any(sorted(row) != list(range(n)) for row in arr.tolist()):
        raise ValueError(f"perms: expected a list of permutations of range({n})")
    return arr


def permutation_debias(observed: Any, perms: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Permutation-debiased option distribution and the sample's ID prior (PriDe, section 3.1-3.3).

    Args:
        observed: (P, n) observed ID probabilities; row k was observed with the options in order
            ``perms[k]`` (``perms[k][pos]`` = index of the option shown at position/ID ``pos``).
        perms: the P permutations.

    Returns:
        ``(debiased, prior)``: ``debiased[c]`` = normalised geometric mean over k of the observed
        probability at the position where option c was shown; ``prior[pos]`` = normalised geometric
        mean over k of the observed probability of ID ``pos``.
    """
    obs = _probs(observed, "observed")
    if obs.ndim != 2:
        raise ValueError(f"observed: expected a (permutations, ids) array, got shape {obs.shape}")
    pm = _check_perms(perms, obs.shape[1])
    if pm.shape[0] != obs.shape[0]:
        raise ValueError(f"perms: {pm.shape[0]} permutations for {obs.shape[0]} observed rows")
    with np.errstate(divide="ignore"):
        logp = np.log(normalise(obs))
    debiased, prior = permutation_debias_log(logp, pm)
    return np.exp(debiased), np.exp(prior)


def permutation_debias_log(logp: np.ndarray, perms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log-space core of :func:`permutation_debias` (rows of ``logp`` are log-normalised)."""
    by_content = np.empty_like(logp)
    rows = np.arange(len(perms))[:, None]
    by_content[rows, perms] = logp  # by_content[k, c] = log p_k(position of c)
    return log_normalise(by_content.mean(0)), log_normalise(logp.mean(0))


def pride_debias(observed: Any, prior: Any) -> np.ndarray:
    """PriDe's one-forward debiasing: ``normalise(exp(log p - log prior))``; argmax is the prediction."""
    return calibrate(observed, prior)


def rstd(gold: Sequence[int], pred: Sequence[int]) -> float:
    """Population std of the per-gold-ID recalls, x100 (PriDe's selection-bias measure).

    Recall of ID i = share of items with gold i predicted as i; IDs that never occur as gold are
    left out (they have no recall).
    """
    g, p = np.asarray(gold), np.asarray(pred)
    if g.shape != p.shape or g.ndim != 1 or len(g) == 0:
        raise ValueError(f"pred: expected as many predictions as gold labels, got {p.shape} and {g.shape}")
    recalls = [np.mean(p[g == c] == c) * 100 for c in np.unique(g)]
    return float(np.std(recalls))
