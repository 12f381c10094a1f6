import itertools
import math

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid, count_neighbours, neighbour_offsets
from dpdbscan.release.backends.numpy_backend import NumpyBackend


def _min_cell_distance(offset):
    """Minimum Euclidean distance between unit cell 0 and the cell at ``offset``."""
    return math.sqrt(sum(max(abs(o) - 1, 0) ** 2 for o in offset))


@pytest.mark.parametrize("d,eta,kappa", [(1, 4, 3), (2, 4, 21), (3, 4, 117)])
def test_kappa_matches_paper(d, eta, kappa):
    assert count_neighbours(d, eta) == kappa
    assert neighbour_offsets(d, eta).shape == (kappa, d)


@pytest.mark.parametrize("d,eta", [(1, 1.0), (2, 1.0), (2, 2.0), (2, 3.0), (3, 2.0), (2, 0.5), (4, 4.0)])
def test_offsets_equal_brute_force_geometry(d, eta):
    # alpha in units of the cell width
    r = 4 * math.sqrt(d) / eta
    reach = math.ceil(r) + 1
    expected = {o for o in itertools.product(range(-reach, reach + 1), repeat=d) if _min_cell_distance(o) < r}
    got = {tuple(o) for o in neighbour_offsets(d, eta)}
    assert got == expected
    assert count_neighbours(d, eta) == len(expected)


def test_offsets_are_symmetric_and_sorted():
    off = neighbour_offsets(3, 4.0)
    as_set = {tuple(o) for o in off}
    assert all(tuple(-o) in as_set for o in off)
    assert [tuple(o) for o in off] == sorted(as_set)


def test_too_many_neighbours_is_a_clear_error():
    with pytest.raises(ValueError, match="kappa="):
        neighbour_offsets(12, 4.0)


def test_width_shape_and_cells():
    g = Grid([0.0, 0.0], [1.0, 2.0], eps=0.1)
    assert g.width == pytest.approx(0.1 / math.sqrt(2))
    assert g.shape == (math.ceil(1 / g.width), math.ceil(2 / g.width))
    assert g.n_cells == g.shape[0] * g.shape[1]
    assert g.approx_ratio == 7.0
    g2 = Grid([0.0], [1.0], eps=0.1, eta=2.0)
    assert g2.width == pytest.approx(0.05)


def test_point_on_upper_face_belongs_to_last_cell():
    g = Grid([0.0, 0.0], [1.0, 1.0], eps=0.3)
    c = g.coords(np.array([[1.0, 1.0], [0.0, 0.0], [0.5, 1.0]]))
    assert c[0].tolist() == [g.shape[0] - 1, g.shape[1] - 1]
    assert c[1].tolist() == [0, 0]
    assert c[2, 1] == g.shape[1] - 1


def test_keys_roundtrip_and_order_int64():
    g = Grid([0, 0, 0], [1, 1, 1], eps=0.05)
    assert not g.wide
    rng = np.random.default_rng(0)
    coords = np.stack([rng.integers(0, s, 500) for s in g.shape], axis=1)
    keys = g.encode(coords)
    assert np.array_equal(g.decode(keys), coords)
    # key order is the lexicographic order of coordinates
    order = np.argsort(keys, kind="stable")
    lex = np.lexsort(coords.T[::-1])
    assert np.array_equal(coords[order], coords[lex])
    X = rng.random((1000, 3))
    assert np.array_equal(g.keys_of_points(X), g.encode(g.coords(X)))


@pytest.mark.parametrize("d,eps", [(1, 0.01), (2, 0.003), (3, 0.05), (4, 0.03), (5, 0.1), (8, 0.3)])
def test_keys_of_row_major_positions_are_the_keys_of_their_coordinates(d, eps):
    """A sparse release's selected cells come as row-major indices; their
    keys by d - 1 divisions are those of the unravelled coordinates, and
    decoding them gives the coordinates back (padding and negative keys too)."""
    g = Grid(np.zeros(d), np.ones(d), eps)
    assert not g.wide
    rng = np.random.default_rng(d)
    p = np.sort(rng.integers(0, g.n_cells, 5000))
    p[0], p[-1] = 0, g.n_cells - 1
    coords = np.stack(np.unravel_index(p, g.shape), axis=1)
    assert np.array_equal(g.keys_of_positions(p), g.encode(coords))
    assert np.array_equal(g.decode(g.encode(coords)), coords)
    # the padding past the top of each axis, and negative keys (the first
    # axis below 0): decode's floor divisions are np.divmod's
    off = coords + g.reach
    off[:, 0] -= 2 * g.reach
    assert np.any(g.encode(off) < 0) and np.array_equal(g.decode(g.encode(off)), off)


def test_cell_coordinates_are_the_clamped_floor_at_every_edge():
    """The cell of a coordinate is floor((x - lower) / w) clamped into the
    grid, also for values on cell faces, on the box's faces, far outside it
    (overflowing to inf), at -0.0 and at +-inf; the same through coords,
    keys_of_points and linear_index."""
    g = Grid([-1.0, 2.0], [3.0, 5.5], eps=0.37)
    edges = [g.lower[0] + k * g.width for k in (-1, 0, 1, 2, g.shape[0] - 1, g.shape[0])]
    special = [-0.0, 0.0, -1e308, 1e308, -np.inf, np.inf, g.upper[0], g.lower[0], np.nextafter(g.upper[0], 0)]
    rng = np.random.default_rng(3)
    xs = np.concatenate([edges, special, np.nextafter(edges, np.inf), rng.uniform(-3, 6, 2000)])
    X = np.column_stack([xs, rng.uniform(1.0, 7.0, xs.size)])
    with np.errstate(over="ignore", invalid="ignore"):
        floor = np.floor((X - g.lower) / g.width)
    want = np.minimum(np.maximum(floor, 0), np.asarray(g.shape) - 1).astype(np.int64)
    assert np.array_equal(g.coords(X), want)
    assert np.array_equal(g.keys_of_points(X), g.encode(want))


