"""Release two of the automatic mode beyond 3-D counts of 20,000: where
interleaved spirals and thin curves side by side still lose to non-private
HDBSCAN (issue 28 item 3, the spirals study; results/scenes/spirals-two.md).

The library's release two (:mod:`dpdbscan.post.sidebyside`, the strands2
study) is dimension-free code behind one public test,
:func:`dpdbscan.plan.autoplan.second_applies` (d = 3, Laplace noise, a DP
count of at least 20,000). A variant here replaces that test in this process
only, so every fit is the library's own path (release one at 0.9 epsilon,
release two at 0.1, the keep rule, ``predict``), seeded with the scene's
seed as every scene benchmark is:

* ``today``: the library as it is;
* ``2d20k``: also in 2-D where the DP count is at least 20,000;
* ``2d6k``: also in 2-D from a DP count of 6,000;
* ``3d6k``: in 3-D from a DP count of 6,000 (instead of 20,000);
* ``all6k``: 2-D and 3-D from a DP count of 6,000;
* ``3d6kf2``: 3-D from a DP count of 6,000 with f = 2 (8 fine cells a
  cell, not 27) where the variant applies (added after the first tune rows:
  at f = 3 release two's fine counts in 3-D below 20,000 points sit under 2
  noise sd; run only on scenes below a count of 20,000, where f = 2 is the
  variant's f);
* ``2d6kf2``: the same in 2-D (4 fine cells a cell).

The test reads only d, the noise's family and the DP count (a release
already spent): public, as the shipped one.

    PYTHONPATH=src:. python -m experiments.spirals_two --seeds 70025,70085 \\
        --variants today,2d6k --out results/scenes/spirals-two-tune.jsonl
    python -m experiments.spirals_two --list thin-tune --first 0 --count 400   # T and G seeds
    python -m experiments.spirals_two --summary results/scenes/spirals-two-tune.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.plan import autoplan

from . import scene_bench

_SHIPPED = autoplan.second_applies
#: variant -> {d: least DP count} where release two is made
VARIANTS: dict[str, dict[int, float]] = {
    "today": {3: 20_000},
    "2d20k": {2: 20_000, 3: 20_000},
    "2d6k": {2: 6_000, 3: 20_000},
    "3d6k": {3: 6_000},
    "all6k": {2: 6_000, 3: 6_000},
    "3d6kf2": {3: 6_000},
    "2d6kf2": {2: 6_000, 3: 20_000},
}
#: variant -> release two's f (the library's SECOND_FINE otherwise)
FINE = {"3d6kf2": 2, "2d6kf2": 2}
_FINE = autoplan.SECOND_FINE
#: the families of the summary
FAMILIES = ("spirals", "strands", "spiral", "curve", "arc", "blob")


def patch(variant: str) -> None:
    """Make ``autoplan.second_applies`` the variant's test (``today``: the
    library's own function)."""
    autoplan.SECOND_FINE = FINE.get(variant, _FINE)
    if variant == "today":
        autoplan.second_applies = _SHIPPED
        return
    least = VARIANTS[variant]

    def applies(d: int, count: float | None, noise: str) -> bool:
        return d in least and noise in ("discrete", "laplace") and count is not None and count >= least[d]

    autoplan.second_applies = applies


def row_of(seed: int, variant: str) -> dict:
    """One scene's automatic fit at epsilon 1 under ``variant``."""
    sc = scene_bench.scene_of(seed)
    patch(variant)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.process_time()
            est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed)
            model = est.fit(sc.X).spans_
            labels = model.predict(sc.X)
            cpu = time.process_time() - t
    finally:
        patch("today")
    second = (model.auto or {}).get("second") or {}
    return {
        "seed": seed,
        "variant": variant,
        "d": sc.d,
        "n": sc.n,
        "k": sc.k,
        "tags": " ".join(sorted(sc.tags)),
        "ari": scene_bench.ari(sc.y, labels),
        "spans": int(model.n_spans),
        "second": bool(second),
        "split": list(second.get("split", [])),
        "cpu": cpu,
    }


def hdbscan_row(seed: int) -> dict:
    sc = scene_bench.scene_of(seed)
    t = time.process_time()
    a = scene_bench.hdbscan_ari(sc)
    return {"seed": seed, "variant": "hdbscan", "d": sc.d, "n": sc.n, "k": sc.k,
            "tags": " ".join(sorted(sc.tags)), "ari": a, "cpu": time.process_time() - t}


def describe(split: str, first: int, count: int) -> list[dict]:
    """The scenes of ``split``'s seeds first..first+count (their descriptions
    only: d, n, k, tags; no fit)."""
    out = []
    for seed in list(scene_bench.SPLITS[split])[first : first + count]:
        sc = scene_bench.scene_of(seed)
        out.append({"seed": seed, "d": sc.d, "n": sc.n, "k": sc.k, "tags": sorted(sc.tags)})
    return out


def read(paths: Sequence[Path]) -> dict[tuple[int, str], dict]:
    rows: dict[tuple[int, str], dict] = {}
    for p in paths:
        for line in p.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[(r["seed"], r["variant"])] = r
    return rows


