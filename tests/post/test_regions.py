"""The three ways span_regions finds the cells predict maps to a span agree:
the raster of span ids in shells of equal distance (small key spaces), the
bitmap of candidates with border_labels (medium), and sorted key lists
(large or packed keys), cell for cell, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.model import predict
from dpdbscan.post.merge import merge_cells


def _paths(monkeypatch, grid, keys, labels, border, to):
    out = {}
    for name, raster, bitmap in (
        ("raster", predict.RASTER_KEYS, predict.BITMAP_KEYS),
        ("bitmap", 0, predict.BITMAP_KEYS),
        ("sorted", 0, 0),
    ):
        monkeypatch.setattr(predict, "RASTER_KEYS", raster)
        monkeypatch.setattr(predict, "BITMAP_KEYS", bitmap)
        out[name] = predict.span_regions(grid, keys, labels, border, to)
    return out


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("to", ["cells", "centres"])
def test_region_paths_agree(monkeypatch, seed, to):
    rng = np.random.default_rng(seed)
    g = Grid([0.0, 0.0], rng.uniform(2, 6, 2), rng.uniform(0.1, 0.4), eta=float(rng.choice([1, 2, 4])))
    n = int(rng.integers(1, min(300, g.n_cells)))
    coords = np.unique(np.column_stack([rng.integers(0, s, n) for s in g.shape]), axis=0)
    keys = np.sort(g.encode(coords))
    labels = merge_cells(g, keys)
    # radii on and off the lattice: exact ties between spans are common on it
    for border in (g.width * rng.choice([1.0, 1.5, 2.0, np.sqrt(5), 2.3]), g.eps):
        got = _paths(monkeypatch, g, keys, labels, float(border), to)
        for name in ("bitmap", "sorted"):
            assert np.array_equal(got[name][0], got["raster"][0]), name
            assert np.array_equal(got[name][1], got["raster"][1]), name
        rk, rl = got["raster"]
        assert np.all(np.diff(rk) > 0)
        # core cells keep their own span
        idx = np.searchsorted(rk, keys)
        assert np.array_equal(rk[idx], keys) and np.array_equal(rl[idx], labels)


def test_offset_distances_match_border_labels():
    g = Grid([0.0, 0.0], [3.0, 3.0], 0.5)
    for to in ("cells", "centres"):
        offs, dist = predict.offset_distances(2, 2.7, to)
        assert offs.shape[0] == len(predict.region_offsets(2, 2.7, to)) and dist.min() == 0
        # one core cell at the centre: the border distance of each cell is the table's
        c = np.array([[g.shape[0] // 2, g.shape[1] // 2]])
        k = g.encode(c)
        for o, dd in zip(offs, dist):
            cell = c - o
            if not g.valid(cell).all() or dd == 0:
                continue
            lab = predict.border_labels(g, k, np.array([0]), cell, dd * g.width * (1 + 1e-6), to)
            assert lab[0] == 0


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_region_paths_agree_in_other_dimensions(monkeypatch, d, seed):
    """The raster covers a window around the core cells, row-major in any d."""
    rng = np.random.default_rng(seed)
    g = Grid(np.zeros(d), rng.uniform(2, 4, d), rng.uniform(0.2, 0.5), eta=float(rng.choice([1, 2])))
    n = int(rng.integers(1, min(200, g.n_cells)))
    # away from the lower corner, so that the window starts inside the grid
    coords = np.unique(np.column_stack([rng.integers(s // 3, s, n) for s in g.shape]), axis=0)
    keys = np.sort(g.encode(coords))
    labels = merge_cells(g, keys)
    for to in ("cells", "centres"):
        got = _paths(monkeypatch, g, keys, labels, float(g.width * rng.choice([1.0, 1.5, 2.3])), to)
        for name in ("bitmap", "sorted"):
            assert np.array_equal(got[name][0], got["raster"][0]), name
            assert np.array_equal(got[name][1], got["raster"][1]), name


@pytest.mark.parametrize("seed", range(3))
def test_region_paths_agree_away_from_the_grids_edges(monkeypatch, seed):
    """Core cells whose border never leaves the grid (the raster then skips
    the bounds checks along every axis) and cells at the edge along one axis."""
    rng = np.random.default_rng(seed)
    g = Grid([0.0, 0.0], [20.0, 20.0], 0.4)
    for lo, hi in (((20, 20), (60, 60)), ((0, 20), (60, 60))):
        coords = np.unique(np.column_stack([rng.integers(a, b, 150) for a, b in zip(lo, hi)]), axis=0)
        keys = np.sort(g.encode(coords))
        labels = merge_cells(g, keys)
        for to in ("cells", "centres"):
            got = _paths(monkeypatch, g, keys, labels, float(g.width * 2.3), to)
            for name in ("bitmap", "sorted"):
                assert np.array_equal(got[name][0], got["raster"][0]), name
                assert np.array_equal(got[name][1], got["raster"][1]), name
