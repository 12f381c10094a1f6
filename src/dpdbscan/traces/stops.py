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

**A pause on the way is not a stop** (``straight_on``, degrees; an
option: 0, the default, keeps every run; 30 is the studied angle). A unit held up in traffic (a jam, a level
crossing) can stay put as long as one that went somewhere, but it then goes
on the way it came; a unit that went to a place leaves it for its next
destination, whichever way that lies. So a run is dropped when the unit's
last fix before it farther than three radii from its anchor (B), the anchor
(A) and its first fix after the run farther than three radii from the
anchor (C) turn by less than ``straight_on`` degrees (the angle between
B -> A and A -> C); a run with no such fix before or after (a trace's ends)
is kept. Like the run itself, this reads the unit's own fixes only. What it
does, measured (docs/places-study.md section 3, "Jams: why they become
spans"): in synthetic cities (experiments/jam_cause.py) it drops 75% of the
stops that are jams at a fix every 5 s and about half at every 3 min, and
12% of the stops at places; on full Cabs 16% of the stops, and the 20 cells
where the most cabs stop keep 86-100% of their cabs.

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

Memory: on a long trace the stops' own arrays are most of what a fit with
stops touches beyond the person-level fit's, and fresh memory costs system
time (huge pages zeroed on first touch). So the unit codes stay the
Parquet dictionary's int32, a file that reads in trace order as it lies or
backwards (:func:`dpdbscan.traces.order.trace_steps`) is scanned with no
index of its rows, and the check that it does passes over blocks: on full
Cabs (11M fixes, newest first) 0.83 GB peak instead of 1.11 GB, the same
stops. The compiled scan's output grows as stops are found (it was one
entry per point, 88 MB of address space for full Cabs), and the times come
as float seconds, read once (:func:`dpdbscan.traces.parsed_inputs` uses them
as they are).
"""

from __future__ import annotations

import numpy as np

from .order import in_steps, trace_steps
from .stoprounds import rounds_may_take, stop_anchors_rounds

#: how far (in radii) from a stop's anchor the fixes that tell its coming and going lie
CONTEXT_RADII = 3.0


def stop_rows(
    X: np.ndarray,
    codes: np.ndarray,
    times: np.ndarray,
    radius: float,
    duration: float,
    straight_on: float = 0.0,
) -> np.ndarray:
    """The rows (indices into ``X``, ascending) that are the first points of
    the stops of the module docstring; ``straight_on`` > 0 (degrees): runs
    left straight on are dropped (:func:`straight_on_runs`).

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
    codes = np.asarray(codes)
    if codes.dtype not in (np.int32, np.int64):  # int32: a Parquet dictionary's own codes, no copy
        codes = codes.astype(np.int64)
    times = np.asarray(times, dtype=np.float64)
    order = trace_steps(X, codes, times)
    n = order.size if isinstance(order, np.ndarray) else codes.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    r2, duration = float(radius) ** 2, float(duration)
    rows = order if isinstance(order, np.ndarray) else (in_steps(order, n) if rounds_may_take(n) else None)
    if rows is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            # a coordinate near 1e308 makes a squared distance inf (beyond every
            # radius, as in the compiled scan, which says nothing); numpy's
            # warning of it would be one record's doing, and where warnings are
            # errors it would stop the fit (docs/privacy.md section 8, round 13)
            anchors = stop_anchors_rounds(X, rows, codes, times, r2, duration)
            if anchors is not None:
                if straight_on > 0 and anchors.size:
                    anchors = anchors[
                        ~straight_on_runs(X, rows, codes, anchors, float(radius), float(straight_on))
                    ]
                return np.sort(rows[anchors])
    # runs too long for numpy's rounds, or a trace too long for them: the compiled scan
    # lazy: numba loads only where stops are made (never on a fit without them)
    from .stopscan import stop_anchors, straight_on_flags

    # C order: one layout, one compiled signature; a file read in its own order
    # (or backwards) is scanned as it lies, without an index of its rows (step)
    Xc = np.ascontiguousarray(X)
    if rows is None:
        assert isinstance(order, int)
        step, at = order, np.zeros(0, dtype=np.int64)
    else:
        step, at = 0, rows
    anchors = stop_anchors(Xc, at, codes, times, r2, duration, step)
    if straight_on > 0 and anchors.size:  # numba loaded: the compiled walk too
        far2 = (CONTEXT_RADII * float(radius)) ** 2
        cos = float(np.cos(np.radians(float(straight_on))))
        anchors = anchors[~straight_on_flags(Xc, at, codes, anchors, r2, far2, cos, step)]
    return np.sort(_rows_at(anchors, rows, step, n))


def _rows_at(positions: np.ndarray, rows: np.ndarray | None, step: int, n: int) -> np.ndarray:
    """The rows at ``positions`` of the trace order: ``rows`` (``step`` 0),
    or every row forwards (1) or backwards (-1)."""
    if step == 0:
        assert rows is not None
        return rows[positions]
    return positions.copy() if step > 0 else (n - 1) - positions


def straight_on_runs(
    X: np.ndarray, rows: np.ndarray, codes: np.ndarray, anchors: np.ndarray, radius: float, degrees: float
) -> np.ndarray:
    """Which runs (``anchors``: positions in ``rows``, the trace order) the
    unit leaves straight on: its last fix before the run farther than
    :data:`CONTEXT_RADII` radii from the anchor (B), the anchor (A) and its
    first fix after the run that far from it (C), B -> A -> C turning by
    less than ``degrees``. False where B or C does not exist (the trace's
    ends). The run is the anchor's consecutive fixes within ``radius``, as
    the scans take it. numpy steps over the live anchors only, one fix at a
    time: exact, whatever the runs' lengths; where the stops came from the
    compiled scan, its compiled twin
    (:func:`dpdbscan.traces.stopscan.straight_on_flags`) gives the same flags."""
    n = rows.size
    u = codes[rows[anchors]]
    a = X[rows[anchors]]
    far2 = (CONTEXT_RADII * radius) ** 2

    def walk(start: np.ndarray, step: int, limit2: float) -> np.ndarray:
        """From ``start``, the last position (moving by ``step``) of the unit's
        consecutive fixes within sqrt(limit2) of the anchor."""
        at = start.copy()
        live = np.arange(start.size)
        while live.size:
            nxt = at[live] + step
            ok = (nxt >= 0) & (nxt < n)
            live, nxt = live[ok], nxt[ok]
            q = rows[nxt]
            d = X[q] - a[live]
            ok = (codes[q] == u[live]) & (_dots(d, d) <= limit2)
            live, nxt = live[ok], nxt[ok]
            at[live] = nxt
        return at

    end = walk(anchors, 1, radius * radius)
    after = walk(end, 1, far2) + 1
    before = walk(anchors, -1, far2) - 1
    has = (after < n) & (before >= 0)
    has[has] &= (codes[rows[after[has]]] == u[has]) & (codes[rows[before[has]]] == u[has])
    out = np.zeros(anchors.size, dtype=bool)
    if not has.any():
        return out
    come = a[has] - X[rows[before[has]]]
    go = X[rows[after[has]]] - a[has]
    dot = _dots(come, go)
    norms = np.sqrt(_dots(come, come) * _dots(go, go))
    out[has] = dot > np.cos(np.radians(degrees)) * norms
    return out


def _dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row by row, the sum of ``a * b`` over the axes in order, as the
    compiled walk (:func:`dpdbscan.traces.stopscan.straight_on_flags`) sums
    it: the same bits, so that which walk runs (which depends on the other
    units' traces) never changes a unit's flags. Not ``np.einsum``, whose
    sums of three or more axes round otherwise."""
    out = a[:, 0] * b[:, 0]
    for k in range(1, a.shape[1]):
        out += a[:, k] * b[:, k]
    return out


__all__ = ["CONTEXT_RADII", "stop_rows", "straight_on_runs"]
