"""Spans that released noise alone explains, dropped (post-processing).

A truncating (sparse) release publishes each empty cell with probability
P(Z >= theta), its value drawn from the noise's tail above theta. In high
dimension a few of those cells are core: a cluster's mass lies within
alpha of them, but more than alpha from the cluster's own core cells, so
they are never merged into it and each makes a span over no point
(docs/benchmarks.md, "Coarse alphas in 4-D to 8-D"). The density test
cannot tell them from the cluster (their neighbourhood is not empty); their
*own* released mass can: a span whose cells' released values sum to no
more than the 0.99 quantile of the sum of as many released empty cells,
and that lies within two alpha of a span above its own quantile (the
cluster whose mass made it core), is dropped here. The second condition
keeps faint clusters: where a cluster's cells hold fewer points than theta
(6-D wide blobs at the benchmark's alpha), its released cells read like
noise, but lie far from any other span (4.5-18 alpha against at most 1.2
alpha for spans over no point; tuning, seeds 0-2).

Everything read is the release and its public fields (kind, noise law and
scale, theta, the grid): post-processing, no privacy cost, the same noise
draws. The filter acts on sparse releases of discrete or continuous Laplace
noise only: a dense release publishes every cell (no released empty cells
to explain a span), a stability release never publishes an empty cell, and
the discrete Gaussian's tail sum has no closed law here (left alone).
"""

from __future__ import annotations

import math

import numpy as np

from ..cells.histogram import NoisyHistogram

#: The level of the filter: a span is kept only if as many released empty
#: cells reach its own released mass with probability below this.
SPAN_NOISE_LEVEL = 0.01
#: A span the noise could explain is dropped only if it lies within this
#: many alpha (centre to centre) of a span the noise cannot explain.
SATELLITE_REACH = 2.0
#: Whether the density test's spans are filtered (research may turn it off
#: to compare the same release with and without: ``research.span_noise_filter``).
ACTIVE = True


def empty_sum_quantile(
    noise: str, scale: float, theta: float, cells: np.ndarray, level: float
) -> np.ndarray | None:
    """The (1 - ``level``) quantile of the sum of ``cells`` (an int array,
    each >= 1) released empty cells of a sparse release: the least x with
    P(S <= x) >= 1 - level, S the sum of that many independent draws of
    Z | Z >= theta. Discrete Laplace (q = exp(-scale)): ceil(theta) + a
    Geometric(1 - q) on {0, 1, ...} each, S = k ceil(theta) + a negative
    binomial (k, 1 - q). Continuous Laplace: theta + Exp(scale) each, S = k
    theta + Gamma(k, 1 / scale). None where the law is not one of these
    (the discrete Gaussian, no noise) or theta < 0 (the tail is then not
    theta plus the law above 0). The quantiles are scipy.stats's
    ``nbinom.ppf`` and ``gamma.ppf`` bit for bit (:func:`_nbinom_ppf`,
    :func:`_gamma_ppf`)."""
    k = np.asarray(cells, dtype=np.int64)
    if not (theta >= 0 and math.isfinite(theta)) or not scale > 0 or not math.isfinite(scale):
        return None
    if noise == "discrete":
        q = math.exp(-scale)
        return k * math.ceil(theta) + _nbinom_ppf(1.0 - level, k, 1.0 - q)
    if noise == "laplace":
        return k * theta + _gamma_ppf(1.0 - level, k, 1.0 / scale)
    return None


# scipy.stats's import costs about 0.5 s of CPU (0.75 s against 0.17 s for
# scipy.special, measured in a fresh process), paid by every fresh process
# whose sparse release has spans (each ``dpdbscan fit`` from 4-D up) for
# two quantiles. Its ``ppf`` of these two laws, for the arguments met here
# (0 < q < 1, k >= 1 and 0 < p <= 1 or a scale > 0), is one ufunc of
# scipy.special plus a location of 0; those ufuncs are called directly,
# and scipy.stats only where that does not hold or the ufunc is not in
# scipy.special (in older scipy, 1.11 for one, the negative binomial's is in
# scipy.stats). tests/post/test_noise_spans.py checks both against
# scipy.stats bit for bit, so a scipy that computes them otherwise fails
# there.


def _nbinom_ppf(q: float, n: np.ndarray, p: float) -> np.ndarray:
    """``scipy.stats.nbinom.ppf(q, n, p)``, without importing scipy.stats
    where scipy.special holds the ufunc it calls."""
    try:
        from scipy.special._ufuncs import _nbinom_ppf as ufunc
    except ImportError:
        ufunc = None
    if ufunc is None or not (0.0 < q < 1.0 and 0.0 < p <= 1.0) or not bool(np.all(n > 0)):
        from scipy import stats

        return stats.nbinom.ppf(q, n, p)
    with np.errstate(over="ignore"):  # as scipy.stats's nbinom._ppf
        return ufunc(q, n, p) + 0  # + its location, 0


