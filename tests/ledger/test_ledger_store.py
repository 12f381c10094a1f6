"""The ledger file (dpdbscan.ledger.store): real SQLite files on disk.

A missing, foreign, empty, damaged or newer file is an error, never a fresh
budget; a refused reservation writes nothing; a process killed in the middle
of a write transaction leaves a ledger that SQLite's integrity check passes
and that holds nothing of the killed transaction; the estimator and
fit_lonlat charge the ledger and are refused by it.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from dpdbscan import DPDBSCAN, BudgetExceeded, fit_lonlat
from dpdbscan.exceptions import LedgerError
from dpdbscan.ledger import SCHEMA_VERSION, Cost, Ledger, pure, read_ledger
from dpdbscan.ledger.store import APPLICATION_ID

SRC = Path(__file__).resolve().parents[2] / "src"


def rows(path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT id, status, epsilon, delta, rho FROM releases ORDER BY id").fetchall()
    finally:
        con.close()


def integrity(path) -> str:
    con = sqlite3.connect(path)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def reserve(ledger: Ledger, cost: Cost):
    return ledger.reserve(cost, command="test", params={"eps": 1}, unit="event")


def test_a_ledger_is_created_marked_and_versioned(tmp_path):
    path = tmp_path / "budget.ledger"
    led = Ledger.create(path, "cabs", 5.0, 1e-6)
    assert led == Ledger(path, "cabs")
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        # the releases of a planned series can be recorded without a new schema
        assert {"datasets", "releases", "series", "schema_version"} <= tables
        cols = {r[1] for r in con.execute("PRAGMA table_info(releases)")}
        assert {"series_id", "period", "unit", "epsilon", "delta", "rho", "files", "params"} <= cols
    finally:
        con.close()
    a = led.account()
    assert (a.epsilon, a.delta, a.releases, a.remaining_epsilon) == (5.0, 1e-6, [], 5.0)


def test_reservations_add_up_and_the_one_too_many_writes_nothing(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 5.0)
    for i in range(5):
        r = reserve(led, pure(1.0))
        assert r.total.epsilon == i + 1
        r.written([f"out{i}.json"])
    before = rows(led.path)
    with pytest.raises(BudgetExceeded, match="refuses this release") as info:
        reserve(led, pure(1.0))
    assert "epsilon=5" in str(info.value) and "epsilon=6" in str(info.value)
    assert rows(led.path) == before
    a = led.account()
    assert [r.status for r in a.releases] == ["written"] * 5
    assert a.releases[0].files == ["out0.json"] and a.releases[0].params == {"eps": 1}
    assert a.spent.epsilon == 5.0 and a.remaining_epsilon == 0.0


def test_a_failed_or_unfinished_release_stays_counted(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 2.0)
    reserve(led, pure(1.0)).failed()
    reserve(led, pure(1.0))  # never finished: as if the process had been killed
    assert [r[1] for r in rows(led.path)] == ["failed", "reserved"]
    with pytest.raises(BudgetExceeded):
        reserve(led, pure(0.5))


def test_a_larger_actual_cost_replaces_the_reserved_one(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 5.0, 1e-6)
    r = reserve(led, pure(1.0))
    r.written(["a"], cost=Cost(1.0, 1e-6, None))
    assert rows(led.path) == [(1, "written", 1.0, 1e-6, None)]


def test_a_missing_ledger_is_an_error_and_is_not_created(tmp_path):
    path = tmp_path / "nowhere.ledger"
    with pytest.raises(LedgerError, match="never taken for a fresh budget"):
        Ledger(path, "d").account()
    with pytest.raises(LedgerError, match="no ledger"):
        reserve(Ledger(path, "d"), pure(1.0))
    with pytest.raises(LedgerError):
        read_ledger(path)
    assert not path.exists()


def _other_sqlite(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.write_text("id,x,y\n1,2,3\n"),
        lambda p: p.write_bytes(b""),
        _other_sqlite,
    ],
    ids=["text", "empty", "another-sqlite-file"],
)
def test_a_file_that_is_not_a_ledger_is_refused(tmp_path, make):
    path = tmp_path / "b.ledger"
    make(path)
    content = path.read_bytes()
    for action in (lambda: Ledger(path, "d").account(), lambda: read_ledger(path)):
        with pytest.raises(LedgerError, match="not a dpdbscan ledger"):
            action()
    if content:  # init refuses to take it over; an empty file is an empty database
        with pytest.raises(LedgerError):
            Ledger.create(path, "d", 1.0)
        assert path.read_bytes() == content


def test_a_damaged_ledger_is_refused(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 5.0)
    reserve(led, pure(0.001))
    con = sqlite3.connect(led.path)  # more rows, quickly: several pages of b-tree
    con.executemany(
        "INSERT INTO releases (dataset, status, reserved, command, params, unit, epsilon, delta) "
        "VALUES ('d', 'written', 'then', 'test', ?, 'event', 0.001, 0.0)",
        [("x" * 200,)] * 200,
    )
    con.commit()
    con.close()
    data = bytearray(led.path.read_bytes())
    page = 4096
    assert len(data) > 3 * page
    data[page + 10 : 2 * page] = b"\xff" * (page - 10)  # the second page: b-tree garbage
    led.path.write_bytes(bytes(data))
    with pytest.raises(LedgerError, match="corrupt"):
        led.account()
    with pytest.raises(LedgerError):
        reserve(led, pure(0.001))


def test_a_ledger_from_a_newer_version_is_refused(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 5.0)
    con = sqlite3.connect(led.path)
    con.execute("INSERT INTO schema_version VALUES (?, 'later')", (SCHEMA_VERSION + 1,))
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="upgrade dpdbscan"):
        led.account()


def test_a_budget_is_registered_once_and_never_reset(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 1.0)
    reserve(led, pure(1.0))
    with pytest.raises(LedgerError, match="registered once"):
        Ledger.create(led.path, "d", 100.0)
    assert led.account().epsilon == 1.0 and len(led.account().releases) == 1
    Ledger.create(led.path, "other", 2.0)
    assert [a.dataset for a in read_ledger(led.path)] == ["d", "other"]


def test_an_unknown_dataset_is_an_error_that_names_the_known_ones(tmp_path):
    Ledger.create(tmp_path / "b.ledger", "cabs", 1.0)
    with pytest.raises(LedgerError, match="no dataset 'taxis'.*'cabs'"):
        reserve(Ledger(tmp_path / "b.ledger", "taxis"), pure(0.1))


@pytest.mark.parametrize(
    "args", [("d", 0.0, 0.0), ("d", -1.0, 0.0), ("d", float("inf"), 0.0), ("d", 1.0, 1.0), ("", 1.0, 0.0)]
)
def test_a_bad_budget_is_refused_before_a_file_is_made(tmp_path, args):
    path = tmp_path / "b.ledger"
    with pytest.raises(ValueError):
        Ledger.create(path, *args)
    assert not path.exists()


def test_the_handle_copies_and_pickles_to_the_same_budget(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 2.0)
    for other in (copy.deepcopy(led), pickle.loads(pickle.dumps(led))):
        assert other == led
        reserve(other, pure(1.0))
    with pytest.raises(BudgetExceeded):
        reserve(led, pure(1.0))


_HOLD = textwrap.dedent(
    """
    import sqlite3, sys, time
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    con.execute(
        "INSERT INTO releases (dataset, status, reserved, command, params, unit, epsilon, delta, rho) "
        "VALUES ('d', 'reserved', 'now', 'killed', '{}', 'event', 1.0, 0.0, 0.5)"
    )
    for i in range(300):  # enough uncommitted pages to need the journal
        con.execute(
            "INSERT INTO releases (dataset, status, reserved, command, params, unit, epsilon, delta) "
            "VALUES ('d', 'reserved', 'now', 'killed', ?, 'event', 0.0, 0.0)", ("x" * 500,)
        )
    print("holding", flush=True)
    time.sleep(60)
    """
)


def test_a_process_killed_inside_a_write_transaction_leaves_an_intact_ledger(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 3.0)
    reserve(led, pure(1.0)).written(["kept.json"])
    hold = [sys.executable, "-c", _HOLD, str(led.path)]
    with subprocess.Popen(hold, stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
            journal = Path(str(led.path) + "-journal")
            assert journal.exists()  # the transaction is in flight
            os.kill(holder.pid, signal.SIGKILL)
            assert holder.wait(timeout=30) == -signal.SIGKILL
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
    # the next reader rolls the hot journal back: the killed transaction left nothing
    a = led.account()
    assert [r.command for r in a.releases] == ["test"] and a.spent.epsilon == 1.0
    assert integrity(led.path) == "ok"
    reserve(led, pure(2.0))  # the lock died with the process
    with pytest.raises(BudgetExceeded):
        reserve(led, pure(0.1))


# --------------------------------------------------------------------------- #
# the estimator and fit_lonlat


X = np.random.default_rng(0).normal(5, 1, (2000, 2))


def test_the_estimator_charges_the_ledger_and_clones_share_it(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 2.5)
    est = DPDBSCAN(1.0, min_samples=20, bounds=(0, 10), ledger=led)
    est.fit(X)
    clone(est).fit(X)
    assert est.ledger is led  # fit does not change its parameters
    refused = DPDBSCAN(1.0, min_samples=20, bounds=(0, 10), ledger=led)
    with pytest.raises(BudgetExceeded):
        refused.fit(X)
    assert not hasattr(refused, "spans_")
    DPDBSCAN(1.0, min_samples=20, bounds=(0, 10), epsilon=0.5, ledger=led).fit(X)
    a = led.account()
    assert a.spent.epsilon == 2.5 and [r.status for r in a.releases] == ["written"] * 3
    assert {r.command for r in a.releases} == {"DPDBSCAN.fit"}
    assert a.releases[0].params["bounds"] == {"lower": [0.0, 0.0], "upper": [10.0, 10.0]}
    assert a.releases[0].params["randomness"] == "secure"


def test_the_estimator_with_a_ledger_needs_public_bounds(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 2.5)
    with pytest.raises(ValueError, match="public bounds"):
        DPDBSCAN(1.0, min_samples=20, ledger=led).fit(X)
    assert led.account().releases == []
    with pytest.raises(ValueError, match="ledger="):
        DPDBSCAN(1.0, min_samples=20, bounds=(0, 10), ledger=str(led.path)).fit(X)


def test_a_fit_that_fails_after_reserving_stays_counted(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "d", 5.0)

    class Broken:
        def count(self, grid, X):
            raise RuntimeError("the cluster went away")

    with pytest.raises(RuntimeError):
        DPDBSCAN(1.0, min_samples=20, bounds=(0, 10), ledger=led, backend=Broken(), histogram="sparse").fit(X)
    assert [(r.status, r.cost.epsilon) for r in led.account().releases] == [("failed", 1.0)]


def test_fit_lonlat_charges_person_level_releases_in_zcdp(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "cabs", 2.0, 1e-6, unit="cab", accounting="zcdp")
    rng = np.random.default_rng(1)
    lonlat = np.column_stack([rng.uniform(-122.45, -122.4, 3000), rng.uniform(37.75, 37.8, 3000)])
    cab = rng.integers(0, 100, 3000)
    kw = dict(bounds=(-122.48, 37.72, -122.38, 37.82), eps="200m", min_samples=20, delta=1e-6)
    for _ in range(3):  # 3 x (1, 1e-6) is (1.81, 1e-6) in zCDP; basic would say (3, 3e-6)
        fit_lonlat(lonlat, epsilon=1.0, units=cab, max_cells_per_unit=10, ledger=led, **kw)
    a = led.account()
    assert a.spent.method.startswith("zCDP") and 1.80 < a.spent.epsilon < 1.82
    assert all(r.unit == "person" and r.command == "fit_lonlat" for r in a.releases)
    assert a.releases[0].params["bounds_degrees"] == {"lower": [-122.48, 37.72], "upper": [-122.38, 37.82]}
    with pytest.raises(BudgetExceeded):
        fit_lonlat(lonlat, epsilon=1.0, units=cab, max_cells_per_unit=10, ledger=led, **kw)


def test_the_releases_of_a_planned_series_are_recorded_and_charged(tmp_path):
    """The schema holds a planned series (a horizon of periods) and its
    period releases; each counts against the dataset's lifetime budget."""
    led = Ledger.create(tmp_path / "b.ledger", "cabs", 1.0, 1e-6, unit="cab")
    other = Ledger.create(led.path, "other", 1.0)
    plan = {"per": "week", "from": "2008-05-17", "to": "2008-06-10", "epsilon": 1.0, "delta": 1e-6}
    sid = led.add_series(plan)
    for week in ("2008-W20", "2008-W21"):
        led.reserve(pure(0.25), command="fit", params={}, unit="person", series_id=sid, period=week)
    a = led.account()
    assert [(r.series_id, r.period) for r in a.releases] == [(sid, "2008-W20"), (sid, "2008-W21")]
    assert a.spent.epsilon == 0.5
    with pytest.raises(LedgerError, match="no series"):
        other.reserve(pure(0.1), command="fit", params={}, unit="event", series_id=sid, period="x")
    with pytest.raises(LedgerError, match="no series"):
        led.reserve(pure(0.1), command="fit", params={}, unit="person", series_id=sid + 1)
    con = sqlite3.connect(led.path)
    try:
        (stored,) = con.execute("SELECT plan FROM series WHERE id = ?", (sid,)).fetchone()
    finally:
        con.close()
    assert json.loads(stored) == plan


