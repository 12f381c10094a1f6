"""``dpdbscan check``: the data owner's dry run (cli/check.py).

Private notes only (stderr, each line "[private: do not publish] "), nothing on stdout, no
file written, no noise drawn; the rows counted and dropped as fit counts
them; the forecast's numbers as ``dpdbscan forecast`` gives them."""

import io
import json
import sys
import types

import numpy as np
import pytest

from clirun import run

SF = ["-122.48", "37.72", "-122.38", "37.82"]


def lines(err):
    return err.strip().splitlines()


def line_of(err, head):
    got = [ln for ln in lines(err) if ln.startswith(f"[private: do not publish] {head}")]
    assert len(got) == 1, err
    return got[0]


@pytest.fixture
def box_csv(tmp_path):
    """100 rows in [0, 10]^2 but for: 10 with x below 0, 5 with x above 10,
    20 with y above 10 (disjoint rows); plus 4 rows a fit drops."""
    rng = np.random.default_rng(1)
    X = rng.uniform(1, 9, (100, 2))
    X[:10, 0] = -3.0
    X[10:15, 0] = 12.0
    X[15:35, 1] = 10.5
    X[35, 0], X[36, 1] = 0.0, 10.0  # on the bounds: inside
    rows = [f"{float(a)!r},{float(b)!r}" for a, b in X]
    rows += ["abc,1.5", "2.0,nan", "inf,3", "4.0"]  # non-numeric, NaN, inf, a missing field
    path = tmp_path / "box.csv"
    path.write_text("x,y\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture
def geo_csv(tmp_path):
    """Pick-ups around two hot spots in San Francisco, lat first and an id column."""
    rng = np.random.default_rng(0)
    P = np.vstack([rng.normal(c, [0.0004, 0.0003], (1500, 2)) for c in ([-122.41, 37.79], [-122.44, 37.76])])
    path = tmp_path / "trips.csv"
    rows = [f"cab{i},{float(lat)!r},{float(lon)!r}" for i, (lon, lat) in enumerate(P)]
    path.write_text("id,latitude,longitude\n" + "\n".join(rows) + "\n")
    return path, P


def test_stdout_is_empty_and_every_line_is_a_private_note(capsys, geo_csv):
    path, _ = geo_csv
    rc, out, err = run(
        capsys, "check", path, "--header", "--geo", "--bounds", *SF, "--eps", "50m", "--min-samples", "100"
    )
    assert rc == 0, err
    assert out == ""
    assert len(lines(err)) >= 10
    bad = [ln for ln in lines(err) if not ln.startswith("[private: do not publish] ")]
    assert not bad, bad


def test_rows_read_and_dropped_as_fit_counts_them(capsys, box_csv, tmp_path):
    rc, out, err = run(capsys, "check", box_csv, "--header", "--bounds", "0", "0", "10", "10")
    assert rc == 0 and out == "", err
    assert line_of(err, "rows") == (
        "[private: do not publish] rows      : 104 read, 4 dropped "
        "(missing, non-numeric or non-finite values), 100 kept"
    )
    # fit's own notes on the same file: the same rows read and dropped
    rc, _, fit_err = run(
        capsys,
        "fit",
        box_csv,
        "--header",
        "--bounds",
        "0",
        "0",
        "10",
        "10",
        "--eps",
        "1",
        "--min-samples",
        "5",
        "--out-dir",
        tmp_path / "out",
        "--no-png",
        "--no-geojson",
    )
    assert rc == 0, fit_err
    assert (
        "read 104 rows x 2 column(s)" in fit_err
        and "4 row(s) with missing or non-finite values are dropped" in fit_err
    )
    assert "read 104 rows x 2 column(s) (x, y)" in err


def test_share_outside_each_bound_per_column(capsys, box_csv):
    rc, _, err = run(capsys, "check", box_csv, "--header", "--bounds", "0", "0", "10", "10")
    assert rc == 0, err
    assert line_of(err, "column 'x'") == (
        "[private: do not publish] column 'x': min -3, max 12; bounds 0 .. 10; "
        "10.0% of the rows below the lower, 5.0% above the upper"
    )
    assert line_of(err, "column 'y'").startswith("[private: do not publish] column 'y': min ")
    assert line_of(err, "column 'y'").endswith(
        "; bounds 0 .. 10; 0.0% of the rows below the lower, 20.0% above the upper"
    )
    assert line_of(err, "column 'y'").split(", max ")[1].startswith("10.5;")
    assert line_of(err, "outside") == (
        "[private: do not publish] outside   : 35 row(s) (35.0%) outside the bounds; "
        "a fit clips them onto the box (points clipped onto the box pile up on its edges, where many "
        "(readings beyond the bounds, a saturated sensor) can make a span on an edge that is no cluster "
        "of the data: --outside drop (in memory, the default backend) drops them instead)"
    )
    # one lower and one upper for all columns: the same shares
    rc, _, err2 = run(capsys, "check", box_csv, "--header", "--bounds", "0", "10")
    assert line_of(err2, "column 'x'") == line_of(err, "column 'x'")


def test_most_points_outside_gives_the_swapped_bounds_hint(capsys, tmp_path):
    # x in [0, 10], y in [5, 10]; the box x in [0, 10], y in [5, 20] given as
    # xmin xmax ymin ymax reads as the valid box [0, 5] x [10, 20]
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.uniform(0, 10, 200), rng.uniform(5, 10, 200)])
    path = tmp_path / "p.csv"
    path.write_text("x,y\n" + "\n".join(f"{float(a)!r},{float(b)!r}" for a, b in X) + "\n")
    rc, out, err = run(capsys, "check", path, "--header", "--bounds", "0", "10", "5", "20")
    assert rc == 0 and out == ""
    assert line_of(err, "most points") == (
        "[private: do not publish] most points are outside the bounds: "
        "the bounds look like xmin xmax ymin ymax: "
        "--bounds wants xmin ymin xmax ymax, i.e. 0 5 10 20"
    )


