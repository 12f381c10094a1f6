"""A T-Drive-like stand-in: a week of a Beijing-sized taxi fleet as a folder of headerless text files.

Issue 28's analyst had a week of Beijing taxi traces (T-Drive: 10,250 taxis,
about 14M points, one headerless text file per taxi, lines
``id,YYYY-MM-DD HH:MM:SS,lon,lat``, a fix every ~3-10 min with gaps). We do
not have those data; this writes a stand-in with the project's own generator
(:func:`experiments.synthetic_traces.generate`: taxis, each its own interval
drawn log-uniformly from 70 s to 10 min (median 3.4 min;
T-Drive averages a fix every 177 s: about 1,370 fixes a taxi a week), T-Drive's kind of gaps, red lights and
depots), moved onto Beijing's latitude (the plane in km is the generator's;
only the lon/lat it is written in changes), in that exact layout:

* ``taxi_log/<id>.txt``: one file per taxi, no header, ``id,time,lon,lat``,
  the time as local text without a zone (as T-Drive writes it), the
  coordinates to 5 decimals (T-Drive's precision);
* ``traces.parquet``: the same rows (x, y, taxi, time, occupied) for the
  shared ``places_metric.py``, which reads Parquet (the ground truth);
* ``box.txt``: the public box (the generator's 30 x 30 km around the centre).

Written outside the repository (``--out``, e.g. ``/work/tdrive_data/full``).

    python -m experiments.tdrive_standin --units 10250 --out /work/tdrive_data/full
    python -m experiments.tdrive_standin --units 1025 --out /work/tdrive_data/tenth

A high-rate fleet (Porto's or Rome's taxis: a fix every 5-15 s, a few hundred
taxis), the same generator and city, Parquet only:

    python -m experiments.tdrive_standin --units 300 --interval 5 15 --gaps light --no-folder \
        --out /work/tdrive_data/highrate
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .synthetic_traces import box, generate, to_km, to_lonlat

#: Beijing's centre (Tiananmen), public.
BEIJING = (116.3975, 39.9087)
#: T-Drive's fleet and its sampling (seconds, each taxi its own, log-uniform).
UNITS, DAYS, INTERVAL = 10_250, 7, (70.0, 600.0)


def write_folder(out: Path, lonlat: np.ndarray, unit: np.ndarray, t: np.ndarray) -> int:
    """One headerless text file per unit (``<id>.txt``: ``id,YYYY-MM-DD HH:MM:SS,lon,lat``); returns
    the number of files. The rows are the generator's, unit after unit in time order."""
    folder = out / "taxi_log"
    folder.mkdir(parents=True, exist_ok=True)
    text = t.astype("datetime64[s]").astype(str)
    cuts = np.flatnonzero(np.diff(unit)) + 1
    starts, ends = np.r_[0, cuts], np.r_[cuts, len(unit)]
    for a, b in zip(starts.tolist(), ends.tolist()):
        tid = int(unit[a]) + 1
        lines = [
            f"{tid},{d[:10]} {d[11:]},{x:.5f},{y:.5f}\n" for d, (x, y) in zip(text[a:b], lonlat[a:b].tolist())
        ]
        (folder / f"{tid}.txt").write_text("".join(lines))
    return len(starts)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=UNITS)
    ap.add_argument("--days", type=int, default=DAYS)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--interval",
        type=float,
        nargs=2,
        default=INTERVAL,
        metavar=("LO", "HI"),
        help="each taxi's sampling interval, s (log-uniform between LO and HI; default T-Drive's 70 600; "
        "Porto's or Rome's taxis: 5 15)",
    )
    ap.add_argument("--gaps", choices=("light", "heavy"), default="heavy", help="the generator's gaps")
    ap.add_argument(
        "--no-folder", action="store_true", help="write traces.parquet and box.txt only (no taxi_log/)"
    )
    o = ap.parse_args(argv)
    t0 = time.process_time()
    city = generate(
        o.units, o.days, tuple(o.interval), o.seed, "taxi", ranks="point", gaps=o.gaps, lights=True, depots=8
    )
    lonlat = to_lonlat(to_km(city.lonlat), BEIJING).round(5)
    t1 = time.process_time()
    import pyarrow as pa
    import pyarrow.parquet as pq

    o.out.mkdir(parents=True, exist_ok=True)
    names = pa.array([str(u + 1) for u in range(o.units)])
    pq.write_table(
        pa.table(
            {
                "x": lonlat[:, 0],
                "y": lonlat[:, 1],
                "taxi": pa.DictionaryArray.from_arrays(pa.array(city.unit.astype(np.int32)), names),
                "time": city.time,
                "occupied": city.occupied,
            }
        ),
        o.out / "traces.parquet",
    )
    n_files = 0 if o.no_folder else write_folder(o.out, lonlat, city.unit, city.time)
    b = box(BEIJING)
    (o.out / "box.txt").write_text(" ".join(f"{v:.5f}" for v in b) + "\n")
    print(
        f"{o.out}: {len(city.time):,} fixes of {o.units:,} taxis in {n_files:,} files; generated in "
        f"{t1 - t0:.0f} s CPU, written in {time.process_time() - t1:.0f} s; box "
        + " ".join(f"{v:.5f}" for v in b),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
