"""The inversion sampler of the discrete Laplace and geometric laws
(``release/samplers/inversion.py``): its thresholds against a naive
high-precision evaluation, the exact law at the library's bits and with the
table and second-level bits lowered so that ties and the tails are common
(:func:`_forced`), the tails' frequency at the production bits, the secure
source's threaded draws, and which epsilons it serves.

False failures: every law check is :func:`stats.assert_fits` or
:func:`stats.binom_ok` at ``stats.P_FAIL`` = 1e-6 each; the file makes fewer
than 30 of them (false-failure rate < 3e-5).
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest

from dpdbscan.release.samplers import integers as R
from dpdbscan.release.samplers import inversion as I

from stats import assert_fits, binom_ok

EPSILONS = [Fraction(1), Fraction(1, 3), Fraction(1, 10), Fraction(1, 20), Fraction(7, 5), Fraction(3)]


def _laplace_probs(eps: Fraction, zmax: int) -> np.ndarray:
    """P(Z = z) for z = -zmax .. zmax with the tails folded into the end bins."""
    q = math.exp(-float(eps))
    z = np.arange(-zmax, zmax + 1)
    p = (1 - q) / (1 + q) * q ** np.abs(z).astype(float)
    p[0] = p[-1] = q**zmax / (1 + q)
    return p


def _laplace_counts(z: np.ndarray, zmax: int) -> np.ndarray:
    return np.bincount(np.clip(z, -zmax, zmax) + zmax, minlength=2 * zmax + 1)


def _geometric_probs(eps: Fraction, gmax: int) -> np.ndarray:
    q = math.exp(-float(eps))
    g = np.arange(gmax + 1)
    p = (1 - q) * q ** g.astype(float)
    p[-1] = q**gmax
    return p


def _zmax(eps: Fraction) -> int:
    return int(math.ceil(14 / float(eps)))


@pytest.fixture
def _forced(monkeypatch):
    """Table bits 4 and second-level bits 8: a tenth or more of the samples
    reach the second level or the tails, and a few percent tie there and are
    finished in Python integers (``_Table._resolve``)."""
    monkeypatch.setattr(I, "TABLE_BITS", 4)
    monkeypatch.setattr(I, "LEVEL2_BITS", 8)


def _naive_floor(kind: str, eps: Fraction, c: int, K: int) -> int:
    """floor(F(c) 2^K) at 120 digits, naively (no interval): the oracle."""
    # every operation through ctx: +, - would round to 28 digits; enough
    # digits that 1 - q^k does not cancel (eps = 10^4: q is about 10^-4343)
    ctx = decimal.Context(prec=120 + int(float(eps) * 0.4343) * 2, Emin=-999999, Emax=999999)
    q = ctx.exp(ctx.minus(ctx.divide(eps.numerator, eps.denominator)))
    if kind == "laplace":
        k = -c if c <= -1 else c + 1
        p = ctx.divide(ctx.power(q, k), ctx.add(1, q))
        f = p if c <= -1 else ctx.subtract(1, p)
    else:
        f = ctx.subtract(1, ctx.power(q, c + 1))
    return int(ctx.multiply(f, 2**K).to_integral_value(rounding=decimal.ROUND_FLOOR))


@pytest.mark.parametrize("kind", ["laplace", "geometric"])
@pytest.mark.parametrize(
    "eps",
    [
        Fraction(1),
        Fraction(1, 10),
        Fraction(5, 7),
        Fraction(300_007, 1 << 20),
        # the naive floors at a huge epsilon took 26-36 s each in a loaded make test
        pytest.param(Fraction(10_000), marks=pytest.mark.slow),
    ],
)
def test_thresholds_are_the_floors_of_the_cdf(kind, eps):
    tab = I._Table(kind, eps, 16, 64)
    cs = [j - tab.M - 1 if kind == "laplace" else j for j in range(tab.m)]
    assert tab.t2.tolist() == [_naive_floor(kind, eps, c, 64) for c in cs]
    assert np.all(np.diff(tab.t2.astype(object)) > 0)
    # the tails are reached only from flagged buckets, and M is the least that does it
    t1 = tab.t2 >> np.uint64(48)
    assert int(t1[-1]) == (1 << 16) - 1
    q = math.exp(-float(eps))
    if kind == "laplace":
        assert int(t1[0]) == 0
        assert q ** (tab.M + 1) / (1 + q) < 2**-16 and (tab.M == 0 or 2**-16 <= q**tab.M / (1 + q))
    else:
        assert q**tab.M <= 2**-16 and (tab.M == 1 or 2**-16 < q ** (tab.M - 1))
    # deeper floors on demand agree with the naive ones
    for j in (0, tab.m // 2, tab.m - 1):
        assert tab.exact_floor(j, 192) == _naive_floor(kind, eps, cs[j], 192)
    # the table: flagged exactly where a threshold falls, else the outcome of its bucket
    flagged = np.flatnonzero(tab.table == I._FLAG)
    assert flagged.tolist() == sorted(set(t1.tolist()))
    r = np.arange(1 << 16)
    inside = tab.table != I._FLAG
    want = np.searchsorted(t1, r[inside], side="left") + tab.offset
    np.testing.assert_array_equal(tab.table[inside], want)


@pytest.mark.parametrize("eps", EPSILONS, ids=str)
def test_discrete_laplace_law(eps):
    n = 400_000
    z = I.discrete_laplace(R.SeededSource(eps.numerator * 1000 + eps.denominator), n, eps)
    assert z.dtype == np.int64 and z.shape == (n,)
    zmax = _zmax(eps)
    assert_fits(_laplace_counts(z, zmax), _laplace_probs(eps, zmax))


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 10), Fraction(3)], ids=str)
def test_geometric_law(eps):
    n = 300_000
    g = I.geometric(R.SeededSource(7 + eps.denominator), n, eps)
    assert g.dtype == np.int64 and g.min() >= 0
    gmax = _zmax(eps)
    assert_fits(np.bincount(np.minimum(g, gmax), minlength=gmax + 1), _geometric_probs(eps, gmax))


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 3), Fraction(1, 10)], ids=str)
def test_discrete_laplace_law_with_ties_forced(_forced, eps):
    tab = I._get("laplace", eps)
    assert tab.k1 == 4 and tab.k2 == 8
    n = 200_000
    src = R.SeededSource(31 + eps.denominator)
    resolved = []
    original = tab._resolve

    def counting(source, prefix, first):
        resolved.append(prefix)
        return original(source, prefix, first)

    tab._resolve = counting  # type: ignore[method-assign]
    z = I.discrete_laplace(src, n, eps)
    assert len(resolved) > n // 1000  # the exact Python path ran, often
    assert (np.abs(z) > tab.M).sum() > n // 100  # and the tails
    zmax = _zmax(eps)
    assert_fits(_laplace_counts(z, zmax), _laplace_probs(eps, zmax))


def test_geometric_law_with_ties_forced(_forced):
    eps = Fraction(1, 2)
    tab = I._get("geometric", eps)
    n = 200_000
    g = I.geometric(R.SeededSource(77), n, eps)
    assert (g >= tab.M).sum() > n // 100  # the memoryless restart ran
    gmax = _zmax(eps)
    assert_fits(np.bincount(np.minimum(g, gmax), minlength=gmax + 1), _geometric_probs(eps, gmax))


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 4)], ids=str)
def test_tails_at_the_production_bits(eps):
    """|Z| > M is finished by the geometric: its frequency, 2 q^(M+1) / (1 + q)
    (about 2^-16), and the law beyond M."""
    tab = I._get("laplace", eps)
    n = 3_000_000
    z = I.discrete_laplace(R.SeededSource(5 + eps.denominator), n, eps)
    q = math.exp(-float(eps))
    far = np.abs(z[np.abs(z) > tab.M]) - tab.M - 1
    assert far.size > 10
    assert binom_ok(far.size, n, 2 * q ** (tab.M + 1) / (1 + q))
    gmax = 3
    assert_fits(np.bincount(np.minimum(far, gmax), minlength=gmax + 1), _geometric_probs(eps, gmax))


@pytest.mark.parametrize("openssl", [True, False], ids=["OpenSSL", "os.urandom on two threads"])
def test_secure_source_large_draw(openssl, monkeypatch):
    """A draw large enough for :class:`R.SecureSource`'s OpenSSL generator
    (or, without it, for its two threads reading ``os.urandom``): its 16-bit
    words come from at least SECURE_OPENSSL_WORDS 64-bit words."""
    if not openssl:
        monkeypatch.setattr(R, "_openssl_bytes", lambda: None)
    n = 4 * max(R.SECURE_THREADED_WORDS, R.SECURE_OPENSSL_WORDS) + 12_345
    z = I.discrete_laplace(R.SecureSource(), n, Fraction(1))
    q = math.exp(-1)
    assert binom_ok((z == 0).sum(), n, (1 - q) / (1 + q))
    assert binom_ok((z < 0).sum(), n, q / (1 + q))


def test_which_epsilons_take_the_inversion():
    assert I.applies(Fraction(1)) and I.applies(Fraction(1, 100)) and I.applies(Fraction(1, 300))
    assert not I.applies(Fraction(1, 500))
    # the public samplers dispatch: at 1/1000 they draw the CKS rounds' values
    eps = Fraction(1, 1000)
    np.testing.assert_array_equal(
        R.discrete_laplace(R.SeededSource(3), 1000, eps), R.cks_discrete_laplace(R.SeededSource(3), 1000, eps)
    )
    one = Fraction(1)
    np.testing.assert_array_equal(
        R.discrete_laplace(R.SeededSource(3), 1000, one), I.discrete_laplace(R.SeededSource(3), 1000, one)
    )
    with pytest.raises(ValueError, match="too small"):
        I._Table("laplace", Fraction(1, 1000), 16, 64)


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 3)], ids=str)
def test_cks_rounds_keep_the_law(eps):
    """The CKS rounds, which small epsilons still draw."""
    n = 200_000
    z = R.cks_discrete_laplace(R.SeededSource(11), n, eps)
    zmax = _zmax(eps)
    assert_fits(_laplace_counts(z, zmax), _laplace_probs(eps, zmax))
    g = R.cks_discrete_geometric(R.SeededSource(12), n, eps)
    assert_fits(np.bincount(np.minimum(g, zmax), minlength=zmax + 1), _geometric_probs(eps, zmax))


def test_large_epsilon():
    """At epsilon = 10^4 (a weak-epsilon fit) F(0) = 1 - q/(1 + q) differs
    from 1 in its 4343rd digit: the thresholds are decided on q/(1 + q)
    (no cancellation). Z = 0 but with probability about 10^-4343; at 7 the
    law."""
    assert not I.discrete_laplace(R.SeededSource(1), 10_000, Fraction(10_000)).any()
    assert not I.geometric(R.SeededSource(1), 10_000, Fraction(10_000)).any()
    eps = Fraction(7)
    z = I.discrete_laplace(R.SeededSource(2), 400_000, eps)
    assert_fits(_laplace_counts(z, 2), _laplace_probs(eps, 2))


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 63, 64, 65])
def test_sizes(n):
    src = R.SeededSource(n)
    assert I.discrete_laplace(src, n, Fraction(1)).shape == (n,)
    assert I.geometric(src, n, Fraction(1, 3)).shape == (n,)
