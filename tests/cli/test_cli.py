import io
import json
import os
import re
import shlex
import subprocess
import sys
import types

import numpy as np
import pytest

from dpdbscan.cli import build_parser, main
from dpdbscan.geometry.projection import Equirectangular
from dpdbscan.model import load_model, with_params
from dpdbscan.prepare import PRIVATE
from dpdbscan.progress import progress, progress_wanted

from clirun import blob_points, run, write_csv

PNG = b"\x89PNG\r\n\x1a\n"
SF = ["-122.48", "37.72", "-122.38", "37.82"]
HOTSPOTS = np.array([[-122.41, 37.79], [-122.44, 37.76]])


@pytest.fixture
def blobs_csv(tmp_path):
    return write_csv(tmp_path / "blobs.csv", blob_points(), label=lambda x, y: int(x > 5))


def geo_points(seed=0, n=2000):
    """Two pick-up hot spots in San Francisco, about 50 m across."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(c, [0.0004, 0.0003], (n, 2)) for c in HOTSPOTS])


def write_geo_csv(path, P):
    # latitude first and a text id column: --geo must pick lon/lat by name
    lines = ["id,latitude,longitude"] + [
        f"cab{i},{float(lat)!r},{float(lon)!r}" for i, (lon, lat) in enumerate(P)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def geo_csv(tmp_path):
    return write_geo_csv(tmp_path / "trips.csv", geo_points())


def fit_blobs(capsys, blobs_csv, out, *extra):
    return run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "10",
        "--seed",
        "0",
        "--out-dir",
        out,
        *extra,
    )


# --------------------------------------------------------------------------- fit


def test_fit_writes_model_geojson_png_and_summary(capsys, blobs_csv, tmp_path):
    rc, out, err = fit_blobs(capsys, blobs_csv, tmp_path / "out")
    assert rc == 0, err
    assert "2 span(s)" in out and "guarantee" in out
    assert "blobs.spans.json" in out
    model = load_model(tmp_path / "out" / "blobs.spans.json")
    assert f"({model.spans.approx_ratio:g} x eps, MinPts=" in out
    assert model.n_spans == 2 and model.spec.min_samples == 20 and model.grid.eps == 0.5
    assert model.metadata["columns"] == ["x", "y"]  # "label" left out
    assert model.metadata["bounds_source"].startswith("public")
    assert model.metadata["randomness"].startswith("seeded")
    gj = json.loads((tmp_path / "out" / "blobs.spans.geojson").read_text())
    assert len(gj["features"]) == 2
    assert (tmp_path / "out" / "blobs.spans.png").read_bytes()[:8] == PNG
    # the two blobs fall in different spans, a far corner is noise
    labels = model.predict([[2, 2], [7, 6], [9.9, 0.1]])
    assert labels[0] >= 0 and labels[1] >= 0 and labels[0] != labels[1] and labels[2] == -1
    # stderr: local notes and the seed warning, never the release
    assert "read 3,000 rows" in err and "--seed" in err


def test_fit_explicit_paths_and_skips(capsys, blobs_csv, tmp_path):
    rc, out, err = fit_blobs(
        capsys,
        blobs_csv,
        tmp_path,
        "--json",
        tmp_path / "a" / "m.json",
        "--no-png",
        "--geojson",
        tmp_path / "g.geojson",
    )
    assert rc == 0, err
    assert (tmp_path / "a" / "m.json").is_file() and (tmp_path / "g.geojson").is_file()
    assert not list(tmp_path.glob("*.png"))


def test_fit_is_reproducible_with_a_seed_only(capsys, blobs_csv, tmp_path):
    for name in ("a", "b"):
        assert fit_blobs(capsys, blobs_csv, tmp_path, "--name", name, "--no-png")[0] == 0
    a, b = (load_model(tmp_path / f"{n}.spans.json") for n in "ab")
    np.testing.assert_array_equal(a.histogram.values, b.histogram.values)
    rc, _, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "10",
        "--out-dir",
        tmp_path,
        "--name",
        "c",
        "--no-png",
    )
    assert rc == 0 and "--seed" not in err
    c = load_model(tmp_path / "c.spans.json")
    assert c.metadata["randomness"] == "secure"
    assert "seed" not in json.dumps(c.metadata).replace("seed not stored", "")


def test_fit_bounds_from_data_warns_once_and_marks_the_model(capsys, blobs_csv, tmp_path):
    rc, out, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds-from-data",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert rc == 0, err
    assert err.count("PRIVACY WARNING") == 1
    assert "NO differential privacy guarantee" in out
    model = load_model(tmp_path / "blobs.spans.json")
    assert model.metadata["bounds_source"].startswith("data")


def test_fit_options_reach_the_estimator(capsys, blobs_csv, tmp_path):
    rc, out, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "150",
        "--bounds",
        "0",
        "10",
        "--seed",
        "0",
        "--out-dir",
        tmp_path,
        "--epsilon",
        "2",
        "--eta",
        "2",
        "--beta",
        "0.1",
        "--histogram",
        "sparse",
        "--noise",
        "laplace",
        "--no-png",
        "--theoretical-threshold",
        "--core",
        "bound",
        "--columns",
        "y",
        "x",
    )
    assert rc == 0, err
    m = load_model(tmp_path / "blobs.spans.json")
    assert (m.release.epsilon, m.histogram.grid.eta, m.spec.beta, m.release.histogram, m.release.noise) == (
        2.0,
        2.0,
        0.1,
        "sparse",
        "laplace",
    )
    assert m.spec.raise_min_samples is False and m.metadata["columns"] == ["y", "x"]
    assert m.predict([[6, 7]])[0] >= 0 and m.predict([[7, 6]])[0] == -1  # columns swapped


def test_clipping_note_points_at_wrong_bounds(capsys, blobs_csv, tmp_path):
    rc, _, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds",
        "100",
        "200",
        "--out-dir",
        tmp_path,
        "--no-png",
        "--seed",
        "0",
    )
    assert rc == 0
    assert "3,000 point(s) (100.0%) lie outside the bounds" in err and "check --bounds" in err


# --------------------------------------------------------------------------- geo


def test_geo_fit_projects_around_the_public_box(capsys, geo_csv, tmp_path):
    rc, out, err = run(
        capsys,
        "fit",
        geo_csv,
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50m",
        "--min-samples",
        "100",
        "--seed",
        "0",
        "--out-dir",
        tmp_path,
    )
    assert rc == 0, err
    assert "within 50 m of it (min_samples=100, eps=50 m)" in out and "km around 37.7700 deg N" in out
    m = load_model(tmp_path / "trips.spans.json")
    assert m.grid.eps == pytest.approx(0.05)
    assert m.metadata["columns"] == ["longitude", "latitude"]
    proj = Equirectangular.from_dict(m.metadata["projection"])
    assert proj == Equirectangular.from_bounds((-122.48, 37.72), (-122.38, 37.82))
    lo, hi = proj.project_bounds((-122.48, 37.72), (-122.38, 37.82))
    np.testing.assert_allclose(m.grid.lower, lo)
    assert m.n_spans == 2
    # GeoJSON in lon/lat, each span around one hot spot
    gj = json.loads((tmp_path / "trips.spans.geojson").read_text())
    for feat in gj["features"]:
        ring = np.asarray(feat["geometry"]["coordinates"][0][0])
        assert np.min(np.linalg.norm(HOTSPOTS - ring.mean(axis=0), axis=1)) < 0.002
    assert (tmp_path / "trips.spans.png").read_bytes()[:8] == PNG


def test_geo_projection_never_depends_on_the_data(capsys, tmp_path):
    """Two different datasets with the same public bounds get the same grid
    and projection (the origin and ref_lat are not taken from the points)."""
    a = write_geo_csv(tmp_path / "a.csv", geo_points(1))
    b = write_geo_csv(tmp_path / "b.csv", geo_points(2)[:500] + [0.02, -0.03])
    for path in (a, b):
        assert (
            run(
                capsys,
                "fit",
                path,
                "--header",
                "--geo",
                "--bounds",
                *SF,
                "--eps",
                "0.05km",
                "--min-samples",
                "50",
                "--out-dir",
                tmp_path,
                "--no-png",
                "--no-geojson",
            )[0]
            == 0
        )
    ma, mb = (load_model(tmp_path / f"{n}.spans.json") for n in "ab")
    assert ma.metadata["projection"] == mb.metadata["projection"]
    assert ma.grid.to_dict() == mb.grid.to_dict()


def test_geo_predict_takes_lon_lat(capsys, geo_csv, tmp_path):
    run(
        capsys,
        "fit",
        geo_csv,
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50m",
        "--min-samples",
        "100",
        "--seed",
        "0",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    pts = tmp_path / "q.csv"
    pts.write_text("lon,lat\n-122.41,37.79\n-122.44,37.76\n-122.47,37.73\n-121,37\n")
    rc, out, err = run(capsys, "predict", tmp_path / "trips.spans.json", pts, "--header")
    assert rc == 0, err
    labels = [int(v) for v in out.split()[1:]]
    assert out.split()[0] == "label"
    assert labels[0] >= 0 and labels[1] >= 0 and labels[0] != labels[1] and labels[2:] == [-1, -1]


# --------------------------------------------------------------------------- other commands


@pytest.fixture
def blobs_model(capsys, blobs_csv, tmp_path):
    assert fit_blobs(capsys, blobs_csv, tmp_path, "--no-png")[0] == 0
    return tmp_path / "blobs.spans.json"


def test_predict_matches_the_model(capsys, blobs_model, tmp_path):
    X = blob_points(5)
    np.save(tmp_path / "new.npy", X)
    out_csv = tmp_path / "labels.csv"
    rc, out, err = run(capsys, "predict", blobs_model, tmp_path / "new.npy", "-o", out_csv, "--with-points")
    assert rc == 0 and out == "", err  # (issue 14: the second condition used to sit in the message)
    table = np.loadtxt(out_csv, delimiter=",", skiprows=1)
    assert out_csv.read_text().splitlines()[0] == "0,1,label"
    np.testing.assert_array_equal(table[:, :2], X)
    np.testing.assert_array_equal(table[:, 2], load_model(blobs_model).predict(X))
    assert "labelled 3,000 point(s)" in err
    # the labels file carries no statement: the command says it is no release
    assert "note: the labels are of these points, not a DP release" in err


def test_sweep_from_data_shares_one_release(capsys, blobs_csv, tmp_path):
    rc, out, err = run(
        capsys,
        "sweep",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "50",
        "10",
        "200",
        "--bounds",
        "0",
        "10",
        "--seed",
        "0",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert rc == 0, err
    models = [load_model(tmp_path / f"blobs.m{m}.spans.json") for m in (10, 50, 200)]
    for m in models[1:]:
        np.testing.assert_array_equal(m.histogram.values, models[0].histogram.values)
        # the density margin's empty-space guard depends on MinPts: compare the rule
        assert m.spec.margin == models[0].spec.margin and m.spec.core == models[0].spec.core
    assert [m.spec.min_samples for m in models] == [10, 50, 200]
    cores = [m.n_core_cells for m in models]
    assert cores == sorted(cores, reverse=True) and cores[0] > cores[-1]
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    # columns: eps, min_samples, threshold, spans, core cells, model
    assert [int(r[1]) for r in rows] == [10, 50, 200]
    assert [int(r[4]) for r in rows] == cores
    assert "costs no budget" in out
    # seeded: its standard output says it is not a private release, as fit's summary does
    assert "WARNING: seeded: not a private release" in out


def test_sweep_from_model_equals_with_min_samples(capsys, blobs_model, tmp_path):
    rc, out, err = run(
        capsys,
        "sweep",
        "--model",
        blobs_model,
        "--min-samples",
        "40",
        "--out-dir",
        tmp_path / "sw",
        "--no-png",
        "--no-geojson",
    )
    assert rc == 0, err
    got = load_model(tmp_path / "sw" / "blobs.m40.spans.json")
    want = with_params(load_model(blobs_model), min_samples=40)
    np.testing.assert_array_equal(got.core_keys, want.core_keys)
    np.testing.assert_array_equal(got.labels, want.labels)


@pytest.mark.parametrize("kind", ["histogram", "sums", "spans", "labels"])
def test_plot_kinds(capsys, blobs_model, blobs_csv, tmp_path, kind):
    png = tmp_path / f"{kind}.png"
    extra = ["--points", blobs_csv, "--header"] if kind == "labels" else []
    rc, out, err = run(capsys, "plot", blobs_model, "--kind", kind, "-o", png, *extra)
    assert rc == 0, err
    assert png.read_bytes()[:8] == PNG and f"wrote {png}" in out
    assert ("not a DP release" in err) == (kind == "labels")


def test_plot_of_points_is_marked_and_kept_off_release_names(capsys, blobs_model, blobs_csv, tmp_path):
    """Issue 19, finding 6: a picture of the private points carries its mark
    inside the file and, by default, a PRIVATE name; it is refused the name
    of the release's picture (NAME.spans.png), which it would overwrite."""
    from PIL import Image

    for kind in ("labels", "spans"):
        rc, out, err = run(capsys, "plot", blobs_model, "--kind", kind, "--points", blobs_csv, "--header")
        assert rc == 0, err
        png = blobs_model.with_name(f"{blobs_model.stem}.PRIVATE-{kind}.png")
        assert f"wrote {png}" in out
        with Image.open(png) as im:
            assert "NOT a DP release" in im.info.get("Description", "")
    rc, out, err = run(capsys, "plot", blobs_model, "--kind", "histogram")
    assert rc == 0 and f"wrote {blobs_model.with_suffix('')}.histogram.png" in out
    with Image.open(blobs_model.with_suffix("").with_name(f"{blobs_model.stem}.histogram.png")) as im:
        assert "Description" not in im.info  # the release's pictures carry no such mark
    target = tmp_path / "blobs.spans.png"
    rc, out, err = run(
        capsys, "plot", blobs_model, "--kind", "labels", "--points", blobs_csv, "--header", "-o", target
    )
    assert rc == 2 and "name of a release picture" in err and not target.exists()


