"""The density test's one-sigma margin on a sparse release (issue 30,
results/hd78/RULE.md): only the cells a release shows carry noise, at most
Var Z T / theta of it at the threshold T."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.cells.histogram import NoisyHistogram
from dpdbscan.post.coretests.density import ball_weights, margin, noise_variance, weighted_sums_at
from dpdbscan.post.coretests.density.densitymargin import shown_threshold, swamped


@pytest.mark.parametrize("d, k", [(1, 1), (2, 2), (3, 1), (4, 1)])
@pytest.mark.parametrize("theta", [2.0, 5.0, 18.0])
def test_released_weights_squared_are_at_most_the_estimate_over_theta(d, k, theta):
    # the bound behind the rule: every released value >= theta and W <= 1, so
    # sum over released cells of W(q, Y)^2 <= E~(q) / theta, at every sub-cell
    rng = np.random.default_rng([d, k, int(theta)])
    grid = Grid(np.zeros(d), np.ones(d), 0.3 if d < 4 else 0.5)
    cells = grid.all_coords()
    take = rng.random(cells.shape[0]) < 0.3
    keys = np.sort(grid.encode(cells[take]))
    values = (theta + rng.geometric(0.3, keys.size) - 1).astype(np.int64)
    hist = NoisyHistogram(grid, "sparse", values, keys, theta, "discrete", 1.0, 1.0, 0.0)
    bw = ball_weights(d, 4.0, k)
    query = grid.encode(cells[rng.random(cells.shape[0]) < 0.5])
    E = weighted_sums_at(hist, bw, query)
    # sum over released neighbours of W^2, offset by offset
    W = bw.W
    qc = grid.decode(query)
    W2 = np.zeros_like(E)
    for j, o in enumerate(bw.offsets):
        nb = qc + o
        ok = grid.valid(nb)
        hit = np.zeros(query.size, dtype=bool)
        hit[ok] = np.isin(grid.encode(nb[ok]), keys)
        W2[hit] += W[:, j][None, :] ** 2
    assert np.all(W2 <= E / theta + 1e-9)
    assert np.any(W2 > 0)


def test_shown_threshold_solves_its_equation():
    for a in (0.0, 0.3, 2.4, 10.0):
        for m in (1, 20, 300):
            t = shown_threshold(a, m)
            assert t == pytest.approx(m + a * math.sqrt(t), rel=1e-12)


@pytest.mark.parametrize(
    "d, theta, min_samples", [(3, 4.0, 20), (5, 8.0, 100), (8, 18.0, 20), (8, 18.0, 200)]
)
def test_a_sparse_releases_margin_is_the_least_of_the_two_then_the_guard(d, theta, min_samples):
    bw = ball_weights(d, 4.0, 1)
    n_cells = 10**9
    dense = margin(1.0, bw, "discrete", 1.0, 0.1, n_cells, min_samples=min_samples, truncation=None)
    sparse = margin(1.0, bw, "discrete", 1.0, 0.1, n_cells, min_samples=min_samples, truncation=theta)
    a = math.sqrt(noise_variance("discrete", 1.0) / theta)
    own = np.minimum(sparse.sigma, max(shown_threshold(a, min_samples) - min_samples, 0.0))
    assert np.allclose(sparse.values, np.maximum(own, sparse.empty - min_samples))
    assert np.all(sparse.values <= np.maximum(dense.sigma, sparse.empty - min_samples) + 1e-12)
    assert sparse.shown == pytest.approx(a)
    # dense and stability releases keep the margin of every cell's noise
    assert dense.shown is None
    zero = margin(1.0, bw, "discrete", 1.0, 0.1, n_cells, min_samples=min_samples, truncation="zero")
    assert zero.shown is None and np.allclose(zero.values, zero.sigma)


def test_the_8d_benchmark_threshold_is_the_guard():
    grid = Grid(np.zeros(8), np.ones(8), 0.06)
    bw = ball_weights(8, 4.0, 1)
    m = margin(1.0, bw, "discrete", 1.0, 0.1, grid.n_cells, min_samples=20, truncation=18.0)
    # before: 20 + 1 sigma of every cell's noise, 132.1; now the empty-space guard binds
    assert 20 + m.values.max() == pytest.approx(m.empty.max()) and m.empty.max() < 60
    assert m.sigma.max() > 100


@pytest.mark.parametrize("d, theta", [(4, 3.0), (6, 11.0), (8, 18.0)])
def test_every_min_samples_up_to_the_swamped_one_gives_the_same_thresholds(d, theta):
    bw = ball_weights(d, 4.0, 1)
    n_cells = 10**12

    def thresholds(ms):
        m = margin(1.0, bw, "discrete", 1.0, 0.1, n_cells, min_samples=ms, truncation=theta)
        return ms + m.values, m

    t0, m0 = thresholds(5)
    flat = swamped(m0, 5)
    assert flat is not None and flat > 5
    for ms in range(5, flat + 1):
        assert np.allclose(thresholds(ms)[0], t0), ms
    assert not np.allclose(thresholds(flat + 1)[0], t0)


def test_a_sparse_model_saved_before_the_rule_loads_with_its_own_margin(monkeypatch):
    import json

    from dpdbscan import DPDBSCAN
    from dpdbscan.model import model_from_dict, to_json
    from dpdbscan.post.coretests.density import densitymargin

    rng = np.random.default_rng(3)
    X = np.clip(np.vstack([c + 0.008 * rng.standard_normal((600, 8)) for c in (0.3, 0.6)]), 0, 1)
    # the margin before the rule: every cell's noise (the shown cap never binds);
    # subcells given: the eta-4 cells, not the coarse release of 7-D/8-D
    with monkeypatch.context() as mp:
        mp.setattr(densitymargin, "shown_threshold", lambda a, m: math.inf)
        old = DPDBSCAN(0.06, min_samples=20, bounds=(0, 1), random_state=0, subcells=1).fit(X).spans_
    assert old.release.histogram == "sparse"
    new = DPDBSCAN(0.06, min_samples=20, bounds=(0, 1), random_state=0, subcells=1).fit(X).spans_
    assert new.spans.noise_margin < old.spans.noise_margin
    back = model_from_dict(json.loads(to_json(old)))
    assert back.spans.noise_margin == pytest.approx(old.spans.noise_margin)
    assert np.array_equal(back.predict(X), old.predict(X))
    again = model_from_dict(json.loads(to_json(new)))
    assert again.spans.noise_margin == pytest.approx(new.spans.noise_margin)
