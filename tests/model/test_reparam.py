"""Re-parameterising a release: ``with_params(SpanModel, eps=, min_samples=)``.

Oracle: with the noise switched off, spans for (alpha', MinPts) read from a
release made at alpha equal the spans of a fresh fit at (alpha', MinPts) on
the same cells (the grid ``Grid.at_eps(alpha')``), for dense and sparse
releases, d = 1..3, both core tests. With noise, re-parameterising is a
function of the release alone (path independent), and bad requests are
clear errors.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cells.grid import Grid
from dpdbscan.model import SpanModel, finest_eps, load_model, save_model, with_params
from dpdbscan.release.samplers.integers import SeededSource

from releases import Config as MechanismConfig
from releases import release_histogram, spans_from_histogram


def _instance(d, seed, n=150):
    rng = np.random.default_rng(seed)
    centres = rng.random((3, d))
    X = np.vstack([c + 0.05 * rng.standard_normal((n, d)) for c in centres])
    X = np.vstack([X, rng.random((40, d))])
    return np.clip(X, 0, 1)


def _noiseless(grid, X, histogram, m, core, k):
    config = MechanismConfig(epsilon=1.0, histogram=histogram, noise="none")
    hist = release_histogram(grid, X, config, SeededSource(0))
    if core == "density":
        return spans_from_histogram(
            hist, m, None, 0.1, subcells=k, border=grid.eps, margin=1.0, core="density"
        )
    # Gamma is recomputed for the new kappa (never overridden), on both sides
    return spans_from_histogram(hist, m, None, 0.5, subcells=k, border=0.0, margin="chernoff", core="bound")


def _same_spans(a: SpanModel, b: SpanModel):
    assert a.grid.shape == b.grid.shape and a.grid.width == b.grid.width
    assert np.array_equal(a.grid.decode(a.core_keys), b.grid.decode(b.core_keys))
    assert np.array_equal(a.labels, b.labels)
    assert a.spec.border == pytest.approx(b.spec.border, rel=1e-12)


@pytest.mark.parametrize("core", ["density", "bound"])
@pytest.mark.parametrize("histogram", ["dense", "sparse"])
@pytest.mark.parametrize(
    "d,alpha,m,k,factors",
    [
        (1, 0.02, 6, 2, (1.5, 3.1)),
        (2, 0.04, 8, 2, (1.0, 2.0, 2.7)),
        (2, 0.05, 20, 1, (1.3, 3.0)),
        (3, 0.2, 10, 2, (1.6,)),
    ],
)
def test_noiseless_with_params_equals_a_fresh_fit_on_the_same_cells(core, histogram, d, alpha, m, k, factors):
    X = _instance(d, 7 + d)
    grid = Grid(np.zeros(d), np.ones(d), alpha)
    base = _noiseless(grid, X, histogram, 5, core, k)
    P = np.random.default_rng(1).random((400, d))
    for f in factors:
        for m2 in (m, 2 * m):
            a2 = alpha * f
            got = with_params(base, eps=a2, min_samples=m2)
            fresh = _noiseless(grid.at_eps(a2), X, histogram, m2, core, k)
            assert got.grid.eps == a2 and got.spec.min_samples == m2
            _same_spans(got, fresh)
            assert np.array_equal(got.predict(P), fresh.predict(P))
            assert (got.release.eps, got.release.eta, got.release.min_samples) == (alpha, 4.0, 5)


def test_the_oracle_sees_something():
    # the comparison above is not between empty models
    X = _instance(2, 9)
    base = _noiseless(Grid(np.zeros(2), np.ones(2), 0.04), X, "dense", 5, "density", 2)
    got = with_params(base, eps=0.08, min_samples=16)
    assert got.n_spans >= 2 and got.n_core_cells > 50
    assert got.n_spans != base.n_spans or got.n_core_cells != base.n_core_cells


def test_at_alpha_keeps_the_cells_where_a_new_grid_would_not():
    # (hi - lo) / w is an integer; eta' * alpha' rounds the width up by one ulp
    g = Grid(np.zeros(1), np.full(1, 10.0), 0.1)
    a2 = 0.1 * 3.1
    naive = Grid(g.lower, g.upper, a2, g.eta * 0.1 / a2)
    assert naive.shape != g.shape  # the trap
    same = g.at_eps(a2)
    assert same.shape == g.shape and same.width == g.width and same.eps == a2
    assert same.subdivided(2).width == g.width / 2
    with pytest.raises(ValueError, match="cell_width"):
        Grid(g.lower, g.upper, a2, 4.0, cell_width=g.width)


def _noisy(seed=0, **kw):
    X = _instance(2, 3, n=400)
    est = DPDBSCAN(eps=0.03, min_samples=10, epsilon=1.0, bounds=(0, 1), random_state=seed, **kw)
    return est.fit(X).spans_, X


quiet = pytest.mark.filterwarnings("ignore")  # seeded noise, small-data notes


@quiet
def test_with_params_is_a_function_of_the_release():
    base, X = _noisy()
    direct = with_params(base, eps=0.09, min_samples=30)
    via = with_params(with_params(base, eps=0.05, min_samples=3), eps=0.09, min_samples=30)
    _same_spans(direct, via)
    assert (via.release.eps, via.release.eta, via.release.min_samples) == (
        base.release.eps,
        base.release.eta,
        base.release.min_samples,
    )
    # unchanged parameters give the release's spans back; MinPts alone is with_min_samples
    _same_spans(with_params(base), base)
    _same_spans(with_params(base, min_samples=25), with_params(base, min_samples=25))
    # back to the release's own eps from a coarser model
    _same_spans(with_params(direct, eps=0.03, min_samples=10), base)
    assert direct.spec.border == pytest.approx(0.09)  # the density border follows eps


@quiet
def test_reparameterised_model_round_trips_through_json(tmp_path):
    base, X = _noisy(1)
    m = with_params(base, eps=0.031 * 3.1, min_samples=40)
    save_model(m, tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    _same_spans(loaded, m)
    assert loaded.release == m.release and loaded.release.eps == 0.03
    assert np.array_equal(loaded.predict(X), m.predict(X))
    _same_spans(with_params(loaded, eps=0.12), with_params(m, eps=0.12))
    d = json.loads((tmp_path / "m.json").read_text())
    assert d["release"] == {"eps": 0.03, "eta": 4.0, "min_samples": 10}
    assert d["params"]["eps"] == pytest.approx(0.0961)


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"eps": 0.02}, "finer than this release can resolve"),
        ({"eps": 0.0299}, "finer than this release can resolve"),
        ({"eps": 0}, "eps=0"),
        ({"eps": -1.0}, "eps=-1"),
        ({"eps": float("nan")}, "eps=nan"),
        ({"eps": 20.0}, "too large for this release's cells"),
        ({"min_samples": 0}, "min_samples=0"),
    ],
)
@quiet
def test_with_params_errors(kw, match):
    base, _ = _noisy()
    with pytest.raises(ValueError, match=match):
        with_params(base, **kw)


@quiet
def test_with_params_needs_the_histogram(tmp_path):
    base, _ = _noisy()
    save_model(base, tmp_path / "small.json", include_histogram=False)
    with pytest.raises(ValueError, match="without its noisy histogram"):
        with_params(load_model(tmp_path / "small.json"), eps=0.06)


@quiet
def test_a_release_at_a_finer_eta_resolves_down_to_its_cell_diagonal():
    base, _ = _noisy(eta=2.0)
    assert finest_eps(base) == pytest.approx(0.015)
    assert with_params(base, eps=0.015).release.grid.eta == pytest.approx(4.0)
    with pytest.raises(ValueError, match="finer"):
        with_params(base, eps=0.014)
