"""The spans at one (alpha, MinPts) as a partition of the release's sub-cells,
for comparing spans across a ladder of parameters (post-processing only)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cells.grid import Grid, lookup
from ..cells.histogram import NoisyHistogram
from ..exceptions import renamed


@dataclass(frozen=True)
class Partition:
    """The spans at one (alpha, MinPts), on the release's sub-cells.

    Attributes
    ----------
    eps, min_samples : float, int
        The radius (the paper's alpha; old attribute name ``alpha``) and MinPts.
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

    eps: float
    min_samples: int
    keys: np.ndarray
    labels: np.ndarray
    mass: np.ndarray
    threshold: float

    alpha = renamed("alpha", "eps")

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


__all__ = ["Partition", "sub_cell_mass"]
