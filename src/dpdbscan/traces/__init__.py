"""Places from traces: each unit's stops or trip ends, before bounding.

A trace is a unit's points in time order (a taxi's GPS fixes). Counting
every fix counts where units *pass*; the places they *go* are where they stop
(:mod:`.stops`) or where their rides begin and end (:mod:`.tripends`). Each
is a function of one unit's rows alone, applied to every unit before its
contribution is bounded; docs/privacy.md §1 says why the unit-level guarantee
then holds unchanged. What steers it (the radius, the duration, which columns,
how times are read, :mod:`.times`) is public and fixed before any row is read.

:class:`Stops` and :class:`TripEnds` are the two transformations, as the
estimator's ``events`` parameter and the command line's ``--stops`` and
``--trip-ends`` build them; :func:`event_rows` applies one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .stops import stop_rows
from .times import parse_duration, parse_times, read_as_they_are
from .tripends import ENDS, parse_status, trip_end_rows

_LENGTH = re.compile(r"^\s*([+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zA-Z]*)\s*$")
_TO_KM = {"m": 1e-3, "km": 1.0}
#: Stops' default ``straight_on`` (degrees): 0, every run is a stop. 30 drops runs left
#: straight on as pauses on the way (jams); it helped synthetic cities but not full Cabs'
#: automatic stops (docs/places-study.md section 3), so it is an option, not the default.
STRAIGHT_ON = 0.0


@dataclass(frozen=True)
class Stops:
    """Each unit's stops (:mod:`dpdbscan.traces.stops`): runs of points
    within ``radius`` of their first point for at least ``duration``
    seconds, one point (the first) per run.

    ``radius`` is in the fit's coordinates: km for ``fit_lonlat`` and
    ``--geo`` (where text such as ``"100m"`` is accepted), else the data's
    own units. ``duration``: seconds, or text such as ``"5min"``.
    ``straight_on`` (degrees, default :data:`STRAIGHT_ON`, 0: every run is
    kept): above 0, a run the unit leaves going on the way it came (turning
    by less than this) is a pause on the way (a jam), not a stop, and is
    dropped (:mod:`dpdbscan.traces.stops`; 30 is the studied angle).
    """

    radius: float | str
    duration: float | str
    straight_on: float = STRAIGHT_ON

    needs_status = False

    def resolved(self, *, geo: bool) -> Stops:
        """The same stops with ``radius`` in the fit's units and
        ``duration`` in seconds (ValueError naming the bad one)."""
        return Stops(
            parse_radius(self.radius, geo=geo), parse_duration(self.duration), parse_turn(self.straight_on)
        )

    def rows(self, X: np.ndarray, codes: np.ndarray, times: np.ndarray, status: Any = None) -> np.ndarray:
        r = self.resolved(geo=False) if isinstance(self.radius, str) else self
        turn = parse_turn(r.straight_on)
        return stop_rows(X, codes, times, float(r.radius), parse_duration(r.duration), turn)

    def record(self) -> dict[str, Any]:
        out = {"kind": "stops", "radius": float(self.radius), "duration_s": parse_duration(self.duration)}
        turn = parse_turn(self.straight_on)
        if turn > 0:  # the default (0) writes the record releases had before the option
            out["straight_on_deg"] = turn
        return out


@dataclass(frozen=True)
class TripEnds:
    """Each unit's trip ends (:mod:`dpdbscan.traces.tripends`) from a 0/1
    status: ``"pickup"`` (a ride's first point), ``"dropoff"`` (its last)
    or ``"both"``. ``values=(free, carrying)``: the status column's two
    codes when it holds other text (``("free", "hired")``) or numbers
    (``(1, 2)``); by default 0/1, booleans, or the text 0/1 or true/false."""

    ends: str = "pickup"
    values: tuple[str, str] | None = None

    needs_status = True

    def resolved(self, *, geo: bool) -> TripEnds:
        if self.ends not in ENDS:
            raise ValueError(f"trip ends must be one of {', '.join(ENDS)}, got {self.ends!r}")
        if self.values is None:
            return self
        codes = self.values
        if isinstance(codes, (str, bytes)) or len(codes) != 2:
            raise ValueError(
                f"the status values are two codes (free, carrying), such as ('free', 'hired'), got {codes!r}"
            )
        free, carrying = (str(c).strip(" \t") for c in codes)
        if not free or not carrying or free == carrying:
            raise ValueError(
                f"the status values must be two different non-empty codes (free, carrying), got {codes!r}"
            )
        return replace(self, values=(free, carrying))

    def status_of(self, status: Any) -> np.ndarray:
        """Each row's status as 0.0 (free) or 1.0 (carrying), NaN for a bad one."""
        return parse_status(status, self.resolved(geo=False).values)

    def rows(self, X: np.ndarray, codes: np.ndarray, times: np.ndarray, status: Any = None) -> np.ndarray:
        if status is None:
            raise ValueError("trip ends need a status column (0 free, 1 carrying): pass status=")
        return trip_end_rows(X, codes, times, status, self.ends)

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "trip ends", "ends": self.ends}
        if self.values is not None:
            out["status_values"] = list(self.resolved(geo=False).values or ())
        return out


