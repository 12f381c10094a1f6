"""The one door the private input comes through, for every caller.

The estimator (:class:`dpdbscan.DPDBSCAN`, :func:`dpdbscan.estimator.fit_lonlat`)
and the command line (``fit``, ``sweep``, ``check``) describe what to read in
a :class:`Source`, a typed record of public choices, and :func:`prepare`
returns the :class:`~dpdbscan.prepare.prepared.Points` the mechanism receives.
In order, once:

1. the points: an array in memory (checked, :func:`~dpdbscan.params.validation.check_array`),
   a file read by the one reader (:func:`read_file`: the columns, the unit's
   column, the lon/lat projection and the clipping counts block by block), or
   files and dask objects a distributed backend reads itself (only their
   number of coordinates is needed here: :func:`n_features_of`);
2. the public box (:func:`~dpdbscan.prepare.box.public_box`), projected to km
   with ``geo``;
3. the units (:func:`check_unit_ids`);
4. the per-unit transforms, :attr:`Source.transforms`, in their order (the
   hook for the preparation steps to come: stops, trip ends, periods);
5. the private notes (:func:`say_prepared`): what was read, dropped and clipped.

The release (:func:`dpdbscan.pipeline.fit`) then bounds each unit's
contribution and counts. Nothing in this package draws noise or spends budget.

Adding a preparation step: write it as a :data:`~dpdbscan.prepare.prepared.Transform`
(a function of the prepared points that returns new ones, one unit at a time)
and append it to :attr:`Source.transforms` where the caller builds its
:class:`Source` (the command line's :func:`dpdbscan.cli.fit.source_of`, the
estimator's ``fit``). A step that reads another column names it in the
:class:`Source` (``time_column``, ``status_column``: read beside the points
into ``Points.times`` and ``Points.status``); the worked example is
``--stops``/``--trip-ends`` (:func:`dpdbscan.cli.fitoptions.events_step`).
"""

from __future__ import annotations

import numbers
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..cells.grid import MAX_KAPPA, count_neighbours
from ..exceptions import private_note
from ..files import InputPlan, ReadOptions, check_parquet_columns, open_input, read_columns
from ..files.formats import LABEL_COLUMN, format_of, is_index_column, looks_like_unit
from ..files.layout import check_polyline_columns
from ..files.reader import InputPoints, release_arrow_memory
from ..files.records import BlockCounts
from ..files.unitids import read_units
from ..geometry.projection import LAT_NAMES, LON_NAMES, check_lonlat_names, default_geo_columns
from ..params.validation import check_array
from ..traces.times import chunks_of, seconds_of_parts
from .box import Box, public_box, split_bounds
from .clipping import BlockPrep, dropped_note, note_clipping, note_clipping_counted
from .notes import Notes
from .prepared import Points, Transform

#: The formats whose coordinates are their points' geometry, not columns a
#: user names with --columns (what a note about swapped coordinates advises).
GEOMETRY_FORMATS = {"geojson": "GeoJSON", "gpx": "GPX", "gpkg": "GeoPackage"}
#: The formats whose times are UTC by the format (GeoLife's PLT: GMT; GPX's
#: ``<time>``: UTC by the schema), even written without an offset: never
#: read as the local clock of ``--tz``.
UTC_FORMATS = frozenset({"plt", "gpx"})


