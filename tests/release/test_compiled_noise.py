"""The discrete Laplace sampler's compiled rounds (``compiled=True``,
``release/samplers/noiserounds.py``) against its numpy rounds, the oracle: the
same values from the same words, drawn in the same calls of the source, on
ordinary words and on words that force the rare paths (more than seven CKS
trials, rejected 16-bit words, long counts, "-0" redraws); and which dense
releases take them (public sizes)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.release.histograms.countnoise import DiscreteLaplace, compiled_noise, dense_noise, noise_at
from dpdbscan.release.samplers import integers as R


class _Recorded:
    """A seeded source that records the size of every call. With ``rare``,
    each 16-bit lane of a word is, with that probability, replaced by a
    word of a rare path: below 13 (K > 7 trials: :func:`R._cks_parity`),
    at least 13 * 7! (rejected: drawn again), or 0 (the first trials
    succeed: long counts)."""

    secure = False

    def __init__(self, seed: int, rare: float = 0.0) -> None:
        self._gen = np.random.default_rng(seed)
        self._rare = rare
        self.calls: list[int] = []
        self.rare_lanes = 0

    def raw(self, n: int) -> np.ndarray:
        self.calls.append(int(n))
        words = self._gen.bit_generator.random_raw(int(n)).astype(np.uint64, copy=False)
        if self._rare and n:
            lanes = words.view(np.uint16).copy()
            hit = self._gen.random(lanes.size) < self._rare
            self.rare_lanes += int(hit.sum())
            pick = np.array([0, 5, 12, R._EXP1_LIMIT, (1 << 16) - 1], dtype=np.uint16)
            lanes[hit] = pick[self._gen.integers(0, pick.size, int(hit.sum()))]
            words = lanes.view(np.uint64)
        return words


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 2), Fraction(2), Fraction(7, 10)])
@pytest.mark.parametrize("rare", [0.0, 0.05])
def test_compiled_rounds_draw_the_same_noise_from_the_same_words(eps, rare):
    for n in (0, 1, 2, 7, 64, 1000, 30_011):
        for seed in range(3):
            a, b = _Recorded(seed, rare), _Recorded(seed, rare)
            want = R.cks_discrete_laplace(a, n, eps)
            got = R.cks_discrete_laplace(b, n, eps, compiled=True)
            assert got.dtype == want.dtype == np.int64
            np.testing.assert_array_equal(got, want)
            assert b.calls == a.calls  # the same words, drawn in the same calls
            if rare and n >= 30_000:
                assert b.rare_lanes > 500  # the rare words were read


def test_compiled_geometric_count_is_the_numpy_count():
    for seed in range(3):
        a, b = _Recorded(seed, 0.02), _Recorded(seed, 0.02)
        want = R.geometric_exp_neg1(a, 50_000)
        got = R.geometric_exp_neg1(b, 50_000, compiled=True)
        np.testing.assert_array_equal(got, want)
        assert b.calls == a.calls


def _grid(d: int, side: int) -> Grid:
    """A d-dimensional grid of ``side`` cells of width 1 per axis."""
    width = 1.0
    eps = width * 4 * np.sqrt(d) / 4.0
    return Grid([0.0] * d, [side - 0.5] * d, eps, eta=4.0)


def test_which_dense_releases_take_the_compiled_rounds():
    assert compiled_noise(_grid(4, 32))  # 2^20 cells
    assert not compiled_noise(_grid(4, 31))
    assert compiled_noise(_grid(3, 128))  # 2^21 cells
    assert not compiled_noise(_grid(3, 127))
    assert not compiled_noise(_grid(2, 2048))  # a 2-D release never loads numba


@pytest.mark.parametrize("kind,scale", [("discrete", 1.0), ("discrete", 0.5), ("gaussian", 2.0)])
def test_dense_noise_is_the_noise_of_every_cell(kind, scale):
    grid = _grid(4, 32)
    assert grid.n_cells == 1 << 20
    noise = noise_at(kind, scale)
    want = noise.sample(R.SeededSource(5), grid.n_cells)
    got = dense_noise(noise, R.SeededSource(5), grid)
    np.testing.assert_array_equal(got, want)
    assert isinstance(noise, DiscreteLaplace) == (kind == "discrete")
