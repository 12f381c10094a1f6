"""Compiled bookkeeping of the discrete Laplace sampler's CKS rounds
(:func:`.integers.cks_discrete_laplace`, which draws the noise below epsilon
about 0.0027; above, :mod:`.inversion` needs no compiled steps), where a fit
loads numba anyway (:func:`dpdbscan.release.histograms.countnoise.compiled_noise`).

The words are drawn as before, by the same calls of the source in the same
order and sizes; the kernels only do in one pass what numpy did in several
over the same arrays: which samples run on, the count of successes of
each, the "-0" redraws and the signs. Every kernel reads the codes and bits
numpy's steps read and writes what they wrote, without a branch on them
(random: no predictor guesses them, and kernels that branched ran 2-6x
slower than numpy), so the samples are the same values from the same
words. On a 4-D release of 4.1M cells (seeded, so without the operating
system's words) the numpy steps took about 0.1 s of CPU (a masked negation
23 ms, the first count's int64 copy of a bool mask 15-31 ms, the rounds'
fancy-indexed additions and compactions 28 ms), the compiled ones 0.06 s.

The sparse release's empty cells take the same kind of steps where a fit
loads numba anyway (:func:`dpdbscan.release.histograms.countnoise.compiled_tail`):
the geometric gaps' digits (:func:`digit_outcomes`), the positions the
gaps give (:func:`gap_positions`), their keys less the occupied cells
(:func:`empty_cell_keys`) and the merge of the two sorted parts
(:func:`merge_disjoint`), each the numpy steps' result from the same words.

Imported only inside the functions that call it (numba's import; a 2-D fit
never comes here).
"""

from __future__ import annotations

import numpy as np

from ..._jit import kernel


