"""The exact Bernoulli process of the sparse histogram's empty cells
(``dpdbscan.release.samplers.skipping``): geometric gaps, their digits and thresholds, and
the positions of successes.

False-failure rate: every statistical check is a goodness-of-fit test whose
acceptance region has probability >= 1 - RATE under the exact law (exact
binomial bounds per bin at RATE / (4 bins) and a chi-square p-value above
RATE / 2, as in test_noise_distribution.py; or a single exact binomial /
Poisson interval at RATE). RATE = 1e-7 and the file makes fewer than 60 such
checks: below 1e-5 for the file. Seeds are fixed for reproducibility.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpdbscan.release.histograms import ContinuousLaplace, DiscreteLaplace
from dpdbscan.release.samplers import skipping as B
from dpdbscan.release.samplers.integers import SecureSource, SeededSource

from stats import assert_fits as _assert_fits

RATE = 1e-7


def assert_fits(counts, probs, rate=RATE):
    _assert_fits(counts, probs, rate)


def geometric_bins(g, p, edges):
    """Counts of ``g`` in [edges[i], edges[i+1]) (last bin open) and their
    exact probabilities rho^e_i - rho^e_(i+1)."""
    log_miss = math.log1p(-p)
    surv = np.array([math.exp(e * log_miss) for e in edges] + [0.0])
    probs = surv[:-1] - surv[1:]
    idx = (
        np.searchsorted(np.asarray(edges, dtype=object if g.dtype == object else np.int64), g, side="right")
        - 1
    )
    counts = np.bincount(idx.astype(np.int64), minlength=len(edges))
    return counts, probs


def quantile_edges(p, n_bins=40):
    """Integer edges with about equal probability per bin (edges[0] = 0)."""
    log_miss = math.log1p(-p)
    edges = sorted({int(math.floor(math.log(1 - i / n_bins) / log_miss)) for i in range(n_bins)})
    return [0] + [e for e in edges if e > 0]


TAILS = {
    # name: (tail, its float)
    "discrete eps=1 theta=0": B.TailProbability.discrete(Fraction(1), 0.0),
    "discrete eps=1 theta=1": B.TailProbability.discrete(Fraction(1), 1.0),
    "discrete eps=1 theta=5": B.TailProbability.discrete(Fraction(1), 5.0),
    "discrete eps=0.7 theta=20": B.TailProbability.discrete(DiscreteLaplace(0.7).fraction, 20.0),
    "discrete eps=1 theta=28": B.TailProbability.discrete(Fraction(1), 28.0),
    "continuous eps=1 theta=3": B.TailProbability.continuous(1.0, 3.0),
    "continuous p=1/2": B.TailProbability.continuous(1.0, 0.0),
}


def test_tail_probability_matches_the_noise():
    for eps in (1.0, 0.5, 0.7):
        noise = DiscreteLaplace(eps)
        for theta in (0.0, 1.0, 2.5, 7.0):
            assert float(noise.exact_tail(theta)) == pytest.approx(noise.tail(theta), rel=1e-12)
        cont = ContinuousLaplace(eps)
        for theta in (0.0, 1.5, 6.0):
            assert float(cont.exact_tail(theta)) == pytest.approx(cont.tail(theta), rel=1e-12)
    with pytest.raises(ValueError, match="theta"):
        DiscreteLaplace(1.0).exact_tail(-1.0)
    assert B.TailProbability.continuous(1.0, 0.0).is_half


@pytest.mark.parametrize("name", list(TAILS))
def test_geometric_pmf(name):
    """200,000 gaps against P(G = g) = p rho^g, in about 40 bins of equal
    probability (small p: G up to ~1e12 with several digits per sample)."""
    tail = TAILS[name]
    p = float(tail)
    g, beyond = B.geometric(SeededSource(len(name)), 200_000, tail)
    assert not beyond.any() and g.dtype == np.int64 and g.min() >= 0
    edges = quantile_edges(p) if p < 0.05 else list(range(int(60 / p)))
    assert_fits(*geometric_bins(g, p, edges))


@pytest.mark.parametrize("name", ["discrete eps=0.7 theta=20", "discrete eps=1 theta=28"])
def test_geometric_low_digits(name):
    """For small p the low digits of G are nearly uniform but tilted by
    rho^l: G mod 4096 against the exact truncated geometric law."""
    tail = TAILS[name]
    p = float(tail)
    g, _ = B.geometric(SeededSource(7), 200_000, tail)
    m = 64
    low = (g % m).astype(np.int64)
    w = np.array([math.exp(i * math.log1p(-p)) for i in range(m)])
    assert_fits(np.bincount(low, minlength=m), w / w.sum())


@pytest.mark.parametrize(
    "name",
    [
        "discrete eps=1 theta=1",
        "discrete eps=1 theta=5",
        "discrete eps=0.7 theta=20",
        "continuous eps=1 theta=3",
    ],
)
def test_geometric_slow_path_alone_is_exact(name, monkeypatch):
    """With a 2-bit fast table nearly every digit ties and is finished by the
    slow path (more random bits against exact thresholds at 66, 130, ...
    bits): the law is still exactly geometric."""
    monkeypatch.setattr(B, "FAST_BITS", 2)
    tail = TAILS[name]
    p = float(tail)
    calls = {"n": 0}
    resolve = B._Digit._resolve

    def counting(self, *a):
        calls["n"] += 1
        return resolve(self, *a)

    monkeypatch.setattr(B._Digit, "_resolve", counting)
    n = 20_000
    g, _ = B.geometric(SeededSource(3), n, tail)
    assert calls["n"] > n // 2  # the slow path did the work
    edges = quantile_edges(p, 20) if p < 0.05 else list(range(int(30 / p)))
    assert_fits(*geometric_bins(g, p, edges))


def test_thresholds_agree_with_a_direct_high_precision_computation():
    """floor(F(l) 2^K) of the tables equals a straightforward 150-digit
    evaluation of the CDF formulas (far from any integer boundary)."""
    tail = TAILS["discrete eps=0.7 theta=20"]
    eps = DiscreteLaplace(0.7).fraction
    D = decimal.Decimal
    with decimal.localcontext(decimal.Context(prec=150)):
        q = (-D(eps.numerator) / D(eps.denominator)).exp()
        p = q**20 / (1 + q)
        log_miss = (1 - p).ln()
        for offset, width, top in [(0, 12, False), (12, 12, True), (5, 3, False)]:
            dig = B._Digit(tail, offset, width, top)
            log_r = log_miss * (2**offset)
            m = 2**width
            for ell in (0, 1, 2, m // 2, m - 2):
                num = 1 - (log_r * (ell + 1)).exp()
                F = num if top else num / (1 - (log_r * m).exp())
                for K in (32, 96, 224):  # 224: beyond the 28 digits of the default context
                    x = F * (2**K)
                    ref = int(x.to_integral_value(rounding=decimal.ROUND_FLOOR))
                    assert x - ref > D(10) ** -40 and ref + 1 - x > D(10) ** -40
                    assert dig.exact_floor(ell, K) == ref
                    if K == 32:
                        assert int(dig.fast[ell]) == ref


def test_geometric_half_and_limits():
    tail = TAILS["continuous p=1/2"]
    g, beyond = B.geometric(SeededSource(1), 100_000, tail)
    assert_fits(np.bincount(np.minimum(g, 30), minlength=31), np.append(0.5 ** np.arange(1, 31), 0.5**30))
    # capped: G >= limit is reported as beyond with value limit
    tail = TAILS["discrete eps=1 theta=5"]
    g, beyond = B.geometric(SeededSource(2), 100_000, tail, limit=150)
    assert g.max() <= 150 and np.array_equal(beyond, g == 150)
    rho = 1 - float(tail)
    k = int(beyond.sum())
    assert stats.binom.ppf(RATE / 2, g.size, rho**150) <= k <= stats.binom.isf(RATE / 2, g.size, rho**150)


# --------------------------------------------------------------------------- #
# positions of successes


@pytest.mark.parametrize("name", ["discrete eps=1 theta=1", "discrete eps=1 theta=5", "continuous p=1/2"])
@pytest.mark.parametrize("batch", [None, 7])
def test_bernoulli_positions_blocks_are_binomial_and_independent(name, batch, monkeypatch):
    """One run over 40 * 25,000 trials. Each block of 40 consecutive trials
    holds Binomial(40, p) successes; each block of 4 shows one of the 16
    success patterns with probability p^k (1-p)^(4-k). (batch = 7 forces
    many batches: the joins between them must not show.)"""
    if batch:
        monkeypatch.setattr(B, "_MAX_BATCH", batch)
    tail = TAILS[name]
    p = float(tail)
    N = 40 * 25_000 if not batch else 40 * 2_500
    pos = B.bernoulli_positions(SeededSource(11), N, tail)
    assert pos.dtype == np.int64 and np.all(np.diff(pos) > 0) and pos.min() >= 0 and pos.max() < N
    hit = np.zeros(N, dtype=bool)
    hit[pos] = True
    per40 = hit.reshape(-1, 40).sum(axis=1)
    assert_fits(np.bincount(per40, minlength=41), stats.binom.pmf(np.arange(41), 40, p))
    pattern = hit.reshape(-1, 4) @ np.array([8, 4, 2, 1])
    k = np.array([i.bit_count() for i in range(16)])
    assert_fits(np.bincount(pattern, minlength=16), p**k * (1 - p) ** (4 - k))


def test_bernoulli_positions_small_universe_count_is_binomial():
    """M = 37 trials, 20,000 runs with the secure source: the number of
    successes is Binomial(37, p) and each trial succeeds with probability p."""
    tail = TAILS["discrete eps=1 theta=1"]
    p = float(tail)
    src = SecureSource()
    runs, M = 20_000, 37
    counts = np.zeros(M + 1, dtype=np.int64)
    per_cell = np.zeros(M, dtype=np.int64)
    for _ in range(runs):
        pos = B.bernoulli_positions(src, M, tail)
        counts[pos.size] += 1
        per_cell[pos] += 1
    assert_fits(counts, stats.binom.pmf(np.arange(M + 1), M, p))
    lo = stats.binom.ppf(RATE / (2 * M), runs, p)
    hi = stats.binom.isf(RATE / (2 * M), runs, p)
    assert np.all((per_cell >= lo) & (per_cell <= hi))


def test_bernoulli_positions_astronomical_universe():
    """N = 10^30 trials, p ~ 6e-27: positions are Python ints, sorted,
    distinct and below N; their count is Binomial(N, p), checked with
    Poisson(Np) bounds (total variation distance <= p ~ 1e-26 from the
    binomial); the gaps times p are close to Exp(1): gaps in 10 bins of
    exact probability."""
    tail = B.TailProbability.discrete(Fraction(1), 60.0)
    p = float(tail)
    N = 10**30
    pos = B.bernoulli_positions(SeededSource(5), N, tail)
    assert isinstance(pos, list) and all(isinstance(x, int) for x in pos[:10])
    assert all(a < b for a, b in zip(pos, pos[1:])) and 0 <= pos[0] and pos[-1] < N
    lam = N * p
    assert stats.poisson.ppf(RATE / 2, lam) <= len(pos) <= stats.poisson.isf(RATE / 2, lam)
    gaps = np.array([b - a - 1 for a, b in zip([-1] + pos[:-1], pos)], dtype=object)
    edges = quantile_edges(p, 10)
    counts, probs = geometric_bins(gaps, p, [int(e) for e in edges])
    assert_fits(counts, probs)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TAILS))
def test_geometric_pmf_long(name, monkeypatch):
    """Ten times more gaps from the secure source, and 100,000 through the
    slow path alone (make test-slow)."""
    tail = TAILS[name]
    p = float(tail)
    g, _ = B.geometric(SecureSource(), 2_000_000, tail)
    edges = quantile_edges(p, 100) if p < 0.05 else list(range(int(80 / p)))
    assert_fits(*geometric_bins(g, p, edges))
    monkeypatch.setattr(B, "FAST_BITS", 3)
    g, _ = B.geometric(SecureSource(), 100_000, tail)
    edges = quantile_edges(p, 40) if p < 0.05 else list(range(int(40 / p)))
    assert_fits(*geometric_bins(g, p, edges))


class _Words:
    """A source that returns given 64-bit words (then fresh seeded ones)."""

    def __init__(self, words):
        self.words = list(np.asarray(words, dtype=np.uint64))
        self.rest = SeededSource(0)

    def raw(self, n):
        out = [self.words.pop(0) for _ in range(min(n, len(self.words)))]
        return np.concatenate([np.array(out, dtype=np.uint64), self.rest.raw(n - len(out))])


@pytest.mark.parametrize("top", [True, False])
def test_inversion_counts_thresholds_below_the_word(top):
    """Deterministic check of the fast path: each outcome is the number of
    thresholds T_l below the 32-bit word (guide table plus stepping), on
    words spread over [0, 2^32) including ones just around thresholds."""
    dig = B._get_digit(TAILS["discrete eps=1 theta=5"], 0, 11, top)
    T = dig.fast.astype(np.int64)
    rng = np.random.default_rng(0)
    R = np.concatenate([rng.integers(0, 1 << 32, 5000), T[::37] - 1, T[::41] + 1, [0, (1 << 32) - 1]]).astype(
        np.int64
    )
    R = R[(R >= 0) & (R < 1 << 32) & ~np.isin(R, T)]  # no ties: those take the slow path
    if R.size % 2:
        R = R[:-1]
    words = R.astype(np.uint32).view(np.uint64)  # the sampler views raw words as uint32 pairs
    out = dig.sample(_Words(words), R.size)
    assert np.array_equal(out, np.searchsorted(T, R, side="left"))


@pytest.mark.parametrize("fast_bits", [3, 8, 32])
@pytest.mark.parametrize("name", ["discrete eps=1 theta=5", "discrete eps=0.7 theta=20"])
def test_a_digit_is_the_count_of_thresholds_below_its_word(fast_bits, name, monkeypatch):
    """The guide table's shortcut (its first threshold per bucket, steps over
    the rest, ties only where the count's threshold equals the word) gives
    D = #{l : T_l < R}, and the ties go to the slow path in index order:
    the same digits, word for word, as that count taken straight."""
    monkeypatch.setattr(B, "FAST_BITS", fast_bits)
    tail = TAILS[name]
    digit = B._Digit(tail, 0, 8, True)
    n = 5000
    words = SeededSource(11).raw((n + 1) // 2).view(np.uint32)[:n].astype(np.uint64)
    R = words >> np.uint64(32 - fast_bits)
    T = digit.fast
    D0 = np.searchsorted(T, R, side="left").astype(np.int64)
    tie = np.flatnonzero((D0 < T.size) & (T[np.minimum(D0, T.size - 1)] == R))
    assert fast_bits == 32 or tie.size > 0  # (the small tables tie)
    after = SeededSource(11)
    after.raw((n + 1) // 2)  # the words of the fast digits, then the slow path's
    for i in tie:
        D0[i] = digit._resolve(after, int(R[i]), int(D0[i]))
    assert np.array_equal(digit.sample(SeededSource(11), n), D0)


def test_a_top_digit_alone_is_the_gap_capped_at_the_limit():
    """Where the layout has no low digits (offset 0), G is the top digit
    (with its overflows drawn afresh) capped at the limit: the digits' sum
    taken straight on the same words."""
    n = 20_000
    for tail, limit in ((TAILS["discrete eps=1 theta=1"], 12), (TAILS["discrete eps=1 theta=5"], 1000)):
        lay = B._Layout(tail, limit)
        assert lay.o_top == 0 and not lay.chunks
        top = B._get_digit(tail, 0, lay.w_top, True)
        src = SeededSource(5)
        h = top.sample(src, n)
        pending = np.flatnonzero(h == top.m)
        while pending.size:
            pending = pending[h[pending] < limit]
            d = top.sample(src, pending.size)
            h[pending] += d
            pending = pending[d == top.m]
        g, beyond = B.geometric(SeededSource(5), n, tail, limit=limit)
        assert g.dtype == np.int64 and np.array_equal(g, np.where(h >= limit, limit, h))
        assert np.array_equal(beyond, h >= limit) and beyond.any() and not beyond.all()


def test_interval_negation_keeps_the_precision():
    """-x through the outward contexts: a bare unary minus on a Decimal rounds
    to the default 28 digits, and thresholds at 96 bits and more drifted
    (here epsilon = 1/3, whose decimal expansion never ends)."""
    iv = B._Iv(120)
    x = iv.frac(Fraction(1, 3))
    lo, hi = iv.neg(x)
    assert lo <= -Fraction(1, 3) <= hi and hi - lo < decimal.Decimal(10) ** -110
    tail = B.TailProbability(Fraction(20, 3), Fraction(1, 3))
    dig = B._Digit(tail, 0, 12, True)
    D = decimal.Decimal
    with decimal.localcontext(decimal.Context(prec=150)):
        q = (-D(1) / D(3)).exp()
        log_miss = (1 - q**20 / (1 + q)).ln()
        for ell in (0, 7, 4000):
            x = (1 - (log_miss * (ell + 1)).exp()) * 2**224
            assert dig.exact_floor(ell, 224) == int(x.to_integral_value(rounding=decimal.ROUND_FLOOR))
