"""Compiled kernels of the density test from 4-D up (:data:`.cover.COMPILED_FROM_D`;
the kernels themselves take any d >= 2, and the tests run them from 3-D).

:func:`staged_cover`, the box cover of :mod:`.cover`: one pass over the universe in
slabs (the cells sharing their first coordinate), holding only the 2R + 1
slabs a candidate's boxes reach, so its tables stay in cache.

Per slab j: the summed-area table of its positive parts over the other
d - 1 axes (padded, a zero row first on each). The sums over the 2r + 1
slabs around slab i, A_r = sum_{|j - i| <= r} S_j (r = 0..R), turn a box of
half-width h0 along the first axis and h along the others into 2^(d-1)
corners of one table, A_{h0}. Each candidate of slab i reads the boxes
of the cheapest bound first and stops at the first bound below the
threshold (the staged bound of :func:`.cover.cover_sums`). A call covers
a range of slabs (it first builds the 2R slabs before the range), so two
threads can each take half of the universe with their own tables.

(A variant that holds the full d-dimensional prefix P_j of the slabs up to
j, built in one pass per slab, and reads each box as corners of
P_{i+h0} - P_{i-h0-1}, was tried in 4-D: its tables cost about as much and
its queries read twice the corners, 0.18-0.21 s against 0.13 s per fit.)

:func:`dense_reach`, the upper bound of :func:`.weightedsums.may_reach`: per
cell, one pass over its offsets with the largest or smallest weight of each
by the sign of the value, and room for rounding.

:func:`run_sums`, the sparse weighted sums of :mod:`.weightedsums`: per
query, per run of offsets (one key interval), the released cells inside
it, found in the rows of a row index (or by bisection), added in the
order the numpy runs add them, so the sums are the same bit for bit.

Imported only inside the functions that call it (numba's import and first
dispatch; a 2-D fit never comes here).
"""

from __future__ import annotations

import numpy as np

from ...._jit import kernel, lower_bound


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
def _slab_table(out, j, dense, keys, vals, shape, key_strides, inv, pdims, pstrides, R, ptr):
    """Summed-area table of slab j into ``out`` (zeros outside the grid);
    ``ptr[0]``: the first sparse key not yet placed (keys are sorted)."""
    d = shape.size
    out[:] = 0
    if 0 <= j < shape[0]:
        if dense:
            # the cells of slab j, row-major in the flat values
            n = 1
            for a in range(1, d):
                n *= shape[a]
            start = j * n
            for c in range(n):
                rem = c
                idx = 0
                for a in range(d - 1, 0, -1):
                    nxt = _div(rem, shape[a], 1.0 / shape[a])
                    idx += (rem - nxt * shape[a] + R + 1) * pstrides[a]
                    rem = nxt
                v = vals[start + c]
                if v > 0:
                    out[idx] = v
        else:
            p = ptr[0]
            stop = (j + 1) * key_strides[0]
            while p < keys.size and keys[p] < stop:
                rem = keys[p] - j * key_strides[0]
                idx = 0
                for a in range(1, d):
                    x = _div(rem, key_strides[a], inv[a])
                    rem -= x * key_strides[a]
                    idx += (x + R + 1) * pstrides[a]
                v = vals[p]
                if v > 0:
                    out[idx] = v
                p += 1
            ptr[0] = p
    # prefix sums along the axes 1..d-1 of the padded slab: the last in
    # each row, then each other axis as one flat pass per block of it
    size = out.size
    n = pdims[d - 1]
    for b in range(0, size, n):
        acc = out[b]
        for i in range(b + 1, b + n):
            acc += out[i]
            out[i] = acc
    for a in range(d - 2, 0, -1):
        st = pstrides[a]
        block = pdims[a] * st
        for b in range(0, size, block):
            _add_behind(out, b + st, b + block, st)


@kernel
def _add_behind(out, lo, hi, st):
    for i in range(lo, hi):
        out[i] += out[i - st]


