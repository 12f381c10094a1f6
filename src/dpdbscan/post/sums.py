"""Neighbour sums of a released histogram: sum over an offset set (NB(X) by
default) of the noisy counts, on the dense array or at chosen cells.

Post-processing: reads the released histogram only, never the points.
"""

from __future__ import annotations

import functools
import math
import os
import weakref
from collections.abc import Callable

import numpy as np

from ..cells.grid import Grid, lookup, offset_runs, sorted_runs
from ..cells.histogram import NoisyHistogram
from ..cells.pairs import (
    CellIndex,
    OffsetPositions,
    OffsetWeights,
    codes_fit,
    decode_keys,
    offset_classes,
    offset_codes,
    pairs_cheaper,
)


def padded_prefix_sums(values: np.ndarray, R: int) -> np.ndarray:
    """``values`` padded by ``R`` zeros on every side, then prefix-summed along
    the last axis with a leading 0: a run of offsets contiguous in the last
    dimension sums as one difference of two entries."""
    acc_dtype = np.int64 if values.dtype.kind in "iub" else np.float64
    P = np.zeros(tuple(s + 2 * R for s in values.shape), dtype=acc_dtype)
    P[tuple(slice(R, R + s) for s in values.shape)] = values
    C = np.zeros(P.shape[:-1] + (P.shape[-1] + 1,), dtype=acc_dtype)
    np.cumsum(P, axis=-1, out=C[..., 1:])
    return C


def dense_neighbour_sums(grid: Grid, values: np.ndarray, offsets: np.ndarray | None = None) -> np.ndarray:
    """sum over NB(X) of ``values`` for every cell, on the dense array.

    Prefix sums along the last axis turn each run of offsets that is
    contiguous in the last dimension into one difference. ``offsets``
    replaces NB by another offset set (sub-cell neighbourhoods).
    """
    runs = list(offset_runs(grid.offsets if offsets is None else offsets))
    R = (
        grid.reach
        if offsets is None
        else max(grid.reach, int(np.abs(np.asarray(offsets)).max()) if len(offsets) else 0)
    )
    d = grid.d
    shape = grid.shape
    C = padded_prefix_sums(values, R)
    out = np.zeros(shape, dtype=C.dtype)
    L = shape[-1]
    for prefix, lo, hi in runs:
        sl = tuple(slice(R + int(p), R + int(p) + shape[i]) for i, p in enumerate(prefix))
        out += C[sl + (slice(R + hi + 1, R + hi + 1 + L),)]
        out -= C[sl + (slice(R + lo, R + lo + L),)]
    assert out.ndim == d
    return out


def sparse_neighbour_sums(
    grid: Grid, keys: np.ndarray, values: np.ndarray, query: np.ndarray, offsets: np.ndarray | None = None
) -> np.ndarray:
    """sum over NB(q) of the released values, for each query key ``q``.

    ``keys`` must be sorted. With int64 keys each run of NB contiguous in the
    last dimension is one key interval: two searchsorted calls and a prefix
    sum per run. Packed (wide) keys fall back to one lookup per offset.
    """
    acc_dtype = np.int64 if values.dtype.kind in "iub" else np.float64
    out: np.ndarray = np.zeros(query.size, dtype=acc_dtype)
    if keys.size == 0 or query.size == 0:
        return out
    if grid.wide:
        qc = grid.decode(query)
        for o in grid.offsets if offsets is None else offsets:
            out += lookup(keys, values, grid.encode(qc + o))
        return out
    cs = np.zeros(values.size + 1, dtype=acc_dtype)
    np.cumsum(values, out=cs[1:])
    offsets = grid.offsets if offsets is None else offsets
    pairs = run_pairs(grid, keys, query, offsets)
    if pairs is not None:
        # per (query, run): the released keys of the run's interval, as the
        # difference of prefix sums the runs take; then the runs in order
        qi, ri, run, _ = pairs
        if qi.size == 0:
            return out
        first = np.flatnonzero(group_starts(qi, run))
        last = np.append(first[1:], qi.size) - 1
        diff = cs[ri[last] + 1] - cs[ri[first]]
        if acc_dtype == np.int64:
            np.add.at(out, qi[first], diff)
        else:
            out += np.bincount(qi[first], weights=diff, minlength=query.size)
        return out
    runs = offset_runs(offsets)
    for prefix, lo, hi in runs:
        base = grid.key_delta(np.append(prefix, 0))
        a = np.searchsorted(keys, query + (base + lo), side="left")
        b = np.searchsorted(keys, query + (base + hi), side="right")
        out += cs[b] - cs[a]
    return out


