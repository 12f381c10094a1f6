"""Merging core cells by key runs equals one lookup per offset."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid

# eta = 1 in d = 4 (trials 11 and 23: 16^4 cells, 21,056 offsets) and the
# second d = 3 one (14) cost the one-lookup-per-offset reference seconds a
# trial; they run in `make test-slow`. `make test` keeps d = 4 at eta 4 and 2
# and eta = 1 in d <= 3 (trial 2 for d = 3).
SLOW_TRIALS = (11, 14, 23)


@pytest.mark.parametrize(
    "trial", [pytest.param(t, marks=pytest.mark.slow) if t in SLOW_TRIALS else t for t in range(24)]
)
def test_merge_by_runs_matches_one_lookup_per_offset(trial):
    from dpdbscan.post.merge import _merge_by_offsets, merge_cells

    rng = np.random.default_rng(300 + trial)
    d = trial % 4 + 1
    eta = [4.0, 2.0, 1.0][trial % 3]
    g = Grid(np.zeros(d), np.ones(d), {1: 0.01, 2: 0.05, 3: 0.2, 4: 0.5}[d], eta)
    density = rng.uniform(0.01, 0.4)
    coords = (
        np.argwhere(rng.random(g.shape) < density)
        if g.n_cells < 2e5
        else np.unique(np.stack([rng.integers(0, s, 5000) for s in g.shape], 1), axis=0)
    )
    keys = np.sort(g.encode(coords))
    positive = np.array([o for o in g.offsets if tuple(o) > (0,) * d]).reshape(-1, d)
    assert np.array_equal(merge_cells(g, keys), _merge_by_offsets(g, keys, positive))


def test_merge_by_runs_edge_cases():
    from dpdbscan.post.merge import merge_cells

    g = Grid(np.zeros(2), np.ones(2), 0.1)
    assert merge_cells(g, np.zeros(0, np.int64)).size == 0
    one = g.encode(np.array([[3, 3]]))
    assert merge_cells(g, one).tolist() == [0]
    # two cells in the same row just out of reach, and on opposite row ends
    far = np.sort(g.encode(np.array([[0, 0], [0, g.reach + 1], [1, g.shape[1] - 1]])))
    assert merge_cells(g, far).tolist() == [0, 1, 2]


@pytest.mark.parametrize("trial", range(16))
def test_subset_merge_equals_a_fresh_merge_of_the_subset(trial):
    """SubsetMerge looks neighbours up once on the full key set; merging a
    subset through it must equal merging the subset from scratch, for
    nested MinPts-like subsets and for arbitrary ones, NB or centre offsets."""
    from dpdbscan.post.merge import SubsetMerge, centre_offsets, merge_cells, radius_cells2

    rng = np.random.default_rng(900 + trial)
    d = trial % 3 + 1
    g = Grid(np.zeros(d), np.ones(d), {1: 0.01, 2: 0.02, 3: 0.1}[d], [4.0, 2.0][trial % 2])
    offsets = None if trial % 4 < 2 else centre_offsets(d, radius_cells2(g, g.eps))
    reach = max(1, len(g.offsets if offsets is None else offsets))
    n = int(min(3000, 0.8 * g.n_cells / reach))  # below percolation: several spans
    coords = np.unique(np.stack([rng.integers(0, s, n) for s in g.shape], 1), axis=0)
    keys = np.sort(g.encode(coords))
    merge = SubsetMerge(g, keys, offsets)
    assert np.array_equal(merge.labels(), merge_cells(g, keys, offsets))
    score = rng.random(keys.size)
    for level in (0.0, 0.3, 0.7, 0.99, 1.0):  # nested subsets, down to none
        mask = score >= level
        assert np.array_equal(merge.labels(mask), merge_cells(g, keys[mask], offsets))
    mask = rng.random(keys.size) < 0.5  # and any subset
    got = merge.labels(mask)
    assert np.array_equal(got, merge_cells(g, keys[mask], offsets))
    assert np.unique(got).size > 1  # the check is not vacuous: the subset has several spans


def test_no_core_cells_need_no_neighbourhood():
    """With nothing to merge, NB is never enumerated: in d = 10 it has
    52 million offsets, more than a Grid will list (scikit-learn's checks
    fit such data and get no core cell)."""
    from dpdbscan.post.merge import SubsetMerge, merge_cells

    g = Grid(np.zeros(10), np.ones(10), 0.5)
    with pytest.raises(ValueError, match="cannot be enumerated"):
        g.offsets  # noqa: B018 - the property is what raises
    empty = np.zeros(0, np.int64)
    assert merge_cells(g, empty).size == 0
    assert SubsetMerge(g, empty).labels(np.zeros(0, bool)).size == 0


@pytest.mark.parametrize("trial", range(8))
def test_counts_below_by_table_equal_binary_searches(trial, monkeypatch):
    """The neighbour intervals from the cumulative count table are the
    binary searches' (the table is used where the keys' span is small),
    and so are the spans."""
    from dpdbscan.cells.pairs import forced
    from dpdbscan.post import merge as merge_mod
    from dpdbscan.post.merge import SubsetMerge, centre_offsets, radius_cells2

    rng = np.random.default_rng(1300 + trial)
    d = trial % 4 + 1
    g = Grid(np.zeros(d), np.ones(d), {1: 0.01, 2: 0.02, 3: 0.1, 4: 0.3}[d], 4.0)
    n = int(min(2000, 0.3 * g.n_cells))
    coords = np.unique(np.stack([rng.integers(0, s, n) for s in g.shape], 1), axis=0)
    keys = np.sort(g.encode(coords))
    probe = np.concatenate([keys - 3, keys, keys + 1, [keys[0] - 10**6, keys[-1] + 10**6]])
    below = merge_mod._counts_below(keys, 10)
    assert below.__name__ == "below"  # the table, not the searches
    assert np.array_equal(below(probe), np.searchsorted(keys, probe, side="left"))
    offsets = centre_offsets(d, radius_cells2(g, g.eps)) if trial % 2 else None
    with forced(False):  # the runs, whatever the pairs would cost
        with_table = SubsetMerge(g, keys, offsets)
        monkeypatch.setattr(merge_mod, "_MAX_TABLE", 0)
        searched = SubsetMerge(g, keys, offsets)
    assert len(with_table.intervals) == len(searched.intervals) > 0
    for (a, b), (c, e) in zip(with_table.intervals, searched.intervals):
        assert np.array_equal(a, c) and np.array_equal(b, e)
    assert np.array_equal(with_table.labels(), searched.labels())


@pytest.mark.parametrize("trial", range(12))
def test_merge_by_pairs_equals_merge_by_runs(trial):
    """The edges from the pairs of cells within reach (high dimension) give
    the same labels as the runs, for the whole key set and for subsets."""
    from dpdbscan.cells.pairs import forced
    from dpdbscan.post.merge import SubsetMerge, centre_offsets, radius_cells2

    rng = np.random.default_rng(1300 + trial)
    d = trial % 6 + 1 if trial < 6 else trial % 5 + 2  # (no centre offsets in 1-D)
    g = Grid(np.zeros(d), np.ones(d), {1: 0.01, 2: 0.02, 3: 0.05, 4: 0.1, 5: 0.15, 6: 0.2}[d], 4.0)
    offsets = None if trial < 6 else centre_offsets(d, radius_cells2(g, g.eps))
    n = int(min(1500, 0.8 * g.n_cells / len(g.offsets if offsets is None else offsets)))
    coords = np.unique(np.stack([rng.integers(0, s, n) for s in g.shape], 1), axis=0)
    keys = np.sort(g.encode(coords))
    with forced(False):
        runs = SubsetMerge(g, keys, offsets)
    with forced(True):
        pairs = SubsetMerge(g, keys, offsets)
    assert runs.edges is None and pairs.edges is not None
    assert np.array_equal(pairs.labels(), runs.labels())
    for mask in (rng.random(keys.size) < 0.5, rng.random(keys.size) < 0.1, np.zeros(keys.size, bool)):
        assert np.array_equal(pairs.labels(mask), runs.labels(mask))
    assert np.unique(runs.labels()).size > 1 or keys.size < 2


@pytest.mark.parametrize("trial", range(8))
def test_merge_by_a_spanning_forest_equals_merge_by_runs(trial):
    """The pairs joined by a union-find as the walk finds them, kept as a
    spanning forest: the same labels of all the keys as the runs; a subset
    is refused (the forest lost its edges)."""
    from dpdbscan.cells.pairs import forced
    from dpdbscan.post import merge as merge_mod
    from dpdbscan.post.merge import SubsetMerge, centre_offsets, radius_cells2

    rng = np.random.default_rng(1700 + trial)
    d = trial % 4 + 2
    g = Grid(np.zeros(d), np.ones(d), {2: 0.02, 3: 0.05, 4: 0.1, 5: 0.15}[d], 4.0)
    offsets = None if trial < 4 else centre_offsets(d, radius_cells2(g, g.eps))
    n = int(min(1500, 0.8 * g.n_cells / len(g.offsets if offsets is None else offsets)))
    blob = np.array(g.shape) // 3 + rng.integers(-3, 4, (300, d))  # a dense corner: many pairs
    scatter = np.stack([rng.integers(0, s, n) for s in g.shape], 1)
    keys = np.unique(g.encode(np.concatenate([blob, scatter])))
    with forced(False):
        expect = SubsetMerge(g, keys, offsets).labels()
    with forced(True):
        forest = SubsetMerge(g, keys, offsets, subsets=False)
        assert forest.edges is not None and forest.edges[0].size < keys.size
        assert np.array_equal(forest.labels(), expect)
        assert np.array_equal(merge_mod.merge_cells(g, keys, offsets), expect)
    assert np.unique(expect).size > 1
    with pytest.raises(ValueError, match="all its keys"):
        forest.labels(rng.random(keys.size) < 0.5)


def _oracle_labels(g, keys, offsets):
    """Span labels by brute force: every pair of keys, joined when their
    offset is one of the set's; components numbered by their smallest key."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from dpdbscan.cells.pairs import offset_codes

    coords = g.decode(keys)
    R = int(np.abs(offsets).max())
    codes = np.sort(offset_codes(offsets, R))
    i, j = np.triu_indices(keys.size, 1)
    diff = coords[j] - coords[i]
    near = np.abs(diff).max(axis=1) <= R
    i, j, diff = i[near], j[near], diff[near]
    c = offset_codes(diff, R)
    at = np.minimum(np.searchsorted(codes, c), codes.size - 1)
    hit = codes[at] == c
    graph = coo_matrix((np.ones(int(hit.sum())), (i[hit], j[hit])), shape=(keys.size, keys.size))
    _, comp = connected_components(graph, directed=False)
    first = {}
    for lab in comp:  # keys are sorted: the first row is the smallest key
        first.setdefault(lab, len(first))
    return np.array([first[lab] for lab in comp], dtype=np.int64)


