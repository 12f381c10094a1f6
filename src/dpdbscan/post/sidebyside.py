"""Release two of the automatic mode in 3-D: finer cells where release one
is dense, and a rule that splits a span only where its parts lie side by
side (issue 28 item 3; docs/privacy.md section 4.10; the strands2 study,
``experiments.strands_split``, results/scenes/strands2-tune.md).

Two or three thin 3-D strands a little apart come out of one release as one
span: a ball of any candidate eps between two strands holds both. Where the
automatic mode's DP count is at least 6,000 in 3-D
(:func:`dpdbscan.plan.autoplan.second_applies`), release one (the count and
the histogram) spends 1 - s of epsilon and release two the other s, with s
and f functions of the count (:func:`dpdbscan.plan.autoplan.second_share`,
``second_fine``): 0.1 and 3 from a count of 20,000, 0.15 and 2 below it
(the strands-share study, results/scenes/strands-share.md):

1. **The fine cells** (a function of release one alone: public for release
   two): every released cell of release one (at the chosen eps) with a
   noisy count of at least ``select_sds`` noise standard deviations
   (sqrt 2 / its epsilon) whose centre release one's ``predict`` puts in a
   span, split into f^d fine cells (f = ``fine``).
2. **Release two**: the points' counts in those fine cells, each with one
   draw of discrete Laplace noise at ``epsilon``; each point lies in at most
   one fine cell (sensitivity 1). By sequential composition the pair is
   epsilon-DP.
3. **The keep rule** (post-processing of the two releases), per span: the
   fine cells of at least max(``keep_sds`` sd, ``keep_top`` x the 95th
   percentile of the span's fine counts); their components (touching by a
   face, edge or corner); the significant ones (at least ``mass_share`` of
   the kept mass, and at least ``mass_sds`` sd x sqrt(cells)); two or more,
   each covering at least ``cover`` of the span's extent along its main axis
   (the first principal axis of its selected cells, weighted by their noisy
   counts): side by side, the span is split. Otherwise it stays whole.

A split span's pieces: the first keeps the span's id, the others take the
next free ids. Its core cells go to the piece of the nearest kept fine
cell, and so does every point ``predict`` puts in the span (the study's
rule). The model records release two whole in ``auto["second"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ..cells.grid import Grid
from ..cells.packed import pack, unpack
from ..params.specs import SecondRelease, SecondSpend

#: Release two's noisy counts (``dpdbscan.release.mechanism.release_fine_counts``,
#: bound to the points, the backend and release one's stream by the pipeline):
#: (the fine grid, the fine cells' coords, release two's epsilon) -> one noisy
#: count a cell. Post-processing never reads points or draws noise itself.
FineCounts = Callable[[Grid, np.ndarray, float], np.ndarray]

#: The record's name in ``model.auto``.
KEY = "second"


def selected_cells(model: Any, sds: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Release one's cells that release two refines (coords on the model's
    histogram grid), their spans and noisy counts: a noisy count of at least
    ``sds`` standard deviations and a centre in a span. Post-processing."""
    hist = model.histogram
    g = hist.grid
    keys, vals = hist.sparse()
    # release one's noise: discrete Laplace at its epsilon, or (person level) the Gaussian's sigma
    sd = np.sqrt(float(hist.scale)) if hist.noise == "gaussian" else np.sqrt(2.0) / float(hist.scale)
    coords = g.decode(keys)
    span = model.predict(g.cell_centres(coords)) if coords.shape[0] else np.zeros(0, np.int64)
    v = np.asarray(vals, dtype=np.float64)
    keep = (v >= sds * sd) & (span >= 0)
    return coords[keep], span[keep], v[keep]


def children(cells: np.ndarray, f: int) -> np.ndarray:
    """The f^d fine cells of each cell of ``cells`` (coords), cell by cell,
    each cell's in row-major order of their offsets."""
    d = cells.shape[1]
    offs = np.stack(np.meshgrid(*[np.arange(f)] * d, indexing="ij"), axis=-1).reshape(-1, d)
    return (cells[:, None, :] * f + offs[None, :, :]).reshape(-1, d)


