"""Compiled kernels of the density test from 4-D up (:data:`.cover.COMPILED_FROM_D`;
the kernels themselves take any d >= 2, and the tests run them from 3-D),
and in 3-D on large dense grids (:func:`.cover.dense_compiled`): the box
cover's corners (:func:`table_bounds`), the exact sums' gathers
(:func:`gather_unpadded`) and the sums read by runs of offsets that spare
most of those gathers (:func:`ball_runs`).

:func:`streamed_cover`, the box cover of :mod:`.cover`: per slab i (the
cells sharing their first coordinate) that holds a candidate, the tables
A_r (r = 1..R), the summed-area tables over the other d - 1 axes (padded,
a zero row first on each) of the positive parts of the 2r + 1 slabs around
slab i. A box of half-width h0 >= 1 along the first axis and h along the
others is 2^(d-1) corners of A_{h0}; the boxes with h0 = 0 (the cross
boxes of radius 1, three cells each) are summed cell by cell. Each
candidate reads the boxes of the cheapest bound first and stops at the
first bound below the threshold (the staged bound of :func:`.cover.cover_sums`).

The tables are streamed plane by plane along the second axis: plane a of
A_r is plane a - 1 plus the prefix over the remaining axes of the values
of plane a of the 2r + 1 slabs (scattered from the sorted keys, one
contiguous run per slab and plane), and the candidates of plane a - R are
answered as soon as plane a is built (no box reaches further). So a part
holds R rings of 2R + 2 planes (4-D benchmark: 250 KB, in cache), not
slabs, and the slabs are independent: two threads take half of the busy
slabs each with their own tables.

(Tried before, in 4-D: a ring of 2R + 1 slab tables and their sums A_r,
each built in whole-slab passes, 0.13-0.15 s of CPU per fit against 0.08 s
streamed, the passes bound by memory traffic; and the full d-dimensional
prefix P_j of the slabs up to j, whose queries read twice the corners,
0.18-0.21 s. The streamed loops run over slices: LLVM vectorizes those,
not the same loops on flat indices, 0.45 against 1.85 ns per cell.)

:func:`staged_reach`, the upper bound of :func:`.weightedsums.may_reach`:
per cell, the offsets in stages, the heaviest first, each term with the
largest or smallest weight by the sign of the value, and room for
rounding; after each stage but the last, the rest bounded by its largest
weight times the positive parts left in the box around the cell
(:func:`positive_box_sums`), which drops most cells that hold noise alone
after a sixth of the reads (4-D, two sub-cells: 89 of 609 offsets).

:func:`run_sums`, the sparse weighted sums of :mod:`.weightedsums`: per
query, per run of offsets (one key interval), the released cells inside
it, found in the rows of a row index (or by bisection), added in the
order the numpy runs add them, so the sums are the same bit for bit.

Imported only inside the functions that call it (numba's import and first
dispatch; a 2-D fit never comes here).
"""

from __future__ import annotations

import math

import numpy as np

from ...._jit import inlined, kernel, lower_bound


@kernel
def _div(x, m, inv):
    """x // m for 0 <= x < 2^51 and m > 0 by a float product (inv = 1 / m)
    and one correction: an integer division by a number known only at run
    time costs tens of cycles, and the keys are decoded per cell."""
    q = np.int64(x * inv)
    r = x - q * m
    if r < 0:
        q -= 1
    elif r >= m:
        q += 1
    return q


@kernel
def _plane_prefix(Z, cur, old, qrow, pdims, pstrides, d):
    """``cur = old + prefix(Z)`` over the plane's axes 2..d-1, and ``Z``
    zeroed: a summed-area table one plane further along axis 1. First the
    prefix over axes 3..d-1 inside each block of axis 2 (the last axis per
    row, then each other as one flat pass), then along axis 2 by a running
    row ``qrow``, added to the plane before in the same loop (over slices:
    see the module)."""
    size = Z.size
    if d >= 4:
        n = pdims[d - 1]
        for b in range(0, size, n):
            row = Z[b : b + n]
            for t in range(1, n):
                row[t] += row[t - 1]
        for a in range(d - 2, 2, -1):
            st = pstrides[a]
            block = pdims[a] * st
            for b in range(0, size, block):
                dst = Z[b + st : b + block]
                src = Z[b : b + block - st]
                for t in range(block - st):
                    dst[t] += src[t]
    sub = qrow.size
    for t in range(sub):
        qrow[t] = 0
    for b in range(0, size, sub):
        z = Z[b : b + sub]
        c = cur[b : b + sub]
        o = old[b : b + sub]
        for t in range(sub):
            v = qrow[t] + z[t]
            qrow[t] = v
            c[t] = o[t] + v
            z[t] = 0


@kernel
def _direct_box(dense, keys, vals, lo, hi, shape, key_strides, key, x, h):
    """The positive mass of the box of half-widths ``h`` (``h[0] == 0``)
    around the cell of ``key`` (coordinates ``x``), cell by cell: the cross
    boxes of radius 1, three cells each, which would otherwise take a table
    of their own. Cells off the grid read 0; sparse keys are looked up in
    ``keys[lo:hi]``."""
    d = shape.size
    n = 1
    for a in range(1, d):
        n *= 2 * h[a] + 1
    tot = 0.0
    for c in range(n):
        rem = c
        delta = 0  # key offset (sparse)
        flat = 0  # row-major index (dense)
        step = 1
        inside = True
        for a in range(d - 1, 0, -1):
            w = 2 * h[a] + 1
            o = rem % w - h[a]
            rem //= w
            y = x[a] + o
            if y < 0 or y >= shape[a]:
                inside = False
            delta += o * key_strides[a]
            flat += y * step
            step *= shape[a]
        if not inside:
            continue
        if dense:
            v = vals[flat + x[0] * step]
        else:
            p = lower_bound(keys, lo, hi, key + delta)
            if p >= hi or keys[p] != key + delta:
                continue
            v = vals[p]
        if v > 0:
            tot += v
    return tot


