"""The density core test: ball weights, weighted sums, margins, the noiseless
oracle, centre merging and the nearest-centre border rule."""

import functools
import itertools
import json
import math

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cells.grid import Grid
from dpdbscan.model import guarantee, model_from_dict, to_json, with_params
from dpdbscan.model.predict import predict_spans, span_regions
from dpdbscan.post.coretests.density import (
    accuracy_margin,
    ball_weights,
    dense_weighted_sums,
    density_field,
    margin,
    noise_variance,
    weighted_quantile,
    weighted_sums_at,
    weighted_tail_bound,
)
from dpdbscan.post.merge import centre_offsets, merge_centres, radius_cells2
from dpdbscan.release.samplers.integers import SeededSource

from reference import components, same_partition
from releases import Config as MechanismConfig
from releases import make_histogram, release_histogram

# --------------------------------------------------------------------------- #
# weights


def test_weights_in_one_dimension_are_exact():
    # eta = 4, d = 1: alpha = 1 cell. Own cell: |y - p| < 1 always; neighbours: 1/2.
    bw = ball_weights(1, 4.0, 1)
    assert bw.offsets.ravel().tolist() == [-1, 0, 1]
    np.testing.assert_allclose(bw.W[0], [0.5, 1.0, 0.5], atol=1e-15)
    # k = 2, left half-cell q = [0, 1/2]: P(|y - p| < 1) for y in [-1, 0] is 3/4, for y in [1, 2] 1/4
    bw2 = ball_weights(1, 4.0, 2)
    np.testing.assert_allclose(bw2.W[0], [0.75, 1.0, 0.25], atol=1e-15)


@pytest.mark.parametrize(
    "d,k,eta",
    [
        (1, 1, 3.0),
        (2, 1, 4.0),
        (2, 2, 4.0),
        (2, 3, 4.0),
        (2, 2, 2.0),
        (3, 1, 4.0),
        (3, 2, 4.0),
        (4, 1, 4.0),
        (5, 1, 4.0),
        (6, 1, 4.0),
    ],
)
def test_rows_sum_to_the_ball_volume(d, k, eta):
    """sum_Y W(q, Y) = V_d (alpha/w)^d: every point of space lies in one cell."""
    bw = ball_weights(d, eta, k)
    np.testing.assert_allclose(bw.sums, bw.ball_volume, rtol=5e-6)
    assert bw.W.min() >= 0 and bw.W.max() <= 1


@pytest.mark.parametrize("d,k", [(2, 2), (2, 3), (3, 2)])
def test_weights_are_symmetric(d, k):
    """Reflecting an axis (sub-position s -> k-1-s, offset o -> -o) and permuting
    axes leave the weights unchanged."""
    bw = ball_weights(d, 4.0, k)
    pos_index = {p: i for i, p in enumerate(bw.positions)}
    off_index = {tuple(o): j for j, o in enumerate(bw.offsets.tolist())}
    for i, p in enumerate(bw.positions):
        for j, o in enumerate(bw.offsets.tolist()):
            for axis in range(d):
                p2 = list(p)
                o2 = list(o)
                p2[axis], o2[axis] = k - 1 - p[axis], -o[axis]
                assert bw.W[pos_index[tuple(p2)], off_index[tuple(o2)]] == pytest.approx(bw.W[i, j], abs=1e-9)
            for perm in itertools.permutations(range(d)):
                p3 = tuple(p[a] for a in perm)
                o3 = tuple(o[a] for a in perm)
                assert bw.W[pos_index[p3], off_index[o3]] == pytest.approx(bw.W[i, j], abs=1e-9)


@pytest.mark.parametrize("d,k", [(2, 1), (2, 2), (3, 2)])
def test_support_is_nb_of_the_subcell_and_full_cells_weigh_one(d, k):
    bw = ball_weights(d, 4.0, k)
    a2 = (4.0 * math.sqrt(d) / 4.0) ** 2
    for i, p in enumerate(bw.positions):
        lo = np.asarray(p) / k
        hi = (np.asarray(p) + 1) / k
        for j, o in enumerate(bw.offsets):
            gap = np.maximum(np.maximum(o - hi, lo - (o + 1)), 0.0)
            far = np.maximum(np.abs(o + 1 - lo), np.abs(hi - o))  # largest axis distance
            if (gap**2).sum() >= a2:
                assert bw.W[i, j] == 0
            else:
                assert bw.W[i, j] > 0
            if (far**2).sum() < a2:
                assert bw.W[i, j] == pytest.approx(1.0, abs=1e-9)


def test_finer_integration_agrees():
    coarse = ball_weights(3, 4.0, 2, bins=1 << 11)
    fine = ball_weights(3, 4.0, 2, bins=1 << 14)
    assert np.abs(coarse.W - fine.W).max() < 2e-5


