"""A second, finer release where the first is dense, to part thin 3-D strands
(issue 28 item 3; a study, nothing here is the library's default).

Two or three parallel strands or interleaved spirals a little apart in 3-D
come out of the automatic mode as one span: a ball of any candidate alpha
between two strands holds both, so no level of the release parts them
(``experiments.auto_oracle``). A second release of finer cells, restricted
to where the first is dense, can show the empty layer between them:

1. release one: the automatic fit at (1 - ``share``) x epsilon, as it ships
   (its DP count inside that budget);
2. the second level's cells: every released cell of release one whose noisy
   count is at least ``z1`` noise standard deviations and whose centre
   ``predict`` puts in a span, split into f^d fine cells. A function of
   release one alone (post-processing), so public for release two;
3. release two: the points' counts in those fine cells with discrete
   Laplace noise at ``share`` x epsilon (the library's exact sampler;
   each point lies in at most one fine cell: sensitivity 1). By sequential
   composition the pair is epsilon-DP (the count, release one, release two);
4. post-processing: in each span, the fine cells with a noisy count of at
   least max(``z2`` sd, ``q`` x the 95th percentile of the span's fine
   cells), their components (touching by a face, edge or corner), those
   with at least 5% of the kept mass; two or more split the span, each of
   its points going to the component of the nearest kept fine cell.

    python -m experiments.strands_level2 --seeds 70202,70279 --out results/scenes/strands-tune.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import ndimage
from scipy.spatial import cKDTree

from dpdbscan import DPDBSCAN
from dpdbscan.research import discrete_laplace, make_source, rational_epsilon

from . import scene_bench

#: (f, z2, q) of the second level measured on every scene
VARIANTS = tuple((f, z2, q) for f in (2, 3, 4) for z2 in (3.0, 4.0) for q in (0.1, 0.25))
MIN_SHARE = 0.05


def fit(sc: Any, epsilon: float) -> tuple[Any, float]:
    """The automatic fit at ``epsilon`` (seed ``sc.seed``) and its CPU seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = DPDBSCAN("auto", min_samples="auto", epsilon=epsilon, bounds=sc.bounds, random_state=sc.seed)
        model = est.fit(sc.X).spans_
        return model, time.process_time() - t


