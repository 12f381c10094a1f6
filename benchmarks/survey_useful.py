"""Issue 30 item 3: when can a fit not be useful? ARI against DBSCAN beside
every public number of the forecast, over d = 2..10.

For each (d, n, shape, seed) a fresh process makes the points (the
benchmark's blobs of :mod:`benchmarks.blobs_nd`, or the ``wide`` and
``elongated`` shapes of :mod:`benchmarks.survey_theta`) and fits, at a
seeded sample of (alpha, MinPts, epsilon) (alpha a multiple of the
benchmark's, :data:`SCALES`; always MinPts 20 and epsilon 1 at every scale,
plus ``--extra`` random draws of the rest), the ``dbscan`` package (its
labels the reference; cached per alpha and MinPts) and dpdbscan (bounds
(0, 1), the library's defaults otherwise: dense or sparse as it chooses).
Each row holds the ARI of dpdbscan's predict labels against DBSCAN's,
DBSCAN's clusters and noise share, the spans, the points labelled, the
CPU of the fit, and the forecast at the true n (``n_expected``, the public
guess a user would give): the histogram, theta, kappa, the noisy counts per
candidate, the noise's standard deviation, the margin, the threshold, the
expected count at the box's average density, the density factor and the
warnings. One JSON object per line (``--out``, appended); ``--summarise
FILE`` prints the table of docs/parameters.md.

    python -m benchmarks.survey_useful --dims 2,3,4,5,6,7,8,9,10 --ns 1e4,1e5 --out useful.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import warnings
from typing import Any

import numpy as np

from . import blobs_nd
from .survey_dims import _timed
from .survey_theta import points as shaped

SCALES = (0.5, 1.0, 1.5, 2.0, 3.0)
MIN_SAMPLES = (5, 20, 100)
EPSILONS = (0.3, 1.0, 3.0)
#: alpha at 1x for dimensions the benchmark has none (9-D, 10-D): 8-D's
BASE_ALPHA = {**blobs_nd.ALPHA, 9: 0.06, 10: 0.06}


def configs(
    d: int, n: int, shape: str, seed: int, extra: int, scales: tuple = SCALES
) -> list[tuple[float, int, float]]:
    """(scale, MinPts, epsilon): MinPts 20 at epsilon 1 at every scale, and
    ``extra`` seeded draws of the rest."""
    fixed = [(s, 20, 1.0) for s in scales]
    rest = [(s, m, e) for s in scales for m in MIN_SAMPLES for e in EPSILONS if (s, m, e) not in fixed]
    rng = random.Random(f"{d}-{n}-{shape}-{seed}")
    return fixed + rng.sample(rest, min(extra, len(rest)))


def _public(fc: Any) -> dict[str, Any]:
    keys = (
        "histogram",
        "theta",
        "kappa",
        "kappa_q",
        "subcells",
        "n_cells",
        "terms_per_cell",
        "noise_std",
        "margin",
        "threshold",
        "expected_count",
        "density_factor",
    )
    out = {k: getattr(fc, k) for k in keys}
    out["theta"] = None if out["histogram"] != "sparse" else out["theta"]
    out["useless"] = list(fc.useless)
    out["slow"] = list(fc.slow)
    return out


def run(d: int, n: int, shape: str, seed: int, extra: int, scales: tuple = SCALES) -> None:
    import dbscan
    from sklearn.metrics import adjusted_rand_score

    from dpdbscan import DPDBSCAN

    X = shaped(d, shape, seed, n=n)
    refs: dict[tuple[float, int], np.ndarray] = {}
    for scale, m, epsilon in configs(d, n, shape, seed, extra, scales):
        alpha = round(BASE_ALPHA[d] * scale, 6)
        est = DPDBSCAN(alpha, min_samples=m, epsilon=epsilon, bounds=(0.0, 1.0), random_state=seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fc = est.forecast(float(n), n_features=d)
            before = [str(w.message) for w in caught]
            if (alpha, m) not in refs:
                refs[alpha, m] = np.asarray(dbscan.DBSCAN(X, eps=alpha, min_samples=m)[0])
            ref = refs[alpha, m]
            cpu, wall, _ = _timed(lambda e=est: e.fit(X))
            fit_warnings = [str(w.message)[:160] for w in caught[len(before) :]]
        labels = est.predict(X)
        row = {
            "d": d,
            "n": n,
            "shape": shape,
            "seed": seed,
            "scale": scale,
            "alpha": alpha,
            "min_samples": m,
            "epsilon": epsilon,
            **_public(fc),
            "fit_histogram": str(est.histogram_.kind),
            "forecast_warnings": [w[:160] for w in before],
            "fit_warnings": fit_warnings,
            "cpu": cpu,
            "ari": float(adjusted_rand_score(ref, labels)),
            "dbscan_clusters": int(ref.max()) + 1,
            "dbscan_noise": float(np.mean(ref < 0)),
            "spans": int(est.spans_.n_spans),
            "spans_with_points": int(np.unique(labels[labels >= 0]).size),
            "labelled": float(np.mean(labels >= 0)),
            "load": os.getloadavg()[0],
        }
        print(json.dumps(row), flush=True)


def _rows(path: str) -> list[dict[str, Any]]:
    opener: Any = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip().startswith("{")]


def summarise(path: str) -> None:
    """Per (d, histogram, scale) at MinPts 20 and epsilon 1: the ARI's range
    and the public numbers (what docs/parameters.md shows)."""
    rows = [r for r in _rows(path) if r["min_samples"] == 20 and r["epsilon"] == 1.0]
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r["d"], r["scale"], r["histogram"]), []).append(r)
    print(
        "| d | α × | release | κ | noise σ | margin | threshold | density factor (n) | ARI | "
        "DBSCAN clusters |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    for (d, scale, kind), rs in sorted(groups.items()):
        ari = [r["ari"] for r in rs]
        fac = [r["density_factor"] for r in rs]
        print(
            f"| {d} | {scale:g} | {kind} | {rs[0]['kappa']:,} | {rs[0]['noise_std']:.3g} | "
            f"{rs[0]['margin']:.3g} | {rs[0]['threshold']:.3g} | {min(fac):.3g}-{max(fac):.3g} | "
            f"{min(ari):.2f}-{max(ari):.2f} | {min(r['dbscan_clusters'] for r in rs)}-"
            f"{max(r['dbscan_clusters'] for r in rs)} |"
        )


def _merges(
    d: int, alpha: float, m: int, epsilon: float, n: float, lower: Any = 0.0, upper: Any = 1.0
) -> bool:
    """Whether the forecast's merge warning fires (public inputs only)."""
    from dpdbscan import DPDBSCAN

    est = DPDBSCAN(alpha, min_samples=m, epsilon=epsilon, bounds=(lower, upper))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bool(est.forecast(n, n_features=d).merges)


