"""A city south of the equator and west of Greenwich, as a newcomer's data come (issue 28,
"design for traces in general"): what the command says about it."""

import datetime as dt
import math

import numpy as np
import pytest

from dpdbscan.geometry.projection import KM_PER_DEGREE, latitude_text
from dpdbscan.model import load_model

from clirun import run

#: Santiago de Chile's public box (lon_min lat_min lon_max lat_max)
SANTIAGO = ["-70.85", "-33.65", "-70.45", "-33.25"]
HOTSPOTS = np.array([[-70.65, -33.44], [-70.60, -33.41]])


def write_points(path, header="longitude,latitude", seed=0, n=1500):
    rng = np.random.default_rng(seed)
    P = np.vstack([rng.normal(c, [0.0004, 0.0003], (n, 2)) for c in HOTSPOTS])
    path.write_text(header + "\n" + "\n".join(f"{float(a)!r},{float(b)!r}" for a, b in P) + "\n")
    return path


def test_latitude_text_names_the_hemisphere():
    assert latitude_text(37.77) == "37.7700 deg N"
    assert latitude_text(-33.45) == "33.4500 deg S"
    assert latitude_text(0.0) == "0.0000 deg N"


def test_a_southern_city_is_projected_around_a_latitude_in_the_south(capsys, tmp_path):
    csv = write_points(tmp_path / "pickups.csv")
    rc, out, err = run(
        capsys, "fit", csv, "--header", "--geo", "--bounds", *SANTIAGO, "--eps", "50m",
        "--min-samples", "100", "--seed", "0", "--out-dir", tmp_path, "--no-png",
    )  # fmt: skip
    assert rc == 0, err
    assert "km around 33.4500 deg S" in out
    assert "deg N" not in out


def test_a_box_given_latitude_first_is_named_as_the_box_not_the_columns(capsys, tmp_path):
    # the columns are longitude, latitude by name; the box is given latitude first (in Santiago
    # -70.85 is a valid latitude, so no public check can catch it): the note names --bounds,
    # in the order it wants, and does not advise swapping the columns (which were right)
    csv = write_points(tmp_path / "pickups.csv")
    swapped = [SANTIAGO[1], SANTIAGO[0], SANTIAGO[3], SANTIAGO[2]]
    rc, out, err = run(
        capsys, "fit", csv, "--header", "--geo", "--bounds", *swapped, "--eps", "50m",
        "--min-samples", "100", "--seed", "0", "--out-dir", tmp_path, "--no-png",
    )  # fmt: skip
    assert rc == 0, err  # made all the same: whether a release happens never hinges on the data
    assert "the bounds look latitude first" in err
    assert "--bounds -70.85 -33.65 -70.45 -33.25" in err
    assert "--columns" not in err


@pytest.mark.parametrize("header", ["a,b", "latitude,longitude_is_second"])
def test_without_longitude_latitude_names_the_note_gives_both_ways_out(capsys, tmp_path, header):
    # the columns' names do not say which is which: the box or the columns may be the swapped ones
    csv = write_points(tmp_path / "pickups.csv", header=header)
    rc, out, err = run(
        capsys, "fit", csv, "--header", "--geo", "--columns", *header.split(","), "--bounds",
        SANTIAGO[1], SANTIAGO[0], SANTIAGO[3], SANTIAGO[2], "--eps", "50m", "--min-samples", "100",
        "--seed", "0", "--out-dir", tmp_path, "--no-png",
    )  # fmt: skip
    if header.startswith("latitude"):
        assert rc != 0 and "Nothing was read or spent" in err  # refused by the names, before reading
        return
    assert rc == 0, err
    a, b = header.split(",")
    assert f"--columns {b} {a}, or, if the columns are in order, --bounds -70.85 -33.65 -70.45 -33.25" in err