def test_a_budget_protects_one_unit(tmp_path):
    rows_ = Ledger.create(tmp_path / "b.ledger", "rows", 5.0, 1e-6)
    cabs = Ledger.create(rows_.path, "cabs", 5.0, 1e-6, unit="cab", accounting="zcdp")
    g = Cost(1.0, 1e-6, 0.02)
    with pytest.raises(LedgerError, match="n times its epsilon"):
        cabs.reserve(pure(1.0), command="fit", params={}, unit="event")
    with pytest.raises(LedgerError, match="budget per person"):
        rows_.reserve(g, command="fit", params={}, unit="person", unit_column="cab")
    with pytest.raises(LedgerError, match="one budget protects one unit"):
        cabs.reserve(g, command="fit", params={}, unit="person", unit_column="driver")
    cabs.reserve(g, command="fit", params={}, unit="person", unit_column="cab")
    cabs.reserve(g, command="DPDBSCAN.fit", params={}, unit="person")  # Python: ids, no column name
    a = cabs.account()
    assert (a.unit, a.unit_column, len(a.releases)) == ("person", "cab", 2)
    assert rows_.account().releases == [] and rows_.account().unit == "event"
    with pytest.raises(ValueError, match="unit"):
        Ledger.create(rows_.path, "x", 1.0, unit="")


