"""The bound test's compiled kernels against brute-force numpy oracles.

The merge (:mod:`dpdbscan.post.coretests.bound.boundmerge`) must give the
components of "offset in NB" numbered by their smallest key; the run sums
(:mod:`dpdbscan.post.coretests.bound.boundsums`) the sum of the released
values at an offset of the set, exactly for integers and bit for bit as
:func:`~dpdbscan.post.sums.sparse_neighbour_sums` for floats.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.post.coretests.bound.boundmerge import block_offsets, merge_core_cells
from dpdbscan.post.coretests.bound.boundsums import run_sums
from dpdbscan.post.coretests.bound.triesums import box_sums_above, core_cells_by_boxes, trie_sums
from dpdbscan.post.sums import sparse_neighbour_sums

CASES = [(1, 4.0), (2, 4.0), (2, 2.0), (3, 4.0), (3, 8.0), (4, 4.0), (4, 2.0), (5, 4.0), (6, 8.0), (8, 16.0)]


def _random_cells(rng, grid: Grid, n: int, clustered: bool) -> np.ndarray:
    shape = np.array(grid.shape)
    if clustered:  # a few dense clumps, where blocks hold many cells and join often
        centres = rng.integers(0, shape, size=(3, grid.d))
        c = centres[rng.integers(0, 3, n)] + rng.integers(-2, 3, size=(n, grid.d))
        c = np.clip(c, 0, shape - 1)
    else:
        c = rng.integers(0, shape, size=(n, grid.d))
    return np.unique(grid.encode(c))


_NB: dict[tuple[int, float], set] = {}


def _in_nb(grid: Grid, diffs: np.ndarray) -> np.ndarray:
    """Whether each offset row is one of ``grid.offsets`` (by set membership)."""
    key = (grid.d, grid.eta)
    if key not in _NB:
        _NB[key] = {tuple(o) for o in grid.offsets.tolist()}
    nb = _NB[key]
    return np.array([tuple(o) in nb for o in diffs.tolist()], dtype=bool)


def _oracle_labels(grid: Grid, keys: np.ndarray) -> np.ndarray:
    """Every pair tested, components by repeated relabelling to the minimum,
    numbered by their smallest key (keys are sorted: by smallest index)."""
    m = keys.size
    c = grid.decode(keys)
    i, j = np.triu_indices(m, 1)
    hit = _in_nb(grid, c[j] - c[i])
    i, j = i[hit], j[hit]
    comp = np.arange(m)
    while True:
        low = np.minimum(comp[i], comp[j])
        new = comp.copy()
        np.minimum.at(new, i, low)
        np.minimum.at(new, j, low)
        new = new[new]
        if np.array_equal(new, comp):
            break
        comp = new
    _, labels = np.unique(comp, return_inverse=True)  # comp is the smallest index: in key order
    return labels.ravel()


@pytest.mark.parametrize("d, eta", CASES)
def test_merge_matches_the_pairwise_oracle(d, eta):
    rng = np.random.default_rng(d * 100 + int(eta))
    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    for trial in range(6):
        keys = _random_cells(rng, grid, int(rng.integers(1, 120)), clustered=trial % 2 == 0)
        assert np.array_equal(merge_core_cells(grid, keys), _oracle_labels(grid, keys))
    assert merge_core_cells(grid, keys[:0]).size == 0


@pytest.mark.parametrize("d, eta", [(2, 4.0), (3, 4.0), (4, 2.0), (5, 4.0)])
def test_block_offsets_cover_every_pair_of_blocks_in_reach(d, eta):
    """A block offset is listed when some pair of cells of the two blocks is
    in NB (checked over every offset of NB)."""
    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    from dpdbscan.cells.grid import gap2_limit

    listed = {tuple(o) for o in block_offsets(d, gap2_limit(d, eta)).tolist()}
    rng = np.random.default_rng(d)
    for o in grid.offsets:
        a = rng.integers(0, 2, d)  # a cell's place in its block
        D = (a + o) // 2
        if any(D):
            assert tuple(D) in listed or tuple(-D) in listed


@pytest.mark.parametrize("d, eta", CASES)
def test_run_sums_match_the_oracle(d, eta):
    rng = np.random.default_rng(d * 7 + int(eta))
    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    offsets = grid.offsets
    for trial in range(4):
        keys = _random_cells(rng, grid, int(rng.integers(1, 150)), clustered=trial % 2 == 0)
        query = _random_cells(rng, grid, 60, clustered=trial % 2 == 1)
        kc, qc = grid.decode(keys), grid.decode(query)
        ints = rng.integers(-5, 30, keys.size)
        floats = rng.normal(3.0, 2.0, keys.size)
        for vals in (ints, floats):
            want = np.zeros(query.size, dtype=np.float64)
            for q in range(query.size):
                inside = _in_nb(grid, kc - qc[q]) if offsets.shape[0] else np.zeros(keys.size, bool)
                want[q] = vals[inside].sum()
            got = run_sums(grid, keys, vals, query)
            if vals.dtype.kind == "i":
                assert got.dtype == np.int64
                assert np.array_equal(got, want.astype(np.int64))
            else:
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
                # the same additions in the same order as the numpy path
                assert np.array_equal(got, sparse_neighbour_sums(grid, keys, vals, query))


def test_run_sums_take_any_offset_set():
    """Sub-cell positions sum over subsets of NB (not symmetric, not runs of NB)."""
    rng = np.random.default_rng(5)
    grid = Grid(np.zeros(3), np.ones(3), 0.3, 4.0)
    offsets = grid.offsets[rng.random(grid.kappa) < 0.4]
    keys = _random_cells(rng, grid, 200, clustered=True)
    query = _random_cells(rng, grid, 80, clustered=True)
    vals = rng.integers(0, 9, keys.size)
    kc, qc = grid.decode(keys), grid.decode(query)
    chosen = {tuple(o) for o in offsets.tolist()}
    want = [
        sum(v for c, v in zip(kc.tolist(), vals) if tuple(np.subtract(c, q)) in chosen) for q in qc.tolist()
    ]
    assert np.array_equal(run_sums(grid, keys, vals, query, offsets), np.array(want))


@pytest.mark.parametrize("d, eta", CASES)
def test_trie_sums_match_the_oracle_bit_for_bit(d, eta):
    """The trie's walk adds the runs' differences in the runs' order."""
    rng = np.random.default_rng(d * 11 + int(eta))
    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    for trial in range(3):
        keys = _random_cells(rng, grid, int(rng.integers(1, 150)), clustered=trial % 2 == 0)
        query = _random_cells(rng, grid, 60, clustered=trial % 2 == 1)
        kc, qc = grid.decode(keys), grid.decode(query)
        ints = rng.integers(0, 30, keys.size)
        want = np.array([ints[_in_nb(grid, kc - q)].sum() for q in qc])
        assert np.array_equal(trie_sums(grid, keys, ints, qc), want)
        floats = rng.normal(3.0, 2.0, keys.size)
        assert np.array_equal(
            trie_sums(grid, keys, floats, qc), sparse_neighbour_sums(grid, keys, floats, query)
        )


