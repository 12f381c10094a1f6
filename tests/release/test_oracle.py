"""With the noise switched off, the pipeline equals the non-private grid
procedure cell for cell (dense and sparse histograms, 1-D to 3-D)."""

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.release.samplers.integers import SeededSource

from reference import grid_dbscan, same_partition, subcell_grid_dbscan
from releases import Config as MechanismConfig
from releases import release_histogram, spans_from_histogram


def _instance(d, seed):
    rng = np.random.default_rng(seed)
    centres = rng.random((3, d))
    X = np.vstack([c + 0.05 * rng.standard_normal((60, d)) for c in centres])
    X = np.vstack([X, rng.random((20, d))])
    return np.clip(X, 0, 1)


@pytest.mark.parametrize("histogram", ["dense", "sparse"])
@pytest.mark.parametrize(
    "d,alpha,min_samples,eta",
    [
        (1, 0.05, 5, 4.0),
        (2, 0.1, 8, 4.0),
        (2, 0.12, 15, 2.0),
        (3, 0.25, 10, 4.0),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_noiseless_pipeline_equals_grid_procedure(histogram, d, alpha, min_samples, eta, seed):
    X = _instance(d, seed)
    grid = Grid(np.zeros(d), np.ones(d), alpha, eta)
    config = MechanismConfig(epsilon=1.0, histogram=histogram, noise="none")
    hist = release_histogram(grid, X, config, SeededSource(0))
    model = spans_from_histogram(hist, min_samples, gamma=0.0, beta=0.5)

    coords = grid.coords(X)
    counts = {}
    for c in map(tuple, coords):
        counts[c] = counts.get(c, 0) + 1
    expected = grid_dbscan(grid, counts, min_samples)

    got_cells = [tuple(c) for c in grid.decode(model.core_keys)]
    got = dict(zip(got_cells, model.labels.tolist()))
    assert set(got) == set(expected)
    assert same_partition(got, expected)
    assert model.n_spans == len(set(expected.values()))


@pytest.mark.parametrize("histogram", ["dense", "sparse"])
@pytest.mark.parametrize(
    "d,alpha,min_samples,k",
    [
        (1, 0.05, 5, 2),
        (2, 0.1, 8, 2),
        (2, 0.12, 12, 3),
        (3, 0.3, 10, 2),
    ],
)
def test_noiseless_subcell_pipeline_equals_reference(histogram, d, alpha, min_samples, k):
    X = _instance(d, 3)
    grid = Grid(np.zeros(d), np.ones(d), alpha)
    config = MechanismConfig(epsilon=1.0, histogram=histogram, noise="none")
    hist = release_histogram(grid, X, config, SeededSource(0))
    model = spans_from_histogram(hist, min_samples, gamma=0.0, beta=0.5, subcells=k)
    coords = grid.coords(X)
    counts = {}
    for c in map(tuple, coords):
        counts[c] = counts.get(c, 0) + 1
    expected = subcell_grid_dbscan(grid, counts, min_samples, k)
    got = dict(zip([tuple(c) for c in model.grid.decode(model.core_keys)], model.labels.tolist()))
    assert set(got) == set(expected)
    assert same_partition(got, expected)
