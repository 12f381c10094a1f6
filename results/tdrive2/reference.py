"""The non-private reference of issue 28's stops: exact DBSCAN of the exact stops, as the metric reads spans.

The stops are the release's own (``dpdbscan.traces.event_rows`` with ``Stops("100m", "5min")``
on the traces projected as ``fit --geo --bounds BOX`` projects them: one point per stop per
taxi, in km). DBSCAN at eps (km) and each MinPts, a point core when its closed eps-ball holds
MinPts or more points ("points") or points of MinPts or more distinct taxis ("taxis"); a point
is clustered when it is core or within eps of a core point. Clusters are the connected core
points (cells of side eps/sqrt 2, all core points of a cell in one cluster; two core cells
joined where a pair of their core points lies within eps).

The metric's cells (``places_metric.py``: 141 m, its top-20 stop cells and its 50 passage
cells, computed here by the same lines) are read two ways:
  "centre"  the cell's centre within eps of a core point (what DBSCAN's prediction of a new
            point at the centre says; the metric asks the release the same of its centre);
  "holds"   the cell holds a clustered stop.
With ``--models``, the releases' spans are scored here too (the metric's own reading), to check
that the cells are the metric's.

    python results/tdrive2/reference.py /work/tdrive_data/full --min-samples 30 1028 \
        --models places/stops.spans.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numba
import numpy as np
import pyarrow.parquet as pq

from dpdbscan import load_model, predict_lonlat
from dpdbscan.geometry.projection import Equirectangular
from dpdbscan.traces import Stops, event_rows


def metric_cells(x, y, tm, u, box, alpha_m=200.0, top_n=20):
    """The metric's top-N stop cells and 50 passage cells (ids and centres), its lines verbatim in effect."""
    s = np.lexsort((tm, u))
    x, y, tm, u = x[s], y[s], tm[s], u[s]
    lat0 = (box[1] + box[3]) / 2
    kx, ky = 111.32e3 * np.cos(np.radians(lat0)), 111.32e3
    px, py, pt, pu = (x * kx).tolist(), (y * ky).tolist(), tm.tolist(), u.tolist()
    out, n, k = [], len(px), 0
    while k < n:
        j = k + 1
        while j < n and pu[j] == pu[k] and (px[j] - px[k]) ** 2 + (py[j] - py[k]) ** 2 < 100.0**2:
            j += 1
        if pt[j - 1] - pt[k] >= 300:
            out.append(k)
            k = j
        else:
            k += 1
    i = np.asarray(out, dtype=np.int64)
    w = alpha_m / np.sqrt(2)

    def cells(a_, b_):
        return np.floor((a_ - box[0]) * kx / w).astype(np.int64) * 100_000 + np.floor(
            (b_ - box[1]) * ky / w
        ).astype(np.int64)

    def distinct(c, uu):
        return np.unique(np.unique(uu * 10**11 + c) % 10**11, return_counts=True)

    ca, na = distinct(cells(x, y), u)
    ce, ne = distinct(cells(x[i], y[i]), u[i])
    ev = dict(zip(ce.tolist(), ne.tolist()))

    def centre(c):
        return np.c_[box[0] + (c // 100_000 + 0.5) * w / kx, box[1] + (c % 100_000 + 0.5) * w / ky]

    top = ce[np.argsort(-ne)[:top_n]]
    r = np.array([ev.get(c, 0) / m for c, m in zip(ca.tolist(), na.tolist())])
    order = np.argsort(-na)
    passage = np.array([c for c, q in zip(ca[order], r[order]) if q < 0.02][:50])
    return len(i), top, centre(top), passage, centre(passage), cells


@numba.njit(cache=True)
def _find(parent, a):
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


@numba.njit(cache=True)
def _core(P, U, order, keys, starts, ends, ukeys, ny, eps2, min_pts, distinct, n_units):
    """Core flags: early exit once min_pts points (or distinct units) are seen within eps."""
    n = P.shape[0]
    core = np.zeros(n, np.bool_)
    stamp = np.full(n_units, -1, np.int64)
    for p in range(n):
        cx, cy = keys[p] // ny, keys[p] % ny
        cnt = 0
        done = False
        for dx in range(-2, 3):
            if done:
                break
            for dy in range(-2, 3):
                if done:
                    break
                q = (cx + dx) * ny + (cy + dy)
                j = np.searchsorted(ukeys, q)
                if j >= ukeys.size or ukeys[j] != q:
                    continue
                for t in range(starts[j], ends[j]):
                    o = order[t]
                    ddx = P[o, 0] - P[p, 0]
                    ddy = P[o, 1] - P[p, 1]
                    if ddx * ddx + ddy * ddy <= eps2:
                        if distinct:
                            if stamp[U[o]] != p:
                                stamp[U[o]] = p
                                cnt += 1
                        else:
                            cnt += 1
                        if cnt >= min_pts:
                            done = True
                            break
        core[p] = done
    return core


@numba.njit(cache=True)
def _near_core(Q, P, core, order, ukeys, starts, ends, ny, x0, y0, side, eps2):
    """For each query point, whether a core point lies within eps."""
    out = np.zeros(Q.shape[0], np.bool_)
    for p in range(Q.shape[0]):
        cx = np.int64(np.floor((Q[p, 0] - x0) / side))
        cy = np.int64(np.floor((Q[p, 1] - y0) / side))
        hit = False
        for dx in range(-2, 3):
            if hit:
                break
            for dy in range(-2, 3):
                if hit:
                    break
                q = (cx + dx) * ny + (cy + dy)
                j = np.searchsorted(ukeys, q)
                if j >= ukeys.size or ukeys[j] != q:
                    continue
                for t in range(starts[j], ends[j]):
                    o = order[t]
                    if not core[o]:
                        continue
                    ddx = P[o, 0] - Q[p, 0]
                    ddy = P[o, 1] - Q[p, 1]
                    if ddx * ddx + ddy * ddy <= eps2:
                        hit = True
                        break
        out[p] = hit
    return out


@numba.njit(cache=True)
def _clusters(P, core, order, ukeys, starts, ends, ny, eps2):
    """Union-find over core cells: one cluster per connected set; returns each cell's root (-1: no core)."""
    m = ukeys.size
    parent = np.arange(m)
    has = np.zeros(m, np.bool_)
    for j in range(m):
        for t in range(starts[j], ends[j]):
            if core[order[t]]:
                has[j] = True
                break
    for j in range(m):
        if not has[j]:
            continue
        cx, cy = ukeys[j] // ny, ukeys[j] % ny
        for dx in range(-2, 3):
            for dy in range(-2, 3):
                q = (cx + dx) * ny + (cy + dy)
                if q <= ukeys[j]:
                    continue
                k = np.searchsorted(ukeys, q)
                if k >= m or ukeys[k] != q or not has[k]:
                    continue
                if _find(parent, j) == _find(parent, k):
                    continue
                linked = False
                for a in range(starts[j], ends[j]):
                    oa = order[a]
                    if not core[oa]:
                        continue
                    for b in range(starts[k], ends[k]):
                        ob = order[b]
                        if not core[ob]:
                            continue
                        ddx = P[oa, 0] - P[ob, 0]
                        ddy = P[oa, 1] - P[ob, 1]
                        if ddx * ddx + ddy * ddy <= eps2:
                            linked = True
                            break
                    if linked:
                        break
                if linked:
                    parent[_find(parent, j)] = _find(parent, k)
    root = np.full(m, -1, np.int64)
    for j in range(m):
        if has[j]:
            root[j] = _find(parent, j)
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="a folder with traces.parquet and box.txt (tdrive_standin)")
    ap.add_argument("--eps-m", type=float, default=200.0)
    ap.add_argument("--min-samples", type=int, nargs="+", default=[30])
    ap.add_argument("--models", nargs="*", default=[])
    ap.add_argument("--save-stops", type=Path, help="write the stops (km, unit) as .npz for a cross-check")
    o = ap.parse_args()
    box = [float(v) for v in (o.data / "box.txt").read_text().split()]
    t = pq.read_table(o.data / "traces.parquet", columns=["x", "y", "taxi", "time"])
    x, y = (t.column(c).to_numpy() for c in ("x", "y"))
    tm = t.column("time").to_numpy().astype(np.int64)
    u = t.column("taxi").combine_chunks().indices.to_numpy().astype(np.int64)
    c0 = time.process_time()
    n_ev, top, top_c, passage, passage_c, _ = metric_cells(x, y, tm, u, box)
    print(
        f"metric: {n_ev:,} stops; {len(top)} top cells, {len(passage)} passage cells "
        f"({time.process_time() - c0:.0f} s CPU)"
    )
    for m_path in o.models:
        m = load_model(m_path)
        hit = float(np.mean(np.asarray(predict_lonlat(m, top_c)) >= 0))
        road = float(np.mean(np.asarray(predict_lonlat(m, passage_c)) >= 0))
        print(f"release {m_path}: spans {m.n_spans}; top-20 {hit:.2f}; passage {road:.2f}")
    proj = Equirectangular.from_bounds(box[:2], box[2:])
    X = proj.forward(np.c_[x, y])
    c0 = time.process_time()
    rows = event_rows(Stops("100m", "5min").resolved(geo=True), X, u, tm.astype(np.float64))
    P, U = np.ascontiguousarray(X[rows]), u[rows]
    print(
        f"release's stops: {len(rows):,} of {len(u):,} fixes, {len(np.unique(U)):,} taxis "
        f"({time.process_time() - c0:.0f} s CPU)"
    )
    stop_ll = proj.inverse(P)
    for m_path in o.models:
        m = load_model(m_path)
        share = _one_unit(np.asarray(predict_lonlat(m, stop_ll)), U, m.n_spans)
        print(f"release {m_path}: on its stops, {share}")
    if o.save_stops:
        np.savez(o.save_stops, P=P, U=U)
    eps = o.eps_m / 1000.0
    side = eps / np.sqrt(2)
    x0, y0 = P[:, 0].min() - 3 * side, P[:, 1].min() - 3 * side
    ix = np.floor((P[:, 0] - x0) / side).astype(np.int64)
    iy = np.floor((P[:, 1] - y0) / side).astype(np.int64)
    ny = int(iy.max()) + 6
    keys = ix * ny + iy
    order = np.argsort(keys, kind="stable")
    ukeys, starts, counts = np.unique(keys[order], return_index=True, return_counts=True)
    ends = starts + counts
    Ptop, Ppas = proj.forward(top_c), proj.forward(passage_c)
    stop_cells = _ll_cells(stop_ll, box)
    top_set, pas_set = set(top.tolist()), set(passage.tolist())
    results = []
    for min_pts in o.min_samples:
        for mode in ("points", "taxis"):
            c0 = time.process_time()
            core = _core(
                P,
                U,
                order,
                keys,
                starts,
                ends,
                ukeys,
                ny,
                eps * eps,
                min_pts,
                mode == "taxis",
                int(U.max()) + 1,
            )
            clustered = core | _near_core(P, P, core, order, ukeys, starts, ends, ny, x0, y0, side, eps * eps)
            root = _clusters(P, core, order, ukeys, starts, ends, ny, eps * eps)
            n_cl = len(np.unique(root[root >= 0]))
            top_in = _near_core(Ptop, P, core, order, ukeys, starts, ends, ny, x0, y0, side, eps * eps)
            pas_in = _near_core(Ppas, P, core, order, ukeys, starts, ends, ny, x0, y0, side, eps * eps)
            held = set(stop_cells[clustered].tolist())
            r = {
                "min_samples": min_pts,
                "count": mode,
                "clusters": n_cl,
                "core": int(core.sum()),
                "clustered": int(clustered.sum()),
                "top_centre": float(top_in.mean()),
                "passage_centre": float(pas_in.mean()),
                "top_holds": len(top_set & held) / len(top_set),
                "passage_holds": len(pas_set & held) / len(pas_set),
                "cpu_s": round(time.process_time() - c0, 1),
            }
            results.append(r)
            print(json.dumps(r))
    return 0


def _one_unit(labels, units, n_spans):
    """Per span, the share of its events from its most frequent unit (bench_units_cli.one_cab_spans)."""
    inside = labels >= 0
    if not n_spans or not inside.any():
        return "no events in spans"
    n_u = int(units.max()) + 1
    pair = np.bincount(labels[inside] * n_u + units[inside], minlength=n_spans * n_u).reshape(n_spans, n_u)
    top = pair.max(axis=1) / np.maximum(pair.sum(axis=1), 1)
    return f"spans mostly one unit's {int((top > 0.5).sum())}, largest one-unit share {top.max():.3f}"


def _ll_cells(lonlat, box, alpha_m=200.0):
    lat0 = (box[1] + box[3]) / 2
    kx, ky = 111.32e3 * np.cos(np.radians(lat0)), 111.32e3
    w = alpha_m / np.sqrt(2)
    return np.floor((lonlat[:, 0] - box[0]) * kx / w).astype(np.int64) * 100_000 + np.floor(
        (lonlat[:, 1] - box[1]) * ky / w
    ).astype(np.int64)


if __name__ == "__main__":
    raise SystemExit(main())
