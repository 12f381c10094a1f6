"""Outlines of unions of unit cells (2-D), for GeoJSON, pictures and maps.

A set of cells is outlined by its boundary edges: the cell sides that no
other cell of the set shares. Each is directed with the set on its left
(counter-clockwise around a single cell). At a vertex where two cells of the
set touch only at a corner the outline turns left, so the two cells lie on
different rings and rings never cross (the set counts as 4-connected, its
complement as 8-connected, as in digital topology). Where the complement
touches itself at such a corner (two holes, or a hole and the outside,
meeting at a point) the outline would pass the corner twice; it is cut
there into two rings that share the vertex, so every ring is simple, as the
OGC simple-features rules behind GeoJSON ask. Each 4-connected piece of the
set is one exterior ring (counter-clockwise) with its holes (clockwise), as
RFC 7946 asks. Vertices where the outline runs straight on are left out.
This is also how GEOS (shapely) represents the union of the cells' squares,
since a valid polygon has a connected interior and simple rings; the tests
use that union as their oracle (tests/geometry/test_outlines.py).

Everything is vectorised (:func:`outlines`): the successor of every edge is
found by one sorted lookup, the rings are the cycles of that permutation
(found by pointer jumping, about log2 of the longest ring rounds), and a
hole belongs to the exterior ring of the piece whose cells border it.
Many sets (the regions of all spans) are outlined in one call.

The order of the output is deterministic and follows the input's order:
edges are listed by side (bottom, right, top, left), then by cell in input
order; a vertex ranks by the first edge leaving it; a ring starts at its
vertex of lowest rank (at the first corner from there) and rings come in
that order; each polygon is an exterior ring followed by its holes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..cells.components import connected_components

# The side s of a cell (0 bottom, 1 right, 2 top, 3 left) is an edge running
# in direction s (0 east, 1 north, 2 west, 3 south); a left turn is s + 1.
_DIRS = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], dtype=np.int64)
_TAIL = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=np.int64)  # from the lower-left corner
_ACROSS = np.array([[0, -1], [1, 0], [0, 1], [-1, 0]], dtype=np.int64)  # neighbour across side s

_KEY_LIMIT = 1 << 62


@dataclass(frozen=True)
class Outlines:
    """The polygons of several cell sets ("groups"), in flat arrays.

    Attributes
    ----------
    vertices : ndarray of int64, shape (V, 2)
        Ring vertices in cell units (cell ``(i, j)`` is the unit square with
        lower-left corner ``(i, j)``); every ring is closed (its first vertex
        repeated at its end).
    ring_offsets : ndarray of int64, shape (R + 1,)
        Ring ``r`` is ``vertices[ring_offsets[r]:ring_offsets[r + 1]]``.
    polygon_offsets : ndarray of int64, shape (P + 1,)
        Polygon ``p`` is rings ``polygon_offsets[p]`` (its exterior) up to
        ``polygon_offsets[p + 1]`` (its holes).
    group_offsets : ndarray of int64, shape (G + 1,)
        Group ``g`` has polygons ``group_offsets[g]`` up to ``group_offsets[g + 1]``.
    """

    vertices: np.ndarray
    ring_offsets: np.ndarray
    polygon_offsets: np.ndarray
    group_offsets: np.ndarray

    @property
    def n_groups(self) -> int:
        return int(self.group_offsets.size - 1)

    def ring(self, r: int) -> np.ndarray:
        return self.vertices[self.ring_offsets[r] : self.ring_offsets[r + 1]]

    def polygons(self, group: int = 0) -> list[list[np.ndarray]]:
        """``[[exterior, hole, ...], ...]`` of one group (each ring a closed (k, 2) array)."""
        p0, p1 = int(self.group_offsets[group]), int(self.group_offsets[group + 1])
        return [
            [self.ring(r) for r in range(int(self.polygon_offsets[p]), int(self.polygon_offsets[p + 1]))]
            for p in range(p0, p1)
        ]


def cells_to_polygons(cells: ArrayLike) -> list[list[np.ndarray]]:
    """Polygons ``[[exterior, hole, ...], ...]`` in cell units for a set of cells.

    Each ring is a closed (k, 2) int64 array (see :func:`outlines`).
    """
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
    if cells.shape[0] == 0:
        return []
    return outlines(cells).polygons(0)


def outlines(cells: ArrayLike, groups: ArrayLike | None = None, n_groups: int | None = None) -> Outlines:
    """The outlines of the cells of each group, computed together.

    Parameters
    ----------
    cells : array of int, shape (n, 2)
        Integer cell coordinates. A cell repeated within a group counts once.
    groups : array of int, shape (n,), optional
        The group (e.g. span id, 0..n_groups-1) of each cell; one group by default.
    n_groups : int, optional
        Number of groups (default: largest group + 1); groups without cells
        get no polygon.
    """
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
    n = cells.shape[0]
    groups = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64).ravel()
    if groups.shape != (n,):
        raise ValueError(f"groups must have one entry per cell ({n}), got shape {groups.shape}")
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if n else 0
    if n and (groups.min() < 0 or groups.max() >= n_groups):
        raise ValueError("groups must lie in 0..n_groups-1")
    if n == 0:
        z = np.zeros(1, dtype=np.int64)
        return Outlines(np.zeros((0, 2), dtype=np.int64), z, z.copy(), np.zeros(n_groups + 1, np.int64))
    cx, w = _compact(cells[:, 0])
    cy, h = _compact(cells[:, 1])
    used = np.bincount(groups, minlength=n_groups) > 0
    present = np.flatnonzero(used)
    g = (np.cumsum(used) - 1)[groups]  # dense ids of the groups with cells
    if w * h >= _KEY_LIMIT:
        raise ValueError("cells span too large a range to outline")
    per_chunk = _KEY_LIMIT // (w * h)  # groups per chunk: keys (group, x, y) fit in int64
    parts = []
    for start in range(0, present.size, per_chunk):
        sel = np.flatnonzero((g >= start) & (g < start + per_chunk))
        parts.append(
            (present[start : start + per_chunk], _trace(cells[sel], g[sel] - start, cx[sel], cy[sel], w, h))
        )
    return _assemble(parts, n_groups)


def _compact(v: np.ndarray) -> tuple[np.ndarray, int]:
    """Coordinates 1..m-2 (with a free margin at 0 and m-1) that keep exactly
    which values are 1 apart, and m: small keys for any input range."""
    lo, hi = int(v.min()), int(v.max())
    if hi - lo + 3 < 1 << 31:
        return v - (lo - 1), hi - lo + 3
    u, inv = np.unique(v, return_inverse=True)
    step = np.ones(u.size, dtype=np.int64)
    step[1:] = np.where(np.diff(u) == 1, 1, 2)
    rank = np.cumsum(step)
    return rank[inv.ravel()], int(rank[-1]) + 2


def _lookup(sorted_keys: np.ndarray, order: np.ndarray, keys: np.ndarray):
    """(index into the unsorted array, hit) of each of ``keys``."""
    pos = np.searchsorted(sorted_keys, keys)
    pos = np.minimum(pos, sorted_keys.size - 1)
    return order[pos], sorted_keys[pos] == keys


def _trace(cells, g, cx, cy, w: int, h: int):
    """Rings of the groups ``g`` (dense, small) of one chunk: (vertices,
    ring lengths, ring group, ring is a hole, ring's piece)."""
    key = (g * w + cx) * h + cy
    order = np.argsort(key, kind="stable")
    skey = key[order]
    dup = np.zeros(key.size, dtype=bool)
    dup[order[1:][skey[1:] == skey[:-1]]] = True  # later copies of a cell
    if dup.any():
        keep = ~dup
        cells, g, key = cells[keep], g[keep], key[keep]
        order = np.argsort(key, kind="stable")
        skey = key[order]
    n = key.size

    # boundary edges in the documented order: by side, then by cell
    step = _ACROSS[:, 0] * h + _ACROSS[:, 1]
    nb_idx, nb_hit = [], []
    for s in range(4):
        idx, hit = _lookup(skey, order, key + step[s])
        nb_idx.append(idx)
        nb_hit.append(hit)
    cell = np.concatenate([np.flatnonzero(~nb_hit[s]) for s in range(4)])
    side = np.concatenate([np.full(int(np.count_nonzero(~nb_hit[s])), s, dtype=np.int64) for s in range(4)])
    E = cell.size
    tail_step = _TAIL[:, 0] * h + _TAIL[:, 1]
    dir_step = _DIRS[:, 0] * h + _DIRS[:, 1]
    tkey = key[cell] + tail_step[side]
    hkey = tkey + dir_step[side]

    # successor of each edge: the edge leaving its head; at a corner where
    # two cells touch (two edges leave), the left turn
    torder = np.argsort(tkey, kind="stable")  # per vertex, edges in list order
    stk = tkey[torder]
    p = np.searchsorted(stk, hkey)
    succ = torder[p]
    q = np.minimum(p + 1, E - 1)
    two = (p + 1 < E) & (stk[q] == hkey)
    alt = torder[q]
    left = (side + 1) % 4
    succ = np.where(two & (side[alt] == left), alt, succ)

    # rings: cycles of succ, each named by its (first vertex, first edge)
    first_out = torder[np.searchsorted(stk, tkey)]  # rank of each edge's tail vertex
    name = first_out * E + np.arange(E, dtype=np.int64)
    rkey = _cycle_min(name, succ)
    # A cycle through a corner twice (where the set's complement touches
    # itself, e.g. two holes meeting at a corner) is cut there into two
    # rings that share the vertex: rings stay simple, as OGC asks.
    pairs = np.flatnonzero(stk[1:] == stk[:-1])  # the two edges leaving a corner vertex
    o1, o2 = torder[pairs], torder[pairs + 1]
    twice = rkey[o1] == rkey[o2]
    if twice.any():
        pred = np.empty(E, dtype=np.int64)
        pred[succ] = np.arange(E)
        o1, o2 = o1[twice], o2[twice]
        a, b = pred[o1], pred[o2]
        succ[a], succ[b] = o2, o1
        rkey = _cycle_min(name, succ)
    start = rkey % E
    starts = np.flatnonzero(start == np.arange(E))
    rorder = np.lexsort((rkey[starts], g[cell[starts]]))
    R = starts.size
    rank = np.empty(E, dtype=np.int64)
    rank[starts[rorder]] = np.arange(R)
    ring = rank[start]

    # position of each edge along its ring, from its start
    pred = np.empty(E, dtype=np.int64)
    pred[succ] = np.arange(E)
    posn = _list_rank(succ, pred[starts])
    length = np.bincount(ring, minlength=R)
    offs = np.concatenate(([0], np.cumsum(length)[:-1]))
    seq = np.empty(E, dtype=np.int64)
    seq[offs[ring] + posn] = np.arange(E)

    # vertices: the corners (the direction changes), from the first one on
    corner = seq[side[seq] != side[pred[seq]]]
    verts = cells[cell[corner]] + _TAIL[side[corner]]
    rlen = np.bincount(ring[corner], minlength=R)

    # orientation by the shoelace formula on the corners (exact: relative ints)
    rel = (verts - verts.min(axis=0)).astype(np.float64) if verts.size else verts.astype(np.float64)
    rstart = np.concatenate(([0], np.cumsum(rlen)[:-1]))
    nxt = np.arange(verts.shape[0]) + 1
    last = rstart + rlen - 1
    nxt[last] = rstart
    cross = rel[:, 0] * rel[nxt, 1] - rel[nxt, 0] * rel[:, 1]
    area = np.add.reduceat(cross, rstart) if R else np.zeros(0)
    hole = area < 0

    # the 4-connected piece of each ring's cells (the cell left of its start
    # edge); without holes every exterior ring is a polygon of its own
    first_cell = cell[starts[rorder]]
    if hole.any():
        a = np.concatenate([np.flatnonzero(nb_hit[1]), np.flatnonzero(nb_hit[2])])
        b = np.concatenate([nb_idx[1][nb_hit[1]], nb_idx[2][nb_hit[2]]])
        piece = connected_components(n, a, b)[first_cell]
    else:
        piece = first_cell
    ring_group = g[first_cell]
    return verts, rlen, ring_group, hole, piece


def _cycle_min(values: np.ndarray, succ: np.ndarray) -> np.ndarray:
    """The minimum of ``values`` over the cycle of the permutation ``succ``
    through each element (windows doubling until nothing changes)."""
    m, jump = values.copy(), succ.copy()
    while True:
        nm = np.minimum(m, m[jump])
        if np.array_equal(nm, m):
            return m
        m, jump = nm, jump[jump]


def _list_rank(succ: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Steps from the start of each cycle of ``succ``, the cycles cut after
    ``ends`` (one per cycle): list ranking by pointer jumping."""
    jump = succ.copy()
    jump[ends] = ends
    dist = np.ones(succ.size, dtype=np.int64)  # steps to the cycle's end
    dist[ends] = 0
    while True:
        nj = jump[jump]
        if np.array_equal(nj, jump):
            break
        dist = dist + dist[jump]
        jump = nj
    # jump is now each edge's end; the end's successor is the start
    return dist[succ[jump]] - dist


def _assemble(parts, n_groups: int) -> Outlines:
    """One :class:`Outlines` from the chunks, polygons in group order:
    each exterior ring, in ring order, followed by its holes in ring order."""
    all_v, all_len, all_group, all_hole, all_poly, all_rank = [], [], [], [], [], []
    base = 0
    for present, (verts, rlen, rgroup, hole, piece) in parts:
        R = rlen.size
        rank = np.arange(R)
        # each piece has exactly one exterior ring; a hole joins its piece's
        ext = np.flatnonzero(~hole)
        owner = np.full(int(piece.max()) + 1 if R else 0, -1, dtype=np.int64)
        owner[piece[ext]] = ext
        twice = ext.size > 0 and int(np.bincount(piece[ext]).max()) > 1  # a piece with two exteriors
        if twice or np.any(owner[piece[hole]] < 0):
            raise AssertionError("outline tracing found a piece without exactly one exterior ring")
        parent = np.where(hole, owner[piece], rank)
        all_v.append(verts)
        all_len.append(rlen)
        all_group.append(present[rgroup])
        all_hole.append(hole)
        all_poly.append(parent + base)
        all_rank.append(rank + base)
        base += R
    verts = np.concatenate(all_v)
    rlen = np.concatenate(all_len)
    rgroup = np.concatenate(all_group)
    hole = np.concatenate(all_hole)
    parent = np.concatenate(all_poly)
    rank = np.concatenate(all_rank)
    # ring order: by the exterior's rank (group order first), exterior first, then holes
    order = np.lexsort((rank, hole, parent))
    rstart = np.concatenate(([0], np.cumsum(rlen)[:-1]))
    src_start, src_len = rstart[order], rlen[order]
    # closed rings: each ring's corners and its first corner again
    out_len = src_len + 1
    out_off = np.concatenate(([0], np.cumsum(out_len)))
    within = np.arange(int(out_off[-1]), dtype=np.int64) - np.repeat(out_off[:-1], out_len)
    within = np.where(within == np.repeat(src_len, out_len), 0, within)
    vertices = verts[np.repeat(src_start, out_len) + within]
    is_ext = ~hole[order]
    poly_first = np.flatnonzero(is_ext)
    polygon_offsets = np.append(poly_first, order.size).astype(np.int64)
    per_group = np.bincount(rgroup[order][poly_first], minlength=n_groups)
    group_offsets = np.concatenate(([0], np.cumsum(per_group))).astype(np.int64)
    return Outlines(vertices, out_off.astype(np.int64), polygon_offsets, group_offsets)


__all__ = ["Outlines", "outlines", "cells_to_polygons"]