_HAMMER = textwrap.dedent(
    """
    import sys
    from dpdbscan import BudgetExceeded, Ledger
    from dpdbscan.ledger import pure
    led, granted = Ledger(sys.argv[1], "d"), 0
    for _ in range(int(sys.argv[2])):
        try:
            led.reserve(pure(0.1), command="hammer", params={}, unit="event").written([])
            granted += 1
        except BudgetExceeded:
            pass
    print(granted)
    """
)


def test_processes_reserving_in_a_loop_never_overspend(tmp_path):
    """4 processes x 15 reservations at epsilon 0.1 against a lifetime 5:
    exactly 50 are granted in all, whatever the interleaving."""
    led = Ledger.create(tmp_path / "b.ledger", "d", 5.0)
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _HAMMER, str(led.path), "15"], stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(4)
    ]
    granted = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        granted.append(int(out))
    assert sum(granted) == 50, granted
    a = led.account()
    assert len(a.releases) == 50 and a.spent.epsilon == pytest.approx(5.0, rel=1e-12)
    assert {r.status for r in a.releases} == {"written"}
    assert integrity(led.path) == "ok"


def _weekly_plan(epsilon: float, delta: float, weeks: int = 4) -> dict:
    """A planned series as `fit --per week --places-periods 1` records it: the
    whole plan's cost (epsilon, delta, rho at the lifetime delta) and its periods."""
    from dpdbscan.laws import zcdp

    rho = zcdp.rho_for(epsilon, delta)
    cost = {"epsilon": epsilon, "delta": delta, "rho": rho}
    return {"periods": {"per": "week", "n_periods": weeks}, "cost": cost}