@dataclass(frozen=True)
class Source:
    """What to prepare and how: public choices only (the points themselves
    aside).

    Attributes
    ----------
    data : array-like, dask object, path, glob or list of paths
        The private points, or where they are (``"-"``: standard input).
    read : ReadOptions, optional
        How to read a file with the one reader (the command line). None: the
        points are in memory, or a distributed backend reads them itself.
    bounds : optional
        The public box: the flat ``lower_1 .. lower_d upper_1 .. upper_d``
        (or two numbers) of ``--bounds`` and ``fit_lonlat`` when
        ``flat_bounds``, else the estimator's ``(lower, upper)``. None:
        taken from the points, which voids the guarantee (warned).
    geo, ref_lat :
        Longitude and latitude in degrees, projected to km around the box's
        centre (exact at ``ref_lat``); the bounds are then in degrees.
    units : optional
        The privacy unit: one id per row (in memory) or the unit column's
        name (a distributed backend). For a file read here it is
        ``read.unit``. None: each row is its own unit.
    bounds_label : str, optional
        Where the bounds came from, for the model's ``bounds_source``
        (``"--bounds"``, ``"fit_lonlat bounds"``; None: not recorded).
    cli : bool
        Errors and warnings in the command line's words (options by name).
    need_2d : tuple of str
        Options that need two coordinates (``--png``, ``--geojson``),
        refused before any record is read when the data have another number.
    progress : bool, optional
        The reader's progress bar (None: when standard error is a terminal).
    transforms : tuple of Transform
        The per-unit preparation steps, applied in order after the points
        are read, projected and their units checked, and before the release
        bounds each unit's contribution. Each must treat one unit's rows
        alone (see :data:`~dpdbscan.prepare.prepared.Transform`). In-memory
        points only.
    time_column, status_column : str, optional
        A trace's time and 0/1 status columns of a file (names or 0-based
        indices), read row for row with the points into
        :attr:`Points.times <dpdbscan.prepare.prepared.Points>` and ``status``
        for the steps above (``--time``, ``--trip-ends``).
    times, status : array-like, optional
        In memory, with ``events`` (``fit``'s ``times=`` and ``status=``):
        each row's time and status as given, carried row for row with the
        points through :attr:`transforms` (a step that drops a row drops its
        time and status), for the events to parse
        (:func:`dpdbscan.pipeline.events_of`). One value per row of the
        points, refused otherwise before any step. A file's are read from
        ``time_column`` and ``status_column`` instead.
    time_unit : str
        What a number of the time column counts (``--time-unit``: ``"s"``,
        ``"ms"``, ``"us"``, ``"ns"``). The times are read into float
        seconds here (:func:`dpdbscan.traces.parse_times`), in any unit.
    time_format : str, optional
        The layout of the time column's text (``--time-format``, the codes
        of ``datetime.strptime``): the times are read by it here, each
        value alone (:func:`dpdbscan.traces.times.parse_formatted`).
    time_zone : str, optional
        The zone whose local clock the time column's times without an
        offset are (``--tz`` of ``fit --per``, an IANA name): ISO text
        without an offset, a format without ``%z``, a naive timestamp. None:
        UTC. Unix seconds and times with an offset are read alike either
        way; so are PLT and GPX times, whose formats say UTC
        (:data:`UTC_FORMATS`).
    block_counter : callable, optional
        Called on every block of a file's rows once it is projected (on the
        reading threads, so thread-safe), with the rows as the mechanism will
        receive them: the command line counts the cells there while the file
        is read (:class:`dpdbscan.release.backends.numpy_backend.StreamedCounts`).
        Not called when the box cannot be set up from the bounds, or with
        preparation steps (which replace the rows).
    """

    data: Any
    read: ReadOptions | None = None
    bounds: Any = None
    flat_bounds: bool = False
    geo: bool = False
    ref_lat: float | None = None
    units: Any = None
    bounds_label: str | None = None
    cli: bool = False
    need_2d: tuple[str, ...] = ()
    progress: bool | None = None
    transforms: tuple[Transform, ...] = ()
    time_column: str | None = None
    times: Any = None
    status: Any = None
    time_unit: str = "s"
    time_format: str | None = None
    time_zone: str | None = None
    status_column: str | None = None
    block_counter: Callable[[np.ndarray], None] | None = None

    @property
    def columns(self) -> list[str] | None:
        cols = None if self.read is None else self.read.columns
        return None if cols is None else [str(c) for c in cols]

    @property
    def unit_column(self) -> str | None:
        """The unit's column, when the units are given by name."""
        if self.read is not None:
            return None if self.read.unit is None else str(self.read.unit)
        return self.units if isinstance(self.units, str) else None


