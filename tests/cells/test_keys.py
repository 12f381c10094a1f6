"""Packed (wide) cell keys: the words keep the coordinates' order, the word
operations agree with numpy's on the packed bytes, and a release made with
packed keys is the release made with int64 keys, bit for bit."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdbscan import DPDBSCAN
from dpdbscan.cells import grid as grid_module
from dpdbscan.cells import keys as cell_keys
from dpdbscan.cells.grid import Grid, search_keys


def _random_coords(g: Grid, n: int, rng) -> np.ndarray:
    """Coordinates over the padded range, with shared prefixes and suffixes
    so that runs of equal leading words are long."""
    lo, hi = -g.reach, [s + g.reach for s in g.shape]
    c = np.stack([rng.integers(lo, h, n) for h in hi], axis=1)
    c[: n // 4, 1:] = c[0, 1:]
    c[n // 4 : n // 2, :-1] = c[0, :-1]
    return c


WIDE = [
    (np.full(3, -1e5), np.full(3, 1e5 + 1), 0.02),  # a fine 3-D grid: 3 x 25 bits
    (np.zeros(8), np.ones(8), 0.005),  # 8-D, 283 cells per side
    (np.zeros(10), np.full(10, 1e3), 6.0),  # the 1e30-cell universe of the noise tests
    (np.zeros(2), np.full(2, 1e18), 1.0),  # two axes of 60 bits: a coordinate split over two words
]


@pytest.mark.parametrize("lower,upper,alpha", WIDE)
def test_packed_keys_order_and_round_trip(lower, upper, alpha):
    g = Grid(lower, upper, alpha)
    assert g.wide and g.key_dtype.itemsize < 8 * g.d or g.d == 2
    rng = np.random.default_rng(0)
    c = _random_coords(g, 4000, rng)
    k = g.encode(c)
    assert np.array_equal(g.decode(k), c)
    lex = np.lexsort(c.T[::-1])
    # byte order (numpy's own sort of the void items) and word order are both lexicographic
    assert np.array_equal(c[np.argsort(k, kind="stable")], c[lex])
    assert np.array_equal(cell_keys.argsort(k), lex)


@pytest.mark.parametrize("lower,upper,alpha", WIDE)
def test_word_operations_equal_numpy_on_bytes(lower, upper, alpha):
    g = Grid(lower, upper, alpha)
    rng = np.random.default_rng(1)
    c = _random_coords(g, 3000, rng)
    k = g.encode(c)
    uniq, inv = cell_keys.unique(k)
    want_u, want_inv = np.unique(k, return_inverse=True)
    assert np.array_equal(uniq, want_u) and np.array_equal(inv, want_inv.ravel())
    q = g.encode(np.clip(np.concatenate([c, c + 1, c - 1]), -g.reach, None))
    assert np.array_equal(cell_keys.searchsorted(uniq, q), np.searchsorted(uniq, q))
    idx, hit = search_keys(uniq, q)
    assert np.array_equal(hit, uniq[idx] == q)
    starts = cell_keys.run_starts(np.sort(k))
    assert starts.size == uniq.size


@settings(max_examples=60, deadline=None)
@given(
    widths=st.lists(st.integers(1, 63), min_size=1, max_size=9),
    n=st.integers(0, 300),
    seed=st.integers(0, 2**32 - 1),
)
def test_packing_any_widths(widths, n, seed):
    """Any axis widths, coordinates at the ends of the ranges included."""
    limits = tuple(1 << b for b in widths)
    p = cell_keys.Packing.for_ranges(0, limits)
    rng = np.random.default_rng(seed)
    c = np.stack([rng.integers(0, v, n, dtype=np.int64, endpoint=False) for v in limits], axis=1).reshape(
        n, len(limits)
    )
    if n:
        c[0] = [v - 1 for v in limits]
        c[-1] = 0
    k = p.encode(c)
    assert np.array_equal(p.decode(k), c)
    lex = np.lexsort(c.T[::-1])
    assert np.array_equal(cell_keys.argsort(k), lex)
    assert np.array_equal(np.argsort(k, kind="stable"), lex)
    s = np.sort(k)
    assert np.array_equal(cell_keys.searchsorted(s, k), np.searchsorted(s, k))


def test_coordinates_beyond_the_padding_have_no_key():
    g = Grid(np.full(3, -1e5), np.full(3, 1e5 + 1), 0.02)
    bias = 2 * g.reach + 1
    edge = np.array([[-bias, 0, g.shape[2] + bias - 1]])
    assert np.array_equal(g.decode(g.encode(edge)), edge)
    with pytest.raises(ValueError, match="beyond the grid's padding"):
        g.encode(edge - [1, 0, 0])
    with pytest.raises(ValueError, match="beyond the grid's padding"):
        g.encode(edge + [0, 0, 1])


def _fit(X, alpha, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPDBSCAN(eps=alpha, min_samples=10, epsilon=1.0, bounds=(0, 1), random_state=3, **kw).fit(X)


def _release(m):
    h, s = m.histogram_, m.spans_
    g = h.grid
    rel = g.decode(h.released_keys) if h.kind != "dense" else None
    return g.wide, rel, h.values, s.grid.decode(s.core_keys), np.asarray(s.labels)


@pytest.mark.parametrize(
    "d,alpha,n,kw",
    [
        (3, 0.02, 4000, {}),
        (3, 0.03, 4000, {"subcells": 1, "core": "bound"}),
        # d = 8 (1.3M offsets) is left to the word tests above: the sparse
        # sums still take one lookup per offset on packed keys
        pytest.param(4, 0.06, 3000, {}, marks=pytest.mark.slow),  # 609 offsets: ~30 s
    ],
)
def test_same_release_with_packed_keys(monkeypatch, d, alpha, n, kw):
    """Grids that fit int64 keys, fitted again with every grid forced to
    packed keys: the same released cells, values, core cells and spans."""
    rng = np.random.default_rng(d)
    centres = rng.uniform(0.2, 0.8, size=(4, d))
    X = np.clip(centres[rng.integers(0, 4, n)] + rng.normal(0, 0.02, (n, d)), 0, 1)
    kw = {"histogram": "sparse", **kw}
    narrow = _release(_fit(X, alpha, **kw))
    monkeypatch.setattr(grid_module, "INT64_SAFE", 1)
    wide = _release(_fit(X, alpha, **kw))
    assert not narrow[0] and wide[0]
    assert narrow[3].shape[0] > 0, "the case should have core cells"
    for a, b in zip(narrow[1:], wide[1:]):
        assert np.array_equal(a, b)