def _gamma_ppf(q: float, a: np.ndarray, scale: float) -> np.ndarray:
    """``scipy.stats.gamma.ppf(q, a, scale=scale)``, without importing
    scipy.stats: its ``_ppf`` is ``gammaincinv(a, q)``, times the scale,
    plus the location (0)."""
    if not (0.0 < q < 1.0 and scale > 0.0) or not bool(np.all(a > 0)):
        from scipy import stats

        return stats.gamma.ppf(q, a, scale=scale)
    from scipy.special import gammaincinv

    return gammaincinv(a, q) * scale + 0


def noise_spans(
    hist: NoisyHistogram,
    subcells: int,
    core_keys: np.ndarray,
    labels: np.ndarray,
    level: float = SPAN_NOISE_LEVEL,
) -> np.ndarray:
    """Which spans (a bool per span id) the release's noise alone explains:
    the released values of a span's cells (with sub-cells: of the distinct
    cells its core sub-cells lie in, ``core_keys`` being keys of
    ``hist.grid.subdivided(subcells)``) sum to at most the (1 - ``level``)
    quantile of as many released empty cells (:func:`empty_sum_quantile`),
    and the span lies within :data:`SATELLITE_REACH` alpha of a span whose
    mass is above its own quantile (a satellite of a cluster: a faint
    cluster far from any other keeps its span). All False where the filter
    does not act (not a sparse release, or a noise law it does not cover)."""
    n = int(labels.max()) + 1 if labels.size else 0
    none = np.zeros(n, dtype=bool)
    if hist.kind != "sparse" or n == 0:
        return none
    k = int(subcells)
    cells = core_keys if k == 1 else hist.grid.encode(hist.grid.subdivided(k).decode(core_keys) // k)
    # each (span, cell) once: several sub-cells of one cell count its value once
    order = np.lexsort((cells, labels))
    lab, cel = labels[order], cells[order]
    first = np.ones(lab.size, dtype=bool)
    first[1:] = (lab[1:] != lab[:-1]) | (cel[1:] != cel[:-1])
    lab, cel = lab[first], cel[first]
    mass = np.bincount(lab, weights=hist.value_at(cel).astype(np.float64), minlength=n)
    count = np.bincount(lab, minlength=n)
    sizes, where = np.unique(count, return_inverse=True)
    q = empty_sum_quantile(hist.noise, float(hist.scale), float(hist.theta), sizes, level)
    if q is None:
        return none
    low = mass <= np.asarray(q, dtype=np.float64)[where]
    if not low.any() or low.all():
        return none
    return low & _beside(hist, k, core_keys, labels, low)


def _beside(
    hist: NoisyHistogram, subcells: int, core_keys: np.ndarray, labels: np.ndarray, low: np.ndarray
) -> np.ndarray:
    """Which spans (a bool per span id) have a core (sub-)cell whose centre
    lies within :data:`SATELLITE_REACH` alpha of a core (sub-)cell centre of
    a span not in ``low``: a released noise cell is core only through mass
    within about alpha of it, which lies in such a span."""
    from scipy.spatial import cKDTree

    grid = hist.grid.subdivided(subcells)
    centres = grid.lower + (grid.decode(core_keys) + 0.5) * grid.width
    anchor = ~low[labels]
    reach = SATELLITE_REACH * float(hist.grid.eps)
    ask = ~anchor
    dist, _ = cKDTree(centres[anchor]).query(centres[ask], k=1, distance_upper_bound=reach)
    near = np.zeros(low.size, dtype=bool)
    near[labels[ask][np.isfinite(dist)]] = True
    return near


def without_noise_spans(
    hist: NoisyHistogram, subcells: int, core_keys: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``core_keys`` and ``labels`` without the spans :func:`noise_spans`
    finds, the others renumbered in their order (still by smallest cell)."""
    drop = noise_spans(hist, subcells, core_keys, labels) if ACTIVE else np.zeros(0, dtype=bool)
    if not drop.any():
        return core_keys, labels
    new = np.cumsum(~drop) - 1
    keep = ~drop[labels]
    return core_keys[keep], new[labels[keep]].astype(labels.dtype, copy=False)


__all__ = [
    "ACTIVE",
    "SATELLITE_REACH",
    "SPAN_NOISE_LEVEL",
    "empty_sum_quantile",
    "noise_spans",
    "without_noise_spans",
]
