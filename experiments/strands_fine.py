"""Release one's resolution in 3-D below a DP count of 20,000: where 3-D
strands side by side still lose to non-private HDBSCAN (issue 28 item 3, the
strands-fine study; results/scenes/strands-fine.md).

Below a count of 20,000 the library keeps the 3-D base for ASSUMED_N points
(about 40 cells a side) and makes no release two; from 20,000 it sizes the
base for 2^1.5 x the count (f2rule) and makes release two (strands2). A
variant here changes, inside research blocks, only what the automatic mode
does in 3-D where its DP count is 6,000-20,000 (public: d and the count),
so every fit is the library's own path, seeded with the scene's seed:

* ``today``: the library as it is;
* ``f2``: the base sized for 2^1.5 x ASSUMED_N points (what a count of
  20,000 gets: eps / sqrt 2, cells x 2.83) with the finer base's eps ladder
  (five candidates): thin3d's ``f2`` below 20,000, for reference (about
  five times the fit's CPU: the density field's sums grow as cells times
  the neighbourhood);
* ``f2c3``: the same base, the ladder capped at 500 cells a neighbourhood
  (three candidates, to 2^1.5 x today's base / sqrt 2 ... 1.4 x today's
  base): the finer resolution at about today's CPU, without the largest
  eps;
* ``n28``: the base sized for sqrt 2 x ASSUMED_N points (cells x 1.41, eps
  x 0.89), today's ladder (four candidates);
* ``n40``: the base sized for 2 x ASSUMED_N points (cells x 2, eps x 0.79),
  today's ladder;
* ``f2c3twof2``: ``f2c3`` with release two (0.1 epsilon, f = 2) from a
  count of 6,000;
* added after the first tune rows (results/scenes/strands-fine-seeds.md,
  amendment): ``f2c3two`` (release two at f = 3), ``n28twof2`` and
  ``n28two`` (``n28`` with release two at f = 2 or 3).

Seeds 91,000-91,599 are this study's fresh held-out range: thin scenes
(:func:`experiments.scenes.thin_scene`, the thin family's own stream, never
drawn before this study), see :func:`scene`.

    PYTHONPATH=src:. python -m experiments.strands_fine --seeds 70151,70166 \\
        --variants today,f2,f2two --out results/scenes/strands-fine-tune.jsonl
    python -m experiments.strands_fine --gate results/scenes/strands-fine-tune.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.research import finer_3d_from, second_release_where

from . import scene_bench, scenes
from .spirals_two import FAMILIES, G_SEEDS, T_SEEDS, read

#: 2^1.5 x ASSUMED_N: the points a count of 20,000 sizes the finer base for
FINE_POINTS = 2**1.5 * 20_000
#: variant -> (base's points or None, the ladder's cap or None, release two's f or None)
VARIANTS: dict[str, tuple[float | None, int | None, int | None]] = {
    "today": (None, None, None),
    "f2": (FINE_POINTS, None, None),
    "f2c3": (FINE_POINTS, 500, None),
    "n28": (2**0.5 * 20_000, 2_000, None),
    "n40": (2.0 * 20_000, 2_000, None),
    "f2c3twof2": (FINE_POINTS, 500, 2),
    "f2c3two": (FINE_POINTS, 500, 3),
    "n28twof2": (2**0.5 * 20_000, 2_000, 2),
    "n28two": (2**0.5 * 20_000, 2_000, 3),
}
LEAST = 6_000
#: this study's fresh held-out seeds (thin scenes)
FRESH_SEEDS = range(91_000, 91_600)


def scene(seed: int):
    """The scene of ``seed``: a thin scene for the fresh range, else
    :func:`experiments.scene_bench.scene_of`'s."""
    if seed in FRESH_SEEDS:
        return scenes.thin_scene(seed)
    return scene_bench.scene_of(seed)


def block(variant: str) -> contextlib.AbstractContextManager:
    points, kappa, fine = VARIANTS[variant]
    stack = contextlib.ExitStack()
    if points is not None:
        stack.enter_context(finer_3d_from(LEAST, points, kappa))
    if fine is not None:
        stack.enter_context(second_release_where({3: LEAST}, fine))
    return stack