@pytest.mark.parametrize("estimate", ["average", "centre"])
@pytest.mark.parametrize("d,k", [(2, 2), (3, 2)])
def test_weights_match_monte_carlo(d, k, estimate):
    """Brute force: draw p in q (or q's centre) and y in Y uniformly and count
    |p - y| < alpha. 4-sigma binomial tolerance per weight (false failure
    rate below 1e-4 over the ~20 weights checked)."""
    bw = ball_weights(d, 4.0, k, estimate)
    a = 4.0 * math.sqrt(d) / 4.0
    rng = np.random.default_rng(12)
    n = 200_000
    for i in (0, len(bw.positions) - 1):
        pos = np.asarray(bw.positions[i])
        for j in range(0, bw.offsets.shape[0], max(1, bw.offsets.shape[0] // 10)):
            o = bw.offsets[j]
            if estimate == "centre":
                p = np.broadcast_to((pos + 0.5) / k, (n, d))
            else:
                p = (pos + rng.random((n, d))) / k
            y = o + rng.random((n, d))
            hit = (((p - y) ** 2).sum(axis=1) < a * a).mean()
            w = bw.W[i, j]
            tol = 4 * math.sqrt(max(w * (1 - w), 1e-6) / n) + 1e-6
            assert abs(hit - w) <= tol, (i, o.tolist(), hit, w)


def test_bad_weight_arguments():
    with pytest.raises(ValueError, match="estimate"):
        ball_weights(2, 4.0, 2, "median")
    with pytest.raises(ValueError, match="subcells"):
        ball_weights(2, 4.0, 0)
    with pytest.raises(ValueError, match="sub-cells per cell"):
        ball_weights(13, 4.0, 2)


# --------------------------------------------------------------------------- #
# weighted sums


def _random_hist(kind, seed=0, d=2, shape_side=1.0, alpha=0.1, theta=0.0, noise_vals=True):
    rng = np.random.default_rng(seed)
    grid = Grid(np.zeros(d), np.full(d, shape_side), alpha)
    vals = rng.poisson(3.0, size=grid.shape).astype(np.int64)
    vals[rng.random(grid.shape) < 0.5] = 0
    if noise_vals:
        vals -= rng.poisson(1.0, size=grid.shape)
    if kind == "dense":
        return make_histogram(grid, "dense", vals)
    coords = grid.all_coords()
    flat = vals.ravel()
    keep = flat >= theta if theta > 0 else flat != 0
    keys = grid.encode(coords[keep])
    order = np.argsort(keys)
    return make_histogram(grid, kind, flat[keep][order], keys=keys[order], theta=theta)


def _brute_estimate(grid, values, bw, coord, r):
    """E~ of sub-position r of cell ``coord``, cell by cell over the universe."""
    total = 0.0
    for j, o in enumerate(bw.offsets):
        c = np.asarray(coord) + o
        if np.all(c >= 0) and np.all(c < np.asarray(grid.shape)):
            total += bw.W[r, j] * values[tuple(c)]
    return total


@pytest.mark.parametrize("d,k", [(1, 2), (2, 1), (2, 2), (3, 2)])
def test_dense_sums_match_brute_force_and_the_fast_path(d, k):
    hist = _random_hist("dense", seed=d + k, d=d, alpha=0.25 if d == 3 else 0.1)
    grid = hist.grid
    bw = ball_weights(d, 4.0, k)
    full = dense_weighted_sums(grid, hist.values, bw)
    keys = grid.encode(grid.all_coords())
    fast = weighted_sums_at(hist, bw, keys)
    np.testing.assert_allclose(fast, full.reshape(len(bw.positions), -1).T, atol=1e-9)
    rng = np.random.default_rng(0)
    for flat in rng.choice(keys.size, size=10, replace=False):
        coord = grid.all_coords()[flat]
        for r in range(len(bw.positions)):
            assert fast[flat, r] == pytest.approx(_brute_estimate(grid, hist.values, bw, coord, r))


def _padded_sums(hist, bw, keys, step):
    """The dense sums as they were made from a zero-padded copy of the
    histogram: one fancy-index gather per block of ``step`` rows, then the
    product with W (the oracle of the in-place gather)."""
    grid = hist.grid
    R = max(int(bw.offsets.max()), -int(bw.offsets.min()), 1)
    P = np.zeros(tuple(s + 2 * R for s in grid.shape))
    P[tuple(slice(R, R + s) for s in grid.shape)] = hist.values
    strides = np.array(P.strides, dtype=np.int64) // P.itemsize
    deltas = bw.offsets @ strides
    out = np.empty((keys.size, len(bw.positions)))
    for a in range(0, keys.size, step):
        base = (grid.decode(keys[a : a + step]) + R) @ strides
        np.matmul(P.ravel()[base[:, None] + deltas[None, :]], bw.transposed(), out=out[a : a + step])
    return out


@pytest.mark.parametrize(
    "d,k,eta", [(1, 2, 4.0), (2, 1, 4.0), (2, 2, 4.0), (2, 2, 2.0), (3, 2, 4.0), (3, 1, 1.0)]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_dense_sums_read_in_place_are_the_padded_copys_bit_for_bit(d, k, eta, seed, monkeypatch):
    """Below COMPILED_FROM_D the dense sums gather from the histogram itself,
    reading 0 outside the grid: the same floats as from its zero-padded copy,
    for cells inside and near every face, in any order, in blocks of any size
    (integer and float values)."""
    from dpdbscan.post.coretests.density import weightedsums

    rng = np.random.default_rng(seed)
    hist = _random_hist("dense", seed=seed, d=d, alpha=0.3 if d == 3 else 0.1)
    if seed:  # float values (continuous noise)
        hist = make_histogram(hist.grid, "dense", hist.values + rng.normal(0, 1.5, hist.grid.shape))
    grid = hist.grid
    bw = ball_weights(d, eta, k)
    every = grid.encode(grid.all_coords())
    keys = rng.permutation(every)[: max(1, every.size // 2)]
    keys = np.concatenate([keys, every[:3], every[-3:]])  # the first and last cells, a repeat or two
    step = 7
    monkeypatch.setattr(weightedsums, "_rows_per_block", lambda terms: step)
    got = weighted_sums_at(hist, bw, keys)
    want = _padded_sums(hist, bw, keys, step)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert not np.all(got == 0)


@pytest.mark.parametrize("d,k", [(1, 2), (2, 2), (3, 2)])
def test_sparse_sums_equal_dense_sums_of_the_same_release(d, k):
    """A sparse release reads 0 where nothing is released: its sums equal the
    dense sums of the array with those cells zeroed."""
    hist = _random_hist("sparse", seed=7, d=d, alpha=0.25 if d == 3 else 0.1, theta=2.0, noise_vals=False)
    grid = hist.grid
    dense_vals = np.zeros(grid.shape, dtype=np.int64)
    dense_vals[tuple(grid.decode(hist.keys).T)] = hist.values
    dense = make_histogram(grid, "dense", dense_vals)
    bw = ball_weights(d, 4.0, k)
    keys = grid.encode(grid.all_coords())
    np.testing.assert_allclose(weighted_sums_at(hist, bw, keys), weighted_sums_at(dense, bw, keys), atol=1e-9)


# --------------------------------------------------------------------------- #
# noise, quantiles and margins


@pytest.mark.parametrize("noise,eps", [("discrete", 1.0), ("discrete", 0.5), ("laplace", 1.0)])
def test_noise_variance(noise, eps):
    from dpdbscan.release.histograms import ContinuousLaplace, DiscreteLaplace

    def make_noise(kind, epsilon):
        return (DiscreteLaplace if kind == "discrete" else ContinuousLaplace)(epsilon)

    z = make_noise(noise, eps).sample(SeededSource(3), 400_000).astype(np.float64)
    v = noise_variance(noise, eps)
    # the sample variance of 4e5 Laplace draws has relative sd ~ sqrt(5/n); 5 sd
    assert abs(z.var() - v) <= 5 * math.sqrt(5.0 / z.size) * v
    assert noise_variance("none", 1.0) == 0.0


#: the noise laws the margins are checked on: (kind, scale, slack): the scale
#: is epsilon for Laplace and sigma^2 for the Gaussian; ``slack`` how far
#: below g the tail must already exceed the level (g is not loose)
LAWS = [("discrete", 1.0, 0.3), ("laplace", 1.0, 0.3), ("gaussian", 2.0, 0.5), ("gaussian", 30.0, 2.0)]


def _noise(kind, scale):
    from dpdbscan.release.histograms import ContinuousLaplace, DiscreteGaussian, DiscreteLaplace

    return {"discrete": DiscreteLaplace, "laplace": ContinuousLaplace, "gaussian": DiscreteGaussian}[kind](
        scale
    )


@pytest.mark.parametrize("noise,scale,slack", LAWS)
@pytest.mark.parametrize("truncation", [None, 2.0, "positive"])
def test_weighted_quantile_bounds_the_tail(noise, scale, slack, truncation):
    """P(N >= g) <= level, checked on 4e5 draws with a one-sided Clopper-Pearson
    bound at 1e-6 (false failure rate 1e-6); and g is not loose (the tail
    just below g - slack is above the level). The Gaussian's too (issue 20)."""
    from scipy.stats import beta as beta_dist

    W = ball_weights(2, 4.0, 2).W[0]
    W = W[W > 0]
    level = 0.01
    g = weighted_quantile(noise, scale, tuple(W), level, truncation)
    n = 400_000
    Z = _noise(noise, scale).sample(SeededSource(5), n * W.size).reshape(n, W.size)
    Z = Z.astype(np.float64)
    if truncation == "positive":
        Z = np.maximum(Z, 0)
    elif truncation is not None:
        Z = np.where(Z >= truncation, Z, 0.0)
    N = Z @ W
    k = int((N >= g).sum())
    lower = beta_dist.ppf(1e-6, k, n - k + 1) if k else 0.0
    assert lower <= level
    k2 = int((N >= g - slack).sum())
    assert beta_dist.ppf(1 - 1e-6, k2 + 1, n - k2) >= level  # not far above the quantile


@pytest.mark.parametrize("noise,scale", [("discrete", 1.0), ("gaussian", 2.0), ("gaussian", 400.0)])
def test_chernoff_is_above_the_exact_quantile(noise, scale):
    W = ball_weights(2, 4.0, 2).W[0]
    W = tuple(W[W > 0])
    for level in (1e-2, 1e-6):
        chernoff = weighted_tail_bound(noise, scale, W, math.log(level))
        assert chernoff >= weighted_quantile(noise, scale, W, level)
        if noise == "gaussian":
            # the Chernoff bound of a subgaussian sum: at most sigma sqrt(2 ln(1/level) sum W^2)
            assert chernoff <= math.sqrt(2 * scale * math.log(1 / level) * sum(w * w for w in W)) + 1e-9


def test_margin_rules():
    bw = ball_weights(2, 4.0, 2)
    m = margin(1.0, bw, "discrete", 1.0, 0.1, 10_000)
    np.testing.assert_allclose(m.values, m.sigma)
    np.testing.assert_allclose(m.sigma, np.sqrt(noise_variance("discrete", 1.0) * bw.sums_of_squares))
    # the guard: threshold at least the empty-neighbourhood quantile
    g = margin(1.0, bw, "discrete", 1.0, 0.1, 10_000, min_samples=3)
    assert np.all(3 + g.values >= g.empty) and np.all(g.empty > 3 + g.sigma)
    g2 = margin(1.0, bw, "discrete", 1.0, 0.1, 10_000, min_samples=100)
    np.testing.assert_allclose(g2.values, g2.sigma)
    # stability releases never show an empty cell: no guard needed
    z = margin(1.0, bw, "discrete", 1.0, 0.1, 10_000, min_samples=3, truncation="zero")
    np.testing.assert_allclose(z.values, z.sigma)
    with pytest.raises(ValueError, match="density margin"):
        margin("paper", bw, "discrete", 1.0, 0.1, 100)
    with pytest.raises(ValueError, match="numeric density margin"):
        margin(-1.0, bw, "discrete", 1.0, 0.1, 100)
    # the accuracy bound of a truncating release (Z^+) is above the dense one
    assert np.all(
        accuracy_margin(bw, "discrete", 1.0, 0.1, 1000, "sparse")
        > accuracy_margin(bw, "discrete", 1.0, 0.1, 1000, "dense")
    )


# --------------------------------------------------------------------------- #
# the noiseless oracle


def _instance(d, seed, n_per=80):
    rng = np.random.default_rng(seed)
    centres = 0.2 + 0.6 * rng.random((3, d))
    X = np.vstack([c + 0.05 * rng.standard_normal((n_per, d)) for c in centres])
    X = np.vstack([X, rng.random((30, d))])
    return np.clip(X, 0, 1)


def _brute_density_spans(grid, counts, min_samples, k, gamma, estimate="average"):
    """Core sub-cells and spans of the noiseless density test, cell by cell:
    E(q) = sum over every cell Y of W(q, Y) x_Y with W from the weights table,
    core iff E(q) >= min_samples and X is occupied; spans join core
    sub-cells whose centres are at distance < alpha (checked in floats)."""
    bw = ball_weights(grid.d, grid.eta, k, estimate)
    fine_w = grid.width / k
    core = []
    for X in itertools.product(*[range(s) for s in grid.shape]):
        for r, pos in enumerate(bw.positions):
            f = tuple(x * k + p for x, p in zip(X, pos))
            if any(fi * fine_w >= hi - lo - 1e-12 for fi, lo, hi in zip(f, grid.lower, grid.upper)):
                continue  # sub-cell outside the box
            E = 0.0
            for j, o in enumerate(bw.offsets):
                Y = tuple(x + oi for x, oi in zip(X, o))
                E += bw.W[r, j] * counts.get(Y, 0)
            own = counts.get(X, 0)  # without noise: occupied iff own > 0 or own >= gamma E / S
            if E >= min_samples and (own > 0 or own >= gamma * E / bw.sums[r]):
                core.append(f)

    def linked(a, b):
        c = np.asarray(a, float) - np.asarray(b, float)
        return math.sqrt((c * c).sum()) * fine_w < grid.eps * (1 - 1e-9)

    return components(core, linked)


@pytest.mark.parametrize("histogram", ["dense", "sparse"])
@pytest.mark.parametrize(
    "d,alpha,min_samples,k,eta",
    [
        (1, 0.05, 5, 2, 4.0),
        (2, 0.1, 8, 2, 4.0),
        (2, 0.12, 12, 1, 4.0),
        (2, 0.1, 8, 3, 4.0),
        (2, 0.12, 10, 2, 2.0),
        (3, 0.3, 10, 2, 4.0),
    ],
)
def test_noiseless_density_pipeline_equals_brute_force(histogram, d, alpha, min_samples, k, eta):
    X = _instance(d, 4)
    grid = Grid(np.zeros(d), np.ones(d), alpha, eta)
    hist = release_histogram(
        grid, X, MechanismConfig(epsilon=1.0, histogram=histogram, noise="none"), SeededSource(0)
    )
    dc = density_field(hist, min_samples, subcells=k, margin_rule=0.0).core(min_samples)
    labels = merge_centres(dc.fine, dc.keys)
    counts = {}
    for c in map(tuple, grid.coords(X)):
        counts[c] = counts.get(c, 0) + 1
    expected = _brute_density_spans(grid, counts, min_samples, k, dc.occupancy)
    got = dict(zip(map(tuple, dc.fine.decode(dc.keys).tolist()), labels.tolist()))
    assert set(got) == set(expected)
    assert same_partition(got, expected)
    assert len(expected) > 0


def test_occupancy_removes_the_gap_between_two_dense_clusters():
    """Two dense clusters 1.6 alpha apart: the empty cells between them have
    MinPts points within alpha but hold no point. Without the occupancy
    condition they join the clusters; with it the clusters stay apart."""
    rng = np.random.default_rng(1)
    alpha = 0.05
    X = np.vstack(
        [
            [0.4, 0.5] + 0.01 * rng.standard_normal((600, 2)),
            [0.4 + 0.08 + 0.02, 0.5] + 0.01 * rng.standard_normal((600, 2)),
        ]
    )
    X = X[np.abs(X[:, 0] - 0.45) > 0.04]  # an empty band 0.08 = 1.6 alpha wide
    grid = Grid([0, 0], [1, 1], alpha)
    hist = release_histogram(
        grid, X, MechanismConfig(epsilon=1.0, histogram="dense", noise="none"), SeededSource(0)
    )
    for gamma, want in [(0.0, 1), (0.5, 2)]:
        dc = density_field(hist, 20, subcells=2, margin_rule=0.0, occupancy=gamma).core(20)
        assert merge_centres(dc.fine, dc.keys).max() + 1 == want


# --------------------------------------------------------------------------- #
# centres: merging and the border rule


def test_centre_merging_uses_strict_distances():
    fine = Grid([0, 0], [1, 1], 0.1, 2.0)  # width alpha/(2 sqrt 2): (alpha/w)^2 = 8
    assert radius_cells2(fine, 0.1) == 8.0
    offs = {tuple(o) for o in centre_offsets(2, 8.0).tolist()}
    assert (2, 1) in offs and (2, 2) not in offs and (0, 2) in offs and (3, 0) not in offs
    cells = np.array([[0, 0], [2, 2], [5, 5], [7, 6], [10, 10], [13, 10]])
    keys = fine.encode(cells)
    order = np.argsort(keys)
    lab = merge_centres(fine, keys[order])
    by = dict(zip(map(tuple, cells[order].tolist()), lab.tolist()))
    assert by[(0, 0)] != by[(2, 2)]  # distance exactly alpha: not joined
    assert by[(5, 5)] == by[(7, 6)]
    assert by[(10, 10)] != by[(13, 10)]
    assert lab[0] == 0


def test_centre_merging_equals_all_pairs():
    rng = np.random.default_rng(2)
    fine = Grid([0, 0, 0], [1, 1, 1], 0.2, 2.0)
    coords = np.unique(rng.integers(0, fine.shape[0], size=(300, 3)), axis=0)
    keys = fine.encode(coords)
    order = np.argsort(keys)
    lab = merge_centres(fine, keys[order])
    expected = components(
        [tuple(c) for c in coords[order].tolist()],
        lambda a, b: fine.width * math.dist(a, b) < 0.2 * (1 - 1e-9),
    )
    got = dict(zip(map(tuple, coords[order].tolist()), lab.tolist()))
    assert same_partition(got, expected)


def test_nearest_centre_border_rule_against_brute_force():
    rng = np.random.default_rng(3)
    fine = Grid([0, 0], [1, 1], 0.1, 2.0)
    coords = np.unique(rng.integers(0, fine.shape[0], size=(40, 2)), axis=0)
    keys = fine.encode(coords)
    order = np.argsort(keys)
    keys, coords = keys[order], coords[order]
    labels = merge_centres(fine, keys)
    X = rng.random((3000, 2))
    got = predict_spans(fine, *span_regions(fine, keys, labels, 0.1, "centres"), X)
    centres = fine.cell_centres(coords)
    own = fine.encode(fine.coords(X))
    for x, g, ok in zip(X, got, own):
        hit = np.flatnonzero(keys == ok)
        if hit.size:
            assert g == labels[hit[0]]
            continue
        # the border rule is evaluated at the centre of the point's cell
        x = fine.cell_centres(fine.coords(x[None]))[0]
        dist = np.sqrt(((centres - x) ** 2).sum(axis=1))
        inside = dist <= 0.1 * (1 + 1e-9)  # centres exactly eps apart are within eps
        if not inside.any():
            assert g == -1
        else:
            best = dist[inside].min()
            cand = labels[inside][np.isclose(dist[inside], best, rtol=0, atol=1e-12)]
            assert g == cand.min()
    assert (got >= 0).any() and (got == -1).any()


# --------------------------------------------------------------------------- #
# the estimator and the saved model


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack(
        [
            [0.3, 0.3] + 0.03 * rng.standard_normal((3000, 2)),
            [0.7, 0.65] + 0.03 * rng.standard_normal((3000, 2)),
        ]
    )


def test_estimator_density_release_round_trips_through_json():
    X = _blobs()
    est = DPDBSCAN(eps=0.03, min_samples=20, epsilon=1.0, bounds=(0, 1), random_state=0).fit(X)
    spans = est.spans_
    assert spans.spec.core == "density" and spans.n_spans == 2
    again = model_from_dict(json.loads(to_json(spans)))
    assert again.spec.core == "density" and again.spec.margin == spans.spec.margin
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    re = with_params(spans, min_samples=20)
    assert re.spec.core == "density"
    np.testing.assert_array_equal(re.core_keys, spans.core_keys)
    g = guarantee(spans)
    assert g["core"] == "density" and g["covers_clusters_at"] is None
    assert g["within_clusters_at"]["min_samples"] >= 1


def test_bound_release_is_unchanged_by_the_option():
    X = _blobs(1)
    kw = dict(eps=0.03, min_samples=20, epsilon=1.0, bounds=(0, 1), random_state=0)
    a = DPDBSCAN(core="bound", **kw).fit(X)
    b = DPDBSCAN(core="bound", margin="chernoff", **kw).fit(X)
    assert a.spans_.spec.core == "bound" and a.spans_.spec.margin == "chernoff"
    np.testing.assert_array_equal(a.spans_.core_keys, b.spans_.core_keys)
    assert model_from_dict(json.loads(to_json(a.spans_))).spec.core == "bound"


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(core="upper"), "core must be"),
        (dict(core="bound", margin="pointwise"), "rule of the density test"),
        (dict(core="density", margin="paper"), "bound test's Gamma"),
        (dict(core="density", margin=-1.0), "margin must be"),
    ],
)
def test_bad_core_options(kw, match):
    with pytest.raises(ValueError, match=match):
        DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1), **kw).fit(np.zeros((3, 2)))


def test_a_dense_blob_is_one_span():
    """The edge cells of a dense cluster hold few points next to a full ball;
    they read as occupied (above the noise level), so the edge does not break
    off as extra spans."""
    rng = np.random.default_rng(0)
    X = 0.3 + 0.05 * rng.standard_normal((3000, 2))
    for seed in range(5):
        est = DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1), random_state=seed)
        with pytest.warns(Warning):  # "single span" (and the seed warning)
            est.fit(X)
        assert est.spans_.n_spans == 1


@pytest.mark.parametrize("histogram", ["dense", "sparse"])
def test_noiseless_pipeline_without_occupancy(histogram):
    """occupancy=0 (no occupancy condition, its own candidate search) also
    equals the brute force."""
    X = _instance(2, 5)
    grid = Grid(np.zeros(2), np.ones(2), 0.1)
    hist = release_histogram(
        grid, X, MechanismConfig(epsilon=1.0, histogram=histogram, noise="none"), SeededSource(0)
    )
    dc = density_field(hist, 8, subcells=2, margin_rule=0.0, occupancy=0.0).core(8)
    counts = {}
    for c in map(tuple, grid.coords(X)):
        counts[c] = counts.get(c, 0) + 1
    expected = _brute_density_spans(grid, counts, 8, 2, 0.0)
    got = dict(zip(map(tuple, dc.fine.decode(dc.keys).tolist()), merge_centres(dc.fine, dc.keys).tolist()))
    assert set(got) == set(expected) and same_partition(got, expected)


# --------------------------------------------------------------------------- #
# extreme epsilon (issue 19, finding 8)

EXTREME_EPSILON = [30.0, 700.0, 800.0, 1000.0, 1e4]


@pytest.mark.parametrize("sigma2", [0.05, 1.0, 1e4, 1e6])
def test_density_margins_are_finite_for_any_gaussian(sigma2):
    """Every margin of the density test with Gaussian noise, from almost no
    noise (sigma^2 = 0.05) to a release at a tiny budget (sigma = 1e3):
    finite, and growing with sigma."""
    bw = ball_weights(2, 4.0, 2)
    prev = None
    for s2 in (sigma2, 4 * sigma2):
        m = margin("pointwise", bw, "gaussian", s2, 0.1, 10_000, min_samples=3, truncation=2.0)
        assert np.all(np.isfinite(m.values)) and np.all(m.values >= 0)
        if prev is not None:
            assert np.all(m.values >= prev - 1e-9)
        prev = m.values
        G = accuracy_margin(bw, "gaussian", s2, 0.1, 10_000, "sparse")
        assert np.all(np.isfinite(G)) and np.all(G >= 0)


@pytest.mark.parametrize("epsilon", EXTREME_EPSILON)
@pytest.mark.parametrize("noise", ["discrete", "laplace"])
def test_density_margins_are_stable_at_extreme_epsilon(noise, epsilon):
    """Every margin of the density test at any accepted epsilon (up to
    params.MAX_EPSILON = 1e4): no floating-point warning (the suite turns
    them into errors; before the fix cosh and q ** -m overflowed from
    epsilon ~ 710 on), finite, and never above the margin at epsilon = 10
    (less noise, never a larger margin)."""
    bw = ball_weights(2, 4.0, 2)
    for rule in (1.0, "pointwise", "chernoff"):
        for trunc in (None, 0.0, 2.0, "zero"):
            m = margin(rule, bw, noise, epsilon, 0.1, 10_000, min_samples=3, truncation=trunc)
            ref = margin(rule, bw, noise, 10.0, 0.1, 10_000, min_samples=3, truncation=trunc)
            assert np.all(np.isfinite(m.values)) and np.all(m.values >= 0)
            assert np.all(m.values <= ref.values + 1e-9), (rule, trunc)
    for kind in ("dense", "sparse"):
        G = accuracy_margin(bw, noise, epsilon, 0.1, 10_000, kind)
        assert np.all(np.isfinite(G)) and np.all(G >= 0)
        assert np.all(G <= accuracy_margin(bw, noise, 10.0, 0.1, 10_000, kind) + 1e-9)


