"""Issue 30's survey: dpdbscan against the ``dbscan`` package away from the
benchmark's points, at 0.5, 1, 1.5 and 2 times the benchmark's alpha
(:data:`benchmarks.blobs_nd.ALPHA`) and other seeds.

Each point runs in a fresh process that makes the points of
:func:`benchmarks.blobs_nd.points` (30 blobs, 10% background, 1e5 points),
fits the ``dbscan`` package (in a child process of its own,
:class:`benchmarks.peer.Peer`) and dpdbscan (epsilon 1, bounds (0, 1), the
library's defaults, MinPts 20) twice each, interleaved, and reports the
second fits: user+sys CPU of each process (the ``dbscan`` package's two
threads counted), wall time, the histogram dpdbscan chose and its grid's
cells, the peak RSS of the process, the ARI of dpdbscan's predict labels
against DBSCAN's, and the load before and after. ``--subcells`` and
``--histogram`` pass through to dpdbscan.

    python -m benchmarks.survey_dims --dims 7,8 --scales 0.5,1,1.5,2 --seeds 1,2 [--md out.md]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from typing import Any

import numpy as np

from . import blobs_nd
from .peakrss import own_peak_bytes


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fit: Any) -> tuple[float, float, Any]:
    c, t = _cpu(), time.perf_counter()
    out = fit()
    return _cpu() - c, time.perf_counter() - t, out


def point(d: int, alpha: float, seed: int, extra: dict) -> dict:
    """Both fits at one point, the ``dbscan`` package in a child process
    stopped between its calls (:class:`benchmarks.peer.Peer`: its worker
    threads keep using CPU after a call, which in this process counted as
    dpdbscan's); the second of each reported."""
    from sklearn.metrics import adjusted_rand_score

    from dpdbscan import DPDBSCAN

    from .peer import Peer

    X = blobs_nd.points(d, seed)
    m = blobs_nd.MIN_SAMPLES
    est = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0), **extra)
    runs: dict[str, list] = {"dbscan": [], "dpdbscan": []}
    load = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Peer(X) as other:
            for i in range(2):
                runs["dbscan"].append(other.fit(alpha, m, labels=i == 1))
                runs["dpdbscan"].append(_timed(lambda: est.fit(X)))
        labels = est.predict(X)
    ref = np.asarray(runs["dbscan"][-1][2])
    return {
        "d": d,
        "alpha": alpha,
        "seed": seed,
        "histogram": str(est.histogram_.kind),
        "cells": float(est.n_cells_),
        "cpu": runs["dpdbscan"][-1][0],
        "wall": runs["dpdbscan"][-1][1],
        "first_cpu": runs["dpdbscan"][0][0],
        "dbscan_cpu": runs["dbscan"][-1][0],
        "dbscan_wall": runs["dbscan"][-1][1],
        "peak_gb": own_peak_bytes() / 1e9,
        "ari": float(adjusted_rand_score(ref, labels)),
        "load": [load, os.getloadavg()[0]],
    }


def row(r: dict, scale: float) -> str:
    if "error" in r:
        return f"| {r['d']} | {r['alpha']:g} ({scale:g}×) | {r['seed']} | {r['error']} |"
    return (
        f"| {r['d']} | {r['alpha']:g} ({scale:g}×) | {r['seed']} | {r['histogram']} | {r['cells']:.3g} | "
        f"{r['cpu']:.2f} s | {r['dbscan_cpu']:.2f} s | {r['cpu'] / r['dbscan_cpu']:.1f}x | "
        f"{r['wall']:.2f} / {r['dbscan_wall']:.2f} s | {r['first_cpu']:.2f} s | {r['peak_gb']:.2f} GB | "
        f"{r['ari']:.4f} | {r['load'][0]:.0f} / {r['load'][1]:.0f} |"
    )


HEAD = (
    "| d | α (× bench) | seed | histogram | cells | dpdbscan CPU | `dbscan` CPU | ratio | "
    "wall dpdbscan / `dbscan` | first fit CPU | peak RSS | ARI | load |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="7,8")
    ap.add_argument("--scales", default="0.5,1,1.5,2")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--subcells", type=int, default=None)
    ap.add_argument("--histogram", default=None)
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per point")
    ap.add_argument("--md", help="append the table's rows to this file")
    ap.add_argument("--child", help="one point as JSON (internal)")
    a = ap.parse_args(argv)
    extra = {k: v for k, v in (("subcells", a.subcells), ("histogram", a.histogram)) if v is not None}
    if a.child:
        p = json.loads(a.child)
        print(json.dumps(point(p["d"], p["alpha"], p["seed"], extra)), flush=True)
        return 0
    print(HEAD, flush=True)
    for d in (int(x) for x in a.dims.split(",")):
        for scale in (float(x) for x in a.scales.split(",")):
            alpha = round(blobs_nd.ALPHA[d] * scale, 6)
            for seed in (int(x) for x in a.seeds.split(",")):
                spec = json.dumps({"d": d, "alpha": alpha, "seed": seed})
                cmd = [sys.executable, "-m", "benchmarks.survey_dims", "--child", spec]
                cmd += [f"--{k}={v}" for k, v in extra.items()]
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=a.timeout)
                except subprocess.TimeoutExpired:
                    proc = subprocess.CompletedProcess(cmd, -1, "", f"killed after {a.timeout:g} s")
                if proc.returncode == 0:
                    r = json.loads(proc.stdout.strip().splitlines()[-1])
                else:
                    tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
                    r = {"d": d, "alpha": alpha, "seed": seed, "error": tail[0][:120]}
                line = row(r, scale)
                print(line, flush=True)
                if a.md:
                    with open(a.md, "a") as f:
                        f.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
