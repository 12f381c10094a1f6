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
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..cells.grid import Grid, offsets_within, search_keys
from ..cells.pairs import CellIndex, walk_wanted


def outside_note(grid: Grid, X: np.ndarray) -> str | None:
    """The note when points were given but none lies inside the model's box
    (so every label is noise, most likely from a wrong column order or file),
    else None. It reads the points: a private note for their owner."""
    if X.shape[0] == 0:
        return None
    inside = np.all((X >= grid.lower) & (X <= grid.upper), axis=1)  # NaN compares False
    if inside.any():
        return None
    return (
        f"no point of the {X.shape[0]:,} given lies inside the model's bounds, so every label is "
        "noise (-1): check the columns' order (longitude first for a geographic model) and the file"
    )


def degrees_given(metadata: Mapping[str, Any], grid: Grid, X: np.ndarray) -> str | None:
    """The error when a geographic model (coordinates: km of its projection)
    is given longitude/latitude: no point lies in its km box and every
    finite one lies in its box in degrees. None otherwise. Without this the
    answer is silently all noise."""
    if metadata.get("projection") is None or X.shape[0] == 0 or X.shape[1] != 2:
        return None
    deg = metadata.get("bounds_degrees") or {}
    if "lower" not in deg or "upper" not in deg:
        return None
    finite = X[np.all(np.isfinite(X), axis=1)]
    if finite.shape[0] == 0 or np.any(np.all((finite >= grid.lower) & (finite <= grid.upper), axis=1)):
        return None
    lo, hi = np.asarray(deg["lower"], dtype=np.float64), np.asarray(deg["upper"], dtype=np.float64)
    if not np.all((finite >= lo) & (finite <= hi)):
        return None
    return (
        "this is a geographic model: predict takes km east and north of its projection's origin, and "
        "these points look like longitude/latitude in degrees (all inside its box in degrees, none "
        "inside its box in km); give degrees to dpdbscan.predict_lonlat(model, lonlat) or to "
        "'dpdbscan predict', which read longitude, latitude"
    )


