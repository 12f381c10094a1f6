"""Distribution tests of the exact samplers and the empty-cell sampler.

Every randomised test states its false-failure rate. The workhorse,
:func:`_assert_pmf`, accepts a sample when (a) every bin count lies inside its
exact binomial acceptance interval at level ``RATE / (4 * bins)`` per tail
(union bound: <= RATE / 2) and (b) a chi-square goodness-of-fit test has
p-value above ``RATE / 2`` (bins with expected count >= 20, where the
chi-square approximation is good). So each call fails by chance with
probability about ``RATE`` = 1e-7; the file makes fewer than 100 such calls
(false-failure rate < 1e-5 for the file).

The samplers are exercised through their public functions only
(``_random.discrete_laplace`` etc.), so internals may be rewritten for speed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpdbscan.cells.grid import Grid
from dpdbscan.release.backends.base import CellCounts
from dpdbscan.release.histograms import ContinuousLaplace, DiscreteLaplace, sparse_histogram
from dpdbscan.release.histograms.sparse import released_empty_cells
from dpdbscan.release.samplers import integers as _random
from dpdbscan.release.samplers.integers import SecureSource, SeededSource

from stats import chi2_ok

RATE = 1e-7
N = 200_000
EPSILONS = [1.0, 0.5, 0.1, 2.0, 0.7]
SOURCES = ["secure", "seeded"]


def _source(kind: str, seed: int = 0):
    return SecureSource() if kind == "secure" else SeededSource(seed)


def _assert_pmf(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray, rate: float = RATE):
    """``samples`` follow ``pmf`` on ``support`` (probabilities outside the
    listed support are lumped into one "other" bin). See module docstring."""
    samples = np.asarray(samples).ravel()
    n = samples.size
    pmf = np.asarray(pmf, dtype=np.float64)
    other = max(0.0, 1.0 - pmf.sum())
    idx = np.searchsorted(support, samples)
    idx_c = np.minimum(idx, support.size - 1)
    hit = support[idx_c] == samples
    counts = np.bincount(idx_c[hit], minlength=support.size).astype(np.int64)
    counts = np.append(counts, n - hit.sum())
    probs = np.append(pmf, other)
    bins = probs.size
    a = rate / (4 * bins)
    lo = stats.binom.ppf(a, n, probs)
    hi = stats.binom.isf(a, n, probs)
    bad = np.flatnonzero((counts < lo) | (counts > hi))
    assert bad.size == 0, (
        f"bins {bad.tolist()} outside their exact binomial intervals: counts "
        f"{counts[bad].tolist()}, expected {(n * probs[bad]).round(1).tolist()}"
    )
    # chi-square on bins merged until each expects 20
    p, ok = chi2_ok(counts, probs, alpha=rate / 2)
    assert ok, f"chi-square p = {p:.3g}"


def _two_sided_support(q: float, n: int, mass: float = 1e-7):
    """Support -K..K of the discrete Laplace with tail mass below ``mass``/n."""
    k = int(math.ceil(math.log(mass * (1 + q) / (2 * n * 1.0)) / math.log(q))) + 1
    return np.arange(-k, k + 1)


# --------------------------------------------------------------------------- #
# epsilon as a fraction


@pytest.mark.parametrize(
    "eps,frac",
    [
        (1.0, Fraction(1)),
        (0.5, Fraction(1, 2)),
        (2.0, Fraction(2)),
        (0.1, Fraction(1, 10)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_rational_epsilon_keeps_simple_values(eps, frac):
    f = _random.rational_epsilon(eps)
    assert f == frac and f <= Fraction(eps)


def test_rational_epsilon_rounds_down():
    # float(0.7) is just below 7/10, so 7/10 would round *up*: the helper must not use it.
    f = _random.rational_epsilon(0.7)
    assert Fraction(0.7) < Fraction(7, 10)
    assert f <= Fraction(0.7) and Fraction(0.7) - f < Fraction(1, 1 << 20)
    assert f.denominator <= 1 << 20
    with pytest.raises(ValueError, match="too small"):
        _random.rational_epsilon(1e-9)


@given(st.floats(min_value=1e-5, max_value=50.0, allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_rational_epsilon_property(eps):
    f = _random.rational_epsilon(eps)
    assert 0 < f <= Fraction(eps)
    assert Fraction(eps) - f <= Fraction(1, 1 << 20)
    assert f.denominator <= 1 << 20


# --------------------------------------------------------------------------- #
# exact integer samplers


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("eps", EPSILONS)
def test_discrete_laplace_pmf(eps, kind):
    frac = _random.rational_epsilon(eps)
    q = math.exp(-float(frac))
    z = _random.discrete_laplace(_source(kind, 1), N, frac)
    assert z.dtype.kind == "i" and z.shape == (N,)
    support = _two_sided_support(q, N)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    _assert_pmf(z, support, pmf)


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("eps", [1.0, 0.1, 0.7])
def test_discrete_geometric_pmf(eps, kind):
    frac = _random.rational_epsilon(eps)
    q = math.exp(-float(frac))
    g = _random.discrete_geometric(_source(kind, 2), N, frac)
    support = np.arange(0, _two_sided_support(q, N)[-1] + 1)
    _assert_pmf(g, support, (1 - q) * q**support)


@pytest.mark.parametrize("kind", SOURCES)
def test_geometric_exp_neg1_pmf(kind):
    v = _random.geometric_exp_neg1(_source(kind, 3), N)
    support = np.arange(0, 25)
    _assert_pmf(v, support, (1 - math.exp(-1)) * np.exp(-support.astype(float)))


@pytest.mark.parametrize("kind", SOURCES)
def test_bernoulli_exp_neg(kind):
    """Bernoulli(exp(-num/den)) for a mix of (num, den) in one call per den."""
    src = _source(kind, 4)
    per = 40_000
    cases = {1: [0, 1], 3: [0, 1, 2, 3], 7: [5], 1 << 20: [1, 734003, 1 << 20]}
    n_checks = sum(len(v) for v in cases.values())
    for den, nums in cases.items():
        num = np.repeat(np.asarray(nums, dtype=np.uint64), per)
        out = _random.bernoulli_exp_neg(src, num, den)
        assert out.dtype == bool and out.size == num.size
        for j, a in enumerate(nums):
            hits = int(out[j * per : (j + 1) * per].sum())
            p = math.exp(-a / den)
            if a == 0:
                assert hits == per  # exp(0) = 1 exactly
                continue
            lo = stats.binom.ppf(RATE / (2 * n_checks), per, p)
            hi = stats.binom.isf(RATE / (2 * n_checks), per, p)
            assert lo <= hits <= hi, (den, a, hits, per * p)


@pytest.mark.parametrize("kind", SOURCES)
def test_randbelow_uniform(kind):
    src = _source(kind, 5)
    x = _random.randbelow(src, np.full(N, 7, dtype=np.uint64))
    _assert_pmf(x, np.arange(7), np.full(7, 1 / 7))
    # a bound where 1/4 of the 63-bit words are rejected: six equal ranges
    m = 3 << 61
    y = _random.randbelow(src, np.full(N // 4, m, dtype=np.uint64))
    assert int(y.max()) < m
    _assert_pmf(y // np.uint64(1 << 60), np.arange(6, dtype=np.uint64), np.full(6, 1 / 6))
    # mixed bounds in one call, including 1
    bounds = np.tile(np.array([1, 2, 5], dtype=np.uint64), N // 3)
    z = _random.randbelow(src, bounds)
    assert z.shape == bounds.shape and np.all(z < bounds)
    assert np.all(z[bounds == 1] == 0)
    _assert_pmf(z[bounds == 5], np.arange(5, dtype=np.uint64), np.full(5, 0.2))


# --------------------------------------------------------------------------- #
# the noise classes used by the histograms


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("eps,theta", [(1.0, 1), (1.0, 3), (0.5, 2.5), (0.7, 0), (2.0, 1)])
def test_discrete_laplace_sample_tail_is_conditional_law(eps, theta, kind):
    """sample_tail(theta) ~ Z | Z >= theta for the exact discrete Laplace."""
    noise = DiscreteLaplace(eps)
    q = math.exp(-noise.epsilon)
    k = math.ceil(theta)
    x = noise.sample_tail(_source(kind, 6), N // 2, theta)
    assert x.min() >= k
    support = np.arange(k, k + _two_sided_support(q, N)[-1] + 1)
    _assert_pmf(x, support, (1 - q) * q ** (support - k))


def test_discrete_laplace_sample_tail_negative_theta():
    noise = DiscreteLaplace(1.0)
    q = math.exp(-noise.epsilon)
    k = -2
    try:
        x = noise.sample_tail(SeededSource(7), N // 2, k)
    except ValueError:
        return  # refusing theta < 0 is a fix
    support = np.arange(k, 40)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    _assert_pmf(x, support, pmf / noise.tail(k))


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("theta", [-3, -1, 0, 1, 2.5, 10])
def test_discrete_laplace_tail_formula(eps, theta):
    """P(Z >= theta) against a direct sum of the pmf (deterministic)."""
    noise = DiscreteLaplace(eps)
    q = math.exp(-noise.epsilon)
    z = np.arange(math.ceil(theta), math.ceil(theta) + 20_000)
    direct = float(((1 - q) / (1 + q) * q ** np.abs(z)).sum())
    assert noise.tail(theta) == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("eps", [1.0, 0.1])
def test_continuous_laplace(eps, kind):
    """Kolmogorov-Smirnov at level RATE for the sample and the tail sampler."""
    noise = ContinuousLaplace(eps)
    src = _source(kind, 8)
    x = noise.sample(src, N)
    assert np.all(np.isfinite(x))
    assert stats.kstest(x, stats.laplace(scale=1 / eps).cdf).pvalue > RATE
    t = noise.sample_tail(src, N // 2, 2.0)
    assert t.min() >= 2.0
    assert stats.kstest(t - 2.0, stats.expon(scale=1 / eps).cdf).pvalue > RATE
    assert noise.tail(2.0) == pytest.approx(stats.laplace(scale=1 / eps).sf(2.0))
    assert noise.tail(-1.0) == pytest.approx(stats.laplace(scale=1 / eps).sf(-1.0))
    with pytest.raises(ValueError):
        noise.sample_tail(src, 3, -1.0)


# --------------------------------------------------------------------------- #
# Gamma: the Laplace concentration bound holds for discrete Laplace noise


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_discrete_laplace_mgf_is_dominated(eps):
    """E[exp(lam Z)] <= 1 / (1 - lam^2/eps^2) for |lam| < eps (deterministic):
    the fact docs/privacy.md uses to carry the Chan-Shi-Song bound over."""
    q = math.exp(-eps)
    lam = np.linspace(-eps, eps, 2001)[1:-1]
    disc = (1 - q) ** 2 / ((1 - q) ** 2 - 2 * q * (np.cosh(lam) - 1))
    lap = 1 / (1 - lam**2 / eps**2)
    assert np.all(disc <= lap * (1 + 1e-12))
    # the closed form of the MGF against a direct sum
    z = np.arange(-4000, 4001)
    for t in lam[::250]:
        if abs(t) < 0.9 * eps:
            direct = float(((1 - q) / (1 + q) * np.exp(t * z - eps * np.abs(z))).sum())
            closed = (1 - q) ** 2 / ((1 - q) ** 2 - 2 * q * (math.cosh(t) - 1))
            assert direct == pytest.approx(closed, rel=1e-8)


def test_chan_shi_song_bound_holds_for_discrete_noise():
    """P(|sum of kappa discrete Laplace| > bound(beta0)) <= beta0, checked with
    a Clopper-Pearson lower bound at level RATE (fails by chance <= RATE)."""
    eps, kappa, beta0, runs = 1.0, 21, 0.05, 20_000
    frac = _random.rational_epsilon(eps)
    z = _random.discrete_laplace(SeededSource(9), kappa * runs, frac).reshape(runs, kappa)
    log_term = math.log(2 / beta0)
    bound = 2 * math.sqrt(2) / eps * max(math.sqrt(kappa * log_term), log_term)
    exceed = int((np.abs(z.sum(axis=1)) > bound).sum())
    lower = stats.beta.ppf(RATE, exceed, runs - exceed + 1) if exceed else 0.0
    assert lower <= beta0


# --------------------------------------------------------------------------- #
# the empty cells of the sparse histogram


def _grid2(side: int) -> Grid:
    g = Grid([0.0, 0.0], [side - 0.5, side - 0.5], math.sqrt(2.0))
    assert g.shape == (side, side)
    return g


def _line(n_cells: int) -> Grid:
    """A 1-D grid of ``n_cells`` unit cells (keys = linear indices)."""
    g = Grid([0.0], [n_cells - 0.5], 1.0)
    assert g.shape == (n_cells,)
    return g


PATTERN = np.array([0, 1, 3, 0, 2, 0])  # true counts of one block of 6 cells


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("eps,theta", [(1.0, 2.0), (0.5, 0.0)])
def test_sparse_histogram_equals_truncated_dense_histogram(eps, theta, kind):
    """End to end on a tiny universe: the sparse histogram of a block of 6
    cells with counts (0, 1, 3, 0, 2, 0) has the law of the naive histogram
    truncated below theta: cell c reads x_c + Z_c if that is >= theta and 0
    (not released) otherwise, independently. The grid repeats the block
    20,000 times; cells are independent, so one release gives 20,000 i.i.d.
    draws of the block. Checked: every cell's law (not released, theta ..
    theta + 6, above; 6 calls) and the joint release pattern of the block
    (64 outcomes, the product of the per-cell release probabilities)."""
    reps = 20_000
    grid = _line(PATTERN.size * reps)
    counts = np.tile(PATTERN, reps)
    occ = np.flatnonzero(counts)
    cells = CellCounts(occ.astype(np.int64), counts[occ].astype(np.int64))
    noise = DiscreteLaplace(eps)
    hist = sparse_histogram(grid, cells, noise, _source(kind, 21), theta, noise.epsilon, 0.0)
    assert np.array_equal(hist.keys, np.unique(hist.keys)) and np.all(hist.values >= theta)
    value = np.zeros(grid.n_cells, dtype=np.int64)
    released = np.zeros(grid.n_cells, dtype=bool)
    value[hist.keys], released[hist.keys] = hist.values, True
    value, released = value.reshape(reps, -1), released.reshape(reps, -1)

    q = math.exp(-noise.epsilon)

    def pmf(z):  # P(Z = z), exact discrete Laplace at the rounded epsilon
        return (1 - q) / (1 + q) * q ** np.abs(z)

    k = math.ceil(theta)
    p_rel = []
    for c, x in enumerate(PATTERN):
        v = np.arange(k, k + 7)
        probs_v = pmf(v - x)
        p_release = sum(pmf(z) for z in range(k - x, k - x + 4000))
        p_rel.append(p_release)
        obs = np.where(released[:, c], np.minimum(value[:, c], k + 7) - k + 1, 0)
        probs = np.concatenate([[1 - p_release], probs_v, [p_release - probs_v.sum()]])
        _assert_pmf(obs, np.arange(9), probs)
    pattern = released @ (1 << np.arange(PATTERN.size))
    bits = (np.arange(64)[:, None] >> np.arange(PATTERN.size)) & 1
    joint = np.prod(np.where(bits == 1, p_rel, 1 - np.array(p_rel)), axis=1)
    _assert_pmf(pattern, np.arange(64), joint)


def test_released_empty_cells_never_occupied_and_sorted():
    """Heavy occupancy (90 of 100 cells): only empty cells are released, in
    key order, and with p near 1 (theta = 0, epsilon = 5) nearly all of them."""
    grid = _line(100)
    rng = np.random.default_rng(0)
    occupied = np.sort(rng.choice(100, size=90, replace=False).astype(np.int64))
    empty = np.setdiff1d(np.arange(100), occupied)
    noise = DiscreteLaplace(5.0)
    incl = np.zeros(10, dtype=np.int64)
    runs = 2_000
    src = SecureSource()
    for _ in range(runs):
        keys = released_empty_cells(grid, occupied, noise, 0.0, src)
        assert np.all(np.diff(keys) > 0) and np.all(np.isin(keys, empty))
        incl += np.isin(empty, keys)
    p = noise.tail(0.0)
    lo, hi = stats.binom.ppf(RATE / 20, runs, p), stats.binom.isf(RATE / 20, runs, p)
    assert np.all((incl >= lo) & (incl <= hi)), incl


def _grid10() -> Grid:
    """d = 10, 1000 cells per side: |X| = 1e30 (packed wide keys)."""
    g = Grid(np.zeros(10), np.full(10, 999.5), math.sqrt(10.0))
    assert g.n_cells == 10**30 and g.wide
    return g


def test_sparse_histogram_astronomical_universe():
    """|X| = 1e30 (wide keys): each empty cell is released with probability
    p = P(Z >= 58) exactly, so their number is Binomial(M, p), checked with
    Poisson(Mp) bounds at RATE (the two laws are within total variation p <
    1e-26). Released empty cells are never occupied ones; keys are sorted and
    distinct; each coordinate of the released empty cells is uniform over
    0..999 (ten deciles per dimension, 10 calls); occupied cells are handled."""
    grid = _grid10()
    noise = DiscreteLaplace(1.0)
    theta = 58.0
    rng = np.random.default_rng(2)
    occ = np.unique(grid.encode(rng.integers(0, 1000, size=(500, 10))))
    cells = CellCounts(occ, np.full(occ.size, 200, dtype=np.int64))
    hist = sparse_histogram(grid, cells, noise, SeededSource(11), theta, noise.epsilon, 0.0)
    assert np.all(hist.values >= theta)
    empty = ~np.isin(hist.keys, occ)
    lam = (grid.n_cells - occ.size) * noise.tail(theta)
    assert 1e4 < lam < 1e6
    lo, hi = stats.poisson.ppf(RATE / 2, lam), stats.poisson.isf(RATE / 2, lam)
    assert lo <= int(empty.sum()) <= hi, (int(empty.sum()), lam)
    # every occupied cell has count 200 >> theta: released unless noise < -142 (prob ~ e^-142)
    assert np.isin(occ, hist.keys).all()
    assert np.array_equal(hist.keys, np.sort(hist.keys))
    assert np.unique(hist.keys).size == hist.keys.size
    coords = grid.decode(hist.keys[empty])
    assert grid.valid(coords).all()
    for i in range(10):
        _assert_pmf(coords[:, i] // 100, np.arange(10), np.full(10, 0.1))
