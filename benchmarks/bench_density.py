"""Fit time of the density core test against the upper-bound test and the
counting floor (issue 12, "speed stays").

For each data set of ``bench_data``: one warm-up fit per test, then
``--repeats`` rounds in which a density fit, a bound fit and the floor
(cell keys + sort + run-length counts) run in turn; medians and same-run
ratios are printed. Library defaults otherwise, secure noise.

    .venv/bin/python benchmarks/bench_density.py [--sets cabs,crash,city_1e6,chest] [--repeats 7]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_data  # noqa: E402

from dpdbscan import DPDBSCAN  # noqa: E402
from dpdbscan.cells.grid import Grid  # noqa: E402
from dpdbscan.release.backends.numpy_backend import run_length  # noqa: E402


def fit_seconds(ds, core):
    est = DPDBSCAN(ds.alpha, ds.min_samples, 1.0, bounds=ds.bounds, core=core)
    gc.collect()
    t0 = time.perf_counter()
    est.fit(ds.X)
    return time.perf_counter() - t0, est


def floor_seconds(ds):
    grid = Grid(*ds.bounds, ds.alpha)
    gc.collect()
    t0 = time.perf_counter()
    run_length(np.sort(grid.keys_of_points(ds.X)))
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="cabs,crash,city_1e6,chest")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")  # small-data notes of the library are not timed
    print("| data | n | histogram | density fit | bound fit | floor | density / floor | "
          "density / bound | spans density / bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        ds = bench_data.load(name)
        fit_seconds(ds, "density")
        fit_seconds(ds, "bound")
        floor_seconds(ds)
        t = {"density": [], "bound": [], "floor": []}
        for _ in range(args.repeats):
            for core in ("density", "bound"):
                t[core].append(fit_seconds(ds, core)[0])
            t["floor"].append(floor_seconds(ds))
        med = {k: statistics.median(v) for k, v in t.items()}
        _, dens = fit_seconds(ds, "density")
        _, bnd = fit_seconds(ds, "bound")
        print(f"| {name} | {ds.n:,} | {dens.histogram_.kind} | {med['density']:.3f} s | "
              f"{med['bound']:.3f} s | {med['floor']:.3f} s | {med['density'] / med['floor']:.2f} | "
              f"{med['density'] / med['bound']:.2f} | {dens.spans_.n_spans} / {bnd.spans_.n_spans} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
