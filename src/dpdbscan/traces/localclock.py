"""A zone's local clock to UTC, for many times at once.

A time without an offset (ISO text without one, a ``--time-format``
without ``%z``, a naive timestamp or date) is a wall-clock reading. With a
zone (``--tz``, :class:`~dpdbscan.traces.periods.Periods`' ``tz``) it is
read as that zone's local clock, exactly as Python reads
``datetime(..., tzinfo=ZoneInfo(zone))`` with ``fold=0``:

* a time in a fall-back fold (the repeated hour) is its first occurrence,
  at the offset in force before the change;
* a time in a spring-forward gap (02:30 on the night the clocks jump from
  02:00 to 03:00) is read at the offset before the change too, so it lands
  after the jump by as much as it is into the gap (02:30 PST is 03:30 PDT).

One value at a time, by the zone alone (public): no time decides how
another is read. Vectorised: the zone's UTC offsets and the wall-clock
times where they change are tabled once per zone (:func:`_table`, by
probing the zone every day of :data:`TABLED` and bisecting each change to
the second), and each time's offset is a binary search among them. Outside
the tabled years each distinct time asks the zone itself.
"""

from __future__ import annotations

import datetime as _dt
import functools
from typing import Any

import numpy as np

from .periods import zone

#: The years tabled (UTC, from the first's 1 January to the last's): times
#: outside them ask the zone one distinct value at a time (a slower loop).
TABLED = (1900, 2100)
#: The probe's step: the zones' changes of offset are at least a week apart
#: (the tz database's closest, Brazil's of October 2000: 601,200 s), so a
#: day's step sees each of them.
_STEP = 86_400
#: Times converted per block (the temporaries stay small on 11M rows).
_BLOCK = 1 << 20
_EPOCH = _dt.datetime(1970, 1, 1)
#: The seconds of datetime's range (years 1 to 9999) from 1970.
_FIRST = (_dt.datetime(1, 1, 1) - _EPOCH).total_seconds()
_LAST = (_dt.datetime(9999, 12, 31, 23, 59, 59) - _EPOCH).total_seconds()


def _offset_at(utc: int, tz: _dt.tzinfo) -> int:
    off = _dt.datetime.fromtimestamp(utc, tz).utcoffset()
    return 0 if off is None else int(off.total_seconds())


@functools.lru_cache(maxsize=32)
def _table(name: str) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``(walls, offsets, lo, hi)`` of zone ``name``: a wall-clock time w
    (seconds from 1970 as if UTC) in ``[lo, hi)`` has the offset
    ``offsets[searchsorted(walls, w, side="right")]``. A change of offset
    at UTC instant t from a to b starts, for fold=0, at the wall time
    t + max(a, b): below it the offset a (the first occurrence of a
    repeated hour, the offset before a gap), from it b (as zoneinfo reads)."""
    tz = zone(name)
    t0 = int(_dt.datetime(TABLED[0], 1, 1, tzinfo=_dt.UTC).timestamp())
    t1 = int(_dt.datetime(TABLED[1], 1, 1, tzinfo=_dt.UTC).timestamp())
    changes: list[tuple[int, int, int]] = []  # (UTC instant, offset before, offset from it)

    def find(lo: int, hi: int, a: int, b: int) -> None:
        # offset a at lo, b at hi, a != b: the changes in (lo, hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            m = _offset_at(mid, tz)
            if m != a:
                if m != b:  # two changes in one step: each half has one
                    find(mid, hi, m, b)
                hi, b = mid, m
            else:
                lo = mid
        changes.append((hi, a, b))

    before = first = _offset_at(t0, tz)
    for t in range(t0 + _STEP, t1 + _STEP, _STEP):
        now = _offset_at(t, tz)
        if now != before:
            find(t - _STEP, t, before, now)
        before = now
    changes.sort()
    walls = np.array([t + max(a, b) for t, a, b in changes], dtype=np.float64)
    offsets = np.array([first] + [b for _, _, b in changes], dtype=np.float64)
    # the wall-clock range whose offsets the table holds (a margin of a day for the zone's offset)
    return walls, offsets, float(t0 + 86_400), float(t1 - 86_400)


def to_utc(wall: np.ndarray, name: str) -> np.ndarray:
    """Seconds since 1970-01-01 UTC of wall-clock times ``wall`` (float
    seconds as if the clock were UTC; NaN stays NaN) read as zone
    ``name``'s local clock, fold=0 (the module docstring). A new array."""
    walls, offsets, lo, hi = _table(str(name))
    wall = np.asarray(wall, dtype=np.float64)
    out = np.empty_like(wall)
    for at in range(0, wall.shape[0], _BLOCK):
        w = wall[at : at + _BLOCK]
        out[at : at + _BLOCK] = w - offsets[np.searchsorted(walls, w, side="right")]
    with np.errstate(invalid="ignore"):
        outside = (wall < lo) | (wall >= hi)
    if outside.any():
        rows = np.flatnonzero(outside)
        values, where = np.unique(wall[rows], return_inverse=True)
        out[rows] = (values - np.array([_offset_of_wall(v, name, offsets) for v in values]))[where]
    return out


def _offset_of_wall(w: float, name: str, offsets: np.ndarray) -> float:
    """The zone's offset (seconds) at wall-clock time ``w``, fold=0, asked
    of the zone itself; beyond datetime's years 1 to 9999, the offset at the
    nearer end of the table."""
    if not _FIRST <= w <= _LAST:
        return float(offsets[0] if w < 0 else offsets[-1])
    when = (_EPOCH + _dt.timedelta(seconds=float(np.floor(w)))).replace(tzinfo=zone(name))
    off: Any = when.utcoffset()
    return 0.0 if off is None else off.total_seconds()


__all__ = ["TABLED", "to_utc"]
