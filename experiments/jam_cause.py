"""Why a synthetic city's jams become stops: the truth's stays against the
stops the library finds, by sampling interval, and what a unit's movement
around each stop shows (whether it passes through or turns back).

For a city of ``synthetic_traces`` (small, a seed of its own), per interval:
of the truth's stays of each kind (place, jam, home) and duration band, the
share that holds a stop's anchor of the same unit (the anchor's time within
the stay, or within one interval before it: a run begins at the first fix
within the radius); of the stops, the share that are jams, places, homes or
none of them (moving: red lights, slow traffic). Then, per stop, the unit's
last fix more than ``--out-m`` from the anchor before the run and its first
one after it: the angle between coming and going (0: straight on, 180: back
the way it came) and the straightness (the distance from that fix before to
that fix after over the path through the anchor; 1: passing through).

    python -m experiments.jam_cause --units 400 --days 2 --intervals 5,30,60,180,300,600 --seed 31 --lights
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from dpdbscan.research import stop_rows, trace_order

from .synthetic_traces import HOME, JAM, generate, to_km


def around(
    P: np.ndarray,
    unit: np.ndarray,
    order: np.ndarray,
    anchors: np.ndarray,
    r: float,
    out: float,
    reach: int = 400,
):
    """Per anchor (a row of ``P``): the last fix before the run farther than
    ``out`` from the anchor and the first after, indices into ``order`` (-1:
    none within ``reach`` fixes); the run is the anchor's consecutive fixes
    within ``r``."""
    pos = np.empty(int(order.max()) + 1, np.int64)
    pos[order] = np.arange(order.size)
    i = pos[anchors]
    n = order.size
    p, u = P[anchors], unit[anchors]

    def walk(start: np.ndarray, step: int, limit: float) -> np.ndarray:
        at = start.copy()
        live = np.ones(at.size, bool)
        for _ in range(reach):
            nxt = at + step
            ok = live & (nxt >= 0) & (nxt < n)
            q = order[np.clip(nxt, 0, n - 1)]
            ok &= unit[q] == u
            inside = ok & (np.hypot(*(P[q] - p).T) <= limit)
            at = np.where(inside, nxt, at)
            live = inside
            if not live.any():
                break
        return at

    end = walk(i, 1, r)  # the run's last fix
    after = walk(end, 1, out) + 1
    before = walk(i, -1, out) - 1
    q_a, q_b = order[np.clip(after, 0, n - 1)], order[np.clip(before, 0, n - 1)]
    after = np.where((after < n) & (unit[q_a] == u), after, -1)
    before = np.where((before >= 0) & (unit[q_b] == u), before, -1)
    return before, after


def turn(P: np.ndarray, order: np.ndarray, anchors: np.ndarray, before: np.ndarray, after: np.ndarray):
    """The angle (degrees; 0 straight on, 180 back the way it came) and the
    straightness of each anchor's coming and going (NaN: no fix before or after)."""
    good = (before >= 0) & (after >= 0)
    A, B, C = P[anchors], P[order[np.maximum(before, 0)]], P[order[np.maximum(after, 0)]]
    v1, v2 = A - B, C - A
    n1, n2 = np.hypot(*v1.T), np.hypot(*v2.T)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.sum(v1 * v2, 1) / (n1 * n2)
        ang = np.degrees(np.arccos(np.clip(cos, -1, 1)))
        straight = np.hypot(*(C - B).T) / (n1 + n2)
    return np.where(good, ang, np.nan), np.where(good, straight, np.nan)


def study(city, interval: float, r: float = 0.1, dur: float = 300.0, out_m: float = 300.0) -> dict:
    P = to_km(city.lonlat)
    rows = stop_rows(P, city.unit, city.time.astype(float), r, dur)
    st = city.stays
    kind = np.where(st[:, 1] == JAM, "jam", np.where(st[:, 1] == HOME, "home", "place"))
    length = st[:, 3] - st[:, 2]
    # match stops to stays: same unit, anchor time in [start - interval*1.3, end]
    su, stt = city.unit[rows], city.time[rows].astype(float)
    order_s = np.lexsort((st[:, 2], st[:, 0]))
    key_s = st[order_s, 0] * 1e10 + st[order_s, 2] - interval * 1.3 - 60
    j = np.searchsorted(key_s, su * 1e10 + stt, side="right") - 1
    ok = j >= 0
    jj = order_s[np.maximum(j, 0)]
    ok &= (st[jj, 0] == su) & (stt <= st[jj, 3] + 1)
    stop_kind = np.where(ok, kind[jj], "moving")
    res: dict = {"interval": interval, "stops": int(rows.size)}
    for k in ("place", "jam", "home", "moving"):
        res[f"stops_{k}"] = round(float(np.mean(stop_kind == k)), 3)
    hit = np.zeros(len(st), bool)
    hit[jj[ok]] = True
    for k, lo, hi in (("jam", 180, 300), ("jam", 300, 480), ("place", 300, 900), ("place", 900, 1e9)):
        m = (kind == k) & (length >= lo) & (length < hi)
        res[f"found_{k}_{int(lo)}-{int(hi) if hi < 1e9 else 'inf'}"] = round(float(hit[m].mean()), 3)
    order = trace_order(P, city.unit, city.time.astype(float))
    b, a = around(P, city.unit, order, rows, r, out_m / 1000)
    ang, straight = turn(P, order, rows, b, a)
    good = ~np.isnan(ang)
    ang, straight, sk = ang[good], straight[good], stop_kind[good]
    for k in ("place", "jam", "home"):
        m = sk == k
        if m.any():
            res[f"angle_{k}_q25/50/75"] = [round(float(v)) for v in np.percentile(ang[m], [25, 50, 75])]
            res[f"straight_{k}_share>0.8"] = round(float(np.mean(straight[m] > 0.8)), 2)
            res[f"angle_{k}_share<45"] = round(float(np.mean(ang[m] < 45)), 2)
            res[f"angle_{k}_share<30"] = round(float(np.mean(ang[m] < 30)), 2)
    res["no_context"] = round(float(1 - good.mean()), 3)
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=400)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--intervals", default="5,30,60,180,300,600")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--lights", action="store_true")
    ap.add_argument("--depots", type=int, default=0)
    ap.add_argument("--ranks", default="spread")
    ap.add_argument("--out-m", type=float, default=300.0)
    o = ap.parse_args(argv)
    import json

    for iv in (float(v) for v in o.intervals.split(",")):
        city = generate(o.units, o.days, iv, o.seed, lights=o.lights, depots=o.depots, ranks=o.ranks)
        print(json.dumps(study(city, iv, out_m=o.out_m)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
