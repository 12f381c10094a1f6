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

Each trip is read from its own line alone, as dpdbscan reads a CSV file: a
quote left open ends with its line, so a damaged trip never swallows the
trips after it. A line that is not one record of the header's width, or
whose polyline is not a JSON list, gives no points; a start that is not a
number gives points without a time, and a pair that is not two numbers a
point without coordinates, which dpdbscan drops alone. Nothing stops the
conversion, and the count of trips that gave no points goes to standard
error (a private note: it describes the data). One line in memory at a time.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys


def _number(value: object) -> float | None:
    """A finite JSON number, else None (true and false are no numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value: float | None) -> str:
    return "" if value is None else repr(value)


def _start(field: str) -> float | None:
    try:
        value = float(field)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def points_of(polyline: str) -> list:
    """One trip's pairs; a polyline that is not a JSON list is no points."""
    try:
        pts = json.loads(polyline)
    except ValueError:
        return []
    return pts if isinstance(pts, list) else []


def convert(
    src: str, dst: str, *, unit: str, start: str, polyline: str, every: float, first: bool = False
) -> int:
    """Write ``dst`` from ``src``; the number of trips that gave no points."""
    whole = float(every).is_integer()
    empty = 0
    with open(src, encoding="utf-8", errors="replace", newline="") as f, open(dst, "w", newline="") as out:
        header = next(csv.reader([f.readline()]), [])
        try:  # the declared header's names: public
            at = [header.index(name) for name in (unit, start, polyline)]
        except ValueError:
            raise SystemExit(f"{src}: the header has no column {unit!r}, {start!r} or {polyline!r}") from None
        write = csv.writer(out, lineterminator="\n").writerow
        write(["taxi", "time", "lon", "lat"])
        for line in f:
            fields = next(csv.reader([line]), [])  # this line alone
            pts = points_of(fields[at[2]]) if len(fields) == len(header) else []
            if not pts:
                empty += 1
                continue
            t0 = _start(fields[at[1]])
            for i, pair in enumerate(pts[:1] if first else pts):
                ok = isinstance(pair, list) and len(pair) >= 2
                lon, lat = (_number(pair[0]), _number(pair[1])) if ok else (None, None)
                t = None if t0 is None else t0 + every * i
                when = "" if t is None else (str(int(t)) if whole and t.is_integer() else repr(t))
                write([fields[at[0]], when, _text(lon), _text(lat)])
    return empty


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="the trips' CSV (one row per trip, with a header)")
    ap.add_argument("dst", help="the points' CSV to write (taxi,time,lon,lat)")
    ap.add_argument("--unit", default="TAXI_ID", help="the trips' unit column (default TAXI_ID)")
    ap.add_argument("--start", default="TIMESTAMP", help="the trip's start, unix seconds (default TIMESTAMP)")
    ap.add_argument("--polyline", default="POLYLINE", help="the [[lon, lat], ...] column (default POLYLINE)")
    ap.add_argument("--every", type=float, default=15.0, help="seconds between a trip's points (default 15)")
    ap.add_argument("--first", action="store_true", help="each trip's first point alone (its pick-up)")
    a = ap.parse_args()
    empty = convert(
        a.src, a.dst, unit=a.unit, start=a.start, polyline=a.polyline, every=a.every, first=a.first
    )
    if empty:
        print(f"[private: do not publish] {empty:,} trip(s) gave no points", file=sys.stderr)


if __name__ == "__main__":
    main()
