"""3-D strands side by side below 20,000 points: does the released core
region reach across the gap between two strands, or do the strands' core
regions meet only through the eps reach of the merge? (issue 28 item 3, the
strandsD study; results/scenes/strands-subcell.md)

Two kinds of measurement, on tune seeds only (70,000-70,999):

* ``--probe``: for each scene, the library's automatic fit (epsilon 1, the
  scene's seed), then at each of the first ``--alphas`` candidate eps of its
  plan the density field on the release's sub-cells (the library's own
  :func:`~dpdbscan.post.coretests.density.density_field`, two sub-cells per
  cell, the model's margin and beta) and, at every MinPts of the ladder, the
  core sub-cells merged three ways: centres < eps apart (the library's
  merge), sharing a face (centres one sub-cell apart), or a face, edge or
  corner. For each: the best adjusted Rand index over the ladder of the
  points in core sub-cells (a point's label: its sub-cell's component among
  those holding at least 1% of the points; every other point -1) and the
  number of such components there; how far the core reaches, as the
  distance from a core sub-cell's centre to the nearest data point, in eps.
  ``--clean`` does the same on the noiseless histogram of the same grid
  (exact counts; not a DP release: the ceiling of any rule on that grid);
  ``--finer`` on the grids of fixed-eps releases at the base eps x 1,
  2^-0.5, 2^-1 and 2^-1.5 (a release at that eps, epsilon 1, and its
  noiseless twin).
* fits of the automatic mode under the variants of
  :data:`VARIANTS` (as :mod:`experiments.strands_fine`): ``today``;
  ``face`` (today's base, core sub-cells merged only where they share a
  face, :func:`merge_within`); ``f2c3``
  (strands-fine's finer base below a count of 20,000); ``f2c3face`` and
  ``f2c3adj``: ``f2c3`` with the spans' core sub-cells merged only where
  they share a face (``face``) or a face, edge or corner (``adj``) instead
  of centres within eps, in the same domain (3-D, DP count 6,000-20,000;
  :func:`merge_within`). Everything else is the library's path.

    PYTHONPATH=src:. python -m experiments.strands_subcell --probe 70281,70166
    PYTHONPATH=src:. python -m experiments.strands_subcell --seeds 70281 \\
        --variants today,f2c3face --out results/scenes/strands-subcell-tune.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.cells.histogram import NoisyHistogram
from dpdbscan.params import sizing
from dpdbscan.plan import autoplan
from dpdbscan.post import merge as _merge
from dpdbscan.post.coretests.density import density_field
from dpdbscan.post.coretests.density import densitytest as _dt
from dpdbscan.post.levelsearch import ladder as min_samples_ladder
from dpdbscan.release.backends import NumpyBackend
from dpdbscan.research import finer_3d_from

from . import scene_bench, scenes
from .spirals_two import FAMILIES, G_SEEDS, T_SEEDS, read
from .strands_fine import FINE_POINTS, LEAST
from .strands_fine import scene as _scene_before

#: this study's fresh held-out seeds (thin scenes), never drawn before it
FRESH_SEEDS = range(92_000, 92_600)

#: squared merge radius in the grid's own widths: centres one width apart
#: (a shared face), or up to sqrt 3 widths (a face, edge or corner)
FACE_R2 = 1.5
ADJ_R2 = 3.5
#: variant -> (finer base's points or None, ladder cap or None, merge r2 or None)
VARIANTS: dict[str, tuple[float | None, int | None, float | None]] = {
    "today": (None, None, None),
    "face": (None, None, FACE_R2),
    "f2c3": (FINE_POINTS, 500, None),
    "f2c3face": (FINE_POINTS, 500, FACE_R2),
    "f2c3adj": (FINE_POINTS, 500, ADJ_R2),
}


@contextlib.contextmanager
def merge_within(least: float, r2: float) -> Iterator[None]:
    """Research: inside the block, where the automatic mode's plan is in 3-D
    with a DP count of at least ``least`` and at most ``autoplan.LARGE_N``
    (public: d and the count; read from the plan's ``finer_n`` call of the
    same fit), the density test's ladder merges core (sub-)cells whose
    centres are less than sqrt(``r2``) of the grid's widths apart (and less
    than eps) instead of less than eps apart. Post-processing only."""
    old_finer, old_merge = sizing.finer_n, _dt.centre_merge
    state = {"on": False}

    def finer(estimate: float | None, d: int = 2) -> float | None:
        state["on"] = d == 3 and estimate is not None and least <= estimate <= autoplan.LARGE_N
        return old_finer(estimate, d)

    def centre_merge(fine: Any, keys: np.ndarray, radius: float | None = None, join: str = "eps") -> Any:
        if not state["on"] or fine.d != 3:
            return old_merge(fine, keys, radius, join)
        eps_r2 = _merge.radius_cells2(fine, fine.eps if radius is None else radius)
        return _merge.SubsetMerge(fine, keys, _merge.centre_offsets(fine.d, min(float(r2), eps_r2)))

    sizing.finer_n, _dt.centre_merge = finer, centre_merge
    try:
        yield
    finally:
        sizing.finer_n, _dt.centre_merge = old_finer, old_merge


def block(variant: str) -> contextlib.AbstractContextManager:
    points, kappa, r2 = VARIANTS[variant]
    stack = contextlib.ExitStack()
    if points is not None:
        stack.enter_context(finer_3d_from(LEAST, points, kappa))
    if r2 is not None:
        # entered last: its finer_n wrapper sees the count, then calls the finer base's
        stack.enter_context(merge_within(LEAST, r2))
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
    return {
        **sc.row_head(seed, variant),
        "ari": scene_bench.ari(sc.y, labels),
        "spans": int(model.n_spans),
        "eps": float(auto.get("eps", float("nan"))),
        "base": float(auto.get("eps_candidates", [float("nan")])[0]),
        "cells": int(model.histogram.grid.n_cells),
        "cpu": cpu,
    }


def scene(seed: int):
    """The scene of ``seed``: a thin scene for the fresh range, else strands-fine's."""
    if seed in FRESH_SEEDS:
        return scenes.thin_scene(seed)
    return _scene_before(seed)


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