OPTIONS = [
    [],
    ["--epsilon", "0.3", "--subcells", "1"],
    ["--core", "bound", "--margin", "paper", "--histogram", "sparse", "--epsilon", "2"],
    ["--eta", "2", "--beta", "0.01", "--noise", "laplace"],
]


@pytest.mark.parametrize("extra", OPTIONS)
def test_kappa_margin_threshold_equal_the_forecast(capsys, box_csv, extra):
    common = ["--eps", "0.7", "--min-samples", "12", *extra]
    rc, out, err = run(capsys, "check", box_csv, "--header", "--bounds", "0", "0", "10", "10", *common)
    assert rc == 0 and out == "", err
    rc, fout, ferr = run(
        capsys, "forecast", "--bounds", "0", "0", "10", "10", *common, "--n-expected", "100", "--json"
    )
    assert rc == 0, ferr
    fc = json.loads(fout)
    assert f"{fc['n_cells']:,} cells in 2 dimension(s) (|X|)" in line_of(err, "grid")
    assert f"(kappa={fc['kappa']}" in line_of(err, "grid")
    assert line_of(err, "margin").startswith(
        f"[private: do not publish] margin    : {fc['margin']:.2f} points "
    )
    assert f"an estimated {fc['threshold']:.1f} points or more within eps" in line_of(err, "threshold")
    # the detectability sentence, measured against the 100 rows kept
    assert f"[private: do not publish] {fc['sentence']}" in lines(err)
    assert "With 100 points" in fc["sentence"]


def test_no_budget_no_noise_no_file(capsys, geo_csv, tmp_path, monkeypatch):
    import dpdbscan.pipeline as pipeline
    import dpdbscan.release.mechanism as mechanism
    from dpdbscan.release.samplers import integers as _random

    def refuse(*a, **k):
        raise AssertionError("check must not draw noise or release anything")

    monkeypatch.setattr(_random, "make_source", refuse)
    monkeypatch.setattr(mechanism, "make_source", refuse)
    monkeypatch.setattr(mechanism, "release_histogram", refuse)
    monkeypatch.setattr(pipeline, "release_histogram", refuse)
    monkeypatch.setattr(pipeline, "fit", refuse)
    path, _ = geo_csv
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    rc, out, err = run(
        capsys, "check", path, "--header", "--geo", "--bounds", *SF, "--eps", "50m", "--min-samples", "100"
    )
    assert rc == 0 and out == "", err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert "no budget spent, nothing released" in err