@kernel
def staged_cover(
    dense: bool,
    keys: np.ndarray,
    vals: np.ndarray,
    shape: np.ndarray,
    key_strides: np.ndarray,
    R: int,
    cand: np.ndarray,
    own: np.ndarray,
    box_h0: np.ndarray,
    box_deltas: np.ndarray,
    signs: np.ndarray,
    coef: np.ndarray,
    c0: np.ndarray,
    slack: np.ndarray,
    thr: float,
    ring: np.ndarray,
    A: np.ndarray,
    first: int,
    stop: int,
    out: np.ndarray,
) -> None:
    """The staged bound at each sorted candidate key of the slabs ``first``
    to ``stop - 1`` (see the module), into ``out`` (the others are left as
    they are: a part of the slabs per thread, each with its own work tables).

    ``box_h0[b]``, ``box_deltas[b]``: box b's half-width along the first axis
    and its corners' offsets in a padded slab (signs ``signs``); stage s bounds
    by ``c0[s] * own + sum_b coef[s, b] * box_b``, then ``* (1 + 1e-12) +
    slack[s]``, and the next stage runs only where it reaches ``thr``.
    ``ring`` (2R + 1 slabs) and ``A`` (R + 1 slabs; row 0 is not used: A_0
    is slab i in the ring): work tables of the table's dtype (int32 sums are
    exact; their corners add in int64).
    """
    d = shape.size
    L = 2 * R + 1
    pdims = np.empty(d, np.int64)
    pstrides = np.empty(d, np.int64)
    pdims[0] = 1
    for a in range(1, d):
        pdims[a] = shape[a] + 2 * R + 1
    pstrides[d - 1] = 1
    for a in range(d - 2, -1, -1):
        pstrides[a] = pstrides[a + 1] * pdims[a + 1]
    # the first sparse key of slab first - R (the first the ring holds)
    ptr = np.zeros(1, np.int64)
    ptr[0] = lower_bound(keys, 0, keys.size, (first - R) * key_strides[0])
    inv = 1.0 / key_strides
    for j in range(first - R, first + R):
        _slab_table(ring[(j + L) % L], j, dense, keys, vals, shape, key_strides, inv, pdims, pstrides, R, ptr)
    nbox = box_h0.size
    nst = c0.size
    ncorner = signs.size
    size = ring.shape[1]
    flat = A.reshape(-1)
    # per stage, the boxes it weighs (nonzero coefficients)
    active = np.zeros((nst, nbox), np.int64)
    n_active = np.zeros(nst, np.int64)
    for s in range(nst):
        for b in range(nbox):
            if coef[s, b] != 0.0:
                active[s, n_active[s]] = b
                n_active[s] += 1
    corner = np.empty((nbox, ncorner), np.int64)
    for b in range(nbox):
        for c in range(ncorner):
            corner[b, c] = box_h0[b] * size + box_deltas[b, c]
    box = np.empty(nbox)
    stamp = np.full(nbox, -1, np.int64)
    q = lower_bound(cand, 0, cand.size, first * key_strides[0])
    for i in range(first, stop):
        # slab i + R enters (in the slot of slab i - R - 1)
        _slab_table(
            ring[(i + R) % L], i + R, dense, keys, vals, shape, key_strides, inv, pdims, pstrides, R, ptr
        )
        top = (i + 1) * key_strides[0]
        if q >= cand.size or cand[q] >= top:
            continue  # no candidate in slab i
        # A_0 is slab i's own table (boxes of half-width 0 along the first
        # axis read it in the ring; A's row 0 is not used)
        A0 = ring[i % L]
        for r in range(1, R + 1):
            lo = ring[(i - r + L) % L]
            hi = ring[(i + r) % L]
            below = A0 if r == 1 else A[r - 1]
            for t in range(size):
                A[r, t] = below[t] + lo[t] + hi[t]
        while q < cand.size and cand[q] < top:
            rem = cand[q] - i * key_strides[0]
            base = 0
            outside = False
            for a in range(1, d):
                x = _div(rem, key_strides[a], inv[a])
                rem -= x * key_strides[a]
                base += (x + R + 1) * pstrides[a]
                if x >= shape[a]:
                    outside = True
            if outside:  # no cell of the grid: no bound (numpy would raise)
                q += 1
                continue
            mine = own[q] if own[q] > 0 else 0.0
            for s in range(nst):
                acc = c0[s] * mine
                for u in range(n_active[s]):
                    b = active[s, u]
                    if stamp[b] != q:
                        src = A0 if box_h0[b] == 0 else flat
                        tot = src[base + corner[b, 0]] * signs[0]
                        for c in range(1, ncorner):
                            tot += src[base + corner[b, c]] * signs[c]
                        box[b] = tot
                        stamp[b] = q
                    acc += coef[s, b] * box[b]
                val = acc * (1 + 1e-12) + slack[s]
                out[q] = val
                if val < thr:
                    break
            q += 1


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
def dense_reach(
    flat: np.ndarray, base: np.ndarray, deltas: np.ndarray, kmax: np.ndarray, kmin: np.ndarray, thr: float
) -> np.ndarray:
    """Whether each row's sums may reach ``thr``: ``U = sum_j x_j (kmax_j if
    x_j > 0 else kmin_j)``, x_j = ``flat[base[i] + deltas[j]]``, bounds every
    sum_j W[r, j] x_j with kmin <= W[r, :] <= kmax, and a row is kept when
    U plus the rounding of two sums of its terms in any order (this one and
    a matrix product's, gamma_n sum |k x| each) reaches ``thr``."""
    n = deltas.size
    u = n * 2.0**-53
    gamma = u / (1.0 - u) if u < 0.5 else np.inf
    wmax = 0.0
    for j in range(n):
        wmax = max(wmax, abs(kmax[j]), abs(kmin[j]))
    keep = np.zeros(base.size, np.bool_)
    for i in range(base.size):
        b = base[i]
        acc = 0.0
        mag = 0.0
        for j in range(n):
            x = flat[b + deltas[j]]
            acc += x * (kmax[j] if x > 0 else kmin[j])
            mag += abs(x)
        keep[i] = acc + 4.0 * gamma * wmax * mag + 1e-300 >= thr
    return keep


