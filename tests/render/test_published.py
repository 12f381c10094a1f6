"""What gets published says what it protects.

The GeoJSON's top-level properties, the PNG's title and the HTML map's
legend name the level (person or event), the unit (the unit column's name),
the contribution bounds k and m, epsilon, delta and zCDP rho; the GeoJSON
also says what its coordinates are (lon/lat, km of the projection, or the
data's own units), since every GIS reads GeoJSON as lon/lat.
"""

from __future__ import annotations

import html
import json

import numpy as np
import pytest

from dpdbscan.cli import main
from dpdbscan.model import geojson, load_model
from dpdbscan.model.geojson import LONLAT, to_geojson
from dpdbscan.render.webmap import map_html

from spanmodels import hand_model, square

pytestmark = pytest.mark.filterwarnings("ignore::dpdbscan.exceptions.InsecureRandomnessWarning")


@pytest.fixture(scope="module")
def person_level(tmp_path_factory):
    """A person-level release from the command line: 300 people ("cab"
    column) in a blob, written with its GeoJSON and PNG."""
    tmp = tmp_path_factory.mktemp("person")
    rng = np.random.default_rng(0)
    X = rng.normal([0.3, 0.3], 0.03, size=(6000, 2))
    cab = np.repeat(np.arange(300), 20)
    rows = "\n".join(f"{x:.6f},{y:.6f},c{u}" for (x, y), u in zip(X, cab))
    (tmp / "trips.csv").write_text("x,y,cab\n" + rows + "\n")
    args = [
        "fit",
        str(tmp / "trips.csv"),
        "--columns",
        "x",
        "y",
        "--eps",
        "0.03",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "1",
        "--delta",
        "1e-6",
        "--unit",
        "cab",
        "--max-cells-per-unit",
        "20",
        "--seed",
        "1",
        "--out-dir",
        str(tmp),
        "--no-progress",
    ]
    assert main(args) == 0
    return tmp


def test_the_geojson_says_who_is_protected(person_level):
    props = json.loads((person_level / "trips.spans.geojson").read_text())["properties"]
    assert props["privacy_level"] == "person" and props["unit_column"] == "cab"
    assert props["max_cells_per_unit"] == 20 and props["max_points_per_cell"] >= 1
    assert props["epsilon"] == 1 and props["delta"] == 1e-6 and props["zcdp_rho"] > 0
    assert props["protects"].startswith("person-level: each unit (column cab) is protected")
    assert "longitude" not in props["coordinates"] or "not longitude" in props["coordinates"]


def test_the_png_title_says_who_is_protected(person_level):
    from PIL import Image

    from dpdbscan.render.plotting import plot_model

    model = load_model(person_level / "trips.spans.json")
    ax = plot_model(model, kind="spans")
    title = ax.get_title()
    lines = title.split("\n")
    assert max(map(len, lines)) <= 110  # wrapped: a long line would be cut at the figure's edge
    title = " ".join(lines)
    k, m = model.release.units.max_cells_per_unit, model.release.units.max_points_per_cell
    assert f"person-level: each cab is protected (k={k} cells and m={m} point" in title
    assert "epsilon=1, delta=1e-06" in title and "rho=" in title
    with Image.open(person_level / "trips.spans.png") as png:  # the fit wrote it, with that title
        assert png.size[0] > 0


def test_the_map_legend_says_who_is_protected(person_level):
    model = load_model(person_level / "trips.spans.json")
    page = map_html(model)
    legend = html.unescape(page.split('<p id="protects">')[1].split("</p>")[0])
    k = model.release.units.max_cells_per_unit
    assert legend.startswith(f"person-level: each cab is protected (k={k} cells")
    assert "ε=1, δ=1e-06" in legend and "ρ=" in legend


def test_event_level_files_say_each_row():
    m = hand_model([square(2, 2, 3)], shape=(10, 10))
    props = geojson(m)["properties"]
    assert props["privacy_level"] == "event" and props["unit_column"] is None
    assert props["protects"].startswith("event-level: each row is protected, not each person")
    assert props["coordinates"] == "the data's own units, not longitude/latitude"
    assert "event-level: each row is protected" in html.unescape(map_html(m))


