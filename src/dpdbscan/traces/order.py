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
    ok = codes >= 0
    ok &= np.isfinite(times)
    for j in range(X.shape[1]):  # a column at a time: no (n, d) temporary
        ok &= np.isfinite(X[:, j])
    return ok


def trace_order(X: np.ndarray, codes: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Indices of the :func:`usable` rows, each unit's rows together and in
    time order (then by coordinates): sorted by (unit code, time,
    coordinates), or, when the file already keeps each unit's rows together
    in strictly increasing or decreasing time (as trace files do), unit by
    unit in the file's order of units or its reverse. Either way every
    unit's trace is the same sequence, which is all the events depend on
    (not the order of the units: each unit's events are its own, and the
    callers sort the rows they keep).

    Speed: a file of grouped traces needs no sort (a few passes to check
    it); otherwise integral times (unix seconds) sort as one int64 key with
    a stable sort, other times by ``np.lexsort``. The coordinates are sorted
    on only when two rows of one unit share a time.
    """
    order = trace_steps(X, codes, times)
    return order if isinstance(order, np.ndarray) else in_steps(order, codes.shape[0])


def trace_steps(X: np.ndarray, codes: np.ndarray, times: np.ndarray) -> np.ndarray | int:
    """:func:`trace_order`'s rows, or, when every row is usable and the file
    reads in that order as it is (1) or from its last row to its first
    (-1), that step alone: a caller that reads the rows through the order
    needs no array of every row's index (88 MB for full Cabs, newest first)
    for it (:func:`in_steps` makes it)."""
    ok = usable(X, codes, times)
    if ok.all():
        rows, c, t = None, codes, times
    else:
        rows = np.flatnonzero(ok)
        c, t = codes[rows], times[rows]
    del ok
    grouped = _grouped(c, t)
    if isinstance(grouped, int):
        if rows is None:
            return grouped
        return rows if grouped > 0 else rows[::-1].copy()
    if grouped is not None:
        return grouped if rows is None else rows[grouped]
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
        same = key[1:] == key[:-1]
        del key
    else:
        order = np.lexsort((t, c))
        cs, ts = c[order], t[order]
        same = cs[1:] == cs[:-1]
        same &= ts[1:] == ts[:-1]
        del cs, ts
    rows = order if rows is None else rows[order]
    if same.any():
        rows = _break_ties(X, rows, same)
    return rows


def in_steps(step: int, n: int) -> np.ndarray:
    """The rows of :func:`trace_steps`' ``step`` (1 or -1) over ``n`` rows."""
    return np.arange(n) if step > 0 else np.arange(n - 1, -1, -1)


def _break_ties(X: np.ndarray, rows: np.ndarray, same: np.ndarray) -> np.ndarray:
    """``rows``, sorted by (unit, time) (``same[i]``: rows i and i + 1 have
    one unit and one time), with each run of such ties sorted by the
    coordinates (stable): the order of ``np.lexsort((coordinates, time,
    unit))`` over all rows, sorting the tied runs' rows alone (a few repeated
    fixes in a T-Drive week of 1.4M rows: a lexsort of every row on four keys
    was 1 s of a 3 s fit)."""
    tied = np.zeros(rows.size, dtype=bool)
    tied[1:] = same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    # a tied row starts its run unless it ties with the row before it
    run = np.cumsum(~same[np.maximum(at - 1, 0)] | (at == 0))
    sub = rows[at]
    keys = [X[sub, j] for j in range(X.shape[1] - 1, -1, -1)]
    out = rows.copy()
    out[at] = sub[np.lexsort((*keys, run))]
    return out


#: Steps per block of :func:`_grouped`'s passes: booleans of a block stay in
#: the CPU's cache, and none is as long as the file (each full-length one was
#: 11 MB of fresh memory for full Cabs).
_BLOCK = 1 << 18


def _grouped_order(c: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """:func:`_grouped`'s order as rows (None when the rows are not grouped)."""
    got = _grouped(c, t)
    return in_steps(got, c.size) if isinstance(got, int) else got


def _grouped(c: np.ndarray, t: np.ndarray) -> np.ndarray | int | None:
    """The order of rows already grouped by unit, each unit's block in
    strictly increasing or strictly decreasing time (reversed then): 1 when
    no block is reversed (the rows as they are), -1 when every block of more
    than one row is (the whole file backwards, the units then in the reverse
    order), else the rows; None when the rows are not so grouped (a unit in
    two blocks, a tie or a turn in time).

    Streaming passes over booleans only (no per-block sums), a block of
    :data:`_BLOCK` steps at a time: step i goes from row i to row i + 1, and
    a block is one direction when none of its steps is flat and no two of
    its consecutive steps differ."""
    n = c.size
    if n < 2:
        return None
    cuts = []
    for lo in range(0, n - 1, _BLOCK):
        hi = min(lo + _BLOCK, n - 1)  # this pass's steps: lo .. hi - 1 ...
        end = min(hi + 1, n - 1)  # ... and one more, for the turn into the next pass
        cb, tb = c[lo : end + 1], t[lo : end + 1]
        cut = cb[1:] != cb[:-1]  # step i leaves a unit's block
        up = tb[1:] > tb[:-1]
        flat = up == (tb[1:] < tb[:-1])  # neither up nor down: a tie
        flat &= ~cut
        if flat.any():
            return None
        turn = up[1:] != up[:-1]  # steps i and i + 1 differ ...
        turn &= ~cut[1:]
        turn &= ~cut[:-1]  # ... within one block
        if turn.any():
            return None
        at = np.flatnonzero(cut[: hi - lo])
        at += lo + 1
        cuts.append(at)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), *cuts])
    if np.bincount(c[starts]).max() > 1:  # some unit's rows are in two blocks
        return None
    # each block's direction is that of its first step (a block of one row has none)
    sizes = np.diff(np.append(starts, n))
    multi = sizes > 1
    reverse = np.zeros(starts.size, dtype=bool)
    first = starts[multi]
    reverse[multi] = ~(t[first + 1] > t[first])
    if not reverse.any():
        return 1
    if reverse[multi].all():
        return -1
    # row i of a reversed block [s, e] goes to s + e - i
    last = starts + sizes - 1
    order = np.arange(n)
    order *= np.repeat(np.where(reverse, -1, 1), sizes)
    order += np.repeat(np.where(reverse, starts + last, 0), sizes)
    return order


__all__ = ["in_steps", "trace_order", "trace_steps", "usable"]
