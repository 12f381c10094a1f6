"""Person level speaks in units: with m = 1 the counts are of units (a cab
once in each cell it was in), and the summary says "cabs", not "points";
when the noise margin swamps MinPts the summary says so, with the range of
MinPts that gives the very same release."""

from __future__ import annotations

import html

import numpy as np
import pytest

from dpdbscan import guarantee, load_model, summary, with_params
from dpdbscan.cli import main
from dpdbscan.model.describe import swamped_min_samples

pytestmark = pytest.mark.filterwarnings("ignore::dpdbscan.exceptions.InsecureRandomnessWarning")


@pytest.fixture(scope="module")
def trips(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trips")
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal([0.3, 0.3], 0.02, size=(8000, 2)), rng.uniform(0, 1, (2000, 2))])
    cab = np.concatenate([np.repeat(np.arange(400), 20), rng.integers(0, 400, 2000)])
    rows = "\n".join(f"{x:.6f},{y:.6f},{u}" for (x, y), u in zip(X, cab))
    (tmp / "trips.csv").write_text("x,y,cab\n" + rows + "\n")
    return tmp


def _fit(trips, min_samples, *extra):
    out = trips / f"out{min_samples}{''.join(extra)}"
    args = [
        "fit",
        str(trips / "trips.csv"),
        "--columns",
        "x",
        "y",
        "--eps",
        "0.03",
        "--min-samples",
        str(min_samples),
        "--bounds",
        "0",
        "1",
        "--delta",
        "1e-6",
        "--unit",
        "cab",
        "--max-cells-per-unit",
        "10",
        "--seed",
        "2",
        "--out-dir",
        str(out),
        "--no-png",
        "--no-geojson",
        "--no-progress",
        *extra,
    ]
    assert main(args) == 0
    return load_model(out / "trips.spans.json")


def test_with_one_point_per_cell_the_summary_counts_cabs(trips):
    model = _fit(trips, 5)
    assert model.release.units.max_points_per_cell == 1
    rows = {line.split(":")[0].strip(): line for line in summary(model).splitlines()[1:]}
    assert (
        "at least 5 cabs are counted within 0.03 of it, a cab once in each cell it was in" in rows["DBSCAN"]
    )
    assert " cabs or more within eps (threshold E~ >= " in rows["DBSCAN"]
    assert (
        rows["margin"].startswith("  margin  : at most ")
        and " cabs are added to min_samples" in rows["margin"]
    )
    g = guarantee(model)
    assert g["each_place"]["counted"] == "cabs"
    assert "one with fewer than 5 cabs counted (each once per cell) within" in rows["guarantee"]


def test_a_swamped_min_samples_is_said_plainly_and_is_true(trips):
    model = _fit(trips, 5)
    flat = swamped_min_samples(model)
    assert flat is not None and flat > 5
    line = next(x for x in summary(model).splitlines() if x.startswith("  MinPts  :"))
    assert f"every min_samples from 1 to {flat:,} gives this same release" in line
    assert f"to at most {model.spans.threshold:,.1f} cabs within eps" in line
    # true: the same core sub-cells at MinPts 1 and at the bound, different just above it
    same = [with_params(model, min_samples=m) for m in (1, flat)]
    assert all(np.array_equal(s.core_keys, model.core_keys) for s in same)
    assert with_params(model, min_samples=flat + 1).spans.threshold > model.spans.threshold
    # a MinPts above the margin is not swamped, and the summary does not say it is
    big = with_params(model, min_samples=flat + 50)
    assert swamped_min_samples(big) is None and "MinPts  :" not in summary(big)


def test_event_level_still_counts_points(tmp_path):
    from dpdbscan import DPDBSCAN

    X = np.random.default_rng(1).normal(0.5, 0.05, (3000, 2))
    m = DPDBSCAN(0.05, min_samples=10, bounds=(0, 1), random_state=0).fit(X).spans_
    text = summary(m)
    assert "at least 10 points lie within 0.05 of it (min_samples=10, eps=0.05)" in text
    assert " cabs" not in text and " units " not in text.split("privacy")[0]


def test_the_warning_counts_cabs_and_says_min_samples_is_swamped(trips, capsys):
    capsys.readouterr()
    model = _fit(trips, 6)
    err = capsys.readouterr().err
    flat = swamped_min_samples(model)
    assert flat is not None
    assert f"holds about {model.spans.threshold:.0f} cabs: min_samples=6 plus the noise margin" in err
    assert f"Every min_samples from 1 to {flat:,} gives this same release" in err


def test_explore_s_default_min_samples_start_above_the_swamp(trips, tmp_path, capsys):
    from dpdbscan.model import save_model
    from dpdbscan.render.explorepanels import default_grid

    model = _fit(trips, 5)
    flat = swamped_min_samples(model)
    _, ms = default_grid(model)
    assert ms[0] == flat + 1 and len(ms) == 5  # not 1..20, which all give the same release
    save_model(model, tmp_path / "m.json")
    assert main(["explore", str(tmp_path / "m.json"), "--out-dir", str(tmp_path / "ex"), "--no-png"]) == 0
    assert (tmp_path / "ex" / "m.explore.csv").is_file() and not (tmp_path / "m.explore.csv").exists()
    assert f"{flat + 1}" in capsys.readouterr().out


