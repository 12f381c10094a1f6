"""The ledger file: each dataset's lifetime budget and every release against it.

An SQLite database (the standard library's :mod:`sqlite3`: one file, no
server) with these tables (schema version 2):

* ``schema_version(version, applied)``: the versions applied, one row each;
  a later version adds tables or nullable columns and a row here (a reader
  refuses a file newer than it knows);
* ``datasets(name, epsilon, delta, unit, unit_column, created, accounting)``:
  the lifetime budget of each dataset, the privacy unit it protects (each
  row, "event"; or each person, "person", named by ``unit_column``) and its
  accounting ("basic" or "zcdp": the rule that admits releases, a privacy
  filter, :mod:`.composition`), registered once (``dpdbscan ledger init``)
  and never changed. Every release charged to it must protect the same unit:
  a budget is a statement about one unit. Version 2 added ``accounting``; a
  file of version 1 opens, its datasets counted by "basic" (NULL), and is
  brought to version 2 when a dataset is next registered in it;
* ``series(id, dataset, created, plan)``: a planned series of releases (a
  horizon cut into periods under one lifetime budget; ``plan`` is its public
  plan as JSON), written by :meth:`Ledger.reserve_series` (``fit --per ...
  --places-periods N`` and ``--append``) or :meth:`Ledger.add_series`; the
  releases of a series carry its ``series_id`` and their ``period`` (the
  period's start; NULL for the series' spans) and are charged like any
  other, and a period is charged to its series once. A series whose plan
  records its cost is held at that whole cost from its first run: its first
  run is refused unless the plan fits, and other releases are checked beside
  it (:func:`_held`), so its periods to come keep their budget;
* ``releases(id, dataset, series_id, period, status, reserved, finished,
  command, params, unit, unit_column, epsilon, delta, rho, files, pid)``:
  one row per release, written **before** the data are read (status
  ``reserved``), then ``written`` with the files once they are, or
  ``failed`` when the command failed after reserving. Every row counts,
  whatever its status: a command killed after reserving may have read the
  data and made its release, so its reservation stands. ``rho`` is NULL for
  a release that is not zCDP (:mod:`.composition`).

The file is marked with SQLite's ``application_id`` and a ``meta`` row, so a
file that is not a ledger is refused, never taken for an empty one; a
missing file is an error everywhere but :meth:`Ledger.create`. Every write is
one transaction taken with ``BEGIN IMMEDIATE`` (the write lock first, then
the check, then the insert), so that processes sharing a ledger are
serialised: two of them can never both see room for one more release. The
journal is SQLite's rollback journal with ``synchronous=FULL``: a process
killed in a transaction leaves a journal that the next connection rolls
back, and a committed reservation survives a crash of the machine.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..exceptions import BudgetExceeded, LedgerError
from ..files.tracefolder import unit_option, unit_words
from .composition import NOT_ZCDP, Cost, Total, check_accounting, compose, compose_fixed, fits, largest_pure

SCHEMA_VERSION = 2
#: SQLite's application_id of a ledger file ("dpdL").
APPLICATION_ID = 0x6470644C
FORMAT = "dpdbscan-ledger"
#: Seconds a process waits for another one's write transaction to end.
BUSY_TIMEOUT = 60.0
STATUSES = ("reserved", "written", "failed")
UNITS = ("person", "event")
#: What a refusal of the ledger says was done: a refused command may have
#: opened a file's header or schema (public) to check it, never a record.
NOTHING_READ = "No record was read and nothing was written"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied TEXT NOT NULL);
CREATE TABLE datasets (
    name TEXT PRIMARY KEY CHECK (length(name) > 0),
    epsilon REAL NOT NULL CHECK (epsilon > 0),
    delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
    unit TEXT NOT NULL CHECK (unit IN ('person', 'event')),
    unit_column TEXT,
    created TEXT NOT NULL,
    accounting TEXT CHECK (accounting IS NULL OR accounting IN ('basic', 'zcdp'))
);
CREATE TABLE series (
    id INTEGER PRIMARY KEY,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    created TEXT NOT NULL,
    plan TEXT NOT NULL
);
CREATE TABLE releases (
    id INTEGER PRIMARY KEY,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    series_id INTEGER REFERENCES series(id),
    period TEXT,
    status TEXT NOT NULL CHECK (status IN ('reserved', 'written', 'failed')),
    reserved TEXT NOT NULL,
    finished TEXT,
    command TEXT NOT NULL,
    params TEXT NOT NULL,
    unit TEXT NOT NULL CHECK (unit IN ('person', 'event')),
    unit_column TEXT,
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
    rho REAL CHECK (rho IS NULL OR rho >= 0),
    files TEXT NOT NULL DEFAULT '[]',
    pid INTEGER
);
CREATE INDEX releases_by_dataset ON releases(dataset);
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Release:
    """One row of the ledger (see the module's docstring)."""

    id: int
    dataset: str
    status: str
    reserved: str
    finished: str | None
    command: str
    params: dict[str, Any]
    unit: str
    unit_column: str | None
    cost: Cost
    files: list[str]
    series_id: int | None
    period: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "reserved": self.reserved,
            "finished": self.finished,
            "command": self.command,
            "params": self.params,
            "unit": self.unit,
            "unit_column": self.unit_column,
            "epsilon": self.cost.epsilon,
            "delta": self.cost.delta,
            "rho": self.cost.rho,
            "files": self.files,
            "series_id": self.series_id,
            "period": self.period,
        }


