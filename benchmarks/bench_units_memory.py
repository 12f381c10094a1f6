"""Person level in memory against event level on the same rows: time and memory.

The rows are the synthetic city of :mod:`benchmarks.bench_dask_units` (60
hotspots, each unit 3 places, heavy-tailed rows per unit, rows in random
order), made in memory from a seed and saved once as ``.npy`` files in a
temporary directory (removed at the end). Every fit is its own fresh process
(through :mod:`benchmarks.peakrss`'s rule: a small parent, so that peaks are
the fit's), person- and event-level interleaved, and each process:

* loads ``X`` (float64, n x 2) and, for the person-level fit, the units
  (int64); warms the imports and code paths on 1,000 rows;
* resets the kernel's peak-RSS counter (``/proc/self/clear_refs``) and reads
  its resident memory: the input and the interpreter;
* fits once, ``DPDBSCAN(**bench_dask_units.PARAMS)`` (Gaussian noise,
  k = 10 cells per unit, m = 2 points per cell, ``random_state=0``) with
  ``units=`` for the person level, the same estimator without the bounds and
  without units for the event level;
* prints the wall and CPU seconds of the fit and ``VmHWM - VmRSS(before)``:
  the memory the fit needed above its input.

The targets: person level <= 3x the event-level fit's wall time (medians of
the same run) and <= 4 GB above the input, at 1e8 rows with 1e6 units. Use a
smaller ``--n`` to develop; the release is the same for the same seed.

    .venv/bin/python -m benchmarks.bench_units_memory [--n 100000000] [--units 1000000]
                                                       [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import bench_dask_units

GB = 1e9


def make(directory: Path, n: int, n_units: int, seed: int) -> None:
    """The city's rows, as ``X.npy`` and ``units.npy`` in ``directory``."""
    X = np.lib.format.open_memmap(directory / "X.npy", mode="w+", dtype=np.float64, shape=(n, 2))
    units = np.lib.format.open_memmap(directory / "units.npy", mode="w+", dtype=np.int64, shape=(n,))
    at = 0
    for x, u in bench_dask_units.city(n, n_units, seed):
        X[at : at + len(u)] = x
        units[at : at + len(u)] = u
        at += len(u)
    X.flush()
    units.flush()
    del X, units


def one(directory: Path, level: str) -> dict[str, Any]:
    """One fit in this process (``level``: "person" or "event")."""
    from dpdbscan import DPDBSCAN, InsecureRandomnessWarning

    warnings.filterwarnings("ignore", category=InsecureRandomnessWarning)
    params = dict(bench_dask_units.PARAMS)
    if level == "event":
        params.pop("max_cells_per_unit")
        params.pop("max_points_per_cell")
    X = np.load(directory / "X.npy")
    units = np.load(directory / "units.npy") if level == "person" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        DPDBSCAN(**params).fit(X[:1000], units=None if units is None else units[:1000])
    input_bytes = X.nbytes + (0 if units is None else units.nbytes)
    rss0 = bench_dask_units._hwm_reset()  # the peak counter reset; resident bytes now
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    est = DPDBSCAN(**params).fit(X, units=units)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "level": level,
        "n": int(X.shape[0]),
        "wall_s": wall,
        "cpu_s": r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime,
        "input_bytes": input_bytes,
        "above_input_bytes": bench_dask_units._hwm() - rss0,
        "cells": int(est.histogram_.values.size),
        "spans": int(est.spans_.n_spans),
        "release_sum": int(est.histogram_.values.sum()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000_000)
    ap.add_argument("--units", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--one", nargs=2, metavar=("DIR", "LEVEL"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(Path(args.one[0]), args.one[1])))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench_units_memory_"))
    runs: dict[str, list[dict[str, Any]]] = {"person": [], "event": []}
    try:
        t = time.perf_counter()
        make(tmp, args.n, args.units, args.seed)
        print(f"{args.n:,} rows, {args.units:,} units made in {time.perf_counter() - t:.0f} s", flush=True)
        me = [sys.executable, "-m", "benchmarks.bench_units_memory"]
        cmd = [sys.executable, "-m", "benchmarks.peakrss", *me]
        for r in range(args.repeats):
            for level in ("event", "person") if r % 2 == 0 else ("person", "event"):
                res = subprocess.run([*cmd, "--one", str(tmp), level], capture_output=True, text=True)
                if res.returncode != 0:
                    raise RuntimeError(f"{level} fit failed: {res.stderr[-2000:]}")
                lines = res.stdout.strip().splitlines()
                m = json.loads(lines[-2])
                m["process_peak_rss_bytes"] = json.loads(lines[-1])["peak_rss_bytes"]
                m["load"] = os.getloadavg()[0]
                runs[level].append(m)
                print(
                    f"  {level}: {m['wall_s']:.2f} s (CPU {m['cpu_s']:.2f} s), "
                    f"{m['above_input_bytes'] / GB:.2f} GB above the input, load {m['load']:.1f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {lv: statistics.median(m["wall_s"] for m in rs) for lv, rs in runs.items()}
    cpu = {lv: statistics.median(m["cpu_s"] for m in rs) for lv, rs in runs.items()}
    mem = statistics.median(m["above_input_bytes"] for m in runs["person"])
    out = {
        "n": args.n,
        "units": args.units,
        "seed": args.seed,
        "person_wall_s": med["person"],
        "event_wall_s": med["event"],
        "ratio": med["person"] / med["event"],
        "person_cpu_s": cpu["person"],
        "event_cpu_s": cpu["event"],
        "cpu_ratio": cpu["person"] / cpu["event"],
        "person_above_input_bytes": mem,
        "event_above_input_bytes": statistics.median(m["above_input_bytes"] for m in runs["event"]),
        "same_release": len({m["release_sum"] for m in runs["person"]}) == 1,
        "runs": runs,
    }
    print(
        f"person {med['person']:.2f} s / event {med['event']:.2f} s = {out['ratio']:.2f}x (target <= 3x; "
        f"CPU {cpu['person']:.2f} s / {cpu['event']:.2f} s = {out['cpu_ratio']:.2f}x); "
        f"person {mem / GB:.2f} GB above the input (target <= 4 GB); event "
        f"{out['event_above_input_bytes'] / GB:.2f} GB"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