# (d, k, eps of the coarse grid): fine grids of a few thousand to 10^8 sub-cells
_SUBCELL_CASES = [
    (1, 2, 0.01), (1, 3, 0.01), (2, 2, 0.02), (2, 3, 0.03), (3, 2, 0.05), (3, 1, 0.05),
    (4, 2, 0.1), (4, 3, 0.2), (5, 2, 0.2), (6, 2, 0.3), (6, 1, 0.2), (7, 2, 0.4), (8, 2, 0.5),
]  # fmt: skip


@pytest.mark.parametrize(
    # (8-D dense: 4-19 s a case, by the load: make test-slow; 8-D sparse stays)
    "case, dense",
    [
        pytest.param(c, dense, id=f"{c}-{'dense' if dense else 'sparse'}", marks=pytest.mark.slow)
        if _SUBCELL_CASES[c][0] == 8 and dense
        else pytest.param(c, dense, id=f"{c}-{'dense' if dense else 'sparse'}")
        for dense in (True, False)
        for c in range(len(_SUBCELL_CASES))
    ],
)
def test_merge_of_sub_cells_equals_brute_force(case, dense):
    """Core sub-cells merged by centres within alpha (and by NB on the fine
    grid), through the walk over blocks of a cell's own sub-cells (k > 1) or
    over the sub-cells (k = 1), runs or pairs: the components of every pair
    of keys tested against the offset set, d = 1..8."""
    from dpdbscan.cells.pairs import forced
    from dpdbscan.post import merge as merge_mod
    from dpdbscan.post.merge import centre_offsets, merge_cells, radius_cells2

    d, k, eps = _SUBCELL_CASES[case]
    rng = np.random.default_rng(2100 + 2 * case + dense)
    fine = Grid(np.zeros(d), np.ones(d), eps).subdivided(k)
    shape = np.array(fine.shape)
    if dense:
        # blobs of whole and partly filled cells along the diagonal, apart
        centres = np.floor(np.array([0.15, 0.5, 0.85])[:, None] * shape).astype(np.int64)
        pts = centres[rng.integers(0, 3, 1500)] + rng.integers(-k, k + 1, (1500, d))
    else:
        pts = rng.integers(0, shape, (600, d))
    pts = pts[(pts >= 0).all(axis=1) & (pts < shape).all(axis=1)]
    keys = np.unique(fine.encode(pts))
    sets = [centre_offsets(d, radius_cells2(fine, fine.eps))]
    if d <= 5:
        sets.append(fine.offsets)
    for offsets in sets:
        expect = _oracle_labels(fine, keys, offsets)
        with forced(True):
            assert np.array_equal(merge_cells(fine, keys, offsets), expect)
        if d <= 6:  # (the runs of millions of offsets take a minute in 8-D)
            with forced(False):
                assert np.array_equal(merge_cells(fine, keys, offsets), expect)
        assert np.array_equal(merge_cells(fine, keys, offsets), expect)
    if k > 1:  # the blocks are a cell's own sub-cells
        from dpdbscan.cells.pairs import OffsetWeights, offset_codes

        off = sets[0]
        R = int(np.abs(off).max())
        joined = OffsetWeights(offset_codes(off, R), np.ones(len(off)), R, d)
        assert merge_mod._block_side(joined, R, d) == k
    assert np.unique(expect).size > 1 or not dense  # the dense keys split into several spans


