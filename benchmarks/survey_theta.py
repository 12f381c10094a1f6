"""Issue 30: the sparse release's threshold theta against fit time and ARI.

For each (d, shape, seed) a fresh process makes the points (the benchmark's
blobs of :mod:`benchmarks.blobs_nd`, or ``wide``: the same blobs at twice
their sigma, whose clusters' cells hold few points each), and for each
alpha (``--scales`` times the benchmark's) fits the ``dbscan`` package
twice (the second timed, its labels the reference) and dpdbscan (epsilon 1,
bounds (0, 1), MinPts 20, the library's defaults otherwise) once to warm up,
then at every theta of ``--thetas`` (steps above the default's theta, or the
default's own with ``d``) in ``--rounds`` interleaved rounds. Reported per
fit: user+sys CPU of the process (the ``dbscan`` package's two threads
counted), the theta, the released cells, the expected released empty cells
of the grid and of one alpha-ball's ``kappa`` cells, and the ARI of
dpdbscan's predict labels against DBSCAN's. Dense releases (no theta) are
fitted at the default only. One JSON object per line.

    python -m benchmarks.survey_theta --dims 5,8 --scales 1,2 --seeds 0 --thetas 0,1,2,3,4
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import warnings
from typing import Any

import numpy as np

from . import blobs_nd
from .survey_dims import _timed

SHAPES = {"blobs": blobs_nd.SIGMA, "wide": 2 * blobs_nd.SIGMA}


def _tail(theta: float) -> float:
    """P(Z >= theta) of the discrete Laplace at epsilon 1 (what these fits draw)."""
    q = math.exp(-1.0)
    return q ** math.ceil(theta) / (1.0 + q)


def run(
    d: int, shape: str, seed: int, scales: list[float], steps: list[int], rounds: int, rule: str | None
) -> None:
    import dbscan
    from sklearn.metrics import adjusted_rand_score

    from dpdbscan import DPDBSCAN

    X = blobs_nd.blobs(100_000, d, seed, sigma=SHAPES[shape])
    m = blobs_nd.MIN_SAMPLES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for scale in scales:
            alpha = round(blobs_nd.ALPHA[d] * scale, 6)
            dbscan.DBSCAN(X, eps=alpha, min_samples=m)
            db_cpu, _, out = _timed(lambda a=alpha: dbscan.DBSCAN(X, eps=a, min_samples=m)[0])
            ref = np.asarray(out)
            warm = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0)).fit(X)
            kind = str(warm.histogram_.kind)
            theta0 = float(warm.theta_)
            thetas: list[float | None] = [None]
            if kind == "sparse":
                n, kappa = float(warm.n_cells_), int(warm.kappa_)
                if _least(2.0**20, n) != theta0:
                    print(f"d={d} alpha={alpha}: theta {theta0:g} is not 2^20's", file=sys.stderr)
                chosen = [theta0 + s for s in steps] if rule is None else [theta0, RULES[rule](n, kappa)]
                thetas = sorted(set(chosen))
            for r in range(rounds):
                for theta in thetas:
                    est = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0), theta=theta)
                    cpu, wall, _ = _timed(lambda e=est: e.fit(X))
                    labels = est.predict(X)
                    t = float(est.theta_)
                    row = {
                        "d": d,
                        "shape": shape,
                        "seed": seed,
                        "scale": scale,
                        "alpha": alpha,
                        "round": r,
                        "histogram": kind,
                        "n_cells": float(est.n_cells_),
                        "kappa": int(est.kappa_),
                        "theta": t,
                        "step": t - theta0 if kind == "sparse" else 0.0,
                        "released": int(est.histogram_.n_released),
                        "empty_grid": est.n_cells_ * _tail(t) if kind == "sparse" else 0.0,
                        "empty_ball": est.kappa_ * _tail(t) if kind == "sparse" else 0.0,
                        "cpu": cpu,
                        "wall": wall,
                        "dbscan_cpu": db_cpu,
                        "ari": float(adjusted_rand_score(ref, labels)),
                        "dbscan_clusters": int(ref.max()) + 1,
                        "load": os.getloadavg()[0],
                    }
                    print(json.dumps(row), flush=True)


def _least(bound: float, cells: float) -> float:
    """theta as the library's universe cap finds it for ``cells`` cells and
    the cap ``bound`` (a guess from the tail's decay, then up)."""
    guess = math.log(max(cells, 1) / max(bound, 1.0))
    t = float(math.ceil(max(1.0, guess)))
    while cells * _tail(t) > bound:
        t += 1.0
    return t


def _ball(bound: float, kappa: int) -> float:
    """The least integer theta >= 1 with ``kappa * P(Z >= theta) <= bound``."""
    t = 1.0
    while kappa * _tail(t) > bound:
        t += 1.0
    return t


#: the rules compared: name -> theta from (grid cells, kappa)
RULES: dict[str, Any] = {
    "2^20": lambda n, k: _least(2.0**20, n),
    "2^16": lambda n, k: _least(2.0**16, n),
    "2^14": lambda n, k: _least(2.0**14, n),
    **{
        f"ball {c:g}": (lambda n, k, c=c: max(_least(2.0**20, n), _ball(c, k)))
        for c in (0.25, 0.5, 1, 2, 4, 4.5, 8, 16, 32)
    },
}


def summarise(path: str, rounds: list[int]) -> str:
    """Per rule, d and alpha scale: the mean CPU of the rule's fits (rounds
    ``rounds``), its ratio to the ``dbscan`` package's, the mean ARI and the
    worst case's fall against the 2^20 rule's."""
    rows = [json.loads(ln) for ln in open(path) if ln.startswith("{") and "error" not in ln]
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["d"], r["shape"], r["seed"], r["scale"]), []).append(r)
    head = "| rule | d | shape | α scale | theta | CPU | ratio | ARI | worst ARI fall | missing |"
    out = [head, "|" + "---|" * 10]
    for name, rule in RULES.items():
        cells: dict[tuple, list] = {}
        for (d, shape, _seed, scale), rs in sorted(by.items()):
            base = [r for r in rs if r["step"] == 0 and r["round"] in rounds]
            if not base:
                continue
            theta = rule(base[0]["n_cells"], base[0]["kappa"]) if base[0]["histogram"] == "sparse" else None
            pick = [r for r in rs if r["round"] in rounds and (theta is None or r["theta"] == theta)]
            c = cells.setdefault((d, shape, scale), [])
            if not pick:
                c.append(None)
                continue
            mean = lambda k, rr: sum(r[k] for r in rr) / len(rr)  # noqa: E731
            c.append(
                (theta, mean("cpu", pick), mean("dbscan_cpu", pick), mean("ari", pick), mean("ari", base))
            )
        for (d, shape, scale), c in cells.items():
            ok = [x for x in c if x is not None]
            if not ok:
                out.append(f"| {name} | {d} | {shape} | {scale:g} | – | – | – | – | – | {len(c)} |")
                continue
            thetas = sorted({x[0] for x in ok if x[0] is not None})
            cpu = sum(x[1] for x in ok) / len(ok)
            ratio = sum(x[1] / x[2] for x in ok) / len(ok)
            ari = sum(x[3] for x in ok) / len(ok)
            fall = max(x[4] - x[3] for x in ok)
            th = ",".join(f"{t:g}" for t in thetas) or "dense"
            out.append(
                f"| {name} | {d} | {shape} | {scale:g} | {th} | {cpu:.3f} s | {ratio:.1f}x | {ari:.4f} | "
                f"{fall:+.4f} | {len(c) - len(ok)} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="5,8")
    ap.add_argument("--shapes", default="blobs,wide")
    ap.add_argument("--scales", default="1,1.5,2,3")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--thetas", default="0,1,2,3,4", help="steps above the default theta")
    ap.add_argument("--rule", choices=list(RULES), help="fit at the default theta and this rule's")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", help="append the JSON lines to this file")
    ap.add_argument("--child", help="one (d, shape, seed) as JSON (internal)")
    ap.add_argument("--summarise", help="a JSON lines file of earlier runs: the rules' table")
    a = ap.parse_args(argv)
    if a.summarise:
        print(summarise(a.summarise, [a.rounds - 1]))
        return 0
    scales = [float(x) for x in a.scales.split(",")]
    steps = [int(x) for x in a.thetas.split(",")]
    if a.child:
        p = json.loads(a.child)
        run(p["d"], p["shape"], p["seed"], scales, steps, a.rounds, a.rule)
        return 0
    for d in (int(x) for x in a.dims.split(",")):
        for shape in a.shapes.split(","):
            for seed in (int(x) for x in a.seeds.split(",")):
                spec = json.dumps({"d": d, "shape": shape, "seed": seed})
                cmd = [sys.executable, "-m", "benchmarks.survey_theta", "--child", spec]
                cmd += [f"--scales={a.scales}", f"--thetas={a.thetas}", f"--rounds={a.rounds}"]
                cmd += [f"--rule={a.rule}"] if a.rule else []
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                if proc.returncode != 0:
                    err = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
                    lines.append(json.dumps({"d": d, "shape": shape, "seed": seed, "error": err[0][:160]}))
                for ln in lines:
                    print(ln, flush=True)
                    if a.out:
                        with open(a.out, "a") as f:
                            f.write(ln + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
