"""Issue 13, target 1: spans re-parameterised from one release against a
fresh fit, on the dev suite (epsilon = 1, seeds 0-4, ARI of predict labels).

For every set with its hand-picked (alpha, MinPts):

* ``fresh``      - a fit at (alpha, MinPts) (the library's defaults);
* ``from a/F``   - one release at alpha / F (F = 2, 3, 4), then
  ``with_params(eps=alpha, min_samples=MinPts)`` (no further budget).

    python experiments/reparam_accuracy.py                 # F = 2, 3, 4
    python experiments/reparam_accuracy.py --fractions 2 --seeds 0-1
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
from dpdbscan.model import with_params
from experiments import devsuite  # noqa: E402
from experiments.accuracy import scores  # noqa: E402


def fit(ds, seed, eps, m, epsilon=1.0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPDBSCAN(eps, min_samples=m, epsilon=epsilon, bounds=ds.bounds,
                        random_state=seed).fit(ds.X).spans_


def evaluate(sets, seeds, fractions, epsilon=1.0):
    rows = []
    for ds in sets:
        res = {"fresh": []} | {f"from a/{F:g}": [] for F in fractions}
        for seed in seeds:
            res["fresh"].append(scores(ds.y, fit(ds, seed, ds.alpha, ds.min_samples,
                                                 epsilon).predict(ds.X))["ARI"])
            for F in fractions:
                base = fit(ds, seed, ds.alpha / F, ds.min_samples, epsilon)
                model = with_params(base, eps=ds.alpha, min_samples=ds.min_samples)
                res[f"from a/{F:g}"].append(scores(ds.y, model.predict(ds.X))["ARI"])
        rows.append((ds.name, res))
        print(f"  {ds.name}: " + ", ".join(f"{k} {np.mean(v):.3f}" for k, v in res.items()),
              file=sys.stderr, flush=True)
    return rows


def markdown(rows) -> str:
    keys = list(rows[0][1])
    out = ["| set | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for name, res in rows:
        out.append(f"| {name} | " + " | ".join(
            f"{np.mean(res[k]):.3f} ± {np.std(res[k]):.3f}" for k in keys) + " |")
    out.append("| mean | " + " | ".join(
        f"**{np.mean([np.mean(r[k]) for _, r in rows]):.3f}**" for k in keys) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fractions", default="2,3,4")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--sets", default=None)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    a, _, b = args.seeds.partition("-")
    seeds = range(int(a), int(b or a) + 1)
    fractions = [float(x) for x in args.fractions.split(",")]
    sets = devsuite.load_dev(args.sets.split(",") if args.sets else devsuite.DEV_NAMES)
    t0 = time.perf_counter()
    rows = evaluate(sets, seeds, fractions, args.epsilon)
    print(f"ARI (mean ± std over seeds {args.seeds}), epsilon = {args.epsilon:g}: a fresh fit at "
          "the suite's (alpha, MinPts) against one release at alpha / F re-parameterised to it\n")
    print(markdown(rows))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