@kernel
def negative_zeros(neg: np.ndarray, code: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(neg & (code == 0))``: the draws of "-0"."""
    out = np.empty(neg.size, np.int64)
    m = 0
    for i in range(neg.size):
        out[m] = i
        m += neg[i] & (code[i] == 0)
    return out[:m]


@kernel
def redraw_zeros(
    bad: np.ndarray, code: np.ndarray, neg: np.ndarray, new_code: np.ndarray, new_neg: np.ndarray
) -> np.ndarray:
    """``code[bad] = new_code; neg[bad] = new_neg`` and the samples of
    ``bad`` that drew "-0" again (``bad[new_neg & (new_code == 0)]``)."""
    out = np.empty(bad.size, np.int64)
    m = 0
    for j in range(bad.size):
        i = bad[j]
        code[i] = new_code[j]
        neg[i] = new_neg[j]
        out[m] = i
        m += new_neg[j] & (new_code[j] == 0)
    return out[:m]


@kernel
def first_counts(code: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v = (code == 1)`` (into ``v``, int64) and the samples still running,
    ``np.flatnonzero(code != 0)``."""
    out = np.empty(code.size, np.int64)
    m = 0
    for i in range(code.size):
        c = code[i]
        v[i] = c == 1
        out[m] = i
        m += c != 0
    return out[:m]


@kernel
def count_round(v: np.ndarray, idx: np.ndarray, code: np.ndarray) -> np.ndarray:
    """One round of the count: ``v[idx] += code == 1`` and the samples that
    run on, ``idx[code != 0]`` (``idx`` holds no index twice)."""
    out = np.empty(idx.size, np.int64)
    m = 0
    for j in range(idx.size):
        c = code[j]
        i = idx[j]
        v[i] += c == 1
        out[m] = i
        m += c != 0
    return out[:m]


@kernel
def digit_outcomes(
    words: np.ndarray, shift: int, fast: np.ndarray, guide: np.ndarray, guide_next: np.ndarray, bucket: int
) -> tuple[np.ndarray, np.ndarray]:
    """The fast step of :meth:`.skipping._Digit.sample` in one pass: per
    32-bit word, its prefix ``r = word >> shift``, the number of thresholds
    of ``fast`` below it (``D``, from the guide table of bucket ``r >>
    bucket``, then stepping over the thresholds left below ``r``), and
    whether ``r`` equals the threshold ``fast[D]`` (a tie, resolved in
    Python with more words, as the numpy steps resolve it)."""
    n = words.size
    D = np.empty(n, np.int64)
    tie = np.zeros(n, np.bool_)
    last = fast.size - 1
    for i in range(n):
        r = np.uint64(words[i]) >> np.uint64(shift)
        b = r >> np.uint64(bucket)
        d = guide[b]
        first = guide_next[b]
        if first < r:
            d += 1
            while d <= last and fast[d] < r:
                d += 1
            if last >= 0:
                tie[i] = fast[min(d, last)] == r
        elif last >= 0:
            tie[i] = first == r
        D[i] = d
    return D, tie


@kernel
def gap_positions(g: np.ndarray, last: int, n_trials: int) -> np.ndarray:
    """The positions of successes after ``last`` given the gaps ``g``
    (failures before each success): ``last + cumsum(g + 1)``, up to the
    first that reaches ``n_trials`` (excluded). Each step is checked before
    it is added, so no sum passes ``n_trials`` (no overflow for gaps up to
    2^62)."""
    out = np.empty(g.size, np.int64)
    x = last
    for i in range(g.size):
        if g[i] >= n_trials - 1 - x:
            return out[:i]
        x += g[i] + 1
        out[i] = x
    return out


@kernel
def empty_cell_keys(
    positions: np.ndarray, shape: np.ndarray, key_strides: np.ndarray, reach: int, occupied: np.ndarray
) -> np.ndarray:
    """The keys of the cells at the sorted row-major ``positions`` (the
    formula of :meth:`dpdbscan.cells.grid.Grid.keys_of_positions`) that are
    not among the sorted ``occupied`` keys, in one pass: row-major order is
    key order, so both lists are walked once. The quotients p // L_i (L_i
    the row-major strides of the shape) only grow along sorted positions:
    each is carried from the position before, a division only where a gap
    passes two of its steps (4-D benchmark: a gap of 27 cells on average
    against L = 67, 4,489, 300,763)."""
    d = shape.size
    out = np.empty(positions.size, np.int64)
    L = np.ones(d, np.int64)
    for i in range(d - 2, -1, -1):
        L[i] = L[i + 1] * shape[i + 1]
    inv = 1.0 / L.astype(np.float64)
    quot = np.zeros(d, np.int64)  # p // L_i of the position before
    base = np.zeros(d, np.int64)  # quot_i * L_i
    add = 0  # reach * sum_{i < d - 1} quot_i K_{i + 1}
    m = 0
    j = 0
    for t in range(positions.size):
        p = positions[t]
        for i in range(d - 1):
            r = p - base[i]
            if r >= L[i]:
                if r < 2 * L[i]:
                    step = 1
                elif r < 1 << 51:
                    # r // L_i from a float product and one correction (an
                    # integer division costs tens of cycles: in 6-D one or
                    # two per position, the gaps being ~30k cells)
                    step = int(r * inv[i])
                    rest = r - step * L[i]
                    if rest < 0:
                        step -= 1
                    elif rest >= L[i]:
                        step += 1
                else:
                    step = r // L[i]
                quot[i] += step
                base[i] += step * L[i]
                add += step * reach * key_strides[i + 1]
        key = p + add
        while j < occupied.size and occupied[j] < key:
            j += 1
        if j < occupied.size and occupied[j] == key:
            continue
        out[m] = key
        m += 1
    return out[:m]


@kernel
def merge_disjoint(
    a_keys: np.ndarray, a_vals: np.ndarray, b_keys: np.ndarray, b_vals: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted key lists with no key in common, merged, with their
    values alike (of ``a_vals``' dtype)."""
    n = a_keys.size + b_keys.size
    keys = np.empty(n, np.int64)
    vals = np.empty(n, a_vals.dtype)
    i = 0
    j = 0
    for t in range(n):
        if j >= b_keys.size or (i < a_keys.size and a_keys[i] < b_keys[j]):
            keys[t] = a_keys[i]
            vals[t] = a_vals[i]
            i += 1
        else:
            keys[t] = b_keys[j]
            vals[t] = b_vals[j]
            j += 1
    return keys, vals


@kernel
def set_signs(y: np.ndarray, neg: np.ndarray) -> None:
    """``np.negative(y, out=y, where=neg)``."""
    for i in range(y.size):
        s = -np.int64(neg[i])  # 0 or -1: y or its two's complement
        y[i] = (y[i] ^ s) - s


__all__ = [
    "count_round",
    "digit_outcomes",
    "empty_cell_keys",
    "first_counts",
    "gap_positions",
    "merge_disjoint",
    "negative_zeros",
    "redraw_zeros",
    "set_signs",
]
