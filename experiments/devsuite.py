"""The development suite of issue 12, side by side with the paper's sets.

For every one of the 14 labelled sets in ``<data>/dev/`` (``params.json`` and
MANIFEST.md there: 20,000 points each, the (alpha, MinPts) at which
non-private DBSCAN does best, public bounds), at epsilon = 1, prints mean +-
std ARI and AMI over seeds 0-4 of

* ``density``  - the library's defaults (``core="density"``);
* ``bound``    - the previous defaults (``core="bound"``, the noisy upper bound);
* ``paper``    - the paper's procedure (``experiments/paper.py`` PROCEDURE,
  continuous Laplace noise);
* ``DP-KMeans`` - diffprivlib's k-means given the true k (same bounds, epsilon);
* ``DBSCAN``   - scikit-learn at the params.json (alpha, MinPts), non-private.

Labels come from ``predict`` (DP methods) or ``labels_``; noise -1 is its own
class. Every set is reported, never a selection.

    python experiments/devsuite.py                    # the dev suite
    python experiments/devsuite.py --paper            # the paper's six sets, 10 seeds
    python experiments/devsuite.py --sweep            # epsilon sweep: Moons, t4, t5, t7
    python experiments/devsuite.py --sets banana,r15 --seeds 0-2 --methods density,DBSCAN

Importable: :func:`load_dev`, :func:`load_paper`, :func:`evaluate`,
:func:`sweep`, :func:`markdown`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments import baselines, datasets, paper  # noqa: E402
from experiments.accuracy import mean_std, scores  # noqa: E402

DEV_NAMES = ("banana", "cassini", "dartboard1", "donut3", "lsun", "target", "twodiamonds",
             "s_set1", "sizes3", "2sp2glob", "hepta", "engytime", "r15", "curves1")
PAPER_NAMES = datasets.SYNTHETIC + datasets.CLUTO
SWEEP_NAMES = ("moons", "cluto_t4", "cluto_t5", "cluto_t7")
SWEEP_EPSILONS = (0.5, 1.0, 2.0, 5.0)

DP_SETTINGS = {
    "density": {},
    "bound": {"core": "bound"},
    "paper": {**paper.PROCEDURE, "noise": "laplace"},
}
METHODS = tuple(DP_SETTINGS) + ("DP-KMeans", "DBSCAN")


def dev_dir() -> Path:
    return datasets.data_dir() / "dev"


def load_dev(names=DEV_NAMES) -> list:
    """The dev sets as :class:`experiments.datasets.Dataset` (public bounds and
    (alpha, MinPts) from params.json)."""
    import pandas as pd

    params = json.loads((dev_dir() / "params.json").read_text())
    out = []
    for name in names:
        p = params[name]
        path = dev_dir() / f"{name}.csv.gz"
        if not path.is_file():
            raise datasets.MissingDataError(f"dev set {name!r} needs {path}")
        df = pd.read_csv(path)
        cols = [c for c in df.columns if c != "label"]
        X = df[cols].to_numpy(dtype=np.float64)
        y = df["label"].to_numpy().astype(np.int64)
        bounds = (np.asarray(p["lower"], dtype=np.float64), np.asarray(p["upper"], dtype=np.float64))
        out.append(datasets.Dataset(name, X, y, float(p["alpha"]), int(p["min_samples"]), bounds,
                                    int(p["clusters"])))
    return out


def load_paper(names=PAPER_NAMES) -> list:
    return [datasets.load(n) for n in names]


def _fit_labels(ds, seed, epsilon, settings):
    model = baselines.dp_dbscan(ds, seed, epsilon=epsilon, **settings)
    return model.predict(ds.X), model.spans_.n_spans


def evaluate(sets, seeds=range(5), epsilon=1.0, methods=METHODS) -> list[dict]:
    """One row per set: {"name", "alpha", "min_samples", "scores": {method:
    {"ARI": [...], "AMI": [...]}}, "spans": {method: [...]}, "seconds"}."""
    rows = []
    for ds in sets:
        t0 = time.perf_counter()
        sc = {m: {"ARI": [], "AMI": []} for m in methods}
        spans = {m: [] for m in methods if m in DP_SETTINGS}

        def add(m, labels):
            for key, val in scores(ds.y, labels).items():
                sc[m][key].append(val)

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
        rows.append({"name": ds.name, "alpha": ds.alpha, "min_samples": ds.min_samples,
                     "scores": sc, "spans": spans, "seconds": time.perf_counter() - t0})
        print(f"  {ds.name}: " + ", ".join(
            f"{m} {np.mean(sc[m]['ARI']):.2f}" for m in methods), file=sys.stderr, flush=True)
    return rows


def sweep(sets, epsilons=SWEEP_EPSILONS, seeds=range(5), methods=("density", "bound")) -> dict:
    """{set: {method: {epsilon: [ARI per seed]}}} plus "DBSCAN" (one value)."""
    out = {}
    for ds in sets:
        res = {m: {e: [] for e in epsilons} for m in methods}
        for e in epsilons:
            for seed in seeds:
                for m in methods:
                    lab, _ = _fit_labels(ds, seed, e, DP_SETTINGS[m])
                    res[m][e].append(scores(ds.y, lab)["ARI"])
        res["DBSCAN"] = scores(ds.y, baselines.dbscan(ds.X, ds.alpha, ds.min_samples).labels_)["ARI"]
        out[ds.name] = res
        print(f"  {ds.name} done", file=sys.stderr, flush=True)
    return out


# --------------------------------------------------------------------------- #
# tables


def _fmt(values) -> str:
    if not len(values):
        return "-"
    m, s = mean_std(values)
    return f"{m:.2f}" if len(values) == 1 else f"{m:.2f} ± {s:.2f}"


def markdown(rows, methods=METHODS) -> str:
    out = []
    for metric in ("ARI", "AMI"):
        head = ["set", "(α, MinPts)"] + list(methods) + [f"spans {m}" for m in methods
                                                          if m in DP_SETTINGS]
        out.append(f"**{metric}**\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for r in rows:
            cells = [r["name"], f"({r['alpha']:.4g}, {r['min_samples']})"]
            cells += [_fmt(r["scores"][m][metric]) for m in methods]
            cells += [f"{np.mean(r['spans'][m]):.1f}" for m in methods if m in DP_SETTINGS]
            out.append("| " + " | ".join(cells) + " |")
        means = [f"**{np.mean([np.mean(r['scores'][m][metric]) for r in rows]):.3f}**"
                 for m in methods]
        out.append("| mean | | " + " | ".join(means) + " |" + " |" * sum(
            m in DP_SETTINGS for m in methods))
        out.append("")
    if "DP-KMeans" in methods:
        for m in methods:
            if m in DP_SETTINGS:
                wins = sum(np.mean(r["scores"][m]["ARI"]) >= np.mean(r["scores"]["DP-KMeans"]["ARI"])
                           for r in rows)
                out.append(f"- {m}: ARI >= DP-KMeans (true k) on {wins} of {len(rows)} sets")
        out.append("")
    return "\n".join(out)


def sweep_markdown(res, epsilons=SWEEP_EPSILONS) -> str:
    out = ["| set | method | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " | DBSCAN |",
           "|---|---|" + "---|" * (len(epsilons) + 1)]
    for name, r in res.items():
        for m, per_eps in r.items():
            if m == "DBSCAN":
                continue
            cells = [_fmt(per_eps[e]) for e in epsilons]
            out.append(f"| {name} | {m} | " + " | ".join(cells) + f" | {r['DBSCAN']:.2f} |")
    return "\n".join(out)


def _range(text: str):
    a, _, b = text.partition("-")
    return range(int(a), int(b or a) + 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    try:
        if args.sweep:
            names = args.sets.split(",") if args.sets else SWEEP_NAMES
            sets = load_paper([datasets.canonical(n) for n in names])
            dp = tuple(m for m in methods if m in DP_SETTINGS) or ("density",)
            res = sweep(sets, seeds=_range(args.seeds or "0-4"), methods=dp)
            print(f"ARI (mean ± std over seeds {args.seeds or '0-4'}) against epsilon\n")
            print(sweep_markdown(res))
            payload = res
        else:
            if args.paper:
                names = args.sets.split(",") if args.sets else PAPER_NAMES
                sets = load_paper([datasets.canonical(n) for n in names])
                seeds = _range(args.seeds or "0-9")
            else:
                sets = load_dev(args.sets.split(",") if args.sets else DEV_NAMES)
                seeds = _range(args.seeds or "0-4")
            rows = evaluate(sets, seeds, args.epsilon, methods)
            print(f"epsilon = {args.epsilon:g}, seeds {seeds.start}-{seeds.stop - 1}, "
                  "labels from predict, noise its own class\n")
            print(markdown(rows, methods))
            payload = rows
    except datasets.MissingDataError as exc:
        raise SystemExit(str(exc))
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(payload, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
