"""Where the automatic mode's 3-D loss to HDBSCAN comes from (issue 28 item
3; results/scenes/gap3d.md).

Each scene's ARI loss against the truth (1 - ARI, noise its own class) is
split into five parts by repairing the labels (:func:`decompose`):

* ``coverage``: points of true clusters labelled noise;
* ``merge``: true clusters whose home span (the span, of those not mostly
  noise, that holds most of the cluster's points) is another cluster's home
  too;
* ``split``: points of a true cluster in a span other than its home (not a
  mostly-noise span);
* ``spurious``: spans whose points are mostly true noise (all their points);
* ``bleed``: true noise points inside the other spans.

Repairing every part gives the truth; each part's share of the loss is its
Shapley value over the 2^5 repair sets, so the five parts add up to
1 - ARI exactly. The same for non-private HDBSCAN's labels
(``scene_bench.hdbscan_labels``). Tune seeds only: curves 70,000-70,079 and
close 30,000-30,059, their 3-D scenes.

    PYTHONPATH=src:. python -m experiments.gap3d --gen curves --seeds 70000-70079 --dims 3 --draws 3 --out R
    PYTHONPATH=src:. python -m experiments.gap3d --summary R

Also: ``--border`` (``predict`` with wider borders on the library's release,
and how far the points it labels noise lie from a span), ``--nearness`` (how
near a curves scene's two curves lie, in release one's cells), ``--gate``
(the library against a research variant of :mod:`experiments.curves`, with a
digest of the labels) and their tables.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpdbscan import DPDBSCAN

from . import scene_bench, scenes
from .curves import DRAW_STEP, seeds_of, variant_block

PARTS = ("coverage", "merge", "split", "spurious", "bleed")
GENERATORS = {
    "curves": scenes.curves_scene,
    "close": scenes.close_scene,
    "thin": scenes.thin_scene,
    "scene": scenes.scene,
}


def repaired(y: np.ndarray, p: np.ndarray, active: frozenset) -> np.ndarray:
    """The labels ``p`` with the parts in ``active`` repaired (module
    docstring); with every part, a relabelling of ``y``."""
    y = np.asarray(y, dtype=np.int64)
    p = np.asarray(p, dtype=np.int64)
    out = p.copy()
    top = int(max(p.max(initial=-1), 0)) + 1
    spans = np.unique(p[p >= 0])
    spurious = set()
    for s in spans.tolist():
        inside = y[p == s]
        if (inside < 0).sum() * 2 > inside.size:
            spurious.add(s)
    clusters = np.unique(y[y >= 0]).tolist()
    home: dict[int, int | None] = {}
    for c in clusters:
        ps = p[(y == c) & (p >= 0)]
        ps = ps[~np.isin(ps, list(spurious))] if spurious else ps
        home[c] = int(np.bincount(ps).argmax()) if ps.size else None
    homes = [h for h in home.values() if h is not None]
    shared = {h for h in homes if homes.count(h) > 1}
    canon = {
        c: (h if h is not None and (h not in shared or "merge" not in active) else top + c)
        for c, h in home.items()
    }
    spur = np.isin(p, list(spurious)) if spurious else np.zeros(p.size, bool)
    for c in clusters:
        mine = y == c
        h = home[c]
        at_home = mine & (p == h) if h is not None else np.zeros(p.size, bool)
        out[at_home] = canon[c]
        if "coverage" in active:
            out[mine & (p < 0)] = canon[c]
        if "split" in active:
            out[mine & (p >= 0) & ~spur & ~at_home] = canon[c]
        if "spurious" in active:
            out[mine & spur] = canon[c]
    noise = y < 0
    if "spurious" in active:
        out[noise & spur] = -1
    if "bleed" in active:
        out[noise & (p >= 0) & ~spur] = -1
    return out


def decompose(y: np.ndarray, p: np.ndarray) -> dict:
    """``{"ari", part: share of 1 - ARI}``: Shapley values of the repairs
    (module docstring); the parts sum to 1 - ARI."""
    value = {}
    for r in range(len(PARTS) + 1):
        for sub in itertools.combinations(PARTS, r):
            value[frozenset(sub)] = scene_bench.ari(y, repaired(y, p, frozenset(sub)))
    m = len(PARTS)
    out = {"ari": value[frozenset()]}
    for part in PARTS:
        phi = 0.0
        others = [q for q in PARTS if q != part]
        for r in range(m):
            w = math.factorial(r) * math.factorial(m - r - 1) / math.factorial(m)
            for sub in itertools.combinations(others, r):
                s = frozenset(sub)
                phi += w * (value[s | {part}] - value[s])
        out[part] = phi
    return out


def counts(y: np.ndarray, p: np.ndarray) -> dict:
    """Plain counts beside the Shapley parts: the share of cluster points
    labelled noise, clusters sharing a home, spans, spans mostly noise, the
    share of noise points in spans."""
    y = np.asarray(y)
    p = np.asarray(p)
    inc = y >= 0
    spans = np.unique(p[p >= 0])
    spurious = [s for s in spans.tolist() if (y[p == s] < 0).sum() * 2 > (p == s).sum()]
    homes = []
    for c in np.unique(y[inc]).tolist():
        ps = p[(y == c) & (p >= 0) & ~np.isin(p, spurious)]
        if ps.size:
            homes.append(int(np.bincount(ps).argmax()))
    merged = sum(homes.count(h) for h in set(homes) if homes.count(h) > 1)
    return {
        "missed": float((p[inc] < 0).mean()) if inc.any() else 0.0,
        "merged": int(merged),
        "clusters": int(np.unique(y[inc]).size),
        "spans": int(spans.size),
        "spurious_spans": len(spurious),
        "noise_in": float((p[~inc] >= 0).mean()) if (~inc).any() else 0.0,
    }


def rows_of(gen: str, seed: int, draws: int) -> list[dict]:
    """HDBSCAN's row and the automatic mode's rows (draws 0..draws-1) for
    ``gen``'s scene ``seed``."""
    sc = GENERATORS[gen](seed)
    head = {**sc.row_head(seed, ""), "gen": gen}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = scene_bench.hdbscan_labels(sc)
    rows = [{**head, "variant": "hdbscan", **decompose(sc.y, h), **counts(sc.y, h)}]
    for r in range(draws):
        t = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = (
                DPDBSCAN(
                    "auto",
                    min_samples="auto",
                    epsilon=1.0,
                    bounds=sc.bounds,
                    random_state=seed + r * DRAW_STEP,
                )
                .fit(sc.X)
                .spans_
            )
        p = model.predict(sc.X)
        rows.append(
            {
                **head,
                "variant": "today" if r == 0 else f"today@{r}",
                **decompose(sc.y, p),
                **counts(sc.y, p),
                "cpu": time.process_time() - t,
            }
        )
    return rows