#: Remainders of a key below axis 1 up to which :func:`streamed_cover`
#: decodes candidates by a table (4-D benchmark: 4,761 of them)
_MAX_REST_TABLE = 1 << 20


@kernel
def streamed_cover(
    dense: bool,
    keys: np.ndarray,
    vals: np.ndarray,
    shape: np.ndarray,
    key_strides: np.ndarray,
    R: int,
    cand: np.ndarray,
    own: np.ndarray,
    box_h: np.ndarray,
    coef: np.ndarray,
    c0: np.ndarray,
    slack: np.ndarray,
    thr: float,
    Z: np.ndarray,
    T: np.ndarray,
    qrow: np.ndarray,
    first: int,
    stop: int,
    out: np.ndarray,
) -> None:
    """The staged bound at each sorted candidate key of the slabs ``first``
    to ``stop - 1`` (see the module), into ``out`` (the others are left as
    they are: a part of the slabs per thread, each with its own work tables).

    ``box_h[b]``: box b's half-width along each axis; stage s bounds by
    ``c0[s] * own + sum_b coef[s, b] * box_b``, then ``* (1 + 1e-12) +
    slack[s]``, and the next stage runs only where it reaches ``thr``.
    Work tables of the table's dtype (int32 sums are exact; their corners
    add in int64): ``Z`` (R planes), ``T`` (R rings of 2R + 2 planes),
    ``qrow`` (a block of axis 2).
    """
    d = shape.size
    L = 2 * R + 2
    pdims = np.ones(d, np.int64)
    for a in range(1, d):
        pdims[a] = shape[a] + 2 * R + 1
    pstrides = np.zeros(d, np.int64)
    size = 1
    for a in range(d - 1, 1, -1):
        pstrides[a] = size
        size *= pdims[a]
    inv = 1.0 / key_strides
    ks0 = key_strides[0]
    ks1 = key_strides[1]
    nbox = box_h.shape[0]
    nst = c0.size
    # each box's 2^(d-2) corners in a plane, and their signs (a lower
    # corner, at -h - 1, flips the sign)
    ncorner = 1 << (d - 2)
    csign = np.empty(ncorner, np.int64)
    cdelta = np.empty((nbox, ncorner), np.int64)
    for c in range(ncorner):
        sg = 1
        for a in range(2, d):
            if (c >> (a - 2)) & 1 == 0:
                sg = -sg
        csign[c] = sg
        for b in range(nbox):
            t = 0
            for a in range(2, d):
                if (c >> (a - 2)) & 1:
                    t += box_h[b, a] * pstrides[a]
                else:
                    t -= (box_h[b, a] + 1) * pstrides[a]
            cdelta[b, c] = t
    # per stage, the boxes it weighs (nonzero coefficients)
    active = np.zeros((nst, nbox), np.int64)
    n_active = np.zeros(nst, np.int64)
    for s in range(nst):
        for b in range(nbox):
            if coef[s, b] != 0.0:
                active[s, n_active[s]] = b
                n_active[s] += 1
    # where each released value lands in a plane (its coordinates on axes
    # 2..), its positive part, and (sparse) the first key of each row of
    # the key space along axes 0 and 1 (row j * radix_1 + x_1)
    radix1 = ks0 // ks1
    if dense:
        n_plane = 1
        for a in range(2, d):
            n_plane *= shape[a]
        spot = np.empty(n_plane, np.int64)
        for t in range(n_plane):
            rem = t
            idx = 0
            for a in range(d - 1, 1, -1):
                nxt = rem // shape[a]
                idx += (rem - nxt * shape[a] + R + 1) * pstrides[a]
                rem = nxt
            spot[t] = idx
        klo = 0
        khi = 0
        pos = vals[:0]
        row0 = 0
        rows = np.zeros(1, np.int64)
    else:
        n_plane = 0
        j0 = max(first - R, 0)
        klo = lower_bound(keys, 0, keys.size, j0 * ks0)
        khi = lower_bound(keys, klo, keys.size, (stop + R) * ks0)
        spot = np.empty(khi - klo, np.int64)
        pos = np.empty(khi - klo, vals.dtype)
        for p in range(klo, khi):
            rem = keys[p] - _div(keys[p], ks1, inv[1]) * ks1
            idx = 0
            for a in range(2, d):
                x = _div(rem, key_strides[a], inv[a])
                rem -= x * key_strides[a]
                idx += (x + R + 1) * pstrides[a]
            spot[p - klo] = idx
            pos[p - klo] = vals[p] if vals[p] > 0 else 0
        row0 = j0 * radix1
        n_rows = (stop + R - j0) * radix1
        rows = np.empty(n_rows + 1, np.int64)
        p = klo
        for r in range(n_rows + 1):
            bound = (row0 + r) * ks1
            while p < khi and keys[p] < bound:
                p += 1
            rows[r] = p - klo
    Tf = T.reshape(-1)
    ring = np.empty(2 * R + 2, np.int64)  # the slot of plane cp + k at k + R + 1
    # per box, the flat offsets (from a candidate's in-plane index) of the
    # corners it adds and of those it subtracts, for the current plane
    plus = np.zeros((nbox, ncorner), np.int64)
    minus = np.zeros((nbox, ncorner), np.int64)
    # a candidate's in-plane index from its key's remainder below axis 1,
    # by one table lookup where the table is small (-1: off the grid)
    n_rest = ks1 if ks1 <= _MAX_REST_TABLE else 0
    rest = np.empty(n_rest, np.int64)
    for t in range(n_rest):
        rem = t
        idx = 0
        for a in range(2, d):
            x = rem // key_strides[a]
            rem -= x * key_strides[a]
            idx += (x + R + 1) * pstrides[a]
            if x >= shape[a]:
                idx = -1
                break
        rest[t] = idx
    xs = np.zeros(d, np.int64)
    box = np.empty(nbox)
    stamp = np.full(nbox, -1, np.int64)
    q = lower_bound(cand, 0, cand.size, first * ks0)
    for i in range(first, stop):
        top = (i + 1) * ks0
        if q >= cand.size or cand[q] >= top:
            continue  # no candidate in slab i
        qend = lower_bound(cand, q, cand.size, top)
        x_last = _div(cand[qend - 1] - i * ks0, ks1, inv[1])
        if x_last >= shape[1]:
            x_last = shape[1] - 1
        last = x_last + 2 * R + 1  # the plane whose table completes the last box
        # A_r (r = 1..R): the summed-area table of the 2r + 1 slabs around
        # slab i, plane by plane along axis 1 (ring slot: plane % L)
        slot = 0
        prev = L - 1
        for pa in range(last + 1):
            if pa == 0:
                for r in range(R):
                    T[r, slot, :] = 0
            elif 0 <= pa - R - 1 < shape[1]:
                x1 = pa - R - 1
                for r in range(1, R + 1):
                    zr = Z[r - 1]
                    for j in range(max(i - r, 0), min(i + r + 1, shape[0])):
                        if dense:
                            start = (j * shape[1] + x1) * n_plane
                            for t in range(n_plane):
                                v = vals[start + t]
                                if v > 0:
                                    zr[spot[t]] += v
                        else:
                            row = j * radix1 + x1 - row0
                            for p in range(rows[row], rows[row + 1]):
                                zr[spot[p]] += pos[p]
                    _plane_prefix(zr, T[r - 1, slot], T[r - 1, prev], qrow, pdims, pstrides, d)
            else:
                for r in range(R):
                    T[r, slot, :] = T[r, prev, :]
            prev = slot
            slot = slot + 1 if slot + 1 < L else 0
            # the candidates of plane pa - R: every box they read is built
            xc = pa - 2 * R - 1
            if xc < 0:
                continue
            lim = i * ks0 + (xc + 1) * ks1
            if q >= qend or cand[q] >= lim:
                continue
            # ring slots of the planes around the candidates' own (plane pa - R)
            for k in range(2 * R + 2):
                ring[k] = (pa - 2 * R - 1 + k) % L
            for b in range(nbox):
                h0 = box_h[b, 0]
                if h0 > 0:
                    hi = ((h0 - 1) * L + ring[R + 1 + box_h[b, 1]]) * size
                    lo = ((h0 - 1) * L + ring[R - box_h[b, 1]]) * size
                    n_plus = 0
                    n_minus = 0
                    for c in range(ncorner):
                        if csign[c] > 0:
                            plus[b, n_plus] = hi + cdelta[b, c]
                            minus[b, n_minus] = lo + cdelta[b, c]
                        else:
                            minus[b, n_minus] = hi + cdelta[b, c]
                            plus[b, n_plus] = lo + cdelta[b, c]
                        n_plus += 1
                        n_minus += 1
            while q < qend and cand[q] < lim:
                r_in = cand[q] - i * ks0 - xc * ks1
                if n_rest:
                    base = rest[r_in]
                else:
                    base = 0
                    rem = r_in
                    for a in range(2, d):
                        x = _div(rem, key_strides[a], inv[a])
                        rem -= x * key_strides[a]
                        base += (x + R + 1) * pstrides[a]
                        if x >= shape[a]:
                            base = -1
                            break
                if base < 0:  # no cell of the grid: no bound (numpy would raise)
                    q += 1
                    continue
                mine = own[q] if own[q] > 0 else 0.0
                for s in range(nst):
                    acc = c0[s] * mine
                    for u in range(n_active[s]):
                        b = active[s, u]
                        if stamp[b] != q:
                            if box_h[b, 0] == 0:
                                xs[0] = i
                                xs[1] = xc
                                rem = r_in
                                for a in range(2, d):
                                    xs[a] = _div(rem, key_strides[a], inv[a])
                                    rem -= xs[a] * key_strides[a]
                                box[b] = _direct_box(
                                    dense, keys, vals, klo, khi, shape, key_strides, cand[q], xs, box_h[b]
                                )
                            else:
                                pb = plus[b]
                                mb = minus[b]
                                tot = Tf[base + pb[0]] - Tf[base + mb[0]]
                                for c in range(1, ncorner):
                                    tot += Tf[base + pb[c]] - Tf[base + mb[c]]
                                box[b] = tot
                            stamp[b] = q
                        acc += coef[s, b] * box[b]
                    val = acc * (1 + 1e-12) + slack[s]
                    out[q] = val
                    if val < thr:
                        break
                q += 1
        q = qend  # (keys beyond the grid on axis 1 keep no bound)