@pytest.mark.parametrize("d,k", [(2, 2), (3, 1), (4, 1)])
def test_density_field_is_the_same_with_or_without_the_box_cover(d, k, monkeypatch):
    """The box-cover bound (post/coretests/density/cover.py) only discards
    cells the exact sums would: the same field without it (MAX_TABLE_CELLS
    = 0 sends every candidate to the bucket bound and the exact sums)."""
    from dpdbscan.post.coretests.density import cover

    rng = np.random.default_rng(d)
    c = rng.uniform(0.3, 0.7, (3, d))
    X = np.clip(c[rng.integers(0, 3, 3000)] + rng.normal(0, 0.03, (3000, d)), 0, 1)
    X = np.concatenate([X, rng.random((300, d))])
    eps = {2: 0.03, 3: 0.08, 4: 0.15}[d]
    grid = Grid(np.zeros(d), np.ones(d), eps, 4.0)
    cfg = MechanismConfig(histogram="sparse", epsilon=1.0, delta=0.0)
    hist = release_histogram(grid, X, cfg, d)
    fields = []
    for limit in (cover.MAX_TABLE_CELLS, 0):
        monkeypatch.setattr(cover, "MAX_TABLE_CELLS", limit)
        fields.append(density_field(hist, 10, subcells=k))
    a, b = fields
    assert a.keys.size > 0
    assert np.array_equal(a.keys, b.keys) and np.array_equal(a.estimates, b.estimates)


@pytest.mark.parametrize("noise,scale", [("discrete", 1.0), ("laplace", 0.5), ("gaussian", 30.0)])
@pytest.mark.parametrize("truncation", [None, "positive"])
def test_a_shared_law_gives_each_level_its_own_quantile(noise, scale, truncation):
    """place_tail reads many levels off one law built with the lowest
    level's z_max (``floor``): each quantile is within one bin of the one
    built with its own z_max (the law only reaches farther out, moving less
    mass inwards)."""
    from dpdbscan.post.coretests.density.densitymargin import PLACE_LEVELS, resolution

    W = ball_weights(2, 4.0, 2).W[0]
    W = tuple(float(x) for x in W[W > 0])
    delta = 0.01 * resolution(noise, scale)
    for level in PLACE_LEVELS:
        own = weighted_quantile(noise, scale, W, level, truncation)
        shared = weighted_quantile(noise, scale, W, level, truncation, PLACE_LEVELS[0])
        assert abs(shared - own) <= delta + 1e-12, (level, own, shared)


def test_margin_keys_are_held_for_read_only_weights_only():
    """The sorted weights of a sub-position key the margins' caches: held for
    the ball weights (read-only), recomputed for a writable array, which may
    change between calls."""
    from dpdbscan.post.coretests.density.densitymargin import _rounded

    W = ball_weights(3, 4.0, 2).W
    assert not W.flags.writeable
    key = _rounded(W[1])
    assert _rounded(W[1]) is key and hash(key) == hash(tuple(key))
    assert key == tuple(sorted(float(round(x, 12)) for x in W[1] if x > 0))
    mine = W.copy()
    k1 = _rounded(mine[1])
    assert k1 == key and k1 is not key
    mine[1, np.flatnonzero(mine[1])[0]] = 0.5
    assert _rounded(mine[1]) != key


def test_ball_weights_are_one_entry_whatever_the_call():
    """The density test and its figures call the weights with and without
    the estimate spelled out: one computation, one object."""
    a = ball_weights(3, 4.0, 2)
    assert ball_weights(3, 4.0, 2, "average") is a and ball_weights(3, 4, k=2, estimate="average") is a
    assert ball_weights(3, 4.0, 2, "centre") is not a