def group_of(r: dict) -> list[str]:
    g = [r["gen"]]
    if r["gen"] == "curves":
        if 2_000 <= r["n"] < 6_000:
            g.append("curves 2,000-6,000")
        g += [f"curves {t}" for t in scenes.CURVES_FAMILIES if t in r["tags"].split()]
    return g


def summary(path: str) -> str:
    """Per group: the mean ARI loss and its parts, the automatic mode (mean
    over draws per scene) against HDBSCAN, and the gap per part."""
    per: dict = defaultdict(dict)
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            per[(r["gen"], r["seed"])][r["variant"]] = r
    groups: dict = defaultdict(list)
    for R in per.values():
        auto = [v for k, v in R.items() if k.startswith("today")]
        if "hdbscan" not in R or not auto:
            continue
        a = {
            k: float(np.mean([x[k] for x in auto]))
            for k in ("ari", *PARTS, "missed", "merged", "spurious_spans")
        }
        h = R["hdbscan"]
        for g in group_of(h):
            groups[g].append((a, h))
    cols = ("ari", *PARTS)
    lines = [
        "| group | scenes | who | ARI | "
        + " | ".join(PARTS)
        + " | cluster points as noise | merged clusters | spurious spans |",
        "|---|---|---|---|" + "---|" * (len(PARTS) + 3),
    ]
    for g in sorted(groups):
        A = groups[g]
        for who, j in (("auto", 0), ("HDBSCAN", 1)):
            vals = [np.mean([x[j][c] for x in A]) for c in cols]
            extra = [np.mean([x[j][c] for x in A]) for c in ("missed", "merged", "spurious_spans")]
            lines.append(
                f"| {g} | {len(A)} | {who} | "
                + " | ".join(f"{v:.3f}" for v in vals)
                + f" | {extra[0]:.1%} | {extra[1]:.2f} | {extra[2]:.2f} |"
            )
        gap = [np.mean([x[0][c] - x[1][c] for x in A]) for c in PARTS]
        lines.append(
            f"| {g} | | gap (auto - HDBSCAN) | | " + " | ".join(f"{v:+.3f}" for v in gap) + " | | | |"
        )
    return "\n".join(lines)


