"""The sparse release's empty cells through compiled steps
(``countnoise.compiled_tail``): the geometric gaps' digits
(``noiserounds.digit_outcomes``), the positions they give
(``noiserounds.gap_positions``) and the tail values, against straightforward
oracles: the count of thresholds below each word, the running sums of the
gaps, and the numpy steps on the same words (drawn in the same calls). And
the secure source's chunked, two-thread reads."""

from __future__ import annotations

import os
import threading
from fractions import Fraction

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.release.histograms import sparse as S
from dpdbscan.release.histograms.countnoise import compiled_tail, noise_at, tail_values
from dpdbscan.release.samplers import integers as R
from dpdbscan.release.samplers import skipping as B
from dpdbscan.release.samplers.noiserounds import gap_positions


class _Recorded:
    """A seeded source that records the size of every call."""

    secure = False

    def __init__(self, seed: int) -> None:
        self._gen = np.random.default_rng(seed)
        self.calls: list[int] = []

    def raw(self, n: int) -> np.ndarray:
        self.calls.append(int(n))
        return self._gen.bit_generator.random_raw(int(n)).astype(np.uint64, copy=False)


TAILS = [
    B.TailProbability.discrete(Fraction(1), 0.0),  # p = 0.73
    B.TailProbability.discrete(Fraction(1), 3.0),  # the 4-D benchmark's
    B.TailProbability.discrete(Fraction(7, 10), 20.0),
    B.TailProbability.discrete(Fraction(1), 40.0),  # p ~ 3e-18
    B.TailProbability.continuous(0.5, 6.0),
]