@dataclass(frozen=True)
class Account:
    """A dataset's lifetime budget, what its releases spent and what is left.

    Attributes
    ----------
    dataset : str
    epsilon, delta : float
        The lifetime budget.
    unit, unit_column : str, str or None
        What the budget protects: "event" (each row) or "person" (each
        value of ``unit_column``).
    created : str
    spent : Total
        The releases' total (:func:`.composition.compose`).
    remaining_epsilon : float
        The largest epsilon of one further pure epsilon-DP release that fits
        (:func:`.composition.largest_pure`) beside what is held: under zCDP,
        not simply the budget minus the spent epsilon.
    releases : list of Release
    held : Total
        What the budget holds: the releases, with each planned series counted
        at its whole plan's cost (the periods it has yet to release keep
        their budget); ``spent`` when no series is planned.
    periods_to_come : dict
        Each planned series' id and how many of its periods are still to come.
    held_costs : tuple of Cost
        What ``held`` composes: every release's cost, each planned series'
        whole plan in place of its releases (what a plan of further releases
        must fit beside).
    accounting : str
        The dataset's rule, fixed when it was registered: "basic" or "zcdp"
        (:func:`.composition.compose`).
    """

    dataset: str
    epsilon: float
    delta: float
    unit: str
    unit_column: str | None
    created: str
    spent: Total
    remaining_epsilon: float
    releases: list[Release]
    held: Total | None = None
    periods_to_come: dict[int, int] = field(default_factory=dict)
    held_costs: tuple[Cost, ...] = ()
    accounting: str = "basic"

    def to_dict(self) -> dict[str, Any]:
        s = self.spent
        h = self.held or s
        return {
            "dataset": self.dataset,
            "budget": {"epsilon": self.epsilon, "delta": self.delta},
            "unit": self.unit,
            "unit_column": self.unit_column,
            "created": self.created,
            "accounting": self.accounting,
            "spent": {
                "epsilon": s.epsilon,
                "delta": s.delta,
                "method": s.method,
                "basic": {"epsilon": s.basic[0], "delta": s.basic[1]},
                "zcdp": None if s.zcdp is None else {"epsilon": s.zcdp[0], "delta": s.zcdp[1], "rho": s.rho},
            },
            "held": {
                "epsilon": h.epsilon,
                "delta": h.delta,
                "method": h.method,
                "of": "what was spent and what the planned series may still release",
                "periods_to_come": {str(k): v for k, v in self.periods_to_come.items()},
            },
            "remaining": {
                "epsilon": self.remaining_epsilon,
                "of": "one further pure epsilon-DP release, beside what the planned series hold",
            },
            "releases": [r.to_dict() for r in self.releases],
        }