def test_geo_lengths_and_ranges_in_degrees(capsys, geo_csv):
    path, P = geo_csv
    base = ["check", path, "--header", "--geo", "--bounds", *SF, "--min-samples", "100"]
    rc, _, err_m = run(capsys, *base, "--eps", "20m")
    assert rc == 0, err_m
    rc, _, err_km = run(capsys, *base, "--eps", "0.02km")
    assert "eps=20 m" in line_of(err_m, "forecast")
    assert line_of(err_m, "grid") == line_of(err_km, "grid")
    assert line_of(err_m, "threshold") == line_of(err_km, "threshold")
    # lon/lat picked by name, ranges in the file's degrees
    assert "(longitude, latitude)" in line_of(err_m, "read")
    lon = line_of(err_m, "column 'longitude'")
    assert f"min {P[:, 0].min():.8g}, max {P[:, 0].max():.8g};" in lon
    assert "bounds -122.48 .. -122.38; 0.0% of the rows below the lower, 0.0% above the upper" in lon
    rc, fout, _ = run(
        capsys,
        "forecast",
        "--geo",
        "--bounds",
        *SF,
        "--min-samples",
        "100",
        "--eps",
        "20m",
        "--n-expected",
        str(len(P)),
        "--json",
    )
    fc = json.loads(fout)
    assert f"[private: do not publish] {fc['sentence']}" in lines(err_m)


def test_stdin(capsys, box_csv, monkeypatch):
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(box_csv.read_bytes())))
    rc, out, err = run(capsys, "check", "-", "--header", "--bounds", "0", "0", "10", "10")
    assert rc == 0 and out == "", err
    assert "from standard input" in line_of(err, "read")
    assert "104 read, 4 dropped" in line_of(err, "rows")


@pytest.mark.parametrize(
    "given,missing",
    [
        ([], "--eps and --min-samples"),
        (["--eps", "1"], "--min-samples"),
        (["--min-samples", "5"], "--eps"),
    ],
)
def test_without_eps_or_min_samples_a_note_names_them(capsys, box_csv, given, missing):
    rc, out, err = run(capsys, "check", box_csv, "--header", "--bounds", "0", "10", *given)
    assert rc == 0 and out == "", err
    assert line_of(err, "no grid") == (
        f"[private: do not publish] no grid, kappa, margin, threshold or fit cost: give {missing} to see them"
    )
    assert "kappa=" not in err and "threshold :" not in err
    assert line_of(err, "rows")  # the data facts are still there


