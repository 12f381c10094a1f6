"""Many seeded draws of one places release on full Cabs: how often it meets
issue 28's targets, and what decides it (docs/places-study.md section 2).

Each draw fits the events (the library's stops, or the pick-ups; derived
once, as ``experiments.places_auto`` derives them) with ``fit_lonlat`` at
person level (cab as unit, epsilon 1, delta 1e-6, the MANIFEST's box), in
the automatic mode or at a fixed eps and MinPts, with k chosen privately or
fixed, one seed per draw, and scores it as ``places_metric.py`` does (its
cells and events recomputed here once: ``places_auto.truth_cells``): the
share of the top-20 event cells and of the 50 passage cells whose centre a
span holds, the spans, the spans mostly one cab's, the k the release used
and its core threshold at the tree's lowest level. One JSON line per draw,
then a summary: the draws that miss a target.

    python -m experiments.places_draws --events stops --seeds 0-249
    python -m experiments.places_draws --events stops --seeds 100-249 --k 76
    python -m experiments.places_draws --events pickups --seeds 0-59 --eps 200m --min-samples 30
    python -m experiments.places_draws --events stops --snr 16,38,76,108,152,304

``--k N`` keeps the private choice of k and its share of the budget but
offers it the one candidate N (the noise is that of the automatic release
at k = N). ``--snr`` prints, instead of fits, what the release could see
without its noise at each k: for each top-20 stop cell, the largest noiseless
estimate within 100 m of its centre over the core threshold of that k (the
threshold scaled from the seeded release's by sqrt(k / k0)); a cell below 1
is core only when its noise lifts it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import places_auto as pa

CACHE = Path("results/cache/places_draws")


def events(kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lon/lat, cab, top-20 cells, passage cells) of ``kind``, cached."""
    path = CACHE / f"{kind}.npz"
    if path.exists():
        z = np.load(path)
        return z["lonlat"], z["cabs"], z["top"], z["passage"]
    lonlat, cabs = pa.EVENTS[kind]()
    top, passage = (np.array(sorted(s)) for s in pa.truth_cells(kind))
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, lonlat=lonlat, cabs=cabs, top=top, passage=passage)
    return lonlat, cabs, top, passage


def centres(cells: np.ndarray) -> np.ndarray:
    """Lon/lat of the centres of the metric's cells (``places_auto.cell_ids``)."""
    box = pa.BOX
    kx, ky = 111.32e3 * np.cos(np.radians((box[1] + box[3]) / 2)), 111.32e3
    w = 200.0 / np.sqrt(2)
    return np.c_[box[0] + (cells // 100_000 + 0.5) * w / kx, box[1] + (cells % 100_000 + 0.5) * w / ky]


def fit(lonlat: np.ndarray, cabs: np.ndarray, seed: int, k: int | None, **kw: Any):
    """One seeded draw; with ``k`` the private choice is offered that one candidate."""
    from dpdbscan.research import offered_k

    if k is None:
        return pa.fit_auto(lonlat, cabs, seed, **kw)
    with offered_k(k):
        return pa.fit_auto(lonlat, cabs, seed, **kw)


def draw(kind: str, seed: int, k: int | None, **kw: Any) -> dict[str, Any]:
    """Fit one seed and score it."""
    from dpdbscan import predict_lonlat

    lonlat, cabs, top, passage = events(kind)
    t0 = os.times()
    model = fit(lonlat, cabs, seed, k, **kw)
    t1 = os.times()
    inside = [float(np.mean(np.asarray(predict_lonlat(model, centres(c))) >= 0)) for c in (top, passage)]
    threshold = np.asarray(model.spans.threshold, dtype=float)
    return {
        "events": kind,
        "seed": seed,
        "k": int(model.release.units.max_cells_per_unit),
        "spans": int(model.n_spans),
        "top20": inside[0],
        "passage": inside[1],
        "one_cab": int(pa.one_cab_spans(model, lonlat, cabs)),
        "threshold": float(threshold.max()) if threshold.size else None,
        "cpu_s": round(t1.user - t0.user + t1.system - t0.system, 3),
    }


def met(r: dict[str, Any]) -> bool:
    """Issue 28's targets for one release."""
    return r["top20"] >= 0.9 and r["passage"] <= 0.1 and r["spans"] >= 10 and r["one_cab"] == 0


def snr(kind: str, ks: Sequence[int]) -> None:
    """The noiseless estimate near each top-20 cell over the threshold, per k."""
    from dpdbscan.research import (
        BoundingKey,
        Equirectangular,
        NoisyHistogram,
        UnitBound,
        count_units,
        density_field,
        make_source,
    )

    lonlat, cabs, top, _ = events(kind)
    model = fit(lonlat, cabs, 0, None)
    grid, k0 = model.release.grid, model.release.units.max_cells_per_unit
    t0 = float(np.max(model.spans.threshold))
    proj = Equirectangular.from_bounds(list(pa.BOX[:2]), list(pa.BOX[2:]))
    X, at = proj.forward(lonlat), proj.forward(centres(top))
    key = BoundingKey.draw(make_source(0, warn=False))
    print(f"release grid {1000 * grid.eps:.0f} m, seed 0: k = {k0}, threshold {t0:.1f}")
    for k in ks:
        keys, counts = count_units(grid, X, cabs, UnitBound(int(k), 1, "busiest"), key)
        values = np.zeros(grid.shape, dtype=np.int64)
        values[tuple(grid.decode(keys).T)] = counts
        hist = NoisyHistogram(grid, "dense", values, None, -math.inf, "none", math.inf, math.inf, 0.0)
        field = density_field(hist, 1.0, guard=False, occupancy=0)
        centre = field.fine.cell_centres(field.fine.decode(field.keys))
        threshold = t0 * math.sqrt(k / k0)
        ratio = []
        for c in at:
            near = np.hypot(centre[:, 0] - c[0], centre[:, 1] - c[1]) < 0.1
            ratio.append(float(field.estimates[near].max()) / threshold if near.any() else 0.0)
        low = ", ".join(f"{r:.2f}" for r in sorted(ratio)[:6])
        print(f"k {k:5d}: threshold {threshold:6.0f}; the six weakest top-20 cells {low}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", choices=sorted(pa.EVENTS), default="stops")
    ap.add_argument("--seeds", default="0-7")
    ap.add_argument("--k", type=int, default=None, help="offer the private choice this one candidate")
    ap.add_argument("--eps", default="auto")
    ap.add_argument("--min-samples", default="auto")
    ap.add_argument("--snr", default=None, help="comma-separated k: the noiseless view instead of fits")
    o = ap.parse_args(argv)
    if o.snr:
        snr(o.events, [int(k) for k in o.snr.split(",")])
        return 0
    lo, _, hi = o.seeds.partition("-")
    ms = o.min_samples if o.min_samples == "auto" else int(o.min_samples)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(int(lo), int(hi or lo) + 1):
            rows.append(draw(o.events, seed, o.k, eps=o.eps, min_samples=ms))
            print(json.dumps(rows[-1]), flush=True)
    missed = [r for r in rows if not met(r)]
    ks = sorted({r["k"] for r in rows})
    top, spans = [r["top20"] for r in rows], [r["spans"] for r in rows]
    print(
        f"{len(rows)} draws, {len(missed)} miss a target; top-20 mean {np.mean(top):.3f}, "
        f"min {min(top):.2f}; passage max {max(r['passage'] for r in rows):.2f}; "
        f"spans {min(spans)}-{max(spans)}; k {ks}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