def test_margin_multiset_is_held_by_the_key():
    """The distinct weights of a key and their counts, computed once per key,
    are np.unique of its positive weights (a plain tuple is not held)."""
    from dpdbscan.post.coretests.density.densitymargin import _multiset, _rounded

    W = ball_weights(3, 4.0, 2).W
    key = _rounded(W[2])
    uniq, counts = _multiset(key)
    w = np.asarray(key)
    want_u, want_c = np.unique(w[w > 0], return_counts=True)
    assert np.array_equal(uniq, want_u) and np.array_equal(counts, want_c)
    assert _multiset(key)[0] is uniq and not uniq.flags.writeable
    plain = tuple(key)
    assert np.array_equal(_multiset(plain)[0], want_u) and _multiset(plain)[0] is not _multiset(plain)[0]


@pytest.mark.parametrize(
    ("d", "alpha", "seed"), [(5, 0.04, 0), pytest.param(6, 0.05, 1, marks=pytest.mark.slow)]
)
def test_reaching_sums_give_the_same_model(monkeypatch, d, alpha, seed):
    """A sparse fit in 5-D and 6-D (most released cells empty: noise above
    theta) gives the same model file, byte for byte, with the NB sums of the
    released cells from pairs listed once as without them (the bucket block
    sums and the runs or pairs of :func:`sparse_neighbour_sums`)."""

    from dpdbscan.post import sums as sums_mod
    from dpdbscan.post.coretests.density import coresubcells

    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, (4, d))
    X = np.clip(centres[rng.integers(0, 4, 6000)] + rng.normal(0, 0.02, (6000, d)), 0, 1)
    X[:1000] = rng.uniform(0, 1, (1000, d))
    calls = []
    real = sums_mod.reaching_sums

    def counted(*args):
        out = real(*args)
        calls.append(out is not None)
        return out

    def fit():
        return _model_digest(X, alpha, seed)

    monkeypatch.setattr(coresubcells, "reaching_sums", counted)
    sums_mod._LAST_INDEX.clear()
    new = fit()
    assert calls == [True]
    monkeypatch.setattr(coresubcells, "reaching_sums", lambda *args: None)
    sums_mod._LAST_INDEX.clear()
    assert fit() == new


@pytest.mark.parametrize("seed,shell", [(0, "blocks"), (1, "blocks"), (0, "join")])
def test_reachable_cells_hold_every_cell_whose_weighted_sum_reaches(seed, shell, monkeypatch):
    """The filter of the sparse density test in 5-D (the kernel's inner
    offsets from a self-join, its outer shell bounded by block sums, or the
    whole kernel from the self-join where that costs less) keeps every
    released cell whose weighted sum E~ reaches the threshold, at several
    thresholds (a superset: the model is the same), and rules out most of
    the others."""
    from dpdbscan.post.coretests.density import coresubcells

    monkeypatch.setattr(coresubcells, "_SHELL_NS", math.inf if shell == "blocks" else 0.0)
    # (the cap on the values would bound the shell before the blocks: its own test)
    monkeypatch.setattr(coresubcells, "_capped_pays", lambda *args: False)
    from dpdbscan.post.coretests.density.weightedsums import weighted_sums_at
    from dpdbscan.post.coretests.density.weights import ball_weights

    d = 5
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, (4, d))
    X = np.clip(centres[rng.integers(0, 4, 6000)] + rng.normal(0, 0.02, (6000, d)), 0, 1)
    X[:1000] = rng.uniform(0, 1, (1000, d))
    grid = Grid(np.zeros(d), np.ones(d), 0.04, 4.0)
    hist = release_histogram(grid, X, MechanismConfig(histogram="sparse", epsilon=1.0), SeededSource(seed))
    W = ball_weights(d, 4.0, 1)
    inner = coresubcells._inner_kernel(grid, W.offsets, W.W.max(axis=0), hist.released_keys.size)
    assert (inner is not None) == (shell == "blocks")  # the path tested
    keys = hist.released_keys
    E = weighted_sums_at(hist, W, keys).max(axis=1)
    for q in (0.5, 0.9, 0.99, 0.999):
        t = float(np.quantile(E, q))
        keep = coresubcells._reachable(hist, keys, t * (1 - 1e-9), W, hist.values)
        assert keep[E >= t].all()
        if q >= 0.99:
            assert keep.sum() <= 3 * (E >= t).sum() + 10


def _model_digest(X, eps, seed, **kw):
    """The SHA-256 of the JSON model of a seeded fit (MinPts 20, epsilon 1,
    bounds (0, 1), other parameters ``kw``): what two paths of the density
    test must agree on."""
    import hashlib
    import warnings

    est = DPDBSCAN(eps, min_samples=20, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    return hashlib.sha256(to_json(est.spans_).encode()).hexdigest()


@pytest.mark.parametrize("subcells", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_a_looser_filter_of_reachable_cells_gives_the_same_model(subcells, monkeypatch):
    """The sparse density test's filter (:func:`_reachable`, the self-join's
    kernel sums against the cut) only spares the exact sums of the cells it
    rules out: keeping more cells (those reaching half the cut) gives the
    same model file byte for byte, so the join's sums need not be added in
    any one order, only bound E~ from above."""
    from dpdbscan.post.coretests.density import coresubcells

    d, alpha, seed = 5, 0.08, 3
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, (4, d))
    X = np.clip(centres[rng.integers(0, 4, 6000)] + rng.normal(0, 0.02, (6000, d)), 0, 1)
    X[:1000] = rng.uniform(0, 1, (1000, d))
    real = coresubcells._reachable
    kept = []

    def counted(hist, cand, threshold, weights, own=None):
        out = real(hist, cand, threshold, weights, own)
        kept.append(int(out.sum()))
        return out

    monkeypatch.setattr(coresubcells, "_reachable", counted)
    want = _model_digest(X, alpha, seed, subcells=subcells)
    looser = functools.partial(_looser_filter, real, kept)
    monkeypatch.setattr(coresubcells, "_reachable", looser)
    assert _model_digest(X, alpha, seed, subcells=subcells) == want
    assert len(kept) == 2 and 0 < kept[0] < kept[1]  # (the looser filter kept more)


def _looser_filter(real, kept, hist, cand, threshold, weights, own=None):
    """``real`` (the filter of reachable cells) at half the cut."""
    out = real(hist, cand, threshold / 2, weights, own)
    kept.append(int(out.sum()))
    return out


JOIN_PATHS = [(0, "cube"), (1, "blocks"), (2, "join")]


def _join_first_case(seed, path, monkeypatch):
    """5-D points on a universe the box cover takes (eps = 0.08), with the
    self-join steered down one of its paths."""
    from dpdbscan.post.coretests.density import coresubcells

    monkeypatch.setattr(coresubcells, "_SHELL_NS", 0.0 if path == "join" else 120.0)
    monkeypatch.setattr(coresubcells, "_CUBE_ENTRIES_PER_CELL", math.inf if path == "cube" else 0.0)
    monkeypatch.setattr(coresubcells, "_capped_pays", lambda *args: False)  # (its own test)
    d = 5
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, (4, d))
    X = np.clip(centres[rng.integers(0, 4, 6000)] + rng.normal(0, 0.02, (6000, d)), 0, 1)
    X[:1000] = rng.uniform(0, 1, (1000, d))
    return X, 0.08


