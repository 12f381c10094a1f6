"""Pairs of cells within reach, found without enumerating the offsets.

A sum over the alpha-neighbourhood NB(X) visits kappa offsets per cell, and
kappa grows as about (2 sqrt(d) + 1)^d: 609 cells in 4-D, 28,197 in 6-D and
1,278,129 in 8-D. A sparse release holds few cells within reach of each other,
so listing the pairs that do exist costs far less in high dimension.

Shifted grids: two cells whose coordinates differ by at most ``R`` along
every axis share a bucket of side ``L = 2 half`` (any ``half >= R + 1``) in
at least one of the 2^e grids shifted by 0 or ``half`` along each of e
bucketed axes (along one axis the two grids' bucket borders alternate
``half`` apart, and a gap of at most ``R`` cannot straddle two of them). A
pair is kept only in the grid whose shifts are its canonical ones (shifted
exactly along the axes where the pair straddles an unshifted border), so
every pair is listed once; a grid shifted along an axis needs only the cells
within R of an unshifted border there, and of those a cell just below the
border pairs only with one just above it (their side patterns are
complements: part of the sort key). The widest axis carries no buckets: in
the sort by (bucket, side pattern, coordinate along it) each cell's
candidates are the window within R along it, one sort and two binary
searches (of sorted needles) per grid. In high dimension, where the cells
are sparse, :func:`plan` (a public cost model) may leave more axes without
buckets (fewer grids, more candidates) and picks the bucket side; the
candidates are checked on all axes at once on packed lanes, in chunks of
bounded size. The cost is about sum over the grids of their cells, plus the
candidates, against kappa-dependent lookups per cell for the runs of
offsets (``offset_runs``); :func:`pairs_cheaper` chooses between them.

Offsets are told apart exactly by :func:`offset_codes` (an integer per
offset), so the sums over pairs can reproduce the runs' order of additions
bit for bit.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np

#: Cost of one cell in one shifted grid, in binary-search steps (bucket ids,
#: an argsort and the cross products): measured ratio, a rough guide only.
_GRID_COST = 8.0


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


#: Pairs held at once: beyond this many expected (about 1 GB of indices and
#: offsets) the runs, which hold one run's worth, are used whatever they cost.
MAX_PAIRS = 1 << 25


def pairs_cheaper(
    d: int, n_runs: int, n_query: int, n_keys: int, n_offsets: int = 0, n_cells: int = 0
) -> bool:
    """Whether the shifted grids should beat one pair of binary searches per
    run of offsets and query cell (a public cost model: sizes only).

    With ``n_offsets`` and ``n_cells`` (the universe's), the pairs expected
    if the cells were spread evenly must stay below :data:`MAX_PAIRS`, even
    when :func:`forced`: dense releases keep the runs."""
    if n_cells and n_query * n_keys * n_offsets / n_cells > MAX_PAIRS:
        return False
    if _FORCED[0] is not None:
        return _FORCED[0]
    log = max(math.log2(max(n_query + n_keys, 2)), 1.0)
    runs_cost = 2.0 * n_runs * n_query * log
    small, large = sorted((n_query, n_keys))
    if _prefilter(d, small, large):
        # the large side is first cut down to the buckets next to the small
        # side's (:func:`chebyshev_pairs`); about as many cells remain
        grid_cost = small * 3**d * 2.0 + large * log + (2**d) * 2 * small * _GRID_COST * log
    else:
        grid_cost = (2**d) * (n_query + n_keys) * _GRID_COST * log
    return grid_cost < runs_cost


def _prefilter(d: int, small: int, large: int) -> bool:
    # the small side's 3^d buckets each against the 2^d grids over both sides
    return small * 3**d * 2 < (small + large) * 2**d


def chebyshev_pairs(a: np.ndarray, b: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``(i, j)`` with ``max_k |b[j, k] - a[i, k]| <= R``.

    ``a`` and ``b`` are non-negative integer coordinate rows (n, d) and (m, d);
    each pair appears once, in no particular order. Memory: the cells, the
    pairs found and one chunk of candidates at a time.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    d = a.shape[1]
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    L = 2 * R + 2
    half = R + 1
    top = int(max(a.max(), b.max())) + half
    nb = top // L + 1
    if nb**d >= 1 << 62:
        raise ValueError("too many buckets for int64 bucket ids")
    same = a is b
    if not same and _prefilter(d, min(a.shape[0], b.shape[0]), max(a.shape[0], b.shape[0])):
        # few cells on one side: keep only the other side's cells in buckets
        # next to theirs (each pair lies in buckets at most one apart per axis)
        small_is_a = a.shape[0] <= b.shape[0]
        small, large = (a, b) if small_is_a else (b, a)
        sel = _near_buckets(small, large, L)
        i, j = _grid_pairs(small, large[sel], R)
        j = sel[j]
        return (i, j) if small_is_a else (j, i)
    return _grid_pairs(a, b, R)


def chebyshev_half_pairs(a: np.ndarray, R: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of distinct rows of ``a`` within ``R`` of each other along
    every axis, each unordered pair once (in one of its two orders, no
    ``(i, i)``): :func:`chebyshev_pairs` of ``a`` with itself is these,
    both ways, and the rows with themselves. Half the pairs to hold when a
    caller can use each one both ways."""
    a = np.asarray(a, dtype=np.int64)
    if a.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return _grid_pairs(a, a, R, mirror=False)


def _grid_pairs(
    a: np.ndarray, b: np.ndarray, R: int, half: int | None = None, mirror: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`chebyshev_pairs` over the 2^e shifted grids of buckets of side
    ``L = 2 * half`` (``half >= R + 1``) along e of the axes (:func:`plan`
    by default, which also picks e; all axes but the sweep one when ``half``
    is given).

    Along the sweep axis (the widest) there are no buckets: a sorted key
    (bucket, side pattern, sweep coordinate) gives each cell the window of
    cells within R along it. The other axes that are not bucketed (only
    when many cells are spread over many buckets: high dimension) are
    checked with the rest, on the packed lanes.
    """
    same = a is b
    d = a.shape[1]
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    top = a.max(axis=0) if same else np.maximum(a.max(axis=0), b.max(axis=0))
    extents = [int(t) + 1 for t in top]
    if half is None:
        half, e = plan(d, R, a.shape[0], None if same else b.shape[0], extents)
    else:
        e = d - 1
    if half < R + 1:
        raise ValueError("buckets of side 2 * half need half >= R + 1")
    L = 2 * half
    # the widest axis is swept; the next e widest are bucketed
    by_width = sorted(range(d), key=lambda k: (-extents[k], -k))
    sweep, axes, free = by_width[0], by_width[1 : 1 + e], by_width[1 + e :]
    nb = max((extents[k] - 1 + half) // L + 1 for k in axes) if axes else 1
    if nb**e >= (1 << 62) >> e:
        raise ValueError("too many buckets for int64 bucket ids")
    cols_a = [np.ascontiguousarray(a[:, k]) for k in range(d)]
    cols_b = cols_a if same else [np.ascontiguousarray(b[:, k]) for k in range(d)]
    near_a, high_a = _border_bits(cols_a, axes, R, L)
    near_b, high_b = (near_a, high_a) if same else _border_bits(cols_b, axes, R, L)
    lanes = _Lanes.of(a, b, R, same)
    width = extents[sweep] + 2 * R + 2  # windows never reach another bucket's keys
    out_i, out_j = [], []
    # the cells of grid g are those of g without its lowest bit that are near
    # a border along that bit's axis too: each grid filters a smaller one's
    subsets: dict[int, tuple[np.ndarray, np.ndarray]] = {0: (np.arange(a.shape[0]), np.arange(b.shape[0]))}
    for g in range(1 << e):
        low = g & -g
        if g:
            pa, pb = subsets[g ^ low]
            sa = pa[(near_a[pa] & low) != 0]
            sb = sa if same else pb[(near_b[pb] & low) != 0]
            subsets[g] = (sa, sb)
        else:
            sa, sb = subsets[0]
            sb = sa if same else sb
        if sa.size == 0 or sb.size == 0:
            continue
        shift = [half * ((g >> (e - 1 - t)) & 1) for t in range(e)]
        if same and g == 0:
            # one sort: each row takes the rows after it in the window
            A = B = sa
            ka = kb = _bucket_ids(cols_a, axes, shift, L, nb, sa)
        elif same:
            # a pair straddles a border along every shifted axis, so its cells'
            # side patterns are complements: those low along g's lowest axis
            # look for those high along it, each pair once
            pat = high_a[sa] & g
            first = (pat & low) == 0
            A, B = sa[first], sa[~first]
            ka = (_bucket_ids(cols_a, axes, shift, L, nb, A) << e) + (~pat[first] & g)
            kb = (_bucket_ids(cols_a, axes, shift, L, nb, B) << e) + pat[~first]
        else:
            A, B = sa, sb
            ka = (_bucket_ids(cols_a, axes, shift, L, nb, A) << e) + (~high_a[A] & g)
            kb = (_bucket_ids(cols_b, axes, shift, L, nb, B) << e) + (high_b[B] & g)
        if A.size == 0 or B.size == 0:
            continue
        self_join = same and g == 0
        for ia, jb in _window_pairs(ka, kb, cols_a[sweep][A], cols_b[sweep][B], R, width, self_join):
            i, j = A[ia], B[jb]
            if lanes is not None:
                keep = lanes.within(i, j)
                i, j = i[keep], j[keep]
            else:
                for k in axes + free:  # axis by axis, dropping pairs as soon as one fails
                    keep = np.abs(cols_b[k][j] - cols_a[k][i]) <= R
                    i, j = i[keep], j[keep]
            out_i.append(i)
            out_j.append(j)
    if same and mirror:
        # the self-join found each pair of distinct rows once: both orders, and (i, i)
        own = np.arange(a.shape[0], dtype=np.int64)
        out_i, out_j = out_i + out_j + [own], out_j + out_i + [own]
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_i), np.concatenate(out_j)


def _border_bits(cols: list[np.ndarray], axes: list[int], R: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, one bit per bucketed axis (bit e - 1 - t for ``axes[t]``):
    within R of an unshifted bucket border (below it by at most R, or above
    it by at most R - 1), and on its upper side (above it)."""
    e = len(axes)
    near = np.zeros(cols[0].size, dtype=np.int64)
    high = np.zeros(cols[0].size, dtype=np.int64)
    for t, k in enumerate(axes):
        r = cols[k] % L
        up = r < R
        bit = np.int64(1 << (e - 1 - t))
        near |= (up | (r >= L - R)) * bit
        high |= up * bit
    return near, high


class _Lanes:
    """Every cell's coordinates packed into one uint64, a lane of b = 64 // d
    bits per axis (coordinates below h = 2^(b - 2)), so the per-axis checks
    of a candidate pair are a few integer operations on two words (no
    borrow crosses a lane: every lane stays within [0, 2^b)).

    Within R: y = a + h - b per lane lies in [1, 2h - 1]; y + h - 1 - R has
    its top bit set iff a - b > R, y + h + R has it clear iff a - b < -R.
    """

    def __init__(self, pa: np.ndarray, pb: np.ndarray, d: int, bits: int, R: int) -> None:
        self.pa, self.pb = pa, pb
        h = 1 << (bits - 2)
        rep = sum(1 << (bits * k) for k in range(d))  # 1 in every lane
        self.H = np.uint64((1 << (bits - 1)) * rep)
        self.base = np.uint64(h * rep)
        self.upper = np.uint64((h - 1 - R) * rep)
        self.lower = np.uint64((h + R) * rep)

    @classmethod
    def of(cls, a: np.ndarray, b: np.ndarray, R: int, same: bool) -> _Lanes | None:
        d = a.shape[1]
        bits = 64 // d
        if bits < 4:
            return None
        h = 1 << (bits - 2)
        if int(max(a.max(), b.max())) >= h or R >= h:
            return None

        def pack(c: np.ndarray) -> np.ndarray:
            out = np.zeros(c.shape[0], dtype=np.uint64)
            for k in range(d):
                out |= c[:, k].astype(np.uint64) << np.uint64(bits * k)
            return out

        pa = pack(a)
        return cls(pa, pa if same else pack(b), d, bits, R)

    def within(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """|a[i] - b[j]| <= R along every axis."""
        y = self.pa[i] + self.base - self.pb[j]
        H = self.H
        return (((y + self.upper) & H) == 0) & (((y + self.lower) & H) == H)


#: Cost of one candidate pair (index arithmetic and the packed checks)
#: against one cell in one shifted grid (ids, a sort, two searches):
#: measured in 5-D and 6-D, a rough guide only.
_PAIR_COST = 0.2


def plan(d: int, R: int, n_a: int, n_b: int | None, extents: list[int]) -> tuple[int, int]:
    """``(half, e)``: half the bucket side of the shifted grids and how many
    axes carry buckets, for ``n_a`` cells against ``n_b`` (None: the
    self-join) of coordinates below ``extents`` (a public cost model: sizes
    only).

    Along a bucketed axis a cell takes part in the grids shifted along it
    only if it lies within R of an unshifted border, a fraction p = R / half
    of them, so the 2^e grids hold about n (1 + p)^e cells together. The
    candidates of a cell are the cells of its bucket (side 2 half along the
    e axes, the whole extent along the others) within R along the sweep
    axis, the ones across a border only on its other side: about
    n_a n_b / V (2 half)^e (2R + 1) (1 + p^2 / 2)^e times the extents of
    the free axes, over all grids, if the cells were spread evenly.
    """
    order = sorted(extents, reverse=True)
    vol = float(math.prod(order))
    n_other = n_a if n_b is None else n_b
    cells_n = n_a if n_b is None else n_a + n_b
    pair_scale = n_a * n_other / vol / (2 if n_b is None else 1)
    best, best_cost = (R + 1, d - 1), math.inf
    for e in range(d - 1, -1, -1):
        free = math.prod(order[1 + e :])
        for half in _halves(R, order[1] if d > 1 else 1):
            p = min(R / half, 1.0)
            span = math.prod(min(2 * half, x) for x in order[1 : 1 + e])
            cands = pair_scale * span * free * min(2 * R + 1, order[0]) * (1 + p * p / 2) ** e
            cost = cells_n * (1 + p) ** e + _PAIR_COST * cands
            if cost < best_cost:
                best, best_cost = (half, e), cost
    return best


def _halves(R: int, extent: int) -> list[int]:
    """Bucket half-sides worth trying: every one up to R + 16, then doubling
    (beyond the extent a bucket holds the whole axis)."""
    out = list(range(R + 1, R + 17))
    while out[-1] < extent:
        out.append(2 * out[-1])
    return out


def bucket_half(d: int, R: int, n: int, extent: int) -> int:
    """Half the bucket side :func:`plan` picks for a self-join of ``n`` cells
    of coordinates below ``extent`` along every axis."""
    return plan(d, R, n, None, [extent] * d)[0]


def _near_buckets(small: np.ndarray, large: np.ndarray, L: int) -> np.ndarray:
    """Rows of ``large`` whose bucket of side L is at most one bucket away,
    along every axis, from the bucket of some row of ``small``."""
    d = small.shape[1]
    nb = int(max(small.max(), large.max())) // L + 3
    steps = np.array(np.meshgrid(*([np.array([-1, 0, 1])] * d), indexing="ij")).reshape(d, -1).T
    # ids are linear in the coordinates, and the padding keeps every step inside
    own, delta = _ids(small // L + 1, nb), _ids(steps, nb)
    per = max(1, _CHUNK // delta.size)  # ids held at once: about _CHUNK
    ids = np.unique(
        np.concatenate([np.unique(own[s : s + per, None] + delta[None, :]) for s in range(0, own.size, per)])
    )
    mine = _ids(large // L + 1, nb)
    pos = np.minimum(np.searchsorted(ids, mine), ids.size - 1)
    return np.flatnonzero(ids[pos] == mine)


def _ids(c: np.ndarray, nb: int) -> np.ndarray:
    out = np.zeros(c.shape[0], dtype=np.int64)
    for k in range(c.shape[1]):
        out *= nb
        out += c[:, k]
    return out


def _bucket_ids(
    cols: list[np.ndarray], axes: list[int], shift: list[int], L: int, nb: int, rows: np.ndarray
) -> np.ndarray:
    ids = np.zeros(rows.size, dtype=np.int64)
    for t, k in enumerate(axes):
        ids *= nb
        ids += (cols[k][rows] + shift[t]) // L
    return ids


#: Candidate pairs generated at once (a few hundred MB of indices at most).
_CHUNK = 1 << 22


def _window_pairs(
    ka: np.ndarray, kb: np.ndarray, sa: np.ndarray, sb: np.ndarray, R: int, width: int, same: bool = False
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every (i, j) with ``ka[i] == kb[j]`` and ``|sa[i] - sb[j]| <= R``, in
    chunks of about :data:`_CHUNK` pairs (memory bounded whatever the
    buckets hold). With ``same`` (a and b one array): each pair with i != j
    once, in one of its two orders, and no (i, i).

    ``sa``, ``sb`` are non-negative coordinates below ``width - 2R - 1``: b
    is sorted by (id, coordinate) and each row of a takes the window of b's
    rows with its id within R along that axis. The rows of a are searched in
    sorted order (each search starts where the last ended, several times
    faster than in row order).
    """
    if ka.size == 0 or kb.size == 0:
        return
    if (int(max(ka.max(), kb.max())) + 1) * width >= 1 << 62:
        if same:
            ka = kb = np.unique(ka, return_inverse=True)[1].astype(np.int64)
        else:
            inv = np.unique(np.concatenate((ka, kb)), return_inverse=True)[1].astype(np.int64)
            ka, kb = inv[: ka.size], inv[ka.size :]
    key_b = kb * width + sb
    ob = np.argsort(key_b)
    sk = key_b[ob]
    if same:
        # the row at sorted position p takes the rows after it within R (the
        # caller mirrors them and adds (i, i))
        oa = ob
        lo = np.arange(1, sk.size + 1, dtype=np.int64)
        cnt = np.searchsorted(sk, sk + R, side="right") - lo
    else:
        key_a = ka * width + sa
        oa = np.argsort(key_a)
        na = key_a[oa]
        lo = np.searchsorted(sk, na - R, side="left")
        cnt = np.searchsorted(sk, na + R, side="right") - lo
    rows = np.flatnonzero(cnt)
    if rows.size == 0:
        return
    ends = np.cumsum(cnt[rows])
    start = 0
    while start < rows.size:
        # rows[start:stop] give at most _CHUNK pairs (or one row, if more)
        base = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, base + _CHUNK, side="right")), start + 1)
        r = rows[start:stop]
        c = cnt[r]
        i = np.repeat(oa[r], c)
        first = np.repeat(lo[r] - (np.cumsum(c) - c), c)
        j = ob[first + np.arange(i.size, dtype=np.int64)]
        yield i, j
        start = stop


__all__ = ["chebyshev_pairs", "chebyshev_half_pairs", "offset_codes", "codes_fit", "pairs_cheaper", "forced"]
