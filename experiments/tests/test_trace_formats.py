"""experiments.trace_formats: one seeded city in every format, read by `dpdbscan check` as a user
would, gives the same rows and the same stops in each (the day-first CSV with --time-format)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from experiments.data import REPO
from experiments.trace_formats import SANTIAGO, public_box, write_all


@pytest.fixture(scope="module")
def city(tmp_path_factory):
    out = tmp_path_factory.mktemp("formats")
    n = write_all(out, units=6, days=1, seed=3, centre=SANTIAGO)
    return out, n


def _check(path, *options):
    box = [f"{b:.5f}" for b in public_box(SANTIAGO)]
    proc = subprocess.run(
        [sys.executable, "-m", "dpdbscan", "check", str(path), "--geo", "--bounds", *box, "--eps", "200m",
         "--min-samples", "5", "--delta", "1e-6", "--stops", "100m", "5min", *options],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = re.search(r"read ([\d,]+) rows", proc.stderr)
    stops = re.search(r"([\d,]+) stop\(s\) of the units found", proc.stderr)
    assert rows and stops, proc.stderr[-2000:]
    assert "outside   : 0 event(s)" in proc.stderr  # every stop inside the public box
    return int(rows.group(1).replace(",", "")), int(stops.group(1).replace(",", ""))


def test_every_format_reads_the_same_rows_and_stops(city):
    out, n = city
    seen = {
        "parquet": _check(out / "fleet.parquet", "--unit", "vehicle", "--time", "ts"),
        "iso csv": _check(out / "phones.csv", "--header", "--unit", "device_id", "--time", "timestamp"),
        "day-first csv": _check(
            out / "phones_dmy.csv", "--header", "--unit", "device_id", "--time", "timestamp",
            "--time-format", "%d/%m/%Y %H:%M:%S",
        ),
        "t-drive": _check(
            out / "tdrive", "--unit-from", "file", "--format", "csv", "--no-header", "--fields", "4",
            "--columns", "2", "3", "--time", "1",
        ),
        "geolife": _check(
            out / "geolife" / "Data", "--unit-from", "folder", "--format", "plt", "--time", "time",
        ),
    }  # fmt: skip
    assert all(rows == n for rows, _ in seen.values()), seen
    stops = {s for _, s in seen.values()}
    # the same stops but where a 5-decimal T-Drive coordinate moves a point across 100 m
    assert min(stops) > 0 and max(stops) - min(stops) <= 2, seen