def _connect(path: Path, *, create: bool) -> sqlite3.Connection:
    """A connection to an existing ledger file (``create``: or a new one);
    never creates a file otherwise."""
    if not create and not path.exists():
        raise LedgerError(
            f"no ledger at {path}: a missing ledger is never taken for a fresh budget; create one with "
            f"'dpdbscan ledger init {path} --dataset NAME --epsilon E', or check the path"
        )
    if path.is_dir():
        raise LedgerError(f"the ledger {path} is a folder, not a file")
    mode = "rwc" if create else "rw"
    try:
        con = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode={mode}", uri=True, timeout=BUSY_TIMEOUT, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open the ledger {path}: {exc}") from None
    try:
        con.execute("PRAGMA synchronous = FULL")
        con.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        con.close()
        raise LedgerError(
            f"{path} is not a dpdbscan ledger, or is corrupt ({exc}); a damaged ledger is never "
            "taken for a fresh budget"
        ) from None
    return con


def _check_format(con: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that is not an intact ledger of a version this code knows."""
    try:
        problems = [r[0] for r in con.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise LedgerError(
                f"the ledger {path} is corrupt (SQLite's check: {'; '.join(problems[:3])}); "
                "restore it from a backup: a damaged ledger is never taken for a fresh budget"
            )
        app = con.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        fmt = None
        if "meta" in tables:
            row = con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            fmt = row[0] if row else None
        if app != APPLICATION_ID or fmt != FORMAT or "schema_version" not in tables:
            raise LedgerError(
                f"{path} is not a dpdbscan ledger (an SQLite file made by 'dpdbscan ledger init')"
            )
        version = con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise LedgerError(
            f"{path} is not a dpdbscan ledger, or is corrupt ({exc}); a damaged ledger is never "
            "taken for a fresh budget"
        ) from None
    if version is None or version > SCHEMA_VERSION:
        raise LedgerError(
            f"the ledger {path} has schema version {version}, this dpdbscan knows up to {SCHEMA_VERSION}: "
            "upgrade dpdbscan"
        )


@contextmanager
def _write(con: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """One write transaction, the write lock taken first (``BEGIN
    IMMEDIATE``): committed on success, rolled back on any exception."""
    try:
        con.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise LedgerError(
            f"could not start a write transaction on the ledger {path} ({exc}; another process "
            f"may have held it for more than {BUSY_TIMEOUT:g} s, or the file is read-only)"
        ) from None
    try:
        yield con
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    try:
        con.execute("COMMIT")
    except sqlite3.Error as exc:
        raise LedgerError(f"could not commit to the ledger {path}: {exc}") from None


def _check_name(value: object, what: str = "dataset") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a ledger's {what} is a non-empty name, got {what}={value!r}")
    return value


def _releases(con: sqlite3.Connection, dataset: str) -> list[Release]:
    rows = con.execute(
        "SELECT id, dataset, status, reserved, finished, command, params, unit, unit_column, "
        "epsilon, delta, rho, files, series_id, period FROM releases WHERE dataset = ? ORDER BY id",
        (dataset,),
    ).fetchall()
    return [
        Release(
            id=r[0],
            dataset=r[1],
            status=r[2],
            reserved=r[3],
            finished=r[4],
            command=r[5],
            params=json.loads(r[6]),
            unit=r[7],
            unit_column=r[8],
            cost=Cost(r[9], r[10], r[11]),
            files=json.loads(r[12]),
            series_id=r[13],
            period=r[14],
        )
        for r in rows
    ]


@dataclass(frozen=True)
class _Budget:
    epsilon: float
    delta: float
    unit: str
    unit_column: str | None
    created: str
    accounting: str = "basic"


def _has_accounting(con: sqlite3.Connection) -> bool:
    """Whether the file's ``datasets`` has the column ``accounting`` (schema
    version 2; a file of version 1 has not, its datasets count by "basic")."""
    return "accounting" in {r[1] for r in con.execute("PRAGMA table_info(datasets)")}


def _budget(con: sqlite3.Connection, path: Path, dataset: str) -> _Budget:
    accounting = "accounting" if _has_accounting(con) else "NULL"
    row = con.execute(
        f"SELECT epsilon, delta, unit, unit_column, created, {accounting} FROM datasets WHERE name = ?",
        (dataset,),
    ).fetchone()
    if row is None:
        known = [r[0] for r in con.execute("SELECT name FROM datasets ORDER BY name")]
        listed = ", ".join(repr(k) for k in known) if known else "none yet"
        raise LedgerError(
            f"the ledger {path} has no dataset {dataset!r} (it has: {listed}); register it with "
            f"'dpdbscan ledger init {path} --dataset {dataset} --epsilon E'"
        )
    return _Budget(float(row[0]), float(row[1]), str(row[2]), row[3], str(row[4]), row[5] or "basic")


def _check_unit(b: _Budget, path: Path, dataset: str, unit: str, unit_column: str | None) -> None:
    """Refuse a release that protects another unit than the budget does."""
    where = f"the ledger {path}: dataset {dataset!r}"
    if b.unit == "person" and unit == "event":
        raise LedgerError(
            f"{where} has a lifetime budget per person ({unit_words(b.unit_column)}); an event-level "
            "release protects each row, and a person with n rows would pay n times its epsilon: give "
            f"the release its unit ({unit_option(b.unit_column)}, or units= in Python)"
        )
    if b.unit == "event" and unit == "person":
        raise LedgerError(
            f"{where} has a lifetime budget per row (event level); a person-level release is "
            "charged to a budget per person: register one with 'dpdbscan ledger init ... --unit COLUMN' "
            "(or --unit-from file|folder)"
        )
    if unit_column is not None and b.unit_column is not None and unit_column != b.unit_column:
        raise LedgerError(
            f"{where} has a lifetime budget that protects {unit_words(b.unit_column)}; this release "
            f"protects {unit_words(unit_column)}: one budget protects one unit"
        )


def _plans(con: sqlite3.Connection, dataset: str) -> dict[int, dict[str, Any]]:
    """The dataset's recorded series: their ids and public plans."""
    rows = con.execute("SELECT id, plan FROM series WHERE dataset = ? ORDER BY id", (dataset,)).fetchall()
    return {int(r[0]): json.loads(r[1]) for r in rows}


