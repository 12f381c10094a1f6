"""Tightly wound spirals and thin curves next to each other (issue 28 item 3;
results/scenes/curves.md).

The scenes are :func:`experiments.scenes.curves_scene` (new families
``tight``, ``parallel``, ``graded``; 2-D and 3-D, 1,000-20,000 points). Every
fit is the library's automatic mode (``DPDBSCAN("auto", min_samples="auto")``,
epsilon = 1, the scene's box, ``random_state`` = seed + r x 1,000,003 for
draw r), labels from ``predict``, ARI with noise its own class; HDBSCAN
non-private, min_cluster_size 1% of n (``scene_bench.hdbscan_ari``).

Tune seeds: 70,000-70,999. Held-out seeds: 93,200 and up, only through a
gate committed first.

    PYTHONPATH=src:. python -m experiments.curves --seeds 70000-70047 --variants today,hdbscan --out ROWS
    PYTHONPATH=src:. python -m experiments.curves --summary ROWS
    PYTHONPATH=src:. python -m experiments.curves --compare ROWS --variants today,low2 --draws 3
    PYTHONPATH=src:. python -m experiments.curves --resolution --seeds 70019,70065
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.params import sizing
from dpdbscan.plan import autoplan
from dpdbscan.post import ownscale
from dpdbscan.research import auto_points_per_cell, second_release_where

from . import scene_bench, scenes

#: draw r of a scene is the fit with random_state seed + r x DRAW_STEP
DRAW_STEP = 1_000_003
#: the families a row is broken down by
FAMILIES = (*scenes.CURVES_FAMILIES, "blob")


@contextlib.contextmanager
def low_3d(least: int, second: bool = True) -> Iterator[None]:
    """Research: the 3-D regime of a DP count of 6,000-20,000 (the finer base
    for FINER_3D x LARGE_N points, faces joined, three eps candidates, and
    with ``second`` release two at 0.15 epsilon, f = 2) from a count of
    ``least`` instead. Public inputs only (d, the DP count)."""
    old = (sizing.FINER_3D_FROM, autoplan.SMALL_SECOND_FROM)
    sizing.FINER_3D_FROM = int(least)
    if second:
        autoplan.SMALL_SECOND_FROM = int(least)
    try:
        yield
    finally:
        sizing.FINER_3D_FROM, autoplan.SMALL_SECOND_FROM = old


@contextlib.contextmanager
def agree_everywhere() -> Iterator[None]:
    """Research: the near-ties of the eps choice go to the candidate whose
    selection agrees best with the others' (``ownscale.agreeing``) at every
    DP count, not only where a 2-D count below 6,000 sized the base.
    Post-processing of the one release."""
    old = ownscale.ties_for
    ownscale.ties_for = lambda counted: "agree"
    try:
        yield
    finally:
        ownscale.ties_for = old


def variant_block(variant: str) -> contextlib.AbstractContextManager:
    """The research block of ``variant`` (``today``: none; ``lowK``: the
    3-D regime of 6,000-20,000 from a count of K x 1,000; ``basK``: its
    base and faces only, release two still from 6,000; ``twoK``: only
    release two from K x 1,000; ``twoKsSfF``: release two from K x 1,000 at
    a share 0.S of epsilon with f = F, at every count; ``ppcX``: the base's points per cell 0.X, 0.3 in the
    library, in every dimension; ``agree``: :func:`agree_everywhere`)."""
    name = variant.split("@")[0]
    if name == "today":
        return contextlib.nullcontext()
    if name == "agree":
        return agree_everywhere()
    if name.startswith("ppc"):
        digits = name[3:]
        return auto_points_per_cell(int(digits) / 10 ** len(digits))
    m = re.fullmatch(r"(low|bas|two)(\d+)(?:s(\d+)f(\d))?", name)
    if m is None:
        raise ValueError(f"unknown variant {variant!r}")
    least = int(m.group(2)) * 1_000
    if m.group(1) == "two":
        if m.group(3) is None:
            return second_release_where({3: least})
        share = int(m.group(3)) / 10 ** len(m.group(3))
        return second_release_where({3: least}, fine=int(m.group(4)), share=share)
    return low_3d(least, second=m.group(1) == "low")


def row_of(seed: int, variant: str) -> dict:
    """One fit of ``variant`` (``NAME@r``: its draw r) on ``seed``'s scene."""
    sc = scenes.curves_scene(seed)
    base = {
        **sc.row_head(seed, variant),
    }
    t = time.process_time()
    if variant == "hdbscan":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # scikit-learn's HDBSCAN `copy` default
            return {**base, "ari": scene_bench.hdbscan_ari(sc), "cpu": time.process_time() - t}
    draw = int(variant.split("@")[1]) if "@" in variant else 0
    with variant_block(variant), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(
            "auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed + draw * DRAW_STEP
        )
        model = est.fit(sc.X).spans_
        labels = model.predict(sc.X)
    auto = model.auto or {}
    return {
        **base,
        "ari": scene_bench.ari(sc.y, labels),
        "spans": int(model.n_spans),
        "eps": float(auto.get("eps", float("nan"))),
        "cpu": time.process_time() - t,
    }