def prepare(
    source: Source, *, eta: float, backend: Any = None, notes: Notes | None = None, stacklevel: int = 2
) -> Points:
    """The points the mechanism receives (:mod:`this module <dpdbscan.prepare.door>`'s steps 1-5).

    ``eta`` (the grid parameter) refuses, before any record is read, a
    number of columns no core test can evaluate; ``backend`` decides whether
    the points are read here (None: the numpy backend, or points already in
    memory) or by the backend; ``notes`` receives the private notes
    (None: none are said); ``stacklevel`` places a warning (as for
    :func:`warnings.warn`).
    """
    if in_memory(source, backend):
        if source.read is not None:
            pts = read_file(source, eta=eta, notes=notes)
            if notes is not None:
                # the rows as read, before any per-unit step makes them events
                say_read(source.data, pts.X, pts.names, notes)
        else:
            ragged = [0]
            X = check_array(source.data, width=_public_width(source), ragged=ragged, every_row=True)
            if ragged[0]:
                private_note(
                    f"{ragged[0]:,} row(s) of X of another length than the others (or than the "
                    "bounds) are dropped",
                    stacklevel=stacklevel + 1,
                )
            box = _box(source, X.shape[1], X, stacklevel + 1)
            if box.proj is not None:
                X = box.proj.forward(X)
            units = None if source.units is None else check_unit_ids(source.units, X, stacklevel + 1)
            times, status = _beside(source.times, X), _beside(source.status, X)
            pts = Points(
                X, None, box.lower, box.upper, box.proj, None, units, None, None, box.meta, times, status
            )
        pts = apply_transforms(pts, source.transforms)
        if notes is not None and source.read is not None:
            say_prepared(pts, source, notes)
        return pts
    return _distributed(source, eta, backend, stacklevel + 1)


def _beside(values: Any, X: np.ndarray) -> Any:
    """In-memory times or status (:attr:`Source.times`), one per row of
    ``X``: refused otherwise (public: their length), before a step takes
    their rows."""
    if values is not None and len(values) != X.shape[0]:
        raise ValueError("times (and status) must hold one value per row of X")
    return values


def _public_width(source: Source) -> int | None:
    """The number of columns the public bounds give (two with ``geo``; one
    lower and one upper bound per column), or None when they give one pair
    for every column (or none): the width a list's rows must have."""
    if source.geo:
        return 2
    b = source.bounds
    try:
        if b is None or len(b) != 2 and not source.flat_bounds:
            return None
        if source.flat_bounds:
            return len(b) // 2 if len(b) > 2 and len(b) % 2 == 0 else None
        n = int(np.atleast_1d(np.asarray(b[0], dtype=np.float64)).size)
    except (TypeError, ValueError):
        return None
    return n if n > 1 else None


def in_memory(source: Source, backend: Any) -> bool:
    """Whether the points are prepared here (the numpy backend, or points
    already in memory) rather than read by a distributed backend."""
    X = source.data
    if backend is None:
        return True
    if source.read is not None:
        return False
    return isinstance(X, np.ndarray) or (isinstance(X, (list, tuple)) and not _are_paths(X))


def _box(source: Source, d: int, X: np.ndarray | None, stacklevel: int = 2) -> Box:
    return public_box(
        source.bounds,
        d,
        flat=source.flat_bounds,
        geo=source.geo,
        ref_lat=source.ref_lat,
        X=X,
        label=source.bounds_label,
        cli=source.cli,
        stacklevel=stacklevel + 1,
    )


def _distributed(source: Source, eta: float, backend: Any, stacklevel: int = 2) -> Points:
    """Files or dask objects a distributed backend reads itself: only the
    public number of coordinates and the box are prepared here."""
    unit = source.unit_column
    if source.read is not None:
        local_formats_only(source.data, source.read)
    if source.cli:
        if unit is not None and (not source.columns or unit.isdigit()):
            raise ValueError(
                "--unit with --backend dask names a column of a Parquet schema or a declared CSV "
                "header, beside --columns for the coordinates (no 0-based index)"
            )
        if source.geo:
            raise ValueError(
                "--geo is not supported with --backend dask: the backend counts the "
                "file's own coordinates, so project lon/lat to km first"
            )
        if source.bounds is None:
            raise ValueError("--backend dask needs public --bounds (it never scans the data for them)")
    if source.transforms:
        raise ValueError("per-unit preparation steps need the points in memory (the numpy backend)")
    d = n_features_of(source, backend)
    check_columns(d, eta=eta, geo=source.geo, need_2d=source.need_2d, names=source.columns)
    box = _box(source, d, None)
    given = unit if unit is not None else source.units
    check_files = getattr(backend, "check_files", None)
    if callable(check_files) and not isinstance(given, str) and hasattr(given, "__dask_graph__"):
        # a unit column the backend reads lazily (a dask Series or array):
        # refused from how it was built (public) before read_units computes
        # it, where one record of a text reader's would fail the read
        check_files(given, 1)
    units = None if given is None else check_unit_ids(given, source.data, stacklevel + 1)
    read_names = None
    if callable(check_files):
        # the files' schemas (public) refused here, before a ledger charges the release
        time = None if source.time_column is None else str(source.time_column)
        read_names = check_files(source.data, d, unit=unit, time=time)
    return Points(
        source.data,
        source.columns,
        box.lower,
        box.upper,
        None,
        None,
        units,
        unit,
        None,
        box.meta,
        read_names=None if source.columns else read_names,
    )


