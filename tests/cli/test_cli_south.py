"""A city south of the equator and west of Greenwich, as a newcomer's data come (issue 28,
"design for traces in general"): what the command says about it."""

import numpy as np
import pytest

from dpdbscan.geometry.projection import latitude_text

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
