"""The benchmark suite of issue 4 ("speed at scale"): `make bench`.

Prints a table of medians and ratios, each ratio between medians measured in
the same run (interleaved, so that both sides see the same machine load):

* floor    — ours against the bare floor: ``grid.keys_of_points`` + ``np.sort``
             + run-length counts of the same points on the same grid
             (Cabs 11M; the 1.86M Crash-sized stand-in).            target <= 3x
* sklearn  — ours against scikit-learn's exact DBSCAN at the same (alpha,
             MinPts) on 1e6 2-D points (timed once or twice).      target >= 100x
* chest    — the 3-D chest accelerometer set (104k points).         target <= 0.5 s
* memory   — peak RSS of a fit on Cabs above the input array, in a fresh
             process (benchmarks.memprobe).                         target <= 1.5 GB
* scaling  — fit time and peak memory for n = 1e5 ... 1e7 points resampled
             from Cabs (the default histogram and the linear-time sparse one).
* naive    — ours against the naive Laplace histogram (noise on all |X| cells,
             ``histogram="dense"``) and the linear-time one (``"sparse"``).
* cli      — cold runs of ``python -m dpdbscan fit`` in fresh interpreters
             (imports, reading the .npy, fit, writing the JSON all counted).
* csv      — the whole ``dpdbscan fit`` on the gzipped Cabs CSV (11M rows;
             read, fit, write JSON, GeoJSON and PNG) in a fresh process,
             against pyarrow alone reading the same file, interleaved; also
             JSON only and JSON + GeoJSON, the peak RSS of the whole process,
             and a stage-by-stage split (benchmarks.cli_stages).
                                                                    target <= 2x
* units    — person level in memory (1e8 rows, 1e6 units; k = 10, m = 2)
             against an event-level fit of the same rows, each fit in a
             fresh process (benchmarks.bench_units_memory): wall medians
             and the memory above the input.       target <= 3x, <= 4 GB
* dims     — d = 2..8 against the ``dbscan`` package (Wang, Gu & Shun's exact
             parallel DBSCAN, the ``bench`` extra) and scikit-learn on the
             seeded blobs of benchmarks.blobs_nd, each fit in a fresh process
             (benchmarks.bench_dims): fit time, peak RSS, ARI against DBSCAN.
                                                  target <= 2x, <= 2 GB, ARI >= 0.95

Every fit uses the library defaults and the secure default noise
(``random_state=None``); one warm-up fit per configuration is not counted.

    .venv/bin/python -m benchmarks.run [--quick] [--repeats 5] [--only floor,chest]
                                       [--json results.json] [--md results.md]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan import Grid
from experiments import data, paper

from . import bench_data
from .bench_data import Dataset
from .timing import estimator, fit_seconds, floor_seconds, interleaved, med, table_head

SECTIONS = ("floor", "sklearn", "chest", "memory", "scaling", "naive", "cli", "csv", "units", "dims")
GB = 1e9
#: Where the benchmarks' own modules run as ``python -m benchmarks.<name>``.
REPO = data.REPO
Out = dict[str, Any]


def _fit_seconds(ds: Dataset, X: np.ndarray | None = None, **kw: Any) -> float:
    return fit_seconds(estimator(ds, **kw), ds.X if X is None else X)


def _compile_library() -> None:
    """Write the library's bytecode (``__pycache__``) before cold runs.

    An installed package comes with its bytecode (pip compiles it on
    install), as pyarrow and matplotlib here do; a source checkout run with
    ``PYTHONDONTWRITEBYTECODE=1`` (set on the shared machine) would compile
    every module of the library from source in every fresh process, about
    0.3 s that no user pays. ``compileall`` writes it whatever that setting."""
    import compileall

    import dpdbscan

    compileall.compile_dir(str(Path(dpdbscan.__file__).parent), quiet=1)


def _module(name: str, *args: str) -> list[str]:
    """The command that runs ``benchmarks.<name>`` in a fresh interpreter."""
    return [sys.executable, "-m", f"benchmarks.{name}", *args]


# --------------------------------------------------------------------------- #
# sections


def _against_floor(target: str, ds: Dataset, t: dict[str, list[float]], ok: bool, limit: float) -> Out:
    """A target row of ours against the counting floor, measured in turn."""
    return {
        "target": target,
        "dataset": ds.note,
        "n": ds.n,
        "n_cells": Grid(*ds.bounds, ds.alpha).n_cells,
        "measured_s": med(t["ours"]),
        "baseline": "floor",
        "baseline_s": med(t["floor"]),
        "ratio": med(t["ours"]) / med(t["floor"]),
        "limit": limit,
        "pass": ok,
        "runs_ours": t["ours"],
        "runs_baseline": t["floor"],
    }


def _ours_and_floor(ds: Dataset, repeats: int) -> dict[str, list[float]]:
    return interleaved({"ours": partial(_fit_seconds, ds), "floor": partial(floor_seconds, ds)}, repeats)


def floor_section(args: argparse.Namespace, out: Out) -> None:
    names = ["crash"] if args.quick else ["cabs", "crash"]
    for name in names:
        ds = bench_data.load(name)
        t = _ours_and_floor(ds, args.repeats)
        ratio = med(t["ours"]) / med(t["floor"])
        out["targets"].append(_against_floor(f"{name}: fit <= 3x floor", ds, t, ratio <= 3.0, 3.0))
        _progress(out["targets"][-1])


def sklearn_section(args: argparse.Namespace, out: Out) -> None:
    from sklearn.cluster import DBSCAN

    names = ["city_1e6"] + (["cabs_tiny"] if args.sklearn_cabs_tiny else [])
    for name in names:
        ds = bench_data.load(name)
        if args.quick:
            X = bench_data.resample(ds.X, 200_000, seed=3)
            label = f"{name} resampled to 2e5 (--quick)"
        else:
            X, label = ds.X, name
        ours = [_fit_seconds(ds, X) for _ in range(args.repeats + 1)][1:]
        sk_runs = []
        for _ in range(1 if args.quick or name != "city_1e6" else 2):
            gc.collect()
            t0 = time.perf_counter()
            DBSCAN(eps=ds.alpha, min_samples=ds.min_samples).fit(X)
            sk_runs.append(time.perf_counter() - t0)
        ratio = med(sk_runs) / med(ours)
        out["targets"].append(
            {
                "target": f"{label}: >= 100x faster than sklearn DBSCAN",
                "dataset": ds.note,
                "n": int(X.shape[0]),
                "measured_s": med(ours),
                "baseline": "sklearn DBSCAN",
                "baseline_s": med(sk_runs),
                "ratio": ratio,
                "limit": 100.0,
                "pass": ratio >= 100.0,
                "runs_ours": ours,
                "runs_baseline": sk_runs,
            }
        )
        _progress(out["targets"][-1])


def chest_section(args: argparse.Namespace, out: Out) -> None:
    ds = bench_data.load("chest")
    t = _ours_and_floor(ds, max(args.repeats, 5))
    out["targets"].append(_against_floor("chest 3-D: fit <= 0.5 s", ds, t, med(t["ours"]) <= 0.5, 0.5))
    _progress(out["targets"][-1])


def _memprobe(name: str, n: int | None = None, histogram: str = "auto", tracemalloc: bool = False) -> Out:
    cmd = _module("memprobe", name, "--histogram", histogram)
    if n is not None:
        cmd += ["--n", str(n)]
    if not tracemalloc:
        cmd.append("--no-tracemalloc")
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(res.stdout.strip().splitlines()[-1])


def memory_section(args: argparse.Namespace, out: Out) -> None:
    name = "crash" if args.quick else "cabs"
    runs = [_memprobe(name, tracemalloc=(i == 0)) for i in range(1 if args.quick else 2)]
    delta = med([r["rss_delta"] for r in runs])
    out["targets"].append(
        {
            "target": f"{name}: peak memory of a fit <= 1.5 GB above the input",
            "n": runs[0]["n"],
            "measured_s": None,
            "measured_bytes": delta,
            "baseline": "input array",
            "baseline_bytes": runs[0]["input_bytes"],
            "ratio": delta / runs[0]["input_bytes"],
            "limit_bytes": 1.5 * GB,
            "pass": delta <= 1.5 * GB,
            "probe": runs,
        }
    )
    _progress(out["targets"][-1])


def scaling_section(args: argparse.Namespace, out: Out) -> None:
    ds = bench_data.load("cabs")
    sizes = (
        [100_000, 1_000_000, 3_000_000]
        if args.quick
        else [100_000, 300_000, 1_000_000, 3_000_000, 10_000_000]
    )
    rows = []
    for n in sizes:
        X = bench_data.resample(ds.X, n, seed=n)
        reps = max(3, args.repeats if n >= 1_000_000 else 2 * args.repeats)
        t = interleaved(
            {
                "auto": partial(_fit_seconds, ds, X),
                "sparse": partial(_fit_seconds, ds, X, histogram="sparse"),
                "floor": partial(floor_seconds, ds, X),
            },
            reps,
        )
        del X
        # peak of numpy's allocations during the fit (tracemalloc): RSS deltas
        # of small fits hide in memory the allocator kept from the warm-up
        mem = _memprobe("cabs", n=n, tracemalloc=True)
        mem_sparse = _memprobe("cabs", n=n, histogram="sparse", tracemalloc=True)
        rows.append(
            {
                "n": n,
                "auto_s": med(t["auto"]),
                "sparse_s": med(t["sparse"]),
                "floor_s": med(t["floor"]),
                "auto_over_floor": med(t["auto"]) / med(t["floor"]),
                "mem_auto": mem["tracemalloc_peak"],
                "mem_sparse": mem_sparse["tracemalloc_peak"],
                "rss_auto": mem["rss_delta"],
                "rss_sparse": mem_sparse["rss_delta"],
                "input_bytes": mem["input_bytes"],
            }
        )
        print(
            f"  scaling n={n:>10,}: auto {rows[-1]['auto_s']:.3f} s, sparse "
            f"{rows[-1]['sparse_s']:.3f} s, floor {rows[-1]['floor_s']:.3f} s, "
            f"peak alloc {rows[-1]['mem_auto'] / 1e6:.0f} / {rows[-1]['mem_sparse'] / 1e6:.0f} MB",
            flush=True,
        )
    out["scaling"] = rows
    out["scaling_fit"] = {
        k: _linear_fit([r["n"] for r in rows], [r[k] for r in rows])
        for k in ("auto_s", "sparse_s", "floor_s", "mem_auto", "mem_sparse")
    }


def _linear_fit(n: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    """Least squares y = a + b n, and the largest relative residual."""
    nn, yy = np.asarray(n, float), np.asarray(y, float)
    b, a = np.polyfit(nn, yy, 1)
    resid = np.abs(yy - (a + b * nn)) / np.maximum(np.abs(yy), 1e-12)
    return {"intercept": float(a), "slope_per_point": float(b), "max_rel_residual": float(resid.max())}


def naive_section(args: argparse.Namespace, out: Out) -> None:
    rows = []
    names = ["crash", "chest"] if args.quick else ["cabs", "crash", "chest"]
    for name in names:
        ds = bench_data.load(name)
        grid = Grid(*ds.bounds, ds.alpha)
        fns = {"auto": partial(_fit_seconds, ds), "sparse": partial(_fit_seconds, ds, histogram="sparse")}
        dense_ok = grid.n_cells <= (1 << 27) and not (args.quick and grid.n_cells > 1 << 23)
        if dense_ok:
            fns["dense"] = partial(_fit_seconds, ds, histogram="dense")
        big = grid.n_cells > 1 << 23  # the naive histogram takes seconds and GBs here: once
        t = interleaved(fns, 1 if big else args.repeats, warm=not big)
        row: Out = {
            "dataset": name,
            "n": ds.n,
            "n_cells": grid.n_cells,
            **{k + "_s": med(v) for k, v in t.items()},
        }
        if dense_ok:
            row["naive_over_ours"] = row["dense_s"] / row["auto_s"]
        rows.append(row)
        print(f"  naive {name}: " + ", ".join(f"{k} {med(v):.3f} s" for k, v in t.items()), flush=True)
    out["naive"] = rows


def cli_section(args: argparse.Namespace, out: Out) -> None:
    """Cold runs: a fresh interpreter per run, nothing cached between runs but
    the operating system's file cache (the .npy is read once beforehand)."""
    rows = []
    cases = ["chest"] if args.quick else ["cabs", "chest"]
    _compile_library()
    with tempfile.TemporaryDirectory() as tmp:
        for name in cases:
            ds = bench_data.load(name)
            path = Path(tmp) / f"{name}.npy"
            np.save(path, ds.X)
            lo, hi = ds.bounds
            cmd = [
                sys.executable,
                "-m",
                "dpdbscan",
                "fit",
                str(path),
                "--eps",
                repr(ds.alpha),
                "--min-samples",
                str(ds.min_samples),
                "--bounds",
                *map(repr, lo.tolist()),
                *map(repr, hi.tolist()),
                "--out-dir",
                tmp,
                "--no-geojson",
                "--no-png",
            ]
            runs = []
            for _ in range(max(3, args.repeats)):
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                runs.append(time.perf_counter() - t0)
            imp = []
            for _ in range(3):
                t0 = time.perf_counter()
                # what the command imports (the estimator, and scikit-learn
                # with it, is not on its path)
                subprocess.run([sys.executable, "-c", "import dpdbscan.cli.command"], check=True)
                imp.append(time.perf_counter() - t0)
            warm = [_fit_seconds(ds) for _ in range(args.repeats + 1)][1:]
            floor = [floor_seconds(ds) for _ in range(args.repeats + 1)][1:]
            rows.append(
                {
                    "dataset": name,
                    "n": ds.n,
                    "cold_cli_s": med(runs),
                    "runs": runs,
                    "import_s": med(imp),
                    "warm_fit_s": med(warm),
                    "floor_s": med(floor),
                    "cold_over_floor": med(runs) / med(floor),
                }
            )
            print(
                f"  cli {name}: cold {med(runs):.3f} s (import {med(imp):.3f} s), warm fit "
                f"{med(warm):.3f} s, floor {med(floor):.3f} s",
                flush=True,
            )
    out["cli"] = rows