def _box_oracle(grid: Grid, keys, vals, corners, side):
    """Sum over the released cells within NB of some cell of each box."""
    kc = grid.decode(keys)
    out = []
    steps = np.array(list(itertools.product(range(side), repeat=grid.d)), dtype=np.int64)
    for c in corners:
        near = np.zeros(keys.size, dtype=bool)
        for s in steps:
            near |= _in_nb(grid, kc - (c + s))
        out.append(vals[near].sum())
    return np.array(out)


@pytest.mark.parametrize("d, eta", [(1, 4.0), (2, 4.0), (3, 2.0), (4, 4.0)])
def test_box_sums_bound_every_cell_of_the_box(d, eta):
    rng = np.random.default_rng(d)
    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    keys = _random_cells(rng, grid, 80, clustered=True)
    vals = rng.integers(0, 9, keys.size)
    for side in (2, 4):
        corners = np.array(list(itertools.product(*(range(0, n, side) for n in grid.shape))), dtype=np.int64)
        corners = corners.reshape(-1, d)
        want = _box_oracle(grid, keys, vals, corners, side)
        assert np.array_equal(trie_sums(grid, keys, vals, corners, side), want)
        for floor in (1, 8, 20):
            assert np.array_equal(box_sums_above(grid, keys, vals, side, floor), corners[want >= floor])