def per_scene(path: str) -> str:
    """One line per scene: ARI and parts of the automatic mode (mean over
    draws) and HDBSCAN."""
    per: dict = defaultdict(dict)
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            per[(r["gen"], r["seed"])][r["variant"]] = r
    lines = [
        "| gen | seed | n | k | who | ARI | " + " | ".join(PARTS) + " | missed | merged | spans |",
        "|---" * (11 + 0) + "|---|---|---|",
    ]
    for (gen, seed), R in sorted(per.items()):
        auto = [v for k, v in R.items() if k.startswith("today")]
        h = R.get("hdbscan")
        if h is None or not auto:
            continue
        fam = " ".join(t for t in h["tags"].split() if t in (*scenes.CURVES_FAMILIES, *scenes.CLOSE_FAMILIES))
        for who, rs in (("auto", auto), ("HDBSCAN", [h])):
            m = {k: float(np.mean([x[k] for x in rs])) for k in ("ari", *PARTS, "missed", "merged", "spans")}
            lines.append(
                f"| {gen} {fam} | {seed} | {h['n']:,} | {h['k']} | {who} | {m['ari']:.3f} | "
                + " | ".join(f"{m[c]:.3f}" for c in PARTS)
                + f" | {m['missed']:.1%} | {m['merged']:.1f} | {m['spans']:.1f} |"
            )
    return "\n".join(lines)


def gate_row(gen: str, seed: int, variant: str) -> dict:
    """One fit of ``variant`` (``NAME@r``: draw r; ``experiments.curves``'
    variants) on ``gen``'s scene ``seed``, or on dev set ``seed`` (an index
    of ``devsuite.DEV_NAMES``, ``random_state`` = the draw) for ``gen`` =
    "dev": its ARI and a digest of its labels (the same labels, the same
    digest)."""
    import hashlib

    draw = int(variant.split("@")[1]) if "@" in variant else 0
    if gen == "dev":
        from . import devsuite

        ds = devsuite.load_dev([devsuite.DEV_NAMES[seed]])[0]
        X, y, bounds, rs = ds.X, ds.labels, ds.bounds, draw
        head = {"seed": seed, "variant": variant, "set": ds.name, "d": int(X.shape[1]), "n": int(X.shape[0])}
    else:
        sc = GENERATORS[gen](seed)
        X, y, bounds, rs = sc.X, sc.y, sc.bounds, seed + draw * DRAW_STEP
        head = sc.row_head(seed, variant)
    t = time.process_time()
    with variant_block(variant), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = (
            DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=bounds, random_state=rs).fit(X).spans_
        )
        labels = model.predict(X)
    return {
        **head,
        "gen": gen,
        "ari": scene_bench.ari(y, labels),
        "spans": int(model.n_spans),
        "digest": hashlib.sha256(np.asarray(labels, dtype=np.int64).tobytes()).hexdigest()[:16],
        "cpu": time.process_time() - t,
    }


