"""docs/examples/polyline_points.py, the way out that the refusal of a
trips table (Porto's POLYLINE) names: each trip's points become rows with
their unit and time (the start plus 15 s times the index), a damaged trip
gives no points and stops nothing (a quote left open ends with its line, as
in dpdbscan's own CSV reader), and ``dpdbscan check`` reads the result as a
person-level trace with stops."""

from __future__ import annotations

import csv
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / "docs" / "examples" / "polyline_points.py"


def test_the_refusal_s_script_turns_trips_into_timed_points(tmp_path):
    trips = tmp_path / "train.csv"
    trips.write_text(
        '"TRIP_ID","TAXI_ID","TIMESTAMP","POLYLINE"\n'
        '"1","20000001","1372636858","[[-8.618643,41.141412],[-8.618499,41.141376],[-8.62,41.15]]"\n'
        '"2","20000002","1372637000","[[-8.61,41.14"\n'  # cut: not JSON, no points
        '"3","20000002","1372637300","[]"\n'  # no points
        '"4","20000001","1372640000","[[-8.6,41.2],[""x"",41.2]]"\n'  # a pair that is no number
        '"5","20000002","1372641000","[[-8.6,41.2]\n'  # a quote left open: ends with its line
        '"6","20000003","1372642000","[[-8.5,41.3]]"\n'  # so this trip is read
    )
    points = tmp_path / "points.csv"
    r = subprocess.run([sys.executable, str(SCRIPT), str(trips), str(points)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with points.open() as f:
        rows = list(csv.DictReader(f))
    assert [tuple(r.values()) for r in rows] == [
        ("20000001", "1372636858", "-8.618643", "41.141412"),
        ("20000001", "1372636873", "-8.618499", "41.141376"),
        ("20000001", "1372636888", "-8.62", "41.15"),
        ("20000001", "1372640000", "-8.6", "41.2"),
        ("20000001", "1372640015", "", "41.2"),
        ("20000003", "1372642000", "-8.5", "41.3"),
    ]
    assert "3 trip(s) gave no points" in r.stderr
    # --first: each trip's first point alone (a trip without points has none)
    starts = tmp_path / "starts.csv"
    r = subprocess.run(
        [sys.executable, str(SCRIPT), str(trips), str(starts), "--first"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    with starts.open() as f:
        assert [tuple(r.values()) for r in csv.DictReader(f)] == [
            ("20000001", "1372636858", "-8.618643", "41.141412"),
            ("20000001", "1372640000", "-8.6", "41.2"),
            ("20000003", "1372642000", "-8.5", "41.3"),
        ]


def test_the_converted_points_are_read_as_the_refusal_says(tmp_path):
    from dpdbscan.cli import main

    trips = tmp_path / "train.csv"
    lines = ['"TAXI_ID","TIMESTAMP","POLYLINE"']
    for taxi in range(40):  # each waits 10 min at one rank, then drives off
        wait = ",".join("[-8.6105,41.1456]" for _ in range(41))
        lines.append(f'"{taxi}","{1372636858 + 600 * taxi}","[{wait},[-8.62,41.16],[-8.63,41.17]]"')
    trips.write_text("\n".join(lines) + "\n")
    points = tmp_path / "points.csv"
    subprocess.run([sys.executable, str(SCRIPT), str(trips), str(points)], check=True)
    argv = "check {p} --header --geo --columns lon lat --unit taxi --time time --stops 100m 5min "
    argv += "--bounds -8.70 41.10 -8.55 41.25 --eps 200m --min-samples 30 --max-cells-per-unit 5 --delta 1e-6"
    assert main(argv.format(p=points).split()) == 0
