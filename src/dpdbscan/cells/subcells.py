"""Sub-cell refinement: decide core-ness and merge at a finer resolution than
the histogram, at no privacy cost.

The histogram stays on cells of width w (few neighbours, small Gamma). Each
cell X is split into k^d sub-cells of width w/k. For a sub-cell q, the cells
whose minimum distance to q is < alpha, NB(q), are a subset of NB(X), and for
every point p in q the ball B(p, alpha) meets only cells of NB(q). So

    UB(q) = sum over NB(q) of the counts  >=  |B(p, alpha) & P|  for p in q,

a tighter upper bound than UB(X) with the same argument (Lemma "core cells"
of the paper applied to q). Core sub-cells are merged when their minimum
distance is < alpha. The sandwich guarantee holds with

    rho = 3 + eta/2 + eta/(2k)      (k = 1 gives the paper's 3 + eta)

because a sub-cell has diameter eta*alpha/(4k) while the counted cells keep
diameter eta*alpha/4: a point p in a counted cell and any other counted point
are within (2 + 2 eta/4 + eta/(4k)) alpha, q lies in B(p, (1 + eta/4 +
eta/(4k)) alpha), and two merged sub-cells' witnesses are within rho alpha.
Gamma is computed for kappa_q = max |NB(q)| terms (the most cells within
alpha of one sub-cell; kappa_q = kappa, the grid's, when k = 1) with a union bound over the
k^d |X| sub-cells. docs/accuracy.md has the derivation and measurements.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np

from .grid import Grid, approximation_ratio


def _axis_gaps(d: int, eta: float, k: int) -> tuple[float, list, list]:
    """alpha^2 in cell widths, the steps along an axis and, per sub-position
    s, the squared gap between sub-cell [s/k, (s+1)/k] and the cell [o, o+1]
    at each step o."""
    r2 = (4.0 * math.sqrt(d) / eta) ** 2
    reach = int(math.ceil(math.sqrt(r2)))
    steps = list(range(-reach, reach + 1))
    gaps = []
    for s in range(k):
        g = []
        for o in steps:
            if o >= 1:
                gap = o - (s + 1) / k
            elif o <= -1:
                gap = s / k - (o + 1)
            else:
                gap = 0.0
            g.append(max(gap, 0.0) ** 2)
        gaps.append(g)
    return r2, steps, gaps


def gap_table(d: int, eta: float, k: int) -> tuple[float, int, np.ndarray]:
    """The test of :func:`position_offsets` as a table, for kernels that walk
    the offsets instead of listing them: ``(lim, reach, gaps)``, an offset
    o of sub-position s is in NB(q) when the squared gaps ``gaps[s_i, o_i +
    reach]``, added axis by axis from 0 in float64, stay below ``lim``
    (the same floats as :func:`_offsets_by_gaps` adds and compares)."""
    r2, steps, axis_gaps = _axis_gaps(d, eta, k)
    return r2 * (1 - 1e-12), -steps[0], np.array(axis_gaps, dtype=np.float64).reshape(k, len(steps))


@functools.lru_cache(maxsize=64)
def _sub_offsets(d: int, eta: float, k: int):
    """Offsets of NB(q) for every sub-position q in {0..k-1}^d (coarse units)."""
    return tuple((pos, position_offsets(d, eta, k, pos)) for pos in itertools.product(range(k), repeat=d))


def position_offsets(d: int, eta: float, k: int, pos: tuple[int, ...]) -> np.ndarray:
    """Offsets of NB(q) for the sub-position ``pos`` (coarse units)."""
    r2, steps, axis_gaps = _axis_gaps(d, eta, k)
    return _offsets_by_gaps(np.array(steps, dtype=np.int64), [axis_gaps[s] for s in pos], r2, d)


def union_offsets(d: int, eta: float, k: int) -> np.ndarray:
    """A superset of every sub-position's NB(q): the offsets whose sum of
    the smallest gap along each axis (over the sub-positions) passes the
    same test. Float additions are monotone in each term, so an offset of
    any NB(q), whose terms are at least these, is kept (a fit checks that
    each NB(q) lies in NB(X) on this one set, not on all k^d of them)."""
    r2, steps, axis_gaps = _axis_gaps(d, eta, k)
    least = list(np.min(np.array(axis_gaps), axis=0))
    return _offsets_by_gaps(np.array(steps, dtype=np.int64), [least] * d, r2, d)


def _offsets_by_gaps(step: np.ndarray, gaps: list, r2: float, d: int) -> np.ndarray:
    """The offsets (rows of ``step`` values) whose squared gaps, ``gaps[i]``
    along axis i, sum below ``r2``: itertools.product(steps, repeat=d)
    filtered on the sum of the gaps, axis by axis in its order; the same
    float additions as summing each offset's gaps from 0, and a partial sum
    past the limit stays past it (the gaps are >= 0), so those are dropped
    as they appear."""
    rows = np.zeros((1, 0), dtype=np.int64)
    acc = np.zeros(1)
    for gap in gaps:
        gap_i = np.array(gap)
        new_acc = (acc[:, None] + gap_i[None, :]).ravel()
        keep = new_acc < r2 * (1 - 1e-12)
        rows = np.concatenate(
            [np.repeat(rows, step.size, axis=0), np.tile(step, rows.shape[0])[:, None]], axis=1
        )[keep]
        acc = new_acc[keep]
    return rows.reshape(-1, d)


@functools.lru_cache(maxsize=64)
def _kappa_q(d: int, eta: float, k: int) -> int:
    """max_q |NB(q)|, the most rows of :func:`_sub_offsets` at one position,
    counted without them (in d = 8 with two sub-cells they are 256 x 593k
    offsets, 9.7 GB): per position, the distinct partial sums of the gaps
    axis by axis with how many offsets reach each. Equal partial sums add
    the next gap alike, so the counts are those of the offsets' own sums,
    kept by the same test."""
    r2, steps, axis_gaps = _axis_gaps(d, eta, k)
    lim = r2 * (1 - 1e-12)
    best = 0
    for pos in itertools.product(range(k), repeat=d):
        acc, count = np.zeros(1), np.ones(1, dtype=np.int64)
        for s in pos:
            new = (acc[:, None] + np.array(axis_gaps[s])[None, :]).ravel()
            keep = new < lim
            acc, inverse = np.unique(new[keep], return_inverse=True)
            count = np.bincount(inverse.ravel(), weights=np.repeat(count, len(steps))[keep]).astype(np.int64)
        best = max(best, int(count.sum()))
    return best


#: Bytes of sub-position offsets held at once (and cached): beyond, each
#: position's are made when read (d = 8 with two sub-cells: 256 positions of
#: 593k offsets, 9.7 GB held, 38 MB one at a time).
_HELD_OFFSETS = 1 << 28


class _LazyPositions(Sequence):
    """The ``(position, offsets)`` of every sub-position, in
    ``itertools.product`` order, each position's offsets made when read."""

    def __init__(self, d: int, eta: float, k: int) -> None:
        self.d, self.eta, self.k = d, eta, k
        self.order = list(itertools.product(range(k), repeat=d))

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        pos = self.order[i]
        return pos, position_offsets(self.d, self.eta, self.k, pos)


