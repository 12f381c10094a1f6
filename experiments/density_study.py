"""The study behind the density test's defaults (docs/density-notes.md).

One noisy histogram per (data set, seed, eta, epsilon) is released and every
post-processing variant is applied to that same release (common random
numbers: the variants differ only in post-processing, never in noise), then
scored by ARI/AMI of the ``predict`` labels against the ground truth, noise
(-1) kept as its own class.

    python -m experiments.density_study --suite dev --seeds 0-4 \\
        --variant base= --variant c3=margin=3.0 --variant k1="subcells=1;eta=3.0"

A variant is ``name=key=value;key=value`` over the keys of :data:`BASE`.
Importable: :func:`run` returns the per-set scores.
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan.research import density_field, merge_centres, predict_spans, span_regions

from . import baselines, datasets, devsuite, options
from .accuracy import scores

BASE: dict[str, Any] = dict(
    margin=1.0,
    subcells=2,
    estimate="average",
    occupancy=0.5,
    occ_sigmas=2.0,
    border=1.0,
    beta=0.1,
    guard=True,
    eta=4.0,
    merge=1.0,
)


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    name, _, rest = text.partition("=")
    kw = {}
    for part in filter(None, rest.split(";")):
        key, _, raw = part.partition("=")
        try:
            kw[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            kw[key] = raw
    unknown = set(kw) - set(BASE)
    if unknown:
        raise SystemExit(f"unknown keys {sorted(unknown)}; choose from {sorted(BASE)}")
    return name, {**BASE, **kw}


def labels_for(hist: Any, ds: datasets.Dataset, v: dict[str, Any]) -> np.ndarray:
    """predict labels of ``ds.X`` under variant ``v`` from the release ``hist``."""
    dc = density_field(
        hist,
        ds.min_samples,
        subcells=v["subcells"],
        margin_rule=v["margin"],
        beta=v["beta"],
        estimate=v["estimate"],
        occupancy=v["occupancy"],
        guard=v["guard"],
        occupancy_sigmas=v["occ_sigmas"],
    ).core(ds.min_samples)
    lab = merge_centres(dc.fine, dc.keys, v["merge"] * ds.alpha)
    rkeys, rlab = span_regions(dc.fine, dc.keys, lab, v["border"] * ds.alpha, to="centres")
    return predict_spans(dc.fine, rkeys, rlab, ds.X)


def release(
    ds: datasets.Dataset,
    seed: int,
    eta: float,
    epsilon: float,
    histogram: str = "dense",
    theta: float | None = None,
) -> Any:
    """The seeded noisy histogram of ``ds`` (the estimator's release; its
    spans are not used). ``theta=None``: the library's default."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = baselines.dp_dbscan(ds, seed, eta=eta, epsilon=epsilon, histogram=histogram, theta=theta)
    return model.histogram_


def run(
    sets: Sequence[datasets.Dataset],
    variants: dict[str, dict[str, Any]],
    seeds: Iterable[int],
    epsilon: float = 1.0,
    histogram: str = "dense",
    metric: str = "ARI",
    theta: float | None = None,
) -> dict[str, dict[str, dict[str, list[float]]]]:
    """{set: {variant: {"ARI": [...], "AMI": [...]}}}."""
    out = {}
    for ds in sets:
        res: dict[str, dict[str, list[float]]] = {name: {"ARI": [], "AMI": []} for name in variants}
        for seed in seeds:
            hists: dict[float, Any] = {}
            for name, v in variants.items():
                key = v["eta"]
                if key not in hists:
                    hists[key] = release(ds, seed, v["eta"], epsilon, histogram, theta)
                for k, val in scores(ds.labels, labels_for(hists[key], ds, v)).items():
                    res[name][k].append(val)
        out[ds.name] = res
        print(f"{ds.name:12s} " + " ".join(f"{np.mean(res[n][metric]):6.3f}" for n in variants), flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = options.parser(__doc__)
    ap.add_argument("--suite", default="dev", help="dev, paper, or both")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--histogram", default="dense")
    ap.add_argument("--theta", type=float, default=None, help="theta of sparse releases")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--metric", default="ARI", choices=["ARI", "AMI"])
    ap.add_argument("--json", default=None, help="write {set: {variant: scores}} here")
    args = ap.parse_args(argv)
    seeds = options.seed_range(args.seeds)
    variants = dict(parse_variant(t) for t in (args.variant or ["base="]))
    sets = []
    if args.suite in ("dev", "both"):
        sets += devsuite.load_dev()
    if args.suite in ("paper", "both"):
        sets += devsuite.load_paper()
    print(f"epsilon={args.epsilon:g}, seeds {args.seeds}, histogram {args.histogram}")
    for name, v in variants.items():
        print(f"  {name}: {v}")
    print(f"{'set':12s} " + " ".join(f"{n[:6]:>6s}" for n in variants))
    res = run(sets, variants, seeds, args.epsilon, args.histogram, args.metric, args.theta)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "variants": {k: {kk: str(vv) for kk, vv in v.items()} for k, v in variants.items()},
                    "epsilon": args.epsilon,
                    "seeds": list(seeds),
                    "histogram": args.histogram,
                    "scores": res,
                },
                indent=1,
            )
        )
    groups = {
        "dev": [d.name for d in sets if d.name in devsuite.DEV_NAMES],
        "paper": [d.name for d in sets if d.name not in devsuite.DEV_NAMES],
    }
    for g, names in groups.items():
        if names:
            print(
                f"{'mean ' + g:12s} "
                + " ".join(
                    f"{np.mean([np.mean(res[s][n][args.metric]) for s in names]):6.3f}" for n in variants
                )
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
