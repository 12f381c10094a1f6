"""A ``--query`` that fails on one row's values drops that row alone (round 16).

SQLite stops a whole statement when an expression raises on one row
(``json_extract`` or ``->>`` of text that is not JSON, ``abs`` of the least
integer). The reader failed the read then ("cannot read as SQLite"), so one
row decided whether anything was released: a table D was released and D
with one such row more was refused, after a ledger had reserved the release.
Now the rows of the query's one table on which it fails alone are left out
and the query runs again: D' reads as D, and its seeded release is D's.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from pointfiles import SECRET

from dpdbscan import load_model
from dpdbscan.files import ReadOptions, read_columns, read_input, sqlitefile
from dpdbscan.model.codec import model_to_dict

from clirun import run

pytest.importorskip("pyarrow")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

GOOD = '{"a": 1}'
#: A row's JSON text that is not JSON (it quotes the secret: no message may).
BROKEN = '{"a": "' + SECRET

QUERIES = {
    "select": "SELECT x + json_extract(props, '$.a') - 1 AS x, y, person, time FROM pts",
    "where": "SELECT x, y, person, time FROM pts WHERE json_extract(props, '$.a') = 1",
    "arrow": "SELECT x, y, person, time + (props ->> '$.a') - 1 AS time FROM pts",
    "abs": "SELECT x, y, person, time FROM pts WHERE abs(time) >= 0",
}


def _rows(n_units: int = 12, per_unit: int = 5, seed: int = 0) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for u in range(n_units):
        for k in range(per_unit):
            x, y = rng.normal([3.0, 3.0], 0.3)
            out.append((float(x), float(y), u * 7919 + 2**40, 1_717_200_000 + 60 * k + u, GOOD))
    return out


def _bad_row(kind: str, i: int) -> tuple:
    """One more unit's row on which the query ``kind`` fails."""
    if kind == "abs":
        return (3.0, 3.0, 99_000 + i, -(2**63), GOOD)
    return (3.0, 3.0, 99_000 + i, 1_717_200_000, BROKEN)


