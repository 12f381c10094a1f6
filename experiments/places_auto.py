"""The automatic mode on places: full Cabs pick-ups, each cab protected (issue 28, item 3).

Pick-ups are derived here, for measurement only (the library's own
``--trip-ends`` is another branch's work): rows of ``cabs_sf_cabs.parquet``
where a cab's ``occupied`` turns 0 -> 1 in time order. Each seed fits them
with ``fit_lonlat`` in the automatic mode (eps and MinPts "auto"), cab as
unit, k chosen privately, epsilon 1, delta 1e-6, the MANIFEST's box, saves
the model and scores it with ``../shared/tools/places_metric.py`` (top-20
pick-up cells in spans, passage cells in spans), counts spans mostly one
cab's points, and reports the chosen eps, the spans' sizes and what the
automatic mode said about its choice. ``--hdbscan`` adds non-private
HDBSCAN (scikit-learn) on a subsample of the same pick-ups, as the reference:
how many clusters, the median cluster extent, and the same top-20 / passage
shares for its clusters' points (a cell counts as covered when one of
HDBSCAN's clustered points lies in it).

    .venv/bin/python -m experiments.places_auto --seeds 0-2 --out results/places_auto
    .venv/bin/python -m experiments.places_auto --seeds 0 --hdbscan
    .venv/bin/python -m experiments.places_auto --seeds 0 --figure docs/images/places_auto.png
    .venv/bin/python -m experiments.places_auto --events stops --seeds 0-2
    .venv/bin/python -m experiments.places_auto --events stops --eps 200m --min-samples 30 --seeds 0-9

``--cell-choice uniform`` keeps k cells of each cab at random instead of
its busiest (the default).

``--events stops`` fits the stops instead (the library's ``Stops("100m",
"5min")`` per cab, what ``--stops 100m 5min`` counts); ``--eps`` and
``--min-samples`` fix the parameters instead of choosing them.

``--figure`` draws the first seed's model beside the same release (the same
seed) selected without the place prior (``DPDBSCAN`` on the projected
points: the automatic mode outside geographic mode).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .data import data_dir

DATA = data_dir()
TRACES = DATA / "cabs_sf_cabs.parquet"
METRIC = DATA.parent / "tools" / "places_metric.py"  # beside the shared data
BOX = (-122.6, 37.55, -122.3, 37.85)


def pickups(path: Path = TRACES) -> tuple[np.ndarray, np.ndarray]:
    """(lon/lat of every pick-up, the cab's code of each): rows where a cab's
    ``occupied`` turns 0 -> 1, in time order within the cab."""
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=["x", "y", "cab", "time", "occupied"])
    x, y, tm, occ = (t.column(c).to_numpy() for c in ("x", "y", "time", "occupied"))
    cab = t.column("cab").combine_chunks()
    u = np.asarray(
        cab.indices if hasattr(cab, "indices") else cab.dictionary_encode().indices, dtype=np.int64
    )
    order = np.lexsort((tm, u))
    x, y, u, occ = x[order], y[order], u[order], occ[order]
    i = np.flatnonzero((u[1:] == u[:-1]) & (occ[1:] == 1) & (occ[:-1] == 0)) + 1
    return np.c_[x[i], y[i]], u[i]


def fit_auto(lonlat: np.ndarray, cabs: np.ndarray, seed: int, **kw: Any):
    """The automatic mode at person level (the issue's settings); ``kw`` may
    fix ``eps`` and ``min_samples`` instead."""
    from dpdbscan import fit_lonlat

    kw = {"eps": "auto", "min_samples": "auto", **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_lonlat(
            lonlat,
            bounds=BOX,
            epsilon=1.0,
            delta=1e-6,
            units=cabs,
            max_cells_per_unit="auto",
            random_state=seed,
            **kw,
        )


def stops(path: Path = TRACES, straight_on: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(lon/lat of every stop, the cab's code of each): the library's own
    ``Stops("100m", "5min")`` per cab (what ``--stops 100m 5min`` counts),
    recomputed here for evaluation; ``straight_on`` (degrees) other than the
    library's default (``--events stops-straight``: 30, runs left straight
    on dropped as pauses on the way)."""
    import pyarrow.parquet as pq

    from dpdbscan import Stops
    from dpdbscan.research import Equirectangular, event_rows, factorize

    t = pq.read_table(path, columns=["x", "y", "cab", "time"])
    lonlat = np.column_stack([t.column("x").to_numpy(), t.column("y").to_numpy()])
    proj = Equirectangular.from_bounds(list(BOX[:2]), list(BOX[2:]))
    codes, _ = factorize(t.column("cab"))
    rule = Stops(0.1, 300.0) if straight_on is None else Stops(0.1, 300.0, straight_on=straight_on)
    rows = event_rows(rule, proj.forward(lonlat), codes, t.column("time"), None)
    return lonlat[rows], np.asarray(codes)[rows]


def stops_straight(path: Path = TRACES) -> tuple[np.ndarray, np.ndarray]:
    """:func:`stops` with the pause rule at 30 degrees (``straight_on=30``)."""
    return stops(path, straight_on=30.0)


EVENTS = {"pickups": pickups, "stops": stops, "stops-straight": stops_straight}


def metric(model_path: Path, events: str = "pickups") -> str:
    """places_metric.py's line for a saved model."""
    cmd = [sys.executable, str(METRIC), str(model_path), str(TRACES), "--unit", "cab", "--events", events]
    cmd += ["--status", "occupied", "--box", *map(str, BOX)]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def one_cab_spans(model, lonlat: np.ndarray, cabs: np.ndarray) -> int:
    """Spans more than half of whose pick-ups come from one cab."""
    from dpdbscan import predict_lonlat

    from .person_level import one_unit_spans

    labels = np.asarray(predict_lonlat(model, lonlat))
    return one_unit_spans(labels, cabs, model.n_spans)[0]


def describe(model) -> dict[str, Any]:
    """What the automatic mode chose (public values of the model)."""
    a = model.auto or {}
    return {
        "eps_m": 1000 * float(a.get("eps", model.grid.eps)),
        "base_eps_m": 1000 * float(a.get("base_eps", 0.0)),
        "candidates_m": [round(1000 * e, 1) for e in a.get("eps_candidates", [])],
        "spans": model.n_spans,
        "min_samples": sorted({int(lv["min_samples"]) for lv in a.get("levels", [])}),
        "eps_scores": a.get("eps_scores"),
        "scale": a.get("scale"),
    }


def truth_cells(events: str, path: Path = TRACES, alpha_m: float = 200.0) -> tuple[set, set]:
    """The places metric's ground truth, as ``places_metric.py`` computes it
    (its docstring) but from this script's events (the library's stops: a
    few more than the tool's own loop finds, 120,235 against 120,227 on
    Cabs): the top-20 event cells and the 50 passage cells, as cell ids of
    :func:`cell_ids`."""
    import pyarrow.parquet as pq

    lonlat, cabs = EVENTS[events](path)
    t = pq.read_table(path, columns=["x", "y", "cab"])
    every = np.column_stack([t.column("x").to_numpy(), t.column("y").to_numpy()])
    from dpdbscan.research import factorize

    units, _ = factorize(t.column("cab"))

    def distinct(c: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.unique(np.unique(np.asarray(u, dtype=np.int64) * 10**11 + c) % 10**11, return_counts=True)

    ca, na = distinct(cell_ids(every, alpha_m), units)
    ce, ne = distinct(cell_ids(lonlat, alpha_m), cabs)
    ev = dict(zip(ce.tolist(), ne.tolist()))
    top = set(ce[np.argsort(-ne, kind="stable")[:20]].tolist())
    share = np.array([ev.get(c, 0) / n for c, n in zip(ca.tolist(), na.tolist())])
    order = np.argsort(-na, kind="stable")
    passage = [c for c, q in zip(ca[order].tolist(), share[order].tolist()) if q < 0.02][:50]
    return top, set(passage)


def cell_ids(lonlat: np.ndarray, alpha_m: float = 200.0) -> np.ndarray:
    """The places metric's cells (side alpha / sqrt 2 from the box's corner)."""
    lat0 = (BOX[1] + BOX[3]) / 2
    kx, ky = 111.32e3 * np.cos(np.radians(lat0)), 111.32e3
    w = alpha_m / np.sqrt(2)
    ix = np.floor((lonlat[:, 0] - BOX[0]) * kx / w).astype(np.int64)
    return ix * 100_000 + np.floor((lonlat[:, 1] - BOX[1]) * ky / w).astype(np.int64)


def hdbscan_reference(
    lonlat: np.ndarray,
    n: int = 30_000,
    seed: int = 0,
    cabs: np.ndarray | None = None,
    cells: tuple[set, set] | None = None,
) -> dict[str, Any]:
    """Non-private HDBSCAN on a uniform subsample of the events (metres),
    min_cluster_size 1% of it: clusters and their median extent; with
    ``cells`` (:func:`truth_cells`), the share of the top-20 and of the
    passage cells that hold a clustered sample point (kinder than a span's
    centre test); with ``cabs``, the clusters mostly one cab's."""
    from sklearn.cluster import HDBSCAN

    rng = np.random.default_rng(seed)
    idx = rng.choice(len(lonlat), size=min(n, len(lonlat)), replace=False)
    lat0 = (BOX[1] + BOX[3]) / 2
    xy = (lonlat[idx] - BOX[:2]) * [111_320 * np.cos(np.radians(lat0)), 111_320]
    t0 = time.perf_counter()
    labels = HDBSCAN(min_cluster_size=max(5, len(idx) // 100), copy=True).fit_predict(xy)
    ext = [
        float(
            np.hypot(
                *(np.percentile(xy[labels == c], 95, axis=0) - np.percentile(xy[labels == c], 5, axis=0))
            )
        )
        for c in range(labels.max() + 1)
    ]
    out: dict[str, Any] = {
        "points": len(idx),
        "clusters": int(labels.max() + 1),
        "in_clusters": float(np.mean(labels >= 0)),
        "median_extent_m": float(np.median(ext)) if ext else None,
        "extents_m": sorted(round(e) for e in ext),
        "seconds": time.perf_counter() - t0,
    }
    if cells is not None:
        covered = set(cell_ids(lonlat[idx][labels >= 0]).tolist())
        top, passage = cells
        out["top20_in_clusters"] = float(np.mean([c in covered for c in top]))
        out["passage_in_clusters"] = float(np.mean([c in covered for c in passage])) if passage else None
    if cabs is not None:
        mine = np.asarray(cabs)[idx]
        out["one_cab_clusters"] = sum(
            1
            for c in range(labels.max() + 1)
            if np.bincount(mine[labels == c]).max() * 2 > np.sum(labels == c)
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--events", choices=sorted(EVENTS), default="pickups")
    ap.add_argument("--eps", default="auto", help='"auto" (default) or a fixed eps such as "200m"')
    ap.add_argument("--min-samples", default="auto")
    ap.add_argument("--out", default="results/places_auto")
    ap.add_argument("--hdbscan", action="store_true")
    ap.add_argument("--selection", default="levels")
    ap.add_argument(
        "--cell-choice", default="busiest", choices=["busiest", "uniform"], help="which k cells a cab keeps"
    )
    ap.add_argument("--figure", type=Path, default=None)
    o = ap.parse_args(argv)
    lo, hi = (int(s) for s in (o.seeds.split("-") * 2)[:2])
    out = Path(o.out)
    out.mkdir(parents=True, exist_ok=True)
    lonlat, cabs = EVENTS[o.events]()
    print(f"{len(lonlat):,} {o.events} of {len(np.unique(cabs))} cabs", file=sys.stderr)
    rows = []
    if o.hdbscan:
        cells = truth_cells(o.events)
        ref = hdbscan_reference(lonlat, cabs=cabs, cells=cells)
        print("HDBSCAN", json.dumps(ref))
        rows.append({"method": "hdbscan", **ref})
    for seed in range(lo, hi + 1):
        t0 = time.perf_counter()
        fixed: dict[str, Any] = {"selection": o.selection} if o.eps == "auto" else {}
        fixed["cell_choice"] = o.cell_choice
        if o.eps != "auto":
            fixed["eps"] = o.eps
        if o.min_samples != "auto":
            fixed["min_samples"] = int(o.min_samples)
        model = fit_auto(lonlat, cabs, seed, **fixed)
        secs = time.perf_counter() - t0
        path = out / f"{o.events}_{o.eps}_{o.cell_choice}_{seed}.spans.json"
        _save(model, path)
        row = {
            "seed": seed,
            "cell_choice": o.cell_choice,
            "k": model.release.units.max_cells_per_unit,
            "seconds": round(secs, 2),
            **describe(model),
            "one_cab_spans": one_cab_spans(model, lonlat, cabs),
            "metric": metric(path, o.events),
        }
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "eps_scores"}))
        print("  eps_scores", row["eps_scores"])
        if o.figure is not None and seed == lo:
            figure(model, lonlat, cabs, seed, o.figure)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    return 0


def figure(model, lonlat: np.ndarray, cabs: np.ndarray, seed: int, path: Path) -> None:
    """The place mode's spans beside the same release without the prior."""
    from dpdbscan import DPDBSCAN
    from dpdbscan.research import Equirectangular, format_km, plot_model

    from .figures import pyplot

    lower, upper = list(BOX[:2]), list(BOX[2:])
    proj = Equirectangular.from_bounds(lower, upper)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = (
            DPDBSCAN(
                "auto",
                min_samples="auto",
                epsilon=1.0,
                delta=1e-6,
                bounds=proj.project_bounds(lower, upper),
                max_cells_per_unit="auto",
                random_state=seed,
            )
            .fit(proj.forward(lonlat), units=cabs)
            .spans_
        )
    plain.metadata.update(model.metadata)  # drawn in degrees like the other
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 6.6), dpi=70)
    for ax, m, what in ((axes[0], plain, "without the place prior"), (axes[1], model, "geographic mode")):
        plot_model(m, "spans", ax=ax, n_labels=5)
        ax.set_title(f"{what}: eps={format_km(m.grid.eps)}, {m.n_spans} span(s)", fontsize=10)
    axes[0].set_xlim(axes[1].get_xlim())  # the same view: the whole box
    axes[0].set_ylim(axes[1].get_ylim())
    fig.suptitle(
        f"Cabs pick-ups ({len(lonlat):,}), each cab protected, epsilon = 1, delta = 1e-6, k chosen "
        "privately: the automatic mode (seed {seed})".replace("{seed}", str(seed)),
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=70)


def _save(model, path: Path) -> None:
    from dpdbscan import save_model

    save_model(model, path)


if __name__ == "__main__":
    raise SystemExit(main())
