"""Exact samplers of the discrete Gaussian N_Z(0, sigma^2) and of its tail.

``P(Z = k)`` is proportional to ``exp(-k^2 / (2 sigma^2))`` on the integers,
for a rational ``sigma^2 = a/b`` (:class:`fractions.Fraction`). Everything is
decided by integer comparisons on the words of a :class:`~dpdbscan.release.samplers.integers.Source`
(no floating-point randomness), with the exact machinery of
:mod:`dpdbscan.release.samplers.integers`:

* :func:`discrete_gaussian` is Canonne, Kamath and Steinke (2020),
  Algorithm 3: propose ``Y`` from the discrete Laplace with scale
  ``t = floor(sigma) + 1``, accept with probability
  ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``. The product of the two is
  ``exp(-Y^2 / (2 sigma^2)) exp(-sigma^2 / (2 t^2))``, so an accepted ``Y``
  has exactly the target law. Each round proposes for every sample still
  missing (vectorised); a round accepts with probability
  :func:`dpdbscan.laws.discretegaussian.laplace_acceptance` (0.54 at sigma = 1, 0.76
  for large sigma).
* :func:`discrete_gaussian_tail` draws ``Z | Z >= k`` the same way on the
  half line: ``X = k + G``, ``G`` geometric with rate ``lam``
  (``P(G = g)`` proportional to ``exp(-lam g)``), accepted with probability
  ``exp(-(X - lam sigma^2)^2 / (2 sigma^2))``; the product is
  ``exp(-X^2 / (2 sigma^2))`` times a constant, for any ``lam > 0``.

The acceptance. With ``c`` the centre (``sigma^2/t`` or ``lam sigma^2``) in
lowest terms ``P/Q``, ``(x - c)^2 / (2 sigma^2) = w (Q x - P)^2 / D`` with
integers ``w = b/g``, ``D = 2 a Q^2 / g``, ``g = gcd(b, 2 a Q^2)``
(:class:`_Acceptance`). ``exp(-w u^2 / D)`` is ``k`` Bernoulli(exp(-1))
trials and one Bernoulli(exp(-r/D)), ``w u^2 = k D + r`` (CKS Algorithm 1),
all exact; the last is decided from one random word by inversion against
the rational partial sums of CKS's series (:func:`_exp_neg_frac`). The
vectorised path needs ``D <= 2^53`` and ``w u^2 < 2^62``; anything else (an
odd sigma^2, or a proposal more than 32 sigma from ``c``) is decided
by the same algorithm on Python integers, exactly but slowly
(:func:`_bernoulli_exp_neg_int`). :func:`rational_sigma2` rounds a requested
sigma^2 up onto values whose ``D`` is small.

The number of proposals per round is set from the float acceptance rate (a
public function of sigma^2 and k). Taking the first accepted proposals of an
i.i.d. stream gives i.i.d. draws of the target, so the batch size changes
the speed, not the law.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from ...laws import discretegaussian as _gaussian_law
from . import integers as _random
from .integers import Source

_FAST_DEN = 1 << 53  # D of the vectorised acceptance: r / D from exact doubles
_WORD62 = 1 << 62
_BLOCK = 1 << 21  # outputs per block: bounds the memory of one call


def _as_sigma2(sigma2: Fraction | int) -> Fraction:
    s = Fraction(sigma2)
    if s <= 0:
        raise ValueError(f"sigma^2 must be positive, got sigma2={sigma2!r}")
    return s


def floor_sigma(sigma2: Fraction) -> int:
    """floor(sqrt(sigma^2)), exactly: floor(sqrt(x)) = isqrt(floor(x))."""
    return math.isqrt(sigma2.numerator // sigma2.denominator)


# --------------------------------------------------------------------------- #
# Bernoulli(exp(-(x - c)^2 / (2 sigma^2)))


class _LazyUniform:
    """U uniform on [0, 1), known by its leading ``bits`` bits ``v`` and
    refined 64 bits at a time, only while a comparison is undecided."""

    def __init__(self, source: Source, v: int = 0, bits: int = 0) -> None:
        self.source, self.v, self.bits = source, v, bits

    def below(self, num: int, den: int) -> bool:
        """U < num/den, exactly. U lies in [v, v + 1) / 2^bits."""
        while True:
            scaled = num << self.bits
            if (self.v + 1) * den <= scaled:
                return True
            if self.v * den >= scaled:
                return False
            self.v = (self.v << 64) | int(self.source.raw(1)[0])
            self.bits += 64


def _exp_neg_frac_exact(u: _LazyUniform, r: int, den: int) -> bool:
    """Bernoulli(exp(-r/den)), 0 <= r < den, from the uniform ``u`` (CKS
    Algorithm 1 by inversion): with ``tau_j = (r/den)^j / j!``, the first
    failed trial J of CKS is 1 + #{j >= 1 : U < tau_j} (P(J > j) = tau_j),
    and the result is J odd."""
    count, num, dn, j = 0, r, den, 1
    while num and u.below(num, dn):
        count += 1
        j += 1
        num *= r
        dn *= den * j
    return count % 2 == 0


def _bernoulli_exp_neg_int(source: Source, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for Python integers of any size, exactly.

    ``exp(-num/den) = exp(-1)^k exp(-r/den)`` with ``num = k den + r``: ``k``
    Bernoulli(exp(-1)) trials (the loop stops at the first failure, after 1.6
    trials on average), then :func:`_exp_neg_frac_exact`.
    """
    k, r = divmod(num, den)
    while k:
        if _random._exp1_codes(source, 1, decided=True)[0] == 0:
            return False
        k -= 1
    return _exp_neg_frac_exact(_LazyUniform(source), r, den)


