"""Each cluster at its own scale: the automatic mode's selection with alpha
chosen per cluster rather than once for the release (a study; nothing here
is the library's default).

The automatic mode builds one condensed tree per candidate alpha from the
same release and keeps the tree of one alpha (:mod:`dpdbscan.post.levelsearch`).
Thin shapes next to each other can be one span at the chosen alpha and two
at a smaller one, while the other clusters of the scene prefer the larger.
This study keeps the chosen alpha's selection and, span by span, replaces a
span by the spans a smaller candidate alpha selects inside it, when that
split passes a noise-aware test:

* ``rise``: each child lives (stays one significant span) from its birth
  MinPts to a MinPts at least ``z`` x the noise margin above it (the margin:
  its level's core threshold minus MinPts, the density test's allowance for
  the noise of an alpha-ball at that alpha); a split that noise explains
  dies within the margin;
* ``eom`` (optional): the children's total stability on HDBSCAN's lambda
  (one scale for every alpha) is at least the parent's, excess of mass
  across alphas.

Every span so selected is a span of the density test at its own (alpha,
MinPts) on the one release, among the candidates whose margins already take
beta / c: post-processing, no extra budget. Labels: the nearest core
sub-cell centre within the span's own alpha (``own``) or within the chosen
alpha for every span (``chosen``, what ``predict`` with one border gives).

    python -m experiments.scale_study --split close-tune --small-2d 80 --n-scenes 60
    python -m experiments.scale_study --split close-tune --dims 3 --n-scenes 60 --hdbscan
    python -m experiments.scale_study --suite dev --seeds 0-4

Per-scene selections are cached under ``--cache`` so the rules can be
re-scored without refitting. The numbers are in docs/parameters.md section 7.
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
from scipy.spatial import cKDTree

from dpdbscan import DPDBSCAN
from dpdbscan.research import ladder_sweep, levels_ladder, levels_select

from . import auto_mode, options, scene_bench

#: (name, z, eom) of the rules scored.
RULES: tuple[tuple[str, float, bool], ...] = (
    ("split z0", 0.0, False),
    ("split z0.5", 0.5, False),
    ("split z1", 1.0, False),
    ("split z2", 2.0, False),
    ("split z0 eom", 0.0, True),
    ("split z1 eom", 1.0, True),
)

#: (name, keyword arguments of :func:`extend`) of the extensions scored.
EXTENSIONS: tuple[tuple[str, dict], ...] = (
    ("add larger gap0.5", {"which": "larger", "gap": 0.5}),
    ("grow gap0.5 +add", {"grow": {"gap": 0.5}}),
    ("grow 1 step gap0.5 +add", {"grow": {"gap": 0.5, "steps": 1}}),
    ("grow share0.5 +add", {"grow": {"gap": 0.5, "share": 0.5}}),
    ("grow share0.3 +add", {"grow": {"gap": 0.5, "share": 0.3}}),
    ("grow share0.7 +add", {"grow": {"gap": 0.5, "share": 0.7}}),
    ("grow share0.5", {"grow": {"gap": 0.5, "share": 0.5, "add": False}}),
)


def _spans(sel: Any) -> list[dict]:
    """The selection's spans as plain records (keys, alpha, levels, stability)."""
    out = []
    for s in sel.spans:
        out.append(
            {
                "keys": sel.core_keys[sel.labels == s.span],
                "eps": float(sel.eps),
                "min_samples": int(s.min_samples),
                "death": int(s.death_min_samples),
                "margin": float(s.threshold) - float(s.min_samples),
                "stability": float(s.stability),
                "mass": float(s.mass),
            }
        )
    return out


def selections(model: Any) -> dict:
    """The default selection and every candidate alpha's own selection, all
    from ``model``'s release (the automatic mode's spec, beta / c)."""
    if model.auto.get("ties", "largest") != "largest":
        raise ValueError(
            "the study replicates near-ties of alpha to the largest only (a fit given n_expected)"
        )
    hist, spec = model.histogram, model.spec
    eps = [float(a) for a in model.auto["eps_candidates"]]
    share_of = "total" if hist.grid.d >= 3 else "positive"
    ms = levels_ladder(hist)
    coarse = ladder_sweep(hist, replace(spec, subcells=1), eps, ms)
    base = levels_select(hist, spec, eps, coarse=coarse, share_of=share_of)
    per = {a: _spans(levels_select(hist, spec, eps, alpha=a, coarse=coarse, share_of=share_of)) for a in eps}
    return {"grid": base.grid, "eps": float(base.eps), "base": _spans(base), "per": per, "candidates": eps}


