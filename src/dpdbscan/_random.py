"""Sources of randomness and exact integer samplers built on them.

Two sources share one interface, ``raw(n) -> uint64 array``:

* :class:`SecureSource` reads the operating system's CSPRNG (``os.urandom``).
  It is the default (``random_state=None``).
* :class:`SeededSource` wraps numpy's PCG64 for reproducible research runs. It is
  not cryptographically secure and the estimator warns when it is used.

Everything else here turns raw 64-bit words into exact samples with integer
arithmetic only: uniform integers below a bound (rejection sampling),
Bernoulli(num/den), Bernoulli(exp(-num/den)) and the discrete Laplace
distribution, following Canonne, Kamath and Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), Algorithms 1 and 2, vectorised over
arrays: each round advances every sample that is still running.
"""

from __future__ import annotations

import os
import warnings
from fractions import Fraction

import numpy as np

_TWO63 = np.uint64(1 << 63)


class SecureSource:
    """Raw 64-bit words from the operating system's CSPRNG."""

    secure = True

    def raw(self, n: int) -> np.ndarray:
        if n <= 0:
            return np.empty(0, dtype=np.uint64)
        return np.frombuffer(os.urandom(8 * int(n)), dtype=np.uint64).copy()

    def numpy_generator(self) -> np.random.Generator:
        """A numpy generator seeded with 256 fresh bits from the OS CSPRNG.

        Only used where we document a floating-point approximation (the
        Binomial count of released empty cells, continuous Laplace noise).
        """
        return np.random.default_rng(int.from_bytes(os.urandom(32), "little"))


class SeededSource:
    """Reproducible 64-bit words from numpy's PCG64. Not secure."""

    secure = False

    def __init__(self, seed):
        if isinstance(seed, np.random.Generator):
            self._gen = seed
        else:
            self._gen = np.random.default_rng(seed)

    def raw(self, n: int) -> np.ndarray:
        if n <= 0:
            return np.empty(0, dtype=np.uint64)
        return self._gen.bit_generator.random_raw(int(n)).astype(np.uint64, copy=False)

    def numpy_generator(self) -> np.random.Generator:
        return self._gen


class InsecureRandomnessWarning(UserWarning):
    """A seeded, reproducible random source was used for a DP release."""


def make_source(random_state, *, warn: bool = True):
    """``None`` -> secure OS randomness; an int/Generator -> seeded (warns)."""
    if random_state is None:
        return SecureSource()
    if isinstance(random_state, (SecureSource, SeededSource)):
        return random_state
    if isinstance(random_state, (bool, float)) or not isinstance(
        random_state, (int, np.integer, np.random.Generator)
    ):
        raise TypeError(
            f"random_state must be None, an int or a numpy Generator, got {random_state!r}"
        )
    if warn:
        warnings.warn(
            "random_state is set: the noise is reproducible and NOT cryptographically "
            "secure. Use random_state=None for a real release.",
            InsecureRandomnessWarning,
            stacklevel=3,
        )
    return SeededSource(random_state)


# --------------------------------------------------------------------------- #
# exact integer samplers


