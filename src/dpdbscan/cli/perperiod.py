"""``forecast --periods N``: the epsilon of each of N releases planned under
one lifetime budget (a map published again every week, its places found
again each time), and what one of them can then detect.

Public inputs only, nothing spent: the lifetime budget is given
(``--lifetime-epsilon``, ``--lifetime-delta``) or read from a ledger, whose
budget and releases are public facts (what it holds, each planned series at
its whole plan, is what the N releases must fit beside). Each release's cost
is the one ``fit`` would reserve for these options
(:func:`dpdbscan.cli.ledger.cost_in_box`), and the N of them are composed by
the ledger's own rule (:func:`dpdbscan.ledger.largest_repeated`): with a
ledger, by its dataset's accounting (a privacy filter: the N fits may be
chosen one after another); without one, as N releases fixed in advance
(:func:`dpdbscan.ledger.compose_fixed`). Under zCDP rho's add and the total is
converted once, so the epsilon per period is not the lifetime epsilon over N.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ledger import Cost, Ledger, compose, compose_fixed, largest_repeated
from ..ledger.composition import BASIC
from ..params.validation import check_positive
from .common import ArgTarget
from .ledger import cost_in_box


def add_arguments(p: ArgTarget) -> None:
    g = p.add_argument_group(
        "a budget per period (--periods N)",
        "N releases of the same options, one per period (a week's map each week, its\n"
        "places found again every time), under one lifetime budget: the epsilon of each\n"
        "(composed as the ledger composes them), and the forecast at that epsilon.",
    )
    g.add_argument(
        "--periods",
        type=int,
        metavar="N",
        help="plan N releases of these options under one lifetime budget: print the epsilon each "
        "may spend and forecast one of them (one fit per period finds its places again each time; "
        "fit --per / --places-periods instead finds them once and counts them each period)",
    )
    g.add_argument(
        "--lifetime-epsilon",
        type=float,
        metavar="E",
        help="with --periods: the lifetime epsilon of each unit (or row) for all N releases",
    )
    g.add_argument(
        "--lifetime-delta",
        type=float,
        metavar="D",
        help="with --periods and --lifetime-epsilon: the lifetime delta (default: --delta)",
    )
    g.add_argument(
        "--ledger",
        metavar="LEDGER",
        help="with --periods: plan within this ledger's lifetime budget for --dataset, beside what it "
        "already holds (read only; nothing is charged)",
    )
    g.add_argument("--dataset", metavar="NAME", help="with --ledger: the dataset whose budget to plan in")


@dataclass(frozen=True)
class PeriodsRequest:
    """What ``--periods`` and its budget options ask for, as parsed."""

    periods: int | None
    lifetime_epsilon: float | None
    lifetime_delta: float | None
    ledger: str | None
    dataset: str | None
    per: str | None

    @classmethod
    def from_args(cls, args: Any) -> PeriodsRequest:
        return cls(
            args.periods,
            args.lifetime_epsilon,
            args.lifetime_delta,
            args.ledger,
            args.dataset,
            getattr(args, "per", None),
        )


@dataclass(frozen=True)
class PeriodPlan:
    """N releases at ``epsilon`` each within a lifetime budget."""

    periods: int
    epsilon: float
    delta: float
    lifetime_epsilon: float
    lifetime_delta: float
    source: str
    method: str
    total_epsilon: float
    basic_epsilon: float | None
    held: int

    def record(self) -> dict[str, Any]:
        return {
            "periods": self.periods,
            "epsilon_per_period": self.epsilon,
            "delta_per_period": self.delta,
            "lifetime": {
                "epsilon": self.lifetime_epsilon,
                "delta": self.lifetime_delta,
                "from": self.source or "given",
            },
            "releases_already_held": self.held,
            "total": {"epsilon": self.total_epsilon, "method": self.method},
            "basic_composition_epsilon_per_period": self.basic_epsilon,
        }

    def lines(self) -> list[str]:
        beside = " beside what it already holds (each planned series at its whole plan)" if self.held else ""
        if self.basic_epsilon is None:
            alone = f"basic composition alone cannot: {self.periods} deltas add up past the lifetime delta"
        else:
            alone = f"by basic composition alone: epsilon={self.basic_epsilon:g} each"
        charge = "(and --ledger to charge it)"
        if not self.source and self.method != BASIC:
            # a given budget is planned by zCDP: a ledger registered with the default
            # accounting (basic composition) would refuse part of the plan
            refused = (
                "refuses the release whose delta takes the total past the lifetime delta"
                if self.basic_epsilon is None
                else f"lets each release spend only epsilon={self.basic_epsilon:g}"
            )
            charge = (
                "(to charge them to a ledger, register its dataset with 'dpdbscan ledger init ... "
                f"--accounting zcdp': one registered with the default basic composition {refused})"
            )
        return [
            f"periods : {self.periods} releases of these options, one per period, each finding its places "
            f"again, within the lifetime budget (epsilon={self.lifetime_epsilon:g}, "
            f"delta={self.lifetime_delta:g}){' ' + self.source if self.source else ''}{beside}: "
            f"epsilon={self.epsilon:g} each "
            f"(delta={self.delta:g}); the {self.periods} together (epsilon={self.total_epsilon:.6g}) "
            f"by {self.method} ({alone}). "
            f"Nothing is spent: fit each period with --epsilon {self.epsilon:g} {charge}; the forecast "
            "below is one period's release",
        ]


def round_down(x: float, digits: int = 4) -> float:
    """``x`` rounded down to ``digits`` significant digits, so that the
    printed epsilon, given back to ``fit``, still fits."""
    if x <= 0:
        return 0.0
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(x)))
    return math.floor(x * scale) / scale


def plan_periods(
    req: PeriodsRequest, p: dict[str, Any], lower: np.ndarray, upper: np.ndarray, geo: bool
) -> PeriodPlan | None:
    """The plan ``--periods`` asks for, or None without it."""
    if req.periods is None:
        for flag in ("lifetime_epsilon", "lifetime_delta", "ledger", "dataset"):
            if getattr(req, flag) is not None:
                raise ValueError(f"--{flag.replace('_', '-')} plans releases per period: give --periods N")
        return None
    if req.periods < 1:
        raise ValueError(f"--periods must be at least 1, got {req.periods}")
    if req.per is not None:
        raise ValueError(
            "--periods N plans N separate releases (places found again each period); --per plans one "
            "series (places found once, counted each period) at its own lifetime budget: give one"
        )
    life_eps, life_delta, held, source, accounting = _lifetime(req, p["delta"])
    units = p["max_cells_per_unit"] is not None
    n = int(req.periods)

    def cost_at(e: float) -> Cost:
        return cost_in_box({**p, "epsilon": e}, lower, upper, units=units, geo=geo)

    each = round_down(largest_repeated(held, cost_at, n, life_eps, life_delta, accounting))
    if each <= 0:
        way_out = ""
        if accounting == "basic" and p["delta"] > 0 and n * p["delta"] > life_delta:
            way_out = (
                f"; by this dataset's basic composition the {n} deltas add up: give each release "
                f"--delta {round_down(life_delta / n, 3):g} or less, or plan in a dataset registered with "
                "'dpdbscan ledger init ... --accounting zcdp' (rho's add and the total is converted once)"
            )
        raise ValueError(
            f"no release of these options fits {n} times within the lifetime budget (epsilon={life_eps:g}, "
            f"delta={life_delta:g}) {source}: each release's delta ({p['delta']:g}) or what the ledger "
            f"already holds leaves nothing{way_out}"
        )
    costs = [*held, *[cost_at(each)] * n]
    total = compose_fixed(costs, life_delta) if accounting is None else compose(costs, life_delta, accounting)
    # basic composition alone: the epsilons add, and so do the deltas
    basic = None
    if life_delta - math.fsum(c.delta for c in held) - n * cost_at(each).delta >= 0:
        basic = round_down(max(life_eps - math.fsum(c.epsilon for c in held), 0.0) / n)
    return PeriodPlan(
        n, each, p["delta"], life_eps, life_delta, source, total.method, total.epsilon, basic, len(held)
    )


def _lifetime(req: PeriodsRequest, delta: float) -> tuple[float, float, tuple[Cost, ...], str, str | None]:
    """The lifetime (epsilon, delta), what it already holds, where it comes
    from and its accounting: ``--lifetime-epsilon`` (``--lifetime-delta``,
    default the release's ``delta``; None: N releases fixed in advance) or a
    ledger's dataset (its accounting)."""
    if req.ledger is not None or req.dataset is not None:
        if req.ledger is None or req.dataset is None:
            raise ValueError("--ledger and --dataset go together: the ledger and the dataset to plan in")
        if req.lifetime_epsilon is not None or req.lifetime_delta is not None:
            raise ValueError("the lifetime budget is the ledger's: give --ledger or --lifetime-epsilon")
        account = Ledger(req.ledger, req.dataset).account()
        where = f"of {req.dataset!r} in {req.ledger}, accounting {account.accounting!r}"
        return account.epsilon, account.delta, account.held_costs, where, account.accounting
    if req.lifetime_epsilon is None:
        raise ValueError(
            "--periods N needs the lifetime budget: --lifetime-epsilon E, or --ledger and --dataset"
        )
    life_eps = check_positive("--lifetime-epsilon", req.lifetime_epsilon)
    life_delta = delta if req.lifetime_delta is None else float(req.lifetime_delta)
    if not 0 <= life_delta < 1:
        raise ValueError(f"--lifetime-delta must be in [0, 1), got {life_delta:g}")
    return life_eps, life_delta, (), "", None


__all__ = ["PeriodPlan", "PeriodsRequest", "add_arguments", "plan_periods", "round_down"]
