import math

import numpy as np
import pytest
from scipy import stats

from dpdbscan.cells.grid import Grid, count_neighbours
from dpdbscan.laws import noise as laws
from dpdbscan.plan.histogramchoice import (
    COARSE_DIMS,
    COARSE_EMPTY,
    COARSE_PAIRS,
    DENSE_MAX_CELLS,
    DENSE_MAX_KAPPA,
    MAX_EMPTY_PER_BALL,
    SPARSE_DIMS,
    ball_theta,
    capped_theta,
    choose_kind,
    coarse_pairs,
    coarse_theta,
    default_theta,
    stability_theta,
)
from dpdbscan.post.coretests.bound.boundmargin import gamma, gamma_laplace, tau
from dpdbscan.release.backends.numpy_backend import NumpyBackend
from dpdbscan.release.bounding import run_length
from dpdbscan.release.histograms import (
    DiscreteLaplace,
    dense_histogram,
    sparse_histogram,
    stability_histogram,
)
from dpdbscan.release.samplers.integers import SeededSource

from stats import binom_ok

# Distribution checks below use a per-test false-failure rate of at most 1e-6.
P_FAIL = 1e-6


def _grid(alpha=0.1):
    return Grid([0.0, 0.0], [1.0, 1.0], alpha)


def test_run_length():
    k, c = run_length(np.array([1, 1, 2, 5, 5, 5]))
    assert k.tolist() == [1, 2, 5] and c.tolist() == [2, 1, 3]


def test_counts_bincount_and_sort_paths_agree():
    g = _grid(0.02)
    X = np.random.default_rng(0).random((5000, 2))
    backend = NumpyBackend()
    cells = backend.count(g, X)
    dense = backend.dense_counts(g, X)
    assert dense.sum() == 5000 == cells.counts.sum()
    coords = g.decode(cells.keys)
    assert np.array_equal(dense[coords[:, 0], coords[:, 1]], cells.counts)
    keys = np.sort(g.keys_of_points(X))
    k, c = run_length(keys)
    assert np.array_equal(k, cells.keys) and np.array_equal(c, cells.counts)


def test_dense_histogram_adds_one_noise_per_cell():
    g = _grid()
    counts = np.zeros(g.shape, dtype=np.int64)
    counts[3, 4] = 50
    h = dense_histogram(g, counts, DiscreteLaplace(1.0), SeededSource(0), 1.0, 0.0)
    assert h.values.shape == g.shape and h.values.dtype == np.int64
    z = (h.values - counts).ravel()
    # mean of n discrete Laplace(eps=1) draws: variance 2q/(1-q)^2 each; 5 sigma
    var = 2 * math.exp(-1) / (1 - math.exp(-1)) ** 2
    assert abs(z.mean()) < 5.5 * math.sqrt(var / z.size)


def test_sparse_histogram_releases_above_theta_and_empty_cells():
    g = Grid([0, 0], [1, 1], 0.002)  # 500k cells
    X = np.random.default_rng(3).random((2000, 2)) * 0.1
    cells = NumpyBackend().count(g, X)
    noise = DiscreteLaplace(1.0)
    theta = 5.0
    h = sparse_histogram(g, cells, noise, SeededSource(4), theta, 1.0, 0.0)
    assert h.kind == "sparse"
    assert np.all(h.values >= theta)
    assert np.all(np.diff(h.keys) > 0)  # sorted, unique
    occupied = np.isin(h.keys, cells.keys)
    m = int((~occupied).sum())
    M = g.n_cells - len(cells)
    p = noise.tail(theta)
    lo, hi = stats.binom.ppf([P_FAIL / 2, 1 - P_FAIL / 2], M, p)
    assert lo <= m <= hi
    # empty cells' values: theta + Geometric(1 - e^-eps): mean theta + q/(1-q)
    q = math.exp(-1.0)
    ev = h.values[~occupied] - theta
    assert ev.min() >= 0
    sd = math.sqrt(q) / (1 - q)
    assert abs(ev.mean() - q / (1 - q)) < 5.5 * sd / math.sqrt(max(m, 1))


