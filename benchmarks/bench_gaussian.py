"""Speed of the exact discrete Gaussian sampler against the exact discrete Laplace.

Target: the discrete Gaussian N_Z(0, sigma^2) is not slower than 3x the
existing discrete Laplace sampler at a comparable scale. Two Laplace
references are timed, interleaved with the Gaussian in the same run:

* ``lap(t)``: the discrete Laplace with scale t = floor(sigma) + 1, which is
  the Gaussian's proposal (CKS Algorithm 3), so the ratio shows what the
  rejection step costs;
* ``lap(var)``: the discrete Laplace with the same variance as the Gaussian.

It also times the tail sampler ``Z | Z >= k`` (the values of the sparse
histogram's released empty cells). Run with

    .venv/bin/python -m benchmarks.bench_gaussian [--runs 5] [--big-runs 3] [--quick]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import partial
from typing import Any

from dpdbscan.research import (
    SecureSource,
    SeededSource,
    discrete_gaussian,
    discrete_gaussian_tail,
    discrete_laplace,
    floor_sigma,
    rational_epsilon,
)

TARGET = 3.0
SIGMAS = (1, 10, 100, 1000)


def laplace_same_variance(sigma2: float) -> Fraction:
    """epsilon of the discrete Laplace with variance 2q/(1-q)^2 = sigma^2."""
    v = sigma2 / 2.0
    q = ((2 * v + 1) - math.sqrt(4 * v + 1)) / (2 * v)
    return rational_epsilon(-math.log(q))


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_two_sided(source: Any, n: int, runs: int) -> list[tuple[Any, ...]]:
    rows = []
    for sigma in SIGMAS:
        s2 = Fraction(sigma * sigma)
        t = floor_sigma(s2) + 1
        eps_t, eps_v = Fraction(1, t), laplace_same_variance(float(s2))
        samplers = {
            "gauss": partial(discrete_gaussian, source, n, s2),
            "lap(t)": partial(discrete_laplace, source, n, eps_t),
            "lap(var)": partial(discrete_laplace, source, n, eps_v),
        }
        discrete_gaussian(source, 1000, s2)  # warm-up (tables, caches)
        times: dict[str, list[float]] = {k: [] for k in samplers}
        for r in range(runs):
            order = list(samplers) if r % 2 == 0 else list(samplers)[::-1]
            for k in order:
                times[k].append(timed(samplers[k]))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append(
            (
                sigma,
                n,
                n / med["gauss"],
                n / med["lap(t)"],
                n / med["lap(var)"],
                med["gauss"] / med["lap(t)"],
                med["gauss"] / med["lap(var)"],
            )
        )
    return rows


def bench_tail(source: Any, n: int, runs: int) -> list[tuple[int, int, float]]:
    rows = []
    for sigma, mult in ((1, 0), (1, 3), (10, 0), (10, 1), (10, 3), (100, 3), (1000, 3)):
        s2, k = Fraction(sigma * sigma), mult * sigma
        fn = partial(discrete_gaussian_tail, source, n, s2, k)
        fn()
        med = statistics.median(timed(fn) for _ in range(runs))
        rows.append((sigma, k, n / med))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="interleaved runs at 1e6 draws")
    ap.add_argument("--big-runs", type=int, default=3, help="interleaved runs at 1e7 draws")
    ap.add_argument("--quick", action="store_true", help="1e6 draws only")
    args = ap.parse_args(argv)

    sizes = [(10**6, args.runs)] + ([] if args.quick else [(10**7, args.big_runs)])
    worst = 0.0
    sources: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("secure", SecureSource),
        ("seeded", partial(SeededSource, 1)),
    )
    for name, make in sources:
        print(f"\n{name} source: samples per second (medians), ratio = time(gauss) / time(laplace)")
        head = f"{'sigma':>6}{'n':>10}{'gauss/s':>12}{'lap(t)/s':>12}{'lap(var)/s':>12}"
        head += f"{'ratio t':>9}{'ratio var':>11}"
        print(head)
        print("-" * len(head))
        for n, runs in sizes:
            for sigma, nn, g, lt, lv, rt, rv in bench_two_sided(make(), n, runs):
                worst = max(worst, rt, rv)
                print(f"{sigma:>6}{nn:>10.0e}{g:>12.3g}{lt:>12.3g}{lv:>12.3g}{rt:>9.2f}{rv:>11.2f}")
        print("\ntail Z | Z >= k, 1e6 draws: samples per second (medians)")
        for sigma, k, rate in bench_tail(make(), 10**6, args.runs):
            print(f"  sigma {sigma:>5} k {k:>5}: {rate:.3g}/s")
    print(f"\nworst ratio {worst:.2f} (target <= {TARGET}): {'PASS' if worst <= TARGET else 'ABOVE TARGET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
