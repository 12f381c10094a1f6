"""The numpy backend's fast counting paths against the plain definitions:
floor, clip and count."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.release.backends.numpy_backend import NumpyBackend


def _reference_coords(grid, X):
    c = np.floor((X - grid.lower) / grid.width)
    return np.clip(c, 0, np.asarray(grid.shape) - 1).astype(np.int64)


def _grids_and_points():
    rng = np.random.default_rng(5)
    cases = []
    for d, alpha in [(1, 0.3), (2, 0.05), (2, 1.0), (3, 0.2), (4, 0.7)]:
        lower = rng.uniform(-5, 5, d)
        upper = lower + rng.uniform(0.5, 4, d)
        g = Grid(lower, upper, alpha)
        n = 100_003  # more than one block, not a multiple of it
        X = rng.uniform(lower, upper, (n, d))
        # points on cell faces, on the box faces and at the corners
        k = rng.integers(0, np.asarray(g.shape) + 1, (500, d))
        faces = np.minimum(lower + k * g.width, upper)
        X = np.concatenate([X, faces, lower[None], upper[None]])
        cases.append((g, X))
    return cases


@pytest.mark.parametrize("case", range(5))
def test_keys_of_points_match_floor_and_clip(case):
    g, X = _grids_and_points()[case]
    ref = g.encode(_reference_coords(g, X))
    assert np.array_equal(g.keys_of_points(X), ref)
    assert np.array_equal(g.coords(X), _reference_coords(g, X))


def test_linear_index_integer_fallback():
    """A key space beyond 2**53 takes the integer path and agrees with encode."""
    g = Grid(np.zeros(4), np.full(4, 1.0), 1e-4)
    assert not g.wide and g.key_space >= 1 << 53
    X = np.random.default_rng(1).uniform(0, 1, (1000, 4))
    X[0] = 1.0
    assert np.array_equal(g.keys_of_points(X), g.encode(_reference_coords(g, X)))


@pytest.mark.parametrize("case", range(5))
def test_dense_counts_match_reference(case):
    g, X = _grids_and_points()[case]
    if g.n_cells > 1 << 22:
        pytest.skip("universe too large for a dense reference")
    counts = NumpyBackend().dense_counts(g, X)
    c = _reference_coords(g, X)
    ref = np.zeros(g.shape, dtype=np.int64)
    np.add.at(ref, tuple(c.T), 1)
    assert np.array_equal(counts, ref)
    cells = NumpyBackend().count(g, X)
    assert np.array_equal(cells.counts, ref[tuple(g.decode(cells.keys).T)])
    assert cells.counts.sum() == X.shape[0]


@pytest.mark.parametrize("case", range(5))
def test_cells_of_points_outside_the_box_are_the_cells_of_the_clipped_points(case):
    """The numpy backend's cells already clip: the cell of x equals the cell of
    clip(x, lower, upper) for any finite x (floor is monotone, the cell of
    ``lower`` is 0 and the cell of ``upper`` is >= shape - 1)."""
    g, X = _grids_and_points()[case]
    rng = np.random.default_rng(case)
    span = g.upper - g.lower
    far = g.lower + rng.uniform(-3, 4, X.shape) * span
    far[:10] = 1e300
    far[10:20] = -1e300
    clipped = np.clip(far, g.lower, g.upper)
    assert np.array_equal(g.keys_of_points(far), g.keys_of_points(clipped))
    if g.n_cells <= 1 << 22:
        counts = NumpyBackend().dense_counts(g, far)
        assert np.array_equal(counts, NumpyBackend().dense_counts(g, clipped))


def test_no_data_dependent_warning_for_huge_coordinates():
    """Issue 14: a row such as [1e308, 0.5] overflowed in the cell-key division
    (before the clamp) and numpy warned; pytest turns any warning into an error."""
    from dpdbscan import DPDBSCAN

    X = np.array([[1e308, 0.5], [-1e308, 0.5], [0.5, 1.7e308], [0.5, 0.5]] * 5)
    g = Grid(np.zeros(2), np.ones(2), 0.01)
    assert np.array_equal(g.keys_of_points(X), g.keys_of_points(np.clip(X, 0, 1)))
    DPDBSCAN(0.1, min_samples=3, bounds=(0, 1), random_state=0).fit(X)
    DPDBSCAN(0.1, min_samples=3, bounds=(0, 1), random_state=0, histogram="sparse").fit(X)


@pytest.mark.parametrize("histogram", ["dense", "sparse", "stability"])
def test_duplicate_keys_from_a_backend_are_refused_on_every_path(histogram):
    """Issue 14: the dense path assigned partial counts of a repeated key
    instead of adding them (a silently wrong count, sensitivity above 1)."""
    from dpdbscan import DPDBSCAN
    from dpdbscan.release.backends import CellCounts

    class PerPartition:  # one partial count per "partition": a contract violation
        def count(self, grid, X):
            a, b = NumpyBackend().count(grid, X[::2]), NumpyBackend().count(grid, X[1::2])
            return CellCounts(np.concatenate([a.keys, b.keys]), np.concatenate([a.counts, b.counts]))

    X = np.random.default_rng(0).random((400, 2)) * 0.2
    kw = dict(
        min_samples=3,
        bounds=(0, 1),
        random_state=0,
        histogram=histogram,
        delta=1e-6 if histogram == "stability" else 0.0,
    )
    with pytest.raises(ValueError, match="duplicate"):
        DPDBSCAN(0.1, backend=PerPartition(), **kw).fit(X)


def test_dense_counts_in_blocks_match_one_bincount(monkeypatch):
    """Counted block by block into one array in place, the counts are those
    of one ``np.bincount`` over every kept row's cell (rows with a NaN or an
    infinity dropped, rows outside the box in its border cells)."""
    from dpdbscan.release.backends import numpy_backend as nb

    monkeypatch.setattr(nb, "_DENSE_BLOCK", 333)
    rng = np.random.default_rng(11)
    X = rng.normal(5.0, 2.5, (5_000, 2))  # some outside the box
    X[rng.choice(5_000, 40, replace=False), rng.integers(0, 2, 40)] = np.nan
    X[7, 0] = np.inf
    g = Grid(np.zeros(2), np.full(2, 10.0), 0.4)
    kept = np.clip(X[np.isfinite(X).all(axis=1)], g.lower, g.upper)
    expected = np.bincount(
        np.ravel_multi_index(tuple(_reference_coords(g, kept).T), g.shape), minlength=g.n_cells
    )
    counts = NumpyBackend().dense_counts(g, X)
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts, expected.reshape(g.shape))
