"""Data sets of the benchmark suite, with their public bounds and (alpha, MinPts).

Real data come from the shared data folder (:mod:`experiments.data`:
``$DPDBSCAN_DATA`` or ``../shared/data``), read once per process; projected
arrays are cached as .npy under ``$DPDBSCAN_BENCH_CACHE`` (default
``dpdbscan_bench`` in the system's temporary folder), never in the repository.

* cabs      — all 10,995,626 San Francisco cab records (paper: Cabs), lon/lat
              projected to km as in the paper; alpha = 20 m, MinPts = 500.
* cabs_tiny — 845,685 occupied-trip end points (paper: Cabs-tiny); alpha = 50 m,
              MinPts = 1000.
* crash     — SYNTHETIC stand-in for the paper's NYC Crash set (not available
              here): 1,860,785 points of a city-like mixture in the paper's Crash
              box (40-41 N, 73-75 W, projected to km), alpha = 100 m, MinPts = 300,
              so n, |X| and kappa match the paper's Crash run.
* city_1e6  — the same generator with 1,000,000 points (the sklearn comparison).
* chest     — 103,500 3-D chest accelerometer records (stand-in for HAR70+), raw
              counts in the public box [0, 4096)^3 of the 12-bit ADC; alpha such
              that |X| = 1e8 cells as in the paper's HAR70+ run (~15.3 counts,
              experiments/data.py), MinPts = 5.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from experiments import data, paper


def cache_dir() -> Path:
    d = Path(os.environ.get("DPDBSCAN_BENCH_CACHE") or Path(tempfile.gettempdir()) / "dpdbscan_bench")
    d.mkdir(parents=True, exist_ok=True)
    return d


@dataclass
class Dataset:
    name: str
    X: np.ndarray
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    alpha: float
    min_samples: int
    note: str

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.asarray(self.lower, dtype=float), np.asarray(self.upper, dtype=float))

    @property
    def n(self) -> int:
        return int(self.X.shape[0])


def _geo(name: str) -> np.ndarray:
    """A geographic set in km, from the cache when it is there."""
    cached = cache_dir() / f"{name}_km.npy"
    if cached.exists():
        return np.load(cached)
    X = data.lonlat_km(name)
    np.save(cached, X)
    return X


def _paper_geo(name: str, note: str) -> Dataset:
    """Cabs or Cabs-tiny with the paper's (alpha, MinPts)."""
    lo, hi = data.GEO_BOXES[name].km_bounds()
    alpha, min_samples = paper.PARAMS[name]
    return Dataset(name, _geo(name), lo, hi, alpha, min_samples, note)


def cabs() -> Dataset:
    return _paper_geo("cabs", "Cabs, all 10,995,626 records, km; paper's (20 m, 500)")


def cabs_tiny() -> Dataset:
    return _paper_geo("cabs_tiny", "Cabs-tiny, 845,685 trip end points, km; paper's (50 m, 1000)")


def city_like(n: int, seed: int = 0) -> np.ndarray:
    """A synthetic city in the Crash box (km): 300 Gaussian hot spots of
    width 50 m - 2 km (log-uniform) with Dirichlet weights inside a 30 x 40 km
    city area, plus 10% uniform over that area. Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    lo, hi = data.GEO_BOXES["crash"].km_bounds()
    city_lo = np.array([85.0, 55.0])
    city_hi = city_lo + np.array([30.0, 40.0])
    k = 300
    centres = rng.uniform(city_lo, city_hi, size=(k, 2))
    sigma = np.exp(rng.uniform(math.log(0.05), math.log(2.0), size=k))
    weights = rng.dirichlet(np.full(k, 0.7))
    n_bg = n // 10
    which = rng.choice(k, size=n - n_bg, p=weights)
    X = np.empty((n, 2))
    X[: n - n_bg] = centres[which] + rng.standard_normal((n - n_bg, 2)) * sigma[which, None]
    X[n - n_bg :] = rng.uniform(city_lo, city_hi, size=(n_bg, 2))
    rng.shuffle(X)
    return np.clip(X, lo, hi)


def _city(name: str, n: int, seed: int, note: str) -> Dataset:
    """The synthetic city in the Crash box at (100 m, 300), as the paper's Crash run."""
    lo, hi = data.GEO_BOXES["crash"].km_bounds()
    return Dataset(name, city_like(n, seed=seed), lo, hi, 0.100, 300, note)


def crash() -> Dataset:
    return _city(
        "crash",
        1_860_785,
        1,
        "SYNTHETIC Crash stand-in: city-like mixture, n = 1,860,785, Crash box; (100 m, 300)",
    )


def city_1e6() -> Dataset:
    return _city("city_1e6", 1_000_000, 2, "SYNTHETIC city-like mixture, n = 1e6, Crash box; (100 m, 300)")


def chest() -> Dataset:
    X = data.read_columns(data.file_of("chest"), ("x", "y", "z"))
    lo, hi = data.CHEST_BOX
    return Dataset(
        "chest",
        X,
        lo,
        hi,
        data.CHEST_ALPHA,
        5,
        f"chest accelerometer, 3-D raw counts in [0, 4096)^3, alpha = {data.CHEST_ALPHA:.2f} "
        "(|X| = 1e8 rule), MinPts = 5",
    )


def resample(X: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` rows drawn with replacement (for the scaling table)."""
    rng = np.random.default_rng(seed)
    return X[rng.integers(0, X.shape[0], size=n)]


LOADERS: dict[str, Callable[[], Dataset]] = {
    "cabs": cabs,
    "cabs_tiny": cabs_tiny,
    "crash": crash,
    "city_1e6": city_1e6,
    "chest": chest,
}


def load(name: str) -> Dataset:
    return LOADERS[name]()
