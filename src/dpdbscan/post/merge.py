"""Merging core cells into spans: connected components of the graph that
joins two core cells when their offset lies in a symmetric offset set.

* The bound test joins cells at minimum distance < alpha: the offsets of NB.
* The density test joins sub-cells whose *centres* are < alpha apart
  (DBSCAN joins core points within eps): :func:`centre_offsets`.

Spans are numbered canonically: by the smallest cell key they contain.

With int64 keys, the offsets that are contiguous in the last dimension form
one key interval per run, and the core cells a cell reaches through one run
are consecutive in the sorted keys. Joining the cell to the first of them and
each of them to the next gives the same components as joining it to all of
them (they are all its neighbours), with two binary searches per run instead
of one per offset, and about ``runs * m`` edges instead of ``kappa * m / 2``.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np

from ..cells.components import connected_components
from ..cells.grid import Grid, offset_runs, offsets_within, search_keys
from ..cells.keys import popcount
from ..cells.pairs import (
    MAX_PAIRS,
    CellIndex,
    OffsetWeights,
    _kernels,
    codes_fit,
    offset_codes,
    pairs_cheaper,
)

_TOL = 1e-9  # relative slack on lattice distances: they are exact up to rounding


def merge_cells(grid: Grid, core_keys: np.ndarray, offsets: np.ndarray | None = None) -> np.ndarray:
    """Span label of each core cell (``core_keys`` sorted, unique), joining
    cells whose offset is in ``offsets`` (symmetric; NB by default)."""
    if offsets is not None:
        labels = _block_labels(grid, core_keys, np.asarray(offsets, dtype=np.int64))
        if labels is not None:
            return labels
    return SubsetMerge(grid, core_keys, offsets, subsets=False).labels()


class SubsetMerge:
    """:func:`merge_cells` for many subsets of one sorted key set.

    The neighbour lookups (two binary searches per offset run and key) are
    made once, on all of ``keys``; :meth:`labels` then merges any subset of
    them with gathers only. A key interval ``[a, b)`` of the full set maps to
    the interval ``[rank[a], rank[b])`` of the subset, ``rank`` counting the
    kept keys before each position, so the subset's neighbours through a run
    are again one interval. The sweep over MinPts merges one candidate set
    at every level this way (``post/sweep.py``).

    With ``subsets=False`` only :meth:`labels` of all the keys is asked, and
    edges found as pairs are kept as a spanning forest (:func:`_forest_edges`,
    a union-find over the pairs as they are found): the memory is that of the
    keys, not of the pairs (hundreds of millions among dense core sub-cells
    in 4-D).

    With ``subsets=True`` the edges found as pairs are held, at most
    :data:`_HELD_PAIRS` of them (counted as found, whatever the cost model
    expected); beyond, none is held and each subset is merged afresh.

    The intervals are two words per run and key; beyond :data:`_HELD_BYTES`
    of them none is held (a sweep of same_release case 5's release, 6-D
    with two sub-cells, asked 17 GB): each subset is then merged afresh
    (:func:`merge_cells` of its keys: the forest where the pairs' walk pays,
    else the runs) and all the keys by the runs a chunk at a time
    (:func:`_chunked_run_labels`), so the memory is linear in the keys plus
    a fixed chunk. The components, and so the labels, are the same.
    """

    def __init__(
        self, grid: Grid, keys: np.ndarray, offsets: np.ndarray | None = None, subsets: bool = True
    ) -> None:
        self.grid, self.keys = grid, keys
        self.subsets = subsets
        self.offsets = offsets
        self.intervals: list[tuple[np.ndarray, np.ndarray]] = []
        self.runs: list[tuple[np.ndarray, int, int]] = []
        self.edges: tuple[np.ndarray, np.ndarray] | None = None
        self.fresh = False  # each subset merged afresh (the intervals would pass _HELD_BYTES)
        if keys.size == 0:  # nothing to merge: not even NB is needed (it may be huge)
            self.positive = np.zeros((0, grid.d), dtype=np.int64)
            return
        offsets = grid.offsets if offsets is None else np.asarray(offsets, dtype=np.int64)
        # the offsets are symmetric: those lexicographically > 0 find every edge once
        self.positive = offsets[_lexicographically_positive(offsets)]
        if grid.wide or self.positive.size == 0:
            return
        runs = _runs(self.positive)
        R = max(int(self.positive.max()), -int(self.positive.min()))
        if codes_fit(grid.d, R) and pairs_cheaper(
            grid.d, len(runs), keys.size, keys.size, offsets.shape[0], grid.n_cells, held=subsets
        ):
            # many runs (high dimension): the edges themselves, from the
            # pairs of keys within reach (cells/pairs.py)
            if not subsets:
                self.edges = _forest_edges(grid, keys, offsets, R)
                return
            self.edges = _pair_edges(grid, keys, offsets, R)
            # more edges than _HELD_PAIRS (keys clustered closer than the
            # cost model's even spread): none held, each subset merged afresh
            self.fresh = self.edges is None
            return
        self.runs = runs
        if _INTERVAL_BYTES * len(runs) * keys.size > _HELD_BYTES:
            # not held: a subset is merged afresh (:meth:`labels`), all the
            # keys by the runs in chunks
            self.fresh = subsets
            return
        self.intervals = _intervals(grid, keys, runs)

    def labels(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Span labels of the keys selected by ``mask`` (all by default), in
        their order, numbered by their smallest key."""
        keys = self.keys if mask is None else self.keys[mask]
        m = keys.size
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        if self.grid.wide or self.positive.size == 0:
            return _merge_by_offsets(self.grid, keys, self.positive)
        if self.edges is not None:
            i, j = self.edges
            if mask is not None:
                if not self.subsets:
                    raise ValueError("this merge keeps a spanning forest: it labels all its keys only")
                keep = mask[i] & mask[j]
                at = np.cumsum(mask) - 1  # each kept key's row in the subset
                i, j = at[i[keep]], at[j[keep]]
            return canonical_labels(connected_components(m, i, j))
        if self.fresh:
            # the subset's own merge: its pairs' forest where the walk pays
            # (memory linear in its keys), else its runs in chunks
            return merge_cells(self.grid, keys, self.offsets)
        if not self.intervals:
            return _chunked_run_labels(self.grid, keys, self.runs)
        if mask is None:
            return canonical_labels(_interval_components(m, self.intervals))
        rank = np.concatenate(([0], np.cumsum(mask)))  # kept keys before each position
        kept = np.flatnonzero(mask)
        return canonical_labels(
            _interval_components(m, ((rank[a[kept]], rank[b[kept]]) for a, b in self.intervals))
        )


