"""The bound test's merge: core cells joined when their offset is in NB.

Two cells are neighbours when their minimum distance is below alpha, which
on the grid is an integer rule: ``sum_i max(|o_i| - 1, 0)^2 <= lim`` for
their offset o (``lim`` from the grid's eta, :func:`~dpdbscan.cells.grid.neighbour_offsets`).
Every offset with all ``|o_i| <= 1`` passes (the sum is 0), so the core
cells of one block of 2 cells per axis are all neighbours of each other:
a block is one node of the graph, and only pairs of blocks are left to
join. Where ``lim`` allows it (the finer grid of sub-cells from 5-D on) the
blocks are wider, :func:`block_side`; the numbers below are for blocks of 2.

Blocks a block offset D apart hold cells at offsets ``o_i`` in
``{2 D_i - 1, 2 D_i, 2 D_i + 1}``, the nearest at ``|o_i| = max(2 |D_i| - 1, 0)``:
only the block offsets with ``sum_i max(2 |D_i| - 2, 0)^2 <= lim`` can join
(in 5-D, 526 of them lexicographically positive, against the 1,951 positive
offsets of NB; in 8-D, 20,776 against 639,064). A compiled kernel looks each
one up in a hash table of the occupied blocks and, when the two blocks are
not yet in one component, tests their cells' pairs until one is in NB (a
union-find over blocks). Time: the occupied blocks times the block offsets,
plus the pairs tested; memory: the cells, the blocks and the table, never
the pairs (the pair listing held hundreds of millions among dense core
cells in 5-D).

The components are those of the graph, whatever the order of the joins,
and :func:`~dpdbscan.post.merge.canonical_labels` numbers them by their
smallest key: the same labels as :func:`~dpdbscan.post.merge.merge_cells`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ....cells.grid import Grid, gap2_limit, offsets_within
from ...merge import canonical_labels, merge_cells

#: Block keys (biased block coordinates in mixed radix) must fit an int64.
_KEY_LIMIT = 1 << 62


def merge_core_cells(grid: Grid, core_keys: np.ndarray) -> np.ndarray:
    """Span label of each core cell (``core_keys`` sorted, unique) of
    ``grid``: the components of "offset in NB", numbered by their smallest
    key, as :func:`~dpdbscan.post.merge.merge_cells` numbers them."""
    m = core_keys.size
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    lim = gap2_limit(grid.d, grid.eta)
    block = _blocks(grid.decode(core_keys), lim)
    if block is None:  # block keys overflow an int64: the general merge
        return merge_cells(grid, core_keys)
    return canonical_labels(block)


def _blocks(coords: np.ndarray, lim: int) -> np.ndarray | None:
    """Per cell (rows of ``coords``), the smallest block index of its
    component, or None when the block keys do not fit an int64."""
    if lim < 0:  # NB is empty: every cell on its own
        return np.arange(coords.shape[0], dtype=np.int64)
    d = coords.shape[1]
    side = block_side(d, lim)
    deltas = block_offsets(d, lim, side)
    reach = int(np.abs(deltas).max()) if deltas.size else 0
    bc = coords // side
    radix = bc.max(axis=0) + 2 * reach + 1
    if math.prod(int(r) for r in radix) >= _KEY_LIMIT:
        return None
    strides = np.ones(d, dtype=np.int64)
    for i in range(d - 2, -1, -1):
        strides[i] = strides[i + 1] * radix[i + 1]
    bkey = (bc + reach) @ strides
    order = np.argsort(bkey, kind="stable")
    sk = bkey[order]
    new = np.ones(sk.size, dtype=bool)
    new[1:] = sk[1:] != sk[:-1]
    starts = np.flatnonzero(new)
    keys = sk[starts]
    bounds = np.append(starts, sk.size).astype(np.int64)
    root = _join_blocks_kernel()(
        keys, bounds, np.ascontiguousarray(coords[order]), deltas @ strides, np.int64(lim)
    )
    of_cell = np.empty(coords.shape[0], dtype=np.int64)
    of_cell[order] = np.repeat(root, np.diff(bounds))
    return of_cell


def block_side(d: int, lim: int) -> int:
    """The widest blocks whose cells are all in NB of each other: offsets
    within a block of side s have ``|o_i| <= s - 1``, so their sum of terms
    is at most ``d (s - 2)^2``, which must stay within ``lim`` (s = 2 always
    does; the sub-cells' finer grid, with a larger ``lim``, takes s = 3 from
    5-D to 8-D: fewer blocks and 2-6 times fewer block offsets)."""
    side = 2
    while d * (side - 1) ** 2 <= lim:
        side += 1
    return side


@functools.lru_cache(maxsize=16)
def block_offsets(d: int, lim: int, side: int = 2) -> np.ndarray:
    """The lexicographically positive block offsets D whose blocks (of
    ``side`` cells per axis) can hold cells at an offset in NB: the nearest
    cells are ``max(side |D_i| - side + 1, 0)`` apart along axis i, so
    ``sum_i max(side |D_i| - side, 0)^2 <= lim``."""
    top = (math.isqrt(max(lim, 0)) + 2 * side) // side  # side (|D| - 1) <= sqrt(lim)
    steps = np.arange(-top, top + 1, dtype=np.int64)
    part = np.maximum(side * np.abs(steps) - side, 0) ** 2
    rows = offsets_within(steps, part, d, lim)
    nz = rows != 0
    first = np.argmax(nz, axis=1)
    positive = nz.any(axis=1) & (rows[np.arange(rows.shape[0]), first] > 0)
    out = rows[positive]
    out.setflags(write=False)
    return out


@functools.cache
def _join_blocks_kernel():
    """The compiled union-find over blocks (compiled at the first call)."""
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from ...._jit import find_root, flatten_roots, kernel, link_roots

    @kernel
    def join_blocks(keys, bounds, coords, dkeys, lim):
        n = keys.size
        d = coords.shape[1]
        size = 1
        while size < 2 * n:
            size *= 2
        mask = size - 1
        table = np.full(size, -1, dtype=np.int64)
        for b in range(n):
            h = (keys[b] * np.int64(-7046029254386353131)) >> np.int64(20)
            h &= mask
            while table[h] >= 0:
                h = (h + 1) & mask
            table[h] = b
        parent = np.arange(n, dtype=np.int64)
        for b in range(n):
            for t in range(dkeys.size):
                want = keys[b] + dkeys[t]
                h = (want * np.int64(-7046029254386353131)) >> np.int64(20)
                h &= mask
                other = -1
                while table[h] >= 0:
                    if keys[table[h]] == want:
                        other = table[h]
                        break
                    h = (h + 1) & mask
                if other < 0:
                    continue
                ra = find_root(parent, b)
                rb = find_root(parent, other)
                if ra == rb:
                    continue
                hit = False
                for i in range(bounds[b], bounds[b + 1]):
                    for j in range(bounds[other], bounds[other + 1]):
                        s = 0
                        for k in range(d):
                            g = abs(coords[j, k] - coords[i, k]) - 1
                            if g > 0:
                                s += g * g
                                if s > lim:
                                    break
                        if s <= lim:
                            hit = True
                            break
                    if hit:
                        break
                if hit:
                    link_roots(parent, ra, rb)
        flatten_roots(parent)
        return parent

    return join_blocks


__all__ = ["merge_core_cells", "block_offsets", "block_side"]