def test_info_lists_parameters_and_guarantees(capsys, blobs_model):
    rc, out, err = run(capsys, "info", blobs_model)
    assert rc == 0, err
    rows = {line.split(" : ", 1)[0].strip(): line.split(" : ", 1)[1] for line in out.splitlines()}
    m = load_model(blobs_model)
    # every row a sentence with the paper's symbols in brackets (issue 23)
    for key, symbols in [
        ("protects", ["(epsilon=1, delta=0)"]),
        ("noise", ["(dense histogram)"]),
        ("eps", ["(eps, alpha)"]),
        ("min_samples", ["(min_samples, MinPts)"]),
        ("approximation", [f"approximation ratio {m.spans.approx_ratio:g}"]),
        ("additive error", ["tau"]),
        ("failure", ["(beta=0.1)"]),
        ("grid", ["(|X|, w)", f"kappa={m.release.grid.kappa}", f"kappa_q={m.spans.kappa_q}"]),
        ("guarantee", ["with probability >= 0.9", "MinPts="]),
    ]:
        assert all(s in rows[key] for s in symbols), (key, rows[key])
        assert len(rows[key].split()) >= 4, rows[key]  # words, not a bare number
    rc, out, _ = run(capsys, "info", blobs_model, "--json")
    info = json.loads(out)
    assert (
        info["kappa"] == m.release.grid.kappa
        and info["kappa_q"] == m.spans.kappa_q
        and info["n_cells"] == m.release.grid.n_cells
        and info["core"] == m.spec.core
    )
    assert info["guarantee"]["probability"] == pytest.approx(0.9)
    assert (info["epsilon"], info["eps"], info["min_samples"], info["approx_ratio"]) == (
        1.0,
        0.5,
        20,
        m.spans.approx_ratio,
    )


