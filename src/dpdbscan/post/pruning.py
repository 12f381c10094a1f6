"""Pruning candidate core cells (post-processing only).

A cell X is core when its noisy neighbour sum S(X) reaches the threshold T.
When every released value is non-negative (sparse and stability histograms),
S(X) is at most the sum of the released values in any region containing
NB(X). Two kinds of region are used (:func:`regions`):

* buckets of ``side`` cells per axis (side >= reach): NB(X) lies in the 3^d
  block of buckets around X's bucket, so X can be core only if that block's
  values sum to >= T (X's bucket is "live"), and a released cell in NB of a
  core cell lies in the block around a live bucket. Block sums are box
  filters on a dense bucket array, linear in the number of buckets. Buckets
  of side reach prune best; when their grid is large, buckets of side
  k reach come first and the side-reach block sums are looked up only inside
  the live coarse buckets, or on the dense side-reach grid when too many are
  live (:func:`regions`). The cells of live buckets are listed only when they
  fit a memory budget (:data:`MAX_BUCKET_CELLS`); else the neighbourhood of
  the heavy cells, filtered a chunk at a time.
* shifted super-cells, on universes too large for that: with super-cells of
  side L = (d + 1)(2 reach + 1) in d + 1 grids shifted by i (2 reach + 1)
  cells (i = 0..d), every NB(X) lies inside one super-cell of at least one
  of the grids (per axis, the boundaries of all the grids together are the
  multiples of 2 reach + 1; an interval of 2 reach + 1 cells contains at most
  one of them, which belongs to one grid, so d axes rule out at most d
  grids). A core cell, and every released cell in its NB, therefore lies in
  a super-cell whose values sum to >= T ("rich") in some grid. d + 1 sorts.

With a million released empty cells of small value scattered over the
universe, almost no region reaches T and the candidates shrink to the
neighbourhood of the data. Reads the release only.
"""

from __future__ import annotations

import itertools
import math
from typing import Protocol

import numpy as np

from ..cells.grid import Grid, search_keys
from .sums import neighbourhood

_BIAS = 2  # bucket coordinates are shifted so that +-2 buckets stay in range
DENSE_BUCKETS = 1 << 24  # largest bucket grid held as a dense array
COARSE_BUCKETS = 1 << 21  # a first, coarser grid is cheap below this
SPARSE_BUCKETS = 1 << 22  # most fine buckets whose block sums are looked up
MAX_BUCKET_CELLS = 1 << 24  # most cells of live buckets listed at once (128 MB of keys)


def live_cells(
    grid: Grid, keys: np.ndarray, vals: np.ndarray, query: np.ndarray, threshold: float
) -> np.ndarray:
    """Mask of ``query`` cells that may be core or lie in NB of a core cell.

    ``keys`` (sorted) and ``vals`` are the released cells, all ``vals >= 0``.
    Every core cell, and every released cell in NB of a core cell, passes.
    """
    if query.size == 0:
        return np.zeros(0, dtype=bool)
    return regions(grid, keys, vals, threshold).near(query)


def core_candidates(
    grid: Grid, keys: np.ndarray, vals: np.ndarray, heavy: np.ndarray, threshold: float
) -> np.ndarray:
    """Sorted keys of a superset of the core cells.

    ``heavy`` must contain every released cell that lies in NB of a core cell
    (e.g. those holding >= T / kappa). The result is NB of the heavy cells
    near a live region, restricted to cells that may be core; with buckets,
    every cell of a live bucket when that is fewer.
    """
    reg = regions(grid, keys, vals, threshold)
    heavy = heavy[reg.near(heavy)] if heavy.size else heavy
    # both ways are bounded by memory, not only by which lists fewer cells
    cells = reg.live_bucket_cells(limit=min(heavy.size * grid.kappa, MAX_BUCKET_CELLS))
    if cells is not None:
        return cells
    return neighbourhood(grid, heavy, keep=reg.may_be_core)


class Regions(Protocol):
    """What :func:`regions` returns, for query cells (sorted keys): a mask of
    those that may be core or lie in NB of a core cell (``near``), of those
    that may be core (``may_be_core``), and every cell of the live buckets
    when there are at most ``limit`` of them, else None (``live_bucket_cells``)."""

    def near(self, query: np.ndarray) -> np.ndarray: ...

    def may_be_core(self, query: np.ndarray) -> np.ndarray: ...

    def live_bucket_cells(self, limit: int) -> np.ndarray | None: ...


