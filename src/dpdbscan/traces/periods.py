"""Periods of a public time horizon: which period each time falls in.

A series of releases over time (hotspots per day, per week) is planned from
public inputs only: the kind of period (``hour``, ``day``, ``week``,
``month``), the horizon ``[start, end)`` and the time zone the calendar is
read in. None of them is taken from the data, like the box of the
coordinates: which periods exist, and how many, never depends on a record.

Periods are consecutive from ``start``: an hour is 3600 seconds; a day, a
week and a month follow the calendar of the time zone (a day across a
daylight-saving change has 23 or 25 hours, a month 28 to 31 days), so "each
Monday in Berlin" means local midnight even across the clock change. A week
starts on the weekday of ``start``; a month on its day of the month (a start
on the 31st is refused: not every month has one). ``end`` must fall on a
period's start, so that every period is whole.

A time (float seconds since 1970-01-01 UTC, :func:`dpdbscan.traces.parse_times`;
one written without an offset is read as the zone's local clock,
:mod:`dpdbscan.traces.localclock`) outside ``[start, end)``, or NaN, is in no period (index -1): its row is
dropped by the per-record rule, exactly as a bad coordinate is. Each time is
placed on its own (a binary search among the public edges).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

#: The kinds of period, by name.
KINDS = ("hour", "day", "week", "month")
#: At most this many periods in one horizon (a public limit on the table's size).
MAX_PERIODS = 100_000

_DATE = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?\s*$")


def zone(name: str | None) -> _dt.tzinfo:
    """The time zone named ``name`` (IANA, e.g. ``America/Los_Angeles``);
    UTC when None."""
    if name is None or str(name).upper() == "UTC":
        return _dt.UTC
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"--tz: unknown time zone {name!r} (an IANA name such as Europe/Paris)") from None


def parse_local(text: str, tz: _dt.tzinfo) -> _dt.datetime:
    """``YYYY-MM-DD`` or ``YYYY-MM-DDThh:mm[:ss]``, a wall-clock time in ``tz``."""
    m = _DATE.match(str(text))
    if m is None:
        raise ValueError(f"a date must be YYYY-MM-DD or YYYY-MM-DDThh:mm[:ss], got {text!r}")
    y, mo, d, h, mi, s = (int(g) if g is not None else 0 for g in m.groups())
    try:
        return _dt.datetime(y, mo, d, h, mi, s, tzinfo=tz)
    except ValueError as exc:
        raise ValueError(f"not a date: {text!r} ({exc})") from None


def _step(t: _dt.datetime, kind: str, n: int, tz: _dt.tzinfo) -> _dt.datetime:
    """The start of period ``n`` after ``t`` (a wall-clock time in ``tz``)."""
    if kind == "hour":
        utc = t.astimezone(_dt.UTC) + _dt.timedelta(hours=n)
        return utc.astimezone(tz)
    if kind in ("day", "week"):
        wall = t.replace(tzinfo=None) + _dt.timedelta(days=n * (7 if kind == "week" else 1))
        return wall.replace(tzinfo=tz)
    months = t.month - 1 + n
    return t.replace(year=t.year + months // 12, month=months % 12 + 1)


@dataclass(frozen=True)
class Periods:
    """A public plan of periods: ``kind`` from ``start`` to ``end`` in ``tz``.

    Attributes
    ----------
    edges : ndarray of float, shape (T + 1,)
        The periods' starts and the horizon's end, in seconds since
        1970-01-01 UTC; period i is ``[edges[i], edges[i + 1])``.
    starts : list of str
        Each period's start as ISO 8601 text with its UTC offset.
    """

    kind: str
    start: str
    end: str
    tz: str | None = None
    edges: np.ndarray = field(init=False, repr=False, compare=False)
    starts: list[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"--per must be one of {', '.join(KINDS)}, got {self.kind!r}")
        tz = zone(self.tz)
        t0, t1 = parse_local(self.start, tz), parse_local(self.end, tz)
        if not t1 > t0:
            raise ValueError(f"the horizon is empty: --to {self.end} is not after --from {self.start}")
        if self.kind == "month" and t0.day > 28:
            raise ValueError("--per month: --from must fall on day 1 to 28 (not every month has a 29th)")
        starts = [t0]
        while True:
            nxt = _step(t0, self.kind, len(starts), tz)
            if nxt.astimezone(_dt.UTC) >= t1.astimezone(_dt.UTC):
                break
            starts.append(nxt)
            if len(starts) > MAX_PERIODS:
                raise ValueError(f"more than {MAX_PERIODS:,} periods of one {self.kind} in the horizon")
        if nxt.astimezone(_dt.UTC) != t1.astimezone(_dt.UTC):
            raise ValueError(
                f"--to {self.end} is not the start of a period: the {self.kind}s from {self.start} "
                f"reach {nxt.isoformat()} after {self.end}; the horizon must be whole periods"
            )
        edges = np.array([s.timestamp() for s in starts] + [t1.timestamp()], dtype=np.float64)
        if np.any(np.diff(edges) <= 0):  # pragma: no cover - a gap in the calendar
            raise ValueError("the periods are not increasing in this time zone")
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "starts", [s.isoformat() for s in starts])

    @property
    def n_periods(self) -> int:
        return int(self.edges.size - 1)

    def index(self, times: np.ndarray) -> np.ndarray:
        """The period of each time (float seconds since 1970 UTC), -1 when it
        is NaN or outside ``[start, end)``."""
        t = np.asarray(times, dtype=np.float64)
        idx = np.searchsorted(self.edges, t, side="right") - 1
        ok = np.isfinite(t) & (idx >= 0) & (idx < self.n_periods)
        return np.where(ok, idx, -1).astype(np.int64)

    def record(self) -> dict:
        """The public plan, JSON-safe."""
        return {
            "per": self.kind,
            "from": self.start,
            "to": self.end,
            "tz": self.tz or "UTC",
            "n_periods": self.n_periods,
            "starts": list(self.starts),
        }


__all__ = ["KINDS", "MAX_PERIODS", "Periods", "parse_local", "zone"]
