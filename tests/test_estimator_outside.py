"""``outside="drop"`` in Python: the estimator and ``fit_lonlat`` drop a
point outside the public box as ``dpdbscan fit --outside drop`` does, through
the same door step (:func:`dpdbscan.prepare.clipping.drop_outside_step`).

GPS fixes at (0, 0) clipped onto the box pile up at its corner and can make a
span that is no place. Dropped, each row by its own values and the public box
alone (docs/privacy.md §4.1), they leave no trace: one more such row changes
nothing in the release. The default stays "clip", bit for bit.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, Ledger, Stops, fit_lonlat, predict_lonlat
from dpdbscan.cli import main
from dpdbscan.exceptions import PrivateNoteWarning
from dpdbscan.model import save_model

pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

SEED = 70_117
BOX = (1.0, 1.0, 10.0, 10.0)  # lower_1 lower_2 upper_1 upper_2, as --bounds takes it
BOUNDS = ((1.0, 1.0), (10.0, 10.0))
FIT = dict(eps=0.5, min_samples=20)
K, DELTA = 4, 1e-6


def _points(seed: int = 70_011) -> tuple[np.ndarray, np.ndarray]:
    """Two blobs inside the box, 300 rows at (0, 0) (outside it: no GPS
    fix) and 60 far beyond its right edge; 300 units."""
    rng = np.random.default_rng(seed)
    X = np.vstack(
        [
            rng.normal((3, 3), 0.3, (700, 2)),
            rng.normal((7, 6), 0.3, (700, 2)),
            np.zeros((300, 2)),
            np.column_stack([rng.uniform(12, 40, 60), rng.uniform(2, 9, 60)]),
        ]
    )
    order = rng.permutation(len(X))
    return X[order], np.array([f"u{i % 300}" for i in range(len(X))])[order]


P, U = _points()


def _release(path: Path) -> dict:
    """A saved span model's JSON without its metadata."""
    data = json.loads(Path(path).read_text())
    data.pop("metadata")
    return data


def _cli(tmp_path: Path, *argv: object) -> tuple[dict, dict]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(
            [str(a) for a in argv]
            + ["--seed", str(SEED), "--out-dir", str(tmp_path), "--name", "cli", "--no-png", "--no-geojson"]
        )
    assert rc == 0, err.getvalue()
    meta = json.loads((tmp_path / "cli.spans.json").read_text())["metadata"]
    return _release(tmp_path / "cli.spans.json"), meta


def _saved(tmp_path: Path, model, words: bool = True) -> dict:
    """The model's JSON as saved, without its metadata (and without the
    guarantee's words unless ``words``)."""
    save_model(model, tmp_path / "est.json")
    out = _release(tmp_path / "est.json")
    if not words:
        out.pop("guarantee")
    return out


def _fit(X, units=None, **kw) -> DPDBSCAN:
    person = dict(max_cells_per_unit=K, delta=DELTA) if units is not None else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivateNoteWarning)
        return DPDBSCAN(**FIT, bounds=BOUNDS, random_state=SEED, **person, **kw).fit(X, units=units)


@pytest.mark.parametrize("person", [False, True], ids=["event", "unit"])
def test_the_estimator_drops_what_the_command_line_drops(tmp_path, person):
    path = tmp_path / "p.csv"
    pd.DataFrame({"x": P[:, 0], "y": P[:, 1], "unit": U}).to_csv(path, index=False)
    unit = ["--unit", "unit", "--max-cells-per-unit", K, "--delta", DELTA] if person else []
    argv = [
        "fit",
        path,
        "--header",
        "--columns",
        "x",
        "y",
        "--eps",
        FIT["eps"],
        "--min-samples",
        FIT["min_samples"],
    ]
    cli, meta = _cli(tmp_path, *argv, "--bounds", *BOX, *unit, "--outside", "drop")
    units = U if person else None
    dropped = _fit(P, units, outside="drop")
    assert _saved(tmp_path, dropped.spans_) == cli
    assert meta["outside"] == dropped.spans_.metadata["outside"] == "drop"
    assert cli["spans"]  # a release with spans, not two empty ones
    # clipped, the (0, 0) fixes pile up at the box's corner: another release, with a span there
    clipped = _fit(P, units)
    assert "outside" not in clipped.spans_.metadata
    assert _saved(tmp_path, clipped.spans_) != cli
    corner = np.array([[1.0, 1.0]])
    assert clipped.predict(corner)[0] >= 0 and dropped.predict(corner)[0] == -1


