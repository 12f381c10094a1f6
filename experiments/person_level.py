"""Person-level privacy on full Cabs (issue 20): what protecting each cab costs, beside event-level releases.

One table over epsilon in {0.5, 1, 2, 4, 8} (docs/accuracy.md, "Person-level
privacy on Cabs"). Every fit is ``fit_lonlat`` on full Cabs
(``cabs_sf_cabs.parquet``: x, y, cab; 10,995,626 rows, 536 cabs) with the
issue's parameters: eps "200m", min_samples 100, the MANIFEST's box
-122.6 37.55 -122.3 37.85 (a dense histogram of cells of 141 m), seeded
(research mode), at two levels:

* person: ``units`` = the cab, ``max_cells_per_unit=1000``,
  ``max_points_per_cell=1``, the exact discrete Gaussian, delta 1e-6;
* event: no units (each row is protected, not each cab), the exact discrete
  Laplace, delta 0.

For each fit:

* spans: how many spans the release has;
* ARI: of the ``predict`` labels of every point against those of the fit's
  noiseless twin (:func:`dpdbscan.research.noiseless_twin`: the same counts,
  at person level after the same choice of each cab's cells, without noise,
  post-processed by the same core test with margins 0). It measures what the
  noise costs, not what the contribution bound costs;
* top-50 in spans: the share of the 50 cells of the release's grid seen by
  the most cabs (distinct cabs with a point there, read from the raw data
  for evaluation only) whose centre ``predict`` puts in a span;
* one-cab spans: spans more than half of whose points (by ``predict`` on
  every point) come from one cab;
* points in spans: the share of all points that ``predict`` puts in a span;
* largest span: the share of all points in the span that holds the most;
* cells >= 3 sd alone: cells whose exact (bounded) count reaches three
  standard deviations of the fit's noise on its own, before the eps-ball sums
  add up kappa cells;
* seconds: wall-clock time of ``fit_lonlat`` alone (data in memory).

The twins have rows of their own (ARI 1 by definition): the person-level
twin depends on the seed (the bounding key), the event-level one on nothing.

    .venv/bin/python -m experiments.person_level                  # seeds 0-2, both levels
    .venv/bin/python -m experiments.person_level --seeds 0-4 --epsilons 1,2 --levels person
    .venv/bin/python -m experiments.person_level --json results/person_level.json

Run it in ``.venv`` (``make demo``): reading Parquet needs pyarrow (the
library's ``io`` extra), which the experiments' own environment does not
install. Importable: :func:`busiest_cells`, :func:`share_in_spans`,
:func:`one_unit_spans`, :func:`evaluate`, :func:`markdown`.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan import Grid, SpanModel, fit_lonlat
from dpdbscan.research import Equirectangular, noiseless_twin

from . import data, options

LEVELS = ("person", "event")
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
EPS = "200m"
MIN_SAMPLES = 100
MAX_CELLS_PER_UNIT = 1000
MAX_POINTS_PER_CELL = 1
DELTA = 1e-6
TOP = 50
METRICS = (
    "spans",
    "ari",
    "top_in_spans",
    "one_unit_spans",
    "points_in_spans",
    "largest_span",
    "cells_3sd",
    "seconds",
)
SIGMA_KS = (50, 200, 1000)


def level_params(level: str) -> dict[str, Any]:
    """The keyword arguments of ``fit_lonlat`` that make a level."""
    if level == "person":
        return {
            "max_cells_per_unit": MAX_CELLS_PER_UNIT,
            "max_points_per_cell": MAX_POINTS_PER_CELL,
            "noise": "gaussian",
            "delta": DELTA,
        }
    if level == "event":
        return {"noise": "discrete", "delta": 0.0}
    raise ValueError(f"level must be one of {LEVELS}, got {level!r}")


# ------------------------------------------------------------------ metrics
def busiest_cells(grid: Grid, X: np.ndarray, unit_codes: np.ndarray, n: int = TOP) -> np.ndarray:
    """Keys of the ``n`` cells of ``grid`` seen by the most units (a unit
    sees a cell when it has a point there); ties go to the smaller key."""
    keys = grid.keys_of_points(X)
    space = int(keys.max(initial=0)) + 1
    pairs = np.unique(unit_codes.astype(np.int64) * space + keys)
    seen = np.bincount(pairs % space, minlength=space)
    order = np.lexsort((np.arange(space), -seen))
    return order[:n][seen[order[:n]] > 0].astype(np.int64)


def share_in_spans(model: SpanModel, grid: Grid, keys: np.ndarray) -> float:
    """Share of the cells ``keys`` of ``grid`` whose centre ``model.predict``
    puts in a span."""
    centres = grid.cell_centres(grid.decode(keys))
    return float(np.mean(model.predict(centres) >= 0)) if keys.size else float("nan")


def one_unit_spans(labels: np.ndarray, unit_codes: np.ndarray, n_spans: int) -> tuple[int, int]:
    """(spans more than half of whose points come from one unit, spans with
    no point at all), from span labels and unit codes of the same points."""
    n_units = int(unit_codes.max(initial=0)) + 1
    inside = labels >= 0
    table = np.bincount(
        labels[inside].astype(np.int64) * n_units + unit_codes[inside], minlength=n_spans * n_units
    ).reshape(n_spans, n_units)
    total = table.sum(axis=1)
    return int(np.sum(2 * table.max(axis=1, initial=0) > total)), int(np.sum(total == 0))


def largest_span(labels: np.ndarray) -> float:
    """Share of all points that the largest span (by points) holds."""
    inside = labels[labels >= 0]
    return float(np.bincount(inside).max() / labels.size) if inside.size else 0.0


def ari(a: np.ndarray, b: np.ndarray) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(a, b))


# --------------------------------------------------------------- the runs
def exact_counts(twin: SpanModel) -> np.ndarray:
    """The exact (bounded) counts of a noiseless twin's cells."""
    assert twin.histogram is not None and twin.histogram.noise == "none"
    return np.asarray(twin.histogram.values).ravel()


