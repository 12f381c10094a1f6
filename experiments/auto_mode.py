"""Issue 13, the automatic mode on labelled data: ``DPDBSCAN(eps="auto",
min_samples="auto", epsilon=1, bounds=...)`` given only the public bounds and
epsilon, beside the library's defaults at each set's hand-picked (alpha,
MinPts) and DP-KMeans given the true k (ARI of predict labels, noise its own
class, seeds 0-4).

    python experiments/auto_mode.py                  # the dev suite
    python experiments/auto_mode.py --suite paper    # the paper's six sets (held out)
    python experiments/auto_mode.py --suite generalization   # scikit-learn generators (held out)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpdbscan import DPDBSCAN  # noqa: E402
from experiments import baselines, devsuite  # noqa: E402
from experiments.accuracy import scores  # noqa: E402

EPSILON: dict[str, float] = {}  # per-set budgets (the generalization cases)


def auto_fit(ds, seed, epsilon=1.0, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est = DPDBSCAN("auto", min_samples="auto", epsilon=epsilon, bounds=ds.bounds,
                       random_state=seed, **kw).fit(ds.X)
        return est.spans_, time.perf_counter() - t0


def fixed_fit(ds, seed, epsilon=1.0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPDBSCAN(ds.alpha, min_samples=ds.min_samples, epsilon=epsilon, bounds=ds.bounds,
                        random_state=seed).fit(ds.X).spans_


def evaluate(sets, seeds, epsilon=1.0, kmeans=True, guess_n=False):
    rows = []
    for ds in sets:
        r = {"name": ds.name, "auto": [], "fixed": [], "kmeans": [], "chosen": [], "seconds": []}
        epsilon_ds = EPSILON.get(ds.name, epsilon)
        for seed in seeds:
            epsilon = epsilon_ds
            extra = {"n_expected": float(ds.X.shape[0])} if guess_n else {}
            model, sec = auto_fit(ds, seed, epsilon, **extra)
            r["auto"].append(scores(ds.y, model.predict(ds.X))["ARI"])
            r["chosen"].append((model.grid.alpha, model.spec.min_samples, model.n_spans))
            r["seconds"].append(sec)
            r["fixed"].append(scores(ds.y, fixed_fit(ds, seed, epsilon).predict(ds.X))["ARI"])
            if kmeans:
                lab = baselines.dp_kmeans(ds.X, ds.k, ds.bounds, epsilon, seed).labels_
                r["kmeans"].append(scores(ds.y, lab)["ARI"])
        rows.append(r)
        print(f"  {ds.name}: auto {np.mean(r['auto']):.3f}, hand-picked {np.mean(r['fixed']):.3f}"
              + (f", DP-KMeans {np.mean(r['kmeans']):.3f}" if kmeans else ""),
              file=sys.stderr, flush=True)
    return rows


def markdown(rows, sets) -> str:
    hand = {ds.name: (ds.alpha, ds.min_samples) for ds in sets}
    out = ["| set | auto ARI | chosen (alpha, MinPts), spans (seed 0) | hand-picked ARI "
           "(alpha, MinPts) | DP-KMeans (true k) | auto >= DP-KMeans | auto s |",
           "|---|---|---|---|---|---|---|"]
    wins = 0
    for r in rows:
        a, f = np.mean(r["auto"]), np.mean(r["fixed"])
        k = np.mean(r["kmeans"]) if r["kmeans"] else float("nan")
        win = a >= k
        wins += bool(win)
        al, m, n = r["chosen"][0]
        ha, hm = hand[r["name"]]
        out.append(f"| {r['name']} | {a:.3f} ± {np.std(r['auto']):.3f} | ({al:.4g}, {m}), {n} | "
                   f"{f:.3f} ({ha:.4g}, {hm}) | {k:.3f} | {'yes' if win else 'no'} | "
                   f"{np.median(r['seconds']):.2f} |")
    mean = lambda key: np.mean([np.mean(r[key]) for r in rows])  # noqa: E731
    km = mean("kmeans") if rows[0]["kmeans"] else float("nan")
    out.append(f"| mean | **{mean('auto'):.3f}** | | **{mean('fixed'):.3f}** | **{km:.3f}** | "
               f"{wins} of {len(rows)} | |")
    return "\n".join(out)


def _range(text: str):
    a, _, b = text.partition("-")
    return range(int(a), int(b or a) + 1)


def load(suite: str, names=None):
    if suite == "dev":
        return devsuite.load_dev(names or devsuite.DEV_NAMES)
    if suite == "paper":
        return devsuite.load_paper(names or devsuite.PAPER_NAMES)
    from experiments import datasets, generalization

    out = []
    for name, X, y, eps in generalization.cases():
        _, alpha, minpts = generalization._dbscan_params(X, y)
        k = len(set(y.tolist()) - {-1})
        out.append(datasets.Dataset(name, X, y, alpha, minpts,
                                    (np.full(2, -4.0), np.full(2, 4.0)), k))
        EPSILON[name] = eps  # the case's own budget
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="dev", choices=("dev", "paper", "generalization"))
    ap.add_argument("--sets", default=None)
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--points-per-cell", type=float, default=None,
                    help="study only: override auto.POINTS_PER_CELL")
    ap.add_argument("--no-kmeans", action="store_true")
    ap.add_argument("--guess-n", action="store_true",
                    help="pass the set's size as the user's public guess n_expected")
    args = ap.parse_args(argv)
    if args.points_per_cell:
        from dpdbscan.post import auto

        auto.POINTS_PER_CELL = args.points_per_cell
    sets = load(args.suite, args.sets.split(",") if args.sets else None)
    seeds = _range(args.seeds)
    t0 = time.perf_counter()
    rows = evaluate(sets, seeds, args.epsilon, kmeans=not args.no_kmeans, guess_n=args.guess_n)
    print(f"automatic mode, {args.suite} sets, epsilon = {args.epsilon:g}, seeds {args.seeds}, "
          "ARI of predict labels (noise its own class)"
          + (", n_expected = the set's size" if args.guess_n else ", given only bounds and epsilon")
          + "\n")
    print(markdown(rows, sets))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
