import csv
import gzip
import io
import json
import sys
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dpdbscan.files import (
    ReadOptions,
    format_of,
    read_columns,
    read_input,
    read_points,
    resolve_columns,
    write_labels,
)
from dpdbscan.files import csvfile as dpio
from dpdbscan.files.records import NULL_VALUES, is_number
from dpdbscan.model import save_model, to_json

from clirun import blob_points, run

DELIMITERS = (",", ";", "\t", "|")

POINTS = np.array([[1.5, -2.0], [3.25, 4.0], [-5.0, 6.125], [7.0, 8.0]])
LABELS = np.array([0, 1, -1, 1])
NAN = np.nan


def write_csv(path, header="x,y,label", rows=None, sep=","):
    rows = (
        rows
        if rows is not None
        else [sep.join([repr(float(a)), repr(float(b)), str(int(c))]) for (a, b), c in zip(POINTS, LABELS)]
    )
    text = (
        header.replace(",", sep) + "\n" + "\n".join(rows) + "\n"
        if header is not None
        else "\n".join(rows) + "\n"
    )
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def put(path, content):
    """Write bytes or a .npy array to ``path`` and return it."""
    if isinstance(content, np.ndarray):
        np.save(path, content)
    else:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("name", ["p.csv", "p.csv.gz", "p.txt"])
def test_csv_default_columns_skip_label(tmp_path, name):
    X, names = read_points(write_csv(tmp_path / name), header=True)
    assert names == ["x", "y"]
    np.testing.assert_array_equal(X, POINTS)
    assert X.dtype == np.float64


@pytest.mark.parametrize(
    "name, kind, gz, sep",
    [
        ("p.csv", "csv", False, ","),
        ("P.CSV.GZ", "csv", True, ","),
        ("p.txt", "csv", False, ","),
        ("p.tsv", "csv", False, "\t"),
        ("p.tab.gz", "csv", True, "\t"),
        ("p.parquet", "parquet", False, ","),
        ("p.pq", "parquet", False, ","),
        ("p.npy", "npy", False, ","),
        ("-", "csv", False, ","),
    ],
)
def test_format_comes_from_the_name(name, kind, gz, sep):
    fmt = format_of(name)
    assert (fmt.kind, fmt.gzip, fmt.delimiter) == (kind, gz, sep)


@pytest.mark.parametrize("name", ["p", "p.dat", "p.json", "p.parquet.gz"])
def test_unknown_format_is_refused_naming_the_option(name):
    with pytest.raises(ValueError, match="pass --format"):
        format_of(name)
    assert format_of(name, "csv.gz").gzip


@pytest.mark.parametrize(
    "name, what",
    [("p.jsonl", "JSON lines"), ("t.kml", "KML"), ("t.shp", "shapefile"), ("t.xlsx", "Excel")],
)
def test_a_format_that_is_not_read_is_named_with_the_way_out(name, what):
    with pytest.raises(ValueError, match=f"{what}.* is not read .*export the points as CSV or Parquet"):
        format_of(name)


def test_gzip_is_decided_by_the_name_not_the_content(tmp_path):
    path = tmp_path / "p.csv"
    path.write_bytes(gzip.compress(b"x,y\n1,2\n3,4\n"))
    # a declared header is public, so its bytes may refuse the file, with a hint
    with pytest.raises(ValueError, match="control bytes.*--format csv.gz"):
        read_points(path, header=True)
    X, _ = read_points(path, header=True, file_format="csv.gz")
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    # without a header nothing is looked at: every line is a bad record, dropped one by one
    got = read_input(path, header=False, fields=2)
    assert np.isnan(got.X).all() and got.n_malformed + got.n_unparseable >= 1


def test_tsv_and_explicit_delimiter(tmp_path):
    X, names = read_points(write_csv(tmp_path / "p.tsv", sep="\t"), header=True)
    assert names == ["x", "y"]
    np.testing.assert_array_equal(X, POINTS)
    X2, _ = read_points(write_csv(tmp_path / "p.csv", sep=";"), delimiter=";", header=True)
    np.testing.assert_array_equal(X2, POINTS)


@pytest.mark.parametrize(
    "columns, names, expected",
    [
        (["y", "x"], ["y", "x"], POINTS[:, ::-1]),
        (["1"], ["y"], POINTS[:, 1:]),
        ([0, "label"], ["x", "label"], np.column_stack([POINTS[:, 0], LABELS])),
    ],
)
def test_column_selection(tmp_path, columns, names, expected):
    X, got = read_points(write_csv(tmp_path / "p.csv"), columns, header=True)
    assert got == names
    np.testing.assert_array_equal(X, expected)


def test_no_header(tmp_path):
    path = write_csv(tmp_path / "p.csv", header=None)
    X, names = read_points(path, ["0", "1"], header=False, fields=3)
    assert names == ["0", "1"]
    np.testing.assert_array_equal(X, POINTS)
    # without --columns, a line has d fields (the public number of coordinates)
    two = write_csv(tmp_path / "q.csv", header=None, rows=[f"{float(a)!r},{float(b)!r}" for a, b in POINTS])
    X, names = read_points(two, header=False, d=2)
    assert names == ["0", "1"]
    np.testing.assert_array_equal(X, POINTS)
    # lines of three fields in a file declared to have two are dropped one by one
    got = read_input(path, header=False, d=2)
    assert got.n_malformed == 4 and np.isnan(got.X).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({}, "pass --header .* or --no-header"),
        ({"header": False}, "give the number of fields on each line with --fields"),
        ({"header": False, "columns": [0, 1]}, "--fields .* to choose --columns by index"),
        ({"header": False, "columns": ["x"]}, "column names need a header line"),
        ({"header": True, "fields": 2}, "--fields .* is for files without a header"),
        ({"header": False, "fields": 0}, "fields must be an integer >= 1"),
    ],
)
def test_what_public_input_cannot_decide_is_refused_before_reading(tmp_path, kwargs, match):
    path = write_csv(tmp_path / "p.csv", header=None)
    kwargs = dict(kwargs)
    columns = kwargs.pop("columns", None)
    with pytest.raises(ValueError, match=match):
        read_points(path, columns, **kwargs)


def test_missing_values_read_as_nan(tmp_path):
    path = write_csv(tmp_path / "p.csv", header="x,y", rows=["1,2", "3,", "NA,4", "5,6"])
    X, _ = read_points(path, header=True)
    assert X.shape == (4, 2)
    assert np.isnan(X[1, 1]) and np.isnan(X[2, 0])
    np.testing.assert_array_equal(X[[0, 3]], [[1, 2], [5, 6]])