def group_starts(qi: np.ndarray, run: np.ndarray) -> np.ndarray:
    """True at the first of each (query, run) group of :func:`run_pairs`'s
    pairs, which come sorted by query, then run."""
    new = np.ones(qi.size, dtype=bool)
    new[1:] = (qi[1:] != qi[:-1]) | (run[1:] != run[:-1])
    return new


def run_pairs(
    grid: Grid, keys: np.ndarray, query: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The released cells (sorted ``keys``) at an offset of ``offsets`` from
    each query key, as pairs found in a table of buckets
    (:class:`~dpdbscan.cells.pairs.CellIndex`), or None when one search per
    run of offsets is the cheaper way.

    Returns ``(qi, ri, run, col)`` sorted by query index, then run of
    :func:`~dpdbscan.cells.grid.offset_runs`, then key: the query's index,
    the released cell's index, the run the offset belongs to and the
    offset's row in ``offsets``. The order is the order in which the runs
    add the terms up, so sums over pairs equal theirs bit for bit.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.ndim != 2 or offsets.shape[1] != grid.d:
        offsets = offsets.reshape(-1, grid.d)  # (a new view: never held)
    if offsets.shape[0] == 0 or keys.size == 0 or query.size == 0:
        return None
    R = _reach(offsets)
    if not codes_fit(grid.d, R):
        return None
    off_sorted, run_of = sorted_runs(offsets)
    n_runs = int(run_of[-1]) + 1
    if not pairs_cheaper(grid.d, n_runs, query.size, keys.size, offsets.shape[0], grid.n_cells):
        return None
    positions, row = _offset_tables(offsets, off_sorted, R, grid.d)
    index = _index_of(grid, keys, R, query.size)
    qi, ri, pos = index.offset_pairs(grid.decode(query), R, positions, run_of)
    return qi, ri, run_of[pos], row[pos]


class _LastIndex:
    """The table of buckets of the last ``keys`` array it was built for (the
    density test asks twice: the bounds of every released cell, then the
    weighted sums of the survivors). Held by the array's identity, through a
    weak reference: a new release (a new array) never reads it. Only a pure
    function of the keys is held, as one tuple replaced at once (threads
    read either the old or the new)."""

    def __init__(self) -> None:
        self._held: tuple | None = None

    @staticmethod
    def _signature(keys: np.ndarray) -> tuple:
        return (keys.size, int(keys[0]), int(keys[-1])) if keys.size else (0,)

    def get(self, keys: np.ndarray) -> CellIndex | None:
        held = self._held
        if held is None or held[0]() is not keys or held[1] != self._signature(keys):
            return None
        return held[2]

    def put(self, keys: np.ndarray, index: CellIndex) -> None:
        self._held = (weakref.ref(keys, self._drop), self._signature(keys), index)

    def _drop(self, ref: weakref.ref) -> None:
        held = self._held
        if held is not None and held[0] is ref:
            self._held = None

    def clear(self) -> None:
        self._held = None


_LAST_INDEX = _LastIndex()


def index_held(keys: np.ndarray) -> bool:
    """Whether the table of buckets of these very ``keys`` is held (by the
    self-join of :func:`reaching_sums`): pairs against it cost no layout."""
    return _LAST_INDEX.get(keys) is not None


def _index_of(grid: Grid, keys: np.ndarray, R: int, n_query: int) -> CellIndex:
    """The :class:`CellIndex` of the released cells ``keys``: the one held
    for this array, or a new one (then held)."""
    index = _LAST_INDEX.get(keys)
    if index is None:
        # (int64 keys: decoded by the compiled pass, a float product per
        # axis, straight into packed lanes where the coordinates fit them)
        index = None if grid.wide else CellIndex.from_keys(keys, _key_strides(grid), R, n_query)
        if index is None:
            coords = grid.decode(keys) if grid.wide else decode_keys(keys, _key_strides(grid))
            index = CellIndex(coords, R, n_query)
        _LAST_INDEX.put(keys, index)
    return index


def _key_strides(grid: Grid) -> np.ndarray:
    """The key of a unit step along each axis (int64 keys)."""
    return np.array([grid.key_delta(e) for e in np.eye(grid.d, dtype=np.int64)], dtype=np.int64)


def reaching_sums(
    grid: Grid,
    keys: np.ndarray,
    values: np.ndarray,
    query: np.ndarray,
    kernel: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray | None:
    """sum over NB(q) of the released values for each query key, when the
    queries are most of the released cells (sorted ``keys``), from one
    self-join of the released cells that visits each pair once and uses it
    both ways; None when the pairs are not the way there (use
    :func:`sparse_neighbour_sums`).

    ``kernel``: ``(offsets, weights)``, the sums of ``weights[o] x~_{q + o}``
    over those offsets instead of NB's with weight 1 (each way of a pair
    takes its own offset's weight, 0 off the set).

    The terms are added in another order than :func:`sparse_neighbour_sums'`
    (the same sums up to rounding): for bounds compared with a threshold
    that leaves room for rounding. The table of buckets of the released
    cells is held for the next :func:`run_pairs` on these keys (the
    weighted sums of the cells that pass).
    """
    offsets = grid.offsets if kernel is None else kernel[0]
    if grid.wide or keys.size == 0 or query.size == 0 or offsets.shape[0] == 0:
        return None
    R = _reach(offsets)
    if not codes_fit(grid.d, R) or 4 * query.size < 3 * keys.size:
        return None
    sub = _rows_in(keys, query)
    n_runs = int(sorted_runs(offsets)[1][-1]) + 1
    if sub is None or not pairs_cheaper(
        grid.d, n_runs, query.size, keys.size, offsets.shape[0], grid.n_cells, held=False
    ):
        return None
    codes = _held(f"codes{R}", offsets, lambda: offset_codes(offsets, R))
    w = _held("ones", offsets, lambda: _ones(codes.size)) if kernel is None else kernel[1]
    weight = _weights(grid, offsets, codes, np.asarray(w, dtype=np.float64), R, keys.size, keys.size)
    sums = _index_of(grid, keys, R, keys.size).half_sums(values, R, weight, _threads(keys.size))
    return sums[sub]


def kernel_sums_at(
    grid: Grid, keys: np.ndarray, values: np.ndarray, query: np.ndarray, kernel: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """sum_o weights[o] x~_{q + o} over the kernel's ``(offsets, weights)``
    for each query key (released or not), from the table of buckets of the
    released cells (sorted ``keys``; the one held by :func:`reaching_sums`
    when it is) walked per query, no pair held. In another order than the
    runs' (the same sums up to rounding): for bounds compared with a
    threshold that leaves room for rounding. Int64 keys only."""
    if keys.size == 0 or query.size == 0 or kernel[0].shape[0] == 0:
        return np.zeros(query.size)
    R, weight, index = _walked(grid, keys, kernel, query.size)
    coords = decode_keys(query, _key_strides(grid))
    return index.sums_at(coords, values, R, weight, _threads(query.size))


def kernel_sums_from(
    grid: Grid, keys: np.ndarray, values: np.ndarray, rows: np.ndarray, kernel: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """sum over the given ``rows`` Y of the released cells (sorted ``keys``)
    of ``weights[Y - X] values[Y]``, for every released cell X (by row;
    ``weights`` those of the kernel's ``(offsets, weights)``, 0 off them):
    :func:`kernel_sums_at` of every released cell over the few cells
    ``rows`` only, each of those walking the table of buckets of the
    released cells once (the one held by :func:`reaching_sums` when it
    is), no pair held (``values`` one per released cell). In another
    order than the runs' (the same sums up to rounding): for bounds compared with a
    threshold that leaves room for rounding. Int64 keys only."""
    if keys.size == 0 or rows.size == 0 or kernel[0].shape[0] == 0:
        return np.zeros(keys.size)
    R, weight, index = _walked(grid, keys, kernel, keys.size)
    coords = decode_keys(keys[rows], _key_strides(grid))
    return index.scatter_sums(coords, np.asarray(values)[rows], R, weight, _threads(rows.size))


def _walked(
    grid: Grid, keys: np.ndarray, kernel: tuple[np.ndarray, np.ndarray], n_query: int
) -> tuple[int, OffsetWeights, CellIndex]:
    """The reach of a kernel's ``(offsets, weights)``, its weights by offset
    code and the table of buckets of the released cells (``keys``) that
    its walks read (the held one, or a new one)."""
    offsets, w = kernel
    R = _reach(offsets)
    codes = _held(f"codes{R}", offsets, lambda: offset_codes(offsets, R))
    weight = _weights(grid, offsets, codes, np.asarray(w, dtype=np.float64), R, keys.size, n_query)
    return R, weight, _index_of(grid, keys, R, n_query)


def _weights(
    grid: Grid, offsets: np.ndarray, codes: np.ndarray, w: np.ndarray, R: int, n_keys: int, n_walks: int
) -> OffsetWeights:
    """The :class:`OffsetWeights` of a join's kernel: by class where its
    weights are a function of the multiset of ``|o_k|``
    (:func:`~dpdbscan.cells.pairs.offset_classes`; the ball's kernels are:
    then no table of the cube is built, the sorted codes tell the weight of
    the zero offset), else by code, from a table up to
    :func:`_table_limit`. The same weights either way, so the same sums."""
    # (held beside read-only offsets and weights: 8-D, 1.28M codes, some 10 ms)
    classes = _held(f"classes{R}", offsets, lambda: offset_classes(codes, w, R, grid.d), keyed=w)
    limit = 0 if classes is not None else _table_limit(grid, R, n_keys, n_walks)
    return OffsetWeights(codes, w, R, grid.d, limit, classes)


#: Entries of the weights' table (float64, one per code of the cube of
#: offsets) up to which the sums' joins may look a pair's weight up in it
#: rather than search the sorted codes: 8-D at reach 3 has 7^8 = 5.8M codes
#: (46 MB, built in about 22 ms); its self-join of 495k released cells
#: (8-D, alpha 0.12) took 1.45 s of CPU with the search and 0.62 s with
#: the table, the same sums
_WEIGHT_TABLE = 1 << 23
#: Table entries built per lookup the table saves: a search of 1.28M codes
#: costs about 250 ns more than a table's read (the 8-D self-join above),
#: an entry about 4 ns to build
_ENTRIES_PER_LOOKUP = 64


def _table_limit(grid: Grid, R: int, n_keys: int, n_walks: int) -> int | None:
    """The table limit of a join's :class:`OffsetWeights`: up to
    :data:`_WEIGHT_TABLE` entries where ``n_walks`` cells walking the
    ``n_keys`` released cells should look up enough pairs to pay for the
    table (those in the cube of reach R if the cells were spread evenly
    over the grid: a public cost model of sizes), else the default."""
    size = (2 * R + 1) ** grid.d
    lookups = float(n_walks) * float(n_keys) * float(size) / max(float(grid.n_cells), 1.0)
    return _WEIGHT_TABLE if lookups * _ENTRIES_PER_LOOKUP >= size else None


#: Released cells from which the self-join runs in two threads (the kernel
#: releases the GIL; each thread sums its own share of the cells).
_THREADED = 1 << 16


def _threads(n: int) -> int:
    """Threads for a self-join of n cells: two on a machine with two cores or
    more when n is large, else one."""
    return 2 if n >= _THREADED and (os.cpu_count() or 1) >= 2 else 1


def _rows_in(keys: np.ndarray, query: np.ndarray) -> np.ndarray | None:
    """Row in the sorted ``keys`` of each query key, or None unless every
    query key is one of them."""
    if query.size == keys.size and np.array_equal(query, keys):
        return np.arange(keys.size)  # (the usual case: every released cell)
    pos = np.minimum(np.searchsorted(keys, query), keys.size - 1)
    return pos if np.array_equal(keys[pos], query) else None


#: :func:`_offset_tables` and :func:`_reach` of read-only offset arrays (NB,
#: the ball weights' support: 1.28M offsets in d = 8), by the array's identity.
_TABLES: dict[tuple, tuple] = {}


def _held(name: str, offsets: np.ndarray, make, keyed: np.ndarray | None = None):
    """``make()``, held for a read-only ``offsets`` while it lives (and,
    given ``keyed``, a read-only array of the same kernel, for that very
    array: the weights of the offsets)."""
    if offsets.flags.writeable or (keyed is not None and keyed.flags.writeable):
        return make()
    at = (name, id(offsets)) if keyed is None else (name, id(offsets), id(keyed))
    hit = _TABLES.get(at)
    if hit is not None and hit[0]() is offsets and (keyed is None or hit[2]() is keyed):
        return hit[1]
    out = make()
    forget = functools.partial(_forget, at)
    _TABLES[at] = (weakref.ref(offsets, forget), out, None if keyed is None else weakref.ref(keyed, forget))
    return out


def _ones(n: int) -> np.ndarray:
    """n weights of 1 (NB's), read-only."""
    out = np.ones(n)
    out.setflags(write=False)
    return out


def _forget(at: tuple, _ref: object, tables: dict = _TABLES) -> None:
    tables.pop(at, None)  # the offsets (or weights) are gone; (the dict bound early: at exit too)


def _reach(offsets: np.ndarray) -> int:
    """The largest coordinate of the offsets in absolute value."""
    return _held("reach", offsets, lambda: max(int(offsets.max()), -int(offsets.min())))


def chebyshev_radii(offsets: np.ndarray) -> np.ndarray:
    """The Chebyshev norm of each offset (a row), read-only, held for a
    read-only ``offsets`` while it lives: the density test's shells ask it
    of the ball weights' support at every fit (8-D: 1.28M offsets, about
    0.1 s as ``np.abs(offsets).max(axis=1)``)."""

    def make() -> np.ndarray:
        off = np.asarray(offsets)
        out = np.zeros(off.shape[0], dtype=np.int64)
        for k in range(off.shape[1] if off.ndim == 2 else 0):  # a column at a time
            np.maximum(out, np.abs(off[:, k]), out=out)
        out.setflags(write=False)
        return out

    return _held("chebyshev", offsets, make)


def kernel_shells(
    offsets: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(inner offsets, inner weights, shell offsets, shell weights)``: a
    kernel's offsets (rows) and weights within Chebyshev radius R - 1 and on
    radius R (R its reach), each part read-only and held for read-only
    ``offsets`` and ``weights`` while they live (public: the ball weights'
    kernel, one per (d, eta, k)). The joins of the parts then find their
    offset codes and classes held too, where slicing the kernel anew at
    every fit gave new (writable) arrays and built them again (8-D: the
    codes and classes of 41,553 offsets, twice per fit)."""

    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        cheb = chebyshev_radii(offsets)
        R = int(cheb.max()) if cheb.size else 0
        shell = cheb == R
        parts = (offsets[~shell], weights[~shell], offsets[shell], weights[shell])
        for part in parts:
            part.setflags(write=False)
        return parts

    return _held("shells", offsets, make, keyed=weights)


def _offset_tables(
    offsets: np.ndarray, off_sorted: np.ndarray, R: int, d: int
) -> tuple[OffsetPositions, np.ndarray]:
    """The position of each offset code among the sorted offsets' (increasing:
    lexicographic order) and each sorted offset's row in ``offsets``."""

    def make() -> tuple[OffsetPositions, np.ndarray]:
        codes = offset_codes(off_sorted, R)
        # (offsets sorted already are their own sorted array: rows in order)
        row = np.arange(codes.size) if off_sorted is offsets else _rows_of(offsets, off_sorted, codes, R)
        row.setflags(write=False)
        return OffsetPositions(codes, R, d), row

    return _held(f"tables{R}", offsets, make)


def _rows_of(offsets: np.ndarray, off_sorted: np.ndarray, codes: np.ndarray, R: int) -> np.ndarray:
    """Row in ``offsets`` of each sorted offset (``codes`` are the sorted ones')."""
    mine = offset_codes(offsets, R)
    row = np.empty(codes.size, dtype=np.int64)
    row[np.searchsorted(codes, mine)] = np.arange(mine.size)
    return row


#: Cells generated at once by :func:`neighbourhood` (before dropping the
#: repeats): kappa per given cell, d int64 coordinates each, so about
#: 2^21 x 8 x (d + 2) bytes of scratch whatever the number of cells.
NEIGHBOURHOOD_CHUNK = 1 << 21


def neighbourhood(
    grid: Grid, keys: np.ndarray, keep: Callable[[np.ndarray], np.ndarray] | None = None
) -> np.ndarray:
    """Sorted unique keys of every valid cell in NB of the given cells, and
    of those only the ones ``keep`` (a mask of sorted keys) passes.

    The kappa shifted copies of every given cell are generated a chunk of
    cells at a time, their repeats dropped and ``keep`` applied before the
    next chunk: the scratch memory is bounded by :data:`NEIGHBOURHOOD_CHUNK`,
    the rest is the result (in high dimension NB(X) has thousands of cells
    and the shifted copies of a few hundred thousand cells would not fit).
    """
    if keys.size == 0:
        return keys
    offsets = grid.offsets
    per = max(1, NEIGHBOURHOOD_CHUNK // len(offsets))
    parts: list[np.ndarray] = []
    held, merge_at = 0, NEIGHBOURHOOD_CHUNK
    for start in range(0, keys.size, per):
        coords = grid.decode(keys[start : start + per])
        c = (coords[:, None, :] + offsets[None, :, :]).reshape(-1, grid.d)
        cand = _sorted_unique(grid.encode(c[grid.valid(c)]))
        del c
        if keep is not None and cand.size:
            cand = cand[keep(cand)]
        parts.append(cand)
        held += cand.size
        if len(parts) > 1 and held > merge_at:
            parts = [_sorted_unique(np.concatenate(parts))]
            held = parts[0].size
            merge_at = max(merge_at, 2 * held)  # amortised: the result is re-sorted O(log) times
    return parts[0] if len(parts) == 1 else _sorted_unique(np.concatenate(parts))


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """Sorted keys without repeats (also packed keys, which np.unique may not order)."""
    keys = np.sort(keys)
    if keys.size:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return keys


class SumsAt:
    """Sums of the released values over an offset set, at chosen cells only.

    For sub-cells every position has its own offset set, all within NB; this
    evaluates them at a short list of candidate cells instead of over the whole
    universe. Dense: the same prefix sums and the same order of additions as
    :func:`dense_neighbour_sums`, so the results are identical (also in
    floating point). Sparse: :func:`sparse_neighbour_sums` at the cells.
    """

    def __init__(self, hist: NoisyHistogram) -> None:
        self.hist = hist
        grid = hist.grid
        if hist.kind != "dense":
            return
        R = grid.reach
        C = padded_prefix_sums(hist.values, R)
        self._R = R
        self._C = C.ravel()
        self._strides = np.array(C.strides, dtype=np.int64) // C.itemsize

    def __call__(self, keys: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        hist, grid = self.hist, self.hist.grid
        if hist.kind != "dense":
            return sparse_neighbour_sums(grid, hist.released_keys, hist.values, keys, offsets)
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.size and np.abs(offsets).max() > self._R:
            raise ValueError("offsets reach beyond the padding of the dense histogram")
        out = np.zeros(keys.size, dtype=self._C.dtype)
        if keys.size == 0:
            return out
        base = (grid.decode(keys) + self._R) @ self._strides
        st = self._strides
        for prefix, lo, hi in offset_runs(offsets):
            shift = int(np.dot(prefix, st[:-1])) if prefix.size else 0
            out += self._C[base + (shift + hi + 1)]
            out -= self._C[base + (shift + lo)]
        return out


def dense_candidates(grid: Grid, values: np.ndarray, threshold: float, n_terms: int) -> np.ndarray | None:
    """Sorted keys of the cells within NB of a cell holding ``>= threshold / n_terms``.

    A sum of at most ``n_terms`` values over a subset of NB(X) reaches a
    threshold > 0 only if one of its terms does reach ``threshold / n_terms``,
    so these cells are a superset of the ones where it can. Returns None when
    that is not worth it (threshold <= 0, or the candidates would cover much
    of the universe): evaluate every cell then.
    """
    if threshold <= 0 or n_terms < 1:
        return None
    cut = threshold / n_terms
    if values.dtype.kind in "iub":
        cut = math.ceil(cut)
        while (cut - 1) * n_terms >= threshold:  # exact for integers, whatever the rounding
            cut -= 1
        while cut * n_terms < threshold:
            cut += 1
    else:
        cut = cut * (1 - 1e-9) - 1e-12  # a superset is all that is needed
    heavy = np.flatnonzero(values.ravel() >= cut)
    offsets = grid.offsets
    if heavy.size * offsets.shape[0] > values.size // 4:
        return None
    R = grid.reach
    shape = grid.shape
    mask = np.zeros(tuple(s + 2 * R for s in shape), dtype=bool)
    pstrides = np.array(mask.strides, dtype=np.int64)  # itemsize 1
    base = (np.stack(np.unravel_index(heavy, shape), axis=1) + R) @ pstrides
    flat = mask.ravel()
    for delta in offsets @ pstrides:
        flat[base + delta] = True
    inner = mask[tuple(slice(R, R + s) for s in shape)]
    idx = np.flatnonzero(inner)  # row-major, so sorted by key
    return grid.encode(np.stack(np.unravel_index(idx, shape), axis=1))