def test_a_series_whose_whole_plan_exceeds_the_budget_is_refused_at_its_first_run(tmp_path):
    """Its first run alone (the spans and one week) fits, but the weeks to
    come would not: refused before anything is recorded, not at week 2."""
    led = Ledger.create(tmp_path / "b.ledger", "city", 1.0, 1e-6, unit="taxi")
    plan = _weekly_plan(1.8, 1e-6)
    first = [(None, Cost(0.36, 1e-6, 0.0036)), ("w1", Cost(0.83, 1e-6, 0.0172))]
    with pytest.raises(BudgetExceeded, match=r"this series' whole plan at \(epsilon=1\.8"):
        led.reserve_series(first, command="t", params={}, unit_column="taxi", plan=plan)
    assert led.account().releases == []
    con = sqlite3.connect(led.path)
    try:
        assert con.execute("SELECT count(*) FROM series").fetchone()[0] == 0
    finally:
        con.close()


def test_a_started_series_keeps_the_budget_of_its_periods_to_come(tmp_path):
    """Another release may not take what the series' later weeks need; the
    weeks themselves still fit, and the account says what is held."""
    led = Ledger.create(tmp_path / "b.ledger", "city", 2.0, 1e-6, unit="taxi")
    plan = _weekly_plan(2.0, 1e-6)
    rho = plan["cost"]["rho"]
    spans, week = Cost(1.5, 1e-6, 0.6 * rho), Cost(0.5, 1e-6, 0.1 * rho)
    sid, _ = led.reserve_series(
        [(None, spans), ("w1", week)], command="t", params={}, unit_column="taxi", plan=plan
    )
    a = led.account()
    assert a.periods_to_come == {sid: 3}
    assert a.spent.epsilon < 2.0 - 0.2  # what was released leaves room on its own ...
    assert a.held is not None and a.held.epsilon == pytest.approx(2.0)  # ... which the series holds
    assert a.remaining_epsilon < 1e-3
    assert a.to_dict()["held"]["periods_to_come"] == {str(sid): 3}
    with pytest.raises(BudgetExceeded, match=r"series 1: 3 period\(s\) to come"):
        led.reserve(Cost(0.2, 1e-6, 0.0005), command="t", params={}, unit="person", unit_column="taxi")
    for w in ("w2", "w3", "w4"):
        led.reserve_series([(w, week)], command="t", params={}, unit_column="taxi", series_id=sid)
    done = led.account()
    assert done.periods_to_come == {} and len(done.releases) == 5
    assert done.spent.rho == pytest.approx(rho) and done.spent.epsilon == pytest.approx(2.0)


