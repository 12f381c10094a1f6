"""The development suite (14 labelled sets) side by side with the paper's sets.

For every one of the 14 labelled sets in ``<data>/dev/`` (``params.json`` and
MANIFEST.md there: 20,000 points each, the (alpha, MinPts) at which
non-private DBSCAN does best, public bounds), at epsilon = 1, prints mean +-
std ARI and AMI over seeds 0-4 of

* ``density``  - the library's defaults (``core="density"``);
* ``bound``    - the previous defaults (``core="bound"``, the noisy upper bound);
* ``paper``    - the paper's procedure (``experiments.paper.PROCEDURE``,
  continuous Laplace noise);
* ``DP-KMeans`` - diffprivlib's k-means given the true k (same bounds, epsilon);
* ``DBSCAN``   - scikit-learn at the params.json (alpha, MinPts), non-private.

Labels come from ``predict`` (DP methods) or ``labels_``; noise -1 is its own
class. Every set is reported, never a selection.

    python -m experiments.devsuite                    # the dev suite
    python -m experiments.devsuite --paper            # the paper's six sets, 10 seeds
    python -m experiments.devsuite --sweep            # epsilon sweep: Moons, t4, t5, t7
    python -m experiments.devsuite --sets banana,r15 --seeds 0-2 --methods density,DBSCAN

Importable: :func:`load_dev`, :func:`load_paper`, :func:`evaluate`,
:func:`sweep`, :func:`markdown`.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import baselines, data, datasets, options, paper
from .accuracy import ScoreTable, fmt, scores

DEV_NAMES = (
    "banana",
    "cassini",
    "dartboard1",
    "donut3",
    "lsun",
    "target",
    "twodiamonds",
    "s_set1",
    "sizes3",
    "2sp2glob",
    "hepta",
    "engytime",
    "r15",
    "curves1",
)
PAPER_NAMES = datasets.SYNTHETIC + datasets.CLUTO
SWEEP_NAMES = ("moons", "cluto_t4", "cluto_t5", "cluto_t7")
SWEEP_EPSILONS = (0.5, 1.0, 2.0, 5.0)

DP_SETTINGS: dict[str, dict[str, Any]] = {
    "density": {},
    "bound": {"core": "bound"},
    "paper": {**paper.PROCEDURE, "noise": "laplace"},
}
METHODS = tuple(DP_SETTINGS) + ("DP-KMeans", "DBSCAN")


DEV_SOURCE = "the development suite (shared/data/dev/MANIFEST.md)"


def load_dev(names: Iterable[str] = DEV_NAMES) -> list[datasets.Dataset]:
    """The dev sets as :class:`experiments.datasets.Dataset` (public bounds and
    (alpha, MinPts) from params.json)."""
    import pandas as pd

    params = json.loads(data.data_path("dev/params.json", DEV_SOURCE).read_text())
    out = []
    for name in names:
        p = params[name]
        df = pd.read_csv(data.data_path(f"dev/{name}.csv.gz", DEV_SOURCE))
        cols = [c for c in df.columns if c != "label"]
        X = df[cols].to_numpy(dtype=np.float64)
        y = df["label"].to_numpy().astype(np.int64)
        bounds = (np.asarray(p["lower"], dtype=np.float64), np.asarray(p["upper"], dtype=np.float64))
        out.append(
            datasets.Dataset(name, X, y, float(p["alpha"]), int(p["min_samples"]), bounds, int(p["clusters"]))
        )
    return out


def load_paper(names: Iterable[str] = PAPER_NAMES) -> list[datasets.Dataset]:
    return [datasets.load(n) for n in names]


def _fit_labels(
    ds: datasets.Dataset, seed: int, epsilon: float, settings: dict[str, Any]
) -> tuple[np.ndarray, int]:
    model = baselines.dp_dbscan(ds, seed, epsilon=epsilon, **settings)
    return model.predict(ds.X), model.spans_.n_spans


def evaluate(
    sets: Sequence[datasets.Dataset],
    seeds: Iterable[int] = range(5),
    epsilon: float = 1.0,
    methods: Sequence[str] = METHODS,
) -> list[dict]:
    """One row per set: {"name", "alpha", "min_samples", "scores": {method:
    {"ARI": [...], "AMI": [...]}}, "spans": {method: [...]}, "seconds"}."""
    rows = []
    for ds in sets:
        t0 = time.perf_counter()
        table = ScoreTable(ds.labels, methods)
        add = table.add
        spans: dict[str, list[int]] = {m: [] for m in methods if m in DP_SETTINGS}

        for seed in seeds:
            for m in methods:
                if m in DP_SETTINGS:
                    lab, n = _fit_labels(ds, seed, epsilon, DP_SETTINGS[m])
                    spans[m].append(n)
                    add(m, lab)
                elif m == "DP-KMeans":
                    add(m, baselines.dp_kmeans(ds.X, ds.k, ds.bounds, epsilon, seed).labels_)
        if "DBSCAN" in methods:
            add("DBSCAN", baselines.dbscan(ds.X, ds.alpha, ds.min_samples).labels_)
        rows.append(
            {
                "name": ds.name,
                "alpha": ds.alpha,
                "min_samples": ds.min_samples,
                "scores": table.scores,
                "spans": spans,
                "seconds": time.perf_counter() - t0,
            }
        )
        print(
            f"  {ds.name}: " + ", ".join(f"{m} {np.mean(table.scores[m]['ARI']):.2f}" for m in methods),
            file=sys.stderr,
            flush=True,
        )
    return rows


def sweep(
    sets: Sequence[datasets.Dataset],
    epsilons: Sequence[float] = SWEEP_EPSILONS,
    seeds: Iterable[int] = range(5),
    methods: Sequence[str] = ("density", "bound"),
) -> dict[str, dict[str, Any]]:
    """{set: {method: {epsilon: [ARI per seed]}}} plus "DBSCAN" (one value)."""
    out = {}
    for ds in sets:
        y = ds.labels
        res: dict[str, Any] = {m: {e: [] for e in epsilons} for m in methods}
        for e in epsilons:
            for seed in seeds:
                for m in methods:
                    lab, _ = _fit_labels(ds, seed, e, DP_SETTINGS[m])
                    res[m][e].append(scores(y, lab)["ARI"])
        res["DBSCAN"] = scores(y, baselines.dbscan(ds.X, ds.alpha, ds.min_samples).labels_)["ARI"]
        out[ds.name] = res
        print(f"  {ds.name} done", file=sys.stderr, flush=True)
    return out


# --------------------------------------------------------------------------- #
# tables


def markdown(rows: list[dict], methods: Sequence[str] = METHODS) -> str:
    out = []
    for metric in ("ARI", "AMI"):
        head = ["set", "(α, MinPts)"] + list(methods) + [f"spans {m}" for m in methods if m in DP_SETTINGS]
        out.append(f"**{metric}**\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for r in rows:
            cells = [r["name"], f"({r['alpha']:.4g}, {r['min_samples']})"]
            cells += [fmt(r["scores"][m][metric]) for m in methods]
            cells += [f"{np.mean(r['spans'][m]):.1f}" for m in methods if m in DP_SETTINGS]
            out.append("| " + " | ".join(cells) + " |")
        means = [f"**{np.mean([np.mean(r['scores'][m][metric]) for r in rows]):.3f}**" for m in methods]
        out.append("| mean | | " + " | ".join(means) + " |" + " |" * sum(m in DP_SETTINGS for m in methods))
        out.append("")
    if "DP-KMeans" in methods:
        for m in methods:
            if m in DP_SETTINGS:
                wins = sum(
                    np.mean(r["scores"][m]["ARI"]) >= np.mean(r["scores"]["DP-KMeans"]["ARI"]) for r in rows
                )
                out.append(f"- {m}: ARI >= DP-KMeans (true k) on {wins} of {len(rows)} sets")
        out.append("")
    return "\n".join(out)


def sweep_markdown(res: dict[str, dict[str, Any]], epsilons: Sequence[float] = SWEEP_EPSILONS) -> str:
    out = [
        "| set | method | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " | DBSCAN |",
        "|---|---|" + "---|" * (len(epsilons) + 1),
    ]
    for name, r in res.items():
        for m, per_eps in r.items():
            if m == "DBSCAN":
                continue
            cells = [fmt(per_eps[e]) for e in epsilons]
            out.append(f"| {name} | {m} | " + " | ".join(cells) + f" | {r['DBSCAN']:.2f} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = options.parser(__doc__)
    ap.add_argument("--paper", action="store_true", help="the paper's six sets (10 seeds)")
    ap.add_argument("--sweep", action="store_true", help="epsilon sweep on Moons, t4, t5, t7")
    ap.add_argument("--sets", default=None, help="comma-separated subset of the chosen suite")
    ap.add_argument("--seeds", default=None, help="'0-4' (dev, sweep) / '0-9' (paper)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    bad = set(methods) - set(METHODS)
    if bad:
        raise SystemExit(f"unknown methods {sorted(bad)}; choose from {METHODS}")
    warnings.simplefilter("ignore", FutureWarning)
    t0 = time.perf_counter()
    payload: object
    try:
        if args.sweep:
            sets = load_paper([datasets.canonical(n) for n in options.names(args.sets, SWEEP_NAMES)])
            dp = tuple(m for m in methods if m in DP_SETTINGS) or ("density",)
            res = sweep(sets, seeds=options.seed_range(args.seeds or "0-4"), methods=dp)
            print(f"ARI (mean ± std over seeds {args.seeds or '0-4'}) against epsilon\n")
            print(sweep_markdown(res))
            payload = res
        else:
            if args.paper:
                sets = load_paper([datasets.canonical(n) for n in options.names(args.sets, PAPER_NAMES)])
                seeds = options.seed_range(args.seeds or "0-9")
            else:
                sets = load_dev(options.names(args.sets, DEV_NAMES))
                seeds = options.seed_range(args.seeds or "0-4")
            rows = evaluate(sets, seeds, args.epsilon, methods)
            print(
                f"epsilon = {args.epsilon:g}, seeds {seeds.start}-{seeds.stop - 1}, "
                "labels from predict, noise its own class\n"
            )
            print(markdown(rows, methods))
            payload = rows
    except data.MissingDataError as exc:
        raise SystemExit(str(exc)) from None
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(payload, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