Events = Stops | TripEnds


def parse_turn(value: Any) -> float:
    """A straight-on angle in degrees, 0 (keep every run) to 180."""
    if isinstance(value, bool):
        raise ValueError(f"the straight-on angle is a number of degrees from 0 to 180, got {value!r}")
    try:
        deg = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"the straight-on angle is a number of degrees from 0 to 180, got {value!r}"
        ) from None
    if not (0.0 <= deg <= 180.0):
        raise ValueError(f"the straight-on angle is a number of degrees from 0 to 180, got {value!r}")
    return deg


def parse_radius(text: str | float, *, geo: bool) -> float:
    """A stop radius: a number (km with ``geo``, else the data's units) or,
    with ``geo``, a length such as ``"100m"`` or ``"0.1km"``."""
    if isinstance(text, (int, float, np.integer, np.floating)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _LENGTH.match(str(text))
        unit = m.group(2).lower() if m else None
        if m is None or (unit and unit not in _TO_KM):
            raise ValueError(f"the stop radius must be a number or a length such as 100m, got {text!r}")
        if unit and not geo:
            raise ValueError(
                f"the stop radius {text!r} has a unit, which only makes sense for lon/lat data "
                "(--geo, fit_lonlat); otherwise it is in the units of the data"
            )
        if geo and not unit:
            raise ValueError(
                f"with lon/lat data give the stop radius with a unit (100m, 0.1km), got {text!r}"
            )
        value = float(m.group(1)) * (_TO_KM[unit] if unit else 1.0)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"the stop radius must be positive, got {text!r}")
    return value


