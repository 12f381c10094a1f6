"""Person-level counts on Dask (issue 20, item 4) against the in-memory reference.

The contract (``UnitBackend``): ``DaskBackend.count_units(grid, X, units,
bound, key)`` equals ``bounding.count_units`` on the same rows with the same
key. The backend reduces each partition to its (unit, cell) pairs, shuffles
them by unit and bounds each unit where all its pairs are; the rows of every
unit here are spread over all the input partitions, so a unit bounded per
input partition, or split over two shuffled ones, would keep up to
``partitions x k`` cells and change the counts. Hence: the same release as
in memory for the same seed.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
import dask  # noqa: E402
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import distributed  # noqa: E402
import pandas as pd  # noqa: E402

from dpdbscan import DPDBSCAN, Grid  # noqa: E402
from dpdbscan.files.unitids import read_units  # noqa: E402
from dpdbscan.params.specs import UnitBound  # noqa: E402
from dpdbscan.release.backends import NumpyBackend  # noqa: E402
from dpdbscan.release.backends.dask_backend import (  # noqa: E402
    DaskBackend,
    DaskEngine,
    _token_ids,  # noqa: E402
    unit_array,
)
from dpdbscan.release.bounding import BoundingKey, count_units, count_units_choosing, unit_words  # noqa: E402
from dpdbscan.release.samplers.integers import SeededSource  # noqa: E402

from test_dask import EPS  # noqa: E402

BOUNDS = ([0.0, 0.0], [10.0, 10.0])
BOUND = UnitBound(max_cells_per_unit=5, max_points_per_cell=2, cell_choice="busiest")
N_UNITS = 400
SECRET = "bob@example.com"


@pytest.fixture(scope="module")
def grid():
    return Grid(*map(np.asarray, BOUNDS), EPS)


def make_data(n=30_000, seed=0):
    """``(X, ids)``: 400 units, each around 3 homes of its own near one of
    three centres (so it occupies many cells, more than k), rows in random
    order; some rows have a NaN coordinate or fall outside the box."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, N_UNITS, n)
    centres = np.array([[2.5, 2.5], [7.0, 3.0], [5.0, 7.5]])
    homes = centres[rng.integers(0, 3, (N_UNITS, 3))] + rng.normal(scale=0.6, size=(N_UNITS, 3, 2))
    X = homes[ids, rng.integers(0, 3, n)] + rng.normal(scale=0.3, size=(n, 2))
    X[: n // 20] = rng.uniform(-1, 11, size=(n // 20, 2))
    X[5::211, 0] = np.nan
    return X, ids


@pytest.fixture(scope="module")
def data():
    return make_data()


@pytest.fixture(scope="module")
def key():
    return BoundingKey.draw(SeededSource(7))


def unit_values(ids, kind):
    """The units in memory: ints (some negative, one beyond 2**32), text, or
    floats with NaN for missing (and -0.0 and 0.0, one unit)."""
    if kind == "int":
        return ids.astype(np.int64) * 7_919_000_003 - 10**9
    if kind == "mixed":  # an object column: each id by its own type, as in memory
        pick = [
            2**60 + 256 * i if i % 4 == 0 else str(i) if i % 4 == 1 else i + 0.5 if i % 4 == 2 else b"%d" % i
            for i in range(ids.max() + 1)
        ]
        pick[5] = "4"  # text beside the integer 4
        out = np.empty(ids.size, dtype=object)
        out[:] = [pick[i] for i in ids]
        out[3::173] = None
        return out
    if kind == "text":
        out = np.array([f"cab-{i:03d}-é" for i in ids], dtype=object)
        out[3::173] = None  # missing: the row is dropped
        return out
    out = ids.astype(np.float64) - 7.0
    out[out == 0.0] = -0.0
    out[(ids == 7) & (np.arange(ids.size) % 2 == 0)] = 0.0
    out[3::173] = np.nan
    return out


def table(X, units):
    return pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "unit": units})


def write_parquet(df, directory, parts=5):
    directory.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(df)), parts)):
        df.iloc[chunk].to_parquet(directory / f"part-{i}.parquet", index=False)
    return directory


def write_csv(df, directory, parts=3):
    directory.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(df)), parts)):
        df.iloc[chunk].to_csv(directory / f"part-{i}.csv", index=False, float_format="%.17g")
    return directory / "*.csv"


def source_of(kind, where, df, tmp_path):
    if where == "parquet":
        return str(write_parquet(df, tmp_path / "pq"))
    if where == "csv":
        return write_csv(df, tmp_path / "csv").as_posix()
    return dd.from_pandas(df, npartitions=6)


