"""The stops' scan of :mod:`dpdbscan.traces.stopscan` in numpy, for traces
whose runs are short (a fix every minute or more, or a moving unit): no
numba to import and no kernel to load (about 0.7 s of CPU in a fresh
process), which on such a file cost more than the scan.

The same anchors as the kernel, bit for bit: the same squared distances
(the axes summed in order) and the same time differences, compared the
same way. Instead of one anchor after another, every point is tried as an
anchor at once, offset by offset over a shrinking set of the points still
in their run (:func:`_run_ends`): each point's run end (the first point of
its unit that leaves its radius) and whether its run lasts ``duration``.
The greedy choice (a lasting run's anchor is a stop and the next anchor
is the first point that left, else the very next point) then follows each
unit's chain of lasting anchors by doubling (:func:`_on_chains`).

Work grows with the runs' lengths in points (a unit parked for hours with
a fix every few seconds has runs of thousands of points, each read from
each of its points): past :data:`MAX_ROUNDS` offsets or :data:`MAX_WORK`
reads, :func:`stop_anchors_rounds` gives up and the kernel scans (at once
for a trace of more than half as many points). Measured, CPU: Cabs-tiny (845,685
fixes, mostly a minute or more apart) 28 offsets, 0.07 s; a synthetic week
of 200 taxis with a fix every 10 min (125,307) 125 offsets, 0.05 s; the
kernel's first call in a fresh process 0.3 s after numba's import.
Which scan ran depends on the data for the speed only, never the stops.
"""

from __future__ import annotations

import numpy as np

#: The most offsets tried before the kernel takes over (about 15 numpy
#: calls each, on the points still in their runs).
MAX_ROUNDS = 1000
#: The most (anchor, point) pairs read before the kernel takes over (about
#: 100 ns each: 0.2 s of CPU, less than numba's import and the kernel's load). A
#: trace of more than half as many points goes to the kernel at once.
MAX_WORK = 2_000_000


def stop_anchors_rounds(
    X: np.ndarray, rows: np.ndarray, codes: np.ndarray, times: np.ndarray, r2: float, duration: float
) -> np.ndarray | None:
    """The positions in ``rows`` of the stops' first points (ascending), as
    :func:`dpdbscan.traces.stopscan.stop_anchors` gives them for the same
    arguments, or None when the trace is too long or its runs too long for
    rounds (checked before any work for the trace's length)."""
    if not rounds_may_take(rows.size):
        return None
    units = codes[rows]
    ends = _run_ends(X[rows], units, times[rows], r2, duration)
    if ends is None:
        return None
    end, lasting = ends
    firsts = np.flatnonzero(lasting)
    if firsts.size == 0:
        return firsts
    return firsts[_on_chains(firsts, end[firsts], units[firsts])]


def rounds_may_take(n: int) -> bool:
    """Whether a trace of ``n`` points is short enough for rounds: longer
    ones go to the kernel at once, the first two offsets alone passing
    :data:`MAX_WORK`."""
    return 2 * n <= MAX_WORK


def _run_ends(
    Xs: np.ndarray, units: np.ndarray, times: np.ndarray, r2: float, duration: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Each position's run end (the first later position of another unit or
    beyond the radius, or ``n``) and whether its run lasts; None past the
    limits. Every run is read to its end: a lasting run's end is where
    the next anchor would be, if it is taken."""
    n, d = Xs.shape
    end = np.full(n, n, np.int64)
    lasting = np.zeros(n, bool)
    active = np.arange(n - 1, dtype=np.int64)
    work, k = 0, 0
    while active.size:
        k += 1
        work += active.size
        if k > MAX_ROUNDS or work > MAX_WORK:
            return None
        j = active + k
        inside = j < n
        active, j = active[inside], j[inside]
        keep = units[j] == units[active]
        d2 = np.zeros(active.size)
        for axis in range(d):
            diff = Xs[j, axis] - Xs[active, axis]
            d2 += diff * diff
        keep &= d2 <= r2
        end[active[~keep]] = j[~keep]
        active, j = active[keep], j[keep]
        lasting[active[times[j] - times[active] >= duration]] = True
    return end, lasting


def _on_chains(firsts: np.ndarray, ends: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Which lasting anchors (``firsts``, ascending, with their run ``ends``
    and ``units``) the greedy scan takes: each unit's first, then the first
    at or after the end of the last taken, as long as it is the same unit's.
    Every unit's first lasting anchor is taken (a run never crosses units),
    so the taken ones are the nodes each unit's first reaches by "next".
    Found by doubling: ``hop[k]`` jumps 2^k links, and the nodes 2^k
    apart along each chain are those 2^(k+1) apart and one jump of 2^k on."""
    m = firsts.size
    nxt = np.searchsorted(firsts, ends)  # index of the next anchor (m: none)
    nxt[units[np.minimum(nxt, m - 1)] != units] = m
    nxt[nxt >= m] = m
    starts = np.flatnonzero(np.r_[True, units[1:] != units[:-1]])
    longest = int(np.diff(np.r_[starts, m]).max())
    hops = [np.r_[nxt, m]]  # m: the end, which stays there
    while (1 << len(hops)) <= longest:
        hops.append(hops[-1][hops[-1]])
    taken = np.zeros(m + 1, bool)
    taken[starts] = True
    for hop in reversed(hops):
        taken[hop[taken]] = True
    return taken[:m]
