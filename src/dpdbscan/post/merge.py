"""Merging core cells into spans: connected components of the graph joining
core cells at minimum distance < alpha (offsets in NB).

Spans are numbered canonically: by the smallest cell key they contain.

With int64 keys, the offsets of NB that are contiguous in the last dimension
form one key interval per run, and the core cells a cell reaches through one
run are consecutive in the sorted keys. Joining the cell to the first of them
and each of them to the next gives the same components as joining it to all
of them (they are all its neighbours), with two binary searches per run
instead of one per offset, and about ``runs * m`` edges instead of
``kappa * m / 2``.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..grid import offset_runs, search_keys


def merge_cells(grid, core_keys: np.ndarray) -> np.ndarray:
    """Span label of each core cell (``core_keys`` sorted, unique)."""
    m = core_keys.size
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if grid.wide:
        return _merge_by_offsets(grid, core_keys)
    # Runs of positive offsets (lexicographically > 0): NB is symmetric, so
    # they find every edge once.
    src, dst = [], []
    chain = np.zeros(m + 1, dtype=np.int64)  # difference array over links j -> j+1
    for prefix, lo, hi in offset_runs(grid.offsets):
        nz = np.flatnonzero(prefix)
        if nz.size and prefix[nz[0]] < 0:
            continue
        if not nz.size:
            lo = max(lo, 1)
            if lo > hi:
                continue
        base = grid.key_delta(np.append(prefix, 0))
        a = np.searchsorted(core_keys, core_keys + (base + lo), side="left")
        b = np.searchsorted(core_keys, core_keys + (base + hi), side="right")
        hit = np.flatnonzero(b > a)
        src.append(hit)
        dst.append(a[hit])
        many = hit[b[hit] - a[hit] > 1]
        chain += np.bincount(a[many], minlength=m + 1)
        chain -= np.bincount(b[many] - 1, minlength=m + 1)
    linked = np.cumsum(chain[:-1])[:-1] > 0  # core cell j joined to j + 1
    # consecutive linked cells form groups; the remaining edges join groups
    group = np.concatenate(([0], np.cumsum(~linked)))
    r = group[np.concatenate(src)] if src else np.zeros(0, np.int64)
    c = group[np.concatenate(dst)] if dst else np.zeros(0, np.int64)
    keep = r != c
    n_groups = int(group[-1]) + 1
    graph = coo_matrix((np.ones(int(keep.sum()), dtype=np.int8), (r[keep], c[keep])),
                       shape=(n_groups, n_groups))
    _, labels = connected_components(graph, directed=False)
    return canonical_labels(labels[group])


def _merge_by_offsets(grid, core_keys: np.ndarray) -> np.ndarray:
    """One lookup per positive offset (packed keys of huge universes)."""
    m = core_keys.size
    offsets = grid.offsets
    positive = [o for o in offsets if tuple(o) > (0,) * grid.d]
    rows, cols = [], []
    coords = grid.decode(core_keys)
    for o in positive:
        idx, hit = search_keys(core_keys, grid.encode(coords + o))
        rows.append(np.flatnonzero(hit))
        cols.append(idx[hit])
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