def assert_same_counts(got, want):
    assert got.keys.dtype == want[0].dtype and got.counts.dtype == np.int64
    np.testing.assert_array_equal(got.keys, want[0])
    np.testing.assert_array_equal(got.counts, want[1])


# ---------------------------------------------------------------- counts
def test_the_data_makes_bounding_bite(grid, data, key):
    """Units occupy more than k cells and put more than m points in some, so
    the bound changes the counts (else equality below proves little)."""
    X, ids = data
    bounded = count_units(grid, X, ids, BOUND, key)
    plain = NumpyBackend().count(grid, X)
    assert bounded[1].sum() < plain.counts.sum() / 3
    big = count_units(grid, X, ids, UnitBound(10_000, 10_000, "busiest"), key)
    np.testing.assert_array_equal(big[1], plain.counts)


@pytest.mark.parametrize(
    "kind, where",
    [(k, w) for w in ["parquet", "dask_dataframe"] for k in ["int", "text", "float"]]
    + [("text", "csv"), ("mixed", "dask_dataframe")],
)
def test_count_units_equals_in_memory(client, grid, data, key, tmp_path, kind, where):
    X, ids = data
    units = unit_values(ids, kind)
    want = count_units(grid, X, units, BOUND, key)
    backend = DaskBackend(client=client, header=True if where == "csv" else None, columns=["x", "y"])
    # dask turns object columns into text by default: an object column needs it off
    with dask.config.set({"dataframe.convert-string": kind != "mixed"}):
        source = source_of(kind, where, table(X, units), tmp_path)
        got = backend.count_units(grid, source, "unit", BOUND, key)
    assert_same_counts(got, want)
    n_missing = int(pd.isna(units).sum())
    assert backend.input_counts.rows == len(X)
    # rows whose unit is missing but whose coordinates are numbers
    assert backend.input_counts.missing_unit == n_missing
    assert kind == "int" or n_missing > 100