#: pyarrow alone reading the file, timed inside the process (import excluded).
PYARROW_READ = """
import sys, time
import pyarrow.csv as pacsv
t0 = time.perf_counter()
table = pacsv.read_csv(sys.argv[1])
print(time.perf_counter() - t0, table.num_rows)
"""


def _child(cmd: list[str]) -> Out:
    """Wall time, CPU time and peak RSS of one fresh process, and its stdout.

    Started through benchmarks.peakrss: a child forked straight from this
    (large) process would report this process's peak RSS as its own.
    """
    res = subprocess.run(_module("peakrss", *cmd), capture_output=True, text=True, cwd=REPO)
    lines = res.stdout.rstrip("\n").split("\n")
    m = json.loads(lines[-1])
    if m["exit"] != 0:
        raise RuntimeError(f"{cmd[:4]} failed: {res.stderr[-1000:]}")
    return {
        "wall_s": m["wall_s"],
        "cpu_s": m["cpu_s"],
        "peak_rss_bytes": m["peak_rss_bytes"],
        "stdout": "\n".join(lines[:-1]),
    }


def csv_section(args: argparse.Namespace, out: Out) -> None:
    """The command a user runs on the gzipped CSV, against pyarrow reading it."""
    key = "cabs_tiny" if args.quick else "cabs"
    name, path = data.FILES[key], data.file_of(key)
    alpha, min_samples = paper.PARAMS[key]
    box = [repr(v) for v in data.GEO_BOXES[key].degrees]
    eps, minpts = f"{round(alpha * 1000)}m", str(min_samples)
    fit_args = [str(path), "--header", "--geo", "--bounds", *box, "--eps", eps, "--min-samples", minpts]
    variants = {"json": ["--no-geojson", "--no-png"], "json+geojson": ["--no-png"], "all": []}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in ("pyarrow", *variants, "stages")}
    _compile_library()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(max(3, args.repeats)):
            r = _child([sys.executable, "-c", PYARROW_READ, str(path)])
            r["read_s"] = float(r.pop("stdout").split()[0])
            runs["pyarrow"].append(r)
            for k, extra in variants.items():
                r = _child(
                    [
                        sys.executable,
                        "-m",
                        "dpdbscan",
                        "fit",
                        *fit_args,
                        *extra,
                        "--out-dir",
                        tmp,
                        "--quiet",
                        "--no-progress",
                    ]
                )
                r.pop("stdout")
                runs[k].append(r)
            r = _child(_module("cli_stages", *fit_args))
            runs["stages"].append(json.loads(r["stdout"].strip().splitlines()[-1]))
    pa_read = med([r["read_s"] for r in runs["pyarrow"]])
    full = med([r["wall_s"] for r in runs["all"]])
    stages = {
        k: med([r[k] for r in runs["stages"] if k in r])
        for k in ("import", "read", "fit", "json", "geojson", "png", "total")
    }
    row: dict[str, Any] = {
        "file": name,
        "n_rows_note": "10,995,626 rows" if not args.quick else "845,685 rows",
        "pyarrow_read_s": pa_read,
        "pyarrow_process_s": med([r["wall_s"] for r in runs["pyarrow"]]),
        "pyarrow_cpu_s": med([r["cpu_s"] for r in runs["pyarrow"]]),
        "pyarrow_peak_rss_bytes": med([r["peak_rss_bytes"] for r in runs["pyarrow"]]),
        **{f"{k}_s": med([r["wall_s"] for r in runs[k]]) for k in variants},
        **{f"{k}_cpu_s": med([r["cpu_s"] for r in runs[k]]) for k in variants},
        **{f"{k}_peak_rss_bytes": med([r["peak_rss_bytes"] for r in runs[k]]) for k in variants},
        "stages_s": stages,
        "stages_peak_rss_bytes": med([r["peak_rss_bytes"] for r in runs["stages"]]),
        "runs": runs,
    }
    out["csv"] = row
    out["targets"].append(
        {
            "target": f"{name}: whole `dpdbscan fit` (JSON, GeoJSON, PNG) <= 2x pyarrow reading it",
            "n": None,
            "measured_s": full,
            "baseline": "pyarrow read_csv",
            "baseline_s": pa_read,
            "ratio": full / pa_read,
            # the other reading of "a pyarrow process reading the file": its whole process
            "ratio_to_process": full / row["pyarrow_process_s"],
            "limit": 2.0,
            "pass": full / pa_read <= 2.0,
            "runs_ours": [r["wall_s"] for r in runs["all"]],
            "runs_baseline": [r["read_s"] for r in runs["pyarrow"]],
        }
    )
    _progress(out["targets"][-1])
    print(
        f"  csv {name}: JSON only {row['json_s']:.2f} s, +GeoJSON {row['json+geojson_s']:.2f} s, "
        f"+PNG {row['all_s']:.2f} s; peak RSS {row['all_peak_rss_bytes'] / GB:.2f} GB; pyarrow "
        f"read {pa_read:.2f} s (its process {row['pyarrow_process_s']:.2f} s: "
        f"{full / row['pyarrow_process_s']:.2f}x that)",
        flush=True,
    )