def release_two(model: Any, counts_of: FineCounts, second: SecondRelease) -> dict:
    """Release two (steps 1 and 2 of the module docstring): its record,
    ``auto["second"]`` without the keep rule's outcome. The fine cells are
    chosen here from release one alone; ``counts_of`` releases their noisy
    counts (one draw per fine cell, spans in id order)."""
    f = int(second.fine)
    cells, spans, counts = selected_cells(model, second.select_sds)
    g = model.histogram.grid
    fine = g.subdivided(f)
    order = np.argsort(spans, kind="stable")
    cells, spans, counts = cells[order], spans[order], counts[order]
    kids = children(cells, f)
    noisy = np.asarray(counts_of(fine, kids, float(second.epsilon)), dtype=np.int64)
    per = f**g.d
    out = []
    for s in np.unique(spans):
        sel = np.flatnonzero(spans == s)
        rows = (sel[:, None] * per + np.arange(per)[None, :]).reshape(-1)
        out.append(
            {
                "span": int(s),
                "f": f,
                "cells": cells[sel],
                "weights": counts[sel],
                "fine": kids[rows],
                "counts": noisy[rows],
            }
        )
    noise: dict[str, Any] = {"noise": "discrete", "count_epsilon": float(second.epsilon)}
    if second.noise == "gaussian":
        noise = {"noise": "gaussian", "sigma2": float(second.sigma2), "rho": float(second.rho)}
    return {
        "share": float(second.share),
        **noise,
        "fine": f,
        "fine_width": float(fine.width),
        "select_sds": float(second.select_sds),
        "keep_sds": float(second.keep_sds),
        "keep_top": float(second.keep_top),
        "cover": float(second.cover),
        "mass_share": float(second.mass_share),
        "mass_sds": float(second.mass_sds),
        "n_fine_cells": int(kids.shape[0]),
        "spans": out,
    }


def spend_of(rec: Mapping[str, Any]) -> SecondSpend:
    """What release two spent, from its record (:func:`release_two`'s
    share and noise): the model keeps it in its release's facts
    (:attr:`dpdbscan.params.specs.ReleaseInfo.second`), also where its
    spans no longer carry the record."""
    if rec["noise"] == "gaussian":
        return SecondSpend(float(rec["share"]), "gaussian", float(rec["sigma2"]), float(rec["rho"]))
    return SecondSpend(float(rec["share"]), str(rec["noise"]), float(rec["count_epsilon"]), None)


def record_sd(rec: dict) -> float:
    """Release two's noise standard deviation from its record: sqrt 2 /
    epsilon (discrete Laplace, event level) or sigma (the discrete Gaussian,
    person level)."""
    if rec.get("noise") == "gaussian":
        return float(np.sqrt(float(rec["sigma2"])))
    return float(np.sqrt(2.0) / float(rec["count_epsilon"]))


