"""Fit time of the density core test against the upper-bound test and the
counting floor (target: the density test keeps the fit's speed).

For each data set of ``benchmarks.bench_data``: one warm-up fit per test, then
``--repeats`` rounds in which a density fit, a bound fit and the floor
(cell keys + sort + run-length counts) run in turn; medians and same-run
ratios are printed. Library defaults otherwise, secure noise.

    .venv/bin/python -m benchmarks.bench_density [--sets cabs,crash,city_1e6,chest] [--repeats 7]
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from . import bench_data
from .timing import comparison_args, estimator, fit_seconds, floor_seconds, interleaved, med, table_head


def main(argv: Sequence[str] | None = None) -> int:
    args = comparison_args(__doc__, "cabs,crash,city_1e6,chest", 7, argv)
    head = ("data", "n", "histogram", "density fit", "bound fit", "floor", "density / floor")
    print(*table_head(*head, "density / bound", "spans density / bound"), sep="\n")
    for name in args.sets.split(","):
        ds = bench_data.load(name)
        dens, bnd = estimator(ds, core="density"), estimator(ds, core="bound")
        t = interleaved(
            {
                "density": partial(fit_seconds, dens, ds.X),
                "bound": partial(fit_seconds, bnd, ds.X),
                "floor": partial(floor_seconds, ds),
            },
            args.repeats,
        )
        m = {k: med(v) for k, v in t.items()}
        print(
            f"| {name} | {ds.n:,} | {dens.histogram_.kind} | {m['density']:.3f} s | "
            f"{m['bound']:.3f} s | {m['floor']:.3f} s | {m['density'] / m['floor']:.2f} | "
            f"{m['density'] / m['bound']:.2f} | {dens.spans_.n_spans} / {bnd.spans_.n_spans} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