class SubcellLayout:
    """Sub-cells of a histogram grid.

    Attributes
    ----------
    grid : Grid
        The histogram grid (cell width w).
    k : int
        Sub-cells per cell and dimension.
    fine : Grid
        The grid of sub-cells (width w/k): the resolution of the spans.
    positions : list of (tuple, ndarray)
        Each sub-position and the offsets of its neighbourhood NB(q)
        (computed when first read: the bound test's sums walk them).
    kappa_q : int
        max |NB(q)|: the most cells within alpha of one sub-cell, the number
        of noisy terms in a sub-cell's sum (at most the grid's ``kappa``,
        the cells within alpha of a whole cell; equal to it when k = 1).
    n_events : int
        k^d |X|, the number of sums the union bound covers.
    """

    def __init__(self, grid: Grid, k: int = 1) -> None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"subcells must be an integer >= 1, got subcells={k!r}")
        self.grid = grid
        self.k = int(k)
        if self.k == 1:
            self.fine = grid
            self.kappa_q = grid.kappa
        else:
            if self.k**grid.d > 4096:
                raise ValueError(
                    f"subcells={k} gives {self.k**grid.d} sub-cells per cell in d={grid.d}; "
                    "use fewer sub-cells in high dimension"
                )
            self.fine = grid.subdivided(self.k)
            self.kappa_q = _kappa_q(grid.d, float(grid.eta), self.k)
        self.n_events = grid.n_cells * self.k**grid.d

    @functools.cached_property
    def positions(self) -> Sequence[tuple[tuple, np.ndarray | None]]:
        if self.k == 1:
            return [((0,) * self.grid.d, None)]
        d, eta, k = self.grid.d, float(self.grid.eta), self.k
        if self.kappa_q * k**d * d * 8 > _HELD_OFFSETS:
            return _LazyPositions(d, eta, k)
        return list(_sub_offsets(d, eta, k))

    @property
    def approx_ratio(self) -> float:
        return approximation_ratio(self.grid.eta, self.k)

    def fine_keys(self, coarse_keys: np.ndarray, pos: tuple[int, ...]) -> np.ndarray:
        """Keys (in ``fine``) of sub-cell ``pos`` of the given cells, inside the box."""
        if self.k == 1:
            return coarse_keys
        c = self.grid.decode(coarse_keys) * self.k + np.asarray(pos, dtype=np.int64)
        c = c[np.all(c < np.asarray(self.fine.shape), axis=1)]
        return self.fine.encode(c)