def test_a_geographic_model_s_geojson_declares_km_or_lon_lat():
    m = hand_model([square(4, 4, 4)], shape=(12, 12), width=0.05, geo=True)
    lonlat = geojson(m)
    assert lonlat["properties"]["coordinates"] == LONLAT and "projection" not in lonlat["properties"]
    km = to_geojson(m)  # no transform: km east and north of the projection's origin
    assert km["properties"]["coordinates"].startswith("km east and north of (lon0, lat0)")
    assert "NOT longitude/latitude" in km["properties"]["coordinates"]
    assert km["properties"]["projection"]["kind"] == "equirectangular"
    xs = np.array([x for ring in km["features"][0]["geometry"]["coordinates"][0] for x, _ in ring])
    assert m.grid.lower[0] <= xs.min() and xs.max() <= m.grid.upper[0]  # the model's km, not degrees


def test_counts_below_the_noise_margin_are_not_drawn():
    """A cell whose noisy count is above three noise deviations (4.1 at
    epsilon = 1) but not above the core test's margin (gamma = 5 here) is
    noise at the spans' own standard: the heat layer leaves it out, in the
    picture and on the map; a count well above it is drawn."""
    import matplotlib.pyplot as plt

    from dpdbscan.render.mapstyle import noise_floor
    from dpdbscan.render.plotting import plot_spans

    values = np.zeros((10, 10), dtype=np.int64)
    values[2, 7], values[6, 2] = 5, 50
    m = hand_model([square(5, 5, 2)], shape=(10, 10), values=values)
    assert (
        noise_floor(m.histogram)
        < 5
        <= noise_floor(m.histogram, 1, m.spans.noise_margin)
        == m.spans.noise_margin
    )
    ax = plot_spans(m, extent="box")
    (heat,) = [im for im in ax.images if im.get_gid() == "heat"]
    alpha = np.asarray(heat.get_array())[..., 3].T  # back to [i, j] of the cells
    assert alpha[2, 7] == 0 and alpha[6, 2] > 0
    assert "below 5, noise: not drawn" in heat.get_label()
    plt.close(ax.figure)
    assert "counts below 5 (the noise margin) are noise and not drawn" in html.unescape(map_html(m))


@pytest.mark.parametrize("kind", ["histogram", "sums"])
def test_the_histogram_pictures_say_who_is_protected_too(person_level, kind):
    import matplotlib.pyplot as plt

    from dpdbscan.render.plotting import plot_model

    ax = plot_model(load_model(person_level / "trips.spans.json"), kind=kind)
    assert "\nperson-level: each cab is protected (k=" in ax.get_title()
    plt.close(ax.figure)


def test_published_files_say_what_each_unit_contributed():
    """A release of each unit's stops (or trip ends) says so where it is
    published: the GeoJSON's ``counted``, the title and the map's legend;
    one of the rows says so too. The GeoJSON states eps's units."""
    from dpdbscan.model.describe import counted_brief, protection_fields
    from dpdbscan.traces import Stops, TripEnds

    m = hand_model([square(4, 4, 4)], shape=(12, 12), width=0.05, geo=True)
    props = geojson(m)["properties"]
    assert props["counted"] == "each row counted"
    assert props["eps_units"].startswith("km on the ground")
    m.metadata["events"] = {**Stops(0.1, "5min").record(), "time_column": "time"}
    assert "stops, not its rows" in protection_fields(m)["counted"]
    assert "within 100 m of their first point for at least 5 min" in geojson(m)["properties"]["counted"]
    km = lambda v: f"{v:g} km"  # noqa: E731
    assert counted_brief(m.metadata["events"], "cab", km) == "the stops of each cab (0.1 km, 5 min)"
    ends = {**TripEnds("pickup").record(), "time_column": "time"}
    assert counted_brief(ends, "cab", km) == "the pick-ups of each cab"
    assert counted_brief(None, "cab", km) is None
    plain = hand_model([square(2, 2, 3)], shape=(10, 10))
    assert geojson(plain)["properties"]["eps_units"] == "the data's own units"


