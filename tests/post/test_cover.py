"""The box-cover bound of the density test (post/coretests/density/cover.py):
an upper bound of every weighted ball sum of a cell, from a few box sums of
one summed-area table, that discards released empty cells before the exact
sums. It must never fall below an exact sum (else a core cell is lost)."""

import itertools
import math

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.cells.histogram import NoisyHistogram
from dpdbscan.post.coretests.density import ball_weights, density_field, weighted_sums_at
from dpdbscan.post.coretests.density import cover as cover_mod
from dpdbscan.post.coretests.density.cover import ShellCover, cover_sums, shell_cover

from releases import Config as MechanismConfig
from releases import release_histogram

CASES = [(1, 2, 4.0), (2, 1, 4.0), (2, 2, 4.0), (2, 3, 2.0), (3, 1, 4.0), (3, 2, 4.0), (4, 1, 4.0)]


def _cube(d: int, R: int) -> np.ndarray:
    return np.array(list(itertools.product(range(-R, R + 1), repeat=d)), dtype=np.int64)


@pytest.mark.parametrize("d,k,eta", CASES)
@pytest.mark.parametrize("cross,from_radius", [(True, 1), (False, 1), (True, 2), (True, 3)])
def test_the_cover_weighs_every_offset_of_the_cube_at_least_as_the_kernel(d, k, eta, cross, from_radius):
    w = ball_weights(d, eta, k)
    K = w.W.max(axis=0)
    c = shell_cover(w.offsets, K, cross=cross, from_radius=from_radius)
    R = int(np.abs(w.offsets).max())
    cube = _cube(d, R)
    P = c.pointwise(cube)
    kernel = np.zeros(cube.shape[0])
    pos = {tuple(o): i for i, o in enumerate(cube.tolist())}
    kernel[[pos[tuple(o)] for o in w.offsets.tolist()]] = K
    assert np.all(P >= kernel) and np.all(P >= 0)
    # and it is no loose bound: the full cover weighs far less than the cube
    if cross and from_radius == 1 and d >= 3:
        assert P.sum() < 0.5 * cube.shape[0]
        assert P.sum() < 2.5 * K.sum()


def _grid_of(d: int, eta: float, side: int) -> Grid:
    """A grid of at least ``side`` cells per axis over [0, 1]^d."""
    eps = 4 * math.sqrt(d) / (eta * side) * 0.999
    g = Grid(np.zeros(d), np.ones(d), eps, eta)
    assert min(g.shape) >= side
    return g


def _sparse(g: Grid, keys: np.ndarray, vals: np.ndarray) -> NoisyHistogram:
    order = np.argsort(keys)
    return NoisyHistogram(
        grid=g,
        kind="sparse",
        values=vals[order],
        keys=keys[order],
        theta=1.0,
        noise="laplace",
        scale=1.0,
        epsilon=1.0,
        delta=0.0,
    )


def _one_neighbour_each(d: int, k: int, eta: float, integer: bool):
    """One candidate per offset of the cube, each with exactly one released
    cell in its cube, at that offset: the bound at each candidate is the
    cover's coefficient of one offset, the exact sums W(q, o) times its value."""
    w = ball_weights(d, eta, k)
    R = int(np.abs(w.offsets).max())
    cube = _cube(d, R)
    L = 2 * (2 * R + 1)  # candidates' cubes never meet
    m = math.ceil(cube.shape[0] ** (1 / d) - 1e-9)
    while m**d < cube.shape[0]:
        m += 1
    g = _grid_of(d, eta, m * L + 2 * R + 1)
    lattice = np.array(list(itertools.product(range(m), repeat=d)), dtype=np.int64)[: cube.shape[0]]
    centres = lattice * L + R + 1
    released = centres + cube
    vals = np.full(released.shape[0], 7 if integer else 7.25)
    hist = _sparse(g, g.encode(released), vals.astype(np.int64) if integer else vals)
    return hist, w, np.sort(g.encode(centres))


@pytest.mark.parametrize("d,k,eta", CASES)
@pytest.mark.parametrize("integer", [True, False])
def test_the_bound_holds_at_every_single_offset(d, k, eta, integer):
    """A cover that missed one offset's kernel would fail here."""
    hist, w, cand = _one_neighbour_each(d, k, eta, integer)
    exact = weighted_sums_at(hist, w, cand).max(axis=1)
    bound = cover_sums(hist, cand, w)
    assert bound is not None
    assert np.all(bound >= exact)
    # with a threshold: the looser cubes-only bound where it already falls short
    for t in (1.0, 3.0, 6.0):
        staged = cover_sums(hist, cand, w, threshold=t)
        assert np.all(staged >= exact)
        assert np.array_equal(staged >= t, bound >= t)


