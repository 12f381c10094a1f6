"""Compiled kernels of :mod:`dpdbscan.cells.pairs`: a table of buckets over
cell coordinates, and the joins that walk it.

Imported only inside the functions of ``pairs.py`` that need them (numba's
import and first call cost about 0.4 s, which a 2-D fit must not pay).

The cells are laid out in the order of their table entry: the entry of a
cell is a mixed-radix number over the bucketed axes, its bucket
``c[axes[t]] // sides[t]`` along each, with the sweep axis last (stride 1).
``start[t]`` is the first position of entry t (``start[-1]`` is n), so the
cells of one bucket of the other axes whose sweep buckets lie in ``[lo,
hi]`` are the one run of positions ``start[base + lo] : start[base + hi +
1]``. A query cell reads the runs of the buckets that meet its box of
half-side R (``low[t, x]``, ``high[t, x]``: the first and last bucket along
axis ``axes[t]`` that the box around coordinate x meets) and checks every
cell in them on all axes at once, on packed lanes (:func:`within`); the
axes without buckets ("free") are checked the same way. Everything here
reads coordinates of public cells (released or core) only.

Packed lanes: every cell's coordinates in one uint64, ``bits`` per axis and
coordinates below ``h = 2^(bits - 2)``, so the per-axis checks of a pair are
a few integer operations on two words (no borrow crosses a lane: every lane
stays within [0, 2^bits)). ``lanes = (H, base, upper, lower)``: with y =
``qp + base - pk[q]`` (a - b + h per lane, in [1, 2h - 1]), y + upper has a
lane's top bit set iff a - b > R, y + lower has it clear iff a - b < -R.
"""

from __future__ import annotations

import numpy as np

from .._jit import find_root, flatten_roots, inlined, kernel, link_roots


@kernel
def bucket_layout(
    coords: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    low_of: np.ndarray,
    strides: np.ndarray,
    size: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(start, order, laid, col)``: a counting sort of the rows of
    ``coords`` by table entry (stable: rows of one entry keep their order),
    the rows in that order (``laid[p] = coords[order[p]]``, moved as they
    are sorted) and the entry of each laid-out row but its last digit (the
    sweep axis', stride 1): the base of its bucket over the other axes.
    ``low_of[t, x]``: the bucket of coordinate x along ``axes[t]`` (x //
    ``sides[t]`` beyond the table)."""
    n, d = coords.shape
    entry = np.empty(n, np.int64)
    sweep = np.empty(n, np.int64)
    start = np.zeros(size + 1, np.int64)
    tabled = low_of.shape[1]
    for i in range(n):
        t = 0
        b = 0
        for a in range(axes.size):
            x = coords[i, axes[a]]
            b = low_of[a, x] if x < tabled else x // sides[a]
            t += b * strides[a]
        entry[i] = t
        sweep[i] = b  # (the last axis: stride 1)
        start[t + 1] += 1
    for t in range(size):
        start[t + 1] += start[t]
    fill = start[:size].copy()
    order = np.empty(n, np.int64)
    laid = np.empty((n, d), np.int64)
    col = np.empty(n, np.int64)
    for i in range(n):
        t = entry[i]
        p = fill[t]
        order[p] = i
        col[p] = t - sweep[i]
        for k in range(d):
            laid[p, k] = coords[i, k]
        fill[t] = p + 1
    return start, order, laid, col


@kernel
def packed_layout(
    packed: np.ndarray,
    d: int,
    bits: int,
    axes: np.ndarray,
    sides: np.ndarray,
    low_of: np.ndarray,
    strides: np.ndarray,
    size: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(start, order, col, laid)``: :func:`bucket_layout`'s counting sort of
    cells given by their packed lanes (``bits`` per axis, the first axis
    lowest: :func:`packed_lanes`), the lanes laid out in place of the
    coordinates: one uint64 read and written per cell where the
    coordinates took d int64 (6-D: 22 MB of new pages a fit, about half
    the layout's time). The same ``start``, ``order`` and ``col``."""
    n = packed.size
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)
    entry = np.empty(n, np.int64)
    start = np.zeros(size + 1, np.int64)
    tabled = low_of.shape[1]
    last = axes.size - 1
    for i in range(n):
        v = packed[i]
        t = 0
        for a in range(axes.size):
            x = np.int64((v >> np.uint64(bits * axes[a])) & mask)
            b = low_of[a, x] if x < tabled else x // sides[a]
            t += b * strides[a]
        entry[i] = t
        start[t + 1] += 1
    for t in range(size):
        start[t + 1] += start[t]
    fill = start[:size].copy()
    order = np.empty(n, np.int64)
    col = np.empty(n, np.int64)
    laid = np.empty(n, np.uint64)
    for i in range(n):
        t = entry[i]
        p = fill[t]
        v = packed[i]
        order[p] = i
        x = np.int64((v >> np.uint64(bits * axes[last])) & mask)
        col[p] = t - (low_of[last, x] if x < tabled else x // sides[last])  # (the sweep digit: stride 1)
        laid[p] = v
        fill[t] = p + 1
    return start, order, col, laid


@kernel
def packed_keys(keys: np.ndarray, strides: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``(packed, top)``: :func:`packed_lanes` of the coordinates of int64 cell
    keys (:func:`decode_keys`' quotients, not held as rows: n uint64 where
    the rows take n x d int64) and the largest coordinate of each axis
    (the keys non-empty)."""
    n, d = keys.size, strides.size
    inv = 1.0 / strides.astype(np.float64)
    out = np.empty(n, np.uint64)
    top = np.zeros(d, np.int64)
    for i in range(n):
        rem = keys[i]
        v = np.uint64(0)
        for k in range(d - 1):
            m = strides[k]
            if rem < 1 << 51:
                q = np.int64(rem * inv[k])
                r = rem - q * m
                if r < 0:
                    q -= 1
                    r += m
                elif r >= m:
                    q += 1
                    r -= m
            else:
                q = rem // m
                r = rem - q * m
            v |= np.uint64(q) << np.uint64(bits * k)
            if q > top[k]:
                top[k] = q
            rem = r
        v |= np.uint64(rem) << np.uint64(bits * (d - 1))
        if rem > top[d - 1]:
            top[d - 1] = rem
        out[i] = v
    return out, top


@kernel
def unpacked_lanes(packed: np.ndarray, d: int, bits: int) -> np.ndarray:
    """The coordinates of :func:`packed_lanes` rows (``bits`` per axis, the
    first axis lowest)."""
    n = packed.size
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)
    out = np.empty((n, d), np.int64)
    for i in range(n):
        v = packed[i]
        for k in range(d):
            out[i, k] = np.int64(v & mask)
            v >>= np.uint64(bits)
    return out


@kernel
def decode_keys(keys: np.ndarray, strides: np.ndarray) -> np.ndarray:
    """Coordinates of int64 cell keys ``sum_k c_k strides[k]`` (0 <= c_k,
    strides decreasing, the last 1). Below 2^51 a quotient is a float
    product and one correction (an integer division by a number known only
    at run time costs tens of cycles; six per key in 6-D)."""
    n, d = keys.size, strides.size
    inv = 1.0 / strides.astype(np.float64)
    out = np.empty((n, d), np.int64)
    for i in range(n):
        rem = keys[i]
        for k in range(d - 1):
            m = strides[k]
            if rem < 1 << 51:
                q = np.int64(rem * inv[k])
                r = rem - q * m
                if r < 0:
                    q -= 1
                    r += m
                elif r >= m:
                    q += 1
                    r -= m
            else:
                q = rem // m
                r = rem - q * m
            out[i, k] = q
            rem = r
        out[i, d - 1] = rem
    return out


@kernel
def column_max(coords: np.ndarray) -> np.ndarray:
    """The largest value of each column of ``coords`` (n >= 1 rows): one
    pass over the rows (numpy's reduction along axis 0 of a narrow int64
    array strides through it once per column)."""
    n, d = coords.shape
    top = coords[0].copy()
    for i in range(1, n):
        for k in range(d):
            if coords[i, k] > top[k]:
                top[k] = coords[i, k]
    return top


@kernel
def packed_lanes(coords: np.ndarray, bits: int) -> np.ndarray:
    """Each row's coordinates in one uint64, ``bits`` per axis, the first
    axis lowest (non-negative coordinates below 2^bits)."""
    n, d = coords.shape
    out = np.empty(n, np.uint64)
    for i in range(n):
        v = np.uint64(0)
        for k in range(d - 1, -1, -1):
            v = (v << np.uint64(bits)) | np.uint64(coords[i, k])
        out[i] = v
    return out


@kernel
def code_classes(codes: np.ndarray, step: np.ndarray, base: int, d: int) -> np.ndarray:
    """The class ``sum_k step[|o_k|]`` of each offset code (mixed radix
    ``base = 2R + 1`` of ``o_k + R``, the first axis the highest digit)."""
    R = base // 2
    out = np.empty(codes.size, np.int64)
    for i in range(codes.size):
        rest = codes[i]
        c = 0
        for _k in range(d):
            a = rest % base - R
            rest //= base
            c += step[a if a >= 0 else -a]
        out[i] = c
    return out


@kernel
def linear_codes(coords: np.ndarray, base: int) -> np.ndarray:
    """sum_k c_k base^(d - 1 - k) of each row, wrapping modulo 2^64."""
    n, d = coords.shape
    out = np.empty(n, np.int64)
    for i in range(n):
        v = 0
        for k in range(d):
            v = v * base + coords[i, k]
        out[i] = v
    return out


@kernel
def _box(qc, i, R, axes, sides, nb, strides, low, high, walk):
    """Sets up the walk over the buckets that the box of half-side R around
    the cell ``qc[i]`` meets: in ``walk`` (3, axes), the bucket (row 0) at
    the first and the walk's first and last bucket (rows 1, 2) per bucketed
    axis (the sweep axis last); returns the table base of the first bucket,
    or -1 when the box meets none."""
    base = 0
    for t in range(axes.size):
        x = qc[i, axes[t]]
        if 0 <= x < low.shape[1]:
            lo = low[t, x]
            hi = high[t, x]
        else:
            lo = max(x - R, 0) // sides[t]
            hi = min((x + R) // sides[t], nb[t] - 1)
        if lo > hi:
            return -1
        walk[0, t] = lo
        walk[1, t] = lo
        walk[2, t] = hi
        if t < axes.size - 1:
            base += lo * strides[t]
    return base


@kernel
def _box_lanes(qp, bits, R, axes, sides, nb, strides, low, high, walk):
    """:func:`_box` of a cell given by its packed lanes ``qp`` (``bits`` per
    axis, the first axis lowest): the same walk from the same coordinates."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)
    base = 0
    for t in range(axes.size):
        x = np.int64((qp >> np.uint64(bits * axes[t])) & mask)
        if x < low.shape[1]:
            lo = low[t, x]
            hi = high[t, x]
        else:
            lo = max(x - R, 0) // sides[t]
            hi = min((x + R) // sides[t], nb[t] - 1)
        if lo > hi:
            return -1
        walk[0, t] = lo
        walk[1, t] = lo
        walk[2, t] = hi
        if t < axes.size - 1:
            base += lo * strides[t]
    return base


@kernel
def _next(base, strides, walk, e):
    """The base of the next bucket of the walk (odometer over the e bucketed
    axes but the sweep one), or -1 after the last."""
    t = e - 1
    while t >= 0:
        if walk[0, t] < walk[2, t]:
            walk[0, t] += 1
            return base + strides[t]
        base -= (walk[0, t] - walk[1, t]) * strides[t]
        walk[0, t] = walk[1, t]
        t -= 1
    return -1


@kernel
def within(qp: np.uint64, pq: np.uint64, lanes: np.ndarray) -> bool:
    """Whether the cells packed as ``qp`` and ``pq`` are within R of each
    other along every axis (``lanes`` as in the module's docstring)."""
    y = qp + lanes[1] - pq
    return (((y + lanes[2]) & lanes[0]) == 0) & (((y + lanes[3]) & lanes[0]) == lanes[0])


@kernel
def _close(qc, i, sc, q, R):
    """:func:`within` axis by axis (coordinates too wide for the lanes)."""
    for k in range(qc.shape[1]):
        df = sc[q, k] - qc[i, k]
        if df > R or df < -R:
            return False
    return True


@kernel
def _grown(a, need):
    """``a`` with room for ``need`` entries (doubled, the old ones copied)."""
    if need <= a.size:
        return a
    out = np.empty(max(need, 2 * a.size), a.dtype)
    out[: a.size] = a
    return out


@inlined
def _hits(i, qc, qp, sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, first, buf):
    """The positions of the laid-out cells within R of ``qc[i]`` (packed ``qp``)
    along every axis, those from ``first`` on, into ``buf`` (grown as
    needed); returns ``(buf, count)``. ``walk``: scratch (3, axes).
    ``col[p]``: the table base of the laid-out cell p's bucket (its entry
    but the sweep axis' digit)."""
    e = axes.size - 1
    base = _box(qc, i, R, axes, sides, nb, strides, low, high, walk)
    got = 0
    if base < 0:
        return buf, got
    slo, shi = walk[1, e], walk[2, e] + 1
    packed = lanes.size > 0
    if first > 0:
        # the buckets laid out before the first cell's hold none of the later ones
        mine = col[first - 1]
        while 0 <= base < mine:
            base = _next(base, strides, walk, e)
    while base >= 0:
        a = max(start[base + slo], first)
        b = start[base + shi]
        if b > a:
            if got + (b - a) > buf.size:
                buf = _grown(buf, got + (b - a))
            if packed:
                for q in range(a, b):
                    buf[got] = q  # kept only if within (no branch on it)
                    got += within(qp, pk[q], lanes)
            else:
                for q in range(a, b):
                    if _close(qc, i, sc, q, R):
                        buf[got] = q
                        got += 1
        base = _next(base, strides, walk, e)
    return buf, got


@kernel
def box_pairs(
    qc: np.ndarray,
    qk: np.ndarray,
    sc: np.ndarray,
    pk: np.ndarray,
    R: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    order: np.ndarray,
    half: bool,
    p0: int,
    p1: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Every (query row, indexed row) within R of each other along every
    axis, for the query rows ``p0 : p1`` of ``qc`` (packed ``qk``) against
    the laid-out cells ``sc`` (packed ``pk``; ``sc[p]`` is the cell of row
    ``order[p]``). With ``half`` (``qc`` is ``sc`` itself), each pair of
    distinct cells once, from its earlier position, in rows."""
    walk = np.empty((3, axes.size), np.int64)
    buf = np.empty(64, np.int64)
    cap = max(16, 2 * (p1 - p0))
    oi = np.empty(cap, np.int64)
    oj = np.empty(cap, np.int64)
    n_out = 0
    for i in range(p0, p1):
        first = i + 1 if half else 0
        buf, got = _hits(
            i, qc, qk[i], sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, first, buf
        )
        if n_out + got > oi.size:
            oi = _grown(oi, n_out + got)
            oj = _grown(oj, n_out + got)
        row = order[i] if half else i
        for t in range(got):
            oi[n_out] = row
            oj[n_out] = order[buf[t]]
            n_out += 1
    return oi[:n_out].copy(), oj[:n_out].copy()


@kernel
def nearest_labels(
    qc: np.ndarray,
    qk: np.ndarray,
    sc: np.ndarray,
    pk: np.ndarray,
    R: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    labels: np.ndarray,
    centres: bool,
    lim: float,
    reach: float,
    strict: bool,
    tol: float,
    p0: int,
    p1: int,
) -> np.ndarray:
    """For the query rows ``p0 : p1``, the smallest of the ``labels`` (by
    laid-out position) of the laid-out cells nearest to the query cell's
    centre within R along every axis, or -1; each query's pairs are
    walked and dropped, none held.

    The distance, in cell widths, from the centre of cell c to cell t
    (``centres``: to t's centre) is the root of ``s = sum_k g_k^2``, g_k =
    ``max(|t_k - c_k| - 1/2, 0)`` (``|t_k - c_k|``): halves and integers, so
    ``s`` is exact in any order of additions. A cell counts when ``s <=
    lim`` and its distance is below ``reach`` (at most, unless
    ``strict``); the nearest are those within ``tol x max(best, 1)`` of
    the least distance."""
    d = qc.shape[1]
    walk = np.empty((3, axes.size), np.int64)
    buf = np.empty(64, np.int64)
    dist = np.empty(64)
    out = np.full(p1 - p0, -1, np.int64)
    for i in range(p0, p1):
        buf, got = _hits(
            i, qc, qk[i], sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, 0, buf
        )
        if got > dist.size:
            dist = np.empty(buf.size)
        best = np.inf
        for t in range(got):
            q = buf[t]
            s = 0.0
            for k in range(d):
                g = float(abs(sc[q, k] - qc[i, k]))
                if not centres:
                    g = max(g - 0.5, 0.0)
                s += g * g
            r = np.sqrt(s) if s <= lim else np.inf
            if strict and not r < reach or not strict and not r <= reach:
                r = np.inf
            dist[t] = r
            best = min(best, r)
        if best == np.inf:
            continue
        slack = tol * max(best, 1.0)
        lab = labels[buf[0]]
        first = True
        for t in range(got):
            if dist[t] < np.inf and abs(dist[t] - best) <= slack:
                v = labels[buf[t]]
                if first or v < lab:
                    lab = v
                    first = False
        out[i - p0] = lab
    return out


@kernel
def half_sums(
    sc: np.ndarray,
    pk: np.ndarray,
    lin: np.ndarray,
    vals: np.ndarray,
    R: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    table: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray,
    symmetric: bool,
    step: np.ndarray,
    classes: np.ndarray,
    p0: int,
    p1: int,
) -> np.ndarray:
    """For the laid-out cells ``p0 : p1``, each pair with a later cell q within
    R along every axis, visited once: ``w(sc[q] - sc[p]) vals[q]`` added to
    p's sum and ``w(sc[p] - sc[q]) vals[p]`` to q's; returns the sums of every
    cell (zero where nothing was added).

    ``lin[p]``: the linear code of ``sc[p]`` (base 2R + 1), so the offset code
    of a pair is ``lin[q] - lin[p]`` plus the code of the zero offset. ``w``
    of a code: ``table[code]`` when ``table`` is not empty, else its weight in
    the sorted ``codes`` (0 when absent). ``symmetric``: w(-o) = w(o) for
    every offset (:attr:`~dpdbscan.cells.pairs.OffsetWeights.symmetric`),
    so each pair looks one weight up, not two (the same weights: in 8-D at
    reach 3 the table of 7^8 codes is 46 MB and each lookup is a miss of
    the caches).

    ``classes`` (not empty): the weight of an offset is ``classes[c]``, c
    its class (:func:`_class_of`: the multiset of its ``|o_k|``), the
    same weights as the codes' where
    :func:`~dpdbscan.cells.pairs.offset_classes` found them so, from a
    table of a few hundred entries and the pair's packed lanes (``lin``,
    ``table``, ``codes`` unread).

    With packed lanes each pair is used where the walk finds it, not
    listed first (:func:`_hits` writes every cell it checks into its list
    and keeps those within: the 6-D benchmark's release, 40M cells checked
    for 0.8M pairs, a fifth of the join's time). The same pairs in the same
    order (cell p, then the later cells q by position), so the same sums
    bit for bit; a term of weight 0 is skipped (adding a zero product to a
    sum started at +0 leaves the same float). (The walk is written out in
    its branch: through an inlined helper it cost the 5-D join 5-10%.)
    That branch reads the lanes alone (each cell's box from its lanes,
    :func:`_box_lanes`; weights by class): ``sc`` may then be an empty
    array of d columns (:meth:`~dpdbscan.cells.pairs.CellIndex._walk`'s
    stand-in, no coordinates unpacked)."""
    n = pk.shape[0]
    zero = _zero_code(sc.shape[1], R)
    use_table = table.size > 0
    by_class = classes.size > 0
    sums = np.zeros(n)
    walk = np.empty((3, axes.size), np.int64)
    if lanes.size > 0:
        e = axes.size - 1
        bits = 64 // sc.shape[1]
        H, shift, upper, lower = lanes[0], lanes[1], lanes[2], lanes[3]
        for p in range(p0, p1):
            base = _box_lanes(pk[p], bits, R, axes, sides, nb, strides, low, high, walk)
            if base < 0:
                continue
            slo, shi = walk[1, e], walk[2, e] + 1
            # the buckets laid out before p's hold none of the later cells
            mine = col[p]
            while 0 <= base < mine:
                base = _next(base, strides, walk, e)
            qp = pk[p]
            y0 = qp + shift
            vp = vals[p]
            lp = lin[p] - zero if not by_class else 0
            acc = 0.0
            while base >= 0:
                for q in range(max(start[base + slo], p + 1), start[base + shi]):
                    y = y0 - pk[q]
                    # within R along every axis (:func:`within` as one test)
                    if ((y + upper) | ~(y + lower)) & H == 0:
                        if by_class:
                            wf = classes[_class_of(sc, p, qp, sc, q, pk[q], lanes, step)]
                            wb = wf
                        else:
                            code = lin[q] - lp
                            wf = table[code] if use_table else _weight(codes, weights, code)
                            if symmetric:
                                wb = wf
                            else:
                                back = 2 * zero - code
                                wb = table[back] if use_table else _weight(codes, weights, back)
                        if wf != 0.0:
                            acc += wf * vals[q]
                        if wb != 0.0:
                            sums[q] += wb * vp
                base = _next(base, strides, walk, e)
            sums[p] += acc
        return sums
    buf = np.empty(64, np.int64)
    for p in range(p0, p1):
        buf, got = _hits(
            p, sc, pk[p], sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, p + 1, buf
        )
        if got == 0:
            continue
        vp = vals[p]
        acc = 0.0
        if by_class:
            qp = pk[p]
            for t in range(got):
                q = buf[t]
                w = classes[_class_of(sc, p, qp, sc, q, pk[q], lanes, step)]
                acc += w * vals[q]
                sums[q] += w * vp
            sums[p] += acc
            continue
        lp = lin[p] - zero
        for t in range(got):
            q = buf[t]
            code = lin[q] - lp
            wf = table[code] if use_table else _weight(codes, weights, code)
            if symmetric:
                wb = wf
            else:
                back = 2 * zero - code
                wb = table[back] if use_table else _weight(codes, weights, back)
            acc += wf * vals[q]
            sums[q] += wb * vp
        sums[p] += acc
    return sums


@kernel
def query_sums(
    qc: np.ndarray,
    qk: np.ndarray,
    ql: np.ndarray,
    sc: np.ndarray,
    pk: np.ndarray,
    lin: np.ndarray,
    vals: np.ndarray,
    R: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    table: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray,
    step: np.ndarray,
    classes: np.ndarray,
    p0: int,
    p1: int,
    out: np.ndarray,
) -> None:
    """For the query rows ``p0 : p1`` of ``qc`` (packed ``qk``, linear codes
    ``ql``), ``out[i]`` = the sum over the laid-out cells q within R along
    every axis of ``w(sc[q] - qc[i]) vals[q]`` (``w`` as in
    :func:`half_sums`, also its ``classes``; nothing held per pair)."""
    zero = _zero_code(sc.shape[1], R)
    use_table = table.size > 0
    by_class = classes.size > 0
    walk = np.empty((3, axes.size), np.int64)
    buf = np.empty(64, np.int64)
    for i in range(p0, p1):
        buf, got = _hits(
            i, qc, qk[i], sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, 0, buf
        )
        lq = ql[i] - zero
        acc = 0.0
        for t in range(got):
            q = buf[t]
            if by_class:
                w = classes[_class_of(qc, i, qk[i], sc, q, pk[q], lanes, step)]
            else:
                code = lin[q] - lq
                w = table[code] if use_table else _weight(codes, weights, code)
            acc += w * vals[q]
        out[i] = acc


@kernel
def scatter_sums(
    qc: np.ndarray,
    qk: np.ndarray,
    ql: np.ndarray,
    qv: np.ndarray,
    sc: np.ndarray,
    pk: np.ndarray,
    lin: np.ndarray,
    R: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    table: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray,
    step: np.ndarray,
    classes: np.ndarray,
    p0: int,
    p1: int,
) -> np.ndarray:
    """The transpose of :func:`query_sums`: for the query rows ``p0 : p1``
    of ``qc`` (packed ``qk``, linear codes ``ql``, values ``qv``), each
    laid-out cell q within R along every axis gets ``w(qc[i] - sc[q])
    qv[i]``; returns the sums per laid-out cell (nothing held per pair).
    A few query cells (the heavy cells of a release) reach every cell
    around them at the cost of their own walks."""
    zero = _zero_code(sc.shape[1], R)
    use_table = table.size > 0
    by_class = classes.size > 0
    sums = np.zeros(pk.shape[0])
    walk = np.empty((3, axes.size), np.int64)
    buf = np.empty(64, np.int64)
    for i in range(p0, p1):
        buf, got = _hits(
            i, qc, qk[i], sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, 0, buf
        )
        lq = ql[i] + zero
        v = qv[i]
        for t in range(got):
            q = buf[t]
            if by_class:
                w = classes[_class_of(qc, i, qk[i], sc, q, pk[q], lanes, step)]
            else:
                code = lq - lin[q]
                w = table[code] if use_table else _weight(codes, weights, code)
            sums[q] += w * v
    return sums


@kernel
def _zero_code(d, R):
    """The linear code (base 2R + 1) of the zero offset in ``d`` dimensions:
    a pair's offset code is ``lin[q] - lin[p]`` plus this."""
    base = 2 * R + 1
    zero = 0
    for _k in range(d):
        zero = zero * base + R
    return zero


@kernel
def _weight(codes, weights, code):
    k = np.searchsorted(codes, code)
    if k < codes.size and codes[k] == code:
        return weights[k]
    return 0.0


@inlined
def _class_of(qc, i, qp, sc, q, pq, lanes, step):
    """The class of the offset ``sc[q] - qc[i]`` (cells packed as ``pq`` and
    ``qp``): ``sum_k step[|o_k|]``, from the packed lanes when there are
    (a lane of ``qp + base - pq`` is ``o_k + h`` negated, ``h = 2^(bits -
    2)``), else from the coordinates. The pair is within R along every
    axis, so every ``|o_k|`` indexes ``step``."""
    d = qc.shape[1]
    c = 0
    if lanes.size > 0:
        bits = 64 // d
        mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)  # (bits = 64 in 1-D)
        h = np.int64(1) << np.int64(bits - 2)
        y = qp + lanes[1] - pq
        for k in range(d):
            a = np.int64((y >> np.uint64(bits * k)) & mask) - h
            c += step[a if a >= 0 else -a]
    else:
        for k in range(d):
            a = sc[q, k] - qc[i, k]
            c += step[a if a >= 0 else -a]
    return c


@kernel
def offset_pairs(
    qc: np.ndarray,
    qk: np.ndarray,
    ql: np.ndarray,
    sc: np.ndarray,
    pk: np.ndarray,
    lin: np.ndarray,
    R: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    order: np.ndarray,
    table: np.ndarray,
    codes: np.ndarray,
    run_of: np.ndarray,
    n_keys: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qi, ri, pos)``: each query row, each indexed row at an offset of the
    set, and that offset's position in the sorted ``codes``; sorted by query
    row, then the offset's run (``run_of[pos]``), then indexed row.
    ``ql``, ``lin``: the linear codes of the query and laid-out cells.

    The position of a code: ``table[code]`` (-1 off the set) when ``table``
    is not empty, else a binary search of ``codes``."""
    m = qc.shape[0]
    zero = _zero_code(sc.shape[1], R)
    use_table = table.size > 0
    walk = np.empty((3, axes.size), np.int64)
    buf = np.empty(64, np.int64)
    cap = max(16, 2 * m)
    oq = np.empty(cap, np.int64)
    orow = np.empty(cap, np.int64)
    opos = np.empty(cap, np.int64)
    bkey = np.empty(64, np.int64)
    bpos = np.empty(64, np.int64)
    n_out = 0
    for i in range(m):
        buf, got = _hits(
            i, qc, qk[i], sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, 0, buf
        )
        if got == 0:
            continue
        if got > bkey.size:
            bkey = _grown(bkey, got)
            bpos = _grown(bpos, got)
        lq = ql[i] - zero
        kept = 0
        for t in range(got):
            q = buf[t]
            code = lin[q] - lq
            if use_table:
                pos = table[code]
            else:
                pos = np.searchsorted(codes, code)
                if pos >= codes.size or codes[pos] != code:
                    pos = -1
            if pos < 0:
                continue
            bkey[kept] = run_of[pos] * n_keys + order[q]
            bpos[kept] = pos
            kept += 1
        if kept == 0:
            continue
        srt = np.argsort(bkey[:kept])
        if n_out + kept > oq.size:
            oq = _grown(oq, n_out + kept)
            orow = _grown(orow, n_out + kept)
            opos = _grown(opos, n_out + kept)
        for t in range(kept):
            s = srt[t]
            oq[n_out] = i
            orow[n_out] = bkey[s] % n_keys
            opos[n_out] = bpos[s]
            n_out += 1
    return oq[:n_out].copy(), orow[:n_out].copy(), opos[:n_out].copy()


@kernel
def half_roots(
    sc: np.ndarray,
    pk: np.ndarray,
    lin: np.ndarray,
    R: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    table: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray,
    parent: np.ndarray,
) -> np.ndarray:
    """The root (a laid-out position) of each laid-out cell's component in
    the graph joining two cells within R along every axis whose offset has a
    weight > 0 (``lin``, ``table``, ``codes``, ``weights`` as in
    :func:`half_sums`): a union-find over the pairs, each visited once and
    never held, so the memory is the cells' whatever the pairs.

    ``parent`` (changed in place and returned): a union-find forest of the
    positions to start from, whose trees join cells already known to be in
    one component (each a root at its least member). A pair whose ends are
    already in one tree is skipped before its offset is looked up (a binary
    search when the offsets are many): in a dense cluster nearly all are."""
    n = sc.shape[0]
    zero = _zero_code(sc.shape[1], R)
    use_table = table.size > 0
    walk = np.empty((3, axes.size), np.int64)
    buf = np.empty(64, np.int64)
    for p in range(n):
        buf, got = _hits(
            p, sc, pk[p], sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, p + 1, buf
        )
        if got == 0:
            continue
        lp = lin[p] - zero
        rp = find_root(parent, p)
        for t in range(got):
            q = buf[t]
            rq = find_root(parent, q)
            if rq == rp:
                continue
            code = lin[q] - lp
            w = table[code] if use_table else _weight(codes, weights, code)
            if w > 0:
                link_roots(parent, rp, rq)
                rp = min(rp, rq)
    flatten_roots(parent)
    return parent


@kernel
def half_edges(
    sc: np.ndarray,
    pk: np.ndarray,
    lin: np.ndarray,
    R: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    table: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray,
    order: np.ndarray,
    most: int,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(i, j, complete)``: the pairs of distinct laid-out cells within R
    along every axis whose offset has a weight > 0 (``lin``, ``table``,
    ``codes``, ``weights`` as in :func:`half_sums`; a symmetric set), each
    once from its earlier position, in rows (``order``): those of
    :func:`box_pairs` (``half``), in its order, less the offsets off the
    set. At most ``most`` are held: past them the walk stops, ``complete``
    is False and the pairs found so far are returned."""
    n = sc.shape[0]
    zero = _zero_code(sc.shape[1], R)
    use_table = table.size > 0
    walk = np.empty((3, axes.size), np.int64)
    buf = np.empty(64, np.int64)
    cap = max(16, min(2 * n, most))
    oi = np.empty(cap, np.int64)
    oj = np.empty(cap, np.int64)
    n_out = 0
    for p in range(n):
        buf, got = _hits(
            p, sc, pk[p], sc, pk, R, lanes, axes, sides, nb, strides, start, low, high, col, walk, p + 1, buf
        )
        lp = lin[p] - zero
        for t in range(got):
            q = buf[t]
            code = lin[q] - lp
            w = table[code] if use_table else _weight(codes, weights, code)
            if not w > 0:
                continue
            if n_out == most:
                return oi[:n_out].copy(), oj[:n_out].copy(), False
            if n_out == oi.size:  # doubled, up to ``most``
                oi = _resized(oi, n_out, min(2 * n_out, most))
                oj = _resized(oj, n_out, min(2 * n_out, most))
            oi[n_out] = order[p]
            oj[n_out] = order[q]
            n_out += 1
    return oi[:n_out].copy(), oj[:n_out].copy(), True


@kernel
def _resized(a, kept, size):
    """A new array of ``size`` entries holding ``a``'s first ``kept``."""
    out = np.empty(size, a.dtype)
    out[:kept] = a[:kept]
    return out


@kernel
def block_roots(
    sc: np.ndarray,
    pk: np.ndarray,
    Rb: int,
    lanes: np.ndarray,
    axes: np.ndarray,
    sides: np.ndarray,
    nb: np.ndarray,
    strides: np.ndarray,
    start: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    col: np.ndarray,
    mstart: np.ndarray,
    coords: np.ndarray,
    lin: np.ndarray,
    R: int,
    table: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    """The root (a laid-out position) of each laid-out block's component in
    the graph of blocks joined when one of their members is joined to one of
    the other's, for blocks whose members are all joined to each other.

    The blocks are laid out as by :func:`bucket_layout` (``sc`` ... ``col``
    at reach ``Rb``: any two members within R of each other along every
    axis lie in blocks within Rb). Block p's members are the rows ``mstart[p]
    : mstart[p + 1]`` of ``coords`` (their coordinates, at the members'
    scale) and ``lin`` (their linear codes, base 2R + 1); two members are
    joined when they are within R along every axis and their offset has a
    weight > 0 (``table``, ``codes``, ``weights`` as in :func:`half_sums`).
    A pair of blocks already in one tree is skipped without reading its
    members, and the members of the others are read up to the first joined
    pair."""
    n = sc.shape[0]
    d = coords.shape[1]
    zero = _zero_code(d, R)
    use_table = table.size > 0
    parent = np.arange(n)
    walk = np.empty((3, axes.size), np.int64)
    buf = np.empty(64, np.int64)
    for p in range(n):
        buf, got = _hits(
            p, sc, pk[p], sc, pk, Rb, lanes, axes, sides, nb, strides, start, low, high, col, walk, p + 1, buf
        )
        for t in range(got):
            q = buf[t]
            rp = find_root(parent, p)
            rq = find_root(parent, q)
            if rp == rq:
                continue
            if _members_joined(mstart, coords, lin, R, zero, use_table, table, codes, weights, p, q):
                link_roots(parent, rp, rq)
    flatten_roots(parent)
    return parent


@kernel
def _members_joined(mstart, coords, lin, R, zero, use_table, table, codes, weights, p, q):
    """Whether a member of block p and one of block q are joined (within R
    along every axis and at an offset of weight > 0)."""
    d = coords.shape[1]
    for a in range(mstart[p], mstart[p + 1]):
        la = lin[a] - zero
        for c in range(mstart[q], mstart[q + 1]):
            close = True
            for k in range(d):
                df = coords[c, k] - coords[a, k]
                if df > R or df < -R:
                    close = False
                    break
            if not close:
                continue
            code = lin[c] - la
            w = table[code] if use_table else _weight(codes, weights, code)
            if w > 0:
                return True
    return False


@kernel
def mask_block_roots(
    where: np.ndarray, index: np.ndarray, steps: np.ndarray, reach: np.ndarray, masks: np.ndarray
) -> np.ndarray:
    """The components of the blocks of :func:`dpdbscan.post.merge._block_labels`:
    block i (at ``where[i]`` in the dense table ``index``, which holds each
    block's number or -1) and the block at ``where[i] + steps[t]`` are
    joined when ``reach[t, masks[i]] & masks[j] != 0``. Returns each
    block's root, the smallest block of its component (a union-find over
    the joins as they are found; a pair already joined is not tested)."""
    n = where.size
    parent = np.arange(n, dtype=np.int64)
    for i in range(n):
        wi = where[i]
        mi = masks[i]
        for t in range(steps.size):
            j = index[wi + steps[t]]
            if j < 0:
                continue
            a = find_root(parent, i)
            b = find_root(parent, j)
            if a != b and (reach[t, mi] & masks[j]) != 0:
                link_roots(parent, a, b)
    flatten_roots(parent)
    return parent
