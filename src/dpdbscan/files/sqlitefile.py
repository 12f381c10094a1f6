"""Points from an SQLite database: a table, a view, or the user's query.

The database is opened read-only (a ``file:...?mode=ro`` URI): reading
never changes it. What is read comes from public input only: the table
(``--table``) or the query (``--query``) the user names, else the file's
only table; the columns' names and *declared* types, from the schema
(``PRAGMA table_info``; a query's columns through a temporary view, whose
column that names a table's column keeps its declared type and whose
expression has none). SQLite types each *value*, not each column, so the
values never decide how a value is read: the declared type's affinity
(SQLite's own rules, :func:`affinity`) does, fixed before any row is read.

* A coordinate is a number. In a column of numeric affinity (INTEGER,
  REAL, NUMERIC) or with no declared type, an integer or a real value is
  read as float64; NULL is missing; text or a blob is not a number (the
  row is dropped and counted). In a column declared TEXT (as
  ``sqlite3``'s ``.import`` of a CSV file declares them) each value is text
  read by the CSV reader's number grammar and its missing values
  (:data:`dpdbscan.files.records.NULL_VALUES`).
* The privacy unit is read by its declared kind: INTEGER as int64, REAL as
  float64, TEXT as text; a value of another kind (text in an INTEGER
  column, NULL) is no unit and drops its row (counted). A unit column of
  another affinity (NUMERIC, none: a query's expression) is refused before
  a row is read: its values would have no one kind.
* A time or status column (``--time``, ``--trip-ends``): INTEGER as int64,
  REAL as float64, anything else as the text of its value (ISO times,
  ``free``/``hired``), parsed value by value downstream.
* SQLite does not check that a TEXT value is UTF-8 (a C program, another
  driver or ``CAST(x'ff' AS TEXT)`` stores any bytes). Rows are fetched
  with TEXT as bytes (:meth:`Table.chunks`), and a value that is not UTF-8
  is no value of any kind: a coordinate that is not a number, no unit, no
  time or status (:func:`text_array`); its row alone is dropped. (Python's
  own decoding refused it while the rows were fetched, and the whole read
  failed on that one row: round 8.)

* A ``--query`` is the user's, and an expression in it may raise on one
  row's values (``json_extract`` or ``->>`` of text that is not JSON,
  ``abs`` of the least integer): SQLite then stops the whole statement, and
  the read failed, so that one row decided whether anything was released
  (round 16). Where the query reads one ordinary table of the database,
  that table is read through a temporary view of the same name
  (:class:`_Isolation`), which changes nothing until the query fails: then
  the rows of the table on which the query fails alone are found by
  halving windows of their rowids, left out of that view, and the query
  runs again; those rows are dropped (counted in a private note) and every
  other row reads as it did. A query of several tables, or of the
  database's own views, still fails whole (its reads cannot be narrowed to
  one table's rows).

Rows are fetched :data:`CHUNK` at a time, so memory holds one chunk of
Python values beside the float64 result, whatever the table's size. No
message quotes a value; table and column names are the schema (public, as
a CSV header is), and an error SQLite reports while preparing the user's
query (before any row is read) is about the query's text and the schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .records import NULL_VALUES, coerce_binary

#: Rows fetched at a time.
CHUNK = 1 << 16

_QUERY_VIEW = "dpdbscan_query"
#: The temporary tables of :class:`_Isolation`: a window of rowids, and the rowids left out.
_WINDOW = "dpdbscan_window"
_LEFT_OUT = "dpdbscan_left_out"


def _utf8(raw: Any) -> str | None:
    """A fetched TEXT value's text, or None when its bytes are not UTF-8."""
    if raw is None:
        return None
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


def text_array(values: Sequence[Any], kind: Any, *, from_pandas: bool = False) -> Any:
    """A chunk of one fetched column as an Arrow array of ``kind``: text
    (fetched as bytes, :meth:`Table.chunks`) checked as UTF-8 in one cast,
    and only when the cast refuses, value by value, a value that is not
    UTF-8 then missing (None); numbers as they are (``from_pandas``: NaN
    as missing, as for a unit)."""
    import pyarrow as pa

    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return pa.array(values, type=kind, from_pandas=from_pandas)
    raw = pa.array(values, type=pa.binary())
    try:
        return raw.cast(kind)
    except pa.ArrowInvalid:  # its message may quote a value: never shown
        return pa.array([_utf8(v) for v in values], type=kind)


