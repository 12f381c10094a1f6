"""``dpdbscan check``: a dry run for the data owner before a fit.

It reads the file exactly as ``fit`` does (the same reader, the same
per-record rule, the same checks and errors) and says, as private notes on
standard error, what a fit would see: the columns, how many rows are read and
dropped, each column's range against the bounds, the grid, kappa, the margin
and the threshold (the forecast, measured against the rows counted), and a
fit's rough time and memory. With ``--unit`` it also says how many units
there are, how their points and cells (on the release's grid) are spread,
and what share of the points a contribution bound ``--max-cells-per-unit``
keeps. It spends no budget, draws no noise, writes no file and prints
nothing on standard output: every line describes the private data and is
for the owner only.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from ..cells.grid import Grid
from ..files.tracefolder import UNIT_WORDS
from ..geometry import projection
from ..params.parameters import grid_eta
from ..plan.autoplan import PLACE_EXTENT_KM
from ..plan.outlook import duration_text, fit_cost
from ..plan.resolve import forecast_of
from ..prepare import Points, split_bounds
from ..prepare.clipping import clipping_counts, outside_hint, pile_up, rows_all
from ..prepare.door import apply_transforms, read_file, say_read
from ..release.bounding import BoundingKey, factorize, pairs_of
from ..series import SeriesPlan
from ..traces import Events, Stops, parse_times
from .common import EXIT_OK, ArgTarget, Notes, WarningSink, table_formats
from .fit import check_fit_params
from .fitoptions import FitOptions
from .fitseries import SeriesOptions, add_period_options, check_series, table_forecast_lines
from .options import (
    add_dbscan_options,
    add_domain_options,
    add_input_options,
    add_privacy_options,
    add_unit_options,
)

EXAMPLES = """examples:
  # Cabs-tiny as in the paper: what would a fit at 50 m and MinPts 1000 see?
  dpdbscan check "$DPDBSCAN_DATA/cabs_tiny.csv.gz" --header --geo --bounds -122.48 37.72 -122.38 37.82 \\
      --eps 50m --min-samples 1000

  # only the data facts (columns, rows, ranges against the bounds)
  dpdbscan check points.csv --columns x y --bounds 0 0 700 500

  # person-level: how many cells does each cab visit, and what share of the points does k keep?
  dpdbscan check "$DPDBSCAN_DATA/cabs_sf_cabs.parquet" --geo --columns x y --bounds -122.6 37.55 \
      -122.3 37.85 --eps 200m --min-samples 100 --unit cab --max-cells-per-unit 1000 --delta 1e-6

  # stops: the rows read and dropped, then the stops the release would count instead
  dpdbscan check "$DPDBSCAN_DATA/cabs_sf_cabs.parquet" --geo --columns x y --bounds -122.6 37.55 \
      -122.3 37.85 --eps 200m --min-samples 30 --unit cab --delta 1e-6 --time time --stops 100m 5min

