"""Section "Running Time": wall-clock time of each mechanism's fit.

Medians of a few repetitions on this (shared, noisy) machine. DP-DBSCAN runs
with the library's default secure randomness, as a user would; "naive" is
``histogram="dense"`` (O(|X|)) and "linear" is ``histogram="sparse"`` (O(n)).
Only ``fit`` is timed; data are already in memory as numpy arrays.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dpdbscan import Grid

from . import baselines
from .datasets import Dataset

COLUMNS = ("DP-DBSCAN naive", "DP-DBSCAN linear", "DP-KMeans", "DBSCAN", "KMeans")
DENSE_MAX_CELLS = 1 << 27  # beyond this the naive histogram is not run (memory)
DBSCAN_MAX_N = 5_000_000  # the paper's DBSCAN ran out of memory on Cabs (11M)


def median_time(fn: Callable[[], object], reps: int, warmup: bool = False) -> tuple[float, list[float]]:
    """Median wall-clock seconds of ``reps`` calls (after one untimed call)."""
    if warmup:
        fn()
    times = []
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def dbscan_memory_estimate(X: np.ndarray, alpha: float, sample: int = 2000, seed: int = 0) -> float:
    """Bytes scikit-learn's DBSCAN needs for its neighbourhood lists (int64
    indices, about 8 bytes per neighbour), from a sample's neighbour counts."""
    from sklearn.neighbors import KDTree

    rng = np.random.default_rng(seed)
    idx = rng.choice(X.shape[0], size=min(sample, X.shape[0]), replace=False)
    counts = KDTree(X).query_radius(X[idx], alpha, count_only=True)
    return float(counts.mean()) * X.shape[0] * 8.0


def time_dataset(
    ds: Dataset,
    reps: int,
    naive_reps: int | None = None,
    dbscan_reps: int = 1,
    dbscan_max_bytes: float = 12e9,
    dense_max_cells: int = DENSE_MAX_CELLS,
) -> dict[str, Any]:
    """One row: column -> {"median": s, "times": [...]} or {"skipped": reason}.

    ``naive_reps`` and ``dbscan_reps`` override ``reps`` for the two slow,
    memory-hungry columns on large inputs.
    """
    grid = Grid(ds.bounds[0], ds.bounds[1], ds.alpha)
    row: dict[str, Any] = {
        "dataset": ds.name,
        "title": ds.title,
        "n": ds.n,
        "d": ds.X.shape[1],
        "n_cells": grid.n_cells,
        "cols": {},
    }
    warm = reps > 1  # first call pays imports and caches
    jobs: dict[str, Callable[[], object]] = {
        "DP-DBSCAN naive": lambda: baselines.dp_dbscan(ds, None, histogram="dense"),
        "DP-DBSCAN linear": lambda: baselines.dp_dbscan(ds, None, histogram="sparse"),
        "DP-KMeans": lambda: baselines.dp_kmeans(ds.X, ds.k, ds.bounds, 1.0, None),
        "DBSCAN": lambda: baselines.dbscan(ds.X, ds.alpha, ds.min_samples),
        "KMeans": lambda: baselines.kmeans(ds.X, ds.k, None),
    }
    for col, fn in jobs.items():
        reason = skip_reason(col, ds, grid, dbscan_max_bytes, dense_max_cells)
        if reason:
            row["cols"][col] = {"skipped": reason}
            continue
        r = {"DBSCAN": dbscan_reps, "DP-DBSCAN naive": naive_reps or reps}.get(col, reps)
        heavy = col == "DBSCAN" or (col == "DP-DBSCAN naive" and naive_reps)
        med, times = median_time(fn, r, warmup=warm and not heavy)
        row["cols"][col] = {"median": med, "times": times}
    return row


def skip_reason(
    col: str, ds: Any, grid: Grid, dbscan_max_bytes: float, dense_max_cells: int = DENSE_MAX_CELLS
) -> str | None:
    if col == "DP-DBSCAN naive" and grid.n_cells > dense_max_cells:
        return (
            f"|X| = {grid.n_cells:.2g} cells > {dense_max_cells:.2g}, the cap of this run "
            "(dense arrays of |X| cells)"
        )
    if col == "DBSCAN":
        if ds.n > DBSCAN_MAX_N:
            return f"n = {ds.n:,}: out of memory in the paper; not attempted"
        if ds.n > 200_000:
            need = dbscan_memory_estimate(ds.X, ds.alpha)
            if need > dbscan_max_bytes:
                return (
                    f"needs ~{need / 1e9:.0f} GB of neighbour lists "
                    f"(cap {dbscan_max_bytes / 1e9:.0f} GB on this shared machine)"
                )
    return None


def machine() -> str:
    """A one-line description of this machine."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
            mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical cores{mem}, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )
