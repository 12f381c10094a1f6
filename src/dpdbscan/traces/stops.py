"""Stops: where a unit stayed, one point per stay.

Per unit, in time order (:func:`dpdbscan.traces.order.trace_order`), a
**stop** is a maximal run of consecutive points that stays within ``radius``
of the point where it began (distance <= radius) and lasts at least
``duration`` (the time of its last point minus that of its first >=
duration). Runs are found greedily, as a person reading the trace would: from
the first point, take the longest run that stays within the radius; if it
lasts long enough it is a stop and the next run begins at the first point
that left the radius; if not, the next run begins at the very next point.

Only the reported fixes count, whatever the time between them: two
consecutive fixes ``duration`` or more apart within ``radius`` are a stop
(a fix every ten minutes, or a gap of hours with the device off), as the
definition reads. A unit seen at the same place before and after a gap was
there both times, most often parked; a bound on the gap would have no value
right for every sampling rate; and a unit adds at most once to a cell, so a
unit's own place (a home seen across nights) stays one unit, under any
MinPts that counts units (docs/places-study.md section 1). A stay shorter than
the sampling interval is seen at most once and makes no stop.

Each stop becomes **one point: the run's first point** (its anchor). Why the
first point and not the run's mean: the definition measures the run from
its first point, so every point of the stop lies within ``radius`` of it and
the anchor says where the unit was when it arrived; it is an observed
position (a mean of a run that wraps a corner can fall inside a building or
the bay) and costs nothing to compute. GPS noise while stationary is below
the radius by construction, so the mean would move the point by less than
``radius`` anyway.

Speed: the run test is sequential within a unit (a run's anchor depends on
where the previous run ended). Two scans give the same anchors bit for bit:
numpy's rounds (:mod:`dpdbscan.traces.stoprounds`: every point tried as an
anchor at once, offset by offset, then the greedy choice along each unit's
chain by doubling), for traces whose runs are short (a fix every minute or
more: Cabs-tiny 0.07 s of CPU), and one compiled loop
(:func:`dpdbscan.traces.stopscan.stop_anchors`, numba, imported here only)
that reads each trace once in the trace order, for traces of more than 1M
points or whose runs are long (a unit parked for hours with a fix every few
seconds). Numba's import and first call (about 0.45 s of CPU together) are
paid only there, where they are less than the vectorised scan they replaced
cost, which read every point's next points offset by offset over whole
arrays with no limit: in a fresh process, on full Cabs 1.4-1.8 s against
0.6-0.7 s all told, on a day of taxis sampled every 5-60 s 3.1-3.8 s against
0.5-0.8 s (docs/benchmarks.md).
"""

from __future__ import annotations

import numpy as np

from .order import trace_order
from .stoprounds import stop_anchors_rounds


def stop_rows(
    X: np.ndarray, codes: np.ndarray, times: np.ndarray, radius: float, duration: float
) -> np.ndarray:
    """The rows (indices into ``X``, ascending) that are the first points of
    the stops of the module docstring.

    ``codes``: each row's unit as an integer (< 0: no unit, the row is not
    used); ``times``: seconds (NaN: the row is not used); rows with a
    non-finite coordinate are not used either. ``radius`` is in ``X``'s
    units, ``duration`` in seconds, both > 0.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
    if not (np.isfinite(radius) and radius > 0 and np.isfinite(duration) and duration > 0):
        raise ValueError(f"radius and duration must be positive, got {radius!r} and {duration!r}")
    codes = np.asarray(codes).astype(np.int64, copy=False)
    times = np.asarray(times, dtype=np.float64)
    rows = trace_order(X, codes, times)
    if rows.size == 0:
        return rows
    r2, duration = float(radius) ** 2, float(duration)
    anchors = stop_anchors_rounds(X, rows, codes, times, r2, duration)
    if anchors is None:  # runs too long for numpy's rounds: the compiled scan
        # lazy: numba loads only where stops are made (never on a fit without them)
        from .stopscan import stop_anchors

        # C order: one layout, one compiled signature
        anchors = stop_anchors(np.ascontiguousarray(X), rows, codes, times, r2, duration)
    return np.sort(rows[anchors])


__all__ = ["stop_rows"]