def refine(sel: dict, z: float, eom: bool, overlap: float = 0.5) -> list[dict]:
    """The chosen alpha's spans, each replaced by the spans of the largest
    smaller candidate alpha that splits it into two or more children passing
    the test (module docstring); keys another span holds are left to it."""
    chosen = sel["eps"]
    smaller = sorted((a for a in sel["candidates"] if a < chosen), reverse=True)
    out: list[dict] = []
    for i, s in enumerate(sel["base"]):
        others = (
            np.concatenate([t["keys"] for j, t in enumerate(sel["base"]) if j != i])
            if len(sel["base"]) > 1
            else np.zeros(0, dtype=np.int64)
        )
        done = False
        for a in smaller:
            kids = []
            for c in sel["per"][a]:
                inside = np.isin(c["keys"], s["keys"]).mean() if c["keys"].size else 0.0
                if inside < overlap:
                    continue
                if c["death"] - c["min_samples"] < z * c["margin"]:
                    continue
                kids.append(c)
            if len(kids) < 2:
                continue
            if eom and sum(c["stability"] for c in kids) < s["stability"]:
                continue
            for c in kids:
                out.append({**c, "keys": c["keys"][~np.isin(c["keys"], others)]})
            done = True
            break
        if not done:
            out.append(s)
    return [s for s in out if s["keys"].size]


def _near(grid: Any, spans: Sequence[dict], keys: np.ndarray, eps: float, gap: float) -> bool:
    """Whether a core sub-cell centre of ``keys`` (a span of ``eps``) is within
    ``gap`` x (``eps`` + their alpha) of one of ``spans``' (or shares a key)."""
    pts = grid.cell_centres(grid.decode(keys))
    for t in spans:
        if np.isin(keys, t["keys"]).any():
            return True
        tree = cKDTree(grid.cell_centres(grid.decode(t["keys"])))
        if np.isfinite(tree.query(pts, distance_upper_bound=gap * (eps + t["eps"]))[0]).any():
            return True
    return False


def grow(sel: dict, gap: float = 0.5, add: bool = True, steps: int = 99, share: float = 1.0) -> list[dict]:
    """Each of the chosen alpha's spans at the largest larger candidate alpha
    (at most ``steps`` candidates up) at which one selected span holds it
    and comes near no other kept span (``gap`` as :func:`extend`): each
    cluster at its own largest extent, the rule the choice of alpha applies
    to the whole release; with ``share`` < 1 only where the kept span holds
    less than that share of the larger one's noisy mass (the chosen alpha
    kept only a peak of it). Then, with ``add``, :func:`extend` over the
    larger alphas."""
    larger = sorted(a for a in sel["candidates"] if a > sel["eps"])[:steps]
    kept = [s for s in sel["base"] if s["keys"].size]
    for i in range(len(kept)):
        cur = kept[i]
        others = kept[:i] + kept[i + 1 :]
        for a in larger:
            over = [c for c in sel["per"][a] if np.isin(c["keys"], cur["keys"]).any()]
            if len(over) != 1 or _near(sel["grid"], others, over[0]["keys"], a, gap):
                break
            if cur["mass"] >= share * over[0]["mass"]:
                break
            cur = over[0]
        kept[i] = cur
    if not add:
        return kept
    return extend({**sel, "base": kept}, which="larger", gap=gap)


def extend(sel: dict, which: str = "all", gap: float = 1.0, rise: float = 1.0) -> list[dict]:
    """The chosen alpha's spans plus the spans other candidate alphas select
    where the chosen selection has nothing: a span of alpha a is added when
    none of its core sub-cell centres is within ``gap`` x (a + the other
    span's alpha) of a span already kept, and it lives from its birth MinPts
    to at least ``rise`` x that MinPts. ``which``: "all" candidates (nearest
    the chosen alpha first), "larger" or "smaller" only."""
    grid, chosen = sel["grid"], sel["eps"]
    cands = [a for a in sel["candidates"] if a != chosen]
    if which == "larger":
        cands = [a for a in cands if a > chosen]
    elif which == "smaller":
        cands = [a for a in cands if a < chosen]
    cands.sort(key=lambda a: abs(np.log(a / chosen)))
    kept = [s for s in sel["base"] if s["keys"].size]
    trees = [(cKDTree(grid.cell_centres(grid.decode(s["keys"]))), s["eps"]) for s in kept]
    for a in cands:
        for c in sel["per"][a]:
            if not c["keys"].size or c["death"] < rise * c["min_samples"]:
                continue
            pts = grid.cell_centres(grid.decode(c["keys"]))
            if any(np.isfinite(t.query(pts, distance_upper_bound=gap * (a + e))[0]).any() for t, e in trees):
                continue
            kept.append(c)
            trees.append((cKDTree(pts), a))
    return kept