def write_traces(path, layout, n_units=40, seed=1):
    """Traces of ``n_units`` phones in Santiago, each stopping at two places for 10 min (a fix a
    minute) with a drive between them; the time written as ``layout`` does (an strftime format)."""
    rng = np.random.default_rng(seed)
    start = dt.datetime(2026, 3, 2, 5, 0, tzinfo=dt.timezone(dt.timedelta(hours=-3)))
    lines = ["device_id,timestamp,longitude,latitude"]
    for u in range(n_units):
        t = start + dt.timedelta(minutes=int(rng.integers(0, 600)))
        for place in HOTSPOTS:
            for _ in range(11):
                lon, lat = (float(v) for v in place + rng.normal(0, 0.0002, 2))
                lines.append(f"phone-{u:03d},{t.strftime(layout)},{lon!r},{lat!r}")
                t += dt.timedelta(seconds=60)
            for k in range(1, 6):  # the drive away: 600 m a minute
                lines.append(
                    f"phone-{u:03d},{t.strftime(layout)},{float(place[0]) + 0.0065 * k!r},{float(place[1])!r}"
                )
                t += dt.timedelta(seconds=60)
    path.write_text("\n".join(lines) + "\n")
    return path


def fit_traces(capsys, path, out, *extra):
    return run(
        capsys, "fit", path, "--header", "--geo", "--bounds", *SANTIAGO, "--eps", "200m",
        "--min-samples", "5", "--unit", "device_id", "--max-cells-per-unit", "4", "--delta", "1e-6",
        "--time", "timestamp", "--stops", "100m", "5min", "--seed", "7", "--out-dir", out,
        "--no-png", "--no-geojson", *extra,
    )  # fmt: skip


def test_day_first_times_are_read_with_time_format_as_their_iso_twin(capsys, tmp_path):
    iso = write_traces(tmp_path / "iso.csv", "%Y-%m-%dT%H:%M:%S%z")
    dmy = write_traces(tmp_path / "dmy.csv", "%d/%m/%Y %H:%M:%S")  # local time, day first
    rc, out_iso, err = fit_traces(capsys, iso, tmp_path / "a")
    assert rc == 0, err
    assert "80 stop(s) of the units found" in err
    # without --time-format no time reads, and the note says what to give
    rc, _, err = fit_traces(capsys, dmy, tmp_path / "b")
    assert rc == 0, err
    assert "have no readable time" in err and "--time-format, e.g. '%d/%m/%Y %H:%M:%S'" in err
    rc, out_dmy, err = fit_traces(capsys, dmy, tmp_path / "c", "--time-format", "%d/%m/%Y %H:%M:%S")
    assert rc == 0, err
    assert "80 stop(s) of the units found" in err and "no readable time" not in err
    # the same stops (a fixed zone moves every time alike), so the same seeded release
    a, c = load_model(tmp_path / "a" / "iso.spans.json"), load_model(tmp_path / "c" / "dmy.spans.json")
    assert a.n_spans == c.n_spans
    np.testing.assert_array_equal(a.histogram.values, c.histogram.values)
    assert c.metadata["events"]["time_format"] == "%d/%m/%Y %H:%M:%S"
    assert "time_format" not in a.metadata["events"]


@pytest.mark.parametrize(
    "extra, said",
    [
        (("--time-format", "%d/%m/%Y", "--time-unit", "ms"), "give one of them"),
        (("--time-format", "%d/%m/%Y %Z"), "may not use %Z"),
        (("--time-format", "today"), "no date or time code"),
    ],
)
def test_a_time_format_that_cannot_apply_is_refused_before_reading(capsys, tmp_path, extra, said):
    dmy = write_traces(tmp_path / "dmy.csv", "%d/%m/%Y %H:%M:%S", n_units=2)
    rc, out, err = fit_traces(capsys, dmy, tmp_path / "o", *extra)
    assert rc != 0 and out == "" and said in err
    assert not (tmp_path / "o").exists()


