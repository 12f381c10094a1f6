"""A newcomer's frictions: what goes wrong first says what it wants."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan import fit_lonlat, predict_lonlat

pytestmark = pytest.mark.filterwarnings("ignore::dpdbscan.exceptions.InsecureRandomnessWarning")

BOX = (-122.48, 37.72, -122.38, 37.82)


@pytest.fixture(scope="module")
def geo():
    rng = np.random.default_rng(0)
    lonlat = np.vstack(
        [rng.normal([-122.41, 37.79], 0.002, (3000, 2)), rng.normal([-122.44, 37.75], 0.002, (3000, 2))]
    )
    return fit_lonlat(lonlat, bounds=BOX, eps="100m", min_samples=30, random_state=0), lonlat


def test_predict_on_a_geographic_model_given_degrees_says_what_it_wants(geo):
    model, lonlat = geo
    with pytest.raises(ValueError, match=r"geographic model: predict takes km .*predict_lonlat"):
        model.predict(lonlat[:5])
    labels = predict_lonlat(model, lonlat[:5])  # degrees through the projection
    assert labels.shape == (5,) and (labels >= 0).any()
    # km of the projection, as the model's own coordinates, still work
    from dpdbscan.geometry.projection import projection_of

    km = projection_of(model).forward(lonlat[:5])
    assert model.predict(km).tolist() == labels.tolist()


def test_points_far_from_the_box_are_noise_not_an_error(geo):
    model, _ = geo
    with pytest.warns(UserWarning, match="no point of the 1 given lies inside"):
        assert model.predict([[500.0, 500.0]]).tolist() == [-1]


@pytest.mark.parametrize(
    "env,path,says",
    [
        (
            None,
            "../shared/data/cabs_tiny.csv.gz",
            "DPDBSCAN_DATA is not set and its default, ../shared/data from",
        ),
        (
            None,
            "/cabs_tiny.csv.gz",
            'a path written "$DPDBSCAN_DATA/cabs_tiny.csv.gz" became /cabs_tiny.csv.gz',
        ),
        (
            "/nowhere/data",
            "/nowhere/data/cabs_tiny.csv.gz",
            "under DPDBSCAN_DATA=/nowhere/data: set DPDBSCAN_DATA",
        ),
        (  # an example copied with the default spelt out, the variable set elsewhere
            "/nowhere/data",
            "../shared/data/dev/banana.csv",
            "../shared/data is only DPDBSCAN_DATA's default; here DPDBSCAN_DATA=/nowhere/data: "
            'write "$DPDBSCAN_DATA/dev/banana.csv"',
        ),
    ],
)
def test_a_missing_input_under_the_data_folder_names_the_variable(
    env, path, says, monkeypatch, tmp_path, capsys
):
    from dpdbscan.cli import main

    monkeypatch.chdir(tmp_path)
    if env is None:
        monkeypatch.delenv("DPDBSCAN_DATA", raising=False)
    else:
        monkeypatch.setenv("DPDBSCAN_DATA", env)
    assert main(["fit", path, "--bounds", "0", "1", "--eps", "0.1", "--min-samples", "5"]) == 2
    err = capsys.readouterr().err
    assert f"input file not found: {path} (" in err and says in err
    assert ("export DPDBSCAN_DATA=" in err) == (env is None)
    assert not any(tmp_path.iterdir())  # nothing written


def test_a_missing_file_of_one_s_own_is_just_missing(monkeypatch, tmp_path, capsys):
    from dpdbscan.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DPDBSCAN_DATA", raising=False)
    assert main(["fit", "mine.csv", "--bounds", "0", "1", "--eps", "0.1", "--min-samples", "5"]) == 2
    assert "input file not found: mine.csv\n" in capsys.readouterr().err


@pytest.mark.parametrize("choice,says", [("busiest", "its busiest"), ("uniform", "chosen at random")])
def test_the_person_level_guarantee_names_the_cells_each_unit_keeps(choice, says):
    """The guarantee sentence (model file, GeoJSON, map) says which k cells a
    unit keeps: its busiest by default, k at random with cell_choice="uniform"
    (it said "chosen at random" for both)."""
    from dpdbscan import DPDBSCAN, guarantee

    rng = np.random.default_rng(3)
    X = rng.normal(0.5, 0.05, (4000, 2))
    est = DPDBSCAN(
        0.05,
        min_samples=5,
        bounds=(0, 1),
        delta=1e-6,
        max_cells_per_unit=4,
        cell_choice=choice,
        random_state=0,
    )
    model = est.fit(X, units=np.arange(4000) // 20).spans_
    statement = guarantee(model)["statement"]
    assert f"(at most 4 cells per unit, {says}, and 1 point per cell)" in statement
    assert ("chosen at random" in statement) == (choice == "uniform")


def test_the_published_guarantee_of_a_geographic_model_gives_its_lengths_on_the_ground(geo):
    """The GeoJSON's and the HTML map's guarantee sentence say "within 600 m"
    (as the summary does); they said "within 0.6", km of the model's
    projection, with no unit. The model file keeps its plain numbers."""
    import html

    from dpdbscan import guarantee
    from dpdbscan.model.geojson import geojson
    from dpdbscan.render.webmap import map_html

    model, _ = geo
    published = geojson(model)["properties"]["guarantee"]
    assert "every span lies within 600 m of one cluster" in published and "within 0.6 " not in published
    assert published in html.unescape(map_html(model))
    assert "every span lies within 0.6 of one cluster" in guarantee(model)["statement"]


def test_an_eps_finer_than_the_release_is_refused_in_the_model_s_lengths(geo):
    """with_params and explore on a geographic model say "eps=50 m" and "100 m"
    (they said "eps=0.05", km with no unit, to a user who typed --eps 50m)."""
    from dpdbscan import with_params
    from dpdbscan.render.explorepanels import explore

    model, _ = geo
    with pytest.raises(
        ValueError, match=r"^eps=50 m is finer than this release can resolve: its cells have "
    ):
        with_params(model, eps=0.05)
    with pytest.raises(ValueError, match=r"made at eps=100 m\); a smaller eps needs a new release"):
        with_params(model, eps=0.05)
    with pytest.raises(
        ValueError, match=r"^eps=50 m is finer than this release can resolve \(its smallest eps is "
    ):
        explore(model, eps=[0.05, 0.1])


def _traces_csv(path):
    rng = np.random.default_rng(5)
    rows = ["x,y,cab,time,occupied"]
    for i in range(200):
        lon, lat = rng.normal([-122.41, 37.79], 0.002)
        rows.append(f"{lon:.6f},{lat:.6f},c{i % 20},{1_213_000_000 + 60 * i},{i % 2}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    "extra,problems",
    [
        # a newcomer's first person-level try: the unit's bound and delta, the
        # bounds and the columns were four tries, one refusal each
        (["--unit", "cab"], ["--max-cells-per-unit is required", "--bounds is required", "--geo needs"]),
        (["--header"], ["--bounds is required", "--geo needs exactly two columns"]),
        ([], ["--bounds is required", "say whether the first line of this CSV file is a header"]),
        (
            ["--unit", "cab", "--columns", "x", "y", "--bounds", "-122.5", "37.7", "-122.3", "37.9"],
            ["--max-cells-per-unit is required"],
        ),
    ],
)
def test_what_is_missing_is_said_at_once(extra, problems, monkeypatch, tmp_path, capsys):
    from dpdbscan.cli import main

    monkeypatch.chdir(tmp_path)
    source = _traces_csv(tmp_path / "trips.csv")
    assert main(["fit", str(source), "--geo", "--eps", "200m", "--min-samples", "30", *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1  # one line, as every error
    assert all(p in err for p in problems), err
    if len(problems) > 1:
        assert f"{len(problems)} things to fix before anything is read: (1) " in err
        assert all(f"({i}) " in err for i in range(1, len(problems) + 1))
    else:
        assert "things to fix" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["trips.csv"]  # nothing written
