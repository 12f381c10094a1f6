"""Zero-concentrated differential privacy (zCDP): conversions and an accountant.

A mechanism is rho-zCDP when the Renyi divergence of its output distributions
on neighbouring inputs is at most ``rho * order`` for every Renyi order > 1
(Bun and Steinke 2016). The facts used here:

* **discrete Gaussian**: adding independent N_Z(0, sigma^2) noise to each
  coordinate of an integer vector whose L2 sensitivity is Delta is
  ``Delta^2 / (2 sigma^2)``-zCDP (Canonne, Kamath and Steinke 2020, the
  multivariate discrete Gaussian theorem, Theorem 14 of arXiv:2004.00010):
  :func:`gaussian_rho`, :func:`sigma_for`;
* **pure DP**: epsilon-DP implies ``epsilon^2 / 2``-zCDP (Bun and Steinke,
  Proposition 1.4); (epsilon, delta)-DP implies delta-approximate
  ``epsilon^2 / 2``-zCDP (their Proposition 1.13): :func:`pure_rho`;
* **composition**: rho's add, and the deltas of approximate zCDP add;
* **filter**: for spends chosen adaptively, admitting a spend while either
  every spend is pure with their epsilons' sum within the budget, or the
  rho's sum converts within it at the budget's delta, keeps the whole
  sequence within the budget (a privacy filter, Rogers, Roth, Ullman and
  Vadhan 2016; Feldman and Zrnic 2021 for the rho's):
  :func:`filter_statements`, :class:`ZCDPAccountant`, the ledger's "zcdp";
* **conversion**: rho-zCDP implies (epsilon, delta)-DP for
  ``delta = inf_{order > 1} exp((order - 1)(order rho - epsilon)) / (order - 1)
  * (1 - 1/order)^order`` (Canonne, Kamath and Steinke, Section 2.3,
  Corollary 13), and delta'-approximate rho-zCDP implies
  (epsilon, delta + delta')-DP: :func:`delta_for`, :func:`epsilon_for`,
  :func:`rho_for`.

Numerics. Every order gives a valid delta, so an inexact minimiser only makes
delta larger. With ``x = order - 1`` the logarithm of the bound is
``x((1 + x) rho - epsilon) + x ln x - (1 + x) ln(1 + x)``, strictly convex in
order (second derivative ``2 rho + 1 / (order (order - 1)) > 0``), with
derivative ``(2 order - 1) rho - epsilon + ln(1 - 1/order)``: its root is
found by bisection (200 steps, in log x). The logarithm is then raised by
1e-12 times the sum of its terms' magnitudes, far above their rounding error. :func:`epsilon_for` and
:func:`rho_for` bisect (200 steps) on :func:`delta_for`, which is monotone in
both arguments, and return the end of the bracket that satisfies the
request: the epsilon returned never certifies a smaller epsilon than the
truth, the rho returned never implies a larger delta than asked. Both are
within a relative 1e-9 of the exact answer (measured against OpenDP).

References
----------
Bun and Steinke, "Concentrated Differential Privacy: Simplifications,
Extensions, and Lower Bounds", TCC 2016 (arXiv:1605.02065). Canonne, Kamath
and Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020
(arXiv:2004.00010). Rogers, Roth, Ullman and Vadhan, "Privacy Odometers and
Filters: Pay-as-you-Go Composition", NeurIPS 2016. Feldman and Zrnic,
"Individual Privacy Accounting via a Renyi Filter", NeurIPS 2021.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction

from ..exceptions import BudgetExceeded

_STEPS = 200
_SLACK = 1e-12  # relative to the terms of the log-bound: covers their rounding


def _check(name: str, value: float, *, low: float = 0.0) -> float:
    v = float(value)
    if math.isnan(v) or v < low:
        raise ValueError(f"{name} must be >= {low}, got {name}={value!r}")
    return v


def _boundary(above: Callable[[float], bool], lo: float, hi: float) -> tuple[float, float]:
    """Bisect a monotone predicate with ``above(lo)`` false and ``above(hi)``
    true; returns the final (lo, hi).

    It stops once ``lo`` and ``hi`` are neighbouring floats: the midpoint is
    then one of them, and every further step would ask the predicate what it
    answered before and change nothing, so the result is the one of all
    ``_STEPS`` steps, in about 60 of them instead of 200."""
    for _ in range(_STEPS):
        mid = 0.5 * (lo + hi)
        if mid == lo or mid == hi:
            break
        if above(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def _log_bound(rho: float, epsilon: float, x: float) -> float:
    """log of the CKS bound at order = 1 + x, raised to cover its rounding."""
    terms = (x * ((1.0 + x) * rho - epsilon), x * math.log(x), -(1.0 + x) * math.log1p(x))
    return sum(terms) + _SLACK * (1.0 + sum(abs(t) for t in terms))


def delta_for(rho: float, epsilon: float) -> float:
    """Smallest delta (rounded up) such that rho-zCDP implies
    (epsilon, delta)-DP, by CKS 2020, Corollary 13.

    Parameters
    ----------
    rho : float
        zCDP parameter, >= 0.
    epsilon : float
        DP epsilon, >= 0.

    Returns
    -------
    float
        delta in [0, 1]; 0 when rho is 0.
    """
    rho, epsilon = _check("rho", rho), _check("epsilon", epsilon)
    if rho == 0:
        return 0.0
    if math.isinf(rho):
        return 1.0
    if math.isinf(epsilon):
        return 0.0

    def slope(x: float) -> float:  # d/dalpha of the log bound at order = 1 + x
        return (1.0 + 2.0 * x) * rho - epsilon + math.log(x) - math.log1p(x)

    lo, hi = math.log(1e-300), math.log(max(1.0, (epsilon + 1.0) / (2.0 * rho)))
    while slope(math.exp(hi)) < 0:  # cannot happen by the bound above; kept for safety
        hi += 1.0
    lo, hi = _boundary(lambda t: slope(math.exp(t)) >= 0, lo, hi)
    log_delta = min(_log_bound(rho, epsilon, math.exp(lo)), _log_bound(rho, epsilon, math.exp(hi)))
    # delta > 0 whenever rho > 0: an underflow reports the smallest float, not 0
    return min(1.0, max(math.exp(min(log_delta, 0.0)), math.ulp(0.0)))


def classical_epsilon(rho: float, delta: float) -> float:
    """The classical conversion ``rho + 2 sqrt(rho ln(1/delta))`` (Bun and
    Steinke, Proposition 1.3); never below :func:`epsilon_for`."""
    rho, delta = _check("rho", rho), _check("delta", delta)
    if delta >= 1 or rho == 0:
        return 0.0
    if delta == 0:
        return math.inf
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def epsilon_for(rho: float, delta: float) -> float:
    """Smallest epsilon (rounded up) such that rho-zCDP implies (epsilon, delta)-DP.

    Returns 0 when ``delta >= 1`` or ``rho == 0`` and infinity when
    ``delta == 0 < rho``.
    """
    rho, delta = _check("rho", rho), _check("delta", delta)
    if delta >= 1 or rho == 0:
        return 0.0
    if delta == 0 or math.isinf(rho):
        return math.inf
    if delta_for(rho, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, classical_epsilon(rho, delta) * (1.0 + 1e-6) + 1e-12
    while delta_for(rho, hi) > delta:  # the classical bound suffices up to rounding
        hi *= 2.0
    return _boundary(lambda e: delta_for(rho, e) <= delta, lo, hi)[1]


@functools.lru_cache(maxsize=256)
def rho_for(epsilon: float, delta: float) -> float:
    """Largest rho (rounded down) such that rho-zCDP implies (epsilon, delta)-DP.

    Cached (a bisection of about 0.1 s; a release with ``max_cells_per_unit``
    "auto" plans one per candidate k at the same epsilon and delta).

    Returns infinity when ``delta >= 1`` and 0 when ``delta == 0``.
    """
    return _rho_for(_check("epsilon", epsilon), _check("delta", delta))


@functools.lru_cache(maxsize=256)
def _rho_for(epsilon: float, delta: float) -> float:
    # 40,000 evaluations of the bound (two nested bisections): a person-level
    # fit calls it once per release, a forecast once per eps, tests thousands
    # of times with the same (epsilon, delta)
    if delta >= 1 or math.isinf(epsilon):
        return math.inf
    if delta == 0:
        return 0.0
    lo, hi = 0.0, epsilon + 1.0
    while delta_for(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
    return _boundary(lambda r: delta_for(r, epsilon) > delta, lo, hi)[0]


def pure_rho(epsilon: float) -> float:
    """rho = epsilon^2 / 2 of an epsilon-DP mechanism (rounded up)."""
    epsilon = _check("epsilon", epsilon)
    return math.nextafter(0.5 * epsilon * epsilon, math.inf) if epsilon > 0 else 0.0


def gaussian_rho(sigma2: float | Fraction, l2_sensitivity: float | Fraction) -> float:
    """rho = Delta^2 / (2 sigma^2) of the discrete Gaussian mechanism, computed
    exactly on the rationals and rounded up to a float."""
    s2, d = Fraction(sigma2), Fraction(l2_sensitivity)
    if s2 <= 0 or d < 0:
        raise ValueError(f"need sigma2 > 0 and l2_sensitivity >= 0, got {sigma2!r}, {l2_sensitivity!r}")
    exact = d * d / (2 * s2)
    r = float(exact)
    return math.nextafter(r, math.inf) if Fraction(r) < exact else r


def sigma2_for(rho: float, l2_sensitivity: float) -> float:
    """sigma^2 = Delta^2 / (2 rho) (rounded up), so that the discrete Gaussian
    with at least this sigma^2 is rho-zCDP at L2 sensitivity Delta."""
    rho = _check("rho", rho)
    if rho == 0:
        raise ValueError("rho must be > 0")
    d = Fraction(_check("l2_sensitivity", l2_sensitivity))
    exact = d * d / (2 * Fraction(rho))
    s2 = float(exact)
    return math.nextafter(s2, math.inf) if Fraction(s2) < exact else s2


def sigma_for(rho: float, l2_sensitivity: float) -> float:
    """sigma = Delta / sqrt(2 rho), rounded up (see :func:`sigma2_for`)."""
    s2 = Fraction(sigma2_for(rho, l2_sensitivity))
    s = math.sqrt(s2)
    while Fraction(s) ** 2 < s2:
        s = math.nextafter(s, math.inf)
    return s


#: Relative slack of a comparison with a budget (the accountant's and the
#: ledger's): covers the rounding of decimal inputs (ten spends of 0.1 fit a
#: budget of 1), nothing more.
TOLERANCE = 1e-12


def filter_statements(
    pure_epsilon: float | None, rho: float, delta_budget: float
) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """The two statements of the zCDP privacy filter about spends that are
    all zCDP, together ``rho``-zCDP (docs/privacy.md §5.1, "The ledger's rule
    is a privacy filter"):

    * (P) ``(pure_epsilon, 0)`` when every spend is pure, ``pure_epsilon``
      being the sum of their epsilons (None when one is not pure);
    * (Z) ``(epsilon_for(rho, delta_budget), delta_budget)`` when
      ``delta_budget > 0`` (None otherwise).

    A spend is admitted while one of the two, with it, is :func:`within` the
    budget; for spends chosen adaptively this is a valid filter at
    ``delta_budget`` (the union with (P) costs no delta, as the whole
    sequence's loss is at most ``pure_epsilon`` wherever (P) admitted the
    last spend). The smaller epsilon of the two is the statement."""
    pure = None if pure_epsilon is None else (float(pure_epsilon), 0.0)
    through = (epsilon_for(rho, delta_budget), float(delta_budget)) if delta_budget > 0 else None
    return pure, through


def within(statement: tuple[float, float], epsilon: float, delta: float) -> bool:
    """Whether an (epsilon, delta) statement is within a budget, to a
    relative :data:`TOLERANCE`."""
    e, d = statement
    return e <= epsilon * (1 + TOLERANCE) and d <= delta * (1 + TOLERANCE)


_INSTEAD = (
    "use dpdbscan.BudgetAccountant instead (basic composition: a valid filter for any "
    "(epsilon, delta) spends chosen adaptively)"
)


class ZCDPAccountant:
    """A privacy filter in zCDP against an (epsilon, delta) budget, sound when
    each spend is chosen after seeing the earlier releases.

    The interface of :class:`dpdbscan.release.accountant.BudgetAccountant` (``check``,
    ``spend``, ``total``) plus ``check_rho`` / ``spend_rho`` for mechanisms
    known to be rho-zCDP (the discrete Gaussian) and ``remaining_rho``.

    It admits a spend while, with it, **either** (P) every spend is pure
    (``spend(epsilon, 0)``, no rho-spend) and the epsilons add up to at most
    the budget's epsilon, **or** (Z) the rho's add up to at most the largest
    rho that :func:`epsilon_for` converts within the budget at the budget's
    delta (a pure spend counts ``epsilon^2 / 2``; needs ``delta > 0``:
    rho-zCDP with rho > 0 never implies pure DP). The ledger's accounting
    "zcdp" is the same rule (:func:`filter_statements`; docs/privacy.md §5.1
    proves it a filter). With pure spends only and ``delta = 0`` it agrees
    with :class:`~dpdbscan.release.accountant.BudgetAccountant`.

    A spend that is not zCDP is refused (:class:`BudgetExceeded`) whatever
    the budget: an (epsilon, delta) spend with delta > 0, and a rho-spend with
    a further delta (the stability histogram's threshold). Count those with
    :class:`~dpdbscan.release.accountant.BudgetAccountant`.

    Parameters
    ----------
    epsilon : float
        The epsilon budget (default: unlimited).
    delta : float
        The delta budget, spent only by the conversion of (Z).
    """

    def __init__(self, epsilon: float = math.inf, delta: float = 0.0) -> None:
        self.epsilon = _check("epsilon", epsilon)
        self.delta = _check("delta", delta)
        if self.delta > 1:
            raise ValueError(f"delta must be <= 1, got delta={delta!r}")
        self.spent_budget: list[tuple[float, float]] = []
        self.spent_rho: list[float] = []

    def _statements(
        self, pure: float | None = None, rho: float | None = None
    ) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        """(P) and (Z) of the spends so far, plus a further pure epsilon-spend
        ``pure`` or rho-spend ``rho``."""
        epsilons = [e for e, _ in self.spent_budget] + ([] if pure is None else [pure])
        rhos = self.spent_rho + ([] if rho is None else [rho])
        # a 0-zCDP spend is 0-DP (the output's law does not depend on the input)
        all_pure = not any(r > 0 for r in rhos)
        total_rho = math.fsum(rhos) + math.fsum(pure_rho(e) for e in epsilons)
        return filter_statements(math.fsum(epsilons) if all_pure else None, total_rho, self.delta)

    def _admits(self, pure: float | None = None, rho: float | None = None) -> bool:
        return any(s is not None and within(s, self.epsilon, self.delta) for s in self._statements(pure, rho))

    @property
    def rho(self) -> float:
        """The zCDP rho spent so far (rho-spends plus epsilon^2/2 per spend)."""
        return math.fsum(self.spent_rho) + math.fsum(pure_rho(e) for e, _ in self.spent_budget)

    def total(self) -> tuple[float, float]:
        """(epsilon, delta): the spends so far are (epsilon, delta)-DP, the
        smaller epsilon of (P) (while every spend is pure: the epsilons'
        sum, delta 0) and (Z) (converted at the budget's delta)."""
        stated = [s for s in self._statements() if s is not None]
        # nothing states spends that are not all pure at a budget's delta of 0;
        # the filter admits none (check_rho refuses rho > 0 there)
        return min(stated, key=lambda s: s[0]) if stated else (math.inf, self.delta)

    def remaining_rho(self) -> float:
        """The largest further rho-spend that fits the budget (0 if none)."""
        return max(0.0, rho_for(self.epsilon, self.delta) - self.rho)

    def _refuse(self, what: str) -> None:
        e, d = self.total()
        raise BudgetExceeded(
            f"privacy spend of {what} would exceed the budget (epsilon={self.epsilon}, "
            f"delta={self.delta}); already spent rho={self.rho} ({e}, {d})"
        )

    def check(self, epsilon: float, delta: float) -> bool:
        """Raise :class:`BudgetExceeded` if an (epsilon, delta)-DP spend would
        not be admitted; one with delta > 0 never is (it is not zCDP)."""
        e, d = _check("epsilon", epsilon), _check("delta", delta)
        if d > 0:
            raise BudgetExceeded(
                f"ZCDPAccountant refuses a spend of (epsilon={epsilon}, delta={delta}): it counts "
                "zCDP spends only, and an (epsilon, delta)-DP spend with delta > 0 (such as a "
                "release on the stability histogram) is not zCDP; choose a release without delta "
                f"(histogram 'dense' or 'sparse'), or {_INSTEAD}"
            )
        if not self._admits(pure=e):
            self._refuse(f"(epsilon={epsilon}, delta={delta})")
        return True

    def spend(self, epsilon: float, delta: float) -> ZCDPAccountant:
        """Record an (epsilon, delta)-DP spend (after :meth:`check`)."""
        self.check(epsilon, delta)
        self.spent_budget.append((float(epsilon), float(delta)))
        return self

    def check_rho(self, rho: float, delta: float = 0.0) -> bool:
        """Raise :class:`BudgetExceeded` if a rho-zCDP spend would not be
        admitted; ``delta``: a further delta the same release spends outside
        zCDP (the stability histogram's threshold), which makes it not zCDP:
        refused whenever ``delta > 0``."""
        r, d = _check("rho", rho), _check("delta", delta)
        if d > 0:
            raise BudgetExceeded(
                f"ZCDPAccountant refuses a spend of rho={rho} with delta={delta} outside zCDP: "
                "it counts zCDP spends only, and a release on the stability histogram is not "
                "zCDP (its threshold lets a cell that one unit creates through with probability "
                "up to its delta); choose histogram 'dense' or 'sparse', or " + _INSTEAD
            )
        if not self._admits(rho=r):
            self._refuse(f"rho={rho}")
        return True

    def spend_rho(self, rho: float, delta: float = 0.0) -> ZCDPAccountant:
        """Record a rho-zCDP spend (after :meth:`check_rho`)."""
        self.check_rho(rho, delta)
        self.spent_rho.append(float(rho))
        return self
