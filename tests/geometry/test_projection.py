import math

import numpy as np
import pytest

from dpdbscan.geometry.projection import (
    KM_PER_DEGREE,
    Equirectangular,
    check_lonlat_box,
    default_geo_columns,
    format_km,
    parse_length,
)

SF_LOWER, SF_UPPER = (-122.48, 37.72), (-122.38, 37.82)


def haversine_km(a, b, radius=6371.0088):
    lon1, lat1, lon2, lat2 = map(np.radians, (a[:, 0], a[:, 1], b[:, 0], b[:, 1]))
    h = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return 2 * radius * np.arcsin(np.sqrt(h))


@pytest.mark.parametrize(
    "text, geo, expected",
    [
        ("50m", True, 0.05),
        ("50 m", True, 0.05),
        ("0.05km", True, 0.05),
        ("0.05KM", True, 0.05),
        (0.05, True, 0.05),
        (2, True, 2.0),
        ("1e3m", True, 1.0),
        ("12", False, 12.0),
        ("0.5", False, 0.5),
        (3.0, False, 3.0),
    ],
)
def test_parse_length(text, geo, expected):
    assert parse_length(text, geo=geo) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text, geo, match",
    [
        ("50m", False, "only makes sense with --geo"),
        ("50ft", True, "unknown unit 'ft'"),
        ("fifty", True, "must be a number"),
        ("", True, "must be a number"),
        ("5 0m", True, "must be a number"),
        ("0.05", True, "with --geo give eps with a unit"),  # 50 m or 50 km? (issue 23)
        ("50", True, "50m or 50km"),
    ],
)
def test_parse_length_rejects(text, geo, match):
    with pytest.raises(ValueError, match=match):
        parse_length(text, geo=geo)


@pytest.mark.parametrize(
    "km, text",
    [
        (0.05, "50 m"),
        (2.5, "2.5 km"),
        (0.171573, "172 m"),  # the place radius: not "171.573 m"
        (0.0353553, "35.4 m"),
        (0.0176777, "17.7 m"),
        (1.2, "1.2 km"),
        (2.3456, "2.35 km"),
        (190.4, "190 km"),
        (12345.6, "12,300 km"),
        (0.9996, "1 km"),  # rounds up into km, never "1000 m"
        (0.99949, "999 m"),
        (0.0005, "0.5 m"),
        (0.0, "0 m"),
    ],
)
def test_format_km_reads_as_a_person_writes_a_length(km, text):
    assert format_km(km) == text


def test_one_degree_of_latitude_is_km_per_degree():
    p = Equirectangular(0.0, 0.0, 45.0)
    xy = p.forward([[0.0, 0.0], [0.0, 1.0]])
    assert xy[1, 1] - xy[0, 1] == pytest.approx(KM_PER_DEGREE)
    # and matches the great-circle length of one degree on the mean sphere
    assert KM_PER_DEGREE == pytest.approx(2 * math.pi * 6371.0088 / 360, abs=1e-3)


def test_forward_inverse_roundtrip():
    rng = np.random.default_rng(1)
    P = np.column_stack([rng.uniform(-122.5, -122.3, 1000), rng.uniform(37.7, 37.9, 1000)])
    proj = Equirectangular.from_bounds(SF_LOWER, SF_UPPER)
    np.testing.assert_allclose(proj.inverse(proj.forward(P)), P, rtol=0, atol=1e-10)


def test_distances_match_great_circle_within_a_city():
    """Inside the Cabs-tiny box the projected distance is within 0.1 % of the
    haversine distance (the box spans only 0.1 degree of latitude)."""
    rng = np.random.default_rng(2)
    A = np.column_stack(
        [rng.uniform(SF_LOWER[0], SF_UPPER[0], 2000), rng.uniform(SF_LOWER[1], SF_UPPER[1], 2000)]
    )
    B = np.column_stack(
        [rng.uniform(SF_LOWER[0], SF_UPPER[0], 2000), rng.uniform(SF_LOWER[1], SF_UPPER[1], 2000)]
    )
    proj = Equirectangular.from_bounds(SF_LOWER, SF_UPPER)
    d_proj = np.linalg.norm(proj.forward(A) - proj.forward(B), axis=1)
    d_true = haversine_km(A, B)
    keep = d_true > 0.05
    assert np.max(np.abs(d_proj[keep] / d_true[keep] - 1)) < 1e-3


def test_from_bounds_uses_the_box_only():
    proj = Equirectangular.from_bounds(SF_LOWER, SF_UPPER)
    assert proj.lon0 == pytest.approx(-122.43)
    assert proj.lat0 == pytest.approx(37.77)
    assert proj.ref_lat == pytest.approx(37.77)
    assert Equirectangular.from_bounds(SF_LOWER, SF_UPPER, ref_lat=37.8).ref_lat == 37.8
    lo, hi = proj.project_bounds(SF_LOWER, SF_UPPER)
    # centred box: symmetric around the origin, 11.12 km tall
    np.testing.assert_allclose(lo, -hi)
    assert hi[1] - lo[1] == pytest.approx(0.1 * KM_PER_DEGREE)
    assert hi[0] - lo[0] == pytest.approx(0.1 * KM_PER_DEGREE * math.cos(math.radians(37.77)))


def test_aspect_and_scale_error():
    proj = Equirectangular.from_bounds(SF_LOWER, SF_UPPER)
    assert proj.aspect == pytest.approx(1 / math.cos(math.radians(37.77)))
    assert proj.max_scale_error(SF_LOWER, SF_UPPER) < 0.002
    wide = Equirectangular.from_bounds((-10, 30), (10, 60))
    assert wide.max_scale_error((-10, 30), (10, 60)) > 0.2