def border_table(path: str) -> str:
    """Per generator: each :data:`BORDERS` variant's mean ARI (draws, then
    scenes), paired with the library's, better / worse beyond 0.02; and the
    missed cluster points' and the noise's distances (:data:`RADII`)."""
    per: dict = defaultdict(list)
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            per[(r["gen"], r["seed"])].append(r)
    lines = ["| generator | scenes | " + " | ".join(BORDERS) + " |", "|---|---|" + "---|" * len(BORDERS)]
    hist: dict = {}
    for gen in sorted({g for g, _ in per}):
        rows = [v for (g, _), v in per.items() if g == gen]
        m = np.array([[np.mean([x[b] for x in v]) for b in BORDERS] for v in rows])
        cells = [f"{m[:, 0].mean():.3f}"]
        for j in range(1, len(BORDERS)):
            d = m[:, j] - m[:, 0]
            cells.append(
                f"{m[:, j].mean():.3f} ({d.mean():+.3f}; {int((d > 0.02).sum())} / {int((d < -0.02).sum())})"
            )
        lines.append(f"| {gen} | {len(rows)} | " + " | ".join(cells) + " |")
        hist[gen] = [
            np.sum(
                [x.get(k, [0] * (len(RADII) - 1)) for v in rows for x in v if x["variant"] == "border"],
                axis=0,
            )
            for k in ("missed_at", "noise_at")
        ]
    lines.append(
        "\ndraw 0, points labelled noise by distance to the nearest core centre, in border radii "
        + str(RADII[1:])
    )
    for gen, (miss, noise) in hist.items():
        lines.append(f"{gen}: cluster points {miss.tolist()}, true noise {noise.tolist()}")
    return "\n".join(lines)


