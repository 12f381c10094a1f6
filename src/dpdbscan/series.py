"""Hotspots over time under one lifetime budget per unit.

A series is planned from public inputs: the periods
(:class:`dpdbscan.traces.periods.Periods`: hour, day, week or month over a
horizon ``[from, to)``), one lifetime (epsilon, delta) per privacy unit, and
the share of it that goes to the activity table. It is released in two parts:

(a) the spans, ONCE, over the whole horizon: the usual person-level release
    (:func:`dpdbscan.pipeline.fit`) of every row whose time is in a period;
(b) the span x period table (:mod:`dpdbscan.release.periodtable`): each
    span's mass in each period, the contribution of each unit bounded over
    the whole horizon (k (span, period) pairs, m points each) and the
    discrete Gaussian added to every entry.

Places are found once and their activity measured per period: a span keeps
its id in every period because it is the same span. A period's spans are the
spans ACTIVE in it: those whose noisy mass in that period is at least the
interval's half-width h (the 95% interval excludes zero), a rule on the
released table and the public sigma^2 alone (:func:`active_spans`), so
post-processing at no cost. The guarantee
(docs/privacy.md §5.2): (a) is rho_a-zCDP for each unit; given (a)'s output,
which point is in which span is a public function, so (b) is a mechanism
chosen after seeing (a) and is rho_b-zCDP for each unit whatever (a) said;
by adaptive composition the pair is (rho_a + rho_b)-zCDP, and the split
keeps rho_a + rho_b <= rho, the largest rho that converts to the lifetime
(epsilon, delta). When the spans' release is not zCDP (the stability
histogram), the lifetime is split by basic composition instead: (a) at
((1 - share) epsilon, delta / 2), (b) at rho_for(share epsilon, delta / 2).

A row whose time is missing, unreadable or outside the horizon is dropped
from both parts by the per-record rule. Nothing here looks at the data to
decide the plan: the split, the bound, sigma^2 and the periods are fixed
before a record is read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .exceptions import private_note
from .files.unitids import read_units
from .laws import zcdp
from .ledger import Cost, release_cost
from .model.predict import predict_spans
from .model.record import SpanModel
from .params.validation import check_array
from .pipeline import fit as fit_release
from .pipeline import refuse_lazy_text_reads
from .plan.resolve import resolve
from .release import periodtable
from .release.backends import NumpyBackend
from .traces import parse_times
from .traces.periods import Periods, parse_local, zone

if TYPE_CHECKING:
    from .ledger import Ledger, Reservation

#: The share of the lifetime budget spent on the table unless told. Why 0.4:
#: on full Cabs pick-ups (docs/privacy.md §5.2) 0.4 kept every busy cell in the
#: horizon's spans and gave the days' table the least misses over the seeds
#: tried; 0.5 and 0.6 let more spans through or fewer (the table's bound is
#: k = spans x periods, so each extra span adds noise to every entry), 0.2
#: left the days' table too noisy.
DEFAULT_SHARE = 0.4
#: The share of the table's rho_b spent choosing K privately
#: (``max_pairs_per_unit="auto"``), as for cells (:data:`dpdbscan.plan.units.SHARE`).
PAIRS_SHARE = 0.1
#: The level of the intervals written beside each noisy mass.
LEVEL = 0.95


@dataclass(frozen=True)
class SeriesPlan:
    """The public plan of a series: periods, lifetime budget, split, bound.

    ``spans_epsilon`` and ``spans_delta`` are the (epsilon, delta) the spans'
    release (a) runs at; ``table_rho`` the table's (b) zCDP rho, ``sigma2``
    its noise; ``cost`` what the whole series spends (charged once). ``k``
    None ("all"): every (span, period) pair, k = S x T, fixed once (a) has
    released the S spans (public then); ``k`` and ``sigma2`` are then None
    until :meth:`calibrated`. The cost does not depend on k: rho_b is fixed."""

    periods: Periods
    epsilon: float
    delta: float
    share: float
    k: int | None
    m: int
    method: str
    spans_epsilon: float
    spans_delta: float
    table_rho: float
    sigma2: float | None
    cost: Cost
    places: int | None = None
    period_rho: float | None = None
    spans_cost: Cost | None = None
    choose_k: bool = False

    @property
    def choice_rho(self) -> float:
        """The rho spent choosing k privately ("auto"): :data:`PAIRS_SHARE` of rho_b."""
        return PAIRS_SHARE * self.table_rho if self.choose_k else 0.0

    @property
    def noise_rho(self) -> float:
        """The rho the whole-horizon table's noise is calibrated to: rho_b,
        less the choice of k when "auto" (their sum never above rho_b)."""
        if not self.choose_k:
            return self.table_rho
        r = self.table_rho - self.choice_rho
        while Fraction(r) + Fraction(self.choice_rho) > Fraction(self.table_rho):
            r = math.nextafter(r, 0.0)
        return r

    def table_bound(self, n_spans: int) -> periodtable.TableBound:
        """The calibrated table's public plan once the ``n_spans`` spans are
        released: its shape (spans, periods) and the bound (k pairs, m points)."""
        assert self.k is not None, "a table is bounded once k is fixed (calibrated or chosen)"
        return periodtable.TableBound((n_spans, self.periods.n_periods), self.k, self.m)

    def chosen(self, k: int) -> SeriesPlan:
        """The plan once k is chosen ("auto"): sigma^2 for the noise's rho at sqrt(k) m."""
        return replace(self, k=int(k), sigma2=periodtable.sigma2_for(self.noise_rho, int(k), self.m))

    @property
    def appendable(self) -> bool:
        """Whether the periods are released one by one (the spans from the
        first ``places`` periods, each period's column at ``period_rho``)."""
        return self.places is not None

    def period_cost(self) -> Cost:
        """What one period's column costs (an appendable plan): rho_b / T,
        stated as (epsilon, delta) at the lifetime delta."""
        assert self.period_rho is not None
        return Cost(zcdp.epsilon_for(self.period_rho, self.delta), self.delta, self.period_rho)

    def calibrated(self, n_spans: int) -> SeriesPlan:
        """The plan once the spans are released: k = S x T when it was "all"
        (at least 1), a given k lowered to S x T when it is larger (no unit
        has more pairs than there are, so a larger k only adds noise; S is
        public then), and sigma^2 for rho_b at sensitivity sqrt(k) m. An
        appendable plan bounds each period on its own: k pairs of the
        period's S, sigma^2 for rho_b / T."""
        per_bound = self.appendable
        pairs = n_spans * (1 if per_bound else self.periods.n_periods)
        if self.choose_k:  # k is chosen from the data once the spans are out
            return self
        k = self.k if self.k is not None else max(1, pairs)
        if pairs > 0:
            k = min(k, pairs)
        rho = self.period_rho if per_bound else self.noise_rho
        assert rho is not None
        return replace(self, k=k, sigma2=periodtable.sigma2_for(rho, k, self.m))

    def record(self, unit: str | None = None) -> dict:
        """The plan as the files state it (JSON-safe)."""
        if self.k is None or self.sigma2 is None:
            bound: dict[str, Any] = {
                "max_pairs_per_unit": "all (spans per period, fixed once the spans are released)"
                if self.appendable
                else "auto (chosen privately once the spans are released)"
                if self.choose_k
                else "all (spans x periods, fixed once the spans are released)"
            }
        else:
            l1, l2 = periodtable.sensitivity(self.k, self.m)
            bound = {
                "max_pairs_per_unit": self.k,
                "l1_sensitivity": l1,
                "l2_sensitivity": l2,
                "sigma2": self.sigma2,
                "interval_half_width": periodtable.half_width(self.sigma2, LEVEL),
            }
        return {
            "periods": self.periods.record(),
            "unit": unit or "the privacy unit",
            "lifetime_budget": {"epsilon": self.epsilon, "delta": self.delta},
            "statement": statement(self, unit),
            "composition": self.method,
            "table_share": self.share,
            "spans_release": {"epsilon": self.spans_epsilon, "delta": self.spans_delta},
            "table": {
                "rho": self.table_rho,
                "max_points_per_pair": self.m,
                "noise": "discrete Gaussian",
                "interval_level": LEVEL,
                "bound_over": "each period" if self.appendable else "the whole horizon",
                **bound,
                **(
                    {
                        "pairs_choice": {
                            "rho": self.choice_rho,
                            "noise_rho": self.noise_rho,
                            "share_of_table": PAIRS_SHARE,
                            "candidates": "round(2^(i/4)) up to spans x periods",
                            "mechanism": "exponential mechanism on the pairs per unit (as for cells, "
                            "docs/privacy.md 1.7)",
                        }
                    }
                    if self.choose_k
                    else {}
                ),
            },
            "cost": {"epsilon": self.cost.epsilon, "delta": self.cost.delta, "rho": self.cost.rho},
            **({"appendable": self._appendable_record()} if self.appendable else {}),
        }

    def _appendable_record(self) -> dict[str, Any]:
        """The public facts a later run needs to append periods."""
        assert self.places is not None and self.spans_cost is not None
        first = period_end(self.periods, self.places)
        return {
            "places_periods": self.places,
            "places_from": self.periods.start,
            "places_to": first,
            "period_rho": self.period_rho,
            "period_cost": {"epsilon": self.period_cost().epsilon, "delta": self.delta},
            "spans_cost": {
                "epsilon": self.spans_cost.epsilon,
                "delta": self.spans_cost.delta,
                "rho": self.spans_cost.rho,
            },
        }


