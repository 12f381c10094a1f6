"""Outlines of cell sets (dpdbscan.geometry.outlines) and connected components.

The oracle is shapely (GEOS, a dev dependency): the union of the cells' unit
squares, computed by GEOS's overlay, must be the library's polygons: the same
area, the same number of parts, each exterior ring and each hole the same
region (vertex order, start and orientation aside; GEOS also keeps vertices
where the outline runs straight on, the library drops them). The library's
own form is checked on top: closed simple rings, valid (multi)polygons in the
OGC sense, exteriors counter-clockwise and holes clockwise (RFC 7946).

Cells touching only at a corner. The library's convention (module docstring
of :mod:`dpdbscan.geometry.outlines`) counts the set as 4-connected and its
complement as 8-connected: cells meeting at a corner are different polygons,
and two holes (or a hole and the outside) meeting at a corner are two rings
sharing that vertex. GEOS has no choice to make here: a valid polygon's
interior is connected and its rings are simple, so the union of the squares
comes out the same way. ``test_corner_convention_is_geos_convention`` pins
each such case; the random sets below are full of them.

A brute-force check (every cell centre near the set lies inside the polygons
exactly when its cell is in the set) stays as a second oracle that needs no
dependency.
"""

from __future__ import annotations

import numpy as np
import pytest
import shapely

from dpdbscan.cells.components import connected_components
from dpdbscan.geometry.outlines import cells_to_polygons, outlines


def _random_sets(seed: int, count: int):
    """Random cell sets of random density: sparse ones are full of corner
    contacts, dense ones of holes (some touching each other or the outside)."""
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


# --------------------------------------------------------------------------- the shapely oracle


def _union_of_squares(cells: np.ndarray):
    """The oracle: GEOS's union of the unit squares of ``cells``, as a list of
    polygons (empty for no cells)."""
    c = np.asarray(cells, dtype=np.float64).reshape(-1, 2)
    union = shapely.union_all(shapely.box(c[:, 0], c[:, 1], c[:, 0] + 1, c[:, 1] + 1))
    return [] if union.is_empty else list(shapely.get_parts(union))


def _lexmin(coords) -> tuple[float, float]:
    """The lowest vertex of the leftmost ones: the lower-left corner of a cell
    of the ring's region (material or hole) that no other part or hole of the
    same set shares, so it names a part or a hole on both sides."""
    xy = np.asarray(coords, dtype=np.float64)
    i = np.lexsort((xy[:, 1], xy[:, 0]))[0]
    return float(xy[i, 0]), float(xy[i, 1])


def _same_region(ring, other_ring) -> bool:
    """Two rings bound the same region (start, direction and vertices where
    the outline runs straight on aside)."""
    return bool(shapely.Polygon(ring).equals(shapely.Polygon(other_ring)))


def _check_form(polys):
    """Closed simple axis-parallel rings without straight-on vertices,
    exteriors CCW and holes CW, every polygon and the whole valid (OGC)."""
    for poly in polys:
        for k, ring in enumerate(poly):
            ring = np.asarray(ring)
            assert ring.shape[0] >= 5 and np.array_equal(ring[0], ring[-1])
            assert shapely.LinearRing(ring).is_simple
            assert len({tuple(p) for p in ring[:-1].tolist()}) == ring.shape[0] - 1
            step = np.diff(ring, axis=0)
            assert np.all((step[:, 0] == 0) != (step[:, 1] == 0))  # axis-parallel sides
            turn = np.append(step[-1:], step, axis=0)
            cross = turn[:-1, 0] * turn[1:, 1] - turn[:-1, 1] * turn[1:, 0]
            assert np.all(cross != 0)  # no vertex where the outline runs straight on
            assert shapely.LinearRing(ring).is_ccw == (k == 0)  # CCW exterior, CW holes
    shapes = [shapely.Polygon(p[0], p[1:]) for p in polys]
    for s in shapes:
        assert s.is_valid, shapely.is_valid_reason(s)
    whole = shapely.MultiPolygon(shapes)
    assert whole.is_valid, shapely.is_valid_reason(whole)


def _check_against_shapely(cells, polys):
    """The library's polygons of ``cells`` are GEOS's union of their squares."""
    n_cells = len({tuple(c) for c in np.asarray(cells).tolist()})
    oracle = _union_of_squares(cells)
    ours = [shapely.Polygon(p[0], p[1:]) for p in polys]
    assert sum(p.area for p in ours) == sum(p.area for p in oracle) == n_cells
    assert len(ours) == len(oracle)  # the same parts
    by_key = {_lexmin(p.exterior.coords): p for p in oracle}
    assert len(by_key) == len(oracle)
    for poly in polys:
        want = by_key.get(_lexmin(poly[0]))
        assert want is not None, "a part of the outline is not a part of the union"
        assert _same_region(poly[0], want.exterior.coords)
        holes = {_lexmin(h.coords): h.coords for h in want.interiors}
        assert len(poly) - 1 == len(holes)  # the same holes, each in the same part
        for hole in poly[1:]:
            other = holes.get(_lexmin(hole))
            assert other is not None and _same_region(hole, other)


