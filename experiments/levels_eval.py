"""Clusters at their own level (``selection="levels"``, the automatic mode's
default) against the flat cut (``selection="flat"``) of the same release:
figures, and the design study of the selection.

The figures fit the library's two selections with the same seed (the same
release) and draw the library's condensed-tree plot. The design study runs
variants of the selection on the tune scenes, the dev suite or the paper's
sets through the research hooks (:mod:`dpdbscan.research`), each release made
once and shared by every variant.

    python -m experiments.levels_eval --suite tune --n-scenes 100 --out /tmp/levels_tune.json
    python -m experiments.levels_eval --suite dev --seeds 0-4
    python -m experiments.levels_eval --figure 10100 --out docs/images/levels_scene.png
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN, SpanModel
from dpdbscan.research import (
    ladder_sweep,
    levels_alpha_scores,
    levels_finish,
    levels_ladder,
    levels_scale,
    levels_select,
    levels_tree,
    plot_condensed_tree,
    predict_spans,
    span_regions,
)

from . import scene_bench, scenes


def labels_of(sel: Any, X: np.ndarray) -> np.ndarray:
    """``predict``'s labels for a selection of the study: the span of the
    nearest core sub-cell centre within alpha (the density test's border)."""
    keys, labs = span_regions(sel.grid, sel.core_keys, sel.labels, border=sel.alpha, to="centres")
    return predict_spans(sel.grid, keys, labs, X)


def own_levels(model: SpanModel) -> str:
    """The MinPts a level selection took its spans at, as text."""
    ms = sorted({int(lv["min_samples"]) for lv in (model.auto or {}).get("levels") or []})
    return "/".join(map(str, ms)) or "-"


def both(X: np.ndarray, bounds: Any, seed: int, **kw: Any) -> tuple[SpanModel, SpanModel]:
    """The flat cut and the level selection of one automatic release (the same seed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flat, lev = (
            DPDBSCAN(
                "auto", min_samples="auto", epsilon=1.0, bounds=bounds, random_state=seed, selection=s, **kw
            )
            .fit(X)
            .spans_
            for s in ("flat", "levels")
        )
    return flat, lev


def figure(seed: int, path: Path, max_points: int = 30_000) -> None:
    """A tune scene (2-D) as the truth, the flat cut and the level selection
    label it (one release), and the condensed tree of the selection."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if seed not in scene_bench.TUNE_SEEDS:
        raise SystemExit("figures are drawn from tune scenes only")
    sc = scenes.scene(seed)
    model, sel = both(sc.X, sc.bounds, sc.seed)
    pick = np.random.default_rng(0).permutation(sc.n)[:max_points]
    X = sc.X[pick]
    fig, axes = plt.subplots(1, 4, figsize=(22, 5.2), gridspec_kw={"width_ratios": [1, 1, 1, 1.2]})
    flat, lev = model.predict(X), sel.predict(X)
    panels = (
        (axes[0], sc.y[pick], f"truth: {sc.k} clusters, noise grey"),
        (
            axes[1],
            flat,
            f"flat cut: eps={model.grid.alpha:.3g}, MinPts={model.spec.min_samples}, "
            f"ARI {scene_bench.ari(sc.y[pick], flat):.2f}",
        ),
        (
            axes[2],
            lev,
            f"own levels: eps={sel.grid.alpha:.3g}, MinPts {own_levels(sel)}, "
            f"ARI {scene_bench.ari(sc.y[pick], lev):.2f}",
        ),
    )
    for ax, lab, title in panels:
        noise = lab < 0
        ax.scatter(X[noise, 0], X[noise, 1], s=0.2, c="0.8")
        ax.scatter(X[~noise, 0], X[~noise, 1], s=0.3, c=lab[~noise] % 20, cmap="tab20", vmin=0, vmax=19)
        ax.set_title(title, fontsize=9)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
    plot_condensed_tree(sel, axes[3])
    fig.suptitle(sc.describe(), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def set_figure(name: str, path: Path, seed: int = 0, max_points: int = 100_000) -> None:
    """A data set of experiments/datasets.py (2-D) labelled by the flat cut and
    by the level selection of the same automatic release."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments import datasets

    ds = datasets.load(name)
    model, sel = both(ds.X, ds.bounds, seed)
    P = ds.X[np.random.default_rng(0).permutation(ds.n)[:max_points]]
    fig, axes = plt.subplots(1, 2, figsize=(12, 6.5))
    for ax, lab, title in (
        (axes[0], model.predict(P), f"flat cut: eps={model.grid.alpha:.3g}, MinPts {model.spec.min_samples}"),
        (axes[1], sel.predict(P), f"own levels: eps={sel.grid.alpha:.3g}, MinPts {own_levels(sel)}"),
    ):
        k = lab >= 0
        ax.scatter(P[~k, 0], P[~k, 1], s=0.1, c="0.8")
        ax.scatter(P[k, 0], P[k, 1], s=0.2, c=lab[k] % 10, cmap="tab10", vmin=0, vmax=9)
        ax.set_xlim(ds.bounds[0][0], ds.bounds[1][0])
        ax.set_ylim(ds.bounds[0][1], ds.bounds[1][1])
        ax.set_aspect("equal")
        big = np.bincount(lab[k]).max() / lab.size if k.any() else 0.0
        ax.set_title(
            f"{title}: {int(lab.max()) + 1} spans, the largest holds {100 * big:.0f}% of the points",
            fontsize=9,
        )
    fig.suptitle(f"{ds.title}, epsilon = 1, one automatic release (seed {seed}); grey: noise", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=70)


# --------------------------------------------------------------------------- #
# the design study: variants on shared releases


class Case:
    """One release and what the variants share: the sweep on cells over
    every candidate alpha and, per alpha on demand, the sweep on sub-cells."""

    def __init__(self, name: str, X: np.ndarray, y: np.ndarray, model, n_score: int = 30_000, seed: int = 0):
        # model: the flat cut's (selection="flat"); its release and spec serve every variant
        self.name, self.model = name, model
        self.hist, self.params = model.histogram, model.spec
        self.eps = tuple(float(a) for a in model.auto["eps_candidates"])
        self.ms = levels_ladder(self.hist)
        self.d = self.hist.grid.d
        self.total = float(np.maximum(self.hist.values, 0).sum())
        self.coarse = ladder_sweep(self.hist, replace(self.params, subcells=1), self.eps, self.ms)
        self._fine: dict = {}
        pick = np.sort(np.random.default_rng(seed).permutation(X.shape[0])[:n_score])
        self.X, self.y = X[pick], y[pick]
        self.flat_alpha = float(model.grid.alpha)
        self.flat = scene_bench.ari(self.y, model.predict(self.X))

    def fine(self, alpha: float) -> list:
        if alpha not in self._fine:
            t = ladder_sweep(self.hist, self.params, [alpha], self.ms)
            self._fine[alpha] = [t[(alpha, m)] for m in self.ms]
        return self._fine[alpha]

    def coarse_levels(self, alpha: float) -> list:
        return [self.coarse[(alpha, m)] for m in self.ms]

    def score(self, sel: Any) -> float:
        return scene_bench.ari(self.y, labels_of(sel, self.X))


def _variant(
    alpha_rule: str = "eom", scale: str = "lambda", method: str = "eom", share: float = 0.0, fine: bool = True
) -> Callable:
    def at(c: Case, a: float, rows) -> Any:
        mm = share * c.total
        lv = c.fine(a) if fine else c.coarse_levels(a)
        tree = levels_tree(lv, a, c.d, scale=scale, min_mass=mm, method=method)
        grid = c.hist.grid.subdivided(int(c.params.subcells) if fine else 1)
        return levels_finish(tree, grid, rows, len(c.eps))

    def run(c: Case) -> Any:
        mm = share * c.total
        rows = levels_alpha_scores(c.coarse, c.d, min_mass=mm, method=method)
        if alpha_rule == "oracle":  # study only: the labels choose alpha (the ceiling of any rule)
            return max((at(c, r[0], rows) for r in rows), key=c.score)
        if alpha_rule == "flat":
            a = c.flat_alpha
        else:
            a = max(rows, key=lambda r: (r[1], r[0]))[0]
        return at(c, a, rows)

    return run


def _final(**kw) -> Callable:
    """The library's own selection (``select_levels``) with options ``kw``."""

    def run(c: Case) -> Any:
        return levels_select(c.hist, c.params, c.eps, coarse=c.coarse, **kw)

    return run


VARIANTS: dict[str, Callable] = {
    "levels": _final(),
    "levels-bottom": _final(bottom=True),
    "levels-share0.005": _final(min_share=0.005),
    "levels-share0.01": _final(min_share=0.01),
    "max-score": _variant(share=0.005),
    "flat-alpha": _variant(alpha_rule="flat", share=0.005),
    "oracle-alpha": _variant(alpha_rule="oracle", share=0.005),
}


def _cases(suite: str, n_scenes: int, seeds: range, guess_n: bool = False):
    if suite == "tune":
        for seed in scene_bench.TUNE_SEEDS[:n_scenes]:
            sc = scenes.scene(seed)
            yield f"scene {seed}", sc.X, sc.y, lambda sc=sc: scene_bench.auto_model(sc, "flat")
    else:
        from experiments import devsuite

        sets = devsuite.load_dev() if suite == "dev" else devsuite.load_paper()
        for ds in sets:
            for seed in seeds:

                def fit(ds=ds, seed=seed):
                    extra = {"n_expected": float(ds.X.shape[0])} if guess_n else {}
                    return (
                        DPDBSCAN(
                            "auto",
                            min_samples="auto",
                            epsilon=1.0,
                            bounds=ds.bounds,
                            random_state=seed,
                            selection="flat",
                            **extra,
                        )
                        .fit(ds.X)
                        .spans_
                    )

                yield f"{ds.name} {seed}", ds.X, ds.y, fit


def study(
    suite: str, variants: list[str], n_scenes: int = 60, seeds: range = range(5), guess_n: bool = False
) -> list[dict]:
    out = []
    for name, X, y, fit in _cases(suite, n_scenes, seeds, guess_n):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case = Case(name, X, y, fit())
            r = {"case": name, "flat": case.flat, "flat_alpha": case.flat_alpha}
            for v in variants:
                sel = VARIANTS[v](case)
                r[v] = case.score(sel)
                r[v + ":alpha"] = sel.alpha
                r[v + ":spans"] = sel.n_spans
        out.append(r)
        print(
            f"{name}: flat {case.flat:.2f} "
            + " ".join(f"{v} {r[v]:.2f}" for v in variants)
            + f" ({time.perf_counter() - t0:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    return out


def table(rows: list[dict], variants: list[str]) -> str:
    cols = ["flat", *variants]
    lines = ["| variant | mean ARI | 95% CI | >= flat |", "|---|---|---|---|"]
    for v in cols:
        vals = [r[v] for r in rows]
        m, lo, hi = scene_bench.mean_ci(vals)
        wins = sum(r[v] >= r["flat"] - 1e-12 for r in rows)
        lines.append(f"| {v} | {m:.3f} | [{lo:.3f}, {hi:.3f}] | {wins} of {len(rows)} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# per-alpha features, for designing the choice of alpha offline

SHARES = (0.0, 0.002, 0.005, 0.01, 0.02)


def alpha_features(c: Case, shares=SHARES) -> list[dict]:
    """For every candidate alpha and share: the cells' tree (scores on
    lambda, its range, clusters, selected mass) and the ARI of the
    sub-cells' selection (study only: the labels)."""
    out = []
    for a in c.eps:
        lv = c.coarse_levels(a)
        lam = levels_scale(lv, a, c.d, "lambda")
        for s in shares:
            t = levels_tree(lv, a, c.d, scale="lambda", min_mass=s * c.total)
            ft = levels_tree(c.fine(a), a, c.d, scale="lambda", min_mass=s * c.total)
            sel = levels_finish(ft, c.hist.grid.subdivided(int(c.params.subcells)), [], 1)
            tree = [(x.parent, x.birth, list(x.masses)) for x in t.clusters]
            picked = [t.clusters[i] for i in t.selected]
            out.append(
                {
                    "alpha": a,
                    "share": s,
                    "score": t.score,
                    "n": len(t.selected),
                    "tree": tree,
                    "lam": lam,
                    "sel": [(x.birth, x.death, x.masses[0], x.stability) for x in picked],
                    "fine_score": ft.score,
                    "fine_n": len(ft.selected),
                    "ari": c.score(sel),
                }
            )
    return out


def dump(suite: str, n_scenes: int, seeds: range, path: Path) -> None:
    out = []
    for name, X, y, fit in _cases(suite, n_scenes, seeds):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case = Case(name, X, y, fit())
            out.append(
                {
                    "case": name,
                    "d": case.d,
                    "total": case.total,
                    "ms": case.ms,
                    "flat": case.flat,
                    "flat_alpha": case.flat_alpha,
                    "alphas": alpha_features(case),
                }
            )
        path.write_text(json.dumps(out))
        print(f"{name} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=("tune", "dev", "paper"), default="tune")
    ap.add_argument("--n-scenes", type=int, default=60)
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--guess-n", action="store_true", help="dev/paper: pass the set's size as the public guess n_expected"
    )
    ap.add_argument(
        "--figure",
        type=int,
        default=None,
        metavar="SEED",
        help="draw a tune scene's flat and level selections to --out (a .png)",
    )
    ap.add_argument(
        "--figure-set",
        default=None,
        metavar="NAME",
        help="draw a 2-D data set's flat and level selections to --out (a .png)",
    )
    ap.add_argument("--dump", type=Path, default=None, help="study: per-alpha features to this JSON file")
    args = ap.parse_args(argv)
    a, _, b = args.seeds.partition("-")
    if args.figure_set is not None:
        set_figure(args.figure_set, args.out or Path("levels.png"))
        return 0
    if args.figure is not None:
        figure(args.figure, args.out or Path("levels.png"))
        return 0
    if args.dump:
        dump(args.suite, args.n_scenes, range(int(a), int(b or a) + 1), args.dump)
        return 0
    variants = [v for v in args.variants.split(",") if v]
    rows = study(args.suite, variants, args.n_scenes, range(int(a), int(b or a) + 1), args.guess_n)
    print(table(rows, variants))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
