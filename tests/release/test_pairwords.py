"""The bucketed 32-bit sort of (unit, cell) words against sorting the 64-bit words."""

import numpy as np
import pytest

from dpdbscan.release.bounding import run_length
from dpdbscan.release.pairwords import bucket_bits, pair_runs


def _by_int64_sort(codes, keys, space):
    first, counts = run_length(np.sort(codes * space + keys))
    units, cells = np.divmod(first, space)
    return units, cells, counts


@pytest.mark.parametrize("seed", range(12))
def test_pair_runs_equal_the_sorted_int64_words(seed):
    rng = np.random.default_rng(seed)
    n_units = int(rng.integers(1, 5_000))
    space = int(rng.integers(1, 300_000))
    n = int(rng.integers(0, 40_000))
    codes = rng.integers(0, n_units, n)
    keys = rng.integers(0, min(space, int(rng.integers(1, 50)) if seed % 2 else space), n)
    if seed % 3 == 0 and n:  # many rows in few pairs: long runs, runs that end a bucket
        codes[: n // 2] = codes[0]
        keys[: n // 2] = keys[0]
    want = _by_int64_sort(codes, keys, space)
    before = codes.copy(), keys.copy()
    most = (2**32 // space).bit_length() - 1
    # the default buckets, and forced small buckets and chunks (many buckets,
    # uint16 bucket numbers, rows of one bucket split over chunks)
    for bits, chunk, threads in ((None, 1 << 20, None), (0, 1_000, 2), (min(3, most), 777, 1)):
        got = pair_runs(codes, keys, n_units, space, chunk=chunk, bits=bits, threads=threads)
        assert got is not None
        for g, w, name in zip(got, want, ("units", "cells", "counts")):
            assert g.dtype == np.int64, name
            assert np.array_equal(g, w), (name, bits, chunk)
    assert np.array_equal(codes, before[0]) and np.array_equal(keys, before[1])


def test_equal_words_of_neighbouring_buckets_are_two_pairs():
    # unit 0's last word and unit 1's first word are both 5 with one unit per bucket
    codes = np.array([0, 0, 1, 1, 1])
    keys = np.array([5, 5, 5, 7, 5])
    units, cells, counts = pair_runs(codes, keys, 2, 10, bits=0, chunk=2)
    assert units.tolist() == [0, 1, 1] and cells.tolist() == [5, 5, 7] and counts.tolist() == [2, 2, 1]


def test_bucket_bits_keep_words_within_32_bits_or_decline():
    bits = bucket_bits(1_000_000, 708 * 708)
    assert bits is not None and (1 << bits) * 708 * 708 <= 2**32 and (1 << (bits + 1)) * 708 * 708 > 2**32
    assert bucket_bits(3, 10) == 2  # no more units per bucket than there are units
    assert bucket_bits(1, 10) == 0
    assert bucket_bits(10, 2**33) is None  # one unit's cells do not fit 32 bits
    assert bucket_bits(2**40, 2**20) is None  # too many buckets
    with pytest.raises(ValueError):
        pair_runs(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), 1, 2**31, bits=2)


@pytest.mark.parametrize("seed", range(6))
def test_sorted_in_groups_equals_one_sort(seed):
    from dpdbscan.release.pairwords import sorted_in_groups

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 60, int(rng.integers(1, 3_000)))
    group = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    words = (group << 40) | rng.integers(0, 2**40, group.size)
    if seed % 2:  # equal words within groups
        words &= ~np.int64(2**40 - 8)
    for block in (1, 7, 64, 1 << 16):
        got = sorted_in_groups(words, sizes, block=block)
        assert np.array_equal(got, np.sort(words)), block
    assert seed % 2 or sizes.max() == 1 or not np.array_equal(words, np.sort(words))  # not sorted already


def test_rows_with_a_non_finite_coordinate_are_dropped_from_the_pairs():
    from dpdbscan import Grid
    from dpdbscan.release.bounding import BoundingKey, _all_finite, pairs_of
    from dpdbscan.release.samplers.integers import SeededSource

    rng = np.random.default_rng(3)
    X = rng.random((5_000, 2)) * 1.2 - 0.1  # some outside the box: clipped
    units = rng.integers(0, 900, len(X))
    bad = np.array([7, 4_000])
    Xbad = X.copy()
    Xbad[bad[0], 1], Xbad[bad[1], 0] = np.nan, -np.inf
    assert _all_finite(X) and not _all_finite(Xbad) and not _all_finite(Xbad[:, ::-1])
    grid = Grid(np.zeros(2), np.ones(2), 0.01, 4.0)
    key = BoundingKey.draw(SeededSource(1))
    ok = np.ones(len(X), dtype=bool)
    ok[bad] = False
    got, want = pairs_of(grid, Xbad, units, key), pairs_of(grid, X[ok], units[ok], key)
    for field in ("units", "keys", "counts"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
