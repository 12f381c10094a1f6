"""Pairs of cells within reach, found without enumerating the offsets.

A sum over the alpha-neighbourhood NB(X) visits kappa offsets per cell, and
kappa grows as about (2 sqrt(d) + 1)^d: 609 cells in 4-D, 28,197 in 6-D and
1,278,129 in 8-D. A sparse release holds few cells within reach of each other,
so listing the pairs that do exist costs far less in high dimension.

A table of buckets (:class:`CellIndex`): the cells are laid out by bucket,
a bucket being ``c // side`` along some of the axes (the bucketed ones), a
counting sort into a dense table with one entry per bucket. The widest axis
is the sweep axis: it is the table's last digit, so the cells of one bucket
of the other axes within R along it are one run of positions. A query cell
reads the runs of the buckets its box of half-side R meets (about
``(1 + 2R / side)`` buckets per bucketed axis) and checks each cell in them
on every axis; axes left without buckets (when many cells are spread over
many buckets: high dimension) are checked with the rest. :func:`plan` (a
public cost model of the sizes) picks the axes and sides within a table of
a few entries per cell; the compiled walk is in :mod:`.pairkernels`. The
cost is about the cells plus the table, plus per query cell the buckets it
reads and the cells in them, against kappa-dependent lookups per cell for
the runs of offsets (``offset_runs``); :func:`pairs_cheaper` chooses
between them.

Offsets are told apart exactly by :func:`offset_codes` (an integer per
offset), so the sums over pairs can reproduce the runs' order of additions
bit for bit.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np


def offset_codes(offsets: np.ndarray, R: int) -> np.ndarray:
    """One int64 per integer offset with ``|o_i| <= R``: mixed radix ``2R + 1``."""
    off = np.asarray(offsets, dtype=np.int64)
    off = off.reshape(-1, off.shape[-1] if off.ndim > 1 else 1)
    base = 2 * R + 1
    code = np.zeros(off.shape[0], dtype=np.int64)
    for i in range(off.shape[1]):
        code *= base
        code += off[:, i] + R
    return code


def codes_fit(d: int, R: int) -> bool:
    """Whether :func:`offset_codes` of d-dimensional offsets fit an int64."""
    return (2 * R + 1) ** d < 1 << 62


_FORCED: list[bool | None] = [None]


@contextlib.contextmanager
def forced(use_pairs: bool | None) -> Iterator[None]:
    """Within the block, :func:`pairs_cheaper` answers ``use_pairs`` (None: the
    cost model). The tests compare both ways of summing this way."""
    before = _FORCED[0]
    _FORCED[0] = use_pairs
    try:
        yield
    finally:
        _FORCED[0] = before


def walk_wanted(d: int) -> bool:
    """Whether a join that holds no pairs (:meth:`CellIndex.nearest`) walks
    the table of buckets rather than looking up each offset: from 3-D up,
    where a ball's offsets (hundreds in 3-D, millions in 8-D with sub-cells)
    outnumber the cells a walk meets; not below, where the offsets are few
    and the kernels' load (0.4 s) would fall on a 2-D fit. :func:`forced`
    decides within its block."""
    return _FORCED[0] if _FORCED[0] is not None else d >= 3


#: Pairs held at once: beyond this many expected (about 1 GB of indices and
#: offsets) the runs, which hold one run's worth, are used whatever they cost.
MAX_PAIRS = 1 << 25

#: Costs of the cost models, in nanoseconds (measured in 5-D and 6-D on the
#: benchmark's releases; a rough guide only): one binary search step of the
#: runs, one bucket read by a query cell, one cell checked, one cell laid
#: out, one table entry.
_STEP, _READ, _CHECK, _LAYOUT, _ENTRY = 4.0, 2.0, 0.5, 12.0, 1.5
#: A bucket read of a table of ``size`` entries costs ``_READ + _MISS *
#: size / (size + _CACHED)``: past the cache (about 2^17 entries of int64)
#: nearly every read misses. Fitted (least squares, with ``_CHECK``) on the
#: layout and self-join of the benchmark's 5-D, 6-D and 8-D releases over
#: 36 bucket sides: the table of one entry per cell or so that the
#: earlier constants (8 ns a read, 2 a check) chose cost 20-40% more than
#: one of a few 2^16 entries with twice the cells checked.
_MISS, _CACHED = 16.0, 1 << 17


def pairs_cheaper(
    d: int,
    n_runs: int,
    n_query: int,
    n_keys: int,
    n_offsets: int = 0,
    n_cells: int = 0,
    *,
    held: bool = True,
) -> bool:
    """Whether the table of buckets should beat one pair of binary searches
    per run of offsets and query cell (a public cost model: sizes only).

    With ``n_offsets`` and ``n_cells`` (the universe's), the pairs expected
    if the cells were spread evenly must stay below :data:`MAX_PAIRS`, even
    when :func:`forced`: dense releases keep the runs. Up to three
    dimensions the runs are few (at most 19 per cell in 3-D) and the pairs
    are not tried: they would load the compiled kernels (0.4 s), which a fit
    below 4-D never does. ``held=False``: a join that visits each pair and
    drops it (a self-join's sums, :meth:`CellIndex.half_sums`), whose
    memory is the cells' whatever the pairs: :data:`MAX_PAIRS` does not
    bound it."""
    if held and n_cells and n_query * n_keys * n_offsets / n_cells > MAX_PAIRS:
        return False
    if _FORCED[0] is not None:
        return _FORCED[0]
    if d <= 3:
        return False
    log = max(math.log2(max(n_keys, 2)), 1.0)
    runs_cost = 2.0 * n_runs * n_query * log * _STEP
    R = _reach_of(n_offsets, d)
    side = max(int(round((n_cells or n_keys) ** (1.0 / d))), 1)
    return plan(d, R, n_keys, n_query, [side] * d)[2] < runs_cost


def _reach_of(n_offsets: int, d: int) -> int:
    """The half-side of the smallest cube holding ``n_offsets`` offsets about
    0 (the reach, for a cost model that is given their number only)."""
    return max(int(math.ceil((max(n_offsets, 1) ** (1.0 / d) - 1) / 2)), 0)


#: Table entries allowed per laid-out cell (beyond a floor for few cells).
_ENTRIES_PER_CELL, _MIN_ENTRIES = 4, 1 << 16


def plan(d: int, R: int, n: int, m: int, extents: list[int]) -> tuple[list[int], list[int], float]:
    """``(axes, sides, cost)``: the bucketed axes (the sweep axis last) and
    their bucket sides for ``n`` cells of coordinates below ``extents``
    queried by ``m`` cells with boxes of half-side R, and the cost model's
    estimate in nanoseconds (a public cost model: sizes only).

    A query reads about ``prod (1 + 2R / side)`` buckets over the bucketed
    axes but the sweep one (one run along it) and checks the cells in its
    buckets, about ``n / V`` times the product over the axes of
    ``side + 2R`` (the extent on a free axis), if the cells were spread
    evenly; the table has one entry per bucket, at most
    :data:`_ENTRIES_PER_CELL` per cell.
    """
    ext = [max(int(x), 1) for x in extents]
    by_width = sorted(range(d), key=lambda k: (-ext[k], k))
    sweep, rest = by_width[0], by_width[1:]
    density = n / math.prod(float(x) for x in ext)
    limit = max(_ENTRIES_PER_CELL * n, _MIN_ENTRIES)
    sides = sorted(set(list(range(1, 4 * R + 5)) + [2**t for t in range(1, 40) if 2**t < max(ext)]))
    # every (sweep side, bucketed axes e, side) at once, in the order a loop
    # over them would take (the first of equal costs wins); products of
    # integers as floats, exact below 2^53 (far beyond any table allowed)
    sd = np.array(sides, dtype=np.float64)[:, None]  # (sides, 1)
    er = np.array([ext[k] for k in rest], dtype=np.float64)[None, :]  # (1, d - 1)
    nbs = np.floor((er - 1) / sd) + 1  # buckets per axis, per side
    one = np.ones((sd.size, 1))
    size_e = np.cumprod(np.hstack((one, nbs)), axis=1)  # (sides, d): the first e axes
    reads_e = np.cumprod(np.hstack((one, np.minimum((2 * R + sd) / sd, nbs))), axis=1)
    box_e = np.cumprod(np.hstack((one, np.minimum(sd + 2 * R, er))), axis=1)
    free_e = np.array([math.prod(float(ext[k]) for k in rest[e:]) for e in range(d)])
    n_sweep = np.floor((ext[sweep] - 1) / sd[:, 0]) + 1  # per sweep side
    window = np.minimum(2 * R + sd[:, 0], ext[sweep])
    # (sweep side, e, side): e = 0 has no bucketed axis, its one entry side 1
    size = n_sweep[:, None, None] * size_e.T[None, :, :]
    reads = np.broadcast_to(reads_e.T[None, :, :], size.shape)
    box = window[:, None, None] * box_e.T[None, :, :] * free_e[None, :, None]
    read = _READ + _MISS * size / (size + _CACHED)  # a read of a large table misses the cache
    cost = m * (reads * read + density * box * _CHECK) + n * _LAYOUT + size * _ENTRY
    cost[:, 0, 1:] = math.inf
    cost[(size > limit) | (n_sweep > limit)[:, None, None]] = math.inf
    at = int(np.argmin(cost))
    s_at, e, side_at = np.unravel_index(at, cost.shape)
    if not math.isfinite(cost.flat[at]):
        return [sweep], [max(ext[sweep], 1)], math.inf
    side = sides[int(side_at)] if e else 1
    return rest[: int(e)] + [sweep], [side] * int(e) + [sides[int(s_at)]], float(cost.flat[at])


#: Coordinates up to which the buckets they fall in (and the first and last
#: bucket their boxes meet) are tabled; beyond, they are divided out.
_TABLED = 1 << 16


class CellIndex:
    """Cells (integer coordinate rows, non-negative) laid out in a table of
    buckets, for the cells within R of query cells along every axis.

    Built for boxes of half-side ``R`` queried by about ``n_query`` cells
    (which only steer the layout: any R may be asked), or from int64 keys
    (:meth:`from_keys`). Memory: the cells in layout order (packed lanes,
    the base of each one's bucket; their coordinates only where they do not
    fit the lanes or a walk asks for them, linear codes where a walk looks
    weights up by code) and the table (a few entries per cell)."""

    def __init__(
        self,
        coords: np.ndarray | None,
        R: int,
        n_query: int | None = None,
        *,
        packed: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        pairkernels = _kernels()
        if packed is not None:
            # (:meth:`from_keys`: the cells as packed lanes and each axis' largest coordinate)
            lanes_in, column_top = packed
            n, d = lanes_in.size, column_top.size
        else:
            assert coords is not None
            coords = np.ascontiguousarray(coords, dtype=np.int64)
            n, d = coords.shape
            column_top = pairkernels.column_max(coords) if n else np.zeros(d, np.int64)
        self.n, self.d = n, d
        extents = [int(x) + 1 for x in column_top] if n else [1] * d
        axes, sides, _ = plan(d, R, n, n if n_query is None else n_query, extents)
        self.nb = np.array([(extents[k] - 1) // s + 1 for k, s in zip(axes, sides)], dtype=np.int64)
        self.strides = np.array(
            [math.prod(self.nb[t + 1 :].tolist()) for t in range(len(axes))], dtype=np.int64
        )
        self.axes = np.array(axes, dtype=np.int64)
        self.sides = np.array(sides, dtype=np.int64)
        self.top = max(extents)
        self.tabled = min(self.top, _TABLED)  # coordinates below it have their buckets tabled
        bucket = np.arange(self.tabled)[None, :] // self.sides[:, None]
        self.bits = 64 // d
        self._packed: np.ndarray | None = None
        self._coords: np.ndarray | None = None
        # the cells in layout order: each bucket's cells side by side; where
        # every coordinate fits the packed lanes, only the lanes are laid out
        # (the walks of the sums read them alone) and the coordinates are
        # unpacked from them if a walk asks (:attr:`coords`)
        table = (self.axes, self.sides, bucket, self.strides, int(np.prod(self.nb)))
        if packed is None and not self._fits_lanes():
            self.start, self.order, self._coords, self.col = pairkernels.bucket_layout(coords, *table)
        else:
            if packed is None:
                lanes_in = pairkernels.packed_lanes(coords, self.bits)
            assert self._fits_lanes()
            self.start, self.order, self.col, self._packed = pairkernels.packed_layout(
                lanes_in, d, self.bits, *table
            )
        self._per_reach: dict[int, tuple] = {}

    @classmethod
    def from_keys(
        cls, keys: np.ndarray, strides: np.ndarray, R: int, n_query: int | None = None
    ) -> CellIndex | None:
        """The index of the cells of int64 keys ``sum_k c_k strides[k]`` (the
        grid's strides, the last 1), decoded straight into packed lanes
        (:func:`.pairkernels.packed_keys`: no coordinate rows, 6-D: 22 MB
        less of new pages); None when a coordinate could not fit a lane
        (build it from :func:`decode_keys` then). The same layout as from
        the decoded rows."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        strides = np.ascontiguousarray(strides, dtype=np.int64)
        d = strides.size
        bits = 64 // d
        if keys.size == 0 or bits < 4:
            return None
        lanes_in, top = _kernels().packed_keys(keys, strides, bits)
        if int(top.max()) >= 1 << (bits - 2):
            return None
        return cls(None, R, n_query, packed=(lanes_in, top))

    def _fits_lanes(self, top: int = 0) -> bool:
        """Whether every laid-out coordinate (and ``top``) fits a packed lane."""
        return self.bits >= 4 and max(self.top - 1, top) < 1 << (self.bits - 2)

    @property
    def coords(self) -> np.ndarray:
        """The cells' coordinates in layout order (unpacked from the lanes
        at the first ask, where only those were laid out)."""
        if self._coords is None:
            assert self._packed is not None
            self._coords = _kernels().unpacked_lanes(self._packed, self.d, self.bits)
        return self._coords

    def _walk(self, R: int, coords: bool = True) -> tuple:
        """The arguments of a walk at reach R: the laid-out cells, packed
        lanes, the table and the first and last bucket met per coordinate.
        ``coords=False``: a walk that reads the lanes alone where there are
        (the sums' kernels): no coordinates are unpacked for it, an empty
        array of d columns stands in."""
        held = self._per_reach.get(R)
        if held is None:
            x = np.arange(self.tabled)[None, :]
            low = np.maximum(x - R, 0) // self.sides[:, None]
            high = np.minimum((x + R) // self.sides[:, None], self.nb[:, None] - 1)
            held = (low, high)
            self._per_reach[R] = held
        lanes = self._lanes(R)
        pk = self._packed if lanes.size else np.zeros(self.n, dtype=np.uint64)
        assert pk is not None
        low, high = held
        return (
            self.coords if coords or not lanes.size else np.zeros((0, self.d), dtype=np.int64),
            pk,
            int(R),
            lanes,
            self.axes,
            self.sides,
            self.nb,
            self.strides,
            self.start,
            low,
            high,
            self.col,
        )

    def _lanes(self, R: int, top: int = 0) -> np.ndarray:
        """``(H, base, upper, lower)`` of the packed lanes at reach R, or empty
        when coordinates (or ``top``, a query's largest) do not fit them."""
        bits = self.bits
        if not self._fits_lanes(max(top, R)):
            return np.zeros(0, dtype=np.uint64)
        h = 1 << (bits - 2)
        if self._packed is None:
            self._packed = self.pack(self.coords)
        rep = sum(1 << (bits * k) for k in range(self.d))  # 1 in every lane
        H, base = (1 << (bits - 1)) * rep, h * rep
        return np.array([H, base, (h - 1 - R) * rep, (h + R) * rep], dtype=np.uint64)

    def pack(self, coords: np.ndarray) -> np.ndarray:
        """Each row's coordinates in one uint64 (lanes of ``64 // d`` bits)."""
        return _kernels().packed_lanes(np.ascontiguousarray(coords, dtype=np.int64), self.bits)

    def _query(self, query: np.ndarray, R: int, coords: bool = True) -> tuple[np.ndarray, np.ndarray, tuple]:
        """Query rows, packed as the walk wants them, and the walk
        (``coords`` as in :meth:`_walk`)."""
        q = np.ascontiguousarray(query, dtype=np.int64).reshape(-1, self.d)
        walk = self._walk(R, coords)
        top = int(q.max()) if q.size else 0
        if walk[3].size and (top >= 1 << (self.bits - 2) or (q.size and int(q.min()) < 0)):
            # (the queries do not fit the lanes: the walk reads coordinates)
            sc = self.coords
            walk = (sc, np.zeros(self.n, dtype=np.uint64), walk[2], np.zeros(0, np.uint64)) + walk[4:]
        qk = self.pack(q) if walk[3].size else np.zeros(q.shape[0], dtype=np.uint64)
        return q, qk, walk

    def pairs(self, query: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
        """Every ``(i, j)``: query row i, indexed row j within R along every axis."""
        pairkernels = _kernels()
        if self.n == 0 or len(query) == 0:
            return _none()
        q, qk, walk = self._query(query, R)
        return pairkernels.box_pairs(q, qk, *walk, self.order, False, 0, q.shape[0])

    def half_pairs(self, R: int) -> tuple[np.ndarray, np.ndarray]:
        """The pairs of distinct indexed rows within R, each once (rows)."""
        pairkernels = _kernels()
        if self.n == 0:
            return _none()
        walk = self._walk(R)
        return pairkernels.box_pairs(walk[0], walk[1], *walk, self.order, True, 0, self.n)

    def linear_codes(self, coords: np.ndarray, R: int) -> np.ndarray:
        """sum_k c_k (2R + 1)^(d - 1 - k) of each row, modulo 2^64 (int64
        wrapping): the difference of two is the code of their offset less
        the zero offset's, exactly, since codes fit an int64."""
        return _kernels().linear_codes(np.ascontiguousarray(coords, dtype=np.int64), 2 * R + 1)

    def _codes_if(self, coords: np.ndarray, R: int, weight: OffsetWeights) -> np.ndarray:
        """:meth:`linear_codes` of the rows where the joins look weights up
        by offset code; empty (unread) where ``weight`` has classes."""
        return np.zeros(0, np.int64) if weight.classes.size else self.linear_codes(coords, R)

    def half_sums(self, values: np.ndarray, R: int, weight: OffsetWeights, threads: int = 1) -> np.ndarray:
        """Per indexed row: ``w(0) values`` plus, over the other rows within R
        along every axis, ``w(offset) x value`` (each pair visited once and
        used both ways; in ``threads`` chunks of the cells at once, the
        kernels release the GIL); ``weight`` gives w of an offset code."""
        pairkernels = _kernels()
        vals = np.asarray(values, dtype=np.float64)[self.order]
        sc, pk, R, lanes, *walk = self._walk(R, coords=bool(weight.classes.size == 0))
        lin = self._codes_if(sc, R, weight)

        def part(p0: int, p1: int) -> np.ndarray:
            return pairkernels.half_sums(
                sc, pk, lin, vals, R, lanes, *walk, weight.table, weight.codes, weight.weights,
                weight.symmetric, weight.step, weight.classes, p0, p1,
            )  # fmt: skip

        laid = vals * weight.at_zero
        for s in _in_threads(part, _chunks(self.n, threads)):
            laid += s
        out = np.empty(self.n)
        out[self.order] = laid
        return out

    def sums_at(
        self, query: np.ndarray, values: np.ndarray, R: int, weight: OffsetWeights, threads: int = 1
    ) -> np.ndarray:
        """Per query row (a cell): over the indexed rows within R along every
        axis, the sum of ``w(offset) x value`` (``weight`` as in
        :meth:`half_sums`; the query's own cell counts where it is indexed).
        No pair is held; in ``threads`` chunks of the queries at once."""
        pairkernels = _kernels()
        out = np.zeros(len(query))
        if self.n == 0 or len(query) == 0:
            return out
        vals = np.asarray(values, dtype=np.float64)[self.order]
        q, qk, walk = self._query(query, R, coords=bool(weight.classes.size == 0))
        sc, pk, R, lanes, *rest = walk
        lin, ql = self._codes_if(sc, R, weight), self._codes_if(q, R, weight)

        def part(p0: int, p1: int) -> None:
            pairkernels.query_sums(
                q, qk, ql, sc, pk, lin, vals, R, lanes, *rest, weight.table, weight.codes,
                weight.weights, weight.step, weight.classes, p0, p1, out,
            )  # fmt: skip

        _in_threads(part, _chunks(q.shape[0], threads))
        return out

    def scatter_sums(
        self, query: np.ndarray, values: np.ndarray, R: int, weight: OffsetWeights, threads: int = 1
    ) -> np.ndarray:
        """Per indexed row: over the query rows (cells) within R along every
        axis, the sum of ``w(query - row) x value`` of the query (``weight``
        as in :meth:`half_sums`): what :meth:`sums_at` would give every
        indexed row from an index of the query cells, at the cost of the
        queries' walks. No pair is held; in ``threads`` chunks of the
        queries at once."""
        pairkernels = _kernels()
        out = np.zeros(self.n)
        if self.n == 0 or len(query) == 0:
            return out
        qv = np.ascontiguousarray(values, dtype=np.float64)
        q, qk, walk = self._query(query, R, coords=bool(weight.classes.size == 0))
        sc, pk, R, lanes, *rest = walk
        lin, ql = self._codes_if(sc, R, weight), self._codes_if(q, R, weight)

        def part(p0: int, p1: int) -> np.ndarray:
            return pairkernels.scatter_sums(
                q, qk, ql, qv, sc, pk, lin, R, lanes, *rest, weight.table, weight.codes,
                weight.weights, weight.step, weight.classes, p0, p1,
            )  # fmt: skip

        laid = np.zeros(self.n)
        for s in _in_threads(part, _chunks(q.shape[0], threads)):
            laid += s
        out[self.order] = laid
        return out

    def components(self, R: int, joined: OffsetWeights) -> np.ndarray:
        """Per indexed row, the smallest row of its component in the graph
        joining two rows within R along every axis whose offset ``joined``
        weighs > 0 (a symmetric set): a union-find over the pairs as they
        are found, in memory linear in the rows, not the pairs (a pair
        already joined is skipped before its offset is looked up)."""
        pairkernels = _kernels()
        if self.n == 0:
            return np.zeros(0, np.int64)
        sc, pk, R, lanes, *walk = self._walk(R)
        lin = self.linear_codes(sc, R)
        weights = (joined.table, joined.codes, joined.weights)
        parent = np.arange(self.n, dtype=np.int64)
        root = pairkernels.half_roots(sc, pk, lin, R, lanes, *walk, *weights, parent)
        # positions to rows: each component's smallest row stands for it
        smallest = np.full(self.n, self.n, dtype=np.int64)
        np.minimum.at(smallest, root, self.order)
        out = np.empty(self.n, dtype=np.int64)
        out[self.order] = smallest[root]
        return out

    def edges(self, R: int, joined: OffsetWeights, most: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The pairs of distinct indexed rows within R along every axis whose
        offset ``joined`` weighs > 0 (a symmetric set), each once, in rows;
        None when there are more than ``most`` (the walk stops there, having
        held at most that many)."""
        pairkernels = _kernels()
        if self.n == 0:
            return _none()
        sc, pk, R, lanes, *walk = self._walk(R)
        lin = self.linear_codes(sc, R)
        weights = (joined.table, joined.codes, joined.weights)
        i, j, complete = pairkernels.half_edges(sc, pk, lin, R, lanes, *walk, *weights, self.order, int(most))
        return (i, j) if complete else None

    def block_components(
        self, Rb: int, members: np.ndarray, block: np.ndarray, R: int, joined: OffsetWeights
    ) -> np.ndarray:
        """Per member row (``members``: coordinate rows, ``block``: the
        indexed row, a block, each belongs to), a label of its component in
        the graph joining two members within R along every axis whose offset
        ``joined`` weighs > 0, when the members of each block are all joined
        to each other: a union-find over the blocks within ``Rb`` (any
        two members within R lie in such blocks), a pair of blocks already
        joined skipped unread (:func:`.pairkernels.block_roots`). The label
        is an indexed row of the component's blocks."""
        pairkernels = _kernels()
        if self.n == 0:
            return np.zeros(0, np.int64)
        at = np.empty(self.n, dtype=np.int64)
        at[self.order] = np.arange(self.n)  # each block's laid-out position
        pos = at[np.asarray(block, dtype=np.int64)]
        by = np.argsort(pos, kind="stable")
        mstart = np.searchsorted(pos[by], np.arange(self.n + 1)).astype(np.int64)
        mc = np.ascontiguousarray(np.asarray(members, dtype=np.int64)[by])
        lin = self.linear_codes(mc, R)
        sc, pk, Rb, lanes, *walk = self._walk(Rb)
        weights = (joined.table, joined.codes, joined.weights)
        root = pairkernels.block_roots(sc, pk, Rb, lanes, *walk, mstart, mc, lin, int(R), *weights)
        return self.order[root[pos]]

    def nearest(
        self,
        query: np.ndarray,
        R: int,
        labels: np.ndarray,
        *,
        centres: bool,
        lim: float,
        reach: float,
        strict: bool,
        tol: float,
    ) -> np.ndarray:
        """Per query row (a cell), the smallest of the ``labels`` (one per
        indexed row) of the indexed cells within R along every axis nearest
        to the query cell's centre, or -1 where none counts: each pair is
        checked as the walk finds it and dropped, so the memory is the cells'
        whatever the pairs (:func:`.pairkernels.nearest_labels` says which
        count: distances to the cells, or their ``centres``, whose squared
        sum of halves is at most ``lim`` and below ``reach``; ties within
        ``tol``)."""
        pairkernels = _kernels()
        if self.n == 0 or len(query) == 0:
            return np.full(len(query), -1, dtype=np.int64)
        q, qk, walk = self._query(query, R)
        laid = np.ascontiguousarray(np.asarray(labels, dtype=np.int64)[self.order])
        return pairkernels.nearest_labels(
            q, qk, *walk, laid, centres, float(lim), float(reach), strict, float(tol), 0, q.shape[0]
        )

    def offset_pairs(
        self, query: np.ndarray, R: int, positions: OffsetPositions, run_of: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(qi, ri, pos)``: the query rows, the indexed rows at an offset of
        a set and that offset's position in its sorted codes, sorted by
        query row, then ``run_of`` the position, then indexed row."""
        pairkernels = _kernels()
        if self.n == 0 or len(query) == 0:
            z = np.zeros(0, np.int64)
            return z, z, z
        q, qk, walk = self._query(query, R)
        lin = self.linear_codes(walk[0], R)
        ql = self.linear_codes(q, R)
        sc, pk, *rest = walk
        return pairkernels.offset_pairs(
            q, qk, ql, sc, pk, lin, *rest, self.order, positions.table, positions.codes, run_of, self.n
        )


def decode_keys(keys: np.ndarray, strides: np.ndarray) -> np.ndarray:
    """Coordinate rows of int64 cell keys ``sum_k c_k strides[k]`` (the
    grid's strides, the last 1), as :meth:`~dpdbscan.cells.grid.Grid.decode`
    gives them, by a compiled pass (kernels are loaded: only for the pairs)."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    return _kernels().decode_keys(keys, np.ascontiguousarray(strides, dtype=np.int64))


def _kernels():
    """The compiled kernels' module, imported at the first use."""
    # lazy: numba (0.4 s to load) only where pairs are cheaper: never in a 2-D fit
    from . import pairkernels

    return pairkernels


def _chunks(n: int, threads: int) -> list[tuple[int, int]]:
    """``threads`` ranges of about equal size covering ``0 : n``."""
    k = max(1, min(threads, n))
    cuts = [n * t // k for t in range(k + 1)]
    return [(cuts[t], cuts[t + 1]) for t in range(k)]


def _in_threads(fn, ranges: list[tuple[int, int]]) -> list:
    """``fn(*r)`` for every range, in threads when there are several (the
    kernels release the GIL), in the order of the ranges."""
    if len(ranges) == 1:
        return [fn(*ranges[0])]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(ranges)) as pool:
        return list(pool.map(lambda r: fn(*r), ranges))


class OffsetWeights:
    """The weight of each offset code (0 off the set): a table over the cube
    of codes when it has at most ``limit`` entries (:data:`TABLE` by
    default), else the sorted codes and their weights (a binary search per
    pair: in 8-D at reach 3, 1.28M codes, that search was more than half of
    the self-join's time; the same weights either way).

    ``symmetric``: whether every offset weighs what its opposite does (the
    ball's kernels do), so a pair used both ways looks one weight up: the
    code of -o is ``(2R + 1)^d - 1`` less o's, the table read backwards.

    ``classes``: :func:`offset_classes` of these codes and weights, the
    ``(step, classes)`` by which the sums' joins look each pair's weight
    up instead (empty arrays without)."""

    TABLE = 1 << 22

    def __init__(
        self,
        codes: np.ndarray,
        weights: np.ndarray,
        R: int,
        d: int,
        limit: int | None = None,
        classes: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        codes = np.asarray(codes, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        none: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0))
        self.step, self.classes = classes if classes is not None else none
        zero = (2 * R + 1) ** d // 2  # the code of the zero offset (the middle of the cube)
        size = (2 * R + 1) ** d
        if size <= (self.TABLE if limit is None else limit):
            self.table = np.zeros(size)
            self.table[codes] = weights
            self.codes, self.weights = np.zeros(0, np.int64), np.zeros(0)
            self.at_zero = float(self.table[zero])
            self.symmetric = _symmetric(codes, weights, size, self.table)
            return
        self.table = np.zeros(0)
        if codes.size > 1 and not bool(np.all(codes[1:] > codes[:-1])):
            order = np.argsort(codes, kind="stable")
            codes, weights = codes[order], weights[order]
        self.codes, self.weights = np.ascontiguousarray(codes), np.ascontiguousarray(weights)
        at = min(int(np.searchsorted(codes, zero)), max(codes.size - 1, 0))
        self.at_zero = float(weights[at]) if codes.size and codes[at] == zero else 0.0
        self.symmetric = _symmetric(self.codes, self.weights, size)

    def of(self, codes: np.ndarray) -> np.ndarray:
        """The weights of offset ``codes`` (0 off the set)."""
        codes = np.asarray(codes, dtype=np.int64)
        if self.table.size:
            return self.table[codes]
        at = np.minimum(np.searchsorted(self.codes, codes), max(self.codes.size - 1, 0))
        hit = self.codes[at] == codes if self.codes.size else np.zeros(codes.size, dtype=bool)
        return np.where(hit, self.weights[at] if self.codes.size else 0.0, 0.0)


def _symmetric(codes: np.ndarray, weights: np.ndarray, size: int, table: np.ndarray | None = None) -> bool:
    """Whether the offset of code c weighs what the offset of ``size - 1 -
    c`` (its opposite) does, for the weights of the ``codes`` (0 off them):
    for increasing codes, whether the opposites read backwards are the codes
    and the weights read backwards the weights (two sequential passes: the
    ball's 1.28M codes in 8-D take 3 ms); else from the ``table`` of every
    code."""
    if codes.size < 2 or bool(np.all(codes[1:] > codes[:-1])):
        opposite = (size - 1) - codes[::-1]
        return bool(np.array_equal(codes, opposite) and np.array_equal(weights, weights[::-1]))
    if table is None:
        return False
    return bool(np.array_equal(table[(size - 1) - codes], table[codes]))


#: Entries up to which :func:`offset_classes` tables the weights by class
_CLASSES = 1 << 16


def offset_classes(
    codes: np.ndarray, weights: np.ndarray, R: int, d: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(step, classes)`` when the weight of every offset of the cube of
    half-side R (those of ``codes``, 0 off them) is a function of its class,
    the multiset of its ``|o_k|``: then the class of an offset is ``sum_k
    step[|o_k|]`` (``step[a] = (d + 1)^(a - 1)``, ``step[0] = 0``: the
    count of each ``|o_k| = a`` as a digit) and ``classes[c]`` its weight,
    the very float of the codes' (checked bit for bit, and that an offset
    left out of ``codes`` leaves its class at +0). Else None (or beyond
    :data:`_CLASSES` classes). The ball's kernels are such functions (a
    weight depends on the multiset of the per-axis types, the same under a
    permutation or reflection of the axes): the joins then look a pair's
    weight up in a table of a few hundred entries from its packed lanes
    rather than in one of the cube's (8-D at reach 3: 7^8 codes, 46 MB,
    a miss of the caches per pair)."""
    codes = np.asarray(codes, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    size = (d + 1) ** R
    if R < 1 or size > _CLASSES or codes.size != weights.size:
        return None
    if codes.size > 1 and not bool(np.all(codes[1:] > codes[:-1])) and np.unique(codes).size < codes.size:
        return None
    step = np.zeros(R + 1, dtype=np.int64)
    step[1:] = (d + 1) ** np.arange(R, dtype=np.int64)
    cls = _kernels().code_classes(codes, step, 2 * R + 1, d)
    table = np.zeros(size)
    table[cls] = weights
    if not np.array_equal(table[cls].view(np.int64), weights.view(np.int64)):
        return None  # two offsets of one class weigh apart
    short = np.bincount(cls, minlength=size) < _class_sizes(R, d)
    if np.any(table[short].view(np.int64) != 0):
        return None  # an offset left out weighs 0, others of its class do not
    table.setflags(write=False)
    step.setflags(write=False)
    return step, table


def _class_sizes(R: int, d: int) -> np.ndarray:
    """The number of offsets of the cube of half-side R in each class of
    :func:`offset_classes` (0 for digits that sum beyond d)."""
    size = (d + 1) ** R
    out = np.zeros(size, dtype=np.int64)
    for c in range(size):
        counts, rest = [], c
        for _ in range(R):
            counts.append(rest % (d + 1))
            rest //= d + 1
        zeros = d - sum(counts)
        if zeros >= 0:
            ways = math.factorial(d) // math.factorial(zeros)
            for n in counts:
                ways //= math.factorial(n)
            out[c] = ways * 2 ** (d - zeros)
    return out


class OffsetPositions:
    """The position of each offset code among the sorted ``codes`` (-1 off the
    set): a table over the cube of codes when it is small, else a binary
    search of them."""

    TABLE = 1 << 22

    def __init__(self, codes: np.ndarray, R: int, d: int) -> None:
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        size = (2 * R + 1) ** d
        if size <= self.TABLE:
            self.table = np.full(size, -1, dtype=np.int64)
            self.table[self.codes] = np.arange(self.codes.size)
        else:
            self.table = np.zeros(0, np.int64)


def _none() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, np.int64), np.zeros(0, np.int64)


def chebyshev_pairs(a: np.ndarray, b: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``(i, j)`` with ``max_k |b[j, k] - a[i, k]| <= R``.

    ``a`` and ``b`` are non-negative integer coordinate rows (n, d) and (m, d);
    each pair appears once, in no particular order. Memory: the cells, the
    table of the larger side and the pairs found.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.shape[0] == 0 or b.shape[0] == 0:
        return _none()
    if a is b:
        i, j = chebyshev_half_pairs(a, R)
        own = np.arange(a.shape[0], dtype=np.int64)
        return np.concatenate((i, j, own)), np.concatenate((j, i, own))
    if a.shape[0] > b.shape[0]:
        # the larger side is laid out, the smaller one queries it
        j, i = CellIndex(a, R, b.shape[0]).pairs(b, R)
        return i, j
    return CellIndex(b, R, a.shape[0]).pairs(a, R)


def chebyshev_half_pairs(a: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of distinct rows of ``a`` within ``R`` of each other along
    every axis, each unordered pair once (in one of its two orders, no
    ``(i, i)``): :func:`chebyshev_pairs` of ``a`` with itself is these,
    both ways, and the rows with themselves. Half the pairs to hold when a
    caller can use each one both ways."""
    a = np.asarray(a, dtype=np.int64)
    if a.shape[0] == 0:
        return _none()
    return CellIndex(a, R).half_pairs(R)


__all__ = [
    "CellIndex",
    "OffsetPositions",
    "OffsetWeights",
    "chebyshev_pairs",
    "chebyshev_half_pairs",
    "decode_keys",
    "offset_classes",
    "offset_codes",
    "codes_fit",
    "pairs_cheaper",
    "walk_wanted",
    "forced",
]
