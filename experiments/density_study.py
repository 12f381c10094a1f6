"""The study behind the density test's defaults (docs/density-notes.md).

One noisy histogram per (data set, seed, eta, epsilon) is released and every
post-processing variant is applied to that same release (common random
numbers: the variants differ only in post-processing, never in noise), then
scored by ARI/AMI of the ``predict`` labels against the ground truth, noise
(-1) kept as its own class.

    python experiments/density_study.py --suite dev --seeds 0-4 \\
        --variant base= --variant c3=margin=3.0 --variant k1="subcells=1;eta=3.0"

A variant is ``name=key=value;key=value`` over the keys of :data:`BASE`.
Importable: :func:`run` returns the per-set scores.
"""

from __future__ import annotations

import argparse
import ast
import sys
import warnings
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments import devsuite  # noqa: E402

BASE = dict(margin=1.0, subcells=2, estimate="average", occupancy=0.5, occ_sigmas=2.0, border=1.0,
            beta=0.1, guard=True,
            eta=4.0, merge=1.0)


def parse_variant(text: str):
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


def labels_for(hist, ds, v):
    """predict labels of ``ds.X`` under variant ``v`` from the release ``hist``."""
    from dpdbscan.model.predict import predict_spans, span_regions
    from dpdbscan.post.coretests.density import density_field
    from dpdbscan.post.merge import merge_centres

    dc = density_field(hist, ds.min_samples, subcells=v["subcells"], margin_rule=v["margin"],
                       beta=v["beta"], estimate=v["estimate"], occupancy=v["occupancy"],
                       guard=v["guard"], occupancy_sigmas=v["occ_sigmas"]).core(ds.min_samples)
    lab = merge_centres(dc.fine, dc.keys, v["merge"] * ds.alpha)
    rkeys, rlab = span_regions(dc.fine, dc.keys, lab, v["border"] * ds.alpha, to="centres")
    return predict_spans(dc.fine, rkeys, rlab, ds.X)


THETA = None  # sparse releases: theta (None = the library's default)


def release(ds, seed, eta, epsilon, histogram="dense"):
    from dpdbscan.cells.grid import Grid
    from dpdbscan.pipeline import MechanismConfig, release_histogram
    from dpdbscan.release.samplers.integers import SeededSource

    grid = Grid(*ds.bounds, ds.alpha, eta)
    cfg = MechanismConfig(epsilon=epsilon, histogram=histogram, noise="discrete", theta=THETA)
    return release_histogram(grid, ds.X, cfg, SeededSource(seed))


def run(datasets, variants: dict, seeds, epsilon=1.0, histogram="dense", metric="ARI"):
    """{set: {variant: {"ARI": [...], "AMI": [...]}}}."""
    from sklearn.metrics import adjusted_mutual_info_score, adjusted_rand_score

    out = {}
    for ds in datasets:
        res = {name: {"ARI": [], "AMI": []} for name in variants}
        for seed in seeds:
            hists = {}
            for name, v in variants.items():
                key = v["eta"]
                if key not in hists:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        hists[key] = release(ds, seed, v["eta"], epsilon, histogram)
                lab = labels_for(hists[key], ds, v)
                res[name]["ARI"].append(adjusted_rand_score(ds.y, lab))
                res[name]["AMI"].append(adjusted_mutual_info_score(ds.y, lab))
        out[ds.name] = res
        print(f"{ds.name:12s} " + " ".join(f"{np.mean(res[n][metric]):6.3f}" for n in variants),
              flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="dev", help="dev, paper, or both")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--histogram", default="dense")
    ap.add_argument("--theta", type=float, default=None, help="theta of sparse releases")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--metric", default="ARI", choices=["ARI", "AMI"])
    ap.add_argument("--json", default=None, help="write {set: {variant: scores}} here")
    args = ap.parse_args(argv)
    global THETA
    THETA = args.theta
    a, _, b = args.seeds.partition("-")
    seeds = range(int(a), int(b or a) + 1)
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
    res = run(sets, variants, seeds, args.epsilon, args.histogram, args.metric)
    if args.json:
        import json

        Path(args.json).write_text(json.dumps({"variants": {k: {kk: str(vv) for kk, vv in v.items()}
                                                            for k, v in variants.items()},
                                               "epsilon": args.epsilon, "seeds": list(seeds),
                                               "histogram": args.histogram, "scores": res},
                                              indent=1))
    groups = {"dev": [d.name for d in sets if d.name in devsuite.DEV_NAMES],
              "paper": [d.name for d in sets if d.name not in devsuite.DEV_NAMES]}
    for g, names in groups.items():
        if names:
            print(f"{'mean ' + g:12s} " + " ".join(
                f"{np.mean([np.mean(res[s][n][args.metric]) for s in names]):6.3f}" for n in variants))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
