"""A time or status column of more text than one Arrow array holds is read
part by part (docs/privacy.md section 8, round 10).

An Arrow text array holds at most 2 GiB, and the time and status rules
combined a file's column (its blocks, a pyarrow ChunkedArray) into one array
first: past 2 GiB of text that raised ``ArrowInvalid`` ("offset overflow")
and no release was made, so one record more (up to 64 MiB of text) could
decide it. Now a column of more than ``times.COMBINE_BYTES`` is read in
parts, each value as alone: the same values. The bound is lowered here; the
slow test reads a real column of 2.3 GiB.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.traces import times, tripends
from dpdbscan.traces.times import parse_times

pa = pytest.importorskip("pyarrow")

TIMES = [
    "2026-03-02T05:39:04", " 2026-03-02 05:39:05Z", "1772430000", "31/02/2026 01:00:00", None, "x",
    "2026-03-02T05:39:04+03:00", "1.5e9", "", "2026-02-30T00:00:00", "02/03/2026 05:39:04", "nan",
]  # fmt: skip
STATUS = ["0", "1", " TRUE", "false", "2", None, "hired", "free", "1.0", "yes", "0", "1"]


def _chunked(values, kind, size):
    return pa.chunked_array(
        [pa.array(values[i : i + size], type=kind) for i in range(0, len(values), size)], type=kind
    )


@pytest.mark.parametrize("kind", ["string", "binary", "large_string"])
@pytest.mark.parametrize("size", [1, 5])
def test_a_column_read_in_parts_reads_each_value_as_whole(monkeypatch, kind, size):
    t = pa.type_for_alias(kind)
    col = _chunked(TIMES * 3, t, size)
    whole = {
        "s": parse_times(col),
        "ms": parse_times(col, "ms"),
        "format": parse_times(col, time_format="%d/%m/%Y %H:%M:%S"),
    }
    status = _chunked(STATUS * 3, t, size)
    plain, coded = tripends.parse_status(status), tripends.parse_status(status, ("free", "hired"))
    monkeypatch.setattr(times, "COMBINE_BYTES", 40, raising=False)
    parts = times.in_parts(col)
    assert parts is not None and len(parts) > 2 and sum(len(p) for p in parts) == len(col)
    np.testing.assert_array_equal(parse_times(col), whole["s"])
    np.testing.assert_array_equal(parse_times(col, "ms"), whole["ms"])
    np.testing.assert_array_equal(parse_times(col, time_format="%d/%m/%Y %H:%M:%S"), whole["format"])
    np.testing.assert_array_equal(tripends.parse_status(status), plain)
    np.testing.assert_array_equal(tripends.parse_status(status, ("free", "hired")), coded)
    assert np.isfinite(whole["s"]).sum() >= 4 and np.isfinite(plain).sum() >= 6


def test_a_dictionary_column_read_in_parts(monkeypatch):
    col = pa.chunked_array([pa.array(TIMES[i : i + 4]).dictionary_encode() for i in range(0, 12, 4)])
    whole = parse_times(col)
    monkeypatch.setattr(times, "COMBINE_BYTES", 40, raising=False)
    assert times.in_parts(col) is not None
    np.testing.assert_array_equal(parse_times(col), whole)


@pytest.mark.slow
def test_a_real_column_of_more_than_2_gib_is_read():
    """Six values of 400 MiB of text in three blocks (2.3 GiB): combining
    them raised ArrowInvalid on the code before (7 s, about 5 GB)."""
    v = "x" * (400 << 20)
    col = pa.chunked_array([pa.array([v, v, "2026-03-02T05:39:04"], pa.string()) for _ in range(3)])
    got = parse_times(col)
    assert got.shape == (9,) and np.isnan(got[:2]).all() and (got[2::3] == 1772429944.0).all()


@pytest.mark.parametrize("kind", ["string", "binary"])
def test_units_hashed_with_large_offsets_are_the_same_units(monkeypatch, kind):
    """Distinct unit ids of more than 2 GiB in all (33 units of 64 MiB ids)
    raised ArrowCapacityError when hashed, a traceback; past
    ``bounding.LARGE_BYTES`` they are hashed with 64-bit offsets: the same
    codes and ids."""
    from dpdbscan.release import bounding

    t = pa.type_for_alias(kind)
    ids = ["cab7", None, "b", "cab7", "", "a" * 50, "b", "Z", None, "cab7"]
    col = pa.chunked_array([pa.array(ids[:4], t), pa.array(ids[4:], t)], type=t)
    codes, uniq = bounding.factorize(col)
    monkeypatch.setattr(bounding, "LARGE_BYTES", 10, raising=False)
    codes2, uniq2 = bounding.factorize(col)
    np.testing.assert_array_equal(codes2, codes)
    assert list(uniq2) == list(uniq) and (codes == -1).sum() == 2


@pytest.mark.slow
def test_unit_ids_of_more_than_2_gib_in_all_are_read():
    """Six distinct ids of 400 MiB in three blocks: ArrowCapacityError on the code before."""
    from dpdbscan.release import bounding

    col = pa.chunked_array(
        [
            pa.array([bytes([65 + i]) * (400 << 20), bytes([97 + i]) * (400 << 20)], pa.binary())
            for i in range(3)
        ]
    )
    codes, uniq = bounding.factorize(col)
    assert codes.tolist() == [0, 1, 2, 3, 4, 5] and len(uniq) == 6


def test_dictionary_units_of_chunks_with_their_own_dictionaries(monkeypatch):
    """A dictionary column whose chunks hold their own dictionaries (values
    repeated within one and across them, nulls in both): the same codes and
    ids as the plain column, and past ``bounding.LARGE_BYTES`` too."""
    from dpdbscan.release import bounding

    d1 = pa.DictionaryArray.from_arrays(
        pa.array([0, 2, None, 1, 0], pa.int32()), pa.array(["cab7", "b", "b"])
    )
    d2 = pa.DictionaryArray.from_arrays(
        pa.array([2, 0, 1, 3], pa.int32()), pa.array(["Z", None, "cab7", "a"])
    )
    col = pa.chunked_array(
        [d1, pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string())), d2]
    )
    plain = pa.chunked_array([c.cast(pa.string()) for c in col.chunks], pa.string())
    want_codes, want_ids = bounding.factorize(plain)
    codes, ids = bounding.factorize(col)
    named = [None if c < 0 else ids[c] for c in codes]
    assert named == [None if c < 0 else want_ids[c] for c in want_codes]
    assert named == ["cab7", "b", None, "b", "cab7", "cab7", "Z", None, "a"]
    monkeypatch.setattr(bounding, "LARGE_BYTES", 10, raising=False)
    codes2, ids2 = bounding.factorize(col)
    np.testing.assert_array_equal(codes2, codes)
    assert list(ids2) == list(ids)


@pytest.mark.slow
def test_dictionary_unit_ids_of_more_than_2_gib_in_all_are_read():
    """Three chunks, each with its own dictionary of two 400 MiB ids: their
    union overflowed unify_dictionaries (ArrowCapacityError on the code before)."""
    from dpdbscan.release import bounding

    col = pa.chunked_array(
        [
            pa.DictionaryArray.from_arrays(
                pa.array([0, 1, 1], pa.int32()),
                pa.array([bytes([65 + i]) * (400 << 20), bytes([97 + i]) * (400 << 20)], pa.binary()),
            )
            for i in range(3)
        ]
    )
    codes, uniq = bounding.factorize(col)
    assert codes.tolist() == [0, 1, 1, 2, 3, 3, 4, 5, 5] and len(uniq) == 6


@pytest.mark.parametrize("kind", ["string", "binary", "dict"])
def test_dask_unit_columns_are_bytes_with_64_bit_offsets(kind):
    """A Dask partition's units (text, bytes, a dictionary of text, or an
    object column's tokens) are shuffled as large_binary: 32-bit offsets
    address 2 GiB of text, and a gzip file is one partition. The same bytes
    as before, in a type that does not overflow."""
    pytest.importorskip("dask")
    from dpdbscan.release.backends import dask_backend

    ids = ["cab7", None, "b", "cab7", "", "é" * 3]
    chunks = [pa.array(ids[:3], pa.string()), pa.array(ids[3:], pa.string())]
    if kind == "binary":
        chunks = [c.cast(pa.binary()) for c in chunks]
    elif kind == "dict":
        chunks = [c.dictionary_encode() for c in chunks]
    got = dask_backend.unit_array(pa.chunked_array(chunks), "text")
    assert got.type == pa.large_binary()
    assert got.to_pylist() == [None if v is None else v.encode() for v in ids]
    tokens = dask_backend.unit_array(np.array([3, "cab7", None, b"cab7"], dtype=object), "object")
    assert tokens.type == pa.large_binary() and tokens.null_count == 1
    assert dask_backend.unit_array(tokens.cast(pa.binary()), "object").equals(tokens)


def test_dask_number_units_in_dictionaries_with_a_null_value():
    """A Dask partition's numeric unit column as Arrow dictionaries, one
    holding a null value: combining the chunks unified the dictionaries,
    which refused the null, and the fit stopped ("the units do not
    convert"). Now each chunk is decoded first: the null is a missing id."""
    pytest.importorskip("dask")
    from dpdbscan.release.backends import dask_backend

    col = pa.chunked_array(
        [
            pa.DictionaryArray.from_arrays(pa.array([0, 1, 1], pa.int32()), pa.array([3, None], pa.int64())),
            pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array([3, 5], pa.int64())),
        ]
    )
    assert dask_backend.unit_array(col, "int").to_pylist() == [3, None, None, 5, 3]
    assert dask_backend.unit_array(col, "float").to_pylist() == [3.0, None, None, 5.0, 3.0]


