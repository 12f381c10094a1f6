"""The exact discrete Gaussian: sampler, tail sampler, the float law, the
exact tail probability of the sparse histogram's skipping, and the noise
class (``dpdbscan.release.samplers.gaussian``, ``_gaussian_law``, ``_gaussian_tail``,
``histograms.countnoise.DiscreteGaussian``).

False-failure rate: every statistical check is :func:`stats.assert_fits`
(exact binomial bounds on every bin and a chi-square test) or one exact
binomial interval, each at RATE = 1e-7; the file makes fewer than 60 such
checks, so it fails by chance with probability below 1e-5. The reference
probabilities are computed here, independently of the code under test:
direct sums of ``exp(-k^2 / (2 sigma^2))`` in numpy, or in :mod:`decimal`
at 100 digits. Seeds are fixed for reproducibility.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpdbscan.laws import discretegaussian as law
from dpdbscan.release.histograms import countnoise as noise_mod
from dpdbscan.release.histograms.countnoise import DiscreteGaussian
from dpdbscan.release.samplers import gaussian as G
from dpdbscan.release.samplers import skipping as B
from dpdbscan.release.samplers.gaussian_tail import GaussianTailProbability, tail_interval
from dpdbscan.release.samplers.integers import SecureSource, SeededSource

from stats import assert_fits

RATE = 1e-7


def _source(kind: str, seed: int = 0):
    return SecureSource() if kind == "secure" else SeededSource(seed)


def weights(sigma2: float, ks: np.ndarray) -> np.ndarray:
    """exp(-k^2 / (2 sigma^2)) in float (reference, not the code under test)."""
    return np.exp(-(ks.astype(np.float64) ** 2) / (2.0 * sigma2))


def pmf_bins(sigma2: float, edges: np.ndarray, lo: int | None = None) -> np.ndarray:
    """Exact-law probabilities of [edges[i], edges[i+1]) for N_Z(0, sigma^2)
    (restricted to k >= lo when given), by direct summation far into the tails."""
    s = math.sqrt(sigma2)
    reach = int(40 * s) + 50 + (abs(lo) if lo is not None else 0)
    ks = np.arange(-reach, reach + 1)
    if lo is not None:
        ks = ks[ks >= lo]
    w = weights(sigma2, ks)
    w /= w.sum()
    idx = np.searchsorted(edges, ks, side="right") - 1
    inside = (idx >= 0) & (idx < edges.size - 1)
    return np.bincount(idx[inside], weights=w[inside], minlength=edges.size - 1)


def check_law(z: np.ndarray, sigma2: float, lo: int | None = None, width: int = 1) -> None:
    """``z`` follows N_Z(0, sigma^2) (conditioned on >= lo): bins of ``width``
    integers over the bulk, plus the two outer tails as one bin each."""
    s = math.sqrt(sigma2)
    start = lo if lo is not None else -int(6 * s) - 2
    stop = max(start, 0) + int(6 * s) + 3
    inner = np.arange(start, stop + width, width)
    edges = np.concatenate(([-(1 << 62)], inner, [1 << 62])) if lo is None else np.append(inner, 1 << 62)
    probs = pmf_bins(sigma2, edges, lo)
    counts = np.bincount(np.searchsorted(edges, z, side="right") - 1, minlength=edges.size - 1)
    assert counts.size == probs.size
    assert_fits(counts, probs / probs.sum())


# --------------------------------------------------------------------------- #
# the two-sided sampler

SIGMA2S = [Fraction(1, 4), Fraction(1), Fraction(2, 3), Fraction(100), Fraction(10**4)]


@pytest.mark.parametrize("sigma2", SIGMA2S, ids=str)
@pytest.mark.parametrize("kind", ["secure", "seeded"])
def test_discrete_gaussian_pmf(sigma2, kind):
    """200,000 draws against the exact pmf, sigma from 0.5 to 100."""
    z = G.discrete_gaussian(_source(kind, 1), 200_000, sigma2)
    assert z.dtype == np.int64 and z.size == 200_000
    check_law(z, float(sigma2), width=1 if sigma2 <= 100 else 10)


@pytest.mark.parametrize("sigma2", [Fraction(10**6), G.rational_sigma2(12345.678901)], ids=str)
def test_discrete_gaussian_pmf_large_sigma(sigma2):
    """sigma = 1000 and a rounded non-integer sigma^2: bins of width sigma/10."""
    assert G.acceptance_is_fast(sigma2)
    z = G.discrete_gaussian(SeededSource(2), 200_000, sigma2)
    check_law(z, float(sigma2), width=max(1, int(math.sqrt(sigma2) / 10)))


def test_discrete_gaussian_is_symmetric_and_sized():
    assert G.discrete_gaussian(SeededSource(0), 0, Fraction(1)).size == 0
    z = G.discrete_gaussian(SeededSource(3), 3 * (1 << 21) + 5, Fraction(9))  # several blocks
    assert z.size == 3 * (1 << 21) + 5
    n_pos, n_neg = int((z > 0).sum()), int((z < 0).sum())
    assert stats.binomtest(n_pos, n_pos + n_neg, 0.5).pvalue > RATE


def test_slow_path_alone_is_exact(monkeypatch):
    """With the vectorised acceptance switched off, every proposal is decided
    on Python integers (CKS Algorithm 1 with a lazily refined uniform)."""
    monkeypatch.setattr(G, "_FAST_DEN", 0)
    calls = {"n": 0}
    slow = G._bernoulli_exp_neg_int

    def counting(*a):
        calls["n"] += 1
        return slow(*a)

    monkeypatch.setattr(G, "_bernoulli_exp_neg_int", counting)
    for sigma2 in (Fraction(2, 3), Fraction(25)):
        assert not G.acceptance_is_fast(sigma2)
        n = 20_000
        z = G.discrete_gaussian(SeededSource(4), n, sigma2)
        assert calls["n"] >= n
        check_law(z, float(sigma2))


def test_odd_sigma2_takes_the_exact_slow_path():
    """A sigma^2 whose acceptance denominator exceeds 2^53 is still exact."""
    sigma2 = Fraction(12345678901, 10**6)
    assert not G.acceptance_is_fast(sigma2)
    z = G.discrete_gaussian(SeededSource(5), 20_000, sigma2)
    check_law(z, float(sigma2), width=10)


@pytest.mark.parametrize(
    "r, den", [(0, 8), (1, 8), (7, 8), (3, 1000003), ((1 << 53) - 2, (1 << 53) - 1), (123456789, 1 << 40)]
)
@pytest.mark.parametrize("forced", [False, True])
def test_exp_neg_frac_is_bernoulli_exp(r, den, forced, monkeypatch):
    """Bernoulli(exp(-r/den)) from one word by inversion; ``forced`` widens
    the undecided band so that every sample is finished on Python integers."""
    if forced:
        monkeypatch.setattr(G, "_BAND", 2.0**60)
    n = 4_000 if forced else 400_000
    hits = int(G._exp_neg_frac(SeededSource(6), np.full(n, r, dtype=np.int64), den).sum())
    p = math.exp(-r / den)
    if p == 1.0:
        assert hits == n
    else:
        assert stats.binomtest(hits, n, p).pvalue > RATE


def test_exp_neg_integer_is_exp_minus_k():
    k = np.repeat(np.arange(5), 100_000)
    ok = G._exp_neg_integer(SeededSource(7), k)
    assert ok[:100_000].all()
    for j in range(1, 5):
        hits = int(ok[j * 100_000 : (j + 1) * 100_000].sum())
        assert stats.binomtest(hits, 100_000, math.exp(-j)).pvalue > RATE / 4


def test_bad_sigma2_is_refused():
    for bad in (0, -1, Fraction(-1, 2)):
        with pytest.raises(ValueError, match="sigma"):
            G.discrete_gaussian(SeededSource(0), 5, bad)
    with pytest.raises(ValueError, match="k >= 0"):
        G.discrete_gaussian_tail(SeededSource(0), 5, Fraction(1), -1)


# --------------------------------------------------------------------------- #
# the tail sampler Z | Z >= k

TAIL_CASES = [
    (Fraction(1), 0),
    (Fraction(1), 3),
    (Fraction(1, 4), 2),
    (Fraction(2, 3), 1),
    (Fraction(100), 0),
    (Fraction(100), 10),
    (Fraction(100), 35),
    (Fraction(10**4), 250),
]


@pytest.mark.parametrize("sigma2, k", TAIL_CASES, ids=str)
def test_tail_sampler_pmf(sigma2, k):
    z = G.discrete_gaussian_tail(SeededSource(8), 200_000, sigma2, k)
    assert z.min() >= k
    check_law(z, float(sigma2), lo=k, width=1 if sigma2 <= 100 else 10)


def test_tail_sampler_secure_source_and_expected_cost():
    """The secure source; the documented acceptance rate of one round equals
    its definition, sum over g of P(G = g) times the acceptance at k + g; and
    the acceptance at x = k is Bernoulli(exp(-(k - lam sigma^2)^2 / (2 sigma^2)))."""
    sigma2, k = Fraction(100), 20
    check_law(G.discrete_gaussian_tail(SecureSource(), 100_000, sigma2, k), 100.0, lo=k)
    lam = float(G.tail_rate(sigma2, k))
    g = np.arange(0, 4000)
    accept = np.exp(-((g + k - lam * 100.0) ** 2) / 200.0)
    by_definition = float(((1 - math.exp(-lam)) * np.exp(-lam * g) * accept).sum())
    assert law.tail_acceptance(100.0, k, lam) == pytest.approx(by_definition, rel=1e-9)
    n = 100_000
    acceptance = G._Acceptance(sigma2, G.tail_rate(sigma2, k) * sigma2)
    hits = int(acceptance(SeededSource(9), np.full(n, k, dtype=np.int64)).sum())
    assert stats.binomtest(hits, n, float(accept[0])).pvalue > RATE


# --------------------------------------------------------------------------- #
# the float law


def test_float_tail_cdf_and_moments_against_direct_sums():
    for sigma2 in (0.25, 1.0, 2.0 / 3.0, 100.0, 1e6):
        s = math.sqrt(sigma2)
        ks = np.arange(-int(60 * s) - 60, int(60 * s) + 61)
        w = weights(sigma2, ks)
        S = w.sum()
        for theta in (0, 0.5, 1, s, 3 * s, -2 * s):
            ref = w[ks >= math.ceil(theta)].sum() / S
            assert law.tail(sigma2, theta) == pytest.approx(ref, rel=1e-12, abs=1e-300)
        assert law.cdf(sigma2, 1.5) == pytest.approx(w[ks <= 1].sum() / S, rel=1e-12)
        assert law.variance(sigma2) == pytest.approx(float((ks**2 * w).sum() / S), rel=1e-12)
        assert law.variance(sigma2) <= sigma2
        for lam in (0.0, 0.3 / s, 2.0 / s):
            ref = math.log(float((np.exp(lam * ks - ks.astype(float) ** 2 / (2 * sigma2))).sum()) / S)
            got = float(law.log_mgf(sigma2, lam))
            assert got == pytest.approx(ref, rel=1e-10, abs=1e-13)
            assert got <= lam * lam * sigma2 / 2 + 1e-12  # sigma-subgaussian (CKS)
            t = math.ceil(s)
            ref_t = float((np.exp(lam * ks - ks.astype(float) ** 2 / (2 * sigma2)))[ks >= t].sum()) / S
            assert law.tail_mgf(sigma2, t, lam) == pytest.approx(ref_t, rel=1e-10)


def test_float_tail_far_out_does_not_underflow():
    """P(Z >= 40 sigma) ~ exp(-800) is below the smallest float: log_tail
    stays finite and matches a decimal computation."""
    sigma2, theta = 1.0, 40
    lt = law.log_tail(sigma2, theta)
    with decimal.localcontext(decimal.Context(prec=40, Emin=-(10**6))):
        D = decimal.Decimal
        num = sum((-(D(j) ** 2) / 2).exp() for j in range(theta, theta + 60))
        den = 1 + 2 * sum((-(D(j) ** 2) / 2).exp() for j in range(1, 60))
        ref = float((num / den).ln())
    assert math.isfinite(lt) and lt == pytest.approx(ref, rel=1e-12)
    assert law.tail(sigma2, theta) == 0.0  # underflows as a float, as documented


# --------------------------------------------------------------------------- #
# the exact tail probability and the skipping


def reference_tail(sigma2: Fraction, k: int, prec: int = 100) -> decimal.Decimal:
    """P(Z >= k) at ``prec`` digits, each term exp'd directly (independent
    of the interval code, which uses a recurrence)."""
    with decimal.localcontext(decimal.Context(prec=prec + 20, Emin=-(10**9))):
        D = decimal.Decimal
        c = D(sigma2.denominator) / D(2 * sigma2.numerator)
        total, tail = D(1), D(1) if k == 0 else D(0)
        j = 1
        while True:
            w = (-(c * j * j)).exp()
            total += 2 * w
            if j >= k:
                tail += w
            if j > k and j * j * c > 60 and w < D(10) ** -(prec + 10) * tail:
                return tail / total
            j += 1


@pytest.mark.parametrize(
    "sigma2, k",
    [
        (Fraction(1), 0),
        (Fraction(1), 1),
        (Fraction(1), 6),
        (Fraction(1, 4), 2),
        (Fraction(2, 3), 9),
        (Fraction(100), 30),
        (Fraction(100), 200),
        (Fraction(10**4), 500),
    ],
    ids=str,
)
def test_exact_tail_interval_contains_a_high_precision_reference(sigma2, k):
    ref = reference_tail(sigma2, k)
    for digits in (30, 60):
        lo, hi = tail_interval(sigma2, k, digits)
        assert lo <= ref <= hi
        assert (hi - lo) / lo < decimal.Decimal(10) ** -(digits - 3)
    tail = GaussianTailProbability(sigma2, k)
    assert float(tail) == pytest.approx(float(ref), rel=1e-12)
    iv = B._Iv(50)
    lr = tail.log_rho(iv)
    with decimal.localcontext(decimal.Context(prec=120)):
        ref_log_rho = (1 - ref).ln()
    assert lr[0] <= ref_log_rho <= lr[1]


def test_gaussian_tail_is_hashable_and_never_half():
    a, b = GaussianTailProbability(Fraction(4), 2), GaussianTailProbability(4, 2)
    assert a == b and hash(a) == hash(b) and not a.is_half
    assert a != GaussianTailProbability(4, 3) and a != B.TailProbability(1, 1)
    assert "sigma^2 = 4" in repr(a)
    with pytest.raises(ValueError):
        GaussianTailProbability(0, 1)
    with pytest.raises(ValueError):
        GaussianTailProbability(1, -1)


GAUSS_TAILS = {
    "sigma2=1 k=1": GaussianTailProbability(1, 1),
    "sigma2=4 k=3": GaussianTailProbability(4, 3),
    "sigma2=100 k=0": GaussianTailProbability(100, 0),
}


@pytest.mark.parametrize("name", list(GAUSS_TAILS))
def test_bernoulli_positions_with_the_gaussian_tail(name):
    """Selected cells over 40 * 25,000 trials: Binomial(40, p) per block of
    40 and the 16 joint patterns of each block of 4 (independence)."""
    tail = GAUSS_TAILS[name]
    p = float(tail)
    N = 40 * 25_000
    pos = B.bernoulli_positions(SeededSource(11), N, tail)
    assert pos.dtype == np.int64 and np.all(np.diff(pos) > 0) and pos.min() >= 0 and pos.max() < N
    hit = np.zeros(N, dtype=bool)
    hit[pos] = True
    assert_fits(
        np.bincount(hit.reshape(-1, 40).sum(axis=1), minlength=41), stats.binom.pmf(np.arange(41), 40, p)
    )
    pattern = hit.reshape(-1, 4) @ np.array([8, 4, 2, 1])
    k = np.array([i.bit_count() for i in range(16)])
    assert_fits(np.bincount(pattern, minlength=16), p**k * (1 - p) ** (4 - k))


def test_bernoulli_positions_gaussian_count_and_uniform_positions():
    """A small p (sigma^2 = 25, k = 14, p ~ 1.2e-4) over 10^8 trials: the
    count is Binomial(N, p) and, given it, the positions are uniform (50
    equal slices of the range)."""
    tail = GaussianTailProbability(25, 14)
    p = float(tail)
    N = 10**8
    pos = B.bernoulli_positions(SecureSource(), N, tail)
    lo, hi = stats.binom.ppf(RATE / 2, N, p), stats.binom.isf(RATE / 2, N, p)
    assert lo <= pos.size <= hi
    slices = np.bincount(pos // (N // 50), minlength=50)
    assert_fits(slices, np.full(50, 1 / 50))


def test_geometric_slow_path_alone_with_the_gaussian_tail(monkeypatch):
    """A 2-bit fast table: nearly every digit is decided by refining the
    uniform against thresholds at 66, 130, ... bits from the interval oracle."""
    monkeypatch.setattr(B, "FAST_BITS", 2)
    tail = GaussianTailProbability(Fraction(9, 4), 2)
    p = float(tail)
    g, _ = B.geometric(SeededSource(3), 20_000, tail)
    edges = list(range(int(30 / p)))
    log_rho = math.log1p(-p)
    surv = np.array([math.exp(e * log_rho) for e in edges] + [0.0])
    counts = np.bincount(np.minimum(g, edges[-1]), minlength=len(edges))
    assert_fits(counts, surv[:-1] - surv[1:])


class _Vague:
    """An 'exact probability' whose interval never narrows: the cap must stop it."""

    is_half = False

    def __float__(self):
        return 0.25

    def __hash__(self):
        return 7

    def neg_log_rho(self):
        return -math.log1p(-0.25)

    def digits_of_inverse(self):
        return 1

    def log_rho(self, iv):
        return (decimal.Decimal("-0.3"), decimal.Decimal("-0.25"))

    def __repr__(self):
        return "vague p"


def test_precision_cap_raises_a_clear_error(monkeypatch):
    monkeypatch.setattr(B, "MAX_EXTRA_DIGITS", 40)
    with pytest.raises(B.ThresholdUndecided, match="vague p"):
        B._Digit(_Vague(), 0, 4, True)


# --------------------------------------------------------------------------- #
# the noise class and the rounding of sigma^2


def test_rational_sigma2_rounds_up_onto_fast_values():
    rng = np.random.default_rng(0)
    for s2 in np.concatenate([np.exp(rng.uniform(0, math.log(1e12), 400)), [1.0, 2.7, 0.1, 1e-3, 4.0]]):
        s2 = float(s2)
        f = G.rational_sigma2(s2)
        assert f >= Fraction(s2) and f.denominator <= 1 << 20 and G.acceptance_is_fast(f)
        if 1.0 <= s2 <= 1e12:
            assert f / Fraction(s2) - 1 < 1e-5
    for exact in (Fraction(1), Fraction(10**6), Fraction(2, 3), Fraction(5, 4)):
        assert G.rational_sigma2(exact) == exact
    near_square = float(1000**2) - 1e-7  # sigma^2 just below t^2 = 10^6 for sigma ~ 1000
    f = G.rational_sigma2(near_square)
    assert f >= Fraction(near_square) and G.acceptance_is_fast(f)
    with pytest.raises(ValueError):
        G.rational_sigma2(0.0)


def test_discrete_gaussian_noise_class():
    noise = DiscreteGaussian(2.5)
    assert isinstance(noise, DiscreteGaussian)
    assert noise.name == "gaussian" and noise.integer
    assert noise.fraction == Fraction(5, 2) and noise.sigma2 == 2.5
    # Var Z = sigma^2 - O(sigma^4 exp(-2 pi^2 sigma^2)): equal in float at 2.5, visibly below at 0.25
    assert noise.variance <= 2.5 and noise.std == pytest.approx(math.sqrt(noise.variance))
    assert DiscreteGaussian(0.25).variance < 0.25 - 1e-3
    assert noise.rho(1.0) == 0.2 and Fraction(noise.rho(math.sqrt(3))) >= Fraction(math.sqrt(3)) ** 2 / 5
    z = noise.sample(SeededSource(1), 1000)
    assert z.dtype == np.int64
    assert noise.tail(2) == pytest.approx(law.tail(2.5, 2))
    assert noise.log_tail(2) == pytest.approx(math.log(noise.tail(2)))
    assert noise.cdf(-1) == pytest.approx(1 - noise.tail(0))
    assert noise.log_mgf(np.array([0.0, 0.1])).shape == (2,)
    assert noise.tail_mgf(0, 0.0) == pytest.approx(noise.tail(0))
    tail = noise.exact_tail(2.2)
    assert tail == GaussianTailProbability(Fraction(5, 2), 3)
    assert noise.sample_tail(SeededSource(2), 100, 2.2).min() >= 3
    for theta in (-1, -0.5, float("nan")):
        with pytest.raises(ValueError, match="theta"):
            noise.exact_tail(theta)
        with pytest.raises(ValueError, match="theta"):
            noise.sample_tail(SeededSource(0), 1, theta)


def test_noises_are_built_from_the_release_spec():
    """The noise of a release comes from its NoiseSpec: sigma^2 for the
    Gaussian, epsilon over the L1 sensitivity for Laplace; exact counts
    ("none") cannot be asked for."""
    from dpdbscan.params.specs import NoiseSpec

    g = noise_mod.noise_of(NoiseSpec("gaussian", 1.0, 1e-6, 2.5, 0.2, 1.0, 1.0))
    assert isinstance(g, DiscreteGaussian) and g.sigma2 == 2.5
    lap = noise_mod.noise_of(NoiseSpec("discrete", 1.0, 0.0, 0.5, None, 2.0, 2.0))
    assert isinstance(lap, noise_mod.DiscreteLaplace) and lap.epsilon == 0.5
    with pytest.raises(ValueError, match="noise must be"):
        noise_mod.noise_of(NoiseSpec("none", 1.0, 0.0, 1.0, None, 1.0, 1.0))
