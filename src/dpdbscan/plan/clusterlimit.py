"""Which Gaussian clusters a release can find, from public inputs only.

A core (sub-)cell needs its estimated eps-neighbourhood count E~(q) to reach
the threshold T = MinPts + m(q) (:mod:`dpdbscan.plan.outlook`). A sparse
release adds a second bar: it shows a cell only when the cell's noisy count
reaches theta, and every other cell reads 0. In high dimension that second
bar decides: the grid's cells are eps / sqrt(d) wide, an eps-ball covers
about V_d d^(d/2) of them (16,600 in 8-D), and a cluster spreads its points
over so many cells that few hold theta (18 in 8-D at epsilon 1 on the unit
box). Seed 73 of issue 30's sweep (``benchmarks/diagnose_hd.py``,
results/hd78): every cluster the 8-D release lost had exact ball counts of
700-2,500 against T = 132, was found by the release's noiseless twin, and
had at most 6 cells holding 18 points or more.

The model here: a cluster of N points, Gaussian with standard deviation s
along every axis, its centre anywhere relative to the grid. A cell of the
cluster holds on average mu = N prod_i p_i, p_i the Gaussian mass of the
cell's interval on axis i; the points in it are Poisson(mu), and the release
shows them when they reach theta (the noise on a shown cell averages out in
the sum). The cluster's centre then sees

    E(N, s) = N * S(N, s) * B(s),
    S = E_point[ P(Poisson(mu_cell) >= theta - 1) ]   (the share of its points shown),
    B = P(chi_d <= eps / s)                           (the share within eps of its centre),

S from the distribution of log p over the axis's cells and grid phases,
convolved over the d axes (exact up to a bin of 0.02 in log p); S = 1 for a
dense release. The cluster is found when E >= T; exact DBSCAN finds it when
N B >= MinPts. :func:`least_points` solves E(N, s) = T for N.

Checked against points binned on the grid (``tests/plan/test_clusterlimit.py``)
and against the sweep's clusters (docs/parameters.md, "What a release can
detect above 6-D"). Reads public values only: d, eps, the cell width, theta,
the threshold, MinPts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Spreads the forecast lists, as fractions of eps (sd = eps / 12 ... eps / 3).
SPREADS = (1 / 12, 1 / 6, 1 / 4, 1 / 3)
#: Bin width of the log-mass distribution and the least log mass kept.
_BIN = 0.02
_LEAST_LOG = -40.0
#: Grid phases per axis (the cluster's centre relative to the cells).
_PHASES = 64
#: Beyond this many points no cluster is reported as findable.
MAX_POINTS = 1e12


def _phi(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF, elementwise (math.erf: no scipy import)."""
    erf = np.frompyfunc(math.erf, 1, 1)
    return 0.5 * (1.0 + np.asarray(erf(x / math.sqrt(2.0)), dtype=np.float64))


def axis_log_masses(width: float, sd: float) -> np.ndarray:
    """The distribution of log p over one axis: ``out[k]`` is the share of
    a cluster's points (averaged over the grid's phase) whose cell's
    interval on this axis holds a Gaussian mass p with log p about
    ``-k * 0.02``."""
    r = width / sd
    u = (np.arange(_PHASES) + 0.5) / _PHASES
    J = int(math.ceil(8.0 / r)) + 2
    j = np.arange(-J, J + 1)
    a = (j[None, :] - u[:, None]) * r
    m = (_phi(a + r) - _phi(a)).ravel()
    keep = m > math.exp(_LEAST_LOG)
    m = m[keep]
    bins = int(-_LEAST_LOG / _BIN) + 1
    idx = np.clip(np.round(-np.log(m) / _BIN).astype(np.int64), 0, bins - 1)
    return np.bincount(idx, weights=m / _PHASES, minlength=bins)


