"""Weighted sums E~(q) = sum_Y W(q, Y) x~_Y of a released histogram, dense
(gathers and one matrix product) or sparse (unreleased cells read 0)."""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

import numpy as np

from ....cells.grid import Grid, lookup, offset_runs, sorted_runs
from ....cells.histogram import NoisyHistogram
from ...sums import group_starts, index_held, run_pairs
from .cover import COMPILED_FROM_D, dense_compiled
from .weights import BallWeights


def dense_weighted_sums(grid: Grid, values: np.ndarray, weights: BallWeights) -> np.ndarray:
    """E~ for every sub-position of every cell: array of shape (k^d, *grid.shape).

    Straight shifted sums over the padded array (every cell; for tests, plots
    and small grids). :func:`weighted_sums_at` is the fast path.
    """
    R = max(int(weights.offsets.max()), -int(weights.offsets.min())) if weights.offsets.size else 0
    P = np.zeros(tuple(s + 2 * R for s in grid.shape))
    P[tuple(slice(R, R + s) for s in grid.shape)] = values
    out = np.zeros((len(weights.positions),) + tuple(grid.shape))
    W = weights.W
    for j, o in enumerate(weights.offsets):
        sl = P[tuple(slice(R + int(oi), R + int(oi) + s) for oi, s in zip(o, grid.shape))]
        for r in range(len(weights.positions)):
            if W[r, j] > 0:
                out[r] += W[r, j] * sl
    return out


# Rows per matrix product. On a busy 2-core machine, OpenBLAS spreading a
# 21-wide product of 65,536 rows over its threads took 10-50 times longer.
# (OpenBLAS 0.3.31 still splits 8,192 x 609 x 16 over its two threads, and
# the last bits of a row's sums then differ from one thread's, by about
# 1e-14 of 50; the density test's comparisons are never that close on
# same_release's dense 4-D cases, closest 3.9e-4 on case 47, so the model
# is the same with OPENBLAS_NUM_THREADS=1: tests/post/test_seeded_threads.py.)
_CHUNK = 1 << 13
#: Gathered values per block (32 MB of float64): in d = 6 an eps-neighbourhood has
#: 28,197 cells, and 65,536 rows of them at once would take 15 GB.
_GATHER = 1 << 22


def weighted_sums_at(hist: NoisyHistogram, weights: BallWeights, keys: np.ndarray) -> np.ndarray:
    """E~(q) for every sub-position q of the cells with the given keys: (n, k^d).

    Dense: one gather per offset from the zero-padded array, then one matrix
    product with W. Sparse: the same from key lookups (unreleased cells read
    0), or, with int64 keys, one pair of binary searches per run of offsets
    contiguous in the last axis plus one term per released neighbour found.
    """
    grid = hist.grid
    n = keys.size
    out = np.empty((n, len(weights.positions)))
    if n == 0:
        return out
    if not grid.wide and hist.kind != "dense":
        return _sparse_run_sums(grid, hist.released_keys, hist.values, weights, keys)
    Wt = weights.transposed()
    if hist.kind == "dense":
        R = max(int(weights.offsets.max()), -int(weights.offsets.min()), 1)
        step = _rows_per_block(weights.offsets.shape[0])
        walk = _grid_walk(grid, weights.offsets, R)
        if walk is not None:
            # lazy: numba loads only where a kernel runs (never on a 2-D fit)
            from .compiled import walk_rows

            vals = np.ascontiguousarray(hist.values, dtype=np.float64).ravel()
            G = np.zeros((min(step, n), weights.offsets.shape[0]))
            for a in range(0, n, step):
                coords = grid.decode(keys[a : a + step])
                rows = G[: coords.shape[0]]
                walk_rows(vals, walk.shape, coords, R, walk.table, walk.half, rows, False)
                np.matmul(rows, Wt, out=out[a : a + step])
                walk_rows(vals, walk.shape, coords, R, walk.table, walk.half, rows, True)
            return out
        if dense_compiled(grid) or gather_pays(grid, n, weights.offsets.shape[0]):
            # a large dense 3-D grid, or a gather too large for numpy
            # lazy: numba loads only where a kernel runs (3-D: large dense grids)
            from .compiled import gather_unpadded

            # the same matrices as the padded copy's below, read in place
            # (the copy of 5.3M cells took most of the time of 22k rows)
            vals = np.ascontiguousarray(hist.values).ravel()
            shape = np.asarray(grid.shape, dtype=np.int64)
            offsets = np.ascontiguousarray(weights.offsets, dtype=np.int64)
            for a in range(0, n, step):
                coords = grid.decode(keys[a : a + step])
                G = np.empty((coords.shape[0], offsets.shape[0]))
                gather_unpadded(vals, shape, coords, offsets, G)
                np.matmul(G, Wt, out=out[a : a + step])
            return out
        if grid.d < COMPILED_FROM_D:
            return _dense_sums_in_place(grid, hist.values, weights.offsets, keys, Wt, step, out)
        # lazy: numba loads only where a kernel runs (never on a 2-D fit)
        from .compiled import gather_rows

        P = np.zeros(tuple(s + 2 * R for s in grid.shape))
        P[tuple(slice(R, R + s) for s in grid.shape)] = hist.values
        strides = np.array(P.strides, dtype=np.int64) // P.itemsize
        deltas = weights.offsets @ strides
        flat = P.ravel()
        for a in range(0, n, step):
            base = (grid.decode(keys[a : a + step]) + R) @ strides
            # the same matrix in one compiled pass (numpy's fancy index
            # builds the index matrix first); the same product after it
            G = np.empty((base.size, deltas.size))
            gather_rows(flat, base, deltas, G)
            np.matmul(G, Wt, out=out[a : a + step])
        return out
    if grid.wide:
        step = _rows_per_block(weights.offsets.shape[0])
        for a in range(0, n, step):
            coords = grid.decode(keys[a : a + step])
            vals = np.empty((coords.shape[0], weights.offsets.shape[0]))
            for j, o in enumerate(weights.offsets):
                vals[:, j] = lookup(hist.released_keys, hist.values, grid.encode(coords + o))
            np.matmul(vals, Wt, out=out[a : a + step])
    return out


