"""Spans re-parameterised from one release against a fresh fit, on the dev
suite (epsilon = 1, seeds 0-4, ARI of predict labels; docs/parameters.md).

For every set with its hand-picked (alpha, MinPts):

* ``fresh``      - a fit at (alpha, MinPts) (the library's defaults);
* ``from a/F``   - one release at alpha / F (F = 2, 3, 4), then
  ``with_params(eps=alpha, min_samples=MinPts)`` (no further budget).

    python -m experiments.reparam_accuracy                 # F = 2, 3, 4
    python -m experiments.reparam_accuracy --fractions 2 --seeds 0-1
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Iterable, Sequence

import numpy as np

from dpdbscan import DPDBSCAN, SpanModel, with_params

from . import datasets, devsuite, options
from .accuracy import scores

Row = tuple[str, dict[str, list[float]]]


def fit(ds: datasets.Dataset, seed: int, eps: float, m: int, epsilon: float = 1.0) -> SpanModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (
            DPDBSCAN(eps, min_samples=m, epsilon=epsilon, bounds=ds.bounds, random_state=seed)
            .fit(ds.X)
            .spans_
        )


def evaluate(
    sets: Sequence[datasets.Dataset], seeds: Iterable[int], fractions: Sequence[float], epsilon: float = 1.0
) -> list[Row]:
    rows = []
    for ds in sets:
        y = ds.labels
        res: dict[str, list[float]] = {"fresh": []}
        res.update({f"from a/{F:g}": [] for F in fractions})
        for seed in seeds:
            res["fresh"].append(
                scores(y, fit(ds, seed, ds.alpha, ds.min_samples, epsilon).predict(ds.X))["ARI"]
            )
            for F in fractions:
                base = fit(ds, seed, ds.alpha / F, ds.min_samples, epsilon)
                model = with_params(base, eps=ds.alpha, min_samples=ds.min_samples)
                res[f"from a/{F:g}"].append(scores(y, model.predict(ds.X))["ARI"])
        rows.append((ds.name, res))
        print(
            f"  {ds.name}: " + ", ".join(f"{k} {np.mean(v):.3f}" for k, v in res.items()),
            file=sys.stderr,
            flush=True,
        )
    return rows


def markdown(rows: list[Row]) -> str:
    keys = list(rows[0][1])
    out = ["| set | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for name, res in rows:
        out.append(
            f"| {name} | " + " | ".join(f"{np.mean(res[k]):.3f} ± {np.std(res[k]):.3f}" for k in keys) + " |"
        )
    out.append(
        "| mean | " + " | ".join(f"**{np.mean([np.mean(r[k]) for _, r in rows]):.3f}**" for k in keys) + " |"
    )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = options.parser(__doc__)
    ap.add_argument("--fractions", default="2,3,4")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--sets", default=None)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    seeds = options.seed_range(args.seeds)
    fractions = [float(x) for x in args.fractions.split(",")]
    sets = devsuite.load_dev(options.names(args.sets, devsuite.DEV_NAMES))
    t0 = time.perf_counter()
    rows = evaluate(sets, seeds, fractions, args.epsilon)
    print(
        f"ARI (mean ± std over seeds {args.seeds}), epsilon = {args.epsilon:g}: a fresh fit at "
        "the suite's (alpha, MinPts) against one release at alpha / F re-parameterised to it\n"
    )
    print(markdown(rows))
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
