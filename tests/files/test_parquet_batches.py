"""The Parquet reader writes each batch's columns straight into their rows
of one array, sized by the metadata's row count (no per-batch copy, no
concatenation), and a trace's times become float seconds once, at the door,
the column as read let go: the same points, units and times as the file holds,
whatever the batches' edges, the dictionaries of their chunks, the time's
unit, or a metadata count that is off; and the points are held once."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from dpdbscan.files import ReadOptions, open_input, reader
from dpdbscan.prepare.door import Source, read_file
from dpdbscan.traces import Stops, group_codes, parse_times, parsed_inputs

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

T0 = 1_211_018_400


def _table(n: int, seed: int = 0):
    """Coordinates with nulls and huge integers, a dictionary-encoded unit
    with nulls (each row group writes its own dictionary: the batches'
    chunks hold different ones), times in every unit."""
    rng = np.random.default_rng(seed)
    big = rng.integers(-(1 << 62), 1 << 62, n)
    big[::5] = rng.integers(-1000, 1000, big[::5].size)
    cabs = [None if i % 11 == 3 else f"cab{(i * 7 + i // 13) % 17}" for i in range(n)]
    seconds = T0 + np.arange(n, dtype=np.int64) * 61
    present = rng.random(n) > 0.1
    return pa.table(
        {
            "x": pa.array(rng.uniform(-1, 1, n), mask=rng.random(n) < 0.05),
            "big": pa.array(big, type=pa.int64()),
            "cab": pa.array(cabs, type=pa.string()).dictionary_encode(),
            "time": pa.array(seconds, mask=~present),
            "ms": pa.array(seconds * 1000, mask=~present),
            "t_s": pa.array(seconds, type=pa.timestamp("s"), mask=~present),
            "t_ms": pa.array(seconds * 1000 + 250, type=pa.timestamp("ms"), mask=~present),
            "t_us": pa.array(seconds * 1_000_000 + 7, type=pa.timestamp("us", tz="UTC"), mask=~present),
            "t_ns": pa.array(seconds * 1_000_000_000 + 3, type=pa.timestamp("ns"), mask=~present),
        }
    )


def _expected(table, names, unit):
    """The points and the rows without a unit, from the whole table at once."""
    cols = [
        table.column(n).cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False).astype(np.float64)
        for n in names
    ]
    X = np.column_stack(cols)
    gone = table.column(unit).is_null().to_numpy(zero_copy_only=False)
    n_missing = int(np.count_nonzero(gone & ~np.isnan(X).any(axis=1)))
    X[gone] = np.nan
    return X, n_missing


def _read(path, names=("x", "big"), unit="cab", also=()):
    with open_input(path, ReadOptions(columns=names, unit=unit), also=list(also)) as plan:
        return plan.read(False)


@pytest.mark.parametrize("n", [0, 1, 34, 35, 36, 101])
@pytest.mark.parametrize("batch", [5, 7, 1 << 20])
def test_points_and_units_across_batch_edges(tmp_path, monkeypatch, n, batch):
    """Row groups of 7 rows, batches of 5, 7 or all: every edge lands
    anywhere (a batch ends at its row group's end too)."""
    monkeypatch.setattr(reader, "BATCH_ROWS", batch)
    table = _table(n)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=7)
    got = _read(path)
    X, n_missing = _expected(table, ["x", "big"], "cab")
    assert got.X.shape == (n, 2) and got.X.dtype == np.float64 and got.X.flags.c_contiguous
    np.testing.assert_array_equal(got.X, X)
    assert got.n_missing_unit == n_missing
    assert got.units.to_pylist() == table.column("cab").to_pylist()


def test_dictionary_chunks_and_a_dataset_read_as_the_whole_file(tmp_path, monkeypatch):
    """A dataset of three files, each of row groups with their own
    dictionaries, read in batches of 4: the units' chunks keep their own
    dictionaries, the values and the stops they give are those of the
    table read whole."""
    monkeypatch.setattr(reader, "BATCH_ROWS", 4)
    table = _table(90, seed=3)
    root = tmp_path / "ds"
    root.mkdir()
    for k, (lo, hi) in enumerate([(0, 31), (31, 32), (32, 90)]):
        part = table.slice(lo, hi - lo)
        own = part.column("cab").cast(pa.string()).combine_chunks().dictionary_encode()  # its own dictionary
        part = part.set_column(part.schema.get_field_index("cab"), "cab", own)
        pq.write_table(part, root / f"part{k}.parquet", row_group_size=6)
    got = _read(root, also=["time"])
    X, n_missing = _expected(table, ["x", "big"], "cab")
    np.testing.assert_array_equal(got.X, X)
    assert got.n_missing_unit == n_missing
    assert got.units.num_chunks > 3
    assert len({tuple(c.dictionary.to_pylist()) for c in got.units.chunks}) > 1
    assert got.units.to_pylist() == table.column("cab").to_pylist()
    assert got.companions[0].to_pylist() == table.column("time").to_pylist()
    # the events' grouping of the rows: one code per unit across the chunks
    codes = group_codes(got.units)
    values = np.array([v or "" for v in table.column("cab").to_pylist()])
    assert np.array_equal(codes < 0, values == "")
    pairs = set(zip(codes[codes >= 0].tolist(), values[codes >= 0].tolist()))
    assert len(pairs) == len({c for c, _ in pairs}) == len({v for _, v in pairs})