#: Below :data:`~.cover.COMPILED_FROM_D`, a dense gather of at least this
#: many values (rows times offsets) takes the compiled pass wherever numba is
#: loaded or not: numpy's gather and face tests cost 40-50 ns a value (the
#: automatic mode's ladder on a 62^3 grid at 25,500 points: 70k rows times
#: 2,391 offsets, 7.3 s of CPU; 12.2 s for the whole fit), far above the
#: compiler's import (0.5-0.8 s) from this size on. A public size of the
#: post-processing (the release's grid and the rows asked for); the same
#: matrices and products, so the same sums bit for bit. Where numba is loaded
#: already, from :data:`LOADED_GATHER_VALUES` (the ladder's middle rung
#: there: 58k rows times 485 offsets, 0.73 s of CPU in numpy).
COMPILED_GATHER_VALUES = 1 << 25
LOADED_GATHER_VALUES = 1 << 20


def gather_pays(grid: Grid, rows: int, offsets: int) -> bool:
    """Whether a dense gather of ``rows`` x ``offsets`` values below
    :data:`~.cover.COMPILED_FROM_D` takes the compiled pass for its size
    (:data:`COMPILED_GATHER_VALUES`, or :data:`LOADED_GATHER_VALUES` where
    numba is loaded already); 2-D never does."""
    if not (3 <= grid.d < COMPILED_FROM_D and not grid.wide):
        return False
    values = rows * offsets
    return values >= COMPILED_GATHER_VALUES or (values >= LOADED_GATHER_VALUES and "numba" in sys.modules)