# --------------------------------------------------------------------------- bad input


def _not_a_model(d):
    (d / "other.json").write_text('{"type": "FeatureCollection", "features": []}')
    return d / "other.json"


def _binary_model(d):
    (d / "bin.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 20)
    return d / "bin.json"


def _malformed_model(d):
    (d / "mal.json").write_text('{"format": "dpdbscan.spans", "version": 1, "params": {}}')
    return d / "mal.json"


def _junk_csv(d):
    (d / "junk.csv").write_bytes(bytes(range(256)) * 4)
    return d / "junk.csv"


def _text_csv(d):
    (d / "text.csv").write_text("name,city\nann,paris\nbob,rome\n")
    return d / "text.csv"


def _abc(d):
    (d / "abc.csv").write_text("a,b,c\n1,2,3\n4,5,6\n")
    return d / "abc.csv"


def _three_cols(d):
    (d / "xyz.csv").write_text("x,y,z\n1,2,3\n4,5,6\n")
    return d / "xyz.csv"


FIT = ["--eps", "0.5", "--min-samples", "5", "--bounds", "0", "10"]

# Bad parameter values are in the one table of tests/spec/test_parameters.py; these are
# the other bad inputs of the command line.
BAD = [
    ("missing file", lambda d, b, m: ["fit", d / "nope.csv", *FIT], "input file not found"),
    ("unreadable csv", lambda d, b, m: ["fit", _junk_csv(d), "--header", *FIT], "cannot read as CSV"),
    ("missing column", lambda d, b, m: ["fit", b, "--header", *FIT, "--columns", "x", "q"], "no column 'q'"),
    ("column index", lambda d, b, m: ["fit", b, "--header", *FIT, "--columns", "0", "7"], "out of range"),
    (
        "bounds length",
        lambda d, b, m: ["fit", b, "--header", "--eps", "1", "--min-samples", "5", "--bounds", "0", "1", "2"],
        "--bounds needs 2 numbers",
    ),
    (
        "geo bounds length",
        lambda d, b, m: [
            "fit",
            b,
            "--header",
            "--geo",
            "--eps",
            "50m",
            "--min-samples",
            "5",
            "--bounds",
            "0",
            "1",
        ],
        "needs 4 numbers",
    ),
    (
        "bounds not numbers",
        lambda d, b, m: ["fit", b, "--header", "--eps", "1", "--min-samples", "5", "--bounds", "a", "b"],
        "--bounds must be numbers",
    ),
    (
        "bounds inverted",
        lambda d, b, m: ["fit", b, "--header", "--eps", "1", "--min-samples", "5", "--bounds", "5", "1"],
        "lower < upper",
    ),
    (
        "geo box swapped",
        lambda d, b, m: [
            "fit",
            b,
            "--header",
            "--geo",
            "--columns",
            "x",
            "y",
            "--eps",
            "50m",
            "--min-samples",
            "5",
            "--bounds",
            "37.72",
            "-122.48",
            "37.82",
            "-122.38",
        ],
        "lat_min",
    ),
    (
        "no bounds",
        lambda d, b, m: ["fit", b, "--header", "--eps", "1", "--min-samples", "5"],
        "--bounds is required",
    ),
    (
        "epsilon text",
        lambda d, b, m: ["fit", b, "--header", *FIT, "--epsilon", "lots"],
        "invalid float value",
    ),
    (
        "eps unit without geo",
        lambda d, b, m: ["fit", b, "--header", "--eps", "50m", "--min-samples", "5", "--bounds", "0", "1"],
        "only makes sense with --geo",
    ),
    (
        "stability without delta",
        lambda d, b, m: ["fit", b, "--header", *FIT, "--histogram", "stability"],
        "needs --delta > 0",
    ),
    (
        "geo needs two columns",
        lambda d, b, m: [
            "fit",
            _three_cols(d),
            "--header",
            "--geo",
            "--eps",
            "50m",
            "--min-samples",
            "5",
            "--bounds",
            *SF,
        ],
        "exactly two columns",
    ),
    (
        "scheduler without dask",
        lambda d, b, m: ["fit", b, "--header", *FIT, "--scheduler", "tcp://h:1"],
        "needs --backend dask",
    ),
    (
        "png for 3-D",
        lambda d, b, m: ["fit", _three_cols(d), "--header", *FIT, "--png", d / "x.png"],
        "--png needs 2-D",
    ),
    ("not a model", lambda d, b, m: ["info", _not_a_model(d)], "not a dpdbscan span model"),
    ("binary model", lambda d, b, m: ["predict", _binary_model(d), b], "not a dpdbscan span model"),
    ("malformed model", lambda d, b, m: ["plot", _malformed_model(d)], "malformed dpdbscan span model"),
    ("missing model", lambda d, b, m: ["info", d / "none.json"], "model file not found"),
    ("predict columns", lambda d, b, m: ["predict", m, _abc(d), "--header"], "model has 2"),
    ("labels need points", lambda d, b, m: ["plot", m, "--kind", "labels"], "needs --points"),
    ("sweep needs a source", lambda d, b, m: ["sweep", "--min-samples", "5"], "either an input"),
    ("no command", lambda d, b, m: [], "required"),
]


@pytest.mark.parametrize("make", [c[1] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_gives_one_line_and_status_2(capsys, tmp_path, blobs_csv, make):
    expected = dict((id(c[1]), c[2]) for c in BAD)[id(make)]
    m = tmp_path / "m" / "blobs.spans.json"
    assert fit_blobs(capsys, blobs_csv, tmp_path / "m", "--no-png", "--no-geojson")[0] == 0
    rc, out, err = run(capsys, *make(tmp_path, blobs_csv, m))
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dpdbscan") and "error:" in lines[0]
    assert expected in lines[0]
    assert "Traceback" not in err and out == ""


def test_text_columns_read_as_missing_and_are_never_echoed(capsys, tmp_path):
    """No row decides whether a release exists (issue #14): a CSV whose values
    are all text releases (pure noise), says so privately and quotes nothing."""
    rc, out, err = run(
        capsys,
        "fit",
        _text_csv(tmp_path),
        "--header",
        *FIT,
        "--out-dir",
        tmp_path / "o",
        "--no-png",
        "--no-geojson",
    )
    assert rc == 0
    assert "2 row(s) with missing or non-finite values are dropped" in err
    assert not any(v in out + err for v in ("ann", "paris", "bob", "rome"))


def test_dask_backend_missing_names_the_extra(capsys, blobs_csv, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "dpdbscan.release.backends.dask_backend", None)
    rc, out, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        *FIT,
        "--backend",
        "dask",
        "--columns",
        "x",
        "y",
        "--out-dir",
        tmp_path,
    )
    assert rc == 2 and err.count("\n") == 1
    assert "pip install 'dpdbscan[dask]'" in err


def test_dask_backend_gets_the_path_scheduler_and_columns(capsys, blobs_csv, monkeypatch, tmp_path):
    """The CLI does not read the file itself: it hands the path to the backend."""
    from dpdbscan.files import ReadOptions, read_points
    from dpdbscan.release.backends import NumpyBackend

    seen = {}

    class FakeDask:
        name = "dask"
        input_counts = None  # a DaskBackend's, after counting files (None: none counted)

        def __init__(self, scheduler=None, *, read):
            seen.update(scheduler=scheduler, read=read)

        def count(self, grid, X):
            seen["X"] = X
            from dpdbscan.release.points import clean_points

            return NumpyBackend().count(
                grid, clean_points(grid, read_points(X, self_columns(), header=True)[0])
            )

    def self_columns():
        return list(seen["read"].columns)

    fake = types.ModuleType("dpdbscan.release.backends.dask_backend")
    fake.DaskBackend = FakeDask
    monkeypatch.setitem(sys.modules, "dpdbscan.release.backends.dask_backend", fake)
    rc, out, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "10",
        "--backend",
        "dask",
        "--scheduler",
        "tcp://scheduler.example.org:8786",
        "--columns",
        "x,y",
        "--out-dir",
        tmp_path,
        "--no-png",
        "--seed",
        "0",
    )
    assert rc == 0, err
    # the reading options whole, as the local reader takes them
    assert seen == {
        "scheduler": "tcp://scheduler.example.org:8786",
        "X": str(blobs_csv),
        "read": ReadOptions(columns=("x", "y"), header=True),
    }
    assert "2 span(s)" in out and "read " not in err


@pytest.mark.parametrize("case", ["given", "header", "header-less", "parquet"])
def test_dask_records_the_columns_as_the_in_memory_path_does(capsys, tmp_path, case):
    """The model's ``metadata.columns`` names the coordinate columns as the
    in-memory reader does (given, else the declared header's or schema's,
    else a header-less file's field numbers: public) with --backend dask
    too, where it recorded null without --columns."""
    pytest.importorskip("dask")
    pytest.importorskip("distributed")
    rng = np.random.default_rng(0)
    X = rng.normal([5, 5], 1, (600, 2))
    head = [] if case == "header-less" else ["x,y"]
    path = tmp_path / "p.csv"
    path.write_text("\n".join(head + [f"{a:.4f},{b:.4f}" for a, b in X]) + "\n")
    given = ["--header", "--columns", "y", "x"]
    options = {"given": given, "header-less": ["--no-header"]}.get(case, ["--header"])
    if case == "parquet":
        pd = pytest.importorskip("pandas")
        pytest.importorskip("pyarrow")
        path = tmp_path / "p.parquet"
        pd.DataFrame({"lon": X[:, 0], "lat": X[:, 1]}).to_parquet(path)
        options = []
    want = {"given": ["y", "x"], "header-less": ["0", "1"], "parquet": ["lon", "lat"]}
    columns = {}
    for backend in ("numpy", "dask"):
        rc, _, err = run(
            capsys, "fit", path, *options, "--bounds", "0", "0", "10", "10", "--eps", "0.5",
            "--min-samples", "20", "--seed", "1", "--no-png", "--no-geojson",
            "--out-dir", tmp_path / backend, "--backend", backend, "--no-progress",
        )  # fmt: skip
        assert rc == 0, err
        (model,) = (tmp_path / backend).glob("*.json")
        columns[backend] = json.loads(model.read_text())["metadata"]["columns"]
    assert columns["dask"] == columns["numpy"] == want.get(case, ["x", "y"])


@pytest.mark.parametrize("unit", [False, True])
def test_dask_says_what_it_dropped_as_the_in_memory_path_does(capsys, tmp_path, unit):
    """With --backend dask the rows read, those with a value that is not a
    number, the malformed lines and the rows with no unit are said on
    standard error in the in-memory reader's words (they sat unsaid in
    the backend's input_counts); no text read from the file."""
    pytest.importorskip("dask")
    pytest.importorskip("distributed")
    rng = np.random.default_rng(0)
    X = rng.normal([5, 5], 1, (600, 2))
    lines = ["x,y,cab"] + [f"{a:.4f},{b:.4f},c{i % 50}" for i, (a, b) in enumerate(X)]
    lines[10], lines[11], lines[12], lines[13] = "abc,1.0,c1", "1,2,3,4", "2.0,3.0,", "zyx,qq,c2"
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    person = ["--unit", "cab", "--max-cells-per-unit", "4", "--delta", "1e-6"] if unit else []
    said = {}
    for backend in ("numpy", "dask"):
        rc, _, err = run(
            capsys, "fit", path, "--header", "--columns", "x", "y", *person, "--bounds", "0", "10",
            "--eps", "0.5", "--min-samples", "20", "--seed", "1", "--no-png", "--no-geojson",
            "--out-dir", tmp_path / backend, "--backend", backend, "--no-progress",
        )  # fmt: skip
        assert rc == 0, err
        # all but the in-memory path's total of rows dropped (its tally, not the workers')
        said[backend] = [
            line for line in err.splitlines() if line.startswith(PRIVATE) and "non-finite" not in line
        ]
        assert not any(v in err for v in ("abc", "zyx", "qq"))
    assert said["dask"] == said["numpy"]
    text = "\n".join(said["dask"])
    assert "2 row(s) with values that are not numbers read as missing" in text
    assert "1 line(s) with the wrong number of fields read as missing" in text
    assert f"read 600 rows x 2 column(s) (x, y) from {path}" in text
    assert ("1 row(s) with no unit (column 'cab', --unit) are dropped" in text) == unit


@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("case", ["some", "as ranges", "swapped"])
def test_dask_says_what_it_clipped_as_the_in_memory_path_does(capsys, tmp_path, unit, case):
    """A Dask fit printed no "N point(s) lie outside the bounds" notes (its
    partitions counted no box): the workers now count the rows clipped onto
    the box, per column and bound, and the in-memory path's lines are said
    word for word, with its hint when most rows lie outside (bounds given as
    xmin xmax ymin ymax; the columns swapped). Counts only: no value read."""
    pytest.importorskip("dask")
    pytest.importorskip("distributed")
    rng = np.random.default_rng(1)
    X = rng.normal([5, 5], 1, (800, 2))
    bounds = ["0", "0", "10", "10"]
    if case == "some":
        X[:120, 1] -= 20  # 15% below y's lower bound
        X[120:130, 0] += 20  # 1.25% above x's upper bound
        X[130:133, 0] -= 20  # under 1%: counted in the total only
    elif case == "as ranges":
        X = np.column_stack([rng.uniform(0, 10, 800), rng.uniform(5, 15, 800)])
        bounds = ["0", "10", "5", "15"]  # xmin xmax ymin ymax: the box is 0..5 x 10..15
    else:
        X[:, 1] += 100  # the box fits y first
        bounds = ["100", "0", "110", "10"]
    lines = ["x,y,cab"] + [f"{a:.4f},{b:.4f},c{i % 50}" for i, (a, b) in enumerate(X)]
    lines[200] = "abc,1.0,c1"  # a value that is not a number: dropped, not clipped
    path = tmp_path / "clip.csv"
    path.write_text("\n".join(lines) + "\n")
    person = ["--unit", "cab", "--max-cells-per-unit", "4", "--delta", "1e-6"] if unit else []
    said = {}
    for backend in ("numpy", "dask"):
        rc, _, err = run(
            capsys, "fit", path, "--header", "--columns", "x", "y", *person, "--bounds", *bounds,
            "--eps", "0.5", "--min-samples", "20", "--seed", "1", "--no-png", "--no-geojson",
            "--out-dir", tmp_path / backend, "--backend", backend, "--no-progress",
        )  # fmt: skip
        assert rc == 0, err
        said[backend] = [line for line in err.splitlines() if line.startswith(PRIVATE)]
        assert "abc" not in err
    assert said["dask"] == said["numpy"]
    text = "\n".join(said["dask"])
    if case == "some":
        assert "133 point(s) (16.6%) lie outside the bounds and are clipped onto the box" in text
        assert "column 'y': 15.0% of the rows lie below its lower bound 0" in text
        assert "column 'x': 1.3% of the rows lie above its upper bound 10" in text
        assert "most points" not in text and "column 'x': 0.4%" not in text
    elif case == "as ranges":
        assert "the bounds look like xmin xmax ymin ymax" in text and "i.e. 0 5 10 15" in text
    else:
        assert "the columns or the bounds look swapped: the box fits the points with 'y' first" in text
        assert "--columns y x, or, if the columns are in order, --bounds" in text


# --------------------------------------------------------------------------- help and progress


@pytest.mark.parametrize("command", ["fit", "predict", "sweep", "plot", "info", "map"])
def test_help_shows_a_real_example(capsys, command):
    rc, out, _ = run(capsys, command, "--help")
    assert rc == 0
    assert "examples:" in out
    example = [line for line in out.splitlines() if line.strip().startswith(f"dpdbscan {command} ")]
    assert example
    # every example parses with the real parser, on one line as printed (a backslash in
    # the help's source once joined map's basemap example with a run of spaces)
    parser = build_parser()
    for line in example:
        assert "   " not in line.strip(), line
        parser.parse_args(shlex.split(line.split(" > ")[0])[1:])
    if command == "map":  # the basemap example, and a description that says when the page is offline
        assert any("--tiles" in line for line in example)
        assert "offline unless --tiles" in out


@pytest.mark.parametrize(
    "command", ["fit", "predict", "sweep", "plot", "info", "map", "explore", "forecast", "check", "ledger"]
)
def test_help_reads_the_shared_data_through_the_variable(capsys, command):
    """The examples name the shared data as the README does,
    "$DPDBSCAN_DATA/...": a path copied with the default spelt out
    (../shared/data) fails wherever the data are elsewhere."""
    rc, out, _ = run(capsys, command, "--help")
    assert rc == 0 and "../shared/data" not in out
    examples = [x.strip() for x in out.replace("\\\n", " ").splitlines() if x.strip().startswith("dpdbscan ")]
    words = [w for x in examples for w in shlex.split(x, comments=True)]
    shared = [w for w in words if w.endswith((".csv.gz", ".parquet")) and "cabs" in w]
    assert all(w.startswith("$DPDBSCAN_DATA/") for w in shared), shared


def test_the_help_s_first_example_runs_with_the_variable(capsys, tmp_path, monkeypatch):
    from conftest import data_dir

    data = data_dir().resolve()
    if not (data / "cabs_tiny.csv.gz").is_file():
        pytest.skip(f"shared data not found at {data} (set DPDBSCAN_DATA)")
    monkeypatch.setenv("DPDBSCAN_DATA", str(data))
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "fit", "--help")
    line = next(x.strip() for x in out.splitlines() if x.strip().startswith("dpdbscan fit "))
    words = [os.path.expandvars(w) for w in shlex.split(line)[2:]]
    rc, out, err = run(capsys, "fit", *words, "--no-png", "-q")
    assert rc == 0, err
    assert out.startswith("DP-DBSCAN spans: ") and (tmp_path / "out" / "cabs_tiny.spans.json").is_file()


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_only_on_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("DPDBSCAN_NO_PROGRESS", raising=False)
    assert progress_wanted(FakeTTY()) and not progress_wanted(io.StringIO())
    monkeypatch.setenv("CI", "true")
    assert not progress_wanted(FakeTTY())
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    with progress("x", total=10) as bar:
        bar.update(5)
    assert quiet.getvalue() == ""