@pytest.mark.parametrize("where", ["parquet", "per"])
def test_integer_ids_with_a_missing_one_keep_their_value(client, grid, data, key, tmp_path, where):
    """A Parquet unit column of int64 ids near 2**60 (hashed device ids)
    with one missing id in a file: dask's reading made that file's column
    float64, so its ids were rounded to multiples of 256 and whole groups
    of units became one; one row without an id merged the others. Read
    exactly now, with the missing id dropped alone, as in memory. ``per``:
    the same file with a time column read through a time window."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpdbscan.series import PeriodOf
    from dpdbscan.traces.periods import Periods

    X, ids = data
    values = (2**60 + ids.astype(np.int64)).tolist()
    for i in range(3, len(values), 173):
        values[i] = None
    units = pa.array(values, type=pa.int64())
    columns = {"x": pa.array(X[:, 0]), "y": pa.array(X[:, 1]), "unit": units}
    want = count_units(grid, X, units, BOUND, key)
    backend = DaskBackend(client=client, columns=["x", "y"])
    if where == "per":
        times = [1_709_510_400 + i if i % 97 else None for i in range(len(X))]
        columns["t"] = pa.array(times, type=pa.int64())
        backend = backend.windowed("t", PeriodOf(Periods("day", "2024-03-04", "2024-03-05")))
        keep = np.arange(len(X)) % 97 != 0
        want = count_units(grid, X[keep], units.filter(pa.array(keep)), BOUND, key)
    # written by pyarrow, as other tools write Parquet: no pandas metadata to restore a dtype from
    folder = tmp_path / "pq"
    folder.mkdir()
    whole = pa.table(columns)
    for i, chunk in enumerate(np.array_split(np.arange(len(X)), 5)):
        pq.write_table(whole.take(pa.array(chunk)), folder / f"part-{i}.parquet")
    got = backend.count_units(grid, str(folder), "unit", BOUND, key)
    assert_same_counts(got, want)
    assert want[1].sum() > 5 * N_UNITS  # not vacuous: every unit counts, not a few merged ones


def test_csv_units_are_their_text(client, grid, data, key, tmp_path):
    """Integer ids in a CSV file are read as text: the same units, the same
    counts as the text ids in memory."""
    X, ids = data
    units = unit_values(ids, "int")
    want = count_units(grid, X, units.astype(str), BOUND, key)
    path = write_csv(table(X, units), tmp_path / "csv")
    got = DaskBackend(client=client, header=True).count_units(grid, path.as_posix(), "unit", BOUND, key)
    assert_same_counts(got, want)


def test_dask_array_with_an_array_of_units(client, grid, data, key):
    X, ids = data
    units = unit_values(ids, "text")
    want = count_units(grid, X, units, BOUND, key)
    backend = DaskBackend(client=client)
    arr = da.from_array(X, chunks=(7_001, 1))  # the feature axis is split too
    assert_same_counts(backend.count_units(grid, arr, units, BOUND, key), want)
    ints = unit_values(ids, "int")
    want = count_units(grid, X, ints, BOUND, key)
    got = backend.count_units(grid, arr, da.from_array(ints, chunks=5_000), BOUND, key)
    assert_same_counts(got, want)


def test_in_memory_input_is_bounded_on_the_driver(grid, data, key):
    X, ids = data
    units = unit_values(ids, "text")
    want = count_units(grid, X, units, BOUND, key)
    backend = DaskBackend(client=None)  # no cluster needed for driver-side data
    assert_same_counts(backend.count_units(grid, X, units, BOUND, key), want)
    assert_same_counts(backend.count_units(grid, table(X, units), "unit", BOUND, key), want)
    choice = Choose()
    assert_same_counts(
        backend.count_units_choosing(grid, X, units, choice, key),
        count_units_choosing(grid, X, units, Choose(), key),
    )
    assert len(choice.seen) == 1
    with pytest.raises(ValueError, match="names a column, but X is an array"):
        backend.count_units(grid, X, "unit", BOUND, key)


def test_wide_keys(client, key):
    """A grid too fine for int64 keys: the packed keys cross the shuffle bit for bit."""
    wide = Grid(np.zeros(3), np.ones(3), 1e-6)
    assert wide.wide
    rng = np.random.default_rng(1)
    X = np.vstack([0.5 + 4e-6 * rng.random((8_000, 3)), rng.random((80, 3))])
    X[::97, 2] = np.nan
    ids = rng.integers(0, 50, len(X))
    want = count_units(wide, X, ids, BOUND, key)
    assert want[1].max() > 1 and want[1].sum() < np.isfinite(X).all(axis=1).sum()
    ddf = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]).assign(u=ids), npartitions=4)
    got = DaskBackend(client=client, split_every=2).count_units(wide, ddf, "u", BOUND, key)
    assert_same_counts(got, want)


def test_the_shuffle_runs_on_the_workers(client, grid, data, key):
    """P2P, on the cluster, whatever dask's default: without a default client
    (the backend's is not one) dask would shuffle through a directory on the
    driver's machine, which the workers of a multi-machine cluster do not share."""
    X, ids = data
    ddf = dd.from_pandas(table(X, ids), npartitions=3)
    with (
        dask.config.set({"dataframe.shuffle.method": "disk"}),
        distributed.get_task_stream(client=client) as stream,
    ):
        DaskBackend(client=client).count_units(grid, ddf, "unit", BOUND, key)
    names = {str(t["key"][0] if isinstance(t["key"], tuple) else t["key"]) for t in stream.data}
    assert any(n.startswith("shuffle-transfer") for n in names), sorted(names)[:20]


def test_standard_error_stays_quiet(grid, data, key):
    """The backend's own (thread) cluster runs its scheduler in this process:
    distributed's warnings that a shuffle started and ended would reach
    standard error, which holds the private notes only. (Recorded by a
    handler on distributed's logger: its stream handler writes to the
    standard error of the moment it was made, which pytest cannot capture.)"""
    records: list[str] = []

    class Record(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("distributed.shuffle._scheduler_plugin")
    handler = Record(level=logging.DEBUG)
    logger.addHandler(handler)
    try:
        X, ids = data
        with DaskBackend() as backend:
            backend.count_units(grid, dd.from_pandas(table(X, ids), npartitions=3), "unit", BOUND, key)
    finally:
        logger.removeHandler(handler)
    assert not [r for r in records if r.startswith("Shuffle")], records


def test_partitions_without_points(client, grid, key):
    df = pd.DataFrame({"x": np.full(50, np.nan), "y": 1.0, "unit": np.arange(50)})
    got = DaskBackend(client=client).count_units(grid, dd.from_pandas(df, npartitions=3), "unit", BOUND, key)
    assert len(got) == 0 and got.keys.dtype == np.int64


class Choose:
    """A stand-in for the private choice of k: records what it was shown
    and picks k from it (the median number of cells per unit)."""

    def __init__(self):
        self.seen = []

    def __call__(self, cells):
        self.seen.append(np.sort(np.asarray(cells)))
        return UnitBound(max(1, int(np.median(cells))) if len(cells) else 1, 2, "busiest")


@pytest.mark.parametrize("where", ["parquet", "csv"])
def test_count_units_choosing_equals_in_memory(client, grid, data, key, tmp_path, where):
    X, ids = data
    units = unit_values(ids, "text")
    want_choice, got_choice = Choose(), Choose()
    want = count_units_choosing(grid, X, units, want_choice, key)
    backend = DaskBackend(client=client, header=True if where == "csv" else None, columns=["x", "y"])
    source = source_of("text", where, table(X, units), tmp_path)
    got = backend.count_units_choosing(grid, source, "unit", got_choice, key)
    assert len(got_choice.seen) == 1  # the choice is made once
    np.testing.assert_array_equal(got_choice.seen[0], want_choice.seen[0])
    assert got_choice.seen[0].size == N_UNITS and np.median(got_choice.seen[0]) > 5
    assert_same_counts(got, want)
    assert backend.input_counts.rows == len(X)


def test_count_units_choosing_without_rows(client, grid, key):
    choice = Choose()
    ddf = dd.from_pandas(pd.DataFrame({"x": [np.nan] * 4, "y": 1.0, "unit": np.arange(4)}), npartitions=2)
    got = DaskBackend(client=client).count_units_choosing(grid, ddf, "unit", choice, key)
    assert len(got) == 0 and len(choice.seen) == 1 and choice.seen[0].size == 0


def test_unit_array_keeps_the_in_memory_words(key):
    """The shuffled values of a unit have the in-memory unit's word: the
    same priorities, the same cells kept."""
    cases = [
        (np.array([0, 2**64 - 1, 2**63], dtype=np.uint64), "int"),
        (np.array([True, False]), "int"),
        (np.array([-3, 5], dtype=np.int8), "int"),
        (np.array([-0.0, 1.5], dtype=np.float32), "float"),
        (np.array(["a", "é", ""], dtype=object), "object"),
        (np.array(["a", "é", ""], dtype=object), "text"),
        (np.array([b"\xff\x00", b"a"], dtype=object), "object"),
        (np.array([1, "1", 2.5, b"1", 2**70, -0.0], dtype=object), "object"),  # each by its own type
    ]
    for values, kind in cases:
        shuffled = unit_array(values, kind).to_numpy(zero_copy_only=False)
        if kind == "object":
            shuffled = _token_ids(shuffled)
            assert len(set(shuffled.tolist())) == len(values)
        np.testing.assert_array_equal(unit_words(shuffled, key), unit_words(read_units(values), key))


# ---------------------------------------------------------- same release
def fit(X, units, backend, **kw):
    params = dict(
        eps=EPS,
        min_samples=10,
        epsilon=2.0,
        delta=1e-6,
        bounds=BOUNDS,
        random_state=0,
        noise="gaussian",
        max_cells_per_unit=BOUND.max_cells_per_unit,
        max_points_per_cell=BOUND.max_points_per_cell,
        backend=backend,
    )
    est = DPDBSCAN(**{**params, **kw})
    return est.fit(X, units=units)


def assert_same_release(got, want):
    assert want.spans_.core_keys.size > 0, "a release with no core cells proves little"
    hg, hw = got.histogram_, want.histogram_
    assert hg.kind == hw.kind
    np.testing.assert_array_equal(hg.values, hw.values)
    if hw.keys is not None:
        np.testing.assert_array_equal(hg.keys, hw.keys)
    np.testing.assert_array_equal(got.spans_.core_keys, want.spans_.core_keys)
    np.testing.assert_array_equal(got.spans_.labels, want.spans_.labels)
    assert got.noise_margin_ == want.noise_margin_


@pytest.mark.parametrize("histogram", ["dense", "sparse"])
@pytest.mark.parametrize(
    "kind, where", [("int", "parquet"), ("text", "parquet"), ("text", "csv"), ("int", "dask_dataframe")]
)
def test_same_release_as_in_memory(client, data, tmp_path, kind, where, histogram):
    X, ids = data
    units = unit_values(ids, kind)
    want = fit(X, units, "numpy", histogram=histogram)
    source = source_of(kind, where, table(X, units), tmp_path)
    backend = DaskBackend(client=client, header=True if where == "csv" else None, columns=["x", "y"])
    got = fit(source, "unit", backend, histogram=histogram)
    assert_same_release(got, want)


def test_same_release_with_k_chosen_privately(client, data, tmp_path):
    """max_cells_per_unit="auto": the same k chosen, the same release."""
    X, ids = data
    units = unit_values(ids, "int")
    want = fit(X, units, "numpy", max_cells_per_unit="auto")
    got = fit(
        str(write_parquet(table(X, units), tmp_path / "pq")),
        "unit",
        DaskBackend(client=client, columns=["x", "y"]),
        max_cells_per_unit="auto",
    )
    assert want.spans_.release.unit_choice is not None
    assert got.spans_.release.units == want.spans_.release.units
    assert_same_release(got, want)


# ----------------------------------------------------------------- columns
def test_unit_column_is_not_a_coordinate(client, grid, data, key, tmp_path):
    X, ids = data
    units = unit_values(ids, "int")  # numeric: the default columns would take it
    # one file: its schema gives the default columns (a folder must name them)
    path = str(write_parquet(table(X, units), tmp_path / "pq", parts=1) / "part-0.parquet")
    backend = DaskBackend(client=client)
    assert backend.n_features(path) == 3 and backend.n_features(path, unit="unit") == 2
    assert_same_counts(
        backend.count_units(grid, path, "unit", BOUND, key), count_units(grid, X, units, BOUND, key)
    )
    with pytest.raises(ValueError, match=r"column 'unit' is the privacy unit \(--unit\) and a coordinate"):
        DaskBackend(client=client, columns=["x", "unit"]).count_units(grid, path, "unit", BOUND, key)
    with pytest.raises(ValueError, match=r"--unit \(unit=\): no column 'cab'"):
        backend.count_units(grid, path, "cab", BOUND, key)
    with pytest.raises(TypeError, match="units must be the name of the unit column"):
        backend.count_units(grid, path, units, BOUND, key)


def test_csv_unit_column_by_header(client, grid, data, key, tmp_path):
    X, ids = data
    units = unit_values(ids, "text")
    path = write_csv(table(X, units)[["unit", "x", "y"]], tmp_path / "csv").as_posix()
    # the in-memory reader's layout rules and words (files.layout.csv_layout)
    with pytest.raises(ValueError, match=r"column 'unit' is the privacy unit \(--unit\) and a coordinate"):
        DaskBackend(client=client, columns=["unit", "x"]).count_units(grid, path, "unit", BOUND, key)
    with pytest.raises(ValueError, match=r"--unit \(unit=\): no column 'cab'"):
        DaskBackend(client=client, header=True).count_units(grid, path, "cab", BOUND, key)
    # a unit named implies a header, as it does for the in-memory reader
    assert DaskBackend(client=client).n_features(path, unit="unit") == 2
    backend = DaskBackend(client=client, header=True)
    assert backend.n_features(path, unit="unit") == 2
    assert_same_counts(
        backend.count_units(grid, path, "unit", BOUND, key), count_units(grid, X, units, BOUND, key)
    )


def test_a_unit_type_that_is_not_an_id_is_refused(client, grid, data, key):
    X, ids = data
    df = table(X, pd.Timestamp("2020-01-01") + pd.to_timedelta(ids, unit="s"))
    with pytest.raises(TypeError, match=r"the unit column 'unit' has type datetime64\[.*\]; units must be"):
        DaskBackend(client=client).count_units(grid, dd.from_pandas(df, npartitions=2), "unit", BOUND, key)


# -------------------------------------------- one record at a time, quietly
def test_bad_rows_are_dropped_and_no_unit_is_quoted(client, grid, data, key, tmp_path, capfd, caplog):
    """A row whose unit is missing, whose coordinate is text or whose line is
    malformed is dropped alone; nothing printed or logged quotes a unit."""
    X, ids = data
    units = np.array([f"{SECRET}-{i}" for i in ids], dtype=object)
    lines = ["x,y,unit"] + [f"{a:.17g},{b:.17g},{u}" for (a, b), u in zip(X, units)]
    lines[101] = f"0.5,{SECRET},{units[100]}"  # unparseable coordinate
    lines[201] = f"0.5,0.5,{units[200]},extra"  # malformed
    lines[301] = "0.5,0.5,"  # missing unit
    path = tmp_path / "p.csv"
    path.write_text("\n".join(lines) + "\n")
    keep = np.setdiff1d(np.arange(len(X)), [100, 200, 300])
    want = count_units(grid, X[keep], units[keep], BOUND, key)
    backend = DaskBackend(client=client, header=True, blocksize=100_000)
    assert_same_counts(backend.count_units(grid, str(path), "unit", BOUND, key), want)
    c = backend.input_counts
    assert (c.rows, c.unparseable, c.malformed, c.missing_unit) == (len(X), 1, 1, 1)
    out, err = capfd.readouterr()
    assert SECRET not in out + err + caplog.text


def test_a_lost_partition_is_refused(client, grid, data, key, monkeypatch):
    """A reduce that merged fewer shuffled partitions than there are is
    refused, not released."""
    original = DaskEngine.reduce

    def lossy(self, parts, merge):
        return original(self, parts[1:] if len(parts) > 1 else parts, merge)

    monkeypatch.setattr(DaskEngine, "reduce", lossy)
    X, ids = data
    ddf = dd.from_pandas(table(X, ids), npartitions=4)
    with pytest.raises(RuntimeError, match="merged 3 partition result.*for 4 partition"):
        DaskBackend(client=client).count_units(grid, ddf, "unit", BOUND, key)


def mixed_dataset(folder, X, ids):
    """A Parquet dataset of two files, the ids integers in one and text in
    the other (their schemas disagree on the unit's type)."""
    folder.mkdir()
    half = len(X) // 2
    ints, text = unit_values(ids, "int"), unit_values(ids, "text")
    table(X[:half], ints[:half]).to_parquet(folder / "part-0.parquet", index=False)
    table(X[half:], text[half:]).to_parquet(folder / "part-1.parquet", index=False)
    return folder


def test_parquet_files_that_disagree_on_the_units_type_are_read_each_by_its_own(
    client, grid, data, key, tmp_path
):
    """One file's ids are integers, the other's text. They were refused
    (dask would cast the text to integers, which fails or not depending on
    the ids); where each file is one unit's, that let one unit's file decide
    whether anything was released. Now each file's ids are read by its own
    type, by the library's id rule (text and numbers never one unit), as the
    in-memory reader reads them: the counts of the same ids in memory, as a
    list (each id by its own value)."""
    X, ids = data
    folder = mixed_dataset(tmp_path / "mixed", X, ids)
    half = len(X) // 2
    ints, text = unit_values(ids, "int"), unit_values(ids, "text")
    units = [*ints[:half].tolist(), *text[half:].tolist()]
    got = DaskBackend(client=client, columns=["x", "y"]).count_units(
        grid, folder.as_posix(), "unit", BOUND, key
    )
    assert_same_counts(got, count_units(grid, X, units, BOUND, key))


def test_the_estimator_releases_such_a_dataset_and_refuses_a_typo_before_the_ledger_charges(
    client, data, tmp_path
):
    """A dataset whose files declare the unit with different types is
    released (charged once); a unit column no file declares is refused
    when the points are prepared, before the ledger reserves anything."""
    from dpdbscan import Ledger

    X, ids = data
    folder = mixed_dataset(tmp_path / "mixed", X, ids)
    path = tmp_path / "b.ledger"
    Ledger.create(path, "t", epsilon=5, delta=1e-5, unit="unit")

    def estimator():
        return DPDBSCAN(
            eps=1.0,
            min_samples=20,
            bounds=(0, 10),
            max_cells_per_unit=5,
            delta=1e-6,
            backend=DaskBackend(client=client, columns=["x", "y"]),
            ledger=Ledger(path, "t"),
        )

    with pytest.raises(ValueError, match="unitt"):
        estimator().fit(folder.as_posix(), units="unitt")
    assert list(Ledger(path, "t").account().releases) == []
    estimator().fit(folder.as_posix(), units="unit")
    assert len(list(Ledger(path, "t").account().releases)) == 1


def _parquet_with_a_missing_id(X, ids, folder):
    """Five Parquet files (written by pyarrow: no pandas metadata) of int64
    ids near 2**60 with some missing; the Arrow units of the same rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = (2**60 + ids.astype(np.int64)).tolist()
    for i in range(3, len(values), 173):
        values[i] = None
    units = pa.array(values, type=pa.int64())
    whole = pa.table({"x": pa.array(X[:, 0]), "y": pa.array(X[:, 1]), "unit": units})
    folder.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(X)), 5)):
        pq.write_table(whole.take(pa.array(chunk)), folder / f"part-{i}.parquet")
    return units


def test_a_frame_read_with_pandas_default_integers_is_refused(client, grid, data, key, tmp_path):
    """A dask DataFrame the caller read from Parquet with dask's default
    types declares an integer unit column int64, but pandas makes it float64
    in each partition that holds a null: ids near 2**60 round to multiples
    of 256 and merge, so one row without an id merged other units (the
    break of round 6, on a frame read by the caller; round 7). How the
    frame was read and its declared types are public: refused before any
    record is read, with the way to read it exactly; read so, the counts
    are the in-memory ones."""
    X, ids = data
    folder = tmp_path / "pq"
    units = _parquet_with_a_missing_id(X, ids, folder)
    backend = DaskBackend(client=client, columns=["x", "y"])
    default = dd.read_parquet(str(folder))
    assert default.dtypes["unit"] == np.int64  # declared int64; its partitions with a null are float64
    for frame in (default, default[default.x > -100.0], default.astype({"unit": "Int64"})):
        with pytest.raises(ValueError, match="dtype_backend") as e:
            backend.check_files(frame, 2, unit="unit")  # the estimator's early check
        assert str(2**60) not in str(e.value)
        with pytest.raises(ValueError, match="dtype_backend"):
            backend.count_units(grid, frame, "unit", BOUND, key)
    want = count_units(grid, X, units, BOUND, key)
    exact = dd.read_parquet(str(folder), dtype_backend="numpy_nullable")
    assert_same_counts(backend.count_units(grid, exact, "unit", BOUND, key), want)
    assert want[1].sum() > 5 * N_UNITS  # not vacuous: every unit counts, not a few merged ones
    # a frame typed in memory (no missing id can retype a partition) is read as before
    frame = dd.from_pandas(table(X, unit_values(ids, "int")), npartitions=4)
    got = backend.count_units(grid, frame, "unit", BOUND, key)
    assert_same_counts(got, count_units(grid, X, unit_values(ids, "int"), BOUND, key))


def test_a_frame_read_from_csv_by_dask_is_refused_whatever_its_unit_type(client, grid, data, key, tmp_path):
    """dask's read_csv types a column from the first rows: integer ids
    with a missing one there become float64 (rounded), and a missing one
    later fails the fit; read as text, one row of another length still
    fails it (round 13). Refused from the reader (public) either way; the
    files' paths are read by the backend itself, each id as text."""
    X, ids = data
    df = table(X, (2**60 + ids.astype(np.int64)).astype(object))
    path = write_csv(df, tmp_path / "csv")
    backend = DaskBackend(client=client, columns=["x", "y"])
    for frame in (dd.read_csv(path), dd.read_csv(path, dtype={"unit": str})):
        with pytest.raises(ValueError, match="paths"):
            backend.check_files(frame, 2, unit="unit")
    want = count_units(grid, X, df["unit"].astype(str).to_numpy(), BOUND, key)
    assert_same_counts(backend.count_units(grid, path.as_posix(), "unit", BOUND, key), want)


def test_the_estimator_refuses_such_a_frame_before_a_ledger_charges(client, data, tmp_path):
    """The refusal is public (the frame's types and readers): the estimator
    says it before the ledger reserves anything."""
    from dpdbscan.ledger import Ledger

    X, ids = data
    folder = tmp_path / "pq"
    _parquet_with_a_missing_id(X, ids, folder)
    led = Ledger.create(tmp_path / "b.ledger", "devices", 5.0, 1e-5, unit="unit")
    est = DPDBSCAN(
        eps=EPS,
        min_samples=5,
        bounds=BOUNDS,
        delta=1e-6,
        max_cells_per_unit=5,
        ledger=led,
        backend=DaskBackend(client=client, columns=["x", "y"]),
    )
    with pytest.raises(ValueError, match="dtype_backend"):
        est.fit(dd.read_parquet(str(folder)), units="unit")
    assert len(led.account().releases) == 0
    est.fit(dd.read_parquet(str(folder), dtype_backend="numpy_nullable"), units="unit")
    assert len(led.account().releases) == 1


def test_a_folder_named_as_a_partition_never_decides_whether_parquet_paths_are_read(client, grid, tmp_path):
    """The backend's own read of Parquet paths takes no column from folder
    names, as the in-memory reader takes none. dask reads ``cab=VALUE``
    folders (hive partitions) as a column by default, typed from every
    folder's value, so one more cab's folder ``cab=1`` beside ``cab=01``
    made two equal integers and failed the whole read, at event level too
    (round 14: D counted, D' not). Now D' counts D and its rows; a unit
    column that only folder names hold is refused from the schema, for D
    and D' alike, with the message in-memory reading gives."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def write(root, cabs):
        for c in cabs:
            (root / f"cab={c}").mkdir(parents=True)
            xy = np.random.default_rng([ord(ch) for ch in c]).uniform(1, 9, (50, 2))  # each cab its own rows
            pq.write_table(pa.table({"x": xy[:, 0], "y": xy[:, 1]}), root / f"cab={c}" / "part-0.parquet")
        return root

    cabs = [f"{i:02d}" for i in range(1, 21)]
    d = write(tmp_path / "d", cabs)
    d1 = write(tmp_path / "d1", cabs)
    write(d1, ["1"])
    backend = DaskBackend(client=client, columns=["x", "y"])
    counts = {}
    for name, path in (("d", d), ("d1", d1)):
        got = backend.count(grid, str(path))
        counts[name] = dict(zip(got.keys.tolist(), got.counts.tolist()))
    assert sum(counts["d1"].values()) == sum(counts["d"].values()) + 50
    assert all(counts["d1"].get(k, 0) >= v for k, v in counts["d"].items())
    refusals = []
    for path in (d, d1):
        with pytest.raises(ValueError, match="no column 'cab'") as info:
            backend.count_units(grid, str(path), "cab", BOUND, BoundingKey.draw(SeededSource(1)))
        refusals.append(str(info.value).replace(str(d1), str(d)))
    assert refusals[0] == refusals[1]


@pytest.mark.parametrize("lacks", ["unit", "y"])
def test_one_more_file_without_a_read_column_is_read_as_memory_reads_it(
    client, grid, data, key, tmp_path, lacks
):
    """One more unit's file of a Parquet dataset whose schema lacks the unit
    (or a coordinate) column: dask read the files with the first one's
    columns and failed on it ("['unit'] not in index", a traceback after a
    ledger had reserved the release), where D, without that file, was
    released. The in-memory reader reads such a file's rows without the
    column (no unit, or a NaN coordinate: dropped), and so does the backend
    now (round 16): D' counts as D."""
    X, ids = data
    units = unit_values(ids, "int")
    d = write_parquet(table(X, units), tmp_path / "d")
    d1 = write_parquet(table(X, units), tmp_path / "d1")
    one = table(np.array([[5.0, 5.0]]), np.array([10**12])).drop(columns=[lacks])
    one.to_parquet(d1 / "part-9.parquet", index=False)
    backend = DaskBackend(client=client, columns=["x", "y"])
    want = backend.count_units(grid, d.as_posix(), "unit", BOUND, key)
    got = backend.count_units(grid, d1.as_posix(), "unit", BOUND, key)
    np.testing.assert_array_equal(got.keys, want.keys)
    np.testing.assert_array_equal(got.counts, want.counts)
    assert backend.input_counts.rows == len(X) + 1
    # and as the numpy backend counts the points without that row
    assert_same_counts(got, count_units(grid, X, units, BOUND, key))


def test_integer_and_text_ids_of_files_never_become_one_unit(client, grid, key, tmp_path):
    """File A's ids are the integers 0-49, file B's the text '0'-'49': 100
    units (text and numbers never share one). Each unit's rows lie in 8
    cells, and each keeps its k = 5 busiest. dask before 2024.12 (the oldest
    dask the project admits) turned the backend's object column of ids to
    text when it planned the reads, so 20 and '20' were one unit keeping 5
    cells for both; the counts were half the in-memory ones."""
    rng = np.random.default_rng(70090)
    n_units, cells = 50, 8
    centres = rng.uniform(1, 9, (2, n_units, cells, 2))
    rows = []
    for f in range(2):
        for u in range(n_units):
            for c in range(cells):
                rows.append((*centres[f, u, c], u if f == 0 else str(u)))
    folder = tmp_path / "ab"
    folder.mkdir()
    half = n_units * cells
    for f, part in enumerate((rows[:half], rows[half:])):
        x, y, ids = zip(*part, strict=True)
        pd.DataFrame({"x": x, "y": y, "unit": list(ids)}).to_parquet(
            folder / f"part-{f}.parquet", index=False
        )
    X = np.array([(r[0], r[1]) for r in rows])
    units = [r[2] for r in rows]
    bound = UnitBound(max_cells_per_unit=5, max_points_per_cell=1, cell_choice="busiest")
    want = count_units(grid, X, units, bound, key)
    got = DaskBackend(client=client, columns=["x", "y"]).count_units(
        grid, folder.as_posix(), "unit", bound, key
    )
    assert want[1].sum() == 2 * n_units * 5  # 100 units of 5 cells each (distinct cells, m = 1)
    assert_same_counts(got, want)