def regions(grid: Grid, keys: np.ndarray, vals: np.ndarray, threshold: float) -> Regions:
    """Live buckets where a bucket grid fits a dense array, else rich
    super-cells; see the module docstring.

    Buckets of side ``reach`` prune best. When their grid is too large for a
    cheap dense array, a coarser dense grid (side k reach) comes first: a core
    cell lies in a live coarse bucket, so side-``reach`` block sums are then
    evaluated only at the k^d fine buckets of each live coarse bucket, from
    the sorted list of non-empty fine buckets.
    """
    thr = _superset_threshold(vals, threshold)
    reach = max(grid.reach, 1)
    n_fine = _n_buckets(grid.shape, reach)
    if n_fine <= COARSE_BUCKETS:
        return _Buckets(grid, keys, vals, thr, reach)
    side = 2 * reach
    # a block of 3^d buckets no larger than a super-cell, else super-cells
    while 3 * side <= (grid.d + 1) * (2 * reach + 1):
        if _n_buckets(grid.shape, side) <= COARSE_BUCKETS:
            coarse = _Buckets(grid, keys, vals, thr, side)
            live = np.argwhere(coarse.live) - _BIAS
            k = side // reach
            if live.shape[0] * k**grid.d > SPARSE_BUCKETS:
                # too many fine buckets to look up one by one: the dense
                # fine grid when it fits (noise scattered over a large
                # universe makes most coarse blocks live, few fine ones)
                return _Buckets(grid, keys, vals, thr, reach) if n_fine <= DENSE_BUCKETS else coarse
            steps = np.array(list(itertools.product(range(k), repeat=grid.d)), dtype=np.int64)
            fine = (live[:, None, :] * k + steps[None, :, :]).reshape(-1, grid.d)
            return _SparseBuckets(grid, keys, vals, thr, reach, fine)
        side += reach
    if n_fine <= DENSE_BUCKETS:
        return _Buckets(grid, keys, vals, thr, reach)
    return _SuperCells(grid, keys, vals, thr)


