"""Core cells: cells whose noisy neighbour sum reaches the threshold.

Post-processing of the released histogram only. With noisy neighbour sum
S(X) = sum_{NB(X)} x~ and the noisy upper bound UB~(X) = S(X) + Gamma, the
paper's practical rule (Section "Choice of Parameters") raises the user's
MinPts by tau = 2 Gamma: X is core iff UB~(X) >= MinPts + tau, that is
S(X) >= MinPts + Gamma. The theoretical rule UB~(X) >= MinPts is S(X) >=
MinPts - Gamma.
"""

from __future__ import annotations

import numpy as np

from .histograms.base import (
    NoisyHistogram, dense_neighbour_sums, neighbourhood, sparse_neighbour_sums,
)


def sum_threshold(min_samples: float, gamma: float, raise_min_samples: bool = True) -> float:
    """Threshold on the noisy neighbour sum S(X)."""
    return min_samples + gamma if raise_min_samples else min_samples - gamma


def core_cells(hist: NoisyHistogram, threshold: float, layout=None):
    """Sorted keys of core cells and their noisy neighbour sums.

    With a :class:`~dpdbscan.subcells.SubcellLayout` of ``k > 1`` the keys
    are of core *sub-cells* in ``layout.fine``.
    """
    if layout is None or layout.k == 1:
        return _core_cells(hist, threshold, None, hist.grid.kappa)
    keys, sums = [], []
    for pos, offsets in layout.positions:
        ck, cs = _core_cells(hist, threshold, offsets, layout.kappa)
        fk = layout.fine_keys(ck, pos)
        # fine_keys drops sub-cells outside the box: keep sums aligned
        if fk.size != ck.size:
            c = hist.grid.decode(ck) * layout.k + np.asarray(pos)
            cs = cs[np.all(c < np.asarray(layout.fine.shape), axis=1)]
        keys.append(fk)
        sums.append(cs)
    keys = np.concatenate(keys)
    sums = np.concatenate(sums)
    order = np.argsort(keys, kind="stable")
    return keys[order], sums[order]


def _core_cells(hist: NoisyHistogram, threshold: float, offsets, kappa: int):
    grid = hist.grid
    if hist.kind == "dense":
        S = dense_neighbour_sums(grid, hist.values, offsets)
        mask = S >= threshold
        coords = np.argwhere(mask)
        return grid.encode(coords), S[mask]  # row-major order == key order
    keys, vals = hist.keys, hist.values
    if threshold <= 0:
        raise ValueError(
            f"the core threshold on neighbour sums is {threshold:.3g} <= 0, so every cell "
            "of the universe would be core; raise min_samples or use raise_min_samples=True"
        )
    if vals.size and vals.min() >= 0:
        # A sum of kappa non-negative values reaches the threshold only if one
        # of them reaches threshold / kappa: candidates lie around those.
        heavy = keys[vals * kappa >= threshold]
        if heavy.size * grid.kappa > _BUCKET_PRUNE_ABOVE:
            heavy = heavy[_in_live_buckets(grid, keys, vals, heavy, threshold)]
    else:
        heavy = keys
    cand = neighbourhood(grid, heavy)
    sums = sparse_neighbour_sums(grid, keys, vals, cand, offsets)
    mask = sums >= threshold
    return cand[mask], sums[mask]


_BUCKET_PRUNE_ABOVE = 4_000_000


def _in_live_buckets(grid, keys, vals, heavy, threshold) -> np.ndarray:
    """Mask of ``heavy`` cells that can still contribute to a core cell.

    Coarse buckets of side ``reach`` contain NB(X) within the 3^d block of
    buckets around X's bucket. So X can be core only if that block's released
    values sum to >= threshold ("live" block); a released cell matters only if
    it lies in a block around some live bucket. With kappa in the thousands
    (d >= 5) and a million released empty cells this turns kappa * 10^5
    candidates into a handful.
    """
    side = max(grid.reach, 1)
    d = grid.d
    bkt = grid.decode(keys) // side
    order = np.lexsort(bkt.T[::-1])
    bkt_sorted = np.ascontiguousarray(bkt[order]).view([("", np.int64)] * d).ravel()
    starts = np.flatnonzero(np.concatenate(([True], bkt_sorted[1:] != bkt_sorted[:-1])))
    bkeys = bkt_sorted[starts]
    bsums = np.add.reduceat(vals[order].astype(np.float64), starts)
    block = [np.array(o) for o in np.ndindex(*(3,) * d)]
    block = [o - 1 for o in block]
    # buckets whose block can reach the threshold need a member bucket >= threshold / 3^d
    rich = bkeys[bsums * len(block) >= threshold]
    if rich.size == 0:
        return np.zeros(heavy.size, dtype=bool)
    rich_c = rich.view(np.int64).reshape(-1, d)
    cand = np.unique(np.concatenate([rich_c + o for o in block]), axis=0)
    cand_v = np.ascontiguousarray(cand).view([("", np.int64)] * d).ravel()
    total = np.zeros(cand.shape[0])
    for o in block:
        q = np.ascontiguousarray(cand + o).view([("", np.int64)] * d).ravel()
        idx = np.minimum(np.searchsorted(bkeys, q), bkeys.size - 1)
        hit = bkeys[idx] == q
        total[hit] += bsums[idx[hit]]
    live = cand[total >= threshold]
    if live.size == 0:
        return np.zeros(heavy.size, dtype=bool)
    near = np.unique(np.concatenate([live + o for o in block]), axis=0)
    near_v = np.ascontiguousarray(near).view([("", np.int64)] * d).ravel()
    hb = np.ascontiguousarray(grid.decode(heavy) // side).view([("", np.int64)] * d).ravel()
    idx = np.minimum(np.searchsorted(near_v, hb), near_v.size - 1)
    del cand_v
    return near_v[idx] == hb


def neighbour_sums(hist: NoisyHistogram):
    """Noisy neighbour sums of every cell that has a released neighbour.

    Returns (keys, sums); for a dense histogram, every cell (for plots).
    """
    grid = hist.grid
    if hist.kind == "dense":
        S = dense_neighbour_sums(grid, hist.values)
        return grid.encode(grid.all_coords()), S.ravel()
    cand = neighbourhood(grid, hist.keys)
    return cand, sparse_neighbour_sums(grid, hist.keys, hist.values, cand)
