"""A dask DataFrame read by dask's own text readers (docs/privacy.md section 8, round 13).

``dd.read_csv`` (and ``read_table``, ``read_fwf``) parses each block with
pandas, types the columns from the first rows and coerces every later block
to those types; ``dd.read_json`` checks each file or block against the
first's types. One record then decides whether the whole read succeeds,
after a ledger has reserved the release, and dask's error quotes the value.
Such a frame is refused from its graph (how it was built, public) before
anything is read, whatever its records; the files' paths, given to the fit,
are read one record at a time, a bad one dropped.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
import dask.dataframe as dd  # noqa: E402

from dpdbscan import DPDBSCAN, Grid  # noqa: E402
from dpdbscan.release.backends.dask_backend import DaskBackend  # noqa: E402

BOUNDS = ([0.0, 0.0], [100.0, 100.0])
SECRET = "bob@example.com"
# one unit's odd record, each of which failed the read of the frame of D plus it
ODD = {
    "three fields": "51,52,53",
    "a quote left open": '"51,52',
    "an empty field in a column typed integer": ",52",
    "a word in a column typed integer": f"{SECRET},52",
    "a byte that is not UTF-8": "5\xff1,52",
}


@pytest.fixture(autouse=True)
def _quiet_workers():
    # the workers log the failed task (the old code's failure) at ERROR
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    yield
    logging.getLogger("distributed").setLevel(logging.WARNING)


def points(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(50, 5, (n, 2))).astype(np.int64)


def write_csv(path, X, odd=None, sep=","):
    """X's rows as integers in one file under a header, and ``odd`` (a
    line) near the end: in a later block than the first rows dask types
    the columns from."""
    lines = [f"{a}{sep}{b}" for a, b in X]
    if odd is not None:
        lines.insert(len(lines) - 10, odd.replace(",", sep))
    path.write_bytes(("\n".join([f"x{sep}y", *lines]) + "\n").encode("utf-8", "surrogateescape"))
    return path


def outcome(backend, grid, frame):
    """The counts, or the refusal's message."""
    try:
        got = backend.count(grid, frame)
    except ValueError as exc:
        return str(exc)
    return got.keys.tolist(), got.counts.tolist()


@pytest.mark.parametrize("odd", list(ODD), ids=list(ODD))
@pytest.mark.parametrize("reader", ["read_csv", "read_table"])
def test_one_record_never_decides_whether_a_text_read_frame_is_counted(client, tmp_path, reader, odd):
    """D and D plus one odd record, each read by dask's reader: the same
    outcome (on the code before, D was counted and D' failed, dask's
    message quoting the word), and a message that quotes nothing of the
    data. Their paths given to the backend count D' as D: the odd record
    is one bad row, dropped."""
    X = points()
    grid = Grid(*map(np.asarray, BOUNDS), 2.0)
    sep = "\t" if reader == "read_table" else ","
    d = write_csv(tmp_path / "d.csv", X, sep=sep)
    d1 = write_csv(tmp_path / "d1.csv", X, ODD[odd].replace("\xff", "\udcff"), sep=sep)
    backend = DaskBackend(client=client, columns=["x", "y"])
    read = getattr(dd, reader)
    kw = {"sep": sep} if reader == "read_table" else {}
    first = outcome(backend, grid, read(str(d), blocksize=4000, **kw))
    assert isinstance(first, str) and "paths" in first and SECRET not in first
    try:
        frame = read(str(d1), blocksize=4000, **kw)
    except Exception:
        # the oldest supported dask (2024.1) decodes its whole sample while
        # building the frame, so the odd byte fails the caller's own call,
        # before any fit: no frame reaches the backend
        if odd != "a byte that is not UTF-8":
            raise
    else:
        assert outcome(backend, grid, frame) == first
    if reader == "read_csv":
        assert outcome(backend, grid, str(d)) == outcome(backend, grid, str(d1))


def test_a_frame_of_json_files_is_refused_whatever_a_later_record(client, tmp_path):
    """dask's read_json: the types of the first file are checked against
    every other's, so one word where the other files have numbers failed
    the read (D counted, D' not)."""
    X = points()
    grid = Grid(*map(np.asarray, BOUNDS), 2.0)
    outcomes = []
    for name, odd in (("d", None), ("d1", {"x": SECRET, "y": 52})):
        folder = tmp_path / name
        folder.mkdir()
        for i, part in enumerate(np.array_split(X, 3)):
            rows = [{"x": int(a), "y": int(b)} for a, b in part]
            if odd is not None and i == 2:
                rows.append(odd)
            (folder / f"part-{i}.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        frame = dd.read_json(str(folder / "*.json"), lines=True)
        outcomes.append(outcome(DaskBackend(client=client, columns=["x", "y"]), grid, frame))
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[0], str) and "read_json" in outcomes[0] and SECRET not in outcomes[0]


