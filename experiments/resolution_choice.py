"""Choosing the automatic mode's resolution per data set (issue 28 item 3;
results/scenes/resolution-choice.md).

The automatic mode's base release has about n epsilon / 0.3 cells
(``autoplan.POINTS_PER_CELL``). This study asks whether choosing that
resolution per data set, from what is already released, closes the gap to
non-private HDBSCAN on :func:`experiments.scenes.curves_scene`'s families:

* the oracle: per scene, the best of the library (0.3 points per cell), a
  finer base (``ppc15``, 0.15) and a coarser one (``ppc6``, 0.6), three
  draws each (rows of :mod:`experiments.curves`);
* selectors from released quantities of the library's own release (the chosen
  eps's index among the candidates, clusters per candidate): an optimistic
  proxy for a pilot release, since here they read a release of the whole
  epsilon for free;
* ``band``: a rule on the DP count (1% of epsilon, already spent by the
  automatic mode) and d, post-processing of that count: in 2-D at a count
  of 2,000-6,000 0.6 points per cell, else 0.3 (:func:`band_points`; a first
  version also took 0.15 in 3-D from a count of 2,000).

    PYTHONPATH=src:. python -m experiments.resolution_choice --features --seeds 70000-70079 --out R
    PYTHONPATH=src:. python -m experiments.resolution_choice --oracle R --rows CURVES_ROWS,TUNE_ROWS
    PYTHONPATH=src:. python -m experiments.resolution_choice --general thin --seeds 70000-70199 --out G
    PYTHONPATH=src:. python -m experiments.resolution_choice --general-summary G

The 3-D rows of results/scenes/resolution-general.jsonl were run with the
first versions of :data:`BAND` (their ``rule`` field says which).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
import time
import warnings
from collections.abc import Iterator, Sequence

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.params import sizing
from dpdbscan.plan import autoplan
from dpdbscan.research import auto_points_per_cell

from . import scene_bench, scenes
from .curves import DRAW_STEP, FAMILIES, read, seeds_of

#: the band rule: (d, lowest DP count, highest DP count, points per base cell)
#: (in 3-D from 2,000 at 0.15 was tried on tune and dropped: results/scenes/resolution-choice.md)
BAND = ((2, 2_000.0, 6_000.0, 0.6),)
GENERATORS = {
    "scene": scenes.scene,
    "close": scenes.close_scene,
    "thin": scenes.thin_scene,
    "curves": scenes.curves_scene,
}


def band_of(d: int, count: float | None) -> float | None:
    """The band rule's points per base cell for ``d`` and the DP count, or
    None where the library's holds."""
    for dd, lo, hi, ppc in BAND:
        if d == dd and count is not None and lo <= count < hi:
            return ppc
    return None


@contextlib.contextmanager
def band_points(fired: list | None = None) -> Iterator[None]:
    """Research: the automatic plan's points per cell by :func:`band_of` (d
    and the DP count, which the automatic mode has already released and
    hands to ``sizing.finer_n`` just before the plan); public inputs only.
    ``fired`` collects whether the rule changed the plan."""
    old_plan, old_finer = autoplan.plan, sizing.finer_n
    state: dict = {"count": None}

    def finer(estimate, d=2):
        state["count"] = None if estimate is None else float(estimate)
        return old_finer(estimate, d)

    def plan(lower, upper, eta, eps, min_samples, epsilon, max_cells, n_expected, **kw):
        ppc = band_of(int(np.asarray(lower).size), state["count"])
        state["count"] = None
        if fired is not None:
            fired.append(ppc is not None)
        if ppc is None:
            return old_plan(lower, upper, eta, eps, min_samples, epsilon, max_cells, n_expected, **kw)
        with auto_points_per_cell(ppc):
            return old_plan(lower, upper, eta, eps, min_samples, epsilon, max_cells, n_expected, **kw)

    autoplan.plan, sizing.finer_n = plan, finer
    try:
        yield
    finally:
        autoplan.plan, sizing.finer_n = old_plan, old_finer


