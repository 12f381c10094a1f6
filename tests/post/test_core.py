import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.post.coretests.bound import corecells as core
from dpdbscan.post.sums import dense_neighbour_sums

from releases import make_histogram


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
    return make_histogram(grid=grid, kind="sparse", values=vals[vals > 0], keys=keys, theta=3.0), vals


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


@pytest.mark.parametrize("layout_k", [1, 2])
@pytest.mark.parametrize("d,alpha,seed", [(2, 0.04, 0), (3, 0.15, 2)])
def test_core_cells_in_chunks_of_candidates_change_nothing(monkeypatch, d, alpha, seed, layout_k):
    """Sums taken a few candidates at a time (to bound the pairs in memory)
    give the same core cells and sums as in one go, also with every bound
    tight (small neighbourhood chunks, few listed bucket cells)."""
    from dpdbscan.cells.subcells import SubcellLayout
    from dpdbscan.post import pruning, sums

    grid = Grid(np.zeros(d), np.ones(d), alpha)
    hist, _ = _sparse_hist(grid, seed)
    layout = SubcellLayout(grid, layout_k)
    expect = [core.core_cells(hist, thr, layout) for thr in (100.0, 400.0)]
    assert expect[1][0].size > 0
    monkeypatch.setattr(core, "_query_chunk", lambda hist: 7)
    monkeypatch.setattr(core, "_BUCKET_PRUNE_ABOVE", 0)
    monkeypatch.setattr(sums, "NEIGHBOURHOOD_CHUNK", 3 * grid.kappa)
    monkeypatch.setattr(pruning, "MAX_BUCKET_CELLS", 10)
    for thr, (k0, s0) in zip((100.0, 400.0), expect, strict=True):
        k1, s1 = core.core_cells(hist, thr, layout)
        assert np.array_equal(k0, k1) and np.array_equal(s0, s1)


def test_sparse_threshold_must_be_positive():
    grid = Grid([0, 0], [1, 1], 0.1)
    hist, _ = _sparse_hist(grid, 0)
    with pytest.raises(ValueError, match="every cell"):
        core.core_cells(hist, 0.0)


def test_sum_threshold_rules():
    assert core.sum_threshold(10, 30.0, True) == 40.0
    assert core.sum_threshold(10, 30.0, False) == -20.0


# --------------------------------------------------------------------------- #
# sub-cell core cells: candidates first, then sums at the candidates only


def _core_subcells_reference(hist, threshold, layout):
    """The per-position loop over the whole universe (before the speed-up)."""
    from dpdbscan.post.coretests.bound import corecells as core

    keys, sums = [], []
    for pos, offsets in layout.positions:
        if hist.kind == "dense":
            from dpdbscan.post.sums import dense_neighbour_sums

            S = dense_neighbour_sums(hist.grid, hist.values, offsets)
            mask = S >= threshold
            ck, cs = hist.grid.encode(np.argwhere(mask)), S[mask]
        else:
            ck, cs = core._core_cells(hist, threshold, offsets, layout.kappa_q)
        fk = layout.fine_keys(ck, pos)
        if fk.size != ck.size:
            c = hist.grid.decode(ck) * layout.k + np.asarray(pos)
            cs = cs[np.all(c < np.asarray(layout.fine.shape), axis=1)]
        keys.append(fk)
        sums.append(cs)
    keys, sums = np.concatenate(keys), np.concatenate(sums)
    order = np.argsort(keys, kind="stable")
    return keys[order], sums[order]


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("kind", ["dense-int", "dense-float", "sparse"])
@pytest.mark.parametrize("k", [2, 3])
def test_subcell_core_cells_match_full_evaluation(d, kind, k):
    from dpdbscan.cells.subcells import SubcellLayout
    from dpdbscan.post.coretests.bound import corecells as core

    rng = np.random.default_rng(d * 10 + k)
    g = Grid(np.zeros(d), np.full(d, 1.0), {1: 0.01, 2: 0.04, 3: 0.2}[d])
    layout = SubcellLayout(g, k)
    counts = np.zeros(g.shape, dtype=np.int64)
    for _ in range(4):  # blobs
        c = rng.uniform(0, 1, d)
        pts = c + rng.normal(0, 0.05, (3000, d))
        coords = np.clip(((pts - g.lower) / g.width).astype(int), 0, np.array(g.shape) - 1)
        np.add.at(counts, tuple(coords.T), 1)
    if kind == "sparse":
        vals = counts + rng.integers(0, 3, g.shape)
        keys = g.encode(np.argwhere(vals >= 2))
        hist = make_histogram(grid=g, kind="sparse", values=vals[vals >= 2], keys=keys, theta=2.0)
    else:
        noise = rng.laplace(0, 2, g.shape)
        vals = counts + (noise if kind == "dense-float" else np.round(noise).astype(np.int64))
        hist = make_histogram(grid=g, kind="dense", values=vals)
    for thr in (20.0, 60.0, 150.0):
        k0, s0 = _core_subcells_reference(hist, thr, layout)
        k1, s1 = core.core_cells(hist, thr, layout)
        assert np.array_equal(k0, k1) and np.array_equal(s0, s1), (thr, k0.size, k1.size)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("kind", ["int", "float"])
def test_dense_core_cells_from_candidates_match_full_sums(d, kind):
    """k = 1 on a dense histogram: candidates around heavy cells give exactly
    the cells and sums of the full evaluation."""
    from dpdbscan.post.coretests.bound import corecells as core
    from dpdbscan.post.sums import dense_candidates, dense_neighbour_sums

    rng = np.random.default_rng(40 + d)
    alpha, sigma, thresholds = {
        1: (0.0005, 0.01, (300.0, 1000.0, 2000.0)),
        2: (0.005, 0.01, (100.0, 300.0, 1000.0)),
        3: (0.03, 0.02, (1000.0, 3000.0, 6000.0)),
    }[d]
    g = Grid(np.zeros(d), np.ones(d), alpha)
    counts = np.zeros(g.shape, dtype=np.int64)
    for _ in range(3):
        pts = rng.uniform(0.2, 0.8, d) + rng.normal(0, sigma, (20000, d))
        coords = np.clip(((pts - g.lower) / g.width).astype(int), 0, np.array(g.shape) - 1)
        np.add.at(counts, tuple(coords.T), 1)
    noise = rng.laplace(0, 1.5, g.shape)
    vals = counts + (noise if kind == "float" else np.round(noise).astype(np.int64))
    hist = make_histogram(grid=g, kind="dense", values=vals)
    S = dense_neighbour_sums(g, vals)
    used = 0
    for thr in thresholds + (-5.0,):
        used += dense_candidates(g, vals, thr, g.kappa) is not None
        keys, sums = core.core_cells(hist, thr)
        expect = np.argwhere(S >= thr)
        assert np.array_equal(g.decode(keys), expect)
        assert np.array_equal(sums, S[S >= thr])
    assert used >= 1  # the candidate path was taken