def read(path: str) -> dict:
    """Rows of a file, keyed (seed, variant); the last row of a key wins."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            out[(r["seed"], r["variant"])] = r
    return out


def mean_over_draws(rows: dict, name: str, seed: int) -> float | None:
    """The mean ARI of ``name``'s draws on ``seed`` (``name`` itself is draw 0)."""
    vals = [r["ari"] for (s, v), r in rows.items() if s == seed and v.split("@")[0] == name]
    return float(np.mean(vals)) if vals else None


def summary(rows: dict, variants: Sequence[str]) -> str:
    """Per family and dimension: scenes, each variant's mean (over draws) ARI."""
    seeds = sorted({s for s, _ in rows})
    tags = {s: next(r["tags"] for (t, _), r in rows.items() if t == s).split() for s in seeds}
    groups: dict = defaultdict(list)
    for s in seeds:
        for fam in (*FAMILIES, "2d", "3d", "all"):
            if fam == "all" or fam in tags[s]:
                groups[fam].append(s)
        for fam in scenes.CURVES_FAMILIES:
            if fam in tags[s]:
                groups[f"{fam} {'3d' if '3d' in tags[s] else '2d'}"].append(s)
    lines = ["| family | scenes | " + " | ".join(variants) + " |", "|---|---|" + "---|" * len(variants)]
    for g in sorted(groups):
        cells = []
        for v in variants:
            means = [mean_over_draws(rows, v, s) for s in groups[g]]
            vals = [x for x in means if x is not None]
            cells.append(f"{np.mean(vals):.3f} ({len(vals)})" if vals else "-")
        lines.append(f"| {g} | {len(groups[g])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compare(rows: dict, variants: Sequence[str], draws: int, seeds: Sequence[int] | None = None) -> str:
    """Per scene each variant's mean ARI over its draws 0..draws-1 and
    HDBSCAN's, then the means and each variant's paired difference from the
    first (better / worse beyond 0.02), over the scenes where every variant
    has every draw."""

    def mean_of(seed: int, v: str) -> float | None:
        keys = [(seed, v if r == 0 else f"{v}@{r}") for r in range(draws)]
        return float(np.mean([rows[k]["ari"] for k in keys])) if all(k in rows for k in keys) else None

    lines = [
        "| seed | n | k | families | " + " | ".join(variants) + " | HDBSCAN |",
        "|---" * (5 + len(variants)) + "|",
    ]
    table = []
    for seed in sorted(seeds if seeds is not None else {s for s, _ in rows}):
        got = [mean_of(seed, v) for v in variants]
        vals = [x for x in got if x is not None]
        if len(vals) < len(got):
            continue
        r = rows[(seed, variants[0])]  # draw 0 of the first variant, as mean_of found it
        h = rows.get((seed, "hdbscan"), {}).get("ari", float("nan"))
        table.append((vals, h))
        fams = " ".join(t for t in r["tags"].split() if t not in ("noise", "varied", "bridges"))
        lines.append(
            f"| {seed:,} | {r['n']:,} | {r['k']} | {fams} | "
            + " | ".join(f"{x:.3f}" for x in vals)
            + f" | {h:.3f} |"
        )
    if not table:
        return "no scene has every draw of every variant"
    arr = np.array([t[0] for t in table])
    hd = np.array([t[1] for t in table])
    lines.append(
        f"| mean ({len(table)}) | | | | "
        + " | ".join(f"{x:.3f}" for x in arr.mean(0))
        + f" | {np.nanmean(hd):.3f} |"
    )
    for j, v in enumerate(variants[1:], 1):
        d = arr[:, j] - arr[:, 0]
        lines.append(
            f"\n{v} - {variants[0]}: paired {d.mean():+.3f}, better / worse beyond 0.02: "
            f"{int((d > 0.02).sum())} / {int((d < -0.02).sum())}"
        )
    return "\n".join(lines)


def resolution(seed: int, fines: Sequence[int] = (1, 2, 3, 4, 6, 8), least: int = 3) -> str:
    """Without noise: into how many large pieces (each at least 10% of the
    clustered mass) the clustered points' counts fall on cells of release
    one's width / f, keeping cells of at least ``least`` points, joined by
    face, edge or corner, and the median count of an occupied cell. Reads
    the points: a diagnosis of what resolution the scene needs, not a
    release."""
    from scipy import ndimage

    sc = scenes.curves_scene(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = (
            DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed)
            .fit(sc.X)
            .spans_
        )
    w0 = float(np.max(model.histogram.grid.width))
    X = sc.X[sc.y >= 0]
    out = []
    for f in fines:
        c = np.floor((X - sc.lower) / (w0 / f)).astype(np.int64)
        c -= c.min(0)
        arr = np.zeros(tuple(c.max(0) + 1), dtype=np.int32)
        np.add.at(arr, tuple(c.T), 1)
        lab, nl = ndimage.label(arr >= least, structure=np.ones((3,) * sc.d))
        sizes = np.asarray(ndimage.sum(arr, lab, range(1, nl + 1)))
        big = int((sizes >= 0.1 * sizes.sum()).sum()) if nl else 0
        out.append(f"f {f}: {big} ({int(np.median(arr[arr > 0]))})")
    fams = " ".join(t for t in sorted(sc.tags) if t not in ("noise", "varied", "bridges"))
    return f"| {seed:,} | {sc.d} | {sc.n:,} | {sc.k} | {fams} | " + " | ".join(out) + " |"


def seeds_of(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b) + 1) if b else [int(a)])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=seeds_of)
    ap.add_argument("--variants", default="today,hdbscan")
    ap.add_argument("--out")
    ap.add_argument("--summary")
    ap.add_argument("--compare", help="rows: per scene, the variants' mean over --draws draws")
    ap.add_argument("--draws", type=int, default=1)
    ap.add_argument("--resolution", action="store_true", help="the noiseless pieces of --seeds' scenes")
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    if args.summary:
        print(summary(read(args.summary), variants))
        return 0
    if args.compare:
        print(compare(read(args.compare), variants, args.draws, args.seeds))
        return 0
    if args.resolution:
        for seed in args.seeds:
            print(resolution(seed), flush=True)
        return 0
    if not args.seeds or not args.out:
        ap.error("--seeds and --out, or --summary")
    for seed in args.seeds:
        for v in variants:
            row = row_of(seed, v)
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(seed, v, f"{row['ari']:.3f}", f"{row['cpu']:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