def fit(sc: scenes.Scene, seed: int, draw: int = 0, variant: str = "today") -> tuple:
    """One automatic fit (ε = 1, the scene's box); ``variant`` "band" under
    :func:`band_points`. Returns the model and whether the rule fired."""
    fired: list = []
    block = band_points(fired) if variant == "band" else contextlib.nullcontext()
    with block, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(
            "auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed + draw * DRAW_STEP
        )
        model = est.fit(sc.X).spans_
    return model, any(fired)


def features(seed: int, draw: int = 0) -> dict:
    """The library's fit of curves scene ``seed`` and what its release says
    (no labels, no points): the DP count, the chosen eps's index among the
    candidates, each candidate's number of selected clusters."""
    sc = scenes.curves_scene(seed)
    model, _ = fit(sc, seed, draw)
    a = model.auto
    cands = list(a["eps_candidates"])
    return {
        **sc.row_head(seed, "features"),
        "ari": scene_bench.ari(sc.y, model.predict(sc.X)),
        "count": float(model.release.size_estimate.value),
        "idx": cands.index(a["eps"]) if a["eps"] in cands else -1,
        "ncand": len(cands),
        "clusters": [int(e[2]) for e in a["eps_scores"]],
        "spans": int(model.n_spans),
    }


def general_row(
    name: str, seed: int, variant: str, draw: int = 0, lo: float = 1_500, hi: float = 7_000
) -> dict | None:
    """``variant`` ("today" or "band") on generator ``name``'s scene ``seed``,
    draw ``draw``; None where the band rule cannot fire (d = 2 and n outside
    ``lo``-``hi``, far enough from 2,000-6,000 for the DP count, whose noise
    has a standard deviation of about 140: the release is the library's bit
    for bit; the row's ``fired`` says whether it fired)."""
    sc = GENERATORS[name](seed)
    if sc.d == 2 and not lo <= sc.n <= hi or all(sc.d != row[0] for row in BAND):
        return None
    t = time.process_time()
    model, fired = fit(sc, seed, draw, variant)
    return {
        **sc.row_head(seed, variant if draw == 0 else f"{variant}@{draw}"),
        "gen": name,
        "fired": fired,
        "ari": scene_bench.ari(sc.y, model.predict(sc.X)),
        "cpu": time.process_time() - t,
    }


def family_tags(tags: str) -> list[str]:
    return [t for t in tags.split() if t in FAMILIES]


def mean_draws(rows: dict, seed: int, v: str) -> float:
    return float(np.mean([rows[seed][v if r == 0 else f"{v}@{r}"]["ari"] for r in range(3)]))


SELECTORS = {
    "today": lambda f: "today",
    # finer where the smallest candidate was chosen, coarser where the largest
    "idx": lambda f: "ppc15" if f["idx"] == 0 else "ppc6" if f["idx"] == f["ncand"] - 1 else "today",
    # finer where the smallest candidate was chosen
    "idx0": lambda f: "ppc15" if f["idx"] == 0 else "today",
    # finer where the smallest was chosen and clusters fall with eps
    "idx0fall": lambda f: "ppc15" if f["idx"] == 0 and f["clusters"][0] > f["clusters"][-1] else "today",
    # finer where the smallest was chosen and no candidate sees more than 3
    "idx0few": lambda f: "ppc15" if f["idx"] == 0 and max(f["clusters"]) <= 3 else "today",
    # the first band rule: also 0.15 in 3-D from a count of 2,000
    "band3": lambda f: (
        "ppc15"
        if f["d"] == 3 and f["count"] >= 2_000
        else "ppc6"
        if f["d"] == 2 and 2_000 <= f["count"] < 6_000
        else "today"
    ),
    # the band rule on d and the DP count
    "band": lambda f: "ppc6" if f["d"] == 2 and 2_000 <= f["count"] < 6_000 else "today",
}


