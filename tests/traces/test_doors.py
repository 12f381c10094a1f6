"""Stops and trip ends through every door: the estimator, fit_lonlat, the
command line's fit, check and forecast. A door's release with ``events``
must equal the release of the events themselves (made by
``pipeline.events_of``) at the same seed: the events reach the mechanism
before bounding, and nothing else changes. Every refusal comes before a row
is read and quotes no value."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, Stops, TripEnds, fit_lonlat, load_model
from dpdbscan.exceptions import PrivateNoteWarning
from dpdbscan.pipeline import events_of

from clirun import run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

SECRET = "SECRETUNIT7"
T0 = 1_211_018_400


def traces(seed: int = 0, n_units: int = 200):
    """Each unit drives (0.05 per minute, random directions), stops for ten
    minutes at (0.3, 0.3) with a passenger getting in at the end, and drives
    on. Fixes every 60 s. Returns (X, units, unix times, status)."""
    rng = np.random.default_rng(seed)
    X, units, times, status = [], [], [], []
    for u in range(n_units):
        pos = rng.uniform(0.2, 0.8, 2)
        name = SECRET if u == 0 else f"p{u}"
        for k in range(40):
            if 10 <= k < 21:
                p, s = np.array([0.3, 0.3]) + rng.normal(0, 0.001, 2), 0
            else:
                pos = np.clip(pos + rng.normal(0, 0.05, 2), 0.01, 0.99)
                p, s = pos, int(k >= 21)
            X.append(p)
            units.append(name)
            times.append(T0 + 60 * k + u)
            status.append(s)
    return np.array(X), np.array(units, dtype=object), np.array(times), np.array(status)


PARAMS = dict(eps=0.05, min_samples=20, bounds=([0, 0], [1, 1]), delta=1e-6, max_cells_per_unit=4)


def _same_release(a, b):
    ha, hb = a.histogram, b.histogram
    assert (ha.keys is None) == (hb.keys is None)
    assert ha.keys is None or np.array_equal(ha.keys, hb.keys)
    assert np.array_equal(ha.values, hb.values)
    assert a.n_spans == b.n_spans


@pytest.mark.parametrize("events", [Stops(0.01, "5min"), TripEnds("pickup"), TripEnds("both")])
def test_the_estimator_releases_the_events(events):
    X, units, times, status = traces()
    est = DPDBSCAN(**PARAMS, events=events, random_state=3).fit(X, units=units, times=times, status=status)
    Xe, ue = events_of(events, X, units, times, status)
    assert 0 < len(Xe) < len(X) / 10
    ref = DPDBSCAN(**PARAMS, random_state=3).fit(Xe, units=ue)
    _same_release(est.spans_, ref.spans_)
    assert est.spans_.metadata["events"] == events.resolved(geo=False).record()
    if isinstance(events, Stops):
        assert est.spans_.n_spans >= 1 and est.predict([[0.3, 0.3]])[0] >= 0  # the common stop


def test_a_unit_whose_arrow_date_is_not_whole_seconds_never_stops_the_release():
    # date64 counts milliseconds, unchecked: the times' cast to seconds refused
    # the whole column over one unit's such value (ArrowInvalid), so adding
    # that unit decided whether anything was released (docs/privacy.md
    # section 8, round 12)
    X, units, times, _ = traces(n_units=60)
    ms = (times // 86400 * 86400 + 86400 * (times % 7)) * 1000  # whole days: each unit stays a day at a time
    odd = np.append(ms, ms[0] + 1)  # one more unit, one time 1 ms past midnight
    X2, units2 = np.vstack([X, [[0.5, 0.5]]]), np.append(units, "q")
    for x, u, t in ((X, units, ms), (X2, units2, odd)):
        est = DPDBSCAN(**PARAMS, events=Stops(0.01, "1h"), random_state=3)
        est.fit(x, units=u, times=pa.array(t, type=pa.date64()))
        assert est.spans_.metadata["events"]["kind"] == "stops"


def test_fit_lonlat_takes_lengths_on_the_ground():
    X, units, times, _ = traces()
    lonlat = np.c_[-122.5 + X[:, 0] * 0.2, 37.6 + X[:, 1] * 0.2]  # about 17 x 22 km
    box = (-122.5, 37.6, -122.3, 37.8)
    kw = dict(bounds=box, eps="500m", min_samples=20, delta=1e-6, max_cells_per_unit=4, random_state=5)
    m = fit_lonlat(lonlat, units=units, times=times, events=Stops("200m", "5min"), **kw)
    assert m.metadata["events"] == {
        "kind": "stops",
        "radius": 0.2,
        "duration_s": 300.0,
    }
    assert m.n_spans >= 1


@pytest.mark.parametrize(
    "params,fit_kw,match",
    [
        ({"events": Stops(0.01, 300)}, {"times": "T"}, "needs a privacy unit"),
        ({"events": Stops(0.01, 300), "max_cells_per_unit": 4}, {"units": "U"}, "needs each row's time"),
        ({"events": TripEnds(), "max_cells_per_unit": 4}, {"units": "U", "times": "T"}, "status"),
        ({"events": Stops("10m", 300), "max_cells_per_unit": 4}, {"units": "U", "times": "T"}, "lon/lat"),
        ({"events": Stops(0.01, "soon"), "max_cells_per_unit": 4}, {"units": "U", "times": "T"}, "duration"),
        (
            {"events": Stops(0.01, 300), "max_cells_per_unit": 4, "backend": "dask"},
            {"units": "U", "times": "T"},
            "numpy backend only",
        ),
    ],
)
def test_the_estimator_refuses_before_reading(params, fit_kw, match):
    X, units, times, _ = traces(n_units=2)
    given = {"U": units, "T": times}
    kw = {k: given[v] for k, v in fit_kw.items()}

    class Untouchable:  # X must not be looked at before the refusal
        def __array__(self, *a, **k):
            raise AssertionError("X was read")

    base = {k: v for k, v in PARAMS.items() if k != "max_cells_per_unit"}
    with pytest.raises(ValueError, match=match):
        DPDBSCAN(**{**base, **params}).fit(Untouchable(), **kw)


# --------------------------------------------------------------- the command line


def _write(tmp_path, kind: str):
    X, units, times, status = traces()
    cols = {"x": X[:, 0], "y": X[:, 1], "person": units.astype(str), "time": times, "busy": status}
    if kind == "parquet":
        path = tmp_path / "traces.parquet"
        pq.write_table(pa.table(cols), path)
    else:
        path = tmp_path / "traces.csv"
        iso = np.datetime_as_string(times.astype("datetime64[s]"), unit="s")
        lines = ["x,y,person,time,busy"] + [
            f"{float(a)!r},{float(b)!r},{u},{t}Z,{s}"
            for a, b, u, t, s in zip(X[:, 0], X[:, 1], units, iso, status)
        ]
        path.write_text("\n".join(lines) + "\n")
    return path, (X, units, times, status)


CLI = ["--columns", "x", "y", "--eps", "0.05", "--min-samples", "20", "--bounds", "0", "0", "1", "1"]
CLI_UNIT = ["--unit", "person", "--max-cells-per-unit", "4", "--delta", "1e-6", "--seed", "3"]
QUIET = ["--no-png", "--no-geojson", "--no-progress"]


@pytest.mark.parametrize("kind", ["csv", "parquet"])
@pytest.mark.parametrize(
    "option,events",
    [(["--stops", "0.01", "5min"], Stops(0.01, 300.0)), (["--trip-ends", "busy"], TripEnds("pickup"))],
)
def test_the_command_line_releases_the_events(capsys, tmp_path, kind, option, events):
    path, (X, units, times, status) = _write(tmp_path, kind)
    rc, out, err = run(
        capsys,
        "fit",
        str(path),
        *CLI,
        *CLI_UNIT,
        "--time",
        "time",
        *option,
        *QUIET,
        "--out-dir",
        str(tmp_path),
    )
    assert rc == 0, err
    model = load_model(tmp_path / "traces.spans.json")
    Xe, ue = events_of(events, X, units, times, status)
    ref = DPDBSCAN(**PARAMS, random_state=3).fit(Xe, units=ue.astype(str))
    _same_release(model, ref.spans_)
    assert model.metadata["events"]["time_column"] == "time"
    assert "events  : counted each unit's" in out
    assert f"{len(Xe):,} " in err and SECRET not in out + err


def test_check_counts_the_events_and_forecast_says_so(capsys, tmp_path):
    path, (X, units, times, status) = _write(tmp_path, "parquet")
    rc, out, err = run(
        capsys,
        "check",
        str(path),
        *CLI,
        "--unit",
        "person",
        "--delta",
        "1e-6",
        "--time",
        "time",
        "--stops",
        "0.01",
        "5min",
    )
    assert rc == 0, err
    n = len(events_of(Stops(0.01, 300.0), X, units, times, status)[0])
    assert f"{n:,} stop(s) of the units" in err and SECRET not in out + err
    rc, out, err = run(
        capsys,
        "forecast",
        "--eps",
        "0.05",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "0",
        "1",
        "1",
        "--max-cells-per-unit",
        "4",
        "--delta",
        "1e-6",
        "--stops",
        "0.01",
        "5min",
    )
    assert rc == 0, err
    assert "each unit's stops, not its rows" in out
    # no --n-expected given: the line does not speak of one as given
    assert "--n-expected is then your guess" not in out and "given as --n-expected would be" in out
    rc, out, err = run(
        capsys, "forecast", "--eps", "0.05", "--min-samples", "20", "--bounds", "0", "0", "1", "1",
        "--max-cells-per-unit", "4", "--delta", "1e-6", "--stops", "0.01", "5min", "--n-expected", "5000",
    )  # fmt: skip
    assert rc == 0, err
    assert "--n-expected is then your guess of the number of those points" in out


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--time", "time", "--stops", "0.01", "5min"], "needs a privacy unit"),
        ([*CLI_UNIT, "--stops", "0.01", "5min"], "--stops needs --time"),
        ([*CLI_UNIT, "--time", "time"], "--time is read only for"),
        ([*CLI_UNIT, "--time", "time", "--stops", "0.01", "5min", "--trip-ends", "busy"], "not both"),
        ([*CLI_UNIT, "--time", "time", "--ends", "dropoff"], "--ends goes with --trip-ends"),
        ([*CLI_UNIT, "--time", "time", "--stops", "10m", "5min"], "only makes sense for lon/lat"),
        ([*CLI_UNIT, "--time", "time", "--stops", "0.01", "5 moons"], "duration"),
        ([*CLI_UNIT, "--time", "time", "--stops", "0.01", "5min", "--backend", "dask"], "Dask backend"),
    ],
)
def test_the_command_line_refuses_before_reading(capsys, tmp_path, extra, match):
    missing = tmp_path / "never-read.csv"
    rc, out, err = run(capsys, "fit", str(missing), *CLI, *extra, "--out-dir", str(tmp_path))
    assert rc == 2
    assert match in err and "not found" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_time_column_the_file_lacks_is_refused_before_reading(capsys, tmp_path):
    path, _ = _write(tmp_path, "parquet")
    rc, out, err = run(
        capsys,
        "fit",
        str(path),
        *CLI,
        *CLI_UNIT,
        "--time",
        "when",
        "--stops",
        "0.01",
        "5min",
        "--out-dir",
        str(tmp_path / "out"),
    )
    assert rc == 2 and "--time 'when' is not a column" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "units",
    [
        pa.array(["a", "b", None, "a"]).dictionary_encode(),
        pa.chunked_array(
            [pa.array(["b", "a"]).dictionary_encode(), pa.array(["a", None]).dictionary_encode()]
        ),
        pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0]), pa.array(["a", "b", "a"])),  # a repeated entry
        pa.array([1.0, np.nan, 1.0, 2.0]).dictionary_encode(),
        pa.array([0.0, -0.0, 1.0, -0.0]).dictionary_encode(),  # two entries, one unit
        np.array(["a", "b", "c", "a"], dtype=object),
        # a null dictionary value (unify_dictionaries refused it: no release)
        pa.chunked_array(
            [
                pa.DictionaryArray.from_arrays(pa.array([0, 1, 1], pa.int32()), pa.array(["a", None])),
                pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(["a", "b"])),
            ]
        ),
    ],
)
def test_group_codes_group_rows_as_factorize_does(units):
    from dpdbscan.release.bounding import factorize
    from dpdbscan.traces import group_codes

    codes = group_codes(units)
    ref, _ = factorize(units)
    if codes is None:
        return  # the caller factorizes
    # the same partition of the rows into units, missing ones apart
    assert np.array_equal(codes < 0, ref < 0)
    pairs = {(int(a), int(b)) for a, b in zip(codes, ref) if a >= 0}
    assert len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs})


def test_a_row_without_an_id_never_regroups_another_units_trace():
    """A float dictionary holds 0.0 and -0.0 as two entries; the bounding
    reads them as one unit (their value). The traces were grouped by the
    dictionary's entries unless some entry was NaN: one added row whose id is
    NaN (dropped, no one's) then merged the two halves of the unit spelled
    0.0 and -0.0, and its stops moved (here: two stops, at A and at B, became
    none). With or without that row the release is the same."""

    def fit(with_nan: bool):
        X, ids, times = [], [], []
        for i in range(11):  # the unit 0.0 / -0.0 alternates between A and B every minute
            X.append([0.25, 0.25] if i % 2 == 0 else [0.75, 0.75])
            ids.append(0.0 if i % 2 == 0 else -0.0)
            times.append(60.0 * i)
        for i in range(11):  # another unit parks at C
            X.append([0.25, 0.75])
            ids.append(1.0)
            times.append(60.0 * i)
        if with_nan:
            X.append([0.5, 0.5])
            ids.append(float("nan"))
            times.append(0.0)
        units = pa.array(ids, type=pa.float64()).dictionary_encode()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivateNoteWarning)
            est = DPDBSCAN(
                eps=0.1,
                min_samples=2,
                bounds=([0, 0], [1, 1]),
                delta=1e-6,
                max_cells_per_unit=4,
                histogram="dense",
                events=Stops(0.05, "5min"),
                random_state=3,
            ).fit(np.array(X), units=units, times=np.array(times))
        return est.spans_

    _same_release(fit(False), fit(True))
    # the unit's trace is one: A, B, A, ... makes no stop
    ids = pa.array([0.0, -0.0] * 6, type=pa.float64()).dictionary_encode()
    X = np.array([[0.25, 0.25], [0.75, 0.75]] * 6)
    assert events_of(Stops(0.05, "5min"), X, ids, 60.0 * np.arange(12), None)[0].shape[0] == 0


def test_a_ledger_records_the_events_of_a_release(capsys, tmp_path):
    path, _ = _write(tmp_path, "parquet")
    ledger = str(tmp_path / "budget.ledger")
    rc, out, err = run(
        capsys,
        "ledger",
        "init",
        ledger,
        "--dataset",
        "t",
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--unit",
        "person",
    )
    assert rc == 0, err
    rc, out, err = run(
        capsys,
        "fit",
        str(path),
        *CLI,
        *CLI_UNIT,
        "--time",
        "time",
        "--stops",
        "0.01",
        "5min",
        *QUIET,
        "--out-dir",
        str(tmp_path),
        "--ledger",
        ledger,
        "--dataset",
        "t",
    )
    assert rc == 0, err
    import sqlite3

    text = " ".join(str(row) for row in sqlite3.connect(ledger).execute("SELECT * FROM releases"))
    assert '"kind": "stops"' in text and SECRET not in text
    # the Python door too
    X, units, times, _ = traces(n_units=20)
    from dpdbscan import Ledger

    DPDBSCAN(**PARAMS, events=Stops(0.01, 300), ledger=Ledger(ledger, "t")).fit(X, units=units, times=times)
    text = " ".join(str(row) for row in sqlite3.connect(ledger).execute("SELECT * FROM releases"))
    assert text.count('"kind": "stops"') == 2


def _csv_with(tmp_path, status_text, *, bad_times=0):
    """The traces as CSV with the status written by ``status_text`` (0/1 ->
    text) and the first ``bad_times`` rows' times unreadable."""
    X, units, times, status = traces()
    iso = np.datetime_as_string(times.astype("datetime64[s]"), unit="s")
    path = tmp_path / "traces.csv"
    lines = ["x,y,person,time,busy"]
    for i, (a, b, u, t, s) in enumerate(zip(X[:, 0], X[:, 1], units, iso, status)):
        when = f"{SECRET}time" if i < bad_times else f"{t}+00:00"
        lines.append(f"{float(a)!r},{float(b)!r},{u},{when},{status_text[int(s)]}")
    path.write_text("\n".join(lines) + "\n")
    return path, (X, units, times, status)


@pytest.mark.parametrize(
    "words,extra",
    [(("False", "True"), []), (("free", "hired"), ["--status-values", "free", "hired"])],
)
def test_a_status_written_as_text_gives_the_trip_ends(capsys, tmp_path, words, extra):
    path, (X, units, times, status) = _csv_with(tmp_path, words)
    # no --columns: the time and status columns are read beside the points, never as coordinates
    cli = [a for a in CLI if a not in ("--columns", "x", "y")]
    rc, out, err = run(
        capsys, "fit", str(path), "--header", *cli, *CLI_UNIT, "--time", "time", "--trip-ends", "busy",
        *extra, *QUIET, "--out-dir", str(tmp_path),
    )  # fmt: skip
    assert rc == 0, err
    model = load_model(tmp_path / "traces.spans.json")
    Xe, ue = events_of(TripEnds("pickup"), X, units, times, status)
    assert len(Xe) > 0
    _same_release(model, DPDBSCAN(**PARAMS, random_state=3).fit(Xe, units=ue.astype(str)).spans_)
    if extra:
        assert model.metadata["events"]["status_values"] == ["free", "hired"]
        assert "(free: free, hired: carrying)" in out


def test_rows_without_a_time_or_status_are_counted_privately_and_never_quoted(capsys, tmp_path):
    path, _ = _csv_with(tmp_path, ("free", "hired"), bad_times=7)
    rc, out, err = run(
        capsys, "fit", str(path), *CLI, *CLI_UNIT, "--time", "time", "--trip-ends", "busy", *QUIET,
        "--out-dir", str(tmp_path),
    )  # fmt: skip
    assert rc == 0, err
    assert "[private: do not publish] 7 of 8,000 row(s) have no readable time" in err
    assert "7,993 more no status read as 0/1" in err and "--status-values FREE CARRYING" in err
    assert SECRET not in out + err and "hired" not in out + err
    assert "no pick-up was found in 8,000 rows" in err and "--status-values" in err


def test_the_estimator_notes_rows_without_a_time_privately():
    from dpdbscan.exceptions import PrivateNoteWarning

    X, units, times, status = traces()
    t = times.astype(object)
    t[:5] = "never"
    with pytest.warns(PrivateNoteWarning, match="5 of 8,000 row"):
        DPDBSCAN(**PARAMS, events=Stops(0.01, "5min"), random_state=3).fit(X, units=units, times=t)


def test_status_values_need_trip_ends(capsys, tmp_path):
    path, _ = _csv_with(tmp_path, ("0", "1"))
    rc, out, err = run(
        capsys, "fit", str(path), *CLI, *CLI_UNIT, "--time", "time", "--stops", "0.01", "5min",
        "--status-values", "a", "b", *QUIET, "--out-dir", str(tmp_path),
    )  # fmt: skip
    assert rc == 2 and "--status-values goes with --trip-ends" in err and not list(tmp_path.glob("*.json"))


def test_parquet_time_and_text_status_columns_are_not_coordinates(capsys, tmp_path):
    X, units, times, status = traces()
    path = tmp_path / "traces.parquet"
    stamps = pa.array(times * 1000, pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    busy = np.where(status == 1, "hired", "free")
    pq.write_table(
        pa.table({"x": X[:, 0], "y": X[:, 1], "person": units.astype(str), "time": stamps, "busy": busy}),
        path,
    )
    cli = [a for a in CLI if a not in ("--columns", "x", "y")]
    rc, out, err = run(
        capsys, "fit", str(path), *cli, *CLI_UNIT, "--time", "time", "--trip-ends", "busy",
        "--status-values", "free", "hired", *QUIET, "--out-dir", str(tmp_path),
    )  # fmt: skip
    assert rc == 0, err
    Xe, ue = events_of(TripEnds("pickup"), X, units, times, status)
    ref = DPDBSCAN(**PARAMS, random_state=3).fit(Xe, units=ue.astype(str))
    _same_release(load_model(tmp_path / "traces.spans.json"), ref.spans_)
    # stops name no status column: the text column is then a coordinate, refused naming --columns
    rc, out, err = run(
        capsys, "fit", str(path), *cli, *CLI_UNIT, "--time", "time", "--stops", "0.01", "5min", *QUIET,
        "--out-dir", str(tmp_path / "b"),
    )  # fmt: skip
    assert rc == 2 and "'busy' is not numeric" in err and "--columns" in err


def test_times_in_milliseconds_need_time_unit_and_a_note_says_so(capsys, tmp_path):
    X, units, times, status = traces()
    path = tmp_path / "traces.csv"
    rows = [
        f"{float(a)!r},{float(b)!r},{u},{int(t) * 1000}" for a, b, u, t in zip(X[:, 0], X[:, 1], units, times)
    ]
    path.write_text("\n".join(["x,y,person,time", *rows]) + "\n")
    stops = ["--time", "time", "--stops", "0.01", "5min", *QUIET]
    rc, out, err = run(
        capsys, "fit", str(path), *CLI, *CLI_UNIT, *stops, "--time-unit", "ms", "--out-dir", str(tmp_path)
    )
    assert rc == 0, err and "year 3000" not in err
    Xe, ue = events_of(Stops(0.01, 300.0), X, units, times, status)
    ref = DPDBSCAN(**PARAMS, random_state=3).fit(Xe, units=ue.astype(str))
    model = load_model(tmp_path / "traces.spans.json")
    _same_release(model, ref.spans_)
    assert model.metadata["events"]["time_unit"] == "ms"
    rc, out, err = run(capsys, "fit", str(path), *CLI, *CLI_UNIT, *stops, "--out-dir", str(tmp_path / "s"))
    assert (
        rc == 0 and "8,000 of 8,000 row(s) have times after the year 3000" in err and "--time-unit ms" in err
    )


NO_EVENTS = [
    (["--trip-ends", "busy"], ("0", "0"), "no pick-up was found in 8,000 rows", "--status-values"),
    (["--stops", "0.001", "5min"], ("0", "1"), "no stop was found in 8,000 rows", "--time-unit"),
]


@pytest.mark.parametrize("option,words,said,hint", NO_EVENTS, ids=["constant-status", "never-stops"])
def test_no_events_with_k_auto_still_releases_and_says_why_privately(
    capsys, tmp_path, option, words, said, hint
):
    """A status that never changes, or units that never stay within the
    stop radius (0.001 here, under the fixes' own jitter), make no event.
    With k chosen privately the release is made all the same (a public
    rule), the stderr notes say what was read (8,000 rows, not the 0 events),
    why there is nothing to count and that the draw of k is then uniform;
    nothing of it reaches standard output or the model."""
    path, _ = _csv_with(tmp_path, words)
    unit = [a if a != "4" else "auto" for a in CLI_UNIT]
    rc, out, err = run(
        capsys, "fit", str(path), "--header", *CLI, *unit, "--time", "time", *option, "--no-png",
        "--no-progress", "--out-dir", str(tmp_path / "o"),
    )  # fmt: skip
    assert rc == 0, err
    assert "[private: do not publish] read 8,000 rows" in err and "read 0 rows" not in err
    assert said in err and hint in err and "made all the same" in err
    assert "every candidate for max_cells_per_unit scores the same" in err
    assert "[private" not in out and said not in out
    model = load_model(tmp_path / "o" / "traces.spans.json")
    assert model.release.unit_choice is not None and model.n_spans == 0
    assert said not in (tmp_path / "o" / "traces.spans.json").read_text()


def test_the_estimator_says_privately_when_there_is_no_event():
    X, units, times, status = traces()
    p = {**PARAMS, "max_cells_per_unit": "auto"}
    with pytest.warns(PrivateNoteWarning) as said:
        est = DPDBSCAN(**p, events=TripEnds("pickup"), random_state=3)
        est.fit(X, units=units, times=times, status=np.zeros_like(status))
    text = " ".join(str(w.message) for w in said)
    assert f"no pick-up was found in {len(X):,} rows" in text
    assert "k was drawn uniformly among them" in text
    assert est.spans_.release.unit_choice is not None  # released all the same
    # the summary (public, the same whatever the data) says what such a draw means
    from dpdbscan import summary

    assert "the draw is close to uniform: k then says little about the data" in summary(est.spans_)


def test_check_says_rows_read_dropped_and_events_made_apart(capsys, tmp_path):
    """``check`` with --trip-ends: the rows line counts the rows read,
    dropped and kept; the events line the pick-ups the release counts (the
    number events_of makes from the rows kept), never the events as rows."""
    path, (X, units, times, status) = _csv_with(tmp_path, ("0", "1"))
    lines = path.read_text().splitlines()
    lines[5] = "nan," + lines[5].split(",", 1)[1]  # one row dropped by the per-record rule
    path.write_text("\n".join(lines) + "\n")
    cli = [a for a in CLI_UNIT if a not in ("--seed", "3")]
    rc, out, err = run(
        capsys, "check", str(path), "--header", *CLI, *cli, "--time", "time", "--trip-ends", "busy"
    )
    assert rc == 0 and out == "", err
    keep = np.ones(len(X), dtype=bool)
    keep[4] = False
    n_events = len(events_of(TripEnds("pickup"), X[keep], units[keep], times[keep], status[keep])[0])
    assert 0 < n_events < len(X) - 1
    assert f"rows      : {len(X):,} read, 1 dropped" in err and f"{len(X) - 1:,} kept" in err
    assert f"events    : {n_events:,} pickup point(s) made from the rows kept" in err
    assert f"{n_events:,} read" not in err
    assert f"among the {n_events:,} events" in err  # the units' line counts the events too