def test_default_theta_depends_on_public_inputs_only():
    noise = DiscreteLaplace(1.0)
    t = default_theta(10**9, "discrete", noise.scale, 2**20)
    assert 10**9 * noise.tail(t) <= 2**20 < 10**9 * noise.tail(t - 1)
    assert default_theta(10**30, "discrete", noise.scale, 2**20) > t


@pytest.mark.parametrize(
    "noise,scale", [("discrete", 1.0), ("discrete", 0.3), ("laplace", 1.0), ("gaussian", 40.0)]
)
@pytest.mark.parametrize("d", range(1, 9))
def test_default_theta_caps_the_universe_and_each_alpha_ball(d, noise, scale):
    kappa = count_neighbours(d, 4.0)
    for n_cells in (10**7, 10**9, 10**12, 10**15):
        universe = capped_theta(n_cells, noise, scale, 2**20)
        t = default_theta(n_cells, noise, scale, 2**20, kappa)
        assert t == max(universe, ball_theta(kappa, noise, scale))
        assert n_cells * laws.tail(noise, scale, t) <= 2**20
        if t > universe:
            # the ball's cap decides, and one step lower would break it
            assert kappa * laws.tail(noise, scale, t) <= MAX_EMPTY_PER_BALL
            assert kappa * laws.tail(noise, scale, t - 1) > MAX_EMPTY_PER_BALL
        assert default_theta(n_cells, noise, scale, 2**20) == universe  # without kappa: the universe's alone


def test_the_alpha_balls_cap_leaves_2d_to_4d_default_grids_at_epsilon_1_alone():
    # event level at epsilon 1 (Cabs at small alphas, the 3-D chest data, the
    # 4-D benchmark): the universe's cap already holds each alpha-ball to at
    # most MAX_EMPTY_PER_BALL empty cells (2-D and 3-D also on small grids
    # made sparse by hand), so their releases are unchanged
    for d, smallest in ((2, 10**3), (3, 10**3), (4, DENSE_MAX_CELLS + 1)):
        kappa = count_neighbours(d, 4.0)
        for n_cells in np.unique(np.geomspace(smallest, 1e14, 400).astype(np.int64)):
            n = int(n_cells)
            universe = capped_theta(n, "discrete", 1.0, 2**20)
            assert default_theta(n, "discrete", 1.0, 2**20, kappa) == universe
    # from 5-D up a coarse grid's balls decide (5-D at twice the benchmark's alpha)
    assert default_theta(17_210_368, "discrete", 1.0, 2**20, count_neighbours(5, 4.0)) == 5.0
    assert capped_theta(17_210_368, "discrete", 1.0, 2**20) == 3.0


@pytest.mark.parametrize("d", range(1, 11))
def test_dense_or_sparse_flips_where_rule_k_says_and_nowhere_else(d):
    # public: |X|, d, kappa (d, eta), delta and whether the release is event
    # level at a fixed eps with the density test (fixed_density). 4-D to 8-D
    # turn sparse on grids of at most 2^23 cells there; 1-D to 3-D and 9-D up
    # keep their release, and so do person level, delta > 0, the bound test
    # and the automatic mode (fixed_density false)
    for n_cells in np.unique(np.geomspace(10, 2 * DENSE_MAX_CELLS, 40).astype(np.int64)):
        side = [int(n_cells)] + [1] * (d - 1)
        g = Grid(np.zeros(d), np.array(side, dtype=float), math.sqrt(d))  # cells of width 1, eta 4
        assert abs(g.n_cells - int(n_cells)) <= 1 and g.kappa == count_neighbours(d, 4.0)
        small = g.n_cells <= DENSE_MAX_CELLS
        before = "dense" if small else "sparse"
        assert choose_kind("auto", g, 0.0) == before
        k_acts = 4 <= d <= 8 and g.kappa > DENSE_MAX_KAPPA
        assert choose_kind("auto", g, 0.0, fixed_density=True) == ("sparse" if k_acts else before)
        assert choose_kind("auto", g, 1e-6, fixed_density=True) == ("dense" if small else "stability")
        for asked in ("dense", "sparse", "stability"):
            assert choose_kind(asked, g, 0.0, fixed_density=True) == asked
    assert list(SPARSE_DIMS) == [4, 5, 6, 7, 8]


@pytest.mark.parametrize("d", [4, 5, 8])
def test_rule_k_reads_kappa_at_its_bound(d):
    # eta <= 4 keeps kappa above 256 from 4-D up (609 in 4-D), so the bound on
    # kappa is checked on a stand-in grid: dense at 256 cells per ball, sparse at 257
    for kappa, kind in ((DENSE_MAX_KAPPA, "dense"), (DENSE_MAX_KAPPA + 1, "sparse")):
        g = type("G", (), {"d": d, "n_cells": 1000, "kappa": kappa})()
        assert choose_kind("auto", g, 0.0, fixed_density=True) == kind
        assert choose_kind("auto", g, 0.0) == "dense"


def test_the_default_histogram_of_a_coarse_4d_to_8d_fit_at_a_fixed_eps_is_sparse(monkeypatch):
    # from public inputs only (the forecast reads nothing): 4-D at 1.5-3x and
    # 5-D at 3x the benchmark's eps were dense releases (grids under 2^23
    # cells); at a fixed eps, event level, delta 0, the density test they are
    # sparse now, while 2-D and 3-D, person level, delta > 0, the bound test
    # and the automatic mode keep theirs
    from dpdbscan import DPDBSCAN
    from dpdbscan.plan import resolve

    # the person-level forecast's histogram is its release's (resolve), made
    # before what it detects in units (plan.detection: 3/4 of this test's CPU,
    # the density margins' laws; tests/plan/test_detection.py checks those):
    # here the units' forecast is recorded, not computed
    unit_forecasts = []
    monkeypatch.setattr(resolve, "unit_forecast", lambda *a: unit_forecasts.append(a[1]))
    box = dict(min_samples=20, bounds=(0.0, 1.0))
    for d, eps in ((4, 0.045), (4, 0.06), (4, 0.09), (5, 0.12), (8, 0.45)):
        fc = DPDBSCAN(eps, **box).forecast(1e5, n_features=d)
        assert fc.n_cells <= DENSE_MAX_CELLS and fc.histogram == "sparse" and fc.core == "density"
        assert DPDBSCAN(eps, **box, histogram="dense").forecast(1e5, n_features=d).histogram == "dense"
        assert DPDBSCAN(eps, **box, delta=1e-6).forecast(1e5, n_features=d).histogram == "dense"
        assert DPDBSCAN(eps, **box, core="bound").forecast(1e5, n_features=d).histogram == "dense"
        person = DPDBSCAN(eps, **box, max_cells_per_unit=5, delta=1e-6)
        assert person.forecast(1e5, n_features=d, eps_ladder=[eps]).histogram == "dense"
    assert len(unit_forecasts) == 5  # each person-level forecast went on to its units'
    for d, eps in ((2, 0.01), (3, 0.06)):
        assert DPDBSCAN(eps, **box).forecast(1e5, n_features=d).histogram == "dense"
    # the automatic mode's base grid (at most max_cells cells) stays dense
    assert DPDBSCAN("auto", **box).forecast(1e5, n_features=4).histogram == "dense"


