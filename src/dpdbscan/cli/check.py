"""``dpdbscan check``: a dry run for the data owner before a fit.

It reads the file exactly as ``fit`` does (the same reader, the same
per-record rule, the same checks and errors) and says, as private notes on
standard error, what a fit would see: the columns, how many rows are read and
dropped, each column's range against the bounds, the grid, kappa, the margin
and the threshold (the forecast, measured against the rows counted), and a
fit's rough time and memory. It spends no budget, draws no noise, writes no
file and prints nothing on standard output: every line describes the private
data and is for the owner only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..geometry import projection as _geo
from ..plan.forecast import fit_cost
from ..plan.resolve import forecast_of
from .common import EXIT_OK, ArgTarget, Notes, _column_tokens, _floats, _say_read, _split_bounds, _Warnings
from .fit import Points, _rows_all, check_fit_params, clipping_counts, outside_hint, read_points
from .options import add_dbscan_options, add_domain_options, add_input_options, add_privacy_options

EXAMPLES = """examples:
  # Cabs-tiny as in the paper: what would a fit at 50 m and MinPts 1000 see?
  dpdbscan check ../shared/data/cabs_tiny.csv.gz --geo --bounds -122.48 37.72 -122.38 37.82 \\
      --eps 50m --min-samples 1000

  # only the data facts (columns, rows, ranges against the bounds)
  dpdbscan check points.csv --columns x y --bounds 0 0 700 500

every line goes to standard error and starts with "[private: do not publish]": it describes
your data, so do not publish it. Standard output stays empty.
"""


def add_arguments(p: ArgTarget) -> None:
    p.add_argument("input", help="CSV (optionally gzipped; - reads standard input), Parquet or .npy")
    add_input_options(p)
    add_dbscan_options(p, required=False)
    add_domain_options(p, from_data=False)
    add_privacy_options(p, seed=False)
    # what fit's checks read and a dry run does not offer
    p.set_defaults(seed=None, backend="numpy", scheduler=None, bounds_from_data=False)


def cmd_check(args: argparse.Namespace, sink: _Warnings) -> int:
    p = check_fit_params(args)
    notes = Notes(args.quiet)
    bounds_in = _floats(args.bounds, "--bounds")
    start = time.perf_counter()
    pts = read_points(args, p, notes, bounds_in, _column_tokens(args.columns))
    read_seconds = time.perf_counter() - start
    counts = pts.counts if pts.counts is not None else clipping_counts(pts.X, pts.lower, pts.upper)
    _say_read(args.input, pts.X, pts.names, notes)
    lower_in, upper_in = _split_bounds(bounds_in, pts.X.shape[1], args.geo)
    for line in data_lines(pts, counts, lower_in, upper_in, bounds_in):
        notes(line)
    missing = [opt for opt, key in (("--eps", "eps"), ("--min-samples", "min_samples")) if p[key] is None]
    if missing:
        notes(f"no grid, kappa, margin, threshold or fit cost: give {' and '.join(missing)} to see them")
        return EXIT_OK
    n = counts["n_ok"]
    fc = forecast_of(p, pts.lower, pts.upper, n_points=n)
    length = _geo.format_km if args.geo else (lambda v: f"{v:g}")
    notes(
        f"forecast  : eps={length(fc.eps)}, min_samples={fc.min_samples:g}, epsilon={fc.epsilon:g}, "
        f"measured against the {n:,} rows kept (no budget spent, nothing released)"
    )
    for line in fc.lines(n_name="n"):
        notes(line)
    notes(f"fit       : reading took {read_seconds:.2g} s here; the fit after it " + fit_cost(fc, n).line())
    sink.flush()
    return EXIT_OK


def data_lines(
    pts: Points, counts: dict, lower_in: np.ndarray, upper_in: np.ndarray, bounds_in: list[float]
) -> list[str]:
    """The data facts: rows kept and dropped, and per column its range (in
    the file's units: degrees with --geo) and the share of the kept rows
    below its lower and above its upper bound. Private notes."""
    X, n_bad, n_ok = pts.X, counts["n_bad"], counts["n_ok"]
    out = [
        f"rows      : {X.shape[0]:,} read, {n_bad:,} dropped (missing, non-numeric or "
        f"non-finite values), {n_ok:,} kept"
    ]
    if n_ok == 0:
        return out + ["no row is kept: check --columns, --delimiter and --header"]
    kept = X if n_bad == 0 else X[_rows_all(np.isfinite(X))]
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
        "them onto the box"
    )
    if outside / n_ok > 0.5:
        out.append(outside_hint(pts, bounds_in))
    return out
