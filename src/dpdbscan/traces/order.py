"""Rows of traces in the order of each unit's time.

Stops and trip ends read each unit's points in time order. The order is a
function of the rows' values only, never of their positions in the input:
by unit, then time, then the coordinates (so two rows of one unit at the
same time are ordered by where they are, and rows equal in all of these are
interchangeable). Hence the events found do not depend on how the rows were
shuffled, split or concatenated.
"""

from __future__ import annotations

import numpy as np

#: int64 keys must stay below this (codes times the time range).
_KEY_LIMIT = 1 << 62


def usable(X: np.ndarray, codes: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Which rows take part: a unit (code >= 0), a finite time and finite
    coordinates. The others are dropped by the per-record rule (each alone)."""
    ok = (codes >= 0) & np.isfinite(times)
    if X.shape[1]:
        ok &= np.isfinite(X).all(axis=1)
    return ok


def trace_order(X: np.ndarray, codes: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Indices of the :func:`usable` rows sorted by (unit code, time,
    coordinates).

    Speed: integral times (unix seconds) sort as one int64 key with a stable
    sort, which runs fast on traces already in time order or in reverse
    (timsort's runs); other times by ``np.lexsort``. The coordinates are
    sorted on only when two rows of one unit share a time.
    """
    ok = usable(X, codes, times)
    if ok.all():
        rows, c, t = None, codes, times
    else:
        rows = np.flatnonzero(ok)
        c, t = codes[rows], times[rows]
    key = None
    if c.size:
        lo, hi = float(t.min()), float(t.max())
        span = hi - lo + 1.0
        if span * (float(c.max()) + 1.0) < _KEY_LIMIT and np.array_equal(t, np.floor(t)):
            key = c.astype(np.int64)
            key *= np.int64(span)
            key += (t - lo).astype(np.int64)
    if key is not None:
        order = np.argsort(key, kind="stable")
        key = key[order]
        tied = bool(np.any(key[1:] == key[:-1]))
    else:
        order = np.lexsort((t, c))
        cs, ts = c[order], t[order]
        tied = bool(np.any((cs[1:] == cs[:-1]) & (ts[1:] == ts[:-1])))
    rows = order if rows is None else rows[order]
    if tied:
        c, t = codes[rows], times[rows]
        keys = [X[rows, j] for j in range(X.shape[1] - 1, -1, -1)]
        rows = rows[np.lexsort((*keys, t, c))]
    return rows


def unit_ends(codes_sorted: np.ndarray) -> np.ndarray:
    """For sorted codes, the positions where each unit's rows end (the
    start of the next unit), ascending, the last being ``len(codes)``."""
    n = codes_sorted.size
    cuts = np.flatnonzero(codes_sorted[1:] != codes_sorted[:-1]) + 1
    return np.append(cuts, n).astype(np.int64)


__all__ = ["trace_order", "unit_ends", "usable"]
