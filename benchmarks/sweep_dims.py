"""Issue 30's robustness sweep: dpdbscan against the ``dbscan`` package away
from the benchmark's points (other seeds, shapes, sizes and alphas, d = 3..8).

Cases (:func:`cases`): every d in ``--dims`` at every alpha scale of
``--scales`` (times the benchmark's :data:`benchmarks.blobs_nd.ALPHA`) and
every shape of ``--shapes`` at ``--n`` points; and, at 1x alpha and the
``blobs`` shape, every d at each size of ``--sizes``. Shapes:

* ``blobs``, ``aniso``, ``uneven`` (:func:`benchmarks.survey_theta.points`):
  the benchmark's 30 blobs, rotated anisotropic clusters (sds 0.003-0.03),
  cluster shares falling as 1 / rank;
* ``elongated``: clusters of sd 0.04 along a random axis, 0.01 across;
* ``bg30``: the benchmark's blobs with 30% uniform background.

Each case runs in a fresh process (``--ulimit-kb`` caps its address space)
that makes the points from ``--seed``, fits dpdbscan once to warm up (its
peak RSS is read then: the points, the imports and dpdbscan's fit), then
``--rounds`` interleaved rounds of the ``dbscan`` package and dpdbscan
(epsilon 1, bounds (0, 1), MinPts 20, the library's defaults, the release
seeded by the seed so two trees compare on the same noise). The ``dbscan``
package runs in a child process of its own (:class:`benchmarks.peer.Peer`):
its worker threads keep using CPU after a call, which timed in one process
counted as dpdbscan's. Reported: medians of user+sys CPU of each process
(the ``dbscan`` package's two threads counted) and of wall time, the
median of same-round CPU ratios, the histogram and grid cells, the peak RSS,
the ARI of dpdbscan's predict labels against DBSCAN's, and the load.

A case fails the issue's bar if its CPU ratio is above 2, its peak above
2 GB or its ARI below 0.95 (``--summarise FILE`` lists them; ``--compare A B``
sets two runs side by side).

    python -m benchmarks.sweep_dims --out sweep.jsonl [--dims 3,4,5,6,7,8] [--seed 60]
    python -m benchmarks.sweep_dims --summarise sweep.jsonl
    python -m benchmarks.sweep_dims --compare before.jsonl after.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import warnings
from typing import Any

import numpy as np

from . import blobs_nd
from .peakrss import own_peak_bytes
from .peer import Peer
from .survey_dims import _timed

SHAPES = ("blobs", "aniso", "elongated", "uneven", "bg30")
#: the issue's bar
TIME_RATIO, PEAK_GB, MIN_ARI = 2.0, 2.0, 0.95


def points(d: int, shape: str, seed: int, n: int) -> np.ndarray:
    """The sweep's points (see the module's docstring)."""
    from . import survey_theta

    if shape == "bg30":
        rng = np.random.default_rng([seed, 13])
        k = blobs_nd.N_CENTRES
        c = rng.uniform(0.15, 0.85, size=(k, d))
        n_bg = int(round(0.3 * n))
        which = rng.integers(0, k, size=n - n_bg)
        X = np.vstack(
            [c[which] + rng.normal(0.0, blobs_nd.SIGMA, size=(n - n_bg, d)), rng.uniform(0, 1, (n_bg, d))]
        )
        return np.clip(X, 0.0, 1.0)
    return survey_theta.points(d, shape, seed, n)


def cases(dims: list[int], scales: list[float], shapes: list[str], n: int, sizes: list[int]) -> list[dict]:
    out = [{"d": d, "scale": s, "shape": sh, "n": n} for d in dims for s in scales for sh in shapes]
    out += [{"d": d, "scale": 1.0, "shape": "blobs", "n": m} for d in dims for m in sizes if m != n]
    return out


def one(case: dict, seed: int, rounds: int, options: dict | None = None) -> dict:
    """Both fits at one case, in this process (``options``: more of the
    estimator's keyword arguments, as ``--option histogram=sparse``)."""
    from dpdbscan import DPDBSCAN

    d, n = case["d"], case["n"]
    alpha = round(blobs_nd.ALPHA[d] * case["scale"], 6)
    m = blobs_nd.MIN_SAMPLES
    X = points(d, case["shape"], seed, n)
    load = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(min_samples=m, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed, **(options or {}))
        est = DPDBSCAN(alpha, **kw)
        cold = _timed(lambda: est.fit(X))
        peak = own_peak_bytes() / 1e9
        ours: list[tuple] = []
        peer: list[tuple] = []
        # the dbscan package in a process of its own (benchmarks/peer.py): its
        # worker threads keep running after a call and would count as ours
        with Peer(X) as other:
            ref = other.labels(alpha, m)  # warm-up
            for _ in range(rounds):
                peer.append(other.fit(alpha, m))
                ours.append(_timed(lambda: est.fit(X)))
            near = reference_moves(X, alpha, ref, other)
        labels = est.predict(X)
    from sklearn.metrics import adjusted_rand_score

    return {
        **case,
        "seed": seed,
        "alpha": alpha,
        "options": options or {},
        "histogram": str(est.histogram_.kind),
        "cells": float(est.n_cells_),
        "theta": float(est.theta_),
        "released": int(est.histogram_.values.size),
        "cpu": statistics.median(r[0] for r in ours),
        "wall": statistics.median(r[1] for r in ours),
        "dbscan_cpu": statistics.median(r[0] for r in peer),
        "dbscan_wall": statistics.median(r[1] for r in peer),
        "ratio": statistics.median(a[0] / b[0] for a, b in zip(ours, peer)),
        "wall_ratio": statistics.median(a[1] / b[1] for a, b in zip(ours, peer)),
        "cold_cpu": cold[0],
        "peak_gb": peak,
        "ari": float(adjusted_rand_score(ref, labels)),
        "dbscan_clusters": int(ref.max()) + 1,
        "dbscan_10pct": near,
        "spans": int(est.spans_.n_spans),
        "load": [load, os.getloadavg()[0]],
    }


#: eps factors of :func:`reference_moves`
NEAR = (0.9, 1.1)


def reference_moves(
    X: np.ndarray, alpha: float, ref: np.ndarray | None = None, peer: Peer | None = None
) -> float:
    """The least ARI of exact DBSCAN at eps ``alpha`` x 0.9 and x 1.1
    against DBSCAN's labels at ``alpha`` (``ref``): below the bar, the
    reference itself moves more than the bar allows within 10% of eps (the
    clusters are near percolation), where an approximate DBSCAN, which may
    merge at up to (1 + rho) alpha, cannot be held to it. ``peer``: the
    :class:`~benchmarks.peer.Peer` holding ``X`` (a new one by default)."""
    from sklearn.metrics import adjusted_rand_score

    m = blobs_nd.MIN_SAMPLES
    if peer is None:
        with Peer(X) as other:
            return reference_moves(X, alpha, ref, other)
    if ref is None:
        ref = peer.labels(alpha, m)
    return min(float(adjusted_rand_score(ref, peer.labels(alpha * f, m))) for f in NEAR)


def stability(path: str, out: str) -> None:
    """``--stability``: :func:`reference_moves` of every case of a run
    that lacks it (a run made before the column existed), one JSON line
    per case to ``out``."""
    for r in _read(path):
        if "dbscan_10pct" in r or "error" in r:
            continue
        X = points(r["d"], r["shape"], r["seed"], r["n"])
        row = {k: r[k] for k in ("d", "shape", "scale", "n", "seed")}
        row["dbscan_10pct"] = reference_moves(X, r["alpha"])
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")


def fails(r: dict) -> list[str]:
    """The issue's bars a row misses."""
    if "error" in r:
        return ["error"]
    out = []
    if r["ratio"] > TIME_RATIO:
        out.append("time")
    if r["peak_gb"] > PEAK_GB:
        out.append("memory")
    if r["ari"] < MIN_ARI:
        out.append("ARI")
    return out


def _key(r: dict) -> tuple:
    return (r["d"], r["shape"], r["scale"], r["n"])


def _read(path: str, near: str | None = None) -> list[dict]:
    """A run's rows, with the ``dbscan_10pct`` of a ``--stability`` file
    merged in where given."""
    with open(path) as f:
        rows = [json.loads(ln) for ln in f if ln.startswith("{")]
    if near:
        more = {(_key(r), r["seed"]): r["dbscan_10pct"] for r in _read(near)}
        for r in rows:
            r.setdefault("dbscan_10pct", more.get((_key(r), r["seed"])))
    return rows


def misses(r: dict) -> str:
    """:func:`fails`, an ARI miss marked "(reference moves)" where DBSCAN
    itself moves more than the bar within 10% of eps."""
    out = fails(r)
    moved = r.get("dbscan_10pct")
    return ", ".join(
        f + " (reference moves)" if f == "ARI" and moved is not None and moved < MIN_ARI else f for f in out
    )


def _cell(r: dict | None) -> str:
    if r is None:
        return "–"
    if "error" in r:
        return r["error"][:40]
    return f"{r['ratio']:.2f}x, {r['peak_gb']:.2f} GB, ARI {r['ari']:.3f}"


def summarise(path: str, near: str | None = None) -> str:
    rows = _read(path, near)
    head = (
        "| d | shape | α × | n | histogram | dpdbscan CPU | `dbscan` CPU | ratio | wall ratio | "
        "peak | ARI | DBSCAN at eps ± 10% | load | misses |\n|" + "---|" * 14
    )
    body = []
    for r in sorted(rows, key=_key):
        if "error" in r:
            body.append(f"| {r['d']} | {r['shape']} | {r['scale']:g} | {r['n']:,} | {r['error'][:60]} |")
            continue
        body.append(
            f"| {r['d']} | {r['shape']} | {r['scale']:g} | {r['n']:,} | {r['histogram']} | "
            f"{r['cpu']:.3f} s | {r['dbscan_cpu']:.3f} s | {r['ratio']:.2f}x | {r['wall_ratio']:.2f}x | "
            f"{r['peak_gb']:.2f} GB | {r['ari']:.4f} | {_near(r)} | {r['load'][0]:.1f} | {misses(r) or '–'} |"
        )
    bad = [r for r in rows if fails(r)]
    count = {k: sum(k in fails(r) for r in rows) for k in ("time", "memory", "ARI", "error")}
    moved = sum("reference moves" in misses(r) for r in rows)
    tail = (
        f"\n{len(rows)} cases, {len(bad)} beyond the bar (ratio > 2, peak > 2 GB or ARI < 0.95): "
        f"{count['time']} time, {count['memory']} memory, {count['ARI']} ARI ({moved} of them where "
        f"DBSCAN at eps ± 10% itself scores below 0.95), {count['error']} errors\n"
    )
    return head + "\n" + "\n".join(body) + tail


def condensed(path: str, near: str | None = None) -> str:
    """Per (d, alpha scale, n): the shapes' largest CPU ratio and peak, least
    ARI, and the misses by kind (ARI misses where DBSCAN at eps +- 10%
    itself falls below the bar counted apart)."""
    rows = [r for r in _read(path, near) if "error" not in r]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["d"], r["scale"], r["n"]), []).append(r)
    out = [
        "| d | α × | n | shapes | ratio (max) | peak (max) | ARI (min) | time misses | ARI misses "
        "(reference moves) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (d, scale, n), rs in sorted(groups.items()):
        ari = [r for r in rs if "ARI" in fails(r)]
        moved = sum("reference moves" in misses(r) for r in ari)
        out.append(
            f"| {d} | {scale:g} | {n:,} | {len(rs)} | {max(r['ratio'] for r in rs):.2f}x | "
            f"{max(r['peak_gb'] for r in rs):.2f} GB | {min(r['ari'] for r in rs):.3f} | "
            f"{sum('time' in fails(r) for r in rs)} | {len(ari)} ({moved}) |"
        )
    errors = [r for r in _read(path) if "error" in r]
    return "\n".join(out) + (f"\n\n{len(errors)} cases failed to run\n" if errors else "\n")


def _near(r: dict) -> str:
    v = r.get("dbscan_10pct")
    return "–" if v is None else f"{v:.3f}"


def compare(before: str, after: str) -> str:
    a = {_key(r): r for r in _read(before)}
    b = {_key(r): r for r in _read(after)}
    out = ["| d | shape | α × | n | before | after |", "|---|---|---|---|---|---|"]
    for k in sorted(set(a) | set(b)):
        out.append(f"| {k[0]} | {k[1]} | {k[2]:g} | {k[3]:,} | {_cell(a.get(k))} | {_cell(b.get(k))} |")
    return "\n".join(out) + "\n"


def _options(pairs: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs as keyword arguments (numbers parsed)."""
    out: dict[str, Any] = {}
    for p in pairs:
        name, _, value = p.partition("=")
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            out[name] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="3,4,5,6,7,8")
    ap.add_argument("--scales", default="0.5,1,1.5,2,3")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--sizes", default="10000,300000", help="more sizes at 1x alpha, blobs")
    ap.add_argument("--seed", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    ap.add_argument("--ulimit-kb", type=int, default=9_000_000)
    ap.add_argument("--out", help="append one JSON line per case")
    ap.add_argument("--summarise")
    ap.add_argument("--condensed", action="store_true", help="with --summarise: one row per (d, alpha, n)")
    ap.add_argument("--near", help="a --stability file to merge into --summarise")
    ap.add_argument("--stability", nargs=2, metavar=("RUN", "OUT"), help="DBSCAN at eps ± 10%% per case")
    ap.add_argument("--compare", nargs=2)
    ap.add_argument(
        "--option", action="append", default=[], help="NAME=VALUE, an estimator argument (repeatable)"
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.summarise:
        print(condensed(a.summarise, a.near) if a.condensed else summarise(a.summarise, a.near))
        return 0
    if a.stability:
        stability(*a.stability)
        return 0
    if a.compare:
        print(compare(*a.compare))
        return 0
    if a.child:
        print(json.dumps(one(json.loads(a.child), a.seed, a.rounds, _options(a.option))), flush=True)
        return 0
    todo = cases(
        [int(x) for x in a.dims.split(",")],
        [float(x) for x in a.scales.split(",")],
        a.shapes.split(","),
        a.n,
        [int(x) for x in a.sizes.split(",") if x],
    )
    for case in todo:
        cmd = [sys.executable, "-m", "benchmarks.sweep_dims", "--child", json.dumps(case)]
        cmd += ["--seed", str(a.seed), "--rounds", str(a.rounds)] + [f"--option={o}" for o in a.option]
        lim = f"ulimit -v {a.ulimit_kb} && exec " + " ".join(f"'{c}'" for c in cmd)
        try:
            proc = subprocess.run(["bash", "-c", lim], capture_output=True, text=True, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            proc = subprocess.CompletedProcess(cmd, -1, "", f"killed after {a.timeout:g} s")
        if proc.returncode == 0:
            r = json.loads(proc.stdout.strip().splitlines()[-1])
        else:
            tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            r = {**case, "seed": a.seed, "error": tail[0][:160]}
        line = json.dumps(r)
        print(line if "error" in r else _cell(r) + f"  {case}", flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
