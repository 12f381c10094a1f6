"""The density test's filter of spans that the release's noise alone
explains (dpdbscan.post.noisespans): its quantile against the exact law of
released empty cells, its choice of spans against a direct computation, and
where it must not act."""

import math

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cells.grid import Grid
from dpdbscan.cells.histogram import NoisyHistogram
from dpdbscan.post.noisespans import (
    SATELLITE_REACH,
    SPAN_NOISE_LEVEL,
    empty_sum_quantile,
    noise_spans,
    without_noise_spans,
)
from dpdbscan.research import span_noise_filter


def _released_empty_pmf(scale: float, theta: float, top: int) -> np.ndarray:
    """P(V = v) for v = 0..top of one released empty cell V = Z | Z >= theta,
    Z the discrete Laplace at ``scale``, from the two-sided law itself."""
    q = math.exp(-scale)
    z = np.arange(top + 1)
    p = np.where(z >= theta, (1 - q) / (1 + q) * q ** z.astype(float), 0.0)
    return p / ((1 - q) / (1 + q) * q ** math.ceil(theta) / (1 - q))


def _exact_quantile(scale: float, theta: float, k: int, level: float) -> int:
    """The least x with P(S <= x) >= 1 - level, S the sum of k released empty
    cells, by convolving one cell's law k times."""
    one = _released_empty_pmf(scale, theta, 400)
    law = np.array([1.0])
    for _ in range(k):
        law = np.convolve(law, one)
    return int(np.flatnonzero(np.cumsum(law) >= 1 - level - 1e-12)[0])


@pytest.mark.parametrize("scale,theta", [(1.0, 3.0), (0.5, 7.0), (2.0, 1.0), (1.0, 2.5)])
def test_discrete_quantile_is_the_exact_law(scale, theta):
    k = np.arange(1, 9)
    got = empty_sum_quantile("discrete", scale, theta, k, SPAN_NOISE_LEVEL)
    want = [_exact_quantile(scale, theta, int(x), SPAN_NOISE_LEVEL) for x in k]
    assert got.tolist() == want


def test_laplace_quantile_is_the_gamma_law():
    # k theta + Gamma(k, 1 / eps): its CDF for integer k in closed form
    eps, theta = 0.7, 4.0
    k = np.arange(1, 7)
    got = empty_sum_quantile("laplace", eps, theta, k, 0.01)
    for kk, x in zip(k.tolist(), got.tolist()):
        y = eps * (x - kk * theta)
        cdf = 1.0 - math.exp(-y) * sum(y**i / math.factorial(i) for i in range(kk))
        assert cdf == pytest.approx(0.99, abs=1e-9)


def test_no_quantile_where_the_law_is_not_covered():
    k = np.array([1, 2])
    assert empty_sum_quantile("gaussian", 4.0, 3.0, k, 0.01) is None
    assert empty_sum_quantile("discrete", 1.0, -1.0, k, 0.01) is None


@pytest.mark.parametrize("level", [0.01, 0.05, 0.5, 1e-6])
def test_quantiles_are_scipy_stats_bit_for_bit(level):
    # the quantiles call scipy.special's ufuncs where scipy.stats would
    # (its import costs a fresh process about 0.5 s of CPU): the same floats
    from scipy import stats

    k = np.array([1, 2, 3, 5, 8, 13, 40, 117, 1000, 25_000], dtype=np.int64)
    for scale in (1e-3, 0.05, 0.3, 0.5, 1.0, 2.0, 7.5, 40.0, 800.0):
        for theta in (0.0, 1.0, 2.5, 3.0, 11.0):
            want = k * math.ceil(theta) + stats.nbinom.ppf(1.0 - level, k, 1.0 - math.exp(-scale))
            got = empty_sum_quantile("discrete", scale, theta, k, level)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
            want = k * theta + stats.gamma.ppf(1.0 - level, k, scale=1.0 / scale)
            got = empty_sum_quantile("laplace", scale, theta, k, level)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_quantiles_outside_the_ufuncs_domain_are_scipy_stats():
    # p = 0 (a scale so small that exp(-scale) rounds to 1) and level 0 or 1:
    # scipy.stats's answers (nan, the support's ends), as before
    from scipy import stats

    from dpdbscan.post import noisespans

    k = np.array([1, 4], dtype=np.int64)
    for q, p in ((0.99, 0.0), (0.0, 0.5), (1.0, 0.5)):
        want = stats.nbinom.ppf(q, k, p)
        assert noisespans._nbinom_ppf(q, k, p).tobytes() == want.tobytes()
    for q in (0.0, 1.0):
        want = stats.gamma.ppf(q, k, scale=2.0)
        assert noisespans._gamma_ppf(q, k, 2.0).tobytes() == want.tobytes()


