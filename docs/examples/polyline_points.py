"""One row per trip (a polyline of points) to one row per point, for dpdbscan.

Porto's taxi trips (``train.csv``: ``TAXI_ID``, ``TIMESTAMP`` the trip's start in
unix seconds, ``POLYLINE`` a JSON list of ``[lon, lat]`` pairs, one every 15 s)
hold each trip in one row; dpdbscan reads one row per point. This writes a CSV
``taxi,time,lon,lat`` with each point of each trip, its time the trip's start
plus 15 s times its index in the trip::

    python docs/examples/polyline_points.py train.csv points.csv
    dpdbscan fit points.csv --header --geo --columns lon lat --unit taxi --time time \\
        --bounds -8.70 41.10 -8.55 41.25 --eps 200m --min-samples 30 \\
        --max-cells-per-unit auto --delta 1e-6 --stops 100m 5min

``--first`` writes each trip's first point alone: where the ride began, to fit
the pick-ups with ``--unit taxi`` (without ``--stops``).

Each trip is converted on its own: a polyline that is not a JSON list gives
no points, and a pair that is not two numbers gives a point without
coordinates, which dpdbscan drops alone; neither stops the conversion. The
file is read in chunks, so memory holds one chunk (100,000 trips) at a time.
"""

from __future__ import annotations

import argparse
import json

import pandas as pd


def points_of(polyline: object) -> list:
    """One trip's pairs; a polyline that is not a JSON list is no points."""
    try:
        pts = json.loads(polyline)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []
    return pts if isinstance(pts, list) else []


def convert(
    src: str, dst: str, *, unit: str, start: str, polyline: str, every: float, first: bool = False
) -> None:
    head = True
    for trips in pd.read_csv(src, usecols=[unit, start, polyline], chunksize=100_000):
        pts = trips.assign(point=trips[polyline].map(points_of)).explode("point").dropna(subset=["point"])
        index = pts.groupby(level=0).cumcount()  # the point's place in its trip
        time = pd.to_numeric(pts[start], errors="coerce") + every * index
        if float(every).is_integer():
            time = time.astype("Int64")  # whole seconds stay whole (a missing start stays missing)
        out = pd.DataFrame(
            {
                "taxi": pts[unit],
                "time": time,
                "lon": pd.to_numeric(pts["point"].str[0], errors="coerce"),
                "lat": pd.to_numeric(pts["point"].str[1], errors="coerce"),
            }
        )
        if first:  # each trip's first point alone: where the ride began (its pick-up)
            out = out[(index == 0).to_numpy()]
        out.to_csv(dst, mode="w" if head else "a", header=head, index=False)
        head = False
    if head:  # no trip at all: still a file with its header
        pd.DataFrame(columns=["taxi", "time", "lon", "lat"]).to_csv(dst, index=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="the trips' CSV (one row per trip)")
    ap.add_argument("dst", help="the points' CSV to write (taxi,time,lon,lat)")
    ap.add_argument("--unit", default="TAXI_ID", help="the trips' unit column (default TAXI_ID)")
    ap.add_argument("--start", default="TIMESTAMP", help="the trip's start, unix seconds (default TIMESTAMP)")
    ap.add_argument("--polyline", default="POLYLINE", help="the [[lon, lat], ...] column (default POLYLINE)")
    ap.add_argument("--every", type=float, default=15.0, help="seconds between a trip's points (default 15)")
    ap.add_argument("--first", action="store_true", help="each trip's first point alone (its pick-up)")
    a = ap.parse_args()
    convert(a.src, a.dst, unit=a.unit, start=a.start, polyline=a.polyline, every=a.every, first=a.first)


if __name__ == "__main__":
    main()
