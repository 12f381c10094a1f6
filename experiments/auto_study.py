"""The design study of the automatic mode: one release per (set, seed) at a
base resolution, spans over a grid of (alpha, MinPts), their ARI against the
labels (for study only; the automatic mode never sees labels) and the
label-free statistics a criterion could use. Writes a JSON file for analysis.

    python -m experiments.auto_study --base 256 --out /tmp/auto_study.json
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN, Grid
from dpdbscan.research import (
    AUTO_MAX_CELLS,
    auto_base_eps,
    auto_choose,
    ladder_stability,
    ladder_sweep,
    predict_spans,
    span_parents,
)

from . import datasets, devsuite, options
from .accuracy import scores


def _labels(grid: Grid, p: Any, P: np.ndarray, radius: float) -> np.ndarray:
    """predict's nearest-centre rule via a k-d tree (ties aside; study only)."""
    from scipy.spatial import cKDTree

    if p.keys.size == 0:
        return np.full(P.shape[0], -1)
    centres = grid.cell_centres(grid.decode(p.keys))
    dist, idx = cKDTree(centres).query(P, k=1, distance_upper_bound=radius * (1 + 1e-9))
    out = np.full(P.shape[0], -1)
    ok = np.isfinite(dist)
    out[ok] = p.labels[idx[ok]]
    # a point inside a core sub-cell takes that sub-cell's span (predict's shortcut)
    inside = predict_spans(grid, p.keys, p.labels, P)
    return np.where(inside >= 0, inside, out)


def base_alpha(
    lower: np.ndarray, upper: np.ndarray, per_diag: float, max_cells: int = AUTO_MAX_CELLS
) -> float:
    """The study's base: diagonal / per_diag, coarser if the cap asks for it."""
    return max(math.dist(lower, upper) / per_diag, auto_base_eps(lower, upper, 4.0, max_cells))


def run(
    ds: datasets.Dataset,
    seed: int,
    per_diag: float,
    factors: Sequence[float],
    ms: Sequence[int],
    epsilon: float = 1.0,
    n_score: int = 5000,
    max_cells: int = AUTO_MAX_CELLS,
) -> dict[str, Any]:
    """Every (alpha, MinPts) of the study's grid from one release of ``ds``."""
    lo, hi = ds.bounds
    a0 = base_alpha(lo, hi, per_diag, max_cells)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(a0, min_samples=ms[0], epsilon=epsilon, bounds=ds.bounds, random_state=seed).fit(ds.X)
    model = est.spans_
    hist = model.histogram
    alphas = [a0 * f for f in factors if hist.grid.at_alpha(a0 * f).kappa <= 2_000]
    t0 = time.perf_counter()
    table = ladder_sweep(hist, model.spec, alphas, ms)
    t_sweep = time.perf_counter() - t0
    stab = ladder_stability(table)
    choice = auto_choose(table, hist.grid.d)
    score_of = {(r[0], r[1]): (r[2], r[3]) for r in choice["scores"]}
    common = hist.grid.subdivided(model.spec.subcells)
    rows = []
    # labels of a fixed random subsample (ARI to about +-0.01; study only)
    pick = np.random.default_rng(12345).choice(ds.X.shape[0], min(ds.X.shape[0], n_score), replace=False)
    P = ds.X[pick]
    for (a, m), p in sorted(table.items()):
        lab = _labels(common, p, P, a)
        sc = scores(ds.labels[pick], lab)
        masses = p.span_masses()
        rows.append(
            {
                "alpha": a,
                "factor": a / a0,
                "m": m,
                "ARI": sc["ARI"],
                "AMI": sc["AMI"],
                "n_spans": p.n_spans,
                "core_mass": p.core_mass,
                "sig_spans": int((masses >= m).sum()),
                "masses": sorted(masses.tolist(), reverse=True)[:30],
                "threshold": p.threshold,
                "stability": stab[(a, m)],
                "flat": score_of[(a, m)][0],
                "flat_clusters": score_of[(a, m)][1],
            }
        )
    # the level trees: per alpha, per MinPts level, every span's mass and parent
    trees = {}
    for alpha in alphas:
        levels = [table[(x, m)] for x, m in sorted(table) if x == alpha]
        tree = []
        for j, p in enumerate(levels):
            par = span_parents(levels[j - 1], p).tolist() if j else [-1] * p.n_spans
            tree.append({"m": p.min_samples, "mass": p.span_masses().tolist(), "parent": par})
        trees[repr(alpha / a0)] = tree
    total = float(np.maximum(hist.values, 0).sum())
    return {
        "name": ds.name,
        "seed": seed,
        "alpha0": a0,
        "alpha_hand": ds.alpha,
        "m_hand": ds.min_samples,
        "total_mass": total,
        "rows": rows,
        "trees": trees,
        "t_sweep": t_sweep,
        "choice": [choice["alpha"], choice["min_samples"]],
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = options.parser(__doc__)
    ap.add_argument("--base", type=float, default=256.0, help="alpha0 = diagonal / BASE")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--sets", default=None)
    ap.add_argument("--factors", default="1,1.41,2,2.83,4,5.66,8,11.3,16")
    ap.add_argument("--max-cells", type=int, default=AUTO_MAX_CELLS)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    seeds = options.seed_range(args.seeds)
    factors = [float(x) for x in args.factors.split(",")]
    ms = sorted({int(round(5 * 2 ** (i / 2))) for i in range(0, 17)})
    sets = devsuite.load_dev(options.names(args.sets, devsuite.DEV_NAMES))
    out: list[dict[str, Any]] = []
    for ds in sets:
        for seed in seeds:
            args.out.write_text(json.dumps(out))
            t0 = time.perf_counter()
            r = run(ds, seed, args.base, factors, ms, max_cells=args.max_cells)
            best = max(r["rows"], key=lambda x: x["ARI"])
            ch = next(x for x in r["rows"] if (x["alpha"], x["m"]) == tuple(r["choice"]))
            print(
                f"{ds.name} seed {seed}: best ARI {best['ARI']:.2f} at f={best['factor']:.2f} "
                f"m={best['m']}; flat choice f={ch['factor']:.2f} m={ch['m']} ARI "
                f"{ch['ARI']:.2f} ({time.perf_counter() - t0:.1f} s, sweep {r['t_sweep']:.1f} s)",
                flush=True,
            )
            out.append(r)
    args.out.write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
