"""The four ways span_regions finds the cells predict maps to a span agree:
the raster of span ids in shells of equal distance and the separable
nearest-core passes over the same window (small key spaces: the cheaper of
the two), the bitmap of candidates with border_labels (medium), and sorted
key lists (large or packed keys), cell for cell, ties included."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.model import predict
from dpdbscan.post.merge import merge_cells


def _paths(monkeypatch, grid, keys, labels, border, to):
    out = {}
    raster_keys, bitmap_keys = predict.RASTER_KEYS, predict.BITMAP_KEYS
    for name, raster, bitmap, passes in (
        ("raster", raster_keys, bitmap_keys, False),
        ("passes", raster_keys, bitmap_keys, True),
        ("bitmap", 0, bitmap_keys, None),
        ("sorted", 0, 0, None),
    ):
        monkeypatch.setattr(predict, "RASTER_KEYS", raster)
        monkeypatch.setattr(predict, "BITMAP_KEYS", bitmap)
        monkeypatch.setattr(predict, "_passes_cheaper", lambda *a, p=passes: p)
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
        for name in ("passes", "bitmap", "sorted"):
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
        for name in ("passes", "bitmap", "sorted"):
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
            for name in ("passes", "bitmap", "sorted"):
                assert np.array_equal(got[name][0], got["raster"][0]), name
                assert np.array_equal(got[name][1], got["raster"][1]), name


def _dense_case(rng, d, share, n_labels):
    """A small grid in ``d`` dimensions with about ``share`` of its cells
    core, labelled by their spans or by ``n_labels`` random ids (many exact
    ties between spans)."""
    width = float(rng.uniform(0.2, 0.45))
    cells = rng.integers(4, 12 if d <= 3 else 8 if d <= 5 else 5, d)
    g = Grid(np.zeros(d), (cells - 0.5) * width, math.sqrt(d) * width, eta=4.0)
    assert g.shape == tuple(cells.tolist()) and predict.regions_are_cheap(g)
    coords = np.stack(np.unravel_index(np.arange(g.n_cells), g.shape), axis=1)
    coords = coords[rng.random(coords.shape[0]) < share]
    if coords.shape[0] == 0:
        coords = np.zeros((1, d), dtype=np.int64)
    keys = np.sort(g.encode(coords))
    labels = merge_cells(g, keys) if n_labels == 0 else rng.integers(0, n_labels, keys.size)
    return g, keys, labels


# The 8-D cases of seeds 0 and 2 draw dense cores (half of the 4^8 cells) with
# the border at 2 cell widths to the cells: the shells' walk there takes
# 39,504 offsets from each of 32,768 core cells, 9-10 s of CPU a case, as
# much as the other 38 cases together. They run in `make test-slow`; the
# quick suite keeps 8-D at that border on sparse cores (seeds 1-3) and dense
# 8-D cores at 1.5 widths (seed 3; seed 4, its twin, is slow too: seeds 3 and
# 4 took 8.3 s each at load 5, seed 1 5.4 s).
SLOW_SHELLS = {(8, 0), (8, 2), (8, 4)}


@pytest.mark.parametrize(
    "d, seed",
    [
        pytest.param(d, seed, id=f"{seed}-{d}", marks=[pytest.mark.slow] if (d, seed) in SLOW_SHELLS else [])
        for d in range(1, 9)
        for seed in range(5)
    ],
)
def test_passes_equal_shells_in_every_dimension(monkeypatch, d, seed):
    """The separable passes give the shells' regions cell for cell, d = 1..8:
    dense and sparse cores, the spans' ids or many ids with exact ties, radii
    on and off the lattice, slabs of a few cells, and span ids too large for
    the 4-byte raster."""
    rng = np.random.default_rng(1000 * d + seed)
    full = predict.PASS_SLAB
    for share, n_labels in ((0.5, 0), (0.15, 5), (0.02, 0)):
        g, keys, labels = _dense_case(rng, d, share, n_labels)
        if seed == 4:
            labels = labels + (1 << 27)  # int64 raster of the passes
        for to in ("cells", "centres"):
            # (the shells' loop over the ball's offsets is slow beyond these in 7-D and 8-D)
            r = float(rng.choice([0.7, 1.0, 1.5, 2.0] + ([np.sqrt(5), np.sqrt(d), 2.3] if d <= 6 else [])))
            border = g.width * r
            got = {}
            for passes, slab in ((False, full), (True, full), (True, 7)):
                monkeypatch.setattr(predict, "_passes_cheaper", lambda *a, p=passes: p)
                monkeypatch.setattr(predict, "PASS_SLAB", slab)
                got[passes, slab] = predict.span_regions(g, keys, labels, border, to)
            want = got[False, full]
            for k, (gk, gl) in got.items():
                assert np.array_equal(gk, want[0]) and np.array_equal(gl, want[1]), (k, share, to, r)
            assert want[0].size >= keys.size


def test_dense_cores_take_the_passes(monkeypatch):
    """A dense 6-D core (a third of the cells, as in the 6-D case 5 of
    benchmarks.same_release) is labelled by the passes, never listing the
    border ball's offsets (the shells' walk took 80 s of CPU there)."""
    rng = np.random.default_rng(3)
    g, keys, labels = _dense_case(rng, 6, 0.35, 0)
    radius = 2.3
    reach, _, shape = predict._passes_window(g, keys, radius, "centres")
    assert predict._passes_cheaper(6, keys.size, radius, "centres", reach, shape)
    want = predict.span_regions(g, keys, labels, g.width * radius, "centres")

    def listed(*a, **k):
        raise AssertionError("the border ball's offsets were listed")

    monkeypatch.setattr(predict, "offset_distances", listed)
    got = predict.span_regions(g, keys, labels, g.width * radius, "centres")
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_sparse_cores_keep_the_shells():
    """A few core cells in a wide 2-D window: the shells (their offsets from
    each core cell) cost less than passes over every cell of the window."""
    g = Grid([0.0, 0.0], [40.0, 40.0], 0.2)
    keys = np.sort(g.encode(np.array([[5, 5], [100, 200], [300, 10]])))
    reach, _, shape = predict._passes_window(g, keys, 2.0, "centres")
    assert not predict._passes_cheaper(2, keys.size, 2.0, "centres", reach, shape)


@pytest.mark.parametrize("d", [2, 5, 8])
def test_ball_size_counts_the_offsets(d):
    """The shells' cost counts the border ball without listing it: the count
    equals the offsets of region_offsets within the border."""
    for to in ("cells", "centres"):
        for r in (0.7, 1.5, np.sqrt(5), 2.3):
            offs, dist = predict.offset_distances(d, r, to)
            within = dist <= r * (1 + 1e-9) if to == "centres" else dist < r * (1 - 1e-9)
            reach = int(np.abs(offs[within]).max())
            assert predict._ball_size(d, reach, r, to) == int(within.sum())
