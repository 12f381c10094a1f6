"""``fit --per``: hotspots over time under one lifetime budget per unit.

The options (``--per``, ``--from``, ``--to``, ``--tz``, the table's share and
bound) are public and checked, with the whole plan made
(:func:`dpdbscan.series.plan_series`), before any record is read; ``--ledger``
is then charged ONCE at the series' total cost. Besides the spans' files
(JSON, GeoJSON, PNG), ``<stem>.periods.csv`` holds the span x period table;
every file states the unit protected and the lifetime budget.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ledger import Ledger, compose_fixed
from ..model.describe import protection_brief
from ..release import periodtable
from ..series import (
    DEFAULT_SHARE,
    LEVEL,
    PAIRS_SHARE,
    SeriesPlan,
    check_append_ledger,
    period_end,
    plan_series,
    released_through,
    series_charges,
)
from ..traces.periods import KINDS, Periods
from .common import ArgTarget, atomic_write, check_writable, one_line
from .fitoptions import FitOptions
from .ledger import public_box_of

if TYPE_CHECKING:
    from ..model.record import SpanModel
    from .outputs import Outputs


def add_period_options(p: ArgTarget, *, release: bool = True) -> None:
    """The options of a series over time: ``fit``'s (``release``), or the
    plan's alone for ``forecast`` and ``check`` (what a series would detect;
    no --through or --append: they release nothing)."""
    g = p.add_argument_group(
        "hotspots over time (with --unit and --time; one lifetime budget per unit for the whole series)"
        if release
        else "hotspots over time (--per: what each period of a series at these options could detect)"
    )
    g.add_argument(
        "--per",
        choices=KINDS,
        help="find the spans once over the horizon (the places are fixed; each period says how busy "
        "each is), then release each span's noisy mass per period "
        "(<stem>.periods.csv); --epsilon/--delta are the lifetime budget of each unit for it all",
    )
    g.add_argument(
        "--from", dest="period_from", metavar="DATE", help="the horizon's start (YYYY-MM-DD[Thh:mm])"
    )
    g.add_argument(
        "--to", dest="period_to", metavar="DATE", help="the horizon's end (excluded; a period's start)"
    )
    g.add_argument(
        "--tz",
        metavar="ZONE",
        help="the calendar's time zone (IANA name; default UTC), and the clock of the --time column's "
        "times without an offset (naive ISO text or timestamps; those with an offset and unix seconds "
        "are read as they are)",
    )
    g.add_argument(
        "--table-share",
        type=float,
        default=None,
        metavar="S",
        help=f"the share of the lifetime budget spent on the span x period table (default {DEFAULT_SHARE})",
    )
    g.add_argument(
        "--max-pairs-per-unit",
        type=_int_or_all,
        default=None,
        metavar="K",
        help="each unit counts in at most K (span, period) pairs over the whole horizon (per period "
        "with --places-periods). auto (the default in memory): K chosen privately from the pairs "
        f"per unit, for {PAIRS_SHARE:g} of the table's budget; all (the default with --places-periods "
        "or --backend dask): K = spans x periods (spans with --places-periods), fixed once the "
        "spans are released, no unit cut, the noise growing as sqrt(K)",
    )
    g.add_argument(
        "--max-points-per-pair",
        type=int,
        default=None,
        metavar="M",
        help="each unit adds at most M to a span's mass in one period (default 1: distinct units)",
    )
    g.add_argument(
        "--places-periods",
        type=int,
        default=None,
        metavar="N",
        help="an appendable series: find the spans once from the first N periods, then release each "
        "period's masses on its own (rho_b / T each, K pairs per unit per period), so that later "
        "periods can be appended with --append as they complete, charged to the same plan. The places "
        "stay those of the first N periods: later periods say how busy they are, never find new ones "
        "(for places found again each period, fit each period on its own: forecast --periods N plans "
        "its epsilon)",
    )
    if not release:
        return
    g.add_argument(
        "--through",
        default=None,
        metavar="DATE",
        help="with --places-periods or --append: release the periods up to DATE now (a period's "
        "start; default --to); the rest later with --append",
    )
    g.add_argument(
        "--append",
        default=None,
        metavar="MODEL",
        help="append the next periods to the appendable series in MODEL (its latest .spans.json), "
        "with the same options as the run that started it: the same spans, only the new periods' "
        "rows read, each period charged to the series in --ledger",
    )


def _int_or_all(text: str) -> int | str:
    if text.strip().lower() in ("all", "auto"):
        return text.strip().lower()
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, 'all' or 'auto', got {text!r}") from None


#: The options that shape only a series (``--per``), with their argparse names:
#: without ``--per`` each is refused, not ignored.
SERIES_ONLY = (
    ("--from", "period_from"),
    ("--to", "period_to"),
    ("--tz", "tz"),
    ("--table-share", "table_share"),
    ("--max-pairs-per-unit", "max_pairs_per_unit"),
    ("--max-points-per-pair", "max_points_per_pair"),
    ("--places-periods", "places_periods"),
    ("--through", "through"),
    ("--append", "append"),
)


@dataclass(frozen=True)
class SeriesOptions:
    """The options of a series over time (``--per`` and its horizon, the
    table's share and bounds), typed at the command's entry. Public."""

    per: str
    period_from: str | None
    period_to: str | None
    tz: str | None
    table_share: float
    max_pairs_per_unit: int | str | None
    max_points_per_pair: int
    places_periods: int | None = None
    through: str | None = None
    append: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SeriesOptions | None:
        """The series' options, or None without ``--per`` (the boundary with argparse)."""
        if getattr(args, "per", None) is None:
            given = [o for o, v in SERIES_ONLY if getattr(args, v, None) is not None]
            if given:
                # public: the options alone; they were accepted and did nothing (--append without
                # --per made a fresh release of the whole file, charged as one)
                one = len(given) == 1
                raise ValueError(
                    f"{', '.join(given)} {'is an option' if one else 'are options'} of --per (a series "
                    "over time: its horizon, calendar and zone, its table of counts per period, an "
                    "appendable series' places, periods and appends); "
                    f"without --per {'it does' if one else 'they do'} nothing: give --per "
                    f"hour|day|week|month, or leave {'it' if one else 'them'} out"
                )
            return None
        return cls(
            per=args.per,
            places_periods=args.places_periods,
            through=getattr(args, "through", None),
            append=getattr(args, "append", None),
            period_from=args.period_from,
            period_to=args.period_to,
            tz=args.tz,
            table_share=DEFAULT_SHARE if args.table_share is None else args.table_share,
            max_pairs_per_unit=args.max_pairs_per_unit,
            max_points_per_pair=1 if args.max_points_per_pair is None else args.max_points_per_pair,
        )


#: The numbers of spans a forecast shows the table at (S is released with the spans).
FORECAST_SPANS = (1, 2, 5, 10, 20)

#: Why ``sweep`` has no ``--per``, said when it is given.
NO_SWEEP = (
    "sweep has no --per: it re-derives spans at several (eps, MinPts) from ONE noisy histogram at no "
    "extra budget, and a series' table is a release of its own for each set of spans (its keys are "
    "the spans), so a table per swept setting would spend the table's budget once per setting. "
    "Choose the spans' parameters with sweep (or explore) on a release without --per, then run "
    "'dpdbscan fit --per' once; 'dpdbscan forecast --per' and 'dpdbscan check --per' show what "
    "each period could detect, spending nothing"
)


def pairs_bound(s: SeriesOptions, dask: bool = False) -> int | str:
    """``--max-pairs-per-unit`` as given, or its default: "auto" (K chosen
    privately) for a whole-horizon table in memory, "all" for an appendable
    series (no horizon's pairs to choose from when it starts) and on Dask."""
    if s.max_pairs_per_unit is not None:
        return s.max_pairs_per_unit
    return "all" if s.places_periods is not None or dask else "auto"


def plan_of(s: SeriesOptions, p: dict[str, Any], lower: Any, upper: Any) -> SeriesPlan:
    """The plan a series at these options would have (public inputs only):
    what ``forecast --per`` and ``check --per`` describe."""
    if p.get("max_cells_per_unit") is None or not isinstance(p.get("max_cells_per_unit"), int):
        raise ValueError(
            "--per forecasts a person-level series: give --max-cells-per-unit K (a number; the spans' bound)"
        )
    if s.period_from is None or s.period_to is None:
        raise ValueError("--per needs a public horizon: --from DATE --to DATE")
    return plan_series(
        p,
        lower,
        upper,
        Periods(s.per, s.period_from, s.period_to, s.tz),
        share=s.table_share,
        max_pairs_per_unit=pairs_bound(s),
        max_points_per_pair=s.max_points_per_pair,
        places=s.places_periods,
    )


def table_forecast(plan: SeriesPlan, spans: Sequence[int] = FORECAST_SPANS) -> list[dict[str, Any]]:
    """What a period's masses can show for each number of spans S (public:
    the plan and S): the bound K, sigma, the half-width h (a span is one of
    a period's spans when its noisy mass is at least h) and the bounded mass
    it needs to be found active with probability 0.95."""
    rows = []
    for n in spans:
        # auto: K is chosen from the data, at most S x T; its noise at most that K's
        c = plan.chosen(n * plan.periods.n_periods) if plan.choose_k else plan.calibrated(n)
        assert c.k is not None and c.sigma2 is not None
        rows.append(
            {
                "n_spans": n,
                "max_pairs_per_unit": c.k,
                "chosen_privately": plan.choose_k,
                "sigma": math.sqrt(c.sigma2),
                "interval_half_width": periodtable.half_width(c.sigma2, LEVEL),
                "active_with_probability_095_from": periodtable.detectable(c.sigma2, LEVEL),
            }
        )
    return rows


def table_forecast_lines(plan: SeriesPlan, unit: str = "units") -> list[str]:
    """:func:`table_forecast` in words, one line per number of spans."""
    per = plan.periods.kind
    bound = "a period" if plan.appendable else "the horizon"
    lines = [
        f"series  : {plan.periods.n_periods} {per}(s) from {plan.periods.start} to {plan.periods.end}; "
        f"the spans at epsilon={plan.spans_epsilon:.6g} (the forecast above is theirs), "
        + (
            f"each {per}'s masses at rho={plan.period_rho:.4g}"
            if plan.appendable
            else f"the span x {per} table at rho={plan.table_rho:.4g}"
        ),
        f"table   : the spans' number S is released with them, so per S: K (pairs per unit over {bound}), "
        f"the noise sigma, h (a span is one of a {per}'s spans when its noisy mass that {per} is >= h) "
        f"and the bounded mass (with M = 1: distinct {unit} in it that {per}) that is active with "
        "probability 0.95"
        + (
            "; K is chosen privately from the data (auto): the rows are its largest, S x T, and so "
            "the most noise it can have"
            if plan.choose_k
            else ""
        ),
    ]
    for r in table_forecast(plan):
        k = f"K{'<=' if r['chosen_privately'] else '='}{r['max_pairs_per_unit']}"
        lines.append(
            f"  S={r['n_spans']:<3} {k:<8} sigma={r['sigma']:<8.1f} "
            f"h={r['interval_half_width']:<6} active w.p. 0.95 from {r['active_with_probability_095_from']}"
        )
    return lines


def check_series(s: SeriesOptions, opts: FitOptions, p: dict[str, Any]) -> SeriesPlan:
    """The series' public plan, or a refusal naming the option, before any
    record is read."""
    if opts.unit is None:
        raise ValueError("--per protects each unit over the whole series: give --unit COLUMN")
    if opts.time is None:
        raise ValueError("--per needs --time COLUMN: each row's time decides its period")
    if s.period_from is None or s.period_to is None:
        raise ValueError("--per needs a public horizon: --from DATE --to DATE (not taken from the data)")
    if p.get("max_cells_per_unit") is None:
        raise ValueError("--per needs --max-cells-per-unit K (the spans' own bound)")
    if s.append is not None and s.places_periods is None:
        raise ValueError(
            "--append continues an appendable series: give the options of the run that started it, "
            "--places-periods N included"
        )
    if s.through is not None and s.places_periods is None:
        raise ValueError(
            "--through releases part of an appendable series: give --places-periods N (a series "
            "without it is released whole, its spans found over the whole horizon)"
        )
    if s.places_periods is not None and opts.backend == "dask":
        raise ValueError(
            "--places-periods runs in memory only (the Dask backend releases a whole series): "
            "drop --backend dask"
        )
    periods = Periods(s.per, s.period_from, s.period_to, s.tz)
    box = public_box_of(opts)
    if box is None:
        raise ValueError(
            "--per plans its budget before reading: give --bounds with one lower and one upper value per "
            "column, or --columns, or --geo"
        )
    plan = plan_series(
        p,
        *box,
        periods,
        share=s.table_share,
        max_pairs_per_unit=pairs_bound(s, opts.backend == "dask"),
        max_points_per_pair=s.max_points_per_pair,
        places=s.places_periods,
    )
    if plan.places is not None and s.append is None and released_through(periods, s.through) < plan.places:
        raise ValueError(
            f"the spans come from the first {plan.places} {periods.kind}(s): --through must be "
            f"{period_end(periods, plan.places)} or later"
        )
    return plan


@dataclass(frozen=True)
class SeriesRun:
    """One run of the appendable series ``plan``: release up to ``through``
    (None: the horizon's end); ``previous``: the model it continues (None: a
    start); ``series_id``: its series in the ledger; ``charged``: the
    ledger's rows are reserved already. Public."""

    plan: SeriesPlan
    through: str | None
    previous: SpanModel | None
    series_id: int | None
    charged: bool


#: What must agree between an appendable series' record and the plan the
#: options give for an append: the periods, the budget and its split, the bound.
_SAME = ("periods", "unit", "lifetime_budget", "table_share", "composition", "spans_release")


def check_append(plan: SeriesPlan, unit: str | None, previous: SpanModel, box: Any) -> None:
    """Refuse an append whose options do not give the series' own plan (the
    public record of the model it continues), naming what differs."""
    rec = previous.metadata.get("series") or {}
    if "appendable" not in rec:
        raise ValueError("--append: the model is not an appendable series (started with --places-periods N)")
    mine = plan.record(unit)
    differ = [key for key in _SAME if mine.get(key) != rec.get(key)]
    table, theirs = mine["table"], rec["table"]
    differ += [f"table.{key}" for key in ("rho", "max_points_per_pair") if table[key] != theirs[key]]
    if mine["appendable"]["places_periods"] != rec["appendable"]["places_periods"]:
        differ.append("--places-periods")
    if box is None or not (
        np.allclose(previous.grid.lower, box[0], rtol=0, atol=1e-9)
        and np.allclose(previous.grid.upper, box[1], rtol=0, atol=1e-9)
    ):
        differ.append("--bounds")
    if differ:
        raise ValueError(
            f"--append: these options do not give the plan of the series in the model ({', '.join(differ)} "
            "differ): give the options of the run that started it"
        )


@contextmanager
def charging_series(
    ledger: str | None,
    dataset: str | None,
    plan: SeriesPlan,
    previous: SpanModel | None,
    unit: str | None,
    params: dict[str, Any],
    *,
    unit_column: str | None,
) -> Iterator[tuple[int | None, Callable[[Sequence[str]], None]]]:
    """Reserve an appendable series' rows in the ledger before any record is
    read (a new series: its spans and the periods up to ``--through``; an
    append: the new periods, charged to the model's series), and yield the
    series' id and the function to call with the files once written. A
    failure after reserving marks the rows failed; they stay counted.
    ``unit``: the unit as the files state it; ``unit_column``: as the ledger
    records it (:func:`dpdbscan.cli.ledger.ledger_unit`)."""
    upto = released_through(plan.periods, params.get("through"))
    sid = None if previous is None else previous.metadata["series"].get("series_id")
    if previous is not None:
        check_append_ledger(sid, ledger is not None)
    if ledger is None:
        yield sid, lambda files: None
        return
    if dataset is None:
        raise ValueError(
            "--ledger needs --dataset NAME, the dataset whose lifetime budget this series is charged to"
        )
    if previous is None:
        charges = series_charges(plan, 0, upto, spans=True)
        sid, rows = Ledger(ledger, dataset).reserve_series(
            charges, command="fit", params=params, unit_column=unit_column, plan=plan.record(unit)
        )
    else:
        first = int(previous.metadata["series"]["released_periods"])
        if upto <= first:
            yield sid, lambda files: None  # append_periods says why there is nothing to do
            return
        charges = series_charges(plan, first, upto, spans=False)
        sid, rows = Ledger(ledger, dataset).reserve_series(
            charges, command="fit --append", params=params, unit_column=unit_column, series_id=sid
        )
    cost = compose_fixed([c for _, c in charges], plan.delta)
    print(
        f"dpdbscan: ledger {ledger}: series {sid} of {dataset!r} charged {len(rows)} release(s) "
        f"({', '.join('spans' if p is None else p[:10] for p, _ in charges)}) at "
        f"(epsilon={cost.epsilon:.6g}, delta={cost.delta:.3g}) together, by {cost.method}; the "
        f"dataset's total is now (epsilon={rows[-1].total.epsilon:.6g}, delta={rows[-1].total.delta:.3g})"
        + (
            f"; the series' whole plan (epsilon={plan.epsilon:g}, delta={plan.delta:g}) is held for its "
            "periods to come ('dpdbscan ledger show')"
            if previous is None and upto < plan.periods.n_periods
            else ""
        ),
        file=sys.stderr,
    )
    done = False

    def written(files: Sequence[str]) -> None:
        nonlocal done
        for r in rows:
            r.written(files)
        done = True

    try:
        yield sid, written
    except BaseException:
        if not done:
            for r in rows:
                r.failed()
            print(
                f"dpdbscan: ledger {ledger}: series {sid}'s {len(rows)} release(s) stay charged "
                "(status failed): the command failed after reserving, possibly after reading data",
                file=sys.stderr,
            )
        raise


def periods_path(outputs: Outputs, name: str) -> Path:
    path = Path(outputs.out_dir) / f"{name}.periods.csv"
    check_writable([path], outputs.input)
    return path


def periods_png_path(outputs: Outputs, name: str) -> Path | None:
    """Where the small multiples go (``<stem>.periods.png`` beside the
    table), None with ``--no-png``; checked writable before any record is read."""
    if outputs.no_png:
        return None
    path = Path(outputs.out_dir) / f"{name}.periods.png"
    check_writable([path], outputs.input)
    return path


def write_periods_png(model: SpanModel, path: Path, failed: list[str]) -> bool:
    """The small multiples (:mod:`dpdbscan.render.periodplot`), written
    atomically; a failure is added to ``failed`` (the release is kept)."""
    if model.grid.d != 2:
        return False
    try:
        # lazy: the drawing modules load only in a command that draws
        from ..render.periodplot import save_periods

        atomic_write(path, lambda target: save_periods(model, target))
    except Exception as exc:  # the release is safe: report, do not lose it
        failed.append(f"{path} ({one_line(exc)})")
        return False
    return True


#: The table file's columns: one row per (span, period), then what the series
#: protects and states (the same in every row). In columns, not ``#`` lines, as
#: ``explore``'s table (:data:`dpdbscan.render.explorepanels.FILE_COLUMNS`): every
#: CSV reader (a plain ``csv.reader``, pandas and spreadsheets without a comment
#: option) reads the file as a table, and the statements travel with each row.
PERIODS_COLUMNS = (
    "span",
    "period_start",
    "noisy_mass",
    "low",
    "high",
    "active",
    "protects",
    "series",
    "budget",
    "appendable",
    "interval",
)


def periods_statements(model: SpanModel) -> list[str]:
    """The statements of the table file's last columns (:data:`PERIODS_COLUMNS`):
    who is protected (both parts' bounds), the series' statement, the unit and
    the lifetime budget with the table's bound and noise, how much of an
    appendable series is released ("" otherwise), and what low, high and
    active mean."""
    rec = model.metadata["series"]
    t = rec["table"]
    h = int(t["interval_half_width"])
    budget = (
        f"unit protected: {rec['unit']}; lifetime budget per unit: epsilon="
        f"{rec['lifetime_budget']['epsilon']:g}, delta={rec['lifetime_budget']['delta']:g}; "
        f"at most {t['max_pairs_per_unit']} (span, period) pair(s) per unit over "
        f"{t.get('bound_over', 'the whole horizon')}, "
        f"{t['max_points_per_pair']} point(s) each; discrete Gaussian sigma^2={t['sigma2']:.6g}"
    )
    appendable = ""
    if "appendable" in rec:
        appendable = (
            f"appendable series: {rec['released_periods']} of {rec['periods']['n_periods']} "
            f"period(s) released so far, the spans from the first "
            f"{rec['appendable']['places_periods']}; each period charged "
            f"rho={rec['appendable']['period_rho']:.6g} (ledger series: {rec.get('series_id')})"
        )
    interval = (
        f"low and high: a {LEVEL:.0%} interval of the bounded mass (noisy +- {h}); "
        "periods start at period_start; active 1: the span is one of the period's spans "
        "(low > 0, from the noisy mass alone)"
    )
    return [protection_brief(model), f"dpdbscan series: {rec['statement']}", budget, appendable, interval]


def write_periods_csv(model: SpanModel, path: Path) -> None:
    """The table as a plain CSV (:data:`PERIODS_COLUMNS`): one row per (span,
    period) with the interval, then the statements of :func:`periods_statements`
    (the unit protected, the lifetime budget) in every row. A table with no
    span has one row whose first six fields are empty, so that the file still
    states them."""
    rec = model.metadata["series"]
    t = rec["table"]
    h, starts = int(t["interval_half_width"]), rec["periods"]["starts"]
    active = [set(ids) for ids in rec["period_spans"]]
    said = periods_statements(model)

    def write(target: Path) -> None:
        with open(target, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(PERIODS_COLUMNS)
            for s, row in enumerate(t["noisy_mass"]):
                for i, v in enumerate(row):
                    w.writerow([s, starts[i], v, v - h, v + h, int(s in active[i]), *said])
            if not any(t["noisy_mass"]):
                # no span: one row without numbers, so that the file still says who it protects
                w.writerow(["", "", "", "", "", "", *said])

    atomic_write(path, write)


__all__ = [
    "FORECAST_SPANS",
    "NO_SWEEP",
    "pairs_bound",
    "plan_of",
    "table_forecast",
    "table_forecast_lines",
    "SeriesOptions",
    "SeriesRun",
    "charging_series",
    "check_append",
    "add_period_options",
    "check_series",
    "PERIODS_COLUMNS",
    "periods_path",
    "periods_png_path",
    "periods_statements",
    "write_periods_csv",
    "write_periods_png",
]
