"""A Parquet dataset of one file per unit: one file's schema never decides
whether a release happens, nor how the other files' rows are read
(docs/privacy.md section 8, "one unit's Parquet file of another schema").

D is a folder of four Parquet files (60 units, 1,200 rows: ``lon``, ``lat``,
``cab`` int64, ``t`` int64 seconds, ``s`` 0/1). Each neighbour D' adds one
more unit's file of an odd schema: a read column of the ``null`` type (how
pandas and pyarrow write an all-missing column), no unit column in a file
that sorts first, a coordinate of text, the unit's ids as floats or text, a
time as a timestamp. Before, each was refused from the schemas (exit status
2, "declare column ... with different types" or "no column 'cab'") where D
was released: no finite epsilon covers that. Now each file is read by its
own schema (:mod:`dpdbscan.files.parquetfiles`): the odd file's unreadable
rows are dropped, and the seeded release of D' is that of D without them,
or of D plus the same rows written with D's types, on both backends, plain
and ``--per day``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from dpdbscan.files import read_input  # noqa: E402
from dpdbscan.files.layout import ReadOptions  # noqa: E402
from dpdbscan.files.reader import read_columns  # noqa: E402
from dpdbscan.release.bounding import factorize  # noqa: E402

from clirun import run  # noqa: E402

N_UNITS, PER_UNIT = 60, 20
T0 = 1_212_000_000
BOUNDS = ["--bounds", "-122.5", "37.7", "-122.35", "37.85"]
FIT = [
    "--columns", "lon", "lat", "--unit", "cab", "--max-cells-per-unit", "4", "--delta", "1e-6",
    "--epsilon", "1", "--eps", "0.003", "--minpts", "5", *BOUNDS, "--no-png", "--no-geojson",
    "--no-progress", "--seed", "70071",
]  # fmt: skip
PER_DAY = ["--per", "day", "--time", "t", "--from", "2008-05-28", "--to", "2008-06-01"]


def _rows():
    rng = np.random.default_rng(70071)
    cab = np.repeat(np.arange(N_UNITS), PER_UNIT)
    lon = -122.42 + rng.normal(0, 0.002, cab.size)
    lat = 37.77 + rng.normal(0, 0.002, cab.size)
    t = T0 + np.arange(cab.size) * 180
    s = (np.arange(cab.size) // 3) % 2
    return lon, lat, cab, t, s


def write_d(folder):
    """D: four files, each a quarter of the units, of one schema."""
    folder.mkdir(parents=True)
    lon, lat, cab, t, s = _rows()
    for k in range(4):
        m = cab % 4 == k
        table = pa.table({"lon": lon[m], "lat": lat[m], "cab": cab[m], "t": t[m], "s": s[m]})
        pq.write_table(table, folder / f"part-{k}.parquet")
    return folder


def one_unit(n=12, unit_id=10**6, **columns):
    """One more unit's rows, spread over more than k cells (so that the
    unit's own priorities decide which it keeps): D's schema, a column
    replaced by ``columns`` (None: left out)."""
    rng = np.random.default_rng(70072)
    cols = {
        "lon": pa.array(-122.42 + rng.uniform(-0.01, 0.01, n)),
        "lat": pa.array(37.77 + rng.uniform(-0.01, 0.01, n)),
        "cab": pa.array([unit_id] * n, pa.int64()),
        "t": pa.array(T0 + 60 * np.arange(n), pa.int64()),
        "s": pa.array(np.arange(n) % 2, pa.int64()),
    }
    for name, col in columns.items():
        if col is None:
            del cols[name]
        else:
            cols[name] = col(n) if callable(col) else col
    return pa.table(cols)


def with_file(tmp_path, name, table, file="part-9"):
    folder = write_d(tmp_path / name)
    pq.write_table(table, folder / f"{file}.parquet")
    return folder


#: D' = D + one unit's file whose rows are all dropped (read as missing, or
#: unreadable): its release is D's. (name, extra options, the file's name, its columns)
DROPPED = {
    "unit typed null": ([], "part-9", {"cab": pa.nulls}),
    "unit typed null, per day": (PER_DAY, "part-9", {"cab": pa.nulls}),
    "lon typed null": ([], "part-9", {"lon": pa.nulls}),
    "time typed null, per day": (PER_DAY, "part-9", {"t": pa.nulls}),
    "status typed null, trip ends": (["--trip-ends", "s", "--time", "t"], "part-9", {"s": pa.nulls}),
    "no unit column, sorting first": ([], "a-first", {"cab": None}),
    "no unit column, sorting first, per day": (PER_DAY, "a-first", {"cab": None}),
    "lon as text": ([], "part-9", {"lon": lambda n: pa.array(["-122.42"] * n)}),
    "time as text of no time, per day": (PER_DAY, "part-9", {"t": lambda n: pa.array(["soon"] * n)}),
}

#: D' = D + one unit's file of other types, read by its own: its release is
#: that of D + the same rows written with D's types (``cab`` int64, ``t``
#: int64 seconds, ``lon`` double). (extra options, the file's name, its
#: columns, the reference file's columns)
RETYPED = {
    "ids as double": ([], "part-9", {"cab": pa.array([1e6] * 12)}, {}),
    "ids as double, per day": (PER_DAY, "part-9", {"cab": pa.array([1e6] * 12)}, {}),
    "ids as float32, sorting first, one of D's units": (
        [],
        "a-first",
        {"cab": pa.array([7.0] * 12, pa.float32())},
        {"cab": pa.array([7] * 12)},
    ),
    "ids as int32": ([], "part-9", {"cab": pa.array([10**6] * 12, pa.int32())}, {}),
    # text ids: one unit of D' (its word, a keyed hash, is not an integer's:
    # three rows, in at most k cells, so that no word chooses among them)
    "ids as text": ([], "part-9", {"n": 3, "cab": lambda n: pa.array(["u1"] * n)}, {"n": 3}),
    "lon as int64": (
        [],
        "part-9",
        {"lon": pa.array([-122] * 12, pa.int64())},
        {"lon": pa.array([-122.0] * 12)},
    ),
    "time as timestamp, per day": (
        PER_DAY,
        "part-9",
        {"t": pa.array(T0 + 60 * np.arange(12), pa.timestamp("s"))},
        {},
    ),
}


def release(capsys, tmp_path, folder, *extra):
    """The seeded release of ``folder`` (exit status, the noisy histogram,
    the spans, the table over time if any); ``status`` != 0: the error."""
    out_dir = tmp_path / f"out-{folder.name}"
    rc, out, err = run(capsys, "fit", folder, *FIT, "--out-dir", out_dir, "--name", "m", *extra)
    if rc != 0:
        return rc, err
    model = json.loads((out_dir / "m.spans.json").read_text())
    periods = out_dir / "m.periods.csv"
    table = periods.read_text() if periods.exists() else None
    return rc, (model["histogram"], model["spans"], table)


@pytest.mark.parametrize("case", list(DROPPED))
def test_one_more_file_whose_rows_read_as_missing_gives_ds_release(capsys, tmp_path, case):
    """Each failed on the code before (status 2 for D', 0 for D)."""
    extra, file, columns = DROPPED[case]
    d = write_d(tmp_path / "d")
    d1 = with_file(tmp_path, "d1", one_unit(**columns), file)
    want = release(capsys, tmp_path, d, *extra)
    assert want[0] == 0, want[1]
    assert release(capsys, tmp_path, d1, *extra) == want


@pytest.mark.parametrize("case", list(RETYPED))
def test_one_more_file_of_other_types_is_read_by_its_own(capsys, tmp_path, case):
    """Each failed on the code before (D' refused, status 2)."""
    extra, file, columns, reference = RETYPED[case]
    d1 = with_file(tmp_path, "d1", one_unit(**columns), file)
    ref = with_file(tmp_path, "ref", one_unit(**reference), file)
    want = release(capsys, tmp_path, ref, *extra)
    assert want[0] == 0, want[1]
    assert release(capsys, tmp_path, d1, *extra) == want


def test_a_column_no_file_declares_is_still_refused(capsys, tmp_path):
    """A column the first file lacks is the dataset's when another file
    declares it (it was refused, "no column 'cab'"); a typo (public: the
    options) is still refused before anything is read, naming the option's
    value and no file's."""
    d = with_file(tmp_path, "d", one_unit(cab=None), "a-first")
    assert release(capsys, tmp_path, d)[0] == 0
    rc, out, err = run(capsys, "fit", d, *FIT, "--unit", "cabb", "--out-dir", tmp_path / "typo")
    assert rc == 2 and "cabb" in err and out == ""
    assert not (tmp_path / "typo").exists()


# --------------------------------------------------------------------------- #
# the reader: the other files' rows, and their partition into units, unchanged


def _read(folder):
    got = read_input(folder, columns=("lon", "lat"), unit="cab", also=("t", "s"))
    return got


def _partition(units, keep):
    codes, _ = factorize(units)
    codes = codes[keep]
    first = {}
    return [first.setdefault(c, len(first)) for c in codes.tolist()]


@pytest.mark.parametrize(
    "odd",
    [
        {"cab": pa.array([1.0, 2.5, 3.0] * 4)},  # 1.0 is D's unit 1; 2.5 a new unit
        {"cab": pa.array(["1", "2", "3"] * 4)},  # text: never one of D's number ids
        {"cab": pa.array([b"1", b"2", b"3"] * 4)},
        {"cab": pa.array([1, 2, 3] * 4, pa.uint64())},
        {"cab": pa.array([1, 2, 3] * 4, pa.int8())},
        {"cab": pa.array(["1", "2", "3"] * 4).dictionary_encode()},
    ],
    ids=["double", "string", "binary", "uint64", "int8", "dictionary"],
)
def test_ids_of_one_file_are_read_by_its_type_and_never_regroup_the_others(tmp_path, odd):
    """Numbers by their exact value (1 and 1.0 one unit), text by its
    characters, bytes by their bytes, never one unit across kinds; the rows
    of D's files keep their grouping (and the odd file's rows are grouped
    as the library groups its ids)."""
    d = _read(write_d(tmp_path / "d"))
    table = one_unit(**odd)
    got = _read(with_file(tmp_path, "d1", table, "a-first"))
    n = len(table)
    assert got.X.shape[0] == d.X.shape[0] + n
    np.testing.assert_array_equal(got.X[n:], d.X)
    codes, uniques = factorize(got.units)
    codes_d, _ = factorize(d.units)
    # D's rows: the same partition into units
    assert _partition(got.units, slice(n, None)) == _partition(d.units, slice(None))
    kind = odd["cab"].type
    ids = table.column("cab").to_pylist()
    ids_d = d.units.to_pylist()
    for i, v in enumerate(ids):
        same = [j for j, w in enumerate(ids_d) if w == v and not isinstance(v, (str, bytes))]
        if pa.types.is_dictionary(kind) or isinstance(v, (str, bytes)):
            assert codes[i] not in set(codes[n:].tolist())  # a text id is no number id
        elif same:
            assert codes[i] == codes[n + same[0]]  # 1.0 (or uint64 1) is D's unit 1
        else:
            assert codes[i] not in set(codes[n:].tolist())
    assert codes_d.size == d.X.shape[0]


def test_a_time_column_of_files_of_different_types_is_read_file_by_file(tmp_path):
    """A time as int64 seconds in D's files and a timestamp in one more:
    each file's times by its own type, the same seconds; the second pass
    (read_columns) gives the same as the points' own pass."""
    from dpdbscan.traces.times import chunks_of, parse_times, seconds_of_parts

    table = one_unit(t=pa.array((T0 + 60 * np.arange(12)) * 1000, pa.timestamp("ms")))
    folder = with_file(tmp_path, "d1", table, "a-first")
    got = _read(folder)
    t, s = read_columns(folder, "t", "s", ReadOptions(columns=("lon", "lat"), unit="cab"))
    want = np.concatenate([T0 + 60.0 * np.arange(12), _rows()[3][np.argsort(_rows()[2] % 4, kind="stable")]])
    np.testing.assert_array_equal(seconds_of_parts(chunks_of(got.companions[0])), want)
    np.testing.assert_array_equal(parse_times(t), want)
    np.testing.assert_array_equal(parse_times(got.companions[1]), parse_times(s))


# --------------------------------------------------------------------------- #
# the Dask backend: the same releases


@pytest.fixture(scope="module")
def scheduler():
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    )
    yield cluster.scheduler_address
    cluster.close()


