"""Reading a folder of trace files against one CSV file of the same rows.

Writes, to a temporary directory, synthetic traces (seeded; no data of
anyone's) as a folder of one file per unit in each asked format (GeoLife's
PLT, GPX, headerless CSV as T-Drive writes it) and as one CSV file with a
unit and a time column, then times ``read_input`` of each, reading the
points, the unit and the time (``also=("time",)``; the CSV's time in the
second pass the command line makes for a CSV file). Interleaved
rounds after one warm-up (:func:`benchmarks.timing.interleaved`); medians of the CPU
time (user + system: the work done, which a loaded machine distorts less
than the wall time) and of the wall time.

    .venv/bin/python -m benchmarks.bench_folder [--units 2000] [--rows 1000]
                                                [--formats plt gpx csv] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan.research import read_input

from . import timing

#: Seconds from 1899-12-30 (PLT's day count) to 1970-01-01.
PLT_EPOCH = 25569 * 86400
PLT_HEAD = "Geolife trajectory\nWGS 84\nAltitude is in Feet\nReserved 3\n0,2,255,My Track,0,0,2,8421376\n0\n"


def traces(n_units: int, rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(lonlat, unix seconds)`` of ``n_units`` random walks of ``rows`` fixes, unit after unit."""
    rng = np.random.default_rng(seed)
    start = rng.uniform([116.1, 39.7], [116.6, 40.1], (n_units, 1, 2))
    steps = rng.normal(0, 2e-4, (n_units, rows, 2)).cumsum(axis=1)
    t0 = 1_224_000_000 + rng.integers(0, 86400 * 30, (n_units, 1))
    return (start + steps).round(6), t0 + 5 * np.arange(rows)


def _iso(t: np.ndarray) -> list[str]:
    return [str(v) for v in t.astype("datetime64[s]")]


def write_all(tmp: Path, P: np.ndarray, T: np.ndarray, formats: Sequence[str]) -> dict[str, Path]:
    """The folders (one file per unit) and the one CSV file of the same rows."""
    paths: dict[str, Path] = {}
    csv_lines = ["lon,lat,unit,time\n"]
    for kind in formats:
        (tmp / kind).mkdir()
    for u in range(P.shape[0]):
        name = f"{u:05d}"
        iso = _iso(T[u])
        csv_lines += [f"{x},{y},{name}.txt,{t}\n" for (x, y), t in zip(P[u].tolist(), iso)]
        if "plt" in formats:
            days = (T[u] + PLT_EPOCH) / 86400
            body = "".join(
                f"{y},{x},0,100,{d!r},{t[:10]},{t[11:]}\n" for (x, y), d, t in zip(P[u].tolist(), days, iso)
            )
            (tmp / "plt" / f"{name}.txt.plt").write_text(PLT_HEAD + body)
        if "gpx" in formats:
            pts = "".join(
                f'<trkpt lat="{y}" lon="{x}"><time>{t}Z</time></trkpt>\n'
                for (x, y), t in zip(P[u].tolist(), iso)
            )
            (tmp / "gpx" / f"{name}.gpx").write_text(
                f'<?xml version="1.0"?>\n<gpx version="1.1"><trk><trkseg>\n{pts}</trkseg></trk></gpx>\n'
            )
        if "csv" in formats:
            (tmp / "csv" / f"{name}.txt").write_text(
                "".join(f"{name},{t},{x},{y}\n" for (x, y), t in zip(P[u].tolist(), iso))
            )
    (tmp / "all.csv").write_text("".join(csv_lines))
    paths["one CSV"] = tmp / "all.csv"
    for kind in formats:
        paths[f"folder {kind}"] = tmp / kind
    return paths


def readers(paths: dict[str, Path]) -> dict[str, Callable[[], int]]:
    """Each input's read of the points, the unit and the time; returns the rows read."""

    def one_csv() -> int:
        got = read_input(paths["one CSV"], ["lon", "lat"], unit="unit")
        # the time: the second pass the command line makes (read_columns reads it as a unit column)
        read_input(paths["one CSV"], ["lon", "lat"], unit="time")
        return int(got.X.shape[0])

    out: dict[str, Callable[[], int]] = {"one CSV": one_csv}
    for name, path in paths.items():
        if not name.startswith("folder"):
            continue
        out[name] = _folder_reader(path, name.split()[1])
    return out


def _folder_reader(path: Path, kind: str) -> Callable[[], int]:
    """The read of a folder of ``kind`` files, one per unit, with the time."""
    if kind == "csv":
        kw: dict[str, Any] = {"columns": [2, 3], "header": False, "fields": 4, "also": (1,)}
    else:
        kw = {"also": ("time",)}
    return lambda: int(read_input(path, unit_from="file", file_format=kind, **kw).X.shape[0])


def _timed(read: Callable[[], int], wall: list[float]) -> Callable[[], float]:
    """``read`` as a function that returns its CPU seconds (user + system)
    and appends its wall seconds to ``wall``."""

    def run() -> float:
        gc.collect()
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        read()
        r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        wall.append(t1 - t0)
        return r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime

    return run


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--units", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=1000, help="rows per unit (one file each)")
    ap.add_argument("--formats", nargs="+", default=["plt", "gpx", "csv"], choices=["plt", "gpx", "csv"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    P, T = traces(args.units, args.rows)
    tmp = Path(tempfile.mkdtemp(prefix="bench_folder_"))
    try:
        paths = write_all(tmp, P, T, args.formats)
        fns = readers(paths)
        rows = {k: f() for k, f in fns.items()}  # warm-up: page cache, imports
        wall: dict[str, list[float]] = {k: [] for k in fns}
        cpu = timing.interleaved({k: _timed(f, wall[k]) for k, f in fns.items()}, args.repeats, warm=False)
        names = list(fns)
        sizes = {
            k: sum(p.stat().st_size for p in ([v] if v.is_file() else v.rglob("*"))) for k, v in paths.items()
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(cpu["one CSV"])
    print(
        f"{args.units:,} units x {args.rows:,} rows (points, unit and time read); "
        f"{args.repeats} interleaved rounds after one warm-up; medians"
    )
    print(f"{'input':<11} {'files':>6} {'MiB':>7} {'rows':>11} {'cpu s':>7} {'x CSV':>6} {'wall s':>7}")
    for k in names:
        files = 1 if k == "one CSV" else args.units
        c = statistics.median(cpu[k])
        print(
            f"{k:<11} {files:>6,} {sizes[k] / 2**20:>7.1f} {rows[k]:>11,} {c:>7.2f} {c / base:>6.2f} "
            f"{statistics.median(wall[k]):>7.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
