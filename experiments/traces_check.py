"""The places commands on synthetic traces that are not Cabs (experiments.synthetic_traces).

For each configuration (kind of unit, fleet size, days, sampling interval,
seed) it generates a city, writes its traces in the Cabs layout and runs the
command line as a user would, each unit (column ``taxi``) protected, epsilon
1, delta 1e-6, k chosen privately (``--max-cells-per-unit auto``), the city's
public box, seeded noise (``--seed``: research runs):

* ``stops``   fixed: ``--time time --stops 100m 5min --eps 200m --min-samples MINPTS``
* ``pickups`` fixed: ``--time time --trip-ends occupied`` (the same parameters)
* ``stops-auto`` and ``pickups-auto``: the same without eps and MinPts (``auto``)
* with ``--box-km 15,100``: each of these again given a wider public box
  (half-width 100 km, as a user might give a whole region; runs named
  ``...-box200km``), scored on the city's own cells

MINPTS is 30 for fleets of 300 or more, a tenth of the fleet below (at least
10). Each model is scored by the shared ``places_metric.py`` (top-20 event
cells in spans >= 0.90, passage cells <= 0.10; computed from the sampled
traces) and against the generator's truth: of the 20 real places where the
most distinct units stayed 5 min or more, the share that a span holds (at
least half of the place's true stay positions predict into a span), and the
share of the 50 busiest road cells far from every place and home that lie in
spans. Also: spans mostly one unit's events.

``--series`` adds, per configuration, ``--per day`` and ``--per week`` over the
horizon (pick-ups, eps 200 m, MINPTS, ``--max-cells-per-unit auto``), each
charged to a ledger with a lifetime epsilon of 1 (a second identical run must
be refused), and scores the busy (period, cell) pairs
(``experiments.series_coverage``: the 5 busiest pick-up cells, pairs with at
least 100 distinct units that period, as on Cabs; a fifth of a fleet under 500).

    python -m experiments.traces_check --units 500 --days 7 --intervals 60,600 --seeds 0,1 --series
    python -m experiments.traces_check --units 150 --days 3 --intervals 5,60,600 --seeds 0 --kind people
    python -m experiments.traces_check --units 2000 --days 1 --intervals 5-60 --ranks point
    python -m experiments.traces_check --units 5000 --days 7 --intervals 60-600 --hubs none --modes auto

One JSON line per run on standard output (also appended to OUT/runs.jsonl).
``--table`` prints them as markdown; ``--offsets FOLDER ...`` how far the
pick-ups that ``--trip-ends`` finds lie from where passengers really boarded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .data import data_dir
from .synthetic_traces import (
    HALF_KM,
    START,
    City,
    box,
    city_options,
    generate,
    interval_tag,
    parse_interval,
    road_cells,
    to_lonlat,
    top_places,
)

METRIC = data_dir().parent / "tools" / "places_metric.py"  # beside the shared data
UNIT = "taxi"
KINDS = {
    "stops": ["--time", "time", "--stops", "100m", "5min"],
    "pickups": ["--time", "time", "--trip-ends", "occupied"],
    "raw": [],  # every fix, as the README's person-level command (scored against the stops)
}
#: which events the metric scores each kind of run against
SCORED = {"stops": "stops", "pickups": "pickups", "raw": "stops"}


def min_pts(units: int) -> int:
    return 30 if units >= 300 else max(10, units // 10)


def dpdbscan() -> str:
    return str(Path(sys.executable).with_name("dpdbscan"))


def common(units: int, auto: bool, seed: int, half_km: float = HALF_KM) -> list[str]:
    b = [f"{v:.6f}" for v in box(half_km=half_km)]
    par = ["--eps", "auto", "--min-samples", "auto"] if auto else ["--eps", "200m", "--min-samples"]
    par += [] if auto else [str(min_pts(units))]
    return ["--geo", "--columns", "x", "y", "--bounds", *b, *par, "--unit", UNIT, "--delta", "1e-6"]


def fit(
    traces: Path, out: Path, name: str, kind: str, units: int, auto: bool, seed: int, half_km: float = HALF_KM
) -> dict[str, Any]:
    cmd = [dpdbscan(), "fit", str(traces), *common(units, auto, seed, half_km), *KINDS[kind]]
    cmd += ["--max-cells-per-unit", "auto", "--epsilon", "1", "--seed", str(seed)]
    cmd += ["--no-png", "--no-geojson", "--quiet", "--no-progress", "--out-dir", str(out), "--name", name]
    t0, c0 = time.perf_counter(), _children_cpu()
    res = subprocess.run(cmd, capture_output=True, text=True)
    row: dict[str, Any] = {
        "seconds": round(time.perf_counter() - t0, 1),
        "cpu_s": round(_children_cpu() - c0, 1),
        "exit": res.returncode,
    }
    if res.returncode != 0:
        row["stderr"] = res.stderr.strip()[-400:]
        return row
    m = re.search(r"(\d+) span\(s\)", res.stdout)
    row["spans"] = int(m.group(1)) if m else None
    if auto:
        row["auto_line"] = next((ln.strip() for ln in res.stdout.splitlines() if "chose" in ln), None)
    return row


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes so far."""
    t = os.times()
    return t.children_user + t.children_system


