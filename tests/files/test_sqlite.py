"""Points from SQLite databases (dpdbscan.files.sqlitefile).

A table read from SQLite must give the points of the same rows written as
CSV (or Parquet, for typed units), bit for bit, and so the same seeded
release. How each value is read comes from the column's declared type,
never from the values: a value of another kind drops its row alone, counted
in a private note that quotes nothing read from the file. Rows are read in
chunks, the database is opened read-only, and what cannot be read is
refused before a row is read and before a ledger reserves anything.
"""

from __future__ import annotations

import sqlite3
import tracemalloc

import numpy as np
import pytest
from pointfiles import SECRET, make_db

from dpdbscan import DPDBSCAN, load_model
from dpdbscan.files import ReadOptions, read_columns, read_input, sqlitefile
from dpdbscan.model.codec import model_to_dict

from clirun import blob_points, run, write_csv

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)


FIT = ["--eps", "0.5", "--min-samples", "20", "--bounds", "0", "0", "10", "10", "--seed", "5"]
QUIET = ["--no-png", "--no-geojson", "--no-progress"]


def fit(capsys, tmp_path, path, *extra, name="m"):
    rc, out, err = run(capsys, "fit", path, *FIT, *QUIET, "--out-dir", tmp_path, "--name", name, *extra)
    return rc, out, err, (load_model(tmp_path / f"{name}.spans.json") if rc == 0 else None)


def same_release(a, b) -> bool:
    a, b = model_to_dict(a), model_to_dict(b)
    return a["histogram"] == b["histogram"] and a["spans"] == b["spans"] and a["privacy"] == b["privacy"]


# --------------------------------------------------------------------------- #
# the same points as CSV, bit for bit


@pytest.mark.parametrize("declared", ["REAL", "DOUBLE PRECISION", "FLOAT", "NUMERIC", "", "TEXT"])
def test_a_table_reads_the_points_of_the_same_csv(tmp_path, declared):
    X = blob_points(1)
    rows = [(repr(float(a)), repr(float(b))) if declared == "TEXT" else (float(a), float(b)) for a, b in X]
    db = make_db(tmp_path / "p.sqlite", f"x {declared}, y {declared}", rows)
    got = read_input(db, ["x", "y"])
    want = read_input(write_csv(tmp_path / "p.csv", X), ["x", "y"])
    assert got.X.tobytes() == want.X.tobytes() and got.names == ["x", "y"]
    assert got.notes() == []


def test_the_fit_of_a_table_is_the_fit_of_the_same_csv(capsys, tmp_path):
    X = blob_points(2)
    db = make_db(tmp_path / "p.db", "x REAL, y REAL", [tuple(map(float, r)) for r in X])
    rc, out, err, model = fit(capsys, tmp_path, db)
    assert rc == 0, err
    rc, _, err2, ref = fit(capsys, tmp_path, write_csv(tmp_path / "p.csv", X), "--header", name="csv")
    assert rc == 0, err2
    assert model.n_spans == 2 and same_release(model, ref)
    assert f"read {len(X):,} rows x 2 column(s) (x, y) from {db}" in err
    # predict and sweep read the table as fit does
    rc, labels, err = run(capsys, "predict", tmp_path / "m.spans.json", db, "--no-progress")
    assert rc == 0, err
    rc, labels_csv, err = run(capsys, "predict", tmp_path / "m.spans.json", tmp_path / "p.csv", "--header")
    assert rc == 0, err
    assert labels == labels_csv and labels.split() == ["label", *map(str, model.predict(X))]
    rc, out, err = run(
        capsys, "sweep", db, *FIT[2:], "--eps", "0.5", "0.7", "--min-samples", "20", "--out-dir", tmp_path
    )
    assert rc == 0 and "p.eps0.7.m20.spans.json" in out, err


