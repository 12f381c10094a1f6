"""Release two at person level (docs/privacy.md 4.10; the ship2 study,
results/scenes/strands-person.md): the automatic mode on person-level 3-D
scenes with and without release two, next to non-private HDBSCAN.

A person-level scene is a thin 3-D scene of 20,000 points or more
(:func:`experiments.scene_bench.scene_of`) whose points are grouped into
units the way traces are: each cluster's points, in order along its own
main axis, cut into runs of ``U`` consecutive points (one unit: a stretch
of one strand or curve, as a trajectory passes along it), and the noise
points cut into runs of ``U`` in random order. ``U`` is drawn per scene,
log-uniform in :data:`POINTS_PER_UNIT`, from the scene seed's own stream
(:data:`TAG`), and unit ids are shuffled. Each scene is fitted twice with
the same ``random_state`` (the seed): release two off (today's release)
and on (``dpdbscan.research.person_second``), at epsilon 1, delta 1e-6,
k = :data:`K` cells per unit, m = 1 point per cell, Gaussian noise.

    PYTHONPATH=src:. python -m experiments.strands_person --split tune \
        --out results/scenes/strands-person-tune.jsonl
    PYTHONPATH=src:. python -m experiments.strands_person --summary results/scenes/strands-person-tune.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpdbscan import DPDBSCAN, research

from . import scene_bench, scenes

#: The person-level scenes' stream (units, U), apart from the scenes' own.
TAG = 28_0002
#: U, points per unit: log-uniform in this range (integers).
POINTS_PER_UNIT = (2.0, 20.0)
#: Cells per unit (max_cells_per_unit) and points per cell.
K = 4
M = 1
EPSILON = 1.0
DELTA = 1e-6
#: Tune: strands2's tune scenes (experiments.strands_split.T_SEEDS, 3-D, n >= 20,000).
TUNE: tuple[int, ...] = (70025, 70085, 70125, 70167, 70202, 70219, 70274, 70279, 70287, 70324, 70352)
TUNE += (70355, 70380, 70410, 70430, 70467, 70531, 70532, 70538, 70598, 70603, 70626, 70685, 70767)
TUNE += (70907, 70992)
#: Held out: the shipped event-level study's held-out scenes (strands-ship.md),
#: run once after the gate below is committed.
HELDOUT: tuple[int, ...] = (80005, 80007, 80012, 80038, 80039, 80041, 80043, 80046, 80055, 80066, 80071)
HELDOUT += (80087, 80090, 80095, 80107, 80133, 80134, 80151, 80152, 80168, 80181, 80189)
#: The gate (written before any held-out run): ship release two at person
#: level only if, on tune and then on held out, (1) the paired mean ARI gain
#: (on - off) over the scenes with strands is at least GATE_STRANDS, (2) the
#: paired mean over all scenes is at least GATE_ALL, and (3) no scene
#: without strands has a span split.
GATE_STRANDS = 0.02
GATE_ALL = -0.005


def person_scene(seed: int) -> tuple[scenes.Scene, np.ndarray, int]:
    """The scene of ``seed``, its points' units and U (module docstring)."""
    sc = scene_bench.scene_of(seed)
    rng = np.random.default_rng(np.random.SeedSequence([TAG, int(seed)]))
    lo, hi = POINTS_PER_UNIT
    u = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
    unit = np.empty(sc.n, dtype=np.int64)
    nxt = 0
    for lab in np.unique(sc.y):
        idx = np.flatnonzero(sc.y == lab)
        if lab < 0:
            idx = rng.permutation(idx)
        else:
            P = sc.X[idx] - sc.X[idx].mean(axis=0)
            axis = np.linalg.eigh(P.T @ P)[1][:, -1]
            idx = idx[np.argsort(P @ axis, kind="stable")]
        runs = np.arange(idx.size) // u
        unit[idx] = nxt + runs
        nxt += int(runs.max()) + 1 if idx.size else 0
    ids = rng.permutation(nxt)
    return sc, ids[unit], u


def fit_labels(
    sc: scenes.Scene, units: np.ndarray, on: bool, share: float | None = None, fine: int | None = None
) -> tuple[np.ndarray, dict, float]:
    """One person-level automatic fit (release two ``on`` or off, at its
    ``share`` of rho and ``fine`` f, None: the library's): the labels
    ``predict`` gives every point, release two's record, CPU s."""
    with warnings.catch_warnings(), research.person_second(on, share, fine):
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = DPDBSCAN(
            "auto",
            min_samples="auto",
            epsilon=EPSILON,
            delta=DELTA,
            bounds=sc.bounds,
            max_cells_per_unit=K,
            max_points_per_cell=M,
            random_state=sc.seed,
        )
        model = est.fit(sc.X, units=units).spans_
        labels = model.predict(sc.X)
        cpu = time.process_time() - t
    return labels, dict((model.auto or {}).get("second") or {}), cpu