def test_the_estimator_refuses_a_text_read_frame_before_a_ledger_charges(client, tmp_path):
    """Event level, and person level with a text unit column (the way
    round 7 named for ids, ``dtype={"unit": str}``): refused before the
    ledger reserves anything; the files' paths are released."""
    from dpdbscan.ledger import Ledger

    X = points()
    path = tmp_path / "d.csv"
    units = np.arange(len(X)) % 40
    path.write_text("x,y,unit\n" + "".join(f"{a},{b},{u}\n" for (a, b), u in zip(X, units)))
    rows = Ledger.create(tmp_path / "rows.ledger", "points", 5.0, 1e-5)
    people = Ledger.create(tmp_path / "people.ledger", "devices", 5.0, 1e-5, unit="unit")

    def estimator(ledger, **kw):
        return DPDBSCAN(
            eps=2.0,
            min_samples=20,
            bounds=BOUNDS,
            ledger=ledger,
            random_state=1,
            backend=DaskBackend(client=client, columns=["x", "y"]),
            **kw,
        )

    with pytest.raises(ValueError, match="paths"):
        estimator(rows).fit(dd.read_csv(str(path), usecols=["x", "y"]))
    with pytest.raises(ValueError, match="paths"):
        estimator(people, delta=1e-6, max_cells_per_unit=5).fit(
            dd.read_csv(str(path), dtype={"unit": str}), units="unit"
        )
    assert len(rows.account().releases) == 0 and len(people.account().releases) == 0
    estimator(rows).fit(str(path))
    estimator(people, delta=1e-6, max_cells_per_unit=5).fit(str(path), units="unit")
    assert len(rows.account().releases) == 1 and len(people.account().releases) == 1


def test_a_frame_built_in_memory_is_counted_as_before(client, tmp_path):
    """A frame dask did not read from text (``dd.from_pandas``, a Parquet
    read) passes the check: only the readers that parse text are refused."""
    import pandas as pd

    X = points()
    grid = Grid(*map(np.asarray, BOUNDS), 2.0)
    df = pd.DataFrame({"x": X[:, 0].astype(float), "y": X[:, 1].astype(float)})
    df.to_parquet(tmp_path / "d.parquet")
    backend = DaskBackend(client=client, columns=["x", "y"])
    want = outcome(backend, grid, dd.from_pandas(df, npartitions=3))
    assert not isinstance(want, str)
    assert outcome(backend, grid, dd.read_parquet(str(tmp_path / "d.parquet"))) == want


def sql_frame(meta, n_parts=3):
    """A frame built as dask's read_sql_table, read_sql_query and read_sql
    build theirs: one delayed ``_read_sql_chunk`` per partition, each a
    ``pandas.read_sql`` cast to the first rows' types (the graph only:
    SQLAlchemy, which the reading needs, is not a dependency)."""
    from dask import delayed
    from dask.dataframe.io.sql import _read_sql_chunk

    parts = [
        delayed(_read_sql_chunk)(f"SELECT x, y FROM pts WHERE part = {i}", "sqlite://", meta)
        for i in range(n_parts)
    ]
    return dd.from_delayed(parts, meta=meta)


def test_a_frame_read_by_dasks_sql_reader_is_refused_before_a_ledger_charges(client, tmp_path):
    """dask's SQL readers cast each partition to the types of the table's
    first rows, so one word in a REAL column (SQLite keeps it as text) or
    one NULL in a column the first rows made integer failed the whole read,
    the value quoted, after a ledger had reserved the release (round 14).
    Such a frame is refused from its graph, before anything is read or
    reserved, event and person level, and the message quotes nothing."""
    import pandas as pd

    from dpdbscan.ledger import Ledger

    meta = pd.DataFrame({"x": pd.Series([], dtype="float64"), "y": pd.Series([], dtype="float64")})
    grid = Grid(*map(np.asarray, BOUNDS), 2.0)
    got = outcome(DaskBackend(client=client, columns=["x", "y"]), grid, sql_frame(meta))
    assert isinstance(got, str) and "read_sql_table" in got and "SQLite file's path" in got
    rows = Ledger.create(tmp_path / "rows.ledger", "points", 5.0, 1e-5)
    people = Ledger.create(tmp_path / "people.ledger", "devices", 5.0, 1e-5, unit="unit")
    with_units = meta.assign(unit=pd.Series([], dtype="int64"))

    def estimator(ledger, **kw):
        backend = DaskBackend(client=client, columns=["x", "y"])
        return DPDBSCAN(
            eps=2.0, min_samples=20, bounds=BOUNDS, ledger=ledger, random_state=1, backend=backend, **kw
        )

    with pytest.raises(ValueError, match="read_sql_table"):
        estimator(rows).fit(sql_frame(meta))
    with pytest.raises(ValueError, match="read_sql_table"):
        estimator(people, delta=1e-6, max_cells_per_unit=5).fit(sql_frame(with_units), units="unit")
    assert len(rows.account().releases) == 0 and len(people.account().releases) == 0


ODD_SQL = {
    "a word in a REAL column": ("x", SECRET),
    "a NULL in a column its first rows typed integer": ("y", None),
}


