"""The outline tracer that dpdbscan.geometry.outlines had before issue 15 section 5
(pure Python edge chaining), kept as a reference for tests/test_geometry.py.

Known faults, which the tests work around and the new tracer fixes: a hole
can be dropped, because its test point is placed a quarter of the length of
the hole's first straight run into the material, which crosses a piece
thinner than that; and a ring that passes a corner twice is cut there only
when that corner is where the ring started.
"""

from __future__ import annotations

import numpy as np


def _boundary_edges(cells: np.ndarray):
    i, j = cells[:, 0], cells[:, 1]
    # four CCW edges per cell: (x0, y0, x1, y1)
    e = np.concatenate([
        np.stack([i, j, i + 1, j], 1), np.stack([i + 1, j, i + 1, j + 1], 1),
        np.stack([i + 1, j + 1, i, j + 1], 1), np.stack([i, j + 1, i, j], 1),
    ])
    # undirected key: sorted endpoints
    first = (e[:, 0:1] < e[:, 2:3]) | ((e[:, 0:1] == e[:, 2:3]) & (e[:, 1:2] < e[:, 3:4]))
    lo = np.where(first, e[:, :2], e[:, 2:])
    hi = np.where(first, e[:, 2:], e[:, :2])
    und = np.concatenate([lo, hi], axis=1)
    _, inv, cnt = np.unique(und, axis=0, return_inverse=True, return_counts=True)
    return e[cnt[inv.ravel()] == 1]


def _left(d):
    return (-d[1], d[0])


def _right(d):
    return (d[1], -d[0])


def _rings(edges: np.ndarray):
    out_edges: dict = {}
    for x0, y0, x1, y1 in edges.tolist():
        out_edges.setdefault((x0, y0), []).append((x1, y1))
    rings = []
    while out_edges:
        start = next(iter(out_edges))
        ring = [start]
        v = start
        d = None
        while True:
            targets = out_edges.get(v)
            if not targets:
                break
            nxt = targets[0]
            if d is not None and len(targets) > 1:
                prefs = [_left(d), d, _right(d)]

                def rank(t, v=v, prefs=prefs):
                    step = (t[0] - v[0], t[1] - v[1])
                    return prefs.index(step) if step in prefs else 3

                nxt = min(targets, key=rank)
            targets.remove(nxt)
            if not targets:
                del out_edges[v]
            d = (nxt[0] - v[0], nxt[1] - v[1])
            v = nxt
            ring.append(v)
            if v == start:
                break
        rings.append(_simplify(ring))
    return rings


def _simplify(ring):
    """Drop vertices where the direction does not change; keep the ring closed."""
    pts = ring[:-1]
    n = len(pts)
    keep = []
    for k in range(n):
        a, b, c = pts[k - 1], pts[k], pts[(k + 1) % n]
        if (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]) != 0:
            keep.append(b)
    if not keep:
        keep = pts
    return keep + [keep[0]]


def _area(ring) -> float:
    r = np.asarray(ring, dtype=np.float64)
    return 0.5 * float(np.sum(r[:-1, 0] * r[1:, 1] - r[1:, 0] * r[:-1, 1]))


def _contains(ring, pt) -> bool:
    r = np.asarray(ring, dtype=np.float64)
    x, y = pt
    x0, y0, x1, y1 = r[:-1, 0], r[:-1, 1], r[1:, 0], r[1:, 1]
    crosses = ((y0 > y) != (y1 > y)) & (x < (x1 - x0) * (y - y0) / np.where(y1 != y0, y1 - y0, 1) + x0)
    return bool(np.count_nonzero(crosses) % 2)


def cells_to_polygons(cells: np.ndarray):
    """Polygons ``[[exterior, hole, ...], ...]`` in cell units for a set of cells."""
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
    if cells.shape[0] == 0:
        return []
    rings = _rings(_boundary_edges(cells))
    outers = [r for r in rings if _area(r) > 0]
    holes = [r for r in rings if _area(r) < 0]
    polys = [[r] for r in outers]
    areas = [_area(r) for r in outers]
    for h in holes:
        (x0, y0), (x1, y1) = h[0], h[1]
        d = (x1 - x0, y1 - y0)
        lft = _left(d)  # material lies to the left of a hole's edges
        pt = (x0 + d[0] * 0.5 + lft[0] * 0.25, y0 + d[1] * 0.5 + lft[1] * 0.25)
        best = None
        for k, r in enumerate(outers):
            if _contains(r, pt) and (best is None or areas[k] < areas[best]):
                best = k
        if best is not None:
            polys[best].append(h)
    return polys