def _traces(n_units: int = 120, seed: int = 70_421) -> pd.DataFrame:
    """Each unit: 12 min at (0, 0) (no GPS fix), then 12 min at a station,
    a fix every 2 min, out of order within the unit (the times decide)."""
    rng = np.random.default_rng(seed)
    place = (116.427, 39.903)
    rows = []
    for u in range(n_units):
        mine = [(f"t{u}", 1_000 + 120 * i, 0.0, 0.0, i % 2) for i in range(7)]
        jit = rng.normal(0, 0.0001, (7, 2))
        mine += [(f"t{u}", 3_000 + 120 * i, place[0] + a, place[1] + b, 1) for i, (a, b) in enumerate(jit)]
        rng.shuffle(mine)
        rows += mine
    return pd.DataFrame(rows, columns=["taxi", "time", "lon", "lat", "busy"])


GEO_BOX = (116.2, 39.75, 116.65, 40.1)
GEO = dict(eps="200m", min_samples=30, max_cells_per_unit=4, delta=1e-6, random_state=3)


def test_fit_lonlat_drops_before_the_stops_as_the_command_line_does(tmp_path):
    df = _traces()
    path = tmp_path / "traces.csv"
    df.to_csv(path, index=False)
    box = [str(v) for v in GEO_BOX]
    argv = ["fit", path, "--header", "--geo", "--columns", "lon", "lat", "--unit", "taxi", "--time", "time"]
    argv += ["--stops", "100m", "5min", "--eps", "200m", "--min-samples", 30, "--max-cells-per-unit", 4]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(
            [str(a) for a in argv]
            + ["--delta", "1e-6", "--bounds", *box, "--seed", "3", "--outside", "drop"]
            + ["--out-dir", str(tmp_path), "--name", "cli", "--no-png", "--no-geojson"]
        )
    assert rc == 0, err.getvalue()
    # the guarantee's words name the unit by the --unit column ("taxis"), fit_lonlat's "units"
    cli = _release(tmp_path / "cli.spans.json")
    cli.pop("guarantee")
    kw = dict(bounds=GEO_BOX, units=df["taxi"], times=df["time"], events=Stops("100m", "5min"), **GEO)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        dropped = fit_lonlat(df[["lon", "lat"]].to_numpy(), outside="drop", **kw)
    notes = [str(w.message) for w in said if w.category is PrivateNoteWarning]
    assert "840 row(s) (50.0%) lie outside the bounds and are dropped (outside='drop')" in " ".join(notes)
    assert all(w.filename == __file__ for w in said if w.category is PrivateNoteWarning)
    assert _saved(tmp_path, dropped, words=False) == cli
    assert dropped.metadata["outside"] == "drop" and dropped.metadata["events"]["kind"] == "stops"
    # clipped: the stops at (0, 0) make a span at the box's corner, dropped: none
    clipped = fit_lonlat(df[["lon", "lat"]].to_numpy(), **kw)
    assert _saved(tmp_path, clipped, words=False) != cli
    corner = np.array([[GEO_BOX[0], GEO_BOX[1]]])
    assert predict_lonlat(clipped, corner)[0] >= 0 and predict_lonlat(dropped, corner)[0] == -1


@pytest.mark.parametrize("kind", ["list", "pandas", "numpy"])
def test_the_times_and_status_of_a_dropped_row_go_with_it(kind):
    """The events see each kept row with its own time and status, however
    they are given: the same release as the rows inside the box fitted
    alone (what the README told Python users to do before)."""
    from dpdbscan import TripEnds

    df = _traces(n_units=60)
    # times as ISO text with a zone: a list keeps each value as given, a
    # numpy array of them is text too, a Series a tz-aware pandas column
    stamps = pd.to_datetime(df["time"], unit="s", utc=True)
    times = {
        "list": [t.isoformat() for t in stamps],
        "pandas": stamps,
        "numpy": np.array([t.isoformat() for t in stamps]),
    }[kind]
    status = {"list": list(df["busy"]), "pandas": df["busy"], "numpy": df["busy"].to_numpy()}[kind]
    X, units = df[["lon", "lat"]].to_numpy(), df["taxi"].to_numpy()
    inside = (
        (X[:, 0] >= GEO_BOX[0]) & (X[:, 0] <= GEO_BOX[2]) & (X[:, 1] >= GEO_BOX[1]) & (X[:, 1] <= GEO_BOX[3])
    )
    geo = {**GEO, "min_samples": 10}
    for events, extra in ((Stops("100m", "5min"), {}), (TripEnds("both"), {"status": status})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivateNoteWarning)
            got = fit_lonlat(
                X, bounds=GEO_BOX, units=units, times=times, events=events, outside="drop", **extra, **geo
            )
        rows = np.flatnonzero(inside)
        alone = fit_lonlat(
            X[rows],
            bounds=GEO_BOX,
            units=units[rows],
            times=stamps.iloc[rows],
            status=None if "status" not in extra else df["busy"].to_numpy()[rows],
            events=events,
            **geo,
        )
        assert np.array_equal(got.histogram.values, alone.histogram.values)
        assert got.n_spans == alone.n_spans