@kernel
def row_index(keys: np.ndarray, row_stride: int, n_rows: int) -> np.ndarray:
    """``starts[r]``: the first of the sorted ``keys`` in row r (key //
    row_stride), r = 0..n_rows (the last is keys.size)."""
    starts = np.empty(n_rows + 1, np.int64)
    p = 0
    for r in range(n_rows + 1):
        bound = r * row_stride
        while p < keys.size and keys[p] < bound:
            p += 1
        starts[r] = p
    return starts


@kernel
def run_sums(
    rkeys: np.ndarray,
    rvals: np.ndarray,
    query: np.ndarray,
    run_delta: np.ndarray,
    run_lo: np.ndarray,
    run_hi: np.ndarray,
    run_first: np.ndarray,
    cols: np.ndarray,
    Wt: np.ndarray,
    row_stride: int,
    starts: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[i] = sum over runs j (in order) of sum over the released keys k
    in [query[i] + run_delta[j] + run_lo[j], ... + run_hi[j]] (in key order)
    of Wt[cols[run_first[j] + t]] * rvals[k]``, t = k - query[i] - run_delta[j]
    - run_lo[j]; each run's sum from 0 and added only when it holds a key
    (the numpy runs' order). ``starts``: :func:`row_index` of the keys, or
    empty to bisect."""
    n_pos = Wt.shape[1]
    acc = np.empty(n_pos)
    n_rows = starts.size - 1
    inv = 1.0 / row_stride
    for i in range(query.size):
        for r in range(n_pos):
            out[i, r] = 0.0
        for j in range(run_delta.size):
            a = query[i] + run_delta[j] + run_lo[j]
            b = query[i] + run_delta[j] + run_hi[j]
            if n_rows >= 0:
                ra = _div(a, row_stride, inv) if a >= 0 else 0
                if ra > n_rows:
                    ra = n_rows
                p = starts[ra]
                while p < rkeys.size and rkeys[p] < a:
                    p += 1
            else:
                p = lower_bound(rkeys, 0, rkeys.size, a)
            if p >= rkeys.size or rkeys[p] > b:
                continue
            for r in range(n_pos):
                acc[r] = 0.0
            while p < rkeys.size and rkeys[p] <= b:
                c = cols[run_first[j] + (rkeys[p] - a)]
                v = rvals[p]
                for r in range(n_pos):
                    acc[r] += Wt[c, r] * v
                p += 1
            for r in range(n_pos):
                out[i, r] += acc[r]


@kernel
def positive_box_sums(
    flat: np.ndarray, dims: np.ndarray, R: int, scale: float, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Per entry of the padded array ``flat`` (row-major, ``dims``), the sum
    over the box of half-width ``R`` around it (clipped to the array) of
    ``ceil(scale * max(x, 0))``: integers, exact in float64 while below
    2^53 (the caller checks that they are), and at least ``scale`` times
    the positive parts. One running-window pass per axis: the last axis
    cell by cell, the others over rows of the later axes (slices: LLVM
    vectorizes those). ``a`` and ``b``: two arrays of ``flat``'s size to
    work in (float32 where every sum stays below 2^24, which halves the
    memory traffic), one of which is returned."""
    n = flat.size
    m = dims[dims.size - 1]
    reach = min(R, m - 1)
    q = np.empty(m, np.float64)
    for o in range(0, n, m):
        for i in range(m):
            q[i] = math.ceil(max(flat[o + i], 0.0) * scale)
        acc = 0.0
        for t in range(reach + 1):
            acc += q[t]
        a[o] = acc
        for i in range(1, m):
            if i + R < m:
                acc += q[i + R]
            if i - R - 1 >= 0:
                acc -= q[i - R - 1]
            a[o + i] = acc
    inner = m
    for ax in range(dims.size - 2, -1, -1):
        m = dims[ax]
        span = m * inner
        for o in range(0, n, span):
            first = b[o : o + inner]
            first[:] = 0.0
            for t in range(min(R, m - 1) + 1):
                first += a[o + t * inner : o + (t + 1) * inner]
            for i in range(1, m):
                row = b[o + i * inner : o + (i + 1) * inner]
                row[:] = b[o + (i - 1) * inner : o + i * inner]
                if i + R < m:
                    row += a[o + (i + R) * inner : o + (i + R + 1) * inner]
                if i - R - 1 >= 0:
                    row -= a[o + (i - R - 1) * inner : o + (i - R) * inner]
        a, b = b, a
        inner = span
    return a


@kernel
def staged_reach(
    flat: np.ndarray,
    base: np.ndarray,
    deltas: np.ndarray,
    kmin: np.ndarray,
    dk: np.ndarray,
    ends: np.ndarray,
    rest: np.ndarray,
    box: np.ndarray,
    scale: float,
    room: float,
    thr: float,
    plain: bool = False,
) -> np.ndarray:
    """Whether each row's sums may reach ``thr``: ``U = sum_j x_j (kmax_j if
    x_j > 0 else kmin_j)``, x_j = ``flat[base[i] + deltas[j]]``, bounds every
    sum_j W[r, j] x_j with 0 <= kmin <= W[r, :] <= kmax; it is summed as
    kmin_j x_j + dk_j max(x_j, 0), dk = kmax - kmin (no branch on the
    signs of noise, which no predictor guesses), and a row is kept
    when U plus ``room`` (the rounding of two sums of its terms in any
    order, this one's and a matrix product's, from above) reaches ``thr``.

    The offsets come in stages (``ends``: where each stops), the heaviest
    first. After a stage that is not the last, the offsets not yet read add
    at most ``rest[s]`` (their largest kmax) times their positive parts,
    which are at most the box's (``box[base[i]]``, of
    :func:`positive_box_sums` at ``scale``, over ``scale``) less those
    read: a row whose bound then stays below ``thr`` is dropped
    without reading the rest (a cell holding noise alone, most often
    after the centre of its ball). Each stage runs in four partial sums
    (one chain of dependent additions is bound by its latency). ``plain``
    (dk = 0 everywhere: one sub-position) adds kmin_j x_j alone, the same
    values (dk_j max(x_j, 0) is then +0, which leaves every sum as it is)."""
    n = deltas.size
    u = (n + 2) * 2.0**-53
    gamma = u / (1.0 - u)
    inv = 1.0 / scale
    up = 1.0 + 2.0**-50
    keep = np.zeros(base.size, np.bool_)
    for i in range(base.size):
        b = base[i]
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        p0 = 0.0
        p1 = 0.0
        p2 = 0.0
        p3 = 0.0
        j = 0
        alive = True
        for s in range(ends.size):
            e = ends[s]
            while j + 4 <= e:
                x0 = flat[b + deltas[j]]
                x1 = flat[b + deltas[j + 1]]
                x2 = flat[b + deltas[j + 2]]
                x3 = flat[b + deltas[j + 3]]
                y0 = max(x0, 0.0)
                y1 = max(x1, 0.0)
                y2 = max(x2, 0.0)
                y3 = max(x3, 0.0)
                if plain:
                    a0 += kmin[j] * x0
                    a1 += kmin[j + 1] * x1
                    a2 += kmin[j + 2] * x2
                    a3 += kmin[j + 3] * x3
                else:
                    a0 += kmin[j] * x0 + dk[j] * y0
                    a1 += kmin[j + 1] * x1 + dk[j + 1] * y1
                    a2 += kmin[j + 2] * x2 + dk[j + 2] * y2
                    a3 += kmin[j + 3] * x3 + dk[j + 3] * y3
                p0 += y0
                p1 += y1
                p2 += y2
                p3 += y3
                j += 4
            while j < e:
                x0 = flat[b + deltas[j]]
                y0 = max(x0, 0.0)
                a0 += kmin[j] * x0 + dk[j] * y0
                p0 += y0
                j += 1
            acc = (a0 + a1) + (a2 + a3)
            if j < n:
                # the box's integers over scale, less the positive parts
                # read (at most their ceilings over scale), with room for
                # the rounding of the positive parts' sum and the difference
                pos = (p0 + p1) + (p2 + p3)
                whole = box[b] * inv
                left = (whole - pos) + gamma * (whole + pos)
                if acc + rest[s] * left * up + room < thr:
                    alive = False
                    break
            else:
                keep[i] = acc + room >= thr
        if not alive:
            keep[i] = False
    return keep


@kernel
def table_bounds(
    flat: np.ndarray,
    keys: np.ndarray,
    key_strides: np.ndarray,
    strides: np.ndarray,
    pad: int,
    own: np.ndarray,
    c0: np.ndarray,
    first: np.ndarray,
    coef: np.ndarray,
    deltas: np.ndarray,
    signs: np.ndarray,
    slack: np.ndarray,
    thr: float,
    out: np.ndarray,
) -> None:
    """The staged bound of :func:`.cover._numpy_cover` at each key, from the
    same summed-area table of integers (``flat``), the same float values:
    stage s is ``c0[s] * own`` plus ``coef[j]`` times the box sum of box j
    (2^d corners ``deltas[j]`` with ``signs``, an exact integer) for j in
    ``first[s]:first[s + 1]``, added in that order, then times 1 + 1e-12
    plus ``slack[s]``; a stage runs only where the one before reaches
    ``thr``. Keys are decoded with the grid's ``key_strides`` and offset by
    ``pad`` on every axis of the table (``strides``)."""
    d = strides.size
    stages = c0.size
    inv = 1.0 / key_strides.astype(np.float64)
    corners = signs.size
    for i in range(keys.size):
        rem = keys[i]
        base = 0
        for a in range(d - 1):
            c = _div(rem, key_strides[a], inv[a])
            rem -= c * key_strides[a]
            base += (c + pad) * strides[a]
        base += rem + pad
        for s in range(stages):
            v = c0[s] * own[i]
            for j in range(first[s], first[s + 1]):
                box = np.int64(0)
                row = deltas[j]
                for c in range(corners):
                    box += signs[c] * np.int64(flat[base + row[c]])
                v = v + coef[j] * np.float64(box)
            v = v * (1 + 1e-12) + slack[s]
            out[i] = v
            if v < thr:
                break


@kernel
def dense_scan(vals: np.ndarray, cut: float, heavy_cut: float) -> tuple[int, int, int]:
    """One pass over a dense integer release (``vals`` row-major): the
    number of cells holding at least ``cut`` (the occupied candidates of
    :func:`.coresubcells.density_field`), at least ``heavy_cut``, and the
    sum of the positive values (an exact integer). The comparisons are
    numpy's: the integer as a float64 against the float cut."""
    count = 0
    heavy = 0
    total = 0
    for i in range(vals.size):
        v = vals[i]
        f = np.float64(v)
        if f >= cut:
            count += 1
        if f >= heavy_cut:
            heavy += 1
        if v > 0:
            total += v
    return count, heavy, total


@kernel
def prefix_table3(vals: np.ndarray, shape: np.ndarray, pad: int, S: np.ndarray) -> None:
    """The summed-area table of :func:`.cover._numpy_cover` in 3-D, into the
    zeros ``S`` (int32, each axis ``shape + 2 pad - 1`` long, cell x at
    index x + pad): the positive parts of the row-major integer ``vals``
    (their sum below 2^31, so every entry is exact), row by row,
    S[i, j] = S[i - 1, j] + S[i, j - 1] - S[i - 1, j - 1] plus the row's
    running sums. The same integers as the cumulative sums along each axis
    in turn."""
    n0, n1, n2 = shape[0], shape[1], shape[2]
    P0, P1, P2 = S.shape[0], S.shape[1], S.shape[2]
    row = np.zeros(P2, np.int32)
    for i in range(1, P0):
        x = i - pad
        for j in range(1, P1):
            y = j - pad
            if 0 <= x < n0 and 0 <= y < n1:
                o = (x * n1 + y) * n2
                acc = np.int32(0)
                for z in range(n2):
                    v = vals[o + z]
                    if v > 0:
                        acc += np.int32(v)
                    row[z + pad] = acc
                for k in range(pad + n2, P2):
                    row[k] = acc
                a, b, c, t = S[i - 1, j], S[i, j - 1], S[i - 1, j - 1], S[i, j]
                for k in range(P2):
                    t[k] = a[k] + b[k] - c[k] + row[k]
            else:
                a, b, c, t = S[i - 1, j], S[i, j - 1], S[i - 1, j - 1], S[i, j]
                for k in range(P2):
                    t[k] = a[k] + b[k] - c[k]


@kernel
def dense_table_bounds(
    vals: np.ndarray,
    shape: np.ndarray,
    cut: float,
    flat: np.ndarray,
    strides: np.ndarray,
    pad: int,
    c0: np.ndarray,
    first: np.ndarray,
    coef: np.ndarray,
    box_of: np.ndarray,
    deltas: np.ndarray,
    signs: np.ndarray,
    slack: np.ndarray,
    thr: float,
    out: np.ndarray,
) -> int:
    """:func:`table_bounds` at every cell of a dense 3-D integer release
    (row-major ``vals`` of ``shape``) that holds at least ``cut``, in
    row-major order, the cell's own value as ``own`` (its positive part as
    a float): the row-major index of each cell whose every stage reaches
    ``thr`` goes to ``out``, and their number is returned.

    Term j of the stages is the box ``box_of[j]`` (its corners in row
    ``box_of[j]`` of ``deltas``: boxes that recur in later stages, the
    cubes, are listed once). The same float terms in the same order as
    :func:`table_bounds` (the cells of :func:`.coresubcells._occupied_cells`,
    then the bound's test), from the same exact integer box sums: those of
    the first stage for a whole row of cells at once (contiguous reads of
    the table that LLVM vectorizes), the others cell by cell where the
    stage before reaches ``thr``, each box summed once per cell."""
    stages = c0.size
    corners = signs.size
    n0, n1, n2 = shape[0], shape[1], shape[2]
    f0 = first[1]
    n_box = deltas.shape[0]
    # a row's box sums of the first stage: int32, wrapping on the way as
    # the table's int32 entries do (every box's sum is below 2^31, so it
    # ends exact), twice the lanes of int64
    rows = np.empty((f0, n2), np.int32)
    acc = np.empty(n2, np.float64)
    ok = np.empty(n2, np.bool_)
    held = np.zeros(n_box, np.int64)
    when = np.full(n_box, -1, np.int64)
    got = 0
    p = 0
    for x in range(n0):
        for y in range(n1):
            base = (x + pad) * strides[0] + (y + pad) * strides[1] + pad
            row = vals[p : p + n2]
            for z in range(n2):
                acc[z] = c0[0] * max(np.float64(row[z]), 0.0)
            for j in range(f0):
                bx = rows[j]
                for z in range(n2):
                    bx[z] = 0
                for c in range(corners):
                    at = base + deltas[box_of[j], c]
                    src = flat[at : at + n2]
                    if signs[c] > 0:
                        for z in range(n2):
                            bx[z] += src[z]
                    else:
                        for z in range(n2):
                            bx[z] -= src[z]
                cj = coef[j]
                for z in range(n2):
                    acc[z] = acc[z] + cj * np.float64(bx[z])
            # the first stage's test for the whole row, then a loop that
            # skips most cells (the test inside it took twice the time)
            for z in range(n2):
                ok[z] = (np.float64(row[z]) >= cut) & (acc[z] * (1 + 1e-12) + slack[0] >= thr)
            for z in range(n2):
                if not ok[z]:
                    continue
                v0 = row[z]
                cell = p + z
                for j in range(f0):
                    held[box_of[j]] = np.int64(rows[j, z])
                    when[box_of[j]] = cell
                own = max(np.float64(v0), 0.0)
                b = base + z
                keep = True
                for s in range(1, stages):
                    v = c0[s] * own
                    for j in range(first[s], first[s + 1]):
                        u = box_of[j]
                        if when[u] != cell:
                            total = np.int64(0)
                            for c in range(corners):
                                total += signs[c] * np.int64(flat[b + deltas[u, c]])
                            held[u] = total
                            when[u] = cell
                        v = v + coef[j] * np.float64(held[u])
                    v = v * (1 + 1e-12) + slack[s]
                    if v < thr:
                        keep = False
                        break
                if keep:
                    out[got] = cell
                    got += 1
            p += n2
    return got


@kernel
def gather_rows(flat: np.ndarray, base: np.ndarray, deltas: np.ndarray, G: np.ndarray) -> None:
    """``G[i, j] = flat[base[i] + deltas[j]]``: the dense release's values
    around each candidate, the matrix the weights multiply."""
    for i in range(base.size):
        b = base[i]
        for j in range(deltas.size):
            G[i, j] = flat[b + deltas[j]]


@kernel
def gather_unpadded(
    vals: np.ndarray, shape: np.ndarray, coords: np.ndarray, offsets: np.ndarray, G: np.ndarray
) -> None:
    """``G[i, j]``: the dense release's value (row-major ``vals`` of
    ``shape``) at cell ``coords[i] + offsets[j]``, 0 outside the grid: the
    matrix :func:`gather_rows` reads from the zero-padded copy, without
    the copy."""
    d = shape.size
    m = offsets.shape[0]
    # a cell whose ball stays inside the grid reads vals[at + delta[j]]
    # (row-major deltas of the offsets), without the test per offset
    strides = np.empty(d, np.int64)
    acc = 1
    for a in range(d - 1, -1, -1):
        strides[a] = acc
        acc *= shape[a]
    delta = np.zeros(m, np.int64)
    lo = np.zeros(d, np.int64)
    hi = shape - 1
    for j in range(m):
        for a in range(d):
            delta[j] += offsets[j, a] * strides[a]
            lo[a] = max(lo[a], -offsets[j, a])
            hi[a] = min(hi[a], shape[a] - 1 - offsets[j, a])
    for i in range(coords.shape[0]):
        at = 0
        inner = True
        for a in range(d):
            c = coords[i, a]
            inner &= lo[a] <= c <= hi[a]
            at += c * strides[a]
        if inner:
            for j in range(m):
                G[i, j] = vals[at + delta[j]]
            continue
        for j in range(m):
            at = 0
            inside = True
            for a in range(d):
                c = coords[i, a] + offsets[j, a]
                if c < 0 or c >= shape[a]:
                    inside = False
                    break
                at = at * shape[a] + c
            G[i, j] = vals[at] if inside else 0.0


@kernel
def ball_runs(
    vals: np.ndarray,
    shape: np.ndarray,
    coords: np.ndarray,
    prefix: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    w: np.ndarray,
    acc_out: np.ndarray,
    mag_out: np.ndarray,
) -> None:
    """One sub-position's weighted sums of a dense release read by runs of
    offsets: per cell ``coords[i]``, ``acc_out = sum_j x_j w_j`` and
    ``mag_out = sum_j |x_j|`` over the offsets j of the runs (run r: the
    offsets ``(prefix[r], t)`` for t in ``lo[r]..hi[r]``, their weights
    next in ``w``, run after run), x_j the value (row-major ``vals`` of
    ``shape``) at the cell plus offset j, the offsets that leave the grid
    left out (the zeros of the padding). The terms of the matrix product of
    :func:`gather_unpadded`'s rows in another order: the caller gives it
    room for the rounding. Contiguous reads along the last axis, no matrix
    (3-D at the automatic mode's top rung, 139k cells times 2,391 offsets:
    0.4-0.6 s of CPU against 2.2-3.8 s for the gathers and their product)."""
    d = shape.size
    last = d - 1
    strides = _row_major(shape)
    n_runs = lo.size
    delta, start, low, high = _run_layout(shape, strides, prefix, lo, hi)
    for i in range(coords.shape[0]):
        base = 0
        inner = True
        for a in range(d):
            c = coords[i, a]
            inner &= low[a] <= c <= high[a]
            base += c * strides[a]
        acc = 0.0
        mag = 0.0
        if inner:
            for r in range(n_runs):
                b = base + delta[r]
                s = start[r]
                for t in range(hi[r] - lo[r] + 1):
                    x = vals[b + t]
                    acc += x * w[s + t]
                    mag += abs(x)
        else:
            c_last = coords[i, last]
            for r in range(n_runs):
                row = 0
                inside = True
                for a in range(last):
                    c = coords[i, a] + prefix[r, a]
                    if c < 0 or c >= shape[a]:
                        inside = False
                        break
                    row += c * strides[a]
                if not inside:
                    continue
                t0 = max(lo[r], -c_last)
                t1 = min(hi[r], shape[last] - 1 - c_last)
                b = row + c_last
                s = start[r] - lo[r]
                for t in range(t0, t1 + 1):
                    x = vals[b + t]
                    acc += x * w[s + t]
                    mag += abs(x)
        acc_out[i] = acc
        mag_out[i] = mag


@kernel
def ball_runs_many(
    vals: np.ndarray,
    shape: np.ndarray,
    coords: np.ndarray,
    prefix: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    w: np.ndarray,
    acc_out: np.ndarray,
    mag_out: np.ndarray,
) -> None:
    """:func:`ball_runs` for several sub-positions: ``w[j, p]`` the weight
    of term j at sub-position p, ``acc_out[i, p]`` the sum of cell i at p
    (each value read once for every sub-position; 3-D with two sub-cells,
    eight)."""
    d = shape.size
    last = d - 1
    strides = _row_major(shape)
    n_runs = lo.size
    n_pos = w.shape[1]
    delta, start, low, high = _run_layout(shape, strides, prefix, lo, hi)
    acc = np.empty(n_pos)
    for i in range(coords.shape[0]):
        base = 0
        inner = True
        for a in range(d):
            c = coords[i, a]
            inner &= low[a] <= c <= high[a]
            base += c * strides[a]
        acc[:] = 0.0
        mag = 0.0
        c_last = coords[i, last]
        for r in range(n_runs):
            if inner:
                b = base + delta[r]
                s = start[r]
                t0 = 0
                t1 = hi[r] - lo[r]
            else:
                row = 0
                inside = True
                for a in range(last):
                    c = coords[i, a] + prefix[r, a]
                    if c < 0 or c >= shape[a]:
                        inside = False
                        break
                    row += c * strides[a]
                if not inside:
                    continue
                t0 = max(lo[r], -c_last)
                t1 = min(hi[r], shape[last] - 1 - c_last)
                b = row + c_last
                s = start[r] - lo[r]
            for t in range(t0, t1 + 1):
                x = vals[b + t]
                mag += abs(x)
                for p in range(n_pos):
                    acc[p] += x * w[s + t, p]
        for p in range(n_pos):
            acc_out[i, p] = acc[p]
        mag_out[i] = mag


@inlined
def _run_layout(
    shape: np.ndarray, strides: np.ndarray, prefix: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The runs of :func:`ball_runs` for a cell within reach of no face
    (every run read whole): each run's delta (row-major, from the cell to
    its first offset) and first weight, and the box of such cells."""
    d = shape.size
    last = d - 1
    n_runs = lo.size
    delta = np.zeros(n_runs, np.int64)
    start = np.zeros(n_runs, np.int64)
    low = np.zeros(d, np.int64)
    high = shape - 1
    at = 0
    for r in range(n_runs):
        start[r] = at
        at += hi[r] - lo[r] + 1
        for a in range(last):
            delta[r] += prefix[r, a] * strides[a]
            low[a] = max(low[a], -prefix[r, a])
            high[a] = min(high[a], shape[a] - 1 - prefix[r, a])
        delta[r] += lo[r]
        low[last] = max(low[last], -lo[r])
        high[last] = min(high[last], shape[last] - 1 - hi[r])
    return delta, start, low, high


@kernel
def walk_bounds(
    vals: np.ndarray,
    shape: np.ndarray,
    coords: np.ndarray,
    R: int,
    table: np.ndarray,
    half: np.ndarray,
    kmax: np.ndarray,
    kmin: np.ndarray,
    acc_out: np.ndarray,
    mag_out: np.ndarray,
) -> None:
    """The terms of :func:`staged_reach` read whole, on a grid small beside its ball:
    per cell, ``acc_out = sum_j x_j (kmax_j if x_j > 0 else kmin_j)`` and
    ``mag_out = sum_j |x_j|`` over the cells of the grid within ``R`` along
    each axis in row-major order (their offsets in the sorted order the
    padded array's deltas give), each offset's column from ``table`` (-1
    outside the ball; ``half``: the table's half-widths). The offsets that
    leave the grid read 0 there and add exact zeros, so both are the same
    bit for bit as over every offset; with one sub-position (``kmax ==
    kmin``) ``acc_out`` is the weighted sum itself, in the walk's order."""
    d = shape.size
    vs, ts = _row_major(shape), _row_major(2 * half + 1)
    lo = np.empty(d, np.int64)
    hi = np.empty(d, np.int64)
    y = np.empty(d, np.int64)
    last = d - 1
    for i in range(coords.shape[0]):
        _box_start(coords[i], R, shape, lo, hi, y)
        acc = 0.0
        mag = 0.0
        while True:
            bv, bt = _row_bases(y, coords[i], half, vs, ts)
            for t in range(lo[last], hi[last] + 1):
                j = table[bt + t]
                if j >= 0:
                    x = vals[bv + t]
                    acc += x * (kmax[j] if x > 0 else kmin[j])
                    mag += abs(x)
            if not _next_row(y, lo, hi):
                break
        acc_out[i] = acc
        mag_out[i] = mag


@kernel
def walk_rows(
    vals: np.ndarray,
    shape: np.ndarray,
    coords: np.ndarray,
    R: int,
    table: np.ndarray,
    half: np.ndarray,
    G: np.ndarray,
    clear: bool,
) -> None:
    """:func:`gather_rows` on a grid small beside its ball, into a ``G`` of
    zeros: ``G[i, j]`` the value of cell ``coords[i]`` + offset j (column j
    of ``table``), left 0 where that leaves the grid, from a walk over the
    grid's cells within ``R`` of it (the same matrix). ``clear``: write 0
    where the walk wrote, so ``G`` is zeros again for the next block (a few
    entries of each row, where zeroing whole rows writes every offset)."""
    d = shape.size
    vs, ts = _row_major(shape), _row_major(2 * half + 1)
    lo = np.empty(d, np.int64)
    hi = np.empty(d, np.int64)
    y = np.empty(d, np.int64)
    last = d - 1
    for i in range(coords.shape[0]):
        _box_start(coords[i], R, shape, lo, hi, y)
        while True:
            bv, bt = _row_bases(y, coords[i], half, vs, ts)
            for t in range(lo[last], hi[last] + 1):
                j = table[bt + t]
                if j >= 0:
                    G[i, j] = 0.0 if clear else vals[bv + t]
            if not _next_row(y, lo, hi):
                break


@inlined
def _box_start(
    c: np.ndarray, R: int, shape: np.ndarray, lo: np.ndarray, hi: np.ndarray, y: np.ndarray
) -> None:
    """The grid's cells within ``R`` of cell ``c`` along each axis: their
    box ``lo..hi`` (clipped to the grid), and ``y`` at its first row."""
    for a in range(c.size):
        lo[a] = max(c[a] - R, 0)
        hi[a] = min(c[a] + R, shape[a] - 1)
        y[a] = lo[a]


@inlined
def _row_bases(
    y: np.ndarray, c: np.ndarray, half: np.ndarray, vs: np.ndarray, ts: np.ndarray
) -> tuple[int, int]:
    """Where row ``y`` of the box (all axes but the last) starts in the
    grid's values and in the offsets' ``table``, less the last axis's
    coordinate: cell ``y`` + (t on the last axis) is at ``bv + t`` and its
    offset from ``c`` at ``bt + t``."""
    last = y.size - 1
    bv = 0
    bt = 0
    for a in range(last):
        bv += y[a] * vs[a]
        bt += (y[a] - c[a] + half[a]) * ts[a]
    return bv, bt + half[last] - c[last]


@inlined
def _next_row(y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Step ``y`` to the box's next row in row-major order (the last axis is
    walked by the caller); False when the box is done."""
    a = y.size - 2
    while a >= 0:
        y[a] += 1
        if y[a] <= hi[a]:
            return True
        y[a] = lo[a]
        a -= 1
    return False


@kernel
def _row_major(dims: np.ndarray) -> np.ndarray:
    """Row-major strides of an array of these dimensions."""
    st = np.empty(dims.size, np.int64)
    acc = 1
    for a in range(dims.size - 1, -1, -1):
        st[a] = acc
        acc *= dims[a]
    return st


def as_table_values(values: np.ndarray, exact: bool) -> np.ndarray:
    """The values in the dtype the kernel sums them in."""
    return np.asarray(values, dtype=np.int64 if exact else np.float64)


__all__ = [
    "dense_scan",
    "prefix_table3",
    "dense_table_bounds",
    "streamed_cover",
    "as_table_values",
    "row_index",
    "run_sums",
    "gather_rows",
    "positive_box_sums",
    "staged_reach",
    "walk_bounds",
    "walk_rows",
]
