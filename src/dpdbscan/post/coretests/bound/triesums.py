"""Core cells of a sparse release found from coarse boxes down, compiled.

The released keys are row-major codes of the cells' coordinates, so the
sorted keys form a trie: the cells sharing their first k coordinates are one
contiguous range, found inside the range of their first k - 1 by a binary
search. The sum over NB(X) of the released values is a walk of that trie,
axis by axis: along axis i the walk may step to the coordinates whose term
``max(|o_i| - 1, 0)^2`` keeps the sum of terms within ``lim`` (NB's rule),
and it enters only the ranges that hold released cells; along the last axis
the allowed coordinates are one interval, summed as a difference of prefix
sums. The cost is the released lines near X (a few hundred in the 6-D
blobs), not the runs of NB (6,095 in 6-D, 257,675 in 8-D), and the walk
visits the runs in their lexicographic order adding the same differences as
:func:`~dpdbscan.post.sums.sparse_neighbour_sums` (the runs it skips add
exactly 0): the same sums bit for bit, also for float values.

The same walk bounds a whole box of side s: the union of NB over the box's
cells is the set of offsets from its lowest corner whose terms
``h_s(o_i)`` (0 on ``[-1, s]``, the squared distance to that interval
beyond) sum to at most ``lim``, and with non-negative values its sum bounds
every cell's. :func:`core_cells_by_boxes` starts from boxes of side 2^j
covering the grid (their bounds all at once: each released cell adds its
value to the boxes within its reach, on a dense array of the boxes), keeps
those whose bound reaches the threshold, splits them in 2^d and goes on down
to single cells, where the walk gives the exact sums. Every core cell lies
in a kept box at every level, so the cells found are exactly the core
cells, without enumerating NB around every released cell (28,197 cells per
cell in 6-D). The cells or boxes of one line (the same first d - 1
coordinates) share one walk (:func:`line_sums`). Post-processing: reads the
release only.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ....cells.grid import Grid, gap2_limit, sorted_runs
from .boundsums import run_sums

#: Boxes of the first level at most (the whole grid in boxes of side 2^j, a
#: dense array of their sums).
FIRST_BOXES = 1 << 23
#: The runs' walk takes the exact sums below this many runs of NB (4-D: 125;
#: in 5-D, 841 runs, the trie's walk took 1.6 s of CPU against 2.3 s).
MAX_WALK_RUNS = 500
#: Boxes whose bound is taken at once (their 2^d children made a chunk at a time).
BOX_CHUNK = 1 << 20


def trie_sums(
    grid: Grid, keys: np.ndarray, values: np.ndarray, corners: np.ndarray, side: int = 1
) -> np.ndarray:
    """Per row of ``corners`` (integer coordinates in the grid), the sum of
    the released values (sorted int64 ``keys``) over the union of NB of the
    cells of the box of ``side`` cells per axis at that corner: for ``side``
    1, the sum over NB of that cell, as
    :func:`~dpdbscan.post.sums.sparse_neighbour_sums` adds it."""
    corners = np.asarray(corners, dtype=np.int64).reshape(-1, grid.d)
    at = grid.encode(corners)
    order = np.argsort(at, kind="stable")
    sums = line_sums(grid, keys, values, at[order], side)
    out = np.empty_like(sums)
    out[order] = sums
    return out


def core_cells_by_boxes(
    grid: Grid, keys: np.ndarray, values: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys of the cells whose sum over NB reaches ``threshold``, and
    those sums; ``values`` (of the sorted ``keys``) must be non-negative
    (the boxes' sums bound their cells' from above)."""
    d = grid.d
    shape = np.array(grid.shape, dtype=np.int64)
    side = 2
    while math.prod(-(-int(n) // side) for n in shape) > FIRST_BOXES:
        side *= 2
    # integer sums are exact; float ones get room for the rounding of a
    # box's sum against a cell's (a superset of boxes is all that is needed)
    slack = 0.0 if values.dtype.kind in "iub" else 1e-9 * (1.0 + float(np.abs(values).sum()))
    corners = box_sums_above(grid, keys, values, side, threshold - slack)
    while side > 1:
        side //= 2
        steps = np.array(list(itertools.product((0, side), repeat=d)), dtype=np.int64)
        parts = []
        per = max(1, BOX_CHUNK // steps.shape[0])
        for start in range(0, corners.shape[0], per):
            child = (corners[start : start + per, None, :] + steps[None, :, :]).reshape(-1, d)
            child = child[np.all(child < shape, axis=1)]
            if side > 1:
                child = child[trie_sums(grid, keys, values, child, side) >= threshold - slack]
            parts.append(child)
        corners = np.concatenate(parts) if parts else np.zeros((0, d), dtype=np.int64)
    cells = np.sort(grid.encode(corners))
    sums = exact_sums(grid, keys, values, cells)
    hit = sums >= threshold
    return cells[hit], sums[hit]


def exact_sums(grid: Grid, keys: np.ndarray, values: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Sums over NB at the sorted ``cells``, bit for bit as
    :func:`~dpdbscan.post.sums.sparse_neighbour_sums`: by the runs' walk
    where NB has few runs (up to 5-D), else by the trie's, one walk per
    line of cells (:func:`line_sums`)."""
    if sorted_runs(grid.offsets)[1].size and int(sorted_runs(grid.offsets)[1][-1]) < MAX_WALK_RUNS:
        return run_sums(grid, keys, values, cells)
    return line_sums(grid, keys, values, cells, 1)


def line_sums(
    grid: Grid, keys: np.ndarray, values: np.ndarray, cells: np.ndarray, side: int = 1
) -> np.ndarray:
    """:func:`trie_sums` of the boxes at the sorted ``cells``, with one walk
    of the first d - 1 axes for all the boxes of one line (they differ along
    the last axis only, so they reach the same released lines with the same
    budgets); each box then takes its own interval of each line reached, in
    the same order as alone: the same additions."""
    acc = np.int64 if values.dtype.kind in "iub" else np.float64
    out = np.zeros(cells.size, dtype=acc)
    lim = gap2_limit(grid.d, grid.eta)
    if keys.size == 0 or cells.size == 0 or lim < 0:
        return out
    cs = np.zeros(values.size + 1, dtype=acc)
    np.cumsum(values, out=cs[1:])
    isq = np.array([math.isqrt(b) for b in range(lim + 1)], dtype=np.int64)
    eye = np.eye(grid.d, dtype=np.int64)
    strides = np.array([grid.key_delta(eye[i]) for i in range(grid.d)], dtype=np.int64)
    qc = grid.decode(cells)
    new = np.ones(cells.size, dtype=bool)
    if grid.d > 1:
        new[1:] = np.any(qc[1:, :-1] != qc[:-1, :-1], axis=1)
    else:
        new[1:] = False
    starts = np.append(np.flatnonzero(new), cells.size).astype(np.int64)
    shape = np.array(grid.shape, dtype=np.int64)
    _line_kernel()(keys, cs, strides, shape, qc, starts, int(side), int(lim), isq, out)
    return out


def box_sums_above(grid: Grid, keys: np.ndarray, values: np.ndarray, side: int, floor: float) -> np.ndarray:
    """Lowest corners of the boxes of ``side`` cells per axis (aligned to
    multiples of ``side``) whose union of NB holds released mass >= ``floor``:
    every released cell adds its value to the boxes it is within reach of,
    on a dense array of the boxes (a compiled scatter)."""
    d = grid.d
    nb = np.array([-(-n // side) for n in grid.shape], dtype=np.int64)
    lim = gap2_limit(d, grid.eta)
    integer = values.dtype.kind in "iub"
    small = integer and float(np.abs(values).sum()) < 2**31
    acc = np.int32 if small else (np.int64 if integer else np.float64)
    if keys.size == 0 or lim < 0:
        return np.zeros((0, d), dtype=np.int64)
    # a box's sum is at most the total: int32 halves the memory traffic
    out: np.ndarray = np.zeros(int(np.prod(nb)), dtype=acc)
    isq = np.array([math.isqrt(b) for b in range(lim + 1)], dtype=np.int64)
    _scatter_kernel()(grid.decode(keys), values.astype(acc), int(side), int(lim), isq, nb, out)
    live = np.flatnonzero(out >= floor)
    return np.stack(np.unravel_index(live, tuple(nb)), axis=1).astype(np.int64) * side


@functools.cache
def _line_kernel():
    """The compiled walk of the trie per line of query cells."""
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from ...._jit import kernel, lower_bound

    @kernel
    def walk_lines(keys, cs, strides, shape, qc, starts, side, lim, isq, out):
        d = qc.shape[1]
        n = keys.size
        last = d - 1
        lo = np.zeros(d, dtype=np.int64)
        hi = np.zeros(d, dtype=np.int64)
        base = np.zeros(d, dtype=np.int64)
        used = np.zeros(d, dtype=np.int64)
        cur = np.zeros(d, dtype=np.int64)
        end = np.zeros(d, dtype=np.int64)
        pos = np.zeros(d, dtype=np.int64)
        for line in range(starts.size - 1):
            first = starts[line]
            stop = starts[line + 1]
            k = 0
            lo[0] = 0
            hi[0] = n
            base[0] = 0
            used[0] = 0
            entering = True
            while k >= 0:
                if entering:
                    entering = False
                    w = isq[lim - used[k]]
                    if k == last:
                        # each cell of the line: its interval of this released line
                        i = lo[k]
                        j = lo[k]
                        for q in range(first, stop):
                            x = qc[q, k]
                            a = max(x - 1 - w, 0)
                            b = min(x + side + w, shape[k] - 1)
                            if a <= b:
                                i = lower_bound(keys, i, hi[k], base[k] + a)
                                if j < i:
                                    j = i
                                j = lower_bound(keys, j, hi[k], base[k] + b + 1)
                                out[q] += cs[j] - cs[i]
                        k -= 1
                        continue
                    x = qc[first, k]
                    cur[k] = max(x - 1 - w, 0)
                    end[k] = min(x + side + w, shape[k] - 1)
                    pos[k] = lo[k]
                if cur[k] > end[k]:
                    k -= 1
                    continue
                v = cur[k]
                cur[k] += 1
                x = qc[first, k]
                t = 0
                if v < x - 1:
                    t = (x - 1 - v) * (x - 1 - v)
                elif v > x + side:
                    t = (v - x - side) * (v - x - side)
                cost = used[k] + t
                if cost > lim:
                    continue
                b0 = base[k] + v * strides[k]
                i = lower_bound(keys, pos[k], hi[k], b0)
                if i == hi[k]:
                    cur[k] = end[k] + 1
                    continue
                j = lower_bound(keys, i, hi[k], b0 + strides[k])
                pos[k] = j
                if i == j:
                    continue
                lo[k + 1] = i
                hi[k + 1] = j
                base[k + 1] = b0
                used[k + 1] = cost
                k += 1
                entering = True

    return walk_lines


@functools.cache
def _scatter_kernel():
    """The compiled scatter of released cells into box sums."""
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from ...._jit import kernel

    @kernel
    def scatter(coords, vals, side, lim, isq, nb, out):
        n, d = coords.shape
        cur = np.zeros(d, dtype=np.int64)
        end = np.zeros(d, dtype=np.int64)
        used = np.zeros(d + 1, dtype=np.int64)
        flat = np.zeros(d + 1, dtype=np.int64)
        for r in range(n):
            k = 0
            entering = True
            while k >= 0:
                if entering:
                    entering = False
                    if k == d:
                        out[flat[d]] += vals[r]
                        k -= 1
                        continue
                    w = isq[lim - used[k]]
                    x = coords[r, k]
                    # corners c with x in [c - 1 - w, c + side + w]
                    lo = -((side + w - x) // side)  # ceil((x - side - w) / side)
                    hi = (x + 1 + w) // side
                    cur[k] = max(lo, 0)
                    end[k] = min(hi, nb[k] - 1)
                if cur[k] > end[k]:
                    k -= 1
                    continue
                b = cur[k]
                cur[k] += 1
                c = b * side
                t = 0
                if coords[r, k] < c - 1:
                    t = (c - 1 - coords[r, k]) * (c - 1 - coords[r, k])
                elif coords[r, k] > c + side:
                    t = (coords[r, k] - c - side) * (coords[r, k] - c - side)
                if used[k] + t > lim:
                    continue
                used[k + 1] = used[k] + t
                flat[k + 1] = flat[k] * nb[k] + b
                k += 1
                entering = True

    return scatter


__all__ = ["trie_sums", "line_sums", "core_cells_by_boxes", "box_sums_above"]