def test_parquet_and_npy(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "x": POINTS[:, 0],
            "y": POINTS[:, 1].astype(np.float32),
            "label": LABELS,
            "name": ["a", "b", "c", "d"],
        }
    )
    pq.write_table(table, tmp_path / "p.parquet")
    X, names = read_points(tmp_path / "p.parquet", ["x", "y"])
    assert names == ["x", "y"]
    np.testing.assert_array_equal(X, POINTS)
    with pytest.raises(ValueError, match="'name' is not numeric"):
        read_points(tmp_path / "p.parquet", ["x", "name"])
    with pytest.raises(ValueError, match="name are not numeric"):
        read_points(tmp_path / "p.parquet")

    np.save(tmp_path / "p.npy", POINTS)
    X, names = read_points(tmp_path / "p.npy")
    assert names == ["0", "1"]
    np.testing.assert_array_equal(X, POINTS)
    X, names = read_points(tmp_path / "p.npy", [1])
    np.testing.assert_array_equal(X, POINTS[:, 1:])


def test_progress_bar_on_request(tmp_path, capsys):
    read_points(write_csv(tmp_path / "p.csv.gz"), progress=True, header=True)
    err = capsys.readouterr().err
    assert "reading p.csv.gz" in err and "100%" in err
    read_points(write_csv(tmp_path / "p.csv.gz"), header=True)  # not a terminal: quiet
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "make, columns, exc, match",
    [
        (lambda d: d / "nope.csv", None, FileNotFoundError, "input file not found"),
        (lambda d: d, None, IsADirectoryError, "is a folder"),
        (lambda d: write_csv(d / "p.csv"), ["z"], ValueError, "no column 'z' in"),
        (lambda d: write_csv(d / "p.csv"), [5], ValueError, "column index 5 is out of range"),
        (lambda d: write_csv(d / "p.csv"), ["x", "0"], ValueError, "selected twice"),
        (lambda d: put(d / "e.csv", b""), None, ValueError, "e.csv: empty CSV file"),
        (lambda d: put(d / "e.csv", b"\n\r\n"), None, ValueError, "e.csv: empty CSV file"),
        (
            lambda d: put(d / "j.csv", bytes(range(256)) * 8),
            None,
            ValueError,
            "j.csv: cannot read as CSV: its header line holds control",
        ),
        (
            lambda d: put(d / "t.csv.gz", gzip.compress(b"x,y\n1,2\n" * 999)[:-30]),
            None,
            ValueError,
            r"t.csv.gz: cannot read as CSV \(the file is damaged",
        ),
        (
            lambda d: write_csv(d / "p.csv", header="x;y;z"),
            ["0", "1"],
            ValueError,
            "column index 1 is out of range",
        ),
        (
            lambda d: put(d / "f.parquet", b"x,y\n1,2\n"),
            None,
            ValueError,
            "f.parquet: cannot read as Parquet",
        ),
        (lambda d: put(d / "c.npy", np.zeros((2, 2, 2))), None, ValueError, "must be 2-D"),
        (lambda d: put(d / "s.npy", np.array(["a", "b"])), None, ValueError, "must be numeric"),
    ],
)
def test_bad_input_raises_clear_errors(tmp_path, make, columns, exc, match):
    path = make(tmp_path)
    text = str(path).endswith((".csv", ".gz")) or path.is_dir()
    with pytest.raises(exc, match=match):
        read_points(path, columns, **({"header": True} if text else {}))


def test_binary_file_message_is_one_printable_line(tmp_path):
    (tmp_path / "j.csv").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(ValueError) as info:
        read_points(tmp_path / "j.csv", header=True)
    msg = str(info.value)
    assert "\n" not in msg and msg.isprintable() and len(msg) < 300


def test_resolve_columns_with_chooser():
    names, numeric = ["id", "lat", "lon"], [False, True, True]
    assert resolve_columns(names, numeric, choose=lambda n, k: ["lon", "lat"]) == [2, 1]
    # a chooser may decline, then the default applies (and "id" is not numeric)
    with pytest.raises(ValueError, match="id are not numeric"):
        resolve_columns(names, numeric, choose=lambda n, k: None)


@pytest.mark.parametrize("with_pyarrow", [True, False])
def test_write_labels(tmp_path, monkeypatch, with_pyarrow):
    if not with_pyarrow:
        monkeypatch.setitem(sys.modules, "pyarrow", None)
    write_labels(tmp_path / "l.csv", LABELS)
    assert (tmp_path / "l.csv").read_text().split() == ["label", "0", "1", "-1", "1"]
    write_labels(tmp_path / "p.csv", LABELS, POINTS, ["x", "y"])
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "x,y,label"
    back = np.loadtxt(io.StringIO("\n".join(lines[1:])), delimiter=",")
    np.testing.assert_array_equal(back[:, :2], POINTS)
    np.testing.assert_array_equal(back[:, 2], LABELS)


def test_write_labels_to_stdout(capfd):
    write_labels("-", LABELS)
    assert capfd.readouterr().out.split() == ["label", "0", "1", "-1", "1"]


@pytest.mark.slow
def test_reads_the_full_cabs_file(shared_data):
    """The 11-million row file reads completely (count from MANIFEST.md)."""
    X, names = read_points(shared_data / "cabs_sf.csv.gz", header=True)
    assert X.shape == (10_995_626, 2) and names == ["x", "y"]
    assert np.all((X[:, 0] >= -122.6) & (X[:, 0] <= -122.3))
    assert np.all((X[:, 1] >= 37.55) & (X[:, 1] <= 37.85))


def test_read_model_roundtrip_and_refusals(tmp_path):
    from dpdbscan import DPDBSCAN
    from dpdbscan.cli.common import read_model

    m = DPDBSCAN(eps=1.0, min_samples=2, bounds=(-10.0, 10.0), random_state=0).fit(POINTS).spans_
    save_model(m, tmp_path / "m.json")
    back = read_model(tmp_path / "m.json")
    np.testing.assert_array_equal(back.histogram.values, m.histogram.values)
    (tmp_path / "g.json").write_text('{"type": "FeatureCollection"}')
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00" * 10)
    doc = json.loads(to_json(m))
    doc["metadata"]["projection"] = {"kind": "utm"}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    for name, match in [
        ("g.json", "g.json: not a dpdbscan span model"),
        ("b.json", "not a text file"),
        ("p.json", "unknown projection"),
        ("none.json", "model file not found"),
    ]:
        with pytest.raises((ValueError, FileNotFoundError), match=match):
            read_model(tmp_path / name)


