"""Section "Varying Parameters": accuracy against (alpha, MinPts), eta and epsilon.

Every function returns plain data: per x value and method, the per-seed ARI
and AMI lists. DP-DBSCAN runs in each of ``VARIANTS``: the library's defaults
and the paper's procedure. The MinPts sweep refits nothing: for a fixed alpha
the released histogram serves every MinPts (``dpdbscan.with_params``),
which is the paper's point that MinPts costs no extra privacy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpdbscan import with_params

from . import baselines, paper
from .accuracy import PAPER_DP, scores
from .datasets import Dataset

VARIANTS: dict[str, dict[str, Any]] = {"DP-DBSCAN": {}, PAPER_DP: paper.PROCEDURE}
#: method -> metric -> one list of per-seed scores per x value
Results = dict[str, dict[str, list[list[float]]]]


def _empty(methods: Sequence[str], xs: Sequence[Any]) -> Results:
    return {m: {"ARI": [[] for _ in xs], "AMI": [[] for _ in xs]} for m in methods}


def _add(res: Results, method: str, i: int, y: np.ndarray, labels: np.ndarray) -> None:
    for k, v in scores(y, labels).items():
        res[method][k][i].append(v)


def _add_dbscan(res: Results, i: int, ds: Dataset, alpha: float, min_samples: int) -> None:
    db = baselines.dbscan(ds.X, alpha, min_samples)
    _add(res, "DBSCAN", i, ds.labels, db.labels_)
    _add(res, "DBSCAN core-only", i, ds.labels, baselines.core_only_labels(db))


def vary_alpha(ds: Dataset, alphas: Sequence[float], seeds: Sequence[int]) -> dict[str, Any]:
    """DP-DBSCAN and DBSCAN at MinPts = ds.min_samples, alpha varied."""
    res = _empty(tuple(VARIANTS) + ("DBSCAN", "DBSCAN core-only"), alphas)
    for i, a in enumerate(alphas):
        d = replace(ds, alpha=float(a))
        _add_dbscan(res, i, d, d.alpha, d.min_samples)
        for name, kw in VARIANTS.items():
            for s in seeds:
                _add(res, name, i, d.labels, baselines.dp_dbscan(d, s, **kw).predict(d.X))
    return {"x": list(alphas), "results": res}


def vary_min_samples(ds: Dataset, min_samples_list: Sequence[int], seeds: Sequence[int]) -> dict[str, Any]:
    """MinPts varied at alpha = ds.alpha: one DP fit per seed, re-thresholded."""
    res = _empty(tuple(VARIANTS) + ("DBSCAN", "DBSCAN core-only"), min_samples_list)
    models = {name: [baselines.dp_dbscan(ds, s, **kw) for s in seeds] for name, kw in VARIANTS.items()}
    for i, m in enumerate(min_samples_list):
        _add_dbscan(res, i, ds, ds.alpha, int(m))
        for name, fitted in models.items():
            for model in fitted:
                spans = with_params(model.spans_, min_samples=int(m))  # post-processing only
                _add(res, name, i, ds.labels, spans.predict(ds.X))
    return {"x": list(min_samples_list), "results": res}


def vary_eta(ds: Dataset, etas: Sequence[float], seeds: Sequence[int]) -> dict[str, Any]:
    """DP-DBSCAN with cell width eta alpha / (4 sqrt d); also reports kappa."""
    res = _empty(tuple(VARIANTS), etas)
    kappas = []
    for i, eta in enumerate(etas):
        for name, kw in VARIANTS.items():
            for s in seeds:
                model = baselines.dp_dbscan(ds, s, **{**kw, "eta": float(eta)})
                _add(res, name, i, ds.labels, model.predict(ds.X))
        kappas.append(int(model.kappa_))
    return {"x": list(etas), "results": res, "kappa": kappas}


def vary_epsilon(ds: Dataset, epsilons: Sequence[float], seeds: Sequence[int]) -> dict[str, Any]:
    """DP-DBSCAN and DP-KMeans as epsilon varies; also the fraction of points
    DP-DBSCAN labels noise (the paper: all noise on t4 at epsilon = 0.5) and
    the number of spans, per DP-DBSCAN variant."""
    res = _empty(tuple(VARIANTS) + ("DP-KMeans",), epsilons)
    noise_frac: dict[str, list[list[float]]] = {name: [[] for _ in epsilons] for name in VARIANTS}
    spans: dict[str, list[list[int]]] = {name: [[] for _ in epsilons] for name in VARIANTS}
    for i, eps in enumerate(epsilons):
        for s in seeds:
            for name, kw in VARIANTS.items():
                model = baselines.dp_dbscan(ds, s, **{**kw, "epsilon": float(eps)})
                labels = model.predict(ds.X)
                spans[name][i].append(model.spans_.n_spans)
                noise_frac[name][i].append(float(np.mean(labels < 0)))
                _add(res, name, i, ds.labels, labels)
            km = baselines.dp_kmeans(ds.X, ds.k, ds.bounds, float(eps), s)
            _add(res, "DP-KMeans", i, ds.labels, km.labels_)
    return {"x": list(epsilons), "results": res, "noise_fraction": noise_frac, "spans": spans}


def summary(sweep: dict[str, Any], method: str, metric: str) -> tuple[list[float], list[float]]:
    """(means, stds) over seeds for one method and metric."""
    vals = sweep["results"][method][metric]
    means = [float(np.mean(v)) for v in vals]
    stds = [float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for v in vals]
    return means, stds