DASK_CASES = [
    ("dropped", "unit typed null"),
    ("dropped", "unit typed null, per day"),
    ("dropped", "lon typed null"),
    ("dropped", "time typed null, per day"),
    ("dropped", "no unit column, sorting first"),
    ("dropped", "lon as text"),
    ("retyped", "ids as double"),
    ("retyped", "ids as double, per day"),
    ("retyped", "ids as float32, sorting first, one of D's units"),
    ("retyped", "ids as text"),
    ("retyped", "time as timestamp, per day"),
]


@pytest.mark.parametrize("which, case", DASK_CASES)
def test_the_dask_backend_gives_the_same_releases(capsys, tmp_path, scheduler, which, case):
    """Each failed on the code before (D' refused, status 2); and the
    backend's release is the in-memory one (a table over time is the
    backend's own: its periods are shuffled, not counted in memory)."""
    dask = ["--backend", "dask", "--scheduler", scheduler]
    if which == "dropped":
        extra, file, columns = DROPPED[case]
        ref = write_d(tmp_path / "ref")
    else:
        extra, file, columns, reference = RETYPED[case]
        ref = with_file(tmp_path, "ref", one_unit(**reference), file)
    d1 = with_file(tmp_path, "d1", one_unit(**columns), file)
    want = release(capsys, tmp_path, ref, *extra, *dask)
    assert want[0] == 0, want[1]
    assert release(capsys, tmp_path, d1, *extra, *dask) == want
    if "--per" not in extra:  # the backend's count is the in-memory one
        assert release(capsys, tmp_path, ref, *extra) == want