def _check_brute_force(cells, polys):
    inside_set = {tuple(c) for c in cells.tolist()}
    assert sum(_signed_area(r) for p in polys for r in p) == len(inside_set)
    lo, hi = cells.min(axis=0) - 1, cells.max(axis=0) + 1
    for i in range(lo[0], hi[0] + 1):
        for j in range(lo[1], hi[1] + 1):
            x, y = i + 0.5, j + 0.5
            hits = sum(_inside(p[0], x, y) and not any(_inside(h, x, y) for h in p[1:]) for p in polys)
            assert hits == ((i, j) in inside_set)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_outlines_are_the_union_of_the_squares_on_random_sets(seed):
    holes = corners = 0
    for cells in _random_sets(seed, 300):
        polys = cells_to_polygons(cells)
        _check_form(polys)
        _check_against_shapely(cells, polys)
        holes += sum(len(p) - 1 for p in polys)
        corners += sum(
            len({tuple(v) for r in p for v in r[:-1].tolist()}) < sum(len(r) - 1 for r in p) for p in polys
        )
    # the sets exercise what the tracer can get wrong: holes, and rings of one
    # polygon meeting at a corner
    assert holes >= 100 and corners >= 20


@pytest.mark.parametrize("seed", [0, 1])
def test_outlines_cover_exactly_the_cells(seed):
    for cells in _random_sets(seed, 150):
        _check_brute_force(cells, cells_to_polygons(cells))


def _frame(n: int):
    """The cells of the border of an ``n x n`` block."""
    return [(i, j) for i in range(n) for j in range(n) if i in (0, n - 1) or j in (0, n - 1)]


CORNER_CASES = {
    # two cells meeting at a corner: two polygons
    "diagonal pair": ([(0, 0), (1, 1)], [0, 0]),
    # four cells around an empty one, meeting only at its corners: four
    # squares, and the empty cell is no hole (the complement is 8-connected)
    "diamond": ([(0, 1), (1, 0), (2, 1), (1, 2)], [0, 0, 0, 0]),
    # a checkerboard: every cell its own polygon
    "checkerboard": ([(i, j) for i in range(5) for j in range(5) if (i + j) % 2 == 0], [0] * 13),
    # two holes meeting at a corner: two rings sharing the vertex (2, 2)
    "holes at a corner": (
        [(i, j) for i in range(4) for j in range(4) if (i, j) not in ((1, 1), (2, 2))],
        [2],
    ),
    # a hole meeting the outside at a corner: a hole sharing a vertex with the exterior
    "hole at the rim": ([(i, j) for i in range(3) for j in range(3) if (i, j) not in ((1, 1), (2, 2))], [1]),
    # a cell inside a hole touching its rim at a corner: a polygon of its own
    "island at a corner": (_frame(7) + [(1, 1), (2, 2)], [1, 0]),
    # the annulus a quarter-cell test point used to lose the hole of
    "thin annulus": (_frame(10), [1]),
    "single cell": ([(3, -2)], [0]),
}


@pytest.mark.parametrize("name", sorted(CORNER_CASES))
def test_corner_convention_is_geos_convention(name):
    cells, holes = CORNER_CASES[name]
    cells = np.array(cells)
    polys = cells_to_polygons(cells)
    _check_form(polys)
    _check_against_shapely(cells, polys)
    _check_brute_force(cells, polys)
    assert sorted(len(p) - 1 for p in polys) == sorted(holes)  # parts and their holes, as drawn above


def test_a_large_random_field_with_many_groups():
    """About 20,000 cells of a random field near the percolation threshold
    (long rings, holes in holes, corner contacts everywhere), in 7 groups
    outlined in one call, each group against its own union."""
    rng = np.random.default_rng(7)
    cells = np.argwhere(rng.random((200, 170)) < 0.6)
    groups = (cells[:, 0] // 30 + cells[:, 1] // 60) % 7
    out = outlines(cells, groups, 7)
    n_holes = 0
    for g in range(7):
        polys = out.polygons(g)
        _check_form(polys)
        _check_against_shapely(cells[groups == g], polys)
        n_holes += sum(len(p) - 1 for p in polys)
    assert n_holes > 500


@pytest.mark.slow
def test_the_spans_of_a_real_model(shared_data):
    """A geographic model of Cabs-tiny (alpha = 20 m, MinPts = 40): about
    127,000 region cells in ~700 spans (204,000 before geographic maps kept
    only the border cells where the release shows points), each span's
    outline against GEOS's union of its cells (GEOS takes about 5 s here,
    the tracer 0.3 s)."""
    import warnings

    from dpdbscan.estimator import fit_lonlat
    from dpdbscan.files.reader import read_points

    X, _ = read_points(shared_data / "cabs_tiny.csv.gz", header=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded fit: research use, not a release
        model = fit_lonlat(
            X, bounds=(-122.48, 37.72, -122.38, 37.82), eps="20m", min_samples=40, random_state=0
        )
    keys, labels = model.regions()
    assert keys.size > 100_000 and model.n_spans > 500
    cells = model.grid.decode(keys)
    out = model.outlines()
    for s in range(model.n_spans):
        polys = out.polygons(s)
        _check_form(polys)
        _check_against_shapely(cells[labels == s], polys)


def test_cells_touching_at_a_corner_are_separate_polygons():
    polys = cells_to_polygons(np.array([(0, 0), (1, 1)]))
    assert _as_lists(polys) == [
        [[(0, 0), (1, 0), (1, 1), (0, 1), (0, 0)]],
        [[(1, 1), (2, 1), (2, 2), (1, 2), (1, 1)]],
    ]


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
        assert np.array_equal(
            np.unique(ref, return_inverse=True)[1].ravel(), np.unique(root, return_inverse=True)[1].ravel()
        )
        for r in np.unique(root):
            assert r == np.flatnonzero(root == r).min()


def test_connected_components_of_a_long_path_in_any_order():
    n = 20_000
    perm = np.random.default_rng(6).permutation(n)
    root = connected_components(n, perm[:-1], perm[1:])
    assert np.all(root == 0)
    with pytest.raises(ValueError, match="out of range"):
        connected_components(3, [0], [3])