def measure(
    model: SpanModel, labels: np.ndarray, ref: np.ndarray | None, ctx: dict[str, Any]
) -> dict[str, Any]:
    """The metrics of one model whose labels of every point are ``labels``
    (``ref``: the noiseless twin's labels; None for the twin itself)."""
    dominated, empty = one_unit_spans(labels, ctx["codes"], model.n_spans)
    return {
        "spans": model.n_spans,
        "ari": 1.0 if ref is None else ari(ref, labels),
        "top_in_spans": share_in_spans(model, ctx["grid"], ctx["top"]),
        "one_unit_spans": dominated,
        "empty_spans": empty,
        "points_in_spans": float(np.mean(labels >= 0)),
        "largest_span": largest_span(labels),
    }


def cabs_fit(lonlat: np.ndarray, epsilon: float, **params: Any) -> SpanModel:
    """``fit_lonlat`` of Cabs with the table's eps, MinPts and public box."""
    box = data.GEO_BOXES["cabs"].degrees
    return fit_lonlat(lonlat, bounds=box, eps=EPS, min_samples=MIN_SAMPLES, epsilon=epsilon, **params)


def fit(
    lonlat: np.ndarray, units: np.ndarray, level: str, epsilon: float, seed: int
) -> tuple[SpanModel, float, list[str]]:
    """One release and its wall-clock seconds, with the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        who = units if level == "person" else None
        model = cabs_fit(lonlat, epsilon, random_state=seed, units=who, **level_params(level))
        seconds = time.perf_counter() - t0
    notes = sorted({f"{w.category.__name__}: {str(w.message)[:90]}" for w in caught})
    return model, seconds, [n for n in notes if not n.startswith("InsecureRandomnessWarning")]


def evaluate(
    levels: Sequence[str] = LEVELS,
    epsilons: Sequence[float] = EPSILONS,
    seeds: Sequence[int] = range(3),
    *,
    lonlat: np.ndarray | None = None,
    units: np.ndarray | None = None,
) -> dict[str, Any]:
    """Every (level, epsilon, seed) fit's metrics, and each twin's.

    Returns ``{"runs": [...], "twins": [...], "setup": {...}}``: a run is
    ``{"level", "epsilon", "seed", <METRICS>, "empty_spans", "noise_sd",
    "warnings"}``; a twin ``{"level", "seed", <metrics but ari and seconds>}``
    (seed None for the event level's one twin)."""
    if lonlat is None or units is None:
        lonlat, units = data.cabs_with_units()
    codes = np.unique(units, return_inverse=True)[1].ravel().astype(np.int64)
    ctx: dict[str, Any] = {"codes": codes}
    runs: list[dict[str, Any]] = []
    twins: list[dict[str, Any]] = []
    refs: dict[tuple[str, int | None], np.ndarray] = {}
    counts: dict[tuple[str, int | None], np.ndarray] = {}
    X = proj = None
    for level in levels:
        for seed in seeds:
            for epsilon in epsilons:
                model, seconds, notes = fit(lonlat, units, level, epsilon, seed)
                if X is None:
                    proj = model.metadata["projection"]
                    X = Equirectangular.from_dict(proj).forward(lonlat)
                    ctx["grid"] = model.release.grid
                    ctx["top"] = busiest_cells(ctx["grid"], X, codes)
                    ctx["top_seen"] = _seen(ctx["grid"], X, codes, ctx["top"])
                # the same public box gives the same projection and grid every time
                assert model.metadata["projection"] == proj and model.release.grid == ctx["grid"]
                # the twin depends on the seed (the bounding key) at person level, on nothing at event level
                key = (level, seed if level == "person" else None)
                if key not in refs:
                    twin = noiseless_twin(model, X, units if level == "person" else None, random_state=seed)
                    refs[key] = twin.predict(X)
                    counts[key] = exact_counts(twin)
                    twins.append({"level": level, "seed": key[1], **measure(twin, refs[key], None, ctx)})
                labels = model.predict(X)
                sd = _noise_sd(model)
                row = {
                    "level": level,
                    "epsilon": epsilon,
                    "seed": seed,
                    **measure(model, labels, refs[key], ctx),
                }
                # how many cells the noise lets through on their own, before the eps-ball sums add kappa cells
                row.update(cells_3sd=int(np.sum(counts[key] >= 3 * sd)), rho=model.release.rho)
                row.update(seconds=seconds, noise_sd=sd, warnings=notes)
                runs.append(row)
                print(
                    f"  {level} eps={epsilon:g} seed={seed}: {row['spans']} spans, ARI {row['ari']:.3f}, "
                    f"top-{TOP} {row['top_in_spans']:.2f}, one-cab {row['one_unit_spans']}, {seconds:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
    return {"runs": runs, "twins": twins, "setup": setup(len(lonlat), int(codes.max()) + 1, ctx)}


def three_sigma(
    lonlat: np.ndarray, units: np.ndarray, ks: Sequence[int] = SIGMA_KS, seed: int = 0
) -> list[dict[str, Any]]:
    """Why Gaussian: for each k, how many cells' exact bounded counts reach 3
    noise sd on their own, under the person-level noise of three budgets.

    The counts are those of :func:`noiseless_twin` (seed ``seed``'s choice of
    each cab's k cells). The sd are the library's own: of a fit with the
    discrete Laplace at epsilon 1 (L1 sensitivity k m), of a fit with the
    discrete Gaussian at epsilon 1, delta 1e-6 (L2 sensitivity sqrt(k) m),
    and that Gaussian's sigma rescaled to rho = 0.5 (sigma is proportional
    to 1 / sqrt(rho))."""
    out = []
    for k in ks:
        sds = {}
        for name, noise, delta in (("laplace", "discrete", 0.0), ("gaussian", "gaussian", DELTA)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bound = {"max_cells_per_unit": k, "max_points_per_cell": MAX_POINTS_PER_CELL, "units": units}
                model = cabs_fit(lonlat, 1.0, delta=delta, noise=noise, random_state=seed, **bound)
            sds[name] = _noise_sd(model)
            if name == "gaussian":
                rho = float(model.release.rho or 0.0)
                X = Equirectangular.from_dict(model.metadata["projection"]).forward(lonlat)
                c = exact_counts(noiseless_twin(model, X, units, random_state=seed))
        sds["gaussian_rho_half"] = sds["gaussian"] * float(np.sqrt(rho / 0.5))
        row: dict[str, Any] = {"k": k, "cells": int(np.sum(c > 0)), "max_count": int(c.max(initial=0))}
        for name, sd in sds.items():
            row[name] = {"sd": sd, "cells_3sd": int(np.sum(c >= 3 * sd))}
        out.append(row)
        print(f"  3 sd, k={k}: {row}", file=sys.stderr, flush=True)
    return out


def three_sigma_markdown(rows: list[dict[str, Any]]) -> str:
    """The table of :func:`three_sigma`."""
    out = [
        "| k | cells kept | largest count | Laplace ε = 1: sd, cells ≥ 3 sd "
        "| Gaussian ε = 1, δ = 1e-6: sd, cells ≥ 3 sd | Gaussian ρ = 0.5: sd, cells ≥ 3 sd |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [f"{r['k']:,}", f"{r['cells']:,}", f"{r['max_count']:,}"]
        noises = ("laplace", "gaussian", "gaussian_rho_half")
        cells += [f"{r[n]['sd']:.3g}, {r[n]['cells_3sd']:,}" for n in noises]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _seen(grid: Grid, X: np.ndarray, codes: np.ndarray, keys: np.ndarray) -> list[int]:
    """How many units saw each of ``keys`` (for the record)."""
    cell = grid.keys_of_points(X)
    mask = np.isin(cell, keys)
    pairs = np.unique(np.stack([cell[mask], codes[mask]], axis=1), axis=0)
    seen = dict(zip(*np.unique(pairs[:, 0], return_counts=True)))
    return [int(seen.get(k, 0)) for k in keys.tolist()]


def _noise_sd(model: SpanModel) -> float:
    """The standard deviation of one cell's noise."""
    rel = model.release
    if rel.noise == "gaussian":
        return float(np.sqrt(rel.noise_scale))
    q = float(np.exp(-rel.noise_scale))
    return float(np.sqrt(2 * q) / (1 - q))


def setup(n: int, n_units: int, ctx: dict[str, Any]) -> dict[str, Any]:
    """The run's public setting and the machine."""
    grid = ctx["grid"]
    return {
        "rows": n,
        "units": n_units,
        "box": list(data.GEO_BOXES["cabs"].degrees),
        "eps": EPS,
        "min_samples": MIN_SAMPLES,
        "max_cells_per_unit": MAX_CELLS_PER_UNIT,
        "max_points_per_cell": MAX_POINTS_PER_CELL,
        "delta_person": DELTA,
        "cell_width_m": 1000 * grid.width,
        "grid_shape": list(grid.shape),
        "top_cells_seen_by": [min(ctx["top_seen"]), max(ctx["top_seen"])],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average": list(os.getloadavg()),
    }


# ---------------------------------------------------------------- report
def _stat(values: Sequence[float], fmt: str) -> str:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 1 or np.all(a == a[0]):
        return format(a[0], fmt)
    return f"{format(a.mean(), fmt)} [{format(a.min(), fmt)}, {format(a.max(), fmt)}]"


def markdown(result: dict[str, Any]) -> str:
    """The table: mean [min, max] over seeds, one row per (level, epsilon),
    then the noiseless twins."""
    runs, twins = result["runs"], result["twins"]

    def col(rows: list[dict[str, Any]], name: str, fmt: str) -> str:
        return _stat([r[name] for r in rows], fmt)

    out = [
        "| level | ε | noise sd per cell | spans | ARI vs noiseless | top-50 cells in spans "
        "| spans > half one cab | points in spans | largest span | cells ≥ 3 sd alone | s per fit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["level"], r["epsilon"]) for r in runs}, key=lambda k: (LEVELS.index(k[0]), k[1]))
    for level, eps in keys:
        rs = [r for r in runs if r["level"] == level and r["epsilon"] == eps]
        cells = [
            level,
            f"{eps:g}",
            f"{rs[0]['noise_sd']:.3g}",
            col(rs, "spans", ".1f"),
            col(rs, "ari", ".3f"),
            col(rs, "top_in_spans", ".2f"),
            col(rs, "one_unit_spans", ".1f"),
            col(rs, "points_in_spans", ".3f"),
            col(rs, "largest_span", ".3f"),
            col(rs, "cells_3sd", ".1f"),
            col(rs, "seconds", ".1f"),
        ]
        out.append("| " + " | ".join(cells) + " |")
    for level in LEVELS:
        ts = [t for t in twins if t["level"] == level]
        if ts:
            cells = [
                f"{level}, no noise",
                "–",
                "0",
                col(ts, "spans", ".1f"),
                "1 (reference)",
                col(ts, "top_in_spans", ".2f"),
                col(ts, "one_unit_spans", ".1f"),
                col(ts, "points_in_spans", ".3f"),
                col(ts, "largest_span", ".3f"),
                "–",
                "–",
            ]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = options.parser(__doc__)
    ap.add_argument("--levels", default=",".join(LEVELS))
    ap.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument(
        "--sigma-ks", default=",".join(map(str, SIGMA_KS)), help="k of the 3-sd table ('' skips it)"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write every run's numbers here")
    args = ap.parse_args(argv)
    levels = options.names(args.levels, LEVELS)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    seeds = options.seed_range(args.seeds)
    t0 = time.perf_counter()
    lonlat, units = data.cabs_with_units()
    result = evaluate(levels, epsilons, seeds, lonlat=lonlat, units=units)
    ks = [int(k) for k in args.sigma_ks.split(",") if k.strip()]
    result["three_sigma"] = three_sigma(lonlat, units, ks, seeds[0]) if ks else []
    result["setup"]["wall_seconds"] = time.perf_counter() - t0
    result["setup"]["load_average_end"] = list(os.getloadavg())
    s = result["setup"]
    print(
        f"Full Cabs ({s['rows']:,} rows, {s['units']} cabs), eps {EPS}, MinPts {MIN_SAMPLES}, cells of "
        f"{s['cell_width_m']:.1f} m ({s['grid_shape'][0]} x {s['grid_shape'][1]}); person level: "
        f"k = {MAX_CELLS_PER_UNIT}, m = {MAX_POINTS_PER_CELL}, Gaussian, delta = {DELTA:g}; event level: "
        f"discrete Laplace, delta = 0. Seeds {args.seeds}: mean [min, max]. The {TOP} busiest cells are "
        f"seen by {s['top_cells_seen_by'][0]} to {s['top_cells_seen_by'][1]} cabs.\n"
    )
    print(markdown(result))
    if result["three_sigma"]:
        print(f"\nCells whose exact bounded count reaches 3 noise sd on its own (seed {seeds[0]}):\n")
        print(three_sigma_markdown(result["three_sigma"]))
    notes = sorted({(r["level"], n) for r in result["runs"] for n in r["warnings"]})
    empty = [r for r in result["runs"] if r["empty_spans"]]
    print(f"\nspans holding no point: {sum(r['empty_spans'] for r in empty)} in {len(empty)} fits")
    for level, note in notes:
        print(f"warning ({level} level): {note}")
    print(f"\n{s['machine']}, Python {s['python']}, numpy {s['numpy']}")
    print(
        f"load average {s['load_average']} at the start, {s['load_average_end']} at the end; "
        f"{s['wall_seconds']:.0f} s in all"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