# The float y_j = tau_j 2^53 of _exp_neg_frac is 4 j - 2 correctly rounded
# operations away from the exact value T_j <= 2^53: |y_j - T_j| <= 160 * 2^-53
# T_j < 2^8 for j <= _MAX_J, and d = M - y_j is rounded by at most 2. So
# d < -_BAND proves M + 1 < T_j (U < tau_j) and d > _BAND proves M > T_j.
_BAND = 2.0**20
_MAX_J = 40


def _exp_neg_frac(source: Source, r: np.ndarray, den: int) -> np.ndarray:
    """Bernoulli(exp(-r/den)) for int64 arrays 0 <= r < den <= 2^53, exactly.

    The inversion of :func:`_exp_neg_frac_exact` with one 64-bit word per
    sample: the word's top 53 bits M place U in [M, M + 1) / 2^53 and are
    compared with the float ``y = tau_j 2^53``. IEEE 754 doubles round
    ``*``, ``/`` and ``-`` correctly (numpy's float64 ufuncs do), so ``y``
    is within 2^8 of the exact value and ``|M - y| > 2^20`` decides the
    comparison (:data:`_BAND`). The samples closer than that (probability
    2^-32 per comparison) are finished exactly on Python integers with the
    same M.
    """
    n = r.size
    top = source.raw(n) >> np.uint64(11)
    m = top.astype(np.float64)  # exact: below 2^53
    y1 = r.astype(np.float64) * (2.0**53 / den)  # tau_1 2^53; r, den < 2^53 are exact doubles
    odd = np.zeros(n, dtype=bool)  # parity of #{j : U < tau_j} so far
    idx, mj, y = np.arange(n), m, y1
    exact = []
    for j in range(1, _MAX_J + 1):
        d = mj - y
        near = np.abs(d) <= _BAND
        if near.any():
            exact.append(idx[near])
        sel = np.flatnonzero(d < -_BAND)
        if not sel.size:
            break
        idx = idx[sel]
        odd[idx] ^= True
        mj, y = m[idx], y[sel] * y1[idx] / ((j + 1) * 2.0**53)  # tau_{j+1} = tau_j (r/den) / (j+1)
    else:
        exact.append(idx)  # U < tau_40 < 1/40!: never in practice, exact all the same
    for i in np.concatenate(exact).tolist() if exact else ():
        u = _LazyUniform(source, int(top[i]), 53)
        odd[i] = not _exp_neg_frac_exact(u, int(r[i]), den)
    return ~odd


