"""Clusters at their own level (``dpdbscan.post.levels``) against the flat
cut, from the same release.

:func:`levels_labels` is what the scene benchmark calls: the automatic
mode's model (one fit with ``eps="auto"``) and points in, labels out, through
``predict``'s rule on the selected spans. The command line is the design
study: variants of the selection on the tune scenes and the dev suite, each
release made once and shared by every variant.

    python -m experiments.levels_eval --suite tune --n-scenes 60 --out /tmp/levels_tune.json
    python -m experiments.levels_eval --suite dev --seeds 0-4
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

import numpy as np

from dpdbscan.post import levels
from dpdbscan.post.auto import Plan
from dpdbscan.post.sweep import sweep
from dpdbscan.predict import predict_spans, span_regions
from experiments import scene_bench, scenes


def plan_of(model) -> Plan:
    """The automatic mode's public plan, as its model records it."""
    a = model.auto
    return Plan(float(a["base_eps"]), tuple(float(x) for x in a["eps_candidates"]), None)


def labels_of(sel: levels.LevelSpans, X: np.ndarray) -> np.ndarray:
    """``predict``'s labels for the selected spans: the span of the nearest
    core sub-cell centre within alpha (the density test's border)."""
    keys, labs = span_regions(sel.grid, sel.core_keys, sel.labels, border=sel.alpha, to="centres")
    return predict_spans(sel.grid, keys, labs, X)


def levels_labels(model, X: np.ndarray, **kw) -> tuple[np.ndarray, str]:
    """Labels of ``X`` by the spans selected at their own levels from the
    automatic model's release, and a short note (alpha, spans, MinPts used)."""
    sel = levels.select_levels(model.histogram, model.params, plan_of(model), **kw)
    ms = sorted({s.min_samples for s in sel.spans})
    note = f"{sel.alpha:.5g}/{sel.n_spans}/" + "-".join(map(str, ms)) + ("/unsure" if sel.unsure else "")
    return labels_of(sel, X), note


# --------------------------------------------------------------------------- #
# the design study: variants on shared releases


class Case:
    """One release and what the variants share: the sweep on cells over
    every candidate alpha and, per alpha on demand, the sweep on sub-cells."""

    def __init__(self, name: str, X: np.ndarray, y: np.ndarray, model, n_score: int = 30_000, seed: int = 0):
        self.name, self.model = name, model
        self.hist, self.params, self.plan = model.histogram, model.params, plan_of(model)
        self.ms = levels.ladder(self.hist, self.plan)
        self.d = self.hist.grid.d
        self.total = float(np.maximum(self.hist.values, 0).sum())
        self.coarse = sweep(self.hist, replace(self.params, subcells=1), self.plan.eps, self.ms)
        self._fine: dict = {}
        pick = np.sort(np.random.default_rng(seed).permutation(X.shape[0])[:n_score])
        self.X, self.y = X[pick], y[pick]
        self.flat_alpha = float(model.grid.alpha)
        self.flat = scene_bench.ari(self.y, model.predict(self.X))

    def fine(self, alpha: float) -> list:
        if alpha not in self._fine:
            t = sweep(self.hist, self.params, [alpha], self.ms)
            self._fine[alpha] = [t[(alpha, m)] for m in self.ms]
        return self._fine[alpha]

    def coarse_levels(self, alpha: float) -> list:
        return [self.coarse[(alpha, m)] for m in self.ms]

    def score(self, sel: levels.LevelSpans) -> float:
        return scene_bench.ari(self.y, labels_of(sel, self.X))


def _variant(alpha_rule: str = "eom", scale: str = "lambda", method: str = "eom", share: float = 0.0,
             fine: bool = True) -> Callable:
    def at(c: Case, a: float, rows) -> levels.LevelSpans:
        mm = share * c.total
        lv = c.fine(a) if fine else c.coarse_levels(a)
        tree = levels.level_tree(lv, a, c.d, scale=scale, min_mass=mm, method=method)
        grid = c.hist.grid.subdivided(int(c.params.subcells) if fine else 1)
        return levels.finish(tree, grid, rows, len(c.plan.eps))

    def run(c: Case) -> levels.LevelSpans:
        mm = share * c.total
        rows = levels.alpha_scores(c.coarse, c.d, min_mass=mm, method=method)
        if alpha_rule == "oracle":  # study only: the labels choose alpha (the ceiling of any rule)
            return max((at(c, r[0], rows) for r in rows), key=c.score)
        if alpha_rule == "flat":
            a = c.flat_alpha
        else:
            a = max(rows, key=lambda r: (r[1], r[0]))[0]
        return at(c, a, rows)
    return run


VARIANTS: dict[str, Callable] = {
    "eom-lam": _variant(),
    "eom-logT": _variant(scale="logT"),
    "flatalpha-eom-lam": _variant(alpha_rule="flat"),
    "leaf": _variant(method="leaf"),
    "eom-lam-share0.005": _variant(share=0.005),
    "eom-lam-share0.01": _variant(share=0.01),
    "flatalpha-share0.005": _variant(alpha_rule="flat", share=0.005),
    "flatalpha-share0.01": _variant(alpha_rule="flat", share=0.01),
    "oracle-share0.005": _variant(alpha_rule="oracle", share=0.005),
    "oracle-share0": _variant(alpha_rule="oracle"),
}


def _cases(suite: str, n_scenes: int, seeds: range):
    from dpdbscan import DPDBSCAN

    if suite == "tune":
        for seed in scene_bench.TUNE_SEEDS[:n_scenes]:
            sc = scenes.scene(seed)
            yield f"scene {seed}", sc.X, sc.y, lambda sc=sc: scene_bench.auto_model(sc)
    else:
        from experiments import devsuite

        sets = devsuite.load_dev() if suite == "dev" else devsuite.load_paper()
        for ds in sets:
            for seed in seeds:
                def fit(ds=ds, seed=seed):
                    return DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=ds.bounds,
                                    random_state=seed).fit(ds.X).spans_
                yield f"{ds.name} {seed}", ds.X, ds.y, fit


def study(suite: str, variants: list[str], n_scenes: int = 60, seeds: range = range(5)) -> list[dict]:
    out = []
    for name, X, y, fit in _cases(suite, n_scenes, seeds):
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
        print(f"{name}: flat {case.flat:.2f} " + " ".join(f"{v} {r[v]:.2f}" for v in variants)
              + f" ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=("tune", "dev", "paper"), default="tune")
    ap.add_argument("--n-scenes", type=int, default=60)
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    a, _, b = args.seeds.partition("-")
    variants = [v for v in args.variants.split(",") if v]
    rows = study(args.suite, variants, args.n_scenes, range(int(a), int(b or a) + 1))
    print(table(rows, variants))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