def _n_buckets(shape, side) -> int:
    return math.prod(-(-n // side) + 2 * _BIAS for n in shape)


def _superset_threshold(vals: np.ndarray, threshold: float) -> float:
    """Region sums of integers are exact; float values get room for the
    rounding of the sums (a superset is all that is needed)."""
    if vals.dtype.kind in "iub":
        return float(threshold)
    return threshold - 1e-9 * (1.0 + float(np.abs(vals).sum()))


def _box3(a: np.ndarray, logical: bool = False) -> np.ndarray:
    """Sum (or any) over the 3^d block around each entry. Only entries at
    least one step from every border are right; the border reads 0."""
    out = np.zeros_like(a)
    a = a.copy()
    for ax in range(a.ndim):
        mid = [slice(None)] * a.ndim
        lo, hi = list(mid), list(mid)
        mid[ax], lo[ax], hi[ax] = slice(1, -1), slice(None, -2), slice(2, None)
        o = out[tuple(mid)]
        o[...] = a[tuple(lo)]
        if logical:
            o |= a[tuple(mid)]
            o |= a[tuple(hi)]
        else:
            o += a[tuple(mid)]
            o += a[tuple(hi)]
        a, out = out, a  # ping-pong: the old input becomes the next output
        edge: list[slice | int] = [slice(None)] * a.ndim
        for e in (0, -1):
            edge[ax] = e
            a[tuple(edge)] = 0
    return a


class _Buckets:
    """Buckets of ``side`` cells, all of them in a dense array."""

    def __init__(self, grid, keys, vals, thr, side):
        self.grid, self.side = grid, side
        self.nb = tuple(-(-n // side) + 2 * _BIAS for n in grid.shape)
        b = self._index(keys)
        order = np.argsort(b, kind="stable")
        sb = b[order]
        integer = vals.dtype.kind in "iub"
        mass = np.zeros(math.prod(self.nb), dtype=np.int64 if integer else np.float64)
        if sb.size:
            starts = np.flatnonzero(np.concatenate(([True], sb[1:] != sb[:-1])))
            sums = np.add.reduceat(vals[order].astype(mass.dtype), starts)
            if integer and float(np.abs(sums).sum()) < 2**31:
                mass = mass.astype(np.int32)  # half the memory traffic
            mass[sb[starts]] = sums
        self.live = _box3(mass.reshape(self.nb)) >= thr
        self._near = None

    def _index(self, k):
        b = self.grid.decode(k) // self.side + _BIAS
        return np.ravel_multi_index(tuple(b.T), self.nb)

    def near(self, query: np.ndarray) -> np.ndarray:
        if self._near is None:
            self._near = _box3(self.live, logical=True).ravel()
        return self._near[self._index(query)]

    def may_be_core(self, query: np.ndarray) -> np.ndarray:
        return self.live.ravel()[self._index(query)]

    def live_bucket_cells(self, limit: int) -> np.ndarray | None:
        """Every valid cell of a live bucket (sorted keys), or None if more than ``limit``."""
        return _bucket_cells(self.grid, np.argwhere(self.live) - _BIAS, self.side, limit)


def _bucket_cells(grid, buckets, side, limit):
    d = grid.d
    if buckets.shape[0] * side**d > limit:
        return None
    steps = np.array(list(itertools.product(range(side), repeat=d)), dtype=np.int64)
    coords = (buckets[:, None, :] * side + steps[None, :, :]).reshape(-1, d)
    coords = coords[grid.valid(coords)]
    return np.sort(grid.encode(coords))


class _SparseBuckets:
    """Buckets of ``side`` cells whose block sums are evaluated only at the
    buckets ``cand`` (coordinates), from the sorted non-empty buckets. Every
    bucket outside ``cand`` counts as not live."""

    def __init__(self, grid, keys, vals, thr, side, cand):
        self.grid, self.side = grid, side
        nb = [-(-n // side) + 2 * _BIAS for n in grid.shape]
        self.strides = np.ones(grid.d, dtype=np.int64)
        for i in range(grid.d - 2, -1, -1):
            self.strides[i] = self.strides[i + 1] * nb[i + 1]
        bk = self._key(grid.decode(keys) // side)
        order = np.argsort(bk, kind="stable")
        sk = bk[order]
        integer = vals.dtype.kind in "iub"
        v = vals[order].astype(np.int64 if integer else np.float64)
        starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1]))) if sk.size else sk
        bkeys = sk[starts]
        bsums = np.add.reduceat(v, starts) if sk.size else v
        self.deltas = np.array(
            [int(np.dot(o, self.strides)) for o in itertools.product((-1, 0, 1), repeat=grid.d)]
        )
        ck = np.unique(self._key(cand))
        total = np.zeros(ck.size, dtype=v.dtype)
        if bkeys.size:
            for dk in self.deltas:
                idx, hit = search_keys(bkeys, ck + dk)
                total[hit] += bsums[idx[hit]]
        self.live = ck[total >= thr]
        self.near_keys = np.unique((self.live[:, None] + self.deltas).ravel())

    def _key(self, bucket_coords):
        return (bucket_coords + _BIAS) @ self.strides

    def near(self, query: np.ndarray) -> np.ndarray:
        return search_keys(self.near_keys, self._key(self.grid.decode(query) // self.side))[1]

    def may_be_core(self, query: np.ndarray) -> np.ndarray:
        return search_keys(self.live, self._key(self.grid.decode(query) // self.side))[1]

    def live_bucket_cells(self, limit: int) -> np.ndarray | None:
        if self.live.size * self.side**self.grid.d > limit:
            return None
        coords = np.empty((self.live.size, self.grid.d), dtype=np.int64)
        rest = self.live.copy()
        for i in range(self.grid.d):
            coords[:, i], rest = np.divmod(rest, self.strides[i])
        return _bucket_cells(self.grid, coords - _BIAS, self.side, limit)


def _row_keys(rows: np.ndarray, extent) -> np.ndarray:
    """Sortable keys of non-negative integer rows below ``extent`` per column."""
    if math.prod(extent) < 1 << 62:
        strides = np.ones(len(extent), dtype=np.int64)
        for i in range(len(extent) - 2, -1, -1):
            strides[i] = strides[i + 1] * extent[i + 1]
        return rows @ strides
    row = np.dtype(("V", 8 * rows.shape[1]))
    return np.ascontiguousarray(rows.astype(">i8")).view(row).ravel()


class _SuperCells:
    def __init__(self, grid, keys, vals, thr):
        d = grid.d
        self.grid = grid
        self.s = 2 * max(grid.reach, 1) + 1
        self.L = (d + 1) * self.s
        self.extent = [(n - 1 + d * self.s) // self.L + 1 for n in grid.shape]
        kc = grid.decode(keys)
        v = vals.astype(np.float64)
        self.rich = []
        for i in range(d + 1):
            kk = self._keys(kc, i)
            order = np.argsort(kk, kind="stable")
            sk = kk[order]
            if sk.size == 0:
                self.rich.append(sk)
                continue
            starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
            self.rich.append(sk[starts][np.add.reduceat(v[order], starts) >= thr])

    def _keys(self, coords, i):
        return _row_keys((coords + i * self.s) // self.L, self.extent)

    def near(self, query: np.ndarray) -> np.ndarray:
        qc = self.grid.decode(query)
        ok = np.zeros(query.size, dtype=bool)
        for i, rich in enumerate(self.rich):
            if rich.size:
                ok |= search_keys(rich, self._keys(qc, i))[1]
        return ok

    may_be_core = near

    def live_bucket_cells(self, limit: int) -> np.ndarray | None:
        return None