def test_a_coarse_4d_fit_at_a_fixed_eps_releases_sparse():
    from dpdbscan import DPDBSCAN

    rng = np.random.default_rng(0)
    X = np.clip(np.vstack([rng.normal(0.5, 0.01, (500, 4)), rng.uniform(0, 1, (100, 4))]), 0, 1)
    est = DPDBSCAN(0.09, min_samples=20, bounds=(0.0, 1.0), random_state=0).fit(X)
    assert est.histogram_.kind == "sparse" and est.n_cells_ <= DENSE_MAX_CELLS
    dense = DPDBSCAN(0.09, min_samples=20, bounds=(0.0, 1.0), random_state=0, histogram="dense").fit(X)
    assert dense.histogram_.kind == "dense"


def test_stability_histogram_threshold():
    noise = DiscreteLaplace(1.0)
    th = stability_theta("discrete", noise.scale, 1e-6)
    assert noise.tail(th - 1) <= 1e-6 < noise.tail(th - 2)
    g = _grid()
    X = np.array([[0.5, 0.5]] * 100 + [[0.1, 0.1]])
    cells = NumpyBackend().count(g, X)
    h = stability_histogram(g, cells, noise, SeededSource(0), th, 1.0, 1e-6)
    assert h.kind == "stability" and h.theta == th
    with pytest.raises(ValueError, match="delta"):
        stability_theta("discrete", noise.scale, 0.0)


@pytest.mark.parametrize("count", [1, 3, 6])
def test_stability_histogram_releases_a_cell_with_the_right_probability(count):
    """A cell holding ``count`` points is released iff count + Z >= theta:
    checked against P(Z >= theta - count) with an exact binomial test, and the
    released values are the noisy counts (issue 14: the old test asserted only
    values >= theta, which holds by construction)."""
    noise = DiscreteLaplace(1.0)
    delta = 1e-2
    th = stability_theta("discrete", noise.scale, delta)
    g = Grid([0.0], [1.0], 1e-5)  # a long strip: one cell per point
    n = 50_000
    from dpdbscan.release.backends.base import CellCounts

    cells = CellCounts(g.encode(np.arange(n).reshape(-1, 1)), np.full(n, count, dtype=np.int64))
    h = stability_histogram(g, cells, noise, SeededSource(count), th, 1.0, delta)
    p = noise.tail(th - count)
    assert binom_ok(h.keys.size, n, p)
    assert np.all(h.values >= th) and h.values.dtype.kind == "i"
    if count == 1:
        assert p <= delta  # a single record is published with probability <= delta


def test_gamma_formula_matches_paper_example():
    # Paper, Section "Tighter Upper Bound": eps=1, beta=1/3, kappa=21, |X|=1000 -> 38.2
    assert gamma_laplace(1.0, 21, 1000, 1 / 3) == pytest.approx(38.2, abs=0.05)
    assert gamma(1.0, 21, 1000, 1 / 3, theta=2.0) == pytest.approx(42 + 38.2, abs=0.05)
    assert tau(10.0) == 20.0


def test_gamma_bounds_discrete_noise_sums():
    """P(|sum of kappa discrete Laplace| > Gamma_Lap(beta/|X|-scaled)) <= beta/|X|,
    checked empirically for |X| = 1 at beta = 0.05 (1e-6 false failure)."""
    src = SeededSource(5)
    noise = DiscreteLaplace(1.0)
    n = 20000
    z = noise.sample(src, 21 * n).reshape(n, 21).sum(1)
    G = gamma_laplace(1.0, 21, 1, 0.05)
    exceed = int((np.abs(z) > G).sum())
    assert exceed <= stats.binom.ppf(1 - P_FAIL, n, 0.05)