def test_a_time_format_needs_a_time_column_and_text(capsys, tmp_path):
    csv = write_points(tmp_path / "p.csv")
    rc, out, err = run(
        capsys, "fit", csv, "--header", "--geo", "--bounds", *SANTIAGO, "--eps", "50m",
        "--min-samples", "100", "--time-format", "%d/%m/%Y", "--out-dir", tmp_path / "o",
    )  # fmt: skip
    assert rc != 0 and "--time-format goes with --time COLUMN" in err
    plt = tmp_path / "t.plt"
    plt.write_text("h\nh\nh\nh\nh\nh\n-33.44,-70.65,0,0,46083.2,2026-03-02,05:39:04\n")
    rc, out, err = run(
        capsys, "fit", plt, "--geo", "--bounds", *SANTIAGO, "--eps", "50m", "--min-samples", "100",
        "--time", "time", "--time-format", "%d/%m/%Y", "--per", "day", "--out-dir", tmp_path / "o",
    )  # fmt: skip
    assert rc != 0 and "does not apply to PLT input" in err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- across 180


def fiji_points(seed=2, n=1500):
    """Two hot spots either side of the antimeridian (lon 179.99 and 180.01 east), in 0..360."""
    rng = np.random.default_rng(seed)
    return np.vstack(
        [rng.normal(c, [0.0004, 0.0003], (n, 2)) for c in ([179.995, -16.70], [180.004, -16.69])]
    )


def test_a_box_across_the_antimeridian_reads_minus_179_as_181(capsys, tmp_path):
    from dpdbscan.geometry.projection import Equirectangular

    proj = Equirectangular.from_bounds([179.5, -17.0], [180.5, -16.5])
    # the same place to a nanometre (the two writings round differently in their last bit)
    np.testing.assert_allclose(proj.forward([[-179.9, -16.7]]), proj.forward([[180.1, -16.7]]), atol=1e-12)
    # inside an ordinary box nothing moves; a point more than 180 degrees away is the short way round
    sf = Equirectangular.from_bounds([-122.48, 37.72], [-122.38, 37.82])
    assert sf.forward([[-122.40, 37.8]])[0, 0] == (-122.40 - sf.lon0) * sf.kx
    assert sf.forward([[120.0, 37.8]])[0, 0] == pytest.approx((120.0 - 360 - sf.lon0) * sf.kx)
    P = fiji_points()
    east = P.copy()
    written = P.copy()
    written[written[:, 0] > 180, 0] -= 360  # as a GPS writes them: -179.99
    assert (written[:, 0] < 0).mean() > 0.4
    for name, Q in (("east", east), ("written", written)):
        path = tmp_path / f"{name}.csv"
        path.write_text("longitude,latitude\n" + "\n".join(f"{float(a)!r},{float(b)!r}" for a, b in Q) + "\n")
        rc, out, err = run(
            capsys, "fit", path, "--header", "--geo", "--bounds", "179.5", "-17", "180.5", "-16.5",
            "--eps", "50m", "--min-samples", "100", "--seed", "0", "--out-dir", tmp_path, "--no-png",
        )  # fmt: skip
        assert rc == 0, err
        assert "outside the bounds" not in err
    a, b = load_model(tmp_path / "east.spans.json"), load_model(tmp_path / "written.spans.json")
    assert a.n_spans == b.n_spans == 2
    np.testing.assert_array_equal(a.histogram.values, b.histogram.values)


def test_a_box_written_west_of_minus_180_says_how_to_write_it(capsys, tmp_path):
    csv = write_points(tmp_path / "p.csv")
    rc, out, err = run(
        capsys, "fit", csv, "--header", "--geo", "--bounds", "-180.5", "-17", "-179.5", "-16.5",
        "--eps", "50m", "--min-samples", "100", "--out-dir", tmp_path / "o",
    )  # fmt: skip
    assert rc != 0 and "a box across the antimeridian is written east of 180: 179.5 .. 180.5" in err


def _rings(geometry):
    return [ring for polygon in geometry["coordinates"] for ring in polygon]


#: A box whose west edge lies 2,000 sub-cells of 50 m / (2 sqrt 2) west of 180 at its
#: latitude: the line then runs along a cell side, up to rounding (no sliver of a cell)
ON_A_SIDE = repr(180 - 2000 * 0.05 / (2 * 2**0.5) / (KM_PER_DEGREE * math.cos(math.radians(-16.75))))


