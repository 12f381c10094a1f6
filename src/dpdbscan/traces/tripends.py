"""Trip ends: where a ride begins or ends, from a 0/1 status column.

A taxi's trace says at every point whether it carries a passenger (Cabs'
``occupied``). Per unit, in time order (:func:`dpdbscan.traces.order.trace_order`):

* a **pick-up** is the first point of a ride: a point with status 1 whose
  previous point has status 0;
* a **drop-off** is the last point of a ride: a point with status 1 whose
  next point has status 0.

Both are observed points aboard. A unit's first point is no pick-up and its
last no drop-off (the trace does not say whether the ride began or ended
there). The status of a row is 0 or 1 (numbers, booleans, or text such as
"0" and "1"); any other value, or none, drops that row alone, by the
per-record rule, before the order is read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .order import trace_order
from .times import parse_times

#: The events a status column gives.
ENDS = ("pickup", "dropoff", "both")


def parse_status(values: Any) -> np.ndarray:
    """Each row's status as 0.0 or 1.0, NaN where it is neither (missing,
    text that is not a number, 2, -1, ...)."""
    # numbers, booleans and numeric text by the time column's number rule;
    # an ISO date is a large number of seconds, hence no status
    s = parse_times(values)
    s[(s != 0.0) & (s != 1.0)] = np.nan
    return s


def trip_end_rows(
    X: np.ndarray, codes: np.ndarray, times: np.ndarray, status: np.ndarray, ends: str = "pickup"
) -> np.ndarray:
    """The rows (indices into ``X``, ascending) that are pick-ups, drop-offs
    or both (``ends``) by the module docstring's rules. ``status``: 0.0 or
    1.0 per row, NaN for a bad one (:func:`parse_status`); ``codes`` and
    ``times`` as for :func:`dpdbscan.traces.stops.stop_rows`."""
    if ends not in ENDS:
        raise ValueError(f"ends must be one of {', '.join(ENDS)}, got {ends!r}")
    X = np.asarray(X, dtype=np.float64)
    status = np.asarray(status, dtype=np.float64)
    times = np.where(np.isnan(status), np.nan, np.asarray(times, dtype=np.float64))
    rows = trace_order(X, np.asarray(codes), times)
    if rows.size < 2:
        return np.zeros(0, dtype=np.int64)
    c = np.asarray(codes)[rows]
    s = status[rows] == 1.0
    same = c[1:] == c[:-1]
    out = []
    if ends in ("pickup", "both"):
        out.append(rows[1:][same & ~s[:-1] & s[1:]])
    if ends in ("dropoff", "both"):
        out.append(rows[:-1][same & s[:-1] & ~s[1:]])
    return np.sort(np.concatenate(out))


__all__ = ["ENDS", "parse_status", "trip_end_rows"]