# --------------------------------------------------------------------------- #
# one record at a time: a bad value is dropped, never fatal, never echoed


def test_pyarrow_is_required_for_csv(tmp_path, monkeypatch):
    path = write_csv(tmp_path / "p.csv")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'dpdbscan\[io\]'"):
        read_points(path, header=True)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few hundred bytes, so a short file spans many of them."""
    monkeypatch.setattr(dpio, "_BATCH", 200)


@pytest.mark.parametrize("gz", [False, True])
def test_late_unparseable_value_reads_as_nan_and_is_counted(tmp_path, small_blocks, gz):
    rows = [f"{i % 7 / 10},{i % 5 / 10}" for i in range(3000)]
    rows[2900] = "0.3,bob@example.com"  # late: many blocks after the first
    rows[2950] = "tom@example.com,0.2"
    path = write_csv(tmp_path / ("p.csv.gz" if gz else "p.csv"), header="x,y", rows=rows)
    got = read_input(path, header=True)
    assert got.X.shape == (3000, 2) and got.names == ["x", "y"]
    assert got.n_unparseable == 2 and got.n_malformed == 0
    bad = ~np.isfinite(got.X).all(axis=1)
    assert np.flatnonzero(bad).tolist() == [2900, 2950]
    assert got.X[2900, 0] == 0.3 and np.isnan(got.X[2900, 1])
    want = np.array([[i % 7 / 10, i % 5 / 10] for i in range(3000)])
    np.testing.assert_array_equal(got.X[~bad], want[~bad])
    assert any("2 row(s) with values that are not numbers" in n for n in got.notes())
    assert not any("example.com" in n for n in got.notes())


def test_fit_on_a_file_with_a_bad_row_releases_and_never_echoes(tmp_path, small_blocks, capsys):
    from dpdbscan import DPDBSCAN

    rng = np.random.default_rng(0)
    pts = np.vstack([rng.normal(2, 0.3, (1500, 2)), rng.uniform(0, 10, (500, 2))])
    rows = [f"{float(a)!r},{float(b)!r}" for a, b in pts]
    rows[1900] = "0.3,bob@example.com"
    path = write_csv(tmp_path / "p.csv", header="x,y", rows=rows)
    X, _ = read_points(path, header=True)
    est = DPDBSCAN(eps=1.0, min_samples=20, epsilon=1.0, bounds=([0, 0], [10, 10]), random_state=0).fit(X)
    clean = DPDBSCAN(eps=1.0, min_samples=20, epsilon=1.0, bounds=([0, 0], [10, 10]), random_state=0).fit(
        np.delete(pts, 1900, axis=0)
    )
    # the release happens, and equals the release without that row
    np.testing.assert_array_equal(est.histogram_.values, clean.histogram_.values)
    np.testing.assert_array_equal(est.spans_.core_keys, clean.spans_.core_keys)
    assert clean.spans_.core_keys.size > 0, "a release with no core cells proves little"
    out = capsys.readouterr()
    assert "bob@example.com" not in out.out + out.err
    assert "bob@example.com" not in to_json(est.spans_)


@pytest.mark.parametrize(
    "text, want, n_bad, n_malformed",
    [
        # ragged lines: a row of NaN in their place
        ("x,y\n1,2\n3,4,5\n6\n7,8\n", [[1, 2], [NAN, NAN], [NAN, NAN], [7, 8]], 0, 2),
        # an unclosed quote is read on its own line only
        ('x,y\n1,2\n3,"4\n5,6\n7,8\n', [[1, 2], [3, NAN], [5, 6], [7, 8]], 1, 0),
        ('x,y\n1,2\n"3,4\n5,6\n', [[1, 2], [NAN, NAN], [5, 6]], 0, 1),
        # quoted values, doubled quotes in other columns, empty lines
        ('x,y,label\n"1",2,"a ""q"", b"\n\n3,"",x\n', [[1, 2], [3, NAN]], 0, 0),
        # \r\n and \r line ends; spaces and tabs around numbers are trimmed
        ("x,y\r\n 1 ,\t2\r\n3,4\r5,6", [[1, 2], [3, 4], [5, 6]], 0, 0),
        # missing markers are missing, not unparseable; a value of spaces is unparseable
        (
            "x,y\nNA,1\nnan,N/A\nNULL,  \n-inf,1e400\n",
            [[NAN, 1], [NAN, NAN], [NAN, NAN], [-np.inf, np.inf]],
            1,
            0,
        ),
        # unicode, very long and binary junk
        ("x,y\n1,é\n" + "2," + "z" * 100_000 + "\n3,4\n", [[1, NAN], [2, NAN], [3, 4]], 2, 0),
    ],
)
def test_record_rules(tmp_path, text, want, n_bad, n_malformed):
    path = tmp_path / "r.csv"
    path.write_bytes(text.encode())
    got = read_input(path, header=True)
    np.testing.assert_array_equal(got.X, np.array(want, dtype=float))
    assert (got.n_unparseable, got.n_malformed) == (n_bad, n_malformed)


def test_invalid_utf8_in_a_value_is_unparseable(tmp_path):
    path = put(tmp_path / "u.csv", b"x,y\n1,\xff\xfe\n2,3\n")
    got = read_input(path, header=True)
    np.testing.assert_array_equal(got.X, [[1, NAN], [2, 3]])
    assert got.n_unparseable == 1


def test_text_column_chosen_by_default_reads_as_missing(tmp_path):
    """The header, not the rows, decides the columns: a text column is read
    (all NaN), and the bounds' dimension check is what catches it."""
    path = write_csv(tmp_path / "s.csv", "name,x,y", ["a,1,2", "b,3,4"])
    got = read_input(path, header=True)
    assert got.names == ["name", "x", "y"]
    assert np.isnan(got.X[:, 0]).all() and got.n_unparseable == 2
    np.testing.assert_array_equal(got.X[:, 1:], [[1, 2], [3, 4]])


def test_a_line_longer_than_a_block(tmp_path, small_blocks):
    rows = ["1,2"] * 50 + ["3," + "9" * 5000] + ["5,6"] * 50
    got = read_input(write_csv(tmp_path / "l.csv", "x,y", rows), header=True)
    assert got.X.shape == (101, 2)
    assert got.X[50, 1] == float("9" * 5000)
    np.testing.assert_array_equal(got.X[51:], [[5, 6]] * 50)


