"""Label-free rules for the automatic mode's alpha, scored on the same
release (issue 28 item 3; a study, nothing here is the library's default).

For one scene's automatic release (epsilon = 1, ``random_state`` = the
seed) it keeps, per candidate alpha ``a_i`` of the plan:

* the release's own, label-free facts: the candidate's score and number of
  selected clusters (``eps_scores`` of the model: total stability on
  lambda), and its level selection's core sub-cells with their span ids;
* the agreement (adjusted Rand index over core sub-cells, a sub-cell that
  is core in one selection only labelled -1 in the other) between every
  two candidates' selections: ``union`` over the sub-cells core in either,
  ``inter`` over those core in both;
* the ARI against the scene's labels of what the library would return had
  its choice been ``a_i``: ``a_i``'s selection, then spans of larger
  candidates grown or added (:func:`dpdbscan.research.ownscale_widen`, the 2-D
  default), labelled as ``predict`` labels (the nearest core sub-cell
  centre within the span's own alpha).

A rule maps the label-free facts to an index; its score on a scene is that
index's ARI, so every rule is scored on the same releases without refitting
(:data:`RULES`). ``model`` is the library's own ``predict`` and the
``default`` rule (near-ties to the largest alpha) must reproduce it.

    python -m experiments.auto_rules --split small-tune --n-scenes 60 \
        --out results/scenes/rules-small-tune
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import adjusted_rand_score

from dpdbscan import DPDBSCAN
from dpdbscan.research import OWNSCALE_DIMS, ladder_sweep, levels_ladder, levels_select, ownscale_widen

from . import scale_study, scene_bench


def fit(sc: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (
            DPDBSCAN(
                "auto",
                min_samples="auto",
                epsilon=getattr(sc, "epsilon", 1.0),
                bounds=sc.bounds,
                random_state=getattr(sc, "random_state", sc.seed),
            )
            .fit(sc.X)
            .spans_
        )


@dataclass(frozen=True)
class Case:
    """A labelled set that is not a scene (``--generalization``)."""

    seed: int
    X: np.ndarray
    y: np.ndarray
    bounds: tuple
    epsilon: float
    name: str
    #: the fit's seed where it is not ``seed`` (the dev suite's noise seed)
    random_state: int | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def tags(self) -> tuple:
        return (self.name.replace(" ", "_"),)


def generalization_cases(seeds: Sequence[int]) -> list[Case]:
    """:func:`experiments.generalization.cases` (12 scikit-learn sets, 500 to
    20,000 points, bounds [-4, 4]^2) in the automatic mode, per seed; a
    case's seed is 1000 x its index + the noise seed."""
    from . import generalization

    return [
        Case(1000 * i + s, X, y, (-4.0, 4.0), eps, name)
        for i, (name, X, y, eps) in enumerate(generalization.cases())
        for s in seeds
    ]


def dev_cases(seeds: Sequence[int]) -> list[Case]:
    """The dev suite's 2-D sets (:func:`experiments.devsuite.load_dev`, 20,000
    points each) at epsilon = 1, fitted with the noise seeds the dev suite
    uses; a case's key is 1000 x the set's index + the seed."""
    from . import devsuite

    sets = [ds for ds in devsuite.load_dev() if ds.X.shape[1] == 2]
    return [
        Case(1000 * i + s, ds.X, ds.labels, ds.bounds, 1.0, ds.name, random_state=s)
        for i, ds in enumerate(sets)
        for s in seeds
    ]


def own_spans(sel: Any) -> list[dict]:
    """A selection's spans, each with its own alpha (as ``predict`` draws them)."""
    return [{"keys": sel.core_keys[sel.labels == s.span], "eps": float(s.eps)} for s in sel.spans]


def agreement(a: Any, b: Any, how: str) -> float:
    """ARI between two selections' core sub-cells (module docstring)."""
    ka, kb = a.core_keys, b.core_keys
    keys = np.union1d(ka, kb) if how == "union" else np.intersect1d(ka, kb)
    if keys.size < 2:
        return 0.0

    def lab(sel: Any) -> np.ndarray:
        out = np.full(keys.size, -1, dtype=np.int64)
        i = np.searchsorted(sel.core_keys, keys)
        i = np.minimum(i, max(sel.core_keys.size - 1, 0))
        hit = sel.core_keys[i] == keys if sel.core_keys.size else np.zeros(keys.size, dtype=bool)
        out[hit] = sel.labels[i[hit]]
        return out

    return float(adjusted_rand_score(lab(a), lab(b)))


