"""Neighbour sums of a released histogram (post-processing)."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.post.sums import dense_neighbour_sums, sparse_neighbour_sums


def _grid(alpha):
    return Grid([0.0, 0.0], [1.0, 1.0], alpha)


def test_dense_neighbour_sums_equal_direct_sum():
    g = Grid([0, 0, 0], [1, 1, 1], 0.3)
    vals = np.random.default_rng(1).integers(-3, 10, g.shape)
    S = dense_neighbour_sums(g, vals)
    for c in [(0, 0, 0), (1, 2, 3), tuple(s - 1 for s in g.shape), (2, 0, 4)]:
        direct = 0
        for o in g.offsets:
            t = np.array(c) + o
            if np.all(t >= 0) and np.all(t < g.shape):
                direct += vals[tuple(t)]
        assert S[c] == direct


def test_sparse_neighbour_sums_equal_dense():
    g = _grid(0.05)
    rng = np.random.default_rng(2)
    vals = np.where(rng.random(g.shape) < 0.3, rng.integers(1, 20, g.shape), 0)
    S = dense_neighbour_sums(g, vals)
    coords = np.argwhere(vals != 0)
    keys = g.encode(coords)
    q = g.encode(g.all_coords())
    s = sparse_neighbour_sums(g, keys, vals[vals != 0], q)
    assert np.array_equal(s, S.ravel())


def test_dense_candidates_boundaries():
    from dpdbscan.post.sums import dense_candidates

    g = Grid(np.zeros(2), np.ones(2), 0.1)
    vals = np.zeros(g.shape, dtype=np.int64)
    vals[0, 0] = 50  # a corner: its NB is clipped by the box
    cand = dense_candidates(g, vals, 100.0, 2)  # cut = 50
    nb = g.offsets
    expect = np.array([o for o in nb if (o >= 0).all() and (o < g.shape).all()])
    assert np.array_equal(g.decode(cand), expect[np.lexsort(expect.T[::-1])])
    assert dense_candidates(g, vals, 101.0, 2).size == 0  # 50 * 2 < 101
    assert dense_candidates(g, vals, 0.0, 2) is None


@pytest.mark.parametrize("d", [5, 6, 8])
def test_kernel_shells_are_the_kernel_split_at_its_reach_and_held(d):
    """The inner part (Chebyshev radius < R) and the shell (radius R) of the
    ball weights' kernel, row for row as slicing it gives them, read-only,
    and the very same arrays at the next fit (so the joins' offset codes
    and classes are held with them); a writable kernel is split afresh."""
    from dpdbscan.post.coretests.density.weights import ball_weights
    from dpdbscan.post.sums import chebyshev_radii, kernel_shells

    w = ball_weights(d, 4.0 if d < 8 else 8.0, 1)
    off, k = w.offsets, w.kmax
    parts = kernel_shells(off, k)
    cheb = np.abs(off).max(axis=1)
    R = int(cheb.max())
    want = (off[cheb < R], k[cheb < R], off[cheb == R], k[cheb == R])
    for got, exp in zip(parts, want):
        np.testing.assert_array_equal(got, exp)
        assert got.dtype == exp.dtype and not got.flags.writeable
    assert parts[0].shape[0] + parts[2].shape[0] == off.shape[0] and parts[2].shape[0] > 0
    again = kernel_shells(off, k)
    assert all(a is b for a, b in zip(parts, again))
    assert np.array_equal(chebyshev_radii(parts[2]), np.full(parts[2].shape[0], R))
    fresh = kernel_shells(off.copy(), k.copy())  # writable: not held
    assert all(a is not b and np.array_equal(a, b) for a, b in zip(parts, fresh))
