"""The compiled scan of :mod:`dpdbscan.traces.stops`: each unit's trace
read once, as a person reading it would.

Imported only inside :func:`dpdbscan.traces.stops.stop_rows`, when numpy's
rounds (:mod:`dpdbscan.traces.stoprounds`) would be slow: numba's import and
first call cost about 0.45 s, which a fit without stops, or with stops of a
trace whose runs are short, must not pay.
Every point is read through the trace order instead of being copied into
that order first: ``rows``, or, for a file that already reads in that
order forwards or backwards (``step`` 1 or -1,
:func:`dpdbscan.traces.order.trace_steps`: full Cabs, newest first), no
array at all: the reads are sequential and no index of every row is made.
"""

from __future__ import annotations

import numpy as np

from .._jit import inlined, kernel

#: The stops :func:`stop_anchors` first makes room for (doubled when full).
FIRST_ROOM = 1 << 12


@inlined
def _row(rows: np.ndarray, i: int, n: int, step: int) -> int:
    """The row at position ``i`` of the trace order: ``rows[i]`` (``step``
    0), ``i`` (1) or ``n - 1 - i`` (-1)."""
    if step == 0:
        return rows[i]
    if step > 0:
        return i
    return n - 1 - i


@kernel
def stop_anchors(
    X: np.ndarray,
    rows: np.ndarray,
    codes: np.ndarray,
    times: np.ndarray,
    r2: float,
    duration: float,
    step: int = 0,
) -> np.ndarray:
    """The positions in the trace order of the stops' first points (ascending).

    ``rows``: the trace order (each unit's rows together, in time order),
    or, with ``step`` 1 or -1, every row forwards or backwards (``rows``
    unread); ``codes``, ``times`` and ``X`` are indexed by row. From each anchor the
    run extends while the next point of the same unit lies within the
    radius (squared distance <= ``r2``, summed over the axes in order, as
    numpy would); the run is a stop when its last point is at least
    ``duration`` after the anchor, and the next anchor is then the first
    point that left, else the very next point.

    Work: a stop is read once; an anchor that is no stop reads only the
    points until it leaves the radius or the run reaches ``duration`` (past
    which it is a stop), so a moving unit costs a step or two a point.
    """
    n = rows.shape[0] if step == 0 else codes.shape[0]
    d = X.shape[1]
    # grown as stops are found (at most one a point): not one entry per
    # point (88 MB of address space for full Cabs, its stops a few percent)
    out = np.empty(min(n, FIRST_ROOM), np.int64)
    m = 0
    i = 0
    while i < n:
        a = _row(rows, i, n, step)
        unit = codes[a]
        start = times[a]
        j = i + 1
        lasting = False
        while j < n:
            b = _row(rows, j, n, step)
            if codes[b] != unit:
                break
            d2 = 0.0
            for k in range(d):
                diff = X[b, k] - X[a, k]
                d2 += diff * diff
            if d2 > r2:
                break
            if not lasting and times[b] - start >= duration:
                lasting = True
            j += 1
        if lasting:
            if m == out.shape[0]:
                grown = np.empty(min(n, 2 * m), np.int64)
                grown[:m] = out
                out = grown
            out[m] = i
            m += 1
            i = j
        else:
            i += 1
    return out[:m]


@kernel
def straight_on_flags(
    X: np.ndarray,
    rows: np.ndarray,
    codes: np.ndarray,
    anchors: np.ndarray,
    r2: float,
    far2: float,
    cos: float,
    step: int = 0,
) -> np.ndarray:
    """:func:`dpdbscan.traces.stops.straight_on_runs` compiled, for traces
    whose stops come from :func:`stop_anchors` (numba already loaded): per
    anchor, the run (the next points within ``r2``), then the first point
    after it and the last before the anchor farther than ``far2`` (squared,
    summed over the axes in order, as numpy would); True where both exist
    and coming and going turn by less than the angle whose cosine is ``cos``.
    ``rows`` and ``step`` as for :func:`stop_anchors`."""
    n = rows.shape[0] if step == 0 else codes.shape[0]
    d = X.shape[1]
    out = np.zeros(anchors.shape[0], np.bool_)
    for q in range(anchors.shape[0]):
        i = anchors[q]
        a = _row(rows, i, n, step)
        unit = codes[a]
        j = i
        limit = r2
        while j + 1 < n:  # the run, then on while within far
            b = _row(rows, j + 1, n, step)
            if codes[b] != unit:
                break
            d2 = 0.0
            for k in range(d):
                diff = X[b, k] - X[a, k]
                d2 += diff * diff
            if d2 > limit:
                if limit == far2:
                    break
                limit = far2
                if d2 > limit:
                    break
            j += 1
        h = i
        while h - 1 >= 0:
            b = _row(rows, h - 1, n, step)
            if codes[b] != unit:
                break
            d2 = 0.0
            for k in range(d):
                diff = X[b, k] - X[a, k]
                d2 += diff * diff
            if d2 > far2:
                break
            h -= 1
        if j + 1 >= n or h - 1 < 0:
            continue
        c, b = _row(rows, j + 1, n, step), _row(rows, h - 1, n, step)
        if codes[c] != unit or codes[b] != unit:
            continue
        dot = 0.0
        n1 = 0.0
        n2 = 0.0
        for k in range(d):
            come = X[a, k] - X[b, k]
            go = X[c, k] - X[a, k]
            dot += come * go
            n1 += come * come
            n2 += go * go
        out[q] = dot > cos * np.sqrt(n1 * n2)
    return out