@pytest.mark.parametrize("seed,path", JOIN_PATHS)
def test_join_before_the_cover_keeps_every_cell_that_reaches(seed, path, monkeypatch):
    """In 5-D on a universe the box cover takes, the self-join goes first:
    the inner kernel's sums with the block bound, the cube masses and the
    shell's own sums (or the whole kernel's join) keep every released cell
    whose weighted sum E~ reaches the threshold, and far fewer of the others
    than the cover (the fits' models: the slow test below)."""
    from dpdbscan.post import sums as sums_mod
    from dpdbscan.post.coretests.density import coresubcells
    from dpdbscan.post.coretests.density.cover import cover_sums
    from dpdbscan.post.coretests.density.weightedsums import weighted_sums_at
    from dpdbscan.post.coretests.density.weights import ball_weights

    X, eps = _join_first_case(seed, path, monkeypatch)
    d = X.shape[1]
    grid = Grid(np.zeros(d), np.ones(d), eps, 4.0)
    hist = release_histogram(grid, X, MechanismConfig(histogram="sparse", epsilon=1.0), SeededSource(seed))
    W = ball_weights(d, 4.0, 1)
    inner = coresubcells._inner_kernel(grid, W.offsets, W.W.max(axis=0), hist.released_keys.size)
    assert (inner is not None) == (path != "join")  # the path tested
    keys = hist.released_keys
    E = weighted_sums_at(hist, W, keys).max(axis=1)
    # a low threshold (most cells kept) and a high one (few kept, and few
    # more than those that reach); each threshold costs seconds of CPU here
    for q in (0.5, 0.99):
        t = float(np.quantile(E, q))
        sums_mod._LAST_INDEX.clear()
        keep = coresubcells._reachable(hist, keys, t * (1 - 1e-9), W, hist.values)
        assert keep[E >= t].all()
        cover = cover_sums(hist, keys, W, hist.values, t * (1 - 1e-9))
        assert cover is not None  # (the cover would take this universe)
        assert keep.sum() <= (cover >= t * (1 - 1e-9)).sum()
        if q >= 0.99:
            assert keep.sum() <= 3 * (E >= t).sum() + 10


@pytest.mark.slow  # two 5-D fits of 4-5 s of CPU each, per path
@pytest.mark.parametrize("seed,path", JOIN_PATHS)
def test_join_before_the_cover_gives_the_cover_s_model(seed, path, monkeypatch):
    """The fit's model with the self-join first is the one the cover first
    gives, on each of the join's paths."""

    from dpdbscan.post import sums as sums_mod
    from dpdbscan.post.coretests.density import coresubcells

    X, eps = _join_first_case(seed, path, monkeypatch)

    def fit():
        return _model_digest(X, eps, seed)

    sums_mod._LAST_INDEX.clear()
    new = fit()
    monkeypatch.setattr(coresubcells, "JOIN_FIRST_FROM_D", 99)
    sums_mod._LAST_INDEX.clear()
    assert fit() == new


