"""Person-level against event-level ``dpdbscan fit`` on full Cabs (issue 20, item 5).

Runs, interleaved and each in a fresh process (``benchmarks.peakrss``: wall
time, CPU time, peak RSS), ``--runs`` times each::

    person: dpdbscan fit cabs_sf_cabs.parquet --geo --columns x y \\
                --bounds -122.6 37.55 -122.3 37.85 --eps 200m --min-samples 100 \\
                --unit cab --max-cells-per-unit 1000 --noise gaussian --epsilon 1 --delta 1e-6
    event : the same without --unit, --max-cells-per-unit, --noise and --delta

(the whole command: reading, the release, JSON, GeoJSON and the picture).
Then, on every model written (evaluation only: it reads the private ``cab``
column, which no release does), it labels the file's points with the model's
``predict`` and counts the spans with more than half of their points from
one cab, and labels downtown (-122.4028, 37.7922) and open water (-122.55,
37.60). Prints one JSON line, then a markdown table.

    .venv/bin/python -m benchmarks.bench_units_cli [--runs 3] [--data PATH]

The noise is the secure default (no seed): each run is a different release.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.data import data_dir

REPO = Path(__file__).resolve().parent.parent
FILE = "cabs_sf_cabs.parquet"
COMMON = [
    "--geo",
    "--columns",
    "x",
    "y",
    "--bounds",
    "-122.6",
    "37.55",
    "-122.3",
    "37.85",
    "--eps",
    "200m",
    "--min-samples",
    "100",
    "--epsilon",
    "1",
]
PERSON = ["--unit", "cab", "--max-cells-per-unit", "1000", "--noise", "gaussian", "--delta", "1e-6"]
PROBES = {"downtown": (-122.4028, 37.7922), "open water": (-122.55, 37.60)}
TARGET = 3.0  # person-level time / event-level time


def command(data: Path, out_dir: Path, name: str, person: bool) -> list[str]:
    dpdbscan = str(Path(sys.executable).with_name("dpdbscan"))
    extra = PERSON if person else []
    return [dpdbscan, "fit", str(data), *COMMON, *extra, "--out-dir", str(out_dir), "--name", name]


def timed_run(cmd: list[str]) -> dict[str, Any]:
    """Wall, CPU and peak RSS of one fresh process (benchmarks.peakrss)."""
    res = subprocess.run(
        [sys.executable, "-m", "benchmarks.peakrss", *cmd], capture_output=True, text=True, cwd=REPO
    )
    m = json.loads(res.stdout.rstrip("\n").split("\n")[-1])
    if m["exit"] != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed: {res.stderr[-1000:]}")
    return m


def one_cab_spans(labels: np.ndarray, cabs: np.ndarray, n_spans: int) -> dict[str, Any]:
    """Per span, the share of its points from its most frequent cab;
    how many spans have more than half, and all, of their points from one."""
    inside = labels >= 0
    span, cab = labels[inside], cabs[inside]
    n_cabs = int(cabs.max(initial=-1)) + 1
    pair = np.bincount(span * n_cabs + cab, minlength=n_spans * n_cabs).reshape(n_spans, n_cabs)
    total = pair.sum(axis=1)
    top = pair.max(axis=1) / np.maximum(total, 1) if n_spans else np.zeros(0)
    return {
        "spans": n_spans,
        "spans_mostly_one_cab": int(np.count_nonzero(top > 0.5)),
        "spans_one_cab_only": int(np.count_nonzero((top == 1.0) & (total > 0))),
        "largest_one_cab_share": float(top.max(initial=0.0)),
        "points_in_spans": int(total.sum()),
    }


def evaluate(model_path: Path, X: np.ndarray, cabs: np.ndarray) -> dict[str, Any]:
    """The release judged against the private data (evaluation only)."""
    from dpdbscan import load_model
    from dpdbscan.research import projection_of

    model = load_model(model_path)
    proj = projection_of(model)
    if proj is None:
        raise ValueError(f"{model_path}: not a --geo model")
    labels = model.predict(proj.forward(X))
    probes = model.predict(proj.forward(np.array(list(PROBES.values()))))
    priv = json.loads(model_path.read_text())["privacy"]
    return {
        **one_cab_spans(labels, cabs, model.n_spans),
        **{f"{k} in a span": bool(v >= 0) for k, v in zip(PROBES, probes)},
        "privacy": {
            k: priv.get(k) for k in ("unit", "max_cells_per_unit", "max_points_per_cell", "noise", "rho")
        },
    }


def load(data: Path) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(data, columns=["x", "y", "cab"])
    X = np.column_stack([t.column("x").to_numpy(), t.column("y").to_numpy()])
    cab = t.column("cab")
    codes = pc.index_in(cab.cast("string"), value_set=pc.unique(cab.cast("string"))).to_numpy()
    return X, codes.astype(np.int64)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data", type=Path, default=None, help=f"the file (default: the data folder's {FILE})")
    args = ap.parse_args(argv)
    data = args.data or data_dir() / FILE
    X, cabs = load(data)
    out: dict[str, Any] = {"file": str(data), "runs": args.runs, "command": {}, "time": {}, "releases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        times: dict[str, list[dict[str, Any]]] = {"person": [], "event": []}
        for run in range(args.runs):
            for level in ("person", "event"):
                cmd = command(data, Path(tmp), f"{level}{run}", level == "person")
                out["command"][level] = " ".join(cmd[1:])
                times[level].append(timed_run(cmd))
                out["releases"].setdefault(level, []).append(
                    evaluate(Path(tmp) / f"{level}{run}.spans.json", X, cabs)
                )
    for level, runs in times.items():
        out["time"][level] = {
            k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "peak_rss_bytes")
        } | {"wall_s_all": [r["wall_s"] for r in runs]}
    out["ratio_wall"] = out["time"]["person"]["wall_s"] / out["time"]["event"]["wall_s"]
    out["target_ratio"] = TARGET
    print(json.dumps(out))
    print(markdown(out))
    return out


def markdown(out: dict[str, Any]) -> str:
    rows = [
        "| level | wall (median) | CPU | peak RSS | spans | mostly one cab | one cab only "
        "| downtown | open water |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for level in ("person", "event"):
        t, rel = out["time"][level], out["releases"][level]
        rows.append(
            f"| {level} | {t['wall_s']:.2f} s | {t['cpu_s']:.2f} s | {t['peak_rss_bytes'] / 1e9:.2f} GB | "
            + " | ".join(
                "/".join(str(r[k]) for r in rel)
                for k in ("spans", "spans_mostly_one_cab", "spans_one_cab_only")
            )
            + " | "
            + " | ".join("/".join("yes" if r[f"{p} in a span"] else "no" for r in rel) for p in PROBES)
            + " |"
        )
    rows.append(f"\nperson / event wall time: {out['ratio_wall']:.2f} (target <= {TARGET:g})")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