def connect(path: Path | str) -> sqlite3.Connection:
    """``path`` opened read-only (an SQLite URI with ``mode=ro``)."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def quote(name: str) -> str:
    """An SQL identifier for ``name`` (a table or column name of the schema)."""
    return '"' + name.replace('"', '""') + '"'


def affinity(declared: str) -> str:
    """The affinity of a column declared ``declared`` (SQLite's rules, in
    their order): ``"integer"``, ``"text"``, ``"blob"`` (also no declared
    type), ``"real"`` or ``"numeric"``."""
    t = declared.upper()
    if "INT" in t:
        return "integer"
    if any(k in t for k in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if "BLOB" in t or not t.strip():
        return "blob"
    if any(k in t for k in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "numeric"


def _listing(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names[:12]) + (", ..." if len(names) > 12 else "")


def cannot_read(where: str, exc: BaseException | None = None) -> ValueError:
    """An error reading the database, never quoting SQLite's text (it may
    hold a value once rows are read); an OS error's own words are kept."""
    if isinstance(exc, OSError) and exc.strerror:
        return ValueError(f"{where}: cannot read as SQLite: {exc.strerror}")
    return ValueError(
        f"{where}: cannot read as SQLite (the file is damaged, locked or not an SQLite database)"
    )


def tables_of(con: sqlite3.Connection, where: str) -> list[str]:
    """The user tables of the database (schema: public)."""
    try:
        rows = con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
    except sqlite3.Error:
        raise cannot_read(where) from None
    return [str(r[0]) for r in rows]


class Table:
    """A table or view of an open database, or the result of a query: its
    columns' names and declared types (the schema) and its rows in chunks.

    ``table``: the name of a table or view; else ``query``: a SELECT
    statement; else the database's only table. Refused (ValueError, naming
    the option) before any row is read when none of them names rows.
    """

    def __init__(
        self, con: sqlite3.Connection, where: str, table: str | None = None, query: str | None = None
    ) -> None:
        self.con, self.where = con, where
        #: Rows of the query's table on which the query failed alone: dropped
        #: (:class:`_Isolation`; private, for a note).
        self.n_failed = 0
        self._isolation: _Isolation | None = None
        if query is not None:
            self.name = "the --query result"
            self._from = f"temp.{quote(_QUERY_VIEW)}"
            self._prepare_query(query)
            info = "SELECT name, type FROM temp.pragma_table_info(?)"
            args: tuple[str, ...] = (_QUERY_VIEW,)
        else:
            if table is None:
                tables = tables_of(con, where)
                if len(tables) != 1:
                    raise ValueError(
                        f"{where}: the database has {len(tables)} tables"
                        + (f" ({_listing(tables)})" if tables else "")
                        + "; name the one that holds the points with --table (table=), or give "
                        "--query (query=)"
                    )
                table = tables[0]
            self.name = f"table {table!r}"
            self._from = quote(table)
            self._check_table(table)
            info = "SELECT name, type FROM pragma_table_info(?)"
            args = (table,)
        try:
            rows = con.execute(info, args).fetchall()
        except sqlite3.Error:
            raise cannot_read(where) from None
        self.names = [str(r[0]) for r in rows]
        self.declared = [str(r[1] or "") for r in rows]

    def _check_table(self, table: str) -> None:
        try:
            found = self.con.execute(
                "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?", (table,)
            ).fetchone()
        except sqlite3.Error:
            raise cannot_read(self.where) from None
        if found is None:
            tables = tables_of(self.con, self.where)
            raise ValueError(
                f"{self.where}: no table {table!r} (--table) in the database (tables: {_listing(tables)})"
            )

    def _prepare_query(self, query: str) -> None:
        text = query.strip().rstrip(";").strip()
        try:
            self.con.execute(f"DROP VIEW IF EXISTS temp.{quote(_QUERY_VIEW)}")
            # a view compiles the statement (its columns and their declared
            # types) and runs nothing; only a single SELECT can be one
            self.con.execute(f"CREATE TEMP VIEW {quote(_QUERY_VIEW)} AS {text}")
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise cannot_read(self.where) from None
            # SQLite's words here are about the query's text and the schema (public)
            raise ValueError(
                f"{self.where}: --query (query=) must be one SELECT statement on this database: {exc}"
            ) from None
        except sqlite3.Warning:
            raise ValueError(f"{self.where}: --query (query=) must be one SELECT statement") from None

    def affinity(self, i: int) -> str:
        return affinity(self.declared[i])

    def chunks(self, exprs: Sequence[str], *, isolate: bool = False) -> Iterator[list[tuple[Any, ...]]]:
        """The rows of ``exprs`` (SQL expressions over the columns), in the
        table's order, :data:`CHUNK` rows at a time. TEXT values come as
        their bytes (SQLite does not check that they are UTF-8; Python's
        decoding would fail the fetch on one value): :func:`text_array`
        reads them.

        ``isolate`` (a ``--query``'s rows): where the query fails on a row
        of the one table it reads, that row is left out and the query runs
        again, its rows already given skipped (:class:`_Isolation`);
        elsewhere, and for another failure, the read fails
        (:func:`cannot_read`). Every column of the query is computed then,
        so that every pass that isolates leaves out the same rows."""
        sql = f"SELECT {', '.join(exprs)} FROM {self._from}"
        if isolate and self._from.startswith("temp."):
            # every column of the query computed (those ``exprs`` do not read
            # by typeof, which never fails, nor is it ever 'none'): a row fails
            # in every pass or in none, whichever columns a pass reads, so two
            # passes leave out the same rows
            rest = [n for n in self.names if not any(quote(n) in e for e in exprs)]
            every = " AND ".join(f"typeof({quote(n)}) <> 'none'" for n in rest)
            sql += f" WHERE {every}" if every else ""
            if self._isolation is None:
                self._isolation = _Isolation.of(self.con, sql)
        before = self.con.text_factory
        self.con.text_factory = bytes
        given = 0
        try:
            while True:
                cur = None
                try:
                    cur = self.con.execute(sql)
                    skip = given
                    while True:
                        rows = cur.fetchmany(CHUNK)
                        if not rows:
                            return
                        if skip:  # the rows before the failure: given already
                            if len(rows) <= skip:
                                skip -= len(rows)
                                continue
                            rows, skip = rows[skip:], 0
                        given += len(rows)
                        yield rows
                except sqlite3.Error:
                    if cur is not None:
                        cur.close()  # its statement ended: the view can be changed
                    found = 0 if self._isolation is None else self._isolation.leave_out_failing(sql)
                    if not found:
                        raise cannot_read(self.where) from None
                    self.n_failed += found
        finally:
            self.con.text_factory = before