@pytest.mark.parametrize("size", [(500, 640), (900, 700), (1600, 900)])
def test_the_png_title_fits_the_figure(person_level, size):
    """The title is wrapped to the picture's width: at 500 px wide the
    protection line took ~130 characters of 9-pt text and was cut on both
    sides. Checked with the drawn text's extent, not its length."""
    from dpdbscan.render.plotting import plot_model

    model = load_model(person_level / "trips.spans.json")
    ax = plot_model(model, kind="spans", size=size)
    fig = ax.figure
    fig.canvas.draw()
    extent = ax.title.get_window_extent(fig.canvas.get_renderer())
    assert 0 <= extent.x0 and extent.x1 <= fig.bbox.width
    assert "person-level: each cab is protected" in " ".join(ax.get_title().split("\n"))


def test_a_seeded_release_says_it_is_not_private_where_it_is_published(person_level):
    """A release made with --seed (research randomness) says so in the
    PNG's title, the GeoJSON's properties and the map's legend, not only
    in its JSON and on standard error; a release with secure randomness
    does not."""
    from dpdbscan.model.describe import SEEDED, protection_brief
    from dpdbscan.render.plotting import plot_model

    model = load_model(person_level / "trips.spans.json")
    props = json.loads((person_level / "trips.spans.geojson").read_text())["properties"]
    assert props["randomness"] == SEEDED and SEEDED.startswith("seeded: not a private release")
    ax = plot_model(model, kind="spans")
    assert SEEDED in " ".join(ax.get_title().split("\n"))
    legend = html.unescape(map_html(model).split('<p id="protects">')[1].split("</p>")[0])
    assert legend.endswith(SEEDED)
    secure = hand_model([square(2, 2, 3)], shape=(10, 10))
    secure.metadata["randomness"] = "secure"
    assert "seeded" not in protection_brief(secure)
    assert geojson(secure)["properties"]["randomness"] == "secure"
    assert "seeded" not in html.unescape(map_html(secure))
    seeded = hand_model([square(2, 2, 3)], shape=(10, 10))
    seeded.metadata["randomness"] = "seeded (insecure; seed not stored)"
    assert protection_brief(seeded, greek=True).endswith(SEEDED)


def test_a_seeded_fit_of_the_python_api_says_it_is_not_private_in_its_files():
    """A release seeded through the Python API (``random_state=``, as
    ``--seed``) records it, so its model file and GeoJSON say "seeded: not a
    private release" as the command line's do; it recorded nothing, so its
    files looked like a private release's. A fit with secure randomness still
    records nothing (its files unchanged)."""
    import warnings

    from dpdbscan import DPDBSCAN, fit_lonlat
    from dpdbscan.model.codec import model_to_dict
    from dpdbscan.model.describe import SEEDED, protection_brief

    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(0.3, 0.02, (400, 2)), rng.uniform(0, 1, (100, 2))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random_state: research randomness
        seeded = DPDBSCAN(0.05, min_samples=10, bounds=(0.0, 1.0), random_state=1).fit(X).spans_
        lonlat = fit_lonlat(
            np.array([-122.4, 37.7]) + 0.01 * X,
            eps="200m",
            min_samples=10,
            bounds=(-122.4, 37.7, -122.39, 37.71),
            random_state=1,
        )
    secure = DPDBSCAN(0.05, min_samples=10, bounds=(0.0, 1.0)).fit(X).spans_
    for model in (seeded, lonlat):
        assert model.metadata["randomness"].startswith("seeded")
        assert protection_brief(model).endswith(SEEDED)
        assert geojson(model)["properties"]["randomness"] == SEEDED
    assert "randomness" not in secure.metadata
    assert "randomness" not in model_to_dict(secure)["metadata"]
    assert geojson(secure)["properties"].get("randomness") is None


