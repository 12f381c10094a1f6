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

The total of the releases ``Z`` that are zCDP and ``A`` that are not is the
tighter of two valid statements:

* **basic composition**: ``(sum epsilon_i, sum delta_i)`` over all releases;
* **zCDP, plus basic composition for the others**: the releases of ``Z``
  together are ``sum rho_i``-zCDP, hence ``(epsilon_Z, delta_Z)``-DP with
  ``epsilon_Z = epsilon_for(sum rho_i, delta_Z)`` (the tight conversion,
  :func:`dpdbscan.laws.zcdp.epsilon_for`); composed with ``A`` by basic
  composition, the whole is ``(epsilon_Z + sum_A epsilon_j, delta_Z +
  sum_A delta_j)``-DP. The ledger spends the lifetime delta on it:
  ``delta_Z = delta_budget - sum_A delta_j``, so the statement is at the
  ledger's delta. It needs ``delta_budget > sum_A delta_j`` (a pure
  lifetime budget, delta = 0, never converts from zCDP).

Both are valid, so the smaller epsilon of those whose delta fits the lifetime
delta is the total; :attr:`Total.method` names it. Neither statement relies on
approximate zCDP (Bun and Steinke's Section 8); that would also count the
stability releases in zCDP, and is left out on purpose: the rule here is
basic composition of DP mechanisms, one of which is a zCDP bundle.

Monotone: adding a release never lowers either statement, so never lowers
the total. Hence refusing the release whose total would exceed the budget is
the same as checking each prefix.

References
----------
Bun and Steinke, "Concentrated Differential Privacy: Simplifications,
Extensions, and Lower Bounds", TCC 2016 (arXiv:1605.02065). Canonne, Kamath
and Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..laws import zcdp
from ..params.specs import ReleaseInfo, ReleaseSpec

#: Relative slack of the comparison with the budget: covers the rounding of
#: decimal inputs (ten releases at epsilon=0.1 fit a budget of 1), nothing more.
TOLERANCE = 1e-12

BASIC = "basic composition"
ZCDP = "zCDP (rho adds), basic composition for the releases that are not zCDP"


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
        :data:`BASIC` or :data:`ZCDP`.
    basic : tuple (epsilon, delta)
        The statement by basic composition.
    zcdp : tuple (epsilon, delta) or None
        The statement through zCDP (None: no zCDP release, or no delta left
        to convert with).
    rho : float
        The rho of the releases that are zCDP.
    """

    epsilon: float
    delta: float
    method: str
    basic: tuple[float, float]
    zcdp: tuple[float, float] | None
    rho: float


def compose(costs: Sequence[Cost], delta_budget: float) -> Total:
    """The total of ``costs`` against a lifetime delta ``delta_budget``
    (see the module's docstring for the rule)."""
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
    return total.epsilon <= epsilon_budget * (1 + TOLERANCE) and total.delta <= delta_budget * (1 + TOLERANCE)


def largest_pure(costs: Sequence[Cost], epsilon_budget: float, delta_budget: float) -> float:
    """The largest epsilon of one further pure epsilon-DP release that still
    fits (0 when none does), to a relative 1e-9. Under zCDP the total is not
    the budget minus what was spent, so this is found by bisection on
    :func:`compose`, which is monotone in the new release's epsilon."""
    return largest_repeated(costs, pure, 1, epsilon_budget, delta_budget)


def largest_repeated(
    costs: Sequence[Cost],
    cost_at: Callable[[float], Cost],
    n: int,
    epsilon_budget: float,
    delta_budget: float,
) -> float:
    """The largest epsilon ``e`` such that ``n`` further releases, each
    costing ``cost_at(e)`` (the release a fit at epsilon ``e`` makes), still
    fit beside ``costs`` (0 when none does), to a relative 1e-9: the
    epsilon per period of ``n`` releases planned under one lifetime budget.
    Found by bisection on :func:`compose`: under zCDP ``n`` releases cost
    less than ``n`` times one (rho's add, the total is converted once), so
    the answer is not the budget over ``n``."""
    if n < 1:
        raise ValueError(f"the number of releases must be at least 1, got {n!r}")

    def ok(e: float) -> bool:
        return fits(compose([*costs, *[cost_at(e)] * n], delta_budget), epsilon_budget, delta_budget)

    if not fits(compose(costs, delta_budget), epsilon_budget, delta_budget):
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
    "BASIC",
    "ZCDP",
    "Cost",
    "Total",
    "compose",
    "fits",
    "largest_pure",
    "largest_repeated",
    "pure",
    "release_cost",
    "upper_cost",
]