class _Isolation:
    """The one ordinary table a ``--query`` reads, read through a temporary
    view of the same name (SQLite looks up a name in ``temp`` first), so
    that the rows on which the query fails alone can be left out.

    The view is ``SELECT * FROM main.T WHERE rowid NOT IN (the rows left
    out)``: while none is, it reads every row of ``T``, in the order the
    query's plan reads them, and the query's result is what it was. When the
    query fails (an expression raised on a row's values), the windows of
    ``T``'s rowids on which it fails are halved until each is one row
    (a window is read through the view's twin with ``rowid BETWEEN``): those
    rows, each failing alone, are left out, and the query runs again with
    the same plan (the view's text is the same), so its rows are the rows
    it gave before and then the rest, without the ones left out. Whether a
    row is left out depends on that row's values alone: a table with one
    more such row reads as the table without it (docs/privacy.md section
    8, round 16). A failure that is no row's (an empty window fails too:
    the file locked, damaged) or that no single row makes leaves nothing
    out, and the read fails as before.
    """

    def __init__(self, con: sqlite3.Connection, table: str) -> None:
        self.con, self.table = con, table
        self.left_out: set[int] = set()

    @classmethod
    def of(cls, con: sqlite3.Connection, sql: str) -> _Isolation | None:
        """The isolation of ``sql``'s one table, or None where the query
        reads more than one table, a view of the database or a table
        without rowids, or where the view cannot stand in for the table
        (the query names ``main.T``): the schema and the query's text
        alone (public), no row read."""
        try:
            reads = [(t, c) for t, c, db, _ in _reads(con, sql) if db == "main"]
            tables = {t for t, _ in reads}
            # the table's rowid is no view's (a view's reads as NULL): such a query is not narrowed
            if len(tables) != 1 or any(c == "ROWID" for _, c in reads):
                return None
            (table,) = tables
            if table in (_QUERY_VIEW, _WINDOW, _LEFT_OUT):  # the names of this reader's own
                return None
            kind = con.execute("SELECT type FROM main.sqlite_master WHERE name = ?", (table,)).fetchone()
            if kind is None or kind[0] != "table":
                return None
            con.execute(f"SELECT rowid FROM main.{quote(table)} LIMIT 0").fetchall()
            con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {quote(_WINDOW)} (lo INTEGER, hi INTEGER)")
            con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {quote(_LEFT_OUT)} (r INTEGER PRIMARY KEY)")
        except sqlite3.Error:
            return None
        iso = cls(con, table)
        try:
            iso._view(window=False)
            # every read of the table now through the view (one naming main.T
            # would not be), and the query still compiles (one naming the
            # table's rowid or an index of it does not, through a view)
            if all(db != "main" or source == table for _, _, db, source in _reads(con, sql)):
                return iso
        except sqlite3.Error:
            pass
        try:
            iso.drop()
        except sqlite3.Error:  # pragma: no cover - dropping the connection's own view
            raise cannot_read("the --query's database") from None
        return None

    def _view(self, *, window: bool) -> None:
        t = quote(self.table)
        rows = f"rowid NOT IN (SELECT r FROM temp.{quote(_LEFT_OUT)})"
        if window:
            w = f"temp.{quote(_WINDOW)}"
            rows += f" AND rowid BETWEEN (SELECT lo FROM {w}) AND (SELECT hi FROM {w})"
        self.con.execute(f"DROP VIEW IF EXISTS temp.{t}")
        self.con.execute(f"CREATE TEMP VIEW {t} AS SELECT * FROM main.{t} WHERE {rows}")

    def drop(self) -> None:
        self.con.execute(f"DROP VIEW IF EXISTS temp.{quote(self.table)}")

    def _fails(self, sql: str, lo: int, hi: int) -> bool:
        """Whether ``sql`` fails on the rows of the window ``[lo, hi]`` (rowids)."""
        self.con.execute(f"UPDATE temp.{quote(_WINDOW)} SET lo = ?, hi = ?", (lo, hi))
        try:
            cur = self.con.execute(sql)
            while cur.fetchmany(CHUNK):
                pass
        except sqlite3.Error:
            return True
        return False

    def leave_out_failing(self, sql: str) -> int:
        """Leave out the rows on which ``sql`` fails alone (each found by
        halving windows of rowids); how many were newly left out (0: none,
        and the failure stands)."""
        t = f"main.{quote(self.table)}"
        try:
            lo, hi = self.con.execute(f"SELECT min(rowid), max(rowid) FROM {t}").fetchone()
            self.con.execute(f"DELETE FROM temp.{quote(_WINDOW)}")
            self.con.execute(f"INSERT INTO temp.{quote(_WINDOW)} VALUES (1, 0)")
            self._view(window=True)
            found: list[int] = []
            # a failure in an empty window is no row's: nothing to leave out
            if lo is not None and not self._fails(sql, 1, 0):
                todo = [(int(lo), int(hi))]
                while todo:
                    a, b = todo.pop()
                    if not self._fails(sql, a, b):
                        continue
                    if a == b:
                        found.append(a)
                        continue
                    mid = a + (b - a) // 2
                    todo += [(mid + 1, b), (a, mid)]
            new = sorted(set(found) - self.left_out)
            self.con.executemany(f"INSERT INTO temp.{quote(_LEFT_OUT)} VALUES (?)", [(r,) for r in new])
            self.left_out.update(new)
            self._view(window=False)
        except sqlite3.Error:
            return 0
        return len(new)