def test_fit_cost_is_an_estimate_from_public_sizes(capsys, box_csv):
    rc, _, err = run(
        capsys, "check", box_csv, "--header", "--bounds", "0", "10", "--eps", "0.7", "--min-samples", "5"
    )
    line = line_of(err, "fit")
    assert "reading took" in line and "of memory" in line and "an estimate" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["--bounds", "0", "10", "0", "10", "--eps", "1", "--min-samples", "5"],  # xmin xmax ymin ymax
        ["--bounds", "0", "0", "10", "10", "--eps", "0", "--min-samples", "5"],
        ["--bounds", "0", "0", "10", "10", "--eps", "20m", "--min-samples", "5"],  # a length needs --geo
        ["--bounds", "0", "0", "10", "10", "--eps", "1", "--min-samples", "0"],
        [
            "--bounds",
            "0",
            "0",
            "10",
            "10",
            "--eps",
            "1",
            "--min-samples",
            "5",
            "--histogram",
            "dense",
            "--theta",
            "3",
        ],
        ["--bounds", "0", "0", "10", "10", "--eps", "1", "--min-samples", "5", "--epsilon", "-1"],
        ["--bounds", "0", "0", "10", "--eps", "1", "--min-samples", "5"],
        ["--bounds", "0", "0", "10", "10", "--eps", "1", "--min-samples", "5", "--columns", "z"],
        ["--bounds", "0", "0", "10", "10", "--eps", "1", "--min-samples", "5", "--delimiter", "ab"],
        ["--bounds", "0", "0", "10", "10", "--eps", "1", "--min-samples", "5", "--ref-lat", "40"],
    ],
)
def test_bad_options_give_fits_one_line_error(capsys, box_csv, tmp_path, argv):
    rc, out, err = run(capsys, "check", box_csv, "--header", *argv)
    assert rc == 2 and out == ""
    errors = [ln for ln in lines(err) if ln.startswith("dpdbscan")]
    assert len(errors) == 1, err
    rc_fit, _, fit_err = run(capsys, "fit", box_csv, "--header", *argv, "--out-dir", tmp_path / "out")
    assert rc_fit == 2
    # the same message after each command's own prefix
    assert errors[0].startswith("dpdbscan check: error: ")
    assert [e.replace("dpdbscan check:", "dpdbscan fit:", 1) for e in errors] == [
        ln for ln in lines(fit_err) if ln.startswith("dpdbscan")
    ]
    assert "abc" not in err  # no data value is quoted


def test_bounds_are_required(capsys, box_csv):
    rc, out, err = run(capsys, "check", box_csv, "--header", "--eps", "1", "--min-samples", "5")
    assert rc == 2 and out == "" and "--bounds" in err


def test_quiet_prints_nothing(capsys, box_csv):
    rc, out, err = run(capsys, "check", box_csv, "--header", "--bounds", "0", "10", "--quiet")
    assert (rc, out, err) == (0, "", "")


def test_person_level_check_speaks_in_units_and_metres(capsys, geo_csv):
    """At person level the forecast is measured against the bounded
    unit-cell contributions, not "points", and its table and sentence give
    lengths on the ground (m), not bare km."""
    path, _ = geo_csv
    rc, _, err = run(
        capsys,
        "check",
        path,
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "20m",
        "--min-samples",
        "10",
        "--unit",
        "id",
        "--max-cells-per-unit",
        "5",
        "--delta",
        "1e-6",
    )
    assert rc == 0, err
    assert "unit-cell contributions the bounded counts hold" in line_of(err, "forecast")
    sentence = next(ln for ln in lines(err) if "Person-level: each unit adds to at most 5 cells" in ln)
    assert "At eps 20 m (cells of 14.1 m)" in sentence


@pytest.mark.parametrize(
    ("choice", "kept", "capped"), [("busiest", "63.6%", "18.2%"), ("uniform", "45.5%", "18.2%")]
)
def test_the_bound_line_follows_the_cell_choice(capsys, tmp_path, choice, kept, capped):
    """Unit a has 5, 3 and 1 points in three far-apart cells, unit b 2 in
    one: k = 1 keeps a's busiest (5) and b's 2 of 11 points, exactly; at
    random a keeps a third of its 9 on average (3 + 2 of 11); m = 1 keeps one
    point of each kept cell either way."""
    rows = ["x,y,u"] + ["1,1,a"] * 5 + ["11,11,a"] * 3 + ["21,21,a"] + ["1,21,b"] * 2
    path = tmp_path / "units.csv"
    path.write_text("\n".join(rows) + "\n")
    args = ["check", str(path), "--header", "--columns", "x", "y", "--bounds", "0", "30"]
    args += [
        "--eps",
        "1",
        "--min-samples",
        "2",
        "--unit",
        "u",
        "--max-cells-per-unit",
        "1",
        "--delta",
        "1e-6",
    ]
    rc, _, err = run(capsys, *args, "--cell-choice", choice)
    assert rc == 0, err
    bound = line_of(err, "bound")
    assert f"keeps {kept} of the points" in bound
    assert ("its busiest cells" in bound) == (choice == "busiest")
    assert f"add up to {capped} of the points" in bound


