"""Fit time of the automatic mode against a fixed-parameter fit (issue 13:
the automatic mode on Cabs takes <= 3x a fixed-parameter fit).

For each data set of ``bench_data``: one warm-up fit each, then
``--repeats`` rounds in which a fixed fit (the set's own (alpha, MinPts),
library defaults) and an automatic fit (``eps="auto", min_samples="auto"``,
same bounds and epsilon) run in turn; medians and the same-run ratio are
printed, with what the automatic mode chose. Secure noise.

    .venv/bin/python benchmarks/bench_auto.py [--sets cabs] [--repeats 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_data  # noqa: E402

from dpdbscan import DPDBSCAN  # noqa: E402


def fit_seconds(ds, auto: bool, max_cells: int = 2**20):
    est = (DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=ds.bounds, max_cells=max_cells)
           if auto else DPDBSCAN(ds.alpha, min_samples=ds.min_samples, epsilon=1.0,
                                 bounds=ds.bounds))
    gc.collect()
    t0 = time.perf_counter()
    est.fit(ds.X)
    return time.perf_counter() - t0, est


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="cabs")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")  # small-data notes are not timed
    print("| data | n | fixed (alpha, MinPts) | fixed fit | auto fit | auto / fixed | auto chose "
          "(alpha, MinPts) | base eps | spans fixed / auto |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        ds = bench_data.load(name)
        fit_seconds(ds, False)
        fit_seconds(ds, True)
        t: dict[str, list[float]] = {"fixed": [], "auto": []}
        for _ in range(args.repeats):
            t["fixed"].append(fit_seconds(ds, False)[0])
            t["auto"].append(fit_seconds(ds, True)[0])
        med = {k: statistics.median(v) for k, v in t.items()}
        _, fx = fit_seconds(ds, False)
        _, au = fit_seconds(ds, True)
        m = au.spans_
        print(f"| {name} | {ds.n:,} | ({ds.alpha:g}, {ds.min_samples}) | {med['fixed']:.3f} s | "
              f"{med['auto']:.3f} s | {med['auto'] / med['fixed']:.2f} | ({m.grid.alpha:.4g}, "
              f"{m.spec.min_samples}) | {m.auto['base_eps']:.4g} | {fx.spans_.n_spans} / {m.n_spans} |",
              flush=True)
        print(f"  (fixed: {', '.join(f'{x:.3f}' for x in t['fixed'])}; auto: "
              f"{', '.join(f'{x:.3f}' for x in t['auto'])})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