def read_file(source: Source, *, eta: float, notes: Notes | None = None) -> Points:
    """Read the file of ``source`` with the one reader: the columns and the
    unit's column chosen from public input, the lon/lat projection and the
    clipping counts made block by block on the reading threads
    (:class:`~dpdbscan.prepare.clipping.BlockPrep`), the same checks and
    errors for ``fit`` and the dry run ``check``. What the reader dropped
    goes to ``notes`` (private; None: not said)."""
    assert source.read is not None
    bounds = None if source.bounds is None else [float(v) for v in source.bounds]
    prep = (
        None
        if bounds is None or source.transforms
        else BlockPrep(bounds, source.geo, source.ref_lat, source.block_counter)
    )
    d = declared_dimension(source.geo, bounds, source.columns)
    skip = _trace_skip(source)
    with _opened(source, eta) as plan:
        got = plan.read(source.progress, prep)
    if notes is not None:
        for line in got.notes():
            notes(line)
    X, names = got.X, got.names
    times = status = None
    if got.companions is not None and source.time_column is not None:
        # the trace's time and status, read in the points' own pass
        times, status = got.companions[0], (got.companions[1] if source.status_column is not None else None)
        got.companions = None  # the time column as read lives on in ``times`` alone (below)
    elif source.time_column is not None:
        # the trace's time and status: a second pass, row for row with the points
        times, status = read_columns(
            source.data,
            _token(source.time_column),
            None if source.status_column is None else _token(source.status_column),
            source.read,
            d=d,
            choose=_chooser(source.geo, skip=skip),
            progress=source.progress,
        )
    if times is not None:
        # float seconds, what every use of the times reads them as (parse_times
        # reads them back as they are); the column as read is let go chunk by
        # chunk as it is read, so that the times are never held twice (full
        # Cabs: 88 MB of int64 beside 88 MB of seconds)
        parts = chunks_of(times)
        del times
        tz = None if plan.format.kind in UTC_FORMATS else source.time_zone
        times = seconds_of_parts(parts, source.time_unit, source.time_format, tz)
        release_arrow_memory()
    box = _box(source, X.shape[1], X)
    counts = None if prep is None else prep.result(X.shape[0])
    if box.proj is not None and counts is None:
        # in place: X is this command's own copy of the file's values
        X = box.proj.forward(X, out=X) if X.flags.writeable else box.proj.forward(X)
    return Points(
        X,
        names,
        box.lower,
        box.upper,
        box.proj,
        counts,
        got.units,
        got.unit_name,
        plan.schema_names,
        box.meta,
        times,
        status,
        GEOMETRY_FORMATS.get(plan.format.kind),
    )


def check_lonlat_crs(plan: InputPlan) -> None:
    """Refuse --geo, before any record is read, on a file whose metadata
    declare another spatial reference than WGS 84 longitude/latitude (a
    GeoPackage layer's SRS: public)."""
    if plan.lonlat is False:
        raise ValueError(
            f"{plan.where}: --geo reads longitude/latitude in degrees (WGS 84, EPSG:4326), but the "
            f"layer's coordinates are in {plan.crs}; reproject the layer to EPSG:4326 (e.g. ogr2ogr "
            "-t_srs EPSG:4326), or fit its coordinates as they are without --geo"
        )


def _trace_skip(source: Source) -> tuple:
    """The columns the default choice of coordinates skips: the trace's time
    and status, read beside the points, and then the unit's."""
    assert source.read is not None
    trace = tuple(c for c in (source.time_column, source.status_column) if c is not None)
    return (*trace, source.read.unit) if trace else ()