def selected_cells(model: Any, z1: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """Release one's cells (coords) that the second level refines, and their
    spans: noisy count >= z1 sd and centre in a span. Post-processing."""
    hist = model.histogram
    g = hist.grid
    keys, vals = hist.sparse()
    sd = np.sqrt(2.0) / float(hist.scale)
    coords = g.decode(keys)
    span = model.predict(g.cell_centres(coords))
    keep = (np.asarray(vals, dtype=np.float64) >= z1 * sd) & (span >= 0)
    return coords[keep], span[keep]


def release_two(X: np.ndarray, g: Any, cells: np.ndarray, f: int, epsilon: float, seed: int) -> tuple:
    """The fine counts of the points in ``cells`` (f^d fine cells each),
    with discrete Laplace noise at ``epsilon``, on the cells' bounding box:
    (noisy array, mask of the released fine cells, lower corner coords)."""
    lo = cells.min(axis=0)
    hi = cells.max(axis=0) + 1
    coarse = np.zeros(tuple((hi - lo).tolist()), bool)
    coarse[tuple((cells - lo).T)] = True
    mask = np.kron(coarse, np.ones((f,) * g.d, bool)).astype(bool)
    pc = np.floor((X - g.lower) / g.width).astype(np.int64)
    inb = np.all((pc >= lo) & (pc < hi), axis=1)
    fw = g.width / f
    fc = np.floor((X[inb] - (g.lower + lo * g.width)) / fw).astype(np.int64)
    fc = np.clip(fc, 0, np.array(mask.shape) - 1)
    counts = np.zeros(mask.shape, np.int64)
    np.add.at(counts, tuple(fc.T), 1)
    src = make_source(np.random.default_rng([seed, 2, f]), warn=False)
    noisy = np.zeros(mask.shape, np.int64)
    noisy[mask] = counts[mask] + discrete_laplace(src, int(mask.sum()), rational_epsilon(epsilon))
    return noisy, mask, lo


def split_labels(
    model: Any, X: np.ndarray, f: int, share_eps: float, seed: int, z2: float, q: float, z1: float = 3.0
) -> tuple[np.ndarray, int, int]:
    """The model's labels with its spans split by release two (step 4 of the
    module docstring): (labels, fine cells released, spans split)."""
    labels = model.predict(X)
    out = labels.copy()
    cells, spans = selected_cells(model, z1)
    if cells.shape[0] == 0:
        return out, 0, 0
    g = model.histogram.grid
    sd2 = np.sqrt(2.0) / share_eps
    fw = g.width / f
    released = split = 0
    nxt = int(out.max()) + 1
    for s in np.unique(spans):
        # one release over all spans' cells would be the same counts; per
        # span here only to keep the arrays small (disjoint cells, one draw each)
        noisy, mask, lo = release_two(X, g, cells[spans == s], f, share_eps, seed * 1000 + int(s))
        released += int(mask.sum())
        pos = noisy[mask]
        t = max(z2 * sd2, q * float(np.percentile(pos, 95)))
        lab, nl = ndimage.label(mask & (noisy >= t), structure=np.ones((3,) * g.d))
        if nl < 2:
            continue
        mass = np.asarray(ndimage.sum(noisy, lab, index=np.arange(1, nl + 1)))
        big = np.flatnonzero(mass >= MIN_SHARE * mass.sum()) + 1
        if big.size < 2:
            continue
        split += 1
        fcells = np.argwhere(np.isin(lab, big))
        comp = lab[tuple(fcells.T)]
        centres = g.lower + lo * g.width + (fcells + 0.5) * fw
        pts = np.flatnonzero(labels == s)
        _, nn = cKDTree(centres).query(X[pts])
        c = comp[nn]
        for b in big[1:]:
            out[pts[c == b]] = nxt
            nxt += 1
    return out, released, split


def row_of(sc: Any, share: float) -> dict:
    """One scene: the library's automatic fit at epsilon = 1, release one at
    1 - ``share`` alone, and every :data:`VARIANTS` of release two."""
    base, cpu = fit(sc, 1.0)
    row: dict = {
        "seed": sc.seed,
        "n": sc.n,
        "k": sc.k,
        "tags": " ".join(sorted(sc.tags)),
        "model": scene_bench.ari(sc.y, base.predict(sc.X)),
        "cpu": cpu,
        "spans": base.n_spans,
    }
    one, cpu1 = fit(sc, 1.0 - share)
    row["one"] = scene_bench.ari(sc.y, one.predict(sc.X))
    row["cpu_one"] = cpu1
    for f, z2, q in VARIANTS:
        t = time.process_time()
        lab, released, split = split_labels(one, sc.X, f, share, sc.seed, z2, q)
        key = f"f{f}/z{z2:g}/q{q:g}"
        row[key] = scene_bench.ari(sc.y, lab)
        row[key + ":cpu"] = time.process_time() - t
        row[key + ":split"] = split
        row[f"f{f}:cells"] = released
    return row


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", required=True, help="comma-separated scene seeds")
    ap.add_argument("--share", type=float, default=0.25, help="release two's share of epsilon")
    ap.add_argument("--out", type=Path, required=True, help="JSON lines, one per scene (appended)")
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        row = row_of(scene_bench.scene_of(seed), args.share)
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        best = max((k for k in row if k.count("/") == 2 and ":" not in k), key=lambda k: row[k])
        msg = f"{seed}: model {row['model']:.3f} one {row['one']:.3f} {best} {row[best]:.3f}"
        print(msg, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
