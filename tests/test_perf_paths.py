"""Exactness of the fast sampling paths and of the fast counting paths.

The fast samplers in ``dpdbscan._random`` decide several CKS trials from one
word by inversion, and Bernoulli(exp(-1)) from a 16-bit lookup table. Each
path is checked twice: exactly, by enumerating the words where that is
possible, and statistically against the exact distribution.

False-failure rate: every statistical test below is a chi-square (or
binomial) test at significance 1e-6 with expected counts >= 20 in every bin,
so a correct sampler fails it with probability about 1e-6 per test (for a
fresh seed; the seeds are fixed so that CI is reproducible).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpdbscan import _random as R
from dpdbscan.backends.numpy_backend import NumpyBackend, count_keys, run_length
from dpdbscan.grid import Grid

ALPHA = 1e-6


def _chi2_ok(counts, probs, min_expected=20.0):
    """Chi-square goodness of fit, tail bins merged until expected >= min_expected."""
    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    n = counts.sum()
    exp = probs * n
    # merge from the right until every bin has enough expected mass
    c, e = [], []
    acc_c = acc_e = 0.0
    for ci, ei in zip(counts[::-1], exp[::-1]):
        acc_c += ci
        acc_e += ei
        if acc_e >= min_expected:
            c.append(acc_c)
            e.append(acc_e)
            acc_c = acc_e = 0.0
    if acc_e and c:
        c[-1] += acc_c
        e[-1] += acc_e
    c, e = np.array(c[::-1]), np.array(e[::-1])
    e *= c.sum() / e.sum()
    p = stats.chisquare(c, e).pvalue
    return p, p > ALPHA


def _binom_ok(successes, n, p):
    return stats.binomtest(int(successes), int(n), float(p)).pvalue > ALPHA


# --------------------------------------------------------------------------- #
# exact checks by enumeration


def test_exp1_table_is_exact():
    """Among accepted 16-bit words, the first failed trial K has P(K = k) = 1/(k-1)! - 1/k!."""
    code = R._EXP1_CODE
    lim = R._EXP1_LIMIT
    assert lim == 13 * math.factorial(7) and lim <= 1 << 16
    w = np.arange(1 << 16)
    assert np.all(code[w >= lim] == 2)
    acc = code[:lim]
    # w < lim / k!  <=>  K > k; so K = k exactly on [lim/k!, lim/(k-1)!)
    for k in range(2, 8):
        lo, hi = lim // math.factorial(k), lim // math.factorial(k - 1)
        assert Fraction(hi - lo, lim) == Fraction(1, math.factorial(k - 1)) - Fraction(1, math.factorial(k))
        assert np.all(acc[lo:hi] == (1 if k % 2 == 1 else 0))
    assert np.all(acc[: lim // math.factorial(7)] == 3)
    assert Fraction(lim // math.factorial(7), lim) == Fraction(1, math.factorial(7))


@pytest.mark.parametrize("den", [1, 2, 3, 10, 1000, 1 << 20])
def test_inversion_thresholds_are_exact(den):
    """thresholds / range == num**k / (den**k k!) exactly, for every k <= kmax."""
    kmax = R._inversion_depth(den)
    size = den**kmax * math.factorial(kmax)
    assert kmax >= 1 and size <= 1 << 61
    mult = ((1 << 64) - 1) // size
    for num in {0, 1, den // 2, max(den - 1, 0), den}:
        for k in range(1, kmax + 1):
            thr = mult * num**k * den ** (kmax - k) * (math.factorial(kmax) // math.factorial(k))
            assert thr < 1 << 64
            assert Fraction(thr, mult * size) == Fraction(num**k, den**k * math.factorial(k))


class _Script:
    """A source that replays given words (then fresh PCG64 words)."""

    secure = False

    def __init__(self, words, seed=0):
        self.words = list(words)
        self.gen = np.random.default_rng(seed)

    def raw(self, n):
        take, self.words = self.words[:n], self.words[n:]
        rest = self.gen.bit_generator.random_raw(n - len(take)).astype(np.uint64)
        return np.concatenate([np.array(take, dtype=np.uint64), rest])


def test_uniform_words_reject_the_top():
    bound = 7
    mult = ((1 << 64) - 1) // bound
    top = mult * bound  # the first word to reject
    src = _Script([top, (1 << 64) - 1, 5])
    w, m = R._uniform_words(src, 1, bound)
    assert m == mult and w[0] == 5


# --------------------------------------------------------------------------- #
# statistical checks


def _pmf_geometric(q, vmax):
    v = np.arange(vmax + 1)
    p = (1 - q) * q**v
    p[-1] = q**vmax  # tail mass P(V >= vmax)
    return p


@pytest.mark.parametrize("source", [R.SeededSource(11), R.SecureSource()], ids=["seeded", "secure"])
def test_geometric_exp_neg1_distribution(source):
    n = 400_000
    v = R.geometric_exp_neg1(source, n)
    vmax = 12
    counts = np.bincount(np.minimum(v, vmax), minlength=vmax + 1)
    p, ok = _chi2_ok(counts, _pmf_geometric(math.exp(-1), vmax))
    assert ok, p


def test_cks_parity_tail_path():
    """The K > 7 continuation: P(K odd | K > 7) from 1/(k-1)! - 1/k!."""
    n = 200_000
    out = R._cks_parity(R.SeededSource(12), np.ones(n, np.uint64), 1, np.full(n, 8))
    tail = Fraction(1, math.factorial(7))
    odd = sum(Fraction(1, math.factorial(k - 1)) - Fraction(1, math.factorial(k)) for k in range(9, 40, 2))
    assert _binom_ok(out.sum(), n, float(odd / tail))


def test_exp1_codes_deep_words_are_resolved():
    """Words below 13 (K > 7) get code 0/1 with the conditional parity."""
    n = 100_000
    words = np.zeros((n + 3) // 4, dtype=np.uint64)  # all four 16-bit words = 0
    src = _Script(words.tolist(), seed=13)
    code = R._exp1_codes(src, n)
    assert set(np.unique(code)) <= {0, 1}
    tail = Fraction(1, math.factorial(7))
    odd = sum(Fraction(1, math.factorial(k - 1)) - Fraction(1, math.factorial(k)) for k in range(9, 40, 2))
    assert _binom_ok((code == 1).sum(), n, float(odd / tail))


@pytest.mark.parametrize("num,den", [(1, 1), (0, 1), (1, 2), (2, 3), (7, 10), (999, 1000),
                                     ((1 << 20) - 1, 1 << 20), (1 << 20, 1 << 20), (1, 1 << 20)])
def test_bernoulli_exp_neg(num, den):
    n = 200_000
    out = R.bernoulli_exp_neg(R.SeededSource(num + 7 * den), np.full(n, num), den)
    assert _binom_ok(out.sum(), n, math.exp(-num / den))


@pytest.mark.parametrize("kmax", [1, 2])
def test_inversion_with_forced_shallow_depth(kmax):
    """With kmax = 1 or 2 most samples take the trial-by-trial continuation."""
    n, num, den = 200_000, 5, 6
    src = R.SeededSource(20 + kmax)
    w, mult = R._uniform_words(src, n, den**kmax * math.factorial(kmax))
    out = R._exp_neg_by_inversion(src, w, mult, np.full(n, num, np.uint64), den, kmax)
    assert _binom_ok(out.sum(), n, math.exp(-num / den))


@pytest.mark.parametrize("t", [2, 3, 10, 1 << 20])
def test_uniform_accept_exp_neg_joint(t):
    """P(U = u, accepted) = exp(-u/t) / t (U binned for large t)."""
    n = 300_000
    u, ok = R._uniform_accept_exp_neg(R.SeededSource(t), n, t)
    bins = min(t, 16)
    b = (u.astype(np.int64) * bins) // t
    counts = np.concatenate([np.bincount(b[ok], minlength=bins), np.bincount(b[~ok], minlength=bins)])
    us = np.arange(t) if t <= 4096 else None
    probs = np.zeros(2 * bins)
    if us is not None:
        pa = np.exp(-us / t) / t
        np.add.at(probs, (us * bins) // t, pa)
        np.add.at(probs, bins + (us * bins) // t, 1 / t - pa)
    else:  # integrate exp(-u/t)/t over each bin of width t/bins (exactly: geometric sums)
        q = math.exp(-1 / t)
        for j in range(bins):
            lo, hi = j * t // bins, (j + 1) * t // bins
            pa = (q**lo - q**hi) / (1 - q) / t
            probs[j] = pa
            probs[bins + j] = (hi - lo) / t - pa
    p, good = _chi2_ok(counts, probs)
    assert good, p


EPSILONS = [Fraction(1), Fraction(2), Fraction(1, 2), Fraction(3, 2), Fraction(1, 10), Fraction(5, 7)]


@pytest.mark.parametrize("eps", EPSILONS, ids=str)
def test_discrete_laplace_distribution(eps):
    n = 300_000
    z = R.discrete_laplace(R.SeededSource(eps.numerator * 100 + eps.denominator), n, eps)
    q = math.exp(-float(eps))
    zmax = int(math.ceil(12 / float(eps)))
    vals = np.arange(-zmax, zmax + 1)
    probs = (1 - q) / (1 + q) * q ** np.abs(vals)
    # fold the two tails into the end bins
    probs[0] = probs[-1] = q**zmax / (1 + q)
    counts = np.bincount(np.clip(z, -zmax, zmax) + zmax, minlength=vals.size)
    p, ok = _chi2_ok(counts, probs / probs.sum())
    assert ok, p
    assert _binom_ok((z == 0).sum(), n, (1 - q) / (1 + q))


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 3), Fraction(5, 2)], ids=str)
def test_discrete_geometric_distribution(eps):
    n = 300_000
    g = R.discrete_geometric(R.SeededSource(99 + eps.denominator), n, eps)
    q = math.exp(-float(eps))
    gmax = int(math.ceil(12 / float(eps)))
    counts = np.bincount(np.minimum(g, gmax), minlength=gmax + 1)
    p, ok = _chi2_ok(counts, _pmf_geometric(q, gmax))
    assert ok, p


def test_discrete_laplace_secure_source_smoke():
    z = R.discrete_laplace(R.SecureSource(), 200_000, Fraction(1))
    q = math.exp(-1)
    assert _binom_ok((z == 0).sum(), z.size, (1 - q) / (1 + q))
    assert z.dtype == np.int64


def test_sampler_sizes():
    src = R.SeededSource(0)
    for n in [0, 1, 2, 3, 5, 63, 64, 65]:
        assert R.discrete_laplace(src, n, Fraction(1)).shape == (n,)
        assert R.discrete_laplace(src, n, Fraction(1, 3)).shape == (n,)
        assert R.geometric_exp_neg1(src, n).shape == (n,)
        assert R._raw_bits(src, n).shape == (n,)
        assert R._raw16(src, n).shape == (n,)


# --------------------------------------------------------------------------- #
# fast counting paths against the plain definitions


def _reference_coords(grid, X):
    c = np.floor((X - grid.lower) / grid.width)
    return np.clip(c, 0, np.asarray(grid.shape) - 1).astype(np.int64)


def _grids_and_points():
    rng = np.random.default_rng(5)
    cases = []
    for d, alpha in [(1, 0.3), (2, 0.05), (2, 1.0), (3, 0.2), (4, 0.7)]:
        lower = rng.uniform(-5, 5, d)
        upper = lower + rng.uniform(0.5, 4, d)
        g = Grid(lower, upper, alpha)
        n = 100_003  # more than one block, not a multiple of it
        X = rng.uniform(lower, upper, (n, d))
        # points on cell faces, on the box faces and at the corners
        k = rng.integers(0, np.asarray(g.shape) + 1, (500, d))
        faces = np.minimum(lower + k * g.width, upper)
        X = np.concatenate([X, faces, lower[None], upper[None]])
        cases.append((g, X))
    return cases


@pytest.mark.parametrize("case", range(5))
def test_keys_of_points_match_floor_and_clip(case):
    g, X = _grids_and_points()[case]
    ref = g.encode(_reference_coords(g, X))
    assert np.array_equal(g.keys_of_points(X), ref)
    assert np.array_equal(g.coords(X), _reference_coords(g, X))


def test_linear_index_integer_fallback():
    """A key space beyond 2**53 takes the integer path and agrees with encode."""
    g = Grid(np.zeros(4), np.full(4, 1.0), 1e-4)
    assert not g.wide and g.key_space >= 1 << 53
    X = np.random.default_rng(1).uniform(0, 1, (1000, 4))
    X[0] = 1.0
    assert np.array_equal(g.keys_of_points(X), g.encode(_reference_coords(g, X)))


@pytest.mark.parametrize("case", range(5))
def test_dense_counts_match_reference(case):
    g, X = _grids_and_points()[case]
    if g.n_cells > 1 << 22:
        pytest.skip("universe too large for a dense reference")
    counts = NumpyBackend().dense_counts(g, X)
    c = _reference_coords(g, X)
    ref = np.zeros(g.shape, dtype=np.int64)
    np.add.at(ref, tuple(c.T), 1)
    assert np.array_equal(counts, ref)
    cells = NumpyBackend().count(g, X)
    assert np.array_equal(cells.counts, ref[tuple(g.decode(cells.keys).T)])
    assert cells.counts.sum() == X.shape[0]


# --------------------------------------------------------------------------- #
# sparse histogram helpers


@pytest.mark.parametrize("bound", [1, 2, 7, 1000, (1 << 63) - 25, 1 << 63])
def test_uniform_below(bound):
    n = 200_000
    u = R.uniform_below(R.SeededSource(bound % 1000), n, bound)
    assert u.dtype == np.int64 and u.min() >= 0 and u.max() < bound
    if bound == 1:
        return
    bins = min(bound, 16)
    counts = np.bincount((u.astype(object) * bins // bound).astype(np.int64), minlength=bins)
    edges = [(j * bound + bins - 1) // bins for j in range(bins + 1)]  # first u in each bin
    probs = np.diff(np.array(edges, dtype=float)) / bound
    p, ok = _chi2_ok(counts, probs)
    assert ok, p


def test_linear_to_coords_is_row_major_and_exact():
    """Linear indices to coordinates: numpy's unravel_index on a small grid,
    and exact Python-int arithmetic on a universe beyond 2**62 (d = 10)."""
    from dpdbscan.histograms.sparse import linear_to_coords

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
    from dpdbscan.histograms.sparse import _merge_sorted

    rng = np.random.default_rng(0)
    for _ in range(50):
        allk = rng.choice(1000, size=rng.integers(0, 60), replace=False)
        split = rng.random(allk.size) < 0.5
        a, b = np.sort(allk[split]), np.sort(allk[~split])
        assert np.array_equal(_merge_sorted(a, b), np.sort(allk))


# --------------------------------------------------------------------------- #
# bucket pruning


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


def _force_regions(monkeypatch, regions, g):
    """Make pruning.regions pick one kind of region on grid ``g``."""
    from dpdbscan.histograms import pruning

    if regions == "supercells":
        monkeypatch.setattr(pruning, "COARSE_BUCKETS", 0)
        monkeypatch.setattr(pruning, "DENSE_BUCKETS", 0)
    elif regions == "two-level":  # side-2 reach buckets fit, side-reach ones do not
        r = max(g.reach, 1)
        n2 = pruning._n_buckets(g.shape, 2 * r)
        if n2 < pruning._n_buckets(g.shape, r) and n2 <= 1 << 20:
            monkeypatch.setattr(pruning, "COARSE_BUCKETS", n2)


@pytest.mark.parametrize("regions", ["buckets", "two-level", "supercells"])
@pytest.mark.parametrize("trial", range(20))
def test_live_cells_keep_every_core_cell_and_its_neighbours(trial, regions, monkeypatch):
    """Brute force: every core cell and every released cell in NB of a core
    cell passes the filter, by dense buckets (in one or two levels) and by
    shifted super-cells."""
    from dpdbscan.histograms.base import neighbourhood, sparse_neighbour_sums
    from dpdbscan.histograms.pruning import live_cells

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


@pytest.mark.parametrize("mode", ["buckets", "two-level", "bucket-neighbourhood", "supercells"])
@pytest.mark.parametrize("trial", range(12))
def test_core_candidates_contain_every_core_cell(trial, mode, monkeypatch):
    """Brute force: the candidates of pruning.core_candidates are sorted,
    distinct and contain every core cell, whichever region type and whichever
    way of listing them (cells of live buckets or NB of the heavy cells)."""
    from dpdbscan.histograms import pruning
    from dpdbscan.histograms.base import neighbourhood, sparse_neighbour_sums

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
    from dpdbscan.histograms import pruning
    from dpdbscan.histograms.base import neighbourhood, sparse_neighbour_sums

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


# --------------------------------------------------------------------------- #
# sub-cell core cells: candidates first, then sums at the candidates only


def _core_subcells_reference(hist, threshold, layout):
    """The per-position loop over the whole universe (before the speed-up)."""
    from dpdbscan import core

    keys, sums = [], []
    for pos, offsets in layout.positions:
        if hist.kind == "dense":
            from dpdbscan.histograms.base import dense_neighbour_sums

            S = dense_neighbour_sums(hist.grid, hist.values, offsets)
            mask = S >= threshold
            ck, cs = hist.grid.encode(np.argwhere(mask)), S[mask]
        else:
            ck, cs = core._core_cells(hist, threshold, offsets, layout.kappa)
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
    from dpdbscan import core
    from dpdbscan.histograms.base import NoisyHistogram
    from dpdbscan.subcells import SubcellLayout

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
        hist = NoisyHistogram(grid=g, kind="sparse", values=vals[vals >= 2], keys=keys, theta=2.0)
    else:
        noise = rng.laplace(0, 2, g.shape)
        vals = counts + (noise if kind == "dense-float" else np.round(noise).astype(np.int64))
        hist = NoisyHistogram(grid=g, kind="dense", values=vals)
    for thr in (20.0, 60.0, 150.0):
        k0, s0 = _core_subcells_reference(hist, thr, layout)
        k1, s1 = core.core_cells(hist, thr, layout)
        assert np.array_equal(k0, k1) and np.array_equal(s0, s1), (thr, k0.size, k1.size)


# --------------------------------------------------------------------------- #
# merging by key runs


@pytest.mark.parametrize("trial", range(24))
def test_merge_by_runs_matches_one_lookup_per_offset(trial):
    from dpdbscan.merge import _merge_by_offsets, merge_cells

    rng = np.random.default_rng(300 + trial)
    d = trial % 4 + 1
    eta = [4.0, 2.0, 1.0][trial % 3]
    g = Grid(np.zeros(d), np.ones(d), {1: 0.01, 2: 0.05, 3: 0.2, 4: 0.5}[d], eta)
    density = rng.uniform(0.01, 0.4)
    coords = np.argwhere(rng.random(g.shape) < density) if g.n_cells < 2e5 else \
        np.unique(np.stack([rng.integers(0, s, 5000) for s in g.shape], 1), axis=0)
    keys = np.sort(g.encode(coords))
    assert np.array_equal(merge_cells(g, keys), _merge_by_offsets(g, keys))


def test_merge_by_runs_edge_cases():
    from dpdbscan.merge import merge_cells

    g = Grid(np.zeros(2), np.ones(2), 0.1)
    assert merge_cells(g, np.zeros(0, np.int64)).size == 0
    one = g.encode(np.array([[3, 3]]))
    assert merge_cells(g, one).tolist() == [0]
    # two cells in the same row just out of reach, and on opposite row ends
    far = np.sort(g.encode(np.array([[0, 0], [0, g.reach + 1], [1, g.shape[1] - 1]])))
    assert merge_cells(g, far).tolist() == [0, 1, 2]


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("kind", ["int", "float"])
def test_dense_core_cells_from_candidates_match_full_sums(d, kind):
    """k = 1 on a dense histogram: candidates around heavy cells give exactly
    the cells and sums of the full evaluation."""
    from dpdbscan import core
    from dpdbscan.histograms.base import NoisyHistogram, dense_candidates, dense_neighbour_sums

    rng = np.random.default_rng(40 + d)
    alpha, sigma, thresholds = {1: (0.0005, 0.01, (300.0, 1000.0, 2000.0)),
                                2: (0.005, 0.01, (100.0, 300.0, 1000.0)),
                                3: (0.03, 0.02, (1000.0, 3000.0, 6000.0))}[d]
    g = Grid(np.zeros(d), np.ones(d), alpha)
    counts = np.zeros(g.shape, dtype=np.int64)
    for _ in range(3):
        pts = rng.uniform(0.2, 0.8, d) + rng.normal(0, sigma, (20000, d))
        coords = np.clip(((pts - g.lower) / g.width).astype(int), 0, np.array(g.shape) - 1)
        np.add.at(counts, tuple(coords.T), 1)
    noise = rng.laplace(0, 1.5, g.shape)
    vals = counts + (noise if kind == "float" else np.round(noise).astype(np.int64))
    hist = NoisyHistogram(grid=g, kind="dense", values=vals)
    S = dense_neighbour_sums(g, vals)
    used = 0
    for thr in thresholds + (-5.0,):
        used += dense_candidates(g, vals, thr, g.kappa) is not None
        keys, sums = core.core_cells(hist, thr)
        expect = np.argwhere(S >= thr)
        assert np.array_equal(g.decode(keys), expect)
        assert np.array_equal(sums, S[S >= thr])
    assert used >= 1  # the candidate path was taken


def test_dense_candidates_boundaries():
    from dpdbscan.histograms.base import dense_candidates

    g = Grid(np.zeros(2), np.ones(2), 0.1)
    vals = np.zeros(g.shape, dtype=np.int64)
    vals[0, 0] = 50  # a corner: its NB is clipped by the box
    cand = dense_candidates(g, vals, 100.0, 2)  # cut = 50
    nb = g.offsets
    expect = np.array([o for o in nb if (o >= 0).all() and (o < g.shape).all()])
    assert np.array_equal(g.decode(cand), expect[np.lexsort(expect.T[::-1])])
    assert dense_candidates(g, vals, 101.0, 2).size == 0  # 50 * 2 < 101
    assert dense_candidates(g, vals, 0.0, 2) is None


@pytest.mark.parametrize("case", range(5))
def test_cells_of_points_outside_the_box_are_the_cells_of_the_clipped_points(case):
    """The numpy backend's cells already clip: the cell of x equals the cell of
    clip(x, lower, upper) for any finite x (floor is monotone, the cell of
    ``lower`` is 0 and the cell of ``upper`` is >= shape - 1)."""
    g, X = _grids_and_points()[case]
    rng = np.random.default_rng(case)
    span = g.upper - g.lower
    far = g.lower + rng.uniform(-3, 4, X.shape) * span
    far[:10] = 1e300
    far[10:20] = -1e300
    clipped = np.clip(far, g.lower, g.upper)
    assert np.array_equal(g.keys_of_points(far), g.keys_of_points(clipped))
    if g.n_cells <= 1 << 22:
        counts = NumpyBackend().dense_counts(g, far)
        assert np.array_equal(counts, NumpyBackend().dense_counts(g, clipped))
