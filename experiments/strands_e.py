"""3-D strands side by side below 20,000 points, after the face join
(issue 28 item 3, the strandsE study; results/scenes/strands-E.md).

Variants of the automatic mode on the library's path (3-D, event level, DP
count 6,000-20,000, where the library already uses the finer base for
2^1.5 x 20,000 points and joins core sub-cells by faces):

* ``today``: the library as it is;
* ``fN`` (N in :data:`FINER`): the base sized for N x that base's points
  (eps x N^(-1/3)), the ladder still capped at 500 cells a neighbourhood
  (three candidates), through :func:`dpdbscan.research.finer_3d_from`.

Tune seeds only until a rule is committed: 70,000-70,999 and the spent
92,000-92,599.

    PYTHONPATH=src:. python -m experiments.strands_e --seeds 92047 --variants today,f8 --out ROWS
    PYTHONPATH=src:. python -m experiments.strands_e --probe --seeds 92548 --variants today,f8 --out ROWS
    PYTHONPATH=src:. python -m experiments.strands_e --cut 92388,92076
    python -m experiments.strands_e --gate ROWS --listing results/scenes/strands-subcell-fresh-list.jsonl
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
from dpdbscan.research import finer_3d_from

from . import scene_bench, scenes
from .strands_fine import FINE_POINTS, LEAST
from .strands_fine import scene as _scene_before

#: this study's fresh held-out seeds, never drawn before it
FRESH_SEEDS = range(92_600, 93_200)
#: the last study's (spent) held-out seeds: tune here
SPENT_SEEDS = range(92_000, 92_600)
#: variant -> (factor on the library's finer base's points, ladder cap)
FINER = {
    "f2.83": (2**1.5, 500),
    "f8": (8.0, 500),
    "f4": (4.0, 500),
    "f8k2": (8.0, 200),
    "f4k2": (4.0, 200),
    "f8c2": (8.0, 250),
    "f8c2b": (8.0, 350),
    "f8w": (8.0, 4000),
}


def scene(seed: int):
    if seed in FRESH_SEEDS or seed in SPENT_SEEDS:
        return scenes.thin_scene(seed)
    return _scene_before(seed)


def block(variant: str) -> contextlib.AbstractContextManager:
    """The research block of ``variant`` (``today``: none)."""
    if variant == "today":
        return contextlib.nullcontext()
    factor, kappa = FINER[variant]
    return finer_3d_from(LEAST, factor * FINE_POINTS, kappa)


def labels_by_cluster(y: np.ndarray, labels: np.ndarray) -> list:
    """Per span (largest first): its points' shares of each true cluster."""
    out = []
    for s in np.unique(labels[labels >= 0]):
        m = labels == s
        u, c = np.unique(y[m], return_counts=True)
        out.append((int(m.sum()), {int(a): int(b) for a, b in zip(u, c, strict=True)}))
    return sorted(out, key=lambda t: -t[0])[:4]


def row_of(seed: int, variant: str) -> dict:
    sc = scene(seed)
    with block(variant), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed)
        model = est.fit(sc.X).spans_
        labels = model.predict(sc.X)
        cpu = time.process_time() - t
    auto = model.auto or {}
    return {
        **sc.row_head(seed, variant),
        "ari": scene_bench.ari(sc.y, labels),
        "spans": int(model.n_spans),
        "eps": float(auto.get("eps", float("nan"))),
        "cands": [float(x) for x in auto.get("eps_candidates", [])],
        "min_samples": auto.get("min_samples"),
        "cells": int(model.histogram.grid.n_cells),
        "split": labels_by_cluster(sc.y, labels),
        "cpu": cpu,
    }


