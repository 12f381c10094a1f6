"""Exact Bernoulli(p) processes over huge index ranges, for the empty cells of
the sparse histogram.

The sparse histogram must release every empty cell independently with
probability ``p = P(Z >= theta)``. Walking the cells is out of the question
(10^8 to 10^30 of them), so the released ones are found by *geometric
skipping*: in a sequence of i.i.d. Bernoulli(p) trials the numbers of failures
between successes are i.i.d. Geometric(p), ``P(G >= g) = miss^g`` with
``miss = 1 - p`` (the chance one trial misses). This module samples G exactly, with integer comparisons on
random words only: no floating-point sampler, no approximation.

Exactness
---------
``p`` is a real number known through rigorous intervals at any requested
precision (:class:`ExactProbability`). :class:`TailProbability` is
``p = exp(-a) / (1 + exp(-b))`` for rationals a, b: the discrete Laplace tail
``q^k / (1 + q)`` with ``q = exp(-epsilon)`` (``a = k epsilon``,
``b = epsilon``, epsilon rational) and the continuous one
``exp(-epsilon theta) / 2`` (``b = 0``). The discrete Gaussian's tail is
:class:`dpdbscan.release.samplers.gaussian_tail.GaussianTailProbability`.

1. *Digits.* Write ``G = L + 2^o H`` with ``L = G mod 2^o``. Because
   ``P(G = g)`` is proportional to ``miss^g`` and ``miss^g`` factorises over any
   positional split of ``g``, ``H`` is Geometric with ratio ``miss^(2^o)`` and
   independent of ``L``, and ``L``'s base-``2^w`` digits are independent,
   digit ``c`` (bits ``o_c .. o_c + w - 1``) truncated geometric on
   ``[0, 2^w)`` with ratio ``r = miss^(2^o_c)``:
   ``P(D <= l) = (1 - r^(l+1)) / (1 - r^(2^w))``. ``H`` is sampled capped: the
   outcomes ``0 .. 2^w - 1`` with ``P(H <= h) = 1 - r^(h+1)``, plus "overflow"
   (``H >= 2^w``, probability ``r^(2^w)``), after which ``H - 2^w`` is again
   Geometric with the same ratio (memorylessness) and is drawn afresh.
2. *Inversion with a lazily refined uniform.* Each digit is
   ``min{l : U < F(l)}`` for a uniform ``U`` in [0, 1), F its CDF. The first
   32 bits ``R`` of ``U`` are compared with ``T_l = floor(F(l) 2^32)``:
   ``R < T_l`` means ``U < F(l)`` and ``R > T_l`` means ``U > F(l)``, exactly.
   Only when ``R == T_l`` (probability at most ``2^-32`` per threshold) are
   64 more bits of ``U`` drawn and compared with ``floor(F(l) 2^96)``, and so
   on. So each digit has exactly the law ``F(l) - F(l-1)``.
3. *Exact thresholds.* ``floor(F(l) 2^K)`` is computed with rigorous interval
   arithmetic in :mod:`decimal`: ``exp`` and ``ln`` are correctly rounded
   there (Python documents both), each result is widened by one unit of its
   last place, and every other operation rounds outward (``ROUND_FLOOR`` /
   ``ROUND_CEILING``). A floor is accepted only when both ends of the
   interval give the same integer; otherwise the precision is raised. For
   :class:`TailProbability` this terminates because ``F(l) 2^K`` is never an
   integer: for ``a > 0`` or ``b > 0`` the number ``exp(-a)`` or ``exp(-b)``
   is transcendental (Lindemann), hence so is ``miss`` and every ``r^j``, and
   ``F(l)`` is a non-constant rational function of one of them. The one
   rational case, ``p = 1/2`` (``a = b = 0``), is sampled separately:
   Geometric(1/2) is the number of 1 bits before the first 0 in fair bits.
   Where no such argument is known (the discrete Gaussian) the precision is
   capped (:data:`MAX_EXTRA_DIGITS`) and :func:`_Digit._floors` raises a
   :class:`ThresholdUndecided` naming the probability, a function of public
   parameters only.

The float value of ``p`` only chooses the digit layout (how many bits, which
are public and do not change the law). The expected work is linear in the
number of successes: one 32-bit word per gap in the common case.
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from itertools import accumulate
from typing import Protocol

import numpy as np

from ...cells.keys import popcount
from .source import Source

FAST_BITS = 32  # bits of U compared with the fast table; tests lower it to force ties
_WIDTH = 12  # bits per digit: tables of at most 4096 thresholds
_OVERFLOW_LOG2 = 12  # the top digit overflows with probability about 2^-12
_MAX_BATCH = 1 << 20
_PREC_STEP = 20  # digits added when an interval cannot decide a floor
MAX_EXTRA_DIGITS = 40 * _PREC_STEP  # beyond the first attempt's precision


class ThresholdUndecided(RuntimeError):
    """A threshold ``floor(F(l) 2^K)`` was not decided within the precision cap."""


Interval = tuple[Decimal, Decimal]


class ExactProbability(Protocol):
    """A real number p in (0, 1) given by rigorous intervals.

    ``log_miss(iv)`` encloses ``ln(1 - p)`` at the precision of ``iv``; the
    float methods only choose the digit layout and batch sizes. Instances
    are hashable (the digit tables are cached per probability).
    """

    @property
    def is_half(self) -> bool: ...

    def __float__(self) -> float: ...

    def __hash__(self) -> int: ...

    def neg_log_miss(self) -> float: ...

    def digits_of_inverse(self) -> int: ...

    def log_miss(self, iv: _Iv) -> Interval: ...


class TailProbability:
    """The real number ``p = exp(-a) / (1 + exp(-b))`` for rationals a, b >= 0."""

    def __init__(self, a: Fraction | int | float, b: Fraction | int | float) -> None:
        self.a, self.b = Fraction(a), Fraction(b)
        if self.a < 0 or self.b < 0:
            raise ValueError("the tail probability needs a, b >= 0")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TailProbability) and (self.a, self.b) == (other.a, other.b)

    def __hash__(self) -> int:
        return hash((TailProbability, self.a, self.b))

    def __repr__(self) -> str:
        return f"TailProbability(a={self.a}, b={self.b})"

    @classmethod
    def discrete(cls, epsilon: Fraction, theta: float) -> TailProbability:
        """P(Z >= theta) = q^k / (1 + q), q = exp(-epsilon), k = ceil(theta) >= 0."""
        k = max(math.ceil(theta), 0)
        return cls(k * Fraction(epsilon), Fraction(epsilon))

    @classmethod
    def continuous(cls, epsilon: float, theta: float) -> TailProbability:
        """P(Z >= theta) = exp(-epsilon theta) / 2 for Laplace(1/epsilon), theta >= 0."""
        return cls(Fraction(epsilon) * Fraction(max(theta, 0.0)), 0)

    def __float__(self) -> float:
        return math.exp(-float(self.a)) / (1.0 + math.exp(-float(self.b)))

    @property
    def is_half(self) -> bool:
        return self.a == 0 and self.b == 0

    def neg_log_miss(self) -> float:
        """c = -ln(1 - p) in floating point (layout only), 0 if p underflows."""
        return -math.log1p(-float(self))

    def digits_of_inverse(self) -> int:
        """About log10(1/p): how many decimal digits of 1 - p are all 9s."""
        return max(0, math.ceil((float(self.a) + math.log1p(math.exp(-float(self.b)))) / math.log(10)))

    def log_miss(self, iv: _Iv) -> Interval:
        """Interval of ln(miss) = ln(1 - p) < 0."""
        ea = iv.exp(iv.neg(iv.frac(self.a)))
        eb = iv.exp(iv.neg(iv.frac(self.b)))
        one_plus_eb = (iv.lo.add(1, eb[0]), iv.hi.add(1, eb[1]))
        p = iv.div_pos(ea, one_plus_eb)
        miss = iv.one_minus(p)
        if miss[0] <= 0:
            raise ArithmeticError("precision too low")
        return iv.ln(miss)


# --------------------------------------------------------------------------- #
# rigorous interval arithmetic in decimal


def _ctx(prec: int, rounding) -> decimal.Context:
    return decimal.Context(prec=prec, rounding=rounding, Emin=-999999999, Emax=999999999)


class _Iv:
    """Outward-rounded interval arithmetic at ``prec`` significant digits."""

    def __init__(self, prec: int):
        self.prec = prec
        self.lo = _ctx(prec, decimal.ROUND_FLOOR)
        self.hi = _ctx(prec, decimal.ROUND_CEILING)
        self.near = _ctx(prec, decimal.ROUND_HALF_EVEN)
        self.ulp = decimal.Decimal(1).scaleb(1 - prec)  # relative size of one unit

    def frac(self, f: Fraction):
        return (self.lo.divide(f.numerator, f.denominator), self.hi.divide(f.numerator, f.denominator))

    def _widen(self, r):
        """r is correctly rounded (error <= half a unit); widen by a full unit."""
        d = self.hi.multiply(abs(r), self.ulp)
        return self.lo.subtract(r, d), self.hi.add(r, d)

    def exp(self, x):
        lo = self._widen(self.near.exp(x[0]))[0]
        hi = self._widen(self.near.exp(x[1]))[1]
        return lo, hi

    def ln(self, x):
        lo = self._widen(self.near.ln(x[0]))[0]
        hi = self._widen(self.near.ln(x[1]))[1]
        return lo, hi

    def neg(self, x):
        # through the contexts: unary minus on a Decimal rounds to the
        # thread's default context (28 digits, half-even), which neither
        # keeps the precision nor rounds outward
        return self.lo.minus(x[1]), self.hi.minus(x[0])

    def one_minus(self, x):
        return self.lo.subtract(1, x[1]), self.hi.subtract(1, x[0])

    def scale(self, x, n: int):
        """n * x for an integer n >= 0."""
        return self.lo.multiply(x[0], n), self.hi.multiply(x[1], n)

    def mul_pos(self, x, y):
        return self.lo.multiply(x[0], y[0]), self.hi.multiply(x[1], y[1])

    def div_pos(self, x, y):
        return self.lo.divide(x[0], y[1]), self.hi.divide(x[1], y[0])


def _floor_scaled(x, K: int, prec: int) -> int:
    """floor(x * 2^K) exactly (the product is exact at this precision)."""
    ctx = _ctx(prec + int(K * 0.302) + 10, decimal.ROUND_FLOOR)
    return int(ctx.multiply(x, 2**K).to_integral_value(rounding=decimal.ROUND_FLOOR))


class _Digit:
    """One digit of G: bits ``offset .. offset + width - 1``.

    ``top=False``: truncated geometric on [0, 2^width) with ratio
    ``r = miss^(2^offset)``, CDF ``(1 - r^(l+1)) / (1 - r^m)``, thresholds for
    l = 0 .. m - 2. ``top=True``: capped geometric, CDF ``1 - r^(h+1)``,
    thresholds for h = 0 .. m - 1; outcome m means overflow.
    """

    def __init__(self, tail: ExactProbability, offset: int, width: int, top: bool):
        self.tail, self.offset, self.width, self.top = tail, offset, width, top
        self.m = 1 << width
        self.n_thresholds = self.m if top else self.m - 1
        self._exact: dict[tuple[int, int], int] = {}
        self.fast_bits = FAST_BITS
        self.fast = self._fast_table()
        # guide table (Chen and Asau): guide[i] = #{l : T_l < i 2^shift}
        self.shift = max(self.fast_bits - _WIDTH, 0)
        starts = np.arange(1 << (self.fast_bits - self.shift), dtype=np.uint64) << np.uint64(self.shift)
        self.guide = np.searchsorted(self.fast, starts, side="left").astype(np.int64)
        # ... and T_{guide[i]}, the first threshold a value of bucket i is
        # compared with (past the last threshold: a value no R reaches)
        self.guide_next = np.full(self.guide.size, np.iinfo(np.uint64).max, dtype=np.uint64)
        below = self.guide < self.fast.size
        self.guide_next[below] = self.fast[self.guide[below]]

    def _prec0(self) -> int:
        # 1 - r^j is about j 2^offset p: keep ~25 digits beyond its leading zeros
        lost = max(0, self.tail.digits_of_inverse() - int(self.offset * 0.301))
        return 30 + lost

    def _cdf_intervals(self, prec: int, ls):
        """Intervals of F(l) for each l in ``ls`` (sorted), at ``prec`` digits."""
        iv = _Iv(prec)
        log_r = iv.scale(self.tail.log_miss(iv), 1 << self.offset)
        need = sorted({int(lv) + 1 for lv in ls} | ({self.m} if not self.top else set()))
        # powers r^j by exp(j ln r) when few are needed, else by a chain of products
        pw = {}
        if len(need) <= 8:
            for j in need:
                pw[j] = iv.exp(iv.scale(log_r, j))
        else:
            r = iv.exp(log_r)
            cur = r
            top = need[-1]
            want = set(need)
            for j in range(1, top + 1):
                if j > 1:
                    cur = iv.mul_pos(cur, r)
                if j in want:
                    pw[j] = cur
        out = []
        den = iv.one_minus(pw[self.m]) if not self.top else None
        if den is not None and den[0] <= 0:
            raise ArithmeticError("precision too low")
        for lv in ls:
            num = iv.one_minus(pw[int(lv) + 1])
            out.append(num if self.top else iv.div_pos(num, den))
        return out

    def _floors(self, ls, K: int) -> list[int]:
        """floor(F(l) 2^K) for each l, exactly (precision raised until decided)."""
        prec = self._prec0() + int(K * 0.302)
        cap = prec + MAX_EXTRA_DIGITS
        while prec <= cap:
            try:
                ivs = self._cdf_intervals(prec, ls)
            except ArithmeticError:
                prec += _PREC_STEP
                continue
            lo = [_floor_scaled(x[0], K, prec) for x in ivs]
            hi = [_floor_scaled(x[1], K, prec) for x in ivs]
            if lo == hi:
                return lo
            prec += _PREC_STEP
        raise ThresholdUndecided(
            f"could not determine a threshold of the geometric sampler for p = {self.tail!r} "
            f"within {MAX_EXTRA_DIGITS} extra digits (offset {self.offset}, K = {K})"
        )

    def _fast_table(self) -> np.ndarray:
        t = self._floors(range(self.n_thresholds), self.fast_bits)
        return np.asarray(t, dtype=np.uint64)

    def exact_floor(self, level: int, K: int) -> int:
        key = (level, K)
        if key not in self._exact:
            self._exact[key] = self._floors([level], K)[0]
        return self._exact[key]

    def sample(self, source, n: int, compiled: bool = False) -> np.ndarray:
        """``n`` outcomes (int64): 0 .. m - 1, and m for overflow (top digit).
        ``compiled``: the fast step in one compiled pass
        (:func:`.noiserounds.digit_outcomes`), the same words and outcomes."""
        words = source.raw((n + 1) // 2).view(np.uint32)[:n]
        if compiled:
            # lazy: numba loads only where a fit loads it anyway (countnoise.compiled_tail)
            from .noiserounds import digit_outcomes

            D, tie = digit_outcomes(
                words, 32 - self.fast_bits, self.fast, self.guide, self.guide_next, self.shift
            )
            for i in np.flatnonzero(tie):
                D[i] = self._resolve(source, int(words[i] >> (32 - self.fast_bits)), int(D[i]))
            return D
        R = words.astype(np.uint64) >> np.uint64(32 - self.fast_bits)
        T = self.fast
        # D = #{l : T_l < R}: start from the guide (all l below it qualify),
        # then step over the few thresholds left in R's guide interval
        bucket = R >> np.uint64(self.shift)
        D = self.guide[bucket]
        first = self.guide_next[bucket]  # T_D (no R reaches it past the last)
        last = T.size - 1
        step = np.flatnonzero(first < R)
        stepped = step
        while step.size:
            D[step] += 1
            d = D[step]
            step = step[(d <= last) & (T[np.minimum(d, last)] < R[step])]
        if T.size:
            # ties T_D == R: where D did not move, T_D is ``first``
            tie = first == R
            tie[stepped] = T[np.minimum(D[stepped], last)] == R[stepped]
            for i in np.flatnonzero(tie):
                D[i] = self._resolve(source, int(R[i]), int(D[i]))
        return D

    def _resolve(self, source, prefix: int, first: int) -> int:
        """Outcome when the first FAST_BITS bits of U equal T_l for l >= first.

        The tied thresholds are T_first .. T_last (equal, as T is sorted). The
        outcome is the number of l with F(l) <= U: refine U by 64 bits at a
        time; at each precision K the floors floor(F(l) 2^K) are
        non-decreasing in l, so the l below the new prefix, equal to it
        (still tied) and above it are three runs, found by bisection.
        """
        T = self.fast
        lo = first
        hi = int(np.searchsorted(T, T[first], side="right"))  # tied: lo <= l < hi
        return refine_tie(source, self.exact_floor, prefix, self.fast_bits, lo, hi)


def refine_tie(
    source: Source, exact_floor: Callable[[int, int], int], prefix: int, K: int, lo: int, hi: int
) -> int:
    """The first index ``l`` in [lo, hi) with U < F(l) (else ``hi``), where
    the K-bit ``prefix`` of the uniform U ties every threshold
    floor(F(l) 2^K) of [lo, hi) (``exact_floor(l, K)``, non-decreasing in
    ``l``): U is refined by 64 bits at a time, and at each precision the
    indices below the new prefix, tied with it and above it are three runs,
    found by bisection. Shared by the geometric digits here and the discrete
    Laplace's inversion (:mod:`.inversion`)."""
    while lo < hi:
        prefix = (prefix << 64) | int(source.raw(1)[0])
        K += 64
        lo = _bisect(exact_floor, lo, hi, K, prefix, strict=True)
        hi = _bisect(exact_floor, lo, hi, K, prefix, strict=False)
    return lo