def _exp_neg_integer(source: Source, k: np.ndarray) -> np.ndarray:
    """True where ``k[i]`` independent Bernoulli(exp(-1)) trials all succeed,
    i.e. where ``V >= k[i]`` for ``V`` with ``P(V >= v) = exp(-v)``
    (:func:`dpdbscan.release.samplers.integers.geometric_exp_neg1`)."""
    ok = np.ones(k.size, dtype=bool)
    idx = np.flatnonzero(k > 0)
    if idx.size:
        ok[idx] = _random.geometric_exp_neg1(source, idx.size) >= k[idx]
    return ok


class _Acceptance:
    """Bernoulli(exp(-(x - c)^2 / (2 sigma^2))) for integer arrays x, exactly."""

    def __init__(self, sigma2: Fraction, c: Fraction) -> None:
        a, b = sigma2.numerator, sigma2.denominator
        p, q = c.numerator, c.denominator
        g = math.gcd(b, 2 * a * q * q)
        self.w, self.p, self.q, self.den = b // g, p, q, 2 * a * q * q // g
        # |q x - p| <= u_max keeps w u^2 below 2^62 in int64
        u_max = math.isqrt((_WORD62 - 1) // self.w)
        self.fast = self.den <= _FAST_DEN and 0 <= p and p + u_max < _WORD62
        self.x_lo = -((u_max - p) // q) if self.fast else 1  # ceil((p - u_max) / q)
        self.x_hi = (p + u_max) // q if self.fast else 0

    def __call__(self, source: Source, x: np.ndarray) -> np.ndarray:
        if not self.fast:
            return self._one_by_one(source, x)
        if x.size and self.x_lo <= x.min() and x.max() <= self.x_hi:
            return self._vectorised(source, x)
        quick = (x >= self.x_lo) & (x <= self.x_hi)
        ok = np.empty(x.size, dtype=bool)
        ok[quick] = self._vectorised(source, x[quick])
        ok[~quick] = self._one_by_one(source, x[~quick])
        return ok

    def _vectorised(self, source: Source, x: np.ndarray) -> np.ndarray:
        u = x * np.int64(self.q)
        u -= np.int64(self.p)
        u *= u
        if self.w != 1:
            u *= np.int64(self.w)
        k, r = np.divmod(u, np.int64(self.den))
        # exp(-k) first (it rejects 63% of the samples with k >= 1, cheaply),
        # then one word each for the fraction
        ok = np.zeros(x.size, dtype=bool)
        alive = np.flatnonzero(_exp_neg_integer(source, k))
        ok[alive] = _exp_neg_frac(source, r[alive], self.den)
        return ok

    def _one_by_one(self, source: Source, x: np.ndarray) -> np.ndarray:
        ok = np.zeros(x.size, dtype=bool)
        for i, xi in enumerate(x.tolist()):
            u = self.q * xi - self.p
            ok[i] = _bernoulli_exp_neg_int(source, self.w * u * u, self.den)
        return ok


def acceptance_is_fast(sigma2: Fraction) -> bool:
    """Whether :func:`discrete_gaussian` at ``sigma2`` runs vectorised."""
    return _Acceptance(sigma2, sigma2 / (floor_sigma(sigma2) + 1)).fast


# --------------------------------------------------------------------------- #
# samplers


def _rejection(
    n: int,
    rate: float,
    propose: Callable[[int], np.ndarray],
    accept: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """The first ``n`` accepted proposals; ``rate`` only sizes the batches."""
    out = np.empty(n, dtype=np.int64)
    done = 0
    while done < n:
        need = min(n - done, _BLOCK)
        m = int(min(need / max(rate, 1e-9) * 1.03 + 64, 2 * _BLOCK))
        y = propose(m)
        got = y[accept(y)][:need]
        out[done : done + got.size] = got
        done += got.size
    return out


def discrete_gaussian(source: Source, n: int, sigma2: Fraction | int) -> np.ndarray:
    """``n`` exact draws of N_Z(0, sigma^2) (int64), CKS Algorithm 3.

    Expected proposals per draw: ``1 / laplace_acceptance(sigma2, t)``, about
    1.85 at sigma = 1 and 1.32 for large sigma.
    """
    s2 = _as_sigma2(sigma2)
    t = floor_sigma(s2) + 1
    accept = _Acceptance(s2, s2 / t)
    scale = Fraction(1, t)
    return _rejection(
        int(n),
        _gaussian_law.laplace_acceptance(float(s2), t),
        lambda m: _random.discrete_laplace(source, m, scale),
        lambda y: accept(source, np.abs(y)),
    )


def tail_rate(sigma2: Fraction, k: int) -> Fraction:
    """The proposal rate ``lam = s/t`` of :func:`discrete_gaussian_tail`:
    ``t = floor(sigma) + 1`` and ``s = max(1, round(k t / sigma^2))``, so
    ``lam`` is about ``max(k / sigma^2, 1 / t)``: the decay of the tail at k
    (or CKS's choice near the centre). Any ``lam > 0`` gives the exact law."""
    t = floor_sigma(sigma2) + 1
    s = max(1, math.floor(Fraction(k * t) / sigma2 + Fraction(1, 2)))
    return Fraction(s, t)


def discrete_gaussian_tail(source: Source, n: int, sigma2: Fraction | int, k: int) -> np.ndarray:
    """``n`` exact draws of ``Z | Z >= k`` for Z ~ N_Z(0, sigma^2), integer k >= 0.

    Proposal ``k + G``, ``G`` geometric with rate ``lam`` (:func:`tail_rate`),
    accepted with probability ``exp(-(k + G - lam sigma^2)^2 / (2 sigma^2))``.
    Expected proposals per draw:
    ``1 / ((1 - e^-lam) exp(lam k - lam^2 sigma^2 / 2) T_k)``,
    ``T_k = sum_{j >= k} exp(-j^2 / (2 sigma^2))``
    (:func:`dpdbscan.laws.discretegaussian.tail_acceptance`): about 1.3 at k = 0,
    1.5 at k = sigma and closer to 1 further out.
    """
    s2 = _as_sigma2(sigma2)
    k = int(k)
    if k < 0:
        raise ValueError(f"the tail sampler needs k >= 0, got k={k!r}")
    lam = tail_rate(s2, k)
    accept = _Acceptance(s2, lam * s2)
    return _rejection(
        int(n),
        _gaussian_law.tail_acceptance(float(s2), k, float(lam)),
        lambda m: _random.discrete_geometric(source, m, lam) + k,
        lambda x: accept(source, x),
    )


# --------------------------------------------------------------------------- #
# the rational sigma^2


def rational_sigma2(sigma2: float | Fraction, max_den: int = 1 << 20) -> Fraction:
    """sigma^2 rounded *up* to a rational with denominator <= ``max_den`` on
    which :func:`discrete_gaussian` runs vectorised.

    More noise never weakens the guarantee (rho = Delta^2 / (2 sigma^2) only
    falls). In order, the first candidate whose acceptance is fast:

    1. the closest fraction with denominator <= ``max_den``, or the next
       multiple of ``1/max_den`` when that one is below (so 1e6, 2.5 or
       2/3 are kept as they are);
    2. the next multiple of ``t / 2^j`` (``t = floor(sigma) + 1``), for
       j = log2(max_den) down to 0: then t divides the numerator and
       ``D = 2 a b`` stays small; the relative excess is below
       ``t / (2^j sigma^2)``, about ``1 / (2^j sigma)``;
    3. ``t (t + 1)``, next t + 1 divides (only when sigma^2 lies just
       below t^2 and sigma is large): relative excess below ``2 / sigma``.

    Raises ValueError when none is fast (sigma above about 10^7).
    """
    x = Fraction(sigma2)
    if not x > 0:
        raise ValueError(f"sigma^2 must be positive, got sigma2={sigma2!r}")
    f = x.limit_denominator(max_den)
    if f < x:
        f = Fraction(math.ceil(x * max_den), max_den)
    if acceptance_is_fast(f):
        return f
    t = floor_sigma(x) + 1
    for j in range(max_den.bit_length() - 1, -1, -1):
        b = 1 << j
        f = Fraction(t * math.ceil(x * b / t), b)
        if acceptance_is_fast(f):
            return f
    f = Fraction(t * (t + 1))
    if acceptance_is_fast(f):
        return f
    raise ValueError(f"sigma^2={float(x):.6g} is too large for the exact discrete Gaussian sampler")