def test_a_geographic_forecast_plans_the_person_level_automatic_mode_as_the_fit_does(capsys):
    from dpdbscan.plan.autoplan import PLACE_EXTENT_KM, place_radius

    box = ["--bounds", "-122.6", "37.55", "-122.3", "37.85"]
    auto = ["--eps", "auto", "--min-samples", "auto", "--delta", "1e-6", "--json"]
    rc, out, err = run(capsys, "forecast", "--geo", *box, *auto, "--max-cells-per-unit", "20")
    assert rc == 0, err
    # the fit's base: the place radius, whatever the rows' number (public: --geo, units)
    assert json.loads(out)["eps"] == pytest.approx(place_radius(PLACE_EXTENT_KM, 2, 4.0))
    rc, out, err = run(
        capsys, "forecast", "--geo", *box, *auto, "--max-cells-per-unit", "20", "--n-expected", "1e7"
    )
    assert rc == 0 and json.loads(out)["eps"] == pytest.approx(place_radius(PLACE_EXTENT_KM, 2, 4.0))
    # event level keeps its points-per-cell base
    rc, out, err = run(capsys, "forecast", "--geo", *box, *auto)
    assert rc == 0 and json.loads(out)["eps"] < 0.99 * place_radius(PLACE_EXTENT_KM, 2, 4.0)  # 163 m


def test_clipping_counts_match_a_plain_count_over_several_scan_blocks(monkeypatch):
    from dpdbscan.prepare import clipping

    monkeypatch.setattr(clipping, "_SCAN_ROWS", 64)  # many blocks, a short last one
    rng = np.random.default_rng(4)
    lower, upper = np.array([0.0, -1.0, 2.0]), np.array([1.0, 1.0, 3.0])
    X = rng.uniform(-0.5, 3.5, (1000, 3))
    X[rng.choice(1000, 40, replace=False), rng.integers(0, 3, 40)] = np.nan
    X[rng.choice(1000, 10, replace=False), rng.integers(0, 3, 10)] = np.inf
    X[200:264] = 0.5  # a whole block inside the box
    X[200:264, 1:] = [0.0, 2.5]
    got = clipping.clipping_counts(X, lower, upper)
    finite = np.isfinite(X).all(axis=1)
    out = finite & ~((X >= lower) & (X <= upper)).all(axis=1)
    assert got["n_bad"] == int((~finite).sum()) and got["n_ok"] == int(finite.sum())
    assert got["outside"] == int(out.sum())
    np.testing.assert_array_equal(got["below"], (X[out] < lower).sum(axis=0))
    np.testing.assert_array_equal(got["above"], (X[out] > upper).sum(axis=0))


def test_points_that_are_not_lon_lat_are_not_told_of_gps_fixes(capsys, box_csv, tmp_path):
    """Sensor readings (no --geo) outside the bounds: check and fit told their owner of "GPS fixes
    at (0, 0), a trip out of town" and "a span that is no place"; those words are for --geo."""
    rc, _, err = run(capsys, "check", box_csv, "--header", "--bounds", "0", "0", "10", "10")
    assert rc == 0, err
    assert "GPS" not in err and "out of town" not in err and "a saturated sensor" in err
    rc, _, fit_err = run(
        capsys, "fit", box_csv, "--header", "--bounds", "0", "0", "10", "10", "--eps", "1",
        "--min-samples", "5", "--out-dir", tmp_path / "o", "--no-png", "--no-geojson",
    )  # fmt: skip
    assert rc == 0, fit_err
    assert "GPS" not in fit_err and "a saturated sensor" in fit_err


def test_lon_lat_outside_the_box_keeps_the_words_of_fixes_and_trips(capsys, geo_csv):
    path, _ = geo_csv
    # a box that leaves the western hot spot outside
    rc, _, err = run(
        capsys, "check", path, "--header", "--geo", "--bounds", "-122.43", "37.72", "-122.38", "37.82"
    )
    assert rc == 0, err
    assert "GPS fixes at (0, 0), a trip out of town" in err and "a saturated sensor" not in err
