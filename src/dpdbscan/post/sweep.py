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

from ..grid import Grid, lookup
from ..histogram import NoisyHistogram
from . import density
from .merge import merge_centres
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


def sweep(hist: NoisyHistogram, params: SpanParams, alphas: Sequence[float],
          min_samples: Sequence[int]) -> dict[tuple[float, int], Partition]:
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
            field = density.density_field(h, ms[0], subcells=k, margin_rule=params.margin,
                                          beta=params.beta)
            keys_all = common.encode(field.fine.decode(field.keys))
            mass_all = sub_cell_mass(hist, common, keys_all, k)
            for m in ms:
                sel = field.core_mask(m)
                labels = merge_centres(field.fine, field.keys[sel])
                thr = float(field.thresholds(m).max())
                out[(alpha, m)] = Partition(alpha, m, keys_all[sel], labels, mass_all[sel], thr)
        else:
            for m in ms:
                spans = build_spans(h, replace(params, min_samples=m))
                keys = common.encode(spans.grid.decode(spans.core_keys))
                out[(alpha, m)] = Partition(alpha, m, keys, spans.labels,
                                            sub_cell_mass(hist, common, keys, k), spans.threshold)
    return out


def agreement(a: Partition, b: Partition) -> float:
    """Mass-weighted adjusted Rand index of two span partitions of the
    sub-cells that are core in either (non-core sub-cells form one class).

    1 for the same spans, about 0 for unrelated ones. Both on the release's
    sub-cells; the weights are the noisy masses. Two empty partitions agree.
    """
    keys = np.union1d(a.keys, b.keys)
    if keys.size == 0:
        return 1.0
    la, lb = _labels_on(a, keys), _labels_on(b, keys)
    w = np.maximum(_mass_on(a, keys), _mass_on(b, keys))
    N = float(w.sum())
    if N <= 0:
        return 1.0
    _, ia = np.unique(la, return_inverse=True)
    _, ib = np.unique(lb, return_inverse=True)
    nij = np.bincount(ia * (ib.max() + 1) + ib, weights=w)
    ai = np.bincount(ia, weights=w)
    bj = np.bincount(ib, weights=w)
    sij, sa, sb = float((nij**2).sum()), float((ai**2).sum()), float((bj**2).sum())
    expected = sa * sb / N**2
    top = 0.5 * (sa + sb) - expected
    if top <= 1e-12 * N**2:  # one class on both sides
        return 1.0
    return (sij - expected) / top


def _labels_on(p: Partition, keys: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(p.keys, keys)
    idx = np.minimum(idx, max(p.keys.size - 1, 0))
    hit = (p.keys[idx] == keys) if p.keys.size else np.zeros(keys.size, dtype=bool)
    return np.where(hit, p.labels[idx] if p.keys.size else -1, -1)


def _mass_on(p: Partition, keys: np.ndarray) -> np.ndarray:
    if p.keys.size == 0:
        return np.zeros(keys.size)
    idx = np.minimum(np.searchsorted(p.keys, keys), p.keys.size - 1)
    return np.where(p.keys[idx] == keys, p.mass[idx], 0.0)


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