@contextmanager
def _opened(source: Source, eta: float) -> Iterator[InputPlan]:
    """The file of ``source`` opened (:func:`dpdbscan.files.open_input`) and
    its layout checked from public input alone (the options, a declared
    header, a Parquet schema, a database's schema and a layer's declared
    spatial reference), before any record is read."""
    assert source.read is not None
    bounds = None if source.bounds is None else [float(v) for v in source.bounds]
    d = declared_dimension(source.geo, bounds, source.columns)
    choose = _chooser(source.geo, skip=_trace_skip(source))
    also = [_token(c) for c in (source.time_column, source.status_column) if c is not None]
    with open_input(source.data, source.read, d=d, choose=choose, also=also) as plan:
        check_polyline_columns(plan.names)
        check_columns(plan.d, eta=eta, geo=source.geo, need_2d=source.need_2d, names=plan.names)
        _check_trace_columns(source, plan.schema_names)
        if source.geo:
            # public names (--columns, a declared header, a Parquet schema) that say latitude first
            check_lonlat_names(plan.names)
            check_lonlat_crs(plan)
        if bounds is not None:
            # the command line's default columns: say how to choose others
            split_bounds(bounds, plan.d, source.geo, from_input=source.cli and not source.columns)
        yield plan


def check_source(source: Source, *, eta: float, backend: Any = None) -> None:
    """Every refusal of :func:`prepare` that public input decides, without
    reading any record: the options, the file's layout from its declared
    header or schema, a Parquet dataset none of whose files declares a read
    column (coordinates, unit, time, status), and a
    distributed backend's own checks of its files. A command that charges a
    ledger calls it first, so that what is refused from public input is
    refused before anything is charged. Standard input, a pipe or any other
    input that is not a regular file or a folder is not opened here (it can
    be read once, and opening a pipe waits for its writer)."""
    if not in_memory(source, backend):
        _distributed(source, eta, backend)
        return
    if source.read is None or not (os.path.isfile(source.data) or os.path.isdir(source.data)):
        return
    with _opened(source, eta):
        pass
    trace = [_token(c) for c in (source.time_column, source.status_column) if c is not None]
    if source.read.unit_from is None:
        check_parquet_columns(source.data, trace, source.read)


def check_layout_early(source: Source, *, eta: float) -> None:
    """For an SQLite, GeoPackage, GeoJSON, GPX or PLT input, or a folder of
    trace files (``--unit-from``), :func:`read_file`'s checks now, from the
    options, the schema, the metadata and a folder's listing alone (no row
    is read): a missing table, a column or unit the table lacks, a layer not
    in WGS 84 with --geo are refused before a ledger reserves anything, with
    or without a ledger. Other inputs are opened only when they are read (or
    by :func:`check_source` when a ledger charges)."""
    data, read = source.data, source.read
    if read is None or not isinstance(data, (str, os.PathLike)) or str(data) == "-":
        return
    if os.path.isdir(data):
        if read.unit_from is not None:
            with _opened(source, eta):  # a folder of trace files: its listing, no record
                pass
        return
    try:
        fmt = format_of(data, read.file_format)
    except ValueError:
        return  # said where the file is opened
    if (fmt.is_database or fmt.is_features) and os.path.exists(data):
        with _opened(source, eta):
            pass


def _token(column: str | int) -> str | int:
    return int(column) if str(column).isdigit() else column


def _check_trace_columns(source: Source, schema_names: Sequence[str] | None) -> None:
    """Refuse, before any record is read, a time or status column that a
    declared header or schema does not have (public names)."""
    wanted = (("--time", source.time_column), ("--trip-ends", source.status_column))
    for option, col in wanted:
        if col is None or schema_names is None:
            continue
        if str(col) not in map(str, schema_names) and not str(col).isdigit():
            # the declared header's or schema's names are public, as for --columns and --unit
            names = ", ".join(repr(str(n)) for n in list(schema_names)[:12])
            more = ", ..." if len(schema_names) > 12 else ""
            raise ValueError(
                f"{source.data}: {option} {col!r} is not a column of the file (columns: {names}{more})"
            )


def apply_transforms(pts: Points, transforms: Sequence[Transform]) -> Points:
    """The per-unit preparation steps, in order. The clipping counts made
    while reading describe the rows as read, so they are dropped for the
    notes to count the rows the release receives."""
    for step in transforms:
        pts = replace(step(pts), counts=None)
    return pts