def test_the_forecast_counts_units_and_names_the_same_swamp_as_the_fit(trips, capsys):
    model = _fit(trips, 5)
    flat = swamped_min_samples(model)
    capsys.readouterr()
    assert (
        main(
            [
                "forecast",
                "--bounds",
                "0",
                "1",
                "--dims",
                "2",
                "--eps",
                "0.03",
                "--min-samples",
                "5",
                "--delta",
                "1e-6",
                "--max-cells-per-unit",
                "10",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "the estimated number of units within eps" in out and " units are added to min_samples" in out
    assert "needs an estimated" in out and "units (each once per cell) or more within eps" in out
    assert f"every min_samples from 1 to {flat:,} gives the same release here" in out


def test_info_says_cabs_and_the_swamp(trips, tmp_path, capsys):
    from dpdbscan.model import save_model

    model = _fit(trips, 5)
    save_model(model, tmp_path / "m.json")
    capsys.readouterr()
    assert main(["info", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("min_samples"))
    assert "5: the cabs a place needs within eps to be dense" in line
    core = next(x for x in out.splitlines() if x.strip().startswith("core test"))
    assert "its estimated number of cabs within eps" in core
    assert f"every min_samples from 1 to {swamped_min_samples(model):,} gives this same release" in line


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """A large fleet: 4,000 cabs at one place (a cell's worth), and each
    cab's few other points spread over the box."""
    tmp = tmp_path_factory.mktemp("fleet")
    rng = np.random.default_rng(3)
    n = 4000
    X = np.vstack([rng.normal([0.3, 0.3], 0.003, size=(n, 2)), rng.uniform(0, 1, (2 * n, 2))])
    cab = np.concatenate([np.arange(n), rng.integers(0, n, 2 * n)])
    rows = "\n".join(f"{x:.6f},{y:.6f},{u}" for (x, y), u in zip(X, cab))
    (tmp / "trips.csv").write_text("x,y,cab\n" + rows + "\n")
    return tmp


def test_a_min_samples_small_beside_a_large_fleet_is_said_with_what_would_keep_to_places(fleet):
    from dpdbscan.model.describe import FLEET_SHARE, fleet_line

    model = _fit(fleet, 5, "--max-cells-per-unit", "4")
    busiest = float(np.max(model.histogram.values))
    assert model.spans.threshold < FLEET_SHARE * busiest  # the case the line is for
    line = next(x for x in summary(model).splitlines() if x.startswith("  fleet   :"))
    assert f"MinPts=5 is small beside this release: its busiest cell counts about {busiest:,.0f} cabs" in line
    assert f"({model.spans.threshold:,.0f} cabs within eps)" in line
    assert f"at least 10% of the busiest cell (about {FLEET_SHARE * busiest:,.0f})" in line
    # at that MinPts the threshold is no longer small beside the release, and nothing is said
    near = with_params(model, min_samples=round(FLEET_SHARE * busiest))
    assert near.spans.threshold >= FLEET_SHARE * busiest and fleet_line(near, "cabs") == []
    assert "fleet   :" not in summary(near)


def test_no_fleet_line_for_a_fleet_of_hundreds(trips):
    from dpdbscan.model.describe import fleet_line

    model = _fit(trips, 5)
    assert fleet_line(model, "cabs") == [] and "fleet   :" not in summary(model)


def test_the_automatic_mode_says_its_swamped_min_samples_is_its_own_choice(trips, capsys):
    """The automatic mode chose MinPts itself: the swamped note says "the
    chosen min_samples", not a MinPts the user never gave."""
    out = trips / "auto"
    args = ["fit", str(trips / "trips.csv"), "--columns", "x", "y", "--eps", "auto", "--min-samples", "auto"]
    args += ["--bounds", "0", "1", "--delta", "1e-6", "--unit", "cab", "--max-cells-per-unit", "10"]
    args += ["--seed", "2", "--out-dir", str(out), "--no-png", "--no-geojson", "--no-progress"]
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err
    model = load_model(out / "trips.spans.json")
    flat = swamped_min_samples(model)
    assert flat is not None
    assert f"not the chosen min_samples={model.spec.min_samples}, decides which places" in err


def test_the_published_files_say_what_a_swamped_min_samples_really_needs(trips):
    """The GeoJSON, the PNG's title and the HTML map's legend carry what a
    place really needs when the margin swamps MinPts, not MinPts alone; a
    MinPts above the margin is published plainly."""
    import matplotlib

    matplotlib.use("Agg")
    from dpdbscan.model.geojson import geojson
    from dpdbscan.render.plotting import plot_model
    from dpdbscan.render.webmap import map_html

    model = _fit(trips, 5)
    flat = swamped_min_samples(model)
    assert flat is not None
    need = f"swamped: a place needs about {model.spans.threshold:,.0f} cabs within eps"
    props = geojson(model)["properties"]
    assert props["min_samples"] == 5 and props["min_samples_swamped_up_to"] == flat
    assert props["core_threshold"] == pytest.approx(model.spans.threshold)
    assert f"MinPts=5, {need}" in plot_model(model).get_title()
    assert need in html.unescape(map_html(model))
    big = with_params(model, min_samples=flat + 50)
    assert geojson(big)["properties"]["min_samples_swamped_up_to"] is None
    assert "swamped" not in plot_model(big).get_title() and "swamped" not in map_html(big)