@pytest.mark.parametrize(
    "bounds",
    [
        ("179.5", "-17", "180.5", "-16.5"),
        ("179.99", "-16.75", "180.3", "-16.6"),
        (ON_A_SIDE, "-17", "180.5", "-16.5"),
    ],
)
def test_the_geojson_of_spans_across_the_antimeridian_is_cut_in_two(capsys, tmp_path, bounds):
    """RFC 7946 3.1.9: a geometry across the antimeridian is cut so that each
    part's longitudes lie in [-180, 180]. The file had a span straddling the
    line as one polygon to 180.0006 (and a span east of it wholly beyond 180)."""
    import json

    import shapely
    from shapely.affinity import translate
    from shapely.geometry import shape

    from dpdbscan.geometry.projection import projection_of
    from dpdbscan.model.geojson import geojson, predict_lonlat

    rng = np.random.default_rng(3)
    centres = ([180.0, -16.70], [179.99, -16.69], [180.012, -16.695])  # on the line, west, east
    P = np.vstack([rng.normal(c, [0.0006, 0.0004], (2000, 2)) for c in centres])
    P[P[:, 0] > 180, 0] -= 360  # as a GPS writes them
    path = tmp_path / "fiji.csv"
    path.write_text("longitude,latitude\n" + "\n".join(f"{float(a)!r},{float(b)!r}" for a, b in P) + "\n")
    rc, out, err = run(
        capsys, "fit", path, "--header", "--geo", "--bounds", *bounds, "--eps", "50m",
        "--min-samples", "100", "--seed", "0", "--out-dir", tmp_path, "--no-png",
    )  # fmt: skip
    assert rc == 0, err
    model = load_model(tmp_path / "fiji.spans.json")
    doc = json.loads((tmp_path / "fiji.spans.geojson").read_text())
    assert model.n_spans == len(doc["features"]) == 3
    lo, hi = float(bounds[1]), float(bounds[3])
    # the same spans as the continuous outlines (east of 180 as such) the file held before
    proj = projection_of(model)
    whole = geojson(model, transform=lambda xy: proj.inverse(xy), precision=7)
    # a caller's transform: not cut
    assert whole["properties"]["coordinates"] != doc["properties"]["coordinates"]
    crossing = 0
    for f, before in zip(doc["features"], whole["features"], strict=True):
        rings = _rings(f["geometry"])
        assert all(r[0] == r[-1] and len(r) >= 4 for r in rings)
        # no edge of length 0 (where the line runs along a cell side, no sliver of a cell)
        assert not any((np.diff(np.array(r), axis=0) == 0).all(axis=1).any() for r in rings)
        lon = np.array([c[0] for r in rings for c in r])
        lat = np.array([c[1] for r in rings for c in r])
        assert lon.min() >= -180 and lon.max() <= 180 and lat.min() >= lo and lat.max() <= hi
        geom = shape(f["geometry"])
        assert shapely.is_valid(geom), shapely.is_valid_reason(geom)
        parts = [translate(p, 360.0) if p.bounds[2] <= -179 else p for p in geom.geoms]
        assert shapely.union_all(parts).symmetric_difference(shape(before["geometry"])).area < 1e-12
        if lon.max() == 180.0 and lon.min() == -180.0:
            crossing += 1
        # each part read back: a point inside it, in degrees as the file gives it, is the span's
        inside = np.array([p.representative_point().coords[0] for p in geom.geoms])
        assert (predict_lonlat(model, inside) == f["properties"]["span"]).all()
    assert crossing == 1
    # unrounded, the parts meet the line exactly
    raw = [
        np.array([c[0] for r in _rings(f["geometry"]) for c in r])
        for f in geojson(model, precision=None)["features"]
    ]
    assert all(x.min() >= -180 and x.max() <= 180 for x in raw)
    assert sum(x.max() == 180.0 and x.min() == -180.0 for x in raw) == 1
