"""Bucket pruning of candidate core cells keeps every core cell."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid


def _random_release(rng, trial):
    from dpdbscan.cells.grid import Grid as G

    if trial % 5:
        d = int(rng.integers(1, 5))
        g = G(np.zeros(d), np.ones(d), rng.uniform(0.03, 0.3))
        n = int(rng.integers(1, 3000))
    else:  # a universe whose keys do not fit in int64 (packed rows)
        d = 2
        g = G(np.zeros(d), np.full(d, 1e16), 1.0)
        assert g.wide
        n = int(rng.integers(1, 300))
    coords = np.stack([rng.integers(0, s, n) for s in g.shape], 1)
    if trial % 2:  # a blob
        c0 = np.array([rng.integers(0, s) for s in g.shape])
        blob = np.clip(c0 + rng.integers(-3, 4, (500, d)), 0, np.array(g.shape) - 1)
        coords = np.concatenate([coords, blob])
    keys = np.unique(g.encode(coords))
    vals = rng.integers(1, 60, keys.size)
    return g, keys, vals


def _force_regions(monkeypatch, regions, g):
    """Make pruning.regions pick one kind of region on grid ``g``."""
    from dpdbscan.post import pruning

    if regions == "supercells":
        monkeypatch.setattr(pruning, "COARSE_BUCKETS", 0)
        monkeypatch.setattr(pruning, "DENSE_BUCKETS", 0)
    elif regions in ("two-level", "two-level-dense"):  # side-2 reach buckets fit, side-reach ones do not
        r = max(g.reach, 1)
        n2 = pruning._n_buckets(g.shape, 2 * r)
        if n2 < pruning._n_buckets(g.shape, r) and n2 <= 1 << 20:
            monkeypatch.setattr(pruning, "COARSE_BUCKETS", n2)
            if regions == "two-level-dense":  # too many fine buckets to look up one by one
                monkeypatch.setattr(pruning, "SPARSE_BUCKETS", 0)


@pytest.mark.parametrize("regions", ["buckets", "two-level", "two-level-dense", "supercells"])
@pytest.mark.parametrize("trial", range(20))
def test_live_cells_keep_every_core_cell_and_its_neighbours(trial, regions, monkeypatch):
    """Brute force: every core cell and every released cell in NB of a core
    cell passes the filter, by dense buckets (in one or two levels) and by
    shifted super-cells."""
    from dpdbscan.post.pruning import live_cells
    from dpdbscan.post.sums import neighbourhood, sparse_neighbour_sums

    rng = np.random.default_rng(100 + trial)
    g, keys, vals = _random_release(rng, trial)
    _force_regions(monkeypatch, regions, g)
    thr = float(rng.uniform(50, 1500))
    cand = neighbourhood(g, keys)
    sums = sparse_neighbour_sums(g, keys, vals, cand)
    core_keys = cand[sums >= thr]
    assert live_cells(g, keys, vals, core_keys, thr).all()
    if core_keys.size:
        near = neighbourhood(g, core_keys)
        rel = keys[np.isin(keys, near)]
        assert live_cells(g, keys, vals, rel, thr).all()
    # and it does prune: far from everything nothing is live at a huge threshold
    assert not live_cells(g, keys, vals, keys, float(vals.sum()) + 1).any()


@pytest.mark.parametrize(
    "mode", ["buckets", "two-level", "two-level-dense", "bucket-neighbourhood", "supercells"]
)
@pytest.mark.parametrize("trial", range(12))
def test_core_candidates_contain_every_core_cell(trial, mode, monkeypatch):
    """Brute force: the candidates of pruning.core_candidates are sorted,
    distinct and contain every core cell, whichever region type and whichever
    way of listing them (cells of live buckets or NB of the heavy cells)."""
    from dpdbscan.post import pruning
    from dpdbscan.post.sums import neighbourhood, sparse_neighbour_sums

    if mode == "bucket-neighbourhood":
        monkeypatch.setattr(pruning._Buckets, "live_bucket_cells", lambda self, limit: None)
    rng = np.random.default_rng(300 + trial)
    g, keys, vals = _random_release(rng, trial)
    _force_regions(monkeypatch, mode, g)
    allc = neighbourhood(g, keys)
    sums = sparse_neighbour_sums(g, keys, vals, allc)
    for thr in (float(rng.uniform(20, 200)), float(rng.uniform(200, 1500))):
        core_keys = allc[sums >= thr]
        heavy = keys[vals * g.kappa >= thr]
        cand = pruning.core_candidates(g, keys, vals, heavy, thr)
        assert np.array_equal(cand, np.unique(cand))
        assert np.isin(core_keys, cand).all()


@pytest.mark.parametrize("d", [2, 3])
def test_two_level_buckets_refine_inside_live_coarse_buckets(d, monkeypatch):
    """A dense blob in one corner and small values scattered everywhere: the
    coarse buckets (side 2 reach) are live only near the blob, side-reach
    block sums are then looked up there only, and still every core cell and
    every released cell in NB of one passes (brute force)."""
    from dpdbscan.post import pruning
    from dpdbscan.post.sums import neighbourhood, sparse_neighbour_sums

    g = Grid(np.zeros(d), np.ones(d), 0.02 if d == 2 else 0.06)
    r = g.reach
    monkeypatch.setattr(pruning, "COARSE_BUCKETS", pruning._n_buckets(g.shape, 2 * r))
    rng = np.random.default_rng(d)
    scatter = np.stack([rng.integers(0, s, 3000) for s in g.shape], 1)
    blob = np.clip(np.array(g.shape) // 5 + rng.integers(-4, 5, (400, d)), 0, None)
    keys, idx = np.unique(g.encode(np.concatenate([scatter, blob])), return_index=True)
    vals = np.where(idx >= 3000, rng.integers(5, 40, keys.size), rng.integers(1, 4, keys.size))
    allc = neighbourhood(g, keys)
    sums = sparse_neighbour_sums(g, keys, vals, allc)
    thr = float(np.quantile(sums[sums > 0], 0.995))
    reg = pruning.regions(g, keys, vals, thr)
    assert isinstance(reg, pruning._SparseBuckets) and reg.side == r
    core_keys = allc[sums >= thr]
    assert core_keys.size > 0
    assert reg.may_be_core(core_keys).all() and reg.near(core_keys).all()
    rel = keys[np.isin(keys, neighbourhood(g, core_keys))]
    assert reg.near(rel).all()
    assert reg.may_be_core(allc).sum() < allc.size / 4  # and it prunes
    cand = pruning.core_candidates(g, keys, vals, keys, thr)
    assert np.isin(core_keys, cand).all()


@pytest.mark.parametrize("trial", range(10))
def test_neighbourhood_in_chunks_is_the_whole_neighbourhood(trial, monkeypatch):
    """A few cells at a time (bounded scratch memory), with the repeats
    merged as they go, and a filter applied per chunk: the same sorted
    distinct cells as every shifted copy at once (brute force), also for
    packed keys."""
    from dpdbscan.post import sums

    rng = np.random.default_rng(500 + trial)
    g, keys, _ = _random_release(rng, trial)
    c = (g.decode(keys)[:, None, :] + g.offsets[None, :, :]).reshape(-1, g.d)
    expect = np.unique(g.encode(c[g.valid(c)]))
    chosen = expect[rng.random(expect.size) < 0.3]
    monkeypatch.setattr(sums, "NEIGHBOURHOOD_CHUNK", int(rng.integers(1, 5)) * g.kappa)
    assert np.array_equal(sums.neighbourhood(g, keys), expect)
    kept = sums.neighbourhood(g, keys, keep=lambda q: np.isin(q, chosen))
    assert np.array_equal(kept, chosen)
