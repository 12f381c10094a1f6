"""Floating-point facts about the discrete Gaussian N_Z(0, sigma^2).

``P(Z = k) = exp(-k^2 / (2 sigma^2)) / S`` on the integers, with
``S = sum_k exp(-k^2 / (2 sigma^2))``. These functions choose public
parameters (theta, batch sizes) and give the accuracy margins the moments
they need; they never draw noise, and the exact samplers and the exact tail
of the sparse histogram do not use them to decide anything (see
:mod:`dpdbscan.release.samplers.gaussian` and :mod:`dpdbscan.release.samplers.gaussian_tail`).

Every quantity is a sum of terms ``exp(lam k - k^2 / (2 sigma^2))`` over a
range of integers, computed in log space (log-sum-exp) so that nothing
underflows: ``P(Z >= theta)`` is accurate far below 1e-308. The terms are
summed directly, without asymptotic formulas; a sum stops where the terms
left fall below ``exp(-50)`` of the largest one (a relative error below
1e-21 after the geometric decay of the rest), so a sum costs O(sigma)
operations (about 20 sigma terms at most, in numpy chunks).

References
----------
Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020 (arXiv:2004.00010): the variance is below sigma^2 and
``E exp(lam Z) <= exp(lam^2 sigma^2 / 2)`` (the discrete Gaussian is
sigma-subgaussian).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

_CUT = 50.0  # terms below exp(-_CUT) times the largest are left out
_CHUNK = 1 << 20


def _range(sigma2: float, lam: float, lo: int | None) -> tuple[int, int, float]:
    """Integers [k_lo, k_hi] holding every term within exp(-_CUT) of the
    largest of ``exp(lam k - k^2 / (2 sigma2))`` over k >= lo, and the
    centre ``lam sigma2`` of the terms."""
    centre = lam * sigma2
    width = math.sqrt(2.0 * sigma2 * _CUT)
    first = centre if lo is None else max(float(lo), centre)
    # the largest term sits at ``first`` (to within one step); terms at
    # distance d from the centre are exp(-(d^2 - (first - centre)^2) / (2 sigma2))
    # times it, below exp(-_CUT) once d^2 > (first - centre)^2 + 2 sigma2 _CUT
    reach = math.sqrt((first - centre) ** 2 + width**2)
    k_hi = math.floor(centre + reach) + 1
    k_lo = math.ceil(centre - width) - 1
    if lo is not None:
        k_lo = max(k_lo, int(lo))
    return k_lo, k_hi, centre


def _log_sum(sigma2: float, lam: float = 0.0, lo: int | None = None) -> float:
    """log of sum_{k >= lo} exp(lam k - k^2 / (2 sigma2)) (all integers when
    ``lo`` is None)."""
    k_lo, k_hi, centre = _range(sigma2, lam, lo)
    if k_hi < k_lo:
        return -math.inf
    # lam k - k^2/(2 s) = lam^2 s / 2 - (k - centre)^2 / (2 s): no cancellation
    nearest = min(max(round(centre), k_lo), k_hi)
    top = -((nearest - centre) ** 2) / (2.0 * sigma2)
    total = 0.0
    for start in range(k_lo, k_hi + 1, _CHUNK):
        k = np.arange(start, min(start + _CHUNK, k_hi + 1), dtype=np.float64)
        total += float(np.exp(-((k - centre) ** 2) / (2.0 * sigma2) - top).sum())
    return 0.5 * lam * lam * sigma2 + top + math.log(total)


def _check(sigma2: float) -> float:
    s = float(sigma2)
    if not (s > 0 and math.isfinite(s)):
        raise ValueError(f"sigma^2 must be positive and finite, got sigma2={sigma2!r}")
    return s


def log_normalizer(sigma2: float) -> float:
    """log S, ``S = sum over all integers k of exp(-k^2 / (2 sigma^2))``."""
    return _log_sum(_check(sigma2))


def log_tail(sigma2: float, theta: float) -> float:
    """log P(Z >= theta) = log P(Z >= ceil(theta)), accurate in the far tail."""
    s = _check(sigma2)
    if math.isinf(theta):
        return -math.inf if theta > 0 else 0.0
    return min(_log_sum(s, 0.0, math.ceil(theta)) - _log_sum(s), 0.0)


def tail(sigma2: float, theta: float) -> float:
    """P(Z >= theta) (0.0 only when it is below the smallest float)."""
    return math.exp(log_tail(sigma2, theta))


def cdf(sigma2: float, z: float) -> float:
    """P(Z <= z) = P(Z >= -floor(z)) by symmetry (no cancellation)."""
    return tail(sigma2, -math.floor(z))


_MAX_TABLE = 1 << 22  # entries of one (lam, k) table; beyond, one lam at a time


def _log_sums(sigma2: float, lams: np.ndarray, lo: int | None) -> np.ndarray:
    """:func:`_log_sum` for every ``lam`` of a 1-D array at once: one table
    of the terms over the integers that matter to any of them, summed row by
    row in log space (each row's largest term factored out)."""
    s = sigma2
    lams = np.asarray(lams, dtype=np.float64)
    if lams.size == 0:
        return np.zeros(0)
    ranges = [_range(s, float(x), lo) for x in (lams.min(), lams.max())]
    k_lo, k_hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    if k_hi < k_lo:
        return np.full(lams.size, -math.inf)
    if (k_hi - k_lo + 1) * lams.size > _MAX_TABLE:
        return np.array([_log_sum(s, float(x), lo) for x in lams])
    k = np.arange(k_lo, k_hi + 1, dtype=np.float64)
    centre = lams[:, None] * s
    # lam k - k^2/(2 s) = lam^2 s / 2 - (k - lam s)^2 / (2 s), row by row
    a = -((k[None, :] - centre) ** 2) / (2.0 * s)
    top = a.max(axis=1, keepdims=True)
    return 0.5 * lams * lams * s + top[:, 0] + np.log(np.exp(a - top).sum(axis=1))


def log_mgf(sigma2: float, lam: ArrayLike) -> np.ndarray:
    """log E exp(lam Z) for each ``lam`` (any real number), by summation.

    Always at most ``lam^2 sigma^2 / 2`` (Canonne-Kamath-Steinke).
    """
    s = _check(sigma2)
    lam_arr = np.asarray(lam, dtype=np.float64)
    out = _log_sums(s, lam_arr.ravel(), None) - _log_sum(s)
    return out.reshape(lam_arr.shape)


def tail_mgf(sigma2: float, t: float, lam: float) -> float:
    """E[exp(lam Z); Z >= t], the truncated moment generating function."""
    s = _check(sigma2)
    return math.exp(_log_sum(s, float(lam), math.ceil(t)) - _log_sum(s))


def log_tail_mgf(sigma2: float, t: float, lam: ArrayLike) -> np.ndarray:
    """log E[exp(lam Z); Z >= t] for each ``lam`` (elementwise)."""
    s = _check(sigma2)
    lam_arr = np.asarray(lam, dtype=np.float64)
    if math.isinf(t) and t < 0:
        return log_mgf(s, lam_arr)
    out = _log_sums(s, lam_arr.ravel(), math.ceil(t)) - _log_sum(s)
    return out.reshape(lam_arr.shape)


def tail_mgfs(sigma2: float, ts: ArrayLike, lam: float) -> np.ndarray:
    """E[exp(lam Z); Z >= t] for each integer threshold ``t`` of an array,
    at one ``lam``: one reversed cumulative sum over the integers."""
    s = _check(sigma2)
    t = np.ceil(np.asarray(ts, dtype=np.float64))
    if t.size == 0:
        return np.zeros(t.shape)
    k_lo, k_hi, centre = _range(s, float(lam), int(t.min()))
    k = np.arange(k_lo, k_hi + 1, dtype=np.float64)
    a = -((k - centre) ** 2) / (2.0 * s)
    top = float(a.max())
    # survival[i] = sum over j >= i of the terms, largest-index first: accurate in the tail
    survival = np.cumsum(np.exp(a - top)[::-1])[::-1]
    idx = (t - k_lo).astype(np.int64)
    inside = np.clip(idx, 0, survival.size - 1)
    vals = np.where(idx >= survival.size, 0.0, survival[inside])
    return np.exp(0.5 * lam * lam * s + top - _log_sum(s)) * vals


def cdf_table(sigma2: float) -> Callable[[ArrayLike], np.ndarray]:
    """P(Z <= z) at real z (a vectorised function) from one table of the pmf:
    each side summed from its far end, so both tails keep their relative
    precision down to ``exp(-_CUT)`` of the mode."""
    s = _check(sigma2)
    K = math.ceil(math.sqrt(2.0 * s * (_CUT + 10.0))) + 2
    k = np.arange(-K, K + 1, dtype=np.float64)
    p = np.exp(-(k * k) / (2.0 * s) - _log_sum(s))
    left = np.cumsum(p)  # P(Z <= k)
    right = np.cumsum(p[::-1])[::-1]  # P(Z >= k)

    def F(z: ArrayLike) -> np.ndarray:
        m = np.floor(np.asarray(z, dtype=np.float64))
        i = np.clip(m + K, -1, 2 * K).astype(np.int64)
        lower = np.where(i < 0, 0.0, left[np.clip(i, 0, 2 * K)])
        # for m >= 0: 1 - P(Z >= m + 1)
        j = np.clip(i + 1, 0, 2 * K)
        upper = 1.0 - np.where(i + 1 > 2 * K, 0.0, right[j])
        return np.where(m < 0, lower, upper)

    return F


def variance(sigma2: float) -> float:
    """Var Z = E Z^2 = sum k^2 exp(-k^2/(2 sigma^2)) / S, slightly below sigma^2."""
    s = _check(sigma2)
    # k^2 exp(-k^2 / (2 s)) peaks at k^2 = 2 s; beyond k^2 = 2 s (_CUT + 10) the
    # terms are below exp(-_CUT) of the peak and decay geometrically
    k_hi = math.ceil(math.sqrt(2.0 * s * (_CUT + 10.0))) + 10
    log_s = _log_sum(s)
    total = 0.0
    for start in range(1, k_hi + 1, _CHUNK):
        k = np.arange(start, min(start + _CHUNK, k_hi + 1), dtype=np.float64)
        total += float((k * k * np.exp(-(k * k) / (2.0 * s) - log_s)).sum())
    return 2.0 * total


def laplace_acceptance(sigma2: float, t: int) -> float:
    """P(accept) of one round of the two-sided sampler (CKS Algorithm 3):
    ``(1 - q)/(1 + q) exp(-sigma^2 / (2 t^2)) S``, ``q = exp(-1/t)``."""
    s = _check(sigma2)
    q = math.exp(-1.0 / t)
    return math.exp(math.log((1.0 - q) / (1.0 + q)) - s / (2.0 * t * t) + _log_sum(s))


def tail_acceptance(sigma2: float, k: int, lam: float) -> float:
    """P(accept) of one round of the tail sampler from ``k`` with proposal
    rate ``lam``: ``(1 - exp(-lam)) exp(lam k - lam^2 sigma^2 / 2) T_k``,
    ``T_k = sum_{j >= k} exp(-j^2 / (2 sigma^2))``."""
    s = _check(sigma2)
    log_p = math.log(-math.expm1(-lam)) + lam * k - 0.5 * lam * lam * s + _log_sum(s, 0.0, k)
    return math.exp(min(log_p, 0.0))
