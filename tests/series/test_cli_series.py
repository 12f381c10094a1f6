"""``dpdbscan fit --per``: a series over time end to end on a small CSV, the
ledger charged once for it."""

from __future__ import annotations

import csv
import datetime as dt
import json

import numpy as np
import pytest

from dpdbscan import load_model
from dpdbscan.cli.fitseries import PERIODS_COLUMNS
from dpdbscan.ledger import read_ledger
from tests.clirun import run

START = dt.datetime(2024, 3, 4, tzinfo=dt.UTC).timestamp()


@pytest.fixture
def traces(tmp_path):
    """200 cabs, two places, rows over 9 days (one before and one after the
    7-day horizon), times as ISO text or unix seconds."""
    rng = np.random.default_rng(0)
    n = 12000
    cab = rng.integers(0, 200, n)
    xy = np.array([[2.0, 2.0], [7.0, 7.0]])[rng.integers(0, 2, n)] + rng.normal(0, 0.3, (n, 2))
    t = START + rng.uniform(-86400, 8 * 86400, n)
    path = tmp_path / "cabs.csv"
    with open(path, "w") as f:
        f.write("x,y,cab,time\n")
        for i in range(n):
            when = (
                dt.datetime.fromtimestamp(t[i], dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                if i % 2
                else f"{t[i]:.0f}"
            )
            f.write(f"{xy[i, 0]:.4f},{xy[i, 1]:.4f},c{cab[i]},{when}\n")
    return path


ARGS = ["--header", "--columns", "x", "y", "--unit", "cab", "--max-cells-per-unit", "8", "--time", "time",
        "--per", "day", "--from", "2024-03-04", "--to", "2024-03-11", "--bounds", "0", "0", "10", "10",
        "--eps", "0.5", "--min-samples", "30", "--epsilon", "2", "--delta", "1e-5", "--no-png",
        "--max-pairs-per-unit", "7"]  # fmt: skip


def test_a_series_end_to_end_charged_once(traces, tmp_path, capsys):
    ledger = tmp_path / "budget.ledger"
    rc, out, err = run(capsys, "ledger", "init", ledger, "--dataset", "cabs", "--epsilon", "2",
                       "--delta", "1e-5", "--unit", "cab")  # fmt: skip
    assert rc == 0
    # seeded, as below: the 14 cells' intervals and the two spans fail now and then unseeded
    argv = ["fit", traces, *ARGS, "--seed", "5", "--out-dir", tmp_path / "out", "--ledger", ledger,
            "--dataset", "cabs"]  # fmt: skip
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    assert "series  : (epsilon=2, delta=1e-05)-differential privacy for each cab" in out
    # both parts' bounds on standard output too (the table's pairs per unit were in no line)
    assert "  protects: person-level: each cab is protected over the whole series" in out
    assert "the table at k=7 (span, period) pairs and m=1 point per pair per cab" in out
    model = load_model(tmp_path / "out" / "cabs.spans.json")
    series = model.metadata["series"]
    assert series["unit"] == "cab" and series["lifetime_budget"] == {"epsilon": 2.0, "delta": 1e-5}
    assert series["periods"]["n_periods"] == 7 and model.n_spans == 2
    table = np.array(series["table"]["noisy_mass"])
    assert table.shape == (2, 7)
    # the spans' own release is the spans' share, below the lifetime epsilon
    assert model.release.epsilon < 2.0
    # each cab is in about 70 % of (span, day) pairs over 7 days (~8 rows a day per place):
    # k = 7 of its ~10 pairs are kept, so a place's day counts ~100 cabs, give or take the noise
    h = series["table"]["interval_half_width"]
    assert np.all(np.abs(table - 100) < 30 + h)

    with open(tmp_path / "out" / "cabs.periods.csv", newline="") as f:
        rows = list(csv.DictReader(f))  # a plain CSV: no comment lines for a reader to take as data
    assert list(rows[0]) == list(PERIODS_COLUMNS)
    assert len(rows) == 14 and rows[0]["period_start"] == "2024-03-04T00:00:00+00:00"
    # every row states the unit and the budget (the same words in each)
    for r in rows:
        assert r["series"].startswith("dpdbscan series: (epsilon=2, delta=1e-05)")
        assert "each cab" in r["series"]
        assert "unit protected: cab" in r["budget"] and r["appendable"] == ""
        assert r["protects"].startswith("person-level: each cab is protected over the whole series")
        assert "(7 day(s) from 2024-03-04 to 2024-03-11, UTC)" in r["protects"]
    assert len({tuple(r[c] for c in PERIODS_COLUMNS[6:]) for r in rows}) == 1
    # pandas (where installed) reads it as the table without a comment option
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(tmp_path / "out" / "cabs.periods.csv")
    assert frame.shape == (14, len(PERIODS_COLUMNS))
    assert frame["noisy_mass"].tolist() == table.ravel().tolist()
    assert [int(r["noisy_mass"]) for r in rows] == table.ravel().tolist()
    assert all(int(r["high"]) - int(r["low"]) == 2 * h for r in rows)
    geo = json.loads((tmp_path / "out" / "cabs.spans.geojson").read_text())
    assert geo["properties"]["unit_protected"] == "cab"
    assert geo["properties"]["lifetime_budget"] == {"epsilon": 2.0, "delta": 1e-5}

    (account,) = read_ledger(ledger)
    assert len(account.releases) == 1  # one charge for the whole series
    (release,) = account.releases
    assert release.status == "written" and (release.cost.epsilon, release.cost.delta) == (2.0, 1e-5)
    assert release.params["series"]["periods"]["per"] == "day"
    assert any(f.endswith("cabs.periods.csv") for f in release.files)
    # a second identical series does not fit the lifetime budget: refused, nothing written
    rc, out, err = run(
        capsys, *argv[:-6], "--out-dir", tmp_path / "again", "--ledger", ledger, "--dataset", "cabs"
    )
    assert rc == 2 and "refuses" in err
    assert not (tmp_path / "again").exists() or not any((tmp_path / "again").iterdir())


@pytest.mark.parametrize(
    "drop, add, words",
    [
        (["--unit", "cab"], [], "--unit"),
        (["--time", "time"], [], "--time"),
        (["--to", "2024-03-11"], [], "--from DATE --to DATE"),
        ([], ["--tz", "Nowhere/Atlantis"], "unknown time zone"),
        (["--to", "2024-03-11"], ["--to", "2024-03-11T12:00"], "not the start of a period"),
    ],
)
def test_refused_before_reading(traces, tmp_path, capsys, drop, add, words):
    args = list(ARGS)
    for i in range(0, len(drop), 2):
        j = args.index(drop[i])
        del args[j : j + 2]
    rc, out, err = run(capsys, "fit", traces, *args, *add, "--out-dir", tmp_path / "out")
    assert rc == 2 and words in err
    assert "read" not in err.split("error")[0]  # said before the file is read
    assert not (tmp_path / "out" / "cabs.spans.json").exists()


@pytest.mark.parametrize("command", ["fit", "check", "forecast"])
@pytest.mark.parametrize(
    "given",
    [["--tz", "Asia/Shanghai"], ["--from", "2024-03-04"], ["--from", "2024-03-04", "--to", "2024-03-11"]],
)
def test_the_options_of_per_without_per_are_refused(traces, tmp_path, capsys, command, given):
    """``--tz``, ``--from`` and ``--to`` shape only ``--per``'s series: without
    it they were accepted and did nothing (``--tz`` did not read naive times
    as the zone's clock), so a release was made that the user did not ask
    for. Refused from the options alone, before anything is read or written."""
    drop = ("--per", "day", "--from", "2024-03-04", "--to", "2024-03-11", "--time", "time",
            "--max-pairs-per-unit", "7")  # fmt: skip
    args = [a for a in ARGS if a not in drop]
    if command == "forecast":
        rc, out, err = run(capsys, "forecast", "--bounds", "0", "0", "10", "10", "--eps", "0.5",
                           "--min-samples", "30", *given)  # fmt: skip
    elif command == "check":
        args.remove("--no-png")  # check writes nothing
        rc, out, err = run(capsys, command, traces, *args, *given)
    else:
        rc, out, err = run(capsys, command, traces, *args, *given, "--out-dir", tmp_path / "out")
    assert rc == 2 and out == ""
    assert ("options of --per" in err or "an option of --per" in err) and "without --per" in err
    assert "read" not in err.split("error")[0]  # said before the file is read
    assert not (tmp_path / "out").exists()


SERIES_ONLY = [
    ["--table-share", "0.3"],
    ["--max-pairs-per-unit", "3"],
    ["--max-points-per-pair", "2"],
    ["--places-periods", "2"],
    ["--through", "2024-03-06"],
    ["--append", "week1.spans.json"],
    ["--table-share", "0.4", "--max-points-per-pair", "1"],  # their defaults, given
]


@pytest.mark.parametrize("command", ["fit", "check", "forecast"])
@pytest.mark.parametrize("given", SERIES_ONLY)
def test_the_series_options_without_per_are_refused(traces, tmp_path, capsys, command, given):
    """The table's share and bounds and an appendable series' options shape
    only ``--per``'s series. Without it they were accepted and did nothing:
    ``--append week1.spans.json`` made a fresh release of the whole file
    (charged to a ledger as one) instead of appending a week, and
    ``--places-periods 2`` made the private note say the places came from
    the first 2 periods. Refused from the options alone, before anything is
    read, charged or written (check and forecast have no --through or
    --append: argparse refuses those there)."""
    if command != "fit" and given[0] in ("--through", "--append"):
        pytest.skip("a fit option only")
    drop = ("--per", "day", "--from", "2024-03-04", "--to", "2024-03-11", "--max-pairs-per-unit", "7")
    args = [a for a in ARGS if a not in drop]
    ledger = tmp_path / "budget.ledger"
    assert run(capsys, "ledger", "init", ledger, "--dataset", "cabs", "--epsilon", "9", "--delta", "1e-4",
               "--unit", "cab")[0] == 0  # fmt: skip
    if command == "forecast":
        rc, out, err = run(capsys, "forecast", "--bounds", "0", "0", "10", "10", "--eps", "0.5",
                           "--min-samples", "30", "--unit", "cab", "--max-cells-per-unit", "8",
                           "--delta", "1e-5", *given)  # fmt: skip
    elif command == "check":
        args.remove("--no-png")  # check writes nothing
        rc, out, err = run(capsys, command, traces, *args, "--stops", "0.1", "5min", *given)
    else:
        rc, out, err = run(capsys, command, traces, *args, "--stops", "0.1", "5min", *given, "--out-dir",
                           tmp_path / "out", "--ledger", ledger, "--dataset", "cabs")  # fmt: skip
    assert rc == 2 and out == "", err
    assert ("options of --per" in err or "an option of --per" in err) and "without --per" in err
    assert all(o in err for o in given if o.startswith("--"))
    assert "read" not in err.split("error")[0]  # said before the file is read
    assert not (tmp_path / "out").exists()
    assert read_ledger(ledger)[0].releases == []  # nothing charged


def test_every_pair_counts_the_distinct_cabs(traces, tmp_path, capsys):
    args = list(ARGS)
    args[args.index("--max-pairs-per-unit") + 1] = "all"
    # seeded: 14 cells each within its 95% interval (plus the data's spread) fails now and then
    args += ["--seed", "5"]
    rc, out, err = run(capsys, "fit", traces, *args, "--out-dir", tmp_path / "out")
    assert rc == 0, err
    series = load_model(tmp_path / "out" / "cabs.spans.json").metadata["series"]
    t = series["table"]
    assert t["max_pairs_per_unit"] == 2 * 7  # S x T, fixed once the 2 spans were released
    assert t["l2_sensitivity"] == pytest.approx(14**0.5)
    # ~47 rows of a cab in the horizon, ~3.3 per place and day: ~96 % of the 200 cabs each day
    table = np.array(t["noisy_mass"])
    assert np.all(np.abs(table - 193) < 15 + t["interval_half_width"])


def test_the_rows_dropped_for_their_time_are_counted_in_a_private_note(traces, tmp_path, capsys):
    """A series drops the rows whose time is missing, not a time, or outside
    the horizon; the in-memory path said nothing of them. Now it counts
    them, after the release, in a private note that quotes no time."""
    lines = traces.read_text().splitlines()
    times = [line.rsplit(",", 1)[1] for line in lines[1:]]
    seconds = [
        float(t)
        if t.isdigit()
        else dt.datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
        for t in times
    ]
    end = dt.datetime(2024, 3, 11, tzinfo=dt.UTC).timestamp()
    outside = sum(not START <= s < end for s in seconds)
    secret = "SECRET-TIME-3"
    with open(traces, "a") as f:
        f.write(f"2.0,2.0,c1,\n2.0,2.0,c1,{secret}\n")  # no time, and one that is not a time
    rc, out, err = run(capsys, "fit", traces, *ARGS, "--seed", "5", "--out-dir", tmp_path / "o")
    assert rc == 0, err
    said = [line for line in err.splitlines() if "dropped from the series" in line]
    assert 0 < outside < len(times)
    assert said == [
        f"[private: do not publish] {outside + 2:,} row(s) whose time is missing, not a time, or outside "
        "the horizon (--from, --to) are dropped from the series"
    ]
    assert secret not in out + err


def test_a_series_of_stops_says_it_counts_the_stops_in_its_periods(traces, tmp_path, capsys):
    """With --stops (or --trip-ends) a series drops the events whose time is
    outside its horizon: the first note said all the stops made "are
    counted", and the one after the release called the dropped stops
    "row(s)". Both say what is counted now."""
    rc, out, err = run(capsys, "fit", traces, *ARGS, "--stops", "1", "5min", "--seed", "5",
                       "--out-dir", tmp_path / "o")  # fmt: skip
    assert rc == 0, err
    (made,) = [line for line in err.splitlines() if "of the units found in" in line]
    assert (
        "rows are counted" not in made and "the series counts those whose time falls in its periods" in made
    )
    n_made = int(made.split("] ")[1].split(" ")[0].replace(",", ""))
    (dropped,) = [line for line in err.splitlines() if "dropped from the series" in line]
    n_dropped = int(dropped.split("] ")[1].split(" ")[0].replace(",", ""))
    assert "stop(s) whose time is missing, not a time, or outside the horizon" in dropped
    assert 0 < n_dropped < n_made  # rows of the days before and after the horizon make stops there
