"""Labels from released spans: which span a point falls in.

Needs only the spans (a grid, the sorted keys of the core cells and their
span ids), never the training data, so labelling any point costs no privacy.

The *region* of a span is the set of cells of the span grid that ``predict``
maps to it: its core cells, and, with ``border > 0``, every other cell whose
centre lies within ``border`` of a core cell of the span and nearer to it
than to any other span's (ties go to the smaller span id; DBSCAN's border
points). The distance is measured to the core cell itself (``to="cells"``,
the bound test) or to its centre (``to="centres"``, the density test, where
the centres stand in for DBSCAN's core points). A point takes the span whose
region holds its cell, so ``predict``, the GeoJSON and the pictures show the
same regions, cell for cell. Points outside the box, or with NaN/inf
coordinates, are noise (-1).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .grid import Grid, search_keys


def span_regions(grid: Grid, core_keys: np.ndarray, labels: np.ndarray, border: float = 0.0,
                 to: str = "cells") -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys of every cell ``predict`` maps to a span, and that span.

    The core cells, plus the cells within ``border`` of one (see the module
    docstring), each labelled by the border rule evaluated at its centre.
    """
    if border <= 0 or core_keys.size == 0:
        return core_keys, labels
    offsets = np.array(region_offsets(grid.d, border / grid.width, to), dtype=np.int64)
    coords = grid.decode(core_keys)
    parts = []
    step = max(1, (1 << 22) // max(len(offsets), 1))  # bounded memory per block of core cells
    for a in range(0, coords.shape[0], step):
        c = (coords[a:a + step, None, :] + offsets[None, :, :]).reshape(-1, grid.d)
        parts.append(grid.encode(c[grid.valid(c)]))
    cand = np.unique(np.concatenate(parts))
    idx, hit = search_keys(core_keys, cand)
    lab = np.full(cand.size, -1, dtype=np.int64)
    lab[hit] = labels[idx[hit]]
    miss = np.flatnonzero(~hit)
    if miss.size:
        lab[miss] = border_labels(grid, core_keys, labels, grid.decode(cand[miss]), border, to)
    keep = lab >= 0
    return cand[keep], lab[keep]


@functools.lru_cache(maxsize=32)
def region_offsets(d: int, radius_cells: float, to: str) -> tuple[tuple[int, ...], ...]:
    """Offsets n of the cells whose centre can be within ``radius_cells`` (in
    cell widths) of core cell 0: of the cell itself (``to="cells"``:
    sum max(|n_i| - 1/2, 0)^2 <= r^2) or of its centre (sum n_i^2 <= r^2)."""
    R = int(math.floor(radius_cells + 0.5)) + 1
    lim = radius_cells * radius_cells * (1 + TIE_TOLERANCE)  # a superset; border_labels decides
    if to == "cells":
        keep = [o for o in itertools.product(range(-R, R + 1), repeat=d)
                if sum(max(abs(x) - 0.5, 0.0) ** 2 for x in o) <= lim]
    else:
        keep = [o for o in itertools.product(range(-R, R + 1), repeat=d)
                if sum(x * x for x in o) <= lim]
    return tuple(keep)


def predict_spans(grid: Grid, region_keys: np.ndarray, region_labels: np.ndarray,
                  X: np.ndarray) -> np.ndarray:
    """Span id of each row of the float array ``X`` (n, d), -1 for noise: the
    span whose region (:func:`span_regions`) holds the point's cell."""
    out = np.full(X.shape[0], -1, dtype=np.int64)
    if X.shape[0] == 0 or region_keys.size == 0:
        return out
    with np.errstate(invalid="ignore"):
        inside = grid.inside(X)
    idx, hit = search_keys(region_keys, grid.keys_of_points(X[inside]))
    lab = np.full(idx.size, -1, dtype=np.int64)
    lab[hit] = region_labels[idx[hit]]
    out[inside] = lab
    return out


#: Distances within this relative tolerance count as equal (a tie), so that
#: the rule "ties go to the smaller span id" survives floating-point rounding.
TIE_TOLERANCE = 1e-9


def border_labels(grid: Grid, core_keys: np.ndarray, labels: np.ndarray, cells: np.ndarray,
                  border: float, to: str = "cells") -> np.ndarray:
    """Span of the nearest core cell (``to="cells"``) or core cell centre
    (``to="centres"``) within ``border`` of the centre of each of the given
    cells (integer coordinates), else -1.

    Ties (distances equal up to :data:`TIE_TOLERANCE`) go to the smaller span
    id. Distances are measured in cell widths between lattice points (cell
    centres are at half-integers), so equal distances compute equal.
    """
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, grid.d)
    u = cells + 0.5  # the centres, in cell units
    radius = border / grid.width
    best = np.full(cells.shape[0], np.inf)
    lab = np.full(cells.shape[0], -1, dtype=np.int64)
    for o in region_offsets(grid.d, radius, to):
        t = cells + np.asarray(o, dtype=np.int64)
        ok = np.flatnonzero(grid.valid(t))
        if ok.size == 0:
            continue
        idx, hit = search_keys(core_keys, grid.encode(t[ok]))
        rows = ok[hit]
        tr, ur = t[rows].astype(np.float64), u[rows]
        if to == "cells":
            gap = np.maximum(np.maximum(tr - ur, ur - (tr + 1.0)), 0.0)
        else:
            gap = np.abs(ur - (tr + 0.5))
        # sorted squares: the sum does not depend on which axis is which
        dist = np.sqrt(np.sort(gap * gap, axis=1).sum(axis=1))
        span = labels[idx[hit]]
        b = best[rows]
        tie = np.isfinite(b) & (np.abs(dist - b) <= TIE_TOLERANCE * np.maximum(b, 1.0))
        # the density test's border includes its radius (DBSCAN: within eps);
        # the bound test's excludes it, as the paper's "< alpha"
        inside = (dist <= radius * (1 + TIE_TOLERANCE) if to == "centres"
                  else dist < radius * (1 - TIE_TOLERANCE))
        better = inside & (((dist < b) & ~tie) | (tie & (span < lab[rows])))
        best[rows[better]] = np.minimum(dist[better], best[rows[better]])
        lab[rows[better]] = span[better]
    return lab


__all__ = ["span_regions", "predict_spans", "border_labels", "region_offsets"]