def statement(plan: SeriesPlan, unit: str | None) -> str:
    """The guarantee in words, for every file of the series."""
    who = f"each {unit}" if unit else "each privacy unit"
    if plan.appendable:
        return (
            f"(epsilon={plan.epsilon:g}, delta={plan.delta:g})-differential privacy for {who} over the "
            f"whole planned series ({plan.periods.n_periods} {plan.periods.kind}(s) from "
            f"{plan.periods.start} to {plan.periods.end}, {plan.periods.tz or 'UTC'}; periods released "
            f"as they complete, each charged rho_b/T): the spans of the first {plan.places} "
            f"{plan.periods.kind}(s) and every period's masses together, by {plan.method}"
        )
    return (
        f"(epsilon={plan.epsilon:g}, delta={plan.delta:g})-differential privacy for {who} over the "
        f"whole series ({plan.periods.n_periods} {plan.periods.kind}(s) from {plan.periods.start} to "
        f"{plan.periods.end}, {plan.periods.tz or 'UTC'}): the spans and the span x period table "
        f"together, by {plan.method}"
    )


def plan_series(
    p: dict[str, Any],
    lower: np.ndarray,
    upper: np.ndarray,
    periods: Periods,
    *,
    share: float = DEFAULT_SHARE,
    max_pairs_per_unit: int | str | None = "all",
    max_points_per_pair: int = 1,
    places: int | None = None,
) -> SeriesPlan:
    """Split the lifetime (``p["epsilon"]``, ``p["delta"]``) between the
    spans and the table, and calibrate the table (public inputs only).
    ``max_pairs_per_unit``: an integer, or "all" (None too, the default
    here): every (span, period) pair, k = S x T once the S spans are
    released (no unit is cut; the noise grows as sqrt(S T)); or "auto" (the
    command line's default in memory): k chosen privately from each unit's
    number of pairs once the spans are released, for :data:`PAIRS_SHARE` of
    rho_b (:func:`_choose_pairs`; in memory, whole-horizon tables only).

    ``places``: an appendable series (:func:`start_series`,
    :func:`append_periods`): the spans are found once from the first
    ``places`` periods, and each period's column of the table is released
    on its own (as the period completes) at rho_b / T, its bound per period
    (k of the S spans, default all S: no unit is cut). With k = S that is
    the noise of the flat table at k = S x T: sigma^2 = S T m^2 / (2 rho_b)."""
    epsilon, delta = float(p["epsilon"]), float(p["delta"])
    if not delta > 0:
        raise ValueError("a series adds Gaussian noise to its table: give a lifetime --delta > 0")
    if not 0 < share < 1:
        raise ValueError(f"the table's share of the budget must be in (0, 1), got {share!r}")
    if places is not None and not 1 <= int(places) <= periods.n_periods:
        raise ValueError(
            f"the spans of an appendable series come from its first N periods: N must be 1 to "
            f"{periods.n_periods}, got {places!r}"
        )
    choose_k = max_pairs_per_unit == "auto"
    if choose_k and places is not None:
        raise ValueError(
            "--max-pairs-per-unit auto chooses K once from the whole horizon's pairs, which an "
            "appendable series does not have when it starts: give K (pairs per unit per period) or all"
        )
    k = None if max_pairs_per_unit in (None, "all", "auto") else int(max_pairs_per_unit)
    m = int(max_points_per_pair)
    if (k is not None and k < 1) or m < 1:
        raise ValueError("the table's bound needs at least 1 pair per unit and 1 point per pair")
    whole = resolve(p, lower, upper, units=True, stacklevel=3).release
    if whole.histogram != "stability" and whole.noise.rho is not None:
        rho = zcdp.rho_for(epsilon, delta)
        spans_epsilon = zcdp.epsilon_for((1 - share) * rho, delta)
        spans = resolve({**p, "epsilon": spans_epsilon}, lower, upper, units=True, stacklevel=3).release
        rho_a = float(spans.noise.rho)  # type: ignore[arg-type]
        rho_b = rho - rho_a
        while Fraction(rho_a) + Fraction(rho_b) > Fraction(rho):
            rho_b = math.nextafter(rho_b, 0.0)
        if not rho_b > 0:  # pragma: no cover - share in (0, 1) leaves some
            raise ValueError("the table's share of the budget is too small to calibrate its noise")
        # rho_a + rho_b <= rho exactly, and the sampler's sigma^2 is never
        # below sigma2 (periodtable.rho_of <= rho_b up to the float's rounding)
        cost = Cost(epsilon, delta, rho)
        method = "zCDP (adaptive composition)"
        plan = SeriesPlan(
            periods, epsilon, delta, share, k, m, method, spans_epsilon, delta, rho_b, None, cost
        )
        if choose_k:
            plan = replace(plan, choose_k=True)
        if places is not None:
            plan = replace(
                plan,
                places=int(places),
                period_rho=_period_rho(rho, rho_a, periods.n_periods),
                spans_cost=release_cost(spans),
            )
        return plan if k is None else plan.calibrated(0)
    if places is not None:
        raise ValueError(
            "an appendable series charges each period in zCDP: its spans need the dense or sparse "
            "histogram with Gaussian noise, not the stability histogram this box gives"
        )
    spans_epsilon, spans_delta = (1 - share) * epsilon, delta / 2
    rho_b = zcdp.rho_for(share * epsilon, delta / 2)
    if choose_k:
        raise ValueError(
            "--max-pairs-per-unit auto composes in zCDP: it needs the dense or sparse histogram with "
            "Gaussian noise for the spans, not the stability histogram this box gives"
        )
    method = "basic composition (the spans' stability histogram is not zCDP)"
    cost = Cost(epsilon, delta, None)
    plan = SeriesPlan(
        periods, epsilon, delta, share, k, m, method, spans_epsilon, spans_delta, rho_b, None, cost
    )
    return plan if k is None else plan.calibrated(0)


