"""A trace's time and status read in the points' own pass from CSV and
Parquet (``open_input(also=)``), against the second pass they were read in
before (:func:`dpdbscan.files.read_columns`, still the path for what the
one pass leaves to it): the same rows, the same units, the same counts, the
same values of the time and status row for row, on awkward files (bad and
empty times, quoted fields, a byte order mark, CRLF, malformed and non-UTF-8
lines, blocks cut anywhere), and the same seeded release through the
command line. What the one pass cannot read as that pass did (a time
column that is also a coordinate, another number of fields) is left to it,
refused or read as before."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from dpdbscan import load_model
from dpdbscan.files import ReadOptions, csvfile, open_input, read_columns, reader

from clirun import run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

T0 = 1_211_018_400
#: Times as a trace file may hold them: unix seconds, ISO text, and bad ones.
AWKWARD_TIMES = [
    str(T0),
    "",
    "NA",
    "not a time",
    '"2008-05-17T10:00:00Z"',
    "2008-05-17 10:00:05",
    f" {T0 + 7} ",
    '"1,5"',
    "nan",
    f"{T0 + 9}.5",
]


def awkward_csv(n: int = 200, *, seed: int = 0, header: bool = True, crlf: bool = False) -> bytes:
    """Rows ``x,y,cab,time,occupied`` with every kind of trouble a record
    may have, each in some rows: bad and empty times, quoted fields holding
    the delimiter, a missing unit, a coordinate that is not a number, a
    line with too few or too many fields, a line that is not UTF-8, a quote
    that does not close, a byte order mark opening a line, empty lines. The
    kinds of line repeat every 23 rows: 200 rows hold each kind 8 or 9
    times (the reader splits a block around each bad line, a few ms each)."""
    rng = np.random.default_rng(seed)
    lines = ["\ufeffx,y,cab,time,occupied"] if header else []
    for i in range(n):
        x, y = (float(v) for v in rng.uniform(0, 1, 2))
        cab = f"c{rng.integers(0, 7)}"
        t = AWKWARD_TIMES[i % len(AWKWARD_TIMES)] if i % 3 else str(T0 + 60 * i)
        flag = ["0", "1", "", "true", '"1"'][i % 5]
        kind = i % 23
        if kind == 1:
            lines.append(f"{x!r},{y!r},{cab}")  # too few fields
        elif kind == 2:
            lines.append(f"{x!r},{y!r},{cab},{t},{flag},extra")  # too many
        elif kind == 3:
            lines.append(f"{x!r},{y!r},,{t},{flag}")  # no unit
        elif kind == 4:
            lines.append(f"abc,{y!r},{cab},{t},{flag}")  # a coordinate that is not a number
        elif kind == 5:
            lines.append(f'"{x!r}",{y!r},"{cab}",{t},{flag}')  # quoted fields
        elif kind == 6:
            lines.append(f'{x!r},{y!r},{cab},"{T0 + i},{flag}')  # a quote that does not close
        elif kind == 7:
            lines.append("")
        elif kind == 8:
            lines.append(f"\ufeff{x!r},{y!r},{cab},{t},{flag}")  # a mark opening a line
        else:
            lines.append(f"{x!r},{y!r},{cab},{t},{flag}")
    if not header:
        lines[0] = "\ufeff" + lines[0]  # the file's own mark, before its first record
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    data = text.encode("utf-8")
    # a line that is not UTF-8, in the middle
    cut = data.index(b"\n", len(data) // 2) + 1
    return data[:cut] + b"0.5,0.5,c\xff,\xfe" + str(T0).encode() + b",1\n" + data[cut:]


def _values(column):
    """A column's values as Python objects (bytes or numbers, None where null)."""
    if column is None:
        return None
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return arr.type, arr.to_pylist()


def _same_points(a, b) -> None:
    assert np.array_equal(a.X, b.X, equal_nan=True)
    assert a.names == b.names and a.unit_name == b.unit_name
    assert _values(a.units) == _values(b.units)
    assert (a.n_unparseable, a.n_malformed, a.n_missing_unit) == (
        b.n_unparseable,
        b.n_malformed,
        b.n_missing_unit,
    )


def _both_ways(path, options, also, *, d=None):
    """``(points and companions read in one pass, points read alone,
    companions read by read_columns)``."""
    with open_input(path, options, d=d, also=also) as plan:
        assert plan.companions
        one = plan.read(False)
    with open_input(path, options, d=d) as plan:
        alone = plan.read(False)
    two = read_columns(path, also[0], also[1] if len(also) > 1 else None, options, d=d)
    return one, alone, two


