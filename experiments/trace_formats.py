"""A synthetic city's traces written as a newcomer's data come: several formats, another hemisphere.

The seeded city of :mod:`experiments.synthetic_traces`, moved onto a public centre (Santiago de
Chile by default: south of the equator, west of Greenwich; ``--centre 180 -16.7`` puts it across
the antimeridian, its points written from -180 to 180 as a GPS writes them), written as:

* ``fleet.parquet``: ``vehicle`` (text ids), ``ts`` (a Parquet ``timestamp[ms]`` with the
  city's zone), ``latitude``, ``longitude`` (latitude first in the schema), ``occupied`` (bool);
* ``phones.csv``: ``device_id,timestamp,latitude,longitude,speed``, ISO 8601 times with the
  offset ``-03:00``, one unit's rows after another;
* ``phones_dmy.csv``: the same with day-first local times (``02/03/2026 05:39:04``, no offset:
  ``--time-format '%d/%m/%Y %H:%M:%S'``);
* ``tdrive/<n>.txt``: T-Drive's layout, one headerless file per taxi, ``id,time,lon,lat``;
* ``geolife/Data/<user>/Trajectory/<start>.plt``: GeoLife's, one file per day, with a
  ``labels.txt`` in a few users' folders (not data);
* ``metric.parquet``: the Cabs layout (x, y, taxi, time, occupied) that ``places_metric.py`` reads.

    python -m experiments.trace_formats --units 1000 --days 2 --out results/traces_formats

(1,000 taxis over two days, a fix every 2 s to 10 min: 5.3M fixes, about 1.1 GB in all, 2 min.)
The newcomer helper's runs on it (issue 28): CHANGELOG.md, "--time-format" and "A box across
the antimeridian". Nothing is written into the repository but under ``results/traces*``
(git-ignored).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from experiments.synthetic_traces import HALF_KM, KM_PER_DEG, generate, to_km

#: Santiago de Chile (lon, lat); its clock is UTC-3 in March.
SANTIAGO = (-70.65, -33.45)
OFFSET_H = -3
GEOLIFE_HEADER = (
    "Geolife trajectory\nWGS 84\nAltitude is in Feet\nReserved 3\n0,2,255,My Track,0,0,2,8421376\n0\n"
)


def moved(lonlat: np.ndarray, centre: tuple[float, float]) -> np.ndarray:
    """The city's lon/lat moved onto ``centre`` (the same km on the ground), longitudes in [-180, 180)."""
    P = to_km(lonlat)
    kx = KM_PER_DEG * math.cos(math.radians(centre[1]))
    lon = (centre[0] + P[:, 0] / kx + 180.0) % 360.0 - 180.0
    return np.column_stack([lon, centre[1] + P[:, 1] / KM_PER_DEG])


def public_box(centre: tuple[float, float]) -> tuple[float, float, float, float]:
    """The city's box (lon_min lat_min lon_max lat_max) around ``centre``, east of 180 where it crosses."""
    kx = KM_PER_DEG * math.cos(math.radians(centre[1]))
    dl, dp = HALF_KM / kx, HALF_KM / KM_PER_DEG
    return (centre[0] - dl, centre[1] - dp, centre[0] + dl, centre[1] + dp)


def write_all(out: Path, units: int, days: int, seed: int, centre: tuple[float, float]) -> int:
    """Every format above into ``out``; returns the number of fixes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    city = generate(units, days, (2.0, 600.0), seed, "taxi", gaps="heavy", hubs="many")
    L = moved(city.lonlat, centre)
    lon, lat, t, u = L[:, 0], L[:, 1], city.time.astype(np.int64), city.unit
    ids = np.array([f"driver-{i:04d}" for i in range(units)])
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "vehicle": pa.array(ids[u]),
                "ts": pa.array(t * 1000, pa.timestamp("ms", tz="America/Santiago")),
                "latitude": lat,
                "longitude": lon,
                "occupied": city.occupied.astype(bool),
            }
        ),
        out / "fleet.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "x": lon,
                "y": lat,
                "taxi": pa.array(ids[u]).dictionary_encode(),
                "time": t,
                "occupied": city.occupied,
            }
        ),
        out / "metric.parquet",
    )
    order = np.lexsort((t, u))
    local = dt.timezone(dt.timedelta(hours=OFFSET_H))
    with open(out / "phones.csv", "w") as iso, open(out / "phones_dmy.csv", "w") as dmy:
        iso.write("device_id,timestamp,latitude,longitude,speed\n")
        dmy.write("device_id,timestamp,latitude,longitude,speed\n")
        for i in order:
            when = dt.datetime.fromtimestamp(int(t[i]), local)
            rest = f"{lat[i]:.6f},{lon[i]:.6f},0\n"
            iso.write(f"{ids[u[i]]},{when.isoformat()},{rest}")
            dmy.write(f"{ids[u[i]]},{when:%d/%m/%Y %H:%M:%S},{rest}")
    (out / "tdrive").mkdir(exist_ok=True)
    sorted_units = u[order]
    for k in range(units):
        rows = order[np.searchsorted(sorted_units, k) : np.searchsorted(sorted_units, k, "right")]
        with open(out / "tdrive" / f"{k + 1}.txt", "w") as f:
            for i in rows:
                when = dt.datetime.fromtimestamp(int(t[i]), dt.UTC)
                f.write(f"{k + 1},{when:%Y-%m-%d %H:%M:%S},{lon[i]:.5f},{lat[i]:.5f}\n")
        folder = out / "geolife" / "Data" / f"{k:03d}" / "Trajectory"
        folder.mkdir(parents=True, exist_ok=True)
        if k % 300 == 0:
            (folder.parent / "labels.txt").write_text("Start Time\tEnd Time\tTransportation Mode\n")
        day = t[rows] // 86400
        for d in np.unique(day):
            these = rows[day == d]
            start = dt.datetime.fromtimestamp(int(t[these[0]]), dt.UTC)
            with open(folder / f"{start:%Y%m%d%H%M%S}.plt", "w") as f:
                f.write(GEOLIFE_HEADER)
                for i in these:
                    when = dt.datetime.fromtimestamp(int(t[i]), dt.UTC)
                    days_1899 = t[i] / 86400 + 25569
                    f.write(
                        f"{lat[i]:.6f},{lon[i]:.6f},0,1700,{days_1899:.10f},{when:%Y-%m-%d},{when:%H:%M:%S}\n"
                    )
    return len(t)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=1000)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--centre", type=float, nargs=2, default=SANTIAGO, metavar=("LON", "LAT"))
    ap.add_argument("--out", type=Path, default=Path("results/traces_formats"))
    o = ap.parse_args(argv)
    centre = (o.centre[0], o.centre[1])
    n = write_all(o.out, o.units, o.days, o.seed, centre)
    b = public_box(centre)
    print(
        f"{o.out}: {n:,} fixes of {o.units} units; box {b[0]:.5f} {b[1]:.5f} {b[2]:.5f} {b[3]:.5f}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
