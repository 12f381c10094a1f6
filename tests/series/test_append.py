"""An appendable series: the spans from the first periods, each later period
released on its own as it completes, charged to the ledger's series; the
same places with the same ids in every file, refused when the plan or the
budget does not allow a period."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest

from dpdbscan import load_model
from dpdbscan.exceptions import BudgetExceeded
from dpdbscan.laws import zcdp
from dpdbscan.ledger import Cost, Ledger, read_ledger
from dpdbscan.params.parameters import validate
from dpdbscan.release import periodtable
from dpdbscan.series import SeriesInput, append_periods, plan_series, start_series
from dpdbscan.traces.periods import Periods
from tests.clirun import run

START = dt.datetime(2024, 3, 4, tzinfo=dt.UTC).timestamp()
DAY = 86400.0


def _rows(seed: int = 0, n: int = 12000):
    """200 cabs, two places, times over 9 days (one before and one after the
    7-day horizon)."""
    rng = np.random.default_rng(seed)
    cab = rng.integers(0, 200, n)
    xy = np.array([[2.0, 2.0], [7.0, 7.0]])[rng.integers(0, 2, n)] + rng.normal(0, 0.3, (n, 2))
    t = START + rng.uniform(-DAY, 8 * DAY, n)
    return xy, cab, t


def _write(path, xy, cab, t):
    with open(path, "w") as f:
        f.write("x,y,cab,time\n")
        for i in range(t.size):
            f.write(f"{xy[i, 0]:.4f},{xy[i, 1]:.4f},c{cab[i]},{t[i]:.0f}\n")
    return path


@pytest.fixture
def traces(tmp_path):
    return _write(tmp_path / "cabs.csv", *_rows())


ARGS = ["--header", "--columns", "x", "y", "--unit", "cab", "--max-cells-per-unit", "8", "--time", "time",
        "--per", "day", "--from", "2024-03-04", "--to", "2024-03-11", "--bounds", "0", "0", "10", "10",
        "--eps", "0.5", "--min-samples", "30", "--epsilon", "2", "--delta", "1e-5", "--no-png",
        "--places-periods", "3"]  # fmt: skip


def _init(capsys, ledger):
    rc, _, err = run(capsys, "ledger", "init", ledger, "--dataset", "cabs", "--epsilon", "2", "--delta",
                     "1e-5", "--unit", "cab")  # fmt: skip
    assert rc == 0, err


def _series(path):
    model = load_model(path)
    return model, model.metadata["series"]


def test_a_series_started_then_appended_keeps_its_spans_and_charges_each_period(traces, tmp_path, capsys):
    ledger = tmp_path / "budget.ledger"
    _init(capsys, ledger)
    charged = ["--ledger", ledger, "--dataset", "cabs"]
    # seeded: the two spans are found from 3 days' rows, which fails now and then unseeded
    rc, out, err = run(capsys, "fit", traces, *ARGS, *charged, "--through", "2024-03-08", "--seed", "5",
                       "--out-dir", tmp_path / "o1")  # fmt: skip
    assert rc == 0, err
    first, rec = _series(tmp_path / "o1" / "cabs.spans.json")
    assert first.n_spans == 2 and rec["released_periods"] == 4 and rec["series_id"] == 1
    assert np.array(rec["table"]["noisy_mass"]).shape == (2, 4) and len(rec["period_spans"]) == 4
    assert rec["table"]["bound_over"] == "each period" and rec["table"]["max_pairs_per_unit"] == 2
    assert "the spans of the first 3 day(s)" in rec["statement"] and "each cab" in rec["statement"]
    (account,) = read_ledger(ledger)
    assert [(r.series_id, r.period) for r in account.releases] == [(1, None)] + [
        (1, f"2024-03-0{d}T00:00:00+00:00") for d in (4, 5, 6, 7)
    ]
    assert all(r.status == "written" for r in account.releases)
    # the rest of the plan is held for the days to come, and the run says so
    assert "whole plan (epsilon=2, delta=1e-05) is held for its periods to come" in err
    assert account.periods_to_come == {1: 3} and account.held is not None
    assert account.held.epsilon == pytest.approx(2.0) and account.spent.epsilon < 2.0
    # the map's period control offers the released days only (the whole horizon, then 4)
    rc, _, err = run(capsys, "map", tmp_path / "o1" / "cabs.spans.json", "-o", tmp_path / "o1.html")
    assert rc == 0, err
    page = (tmp_path / "o1.html").read_text()
    assert len(re.findall(r'<option value="(-?\d+)">', page)) == 5

    o1, o2 = tmp_path / "o1" / "cabs.spans.json", tmp_path / "o2" / "cabs.spans.json"
    rc, out, err = run(capsys, "fit", traces, *ARGS, *charged, "--append", o1, "--through", "2024-03-10",
                       "--seed", "6", "--out-dir", tmp_path / "o2")  # fmt: skip
    assert rc == 0, err
    second, rec2 = _series(tmp_path / "o2" / "cabs.spans.json")
    # the same places, the same ids: the spans are the first run's
    assert second.regions()[0].tolist() == first.regions()[0].tolist()
    assert second.regions()[1].tolist() == first.regions()[1].tolist()
    table = np.array(rec2["table"]["noisy_mass"])
    assert table.shape == (2, 6) and rec2["released_periods"] == 6
    assert table[:, :4].tolist() == rec["table"]["noisy_mass"]  # the released columns are kept
    # every cab is in ~96 % of (place, day) pairs: ~193 distinct cabs a day at each place
    assert np.all(np.abs(table - 193) < 15 + rec2["table"]["interval_half_width"])
    assert rec2["period_spans"][4:] == [[0, 1], [0, 1]]

    # every file states the unit and the lifetime budget, and how much is released
    with open(tmp_path / "o2" / "cabs.periods.csv", newline="") as f:
        rows = list(csv.DictReader(f))  # a plain CSV: every row is the table's
    assert len(rows) == 12
    assert "each cab" in rows[0]["series"] and "unit protected: cab" in rows[0]["budget"]
    assert "epsilon=2" in rows[0]["budget"]
    assert "6 of 7 period(s) released" in rows[0]["appendable"]
    geo = json.loads((tmp_path / "o2" / "cabs.spans.geojson").read_text())["properties"]
    assert geo["unit_protected"] == "cab" and geo["lifetime_budget"] == {"epsilon": 2.0, "delta": 1e-5}
    assert geo["released_periods"] == 6

    # appending from the OLDER file again: the ledger knows days 8 and 9 were released
    rc, out, err = run(capsys, "fit", traces, *ARGS, *charged, "--append", o1, "--out-dir", tmp_path / "o3")
    assert rc == 2 and "already released the period(s) 2024-03-08" in err
    assert not (tmp_path / "o3").exists()
    # the last day, then nothing more: the plan ends there
    rc, out, err = run(capsys, "fit", traces, *ARGS, *charged, "--append", o2, "--out-dir", tmp_path / "o4")
    assert rc == 0, err
    o4 = tmp_path / "o4" / "cabs.spans.json"
    rc, out, err = run(capsys, "fit", traces, *ARGS, *charged, "--append", o4, "--out-dir", tmp_path / "o5")
    assert rc == 2 and "nothing to append" in err and not (tmp_path / "o5").exists()
    (account,) = read_ledger(ledger)
    assert len(account.releases) == 8
    # the whole series spent its lifetime budget and no more (by zCDP: rho adds)
    assert account.spent.epsilon == pytest.approx(2.0, rel=1e-9) and account.spent.epsilon <= 2.0 * (
        1 + 1e-12
    )
    assert math.fsum(r.cost.rho for r in account.releases) <= zcdp.rho_for(2.0, 1e-5)
    rc, out, err = run(capsys, "ledger", "show", ledger)
    assert "[series 1: spans]" in out and "[series 1: 2024-03-10T00:00]" in out
    assert "held" not in out and account.periods_to_come == {}  # all released: nothing held beyond


def test_an_append_reads_no_row_of_an_earlier_period(tmp_path, capsys):
    xy, cab, t = _rows()
    full = _write(tmp_path / "full.csv", xy, cab, t)
    # the same rows of days 5 and 6, and the rows of days 0 to 4 replaced by other rows
    rng = np.random.default_rng(9)
    old = t < START + 5 * DAY
    xy2 = xy.copy()
    xy2[old] = rng.uniform(0, 10, (int(old.sum()), 2))
    cab2 = np.where(old, rng.integers(0, 5000, t.size), cab)
    other = _write(tmp_path / "other.csv", xy2, cab2, t)
    rc, _, err = run(capsys, "fit", full, *ARGS, "--through", "2024-03-09", "--seed", "5", "--out-dir",
                     tmp_path / "start")  # fmt: skip
    assert rc == 0, err
    tables = []
    for name, source in (("a", full), ("b", other)):
        rc, _, err = run(capsys, "fit", source, *ARGS, "--append", tmp_path / "start" / "full.spans.json",
                         "--through", "2024-03-11", "--seed", "8", "--out-dir", tmp_path / name)  # fmt: skip
        assert rc == 0, err
        tables.append(_series(tmp_path / name / f"{source.stem}.spans.json")[1]["table"]["noisy_mass"])
    assert tables[0] == tables[1]  # the earlier days' rows changed nothing


@pytest.mark.parametrize(
    "change, words",
    [
        (["--epsilon", "1"], "lifetime_budget"),
        (["--table-share", "0.3"], "table_share"),
        (["--places-periods", "2"], "--places-periods"),
        (["--bounds", "0", "0", "11", "10"], "--bounds"),
    ],
)
def test_an_append_with_another_plan_is_refused_before_reading(traces, tmp_path, capsys, change, words):
    ledger = tmp_path / "budget.ledger"
    _init(capsys, ledger)
    charged = ["--ledger", ledger, "--dataset", "cabs"]
    rc, _, err = run(capsys, "fit", traces, *ARGS, *charged, "--through", "2024-03-07", "--seed", "5",
                     "--out-dir", tmp_path / "o1")  # fmt: skip
    assert rc == 0, err
    args = list(ARGS)
    if change[0] in args:
        i = args.index(change[0])
        args[i : i + len(change)] = change
    else:
        args += change
    rc, _, err = run(capsys, "fit", traces, *args, *charged, "--append", tmp_path / "o1" / "cabs.spans.json",
                     "--out-dir", tmp_path / "o2")  # fmt: skip
    assert rc == 2 and "do not give the plan" in err and words in err
    assert len(read_ledger(ledger)[0].releases) == 4  # nothing charged


def test_an_append_is_charged_where_the_series_was(traces, tmp_path, capsys):
    ledger = tmp_path / "budget.ledger"
    _init(capsys, ledger)
    rc, _, err = run(capsys, "fit", traces, *ARGS, "--ledger", ledger, "--dataset", "cabs", "--through",
                     "2024-03-07", "--seed", "5", "--out-dir", tmp_path / "o1")  # fmt: skip
    assert rc == 0, err
    rc, _, err = run(capsys, "fit", traces, *ARGS, "--append", tmp_path / "o1" / "cabs.spans.json",
                     "--out-dir", tmp_path / "o2")  # fmt: skip
    assert rc == 2 and "recorded in a ledger (series 1)" in err and not (tmp_path / "o2").exists()
    rc, _, err = run(capsys, "fit", traces, *ARGS, "--through", "2024-03-07", "--seed", "5", "--out-dir",
                     tmp_path / "free")  # fmt: skip
    assert rc == 0, err
    rc, _, err = run(capsys, "fit", traces, *ARGS, "--ledger", ledger, "--dataset", "cabs", "--append",
                     tmp_path / "free" / "cabs.spans.json", "--out-dir", tmp_path / "o3")  # fmt: skip
    assert rc == 2 and "started without a ledger" in err


@pytest.mark.parametrize(
    "add, words",
    [
        (["--places-periods", "3", "--through", "2024-03-06"], "the spans come from the first 3 day(s)"),
        (["--places-periods", "3", "--through", "2024-03-06T12:00"], "not the end of a period"),
        (["--places-periods", "3", "--through", "2024-03-12"], "not the end of a period"),
        (["--places-periods", "8"], "must be 1 to 7"),
        (["--places-periods", "3", "--histogram", "stability"], "not the stability histogram"),
    ],
)
def test_a_plan_that_cannot_be_kept_is_refused(traces, tmp_path, capsys, add, words):
    rc, _, err = run(capsys, "fit", traces, *ARGS[:-2], *add, "--out-dir", tmp_path / "o")
    assert rc == 2 and words in err, err
    assert not (tmp_path / "o" / "cabs.spans.json").exists()


def test_through_needs_an_appendable_series(traces, tmp_path, capsys):
    rc, _, err = run(
        capsys, "fit", traces, *ARGS[:-2], "--through", "2024-03-07", "--out-dir", tmp_path / "o"
    )
    assert rc == 2 and "--places-periods" in err


# --------------------------------------------------------------------------- #
# the plan and the ledger, from Python


def _plan(places=3, **kw):
    p = validate(dict(epsilon=2.0, delta=1e-5, eps=0.5, min_samples=30, max_cells_per_unit=8))
    periods = Periods("day", "2024-03-04", "2024-03-11")
    return p, plan_series(p, np.zeros(2), np.full(2, 10.0), periods, places=places, **kw)


def test_the_spans_and_every_period_together_fit_the_lifetime_rho_exactly():
    _, plan = _plan()
    rho = Fraction(zcdp.rho_for(2.0, 1e-5))
    assert plan.spans_cost is not None and plan.period_rho is not None
    assert Fraction(plan.spans_cost.rho) + 7 * Fraction(plan.period_rho) <= rho
    assert float(Fraction(plan.spans_cost.rho) + 7 * Fraction(plan.period_rho)) == pytest.approx(float(rho))


def test_per_period_columns_have_the_noise_of_the_flat_table_at_every_pair():
    # k = S per period at rho_b / T is sigma^2 = S T m^2 / (2 rho_b): the flat table's at K = S T
    _, appendable = _plan()
    _, flat = _plan(places=None)
    assert appendable.table_rho == pytest.approx(flat.table_rho)
    a, f = appendable.calibrated(4), flat.calibrated(4)
    assert a.k == 4 and f.k == 28
    assert a.sigma2 == pytest.approx(f.sigma2, rel=1e-9)


def test_each_period_is_bounded_on_its_own():
    # one unit in both spans every day: k = 1 pair counts in EACH period (not 1 over the horizon)
    T = 7
    spans = np.tile([0, 1, 1], T)
    period = np.repeat(np.arange(T), 3)
    units = np.zeros(3 * T, dtype=np.int64)
    key = periodtable.BoundingKey((1, 2), bytes(range(16)))
    cols = periodtable.bounded_columns(units, spans, period, 2, T, periodtable.TableBound((2, T), 1, 1), key)
    assert cols.shape == (2, T - 2) and cols.sum(axis=0).tolist() == [1] * (T - 2)
    both = periodtable.bounded_columns(units, spans, period, 0, T, periodtable.TableBound((2, T), 2, 5), key)
    assert both.tolist() == [[1] * T, [2] * T]  # m = 5 lets its 2 points in span 1 count
    # one unit changes each column by at most sqrt(k) m, however many periods it is in
    rng = np.random.default_rng(2)
    units = rng.integers(0, 30, 2000)
    spans = rng.integers(-1, 3, 2000)
    period = rng.integers(-1, T, 2000)
    bound = periodtable.TableBound((3, T), 2, 2)
    full = periodtable.bounded_columns(units, spans, period, 0, T, bound, key)
    for u in range(30):
        keep = units != u
        diff = full - periodtable.bounded_columns(units[keep], spans[keep], period[keep], 0, T, bound, key)
        assert np.all(np.sqrt((diff.astype(float) ** 2).sum(axis=0)) <= math.sqrt(2) * 2 + 1e-12)


def test_python_start_and_append_charge_one_series(tmp_path):
    xy, cab, t = _rows()
    p, plan = _plan()
    led = Ledger.create(tmp_path / "b.ledger", "cabs", 2.0, 1e-5, unit="cab")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded research noise, said by the release
        data = SeriesInput(xy, np.zeros(2), np.full(2, 10.0), {**p, "random_state": 3}, cab, t)
        s = start_series(data, plan, through="2024-03-07", ledger=led, unit_name="cab")
    assert s.table.shape == (s.model.n_spans, 3)
    later = append_periods(s.model, xy, cab, t, through="2024-03-09", ledger=led, random_state=4)
    assert later.table.shape == (s.model.n_spans, 5)
    assert later.table[:, :3].tolist() == s.table.tolist()
    releases = led.account().releases
    assert [r.period is None for r in releases] == [True] + [False] * 5
    assert {r.series_id for r in releases} == {1}
    with pytest.raises(BudgetExceeded, match="already released"):
        append_periods(s.model, xy, cab, t, ledger=led)
    with pytest.raises(ValueError, match="recorded in a ledger"):
        append_periods(later.model, xy, cab, t)


def test_the_ledger_refuses_a_series_beyond_its_plan_and_keeps_nothing_of_it(tmp_path):
    led = Ledger.create(tmp_path / "b.ledger", "cabs", 10.0, 1e-5, unit="cab")
    plan = {"cost": {"epsilon": 1.0, "delta": 1e-5, "rho": 0.01}}
    c = Cost(0.5, 1e-5, 0.004)
    sid, rows = led.reserve_series(
        [(None, c), ("d1", c)], command="t", params={}, unit_column="cab", plan=plan
    )
    assert len(rows) == 2
    with pytest.raises(BudgetExceeded, match="planned at rho=0.01"):
        led.reserve_series([("d2", c)], command="t", params={}, unit_column="cab", series_id=sid)
    with pytest.raises(BudgetExceeded, match="already released its spans"):
        led.reserve_series([(None, Cost(0.1, 1e-5, 0.0001))], command="t", params={}, unit_column="cab",
                           series_id=sid)  # fmt: skip
    # refused inside the transaction: a new series' row is rolled back with its releases
    with pytest.raises(BudgetExceeded):
        led.reserve_series([("d1", c)] * 3, command="t", params={}, unit_column="cab", plan=plan)
    assert len(led.account().releases) == 2
    import sqlite3

    con = sqlite3.connect(tmp_path / "b.ledger")
    assert con.execute("SELECT count(*) FROM series").fetchone()[0] == 1
    con.close()


def test_the_pictures_of_a_series_with_one_period_released_keep_the_guarantee_short():
    """After its first period, an appendable series' small multiples are one
    panel: the figure stays three panels wide, so the guarantee above it is a
    few lines, not a column of twelve over a 2.6-inch panel."""
    import matplotlib.pyplot as plt

    from dpdbscan.render.periodplot import MIN_WIDE, PANEL_INCHES, plot_periods

    xy, cab, t = _rows()
    p, plan = _plan(places=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded research noise, said by the release
        data = SeriesInput(xy, np.zeros(2), np.full(2, 10.0), {**p, "random_state": 3}, cab, t)
        s = start_series(data, plan, through="2024-03-05", unit_name="cab")
    assert len(s.model.metadata["series"]["period_spans"]) == 1
    fig = plot_periods(s.model)
    try:
        assert fig.get_size_inches()[0] == pytest.approx(MIN_WIDE * PANEL_INCHES)
        title = fig.texts[0].get_text()
        assert "each cab is protected over the whole planned series" in " ".join(title.split())
        assert len(title.splitlines()) <= 5
    finally:
        plt.close(fig)


def test_the_events_note_of_a_series_says_all_periods_and_the_places_periods(tmp_path, capsys):
    """--places-periods N finds the places from the first N periods, but the
    events (here pick-ups) are made from every period's rows: the private
    note counts them all, and says so."""
    xy, cab, t = _rows(seed=3, n=6000)
    status = np.random.default_rng(99).integers(0, 2, t.size)
    path = tmp_path / "trips.csv"
    with open(path, "w") as f:
        f.write("x,y,cab,time,occupied\n")
        for i in range(t.size):
            f.write(f"{xy[i, 0]:.4f},{xy[i, 1]:.4f},c{cab[i]},{t[i]:.0f},{status[i]}\n")
    rc, _, err = run(capsys, "fit", path, *ARGS, "--trip-ends", "occupied", "--through", "2024-03-08",
                     "--seed", "5", "--out-dir", tmp_path / "o")  # fmt: skip
    assert rc == 0, err
    (said,) = [line for line in err.splitlines() if "of the units found in" in line]
    assert said.startswith("[private: do not publish]")
    assert "(the events in all periods; the places are found from those of the first 3 period(s))" in said


def test_a_started_and_an_appended_series_count_the_rows_outside_the_horizon(tmp_path, capsys):
    """The rows whose time is outside the horizon (or missing) are dropped
    from an appendable series, start and append alike, and counted in a
    private note after the release (in-memory ``--per`` said nothing)."""
    xy, cab, t = _rows()
    path = _write(tmp_path / "cabs.csv", xy, cab, t)
    outside = int(np.count_nonzero((t < START) | (t >= START + 7 * DAY)))
    with open(path, "a") as f:
        f.write("2.0,2.0,c1,\n")  # no time
    want = [
        f"[private: do not publish] {outside + 1:,} row(s) whose time is missing, not a time, or outside "
        "the horizon (--from, --to) are dropped from the series"
    ]
    rc, _, err = run(capsys, "fit", path, *ARGS, "--through", "2024-03-08", "--seed", "5",
                     "--out-dir", tmp_path / "o1")  # fmt: skip
    assert rc == 0, err
    assert [line for line in err.splitlines() if "dropped from the series" in line] == want
    rc, _, err = run(capsys, "fit", path, *ARGS, "--append", tmp_path / "o1" / "cabs.spans.json",
                     "--through", "2024-03-10", "--seed", "6", "--out-dir", tmp_path / "o2")  # fmt: skip
    assert rc == 0, err
    assert [line for line in err.splitlines() if "dropped from the series" in line] == want
