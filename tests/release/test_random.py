"""Exactness of the fast samplers in ``dpdbscan.release.samplers.integers``.

The fast samplers decide several CKS trials from one word by inversion, and
Bernoulli(exp(-1)) from a 16-bit lookup table. Each path is checked twice:
exactly, by enumerating the words where that is possible, and statistically
against the exact distribution.

False failures: every statistical test is a chi-square or binomial test at
``stats.P_FAIL`` (1e-6) with expected counts >= 20 in every bin (the seeds are
fixed so that CI is reproducible).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpdbscan.release.samplers import integers as R

from stats import binom_ok as _binom_ok
from stats import chi2_ok as _chi2_ok

# --------------------------------------------------------------------------- #
# exact checks by enumeration


def test_exp1_table_is_exact():
    """Among accepted 16-bit words, the first failed trial K has P(K = k) = 1/(k-1)! - 1/k!."""
    code = R._EXP1_CODE
    lim = R._EXP1_LIMIT
    assert lim == 13 * math.factorial(7) and lim <= 1 << 16
    w = np.arange(1 << 16)
    assert np.all(code[w >= lim] == 2)
    acc = code[:lim]
    # w < lim / k!  <=>  K > k; so K = k exactly on [lim/k!, lim/(k-1)!)
    for k in range(2, 8):
        lo, hi = lim // math.factorial(k), lim // math.factorial(k - 1)
        assert Fraction(hi - lo, lim) == Fraction(1, math.factorial(k - 1)) - Fraction(1, math.factorial(k))
        assert np.all(acc[lo:hi] == (1 if k % 2 == 1 else 0))
    assert np.all(acc[: lim // math.factorial(7)] == 3)
    assert Fraction(lim // math.factorial(7), lim) == Fraction(1, math.factorial(7))


@pytest.mark.parametrize("den", [1, 2, 3, 10, 1000, 1 << 20])
def test_inversion_thresholds_are_exact(den):
    """thresholds / range == num**k / (den**k k!) exactly, for every k <= kmax."""
    kmax = R._inversion_depth(den)
    size = den**kmax * math.factorial(kmax)
    assert kmax >= 1 and size <= 1 << 61
    mult = ((1 << 64) - 1) // size
    for num in {0, 1, den // 2, max(den - 1, 0), den}:
        for k in range(1, kmax + 1):
            thr = mult * num**k * den ** (kmax - k) * (math.factorial(kmax) // math.factorial(k))
            assert thr < 1 << 64
            assert Fraction(thr, mult * size) == Fraction(num**k, den**k * math.factorial(k))


class _Script:
    """A source that replays given words (then fresh PCG64 words)."""

    secure = False

    def __init__(self, words, seed=0):
        self.words = list(words)
        self.gen = np.random.default_rng(seed)

    def raw(self, n):
        take, self.words = self.words[:n], self.words[n:]
        rest = self.gen.bit_generator.random_raw(n - len(take)).astype(np.uint64)
        return np.concatenate([np.array(take, dtype=np.uint64), rest])


def test_uniform_words_reject_the_top():
    bound = 7
    mult = ((1 << 64) - 1) // bound
    top = mult * bound  # the first word to reject
    src = _Script([top, (1 << 64) - 1, 5])
    w, m = R._uniform_words(src, 1, bound)
    assert m == mult and w[0] == 5


# --------------------------------------------------------------------------- #
# statistical checks


def _pmf_geometric(q, vmax):
    v = np.arange(vmax + 1)
    p = (1 - q) * q**v
    p[-1] = q**vmax  # tail mass P(V >= vmax)
    return p


@pytest.mark.parametrize("source", [R.SeededSource(11), R.SecureSource()], ids=["seeded", "secure"])
def test_geometric_exp_neg1_distribution(source):
    n = 400_000
    v = R.geometric_exp_neg1(source, n)
    vmax = 12
    counts = np.bincount(np.minimum(v, vmax), minlength=vmax + 1)
    p, ok = _chi2_ok(counts, _pmf_geometric(math.exp(-1), vmax))
    assert ok, p


def test_cks_parity_tail_path():
    """The K > 7 continuation: P(K odd | K > 7) from 1/(k-1)! - 1/k!."""
    n = 200_000
    out = R._cks_parity(R.SeededSource(12), np.ones(n, np.uint64), 1, np.full(n, 8))
    tail = Fraction(1, math.factorial(7))
    odd = sum(Fraction(1, math.factorial(k - 1)) - Fraction(1, math.factorial(k)) for k in range(9, 40, 2))
    assert _binom_ok(out.sum(), n, float(odd / tail))


def test_exp1_codes_deep_words_are_resolved():
    """Words below 13 (K > 7) get code 0/1 with the conditional parity."""
    n = 100_000
    words = np.zeros((n + 3) // 4, dtype=np.uint64)  # all four 16-bit words = 0
    src = _Script(words.tolist(), seed=13)
    code = R._exp1_codes(src, n)
    assert set(np.unique(code)) <= {0, 1}
    tail = Fraction(1, math.factorial(7))
    odd = sum(Fraction(1, math.factorial(k - 1)) - Fraction(1, math.factorial(k)) for k in range(9, 40, 2))
    assert _binom_ok((code == 1).sum(), n, float(odd / tail))


@pytest.mark.parametrize(
    "num,den",
    [
        (1, 1),
        (0, 1),
        (1, 2),
        (2, 3),
        (7, 10),
        (999, 1000),
        ((1 << 20) - 1, 1 << 20),
        (1 << 20, 1 << 20),
        (1, 1 << 20),
    ],
)
def test_bernoulli_exp_neg(num, den):
    n = 200_000
    out = R.bernoulli_exp_neg(R.SeededSource(num + 7 * den), np.full(n, num), den)
    assert _binom_ok(out.sum(), n, math.exp(-num / den))


@pytest.mark.parametrize("kmax", [1, 2])
def test_inversion_with_forced_shallow_depth(kmax):
    """With kmax = 1 or 2 most samples take the trial-by-trial continuation."""
    n, num, den = 200_000, 5, 6
    src = R.SeededSource(20 + kmax)
    w, mult = R._uniform_words(src, n, den**kmax * math.factorial(kmax))
    out = R._exp_neg_by_inversion(src, w, mult, np.full(n, num, np.uint64), den, kmax)
    assert _binom_ok(out.sum(), n, math.exp(-num / den))


@pytest.mark.parametrize("t", [2, 3, 10, 1 << 20])
def test_uniform_accept_exp_neg_joint(t):
    """P(U = u, accepted) = exp(-u/t) / t (U binned for large t)."""
    n = 300_000
    u, ok = R._uniform_accept_exp_neg(R.SeededSource(t), n, t)
    bins = min(t, 16)
    b = (u.astype(np.int64) * bins) // t
    counts = np.concatenate([np.bincount(b[ok], minlength=bins), np.bincount(b[~ok], minlength=bins)])
    us = np.arange(t) if t <= 4096 else None
    probs = np.zeros(2 * bins)
    if us is not None:
        pa = np.exp(-us / t) / t
        np.add.at(probs, (us * bins) // t, pa)
        np.add.at(probs, bins + (us * bins) // t, 1 / t - pa)
    else:  # integrate exp(-u/t)/t over each bin of width t/bins (exactly: geometric sums)
        q = math.exp(-1 / t)
        for j in range(bins):
            lo, hi = j * t // bins, (j + 1) * t // bins
            pa = (q**lo - q**hi) / (1 - q) / t
            probs[j] = pa
            probs[bins + j] = (hi - lo) / t - pa
    p, good = _chi2_ok(counts, probs)
    assert good, p


EPSILONS = [Fraction(1), Fraction(2), Fraction(1, 2), Fraction(3, 2), Fraction(1, 10), Fraction(5, 7)]


@pytest.mark.parametrize("eps", EPSILONS, ids=str)
def test_discrete_laplace_distribution(eps):
    n = 300_000
    z = R.discrete_laplace(R.SeededSource(eps.numerator * 100 + eps.denominator), n, eps)
    q = math.exp(-float(eps))
    zmax = int(math.ceil(12 / float(eps)))
    vals = np.arange(-zmax, zmax + 1)
    probs = (1 - q) / (1 + q) * q ** np.abs(vals)
    # fold the two tails into the end bins
    probs[0] = probs[-1] = q**zmax / (1 + q)
    counts = np.bincount(np.clip(z, -zmax, zmax) + zmax, minlength=vals.size)
    p, ok = _chi2_ok(counts, probs / probs.sum())
    assert ok, p
    assert _binom_ok((z == 0).sum(), n, (1 - q) / (1 + q))


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 3), Fraction(5, 2)], ids=str)
def test_discrete_geometric_distribution(eps):
    n = 300_000
    g = R.discrete_geometric(R.SeededSource(99 + eps.denominator), n, eps)
    q = math.exp(-float(eps))
    gmax = int(math.ceil(12 / float(eps)))
    counts = np.bincount(np.minimum(g, gmax), minlength=gmax + 1)
    p, ok = _chi2_ok(counts, _pmf_geometric(q, gmax))
    assert ok, p


def test_discrete_laplace_secure_source_smoke():
    z = R.discrete_laplace(R.SecureSource(), 200_000, Fraction(1))
    q = math.exp(-1)
    assert _binom_ok((z == 0).sum(), z.size, (1 - q) / (1 + q))
    assert z.dtype == np.int64


def test_sampler_sizes():
    src = R.SeededSource(0)
    for n in [0, 1, 2, 3, 5, 63, 64, 65]:
        assert R.discrete_laplace(src, n, Fraction(1)).shape == (n,)
        assert R.discrete_laplace(src, n, Fraction(1, 3)).shape == (n,)
        assert R.geometric_exp_neg1(src, n).shape == (n,)
        assert R._raw_bits(src, n).shape == (n,)
        assert R._raw16(src, n).shape == (n,)


@pytest.mark.parametrize("bound", [1, 2, 7, 1000, (1 << 63) - 25, 1 << 63])
def test_uniform_below(bound):
    n = 200_000
    u = R.uniform_below(R.SeededSource(bound % 1000), n, bound)
    assert u.dtype == np.int64 and u.min() >= 0 and u.max() < bound
    if bound == 1:
        return
    bins = min(bound, 16)
    counts = np.bincount((u.astype(object) * bins // bound).astype(np.int64), minlength=bins)
    edges = [(j * bound + bins - 1) // bins for j in range(bins + 1)]  # first u in each bin
    probs = np.diff(np.array(edges, dtype=float)) / bound
    p, ok = _chi2_ok(counts, probs)
    assert ok, p