def metric(model: Path, traces: Path, kind: str) -> dict[str, Any]:
    cmd = [sys.executable, str(METRIC), str(model), str(traces), "--unit", UNIT, "--events", kind]
    cmd += ["--status", "occupied", "--box", *(f"{v:.6f}" for v in box())]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    top = re.search(r"cells in spans ([\d.]+) \(>=", out)
    road = re.search(r"passage cells in spans ([\d.a-z]+)", out)
    ev = re.search(r"^([\d,]+) ", out)
    return {
        "events": int(ev.group(1).replace(",", "")) if ev else None,
        "top20": float(top.group(1)) if top else None,
        "passage": float(road.group(1)) if road else None,
    }


def truth_scores(city: City, model_path: Path, kind: str) -> dict[str, Any]:
    """The model against the generator's truth, and spans mostly one unit's events."""
    from dpdbscan import Stops, TripEnds, load_model, predict_lonlat
    from dpdbscan.research import Equirectangular, event_rows

    from .person_level import one_unit_spans

    model = load_model(model_path)
    b = box()
    proj = Equirectangular.from_bounds(list(b[:2]), list(b[2:]))
    if kind == "raw":  # every fix counted
        rows = np.arange(len(city.time))
    else:
        events = Stops(0.1, 300.0) if kind == "stops" else TripEnds("pickup")
        rows = event_rows(events, proj.forward(city.lonlat), city.unit, city.time, city.occupied)
    labels = np.asarray(predict_lonlat(model, city.lonlat[rows]))
    one, _ = one_unit_spans(labels, city.unit[rows], model.n_spans)
    share = max_unit_share(labels, city.unit[rows], model.n_spans)
    found, units = [], []
    for pl in top_places(city):
        s = city.stays[(city.stays[:, 1] == pl) & (city.stays[:, 3] - city.stays[:, 2] >= 300)]
        units.append(int(np.unique(s[:, 0]).size))
        inside = np.asarray(predict_lonlat(model, to_lonlat(s[:, 4:6]))) >= 0
        found.append(bool(inside.mean() >= 0.5))
    roads = road_cells(city, 0.2 / np.sqrt(2))
    on_road = np.asarray(predict_lonlat(model, roads)) >= 0
    kinds = [city.places.kind[int(p)] for p in top_places(city)]
    return {
        "one_unit_spans": one,
        "max_unit_share": round(share, 2),
        "truth_top20_places": round(float(np.mean(found)), 2),
        "truth_missed": [f"{k}:{n}" for k, f, n in zip(kinds, found, units) if not f],
        "truth_found": [f"{k}:{n}" for k, f, n in zip(kinds, found, units) if f],
        "truth_road_cells": round(float(on_road.mean()), 2),
    }


def max_unit_share(labels: np.ndarray, units: np.ndarray, n_spans: int) -> float:
    """The largest share of one span's events that come from one unit (0: no event in a span)."""
    inside = labels >= 0
    if not inside.any():
        return 0.0
    _, u = np.unique(units[inside], return_inverse=True)
    n_units = int(u.max()) + 1
    table = np.bincount(labels[inside].astype(np.int64) * n_units + u, minlength=n_spans * n_units)
    table = table.reshape(n_spans, n_units)
    total = table.sum(axis=1)
    held = total > 0
    return float((table.max(axis=1)[held] / total[held]).max())


