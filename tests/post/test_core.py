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


def _subcell_oracle(hist, thresholds, layout):
    """Every sub-cell's sum over NB(q), each released value added to the
    cells at the offsets of each position's list (dense arrays over the
    grid); per threshold, the sorted fine keys reaching it and their sums."""
    g = hist.grid
    keys, vals = hist.sparse()
    kc = g.decode(keys)
    shape = np.array(g.shape)
    found: dict = {t: [] for t in thresholds}
    for pos, offsets in layout.positions:
        offsets = g.offsets if offsets is None else np.asarray(offsets)
        S = np.zeros(g.shape, dtype=vals.dtype)
        for r in range(keys.size):
            c = kc[r] - offsets  # the cells that have r at an offset of NB(q)
            c = c[np.all((c >= 0) & (c < shape), axis=1)]
            np.add.at(S, tuple(c.T), vals[r])
        f = np.argwhere(np.ones(g.shape, dtype=bool)) * layout.k + np.array(pos)
        inside = np.all(f < np.array(layout.fine.shape), axis=1)
        for t in thresholds:
            hit = (S.ravel() >= t) & inside
            found[t] += list(zip(layout.fine.encode(f[hit]).tolist(), S.ravel()[hit].tolist()))
    out = {}
    for t, pairs in found.items():
        pairs.sort()
        out[t] = (np.array([k for k, _ in pairs], dtype=np.int64), np.array([s for _, s in pairs]))
    return out


@pytest.mark.parametrize(
    "d, eta", [(1, 4.0), (2, 4.0), (3, 4.0), (4, 4.0), (5, 4.0), (6, 8.0), (7, 16.0), (8, 16.0)]
)
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("spread", ["dense", "sparse"])
def test_bound_core_subcells_match_the_brute_force_oracle(d, eta, k, spread):
    """Sparse releases of clumped (dense) or scattered (sparse) cells, integer
    counts against the oracle of each position's offset list, and float
    values (a person-level release's weights) against the run walk of each
    position's offsets, bit for bit (up to 4-D; above, the kernel's test
    compares every position's sums with the run walk's)."""
    from dpdbscan.cells.subcells import SubcellLayout

    rng = np.random.default_rng(d * 100 + k * 10 + (spread == "dense"))
    g = Grid(np.zeros(d), np.ones(d), 0.2 if d < 6 else 0.3, eta)
    layout = SubcellLayout(g, k)
    shape = np.array(g.shape)
    n = 40 if spread == "dense" else 20
    if spread == "dense":
        c = rng.integers(0, shape, size=(2, d))[rng.integers(0, 2, n)] + rng.integers(-1, 2, size=(n, d))
    else:
        c = rng.integers(0, shape, size=(n, d))
    keys = np.unique(g.encode(np.clip(c, 0, shape - 1)))
    hist = make_histogram(grid=g, kind="sparse", values=rng.integers(2, 30, keys.size), keys=keys, theta=2.0)
    thresholds = (25.0, 80.0, 200.0)
    want = _subcell_oracle(hist, thresholds, layout)
    for thr in thresholds:
        got = core.core_cells(hist, thr, layout)
        assert np.array_equal(got[0], want[thr][0]) and np.array_equal(got[1], want[thr][1]), thr
    if d > 4:
        return  # floats in more dimensions: test_bound_kernels, position by position
    floats = make_histogram(
        grid=g, kind="sparse", values=rng.gamma(2.0, 8.0, keys.size), keys=keys, theta=2.0
    )
    for thr in (25.0, 80.0):
        k0, s0 = (
            _core_subcells_reference(floats, thr, layout)
            if k > 1
            else core._core_cells(floats, thr, None, g.kappa)
        )
        k1, s1 = core.core_cells(floats, thr, layout)
        assert np.array_equal(k0, k1) and np.array_equal(s0, s1)


@pytest.mark.parametrize("d, eta, k", [(1, 4.0, 2), (2, 4.0, 3), (3, 2.0, 2), (4, 4.0, 2), (5, 8.0, 2)])
def test_every_positions_neighbourhood_lies_in_nb_by_codes_as_by_sets(d, eta, k):
    from dpdbscan.cells.grid import neighbour_offsets
    from dpdbscan.cells.subcells import SubcellLayout

    nb = {tuple(o) for o in neighbour_offsets(d, eta).tolist()}
    layout = SubcellLayout(Grid(np.zeros(d), np.ones(d), 0.3, eta), k)
    by_sets = all({tuple(o) for o in off.tolist()} <= nb for _, off in layout.positions)
    assert core._positions_within_nb(d, eta, k) == by_sets