every line goes to standard error and starts with "[private: do not publish]": it describes
your data, so do not publish it. Standard output stays empty.
"""


def add_arguments(p: ArgTarget) -> None:
    p.add_argument(
        "input",
        help="the file fit would read: CSV (optionally gzipped; - reads standard input), Parquet, .npy, "
        "SQLite, GeoPackage, GeoJSON, GPX or PLT; a folder of trace files with --unit-from",
    )
    add_input_options(p)
    add_dbscan_options(p, required=False)
    add_domain_options(p, from_data=False)
    add_privacy_options(p, seed=False)
    add_unit_options(p)
    add_period_options(p, release=False)
    # what fit's checks read and a dry run does not offer
    p.set_defaults(seed=None, backend="numpy", scheduler=None, bounds_from_data=False)


def cmd_check(args: argparse.Namespace, sink: WarningSink) -> int:
    opts = FitOptions.from_args(args)
    p = check_fit_params(opts, dry_run=True)
    notes = Notes(opts.quiet)
    series = SeriesOptions.from_args(args)
    # --per: the plan from public inputs, before reading; the spans get their share
    plan = None if series is None else check_series(series, opts, p)
    if plan is not None:
        p = {**p, "epsilon": plan.spans_epsilon, "delta": plan.spans_delta}
    bounds_in = opts.bounds
    assert bounds_in is not None  # check has no --bounds-from-data
    start = time.perf_counter()
    source = opts.source(notes)
    pts = read_file(source, eta=grid_eta(p["eta"]), notes=notes)
    say_read(opts.input, pts.X, pts.names, notes)
    read_counts = pts.counts if pts.counts is not None else clipping_counts(pts.X, pts.lower, pts.upper)
    # with --stops or --trip-ends the release counts each unit's events: so does the check
    events, n_read = opts.events, pts.X.shape[0]
    pts = apply_transforms(pts, source.transforms)
    read_seconds = time.perf_counter() - start
    counts = pts.counts if pts.counts is not None else clipping_counts(pts.X, pts.lower, pts.upper)
    lower_in, upper_in = split_bounds(bounds_in, pts.X.shape[1], opts.geo, from_input=not opts.columns)
    # --outside drop: the rows read outside the box, dropped before anything else is made of them
    dropped = int(read_counts["outside"]) if opts.outside == "drop" else 0
    if events is None:
        lines = data_lines(pts, counts, lower_in, upper_in, bounds_in)
        if dropped:
            lines[0] = rows_line(n_read, read_counts, pts.units is not None, dropped)
    else:
        lines = [
            rows_line(n_read, read_counts, pts.units is not None, dropped),
            *event_lines(events, pts, counts, lower_in, upper_in, bounds_in),
        ]
    if opts.outside == "drop":
        # none is left outside to clip: say what happened to them instead
        lines = [
            "outside   : none left; --outside drop drops the rows outside the bounds (counted above), "
            "a fit clips none"
            if line.startswith("outside   : ")
            else line
            for line in lines
        ]
    for line in lines:
        notes(line)
    counted = "rows kept" if events is None else "events"
    length = projection.format_km if opts.geo else (lambda v: f"{v:g}")
    k = p["max_cells_per_unit"]
    missing = [opt for opt, key in (("--eps", "eps"), ("--min-samples", "min_samples")) if p[key] is None]
    if missing:
        if pts.units is not None:
            lines, _ = unit_lines(
                pts, None, k, p["max_points_per_cell"], length, p["cell_choice"], counted, args.unit_from
            )
            for line in lines:
                notes(line)
        notes(f"no grid, kappa, margin, threshold or fit cost: give {' and '.join(missing)} to see them")
        return EXIT_OK
    n = counts["n_ok"]
    person = pts.units is not None
    places = PLACE_EXTENT_KM if opts.geo else None  # the fit's own plan: --geo looks for places
    if person and not isinstance(k, int):
        # the cells per unit are measured on the grid, which does not depend on k
        fc = forecast_of(
            {**p, "max_cells_per_unit": 1}, pts.lower, pts.upper, n_points=n, units=True, places=places
        )
    else:
        fc = forecast_of(p, pts.lower, pts.upper, n_points=n, units=person, places=places)
    against = f"the {n:,} rows kept"
    if person:
        grid = Grid(pts.lower, pts.upper, fc.eps, grid_eta(p["eta"]))
        lines, bounded = unit_lines(
            pts, grid, k, p["max_points_per_cell"], length, p["cell_choice"], counted, args.unit_from
        )
        for line in lines:
            notes(line)
        if bounded is None:
            notes(
                "forecast  : give --max-cells-per-unit K (a number) for the forecast of a "
                "person-level release (its noise grows with K)"
            )
            sink.flush()
            return EXIT_OK
        # a person-level release counts the bounded contributions, not the rows
        n = int(round(bounded))
        fc = forecast_of(p, pts.lower, pts.upper, n_points=n, units=True, places=places)
        against = (
            f"the about {n:,} unit-cell contributions the bounded counts hold (each unit in at most "
            f"k cells, at most m points in each)"
        )
    notes(
        f"forecast  : eps={length(fc.eps)}, min_samples={fc.min_samples:g}, epsilon={fc.epsilon:g}, "
        f"measured against {against} (no budget spent, nothing released)"
    )
    short, volume = table_formats(opts.geo, pts.X.shape[1])
    for line in fc.lines(n_name="n", length=short, volume=volume):
        notes(line)
    read = duration_text(read_seconds)
    notes(f"fit       : reading took {read} here; the fit after it " + fit_cost(fc, n).line())
    if plan is not None:
        for line in period_lines(pts, plan, str(opts.unit), counted="rows" if events is None else "events"):
            notes(line)
    sink.flush()
    return EXIT_OK


def period_lines(pts: Points, plan: SeriesPlan, unit: str, counted: str = "rows") -> list[str]:
    """What a series' periods hold (private: rows, or the events counted
    instead with --stops or --trip-ends, and distinct units per period, those
    in no period), then what each period's masses can show (public: the plan,
    :func:`dpdbscan.cli.fitseries.table_forecast_lines`)."""
    one = counted[:-1]
    period = plan.periods.index(parse_times(pts.times)) if pts.times is not None else None
    if period is None:
        return ["periods   : no time column was read (--time COLUMN)"]
    kind = plan.periods.kind
    codes, _ = factorize(pts.units)
    inside = period >= 0
    rows = np.bincount(period[inside], minlength=plan.periods.n_periods)
    pairs = np.unique(np.stack([period[inside], codes[inside]]), axis=1)
    units = np.bincount(pairs[0], minlength=plan.periods.n_periods) if pairs.size else rows * 0
    return [
        f"periods   : {plan.periods.n_periods} {kind}(s); {counted} per {kind} {_spread(rows)}; distinct "
        f"units ({unit}) per {kind} {_spread(units)}; {int((~inside).sum()):,} {one}(s) with no time "
        "or outside the horizon, dropped",
        *table_forecast_lines(plan, unit),
    ]


_QUANTILES = (
    (0.0, "min"),
    (0.1, "10%"),
    (0.25, "25%"),
    (0.5, "median"),
    (0.75, "75%"),
    (0.9, "90%"),
    (1.0, "max"),
)


def _spread(values: np.ndarray) -> str:
    """Quantiles of a per-unit count, in words."""
    q = np.quantile(values, [a for a, _ in _QUANTILES])
    return ", ".join(f"{name} {v:,.0f}" for (_, name), v in zip(_QUANTILES, q))


def unit_lines(
    pts: Points,
    grid: Grid | None,
    k: int | str | None,
    m: int,
    length: Callable[[float], str],
    cell_choice: str = "busiest",
    counted: str = "rows kept",
    unit_from: str | None = None,
) -> tuple[list[str], float | None]:
    """Private notes on the privacy units of ``pts`` (``--unit``): how many,
    their points and, on the release's ``grid`` (None: not known yet),
    their cells, and what share of the points the bound ``k`` cells and
    ``m`` points per cell keeps: exactly for ``cell_choice="busiest"`` (the
    sum over each unit's k busiest cells does not depend on how ties are
    broken), expected over the random choice of cells for "uniform".
    The rows are the ones a fit keeps (finite coordinates, a unit). Also
    returns the expected sum of the bounded counts (None when ``k`` or the
    grid is not known): the points a person-level release counts.
    ``counted``: what the points are (the rows kept, or the events made
    from them). ``unit_from``: the units are a folder's files or sub-folders
    (``--unit-from``), not a column's values."""
    name = pts.unit_name
    if grid is None:
        codes, uniques = factorize(pts.units)
        codes = codes[(codes >= 0) & rows_all(np.isfinite(pts.X))]
        points = np.bincount(codes, minlength=len(uniques)).astype(float)
    else:
        key = BoundingKey((0, 0), bytes(16))  # no release: the key only names the units
        pairs = pairs_of(grid, pts.X, pts.units, key)
        points = np.bincount(pairs.units, weights=pairs.counts, minlength=pairs.n_units)
    present = points > 0
    n_units, total = int(np.count_nonzero(present)), float(points.sum())
    where = f"in column {name!r}" if unit_from is None else f"({UNIT_WORDS[unit_from]} each)"
    out = [f"units     : {n_units:,} unit(s) {where} among the {total:,.0f} {counted}"]
    if n_units == 0:
        return out, None
    out.append(f"points    : per unit: {_spread(points[present])}")
    if grid is None:
        return out + [
            "cells     : give --eps and --min-samples to see the cells per unit and what k keeps"
        ], None
    cells = np.bincount(pairs.units, minlength=pairs.n_units)
    out.append(
        f"cells     : per unit, of the release's grid (width {length(grid.width)}): {_spread(cells[present])}"
    )
    capped = np.bincount(pairs.units, weights=np.minimum(pairs.counts, m), minlength=pairs.n_units)

    def kept(k: int) -> tuple[float, float, float]:
        over = float(np.count_nonzero(cells[present] > k)) / n_units
        if cell_choice == "busiest":
            # each unit's k cells of most points: rank the pairs by unit, then points down
            order = np.lexsort((-pairs.counts, pairs.units))
            u = pairs.units[order]
            first = np.flatnonzero(np.concatenate(([True], u[1:] != u[:-1])))
            rank = np.arange(u.size) - np.repeat(first, np.diff(np.append(first, u.size)))
            top = order[rank < k]
            return (
                float(pairs.counts[top].sum()) / total,
                float(np.minimum(pairs.counts[top], m).sum()) / total,
                over,
            )
        share = np.minimum(1.0, k / np.maximum(cells, 1))  # each unit keeps k of its cells at random
        return float(share @ points) / total, float(share @ capped) / total, over

    if isinstance(k, int):
        pts_share, capped_share, over = kept(k)
        how = "its busiest cells" if cell_choice == "busiest" else "expected over the random choice of cells"
        out.append(
            f"bound     : k = {k:,} cells per unit keeps {pts_share:.1%} of the points ({how}; "
            f"{over:.0%} of the units have more than k cells); with at most "
            f"m = {m} point(s) per cell the bounded counts add up to {capped_share:.1%} of the points"
        )
        return out, capped_share * total
    # Never a private figure phrased as the k to use: a k read off these
    # counts would steer the mechanism by the private data.
    out.append(
        "bound     : these counts are private: k must come from public knowledge (how many places "
        "one unit can visit), never from them; --max-cells-per-unit auto chooses k privately, its "
        "cost counted in the release (docs/parameters.md)"
    )
    return out, None


