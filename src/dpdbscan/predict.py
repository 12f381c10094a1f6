"""Labels from released spans: which span a point falls in.

Needs only the spans (a grid, the sorted keys of the core cells and their
span ids), never the training data, so labelling any point costs no privacy.
A point is labelled with the span of the core cell it lies in; with
``border > 0`` a point in no core cell takes the span of the nearest core cell
within ``border`` (DBSCAN's border points). Points outside the box, or with
NaN/inf coordinates, are noise (-1).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .grid import Grid, search_keys


def predict_spans(grid: Grid, core_keys: np.ndarray, labels: np.ndarray, X: np.ndarray,
                  border: float = 0.0) -> np.ndarray:
    """Span id of each row of the float array ``X`` (n, d), -1 for noise."""
    out = np.full(X.shape[0], -1, dtype=np.int64)
    if X.shape[0] == 0 or core_keys.size == 0:
        return out
    with np.errstate(invalid="ignore"):
        inside = grid.inside(X)
    P = X[inside]
    idx, hit = search_keys(core_keys, grid.keys_of_points(P))
    lab = np.full(P.shape[0], -1, dtype=np.int64)
    lab[hit] = labels[idx[hit]]
    if border > 0 and not hit.all():
        miss = np.flatnonzero(~hit)
        lab[miss] = border_labels(grid, core_keys, labels, P[miss], border)
    out[inside] = lab
    return out


#: Distances within this relative tolerance count as equal (a tie), so that
#: the rule "ties go to the smaller span id" survives floating-point rounding.
TIE_TOLERANCE = 1e-9


def border_labels(grid: Grid, core_keys: np.ndarray, labels: np.ndarray, P: np.ndarray,
                  border: float) -> np.ndarray:
    """Span of the nearest core cell within ``border`` of each point, else -1.

    Ties (distances equal up to :data:`TIE_TOLERANCE`) go to the smaller span
    id. Distances are measured in cell widths from the point's position in
    the grid, computed once per point, so that two cells at the same true
    distance get the same computed distance up to rounding. Uses only the
    released cells.
    """
    c = grid.coords(P)
    u = (P - grid.lower) / grid.width  # the point in cell units
    radius = border / grid.width
    best = np.full(P.shape[0], np.inf)
    lab = np.full(P.shape[0], -1, dtype=np.int64)
    for o in ball_offsets(grid.d, radius):
        t = c + o
        ok = np.flatnonzero(grid.valid(t))
        if ok.size == 0:
            continue
        idx, hit = search_keys(core_keys, grid.encode(t[ok]))
        rows = ok[hit]
        tr, ur = t[rows].astype(np.float64), u[rows]
        gap = np.maximum(np.maximum(tr - ur, ur - (tr + 1.0)), 0.0)
        # sorted squares: the sum does not depend on which axis is which
        dist = np.sqrt(np.sort(gap * gap, axis=1).sum(axis=1))
        span = labels[idx[hit]]
        b = best[rows]
        tie = np.isfinite(b) & (np.abs(dist - b) <= TIE_TOLERANCE * np.maximum(b, 1.0))
        better = (dist < radius) & (((dist < b) & ~tie) | (tie & (span < lab[rows])))
        best[rows[better]] = np.minimum(dist[better], best[rows[better]])
        lab[rows[better]] = span[better]
    return lab


@functools.lru_cache(maxsize=32)
def ball_offsets(d: int, radius_cells: float) -> tuple[np.ndarray, ...]:
    """Integer offsets of cells at minimum distance < radius (in cell widths),
    nearest first."""
    R = int(math.ceil(radius_cells))
    steps = range(-R, R + 1)
    offs = [o for o in itertools.product(steps, repeat=d)
            if sum(max(abs(x) - 1, 0) ** 2 for x in o) < radius_cells**2]
    offs.sort(key=lambda o: sum(x * x for x in o))
    return tuple(np.array(o, dtype=np.int64) for o in offs)


__all__ = ["predict_spans", "border_labels", "ball_offsets"]
