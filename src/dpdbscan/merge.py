"""Merging core cells into spans: connected components of the graph joining
core cells at minimum distance < alpha (offsets in NB).

Spans are numbered canonically: by the smallest cell key they contain.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def merge_cells(grid, core_keys: np.ndarray) -> np.ndarray:
    """Span label of each core cell (``core_keys`` sorted, unique)."""
    m = core_keys.size
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = grid.offsets
    # NB is symmetric: half of the non-zero offsets find every edge once.
    positive = [o for o in offsets if tuple(o) > (0,) * grid.d]
    rows, cols = [], []
    coords = grid.decode(core_keys) if grid.wide else None
    for o in positive:
        target = grid.encode(coords + o) if grid.wide else core_keys + grid.key_delta(o)
        idx = np.searchsorted(core_keys, target)
        idx_c = np.minimum(idx, m - 1)
        hit = core_keys[idx_c] == target
        rows.append(np.flatnonzero(hit))
        cols.append(idx_c[hit])
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    graph = coo_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(m, m))
    _, labels = connected_components(graph, directed=False)
    return canonical_labels(labels)


def canonical_labels(labels: np.ndarray) -> np.ndarray:
    """Renumber so that span ids follow the first (smallest-key) cell of each span."""
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first, kind="stable")
    remap = np.empty(order.size, dtype=np.int64)
    remap[order] = np.arange(order.size)
    # labels of connected_components are 0..k-1
    uniq = np.unique(labels)
    lut = np.empty(uniq.max() + 1, dtype=np.int64)
    lut[uniq] = remap
    return lut[labels]