def test_huge_int64_in_parquet_is_cast_not_echoed(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    big = 2**62 + 1
    pq.write_table(pa.table({"x": pa.array([1, big], pa.int64()), "y": [0.5, 1.5]}), tmp_path / "b.parquet")
    X, _ = read_points(tmp_path / "b.parquet")
    np.testing.assert_array_equal(X, [[1, 0.5], [float(big), 1.5]])


# --------------------------------------------------------------------------- #
# inputs that look wrong: header, index column, delimiter, standard input


@pytest.mark.parametrize(
    "text, header, names, X",
    [
        ("1.5,2\n3,4\n", False, ["0", "1"], [[1.5, 2], [3, 4]]),
        ("x,y\n3,4\n", False, ["0", "1"], [[NAN, NAN], [3, 4]]),  # a text line is one bad record
        ("1.5,\n3,4\n", False, ["0", "1"], [[1.5, NAN], [3, 4]]),
        ("\ufeff1.5,2\n3,4\n", False, ["0", "1"], [[1.5, 2], [3, 4]]),  # byte order mark
        ("\ufeffx,y\n3,4\n", True, ["x", "y"], [[3, 4]]),
        ("\n\nx,y\n3,4\n", True, ["x", "y"], [[3, 4]]),  # empty lines before the header
        ("x,2\n3,4\n", True, ["x", "2"], [[3, 4]]),
        ("10,20\n3,4\n", True, ["10", "20"], [[3, 4]]),  # declared: the first line is the header
    ],
)
def test_first_line_is_what_the_options_say(tmp_path, text, header, names, X):
    path = tmp_path / "h.csv"
    path.write_text(text)
    got = read_input(path, header=header, d=2)
    assert got.names == names
    np.testing.assert_array_equal(got.X, X)


@pytest.mark.parametrize(
    "header, names, skipped",
    [
        (",x,y,label", ["x", "y"], [""]),
        ("Unnamed: 0,x,y", ["x", "y"], ["Unnamed: 0"]),
        ("x,y,Unnamed: 3", ["x", "y"], ["Unnamed: 3"]),
    ],
)
def test_unnamed_index_columns_are_skipped(tmp_path, header, names, skipped):
    n = len(header.split(","))
    rows = [",".join(str(i * n + j) for j in range(n)) for i in range(3)]
    got = read_input(write_csv(tmp_path / "i.csv", header, rows), header=True)
    assert got.names == names and got.skipped_columns == skipped
    assert any("skipped unnamed index column" in note for note in got.notes())
    # still there when asked for by index
    X, chosen = read_points(tmp_path / "i.csv", [0], header=True)
    assert chosen == [header.split(",")[0]] and X.shape == (3, 1)


def test_pandas_index_in_parquet_is_skipped(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({"x": [1.0, 2.0], "y": [3.0, 4.0]}, index=[10, 20])
    df.to_parquet(tmp_path / "i.parquet")  # a non-default index is stored as __index_level_0__
    got = read_input(tmp_path / "i.parquet")
    assert got.names == ["x", "y"] and got.skipped_columns == ["__index_level_0__"]
    np.testing.assert_array_equal(got.X, [[1, 3], [2, 4]])


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_delimiter_comes_from_the_option(tmp_path, sep):
    got = read_input(write_csv(tmp_path / "p.csv", sep=sep), delimiter=sep, header=True)
    assert got.names == ["x", "y"]
    np.testing.assert_array_equal(got.X, POINTS)


def test_a_one_field_header_with_another_delimiter_names_the_option(tmp_path):
    path = write_csv(tmp_path / "p.csv", header="x;y", rows=["1;2"])
    with pytest.raises(ValueError, match="pass --delimiter ';'"):
        read_input(path, header=True, d=2)
    # also when a column is named (the unit, a coordinate): the hint, not "no column"
    for kw in ({"unit": "y", "columns": None}, {"columns": ("x", "y")}):
        with pytest.raises(ValueError, match="pass --delimiter ';'"):
            read_input(path, header=True, d=2, **kw)
    # told ',' for a one-coordinate file, there is one column named "x;y"
    got = read_input(path, delimiter=",", header=True)
    assert got.names == ["x;y"] and got.n_unparseable == 1


def test_data_rows_do_not_change_the_delimiter(tmp_path):
    # one column: rows full of semicolons are values
    path = write_csv(tmp_path / "p.csv", header="x", rows=["1", "2;3;4", "5"])
    got = read_input(path, header=True)
    assert got.names == ["x"]
    np.testing.assert_array_equal(got.X, [[1], [NAN], [5]])


class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


@pytest.mark.parametrize("gz", [False, True])
def test_dash_reads_csv_from_standard_input(monkeypatch, gz):
    data = b"x;y;label\n1.5;-2;0\n3.25;4;1\n"
    monkeypatch.setattr(sys, "stdin", _Stdin(gzip.compress(data) if gz else data))
    got = read_input("-", delimiter=";", header=True, file_format="csv.gz" if gz else None)
    assert got.names == ["x", "y"]
    np.testing.assert_array_equal(got.X, [[1.5, -2], [3.25, 4]])


def test_dash_refuses_binary_formats_and_never_sniffs(monkeypatch, tmp_path):
    np.save(tmp_path / "p.npy", POINTS)
    with pytest.raises(ValueError, match="only CSV can be read from '-'"):
        read_input("-", file_format="npy")
    # npy bytes on standard input are read as CSV records, each bad one dropped
    monkeypatch.setattr(sys, "stdin", _Stdin((tmp_path / "p.npy").read_bytes()))
    got = read_input("-", header=False, fields=2)
    assert not np.isfinite(got.X).all(axis=1).any()


@pytest.mark.parametrize("bad", ["", ";;", "\n", '"'])
def test_delimiter_argument_is_checked(tmp_path, bad):
    with pytest.raises(ValueError, match="delimiter must be one character"):
        read_input(write_csv(tmp_path / "p.csv"), delimiter=bad, header=True)


# --------------------------------------------------------------------------- #
# fuzz: random tables with junk, and the number grammar against Arrow's parser

FUZZ = settings(
    max_examples=100, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# Characters that can appear in no number: a cell holding one is junk.
NEVER_NUMERIC = "@#$%&!?éß中\"',;|\t/\\<>=~^`xyzXYZ\u00a0\u2028"
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"), max_size=12)


@st.composite
def junk_cells(draw):
    core = draw(TEXT) + draw(st.sampled_from(NEVER_NUMERIC)) + draw(TEXT)
    return core * draw(st.sampled_from([1, 1, 1, 500]))  # sometimes very long


@st.composite
def number_cells(draw):
    v = draw(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**6), 10**6)))
    text = repr(float(v)) if isinstance(v, float) else str(v)
    pad = draw(st.sampled_from(["", " ", "\t", "  "]))
    return f"{pad}{text}{pad[::-1]}", float(text)