@pytest.mark.parametrize("sigma2", [1.0, 50.0])
def test_gaussian_margins_are_valid_and_tighter_than_subgaussian(sigma2):
    """Issue 20: the bound test's two-sided margin for discrete Gaussian
    noise (Chernoff with its exact MGF) is below the subgaussian union
    bound, holds on draws, and is not vacuous."""
    from dpdbscan.post.coretests.bound.boundmargin import gamma_chernoff, gamma_subgaussian, margins
    from dpdbscan.release.histograms import DiscreteGaussian

    for kappa, n_events in [(15, 1), (21, 1849), (117, 10**8)]:
        assert gamma_chernoff("gaussian", sigma2, kappa, n_events, 0.1) <= gamma_subgaussian(
            sigma2, kappa, n_events, 0.1
        )
    G = gamma_chernoff("gaussian", sigma2, 15, 1, 0.05)
    n = 20000
    S = DiscreteGaussian(sigma2).sample(SeededSource(9), 15 * n).reshape(n, 15).sum(1)
    limit = stats.binom.ppf(1 - P_FAIL, n, 0.05)
    assert int((np.abs(S) > G).sum()) <= limit
    assert int((np.abs(S) > 0.5 * G).sum()) > limit
    # the upper side of a truncating release: sums of the errors of cells
    # with 0 .. 3 points, theta 2 (released iff x + Z >= 2)
    low, up = margins("chernoff", "sparse", "gaussian", sigma2, 15, 1, 0.05, 2.0)
    x = np.resize(np.arange(4), 15)
    Z = DiscreteGaussian(sigma2).sample(SeededSource(11), 15 * n).reshape(n, 15)
    err = np.where(x + Z >= 2, Z, -x).sum(1)
    assert int((err > up).sum()) <= stats.binom.ppf(1 - P_FAIL, n, 0.025)
    assert int((err < -low).sum()) <= stats.binom.ppf(1 - P_FAIL, n, 0.025)


@pytest.mark.parametrize("noise", ["discrete", "laplace"])
def test_chernoff_margin_is_valid_and_tighter(noise):
    from dpdbscan.post.coretests.bound.boundmargin import gamma_chernoff

    for kappa, n_events in [(15, 1), (21, 1849), (117, 10**8)]:
        assert gamma_chernoff(noise, 1.0, kappa, n_events, 0.1) < gamma_laplace(1.0, kappa, n_events, 0.1)
    # empirical tail at beta = 0.05, one event: at most 5% beyond Gamma (1e-6 false failure)
    G = gamma_chernoff(noise, 1.0, 15, 1, 0.05)
    src = SeededSource(9)
    n = 20000
    if noise == "discrete":
        z = DiscreteLaplace(1.0).sample(src, 15 * n)
    else:
        from dpdbscan.release.histograms import ContinuousLaplace

        z = ContinuousLaplace(1.0).sample(src, 15 * n)
    S = z.reshape(n, 15).sum(1)
    assert int((np.abs(S) > G).sum()) <= stats.binom.ppf(1 - P_FAIL, n, 0.05)
    # and it is not vacuous: a margin 30% smaller is exceeded more often than beta
    assert int((np.abs(S) > 0.5 * G).sum()) > stats.binom.ppf(1 - P_FAIL, n, 0.05)


def test_linear_to_coords_is_row_major_and_exact():
    """Linear indices to coordinates: numpy's unravel_index on a small grid,
    and exact Python-int arithmetic on a universe beyond 2**62 (d = 10)."""
    from dpdbscan.release.histograms.sparse import linear_to_coords

    shape = (3, 5, 2)
    flat = np.arange(30, dtype=np.int64)
    assert np.array_equal(linear_to_coords(shape, flat), np.stack(np.unravel_index(flat, shape), 1))
    shape = (1000,) * 10
    rng = np.random.default_rng(4)
    coords = rng.integers(0, 1000, size=(200, 10))
    coords[0], coords[1] = 0, 999
    lin = [int("".join(f"{c:03d}" for c in row)) for row in coords]  # base 1000 digits
    assert np.array_equal(linear_to_coords(shape, lin), coords)
    assert linear_to_coords(shape, []).shape == (0, 10)