def open_points(
    path: Any,
    read: ReadOptions,
    *,
    d: int | None,
    geo: bool = False,
    preferred: Sequence[str] | None = None,
) -> InputPlan:
    """How ``path`` will be read, decided from public input only (no record
    read): :func:`dpdbscan.files.open_input` with the default columns a
    model's own (``preferred``) or, with ``geo``, those named like
    longitude and latitude."""

    return open_input(path, read, d=d, choose=_chooser(geo, preferred))


def _chooser(geo: bool, preferred: Sequence[str] | None = None, skip: Sequence[str | int | None] = ()) -> Any:
    """The default columns of a declared header or schema: a model's own
    (``preferred``), else with ``geo`` those named like longitude and latitude,
    else, when ``skip`` names columns read beside the points (a trace's
    ``--time`` and ``--trip-ends`` status, and the ``--unit``: names or
    0-based indices), every column but those, ``label`` and unnamed index
    columns. Public: the names alone decide, never the values."""

    def choose(names, numeric):
        if preferred and all(c in names for c in preferred):
            return list(preferred)
        picked = default_geo_columns(names) if geo else None
        if picked is not None or not skip:
            return picked
        names = [str(n) for n in names]
        left = {_named(names, c) for c in skip if c is not None}
        rest = [
            n
            for i, n in enumerate(names)
            if i not in left and n.lower() != LABEL_COLUMN and not is_index_column(n)
        ]
        # lon/lat are two columns: any other count is the default's error, naming --columns
        return None if geo and len(rest) != 2 else rest

    return choose


def _named(names: Sequence[str], column: str | int) -> int | None:
    """The index of ``column`` (a name, else a 0-based index) among ``names``."""
    if str(column) in names:
        return list(names).index(str(column))
    return int(column) if str(column).isdigit() else None


def declared_dimension(
    geo: bool, bounds: Sequence[float] | None, columns: Sequence[str] | None
) -> int | None:
    """The number of coordinates public input fixes before the file is
    opened: 2 with --geo, one lower and one upper bound per column in
    --bounds, or the --columns given; None when none of them does."""
    if geo:
        return 2
    if bounds is not None and len(bounds) > 2 and len(bounds) % 2 == 0:
        return len(bounds) // 2
    return len(columns) if columns else None


def say_prepared(pts: Points, source: Source, notes: Notes) -> None:
    """The private notes on prepared points (after any per-unit step): a
    column that looks like a person's id when no unit is given, and what the
    per-record rule drops or clips. What was read is said before the steps
    (:func:`say_read`)."""
    if pts.unit_name is None:
        note_id_columns(pts.schema_names, pts.names)
    if not source.geo:
        note_lonlat_columns(pts.names)
    bounds = None if source.bounds is None else [float(v) for v in source.bounds]
    note_clipping(pts, notes, bounds, pts.counts)


def say_read(path: Any, X: np.ndarray, names: Sequence[str] | None, notes: Notes) -> None:
    """How many rows and columns were read, and from where (private)."""
    _say_rows(path, X.shape[0], X.shape[1], names, notes)


def _say_rows(path: Any, rows: int, d: int, names: Sequence[str] | None, notes: Notes) -> None:
    where = "standard input" if str(path) == "-" else path
    notes(f"read {rows:,} rows x {d} column(s) ({', '.join(names or ())}) from {where}")


def say_counted(path: Any, pts: Points, counts: BlockCounts | None, notes: Notes) -> None:
    """What a distributed backend read (its ``input_counts``, counts only),
    in the in-memory reader's words (:meth:`dpdbscan.files.reader.InputPoints.notes`
    and :func:`say_read`): the rows with a value that is not a number, the
    malformed lines, the rows with no unit, the rows read, dropped and
    clipped onto the box (:func:`~dpdbscan.prepare.clipping.note_clipping`'s
    words; private notes, counts only: nothing read from a record). None:
    the backend counted no file."""
    if counts is None:
        return
    d = int(np.asarray(pts.lower).size)
    # the columns as the in-memory reader names them: given, else the declared header's
    # or schema's (public), else a header-less file's field numbers
    names = pts.names or pts.read_names
    tally = InputPoints(
        np.empty((0, d)),
        list(names or ()),
        n_unparseable=counts.unparseable,
        n_malformed=counts.malformed,
        unit_name=pts.unit_name,
        n_missing_unit=counts.missing_unit,
    )
    for line in tally.notes():
        notes(line)
    _say_rows(path, counts.rows, d, names, notes)
    if counts.dropped:  # after the rows read, as the in-memory path says it (note_clipping)
        notes(dropped_note(counts.dropped, pts.unit_name is not None))
    # the rows clipped onto the box (no --geo with a distributed backend: the box as given)
    note_clipping_counted(counts, names, pts.lower, pts.upper, notes)