def _reads(con: sqlite3.Connection, sql: str) -> list[tuple[str, str, str, str | None]]:
    """The columns ``sql`` reads, as SQLite's authorizer sees it compile the
    statement (nothing run): ``(table, column, database, view or trigger
    reading it)``; a rowid is the column ``ROWID``, whichever name the query
    gives it."""
    seen: list[tuple[str, str, str, str | None]] = []

    def note(action: int, table: Any, column: Any, db: Any, source: Any) -> int:
        if action == sqlite3.SQLITE_READ:
            seen.append((str(table), str(column), str(db), None if source is None else str(source)))
        return sqlite3.SQLITE_OK

    con.set_authorizer(note)
    try:
        con.execute(f"EXPLAIN {sql}").fetchall()
    finally:
        con.set_authorizer(None)
    return seen


# --------------------------------------------------------------------------- #
# How a value is read, by its column's declared affinity


_NULLS = ", ".join("'" + v.replace("'", "''") + "'" for v in NULL_VALUES)


def coordinate_exprs(col: str, aff: str) -> tuple[str, str]:
    """``(value, not a number)`` expressions of a coordinate column ``col``
    of affinity ``aff``: the value as a REAL (or, declared TEXT, as text to
    parse), and 1 where the value is present but of a kind that is not read
    (text in a numeric column, a blob)."""
    c = quote(col)
    if aff == "text":
        return (
            f"CASE WHEN typeof({c}) = 'text' AND {c} NOT IN ({_NULLS}) THEN {c} END",
            f"typeof({c}) = 'blob'",
        )
    return (
        f"CASE WHEN typeof({c}) IN ('integer', 'real') THEN CAST({c} AS REAL) END",
        f"typeof({c}) IN ('text', 'blob')",
    )


