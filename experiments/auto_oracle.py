"""What the automatic mode's selection leaves on the table: the shipped
selection against the best the same release holds (a diagnosis; nothing here
is the library's default).

For one scene's automatic release (epsilon = 1, ``random_state`` = the seed)
it scores, against the scene's labels (ARI, noise its own class):

* ``model``: the automatic mode as it ships (``predict`` on the model);
* ``alpha:<i>``: each candidate alpha's own level selection (one alpha for
  every span, its tree on sub-cells), and ``best_alpha`` the best of them
  (the ceiling of any rule that picks one alpha);
* ``leaf``: the chosen alpha's tree with its leaves instead of excess of mass;
* ``flat:<i>/<j>``: every flat cut of the release, all spans at the i-th alpha
  and the j-th MinPts of the ladder on sub-cells, and ``best_flat`` the best
  of them (the ceiling of any rule that takes one level set of the release).

``best_flat`` or ``best_alpha`` far above ``model`` says the selection is the
limit; both near ``model`` say the release's resolution is (what no
post-processing can buy). Labels: the nearest core sub-cell centre within the
span's alpha, as ``predict`` draws them.

    python -m experiments.auto_oracle --split close-tune --small-2d 80 --n-scenes 30 \
        --out results/scenes/oracle-small --cache results/cache/oracle
"""

from __future__ import annotations

import argparse
import csv
import pickle
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.research import ladder_sweep, levels_ladder, levels_select

from . import scale_study, scene_bench


def fit(sc: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (
            DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=sc.seed)
            .fit(sc.X)
            .spans_
        )


def _partition_spans(p: Any, eps: float, min_mass: float = 0.0) -> list[dict]:
    masses = p.span_masses()
    return [
        {"keys": p.keys[p.labels == s], "eps": eps}
        for s in range(p.n_spans)
        if masses[s] >= max(min_mass, p.min_samples)
    ]


def diagnose(sc: Any, cache: Path | None = None) -> dict:
    """One row: the scores of the module docstring for scene ``sc``; with
    ``cache``, every candidate alpha's selection is kept there
    (``<seed>.pkl``: :func:`experiments.scale_study.selections`' record plus
    the per-alpha scores) for rules scored without refitting."""
    model = fit(sc)
    hist, spec = model.histogram, model.spec
    eps = [float(a) for a in model.auto["eps_candidates"]]
    share_of = model.auto.get("share_of") or ("total" if hist.grid.d >= 3 else "positive")
    ms = levels_ladder(hist)
    row: dict = {
        "seed": sc.seed,
        "d": sc.d,
        "n": sc.n,
        "k": sc.k,
        "tags": " ".join(sorted(sc.tags)),
        "model": scene_bench.ari(sc.y, model.predict(sc.X)),
        "chosen": eps.index(min(eps, key=lambda a: abs(a - model.auto["eps"]))),
        "spans": model.n_spans,
    }
    coarse = ladder_sweep(hist, replace(spec, subcells=1), eps, ms)
    best = (-1.0, "")
    per = {}
    for i, a in enumerate(eps):
        sel = levels_select(hist, spec, eps, alpha=a, coarse=coarse, share_of=share_of)
        per[a] = scale_study._spans(sel)
        v = scene_bench.ari(sc.y, scale_study.labels(sel.grid, per[a], sc.X))
        row[f"alpha:{i}"] = v
        if v > best[0]:
            best = (v, str(i))
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        record = {
            "grid": sel.grid,
            "eps": eps[row["chosen"]],
            "base": per[eps[row["chosen"]]],
            "per": per,
            "candidates": eps,
            "scores": [tuple(x) for x in model.auto.get("eps_scores") or []],
            "row": row,
        }
        (cache / f"{sc.seed}.pkl").write_bytes(pickle.dumps(record))
    row["best_alpha"], row["best_alpha_at"] = best
    chosen = eps[row["chosen"]]
    leaf = levels_select(hist, spec, eps, alpha=chosen, coarse=coarse, share_of=share_of, method="leaf")
    row["leaf"] = scene_bench.ari(sc.y, scale_study.labels(leaf.grid, scale_study._spans(leaf), sc.X))
    fine = ladder_sweep(hist, spec, eps, ms)
    grid = hist.grid.subdivided(int(spec.subcells))
    best = (-1.0, "")
    for (a, m), p in fine.items():
        v = scene_bench.ari(sc.y, scale_study.labels(grid, _partition_spans(p, a), sc.X))
        if v > best[0]:
            best = (v, f"{eps.index(a)}/{ms.index(m)}")
    row["best_flat"], row["best_flat_at"] = best
    return row


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="close-tune", choices=tuple(scene_bench.SPLITS))
    ap.add_argument("--small-2d", type=int, default=None, metavar="FIRST")
    ap.add_argument("--dims", type=int, default=None)
    ap.add_argument("--n-scenes", type=int, default=30)
    ap.add_argument("--seeds", default=None, help="comma-separated seeds instead of a split")
    ap.add_argument("--out", type=Path, required=True, help="CSV of per-scene rows")
    ap.add_argument("--cache", type=Path, default=None, help="keep each scene's selections here")
    args = ap.parse_args(argv)
    if args.seeds:
        seeds = [int(s) for s in args.seeds.split(",")]
    elif args.small_2d is not None:
        seeds = scene_bench.small_2d_seeds(args.split, args.small_2d, args.n_scenes)
    else:
        seeds = scene_bench.split_seeds(args.split, args.n_scenes, args.dims)
    rows = []
    for seed in seeds:
        t0 = time.perf_counter()
        row = diagnose(scene_bench.scene_of(seed), args.cache)
        rows.append(row)
        print(
            f"{seed}: model {row['model']:.3f} best alpha {row['best_alpha']:.3f} ({row['best_alpha_at']} vs "
            f"{row['chosen']}) leaf {row['leaf']:.3f} best flat {row['best_flat']:.3f} "
            f"({time.perf_counter() - t0:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    cols = sorted({k for r in rows for k in r}, key=lambda k: (k.startswith("alpha:"), k))
    with args.out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    for k in ("model", "best_alpha", "leaf", "best_flat"):
        print(f"{k}: {np.mean([r[k] for r in rows]):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