def _db(path, rows: list[tuple]):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE pts (x REAL, y REAL, person INTEGER, time INTEGER, props TEXT)")
    con.executemany("INSERT INTO pts VALUES (?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


def _read(db, query):
    return read_input(db, ["x", "y"], unit="person", query=query, also=["time"])


@pytest.mark.parametrize("kind", sorted(QUERIES))
@pytest.mark.parametrize("at", [(0,), (31,), (60,), (0, 2, 3, 59, 60)])
def test_a_row_the_query_fails_on_is_dropped_alone(tmp_path, monkeypatch, kind, at):
    # chunks of 7 rows: a failure after some chunks were read, in the middle
    # of one, at its end
    monkeypatch.setattr(sqlitefile, "CHUNK", 7)
    rows = _rows()
    more = list(rows)
    for j, i in enumerate(sorted(at)):
        more.insert(i + j, _bad_row(kind, j))
    want = _read(_db(tmp_path / "d.sqlite", rows), QUERIES[kind])
    got = _read(_db(tmp_path / "d1.sqlite", more), QUERIES[kind])
    assert got.X.tobytes() == want.X.tobytes() and got.X.shape == (60, 2)
    assert got.units.to_pylist() == want.units.to_pylist()
    assert got.companions[0].to_pylist() == want.companions[0].to_pylist()
    assert got.n_query_failed == len(at) and want.n_query_failed == 0
    # a second pass of the time column (the Python API's) leaves out the same rows
    times, _ = read_columns(tmp_path / "d1.sqlite", "time", options=ReadOptions(query=QUERIES[kind]))
    assert times.to_pylist() == want.companions[0].to_pylist()
    assert any("on which the --query failed" in line for line in got.notes())
    assert not any(SECRET in line for line in got.notes())


def test_an_ordered_query_drops_the_row_and_keeps_its_order(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlitefile, "CHUNK", 7)
    rows = _rows()
    more = rows[:20] + [_bad_row("select", 0)] + rows[20:]
    query = QUERIES["select"] + " ORDER BY time DESC, person"
    want = _read(_db(tmp_path / "d.sqlite", rows), query)
    got = _read(_db(tmp_path / "d1.sqlite", more), query)
    assert got.X.tobytes() == want.X.tobytes() and got.n_query_failed == 1
    times = got.companions[0].to_pylist()
    assert times == sorted(times, reverse=True)


CHECK = [
    *("--columns", "x", "y", "--eps", "0.5", "--min-samples", "3", "--bounds", "0", "0", "10", "10"),
    *("--unit", "person", "--max-cells-per-unit", "2", "--delta", "1e-6", "--no-progress"),
]
FIT = [*CHECK, "--seed", "5", "--no-png", "--no-geojson"]


@pytest.mark.parametrize("kind", ["select", "where"])
def test_the_release_of_a_table_with_such_a_row_is_the_tables(capsys, tmp_path, kind):
    # on the code before, D was released and D' refused ("cannot read as
    # SQLite (the file is damaged, ...)"), for every seed
    rows = _rows(n_units=60, per_unit=3, seed=1)
    d = _db(tmp_path / "d.sqlite", rows)
    d1 = _db(tmp_path / "d1.sqlite", rows[:100] + [_bad_row(kind, 0)] + rows[100:])
    models, outs = [], []
    for db, name in ((d, "d"), (d1, "d1")):
        where = ("--out-dir", tmp_path, "--name", name)
        rc, out, err = run(capsys, "fit", db, "--query", QUERIES[kind], *FIT, *where)
        assert rc == 0, err
        assert SECRET not in out + err
        models.append(model_to_dict(load_model(tmp_path / f"{name}.spans.json")))
        outs.append(out.replace(str(db), "DB").replace(f"{name}.spans", "M.spans"))
    a, b = models
    assert a["histogram"] == b["histogram"] and a["spans"] == b["spans"] and a["privacy"] == b["privacy"]
    assert outs[0] == outs[1]
    # check reads it as fit does: status 0, nothing on standard output, the row noted
    rc, out, err = run(capsys, "check", d1, "--query", QUERIES[kind], *CHECK)
    assert rc == 0 and out == "" and "1 row(s) on which the --query failed" in err, err


@pytest.mark.parametrize(
    "query",
    [
        # two tables: the failure cannot be narrowed to one table's rows
        "SELECT p.x + json_extract(p.props, '$.a') - 1 AS x, p.y, p.person "
        "FROM pts p JOIN other o ON o.k = 1",
        # the table named in the database's schema, past the stand-in view
        "SELECT x + json_extract(props, '$.a') - 1 AS x, y, person FROM main.pts",
    ],
)
def test_a_query_that_cannot_be_narrowed_still_fails_quoting_nothing(tmp_path, query):
    db = _db(tmp_path / "d1.sqlite", [*_rows(), _bad_row("select", 0)])
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE other (k INTEGER)")
    con.execute("INSERT INTO other VALUES (1)")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match="cannot read as SQLite") as e:
        read_input(db, ["x", "y"], unit="person", query=query)
    assert SECRET not in str(e.value)
    # without the row, both read
    ok = _db(tmp_path / "d.sqlite", _rows())
    con = sqlite3.connect(ok)
    con.execute("CREATE TABLE other (k INTEGER)")
    con.execute("INSERT INTO other VALUES (1)")
    con.commit()
    con.close()
    assert read_input(ok, ["x", "y"], unit="person", query=query).X.shape == (60, 2)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT rowid AS n, x, y, person FROM pts",
        "SELECT x, y, person FROM pts INDEXED BY by_person WHERE person > 0",
        "SELECT x, y, person FROM pts WHERE rowid > 0",
        "SELECT x, y, person FROM pts WHERE _rowid_ > 0 ORDER BY oid",
    ],
)
def test_a_query_the_stand_in_view_cannot_take_reads_as_before(tmp_path, query):
    # the table's rowid, or an index of it, is not a view's: such a query is
    # read from the table itself, as before (and fails whole on a bad row)
    rows = _rows()
    db = _db(tmp_path / "d.sqlite", rows)
    con = sqlite3.connect(db)
    con.execute("CREATE INDEX by_person ON pts (person)")
    con.commit()
    con.close()
    got = read_input(db, [*(["n"] if " n," in query else []), "x", "y"], unit="person", query=query)
    assert got.X.shape[0] == 60 and got.n_query_failed == 0
    assert sorted(got.X[:, -2:].tolist()) == sorted([[r[0], r[1]] for r in rows])
    if " n," in query:  # the rowid itself, not a view's NULL
        assert got.X[:, 0].tolist() == list(range(1, 61))


@pytest.mark.parametrize(
    "query",
    [
        "SELECT x, y, person FROM pts WHERE name = 'ABC'",  # the column's NOCASE collation
        "SELECT x, y, person FROM pts WHERE person = '5'",  # its INTEGER affinity
        "SELECT avg(x) AS x, avg(y) AS y, person FROM pts GROUP BY person",
        "SELECT x, y, person FROM pts WHERE person IN (1, 2) LIMIT 9",  # by the index
        "SELECT x, y, person FROM pts WHERE x > (SELECT avg(x) FROM pts)",
        "SELECT x, y, person FROM pts UNION ALL SELECT y, x, person FROM pts WHERE person = 1",
        "SELECT x, y, person FROM pts ORDER BY name, person DESC",
    ],
)
def test_a_query_read_through_the_stand_in_view_gives_its_rows_in_its_order(tmp_path, query):
    db = tmp_path / "d.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE pts (x REAL, y REAL, person INTEGER, name TEXT COLLATE NOCASE)")
    con.executemany(
        "INSERT INTO pts VALUES (?, ?, ?, ?)",
        [(i * 1.0, i * 2.0, i % 7, "abc" if i % 3 else "xyz") for i in range(100)],
    )
    con.execute("CREATE INDEX by_person ON pts (person)")
    con.commit()
    want = con.execute(query).fetchall()
    con.close()
    got = read_input(db, ["x", "y"], unit="person", query=query)
    assert got.X.tolist() == [[r[0], r[1]] for r in want] and len(want) > 0
    assert got.units.to_pylist() == [r[2] for r in want]


def test_the_database_is_left_as_it_was(tmp_path):
    db = _db(tmp_path / "d1.sqlite", [*_rows(), _bad_row("select", 0)])
    before = db.read_bytes()
    assert _read(db, QUERIES["select"]).n_query_failed == 1
    assert db.read_bytes() == before
    con = sqlite3.connect(db)
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master").fetchall()]
    con.close()
    assert names == ["pts"]