def units_section(args: argparse.Namespace, out: Out) -> None:
    """Person level in memory against event level on the same rows
    (benchmarks.bench_units_memory: each fit a fresh process, interleaved)."""
    n, units = (1_000_000, 10_000) if args.quick else (100_000_000, 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "units.json"
        cmd = ["--n", str(n), "--units", str(units), "--repeats", str(min(args.repeats, 3))]
        subprocess.run(_module("bench_units_memory", *cmd, "--json", str(path)), check=True, cwd=REPO)
        r = json.loads(path.read_text())
    out["units"] = r
    label = f"person level in memory, {n:,} rows, {units:,} units"
    out["targets"] += [
        {
            "target": f"{label}: <= 3x the event-level fit of the same rows",
            "n": n,
            "measured_s": r["person_wall_s"],
            "baseline": "event-level fit",
            "baseline_s": r["event_wall_s"],
            "ratio": r["ratio"],
            "limit": 3.0,
            "pass": r["ratio"] <= 3.0,
            "runs_ours": [m["wall_s"] for m in r["runs"]["person"]],
            "runs_baseline": [m["wall_s"] for m in r["runs"]["event"]],
        },
        {
            "target": f"{label}: <= 4 GB above the input",
            "n": n,
            "measured_s": None,
            "measured_bytes": r["person_above_input_bytes"],
            "baseline": "input (X and units)",
            "baseline_bytes": r["runs"]["person"][0]["input_bytes"],
            "ratio": r["person_above_input_bytes"] / r["runs"]["person"][0]["input_bytes"],
            "limit_bytes": 4 * GB,
            "pass": r["person_above_input_bytes"] <= 4 * GB,
        },
    ]
    for row in out["targets"][-2:]:
        _progress(row)


# --------------------------------------------------------------------------- #
# report


def dims_section(args: argparse.Namespace, out: Out) -> None:
    from . import bench_dims

    dims = [2, 3, 4] if args.quick else [2, 3, 4, 5, 6, 8]
    rows = bench_dims.measure(dims, 2 if args.quick else 3, seed=0, sklearn=not args.quick)
    out["dims"] = rows
    for r in rows:
        out["targets"].append(
            {
                "target": f"{r['d']}-D blobs, n={r['n']:,}: fit <= 2x the dbscan package, "
                "<= 2 GB, ARI >= 0.95",
                "dataset": "benchmarks.blobs_nd, seed 0",
                "n": r["n"],
                "measured_s": r["dpdbscan"]["fit_s"] or float("nan"),
                "baseline": "dbscan package",
                "baseline_s": r["dbscan"]["fit_s"] or float("nan"),
                "ratio": r["ratio"] if r["ratio"] is not None else float("nan"),
                "limit": bench_dims.TIME_RATIO,
                "pass": r["pass"],
                "runs_ours": r["dpdbscan"]["runs_s"],
                "runs_baseline": r["dbscan"]["runs_s"],
            }
        )


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        info["cpu"] = next(
            line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("model name")
        )
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["memory_gb"] = round(int(mem) / 1024**2, 1)
        info["load_avg_at_start"] = os.getloadavg()
    except (OSError, StopIteration):
        pass
    try:
        import sklearn

        info["sklearn"] = sklearn.__version__
    except ImportError:
        pass
    return info


def _progress(row):
    meas = (
        f"{row['measured_s']:.3f} s"
        if row.get("measured_s") is not None
        else f"{row['measured_bytes'] / GB:.2f} GB"
    )
    base = (
        f"{row['baseline_s']:.3f} s"
        if row.get("baseline_s") is not None
        else f"{row['baseline_bytes'] / GB:.2f} GB"
    )
    print(
        f"  {row['target']}: {meas} vs {row['baseline']} {base} "
        f"(ratio {row['ratio']:.2f}) -> {'PASS' if row['pass'] else 'FAIL'}",
        flush=True,
    )


def _head(*cells: str) -> list[str]:
    """A blank line, then a markdown table's header row and rule."""
    return ["", *table_head(*cells)]


def markdown(out) -> str:
    lines = _head("target", "ours", "baseline", "ratio", "limit", "result")[1:]
    for r in out["targets"]:
        if r.get("measured_s") is not None:
            ours = f"{r['measured_s']:.3f} s"
            base = f"{r['baseline']}: {r['baseline_s']:.3f} s"
            limit = f"{r['limit']:g} s" if r["target"].endswith(" s") else f"{r['limit']:g}x"
        else:
            ours = f"{r['measured_bytes'] / GB:.2f} GB"
            base = f"{r['baseline']}: {r['baseline_bytes'] / GB:.2f} GB"
            limit = f"{r['limit_bytes'] / GB:g} GB"
        lines.append(
            f"| {r['target']} | {ours} | {base} | {r['ratio']:.2f} | {limit} | "
            f"{'pass' if r['pass'] else 'FAIL'} |"
        )
    if out.get("scaling"):
        lines += _head(
            "n",
            "fit (auto)",
            "fit (sparse)",
            "floor",
            "auto / floor",
            "peak alloc auto",
            "peak alloc sparse",
            "input",
        )
        for r in out["scaling"]:
            lines.append(
                f"| {r['n']:,} | {r['auto_s']:.3f} s | {r['sparse_s']:.3f} s | {r['floor_s']:.3f} s"
                f" | {r['auto_over_floor']:.2f} | {r['mem_auto'] / 1e6:.0f} MB | "
                f"{r['mem_sparse'] / 1e6:.0f} MB | {r['input_bytes'] / 1e6:.0f} MB |"
            )
        f = out["scaling_fit"]
        lines.append("")
        lines.append(
            "Least-squares lines t = a + b n: auto b = "
            f"{f['auto_s']['slope_per_point'] * 1e9:.0f} ns/point (a = {f['auto_s']['intercept']:.3f} s), "
            f"sparse b = {f['sparse_s']['slope_per_point'] * 1e9:.0f} ns/point "
            f"(a = {f['sparse_s']['intercept']:.3f} s), floor b = "
            f"{f['floor_s']['slope_per_point'] * 1e9:.0f} ns/point; memory auto "
            f"{f['mem_auto']['slope_per_point']:.0f} B/point, sparse "
            f"{f['mem_sparse']['slope_per_point']:.0f} B/point."
        )
        rows = out["scaling"]
        for key, label in (("auto_s", "auto"), ("sparse_s", "sparse"), ("floor_s", "floor")):
            steps = [(b[key] - a[key]) / (b["n"] - a["n"]) * 1e9 for a, b in zip(rows, rows[1:])]
            lines.append(
                f"Marginal time per point between consecutive n, {label}: "
                + ", ".join(f"{x:.0f}" for x in steps)
                + " ns."
            )
    if out.get("naive"):
        lines += _head(
            "data", "n", "\\|X\\|", "ours (auto)", "naive (dense)", "linear (sparse)", "naive / ours"
        )
        for r in out["naive"]:
            dense = f"{r['dense_s']:.3f} s" if "dense_s" in r else "not run"
            ratio = f"{r['naive_over_ours']:.2f}" if "naive_over_ours" in r else "-"
            lines.append(
                f"| {r['dataset']} | {r['n']:,} | {r['n_cells']:,} | {r['auto_s']:.3f} s | "
                f"{dense} | {r['sparse_s']:.3f} s | {ratio} |"
            )
    if out.get("csv"):
        r = out["csv"]
        lines += ["", f"`dpdbscan fit {r['file']} --geo ...` in a fresh process ({r['n_rows_note']}), "]
        lines[-1] += "medians of interleaved runs:"
        lines += _head("run", "wall", "CPU", "peak RSS", "/ pyarrow read", "/ pyarrow process")
        base, proc = r["pyarrow_read_s"], r["pyarrow_process_s"]
        lines.append(
            f"| pyarrow `read_csv` alone (the call, in its process) | {base:.2f} s | - | "
            f"{r['pyarrow_peak_rss_bytes'] / GB:.2f} GB | 1.00 | {base / proc:.2f} |"
        )
        lines.append(
            f"| pyarrow's whole process (interpreter, import, read) | {proc:.2f} s | "
            f"{r['pyarrow_cpu_s']:.2f} s | {r['pyarrow_peak_rss_bytes'] / GB:.2f} GB | "
            f"{proc / base:.2f} | 1.00 |"
        )
        for k, label in (
            ("json", "fit, JSON only"),
            ("json+geojson", "fit, JSON + GeoJSON"),
            ("all", "fit, JSON + GeoJSON + PNG (default)"),
        ):
            lines.append(
                f"| {label} | {r[k + '_s']:.2f} s | {r[k + '_cpu_s']:.2f} s | "
                f"{r[k + '_peak_rss_bytes'] / GB:.2f} GB | {r[k + '_s'] / base:.2f} | "
                f"{r[k + '_s'] / proc:.2f} |"
            )
        st = r["stages_s"]
        lines += _head("stage (one after another, benchmarks.cli_stages)", "time")
        for k in ("import", "read", "fit", "json", "geojson", "png", "total"):
            lines.append(f"| {k} | {st[k]:.2f} s |")
    if out.get("dims"):
        from .bench_dims import markdown as dims_markdown

        lines += ["", dims_markdown(out["dims"])]
    if out.get("cli"):
        lines += _head("data", "cold CLI run", "of which imports", "warm fit", "floor", "cold / floor")
        for r in out["cli"]:
            lines.append(
                f"| {r['dataset']} | {r['cold_cli_s']:.3f} s | {r['import_s']:.3f} s | "
                f"{r['warm_fit_s']:.3f} s | {r['floor_s']:.3f} s | "
                f"{r['cold_over_floor']:.2f} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="smaller and fewer runs (minutes); not the targets' setting"
    )
    ap.add_argument("--repeats", type=int, default=None, help="timed runs per median")
    ap.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated sections of {','.join(SECTIONS)}"
    )
    ap.add_argument(
        "--sklearn-cabs-tiny",
        action="store_true",
        help="also time sklearn on Cabs-tiny (about 90 s and 7.5 GB here)",
    )
    ap.add_argument("--json", type=Path, default=None, help="write all measurements here")
    ap.add_argument("--md", type=Path, default=None, help="write the markdown tables here")
    args = ap.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.quick else 5
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = sorted(set(only) - set(SECTIONS))
    if bad:
        ap.error(f"unknown sections {bad}; choose from {SECTIONS}")

    out = {"machine": machine(), "quick": args.quick, "repeats": args.repeats, "targets": []}
    started = time.perf_counter()
    for name in SECTIONS:
        if name in only:
            print(f"[{name}]", flush=True)
            globals()[f"{name}_section"](args, out)
    out["wall_s"] = time.perf_counter() - started
    md = markdown(out)
    print()
    print(md)
    print(f"\n{time.perf_counter() - started:.0f} s; machine: {out['machine']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=float))
    if args.md:
        args.md.write_text(md + "\n")
    return 0 if all(r["pass"] for r in out["targets"]) else 1


if __name__ == "__main__":
    sys.exit(main())