@pytest.mark.parametrize("d, eta", [(1, 4.0), (2, 4.0), (3, 4.0), (4, 4.0), (5, 8.0)])
def test_core_cells_by_boxes_are_every_cell_that_reaches_the_threshold(d, eta, monkeypatch):
    from dpdbscan.post.coretests.bound import triesums

    rng = np.random.default_rng(d + 50)
    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    every = grid.all_coords()
    for first in (triesums.FIRST_BOXES, 1):  # one level, or every level from coarse boxes down
        monkeypatch.setattr(triesums, "FIRST_BOXES", first)
        for _trial in range(3):
            keys = _random_cells(rng, grid, 150, clustered=True)
            for vals in (rng.integers(0, 20, keys.size), rng.gamma(2.0, 3.0, keys.size)):
                sums = sparse_neighbour_sums(grid, keys, vals, grid.encode(every))
                for threshold in (5, 40, 120):
                    got, got_sums = core_cells_by_boxes(grid, keys, vals, threshold)
                    assert np.array_equal(got, grid.encode(every[sums >= threshold]))
                    assert np.array_equal(got_sums, sums[sums >= threshold])


@pytest.mark.parametrize("d, eta", CASES)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_position_sums_are_each_positions_run_sums_bit_for_bit(d, eta, k):
    """Every sub-position's sums in one walk: the run walk of that
    position's offsets (and the numpy path), integers and floats, bit for bit."""
    from dpdbscan.cells.subcells import SubcellLayout
    from dpdbscan.post.coretests.bound.positionsums import position_sums

    if k**d > 512:
        pytest.skip("positions enough in the smaller cases")
    rng = np.random.default_rng(d * 13 + k)
    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    layout = SubcellLayout(grid, k)
    for trial in range(3):
        keys = _random_cells(rng, grid, int(rng.integers(1, 150)), clustered=trial % 2 == 0)
        query = _random_cells(rng, grid, 50, clustered=trial % 2 == 1)
        for vals in (rng.integers(-5, 30, keys.size), rng.normal(3.0, 5.0, keys.size)):
            got = position_sums(grid, keys, vals, query, k)
            assert got.shape == (query.size, k**d)
            for p, (_, offsets) in enumerate(layout.positions):
                offsets = grid.offsets if offsets is None else offsets
                assert np.array_equal(got[:, p], run_sums(grid, keys, vals, query, offsets))
                assert np.array_equal(got[:, p], sparse_neighbour_sums(grid, keys, vals, query, offsets))


@pytest.mark.parametrize("d, k", [(5, 2), (6, 2), (3, 3)])
def test_merge_of_subcells_with_wide_blocks_matches_the_pairwise_oracle(d, k):
    """The sub-cells' finer grid allows blocks wider than 2 (every pair of a
    block in NB): the same components as every pair tested."""
    from dpdbscan.cells.grid import gap2_limit
    from dpdbscan.cells.subcells import SubcellLayout
    from dpdbscan.post.coretests.bound.boundmerge import block_side

    fine = SubcellLayout(Grid(np.zeros(d), np.ones(d), 0.3, 4.0), k).fine
    side = block_side(d, gap2_limit(d, fine.eta))
    assert side > 2
    steps = np.array(list(itertools.product(range(side), repeat=d)))
    assert _in_nb(fine, steps - steps[-1]).all()  # a block's far corners are neighbours
    rng = np.random.default_rng(d + k)
    for trial in range(6):
        keys = _random_cells(rng, fine, int(rng.integers(1, 120)), clustered=trial % 2 == 0)
        assert np.array_equal(merge_core_cells(fine, keys), _oracle_labels(fine, keys))


@pytest.mark.parametrize("d, eta", [(2, 2.0), (3, 2.0), (5, 2.0)])
def test_wide_block_offsets_cover_every_pair_of_blocks_in_reach(d, eta):
    from dpdbscan.cells.grid import gap2_limit
    from dpdbscan.post.coretests.bound.boundmerge import block_side

    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    lim = gap2_limit(d, eta)
    side = block_side(d, lim)
    listed = {tuple(o) for o in block_offsets(d, lim, side).tolist()}
    rng = np.random.default_rng(d)
    for o in grid.offsets:
        a = rng.integers(0, side, d)  # a cell's place in its block
        D = (a + o) // side
        if any(D):
            assert tuple(D) in listed or tuple(-D) in listed