@pytest.mark.parametrize("trial", range(12))
def test_merge_by_blocks_equals_brute_force(trial, monkeypatch):
    """Where a cube of b^d cells is all joined (b >= 2: 3-D sub-cells, and
    2-D at some radii), blocks of cells with masks and a reach table per
    block offset (:func:`_block_labels`) give the components of every pair
    of keys tested against the offset set: clustered and scattered keys,
    grids whose sides are not multiples of b, radii around the lattice's."""
    from dpdbscan.post import merge as merge_mod
    from dpdbscan.post.merge import SubsetMerge, _block_labels, _block_tables, centre_offsets

    rng = np.random.default_rng(4100 + trial)
    d = [1, 2, 3][trial % 3]
    r2 = float(rng.choice([4.0, 6.0, 9.0, 12.0, 17.0]))  # (above d: the diagonal joins)
    offsets = centre_offsets(d, r2)
    R = int(np.abs(offsets).max())
    tables = _block_tables(d, R, offsets.tobytes())
    assert tables is not None and tables[0] >= 2
    g = Grid(np.zeros(d), np.ones(d), {1: 0.002, 2: 0.03, 3: 0.05}[d], 4.0)
    shape = np.array(g.shape)
    if trial % 2:
        centres = rng.integers(0, shape, (4, d))
        pts = centres[rng.integers(0, 4, 800)] + rng.integers(-3, 4, (800, d))
    else:
        pts = rng.integers(0, shape, (400, d))
    pts = pts[(pts >= 0).all(axis=1) & (pts < shape).all(axis=1)]
    keys = np.unique(g.encode(pts))
    expect = _oracle_labels(g, keys, offsets)
    got = _block_labels(g, keys, offsets)
    assert got is not None
    assert np.array_equal(got, expect)
    if d == 3:  # the compiled union-find of large 3-D tables (compiler loaded): the same labels
        from dpdbscan.cells import pairkernels

        monkeypatch.setattr(merge_mod, "_COMPILED_BLOCKS", 0)
        called = []
        kernel = pairkernels.mask_block_roots
        monkeypatch.setattr(pairkernels, "mask_block_roots", lambda *a: called.append(1) or kernel(*a))
        assert np.array_equal(_block_labels(g, keys, offsets), expect)
        assert called
        monkeypatch.undo()
    if R <= g.reach:  # (the runs' key arithmetic needs offsets within the keys' padding)
        assert np.array_equal(SubsetMerge(g, keys, offsets, subsets=False).labels(), expect)
    assert np.unique(expect).size > 1