def _plan_cost(plan: Mapping[str, Any]) -> Cost | None:
    """What a series' whole plan may spend (``plan["cost"]``), or None when
    its plan does not say (a series recorded by :meth:`Ledger.add_series`
    without a cost counts its releases alone)."""
    cost = plan.get("cost")
    if not isinstance(cost, Mapping) or cost.get("epsilon") is None:
        return None
    rho = cost.get("rho")
    return Cost(float(cost["epsilon"]), float(cost.get("delta") or 0.0), None if rho is None else float(rho))


def _held(releases: Sequence[Release], plans: Mapping[int, Mapping[str, Any]]) -> list[Cost]:
    """What the dataset's budget holds: every release's cost, except that the
    releases of a planned series are replaced by its whole plan's cost, so
    that the periods it has yet to release keep their budget (a series is
    (epsilon, delta)-DP and rho-zCDP as a whole, however many of its periods
    are out). A plan never costs less than its releases: the ledger refuses a
    series' release beyond its plan (:meth:`Ledger.reserve_series`)."""
    planned = {sid: c for sid, p in plans.items() if (c := _plan_cost(p)) is not None}
    return [r.cost for r in releases if r.series_id not in planned] + list(planned.values())


def _spent(releases: Sequence[Release], plans: Mapping[int, Mapping[str, Any]]) -> list[Cost]:
    """What the dataset's releases spent, as the entries the ledger's rule
    composes: every release's cost, except that the releases of a planned
    series count as one entry, what its plan's rows released so far cost
    together (fixed in advance by the plan: :func:`.composition.compose_fixed`
    at the plan's delta, rho's added), never more than its whole plan
    (:func:`_held`). A series' periods are not separate choices: its plan
    fixed them, and the ledger refuses rows beyond its rho."""
    planned = {sid: c for sid, p in plans.items() if (c := _plan_cost(p)) is not None}
    out = [r.cost for r in releases if r.series_id not in planned]
    for sid, whole in planned.items():
        rows = [r.cost for r in releases if r.series_id == sid]
        if not rows:
            continue
        fixed = compose_fixed(rows, whole.delta)
        rho = None if any(c.rho is None for c in rows) else math.fsum(c.rho or 0.0 for c in rows)
        delta = whole.delta if any(c.delta > 0 for c in rows) else 0.0
        out.append(Cost(min(fixed.epsilon, whole.epsilon), delta, rho))
    return out