def span_regions(
    grid: Grid, core_keys: np.ndarray, labels: np.ndarray, border: float = 0.0, to: str = "cells"
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys of every cell ``predict`` maps to a span, and that span.

    The core cells, plus the cells within ``border`` of one (see the module
    docstring), each labelled by the border rule evaluated at its centre.
    """
    if border <= 0 or core_keys.size == 0:
        return core_keys, labels
    if not grid.wide and grid.key_space <= RASTER_KEYS and labels.max() < np.iinfo(np.int32).max:
        return _regions_by_shells(grid, core_keys, labels, border, to)
    offsets = np.array(region_offsets(grid.d, border / grid.width, to), dtype=np.int64)
    coords = grid.decode(core_keys)
    core_mark = _bitmap(grid, core_keys)
    cand = _near_keys(grid, coords, offsets)
    if core_mark is not None:
        hit = core_mark[cand]
        idx = np.searchsorted(core_keys, cand)
    else:
        idx, hit = search_keys(core_keys, cand)
    lab = np.full(cand.size, -1, dtype=np.int64)
    lab[hit] = labels[idx[hit]]
    miss = np.flatnonzero(~hit)
    if miss.size:
        lab[miss] = border_labels(
            grid, core_keys, labels, grid.decode(cand[miss]), border, to, core_mark=core_mark
        )
    keep = lab >= 0
    return cand[keep], lab[keep]


def span_regions_each(
    grid: Grid, core_keys: np.ndarray, labels: np.ndarray, borders: np.ndarray, to: str = "centres"
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`span_regions` with each span's own border radius
    (``borders[span id]``; spans taken at their own eps): a cell goes to the
    span of the nearest core cell centre within that span's radius, ties to
    the smaller span id. With one radius for every span it is
    :func:`span_regions`. Only ``to="centres"`` (the density test)."""
    radii = np.unique(np.asarray(borders, dtype=np.float64))
    if radii.size <= 1:
        return span_regions(grid, core_keys, labels, float(radii[0]) if radii.size else 0.0, to)
    parts = []
    for r in radii.tolist():
        mine = np.isin(labels, np.flatnonzero(borders == r))
        if mine.any():
            parts.append(span_regions(grid, core_keys[mine], labels[mine], r, to))
    keys = np.concatenate([k for k, _ in parts])
    labs = np.concatenate([lab for _, lab in parts])
    order = np.argsort(keys, kind="stable")
    keys, labs = keys[order], labs[order]
    return _nearest_claim(grid, core_keys, labels, keys, labs, to)


def _nearest_claim(
    grid: Grid, core_keys: np.ndarray, labels: np.ndarray, keys: np.ndarray, labs: np.ndarray, to: str
) -> tuple[np.ndarray, np.ndarray]:
    """Of the claims (sorted ``keys``, repeated where several spans' regions
    reach a cell, and the claiming ``labs``), each cell's nearest: the span
    whose nearest core centre is nearest the cell's centre (distances in
    cell widths), ties (:data:`TIE_TOLERANCE`) to the smaller span id."""
    if to != "centres":
        raise ValueError("spans of their own radius are the density test's (distances to core centres)")
    uniq, start, count = np.unique(keys, return_index=True, return_counts=True)
    if not np.any(count > 1):
        return keys, labs
    # lazy: scipy.spatial is needed only by models with spans of several eps
    from scipy.spatial import cKDTree

    many = np.repeat(count > 1, count)
    ck, cl = keys[many], labs[many]
    pts = grid.decode(ck).astype(np.float64)
    dist = np.empty(ck.size)
    for span in np.unique(cl).tolist():
        at = cl == span
        tree = cKDTree(grid.decode(core_keys[labels == span]).astype(np.float64))
        dist[at] = tree.query(pts[at])[0]
    group = np.repeat(np.arange(int((count > 1).sum())), count[count > 1])
    best = np.full(group.max() + 1, np.inf)
    np.minimum.at(best, group, dist)
    near = dist <= best[group] + TIE_TOLERANCE * np.maximum(best[group], 1.0)
    win = np.full(best.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(win, group[near], cl[near])
    out = labs[start].copy()
    out[count > 1] = win
    return uniq, out


def regions_are_cheap(grid: Grid) -> bool:
    """Whether :func:`span_regions` runs on a raster of the key space (fast
    whatever the border region's size) rather than cell by cell."""
    return not grid.wide and grid.key_space <= RASTER_KEYS


def predict_cells(
    grid: Grid,
    core_keys: np.ndarray,
    labels: np.ndarray,
    X: np.ndarray,
    border: float = 0.0,
    to: str = "cells",
    keep: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """:func:`predict_spans` over :func:`span_regions` without building the
    regions: the border rule at the points' own cells only. A cell's label
    does not depend on the other cells, so this is the same labelling; it
    is the cheaper one when the regions hold far more cells than the points
    do (in high dimension a core cell's border region has up to millions).
    ``keep``: which of the labelled cells (sorted keys) the regions keep, if
    they are filtered after :func:`span_regions` (the others read -1)."""
    out = np.full(X.shape[0], -1, dtype=np.int64)
    if X.shape[0] == 0 or core_keys.size == 0:
        return out
    with np.errstate(invalid="ignore"):
        inside = grid.inside(X)
    cells, inv = np.unique(grid.keys_of_points(X[inside]), return_inverse=True)
    lab = _cell_labels(grid, core_keys, labels, cells, border, to)
    if keep is not None:
        sel = np.flatnonzero(lab >= 0)
        lab[sel[~keep(cells[sel])]] = -1
    out[inside] = lab[inv.reshape(-1)]
    return out


def _cell_labels(
    grid: Grid, core_keys: np.ndarray, labels: np.ndarray, cells: np.ndarray, border: float, to: str
) -> np.ndarray:
    """The span of each of the sorted keys ``cells``: its own if core, else
    the border rule's (:func:`border_labels`), -1 for none."""
    idx, hit = search_keys(core_keys, cells)
    lab = np.full(cells.size, -1, dtype=np.int64)
    lab[hit] = labels[idx[hit]]
    miss = np.flatnonzero(~hit)
    if border > 0 and miss.size:
        lab[miss] = border_labels(grid, core_keys, labels, grid.decode(cells[miss]), border, to)
    return lab


def predict_cells_each(
    grid: Grid,
    core_keys: np.ndarray,
    labels: np.ndarray,
    X: np.ndarray,
    borders: np.ndarray,
    to: str = "centres",
    keep: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """:func:`predict_cells` with each span's own border radius: the labels
    of :func:`span_regions_each` at the points' own cells."""
    out = np.full(X.shape[0], -1, dtype=np.int64)
    if X.shape[0] == 0 or core_keys.size == 0:
        return out
    with np.errstate(invalid="ignore"):
        inside = grid.inside(X)
    cells, inv = np.unique(grid.keys_of_points(X[inside]), return_inverse=True)
    claims, labs = [], []
    for r in np.unique(np.asarray(borders, dtype=np.float64)).tolist():
        mine = np.isin(labels, np.flatnonzero(borders == r))
        if not mine.any():
            continue
        lab = _cell_labels(grid, core_keys[mine], labels[mine], cells, r, to)
        claims.append(cells[lab >= 0])
        labs.append(lab[lab >= 0])
    keys = np.concatenate(claims)
    lab_all = np.concatenate(labs)
    order = np.argsort(keys, kind="stable")
    keys, lab_all = _nearest_claim(grid, core_keys, labels, keys[order], lab_all[order], to)
    if keep is not None:
        lab_all = np.where(keep(keys), lab_all, -1)
    idx, hit = search_keys(keys, cells)
    lab = np.full(cells.size, -1, dtype=np.int64)
    lab[hit] = lab_all[idx[hit]]
    out[inside] = lab[inv.reshape(-1)]
    return out


#: Grids with int64 keys up to this many keys mark cells in a bitmap (one
#: byte a key, 64 MB at most) instead of sorting and searching key lists.
BITMAP_KEYS = 1 << 26

#: Grids with int64 keys up to this many keys find regions on a raster of
#: span ids (4 bytes a key, 128 MB at most).
RASTER_KEYS = 1 << 25


def offset_distances(d: int, radius_cells: float, to: str) -> tuple[np.ndarray, np.ndarray]:
    """The offsets of :func:`region_offsets` and the distance, in cell widths,
    from a cell's centre to the core cell (``to="cells"``) or core centre
    (``"centres"``) at that offset: computed as :func:`border_labels` does,
    so the two agree to the last bit."""
    offs = np.array(region_offsets(d, radius_cells, to), dtype=np.int64).reshape(-1, d)
    o = offs.astype(np.float64)
    gap = np.maximum(np.abs(o) - 0.5, 0.0) if to == "cells" else np.abs(o)
    return offs, np.sqrt(np.sort(gap * gap, axis=1).sum(axis=1))


def _regions_by_shells(
    grid: Grid, core_keys: np.ndarray, labels: np.ndarray, border: float, to: str
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`span_regions` on a raster of span ids over the key space.

    The border rule gives a cell the span of the nearest core cell (or
    centre) within ``border``, ties to the smaller id. The distance to the
    core cell at offset ``o`` depends on ``o`` alone, so the offsets are
    taken in shells of equal distance, nearest first: a cell not yet
    labelled takes the smallest span id among the core cells of the first
    shell that reaches it. Equal to :func:`border_labels` cell for cell.

    That walk costs the core cells times the ball's offsets; where the
    separable passes over the window cost less (dense cores in high
    dimension, :func:`_passes_cheaper`) they give the same raster instead.
    """
    radius = border / grid.width
    step, corner, size = _passes_window(grid, core_keys, radius, to)
    if _passes_cheaper(grid.d, core_keys.size, radius, to, step, size):
        return _regions_by_passes(grid, core_keys, labels, radius, to, step, corner, size)
    offs, dist = offset_distances(grid.d, radius, to)
    inside = dist <= radius * (1 + TIE_TOLERANCE) if to == "centres" else dist < radius * (1 - TIE_TOLERANCE)
    offs, dist = offs[inside], dist[inside]
    order = np.argsort(dist, kind="stable")
    offs, dist = offs[order], dist[order]
    # The raster covers the window of cells the offsets reach from the core
    # cells, not the whole key space: fewer pages to fill (first touching a
    # page is what a large raster costs), and 2-byte ids when they fit.
    coords = grid.decode(core_keys)
    reach = np.abs(offs).max(axis=0) if offs.size else np.zeros(grid.d, dtype=np.int64)
    lo = np.maximum(coords.min(axis=0) - reach, 0)
    shape = np.minimum(coords.max(axis=0) + reach + 1, np.asarray(grid.shape, dtype=np.int64)) - lo
    strides = np.cumprod(np.r_[1, shape[:0:-1]])[::-1].astype(np.int64)  # C order in the window
    ids = np.int16 if int(labels.max()) < np.iinfo(np.int16).max else np.int32
    free = np.iinfo(ids).max
    raster = np.full(int(np.prod(shape)), free, dtype=ids)
    wkeys = (coords - lo) @ strides if grid.d > 1 else (coords - lo)[:, 0]
    raster[wkeys] = labels
    lab = labels.astype(ids)
    cols = [np.ascontiguousarray(coords[:, i]) for i in range(grid.d)]
    cmin, cmax = coords.min(axis=0), coords.max(axis=0)
    a = 0
    while a < offs.shape[0]:
        # a shell: distances equal up to the tie tolerance of border_labels
        b = a + 1
        while b < offs.shape[0] and dist[b] - dist[a] <= TIE_TOLERANCE * max(dist[a], 1.0):
            b += 1
        keys, labs = [], []
        for o in offs[a:b]:
            if not o.any():
                continue  # the core cells themselves
            ok = _inside_at(cols, cmin, cmax, o, grid.shape)
            k = (wkeys if ok is None else wkeys[ok]) + int(o @ strides)
            new = raster[k] == free  # not labelled by a nearer shell
            keys.append(k[new])
            labs.append((lab if ok is None else lab[ok])[new])
        if keys:
            np.minimum.at(raster, np.concatenate(keys), np.concatenate(labs))
        a = b
    region = np.flatnonzero(raster != free)
    # window order is grid key order (both row-major over the cells)
    cells = np.stack(np.unravel_index(region, tuple(int(v) for v in shape)), axis=1) + lo
    return grid.encode(cells), raster[region].astype(np.int64)


def _gap4(steps: np.ndarray, to: str) -> np.ndarray:
    """Four times the squared gap, along one axis, from a cell's centre to
    the core cell (``to="cells"``) or its centre at each of the integer
    ``steps``: an integer, so that sums of them compare exactly."""
    a = np.abs(np.asarray(steps, dtype=np.int64))
    return np.where(a > 0, (2 * a - 1) ** 2, 0) if to == "cells" else 4 * a * a


def _within(q4: np.ndarray, radius: float, to: str) -> np.ndarray:
    """Whether a core cell (or centre) at four times the squared distance
    ``q4`` from a cell's centre lies within the border: the test of
    :func:`offset_distances` and :func:`_regions_by_shells` on the same
    distance (a sum of quarters, exact), including that the offsets of
    :func:`region_offsets` are those with the squared sum within its limit."""
    q = np.asarray(q4, dtype=np.float64) / 4.0
    dist = np.sqrt(q)
    ok = q <= radius * radius * (1 + TIE_TOLERANCE)
    if to == "centres":
        return ok & (dist <= radius * (1 + TIE_TOLERANCE))
    return ok & (dist < radius * (1 - TIE_TOLERANCE))


#: Cells a slab of one pass of :func:`_regions_by_passes` holds at a time
#: (a few copies of it: tens of MB).
PASS_SLAB = 1 << 21


def _passes_window(
    grid: Grid, core_keys: np.ndarray, radius: float, to: str
) -> tuple[int, np.ndarray, np.ndarray]:
    """(reach, low corner, shape) of the window of :func:`_regions_by_shells`:
    the largest step along one axis of an offset within the border, and the
    cells within that many steps of the core cells' extent, in the grid."""
    R = int(math.floor(radius + 0.5)) + 1
    steps = np.arange(R + 1)
    reach = int(steps[_within(_gap4(steps, to), radius, to)].max())  # the offset 0 is always within
    coords_min, coords_max = _core_extent(grid, core_keys)
    lo = np.maximum(coords_min - reach, 0)
    shape = np.minimum(coords_max + reach + 1, np.asarray(grid.shape, dtype=np.int64)) - lo
    return reach, lo, shape


def _passes_cheaper(d: int, n_core: int, radius: float, to: str, reach: int, shape: np.ndarray) -> bool:
    """Whether the separable passes of :func:`_regions_by_passes` (about the
    window's cells times ``d (2 reach + 1)``) cost less than the shells' walk
    of every offset of the border ball from every core cell (dense cores in
    high dimension: 153,000 core cells and 77,000 offsets in the 6-D case 5
    of ``benchmarks.same_release``). Both give the same regions; this only
    chooses the cheaper."""
    window = float(np.prod(np.asarray(shape, dtype=np.float64)))
    passes = window * d * (2 * reach + 1)
    # the ball's offsets, counted without listing them (a bound by the
    # cube's would wrongly favour the passes in 2-D and 3-D); a few thousand
    # cells' worth of work per offset besides the core cells (its loop)
    shells = float(_ball_size(d, reach, radius, to)) * (n_core + 2_000)
    return passes < shells


def _core_extent(grid: Grid, core_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest coordinate of the core cells along each axis."""
    coords = grid.decode(core_keys)
    return coords.min(axis=0), coords.max(axis=0)


@functools.lru_cache(maxsize=64)
def _ball_size(d: int, reach: int, radius: float, to: str) -> int:
    """How many offsets within ``reach`` along each axis lie within the
    border (:func:`_within`): a count of the sums of ``d`` axis terms by
    their value, axis by axis (no list of offsets)."""
    g4 = _gap4(np.arange(-reach, reach + 1), to)
    top = int(g4.max()) * d
    counts = np.zeros(top + 1, dtype=np.float64)
    counts[0] = 1.0
    for _ in range(d):
        nxt = np.zeros_like(counts)
        for v in g4.tolist():
            nxt[v:] += counts[: top + 1 - v]
        counts = nxt
    q4 = np.flatnonzero(counts)
    return int(counts[q4[_within(q4, radius, to)]].sum())


def _regions_by_passes(
    grid: Grid,
    core_keys: np.ndarray,
    labels: np.ndarray,
    radius: float,
    to: str,
    reach: int,
    lo: np.ndarray,
    shape: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_regions_by_shells` by a separable nearest-core transform of the
    window around the core cells, in time about the window's cells times
    ``d (2 reach + 1)`` whatever the core cells' number.

    Each cell of the window holds one integer, four times the squared
    distance to its nearest core cell (or centre) shifted above the span id
    of that core cell: the smallest such integer is the nearest core cell,
    ties to the smaller span id, exactly the shells' rule. The squared
    distance is a sum of one term per axis, so the minimum over all core
    cells is taken one axis at a time (a minimum over the ``2 reach + 1``
    shifts along that axis of the previous axes' minima), in slabs of the
    window (:data:`PASS_SLAB`). The distances are sums of quarters, exact,
    so the border test at the end (:func:`_within`) is the shells' test."""
    d = grid.d
    shape_t = tuple(int(v) for v in shape)
    g4 = _gap4(np.arange(reach + 1), to)
    span_bits = max(1, int(labels.max()).bit_length())
    top = int(g4[-1]) * d  # the largest distance term a cell can gather
    free_q = top + 1
    # "no core cell" sits above every real value, and stays so when the
    # passes add up to ``top`` to it: 2 (top + 1) << span_bits must fit
    dtype = np.int32 if (2 * free_q + 1) << span_bits < np.iinfo(np.int32).max else np.int64
    free = free_q << span_bits
    raster = np.full(shape_t, free, dtype=dtype)
    coords = grid.decode(core_keys) - lo
    raster[tuple(coords[:, i] for i in range(d))] = labels.astype(dtype)
    steps = [int(v) << span_bits for v in g4.tolist()]
    for axis in range(d):
        n = shape_t[axis]
        if n == 1 or reach == 0:
            continue
        # slabs along another axis (the first that is not this one), each a
        # view: a pass along ``axis`` mixes no cells of different slabs
        other = 0 if axis != 0 else (1 if d > 1 else None)
        if other is None:
            _pass(raster, axis, steps, reach)
            continue
        per = int(np.prod(shape_t)) // shape_t[other]
        step = max(1, PASS_SLAB // max(per, 1))
        for a in range(0, shape_t[other], step):
            sl = [slice(None)] * d
            sl[other] = slice(a, a + step)
            _pass(raster[tuple(sl)], axis, steps, reach)
    flat = raster.reshape(-1)
    # the border test holds up to some distance and not beyond (monotone)
    q4 = np.arange(top + 1)
    last = int(q4[_within(q4, radius, to)].max())
    region = np.flatnonzero(flat < ((last + 1) << span_bits))
    cells = np.stack(np.unravel_index(region, shape_t), axis=1) + lo
    span = (flat[region] & ((1 << span_bits) - 1)).astype(np.int64)
    return grid.encode(cells), span


def _pass(view: np.ndarray, axis: int, steps: list[int], reach: int) -> None:
    """One axis of :func:`_regions_by_passes`, in place on ``view``: each cell
    takes the least of its own value and, for every shift s up to ``reach``
    along ``axis`` either way, the value s cells away plus ``steps[s]``."""
    src = view.copy()
    n = view.shape[axis]
    tmp = np.empty_like(src)

    def cut(a: int | None, b: int | None) -> tuple[slice, ...]:
        sl = [slice(None)] * view.ndim
        sl[axis] = slice(a, b)
        return tuple(sl)

    for s in range(1, min(reach, n - 1) + 1):
        add = steps[s]
        t = tmp[cut(None, n - s)]
        np.add(src[cut(None, n - s)], add, out=t)
        np.minimum(view[cut(s, None)], t, out=view[cut(s, None)])
        np.add(src[cut(s, None)], add, out=t)
        np.minimum(view[cut(None, n - s)], t, out=view[cut(None, n - s)])


def _inside_at(
    cols: list[np.ndarray], cmin: np.ndarray, cmax: np.ndarray, o: np.ndarray, shape: tuple[int, ...]
) -> np.ndarray | None:
    """Which cells (coordinates by column, within ``cmin..cmax``) stay in the
    grid moved by ``o``; None when all do. :meth:`Grid.valid` of the moved
    cells, column by column and only along the axes where some leave (on a
    city's spans in a wider box, none do): adding an offset pair to every
    row ran numpy's loop two values at a time."""
    ok = None
    for i, c in enumerate(cols):
        oi = int(o[i])
        if cmin[i] + oi >= 0 and cmax[i] + oi < shape[i]:
            continue
        here = (c >= -oi) & (c < shape[i] - oi)
        ok = here if ok is None else ok & here
    return ok


def _bitmap(grid: Grid, keys: np.ndarray) -> np.ndarray | None:
    """A boolean array over the key space, True at ``keys`` (None when too big)."""
    if grid.wide or grid.key_space > BITMAP_KEYS:
        return None
    mark = np.zeros(grid.key_space, dtype=bool)
    mark[keys] = True
    return mark


def _near_keys(grid: Grid, coords: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sorted unique keys of the valid cells ``coords + offset``, over all offsets."""
    if not grid.wide and grid.key_space <= BITMAP_KEYS:
        mark = np.zeros(grid.key_space, dtype=bool)
        for o in offsets:
            c = coords + o
            mark[grid.encode(c[grid.valid(c)])] = True
        return np.flatnonzero(mark).astype(np.int64)
    parts = []
    step = max(1, (1 << 22) // max(len(offsets), 1))  # bounded memory per block of core cells
    for a in range(0, coords.shape[0], step):
        c = (coords[a : a + step, None, :] + offsets[None, :, :]).reshape(-1, grid.d)
        parts.append(grid.encode(c[grid.valid(c)]))
    return np.unique(np.concatenate(parts))


@functools.lru_cache(maxsize=32)
def region_offsets(d: int, radius_cells: float, to: str) -> tuple[tuple[int, ...], ...]:
    """Offsets n of the cells whose centre can be within ``radius_cells`` (in
    cell widths) of core cell 0: of the cell itself (``to="cells"``:
    sum max(|n_i| - 1/2, 0)^2 <= r^2) or of its centre (sum n_i^2 <= r^2).
    In the order of ``itertools.product(range(-R, R + 1), repeat=d)``."""
    return tuple(map(tuple, _region_offsets(d, radius_cells, to).tolist()))


@functools.lru_cache(maxsize=32)
def _region_offsets(d: int, radius_cells: float, to: str) -> np.ndarray:
    """:func:`region_offsets` as an (m, d) array, built axis by axis and
    pruned as the partial sums pass the limit (no product of all offsets)."""
    R = int(math.floor(radius_cells + 0.5)) + 1
    lim = radius_cells * radius_cells * (1 + TIE_TOLERANCE)  # a superset; border_labels decides
    steps = np.arange(-R, R + 1)
    part = np.maximum(np.abs(steps) - 0.5, 0.0) ** 2 if to == "cells" else (steps * steps).astype(np.float64)
    rows = offsets_within(steps, part, d, lim)
    rows.setflags(write=False)
    return rows


def predict_spans(
    grid: Grid, region_keys: np.ndarray, region_labels: np.ndarray, X: np.ndarray
) -> np.ndarray:
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


def border_labels(
    grid: Grid,
    core_keys: np.ndarray,
    labels: np.ndarray,
    cells: np.ndarray,
    border: float,
    to: str = "cells",
    *,
    core_mark: np.ndarray | None = None,
) -> np.ndarray:
    """Span of the nearest core cell (``to="cells"``) or core cell centre
    (``to="centres"``) within ``border`` of the centre of each of the given
    cells (integer coordinates), else -1.

    Ties (distances equal up to :data:`TIE_TOLERANCE`) go to the smaller span
    id. Distances are measured in cell widths between lattice points (cell
    centres are at half-integers), so equal distances compute equal.
    ``core_mark`` (optional) is a boolean array over the key space, True at
    ``core_keys``: a quicker test of which neighbours are core cells.
    """
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, grid.d)
    radius = border / grid.width
    if walk_wanted(grid.d):
        return _border_labels_by_walk(grid, core_keys, labels, cells, radius, to)
    u = cells + 0.5  # the centres, in cell units
    best = np.full(cells.shape[0], np.inf)
    lab = np.full(cells.shape[0], -1, dtype=np.int64)
    for o in region_offsets(grid.d, radius, to):
        t = cells + np.asarray(o, dtype=np.int64)
        ok = np.flatnonzero(grid.valid(t))
        if ok.size == 0:
            continue
        keys = grid.encode(t[ok])
        if core_mark is not None:
            hit = core_mark[keys]
            rows = ok[hit]
            idx = np.searchsorted(core_keys, keys[hit])
        else:
            idx, hit = search_keys(core_keys, keys)
            rows = ok[hit]
            idx = idx[hit]
        if rows.size == 0:
            continue
        tr, ur = t[rows].astype(np.float64), u[rows]
        if to == "cells":
            gap = np.maximum(np.maximum(tr - ur, ur - (tr + 1.0)), 0.0)
        else:
            gap = np.abs(ur - (tr + 0.5))
        # sorted squares: the sum does not depend on which axis is which
        dist = np.sqrt(np.sort(gap * gap, axis=1).sum(axis=1))
        span = labels[idx]
        b = best[rows]
        tie = np.isfinite(b) & (np.abs(dist - b) <= TIE_TOLERANCE * np.maximum(b, 1.0))
        # the density test's border includes its radius (DBSCAN: within eps);
        # the bound test's excludes it, as the paper's "< alpha"
        inside = (
            dist <= radius * (1 + TIE_TOLERANCE) if to == "centres" else dist < radius * (1 - TIE_TOLERANCE)
        )
        better = inside & (((dist < b) & ~tie) | (tie & (span < lab[rows])))
        best[rows[better]] = np.minimum(dist[better], best[rows[better]])
        lab[rows[better]] = span[better]
    return lab


def _border_labels_by_walk(
    grid: Grid, core_keys: np.ndarray, labels: np.ndarray, cells: np.ndarray, radius: float, to: str
) -> np.ndarray:
    """:func:`border_labels` by a compiled walk of the core cells near each
    cell (:meth:`~dpdbscan.cells.pairs.CellIndex.nearest`), in time about
    the core cells it meets and memory the cells', where the offsets'
    lookups cost the size of the border ball per cell (millions in 8-D
    with sub-cells). The same rule: the offsets of :func:`region_offsets`
    (squared gaps summed within their limit, exact: halves and integers),
    the same distances and tests, ties to the smaller span id."""
    if core_keys.size == 0 or cells.shape[0] == 0:
        return np.full(cells.shape[0], -1, dtype=np.int64)
    R = int(math.floor(radius + 0.5)) + 1
    index = CellIndex(grid.decode(core_keys), R, cells.shape[0])
    return index.nearest(
        cells,
        R,
        labels,
        centres=to == "centres",
        lim=radius * radius * (1 + TIE_TOLERANCE),
        reach=radius * (1 + TIE_TOLERANCE) if to == "centres" else radius * (1 - TIE_TOLERANCE),
        strict=to != "centres",
        tol=TIE_TOLERANCE,
    )


__all__ = [
    "degrees_given",
    "span_regions",
    "span_regions_each",
    "predict_spans",
    "predict_cells_each",
    "predict_cells",
    "regions_are_cheap",
    "border_labels",
    "region_offsets",
]