def note_lonlat_columns(chosen: Sequence[str] | None) -> None:
    """Say, without --geo, that the coordinates are named as longitude and
    latitude (public: the names of the columns chosen; no value is looked
    at): they are then plain numbers, eps is in degrees and a degree of
    longitude is counted as long as one of latitude."""
    names = [str(n) for n in chosen or ()]
    lon = next((n for n in names if n.lower() in LON_NAMES), None)
    lat = next((n for n in names if n.lower() in LAT_NAMES), None)
    if lon is None or lat is None:
        return
    print(
        f"dpdbscan: note: the columns {lon!r} and {lat!r} are named as longitude and latitude, but "
        "without --geo they are plain numbers: eps is in degrees and a degree of longitude counts "
        "as long as one of latitude. For distances on the ground pass --geo and give eps in metres "
        "(--eps 50m; docs/user-guide.md, geographic data)",
        file=sys.stderr,
    )


def note_id_columns(schema_names: Sequence[str] | None, chosen: Sequence[str] | None) -> None:
    """Say once, when no --unit is given, that each row is protected and not
    each person, if a column's name looks like a person's id (public: the
    declared header or the schema; no value is looked at). A chosen
    coordinate named as an id (the default columns take every column but
    ``label``: a table of sensor features beside its person's id) is said
    too: its rows of text ids are dropped, and a numeric id makes a
    dimension of its own."""
    skip = set(chosen or ())
    read_as_ids = [str(n) for n in chosen or () if looks_like_unit(str(n))]
    if read_as_ids:
        shown = ", ".join(repr(n) for n in read_as_ids[:3]) + (", ..." if len(read_as_ids) > 3 else "")
        print(
            f"dpdbscan: note: the column(s) {shown} read as coordinates look like an id, not a "
            "measurement (the default columns are every column but one named label): name "
            f"the coordinates with --columns, and protect each person with --unit {read_as_ids[0]} "
            "--max-cells-per-unit K (docs/user-guide.md, person-level privacy)",
            file=sys.stderr,
        )
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


def check_columns(
    d: int, *, eta: float, geo: bool = False, need_2d: Sequence[str] = (), names: Sequence[str] | None = None
) -> None:
    """Refuse, before anything is spent, a number of columns the release
    cannot use. Public: d, eta and the options."""
    if count_neighbours(d, eta) > MAX_KAPPA:  # public: d and eta
        raise ValueError(
            f"in d={d} at eta={eta:g} an eps-neighbourhood has {count_neighbours(d, eta):,} "
            f"cells, more than any core test can evaluate ({MAX_KAPPA:,}): the release could have no "
            "span, so nothing is released. Use fewer columns (--columns)"
        )
    if geo and d != 2:
        shown = f" ({', '.join(map(str, names))})" if names else ""
        raise ValueError(
            f"--geo needs exactly two columns (longitude, latitude), got {d}{shown}; "
            f"choose them with {geo_columns_hint(names)}"
        )
    if need_2d and d != 2:
        # every such option at once, and what is written without them
        named = " and ".join([", ".join(need_2d[:-1]), need_2d[-1]] if len(need_2d) > 1 else need_2d)
        raise ValueError(
            f"{named} {'need' if len(need_2d) > 1 else 'needs'} 2-D data, got {d} columns: the picture "
            "and the GeoJSON are drawn on the plane; without them fit writes the span model (JSON), "
            "and 'dpdbscan plot --kind tree' draws an automatic fit's tree in any dimension"
        )


def geo_columns_hint(names: Sequence[str] | None) -> str:
    """The --columns to suggest for --geo: ``x y`` when the columns (from a
    declared header or a schema, never a record) have those names, as the
    shared data sets name longitude and latitude; else the placeholder."""
    by_lower = {str(n).lower(): str(n) for n in names or ()}
    if "x" in by_lower and "y" in by_lower:
        x, y = (shlex.quote(by_lower[k]) for k in ("x", "y"))
        return f"--columns {x} {y} (longitude first)"
    return "--columns LON LAT"