def rows_line(n_read: int, counts: dict, units: bool, outside_dropped: int = 0) -> str:
    """The rows read, dropped by the per-record rule and kept (private);
    ``outside_dropped``: of the rows read, those outside the box that
    ``--outside drop`` drops (``counts`` counts them as clipped)."""
    out = f", {outside_dropped:,} outside the bounds dropped (--outside drop)" if outside_dropped else ""
    return (
        f"rows      : {n_read:,} read, {counts['n_bad']:,} dropped (missing, non-numeric or "
        f"non-finite values{'' if not units else ', or no unit'}){out}, "
        f"{counts['n_ok'] - outside_dropped:,} kept"
    )


def event_lines(
    events: Events,
    pts: Points,
    counts: dict,
    lower_in: np.ndarray,
    upper_in: np.ndarray,
    bounds_in: list[float],
) -> list[str]:
    """With --stops or --trip-ends: the events the release counts instead of
    the rows (made from the rows kept; the rows dropped for no readable time
    or status are said above), then the ranges of the events. Private notes."""
    what = "stop(s)" if isinstance(events, Stops) else f"{events.ends} point(s)"
    n = pts.X.shape[0]
    out = [f"events    : {n:,} {what} made from the rows kept: the release counts these, not the rows"]
    if n == 0:
        return out  # why is said above (the events' own note)
    ranges = data_lines(pts, counts, lower_in, upper_in, bounds_in)[1:]
    return out + [
        line.replace(" of the rows ", " of the events ").replace(" row(s) ", " event(s) ") for line in ranges
    ]