def _check_one_pass(path, options, also, *, d=None) -> None:
    one, alone, two = _both_ways(path, options, also, d=d)
    _same_points(one, alone)
    assert one.companions is not None and len(one.companions) == len(also)
    for got, want in zip(one.companions, two):
        assert _values(got) == _values(want)
        assert len(got) == one.X.shape[0]


@pytest.fixture(params=[1 << 22, 97], ids=["blocks-4MB", "blocks-97B"])
def block_size(request, monkeypatch):
    """The reader's blocks of text: its own size, and tiny ones so that a
    block starts on every kind of line (a mark, a malformed line, ...)."""
    monkeypatch.setattr(csvfile, "_BATCH", request.param)
    return request.param


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_csv_with_a_header_reads_time_and_status_as_the_second_pass_did(tmp_path, block_size, gz, crlf):
    data = awkward_csv(header=True, crlf=crlf)
    path = tmp_path / ("t.csv.gz" if gz else "t.csv")
    path.write_bytes(gzip.compress(data) if gz else data)
    by_name = ReadOptions(columns=("x", "y"), unit="cab")
    _check_one_pass(path, by_name, ["time", "occupied"])
    _check_one_pass(path, by_name, ["time"])
    by_index = ReadOptions(columns=(0, 1), unit=2, header=True)
    _check_one_pass(path, by_index, [3, 4])
    # the default coordinates (the time, status and unit left out by the caller's choice)
    default = ReadOptions(unit="cab", header=True)
    with open_input(
        path, default, also=["time", "occupied"], choose=lambda names, numeric: ["x", "y"]
    ) as plan:
        got = plan.read(False)
    two = read_columns(path, "time", "occupied", default, choose=lambda names, numeric: ["x", "y"])
    assert [_values(c) for c in got.companions] == [_values(c) for c in two]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_csv_without_a_header_reads_time_and_status_as_the_second_pass_did(tmp_path, block_size, gz):
    data = awkward_csv(header=False)
    path = tmp_path / ("t.csv.gz" if gz else "t.csv")
    path.write_bytes(gzip.compress(data) if gz else data)
    _check_one_pass(path, ReadOptions(columns=(0, 1), unit=2, header=False, fields=5), [3, 4])
    _check_one_pass(path, ReadOptions(columns=(0, 1), header=False, fields=5), [3])  # no unit
    # the time in the unit's own field, and time and status in one field
    _check_one_pass(path, ReadOptions(columns=(0, 1), unit=3, header=False, fields=5), [3, 4])
    _check_one_pass(path, ReadOptions(columns=(0, 1), unit=2, header=False, fields=5), [3, 3])


def test_a_file_the_one_pass_would_read_otherwise_is_left_to_the_second(tmp_path):
    """Without --fields, a file without a header has d fields a line, d + 1
    with a unit: read with the time as its unit, the second pass expects
    one more than the points' pass without a unit. The one pass does not
    guess: the file is read as before, twice."""
    path = tmp_path / "t.csv"
    path.write_bytes(b"0.1,0.2,5\n0.3,0.4,6\n0.5,0.6\n")
    options = ReadOptions(header=False)
    with open_input(path, options, d=2, also=[2]) as plan:
        assert not plan.companions
        got = plan.read(False)
    assert got.companions is None
    times, _ = read_columns(path, 2, None, options, d=2)
    assert _values(times)[1] == [b"5", b"6", None]