#: The unit's kind by its column's affinity: (SQLite's type of a value that
#: is a unit, the Arrow type); other affinities cannot name units.
UNIT_KINDS = {
    "integer": ("'integer'", "int64"),
    "real": ("'integer', 'real'", "float64"),
    "text": ("'text'", "string"),
}


def unit_expr(col: str, aff: str) -> str:
    """The unit column ``col`` (affinity ``aff``, one of :data:`UNIT_KINDS`):
    its value where it is of the declared kind, else NULL (no unit)."""
    kinds, arrow = UNIT_KINDS[aff]
    c = quote(col)
    value = f"CAST({c} AS REAL)" if arrow == "float64" else c
    return f"CASE WHEN typeof({c}) IN ({kinds}) THEN {value} END"


def companion_expr(col: str, aff: str) -> tuple[str, str]:
    """A time or status column: ``(expression, Arrow type)``. INTEGER as
    int64, REAL as float64, else the text of an integer, real or text value
    (a blob is no value)."""
    if aff in ("integer", "real"):
        return unit_expr(col, aff), UNIT_KINDS[aff][1]
    c = quote(col)
    return f"CASE WHEN typeof({c}) IN ('integer', 'real', 'text') THEN CAST({c} AS TEXT) END", "string"


def coordinates(rows: Sequence[tuple[Any, ...]], affinities: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Float64 coordinates of one chunk (``rows``: each the values of
    :func:`coordinate_exprs`, one per coordinate, then the rows' flag,
    :func:`bad_expr`), NaN where a value is missing or not a number (as the
    CSV reader reads it), and a mask of the rows with a value that is not a
    number."""
    d = len(affinities)
    if "text" not in affinities:
        # numbers and NULLs only (the SQL made them so): one conversion
        A = np.array([r[: d + 1] for r in rows], dtype=np.float64).reshape(-1, d + 1)
        return np.ascontiguousarray(A[:, :d]), A[:, d] != 0
    import pyarrow as pa

    columns = list(zip(*rows)) if rows else [()] * (d + 1)
    X = np.empty((len(rows), d))
    bad = np.array(columns[d], dtype=bool)
    for j, aff in enumerate(affinities):
        if aff == "text":
            # text fetched as bytes: one that is not UTF-8 is not a number
            X[:, j], unparseable = coerce_binary(pa.array(columns[j], type=pa.binary()))
            bad |= unparseable
        else:
            X[:, j] = np.array(columns[j], dtype=np.float64)
    return X, bad


def bad_expr(flags: Sequence[str]) -> str:
    """1 where any of a row's coordinate ``flags`` (:func:`coordinate_exprs`) is set."""
    return f"({' OR '.join(flags)})" if flags else "0"


__all__ = [
    "CHUNK",
    "Table",
    "UNIT_KINDS",
    "affinity",
    "cannot_read",
    "companion_expr",
    "connect",
    "coordinate_exprs",
    "bad_expr",
    "coordinates",
    "text_array",
    "quote",
    "tables_of",
    "unit_expr",
]