def test_merge_sorted():
    from dpdbscan.release.histograms.sparse import _merge_sorted

    rng = np.random.default_rng(0)
    for _ in range(50):
        allk = rng.choice(1000, size=rng.integers(0, 60), replace=False)
        split = rng.random(allk.size) < 0.5
        a, b = np.sort(allk[split]), np.sort(allk[~split])
        assert np.array_equal(_merge_sorted(a, b), np.sort(allk))
        # values ride along (of the first array's dtype), whichever is shorter
        keys, vals = _merge_sorted(a, b, (a * 10, (b * 10).astype(np.float64)))
        assert np.array_equal(keys, np.sort(allk)) and np.array_equal(vals, keys * 10)
        assert vals.dtype == a.dtype


def test_which_selected_cells_are_occupied_either_way_round():
    """The selected cells found among the occupied ones: the shorter array
    is looked up in the longer, the same mask either way."""
    from dpdbscan.release.histograms.sparse import _is_in

    rng = np.random.default_rng(1)
    for n_occ, n_sel in ((30, 500), (500, 30), (0, 10), (10, 0)):
        occ = np.unique(rng.integers(0, 2000, n_occ))
        sel = np.unique(rng.integers(0, 2000, n_sel))
        assert np.array_equal(_is_in(occ, sel), np.isin(sel, occ))