def test_progress_bar_draws_with_tqdm(monkeypatch):
    s = FakeTTY()
    monkeypatch.setattr(sys, "stderr", s)
    with progress("reading", total=200, enabled=True) as bar:
        bar.update(100)
        bar.refresh()
        assert "reading" in s.getvalue() and "50%" in s.getvalue()


def test_fit_shows_progress_on_a_terminal_only(capsys, monkeypatch, blobs_csv, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("DPDBSCAN_NO_PROGRESS", raising=False)
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert fit_blobs(capsys, blobs_csv, tmp_path, "--no-png")[0] == 0
    assert "reading blobs.csv" in tty.getvalue() and "fitting" in tty.getvalue()
    tty2 = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty2)
    main(["--no-progress", "fit", str(blobs_csv), "--header", *FIT, "--out-dir", str(tmp_path), "--no-png"])
    assert "\r" not in tty2.getvalue()


# --------------------------------------------------------------------------- as a subprocess


def sh(*argv, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "dpdbscan", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_subprocess_fit_info_predict(blobs_csv, tmp_path):
    r = sh(
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "10",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert r.returncode == 0, r.stderr
    assert "2 span(s)" in r.stdout and "\r" not in r.stderr  # a pipe: no progress bar
    r = sh("predict", tmp_path / "blobs.spans.json", blobs_csv, "--header")
    assert r.returncode == 0, r.stderr
    labels = np.array(r.stdout.split()[1:], dtype=int)
    assert labels.size == 3000 and set(np.unique(labels)) <= {-1, 0, 1}
    assert (labels[:1500] >= 0).mean() > 0.8


def test_subprocess_bad_input_has_no_traceback(tmp_path):
    # (argparse errors take the same path in-process; one start-up is enough here)
    r = sh("info", _not_a_model(tmp_path))
    assert r.returncode == 2
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("dpdbscan info: error:") and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- the paper's example


def test_cabs_tiny_as_in_the_paper(capsys, shared_data, tmp_path):
    """Cabs-tiny, alpha = 50 m, MinPts = 1000, epsilon = 1. The paper reports
    38 spans, and the paper's method gives 37-38 over 20 seeds; refinements of
    the library (finer sub-cells) split a few more, hence the loose range."""
    rc, out, err = run(
        capsys,
        "fit",
        shared_data / "cabs_tiny.csv.gz",
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50m",
        "--min-samples",
        "1000",
        "--seed",
        "0",
        "--out-dir",
        tmp_path,
        "--no-png",
        "--core",
        "bound",
    )
    assert rc == 0, err
    assert "read 845,685 rows" in err
    m = load_model(tmp_path / "cabs_tiny.spans.json")
    assert 30 <= m.n_spans <= 60
    proj = Equirectangular.from_dict(m.metadata["projection"])
    downtown = m.predict(proj.forward([[-122.41, 37.79]]))[0]
    assert downtown >= 0 and int((m.labels == downtown).sum()) == max(np.bincount(m.labels))


# --------------------------------------------------------------------------- issue 15: no budget lost


def test_unwritable_output_is_refused_before_the_input_is_read(capsys, tmp_path):
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    never_read = tmp_path / "does-not-exist.csv"
    rc, out, err = run(capsys, "fit", never_read, *FIT, "--out-dir", blocked / "sub")
    assert rc == 2 and "not found" not in err  # the output was checked first
    assert out == ""


def test_outputs_are_written_atomically(capsys, blobs_csv, tmp_path):
    assert fit_blobs(capsys, blobs_csv, tmp_path / "o")[0] == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "blobs.spans.geojson",
        "blobs.spans.json",
        "blobs.spans.png",
    ]  # no temporary left


def test_a_failed_picture_keeps_the_release(capsys, blobs_csv, tmp_path, monkeypatch):
    from dpdbscan.cli import outputs

    def broken(model, path):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(outputs, "draw_spans_png", broken)
    rc, out, err = fit_blobs(capsys, blobs_csv, tmp_path)
    assert rc == 1
    assert load_model(tmp_path / "blobs.spans.json").n_spans == 2
    assert "could not write" in err and "no fonts" in err and "blobs.spans.json" in err
    assert not (tmp_path / "blobs.spans.png").exists()


def test_a_failed_release_leaves_no_picture_or_geojson(capsys, blobs_csv, tmp_path, monkeypatch):
    """The JSON is written on its own thread while the GeoJSON and picture
    are drawn; they are renamed into place only after the release is safe."""

    def broken(model, path, include_histogram=True):
        raise OSError(28, "No space left on device")

    import dpdbscan.cli.outputs as outputs

    monkeypatch.setattr(outputs, "save_model", broken)
    rc, out, err = fit_blobs(capsys, blobs_csv, tmp_path / "o")
    assert rc == 2 and "No space left" in err
    assert list((tmp_path / "o").iterdir()) == []


def test_prepared_blocks_equal_the_whole_array(tmp_path):
    """fit projects and counts clipped rows block by block on the reading
    threads; the result is the same array and the same counts."""
    from dpdbscan.files import read_input
    from dpdbscan.prepare.clipping import BlockPrep, clipping_counts

    rng = np.random.default_rng(3)
    P = np.column_stack([rng.uniform(-122.7, -122.2, 300_000), rng.uniform(37.5, 37.9, 300_000)])
    P[::997] = np.nan
    path = tmp_path / "p.csv"
    path.write_text("lon,lat\n" + "".join(f"{a!r},{b!r}\n" for a, b in P.tolist()))
    bounds = [-122.6, 37.55, -122.3, 37.85]
    prep = BlockPrep(bounds, True, None)
    got = read_input(path, block_hook=prep, header=True).X
    proj = Equirectangular.from_bounds(bounds[:2], bounds[2:])
    lo, hi = proj.project_bounds(bounds[:2], bounds[2:])
    want = proj.forward(read_input(path, header=True).X)
    np.testing.assert_array_equal(got, want)
    c, w = prep.result(got.shape[0]), clipping_counts(want, lo, hi)
    assert c["n_bad"] == w["n_bad"] == 301 and c["outside"] == w["outside"] > 0
    assert np.array_equal(c["below"], w["below"]) and np.array_equal(c["above"], w["above"])
    # bounds that do not fit: the blocks are left alone for the usual checks
    prep = BlockPrep([0, 1], True, None)
    np.testing.assert_array_equal(
        read_input(path, block_hook=prep, header=True).X, read_input(path, header=True).X
    )
    assert prep.result(got.shape[0]) is None


def test_quiet_and_no_progress_after_the_command(capsys, blobs_csv, tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("DPDBSCAN_NO_PROGRESS", raising=False)
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    rc = main(
        [
            "fit",
            str(blobs_csv),
            "--header",
            *FIT,
            "--out-dir",
            str(tmp_path),
            "--no-png",
            "--no-progress",
            "--quiet",
        ]
    )
    assert rc == 0 and "\r" not in tty.getvalue() and "[private: do not publish]" not in tty.getvalue()


def test_private_notes_are_marked(capsys, blobs_csv, tmp_path):
    rc, out, err = run(capsys, "fit", blobs_csv, "--header", *FIT, "--out-dir", tmp_path, "--no-png")
    assert "[private: do not publish] read 3,000 rows" in err and "3,000" not in out


def test_sweep_from_a_model_refuses_options_it_would_ignore(capsys, blobs_model, tmp_path):
    # (--eps is honoured: it re-parameterises the saved release; tests/cli/test_cli_params.py)
    for extra in (["--eta", "2"], ["--epsilon", "5"], ["--beta", "0.3"]):
        rc, out, err = run(
            capsys, "sweep", "--model", blobs_model, "--min-samples", "9", "--out-dir", tmp_path, *extra
        )
        assert rc == 2 and extra[0] in err and "shape" in err, err


def test_clipping_notes_name_the_column_and_bound(capsys, blobs_csv, tmp_path):
    rc, out, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "5",
        "--bounds",
        "0",
        "0",
        "10",
        "4",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert rc == 0
    assert "column 'y'" in err and "above its upper bound 4" in err and "[private: do not publish]" in err


def test_swapped_bounds_are_spotted(capsys, blobs_csv, tmp_path):
    # xmin xmax ymin ymax instead of xmin ymin xmax ymax
    rc, out, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "5",
        "--bounds",
        "0",
        "10",
        "0.5",
        "9",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert "in the order xmin xmax ymin ymax" in err and "0 0.5 10 9" in err


def test_fit_reads_standard_input(capsys, blobs_csv, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(blobs_csv.read_bytes())))
    rc, out, err = run(capsys, "fit", "-", "--header", *FIT, "--out-dir", tmp_path, "--no-png")
    assert rc == 0 and (tmp_path / "stdin.spans.json").exists()
    assert "from standard input" in err


def test_header_option_reads_a_numeric_first_line_as_names(capsys, tmp_path):
    p = tmp_path / "num.csv"
    rows = ["1,2"] + [f"{x:.3f},{y:.3f}" for x, y in blob_points()]
    p.write_text("\n".join(rows) + "\n")
    rc, out, err = run(
        capsys, "fit", p, "--no-header", *FIT, "--out-dir", tmp_path, "--no-png", "--no-geojson"
    )
    assert rc == 2 and "--fields" in err  # two scalar bounds do not say how many fields a line has
    rc, out, err = run(
        capsys,
        "fit",
        p,
        "--no-header",
        "--fields",
        "2",
        *FIT,
        "--out-dir",
        tmp_path,
        "--no-png",
        "--no-geojson",
    )
    assert rc == 0 and "3,001 rows" in err and "(0, 1)" in err
    rc, out, err = run(capsys, "fit", p, "--header", *FIT, "--out-dir", tmp_path, "--no-png", "--no-geojson")
    assert rc == 0 and "3,000 rows" in err and "(1, 2)" in err


def test_csv_without_a_header_decision_is_refused_before_reading(capsys, tmp_path):
    """Neither --header nor --no-header: one line naming both options, before the
    file is read, nothing written, no budget spent (issue 19 finding 1)."""
    p = tmp_path / "num.csv"
    p.write_text("0.5|0.5\n" + "".join(f"{x:.3f},{y:.3f}\n" for x, y in blob_points()))
    rc, out, err = run(capsys, "fit", p, *FIT, "--out-dir", tmp_path / "o")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--header" in err and "--no-header" in err and "0.5|0.5" not in err
    assert not (tmp_path / "o").exists()


def test_huge_epsilon_does_not_overflow(capsys, blobs_csv, tmp_path):
    """Issue 19, finding 8: the margins are computed without a floating-point
    warning at any accepted epsilon, and the command says once, in its own
    words, that such an epsilon protects little."""
    for hist in ("dense", "sparse"):
        rc, out, err = run(
            capsys,
            "fit",
            blobs_csv,
            "--header",
            *FIT,
            "--epsilon",
            "1000",
            "--histogram",
            hist,
            "--out-dir",
            tmp_path,
            "--no-png",
        )
        assert rc == 0, err
        assert "epsilon=1000" in out
        assert "encountered" not in err and "overflow" not in err.lower()
        lines = [x for x in err.splitlines() if "gives little privacy protection" in x]
        assert len(lines) == 1 and lines[0].startswith("dpdbscan: PRIVACY WARNING: --epsilon 1000 ")
    rc, out, err = run(
        capsys, "fit", blobs_csv, "--header", *FIT, "--epsilon", "10", "--out-dir", tmp_path, "--no-png"
    )
    assert rc == 0 and "little privacy protection" not in err


def test_warnings_of_the_release_reach_standard_error(capsys, tmp_path):
    """The command collects Python warnings and prints each once; before
    issue 19 it dropped every one of them (the recording list was replaced by
    a fresh one), so a release with no span came without its UtilityWarning."""
    path = write_csv(tmp_path / "few.csv", blob_points()[:40])
    rc, out, err = run(
        capsys,
        "fit",
        path,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "200",
        "--bounds",
        "0",
        "10",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert rc == 0 and "0 span(s)" in out
    assert err.count("dpdbscan: warning: the release has no span") == 1


def test_too_many_dimensions_are_refused_before_spending(capsys, tmp_path):
    X = np.random.default_rng(0).random((50, 10))
    np.save(tmp_path / "ten.npy", X)
    rc, out, err = run(
        capsys,
        "fit",
        tmp_path / "ten.npy",
        "--eps",
        "0.5",
        "--min-samples",
        "5",
        "--bounds",
        "0",
        "1",
        "--out-dir",
        tmp_path,
    )
    assert rc == 2 and "d=10" in err and "nothing is released" in err
    assert not (tmp_path / "ten.spans.json").exists()


def test_fit_of_standardised_data_warns_after_the_release(capsys, tmp_path):
    """Issue 19, finding 7, through the command line: a file whose columns
    were standardised (by a scaler fitted on the private data) gets a privacy
    warning; the release is written all the same."""
    X = blob_points()
    path = write_csv(tmp_path / "z.csv", (X - X.mean(0)) / X.std(0))
    rc, out, err = run(
        capsys,
        "fit",
        path,
        "--header",
        "--eps",
        "0.3",
        "--min-samples",
        "20",
        "--bounds",
        "-3",
        "3",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert rc == 0 and (tmp_path / "z.spans.json").exists()
    assert (
        err.count("[private: do not publish] dpdbscan: PRIVACY WARNING: every column of the data has mean 0")
        == 1
    )
    rc, out, err = run(
        capsys,
        "fit",
        write_csv(tmp_path / "raw.csv", X),
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "20",
        "--bounds",
        "0",
        "10",
        "--out-dir",
        tmp_path,
        "--no-png",
    )
    assert rc == 0 and "PRIVACY WARNING" not in err


def test_the_standardised_note_made_beside_the_release_is_the_notes_own():
    """fit computes the standardised note on a thread while it makes the
    release: the same note (or none), and its error raised where it is
    asked for; the thread has ended by then."""
    import threading

    from dpdbscan.cli.fit import standardised_note_beside
    from dpdbscan.params.validation import standardised_note

    X = blob_points()
    Z = (X - X.mean(0)) / X.std(0)
    for points in (X, Z):
        assert standardised_note_beside(points, "--bounds")() == standardised_note(points, "--bounds")
    assert standardised_note_beside(Z, "--bounds")() is not None
    note = standardised_note_beside(np.zeros(5), "--bounds")  # 1-D: no note
    assert note() is None
    with pytest.raises(AttributeError):
        standardised_note_beside([[1.0, 2.0]], "--bounds")()  # as standardised_note itself
    assert not any(t.name == "dpdbscan-note" for t in threading.enumerate())


# --------------------------------------------------------------------------- mistakes caught early (issue 23)


def test_a_typo_in_a_required_option_is_named(capsys, blobs_csv, tmp_path):
    rc, out, err = run(
        capsys,
        "fit",
        blobs_csv,
        "--header",
        "--eps",
        "0.5",
        "--min-smaples",
        "5",
        "--bounds",
        "0",
        "10",
        "--out-dir",
        tmp_path / "o",
    )
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--min-smaples (did you mean --min-samples?)" in err and err.startswith("dpdbscan fit: error:")
    assert not (tmp_path / "o").exists()


def test_parser_errors_have_the_one_form(capsys):
    rc, out, err = run(capsys, "fit", "x.csv", "--eps", "1", "--bounds", "0", "1")
    assert rc == 2 and err.startswith(
        "dpdbscan fit: error: the following arguments are required: --min-samples"
    )


def test_reversed_bounds_suggest_a_valid_order(capsys, tmp_path):
    path = write_geo_csv(tmp_path / "trips.csv", geo_points())
    rc, out, err = run(
        capsys,
        "fit",
        path,
        "--header",
        "--geo",
        "--bounds",
        "-122.38",
        "37.82",
        "-122.48",
        "37.72",
        "--eps",
        "50m",
        "--min-samples",
        "50",
        "--out-dir",
        tmp_path / "o",
    )
    assert rc == 2 and "--bounds -122.48 37.72 -122.38 37.82" in err
    assert not (tmp_path / "o").exists()


def test_geo_eps_needs_a_unit(capsys, tmp_path):
    path = write_geo_csv(tmp_path / "trips.csv", geo_points())
    rc, out, err = run(
        capsys,
        "fit",
        path,
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50",
        "--min-samples",
        "50",
        "--out-dir",
        tmp_path / "o",
    )
    assert rc == 2 and "50m or 50km" in err and not (tmp_path / "o").exists()


def test_missing_input_creates_no_output_folder(capsys, tmp_path):
    rc, out, err = run(
        capsys, "fit", tmp_path / "nope.csv", "--header", *FIT, "--out-dir", tmp_path / "zz" / "deeper"
    )
    assert rc == 2 and "input file not found" in err
    assert not (tmp_path / "zz").exists()


def test_extra_columns_with_geo_are_refused_before_reading(capsys, tmp_path):
    path = tmp_path / "trips.csv"
    P = geo_points()
    path.write_text(
        "id,x,y,time\n" + "".join(f"{i},{a!r},{b!r},{i * 7}\n" for i, (a, b) in enumerate(P.tolist()))
    )
    rc, out, err = run(
        capsys,
        "fit",
        path,
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50m",
        "--min-samples",
        "50",
        "--out-dir",
        tmp_path / "o",
    )
    assert (
        rc == 2
        and "got 4 (id, x, y, time)" in err
        and "choose them with --columns x y (longitude first)" in err
    )
    assert "read " not in err  # decided from the header, before any row was read


def test_swapped_columns_are_spotted_even_when_quiet(capsys, tmp_path):
    path = tmp_path / "latlon.csv"
    P = geo_points()
    path.write_text("lat,lon\n" + "".join(f"{b!r},{a!r}\n" for a, b in P.tolist()))
    # public names say latitude first: refused before any record is read or anything spent
    rc, out, err = run(
        capsys,
        "fit",
        path,
        "--header",
        "--columns",
        "lat",
        "lon",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50m",
        "--min-samples",
        "50",
        "--out-dir",
        tmp_path / "o",
        "--quiet",
        "--seed",
        "0",
    )
    assert rc != 0 and out == "" and not (tmp_path / "o").exists()
    assert "swapped" in err and "--columns lon lat" in err
    # without names only the data could show it: the release is made, the swap a private note after it
    bare = tmp_path / "latlon_bare.csv"
    bare.write_text("".join(f"{b!r},{a!r}\n" for a, b in P.tolist()))
    rc, out, err = run(
        capsys,
        "fit",
        bare,
        "--no-header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50m",
        "--min-samples",
        "50",
        "--out-dir",
        tmp_path / "o",
        "--quiet",
        "--seed",
        "0",
    )
    assert rc == 0
    assert "[private: do not publish]" in err and "the columns look swapped" in err
    assert "--columns 1 0" in err
    # the bounds are quoted in degrees, as given
    assert "bound 37.72" in err or "bound -122.48" in err or "bound 37.82" in err or "bound -122.38" in err


def test_latitude_first_geojson_points_get_a_note_without_columns_to_swap(capsys, tmp_path):
    # a GeoJSON file has no --columns (its reader refuses them): the private note
    # says the file's own points are latitude first, not "--columns y x"
    path = tmp_path / "latlon.geojson"
    feats = [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [b, a]}}
        for a, b in geo_points().tolist()
    ]
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    args = ["--geo", "--bounds", *SF, "--eps", "50m", "--min-samples", "50"]
    rc, out, err = run(capsys, "fit", path, *args, "--out-dir", tmp_path / "o", "--quiet", "--seed", "0")
    assert rc == 0
    assert "GeoJSON file's points are longitude first" in err and "--columns" not in err
    rc, out, err = run(capsys, "check", path, *args)
    assert rc == 0 and out == "" and "points look latitude first" in err and "--columns" not in err


def test_predict_says_when_no_point_is_inside_the_box(capsys, tmp_path):
    path = write_geo_csv(tmp_path / "trips.csv", geo_points())
    run(
        capsys,
        "fit",
        path,
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50m",
        "--min-samples",
        "50",
        "--out-dir",
        tmp_path,
        "--no-png",
        "--seed",
        "0",
    )
    pts = tmp_path / "q.csv"
    pts.write_text("lat,lon\n37.79,-122.41\n37.76,-122.44\n")
    rc, out, err = run(capsys, "predict", tmp_path / "trips.spans.json", pts, "--columns", "lat", "lon", "-q")
    assert rc == 0 and out.split()[1:] == ["-1", "-1"]
    assert "no point lies inside the model's bounds" in err


def test_eps_as_large_as_the_box_is_refused_before_spending(capsys, tmp_path):
    """Issue 23: --geo --eps 50km over a 26 x 33 km box spent the budget on a
    one-cell grid; now refused from public inputs, nothing written."""
    path = write_geo_csv(tmp_path / "trips.csv", geo_points())
    rc, out, err = run(
        capsys,
        "fit",
        path,
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50km",
        "--min-samples",
        "50",
        "--out-dir",
        tmp_path / "o",
    )
    assert rc == 2 and "at least the public box's longest side" in err and "nothing is released" in err
    assert not (tmp_path / "o").exists()
    assert len(err.strip().splitlines()) == 1


def test_eps_as_large_as_the_box_spends_nothing_in_python():
    from dpdbscan import DPDBSCAN
    from dpdbscan.release.accountant import BudgetAccountant

    acc = BudgetAccountant(epsilon=1.0)
    X = np.random.default_rng(0).random((500, 2)) * [700, 480]
    with pytest.raises(ValueError, match=r"eps=5000 is at least the public box's longest side \(700"):
        DPDBSCAN(5000, min_samples=5, bounds=([0, 0], [700, 480]), accountant=acc).fit(X)
    assert acc.total() == (0.0, 0.0)


def test_the_command_says_the_warnings_python_gives(capsys, tmp_path):
    """Issue 23: fit_lonlat with the README's Cabs parameters warned that
    "less than half of the noisy counts lie in cells of the spans" while the
    command seemed silent. A small case: two blobs in much diffuse noise. The
    same seed makes the same release, so the command's stderr carries the
    Python UtilityWarning word for word (it reads the release only: no private
    mark)."""
    import warnings

    from dpdbscan import DPDBSCAN, UtilityWarning

    rng = np.random.default_rng(0)
    X = np.vstack(
        [rng.normal([3, 3], 0.2, (600, 2)), rng.normal([7, 7], 0.2, (600, 2)), rng.uniform(0, 10, (3000, 2))]
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPDBSCAN(0.5, min_samples=100, bounds=(0, 10), random_state=0).fit(X)
    said = [" ".join(str(w.message).split()) for w in caught if w.category is UtilityWarning]
    assert len(said) == 1 and said[0].startswith(
        "less than half of the noisy counts lie in cells of the spans"
    )
    path = write_csv(tmp_path / "diffuse.csv", X)
    rc, out, err = run(
        capsys,
        "fit",
        path,
        "--header",
        "--eps",
        "0.5",
        "--min-samples",
        "100",
        "--bounds",
        "0",
        "10",
        "--seed",
        "0",
        "--out-dir",
        tmp_path / "o",
        "--no-png",
        "-q",
    )
    assert rc == 0 and "2 span(s)" in out
    assert f"dpdbscan: warning: {said[0]}" in err.splitlines()


def test_plot_labels_marks_the_outside_note_private(capsys, tmp_path):
    """Issue 23: a picture of points that all lie outside the box: the
    library's PrivateNoteWarning reaches stderr marked private (it describes
    the points, not the release)."""
    path = write_geo_csv(tmp_path / "trips.csv", geo_points())
    run(
        capsys,
        "fit",
        path,
        "--header",
        "--geo",
        "--bounds",
        *SF,
        "--eps",
        "50m",
        "--min-samples",
        "50",
        "--out-dir",
        tmp_path,
        "--no-png",
        "--seed",
        "0",
    )
    pts = tmp_path / "q.csv"
    pts.write_text("lat,lon\n37.79,-122.41\n37.76,-122.44\n")
    rc, out, err = run(
        capsys,
        "plot",
        tmp_path / "trips.spans.json",
        "--kind",
        "labels",
        "--points",
        pts,
        "--header",
        "--columns",
        "lat",
        "lon",
        "-o",
        tmp_path / "l.png",
    )
    assert rc == 0
    line = [x for x in err.splitlines() if "no point of the 2 given lies inside" in x]
    assert len(line) == 1 and line[0].startswith("[private: do not publish] dpdbscan: warning: ")


def test_the_forecast_s_labels_line_up_with_events_too(capsys):
    """Every labelled line of the forecast ("grid      : ...") has its colon
    in the same column, the events' line ("counts") included."""
    rc, out, err = run(
        capsys, "forecast", "--geo", "--bounds", "-122.6", "37.55", "-122.3", "37.85", "--eps", "200m",
        "--min-samples", "30", "--unit", "cab", "--max-cells-per-unit", "50", "--delta", "1e-6",
        "--time", "time", "--stops", "100m", "5min",
    )  # fmt: skip
    assert rc == 0, err
    labelled = [x for x in out.splitlines() if re.match(r"^[a-z][a-z ]*\s:\s", x)]
    assert any(x.startswith("counts") for x in labelled) and len(labelled) >= 5, out
    assert {x.index(":") for x in labelled} == {10}, labelled


@pytest.mark.parametrize("action", ["init", "show"])
def test_each_ledger_action_s_help_shows_its_own_examples(capsys, action):
    rc, out, _ = run(capsys, "ledger", action, "--help")
    assert rc == 0 and "examples:" in out
    lines = [x.strip() for x in out.splitlines() if x.strip().startswith("dpdbscan ")]
    assert lines and all(x.startswith(f"dpdbscan ledger {action} ") for x in lines), lines
    parser = build_parser()
    for line in lines:
        parser.parse_args(shlex.split(line)[1:])