# --------------------------------------------------------------------------- #
# the probe


def best_level(sc, field, ms: Sequence[int], r2: float, pk: np.ndarray) -> tuple[float, int | None, int]:
    """Best ARI over the MinPts ladder of the points in core sub-cells of
    ``field``, merged within sqrt(r2) widths; (ARI, MinPts, components)."""
    fine = field.fine
    off = _merge.centre_offsets(fine.d, r2)
    best: tuple[float, int | None, int] = (-1.0, None, 0)
    for m in ms:
        sel = field.core_mask(m)
        if not sel.any():
            break
        keys = field.keys[sel]
        lab = _merge.merge_cells(fine, keys, off)
        idx = np.minimum(np.searchsorted(keys, pk), keys.size - 1)
        pl = np.where(keys[idx] == pk, lab[idx], -1)
        u, c = np.unique(pl[pl >= 0], return_counts=True)
        big = u[c >= 0.01 * sc.n]
        pl = np.where(np.isin(pl, big), pl, -1)
        a = scene_bench.ari(sc.y, pl)
        if a > best[0]:
            best = (a, int(m), int(big.size))
    return best


def clean_of(hist: NoisyHistogram, X: np.ndarray) -> NoisyHistogram:
    """The noiseless histogram on ``hist``'s grid (exact counts; no DP)."""
    grid = hist.grid
    cells = NumpyBackend().count(grid, X)
    values = np.zeros(grid.shape, dtype=np.int64)
    values[tuple(grid.decode(cells.keys).T)] = cells.counts
    return NoisyHistogram(grid, "dense", values, None, -math.inf, "none", math.inf, math.inf, 0.0)