@pytest.mark.parametrize("odd", list(ODD_SQL), ids=list(ODD_SQL))
def test_one_record_never_decides_whether_a_sql_read_frame_is_counted(client, tmp_path, odd):
    """D and D plus one odd row of an SQLite table, each read by
    ``dd.read_sql_table``: the same outcome (on the code before, D was
    counted and D' failed, pandas' message quoting the word). Needs
    SQLAlchemy (dask's SQL readers do); the graph alone is tested above."""
    import sqlite3

    pytest.importorskip("sqlalchemy")
    X = points()
    column, value = ODD_SQL[odd]
    outcomes = []
    for name, extra in (("d", False), ("d1", True)):
        path = tmp_path / f"{name}.sqlite"
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE pts (id INTEGER PRIMARY KEY, x REAL, y INTEGER)")
        rows = [(i + 1, float(a), int(b)) for i, (a, b) in enumerate(X)]
        if extra:
            row = {"id": len(rows) + 1, "x": 51.0, "y": 52}
            row[column] = value
            rows.insert(len(rows) - 10, (row["id"], row["x"], row["y"]))
        con.executemany("INSERT INTO pts VALUES (?, ?, ?)", rows)
        con.commit()
        con.close()
        frame = dd.read_sql_table("pts", f"sqlite:///{path}", index_col="id", npartitions=4)
        grid = Grid(*map(np.asarray, BOUNDS), 2.0)
        outcomes.append(outcome(DaskBackend(client=client, columns=["x", "y"]), grid, frame))
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[0], str) and SECRET not in outcomes[0]


def test_a_frame_of_a_bags_records_is_refused_whatever_a_later_record(client):
    """A dask Bag's to_dataframe types the columns from the first record
    and casts every partition's records to those types, so one record whose
    ``x`` is a word failed the whole read, the word quoted (round 14: D
    counted, D' not). Refused from the graph, whatever the records; a
    persisted frame (read already, by the caller) is counted, but in dask
    before its expressions (2024.1), where it keeps the layer's name and is
    refused too (the safe side)."""
    import dask.bag as db

    X = points()
    grid = Grid(*map(np.asarray, BOUNDS), 2.0)
    backend = DaskBackend(client=client, columns=["x", "y"])
    records = [{"x": float(a), "y": float(b)} for a, b in X]
    odd = [*records[:-10], {"x": SECRET, "y": 52.0}, *records[-10:]]
    got = [outcome(backend, grid, db.from_sequence(r, npartitions=4).to_dataframe()) for r in (records, odd)]
    assert got[0] == got[1]
    assert isinstance(got[0], str) and "Bag" in got[0] and SECRET not in got[0]
    kept = db.from_sequence(records, npartitions=4).to_dataframe().persist()
    assert isinstance(outcome(backend, grid, kept), str) == (getattr(kept, "expr", None) is None)


def test_an_array_or_unit_column_made_from_a_text_read_frame_is_refused(client, tmp_path):
    """``frame.to_dask_array()``, ``frame.values`` and a unit Series of a
    frame ``dd.read_csv`` reads run the reader inside the fit as the frame
    does: on the code before, D was released and D' (one word in a later
    block) failed, dask's message quoting the word (round 14). Now each is
    refused from its graph, before a ledger reserves, and quotes nothing."""
    import dask.array as da

    from dpdbscan.ledger import Ledger

    X = points()
    units = np.arange(len(X)) % 40
    paths = []
    for name, odd in (("d", None), ("d1", f"50,50,{SECRET}")):
        lines = [f"{a},{b},{u}" for (a, b), u in zip(X, units)]
        if odd is not None:
            lines[-10] = odd
        path = tmp_path / f"{name}.csv"
        path.write_text("x,y,unit\n" + "\n".join(lines) + "\n")
        paths.append(str(path))
    ledger = Ledger.create(tmp_path / "people.ledger", "devices", 5.0, 1e-5, unit="unit")

    def fit(X):
        est = DPDBSCAN(
            eps=2.0, min_samples=20, bounds=BOUNDS, random_state=1, backend=DaskBackend(client=client)
        )
        try:
            est.fit(X)
        except ValueError as exc:
            return str(exc)
        return "released"

    for how in ("to_dask_array", "values", "units"):
        got = []
        for path in paths:
            frame = dd.read_csv(path, blocksize=4000)
            if how == "units":
                points_ = da.from_array(X.astype(float), chunks=1000)
                est = DPDBSCAN(
                    eps=2.0,
                    min_samples=20,
                    bounds=BOUNDS,
                    random_state=1,
                    delta=1e-6,
                    max_cells_per_unit=4,
                    ledger=ledger,
                    backend=DaskBackend(client=client),
                )
                try:
                    est.fit(points_, units=frame["unit"])
                    got.append("released")
                except ValueError as exc:
                    got.append(str(exc))
            else:
                arr = (
                    frame[["x", "y"]].to_dask_array() if how == "to_dask_array" else frame[["x", "y"]].values
                )
                got.append(fit(arr))
        assert got[0] == got[1], how
        assert "read_csv" in got[0] and SECRET not in got[0]
    assert len(ledger.account().releases) == 0