NO_STATS_FIT = """
import sys, warnings
import numpy as np
from dpdbscan import DPDBSCAN
from dpdbscan.post import noisespans
warnings.simplefilter("ignore")
calls = []
filter_ = noisespans.empty_sum_quantile
noisespans.empty_sum_quantile = lambda *a: calls.append(1) or filter_(*a)
rng = np.random.default_rng(0)
centres = rng.random((6, 4)) * 0.7 + 0.15
X = np.concatenate([rng.normal(centres[rng.integers(0, 6, 9000)], 0.01), rng.random((1000, 4))])
X = np.clip(X, 0, 1)
est = DPDBSCAN(0.03, min_samples=20, epsilon=1.0, bounds=(0.0, 1.0), random_state=0).fit(X)
print(est.histogram_.kind, len(calls), "scipy.stats" in sys.modules)
"""


def test_a_4d_sparse_fit_filters_its_spans_without_importing_scipy_stats():
    import subprocess
    import sys

    import scipy.special._ufuncs

    # in older scipy (1.11, the oldest supported) the negative binomial's ufunc is in scipy.stats
    stats_needed = not hasattr(scipy.special._ufuncs, "_nbinom_ppf")
    out = subprocess.run([sys.executable, "-c", NO_STATS_FIT], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["sparse", "1", str(stats_needed)]


def _sparse(grid: Grid, cells: dict, kind: str = "sparse", noise: str = "discrete") -> NoisyHistogram:
    keys = grid.encode(np.array(list(cells), dtype=np.int64))
    order = np.argsort(keys)
    values = np.array(list(cells.values()), dtype=np.int64)[order]
    return NoisyHistogram(grid, kind, values, keys[order], 3.0, noise, 1.0, 1.0, 0.0)


def test_the_spans_dropped_are_a_direct_computation():
    # spans on sub-cells (k = 2): a span's mass is its distinct cells' values
    rng = np.random.default_rng(3)
    grid = Grid(np.zeros(2), np.ones(2), 0.1, 4.0)
    coords = {(int(a), int(b)) for a, b in rng.integers(0, 9, size=(50, 2))}
    vals = 3 + rng.geometric(0.6, size=len(coords)) - 1 + 20 * (rng.random(len(coords)) < 0.2)
    cells = {c: int(v) for c, v in zip(sorted(coords), vals)}
    hist = _sparse(grid, cells)
    fine = grid.subdivided(2)
    sub = np.array([(2 * a + i, 2 * b + j) for a, b in cells for i in (0, 1) for j in (0, 1)])
    sub = sub[rng.random(len(sub)) < 0.4]
    keys = np.sort(fine.encode(sub))
    labels = rng.integers(0, 12, size=keys.size)
    labels = np.unique(labels, return_inverse=True)[1].ravel()
    # and a noise-like span far from every other: kept (a faint cluster)
    cells[(14, 14)] = 3
    hist = _sparse(grid, cells)
    keys = np.append(keys, fine.encode(np.array([[28, 28]])))
    labels = np.append(labels, labels.max() + 1)
    got = noise_spans(hist, 2, keys, labels)
    parent = {tuple(c) for c in fine.decode(keys) // 2}
    assert parent <= set(cells)
    n = int(labels.max()) + 1
    low = np.zeros(n, dtype=bool)
    for s in range(n):
        mine = {tuple(c) for c in fine.decode(keys[labels == s]) // 2}
        low[s] = sum(cells[c] for c in mine) <= _exact_quantile(1.0, 3.0, len(mine), SPAN_NOISE_LEVEL)
    # ... and within 2 alpha (centre to centre) of a core sub-cell of a span that is not low
    centres = (fine.decode(keys) + 0.5) * fine.width
    dist = np.sqrt(((centres[:, None, :] - centres[None, :, :]) ** 2).sum(-1))
    for s in range(n):
        near = (dist[labels == s][:, ~low[labels]] <= SATELLITE_REACH * grid.eps).any()
        assert got[s] == (low[s] and bool(near))
    assert got.any() and not got.all() and (low & ~got).any()
    kept_keys, kept_labels = without_noise_spans(hist, 2, keys, labels)
    assert np.array_equal(kept_keys, keys[~got[labels]])
    assert int(kept_labels.max()) + 1 == int((~got).sum())
    # the kept spans keep their order (numbered by smallest cell)
    assert np.array_equal(np.unique(kept_labels), np.arange(int((~got).sum())))


@pytest.mark.parametrize(
    "kind,noise", [("dense", "discrete"), ("stability", "discrete"), ("sparse", "gaussian")]
)
def test_the_filter_does_not_act_there(kind, noise):
    # dense: every cell is released; stability: no empty cell is; the Gaussian's tail sum: not covered
    grid = Grid(np.zeros(2), np.ones(2), 0.1, 4.0)
    cells = {(1, 1): 3, (2, 2): 100}  # a noise-like cell beside a cluster's
    hist = _sparse(grid, cells, "sparse", noise)
    if kind != "sparse":
        hist = NoisyHistogram(grid, kind, hist.values, hist.keys, 3.0, noise, 1.0, 1.0, 0.0)
    keys, labels = hist.keys, np.array([0, 1])
    assert not noise_spans(hist, 1, keys, labels).any()
    with_spans = NoisyHistogram(grid, "sparse", hist.values, hist.keys, 3.0, "discrete", 1.0, 1.0, 0.0)
    assert noise_spans(with_spans, 1, keys, labels).tolist() == [True, False]


def _blobs(n: int, d: int, seed: int) -> np.ndarray:
    """The benchmark's blobs (benchmarks/blobs_nd.py): 30 Gaussian blobs of
    sigma 0.01 (90%) and a uniform background, clipped to [0, 1]^d."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.15, 0.85, size=(30, d))
    n_bl = n - round(0.1 * n)
    X = np.empty((n, d))
    X[:n_bl] = centres[rng.integers(0, 30, size=n_bl)] + rng.normal(0.0, 0.01, size=(n_bl, d))
    X[n_bl:] = rng.uniform(0.0, 1.0, size=(n - n_bl, d))
    return np.clip(X, 0.0, 1.0)


def test_a_4d_sparse_release_loses_exactly_its_noise_spans():
    # 4-D at alpha 0.06 (twice the benchmark's), released sparse: spans over
    # no point, made by released empty cells within alpha of a cluster's mass
    X = _blobs(20_000, 4, 0)
    kw = dict(min_samples=20, epsilon=1.0, bounds=(0.0, 1.0), histogram="sparse", random_state=0)
    with span_noise_filter(False):
        raw = DPDBSCAN(0.06, **kw).fit(X)
    est = DPDBSCAN(0.06, **kw).fit(X)
    assert np.array_equal(raw.histogram_.values, est.histogram_.values)  # the same release
    s = raw.spans_
    drop = noise_spans(raw.histogram_, 1, s.core_keys, s.labels)
    assert drop.sum() >= 5
    assert est.spans_.n_spans == s.n_spans - int(drop.sum())
    assert np.array_equal(est.spans_.core_keys, s.core_keys[~drop[s.labels]])
    # the spans dropped held (nearly) no point of X; the others are unchanged
    held = np.unique(raw.predict(X))
    assert np.isin(np.flatnonzero(drop), held).sum() <= drop.sum() // 4
    kept = np.flatnonzero(~drop)
    for new, old in enumerate(kept.tolist()):
        assert np.array_equal(est.spans_.core_keys[est.spans_.labels == new], s.core_keys[s.labels == old])


def test_a_small_2d_place_in_a_sparse_release_is_kept():
    # a 2-D sparse release: a place of 40 points in one spot, a few hundred
    # points of background; the place's span has its own mass, far above
    # what released empty cells reach
    rng = np.random.default_rng(1)
    place = np.array([0.5, 0.5]) + rng.normal(0, 0.0005, size=(40, 2))
    X = np.vstack([place, rng.uniform(0, 1, size=(300, 2))])
    kw = dict(min_samples=20, epsilon=1.0, bounds=(0.0, 1.0), histogram="sparse", random_state=2)
    with span_noise_filter(False):
        raw = DPDBSCAN(0.005, **kw).fit(X)
    est = DPDBSCAN(0.005, **kw).fit(X)
    assert est.histogram_.kind == "sparse"
    assert raw.spans_.n_spans >= 1
    assert np.array_equal(est.spans_.core_keys, raw.spans_.core_keys)
    assert (est.predict(place) >= 0).mean() > 0.9