def probe_release(sc, hist: NoisyHistogram, spec, alpha: float, ms: Sequence[int]) -> dict:
    h = hist.on_grid(hist.grid.at_eps(alpha))
    field = density_field(h, ms[0], subcells=2, margin_rule=spec.margin, beta=spec.beta)
    fine = field.fine
    pk = fine.keys_of_points(sc.X)
    out: dict = {}
    for name, r2 in (("eps", _merge.radius_cells2(fine, fine.eps)), ("face", FACE_R2), ("adj", ADJ_R2)):
        out[name] = best_level(sc, field, ms, r2, pk)
    sel = field.core_mask(ms[0])
    if sel.any() and hist.noise != "none":
        from scipy.spatial import cKDTree

        cen = (fine.decode(field.keys[sel]) + 0.5) * fine.width + fine.lower
        dist, _ = cKDTree(sc.X).query(cen)
        out["reach"] = [round(float(x), 3) for x in np.percentile(dist / alpha, [50, 90, 100])]
        out["sub_width_over_eps"] = float(fine.width / alpha)
    return out


def probe(seed: int, alphas: int, finer: bool) -> dict:
    sc = scene(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = (
            DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed)
            .fit(sc.X)
            .spans_
        )
        row = {
            "seed": seed,
            "n": sc.n,
            "k": sc.k,
            "tags": " ".join(sorted(sc.tags)),
            "model": scene_bench.ari(sc.y, m.predict(sc.X)),
            "chosen": float(m.auto["eps"]),
            "alphas": {},
            "finer": {},
        }
        hist, ms = m.histogram, min_samples_ladder(m.histogram)
        for a in m.auto["eps_candidates"][:alphas]:
            row["alphas"][f"{a:.6g}"] = {
                "noisy": probe_release(sc, hist, m.spec, float(a), ms),
                "clean": probe_release(sc, clean_of(hist, sc.X), m.spec, float(a), ms),
            }
        if finer:
            base = float(m.auto["base_eps"])
            for f in (1.0, 2**-0.5, 0.5, 2**-1.5):
                eps = base * f
                mf = (
                    DPDBSCAN(eps, min_samples=5, epsilon=1.0, bounds=sc.bounds, random_state=seed)
                    .fit(sc.X)
                    .spans_
                )
                h = mf.histogram
                msf = min_samples_ladder(h)
                row["finer"][f"{f:.4f}"] = {
                    "cells": int(h.grid.n_cells),
                    "noisy": probe_release(sc, h, mf.spec, eps, msf),
                    "clean": probe_release(sc, clean_of(h, sc.X), mf.spec, eps, msf),
                }
    return row


#: the held-out sets of results/scenes/strands-subcell-seeds.md, fixed before any fit
HT_SEEDS = (
    92012, 92046, 92047, 92076, 92095, 92097, 92174, 92194, 92298, 92302, 92312, 92316, 92375, 92388,
    92442, 92471, 92548, 92549, 92558, 92560, 92586,
)  # fmt: skip
HC_SETS = {
    "heldout": (20004, 20015, 20023, 20024, 20038, 20041, 20044, 20058),
    "close-heldout": (40012, 40013, 40014, 40024, 40028, 40032, 40033),
}


def hg_seeds(listing: Path) -> list[int]:
    """HG: every 3-D scene of 6,000-19,999 points in the fresh listing."""
    rows = [json.loads(line) for line in listing.read_text().splitlines() if line.strip()]
    return [r["seed"] for r in rows if r["d"] == 3 and 6_000 <= r["n"] < 20_000]