def labels(grid: Any, spans: Sequence[dict], X: np.ndarray, border: float | None = None) -> np.ndarray:
    """Each point's span: the nearest core sub-cell centre within the span's
    alpha (or ``border`` for every span), else noise (-1)."""
    best = np.full(X.shape[0], np.inf)
    lab = np.full(X.shape[0], -1, dtype=np.int64)
    for i, s in enumerate(spans):
        if not s["keys"].size:
            continue
        centres = grid.cell_centres(grid.decode(s["keys"]))
        r = s["eps"] if border is None else border
        dist, _ = cKDTree(centres).query(X, distance_upper_bound=r)
        take = (dist <= r) & (dist < best)
        best[take], lab[take] = dist[take], i
    return lab


def score_case(sel: dict, X: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """ARI of the default and of every rule, both labellings."""
    out = {"default": scene_bench.ari(y, labels(sel["grid"], sel["base"], X))}
    for name, z, eom in RULES:
        spans = refine(sel, z, eom)
        out[name] = scene_bench.ari(y, labels(sel["grid"], spans, X))
        out[name + " chosen"] = scene_bench.ari(y, labels(sel["grid"], spans, X, border=sel["eps"]))
        out[name + ":n"] = float(len(spans))
    for name, kw in EXTENSIONS:
        spans = grow(sel, **kw["grow"]) if "grow" in kw else extend(sel, **kw)
        out[name] = scene_bench.ari(y, labels(sel["grid"], spans, X))
        out[name + " chosen"] = scene_bench.ari(y, labels(sel["grid"], spans, X, border=sel["eps"]))
        out[name + ":n"] = float(len(spans))
    out["default:n"] = float(len(sel["base"]))
    return out


def _fit(X, bounds, seed: int) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (
            DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=bounds, random_state=seed).fit(X).spans_
        )


def _cached(cache: Path, name: str, X, y, bounds, seed: int) -> dict:
    path = cache / f"{name.replace('/', '_')}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    model = _fit(X, bounds, seed)
    sel = selections(model)
    sel["model_ari"] = scene_bench.ari(y, model.predict(X))
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(sel))
    return sel


def cases(args: argparse.Namespace):
    if args.suite == "scenes":
        if args.dims is not None:
            seeds = scene_bench.split_seeds(args.split, args.n_scenes, dims=args.dims)
        else:
            seeds = scene_bench.small_2d_seeds(args.split, args.small_2d, args.n_scenes)
        for seed in seeds:
            sc = scene_bench.scene_of(seed)
            yield str(seed), sc.X, sc.y, sc.bounds, seed, sc
    else:
        sets, _ = auto_mode.load("dev", None)
        for ds in sets:
            for seed in options.seed_range(args.seeds):
                yield f"{ds.name}/{seed}", ds.X, ds.labels, ds.bounds, seed, None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=("scenes", "dev"), default="scenes")
    ap.add_argument("--split", default="close-tune", choices=tuple(scene_bench.SPLITS))
    ap.add_argument("--small-2d", type=int, default=80, metavar="FIRST")
    ap.add_argument("--n-scenes", type=int, default=60)
    ap.add_argument("--dims", type=int, help="the scenes of this dimension among the first N")
    ap.add_argument("--seeds", default="0-4", help="dev suite: the fits' seeds")
    ap.add_argument("--cache", type=Path, default=Path("results/cache/scale"))
    ap.add_argument("--out", type=Path, help="per-case rows (CSV)")
    ap.add_argument("--hdbscan", action="store_true", help="scenes: non-private HDBSCAN beside them")
    args = ap.parse_args(argv)
    rows: list[dict] = []
    for name, X, y, bounds, seed, sc in cases(args):
        t0 = time.perf_counter()
        sel = _cached(args.cache / args.suite, name, X, y, bounds, seed)
        r = {"case": name, "model": sel["model_ari"], "eps": sel["eps"], **score_case(sel, X, y)}
        if args.hdbscan and sc is not None:
            r["hdbscan"] = scene_bench.hdbscan_ari(sc)
        rows.append(r)
        print(
            f"{name}: model {r['model']:.3f} default {r['default']:.3f} "
            + " ".join(f"{k} {r[k]:.3f}" for k in [*(x[0] for x in RULES), *(x[0] for x in EXTENSIONS)])
            + f" ({time.perf_counter() - t0:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    keys = [k for k in rows[0] if k not in ("case",)]
    print("| rule | mean ARI | better / worse than default |\n|---|---|---|")
    base = np.array([r["default"] for r in rows])
    for k in keys:
        if k.endswith(":n") or k == "eps":
            continue
        v = np.array([r[k] for r in rows])
        print(f"| {k} | {v.mean():.4f} | {(v > base + 1e-9).sum()} / {(v < base - 1e-9).sum()} |")
    if args.out:
        with args.out.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
