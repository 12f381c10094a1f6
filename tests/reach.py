"""The true counts within reach of a model's core sub-cells: the measurable
side of the density test's guarantee (a core sub-cell with fewer than M*
points within its reach is a span in empty space). Shared by
tests/post/test_density_guarantee.py and tests/model/test_level_selection.py."""

from __future__ import annotations

import numpy as np

from dpdbscan.cells.subcells import SubcellLayout


def ub_of_core_subcells(model, grid, counts):
    """UB(q) = true counts over the cells at minimum distance < alpha of q."""
    layout = SubcellLayout(grid, model.spec.subcells)
    k = model.spec.subcells
    fc = model.grid.decode(model.core_keys)
    out = np.empty(fc.shape[0], dtype=np.int64)
    by_pos = {tuple(p): o for p, o in layout.positions}
    pad = np.pad(counts, grid.reach + 2)
    for i, c in enumerate(fc):
        X, pos = c // k, tuple(c % k)
        offs = grid.offsets if k == 1 else by_pos[pos]
        idx = X + offs + grid.reach + 2
        out[i] = pad[tuple(idx.T)].sum()
    return out
