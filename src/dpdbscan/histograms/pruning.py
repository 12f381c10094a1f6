"""Pruning candidate core cells (post-processing only).

A cell X is core when its noisy neighbour sum S(X) reaches the threshold T.
When every released value is non-negative (sparse and stability histograms),
S(X) is at most the sum of the released values in any region containing
NB(X). Two kinds of region are used (:func:`regions`):

* buckets of ``side`` cells per axis, the smallest multiple of ``reach`` whose
  bucket grid fits a dense array: NB(X) lies in the 3^d block of buckets
  around X's bucket, so X can be core only if that block's values sum to
  >= T (X's bucket is "live"), and a released cell in NB of a core cell lies
  in the block around a live bucket. Block sums are box filters on the dense
  bucket array: linear in the number of buckets.
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

import numpy as np

from .base import neighbourhood

_BIAS = 2  # bucket coordinates are shifted so that +-2 buckets stay in range
DENSE_BUCKETS = 1 << 24  # largest bucket grid held as a dense array


def live_cells(grid, keys: np.ndarray, vals: np.ndarray, query: np.ndarray,
               threshold: float) -> np.ndarray:
    """Mask of ``query`` cells that may be core or lie in NB of a core cell.

    ``keys`` (sorted) and ``vals`` are the released cells, all ``vals >= 0``.
    Every core cell, and every released cell in NB of a core cell, passes.
    """
    if query.size == 0:
        return np.zeros(0, dtype=bool)
    return regions(grid, keys, vals, threshold).near(query)


def core_candidates(grid, keys: np.ndarray, vals: np.ndarray, heavy: np.ndarray,
                    threshold: float) -> np.ndarray:
    """Sorted keys of a superset of the core cells.

    ``heavy`` must contain every released cell that lies in NB of a core cell
    (e.g. those holding >= T / kappa). The result is NB of the heavy cells
    near a live region, restricted to cells that may be core; with buckets,
    every cell of a live bucket when that is fewer.
    """
    reg = regions(grid, keys, vals, threshold)
    heavy = heavy[reg.near(heavy)] if heavy.size else heavy
    cells = reg.live_bucket_cells(limit=heavy.size * grid.kappa)
    if cells is not None:
        return cells
    cand = neighbourhood(grid, heavy)
    return cand[reg.may_be_core(cand)] if cand.size else cand


def regions(grid, keys, vals, threshold):
    """Live buckets (dense) where the bucket grid is small enough, else rich
    super-cells; see the module docstring."""
    thr = _superset_threshold(vals, threshold)
    reach = max(grid.reach, 1)
    side = reach
    # a block of 3^d buckets no larger than a super-cell, else super-cells
    while 3 * side <= (grid.d + 1) * (2 * reach + 1):
        nb = tuple(-(-s // side) + 2 * _BIAS for s in grid.shape)
        if math.prod(nb) <= DENSE_BUCKETS:
            return _Buckets(grid, keys, vals, thr, side, nb)
        side += reach
    return _SuperCells(grid, keys, vals, thr)


def _superset_threshold(vals: np.ndarray, threshold: float) -> float:
    """Region sums of integers are exact; float values get room for the
    rounding of the sums (a superset is all that is needed)."""
    if vals.dtype.kind in "iub":
        return float(threshold)
    return threshold - 1e-9 * (1.0 + float(np.abs(vals).sum()))


def _box3(a: np.ndarray, logical: bool = False) -> np.ndarray:
    """Sum (or any) over the 3^d block around each entry. Only entries at
    least one step from every border are filled; the border reads 0."""
    for ax in range(a.ndim):
        out = np.zeros_like(a)
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
        a = out
    return a


class _Buckets:
    def __init__(self, grid, keys, vals, thr, side, nb):
        self.grid, self.side, self.nb = grid, side, nb
        b = self._index(keys)
        order = np.argsort(b, kind="stable")
        sb = b[order]
        starts = np.flatnonzero(np.concatenate(([True], sb[1:] != sb[:-1]))) if sb.size else sb
        integer = vals.dtype.kind in "iub"
        sums = np.add.reduceat(vals[order].astype(np.int64 if integer else np.float64), starts) \
            if sb.size else np.zeros(0)
        total = float(np.abs(sums).sum()) if sums.size else 0.0
        dtype = np.int32 if integer and total < 2**31 else (np.int64 if integer else np.float64)
        mass = np.zeros(math.prod(nb), dtype=dtype)
        mass[sb[starts]] = sums
        self.live = _box3(mass.reshape(nb)) >= thr
        self._near = None

    def _index(self, k):
        return np.ravel_multi_index(tuple((self.grid.decode(k) // self.side + _BIAS).T), self.nb)

    def near(self, query):
        if self._near is None:
            self._near = _box3(self.live, logical=True).ravel()
        return self._near[self._index(query)]

    def may_be_core(self, query):
        return self.live.ravel()[self._index(query)]

    def live_bucket_cells(self, limit):
        """Every valid cell of a live bucket (sorted keys), or None if more than ``limit``."""
        live = np.argwhere(self.live)
        d = self.grid.d
        if live.shape[0] * self.side**d > limit:
            return None
        base = (live - _BIAS) * self.side
        steps = np.array(list(itertools.product(range(self.side), repeat=d)), dtype=np.int64)
        coords = (base[:, None, :] + steps[None, :, :]).reshape(-1, d)
        coords = coords[self.grid.valid(coords)]
        return np.sort(self.grid.encode(coords))


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

    def near(self, query):
        qc = self.grid.decode(query)
        ok = np.zeros(query.size, dtype=bool)
        for i, rich in enumerate(self.rich):
            if rich.size:
                qk = self._keys(qc, i)
                idx = np.minimum(np.searchsorted(rich, qk), rich.size - 1)
                ok |= rich[idx] == qk
        return ok

    may_be_core = near

    def live_bucket_cells(self, limit):
        return None
