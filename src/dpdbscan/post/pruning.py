"""Pruning candidate core cells with coarse buckets (post-processing only).

A cell X is core when its noisy neighbour sum S(X) reaches the threshold.
When every released value is non-negative (sparse and stability histograms),
S(X) is at most the sum of the released values in any region containing
NB(X). Buckets of ``side >= reach`` cells per axis put NB(X) inside the 3^d
block of buckets around X's bucket, so:

* X can be core only if that block's released values sum to >= threshold
  (X's bucket is "live");
* a released cell can lie in NB of a core cell only if its bucket is in the
  block around some live bucket;
* a block sum reaches the threshold only if one of its 3^d buckets holds
  >= threshold / 3^d ("rich"), so only blocks around rich buckets are summed.

With a million released empty cells of small value scattered over the
universe, almost no bucket is rich and the candidates shrink to the
neighbourhood of the data. Reads the release only.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..grid import search_keys

_BIAS = 2  # bucket coordinates are shifted so that +-2 buckets stay in range


class _Buckets:
    """Bucket keys of cells: int64 mixed-radix keys when they fit, else the
    bucket coordinates packed into sortable byte rows (huge universes)."""

    def __init__(self, grid, side: int):
        self.grid, self.side, d = grid, side, grid.d
        self.block = np.array(list(itertools.product((-1, 0, 1), repeat=d)), dtype=np.int64)
        nb = [-(-s // side) + 2 * _BIAS for s in grid.shape]
        self.packed = grid.wide or math.prod(nb) >= 1 << 62
        self.row = np.dtype(("V", 8 * d))
        self.strides = np.ones(d, dtype=np.int64)
        if not self.packed:
            for i in range(d - 2, -1, -1):
                self.strides[i] = self.strides[i + 1] * nb[i + 1]
        # int64 keys: a shift of the bucket coordinates is a constant key difference
        self.deltas = None if self.packed else self.block @ self.strides

    def _key(self, coords: np.ndarray) -> np.ndarray:
        if self.packed:
            return np.ascontiguousarray((coords + _BIAS).astype(">i8")).view(self.row).ravel()
        return (coords + _BIAS) @ self.strides

    def _coords(self, bkeys: np.ndarray) -> np.ndarray:
        if self.packed:
            raw = np.ascontiguousarray(bkeys).view(">i8").reshape(-1, self.grid.d)
            return raw.astype(np.int64) - _BIAS
        out = np.empty((bkeys.size, self.grid.d), dtype=np.int64)
        rem = bkeys
        for i in range(self.grid.d):
            out[:, i], rem = np.divmod(rem, self.strides[i])
        return out - _BIAS

    def of(self, cell_keys: np.ndarray) -> np.ndarray:
        """Bucket key of each cell."""
        return self._key(self.grid.decode(cell_keys) // self.side)

    def shifted(self, bkeys: np.ndarray, j: int) -> np.ndarray:
        """Keys of the buckets at offset ``block[j]`` from ``bkeys``."""
        if self.deltas is not None:
            return bkeys + self.deltas[j]
        return self._key(self._coords(bkeys) + self.block[j])

    def around(self, bkeys: np.ndarray) -> np.ndarray:
        """Sorted unique keys of the 3^d blocks around the given buckets."""
        if self.deltas is not None:
            return np.unique((bkeys[:, None] + self.deltas).ravel())
        c = self._coords(bkeys)
        return np.unique(np.concatenate([self._key(c + o) for o in self.block]))


def live_cells(grid, keys: np.ndarray, vals: np.ndarray, query: np.ndarray,
               threshold: float) -> np.ndarray:
    """Mask of ``query`` cells whose bucket lies in the block around a live bucket.

    ``keys`` (sorted) and ``vals`` are the released cells, all ``vals >= 0``.
    Every released cell in NB of a core cell, and every core cell, passes.
    """
    space = _Buckets(grid, max(grid.reach, 1))
    bk = space.of(keys)
    order = np.argsort(bk, kind="stable")
    sk = bk[order]
    starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
    bkeys = sk[starts]
    bsums = np.add.reduceat(vals[order].astype(np.float64), starts)
    rich = bkeys[bsums * len(space.block) >= threshold]
    if rich.size == 0:
        return np.zeros(query.size, dtype=bool)
    cand = space.around(rich)
    total = np.zeros(cand.size)
    for j in range(len(space.block)):
        idx, hit = search_keys(bkeys, space.shifted(cand, j))
        total[hit] += bsums[idx[hit]]
    live = cand[total >= threshold]
    if live.size == 0:
        return np.zeros(query.size, dtype=bool)
    return search_keys(space.around(live), space.of(query))[1]