#: Bytes per run and key of the intervals :class:`SubsetMerge` holds (two int64)
_INTERVAL_BYTES = 16
#: Bytes of intervals :class:`SubsetMerge` holds at most (:meth:`SubsetMerge.labels`
#: makes about twice as much again per call); beyond, a subset is merged
#: afresh and all the keys by the runs in chunks of :data:`_CHUNK_BYTES`.
#: A sweep of same_release case 5's release (6-D, two sub-cells: 153,101
#: core sub-cells, 7,233 runs) asked 17 GB of intervals.
_HELD_BYTES = 1 << 28
#: Bytes of one chunk of runs' intervals in :func:`_chunked_run_labels`
_CHUNK_BYTES = 1 << 26


def _intervals(grid: Grid, keys: np.ndarray, runs: list[tuple[np.ndarray, int, int]]):
    """For each run, ``(a, b)``: the positions in ``keys`` (sorted, unique)
    of the keys each key reaches through the run, ``keys[a:b]``."""
    return list(_intervals_by(grid, keys, runs, _counts_below(keys, 2 * len(runs))))


def _chunked_run_labels(grid: Grid, keys: np.ndarray, runs: list[tuple[np.ndarray, int, int]]) -> np.ndarray:
    """:func:`merge_cells` of ``keys`` by the runs, in memory linear in the
    keys: the runs' intervals a chunk of runs at a time (at most
    :data:`_CHUNK_BYTES` of them), each chunk's components joined to those
    of the chunks before. The union of the chunks' edges is the graph of all
    the runs at once, so the components, and the labels, are the same."""
    m = keys.size
    per = max(1, _CHUNK_BYTES // (_INTERVAL_BYTES * m))
    below = _counts_below(keys, 2 * len(runs))
    root: np.ndarray | None = None  # each key's component: its smallest key
    for start in range(0, len(runs), per):
        part = _interval_components(m, _intervals_by(grid, keys, runs[start : start + per], below))
        rep = np.empty(int(part.max()) + 1, dtype=np.int64)
        rep[part] = np.arange(m)  # a key of each of the chunk's components
        if root is None:
            root = connected_components(m, np.arange(m), rep[part])
        else:
            root = connected_components(m, root, root[rep[part]])[root]
    assert root is not None
    return canonical_labels(root)


def _intervals_by(grid: Grid, keys: np.ndarray, runs: list[tuple[np.ndarray, int, int]], below):
    """:func:`_intervals` of ``runs`` with ``below`` given, one run at a time."""
    for prefix, lo, hi in runs:
        base = grid.key_delta(np.append(prefix, 0))
        yield below(keys + (base + lo)), below(keys + (base + hi + 1))


def _interval_components(m: int, intervals) -> np.ndarray:
    """Components of m sorted keys, each joined to every key of its
    intervals ``(a, b)`` (positions ``[a, b)``, one pair of arrays per run):
    equal values for the keys of one component (not numbered canonically)."""
    src, dst = [], []
    chain = np.zeros(m + 1, dtype=np.int64)  # difference array over links j -> j+1
    for a, b in intervals:
        hit = np.flatnonzero(b > a)
        src.append(hit)
        dst.append(a[hit])
        many = hit[b[hit] - a[hit] > 1]
        chain += np.bincount(a[many], minlength=m + 1)
        chain -= np.bincount(b[many] - 1, minlength=m + 1)
    linked = np.cumsum(chain[:-1])[:-1] > 0  # cell j joined to j + 1
    # consecutive linked cells form groups; the remaining edges join groups
    group = np.concatenate(([0], np.cumsum(~linked)))
    r_parts, c_parts = [], []
    for frm, to in zip(src, dst):
        r, c = group[frm], group[to]
        # within one run both ends only grow with the source key, so the
        # many cells of one group that reach the same group through it
        # give consecutive copies of one edge: keep the first of each
        new = r != c
        new[1:] &= (r[1:] != r[:-1]) | (c[1:] != c[:-1])
        r_parts.append(r[new])
        c_parts.append(c[new])
    r = np.concatenate(r_parts) if r_parts else np.zeros(0, np.int64)
    c = np.concatenate(c_parts) if c_parts else np.zeros(0, np.int64)
    labels = connected_components(int(group[-1]) + 1, r, c)
    return labels[group]


#: At most this many entries in the table of :func:`_counts_below`
_MAX_TABLE = 1 << 25


def _counts_below(keys: np.ndarray, lookups: int):
    """``f(v)``: the number of ``keys`` (sorted, unique) below each ``v``,
    as ``np.searchsorted(keys, v, side="left")``. Where the keys' span is
    small against the lookups to come (the sub-cells of a 3-D release), a
    rank over the span answers each lookup with gathers instead of a binary
    search: one bit per position of the span and the count of keys before
    each 64-bit word, so the count below v is the word's count plus the set
    bits of its word below v (a table of one count per position, as before,
    cost a zeroed array and a cumulative sum of the whole span: 3-D at alpha
    0.01, span 30M, 76k keys, 0.05-0.1 s of a 0.6 s fit)."""
    n = keys.size
    span = int(keys[-1] - keys[0]) + 1 if n else 0
    steps = n * max(lookups, 1) * math.log2(n + 1)
    if n == 0 or span > min(_MAX_TABLE, steps):
        return lambda v: np.searchsorted(keys, v, side="left")
    first = keys[0]
    at = keys - first
    word = at >> 6
    # (span + 1 positions: a lookup past the last key reads position span)
    bits = np.zeros((span >> 6) + 1, dtype=np.uint64)
    starts = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])
    one_bit = np.left_shift(np.uint64(1), (at & 63).astype(np.uint64))
    bits[word[starts]] = np.bitwise_or.reduceat(one_bit, starts)
    before = np.zeros(bits.size, dtype=np.int64)
    np.cumsum(popcount(bits[:-1]), out=before[1:])

    def below(v: np.ndarray) -> np.ndarray:
        p = np.clip(v - first, 0, span)
        w = p >> 6
        low = np.left_shift(np.uint64(1), (p & 63).astype(np.uint64)) - np.uint64(1)
        return before[w] + popcount(bits[w] & low)

    return below


