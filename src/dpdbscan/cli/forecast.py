"""``dpdbscan forecast``: what a release would detect, before any budget is
spent. Reads no data: public options only (bounds, eps, MinPts, epsilon, the
user's guesses ``--n-expected`` and, person-level, ``--n-units-expected``)."""

from __future__ import annotations

import argparse
import json

from ..files.tracefolder import LEDGER_UNIT, UNIT_FROM, UNIT_WORDS
from ..geometry import projection
from ..model.codec import jsonable
from ..model.describe import bound_brief
from ..params.validation import check_positive
from ..plan.autoplan import (
    ASSUMED_N,
    COUNT_SHARE,
    LARGE_N,
    PLACE_EXTENT_KM,
    SECOND_DIMS,
    SECOND_MIN_COUNT,
    SECOND_SHARE,
    SMALL_N,
    SMALL_SECOND_FROM,
    SMALL_SECOND_SHARE,
    counts_points,
)
from ..plan.resolve import forecast_of, noise_kind, validated
from ..prepare import project_box, read_length, split_bounds
from ..series import SeriesPlan, statement
from ..traces import event_words
from .common import EXIT_OK, ArgTarget, WarningSink, border_value, floats, number_or_text, table_formats
from .fitoptions import PRIVACY_OPTIONS, events_from_args
from .fitseries import SeriesOptions, add_period_options, plan_of, table_forecast, table_forecast_lines
from .options import add_table_option, add_unit_options
from .perperiod import PeriodsRequest, plan_periods
from .perperiod import add_arguments as add_per_period_arguments

EXAMPLES = """examples:
  # Cabs-tiny as in the paper, expecting about 400,000 trips
  dpdbscan forecast --geo --bounds -122.48 37.72 -122.38 37.82 --eps 50m --min-samples 1000 \\
      --n-expected 4e5

  # 3-D data in [0, 10]^3, 20,000 points expected, at epsilon 0.5
  dpdbscan forecast --bounds 0 10 --dims 3 --eps 0.5 --min-samples 20 --epsilon 0.5 \\
      --n-expected 20000

  # a map of pick-up places each week for a year, each cab protected for a lifetime
  # epsilon = 2: the epsilon of each week's release and what one week's map can detect
  dpdbscan forecast --geo --bounds -122.6 37.55 -122.3 37.85 --eps 200m --min-samples 30 \\
      --max-cells-per-unit 50 --delta 1e-6 --n-units-expected 536 --periods 52 --lifetime-epsilon 2

  # person-level (each cab protected): 536 cabs, each adding to at most 1,000 cells;
  # what eps 50m .. 400m can detect, and how far a cab may roam and still be seen
  dpdbscan forecast --geo --bounds -122.6 37.55 -122.3 37.85 --eps 200m --min-samples 100 \\
      --max-cells-per-unit 1000 --noise gaussian --delta 1e-6 --n-units-expected 536 \\
      --eps-ladder 50m 100m 200m 400m
"""