def geometry(sc, eps: float, width: float) -> dict:
    """How far apart the true clusters are against the chosen eps and the
    release's cell width: per pair of clusters, the nearest-point distance
    from each point of the smaller to the larger (p0, p10, p50), in eps and
    in cells."""
    from scipy.spatial import cKDTree

    labs = [int(v) for v in np.unique(sc.y) if v >= 0]
    out = []
    for i in range(len(labs)):
        for j in range(i + 1, len(labs)):
            A, B = sc.X[sc.y == labs[i]], sc.X[sc.y == labs[j]]
            if len(A) > len(B):
                A, B = B, A
            dist, _ = cKDTree(B).query(A)
            q = np.percentile(dist, [0, 10, 50])
            out.append(
                {
                    "pair": [labs[i], labs[j]],
                    "eps": [round(float(x / eps), 3) for x in q],
                    "cells": [round(float(x / width), 3) for x in q],
                }
            )
    return {"pairs": out}


def probe(seed: int, variant: str) -> dict:
    """The fit of ``variant``, then at each candidate eps of its plan the
    core sub-cells joined by faces (and by the eps reach) at every MinPts of
    the ladder, on the release and on the noiseless histogram of the same
    grid (the ceiling of any rule on that grid): best ARI and components
    (strands_subcell.probe_release)."""
    from .strands_subcell import clean_of, min_samples_ladder, probe_release

    sc = scene(seed)
    with block(variant), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = (
            DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed)
            .fit(sc.X)
            .spans_
        )
        hist, ms = m.histogram, min_samples_ladder(m.histogram)
        cands = [float(a) for a in m.auto["eps_candidates"]]
        width = float(np.max(hist.grid.width))
        row = {
            "seed": seed,
            "variant": variant,
            "n": sc.n,
            "k": sc.k,
            "tags": " ".join(sorted(sc.tags)),
            "model": scene_bench.ari(sc.y, m.predict(sc.X)),
            "spans": int(m.n_spans),
            "chosen": float(m.auto["eps"]),
            "cands": cands,
            "cells": int(hist.grid.n_cells),
            "release_width": width,
            "at": {},
        }
        row["geometry"] = geometry(sc, cands[0], width)
        clean = clean_of(hist, sc.X)
        for a in cands:
            noisy = probe_release(sc, hist, m.spec, a, ms)
            cl = probe_release(sc, clean, m.spec, a, ms)
            row["at"][f"{a:.6g}"] = {
                "noisy": {k: noisy[k] for k in ("eps", "face")},
                "clean": {k: cl[k] for k in ("eps", "face")},
            }
    return row


def cut_profile(seed: int, bins: int = 20) -> dict:
    """Where today's fit cuts a pair of strands: the points projected on the
    labelled points' first principal axis, in ``bins`` bins; per bin the
    count of each true cluster, of each span (-1: noise), and the median
    distance from cluster 0's points to cluster 1's (study only: it reads
    the labels)."""
    from scipy.spatial import cKDTree

    sc = scene(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed).fit(sc.X)
        model = m.spans_
    labels = model.predict(sc.X)
    X = sc.X - sc.X.mean(axis=0)
    _, _, vt = np.linalg.svd(X[sc.y >= 0], full_matrices=False)
    t = X @ vt[0]
    edges = np.linspace(t[sc.y >= 0].min(), t[sc.y >= 0].max(), bins + 1)

    def per_bin(mask: np.ndarray) -> list[int]:
        return np.histogram(t[mask], edges)[0].tolist()

    a, b = sc.X[sc.y == 0], sc.X[sc.y == 1]
    dist, _ = cKDTree(b).query(a)
    at = np.clip(np.digitize(t[sc.y == 0], edges) - 1, 0, bins - 1)
    med = [round(float(np.median(dist[at == i])), 6) if (at == i).any() else None for i in range(bins)]
    auto = model.auto or {}
    return {
        "seed": seed,
        "eps": float(auto.get("eps", float("nan"))),
        "min_samples": auto.get("min_samples"),
        "spans": int(model.n_spans),
        "clusters": {int(c): per_bin(sc.y == c) for c in np.unique(sc.y) if c >= 0},
        "span_bins": {int(s): per_bin(labels == s) for s in np.unique(labels)},
        "span_clusters": labels_by_cluster(sc.y, labels),
        "distance_0_to_1": med,
    }