def _account(con: sqlite3.Connection, path: Path, dataset: str) -> Account:
    b = _budget(con, path, dataset)
    releases = _releases(con, dataset)
    plans = _plans(con, dataset)
    spent = compose(_spent(releases, plans), b.delta, b.accounting)
    held = _held(releases, plans)
    left = largest_pure(held, b.epsilon, b.delta, b.accounting)
    to_come = _periods_to_come(releases, plans)
    return Account(
        dataset,
        b.epsilon,
        b.delta,
        b.unit,
        b.unit_column,
        b.created,
        spent,
        left,
        releases,
        held=compose(held, b.delta, b.accounting),
        periods_to_come=to_come,
        held_costs=tuple(held),
        accounting=b.accounting,
    )


def _periods_to_come(releases: Sequence[Release], plans: Mapping[int, Mapping[str, Any]]) -> dict[int, int]:
    """For each planned series with periods still to release: how many."""
    out: dict[int, int] = {}
    for sid, plan in plans.items():
        planned = (plan.get("periods") or {}).get("n_periods")
        if _plan_cost(plan) is None or not isinstance(planned, int):
            continue
        done = {r.period for r in releases if r.series_id == sid and r.period is not None}
        if planned > len(done):
            out[sid] = planned - len(done)
    return out


@dataclass(frozen=True)
class Ledger:
    """A dataset's lifetime budget in a ledger file: what the estimator,
    :func:`dpdbscan.fit_lonlat` and ``dpdbscan fit --ledger`` charge.

    A handle, not a connection: it holds the path and the dataset's name and
    opens the file for each operation, so it can be copied, pickled and
    cloned with an estimator, and every copy charges the same budget. The
    budget lives in the file; this object never changes.

    Parameters
    ----------
    path : str or Path
        The ledger file, made by :meth:`create` (``dpdbscan ledger init``).
    dataset : str
        The dataset whose budget is charged.
    """

    path: Path
    dataset: str

    def __init__(self, path: str | os.PathLike[str], dataset: str) -> None:
        object.__setattr__(self, "path", Path(path))
        object.__setattr__(self, "dataset", _check_name(dataset))

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        dataset: str,
        epsilon: float,
        delta: float = 0.0,
        unit: str | None = None,
        accounting: str = "basic",
    ) -> Ledger:
        """Register ``dataset`` with a lifetime budget (epsilon, delta) in the
        ledger at ``path``, making the file if there is none. A dataset is
        registered once: its budget is for its lifetime and is never reset.

        ``unit``: what the budget protects: None, each row (event level); or
        the name of the privacy unit (the unit column, such as "cab"), each
        person. Every release charged must protect the same unit.

        ``accounting``: the rule that admits releases, a privacy filter under
        fully adaptive choice, fixed here for the dataset's lifetime:
        "basic" (basic composition; every kind of release) or "zcdp" (pure
        releases by basic composition while all are pure, else rho's add
        against the budget's rho; a release that is not zCDP, on the
        stability histogram, is refused). See :mod:`.composition`.

        Raises LedgerError when ``path`` exists and is not a ledger, or the
        dataset is already registered."""
        dataset = _check_name(dataset)
        accounting = check_accounting(accounting)
        if unit is not None:
            unit = _check_name(unit, "unit")
        eps, dlt = float(epsilon), float(delta)
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"a lifetime epsilon must be a finite number > 0, got epsilon={epsilon!r}")
        if not (math.isfinite(dlt) and 0 <= dlt < 1):
            raise ValueError(f"a lifetime delta must be in [0, 1), got delta={delta!r}")
        p = Path(path)
        con = _connect(p, create=True)
        try:
            with _write(con, p):
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not tables:
                    # statement by statement: executescript would commit the transaction first
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            con.execute(statement)
                    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    con.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
                    con.execute("INSERT INTO schema_version VALUES (?, ?)", (SCHEMA_VERSION, _now()))
                else:
                    _check_format(con, p)
                    if not _has_accounting(con):  # version 1: its datasets stay NULL, "basic"
                        con.execute(
                            "ALTER TABLE datasets ADD COLUMN accounting TEXT CHECK "
                            "(accounting IS NULL OR accounting IN ('basic', 'zcdp'))"
                        )
                        con.execute("INSERT INTO schema_version VALUES (?, ?)", (SCHEMA_VERSION, _now()))
                if con.execute("SELECT 1 FROM datasets WHERE name = ?", (dataset,)).fetchone():
                    raise LedgerError(
                        f"the ledger {p} already has the dataset {dataset!r}: a lifetime budget is "
                        "registered once and never reset"
                    )
                con.execute(
                    "INSERT INTO datasets (name, epsilon, delta, unit, unit_column, created, accounting) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (dataset, eps, dlt, "event" if unit is None else "person", unit, _now(), accounting),
                )
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{p} is not a dpdbscan ledger, or is corrupt ({exc})") from None
        finally:
            con.close()
        return cls(p, dataset)

    @contextmanager
    def _open(self) -> Iterator[sqlite3.Connection]:
        con = _connect(self.path, create=False)
        try:
            _check_format(con, self.path)
            yield con
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"the ledger {self.path} could not be read or written: {exc}") from None
        finally:
            con.close()

    def account(self) -> Account:
        """The dataset's budget, what was spent and the releases."""
        with self._open() as con:
            return _account(con, self.path, self.dataset)

    def reserve(
        self,
        cost: Cost,
        *,
        command: str,
        params: Mapping[str, Any],
        unit: str,
        unit_column: str | None = None,
        series_id: int | None = None,
        period: str | None = None,
    ) -> Reservation:
        """Reserve ``cost`` for a release, atomically: under the ledger's
        write lock, add it to the dataset's releases if the total still fits
        the lifetime budget, else raise :class:`~dpdbscan.exceptions.BudgetExceeded`
        and write nothing. Call it before the data are read.

        ``params``: the release's public parameters (JSON; no secret such as
        a seed); ``unit``: "person" or "event" (what one neighbour differs
        by); ``unit_column``: the unit's column, if named; ``series_id`` and
        ``period``: the series (:meth:`add_series`) and period this release
        belongs to, if any. A release of a series counts like any other."""
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got unit={unit!r}")
        text = json.dumps(dict(params), sort_keys=True, default=str)
        with self._open() as con, _write(con, self.path):
            b = _budget(con, self.path, self.dataset)
            _check_unit(b, self.path, self.dataset, unit, unit_column)
            if series_id is not None:
                row = con.execute("SELECT dataset FROM series WHERE id = ?", (series_id,)).fetchone()
                if row is None or row[0] != self.dataset:
                    raise LedgerError(f"the ledger {self.path} has no series {series_id} of {self.dataset!r}")
            self._check_fits(con, b, [cost])
            rid = self._insert(con, cost, command, text, unit, unit_column, series_id, period)
            total = compose(
                _spent(_releases(con, self.dataset), _plans(con, self.dataset)), b.delta, b.accounting
            )
        return Reservation(self, rid, cost, total)

    def _check_fits(
        self,
        con: sqlite3.Connection,
        b: _Budget,
        new: Sequence[Cost],
        *,
        check: Sequence[Cost] | None = None,
        append: bool = False,
    ) -> Total:
        """What the budget holds with ``new`` added, or BudgetExceeded
        when ``check`` (default ``new``; a new series: its whole plan) does not
        fit beside what the budget holds: every release, each planned series
        at its whole plan's cost (:func:`_held`), so that no other release
        takes what a series' periods to come need. An ``append`` to a series
        adds nothing to what is held: its plan, held whole, is what it draws
        on."""
        releases = _releases(con, self.dataset)
        costs = [r.cost for r in releases]
        plans = _plans(con, self.dataset)
        # an append's rows are inside its series' plan, held whole already
        # (reserve_series refuses rows beyond the plan's rho)
        held = _held(releases, plans)
        added = [] if append else list(new if check is None else check)
        total = compose([*held, *added], b.delta, b.accounting)
        if total.method == NOT_ZCDP:
            raise BudgetExceeded(
                f"the ledger {self.path} refuses this release: dataset {self.dataset!r} is counted by "
                "zCDP (accounting 'zcdp', fixed when it was registered), and this release is not zCDP "
                "(a release on the stability histogram, or one whose histogram is not known before the "
                "data are read: the file's columns, or the automatic mode's count of the points above "
                "--max-cells 8388608): choose --histogram dense or sparse, give the box with --columns, "
                "or --max-cells at most 8388608 (or --n-expected). " + NOTHING_READ
            )
        if not fits(total, b.epsilon, b.delta):
            before = compose(held, b.delta, b.accounting)
            shown = new if check is None else check
            eps = math.fsum(c.epsilon for c in shown)
            dlt = math.fsum(c.delta for c in shown)
            to_come = _periods_to_come(releases, plans)
            holds = (
                ""
                if append or not to_come
                else " plus what its planned series may still release ("
                + ", ".join(f"series {sid}: {n} period(s) to come" for sid, n in to_come.items())
                + "), together"
            )
            this = "this series' whole plan" if check is not None else "this one"
            raise BudgetExceeded(
                f"the ledger {self.path} refuses this release: dataset {self.dataset!r} has a "
                f"lifetime budget of (epsilon={b.epsilon:g}, delta={b.delta:g}) and {len(costs)} "
                f"release(s) spent{holds} (epsilon={before.epsilon:.6g}, delta={before.delta:.3g}) by "
                f"{before.method}; with {this} at (epsilon={eps:g}, delta={dlt:g}) "
                f"the total would be (epsilon={total.epsilon:.6g}, delta={total.delta:.3g}). " + NOTHING_READ
            )
        return total

    def _insert(
        self,
        con: sqlite3.Connection,
        cost: Cost,
        command: str,
        text: str,
        unit: str,
        unit_column: str | None,
        series_id: int | None,
        period: str | None,
    ) -> int:
        cur = con.execute(
            "INSERT INTO releases (dataset, series_id, period, status, reserved, command, params, "
            "unit, unit_column, epsilon, delta, rho, pid) "
            "VALUES (?, ?, ?, 'reserved', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self.dataset,
                series_id,
                period,
                _now(),
                command,
                text,
                unit,
                unit_column,
                cost.epsilon,
                cost.delta,
                cost.rho,
                os.getpid(),
            ),
        )
        return int(cur.lastrowid or 0)

    def reserve_series(
        self,
        charges: Sequence[tuple[str | None, Cost]],
        *,
        command: str,
        params: Mapping[str, Any],
        unit_column: str | None,
        plan: Mapping[str, Any] | None = None,
        series_id: int | None = None,
    ) -> tuple[int, list[Reservation]]:
        """Reserve releases of an appendable series in ONE write transaction,
        one row per charge (``period``: the period's start, or None for the
        series' spans): with ``plan`` a new series is recorded first (its id
        returned); with ``series_id`` an earlier one is appended to. Refused
        (:class:`~dpdbscan.exceptions.BudgetExceeded`, nothing written) when
        a period was already charged to the series, when the series' rows
        would cost more rho than its plan (``plan["cost"]["rho"]``), or when
        the dataset's lifetime budget would be exceeded: a new series' whole
        plan must fit beside what the budget holds, and from then on the
        budget holds it whole (:func:`_held`), so the periods to come keep
        their budget whatever else is released meanwhile. Person level only:
        a series protects each unit over its horizon."""
        if (plan is None) == (series_id is None):
            raise ValueError("give the plan of a new series or the id of a recorded one, not both")
        text = json.dumps(dict(params), sort_keys=True, default=str)
        costs = [c for _, c in charges]
        with self._open() as con, _write(con, self.path):
            b = _budget(con, self.path, self.dataset)
            _check_unit(b, self.path, self.dataset, "person", unit_column)
            if plan is not None:
                recorded = dict(plan)
                # the whole plan must fit beside what the budget holds, before it is recorded
                whole = _plan_cost(recorded)
                self._check_fits(con, b, costs, check=None if whole is None else [whole])
                cur = con.execute(
                    "INSERT INTO series (dataset, created, plan) VALUES (?, ?, ?)",
                    (self.dataset, _now(), json.dumps(recorded, sort_keys=True, default=str)),
                )
                sid = int(cur.lastrowid or 0)
            else:
                row = con.execute("SELECT dataset, plan FROM series WHERE id = ?", (series_id,)).fetchone()
                if row is None or row[0] != self.dataset:
                    raise LedgerError(f"the ledger {self.path} has no series {series_id} of {self.dataset!r}")
                sid, recorded = int(series_id), json.loads(row[1])  # type: ignore[arg-type]
            mine = [r for r in _releases(con, self.dataset) if r.series_id == sid]
            done = {r.period for r in mine if r.period is not None}
            again = [p for p, _ in charges if p is not None and p in done]
            if again:
                raise BudgetExceeded(
                    f"the ledger {self.path} refuses this release: series {sid} of {self.dataset!r} "
                    f"already released the period(s) {', '.join(again)}; a period is released once. "
                    + NOTHING_READ
                )
            if any(p is None for p, _ in charges) and any(r.period is None for r in mine):
                raise BudgetExceeded(
                    f"the ledger {self.path} refuses this release: series {sid} of {self.dataset!r} "
                    "already released its spans. " + NOTHING_READ
                )
            planned = (recorded.get("cost") or {}).get("rho")
            spent_rho = math.fsum(r.cost.rho or 0.0 for r in mine) + math.fsum(c.rho or 0.0 for c in costs)
            if planned is None or any(c.rho is None for c in costs) or spent_rho > planned * (1 + 1e-12):
                raise BudgetExceeded(
                    f"the ledger {self.path} refuses this release: series {sid} of {self.dataset!r} was "
                    f"planned at rho={planned}, and its releases with this one would spend "
                    f"rho={spent_rho:.6g}. " + NOTHING_READ
                )
            if plan is None:
                self._check_fits(con, b, costs, append=True)
            rids = [self._insert(con, c, command, text, "person", unit_column, sid, p) for p, c in charges]
            total = compose(
                _spent(_releases(con, self.dataset), _plans(con, self.dataset)), b.delta, b.accounting
            )
        return sid, [Reservation(self, rid, c, total) for rid, c in zip(rids, costs)]

    def add_series(self, plan: Mapping[str, Any]) -> int:
        """Record a planned series of releases of this dataset (its public
        plan as JSON: the horizon, the periods, the budget the series may
        spend) and return its id, for the releases that :meth:`reserve`
        charges to it. Spends nothing by itself."""
        text = json.dumps(dict(plan), sort_keys=True, default=str)
        with self._open() as con, _write(con, self.path):
            _budget(con, self.path, self.dataset)
            cur = con.execute(
                "INSERT INTO series (dataset, created, plan) VALUES (?, ?, ?)", (self.dataset, _now(), text)
            )
            return int(cur.lastrowid or 0)

    def _finish(self, rid: int, status: str, files: Sequence[str], cost: Cost | None = None) -> None:
        with self._open() as con, _write(con, self.path):
            con.execute(
                "UPDATE releases SET status = ?, finished = ?, files = ? "
                "WHERE id = ? AND status = 'reserved'",
                (status, _now(), json.dumps([str(f) for f in files]), rid),
            )
            if cost is not None:
                con.execute(
                    "UPDATE releases SET epsilon = ?, delta = ?, rho = ? WHERE id = ?",
                    (cost.epsilon, cost.delta, cost.rho, rid),
                )


