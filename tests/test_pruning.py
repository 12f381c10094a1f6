"""Bucket pruning of candidate core cells keeps every core cell."""

from __future__ import annotations


import numpy as np
import pytest



def _random_release(rng, trial):
    from dpdbscan.grid import Grid as G

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


@pytest.mark.parametrize("trial", range(20))
def test_live_cells_keep_every_core_cell_and_its_neighbours(trial):
    """Brute force: every core cell and every released cell in NB of a core
    cell passes the bucket filter."""
    from dpdbscan.post.sums import neighbourhood, sparse_neighbour_sums
    from dpdbscan.post.pruning import live_cells

    rng = np.random.default_rng(100 + trial)
    g, keys, vals = _random_release(rng, trial)
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