def _period_rho(rho: float, rho_a: float, n_periods: int) -> float:
    """rho_b / T, rounded down until rho_a + T (rho_b / T) <= rho exactly
    (on the rationals): the T columns and the spans never exceed the plan."""
    r = (rho - rho_a) / n_periods
    while Fraction(rho_a) + n_periods * Fraction(r) > Fraction(rho):
        r = math.nextafter(r, 0.0)
    if not r > 0:  # pragma: no cover - share in (0, 1) leaves some
        raise ValueError("the table's share of the budget is too small to calibrate its noise")
    return r


@dataclass(frozen=True)
class Series:
    """A released series: the spans (their model records the plan and the
    table in ``metadata["series"]``) and the noisy table, shape
    (n_spans, n_periods). ``read_counts``: with a distributed backend, what
    its workers read and dropped (its ``input_counts``: counts only, private,
    for the data owner's notes); None in memory, where the reader says it.
    ``n_no_period``: the rows dropped for their time (missing, not a time,
    or outside the horizon), private, for the data owner's notes; None where
    not counted."""

    model: SpanModel
    table: np.ndarray
    plan: SeriesPlan
    read_counts: Any = None
    n_no_period: int | None = None

    def rows(self) -> list[tuple[int, str, int, int, int]]:
        """(span, period start, noisy mass, interval low, interval high) per entry."""
        assert self.plan.sigma2 is not None  # a released series is calibrated
        h = periodtable.half_width(self.plan.sigma2, LEVEL)
        starts = self.plan.periods.starts
        return [
            (s, starts[t], int(self.table[s, t]), int(self.table[s, t]) - h, int(self.table[s, t]) + h)
            for s in range(self.table.shape[0])
            for t in range(self.table.shape[1])
        ]