def _runs(offsets: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
    """:func:`~dpdbscan.cells.grid.offset_runs` of ``offsets``, cached by content
    (the same offset sets come back at every level of a sweep)."""
    return _runs_cached(offsets.shape[1], offsets.tobytes())


@functools.lru_cache(maxsize=64)
def _runs_cached(d: int, raw: bytes) -> list[tuple[np.ndarray, int, int]]:
    return list(offset_runs(np.frombuffer(raw, dtype=np.int64).reshape(-1, d)))


def _pair_edges(
    grid: Grid, keys: np.ndarray, offsets: np.ndarray, R: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The edges among ``keys`` (rows) at an offset of the symmetric set
    ``offsets``, each once: the pairs within R along every axis whose
    offset is one of the set's, kept as the compiled walk finds them; None
    past :data:`_HELD_PAIRS` of them (the walk stops there). The cost model
    bounds the pairs expected if the keys were spread evenly
    (:func:`~dpdbscan.cells.pairs.pairs_cheaper`); clustered keys have
    many more, and this bound is on those found."""
    # lexicographically sorted offsets give sorted codes
    codes = offset_codes(offsets, R)
    joined = OffsetWeights(codes, np.ones(codes.size), R, grid.d)
    return CellIndex(grid.decode(keys), R).edges(R, joined, _HELD_PAIRS)


#: Edges :class:`SubsetMerge` holds at most (two int64 each: 512 MB)
_HELD_PAIRS = MAX_PAIRS


def _forest_edges(grid: Grid, keys: np.ndarray, offsets: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges with the components of :func:`_pair_edges`'s (``offsets``: the
    whole symmetric set), in memory linear in the keys: a spanning forest
    (each key to the smallest of its component), from a union-find over the
    pairs within reach as the compiled walk finds them
    (:meth:`~dpdbscan.cells.pairs.CellIndex.components`). Dense core
    sub-cells have thousands of pairs each (5-D, two sub-cells: 32k keys,
    about 10^8 pairs), which listing and testing in numpy took seconds per
    10^7.

    Where cubes of b^d cells are joined among themselves (a cell's own
    sub-cells: :func:`_block_side`), the walk is over the blocks
    (:meth:`~dpdbscan.cells.pairs.CellIndex.block_components`): a pair of
    blocks already joined is skipped without reading its members (8-D, two
    sub-cells, 194k core sub-cells in 759 blocks: 57 s of CPU to 1-2 s)."""
    # lexicographically sorted offsets give sorted codes: no sort of millions
    codes = offset_codes(offsets, R)
    joined = OffsetWeights(codes, np.ones(codes.size), R, grid.d)
    coords = grid.decode(keys)
    b = _block_side(joined, R, grid.d)
    if b == 1:
        root = CellIndex(coords, R).components(R, joined)
    else:
        _, first, block = np.unique(grid.encode(coords // b * b), return_index=True, return_inverse=True)
        block = block.ravel()
        Rb = (R + b - 1) // b  # members within R lie in blocks within Rb
        label = CellIndex(coords[first] // b, Rb).block_components(Rb, coords, block, R, joined)
        smallest = np.full(first.size, keys.size, dtype=np.int64)
        np.minimum.at(smallest, label, np.arange(keys.size))
        root = smallest[label]
    moved = np.flatnonzero(root != np.arange(keys.size))
    return moved, root[moved]


#: Offset codes up to which :func:`_block_tables` tables the cube of them
#: (one byte each)
_MEMBER_TABLE = 1 << 22
#: Offsets up to which :func:`_block_side` checks a cube of them
_BLOCK_CHECK = 1 << 20


def _block_side(joined: OffsetWeights, R: int, d: int) -> int:
    """The largest side b of a cube of cells (b per axis) whose cells are
    all joined to each other: every offset within b - 1 along every axis
    has a weight in ``joined`` (checked for cubes of up to
    :data:`_BLOCK_CHECK` offsets). With k sub-cells these are a cell's own
    k^d sub-cells (their centres at most (k - 1)/k of a cell's diameter,
    alpha, apart), so a merge may start with each block joined."""
    b = 1
    while b <= R and (2 * b + 1) ** d <= _BLOCK_CHECK:
        steps = np.arange(-b, b + 1, dtype=np.int64)
        cube = np.stack(np.meshgrid(*([steps] * d), indexing="ij"), axis=-1).reshape(-1, d)
        cube = cube[cube.any(axis=1)]
        if not bool((joined.of(offset_codes(cube, R)) > 0).all()):
            break
        b += 1
    return b


#: Sub-cells of a block (b^d) up to which :func:`_block_labels` tables the
#: reach of every set of them (2^(b^d) entries per block offset)
_BLOCK_BITS = 12
#: Entries of the dense table of blocks (int32) up to which :func:`_block_labels` runs
_BLOCK_TABLE = 1 << 23
#: Entries of a 3-D table of blocks from which :func:`_block_labels` joins
#: them in one compiled pass (:func:`~dpdbscan.cells.pairkernels.mask_block_roots`):
#: the sub-cells of a dense release of at least
#: :data:`~.coretests.density.cover.COMPILED_DENSE_CELLS` cells, whose
#: density test loads the compiler anyway (3-D at 0.5x the benchmark's
#: alpha: 5.5M entries, 76k core sub-cells, 13 -> 7 ms of CPU; the 3-D
#: benchmark's grid at 1e4 points, about 5 ms less per fit from 2^18
#: entries), where the compiler is loaded; elsewhere numpy, which never
#: loads it
_COMPILED_BLOCKS = 1 << 18


def _block_labels(grid: Grid, keys: np.ndarray, offsets: np.ndarray) -> np.ndarray | None:
    """:func:`merge_cells` by blocks: where every two cells of a cube of b^d
    cells are joined (:func:`_block_tables`; a cell's own sub-cells in 3-D),
    each block holding keys is one node with a mask of the cells it holds,
    and two blocks at block offset D are joined when a cell of one reaches
    a cell of the other, ``reach[D][mask] & mask' != 0`` (a table per D).
    The blocks are found in a dense table (no sort, no binary search): 3-D
    blobs, 25k core sub-cells in 3.4-4.2k blocks, 40 block offsets that
    join anything, against two rank lookups per key and each of 19 offset
    runs (15 -> 4 ms of CPU). The same components,
    numbered the same way. None where it does not apply (wide keys, no
    block of two or more cells per axis, too many cells in a block, or a
    table of blocks over :data:`_BLOCK_TABLE` entries)."""
    if grid.wide or keys.size < 2 or offsets.size == 0 or 2**grid.d > _BLOCK_BITS:
        return None  # (from 4-D on no block fits a mask: its offsets are not even read)
    R = max(int(offsets.max()), -int(offsets.min()))
    tables = _block_tables(grid.d, R, offsets.tobytes())
    if tables is None:
        return None
    b, deltas, reach = tables
    Rb = (R + b - 1) // b
    shape = [-(-s // b) + 2 * Rb for s in grid.shape]
    cells = math.prod(shape)
    if cells > _BLOCK_TABLE:
        return None
    strides = np.ones(grid.d, dtype=np.int64)
    for i in range(grid.d - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    coords = grid.decode(keys)
    corner = coords // b
    sub = coords - corner * b
    at = (corner[:, -1] + Rb).astype(np.int64)
    pos = sub[:, 0].copy()
    for i in range(grid.d - 1):
        at += (corner[:, i] + Rb) * int(strides[i])
        pos = pos * b + sub[:, i + 1]
    present = np.zeros(cells, dtype=bool)
    present[at] = True
    where = np.flatnonzero(present)
    index = np.full(cells, -1, dtype=np.int32)
    index[where] = np.arange(where.size)
    block = index[at]
    # distinct cells of a block have distinct bits: their sum is their union
    masks = np.bincount(block, weights=np.left_shift(1, pos).astype(np.float64), minlength=where.size)
    masks = masks.astype(np.int64)
    if grid.d == 3 and cells >= _COMPILED_BLOCKS and "numba" in sys.modules:
        # a large 3-D table where the compiled kernels are loaded already (a
        # dense release's fine grid, whose density test loads them; never
        # loaded for this alone): one union-find pass over the blocks and
        # block offsets, the same components
        label = _kernels().mask_block_roots(where.astype(np.int64), index, deltas @ strides, reach, masks)
        return canonical_labels(label[block])
    # the adjacent blocks first; the farther ones then only between the
    # components those left apart (inside a cluster, almost none)
    label = None
    near = np.abs(deltas).max(axis=1) <= 1
    for sel in (np.flatnonzero(near), np.flatnonzero(~near)):
        other = index[where[None, :] + (deltas[sel] @ strides)[:, None]]  # (block offsets, blocks)
        t, src = np.nonzero(other >= 0)
        dst = other[t, src].astype(np.int64)
        if label is not None:
            apart = label[src] != label[dst]
            t, src, dst = t[apart], src[apart], dst[apart]
        joined = (reach[sel[t], masks[src]] & masks[dst]) != 0
        if label is None:
            label = connected_components(where.size, src[joined], dst[joined])
        else:
            label = connected_components(where.size, label[src[joined]], label[dst[joined]])[label]
    assert label is not None
    return canonical_labels(label[block])


@functools.lru_cache(maxsize=64)
def _block_tables(d: int, R: int, raw: bytes) -> tuple[int, np.ndarray, np.ndarray] | None:
    """For the symmetric offset set ``raw`` (int64 rows of d, within R): the
    largest block side b (b^d <= :data:`_BLOCK_BITS`, at least 2) such that
    every nonzero offset within b - 1 along every axis is in the set; the
    lexicographically positive block offsets D through which some cell of a
    block reaches a cell of the block at D; and ``reach[D, mask]``, the
    cells of the block at D reached from the cells in ``mask`` (bit p: the
    cell at row-major position p of the block). None without such a b."""
    offsets = np.frombuffer(raw, dtype=np.int64).reshape(-1, d)
    if not codes_fit(d, R) or (2 * R + 1) ** d > _MEMBER_TABLE:
        return None
    member = np.zeros((2 * R + 1) ** d, dtype=bool)
    member[offset_codes(offsets, R)] = True
    b = 1
    while b <= R and (b + 1) ** d <= _BLOCK_BITS:
        steps = np.arange(-b, b + 1, dtype=np.int64)
        cube = np.stack(np.meshgrid(*([steps] * d), indexing="ij"), axis=-1).reshape(-1, d)
        if not bool(member[offset_codes(cube[cube.any(axis=1)], R)].all()):
            break
        b += 1
    if b < 2:
        return None
    Rb = (R + b - 1) // b
    steps = np.arange(-Rb, Rb + 1, dtype=np.int64)
    deltas = np.stack(np.meshgrid(*([steps] * d), indexing="ij"), axis=-1).reshape(-1, d)
    deltas = deltas[_lexicographically_positive(deltas)]
    steps = np.arange(b, dtype=np.int64)
    cells = np.stack(np.meshgrid(*([steps] * d), indexing="ij"), axis=-1).reshape(-1, d)  # row-major
    n = cells.shape[0]
    # o[D, i, j]: from cell i of a block to cell j of the block at D
    o = b * deltas[:, None, None, :] + cells[None, None, :, :] - cells[None, :, None, :]
    inside = np.all(np.abs(o) <= R, axis=-1)
    J = np.zeros(inside.shape, dtype=bool)
    J[inside] = member[offset_codes(o[inside], R)]
    keep = J.any(axis=(1, 2))
    deltas, J = deltas[keep], J[keep]
    rows = (J.astype(np.int64) << np.arange(n, dtype=np.int64)).sum(axis=2)  # (D, i): mask of the j
    reach = np.zeros((deltas.shape[0], 1 << n), dtype=np.int64)
    for i in range(n):
        reach[:, 1 << i : 2 << i] = reach[:, : 1 << i] | rows[:, i : i + 1]
    deltas.setflags(write=False)
    reach.setflags(write=False)
    return b, deltas, reach


def _merge_by_offsets(grid: Grid, core_keys: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """One lookup per positive offset (packed keys of huge universes)."""
    m = core_keys.size
    rows, cols = [], []
    coords = grid.decode(core_keys)
    for o in positive:
        idx, hit = search_keys(core_keys, grid.encode(coords + o))
        rows.append(np.flatnonzero(hit))
        cols.append(idx[hit])
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    return canonical_labels(connected_components(m, r, c))


def canonical_labels(labels: np.ndarray) -> np.ndarray:
    """Renumber so that span ids follow the first (smallest-key) cell of each span."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.ravel()]


# --------------------------------------------------------------------------- #
# the density test: centres within alpha


def radius_cells2(grid: Grid, radius: float) -> float:
    """(radius / width)^2 of ``grid``; exact for radius = alpha."""
    if radius == grid.eps:
        return 16.0 * grid.d / grid.eta**2
    return (radius / grid.width) ** 2


@functools.lru_cache(maxsize=64)
def centre_offsets(d: int, r2: float, strict: bool = True) -> np.ndarray:
    """Integer offsets n != 0 with sum n_i^2 < r2 (``strict``) or <= r2: the
    sub-cells whose centre is within sqrt(r2) cell widths of a centre.

    Centres lie on the lattice of the sub-cell width, so "centres within
    alpha" is this integer test with r2 = (alpha / w)^2 = 16 d / eta^2 (no
    square roots). Strict, as the paper's "< alpha": on the lattice "<="
    would join centres exactly alpha apart.
    """
    R = int(math.floor(math.sqrt(r2 * (1 + _TOL))))
    lim = r2 * (1 - _TOL) if strict else r2 * (1 + _TOL)
    steps = np.arange(-R, R + 1, dtype=np.int64)
    # axis by axis in itertools.product's order, dropping partial sums past
    # the limit, the rows grown once at the end (growing them axis by axis
    # took 1.2 GB for the 4.3M offsets of d = 8 with two sub-cells); the
    # sums of squares are integers, exact in float64
    rows = offsets_within(
        steps, (steps**2).astype(np.float64), d, float(np.nextafter(lim, -np.inf)) if strict else lim
    )
    out = np.ascontiguousarray(rows[rows.any(axis=1)], dtype=np.int64).reshape(-1, d)
    out.setflags(write=False)
    return out


def merge_centres(fine: Grid, keys: np.ndarray, radius: float | None = None, join: str = "eps") -> np.ndarray:
    """Span label of each core sub-cell: components of "centres < radius
    apart" (alpha by default; ``join="face"``: sharing a face), numbered by
    their smallest key."""
    return merge_cells(fine, keys, centre_offsets(fine.d, join_r2(fine, radius, join)))


#: How a span joins core sub-cells (``SpanSpec.join``): centres less than
#: eps (the merge radius) apart, or only those sharing a face
JOINS = ("eps", "face")
#: (centre distance / width)^2 below which two sub-cells share a face (1; a
#: shared edge is 2)
FACE_R2 = 1.5


def join_r2(fine: Grid, radius: float | None = None, join: str = "eps") -> float:
    """(merge radius / width)^2 of ``join`` on ``fine``: ``"eps"`` the
    radius (eps by default), ``"face"`` one width (never above the radius)."""
    r2 = radius_cells2(fine, fine.eps if radius is None else radius)
    if join == "face":
        return min(FACE_R2, r2)
    if join != "eps":
        raise ValueError(f"join must be one of {JOINS}, got {join!r}")
    return r2


def centre_merge(fine: Grid, keys: np.ndarray, radius: float | None = None, join: str = "eps") -> SubsetMerge:
    """:func:`merge_centres` for many subsets of ``keys`` (:class:`SubsetMerge`)."""
    return SubsetMerge(fine, keys, centre_offsets(fine.d, join_r2(fine, radius, join)))


def _lexicographically_positive(offsets: np.ndarray) -> np.ndarray:
    """Mask of the offsets lexicographically above 0 (the first non-zero
    coordinate positive), without a Python loop over the 1.28M offsets of
    d = 8."""
    off = np.asarray(offsets)
    nz = off != 0
    first = np.argmax(nz, axis=1)
    return nz.any(axis=1) & (off[np.arange(off.shape[0]), first] > 0)


__all__ = [
    "merge_cells",
    "SubsetMerge",
    "centre_merge",
    "join_r2",
    "JOINS",
    "FACE_R2",
    "merge_centres",
    "centre_offsets",
    "canonical_labels",
    "radius_cells2",
]
