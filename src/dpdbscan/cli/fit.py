"""``dpdbscan fit`` and ``dpdbscan sweep``: spend the budget once, write the release."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import __version__
from .._optional import require
from ..cells.grid import MAX_KAPPA, count_neighbours
from ..exceptions import InsecureRandomnessWarning, PrivacyLeakWarning
from ..files.formats import looks_like_unit
from ..geometry import projection as _geo
from ..geometry.projection import Equirectangular
from ..model import save_geojson, save_model
from ..model import summary as model_summary
from ..pipeline import events_of, events_rows
from ..pipeline import fit as fit_release
from ..plan.resolve import check_scale, validated
from ..progress import progress
from ..release.backends import Backend, NumpyBackend
from ..render import plotting
from ..series import SeriesPlan, fit_series
from ..spec.parameters import check_param, check_units
from ..spec.validation import bounds_from_data, standardised_note
from ..traces import Events, Stops, TripEnds, parse_times, take_rows
from .common import (
    EXIT_OK,
    EXIT_PARTIAL,
    PRIVATE,
    Notes,
    _column_tokens,
    _draw_spans_png,
    _floats,
    _one_line,
    _open,
    _progress_flag,
    _say_read,
    _split_bounds,
    _stem,
    _Warnings,
    atomic_write,
    check_writable,
    read_options,
    read_plan,
    read_trace_columns,
    write_temp,
)
from .ledger import charging
from .maps import picture_options
from .series import check_series, periods_path, wants_series, write_periods_csv

if TYPE_CHECKING:
    from ..model.record import SpanModel


#: Options that go to the parameter table as they were parsed.
PRIVACY_OPTIONS = ("epsilon", "delta", "eta", "beta", "histogram", "noise", "theta")


def privacy_values(args: argparse.Namespace) -> dict:
    """The values of :data:`PRIVACY_OPTIONS` for :func:`~dpdbscan.spec.parameters.validate`."""
    return {name: getattr(args, name) for name in PRIVACY_OPTIONS}


def check_fit_params(
    args: argparse.Namespace, eps: float | str | None = None, *, dry_run: bool = False
) -> dict:
    """Validate every fit parameter with the shared table before reading a
    possibly huge file; returns them normalised (``min_samples`` is the first
    of a sweep's list, ``eps`` overrides ``args.eps``). An ``eps`` or
    ``min_samples`` that is None (``check`` without them) is left out.
    ``dry_run`` (``check``): --unit without --max-cells-per-unit is allowed,
    to help choose it; the other rules of a person-level release hold."""
    eps = args.eps if eps is None else eps
    if eps is not None and not (isinstance(eps, str) and eps.strip().lower() == "auto"):
        eps = _geo.parse_length(eps, geo=args.geo)
    values = dict(
        eps=eps if not isinstance(eps, str) else "auto",
        min_samples=_min_samples_list(args)[0],
        **privacy_values(args),
        subcells=args.subcells,
        margin=args.margin,
        core=args.core,
        border=_border_arg(args.border, geo=bool(args.geo)),
        random_state=args.seed,
        backend=args.backend,
        raise_min_samples=not args.theoretical_threshold,
    )
    if getattr(args, "max_cells", None) is not None:
        values["max_cells"] = args.max_cells
    for name in ("max_cells_per_unit", "max_points_per_cell"):
        if hasattr(args, name):
            values[name] = getattr(args, name)
    if getattr(args, "n_expected", None) is not None:
        values["n_expected"] = args.n_expected
    if getattr(args, "selection", None) is not None:
        values["selection"] = args.selection
    values["events"] = events_from_args(args)
    given = {k: v for k, v in values.items() if v is not None or k not in _DBSCAN}
    unit = getattr(args, "unit", None)
    # the --unit option's name (public) says what one unit is in the warnings' words
    p = validated(given, cli=True, unit_name=unit if isinstance(unit, str) and not unit.isdigit() else None)
    units = unit is not None
    if dry_run and units and p["max_cells_per_unit"] is None:
        check_units({**p, "max_cells_per_unit": 1}, units, cli=True)
    else:
        check_units(p, units, cli=True)
    for k in _DBSCAN:
        if k not in given:
            p[k] = None  # check runs without them: no forecast
    for m in _min_samples_list(args):
        if m is not None:
            check_param("min_samples", m, cli=True)
    if args.ref_lat is not None and not args.geo:
        raise ValueError("--ref-lat only applies with --geo")
    if p["events"] is not None and args.backend == "dask":
        raise ValueError(
            "--stops and --trip-ends read each unit's trace in time order; the Dask backend "
            "shuffles (unit, cell) counts, not points, so it cannot yet: use --backend numpy"
        )
    if args.scheduler and args.backend != "dask":
        raise ValueError("--scheduler needs --backend dask")
    if args.bounds is None and not args.bounds_from_data:
        raise ValueError(
            "--bounds is required: give public bounds of the data domain (not computed from the "
            "data), or pass --bounds-from-data to accept a release with no privacy guarantee"
        )
    if args.bounds is not None and args.bounds_from_data:
        raise ValueError("give either --bounds or --bounds-from-data, not both")
    _check_scale_early(args, p)
    return p


def events_from_args(args: argparse.Namespace, *, reads: bool = True) -> Events | None:
    """``--stops`` or ``--trip-ends`` as a resolved transformation (public:
    the options alone), or None; refused with a message naming the option
    before any file is read. ``reads``: the command reads data, so the
    transformation needs ``--time``."""
    stops, ends_col = getattr(args, "stops", None), getattr(args, "trip_ends", None)
    time_col, ends = getattr(args, "time", None), getattr(args, "ends", None)
    if stops is not None and ends_col is not None:
        raise ValueError("give --stops or --trip-ends, not both (one release counts one kind of place)")
    if ends is not None and ends_col is None:
        raise ValueError("--ends goes with --trip-ends COLUMN")
    if stops is None and ends_col is None:
        if time_col is not None and getattr(args, "per", None) is None:
            raise ValueError("--time is read only for --stops, --trip-ends or --per")
        return None
    if reads and time_col is None:
        raise ValueError(
            f"{'--stops' if stops is not None else '--trip-ends'} needs --time COLUMN: each unit's "
            "points are read in time order"
        )
    geo = bool(getattr(args, "geo", False))
    try:
        if stops is not None:
            return Stops(*stops).resolved(geo=geo)
        return TripEnds(ends or "pickup").resolved(geo=geo)
    except ValueError as exc:
        raise ValueError(f"{'--stops' if stops is not None else '--ends'}: {exc}") from None


def _check_scale_early(args: argparse.Namespace, p: dict) -> None:
    """Refuse an eps as large as the public box before the file is read
    (:func:`dpdbscan.plan.resolve.check_scale`), when the bounds alone tell
    the box: two numbers per dimension, or four with --geo (in km then)."""
    eps = p.get("eps")
    if args.bounds is None or not isinstance(eps, float):
        return
    b = _floats(args.bounds, "--bounds")
    if len(b) < 4 or len(b) % 2:
        return  # one lower and one upper for every column: d comes from the file
    lower, upper = _split_bounds(b, len(b) // 2, args.geo)
    if args.geo:
        lower, upper = Equirectangular.from_bounds(lower, upper, args.ref_lat).project_bounds(lower, upper)
    check_scale(eps, lower, upper, cli=True)


_DBSCAN = ("eps", "min_samples")


def _min_samples_list(args) -> list[int]:
    m = args.min_samples
    return list(m) if isinstance(m, (list, tuple)) else [m]


def _dask_backend(args, columns):
    dask_backend = require("dpdbscan.release.backends.dask_backend", "--backend dask", package="dask")
    # Dask reads the files itself, by the same public options as the local reader.
    opts = read_options(args, columns)
    read = {k: getattr(opts, k) for k in ("header", "delimiter", "fields", "file_format")}
    return dask_backend.DaskBackend(scheduler=args.scheduler, columns=columns, **read)


def fit_from_args(
    args: argparse.Namespace,
    sink: _Warnings,
    p: dict,
    min_samples: int,
    notes: Notes,
    series: SeriesPlan | None = None,
) -> SpanModel:
    """Run one release with the validated parameters ``p``; returns the SpanModel.
    ``series``: a series over time (``--per``): the spans of the horizon and
    the span x period table, recorded in the model (:func:`dpdbscan.series.fit_series`)."""
    bounds_in = None if args.bounds is None else _floats(args.bounds, "--bounds")
    columns = _column_tokens(args.columns)
    meta: dict[str, Any] = {
        "tool": f"dpdbscan {__version__}",
        "eps_text": str(args.eps),
        "randomness": "secure" if args.seed is None else "seeded (insecure; seed not stored)",
    }
    dask = args.backend == "dask"
    backend: Backend
    units = None
    if dask and getattr(args, "unit", None) is not None:
        if not args.columns or str(args.unit).isdigit():
            raise ValueError(
                "--unit with --backend dask names a column of a Parquet schema or a declared CSV "
                "header, beside --columns for the coordinates (no 0-based index)"
            )
        units = args.unit  # the column's name; the backend reads it where the rows are
    if dask:
        if args.geo:
            raise ValueError(
                "--geo is not supported with --backend dask: the backend counts the "
                "file's own coordinates, so project lon/lat to km first"
            )
        if args.bounds_from_data:
            raise ValueError("--backend dask needs public --bounds (it never scans the data for them)")
        d = (
            len(columns)
            if columns
            else (len(bounds_in) // 2 if bounds_in is not None and len(bounds_in) > 2 else None)
        )
        if d is None:
            raise ValueError(
                "with --backend dask give --columns, or --bounds with one lower and one "
                "upper value per column"
            )
        X, names = args.input, columns
        backend = _dask_backend(args, columns)
        if units is not None:
            meta["unit_column"] = units  # public: the option
        check_columns(args, p, d, names)
        lower, upper, _ = public_box(args, bounds_in, d, None, meta)
    else:
        pts = read_points(args, p, notes, bounds_in, columns, meta)
        X, names, lower, upper, units = pts.X, pts.names, pts.lower, pts.upper, pts.units
        backend = NumpyBackend()
        if pts.unit_name is not None:
            meta["unit_column"] = pts.unit_name  # public: the option, from the header or schema
        else:
            note_id_columns(pts.schema_names, names)
    meta["columns"] = list(names) if names else None
    if not dask:
        _say_read(args.input, X, names, notes)
        _note_clipping(pts, notes, bounds_in, pts.counts)
        pts = with_events(args, pts, p, notes, meta)
        X, units = pts.X, pts.units

    if getattr(args, "preload_png", False):
        preload_matplotlib()
    if args.seed is not None:
        print(
            "dpdbscan: warning: --seed makes the noise reproducible and NOT cryptographically "
            "secure: for research only, do not publish this release",
            file=sys.stderr,
        )
    with progress("fitting", enabled=_progress_flag(args), ticking=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # said above
        if series is not None:
            return _series_model(
                args, sink, pts, {**p, "min_samples": min_samples, "events": None}, series, meta
            )
        model = fit_release(
            X,
            lower,
            upper,
            # the events are made above (with_events), once
            {**p, "min_samples": min_samples, "events": None},
            backend=backend,
            metadata=meta,
            units=units,
            stacklevel=3,
        )
    sink.flush()
    note = None if dask else standardised_note(X, "--bounds")
    if note:
        # read from the private points: a private note, said after the release
        # (which it cannot change) and even with --quiet
        print(f"{PRIVATE} dpdbscan: PRIVACY WARNING: {note}", file=sys.stderr)
    return model


def _series_model(
    args: argparse.Namespace, sink: _Warnings, pts: Points, p: dict, series: SeriesPlan, meta: dict
) -> SpanModel:
    """:func:`dpdbscan.series.fit_series` of the points read."""
    made = fit_series(
        pts.X,
        pts.lower,
        pts.upper,
        p,
        pts.units,
        pts.times,
        series,
        unit_name=None if pts.unit_name is None else str(pts.unit_name),
        metadata={**meta, "time_column": str(args.time)},
        stacklevel=4,
    )
    sink.flush()
    return made.model


def note_id_columns(schema_names: Sequence[str] | None, chosen: Sequence[str] | None) -> None:
    """Say once, when no --unit is given, that each row is protected and not
    each person, if a column's name looks like a person's id (public: the
    declared header or the schema; no value is looked at)."""
    skip = set(chosen or ())
    ids = [str(n) for n in schema_names or () if str(n) not in skip and looks_like_unit(str(n))]
    if not ids:
        return
    shown = ", ".join(repr(n) for n in ids[:3]) + (", ..." if len(ids) > 3 else "")
    print(
        f"dpdbscan: note: this release protects each row, not each person: the file has a column "
        f"that looks like an id ({shown}), so one person's many rows can make a span on their own. "
        f"To protect each person, pass --unit {ids[0]} --max-cells-per-unit K (docs/user-guide.md, "
        "person-level privacy)",
        file=sys.stderr,
    )


@dataclass
class Points:
    """A fit's input as the mechanism receives it (numpy backend).

    ``X`` is in the fit's coordinates (km with ``--geo``), ``lower`` and
    ``upper`` the public box in the same coordinates, ``proj`` the --geo
    projection (or None) and ``counts`` :func:`clipping_counts` of ``X`` when
    the reader already made them (else None). ``units`` the privacy unit of
    every row (None without --unit) and ``unit_name`` its column;
    ``schema_names`` every column's name from a declared header or schema
    (None: none declared). Private but for the box and the names.
    """

    X: np.ndarray
    names: list
    lower: np.ndarray
    upper: np.ndarray
    proj: _geo.Equirectangular | None
    counts: dict | None
    units: Any = None
    unit_name: str | None = None
    schema_names: list | None = None
    times: Any = None
    status: Any = None


def read_points(
    args: argparse.Namespace,
    p: dict,
    notes: Notes,
    bounds_in: list[float] | None,
    columns: list[str] | None,
    meta: dict | None = None,
) -> Points:
    """Read ``args.input`` the way ``fit`` does (the same reader, the same
    per-block projection and clipping counts, the same checks and errors),
    for ``fit`` and the dry run ``check``. ``meta`` receives what the model
    records about the box."""
    prep = None if bounds_in is None else BlockPrep(bounds_in, args.geo, args.ref_lat)
    with _open(args.input, columns, args, geo=args.geo) as plan:
        # the columns are known from public input: refuse a bad layout before any record is read
        check_columns(args, p, plan.d, plan.names)
        if args.geo:
            # public names (--columns, a declared header, a Parquet schema) that say latitude first
            _geo.check_lonlat_names(plan.names)
        if bounds_in is not None:
            _split_bounds(bounds_in, plan.d, args.geo)
        trace = trace_columns(args, p, plan.schema_names)
        got = read_plan(plan, args, notes, block_hook=prep)
    # the trace's time and status: a second pass, row for row with the points
    time_col, status_col = trace
    times, status = (
        (None, None) if time_col is None else read_trace_columns(args, columns, time_col, status_col)
    )
    X, names = got.X, got.names
    lower, upper, proj = public_box(args, bounds_in, X.shape[1], X, {} if meta is None else meta)
    counts = None if prep is None else prep.result(X.shape[0])
    if proj is not None and counts is None:
        # in place: X is this command's own copy of the file's values
        X = proj.forward(X, out=X) if X.flags.writeable else proj.forward(X)
    return Points(
        X, names, lower, upper, proj, counts, got.units, got.unit_name, plan.schema_names, times, status
    )


def trace_columns(
    args: argparse.Namespace, p: dict, schema_names: Sequence[str] | None
) -> tuple[str | None, str | None]:
    """``(time column, status column)`` of ``--stops``/``--trip-ends``
    (None where not needed), refused before any record is read when a
    declared header or schema does not have them (public names)."""
    events = p.get("events")
    if events is None:
        if getattr(args, "per", None) is None:
            return None, None
        if (
            schema_names is not None
            and str(args.time) not in map(str, schema_names)
            and not str(args.time).isdigit()
        ):
            raise ValueError(f"{args.input}: --time {args.time!r} is not a column of the file")
        return args.time, None
    wanted = [("--time", args.time)] + ([("--trip-ends", args.trip_ends)] if events.needs_status else [])
    for option, col in wanted:
        if schema_names is not None and str(col) not in map(str, schema_names) and not str(col).isdigit():
            raise ValueError(f"{args.input}: {option} {col!r} is not a column of the file")
    return args.time, (args.trip_ends if events.needs_status else None)


def with_events(
    args: argparse.Namespace, pts: Points, p: dict, notes: Notes, meta: dict | None = None
) -> Points:
    """The points as the release counts them: with ``--stops`` or
    ``--trip-ends``, each unit's stops or trip ends (one row each, from its
    own rows alone: :func:`dpdbscan.pipeline.events_of`, the estimator's
    too); else ``pts`` unchanged. ``meta`` receives the public record of the
    transformation."""
    events = p.get("events")
    if events is None:
        return pts
    n_rows = pts.X.shape[0]
    times = None
    if getattr(args, "per", None) is not None:
        # a series places each event in the period of its first point's time
        rows = events_rows(events, np.asarray(pts.X, dtype=np.float64), pts.units, pts.times, pts.status)
        X, units, times = pts.X[rows], take_rows(pts.units, rows), parse_times(pts.times)[rows]
    else:
        X, units = events_of(events, pts.X, pts.units, pts.times, pts.status)
    what = "stop(s)" if isinstance(events, Stops) else f"{events.ends} point(s)"
    notes(f"{X.shape[0]:,} {what} of the units found in {n_rows:,} rows are counted")
    if meta is not None:
        # public: the options and the declared header or schema's names
        meta["events"] = {**events.record(), "time_column": str(args.time)}
        if events.needs_status:
            meta["events"]["status_column"] = str(args.trip_ends)
    return replace(pts, X=X, units=units, counts=None, times=times, status=None)


def check_columns(args: argparse.Namespace, p: dict, d: int, names: Sequence[str] | None) -> None:
    """Refuse, before anything is spent, a number of columns the release
    cannot use. Public: d, eta and the options."""
    if count_neighbours(d, p["eta"]) > MAX_KAPPA:  # public: d and eta
        raise ValueError(
            f"in d={d} at eta={p['eta']:g} an eps-neighbourhood has {count_neighbours(d, p['eta']):,} "
            f"cells, more than any core test can evaluate ({MAX_KAPPA:,}): the release could have no "
            "span, so no budget is spent on it. Use fewer columns (--columns)"
        )
    if args.geo and d != 2:
        shown = f" ({', '.join(map(str, names))})" if names else ""
        raise ValueError(
            f"--geo needs exactly two columns (longitude, latitude), got {d}{shown}; "
            f"choose them with {geo_columns_hint(names)}"
        )
    if getattr(args, "png_requested", False) and d != 2:
        raise ValueError(f"--png needs 2-D data, got {d} columns")
    if getattr(args, "geojson_requested", False) and d != 2:
        raise ValueError(f"--geojson needs 2-D data, got {d} columns")


def geo_columns_hint(names: Sequence[str] | None) -> str:
    """The --columns to suggest for --geo: ``x y`` when the columns (from a
    declared header or a schema, never a record) have those names, as the
    shared data sets name longitude and latitude; else the placeholder."""
    by_lower = {str(n).lower(): str(n) for n in names or ()}
    if "x" in by_lower and "y" in by_lower:
        x, y = (shlex.quote(by_lower[k]) for k in ("x", "y"))
        return f"--columns {x} {y} (longitude first)"
    return "--columns LON LAT"


def public_box(
    args: argparse.Namespace, bounds_in: list[float] | None, d: int, X: np.ndarray | None, meta: dict
) -> tuple[np.ndarray, np.ndarray, Equirectangular | None]:
    """``(lower, upper, proj)``: the box from ``--bounds`` (or, leaking, from
    ``X`` with ``--bounds-from-data``), projected to km with ``--geo``."""
    if bounds_in is not None:
        lower, upper = _split_bounds(bounds_in, d, args.geo)
        meta["bounds_source"] = "public (--bounds)"
    else:
        if X is None:  # the Dask backend reads the data only in the fit
            raise ValueError("--bounds-from-data needs the points in memory; give --bounds")
        with warnings.catch_warnings():
            # Said once below, in the command line's own words.
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            lower, upper = bounds_from_data(X)
        print(
            "dpdbscan: PRIVACY WARNING: --bounds-from-data computes the bounds from the private "
            "data: this leaks information and the release has NO differential privacy guarantee",
            file=sys.stderr,
        )
        meta["bounds_source"] = "data (--bounds-from-data): NO differential privacy guarantee"
    proj = None
    if args.geo:
        proj = _geo.Equirectangular.from_bounds(lower, upper, args.ref_lat)
        err = proj.max_scale_error(lower, upper)
        if err > 0.01:
            print(
                f"dpdbscan: warning: the --geo box spans latitudes {lower[1]:g}..{upper[1]:g}; "
                f"east-west distances are off by up to {err:.1%} at its edges "
                "(equirectangular projection)",
                file=sys.stderr,
            )
        meta["projection"] = proj.to_dict()
        meta["bounds_degrees"] = {"lower": list(map(float, lower)), "upper": list(map(float, upper))}
        lower, upper = proj.project_bounds(lower, upper)
    return lower, upper, proj


class BlockPrep:
    """What ``fit`` does to each block of rows while the file is still being
    read (:func:`dpdbscan.files.InputPlan.read`'s ``block_hook``, on the parsing
    threads): with ``--geo``, project lon/lat to km in place; then count
    what the per-record rule will drop or clip (:func:`clipping_counts`,
    for the private notes). Both are per row, so doing them block by block
    gives the same array and the same counts as doing them afterwards.

    It sets itself up from the public ``--bounds`` and the number of columns
    of the first block; where that fails (wrong number of bounds, a bad
    lon/lat box, --geo on other than two columns) it does nothing and the
    command's own checks after the read report the problem as usual.
    """

    def __init__(self, bounds_in: list[float], geo: bool, ref_lat: float | None) -> None:
        self.bounds_in, self.geo, self.ref_lat = bounds_in, geo, ref_lat
        self._lock = threading.Lock()
        self._setup: dict[int, Any] = {}
        self._counts: list[dict] = []
        self._rows = 0

    def _prepare(self, d: int):
        with self._lock:
            if d not in self._setup:
                try:
                    if self.geo and d != 2:
                        raise ValueError("--geo needs two columns")
                    lower, upper = _split_bounds(self.bounds_in, d, self.geo)
                    proj = None
                    if self.geo:
                        proj = _geo.Equirectangular.from_bounds(lower, upper, self.ref_lat)
                        lower, upper = proj.project_bounds(lower, upper)
                    self._setup[d] = (proj, lower, upper)
                except ValueError:
                    self._setup[d] = None  # reported by the checks after the read
            return self._setup[d]

    def __call__(self, X: np.ndarray) -> None:
        setup = self._prepare(X.shape[1])
        if setup is None:
            return
        proj, lower, upper = setup
        if proj is not None:
            proj.forward(X, out=X)
        counts = clipping_counts(X, lower, upper)
        with self._lock:
            self._counts.append(counts)
            self._rows += X.shape[0]

    def result(self, n_rows: int) -> dict | None:
        """The summed clipping counts, or None if the blocks were left as
        read (then the caller projects and counts itself)."""
        if not self._counts:
            return None
        if self._rows != n_rows:  # pragma: no cover - every block passes through the hook
            raise RuntimeError("some blocks of the input were not prepared")
        total = self._counts[0].copy()
        for c in self._counts[1:]:
            for k in ("n_bad", "n_ok", "outside"):
                total[k] += c[k]
            total["below"] = total["below"] + c["below"]
            total["above"] = total["above"] + c["above"]
        return total


_SCAN_ROWS = 1 << 16  # rows per block of the clipping scan: stays in the CPU's cache


def _rows_all(mask: np.ndarray) -> np.ndarray:
    """``mask.all(axis=1)``, column by column (quicker for a few columns)."""
    out = mask[:, 0].copy()
    for j in range(1, mask.shape[1]):
        out &= mask[:, j]
    return out


def clipping_counts(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> dict:
    """What the per-record rule will do to the rows of ``X`` (private counts):
    ``n_bad`` rows with a missing or non-finite value (dropped), and among
    the others ``n_ok``, ``outside`` (clipped onto the box) and, per column,
    ``below`` and ``above`` its bound. One pass in cache-sized blocks."""
    d = X.shape[1]
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    n_bad = outside = 0
    below, above = np.zeros(d, dtype=np.int64), np.zeros(d, dtype=np.int64)
    for a in range(0, X.shape[0], _SCAN_ROWS):
        B = X[a : a + _SCAN_ROWS]
        inside = _rows_all((B >= lower) & (B <= upper))  # NaN compares False
        if inside.all():
            continue
        finite = _rows_all(np.isfinite(B))
        n_bad += int(finite.size - np.count_nonzero(finite))
        out = finite & ~inside
        if out.any():
            outside += int(np.count_nonzero(out))
            F = B[out]
            below += np.count_nonzero(F < lower, axis=0)
            above += np.count_nonzero(F > upper, axis=0)
    return {"n_bad": n_bad, "n_ok": X.shape[0] - n_bad, "outside": outside, "below": below, "above": above}


def _note_clipping(
    pts: Points, notes: Notes, bounds_in: list[float] | None = None, counts: dict | None = None
) -> None:
    """Tell the data owner (private notes) how many rows the per-record rule
    drops or clips, per column and bound, in the units they gave (degrees
    with --geo): a wrong bound or column order must be hard to miss. When
    most rows are clipped the note is printed even under --quiet (it is still
    a private note on standard error). What is released does not depend on any
    of this. ``counts``: :func:`clipping_counts` of ``pts.X`` when already made."""
    X = pts.X
    if X.shape[0] == 0:
        return
    c = clipping_counts(X, pts.lower, pts.upper) if counts is None else counts
    if c["n_bad"]:
        unit = "" if pts.units is None else " or no unit"
        notes(f"{c['n_bad']:,} row(s) with missing or non-finite values{unit} are dropped")
    outside, n_ok = c["outside"], max(c["n_ok"], 1)
    if not outside:
        return
    most = outside / n_ok > 0.5
    say = notes.always if most else notes
    lower, upper = user_bounds(pts, bounds_in)
    say(f"{outside:,} point(s) ({outside / n_ok:.1%}) lie outside the bounds and are clipped onto the box")
    for j, name in enumerate(pts.names or [str(j) for j in range(X.shape[1])]):
        for count, side, value in (
            (int(c["below"][j]), "below its lower", lower[j]),
            (int(c["above"][j]), "above its upper", upper[j]),
        ):
            if count / n_ok >= 0.01:
                say(f"column {name!r}: {count / n_ok:.1%} of the rows lie {side} bound {value:g}")
    if most:
        say(outside_hint(pts, bounds_in))


def user_bounds(pts: Points, bounds_in: list[float] | None) -> tuple[np.ndarray, np.ndarray]:
    """The box in the units the user gave it: degrees with --geo, else as fitted."""
    if pts.proj is not None and bounds_in is not None:
        return np.asarray(bounds_in[:2], dtype=float), np.asarray(bounds_in[2:], dtype=float)
    return pts.lower, pts.upper


_HINT_ROWS = 100_000  # rows the hint looks at (a private note; a sample is enough)


def outside_hint(pts: Points, bounds_in: list[float] | None) -> str:
    """The private note when most points lie outside the box: which option
    to check, the bounds in the order that would fit them (xmin xmax ymin ymax
    given for xmin ymin xmax ymax), or the columns in the other order (latitude
    first). Compared in the user's units (degrees with --geo)."""
    hint = "check --bounds (lower_1 .. lower_d upper_1 .. upper_d) and --columns"
    X = pts.X[:: max(1, pts.X.shape[0] // _HINT_ROWS)]
    F = X[_rows_all(np.isfinite(X))]
    if pts.proj is not None:
        F = pts.proj.inverse(F)
    if bounds_in is None or len(bounds_in) != 4 or F.shape[1] != 2 or F.shape[0] == 0:
        return f"most points are outside the bounds: {hint}"
    lo, hi = user_bounds(pts, bounds_in)

    def share(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
        return float(np.all((points >= a) & (points <= b), axis=1).mean())

    v = bounds_in
    alt_lo, alt_hi = np.array([v[0], v[2]]), np.array([v[1], v[3]])
    if np.all(alt_lo < alt_hi) and share(F, alt_lo, alt_hi) > 0.9:
        hint = (
            "the bounds look like xmin xmax ymin ymax: --bounds wants "
            f"xmin ymin xmax ymax, i.e. {v[0]:g} {v[2]:g} {v[1]:g} {v[3]:g}"
        )
    elif share(F[:, ::-1], lo, hi) > 0.9:
        first = "longitude" if pts.proj is not None else "the first coordinate"
        names = pts.names or ["0", "1"]
        hint = (
            f"the columns look swapped: the box fits the points with {names[1]!r} first; "
            f"{first} comes first: --columns {names[1]} {names[0]}"
        )
    return f"most points are outside the bounds: {hint}"


def _out_paths(args, name: str) -> dict:
    """Output paths by kind (None when not wanted), checked writable now,
    before the input is read or any budget spent."""
    out_dir = Path(args.out_dir)
    paths = {}
    for kind, skip in (("json", False), ("geojson", args.no_geojson), ("png", args.no_png)):
        explicit = getattr(args, kind, None)
        paths[kind] = None if skip else Path(explicit) if explicit else out_dir / f"{name}.spans.{kind}"
    check_writable(paths.values(), args.input)
    return paths


def _write_outputs(model, paths, notes: Notes, picture: dict | None = None) -> tuple[list[str], list[str]]:
    """Write the release (JSON), GeoJSON and PNG, each atomically.

    The JSON is written on a second thread (compressing the noisy histogram
    runs outside the GIL) while GeoJSON and PNG are drawn into temporary
    files; they are renamed into place only once the JSON is safe on disk,
    so a failed release leaves no GeoJSON or picture of it behind.
    ``picture`` holds the PNG's ``size`` and ``extent`` (cli/maps.py).
    Returns (written, failed). A failed GeoJSON or picture does not lose the
    release: the JSON is kept and the failure is reported.
    """
    written: list[str] = []
    failed: list[str] = []
    errors: list[BaseException] = []

    def save_json():
        try:
            atomic_write(paths["json"], lambda p: save_model(model, p))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            errors.append(exc)

    saver = threading.Thread(target=save_json, name="dpdbscan-json")
    saver.start()
    staged: list[tuple[str, Path]] = []
    try:
        if model.grid.d != 2:
            if paths["geojson"] is not None or paths["png"] is not None:
                print(f"note: GeoJSON and PNG need 2-D data; skipped for {model.grid.d}-D", file=sys.stderr)
        else:
            proj = _geo.projection_of(model)
            extras = (
                (
                    "geojson",
                    lambda t: save_geojson(model, t, transform=None if proj is None else proj.inverse),
                ),
                ("png", lambda t: _draw_spans_png(model, t, **(picture or {}))),
            )
            for kind, write in extras:
                if paths[kind] is None:
                    continue
                try:
                    staged.append((kind, write_temp(paths[kind], write)))
                except Exception as exc:  # the release is safe: report, do not lose it
                    failed.append(f"{paths[kind]} ({_one_line(exc)})")
    except BaseException:
        saver.join()
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        raise
    saver.join()
    if errors:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        raise errors[0]
    written.append(str(paths["json"]))
    for kind, tmp in staged:
        os.replace(tmp, paths[kind])
        written.append(str(paths[kind]))
    return written, failed


def _number_or_text(text: str):
    """An option that takes a name or a number: the number when it parses, the
    text otherwise (the parameter table refuses what it does not accept)."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


_subcells_arg = _number_or_text


def _border_arg(text, *, geo: bool):
    """--border: 'auto', a number (data units, km with --geo) or a length like 10m."""
    if text is None or str(text) == "auto":
        return "auto"
    try:
        return _geo.parse_length(str(text), geo=geo)
    except ValueError:
        raise ValueError(
            f"--border must be 'auto', a number >= 0 or (with --geo) a length like 10m, got {text!r}"
        ) from None


def summary(model: SpanModel) -> str:
    """The release's summary, with lengths in m/km for geographic models."""
    lines = [model_summary(model)]
    proj = _geo.projection_of(model)
    if proj is not None:
        lines.append(
            f"  geo     : longitude and latitude projected to km around {proj.ref_lat:.4f} deg N "
            "(equirectangular, centred on the public box), so the lengths above are on the ground"
            + (f"; sub-cells {_geo.format_km(model.grid.width)} wide" if model.spec.subcells > 1 else "")
        )
    source = model.metadata.get("bounds_source", "")
    if source.startswith("data"):
        lines.append(
            "  WARNING : bounds were computed from the data: this release has NO "
            "differential privacy guarantee"
        )
    if str(model.metadata.get("randomness", "")).startswith("seeded"):
        lines.append("  WARNING : seeded (reproducible, insecure) noise: for research, not for release")
    return "\n".join(lines)


def _report(written, failed) -> int:
    print("wrote " + ", ".join(written))
    for f in failed:
        print(
            f"dpdbscan fit: error: could not write {f}; the release itself was written to {written[0]}",
            file=sys.stderr,
        )
    return EXIT_PARTIAL if failed else EXIT_OK


def preload_matplotlib() -> threading.Thread:
    """Import matplotlib on a background thread while the release is made.

    Its import takes about 0.4 s of CPU and the picture is drawn only after
    the fit. ``fit`` starts it once the file is read: reading keeps both
    cores of a small machine busy, the fit (numpy on large arrays, mostly
    outside the GIL) only one. A failed import is left for the picture to
    report (the release is written first either way).
    """

    def load():
        try:
            plotting.preload()
        except Exception:  # noqa: BLE001 - reported when the picture is drawn
            pass

    thread = threading.Thread(target=load, name="dpdbscan-preload", daemon=True)
    thread.start()
    return thread


def cmd_fit(args: argparse.Namespace, sink: _Warnings) -> int:
    picture = picture_options(args)
    args.png_requested, args.geojson_requested = bool(args.png or picture), bool(args.geojson)
    p = check_fit_params(args)
    notes = Notes(args.quiet)
    paths = _out_paths(args, args.name or _stem(args.input))
    args.preload_png = paths["png"] is not None
    series = check_series(args, p) if wants_series(args) else None
    table = None if series is None else periods_path(args, args.name or _stem(args.input))
    unit = None if getattr(args, "unit", None) is None else str(args.unit)
    with charging(
        args,
        p,
        "fit",
        cost=None if series is None else series.cost,
        extra=None if series is None else {"series": series.record(unit)},
    ) as charged:  # --ledger: reserved before any record is read; a series once, at its whole cost
        model = fit_from_args(args, sink, p, p["min_samples"], notes, series)
        written, failed = _write_outputs(model, paths, notes, picture)
        if table is not None:
            write_periods_csv(model, table)
            written.append(str(table))
        charged(model, written)
    print(summary(model))
    if series is not None:
        print(
            f"  series  : {model.metadata['series']['statement']}; the privacy line above is the spans' part"
        )
    return _report(written, failed)