def _dense_sums_in_place(
    grid: Grid,
    values: np.ndarray,
    offsets: np.ndarray,
    keys: np.ndarray,
    Wt: np.ndarray,
    step: int,
    out: np.ndarray,
) -> np.ndarray:
    """The dense sums of :func:`weighted_sums_at` below :data:`~.cover.COMPILED_FROM_D`
    dimensions, read from the histogram's own array: the matrix of each block
    of ``step`` rows holds the value of every cell ``coords + offset`` as a
    float, 0 outside the grid, as the zero-padded copy of the histogram gave
    it, and goes through the same product. No such copy is made (35 MB on
    the Cabs file, whose first touch took the command more CPU than the sums
    themselves); the cells whose ball stays inside the grid gather in one
    pass of index arithmetic, the few near its faces with the test."""
    shape = np.asarray(grid.shape, dtype=np.int64)
    flat = np.ascontiguousarray(values).ravel()
    strides = np.ones(grid.d, dtype=np.int64)  # row-major, in cells
    for i in range(grid.d - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    offsets = np.asarray(offsets, dtype=np.int64)
    deltas = offsets @ strides
    # a cell within reach of no face: every cell of its ball is in the grid
    lo = np.maximum(-offsets.min(axis=0), 0) if offsets.size else np.zeros(grid.d, dtype=np.int64)
    hi = shape - 1 - (np.maximum(offsets.max(axis=0), 0) if offsets.size else 0)
    m = min(step, keys.size)
    where = np.empty((m, deltas.size), dtype=np.int64)
    got = np.empty((m, deltas.size), dtype=flat.dtype)
    G = np.empty((m, deltas.size))
    for a in range(0, keys.size, step):
        coords = grid.decode(keys[a : a + step])
        k = coords.shape[0]
        w, g, rows = where[:k], got[:k], G[:k]
        np.add((coords @ strides)[:, None], deltas[None, :], out=w)
        inner = np.all((coords >= lo) & (coords <= hi), axis=1)
        edge = np.flatnonzero(~inner)
        if edge.size:
            # the cells of a ball that leave the grid read 0, as from the padding
            cells = coords[edge][:, None, :] + offsets[None, :, :]
            outside = np.any((cells < 0) | (cells >= shape), axis=2)
            w[edge] = np.where(outside, 0, w[edge])
        np.take(flat, w, out=g, mode="clip")
        rows[...] = g
        if edge.size:
            rows[edge] = np.where(outside, 0.0, rows[edge])
        np.matmul(rows, Wt, out=out[a : a + step])
    return out


def may_reach(hist: NoisyHistogram, weights: BallWeights, keys: np.ndarray, threshold: float) -> np.ndarray:
    """Mask of the cells (keys, from :data:`~.cover.COMPILED_FROM_D` up) whose
    sums E~(q) may reach ``threshold`` at some sub-position: one compiled
    pass of sum_o x~_{X+o} times the largest weight of offset o where x~ > 0
    and the smallest where not (unreleased cells of a sparse release read
    0), an upper bound of every position's sum, with room for the rounding
    of the sums of :func:`weighted_sums_at` in any order. A cell it drops
    has E~ below the threshold there too, so the sums of the cells it keeps
    decide the same cores; it holds no matrix of values, where the dense
    product reads 609 per cell and sub-position in 4-D. It reads the
    offsets in stages (:func:`reach_stages`), and after each the rest is
    bounded by the positive parts in the box around the cell (one pass of
    box sums over the padded array): on a dense release most candidates
    hold noise alone and go after the first stage (4-D at eps = 0.04: 89
    of 609 offsets, 17% of 1.69M cells left; 0.3 s of CPU against 1.0 s
    read whole, load 9-12). Post-processing of the release."""
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from .compiled import positive_box_sums, staged_reach

    bounds = walk_bounds(hist, weights, keys)
    if bounds is not None:
        return bounds.reach(threshold)
    grid = hist.grid
    R = max(int(weights.offsets.max()), -int(weights.offsets.min()), 1)
    kmax, kmin = weights.kmax, weights.kmin
    # the order of the terms: by stage, then by their delta in the array
    # padded by R on every side (lexicographic in the offsets)
    padded = tuple(s + 2 * R for s in grid.shape)
    order, ends, rest = reach_stages(weights.offsets @ _row_major(padded), kmax)
    layout = _KeyLayout.of(grid, R)
    if layout is not None:
        # the array in the keys' own radix: a cell's entry is its key plus a
        # shift, so the candidates' keys index it without coordinates (1.1M
        # candidates in 4-D: 16 ms of CPU for their coordinates)
        flat, dims = layout.laid_out(hist)
        deltas = weights.offsets @ layout.strides
    else:
        P = np.zeros(padded)
        if hist.kind == "dense":
            P[tuple(slice(R, R + s) for s in grid.shape)] = hist.values
        else:
            P[tuple((grid.decode(hist.released_keys) + R).T)] = hist.values
        flat, dims = P.ravel(), np.array(P.shape, dtype=np.int64)
        deltas = weights.offsets @ _row_major(padded)
    # an integer release's positive parts are their own ceilings; a float
    # one's are counted in 1/256ths (the bound loosens by 1/256 per cell)
    scale = 1.0 if np.issubdtype(np.asarray(hist.values).dtype, np.integer) else 256.0
    top = max(float(flat.max()), -float(flat.min())) if flat.size else 0.0
    box = np.zeros(1)
    # every box sum an integer below 2^53 (float64), or below 2^24 (float32)
    cells = math.prod(padded)
    bound = (top * scale + 1) * min(cells, (2 * R + 2) ** grid.d)  # (partial windows too)
    if ends.size > 1 and bound < 2.0**52 and _stages_pay(keys.size, ends, cells, grid.d):
        work = np.float32 if bound < 2.0**23 else np.float64
        box = positive_box_sums(flat, dims, R, scale, np.empty(flat.size, work), np.empty(flat.size, work))
    else:
        ends, rest = ends[-1:], rest[-1:]
    # the rounding of two sums of n terms x_j k_j (this bound's in any order
    # and the matrix product's), gamma_n sum |k x| <= gamma_n max|k| n max|x|
    # each, with room to spare
    n = deltas.size
    u = n * 2.0**-53
    room = 4.0 * u / (1.0 - u) * float(kmax.max(initial=0.0)) * n * top + 1e-300
    run, kmax, kmin = deltas[order], kmax[order], kmin[order]
    keep = np.empty(keys.size, dtype=bool)
    # one sub-position (kmax = kmin): the terms without their positive parts
    plain = bool(np.array_equal(kmax, kmin))

    def part(a: int) -> None:
        if layout is not None:
            base = np.asarray(keys[a : a + _DENSE_ROWS], dtype=np.int64) + layout.shift
        else:
            base = (grid.decode(keys[a : a + _DENSE_ROWS]) + R) @ _row_major(padded)
        keep[a : a + _DENSE_ROWS] = staged_reach(
            flat, base, run, kmin, kmax - kmin, ends, rest, box, scale, room, float(threshold), plain
        )

    blocks = range(0, keys.size, _DENSE_ROWS)
    if len(blocks) > 1 and (os.cpu_count() or 1) >= 2:
        # two threads, a block of cells at a time each (the kernel releases the GIL)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(part, blocks))
    else:
        for a in blocks:
            part(a)
    return keep


def _row_major(dims: tuple[int, ...]) -> np.ndarray:
    """The row-major strides (in entries) of an array of shape ``dims``."""
    return np.array([math.prod(dims[i + 1 :]) for i in range(len(dims))], dtype=np.int64)


@dataclass(frozen=True)
class _KeyLayout:
    """The release laid out for :func:`may_reach` in the radix of the grid's
    int64 keys (``shape[i] + reach`` along the axes after the first), so
    that a cell's entry is ``key + shift`` and an offset's is its key delta.
    The ``reach`` spare slots after each axis's cells hold zeros, and they
    are the padding on both sides (an offset reaching below a cell's axis
    lands in the spare slots of the row before) where ``reach`` >= R; the
    first axis gets R + 1 rows of zeros before its cells (a carry from the
    axes after it reaches one row further) and R after. The box sums of
    :func:`~.compiled.positive_box_sums` over it are those of the array
    padded by R on every side, at every cell."""

    R: int
    dims: np.ndarray
    strides: np.ndarray
    shift: int

    @staticmethod
    def of(grid: Grid, R: int) -> _KeyLayout | None:
        """The layout, or None where the keys are packed or their spare slots
        are fewer than R (public sizes)."""
        if grid.wide or grid.reach < R or grid.d < 2:
            return None
        strides = np.array([grid.key_delta(e) for e in np.eye(grid.d, dtype=np.int64)], dtype=np.int64)
        first = grid.shape[0] + 2 * R + 1
        dims = np.array([first] + [s + grid.reach for s in grid.shape[1:]], dtype=np.int64)
        return _KeyLayout(R, dims, strides, (R + 1) * int(strides[0]))

    def laid_out(self, hist: NoisyHistogram) -> tuple[np.ndarray, np.ndarray]:
        """The flat array of the release's values (float64, zeros elsewhere)
        and its dims."""
        flat = np.zeros(int(np.prod(self.dims)))
        grid = hist.grid
        if hist.kind == "dense":
            view = flat.reshape(tuple(self.dims.tolist()))
            cells = (slice(self.R + 1, self.R + 1 + grid.shape[0]),) + tuple(
                slice(0, s) for s in grid.shape[1:]
            )
            view[cells] = hist.values
        else:
            flat[np.asarray(hist.released_keys, dtype=np.int64) + self.shift] = hist.values
        return flat, self.dims


#: The stages of :func:`may_reach`: an offset whose largest weight is at most
#: this share of the largest of all is read in a later stage (4-D at eps =
#: 0.04, two sub-cells, 1.69M candidates of a dense release: 89, 137, 233
#: and 609 offsets; 17%, 0.7%, 0.5% of the cells left after each)
_STAGE_CUTS = (0.3, 0.1, 0.03)


def reach_stages(deltas: np.ndarray, kmax: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The order :func:`may_reach` reads the offsets in, the heaviest stage
    first and each stage by its deltas (memory order), where each stage
    ends (the last at every offset) and the largest weight left after it
    (0 after the last). Public: the weights and the padded array's strides."""
    top = float(kmax.max()) if kmax.size else 0.0
    stage = np.zeros(kmax.size, dtype=np.int64)
    for c in _STAGE_CUTS:
        stage += kmax <= c * top
    order = np.lexsort((deltas, stage))
    stages, counts = np.unique(stage, return_counts=True)
    ends = np.cumsum(counts).astype(np.int64)
    rest = np.array([float(kmax[stage > s].max()) if np.any(stage > s) else 0.0 for s in stages])
    return order, ends, rest


def _stages_pay(n_keys: int, ends: np.ndarray, padded: int, d: int) -> bool:
    """Whether the box sums (d passes over the padded array, each about as
    dear per entry as 5 reads of an offset) cost less than the reads the
    first stage may save (a public model of the sizes)."""
    return n_keys * int(ends[-1] - ends[0]) > 8 * d * padded


@dataclass(frozen=True)
class WalkBounds:
    """Per cell, on a grid the walk serves (:func:`_grid_walk`): ``sums``
    = sum_o x~_{X+o} times the largest weight of offset o where x~ > 0 and
    the smallest where not, the upper bound of :func:`may_reach`; with one
    sub-position it is the weighted sum E~ itself, added in the walk's
    order. ``room``: what the rounding of two sums of these terms in any
    order can differ by, 4 gamma_n max|W| sum_o |x~_{X+o}| (n every offset
    of the ball), so the matrix product's sum of a cell (one sub-position)
    lies within ``room`` of ``sums``. :func:`run_bounds` gives the same
    (the sums by runs, of every sub-position: shape (n, k^d) with more than one)."""

    sums: np.ndarray
    room: np.ndarray

    def reach(self, threshold: float) -> np.ndarray:
        """The cells whose sums may reach ``threshold`` (:func:`may_reach`)."""
        return self.sums + self.room + 1e-300 >= threshold


def walk_bounds(hist: NoisyHistogram, weights: BallWeights, keys: np.ndarray) -> WalkBounds | None:
    """:class:`WalkBounds` of the cells ``keys`` (from :data:`~.cover.COMPILED_FROM_D`
    up), or None where the grid is not walked (public sizes)."""
    grid = hist.grid
    R = max(int(weights.offsets.max()), -int(weights.offsets.min()), 1)
    walk = _grid_walk(grid, weights.offsets, R)
    if walk is None:
        return None
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from .compiled import walk_bounds as walk_kernel

    vals = np.zeros(grid.shape)
    if hist.kind == "dense":
        vals[...] = hist.values
    else:
        vals[tuple(grid.decode(hist.released_keys).T)] = hist.values
    flat_vals = vals.ravel()
    kmax, kmin = weights.kmax, weights.kmin
    sums = np.empty(keys.size)
    mag = np.empty(keys.size)
    for a in range(0, keys.size, _DENSE_ROWS):
        coords = grid.decode(keys[a : a + _DENSE_ROWS])
        b = a + coords.shape[0]
        walk_kernel(flat_vals, walk.shape, coords, R, walk.table, walk.half, kmax, kmin, sums[a:b], mag[a:b])
    # gamma_n of n terms, as the padded path of may_reach takes it (every offset of the ball)
    u = weights.offsets.shape[0] * 2.0**-53
    gamma = u / (1.0 - u) if u < 0.5 else math.inf
    wmax = max(float(np.abs(kmax).max()), float(np.abs(kmin).max())) if kmax.size else 0.0
    return WalkBounds(sums, 4.0 * gamma * wmax * mag)


#: Values (rows times offsets) from which :func:`run_bounds` reads a dense
#: 3-D release's sums by runs, in the compiled kernel, where numba is not
#: loaded yet: about 2 ns a term against numpy's 40-50 ns a gathered value
#: (and the product), so above the compiler's import (0.5-0.8 s) from
#: about 2^24 values; where numba is loaded, from :data:`LOADED_GATHER_VALUES`.
RUN_BOUND_VALUES = 1 << 24
#: Sub-positions up to which :func:`run_bounds` serves: each value read costs
#: about 1.4 ns and 0.45 ns more per sub-position, where the gather costs
#: about 6.6 ns and the product 0.25 ns per sub-position (3-D at the top
#: rung: 2.2 s and 2.8 s for one and eight sub-positions, against 0.45 s and
#: 1.2 s by runs), so they meet near 27 sub-positions (three sub-cells)
RUN_MAX_POSITIONS = 8


def run_bounds(hist: NoisyHistogram, weights: BallWeights, keys: np.ndarray) -> WalkBounds | None:
    """:class:`WalkBounds` of the cells ``keys`` of a dense release below
    :data:`~.cover.COMPILED_FROM_D` (3-D), where the gathers of
    :func:`weighted_sums_at` would be large (public sizes: the grid, the
    rows and the offsets; else None): each cell's weighted sums (``sums``
    of shape (n,) with one sub-position, (n, k^d) with more) read by runs
    of offsets along the last axis in one compiled pass
    (:func:`~.compiled.ball_runs`), no matrix, with the room of the
    rounding of two sums of those terms in any order. The sums of the
    matrix product lie within ``room`` of them, so they decide the same
    comparisons wherever they are not within twice their room
    (:class:`~.coresubcells.Unsettled`; the product then decides)."""
    grid = hist.grid
    n_off = weights.offsets.shape[0]
    if hist.kind != "dense" or grid.wide or not (3 <= grid.d < COMPILED_FROM_D):
        return None
    if keys.size == 0 or n_off == 0 or len(weights.positions) > RUN_MAX_POSITIONS:
        return None
    values = keys.size * n_off
    loaded = "numba" in sys.modules and values >= LOADED_GATHER_VALUES
    if not (values >= RUN_BOUND_VALUES or loaded or dense_compiled(grid)):
        return None
    # lazy: numba loads only where a kernel runs (3-D: large dense gathers)
    from .compiled import ball_runs, ball_runs_many

    srt, run = sorted_runs(weights.offsets)
    first = np.flatnonzero(np.concatenate(([True], run[1:] != run[:-1])))
    last = np.append(first[1:], run.size) - 1
    # each sorted offset's column in the weights (the support is built sorted)
    off = weights.offsets
    cols = np.arange(srt.shape[0]) if srt is off else np.lexsort(np.asarray(off).T[::-1])
    n_pos = len(weights.positions)
    # (terms, sub-positions): a term's weights side by side
    w = np.ascontiguousarray(weights.transposed()[cols], dtype=np.float64)
    prefix = np.ascontiguousarray(srt[first, :-1], dtype=np.int64)
    lo = np.ascontiguousarray(srt[first, -1], dtype=np.int64)
    hi = np.ascontiguousarray(srt[last, -1], dtype=np.int64)
    vals = np.ascontiguousarray(hist.values, dtype=np.float64).ravel()
    shape = np.asarray(grid.shape, dtype=np.int64)
    sums = np.empty(keys.size) if n_pos == 1 else np.empty((keys.size, n_pos))
    mag = np.empty(keys.size)
    w1 = np.ascontiguousarray(w[:, 0])
    for a in range(0, keys.size, _DENSE_ROWS):
        coords = grid.decode(keys[a : a + _DENSE_ROWS])
        b = a + coords.shape[0]
        if n_pos == 1:
            ball_runs(vals, shape, coords, prefix, lo, hi, w1, sums[a:b], mag[a:b])
        else:
            ball_runs_many(vals, shape, coords, prefix, lo, hi, w, sums[a:b], mag[a:b])
    # gamma_n of n terms (every offset of the ball), as walk_bounds takes it
    u = n_off * 2.0**-53
    gamma = u / (1.0 - u) if u < 0.5 else math.inf
    return WalkBounds(sums, 4.0 * gamma * float(np.abs(w).max()) * mag)


class ExactRows:
    """The sums :func:`weighted_sums_at` gives the cells ``keys`` (in this
    order), computed only for the rows asked for: each in its block of
    rows, as the whole call computes it (a matrix product's rounding may
    depend on the rows beside it), so a row's sums are the same bit for
    bit as the whole call's. Blocks already computed are kept."""

    def __init__(self, hist: NoisyHistogram, weights: BallWeights, keys: np.ndarray) -> None:
        self.hist, self.weights, self.keys = hist, weights, keys
        self.step = _rows_per_block(weights.offsets.shape[0])
        self._blocks: dict[int, np.ndarray] = {}

    def rows(self, idx: np.ndarray) -> np.ndarray:
        """The sums of rows ``idx``: (len(idx), k^d)."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.empty((idx.size, len(self.weights.positions)))
        block = idx // self.step
        for b in np.unique(block).tolist():
            if b not in self._blocks:
                a = b * self.step
                self._blocks[b] = weighted_sums_at(self.hist, self.weights, self.keys[a : a + self.step])
            at = block == b
            out[at] = self._blocks[b][idx[at] - b * self.step]
        return out


@dataclass(frozen=True)
class _Walk:
    """A grid small beside its ball (public sizes): ``table[o + half]`` is the
    column of offset o in the weights (-1 where o is not in the ball), for
    every offset between two cells of the grid within the ball's reach."""

    shape: np.ndarray
    half: np.ndarray
    table: np.ndarray


#: Entries of the offset table of :func:`_grid_walk` at most (int64: 256 MB).
_MAX_WALK_TABLE = 1 << 25


def _grid_walk(grid: Grid, offsets: np.ndarray, R: int) -> _Walk | None:
    """The offset table for walking, per cell, the grid's cells within reach
    instead of every offset of the ball, when that visits at most half as
    many (a coarse grid in high dimension: a 4^8 grid of 65,536 cells under
    a ball of 1.28 million offsets, most of which leave the grid), and the
    table fits :data:`_MAX_WALK_TABLE`; else None (public sizes only).

    Both ways read the same values in the same order with the offsets that
    leave the grid (zeros of the padding) left out, so the sums are the same
    bit for bit."""
    if grid.d < COMPILED_FROM_D or grid.wide or offsets.shape[0] == 0:
        return None
    shape = np.asarray(grid.shape, dtype=np.int64)
    half = np.minimum(shape - 1, R)
    visits = math.prod(int(min(s, 2 * R + 1)) for s in shape)
    entries = math.prod(int(2 * h + 1) for h in half)
    if 2 * visits > offsets.shape[0] or entries > _MAX_WALK_TABLE or grid.n_cells > MAX_DENSE_CELLS:
        return None
    inside = np.all(np.abs(offsets) <= half, axis=1)
    table = np.full(tuple(int(2 * h + 1) for h in half), -1, dtype=np.int64)
    table[tuple((offsets[inside] + half).T)] = np.flatnonzero(inside)
    return _Walk(shape, half, table.ravel())


def reach_pays(hist: NoisyHistogram, offsets: np.ndarray, n_cells: int) -> bool:
    """Whether :func:`may_reach` should run before the sums of ``n_cells``
    cells (a public cost model of the sizes): on a dense release from
    :data:`~.cover.COMPILED_FROM_D` up always (its product reads every
    offset of every cell and sub-position); on a sparse one when the cells'
    offsets outnumber the padded universe it lays out, and that fits
    :data:`MAX_DENSE_CELLS`."""
    grid = hist.grid
    if grid.d < COMPILED_FROM_D or grid.wide or n_cells == 0:
        return False
    if hist.kind == "dense":
        return True
    R = max(int(offsets.max()), -int(offsets.min()), 1) if offsets.size else 1
    cells = math.prod(s + 2 * R for s in grid.shape)
    return cells <= MAX_DENSE_CELLS and n_cells * offsets.shape[0] > cells


def _rows_per_block(terms: int) -> int:
    return max(1, min(_CHUNK, _GATHER // max(terms, 1)))


def _sparse_run_sums(grid: Grid, rkeys, rvals, weights: BallWeights, query) -> np.ndarray:
    """Sparse weighted sums by runs: each run of offsets (prefix, lo..hi) is one
    key interval; every released cell inside it adds W[:, offset] * value."""
    n_pos = len(weights.positions)
    out = np.zeros((query.size, n_pos))
    if rkeys.size == 0:
        return out
    rvals = rvals.astype(np.float64)
    off = weights.offsets
    compiled = grid.d >= COMPILED_FROM_D
    if compiled and query.size * _n_runs(off) <= _COMPILED_RUN_VISITS and not index_held(rkeys):
        return _compiled_run_sums(grid, rkeys, rvals, weights, query)
    pairs = run_pairs(grid, rkeys, query, off)
    if pairs is not None:
        # the same terms in the same order as the runs below: per (query,
        # run) in key order from 0, then the runs in order
        qi, ri, run, col = pairs
        if qi.size == 0:
            return out
        new = group_starts(qi, run)
        group = np.cumsum(new) - 1
        gq = qi[new]
        vals = rvals[ri]
        for r in range(n_pos):
            part = np.bincount(group, weights=weights.row(r)[col] * vals, minlength=gq.size)
            out[:, r] += np.bincount(gq, weights=part, minlength=query.size)
        return out
    if compiled:
        return _compiled_run_sums(grid, rkeys, rvals, weights, query)
    return _numpy_run_sums(grid, rkeys, rvals, weights, query)


#: (query, run of offsets) visits up to which the compiled run sums go
#: before the pairs of shifted grids are tried: about 7-10 ns each (a row
#: lookup and a short scan). 4-D benchmark: 5,293 queries x 117 runs; 5-D:
#: 2,749 x 2,401 (0.05 s against the pairs' 0.17 s with their table to lay
#: out); 6-D: 2,119 x 16,807 (0.34 s against 0.04 s: the pairs win where the
#: runs are many). When the table of the released cells is held already
#: (the self-join of the candidates' bound laid it out) the pairs are
#: tried first: 5-D benchmark 14 ms of CPU against the runs' 35 ms.
_COMPILED_RUN_VISITS = 10_000_000


def _n_runs(offsets: np.ndarray) -> int:
    """Runs of :func:`~dpdbscan.cells.grid.offset_runs` (public: the weights)."""
    _, run = sorted_runs(offsets)
    return int(run[-1]) + 1 if run.size else 0


def _numpy_run_sums(grid: Grid, rkeys, rvals: np.ndarray, weights: BallWeights, query) -> np.ndarray:
    """:func:`_sparse_run_sums` in numpy where the pairs of shifted grids do
    not pay (and below :data:`~.cover.COMPILED_FROM_D`): dense gathers or two
    searches per run."""
    n_pos = len(weights.positions)
    out = np.zeros((query.size, n_pos))
    off = weights.offsets
    if _dense_cheaper(grid, off, rkeys.size, query.size):
        return _dense_run_sums(grid, rkeys, rvals, weights, query)
    index = {tuple(o): i for i, o in enumerate(off.tolist())}
    for prefix, lo, hi in offset_runs(off):
        base = grid.key_delta(np.append(prefix, 0))
        a = np.searchsorted(rkeys, query + (base + lo), side="left")
        b = np.searchsorted(rkeys, query + (base + hi), side="right")
        cnt = b - a
        hit = np.flatnonzero(cnt)
        if hit.size == 0:
            continue
        rows = np.repeat(hit, cnt[hit])
        starts = np.repeat(a[hit] - np.cumsum(np.concatenate(([0], cnt[hit][:-1]))), cnt[hit])
        ridx = starts + np.arange(rows.size)
        j = rkeys[ridx] - (query[rows] + base)  # last-axis offset, lo <= j <= hi
        cols = np.array([index[tuple(prefix.tolist()) + (int(t),)] for t in range(lo, hi + 1)])
        wcol = weights.columns(cols[j - lo])  # (n_pos, pairs)
        contrib = wcol * rvals[ridx]
        for r in range(n_pos):
            out[:, r] += np.bincount(rows, weights=contrib[r], minlength=query.size)
    return out


#: Rows (cells but the last coordinate) per released cell up to which the
#: compiled run sums index the rows (else they bisect).
_ROWS_PER_KEY = 8


def _compiled_run_sums(grid: Grid, rkeys, rvals: np.ndarray, weights: BallWeights, query) -> np.ndarray:
    """:func:`_sparse_run_sums` from :data:`~.cover.COMPILED_FROM_D` up, where
    the pairs of shifted grids do not pay, by the compiled kernel: the same
    terms in the same order."""
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from .compiled import row_index, run_sums

    off = weights.offsets
    # the runs of offset_runs as arrays: its order of offsets, numbered
    srt, run = sorted_runs(off)
    if srt.shape[0] == 0:
        return np.zeros((query.size, len(weights.positions)))
    first = np.flatnonzero(np.concatenate(([True], run[1:] != run[:-1])))
    last = np.append(first[1:], run.size) - 1
    lo, hi = srt[first, -1], srt[last, -1]
    strides = np.array([grid.key_delta(e) for e in np.eye(grid.d, dtype=np.int64)], dtype=np.int64)
    delta = srt[first, :-1] @ strides[:-1]
    # each sorted offset's row in the weights (the support is built sorted)
    cols = np.arange(srt.shape[0]) if srt is off else np.lexsort(np.asarray(off).T[::-1])
    rkeys = np.asarray(rkeys, dtype=np.int64)
    row_stride = grid.key_delta(np.eye(grid.d, dtype=np.int64)[-2])
    n_rows = int(rkeys[-1]) // row_stride + 1
    if n_rows <= _ROWS_PER_KEY * rkeys.size + (1 << 16):
        starts = row_index(rkeys, row_stride, n_rows)
    else:
        starts = np.empty(0, dtype=np.int64)
    out = np.empty((query.size, len(weights.positions)))
    as_int = np.asarray
    query = as_int(query, dtype=np.int64)
    delta, lo, hi, first, cols = (as_int(a, dtype=np.int64) for a in (delta, lo, hi, first, cols))
    n_pos = len(weights.positions)
    # the weights a block of positions at a time (each sum is one query's
    # and one position's alone, added in the same order whatever the block):
    # in d = 8 with two sub-cells all 256 positions' would take 2.6 GB
    width = max(1, min(n_pos, _WEIGHT_BLOCK // max(off.shape[0], 1)))

    def part(Wt: np.ndarray, block: np.ndarray, a: int, b: int) -> None:
        run_sums(rkeys, rvals, query[a:b], delta, lo, hi, first, cols, Wt, row_stride, starts, block[a:b])

    threaded = (
        query.size * len(first) >= _THREADED_RUN_VISITS and query.size >= 2 and (os.cpu_count() or 1) >= 2
    )
    for p in range(0, n_pos, width):
        Wt, block = weights.transposed(p, p + width), out[:, p : p + width]
        if threaded:
            # two threads, half of the queries each (a row of sums is one query's
            # alone, so the sums are the same); the kernel releases the GIL
            from concurrent.futures import ThreadPoolExecutor

            half = query.size // 2
            with ThreadPoolExecutor(max_workers=2) as pool:
                list(pool.map(part, [Wt, Wt], [block, block], [0, half], [half, query.size]))
        else:
            part(Wt, block, 0, query.size)
    return out


#: Weights (float64) per block of positions of the compiled run sums: 256 MB
_WEIGHT_BLOCK = 1 << 25


#: (query, run) visits from which the compiled run sums take two threads
#: (4-D benchmark: 5,201 queries x 117 runs, about 10 ms of one core; 5-D:
#: 2,714 queries x 2,401 runs, 35 ms in one)
_THREADED_RUN_VISITS = 1 << 18


#: Cells of the padded universe up to which a sparse release is also held
#: densely (float64: at most 256 MB) for :func:`_dense_run_sums`.
MAX_DENSE_CELLS = 1 << 25
_DENSE_ROWS = 1 << 15  # query rows per block of the dense sums


def _dense_cheaper(grid: Grid, offsets: np.ndarray, n_keys: int, n_query: int) -> bool:
    """A public cost model: one gather per offset and query, plus laying the
    padded universe out once, against two binary searches per run of offsets
    and query; only when the padded universe is small enough to hold."""
    R = max(int(offsets.max()), -int(offsets.min())) if offsets.size else 0
    cells = math.prod(s + 2 * R for s in grid.shape)
    if cells > MAX_DENSE_CELLS:
        return False
    n_runs = sum(1 for _ in offset_runs(offsets))
    runs = 2 * n_runs * max(math.log2(max(n_keys, 2)), 1.0) * n_query
    return offsets.shape[0] * n_query + cells < runs


def _dense_run_sums(grid: Grid, rkeys, rvals: np.ndarray, weights: BallWeights, query) -> np.ndarray:
    """:func:`_sparse_run_sums` from gathers in the released values laid out
    densely (unreleased cells read 0): per query and run, the terms in key
    order from 0, then the runs in order, as the runs add them, so the sums
    are the same bit for bit (a zero term leaves a sum unchanged)."""
    off = weights.offsets
    R = int(np.abs(off).max()) if off.size else 0
    P = np.zeros(tuple(s + 2 * R for s in grid.shape))
    P[tuple((grid.decode(rkeys) + R).T)] = rvals
    strides = np.array(P.strides, dtype=np.int64) // P.itemsize
    flat = P.ravel()
    index = {tuple(o): i for i, o in enumerate(off.tolist())}
    runs = [
        (
            int(np.dot(prefix, strides[:-1])) if prefix.size else 0,
            lo,
            hi,
            [index[tuple(prefix.tolist()) + (t,)] for t in range(lo, hi + 1)],
        )
        for prefix, lo, hi in offset_runs(off)
    ]
    Wt = weights.transposed()  # (offsets, positions)
    out = np.zeros((query.size, Wt.shape[1]))
    for a in range(0, query.size, _DENSE_ROWS):
        base = (grid.decode(query[a : a + _DENSE_ROWS]) + R) @ strides
        block = out[a : a + _DENSE_ROWS]
        for shift, lo, hi, cols in runs:
            acc = np.zeros_like(block)
            for t, col in zip(range(lo, hi + 1), cols):
                acc += flat[base + (shift + t)][:, None] * Wt[col][None, :]
            block += acc
    return out