def check_unit_ids(units: Any, X: Any, stacklevel: int | None = None) -> Any:
    """The units of in-memory rows, one id per row, read before anything is
    counted or spent (:func:`dpdbscan.files.unitids.read_units`: each id on
    its own, never through a type chosen from the others; an id of no
    readable type is missing, its row dropped, and with ``stacklevel`` a
    private note counts them). A column name is passed on to a distributed
    backend. Public checks only: the shape and the types of the arrays,
    never the values."""
    if isinstance(units, str):
        if isinstance(X, np.ndarray):
            raise ValueError(
                f"units must hold one id per row of X; a column name (units={units!r}) is only "
                "understood by the Dask backend. Pass the column itself, e.g. units=df[name]"
            )
        return units
    if hasattr(units, "toarray") or hasattr(units, "tocsr"):
        raise TypeError("units is a sparse matrix: give one id per row as a 1-D array")
    unreadable = [0]
    ids = read_units(units, unreadable)
    if unreadable[0] and stacklevel is not None:
        private_note(
            f"{unreadable[0]:,} unit id(s) of no readable type (not an integer, float, text or "
            "bytes) are read as missing: their rows are dropped",
            stacklevel=stacklevel + 1,
        )
    n = getattr(X, "shape", (None,))[0]
    if n is not None and len(ids) != n:
        raise ValueError(f"units has {len(ids)} ids but X has {n} rows: give one id per row")
    return ids


def _are_paths(X: object) -> bool:
    return isinstance(X, (str, os.PathLike)) or (
        isinstance(X, (list, tuple)) and len(X) > 0 and all(isinstance(p, (str, os.PathLike)) for p in X)
    )


def local_formats_only(data: Any, read: ReadOptions) -> None:
    """Refuse, before anything is read or charged, a file only the local
    reader reads (SQLite, GeoPackage, GeoJSON, GPX, PLT, a folder of trace
    files) when a distributed backend would read it (public: the names,
    ``--format`` and ``--unit-from``)."""
    if read.unit_from is not None:
        raise ValueError(
            f"{data}: --backend dask reads CSV and Parquet files, not a folder of trace files "
            "(--unit-from); read it with the default backend (drop --backend dask)"
        )
    paths = [data] if isinstance(data, (str, os.PathLike)) else data
    for p in paths if isinstance(paths, (list, tuple)) else ():
        if not isinstance(p, (str, os.PathLike)) or str(p) == "-" or os.path.isdir(p):
            continue
        try:
            fmt = format_of(p, read.file_format)
        except ValueError:
            continue  # the backend says what it cannot read
        if fmt.is_database or fmt.is_features:
            what = {"gpkg": "a GeoPackage", "geojson": "GeoJSON", "gpx": "GPX", "plt": "PLT"}.get(
                fmt.kind, "an SQLite database"
            )
            raise ValueError(
                f"{p}: --backend dask reads CSV and Parquet files, not {what}; read it with the "
                "default backend (drop --backend dask), or export the points as Parquet"
            )


def n_features_of(source: Source, backend: Any = None) -> int:
    """Number of coordinates of points a distributed backend reads itself,
    from public input only. On the command line: the --columns given, or
    one lower and one upper bound per column. Otherwise the backend's
    column rule first (it knows which columns it will read, from a schema or
    a header line, never a row; the unit column is not one), then shape,
    columns or bounds."""
    X, bounds = source.data, source.bounds
    if source.cli:
        columns = source.columns
        d = (
            len(columns)
            if columns
            else (len(bounds) // 2 if bounds is not None and len(bounds) > 2 else None)
        )
        if d is None:
            raise ValueError(
                "with --backend dask give --columns, or --bounds with one lower and one "
                "upper value per column"
            )
        return d
    counter = getattr(backend, "n_features", None)
    if callable(counter):
        unit = source.unit_column
        n = counter(X) if unit is None else counter(X, unit=unit)
        if isinstance(n, numbers.Integral):
            return int(n)
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and isinstance(shape[1], numbers.Integral):
        return int(shape[1])
    cols = getattr(X, "columns", None)
    if cols is not None:
        return len(cols)
    if bounds is not None:
        lo = np.atleast_1d(np.asarray(bounds[0]))
        return lo.size
    raise ValueError("cannot tell the number of features of X; pass bounds")