def data_lines(
    pts: Points, counts: dict, lower_in: np.ndarray, upper_in: np.ndarray, bounds_in: list[float]
) -> list[str]:
    """The data facts: rows kept and dropped, and per column its range (in
    the file's units: degrees with --geo) and the share of the kept rows
    below its lower and above its upper bound. Private notes."""
    X, n_bad, n_ok = pts.X, counts["n_bad"], counts["n_ok"]
    out = [rows_line(X.shape[0], counts, pts.units is not None)]
    if n_ok == 0:
        return out + ["no row is kept: check --columns, --delimiter and --header"]
    kept = X if n_bad == 0 else X[rows_all(np.isfinite(X))]
    lo, hi = kept.min(axis=0), kept.max(axis=0)
    if pts.proj is not None:
        # the projection is increasing in each axis: ranges map onto ranges
        lo, hi = pts.proj.inverse(np.array([lo, hi]))
    names = pts.names or [str(j) for j in range(X.shape[1])]
    for j, name in enumerate(names):
        below, above = int(counts["below"][j]) / n_ok, int(counts["above"][j]) / n_ok
        out.append(
            f"column {name!r}: min {lo[j]:.8g}, max {hi[j]:.8g}; bounds {lower_in[j]:.8g} .. "
            f"{upper_in[j]:.8g}; {below:.1%} of the rows below the lower, {above:.1%} above the upper"
        )
    outside = counts["outside"]
    out.append(
        f"outside   : {outside:,} row(s) ({outside / n_ok:.1%}) outside the bounds; a fit clips "
        "them onto the box" + ("" if not outside else f" ({pile_up(pts.proj is not None)})")
    )
    if outside / n_ok > 0.5:
        out.append(outside_hint(pts, bounds_in))
    return out
