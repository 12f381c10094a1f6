"""The per-record rule applied to points before they are counted.

Rows with NaN or inf are dropped; every other point is clipped into the public
box ``[grid.lower, grid.upper]``. Each record's fate depends on that record
alone, so neighbouring datasets stay neighbouring (or become equal) and the
count vector keeps l1-sensitivity 1 (docs/privacy.md). Every backend applies
this rule, partition by partition where the data are split.
"""

from __future__ import annotations

import numpy as np

from ..cells.grid import Grid


def clean_points(grid: Grid, X: np.ndarray, *, clip: bool = True) -> np.ndarray:
    """Drop rows with NaN/inf and clip the rest into the public box.

    ``clip=False`` skips the copy for callers whose cell keys already clip
    coordinates into the box (:meth:`Grid.keys_of_points` does).
    """
    if not np.isfinite(X).all():
        X = X[np.isfinite(X).all(axis=1)]
    return np.clip(X, grid.lower, grid.upper) if clip else X


__all__ = ["clean_points"]
