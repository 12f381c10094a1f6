"""``fit --per`` on the Dask backend: the same release (spans and span x
period table) as in memory for the same seed.

The Dask path reads the rows where they live: the spans' release keeps the
rows of the horizon (each partition parses its own times), and the table's
(unit, span, period) pairs are shuffled by unit and bounded where all of a
unit's pairs are. Every cab's rows are spread over every partition here and
the bound k bites (each cab has more pairs than k), so a unit bounded per
input partition, or a row outside the horizon let in, would change the table.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import dpdbscan.cli.fit as cli_fit  # noqa: E402
from dpdbscan import Grid, load_model  # noqa: E402
from dpdbscan.release import periodtable  # noqa: E402
from dpdbscan.release.backends.dask_backend import DaskBackend  # noqa: E402
from dpdbscan.release.bounding import BoundingKey  # noqa: E402
from dpdbscan.series import PeriodOf, SpanOf  # noqa: E402
from dpdbscan.traces.periods import Periods  # noqa: E402
from tests.clirun import run  # noqa: E402

START = dt.datetime(2024, 3, 4, tzinfo=dt.UTC).timestamp()
ARGS = ["--columns", "x", "y", "--unit", "cab", "--max-cells-per-unit", "8", "--time", "time",
        "--per", "day", "--from", "2024-03-04", "--to", "2024-03-08", "--bounds", "0", "0", "10", "10",
        "--eps", "0.5", "--min-samples", "30", "--epsilon", "2", "--delta", "1e-5", "--no-png",
        "--max-pairs-per-unit", "3", "--seed", "11"]  # fmt: skip


def make_traces(n=10_000, seed=0):
    """200 cabs, two places, times over 6 days (one before and one after the
    4-day horizon): (x, y, cab, unix seconds)."""
    rng = np.random.default_rng(seed)
    cab = rng.integers(0, 200, n)
    xy = np.array([[2.0, 2.0], [7.0, 7.0]])[rng.integers(0, 2, n)] + rng.normal(0, 0.3, (n, 2))
    t = np.floor(START + rng.uniform(-86400, 5 * 86400, n))
    return xy, cab, t


@pytest.fixture(scope="module")
def traces():
    return make_traces()


def write_csv(path, traces):
    """Times as ISO text or unix seconds (alternating), a few rows without a time."""
    xy, cab, t = traces
    with open(path, "w") as f:
        f.write("x,y,cab,time\n")
        for i in range(len(t)):
            if i % 97 == 0:
                when = ""
            elif i % 2:
                when = dt.datetime.fromtimestamp(t[i], dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            else:
                when = f"{t[i]:.0f}"
            f.write(f"{float(xy[i, 0])!r},{float(xy[i, 1])!r},c{cab[i]},{when}\n")
    return path


def write_parquet(directory, traces, parts=4):
    """Typed columns: timestamps (UTC) and integer cabs, in ``parts`` files."""
    xy, cab, t = traces
    directory.mkdir()
    for j, rows in enumerate(np.array_split(np.arange(len(t)), parts)):
        table = pa.table(
            {
                "x": xy[rows, 0],
                "y": xy[rows, 1],
                "cab": cab[rows].astype(np.int64),
                "time": pa.array((t[rows] * 1e6).astype(np.int64), type=pa.timestamp("us", tz="UTC")),
            }
        )
        pq.write_table(table, directory / f"part-{j}.parquet")
    return directory


@pytest.fixture
def on_client(client, monkeypatch):
    """``--backend dask`` on the test cluster, with small CSV blocks (several partitions)."""
    made = cli_fit.dask_backend

    def backend(opts):
        b = made(opts)
        b.client, b.blocksize = client, 20_000
        return b

    monkeypatch.setattr(cli_fit, "dask_backend", backend)


def release_of(capsys, tmp_path, source, name, *extra):
    rc, out, err = run(capsys, "fit", source, *ARGS, *extra, "--out-dir", tmp_path / name, "--name", "cabs")
    assert rc == 0, err
    return load_model(tmp_path / name / "cabs.spans.json"), out


def assert_same_series(got, want):
    assert got.n_spans == want.n_spans >= 2
    assert got.regions()[0].tolist() == want.regions()[0].tolist()
    assert got.regions()[1].tolist() == want.regions()[1].tolist()
    g, w = got.metadata["series"], want.metadata["series"]
    assert g["table"]["noisy_mass"] == w["table"]["noisy_mass"]
    assert g["period_spans"] == w["period_spans"]
    assert g["table"]["max_pairs_per_unit"] == w["table"]["max_pairs_per_unit"] == 3
    assert g["statement"] == w["statement"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_same_series_as_in_memory(traces, tmp_path, capsys, on_client, fmt):
    source = (
        write_csv(tmp_path / "cabs.csv", traces)
        if fmt == "csv"
        else write_parquet(tmp_path / "cabs.parquet", traces)
    )
    header = ["--header"] if fmt == "csv" else []
    want, _ = release_of(capsys, tmp_path, source, "memory", *header)
    got, out = release_of(capsys, tmp_path, source, "dask", *header, "--backend", "dask")
    assert_same_series(got, want)
    assert "series  : (epsilon=2, delta=1e-05)-differential privacy for each cab" in out
    rows = (tmp_path / "dask" / "cabs.periods.csv").read_text()
    assert rows == (tmp_path / "memory" / "cabs.periods.csv").read_text()
    geo = json.loads((tmp_path / "dask" / "cabs.spans.geojson").read_text())
    assert geo["properties"]["unit_protected"] == "cab"


def test_times_in_milliseconds_read_alike_on_dask(traces, tmp_path, capsys, on_client):
    """``--time-unit ms`` on Dask: the workers read each time in the unit
    given, as the in-memory reader does (before, they read milliseconds as
    seconds, so every row fell after the horizon and the table counted
    nothing but noise)."""
    xy, cab, t = traces
    source = tmp_path / "cabs_ms.csv"
    with open(source, "w") as f:
        f.write("x,y,cab,time\n")
        for i in range(len(t)):
            f.write(f"{float(xy[i, 0])!r},{float(xy[i, 1])!r},c{cab[i]},{t[i] * 1000:.0f}\n")
    ms = ["--header", "--time-unit", "ms"]
    want, _ = release_of(capsys, tmp_path, source, "memory", *ms)
    got, _ = release_of(capsys, tmp_path, source, "dask", *ms, "--backend", "dask")
    assert_same_series(got, want)
    seconds, _ = release_of(capsys, tmp_path, write_csv(tmp_path / "cabs.csv", traces), "s", "--header")
    assert want.regions()[0].tolist() == seconds.regions()[0].tolist()


def test_a_dask_series_says_what_it_read_and_dropped_in_the_in_memory_words(
    traces, tmp_path, capsys, on_client
):
    """``--per`` on Dask printed no count of the rows read and dropped (the
    series returned before the workers' tally was said); it now says the rows
    read, those with a value that is not a number and the malformed lines,
    in the in-memory reader's words, as a Dask fit without ``--per`` does;
    and the rows clipped onto the box (the table's reads counted no box)."""
    source = write_csv(tmp_path / "cabs.csv", traces)
    with open(source, "a") as f:
        f.write("abc,1.0,c1,1709510400\n1,2,3\n")  # a value that is not a number; a malformed line
        # outside the box (one of them outside the horizon too): clipped, as said in memory
        f.write("12.5,5.0,c1,1709510400\n-3,5.0,c2,1709510400\n5.0,14,c3,1609510400\n")

    def private(*extra):
        rc, _, err = run(
            capsys, "fit", source, *ARGS, "--header", *extra, "--out-dir", tmp_path / str(len(extra))
        )
        assert rc == 0, err
        return [line for line in err.splitlines() if line.startswith("[private")]

    memory, dask = private(), private("--backend", "dask")
    said = [
        "1 row(s) with values that are not numbers read as missing",
        "1 line(s) with the wrong number of fields read as missing",
        f"read {len(traces[2]) + 5:,} rows x 2 column(s) (x, y) from {source}",
        "3 point(s) (0.0%) lie outside the bounds and are clipped onto the box",
    ]
    for words in said:
        assert [line for line in memory if words in line] == [line for line in dask if words in line] != []
    # and the total the per-record rule drops (the Dask tally counted no non-finite value), in
    # the same place: every private line the same
    dropped = [line for line in dask if "row(s) with missing or non-finite values or no unit" in line]
    assert len(dropped) == 1 and memory == dask


def test_the_dask_table_is_the_bounded_table_in_memory(client, traces, tmp_path):
    """The exact bounded table, before noise, with a bound that bites: the
    same as the in-memory function on the same rows and key; rows outside
    the horizon count nowhere."""
    xy, cab, t = traces
    source = write_parquet(tmp_path / "cabs.parquet", traces, parts=5)
    periods = Periods("day", "2024-03-04", "2024-03-08")
    # spans: the two places, as any released model would give them (a public function here)
    span_of = _TwoPlaces()
    key = BoundingKey((7, 9), bytes(range(16)))
    period = PeriodOf(periods)(t)
    assert (period < 0).any()  # rows outside the horizon exist
    want = periodtable.bounded_table(cab, span_of(xy), period, periodtable.TableBound((2, 4), 3, 1), key)
    pairs = periodtable.pairs_per_unit(cab, span_of(xy), period, 4)
    assert pairs.max() > 3  # the bound bites
    backend = DaskBackend(client=client, columns=["x", "y"]).windowed("time", PeriodOf(periods))
    grid = Grid(np.zeros(2), np.full(2, 10.0), 0.6)
    got = backend.period_table(grid, str(source), "cab", span_of, periodtable.TableBound((2, 4), 3, 1), key)
    assert got.tolist() == want.tolist()
    assert got.sum() > 0


class _TwoPlaces:
    """Span 0 left of x = 4.5, span 1 right of x = 5.5, none between."""

    def __call__(self, X):
        x = np.asarray(X)[:, 0]
        return np.where(x < 4.5, 0, np.where(x > 5.5, 1, -1))


def test_span_of_is_the_in_memory_rule(traces, tmp_path, capsys):
    """SpanOf (what the workers run) places every point as the in-memory path does."""
    xy, _, _ = traces
    source = write_csv(tmp_path / "cabs.csv", traces)
    model, _ = release_of(capsys, tmp_path, source, "memory", "--header")
    spans = SpanOf(model)(xy)
    assert set(np.unique(spans)) <= set(range(-1, model.n_spans))
    assert (spans >= 0).mean() > 0.5


def test_refused_with_a_dask_array(client):
    da = pytest.importorskip("dask.array")
    backend = DaskBackend(client=client).windowed(
        "time", PeriodOf(Periods("day", "2024-03-04", "2024-03-08"))
    )
    grid = Grid(np.zeros(2), np.full(2, 10.0), 0.6)
    X = da.zeros((10, 2), chunks=5)
    with pytest.raises(ValueError, match="dask DataFrame"):
        backend.period_table(
            grid,
            X,
            np.arange(10),
            _TwoPlaces(),
            periodtable.TableBound((2, 4), 3, 1),
            BoundingKey((1, 2), bytes(16)),
        )


@pytest.mark.parametrize(
    "change, words",
    [
        (["--time", "when"], "no time column 'when'"),
        (["--trip-ends", "cab"], "--stops and --trip-ends read each unit's trace in time order"),
    ],
)
def test_refused_on_dask_before_any_record(traces, tmp_path, capsys, on_client, change, words):
    source = write_csv(tmp_path / "cabs.csv", traces)
    args = list(ARGS)
    if change[0] in args:
        args[args.index(change[0]) + 1] = change[1]
    else:
        args += change
    rc, out, err = run(
        capsys, "fit", source, "--header", *args, "--backend", "dask", "--out-dir", tmp_path / "o"
    )
    assert rc == 2 and words in err
    assert not (tmp_path / "o" / "cabs.spans.json").exists()


def test_a_csv_block_reads_its_times_in_the_points_own_parse(monkeypatch):
    """``--per`` on Dask: each CSV block's time field is read in the points'
    own parse (no second parse of the block), the same texts as the unit
    field would give -- null where missing and on a malformed line, a quoted
    time with a comma, a line that is not UTF-8 -- so the same periods."""
    import dataclasses

    from dpdbscan.files.records import CsvLayout, parse_records
    from dpdbscan.release.backends import dask_backend

    layout = CsvLayout(n_fields=4, usecols=(0, 1), unit=2, delimiter=",")
    body = (
        b"116.3,39.9,a,2008-10-23T02:00:00Z\n"
        b"116.3,39.9,b,\n"
        b"116.3,x,c,NA\n"
        b"1,2,3\n"
        b'116.3,39.9,d,"2008,10"\n'
        b"116.3,39.9,\xff,2008-10-23T03:00:00Z\n"
        b"\n"
        b"116.4,39.8,,2008-10-24T00:00:00Z\n"
    )
    seen = []

    def period_of(times):
        seen.append(times.to_pylist())
        return np.arange(len(times)) % 3 - 1

    from dpdbscan.files import records

    parses = []
    real = records._arrow_read
    monkeypatch.setattr(records, "_arrow_read", lambda *a: parses.append(1) or real(*a))
    box = (np.array([116.0, 39.0]), np.array([117.0, 40.0]))
    rows = dask_backend._csv_rows(box, body, layout, None, True, "b.csv", (3, period_of))
    n_parses = len(parses)
    monkeypatch.undo()
    _, times, _ = parse_records(body, dataclasses.replace(layout, unit=3))  # the former second parse
    assert seen == [times.to_pylist()] and times.null_count == 3
    X, units, counts = parse_records(body, layout)
    assert rows[0].tobytes() == X.tobytes() and rows[1].equals(dask_backend.unit_array(units, "text"))
    assert rows[3].tolist() == (np.arange(len(X)) % 3 - 1).tolist()
    parses.clear()
    monkeypatch.setattr(records, "_arrow_read", lambda *a: parses.append(1) or real(*a))
    parse_records(body, layout)
    assert n_parses == len(parses)  # the points' parse alone, with its time
