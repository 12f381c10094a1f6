"""Release two's keep rule with a strand's fragments joined along its length
(issue 28 item 3; the strands-join study, results/scenes/strands-join.md).

Release two (:mod:`dpdbscan.post.sidebyside`) keeps the fine cells of at
least its threshold and takes their components (cells touching by a face,
edge or corner). Where a span holds thin strands side by side, each strand's
kept cells often fall into several fragments along its length (a few fine
cells under the threshold break it), and no fragment alone covers the
span's extent: the side-by-side test fails. This rule joins fragments that
continue each other before the significance and cover tests:

* each component's **axis**: the first principal axis of its kept fine
  cells' centres, weighted by their noisy counts; a component of fewer than
  ``min_cells`` cells has no axis of its own;
* two components are **joined** when their nearest cells are at most
  ``gap`` fine cells apart, the vector between those cells leaves every
  defined axis by at most ``angle`` degrees (it continues the strand, not a
  step across to a neighbour), and two defined axes are within ``angle`` of
  each other;
* joined components (by transitivity) count as one for the significance and
  the side-by-side cover tests, and their cells form one piece.

The constants (``gap``, ``angle``, ``min_cells``) are the record's
(``auto["second"]["join"]``; the library's: ``plan.autoplan.SECOND_JOIN``,
used below a DP count of 20,000). Everything here reads release two's noisy
counts and release one's cells: post-processing, no budget and no data.
"""

from __future__ import annotations

import numpy as np

from ..cells.grid import Grid
from .sidebyside import main_axis, record_sd


def _axis(pts: np.ndarray, w: np.ndarray) -> np.ndarray:
    return main_axis(pts, w)


def groups(lab: np.ndarray, arr: np.ndarray, nl: int, gap: float, angle: float, min_cells: int) -> np.ndarray:
    """For components 1..nl of ``lab`` (ndimage labels; ``arr`` the noisy
    counts on the same array), the group of each (index 0 unused): joined
    components share a group, the smallest member's label."""
    from scipy.spatial import cKDTree

    parent = np.arange(nl + 1)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    coords = np.argwhere(lab > 0)
    comp = lab[tuple(coords.T)]
    w = arr[tuple(coords.T)].astype(np.float64)
    pts = coords.astype(np.float64)
    cos_min = float(np.cos(np.radians(angle)))
    axes: dict[int, np.ndarray | None] = {}
    cells: dict[int, np.ndarray] = {}
    for c in range(1, nl + 1):
        sel = comp == c
        cells[c] = pts[sel]
        axes[c] = _axis(pts[sel], w[sel]) if sel.sum() >= min_cells else None
    tree = cKDTree(pts)
    pairs = tree.query_pairs(r=gap, output_type="ndarray")
    if pairs.size == 0:
        return parent
    ci, cj = comp[pairs[:, 0]], comp[pairs[:, 1]]
    cross = ci != cj
    pairs, ci, cj = pairs[cross], ci[cross], cj[cross]
    if pairs.size == 0:
        return parent
    # per component pair, its nearest cells
    dist = np.linalg.norm(pts[pairs[:, 0]] - pts[pairs[:, 1]], axis=1)
    lo, hi = np.minimum(ci, cj), np.maximum(ci, cj)
    order = np.lexsort((dist, hi, lo))
    seen: set[tuple[int, int]] = set()
    for k in order:
        key = (int(lo[k]), int(hi[k]))
        if key in seen:
            continue
        seen.add(key)
        u = pts[pairs[k, 1]] - pts[pairs[k, 0]]
        u = u / max(float(np.linalg.norm(u)), 1e-12)
        a, b = axes[key[0]], axes[key[1]]
        defined = [x for x in (a, b) if x is not None]
        if not defined:
            continue
        if any(abs(float(u @ x)) < cos_min for x in defined):
            continue
        if a is not None and b is not None and abs(float(a @ b)) < cos_min:
            continue
        ra, rb = find(key[0]), find(key[1])
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    for i in range(1, nl + 1):
        parent[i] = find(i)
    return parent


def pieces_joined(span: dict, grid: Grid, rec: dict, join: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`dpdbscan.post.sidebyside.pieces_of` with fragments joined
    (module docstring) before the significance and cover tests: (the kept
    fine cells' coords, the piece of each) where the span is split, else None."""
    from scipy import ndimage

    j = join
    f = int(span["f"])
    fine_cells, noisy = np.asarray(span["fine"]), np.asarray(span["counts"], dtype=np.int64)
    if fine_cells.shape[0] == 0:
        return None
    sd2 = record_sd(rec)
    lo = fine_cells.min(axis=0)
    shape = tuple((fine_cells.max(axis=0) - lo + 1).tolist())
    mask = np.zeros(shape, dtype=bool)
    arr = np.zeros(shape, dtype=np.int64)
    idx = tuple((fine_cells - lo).T)
    mask[idx] = True
    arr[idx] = noisy
    t = max(float(rec["keep_sds"]) * sd2, float(rec["keep_top"]) * float(np.percentile(noisy, 95)))
    lab, nl = ndimage.label(mask & (arr >= t), structure=np.ones((3,) * grid.d))
    if nl < 2:
        return None
    grp = groups(lab, arr, nl, float(j["gap"]), float(j["angle"]), int(j["min_cells"]))
    lab = np.where(lab > 0, grp[lab], 0)
    ids = np.unique(lab[lab > 0])
    if ids.size < 2:
        return None
    mass = np.asarray(ndimage.sum(arr, lab, index=ids), dtype=np.float64)
    size = np.asarray(ndimage.sum(np.ones_like(arr), lab, index=ids), dtype=np.float64)
    big = ids[
        (mass >= float(rec["mass_share"]) * mass.sum())
        & (mass >= float(rec["mass_sds"]) * sd2 * np.sqrt(size))
    ]
    if big.size < 2:
        return None
    kept = np.argwhere(np.isin(lab, big))
    comp = lab[tuple(kept.T)]
    width = float(grid.width)
    centres = grid.lower + (kept + lo + 0.5) * (width / f)
    coarse = grid.lower + (np.asarray(span["cells"]) + 0.5) * width
    axis = main_axis(coarse, np.asarray(span["weights"], dtype=np.float64))
    proj = coarse @ axis
    extent = max(float(proj.max() - proj.min()) + width, 1e-12)
    p = centres @ axis
    cover = min(float(p[comp == b].max() - p[comp == b].min()) / extent for b in big)
    if cover < float(rec["cover"]):
        return None
    return kept + lo, np.searchsorted(big, comp)


__all__ = ["groups", "pieces_joined"]