@dataclass(frozen=True)
class Reservation:
    """A release reserved in a ledger (:meth:`Ledger.reserve`).

    Attributes
    ----------
    ledger : Ledger
    id : int
        Its row in the ledger.
    cost : Cost
    total : Total
        The dataset's total with this release.
    """

    ledger: Ledger
    id: int
    cost: Cost
    total: Total

    def written(self, files: Sequence[str] = (), *, cost: Cost | None = None) -> None:
        """Record that the release was made and these files written;
        ``cost``: the release's cost, when it turned out larger than reserved."""
        self.ledger._finish(self.id, "written", files, cost)

    def failed(self) -> None:
        """Record that the command failed after reserving. The reservation
        still counts: the data may have been read."""
        self.ledger._finish(self.id, "failed", ())


def read_ledger(path: str | os.PathLike[str]) -> list[Account]:
    """Every dataset of the ledger at ``path`` with its account, by name."""
    p = Path(path)
    con = _connect(p, create=False)
    try:
        _check_format(con, p)
        names = [r[0] for r in con.execute("SELECT name FROM datasets ORDER BY name")]
        return [_account(con, p, n) for n in names]
    except sqlite3.DatabaseError as exc:
        raise LedgerError(f"the ledger {p} could not be read: {exc}") from None
    finally:
        con.close()


__all__ = ["Account", "Ledger", "Release", "Reservation", "SCHEMA_VERSION", "read_ledger"]
