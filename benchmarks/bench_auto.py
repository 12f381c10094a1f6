"""Fit time of the automatic mode against a fixed-parameter fit (target, issue
21: the automatic mode on Cabs takes <= 3x a fixed-parameter fit), and what it
returns (on Cabs-tiny: no span covering most of the city).

For each data set of ``benchmarks.bench_data``: one warm-up fit each, then
``--repeats`` rounds in which a fixed fit (the set's own (alpha, MinPts),
library defaults) and the automatic mode (``eps="auto", min_samples="auto"``,
same bounds and epsilon) with each ``--selections`` ("levels", the default:
each cluster at its own MinPts; "flat": one cut) run in turn; medians and
the same-run ratios are printed, with what the automatic mode chose and how
much of the release and of the box its largest span holds. Secure noise.

    .venv/bin/python -m benchmarks.bench_auto [--sets cabs] [--repeats 5] [--selections levels,flat]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN

from . import bench_data
from .timing import comparison_args, estimator, fit_seconds, interleaved, med, table_head

SELECTIONS = ("levels", "flat")


def auto_estimator(ds: bench_data.Dataset, max_cells: int = 2**20, selection: str = "levels") -> Any:
    """The automatic mode given only the set's public bounds and epsilon = 1."""
    return DPDBSCAN(
        "auto", min_samples="auto", epsilon=1.0, bounds=ds.bounds, max_cells=max_cells, selection=selection
    )


def largest_span(model: Any, bounds: tuple) -> tuple[float, float]:
    """The largest span's (by noisy mass) share of the released positive mass
    and of the public box's area (0, 0 without a span). Public values only."""
    stats = model.stats
    if model.n_spans == 0 or stats.noisy_mass is None:
        return 0.0, 0.0
    i = int(np.argmax(stats.noisy_mass))
    total = float(np.maximum(np.asarray(model.histogram.values, dtype=np.float64), 0).sum())
    box = float(np.prod(np.asarray(bounds[1], dtype=np.float64) - np.asarray(bounds[0], dtype=np.float64)))
    return float(stats.noisy_mass[i]) / total, float(stats.area[i]) / box


def main(argv: Sequence[str] | None = None) -> int:
    def more(ap: argparse.ArgumentParser) -> None:
        ap.add_argument("--selections", default=",".join(SELECTIONS))

    args = comparison_args(__doc__, "cabs", 5, argv, more)
    selections = [s for s in args.selections.split(",") if s]
    head = ["data", "n", "fixed (alpha, MinPts)", "fixed fit"]
    for s in selections:
        head += [f"auto {s}", f"{s} / fixed", f"{s}: alpha, MinPts", f"{s}: spans", f"{s}: largest span"]
    print(*table_head(*head), sep="\n")
    for name in args.sets.split(","):
        ds = bench_data.load(name)
        fx = estimator(ds)
        ests = {s: auto_estimator(ds, selection=s) for s in selections}
        runs = {"fixed": partial(fit_seconds, fx, ds.X)}
        runs.update({s: partial(fit_seconds, e, ds.X) for s, e in ests.items()})
        t = interleaved(runs, args.repeats)
        med_fixed = med(t["fixed"])
        row = f"| {name} | {ds.n:,} | ({ds.alpha:g}, {ds.min_samples}) | {med_fixed:.3f} s |"
        for s, e in ests.items():
            m = e.spans_
            ms = sorted({lv["min_samples"] for lv in m.auto.get("levels") or []}) or [m.spec.min_samples]
            shown = f"{ms[0]}" if len(ms) == 1 else f"{ms[0]}..{ms[-1]}"
            mass, area = largest_span(m, ds.bounds)
            row += (
                f" {med(t[s]):.3f} s | {med(t[s]) / med_fixed:.2f} | ({m.grid.eps:.4g}, {shown}) | "
                f"{m.n_spans} | {100 * mass:.1f}% of the mass, {100 * area:.2f}% of the box |"
            )
        print(row, flush=True)
        times = "; ".join(f"{k}: {', '.join(f'{x:.3f}' for x in v)}" for k, v in t.items())
        print(f"  ({times})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
