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

import numpy as np

from ..cells.histogram import NoisyHistogram
from ..params.specs import SpanSpec
from .coretests import core_test
from .partition import Partition, sub_cell_mass


def sweep(
    hist: NoisyHistogram, spec: SpanSpec, alphas: Sequence[float], min_samples: Sequence[int]
) -> dict[tuple[float, int], Partition]:
    """The spans at every (alpha, MinPts) of the grid, from the release ``hist``.

    ``alphas`` must be at least the release's resolution (the diagonal of its
    cells). Each core test serves the whole ladder its own way
    (:meth:`~.coretests.coretest.CoreTest.ladder`): the density test with one
    weighted-sum pass per alpha for every MinPts.
    """
    return core_test(spec.core).ladder(hist, spec, alphas, min_samples)


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
