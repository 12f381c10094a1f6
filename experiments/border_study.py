"""predict's border in the automatic mode's level selection, as a share of
the chosen eps (a study; the default stays DBSCAN's border rule, share 1).

The selection does not depend on the border: a second fit with the same
seed and ``border=share * eps`` makes the same release and the same spans,
and only the labels of the points beyond the core sub-cells change. On
the small 2-D thin-shape scenes the background noise around a cluster is
labelled noise, as HDBSCAN (no border points) labels it; on the dev suite
the sparse edges of the clusters are the clusters'. The numbers are in
docs/parameters.md section 7.

    python -m experiments.border_study --split close-tune --small-2d 80 --n-scenes 60
    python -m experiments.border_study --suite dev --seeds 0-4
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.metrics import adjusted_rand_score

from dpdbscan import DPDBSCAN

from . import auto_mode, options, scene_bench

SHARES = (0.25, 0.5, 0.71, 1.0)


def border_aris(X, y, bounds, seed: int, shares: Sequence[float], epsilon: float = 1.0) -> dict[float, float]:
    """ARI of the automatic mode's labels of ``X`` with ``border = share x
    eps`` for each share (1: the default), all from the release of ``seed``."""
    out: dict[float, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(min_samples="auto", epsilon=epsilon, bounds=bounds, random_state=seed)
        model = DPDBSCAN("auto", **kw).fit(X).spans_
        for share in shares:
            m = model
            if share != 1.0:
                m = DPDBSCAN("auto", border=share * model.grid.eps, **kw).fit(X).spans_
                if not np.array_equal(m.core_keys, model.core_keys) or m.grid.eps != model.grid.eps:
                    raise RuntimeError("the border changed the spans: the study assumes labels only")
            out[share] = float(adjusted_rand_score(y, m.predict(X)))
    return out


def _report(rows: list[tuple[str, float, dict[float, float]]], shares: Sequence[float]) -> str:
    base = [r[2][1.0] for r in rows] if 1.0 in shares else None
    lines = ["| border | mean ARI | better / worse than eps |", "|---|---|---|"]
    for s in shares:
        v = [r[2][s] for r in rows]
        cmp = ""
        if base is not None:
            up = sum(a > b + 1e-9 for a, b in zip(v, base))
            cmp = f"{up} / {sum(a < b - 1e-9 for a, b in zip(v, base))}"
        lines.append(f"| {s:g} eps | {np.mean(v):.4f} | {cmp} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=("scenes", "dev"), default="scenes")
    ap.add_argument("--split", default="close-tune", choices=tuple(scene_bench.SPLITS))
    ap.add_argument("--small-2d", type=int, default=80, metavar="FIRST")
    ap.add_argument("--n-scenes", type=int, default=60)
    ap.add_argument("--seeds", default="0-4", help="dev suite: the fits' seeds")
    ap.add_argument("--shares", default=",".join(map(str, SHARES)))
    args = ap.parse_args(argv)
    shares = [float(s) for s in args.shares.split(",")]
    rows: list[tuple[str, float, dict[float, float]]] = []
    if args.suite == "scenes":
        for seed in scene_bench.small_2d_seeds(args.split, args.small_2d, args.n_scenes):
            sc = scene_bench.scene_of(seed)
            aris = border_aris(sc.X, sc.y, sc.bounds, seed, shares)
            rows.append((str(seed), float((sc.y < 0).mean()), aris))
    else:
        sets, _ = auto_mode.load("dev", None)
        for ds in sets:
            for seed in options.seed_range(args.seeds):
                rows.append((f"{ds.name}/{seed}", 0.0, border_aris(ds.X, ds.labels, ds.bounds, seed, shares)))
    print(_report(rows, shares))
    if args.suite == "scenes":
        for lo, hi in ((0.0, 0.05), (0.05, 0.1), (0.1, 1.0)):
            part = [r for r in rows if lo <= r[1] < hi]
            if part:
                print(f"\nnoise labels {lo:.0%}-{hi:.0%} of the points ({len(part)} scenes):")
                print(_report(part, shares))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
