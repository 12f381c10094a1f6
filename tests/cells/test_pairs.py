"""Pairs of cells within reach (cells/pairs.py), and every sum built on them
equal bit for bit to the runs of offsets they replace when those are dear."""

import copy
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dpdbscan import DPDBSCAN
from dpdbscan.cells import pairs as pairs_module
from dpdbscan.cells.grid import Grid, neighbour_offsets, offset_runs, search_keys, sorted_runs
from dpdbscan.cells.pairs import chebyshev_pairs, forced
from dpdbscan.model.predict import border_labels
from dpdbscan.post.coretests.density import weightedsums as density_sums
from dpdbscan.post.coretests.density.weightedsums import _sparse_run_sums
from dpdbscan.post.coretests.density.weights import ball_weights
from dpdbscan.post.sums import sparse_neighbour_sums

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def at_each_d(dims, **shape):
    """One explicit @example per dimension of ``dims``, the other arguments
    ``shape`` (the largest a test draws) and a seed of d: the drawn examples
    are the same on every run (tests/conftest.py) but need not meet every
    dimension, these always do. A callable value is called with d (an
    argument that alternates between dimensions)."""

    def mark(test):
        for d in reversed(dims):
            kw = {k: v(d) if callable(v) else v for k, v in shape.items()}
            test = example(d=d, seed=d, **kw)(test)
        return test

    return mark


ALL_D = range(1, 9)


def brute_pairs(a, b, R):
    D = np.abs(a[:, None, :] - b[None, :, :]).max(axis=2)
    return sorted(zip(*(x.tolist() for x in np.nonzero(D <= R))))


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 12),
    n=st.integers(0, 60),
    m=st.integers(0, 300),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, side=12, n=60, m=300)
@example(d=3, R=1, side=1, n=0, m=0, seed=0)
def test_chebyshev_pairs_are_every_pair_once(d, R, side, n, m, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, side, (n, d))
    b = rng.integers(0, side, (m, d))
    i, j = chebyshev_pairs(a, b, R)
    got = sorted(zip(i.tolist(), j.tolist()))
    assert got == brute_pairs(a, b, R)
    i, j = chebyshev_pairs(a, a, R)  # the self-join path
    assert sorted(zip(i.tolist(), j.tolist())) == brute_pairs(a, a, R)


def _layout(monkeypatch, d, e, side, sweep_side):
    """Every later :class:`CellIndex` laid out with buckets of ``side`` along
    the first e axes but one and ``sweep_side`` along the sweep axis (0),
    the sides doubled while the table would pass 2^16 entries."""
    axes = list(range(1, 1 + min(e, d - 1))) + [0]

    def plan(d, R, n, m, extents):
        sides = [side] * (len(axes) - 1) + [sweep_side]
        while math.prod((extents[k] - 1) // s + 1 for k, s in zip(axes, sides)) > 1 << 16:
            sides = [2 * s for s in sides]
        return axes, sides, 0.0

    monkeypatch.setattr(pairs_module, "plan", plan)


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    e=st.integers(0, 7),
    bucket=st.integers(1, 9),
    sweep_side=st.integers(1, 5),
    side=st.integers(1, 30),
    n=st.integers(1, 80),
    m=st.integers(1, 200),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, e=7, bucket=2, sweep_side=1, side=30, n=80, m=200)
def test_every_layout_gives_every_pair_once(d, R, e, bucket, sweep_side, side, n, m, seed):
    # buckets of any side along any number of axes (smaller than R too):
    # the same pairs, each once, queried both ways and as a self-join
    rng = np.random.default_rng(seed)
    a = rng.integers(0, side, (n, d))
    b = rng.integers(0, side, (m, d))
    with pytest.MonkeyPatch.context() as mp:
        _layout(mp, d, e, bucket, sweep_side)
        i, j = chebyshev_pairs(a, b, R)
        assert sorted(zip(i.tolist(), j.tolist())) == brute_pairs(a, b, R)
        i, j = chebyshev_pairs(b, a, R)
        assert sorted(zip(i.tolist(), j.tolist())) == brute_pairs(b, a, R)
        i, j = chebyshev_pairs(a, a, R)
        assert sorted(zip(i.tolist(), j.tolist())) == brute_pairs(a, a, R)


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 12),
    top=st.sampled_from([-1, 0, 1]),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, side=12, top=lambda d: d % 3 - 1)
def test_packed_lanes_give_every_pair_once_up_to_their_limit(d, R, side, top, seed):
    """Coordinates packed into lanes of 64 // d bits hold values below
    h = 2^(bits - 2): pairs at the top of that range (no borrow may cross a
    lane), and just above it (the per-axis checks instead), are all found."""
    rng = np.random.default_rng(seed)
    h = 1 << (64 // d - 2)
    hi = min(h + top, 1 << 40)  # lanes end at h; one above: the per-axis checks
    lo = max(hi - side, 0)
    a = rng.integers(lo, hi, (int(rng.integers(1, 60)), d))
    b = rng.integers(lo, hi, (int(rng.integers(1, 200)), d))
    index = pairs_module.CellIndex(b, R)
    assert (index._lanes(R).size == 0) == (int(b.max()) >= h)
    i, j = index.pairs(a, R)
    assert sorted(zip(i.tolist(), j.tolist())) == brute_pairs(a, b, R)
    i, j = index.half_pairs(R)
    both = sorted(zip(i.tolist() + j.tolist(), j.tolist() + i.tolist())) + [(r, r) for r in range(b.shape[0])]
    assert sorted(both) == brute_pairs(b, b, R)


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 20),
    shift=st.integers(-8, 30),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, side=20, shift=lambda d: -8 if d % 2 else 30)
def test_queries_beyond_the_laid_out_cells_find_their_pairs(d, R, side, shift, seed):
    # query cells below 0 or past the last laid-out coordinate (their boxes
    # may still reach in): the buckets they meet are computed, not tabled
    rng = np.random.default_rng(seed)
    b = rng.integers(0, side, (int(rng.integers(1, 150)), d))
    a = rng.integers(0, side, (int(rng.integers(1, 40)), d)) + shift
    i, j = pairs_module.CellIndex(b, R).pairs(a, R)
    assert sorted(zip(i.tolist(), j.tolist())) == brute_pairs(a, b, R)


