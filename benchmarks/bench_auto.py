"""Fit time of the automatic mode against a fixed-parameter fit (target: the
automatic mode on Cabs takes <= 3x a fixed-parameter fit).

For each data set of ``benchmarks.bench_data``: one warm-up fit each, then
``--repeats`` rounds in which a fixed fit (the set's own (alpha, MinPts),
library defaults) and an automatic fit (``eps="auto", min_samples="auto"``,
same bounds and epsilon) run in turn; medians and the same-run ratio are
printed, with what the automatic mode chose. Secure noise.

    .venv/bin/python -m benchmarks.bench_auto [--sets cabs] [--repeats 5]
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from dpdbscan import DPDBSCAN

from . import bench_data
from .timing import comparison_args, estimator, fit_seconds, interleaved, med, table_head


def auto_estimator(ds: bench_data.Dataset, max_cells: int = 2**20) -> Any:
    """The automatic mode given only the set's public bounds and epsilon = 1."""
    return DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=ds.bounds, max_cells=max_cells)


def main(argv: Sequence[str] | None = None) -> int:
    args = comparison_args(__doc__, "cabs", 5, argv)
    head = ("data", "n", "fixed (alpha, MinPts)", "fixed fit", "auto fit", "auto / fixed")
    print(*table_head(*head, "auto chose (alpha, MinPts)", "base eps", "spans fixed / auto"), sep="\n")
    for name in args.sets.split(","):
        ds = bench_data.load(name)
        fx, au = estimator(ds), auto_estimator(ds)
        t = interleaved(
            {"fixed": partial(fit_seconds, fx, ds.X), "auto": partial(fit_seconds, au, ds.X)}, args.repeats
        )
        med_fixed, med_auto = med(t["fixed"]), med(t["auto"])
        m = au.spans_
        print(
            f"| {name} | {ds.n:,} | ({ds.alpha:g}, {ds.min_samples}) | {med_fixed:.3f} s | "
            f"{med_auto:.3f} s | {med_auto / med_fixed:.2f} | ({m.grid.alpha:.4g}, "
            f"{m.spec.min_samples}) | {m.auto['base_eps']:.4g} | {fx.spans_.n_spans} / {m.n_spans} |",
            flush=True,
        )
        runs = "; ".join(f"{k}: {', '.join(f'{x:.3f}' for x in v)}" for k, v in t.items())
        print(f"  ({runs})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