def test_the_geojson_and_the_map_carry_the_guarantee_sentence(person_level):
    """The GeoJSON's properties and the map's panel carry the guarantee
    sentence of the summary and the model file (what the spans say about
    the data), not only who is protected: they had none."""
    from dpdbscan.model import guarantee

    model = load_model(person_level / "trips.spans.json")
    statement = guarantee(model)["statement"]
    assert "person-level" in statement
    props = json.loads((person_level / "trips.spans.geojson").read_text())["properties"]
    assert props["guarantee"] == statement
    page = map_html(model)
    shown = html.unescape(page.split('<details id="guarantee">')[1].split("</details>")[0])
    assert statement in shown


@pytest.mark.parametrize("names", [("x", "y", "$\\undefinedcmd{$"), ("x$1$", "y$", "cab")])
def test_names_with_dollar_signs_are_drawn_as_they_are(tmp_path, names):
    # a declared header's names are public, but matplotlib read a unit or
    # column name between dollar signs as mathematics: the PNG of the fit was
    # not written ("could not write ... ParseFatalException"), or showed the
    # name in italics without its dollars
    pytest.importorskip("matplotlib")
    from dpdbscan.render.plotting import plot_model

    rng = np.random.default_rng(0)
    X = rng.normal([0.3, 0.3], 0.03, size=(3000, 2))
    rows = "\n".join(f"{x:.6f},{y:.6f},c{u}" for (x, y), u in zip(X, np.repeat(np.arange(150), 20)))
    (tmp_path / "t.csv").write_text(",".join(names) + "\n" + rows + "\n")
    args = ["fit", str(tmp_path / "t.csv"), "--header", "--columns", names[0], names[1], "--unit", names[2]]
    args += ["--eps", "0.03", "--min-samples", "20", "--bounds", "0", "1", "--delta", "1e-6"]
    args += ["--max-cells-per-unit", "20", "--seed", "1", "--out-dir", str(tmp_path), "--no-progress"]
    assert main(args) == 0
    assert (tmp_path / "t.spans.png").stat().st_size > 0
    model = load_model(tmp_path / "t.spans.json")
    ax = plot_model(model, kind="spans")
    ax.figure.canvas.draw()
    shown = [t.get_text() for t in (ax.title, ax.xaxis.label, ax.yaxis.label)]
    drawn = [t._preprocess_math(t.get_text())[0] for t in (ax.title, ax.xaxis.label, ax.yaxis.label)]
    assert drawn[1:] == list(names[:2]) and names[2] in " ".join(drawn[0].split("\n"))
    assert all(t.count("$") == t.count("\\$") for t in shown)