def test_a_time_column_that_is_a_coordinate_is_refused_as_before(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(awkward_csv(40))
    options = ReadOptions(columns=("x", "time"), unit="cab")
    with open_input(path, options, also=["time"]) as plan:
        assert not plan.companions  # left to the second pass, which refuses it
        got = plan.read(False)
    assert got.companions is None
    with pytest.raises(ValueError, match="privacy unit"):
        read_columns(path, "time", None, options)


def _parquet_table(n: int = 3000, seed: int = 1):
    rng = np.random.default_rng(seed)
    times = T0 + np.arange(n, dtype=np.int64) * 30
    present = rng.random(n) > 0.1
    iso = [None if not p else f"2008-05-17T10:{i % 60:02d}:00Z" for i, p in enumerate(present)]
    iso[5] = "not a time"
    return pa.table(
        {
            "x": pa.array(np.where(rng.random(n) > 0.05, rng.uniform(0, 1, n), np.nan)),
            "y": rng.uniform(0, 1, n),
            "cab": pa.array([None if i % 97 == 0 else f"c{i % 9}" for i in range(n)]).dictionary_encode(),
            "time": pa.array(times, mask=~present),
            "stamp": pa.array(times * 1000, type=pa.timestamp("ms"), mask=~present),
            "iso": pa.array(iso, type=pa.string()),
            "occupied": pa.array(rng.integers(0, 2, n).astype(np.int8)),
        }
    )


@pytest.mark.parametrize("time", ["time", "stamp", "iso", 3])
def test_parquet_reads_time_and_status_from_the_points_batches(tmp_path, time):
    path = tmp_path / "t.parquet"
    pq.write_table(_parquet_table(), path, row_group_size=700)
    _check_one_pass(path, ReadOptions(columns=("x", "y"), unit="cab"), [time, "occupied"])


def test_a_parquet_dataset_and_a_time_that_is_a_coordinate(tmp_path):
    table = _parquet_table()
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(table.slice(0, 1000), root / "a.parquet")
    pq.write_table(table.slice(1000), root / "b.parquet")
    _check_one_pass(root, ReadOptions(columns=("x", "y"), unit="cab"), ["time", "occupied"])
    # an integer time is numeric: also a coordinate, read from the same batches
    _check_one_pass(tmp_path / "ds", ReadOptions(columns=("x", "time"), unit="cab"), ["time"])


def test_a_parquet_time_column_it_lacks_is_left_to_the_second_pass(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(_parquet_table(50), path)
    with open_input(path, ReadOptions(columns=("x", "y")), also=[9]) as plan:
        assert not plan.companions
    with pytest.raises(ValueError, match="out of range"):
        read_columns(path, 9, None, ReadOptions(columns=("x", "y")))


def test_a_headerless_trace_folder_reads_each_file_once(tmp_path, monkeypatch):
    root = tmp_path / "cabs"
    root.mkdir()
    for k in range(4):
        (root / f"cab{k}.csv").write_bytes(awkward_csv(60, seed=k, header=False))
    options = ReadOptions(columns=(0, 1), header=False, fields=5, file_format="csv", unit_from="file")
    opened = []
    real = reader._open_csv

    def counting(*args, **kwargs):
        opened.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(reader, "_open_csv", counting)
    with open_input(root, options, d=2, also=[3, 4]) as plan:
        one = plan.read(False)
    assert len(opened) == 4  # one pass a file
    # the same rows and columns read file by file, the time and status each in a pass of its own
    monkeypatch.setattr(reader, "_csv_companions", lambda *args: None)
    with open_input(root, options, d=2, also=[3, 4]) as plan:
        two = plan.read(False)
    assert len(opened) == 4 + 3 * 4
    _same_points(one, two)
    assert [_values(c) for c in one.companions] == [_values(c) for c in two.companions]


TRACES = ["--columns", "x", "y", "--eps", "0.05", "--min-samples", "5", "--bounds", "0", "0", "1", "1"]
PERSONS = ["--unit", "cab", "--max-cells-per-unit", "4", "--delta", "1e-6", "--seed", "3", "--no-progress"]


def _trace_csv() -> bytes:
    """Units that drive and stop for ten minutes at (0.3, 0.3), fixes every
    minute, a passenger getting in at the stop's last fix, some times bad
    (the trace file of ``benchmarks.same_release``'s file cases)."""
    from benchmarks.same_release import _trace_lines

    lines = [f"{x!r},{y!r},{u},{t},{s}" for x, y, u, t, s in _trace_lines(seed=4)]
    return ("\n".join(["x,y,cab,time,occupied", *lines]) + "\n").encode()


@pytest.mark.parametrize(
    "events", [["--stops", "0.01", "5min"], ["--trip-ends", "occupied"]], ids=["stops", "pickups"]
)
@pytest.mark.parametrize("kind", ["csv.gz", "parquet"])
def test_the_seeded_release_is_the_second_pass_release(capsys, tmp_path, monkeypatch, events, kind):
    data = _trace_csv()
    path = tmp_path / f"t.{kind}"
    if kind == "parquet":
        import pyarrow.csv as pacsv

        pq.write_table(pacsv.read_csv(pa.py_buffer(data)), path)
    else:
        path.write_bytes(gzip.compress(data))
    args = [*TRACES, *PERSONS, "--time", "time", *events, "--no-png", "--no-geojson"]
    rc, _, one_err = run(capsys, "fit", str(path), *args, "--out-dir", str(tmp_path / "one"))
    assert rc == 0, one_err
    monkeypatch.setattr(reader, "_csv_companions", lambda *a: None)
    monkeypatch.setattr(reader, "_parquet_companions", lambda *a: [])
    rc, _, two_err = run(capsys, "fit", str(path), *args, "--out-dir", str(tmp_path / "two"))
    assert rc == 0, two_err
    one = (tmp_path / "one" / "t.spans.json").read_bytes()
    two = (tmp_path / "two" / "t.spans.json").read_bytes()
    assert one == two and load_model(tmp_path / "one" / "t.spans.json").n_spans >= 1
    assert one_err == two_err  # the same private notes: rows read, times dropped, events found


def test_a_time_in_milliseconds_read_in_the_points_pass_takes_time_unit(capsys, tmp_path):
    """--time-unit applies to a time read in the points' own pass as to one
    read in a second pass (an SQLite table's was read as seconds)."""
    import sqlite3

    import pyarrow.csv as pacsv

    table = pacsv.read_csv(pa.py_buffer(_trace_csv()))
    rows = list(zip(*(table.column(c).to_pylist() for c in ("x", "y", "cab", "time", "occupied"))))
    out = {}
    for name, scale, unit in (("s", 1, []), ("ms", 1000, ["--time-unit", "ms"])):
        path = tmp_path / f"{name}.sqlite"
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE t (x REAL, y REAL, cab TEXT, time INTEGER, occupied INTEGER)")
        con.executemany(
            "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
            [(x, y, c, int(t) * scale if t.strip().isdigit() else t, o) for x, y, c, t, o in rows],
        )
        con.commit()
        con.close()
        args = [
            *TRACES,
            *PERSONS,
            "--time",
            "time",
            "--stops",
            "0.01",
            "5min",
            *unit,
            "--no-png",
            "--no-geojson",
        ]
        rc, _, err = run(capsys, "fit", str(path), *args, "--out-dir", str(tmp_path / name))
        assert rc == 0 and "year 3000" not in err, err
        out[name] = load_model(tmp_path / name / f"{name}.spans.json")
    assert out["s"].histogram.values.tolist() == out["ms"].histogram.values.tolist()
    assert out["s"].n_spans == out["ms"].n_spans >= 1


def test_cabs_tiny_time_and_status_in_one_pass(shared_data):
    """The shared Cabs-tiny file (gzip CSV with a header): the one pass
    gives the second pass's time and status, row for row."""
    path = shared_data / "cabs_tiny_cabs.csv.gz"
    if not path.exists():
        pytest.skip(f"{path.name} not in the shared data")
    _check_one_pass(path, ReadOptions(columns=("x", "y"), unit="cab"), ["time", "occupied"])


class _Stdin:
    def __init__(self, data: bytes):
        import io

        self.buffer = io.BytesIO(data)


@pytest.mark.parametrize(
    "events", [["--stops", "0.01", "5min"], ["--trip-ends", "occupied"]], ids=["stops", "pickups"]
)
@pytest.mark.parametrize("gz", [False, True])
def test_standard_input_carries_a_time_like_a_file(capsys, tmp_path, monkeypatch, events, gz):
    """CSV from standard input is read once, and its time and status in that
    pass: ``fit - --time ... --stops/--trip-ends`` is the file's release,
    byte for byte, with the same private notes."""
    import sys

    data = _trace_csv()
    path = tmp_path / ("t.csv.gz" if gz else "t.csv")
    path.write_bytes(gzip.compress(data) if gz else data)
    args = [*TRACES, *PERSONS, "--time", "time", *events, "--no-png", "--no-geojson"]
    fmt = ["--format", "csv.gz"] if gz else []
    rc, _, file_err = run(capsys, "fit", str(path), *args, "--out-dir", str(tmp_path / "file"))
    assert rc == 0, file_err
    monkeypatch.setattr(sys, "stdin", _Stdin(path.read_bytes()))
    rc, _, in_err = run(capsys, "fit", "-", *args, *fmt, "--out-dir", str(tmp_path / "in"))
    assert rc == 0, in_err
    one = (tmp_path / "file" / "t.spans.json").read_bytes()
    assert one == (tmp_path / "in" / "stdin.spans.json").read_bytes()
    assert in_err.replace("from standard input", f"from {path}") == file_err  # the same notes


def test_standard_input_says_why_a_time_it_cannot_read_needs_a_file(capsys, monkeypatch):
    """A time column the points' pass cannot read (here: one of the
    coordinates) is refused for standard input, which cannot be read
    twice, with the reason and the way out; nothing quoted."""
    import sys

    monkeypatch.setattr(sys, "stdin", _Stdin(_trace_csv()))
    with pytest.raises(ValueError, match="standard input is read once.*save the input to a file"):
        read_columns("-", "x", options=ReadOptions(columns=("x", "y"), header=True), d=2)
