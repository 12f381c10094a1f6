"""The exact real number ``p = P(Z >= k)`` for Z ~ N_Z(0, sigma^2), given by
rigorous intervals, for the sparse histogram's geometric skipping
(:func:`dpdbscan.release.samplers.skipping.bernoulli_positions`).

With ``w_j = exp(-j^2 / (2 sigma^2))``, ``H = sum_{1 <= j < k} w_j`` and
``T = sum_{j >= k} w_j``, the normaliser is ``S = 1 + 2 H + 2 T`` (k >= 1) and

* ``p = T / (1 + 2 H + 2 T)`` for k >= 1 (increasing in T, decreasing in H),
* ``p = 1/2 + 1 / (2 (1 + 2 T))`` for k = 0, with ``T = sum_{j >= 1} w_j``.

Each is evaluated on intervals in :mod:`decimal` (:class:`dpdbscan.release.samplers.skipping._Iv`):
``exp(-c)``, ``exp(-2c)`` and ``exp(-3c)`` (``c = 1 / (2 sigma^2)``) are
correctly rounded and widened by one unit; the terms follow by the exact
recurrence ``w_{j+1} = w_j r_j``, ``r_{j+1} = r_j exp(-2c)`` with products and
sums rounded outward; the sum stops at the first ``j >= k`` whose remainder
bound ``w_{j+1} / (1 - r_{j+1})`` (the ratios ``r_j`` decrease, so the rest is
below a geometric series) is below ``10^-(digits + 3)`` of ``T``, and that
bound is added to the upper end. So the interval always contains p; the
precision only decides how narrow it is (2 log10(terms) + 6 guard digits
cover the growth of the recurrence's rounding).

Cost: ``k + O(sigma sqrt(digits))`` interval steps per precision (about 0.1 s
at sigma = 1000 and 60 digits); the interval at the highest precision asked
so far is kept.

Termination of the skipping. The sampler needs ``floor(F(l) 2^K)`` for
functions F of p; it raises the precision until the interval decides it,
which ends whenever ``F(l) 2^K`` is not an integer. For the Laplace tails
that is proved (Lindemann); for the discrete Gaussian no such theorem is
known (the value is a partial theta series at the transcendental
``q = exp(-c)``). So the precision is capped
(:data:`dpdbscan.release.samplers.skipping.MAX_EXTRA_DIGITS`, 800 digits beyond the first
attempt) and :class:`dpdbscan.release.samplers.skipping.ThresholdUndecided` is raised,
naming sigma^2 and k. Whether that happens depends only on (sigma^2, k) and
the layout (public) and, for the rare thresholds refined during sampling, on
random bits that are independent of the data; a real number within 10^-800
of a dyadic rational at every refinement is not expected to occur.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from ...laws import discretegaussian as _gaussian_law
from .skipping import Interval, _Iv

_ZERO = Decimal(0)


def _tail_sums(sigma2: Fraction, k: int, digits: int) -> tuple[_Iv, Interval, Interval]:
    """Intervals of H = sum_{1 <= j < k} w_j and T = sum_{j >= max(k, 1)} w_j."""
    c = Fraction(sigma2.denominator, 2 * sigma2.numerator)  # 1 / (2 sigma^2)
    start = max(k, 1)
    # terms beyond j^2 > start^2 + (digits + 10) ln(10) / c are negligible
    n_terms = math.isqrt(start * start + math.ceil((digits + 10) * 2.31 / float(c))) + 2
    iv = _Iv(digits + 2 * len(str(n_terms)) + 6)
    lo, hi = iv.lo, iv.hi
    q2 = iv.exp(iv.neg(iv.frac(2 * c)))
    w = iv.exp(iv.neg(iv.frac(c)))  # w_1
    r = iv.exp(iv.neg(iv.frac(3 * c)))  # r_1 = w_2 / w_1
    head, tail = (_ZERO, _ZERO), (_ZERO, _ZERO)
    rel = Decimal(10) ** -(digits + 3)
    j = 1
    while True:
        if j < start:
            head = (lo.add(head[0], w[0]), hi.add(head[1], w[1]))
        else:
            tail = (lo.add(tail[0], w[0]), hi.add(tail[1], w[1]))
        w, r = iv.mul_pos(w, r), iv.mul_pos(r, q2)  # w_{j+1}, r_{j+1}
        j += 1
        if j > start and w[1] <= tail[0] * rel:
            rest = hi.divide(w[1], lo.subtract(1, r[1]))  # sum_{i >= j} w_i <= w_j / (1 - r_j)
            if rest <= tail[0] * rel:
                return iv, head, (tail[0], hi.add(tail[1], rest))


def tail_interval(sigma2: Fraction, k: int, digits: int) -> Interval:
    """An interval containing P(Z >= k) (k >= 0), of relative width about
    10^-digits."""
    iv, head, tail = _tail_sums(sigma2, k, digits)
    lo, hi = iv.lo, iv.hi
    if k == 0:  # p = 1/2 + 1 / (2 + 4 T), decreasing in T
        p_lo = lo.add(Decimal("0.5"), lo.divide(1, hi.add(2, hi.multiply(4, tail[1]))))
        p_hi = hi.add(Decimal("0.5"), hi.divide(1, lo.add(2, lo.multiply(4, tail[0]))))
        return p_lo, p_hi
    # p = T / (A + 2 T), A = 1 + 2 H: increasing in T, decreasing in A
    a_lo, a_hi = lo.add(1, lo.multiply(2, head[0])), hi.add(1, hi.multiply(2, head[1]))
    p_lo = lo.divide(tail[0], hi.add(a_hi, hi.multiply(2, tail[0])))
    p_hi = hi.divide(tail[1], lo.add(a_lo, lo.multiply(2, tail[1])))
    return p_lo, p_hi


class GaussianTailProbability:
    """``p = P(Z >= k)`` for Z ~ N_Z(0, sigma^2), k >= 0, as an exact real
    number (:class:`dpdbscan.release.samplers.skipping.ExactProbability`)."""

    def __init__(self, sigma2: Fraction | int, k: int) -> None:
        self.sigma2, self.k = Fraction(sigma2), int(k)
        if self.sigma2 <= 0 or self.k < 0:
            raise ValueError(f"need sigma^2 > 0 and k >= 0, got sigma2={sigma2!r}, k={k!r}")
        self._best: tuple[int, Interval] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GaussianTailProbability) and (self.sigma2, self.k) == (
            other.sigma2,
            other.k,
        )

    def __hash__(self) -> int:
        return hash((GaussianTailProbability, self.sigma2, self.k))

    def __repr__(self) -> str:
        return f"P(Z >= {self.k}) for the discrete Gaussian with sigma^2 = {self.sigma2}"

    @property
    def is_half(self) -> bool:
        return False  # p = 1/2 + 1/(2S) > 1/2 at k = 0 and p < 1/2 for k >= 1

    def __float__(self) -> float:
        return _gaussian_law.tail(float(self.sigma2), self.k)

    def neg_log_rho(self) -> float:
        """-ln(1 - p) in floating point (layout only)."""
        return -math.log1p(-float(self))

    def digits_of_inverse(self) -> int:
        """About log10(1/p)."""
        return max(0, math.ceil(-_gaussian_law.log_tail(float(self.sigma2), self.k) / math.log(10)))

    def interval(self, digits: int) -> Interval:
        """An interval containing p, about ``digits`` significant digits wide
        or narrower (the narrowest computed so far is kept)."""
        if self._best is None or self._best[0] < digits:
            self._best = (digits, tail_interval(self.sigma2, self.k, digits))
        return self._best[1]

    def log_rho(self, iv: _Iv) -> Interval:
        """Interval of ln(1 - p) at the precision of ``iv``."""
        # one step of 20 digits at a time, so that the first call serves the
        # digit tables of every offset
        p = self.interval(20 * math.ceil((iv.prec + 5) / 20))
        rho = iv.one_minus(p)
        if rho[0] <= 0:
            raise ArithmeticError("precision too low")
        return iv.ln(rho)
