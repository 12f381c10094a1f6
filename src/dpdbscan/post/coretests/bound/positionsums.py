"""Every sub-position's neighbour sum of a sparse release in one walk, compiled.

With ``k`` sub-cells per axis a cell X holds ``k^d`` sub-cells q, and the
bound test needs the sum of the released values over NB(q) for each: the
offsets o whose squared gaps ``g_{s_i}(o_i)^2`` (``s_i`` the sub-position along
axis i, :func:`~dpdbscan.cells.subcells.position_offsets`) add up, axis by
axis from 0 in float64, to less than ``lim``. Summing run by run
(:func:`~dpdbscan.post.coretests.bound.boundsums.run_sums`) costs the runs of
every NB(q), thousands per position from 5-D on, for every cell and position.

Here one walk of the trie of the sorted released keys (as in
:func:`~dpdbscan.post.coretests.bound.triesums.line_sums`) serves every
position at once and every cell of one line (the cells sharing their first
d - 1 coordinates): along axis i it enters only the released coordinates,
carrying the partial sums of the gaps of each combination of the first i
sub-positions (``k^i`` of them, the same float additions in the same order
as the offsets' own test, so the same offsets pass), and drops a coordinate
that no combination can afford. At a released line, each position's offsets
along the last axis are one interval (the gap is 0 at o = 0 and grows away
from it), summed as a difference of prefix sums. The lines are visited in the
lexicographic order of their offsets, the order of the runs, and a run that
meets no released cell adds exactly 0: the same sums bit for bit as the run
walk, also for float values. The cost is the released lines near each line
of cells times the positions, not the runs. Post-processing: reads the
release only.
"""

from __future__ import annotations

import functools

import numpy as np

from ....cells.grid import Grid
from ....cells.subcells import gap_table

#: Entries (cells times positions) of the sums held at once.
SUMS_CHUNK = 1 << 22


def position_sums(grid: Grid, keys: np.ndarray, values: np.ndarray, cells: np.ndarray, k: int) -> np.ndarray:
    """Sums over NB(q) of the released values (sorted int64 ``keys``,
    ``values``) for each of the sorted ``cells`` (rows) and each sub-position
    q of ``k`` per axis (columns, in ``itertools.product`` order, that of
    :attr:`~dpdbscan.cells.subcells.SubcellLayout.positions`)."""
    d = grid.d
    n_pos = k**d
    acc = np.int64 if values.dtype.kind in "iub" else np.float64
    out = np.zeros((cells.size, n_pos), dtype=acc)
    if keys.size == 0 or cells.size == 0:
        return out
    lim, reach, gaps = gap_table(d, float(grid.eta), k)
    cs = np.zeros(values.size + 1, dtype=acc)
    np.cumsum(values, out=cs[1:])
    eye = np.eye(d, dtype=np.int64)
    strides = np.array([grid.key_delta(eye[i]) for i in range(d)], dtype=np.int64)
    shape = np.array(grid.shape, dtype=np.int64)
    per = max(1, SUMS_CHUNK // n_pos)
    for start in range(0, cells.size, per):
        qc = grid.decode(cells[start : start + per])
        new = np.ones(qc.shape[0], dtype=bool)
        new[1:] = np.any(qc[1:, :-1] != qc[:-1, :-1], axis=1) if d > 1 else False
        starts = np.append(np.flatnonzero(new), qc.shape[0]).astype(np.int64)
        _kernel()(
            keys, cs, strides, shape, qc, starts, reach, gaps, gaps.min(axis=0), lim, out[start : start + per]
        )
    return out


@functools.cache
def _kernel():
    """The compiled walk of the trie per line of cells, for every position."""
    # lazy: numba loads only where a kernel runs (never on a 2-D fit)
    from ...._jit import kernel, lower_bound

    @kernel
    def walk_positions(keys, cs, strides, shape, qc, starts, reach, gaps, gmin, lim, out):
        d = qc.shape[1]
        k = gaps.shape[0]
        n = keys.size
        last = d - 1
        inf = np.inf
        lo = np.zeros(d, dtype=np.int64)
        hi = np.zeros(d, dtype=np.int64)
        base = np.zeros(d, dtype=np.int64)
        cur = np.zeros(d, dtype=np.int64)
        end = np.zeros(d, dtype=np.int64)
        pos = np.zeros(d, dtype=np.int64)
        width = np.ones(d, dtype=np.int64)
        least = np.zeros(d, dtype=np.float64)
        # cost[i, j]: the partial sum of the gaps of the first i axes for the
        # j-th combination of their sub-positions (inf once past lim)
        cost = np.zeros((d, out.shape[1] // k), dtype=np.float64)
        for line in range(starts.size - 1):
            first = starts[line]
            stop = starts[line + 1]
            i_ax = 0
            lo[0] = 0
            hi[0] = n
            base[0] = 0
            cost[0, 0] = 0.0
            least[0] = 0.0
            width[0] = 1
            entering = True
            while i_ax >= 0:
                if entering:
                    entering = False
                    if i_ax == last:
                        for j in range(width[i_ax]):
                            c = cost[i_ax, j]
                            if not c < lim:
                                continue
                            for s in range(k):
                                # the interval of last-axis offsets this position affords
                                a_o = -reach
                                while not c + gaps[s, a_o + reach] < lim:
                                    a_o += 1
                                b_o = reach
                                while not c + gaps[s, b_o + reach] < lim:
                                    b_o -= 1
                                col = j * k + s
                                i = lo[i_ax]
                                jj = lo[i_ax]
                                for q in range(first, stop):
                                    x = qc[q, i_ax]
                                    a = max(x + a_o, 0)
                                    b = min(x + b_o, shape[i_ax] - 1)
                                    if a <= b:
                                        i = lower_bound(keys, i, hi[i_ax], base[i_ax] + a)
                                        if jj < i:
                                            jj = i
                                        jj = lower_bound(keys, jj, hi[i_ax], base[i_ax] + b + 1)
                                        out[q, col] += cs[jj] - cs[i]
                        i_ax -= 1
                        continue
                    x = qc[first, i_ax]
                    cur[i_ax] = max(x - reach, 0)
                    end[i_ax] = min(x + reach, shape[i_ax] - 1)
                    pos[i_ax] = lo[i_ax]
                if cur[i_ax] > end[i_ax]:
                    i_ax -= 1
                    continue
                v = cur[i_ax]
                cur[i_ax] += 1
                g = v - qc[first, i_ax] + reach
                # float addition is monotone: no combination affords this
                # coordinate when the cheapest does not
                if not least[i_ax] + gmin[g] < lim:
                    continue
                b0 = base[i_ax] + v * strides[i_ax]
                i = lower_bound(keys, pos[i_ax], hi[i_ax], b0)
                if i == hi[i_ax]:
                    cur[i_ax] = end[i_ax] + 1
                    continue
                jj = lower_bound(keys, i, hi[i_ax], b0 + strides[i_ax])
                pos[i_ax] = jj
                if i == jj:
                    continue
                m = inf
                for j in range(width[i_ax]):
                    c = cost[i_ax, j]
                    for s in range(k):
                        nc = c + gaps[s, g]
                        if not nc < lim:
                            nc = inf
                        cost[i_ax + 1, j * k + s] = nc
                        if nc < m:
                            m = nc
                lo[i_ax + 1] = i
                hi[i_ax + 1] = jj
                base[i_ax + 1] = b0
                width[i_ax + 1] = width[i_ax] * k
                least[i_ax + 1] = m
                i_ax += 1
                entering = True

    return walk_positions


__all__ = ["position_sums", "SUMS_CHUNK"]