def main_axis(centres: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The first principal axis of ``centres`` weighted by (positive) ``weights``."""
    w = np.clip(weights, 1e-9, None)
    mu = (centres * w[:, None]).sum(axis=0) / w.sum()
    cov = ((centres - mu) * w[:, None]).T @ (centres - mu) / w.sum()
    _, vecs = np.linalg.eigh(cov)
    return vecs[:, -1]


def pieces_of(span: dict, grid: Grid, rec: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """The keep rule (step 3) on one span's record: (the kept fine cells'
    coords, the piece of each, 0, 1, ...) where the span is split, else
    None. Post-processing of the two releases."""
    # lazy: scipy.ndimage costs 0.2 s of import on every fit and command that never makes release two
    from scipy import ndimage

    f = int(span["f"])
    fine_cells, noisy = np.asarray(span["fine"]), np.asarray(span["counts"], dtype=np.int64)
    if fine_cells.shape[0] == 0:
        return None
    sd2 = record_sd(rec)
    lo = fine_cells.min(axis=0)
    shape = tuple((fine_cells.max(axis=0) - lo + 1).tolist())
    mask = np.zeros(shape, dtype=bool)
    arr = np.zeros(shape, dtype=np.int64)
    idx = tuple((fine_cells - lo).T)
    mask[idx] = True
    arr[idx] = noisy
    t = max(float(rec["keep_sds"]) * sd2, float(rec["keep_top"]) * float(np.percentile(noisy, 95)))
    lab, nl = ndimage.label(mask & (arr >= t), structure=np.ones((3,) * grid.d))
    if nl < 2:
        return None
    ids = np.arange(1, nl + 1)
    mass = np.asarray(ndimage.sum(arr, lab, index=ids), dtype=np.float64)
    size = np.asarray(ndimage.sum(np.ones_like(arr), lab, index=ids), dtype=np.float64)
    big = ids[
        (mass >= float(rec["mass_share"]) * mass.sum())
        & (mass >= float(rec["mass_sds"]) * sd2 * np.sqrt(size))
    ]
    if big.size < 2:
        return None
    kept = np.argwhere(np.isin(lab, big))
    comp = lab[tuple(kept.T)]
    width = float(grid.width)
    centres = grid.lower + (kept + lo + 0.5) * (width / f)
    coarse = grid.lower + (np.asarray(span["cells"]) + 0.5) * width
    axis = main_axis(coarse, np.asarray(span["weights"], dtype=np.float64))
    proj = coarse @ axis
    extent = max(float(proj.max() - proj.min()) + width, 1e-12)
    p = centres @ axis
    cover = min(float(p[comp == b].max() - p[comp == b].min()) / extent for b in big)
    if cover < float(rec["cover"]):
        return None
    return kept + lo, np.searchsorted(big, comp)


def fine_centres(grid: Grid, f: int, cells: np.ndarray) -> np.ndarray:
    """The centres of fine cells ``cells`` (coords at width ``grid.width / f``)."""
    return grid.lower + (np.asarray(cells, dtype=np.float64) + 0.5) * (float(grid.width) / f)


def split_model(model: Any, counts_of: FineCounts, second: SecondRelease) -> Any:
    """``model`` (release one's, the automatic mode's) with release two made
    and its spans split by the keep rule: core cells relabelled, the record
    in ``auto["second"]`` and a level for each new span (a copy of its
    span's, ``split_from`` naming it)."""
    # lazy: scipy.spatial costs its import on every fit that never makes release two
    from scipy.spatial import cKDTree

    rec = release_two(model, counts_of, second)
    g = model.histogram.grid
    labels = np.array(model.labels, copy=True)
    nxt = int(model.n_spans)
    core_centres = model.grid.cell_centres(model.grid.decode(model.core_keys))
    auto = dict(model.auto or {})
    levels = [dict(lv) for lv in auto.get("levels") or []]
    with_levels = auto.get("selection") == "levels" and len(levels) == model.n_spans
    stored = []
    for span in rec["spans"]:
        s = int(span["span"])
        out: dict[str, Any] = {
            "span": s,
            "f": int(span["f"]),
            "cells": pack(np.asarray(span["cells"], dtype=np.int64)),
            "fine": pack(np.asarray(span["fine"], dtype=np.int64)),
            "counts": pack(np.asarray(span["counts"], dtype=np.int64)),
            "split": False,
        }
        got = pieces_of(span, g, rec)
        mine = np.flatnonzero(labels == s)
        if got is not None and mine.size:
            kept, piece = got
            near = piece[cKDTree(fine_centres(g, int(span["f"]), kept)).query(core_centres[mine])[1]]
            has = np.unique(near)
            if has.size >= 2:
                # a piece no core cell is nearest to would be a span without cells: dropped
                keep = np.isin(piece, has)
                kept, piece = kept[keep], np.searchsorted(has, piece[keep])
                ids = [s, *range(nxt, nxt + has.size - 1)]
                nxt += has.size - 1
                labels[mine] = np.asarray(ids, dtype=labels.dtype)[np.searchsorted(has, near)]
                out.update(split=True, ids=ids, kept=pack(kept), piece=pack(piece))
                if with_levels:
                    levels += [{**levels[s], "span": i, "split_from": s} for i in ids[1:]]
        stored.append(out)
    rec["spans"] = stored
    rec["split"] = [sp["span"] for sp in stored if sp["split"]]
    auto[KEY] = rec
    if with_levels:
        auto["levels"] = levels
    spans = replace(model.spans, labels=labels)
    return replace(model, spans=spans, auto=auto, release=replace(model.release, second=spend_of(rec)))


def split_pieces(rec: Mapping[str, Any], grid: Grid) -> list[tuple[list[int], np.ndarray, np.ndarray]]:
    """Each split span of a release-two record: (its ids, the centres of its
    kept fine cells on ``grid``'s cells at width / f, the index in ids of
    each cell's piece)."""
    out = []
    for sp in rec.get("spans") or []:
        if sp.get("split"):
            kept = unpack(sp["kept"]).reshape(-1, grid.d)
            out.append((list(sp["ids"]), fine_centres(grid, int(sp["f"]), kept), unpack(sp["piece"])))
    return out


def relabel_points(labels: np.ndarray, X: np.ndarray, pieces: list) -> np.ndarray:
    """``predict``'s labels of ``X`` with each point of a split span (any of
    its ids) given the piece of its nearest kept fine cell."""
    if not pieces:
        return labels
    # lazy: scipy.spatial costs its import on every predict of a model release two did not split
    from scipy.spatial import cKDTree

    out = labels.copy()
    for ids, centres, piece in pieces:
        rows = np.flatnonzero(np.isin(labels, ids))
        if rows.size:
            near = cKDTree(centres).query(X[rows])[1]
            out[rows] = np.asarray(ids, dtype=out.dtype)[piece[near]]
    return out


__all__ = [
    "KEY",
    "release_two",
    "pieces_of",
    "split_model",
    "split_pieces",
    "relabel_points",
    "selected_cells",
]