@pytest.mark.slow
def test_dask_unit_text_of_more_than_2_gib_in_one_partition():
    """Six ids of 400 MiB in three blocks, as one partition's unit column:
    combining them as 32-bit binary failed on the code before (TypeError
    'the units do not convert', the fit stopped); about 5 GB."""
    pytest.importorskip("dask")
    from dpdbscan.release.backends import dask_backend

    col = pa.chunked_array(
        [pa.array([chr(65 + i) * (400 << 20), chr(97 + i) * (400 << 20)], pa.string()) for i in range(3)]
    )
    got = dask_backend.unit_array(col, "text")
    assert len(got) == 6 and got.type == pa.large_binary()
    assert got[5].as_py()[:3] == b"ccc" and len(got[5].as_py()) == 400 << 20


def test_time_and_status_dictionaries_with_a_null_value_read_row_by_row():
    """A time or status column as Arrow dictionary chunks, one dictionary
    holding a null value (``null_encoding="encode"``): combining the chunks
    unified the dictionaries, which refused the null, and the read failed
    (ArrowInvalid) whatever the other rows. Now each chunk is decoded first:
    the null is a missing time or status, dropped with its row."""
    from dpdbscan.traces import times, tripends

    def dict_chunks(first, second):
        return pa.chunked_array(
            [
                pa.DictionaryArray.from_arrays(pa.array([0, 1, 1], pa.int32()), pa.array(first)),
                pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(second)),
            ]
        )

    t = dict_chunks(["2008-05-17T10:00:00", None], ["2008-05-17T10:00:00", "2008-05-17T11:00:00"])
    got = times.parse_times(t)
    assert np.isnan(got[1:3]).all() and got[[0, 3, 4]].tolist() == [1211018400.0, 1211022000.0, 1211018400.0]
    np.testing.assert_array_equal(times.parse_times(t, unit="ms"), got)
    s = dict_chunks(["1", None], ["0", "1"])
    want = tripends.parse_status(pa.chunked_array([c.cast(pa.string()) for c in s.chunks], pa.string()))
    np.testing.assert_array_equal(tripends.parse_status(s), want)