def test_merge_by_blocks_declines_where_it_does_not_apply():
    """No cube of two cells per axis all joined, or more cells in a block
    than a mask holds: the runs or the pairs merge, as before."""
    from dpdbscan.post.merge import _block_labels, _block_tables, centre_offsets

    # the four axis neighbours only: no 2x2 block is all joined
    cross = centre_offsets(2, 2.0)
    assert _block_tables(2, 1, cross.tobytes()) is None
    g = Grid(np.zeros(2), np.ones(2), 0.05, 4.0)
    keys = np.arange(0, 50, dtype=np.int64)
    assert _block_labels(g, keys, cross) is None
    # 4-D: a block of 2^4 cells is more than the masks hold
    off4 = centre_offsets(4, 12.0)
    assert _block_tables(4, int(np.abs(off4).max()), off4.tobytes()) is None


def test_merge_of_all_keys_is_not_held_to_the_pairs_bound(monkeypatch):
    """A merge of all the keys (``subsets=False``) keeps a spanning forest,
    memory linear in the keys whatever the pairs, so the bound on pairs
    held at once (:data:`~dpdbscan.cells.pairs.MAX_PAIRS`) must not send it
    to the runs, whose intervals are two words per run and key: same_release
    case 5 (6-D, two sub-cells, 153k core sub-cells, 7,233 runs) asked 17 GB
    there and died in ``post/merge.py``. Here the bound is lowered below
    this merge's expected pairs instead of raising the keys to 153k."""
    import tracemalloc

    from dpdbscan.cells import pairs as pairs_mod
    from dpdbscan.cells.pairs import forced
    from dpdbscan.post.merge import SubsetMerge, _runs, centre_offsets, radius_cells2

    rng = np.random.default_rng(5)
    fine = Grid(np.zeros(6), np.ones(6), 0.45).subdivided(2)
    offsets = centre_offsets(6, radius_cells2(fine, fine.eps))
    shape = np.array(fine.shape)
    centres = np.floor(np.array([0.2, 0.8])[:, None] * shape).astype(np.int64)
    pts = centres[rng.integers(0, 2, 4000)] + rng.integers(-2, 3, (4000, 6))
    keys = np.unique(fine.encode(np.clip(pts, 0, shape - 1)))
    m = keys.size
    runs = len(_runs(SubsetMerge(fine, keys[:1], offsets).positive))
    expected = m * m * len(offsets) / fine.n_cells
    monkeypatch.setattr(pairs_mod, "MAX_PAIRS", int(expected / 2))
    with forced(False):
        want = SubsetMerge(fine, keys, offsets).labels()
    SubsetMerge(fine, keys, offsets, subsets=False).labels()  # the kernels' first call, untraced
    tracemalloc.start()
    try:
        merge = SubsetMerge(fine, keys, offsets, subsets=False)
        got = merge.labels()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert merge.edges is not None and not merge.intervals
    assert np.array_equal(got, want) and np.unique(want).size == 2
    assert peak < 2 * 8 * runs * m / 8, (peak, 2 * 8 * runs * m)
    # a merge for subsets still holds its pairs within the bound: the runs
    assert SubsetMerge(fine, keys, offsets).edges is None


