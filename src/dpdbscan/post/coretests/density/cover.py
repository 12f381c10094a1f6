"""An upper bound of every weighted ball sum of a cell from a few box sums:
the density test's cheap way to rule out released empty cells.

A sparse release scatters many lone empty cells over the universe (every
cell whose noise clears theta). Their weighted sums E~(q) = sum_o W(q, o)
x~_{X+o} are far below the threshold, but computing them visits every
offset of the alpha-ball (609 in 4-D). The cube around X (side 2R + 1)
bounds the sum with weight 1 everywhere, which is too loose: the ball's
weights sum to ~79 cells in 4-D, the cube has 625.

The kernel K(o) = max_q W(q, o) is nearly radial. Class each offset of the
cube by its Chebyshev radius s = max_i |o_i| and by whether one coordinate
or several reach s. Boxes of two kinds cover the classes:

* the cube C_r of half-width r (all offsets of radius <= r);
* the cross boxes B_{k,r}: half-width r along axis k, r - 1 along the others
  (the offsets of radius r with only axis k at r, and all of radius < r).

With coefficients c_r on C_r and b_r on every B_{k,r} (chosen from the outer
shell inwards, :func:`shell_cover`), the coefficient an offset of class
(s, several) receives is exactly the largest K in that class, and (s, one)
the largest K of either class; so it is at least K(o) at every offset of the
cube (and >= 0 off the ball). On a non-negative release

    E~(q) = sum_o W(q, o) x~_{X+o} <= sum_o K(o) x~_{X+o}
          <= c_0 x~_X + sum_r c_r C_r(X) + b_r sum_k B_{k,r}(X),

a handful of box sums per cell, read from one summed-area table of the
universe (:func:`cover_sums`; from 4-D up, the compiled pass of
:mod:`.compiled` streams the tables plane by plane, holding a few planes).
In 4-D the bound's expected value over uniform noise is 156 cells' worth
(the kernel's 79) instead of 625. It is post-processing of the release and
public constants (the weights) only: cells it rules out fail the exact test
anyway, so the release's core cells are unchanged.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ....cells.grid import Grid
from ....cells.histogram import NoisyHistogram
from .weights import BallWeights


@dataclass(frozen=True)
class ShellCover:
    """Coefficients of the cube and cross boxes of half-width r = 0..R.

    Attributes
    ----------
    cube : ndarray of shape (R + 1,)
        c_r on C_r (C_0 is the cell itself).
    cross : ndarray of shape (R + 1,)
        b_r on each B_{k,r} (b_0 = 0).
    """

    cube: np.ndarray
    cross: np.ndarray

    @property
    def R(self) -> int:
        return self.cube.size - 1

    def pointwise(self, offsets: np.ndarray) -> np.ndarray:
        """The coefficient each offset receives from the boxes that hold it
        (the bound is sum_o pointwise(o) x~_{X+o})."""
        off = np.abs(np.asarray(offsets, dtype=np.int64))
        d = off.shape[1]
        out = np.zeros(off.shape[0])
        for r in range(self.R + 1):
            out += self.cube[r] * (off.max(axis=1) <= r)
            if r:
                inside = off <= r
                below = off <= r - 1
                for k in range(d):
                    held = inside[:, k] & np.delete(below, k, axis=1).all(axis=1)
                    out += self.cross[r] * held
        return out


def shell_cover(
    offsets: np.ndarray, kernel: np.ndarray, cross: bool = True, from_radius: int = 1
) -> ShellCover:
    """Box coefficients whose pointwise coefficient is >= ``kernel`` at every
    offset (and >= 0 at every offset of the cube outside ``offsets``).

    From the outer shell in, with ``acc`` the coefficient every offset of
    radius s gets from the boxes of radius > s: c_s = M2_s - acc (several
    coordinates at s: in C_r for r >= s and in every cross box of r > s),
    b_s = max(0, M1_s - M2_s) (one coordinate at s: also in one B_{k,s});
    M1_s, M2_s the largest kernel of each class (0 when it has none).
    ``cross=False``: cubes only (c_s = max(M1_s, M2_s) - acc), a looser
    bound at a fifth of the corners in 4-D; ``from_radius``: cross boxes
    only from that radius out (cubes inside), in between (4-D: cross boxes
    at R = 2 only take 6 boxes instead of 10 and keep 5,766 of 81,475
    candidates where all take 5,201). A tiny slack on c_R keeps the
    pointwise coefficients above the kernel despite rounding (c_R reaches
    every offset of the cube).
    """
    off = np.abs(np.asarray(offsets, dtype=np.int64))
    K = np.asarray(kernel, dtype=np.float64)
    d = off.shape[1]
    R = int(off.max()) if off.size else 0
    s = off.max(axis=1)
    at = (off == s[:, None]).sum(axis=1)
    c = np.zeros(R + 1)
    b = np.zeros(R + 1)
    acc = 0.0
    for r in range(R, 0, -1):
        shell = s == r
        m1 = float(K[shell & (at == 1)].max(initial=0.0))
        m2 = float(K[shell & (at > 1)].max(initial=0.0))
        if cross and r >= from_radius:
            c[r] = m2 - acc
            b[r] = max(0.0, m1 - m2)
        else:
            c[r] = max(m1, m2) - acc
        acc += c[r] + d * b[r]
    c[0] = float(K[s == 0].max(initial=0.0)) - acc
    c[R] += 1e-12 * (1.0 + float(np.abs(c).sum() + d * np.abs(b).sum()))
    return ShellCover(c, b)


#: Cells of the padded universe up to which :func:`cover_sums` holds its
#: summed-area table (int32 or float64: at most 256 MB).
MAX_TABLE_CELLS = 1 << 25
#: The dimension from which the density test's numpy steps give way to the
#: compiled kernels of :mod:`.compiled`. In 3-D the numpy table is within
#: 10% of the kernel on the benchmark's points, and numba's import and first
#: dispatch (0.4-1.3 s per process, more memory) would fall on every 3-D
#: command; 2-D must never load it.
COMPILED_FROM_D = 4
#: From 4-D up the compiled pass holds a few planes, not the universe: it
#: takes universes up to this many times :data:`MAX_TABLE_CELLS` where the
#: candidates' exact sums would read more cells (a public cost model: about
#: one table cell per gather, 4-D at eps = 0.02 has 1.2e8 cells against
#: 497k candidates x 609 offsets), and slabs up to :data:`MAX_SLAB_CELLS`
#: (the routing of the slab pass it replaced, kept: a slab's planes are
#: built once per slab and each of its 2R + 1 neighbours).
COMPILED_TABLE_FACTOR = 16
#: Below :data:`COMPILED_FROM_D`, a dense integer release of at least this
#: many cells (a public size: 3-D at alpha <= 0.0136 with eta = 4) reads its
#: table's corners in one compiled pass (:meth:`_Table.compiled_bounds`, the
#: same bounds), and its exact sums gather in place, without a padded copy
#: (:func:`.weightedsums.weighted_sums_at`): 3-D at alpha 0.01 (5.3M cells,
#: 1.43M candidates) took 0.16 s of CPU for the bound in numpy and 0.09 s
#: compiled, where the `dbscan` package's whole fit takes 0.2 s. A process's
#: first such fit pays numba's import (0.1-0.7 s of CPU measured under load).
#: The density test takes its occupied cells and their bound there in three
#: passes over the grid (:func:`dense_cover_candidates`: 0.11 -> 0.04 s on
#: those 5.3M cells), the same cells.
#: From 2^18 cells (it was 2^21): the 3-D benchmark's grid at 1e4 points
#: (659k cells, nearly all noise) took 71 ms of CPU per warm fit in numpy
#: and 34 ms compiled, the same release. Below :data:`COMPILED_ALWAYS_CELLS`
#: the compiler is never loaded for this alone: numba's import and first
#: dispatch (0.5-0.8 s of wall at load 5) would cost a one-shot run such as
#: the command line far more than it saves, and the benchmark's second fit
#: of a process that loaded it there took 0.70 s against 0.13 s. The
#: compiled steps are taken there where numba is loaded already (a 4-D fit,
#: a larger 3-D grid: :func:`dense_compiled`), as the merge's union-find
#: over blocks is. Smaller grids (64^3 cells and fewer) stay in numpy.
COMPILED_DENSE_CELLS = 1 << 18
#: From this many cells the compiled steps are always taken (5.3M cells at
#: 0.5x the benchmark's alpha: 0.11 -> 0.04 s, more than the import).
COMPILED_ALWAYS_CELLS = 1 << 21
MAX_SLAB_CELLS = 1 << 22
_ROWS = 1 << 13  # candidates per block of corner gathers (and one BLAS thread)


def cover_sums(
    hist: NoisyHistogram,
    cand: np.ndarray,
    weights: BallWeights,
    own: np.ndarray | None = None,
    threshold: float | None = None,
) -> np.ndarray | None:
    """The bound of this module (:func:`shell_cover` of the weights' kernel)
    at each candidate key of a release: every box sum is 2^d corners of one
    summed-area table of the universe padded by R. None when that table
    would hold more than :data:`MAX_TABLE_CELLS` cells (from 4-D up: see
    :data:`COMPILED_TABLE_FACTOR`).

    The table holds the positive parts of the values: with W >= 0,
    sum_o W(q, o) x~ <= sum_o W(q, o) max(x~, 0), so the bound holds for a
    signed (dense) release too. A dense release in 3-D has a few hundred
    thousand cells whose noise clears the occupancy cut; their sums read
    the noise of ~22 cells' worth against a threshold of MinPts plus a
    margin, and the bound of ~35 cells' worth of positive parts rules out
    most of them at 16 corners each instead of 117 gathers and a product.

    ``own``: the candidates' released values, if the caller has them. With
    a ``threshold``, the cubes-only bound is computed first, then (R > 1)
    the one with cross boxes at R only, then the full one, each only where
    the one before reaches the threshold: every value returned is an upper
    bound, tight enough to compare with the threshold.
    """
    grid = hist.grid
    R = max(int(weights.offsets.max()), -int(weights.offsets.min())) if weights.offsets.size else 0
    shape = tuple(s + 2 * R + 1 for s in grid.shape)
    compiled = grid.d >= COMPILED_FROM_D and not grid.wide
    cells = math.prod(shape)
    if cells > MAX_TABLE_CELLS and not (
        compiled
        and cells <= COMPILED_TABLE_FACTOR * MAX_TABLE_CELLS
        and cells <= cand.size * weights.offsets.shape[0]
        and math.prod(shape[1:]) <= MAX_SLAB_CELLS
    ):
        return None
    kernel = weights.kmax
    values = hist.values
    total = float(np.maximum(values, 0).sum(dtype=np.float64))
    exact = values.dtype.kind in "iu" and total < 2**31 - 1
    mine = hist.value_at(cand) if own is None else own
    mine = np.maximum(np.asarray(mine, dtype=np.float64), 0.0)
    # from the cheapest bound to the tightest, each on the cells the one
    # before could not rule out
    covers = [shell_cover(weights.offsets, kernel)] if threshold is None else staged_covers(weights)
    if compiled:
        return _compiled_cover(hist, np.asarray(cand), mine, covers, R, exact, total, threshold)
    return _numpy_cover(hist, cand, mine, covers, R, exact, total, threshold)


def staged_covers(weights: BallWeights) -> list[ShellCover]:
    """The covers of :func:`cover_sums`' staged bound (given a threshold),
    cheapest first: cubes only, then (R > 1) cross boxes at R only, then
    all of them."""
    R = max(int(weights.offsets.max()), -int(weights.offsets.min())) if weights.offsets.size else 0
    covers = [shell_cover(weights.offsets, weights.kmax, cross=False)]
    if R > 1:
        covers.append(shell_cover(weights.offsets, weights.kmax, from_radius=R))
    covers.append(shell_cover(weights.offsets, weights.kmax))
    return covers


def dense_cover_candidates(
    hist: NoisyHistogram,
    weights: BallWeights,
    cut: float,
    heavy_cut: float,
    threshold: float,
    beats_noise: Callable[[], bool],
) -> tuple[np.ndarray, np.ndarray] | None:
    """The candidates of :func:`.coresubcells.density_field` on a large dense
    3-D integer release (:func:`dense_compiled`) that its box cover keeps,
    in three compiled passes over the grid instead of numpy's steps: the
    cells holding at least ``cut`` (``_occupied_cells``), whose bound of
    :func:`cover_sums` at ``threshold`` reaches ``threshold``, as sorted
    keys and their values: the same cells and values as
    ``_occupied_cells``, then ``cover_sums(...) >= threshold``, bit for bit
    (the same integer table, the same float terms in the same order).

    None where that is not the path the density test takes from those
    cells (the caller then takes it step by step): the cells within reach
    of the ``heavy_cut`` cells are fewer (``_dense_near_mask``), the cover
    does not pay (:func:`cover_pays`, ``beats_noise``), its table is too
    large, or the positive mass is 2^31 or more (a float table). 3-D at
    0.5x the benchmark's alpha (5.27M cells, 1.43M candidates, 22,941
    kept): about 0.04 s of CPU against 0.11 s step by step."""
    grid = hist.grid
    values = hist.values
    if hist.kind != "dense" or not dense_compiled(grid) or grid.d != 3 or values.dtype.kind not in "iu":
        return None
    # lazy: numba loads only where a kernel runs (3-D: large dense grids)
    from .compiled import dense_scan, dense_table_bounds, prefix_table3

    flat = np.ascontiguousarray(values, dtype=np.int64).ravel()
    count, heavy, total = dense_scan(flat, float(cut), float(heavy_cut))
    offsets = weights.offsets
    if count == 0 or heavy * offsets.shape[0] < count:
        return None
    R = max(int(offsets.max()), -int(offsets.min())) if offsets.size else 0
    shape = tuple(s + 2 * R + 1 for s in grid.shape)
    if not cover_pays(grid.shape, offsets, count) or math.prod(shape) > MAX_TABLE_CELLS:
        return None
    if not float(total) < 2**31 - 1 or not beats_noise():
        return None
    S = np.zeros(shape, dtype=np.int32)
    dims = np.asarray(grid.shape, dtype=np.int64)
    prefix_table3(flat, dims, R + 1, S)
    table = _Table(S, True, float(total))
    c0, first, coef, deltas, slack = table.staged(staged_covers(weights))
    # each distinct box once (the cubes recur in every stage)
    boxes, box_of = np.unique(deltas, axis=0, return_inverse=True)
    if int(first[1]) != np.unique(box_of[: int(first[1])]).size:
        return None  # (a first stage that lists a box twice: never made by staged_covers)
    out = np.empty(count, dtype=np.int64)
    got = dense_table_bounds(
        flat, dims, float(cut), table.flat, table.strides, R + 1, c0, first, coef,
        np.ascontiguousarray(box_of, dtype=np.int64).ravel(), np.ascontiguousarray(boxes), table.signs,
        slack, float(threshold), out,
    )  # fmt: skip
    idx = out[:got]
    return grid.keys_of_positions(idx), values.reshape(-1)[idx]


def dense_compiled(grid: Grid) -> bool:
    """Whether a dense release on ``grid`` below :data:`COMPILED_FROM_D`
    takes the compiled steps: 3-D, at least :data:`COMPILED_ALWAYS_CELLS`
    cells, or at least :data:`COMPILED_DENSE_CELLS` where numba is loaded
    already (public sizes and the process's own state, never the data; 2-D
    never loads the compiler). Both ways give the same release bit for bit."""
    if not (3 <= grid.d < COMPILED_FROM_D and not grid.wide and grid.n_cells >= COMPILED_DENSE_CELLS):
        return False
    return grid.n_cells >= COMPILED_ALWAYS_CELLS or "numba" in sys.modules


def _key_strides(grid: Grid) -> np.ndarray:
    """The key difference of a step along each axis (int64 keys)."""
    return np.array([grid.key_delta(e) for e in np.eye(grid.d, dtype=np.int64)], dtype=np.int64)


def _numpy_cover(
    hist: NoisyHistogram,
    cand: np.ndarray,
    mine: np.ndarray,
    covers: list[ShellCover],
    R: int,
    exact: bool,
    total: float,
    threshold: float | None,
) -> np.ndarray:
    """:func:`cover_sums` from one summed-area table of the padded universe
    (below :data:`COMPILED_FROM_D`, and wide keys). The table's corners are
    read in numpy, except on a dense integer release of at least
    :data:`COMPILED_DENSE_CELLS` cells, where one compiled pass gives the
    same values (:meth:`_Table.compiled_bounds`)."""
    grid = hist.grid
    values = hist.values
    shape = tuple(s + 2 * R + 1 for s in grid.shape)
    S = np.zeros(shape, dtype=np.int32 if exact else np.float64)
    # cell x of an axis at index x + R + 1 (index 0 holds the prefix's zero)
    coords = None
    if hist.kind == "dense":
        np.maximum(values, 0, out=S[tuple(slice(R + 1, R + 1 + s) for s in grid.shape)], casting="unsafe")
    else:
        coords = grid.decode(hist.released_keys)
        S[tuple((coords + R + 1).T)] = np.maximum(values, 0)
        if not np.array_equal(cand, hist.released_keys):  # (the candidates are often all of them)
            coords = None
    _prefix_sums(S)
    table = _Table(S, exact, total)
    if exact and hist.kind == "dense" and dense_compiled(grid):
        thr = -math.inf if threshold is None else float(threshold)
        return table.compiled_bounds(grid, np.asarray(cand), R + 1, mine, covers, thr)
    if coords is None:
        base = _table_index(grid, cand, R + 1, table.strides)
    else:
        base = (coords + R + 1) @ table.strides
    out = table.bound(base, mine, covers[0])
    again = np.arange(out.size) if threshold is None else np.flatnonzero(out >= threshold)
    for cover in covers[1:]:
        out[again] = table.bound(base[again], mine[again], cover)
        again = again[out[again] >= threshold]
    return out


def _table_index(grid: Grid, keys: np.ndarray, pad: int, strides: np.ndarray) -> np.ndarray:
    """The index in a table of the cells padded by ``pad`` (``strides``, in
    entries) of the cells ``keys``: ``(decode(keys) + pad) @ strides``,
    axis by axis from the keys without the coordinates' array or an int64
    product (which numpy has no fast kernel for)."""
    if grid.wide:
        return (grid.decode(keys) + pad) @ strides
    rem = np.asarray(keys, dtype=np.int64)
    out = np.full(rem.size, pad * int(strides.sum()), dtype=np.int64)
    for i in range(grid.d - 1):
        step = grid.key_delta(np.eye(grid.d, dtype=np.int64)[i])
        q = rem // step
        rem = rem - q * step
        q *= int(strides[i])
        out += q
    out += rem
    return out


def _compiled_cover(
    hist: NoisyHistogram,
    cand: np.ndarray,
    mine: np.ndarray,
    covers: list[ShellCover],
    R: int,
    exact: bool,
    total: float,
    threshold: float | None,
) -> np.ndarray:
    """:func:`cover_sums` from 4-D up by the compiled streamed pass of
    :mod:`.compiled` (the summed-area table of the whole padded universe
    and its 2^d corner gathers per box cost far more in memory traffic)."""
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from .compiled import as_table_values, streamed_cover

    grid = hist.grid
    d = grid.d
    if cand.size > 1 and not bool(np.all(cand[1:] >= cand[:-1])):
        order = np.argsort(cand, kind="stable")
        out = np.empty(cand.size)
        out[order] = _compiled_cover(hist, cand[order], mine[order], covers, R, exact, total, threshold)
        return out
    halves = []  # half-widths along every axis: C_r, then B_{k,r}
    radius = []
    for r in range(1, R + 1):
        halves.append(np.full(d, r))
        halves += [np.where(np.arange(d) == k, r, r - 1) for k in range(d)]
        radius += [r] * (d + 1)
    box_h = np.array(halves, dtype=np.int64).reshape(len(halves), d)
    coef = np.zeros((len(covers), len(halves)))
    for s, cover in enumerate(covers):
        coef[s] = [cover.cube[r] if j % (d + 1) == 0 else cover.cross[r] for j, r in enumerate(radius)]
    c0 = np.array([cover.cube[0] for cover in covers])
    # rounding: integer box sums are exact; float ones err by a few ulps of
    # the total per corner and per slab summed
    scale = 1.0 if exact else 2**d * (2 * R + 1) * (total + 1.0)
    magnitude = np.abs(c0) + np.abs(coef).sum(axis=1)
    slack = 1e-9 * (1.0 + magnitude * scale)
    if hist.kind == "dense":
        keys = np.empty(0, dtype=np.int64)
        vals = as_table_values(np.ascontiguousarray(hist.values).ravel(), exact)
    else:
        keys = np.asarray(hist.released_keys, dtype=np.int64)
        vals = as_table_values(hist.values, exact)
    plane = [s + 2 * R + 1 for s in grid.shape[2:]]
    dtype = np.int32 if exact else np.float64
    thr = math.inf if threshold is None else float(threshold)
    shape = np.asarray(grid.shape, dtype=np.int64)
    key_strides = _key_strides(grid)
    cand = np.asarray(cand, dtype=np.int64)
    out = np.full(cand.size, np.inf)  # (keys beyond the grid keep no bound)

    def part(first: int, stop: int) -> None:
        # each part its own work tables: R planes of raw sums, R rings of
        # 2R + 2 planes of the tables A_r, a running row
        Z = np.zeros((R, math.prod(plane)), dtype=dtype)
        T = np.empty((R, 2 * R + 2, math.prod(plane)), dtype=dtype)
        qrow = np.empty(math.prod(plane[1:]), dtype=dtype)
        streamed_cover(
            hist.kind == "dense", keys, vals, shape, key_strides, R, cand, mine, box_h,
            coef, c0, slack, thr, Z, T, qrow, first, stop, out,
        )  # fmt: skip

    n0 = grid.shape[0]
    threads = _threads(math.prod(shape.tolist()), n0)
    if threads == 1:
        part(0, n0)
    else:
        from concurrent.futures import ThreadPoolExecutor

        # the slabs are independent: halve those holding candidates
        slab_of = np.searchsorted(cand, np.arange(n0 + 1, dtype=np.int64) * int(key_strides[0]))
        busy = np.flatnonzero(np.diff(slab_of) > 0)
        cut = int(busy[busy.size // 2]) if busy.size > 1 else n0
        cuts = [0, cut, n0]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(lambda t: part(cuts[t], cuts[t + 1]), range(threads)))
    return out


#: Cells of the universe from which the compiled cover runs in two threads
#: (each half of the busy slabs, with its own tables; the kernel releases the GIL).
THREADED_CELLS = 1 << 22
#: ... and from this many slabs
THREADED_SLABS = 8


def _threads(cells: int, n0: int) -> int:
    """Threads of the compiled cover: two on a machine with two cores or more
    when the universe is large and has a few slabs, else one. Public sizes
    only; the bounds are the same either way (the slabs are independent)."""
    if cells >= THREADED_CELLS and n0 >= THREADED_SLABS and (os.cpu_count() or 1) >= 2:
        return 2
    return 1


def cover_pays(shape: tuple[int, ...], offsets: np.ndarray, n_cand: int) -> bool:
    """Whether the cover is worth its table before the exact dense sums: a
    public cost model, the sums' gathers (one per offset and candidate)
    against 8 per cell of the padded universe (zeros, prefix sums, corners).
    3-D blobs: 184k candidates x 117 offsets against 0.78M cells (yes);
    2-D at 1e6 points: 100k x 21 against 0.51M (no: it cost more than it saved)."""
    R = max(int(offsets.max()), -int(offsets.min())) if offsets.size else 0
    cells = math.prod(s + 2 * R + 1 for s in shape)
    return cells <= MAX_TABLE_CELLS and n_cand * offsets.shape[0] >= 8 * cells


def _prefix_sums(S: np.ndarray) -> None:
    """Summed-area table in place. Along the leading axes one slice at a time
    (contiguous blocks: numpy's cumsum along a non-last axis of a large
    array was several times slower), along the last by cumsum."""
    for axis in range(S.ndim - 1):
        for i in range(1, S.shape[axis]):
            dst = (slice(None),) * axis + (i,)
            src = (slice(None),) * axis + (i - 1,)
            S[dst] += S[src]
    np.cumsum(S, axis=-1, out=S)


class _Table:
    """Box sums at chosen cells from a summed-area table."""

    def __init__(self, S: np.ndarray, exact: bool, total: float):
        self.flat = S.ravel()
        self.d = S.ndim
        self.strides = np.array(S.strides, dtype=np.int64) // S.itemsize
        self.exact = exact
        self.total = total
        corners = np.array(list(itertools.product((0, 1), repeat=self.d)), dtype=np.int64)
        self.corners = corners
        self.signs = np.where((self.d - corners.sum(axis=1)) % 2 == 0, 1, -1).astype(np.int64)

    def boxes(self, cover: ShellCover) -> tuple[list[tuple[float, np.ndarray]], float]:
        """The boxes of ``cover`` with a coefficient, each with its corner
        deltas in the table, and the bound's additive slack for rounding."""
        d = self.d
        boxes = []  # (coefficient, corner deltas)
        for r in range(1, cover.R + 1):
            halves = [(cover.cube[r], np.full(d, r))]
            if cover.cross[r] != 0.0:
                halves += [(cover.cross[r], np.where(np.arange(d) == k, r, r - 1)) for k in range(d)]
            for coef, a in halves:
                if coef != 0.0:
                    # box [x - a, x + a]: corners at x + a (upper) or x - a - 1 (lower)
                    pos = np.where(self.corners == 1, a[None, :], -a[None, :] - 1)
                    boxes.append((float(coef), pos @ self.strides))
        # rounding: integer box sums are exact; float prefix sums err by a
        # few ulps of the total per corner
        magnitude = abs(float(cover.cube[0])) + sum(abs(c) for c, _ in boxes)
        scale = 1.0 if self.exact else 2**d * (self.total + 1.0)
        return boxes, 1e-9 * (1.0 + magnitude * scale)

    def bound(self, base: np.ndarray, own: np.ndarray, cover: ShellCover) -> np.ndarray:
        boxes, slack = self.boxes(cover)
        out = cover.cube[0] * own
        if self.exact:
            # integer corners added in int32: a sum that wraps past 2^31 on
            # the way still ends exact (the box's sum is below 2^31), the
            # value the float product gives, at a gather per corner
            # and no (rows, 2^d) index block, cast and product (3-D: half the time)
            plus, minus = np.flatnonzero(self.signs > 0), np.flatnonzero(self.signs < 0)
            for coef, deltas in boxes:
                box = np.take(self.flat, base + deltas[plus[0]])
                for c in plus[1:]:
                    box += np.take(self.flat, base + deltas[c])
                for c in minus:
                    box -= np.take(self.flat, base + deltas[c])
                out += coef * box
            return out * (1 + 1e-12) + slack
        # a float product with the signs: integer corners (< 2^31 each, 2^d
        # of them) sum exactly in float64, and it is 25% faster than int64
        signs = self.signs.astype(np.float64)
        for a0 in range(0, base.size, _ROWS):
            b = base[a0 : a0 + _ROWS, None]
            acc = out[a0 : a0 + _ROWS]
            for coef, deltas in boxes:
                acc += coef * (self.flat[b + deltas[None, :]] @ signs)
        return out * (1 + 1e-12) + slack

    def staged(self, covers: list[ShellCover]) -> tuple[np.ndarray, ...]:
        """The compiled kernels' arguments of the staged bound of ``covers``:
        ``(c0, first, coef, deltas, slack)`` (see :func:`.compiled.table_bounds`)."""
        if not self.exact:
            raise ValueError("the compiled bound reads integer tables only")
        c0, first, coef, deltas, slack = [], [0], [], [], []
        for cover in covers:
            boxes, extra = self.boxes(cover)
            c0.append(float(cover.cube[0]))
            first.append(first[-1] + len(boxes))
            coef += [c for c, _ in boxes]
            deltas += [dl for _, dl in boxes]
            slack.append(extra)
        return (
            np.array(c0),
            np.array(first, dtype=np.int64),
            np.array(coef),
            np.array(deltas, dtype=np.int64).reshape(len(coef), self.corners.shape[0]),
            np.array(slack),
        )

    def compiled_bounds(
        self, grid: Grid, keys: np.ndarray, pad: int, own: np.ndarray, covers: list[ShellCover], thr: float
    ) -> np.ndarray:
        """:meth:`bound` of each cover in turn, each where the one before
        reaches ``thr`` (the staged bound), in one compiled pass over the
        keys: the same values bit for bit (integer tables only: their box
        sums are exact, and the kernel adds the same float terms in the
        same order)."""
        # lazy: numba loads only where a kernel runs (3-D: large dense grids)
        from .compiled import table_bounds

        c0, first, coef, deltas, slack = self.staged(covers)
        out = np.empty(keys.size)
        table_bounds(
            self.flat, np.asarray(keys, dtype=np.int64), _key_strides(grid),
            self.strides, pad, np.ascontiguousarray(own, dtype=np.float64), c0,
            first, coef, deltas, self.signs, slack, float(thr), out,
        )  # fmt: skip
        return out


__all__ = [
    "ShellCover",
    "shell_cover",
    "cover_sums",
    "cover_pays",
    "MAX_TABLE_CELLS",
    "COMPILED_TABLE_FACTOR",
    "COMPILED_FROM_D",
    "MAX_SLAB_CELLS",
    "COMPILED_DENSE_CELLS",
    "dense_compiled",
    "dense_cover_candidates",
    "staged_covers",
]
