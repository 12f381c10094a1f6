"""A dense release's noise drawn before the points are read
(:class:`dpdbscan.release.mechanism.NoiseAhead`) gives the release drawn
without it, bit for bit, is used once, and only for the release it was drawn for."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.plan.resolve import release_spec, validated
from dpdbscan.release.backends import NumpyBackend
from dpdbscan.release.mechanism import NoiseAhead, release_histogram

GRID = Grid(np.zeros(2), np.full(2, 60.0), 0.5, 4.0)  # 240 x 240 cells: the threaded path too


def _spec(epsilon: float = 1.0):
    p = validated({"eps": 0.5, "min_samples": 5, "epsilon": epsilon, "histogram": "dense"})
    return release_spec(p, GRID)


def _points():
    return np.random.default_rng(0).normal(30.0, 5.0, (20_000, 2))


@pytest.mark.parametrize("seed", [7, 123456789])
def test_noise_drawn_ahead_gives_the_release_drawn_after(seed):
    spec, X = _spec(), _points()
    want = release_histogram(spec, X, backend=NumpyBackend(), random_state=seed)
    ahead = NoiseAhead(spec, seed)
    got = release_histogram(spec, X, backend=NumpyBackend(), random_state=seed, ahead=ahead)
    assert got.values.dtype == want.values.dtype
    np.testing.assert_array_equal(got.values, want.values)
    assert ahead.take(spec, seed) is None  # used once


def test_noise_drawn_for_another_release_is_not_used():
    spec, X = _spec(), _points()
    for ahead, seed in (
        (NoiseAhead(spec, 1), 2),  # another seed
        (NoiseAhead(_spec(0.5), 1), 1),  # another noise
        (NoiseAhead(replace(spec, grid=Grid(np.zeros(2), np.full(2, 30.0), 0.5, 4.0)), 1), 1),
    ):
        got = release_histogram(spec, X, backend=NumpyBackend(), random_state=seed, ahead=ahead)
        want = release_histogram(spec, X, backend=NumpyBackend(), random_state=seed)
        np.testing.assert_array_equal(got.values, want.values)


def test_secure_noise_ahead_is_drawn_and_a_generator_is_refused():
    spec = _spec()
    z = NoiseAhead(spec, None).take(spec, None)
    assert z is not None and z.shape == (GRID.n_cells,) and np.count_nonzero(z) > 0
    with pytest.raises(TypeError):
        NoiseAhead(spec, np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        NoiseAhead(spec, True)
