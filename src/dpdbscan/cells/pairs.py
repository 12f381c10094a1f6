"""Pairs of cells within reach, found without enumerating the offsets.

A sum over the alpha-neighbourhood NB(X) visits kappa offsets per cell, and
kappa grows as about (2 sqrt(d) + 1)^d: 609 cells in 4-D, 28,197 in 6-D and
1,278,129 in 8-D. A sparse release holds few cells within reach of each other,
so listing the pairs that do exist costs far less in high dimension.

Shifted grids: two cells whose coordinates differ by at most ``R`` along
every axis share a bucket of side ``L = 2 half`` (any ``half >= R + 1``) in
at least one of the 2^d grids shifted by 0 or ``half`` along each axis (along
one axis the two grids' bucket borders alternate ``half`` apart, and a gap of
at most ``R`` cannot straddle two of them). A pair is kept only in the grid
whose shifts are its canonical ones (shift 0 along the axes where the pair
already shares an unshifted bucket), so every pair is listed exactly once,
and a grid shifted along an axis needs only the cells within R of an
unshifted border there. Larger buckets (:func:`bucket_half`, a public cost
model) leave fewer cells near a border, which matters in high dimension;
inside a bucket the cells within R along one axis are the candidates, one
sort and two binary searches per grid, generated in chunks of bounded size.
The cost is about sum over the grids of their cells, plus the candidates,
against kappa-dependent lookups per cell for the runs of offsets
(``offset_runs``); :func:`pairs_cheaper` chooses between them.

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
    """:func:`chebyshev_pairs` over all 2^d shifted grids of buckets of side
    ``L = 2 * half`` (``half >= R + 1``; :func:`bucket_half` by default)."""
    d = a.shape[1]
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if half is None:
        half = bucket_half(d, R, a.shape[0] + (0 if a is b else b.shape[0]), int(max(a.max(), b.max())) + 1)
    if half < R + 1:
        raise ValueError("buckets of side 2 * half need half >= R + 1")
    L = 2 * half
    nb = (int(max(a.max(), b.max())) + half) // L + 1
    same = a is b
    # near[k]: the cells within R of an unshifted bucket border along axis k, the
    # only ones that can pair across it (grids shifted along k need no others)
    # as one bit per axis (bit d - 1 - k for axis k, as in g below)
    near_a = _near_border(a, R, L) @ (1 << np.arange(d - 1, -1, -1, dtype=np.int64))
    near_b = near_a if same else _near_border(b, R, L) @ (1 << np.arange(d - 1, -1, -1, dtype=np.int64))
    cols_a = [np.ascontiguousarray(a[:, k]) for k in range(d)]
    cols_b = cols_a if same else [np.ascontiguousarray(b[:, k]) for k in range(d)]
    lanes = _Lanes.of(a, b, R, L, same)
    out_i, out_j = [], []
    # the cells of grid g are those of g without its lowest bit that are near
    # a border along that bit's axis too: each grid filters a smaller one's
    # cells (in increasing row order, as a scan of every cell would give)
    subsets: dict[int, tuple[np.ndarray, np.ndarray]] = {0: (np.arange(a.shape[0]), np.arange(b.shape[0]))}
    for g in range(2**d):
        shifted = np.array([(g >> (d - 1 - k)) & 1 for k in range(d)], dtype=bool)
        if g:
            low = g & -g
            pa, pb = subsets[g ^ low]
            sa = pa[(near_a[pa] & low) != 0]
            sb = sa if same else pb[(near_b[pb] & low) != 0]
            subsets[g] = (sa, sb)
        else:
            sa, sb = subsets[0]
            sb = sa if same else sb
        if sa.size == 0 or sb.size == 0:
            continue
        shift = shifted.astype(np.int64) * half
        ids_a = _bucket_ids(a[sa], shift, L, nb)
        ids_b = ids_a if same else _bucket_ids(b[sb], shift, L, nb)
        # sweep along an unshifted axis if there is one (shifted ones are
        # crowded near the borders): only cells within R along it are candidates
        sweep = int(np.flatnonzero(~shifted)[-1]) if not shifted.all() else d - 1
        # the grid's own lanes: candidates checked by their rows in the grid
        # (small arrays), and only the pairs kept mapped back to the cells
        mine = lanes.subset(sa, sb, same) if lanes is not None else None
        for ia, ja in _bucket_pairs(ids_a, ids_b, cols_a[sweep][sa], cols_b[sweep][sb], R, same):
            if mine is not None:
                keep = mine.within(ia, ja) & mine.apart(ia, ja, shifted)
                out_i.append(sa[ia[keep]])
                out_j.append(sb[ja[keep]])
                continue
            ia, ja = sa[ia], sb[ja]
            # axis by axis, dropping pairs as soon as one axis fails
            for k in np.argsort(~shifted, kind="stable"):  # shifted axes first: they fail most
                if k == sweep:
                    continue
                ca, cb = cols_a[k][ia], cols_b[k][ja]
                keep = np.abs(cb - ca) <= R
                if shifted[k]:
                    # canonical grid: shifted exactly along the axes where the pair
                    # does not share an unshifted bucket
                    keep &= ca // L != cb // L
                ia, ja = ia[keep], ja[keep]
            if shifted[sweep]:
                keep = cols_a[sweep][ia] // L != cols_b[sweep][ja] // L
                ia, ja = ia[keep], ja[keep]
            out_i.append(ia)
            out_j.append(ja)
    if same and mirror:
        # the self-join found each pair of distinct rows once: both orders, and (i, i)
        own = np.arange(a.shape[0], dtype=np.int64)
        out_i, out_j = out_i + out_j + [own], out_j + out_i + [own]
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_i), np.concatenate(out_j)


class _Lanes:
    """Every cell's coordinates packed into one uint64, a lane of b = 64 // d
    bits per axis (coordinates below h = 2^(b - 2)), so the per-axis checks
    of a candidate pair are a few integer operations on two words (no
    borrow crosses a lane: every lane stays within [0, 2^b)).

    Within R: y = a + h - b per lane lies in [1, 2h - 1]; y + h - 1 - R has
    its top bit set iff a - b > R, y + h + R has it clear iff a - b < -R.
    Apart (canonical grids): the buckets' indices a // L, b // L differ on
    a lane iff their XOR x >= 1, iff x + 2h - 1 has its top bit set.
    """

    def __init__(self, pa, pb, qa, qb, d: int, bits: int, R: int):
        self.pa, self.pb, self.qa, self.qb = pa, pb, qa, qb
        h = 1 << (bits - 2)
        rep = sum(1 << (bits * k) for k in range(d))  # 1 in every lane
        self.top = [np.uint64((1 << (bits - 1)) << (bits * k)) for k in range(d)]
        self.H = np.uint64((1 << (bits - 1)) * rep)
        self.base = np.uint64(h * rep)
        self.upper = np.uint64((h - 1 - R) * rep)
        self.lower = np.uint64((h + R) * rep)
        self.ones = np.uint64((2 * h - 1) * rep)

    def subset(self, sa: np.ndarray, sb: np.ndarray, same: bool) -> _Lanes:
        """The lanes of rows ``sa`` of a and ``sb`` of b (the same constants)."""
        out = object.__new__(_Lanes)
        out.__dict__.update(self.__dict__)
        out.pa, out.qa = self.pa[sa], self.qa[sa]
        out.pb, out.qb = (out.pa, out.qa) if same else (self.pb[sb], self.qb[sb])
        return out

    @classmethod
    def of(cls, a: np.ndarray, b: np.ndarray, R: int, L: int, same: bool) -> _Lanes | None:
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

        pa, qa = pack(a), pack(a // L)
        pb, qb = (pa, qa) if same else (pack(b), pack(b // L))
        return cls(pa, pb, qa, qb, d, bits, R)

    def within(self, ia: np.ndarray, ja: np.ndarray) -> np.ndarray:
        """|a - b| <= R along every axis."""
        y = self.pa[ia] + self.base - self.pb[ja]
        H = self.H
        return (((y + self.upper) & H) == 0) & (((y + self.lower) & H) == H)

    def apart(self, ia: np.ndarray, ja: np.ndarray, shifted: np.ndarray) -> np.ndarray:
        """In different unshifted buckets along every shifted axis."""
        if not shifted.any():
            return np.ones(ia.size, dtype=bool)
        Hs = np.uint64(sum(int(t) for t, s in zip(self.top, shifted) if s))
        x = self.qa[ia] ^ self.qb[ja]
        return ((x + self.ones) & Hs) == Hs


#: Cost of one candidate pair of a bucket (index arithmetic and the per-axis
#: checks) against one cell in one shifted grid: measured, a rough guide only.
_PAIR_COST = 0.25


def bucket_half(d: int, R: int, n: int, extent: int) -> int:
    """Half the bucket side of the shifted grids for ``n`` cells of coordinates
    below ``extent`` (a public cost model: sizes only).

    Along an axis a cell takes part in the grids shifted along it only if it
    lies within R of an unshifted border, a fraction p = R / half of them, so
    the 2^d grids hold about n (1 + p)^d cells together: the minimal buckets
    (half = R + 1) make every grid nearly full in high dimension. Larger
    buckets cut that, but hold more cells each: the pairs of a bucket within
    R along the sweep axis are candidates, about n^2 (1 + p^2)^d (2R + 1) /
    (2 half buckets) over all grids if the cells were spread evenly.
    """
    best, best_cost = R + 1, math.inf
    for half in range(R + 1, max(R + 2, extent + 1)):
        p = min(R / half, 1.0)
        buckets = max(extent / (2 * half), 1.0) ** d
        pairs = n * n * (1 + p * p) ** d * (2 * R + 1) / (2 * half * buckets)
        cost = n * (1 + p) ** d + _PAIR_COST * pairs
        if cost < best_cost:
            best, best_cost = half, cost
    return best


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


def _near_border(c: np.ndarray, R: int, L: int) -> np.ndarray:
    """(n, d) bool: within R of a multiple of L from below or at most R - 1 above."""
    r = c % L
    return (r < R) | (r >= L - R)


def _bucket_ids(c: np.ndarray, shift: np.ndarray, L: int, nb: int) -> np.ndarray:
    ids = np.zeros(c.shape[0], dtype=np.int64)
    for k in range(c.shape[1]):
        ids *= nb
        ids += (c[:, k] + shift[k]) // L
    return ids


#: Candidate pairs generated at once (a few hundred MB of indices at most).
_CHUNK = 1 << 22


def _bucket_pairs(
    ba: np.ndarray, bb: np.ndarray, ka: np.ndarray, kb: np.ndarray, R: int, same: bool = False
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every (i, j) with ``ba[i] == bb[j]`` and ``|ka[i] - kb[j]| <= R``, in
    chunks of about :data:`_CHUNK` pairs (memory bounded whatever the
    buckets hold). With ``same`` (a and b one array): each pair with i != j
    once, in one of its two orders, and no (i, i).

    ``ka``, ``kb`` are non-negative coordinates along one axis: b is sorted
    by (bucket, coordinate) and each row of a takes the window of b's rows
    in its bucket within R along that axis.
    """
    if ba.size == 0 or bb.size == 0:
        return
    width = int(max(ka.max(), kb.max())) + 2 * R + 1  # windows never reach another bucket
    if (int(max(ba.max(), bb.max())) + 1) * width < 1 << 62:
        ra, rb = ba, bb  # bucket ids themselves: one sort fewer
    elif same:
        _, inv = np.unique(ba, return_inverse=True)
        ra = rb = inv.astype(np.int64)
    else:
        _, inv = np.unique(np.concatenate((ba, bb)), return_inverse=True)
        ra, rb = inv[: ba.size].astype(np.int64), inv[ba.size :].astype(np.int64)
    key_a = ra * width + ka
    key_b = key_a if same else rb * width + kb
    ob = np.argsort(key_b, kind="stable")
    sk = key_b[ob]
    if same:
        # a self-join lists each unordered pair once: the row at sorted
        # position p takes the rows after it in the sort within R (the
        # caller mirrors them and adds (i, i)); the needles are the keys
        # themselves, searched in sorted order (each search starts where the
        # last ended, several times faster), then put back in row order
        at = np.arange(sk.size, dtype=np.int64)
        lo = np.empty(sk.size, dtype=np.int64)
        cnt = np.empty(sk.size, dtype=np.int64)
        lo[ob] = at + 1
        cnt[ob] = np.searchsorted(sk, sk + R, side="right") - at - 1
    else:
        lo = np.searchsorted(sk, key_a - R, side="left")
        cnt = np.searchsorted(sk, key_a + R, side="right") - lo
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
        i = np.repeat(r, c)
        first = np.repeat(lo[r] - (np.cumsum(c) - c), c)
        j = ob[first + np.arange(i.size, dtype=np.int64)]
        yield i, j
        start = stop


__all__ = ["chebyshev_pairs", "chebyshev_half_pairs", "offset_codes", "codes_fit", "pairs_cheaper", "forced"]
