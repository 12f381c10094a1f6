"""dpdbscan against exact DBSCAN in 2 to 8 dimensions, on the same points.

The peers: the ``dbscan`` package (Wang, Gu & Shun's parallel exact DBSCAN,
SIGMOD 2020; ``pip install dbscan``, the ``bench`` extra) and scikit-learn's
DBSCAN (``n_jobs=-1``). The points: :mod:`benchmarks.blobs_nd` (30 Gaussian
blobs and 10% background in [0, 1]^d; 1e6 points in 2-D, 1e5 above), MinPts
20, the alpha of ``blobs_nd.ALPHA``; dpdbscan at epsilon = 1, bounds (0, 1),
the library's defaults and its secure noise.

Every measurement runs in a fresh process (so its peak RSS is its own) that
makes the points from the seed, fits twice and times the second fit alone
(the first, which also fills dpdbscan's per-process caches, is reported
too), and writes the labels: dpdbscan's
are ``predict`` of the training points (not a DP release; only the spans
are), scored by the adjusted Rand index against the ``dbscan`` package's.
Rounds are interleaved (``dbscan``, then dpdbscan, each round) so both see the
same machine load; scikit-learn runs once per dimension (it is slow).

With ``--core bound`` each round also fits the paper's core test
(``core="bound"``) on the same points, reported beside the density test's
fit (same-round ratios to it and to ``dbscan``).

    python -m benchmarks.bench_dims [--dims 2,3,4,5,6,8] [--repeats 3] [--seed 0]
                                    [--no-sklearn] [--core bound] [--json out.json] [--md out.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import blobs_nd
from .peakrss import own_peak_bytes

METHODS = ("dbscan", "dpdbscan", "sklearn", "dpdbscan-bound")
#: The issue's targets: fit <= 2x the ``dbscan`` package, <= 2 GB, ARI >= 0.95.
TIME_RATIO, PEAK_GB, MIN_ARI = 2.0, 2.0, 0.95


def _fit(method: str, X: np.ndarray, d: int) -> tuple[float, np.ndarray]:
    """Seconds of the fit alone, and the labels of the points."""
    alpha, m = blobs_nd.ALPHA[d], blobs_nd.MIN_SAMPLES
    if method == "dbscan":
        import dbscan

        t0 = time.perf_counter()
        labels, _ = dbscan.DBSCAN(X, eps=alpha, min_samples=m)
        return time.perf_counter() - t0, np.asarray(labels)
    if method == "sklearn":
        from sklearn.cluster import DBSCAN

        t0 = time.perf_counter()
        labels = DBSCAN(eps=alpha, min_samples=m, n_jobs=-1).fit(X).labels_
        return time.perf_counter() - t0, labels
    import warnings

    from dpdbscan import DPDBSCAN

    core = "bound" if method == "dpdbscan-bound" else "density"
    est = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0), core=core)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X)
        seconds = time.perf_counter() - t0
        return seconds, est.predict(X)


def child(method: str, d: int, seed: int, n: int | None, labels_out: str) -> None:
    """One fit in this (fresh) process; prints a JSON line, saves the labels."""
    X = blobs_nd.points(d, seed, n)
    # the first fit of a process also fills its caches (dpdbscan: the ball
    # weights of (d, eta, k), computed once per process); both are reported
    cold, _ = _fit(method, X, d) if method != "sklearn" else (None, None)
    seconds, labels = _fit(method, X, d)
    np.save(labels_out, labels)
    peak = own_peak_bytes()
    print(json.dumps({"fit_s": seconds, "cold_s": cold, "peak_rss_bytes": peak}), flush=True)


def _run_child(method: str, d: int, seed: int, n: int | None, tmp: Path) -> dict[str, Any]:
    out = tmp / f"{method}-{d}.npy"
    cmd = [sys.executable, "-m", "benchmarks.bench_dims", "--child", method, "--dims", str(d)]
    cmd += ["--seed", str(seed), "--labels-out", str(out)] + ([] if n is None else ["--n", str(n)])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": (proc.stderr or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["labels"] = np.load(out)
    return res


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def measure(
    dims: list[int], repeats: int, seed: int, sklearn: bool, n: int | None = None, bound: bool = False
) -> list[dict]:
    """One row per dimension: medians, same-run ratios, peak RSS and ARI."""
    from sklearn.metrics import adjusted_rand_score

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in dims:
            runs: dict[str, list[dict]] = {"dbscan": [], "dpdbscan": []}
            if bound:
                runs["dpdbscan-bound"] = []
            load = [_load()]
            for _ in range(repeats):
                for method in runs:
                    runs[method].append(_run_child(method, d, seed, n, Path(tmp)))
            load.append(_load())
            sk = _run_child("sklearn", d, seed, n, Path(tmp)) if sklearn else None
            size = int(n or blobs_nd.N.get(d, 100_000))
            row: dict[str, Any] = {"d": d, "n": size, "alpha": blobs_nd.ALPHA[d]}
            row["load_before_after"] = load
            ref = next((r["labels"] for r in runs["dbscan"] if "labels" in r), None)
            for method, rs in list(runs.items()) + ([("sklearn", [sk])] if sk else []):
                ok = [r for r in rs if "fit_s" in r]
                row[method] = {
                    "fit_s": statistics.median(r["fit_s"] for r in ok) if ok else None,
                    "runs_s": [r["fit_s"] for r in ok],
                    "cold_s": statistics.median(r["cold_s"] for r in ok) if ok and ok[0]["cold_s"] else None,
                    "peak_gb": max(r["peak_rss_bytes"] for r in ok) / 1e9 if ok else None,
                    "ari": (
                        float(adjusted_rand_score(ref, ok[-1]["labels"])) if ok and ref is not None else None
                    ),
                    "errors": [r["error"] for r in rs if "error" in r],
                }
            ours, peer = row["dpdbscan"]["fit_s"], row["dbscan"]["fit_s"]
            # same-round ratios: each dpdbscan fit against the dbscan fit just before it
            pairs = [
                a["fit_s"] / b["fit_s"]
                for a, b in zip(runs["dpdbscan"], runs["dbscan"])
                if "fit_s" in a and "fit_s" in b
            ]
            row["ratio"] = statistics.median(pairs) if pairs else None
            if bound:
                for name, base in (("bound_vs_density", "dpdbscan"), ("bound_vs_dbscan", "dbscan")):
                    same = [
                        a["fit_s"] / b["fit_s"]
                        for a, b in zip(runs["dpdbscan-bound"], runs[base])
                        if "fit_s" in a and "fit_s" in b
                    ]
                    row[name] = statistics.median(same) if same else None
            row["pass"] = bool(
                ours is not None
                and peer is not None
                and row["ratio"] <= TIME_RATIO
                and row["dpdbscan"]["peak_gb"] <= PEAK_GB
                and (row["dpdbscan"]["ari"] or 0.0) >= MIN_ARI
            )
            rows.append(row)
            print(_line(row), file=sys.stderr, flush=True)
    return rows


def _fmt(x: float | None, spec: str) -> str:
    return "–" if x is None else format(x, spec)


def _line(row: dict) -> str:
    return (
        f"d={row['d']} n={row['n']:,}: dpdbscan {_fmt(row['dpdbscan']['fit_s'], '.3f')} s, "
        f"dbscan {_fmt(row['dbscan']['fit_s'], '.3f')} s, ratio {_fmt(row['ratio'], '.2f')}, "
        f"ARI {_fmt(row['dpdbscan']['ari'], '.4f')}, load {row['load_before_after']}"
    )


def markdown(rows: list[dict]) -> str:
    head = (
        "| d | n | alpha | dpdbscan fit | `dbscan` fit | ratio (same rounds) | target <= 2x | "
        "dpdbscan first fit of the process | dpdbscan peak | `dbscan` peak | ARI vs `dbscan` | "
        "scikit-learn fit | load (before, after) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = []
    for r in rows:
        ours, peer, sk = r["dpdbscan"], r["dbscan"], r.get("sklearn")
        body.append(
            f"| {r['d']} | {r['n']:,} | {r['alpha']:g} | {_fmt(ours['fit_s'], '.3f')} s | "
            f"{_fmt(peer['fit_s'], '.3f')} s | {_fmt(r['ratio'], '.2f')}x | "
            f"{'met' if r['pass'] else 'not met'} | {_fmt(ours.get('cold_s'), '.3f')} s | "
            f"{_fmt(ours['peak_gb'], '.2f')} GB | "
            f"{_fmt(peer['peak_gb'], '.2f')} GB | {_fmt(ours['ari'], '.4f')} | "
            f"{_fmt(sk['fit_s'], '.2f') + ' s' if sk else '–'} | {' / '.join(r['load_before_after'])} |"
        )
    text = head + "\n".join(body) + "\n"
    if any("dpdbscan-bound" in r for r in rows):
        text += (
            "\n| d | n | bound test fit | density test fit | bound / density (same rounds) | "
            "`dbscan` fit | bound / `dbscan` | bound first fit of the process | bound peak | "
            "ARI bound vs `dbscan` | load (before, after) |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n"
        )
        for r in rows:
            b, ours, peer = r["dpdbscan-bound"], r["dpdbscan"], r["dbscan"]
            text += (
                f"| {r['d']} | {r['n']:,} | {_fmt(b['fit_s'], '.3f')} s | {_fmt(ours['fit_s'], '.3f')} s | "
                f"{_fmt(r['bound_vs_density'], '.2f')}x | {_fmt(peer['fit_s'], '.3f')} s | "
                f"{_fmt(r['bound_vs_dbscan'], '.2f')}x | {_fmt(b.get('cold_s'), '.3f')} s | "
                f"{_fmt(b['peak_gb'], '.2f')} GB | {_fmt(b['ari'], '.4f')} | "
                f"{' / '.join(r['load_before_after'])} |\n"
            )
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="2,3,4,5,6,8")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=None, help="points (default: 1e6 in 2-D, 1e5 above)")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument(
        "--core", choices=("density", "bound"), default="density", help="bound: also fit the bound test"
    )
    ap.add_argument("--json")
    ap.add_argument("--md")
    ap.add_argument("--child", choices=METHODS, help=argparse.SUPPRESS)
    ap.add_argument("--labels-out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    dims = [int(x) for x in a.dims.split(",")]
    if a.child:
        child(a.child, dims[0], a.seed, a.n, a.labels_out)
        return 0
    rows = measure(dims, a.repeats, a.seed, not a.no_sklearn, a.n, a.core == "bound")
    text = markdown(rows)
    print(text)
    if a.md:
        Path(a.md).write_text(text)
    if a.json:
        for r in rows:
            for m in METHODS:
                if m in r and r[m]:
                    r[m].pop("labels", None)
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
