"""The typed options of ``fit``, ``sweep`` and ``check`` (:class:`FitOptions`):
what the command line turns its namespace into at a command's entry, and
what the steps below it (the release, the ledger's charge, a series' plan)
read instead of the namespace.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from .._optional import require
from ..files import ReadOptions
from ..pipeline import events_rows
from ..prepare import Points, Source, Transform, check_source
from ..prepare.clipping import drop_outside_step
from ..release.backends import Backend
from ..traces import Events, Stops, TripEnds, parse_times, take_rows
from .common import Notes, floats, progress_flag, read_options_from_args

#: Options that go to the parameter table as they were parsed.
PRIVACY_OPTIONS = ("epsilon", "delta", "eta", "beta", "histogram", "noise", "theta")
#: Options the parameter table takes only when the command has them (and,
#: but for the unit bounds, only when given).
_OPTIONAL = ("max_cells", "n_expected", "selection")
_UNIT_BOUNDS = ("max_cells_per_unit", "max_points_per_cell", "cell_choice")
#: Options that become the :class:`FitOptions` field of their name as parsed.
_AS_PARSED = (
    "input",
    "eps",
    "subcells",
    "margin",
    "core",
    "border",
    "seed",
    "backend",
    "scheduler",
    "theoretical_threshold",
    "bounds_from_data",
    "ref_lat",
    "quiet",
)
#: The same for options only some commands have (None where absent).
_IF_PRESENT = ("unit", "ledger", "dataset", "time", "trip_ends", "per", "places_periods")


@dataclass(frozen=True)
class FitOptions:
    """The options of ``fit``, ``sweep`` and ``check`` that shape a release,
    typed: what the command line turns its namespace into at a command's
    entry (:meth:`from_args`). All public.

    ``eps`` and ``border`` are the texts given (lengths such as ``50m`` with
    ``geo``), ``min_samples`` the values given (a sweep's several),
    ``bounds_text`` the ``--bounds`` tokens (read as numbers by
    :attr:`bounds`, where the checks want it), ``params`` the privacy and
    optional parameters for the parameter table, ``need_2d`` the options
    that need two coordinates (``--png``, ``--geojson``), ``transforms``
    the per-unit preparation steps handed to the door
    (:attr:`dpdbscan.prepare.Source.transforms`), ``columns_text`` the
    ``--columns`` tokens as given, and ``ledger``/``dataset`` the budget
    ledger a release is charged to (:mod:`dpdbscan.cli.ledger`), ``events``
    the stops or trip ends each unit's rows become (``--stops``,
    ``--trip-ends``; read from ``time`` and ``trip_ends``, the columns).
    ``unit`` is the ``--unit`` column, or with ``--unit-from`` what one unit
    is (``"file"`` or ``"folder"``).
    """

    input: str
    read: ReadOptions
    eps: Any = None
    min_samples: tuple = (None,)
    params: Mapping[str, Any] = field(default_factory=dict)
    subcells: Any = "auto"
    margin: Any = "auto"
    core: Any = "density"
    border: Any = "auto"
    seed: int | None = None
    backend: str = "numpy"
    scheduler: str | None = None
    theoretical_threshold: bool = False
    bounds_text: tuple | None = None
    bounds_from_data: bool = False
    geo: bool = False
    ref_lat: float | None = None
    unit: str | None = None
    quiet: bool = False
    progress: bool | None = None
    need_2d: tuple[str, ...] = ()
    transforms: tuple[Transform, ...] = ()
    columns_text: tuple | None = None
    ledger: str | None = None
    dataset: str | None = None
    events: Events | None = None
    time: str | None = None
    time_unit: str = "s"
    time_format: str | None = None
    #: ``--tz`` of a series (``--per``): the zone whose local clock times without an offset are
    time_zone: str | None = None
    trip_ends: str | None = None
    per: str | None = None
    places_periods: int | None = None
    outside: str = "clip"

    @classmethod
    def from_args(cls, args: argparse.Namespace, need_2d: tuple[str, ...] = ()) -> FitOptions:
        """The command's options, typed: the boundary between argparse and
        the rest of the command line."""
        m = args.min_samples
        params = {name: getattr(args, name) for name in PRIVACY_OPTIONS}
        for name in _OPTIONAL:
            if getattr(args, name, None) is not None:
                params[name] = getattr(args, name)
        for name in _UNIT_BOUNDS:
            if hasattr(args, name):
                params[name] = getattr(args, name)
        as_parsed: dict[str, Any] = {name: getattr(args, name) for name in _AS_PARSED}
        as_parsed.update({name: getattr(args, name, None) for name in _IF_PRESENT})
        if getattr(args, "unit_from", None) is not None:
            # each file or sub-folder of the input folder is a unit: its name says what one unit is
            as_parsed["unit"] = args.unit_from
        return cls(
            **as_parsed,
            read=read_options_from_args(args),
            min_samples=tuple(m) if isinstance(m, (list, tuple)) else (m,),
            params=params,
            bounds_text=None if args.bounds is None else tuple(args.bounds),
            geo=bool(args.geo),
            progress=progress_flag(getattr(args, "no_progress", False)),
            need_2d=need_2d,
            columns_text=None if args.columns is None else tuple(args.columns),
            events=events_from_args(args),
            time_unit=getattr(args, "time_unit", None) or "s",
            time_format=getattr(args, "time_format", None),
            time_zone=getattr(args, "tz", None) if getattr(args, "per", None) is not None else None,
            outside=getattr(args, "outside", None) or "clip",
        )

    @property
    def columns(self) -> list[str] | None:
        return None if self.read.columns is None else [str(c) for c in self.read.columns]

    @property
    def bounds(self) -> list[float] | None:
        return None if self.bounds_text is None else floats(self.bounds_text, "--bounds")

    def dask_backend(self) -> Backend:
        """The Dask backend of ``--backend dask``: it reads the files itself,
        by the same public options as the local reader."""
        dask = require("dpdbscan.release.backends.dask_backend", "--backend dask", package="dask")
        return cast(Backend, dask.DaskBackend(scheduler=self.scheduler, read=self.read))

    def check_input(self, eta: float) -> None:
        """Every refusal that public input decides (the options, the file's
        declared header or schema, a Parquet dataset's read columns that no
        file declares, the Dask backend's own checks), without
        reading a record (:func:`dpdbscan.prepare.check_source`): made before
        ``--ledger`` charges a release, so that nothing is charged for a
        command refused from public input."""
        backend = self.dask_backend() if self.backend == "dask" else None
        check_source(self.source(), eta=eta, backend=backend)

    def source(self, notes: Notes | None = None) -> Source:
        """What the door prepares (:func:`dpdbscan.prepare.prepare`): with
        ``events``, the trace's columns and the step that makes each unit's
        events (its private note to ``notes``) after the door's own."""
        events = self.events
        # a series (--per) keeps each event's time: it falls in the period of its first point
        keep_times = self.per is not None
        step = None if events is None else events_step(events, notes, keep_times, self.places_periods)
        # --outside drop: first, so that the stops or trip ends are made of the rows inside the box
        first = (drop_outside_step(notes),) if self.outside == "drop" else ()
        steps = first + self.transforms + (() if step is None else (step,))
        return Source(
            self.input,
            read=self.read,
            bounds=self.bounds,
            flat_bounds=True,
            geo=self.geo,
            ref_lat=self.ref_lat,
            bounds_label="--bounds",
            cli=True,
            need_2d=self.need_2d,
            progress=self.progress,
            transforms=steps,
            time_column=None if events is None and self.per is None else self.time,
            time_unit=self.time_unit,
            time_format=self.time_format,
            time_zone=self.time_zone,
            status_column=self.trip_ends if events is not None and events.needs_status else None,
        )


def events_from_args(args: argparse.Namespace, *, reads: bool = True) -> Events | None:
    """``--stops`` or ``--trip-ends`` as a resolved transformation (public:
    the options alone), or None; refused with a message naming the option
    before any file is read. ``reads``: the command reads data, so the
    transformation needs ``--time``."""
    stops, ends_col = getattr(args, "stops", None), getattr(args, "trip_ends", None)
    time_col, ends = getattr(args, "time", None), getattr(args, "ends", None)
    if stops is not None and ends_col is not None:
        raise ValueError("give --stops or --trip-ends, not both (one release counts one kind of place)")
    codes = getattr(args, "status_values", None)
    if ends is not None and ends_col is None:
        raise ValueError("--ends goes with --trip-ends COLUMN")
    if codes is not None and ends_col is None:
        raise ValueError("--status-values goes with --trip-ends COLUMN")
    turn = getattr(args, "straight_on", None)
    if turn is not None and stops is None:
        raise ValueError("--straight-on goes with --stops")
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
            return Stops(*stops, *(() if turn is None else (turn,))).resolved(geo=geo)
        return TripEnds(ends or "pickup", None if codes is None else tuple(codes)).resolved(geo=geo)
    except ValueError as exc:
        option = "--stops" if stops is not None and "straight-on" not in str(exc) else "--straight-on"
        option = option if stops is not None else ("--ends" if codes is None else "--status-values")
        raise ValueError(f"{option}: {exc}") from None


def events_word(events: Events | None) -> str:
    """What a release counts, by name: ``"stop(s)"``, ``"pickup point(s)"``
    (each unit's events), or ``"row(s)"``."""
    if events is None:
        return "row(s)"
    return "stop(s)" if isinstance(events, Stops) else f"{events.ends} point(s)"


def events_step(
    events: Events, notes: Notes | None = None, keep_times: bool = False, places_periods: int | None = None
) -> Transform:
    """The door's per-unit step of ``--stops`` or ``--trip-ends``
    (:data:`dpdbscan.prepare.Transform`): each unit's stops or trip ends, one
    row each, from its own rows alone (:func:`dpdbscan.pipeline.events_of`,
    the estimator's too), with a private note of how many. ``keep_times``
    (a series over time): each event keeps its first point's time.
    ``places_periods`` (``--places-periods N``): the note says that it
    counts the events of all periods, the places coming from the first N."""

    def step(pts: Points) -> Points:
        n_rows = pts.X.shape[0]
        times = None
        X64 = np.asarray(pts.X, dtype=np.float64)
        rows = events_rows(events, X64, pts.units, pts.times, pts.status, notes=notes or (lambda _: None))
        X, units = (pts.X if keep_times else X64)[rows], take_rows(pts.units, rows)
        if keep_times:
            times = parse_times(take_rows(pts.times, rows))  # each value alone: the events' only
        what = events_word(events)
        if notes is not None and X.shape[0]:  # none: events_rows said why
            said = f"{X.shape[0]:,} {what} of the units found in {n_rows:,} rows are counted"
            if keep_times:
                # a series counts those in its periods alone: the others are dropped after, and counted
                said = (
                    f"{X.shape[0]:,} {what} of the units found in {n_rows:,} rows; the series counts "
                    "those whose time falls in its periods (the others are counted after the release)"
                )
            if places_periods is not None:
                said += (
                    f" (the events in all periods; the places are found from those of the first "
                    f"{places_periods:,} period(s))"
                )
            notes(said)
        return replace(pts, X=X, units=units, counts=None, times=times, status=None)

    return step