@pytest.mark.parametrize(
    # the third: 3-11 s by the load, make test-slow
    "seed,integer,cap",
    [(0, True, 1.0), (1, False, 0.3), pytest.param(2, True, 3.0, marks=pytest.mark.slow)],
)
def test_capped_shell_decides_as_the_whole_kernel(seed, integer, cap, monkeypatch):
    """The sparse density test's filter with the kernel's outer shell
    bounded by a cap on the released values (the reach R - 1 join, the
    cap times the shell's weight plus the heavy cells' excess, then the
    shell's own sums): in 6-D it keeps exactly the released cells whose
    kernel sums, counted offset by offset, reach the threshold (away from
    the threshold by more than the rounding room), at several thresholds
    and caps (a cap of 0.3 x the one of half the threshold leaves most
    cells heavy, 3 x leaves most to the shell's sums)."""
    from dpdbscan.cells.grid import search_keys
    from dpdbscan.cells.pairs import forced
    from dpdbscan.post import sums as sums_mod
    from dpdbscan.post.coretests.density import coresubcells
    from dpdbscan.post.coretests.density.weights import ball_weights

    d = 6
    rng = np.random.default_rng(seed)
    grid = Grid(np.zeros(d), np.ones(d), 0.3, 4.0)
    centres = rng.integers(2, min(grid.shape) - 2, (3, d))
    n = 1500
    coords = np.concatenate([rng.integers(0, s, (n, 1)) for s in grid.shape], axis=1)
    coords[: n // 3] = centres[rng.integers(0, 3, n // 3)] + rng.integers(-2, 3, (n // 3, d))
    keys = np.unique(grid.encode(np.clip(coords, 0, np.array(grid.shape) - 1)))
    vals = rng.geometric(0.5, keys.size) + 5 if integer else rng.exponential(2.0, keys.size) + 5.0
    heavy = rng.random(keys.size) < 0.03
    vals = np.where(heavy, vals * rng.integers(3, 20, keys.size), vals)
    hist = make_histogram(grid, "sparse", vals, keys)
    W = ball_weights(d, 4.0, 1)
    off, K = W.offsets, W.W.max(axis=0)
    kc = grid.decode(keys)
    E = np.zeros(keys.size)
    for at in range(0, off.shape[0], 512):  # the oracle: offset by offset (512 at once)
        t = (kc[None, :, :] + off[at : at + 512, None, :]).reshape(-1, d)
        w = np.repeat(K[at : at + 512], keys.size)
        row = np.tile(np.arange(keys.size), min(512, off.shape[0] - at))
        ok = np.flatnonzero(grid.valid(t))
        idx, hit = search_keys(keys, grid.encode(t[ok]))
        np.add.at(E, row[ok[hit]], w[ok[hit]] * vals[idx[hit]])
    monkeypatch.setattr(coresubcells, "_capped_pays", lambda *args: True)
    monkeypatch.setattr(coresubcells, "_CAPS", (cap,))
    walks = []
    for name in ("kernel_sums_from", "kernel_sums_at"):
        real = getattr(coresubcells, name)

        def spy(grid, keys, values, some, kernel, real=real, name=name):
            walks.append((name, some.size))
            return real(grid, keys, values, some, kernel)

        monkeypatch.setattr(coresubcells, name, spy)
    for q in (0.5, 0.9, 0.99):
        t = float(np.quantile(E, q)) * (1 - 1e-9)
        sums_mod._LAST_INDEX.clear()
        with forced(True):
            keep = coresubcells._capped_shell_sums(hist, keys, (off, K), t)
        assert keep is not None
        far = np.abs(E - t) > 1e-9 * t
        assert np.array_equal(keep[far], E[far] >= t)
    # the heavy cells' excess and the shell's own sums were both walked
    assert {name for name, size in walks if size} == {"kernel_sums_from", "kernel_sums_at"}


@pytest.mark.parametrize("seed", range(4))
def test_cube_masses_hold_the_cube_and_are_the_buckets_it_meets(seed, monkeypatch):
    """The cube masses of the sparse density test: at least the released
    positive mass within R of each cell along every axis, and exactly the
    mass of the buckets that cube meets (integer and float releases; the
    bucket side forced up by a small table)."""
    from dpdbscan.post.coretests.density import coresubcells

    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 6))
    grid = Grid(np.zeros(d), np.ones(d), 0.3 if d > 3 else 0.1, 4.0)
    n = int(rng.integers(1, 400))
    keys = np.unique(grid.encode(np.stack([rng.integers(0, s, n) for s in grid.shape], axis=1)))
    integer = seed % 2 == 0
    vals = rng.integers(1, 40, keys.size) if integer else rng.exponential(4.0, keys.size) + 0.5
    hist = make_histogram(grid, "sparse", vals, keys)
    monkeypatch.setattr(coresubcells, "_CUBE_ENTRIES_PER_CELL", math.inf)
    monkeypatch.setattr(coresubcells, "_MAX_CUBE_BUCKETS", int(rng.integers(8, 4 * grid.n_cells)))
    m = int(rng.integers(1, 100))
    cand = np.unique(grid.encode(np.stack([rng.integers(0, s, m) for s in grid.shape], axis=1)))
    R = int(rng.integers(1, 4))
    got = coresubcells._cube_masses(hist, cand, R)
    if got is None:
        return
    side = 1
    while math.prod(-(-s // side) + 1 for s in grid.shape) > coresubcells._MAX_CUBE_BUCKETS:
        side *= 2
    kc, qc = grid.decode(keys), grid.decode(cand)
    near = np.abs(qc[:, None, :] - kc[None, :, :]).max(axis=2) <= R
    met = (
        (kc[None, :, :] // side >= (qc[:, None, :] - R) // side)
        & (kc[None, :, :] // side <= (qc[:, None, :] + R) // side)
    ).all(axis=2)
    assert (got >= near @ vals - 1e-9).all()
    assert np.allclose(got, met @ vals, rtol=1e-12, atol=1e-6)


def test_the_face_join_parts_core_sub_cells_that_the_eps_join_joins():
    from dpdbscan.cells.grid import Grid
    from dpdbscan.post.merge import centre_merge, join_r2, merge_centres

    fine = Grid(np.zeros(3), np.ones(3), 0.2, 4.0).subdivided(2)
    # two parallel rows of sub-cells, one empty row between them: centres two widths apart (< eps)
    a = np.column_stack([np.arange(10), np.full(10, 3), np.full(10, 3)])
    b = np.column_stack([np.arange(10), np.full(10, 5), np.full(10, 3)])
    keys = np.sort(fine.encode(np.vstack([a, b])))
    assert 2 * fine.width < fine.eps
    assert np.unique(merge_centres(fine, keys)).size == 1
    face = merge_centres(fine, keys, join="face")
    assert np.unique(face).size == 2
    sub = centre_merge(fine, keys, join="face")
    assert np.array_equal(sub.labels(np.ones(keys.size, dtype=bool)), face)
    assert join_r2(fine, join="face") == 1.5 and join_r2(fine) > 1.5
    with pytest.raises(ValueError, match="join must be"):
        join_r2(fine, join="edge")


def test_at_least_is_the_float_comparison():
    """``at_least`` (an integer cut for integer values) gives the booleans
    of ``values >= cut`` for every kind of cut, and floats are compared as
    they were."""
    from dpdbscan.post.coretests.density.coresubcells import at_least

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.integers(-50, 50, 10_000), [0, 1, -1, 2**52, -(2**52), 2**53 - 1]])
    cuts = [0.0, -0.0, 1.0, 2.7139249692892324, -2.5, 3.0 * (1 - 1e-9), 1e-12, 49.999999, 2.0**52 + 0.5]
    cuts += [2.0**53, -(2.0**60), math.inf, -math.inf, math.nan] + list(rng.uniform(-60, 60, 50))
    for cut in cuts:
        np.testing.assert_array_equal(at_least(values, cut), values >= cut, err_msg=repr(cut))
        floats = values.astype(np.float64) + 0.25
        np.testing.assert_array_equal(at_least(floats, cut), floats >= cut)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_dense_field_is_the_same_with_plain_comparisons_and_no_near_filter(seed, monkeypatch):
    """The dense field's candidates (cells above the occupancy cut by an
    integer comparison, the heavy cells taken among them, the near mask
    read by row-major index) give the field of float comparisons
    (``at_least`` replaced by ``>=``), and the near filter drops no cell
    the exact sums keep: the same field with a mask that keeps every cell
    (a heavy cell missed would drop its neighbours' sub-cells)."""
    from dpdbscan.post.coretests.density import coresubcells as cs

    rng = np.random.default_rng(seed)
    c = rng.uniform(0.2, 0.8, (4, 2))
    X = np.clip(c[rng.integers(0, 4, 20_000)] + rng.normal(0, 0.003, (20_000, 2)), 0, 1)
    # 501,264 cells, most of them empty: few heavy cells against many
    # cells whose noise clears the occupancy cut, so the near filter runs
    grid = Grid(np.zeros(2), np.ones(2), 0.002, 4.0)
    hist = release_histogram(grid, X, MechanismConfig(histogram="dense", epsilon=1.0, delta=0.0), 2)
    assert hist.kind == "dense" and hist.values.dtype.kind == "i"
    want = density_field(hist, 100)
    assert want.keys.size > 100
    with monkeypatch.context() as mp:
        mp.setattr(cs, "at_least", lambda values, cut, out=None: np.greater_equal(values, cut, out=out))
        same = density_field(hist, 100)
    assert np.array_equal(want.keys, same.keys) and np.array_equal(want.estimates, same.estimates)
    calls = []

    def everywhere(grid, heavy, offsets):
        calls.append(heavy.size)
        return np.ones(grid.shape, dtype=bool)

    monkeypatch.setattr(cs, "_dense_near_mask", everywhere)
    again = density_field(hist, 100)
    assert calls  # the filter ran
    assert np.array_equal(want.keys, again.keys) and np.array_equal(want.estimates, again.estimates)


@pytest.mark.parametrize("size", [1, 1000, 1 << 17, (1 << 17) + 1, 3 * (1 << 17) + 5])
def test_occupied_cells_of_a_dense_release_are_a_plain_scan(size):
    """The occupied cells found a chunk at a time: the indices and values
    of a scan of every value, whatever the size against the chunk."""
    from dpdbscan.post.coretests.density.coresubcells import OCCUPIED_CHUNK, _occupied_flat

    assert OCCUPIED_CHUNK == 1 << 17
    values = np.random.default_rng(size).integers(-6, 12, size).reshape(-1, 1)
    for cut in (2.7139, 3.0, 0.5):
        idx, own = _occupied_flat(values, cut)
        want = np.flatnonzero(values.ravel() >= cut)
        np.testing.assert_array_equal(idx, want)
        np.testing.assert_array_equal(own, values.ravel()[want])