def parsed_inputs(events: Events, times: Any, status: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``(times, status)`` as read, parsed: float seconds and, for trip ends,
    0.0/1.0 (NaN where a value is missing or unreadable: its row is dropped).
    Times already in float seconds (:func:`.times.read_as_they_are`) are
    returned as they are, not copied: the callers only read them."""
    t = times if read_as_they_are(times) else parse_times(times)
    s = events.status_of(status) if isinstance(events, TripEnds) and status is not None else None
    return t, s


def event_rows(
    events: Events, X: np.ndarray, codes: np.ndarray, times: Any, status: Any = None, *, parsed: bool = False
) -> np.ndarray:
    """The rows of ``X`` (ascending indices) that the transformation keeps:
    one per stop or trip end, each unit's from its own rows only.

    ``codes``: each row's unit as an integer (< 0: none); ``times`` and
    ``status`` as read (parsed here by :func:`parsed_inputs`; a bad value
    drops its row), or already parsed by it (``parsed``)."""
    t, s = (times, status) if parsed else parsed_inputs(events, times, status)
    if t.shape[0] != X.shape[0] or (s is not None and s.shape[0] != X.shape[0]):
        raise ValueError("times (and status) must hold one value per row of X")
    return events.rows(X, codes, t, s)


#: 3000-01-01 in unix seconds: a number of seconds beyond it is most likely
#: milliseconds (:func:`unreadable_note`).
FAR_FUTURE = 32_503_680_000.0


def unreadable_note(events: Events, times: np.ndarray, status: np.ndarray | None) -> str | None:
    """A private note (it counts rows of the data) of the rows dropped for a
    time or status that is missing or unreadable, from :func:`parsed_inputs`'
    values; None when every row has both. Never quotes a value."""
    bad_t = int(np.count_nonzero(np.isnan(times)))
    bad_s = 0 if status is None else int(np.count_nonzero(np.isnan(status) & ~np.isnan(times)))
    # after the year 3000 as seconds: most likely milliseconds (a note; the rows are kept)
    late = int(np.count_nonzero(times > FAR_FUTURE))
    parts = []
    if late:
        parts.append(
            f"{late:,} of {times.shape[0]:,} row(s) have times after the year 3000 as unix seconds: if "
            "the column counts milliseconds, give --time-unit ms (in Python, times in seconds)"
        )
    if not bad_t and not bad_s:
        return parts[0] if parts else None
    if bad_t:
        parts.append(
            f"{bad_t:,} of {times.shape[0]:,} row(s) have no readable time (unix seconds, ISO 8601 "
            "text, a timestamp, or text in the layout of --time-format where one is given)"
        )
        if 2 * bad_t > times.shape[0]:
            # most rows: the column or its form, not a few bad rows (the counts only, no value)
            parts[-1] += (
                ": check that --time names the time column; ISO text gives its zone as an offset "
                "(Z, +02:00, -0700), not by name (PDT, Europe/Paris); text in another layout is "
                "read with --time-format, e.g. '%d/%m/%Y %H:%M:%S' for 02/03/2026 05:39:04 (day "
                "first)"
            )
    if bad_s:
        codes = getattr(events, "values", None)
        read = f"{codes[0]} or {codes[1]}" if codes else "0/1, a boolean or the text true/false"
        parts.append(f"{bad_s:,} more no status read as {read}")
        if codes is None:
            parts[-1] += (
                " (a status in other codes needs --status-values FREE CARRYING; in Python "
                "TripEnds(values=(free, carrying)))"
            )
    dropped = "; ".join(parts[1:] if late else parts) + ": dropped before the units' events are found"
    return "; ".join(parts[:1] + [dropped]) if late else dropped


def no_events_note(events: Events, n_rows: int) -> str:
    """A private note (it counts rows of the data) for when no unit's rows
    made a single stop or trip end: what was looked for, what the release
    then holds, and which options to check. Never quotes a value."""
    if isinstance(events, Stops):
        what = "stop"
        rule = (
            "a stop is a run of one unit's points, in time order, that stays within the radius of its "
            "first point for at least the duration: check --stops RADIUS DURATION, --time and "
            "--time-unit (times in milliseconds read as seconds make every run too short); in "
            "Python events=Stops(radius, duration) and times="
        )
    else:
        what = {"pickup": "pick-up", "dropoff": "drop-off"}.get(events.ends, "trip end")
        rule = (
            "a trip end is where one unit's status changes between its two values in time order: "
            "check the column given to --trip-ends, --status-values (codes other than 0/1 or "
            "true/false) and --ends; in Python events=TripEnds(...) and status="
        )
    return (
        f"no {what} was found in {n_rows:,} rows: the release counts nothing but its "
        f"noise, and is made all the same (whether a release is made never depends on the data); {rule}"
    )


def event_words(record: dict[str, Any], length: Any = lambda v: f"{v:g}") -> str:
    """What a release counted instead of the rows, from its public record
    (:meth:`Stops.record`, :meth:`TripEnds.record`); ``length`` formats the
    radius (m or km for lon/lat)."""
    if record.get("kind") == "stops":
        minutes = record["duration_s"] / 60
        return (
            f"each unit's stops, not its rows: runs of its points (in time order) that stay within "
            f"{length(record['radius'])} of their first point for at least {minutes:g} min, one point "
            "(the first) per stop"
        )
    ends = {"pickup": "pick-ups (a ride's first point)", "dropoff": "drop-offs (a ride's last point)"}
    what = ends.get(record.get("ends", ""), "pick-ups and drop-offs (a ride's first and last points)")
    column = record.get("status_column")
    codes = record.get("status_values")
    said = f", from the status column {column}" if column else ""
    if codes:
        said += f" ({codes[0]}: free, {codes[1]}: carrying)"
    return f"each unit's {what}, not its rows" + said


def group_codes(units: Any) -> np.ndarray | None:
    """Integer codes that group rows by unit (-1: no unit), read straight
    from a pyarrow dictionary column whose dictionary holds each unit once
    (what the Parquet reader gives for a dictionary-encoded unit); None for
    any other input (the caller factorizes it). Only the grouping matters
    to the events, not which code a unit gets. int32 where the dictionary's
    indices fit (int32, as Parquet's are, or narrower), else int64."""
    if type(units).__module__.split(".")[0] != "pyarrow":
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(units.type):
        return None
    if isinstance(units, pa.ChunkedArray):
        if any(c.dictionary.null_count for c in units.chunks):
            return None  # unify_dictionaries refuses a null value: the caller factorizes
        try:
            units = units.unify_dictionaries()
        except pa.ArrowCapacityError:
            return None  # more than 2 GiB of distinct ids: the caller factorizes with 64-bit offsets
        if units.num_chunks == 0:
            return np.zeros(0, dtype=np.int64)
        dictionary = units.chunk(0).dictionary
        chunks = [c.indices for c in units.chunks]
    else:
        dictionary, chunks = units.dictionary, [units.indices]
    if pa.types.is_floating(dictionary.type):
        if pc.any(pc.is_nan(dictionary)).as_py():
            return None
        # by value, as the bounding reads a float id: -0.0 and 0.0 (two
        # entries of an Arrow dictionary) are one unit, so the dictionary
        # then holds a unit twice and the caller factorizes
        dictionary = pc.add(dictionary, 0.0)
    if dictionary.null_count or pc.count_distinct(dictionary).as_py() != len(dictionary):
        return None
    # chunk by chunk into one array, int32 where the indices fit (a Parquet
    # dictionary's are int32): no combined copy of the column and no int64
    # one (for full Cabs 44 MB and 88 MB of fresh memory)
    index = chunks[0].type
    narrow = pa.types.is_int32(index) or index.bit_width < 32
    codes = np.empty(sum(len(c) for c in chunks), dtype=np.int32 if narrow else np.int64)
    at = 0
    for c in chunks:
        codes[at : at + len(c)] = (pc.fill_null(c, -1) if c.null_count else c).to_numpy(zero_copy_only=False)
        at += len(c)
    return codes


def take_rows(units: Any, rows: np.ndarray) -> Any:
    """``units`` (a numpy, pyarrow or pandas array, or a list) at ``rows``.
    A pandas object or a list keeps its kind (a list of times as given is
    not made one numpy array, whose dtype the other values would choose),
    so that what reads the values later reads each as it would have."""
    kind = type(units).__module__.split(".")[0]
    if kind == "pyarrow":
        import pyarrow as pa

        return units.take(pa.array(rows))
    if kind == "pandas":
        return units.take(rows)
    if isinstance(units, (list, tuple)):
        return [units[i] for i in rows]
    return np.asarray(units)[rows]


__all__ = [
    "ENDS",
    "Events",
    "Stops",
    "TripEnds",
    "event_rows",
    "event_words",
    "no_events_note",
    "group_codes",
    "parse_duration",
    "parse_radius",
    "parse_status",
    "parse_times",
    "parsed_inputs",
    "take_rows",
    "unreadable_note",
]
