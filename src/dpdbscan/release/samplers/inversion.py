"""Exact discrete Laplace and geometric noise by inversion of a lazily refined
uniform: one 16-bit word and one table look-up per sample in the common case.

The laws, for a rational ``epsilon = s/t > 0`` and ``q = exp(-epsilon)``:

* discrete Laplace, ``P(Z = z) = (1 - q) / (1 + q) q^|z|``, with CDF
  ``F(z) = q^-z / (1 + q)`` for ``z <= -1`` and ``1 - q^(z+1) / (1 + q)``
  for ``z >= 0``;
* geometric, ``P(G = g) = (1 - q) q^g`` for ``g >= 0``, with CDF
  ``F(g) = 1 - q^(g+1)``.

Exactness
---------
1. *Inversion.* For a uniform real ``U`` in [0, 1), ``Z = min{z : U < F(z)}``
   has exactly the law F. The sampler covers the body ``|z| <= M`` (Laplace)
   or ``g < M`` (geometric) with the ``m`` boundaries ``F(c_0) < ... <
   F(c_{m-1})`` (``c_j = j - M - 1``, ``m = 2M + 2``; geometric: ``c_j = j``,
   ``m = M``) and computes the outcome index ``i = #{j : F(c_j) <= U}``: for
   the Laplace ``i = 0`` means ``Z <= -M - 1``, ``i = m`` means
   ``Z >= M + 1`` and any other i means ``Z = c_i``; for the geometric
   ``i < m`` means ``G = i`` and ``i = m`` means ``G >= M``.
2. *The tails by memorylessness.* Given ``Z >= M + 1``, ``Z - M - 1`` is
   geometric with the same q (``P(Z = M + 1 + g) / P(Z >= M + 1) =
   (1 - q) q^g``); given ``Z <= -M - 1``, so is ``-Z - M - 1``; given
   ``G >= M``, so is ``G - M``. Those few samples draw that geometric afresh
   (fresh words, independent of the U that chose the tail), which recurses
   into this same sampler.
3. *A lazily refined uniform.* ``U``'s first ``K1 = 16`` bits ``R`` index a
   table. Let ``T_j = floor(F(c_j) 2^K)``. If ``T_j < R`` then
   ``F(c_j) < (T_j + 1) 2^-K <= R 2^-K <= U``; if ``T_j > R`` then
   ``F(c_j) >= (R + 1) 2^-K > U``. So where no ``T_j`` (at ``K = K1``) equals
   R the index is ``#{j : T_j < R}``, read from the table, exactly. The few
   *flagged* buckets R that hold a threshold draw 48 more bits of U (from a
   fresh 64-bit word) and compare the 64-bit prefix with the thresholds at
   ``K2 = 64`` bits the same way (a binary search). Only where that prefix
   equals a threshold (probability about ``m 2^-64`` per sample) is U
   refined by 64 bits at a time in Python integers, the thresholds at that
   precision computed on demand, until no threshold ties. The refining bits
   are fresh uniform bits, so U is uniform and i has exactly the law
   ``F(c_i) - F(c_{i-1})``.
4. *Exact thresholds.* ``floor(F(c_j) 2^K)`` is computed with the rigorous
   outward-rounded interval arithmetic of :mod:`.skipping` (correctly
   rounded ``exp`` in :mod:`decimal`, widened by one unit) and accepted only
   when both ends of the interval give the same integer, else the precision
   is raised. This terminates: ``q = exp(-epsilon)`` is transcendental for
   rational ``epsilon > 0`` (Lindemann), and ``F(c_j) 2^K`` is a
   non-constant rational function of q with rational coefficients
   (``q^k / (1 + q) = r`` or ``1 - q^k / (1 + q) = r`` or ``1 - q^k = r``
   with r rational and ``k >= 1`` would make q algebraic), so it is never an
   integer. Where ``F = 1 - p`` the floor is taken as
   ``2^K - 1 - floor(p 2^K)`` (equal, as ``p 2^K`` is not an integer), so
   that no digits are lost to the cancellation in ``1 - p`` (at large
   epsilon p is far below any working precision). A precision cap (:data:`.skipping.MAX_EXTRA_DIGITS`) is kept
   anyway and raises :class:`.skipping.ThresholdUndecided`.

The layout (``M`` and the table) is a function of epsilon and the bit counts
alone, public: M is (about) the least with ``P(Z >= M + 1) < 2^-K1`` (geometric:
``P(G >= M) <= 2^-K1``), checked on the exact thresholds, so that the tails
are reached only from flagged buckets. It does not change the law. Where
M would exceed :data:`MAX_M` (epsilon below about 0.0027) the tables would be
large and most buckets flagged, and :func:`applies` says no: the callers in
:mod:`.integers` keep the Canonne-Kamath-Steinke rounds there.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

from .skipping import _PREC_STEP, MAX_EXTRA_DIGITS, ThresholdUndecided, _floor_scaled, _Iv, refine_tie
from .source import Source

#: Bits of U in the table's index; tests lower it (with :data:`LEVEL2_BITS`) to force ties
TABLE_BITS = 16
#: Bits of U compared at the second level (at most 64; one 64-bit word supplies
#: the ``LEVEL2_BITS - TABLE_BITS`` bits after the table's)
LEVEL2_BITS = 64
#: Words looked up at a time (:meth:`_Table.indices`)
LOOKUP_CHUNK = 1 << 16
#: The largest body half-width M the tables are built for (:func:`applies`)
MAX_M = 4096
_FLAG = np.iinfo(np.int16).min  # table entry of a flagged bucket (never an outcome: |z| <= MAX_M + 1)


def _half_width(kind: str, epsilon: Fraction, table_bits: int) -> int:
    """M from floats (the exact check in :class:`_Table` may raise it by one or two)."""
    e = float(epsilon)
    need = table_bits * math.log(2.0)
    if kind == "laplace":
        # q^(M+1) / (1 + q) < 2^-K1
        m = math.ceil((need - math.log1p(math.exp(-e))) / e) - 1
    else:
        m = math.ceil(need / e)  # q^M <= 2^-K1
    return max(m, 0 if kind == "laplace" else 1)


def applies(epsilon: Fraction) -> bool:
    """Whether the inversion tables are built for this epsilon (public: M <= MAX_M
    for both laws; the geometric's M is the larger)."""
    return _half_width("geometric", Fraction(epsilon), TABLE_BITS) <= MAX_M


class _Table:
    """The thresholds and look-up table of one law at one epsilon."""

    def __init__(self, kind: str, epsilon: Fraction, table_bits: int, level2_bits: int) -> None:
        if not 0 < table_bits <= 16 or not table_bits < level2_bits <= 64:
            raise ValueError("need 0 < table_bits <= 16 and table_bits < level2_bits <= 64")
        self.kind, self.epsilon = kind, Fraction(epsilon)
        self.k1, self.k2 = table_bits, level2_bits
        self.M = _half_width(kind, self.epsilon, table_bits)
        if self.M > MAX_M:
            raise ValueError(f"epsilon = {self.epsilon} is too small for the inversion tables (M = {self.M})")
        self._exact: dict[tuple[int, int], int] = {}
        while True:
            self.m = 2 * self.M + 2 if kind == "laplace" else self.M
            self.offset = -self.M - 1 if kind == "laplace" else 0
            self.t2 = np.asarray(self._floors(range(self.m), self.k2), dtype=np.uint64)
            t1 = self.t2 >> np.uint64(self.k2 - self.k1)
            # the tails only from flagged buckets: T_0 = 0 (Laplace) and T_{m-1} = 2^K1 - 1
            top = (1 << self.k1) - 1
            if int(t1[-1]) == top and (kind != "laplace" or int(t1[0]) == 0):
                break
            self.M += 1  # (the int16 table holds |z| <= MAX_M + 3: the floats miss by one at most)
        r = np.arange(1 << self.k1, dtype=np.uint64)
        idx = np.searchsorted(t1, r, side="left")
        table = (idx + self.offset).astype(np.int16)
        table[np.isin(r, t1)] = _FLAG
        self.table = table

    # ----------------------------------------------------------------- exact floors

    def _exponent(self, j: int) -> tuple[int, bool]:
        """``F(c_j) = p_e`` or ``1 - p_e``: (e, whether 1 - p_e), with
        ``p_e = q^e / (1 + q)`` (Laplace) or ``q^e`` (geometric)."""
        if self.kind == "laplace":
            c = j - self.M - 1
            return (-c, False) if c <= -1 else (c + 1, True)
        return j + 1, True

    def _intervals(self, prec: int, js) -> list:
        """Intervals of ``p_e`` (not of F: see :meth:`_floors`) for each j."""
        iv = _Iv(prec)
        eps = iv.frac(self.epsilon)
        es = [self._exponent(j) for j in js]
        need = sorted({e for e, _ in es})
        pw: dict[int, tuple[Decimal, Decimal]] = {}
        if len(need) <= 8:
            for e in need:
                pw[e] = iv.exp(iv.neg(iv.scale(eps, e)))
        else:
            q = iv.exp(iv.neg(eps))
            cur = q
            want = set(need)
            for e in range(1, need[-1] + 1):
                if e > 1:
                    cur = iv.mul_pos(cur, q)
                if e in want:
                    pw[e] = cur
        if self.kind == "laplace":
            q = iv.exp(iv.neg(eps))
            one_plus_q = (iv.lo.add(1, q[0]), iv.hi.add(1, q[1]))
            pw = {e: iv.div_pos(x, one_plus_q) for e, x in pw.items()}
        return [pw[e] for e, _ in es]

    def _floors(self, js, K: int) -> list[int]:
        """floor(F(c_j) 2^K) for each j, exactly (precision raised until decided).

        Decided on ``p_e`` alone, without the cancellation of ``1 - p_e``
        (at epsilon = 10^4, ``1 - q/(1 + q)`` differs from 1 in the 4343rd
        digit): ``p_e 2^K`` is never an integer, so for ``F = 1 - p_e``
        ``floor(F 2^K) = 2^K - ceil(p_e 2^K) = 2^K - 1 - floor(p_e 2^K)``."""
        js = list(js)
        upper = [self._exponent(j)[1] for j in js]
        prec = 30 + int(K * 0.302) + len(str(self.epsilon))
        cap = prec + MAX_EXTRA_DIGITS
        while prec <= cap:
            ivs = self._intervals(prec, js)
            lo = [_floor_scaled(x[0], K, prec) for x in ivs]
            hi = [_floor_scaled(x[1], K, prec) for x in ivs]
            if lo == hi:
                top = (1 << K) - 1
                return [top - f if u else f for f, u in zip(lo, upper)]
            prec += _PREC_STEP
        raise ThresholdUndecided(
            f"could not determine a threshold of the {self.kind} inversion sampler at "
            f"epsilon = {self.epsilon} within {MAX_EXTRA_DIGITS} extra digits (K = {K})"
        )

    def exact_floor(self, j: int, K: int) -> int:
        key = (j, K)
        if key not in self._exact:
            self._exact[key] = self._floors([j], K)[0]
        return self._exact[key]

    # ----------------------------------------------------------------- sampling

    def indices(self, source: Source, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(out, flagged, index)``: ``out`` (int64) holds ``c_i`` for every
        sample decided by the table; ``flagged`` are the other samples'
        positions and ``index`` their outcome indices i (0 .. m)."""
        words = source.raw((n + 3) // 4).view(np.uint16)[:n]
        if self.k1 < 16:
            words = words >> np.uint16(16 - self.k1)
        # the look-up a chunk at a time, its codes still in the cache when
        # they are widened and searched for flags (3.76M words: 7.7 -> 5.4 ms)
        out = np.empty(n, dtype=np.int64)
        parts = []
        for a in range(0, n, LOOKUP_CHUNK):
            code = np.take(self.table, words[a : a + LOOKUP_CHUNK])
            out[a : a + code.size] = code
            at = np.flatnonzero(code == _FLAG)
            if at.size:
                at += a
                parts.append(at)
        flagged = np.concatenate(parts) if parts else np.empty(0, dtype=np.intp)
        if not flagged.size:
            return out, flagged, flagged
        extra = self.k2 - self.k1
        prefix = words[flagged].astype(np.uint64) << np.uint64(extra)
        prefix |= source.raw(flagged.size) >> np.uint64(64 - extra)
        index = np.searchsorted(self.t2, prefix, side="left")
        inside = np.minimum(index, self.m - 1)
        for k in np.flatnonzero((index < self.m) & (self.t2[inside] == prefix)):
            index[k] = self._resolve(source, int(prefix[k]), int(index[k]))
        return out, flagged, index

    def _resolve(self, source: Source, prefix: int, first: int) -> int:
        """The index when the K2-bit prefix of U equals T_j for j >= first:
        refine U by 64 bits at a time; at each precision K the floors are
        non-decreasing in j, so the j below the prefix, tied with it and above
        it are three runs, found by bisection."""
        lo = first
        hi = int(np.searchsorted(self.t2, self.t2[first], side="right"))
        return refine_tie(source, self.exact_floor, prefix, self.k2, lo, hi)


@functools.lru_cache(maxsize=32)
def _table(kind: str, epsilon: Fraction, table_bits: int, level2_bits: int) -> _Table:
    return _Table(kind, epsilon, table_bits, level2_bits)


def _get(kind: str, epsilon: Fraction) -> _Table:
    return _table(kind, Fraction(epsilon), TABLE_BITS, LEVEL2_BITS)


def geometric(source: Source, n: int, epsilon: Fraction) -> np.ndarray:
    """``n`` exact samples (int64) of G >= 0 with P(G = g) = (1 - q) q^g, q = exp(-epsilon)."""
    tab = _get("geometric", epsilon)
    out, flagged, index = tab.indices(source, int(n))
    out[flagged] = index
    far = flagged[index == tab.m]
    if far.size:  # G >= M: G - M is geometric again
        out[far] += geometric(source, far.size, epsilon)
    return out


def discrete_laplace(source: Source, n: int, epsilon: Fraction) -> np.ndarray:
    """``n`` exact samples (int64) of Z with P(Z = z) proportional to exp(-epsilon |z|)."""
    tab = _get("laplace", epsilon)
    out, flagged, index = tab.indices(source, int(n))
    out[flagged] = index + tab.offset
    low = flagged[index == 0]
    high = flagged[index == tab.m]
    if low.size or high.size:  # |Z| >= M + 1: |Z| - M - 1 is geometric
        g = geometric(source, low.size + high.size, epsilon)
        out[low] -= g[: low.size]
        out[high] += g[low.size :]
    return out