def test_a_python_fit_with_a_named_unit_column_says_its_name_where_published():
    """``unit_name="taxi"`` (the Python side of ``--unit taxi``) puts the
    column's name where the command line puts it: the model's
    ``unit_column``, the GeoJSON's properties, the summary's "each unit
    (column taxi)" and "taxis". Without it none is recorded, whatever the
    units carry (a numpy array, a list, a Series with or without a name:
    :func:`test_a_units_series_name_read_from_a_file_is_never_published`)."""
    import warnings

    import pandas as pd

    from dpdbscan import DPDBSCAN, fit_lonlat, summary

    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(0.3, 0.02, (3000, 2)), rng.uniform(0, 1, (300, 2))])
    ids = rng.integers(0, 200, X.shape[0])
    kw = dict(min_samples=10, max_cells_per_unit=4, delta=1e-6, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random_state: research randomness
        named = DPDBSCAN(0.05, bounds=(0.0, 1.0), **kw).fit(X, units=ids, unit_name="taxi").spans_
        lonlat = fit_lonlat(
            np.array([-122.4, 37.7]) + 0.01 * X,
            eps="200m",
            bounds=(-122.4, 37.7, -122.39, 37.71),
            units=pd.Series(ids, name="cab"),
            unit_name="taxi",
            **kw,
        )
        unnamed = [
            DPDBSCAN(0.05, bounds=(0.0, 1.0), **kw).fit(X, units=u).spans_
            for u in (ids, list(ids), pd.Series(ids), pd.Series(ids, name="taxi"))
        ]
    for model in (named, lonlat):
        assert model.metadata["unit_column"] == "taxi"
        assert geojson(model)["properties"]["unit_column"] == "taxi"
        text = summary(model)
        assert "each unit (column taxi) is protected" in text and "10 taxis" in text
    for model in unnamed:
        assert "unit_column" not in model.metadata
        assert geojson(model)["properties"]["unit_column"] is None
        assert "10 units" in summary(model)
    # the name is a record of the release, not part of it: the same spans
    assert np.array_equal(named.predict(X), unnamed[0].predict(X))
    # refused before anything is read: a name without units, a name that is no text
    with pytest.raises(ValueError, match="unit_name names the units= column"):
        DPDBSCAN(0.05, bounds=(0.0, 1.0), **kw).fit(X, unit_name="taxi")
    with pytest.raises(TypeError, match="unit_name must be a non-empty str"):
        DPDBSCAN(0.05, bounds=(0.0, 1.0), **kw).fit(X, units=ids, unit_name=7)


#: First lines of a file without a header, each a record (a person's id and a point).
FIRST_LINES = [
    "bob@example.com,0.31,0.32",
    "+1 555 0100,0.5,0.5",
    "4417-1234-5678-9113,0.3,0.3",
    "SSN 078-05-1120,0.2,0.7",
]


@pytest.mark.parametrize("first", FIRST_LINES)
def test_a_units_series_name_read_from_a_file_is_never_published(tmp_path, first):
    """``pd.read_csv`` of a file without a header (pandas' default,
    ``header="infer"``) names each column by the file's first record, so
    ``units=df.iloc[:, 0]`` carries a person's id as its name. The estimator
    recorded a Series' name as ``metadata.unit_column``: the model file,
    its GeoJSON and its summary quoted the record, and the weak-epsilon
    warning named "one bob@example.com". Round 18: only a name typed by the
    caller (``unit_name=``, a Dask column's name) is recorded, as the
    command line records only ``--unit``: D and D' = D plus that first line
    publish the same words. Fails on the code before (the record in the
    model and the warning)."""
    import io
    import warnings

    import pandas as pd

    from dpdbscan import DPDBSCAN, fit_lonlat, summary
    from dpdbscan.exceptions import WeakPrivacyWarning
    from dpdbscan.model import save_model

    rng = np.random.default_rng(70_018)
    lines = [f"p{i % 150},{x:.4f},{y:.4f}" for i, (x, y) in enumerate(rng.normal(0.3, 0.02, (1500, 2)))]
    record = first.split(",")[0]
    published = []
    for text in ("\n".join(lines), "\n".join([first, *lines])):
        df = pd.read_csv(io.StringIO(text))
        est = DPDBSCAN(0.05, bounds=(0.0, 1.0), epsilon=20, delta=1e-6, max_cells_per_unit=3, random_state=5)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            model = est.fit(df.iloc[:, 1:].to_numpy(), units=df.iloc[:, 0]).spans_
            lonlat = fit_lonlat(
                np.array([-122.4, 37.7]) + 0.01 * df.iloc[:, 1:].to_numpy(),
                eps="200m",
                bounds=(-122.4, 37.7, -122.39, 37.71),
                epsilon=20,
                delta=1e-6,
                max_cells_per_unit=3,
                units=df.iloc[:, 0],
                random_state=5,
            )
        weak = [str(w.message) for w in said if issubclass(w.category, WeakPrivacyWarning)]
        assert len(weak) == 2
        files = []
        for i, m in enumerate((model, lonlat)):
            save_model(m, tmp_path / f"m{i}.json")
            files += [(tmp_path / f"m{i}.json").read_text(), json.dumps(geojson(m)), summary(m)]
        assert all(record not in f for f in files + weak)
        assert all("unit_column" not in m.metadata for m in (model, lonlat))
        published.append([geojson(m)["properties"]["unit_column"] for m in (model, lonlat)] + weak)
    assert published[0] == published[1]