@pytest.mark.parametrize(
    "lower, upper, match",
    [
        ((-122.38, 37.72), (-122.48, 37.82), "lon_min < lon_max"),
        ((-122.48, 37.82), (-122.38, 37.72), "lat_min < lat_max"),
        ((0, -95), (1, 10), "-90 <= lat_min"),
        ((37.72, -122.48), (37.82, -122.38), "lat_min < lat_max"),  # lat/lon swapped
        ((-200, 0), (0, 1), "-180 <= lon_min"),
    ],
)
def test_check_lonlat_box(lower, upper, match):
    with pytest.raises(ValueError, match=match):
        check_lonlat_box(lower, upper)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lon0=0.0, lat0=0.0, ref_lat=90.0), "ref_lat must be within"),
        (dict(lon0=float("nan"), lat0=0.0, ref_lat=0.0), "lon0 must be a finite"),
        (dict(lon0="x", lat0=0.0, ref_lat=0.0), "lon0 must be a finite"),
    ],
)
def test_projection_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Equirectangular(**kwargs)


def test_dict_roundtrip_and_bad_dicts():
    proj = Equirectangular(-122.43, 37.77, 37.8)
    assert Equirectangular.from_dict(proj.to_dict()) == proj
    with pytest.raises(ValueError, match="unknown projection"):
        Equirectangular.from_dict({"kind": "mercator"})
    with pytest.raises(ValueError, match="malformed projection"):
        Equirectangular.from_dict({"kind": "equirectangular", "lon0": 1.0})
    with pytest.raises(ValueError, match="km_per_degree"):
        Equirectangular.from_dict({**proj.to_dict(), "km_per_degree": 111.32})


def test_forward_needs_two_columns():
    with pytest.raises(ValueError, match=r"\(n, 2\) lon/lat"):
        Equirectangular(0.0, 0.0, 0.0).forward(np.zeros((3, 3)))


@pytest.mark.parametrize(
    "names, expected",
    [
        (["id", "Latitude", "Longitude"], ["Longitude", "Latitude"]),
        (["lat", "lon", "label"], ["lon", "lat"]),
        (["lng", "lat"], ["lng", "lat"]),
        (["x", "y"], None),
        (["lon", "height"], None),
    ],
)
def test_default_geo_columns(names, expected):
    assert default_geo_columns(names) == expected


# --------------------------------------------------------------------------- #
# latitude first: refused from public names before any record is read


def _lonlat_csv(path, first, second, n=200):
    rng = np.random.default_rng(0)
    lon, lat = -122.42 + 0.01 * rng.random(n), 37.78 + 0.01 * rng.random(n)
    cols = {"x": lon, "lon": lon, "y": lat, "lat": lat, "latitude": lat, "longitude": lon}
    rows = [f"{first},{second}"] + [f"{a!r},{b!r}" for a, b in zip(cols[first], cols[second])]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    "first, second", [("y", "x"), ("lat", "lon"), ("latitude", "longitude"), ("lat", "x")]
)
def test_the_command_line_refuses_latitude_first_before_reading(capsys, tmp_path, monkeypatch, first, second):
    from dpdbscan.files import reader

    from clirun import run

    path = _lonlat_csv(tmp_path / "cabs.csv", second, first)  # the file in lon/lat order
    read = []
    monkeypatch.setattr(reader.InputPlan, "read", lambda self, *a, **k: read.append(1))
    code, out, err = run(
        capsys,
        "fit",
        str(path),
        "--geo",
        "--header",
        "--columns",
        first,
        second,
        "--eps",
        "100m",
        "--min-samples",
        "5",
        "--bounds",
        "-122.52",
        "37.70",
        "-122.35",
        "37.83",
        "--seed",
        "0",
        "--out-dir",
        str(tmp_path),
    )
    assert code != 0 and out == "" and read == []
    assert "swapped" in err and f"--columns {second} {first}" in err
    assert not list(tmp_path.glob("*.spans.*"))


def test_fit_lonlat_refuses_latitude_first_columns():
    import pandas as pd

    from dpdbscan import fit_lonlat

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": -122.42 + 0.01 * rng.random(100), "y": 37.78 + 0.01 * rng.random(100)})
    box = dict(bounds=(-122.52, 37.70, -122.35, 37.83), eps="100m", random_state=0)
    with pytest.raises(ValueError, match="swapped"):
        fit_lonlat(df[["y", "x"]], **box)
    with pytest.raises(ValueError, match="lat"):  # a box whose ranges cannot be lon/lat
        fit_lonlat(df[["x", "y"]].to_numpy(), bounds=(37.70, -122.52, 37.83, -122.35), eps="100m")


def test_forward_is_the_formula_value_by_value_and_works_in_place():
    proj = Equirectangular.from_bounds(SF_LOWER, SF_UPPER)
    rng = np.random.default_rng(2)
    P = np.column_stack([rng.uniform(-123, -122, 1000), rng.uniform(37, 38, 1000)])
    P[::97] = np.nan
    want = np.column_stack([(P[:, 0] - proj.lon0) * proj.kx, (P[:, 1] - proj.lat0) * KM_PER_DEGREE])
    np.testing.assert_array_equal(proj.forward(P), want)  # bit for bit, NaN where NaN
    Q = P.copy()
    assert proj.forward(Q, out=Q) is Q
    np.testing.assert_array_equal(Q, want)