def add_arguments(p: ArgTarget) -> None:
    p.add_argument(
        "--bounds",
        nargs="+",
        required=True,
        metavar="B",
        help="public bounds: lower_1 .. lower_d upper_1 .. upper_d, or one lower and "
        "one upper with --dims; with --geo: lon_min lat_min lon_max lat_max",
    )
    p.add_argument(
        "--dims",
        type=int,
        help="number of dimensions when --bounds gives one lower and one upper value",
    )
    p.add_argument("--geo", action="store_true", help="bounds are lon/lat degrees; eps a length")
    p.add_argument("--ref-lat", type=float, help="see 'dpdbscan fit --help'")
    p.add_argument(
        "--eps",
        "--alpha",
        required=True,
        metavar="ALPHA",
        help="radius (with --geo a length such as 50m), or 'auto' for the automatic mode's base release",
    )
    p.add_argument("--min-samples", "--minpts", required=True, metavar="MINPTS", help="MinPts, or 'auto'")
    add_table_option(p, "epsilon", type=float, help="privacy budget (default 1)")
    p.add_argument(
        "--n-expected",
        type=float,
        metavar="N",
        help="your own public guess of the number of points (never measured)",
    )
    add_table_option(
        p,
        "eta",
        type=number_or_text,
        help="grid parameter in (0, 4] or 'auto' (default: 4, or 8 where the 7-D/8-D coarse release acts)",
    )
    add_table_option(p, "beta", type=float, help="failure probability of the guarantee (default 0.1)")
    add_table_option(
        p,
        "delta",
        type=float,
        help="the delta of an (epsilon, delta) release: needed by Gaussian noise (person-level) (default 0)",
    )
    add_table_option(
        p,
        "histogram",
        help="auto (default), dense, sparse or stability, as for fit (see 'dpdbscan fit --help')",
    )
    add_table_option(
        p,
        "noise",
        help="auto (discrete Laplace; Gaussian with --max-cells-per-unit), discrete, laplace or gaussian",
    )
    p.add_argument(
        "--theta", type=float, help="threshold of the sparse histogram (default: chosen from public inputs)"
    )
    add_table_option(
        p, "subcells", help="sub-cells per cell and dimension ('auto', the default: 2 for d <= 3, else 1)"
    )
    add_table_option(p, "core", help="core test: density (default) or bound, as for fit")
    add_table_option(
        p,
        "margin",
        help="density test: c of the margin c sigma ('auto' = 1); bound test: Gamma by 'chernoff' ('auto') "
        "or 'paper'",
    )
    add_table_option(p, "border", help="predict's border distance ('auto', the default), as for fit")
    add_table_option(
        p,
        "max_cells",
        type=int,
        help="automatic mode: public cap on the cells of its release (default 2^20)",
    )
    add_unit_options(p, column=False)
    u = p.add_argument_group(
        "person-level forecast (with --max-cells-per-unit)",
        "Each unit adds to at most K cells, M points each; the noise per cell is the\n"
        "same at every eps. For each eps of the ladder the forecast prints how many\n"
        "units one cell must hold for a place there to be core with probability >= 1\n"
        "- beta, how many every cell within eps of a cell must keep after bounding\n"
        "for that cell to be core (a cluster), that as a share of the N units you\n"
        "expect, and so the most cells (the area) a unit may visit: a unit with more\n"
        "than K cells keeps K of them, counted as if at random (--cell-choice uniform;\n"
        "fit's default keeps each unit's busiest cells, which favours the places it\n"
        "returns to). That area grows with eps: units that\n"
        "roam more than it need a coarser eps (or a larger epsilon or K).",
    )
    u.add_argument(
        "--unit",
        metavar="COLUMN",
        help="accepted as fit takes it, so that a fit's command runs as a forecast: the forecast "
        "reads no data, so the column only names the unit; the release is person-level when "
        "--max-cells-per-unit K is given (required with --unit)",
    )
    u.add_argument(
        "--unit-from",
        choices=UNIT_FROM,
        help="accepted as fit takes it for a folder of trace files (one unit per file or "
        "sub-folder), instead of --unit: the forecast reads no folder either; person-level with "
        "--max-cells-per-unit K",
    )
    u.add_argument(
        "--n-units-expected",
        type=float,
        metavar="N",
        help="your own public guess of the number of privacy units (people, cabs; never "
        "measured): the forecast compares what a cell must hold with N x M, the most it can",
    )
    u.add_argument(
        "--eps-ladder",
        nargs="+",
        metavar="ALPHA",
        help="eps values to forecast the person-level release at (with --geo lengths like 200m); "
        "default: eps x 1/4, 1/2, 1, 2, 4",
    )
    add_period_options(p, release=False)
    add_per_period_arguments(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def would_protect(p: dict, unit: str | None, units: dict | None, plan: SeriesPlan | None) -> dict:
    """Who the release forecast would protect, for ``--json``: the level,
    the unit column (the option), and a line in the published files' words
    (:func:`dpdbscan.model.describe.protection_brief`: k, m, epsilon, delta,
    rho); a series' line is its plan's statement (the lifetime budget)."""
    person = units is not None
    who = unit or "unit"
    folder = next((rule for rule, recorded in LEDGER_UNIT.items() if unit == recorded), None)
    if folder is not None:  # --unit-from: what one unit is, not a column's name
        who = f"unit ({UNIT_WORDS[folder]})"
    if plan is not None:
        line = f"person-level: {statement(plan, who if folder else unit)}"
    elif units is not None:
        k, m = units["max_cells_per_unit"], units["max_points_per_cell"]
        line = (
            f"person-level: each {who} would be protected ({bound_brief(k, m, 'unit' if folder else who)}); "
            f"epsilon={units['epsilon']:g}, delta={units['delta']:g} (rho={units['rho']:.3g} zCDP)"
        )
    else:
        line = (
            f"event-level: each row would be protected, not each person; epsilon={p['epsilon']:g}, "
            f"delta={p['delta']:g}"
        )
    return {
        "privacy_level": "person" if person else "event",
        "unit_column": unit if person and folder is None else None,
        "unit_from": folder if person else None,
        "protects": f"{line} (a forecast: nothing is read or released)",
    }


def cmd_forecast(args: argparse.Namespace, sink: WarningSink) -> int:
    geo = bool(args.geo)
    eps = read_length(args.eps, geo=geo, auto=True)
    values = dict(
        eps=eps,
        min_samples=number_or_text(args.min_samples),
        **{name: getattr(args, name) for name in PRIVACY_OPTIONS},
        subcells=number_or_text(args.subcells),
        margin=number_or_text(args.margin),
        core=args.core,
        border=border_value(args.border, geo=geo),
        max_cells=args.max_cells,
        max_cells_per_unit=args.max_cells_per_unit,
        max_points_per_cell=args.max_points_per_cell,
    )
    p = validated(values, cli=True)
    unit = args.unit
    if args.unit_from is not None:
        if unit is not None:
            raise ValueError(
                "--unit-from replaces --unit (each file or sub-folder is a unit): give one of them"
            )
        unit = LEDGER_UNIT[args.unit_from]
    if unit is not None and p["max_cells_per_unit"] is None:
        option = "--unit" if args.unit_from is None else "--unit-from"
        raise ValueError(
            f"{option} makes a person-level release: give --max-cells-per-unit K (a number: the "
            "forecast reads no data, so 'auto' has nothing to choose from)"
        )
    # --stops / --trip-ends: public; with them the counts are each unit's events
    events = events_from_args(args, reads=False)
    if events is not None and p["max_cells_per_unit"] is None:
        raise ValueError(
            "--stops and --trip-ends count each unit's stops or trip ends: a person-level release; "
            "give --max-cells-per-unit K (as fit needs --unit COLUMN with it)"
        )
    n = None if args.n_expected is None else check_positive("--n-expected", args.n_expected)
    n_units = None
    if args.n_units_expected is not None:
        n_units = check_positive("--n-units-expected", args.n_units_expected)
    ladder = None
    if args.eps_ladder is not None:
        ladder = [check_positive("--eps-ladder", read_length(t, geo=geo)) for t in args.eps_ladder]
    raw = floats(args.bounds, "--bounds")
    if geo:
        d = 2
    elif args.dims is not None:
        d = args.dims
    elif len(raw) % 2 == 0 and len(raw) > 2:
        d = len(raw) // 2
    else:
        raise ValueError("--bounds with one lower and one upper value needs --dims D")
    lower, upper = split_bounds(raw, d, geo)
    if geo:
        _, lower, upper = project_box(lower, upper, args.ref_lat)
    periods = plan_periods(PeriodsRequest.from_args(args), p, lower, upper, geo)
    if periods is not None:
        # one period's release: the forecast below is at its epsilon
        p = {**p, "epsilon": periods.epsilon}
    series = SeriesOptions.from_args(args)
    plan = None if series is None else plan_of(series, p, lower, upper)
    if plan is not None:
        # a series: the spans are released at their share of the lifetime budget
        p = {**p, "epsilon": plan.spans_epsilon, "delta": plan.spans_delta}
    places = PLACE_EXTENT_KM if geo else None  # the fit's own plan: --geo looks for places
    fc = forecast_of(
        p, lower, upper, n_expected=n, n_units_expected=n_units, eps_ladder=ladder, cli=True, places=places
    )
    if args.json:
        out = jsonable(fc.to_dict())
        out.update(would_protect(p, unit, out.get("units"), plan))
        if periods is not None:
            out["per_period"] = jsonable(periods.record())
        if plan is not None:
            out["series"] = jsonable({**plan.record(), "table_forecast": table_forecast(plan)})
        if events is not None:
            out["events"] = events.record()
        print(json.dumps(out, indent=2, allow_nan=False))
        return EXIT_OK
    length = projection.format_km if geo else (lambda v: f"{v:g}")
    level = "" if fc.units is None else ", person-level"
    print(
        f"forecast for eps={length(fc.eps)}, min_samples={fc.min_samples:g}, "
        f"epsilon={fc.epsilon:g}{level} (public inputs only; nothing is read or spent)"
    )
    for line in [] if periods is None else periods.lines():
        print(line)
    if counts_points(p["eps"], n, p["max_cells_per_unit"] is not None, places):
        if len(lower) >= 3:
            where = f"above {LARGE_N:,} (finer cells); this forecast is the grid for {ASSUMED_N:,} or fewer"
        else:
            where = f"below {SMALL_N:,} (coarser cells); this forecast is the grid for {SMALL_N:,} or more"
        print(
            f"count     : without --n-expected the fit first spends {COUNT_SHARE:.0%} of the budget on a DP "
            f"count of the points and sizes its grid for the count where it is {where}"
        )
        # the count is made at event level only, where noise "auto" is discrete Laplace
        if len(lower) == SECOND_DIMS and noise_kind(p, False) in ("discrete", "laplace"):
            print(
                f"releases  : in 3-D, where that count is {SMALL_SECOND_FROM:,} or more, the fit makes two "
                f"releases that together spend epsilon={p['epsilon']:g}: release one (the count and the "
                f"histogram) {1 - SECOND_SHARE:.0%} of it from a count of {SECOND_MIN_COUNT:,} "
                f"({1 - SMALL_SECOND_SHARE:.0%} below), release two the rest (finer cells "
                "where release one is dense, to part spans whose parts lie side by side; docs/privacy.md "
                "4.10); this forecast is release one's at the whole epsilon"
            )
    if events is not None:
        guess = (
            "--n-expected is then your guess of the number of those points"
            if n is not None
            else "a guess given as --n-expected would be of the number of those points, not of the rows"
        )
        print(f"counts    : {event_words(events.record(), length)}; {guess}")
    short, volume = table_formats(geo, fc.d)
    for line in fc.lines(length=short, volume=volume):
        print(line)
    if plan is not None:
        for line in table_forecast_lines(plan):
            print(line)
    return EXIT_OK