def variant_rows(seed: int, variants: Sequence[str]) -> dict:
    """The scene's fits at other (share, f) of release two ("0.2/2": 0.2 of
    rho, f = 2): per variant its ARI and the spans it split."""
    sc, units, u = person_scene(seed)
    out: dict = {"seed": seed, "strands": any(t.startswith("strands") for t in sc.tags), "variants": {}}
    for v in variants:
        share, fine = v.split("/")
        labels, rec, _ = fit_labels(sc, units, True, float(share), int(fine))
        out["variants"][v] = {"ari": scene_bench.ari(sc.y, labels), "split": list(rec.get("split", []))}
    return out


def row_of(seed: int, hdbscan: bool) -> dict:
    sc, units, u = person_scene(seed)
    off, _, cpu_off = fit_labels(sc, units, False)
    on, rec, cpu_on = fit_labels(sc, units, True)
    return {
        "seed": seed,
        "n": sc.n,
        "tags": " ".join(sorted(sc.tags)),
        "strands": any(t.startswith("strands") for t in sc.tags),
        "U": u,
        "units": int(np.unique(units).size),
        "ari_off": scene_bench.ari(sc.y, off),
        "ari_on": scene_bench.ari(sc.y, on),
        "split": list(rec.get("split", [])),
        "fine_cells": rec.get("n_fine_cells"),
        "sd2": float(np.sqrt(rec["sigma2"])) if "sigma2" in rec else None,
        "spans_selected": len(rec.get("spans", [])),
        "hdbscan": scene_bench.hdbscan_ari(sc) if hdbscan else None,
        "cpu_off": cpu_off,
        "cpu_on": cpu_on,
    }


