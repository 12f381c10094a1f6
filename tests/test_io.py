import gzip
import io
import sys

import numpy as np
import pytest

from dpdbscan.io import file_kind, read_points, resolve_columns, write_labels

POINTS = np.array([[1.5, -2.0], [3.25, 4.0], [-5.0, 6.125], [7.0, 8.0]])
LABELS = np.array([0, 1, -1, 1])


def write_csv(path, header="x,y,label", rows=None, sep=","):
    rows = rows if rows is not None else [
        sep.join([repr(float(a)), repr(float(b)), str(int(c))]) for (a, b), c in zip(POINTS, LABELS)
    ]
    text = header.replace(",", sep) + "\n" + "\n".join(rows) + "\n" if header is not None else "\n".join(rows) + "\n"
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


@pytest.fixture(params=["arrow", "numpy"])
def backend(request, monkeypatch):
    """Run CSV tests with pyarrow and with the numpy fallback."""
    if request.param == "numpy":
        monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    return request.param


@pytest.mark.parametrize("name", ["p.csv", "p.csv.gz", "p.txt"])
def test_csv_default_columns_skip_label(tmp_path, name, backend):
    X, names = read_points(write_csv(tmp_path / name))
    assert names == ["x", "y"]
    np.testing.assert_array_equal(X, POINTS)
    assert X.dtype == np.float64


def test_gzip_detected_by_content_not_name(tmp_path):
    path = tmp_path / "p.csv"
    path.write_bytes(gzip.compress(b"x,y\n1,2\n3,4\n"))
    assert file_kind(path) == "csv.gz"
    X, _ = read_points(path)
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])


def test_tsv_and_explicit_delimiter(tmp_path, backend):
    X, names = read_points(write_csv(tmp_path / "p.tsv", sep="\t"))
    assert names == ["x", "y"]
    np.testing.assert_array_equal(X, POINTS)
    X2, _ = read_points(write_csv(tmp_path / "p.csv", sep=";"), delimiter=";")
    np.testing.assert_array_equal(X2, POINTS)


@pytest.mark.parametrize("columns, names, expected", [
    (["y", "x"], ["y", "x"], POINTS[:, ::-1]),
    (["1"], ["y"], POINTS[:, 1:]),
    ([0, "label"], ["x", "label"], np.column_stack([POINTS[:, 0], LABELS])),
])
def test_column_selection(tmp_path, columns, names, expected, backend):
    X, got = read_points(write_csv(tmp_path / "p.csv"), columns)
    assert got == names
    np.testing.assert_array_equal(X, expected)


def test_no_header(tmp_path, backend):
    path = write_csv(tmp_path / "p.csv", header=None)
    X, names = read_points(path, ["0", "1"], no_header=True)
    assert names == ["0", "1"]
    np.testing.assert_array_equal(X, POINTS)


def test_missing_values_read_as_nan(tmp_path):
    path = write_csv(tmp_path / "p.csv", header="x,y", rows=["1,2", "3,", "NA,4", "5,6"])
    X, _ = read_points(path)
    assert X.shape == (4, 2)
    assert np.isnan(X[1, 1]) and np.isnan(X[2, 0])
    np.testing.assert_array_equal(X[[0, 3]], [[1, 2], [5, 6]])


def test_parquet_and_npy(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"x": POINTS[:, 0], "y": POINTS[:, 1].astype(np.float32), "label": LABELS,
                      "name": ["a", "b", "c", "d"]})
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
    read_points(write_csv(tmp_path / "p.csv.gz"), progress=True)
    err = capsys.readouterr().err
    assert "reading p.csv.gz" in err and "100%" in err
    read_points(write_csv(tmp_path / "p.csv.gz"))  # not a terminal: quiet
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("make, columns, exc, match", [
    (lambda d: d / "nope.csv", None, FileNotFoundError, "input file not found"),
    (lambda d: d, None, IsADirectoryError, "is a directory"),
    (lambda d: write_csv(d / "s.csv", "a,b", ["foo,bar", "baz,qux"]), None, ValueError,
     "a, b are not numeric"),
    (lambda d: write_csv(d / "s.csv", "x,y", ["1,2", "3,abc"]), None, ValueError,
     "y are not numeric"),
    (lambda d: write_csv(d / "s.csv", "x,y", ["1,2", "3,abc"]), ["x", "y"], ValueError,
     "cannot read as CSV of numbers"),
    (lambda d: write_csv(d / "p.csv"), ["z"], ValueError, "no column 'z' in"),
    (lambda d: write_csv(d / "p.csv"), [5], ValueError, "column index 5 is out of range"),
    (lambda d: write_csv(d / "p.csv"), ["x", "0"], ValueError, "selected twice"),
    (lambda d: put(d / "e.csv", b""), None, ValueError, "e.csv: cannot read"),
    (lambda d: put(d / "j.csv", bytes(range(256)) * 8), None, ValueError, "j.csv"),
    (lambda d: put(d / "f.parquet", b"x,y\n1,2\n"), None, ValueError, "not a valid parquet file"),
    (lambda d: put(d / "c.npy", np.zeros((2, 2, 2))), None, ValueError, "must be 2-D"),
    (lambda d: put(d / "s.npy", np.array(["a", "b"])), None, ValueError, "must be numeric"),
])
def test_bad_input_raises_clear_errors(tmp_path, make, columns, exc, match):
    path = make(tmp_path)
    with pytest.raises(exc, match=match):
        read_points(path, columns)


def test_binary_file_message_is_one_printable_line(tmp_path):
    (tmp_path / "j.csv").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(ValueError) as info:
        read_points(tmp_path / "j.csv")
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
    X, names = read_points(shared_data / "cabs_sf.csv.gz")
    assert X.shape == (10_995_626, 2) and names == ["x", "y"]
    assert np.all((X[:, 0] >= -122.6) & (X[:, 0] <= -122.3))
    assert np.all((X[:, 1] >= 37.55) & (X[:, 1] <= 37.85))


def test_read_model_roundtrip_and_refusals(tmp_path):
    from dpdbscan import DPDBSCAN
    from dpdbscan.io import read_model

    m = DPDBSCAN(eps=1.0, min_samples=2, bounds=(-10.0, 10.0), random_state=0).fit(POINTS).spans_
    m.save(tmp_path / "m.json")
    back = read_model(tmp_path / "m.json")
    np.testing.assert_array_equal(back.histogram.values, m.histogram.values)
    (tmp_path / "g.json").write_text('{"type": "FeatureCollection"}')
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00" * 10)
    (tmp_path / "p.json").write_text(m.to_json().replace('"metadata": {}', '"metadata": {"projection": {"kind": "utm"}}'))
    for name, match in [("g.json", "g.json: not a dpdbscan span model"), ("b.json", "not a text file"),
                        ("p.json", "unknown projection"), ("none.json", "model file not found")]:
        with pytest.raises((ValueError, FileNotFoundError), match=match):
            read_model(tmp_path / name)
