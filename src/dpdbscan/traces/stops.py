"""Stops: where a unit stayed, one point per stay.

Per unit, in time order (:func:`dpdbscan.traces.order.trace_order`), a
**stop** is a maximal run of consecutive points that stays within ``radius``
of the point where it began (distance <= radius) and lasts at least
``duration`` (the time of its last point minus that of its first >=
duration). Runs are found greedily, as a person reading the trace would: from
the first point, take the longest run that stays within the radius; if it
lasts long enough it is a stop and the next run begins at the first point
that left the radius; if not, the next run begins at the very next point.

Each stop becomes **one point: the run's first point** (its anchor). Why the
first point and not the run's mean: the definition measures the run from
its first point, so every point of the stop lies within ``radius`` of it and
the anchor says where the unit was when it arrived; it is an observed
position (a mean of a run that wraps a corner can fall inside a building or
the bay) and costs nothing to compute. GPS noise while stationary is below
the radius by construction, so the mean would move the point by less than
``radius`` anyway.

Speed (no compiled loop): the run test is sequential within a unit, since a
run's anchor depends on where the previous run ended. Two vectorised passes
and a short loop make it cheap:

1. for every point i at once, scan i+1, i+2, ... (one numpy step per offset,
   over the points still undecided) until the run from i leaves the radius
   (i is then no stop) or reaches ``duration`` (i is a *candidate*). The
   work is the number of points within ``duration`` of each point, and a
   moving unit leaves the radius in a step or two;
2. the greedy chain then visits candidates only: from position k, the next
   anchor that is a stop is the first candidate at or after k (a
   non-candidate anchor always hands over to the next point), so the loop
   runs once per stop, finding where each stop ends by a doubling scan.
"""

from __future__ import annotations

import bisect

import numpy as np

from .order import trace_order, unit_ends

#: The first block of the doubling scan for a stop's end.
_FIRST_BLOCK = 32

#: Anchors per block of the candidates' first offset: its temporaries stay
#: small and in cache (whole-array temporaries of ten million rows cost
#: more in fresh memory than in arithmetic).
_BLOCK = 1 << 16


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
    rows = trace_order(X, np.asarray(codes), np.asarray(times, dtype=np.float64))
    if rows.size == 0:
        return rows
    cols = [X[rows, j] for j in range(X.shape[1])]
    c = np.asarray(codes)[rows]
    t = np.asarray(times, dtype=np.float64)[rows]
    r2 = float(radius) ** 2
    candidate, reach = _candidates(cols, c, t, r2, float(duration))
    ends = unit_ends(c)
    # Where each stop ends, for the anchors the chain surely visits: the first
    # candidate of every run of candidates (the chain reaches one through
    # non-candidates, which hand over to the next point). Others on demand.
    where = np.flatnonzero(candidate)
    starts = where[np.append(True, np.diff(where) > 1)] if where.size else where
    end_of = ends[np.searchsorted(ends, starts, side="right")]
    # and, for those, the candidate that the chain visits next (the first at
    # or after the stop's end; the end lies beyond the anchor)
    after = np.searchsorted(where, _run_ends(cols, starts, reach[starts] + 1, end_of, r2))
    known = dict(zip(starts.tolist(), after.tolist()))
    # the chain: from k, the next stop is the first candidate at or after k
    cands = where.tolist()
    bounds = ends.tolist()
    out = []
    i = 0
    while i < len(cands):
        k = cands[i]
        out.append(k)
        nxt = known.get(k)
        if nxt is None:
            unit_end = bounds[bisect.bisect_right(bounds, k)]
            e = _run_end(cols, k, int(reach[k]) + 1, unit_end, r2)
            nxt = bisect.bisect_left(cands, e, i + 1)
        i = nxt
    return np.sort(rows[np.asarray(out, dtype=np.int64)])


def _run_ends(
    cols: list[np.ndarray], anchors: np.ndarray, start: np.ndarray, end: np.ndarray, r2: float
) -> np.ndarray:
    """:func:`_run_end` of many anchors at once: offset by offset over the
    anchors whose run is still within the radius; the last few (long stays)
    one by one."""
    out = np.array(end, dtype=np.int64)
    pos = np.array(start, dtype=np.int64)
    alive = np.flatnonzero(pos < end)
    while alive.size > 64:
        j = pos[alive]
        d2 = np.zeros(alive.size)
        for col in cols:
            diff = col[j] - col[anchors[alive]]
            d2 += diff * diff
        far = d2 > r2
        out[alive[far]] = j[far]
        pos[alive] += 1
        alive = alive[~far]
        alive = alive[pos[alive] < end[alive]]
    for i in alive.tolist():
        out[i] = _run_end(cols, int(anchors[i]), int(pos[i]), int(end[i]), r2)
    return out