@pytest.mark.parametrize("d,k,eta", [(2, 2, 4.0), (3, 1, 4.0), (4, 1, 4.0)])
def test_the_check_catches_an_unsafe_cover(d, k, eta, monkeypatch):
    """The single-offset check above is sharp: shave a little off one
    coefficient of the cover and some candidate's bound falls below its sum."""
    hist, w, cand = _one_neighbour_each(d, k, eta, True)
    exact = weighted_sums_at(hist, w, cand).max(axis=1)
    honest = shell_cover

    def shaved(offsets, kernel, cross=True):
        c = honest(offsets, kernel, cross)
        cube, crossed = c.cube.copy(), c.cross.copy()
        if crossed[1:].any():
            r = int(np.flatnonzero(crossed)[-1])
            crossed[r] *= 0.99
        else:
            cube[-1] -= 0.01 * max(cube[-1], 1e-3)
        return ShellCover(cube, crossed)

    monkeypatch.setattr(cover_mod, "shell_cover", shaved)
    assert np.any(cover_sums(hist, cand, w) < exact)


@pytest.mark.parametrize("d,k,eta", CASES)
@pytest.mark.parametrize("integer", [True, False])
def test_the_bound_holds_on_random_releases(d, k, eta, integer):
    rng = np.random.default_rng(100 * d + 10 * k + integer)
    w = ball_weights(d, eta, k)
    g = _grid_of(d, eta, {1: 400, 2: 60, 3: 24, 4: 14}[d])
    n = min(g.n_cells // 4, 3000)
    coords = np.stack([rng.integers(0, s, n) for s in g.shape], axis=1)
    # a few dense clumps and a scatter
    coords[: n // 3] = np.minimum(coords[: n // 3] % 5 + np.array(g.shape) // 2, np.array(g.shape) - 1)
    keys = np.unique(g.encode(coords))
    vals = rng.integers(1, 40, keys.size) if integer else rng.exponential(4.0, keys.size) + 0.5
    hist = _sparse(g, keys, vals)
    cand = np.unique(
        np.concatenate([keys, g.encode(np.stack([rng.integers(0, s, 500) for s in g.shape], axis=1))])
    )
    exact = weighted_sums_at(hist, w, cand).max(axis=1)
    bound = cover_sums(hist, cand, w)
    assert np.all(bound >= exact)
    t = float(np.quantile(exact, 0.8))
    staged = cover_sums(hist, cand, w, threshold=t)
    assert np.all(staged >= exact) and np.array_equal(staged >= t, bound >= t)
    # not vacuous: it is within a small factor of the exact sums somewhere
    assert np.any((bound > 0) & (bound <= 3 * exact + 1e-9))


def test_the_cover_discards_most_empty_cells_and_keeps_the_field():
    """4-D blobs and a sparse release at the benchmark's resolution: the
    cover rules out most released cells, and the field is the same without it."""
    d = 4
    rng = np.random.default_rng(7)
    c = rng.uniform(0.3, 0.7, (4, d))
    X = np.clip(c[rng.integers(0, 4, 6000)] + rng.normal(0, 0.01, (6000, d)), 0, 1)
    X = np.concatenate([X, rng.random((600, d))])
    grid = Grid(np.zeros(d), np.ones(d), 0.06, 4.0)
    hist = release_histogram(grid, X, MechanismConfig(histogram="sparse", epsilon=1.0), 3)
    field = density_field(hist, 10, subcells=1)
    w = ball_weights(d, 4.0, 1)
    T = float(field.thresholds(10).min())
    bound = cover_sums(hist, hist.released_keys, w, hist.values)
    assert np.mean(bound >= T) < 0.5  # most are discarded
    limit = cover_mod.MAX_TABLE_CELLS
    try:
        cover_mod.MAX_TABLE_CELLS = 0
        without = density_field(hist, 10, subcells=1)
    finally:
        cover_mod.MAX_TABLE_CELLS = limit
    assert field.keys.size > 0
    assert np.array_equal(field.keys, without.keys) and np.array_equal(field.estimates, without.estimates)


def _dense(g: Grid, values: np.ndarray) -> NoisyHistogram:
    return NoisyHistogram(
        grid=g,
        kind="dense",
        values=values,
        keys=None,
        theta=0.0,
        noise="discrete",
        scale=1.0,
        epsilon=1.0,
        delta=0.0,
    )


@pytest.mark.parametrize("d,k,eta", CASES)
@pytest.mark.parametrize("integer", [True, False])
def test_the_bound_holds_on_signed_dense_releases(d, k, eta, integer):
    """A dense release carries negative noise: the table holds positive
    parts, and the bound still sits above every exact sum (which reads the
    negative values too)."""
    rng = np.random.default_rng(1000 + 100 * d + 10 * k + integer)
    w = ball_weights(d, eta, k)
    g = _grid_of(d, eta, {1: 400, 2: 60, 3: 24, 4: 12}[d])
    noise = rng.normal(0, 2.0, g.shape)
    values = np.round(noise).astype(np.int64) if integer else noise
    centre = tuple(s // 2 for s in g.shape)
    values[centre] += 60  # and a clump
    cand = g.encode(g.all_coords())
    exact = weighted_sums_at(_dense(g, values), w, cand).max(axis=1)
    hist = _dense(g, values)
    bound = cover_sums(hist, cand, w)
    assert bound is not None and np.all(bound >= exact)
    for t in (float(np.quantile(exact, 0.9)), float(exact.max()) * 0.9):
        staged = cover_sums(hist, cand, w, threshold=t)
        assert np.all(staged >= exact) and np.array_equal(staged >= t, bound >= t)
        assert np.any(staged < t)  # not vacuous: it rules some out


def _shape(shape: str, n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if shape == "uniform":
        return rng.random((n, d))
    c = rng.uniform(0.2, 0.8, (6, d))
    X = np.clip(c[rng.integers(0, 6, n)] + rng.normal(0, 0.015, (n, d)), 0, 1)
    if shape == "half":
        X[: n // 2] = rng.random((n // 2, d))
    return X


@pytest.mark.parametrize(
    "d,shape,histogram,seed",
    [
        (2, "blobs", "dense", 0),
        (3, "blobs", "dense", 1),
        (3, "half", "dense", 2),
        (3, "uniform", "auto", 3),
        (3, "blobs", "sparse", 4),
        (4, "blobs", "auto", 5),
        (4, "half", "sparse", 6),
    ],
)
def test_a_fit_is_the_same_bit_for_bit_with_or_without_the_cover(d, shape, histogram, seed, monkeypatch):
    """The whole model file (SHA-256 of its JSON) for one seed: the cover
    only rules out cells the exact sums would, dense or sparse."""
    import hashlib
    import warnings

    from dpdbscan import DPDBSCAN
    from dpdbscan.model.codec import to_json
    from dpdbscan.post.coretests.density import coresubcells

    X = _shape(shape, 6000, d, seed)
    eps = {2: 0.01, 3: 0.04, 4: 0.08}[d]
    ruled_out = []

    def counting(hist, cand, weights, own=None, threshold=None):
        bound = cover_sums(hist, cand, weights, own, threshold)
        if bound is not None and threshold is not None:
            ruled_out.append(int(np.sum(bound < threshold)))
        return bound

    monkeypatch.setattr(coresubcells, "cover_sums", counting)
    # wherever the cost model would skip it (small grids), the cover runs
    monkeypatch.setattr(coresubcells, "cover_pays", lambda *a: True)
    monkeypatch.setattr(coresubcells, "_cover_beats_noise", lambda *a: True)
    digests = []
    for limit in (cover_mod.MAX_TABLE_CELLS, 0):
        monkeypatch.setattr(cover_mod, "MAX_TABLE_CELLS", limit)
        est = DPDBSCAN(
            eps, min_samples=10, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed, histogram=histogram
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)
        digests.append(hashlib.sha256(to_json(est.spans_).encode()).hexdigest())
        if shape != "uniform":
            assert est.spans_.spans.n_spans > 0
    assert ruled_out and ruled_out[0] > 0  # the cover was used, and ruled cells out
    assert digests[0] == digests[1]


def test_the_cover_is_used_where_it_pays():
    """The public cost model: the 3-D benchmark's dense release (184k
    candidates, 117 offsets, 0.78M cells) takes the cover; the 2-D one at
    1e6 points (100k candidates, 21 offsets, 0.51M cells) does not; a
    universe above the table's limit never does."""
    from dpdbscan.post.coretests.density.cover import cover_pays

    w3 = ball_weights(3, 4.0, 2)
    w2 = ball_weights(2, 4.0, 2)
    assert w3.offsets.shape[0] == 117 and w2.offsets.shape[0] == 21
    assert cover_pays((87, 87, 87), w3.offsets, 184_000)
    assert not cover_pays((708, 708), w2.offsets, 100_000)
    assert not cover_pays((400, 400, 400), w3.offsets, 10**8)


def test_a_dense_release_skips_the_cover_where_noise_alone_would_pass_it():
    """From 4-D up the cover of a dense release must rule out cells of noise
    alone to pay: its weight times the noise's mean positive part against
    the threshold (public). 4-D at epsilon = 1 (156 cells' worth, sigma 1.36)
    against the benchmark's threshold of 54: skipped; with a tenth of the
    noise, or in 3-D (no compiled bound after it), kept."""
    from dpdbscan.post.coretests.density.coresubcells import _cover_beats_noise

    def dense(d: int, scale: float) -> NoisyHistogram:
        g = _grid_of(d, 4.0, 6)
        return NoisyHistogram(
            grid=g, kind="dense", values=np.zeros(g.shape, dtype=np.int64), keys=None,
            theta=0.0, noise="discrete", scale=scale, epsilon=scale, delta=0.0,
        )  # fmt: skip

    w4 = ball_weights(4, 4.0, 1)
    assert not _cover_beats_noise(dense(4, 1.0), w4, 54.27)
    assert _cover_beats_noise(dense(4, 10.0), w4, 54.27)
    assert _cover_beats_noise(dense(3, 1.0), ball_weights(3, 4.0, 2), 54.27)


@pytest.mark.parametrize("d,k,eta", [(2, 2, 4.0), (3, 1, 4.0), (3, 2, 4.0), (3, 3, 2.0), (4, 1, 4.0)])
def test_the_compiled_table_bound_is_the_numpy_bound_bit_for_bit(d, k, eta, monkeypatch):
    """A large dense integer release in 3-D reads its table's corners in
    one compiled pass (:meth:`_Table.compiled_bounds`): the same bound
    values as numpy's, float for float, staged or not, so it keeps the same
    cells; and its exact sums gather in place the matrix the padded copy
    gives (the same sums bit for bit)."""
    rng = np.random.default_rng(2000 + 100 * d + 10 * k)
    w = ball_weights(d, eta, k)
    g = _grid_of(d, eta, {2: 60, 3: 24, 4: 12}[d])
    values = np.round(rng.laplace(0, 1.5, g.shape)).astype(np.int64)
    for _ in range(4):  # clumps
        at = tuple(int(rng.integers(2, s - 2)) for s in g.shape)
        values[at] += int(rng.integers(20, 200))
    hist = _dense(g, values)
    flat = values.ravel()
    cand = g.encode(np.stack(np.unravel_index(np.flatnonzero(flat >= 1), g.shape), axis=1))
    own = flat[flat >= 1]
    exact = weighted_sums_at(hist, w, cand).max(axis=1)
    for t in (None, float(np.quantile(exact, 0.99)), 0.5 * float(exact.max())):
        out = []
        for limit in (1 << 62, 0):  # numpy's corners, then the compiled pass
            monkeypatch.setattr(cover_mod, "COMPILED_DENSE_CELLS", limit)
            out.append(cover_mod._numpy_cover(*_cover_args(hist, cand, w, own, t)))
        assert np.array_equal(out[0], out[1])
        assert np.all(out[1] >= exact)
        if t is not None:
            assert 0 < np.sum(out[1] >= t) < cand.size  # staged, and not vacuous
    # (the compiled limit is 0 here: 3-D takes the in-place gathers)
    assert cover_mod.dense_compiled(g) == (d == 3)
    border = g.encode(np.array([[0] * d, [s - 1 for s in g.shape]]))
    rows = np.unique(np.concatenate([cand, border]))
    in_place = weighted_sums_at(hist, w, rows)
    monkeypatch.setattr(cover_mod, "COMPILED_DENSE_CELLS", 1 << 62)
    assert np.array_equal(in_place, weighted_sums_at(hist, w, rows))


def _cover_args(hist, cand, w, own, threshold):
    """The arguments :func:`cover_sums` passes to its numpy path."""
    R = int(np.abs(w.offsets).max())
    kernel = w.W.max(axis=0)
    if threshold is None:
        covers = [shell_cover(w.offsets, kernel)]
    else:
        covers = [shell_cover(w.offsets, kernel, cross=False)]
        covers += [shell_cover(w.offsets, kernel, from_radius=R)] if R > 1 else []
        covers.append(shell_cover(w.offsets, kernel))
    total = float(np.maximum(hist.values, 0).sum())
    mine = np.maximum(own.astype(np.float64), 0.0)
    return hist, cand, mine, covers, R, True, total, threshold


THREE_D_FIT = """
import sys, warnings
from benchmarks import blobs_nd
from dpdbscan import DPDBSCAN
warnings.simplefilter("ignore")
alpha = float(sys.argv[1])
X = blobs_nd.points(3, 0, 20_000)
for _ in range(2):
    est = DPDBSCAN(alpha, min_samples=20, epsilon=1.0, bounds=(0.0, 1.0), random_state=0).fit(X)
    print(est.spans_.spans.n_spans > 0, "numba" in sys.modules)
"""


@pytest.mark.parametrize("alpha,loads", [(0.05, False), (0.02, False), (0.013, True)])
def test_three_dimensional_grids_load_the_compiler_only_when_it_pays(alpha, loads):
    """A 3-D fit on a grid below :data:`~.cover.COMPILED_ALWAYS_CELLS` never
    pays numba's import, in a process's first fit or its second (alpha
    0.05: 35^3 cells; alpha 0.02, the benchmark's grid: 659k cells, which
    takes the compiled passes only where numba is loaded already); a grid
    of that many cells or more (alpha 0.013) loads it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    g = Grid(np.zeros(3), np.ones(3), alpha, 4.0)
    assert (g.n_cells >= cover_mod.COMPILED_ALWAYS_CELLS) == loads
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "src"), str(root)]))
    out = subprocess.run(
        [sys.executable, "-c", THREE_D_FIT, str(alpha)], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["True", str(loads), "True", str(loads)]


def test_a_middle_grid_takes_the_compiled_steps_where_numba_is_loaded(monkeypatch):
    """Between :data:`~.cover.COMPILED_DENSE_CELLS` and
    :data:`~.cover.COMPILED_ALWAYS_CELLS` cells the compiled steps are taken
    exactly where numba is loaded already; below, never; 2-D, never."""
    import sys
    import types

    middle = Grid(np.zeros(3), np.ones(3), 0.02, 4.0)
    small = Grid(np.zeros(3), np.ones(3), 0.05, 4.0)
    plane = Grid(np.zeros(2), np.ones(2), 0.0005, 4.0)
    assert cover_mod.COMPILED_DENSE_CELLS <= middle.n_cells < cover_mod.COMPILED_ALWAYS_CELLS
    assert plane.n_cells >= cover_mod.COMPILED_ALWAYS_CELLS
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    assert [cover_mod.dense_compiled(g) for g in (middle, small, plane)] == [False, False, False]
    monkeypatch.setitem(sys.modules, "numba", sys.modules.get("numba") or types.ModuleType("numba"))
    assert [cover_mod.dense_compiled(g) for g in (middle, small, plane)] == [True, False, False]


@pytest.mark.parametrize("k,eta", [(1, 1.0), (2, 2.0)])
def test_a_large_three_dimensional_gather_takes_the_compiled_pass_with_the_same_sums(k, eta, monkeypatch):
    """A dense 3-D gather of many values (rows times offsets: the automatic
    mode's ladder at a large eps) takes the compiled pass on a grid too small
    for :func:`~.cover.dense_compiled`, whether numba is loaded or not, and
    gives the numpy path's sums bit for bit, faces included; below the
    size, numpy's; 2-D never."""
    import sys
    import types

    from dpdbscan.post.coretests.density import compiled
    from dpdbscan.post.coretests.density import weightedsums as ws

    rng = np.random.default_rng(4200 + k)
    w = ball_weights(3, eta, k)
    g = _grid_of(3, eta, 14)
    assert not cover_mod.dense_compiled(g)
    values = rng.laplace(0, 2.0, g.shape)
    values[3:6, 4:9, 2:5] += 40.0  # a clump
    hist = _dense(g, values)
    rows = g.encode(np.stack(np.unravel_index(np.arange(g.n_cells), g.shape), axis=1))
    calls = []
    real = compiled.gather_unpadded

    def recorded(*a):
        calls.append(a[2].shape[0])
        return real(*a)

    monkeypatch.setattr(compiled, "gather_unpadded", recorded)
    monkeypatch.delitem(sys.modules, "numba", raising=False)  # (the rule reads it)
    numpy_sums = weighted_sums_at(hist, w, rows)
    assert calls == []  # the default sizes: numpy here
    values_asked = rows.size * w.offsets.shape[0]
    monkeypatch.setattr(ws, "COMPILED_GATHER_VALUES", values_asked)
    assert ws.gather_pays(g, rows.size, w.offsets.shape[0])
    assert not ws.gather_pays(g, rows.size - 1, w.offsets.shape[0])
    assert np.array_equal(weighted_sums_at(hist, w, rows), numpy_sums)
    assert sum(calls) == rows.size
    # where numba is loaded, from the smaller size
    monkeypatch.setitem(sys.modules, "numba", sys.modules.get("numba") or types.ModuleType("numba"))
    monkeypatch.setattr(ws, "LOADED_GATHER_VALUES", rows.size // 2 * w.offsets.shape[0])
    assert ws.gather_pays(g, rows.size // 2, w.offsets.shape[0])
    monkeypatch.delitem(sys.modules, "numba")
    assert not ws.gather_pays(g, rows.size // 2, w.offsets.shape[0])
    plane = _grid_of(2, eta, 200)
    assert not ws.gather_pays(plane, 1 << 40, 1)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_the_integer_box_sums_are_the_float_products_bit_for_bit(d):
    """The exact table's boxes add their corners in int32 (wrapping past
    2^31 on the way, exact at the end): the same bound, float for float, as
    the product of each block of corners with the signs, including tables
    whose prefix sums pass 2^29; and the candidates' table index from their
    keys is ``(decode(keys) + pad) @ strides``."""
    rng = np.random.default_rng(2600 + d)
    g = _grid_of(d, 4.0, {1: 400, 2: 60, 3: 20}[d])
    w = ball_weights(d, 4.0, 2)
    R = int(np.abs(w.offsets).max())
    shape = tuple(s + 2 * R + 1 for s in g.shape)
    S = np.zeros(shape, dtype=np.int32)
    inner = tuple(slice(R + 1, R + 1 + s) for s in g.shape)
    S[inner] = rng.integers(0, (2**31 - 1) // g.n_cells, g.shape)
    total = float(S.sum(dtype=np.float64))
    cover_mod._prefix_sums(S)
    table = cover_mod._Table(S, True, total)
    keys = g.encode(np.stack([rng.integers(0, s, 3000) for s in g.shape], axis=1))
    base = cover_mod._table_index(g, keys, R + 1, table.strides)
    assert np.array_equal(base, (g.decode(keys) + R + 1) @ table.strides)
    own = rng.random(keys.size) * 50
    for cover in (
        shell_cover(w.offsets, w.kmax, cross=False),
        shell_cover(w.offsets, w.kmax, from_radius=R),
        shell_cover(w.offsets, w.kmax),
    ):
        boxes, slack = table.boxes(cover)
        expect = cover.cube[0] * own
        for coef, deltas in boxes:
            expect += coef * (table.flat[base[:, None] + deltas[None, :]] @ table.signs.astype(np.float64))
        expect = expect * (1 + 1e-12) + slack
        assert np.array_equal(table.bound(base, own, cover), expect)
    assert int(S.max()) > 1 << 29  # (four corners of it pass 2^31)


def _candidates_step_by_step(hist, w, cut, heavy_cut, threshold):
    """The candidates density_field keeps on a dense release without the
    fused passes: the occupied cells, then the box cover's staged bound."""
    from dpdbscan.post.coretests.density.coresubcells import _occupied_cells

    cand, own = _occupied_cells(hist, cut)
    flat = hist.values.ravel()
    assert np.count_nonzero(flat >= heavy_cut) * w.offsets.shape[0] >= cand.size  # (no near mask)
    bound = cover_sums(hist, cand, w, own, threshold)
    keep = bound >= threshold
    return cand[keep], own[keep]


@pytest.mark.parametrize("k,eta,side", [(1, 4.0, 26), (2, 4.0, 22), (3, 2.0, 18), (2, 4.0, 9)])
@pytest.mark.parametrize("big", [False, True])
def test_the_fused_dense_candidates_are_the_cover_steps_bit_for_bit(k, eta, side, big, monkeypatch):
    """A large dense 3-D integer release takes its occupied cells and their
    box cover in compiled passes over the grid (:func:`~.cover.dense_cover_candidates`):
    the same cells and values as ``_occupied_cells`` then ``cover_sums``,
    at thresholds that keep few, some or most of them, with values whose
    prefix sums pass 2^29 (``big``: the int32 box sums of a row wrap on
    the way); and the density field built from them is the same."""
    from dpdbscan.post.coretests.density import coresubcells

    monkeypatch.setattr(cover_mod, "COMPILED_DENSE_CELLS", 0)
    rng = np.random.default_rng(3100 + 10 * k + side + big)
    w = ball_weights(3, eta, k)
    g = _grid_of(3, eta, side)
    if big:
        values = rng.integers(-50, (2**31 - 1) // g.n_cells, g.shape)
    else:
        values = np.round(rng.laplace(0, 2.0, g.shape)).astype(np.int64)
        for _ in range(6):  # clumps
            at = tuple(int(rng.integers(0, s)) for s in g.shape)
            values[at] += int(rng.integers(20, 300))
    hist = _dense(g, values)
    assert cover_mod.dense_compiled(g)
    flat = values.ravel()

    def keys_at(idx):
        return g.encode(np.stack(np.unravel_index(idx, g.shape), axis=1))

    top = weighted_sums_at(hist, w, keys_at(np.arange(flat.size))).max(axis=1)
    cut = 0.5 if not big else float(np.quantile(flat, 0.3))
    kept = []
    for t in (float(np.quantile(top, 0.5)), float(np.quantile(top, 0.9)), float(np.quantile(top, 0.999))):
        fused = cover_mod.dense_cover_candidates(hist, w, cut, 0.0, t, lambda: True)
        assert fused is not None
        cand, own = _candidates_step_by_step(hist, w, cut, 0.0, t)
        assert np.array_equal(fused[0], cand) and np.array_equal(fused[1], own)
        assert fused[1].dtype == own.dtype
        # every cell whose sums reach t at a sub-position is kept
        reach = (top >= t) & (flat >= cut)
        assert set(keys_at(np.flatnonzero(reach)).tolist()) <= set(cand.tolist())
        kept.append(cand.size)
    assert kept[0] > kept[-1] > 0 or big
    # where the heavy cells' neighbourhoods are fewer cells, the near mask's path
    assert cover_mod.dense_cover_candidates(hist, w, cut, float(flat.max()) + 1, 1.0, lambda: True) is None
    # and the field: the same cores, the same estimates
    fields = []
    for on in (True, False):
        if not on:
            monkeypatch.setattr(coresubcells, "dense_cover_candidates", lambda *a, **kw: None)
        f = density_field(hist, 5.0, subcells=k)
        fields.append((f.keys, f.estimates))
    assert np.array_equal(fields[0][0], fields[1][0]) and np.array_equal(fields[0][1], fields[1][1])


def test_the_fused_prefix_table_is_numpys():
    """:func:`~.compiled.prefix_table3` writes the summed-area table of
    ``_numpy_cover``: the positive parts at pad, cumulative sums on every
    axis, entries past 2^30."""
    from dpdbscan.post.coretests.density.compiled import prefix_table3

    rng = np.random.default_rng(3200)
    for shape, pad in (((5, 7, 9), 3), ((11, 4, 6), 2), ((1, 1, 1), 1)):
        n = math.prod(shape)
        values = rng.integers(-(2**20), (2**31 - 1) // n, shape)
        S = np.zeros(tuple(s + 2 * pad - 1 for s in shape), dtype=np.int32)
        prefix_table3(values.ravel(), np.asarray(shape, dtype=np.int64), pad, S)
        ref = np.zeros_like(S)
        ref[tuple(slice(pad, pad + s) for s in shape)] = np.maximum(values, 0)
        cover_mod._prefix_sums(ref)
        assert np.array_equal(S, ref)
        assert shape == (1, 1, 1) or int(S.max()) > 2**29