def row_of(seed: int, variant: str) -> dict:
    """One scene's automatic fit at epsilon 1 under ``variant``."""
    sc = scene(seed)
    with block(variant), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed)
        model = est.fit(sc.X).spans_
        labels = model.predict(sc.X)
        cpu = time.process_time() - t
    auto = model.auto or {}
    second = auto.get("second") or {}
    return {
        **sc.row_head(seed, variant),
        "ari": scene_bench.ari(sc.y, labels),
        "spans": int(model.n_spans),
        "base": float(auto.get("eps_candidates", [float("nan")])[0]),
        "cells": int(model.histogram.grid.n_cells),
        "second": bool(second),
        "split": list(second.get("split", [])),
        "cpu": cpu,
    }


def hdbscan_row(seed: int) -> dict:
    """Non-private HDBSCAN (min_cluster_size 1% of n) on ``seed``'s scene."""
    sc = scene(seed)
    t = time.process_time()
    a = scene_bench.hdbscan_ari(sc)
    return {
        "seed": seed,
        "variant": "hdbscan",
        "d": sc.d,
        "n": sc.n,
        "k": sc.k,
        "tags": " ".join(sorted(sc.tags)),
        "ari": a,
        "cpu": time.process_time() - t,
    }


def describe(seeds: Sequence[int]) -> list[dict]:
    """The scenes' descriptions only (d, n, k, tags; no fit)."""
    out = []
    for seed in seeds:
        sc = scene(seed)
        out.append({"seed": seed, "d": sc.d, "n": sc.n, "k": sc.k, "tags": sorted(sc.tags)})
    return out


def gate(
    rows: dict, variant: str, t_seeds: Sequence[int], g_seeds: Sequence[int], base: str = "today"
) -> dict:
    """The tune gate (results/scenes/strands-fine-seeds.md) for ``variant``:
    T's and G's paired means over all their scenes (a scene the variant
    cannot change, 2-D or 3-D from 20,000 points, counts 0), families of T
    and G together, the CPU's median ratio over the scenes fitted."""

    def diff(s: int) -> float | None:
        if (s, variant) in rows and (s, base) in rows:
            return rows[(s, variant)]["ari"] - rows[(s, base)]["ari"]
        return None

    def paired(seeds: Sequence[int]) -> tuple[float, int, int, int, int]:
        if not seeds:
            return 0.0, 0, 0, 0, 0
        d = np.array([diff(s) or 0.0 for s in seeds])
        fitted = sum(diff(s) is not None for s in seeds)
        return float(d.mean()), len(seeds), fitted, int((d > 0.005).sum()), int((d < -0.005).sum())

    t, g = paired(t_seeds), paired(g_seeds)
    both = sorted(set(t_seeds) | set(g_seeds))
    fams = {}
    for f in FAMILIES:
        fams[f] = paired([s for s in both if (s, base) in rows and f in rows[(s, base)]["tags"].split()])
    ss = [s for s in both if diff(s) is not None]
    ratio = float(np.median([rows[(s, variant)]["cpu"] / max(rows[(s, base)]["cpu"], 1e-9) for s in ss]))
    ok = (
        t[0] >= 0.02
        and t[3] >= 2 * t[4]
        and g[0] >= -0.005
        and all(m > -0.01 for m, *_ in fams.values())
        and ratio <= 2
    )
    return {"variant": variant, "T": t, "G": g, "families": fams, "cpu_ratio": ratio, "meets": bool(ok)}


#: the held-out sets of results/scenes/strands-fine-seeds.md, fixed before any fit
HT_SEEDS = (
    91021, 91041, 91050, 91067, 91081, 91100, 91112, 91139, 91147, 91153, 91154, 91157, 91166, 91190,
    91215, 91217, 91222, 91229, 91233, 91272, 91275, 91297, 91321, 91324, 91334, 91344, 91348, 91366,
    91369, 91384, 91389, 91404, 91422, 91426, 91479, 91481, 91491, 91495, 91510, 91517, 91531, 91532,
    91535, 91541, 91591,
)  # fmt: skip
HG_SEEDS = (
    91002, 91015, 91021, 91031, 91037, 91041, 91048, 91050, 91070, 91077, 91081, 91085, 91089, 91090,
    91093, 91095, 91111, 91124, 91137, 91141, 91144, 91146, 91148, 91150, 91154, 91155, 91156, 91174,
    91187, 91188, 91198,
)  # fmt: skip
HC_SETS = {
    "heldout": (20004, 20015, 20023, 20024, 20038, 20041, 20044, 20058),
    "close-heldout": (40012, 40013, 40014, 40024, 40028, 40032, 40033),
}