def study(sc: Any) -> dict:
    """One scene's record (module docstring)."""
    model = fit(sc)
    hist, spec = model.histogram, model.spec
    eps = [float(a) for a in model.auto["eps_candidates"]]
    share_of = model.auto.get("share_of") or ("total" if hist.grid.d >= 3 else "positive")
    coarse = ladder_sweep(hist, replace(spec, subcells=1), eps, levels_ladder(hist))
    sels = {a: levels_select(hist, spec, eps, alpha=a, coarse=coarse, share_of=share_of) for a in eps}
    ari = []
    for a in eps:
        w = (
            ownscale_widen(sels[a], {b: sels[b] for b in eps if b > a})
            if hist.grid.d in OWNSCALE_DIMS
            else sels[a]
        )
        ari.append(scene_bench.ari(sc.y, scale_study.labels(w.grid, own_spans(w), sc.X)))
    m = len(eps)
    agree = {how: np.eye(m) for how in ("union", "inter")}
    for how, mat in agree.items():
        for i in range(m):
            for j in range(i + 1, m):
                mat[i, j] = mat[j, i] = agreement(sels[eps[i]], sels[eps[j]], how)
    scores = {float(a): (float(s), int(k)) for a, s, k in model.auto.get("eps_scores") or []}
    return {
        "seed": sc.seed,
        "n": sc.n,
        "tags": " ".join(sorted(sc.tags)),
        "model": scene_bench.ari(sc.y, model.predict(sc.X)),
        "chosen": int(np.argmin([abs(a - float(model.auto["eps"])) for a in eps])),
        "eps": eps,
        "score": [scores.get(a, (0.0, 0))[0] for a in eps],
        "clusters": [scores.get(a, (0.0, 0))[1] for a in eps],
        "ari": ari,
        "agree": {how: mat.tolist() for how, mat in agree.items()},
    }


# --------------------------------------------------------------------------- #
# rules: a scene's record -> the index of the chosen alpha


def _ties(r: dict, close: float = 0.9, as_many: bool = True) -> list[int]:
    """The near-ties of the best-scoring candidate with two clusters or more:
    a score within ``close`` of its, and (``as_many``, the library's rule) at
    least as many clusters."""
    idx = range(len(r["eps"]))
    pool = [i for i in idx if r["clusters"][i] >= 2] or list(idx)
    best = max(pool, key=lambda i: (r["score"][i], r["eps"][i]))
    return [
        i
        for i in pool
        if r["score"][i] >= close * r["score"][best]
        and (not as_many or r["clusters"][i] >= r["clusters"][best])
    ]


def largest(close: float = 0.9, as_many: bool = True) -> Callable[[dict], int]:
    return lambda r: max(_ties(r, close, as_many))


def plateau(r: dict, close: float = 0.9) -> int:
    """The largest alpha of the score's plateau around its peak: from the
    best-scoring candidate with two clusters or more, the run of adjacent
    candidates (two clusters or more) scoring within ``close`` of it, by
    score alone (fewer clusters allowed); the run stops at the first that
    does not."""
    idx = range(len(r["eps"]))
    pool = [i for i in idx if r["clusters"][i] >= 2] or list(idx)
    best = max(pool, key=lambda i: (r["score"][i], r["eps"][i]))
    i = best
    while i + 1 in pool and r["score"][i + 1] >= close * r["score"][best]:
        i += 1
    return i


def plateau_from(n_min: int, close: float = 0.9) -> Callable[[dict], int]:
    """The library's rule below ``n_min`` points, :func:`plateau` from there on."""
    return lambda r: max(_ties(r, close)) if r["n"] < n_min else plateau(r, close)


def largest_from(n_min: int, close: float = 0.9) -> Callable[[dict], int]:
    """The library's rule below ``n_min`` points; from there on, near-ties
    by score alone (fewer clusters allowed), to the largest alpha. The size
    is a scene's n here; the library would read the release's DP count."""
    return lambda r: max(_ties(r, close, as_many=r["n"] < n_min))