def _candidates(
    cols: list[np.ndarray], c: np.ndarray, t: np.ndarray, r2: float, duration: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(candidate, reach)``: whether the run from each point stays within
    the radius until ``duration`` has passed, and the first point where it
    has (``reach``; meaningful for candidates only).

    The first offset on shifted slices (contiguous, no gathers), block by
    block (:func:`_first_offset`): most points of a moving unit leave the
    radius at once. Then offset by offset
    on the undecided points only, carrying their own coordinates, unit and
    time along instead of gathering them again.
    """
    n = c.size
    candidate = np.zeros(n, dtype=bool)
    reach = np.empty(n, dtype=np.int64)
    if n < 2:
        return candidate, reach
    parts = []
    carry = n - 1  # the first long step at or after the block's end (none: n - 1)
    for lo in range(((n - 2) // _BLOCK) * _BLOCK, -1, -_BLOCK):
        hi = min(lo + _BLOCK, n - 1)
        alive, carry = _first_offset(cols, c, t, r2, duration, lo, hi, carry, candidate, reach)
        parts.append(alive)
    alive = np.concatenate(parts[::-1])
    # the undecided anchors' own values, filtered along with them
    own = [col[alive] for col in cols]
    unit, start = c[alive], t[alive]
    step = 2
    while alive.size:
        if alive[-1] + step >= n:  # a run that meets the end of the data stops there
            keep = alive + step < n
            alive, unit, start = alive[keep], unit[keep], start[keep]
            own = [v[keep] for v in own]
        j = alive + step
        d2 = np.zeros(alive.size)
        for col, v in zip(cols, own):
            diff = col[j] - v
            d2 += diff * diff
        within = (d2 <= r2) & (c[j] == unit)
        done = within & (t[j] - start >= duration)
        hit = alive[done]
        candidate[hit] = True
        reach[hit] = j[done]
        within &= ~done
        alive, unit, start = alive[within], unit[within], start[within]
        own = [v[within] for v in own]
        step += 1
    return candidate, reach


def _first_offset(
    cols: list[np.ndarray],
    c: np.ndarray,
    t: np.ndarray,
    r2: float,
    duration: float,
    lo: int,
    hi: int,
    carry: int,
    candidate: np.ndarray,
    reach: np.ndarray,
) -> tuple[np.ndarray, int]:
    """The first offset of :func:`_candidates` for the anchors ``lo <= i <
    hi`` (contiguous slices, no gathers): marks those whose next point
    already ends a lasting run, and returns the anchors still undecided after
    the pruning rule, with the first long step at or after ``lo`` (``carry``:
    the first at or after ``hi``)."""
    a, b = slice(lo, hi), slice(lo + 1, hi + 1)
    d2 = np.zeros(hi - lo)
    buf = np.empty(hi - lo)
    for col in cols:
        np.subtract(col[b], col[a], out=buf)
        np.multiply(buf, buf, out=buf)
        d2 += buf
    same = c[b] == c[a]
    within = d2 <= r2
    within &= same
    start = t[a]
    done = t[b] - start >= duration
    done &= within
    candidate[a] = done
    hit = np.flatnonzero(done) + lo
    reach[hit] = hit + 1
    within &= ~done
    # A necessary condition prunes most of the rest at once: two points of
    # one run are within 2 radius of each other, so a run from i ends at the
    # latest at the first step k >= i longer than that (or into another
    # unit), and it lasts only if t[k] - t[i] >= duration.
    jump = d2 > 4 * r2
    jump |= ~same
    first = np.where(jump, np.arange(lo, hi), carry)
    first = np.minimum.accumulate(first[::-1])[::-1]
    within &= t[first] - start >= duration
    return np.flatnonzero(within) + lo, int(first[0])


def _run_end(cols: list[np.ndarray], k: int, start: int, end: int, r2: float) -> int:
    """The first position in ``[start, end)`` whose point lies farther than
    the radius from point ``k``, else ``end``: blocks of doubling size."""
    size = _FIRST_BLOCK
    lo = start
    while lo < end:
        hi = min(lo + size, end)
        d2 = np.zeros(hi - lo)
        for col in cols:
            diff = col[lo:hi] - col[k]
            d2 += diff * diff
        far = np.flatnonzero(d2 > r2)
        if far.size:
            return lo + int(far[0])
        lo, size = hi, size * 2
    return end


__all__ = ["stop_rows"]
