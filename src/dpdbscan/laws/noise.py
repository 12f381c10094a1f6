"""The laws of the noise families, as the margins and the forecast need them.

One noise term Z of a released count is named by its kind and one number,
its ``scale``:

* ``"discrete"``: the discrete Laplace P(Z = z) ~ exp(-scale |z|) (scale is
  the epsilon the noise is drawn with);
* ``"laplace"``: the paper's continuous Laplace Lap(1 / scale);
* ``"gaussian"``: the discrete Gaussian N_Z(0, sigma^2) with sigma^2 = scale
  (:mod:`dpdbscan.laws.discretegaussian`);
* ``"none"``: exact counts (the oracle tests).

Public mathematics only: nothing here draws noise.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import discretegaussian as _gaussian

KINDS = ("discrete", "laplace", "gaussian", "none")


def _check(noise: str) -> None:
    if noise not in KINDS:
        raise ValueError(f"unknown noise {noise!r}")


def is_integer(noise: str) -> bool:
    """Whether the noise (and so every released value) is an integer."""
    _check(noise)
    return noise != "laplace"


def rational_epsilon(epsilon: float, max_den: int = 1 << 20) -> Fraction:
    """The largest fraction s/t <= epsilon with t <= max_den: the epsilon the
    exact discrete Laplace sampler draws with.

    Rounding epsilon *down* keeps the guarantee: noise for a smaller epsilon is
    at least as private.
    """
    f = Fraction(epsilon).limit_denominator(max_den)
    if f > Fraction(epsilon):
        f = Fraction(int(Fraction(epsilon) * max_den), max_den)
    if f <= 0:
        raise ValueError(f"epsilon={epsilon!r} is too small to represent exactly")
    return f


def drawn_scale(noise: str, scale: float) -> float:
    """The scale the noise is drawn with: the discrete Laplace's epsilon
    rounded down (:func:`rational_epsilon`); the others' as given (the
    Gaussian's sigma^2 is rounded up by less than 1e-5 relative by its
    sampler, which its histogram records)."""
    _check(noise)
    return float(rational_epsilon(scale)) if noise == "discrete" else float(scale)


def tail(noise: str, scale: float, theta: float) -> float:
    """P(Z >= theta) for one noise term, as a float."""
    _check(noise)
    if noise == "discrete":
        k = math.ceil(theta)
        q = math.exp(-scale)
        if k <= 0:
            return 1.0 - (q ** (-k + 1)) / (1.0 + q) if k < 0 else 1.0 / (1.0 + q)
        return q**k / (1.0 + q)
    if noise == "laplace":
        if theta >= 0:
            return 0.5 * math.exp(-scale * theta)
        return 1.0 - 0.5 * math.exp(scale * theta)
    if noise == "gaussian":
        return _gaussian.tail(scale, theta)
    return 0.0 if theta > 0 else 1.0


#: A cell "shows points" when its noisy count reaches what the noise alone
#: reaches with at most this probability (:func:`shown_count`).
SHOWN_LEVEL = 0.01


def shown_count(noise: str, scale: float, level: float = SHOWN_LEVEL) -> int:
    """The smallest count t >= 1 with P(Z >= t) <= ``level`` for one noise
    term: a cell whose noisy count reaches t holds points, unless the noise
    alone put it there (probability at most ``level`` for an empty cell).
    Public (the noise's kind and scale)."""
    hi = 1
    while tail(noise, scale, hi) > level:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:  # tail(lo) > level >= tail(hi), or lo = 0
        mid = (lo + hi) // 2
        if tail(noise, scale, mid) > level:
            lo = mid
        else:
            hi = mid
    return max(hi, 1)


def variance(noise: str, scale: float) -> float:
    """Variance of one noise term: discrete Laplace 2q/(1-q)^2 with
    q = exp(-scale); continuous Laplace 2/scale^2; the discrete Gaussian's
    own (slightly below sigma^2); none 0."""
    _check(noise)
    if noise == "none" or (noise != "gaussian" and math.isinf(scale)):
        return 0.0
    if noise == "discrete":
        q = math.exp(-scale)
        return 2.0 * q / (1.0 - q) ** 2
    if noise == "laplace":
        return 2.0 / scale**2
    return _gaussian.variance(scale)


def mgf_limit(noise: str, scale: float) -> float:
    """The lam below which E[exp(lam Z)] is finite (inf for the Gaussian)."""
    _check(noise)
    return math.inf if noise in ("gaussian", "none") else float(scale)


def log_mgf(noise: str, scale: float, lam: ArrayLike) -> Any:
    """log E[exp(lam Z)] for one noise term, |lam| < :func:`mgf_limit` (a
    float or, elementwise, an array).

    Discrete Laplace: M = (1-q)^2 / ((1 - q e^lam)(1 - q e^-lam)), q = e^-scale,
    in logs of 1 - e^(+-lam - scale), so that nothing overflows at any epsilon
    (cosh(lam) does beyond lam ~ 710). Continuous: 1 / (1 - lam^2 / scale^2).
    Gaussian: the exact sum, in log space.
    """
    _check(noise)
    lam = np.asarray(lam, dtype=np.float64)
    if noise == "none":
        out = np.zeros_like(lam)
    elif noise == "discrete":
        out = (
            2.0 * math.log1p(-math.exp(-scale))
            - np.log1p(-np.exp(lam - scale))
            - np.log1p(-np.exp(-lam - scale))
        )
    elif noise == "laplace":
        out = -np.log1p(-((lam / scale) ** 2))
    else:
        out = np.asarray(_gaussian.log_mgf(scale, lam), dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def cdf(noise: str, scale: float) -> Callable[[ArrayLike], np.ndarray]:
    """P(Z <= z) at real z for one noise term (a vectorised function)."""
    _check(noise)
    if noise == "discrete":
        q = math.exp(-scale)

        def F(z: ArrayLike) -> np.ndarray:
            # each tail as exp(-scale * a) with a >= 0 on both branches, so that
            # np.where's unused branch cannot overflow or divide by zero (q is
            # 0.0 in floating point for scale > 745)
            m = np.floor(np.asarray(z, dtype=np.float64))
            tail = np.exp(-scale * np.where(m >= 0, m + 1, -m)) / (1.0 + q)
            return np.where(m >= 0, 1.0 - tail, tail)

    elif noise == "laplace":

        def F(z: ArrayLike) -> np.ndarray:
            z = np.asarray(z, dtype=np.float64)
            tail = 0.5 * np.exp(-scale * np.abs(z))
            return np.where(z >= 0, 1.0 - tail, tail)

    elif noise == "gaussian":
        return _gaussian_cdf(float(scale))

    else:

        def F(z: ArrayLike) -> np.ndarray:
            return np.where(np.asarray(z, dtype=np.float64) >= 0, 1.0, 0.0)

    return F


@functools.lru_cache(maxsize=64)
def _gaussian_cdf(sigma2: float) -> Callable[[ArrayLike], np.ndarray]:
    return _gaussian.cdf_table(sigma2)


def std(noise: str, scale: float) -> float:
    """Standard deviation of one noise term."""
    return math.sqrt(variance(noise, scale))


def lam_top(noise: str, scale: float, log_level: float) -> float:
    """The top of the search range of lam for a Chernoff bound of one term
    of weight 1 at level exp(``log_level``).

    Laplace: the MGF's pole, ``scale``. Gaussian (its MGF is finite
    everywhere): three times ``sqrt(2 |log_level| + 2) / sigma``, above the
    optimum of any sum of subgaussian terms, ``sqrt(2 |log_level| / sum
    W^2) / sigma <= sqrt(2 |log_level|) / (sigma max W)``, so that the range
    searched holds it. Any lam gives a valid bound; the range only decides
    how tight it is."""
    _check(noise)
    if noise == "gaussian":
        return 3.0 * math.sqrt(2.0 * abs(log_level) + 2.0) / math.sqrt(scale)
    return float(scale)


def reach(noise: str, scale: float, log_level: float) -> float:
    """A distance z with P(|Z| > z) below about exp(``log_level``): how far
    the binned laws and the tables of the margins extend. Laplace:
    ``-log_level / scale``; Gaussian: ``sigma sqrt(-2 log_level)``."""
    _check(noise)
    depth = max(-log_level, 1.0)
    if noise == "gaussian":
        return math.sqrt(scale) * math.sqrt(2.0 * depth)
    return depth / scale


def resolution(noise: str, scale: float) -> float:
    """A natural length of one noise term, for binning its law: 1 / scale
    for Laplace, sigma for the Gaussian (at least 1)."""
    _check(noise)
    return max(1.0, math.sqrt(scale) if noise == "gaussian" else 1.0 / scale)


__all__ = [
    "KINDS",
    "is_integer",
    "rational_epsilon",
    "drawn_scale",
    "tail",
    "shown_count",
    "SHOWN_LEVEL",
    "variance",
    "mgf_limit",
    "log_mgf",
    "cdf",
    "std",
    "lam_top",
    "reach",
    "resolution",
]