def heldout(rows: dict, hg: Sequence[int], variant: str = "f2c3face", base: str = "today") -> dict:
    """The held-out gate of results/scenes/strands-subcell-seeds.md on ``rows``."""

    def diff(s: int) -> float:
        return float(rows[(s, variant)]["ari"] - rows[(s, base)]["ari"])

    def summary(seeds: Sequence[int]) -> dict:
        fitted = [s for s in seeds if (s, variant) in rows and (s, base) in rows]
        d = np.array([diff(s) for s in fitted]) if fitted else np.zeros(0)
        fams = {}
        for f in FAMILIES:
            fs = [s for s in fitted if f in rows[(s, base)]["tags"].split()]
            if fs:
                fams[f] = (round(float(np.mean([diff(s) for s in fs])), 4), len(fs))

        def mean_of(v: str) -> float | None:
            xs = [rows[(s, v)]["ari"] for s in fitted if (s, v) in rows]
            return round(float(np.mean(xs)), 4) if xs and len(xs) == len(fitted) else None

        worst = min(fitted, key=lambda s: diff(s)) if fitted else None
        cpu = [rows[(s, variant)]["cpu"] / max(rows[(s, base)]["cpu"], 1e-9) for s in fitted]
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

    t, g = summary(HT_SEEDS), summary(hg)
    c = {name: summary(seeds) for name, seeds in HC_SETS.items()}
    return {
        "HT": t,
        "HT_passes": t["fitted"] == len(HT_SEEDS) and t["paired"] >= 0.02 and t["better"] > t["worse"],
        "HG": g,
        "HG_passes": g["fitted"] == len(hg)
        and g["paired"] >= -0.005
        and all(m >= -0.01 for m, _ in g["families"].values()),
        "C": c,
        "C_passes": all(r["fitted"] == len(HC_SETS[n]) and r["paired"] >= -0.005 for n, r in c.items()),
        "CPU_passes": g["cpu_ratio"] is not None and g["cpu_ratio"] <= 1.5,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="", help="comma-separated scene seeds (fits)")
    ap.add_argument("--variants", default="today", help="comma-separated variants, and/or hdbscan")
    ap.add_argument("--out", type=Path, help="JSON lines (appended)")
    ap.add_argument("--probe", default="", help="comma-separated tune seeds to probe")
    ap.add_argument("--alphas", type=int, default=2, help="candidate eps probed (from the base)")
    ap.add_argument("--finer", action="store_true", help="also probe finer fixed-eps grids")
    ap.add_argument("--gate", type=Path, nargs="*", help="the tune summary of every variant on these rows")
    ap.add_argument("--heldout", type=Path, nargs="*", help="the held-out gate on these rows")
    ap.add_argument(
        "--listing",
        type=Path,
        default=Path("results/scenes/strands-subcell-fresh-list.jsonl"),
        help="the fresh range's descriptions (HG is read from it)",
    )
    args = ap.parse_args(argv)
    if args.heldout:
        print(json.dumps(heldout(read(args.heldout), hg_seeds(args.listing)), indent=1))
        return 0
    if args.gate:
        from .strands_fine import gate

        rows = read(args.gate)
        for v in sorted({v for _, v in rows} - {"today", "hdbscan"}):
            print(json.dumps(gate(rows, v, T_SEEDS, G_SEEDS)))
        return 0
    assert args.out is not None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.probe:
        for seed in (int(s) for s in args.probe.split(",") if s):
            row = probe(seed, args.alphas, args.finer)
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(json.dumps(row), file=sys.stderr, flush=True)
        return 0
    done = set(read([args.out])) if args.out.exists() else set()
    for seed in (int(s) for s in args.seeds.split(",") if s):
        for v in args.variants.split(","):
            if (seed, v) in done:
                continue
            row = hdbscan_row(seed) if v == "hdbscan" else row_of(seed, v)
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(
                f"{seed} {v}: {row['ari']:.3f} spans {row.get('spans')} cpu {row['cpu']:.1f}", file=sys.stderr
            )
    return 0


__all__ = ["VARIANTS", "merge_within", "row_of", "probe", "FAMILIES"]

if __name__ == "__main__":
    raise SystemExit(main())