def heldout(rows: dict, variant: str = "f2c3twof2", base: str = "today") -> dict:
    """The held-out gates (A), (B), (C), (E) of results/scenes/strands-fine-seeds.md
    for ``variant`` on ``rows``; a scene with no row of either counts 0 in (A)
    (2-D, which the variant cannot change) and is reported as missing."""

    def diff(s: int) -> float | None:
        if (s, variant) in rows and (s, base) in rows:
            return rows[(s, variant)]["ari"] - rows[(s, base)]["ari"]
        return None

    def summary(seeds: Sequence[int]) -> dict:
        fitted = [s for s in seeds if diff(s) is not None]
        d = np.array([diff(s) or 0.0 for s in seeds]) if seeds else np.zeros(0)
        fams = {}
        for f in FAMILIES:
            fs = [s for s in fitted if f in rows[(s, base)]["tags"].split()]
            if fs:
                fams[f] = (float(np.mean([diff(s) for s in fs])), len(fs))
        worst = min(fitted, key=lambda s: diff(s) or 0.0) if fitted else None

        def mean_of(v: str) -> float | None:
            xs = [rows[(s, v)]["ari"] for s in fitted if (s, v) in rows]
            return float(np.mean(xs)) if xs and len(xs) == len(fitted) else None

        return {
            "scenes": len(seeds),
            "fitted": len(fitted),
            "paired": float(d.mean()) if len(d) else 0.0,
            "better": int((d > 0.005).sum()),
            "worse": int((d < -0.005).sum()),
            "worst": (worst, diff(worst)) if worst is not None else None,
            "families": fams,
            "base_mean": mean_of(base),
            "variant_mean": mean_of(variant),
            "hdbscan_mean": mean_of("hdbscan"),
            "cpu_ratio": float(
                np.median([rows[(s, variant)]["cpu"] / max(rows[(s, base)]["cpu"], 1e-9) for s in fitted])
            )
            if fitted
            else None,
            "split": [s for s in fitted if rows[(s, variant)].get("split")],
        }

    a, b = summary(HT_SEEDS), summary(HG_SEEDS)
    c = {name: summary(seeds) for name, seeds in HC_SETS.items()}
    no_family_down = lambda r: all(m > -0.01 for m, _ in r["families"].values())  # noqa: E731
    return {
        "A": a,
        "A_passes": a["fitted"] == 19
        and a["paired"] >= 0.02
        and a["better"] >= 2 * a["worse"]
        and no_family_down(a),
        "B": b,
        "B_passes": b["fitted"] == 31 and b["paired"] >= -0.005 and no_family_down(b),
        "C": c,
        "C_passes": all(r["fitted"] == len(HC_SETS[n]) and r["paired"] >= -0.005 for n, r in c.items()),
        "E_cpu_ratio": a["cpu_ratio"],
        "E_passes": a["cpu_ratio"] is not None and a["fitted"] == 19 and a["cpu_ratio"] <= 2,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="", help="comma-separated scene seeds")
    ap.add_argument("--variants", default="today", help="comma-separated variants, and/or hdbscan")
    ap.add_argument("--out", type=Path, help="JSON lines, one per (scene, variant) (appended)")
    ap.add_argument("--label", default="", help="write rows of `today` under this name (a tree's)")
    ap.add_argument("--list", metavar="FIRST,COUNT", help="describe seeds FIRST.. (JSON lines; no fit)")
    ap.add_argument("--gate", type=Path, nargs="*", help="the tune gate of every variant on these rows")
    ap.add_argument(
        "--heldout", type=Path, nargs="*", help="the held-out gates (A), (B), (C), (E) on these rows"
    )
    args = ap.parse_args(argv)
    if args.heldout:
        print(json.dumps(heldout(read(args.heldout)), indent=1))
        return 0
    if args.gate:
        rows = read(args.gate)
        for v in sorted({v for _, v in rows} - {"today", "hdbscan"}):
            print(json.dumps(gate(rows, v, T_SEEDS, G_SEEDS)))
        return 0
    if args.list:
        first, count = (int(x) for x in args.list.split(","))
        for r in describe(range(first, first + count)):
            print(json.dumps(r), flush=True)
        return 0
    assert args.out is not None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = set(read([args.out])) if args.out.exists() else set()
    for seed in (int(s) for s in args.seeds.split(",") if s):
        for v in args.variants.split(","):
            name = args.label if (args.label and v == "today") else v
            if (seed, name) in done:
                continue
            row = hdbscan_row(seed) if v == "hdbscan" else row_of(seed, v)
            row["variant"] = name
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(
                f"{seed} {name}: {row['ari']:.3f} split {row.get('split')} cpu {row['cpu']:.1f}",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