def test_a_query_reads_the_time_column_row_for_row(tmp_path):
    rows = [(float(i), float(i % 7), f"p{i % 3}", 1000 + i) for i in range(50)]
    db = make_db(tmp_path / "t.sqlite", "x REAL, y REAL, person TEXT, time INTEGER", rows)
    query = "SELECT x, y, person, time FROM pts WHERE y > 2 ORDER BY time DESC"
    got = read_input(db, ["x", "y"], unit="person", query=query)
    times, _ = read_columns(db, "time", options=ReadOptions(query=query))
    kept = sorted((r for r in rows if r[1] > 2), key=lambda r: -r[3])
    assert got.X.tolist() == [[r[0], r[1]] for r in kept]
    assert times.to_pylist() == [r[3] for r in kept] and got.units.to_pylist() == [r[2] for r in kept]


def _people(n_units=300, per_unit=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal([3, 3], 0.4, size=(n_units * per_unit, 2))
    return X, np.repeat(np.arange(n_units) * 7919 + 2**40, per_unit)


UNIT = ["--unit", "person", "--max-cells-per-unit", "4", "--delta", "1e-6"]


def test_units_read_by_their_declared_type(capsys, tmp_path):
    X, ids = _people()
    rows = [(float(a), float(b), int(u), str(u)) for (a, b), u in zip(X, ids)]
    db = make_db(tmp_path / "p.sqlite", "x REAL, y REAL, person INTEGER, name TEXT", rows)
    # INTEGER units are int64, as a Parquet int64 column's
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1], "person": ids}), tmp_path / "p.parquet")
    rc, _, err, model = fit(capsys, tmp_path, db, "--columns", "x", "y", *UNIT)
    assert rc == 0, err
    rc, _, err, ref = fit(capsys, tmp_path, tmp_path / "p.parquet", "--columns", "x", "y", *UNIT, name="pq")
    assert rc == 0, err
    assert same_release(model, ref) and model.release.units is not None
    # TEXT units are text, as a CSV field's
    text = ["x,y,name"] + [f"{a!r},{b!r},{u}" for a, b, _, u in rows]
    (tmp_path / "p.csv").write_text("\n".join(text) + "\n")
    unit = ["--unit", "name", *UNIT[2:]]
    rc, _, err, model = fit(capsys, tmp_path, db, "--columns", "x", "y", *unit, name="t")
    assert rc == 0, err
    rc, _, err, ref = fit(capsys, tmp_path, tmp_path / "p.csv", "--header", *unit, name="csv")
    assert rc == 0, err
    assert same_release(model, ref)


# --------------------------------------------------------------------------- #
# values of another kind drop their row alone, counted, never quoted


def test_values_of_another_kind_drop_their_row_and_are_counted(capsys, tmp_path):
    X, ids = _people(seed=3)
    rows = [[float(a), float(b), int(u)] for (a, b), u in zip(X, ids)]
    rows[0][0] = SECRET  # text in a REAL column
    rows[1][1] = SECRET.encode()  # a blob
    rows[2][1] = None  # missing
    rows[3][2] = SECRET  # text in the INTEGER unit column
    rows[4][2] = 2.5  # a real in it
    rows[5][2] = None
    db = make_db(tmp_path / "p.sqlite", "x REAL, y REAL, person INTEGER", rows)
    got = read_input(db, ["x", "y"], unit="person")
    assert np.isnan(got.X[:6]).any(axis=1).all() and not np.isnan(got.X[6:]).any()
    assert got.n_unparseable == 2 and got.n_missing_unit == 3
    rc, out, err, model = fit(capsys, tmp_path, db, "--columns", "x", "y", *UNIT)
    assert rc == 0, err
    assert "2 row(s) with values that are not numbers read as missing" in err
    assert "3 row(s) with no unit (column 'person', --unit) are dropped" in err
    assert SECRET not in out + err
    keep = slice(6, None)
    ref = DPDBSCAN(
        0.5, min_samples=20, bounds=([0, 0], [10, 10]), delta=1e-6, max_cells_per_unit=4, random_state=5
    ).fit(X[keep], units=ids[keep])
    assert same_release(model, ref.spans_)