def _bisect(
    exact_floor: Callable[[int, int], int], lo: int, hi: int, K: int, prefix: int, strict: bool
) -> int:
    """First l in [lo, hi) with floor(F(l) 2^K) >= prefix (``strict``) or
    > prefix (else hi)."""
    while lo < hi:
        mid = (lo + hi) // 2
        t = exact_floor(mid, K)
        if (t < prefix) if strict else (t <= prefix):
            lo = mid + 1
        else:
            hi = mid
    return lo


@functools.lru_cache(maxsize=64)
def _digit(tail: ExactProbability, offset: int, width: int, top: bool, fast_bits: int) -> _Digit:
    return _Digit(tail, offset, width, top)


def _get_digit(tail: ExactProbability, offset: int, width: int, top: bool) -> _Digit:
    return _digit(tail, offset, width, top, FAST_BITS)


class _Layout:
    """Which digits make up G, for gaps that matter only below ``limit``."""

    def __init__(self, tail: ExactProbability, limit: int):
        c = tail.neg_log_miss()
        j_limit = max(int(limit).bit_length(), 1)
        if c > 0:
            # miss^(2^J) <= 2^-12: the top digit rarely overflows
            j_total = max(math.ceil(math.log2(_OVERFLOW_LOG2 * math.log(2.0) / c)), 0)
        else:
            j_total = j_limit + _WIDTH + 1
        if j_total - _WIDTH >= j_limit:
            # 2^o > limit: H >= 1 means beyond the limit; only H = 0 matters
            self.o_top, self.w_top = j_limit, 0
        else:
            self.o_top = max(j_total - _WIDTH, 0)
            self.w_top = j_total - self.o_top
        self.chunks = [(o, min(_WIDTH, self.o_top - o)) for o in range(0, self.o_top, _WIDTH)]
        self.tail, self.limit = tail, int(limit)


