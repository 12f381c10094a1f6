"""Why a high-dimensional fit loses DBSCAN's clusters: one row per cluster.

For one case of :mod:`benchmarks.sweep_dims` (d, shape, seed, n; alpha the
benchmark's at d; MinPts 20; epsilon 1; bounds (0, 1)), fit dpdbscan as the
sweep does (seeded by the seed), label the points with exact DBSCAN (the
``dbscan`` package, or scikit-learn's if it is missing) and, for each of
DBSCAN's clusters, report:

* ``size`` and its spread: the square roots of its covariance's eigenvalues
  (least, geometric mean, largest; ``sds``: all of them);
* its ``fate`` in dpdbscan's predict labels: the share of its points left as
  noise, the span most of its points fall into, and how many other
  clusters share that span (``merged``);
* its cells (the histogram grid, or the sub-cell grid of the core test):
  how many hold its points, the most points one holds, how many hold at
  least theta (the sparse release's bar, without noise), and how many the
  release shows;
* its ball counts: E(q) = sum_Y W(q, Y) x_Y, the density test's estimate of
  the points within alpha, from the exact counts of every occupied cell
  (``E_all``) and from the exact counts of the cells holding at least theta
  (``E_theta``: what a sparse release without noise would sum); the largest
  over its cells, and how many of its cells reach MinPts (noiseless) and
  the release's threshold T = MinPts + m(q);
* its core cells: in the release, and in the release's noiseless twin
  (:func:`dpdbscan.research.noiseless_twin`: every occupied cell, no
  margin).

Also the release's noise: the standard deviation sigma of one estimate E~
(the margin's one sigma) and the threshold T.

Reads the data without noise: a research diagnosis, not a release.

    python -m benchmarks.diagnose_hd --d 8 --shape aniso --seed 73 [--json out.jsonl]
    python -m benchmarks.diagnose_hd --limits out.jsonl   # the forecast's model against each cluster
"""

from __future__ import annotations

import argparse
import json
import math
import warnings

import numpy as np

from . import blobs_nd
from .sweep_dims import points


def _dbscan(X: np.ndarray, alpha: float, m: int) -> np.ndarray:
    try:
        import dbscan

        return np.asarray(dbscan.DBSCAN(X, eps=alpha, min_samples=m)[0])
    except ImportError:
        from sklearn.cluster import DBSCAN

        return DBSCAN(eps=alpha, min_samples=m).fit(X).labels_


def _hist(grid, keys: np.ndarray, counts: np.ndarray, theta: float):
    """An exact sparse 'release' of the given cells (noise none)."""
    from dpdbscan import research

    keep = counts >= theta
    return research.NoisyHistogram(
        grid,
        "sparse",
        counts[keep].astype(np.int64),
        keys[keep],
        float(theta),
        "none",
        math.inf,
        math.inf,
        0.0,
    )


def diagnose(d: int, shape: str, seed: int, n: int = 100_000, scale: float = 1.0) -> dict:
    from sklearn.metrics import adjusted_rand_score

    from dpdbscan import DPDBSCAN, research

    weighted_sums_at, density_margin = research.weighted_sums_at, research.density_margin

    alpha = round(blobs_nd.ALPHA[d] * scale, 6)
    m = blobs_nd.MIN_SAMPLES
    X = points(d, shape, seed, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed).fit(X)
        pred = est.predict(X)
        model = est.spans_
        twin = research.noiseless_twin(model, X)
        tpred = twin.predict(X)
    ref = _dbscan(X, alpha, m)
    hist = est.histogram_
    grid = hist.grid
    spec = model.spec
    k = int(spec.subcells)
    weights, marg = density_margin(grid, hist.kind, hist.noise, hist.scale, hist.theta, spec)
    T = m + marg.values  # per sub-position
    sigma = math.sqrt(research.noise_variance(hist.noise, hist.scale) * float(weights.sums_of_squares.max()))
    cells = research.NumpyBackend().count(grid, X)
    keys, counts = cells.keys, cells.counts
    theta = float(hist.theta) if hist.kind != "dense" else 1.0
    E_all = weighted_sums_at(_hist(grid, keys, counts, 1), weights, keys)
    E_theta = weighted_sums_at(_hist(grid, keys, counts, max(theta, 1)), weights, keys)
    pkeys = grid.keys_of_points(X)
    # each point's cell's row in keys, and its sub-position (its sub-cell in the cell)
    row = np.searchsorted(keys, pkeys)
    fine = grid.subdivided(k)
    fcoords = fine.coords(X) if k > 1 else None
    pos = np.zeros(X.shape[0], dtype=np.int64)
    if k > 1:
        sub = fcoords - grid.coords(X) * k
        pos = np.ravel_multi_index(tuple(sub.T), (k,) * d)
    fkeys = fine.keys_of_points(X)
    core = _core_keys(model)
    tcore = _core_keys(twin)
    released = np.isin(keys, hist.released_keys) if hist.kind != "dense" else hist.value_at(keys) != 0
    clusters = []
    span_of = {}
    for c in range(int(ref.max()) + 1):
        sel = ref == c
        lab = pred[sel]
        inl = lab[lab >= 0]
        span_of[c] = int(np.bincount(inl).argmax()) if inl.size else -1
    for c in range(int(ref.max()) + 1):
        sel = ref == c
        P = X[sel]
        ev = np.sqrt(np.clip(np.linalg.eigvalsh(np.cov(P.T)), 0, None))
        r = np.unique(row[sel])
        pc = np.unique(np.stack([row[sel], pos[sel]], 1), axis=0)
        e_all = E_all[pc[:, 0], pc[:, 1]]
        e_th = E_theta[pc[:, 0], pc[:, 1]]
        t = T[pc[:, 1]]
        fk = np.unique(fkeys[sel])
        tl = tpred[sel]
        tin = tl[tl >= 0]
        clusters.append(
            {
                "cluster": c,
                "size": int(sel.sum()),
                "sd_min": float(ev.min()),
                "sd_gmean": float(np.exp(np.log(np.maximum(ev, 1e-12)).mean())),
                "sd_max": float(ev.max()),
                "sds": [float(v) for v in ev],
                "noise_share": float((pred[sel] < 0).mean()),
                "span": span_of[c],
                "span_share": float((pred[sel] == span_of[c]).mean()) if span_of[c] >= 0 else 0.0,
                "merged": int(sum(1 for o, s in span_of.items() if o != c and s == span_of[c] and s >= 0)),
                "twin_noise_share": float((tl < 0).mean()),
                "twin_span_share": float(np.bincount(tin).max() / tl.size) if tin.size else 0.0,
                "cells": int(r.size),
                "max_count": int(counts[r].max()),
                "cells_ge_theta": int((counts[r] >= theta).sum()),
                "mass_ge_theta": float(counts[r][counts[r] >= theta].sum() / counts[r].sum()),
                "released": int(released[r].sum()),
                "E_all_max": float(e_all.max()),
                "E_theta_max": float(e_th.max()),
                "subcells": int(pc.shape[0]),
                "all_ge_minpts": int((e_all >= m).sum()),
                "all_ge_T": int((e_all >= t).sum()),
                "theta_ge_T": int((e_th >= t).sum()),
                "core_release": int(np.isin(fk, core).sum()),
                "core_twin": int(np.isin(fk, tcore).sum()),
            }
        )
    return {
        "d": d,
        "shape": shape,
        "seed": seed,
        "n": n,
        "alpha": alpha,
        "histogram": str(hist.kind),
        "theta": float(hist.theta),
        "subcells": k,
        "kappa": int(grid.kappa),
        "released_cells": int(hist.values.size),
        "sigma": sigma,
        "T": float(T.max()),
        "T_min": float(T.min()),
        "ari": float(adjusted_rand_score(ref, pred)),
        "twin_ari": float(adjusted_rand_score(ref, tpred)),
        "spans": int(model.n_spans) if hasattr(model, "n_spans") else None,
        "clusters": clusters,
    }