def test_a_unit_column_every_file_declares_null_reads_as_missing(capsys, tmp_path):
    """No file holds an id (each declares the unit ``null``): the rows have
    no unit and are dropped, and the (empty) release is made, as for D'
    where one more file declares it with ids; it was refused ("has type
    null"), so that one more unit's file decided whether anything was
    released; a single file's likewise."""
    folder = tmp_path / "nulls"
    folder.mkdir()
    for k in range(2):
        pq.write_table(one_unit(cab=pa.nulls), folder / f"part-{k}.parquet")
    got = _read(folder)
    assert got.n_missing_unit == got.X.shape[0] == 24
    assert release(capsys, tmp_path, folder)[0] == 0
    pq.write_table(one_unit(), folder / "part-9.parquet")
    assert release(capsys, tmp_path, folder)[0] == 0
    # a single file too: written with one more row that has an id, its unit
    # column would be typed and read; all missing, it is ``null`` (it was
    # refused, "has type null": D of no unit refused, D' of one released)
    single = tmp_path / "single.parquet"
    pq.write_table(one_unit(cab=pa.nulls), single)
    got = read_input(single, columns=("lon", "lat"), unit="cab")
    assert got.n_missing_unit == got.X.shape[0] == 12
    assert release(capsys, tmp_path, single)[0] == 0
    one_more = pa.concat_tables([one_unit(cab=lambda n: pa.array([None] * n, pa.int64())), one_unit(n=1)])
    pq.write_table(one_more, single)
    assert release(capsys, tmp_path, single)[0] == 0


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_a_folder_read_without_its_columns_named_is_refused_from_the_options(
    capsys, tmp_path, scheduler, backend
):
    """Without ``--columns`` the coordinates were every numeric column of the
    files' schemas together (the first file's before): one more unit's file
    declaring one more number (``speed``) added a dimension, so D' was
    refused against the bounds' two where D was released. A folder (public:
    the input's kind) now needs its columns named, refused before anything is
    read; a single file still takes its own schema's numbers."""
    d = write_d(tmp_path / "d")
    d1 = with_file(tmp_path, "d1", one_unit().append_column("speed", pa.array([3.0] * 12)))
    dask = [] if backend == "numpy" else ["--backend", "dask", "--scheduler", scheduler]
    no_columns = [a for a in FIT if a not in ("--columns", "lon", "lat")]
    for folder in (d, d1):
        rc, out, err = run(capsys, "fit", folder, *no_columns, *dask, "--out-dir", tmp_path / "o")
        assert rc == 2 and out == ""
        # the command line's Dask door already wanted --columns beside --unit
        assert "needs its coordinate columns named" in err or (backend == "dask" and "--columns" in err)
        assert not (tmp_path / "o").exists()
    if backend == "dask":  # the backend's own door (the Python API), driver side
        from dpdbscan.release.backends.dask_backend import DaskBackend

        for source in (str(d1), str(d1 / "*.parquet"), sorted(map(str, d1.glob("*.parquet")))):
            with pytest.raises(ValueError, match="needs its coordinate columns named"):
                DaskBackend(client=None).n_features(source, unit="cab")
        assert DaskBackend(client=None, columns=["lon", "lat"]).n_features(str(d1), unit="cab") == 2
    # named, D' is D plus one unit's rows: both released
    assert release(capsys, tmp_path, d, *dask)[0] == 0
    assert release(capsys, tmp_path, d1, *dask)[0] == 0
    single = tmp_path / "single.parquet"
    pq.write_table(one_unit().drop_columns(["t", "s"]), single)
    if backend == "numpy":  # a single file's schema gives the default coordinates
        rc, out, err = run(capsys, "fit", single, *no_columns, "--out-dir", tmp_path / "s")
        assert rc == 0, err
    else:
        assert DaskBackend(client=None).n_features(str(single), unit="cab") == 2


