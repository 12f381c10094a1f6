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

_BIAS = 2  # bucket coordinates are shifted so that +-2 buckets stay in range


def live_cells(grid, keys: np.ndarray, vals: np.ndarray, query: np.ndarray,
               threshold: float) -> np.ndarray:
    """Mask of ``query`` cells whose bucket lies in the block around a live bucket.

    ``keys`` (sorted) and ``vals`` are the released cells, all ``vals >= 0``.
    Every released cell in NB of a core cell, and every core cell, passes.
    """
    side = max(grid.reach, 1)
    d = grid.d
    nb = [-(-s // side) + 2 * _BIAS for s in grid.shape]
    if grid.wide or math.prod(nb) >= 1 << 62:
        return _live_cells_rows(grid, keys, vals, query, threshold, side)
    strides = np.ones(d, dtype=np.int64)
    for i in range(d - 2, -1, -1):
        strides[i] = strides[i + 1] * nb[i + 1]
    deltas = np.array([int(np.dot(o, strides)) for o in itertools.product((-1, 0, 1), repeat=d)])

    def bucket_keys(k):
        return (grid.decode(k) // side + _BIAS) @ strides

    bk = bucket_keys(keys)
    order = np.argsort(bk)
    sk = bk[order]
    starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
    bkeys = sk[starts]
    bsums = np.add.reduceat(vals[order].astype(np.float64), starts)
    rich = bkeys[bsums * deltas.size >= threshold]
    if rich.size == 0:
        return np.zeros(query.size, dtype=bool)
    cand = np.unique((rich[:, None] + deltas).ravel())
    total = np.zeros(cand.size)
    for dk in deltas:
        q = cand + dk
        idx = np.minimum(np.searchsorted(bkeys, q), bkeys.size - 1)
        hit = bkeys[idx] == q
        total[hit] += bsums[idx[hit]]
    live = cand[total >= threshold]
    if live.size == 0:
        return np.zeros(query.size, dtype=bool)
    near = np.unique((live[:, None] + deltas).ravel())
    qb = bucket_keys(query)
    idx = np.minimum(np.searchsorted(near, qb), near.size - 1)
    return near[idx] == qb


def _live_cells_rows(grid, keys, vals, query, threshold, side):
    """The same with bucket coordinates as packed rows (huge universes)."""
    d = grid.d
    row = np.dtype(("V", 8 * d))
    block = np.array(list(itertools.product((-1, 0, 1), repeat=d)), dtype=np.int64)

    def pack(c):
        return np.ascontiguousarray((c + _BIAS).astype(">i8")).view(row).ravel()

    bc = grid.decode(keys) // side
    bk = pack(bc)
    order = np.argsort(bk, kind="stable")
    sk = bk[order]
    starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
    bkeys = sk[starts]
    bsums = np.add.reduceat(vals[order].astype(np.float64), starts)
    rich_c = bc[order][starts][bsums * len(block) >= threshold]
    if rich_c.size == 0:
        return np.zeros(query.size, dtype=bool)
    cand_c = np.unique(np.concatenate([rich_c + o for o in block]), axis=0)
    total = np.zeros(cand_c.shape[0])
    for o in block:
        q = pack(cand_c + o)
        idx = np.minimum(np.searchsorted(bkeys, q), bkeys.size - 1)
        hit = bkeys[idx] == q
        total[hit] += bsums[idx[hit]]
    live_c = cand_c[total >= threshold]
    if live_c.size == 0:
        return np.zeros(query.size, dtype=bool)
    near = np.unique(pack(np.concatenate([live_c + o for o in block])))
    qb = pack(grid.decode(query) // side)
    idx = np.minimum(np.searchsorted(near, qb), near.size - 1)
    return near[idx] == qb