def _geometric_half(source, n: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Geometric(1/2): the number of 1 bits before the first 0 in fair bits."""
    g = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        w = source.raw(idx.size)
        inv = ~w  # trailing ones of w = trailing zeros of ~w
        low = inv & (~inv + np.uint64(1))  # lowest set bit (0 if w is all ones)
        tz = popcount(low - np.uint64(1))
        full = inv == 0
        tz[full] = 64
        g[idx] += tz
        idx = idx[full & (g[idx] < limit)]
    beyond = g >= limit
    return np.minimum(g, limit), beyond


def geometric(
    source: Source, n: int, tail: ExactProbability, limit: int = 1 << 62, compiled: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` exact samples of G >= 0 with P(G >= g) = (1 - p)^g, capped at ``limit``.

    Returns ``(g, beyond)``: ``beyond[i]`` tells that ``G_i >= limit`` (its
    value is then not computed and ``g[i]`` is ``limit``). ``g`` is int64 when
    ``limit <= 2^62``, else an object array of Python ints. ``compiled``:
    the digits' fast step compiled (:meth:`_Digit.sample`), the same samples.
    """
    n, limit = int(n), int(limit)
    if tail.is_half:
        g, beyond = _geometric_half(source, n, limit)
        return (g if limit <= 1 << 62 else g.astype(object)), beyond
    lay = _Layout(tail, limit)
    top = _get_digit(tail, lay.o_top, lay.w_top, True)
    h_cap = -(-limit // (1 << lay.o_top))  # H >= h_cap means G >= limit
    h = top.sample(source, n, compiled)
    pending = np.flatnonzero(h == top.m)
    while pending.size:  # H >= h[i]: memoryless, H - h[i] is again geometric
        pending = pending[h[pending] < h_cap]
        d = top.sample(source, pending.size, compiled)
        h[pending] += d
        pending = pending[d == top.m]
    beyond = h >= h_cap
    small = limit <= 1 << 62
    if small and lay.o_top == 0:
        # G is the top digit alone (no low digits, h_cap = limit): G = H,
        # capped at the limit (what the digits' sum below gives, in 2 passes)
        return np.minimum(h, limit), beyond
    live = np.flatnonzero(~beyond)
    digits = [(lay.o_top, h[live])]
    if live.size:  # the low digits' tables are built only when needed
        digits += [
            (o, _get_digit(tail, o, w, False).sample(source, live.size, compiled)) for o, w in lay.chunks
        ]
    if small:
        g = np.full(n, limit, dtype=np.int64)
        gl = np.zeros(live.size, dtype=np.int64)
        for o, d in digits:  # disjoint bit ranges; the total is below 2 limit <= 2^63
            gl += d << np.int64(o)
    else:
        g = np.full(n, limit, dtype=object)
        gl = _python_ints(digits, live.size)
    over = gl >= limit
    if np.any(over):
        gl = (
            np.where(over, limit, gl)
            if small
            else np.array([limit if v else x for x, v in zip(gl, over)], dtype=object)
        )
        beyond[live[over]] = True
    g[live] = gl
    return g, beyond


def _python_ints(digits, n: int) -> np.ndarray:
    """Object array of sum(d << o) over ``digits`` (disjoint bit ranges, each
    d < 2^63): packed into 64-bit words first, so that only a few operations
    per word run on Python ints."""
    n_words = max(o for o, _ in digits) // 64 + 2
    words = [np.zeros(n, dtype=np.uint64) for _ in range(n_words)]
    for o, d in digits:
        d = d.astype(np.uint64)
        i, sh = divmod(o, 64)
        words[i] |= d << np.uint64(sh)
        if sh:
            words[i + 1] |= d >> np.uint64(64 - sh)
    out = words[-1].astype(object)
    for w in reversed(words[:-1]):
        out = out * (1 << 64) + w.astype(object)
    return out


def bernoulli_positions(
    source: Source, n_trials: int, tail: ExactProbability, compiled: bool = False
) -> np.ndarray | list[int]:
    """Sorted indices of the successes among ``n_trials`` i.i.d. Bernoulli(p)
    trials, exactly: the gaps between successes are i.i.d. Geometric(p).

    Returns an int64 array when ``n_trials <= 2^62``, else a list of Python
    ints. Gaps are drawn in batches sized from the expected count (public:
    ``n_trials`` and p); a gap that reaches past the last trial ends it.
    ``compiled``: the gaps' digits through compiled steps (:func:`geometric`),
    the same words and positions.
    """
    N = int(n_trials)
    small = N <= 1 << 62
    parts: list = []
    last = -1  # index of the last success so far
    p = float(tail)
    while last < N - 1:
        mean = (N - 1 - last) * p
        batch = int(min(mean + 6.0 * math.sqrt(mean) + 16.0, _MAX_BATCH))
        g, _ = geometric(source, batch, tail, limit=N, compiled=compiled)  # G >= N is reported as N
        if small and compiled:
            # lazy: numba loads only where a fit loads it anyway (countnoise.compiled_tail)
            from .noiserounds import gap_positions

            pos = gap_positions(g, last, N)
            parts.append(pos)
            if pos.size < batch:
                break
            last = int(pos[-1])
        elif small:
            pos = np.cumsum((g + 1).astype(np.uint64)) + np.uint64(last + 1)
            # increments are <= 2^62 + 1, so the sum cannot wrap before passing N
            stop = np.flatnonzero(pos >= np.uint64(N + 1))
            k = int(stop[0]) if stop.size else batch
            pos = (pos[:k] - np.uint64(1)).astype(np.int64)
            parts.append(pos)
            if k < batch:
                break
            last = int(pos[-1])
        else:
            big: list[int] = []
            for x in accumulate((int(v) + 1 for v in g), initial=last + 1):
                if x >= N + 1:
                    break
                big.append(x - 1)
            big = big[1:]
            parts.append(big)
            if len(big) < batch:
                break
            last = big[-1]
    if small:
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return [x for part in parts for x in part]