@st.composite
def tables(draw):
    d = draw(st.integers(1, 3))
    label = draw(st.booleans())
    sep = "," if d == 1 and not label else draw(st.sampled_from(DELIMITERS))
    n = draw(st.integers(0, 25))
    rows, want, bad = [], np.full((n, d), np.nan), []
    for i in range(n):
        row, row_bad = [], False
        for j in range(d):
            kind = draw(st.sampled_from(["num", "num", "num", "null", "junk"]))
            if kind == "num":
                text, value = draw(number_cells())
                want[i, j] = value
            elif kind == "null":
                text = draw(st.sampled_from(NULL_VALUES))
            else:
                text = draw(junk_cells())
                row_bad = True
            row.append(text)
        if label:
            row.append(draw(st.one_of(junk_cells(), TEXT)))  # not a coordinate: never counted
        rows.append(row)
        bad.append(row_bad)
    names = [f"c{j}" for j in range(d)] + (["label"] if label else [])
    return sep, names, rows, want, np.array(bad, dtype=bool)


def _write_rows(path, sep, names, rows):
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=sep, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(names)
    w.writerows(rows)
    path.write_bytes(buf.getvalue().encode("utf-8"))


@FUZZ
@given(table=tables(), block=st.sampled_from([64, 300, 1 << 24]))
def test_fuzz_csv_reader_drops_exactly_the_bad_rows(tmp_path_factory, table, block):
    sep, names, rows, want, bad = table
    event(f"bad rows: {'some' if bad.any() else 'none'}; blocks: {block}")
    path = tmp_path_factory.mktemp("fuzz") / "t.csv"
    _write_rows(path, sep, names, rows)
    old, dpio._BATCH = dpio._BATCH, block
    try:
        got = read_input(path, header=True, delimiter=sep)
    except ValueError as exc:  # allowed, if clear and quoting no cell
        msg = str(exc)
        cells = {c.strip() for r in rows for c in r if len(c.strip()) >= 3}
        assert "\n" not in msg and not any(c in msg for c in cells), msg
        return
    finally:
        dpio._BATCH = old
    assert got.names == names[: want.shape[1]]
    assert got.X.shape == want.shape
    np.testing.assert_array_equal(got.X, want)  # NaN where missing or junk, exact elsewhere
    assert got.n_unparseable == int(bad.sum()) and got.n_malformed == 0
    assert not any(c in " ".join(got.notes()) for r in rows for c in r if len(c.strip()) >= 3)


def _read_in_blocks(path, block):
    """``read_input(path, header=True)`` reading the file ``block`` bytes at a time."""
    old, dpio._BATCH = dpio._BATCH, block
    try:
        return read_input(path, header=True)
    finally:
        dpio._BATCH = old


@FUZZ
@given(
    good=st.lists(st.tuples(st.integers(-999, 999), st.integers(-999, 999)), min_size=1, max_size=20),
    garbage=st.lists(
        st.tuples(
            st.integers(0, 20),
            st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b),
        ),
        max_size=5,
    ),
    block=st.sampled_from([32, 1 << 24]),
)
def test_fuzz_raw_garbage_lines_never_touch_other_lines(tmp_path_factory, good, garbage, block):
    """Arbitrary bytes on a line (quotes, delimiters, invalid UTF-8...) give
    at most that line's row; every other line reads exactly as written."""
    lines = [f"{a},{b}".encode() for a, b in good]
    marks = [False] * len(lines)
    for pos, junk in sorted(garbage, reverse=True):
        pos = min(pos, len(lines))
        lines.insert(pos, junk)
        marks.insert(pos, True)
    path = tmp_path_factory.mktemp("raw") / "g.csv"
    path.write_bytes(b"x,y\n" + b"\n".join(lines) + b"\n")
    got = _read_in_blocks(path, block)
    assert got.X.shape == (len(lines), 2)  # one row per non-empty line, in order
    ok = ~np.array(marks)
    np.testing.assert_array_equal(got.X[ok], np.array(good, dtype=float))


ARROWISH = st.text(alphabet="0123456789+-.eEinfatyINFATYdxX_() \t,", max_size=14)


