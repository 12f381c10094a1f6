"""Which k cells a unit keeps (``cell_choice``), on synthetic traces sampled
every few seconds to every ten minutes: does keeping each unit's busiest
cells help the places and hurt the passage, beyond Cabs?

The traces (:func:`traces`, km in a 10 km square, no real data): ``--units``
units over six hours, each moving between 40 shared places (popularity
Zipf, about 50 m across) and a home of its own; three favourite places per
unit take 70% of its trips, the other 30% go anywhere by popularity. A unit
dwells 10 to 60 minutes, then drives to the next place in a straight line
at 30 km/h; it is sampled every ``--every`` seconds (with a little GPS
jitter). Every point is known to be a dwell or a drive.

Ground truth, as ``shared/tools/places_metric.py`` reads it from a file
(cells of eps / sqrt 2, distinct units per cell): the 20 cells where the
most units dwell, and the 50 cells the most units pass through where under
2% of those units dwell, here also at least :data:`AWAY` from every cell
where 10 or more units dwell (the straight roads converge on the places, so
the busiest drive-only cells would otherwise be a place's doorstep).

Each release is person-level (the unit), epsilon 1, delta 1e-6, k chosen
privately, eps 200 m, MinPts ``--min-samples``: on the raw points and on
the units' stops (``Stops(100 m, 5 min)``), each with ``cell_choice``
"busiest" and "uniform", the same seed for both.

    .venv/bin/python -m experiments.cell_choice [--units 1500] [--seeds 0-2] [--every 5 60 600]
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

SIDE = 10.0  # km
HOURS = 6.0
N_PLACES = 40
SPEED = 30.0 / 3600.0  # km per second
EPS = 0.2
#: A passage cell is this far (km) from every cell where 10 or more units dwell.
AWAY = 0.5


def traces(n_units: int, every: float, seed: int) -> dict[str, np.ndarray]:
    """(x, y, unit, time, dwell) of every sampled point; see the module."""
    rng = np.random.default_rng(seed)
    places = rng.uniform(1.0, SIDE - 1.0, (N_PLACES, 2))
    pop = 1.0 / np.arange(1, N_PLACES + 1)
    pop /= pop.sum()
    xs, ys, us, ts, ds = [], [], [], [], []
    for u in range(n_units):
        home = rng.uniform(0.5, SIDE - 0.5, 2)
        fav = rng.choice(N_PLACES, 3, replace=False, p=pop)
        t, here = 0.0, home
        end = HOURS * 3600.0
        seg_t, seg_a, seg_b, seg_dwell = [], [], [], []
        while t < end:
            dwell = rng.uniform(600.0, 3600.0)
            seg_t.append((t, t + dwell))
            seg_a.append(here)
            seg_b.append(here)
            seg_dwell.append(True)
            t += dwell
            r = rng.random()
            nxt = home if r < 0.15 else places[rng.choice(fav) if r < 0.7 else rng.choice(N_PLACES, p=pop)]
            nxt = nxt + rng.normal(0, 0.02, 2)
            drive = float(np.hypot(*(nxt - here))) / SPEED
            seg_t.append((t, t + drive))
            seg_a.append(here)
            seg_b.append(nxt)
            seg_dwell.append(False)
            t += drive
            here = nxt
        times = np.arange(rng.uniform(0, every), end, every)
        starts = np.array([s for s, _ in seg_t])
        i = np.searchsorted(starts, times, side="right") - 1
        stops = np.array([e for _, e in seg_t])
        frac = np.clip((times - starts[i]) / np.maximum(stops[i] - starts[i], 1e-9), 0, 1)
        a, b = np.array(seg_a)[i], np.array(seg_b)[i]
        pts = a + (b - a) * frac[:, None] + rng.normal(0, 0.01, (times.size, 2))
        xs.append(pts[:, 0])
        ys.append(pts[:, 1])
        us.append(np.full(times.size, u))
        ts.append(times)
        ds.append(np.array(seg_dwell)[i])
    return {
        "x": np.clip(np.concatenate(xs), 0, SIDE),
        "y": np.clip(np.concatenate(ys), 0, SIDE),
        "unit": np.concatenate(us),
        "time": np.concatenate(ts),
        "dwell": np.concatenate(ds),
    }


def truth(t: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Centres of the top-20 dwell cells and of the 50 passage cells."""
    w = EPS / np.sqrt(2)
    cx, cy = np.floor(t["x"] / w).astype(np.int64), np.floor(t["y"] / w).astype(np.int64)
    cell = cx * 100_000 + cy

    def distinct(c: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.unique(np.unique(u * 10**11 + c) % 10**11, return_counts=True)

    ca, na = distinct(cell, t["unit"])
    d = t["dwell"]
    ce, ne = distinct(cell[d], t["unit"][d])
    ev = dict(zip(ce.tolist(), ne.tolist()))
    top = ce[np.argsort(-ne)[:20]]
    share = np.array([ev.get(c, 0) / n for c, n in zip(ca.tolist(), na.tolist())])
    order = np.argsort(-na)

    def centre(c: np.ndarray) -> np.ndarray:
        return np.c_[(c // 100_000 + 0.5) * w, (c % 100_000 + 0.5) * w]

    # roads converge on the places: a passage cell lies AWAY from every dwell cell of many units
    busy = centre(ce[ne >= 10])
    far = np.array(
        [busy.size == 0 or np.hypot(*(busy - centre(np.array([c]))).T).min() > AWAY for c in ca[order]]
    )
    passage = np.array([c for c, q, f in zip(ca[order], share[order], far) if q < 0.02 and f][:50])
    return centre(top), centre(passage)


def release(t: dict[str, np.ndarray], kind: str, choice: str, seed: int, min_samples: int) -> Any:
    from dpdbscan import DPDBSCAN, Stops

    est = DPDBSCAN(
        eps=EPS,
        min_samples=min_samples,
        epsilon=1.0,
        delta=1e-6,
        bounds=(0.0, SIDE),
        max_cells_per_unit="auto",
        cell_choice=choice,
        events=Stops(0.1, 300.0) if kind == "stops" else None,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "stops":
            est.fit(np.c_[t["x"], t["y"]], units=t["unit"], times=t["time"])
        else:
            est.fit(np.c_[t["x"], t["y"]], units=t["unit"])
    return est


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--units", type=int, default=1500)
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--every", type=float, nargs="+", default=[5.0, 60.0, 600.0])
    ap.add_argument("--min-samples", type=int, default=30)
    o = ap.parse_args(argv)
    lo, hi = (int(s) for s in (o.seeds.split("-") * 2)[:2])
    for every in o.every:
        for seed in range(lo, hi + 1):
            t = traces(o.units, every, seed)
            top, passage = truth(t)
            for kind in ("raw", "stops"):
                for choice in ("busiest", "uniform"):
                    est = release(t, kind, choice, seed, o.min_samples)
                    m = est.spans_
                    road = float(np.mean(est.predict(passage) >= 0)) if len(passage) else None
                    row = {
                        "every_s": every,
                        "seed": seed,
                        "points": int(t["x"].size),
                        "events": kind,
                        "cell_choice": choice,
                        "k": m.release.units.max_cells_per_unit,
                        "spans": m.n_spans,
                        "top20_in_spans": float(np.mean(est.predict(top) >= 0)),
                        "passage_in_spans": road,
                    }
                    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