def randbelow(source, m) -> np.ndarray:
    """Uniform integers in ``[0, m)`` for each bound in ``m`` (1 <= m < 2**63).

    Rejection sampling on 63-bit words, so the result is exactly uniform.
    """
    m = np.asarray(m, dtype=np.uint64)
    shape = m.shape
    m = m.ravel()
    out = np.empty(m.size, dtype=np.uint64)
    todo = np.arange(m.size)
    mm = m
    while todo.size:
        x = source.raw(todo.size) >> np.uint64(1)
        limit = (_TWO63 // mm) * mm
        ok = x < limit
        out[todo[ok]] = x[ok] % mm[ok]
        todo = todo[~ok]
        mm = mm[~ok]
    return out.reshape(shape)


def bernoulli_exp_neg(source, num, den: int) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for integer arrays ``0 <= num <= den``.

    CKS Algorithm 1 (case gamma <= 1): draw Bernoulli(gamma/k) for k = 1, 2, ...
    until the first failure; the result is 1 iff that k is odd.
    """
    num = np.asarray(num, dtype=np.uint64).ravel()
    n = num.size
    out = np.zeros(n, dtype=bool)
    idx = np.arange(n)
    k = np.ones(n, dtype=np.uint64)
    nm = num
    den = np.uint64(den)
    while idx.size:
        a = randbelow(source, den * k) < nm
        stop = ~a
        out[idx[stop]] = (k[stop] & np.uint64(1)) == 1
        keep = a
        idx, k, nm = idx[keep], k[keep] + np.uint64(1), nm[keep]
    return out


_KMAX = 64
# Bernoulli(1/k) from a 32-bit word w: accept w < floor(2**32/k), reject (redraw)
# when w >= k * floor(2**32/k), so that the success probability is exactly 1/k.
_INV_K = np.array([0] + [(1 << 32) // k for k in range(1, _KMAX + 1)], dtype=np.uint64)
_INV_K_LIMIT = np.array([0] + [k * ((1 << 32) // k) for k in range(1, _KMAX + 1)], dtype=np.uint64)


def _raw32(source, n: int) -> np.ndarray:
    return source.raw((n + 1) // 2).view(np.uint32)[:n].astype(np.uint64)


def geometric_exp_neg1(source, n: int) -> np.ndarray:
    """``V`` with P(V >= v) = exp(-v): count Bernoulli(exp(-1)) successes.

    One flat loop over the Bernoulli(1/k) trials that make up each
    Bernoulli(exp(-1)) (CKS Algorithm 1 with gamma = 1). ``k`` beyond 64 has
    probability below 1/64! and is handled by the general :func:`randbelow`.
    """
    v = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    k = np.ones(n, dtype=np.int64)
    while idx.size:
        m = idx.size
        if k.max() <= _KMAX:
            w = _raw32(source, m)
            valid = w < _INV_K_LIMIT[k]
            a = w < _INV_K[k]
        else:  # astronomically rare: fall back to exact general sampling
            valid = np.ones(m, dtype=bool)
            a = randbelow(source, k.astype(np.uint64)) == 0
        ended = valid & ~a
        odd = (k & 1) == 1
        v[idx[ended & odd]] += 1
        k = np.where(valid & a, k + 1, np.where(ended, 1, k))
        keep = ~(ended & ~odd)
        if keep.sum() < m:
            idx, k = idx[keep], k[keep]
    return v


def rational_epsilon(epsilon: float, max_den: int = 1 << 20) -> Fraction:
    """The largest fraction s/t <= epsilon with t <= max_den.

    Rounding epsilon *down* keeps the guarantee: noise for a smaller epsilon is
    at least as private.
    """
    f = Fraction(epsilon).limit_denominator(max_den)
    if f > Fraction(epsilon):
        f = Fraction(int(Fraction(epsilon) * max_den), max_den)
    if f <= 0:
        raise ValueError(f"epsilon={epsilon!r} is too small to represent exactly")
    return f


def _one_sided(source, n: int, s: int, t: int) -> np.ndarray:
    """Y >= 0 with P(Y = y) proportional to exp(-y * s / t), exactly (CKS Alg. 2)."""
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        m = todo.size
        if t == 1:
            u = np.zeros(m, dtype=np.uint64)
            ok = np.ones(m, dtype=bool)
        else:
            u = randbelow(source, np.full(m, t, dtype=np.uint64))
            ok = bernoulli_exp_neg(source, u, t)
        cnt = int(ok.sum())
        v = geometric_exp_neg1(source, cnt)
        x = u[ok].astype(np.int64) + t * v
        out[todo[ok]] = x // s
        todo = todo[~ok]
    return out


def discrete_laplace(source, n: int, epsilon: Fraction) -> np.ndarray:
    """``n`` exact samples with P(Z = z) proportional to exp(-epsilon |z|)."""
    s, t = epsilon.numerator, epsilon.denominator
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        m = todo.size
        y = _one_sided(source, m, s, t)
        neg = (source.raw(m) & np.uint64(1)) == 1
        ok = ~(neg & (y == 0))  # reject "-0" so that 0 is not counted twice
        out[todo[ok]] = np.where(neg[ok], -y[ok], y[ok])
        todo = todo[~ok]
    return out


def discrete_geometric(source, n: int, epsilon: Fraction) -> np.ndarray:
    """``n`` exact samples of G >= 0 with P(G = g) proportional to exp(-epsilon g)."""
    return _one_sided(source, n, epsilon.numerator, epsilon.denominator)


def uniform01(source, n: int) -> np.ndarray:
    """Floats in [0, 1) with 53 random bits (for the continuous-noise variant)."""
    return (source.raw(n) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