def cell_log_masses(d: int, width: float, sds: float | tuple) -> np.ndarray:
    """The distribution of log(prod_i p_i), the log of a point's cell's
    share of its cluster, over the d axes (one sd for all or one per axis):
    the per-axis distributions convolved (by one real FFT)."""
    per_axis = tuple(sds) if isinstance(sds, (tuple, list, np.ndarray)) else (float(sds),) * d
    if len(per_axis) != d:
        raise ValueError(f"{len(per_axis)} standard deviations for {d} dimensions")
    bins = int(-_LEAST_LOG / _BIN) + 1
    size = d * (bins - 1) + 1
    nfft = 1 << (size - 1).bit_length()
    F = np.ones(nfft // 2 + 1, dtype=np.complex128)
    cache: dict[float, np.ndarray] = {}
    for s in per_axis:
        if s not in cache:
            cache[s] = np.fft.rfft(axis_log_masses(width, s), nfft)
        F *= cache[s]
    out = np.fft.irfft(F, nfft)[:size]
    # round-off of the transform, far below any share that matters
    out[out < 1e-14] = 0.0
    return out


def _at_least(k: int, mu: np.ndarray) -> np.ndarray:
    """P(Poisson(mu) >= k), elementwise (k small)."""
    if k <= 0:
        return np.ones_like(mu)
    mu = np.maximum(mu, 1e-300)
    terms = np.exp(-mu[:, None] + np.arange(k)[None, :] * np.log(mu)[:, None] - _lgammas(k)[None, :])
    return np.clip(1.0 - terms.sum(axis=1), 0.0, 1.0)


def _lgammas(k: int) -> np.ndarray:
    return np.array([math.lgamma(i + 1) for i in range(k)])


def shown_share(logm: np.ndarray, points: float, theta: float) -> float:
    """S: the share of a cluster of ``points`` points whose cell a release
    at ``theta`` shows (the cell's points reach theta - 1 besides the one
    counted), from :func:`cell_log_masses`. 1 without a threshold."""
    if not math.isfinite(theta) or theta <= 1:
        return 1.0
    mu = points * np.exp(-_BIN * np.arange(logm.size))
    live = logm > 0
    return float((logm[live] * _at_least(math.ceil(theta) - 1, mu[live])).sum())


def ball_share(d: int, eps: float, sd: float) -> float:
    """B: P(chi_d <= eps / sd), the share of an isotropic Gaussian within eps
    of its centre (the regularized lower gamma P(d/2, x/2) by recursion)."""
    y = 0.5 * (eps / sd) ** 2
    if d % 2:
        p, a = math.erf(math.sqrt(y)), 0.5
    else:
        p, a = 1.0 - math.exp(-y), 1.0
    while a + 1 <= d / 2 + 1e-9:
        p -= math.exp(a * math.log(y) - y - math.lgamma(a + 1)) if y > 0 else 0.0
        a += 1
    return min(max(p, 0.0), 1.0)


def centre_count(d: int, eps: float, width: float, sd: float, theta: float, points: float) -> float:
    """E(N, s): what the release's estimate at an isotropic Gaussian
    cluster's centre reads without noise (see the module's docstring)."""
    logm = cell_log_masses(d, width, sd)
    return points * shown_share(logm, points, theta) * ball_share(d, eps, sd)


def least_points(d: int, eps: float, width: float, sd: float, theta: float, threshold: float) -> float | None:
    """The least N with E(N, sd) >= ``threshold``, to 2 digits (None beyond
    :data:`MAX_POINTS`)."""
    logm = cell_log_masses(d, width, sd)
    B = ball_share(d, eps, sd)
    if B <= 0:
        return None

    def e(n: float) -> float:
        return n * shown_share(logm, n, theta) * B

    lo, hi = max(threshold, 1.0), max(threshold, 1.0)
    if e(lo) >= threshold:
        return lo
    while e(hi) < threshold:
        hi *= 4.0
        if hi > MAX_POINTS:
            return None
    for _ in range(60):
        if hi / lo < 1.002:
            break
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if e(mid) < threshold else (lo, mid)
    return hi


@dataclass(frozen=True)
class ClusterLimit:
    """The least cluster a release finds, at one spread.

    Attributes
    ----------
    sd : float
        The cluster's standard deviation along every axis.
    points : float or None
        The least number of points it must hold to be found (None: more
        than :data:`MAX_POINTS`).
    dbscan_points : float
        The least number exact DBSCAN needs at the same eps and MinPts (the
        centre's eps-ball holds MinPts).
    """

    sd: float
    points: float | None
    dbscan_points: float


def cluster_limits(
    d: int, eps: float, width: float, theta: float, threshold: float, min_samples: float
) -> tuple[ClusterLimit, ...]:
    """:class:`ClusterLimit` at each spread of :data:`SPREADS` (public inputs only)."""
    out = []
    for f in SPREADS:
        sd = eps * f
        B = ball_share(d, eps, sd)
        out.append(
            ClusterLimit(
                sd,
                least_points(d, eps, width, sd, theta, threshold),
                min_samples / B if B > 0 else math.inf,
            )
        )
    return tuple(out)


def _fraction(f: float) -> str:
    return f"eps/{round(1 / f)}"


def _count(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "more than 10^12"
    return f"{float(f'{v:.2g}'):,.0f}"


def limits_words(
    limits: tuple[ClusterLimit, ...],
    theta: float,
    threshold: float,
    length: Callable[[float], str] | None = None,
) -> str:
    """The limits as one line: "a Gaussian cluster ... is found from about
    290 points at sd 0.005 (eps/12), ...; exact DBSCAN finds it from 20, ...";
    ``length`` formats a standard deviation (km as "4.2 m" on the ground)."""
    fmt = length or "{:.3g}".format
    found = ", ".join(
        f"{_count(lim.points)} {'points ' if i == 0 else ''}at sd {fmt(lim.sd)} ({_fraction(f)})"
        for i, (f, lim) in enumerate(zip(SPREADS, limits))
    )
    exact = ", ".join(_count(lim.dbscan_points) for lim in limits)
    shown = (
        f"the release shows a cell only when its noisy count reaches theta={theta:g}, and "
        if math.isfinite(theta) and theta > 1
        else ""
    )
    return (
        f"a Gaussian cluster with standard deviation sd along every axis is found from about {found}; "
        f"exact DBSCAN finds it from {exact} ({shown}a core cell needs {threshold:.0f} points within eps)"
    )


__all__ = [
    "SPREADS",
    "ClusterLimit",
    "ball_share",
    "cell_log_masses",
    "centre_count",
    "cluster_limits",
    "least_points",
    "limits_words",
    "shown_share",
]
