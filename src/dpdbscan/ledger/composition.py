"""What a list of releases costs together: the ledger's composition rule.

Every release of this library is stated as (epsilon, delta)-DP. Some are also
rho-zCDP, which composes much better over many releases (rho's add, and the
total is converted to (epsilon, delta) once):

* a pure epsilon-DP release (Laplace noise, dense or sparse histogram) is
  ``epsilon^2 / 2``-zCDP (Bun and Steinke 2016, Proposition 1.4);
* a Gaussian release on the dense or sparse histogram is rho-zCDP with the
  rho it was calibrated to (:func:`dpdbscan.plan.resolve.release_spec`);
* a release on the stability histogram is **not** zCDP: its threshold lets a
  cell that one unit creates through with probability up to its delta, an
  event zCDP cannot express (no finite Renyi divergence). It has a stated
  (epsilon, delta) and nothing else: :attr:`Cost.rho` is None.

An analyst picks each release after seeing the earlier ones, so the ledger's
rule is a *privacy filter* (Rogers, Roth, Ullman and Vadhan, "Privacy
Odometers and Filters", 2016): a release is admitted while the rule holds for
the releases with it, and the lifetime budget must bound the whole adaptively
chosen sequence. Each dataset's rule is fixed, publicly, when its budget is
registered (its *accounting*, :data:`ACCOUNTINGS`), and never chosen later:

* ``"basic"`` (the default; every kind of release): admitted while
  ``sum epsilon_i <= epsilon_budget`` and ``sum delta_i <= delta_budget``.
  Basic composition is a valid filter (Rogers et al. 2016).
* ``"zcdp"`` (releases that are zCDP only; a stability release is refused):
  admitted while **either** every release is pure and ``sum epsilon_i <=
  epsilon_budget`` (pure releases: the privacy loss is at most that sum on
  every outcome), **or** ``sum rho_i <= rho_budget``, the largest rho whose
  tight conversion (Canonne, Kamath and Steinke 2020) at ``delta_budget`` is
  within ``epsilon_budget``. The second alone is a valid filter (Feldman and
  Zrnic, "Individual Privacy Accounting via a Renyi Filter", 2021: the
  stopped sequence is rho_budget-zCDP, as it bounds every Renyi order at
  once); the union with the first stays one at the same delta, because on
  the outcomes the first admits the loss never exceeds epsilon_budget
  (docs/privacy.md, "The ledger's rule is a privacy filter").

:func:`compose` states the total by the dataset's accounting;
:func:`compose_fixed` states it for releases fixed in advance (the smaller of
basic composition and zCDP plus basic composition for the others), valid
only when no release was chosen after seeing another's output: a series'
planned rows, a plan of N releases printed by ``forecast --periods``.

Monotone: adding a release never lowers any statement, so never lowers the
total, and a release that does not fit never will beside the same others.

References
----------
Bun and Steinke, "Concentrated Differential Privacy: Simplifications,
Extensions, and Lower Bounds", TCC 2016 (arXiv:1605.02065). Canonne, Kamath
and Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020.
Rogers, Roth, Ullman and Vadhan, "Privacy Odometers and Filters: Pay-as-you-Go
Composition", NeurIPS 2016. Feldman and Zrnic, "Individual Privacy Accounting
via a Renyi Filter", NeurIPS 2021. Whitehouse, Ramdas, Rogers and Wu,
"Fully-Adaptive Composition in Differential Privacy", ICML 2023.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..laws import zcdp
from ..params.specs import ReleaseInfo, ReleaseSpec

#: Relative slack of the comparison with the budget: covers the rounding of
#: decimal inputs (ten releases at epsilon=0.1 fit a budget of 1), nothing more.
TOLERANCE = zcdp.TOLERANCE

BASIC = "basic composition"
#: The statement of :func:`compose_fixed` through zCDP (releases fixed in advance).
ZCDP = "zCDP (rho adds), basic composition for the releases that are not zCDP"
#: The statement of :func:`compose` through zCDP (a dataset whose accounting is "zcdp").
ZCDP_FILTER = "zCDP (rho adds, converted once)"
#: What :func:`compose` names when a release cannot be counted by the accounting.
NOT_ZCDP = "not admitted: a release that is not zCDP under the accounting 'zcdp'"
#: The accounting of a dataset, fixed when its budget is registered: its
#: ledger rule (see the module's docstring).
ACCOUNTINGS = ("basic", "zcdp")


@dataclass(frozen=True)
class Cost:
    """What one release spends.

    Attributes
    ----------
    epsilon, delta : float
        The (epsilon, delta)-DP the release is stated with.
    rho : float or None
        The zCDP rho the release satisfies; None when it is not zCDP (the
        stability histogram), and it then counts by basic composition only.
    """

    epsilon: float
    delta: float
    rho: float | None

    def __post_init__(self) -> None:
        for name in ("epsilon", "delta"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"a release's {name} must be a finite number >= 0, got {name}={v!r}")
        if self.rho is not None and not (math.isfinite(self.rho) and self.rho >= 0):
            raise ValueError(f"a release's rho must be a finite number >= 0 or None, got rho={self.rho!r}")
        if self.delta >= 1:
            raise ValueError(f"a release's delta must be below 1, got delta={self.delta!r}")


def pure(epsilon: float) -> Cost:
    """The cost of an epsilon-DP release: (epsilon, 0), epsilon^2/2-zCDP."""
    return Cost(float(epsilon), 0.0, zcdp.pure_rho(epsilon))


def release_cost(release: ReleaseSpec | ReleaseInfo) -> Cost:
    """The cost of a release, from its public record: the resolved
    :class:`~dpdbscan.params.specs.ReleaseSpec` before it is made, or the
    :class:`~dpdbscan.params.specs.ReleaseInfo` a model keeps of it after."""
    if isinstance(release, ReleaseSpec):
        epsilon, delta, rho = release.noise.epsilon, release.delta_spent, release.noise.rho
    else:
        epsilon, delta, rho = release.epsilon, release.delta, release.rho
    if release.histogram == "stability":
        return Cost(float(epsilon), float(delta), None)
    if rho is None:
        if delta != 0:  # pragma: no cover - a Laplace release off the stability histogram is pure
            return Cost(float(epsilon), float(delta), None)
        return pure(epsilon)
    return Cost(float(epsilon), float(delta), float(rho))


def upper_cost(epsilon: float, delta: float) -> Cost:
    """A cost no release at (epsilon, delta) exceeds, for when the release
    cannot be resolved yet (its grid is unknown): (epsilon, delta) by basic
    composition only, or pure when delta is 0 (then no histogram or noise of
    this library spends delta)."""
    if delta == 0:
        return pure(epsilon)
    return Cost(float(epsilon), float(delta), None)


@dataclass(frozen=True)
class Total:
    """The privacy of several releases together.

    Attributes
    ----------
    epsilon, delta : float
        The total, stated by ``method``.
    method : str
        :data:`BASIC`, :data:`ZCDP_FILTER` (:func:`compose`, accounting
        "zcdp"), :data:`ZCDP` (:func:`compose_fixed`) or :data:`NOT_ZCDP`.
    basic : tuple (epsilon, delta)
        The statement by basic composition.
    zcdp : tuple (epsilon, delta) or None
        The statement through zCDP (None: not counted so, no zCDP release, or
        no delta to convert with).
    rho : float
        The rho of the releases that are zCDP.
    """

    epsilon: float
    delta: float
    method: str
    basic: tuple[float, float]
    zcdp: tuple[float, float] | None
    rho: float


def check_accounting(accounting: object) -> str:
    """``accounting`` if it is one of :data:`ACCOUNTINGS`, else ValueError."""
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got accounting={accounting!r}")
    return str(accounting)


def compose(costs: Sequence[Cost], delta_budget: float, accounting: str = "basic") -> Total:
    """The total of ``costs`` by a dataset's ``accounting`` against its
    lifetime delta ``delta_budget``: the ledger's rule, a privacy filter under
    fully adaptive choice (see the module's docstring). ``fits`` of it is the
    filter's test. Under "zcdp" a release that is not zCDP makes the total
    infinite (method :data:`NOT_ZCDP`): it is never admitted."""
    check_accounting(accounting)
    basic = (math.fsum(c.epsilon for c in costs), math.fsum(c.delta for c in costs))
    rho = math.fsum(c.rho for c in costs if c.rho is not None)
    if accounting == "basic":
        return Total(basic[0], basic[1], BASIC, basic, None, rho)
    if any(c.rho is None and c.delta > 0 for c in costs):
        return Total(math.inf, basic[1], NOT_ZCDP, basic, None, rho)
    # pure releases without a rho (upper_cost at delta 0) are pure(epsilon)
    rho = math.fsum(c.rho if c.rho is not None else zcdp.pure_rho(c.epsilon) for c in costs)
    # the rule itself is the in-process ZCDPAccountant's too (laws.zcdp.filter_statements)
    all_pure = all(c.delta == 0 for c in costs)
    by_pure, through_zcdp = zcdp.filter_statements(basic[0] if all_pure else None, rho, delta_budget)
    if not costs:  # nothing released: no conversion to state
        through_zcdp = None
    candidates: list[tuple[str, tuple[float, float]]] = []
    if by_pure is not None:
        candidates.append((BASIC, basic))
    if through_zcdp is not None:
        candidates.append((ZCDP_FILTER, through_zcdp))
    if not candidates:  # pragma: no cover - only a non-pure release at delta_budget 0, refused above
        return Total(math.inf, basic[1], NOT_ZCDP, basic, None, rho)
    method, (epsilon, delta) = min(candidates, key=lambda ms: ms[1][0])
    return Total(epsilon, delta, method, basic, through_zcdp, rho)


def compose_fixed(costs: Sequence[Cost], delta_budget: float) -> Total:
    """The total of ``costs`` fixed in advance (none chosen after seeing
    another's output), against a lifetime delta ``delta_budget``: the smaller
    epsilon of two valid statements, basic composition and zCDP for the
    releases that are zCDP (converted at ``delta_budget`` less the others'
    deltas, tight conversion) plus basic composition for the others. Not the
    ledger's rule: for adaptively chosen releases the smaller of two valid
    filters was not shown to be one (:func:`compose` is)."""
    basic = (math.fsum(c.epsilon for c in costs), math.fsum(c.delta for c in costs))
    in_zcdp = [c for c in costs if c.rho is not None]
    others = [c for c in costs if c.rho is None]
    rho = math.fsum(c.rho for c in in_zcdp if c.rho is not None)
    through_zcdp = None
    delta_left = delta_budget - math.fsum(c.delta for c in others)
    if in_zcdp and delta_left > 0:
        eps_z = zcdp.epsilon_for(rho, delta_left)
        through_zcdp = (eps_z + math.fsum(c.epsilon for c in others), float(delta_budget))
    candidates = [(BASIC, basic)] + ([(ZCDP, through_zcdp)] if through_zcdp is not None else [])
    valid = [(m, s) for m, s in candidates if s[1] <= delta_budget * (1 + TOLERANCE)]
    method, (epsilon, delta) = min(valid or candidates[:1], key=lambda ms: ms[1][0])
    return Total(epsilon, delta, method, basic, through_zcdp, rho)


def fits(total: Total, epsilon_budget: float, delta_budget: float) -> bool:
    """Whether ``total`` is within the lifetime budget (to :data:`TOLERANCE`)."""
    return zcdp.within((total.epsilon, total.delta), epsilon_budget, delta_budget)


def largest_pure(
    costs: Sequence[Cost], epsilon_budget: float, delta_budget: float, accounting: str = "basic"
) -> float:
    """The largest epsilon of one further pure epsilon-DP release that still
    fits by ``accounting`` (0 when none does), to a relative 1e-9. Under zCDP
    the total is not the budget minus what was spent, so this is found by
    bisection on :func:`compose`, which is monotone in the new release's
    epsilon."""
    return largest_repeated(costs, pure, 1, epsilon_budget, delta_budget, accounting)


def largest_repeated(
    costs: Sequence[Cost],
    cost_at: Callable[[float], Cost],
    n: int,
    epsilon_budget: float,
    delta_budget: float,
    accounting: str | None = "basic",
) -> float:
    """The largest epsilon ``e`` such that ``n`` further releases, each
    costing ``cost_at(e)`` (the release a fit at epsilon ``e`` makes), still
    fit beside ``costs`` by ``accounting`` (0 when none does), to a relative
    1e-9: the epsilon per period of ``n`` releases planned under one lifetime
    budget. ``accounting`` None: by :func:`compose_fixed` (releases fixed in
    advance, not charged to a ledger). Found by bisection: under zCDP ``n``
    releases cost less than ``n`` times one (rho's add, the total is
    converted once), so the answer is not the budget over ``n``."""
    if n < 1:
        raise ValueError(f"the number of releases must be at least 1, got {n!r}")

    def total(cs: Sequence[Cost]) -> Total:
        return (
            compose_fixed(cs, delta_budget) if accounting is None else compose(cs, delta_budget, accounting)
        )

    def ok(e: float) -> bool:
        return fits(total([*costs, *[cost_at(e)] * n]), epsilon_budget, delta_budget)

    if not fits(total(costs), epsilon_budget, delta_budget):
        return 0.0
    if ok(epsilon_budget):
        return epsilon_budget
    basic = (epsilon_budget - math.fsum(c.epsilon for c in costs)) / n
    lo = basic if basic > 0 and ok(basic) else 0.0
    hi = epsilon_budget
    while hi - lo > 1e-9 * epsilon_budget:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


__all__ = [
    "ACCOUNTINGS",
    "BASIC",
    "NOT_ZCDP",
    "ZCDP",
    "ZCDP_FILTER",
    "Cost",
    "Total",
    "check_accounting",
    "compose",
    "compose_fixed",
    "fits",
    "largest_pure",
    "largest_repeated",
    "pure",
    "release_cost",
    "upper_cost",
]
