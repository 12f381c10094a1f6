"""Timing pieces shared by the benchmarks: a fit's seconds, the counting
floor, interleaved rounds and medians.

Every fit uses the library defaults and the secure default noise
(``random_state=None``) unless a benchmark says otherwise.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN, Grid
from dpdbscan.research import run_length

from .bench_data import Dataset


def estimator(ds: Dataset, **kwargs: Any) -> Any:
    """The estimator at the data set's (alpha, MinPts) and public bounds, epsilon = 1."""
    return DPDBSCAN(ds.alpha, min_samples=ds.min_samples, epsilon=1.0, bounds=ds.bounds, **kwargs)


def fit_seconds(est: Any, X: np.ndarray) -> float:
    """Wall-clock seconds of ``est.fit(X)`` (after a garbage collection)."""
    gc.collect()
    t0 = time.perf_counter()
    est.fit(X)
    return time.perf_counter() - t0


def floor_seconds(ds: Dataset, X: np.ndarray | None = None) -> float:
    """Cell keys, sort, run-length counts: the least any exact counting does."""
    grid = Grid(*ds.bounds, ds.alpha)
    X = ds.X if X is None else X
    gc.collect()
    t0 = time.perf_counter()
    run_length(np.sort(grid.keys_of_points(X)))
    return time.perf_counter() - t0


def interleaved(
    fns: Mapping[str, Callable[[], float]], repeats: int, warm: bool = True
) -> dict[str, list[float]]:
    """Run each function once to warm up, then ``repeats`` rounds in turn;
    each function returns the seconds it measured."""
    for f in fns.values() if warm else ():
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            times[k].append(f())
    return times


def med(xs: Iterable[float]) -> float:
    return float(statistics.median(xs))


def table_head(*cells: str) -> list[str]:
    """A markdown table's header row and rule."""
    return ["| " + " | ".join(cells) + " |", "|" + "---|" * len(cells)]


def comparison_args(
    doc: str | None,
    sets: str,
    repeats: int,
    argv: Sequence[str] | None,
    more: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """``--sets`` (of benchmarks.bench_data) and ``--repeats`` of a timed
    comparison, and the options ``more`` adds; the library's notes on small
    data are silenced (not timed)."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    ap.add_argument("--sets", default=sets)
    ap.add_argument("--repeats", type=int, default=repeats)
    if more is not None:
        more(ap)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    return args