def smallest(close: float = 0.9) -> Callable[[dict], int]:
    return lambda r: min(_ties(r, close))


def median(close: float = 0.9) -> Callable[[dict], int]:
    return lambda r: sorted(_ties(r, close))[(len(_ties(r, close)) - 1) // 2]


def neighbours(how: str, close: float = 0.9, among: str = "adjacent") -> Callable[[dict], int]:
    """The tie agreeing best (mean ARI of core sub-cells) with its adjacent
    candidates (``among="adjacent"``), with the other ties ("ties") or with
    every other candidate ("all"); equal agreement to the larger alpha."""

    def rule(r: dict) -> int:
        a = np.asarray(r["agree"][how])
        m = a.shape[0]
        ties = _ties(r, close)

        def mean_agree(i: int) -> float:
            if among == "adjacent":
                js = [j for j in (i - 1, i + 1) if 0 <= j < m]
            elif among == "ties":
                js = [j for j in ties if j != i]
            else:
                js = [j for j in range(m) if j != i]
            return float(np.mean(a[i, js])) if js else 0.0

        return max(ties, key=lambda i: (mean_agree(i), i))

    return rule


def stable_run(how: str, level: float, close: float = 0.9) -> Callable[[dict], int]:
    """The smallest tie whose selection agrees at least ``level`` with the
    next larger candidate's (the smallest alpha where the answer has settled);
    none: the largest tie."""

    def rule(r: dict) -> int:
        a = np.asarray(r["agree"][how])
        ties = sorted(_ties(r, close))
        for i in ties:
            if i + 1 < a.shape[0] and a[i, i + 1] >= level:
                return i
        return ties[-1]

    return rule


RULES: dict[str, Callable[[dict], int]] = {
    "default": largest(),
    "smallest": smallest(),
    "median": median(),
    "largest 0.8": largest(0.8),
    "smallest 0.8": smallest(0.8),
    "neighbours union": neighbours("union"),
    "neighbours inter": neighbours("inter"),
    "neighbours union 0.8": neighbours("union", 0.8),
    "ties union": neighbours("union", among="ties"),
    "ties inter": neighbours("inter", among="ties"),
    "all union": neighbours("union", among="all"),
    "settled union 0.8": stable_run("union", 0.8),
    "settled union 0.6": stable_run("union", 0.6),
    "settled inter 0.9": stable_run("inter", 0.9),
    "largest, score alone": largest(as_many=False),
    "largest 0.8, score alone": largest(0.8, as_many=False),
    "largest, score alone from 6,000": largest_from(6_000),
    "plateau": plateau,
    "plateau from 6,000": plateau_from(6_000),
}


#: The rule taken to the held-out splits, fixed on the tune scenes (60 of
#: small-tune, 60 small 2-D of close-tune) before any held-out scene was run:
#: among the near-ties, the alpha whose selection agrees best with every
#: other candidate's (+0.030 and +0.016 mean ARI, 13 / 1 and 20 / 0 scenes
#: better / worse).
CHOSEN = "all union"


def score(records: Sequence[dict]) -> dict[str, np.ndarray]:
    out = {name: np.array([r["ari"][rule(r)] for r in records]) for name, rule in RULES.items()}
    out["model"] = np.array([r["model"] for r in records])
    out["best alpha"] = np.array([max(r["ari"]) for r in records])
    return out


def table(records: Sequence[dict], hdbscan: dict[int, float] | None = None) -> str:
    s = score(records)
    base = s["default"]
    lines = ["| rule | mean ARI | paired vs default (se) | better / worse |", "|---|---|---|---|"]
    for name, v in s.items():
        d = v - base
        se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
        lines.append(
            f"| {name} | {v.mean():.3f} | {d.mean():+.4f} ({se:.4f}) | "
            f"{int(np.sum(d > 0.005))} / {int(np.sum(d < -0.005))} |"
        )
    if hdbscan:
        h = np.array([hdbscan.get(int(r["seed"]), np.nan) for r in records])
        lines.append(f"| non-private HDBSCAN | {np.nanmean(h):.3f} | | |")
    return "\n".join(lines)


def families(records: Sequence[dict], hdbscan: dict[int, float] | None = None) -> str:
    """Per scene family (a scene counts in each of its tags): the default,
    the chosen rule (:data:`CHOSEN`), better / worse, and HDBSCAN."""
    s = score(records)
    hd = hdbscan or {}
    lines = [
        f"| family | scenes | default | {CHOSEN} | better / worse | HDBSCAN |",
        "|---|---|---|---|---|---|",
    ]
    tags = sorted({t for r in records for t in r["tags"].split()})
    for tag in tags:
        i = [j for j, r in enumerate(records) if tag in r["tags"].split()]
        d, c = s["default"][i], s[CHOSEN][i]
        h = [hd[int(records[j]["seed"])] for j in i if int(records[j]["seed"]) in hd]
        lines.append(
            f"| {tag} | {len(i)} | {d.mean():.3f} | {c.mean():.3f} | "
            f"{int(np.sum(c - d > 0.005))} / {int(np.sum(c - d < -0.005))} | "
            f"{np.mean(h) if h else float('nan'):.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="small-tune", choices=tuple(scene_bench.SPLITS))
    ap.add_argument("--small-2d", type=int, default=None, metavar="FIRST")
    ap.add_argument(
        "--large-2d", type=int, default=None, metavar="FIRST", help="2-D scenes of 6,000 points or more"
    )
    ap.add_argument("--dev", action="store_true", help="the dev suite's 2-D sets (seeds: --gen-seeds)")
    ap.add_argument("--n-scenes", type=int, default=30)
    ap.add_argument("--first", type=int, default=0, help="start at the split's first-th seed")
    ap.add_argument("--min-n", type=int, default=None, help="only the split's scenes of at least N points")
    ap.add_argument("--out", type=Path, required=True, help="prefix: <out>.jsonl records, <out>.md table")
    ap.add_argument("--hdbscan", type=Path, default=None, help="a scene_bench CSV with an hdbscan column")
    ap.add_argument(
        "--generalization", action="store_true", help="experiments.generalization's sets, seeds 0-4"
    )
    ap.add_argument(
        "--gen-seeds",
        type=int,
        nargs=2,
        default=(0, 5),
        metavar=("FROM", "TO"),
        help="--generalization's noise seeds FROM..TO-1",
    )
    ap.add_argument(
        "--gen-below",
        type=int,
        default=None,
        metavar="N",
        help="--generalization's sets of fewer than N points",
    )
    args = ap.parse_args(argv)
    gen = range(*args.gen_seeds)
    cases = {
        c.seed: c
        for c in (generalization_cases(gen) if args.generalization else [])
        if args.gen_below is None or c.n < args.gen_below
    }
    if args.dev:
        cases = {c.seed: c for c in dev_cases(gen)}
    if cases:
        seeds = list(cases)
    elif args.small_2d is not None:
        seeds = scene_bench.small_2d_seeds(args.split, args.small_2d, args.n_scenes)
    elif args.large_2d is not None:
        seeds = scene_bench.small_2d_seeds(args.split, args.large_2d, args.n_scenes, large=True)
    else:
        seeds = list(scene_bench.SPLITS[args.split][args.first : args.first + args.n_scenes])
        if args.min_n is not None:
            seeds = [s for s in seeds if scene_bench.scene_of(s).n >= args.min_n]
    path = args.out.with_suffix(".jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []
    done = {int(r["seed"]) for r in records}
    for seed in seeds:
        if seed in done:
            continue
        t0 = time.perf_counter()
        r = study(cases[seed] if cases else scene_bench.scene_of(seed))
        records.append(r)
        with path.open("a") as f:
            f.write(json.dumps(r) + "\n")
        print(
            f"{seed}: model {r['model']:.3f} default {r['ari'][RULES['default'](r)]:.3f} "
            f"best {max(r['ari']):.3f} ({time.perf_counter() - t0:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    records = [r for r in records if int(r["seed"]) in set(seeds)]
    hd = None
    if args.hdbscan is not None:
        hd = {
            int(x["seed"]): float(x["hdbscan"])
            for x in csv.DictReader(args.hdbscan.open())
            if x.get("hdbscan")
        }
    what = ("dev sets" if args.dev else "generalization cases") if cases else f"scenes of {args.split}"
    text = f"{len(records)} {what}\n\n" + table(records, hd) + "\n\n" + families(records, hd)
    args.out.with_suffix(".md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