def eta_row(seed: int, eps: float, eta: float) -> dict:
    """A fit at a fixed ``eps`` with MinPts chosen along its ladder
    (``min_samples="auto"``) on a grid of cell width eta eps / (4 sqrt d):
    the same eps read from a coarser or a finer release (how much the finer
    release's noise costs a candidate at that eps)."""
    sc = scene(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = DPDBSCAN(eps, min_samples="auto", eta=eta, epsilon=1.0, bounds=sc.bounds, random_state=seed)
        model = est.fit(sc.X).spans_
        labels = model.predict(sc.X)
        cpu = time.process_time() - t
    return {
        "seed": seed,
        "variant": f"eta{eta:g}",
        "tags": " ".join(sorted(sc.tags)),
        "eps": eps,
        "ari": scene_bench.ari(sc.y, labels),
        "spans": int(model.n_spans),
        "cells": int(model.histogram.grid.n_cells),
        "cpu": cpu,
    }


def hdbscan_row(seed: int) -> dict:
    """Non-private HDBSCAN (min_cluster_size 1% of n) on ``seed``'s scene."""
    sc = scene(seed)
    t = time.process_time()
    a = scene_bench.hdbscan_ari(sc)
    tags = " ".join(sorted(sc.tags))
    return {
        "seed": seed,
        "variant": "hdbscan",
        "d": sc.d,
        "n": sc.n,
        "k": sc.k,
        "tags": tags,
        "ari": a,
        "cpu": time.process_time() - t,
    }


def read(paths: Sequence[Path]) -> dict:
    rows = {}
    for p in paths:
        for line in Path(p).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[(r["seed"], r["variant"])] = r
    return rows


def summary(rows: dict, seeds: Sequence[int], variant: str, base: str = "today") -> dict:
    """Paired (``variant`` - ``base``) ARI over ``seeds`` (those fitted under
    both), better / worse by more than 0.005, families, CPU median ratio."""
    from .spirals_two import FAMILIES

    fitted = [s for s in seeds if (s, variant) in rows and (s, base) in rows]

    def diff(s: int) -> float:
        return float(rows[(s, variant)]["ari"] - rows[(s, base)]["ari"])

    d = np.array([diff(s) for s in fitted]) if fitted else np.zeros(0)
    fams = {}
    for f in FAMILIES:
        fs = [s for s in fitted if f in rows[(s, base)]["tags"].split()]
        if fs:
            fams[f] = (round(float(np.mean([diff(s) for s in fs])), 4), len(fs))
    cpu = [rows[(s, variant)]["cpu"] / max(rows[(s, base)]["cpu"], 1e-9) for s in fitted]
    worst = min(fitted, key=diff) if fitted else None

    def mean_of(v: str) -> float | None:
        xs = [rows[(s, v)]["ari"] for s in fitted if (s, v) in rows]
        return round(float(np.mean(xs)), 4) if xs and len(xs) == len(fitted) else None

    return {
        "scenes": len(seeds),
        "fitted": len(fitted),
        "paired": round(float(d.mean()), 4) if d.size else None,
        "better": int((d > 0.005).sum()),
        "worse": int((d < -0.005).sum()),
        "worst": (worst, round(diff(worst), 4)) if worst is not None else None,
        "families": fams,
        "base_mean": mean_of(base),
        "variant_mean": mean_of(variant),
        "hdbscan_mean": mean_of("hdbscan"),
        "cpu_ratio": round(float(np.median(cpu)), 3) if cpu else None,
    }


def gate(rows: dict, ht: Sequence[int], hg: Sequence[int], variant: str, base: str = "today") -> dict:
    """The gate of results/scenes/strands-E-seeds.md: HT paired >= +0.02 with
    more better than worse; HG no family below -0.01; CPU median ratio on HG
    <= 1.5. (The dev suite's condition is read from its own runs.)"""
    t, g = summary(rows, ht, variant, base), summary(rows, hg, variant, base)
    return {
        "HT": t,
        "HT_passes": t["fitted"] == len(ht)
        and t["paired"] is not None
        and t["paired"] >= 0.02
        and t["better"] > t["worse"],
        "HG": g,
        "HG_passes": g["fitted"] == len(hg) and all(m >= -0.01 for m, _ in g["families"].values()),
        "CPU_passes": g["cpu_ratio"] is not None and g["cpu_ratio"] <= 1.5,
    }


def listing(seeds: Sequence[int]) -> list[dict]:
    """The scenes' descriptions alone (d, n, k, tags; no fit)."""
    out = []
    for seed in seeds:
        sc = scene(seed)
        out.append({"seed": seed, "d": sc.d, "n": sc.n, "k": sc.k, "tags": sorted(sc.tags)})
    return out


def sets_of(listing_rows: Sequence[dict]) -> tuple[list[int], list[int]]:
    """(HT, HG) from a listing: HG every 3-D scene of 6,000-19,999 points;
    HT its scenes with strands or spirals and k <= 3."""
    hg = [r["seed"] for r in listing_rows if r["d"] == 3 and 6_000 <= r["n"] < 20_000]
    ht = [
        r["seed"]
        for r in listing_rows
        if r["seed"] in hg and r["k"] <= 3 and ({"strands", "spirals"} & set(r["tags"]))
    ]
    return ht, hg


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="")
    ap.add_argument("--variants", default="today")
    ap.add_argument("--out", type=Path, help="rows (appended; read with --gate)")
    ap.add_argument("--probe", action="store_true", help="probe instead of fits")
    ap.add_argument("--eta", default="", help="comma-separated etas: fixed-eps fits at --eps-from's eps")
    ap.add_argument("--eps-from", type=Path, help="with --eta: rows whose today eps is used")
    ap.add_argument("--cut", default="", help="comma-separated seeds: where today's fit cuts the pair")
    ap.add_argument("--gate", nargs="*", type=Path, help="rows: the gate of every variant against today")
    ap.add_argument(
        "--listing", type=Path, help="with --gate: the listing the sets come from; alone: write it"
    )
    ap.add_argument("--range", default="", help="with --listing: FIRST,STOP of the seeds to list")
    args = ap.parse_args(argv)
    if args.cut:
        for seed in (int(x) for x in args.cut.split(",") if x):
            print(json.dumps(cut_profile(seed)))
        return 0
    if args.gate is not None:
        rows = read([*([args.out] if args.out else []), *args.gate])
        lst = [json.loads(x) for x in args.listing.read_text().splitlines() if x.strip()]
        ht, hg = sets_of(lst)
        for v in sorted({v for _, v in rows} - {"today", "hdbscan"}):
            print(v, json.dumps(gate(rows, ht, hg, v), indent=1))
        return 0
    if args.listing is not None and args.range:
        a, b = (int(x) for x in args.range.split(","))
        with args.listing.open("w") as fh:
            for r in listing(range(a, b)):
                fh.write(json.dumps(r) + "\n")
        return 0
    assert args.out is not None, "--out is needed"
    if args.eta:
        chosen = read([args.eps_from])
        for seed in (int(x) for x in args.seeds.split(",") if x):
            for eta in (float(e) for e in args.eta.split(",")):
                row = eta_row(seed, float(chosen[(seed, "today")]["eps"]), eta)
                with args.out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)
        return 0
    if args.probe:
        for seed in (int(s) for s in args.seeds.split(",") if s):
            for v in args.variants.split(","):
                row = probe(seed, v)
                with args.out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)
        return 0
    done = set(read([args.out])) if args.out.exists() else set()
    for seed in (int(s) for s in args.seeds.split(",") if s):
        for v in args.variants.split(","):
            if (seed, v) in done:
                continue
            if v == "hdbscan":
                row = hdbscan_row(seed)
            else:
                row = row_of(seed, v)
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(
                f"{seed} {v}: {row['ari']:.3f} spans {row.get('spans')} cpu {row['cpu']:.1f}",
                file=sys.stderr,
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
