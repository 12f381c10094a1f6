"""``fit --per ... --tz ZONE``: times without an offset are the zone's local
clock (the naivetz helper; docs/user-guide.md "Hotspots over time").

T-Drive's times are Beijing's clock written without an offset. Read as UTC
(before), ``--per day --tz Asia/Shanghai`` cut each day at 08:00 of that
clock: a fix at 2008-02-03 23:30 fell in Feb 4's period. Now it falls in
Feb 3's, at every door that reads times with a zone: the command line's
reader (numpy), the Dask workers, ``check --per`` and the Python API's
periods (:class:`dpdbscan.series.PeriodOf`). Times with an offset and unix
seconds are instants, read alike with or without ``--tz``.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpdbscan import load_model
from dpdbscan.cli import build_parser
from dpdbscan.cli.fitoptions import FitOptions
from dpdbscan.params.parameters import validate
from dpdbscan.prepare import prepare
from dpdbscan.series import PeriodOf, SeriesInput, fit_series, plan_series
from dpdbscan.traces.periods import Periods
from tests.clirun import run

SHANGHAI, LA = "Asia/Shanghai", "America/Los_Angeles"
BEIJING = ZoneInfo(SHANGHAI)
HORIZON = ["--per", "day", "--from", "2008-02-03", "--to", "2008-02-05", "--tz", SHANGHAI]
FIT = ["--unit", "cab", "--max-cells-per-unit", "8", "--time", "time", "--bounds", "0", "0", "10", "10",
       "--eps", "0.5", "--min-samples", "30", "--epsilon", "2", "--delta", "1e-5", "--no-png",
       "--max-pairs-per-unit", "3", "--seed", "11", "--columns", "x", "y"]  # fmt: skip


def beijing_traces(n=6000, seed=70_011):
    """200 cabs at two places, each fix at a Beijing wall-clock time from
    Feb 2 18:00 to Feb 5 06:00 (so that every day's evening and morning
    hours are there, where reading the clock as UTC moves a fix's day)."""
    rng = np.random.default_rng(seed)
    cab = rng.integers(0, 200, n)
    xy = np.array([[2.0, 2.0], [7.0, 7.0]])[rng.integers(0, 2, n)] + rng.normal(0, 0.3, (n, 2))
    start = dt.datetime(2008, 2, 2, 18)
    clock = [start + dt.timedelta(seconds=int(s)) for s in rng.uniform(0, 60 * 3600, n)]
    return xy, cab, clock


def write_csv(path, traces, how):
    """Times as Beijing's clock without an offset (T-Drive's text), with its
    offset, or as unix seconds."""
    xy, cab, clock = traces
    with open(path, "w") as f:
        f.write("x,y,cab,time\n")
        for i, c in enumerate(clock):
            if how == "naive":
                when = c.strftime("%Y-%m-%d %H:%M:%S")
            elif how == "offset":
                when = c.replace(tzinfo=BEIJING).isoformat()
            else:
                when = f"{c.replace(tzinfo=BEIJING).timestamp():.0f}"
            f.write(f"{float(xy[i, 0])!r},{float(xy[i, 1])!r},c{cab[i]},{when}\n")
    return path


def write_parquet(path, traces, zoned=False):
    """Typed times: naive timestamps of Beijing's clock, or instants (UTC)."""
    xy, cab, clock = traces
    when = [c.replace(tzinfo=BEIJING).astimezone(dt.UTC).replace(tzinfo=None) if zoned else c for c in clock]
    typ = pa.timestamp("us", tz="UTC") if zoned else pa.timestamp("us")
    table = pa.table({"x": xy[:, 0], "y": xy[:, 1], "cab": cab.astype(np.int64), "time": pa.array(when, typ)})
    pq.write_table(table, path)
    return path


def door_times(path, *args):
    """The times the command line's door reads (float seconds), by the real
    parser and options of ``fit PATH ARGS``."""
    argv = ["fit", str(path), "--eps", "0.5", "--min-samples", "30", "--bounds", "0", "0", "170", "80"]
    argv += [str(a) for a in args]
    args = build_parser().parse_args(argv)
    args.no_progress = args.quiet = True  # as the command's entry sets them
    opts = FitOptions.from_args(args)
    return prepare(opts.source(), eta=4.0).times


def one_row(tmp_path, text, name="one.csv"):
    path = tmp_path / name
    path.write_text(f"x,y,cab,time\n1.0,1.0,c1,{text}\n")
    return path


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_fix_at_2330_beijing_time_falls_in_that_days_period(tmp_path, fmt):
    evening = dt.datetime(2008, 2, 3, 23, 30)
    if fmt == "csv":
        path = one_row(tmp_path, "2008-02-03 23:30:00")
        header = ["--header"]
    else:
        path = write_parquet(tmp_path / "one.parquet", (np.ones((1, 2)), np.ones(1, dtype=int), [evening]))
        header = []
    periods = Periods("day", "2008-02-03", "2008-02-05", SHANGHAI)
    args = [*header, "--columns", "x", "y", "--unit", "cab", "--time", "time", *HORIZON]
    local = door_times(path, *args)
    assert local.tolist() == [evening.replace(tzinfo=BEIJING).timestamp()]
    assert periods.index(local).tolist() == [0]  # Feb 3 (before: 1, Feb 4 08:00-)
    # without --tz (the UTC calendar) the clock is read as UTC, as before
    utc = door_times(path, *args[:-2])
    assert utc.tolist() == [evening.replace(tzinfo=dt.UTC).timestamp()]


@pytest.mark.parametrize(
    "text", ["2008-02-03T23:30:00+08:00", "2008-02-03 15:30:00Z", "2008-02-03 10:30:00-0500", "1202052600"]
)
def test_times_with_an_offset_and_unix_seconds_are_read_alike_with_tz(tmp_path, text):
    # beside a time without an offset, which --tz moves
    path = tmp_path / "two.csv"
    path.write_text(f"x,y,cab,time\n1.0,1.0,c1,{text}\n1.0,1.0,c1,2008-02-03 23:30:00\n")
    base = ["--header", "--columns", "x", "y", "--unit", "cab", "--time", "time"]
    local = door_times(path, *base, *HORIZON)
    utc = door_times(path, *base, *HORIZON[:-2])  # the same series in UTC
    assert local.tolist() == [1202052600.0, 1202052600.0]
    assert utc.tolist() == [1202052600.0, 1202052600.0 + 8 * 3600]
    evening = [dt.datetime(2008, 2, 3, 23, 30)] * 2
    typed = (np.ones((2, 2)), np.ones(2, dtype=int), evening)
    zoned = write_parquet(tmp_path / "zoned.parquet", typed, zoned=True)
    naive = write_parquet(tmp_path / "naive.parquet", typed)
    assert door_times(zoned, *base[1:], *HORIZON).tolist() == [1202052600.0] * 2
    assert door_times(naive, *base[1:], *HORIZON).tolist() == [1202052600.0] * 2


def test_plt_times_stay_utc_as_the_format_says(tmp_path):
    # GeoLife's PLT times are GMT by the format: --tz never moves them; the same text in a CSV file moves
    head = "Geolife trajectory\nWGS 84\nAltitude is in Feet\nReserved 3\n0,2,255,My Track,0,0,2,8421376\n0\n"
    plt = tmp_path / "trace.plt"
    plt.write_text(head + "39.9,116.3,0,100,39481.6458333333,2008-02-03,15:30:00\n")
    assert door_times(plt, "--geo", "--time", "time", *HORIZON).tolist() == [1202052600.0]
    csv = one_row(tmp_path, "2008-02-03 15:30:00")
    got = door_times(csv, "--header", "--columns", "x", "y", "--time", "time", *HORIZON)
    assert got.tolist() == [1202052600.0 - 8 * 3600]


def test_check_per_counts_the_rows_outside_a_horizon_of_local_days(tmp_path, capsys):
    path = write_csv(tmp_path / "cabs.csv", beijing_traces(), "naive")
    rc, out, err = run(capsys, "check", path, "--header", "--columns", "x", "y", *FIT[:4], "--time", "time",
                       *HORIZON, "--bounds", "0", "0", "10", "10", "--eps", "0.5", "--min-samples", "30",
                       "--epsilon", "2", "--delta", "1e-5")  # fmt: skip
    assert rc == 0, err
    xy, cab, clock = beijing_traces()
    outside = sum(not dt.datetime(2008, 2, 3) <= c < dt.datetime(2008, 2, 5) for c in clock)
    line = next(x for x in err.splitlines() if "periods   :" in x)
    assert f" {outside:,} row(s) with no time or outside the horizon" in line


def release_of(capsys, tmp_path, source, name, *extra):
    rc, out, err = run(
        capsys, "fit", source, *FIT, *HORIZON, *extra, "--out-dir", tmp_path / name, "--name", "cabs"
    )
    assert rc == 0, err
    return load_model(tmp_path / name / "cabs.spans.json"), err


def assert_same_series(got, want):
    assert got.n_spans == want.n_spans >= 1
    g, w = got.metadata["series"], want.metadata["series"]
    assert g["table"]["noisy_mass"] == w["table"]["noisy_mass"]
    assert g["period_spans"] == w["period_spans"]
    assert g["statement"] == w["statement"]


def test_naive_local_times_release_what_the_same_times_with_their_offset_release(tmp_path, capsys):
    traces = beijing_traces()
    truth, _ = release_of(
        capsys, tmp_path, write_csv(tmp_path / "offset.csv", traces, "offset"), "offset", "--header"
    )
    naive, err = release_of(
        capsys, tmp_path, write_csv(tmp_path / "naive.csv", traces, "naive"), "naive", "--header"
    )
    assert_same_series(naive, truth)
    # typed: naive timestamps of the clock against the instants (the units are integers there)
    zoned = release_of(
        capsys, tmp_path, write_parquet(tmp_path / "zoned.parquet", traces, zoned=True), "zoned"
    )[0]
    parquet, _ = release_of(capsys, tmp_path, write_parquet(tmp_path / "naive.parquet", traces), "parquet")
    assert_same_series(parquet, zoned)
    outside = sum(not dt.datetime(2008, 2, 3) <= c < dt.datetime(2008, 2, 5) for c in traces[2])
    assert f"{outside:,} row(s) whose time is missing, not a time, or outside the horizon" in err
    assert naive.metadata["series"]["periods"]["tz"] == SHANGHAI


@pytest.fixture
def on_client(client, monkeypatch):
    """``--backend dask`` on the test cluster, with small CSV blocks (several partitions)."""
    pytest.importorskip("distributed")
    import dpdbscan.cli.fit as cli_fit

    made = cli_fit.dask_backend

    def backend(opts):
        b = made(opts)
        b.client, b.blocksize = client, 20_000
        return b

    monkeypatch.setattr(cli_fit, "dask_backend", backend)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_dask_reads_naive_times_as_the_local_clock_as_in_memory(tmp_path, capsys, on_client, fmt):
    traces = beijing_traces()
    if fmt == "csv":
        source, header = write_csv(tmp_path / "naive.csv", traces, "naive"), ["--header"]
        instants = write_csv(tmp_path / "offset.csv", traces, "offset")
    else:
        source, header = write_parquet(tmp_path / "naive.parquet", traces), []
        instants = write_parquet(tmp_path / "zoned.parquet", traces, zoned=True)
    truth, _ = release_of(capsys, tmp_path, instants, "instants", *header)
    memory, _ = release_of(capsys, tmp_path, source, "memory", *header)
    dask, _ = release_of(capsys, tmp_path, source, "dask", *header, "--backend", "dask")
    assert_same_series(dask, memory)
    assert_same_series(dask, truth)


FOLD = Periods("hour", "2008-11-02", "2008-11-02T04:00", LA)  # 00 PDT, 01 PDT, 01 PST, 02 PST, 03 PST
GAP = Periods("hour", "2008-03-09", "2008-03-09T05:00", LA)  # 00 PST, 01 PST, 03 PDT, 04 PDT


@pytest.mark.parametrize(
    "form",
    [
        lambda v: v,
        lambda v: pa.array(v),
        lambda v: pd.Series(v, dtype="string[pyarrow]"),  # a Dask worker's text column
        lambda v: pd.Series(pd.to_datetime(v)),  # a Dask worker's naive Parquet timestamps
        lambda v: np.array(v, dtype="datetime64[s]"),
    ],
    ids=["list", "arrow", "pandas text", "pandas timestamps", "datetime64"],
)
def test_a_fold_reads_its_first_hour_and_a_gap_moves_forward(form):
    assert FOLD.n_periods == 5 and GAP.n_periods == 4
    fold = PeriodOf(FOLD)(form(["2008-11-02T00:59:59", "2008-11-02T01:30:00", "2008-11-02T02:00:00"]))
    assert fold.tolist() == [0, 1, 3]  # 01:30 is the first 01:30 (PDT); the PST hour gets no naive time
    gap = PeriodOf(GAP)(form(["2008-03-09T01:59:59", "2008-03-09T02:30:00", "2008-03-09T03:00:00"]))
    assert gap.tolist() == [1, 2, 2]  # 02:30 never was: read as 03:30 PDT


def test_the_python_series_reads_naive_times_in_the_periods_zone():
    xy, cab, clock = beijing_traces()
    text = [c.strftime("%Y-%m-%dT%H:%M:%S") for c in clock]
    seconds = [c.replace(tzinfo=BEIJING).timestamp() for c in clock]
    p = validate(dict(epsilon=2.0, delta=1e-5, eps=0.5, min_samples=30, max_cells_per_unit=8, random_state=3))
    lower, upper = np.zeros(2), np.full(2, 10.0)
    plan = plan_series(
        p, lower, upper, Periods("day", "2008-02-03", "2008-02-05", SHANGHAI), max_pairs_per_unit=3
    )
    a = fit_series(SeriesInput(xy, lower, upper, p, cab, text), plan)
    b = fit_series(SeriesInput(xy, lower, upper, p, cab, seconds), plan)
    assert a.n_no_period == b.n_no_period > 0
    np.testing.assert_array_equal(a.table, b.table)
    assert_same_series(a.model, b.model)


def test_stops_across_a_clock_change_read_the_local_clock_as_documented(tmp_path):
    """docs/user-guide.md: read as the local clock, a stop across the spring
    gap is as long as it was (it read an hour longer as UTC); one whose
    points are in the fall-back's repeated hour's second pass reads up to an
    hour longer (that pass is read as the first, fold=0)."""
    rows = []
    # cab a, 2008-03-09, one spot from 01:40 PST to 03:10 PDT: 30 minutes (the clock skips 02:00-03:00)
    for clock in ("01:40", "01:45", "01:50", "01:55", "03:00", "03:05", "03:10"):
        rows.append(f"1.0,1.0,a,2008-03-09 {clock}:00")
    rows.append("5.0,5.0,a,2008-03-09 03:15:00")
    # cab b, 2008-11-02, one spot from 01:30 PST (the second 01:30) to 02:10 PST: 40 minutes
    for clock in ("01:30", "01:40", "01:50", "02:00", "02:10"):
        rows.append(f"1.0,1.0,b,2008-11-02 {clock}:00")
    rows.append("5.0,5.0,b,2008-11-02 02:15:00")
    path = tmp_path / "clock.csv"
    path.write_text("x,y,cab,time\n" + "\n".join(rows) + "\n")
    args = ["--header", "--columns", "x", "y", "--unit", "cab", "--time", "time", "--stops", "1", "1h",
            "--per", "month", "--from", "2008-03-01", "--to", "2008-12-01"]  # fmt: skip

    def stopped(*extra):
        argv = ["fit", str(path), "--eps", "0.5", "--min-samples", "30", "--bounds", "0", "0", "10", "10"]
        parsed = build_parser().parse_args(argv + args + list(extra))
        parsed.no_progress = parsed.quiet = True
        pts = prepare(FitOptions.from_args(parsed).source(), eta=4.0)
        return sorted(u.decode() if isinstance(u, bytes) else str(u) for u in pts.units.to_pylist())

    # as UTC: a's 30 minutes read 90 (a stop of an hour), b's 40 minutes read 40
    assert stopped() == ["a"]
    # as the local clock: a's 30 minutes are 30; b's second-pass 01:30 reads as the first, so 100
    assert stopped("--tz", LA) == ["b"]


def test_dask_reads_a_parquet_date_column_with_one_date_beyond_the_years(tmp_path, capsys, on_client):
    """Neighbouring inputs (round 17): D, a Parquet file whose time column is
    a date32 (each fix's Beijing day); D', D and one more cab's row dated
    date32's largest day. A Dask worker's pandas column of Arrow dates made
    each a Python date, and that one raised OverflowError: D released, D'
    failed the fit with a traceback. Now the date is no day of the horizon,
    and D' releases D's series, as memory does."""
    xy, cab, clock = beijing_traces()

    def write(path, extra):
        days = [(c.date() - dt.date(1970, 1, 1)).days for c in clock] + extra
        x, y = [*xy[:, 0], *[2.0] * len(extra)], [*xy[:, 1], *[2.0] * len(extra)]
        cabs = [*cab.astype(np.int64), *[10_000] * len(extra)]
        pq.write_table(pa.table({"x": x, "y": y, "cab": cabs, "time": pa.array(days, pa.date32())}), path)
        return path

    d, d2 = write(tmp_path / "d.parquet", []), write(tmp_path / "d2.parquet", [2**31 - 1])
    on_dask, _ = release_of(capsys, tmp_path, d, "dask", "--backend", "dask")
    grown, _ = release_of(capsys, tmp_path, d2, "dask2", "--backend", "dask")
    assert_same_series(grown, on_dask)
    assert_same_series(grown, release_of(capsys, tmp_path, d2, "memory")[0])