def _arrow_csv_float(text: str):
    """How a quoted CSV field reads in a float64 column (the fast path)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    data = ('x\n"' + text.replace('"', '""') + '"\n').encode()
    try:
        t = pacsv.read_csv(
            pa.py_buffer(data),
            convert_options=pacsv.ConvertOptions(
                column_types={"x": pa.float64()}, null_values=NULL_VALUES, strings_can_be_null=True
            ),
        )
    except pa.ArrowInvalid:
        return "error"
    v = t.column(0)[0].as_py()
    return np.nan if v is None else v


@pytest.mark.parametrize(
    "text",
    [
        "1",
        "-1",
        "+1",
        "1.",
        ".5",
        "1e5",
        "1E+5",
        "1e-5",
        "inf",
        "-Infinity",
        "nan",
        "-nan",
        "NaN(x_1)",
        " 1 ",
        "\t2",
        "1e400",
        "00.5e-0003",
        "",
        "NA",
        " NA",
        " ",
        "1.5e",
        "e5",
        "1_0",
        "0x10",
        "1,5",
        "--1",
        ".",
        "-",
        "1d5",
        "nan(1-2)",
        "infinit",
        "inff",
        "١",
        "１",
        "1\u00a0",
        "\x0b1",
    ],
)
def test_slow_path_reads_a_value_like_the_fast_path(text):
    """A value in a block that parsed in one go (Arrow's float64 column) and
    in a block that fell back (bytes, pattern, cast) reads the same."""
    _check_same_as_fast_path(text)


@settings(FUZZ, max_examples=300)
@given(text=ARROWISH)
def test_fuzz_slow_path_reads_a_value_like_the_fast_path(text):
    _check_same_as_fast_path(text)


def _check_same_as_fast_path(text):
    import pyarrow as pa

    from dpdbscan.files.records import coerce_binary

    fast = _arrow_csv_float(text)
    raw = None if text in NULL_VALUES else text.encode()
    values, unparseable = coerce_binary(pa.array([raw], pa.binary()))
    if fast == "error":
        assert unparseable[0] and np.isnan(values[0]), text
    else:
        assert not unparseable[0], text
        np.testing.assert_array_equal(values[0], fast)
        assert is_number(text) or text in NULL_VALUES


def test_slow_path_over_many_runs():
    """Runs of values are cast in one go; only the run holding a bad value is
    checked value by value, and every value reads as it would alone."""
    import pyarrow as pa

    from dpdbscan.files.records import _RUN, coerce_binary

    n = 2 * _RUN + 7
    texts = [f"{i / 8!r}" for i in range(n)]
    texts[5] = " 5.0 "  # needs trimming, in a run without a bad value
    texts[_RUN + 3] = "bob@example.com"
    texts[_RUN + 4] = None  # missing, not unparseable
    values, bad = coerce_binary(pa.array(texts, pa.string()))
    want = np.arange(n) / 8
    want[5] = 5.0
    want[[_RUN + 3, _RUN + 4]] = np.nan
    np.testing.assert_array_equal(values, want)
    assert np.flatnonzero(bad).tolist() == [_RUN + 3]


# --------------------------------------------------------------------------- #
# gzip: ISA-L (isal) when installed, pyarrow's / Python's zlib otherwise


@pytest.fixture(params=["isal", "zlib"])
def gzip_path(request, monkeypatch):
    """Run a test with the ISA-L reader and again with the fallback."""
    import dpdbscan.files.csvfile as dio

    if request.param == "isal":
        if dio._igzip() is None:
            pytest.skip("isal is not installed")
    else:
        monkeypatch.setattr(dio, "_igzip", lambda: None)
    return request.param


def test_both_gzip_readers_read_the_same(gzip_path, tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    rows = "".join(f"{a!r},{b!r}\n" for a, b in rng.random((5000, 2)).tolist())
    text = ("x,y\n" + rows + "oops,1\n\n1,2,3\n").encode()
    # two gzip members (as `cat a.gz b.gz` makes): both are read
    half = text.index(b"\n", len(text) // 2) + 1
    path = put(tmp_path / "m.csv.gz", gzip.compress(text[:half]) + gzip.compress(text[half:]))
    got = read_input(path, header=True)
    assert got.X.shape == (5002, 2) and got.n_unparseable == 1 and got.n_malformed == 1
    np.testing.assert_array_equal(got.X[:5000], rng.__class__(np.random.PCG64(7)).random((5000, 2)))
    monkeypatch.setattr(sys, "stdin", _Stdin(path.read_bytes()))
    np.testing.assert_array_equal(read_input("-", header=True, file_format="csv.gz").X, got.X)


def test_both_gzip_readers_refuse_damaged_files_in_one_line(gzip_path, tmp_path):
    rows = np.random.default_rng(8).random((5000, 2)).tolist()
    data = gzip.compress(("x,y\n1.25,2\n" + "".join(f"{a},{b}\n" for a, b in rows)).encode())
    corrupt = bytearray(data)
    corrupt[400:420] = b"\xff" * 20
    for name, content in [
        ("c.csv.gz", bytes(corrupt)),  # damaged: not a cut, refused whole
        ("n.csv.gz", b"x,y\n1.25,2\n"),  # not gzip at all
        ("h.csv.gz", data[:12]),  # cut before the header line ends
        ("r.csv.gz", gzip.compress(b"x,y\n1.25,2\n")[:-8] + bytes(8)),  # a wrong checksum
    ]:
        path = put(tmp_path / name, content)
        with pytest.raises(ValueError, match=rf"{name}: cannot read as CSV \(the file is damaged") as info:
            read_points(path, header=True)
        assert "1.25" not in str(info.value)


def _gzip_cut_oracle(tmp_path, data: bytes, cut: int, **options):
    """A gzip CSV file ``data`` cut after ``cut`` bytes, read; and the plain
    CSV file of the text zlib inflates from those bytes, read alike."""
    text = b""
    rest = data[:cut]
    while rest:  # every member, as `cat a.gz b.gz` makes
        inflate = zlib.decompressobj(wbits=31)
        text += inflate.decompress(rest)
        rest = inflate.unused_data
    cut_path = put(tmp_path / "cut.csv.gz", data[:cut])
    plain = put(tmp_path / "plain.csv", text)
    return read_input(cut_path, **options), read_input(plain, **options)


def _same_rows(got, want):
    np.testing.assert_array_equal(got.X, want.X)  # NaN where NaN
    assert (got.n_malformed, got.n_unparseable) == (want.n_malformed, want.n_unparseable)


@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("members", [1, 2])
@pytest.mark.parametrize("batch", [None, 1 << 12])
def test_a_cut_gzip_file_keeps_the_rows_of_the_plain_csv_cut_there(
    gzip_path, tmp_path, monkeypatch, header, members, batch
):
    if batch is not None:  # small blocks: the stream breaks after many were handed on
        monkeypatch.setattr(dpio, "_BATCH", batch)
    rng = np.random.default_rng(9)
    rows = "".join(f"{a!r},{b!r},t{i}\n" for i, (a, b) in enumerate(rng.random((30000, 2)).tolist()))
    text = (("x,y,secret\n" if header else "") + rows + "1.25,oops,SECRET-7\n" + rows).encode()
    half = text.index(b"\n", len(text) // 2) + 1
    data = gzip.compress(text) if members == 1 else gzip.compress(text[:half]) + gzip.compress(text[half:])
    for cut in sorted({200, len(data) // 3, len(data) // 2 + 7, len(data) - 9, len(data) - 1}):
        opts = {"header": header, "columns": [0, 1], **({} if header else {"fields": 3})}
        got, want = _gzip_cut_oracle(tmp_path, data, cut, **opts)
        _same_rows(got, want)
        assert 0 < got.X.shape[0] <= 60001 and got.n_read_before_cut == got.X.shape[0]
        notes = " ".join(got.notes())
        assert (
            f"ends early (cut part-way, as by an interrupted download) after {got.X.shape[0]:,} row(s)"
            in notes
        )
        assert "SECRET" not in notes and "oops" not in notes and "t1" not in notes
        assert want.n_read_before_cut is None


@pytest.mark.parametrize("members", [1, 2])
def test_a_cut_gzip_stream_on_standard_input_keeps_the_rows_of_the_file(
    gzip_path, tmp_path, monkeypatch, members
):
    """Standard input cannot be read twice: a gzip stream piped in is
    inflated as it streams, so a stream cut part-way keeps the rows a file
    cut there keeps, with the same note; a damaged one is refused, quoting
    nothing."""
    rng = np.random.default_rng(11)
    text = (
        "x,y,secret\n"
        + "".join(f"{a!r},{b!r},t{i}\n" for i, (a, b) in enumerate(rng.random((20000, 2)).tolist()))
    ).encode()
    half = text.index(b"\n", len(text) // 2) + 1
    data = gzip.compress(text) if members == 1 else gzip.compress(text[:half]) + gzip.compress(text[half:])
    for cut in (len(data) // 3, len(data) - 9, len(data)):
        path = put(tmp_path / "c.csv.gz", data[:cut])
        want = read_input(path, header=True, columns=[0, 1])
        monkeypatch.setattr(sys, "stdin", _Stdin(data[:cut]))
        got = read_input("-", header=True, columns=[0, 1], file_format="csv.gz")
        _same_rows(got, want)
        assert got.n_read_before_cut == want.n_read_before_cut and got.notes() == want.notes()
        assert (got.n_read_before_cut is None) == (cut == len(data))
    damaged = bytearray(data)
    damaged[400:420] = b"\xff" * 20
    monkeypatch.setattr(sys, "stdin", _Stdin(bytes(damaged)))
    with pytest.raises(ValueError, match=r"standard input: cannot read as CSV \(the file is damaged") as info:
        read_input("-", header=True, columns=[0, 1], file_format="csv.gz")
    assert "secret" not in str(info.value) and "t1" not in str(info.value)


def test_a_cut_gzip_tsv_and_its_time_column_keep_the_rows_of_the_plain_file(gzip_path, tmp_path):
    rng = np.random.default_rng(10)
    text = "x\ty\ttime\n" + "".join(
        f"{a!r}\t{b!r}\t{1000 + i}\n" for i, (a, b) in enumerate(rng.random((20000, 2)).tolist())
    )
    data = gzip.compress(text.encode())
    cut = len(data) // 2
    inflated = zlib.decompressobj(wbits=31).decompress(data[:cut])
    cut_path = put(tmp_path / "cut.tsv.gz", data[:cut])
    plain = put(tmp_path / "plain.tsv", inflated)
    got = read_input(cut_path, ["x", "y"], header=True, also=["time"])
    want = read_input(plain, ["x", "y"], header=True, also=["time"])
    _same_rows(got, want)
    assert got.companions[0].equals(want.companions[0]) and got.n_read_before_cut == got.X.shape[0]
    # the time read in a pass of its own (read_columns) is row for row with them
    time, _ = read_columns(cut_path, "time", options=ReadOptions(columns=("x", "y"), header=True))
    assert time.equals(read_columns(plain, "time", options=ReadOptions(columns=("x", "y"), header=True))[0])
    assert len(time) == got.X.shape[0]


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_a_fit_of_a_cut_gzip_file_releases_and_charges_the_ledger_once(capsys, tmp_path, backend):
    if backend == "dask":
        pytest.importorskip("distributed")
    text = "x,y\n" + "".join(f"{a!r},{b!r}\n" for a, b in blob_points(4).tolist())
    data = gzip.compress(text.encode())
    path = put(tmp_path / "cut.csv.gz", data[: len(data) * 3 // 4])
    ledger = tmp_path / "led.json"
    assert run(capsys, "ledger", "init", ledger, "--dataset", "d", "--epsilon", "5")[0] == 0
    opts = ["--header", "--columns", "x", "y", "--bounds", "0", "0", "10", "10", "--eps", "0.5"]
    rc, out, err = run(
        capsys,
        "fit",
        path,
        *opts,
        "--min-samples",
        "20",
        "--ledger",
        ledger,
        "--dataset",
        "d",
        "--out-dir",
        tmp_path,
        "--backend",
        backend,
    )
    assert rc == 0 and "ends early (cut part-way" in err and (tmp_path / "cut.spans.json").is_file(), err
    rc, shown, _ = run(capsys, "ledger", "show", ledger)
    assert rc == 0 and "written" in shown and "failed" not in shown and "spent    : epsilon=1," in shown


def test_an_intact_gzip_file_is_read_as_before(gzip_path, tmp_path):
    text = ("x,y\n" + "".join(f"{i},{-i}\n" for i in range(5000)) + "oops,1\n").encode()
    got = read_input(put(tmp_path / "ok.csv.gz", gzip.compress(text)), header=True)
    want = read_input(put(tmp_path / "ok.csv", text), header=True)
    _same_rows(got, want)
    assert got.n_read_before_cut is None and got.notes() == want.notes()


def test_a_cut_gzip_file_with_no_complete_record_is_refused(gzip_path, tmp_path):
    data = gzip.compress(b"x,y\n1.25,2\n3,4\n")
    for cut in range(10, len(data) - 8):
        inflated = zlib.decompressobj(wbits=31).decompress(data[:cut])
        path = put(tmp_path / "s.csv.gz", data[:cut])
        if inflated.count(b"\n") >= 2:  # the header and a record, whole
            assert read_input(path, header=True).X.shape[0] >= 1
            continue
        with pytest.raises(ValueError, match=r"s.csv.gz: cannot read as CSV \(the file is damaged") as info:
            read_input(path, header=True)
        assert "1.25" not in str(info.value)


def test_a_gzip_trailer_cannot_ask_for_more_room_than_deflate_allows(tmp_path):
    # the trailer's length is a sizing hint read from the file's last four
    # bytes: a cut file's are arbitrary (up to 4 GiB, about 4.3 GB of rows
    # reserved for a file of a few bytes); deflate inflates at most ~1032-fold
    data = gzip.compress(b"x,y\n1.25,2\n3,4\n")
    whole = put(tmp_path / "w.csv.gz", data)
    source = dpio.Source.file(whole, gz=True)
    source.close()
    assert source.text_bytes == len(b"x,y\n1.25,2\n3,4\n")
    lying = put(tmp_path / "l.csv.gz", data[:-4] + (2**32 - 1).to_bytes(4, "little"))
    source = dpio.Source.file(lying, gz=True)
    source.close()
    assert source.text_bytes <= 1032 * len(data)


# --------------------------------------------------------------------------- #
# blocks are written into place: their records are counted before parsing


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(["1,2", "", " ", "x,y", '"a,b",3', '"open,4', "5,6,7", "8"]), max_size=12),
    st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=12, max_size=12),
    st.booleans(),
)
def test_records_are_counted_as_parse_block_returns_them(lines, ends, last_end):
    from dpdbscan.files.csvfile import _records
    from dpdbscan.files.records import CsvLayout, parse_block

    text = "".join(line + end for line, end in zip(lines, ends))
    if lines and not last_end:
        text = text[: -len(ends[len(lines) - 1])]
    block = text.encode()
    if not block.strip(b"\r\n"):
        return
    X, _ = parse_block(block, CsvLayout(",", 2, (0, 1)))
    assert _records(block) == X.shape[0]


def test_result_grows_when_the_size_guess_is_short(monkeypatch, tmp_path):
    import dpdbscan.files.csvfile as dio

    monkeypatch.setattr(dio, "_BATCH", 64)
    rows = ["1.0000000000000000000000000000001,2.0000000000000000000000000000002"] * 3
    rows += [f"{i},{-i}" for i in range(3000)] + ["", "7,8\r\n9,10"]
    path = put(tmp_path / "g.csv", ("x,y\n" + "\n".join(rows) + "\n").encode())
    X = read_input(path, header=True).X
    assert X.shape == (3005, 2)
    np.testing.assert_array_equal(X[3:3003], np.column_stack([np.arange(3000), -np.arange(3000)]))
    np.testing.assert_array_equal(X[-2:], [[7, 8], [9, 10]])


@pytest.mark.parametrize("block", [32, 1 << 24])
@pytest.mark.parametrize("line", [b"\xef\xbb\xbf", b"\xef\xbb\xbf3,4"])
def test_a_line_starting_with_a_byte_order_mark_reads_as_anywhere_else(tmp_path, block, line):
    """A byte order mark that starts a line after the header (so it may start
    a block) is that line's bytes, read as they would be in mid-file; before,
    pyarrow dropped it at a block's start and the release failed on one line."""
    rows = []
    for where in ("first", "middle"):
        body = [line, b"5,6", b"7,8"] if where == "first" else [b"5,6", line, b"7,8"]
        path = tmp_path / f"{where}.csv"
        path.write_bytes(b"x,y\n" + b"\n".join(body) + b"\n")
        got = _read_in_blocks(path, block)
        assert got.X.shape == (3, 2)
        rows.append(got.X[0] if where == "first" else got.X[1])
    np.testing.assert_array_equal(rows[0], rows[1])


@pytest.mark.parametrize("block", [64, 300, 1 << 24])
def test_block_hook_sees_each_block_in_place_also_when_a_block_is_read_in_parts(tmp_path, monkeypatch, block):
    """The reader parses a block straight into its place in the result, and
    the hook changes it there; a block pyarrow cannot read at once (a
    malformed line that is not UTF-8) is read in parts and then copied into
    place: the hook's changes land in the result either way, once a row."""
    lines = [f"{i},{-i / 7!r}" for i in range(120)]
    lines[37] = "1,2,\xff"  # the wrong number of fields, not UTF-8
    path = tmp_path / "p.csv"
    path.write_bytes(("x,y\n" + "\n".join(lines) + "\n").encode("latin-1"))
    monkeypatch.setattr(dpio, "_BATCH", block)
    plain = read_input(path, header=True)
    seen = []

    def hook(X):
        seen.append(X.shape[0])
        X *= 2.0

    got = read_input(path, header=True, block_hook=hook)
    assert sum(seen) == 120 and got.n_malformed == plain.n_malformed == 1
    np.testing.assert_array_equal(got.X, 2.0 * plain.X)
    assert np.isnan(got.X[37]).all() and got.X[119, 0] == 238.0


def test_a_geoparquet_geometry_column_says_how_to_give_lon_lat(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "points.parquet"
    pq.write_table(pa.table({"geometry": pa.array([b"\x01\x01"] * 3), "cab": ["a", "b", "c"]}), path)
    for columns in (None, ("geometry",)):
        with pytest.raises(ValueError, match="geometry column .* is not read: write each point's longitude"):
            read_points(path, columns=columns)


def test_a_parquet_polyline_column_says_how_to_get_one_row_per_point(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "trips.parquet"
    trips = pa.table({"TAXI_ID": [1, 2], "TIMESTAMP": [10, 20], "POLYLINE": ["[[-8.6,41.1]]", "[]"]})
    pq.write_table(trips, path)
    for columns in (None, ("POLYLINE",)):
        with pytest.raises(ValueError, match="a polyline column .* is not read. Convert the trips"):
            read_points(path, columns=columns)


@pytest.mark.parametrize(
    "first, second, want",
    [
        (["1", "2"], [3, 4], ["1", "2", 3, 4]),  # text ids in one file, integers in the other
        ([1, 2], ["3", "x"], [1, 2, "3", "x"]),
        ([1, 2], [1.0, 2.5], [1, 2, 1, 2.5]),  # 1 and 1.0: one unit
        (np.array([1, 2], "datetime64[us]"), np.array([3, 4], "datetime64[ms]"), [1e-6, 2e-6, 3e-3, 4e-3]),
        (np.array([1, 2], np.int64), np.array([3, 4], np.int32), [1, 2, 3, 4]),
    ],
)
def test_a_dataset_whose_files_disagree_on_a_columns_type_reads_each_file_by_its_own(
    tmp_path, first, second, want
):
    """pyarrow would cast the second file's values to the first's type, and
    whether that succeeds depends on the values; the dataset was then
    refused from the schemas, so that one file (one unit's, where each file
    is one's) decided whether anything was released. Now each file is read
    by its own type: the ids by the library's id rule, times each to its own
    seconds."""
    from dpdbscan.release.bounding import factorize
    from dpdbscan.traces.times import parse_times

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "ds"
    folder.mkdir()
    for name, col in (("a", first), ("b", second)):
        table = pa.table({"x": [0.1, 0.2], "y": [0.3, 0.4], "u": pa.array(col)})
        pq.write_table(table, folder / f"{name}.parquet")
    timed = isinstance(first, np.ndarray) and first.dtype.kind == "M"
    if timed:  # a trace's time column, read beside the points
        t, _ = read_columns(folder, "u", options=ReadOptions(columns=("x", "y")))
        np.testing.assert_array_equal(parse_times(t), want)
    else:
        got = read_input(folder, columns=("x", "y"), unit="u")
        codes, uniques = factorize(got.units)
        assert [uniques[c] for c in codes] == want
        assert [isinstance(uniques[c], str) for c in codes] == [isinstance(v, str) for v in want]
    got = read_input(folder, columns=("x", "y"))  # u is not read
    assert got.X.shape == (4, 2)


def test_a_dataset_with_one_schema_and_dictionary_or_large_text_reads(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "ds"
    folder.mkdir()
    units = (pa.array(["a", "b"]).dictionary_encode(), pa.array(["c", "d"], pa.large_string()))
    for name, col in zip("ab", units):
        pq.write_table(pa.table({"x": [0.1, 0.2], "y": [0.3, 0.4], "u": col}), folder / f"{name}.parquet")
    got = read_input(folder, columns=("x", "y"), unit="u")
    assert got.X.shape == (4, 2) and len(got.units) == 4
    # every pyarrow reads the ids as they are (pyarrow 14 could not cast the
    # large text file to the first file's dictionary while scanning)
    assert sorted(str(u) for u in got.units.to_pylist()) == ["a", "b", "c", "d"]
