"""Outlines of cell sets (dpdbscan.geometry.outlines) and connected components.

The tracer is checked three ways on random cell sets (fixed seeds): against
brute force (every cell centre near the set is inside the polygons exactly
when its cell is in the set; the signed area is the number of cells), for
the form RFC 7946 and OGC ask (closed, simple rings; exteriors
counter-clockwise, holes clockwise), and ring for ring against the previous
pure-Python tracer (tests/geometry_reference.py) wherever that one is right.
"""

from __future__ import annotations

import numpy as np
import pytest
from geometry_reference import cells_to_polygons as reference_polygons

from dpdbscan.cells.components import connected_components
from dpdbscan.geometry.outlines import cells_to_polygons, outlines


def _random_sets(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for t in range(count):
        w, h = rng.integers(1, 12, 2)
        cells = np.argwhere(rng.random((w, h)) < rng.random()) + rng.integers(-5, 5, 2)
        if len(cells):
            yield cells[rng.permutation(len(cells))] if t % 2 else cells


def _signed_area(ring) -> float:
    r = np.asarray(ring, dtype=np.float64)
    return 0.5 * float(np.sum(r[:-1, 0] * r[1:, 1] - r[1:, 0] * r[:-1, 1]))


def _inside(ring, x: float, y: float) -> bool:
    """Even-odd ray crossing; (x, y) never lies on a ring (cell centres)."""
    r = np.asarray(ring, dtype=np.float64)
    x0, y0, x1, y1 = r[:-1, 0], r[:-1, 1], r[1:, 0], r[1:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        xc = x0 + (x1 - x0) * (y - y0) / (y1 - y0)
    return bool(np.count_nonzero(((y0 > y) != (y1 > y)) & (x < xc)) % 2)


def _as_lists(polys):
    return [[[tuple(int(v) for v in p) for p in ring] for ring in poly] for poly in polys]


def _check_form(polys):
    for poly in polys:
        for k, ring in enumerate(poly):
            ring = np.asarray(ring)
            assert ring.shape[0] >= 5 and np.array_equal(ring[0], ring[-1])  # closed
            assert len({tuple(p) for p in ring[:-1].tolist()}) == ring.shape[0] - 1  # simple
            step = np.diff(ring, axis=0)
            assert np.all((step[:, 0] == 0) != (step[:, 1] == 0))  # axis-parallel sides
            turn = np.append(step[-1:], step, axis=0)
            cross = turn[:-1, 0] * turn[1:, 1] - turn[:-1, 1] * turn[1:, 0]
            assert np.all(cross != 0)  # no vertex where the outline runs straight on
            assert (_signed_area(ring) > 0) == (k == 0)  # CCW exterior, CW holes


def _check_brute_force(cells, polys):
    inside_set = {tuple(c) for c in cells.tolist()}
    assert sum(_signed_area(r) for p in polys for r in p) == len(inside_set)
    lo, hi = cells.min(axis=0) - 1, cells.max(axis=0) + 1
    for i in range(lo[0], hi[0] + 1):
        for j in range(lo[1], hi[1] + 1):
            x, y = i + 0.5, j + 0.5
            hits = sum(_inside(p[0], x, y) and not any(_inside(h, x, y) for h in p[1:])
                       for p in polys)
            assert hits == ((i, j) in inside_set)


@pytest.mark.parametrize("seed", [0, 1])
def test_outlines_are_exact_and_valid_on_random_sets(seed):
    for cells in _random_sets(seed, 250):
        polys = cells_to_polygons(cells)
        _check_form(polys)
        _check_brute_force(cells, polys)


def _reference_is_right(polys, n_cells) -> bool:
    """The previous tracer's output where it has neither of its two faults."""
    simple = all(len(set(r[:-1])) == len(r) - 1 for p in polys for r in p)
    return simple and sum(_signed_area(r) for p in polys for r in p) == n_cells


@pytest.mark.parametrize("seed", [2, 3])
def test_same_rings_as_the_previous_tracer(seed):
    compared = 0
    for n, cells in enumerate(_random_sets(seed, 400), 1):
        ref = _as_lists(reference_polygons(cells))
        if _reference_is_right(ref, len(cells)):
            compared += 1
            # the same polygons, rings, start vertices and order
            assert _as_lists(cells_to_polygons(cells)) == ref
    assert compared >= n // 2  # most random sets do not hit the old faults


def test_a_thin_annulus_keeps_its_hole():
    # The previous tracer dropped this hole (its test point fell outside).
    ring = [(i, j) for i in range(10) for j in range(10) if i in (0, 9) or j in (0, 9)]
    polys = cells_to_polygons(np.array(ring))
    assert len(polys) == 1 and len(polys[0]) == 2
    assert _signed_area(polys[0][0]) == 100 and _signed_area(polys[0][1]) == -64


def test_holes_meeting_at_a_corner_are_two_simple_rings():
    # a 4x4 block with two holes touching at the corner (2, 2)
    cells = np.array([(i, j) for i in range(4) for j in range(4) if (i, j) not in ((1, 1), (2, 2))])
    polys = cells_to_polygons(cells)
    _check_form(polys)
    _check_brute_force(cells, polys)
    assert len(polys) == 1 and sorted(_signed_area(r) for r in polys[0][1:]) == [-1, -1]


def test_cells_touching_at_a_corner_are_separate_polygons():
    polys = cells_to_polygons(np.array([(0, 0), (1, 1)]))
    assert _as_lists(polys) == [[[(0, 0), (1, 0), (1, 1), (0, 1), (0, 0)]],
                                [[(1, 1), (2, 1), (2, 2), (1, 2), (1, 1)]]]


def test_groups_are_outlined_as_if_one_by_one():
    rng = np.random.default_rng(4)
    cells = np.argwhere(rng.random((30, 30)) < 0.55)
    groups = rng.integers(0, 7, len(cells))
    groups[groups == 5] = 6  # group 5 has no cells
    out = outlines(cells, groups, 8)
    assert out.n_groups == 8
    for g in range(8):
        alone = _as_lists(cells_to_polygons(cells[groups == g]))
        assert _as_lists(out.polygons(g)) == alone
    assert out.polygons(5) == [] and out.polygons(7) == []


def test_repeated_cells_count_once_and_far_coordinates_work():
    cells = np.array([(0, 0), (1, 0), (0, 0), (5, 5)])
    assert _as_lists(cells_to_polygons(cells)) == _as_lists(cells_to_polygons(cells[[0, 1, 3]]))
    far = np.array([(0, 0), (1, 0), (10**15, 3), (10**15 + 1, 3), (10**15, 4)])
    polys = cells_to_polygons(far)
    _check_form(polys)
    assert sorted(_signed_area(p[0]) for p in polys) == [2, 3]
    assert cells_to_polygons(np.zeros((0, 2))) == []


def test_outlines_refuse_bad_groups():
    with pytest.raises(ValueError, match="one entry per cell"):
        outlines(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="0..n_groups-1"):
        outlines(np.zeros((1, 2)), np.array([3]), 2)


def test_connected_components_match_scipy():
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components as scipy_components

    rng = np.random.default_rng(5)
    for n, m in [(1, 0), (10, 0), (50, 30), (1000, 900), (1000, 3000), (5000, 4000)]:
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        root = connected_components(n, a, b)
        _, ref = scipy_components(coo_matrix((np.ones(m), (a, b)), shape=(n, n)), directed=False)
        # the same partition, each part named by its smallest node
        assert np.array_equal(np.unique(ref, return_inverse=True)[1].ravel(),
                              np.unique(root, return_inverse=True)[1].ravel())
        for r in np.unique(root):
            assert r == np.flatnonzero(root == r).min()


def test_connected_components_of_a_long_path_in_any_order():
    n = 20_000
    perm = np.random.default_rng(6).permutation(n)
    root = connected_components(n, perm[:-1], perm[1:])
    assert np.all(root == 0)
    with pytest.raises(ValueError, match="out of range"):
        connected_components(3, [0], [3])
