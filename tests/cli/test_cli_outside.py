"""``--outside drop``: a point outside the public box is dropped, not
clipped onto its edge, each row alone (docs/privacy.md §4.1).

Traces with GPS fixes at (0, 0), as fleets' exports have them, pile up on
the box's corner when clipped: with enough units a corner span appears that
is no place. Dropped, they leave no trace, and a stop is made of the unit's
other rows. The model says which rule was used; the default is unchanged.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpdbscan.prepare import Points
from dpdbscan.prepare.clipping import drop_outside_step

from clirun import run

BOX = (116.2, 39.75, 116.65, 40.1)
PLACE = (116.427, 39.903)  # a station: where the units stop


def _traces(path, n_units=400):
    """Each unit: 12 min at (0, 0) (no GPS fix), then 12 min at the station,
    a fix every 2 min; out of order within a unit (the times decide)."""
    rng = np.random.default_rng(70421)
    lines = ["taxi,time,lon,lat"]
    for u in range(n_units):
        rows = [(u, 1_000 + 120 * i, 0.0, 0.0) for i in range(7)]
        jit = rng.normal(0, 0.0001, (7, 2))
        rows += [(u, 3_000 + 120 * i, PLACE[0] + a, PLACE[1] + b) for i, (a, b) in enumerate(jit)]
        rng.shuffle(rows)
        lines += [f"{a},{t},{float(x)!r},{float(y)!r}" for a, t, x, y in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


ARGS = (
    "--header --geo --columns lon lat --unit taxi --time time --stops 100m 5min --bounds "
    + " ".join(map(str, BOX))
    + " --eps 200m --min-samples 30 --max-cells-per-unit 4 --delta 1e-6 --seed 3 --no-png"
)


def _span_centres(geojson):
    g = json.loads(geojson.read_text())
    out = []
    for f in g["features"]:
        ring = np.array(f["geometry"]["coordinates"][0][0])
        out.append(ring.mean(axis=0))
    return out


@pytest.mark.filterwarnings("ignore")  # --seed warns (research only)
def test_fixes_at_zero_make_a_corner_span_when_clipped_and_none_when_dropped(capsys, tmp_path):
    data = _traces(tmp_path / "traces.csv")
    spans = {}
    for rule in ("clip", "drop"):
        extra = [] if rule == "clip" else ["--outside", "drop"]
        rc, _, err = run(capsys, "fit", data, *ARGS.split(), "--out-dir", tmp_path / rule, *extra)
        assert rc == 0, err
        spans[rule] = _span_centres(tmp_path / rule / "traces.spans.geojson")
        model = json.loads((tmp_path / rule / "traces.spans.json").read_text())
        assert model["metadata"].get("outside") == (None if rule == "clip" else "drop")
        if rule == "drop":
            assert "2,800 row(s) (50.0%) lie outside the bounds and are dropped (--outside drop)" in err
        else:
            assert "--outside drop (in memory, the default backend) drops them instead" in err

    def near(c, lon, lat):
        return abs(c[0] - lon) < 0.005 and abs(c[1] - lat) < 0.005

    # clipped: a span at the box's south-west corner, beside the station's
    assert any(near(c, BOX[0], BOX[1]) for c in spans["clip"])
    assert any(near(c, *PLACE) for c in spans["clip"])
    # dropped: the station alone
    assert not any(near(c, BOX[0], BOX[1]) for c in spans["drop"])
    assert any(near(c, *PLACE) for c in spans["drop"])


def test_check_counts_the_rows_dropped_outside(capsys, tmp_path):
    data = _traces(tmp_path / "traces.csv", n_units=5)
    args = ARGS.replace(" --seed 3 --no-png", "")
    rc, out, err = run(capsys, "check", data, *args.split(), "--outside", "drop")
    assert rc == 0 and out == ""
    assert "70 read, 0 dropped (missing, non-numeric or non-finite values, or no unit), 35 outside" in err
    assert "the bounds dropped (--outside drop), 35 kept" in err
    assert "events    : 5 stop(s)" in err
    assert "outside   : none left; --outside drop drops the rows outside the bounds" in err
    assert "a fit clips them onto the box" not in err


@pytest.mark.parametrize(
    "extra, expected",
    [
        ("--backend dask", "--outside drop drops each row outside the box with the points in memory"),
        ("--bounds-from-data", "--outside drop needs public --bounds"),
    ],
)
def test_outside_drop_is_refused_where_it_cannot_apply(capsys, tmp_path, extra, expected):
    data = _traces(tmp_path / "traces.csv", n_units=2)
    bounds = [] if "bounds" in extra else ["--bounds", "0", "0", "200", "50"]
    argv = ["fit", data, "--header", "--columns", "lon", "lat", "--eps", "1", "--min-samples", "5"]
    rc, _, err = run(capsys, *argv, *bounds, *extra.split(), "--outside", "drop", "--out-dir", tmp_path)
    assert rc == 2 and expected in err, err


def test_the_step_drops_each_row_alone_with_its_unit_time_and_status():
    X = np.array([[0.0, 0.0], [5.0, 5.0], [np.nan, 1.0], [11.0, 2.0], [10.0, 10.0], [-0.1, 3.0]])
    pts = Points(
        X,
        ["x", "y"],
        np.array([0.0, 0.0]),
        np.array([10.0, 10.0]),
        units=np.array(["a", "b", "c", "d", "e", "f"]),
        times=np.arange(6.0),
        status=np.array([0, 1, 0, 1, 0, 1]),
    )
    said: list[str] = []
    got = drop_outside_step(said.append)(pts)
    # the box's faces are inside; a missing value is left to the clean rule
    np.testing.assert_array_equal(got.X, X[[0, 1, 2, 4]])
    assert got.units.tolist() == ["a", "b", "c", "e"]
    assert got.times.tolist() == [0.0, 1.0, 2.0, 4.0]
    assert got.status.tolist() == [0, 1, 0, 0]
    assert said == [
        "2 row(s) (33.3%) lie outside the bounds and are dropped (--outside drop), not clipped onto the box"
    ]
    # one more row changes the output by that row at most (neighbours stay neighbours)
    for extra in ([3.0, 3.0], [30.0, 3.0]):
        more = Points(np.vstack([X, extra]), ["x", "y"], pts.lower, pts.upper)
        grown = drop_outside_step()(more).X
        inside = bool(np.all((np.array(extra) >= 0) & (np.array(extra) <= 10)))
        np.testing.assert_array_equal(grown, np.vstack([got.X, [extra]]) if inside else got.X)


def test_the_model_of_a_dropping_fit_meets_the_published_schema(capsys, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files

    data = _traces(tmp_path / "traces.csv", n_units=3)
    args = ARGS.replace(" --seed 3", "")
    rc, _, err = run(capsys, "fit", data, *args.split(), "--outside", "drop", "--out-dir", tmp_path)
    assert rc == 0, err
    doc = json.loads((tmp_path / "traces.spans.json").read_text())
    schema = json.loads((files("dpdbscan.model") / "schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert schema["properties"]["metadata"]["properties"]["outside"]["enum"] == ["drop"]