def series(traces: Path, out: Path, units: int, days: int, seed: int, per: str) -> dict[str, Any]:
    """--per PER over the horizon, charged to a fresh ledger (lifetime epsilon 1); then the same
    command again, which the ledger must refuse."""
    from .series_coverage import coverage

    ledger = out / f"ledger.{per}.sqlite"
    ledger.unlink(missing_ok=True)
    dataset = f"synthetic-{per}"
    subprocess.run(
        [dpdbscan(), "ledger", "init", str(ledger), "--dataset", dataset, "--epsilon", "1", "--delta", "1e-6"]
        + ["--unit", UNIT],
        check=True,
        capture_output=True,
    )
    day0 = dt.datetime.fromtimestamp(START, dt.UTC)
    to = (day0 + dt.timedelta(days=days)).strftime("%Y-%m-%d")
    cmd = [dpdbscan(), "fit", str(traces), *common(units, False, seed), *KINDS["pickups"]]
    cmd += ["--max-cells-per-unit", "auto", "--epsilon", "1", "--seed", str(seed), "--per", per]
    cmd += ["--from", day0.strftime("%Y-%m-%d"), "--to", to, "--ledger", str(ledger), "--dataset", dataset]
    cmd += ["--no-png", "--no-geojson", "--quiet", "--no-progress", "--out-dir", str(out), "--name", per]
    t0 = time.perf_counter()
    first = subprocess.run(cmd, capture_output=True, text=True)
    secs = round(time.perf_counter() - t0, 1)
    again = subprocess.run(cmd, capture_output=True, text=True)
    shown = subprocess.run(
        [dpdbscan(), "ledger", "show", str(ledger), "--json"], capture_output=True, text=True
    ).stdout
    row: dict[str, Any] = {
        "per": per,
        "seconds": secs,
        "exit": first.returncode,
        "again_exit": again.returncode,
    }
    try:
        ds = json.loads(shown)["datasets"][0]
        row["ledger_spent_epsilon"] = round(ds["spent"]["epsilon"], 6)
        row["ledger_releases"] = len(ds["releases"])
    except (ValueError, KeyError, IndexError):
        row["ledger"] = shown[-300:]
    if first.returncode != 0:
        row["stderr"] = first.stderr.strip()[-400:]
        return row
    cov = coverage(str(out / f"{per}.spans.json"), str(traces), UNIT, min(100, max(10, units // 5)))
    keep = ("n_periods", "n_spans", "busy_pairs", "covered", "share", "in_horizon_spans")
    row.update({k: cov[k] for k in keep})
    return row


def run(
    kind: str,
    units: int,
    days: int,
    interval: float | tuple[float, float],
    seed: int,
    root: Path,
    with_series: bool | str,
    boxes: Sequence[float] = (HALF_KM,),
    ranks: str = "spread",
    gaps: str = "light",
    kinds: Sequence[str] = ("stops", "pickups"),
    modes: Sequence[bool] = (False, True),
    roads: str = "grid",
    hubs: str = "default",
    lights: bool = False,
    depots: int = 0,
    reuse: bool = False,
) -> list:
    tag = (
        f"{kind}_u{units}_d{days}_i{interval_tag(interval)}_s{seed}"
        + ("_rpoint" if ranks == "point" else "")
        + ("_gheavy" if gaps == "heavy" else "")
        + ("" if roads == "grid" else f"_{roads}")
        + ("" if hubs == "default" else f"_hubs{hubs}")
        + ("_lights" if lights else "")
        + (f"_depots{depots}" if depots else "")
    )
    out = root / tag
    if with_series == "only":  # the series of traces written before
        rows = []
        for per in ("day", "week") if days % 7 == 0 else ("day",):
            row = {
                "config": tag,
                "run": f"per-{per}",
                **series(out / "traces.parquet", out, units, days, seed, per),
            }
            rows.append(row)
            _emit(row, root)
        return rows
    t0 = time.perf_counter()
    saved = out / "city.pickle"
    if reuse and saved.exists():  # the same city again (its truth too), for other fits of its traces
        import pickle

        with open(saved, "rb") as f:
            city = pickle.load(f)
        traces = out / "traces.parquet"
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            city = generate(
                units,
                days,
                interval,
                seed,
                kind,
                ranks=ranks,
                gaps=gaps,
                roads_layout=roads,
                hubs=hubs,
                lights=lights,
                depots=depots,
            )
        traces = city.write(out, UNIT)
        if reuse:
            import pickle

            with open(saved, "wb") as f:
                pickle.dump(city, f)
    base = {
        "config": tag,
        "fixes": int(len(city.time)),
        "true_pickups": int(len(city.pickups)),
        "generate_s": round(time.perf_counter() - t0, 1),
        "minpts": min_pts(units),
    }
    rows = []
    runs = [(h, e, a) for h in boxes for e in kinds for a in modes]
    for half_km, events, auto in runs:
        name = f"{events}{'-auto' if auto else ''}"
        if half_km != HALF_KM:  # the commands given a wider public box (the metric keeps the city's)
            name += f"-box{2 * half_km:g}km"
        row = {**base, "run": name, **fit(traces, out, name, events, units, auto, seed, half_km)}
        if row["exit"] == 0:
            model = out / f"{name}.spans.json"
            row.update(metric(model, traces, SCORED[events]))
            row.update(truth_scores(city, model, events))
            if auto:
                row.update(_auto_choice(model))
        rows.append(row)
        _emit(row, root)
    if with_series:
        for per in ("day", "week") if days % 7 == 0 else ("day",):
            row = {**base, "run": f"per-{per}", **series(traces, out, units, days, seed, per)}
            rows.append(row)
            _emit(row, root)
    return rows


def _auto_choice(model_path: Path) -> dict[str, Any]:
    from dpdbscan import load_model

    m = load_model(model_path)
    a = m.auto or {}
    levels = sorted({int(lv["min_samples"]) for lv in a.get("levels", []) if isinstance(lv, dict)})
    return {
        "auto_eps_m": round(1000 * float(a.get("eps", m.grid.eps))),
        "auto_minpts": levels or a.get("min_samples"),
        "auto_eps_candidates_m": [round(1000 * e) for e in a.get("eps_candidates", [])],
    }


def _emit(row: dict[str, Any], root: Path) -> None:
    line = json.dumps(row)
    print(line, flush=True)
    with open(root / "runs.jsonl", "a") as f:
        f.write(line + "\n")


def boarding_offsets(out: Path) -> dict[str, Any]:
    """How far each pick-up that ``--trip-ends`` finds (a ride's first
    occupied fix) lies from where the passenger really boarded (the truth's
    ``pickups.csv``), for the traces written in ``out``."""
    import pyarrow.parquet as pq

    from dpdbscan import TripEnds
    from dpdbscan.research import events_rows

    from .synthetic_traces import to_km

    t = pq.read_table(out / "traces.parquet")
    X = np.column_stack([t["x"].to_numpy(), t["y"].to_numpy()])
    rows = events_rows(TripEnds("pickup").resolved(geo=True), X, t[UNIT], t["time"], t["occupied"])
    unit = np.array([int(v[1:]) for v in t[UNIT].take(rows).to_pylist()])  # "u00042" -> 42
    when, at = t["time"].to_numpy()[rows], to_km(X[rows])
    truth = np.loadtxt(out / "pickups.csv", delimiter=",", ndmin=2)  # unit, place, time, x, y
    key = truth[:, 0] * 1e10 + truth[:, 2]
    order = np.argsort(key)
    truth, key = truth[order], key[order]
    j = np.searchsorted(key, unit * 1e10 + when, side="right") - 1  # the unit's last boarding before
    ok = (j >= 0) & (truth[np.maximum(j, 0), 0] == unit)
    d = 1000 * np.hypot(*(at[ok] - truth[j[ok], 3:5]).T)
    return {
        "config": out.name,
        "pickups": int(len(rows)),
        "matched": round(float(ok.mean()), 3),
        "median_m": round(float(np.median(d))),
        "p90_m": round(float(np.percentile(d, 90))),
        "over_200m": round(float(np.mean(d > 200)), 2),
    }


def table(path: Path) -> str:
    """Markdown tables of the runs in a runs.jsonl: one row per configuration and run (its latest)."""
    cols = (
        "config | fixes | run | spans | events | top-20 | passage | one-unit | places (truth) | roads (truth)"
    )
    cols += " | eps | max one-unit share | fit CPU s"
    lines = [f"| {cols} |", "|" + "---|" * (cols.count("|") + 1)]
    scols = "config | per | spans | busy pairs | covered | share | 2nd run exit | ledger epsilon"
    series = [f"| {scols} |", "|" + "---|" * (scols.count("|") + 1)]
    latest = {}  # a rerun (--series-only) replaces the row it repeats
    for line in path.read_text().splitlines():
        r = json.loads(line)
        latest[r["config"], r["run"]] = r
    for r in latest.values():
        if r["run"].startswith("per-"):
            share = f"{r['share']:.2f}" if r.get("busy_pairs") else "-"  # no busy pair: nothing to cover
            series.append(
                f"| {r['config']} | {r['per']} | {r.get('n_spans')} | {r.get('busy_pairs')} | "
                f"{r.get('covered')} | {share} | {r.get('again_exit')} | "
                f"{r.get('ledger_spent_epsilon')} |"
            )
            continue
        eps = f"{r['auto_eps_m']} m" if "auto_eps_m" in r else "200 m"
        lines.append(
            f"| {r['config']} | {r['fixes']:,} | {r['run']} | {r.get('spans')} | {r.get('events', 0):,} | "
            f"{r.get('top20')} | {r.get('passage')} | {r.get('one_unit_spans')} | "
            f"{r.get('truth_top20_places')} | {r.get('truth_road_cells')} | {eps} | "
            f"{r.get('max_unit_share', '-')} | {r.get('cpu_s', '-')} |"
        )
    return "\n".join(lines) + "\n\n" + "\n".join(series)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=["taxi", "people"], default="taxi")
    ap.add_argument("--units", default="500", help="fleet sizes, comma-separated")
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument(
        "--intervals",
        default="60,600",
        help="seconds between fixes, comma-separated; LO-HI: each unit its own, log-uniform (5-600)",
    )
    ap.add_argument("--seeds", default="0")
    ap.add_argument(
        "--box-km",
        default=f"{HALF_KM:g}",
        help="half-widths (km) of the public boxes the commands are given, comma-separated "
        f"(default {HALF_KM:g}: the city's; a wider one as a user might give a whole region)",
    )
    city_options(ap)
    ap.add_argument(
        "--events",
        default="stops,pickups",
        help="which runs, comma-separated: stops, pickups, raw (every fix, scored against the stops)",
    )
    ap.add_argument("--modes", default="fixed,auto", help="fixed (eps 200 m, MINPTS), auto, or both")
    ap.add_argument("--series", action="store_true", help="also --per day and --per week with a ledger")
    ap.add_argument("--series-only", action="store_true", help="only the series, of traces written before")
    ap.add_argument("--out", type=Path, default=Path("results/traces"))
    ap.add_argument("--table", action="store_true", help="print OUT/runs.jsonl as markdown tables")
    ap.add_argument(
        "--reuse", action="store_true", help="keep the city (city.pickle) and fit it again if kept before"
    )
    ap.add_argument("--offsets", nargs="+", type=Path, help="pick-ups' distances from boarding, per folder")
    o = ap.parse_args(argv)
    if o.table:
        print(table(o.out / "runs.jsonl"))
        return 0
    if o.offsets:
        for folder in o.offsets:
            print(json.dumps(boarding_offsets(folder)))
        return 0
    o.out.mkdir(parents=True, exist_ok=True)
    for units in (int(v) for v in o.units.split(",")):
        for interval in (parse_interval(v) for v in o.intervals.split(",")):
            for seed in (int(v) for v in o.seeds.split(",")):
                series_mode = "only" if o.series_only else o.series
                boxes = [float(v) for v in o.box_km.split(",")]
                kinds = [v for v in o.events.split(",") if v in KINDS]
                modes = [v == "auto" for v in o.modes.split(",") if v in ("fixed", "auto")]
                run(
                    o.kind,
                    units,
                    o.days,
                    interval,
                    seed,
                    o.out,
                    series_mode,
                    boxes,
                    o.ranks,
                    o.gaps,
                    kinds,
                    modes,
                    o.roads,
                    o.hubs,
                    o.lights,
                    o.depots,
                    o.reuse,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
