"""Release two that splits a span only where its parts lie side by side
(issue 28 item 3, the strands2 study; nothing here is the library's default).

``experiments.strands_level2`` showed that a second, finer release inside
release one's dense cells parts two or three thin 3-D strands, but also cuts
one arm or curve into pieces. Here the same two releases (release one: the
automatic fit at (1 - ``share``) epsilon; release two: discrete Laplace on
f^3 fine cells inside release one's cells of at least 3 sd whose centre is
in a span, a function of release one alone) and a keep rule, all of it
post-processing of the two releases (``autogap-seeds.md``, "strands2"):

(a) side by side: every significant component's extent along the span's
    main axis (first principal axis of release one's selected cells of the
    span, weighted by their noisy counts) covers at least ``c`` of the span's
    extent on that axis;
(b) significant: a component (fine cells of at least max(z2 sd, 0.1 x the
    95th percentile), touching by a face, edge or corner) counts when it
    holds at least ``p`` of the span's kept mass and at least 3 sd x
    sqrt(its cells);
(c) f per span: the largest f in {2, 3, 4} with (mean noisy count of the
    span's selected cells) / f >= ``m`` sd of release two, or a fixed f;
(e) two or more significant components, all side by side: the span is
    split (each point to the component of its nearest kept fine cell);
    otherwise it stays whole.

Release one and release two's noisy counts are cached per scene (pickle,
``--cache``) so that the grid of keep rules runs offline.

    python -m experiments.strands_split --seeds 70202,70279 --out results/scenes/strands2-tune.jsonl
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from scipy import ndimage
from scipy.spatial import cKDTree

from . import devsuite, scene_bench
from .strands_level2 import fit, release_two, selected_cells

FS = (2, 3, 4)
#: (f, c, p, z2): f an int (fixed) or "m2"/"m4" (chosen per span, rule (c))
VARIANTS = tuple(
    (f, c, p, z2) for f in (2, 3, 4, "m2", "m4") for c in (0.5, 0.7) for p in (0.1, 0.2) for z2 in (2.0, 3.0)
)
SIG_Z = 3.0
Q = 0.1


def key_of(v: tuple) -> str:
    f, c, p, z2 = v
    return f"f{f}/c{c:g}/p{p:g}/z{z2:g}"


def releases(sc: Any, share: float, cache: Path | None) -> dict:
    """Release one at (1 - share) epsilon (its labels, selected cells and
    their spans and noisy counts) and release two's noisy fine counts per
    span and f; cached under ``cache``."""
    path = None if cache is None else cache / f"{getattr(sc, 'prefix', '')}{sc.seed}-s{share:g}.pkl"
    if path is not None and path.exists():
        with path.open("rb") as fh:
            return pickle.load(fh)
    one, cpu1 = fit(sc, 1.0 - share)
    rel = releases_of(one, sc.X, share, sc.seed)
    rel["cpu_one"] = cpu1
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as fh:
            pickle.dump(rel, fh)
    return rel


def releases_of(one: Any, X: np.ndarray, share: float, seed: int) -> dict:
    """Release one's labels of ``X``, its selected cells (their spans and
    noisy counts) and release two's noisy fine counts per span and f in
    :data:`FS` at ``share`` epsilon (noise seeded by ``seed`` and the span)."""
    g = one.histogram.grid
    cells, spans = selected_cells(one)
    keys, vals = one.histogram.sparse()
    coords = g.decode(keys)
    in_span = one.predict(g.cell_centres(coords)) >= 0
    sd = np.sqrt(2.0) / float(one.histogram.scale)
    v = np.asarray(vals, np.float64)
    counts = v[(v >= 3.0 * sd) & in_span]  # the same order as selected_cells'
    two: dict = {}
    cpu2: dict = {}
    for f in FS:
        t = time.process_time()
        for s in np.unique(spans):
            two[(f, int(s))] = release_two(X, g, cells[spans == s], f, share, seed * 1000 + int(s))
        cpu2[f] = time.process_time() - t
    rel = {
        "labels": one.predict(X),
        "cells": cells,
        "spans": spans,
        "counts": counts,
        "lower": np.asarray(g.lower, np.float64),
        "width": np.asarray(g.width, np.float64),
        "two": two,
        "cpu_two": cpu2,
    }
    return rel


def choose_f(f: Any, mean_count: float, sd2: float) -> int | None:
    """Rule (c): a fixed f, or the largest f whose estimated count per
    occupied fine cell (mean selected-cell count / f) is >= m sd."""
    if isinstance(f, int):
        return f
    m = float(f[1:])
    ok = [ff for ff in FS if mean_count / ff >= m * sd2]
    return max(ok) if ok else None


def side_by_side(
    centres: np.ndarray, comp: np.ndarray, big: np.ndarray, axis: np.ndarray, span_ext: tuple
) -> float:
    """The smallest share of the span's extent along ``axis`` that a
    component of ``big`` covers (its fine cells' centres projected)."""
    proj = centres @ axis
    lo, hi = span_ext
    width = max(hi - lo, 1e-12)
    cover = [(proj[comp == b].max() - proj[comp == b].min()) / width for b in big]
    return float(min(cover))


def main_axis(centres: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """First principal axis of ``centres`` weighted by (positive) ``weights``."""
    w = np.clip(weights, 1e-9, None)
    mu = (centres * w[:, None]).sum(axis=0) / w.sum()
    cov = ((centres - mu) * w[:, None]).T @ (centres - mu) / w.sum()
    _, vecs = np.linalg.eigh(cov)
    return vecs[:, -1]


def split_labels(rel: dict, X: np.ndarray, share: float, v: tuple) -> tuple[np.ndarray, int]:
    """Release one's labels with spans split by the keep rule ``v``
    (module docstring): (labels, spans split)."""
    f_rule, c, p, z2 = v
    labels = rel["labels"]
    out = labels.copy()
    sd2 = np.sqrt(2.0) / share
    lower, width = rel["lower"], rel["width"]
    nxt = int(out.max()) + 1 if out.size else 0
    split = 0
    for s in np.unique(rel["spans"]):
        sel = rel["spans"] == s
        f = choose_f(f_rule, float(rel["counts"][sel].mean()), sd2)
        if f is None:
            continue
        noisy, mask, lo = rel["two"][(f, int(s))]
        t = max(z2 * sd2, Q * float(np.percentile(noisy[mask], 95)))
        lab, nl = ndimage.label(mask & (noisy >= t), structure=np.ones((3,) * len(lower)))
        if nl < 2:
            continue
        idx = np.arange(1, nl + 1)
        mass = np.asarray(ndimage.sum(noisy, lab, index=idx), np.float64)
        size = np.asarray(ndimage.sum(np.ones_like(noisy), lab, index=idx), np.float64)
        big = idx[(mass >= p * mass.sum()) & (mass >= SIG_Z * sd2 * np.sqrt(size))]
        if big.size < 2:
            continue
        fcells = np.argwhere(np.isin(lab, big))
        comp = lab[tuple(fcells.T)]
        centres = lower + lo * width + (fcells + 0.5) * (width / f)
        coarse = lower + (rel["cells"][sel] + 0.5) * width
        axis = main_axis(coarse, rel["counts"][sel])
        proj = coarse @ axis
        ext = (float(proj.min() - width.max() / 2), float(proj.max() + width.max() / 2))
        if side_by_side(centres, comp, big, axis, ext) < c:
            continue
        split += 1
        pts = np.flatnonzero(labels == s)
        _, nn = cKDTree(centres).query(X[pts])
        cc = comp[nn]
        for b in big[1:]:
            out[pts[cc == b]] = nxt
            nxt += 1
    return out, split


def row_of(
    sc: Any,
    share: float,
    cache: Path | None,
    model_ari: float | None,
    variants: Sequence[tuple] | None = None,
) -> dict:
    """One scene: the model (the library's automatic fit at epsilon 1, or
    its cached ARI), release one alone and ``variants`` (every one of
    :data:`VARIANTS` by default; none: only the releases, cached)."""
    row: dict = {"seed": sc.seed, "n": sc.n, "k": sc.k, "tags": " ".join(sorted(sc.tags)), "share": share}
    if model_ari is None:
        base, cpu = fit(sc, 1.0)
        row["model"], row["cpu"] = scene_bench.ari(sc.y, base.predict(sc.X)), cpu
    else:
        row["model"] = model_ari
    rel = releases(sc, share, cache)
    if variants is not None and not variants:
        return row  # --prepare: the releases cached, nothing scored
    row["one"] = scene_bench.ari(sc.y, rel["labels"])
    row["cpu_one"] = rel["cpu_one"]
    row["cpu_two"] = {str(k): v for k, v in rel["cpu_two"].items()}
    for v in VARIANTS if variants is None else variants:
        t = time.process_time()
        lab, split = split_labels(rel, sc.X, share, v)
        row[key_of(v)] = scene_bench.ari(sc.y, lab)
        row[key_of(v) + ":split"] = split
        row[key_of(v) + ":cpu"] = time.process_time() - t
    return row


def hepta(seed: int) -> Any:
    """The dev suite's 3-D set as a scene (``experiments.auto_mode``'s fit:
    its bounds, ``random_state`` = ``seed``), cached as ``hepta-<seed>``."""
    ds = devsuite.load_dev(["hepta"])[0]
    y = np.asarray(ds.labels)
    return SimpleNamespace(
        X=ds.X,
        y=y,
        bounds=ds.bounds,
        seed=seed,
        n=len(y),
        k=len(set(y.tolist())),
        tags={"hepta"},
        prefix="hepta-",
    )


def cached_models(path: Path | None) -> dict[int, float]:
    """The model column of an earlier run (``strands-tune.jsonl``): the
    library's automatic fit at epsilon 1 gives the same release since."""
    if path is None or not path.exists():
        return {}
    return {r["seed"]: r["model"] for r in map(json.loads, path.read_text().splitlines())}


T_SEEDS: tuple[int, ...] = (70025, 70085, 70125, 70167, 70202, 70219, 70274, 70279, 70287, 70324, 70352)
T_SEEDS += (70355, 70380, 70410, 70430, 70467, 70531, 70532, 70538, 70598, 70603, 70626, 70685, 70767)
T_SEEDS += (70907, 70992)
G_SEEDS = (70003, 70012, 70016, 70023, 70025, 70032, 70033, 70037, 70040, 70041, 70054, 70063)
FAMILIES = ("strands", "spirals", "spiral", "curve", "arc", "blob")


def gate(rows: list[dict], key: str) -> dict:
    """The tune gate's numbers for variant ``key`` (``autogap-seeds.md``,
    "strands2"): paired means over the model on T, G and each family of
    T and G, and scenes better / worse by more than 0.005."""
    d = {r["seed"]: r[key] - r["model"] for r in rows}
    tags = {r["seed"]: r["tags"].split() for r in rows}

    def stat(seeds: Sequence[int]) -> tuple[float, int, int, int]:
        x = np.array([d[s] for s in seeds if s in d])
        if x.size == 0:
            return (float("nan"), 0, 0, 0)
        return (float(x.mean()), int((x > 0.005).sum()), int((x < -0.005).sum()), int(x.size))

    out: dict[str, Any] = {"T": stat(T_SEEDS), "G": stat(G_SEEDS)}
    for fam in FAMILIES:
        out[fam] = stat([s for s in d if fam in tags[s]])
    out["pass"] = (
        out["T"][0] >= 0.03
        and out["G"][0] >= -0.01
        and all(np.isnan(out[f][0]) or out[f][0] >= -0.01 for f in FAMILIES)
    )
    return out


def summary(paths: Sequence[Path]) -> str:
    """A markdown table of :func:`gate` for ``one`` and every variant."""
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines()]
    keys = ["one"] + [key_of(v) for v in VARIANTS]
    head = "| variant | T | G | " + " | ".join(FAMILIES) + " | gate |"
    lines = [head, "|" + "---|" * (len(FAMILIES) + 4)]
    for k in keys:
        g = gate(rows, k)
        cells = [f"{g[x][0]:+.3f} ({g[x][1]}/{g[x][2]}; {g[x][3]})" for x in ("T", "G", *FAMILIES)]
        lines.append(f"| {k} | " + " | ".join(cells) + f" | {'met' if g['pass'] else ''} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="", help="comma-separated scene seeds")
    ap.add_argument(
        "--summary", type=Path, nargs="*", default=None, help="print the gate table of these JSON lines"
    )
    ap.add_argument(
        "--hepta", default="", help="comma-separated seeds of the dev suite's hepta (its 3-D set)"
    )
    ap.add_argument(
        "--variant", nargs="*", default=None, help="score only these variants (none: the releases only)"
    )
    ap.add_argument("--share", type=float, default=0.1, help="release two's share of epsilon")
    ap.add_argument(
        "--out", type=Path, default=Path("strands2.jsonl"), help="JSON lines, one per scene (appended)"
    )
    ap.add_argument("--cache", type=Path, default=None, help="folder of cached releases (pickles)")
    ap.add_argument("--models", type=Path, default=None, help="JSON lines with a cached model ARI per seed")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary(args.summary))
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    models = cached_models(args.models)
    chosen = None if args.variant is None else [v for v in VARIANTS if key_of(v) in args.variant]
    todo = [scene_bench.scene_of(int(s)) for s in args.seeds.split(",") if s]
    todo += [hepta(int(s)) for s in args.hepta.split(",") if s]
    for sc in todo:
        seed = sc.seed
        row = row_of(sc, args.share, args.cache, models.get(seed), chosen)
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{seed}: done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