@kernel
def gather_rows(flat: np.ndarray, base: np.ndarray, deltas: np.ndarray, G: np.ndarray) -> None:
    """``G[i, j] = flat[base[i] + deltas[j]]``: the dense release's values
    around each candidate, the matrix the weights multiply."""
    for i in range(base.size):
        b = base[i]
        for j in range(deltas.size):
            G[i, j] = flat[b + deltas[j]]


@kernel
def walk_reach(
    vals: np.ndarray,
    shape: np.ndarray,
    coords: np.ndarray,
    R: int,
    table: np.ndarray,
    half: np.ndarray,
    kmax: np.ndarray,
    kmin: np.ndarray,
    n_terms: int,
    thr: float,
) -> np.ndarray:
    """:func:`dense_reach` on a grid small beside its ball: per cell, the
    cells of the grid within ``R`` along each axis in row-major order (their
    offsets in the sorted order :func:`dense_reach` reads), each offset's
    column from ``table`` (-1 outside the ball; ``half``: the table's
    half-widths). The offsets that leave the grid read 0 there and add
    exact zeros, so the sums are the same bit for bit (``n_terms``: every
    offset's count, for the same room for rounding)."""
    d = shape.size
    u = n_terms * 2.0**-53
    gamma = u / (1.0 - u) if u < 0.5 else np.inf
    wmax = 0.0
    for j in range(kmax.size):
        wmax = max(wmax, abs(kmax[j]), abs(kmin[j]))
    vs, ts = _row_major(shape), _row_major(2 * half + 1)
    lo = np.empty(d, np.int64)
    hi = np.empty(d, np.int64)
    y = np.empty(d, np.int64)
    keep = np.zeros(coords.shape[0], np.bool_)
    last = d - 1
    for i in range(coords.shape[0]):
        for a in range(d):
            lo[a] = max(coords[i, a] - R, 0)
            hi[a] = min(coords[i, a] + R, shape[a] - 1)
            y[a] = lo[a]
        acc = 0.0
        mag = 0.0
        while True:
            bv = 0
            bt = 0
            for a in range(last):
                bv += y[a] * vs[a]
                bt += (y[a] - coords[i, a] + half[a]) * ts[a]
            bt += half[last] - coords[i, last]
            for t in range(lo[last], hi[last] + 1):
                j = table[bt + t]
                if j >= 0:
                    x = vals[bv + t]
                    acc += x * (kmax[j] if x > 0 else kmin[j])
                    mag += abs(x)
            a = last - 1
            while a >= 0:
                y[a] += 1
                if y[a] <= hi[a]:
                    break
                y[a] = lo[a]
                a -= 1
            if a < 0:
                break
        keep[i] = acc + 4.0 * gamma * wmax * mag + 1e-300 >= thr
    return keep


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
        for a in range(d):
            lo[a] = max(coords[i, a] - R, 0)
            hi[a] = min(coords[i, a] + R, shape[a] - 1)
            y[a] = lo[a]
        while True:
            bv = 0
            bt = 0
            for a in range(last):
                bv += y[a] * vs[a]
                bt += (y[a] - coords[i, a] + half[a]) * ts[a]
            bt += half[last] - coords[i, last]
            for t in range(lo[last], hi[last] + 1):
                j = table[bt + t]
                if j >= 0:
                    G[i, j] = 0.0 if clear else vals[bv + t]
            a = last - 1
            while a >= 0:
                y[a] += 1
                if y[a] <= hi[a]:
                    break
                y[a] = lo[a]
                a -= 1
            if a < 0:
                break


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
    "staged_cover",
    "as_table_values",
    "row_index",
    "run_sums",
    "gather_rows",
    "dense_reach",
    "walk_reach",
    "walk_rows",
]
