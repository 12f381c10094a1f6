"""Places, not passage: stops and pick-ups of full Cabs, their cost and their maps.

Runs, interleaved and each in a fresh process (``benchmarks.peakrss``),
``--runs`` times each (the whole command: reading, the events, the release,
JSON and GeoJSON; no picture)::

    person : dpdbscan fit cabs_sf_cabs.parquet --geo --columns x y \\
                 --bounds -122.6 37.55 -122.3 37.85 --eps 200m --min-samples 30 \\
                 --unit cab --max-cells-per-unit auto --delta 1e-6 --epsilon 1
    stops  : the same with --time time --stops 100m 5min
    pickups: the same with --time time --trip-ends occupied

and reports the median wall times and their ratios to ``person`` (the
target: stops add at most 1.5x). Then, on every stops and pick-ups model
(evaluation only: it reads the private ``cab`` column, which no release
does): the shared places metric (``--metric``, the ``places_metric.py`` tool
of the shared folder: top-20 event cells in spans >= 0.90, passage cells
<= 0.10) and, per span, the share of its events from its most frequent cab
(no span may be mostly one cab's). Prints one JSON line, then a table.

    .venv/bin/python -m benchmarks.bench_places [--runs 3] [--data PATH] [--metric PATH]

The noise is the secure default (no seed): each run is a different release.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_units_cli import one_cab_spans, timed_run
from experiments.data import data_dir

FILE = "cabs_sf_cabs.parquet"
BOX = ["-122.6", "37.55", "-122.3", "37.85"]
COMMON = ["--geo", "--columns", "x", "y", "--bounds", *BOX, "--eps", "200m", "--min-samples", "30"]
PERSON = ["--unit", "cab", "--max-cells-per-unit", "auto", "--delta", "1e-6", "--epsilon", "1"]
KINDS = {
    "person": [],
    "stops": ["--time", "time", "--stops", "100m", "5min"],
    "pickups": ["--time", "time", "--trip-ends", "occupied"],
}
METRIC_EVENTS = {"stops": ["--events", "stops"], "pickups": ["--events", "pickups", "--status", "occupied"]}
TARGET = 1.5  # stops' wall time / the person-level fit's
DEFAULT_METRIC = data_dir().parent / "tools" / "places_metric.py"  # beside the shared data


def command(data: Path, out_dir: Path, name: str, kind: str) -> list[str]:
    dpdbscan = str(Path(sys.executable).with_name("dpdbscan"))
    return [
        dpdbscan,
        "fit",
        str(data),
        *COMMON,
        *PERSON,
        *KINDS[kind],
        "--no-png",
        "--out-dir",
        str(out_dir),
        "--name",
        name,
        "--quiet",
    ]


def places_metric(tool: Path, model: Path, data: Path, kind: str) -> dict[str, Any]:
    """The shared tool's two shares (top event cells and passage cells in spans)."""
    res = subprocess.run(
        [
            sys.executable,
            str(tool),
            str(model),
            str(data),
            "--unit",
            "cab",
            "--box",
            *BOX,
            *METRIC_EVENTS[kind],
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    m = re.search(r"in spans ([0-9.]+) .*passage cells in spans ([0-9.]+)", res.stdout)
    if m is None:
        raise RuntimeError(f"places metric: unexpected output {res.stdout!r}")
    return {"top20_in_spans": float(m.group(1)), "passage_in_spans": float(m.group(2))}


def events(data: Path, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The events the release counted (lon/lat) and their cabs, recomputed
    here from the private file for evaluation (the library's own functions)."""
    import pyarrow.parquet as pq

    from dpdbscan import Stops, TripEnds
    from dpdbscan.research import Equirectangular, event_rows, factorize

    t = pq.read_table(data, columns=["x", "y", "cab", "time", "occupied"])
    lonlat = np.column_stack([t.column("x").to_numpy(), t.column("y").to_numpy()])
    box = [float(v) for v in BOX]
    proj = Equirectangular.from_bounds(box[:2], box[2:])
    codes, _ = factorize(t.column("cab"))
    ev = Stops(0.1, 300.0) if kind == "stops" else TripEnds("pickup")
    rows = event_rows(ev, proj.forward(lonlat), codes, t.column("time"), t.column("occupied"))
    return lonlat[rows], codes[rows]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data", type=Path, default=None, help=f"the file (default: the data folder's {FILE})")
    ap.add_argument("--metric", type=Path, default=DEFAULT_METRIC, help="the shared places_metric.py")
    args = ap.parse_args(argv)
    data = args.data or data_dir() / FILE
    out: dict[str, Any] = {"file": str(data), "runs": args.runs, "command": {}, "time": {}, "releases": {}}
    from dpdbscan import load_model, predict_lonlat

    evaluated = {k: events(data, k) for k in ("stops", "pickups")}
    with tempfile.TemporaryDirectory() as tmp:
        times: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
        for run in range(args.runs):
            for kind in KINDS:
                cmd = command(data, Path(tmp), f"{kind}{run}", kind)
                out["command"][kind] = " ".join(cmd[1:])
                times[kind].append(timed_run(cmd))
                if kind == "person":
                    continue
                path = Path(tmp) / f"{kind}{run}.spans.json"
                model = load_model(path)
                lonlat, cabs = evaluated[kind]
                labels = np.asarray(predict_lonlat(model, lonlat))
                rel = {**one_cab_spans(labels, cabs, model.n_spans), "events": int(len(cabs))}
                if args.metric.exists():
                    rel.update(places_metric(args.metric, path, data, kind))
                out["releases"].setdefault(kind, []).append(rel)
    for kind, runs in times.items():
        out["time"][kind] = {
            k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "peak_rss_bytes")
        } | {"wall_s_all": [r["wall_s"] for r in runs]}
    base = out["time"]["person"]["wall_s"]
    out["ratio_wall"] = {k: out["time"][k]["wall_s"] / base for k in ("stops", "pickups")}
    # CPU time (the process's own, user + system) moves less with the machine's load than wall time
    cpu = out["time"]["person"]["cpu_s"]
    out["ratio_cpu"] = {k: out["time"][k]["cpu_s"] / cpu for k in ("stops", "pickups")}
    out["target_ratio"] = TARGET
    print(json.dumps(out))
    print(markdown(out))
    return out


def markdown(out: dict[str, Any]) -> str:
    rows = [
        "| release | wall (median) | / person | CPU (median) | / person | spans | mostly one cab "
        "| top-20 cells in spans "
        "| passage cells in spans |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in KINDS:
        t = out["time"][kind]
        rel = out["releases"].get(kind, [])
        ratio = 1.0 if kind == "person" else out["ratio_wall"][kind]
        ratio_cpu = 1.0 if kind == "person" else out["ratio_cpu"][kind]

        def joined(key: str, rel: list = rel) -> str:
            return "/".join(
                f"{r[key]:.2f}" if isinstance(r.get(key), float) else str(r.get(key, "-")) for r in rel
            )

        cells = (
            " | ".join(
                joined(k) for k in ("spans", "spans_mostly_one_cab", "top20_in_spans", "passage_in_spans")
            )
            if rel
            else "(the raw traces) | | |"
        )
        rows.append(
            f"| {kind} | {t['wall_s']:.2f} s | {ratio:.2f} | {t['cpu_s']:.2f} s | {ratio_cpu:.2f} | {cells} |"
        )
    rows.append(
        f"\nstops / person: wall {out['ratio_wall']['stops']:.2f}, CPU {out['ratio_cpu']['stops']:.2f} "
        f"(target <= {TARGET:g})"
    )
    return "\n".join(rows)


if __name__ == "__main__":
    main()
