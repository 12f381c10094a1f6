"""Choosing (alpha, MinPts) from one release, without labels.

At a fixed alpha the core sub-cells at increasing MinPts are nested (the
threshold T = MinPts + m(q) only grows with MinPts), so the spans over a
geometric ladder of MinPts form a tree of density level sets, as in
HDBSCAN: a span at one level lies in exactly one span of the level below.
Following HDBSCAN (Campello, Moulavi and Sander, 2013), with the level
measured by the threshold T on the estimated eps-neighbourhood count:

* a span is *significant* when its noisy mass reaches MinPts (a DBSCAN
  cluster holds at least MinPts points); the others are noise falling out
  of their parent;
* a cluster is born at the level where its parent splits into two or more
  significant spans (or at the lowest level), and lives while it has one
  significant descendant per level;
* its *stability* is the integral of its mass over its life in log T,
  sum_levels mass x (log T_next - log T): massive clusters that persist
  over a wide range of densities score high, noise fragments and
  short-lived splits low. Log T makes the score scale-free, and levels
  whose threshold the empty-space guard holds at the same T (small MinPts)
  add nothing.

The choice is a flat cut, since the release is one (alpha, MinPts): at each
grid point the score is the total stability of the clusters alive there,
counted only when at least two are (a single cluster is what every
clustering shows at a low enough level; HDBSCAN excludes the root by default
for the same reason). It is made in two steps, with two measures of the
level:

1. *How many clusters*: the grid point with the highest score when the
   level is HDBSCAN's lambda = 1 / core distance. At a fixed alpha the
   threshold T is the density level f ~ T / alpha^d, and HDBSCAN (fixed k)
   would put a point of that density at core distance alpha (k / T)^(1/d),
   so lambda ~ T^(1/d) / alpha, one scale for every alpha. In log T a
   cluster's life is scale-free within one alpha but grows with alpha
   (the signal in an eps-ball grows as alpha^d, its noise as alpha^(d/2)),
   so log T alone favours the largest alpha at which clusters are still
   visible, where neighbouring ones have merged into one massive,
   long-lived parent (excess of mass's known bias; R15's central eight).
   On lambda a parent that lives at low density only does not outscore the
   children that a smaller alpha separates.
2. *Where*: among the grid points showing that many clusters, the one with
   the highest score in log T; ties go to the larger alpha, then to the
   lowest level of a plateau: there each cluster has its largest extent, as
   HDBSCAN labels a selected cluster by its extent at birth. (On lambda
   alone a smaller alpha with the same clusters often wins, with less of
   each cluster core.)

Everything is post-processing of the release and public parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..cells.histogram import NoisyHistogram
from ..params.specs import SpanSpec
from .ladder import Partition, sweep

#: The criterion's name, recorded in the model.
CRITERION = "flat-cut stability of density level sets (HDBSCAN-like): count on lambda, place on log T"
#: MinPts candidates: MIN_SAMPLES_LOW * sqrt(2)^i up to a share of the released mass
MIN_SAMPLES_LOW = 5
MASS_SHARE = 0.25
#: the selection decides on cells (k = 1), the final spans use the sub-cells
SELECTION_SUBCELLS = 1


def min_samples_ladder(total_mass: float, low: int = MIN_SAMPLES_LOW) -> list[int]:
    """MinPts candidates low * sqrt(2)^i up to MASS_SHARE of the released
    (positive) mass: a DBSCAN cluster holds at least MinPts points."""
    top = max(low, MASS_SHARE * total_mass)
    out, i = [], 0
    while True:
        m = int(round(low * 2 ** (i / 2)))
        if m > top:
            break
        out.append(m)
        i += 1
    return out or [low]


def choose_params(
    hist: NoisyHistogram, spec: SpanSpec, eps_candidates: Sequence[float], min_samples: int | None
) -> dict:
    """(eps, MinPts) chosen from the release ``hist`` by :func:`choose` over
    ``eps_candidates`` and, unless ``min_samples`` is fixed, a MinPts ladder
    from the released mass. Post-processing only. With one sub-cell
    (``spec.subcells``, as the sweep) ``partition`` is the spans there."""
    if min_samples is not None:
        ms = [min_samples]
    else:
        ms = min_samples_ladder(float(np.maximum(hist.values, 0).sum()))
    k = min(int(spec.subcells), SELECTION_SUBCELLS)
    table = sweep(hist, replace(spec, subcells=k), eps_candidates, ms)
    out = choose(table, hist.grid.d)
    if k == int(spec.subcells):
        # the final spans are on cells too: the sweep's at the choice are
        # they (8-D: the density test is not run twice)
        out["partition"] = table[(out["eps"], out["min_samples"])]
    out.update(
        {
            "base_eps": float(hist.grid.eps),
            "eps_candidates": list(eps_candidates),
            "min_samples_candidates": ms,
        }
    )
    return out


def level_scores(
    levels: Sequence[Partition], lam: Sequence[float] | None = None
) -> tuple[list[float], list[int]]:
    """Flat-cut scores and the number of significant clusters at each level of
    one alpha's MinPts ladder (``levels`` sorted by MinPts, nested).

    ``lam`` is the level of each ``levels`` entry on the scale stability is
    integrated over, non-decreasing; default log T (:func:`hdbscan_lambda`
    is the other scale :func:`choose` uses)."""
    n = len(levels)
    if n == 0:
        return [], []
    if lam is None:
        lam = [math.log(max(p.threshold, 1e-300)) for p in levels]
    # level j stands for [lam_j, lam_j+1); the top one's width is unknown: 0
    width = [lam[j + 1] - lam[j] for j in range(n - 1)] + [0.0]
    stab: list[float] = []
    alive: list[list[int]] = []  # cluster ids alive at each level
    prev_cluster = None  # cluster id of each span of the previous level (-1: none)
    prev = None
    for j, p in enumerate(levels):
        masses = p.span_masses()
        sig = masses >= p.min_samples
        cluster = np.full(p.n_spans, -1, dtype=np.int64)
        if prev is None or prev_cluster is None:
            for s in np.flatnonzero(sig):
                cluster[s] = len(stab)
                stab.append(0.0)
        else:
            parent = _parents(prev, p)
            for par in np.unique(parent[sig]):
                kids = np.flatnonzero(sig & (parent == par))
                if kids.size == 1 and prev_cluster[par] >= 0:
                    cluster[kids[0]] = prev_cluster[par]
                else:
                    for s in kids:
                        cluster[s] = len(stab)
                        stab.append(0.0)
        for s in np.flatnonzero(sig):
            stab[cluster[s]] += float(masses[s]) * width[j]
        alive.append([int(c) for c in cluster[sig]])
        prev, prev_cluster = p, cluster
    scores = [sum(stab[c] for c in ids) if len(ids) >= 2 else 0.0 for ids in alive]
    return scores, [len(ids) for ids in alive]


def hdbscan_lambda(threshold: float, alpha: float, d: int) -> float:
    """HDBSCAN's level lambda = 1 / core distance of the density level that the
    core threshold ``threshold`` sets at radius ``alpha`` in ``d`` dimensions,
    up to a constant factor: T^(1/d) / alpha."""
    return max(float(threshold), 0.0) ** (1.0 / d) / float(alpha)


def _parents(lower: Partition, upper: Partition) -> np.ndarray:
    """Span of ``lower`` holding each span of ``upper`` (core sets nested)."""
    if upper.n_spans == 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.searchsorted(lower.keys, upper.keys)
    idx = np.minimum(idx, max(lower.keys.size - 1, 0))
    if lower.keys.size == 0 or not np.array_equal(lower.keys[idx], upper.keys):
        raise ValueError(
            "level sets are not nested: the core sub-cells of a larger MinPts must be core at a smaller one"
        )
    parent = np.full(upper.n_spans, -1, dtype=np.int64)
    # any cell of a span names its parent (a span lies in one span below)
    parent[upper.labels[::-1]] = lower.labels[idx][::-1]
    return parent


def choose(table: dict[tuple[float, int], Partition], d: int) -> dict:
    """The (alpha, MinPts) the flat-cut stability chooses (module docstring):
    the number of clusters from the scores on HDBSCAN's lambda, then, among
    the grid points with that many, the highest score in log T.

    ``d`` is the dimension (public). Returns a dict with ``eps``,
    ``min_samples``, ``score`` (in log T), ``clusters`` (significant clusters
    alive there) and ``scores``: a list of [alpha, MinPts, score in log T,
    clusters, score on lambda] for every grid point. When no grid point has
    two significant clusters, the one with the largest core mass wins
    (``score`` 0).
    """
    rows = []
    for alpha in sorted({a for a, _ in table}):
        levels = [table[(a, m)] for a, m in sorted(table) if a == alpha]
        scores, counts = level_scores(levels)
        on_lam, _ = level_scores(levels, [hdbscan_lambda(p.threshold, alpha, d) for p in levels])
        rows += [
            [alpha, p.min_samples, s, c, p.threshold, h] for p, s, c, h in zip(levels, scores, counts, on_lam)
        ]

    # ties: the larger alpha; then the lowest threshold (a plateau's lowest
    # level); then, among MinPts the guard holds at one threshold, the
    # largest (the one that says what the threshold is)
    def order(score: int):
        return lambda r: (r[score], r[0], -r[4], r[1])

    count = max(rows, key=order(5))
    same = [r for r in rows if r[3] == count[3] and r[2] > 0]
    if count[5] <= 0 or not same:
        best = max(rows, key=lambda r: (table[(r[0], int(r[1]))].core_mass, r[0], -r[4], r[1]))
        best = [*best[:2], 0.0, *best[3:]]
    else:
        best = max(same, key=order(2))
    return {
        "eps": float(best[0]),
        "min_samples": int(best[1]),
        "score": float(best[2]),
        "clusters": int(best[3]),
        "scores": [r[:4] + r[5:] for r in rows],
    }


__all__ = [
    "level_scores",
    "hdbscan_lambda",
    "choose",
    "choose_params",
    "min_samples_ladder",
]
