"""The density test's compiled kernels (post/coretests/density/compiled.py)
against their numpy oracles on small random releases: the staged box cover
(summed-area table of the padded universe) and the sparse run sums (which
must agree bit for bit: the release depends on them)."""

import math
import os
from dataclasses import dataclass

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.cells.histogram import NoisyHistogram
from dpdbscan.post.coretests.density import ball_weights, weightedsums
from dpdbscan.post.coretests.density import cover as cover_mod


def _grid(d: int, side: int, eta: float = 4.0) -> Grid:
    eps = 4 * math.sqrt(d) / (eta * side) * 0.999
    return Grid(np.zeros(d), np.ones(d), eps, eta)


def _release(kind: str, d: int, side: int, integer: bool, seed: int) -> NoisyHistogram:
    rng = np.random.default_rng(seed)
    g = _grid(d, side)
    if kind == "dense":
        noise = rng.normal(0, 2.0, g.shape)
        values = np.round(noise).astype(np.int64) if integer else noise
        values[tuple(s // 2 for s in g.shape)] += 50
        return NoisyHistogram(
            grid=g, kind="dense", values=values, keys=None, theta=0.0,
            noise="discrete", scale=1.0, epsilon=1.0, delta=0.0,
        )  # fmt: skip
    n = max(1, g.n_cells // 6)
    coords = np.stack([rng.integers(0, s, n) for s in g.shape], axis=1)
    # a clump, and cells on the universe's faces (the tables' padding)
    coords[: n // 4] = np.minimum(coords[: n // 4] % 3 + np.array(g.shape) // 2, np.array(g.shape) - 1)
    coords[n // 4 : n // 3, 0] = 0
    coords[n // 3 : n // 2, -1] = np.array(g.shape)[-1] - 1
    keys = np.unique(g.encode(coords))
    vals = rng.integers(1, 30, keys.size) if integer else rng.exponential(5.0, keys.size) + 0.5
    return NoisyHistogram(
        grid=g, kind="sparse", values=vals, keys=keys, theta=1.0,
        noise="laplace", scale=1.0, epsilon=1.0, delta=0.0,
    )  # fmt: skip


def _covers(weights, threshold):
    K = weights.W.max(axis=0)
    R = int(np.abs(weights.offsets).max())
    if threshold is None:
        return R, [cover_mod.shell_cover(weights.offsets, K)]
    covers = [cover_mod.shell_cover(weights.offsets, K, cross=False)]
    if R > 1:
        covers.append(cover_mod.shell_cover(weights.offsets, K, from_radius=R))
    return R, covers + [cover_mod.shell_cover(weights.offsets, K)]


CASES = [(3, 1, 9), (3, 2, 8), (4, 1, 7), (4, 2, 6), (5, 1, 5)]


@pytest.mark.parametrize("d,k,side", CASES)
@pytest.mark.parametrize("kind", ["sparse", "dense"])
@pytest.mark.parametrize("integer", [True, False])
def test_the_compiled_cover_is_the_numpy_table_s(d, k, side, kind, integer):
    hist = _release(kind, d, side, integer, 10 * d + k + 3 * integer)
    g = hist.grid
    w = ball_weights(d, 4.0, k)
    rng = np.random.default_rng(d + k)
    every = g.encode(g.all_coords())
    # unsorted candidates, with repeats
    cand = rng.choice(every, min(every.size, 400), replace=True)
    mine = np.maximum(np.asarray(hist.value_at(cand), dtype=np.float64), 0.0)
    total = float(np.maximum(hist.values, 0).sum())
    exact = hist.values.dtype.kind in "iu"
    oracle_full = None
    for threshold in (None, "q50", "q90"):
        if threshold is not None:
            assert oracle_full is not None
            threshold = float(np.quantile(oracle_full, 0.5 if threshold == "q50" else 0.9))
        R, covers = _covers(w, threshold)
        args = (hist, cand, mine, covers, R, exact, total, threshold)
        oracle = cover_mod._numpy_cover(*args)
        compiled = cover_mod._compiled_cover(*args)
        if threshold is None:
            oracle_full = oracle
        # integer tables: the same box sums and products in the same order
        # (the slack's magnitude adds up in another order); float tables: the
        # rounding slack, larger for the sums over 2R + 1 slabs
        magnitude = max(float(np.abs(c.cube).sum() + d * np.abs(c.cross).sum()) for c in covers)
        tol = 1e-12 if exact else 1e-9
        scale = 1.0 if exact else 2**d * (2 * R + 1) * (total + 1.0) * (1.0 + magnitude)
        assert np.allclose(compiled, oracle, rtol=tol, atol=tol * scale)
        assert np.all(compiled >= oracle - 1e-9 * (1.0 + np.abs(oracle)))
        if threshold is not None:
            near = np.abs(oracle - threshold) <= 1e-6 * (1.0 + scale)
            assert np.array_equal((compiled >= threshold)[~near], (oracle >= threshold)[~near])
            assert 0 < np.sum(oracle >= threshold) < cand.size  # the case decides something


@pytest.mark.parametrize("d,k,side", CASES)
@pytest.mark.parametrize("integer", [True, False])
def test_the_compiled_run_sums_are_the_numpy_runs_bit_for_bit(d, k, side, integer):
    hist = _release("sparse", d, side, integer, 100 + 10 * d + k)
    g = hist.grid
    w = ball_weights(d, 4.0, k)
    rng = np.random.default_rng(7 * d + k)
    every = g.encode(g.all_coords())
    query = np.sort(rng.choice(every, min(every.size, 300), replace=False))
    rvals = hist.values.astype(np.float64)
    oracle = weightedsums._numpy_run_sums(g, hist.released_keys, rvals, w, query)
    compiled = weightedsums._compiled_run_sums(g, hist.released_keys, rvals, w, query)
    assert np.count_nonzero(oracle) > 0
    assert np.array_equal(compiled, oracle)
    # and by bisection where the row index would be too large
    limit = weightedsums._ROWS_PER_KEY
    try:
        weightedsums._ROWS_PER_KEY = -(1 << 20)
        bisected = weightedsums._compiled_run_sums(g, hist.released_keys, rvals, w, query)
    finally:
        weightedsums._ROWS_PER_KEY = limit
    assert np.array_equal(bisected, oracle)


def test_the_run_sums_in_two_threads_are_those_in_one(monkeypatch):
    """Each thread sums half of the queries (a row is one query's alone):
    the same sums bit for bit as one pass."""
    hist = _release("sparse", 4, 8, False, 77)
    g = hist.grid
    w = ball_weights(4, 4.0, 2)
    query = g.encode(g.all_coords())
    rvals = hist.values.astype(np.float64)
    one = weightedsums._compiled_run_sums(g, hist.released_keys, rvals, w, query)
    monkeypatch.setattr(weightedsums, "_THREADED_RUN_VISITS", 0)
    monkeypatch.setattr(weightedsums.os, "cpu_count", lambda: 2)
    two = weightedsums._compiled_run_sums(g, hist.released_keys, rvals, w, query)
    assert np.count_nonzero(one) > 0 and np.array_equal(one, two)


def test_the_float_product_division_is_floor_division():
    from dpdbscan.post.coretests.density.compiled import _div

    rng = np.random.default_rng(0)
    for m in (1, 3, 67, 69 * 69, 71**3, 2**31 - 1):
        near = np.arange(0, 5 * m, max(1, m // 7))
        xs = np.concatenate([rng.integers(0, 2**50, 2000), near, [m - 1, m, m + 1]])
        for x in xs.tolist():
            assert _div(x, m, 1.0 / m) == x // m


def test_from_4d_the_compiled_cover_takes_universes_beyond_the_numpy_table(monkeypatch):
    """The slab pass holds 3R + 2 slabs, not the universe: above the numpy
    table's limit it still bounds (where the candidates' exact sums would
    read more cells), the same values as below it; 2-D and 3-D keep the limit."""
    hist = _release("sparse", 4, 7, True, 5)
    w = ball_weights(4, 4.0, 1)
    cand = hist.released_keys
    R = int(np.abs(w.offsets).max())
    cells = math.prod(s + 2 * R + 1 for s in hist.grid.shape)
    assert cells <= cand.size * w.offsets.shape[0]
    below = cover_mod.cover_sums(hist, cand, w)
    monkeypatch.setattr(cover_mod, "MAX_TABLE_CELLS", cells // 4)
    above = cover_mod.cover_sums(hist, cand, w)
    assert below is not None and above is not None and np.array_equal(above, below)
    monkeypatch.setattr(cover_mod, "MAX_TABLE_CELLS", cells // 32)
    assert cover_mod.cover_sums(hist, cand, w) is None
    for d, side in ((2, 30), (3, 9)):
        low = _release("sparse", d, side, True, 6)
        wl = ball_weights(d, 4.0, 1)
        Rl = int(np.abs(wl.offsets).max())
        monkeypatch.setattr(
            cover_mod, "MAX_TABLE_CELLS", math.prod(s + 2 * Rl + 1 for s in low.grid.shape) - 1
        )
        assert cover_mod.cover_sums(low, low.released_keys, wl) is None


THREE_D_FIT = """
import sys, warnings
import numpy as np
from dpdbscan import DPDBSCAN
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = np.clip(rng.normal(0.5, 0.05, (4000, 3)), 0, 1)
for histogram in ("sparse", "dense"):
    est = DPDBSCAN(0.03, min_samples=10, epsilon=1.0, bounds=(0.0, 1.0), random_state=0, histogram=histogram)
    est.fit(X).predict(X)
print("numba" in sys.modules)
"""


def test_a_three_dimensional_fit_never_imports_numba():
    """Below COMPILED_FROM_D the numpy steps run: a 3-D command does not pay
    numba's import and first dispatch."""
    import subprocess
    import sys

    assert cover_mod.COMPILED_FROM_D == 4
    out = subprocess.run([sys.executable, "-c", THREE_D_FIT], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_dense_sums_gather_the_same_matrix_as_numpy():
    """From 4-D up the dense sums gather their matrix compiled; the product
    after it is numpy's, so the sums are those of numpy's fancy index."""
    from dpdbscan.post.coretests.density import weighted_sums_at

    hist = _release("dense", 4, 7, False, 9)
    g = hist.grid
    w = ball_weights(4, 4.0, 2)
    keys = np.sort(np.random.default_rng(1).choice(g.encode(g.all_coords()), 500, replace=False))
    R = max(int(np.abs(w.offsets).max()), 1)
    P = np.zeros(tuple(s + 2 * R for s in g.shape))
    P[tuple(slice(R, R + s) for s in g.shape)] = hist.values
    strides = np.array(P.strides, dtype=np.int64) // P.itemsize
    base = (g.decode(keys) + R) @ strides
    G = P.ravel()[base[:, None] + (w.offsets @ strides)[None, :]]
    oracle = np.matmul(G, np.ascontiguousarray(w.W.T))
    assert np.array_equal(weighted_sums_at(hist, w, keys), oracle)


def test_keys_beyond_the_grid_get_no_bound_not_garbage():
    """Keys in the key space's padding (a coordinate at the shape) bound
    nothing: +inf, never a value read off the end of a table."""
    hist = _release("sparse", 4, 7, True, 11)
    g = hist.grid
    w = ball_weights(4, 4.0, 1)
    R, covers = _covers(w, None)
    inside = g.encode(np.array([[1, 2, 3, 4], [3, 3, 3, 3]]))
    beyond = g.encode(np.array([[2, g.shape[1], 0, 0], [g.shape[0], 0, 0, 0]]))
    cand = np.concatenate([inside, beyond])
    mine = np.zeros(cand.size)
    total = float(hist.values.sum())
    out = cover_mod._compiled_cover(hist, cand, mine, covers, R, True, total, None)
    oracle = cover_mod._numpy_cover(hist, inside, mine[:2], covers, R, True, total, None)
    assert np.allclose(out[:2], oracle, rtol=1e-12) and np.all(np.isinf(out[2:]))


@pytest.mark.parametrize("kind", ["sparse", "dense"])
@pytest.mark.parametrize("integer", [True, False])
def test_the_cover_in_two_threads_is_the_cover_in_one(monkeypatch, kind, integer):
    """Each thread bounds the candidates of its half of the slabs with its own
    tables: the same bounds as one pass over all of them."""
    hist = _release(kind, 4, 9, integer, 21 + integer)
    g = hist.grid
    w = ball_weights(4, 4.0, 1)
    cand = g.encode(g.all_coords())
    mine = np.maximum(np.asarray(hist.value_at(cand), dtype=np.float64), 0.0)
    total = float(np.maximum(hist.values, 0).sum())
    exact = hist.values.dtype.kind in "iu"
    R, covers = _covers(w, None)
    one = cover_mod._compiled_cover(hist, cand, mine, covers, R, exact, total, None)
    monkeypatch.setattr(cover_mod, "THREADED_CELLS", 0)
    monkeypatch.setattr(cover_mod, "THREADED_SLABS", 1)
    assert cover_mod._threads(g.n_cells, g.shape[0]) == (2 if (os.cpu_count() or 1) >= 2 else 1)
    monkeypatch.setattr(cover_mod.os, "cpu_count", lambda: 2)
    two = cover_mod._compiled_cover(hist, cand, mine, covers, R, exact, total, None)
    assert np.isfinite(one).all() and np.array_equal(one, two)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_the_reach_keeps_every_cell_whose_sums_reach_the_threshold(kind, k, integer, monkeypatch):
    """The compiled bound of a release's sums drops only cells whose every
    sub-position's sum (the matrix product's, or the runs') is below the
    threshold, and it does drop some."""
    from dpdbscan.post.coretests.density import weighted_sums_at

    hist = _release(kind, 4, 8, integer, 30 + k + 2 * integer)
    g = hist.grid
    w = ball_weights(4, 4.0, k)
    keys = g.encode(g.all_coords())
    E = weighted_sums_at(hist, w, keys)
    top = E.max(axis=1)
    for q in (0.5, 0.9, 0.99):
        threshold = float(np.quantile(top, q))
        keep = weightedsums.may_reach(hist, w, keys, threshold)
        assert np.all(keep[top >= threshold])
        assert 0 < keep.sum() < keys.size
        if k == 1:  # one position: the bound is the sum itself, up to rounding
            assert not np.any(keep[top < threshold - 1e-9 * (1 + np.abs(hist.values).sum())])
    assert weightedsums.reach_pays(hist, w.offsets, keys.size)
    # in blocks of cells (two threads on two cores): the same mask
    monkeypatch.setattr(weightedsums, "_DENSE_ROWS", 97)
    assert np.array_equal(weightedsums.may_reach(hist, w, keys, threshold), keep)


@pytest.mark.parametrize("d,dims,R", [(2, (7, 9), 2), (3, (5, 6, 8), 2), (4, (6, 5, 7, 4), 3), (1, (11,), 4)])
@pytest.mark.parametrize("scale", [1.0, 256.0])
def test_the_box_sums_are_numpys(d, dims, R, scale):
    """The positive parts' box sums of the staged reach: per entry, the sum
    of ceil(scale max(x, 0)) over the box of half-width R clipped to the
    array, exactly (integers in float64)."""
    from dpdbscan.post.coretests.density.compiled import positive_box_sums

    rng = np.random.default_rng(d + int(scale))
    x = rng.normal(0, 3.0, dims)
    if scale == 1.0:
        x = np.round(x)
    q = np.ceil(np.maximum(x, 0) * scale)
    P = np.pad(q, R)
    oracle = np.zeros(dims)
    for o in np.ndindex(*(2 * R + 1,) * d):
        oracle += P[tuple(slice(oi, oi + s) for oi, s in zip(o, dims))]
    for work in (np.float64, np.float32):
        a, b = np.empty(x.size, work), np.empty(x.size, work)
        got = positive_box_sums(x.ravel(), np.array(dims, dtype=np.int64), R, scale, a, b)
        assert got.dtype == work and np.array_equal(got.reshape(dims), oracle)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("integer", [True, False])
def test_the_stages_drop_only_what_the_whole_bound_drops(k, integer, monkeypatch):
    """Read in stages (the heaviest offsets first, then the box of positive
    parts for the rest), the reach keeps the cells that the bound over every
    offset keeps."""
    hist = _release("dense", 4, 12, integer, 50 + k)
    g = hist.grid
    w = ball_weights(4, 4.0, k)
    keys = g.encode(g.all_coords())
    R = int(np.abs(w.offsets).max())
    P = np.pad(np.asarray(hist.values, dtype=np.float64), R)
    strides = np.array(P.strides, dtype=np.int64) // P.itemsize
    order, ends, rest = weightedsums.reach_stages(w.offsets @ strides, w.W.max(axis=0))
    assert ends.size > 1 and ends[-1] == w.offsets.shape[0]
    assert np.all(np.diff(rest) <= 0) and rest[-1] == 0
    assert weightedsums._stages_pay(keys.size, ends, P.size, 4)
    staged = [weightedsums.may_reach(hist, w, keys, t) for t in (10.0, 30.0)]
    monkeypatch.setattr(weightedsums, "_STAGE_CUTS", ())
    whole = [weightedsums.may_reach(hist, w, keys, t) for t in (10.0, 30.0)]
    for a, b in zip(staged, whole):
        assert np.array_equal(a, b) and 0 < a.sum() < keys.size


@pytest.mark.parametrize("d,side", [(4, 2), (4, 3), (5, 2)])
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_walking_a_small_grid_is_the_padded_gather_bit_for_bit(d, side, k, kind, monkeypatch):
    """On a grid small beside its ball the sums and the reach walk the grid's
    cells within reach instead of every offset: the same matrix and the same
    bound, bit for bit, as the padded array's (the oracle, with no walk)."""
    from dpdbscan.post.coretests.density import weighted_sums_at

    hist = _release(kind, d, side, False, 40 + d + side + k)
    g = hist.grid
    w = ball_weights(d, 4.0, k)
    R = max(int(np.abs(w.offsets).max()), 1)
    assert weightedsums._grid_walk(g, w.offsets, R) is not None
    keys = g.encode(g.all_coords())
    E = weighted_sums_at(hist, w, keys)
    top = E.max(axis=1)
    thresholds = [float(np.quantile(top, q)) for q in (0.3, 0.8)] + [2 * float(top.max()) + 10]
    reach = [weightedsums.may_reach(hist, w, keys, t) for t in thresholds]
    # blocks of 3 rows (each block's walk clears what it wrote for the next);
    # the product's rounding may depend on its rows, so each against its own
    gather = weightedsums._GATHER
    monkeypatch.setattr(weightedsums, "_GATHER", 3 * w.offsets.shape[0])
    E3 = weighted_sums_at(hist, w, keys)
    monkeypatch.setattr(weightedsums, "_grid_walk", lambda *a: None)
    assert np.array_equal(E3, weighted_sums_at(hist, w, keys))
    monkeypatch.setattr(weightedsums, "_GATHER", gather)
    assert np.array_equal(E, weighted_sums_at(hist, w, keys))
    # the padded path's bound read whole (its stages drop the same cells)
    monkeypatch.setattr(weightedsums, "_STAGE_CUTS", ())
    for t, mask in zip(thresholds, reach):
        oracle = weightedsums.may_reach(hist, w, keys, t)
        assert np.array_equal(mask, oracle)
    assert reach[0].any() and not reach[-1].all()


@dataclass(frozen=True)
class _Widened(weightedsums.WalkBounds):
    """Bounds whose room for settling is wider than the rounding's, keeping
    the same cells (a product's rounding may depend on the rows beside it)."""

    reach_room: np.ndarray

    def reach(self, threshold: float) -> np.ndarray:
        return weightedsums.WalkBounds(self.sums, self.reach_room).reach(threshold)


def _bump(d: int, side: int, amp: float, seed: int) -> NoisyHistogram:
    """A dense release on a grid the walk serves: a blob and noise, so the
    cells' sums spread over many MinPts' thresholds."""
    g = Grid(np.zeros(d), np.ones(d), 1.0001 * math.sqrt(d) / side, 4.0)
    c = np.stack(np.meshgrid(*[np.arange(s) for s in g.shape], indexing="ij"), axis=-1)
    bump = 40.0 * np.exp(-((c - np.array(g.shape) / 2.0) ** 2).sum(axis=-1) / 2.0)
    values = amp * bump + np.random.default_rng(seed).normal(0, 1.5, g.shape)
    return NoisyHistogram(
        grid=g, kind="dense", values=values, keys=None, theta=0.0,
        noise="laplace", scale=1.0, epsilon=1.0, delta=0.0,
    )  # fmt: skip


@pytest.mark.parametrize("widen", [0.0, 3.0])
@pytest.mark.parametrize("d,side,amp", [(4, 3, 1.0), (5, 4, 0.3)])
def test_a_walked_field_decides_the_product_s_cores_bit_for_bit(d, side, amp, widen, monkeypatch):
    """With one sub-cell on a grid the walk serves, the field's estimates
    are the walk's sums, and the product's only where a comparison is too
    close to call: the same cells and the same cores at every MinPts as
    the product's sums everywhere (the oracle, with no walk). ``widen``
    widens the room for rounding, so that many estimates are settled,
    some only by a later MinPts (``widen``: a room of at least that many
    points); a settled one is the product's, bit for bit."""
    from dpdbscan.post.coretests.density import coresubcells, density_field

    hist = _bump(d, side, amp, 50 + d)
    w = ball_weights(d, 4.0, 1)
    assert weightedsums._grid_walk(hist.grid, w.offsets, max(int(np.abs(w.offsets).max()), 1)) is not None
    walk = coresubcells.walk_bounds

    def widened(*a):
        b = walk(*a)
        return None if b is None else _Widened(b.sums, np.maximum(b.room, widen), b.room)

    monkeypatch.setattr(coresubcells, "walk_bounds", widened)
    field = density_field(hist, 1, subcells=1)
    assert field.unsettled is not None
    monkeypatch.setattr(coresubcells, "walk_bounds", lambda *a: None)
    oracle = density_field(hist, 1, subcells=1)
    assert oracle.unsettled is None and field.keys.size > 0
    assert np.array_equal(field.keys, oracle.keys)
    np.testing.assert_allclose(field.estimates, oracle.estimates, rtol=1e-9)
    settled_first = int((field.unsettled.room == 0).sum())
    counts = set()
    for m in range(1, 1200, 9):
        core = field.core_mask(m)
        assert np.array_equal(core, oracle.core_mask(m)), m
        counts.add(int(core.sum()))
    assert len(counts) > 5  # the ladder crosses many cells' sums
    settled = field.unsettled.room == 0
    assert np.array_equal(field.estimates[settled], oracle.estimates[settled])
    if widen > 0:
        assert settled_first < settled.sum()


@pytest.mark.parametrize("d,side", [(4, 3), (4, 7), (3, 6)])
@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_the_keys_layout_reads_the_padded_arrays_values(d, side, kind):
    """The reach's array in the keys' own radix: at a cell's key plus the
    shift plus an offset's key delta, the value of the array padded by R on
    every side (0 off the grid), for every cell and every offset of the
    cube of half-width R; and its box sums are the padded array's."""
    from dpdbscan.post.coretests.density.compiled import positive_box_sums

    hist = _release(kind, d, side, True, 70 + d + side)
    g = hist.grid
    R = int(np.abs(ball_weights(d, 4.0, 1).offsets).max())
    layout = weightedsums._KeyLayout.of(g, R)
    assert layout is not None and g.reach >= R
    flat, dims = layout.laid_out(hist)
    P = np.zeros(tuple(s + 2 * R for s in g.shape))
    if kind == "dense":
        P[tuple(slice(R, R + s) for s in g.shape)] = hist.values
    else:
        P[tuple((g.decode(hist.released_keys) + R).T)] = hist.values
    coords = g.all_coords()
    base = g.encode(coords) + layout.shift
    cube = np.array(list(np.ndindex(*(2 * R + 1,) * d))) - R
    got = flat[base[:, None] + (cube @ layout.strides)[None, :]]
    want = P[tuple((coords[:, None, :] + cube[None, :, :] + R).transpose(2, 0, 1))]
    np.testing.assert_array_equal(got, want)
    box = positive_box_sums(flat, dims, R, 1.0, np.empty(flat.size), np.empty(flat.size))
    padded_box = positive_box_sums(P.ravel(), np.array(P.shape, dtype=np.int64), R, 1.0,
                                   np.empty(P.size), np.empty(P.size))  # fmt: skip
    strides = np.array(P.strides, dtype=np.int64) // P.itemsize
    np.testing.assert_array_equal(box[base], padded_box[(coords + R) @ strides])


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_the_reach_in_the_keys_layout_keeps_the_padded_arrays_cells(kind, k, integer, monkeypatch):
    """The reach read from the keys' layout keeps the cells the padded
    array's keeps (the oracle: the same terms in the same order), and one
    sub-position's terms summed without their zero positive parts keep the
    same cells as with them."""
    from dpdbscan.post.coretests.density import compiled, weighted_sums_at

    hist = _release(kind, 4, 9, integer, 80 + k + 2 * integer)
    g = hist.grid
    w = ball_weights(4, 4.0, k)
    keys = g.encode(g.all_coords())
    top = weighted_sums_at(hist, w, keys).max(axis=1)
    thresholds = [float(np.quantile(top, q)) for q in (0.5, 0.9, 0.99)]
    got = [weightedsums.may_reach(hist, w, keys, t) for t in thresholds]
    monkeypatch.setattr(weightedsums._KeyLayout, "of", staticmethod(lambda grid, R: None))
    staged = compiled.staged_reach
    monkeypatch.setattr(compiled, "staged_reach", lambda *a: staged(*a[:-1], False))
    for t, mask in zip(thresholds, got):
        assert np.array_equal(mask, weightedsums.may_reach(hist, w, keys, t))
        assert 0 < mask.sum() < keys.size


def _dense3(eps: float, integer: bool, seed: int, amp: float = 1.0) -> NoisyHistogram:
    """A dense 3-D release of 20^3 cells measured at ``eps`` (a ball of 117
    to 613 offsets, as the automatic mode's rungs are): blobs (one near a
    corner, so balls leave the grid) over noise, whose cells' sums spread
    over many MinPts' thresholds."""
    g = Grid(np.zeros(3), np.ones(3), 0.09, 4.0).at_eps(eps)
    c = np.stack(np.meshgrid(*[np.arange(s) for s in g.shape], indexing="ij"), axis=-1)
    bump = np.zeros(g.shape)
    for centre, width in (((10.0, 9.0, 11.0), 2.5), ((1.0, 18.0, 2.0), 1.5)):
        bump += 30.0 * np.exp(-((c - np.array(centre)) ** 2).sum(axis=-1) / (2 * width**2))
    values = amp * bump + np.random.default_rng(seed).normal(0, 1.5, g.shape)
    return NoisyHistogram(
        grid=g, kind="dense", values=np.round(values).astype(np.int64) if integer else values, keys=None,
        theta=0.0, noise="discrete" if integer else "laplace", scale=1.0, epsilon=1.0, delta=0.0,
    )  # fmt: skip


@pytest.mark.parametrize("eps,k", [(0.09, 1), (0.2, 1), (0.15, 2)])
@pytest.mark.parametrize("integer", [True, False])
def test_the_sums_by_runs_hold_the_product_s_within_their_room(eps, k, integer, monkeypatch):
    """On a dense 3-D release, the sums by runs of
    :func:`~.weightedsums.run_bounds` (every cell, those near the faces too;
    every sub-position)
    lie within their room of the matrix product's sums, and the room is
    only the rounding's (a term left out or read twice would be a whole
    value off)."""
    from dpdbscan.post.coretests.density import weighted_sums_at

    monkeypatch.setattr(weightedsums, "RUN_BOUND_VALUES", 0)
    hist = _dense3(eps, integer, 70_031)
    g = hist.grid
    w = ball_weights(3, float(g.eta), k)
    keys = g.encode(g.all_coords())
    bounds = weightedsums.run_bounds(hist, w, keys)
    assert bounds is not None
    E = weighted_sums_at(hist, w, keys)
    sums = bounds.sums.reshape(E.shape)
    assert np.all(np.abs(sums - E) <= bounds.room[:, None])
    assert 0 < float(bounds.room.max()) < 1e-8
    # the same keys in another order and block: the same sums
    rev = weightedsums.run_bounds(hist, w, keys[::-1].copy())
    assert rev is not None and np.array_equal(rev.sums[::-1], bounds.sums)
    if k > 1:  # each sub-position's sums are those it gives alone
        for p in (0, len(w.positions) - 1):
            one = weightedsums.run_bounds(hist, _one_position(w, p), keys)
            assert one is not None and np.array_equal(one.sums, bounds.sums[:, p])


def test_the_sums_by_runs_are_taken_only_where_they_serve(monkeypatch):
    """Public sizes decide: a dense 3-D release, large gathers and at most
    eight sub-positions; not a sparse release, small gathers or three
    sub-cells (27 sub-positions: the product is as cheap there)."""
    hist = _dense3(0.2, True, 70_032)
    g = hist.grid
    keys = g.encode(g.all_coords())
    one = ball_weights(3, float(g.eta), 1)
    assert weightedsums.run_bounds(hist, one, keys[:10]) is None
    monkeypatch.setattr(weightedsums, "RUN_BOUND_VALUES", 0)
    assert weightedsums.run_bounds(hist, one, keys) is not None
    assert weightedsums.run_bounds(hist, ball_weights(3, float(g.eta), 2), keys) is not None
    assert weightedsums.run_bounds(hist, ball_weights(3, float(g.eta), 3), keys) is None
    sparse = _release("sparse", 3, 9, True, 3)
    assert weightedsums.run_bounds(sparse, ball_weights(3, 4.0, 1), sparse.released_keys) is None


@pytest.mark.parametrize("shake", [0.0, 2.0])
@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("eps,k", [(0.15, 1), (0.2, 1), (0.15, 2)])
def test_a_field_by_runs_decides_the_product_s_cores_bit_for_bit(eps, k, integer, shake, monkeypatch):
    """In 3-D with one or two sub-cells, the field's estimates are the sums by runs
    and the product's only where a comparison (the threshold, or the
    occupancy's share) is too close to call: the same cells, the same
    cores at every MinPts and the same product's sums where settled as the
    oracle, the product's sums everywhere (no sums by runs); with two
    sub-cells, a cell's whole row of eight sums is the product's where
    one of them is too close to call. ``shake``
    moves each sum by up to that many points inside a room widened by as
    much, so that many comparisons are too close to call, some only at a
    later MinPts."""
    from dpdbscan.post.coretests.density import coresubcells, density_field

    monkeypatch.setattr(weightedsums, "RUN_BOUND_VALUES", 0)
    hist = _dense3(eps, integer, 70_033 + int(integer))
    runs = coresubcells.run_bounds
    rng = np.random.default_rng(70_034)

    def shaken(*a):
        b = runs(*a)
        assert b is not None
        moved = b.sums + rng.uniform(-shake, shake, b.sums.shape)
        return weightedsums.WalkBounds(moved, b.room + shake)

    monkeypatch.setattr(coresubcells, "run_bounds", shaken)
    field = density_field(hist, 1, subcells=k)
    assert field.unsettled is not None or shake == 0.0
    monkeypatch.setattr(coresubcells, "run_bounds", lambda *a: None)
    oracle = density_field(hist, 1, subcells=k)
    assert oracle.unsettled is None and field.keys.size > 0
    assert np.array_equal(field.keys, oracle.keys)
    counts = set()
    for m in range(1, 1500, 7):
        core = field.core_mask(m)
        assert np.array_equal(core, oracle.core_mask(m)), m
        counts.add(int(core.sum()))
    assert len(counts) > 5  # the ladder crosses many cells' sums
    if field.unsettled is not None:
        settled = field.unsettled.room == 0
        assert np.array_equal(field.estimates[settled], oracle.estimates[settled])
        if shake > 0:
            assert settled.any()


def _one_position(w, p: int):
    """``w`` with sub-position p alone (the same offsets and weights)."""
    import dataclasses

    one = slice(p, p + 1)
    return dataclasses.replace(w, positions=w.positions[one], index=w.index[one], support=w.support[one])
