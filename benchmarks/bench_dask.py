"""Dask backend against the in-memory numpy backend on 1e7 points in Parquet parts.

Writes ``--n`` 2-D points (Gaussian blobs plus uniform background, a fixed
seed) as ``--parts`` Parquet files in a temporary directory outside the
repository, then times ``DPDBSCAN.fit`` in one process, variants interleaved
round by round so that machine noise hits them alike:

* ``numpy (in memory)``: the array is already loaded.
* ``numpy + pyarrow read``: read the Parquet parts with pyarrow, then fit.
* ``dask warm, processes`` / ``dask warm, threads``: fit from the Parquet
  directory on an already running ``LocalCluster(n_workers=2,
  threads_per_worker=1)`` (worker processes, or threads in this process).
* ``dask cold (backend="dask")``: each fit starts and closes its own
  LocalCluster, as ``backend="dask"`` does (threads, the default), and
  ``dask cold, processes``: the same with worker processes.

Prints medians (and min, max) of ``--repeats`` runs and ratios against both
numpy variants, measured in the same run. Every variant uses
``random_state=0`` and the script checks that all releases are identical.

Run: ``.venv/bin/python -m benchmarks.bench_dask [--n 10000000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN, Grid, InsecureRandomnessWarning, SpanModel
from dpdbscan.research import dask_backend

LOWER, UPPER = 0.0, 100.0
# Two grids: a coarse one (dense histogram, ~2e4 cells) and a fine one (sparse
# histogram, 5e7 cells of which ~1e6 are occupied: the merge has real work).
CONFIGS: dict[str, dict[str, Any]] = {
    "dense": dict(eps=1.0, min_samples=200, histogram="dense"),
    "sparse": dict(eps=0.02, min_samples=20, histogram="sparse"),
}


def make_points(n: int, seed: int = 7) -> np.ndarray:
    """Blobs of different widths plus 10% uniform background in [0, 100]^2."""
    rng = np.random.default_rng(seed)
    n_bg = n // 10
    centres = rng.uniform(10, 90, size=(20, 2))
    scales = rng.uniform(0.5, 3.0, size=20)
    which = rng.integers(0, 20, size=n - n_bg)
    blobs = centres[which] + rng.normal(size=(n - n_bg, 2)) * scales[which, None]
    X = np.concatenate([blobs, rng.uniform(LOWER, UPPER, size=(n_bg, 2))])
    rng.shuffle(X)
    return X


def write_parts(X: np.ndarray, directory: str, parts: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for i, chunk in enumerate(np.array_split(X, parts)):
        table = pa.table({"x": chunk[:, 0], "y": chunk[:, 1]})
        pq.write_table(table, os.path.join(directory, f"part-{i:03d}.parquet"))


def read_parts(directory: str) -> np.ndarray:
    import pyarrow.parquet as pq

    table = pq.read_table(directory)
    return np.column_stack([table.column(c).to_numpy() for c in ("x", "y")])


def fit(X: Any, backend: Any, config: dict[str, Any]) -> SpanModel:
    est = DPDBSCAN(bounds=([LOWER] * 2, [UPPER] * 2), epsilon=1.0, random_state=0, backend=backend, **config)
    return est.fit(X).spans_


def release_of(spans: SpanModel) -> tuple[bytes, ...]:
    """Bytes of the release. Every variant draws the same noise
    (random_state=0), so different exact counts would show here: for the dense
    histogram any count difference changes ``values``."""
    hist = spans.histogram
    if hist is None:
        raise ValueError("the release holds no histogram")
    keys = b"" if hist.keys is None else hist.keys.tobytes()
    return (
        spans.core_keys.tobytes(),
        np.asarray(spans.labels).tobytes(),
        keys,
        np.asarray(hist.values).tobytes(),
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000_000)
    p.add_argument("--parts", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", category=InsecureRandomnessWarning)

    tmp = tempfile.mkdtemp(prefix="dpdbscan-bench-dask-")
    try:
        t0 = time.perf_counter()
        X = make_points(args.n)
        write_parts(X, tmp, args.parts)
        for name in args.configs:
            describe(name, CONFIGS[name], X)
        size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
        print(
            f"{args.n:,} points in {args.parts} Parquet parts, {size / 2**20:.0f} MiB, "
            f"written in {time.perf_counter() - t0:.1f} s to {tmp}; cores: {os.cpu_count()}"
        )
        with dask_backend(processes=True) as procs, dask_backend(processes=False) as threads:
            variants: dict[str, Callable[[dict[str, Any]], SpanModel]] = {
                "numpy (in memory)": lambda c: fit(X, "numpy", c),
                "numpy + pyarrow read": lambda c: fit(read_parts(tmp), "numpy", c),
                "dask warm, processes": lambda c: fit(tmp, procs, c),
                "dask warm, threads": lambda c: fit(tmp, threads, c),
                'dask cold (backend="dask")': lambda c: fit(tmp, "dask", c),
                "dask cold, processes": lambda c: fit(tmp, dask_backend(processes=True), c),
            }
            for name in args.configs:
                run_config(name, CONFIGS[name], variants, args.repeats)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def describe(name: str, config: dict[str, Any], X: np.ndarray) -> None:
    """Grid size and number of occupied cells (benchmark data, not a release)."""
    grid = Grid(np.full(2, LOWER), np.full(2, UPPER), config["eps"])
    occupied = np.unique(grid.keys_of_points(X)).size  # keys clamp into the box, as the backends do
    print(f"[{name}] grid {grid.shape[0]}x{grid.shape[1]} = {grid.n_cells:,} cells, {occupied:,} occupied")


def run_config(
    name: str,
    config: dict[str, Any],
    variants: dict[str, Callable[[dict[str, Any]], SpanModel]],
    repeats: int,
) -> None:
    times: dict[str, list[float]] = {v: [] for v in variants}
    releases: dict[str, tuple[bytes, ...]] = {}
    # One untimed round first: worker processes import dpdbscan, pandas and
    # pyarrow on their first task, and numpy pays first-touch page faults.
    # The cold variant still pays its imports in every timed run.
    for run in variants.values():
        run(config)
    for _ in range(repeats):
        for v, run in variants.items():
            t = time.perf_counter()
            spans = run(config)
            times[v].append(time.perf_counter() - t)
            releases.setdefault(v, release_of(spans))
    same = len(set(releases.values())) == 1
    base = statistics.median(times["numpy (in memory)"])
    base_read = statistics.median(times["numpy + pyarrow read"])
    print(
        f"\n[{name}] {config}; median of {repeats} timed runs after one untimed warm-up "
        f"round; identical releases: {same}"
    )
    print(f"{'variant':28s} {'median s':>9s} {'min s':>7s} {'max s':>7s} {'x in-mem':>9s} {'x +read':>8s}")
    for v, ts in times.items():
        med = statistics.median(ts)
        print(f"{v:28s} {med:9.2f} {min(ts):7.2f} {max(ts):7.2f} {med / base:9.2f} {med / base_read:8.2f}")
    if not same:
        raise SystemExit("releases differ between backends: this is a bug")


if __name__ == "__main__":
    raise SystemExit(main())