def test_a_text_column_reads_numbers_by_the_csv_grammar(tmp_path):
    rows = [("1.5", "2"), (" 3 ", "4e0"), ("NA", "1"), ("", "1"), (SECRET, "1"), ("0x10", "1")]
    got = read_input(make_db(tmp_path / "t.sqlite", "x TEXT, y TEXT", rows), ["x", "y"])
    csv = tmp_path / "t.csv"
    csv.write_text("x,y\n" + "".join(f"{a},{b}\n" for a, b in rows))
    want = read_input(csv, ["x", "y"])
    np.testing.assert_array_equal(got.X, want.X)
    assert got.n_unparseable == want.n_unparseable == 2


# --------------------------------------------------------------------------- #
# tables, queries and refusals


def test_a_query_selects_the_rows_and_a_view_keeps_the_declared_types(capsys, tmp_path):
    X = blob_points(4)
    rows = [(float(a), float(b), i % 2) for i, (a, b) in enumerate(X)]
    db = make_db(tmp_path / "p.sqlite", "x REAL, y REAL, keep INTEGER", rows)
    make_db(db, "a TEXT", [], table="other")
    got = read_input(db, ["x", "y"], query="SELECT x, y FROM pts WHERE keep = 1;")
    np.testing.assert_array_equal(got.X, X[1::2])
    # the default columns need declared numbers: a query's expression has no type
    with pytest.raises(ValueError, match="not numeric"):
        read_input(db, query="SELECT x + 0 AS x, y FROM pts")
    got = read_input(db, ["x", "y"], query="SELECT x + 0 AS x, y FROM pts")
    np.testing.assert_array_equal(got.X, X)
    rc, _, err = run(capsys, "check", db, "--table", "pts", "--columns", "x", "y", *FIT[:-2])
    assert rc == 0, err


@pytest.mark.parametrize(
    "kw, match",
    [
        ({}, r"has 2 tables \('other', 'pts'\); name the one .* --table"),
        ({"table": "nope"}, r"no table 'nope' \(--table\) .*tables: 'other', 'pts'"),
        ({"query": "DELETE FROM pts"}, "must be one SELECT statement"),
        ({"query": "SELECT 1; SELECT 2"}, "one SELECT statement"),
        ({"table": "pts", "unit": "nope"}, "no column 'nope'"),
        ({"query": "SELECT x, y, keep + 1 AS u FROM pts", "unit": "u"}, "declared 'without a type'"),
        ({"table": "pts", "header": True}, "apply to CSV files only"),
    ],
)
def test_refused_from_the_schema(tmp_path, kw, match):
    db = make_db(tmp_path / "p.sqlite", "x REAL, y REAL, keep INTEGER", [(1.0, 2.0, SECRET)])
    make_db(db, "a TEXT", [(SECRET,)], table="other")
    before = db.read_bytes()
    with pytest.raises(ValueError, match=match) as info:
        read_input(db, ["x", "y"], **kw)
    assert SECRET not in str(info.value) and db.read_bytes() == before


def test_not_a_database_and_table_on_a_csv(tmp_path):
    bad = tmp_path / "p.db"
    bad.write_text(f"x,y\n{SECRET},1\n" * 100)
    with pytest.raises(ValueError, match="cannot read as SQLite") as info:
        read_input(bad, ["x", "y"])
    assert SECRET not in str(info.value)
    with pytest.raises(ValueError, match="--table applies to SQLite and GeoPackage files only"):
        read_input(write_csv(tmp_path / "p.csv", blob_points()), ["x", "y"], table="pts")


def test_the_database_is_opened_read_only(tmp_path):
    db = make_db(tmp_path / "p.sqlite", "x REAL, y REAL", [(1.0, 2.0)])
    con = sqlitefile.connect(db)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        con.execute("INSERT INTO pts VALUES (3, 4)")
    con.close()


# --------------------------------------------------------------------------- #
# bounded memory: chunks, whatever the table's size