def _dates(days):
    return pa.array(np.asarray(days, dtype=np.int32)).cast(pa.date32())


@pytest.mark.parametrize("odd", ["dates", "ids as double"])
def test_a_date_past_the_years_in_a_file_read_alone_drops_its_row_on_dask(capsys, tmp_path, scheduler, odd):
    """Where the files' schemas differ, the Dask backend reads each file
    alone (``_files_alone``), and it made a date column's values Python
    ``date`` objects: one date past year 9999 (a ``date32`` holds 2**31 - 1
    days) failed the whole read, after the plan was made ("year 5881580 is
    out of range", exit status 2), where the in-memory reader (and dask
    reading files of one schema together) drops that row alone. Two
    neighbours, each refused before on dask where D was released: (1) D of
    times in seconds, D' = D + one unit's file of dates, one past the
    years, the others before the horizon; (2) D of date files, one date
    past the years (released: the files share one schema), D' = D + one
    unit's file declaring its ids as floats, so that every file is read
    alone. Round 18; both fail on the code before. Now each D' gives the
    release it must: D's in (1), that of D plus the same rows written with
    D's types in (2)."""
    dask = ["--backend", "dask", "--scheduler", scheduler]
    if odd == "dates":
        d = write_d(tmp_path / "d")
        table = one_unit(t=lambda n: _dates([2**31 - 1] + [0] * (n - 1)))
        want = release(capsys, tmp_path, d, *PER_DAY, *dask)
    else:
        lon, lat, cab, t, s = _rows()
        days = (t // 86400).astype(np.int32)
        days[0] = 2**31 - 1  # year 5881580: no Python date
        d = tmp_path / "d"
        d.mkdir()
        for k in range(4):
            m = cab % 4 == k
            pq.write_table(
                pa.table({"lon": lon[m], "lat": lat[m], "cab": cab[m], "t": _dates(days[m]), "s": s[m]}),
                d / f"part-{k}.parquet",
            )
        table = one_unit(cab=pa.array([1e6] * 12), t=lambda n: _dates([0] * n))
        ref = tmp_path / "ref"
        ref.mkdir()
        for f in d.iterdir():
            (ref / f.name).write_bytes(f.read_bytes())
        pq.write_table(one_unit(t=lambda n: _dates([0] * n)), ref / "part-9.parquet")
        want = release(capsys, tmp_path, ref, *PER_DAY, *dask)
    assert want[0] == 0, want[1]
    d1 = tmp_path / "d1"
    d1.mkdir()
    for f in d.iterdir():
        (d1 / f.name).write_bytes(f.read_bytes())
    pq.write_table(table, d1 / "part-9.parquet")
    assert release(capsys, tmp_path, d1, *PER_DAY, *dask) == want
