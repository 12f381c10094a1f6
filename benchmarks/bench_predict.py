"""predict on the d = 3..8 benchmark's points (:mod:`benchmarks.blobs_nd`),
beside the fit that made the model.

Each dimension runs in a fresh process: the points from the seed, two fits
(the second timed), then ``predict`` of the 1e5 training points: the first
call (which loads the compiled kernels, if any) and the median wall and
CPU (user + sys) seconds of ``--repeats`` more. The labels of the training
points are not a DP release (only the spans are); this times the labelling
alone. Load averages before and after each dimension are reported, as
others may share the machine.

    python -m benchmarks.bench_predict [--dims 3,4,5,6,8] [--subcells auto] [--core density]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

from . import blobs_nd


def child(d: int, seed: int, subcells: str, core: str, repeats: int) -> dict:
    """One dimension in this process: the fit's and predict's seconds."""
    from dpdbscan import DPDBSCAN

    X = blobs_nd.points(d, seed)
    sub: int | str = subcells if subcells == "auto" else int(subcells)
    est = DPDBSCAN(
        blobs_nd.ALPHA[d],
        min_samples=blobs_nd.MIN_SAMPLES,
        epsilon=1.0,
        bounds=(0.0, 1.0),
        subcells=sub,
        core=core,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
        t0 = time.perf_counter()
        est.fit(X)
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        est.predict(X)
        first = time.perf_counter() - t0
        wall, cpu = [], []
        for _ in range(repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            est.predict(X)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return {
        "d": d,
        "n": int(X.shape[0]),
        "core_cells": int(est.spans_.core_keys.size),
        "fit_s": fit,
        "predict_first_s": first,
        "predict_s": statistics.median(wall),
        "predict_cpu_s": statistics.median(cpu),
    }


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="3,4,5,6,8")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--subcells", default="auto")
    ap.add_argument("--core", default="density", choices=["density", "bound"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    dims = [int(x) for x in a.dims.split(",")]
    if a.child:
        print(json.dumps(child(dims[0], a.seed, a.subcells, a.core, a.repeats)), flush=True)
        return 0
    head = ["d", "core cells", "fit", "predict (first call)", "predict", "predict CPU", "predict / fit"]
    print("| " + " | ".join(head + ["load (before / after)"]) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for d in dims:
        before = _load()
        cmd = [sys.executable, "-m", "benchmarks.bench_predict", "--child", "--dims", str(d)]
        cmd += [
            "--seed",
            str(a.seed),
            "--subcells",
            a.subcells,
            "--core",
            a.core,
            "--repeats",
            str(a.repeats),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"| {d} | failed: exit {proc.returncode} | | | | | | {before} / {_load()} |", flush=True)
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"| {d} | {r['core_cells']:,} | {r['fit_s']:.3f} s | {r['predict_first_s']:.3f} s | "
            f"{r['predict_s']:.3f} s | {r['predict_cpu_s']:.3f} s | {r['predict_s'] / r['fit_s']:.2f} | "
            f"{before} / {_load()} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