def test_stability_with_gaussian_noise_splits_delta():
    """Person-level, Gaussian noise, stability histogram: rho converts to
    (epsilon, delta / 2) and theta keeps the unit's k new cells of at most
    m points below it with probability delta / 2 in all (docs/privacy.md
    section 4.4, which must say so, not that the combination is missing)."""
    import warnings
    from pathlib import Path

    from dpdbscan import DPDBSCAN
    from dpdbscan.exceptions import UtilityWarning
    from dpdbscan.laws import discretegaussian as gaussian
    from dpdbscan.laws import zcdp

    k, m, eps, delta = 4, 2, 1.0, 1e-6
    rng = np.random.default_rng(0)
    X = rng.random((400, 2))
    est = DPDBSCAN(
        0.05,
        min_samples=5,
        epsilon=eps,
        delta=delta,
        bounds=(0, 1),
        histogram="stability",
        noise="gaussian",
        max_cells_per_unit=k,
        max_points_per_cell=m,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(X, units=np.arange(400) % 37)
    h = est.histogram_
    rho = est.spans_.release.rho
    assert math.isclose(zcdp.delta_for(rho, eps), delta / 2, rel_tol=1e-3)
    sigma2 = float(h.scale)
    theta = float(h.theta)
    assert k * gaussian.tail(sigma2, theta - m) <= delta / 2 < k * gaussian.tail(sigma2, theta - m - 1)
    text = (Path(__file__).resolve().parents[2] / "docs" / "privacy.md").read_text()
    assert "Not\nprovided: a stability histogram with Gaussian noise" not in text
    assert "With Gaussian noise and units" in text


@pytest.mark.parametrize("noise", ["discrete", "laplace"])
def test_dense_noise_is_the_same_drawn_on_a_thread_or_not(monkeypatch, noise):
    """A dense release draws its noise on a second thread from
    ``THREADED_NOISE_CELLS`` cells on and inline below: the same seed gives
    the same histogram either way."""
    from dpdbscan.release import mechanism

    from releases import Config, release_histogram

    grid = Grid(np.zeros(2), np.ones(2), 0.1)
    X = np.random.default_rng(0).random((500, 2))
    config = Config(epsilon=1.0, histogram="dense", noise=noise)
    made = []
    for threshold in (0, grid.n_cells + 1):
        monkeypatch.setattr(mechanism, "THREADED_NOISE_CELLS", threshold)
        made.append(release_histogram(grid, X, config, SeededSource(7)))
    assert np.array_equal(made[0].values, made[1].values) and made[0].values.size == grid.n_cells


def test_coarse_6d_to_8d_grids_release_fewer_empty_cells_where_their_pairs_are_many():
    # results/hd9/RULE.md: from public inputs only (the forecast reads no
    # data), an event-level fit at a fixed eps, delta 0, the density test, in
    # 6-D to 8-D: where today's default theta leaves more than COARSE_PAIRS
    # pairs of released empty cells within a reach box, theta rises until at
    # most COARSE_EMPTY empty cells are released in expectation
    from dpdbscan import DPDBSCAN

    # subcells given (the default's 1 from 4-D up): the eta-4 cells, not the
    # coarse release of 7-D/8-D (plan/coarserelease.py)
    box = dict(min_samples=20, bounds=(0.0, 1.0), subcells=1)
    # (d, eps): theta before -> with the rule (eta 4, epsilon 1)
    acts = {
        (6, 0.075): (8, 9),
        (6, 0.1): (7, 8),
        (7, 0.0825): (11, 13),
        (7, 0.11): (9, 11),
        (8, 0.12): (12, 14),
    }
    stays = {
        (6, 0.05): 10,
        (6, 0.15): 7,
        (7, 0.055): 14,
        (7, 0.165): 9,
        (8, 0.06): 18,
        (8, 0.09): 14,
        (8, 0.18): 11,
        (5, 0.06): 5,
        (5, 0.08): 5,
        (4, 0.03): 3,
    }
    for (d, eps), (before, after) in acts.items():
        fc = DPDBSCAN(eps, **box).forecast(1e5, n_features=d)
        assert fc.histogram == "sparse" and fc.theta == after, (d, eps, fc.theta)
        assert fc.n_cells * laws.tail("discrete", 1.0, after) <= COARSE_EMPTY
        assert fc.n_cells * laws.tail("discrete", 1.0, after - 1) > COARSE_EMPTY
        grid = Grid(np.zeros(d), np.ones(d), eps)
        assert grid.n_cells == fc.n_cells
        assert default_theta(grid.n_cells, "discrete", 1.0, 2**20, grid.kappa) == before
        assert coarse_pairs(grid, "discrete", 1.0, before) > COARSE_PAIRS
        # the user's explicit theta and a lower max_empty_cells still decide
        assert DPDBSCAN(eps, **box, theta=before).forecast(1e5, n_features=d).theta == before
        lower = DPDBSCAN(eps, **box, max_empty_cells=2**10).forecast(1e5, n_features=d).theta
        assert lower > after and fc.n_cells * laws.tail("discrete", 1.0, lower) <= 2**10
        # the bound test keeps today's
        assert (
            DPDBSCAN(eps, **box, core="bound", histogram="sparse").forecast(1e5, n_features=d).theta == before
        )
    for (d, eps), theta in stays.items():
        fc = DPDBSCAN(eps, **box).forecast(1e5, n_features=d)
        assert fc.histogram == "sparse" and fc.theta == theta, (d, eps, fc.theta)
    assert list(COARSE_DIMS) == [6, 7, 8]


@pytest.mark.parametrize("d", range(1, 11))
def test_coarse_theta_acts_only_in_6d_to_8d_above_its_pairs(d):
    for n_cells in (10**6, 10**8, 10**10, 10**12):
        side = [n_cells] + [1] * (d - 1)
        g = Grid(np.zeros(d), np.array(side, dtype=float), math.sqrt(d))
        t0 = default_theta(g.n_cells, "discrete", 1.0, 2**20, g.kappa)
        t = coarse_theta(g, "discrete", 1.0, t0, 2**20)
        if d in COARSE_DIMS and coarse_pairs(g, "discrete", 1.0, t0) > COARSE_PAIRS:
            # the least theta >= today's on its steps releasing at most COARSE_EMPTY
            assert t >= t0 and g.n_cells * laws.tail("discrete", 1.0, t) <= COARSE_EMPTY
            assert t == t0 or g.n_cells * laws.tail("discrete", 1.0, t - 1) > COARSE_EMPTY
        else:
            assert t == t0
