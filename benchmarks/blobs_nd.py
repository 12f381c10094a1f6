"""Seeded Gaussian blobs in the unit cube of any dimension, the points of the
d = 2..8 benchmark against the ``dbscan`` package (benchmarks.bench_dims).

30 centres uniform in [0.15, 0.85]^d; 90% of the points Gaussian around them
(sigma 0.01), 10% uniform in [0, 1]^d; clipped to [0, 1]^d. MinPts 20, bounds
(0, 1), epsilon 1; alpha per dimension in :data:`ALPHA`.

    python -m benchmarks.blobs_nd --d 4 --n 100000 --seed 0 --out blobs4.npy
"""

from __future__ import annotations

import argparse

import numpy as np

#: alpha (DBSCAN's eps) per dimension: the cell grid stays about as fine
#: relative to the blobs as d grows
ALPHA = {2: 0.002, 3: 0.02, 4: 0.03, 5: 0.04, 6: 0.05, 7: 0.055, 8: 0.06}
#: points per dimension: 1e6 in 2-D, 1e5 above
N = {2: 1_000_000}
MIN_SAMPLES = 20
N_CENTRES = 30
SIGMA = 0.01
BACKGROUND = 0.1


def blobs(n: int, d: int, seed: int = 0, centres: int = N_CENTRES, sigma: float = SIGMA) -> np.ndarray:
    """``n`` points in [0, 1]^d: ``centres`` Gaussian blobs (90%) and a uniform
    background (10%), from one seeded generator."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.15, 0.85, size=(centres, d))
    n_bg = int(round(BACKGROUND * n))
    n_bl = n - n_bg
    which = rng.integers(0, centres, size=n_bl)
    X = np.empty((n, d))
    X[:n_bl] = c[which] + rng.normal(0.0, sigma, size=(n_bl, d))
    X[n_bl:] = rng.uniform(0.0, 1.0, size=(n_bg, d))
    np.clip(X, 0.0, 1.0, out=X)
    return X


def points(d: int, seed: int = 0, n: int | None = None) -> np.ndarray:
    """The benchmark's points at dimension ``d`` (its default n unless given)."""
    return blobs(N.get(d, 100_000) if n is None else n, d, seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, required=True)
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    np.save(a.out, points(a.d, a.seed, a.n))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
