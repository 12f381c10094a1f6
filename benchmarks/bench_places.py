"""Places, not passage: the cost of stops and pick-ups against a person-level fit, and their maps.

Two files (``--files``, both by default):

* ``cabs``: full Cabs (``cabs_sf_cabs.parquet`` of the data folder; a fix
  about every minute, 11M fixes), unit ``cab``, its public box;
* ``dense``: one day of 2,000 generated taxis each sampled every 5-60 s
  (``experiments.synthetic_traces``, seed 0, each taxi its own interval:
  6.2M fixes), unit ``taxi``, the generated city's public box; written once
  into ``results/traces/bench-dense-2000u-1d-5-60s-seed0/`` (git-ignored)
  and read from there by later runs.

On each, runs in fresh processes (``benchmarks.peakrss``), the kinds
interleaved round by round, ``--runs`` rounds (the whole command: reading,
the events, the release, JSON and GeoJSON; no picture)::

    person : dpdbscan fit FILE --geo --columns x y --bounds BOX --eps 200m --min-samples 30 \\
                 --unit UNIT --max-cells-per-unit auto --delta 1e-6 --epsilon 1
    stops  : the same with --time time --stops 100m 5min
    pickups: the same with --time time --trip-ends occupied

and reports, per kind, the median wall time, CPU time (the process's user +
system: it moves less with others' load than wall time), its user and system
parts, and peak RSS, and against ``person`` both the ratio of the medians and
the median of the same-round ratios, of CPU and of user time alone (the
target: stops add at most 1.5x, in CPU time where the machine is shared). The
1-minute load average is read before every run and reported (min, median,
max). The stops' process pays numba's import and its first call (the stop
scanner is compiled); a fit without stops imports no numba.

Like with like: every command reads the same file with the same options,
``--max-cells-per-unit auto`` (k chosen privately from what each counts),
the events' commands one or two columns more (time, status). Before the
timed rounds, the library's bytecode is written (as an install has it: a
source tree run under ``PYTHONDONTWRITEBYTECODE=1`` would compile every
module in every process, about 0.4 s of CPU added to both sides of the
ratio) and one untimed round of every kind runs (the file in the OS cache,
numba's on-disk cache of the stop scanner written: in a fresh tree or after
a change of the kernel's code, the first stops run compiles it for seconds,
which the median of two rounds would average in). System time on the shared
virtual machine is mostly first touches of fresh memory and moves with the
load (0.4-0.6 s per GB measured under load 14), so the user time's ratio is
reported beside the CPU's.

Then, unless ``--no-metric``, on every stops and pick-ups model (evaluation
only: it reads the private unit column, which no release does): the shared
places metric (``--metric``, the ``places_metric.py`` tool of the shared
folder: top-20 event cells in spans >= 0.90, passage cells <= 0.10) and, per
span, the share of its events from its most frequent unit (no span may be
mostly one unit's). Prints one JSON line, then a table per file.

    .venv/bin/python -m benchmarks.bench_places [--runs 4] [--files cabs,dense] [--kinds person,stops]
        [--no-metric] [--data PATH] [--metric PATH]

The noise is the secure default (no seed): each run is a different release.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_units_cli import REPO, one_cab_spans, timed_run
from benchmarks.run import _compile_library
from experiments.data import data_dir

FILE = "cabs_sf_cabs.parquet"
BOX = ["-122.6", "37.55", "-122.3", "37.85"]
KINDS = {
    "person": [],
    "stops": ["--time", "time", "--stops", "100m", "5min"],
    "pickups": ["--time", "time", "--trip-ends", "occupied"],
}
TARGET = 1.5  # stops' time / the person-level fit's
#: The clocks reported per run (benchmarks.peakrss): CPU is user + system.
CLOCKS = ("wall_s", "cpu_s", "user_s", "sys_s")
DEFAULT_METRIC = data_dir().parent / "tools" / "places_metric.py"  # beside the shared data
#: The dense synthetic day: units, days, each unit's interval range (s), seed.
DENSE_UNITS, DENSE_DAYS, DENSE_INTERVAL, DENSE_SEED = 2000, 1, (5.0, 60.0), 0


@dataclass(frozen=True)
class Case:
    """A file of traces and what is public about it: its box and its columns."""

    path: Path
    box: list[str]
    unit: str = "cab"
    status: str = "occupied"


def cabs_case(data: Path | None) -> Case:
    return Case(data or data_dir() / FILE, BOX, "cab")


def dense_case(folder: Path | None = None) -> Case:
    """The dense synthetic day, generated (seeded) the first time only."""
    from experiments import synthetic_traces as st

    lo, hi = DENSE_INTERVAL
    tag = f"{DENSE_UNITS}u-{DENSE_DAYS}d-{lo:g}-{hi:g}s-seed{DENSE_SEED}"
    folder = folder or REPO / "results" / "traces" / f"bench-dense-{tag}"
    path = folder / "traces.parquet"
    if not path.exists():
        city = st.generate(DENSE_UNITS, DENSE_DAYS, DENSE_INTERVAL, DENSE_SEED, "taxi")
        city.write(folder)
    return Case(path, [f"{b:.6f}" for b in st.box()], "taxi")


def command(case: Case, out_dir: Path, name: str, kind: str) -> list[str]:
    dpdbscan = str(Path(sys.executable).with_name("dpdbscan"))
    return [
        dpdbscan,
        "fit",
        str(case.path),
        "--geo",
        "--columns",
        "x",
        "y",
        "--bounds",
        *case.box,
        "--eps",
        "200m",
        "--min-samples",
        "30",
        "--unit",
        case.unit,
        "--max-cells-per-unit",
        "auto",
        "--delta",
        "1e-6",
        "--epsilon",
        "1",
        *KINDS[kind],
        "--no-png",
        "--out-dir",
        str(out_dir),
        "--name",
        name,
        "--quiet",
    ]


def places_metric(tool: Path, model: Path, case: Case, kind: str) -> dict[str, Any]:
    """The shared tool's two shares (top event cells and passage cells in spans)."""
    events = ["--events", "stops"] if kind == "stops" else ["--events", "pickups", "--status", case.status]
    res = subprocess.run(
        [
            sys.executable,
            str(tool),
            str(model),
            str(case.path),
            "--unit",
            case.unit,
            "--box",
            *case.box,
            *events,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    m = re.search(r"in spans ([0-9.]+) .*passage cells in spans ([0-9.]+)", res.stdout)
    if m is None:
        raise RuntimeError(f"places metric: unexpected output {res.stdout!r}")
    return {"top20_in_spans": float(m.group(1)), "passage_in_spans": float(m.group(2))}


def events(case: Case, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The events the release counted (lon/lat) and their units, recomputed
    here from the private file for evaluation (the library's own functions)."""
    import pyarrow.parquet as pq

    from dpdbscan import Stops, TripEnds
    from dpdbscan.research import Equirectangular, event_rows, factorize

    t = pq.read_table(case.path, columns=["x", "y", case.unit, "time", case.status])
    lonlat = np.column_stack([t.column("x").to_numpy(), t.column("y").to_numpy()])
    box = [float(v) for v in case.box]
    proj = Equirectangular.from_bounds(box[:2], box[2:])
    codes, _ = factorize(t.column(case.unit))
    ev = Stops(0.1, 300.0) if kind == "stops" else TripEnds("pickup")
    rows = event_rows(ev, proj.forward(lonlat), codes, t.column("time"), t.column(case.status))
    return lonlat[rows], codes[rows]


def bench_file(case: Case, kinds: Sequence[str], runs: int, metric: Path | None) -> dict[str, Any]:
    """One file's rounds, the kinds interleaved; the medians and the ratios."""
    from dpdbscan import load_model, predict_lonlat

    out: dict[str, Any] = {"file": str(case.path), "runs": runs, "command": {}, "time": {}, "releases": {}}
    evaluated = {k: events(case, k) for k in kinds if k != "person"} if metric is not None else {}
    times: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    _compile_library()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:  # untimed: the OS file cache and numba's on-disk cache
            timed_run(command(case, Path(tmp), f"warmup-{kind}", kind))
        for run in range(runs):
            for kind in kinds:
                cmd = command(case, Path(tmp), f"{kind}{run}", kind)
                out["command"][kind] = " ".join(cmd[1:])
                load = os.getloadavg()[0]
                times[kind].append(timed_run(cmd) | {"load": load})
                if kind == "person" or metric is None:
                    continue
                path = Path(tmp) / f"{kind}{run}.spans.json"
                model = load_model(path)
                lonlat, units = evaluated[kind]
                labels = np.asarray(predict_lonlat(model, lonlat))
                rel = {**one_cab_spans(labels, units, model.n_spans), "events": int(len(units))}
                if metric.exists():
                    rel.update(places_metric(metric, path, case, kind))
                out["releases"].setdefault(kind, []).append(rel)
    for kind, got in times.items():
        out["time"][kind] = {
            k: statistics.median(r[k] for r in got) for k in CLOCKS + ("peak_rss_bytes", "minor_faults")
        } | {f"{k}_all": [r[k] for r in got] for k in CLOCKS}
    loads = [r["load"] for got in times.values() for r in got]
    out["load"] = {"min": min(loads), "median": statistics.median(loads), "max": max(loads)}
    if "person" in times:
        others = [k for k in kinds if k != "person"]
        for clock in ("wall", "cpu", "user"):
            base = out["time"]["person"][f"{clock}_s"]
            out[f"ratio_{clock}"] = {k: out["time"][k][f"{clock}_s"] / base for k in others}
            # the same round's ratio: both runs met about the same load
            out[f"round_ratio_{clock}"] = {
                k: statistics.median(
                    a[f"{clock}_s"] / b[f"{clock}_s"] for a, b in zip(times[k], times["person"])
                )
                for k in others
            }
    out["target_ratio"] = TARGET
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=4, help="timed rounds (after one untimed round)")
    ap.add_argument(
        "--files", default="cabs,dense", help="which files: cabs, dense or both (comma-separated)"
    )
    ap.add_argument("--kinds", default="person,stops,pickups", help="which commands (person first)")
    ap.add_argument(
        "--data", type=Path, default=None, help=f"the Cabs file (default: the data folder's {FILE})"
    )
    ap.add_argument("--metric", type=Path, default=DEFAULT_METRIC, help="the shared places_metric.py")
    ap.add_argument("--no-metric", action="store_true", help="time only: no evaluation of the releases")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if any(k not in KINDS for k in kinds):
        ap.error(f"--kinds: each one of {', '.join(KINDS)}")
    makers = {"cabs": lambda: cabs_case(args.data), "dense": dense_case}
    names = [f for f in args.files.split(",") if f]
    if any(f not in makers for f in names):
        ap.error(f"--files: each one of {', '.join(makers)}")
    metric = None if args.no_metric else args.metric
    out = {"files": {f: bench_file(makers[f](), kinds, args.runs, metric) for f in names}}
    print(json.dumps(out))
    print(markdown(out))
    return out


def markdown(out: dict[str, Any]) -> str:
    lines = []
    for name, got in out["files"].items():
        load = got["load"]
        lines += [
            f"\n{name}: {got['file']} ({got['runs']} rounds; load {load['min']:.1f} / {load['median']:.1f} / "
            f"{load['max']:.1f} min / median / max)",
            "",
            "| release | wall (median) | / person | CPU (median) | / person | same-round CPU ratio "
            "| user / system (median) | same-round user ratio "
            "| peak RSS | spans | mostly one unit | top-20 cells in spans | passage cells in spans |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for kind, t in got["time"].items():
            rel = got["releases"].get(kind, [])
            person = kind == "person"
            ratio = 1.0 if person else got["ratio_wall"][kind]
            ratio_cpu = 1.0 if person else got["ratio_cpu"][kind]
            round_cpu = 1.0 if person else got["round_ratio_cpu"][kind]
            round_user = 1.0 if person else got["round_ratio_user"][kind]

            def joined(key: str, rel: list = rel) -> str:
                return "/".join(
                    f"{r[key]:.2f}" if isinstance(r.get(key), float) else str(r.get(key, "-")) for r in rel
                )

            keys = ("spans", "spans_mostly_one_cab", "top20_in_spans", "passage_in_spans")
            cells = " | ".join(joined(k) for k in keys) if rel else " | | | "
            lines.append(
                f"| {kind} | {t['wall_s']:.2f} s | {ratio:.2f} | {t['cpu_s']:.2f} s | {ratio_cpu:.2f} "
                f"| {round_cpu:.2f} | {t['user_s']:.2f} s / {t['sys_s']:.2f} s | {round_user:.2f} "
                f"| {t['peak_rss_bytes'] / 1e9:.2f} GB | {cells} |"
            )
        for kind in got.get("ratio_wall", {}):
            lines.append(
                f"\n{kind} / person: wall {got['ratio_wall'][kind]:.2f}, CPU {got['ratio_cpu'][kind]:.2f}, "
                f"user {got['ratio_user'][kind]:.2f} (same round: wall {got['round_ratio_wall'][kind]:.2f}, "
                f"CPU {got['round_ratio_cpu'][kind]:.2f}, user {got['round_ratio_user'][kind]:.2f}"
                + (f"; target <= {TARGET:g})" if kind == "stops" else ")")
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