def keep_rule(path: str) -> None:
    """The merge warning against the rows' ARI (recomputed by today's
    forecast), and on the benchmark's points and the dev suite's sets."""
    rows = _rows(path)
    fired = [_merges(r["d"], r["alpha"], r["min_samples"], r["epsilon"], r["n"]) for r in rows]
    for name, pick in (
        ("ARI < 0.3", lambda r: r["ari"] < 0.3),
        ("ARI < 0.3, some span found", lambda r: r["ari"] < 0.3 and r["spans"] > 0),
        ("ARI < 0.3, dense", lambda r: r["ari"] < 0.3 and r["histogram"] == "dense"),
        (
            "ARI < 0.3, dense, kappa >= 600",
            lambda r: r["ari"] < 0.3 and r["histogram"] == "dense" and r["kappa"] >= 600,
        ),
        ("0.3 <= ARI <= 0.8", lambda r: 0.3 <= r["ari"] <= 0.8),
        ("ARI > 0.8", lambda r: r["ari"] > 0.8),
    ):
        got = [f for r, f in zip(rows, fired) if pick(r)]
        print(f"{name}: fires on {sum(got)} of {len(got)}")
    for r, f in zip(rows, fired):
        if f and r["ari"] > 0.3:
            print(
                f"  fires at ARI {r['ari']:.2f}: d={r['d']} n={r['n']} {r['shape']} x{r['scale']:g} "
                f"MinPts {r['min_samples']} epsilon {r['epsilon']:g}"
            )
    bench = [(d, blobs_nd.ALPHA[d], blobs_nd.N.get(d, 100_000)) for d in blobs_nd.ALPHA]
    print("benchmark points:", [d for d, a, n in bench if _merges(d, a, 20, 1.0, n)] or "silent")
    root = os.environ.get("DPDBSCAN_DATA")
    if root and os.path.exists(os.path.join(root, "dev", "params.json")):
        with open(os.path.join(root, "dev", "params.json")) as fh:
            dev = json.load(fh)
        loud = [
            k
            for k, v in dev.items()
            if _merges(v["d"], v["alpha"], v["min_samples"], 1.0, v["n"], v["lower"], v["upper"])
        ]
        print(f"dev suite ({len(dev)} sets):", loud or "silent")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="2,3,4,5,6,7,8,9,10")
    ap.add_argument("--ns", default="1e4,1e5")
    ap.add_argument("--shapes", default="blobs,wide,elongated")
    ap.add_argument("--seeds", default="0")
    ap.add_argument(
        "--scales", default=",".join(f"{s:g}" for s in SCALES), help="multiples of the benchmark's alpha"
    )
    ap.add_argument("--extra", type=int, default=5, help="random (scale, MinPts, epsilon) draws per group")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per group")
    ap.add_argument("--out", help="append the rows to this file")
    ap.add_argument("--summarise", help="print the table of a rows file (plain or gzip)")
    ap.add_argument("--child", help="one group as JSON (internal)")
    a = ap.parse_args(argv)
    if a.summarise:
        summarise(a.summarise)
        keep_rule(a.summarise)
        return 0
    if a.child:
        p = json.loads(a.child)
        run(p["d"], p["n"], p["shape"], p["seed"], p["extra"], tuple(p.get("scales", SCALES)))
        return 0
    scales = [float(x) for x in a.scales.split(",")]
    for d in (int(x) for x in a.dims.split(",")):
        for n in (int(float(x)) for x in a.ns.split(",")):
            for shape in a.shapes.split(","):
                for seed in (int(x) for x in a.seeds.split(",")):
                    spec = json.dumps(
                        {"d": d, "n": n, "shape": shape, "seed": seed, "extra": a.extra, "scales": scales}
                    )
                    cmd = [sys.executable, "-m", "benchmarks.survey_useful", "--child", spec]
                    try:
                        proc = subprocess.run(
                            cmd, capture_output=True, text=True, check=False, timeout=a.timeout
                        )
                        out, err = proc.stdout, proc.stderr
                    except subprocess.TimeoutExpired as e:
                        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                        err = f"killed after {a.timeout:g} s"
                    lines = [x for x in out.splitlines() if x.startswith("{")]
                    if not lines or (err and "Traceback" in err):
                        print(
                            f"d={d} n={n} {shape} seed {seed}: {err.strip().splitlines()[-1:]}",
                            file=sys.stderr,
                        )
                    for line in lines:
                        print(line, flush=True)
                        if a.out:
                            with open(a.out, "a") as f:
                                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