def two_strands(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two parallel sine strands 0.04 apart along x in [0.3, 0.7] (n points
    each, cross-section sd 0.003) and n / 8 uniform points in the unit cube
    (tests/post/test_sidebyside.py's scene)."""
    rng = np.random.default_rng(seed)
    parts, y = [], []
    for j in range(2):
        x = rng.uniform(0.3, 0.7, n)
        c = np.stack([x, 0.5 + 0.04 * np.sin(3 * np.pi * x) + (j - 0.5) * 0.04, np.full(n, 0.5)], axis=1)
        parts.append(c + rng.normal(0, 0.003, c.shape))
        y += [j] * n
    parts.append(rng.uniform(0, 1, (n // 8, 3)))
    y += [-1] * (n // 8)
    return np.concatenate(parts), np.array(y)


#: Where release two works at person level: points per strand and U.
REGIME = ((12_000, 1), (12_000, 3), (50_000, 1), (50_000, 3), (50_000, 10))


def regime_rows(seed: int = 2) -> list[dict]:
    """Two strands side by side (:func:`two_strands`) with units of U
    consecutive points along each strand: ARI with release two off and on."""
    out = []
    for n, u in REGIME:
        X, y = two_strands(seed, n)
        order = np.lexsort((X[:, 0], y))
        units = np.empty(y.size, dtype=np.int64)
        units[order] = np.arange(y.size) // u
        sc = scenes.Scene(
            seed,
            X,
            y,
            np.zeros(3),
            np.ones(3),
            (np.zeros(3), np.ones(3)),
            2,
            0.0,
            0.0,
            0,
            0.0,
            (),
            frozenset(),
        )
        off, _, _ = fit_labels(sc, units, False)
        on, rec, _ = fit_labels(sc, units, True)
        out.append(
            {
                "per_strand": n,
                "U": u,
                "units": int(np.unique(units).size),
                "ari_off": scene_bench.ari(y, off),
                "ari_on": scene_bench.ari(y, on),
                "split": list(rec.get("split", [])),
            }
        )
    return out


def summary(rows: list[dict]) -> str:
    """The gate's numbers and a table of the rows."""
    d = np.array([r["ari_on"] - r["ari_off"] for r in rows])
    st = np.array([r["strands"] for r in rows])
    bad = [r["seed"] for r in rows if not r["strands"] and r["split"]]
    lines = [
        "| seed | tags | n | U | units | off | on | split | HDBSCAN |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        h = "" if r["hdbscan"] is None else f"{r['hdbscan']:.3f}"
        lines.append(
            f"| {r['seed']} | {r['tags']} | {r['n']:,} | {r['U']} | {r['units']:,} | {r['ari_off']:.3f} | "
            f"{r['ari_on']:.3f} | {len(r['split'])} | {h} |"
        )
    gain_s = float(d[st].mean()) if st.any() else float("nan")
    gain_all = float(d.mean()) if d.size else float("nan")
    ok = gain_s >= GATE_STRANDS and gain_all >= GATE_ALL and not bad
    hd = [r["hdbscan"] for r in rows if r["hdbscan"] is not None]
    lines += [
        "",
        f"scenes {len(rows)} ({int(st.sum())} with strands); mean ARI off "
        f"{np.mean([r['ari_off'] for r in rows]):.3f}, on {np.mean([r['ari_on'] for r in rows]):.3f}"
        + (f", HDBSCAN {np.mean(hd):.3f}" if hd else ""),
        f"paired gain, strands: {gain_s:+.3f} (gate >= {GATE_STRANDS}); all: {gain_all:+.3f} "
        f"(gate >= {GATE_ALL}); better/worse by 0.005: {int((d > 0.005).sum())}/{int((d < -0.005).sum())}",
        f"scenes without strands split: {bad or 'none'}; "
        f"spans split in all: {sum(len(r['split']) for r in rows)}",
        f"gate: {'met' if ok else 'NOT met'}",
    ]
    return "\n".join(lines)


def variant_summary(rows: list[dict], vrows: list[dict]) -> str:
    """Each variant's gate numbers against the rows' release one alone (off)."""
    off = {r["seed"]: r for r in rows}
    names = sorted({v for vr in vrows for v in vr["variants"]})
    lines = ["| share/f | strands gain | all gain | better/worse | spans split | non-strand scenes split |"]
    lines.append("|---|---|---|---|---|---|")
    for v in names:
        got = [
            (off[vr["seed"]], vr["variants"][v]) for vr in vrows if vr["seed"] in off and v in vr["variants"]
        ]
        d = np.array([x["ari"] - r["ari_off"] for r, x in got])
        st = np.array([r["strands"] for r, _ in got])
        bad = [r["seed"] for r, x in got if not r["strands"] and x["split"]]
        lines.append(
            f"| {v} | {d[st].mean() if st.any() else float('nan'):+.3f} | {d.mean():+.3f} | "
            f"{int((d > 0.005).sum())}/{int((d < -0.005).sum())} | {sum(len(x['split']) for _, x in got)} | "
            f"{bad or 'none'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("tune", "heldout"), default="tune")
    ap.add_argument("--seeds", default="", help="comma-separated seeds (default: the split's)")
    ap.add_argument("--no-hdbscan", action="store_true", help="skip the HDBSCAN reference")
    ap.add_argument(
        "--variants", default="", help="comma-separated share/f of release two to fit instead (0.2/2,...)"
    )
    ap.add_argument("--out", type=Path, help="JSON lines, one per scene (appended)")
    ap.add_argument("--regime", action="store_true", help="two strands at U and n (REGIME) instead")
    ap.add_argument("--summary", type=Path, help="print the summary of a JSON lines file and stop")
    ap.add_argument("--variants-of", type=Path, help="with --summary: the --variants rows to compare")
    args = ap.parse_args(argv)
    if args.summary:
        rows = [json.loads(line) for line in args.summary.read_text().splitlines() if line.strip()]
        print(summary(rows))
        if args.variants_of:
            vrows = [json.loads(line) for line in args.variants_of.read_text().splitlines() if line.strip()]
            print()
            print(variant_summary(rows, vrows))
        return 0
    if args.out is None:
        ap.error("--out is required")
    seeds = [int(s) for s in args.seeds.split(",") if s] or list(TUNE if args.split == "tune" else HELDOUT)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.regime:
        for row in regime_rows():
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(row, file=sys.stderr)
        return 0
    variants = [v for v in args.variants.split(",") if v]
    for seed in seeds:
        if variants:
            with args.out.open("a") as fh:
                fh.write(json.dumps(variant_rows(seed, variants)) + "\n")
            continue
        row = row_of(seed, not args.no_hdbscan)
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(
            f"{seed}: U {row['U']} off {row['ari_off']:.3f} on {row['ari_on']:.3f} split {row['split']} "
            f"cpu {row['cpu_off']:.1f}/{row['cpu_on']:.1f}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