def _core_keys(model) -> np.ndarray:
    """The sorted core sub-cell keys of a density model."""
    return np.sort(np.asarray(model.core_keys))


def table(r: dict) -> str:
    head = (
        f"{r['d']}-D {r['shape']} seed {r['seed']}: alpha {r['alpha']}, {r['histogram']} "
        f"theta {r['theta']:g}, {r['subcells']} sub-cells, kappa {r['kappa']:,}, "
        f"{r['released_cells']:,} released; sigma {r['sigma']:.1f}, T {r['T_min']:.1f}-{r['T']:.1f}; "
        f"ARI {r['ari']:.3f}, twin {r['twin_ari']:.3f}\n"
    )
    cols = (
        "cluster size sd_min sd_gmean sd_max noise_share span_share merged twin_span_share cells max_count "
        "cells_ge_theta mass_ge_theta released E_all_max E_theta_max all_ge_minpts all_ge_T theta_ge_T "
        "core_release core_twin"
    ).split()
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for c in sorted(r["clusters"], key=lambda c: c["span_share"]):
        out.append("| " + " | ".join(_fmt(c[k]) for k in cols) + " |")
    return head + "\n".join(out) + "\n"


def limit_check(r: dict) -> dict:
    """The forecast's model (:mod:`dpdbscan.plan.clusterlimit`) against one
    diagnosed case: per cluster, E(N, s) with its own sds along its axes
    (its covariance's eigenvalues; the rotation is not modelled) and its
    geometric mean in the ball's share, flagged lost where E < T; against
    whether the release found it (most of its points in one span)."""
    from dpdbscan import research

    ball_share, cell_log_masses, shown_share = (
        research.ball_share,
        research.cell_log_masses,
        research.shown_share,
    )

    d, eps = r["d"], r["alpha"]
    width = eps / math.sqrt(d)
    theta = r["theta"] if r["histogram"] != "dense" else -math.inf
    rows = []
    for c in r["clusters"]:
        n = c["size"]
        logm = cell_log_masses(d, width, tuple(c["sds"]))
        e = n * shown_share(logm, n, theta) * ball_share(d, eps, c["sd_gmean"])
        rows.append(
            {"cluster": c["cluster"], "found": c["span_share"] > 0.5, "model_E": e, "flagged": e < r["T"]}
        )
    agree = sum(x["found"] != x["flagged"] for x in rows)
    lost = sum(not x["found"] for x in rows)
    caught = sum((not x["found"]) and x["flagged"] for x in rows)
    wrong = sum(x["found"] and x["flagged"] for x in rows)
    return {
        "agree": agree,
        "clusters": len(rows),
        "lost": lost,
        "flagged_lost": caught,
        "flagged_found": wrong,
    }


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int)
    ap.add_argument("--shape", default="aniso")
    ap.add_argument("--seed", type=int, default=73)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--json", help="append the result as one JSON line")
    ap.add_argument("--limits", help="a --json file: the forecast's model against each case's clusters")
    a = ap.parse_args(argv)
    if a.limits:
        with open(a.limits) as f:
            for ln in f:
                r = json.loads(ln)
                if "sds" in r["clusters"][0]:
                    print(f"{r['d']}-D {r['shape']} seed {r['seed']}: {limit_check(r)}")
        return 0
    if a.d is None:
        ap.error("--d is needed (or --limits FILE)")
    r = diagnose(a.d, a.shape, a.seed, a.n, a.scale)
    print(table(r))
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