def test_neighbour_offsets_never_alias_onto_real_cells():
    g = Grid([0, 0], [1, 1], eps=0.2)
    all_c = g.all_coords()
    real = set(g.encode(all_c).tolist())
    for c in all_c[:: max(1, len(all_c) // 50)]:
        for o in g.offsets:
            t = c + o
            k = int(g.encode(t[None])[0])
            if g.valid(t[None])[0]:
                assert k in real
            else:
                assert k not in real


def test_wide_keys_when_universe_exceeds_int64():
    g = Grid(np.zeros(12), np.ones(12), eps=1e-3)
    assert g.wide
    assert g.n_cells > 2**63
    rng = np.random.default_rng(1)
    coords = np.stack([rng.integers(0, s, 300) for s in g.shape], axis=1)
    keys = g.encode(coords)
    assert keys.dtype.kind == "V"
    assert np.array_equal(g.decode(keys), coords)
    order = np.argsort(keys, kind="stable")
    lex = np.lexsort(coords.T[::-1])
    assert np.array_equal(coords[order], coords[lex])
    # counting works with packed keys
    X = rng.random((200, 12))
    X = np.vstack([X, X[:50]])
    cells = NumpyBackend().count(g, X)
    assert cells.counts.sum() == 250
    assert np.all(np.diff(g.decode(cells.keys)[:, 0]) >= 0)
    assert sorted(cells.counts.tolist(), reverse=True)[:50] == [2] * 50


def test_sorted_runs_are_held_for_read_only_offsets_only():
    """NB and the ball weights' support are read-only and computed once per
    process: their runs are held by identity. A writable array is sorted
    afresh on every call (it may have changed), and a held array's entry
    goes with it."""
    import gc

    from dpdbscan.cells import grid as grid_module
    from dpdbscan.cells.grid import neighbour_offsets, sorted_runs

    off = neighbour_offsets(3, 4.0)
    assert not off.flags.writeable and neighbour_offsets(3, 4.0) is off
    first = sorted_runs(off)
    again = sorted_runs(off)
    assert again[0] is first[0] and again[1] is first[1] and not first[0].flags.writeable
    assert first[0] is off  # sorted already: the offsets themselves, not a copy
    mine = off[::-1].copy()  # writable, other order: the same runs
    a, b = sorted_runs(mine), sorted_runs(mine)
    assert a is not b and np.array_equal(a[0], first[0]) and np.array_equal(a[1], first[1])
    mine[0] = mine[0] + 100  # changed in place: the next call sees it
    assert not np.array_equal(sorted_runs(mine)[0], first[0])
    gone = np.array(off[:5])
    gone.setflags(write=False)
    sorted_runs(gone)
    at = id(gone)
    assert at in grid_module._RUNS
    del gone
    gc.collect()
    assert at not in grid_module._RUNS


def test_lexicographic_order_is_lexsorts():
    """The runs' sort (one argsort of a linear code, or none for sorted
    rows) orders rows as np.lexsort does, ties included."""
    from dpdbscan.cells.grid import _lexicographic_order, sorted_runs

    rng = np.random.default_rng(3)
    for d in (1, 2, 3, 5, 8):
        rows = rng.integers(-4, 5, size=(400, d))
        rows[::7] = rows[0]  # ties
        want = rows[np.lexsort(rows.T[::-1])]
        assert np.array_equal(rows[_lexicographic_order(rows)], want)
        assert isinstance(_lexicographic_order(want), slice)
        assert np.array_equal(sorted_runs(rows)[0], want)
    wide = np.array([[0, 1 << 40], [-(1 << 40), 0], [0, 0]])  # codes beyond int64: lexsort
    assert np.array_equal(wide[_lexicographic_order(wide)], wide[np.lexsort(wide.T[::-1])])


def test_a_dense_histogram_reads_values_as_its_list_of_released_cells_does():
    """value_at reads a dense histogram's array straight; the same values as
    looking the keys up among its non-zero cells, 0 for padding keys."""
    from dpdbscan.cells.grid import lookup
    from dpdbscan.cells.histogram import NoisyHistogram

    grid = Grid(np.zeros(2), np.array([3.7, 2.3]), eps=0.4 * math.sqrt(2), eta=1.0)
    rng = np.random.default_rng(5)
    values = rng.integers(-9, 9, grid.shape) * (rng.random(grid.shape) < 0.3)
    hist = NoisyHistogram(grid, "dense", values, None, float("-inf"), "laplace", 1.0, 1.0, 0.0)
    coords = np.column_stack(
        [rng.integers(-2, grid.shape[0] + 3, 5000), rng.integers(-2, grid.shape[1] + 3, 5000)]
    )
    every = np.arange(grid.key_space)
    padding = every[~grid.valid(grid.decode(every))]
    keys = np.concatenate([grid.encode(coords[grid.valid(coords)]), padding])
    assert padding.size > 0
    got = hist.value_at(keys)
    np.testing.assert_array_equal(got, lookup(*hist.sparse(), keys))
    assert got.dtype == values.dtype and np.count_nonzero(got) > 0
    zero = NoisyHistogram(grid, "dense", np.zeros(grid.shape), None, float("-inf"), "laplace", 1.0, 1.0, 0.0)
    assert zero.value_at(keys).dtype == lookup(*zero.sparse(), keys).dtype