def test_a_merge_for_subsets_holds_no_more_pair_edges_than_its_bound(monkeypatch):
    """Where the pairs pay (4-D and up) a merge for subsets holds the edges
    it finds. The cost model bounds the pairs expected if the keys were
    spread evenly; clustered keys have many more, so the edges are counted
    as they are found: past :data:`~dpdbscan.post.merge._HELD_PAIRS` none is
    held and each subset is merged afresh. Here two tight clusters of 4-D
    sub-cells, whose evenly spread estimate is far below the bound, and the
    bound lowered below their edges; the labels of nested subsets are the
    runs' either way."""
    from dpdbscan.cells.pairs import forced
    from dpdbscan.post import merge as merge_mod
    from dpdbscan.post.merge import SubsetMerge, centre_offsets, radius_cells2

    rng = np.random.default_rng(11)
    fine = Grid(np.zeros(4), np.ones(4), 0.1).subdivided(2)
    offsets = centre_offsets(4, radius_cells2(fine, fine.eps))
    shape = np.array(fine.shape)
    centres = np.floor(np.array([0.2, 0.8])[:, None] * shape).astype(np.int64)
    pts = centres[rng.integers(0, 2, 3000)] + rng.integers(-3, 4, (3000, 4))
    keys = np.unique(fine.encode(np.clip(pts, 0, shape - 1)))
    m = keys.size
    masks = [None] + [rng.random(m) >= q for q in (0.3, 0.6)]
    with forced(False):
        want = [SubsetMerge(fine, keys, offsets).labels(mask) for mask in masks]
    with forced(True):
        held = SubsetMerge(fine, keys, offsets)
        assert held.edges is not None and not held.fresh
        edges = held.edges[0].size
        assert m * m * len(offsets) / fine.n_cells < edges / 10  # clustered: 10x the even spread's
        assert all(np.array_equal(held.labels(mask), w) for mask, w in zip(masks, want))
        monkeypatch.setattr(merge_mod, "_HELD_PAIRS", edges // 3, raising=False)
        merge = SubsetMerge(fine, keys, offsets)
    assert merge.edges is None or merge.edges[0].size <= edges // 3
    assert merge.fresh and not merge.intervals
    assert all(np.array_equal(merge.labels(mask), w) for mask, w in zip(masks, want))
    assert np.unique(want[0]).size == 2


def _subcell_keys(case, dense, seed):
    """The keys of :func:`test_merge_of_sub_cells_equals_brute_force`'s case on its fine grid."""
    d, k, eps = _SUBCELL_CASES[case]
    rng = np.random.default_rng(seed)
    fine = Grid(np.zeros(d), np.ones(d), eps).subdivided(k)
    shape = np.array(fine.shape)
    if dense:
        centres = np.floor(np.array([0.15, 0.5, 0.85])[:, None] * shape).astype(np.int64)
        pts = centres[rng.integers(0, 3, 1500)] + rng.integers(-k, k + 1, (1500, d))
    else:
        pts = rng.integers(0, shape, (600, d))
    pts = pts[(pts >= 0).all(axis=1) & (pts < shape).all(axis=1)]
    return fine, np.unique(fine.encode(pts)), rng


@pytest.mark.parametrize("dense", [True, False], ids=["dense", "sparse"])
@pytest.mark.parametrize(
    # (8-D: 4.3M centre offsets, a quarter of a minute a case: make test-slow)
    "case",
    [
        pytest.param(c, marks=pytest.mark.slow) if _SUBCELL_CASES[c][0] == 8 else c
        for c in range(len(_SUBCELL_CASES))
    ],
)
def test_subset_merge_beyond_the_held_bound_equals_brute_force(case, dense, monkeypatch):
    """A merge for many subsets whose runs' intervals would pass the bytes
    it may hold (:data:`_HELD_BYTES`, here 0) holds none: each subset is
    merged afresh, and all the keys by the runs a chunk at a time. Every
    subset's labels, bit for bit, are the components of every pair of the
    subset's keys tested against the offset set (and those of the held
    intervals where they are made): d = 1..8, dense and sparse, one to
    three sub-cells, centres within alpha (the density test) and NB (the
    bound test's offsets), nested MinPts-like subsets and any subset."""
    from contextlib import nullcontext

    from dpdbscan.cells.pairs import forced
    from dpdbscan.post import merge as merge_mod
    from dpdbscan.post.merge import SubsetMerge, centre_offsets, radius_cells2

    d = _SUBCELL_CASES[case][0]
    fine, keys, rng = _subcell_keys(case, dense, 7100 + 2 * case + dense)
    score = rng.random(keys.size)
    masks = [None, *(score >= q for q in (0.2, 0.5, 0.8)), rng.random(keys.size) < 0.4]
    sets = [centre_offsets(d, radius_cells2(fine, fine.eps))]
    if d <= 5:
        sets.append(None)  # NB of the fine grid
    several = False
    for offsets in sets:
        full = fine.offsets if offsets is None else offsets
        expect = [_oracle_labels(fine, keys if m is None else keys[m], full) for m in masks]
        several |= any(np.unique(e).size > 1 for e in expect)
        # held: the intervals as today (d <= 6: the runs of millions of offsets take a minute in 8-D)
        for held in (1 << 28, 0) if d <= 6 else (0,):
            monkeypatch.setattr(merge_mod, "_HELD_BYTES", held)
            with forced(False):  # the runs, not the pairs' edges
                merge = SubsetMerge(fine, keys, offsets)
            assert merge.edges is None
            assert merge.fresh == (held == 0) and bool(merge.intervals) == (held > 0)
            for mask, want in zip(masks, expect):
                assert np.array_equal(merge.labels(mask), want)
        if d <= 6:
            # all the keys by the runs in chunks of one run and of a few
            for chunk in (1, 16 * keys.size * 3):
                monkeypatch.setattr(merge_mod, "_CHUNK_BYTES", chunk)
                with forced(False) if d > 3 else nullcontext():
                    whole = SubsetMerge(fine, keys, offsets, subsets=False)
                assert whole.edges is None and not whole.intervals and whole.runs
                assert np.array_equal(whole.labels(), expect[0])
    assert several or not dense  # the dense keys split into several spans


def test_subset_merge_memory_is_bounded_by_keys_not_runs_times_keys(monkeypatch):
    """A merge for subsets (the MinPts ladder, ``sweep``) whose pairs would
    pass the bound on pairs held at once used to hold two int64 intervals
    per run and key: a sweep of same_release case 5's release (6-D, two
    sub-cells, 153,101 core sub-cells, 7,233 runs) asked about 17 GB and
    died. Beyond :data:`_HELD_BYTES` it holds none; each subset is merged
    afresh (a spanning forest). Here the bounds are lowered below this
    merge's sizes instead of raising the keys to 153k, and the labels of
    nested subsets are the held intervals' bit for bit."""
    import tracemalloc

    from dpdbscan.cells import pairs as pairs_mod
    from dpdbscan.cells.pairs import forced
    from dpdbscan.post import merge as merge_mod
    from dpdbscan.post.merge import SubsetMerge, _runs, centre_offsets, radius_cells2

    rng = np.random.default_rng(5)
    fine = Grid(np.zeros(6), np.ones(6), 0.45).subdivided(2)
    offsets = centre_offsets(6, radius_cells2(fine, fine.eps))
    shape = np.array(fine.shape)
    centres = np.floor(np.array([0.2, 0.8])[:, None] * shape).astype(np.int64)
    pts = centres[rng.integers(0, 2, 4000)] + rng.integers(-2, 3, (4000, 6))
    keys = np.unique(fine.encode(np.clip(pts, 0, shape - 1)))
    m = keys.size
    runs = len(_runs(SubsetMerge(fine, keys[:1], offsets).positive))
    held = 16 * runs * m  # the intervals' bytes
    monkeypatch.setattr(pairs_mod, "MAX_PAIRS", int(m * m * len(offsets) / fine.n_cells / 2))
    score = rng.random(m)
    masks = [score >= q for q in (0.0, 0.3, 0.6)]
    with forced(False):
        want = [SubsetMerge(fine, keys, offsets).labels(mask) for mask in masks]
    monkeypatch.setattr(merge_mod, "_HELD_BYTES", held // 8, raising=False)
    SubsetMerge(fine, keys, offsets, subsets=False).labels()  # the kernels' first call, untraced
    tracemalloc.start()
    try:
        merge = SubsetMerge(fine, keys, offsets)
        got = [merge.labels(mask) for mask in masks]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < held / 8, (peak, held)
    assert merge.edges is None and not merge.intervals
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert np.unique(want[0]).size == 2


@pytest.mark.parametrize(
    "d, eps, kw, person",
    [
        (3, 0.06, dict(subcells=2), False),
        (4, 0.12, dict(subcells=2), False),
        (4, 0.12, dict(subcells=1), True),
        # (the density sums of 5-D sub-cells take half a minute: make test-slow)
        pytest.param(5, 0.1, dict(subcells=2, histogram="sparse"), False, marks=pytest.mark.slow),
    ],
    ids=["3-D k=2", "4-D k=2", "4-D person level", "5-D sparse k=2"],
)
def test_sweep_beyond_the_held_bound_is_the_same(d, eps, kw, person, monkeypatch):
    """A sweep over (eps, MinPts) of one release (the MinPts ladder of
    ``sweep``, ``with_params``' neighbours and the automatic mode's
    candidates) gives the same partitions, keys and labels bit for bit,
    when its merges hold no intervals (each subset merged afresh, all the
    keys by the runs in chunks of a few runs): one and two sub-cells, dense
    and sparse, event and person level. (The bound test's ladder builds
    each MinPts alone, by its own merge; its offsets, NB, are merged beyond
    the bound in :func:`test_subset_merge_beyond_the_held_bound_equals_brute_force`.)"""
    import warnings

    from dpdbscan import DPDBSCAN
    from dpdbscan.post import merge as merge_mod
    from dpdbscan.research import ladder_sweep

    rng = np.random.default_rng(40 + d)
    centres = rng.uniform(0.25, 0.75, (4, d))
    X = np.clip(centres[rng.integers(0, 4, 6000)] + rng.normal(0, 0.03, (6000, d)), 0, 1)
    args = dict(eps=eps, min_samples=10, epsilon=1.0, bounds=(0.0, 1.0), random_state=3, **kw)
    if person:
        args.update(delta=1e-6, max_cells_per_unit=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(**args).fit(X, units=np.arange(6000) // 3 if person else None)
    hist, spec = est.spans_.histogram, est.spans_.spec
    grid = ([eps, 1.5 * eps], [5, 10, 20, 40])
    # the merges by the runs, not the pairs' edges (the sums as the cost model says)
    monkeypatch.setattr(merge_mod, "pairs_cheaper", lambda *a, **k: False)
    want = ladder_sweep(hist, spec, *grid)
    monkeypatch.setattr(merge_mod, "_HELD_BYTES", 0)
    monkeypatch.setattr(merge_mod, "_CHUNK_BYTES", 1 << 20)  # chunks of a few runs
    got = ladder_sweep(hist, spec, *grid)
    assert sorted(got) == sorted(want)
    for key, part in want.items():
        assert np.array_equal(got[key].keys, part.keys) and np.array_equal(got[key].labels, part.labels)
    assert max(part.n_spans for part in want.values()) > 1  # spans to tell apart