def test_rows_stream_in_chunks_with_bounded_memory(tmp_path, monkeypatch):
    n = 400_000
    db = tmp_path / "big.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE pts (x REAL, y REAL, person INTEGER)")
    con.execute(
        "WITH RECURSIVE i(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM i WHERE k < ?) "
        "INSERT INTO pts SELECT k * 1e-3, k * 2e-3, k / 20 FROM i",
        (n - 1,),
    )
    con.commit()
    con.close()
    monkeypatch.setattr(sqlitefile, "CHUNK", 10_000)
    read_input(db, ["x", "y"], query="SELECT * FROM pts LIMIT 10", unit="person")  # imports done
    blocks = []
    tracemalloc.start()
    try:
        got = read_input(db, ["x", "y"], unit="person", block_hook=lambda X: blocks.append(X.shape[0]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert blocks == [10_000] * (n // 10_000) and got.X.shape == (n, 2)
    assert got.X[-1, 1] == (n - 1) * 2e-3
    # the result (6.4 MB of points, 3.2 MB of units), and one chunk of Python
    # values (15 MB measured); all the rows at once as Python values take 108 MB
    assert peak < 32e6, peak


# --------------------------------------------------------------------------- #
# traces: the time and status columns by their declared types


def test_stops_from_a_table_are_the_stops_of_the_same_csv(capsys, tmp_path):
    rng = np.random.default_rng(0)
    rows, t0 = [], 1_211_018_400
    for u in range(150):
        pos = rng.uniform(2, 8, 2)
        for k in range(30):
            here = (
                np.array([3.0, 3.0]) + rng.normal(0, 0.01, 2) if 10 <= k < 21 else pos + rng.normal(0, 0.5, 2)
            )
            rows.append((float(here[0]), float(here[1]), f"p{u}", t0 + 60 * k + u))
    db = make_db(tmp_path / "t.sqlite", "x REAL, y REAL, person TEXT, time INTEGER", rows)
    csv = tmp_path / "t.csv"
    csv.write_text("x,y,person,time\n" + "".join(f"{a!r},{b!r},{p},{t}\n" for a, b, p, t in rows))
    stops = ["--columns", "x", "y", *UNIT, "--time", "time", "--stops", "0.1", "5min"]
    rc, out, err, model = fit(capsys, tmp_path, db, *stops)
    assert rc == 0, err
    rc, _, err, ref = fit(capsys, tmp_path, csv, *stops, name="csv")
    assert rc == 0, err
    assert same_release(model, ref) and model.n_spans >= 1
    times, _ = read_columns(db, "time")
    assert times.type == pa.int64() and times.to_pylist() == [r[3] for r in rows]


def test_time_text_and_untyped_status_read_value_by_value(tmp_path):
    rows = [(1.0, 1.0, "2008-05-17T10:00:00Z", 1), (1.0, 1.0, 1211018400, "free"), (1.0, 1.0, None, None)]
    db = make_db(tmp_path / "t.sqlite", "x REAL, y REAL, time DATETIME, busy", rows)
    times, busy = read_columns(db, "time", "busy")
    assert times.to_pylist() == ["2008-05-17T10:00:00Z", "1211018400", None]
    assert busy.to_pylist() == ["1", "free", None]


# --------------------------------------------------------------------------- #
# refused before anything is charged


@pytest.mark.parametrize(
    "extra, match",
    [
        (
            ["--backend", "dask", "--columns", "x", "y"],
            "--backend dask reads CSV and Parquet files, not an SQLite",
        ),
        (["--table", "nope"], "no table 'nope'"),
        (["--columns", "x", "nope"], "no column 'nope'"),
    ],
)
def test_refused_before_the_ledger_reserves(capsys, tmp_path, extra, match):
    db = make_db(tmp_path / "p.sqlite", "x REAL, y REAL", [tuple(map(float, r)) for r in blob_points()])
    ledger = tmp_path / "budget.ledger"
    rc, _, err = run(capsys, "ledger", "init", ledger, "--dataset", "d", "--epsilon", "5")
    assert rc == 0, err
    rc, out, err = run(capsys, "fit", db, *FIT, *QUIET, "--ledger", ledger, "--dataset", "d", *extra)
    assert rc == 2 and match in err, err
    con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    assert con.execute("SELECT count(*) FROM releases").fetchone() == (0,)
    con.close()


# --------------------------------------------------------------------------- #
# round 8: a text value that is not UTF-8 drops its own row, never the read


def _text_people(tmp_path, bad: str | None, name: str):
    """A table of 150 people with text units, text times and a text copy of
    x; with ``bad``, one more row (person 'zz') whose ``bad`` column holds
    bytes that are not UTF-8 stored as TEXT (as a C program or another
    driver may write them: SQLite does not check)."""
    rng = np.random.default_rng(0)
    rows, t0 = [], 1_211_018_400
    for u in range(150):
        pos = rng.uniform(2, 8, 2)
        for k in range(30):
            here = (
                np.array([3.0, 3.0]) + rng.normal(0, 0.01, 2) if 10 <= k < 21 else pos + rng.normal(0, 0.5, 2)
            )
            t = dt_text(t0 + 60 * k + u)
            rows.append((float(here[0]), float(here[1]), f"p{u}", t, repr(float(here[0]))))
    db = make_db(tmp_path / f"{name}.sqlite", "x REAL, y REAL, person TEXT, time TEXT, xt TEXT", rows)
    if bad is not None:
        values = {"x": "3.0", "y": "3.0", "person": "'zz'", "time": f"'{dt_text(t0)}'", "xt": "'3.0'"}
        values[bad] = "CAST(X'C3FF28' AS TEXT)"
        con = sqlite3.connect(db)
        con.execute(f"INSERT INTO pts VALUES ({', '.join(values.values())})")
        con.commit()
        con.close()
    return db


def dt_text(seconds: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    "bad, columns",
    [("person", ["x", "y"]), ("time", ["x", "y"]), ("xt", ["xt", "y"])],
)
def test_a_text_value_that_is_not_utf8_drops_its_row_and_the_release_is_made(capsys, tmp_path, bad, columns):
    # Before (round 8), Python's sqlite3 refused to decode the value while the
    # rows were fetched, and the whole read failed ("cannot read as SQLite"):
    # whether anything was released hinged on that one row (after a ledger had
    # reserved the release).
    stops = ["--columns", *columns, *UNIT, "--time", "time", "--stops", "0.1", "5min"]
    rc, _, err, ref = fit(capsys, tmp_path, _text_people(tmp_path, None, "d"), *stops, name="d")
    assert rc == 0, err
    db = _text_people(tmp_path, bad, "d1")
    rc, out, err, model = fit(capsys, tmp_path, db, *stops, name="d1")
    assert rc == 0, err
    assert same_release(model, ref) and model.n_spans >= 1
    assert "\ufffd" not in out + err and "zz" not in out + err
    # read alone: the row is there, its bad value missing (or not a number)
    got = read_input(db, columns, unit="person")
    assert got.X.shape[0] == 150 * 30 + 1
    if bad == "person":
        assert got.units.to_pylist()[-1] is None and got.n_missing_unit == 1
    if bad == "xt":
        assert np.isnan(got.X[-1, 0]) and got.n_unparseable == 1
    times, _ = read_columns(db, "time")
    assert len(times) == 150 * 30 + 1 and (times.to_pylist()[-1] is None) == (bad == "time")
    # check reads it as fit does: status 0, nothing on standard output
    rc, out, err = run(capsys, "check", db, *FIT[:-2], *stops)
    assert rc == 0 and out == "", err


def test_a_ledger_charged_release_of_a_table_with_a_non_utf8_unit_is_written(capsys, tmp_path):
    db = _text_people(tmp_path, "person", "d1")
    ledger = tmp_path / "budget.ledger"
    rc, _, err = run(
        capsys,
        "ledger",
        "init",
        ledger,
        "--dataset",
        "d",
        "--epsilon",
        "5",
        "--delta",
        "1e-5",
        "--unit",
        "person",
    )
    assert rc == 0, err
    rc, _, err = run(
        capsys,
        "fit",
        db,
        *FIT,
        *QUIET,
        "--columns",
        "x",
        "y",
        *UNIT,
        "--out-dir",
        tmp_path,
        "--ledger",
        ledger,
        "--dataset",
        "d",
    )
    assert rc == 0, err
    con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    assert con.execute("SELECT status FROM releases").fetchall() == [("written",)]
    con.close()
