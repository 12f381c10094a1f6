import numpy as np
import pytest

from dpdbscan import core
from dpdbscan.grid import Grid
from dpdbscan.histograms.base import NoisyHistogram, dense_neighbour_sums


def _sparse_hist(grid, seed, density=0.02):
    rng = np.random.default_rng(seed)
    mask = rng.random(grid.shape) < density
    vals = np.where(mask, rng.integers(3, 40, grid.shape), 0)
    # a few dense blobs so that some cells are core
    for c in rng.integers(0, min(grid.shape), (3, grid.d)):
        sl = tuple(slice(max(int(x) - 2, 0), int(x) + 3) for x in c)
        vals[sl] += 30
    coords = np.argwhere(vals > 0)
    keys = grid.encode(coords)
    return NoisyHistogram(grid=grid, kind="sparse", values=vals[vals > 0], keys=keys, theta=3.0), vals


@pytest.mark.parametrize("d,alpha,seed", [(2, 0.04, 0), (2, 0.02, 1), (3, 0.15, 2)])
def test_core_cells_match_dense_reference(d, alpha, seed):
    grid = Grid(np.zeros(d), np.ones(d), alpha)
    hist, dense_vals = _sparse_hist(grid, seed)
    thr = 400.0
    keys, sums = core.core_cells(hist, thr)
    S = dense_neighbour_sums(grid, dense_vals)
    expect = np.argwhere(S >= thr)
    assert np.array_equal(grid.decode(keys), expect)
    assert np.array_equal(sums, S[S >= thr])


@pytest.mark.parametrize("d,alpha,seed", [(2, 0.04, 0), (3, 0.15, 2)])
def test_bucket_pruning_changes_nothing(monkeypatch, d, alpha, seed):
    grid = Grid(np.zeros(d), np.ones(d), alpha)
    hist, _ = _sparse_hist(grid, seed)
    for thr in (100.0, 400.0, 900.0):
        k0, s0 = core.core_cells(hist, thr)
        monkeypatch.setattr(core, "_BUCKET_PRUNE_ABOVE", 0)
        k1, s1 = core.core_cells(hist, thr)
        monkeypatch.setattr(core, "_BUCKET_PRUNE_ABOVE", 4_000_000)
        assert np.array_equal(k0, k1) and np.array_equal(s0, s1)


def test_sparse_threshold_must_be_positive():
    grid = Grid([0, 0], [1, 1], 0.1)
    hist, _ = _sparse_hist(grid, 0)
    with pytest.raises(ValueError, match="every cell"):
        core.core_cells(hist, 0.0)


def test_sum_threshold_rules():
    assert core.sum_threshold(10, 30.0, True) == 40.0
    assert core.sum_threshold(10, 30.0, False) == -20.0