def no_period_note(n: int, what: str = "row(s)") -> str:
    """The private note of a series' rows dropped for their time (``n`` of
    them; ``what``: the rows' name, ``"stop(s)"`` where the series counts each
    unit's stops, which keep the time of their first point)."""
    return (
        f"{n:,} {what} whose time is missing, not a time, or outside the horizon (--from, --to) "
        "are dropped from the series"
    )


def active_spans(table: np.ndarray, sigma2: float, level: float = LEVEL) -> np.ndarray:
    """Which spans are a period's spans: boolean (n_spans, n_periods), True
    where the noisy mass is at least the half-width h of the ``level``
    interval (:func:`dpdbscan.release.periodtable.half_width`), i.e. where
    the interval excludes zero. Post-processing of the released table and
    the public sigma^2: it costs nothing."""
    return np.asarray(table) >= periodtable.half_width(sigma2, level)


def _table_seed(random_state: Any) -> Any:
    """The table's own research seed (a different stream from the spans'
    release); None and Generators pass through."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(np.random.SeedSequence([int(random_state), 0x5E41E5]).generate_state(1, np.uint64)[0])
    return random_state


@dataclass(frozen=True)
class PeriodOf:
    """Each time's period (-1: missing, not a time, or outside the horizon):
    :func:`dpdbscan.traces.parse_times` then :meth:`Periods.index`, the rule
    in memory, as a value a distributed backend ships to its workers. A time
    without an offset is the local clock of the periods' zone (UTC when they
    have none); an instant (unix seconds, a time with an offset) is read as it is."""

    periods: Periods
    #: what a number among the times counts (:data:`dpdbscan.traces.times.TIME_UNITS`)
    unit: str = "s"

    def __call__(self, values: Any) -> np.ndarray:
        return self.periods.index(parse_times(values, self.unit, tz=self.periods.tz))


@dataclass(frozen=True)
class SpanOf:
    """Each point's released span (-1: none), clipped into the box first:
    a public function of the released spans (post-processing), the rule in
    memory, as a value a distributed backend ships to its workers."""

    model: SpanModel

    def __call__(self, X: np.ndarray) -> np.ndarray:
        keys, labels = self.model.regions()
        with np.errstate(invalid="ignore"):
            clipped = np.clip(np.asarray(X, dtype=np.float64), self.model.grid.lower, self.model.grid.upper)
        return np.asarray(predict_spans(self.model.grid, keys, labels, clipped), dtype=np.int64)


#: Each point's released span (-1: none), as :class:`SpanOf` gives it.
SpanFunction = Callable[[np.ndarray], np.ndarray]


class SeriesBackend(Protocol):
    """What a distributed backend offers a series over time
    (:class:`dpdbscan.release.backends.dask_backend.DaskBackend` has it):
    a view reading only the rows of a time window, and the bounded span x
    period table computed where the data lives."""

    def windowed(self, time: str, period_of: Callable[[Any], np.ndarray]) -> Any: ...

    def period_table(
        self, grid: Any, X: Any, units: str, span_of: SpanFunction, bound: periodtable.TableBound, key: Any
    ) -> np.ndarray: ...


@dataclass(frozen=True)
class SeriesInput:
    """What one release of a series takes: the rows ``X`` with their
    ``units`` and ``times`` (one per row: unix seconds, ISO text or
    timestamps, :func:`dpdbscan.traces.parse_times`, those without an offset
    read as the local clock of the plan's zone, ``Periods.tz``; private), the public box
    (``lower``, ``upper``) they are read with and the release's parameters
    ``p`` (its epsilon and delta are replaced by the plan's share for the
    spans). With a distributed backend (:func:`fit_series`), ``X`` is what it
    reads and ``units`` and ``times`` name the columns."""

    X: Any
    lower: np.ndarray
    upper: np.ndarray
    p: dict[str, Any]
    units: Any
    times: Any
    #: what a number among ``times`` counts since 1970 (``"s"``, ``"ms"``, ``"us"``, ``"ns"``:
    #: :data:`dpdbscan.traces.times.TIME_UNITS`); typed timestamps and ISO text say their own
    time_unit: str = "s"

    def spans_params(self, plan: SeriesPlan, stacklevel: int) -> dict[str, Any]:
        """The parameters of the spans' release (a): ``p`` at the plan's
        (epsilon, delta) for the spans, checked to compose as planned with
        the box the rows are read with (public)."""
        spans_p = {**self.p, "epsilon": plan.spans_epsilon, "delta": plan.spans_delta}
        _check_zcdp(plan, spans_p, self.lower, self.upper, stacklevel + 1)
        return spans_p


def fit_series(
    data: SeriesInput,
    plan: SeriesPlan,
    *,
    unit_name: str | None = None,
    metadata: dict[str, Any] | None = None,
    stacklevel: int = 2,
    backend: SeriesBackend | None = None,
) -> Series:
    """Release the series of ``plan``: the spans of the rows of ``data`` in the
    horizon (at ``plan.spans_epsilon``), then the span x period table.

    ``backend`` (a distributed backend, :class:`SeriesBackend`): ``data.X``
    is what it reads (files, a dask DataFrame), ``data.units`` and
    ``data.times`` the names of the unit and time columns; the spans are
    released from the rows of the horizon (:meth:`~SeriesBackend.windowed`)
    and the table is bounded where the data lives (:meth:`~SeriesBackend.period_table`). The
    randomness is drawn in the same order as in memory: the same seed gives
    the same release (spans and table)."""
    X, lower, upper, units, times = data.X, data.lower, data.upper, data.units, data.times
    if units is None:
        raise ValueError("a series protects each unit over its whole horizon: give units (--unit)")
    if plan.choose_k and backend is not None and not isinstance(X, np.ndarray):
        raise ValueError("--max-pairs-per-unit auto runs in memory only: give K or all with --backend dask")
    spans_p = data.spans_params(plan, stacklevel + 1)
    meta = {**(metadata or {}), "series": plan.record(unit_name)}
    exact_of: Callable[[SpanModel, periodtable.TableBound, Any], np.ndarray]
    window = None
    n_no_period: int | None = None
    if backend is not None and not isinstance(X, np.ndarray):
        # the rows read where they live: the horizon's rows for (a), then
        # the table bounded per unit after a shuffle by unit (b)
        if not isinstance(units, str) or not isinstance(times, str):
            raise ValueError(
                "a series on a distributed backend names its unit and time columns: give both as names"
            )
        window = backend.windowed(times, PeriodOf(plan.periods, data.time_unit))
        model = fit_release(
            X, lower, upper, spans_p, backend=window, units=units, metadata=meta, stacklevel=stacklevel + 1
        )

        def exact_of(model, bound, key):
            return window.period_table(model.grid, X, units, SpanOf(model), bound, key)

    else:
        X, units, period, n_read = _in_horizon(X, units, times, plan.periods, data.time_unit, width=lower)
        n_no_period = n_read - X.shape[0]
        model = fit_release(
            X,
            lower,
            upper,
            spans_p,
            backend=NumpyBackend(),
            units=units,
            metadata=meta,
            stacklevel=stacklevel + 1,
        )

        def exact_of(model, bound, key):
            return periodtable.bounded_table(units, SpanOf(model)(X), period, bound, key)

    # public after (a): the number of spans (so k when "all") and a point's
    # span, from the released regions alone
    plan = plan.calibrated(model.n_spans)
    source = periodtable.table_source(_table_seed(data.p.get("random_state")))
    if plan.choose_k:
        plan = plan.chosen(_choose_pairs(model, X, units, period, plan, source))
    assert plan.sigma2 is not None
    bound = plan.table_bound(model.n_spans)
    # the choice of k (auto), the bound's key, then the noise, from the
    # table's seed: the same order wherever the exact table is computed
    table = periodtable.release_exact(lambda key: exact_of(model, bound, key), plan.sigma2, source)
    made = _released(model, table, plan, unit_name)
    if window is not None:
        # the workers' tally of the rows they read (the table's pass reads the rows the spans' did)
        counts = getattr(window, "input_counts", None)
        n_no_period = None if counts is None else counts.no_period
        made = replace(made, read_counts=counts)
    return replace(made, n_no_period=n_no_period)


def released_through(periods: Periods, through: str | None) -> int:
    """How many periods are released once the periods up to ``through`` (a
    period's start, or the horizon's end; None: the end) are: public, from
    the plan and the option alone."""
    if through is None:
        return periods.n_periods
    at = _local_seconds(through, periods.tz)
    hits = np.flatnonzero(periods.edges == at)
    if hits.size == 0 or hits[0] == 0:
        raise ValueError(
            f"--through {through}: not the end of a period of this series ({periods.kind}s from "
            f"{periods.start} to {periods.end}): give a period's start after --from, or --to"
        )
    return int(hits[0])


def _local_seconds(text: str, tz: str | None) -> float:
    return parse_local(text, zone(tz)).timestamp()


def series_charges(plan: SeriesPlan, first: int, upto: int, *, spans: bool) -> list[tuple[str | None, Cost]]:
    """The ledger's rows for releasing periods ``first`` to ``upto - 1`` of
    an appendable plan (and its spans first, when ``spans``): (period start
    or None, cost). Public: the plan alone."""
    assert plan.spans_cost is not None
    rows: list[tuple[str | None, Cost]] = [(None, plan.spans_cost)] if spans else []
    return rows + [(plan.periods.starts[t], plan.period_cost()) for t in range(first, upto)]


def start_series(
    data: SeriesInput,
    plan: SeriesPlan,
    *,
    through: str | None = None,
    ledger: Ledger | None = None,
    series_id: int | None = None,
    unit_name: str | None = None,
    metadata: dict[str, Any] | None = None,
    stacklevel: int = 2,
) -> Series:
    """Start an appendable series (``plan`` made with ``places=N``): the
    spans from the rows of ``data`` in the first N periods, then each period's column
    of the table up to ``through`` (a period's start; None: the whole
    horizon; at least the first N periods). Later periods are appended by
    :func:`append_periods`, which reads only their rows.

    ``ledger``: charged before anything is released, in one transaction: a
    new series (its public plan) and one row for the spans and one per
    period (:meth:`dpdbscan.ledger.Ledger.reserve_series`); refused when it
    does not fit. ``series_id``: a series the caller has already charged
    (the command line reserves before it reads the file)."""
    if not plan.appendable or plan.places is None:
        raise ValueError("start_series needs an appendable plan: plan_series(..., places=N)")
    if data.units is None:
        raise ValueError("a series protects each unit over its whole horizon: give units (--unit)")
    upto = released_through(plan.periods, through)
    if upto < plan.places:
        raise ValueError(
            f"the spans come from the first {plan.places} {plan.periods.kind}(s): --through must be "
            f"{period_end(plan.periods, plan.places)} or later"
        )
    reservations: list[Reservation] = []
    if ledger is not None:
        series_id, reservations = ledger.reserve_series(
            series_charges(plan, 0, upto, spans=True),
            command="start_series",
            params={"series": plan.record(unit_name)},
            unit_column=unit_name,
            plan=plan.record(unit_name),
        )
    with _failed_unless_written(reservations):
        spans_p = data.spans_params(plan, stacklevel + 1)
        X, units, period, n_read = _in_horizon(
            data.X, data.units, data.times, plan.periods, data.time_unit, width=data.lower
        )
        first = period < plan.places
        model = fit_release(
            X[first],
            data.lower,
            data.upper,
            spans_p,
            backend=NumpyBackend(),
            units=_take(units, first),
            metadata={**(metadata or {}), "series": plan.record(unit_name)},
            stacklevel=stacklevel + 1,
        )
        plan = plan.calibrated(model.n_spans)
        assert plan.k is not None and plan.sigma2 is not None
        table = _columns(model, X, units, period, 0, upto, plan, _table_seed(data.p.get("random_state")))
        made = _released(model, table, plan, unit_name, {"released_periods": upto, "series_id": series_id})
    for r in reservations:
        r.written([])
    return replace(made, n_no_period=n_read - X.shape[0])


@contextmanager
def _failed_unless_written(reservations: list[Reservation]) -> Iterator[None]:
    """Mark the ledger rows reserved for a series ``failed`` when the work
    after reserving raises (they stay counted: the data may have been
    read), as the command line and the estimator mark theirs; before, they
    stayed ``reserved``, which ``ledger show`` reads as never finished."""
    try:
        yield
    except BaseException:
        for r in reservations:
            r.failed()
        raise


def append_periods(
    model: SpanModel,
    X: np.ndarray,
    units: Any,
    times: Any,
    *,
    through: str | None = None,
    ledger: Ledger | None = None,
    charged: bool = False,
    random_state: Any = None,
) -> Series:
    """Append the next periods of an appendable series (``model``: its
    latest spans file, :func:`start_series` or an earlier append) up to
    ``through`` (None: the horizon's end): each new period's column of the
    table from the rows whose time is in it (all other rows are dropped, so
    no earlier period is read again), at the plan's rho_b / T each. The
    spans are the model's own (the same places, the same ids).

    The state between runs is public: the plan and the released columns in
    the model's ``metadata["series"]``, and (with a ledger) the series' rows
    there, which refuse a period charged before even from an older file.
    ``ledger``: required when the series was started with one (each new
    period is charged to the same series before anything is read);
    ``charged``: the caller has reserved them already (the command line)."""
    rec = model.metadata.get("series") or {}
    if "appendable" not in rec:
        raise ValueError(
            "this model is not an appendable series: start one with --places-periods N "
            "(plan_series(..., places=N) and start_series)"
        )
    plan = plan_from_record(rec)
    first = int(rec["released_periods"])
    upto = released_through(plan.periods, through)
    if upto <= first:
        raise ValueError(
            f"nothing to append: this series has released its {plan.periods.kind}s up to "
            f"{period_end(plan.periods, first)}; give --through a later period's start (or --to "
            f"{plan.periods.end})"
            if first < plan.periods.n_periods
            else f"nothing to append: every {plan.periods.kind} of this series up to {plan.periods.end} "
            "is released; a longer horizon is a new series"
        )
    sid = rec.get("series_id")
    check_append_ledger(sid, ledger is not None or charged)
    reservations: list[Reservation] = []
    if ledger is not None and not charged:
        _, reservations = ledger.reserve_series(
            series_charges(plan, first, upto, spans=False),
            command="append_periods",
            params={"series_id": sid, "through": period_end(plan.periods, upto)},
            unit_column=None if rec.get("unit") == "the privacy unit" else rec.get("unit"),
            series_id=sid,
        )
    with _failed_unless_written(reservations):
        X, units, period, n_read = _in_horizon(X, units, times, plan.periods, width=model.grid.d)
        n_no_period = n_read - X.shape[0]
        new = (period >= first) & (period < upto)
        X, units, period = X[new], _take(units, new), period[new]
        seed = random_state
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seed = int(np.random.SeedSequence([int(seed), 0x5E41E5, first]).generate_state(1, np.uint64)[0])
        cols = _columns(model, X, units, period, first, upto, plan, seed)
        old = np.asarray(rec["table"]["noisy_mass"], dtype=np.int64).reshape(model.n_spans, first)
        unit_name = None if rec.get("unit") == "the privacy unit" else rec.get("unit")
        made = _released(
            model,
            np.concatenate([old, cols], axis=1),
            plan,
            unit_name,
            {"released_periods": upto, "series_id": sid},
        )
    for r in reservations:
        r.written([])
    return replace(made, n_no_period=n_no_period)


def check_append_ledger(series_id: int | None, with_ledger: bool) -> None:
    """An append is charged where the series was: refuse a ledger for a
    series started without one, and no ledger for one started with one."""
    if series_id is not None and not with_ledger:
        raise ValueError(
            f"this series is recorded in a ledger (series {series_id}): give the ledger (--ledger, "
            "--dataset) so that each new period is charged to it"
        )
    if series_id is None and with_ledger:
        raise ValueError(
            "this series was started without a ledger: its spans and first periods are charged "
            "nowhere, so a ledger cannot account for it; append without one (and count), or start "
            "a new series with --ledger"
        )


def period_end(periods: Periods, upto: int) -> str:
    """The end of the first ``upto`` periods (a period's start, or the horizon's end)."""
    return periods.starts[upto] if upto < periods.n_periods else periods.end


def plan_from_record(rec: dict[str, Any]) -> SeriesPlan:
    """The calibrated appendable plan a series' record states (public)."""
    per, t, app = rec["periods"], rec["table"], rec["appendable"]
    periods = Periods(per["per"], per["from"], per["to"], None if per["tz"] == "UTC" else per["tz"])
    cost, spans = rec["cost"], app["spans_cost"]
    return SeriesPlan(
        periods=periods,
        epsilon=float(rec["lifetime_budget"]["epsilon"]),
        delta=float(rec["lifetime_budget"]["delta"]),
        share=float(rec["table_share"]),
        k=int(t["max_pairs_per_unit"]),
        m=int(t["max_points_per_pair"]),
        method=str(rec["composition"]),
        spans_epsilon=float(rec["spans_release"]["epsilon"]),
        spans_delta=float(rec["spans_release"]["delta"]),
        table_rho=float(t["rho"]),
        sigma2=float(t["sigma2"]),
        cost=Cost(float(cost["epsilon"]), float(cost["delta"]), cost["rho"]),
        places=int(app["places_periods"]),
        period_rho=float(app["period_rho"]),
        spans_cost=Cost(float(spans["epsilon"]), float(spans["delta"]), spans["rho"]),
    )


def _columns(
    model: SpanModel,
    X: np.ndarray,
    units: Any,
    period: np.ndarray,
    first: int,
    upto: int,
    plan: SeriesPlan,
    random_state: Any,
) -> np.ndarray:
    """The noisy columns of periods ``first`` to ``upto - 1``, shape
    (S, upto - first): each period bounded on its own (each unit at most k
    of its (span, that period) pairs, m points each), the discrete Gaussian
    with the plan's sigma^2 on every entry."""
    assert plan.sigma2 is not None
    span = SpanOf(model)(X) if X.shape[0] else np.zeros(0, dtype=np.int64)
    bound = plan.table_bound(model.n_spans)

    def exact_of(key: Any) -> np.ndarray:
        return periodtable.bounded_columns(units, span, period, first, upto, bound, key)

    return periodtable.release_exact(exact_of, plan.sigma2, random_state)


def _take(units: Any, mask: np.ndarray) -> Any:
    """The units of the rows in ``mask`` (numpy or the readers' Arrow column)."""
    if type(units).__module__.split(".")[0] == "pyarrow":
        import pyarrow as pa  # lazy: only for input the readers gave as Arrow

        return units.filter(pa.array(mask))
    return np.asarray(units)[mask]


def _choose_pairs(
    model: SpanModel, X: np.ndarray, units: Any, period: np.ndarray, plan: SeriesPlan, source: Any
) -> int:
    """K chosen privately (``max_pairs_per_unit="auto"``): the exponential
    mechanism of :mod:`dpdbscan.release.unitchoice` on each unit's number of
    (span, period) pairs (private), among the public ladder round(2^(i/4))
    up to S x T, at :attr:`SeriesPlan.choice_rho`. Its score is the signal
    to noise K gives a pair every unit is in, sum_u min(1, K / c_u) / sqrt(K):
    the trade of the cells' k, for pairs. Adding or removing one unit adds
    or removes one count, so the choice is choice_rho-zCDP for each unit."""
    cap = model.n_spans * plan.periods.n_periods
    spans = SpanOf(model)(X)
    return periodtable.choose_pairs_k(
        units, spans, period, plan.periods.n_periods, cap, plan.choice_rho, source
    )


def _in_horizon(
    X: Any, units: Any, times: Any, periods: Periods, time_unit: str = "s", *, width: Any
) -> tuple[np.ndarray, Any, np.ndarray, int]:
    """The rows (points, units) whose time is in a period, their period, and
    the number of rows read. The units are read id by id
    (:func:`dpdbscan.files.unitids.read_units`, as the estimator reads
    them): a list is never typed together by numpy, where one id of 0.5
    would make ids near 2**60 floats and merge them. The points are read row
    by row as the estimator reads them (:func:`_series_rows`)."""
    refuse_lazy_text_reads(X, units, times)
    X = _series_rows(X, width)
    units = _unit_ids(units, X.shape[0])
    period = PeriodOf(periods, time_unit)(times)
    if period.size != X.shape[0]:
        raise ValueError(f"times has {period.size} values for {X.shape[0]} rows: give one time per row")
    inside = period >= 0
    return X[inside], _take(units, inside), period[inside], X.shape[0]


def _series_rows(X: Any, width: Any) -> np.ndarray:
    """The points as the estimator's door reads them
    (:func:`dpdbscan.params.validation.check_array` with the public width:
    the box's number of columns, or the model's ``d``): a row of another
    length, or a cell that is not a real number (a word, a list), is a row of
    NaN that the clean rule drops alone, counted in a private note. Before
    (round 14) ``np.asarray(X, dtype=float64)`` refused the whole list or
    frame over one such row, after a ledger had reserved the series, and
    numpy's message quoted the word."""
    n = width if isinstance(width, int) else int(np.size(width))
    ragged = [0]
    rows = check_array(X, width=n if n > 1 else None, ragged=ragged, every_row=True)
    if ragged[0]:
        private_note(
            f"{ragged[0]:,} row(s) of X of another length than the others (or than the bounds) are dropped",
            stacklevel=4,
        )
    return rows


def _unit_ids(units: Any, n: int) -> Any:
    """``units`` read each on its own (an id of no readable type is missing,
    counted in a private note that names none), one per row of ``n``."""
    unreadable = [0]
    ids = read_units(units, unreadable)
    if unreadable[0]:
        private_note(
            f"{unreadable[0]:,} unit id(s) of no readable type (not an integer, float, text or "
            "bytes) are read as missing: their rows are dropped",
            stacklevel=4,
        )
    if len(ids) != n:
        raise ValueError(f"units has {len(ids)} ids for {n} rows: give one id per row")
    return ids


def _check_zcdp(plan: SeriesPlan, spans_p: dict, lower: Any, upper: Any, stacklevel: int) -> None:
    """The plan composed in zCDP from the box the options gave; the box the
    points are read with must give the same kind of release (public)."""
    if plan.cost.rho is not None:
        r = resolve(spans_p, lower, upper, units=True, stacklevel=stacklevel + 1).release
        if r.histogram == "stability" or r.noise.rho is None:
            raise ValueError("the series was planned for a zCDP release of the spans; this box gives another")


def _released(
    model: SpanModel,
    table: np.ndarray,
    plan: SeriesPlan,
    unit_name: str | None,
    extra: dict[str, Any] | None = None,
) -> Series:
    """The series of released spans and table: the table and each period's
    active spans recorded in the model (public: from the table); ``extra``:
    an appendable series' state (periods released so far, its ledger id)."""
    assert plan.sigma2 is not None
    record = {**plan.record(unit_name), **(extra or {})}
    active = active_spans(table, plan.sigma2)
    record = {
        **record,
        "table": {**record["table"], "noisy_mass": table.tolist()},
        # each period's spans: the ids active in it (public: from the table)
        "period_spans": [np.flatnonzero(active[:, t]).tolist() for t in range(active.shape[1])],
    }
    model = replace(model, metadata={**model.metadata, "series": record})
    return Series(model, table, plan)


__all__ = [
    "DEFAULT_SHARE",
    "PAIRS_SHARE",
    "append_periods",
    "check_append_ledger",
    "period_end",
    "plan_from_record",
    "released_through",
    "series_charges",
    "start_series",
    "LEVEL",
    "PeriodOf",
    "Series",
    "SeriesBackend",
    "SpanOf",
    "active_spans",
    "SeriesPlan",
    "SeriesInput",
    "fit_series",
    "plan_series",
    "statement",
]
