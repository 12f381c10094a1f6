"""The Dask path says what it read and dropped in the in-memory path's
private lines, for the same file: the rows with a value that is not a
number, the malformed lines, the rows with no unit, the rows read, and the
total the per-record rule drops ("N row(s) with missing or non-finite values
or no unit are dropped"), which the Dask tally did not count (a non-finite
value, an empty field) and so never said; and the rows clipped onto the box
("N point(s) lie outside the bounds", per column and bound), which its
partitions, having no box, did not count."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import dpdbscan.cli.fit as cli_fit  # noqa: E402

from clirun import run  # noqa: E402

SECRET = "SECRET-NOTE-9"
FIT = ["--eps", "0.05", "--min-samples", "10", "--epsilon", "1", "--bounds", "0", "0", "1", "1",
       "--seed", "1", "--no-png"]  # fmt: skip
UNIT = ["--unit", "unit", "--max-cells-per-unit", "2", "--delta", "1e-6"]


@pytest.fixture
def on_client(client, monkeypatch):
    """``--backend dask`` on the test cluster, with small CSV blocks (several partitions)."""
    made = cli_fit.dask_backend

    def backend(opts):
        b = made(opts)
        b.client, b.blocksize = client, 20_000
        return b

    monkeypatch.setattr(cli_fit, "dask_backend", backend)


def points(n=3000):
    rng = np.random.default_rng(0)
    return rng.normal(0.5, 0.1, (n, 2)), [f"u{i % 40}" for i in range(n)]


def csv_file(tmp_path):
    X, units = points()
    lines = ["x,y,unit"] + [f"{a!r},{b!r},{u}" for (a, b), u in zip(X.tolist(), units)]
    # spread over the blocks: a non-finite value, NaN, an empty field, text, a malformed line, no unit
    bad = ["0.5,inf,u1", "nan,0.5,u1", "0.5,,u1", f"0.5,{SECRET},u1", "0.5,0.5", "0.5,0.5,", "-inf,1e400,u3"]
    for k, line in enumerate(bad):
        lines[1 + 400 * k + 7] = line
    path = tmp_path / "p.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, ["--header", "--columns", "x", "y"]


def parquet_file(tmp_path):
    X, units = points()
    X[[5, 900, 2100]] = [[np.nan, 0.5], [np.inf, 0.5], [0.5, -np.inf]]
    unit = pa.array([None if i in (17, 2500) else u for i, u in enumerate(units)], type=pa.string())
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "unit": unit}), path)
    return path, ["--columns", "x", "y"]


@pytest.mark.parametrize("make", [csv_file, parquet_file])
@pytest.mark.parametrize("level", ["event", "unit"])
def test_a_dask_fit_prints_the_in_memory_private_lines(tmp_path, capsys, on_client, make, level):
    path, how = make(tmp_path)
    extra = UNIT if level == "unit" else []

    def private(*backend):
        out_dir = tmp_path / (backend[-1] if backend else "memory")
        rc, out, err = run(capsys, "fit", path, *how, *FIT, *extra, *backend, "--out-dir", out_dir)
        assert rc == 0, err
        assert SECRET not in out + err
        return [line for line in err.splitlines() if line.startswith("[private")]

    memory, dask = private(), private("--backend", "dask")
    total = [line for line in dask if "row(s) with missing or non-finite values" in line]
    assert len(total) == 1, dask
    assert memory == dask


def clipped_files(tmp_path, fmt):
    """Points of which 20% lie left of x's lower bound and 2% above y's
    upper one, spread over several partitions (CSV blocks; three Parquet
    files), with a few bad rows; ``(path, options)``."""
    X, units = points()
    X[::5, 0] -= 1.0
    X[1::50, 1] += 1.0
    X[[8, 1500]] = [[np.nan, 0.5], [np.inf, 3.0]]  # dropped, not clipped
    if fmt == "csv":
        lines = ["x,y,unit"] + [f"{a!r},{b!r},{u}" for (a, b), u in zip(X.tolist(), units)]
        path = tmp_path / "c.csv"
        path.write_text("\n".join(lines) + "\n")
        return path, ["--header", "--columns", "x", "y"]
    path = tmp_path / "c.parquet"
    path.mkdir()
    for j, rows in enumerate(np.array_split(np.arange(len(X)), 3)):
        table = pa.table({"x": X[rows, 0], "y": X[rows, 1], "unit": [units[i] for i in rows]})
        pq.write_table(table, path / f"part-{j}.parquet")
    return path, ["--columns", "x", "y"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("level", ["event", "unit"])
def test_a_dask_fit_says_the_rows_clipped_onto_the_box_as_in_memory(tmp_path, capsys, on_client, fmt, level):
    """The in-memory path's "N point(s) lie outside the bounds" lines, per
    column and bound, which the Dask path never said (its partitions counted
    no box): counted on the workers now, summed over the partitions, and
    said in the same words."""
    path, how = clipped_files(tmp_path, fmt)
    extra = UNIT if level == "unit" else []

    def private(*backend):
        out_dir = tmp_path / (backend[-1] if backend else "memory")
        rc, _, err = run(capsys, "fit", path, *how, *FIT, *extra, *backend, "--out-dir", out_dir)
        assert rc == 0, err
        return [line for line in err.splitlines() if line.startswith("[private")]

    memory, dask = private(), private("--backend", "dask")
    assert memory == dask
    text = "\n".join(dask)
    assert "lie outside the bounds and are clipped onto the box" in text
    assert "column 'x': 20.0% of the rows lie below its lower bound 0" in text
    assert "column 'y': 2.0% of the rows lie above its upper bound 1" in text


def unnamed_files(tmp_path, fmt):
    """:func:`clipped_files`' points without their unit, read with no
    ``--columns``: a CSV file with a declared header, one without, and a
    Parquet file; ``(path, options, the names the notes give the columns)``."""
    X, _ = points()
    X[::5, 0] -= 1.0
    X[1::50, 1] += 1.0
    X[[8, 1500]] = [[np.nan, 0.5], [np.inf, 3.0]]
    rows = [f"{a!r},{b!r}" for a, b in X.tolist()]
    if fmt == "parquet":
        path = tmp_path / "n.parquet"
        pq.write_table(pa.table({"east": X[:, 0], "north": X[:, 1]}), path)
        return path, [], ("east", "north")
    path = tmp_path / f"{fmt}.csv"
    if fmt == "header":
        path.write_text("\n".join(["east,north", *rows]) + "\n")
        return path, ["--header"], ("east", "north")
    path.write_text("\n".join(rows) + "\n")
    return path, ["--no-header"], ("0", "1")


@pytest.mark.parametrize("fmt", ["header", "no-header", "parquet"])
def test_a_dask_fit_without_columns_names_them_as_in_memory(tmp_path, capsys, on_client, fmt):
    """Without ``--columns`` the Dask notes named the columns by position
    ("column '0'", and "read 3,000 rows x 2 column(s) ()") where the
    in-memory path names them by the declared header or the Parquet schema
    (public: docs/privacy.md 4.1); now both say the same lines, and a
    header-less file's columns are its field numbers in both. The release
    files are the same as before (only the notes on standard error change)."""
    path, how, (a, b) = unnamed_files(tmp_path, fmt)

    def private(*backend):
        out_dir = tmp_path / (backend[-1] if backend else "memory")
        rc, _, err = run(capsys, "fit", path, *how, *FIT, *backend, "--out-dir", out_dir)
        assert rc == 0, err
        return [line for line in err.splitlines() if line.startswith("[private")]

    memory, dask = private(), private("--backend", "dask")
    assert memory == dask
    text = "\n".join(dask)
    assert f"read 3,000 rows x 2 column(s) ({a}, {b}) from" in text
    assert f"column '{a}': 20.0% of the rows lie below its lower bound 0" in text
    assert f"column '{b}': 2.0% of the rows lie above its upper bound 1" in text