def summary(paths: Sequence[Path], base: str = "today") -> str:
    """Per variant against ``base`` on the scenes both ran: mean ARI, paired
    mean, better / worse (by more than 0.005), worst scene, by family and
    dimension, with HDBSCAN beside where it ran."""
    rows = read(paths)
    variants = sorted({v for _, v in rows} - {base})
    seeds = sorted({s for s, v in rows if v == base})
    lines = [f"scenes with `{base}`: {len(seeds)}", ""]
    lines.append("| variant | scenes | base | variant | paired | better | worse | worst (seed) | hdbscan | CPU ratio (median) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    fam_lines = ["", "| variant | group | scenes | base | variant | paired | hdbscan |", "|---|---|---|---|---|---|---|"]
    for v in variants:
        both = [s for s in seeds if (s, v) in rows]
        if not both:
            continue
        a = np.array([rows[(s, base)]["ari"] for s in both])
        b = np.array([rows[(s, v)]["ari"] for s in both])
        diff = b - a
        hd = [rows[(s, "hdbscan")]["ari"] for s in both if (s, "hdbscan") in rows]
        ratio = [rows[(s, v)]["cpu"] / max(rows[(s, base)]["cpu"], 1e-9) for s in both]
        w = int(np.argmin(diff))
        lines.append(
            f"| {v} | {len(both)} | {a.mean():.3f} | {b.mean():.3f} | {diff.mean():+.3f} | "
            f"{int((diff > 0.005).sum())} | {int((diff < -0.005).sum())} | {diff[w]:+.3f} ({both[w]}) | "
            f"{np.mean(hd) if hd else float('nan'):.3f} ({len(hd)}) | {np.median(ratio):.2f} |"
        )
        groups: dict[str, list[int]] = defaultdict(list)
        for s in both:
            r = rows[(s, base)]
            for t in r["tags"].split():
                if t in FAMILIES:
                    groups[t].append(s)
                    groups[f"{r['d']}d {t}"].append(s)
            groups[f"{r['d']}d"].append(s)
        for g in sorted(groups):
            ss = groups[g]
            a = np.array([rows[(s, base)]["ari"] for s in ss])
            b = np.array([rows[(s, v)]["ari"] for s in ss])
            hd = [rows[(s, "hdbscan")]["ari"] for s in ss if (s, "hdbscan") in rows]
            fam_lines.append(
                f"| {v} | {g} | {len(ss)} | {a.mean():.3f} | {b.mean():.3f} | {(b - a).mean():+.3f} | "
                f"{np.mean(hd) if hd else float('nan'):.3f} |"
            )
    return "\n".join(lines + fam_lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="", help="comma-separated scene seeds")
    ap.add_argument("--variants", default="today", help="comma-separated variants, and/or hdbscan")
    ap.add_argument("--out", type=Path, help="JSON lines, one per (scene, variant) (appended)")
    ap.add_argument("--list", metavar="SPLIT", help="print the split's scenes' descriptions as JSON lines")
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--summary", type=Path, nargs="*", help="summarise JSON lines files")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary(args.summary))
        return 0
    if args.list:
        for r in describe(args.list, args.first, args.count):
            print(json.dumps(r))
        return 0
    assert args.out is not None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = set(read([args.out])) if args.out.exists() else set()
    for seed in (int(s) for s in args.seeds.split(",") if s):
        for v in args.variants.split(","):
            if (seed, v) in done:
                continue
            row = hdbscan_row(seed) if v == "hdbscan" else row_of(seed, v)
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{seed} {v}: {row['ari']:.3f} split {row.get('split')} cpu {row['cpu']:.1f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def derive(rows: dict[tuple[int, str], dict]) -> dict[tuple[int, str], dict]:
    """The variants read from ``today`` and ``all6k`` (2-D and 3-D scenes
    are disjoint): on a 2-D scene ``2d6k`` is ``all6k`` and ``3d6k`` is
    ``today``; on a 3-D scene the other way round; ``2d20k`` is ``all6k`` on
    2-D scenes of n >= 20,000 (the DP count's sd is about 140), else
    ``today``."""
    out = dict(rows)
    for (s, v), r in rows.items():
        if v != "all6k" or (s, "today") not in rows:
            continue
        t = rows[(s, "today")]
        two = r["d"] == 2
        out[(s, "2d6k")] = {**(r if two else t), "variant": "2d6k"}
        out[(s, "3d6k")] = {**(t if two else r), "variant": "3d6k"}
        out[(s, "2d20k")] = {**(r if two and r["n"] >= 20_000 else t), "variant": "2d20k"}
    return out


def gate(rows: dict[tuple[int, str], dict], variant: str, t_seeds: Sequence[int], g_seeds: Sequence[int]) -> dict:
    """The tune gate of results/scenes/spirals-two-seeds.md for ``variant``
    (scenes where it ran)."""

    def paired(seeds: Sequence[int]) -> tuple[float, int, int, int]:
        ss = [s for s in seeds if (s, variant) in rows and (s, "today") in rows]
        d = np.array([rows[(s, variant)]["ari"] - rows[(s, "today")]["ari"] for s in ss])
        if not ss:
            return float("nan"), 0, 0, 0
        return float(d.mean()), len(ss), int((d > 0.005).sum()), int((d < -0.005).sum())

    t, g = paired(t_seeds), paired(g_seeds)
    fams = {}
    both = sorted(set(t_seeds) | set(g_seeds))
    for f in FAMILIES:
        fams[f] = paired([s for s in both if (s, "today") in rows and f in rows[(s, "today")]["tags"].split()])
    ss = [s for s in both if (s, variant) in rows and (s, "today") in rows]
    ratio = float(np.median([rows[(s, variant)]["cpu"] / max(rows[(s, "today")]["cpu"], 1e-9) for s in ss]))
    ok = t[0] >= 0.02 and g[0] >= -0.005 and all(not (m <= -0.01) for m, *_ in fams.values()) and ratio <= 2
    return {"variant": variant, "T": t, "G": g, "families": fams, "cpu_ratio": ratio, "meets": bool(ok)}