def test_a_series_without_a_recorded_cost_counts_its_releases_alone(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "city", 1.0, 1e-6, unit="taxi")
    sid = led.add_series({"per": "week"})
    led.reserve(pure(0.25), command="t", params={}, unit="person", series_id=sid, period="w1")
    a = led.account()
    assert a.periods_to_come == {} and a.held is not None and a.held.epsilon == a.spent.epsilon == 0.25


def _as_version_1(path: Path) -> None:
    """Make a ledger file as dpdbscan wrote it before the accounting: schema
    version 1, ``datasets`` without the column."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("ALTER TABLE datasets DROP COLUMN accounting")
    con.execute("DELETE FROM schema_version")
    con.execute("INSERT INTO schema_version VALUES (1, '2026-01-01T00:00:00.000+00:00')")
    con.close()


def test_a_version_1_ledger_opens_and_counts_by_basic_composition(tmp_path):
    """A file written before the accounting opens; its datasets are counted by
    basic composition, the rule that admits every kind of release (two
    person-level releases at delta 1e-6 no longer fit a lifetime delta 1e-6,
    which the old rule's zCDP statement admitted). Registering a dataset in
    it adds the column and marks it version 2; the old dataset stays basic."""
    path = tmp_path / "old.ledger"
    led = Ledger.create(path, "cabs", 2.0, 1e-6, unit="cab")
    g = Cost(1.0, 1e-6, 0.0244)
    led.reserve(g, command="fit", params={}, unit="person", unit_column="cab")
    _as_version_1(path)
    a = led.account()
    assert a.accounting == "basic" and a.spent.method == "basic composition"
    assert (a.spent.epsilon, a.spent.delta) == (1.0, 1e-6) and a.to_dict()["accounting"] == "basic"
    with pytest.raises(BudgetExceeded, match="by basic composition"):
        led.reserve(g, command="fit", params={}, unit="person", unit_column="cab")
    Ledger.create(path, "zc", 2.0, 1e-6, unit="cab", accounting="zcdp")
    con = sqlite3.connect(path)
    assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION == 2
    con.close()
    accounts = {x.dataset: x for x in read_ledger(path)}
    assert accounts["cabs"].accounting == "basic" and accounts["zc"].accounting == "zcdp"
    zc = Ledger(path, "zc")
    for _ in range(2):  # by zCDP two fit (rho 2 x 0.0244 within the budget's)
        zc.reserve(g, command="fit", params={}, unit="person", unit_column="cab")
    assert zc.account().spent.method.startswith("zCDP") and len(accounts["cabs"].releases) == 1


def test_the_accounting_is_checked_and_zcdp_refuses_a_release_that_is_not_zcdp(tmp_path):
    with pytest.raises(ValueError, match="accounting"):
        Ledger.create(tmp_path / "a.ledger", "d", 1.0, 1e-6, accounting="renyi")
    led = Ledger.create(tmp_path / "b.ledger", "d", 1.0, 1e-6, accounting="zcdp")
    led.reserve(pure(0.5), command="fit", params={}, unit="event")
    with pytest.raises(BudgetExceeded, match="not zCDP"):
        led.reserve(Cost(0.1, 1e-8, None), command="fit", params={}, unit="event")
    assert len(led.account().releases) == 1
    # pure releases add while all are pure: 0.5 + 0.5 = 1 fits, as by basic composition
    led.reserve(pure(0.5), command="fit", params={}, unit="event")
    with pytest.raises(BudgetExceeded):
        led.reserve(pure(0.01), command="fit", params={}, unit="event")
