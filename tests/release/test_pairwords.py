"""The bucketed 32-bit sort of (unit, cell) words against sorting the 64-bit words."""

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
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


@pytest.mark.parametrize("seed", range(8))
def test_a_bucket_sorted_in_parts_is_one_sort_of_it(seed):
    from dpdbscan.release.pairwords import _sorted_bucket

    rng = np.random.default_rng(300 + seed)
    space = int(2 ** rng.integers(0, 24)) if seed % 2 else int(rng.integers(1, 2**20))
    top = (2**32 // space).bit_length() - 1  # 2**top * space <= 2**32, up to equality
    bits = top if seed < 4 else int(rng.integers(0, top + 1))
    n = int(rng.integers(1 << 14, 1 << 17))
    units = rng.integers(0, 2**bits, n)
    units[: n // 3] = units[0]  # one busy unit: a part far above the others
    words = (units * space + rng.integers(0, space, n)).astype(np.uint32)
    for size in (n, 10, 0):
        got = _sorted_bucket(words[:size].copy(), space, bits)
        assert np.array_equal(got, np.sort(words[:size])), (space, bits, size)


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


@pytest.mark.parametrize("seed", range(4))
def test_words_bucketed_a_chunk_of_keys_at_a_time_give_the_sorted_pairs(seed):
    from dpdbscan.release.pairwords import bucketed

    rng = np.random.default_rng(100 + seed)
    n_units, space = int(rng.integers(1, 3_000)), int(rng.integers(1, 5_000))
    codes = rng.integers(0, n_units, int(rng.integers(1, 20_000)))
    keys = rng.integers(0, space, codes.size)
    keys[1::4] = keys[::4][: keys[1::4].size]  # repeated pairs
    want = _by_int64_sort(codes, keys, space)
    top = (2**32 // space).bit_length() - 1
    asked = []

    def keys_of(a, b):
        asked.append((a, b))
        return keys[a:b]

    for bits in sorted({0, min(2, top), top}):  # up to thousands of buckets (a scatter, not slices)
        # one row per chunk only on small inputs (each chunk is a Python call)
        for chunk in (1 if codes.size < 3_000 else 97, 333, 1 << 20):
            asked.clear()
            made = bucketed(codes, keys_of, n_units, space, bits, chunk=chunk, threads=1)
            assert made is not None
            assert asked == [(a, min(a + chunk, codes.size)) for a in range(0, codes.size, chunk)]
            for threads in (1, 2):
                asked.clear()
                again = bucketed(codes, keys_of, n_units, space, bits, chunk=chunk, threads=threads)
                assert sorted(asked) == [(a, min(a + chunk, codes.size)) for a in range(0, codes.size, chunk)]
                assert np.array_equal(again.words, made.words)  # the same places, in any order of the chunks
                for g, w in zip(again.pairs(threads), want):
                    assert np.array_equal(g, w), (bits, chunk, threads)
            # the rows' codes and keys read back, bucket by bucket
            c, k = made.codes_and_keys()
            assert np.array_equal(np.sort(c * space + k), np.sort(codes * space + keys))
            assert np.array_equal(c >> bits, np.sort(codes >> bits)), (bits, chunk)  # bucket by bucket
    # keys_of giving up (a non-finite point in some chunk): no words at all
    for threads in (1, 2):
        gives_up = lambda a, b: None if b > 5 else keys[a:b]  # noqa: E731
        assert bucketed(codes, gives_up, n_units, space, 0, chunk=5, threads=threads) is None


def _reference_pairs(grid, X, units, key):
    """The pairs by the rows' whole key array and summed_pairs' table or sort."""
    from dpdbscan.release.bounding import factorize, kept_keys, summed_pairs

    codes, uniques = factorize(units)
    keep, keys = kept_keys(grid, X, codes >= 0)
    return summed_pairs(grid, codes[keep], keys, None, uniques, key)


@pytest.mark.parametrize("corner", [1.0, 0.3])
def test_pairs_made_a_chunk_of_keys_at_a_time_equal_the_whole_key_array(corner, monkeypatch):
    # 8,000 units x 20,164 cells: too many for a table of (unit, cell), so
    # the keys are made chunk by chunk; spread over the box the words are
    # sorted in buckets, in a corner (~1,800 occupied cells) the table of
    # occupied cells takes them. Either way the pairs of the whole key array.
    from dpdbscan.release import bounding
    from dpdbscan.release.bounding import BoundingKey, _row_pairs_of_points, factorize, pairs_of
    from dpdbscan.release.samplers.integers import SeededSource

    rng = np.random.default_rng(21)
    X = rng.random((40_000, 2)) * corner
    X[1::3] = X[::3][: len(X[1::3])]  # repeated cells within and across units
    X[5] = [2.0, -1.0]  # clipped into the box
    units = rng.integers(0, 8_000, len(X)) * 3 - 100
    grid = Grid(np.zeros(2), np.ones(2), 0.01, 4.0)
    key = BoundingKey.draw(SeededSource(4))
    want = _reference_pairs(grid, X, units, key)
    codes, uniques = factorize(units)
    tables = []
    real = bounding.summed_pairs
    monkeypatch.setattr(bounding, "summed_pairs", lambda *a: tables.append(1) or real(*a))
    got = [pairs_of(grid, X, units, key)]
    for chunk, bits in ((1_000, 0), (777, 3), (1 << 20, None)):
        got.append(_row_pairs_of_points(grid, X, codes, uniques, key, chunk=chunk, bits=bits))
    real_bucketed = bounding.bucketed
    # the chunks on two threads: the same choice of path, the same pairs
    monkeypatch.setattr(bounding, "bucketed", lambda *a, **k: real_bucketed(*a, **k, threads=2))
    got.append(_row_pairs_of_points(grid, X, codes, uniques, key, chunk=500))
    assert len(tables) == (5 if corner < 1 else 0)  # the occupied cells' table, or the sorted words
    assert want.units.size > 10_000 and want.counts.max() > 1
    for g in got:
        assert g is not None
        for field in ("units", "keys", "counts", "unit_words", "uniques"):
            assert np.array_equal(getattr(g, field), getattr(want, field)), field
        assert g.keys.dtype == want.keys.dtype


def test_a_non_finite_point_or_a_missing_unit_leaves_the_rows_to_be_dropped_first():
    from dpdbscan.release.bounding import BoundingKey, _row_pairs_of_points, factorize, pairs_of
    from dpdbscan.release.samplers.integers import SeededSource

    rng = np.random.default_rng(22)
    X = rng.random((30_000, 2))
    units = rng.integers(0, 8_000, len(X)).astype(np.float64)
    grid = Grid(np.zeros(2), np.ones(2), 0.01, 4.0)
    key = BoundingKey.draw(SeededSource(6))
    codes, uniques = factorize(units)
    assert _row_pairs_of_points(grid, X, codes, uniques, key, chunk=1_000) is not None
    Xbad, ubad = X.copy(), units.copy()
    Xbad[29_500, 1] = np.inf  # in the last chunk: the words made so far are dropped
    ubad[3] = np.nan
    for Xs, us in ((Xbad, units), (X, ubad), (Xbad, ubad)):
        codes, uniques = factorize(us)
        assert _row_pairs_of_points(grid, Xs, codes, uniques, key, chunk=1_000) is None
        got, want = pairs_of(grid, Xs, us, key), _reference_pairs(grid, Xs, us, key)
        for field in ("units", "keys", "counts"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), field
    ok = np.isfinite(Xbad).all(axis=1) & ~np.isnan(ubad)
    got, want = pairs_of(grid, Xbad, ubad, key), pairs_of(grid, X[ok], units[ok], key)
    for field in ("units", "keys", "counts"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field


def test_the_release_is_the_same_bit_for_bit_without_the_chunked_keys(monkeypatch):
    import warnings

    from dpdbscan import DPDBSCAN
    from dpdbscan.release import bounding

    rng = np.random.default_rng(23)
    X = np.concatenate([rng.normal(0.3, 0.05, (20_000, 2)), rng.random((20_000, 2))]).clip(0, 1)
    units = rng.integers(0, 8_000, len(X))
    X[7] = np.nan  # dropped either way (the whole-array path then)
    params = dict(
        eps=0.01, min_samples=5, epsilon=1.0, delta=1e-6, bounds=([0.0, 0.0], [1.0, 1.0]),
        noise="gaussian", max_cells_per_unit=3, max_points_per_cell=2, random_state=7,
    )  # fmt: skip
    calls = []
    real = bounding._bucketed_rows

    def spy(*a, **k):
        calls.append(out := real(*a, **k))
        return out

    fits = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for finite in (True, False):
            Xs, us = (X[8:], units[8:]) if finite else (X, units)
            monkeypatch.setattr(bounding, "_bucketed_rows", spy)
            fits.append(DPDBSCAN(**params).fit(Xs, units=us).histogram_)
            monkeypatch.setattr(bounding, "_bucketed_rows", lambda *a, **k: None)
            fits.append(DPDBSCAN(**params).fit(Xs, units=us).histogram_)
    assert calls[0] is not None and not calls[0][1]  # words in buckets, each bounded alone
    assert calls[1] is None  # a non-finite point: dropped rows first
    for chunked, whole in (fits[:2], fits[2:]):
        assert np.array_equal(chunked.keys, whole.keys) and np.array_equal(chunked.values, whole.values)


def test_ids_that_are_their_own_codes_are_read_not_copied_and_never_written():
    from dpdbscan.release.bounding import BoundingKey, factorize, pairs_of
    from dpdbscan.release.samplers.integers import SeededSource

    rng = np.random.default_rng(24)
    units = np.arange(30_000, dtype=np.int64) % 1_000
    rng.shuffle(units)
    codes, uniques = factorize(units)
    assert np.shares_memory(codes, units) and not codes.flags.writeable
    assert np.array_equal(codes, units) and np.array_equal(uniques, np.arange(1_000))
    assert units.flags.writeable  # the caller's array is untouched
    X = rng.random((units.size, 2))
    before = units.copy()
    key = BoundingKey.draw(SeededSource(8))
    # a key space above 2**32 (no 32-bit words) and one of 20,164 cells
    for grid in (Grid(np.zeros(2), np.ones(2), 1e-5, 4.0), Grid(np.zeros(2), np.ones(2), 0.01, 4.0)):
        got, want = pairs_of(grid, X, units, key), _reference_pairs(grid, X, units.copy(), key)
        for field in ("units", "keys", "counts"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), field
        assert np.array_equal(units, before)


@pytest.mark.parametrize("ids", ["0..n-1", "offset", "text"])
def test_counts_bounded_bucket_by_bucket_equal_bounding_all_the_pairs(ids, monkeypatch):
    # count_units bounds each bucket of units alone and sums as it goes (a
    # table, or gathered when the key space is large); the reference bounds
    # every pair of pairs_of at once (bound_parts). Forced small buckets and
    # a small table limit take the other branches.
    from dpdbscan.params.specs import UnitBound
    from dpdbscan.release import bounding
    from dpdbscan.release.bounding import BoundingKey, bound_parts, count_units, pairs_of
    from dpdbscan.release.engine import LocalEngine
    from dpdbscan.release.samplers.integers import SeededSource

    rng = np.random.default_rng(25)
    X = np.concatenate([rng.normal(0.4, 0.03, (10_000, 2)), rng.random((30_000, 2))]).clip(0, 1)
    units = rng.integers(0, 6_000, len(X))
    units[:5_000] = rng.integers(0, 50, 5_000)  # busy units: many cells, counts above m
    units = {
        "0..n-1": units,
        "offset": units * 3 + 17,
        "text": np.char.add("u", units.astype(str)),
    }[ids]
    before = units.copy()
    grid = Grid(np.zeros(2), np.ones(2), 0.005, 4.0)  # 83,000 cells: too many for a table
    key = BoundingKey.draw(SeededSource(9))
    seen = []
    real = bounding._bucketed_rows
    monkeypatch.setattr(bounding, "_bucketed_rows", lambda *a, **k: seen.append(out := real(*a, **k)) or out)
    for bound in (UnitBound(3, 2, "busiest"), UnitBound(1, 1, "uniform"), UnitBound(40, 5, "busiest")):
        want = bound_parts(LocalEngine(), [pairs_of(grid, X, units, key)], grid, key, bound=bound)
        for bits, table_max in ((None, None), (5, 1_000)):
            with monkeypatch.context() as m:
                if bits is not None:
                    m.setattr(bounding, "bucket_bits", lambda *a, bits=bits: bits)
                if table_max is not None:
                    m.setattr(bounding, "_BINCOUNT_MAX", table_max)
                seen.clear()
                got = count_units(grid, X, units, bound, key)
            assert seen and seen[-1] is not None and not seen[-1][1]  # bounded bucket by bucket
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and np.array_equal(g, w), (bound, bits, table_max)
    assert want[1].sum() > 10_000
    assert np.array_equal(units, before)  # ids 0..n-1 are read as their own codes, never written