def test_one_more_row_outside_changes_nothing_when_dropped(tmp_path):
    """Neighbouring inputs: D and D plus one row outside the box (at (0, 0),
    or far away) give the same release at the same seed; clipped, the row
    counts in the corner's cell."""
    for extra in ([0.0, 0.0], [1e6, 5.0], [5.0, -3.0]):
        more = np.vstack([P, [extra]])
        for histogram in ("dense", "sparse"):
            base = _fit(P, outside="drop", histogram=histogram)
            grown = _fit(more, outside="drop", histogram=histogram)
            assert _saved(tmp_path, grown.spans_) == _saved(tmp_path, base.spans_)
        # at person level: one more unit whose every row is outside
        units = np.append(U, "newcomer")
        base = _fit(P, U, outside="drop")
        grown = _fit(np.vstack([more, [extra]]), np.append(units, "newcomer"), outside="drop")
        assert _saved(tmp_path, grown.spans_) == _saved(tmp_path, base.spans_)
    # clipped, the one row changes the dense release (its cell's count)
    a = _fit(P, histogram="dense")
    b = _fit(np.vstack([P, [[0.0, 0.0]]]), histogram="dense")
    assert not np.array_equal(a.histogram_.values, b.histogram_.values)


class _Unread:
    """Points that must not be read: refused before anything is."""

    def __array__(self, *args, **kwargs):
        raise AssertionError("the points were read")

    def __len__(self):
        raise AssertionError("the points were looked at")


class _Accountant:
    def __init__(self):
        self.calls = []

    def check(self, epsilon, delta):
        self.calls.append(("check", epsilon, delta))

    def spend(self, epsilon, delta):
        self.calls.append(("spend", epsilon, delta))


def test_drop_needs_public_bounds_and_refuses_before_reading_or_spending():
    acc = _Accountant()
    with pytest.raises(ValueError, match=r"outside='drop' needs public bounds=\(lower, upper\)"):
        DPDBSCAN(**FIT, outside="drop", accountant=acc).fit(_Unread())
    assert acc.calls == []
    # the bounds taken from the data (a PrivacyLeakWarning) are still fine for clip
    with pytest.warns(Warning):
        DPDBSCAN(**FIT, random_state=SEED).fit(P)


def test_drop_with_the_dask_backend_needs_the_points_in_memory(tmp_path):
    pytest.importorskip("dask")
    acc = _Accountant()
    path = tmp_path / "never-read.parquet"  # no such file: refused before it is looked for
    frame = pd.DataFrame({"x": P[:, 0], "y": P[:, 1]})
    for X in (str(path), frame):
        with pytest.raises(ValueError, match="outside='drop' drops each row outside the box with the points"):
            DPDBSCAN(**FIT, bounds=BOUNDS, outside="drop", backend="dask", accountant=acc).fit(X)
    assert acc.calls == []
    # an array in memory: the door drops the rows, the backend counts the rest
    on_dask = _fit(P, outside="drop", backend="dask")
    assert _saved(tmp_path, on_dask.spans_) == _saved(tmp_path, _fit(P, outside="drop").spans_)


def test_outside_follows_scikit_learn_s_conventions():
    from sklearn.base import clone

    est = DPDBSCAN(0.5, bounds=BOUNDS, outside="drop")
    assert est.get_params()["outside"] == "drop"
    assert DPDBSCAN().get_params()["outside"] == "clip"
    copy = clone(est)
    assert copy.outside == "drop" and copy is not est
    assert copy.set_params(outside="clip").outside == "clip" and est.outside == "drop"
    assert "outside='drop'" in repr(est)


@pytest.mark.parametrize("value", ["trim", "Drop", None, True])
def test_a_bad_outside_is_refused_naming_the_allowed_values(value):
    with pytest.raises(ValueError, match=r"outside must be one of 'clip', 'drop', got outside="):
        DPDBSCAN(**FIT, bounds=BOUNDS, outside=value).fit(_Unread())
    with pytest.raises(ValueError, match=r"outside must be one of 'clip', 'drop'"):
        fit_lonlat(_Unread(), bounds=GEO_BOX, eps="50m", outside=value)


def test_a_ledger_records_the_rule(tmp_path):
    path = tmp_path / "budget.ledger"
    Ledger.create(path, "d", 5.0, 1e-5)
    for rule in ("clip", "drop"):
        _fit(P, outside=rule, ledger=Ledger(path, "d"))
    rows = [json.loads(r[0]) for r in sqlite3.connect(path).execute("SELECT params FROM releases")]
    assert [r["outside"] for r in rows] == ["clip", "drop"]