@pytest.mark.parametrize("fast_bits", [3, 8, 32])
@pytest.mark.parametrize("top", [True, False])
@pytest.mark.parametrize("tail", TAILS[1:3])
def test_a_compiled_digit_is_the_count_of_thresholds_below_its_word(fast_bits, top, tail, monkeypatch):
    """D = #{l : T_l < R} for each word's prefix R, the ties (R equal to
    the threshold T_D) finished by the slow path in index order: the
    oracle counts straight, by a search of the whole table."""
    monkeypatch.setattr(B, "FAST_BITS", fast_bits)
    digit = B._Digit(tail, 0, 8, top)
    n = 5000
    words = R.SeededSource(11).raw((n + 1) // 2).view(np.uint32)[:n].astype(np.uint64)
    prefix = words >> np.uint64(32 - fast_bits)
    T = digit.fast
    want = np.searchsorted(T, prefix, side="left").astype(np.int64)
    tie = np.flatnonzero((want < T.size) & (T[np.minimum(want, T.size - 1)] == prefix))
    assert fast_bits == 32 or tie.size > 0  # (the small tables tie)
    after = R.SeededSource(11)
    after.raw((n + 1) // 2)  # the fast digits' words, then the slow path's
    for i in tie:
        want[i] = digit._resolve(after, int(prefix[i]), int(want[i]))
    src = _Recorded(11)
    got = digit.sample(src, n, compiled=True)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    plain = _Recorded(11)
    np.testing.assert_array_equal(digit.sample(plain, n), want)
    assert src.calls == plain.calls


def test_gap_positions_are_the_running_sums_up_to_the_last_trial():
    """``last + cumsum(g + 1)`` in Python integers, cut before the first
    position >= n_trials, for gaps up to the cap 2^62 (no overflow)."""
    rng = np.random.default_rng(3)
    big = 1 << 62
    for n_trials, last, gaps in [
        (10, -1, [0, 0, 3, 2, 1, 9]),
        (10, -1, [9]),
        (10, -1, [10]),
        (10, 4, [4]),
        (10, 4, [5]),
        (1, -1, [0, 0]),
        (big, -1, [big, 1]),
        (big, -1, [big - 1, 0]),
        (big, -1, [big - 2, 0, 0]),
        (big, 17, list(rng.integers(0, big // 3, 5))),
        (1000, -1, list(rng.integers(0, 40, 100))),
        (1000, 500, []),
    ]:
        g = np.asarray(gaps, dtype=np.int64)
        want, x = [], last
        for v in gaps:
            x += int(v) + 1
            if x >= n_trials:
                break
            want.append(x)
        got = gap_positions(g, last, n_trials)
        assert got.dtype == np.int64
        assert got.tolist() == want


@pytest.mark.parametrize(
    "tail,n_trials",
    [
        (tail, n)
        for tail in TAILS
        for n in (1, 2, 17, 5000, 67**4, 1 << 40, 1 << 62)
        if float(tail) * n <= 3e6  # (successes a unit test can hold)
    ],
)
def test_compiled_gaps_give_the_same_positions_from_the_same_words(tail, n_trials):
    for seed in range(3):
        a, b = _Recorded(seed), _Recorded(seed)
        want = B.bernoulli_positions(a, n_trials, tail)
        got = B.bernoulli_positions(b, n_trials, tail, compiled=True)
        np.testing.assert_array_equal(got, want)
        assert b.calls == a.calls
        assert got.size == 0 or (got[0] >= 0 and got[-1] < n_trials and np.all(np.diff(got) > 0))


def test_compiled_gaps_beyond_two_to_the_62_are_python_ints_as_before():
    """Above 2^62 trials the positions are Python ints (the numpy steps,
    whatever ``compiled`` says)."""
    tail = TAILS[3]
    a, b = _Recorded(1), _Recorded(1)
    want = B.bernoulli_positions(a, 1 << 70, tail)
    got = B.bernoulli_positions(b, 1 << 70, tail, compiled=True)
    assert isinstance(got, list) and got == want and len(got) > 0


@pytest.mark.parametrize(
    "kind,scale", [("discrete", 1.0), ("discrete", 0.7), ("laplace", 1.0), ("gaussian", 2.0)]
)
def test_compiled_tail_values_are_the_numpy_values(kind, scale):
    noise = noise_at(kind, scale)
    for theta in (0.0, 3.0, 12.5):
        a, b = _Recorded(4), _Recorded(4)
        want = noise.sample_tail(a, 40_000, theta)
        got = tail_values(noise, b, 40_000, theta, True)
        np.testing.assert_array_equal(got, want)
        assert b.calls == a.calls


def _grid(d: int, side: int) -> Grid:
    """A d-dimensional grid of ``side`` cells of width 1 per axis."""
    return Grid([0.0] * d, [side - 0.5] * d, np.sqrt(d), eta=4.0)


def test_which_sparse_releases_take_the_compiled_steps():
    noise = noise_at("discrete", 1.0)
    p3 = noise.tail(3.0)
    assert compiled_tail(_grid(4, 67), noise, 3.0)  # the 4-D benchmark: 737k expected cells
    assert not compiled_tail(_grid(4, 20), noise, 3.0)  # 160k cells, 5.9k expected
    assert _grid(4, 20).n_cells * p3 < 1 << 16
    assert not compiled_tail(_grid(3, 300), noise, 3.0)  # 3-D never
    assert not compiled_tail(_grid(2, 5000), noise, 3.0)  # a 2-D release never loads numba
    assert not compiled_tail(_grid(4, 67), noise, -1.0)


@pytest.mark.parametrize(
    "kind,scale,theta", [("discrete", 1.0, 3.0), ("discrete", 0.5, 8.0), ("gaussian", 2.0, 4.0)]
)
def test_a_sparse_release_is_the_same_through_the_compiled_steps(kind, scale, theta, monkeypatch):
    """The whole sparse histogram on a 4-D universe of 20M cells, with and
    without the compiled steps (the public gate moved out of reach): the
    same keys and values from the same seed."""
    grid = _grid(4, 67)
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 66.5, size=(20_000, 4))
    from dpdbscan.release.backends.numpy_backend import NumpyBackend

    cells = NumpyBackend().count(grid, X)
    noise = noise_at(kind, scale)
    monkeypatch.setattr("dpdbscan.release.histograms.countnoise.COMPILED_TAIL_CELLS", 1)
    assert compiled_tail(grid, noise, theta)
    got = S.sparse_histogram(grid, cells, noise, R.SeededSource(9), theta, 1.0, 0.0)
    monkeypatch.setattr("dpdbscan.release.histograms.countnoise.COMPILED_TAIL_CELLS", float("inf"))
    assert not compiled_tail(grid, noise, theta)
    want = S.sparse_histogram(grid, cells, noise, R.SeededSource(9), theta, 1.0, 0.0)
    assert want.keys.size > 1000
    np.testing.assert_array_equal(got.keys, want.keys)
    np.testing.assert_array_equal(got.values, want.values)


@pytest.mark.parametrize("n", [1, 2, 9, (1 << 15) + 3, 100_001])
def test_the_secure_source_fills_every_word_from_the_os(n, monkeypatch):
    """Every byte of a draw comes from ``os.urandom`` (one read per chunk,
    the two halves of a large draw on two threads), each byte once: a
    stand-in that hands out its calls' bytes 1, 2, ... shows every byte
    written and the bytes read add up to the draw."""
    monkeypatch.setattr(R, "SECURE_THREADED_WORDS", 64)
    monkeypatch.setattr(R, "SECURE_CHUNK", 4096)
    lock = threading.Lock()
    asked: list[int] = []

    def fake(m: int) -> bytes:
        with lock:
            asked.append(m)
            mark = 1 + len(asked) % 250
        return bytes([mark]) * m

    monkeypatch.setattr(os, "urandom", fake)
    words = R.SecureSource().raw(n)
    assert words.dtype == np.uint64 and words.shape == (n,) and words.flags.writeable
    assert sum(asked) == 8 * n and max(asked) <= 4096
    assert np.all(words.view(np.uint8) > 0)  # (np.empty's bytes replaced)
    if n >= 64 and R._two_cores():
        assert len(set(words.view(np.uint8).tolist())) >= 2


def test_a_failed_read_on_the_second_thread_is_raised(monkeypatch):
    monkeypatch.setattr(R, "SECURE_THREADED_WORDS", 64)
    monkeypatch.setattr(R, "_two_cores", lambda: True)
    main = threading.main_thread()

    def fake(m: int) -> bytes:
        if threading.current_thread() is not main:
            raise OSError("no entropy here")
        return b"\1" * m

    monkeypatch.setattr(os, "urandom", fake)
    with pytest.raises(OSError, match="no entropy"):
        R.SecureSource().raw(1000)


@pytest.mark.parametrize("openssl", [True, False], ids=["OpenSSL", "os.urandom on two threads"])
def test_secure_words_are_fair_bits(openssl, monkeypatch):
    """The bits of a large draw (from OpenSSL's generator, or without it
    from ``os.urandom`` on two threads) are fair: the count of ones among
    2^25 bits within an exact binomial interval at rate 1e-7."""
    from scipy import stats

    if not openssl:
        monkeypatch.setattr(R, "_openssl_bytes", lambda: None)
    words = R.SecureSource().raw(1 << 19)
    ones = int(np.unpackbits(words.view(np.uint8)).sum())
    lo, hi = stats.binom.interval(1 - 1e-7, 64 << 19, 0.5)
    assert lo <= ones <= hi
    # the halves are not one read twice
    assert not np.array_equal(words[: 1 << 18], words[1 << 18 :])


@pytest.mark.parametrize("d,side", [(1, 50), (2, 9), (4, 13), (6, 5), (8, 4)])
def test_empty_cell_keys_are_the_keys_of_the_positions_not_occupied(d, side):
    """The keys of the positions (the grid's own formula), less the occupied
    ones: a set difference taken straight."""
    from dpdbscan.release.samplers.noiserounds import empty_cell_keys

    grid = _grid(d, side)
    rng = np.random.default_rng(d)
    strides = np.array([grid.key_delta(e) for e in np.eye(d, dtype=np.int64)], dtype=np.int64)
    shape = np.asarray(grid.shape, dtype=np.int64)
    for share, occ_share in ((0.3, 0.2), (1.0, 0.0), (0.05, 1.0), (0.0, 0.5), (1.0, 1.0)):
        positions = np.flatnonzero(rng.random(grid.n_cells) < share).astype(np.int64)
        occupied = np.sort(grid.keys_of_positions(np.flatnonzero(rng.random(grid.n_cells) < occ_share)))
        keys = grid.keys_of_positions(positions)
        want = keys[~np.isin(keys, occupied)]
        got = empty_cell_keys(positions, shape, strides, grid.reach, occupied)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(grid.decode(got), grid.decode(want))


@pytest.mark.parametrize("d,side", [(5, 56), (6, 49), (8, 24), (8, 90)])
def test_empty_cell_keys_of_sparse_positions_on_large_grids(d, side):
    """Gaps of many rows (a sparse release's empty cells: tens of thousands
    of cells apart in 6-D, quotients by a float product and one
    correction), and positions beyond 2^51 (8-D, 90 per side: integer
    division there): the grid's own keys, less the occupied ones."""
    from dpdbscan.release.samplers.noiserounds import empty_cell_keys

    grid = _grid(d, side)
    rng = np.random.default_rng(side)
    strides = np.array([grid.key_delta(e) for e in np.eye(d, dtype=np.int64)], dtype=np.int64)
    shape = np.asarray(grid.shape, dtype=np.int64)
    positions = np.unique(rng.integers(0, grid.n_cells, 20_000, dtype=np.int64))
    # runs of neighbours too (gaps of 1 and 2), and the last cell
    positions = np.unique(
        np.concatenate([positions, positions[:50] + 1, positions[:50] + 2, [grid.n_cells - 1]])
    )
    positions = positions[positions < grid.n_cells]
    assert (grid.n_cells > 1 << 51) == (side == 90)
    occupied = np.sort(grid.keys_of_positions(positions[::7]))
    keys = grid.keys_of_positions(positions)
    want = keys[~np.isin(keys, occupied)]
    got = empty_cell_keys(positions, shape, strides, grid.reach, occupied)
    np.testing.assert_array_equal(got, want)


def test_merge_disjoint_is_a_sort_of_both_lists():
    from dpdbscan.release.samplers.noiserounds import merge_disjoint

    rng = np.random.default_rng(0)
    for na, nb in ((0, 0), (0, 5), (7, 0), (1, 1), (300, 20), (20, 300), (1000, 1000)):
        keys = rng.choice(10 * (na + nb) + 1, size=na + nb, replace=False).astype(np.int64)
        a, b = np.sort(keys[:na]), np.sort(keys[na:])
        for dtype in (np.int64, np.float64):
            va = rng.integers(-50, 50, na).astype(dtype)
            vb = rng.integers(-50, 50, nb).astype(dtype)
            order = np.argsort(np.concatenate([a, b]))
            got_k, got_v = merge_disjoint(a, va, b, vb)
            np.testing.assert_array_equal(got_k, np.concatenate([a, b])[order])
            np.testing.assert_array_equal(got_v, np.concatenate([va, vb])[order])
            assert got_v.dtype == dtype
