"""Spans over a grid of (alpha, MinPts) from one release, and how much they
change between neighbouring grid points.

Everything here is post-processing of one :class:`NoisyHistogram` with
public parameters: one weighted-sum pass per alpha (a
:class:`~.density.DensityField`) serves every MinPts, and each (alpha,
MinPts) costs one threshold and one merge. The span partitions are compared
on the release's own sub-cells, weighted by their noisy mass, never on
points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..cells.grid import Grid, lookup
from ..cells.histogram import NoisyHistogram
from .coretests import density
from .merge import centre_merge
from .spans import SpanParams, build_spans


@dataclass(frozen=True)
class Partition:
    """The spans at one (alpha, MinPts), on the release's sub-cells.

    Attributes
    ----------
    alpha, min_samples : float, int
    keys : ndarray
        Sorted keys of the core sub-cells in the release's sub-cell grid
        (the same encoding for every alpha, so partitions compare directly).
    labels : ndarray
        Span id of each core sub-cell (numbered by smallest key).
    mass : ndarray
        Noisy mass of each core sub-cell: its cell's noisy count (negative
        read as 0) shared evenly among the cell's k^d sub-cells.
    threshold : float
        The largest core threshold MinPts + m(q) (density test) or the
        threshold on UB~ (bound test).
    """

    alpha: float
    min_samples: int
    keys: np.ndarray
    labels: np.ndarray
    mass: np.ndarray
    threshold: float

    @property
    def n_spans(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0

    @property
    def core_mass(self) -> float:
        """Noisy count in the core sub-cells (the mass of the spans)."""
        return float(self.mass.sum())

    def span_masses(self) -> np.ndarray:
        """Noisy mass of each span."""
        return np.bincount(self.labels, weights=self.mass, minlength=self.n_spans)


def sub_cell_mass(hist: NoisyHistogram, fine: Grid, keys: np.ndarray, k: int) -> np.ndarray:
    """Noisy mass of sub-cells (keys of ``fine``): max(x~_X, 0) / k^d of their cell X."""
    if keys.size == 0:
        return np.zeros(0)
    coarse = fine.decode(keys) // k
    grid = hist.grid
    if hist.kind == "dense":
        vals = hist.values[tuple(coarse.T)].astype(np.float64)
    else:
        vals = lookup(hist.released_keys, hist.values, grid.encode(coarse)).astype(np.float64)
    return np.maximum(vals, 0.0) / k**grid.d


def sweep(
    hist: NoisyHistogram, params: SpanParams, alphas: Sequence[float], min_samples: Sequence[int]
) -> dict[tuple[float, int], Partition]:
    """The spans at every (alpha, MinPts) of the grid, from the release ``hist``.

    ``alphas`` must be at least the release's resolution (the diagonal of its
    cells). Density test: one :func:`~.density.density_field` per alpha at
    the smallest MinPts, then a threshold and a merge per MinPts. Bound test:
    :func:`~.spans.build_spans` per pair.
    """
    base = hist.grid
    k = int(params.subcells)
    common = base.subdivided(k)
    ms = sorted({int(m) for m in min_samples})
    out: dict[tuple[float, int], Partition] = {}
    for alpha in sorted({float(a) for a in alphas}):
        h = hist.on_grid(base.at_alpha(alpha))
        if params.core == "density":
            field = density.density_field(h, ms[0], subcells=k, margin_rule=params.margin, beta=params.beta)
            keys_all = common.encode(field.fine.decode(field.keys))
            mass_all = sub_cell_mass(hist, common, keys_all, k)
            merge = centre_merge(field.fine, field.keys)  # neighbour lookups once per alpha
            last: tuple[np.ndarray, np.ndarray] | None = None
            for m in ms:
                sel = field.core_mask(m)
                # where the empty-space guard holds the threshold, several
                # MinPts have the same core cells: merge them once
                if last is None or not np.array_equal(sel, last[0]):
                    last = (sel, merge.labels(sel))
                labels = last[1]
                thr = float(field.thresholds(m).max())
                out[(alpha, m)] = Partition(alpha, m, keys_all[sel], labels, mass_all[sel], thr)
        else:
            for m in ms:
                spans = build_spans(h, replace(params, min_samples=m))
                keys = common.encode(spans.grid.decode(spans.core_keys))
                out[(alpha, m)] = Partition(
                    alpha, m, keys, spans.labels, sub_cell_mass(hist, common, keys, k), spans.threshold
                )
    return out


def agreement(a: Partition, b: Partition) -> float:
    """How alike two span partitions group the sub-cells that are core in
    both: the adjusted Rand index of their span labels there, each sub-cell
    weighted by its noisy mass.

    1 when the shared core sub-cells fall into spans the same way (spans that
    only grow or shrink), lower when spans split or merge, about 0 for
    unrelated groupings. Coverage (how much is core at all) is a separate
    number, the core mass. With no shared sub-cell, or one span on both
    sides, it is 1 when both partitions have the same number of spans, 0
    otherwise.
    """
    keys, ia, ib = np.intersect1d(a.keys, b.keys, assume_unique=True, return_indices=True)
    if keys.size == 0:
        return 1.0 if a.n_spans == b.n_spans else 0.0
    w = a.mass[ia]
    N = float(w.sum())
    la, lb = a.labels[ia], b.labels[ib]
    _, ra = np.unique(la, return_inverse=True)
    _, rb = np.unique(lb, return_inverse=True)
    nij = np.bincount(ra * (rb.max() + 1) + rb, weights=w)
    ai = np.bincount(ra, weights=w)
    bj = np.bincount(rb, weights=w)
    sij, sa, sb = float((nij**2).sum()), float((ai**2).sum()), float((bj**2).sum())
    if N <= 0:
        return 1.0
    expected = sa * sb / N**2
    top = 0.5 * (sa + sb) - expected
    if top <= 1e-12 * N**2:  # one span on both sides of the shared cells
        return 1.0 if ra.max() == rb.max() else 0.0
    return float((sij - expected) / top)


def stability(table: dict[tuple[float, int], Partition]) -> dict[tuple[float, int], float]:
    """Mean :func:`agreement` of each grid point's spans with those of its
    neighbours on the grid (the next smaller and larger alpha at the same
    MinPts, and the next smaller and larger MinPts at the same alpha).

    High where the spans sit on a plateau: small changes of either parameter
    leave them as they are, so the choice does not hinge on the exact value.
    """
    alphas = sorted({a for a, _ in table})
    ms = sorted({m for _, m in table})
    out = {}
    for (a, m), p in table.items():
        i, j = alphas.index(a), ms.index(m)
        near = [(alphas[i + di], m) for di in (-1, 1) if 0 <= i + di < len(alphas)]
        near += [(a, ms[j + dj]) for dj in (-1, 1) if 0 <= j + dj < len(ms)]
        vals = [agreement(p, table[q]) for q in near if q in table]
        out[(a, m)] = float(np.mean(vals)) if vals else math.nan
    return out


__all__ = ["Partition", "sweep", "agreement", "stability", "sub_cell_mass"]