@pytest.mark.parametrize("off", [-9, -1, 1, 40])
def test_a_metadata_row_count_that_is_off_reads_the_batches_rows(tmp_path, monkeypatch, off):
    """The array is sized by the metadata's count; batches that hold more
    rows grow it, fewer cut it: the rows are the batches', either way."""
    monkeypatch.setattr(reader, "BATCH_ROWS", 5)
    monkeypatch.setattr(reader._ParquetSource, "num_rows", lambda self: max(0, 43 + off))
    table = _table(43, seed=1)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=7)
    got = _read(path)
    X, n_missing = _expected(table, ["x", "big"], "cab")
    np.testing.assert_array_equal(got.X, X)
    assert got.n_missing_unit == n_missing


def test_the_points_are_held_once_while_read(tmp_path, monkeypatch):
    """numpy's allocations while a file is read (tracemalloc sees them;
    Arrow's own pool it does not): the points' array and one batch's
    temporaries, not the points twice (each batch stacked, then all
    concatenated: 2.0x the points' bytes measured before)."""
    n = 200_000
    monkeypatch.setattr(reader, "BATCH_ROWS", 1 << 14)
    rng = np.random.default_rng(0)
    path = tmp_path / "t.parquet"
    pq.write_table(
        pa.table({"x": rng.uniform(0, 1, n), "y": rng.uniform(0, 1, n), "cab": rng.integers(0, 50, n)}),
        path,
        row_group_size=1 << 15,
    )
    _read(path, ("x", "y"))  # imports and caches outside the measurement
    plan = open_input(path, ReadOptions(columns=("x", "y"), unit="cab"))
    tracemalloc.start()
    try:
        got = plan.read(False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.X.shape == (n, 2)
    assert peak < 1.2 * got.X.nbytes, peak / got.X.nbytes


@pytest.mark.parametrize(
    ("column", "unit", "offset"),
    [
        ("time", "s", 0.0),
        ("ms", "ms", 0.0),
        ("t_s", "s", 0.0),
        ("t_ms", "s", 0.25),
        ("t_us", "s", 7e-6),
        ("t_ns", "s", 3e-9),
    ],
)
def test_the_door_reads_times_once_as_float_seconds_in_every_unit(
    tmp_path, monkeypatch, column, unit, offset
):
    """Through the door (the command line's read), in batches of 6 across
    row groups of 7: the times are float seconds, each the value the file
    holds, NaN where it holds none; the column as read is not kept beside
    them, and the events' parsing reads them without a copy."""
    monkeypatch.setattr(reader, "BATCH_ROWS", 6)
    table = _table(60, seed=2)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=7)
    source = Source(
        data=str(path),
        read=ReadOptions(columns=("x", "big"), unit="cab"),
        bounds=(-1.0, -1e19, 1.0, 1e19),
        flat_bounds=True,
        time_column=column,
        time_unit=unit,
    )
    pts = read_file(source, eta=0.5)
    present = table.column("time").is_valid().to_numpy(zero_copy_only=False)
    want = np.where(present, (T0 + np.arange(60) * 61.0) + offset, np.nan)
    assert type(pts.times) is np.ndarray and pts.times.dtype == np.float64
    np.testing.assert_allclose(pts.times, want, rtol=0, atol=1e-6)
    assert np.array_equal(np.isnan(pts.times), ~present)
    np.testing.assert_array_equal(pts.times, parse_times(table.column(column), unit))
    t, _ = parsed_inputs(Stops(0.1, 300.0), pts.times)
    assert t is pts.times


def test_float_seconds_with_an_infinity_are_read_again(tmp_path):
    """Times given as float seconds are used as they are only where reading
    them would change nothing: an infinity is no time (NaN)."""
    t = np.array([1.0, np.inf, -np.inf, np.nan, 5.0])
    got, _ = parsed_inputs(Stops(0.1, 300.0), t)
    assert got is not t
    np.testing.assert_array_equal(got, [1.0, np.nan, np.nan, np.nan, 5.0])
    assert np.isinf(t[1])  # the caller's array is left alone
    same = np.array([1.0, np.nan, 5.0])
    assert parsed_inputs(Stops(0.1, 300.0), same)[0] is same
    ints = np.array([1, 2, 3])
    got, _ = parsed_inputs(Stops(0.1, 300.0), ints)
    assert got.dtype == np.float64 and got is not ints


@pytest.mark.parametrize("unit", ["s", "ms"])
def test_the_times_parts_are_let_go_as_they_are_read(unit):
    """The door reads a chunked time column part by part, each part let go
    once read (so the column is never held whole beside its seconds): the
    seconds of the whole column, every value alone."""
    from dpdbscan.traces.times import chunks_of, seconds_of_parts

    rng = np.random.default_rng(4)
    values = [T0 + 60 * rng.integers(0, 10_000, k) for k in (5, 0, 9, 1)]
    column = pa.chunked_array([pa.array(v, mask=rng.random(v.size) < 0.2) for v in values])
    parts = chunks_of(column)
    assert len(parts) == 4
    got = seconds_of_parts(parts, unit)
    assert parts == [None] * 4
    np.testing.assert_array_equal(got, parse_times(column, unit))
    text = pa.chunked_array([["2008-05-17T10:00:00Z", "x"], [None, f"{T0}"]])
    np.testing.assert_array_equal(seconds_of_parts(chunks_of(text)), parse_times(text))
    empty = pa.chunked_array([], type=pa.int64())
    assert seconds_of_parts(chunks_of(empty), unit).shape == (0,)