def oracle(rows: dict, feats: dict) -> str:
    """Per family and dimension: the library, ppc15, ppc6 (three-draw means),
    the oracle of {library, ppc15, ppc6} (max of the means, and chosen on two
    draws, scored on the third), every selector, HDBSCAN."""
    groups: dict = collections.defaultdict(list)
    for seed, f in feats.items():
        R = rows[seed]
        A = {v: [R[v if r == 0 else f"{v}@{r}"]["ari"] for r in range(3)] for v in ("today", "ppc15", "ppc6")}
        M = {v: float(np.mean(a)) for v, a in A.items()}
        cv = []
        for r in range(3):
            others = [e for e in range(3) if e != r]
            best = max(A, key=lambda v: (np.mean([A[v][e] for e in others]), v == "today"))
            cv.append(A[best][r])
        out = [M["today"], M["ppc15"], M["ppc6"], max(M.values()), float(np.mean(cv))]
        out += [M[sel(f)] for sel in SELECTORS.values()][1:]
        out.append(R["hdbscan"]["ari"])
        for g in (
            ["all", f"{f['d']}-D"]
            + family_tags(f["tags"])
            + [f"{f['d']}-D {x}" for x in family_tags(f["tags"])]
        ):
            groups[g].append(out)
    head = ["today", "ppc15", "ppc6", "oracle max", "oracle cv", *list(SELECTORS)[1:], "HDBSCAN"]
    lines = ["| group | scenes | " + " | ".join(head) + " |", "|---" * (len(head) + 2) + "|"]
    order = sorted(groups, key=lambda g: (g != "all", "-D" in g and " " in g, g))
    for g in order:
        v = np.array(groups[g])
        lines.append(f"| {g} | {len(v)} | " + " | ".join(f"{x:.3f}" for x in v.mean(0)) + " |")
    return "\n".join(lines)


def general_summary(path: str) -> str:
    """Per generator, dimension and rule version (a row's ``rule``: "2d" the
    band rule, "band3-all" / "band3-2000" the first versions' 3-D part at
    every count / from 2,000): today against band, paired, on the scenes
    where the rule fired."""
    rows: dict = collections.defaultdict(dict)
    for line in open(path):
        r = json.loads(line)
        rows[(r["gen"], r["seed"], r.get("rule", "2d"))][r["variant"]] = r
    groups: dict = collections.defaultdict(list)
    for (gen, _, rule), R in rows.items():
        if "today" not in R or "band" not in R or not R["band"]["fired"]:
            continue
        groups[(gen, R["today"]["d"], rule)].append((R["today"]["ari"], R["band"]["ari"]))
    lines = [
        "| generator | d | rule | fired on | today | band | paired | better / worse beyond 0.02 | worst |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for g in sorted(groups):
        v = np.array(groups[g])
        d = v[:, 1] - v[:, 0]
        lines.append(
            f"| {g[0]} | {g[1]} | {g[2]} | {len(v)} | {v[:, 0].mean():.3f} | {v[:, 1].mean():.3f} | "
            f"{d.mean():+.3f} | "
            f"{int((d > 0.02).sum())} / {int((d < -0.02).sum())} | {d.min():+.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=seeds_of)
    ap.add_argument("--out")
    ap.add_argument("--features", action="store_true", help="the library's release features of curves scenes")
    ap.add_argument("--oracle", help="features rows; with --rows: the oracle and selector table")
    ap.add_argument("--rows", help="comma-separated experiments.curves rows files")
    ap.add_argument("--general", help="generator (scene, close, thin, curves): today and band, draw 0")
    ap.add_argument("--draws", type=int, default=1, help="--general: draws 0..D-1 of each variant")
    ap.add_argument(
        "--span", default="1500-7000", help="--general: the 2-D sizes fitted (the rule cannot fire outside)"
    )
    ap.add_argument("--general-summary")
    args = ap.parse_args(argv)
    if args.oracle:
        rows: dict = collections.defaultdict(dict)
        for p in args.rows.split(","):
            for (seed, v), r in read(p).items():
                rows[seed][v] = r
        feats = {json.loads(x)["seed"]: json.loads(x) for x in open(args.oracle)}
        print(oracle(rows, feats))
        return 0
    if args.general_summary:
        print(general_summary(args.general_summary))
        return 0
    if not args.seeds or not args.out:
        ap.error("--seeds and --out")
    for seed in args.seeds:
        lo, hi = (float(x) for x in args.span.split("-"))
        todo = (
            [features(seed)]
            if args.features
            else [
                general_row(args.general, seed, v, r, lo, hi)
                for r in range(args.draws)
                for v in ("today", "band")
            ]
        )
        for row in todo:
            if row is None:
                continue
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(seed, row["variant"], f"{row['ari']:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