def gate_table(path: str, base: str = "today", cand: str = "two1s5f4") -> str:
    """Per generator (and d): scenes, the library's and the candidate's mean
    ARI over the draws both have, paired difference, better / worse beyond
    0.02, the worst scene, and how many scenes have the same labels."""
    rows: dict = defaultdict(dict)
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            rows[(r["gen"], r["seed"])][r["variant"]] = r
    groups: dict = defaultdict(list)
    for (gen, seed), R in rows.items():
        draws = sorted({v.split("@")[1] if "@" in v else "0" for v in R})
        pairs = [
            (R[base if d == "0" else f"{base}@{d}"], R[cand if d == "0" else f"{cand}@{d}"])
            for d in draws
            if (base if d == "0" else f"{base}@{d}") in R and (cand if d == "0" else f"{cand}@{d}") in R
        ]
        if not pairs:
            continue
        a = float(np.mean([p[0]["ari"] for p in pairs]))
        b = float(np.mean([p[1]["ari"] for p in pairs]))
        same = all(p[0]["digest"] == p[1]["digest"] for p in pairs)
        name = pairs[0][0].get("set", seed)
        groups[(gen, pairs[0][0]["d"])].append((name, a, b, same, len(pairs)))
    lines = [
        "| generator | d | scenes (draws) | library | candidate | paired | better / worse beyond 0.02 "
        "| worst | same labels |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (gen, d), v in sorted(groups.items()):
        diff = np.array([x[2] - x[1] for x in v])
        worst = v[int(np.argmin(diff))]
        lines.append(
            f"| {gen} | {d} | {len(v)} ({v[0][4]}) | {np.mean([x[1] for x in v]):.3f} | "
            f"{np.mean([x[2] for x in v]):.3f} | {diff.mean():+.4f} | {int((diff > 0.02).sum())} / "
            f"{int((diff < -0.02).sum())} | {diff.min():+.3f} ({worst[0]}) | {sum(x[3] for x in v)} |"
        )
    return "\n".join(lines)


#: predict variants of section 1 of gap3d.md: (border radius / the model's, border cells)
BORDERS = {
    "library": (1.0, None),
    "b1.5": (1.5, "any"),
    "b2": (2.0, "any"),
    "occupied": (1.0, "occupied"),
    "b1.5occ": (1.5, "occupied"),
}
#: bins of a missed point's distance to the nearest core centre, in border radii
RADII = (0.0, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, math.inf)


def border_row(gen: str, seed: int, draw: int) -> dict:
    """The library's fit of ``gen``'s scene ``seed`` (draw ``draw``) labelled
    by each :data:`BORDERS` variant of ``predict`` (post-processing of the
    same release), and how far its missed cluster points and its true noise
    labelled noise lie from the nearest core sub-cell centre, in border radii
    (:data:`RADII` bins)."""
    from dataclasses import replace

    from scipy.spatial import cKDTree

    sc = GENERATORS[gen](seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(
            "auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed + draw * DRAW_STEP
        )
        model = est.fit(sc.X).spans_
        row = {**sc.row_head(seed, "border" if draw == 0 else f"border@{draw}"), "gen": gen}
        for name, (times, cells) in BORDERS.items():
            spec = replace(
                model.spec, border=model.spec.border * times, border_cells=cells or model.spec.border_cells
            )
            row[name] = scene_bench.ari(sc.y, replace(model, spec=spec).predict(sc.X))
    p = model.predict(sc.X)
    if model.n_core_cells:
        centres = model.grid.cell_centres(model.grid.decode(model.core_keys))
        own = model.span_borders
        radius = own[model.labels] if own is not None else np.full(model.labels.size, model.spec.border)
        dist, at = cKDTree(centres).query(sc.X, k=min(8, centres.shape[0]))
        dist, at = dist.reshape(sc.n, -1), at.reshape(sc.n, -1)
        rel = np.min(dist / radius[at], axis=1)
        row["missed_at"] = np.histogram(rel[(sc.y >= 0) & (p < 0)], RADII)[0].tolist()
        row["noise_at"] = np.histogram(rel[(sc.y < 0) & (p < 0)], RADII)[0].tolist()
    return row


def nearness(seed: int) -> str:
    """For curves scene ``seed`` (its clusters 0 and 1, the points, no
    noise): the nearest point of cluster 1 to each point of cluster 0 in
    release one's cell widths (min, 1%, 5%, median), and the median distance
    to the nearest other point of cluster 0."""
    from scipy.spatial import cKDTree

    sc = scenes.curves_scene(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed).fit(
            sc.X
        )
    w = float(np.max(model.spans_.histogram.grid.width))
    a, b = sc.X[sc.y == 0], sc.X[sc.y == 1]
    cross = cKDTree(b).query(a)[0] / w
    own = cKDTree(a).query(a, k=2)[0][:, 1] / w
    q = np.quantile(cross, [0.0, 0.01, 0.05, 0.5])
    return f"| {seed:,} | " + ", ".join(f"{x:.2f}" for x in q) + f" | {np.median(own):.3f} |"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gen", default="curves", choices=tuple(GENERATORS))
    ap.add_argument("--seeds", type=seeds_of)
    ap.add_argument("--dims", type=int, default=None)
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--summary")
    ap.add_argument("--per-scene")
    ap.add_argument("--gate", help="fit --variants on --gen's --seeds (gen 'dev': set indices) into --out")
    ap.add_argument("--gate-table")
    ap.add_argument("--variants", default="today,two1s5f4")
    ap.add_argument("--border", action="store_true", help="predict variants of --gen's --seeds into --out")
    ap.add_argument("--border-table")
    ap.add_argument("--nearness", action="store_true", help="how near --seeds' curves lie, in cells")
    args = ap.parse_args(argv)
    if args.nearness:
        for seed in args.seeds:
            print(nearness(seed), flush=True)
        return 0
    if args.border_table:
        print(border_table(args.border_table))
        return 0
    if args.border:
        for seed in args.seeds:
            if args.dims is not None and GENERATORS[args.gen](seed).d != args.dims:
                continue
            for r in range(args.draws):
                with open(args.out, "a") as f:
                    f.write(json.dumps(border_row(args.gen, seed, r)) + "\n")
            print(args.gen, seed, file=sys.stderr, flush=True)
        return 0
    if args.gate_table:
        print(gate_table(args.gate_table, *args.variants.split(",")[:2]))
        return 0
    if args.gate:
        for seed in args.seeds:
            if args.gate != "dev" and args.dims is not None and GENERATORS[args.gate](seed).d != args.dims:
                continue
            for v in args.variants.split(","):
                row = gate_row(args.gate, seed, v)
                with open(args.out, "a") as f:
                    f.write(json.dumps(row) + "\n")
                print(
                    args.gate, seed, v, f"{row['ari']:.3f}", f"{row['cpu']:.1f}s", file=sys.stderr, flush=True
                )
        return 0
    if args.summary:
        print(summary(args.summary))
        return 0
    if args.per_scene:
        print(per_scene(args.per_scene))
        return 0
    if not args.seeds or not args.out:
        ap.error("--seeds and --out, or --summary")
    for seed in args.seeds:
        if args.dims is not None and GENERATORS[args.gen](seed).d != args.dims:
            continue
        for row in rows_of(args.gen, seed, args.draws):
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(seed, row["variant"], f"{row['ari']:.3f}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
