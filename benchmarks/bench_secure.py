"""Secure randomness must be fast: fit time with random_state=None (OS CSPRNG)
against a seeded run (PCG64), on 1e6 two-dimensional points.

Target: secure / seeded <= 1.5 for the median fit time.

Secure and seeded fits are interleaved, so both see the same machine load,
and the ratio is taken between medians measured in the same run. Run with

    .venv/bin/python -m benchmarks.bench_secure [--runs 7] [--n 1000000]

It also prints where the time of one fit goes (counting, noise, the rest) for
each source, so that a ratio above target points at the culprit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN, Grid, InsecureRandomnessWarning, UtilityWarning
from dpdbscan.research import SecureSource, SeededSource, discrete_laplace, rational_epsilon

TARGET = 1.5
BOX = (0.0, 100.0)

# name, DPDBSCAN keyword arguments. Cell width w = eps / sqrt(2) in 2-D.
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    # 707 x 707 = 5.0e5 cells: the dense histogram (noise on every cell)
    ("dense  ~5e5 cells", dict(eps=0.2, min_samples=20)),
    # 1415 x 1415 = 2.0e6 cells, still dense under "auto"
    ("dense  ~2e6 cells", dict(eps=0.1, min_samples=10)),
    # 14143^2 = 2.0e8 cells: sparse histogram (noise on occupied cells + tail)
    ("sparse ~2e8 cells", dict(eps=0.01, min_samples=5, histogram="sparse")),
]


def mixture(n: int, seed: int = 0) -> np.ndarray:
    """A Gaussian mixture in the public box [0, 100]^2 plus 5% uniform noise."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(15, 85, size=(8, 2))
    k = rng.integers(0, 8, size=n)
    X = centres[k] + rng.normal(0, 3.0, size=(n, 2))
    m = n // 20
    X[:m] = rng.uniform(*BOX, size=(m, 2))
    return np.clip(X, *BOX)


def time_fit(X: np.ndarray, params: dict[str, Any], random_state: int | None) -> float:
    est = DPDBSCAN(epsilon=1.0, bounds=BOX, random_state=random_state, **params)
    with warnings.catch_warnings():
        # the sparse configuration measures speed; an empty release is expected there
        warnings.simplefilter("ignore", UtilityWarning)
        t0 = time.perf_counter()
        est.fit(X)
        return time.perf_counter() - t0


def time_noise(n_cells: int, source: Any) -> float:
    """Noise alone: n_cells exact discrete Laplace draws at epsilon = 1."""
    frac = rational_epsilon(1.0)
    t0 = time.perf_counter()
    discrete_laplace(source, n_cells, frac)
    return time.perf_counter() - t0


def time_raw(n_words: int, source: Any) -> float:
    t0 = time.perf_counter()
    source.raw(n_words)
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="fits per source and config (>= 5)")
    ap.add_argument("--n", type=int, default=1_000_000, help="number of points")
    args = ap.parse_args(argv)
    if args.runs < 5:
        ap.error("--runs must be at least 5 (medians of >= 5 runs)")
    warnings.simplefilter("ignore", InsecureRandomnessWarning)

    X = mixture(args.n)
    print(f"{args.n} points in [0, 100]^2, epsilon = 1, {args.runs} interleaved runs per cell\n")
    header = f"{'config':<20}{'cells':>12}{'seeded s':>11}{'secure s':>11}{'ratio':>8}  target <= {TARGET}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    rows = []
    for name, params in CONFIGS:
        grid = Grid(np.full(2, BOX[0]), np.full(2, BOX[1]), params["eps"])
        time_fit(X, params, 0)  # warm-up (imports, caches)
        seeded: list[float] = []
        secure: list[float] = []
        for r in range(args.runs):
            # alternate the order so that neither source always runs first
            order: list[tuple[str, int | None]] = [("seeded", r + 1), ("secure", None)]
            if r % 2:
                order.reverse()
            for kind, rs in order:
                (seeded if kind == "seeded" else secure).append(time_fit(X, params, rs))
        ms, mc = statistics.median(seeded), statistics.median(secure)
        ratio = mc / ms
        worst = max(worst, ratio)
        rows.append((name, grid.n_cells, ms, mc, ratio))
        print(
            f"{name:<20}{grid.n_cells:>12.3g}{ms:>11.3f}{mc:>11.3f}{ratio:>8.2f}"
            f"  {'ok' if ratio <= TARGET else 'ABOVE TARGET'}"
        )

    # Where the time goes: the noise step alone on as many cells as the dense
    # configurations, and the raw words of each source.
    print("\nnoise alone (exact discrete Laplace, eps = 1), medians:")
    for cells in (500_000, 2_000_000):
        s_t = statistics.median(time_noise(cells, SeededSource(r)) for r in range(args.runs))
        c_t = statistics.median(time_noise(cells, SecureSource()) for _ in range(args.runs))
        print(f"  {cells:>9} draws: seeded {s_t:.3f} s, secure {c_t:.3f} s, ratio {c_t / s_t:.2f}")
    words = 4_000_000
    s_t = statistics.median(time_raw(words, SeededSource(r)) for r in range(args.runs))
    c_t = statistics.median(time_raw(words, SecureSource()) for _ in range(args.runs))
    print(f"  {words} raw 64-bit words: seeded {s_t:.4f} s, secure (os.urandom) {c_t:.4f} s")

    print(f"\nworst ratio {worst:.2f} (target <= {TARGET}): {'PASS' if worst <= TARGET else 'FAIL'}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