def test_the_layout_fits_a_table_of_a_few_entries_per_cell():
    # crowded cells (a 4-D release: 738k cells of 67^4) take small buckets on
    # every axis; sparse cells in 8-D leave axes without buckets or take
    # larger ones, the table within its bound either way
    for d, R, n, side in ((4, 2, 738_058, 67), (6, 3, 461_494, 49), (8, 3, 300_000, 48), (3, 1, 10, 1000)):
        axes, sides, cost = pairs_module.plan(d, R, n, n, [side] * d)
        assert sorted(axes) == sorted(set(axes)) and len(axes) == len(sides) >= 1
        size = math.prod((side - 1) // s + 1 for s in sides)
        assert size <= max(pairs_module._ENTRIES_PER_CELL * n, pairs_module._MIN_ENTRIES)
        assert 0 < cost < math.inf
        if d >= 5:
            # the benchmark's 5-D to 8-D releases: a table that stays near the
            # cache (a read past it misses), not one entry or more per cell
            assert size <= pairs_module._CACHED
    axes, sides, _ = pairs_module.plan(5, 3, 370_000, 370_000, [56] * 5)
    assert math.prod(55 // s + 1 for s in sides) <= pairs_module._CACHED


def test_sorted_runs_number_the_runs_of_offset_runs():
    off = neighbour_offsets(3, 4.0)
    srt, run = sorted_runs(off)
    runs = list(offset_runs(off))
    assert run[-1] + 1 == len(runs)
    for r, (prefix, lo, hi) in enumerate(runs):
        rows = srt[run == r]
        assert np.array_equal(rows[:, :-1], np.repeat(prefix[None, :], rows.shape[0], axis=0))
        assert rows[:, -1].tolist() == list(range(lo, hi + 1))


def _sparse_release(d, seed, integer):
    rng = np.random.default_rng(seed)
    eta = 4.0 if d > 6 else float(rng.choice([4.0, 3.0]))
    g = Grid(np.zeros(d), np.ones(d), 0.45 if d > 3 else 0.15, eta)
    n = int(rng.integers(1, 300))
    keys = np.unique(g.encode(np.stack([rng.integers(0, s, n) for s in g.shape], axis=1)))
    vals = rng.integers(1, 40, keys.size) if integer else rng.exponential(4.0, keys.size) + 0.5
    query = keys[rng.random(keys.size) < 0.6]
    return rng, g, keys, vals, query


def _offsets(g, rng):
    """NB when it is small, else a random part of it (the runs would take long)."""
    off = g.offsets
    if off.shape[0] > 3000:
        off = off[rng.random(off.shape[0]) < 3000 / off.shape[0]]
        off = np.unique(np.concatenate([off, -off]), axis=0)  # symmetric, as every offset set used
    return off


@SETTINGS
@given(d=st.integers(1, 8), seed=st.integers(0, 2**32 - 1), integer=st.booleans())
@at_each_d(ALL_D, integer=lambda d: d % 2 == 0)
def test_neighbour_sums_over_pairs_equal_the_runs(d, seed, integer):
    rng, g, keys, vals, query = _sparse_release(d, seed, integer)
    off = _offsets(g, rng)
    with forced(False):
        runs = sparse_neighbour_sums(g, keys, vals, query, off)
    with forced(True):
        pairs = sparse_neighbour_sums(g, keys, vals, query, off)
    assert pairs.dtype == runs.dtype
    assert np.array_equal(pairs, runs)


def _first_free_key(g, keys, block=4096):
    """The smallest key of a cell of the grid strictly between keys[0] and
    keys[-1] that is not in ``keys``, or None: the keys after keys[0] read
    ``block`` at a time (those of the padding, whose coordinates are off the
    grid, skipped), not the whole universe's (millions of cells in 8-D)."""
    for lo in range(int(keys[0]) + 1, int(keys[-1]), block):
        k = np.arange(lo, min(lo + block, int(keys[-1])), dtype=np.int64)
        c = g.decode(k)
        ok = g.valid(c)
        ok[ok] = g.encode(c[ok]) == k[ok]
        k = k[ok & ~np.isin(k, keys)]
        if k.size:
            return int(k[0])
    return None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(1, 8), seed=st.integers(0, 2**32 - 1), integer=st.booleans())
@at_each_d(ALL_D, integer=lambda d: d % 2 == 1)
def test_sums_from_the_pairs_among_the_released_cells_equal_the_runs(d, seed, integer):
    """Queries that are the released cells, most of them, or a few, from the
    table of buckets of the released cells (held for the same keys array,
    never for another one): the same sums, bit for bit, as the runs."""
    from dpdbscan.post import sums as sums_mod

    rng, g, keys, vals, _ = _sparse_release(d, seed, integer)
    off = _offsets(g, rng)
    sums_mod._LAST_INDEX.clear()
    for query in (keys, keys[rng.random(keys.size) < 0.9], keys[rng.random(keys.size) < 0.2]):
        with forced(False):
            runs = sparse_neighbour_sums(g, keys, vals, query, off)
        with forced(True):
            pairs = sparse_neighbour_sums(g, keys, vals, query, off)
        assert np.array_equal(pairs, runs)
    # another array of the same cells, one value changed: its own sums
    other = keys.copy()
    vals2 = vals.copy()
    vals2[0] += 5
    with forced(False):
        runs = sparse_neighbour_sums(g, other, vals2, other, off)
    with forced(True):
        assert np.array_equal(sparse_neighbour_sums(g, other, vals2, other, off), runs)
    # another array of as many cells with the same first and last: its own pairs
    free = _first_free_key(g, keys)
    if keys.size > 2 and free is not None:
        moved = np.sort(np.append(np.delete(keys, keys.size // 2), free))
        ones = np.ones(moved.size, dtype=np.int64)
        with forced(True):
            sparse_neighbour_sums(g, keys, vals, keys, off)  # the table of keys held
            got = sparse_neighbour_sums(g, moved, ones, moved, off)
        with forced(False):
            assert np.array_equal(got, sparse_neighbour_sums(g, moved, ones, moved, off))


@SETTINGS
@given(d=st.integers(1, 6), k=st.sampled_from([1, 2]), seed=st.integers(0, 2**32 - 1))
@at_each_d(range(1, 7), k=2)
def test_weighted_sums_over_pairs_equal_the_runs(d, k, seed):
    rng, g, keys, vals, query = _sparse_release(d, seed, integer=bool(seed % 2))
    if d > 3:
        k = 1
    W = ball_weights(d, float(g.eta), k)
    limit = density_sums.MAX_DENSE_CELLS
    density_sums.MAX_DENSE_CELLS = 0  # the runs themselves, not the dense layout
    try:
        with forced(False):
            runs = _sparse_run_sums(g, keys, vals, W, query)
    finally:
        density_sums.MAX_DENSE_CELLS = limit
    with forced(True):
        pairs = _sparse_run_sums(g, keys, vals, W, query)
    assert np.array_equal(pairs, runs)  # floats: the same additions in the same order
    if d <= 6:
        # the release laid out densely (small universes): gathers, same order
        dense = density_sums._dense_run_sums(g, keys, vals.astype(np.float64), W, query)
        assert np.array_equal(dense, runs)


@SETTINGS
@given(
    d=st.integers(1, 5),
    to=st.sampled_from(["cells", "centres"]),
    scale=st.sampled_from([0.5, 1.0, 1.7]),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(range(1, 6), to=lambda d: ("cells", "centres")[d % 2], scale=1.7)
def test_border_labels_over_pairs_equal_the_offsets(d, to, scale, seed):
    rng = np.random.default_rng(seed)
    g = Grid(np.zeros(d), np.ones(d), 0.3 if d > 2 else 0.1, 4.0)
    core = np.unique(g.encode(np.stack([rng.integers(0, s, 40) for s in g.shape], axis=1)))
    labels = rng.integers(0, 4, core.size)
    cells = np.stack([rng.integers(0, s, 200) for s in g.shape], axis=1)
    with forced(False):
        a = border_labels(g, core, labels, cells, g.eps * scale, to)
    with forced(True):
        b = border_labels(g, core, labels, cells, g.eps * scale, to)
    assert np.array_equal(a, b)
    assert (a >= 0).any() or core.size == 0 or scale < 1


def _blobs(d, n, seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.2, 0.8, (4, d))
    X = c[rng.integers(0, 4, n)] + rng.normal(0, 0.03, (n, d))
    return np.clip(np.concatenate([X, rng.random((n // 10, d))]), 0, 1)


def _fit_both(d, seed, units=None, **kw):
    X = _blobs(d, 1500, seed)
    out = []
    for use_pairs in (False, True):
        est = DPDBSCAN(random_state=seed, bounds=(0, 1), epsilon=1.0, **kw)
        with forced(use_pairs), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, units=None if units is None else units(X))
            out.append((est.spans_, est.predict(X)))
    (a, pa), (b, pb) = out
    assert np.array_equal(a.core_keys, b.core_keys)
    assert np.array_equal(a.labels, b.labels)
    assert np.array_equal(pa, pb)
    return a


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    d=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    histogram=st.sampled_from(["dense", "sparse"]),
    core=st.sampled_from(["density", "bound"]),
    subcells=st.sampled_from([1, 2]),
)
def test_fits_are_the_same_with_and_without_pairs(d, seed, histogram, core, subcells):
    if d > 3:
        subcells = 1
    # fine enough grids that forcing the pairs everywhere stays small
    eps = {1: 0.02, 2: 0.05, 3: 0.08, 4: 0.12, 5: 0.15}[d]
    _fit_both(d, seed, eps=eps, min_samples=10, histogram=histogram, core=core, subcells=subcells)


@pytest.mark.parametrize(
    "d,histogram,core,subcells",
    [
        (1, "sparse", "density", 2),
        (2, "dense", "density", 2),
        (3, "sparse", "bound", 1),
        (4, "dense", "density", 1),
    ],
)
def test_a_few_fits_are_the_same_with_and_without_pairs(d, histogram, core, subcells):
    test_fits_are_the_same_with_and_without_pairs.hypothesis.inner_test(d, 3, histogram, core, subcells)


# 4-D: 7-26 s of a loaded machine's CPU; make test-slow.
@pytest.mark.parametrize("d", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_person_level_fits_are_the_same_with_and_without_pairs(d):
    def units(X):
        return np.arange(X.shape[0]) // 3

    _fit_both(
        d,
        7,
        units,
        eps=0.05 if d == 2 else 0.2,
        min_samples=10,
        delta=1e-6,
        max_cells_per_unit=2,
        histogram="sparse",
    )


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 12),
    n=st.integers(0, 200),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, side=12, n=200)
def test_half_pairs_are_every_pair_of_distinct_rows_once(d, R, side, n, seed):
    from dpdbscan.cells.pairs import chebyshev_half_pairs

    a = np.random.default_rng(seed).integers(0, side, (n, d))
    i, j = chebyshev_half_pairs(a, R)
    assert not np.any(i == j)
    both = sorted(zip(i.tolist() + j.tolist(), j.tolist() + i.tolist()))
    own = [(r, r) for r in range(n)]
    assert sorted(both + own) == brute_pairs(a, a, R)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(1, 8), seed=st.integers(0, 2**32 - 1), integer=st.booleans())
@at_each_d(ALL_D, integer=lambda d: d % 2 == 0)
def test_reaching_sums_then_weighted_sums_of_the_survivors(d, seed, integer):
    """The NB sums of (most of) the released cells from a self-join that
    visits each pair once equal the pairs' sums of
    :func:`sparse_neighbour_sums` (equal to the runs', tested above) up to
    rounding; the table of buckets they hold gives the weighted sums of the
    cells above a threshold, and of the others, bit for bit as the runs."""
    from dpdbscan.post import sums as sums_mod

    rng, g, keys, vals, _ = _sparse_release(d, seed, integer)
    k = 2 if d <= 3 else 1
    W = ball_weights(d, float(g.eta), k) if d <= 6 else None  # runs over 1.28M offsets: slow
    for query in (keys, keys[rng.random(keys.size) < 0.9], keys[: keys.size // 2]):
        sums_mod._LAST_INDEX.clear()
        with forced(True):
            want = sparse_neighbour_sums(g, keys, vals, query)
        threshold = float(np.quantile(want, 0.7)) if want.size else 1.0
        sums_mod._LAST_INDEX.clear()
        with forced(True):
            got = sums_mod.reaching_sums(g, keys, vals, query)
        if query.size == 0 or 4 * query.size < 3 * keys.size:
            assert got is None
            continue
        assert got is not None
        assert np.allclose(got, want, rtol=1e-12, atol=1e-9)
        assert sums_mod._LAST_INDEX.get(keys) is not None
        if W is None:
            continue
        survivors, others = query[got >= threshold], query[got < threshold]
        for part in (survivors, others):
            with forced(True):
                held = _sparse_run_sums(g, keys, vals, W, part)
            with forced(False):
                assert np.array_equal(held, _sparse_run_sums(g, keys, vals, W, part))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(1, 6), seed=st.integers(0, 2**32 - 1), integer=st.booleans())
@at_each_d(range(1, 7), integer=lambda d: d % 2 == 1)
def test_reaching_sums_with_a_kernel_weigh_each_offset(d, seed, integer):
    """With a kernel (offsets and weights, not symmetric: each way of a pair
    takes its own offset's weight), the sums from the pairs listed once are
    sum_o w(o) x~_{q + o}, counted offset by offset."""
    from dpdbscan.post import sums as sums_mod

    rng, g, keys, vals, _ = _sparse_release(d, seed, integer)
    off, w = _random_kernel(rng, g)
    if off.shape[0] == 0:
        return
    sums_mod._LAST_INDEX.clear()
    with forced(True):
        got = sums_mod.reaching_sums(g, keys, vals, keys, (off, w))
    assert got is not None
    assert np.allclose(got, _kernel_oracle(g, keys, vals, keys, off, w), rtol=1e-12, atol=1e-9)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(2, 6), seed=st.integers(0, 2**32 - 1), integer=st.booleans(), held=st.booleans())
@at_each_d(range(2, 7), integer=lambda d: d % 2 == 0, held=lambda d: d % 2 == 1)
def test_kernel_sums_from_a_few_cells_weigh_each_offset(d, seed, integer, held):
    """The kernel sums that a few released cells give every released cell
    (each of the few walking the table of buckets once, a table a
    self-join left held or a new one) are sum_o w(o) x~_{X + o} over
    those cells only, counted offset by offset (an asymmetric kernel, so
    that the direction of each offset counts)."""
    from dpdbscan.post import sums as sums_mod

    rng, g, keys, vals, _ = _sparse_release(d, seed, integer)
    off, w = _random_kernel(rng, g)
    if off.shape[0] == 0:
        return
    rows = np.flatnonzero(rng.random(keys.size) < rng.uniform(0.0, 0.5))
    sums_mod._LAST_INDEX.clear()
    if held:
        with forced(True):
            sums_mod.reaching_sums(g, keys, vals, keys, (off, w))
    got = sums_mod.kernel_sums_from(g, keys, vals, rows, (off, w))
    want = _kernel_oracle(g, keys[rows], vals[rows], keys, off, w)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-9)


def _random_kernel(rng, g):
    """About 70% of NB's offsets (not symmetric) and random weights."""
    off = g.offsets
    off = off[rng.random(off.shape[0]) < 0.7]
    return off, rng.random(off.shape[0])


def _kernel_oracle(g, keys, vals, query, off, w, block=256):
    """sum_o w(o) x~_{q + o} at each query key, counted offset by offset
    (added in that order, ``block`` offsets looked up at a time: 6-D kernels
    have up to 67,000 offsets, a second or more one at a time)."""
    want = np.zeros(query.size)
    coords = g.decode(query)
    for lo in range(0, off.shape[0], block):
        o = off[lo : lo + block]
        t = (o[:, None, :] + coords[None, :, :]).reshape(-1, coords.shape[1])
        q = np.tile(np.arange(query.size), o.shape[0])
        wo = np.repeat(w[lo : lo + block], query.size)
        ok = np.flatnonzero(g.valid(t))
        idx, hit = search_keys(keys, g.encode(t[ok]))
        np.add.at(want, q[ok[hit]], wo[ok[hit]] * vals[idx[hit]])
    return want


def _weight_oracle(a, vals, R, codes, weights):
    """sum over the rows q within R of each row p (p itself included) of
    w(a[q] - a[p]) vals[q], w looked up by offset code (0 off the set): the
    all-pairs numpy oracle of :meth:`CellIndex.half_sums`."""
    w = dict(zip(codes.tolist(), weights.tolist()))
    out = np.zeros(a.shape[0])
    for p, q in brute_pairs(a, a, R):
        code = int(pairs_module.offset_codes((a[q] - a[p])[None, :], R)[0])
        out[p] += w.get(code, 0.0) * vals[q]
    return out


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 12),
    n=st.integers(1, 150),
    threads=st.sampled_from([1, 2, 3]),
    searched=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, side=12, n=150, threads=3, searched=lambda d: d % 2 == 0)
def test_half_sums_weigh_every_pair_both_ways(d, R, side, n, threads, searched, seed):
    """The self-join's sums (each pair visited once, each way with its own
    offset's weight; the weights from a table of every code or a binary
    search of the codes; the cells in one to three threads) equal the
    all-pairs sums up to rounding."""
    rng = np.random.default_rng(seed)
    a = np.unique(rng.integers(0, side, (n, d)), axis=0)
    vals = rng.exponential(4.0, a.shape[0])
    cube = pairs_module.offset_codes(np.zeros((1, d), int), R)[0] * 2 + 1  # (2R + 1)^d codes
    codes = np.unique(rng.integers(0, cube, int(rng.integers(1, 60))))
    if rng.random() < 0.5:
        codes = np.union1d(codes, [cube // 2])  # the zero offset
    weights = rng.random(codes.size)
    with pytest.MonkeyPatch.context() as mp:
        if searched:
            mp.setattr(pairs_module.OffsetWeights, "TABLE", 0)
        w = pairs_module.OffsetWeights(codes, weights, R, d)
    assert (w.table.size == 0) == (searched or (2 * R + 1) ** d > pairs_module.OffsetWeights.TABLE)
    got = pairs_module.CellIndex(a, R).half_sums(vals, R, w, threads)
    assert np.allclose(got, _weight_oracle(a, vals, R, codes, weights), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 12),
    n=st.integers(1, 150),
    threads=st.sampled_from([1, 2, 3]),
    searched=st.booleans(),
    shuffled=st.booleans(),
    skew=st.sampled_from([None, "weight", "code"]),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(
    ALL_D,
    R=3,
    side=12,
    n=150,
    threads=3,
    searched=lambda d: d % 2 == 1,
    shuffled=True,
    skew=lambda d: (None, "weight", "code")[d % 3],
)
def test_symmetric_weights_are_told_and_looked_up_once_per_pair(
    d, R, side, n, threads, searched, shuffled, skew, seed
):
    """``OffsetWeights.symmetric`` is whether every offset weighs what its
    opposite does (the brute check over the cube of codes), for a table or
    sorted codes, given in order or not; the self-join's sums that look one
    weight up per pair where it holds equal bit for bit those that look up
    both, and the all-pairs oracle's up to rounding."""
    rng = np.random.default_rng(seed)
    a = np.unique(rng.integers(0, side, (n, d)), axis=0)
    vals = rng.exponential(4.0, a.shape[0])
    cube = (2 * R + 1) ** d
    half = np.unique(rng.integers(0, cube, int(rng.integers(1, 60))))
    codes = np.union1d(half, (cube - 1) - half)  # every code with its opposite
    weights = np.zeros(codes.size)
    for c, x in zip(half.tolist(), rng.random(half.size).tolist()):
        weights[np.searchsorted(codes, [c, cube - 1 - c])] = x
    if skew == "weight" and codes.size:
        weights[int(rng.integers(0, codes.size))] += 0.5  # one offset weighs more than its opposite
    if skew == "code" and codes.size > 1:
        drop = int(rng.integers(0, codes.size))
        if codes[drop] != cube // 2:
            codes, weights = np.delete(codes, drop), np.delete(weights, drop)  # an opposite left out
    if shuffled:
        order = rng.permutation(codes.size)
        codes, weights = codes[order], weights[order]
    with pytest.MonkeyPatch.context() as mp:
        if searched:
            mp.setattr(pairs_module.OffsetWeights, "TABLE", 0)
        w = pairs_module.OffsetWeights(codes, weights, R, d)
    table = np.zeros(cube)
    table[codes] = weights
    assert w.symmetric == bool(np.array_equal(table, table[::-1]))
    index = pairs_module.CellIndex(a, R)
    got = index.half_sums(vals, R, w, threads)
    both = copy.copy(w)
    both.symmetric = False  # each pair looks both of its weights up
    assert np.array_equal(got, index.half_sums(vals, R, both, threads))
    assert np.allclose(got, _weight_oracle(a, vals, R, codes, weights), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(
    d=st.integers(5, 8),
    R=st.integers(1, 3),
    n=st.integers(1, 200),
    limit=st.sampled_from([0, 1 << 10, 1 << 22, 1 << 23]),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(range(5, 9), R=3, n=200, limit=lambda d: (1 << 23, 0)[d % 2])
def test_weights_table_up_to_a_limit_gives_the_searched_sums(d, R, n, limit, seed):
    """``OffsetWeights(..., limit)`` holds a table of the cube of codes iff
    it has at most ``limit`` entries (the sums' joins ask up to 2^23: 8-D
    at reach 3, 7^8 codes), and the self-join's sums with that table are
    the sums with the binary search of the codes, bit for bit (the same
    weights, in the same order), and the all-pairs oracle's up to
    rounding; d = 5..8, where the releases of issue 30 are sparse."""
    rng = np.random.default_rng(seed)
    a = np.unique(rng.integers(0, 2 * R + 3, (n, d)), axis=0)
    vals = rng.exponential(4.0, a.shape[0])
    cube = (2 * R + 1) ** d
    codes = np.unique(np.r_[rng.integers(0, cube, int(rng.integers(1, 400))), cube // 2])
    weights = rng.random(codes.size)
    w = pairs_module.OffsetWeights(codes, weights, R, d, limit)
    assert (w.table.size > 0) == (cube <= limit)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pairs_module.OffsetWeights, "TABLE", 0)
        searched = pairs_module.OffsetWeights(codes, weights, R, d)
    assert searched.table.size == 0 and w.at_zero == searched.at_zero
    index = pairs_module.CellIndex(a, R)
    got = index.half_sums(vals, R, w)
    assert np.array_equal(got, index.half_sums(vals, R, searched))
    assert np.allclose(got, _weight_oracle(a, vals, R, codes, weights), rtol=1e-12, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(d=st.integers(1, 8), n=st.integers(0, 300), seed=st.integers(0, 2**32 - 1))
@at_each_d(ALL_D, n=300)
def test_chebyshev_radii_of_offsets(d, n, seed):
    """The density test's shells read the Chebyshev norm of each offset
    from :func:`~dpdbscan.post.sums.chebyshev_radii`: the largest absolute
    coordinate of each row, read-only, the same array again for a
    read-only ``offsets`` and a fresh one for a writeable array."""
    from dpdbscan.post.sums import chebyshev_radii

    off = np.random.default_rng(seed).integers(-4, 5, (n, d))
    want = np.abs(off).max(axis=1) if n else np.zeros(0, np.int64)
    got = chebyshev_radii(off)
    assert np.array_equal(got, want) and not got.flags.writeable
    off.setflags(write=False)
    held = chebyshev_radii(off)
    assert np.array_equal(held, want) and chebyshev_radii(off) is held


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 12),
    searched=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, side=12, searched=lambda d: d % 2 == 0)
def test_offset_pairs_come_sorted_by_query_run_and_row(d, R, side, searched, seed):
    """Each query's laid-out cells at an offset of the set, with the offset's
    position among the sorted codes (from a table of every code or a binary
    search): the all-pairs list, sorted by query, run of offsets, row."""
    rng = np.random.default_rng(seed)
    b = np.unique(rng.integers(0, side, (int(rng.integers(1, 120)), d)), axis=0)
    a = rng.integers(-1, side + 1, (int(rng.integers(1, 40)), d))
    off = np.unique(rng.integers(-R, R + 1, (int(rng.integers(1, 80)), d)), axis=0)
    srt, run_of = sorted_runs(off)
    codes = pairs_module.offset_codes(srt, R)
    with pytest.MonkeyPatch.context() as mp:
        if searched:
            mp.setattr(pairs_module.OffsetPositions, "TABLE", 0)
        positions = pairs_module.OffsetPositions(codes, R, d)
    assert (positions.table.size == 0) == (searched or (2 * R + 1) ** d > pairs_module.OffsetPositions.TABLE)
    qi, ri, pos = pairs_module.CellIndex(b, R).offset_pairs(a, R, positions, run_of)
    where = {c: i for i, c in enumerate(codes.tolist())}
    want = []
    for i, j in brute_pairs(a, b, R):
        at = where.get(int(pairs_module.offset_codes((b[j] - a[i])[None, :], R)[0]))
        if at is not None:
            want.append((i, int(run_of[at]), j, at))
    want.sort()
    got = list(zip(qi.tolist(), run_of[pos].tolist(), ri.tolist(), pos.tolist()))
    assert got == want


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 12),
    n=st.integers(0, 120),
    keep=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, side=12, n=120, keep=0.5)
def test_components_join_the_pairs_at_offsets_of_the_set(d, R, side, n, keep, seed):
    # the union-find over the walk's pairs: per row the smallest row of its
    # component, against a brute force over every pair at an offset of a
    # random symmetric set (the rest within R are not joined)
    from dpdbscan.cells.components import connected_components
    from dpdbscan.cells.pairs import OffsetWeights, offset_codes

    rng = np.random.default_rng(seed)
    a = rng.integers(0, side, (n, d))
    # the kept offsets and their negations, by code: the code of the k-th offset
    # of the cube [-R, R]^d in C order is k, and its negation's is size - 1 - k
    # (the rows of np.unique(axis=0) over the cube, at up to 7^8 rows, cost 25 s)
    kept = rng.random((2 * R + 1) ** d) < keep
    codes = np.flatnonzero(kept | kept[::-1]).astype(np.int64)
    got = pairs_module.CellIndex(a, R).components(R, OffsetWeights(codes, np.ones(codes.size), R, d))
    i, j = (np.array(x, dtype=np.int64) for x in zip(*brute_pairs(a, a, R))) if n else (np.zeros(0, int),) * 2
    hit = np.isin(offset_codes(a[j] - a[i], R), codes) & (i != j) if i.size else np.zeros(0, bool)
    root = connected_components(n, i[hit], j[hit])
    smallest = np.full(n, n)
    np.minimum.at(smallest, root, np.arange(n))
    assert np.array_equal(got, smallest[root])


@pytest.mark.parametrize("d,eps", [(4, 2e-4), (5, 0.02), (6, 0.05), (8, 0.015), (3, 1e-5)])
def test_compiled_decoding_is_the_grid_s(d, eps):
    """Keys below and beyond 2^51 (the float products' limit): the compiled
    pass gives Grid.decode's coordinates, corners included."""
    g = Grid(np.zeros(d), np.ones(d), eps)
    assert not g.wide
    rng = np.random.default_rng(d)
    c = np.stack([rng.integers(0, s, 20_000) for s in g.shape], axis=1)
    c[:3] = np.array(g.shape) - 1
    c[3:6] = 0
    keys = g.encode(c)
    strides = np.array([g.key_delta(e) for e in np.eye(d, dtype=np.int64)], dtype=np.int64)
    got = pairs_module.decode_keys(keys, strides)
    assert np.array_equal(got, g.decode(keys))
    assert np.array_equal(got, c)


def _class_weights(rng, d, R):
    """Random weights of the cube of half-side R that are a function of the
    class of an offset (as the ball's kernels), some 0, and their
    :class:`OffsetWeights` by class."""
    cube = _cube_offsets(d, R)
    step = np.r_[0, (d + 1) ** np.arange(R)]
    cls = step[np.abs(cube)].sum(axis=1)
    per_class = rng.random(int(cls.max()) + 1) * (rng.random(int(cls.max()) + 1) < 0.7)
    codes = pairs_module.offset_codes(cube, R)
    w = per_class[cls]
    by_class = pairs_module.offset_classes(codes, w, R, d)
    assert by_class is not None
    return pairs_module.OffsetWeights(codes, w, R, d, 0, by_class)


@pytest.mark.parametrize(
    "d,eps,R",
    [(4, 2e-4, 2), (5, 0.02, 2), (6, 0.05, 3), (7, 0.03, 1), (8, 0.02, 2), (8, 0.015, 1), (3, 1e-5, 3)],
)
def test_an_index_from_keys_is_the_index_of_the_decoded_cells(d, eps, R):
    """CellIndex.from_keys (the keys decoded straight into packed lanes, the
    lanes alone laid out) lays the cells out as bucket_layout does their
    decoded coordinates (the same order, table and bucket bases; the
    coordinates unpacked from the lanes on demand), where every coordinate
    fits a lane, and declines where one does not (8-D at eps 0.015: 67
    cells an axis, lanes of 8 bits hold 0-63). Its self-join, point sums
    and scatter sums, which read the lanes alone (no coordinates unpacked),
    equal bit for bit those of the laid-out coordinates checked axis by
    axis (the walk without lanes)."""
    from dpdbscan.cells import pairkernels

    g = Grid(np.zeros(d), np.ones(d), eps)
    rng = np.random.default_rng(d)
    side = np.array(g.shape)
    # clusters of cells within reach of each other, and cells at the corners
    centres = np.stack([rng.integers(0, s, 300) for s in side], axis=1)
    c = np.clip(centres[rng.integers(0, 300, 6_000)] + rng.integers(-R, R + 1, (6_000, d)), 0, side - 1)
    c[:3] = side - 1
    c[3:6] = 0
    keys = np.unique(g.encode(c))
    strides = np.array([g.key_delta(e) for e in np.eye(d, dtype=np.int64)], dtype=np.int64)
    index = pairs_module.CellIndex.from_keys(keys, strides, R)
    bits = 64 // d
    if int(side.max()) - 1 >= 1 << (bits - 2):
        assert index is None
        return
    assert index is not None and index._coords is None
    coords = pairs_module.decode_keys(keys, strides)
    size = int(np.prod(index.nb))
    bucket = np.arange(index.tabled)[None, :] // index.sides[:, None]
    start, order, laid, col = pairkernels.bucket_layout(
        coords, index.axes, index.sides, bucket, index.strides, size
    )
    assert np.array_equal(index.start, start) and np.array_equal(index.order, order)
    assert np.array_equal(index.col, col)
    assert np.array_equal(index._packed, pairkernels.packed_lanes(laid, bits))
    weight = _class_weights(rng, d, R)
    vals = rng.exponential(4.0, keys.size)
    vals[rng.random(keys.size) < 0.2] = 0.0
    query = np.clip(coords[rng.integers(0, keys.size, 500)] + rng.integers(-R, R + 1, (500, d)), 0, side - 1)
    rows = rng.choice(keys.size, 50, replace=False)
    got = (
        index.half_sums(vals, R, weight),
        index.sums_at(query, vals, R, weight),
        index.scatter_sums(coords[rows], vals[rows], R, weight),
    )
    assert index._coords is None  # (the lanes alone were read)
    # the walk on the laid-out coordinates, axis by axis (no lanes)
    walk = index._walk(R)[4:]
    none, step, classes = np.zeros(0, np.int64), weight.step, weight.classes
    unlaned = np.zeros(0, np.uint64)
    laid_vals = vals[order]
    tab = (weight.table, weight.codes, weight.weights)
    half = pairkernels.half_sums(
        laid, np.zeros(keys.size, np.uint64), none, laid_vals, R, unlaned, *walk, *tab, weight.symmetric,
        step, classes, 0, keys.size,
    )  # fmt: skip
    half += laid_vals * weight.at_zero
    want_half = np.empty(keys.size)
    want_half[order] = half
    want_at = np.zeros(query.shape[0])
    pairkernels.query_sums(
        query, np.zeros(query.shape[0], np.uint64), none, laid, np.zeros(keys.size, np.uint64), none,
        laid_vals, R, unlaned, *walk, *tab, step, classes, 0, query.shape[0], want_at,
    )  # fmt: skip
    scattered = pairkernels.scatter_sums(
        coords[rows], np.zeros(rows.size, np.uint64), none, vals[rows], laid, np.zeros(keys.size, np.uint64),
        none, R, unlaned, *walk, *tab, step, classes, 0, rows.size,
    )  # fmt: skip
    want_scatter = np.empty(keys.size)
    want_scatter[order] = scattered
    for a, b in zip(got, (want_half, want_at, want_scatter)):
        assert np.array_equal(a.view(np.int64), b.view(np.int64))
    assert np.array_equal(index.coords, laid)  # (unpacked on demand)


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 40),
    n=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(ALL_D, R=3, side=40, n=300)
def test_the_packed_layout_is_the_coordinates_layout(d, R, side, n, seed):
    """packed_layout of cells' packed lanes gives bucket_layout's order,
    table and bucket bases of their coordinates, the lanes laid out as
    those coordinates are (unpacked_lanes gives them back), for any
    plan the cost model makes (the layout of a CellIndex built from
    coordinates that fit the lanes)."""
    from dpdbscan.cells import pairkernels

    bits = 64 // d
    h = 1 << (bits - 2)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, min(side, h), (n, d))
    index = pairs_module.CellIndex(a, R)
    assert index._coords is None  # (the lanes alone laid out)
    bucket = np.arange(index.tabled)[None, :] // index.sides[:, None]
    size = int(np.prod(index.nb))
    start, order, laid, col = pairkernels.bucket_layout(
        a, index.axes, index.sides, bucket, index.strides, size
    )
    assert np.array_equal(index.start, start) and np.array_equal(index.order, order)
    assert np.array_equal(index.col, col)
    assert np.array_equal(index._packed, pairkernels.packed_lanes(laid, bits))
    assert np.array_equal(index.coords, laid)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(2, 6), seed=st.integers(0, 2**32 - 1), integer=st.booleans(), held=st.booleans())
@at_each_d(range(2, 7), integer=lambda d: d % 2 == 1, held=lambda d: d % 2 == 0)
def test_kernel_sums_at_any_cell_weigh_each_offset(d, seed, integer, held):
    """The kernel sums walked per query cell (released or not, from the
    table of buckets a self-join left held or a new one) are sum_o w(o)
    x~_{q + o}, counted offset by offset."""
    from dpdbscan.post import sums as sums_mod

    rng, g, keys, vals, _ = _sparse_release(d, seed, integer)
    off, w = _random_kernel(rng, g)
    if off.shape[0] == 0:
        return
    n = int(rng.integers(1, 200))
    query = np.unique(
        np.concatenate(
            [
                keys[rng.random(keys.size) < 0.5],
                g.encode(np.stack([rng.integers(0, s, n) for s in g.shape], axis=1)),
            ]
        )
    )
    sums_mod._LAST_INDEX.clear()
    if held:
        with forced(True):
            sums_mod.reaching_sums(g, keys, vals, keys, (off, w))
    got = sums_mod.kernel_sums_at(g, keys, vals, query, (off, w))
    assert np.allclose(got, _kernel_oracle(g, keys, vals, query, off, w), rtol=1e-12, atol=1e-9)


def test_weights_table_only_where_the_lookups_pay_for_it():
    """The sums' joins table the weights of an 8-D reach-3 kernel (7^8
    codes, above the default limit) for the self-join of a release as
    sparse as issue 30's 8-D alpha 0.12 one (495k cells of 24^8), not for a
    few walks, whose binary searches cost less than building the table."""
    from dpdbscan.post import sums as sums_mod

    g = Grid(np.zeros(8), np.ones(8), 0.12)
    assert g.shape == (24,) * 8
    assert (7**8 > pairs_module.OffsetWeights.TABLE) and 7**8 <= sums_mod._WEIGHT_TABLE
    assert sums_mod._table_limit(g, 3, 495_382, 495_382) == sums_mod._WEIGHT_TABLE
    assert sums_mod._table_limit(g, 3, 495_382, 100) is None


def _cube_offsets(d, R):
    """Every offset of the cube of half-side R, in code order."""
    return np.array(np.meshgrid(*[np.arange(-R, R + 1)] * d, indexing="ij")).reshape(d, -1).T


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(1, 3),
    side=st.integers(1, 12),
    n=st.integers(1, 150),
    threads=st.sampled_from([1, 2]),
    skew=st.sampled_from([None, None, "weight", "offset", "zero-class"]),
    wide=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_weights_by_class_give_the_sums_by_code(d, R, side, n, threads, skew, wide, seed):
    """:func:`offset_classes` finds a table by class exactly when every
    offset of the cube weighs what its class's table says (the brute check
    over the cube; an offset left out weighs 0), and the joins' sums that
    look each pair's weight up by class (from the packed lanes, or the
    coordinates of cells too wide for them) equal bit for bit those that
    look it up by code, and the all-pairs oracle's up to rounding."""
    while (2 * R + 1) ** d > 1 << 15:
        R -= 1  # (a cube the brute check can list)
    rng = np.random.default_rng(seed)
    cube = _cube_offsets(d, R)
    step = np.r_[0, (d + 1) ** np.arange(R)]
    cls = step[np.abs(cube)].sum(axis=1)
    per_class = rng.random(int(cls.max()) + 1) * (rng.random(int(cls.max()) + 1) < 0.7)
    weights = per_class[cls]
    keep = weights != 0
    if skew == "weight":
        weights[int(rng.integers(0, weights.size))] += 0.25  # one offset weighs apart from its class
    if skew == "offset":
        keep[int(rng.integers(0, keep.size))] = False  # one offset left out (weighs 0)
    if skew == "zero-class":
        keep[int(rng.integers(0, keep.size))] = True  # an offset of weight 0 listed
    codes = pairs_module.offset_codes(cube[keep], R)
    w = weights[keep]
    full = np.zeros(cube.shape[0])
    full[keep] = w
    by_class = pairs_module.offset_classes(codes, w, R, d)
    table = np.zeros(int(cls.max()) + 1)
    table[cls] = full
    assert (by_class is not None) == bool(np.array_equal(table[cls], full))
    if by_class is None:
        return
    assert np.array_equal(by_class[1][cls], full)
    a = np.unique(rng.integers(0, side, (n, d)), axis=0)
    if wide:
        a += min(1 << (64 // d - 1), 1 << 40)  # beyond the packed lanes: the coordinates' path
    vals = rng.exponential(4.0, a.shape[0])
    plain = pairs_module.OffsetWeights(codes, w, R, d)
    fast = pairs_module.OffsetWeights(codes, w, R, d, 0, by_class)
    assert fast.at_zero == plain.at_zero and fast.table.size == 0
    index = pairs_module.CellIndex(a, R)
    got = index.half_sums(vals, R, fast, threads)
    assert np.array_equal(got, index.half_sums(vals, R, plain, threads))
    assert np.allclose(got, _weight_oracle(a, vals, R, codes, w), rtol=1e-12, atol=1e-12)
    q = a[rng.integers(0, a.shape[0], min(a.shape[0], 20))] + rng.integers(
        -R, R + 1, (min(a.shape[0], 20), d)
    )
    q = np.maximum(q, 0)
    assert np.array_equal(index.sums_at(q, vals, R, fast, threads), index.sums_at(q, vals, R, plain, threads))
    rows = rng.integers(0, a.shape[0], min(a.shape[0], 10))
    assert np.array_equal(
        index.scatter_sums(a[rows], vals[rows], R, fast, threads),
        index.scatter_sums(a[rows], vals[rows], R, plain, threads),
    )


@pytest.mark.parametrize("d,k", [(2, 2), (3, 2), (4, 2), (5, 2), (6, 1), (8, 1)])
def test_the_ball_kernels_weigh_by_class(d, k):
    """The density test's kernel (max over the sub-positions of the ball
    weights) and its inner part are functions of the multiset of |o_k|, so
    the joins take the table by class on them (the weights bit for bit)."""
    bw = ball_weights(d, 4.0, k)  # (the grids of issue 30: eta 4)
    R = int(np.abs(bw.offsets).max())
    codes = pairs_module.offset_codes(bw.offsets, R)
    by_class = pairs_module.offset_classes(codes, bw.kmax, R, d)
    assert by_class is not None
    step, table = by_class
    assert np.array_equal(table[step[np.abs(bw.offsets)].sum(axis=1)], bw.kmax)
    inner = np.abs(bw.offsets).max(axis=1) < R
    assert pairs_module.offset_classes(codes[inner], bw.kmax[inner], R, d) is not None


def _fit_both_weights(d, seed, units=None, **kw):
    """Fits (the pairs forced) with the joins' weights by class and by code
    only: the same spans and labels."""
    from dpdbscan.post import sums as sums_mod

    X = _blobs(d, 1500, seed)
    out = []
    for classes in (True, False):
        est = DPDBSCAN(random_state=seed, bounds=(0, 1), epsilon=1.0, **kw)
        with pytest.MonkeyPatch.context() as mp, forced(True), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not classes:
                mp.setattr(sums_mod, "offset_classes", lambda *a: None)
            mp.setattr(sums_mod, "_TABLES", {})  # (nothing held from the other way)
            est.fit(X, units=None if units is None else units(X))
            out.append((est.spans_, est.predict(X)))
    (a, pa), (b, pb) = out
    assert np.array_equal(a.core_keys, b.core_keys)
    assert np.array_equal(a.labels, b.labels)
    assert np.array_equal(pa, pb)


@pytest.mark.parametrize(
    "d,histogram,core,subcells",
    [
        (1, "sparse", "density", 2),
        (2, "dense", "density", 2),
        (3, "sparse", "bound", 1),
        (4, "sparse", "density", 2),
        # 5-D and 6-D: 5-19 s each on a loaded machine; make test-slow (7-D and 8-D stay)
        pytest.param(5, "sparse", "density", 1, marks=pytest.mark.slow),
        pytest.param(6, "dense", "density", 1, marks=pytest.mark.slow),
        (7, "sparse", "bound", 1),
        (8, "sparse", "density", 1),
    ],
)
def test_fits_are_the_same_with_weights_by_class_and_by_code(d, histogram, core, subcells):
    # 6-D dense at 0.2 took 37-57 s (the grid's every cell drawn); at 0.3 3 s, 820 core cells
    eps = {1: 0.02, 2: 0.05, 3: 0.08, 4: 0.12, 5: 0.15, 6: 0.3, 7: 0.25, 8: 0.3}[d]
    _fit_both_weights(d, 3, eps=eps, min_samples=10, histogram=histogram, core=core, subcells=subcells)


@pytest.mark.parametrize("d", [2, 5])
def test_person_level_fits_are_the_same_with_weights_by_class_and_by_code(d):
    _fit_both_weights(
        d,
        7,
        lambda X: np.arange(X.shape[0]) // 3,
        eps=0.05 if d == 2 else 0.2,
        min_samples=10,
        delta=1e-6,
        max_cells_per_unit=2,
        histogram="sparse",
    )


def _listed_half_sums(index, vals, R, weight, p0, p1):
    """:func:`pairkernels.half_sums` of an index's cells ``p0 : p1`` from the
    pairs listed first, in Python: for each cell p in layout order, the later
    cells q within R along every axis (coordinates compared axis by axis),
    in layout order (the walk's), each term added as the kernel adds it; in
    layout order."""
    sc = index.coords
    laid = np.asarray(vals, dtype=np.float64)[index.order]
    size = (2 * R + 1) ** sc.shape[1]
    sums = np.zeros(sc.shape[0])
    for p in range(p0, p1):
        later = np.arange(p + 1, sc.shape[0])
        later = later[(np.abs(sc[later] - sc[p]) <= R).all(axis=1)]
        forth = weight.of(pairs_module.offset_codes(sc[later] - sc[p], R))
        back = weight.of((size - 1) - pairs_module.offset_codes(sc[later] - sc[p], R))
        acc = 0.0
        for q, wf, wb in zip(later.tolist(), forth.tolist(), back.tolist()):
            acc += wf * laid[q]
            sums[q] += wb * laid[p]
        sums[p] += acc
    return sums


@SETTINGS
@given(
    d=st.integers(1, 8),
    R=st.integers(0, 3),
    side=st.integers(1, 12),
    n=st.integers(1, 150),
    how=st.sampled_from(["table", "searched", "classes", "skewed"]),
    signed=st.booleans(),
    split=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
@at_each_d(
    ALL_D,
    R=3,
    side=12,
    n=150,
    how=lambda d: ("table", "searched", "classes", "skewed")[d % 4],
    signed=lambda d: d % 2 == 0,
    split=0.5,
)
def test_the_packed_walk_sums_as_the_listed_pairs(d, R, side, n, how, signed, split, seed):
    """The self-join (each pair used where the walk finds it, on packed
    lanes where the coordinates fit them, terms of weight 0 skipped) gives
    the sums of the pairs listed first and checked axis by axis, bit for
    bit, for any range of cells:
    weights from a table, a search of the codes, by class or asymmetric
    (each way its own weight), signed values and weights of 0 included."""
    from dpdbscan.cells import pairkernels

    while (2 * R + 1) ** d > 1 << 15:
        R -= 1  # (a cube whose classes can be checked)
    rng = np.random.default_rng(seed)
    a = np.unique(rng.integers(0, side, (n, d)), axis=0)
    vals = rng.normal(0.0, 4.0, a.shape[0]) if signed else rng.exponential(4.0, a.shape[0])
    vals[rng.random(a.shape[0]) < 0.2] = 0.0
    cube = _cube_offsets(d, R)
    step = np.r_[0, (d + 1) ** np.arange(R)]
    cls = step[np.abs(cube)].sum(axis=1)
    per_class = rng.random(int(cls.max()) + 1) * (rng.random(int(cls.max()) + 1) < 0.6)
    weights = per_class[cls]
    if how == "skewed":
        weights = weights * (1.0 + (rng.random(weights.size) < 0.3))  # w(-o) != w(o) somewhere
    keep = (weights != 0) | (rng.random(weights.size) < 0.1)  # some listed offsets weigh 0
    codes = pairs_module.offset_codes(cube[keep], R)
    w = weights[keep]
    if how == "classes":
        by_class = pairs_module.offset_classes(codes, w, R, d)
        weight = pairs_module.OffsetWeights(codes, w, R, d, 0, by_class)
    else:
        weight = pairs_module.OffsetWeights(codes, w, R, d, 0 if how == "searched" else None)
    index = pairs_module.CellIndex(a, R)
    sc, pk, R, lanes, *walk = index._walk(R)
    assert lanes.size or 64 // d < 4 or max(int(a.max()), R) >= 1 << (64 // d - 2)
    lin = index.linear_codes(sc, R)
    laid = vals[index.order]
    cut = int(split * a.shape[0])
    unpacked = (np.zeros(sc.shape[0], np.uint64), lin, laid, R, np.zeros(0, np.uint64))  # axis by axis
    for p0, p1 in ((0, a.shape[0]), (0, cut), (cut, a.shape[0])):
        want = _listed_half_sums(index, vals, R, weight, p0, p1)
        for lanes_of in ((pk, lin, laid, R, lanes), unpacked):
            got = pairkernels.half_sums(
                sc, *lanes_of, *walk, weight.table, weight.codes, weight.weights,
                weight.symmetric, weight.step, weight.classes, p0, p1,
            )  # fmt: skip
            assert np.array_equal(got.view(np.int64), want.view(np.int64))
