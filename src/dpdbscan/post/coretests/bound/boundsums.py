"""Neighbour sums of a sparse release at sorted query cells, compiled.

NB (or a sub-cell's offset set) splits into runs contiguous in the last
dimension (:func:`~dpdbscan.cells.grid.offset_runs`); with int64 keys a run
is one key interval ``[q + lo, q + hi]`` around each query key q, and its
sum is one difference of prefix sums of the released values. The queries
come sorted, so within one run both ends of the interval only grow from one
query to the next: a kernel walks two cursors through the released keys,
each step a galloping search from where the last one ended (a few
comparisons where the queries are dense, a binary search's where they are
far apart), instead of two full binary searches per query and run. Memory:
the queries' sums and the run table.

The terms are added as :func:`~dpdbscan.post.sums.sparse_neighbour_sums`
adds them (run by run, in the runs' order, each run one difference of the
same prefix sums), so the sums are the same bit for bit, also for float
values. Post-processing: reads the release only.
"""

from __future__ import annotations

import functools

import numpy as np

from ....cells.grid import Grid, sorted_runs
from ...sums import sparse_neighbour_sums


def run_sums(
    grid: Grid, keys: np.ndarray, values: np.ndarray, query: np.ndarray, offsets: np.ndarray | None = None
) -> np.ndarray:
    """sum over ``offsets`` (NB by default) of the released values (sorted
    ``keys``, ``values``) at each of the sorted query keys."""
    offsets = grid.offsets if offsets is None else offsets
    if grid.wide or query.size == 0 or keys.size == 0 or len(offsets) == 0 or not _sorted(query):
        return sparse_neighbour_sums(grid, keys, values, query, offsets)
    acc = np.int64 if values.dtype.kind in "iub" else np.float64
    cs = np.zeros(values.size + 1, dtype=acc)
    np.cumsum(values, out=cs[1:])
    lo, hi = run_table(grid, offsets)
    out = np.zeros(query.size, dtype=acc)
    _kernel()(keys, cs, query, lo, hi, out)
    return out


def _sorted(a: np.ndarray) -> bool:
    return bool(a.size < 2 or (a[1:] >= a[:-1]).all())


def run_table(grid: Grid, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Key deltas ``(lo, hi)`` of the first and last offset of each run of
    ``offsets``, in the order of :func:`~dpdbscan.cells.grid.offset_runs`."""
    off, run = sorted_runs(np.asarray(offsets, dtype=np.int64).reshape(-1, grid.d))
    new = np.ones(run.size, dtype=bool)
    new[1:] = run[1:] != run[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], run.size) - 1
    return grid.encode(off[starts]), grid.encode(off[ends])


@functools.cache
def _kernel():
    """The compiled walk (compiled at the first call, cached on disk)."""
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from ...._jit import kernel

    @kernel
    def first_above(keys, at, target, strict):
        # the first index >= at whose key is >= target (> target if strict),
        # galloping from at: keys below at are all below the target
        n = keys.size
        step = 1
        lo = at
        hi = at
        while hi < n and (keys[hi] <= target if strict else keys[hi] < target):
            lo = hi + 1
            hi = at + step
            step *= 2
        if hi > n:
            hi = n
        while lo < hi:
            mid = (lo + hi) >> 1
            if keys[mid] <= target if strict else keys[mid] < target:
                lo = mid + 1
            else:
                hi = mid
        return lo

    @kernel
    def walk(keys, cs, query, lo, hi, out):
        for r in range(lo.size):
            a = 0
            b = 0
            for i in range(query.size):
                a = first_above(keys, a, query[i] + lo[r], False)
                if b < a:
                    b = a
                b = first_above(keys, b, query[i] + hi[r], True)
                out[i] += cs[b] - cs[a]

    return walk


__all__ = ["run_sums", "run_table"]
