"""Data sets of the benchmark suite, with their public bounds and (alpha, MinPts).

Real data are read from the shared data directory (``$DPDBSCAN_DATA`` or
``../shared/data`` beside the repository) once per process; projected arrays
are cached as .npy under ``$DPDBSCAN_BENCH_CACHE`` (default
``/tmp/dpdbscan_bench``), never in the repository.

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
              the rule of experiments/datasets.py), MinPts = 5.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpdbscan.geometry.projection import Equirectangular

REPO = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    env = os.environ.get("DPDBSCAN_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def cache_dir() -> Path:
    d = Path(os.environ.get("DPDBSCAN_BENCH_CACHE", "/tmp/dpdbscan_bench"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@dataclass
class Dataset:
    name: str
    X: np.ndarray
    lower: tuple
    upper: tuple
    alpha: float
    min_samples: int
    note: str

    @property
    def bounds(self):
        return (np.asarray(self.lower, dtype=float), np.asarray(self.upper, dtype=float))

    @property
    def n(self) -> int:
        return int(self.X.shape[0])


# lon_min, lat_min, lon_max, lat_max; projection reference latitude
_GEO = {
    "cabs": ((-122.6, 37.55, -122.3, 37.85), 37.8, "cabs_sf.csv.gz"),
    "cabs_tiny": ((-122.48, 37.72, -122.38, 37.82), 37.8, "cabs_tiny.csv.gz"),
}
_CRASH_BOX = (-75.0, 40.0, -73.0, 41.0)  # the paper's Crash filter box
_CRASH_REF_LAT = 40.5


def _projection(box, ref_lat) -> Equirectangular:
    """The library's projection, origin at the box's south-west corner."""
    return Equirectangular(float(box[0]), float(box[1]), float(ref_lat))


def _km_box(box, ref_lat):
    return _projection(box, ref_lat).project_bounds(box[:2], box[2:])


def _project(lon, lat, box, ref_lat):
    return _projection(box, ref_lat).forward(np.column_stack([lon, lat]))


def _geo(name: str) -> np.ndarray:
    box, ref_lat, fname = _GEO[name]
    cached = cache_dir() / f"{name}_km.npy"
    if cached.exists():
        return np.load(cached)
    import pandas as pd

    df = pd.read_csv(data_dir() / fname, dtype={"x": np.float64, "y": np.float64}, engine="c")
    X = _project(df["x"].to_numpy(), df["y"].to_numpy(), box, ref_lat)
    np.save(cached, X)
    return X


def cabs() -> Dataset:
    lo, hi = _km_box(*_GEO["cabs"][:2])
    return Dataset("cabs", _geo("cabs"), lo, hi, 0.020, 500,
                   "Cabs, all 10,995,626 records, km; paper's (20 m, 500)")


def cabs_tiny() -> Dataset:
    lo, hi = _km_box(*_GEO["cabs_tiny"][:2])
    return Dataset("cabs_tiny", _geo("cabs_tiny"), lo, hi, 0.050, 1000,
                   "Cabs-tiny, 845,685 trip end points, km; paper's (50 m, 1000)")


def city_like(n: int, seed: int = 0) -> np.ndarray:
    """A synthetic city in the Crash box (km): 300 Gaussian hot spots of
    width 50 m - 2 km (log-uniform) with Dirichlet weights inside a 30 x 40 km
    city area, plus 10% uniform over that area. Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    lo, hi = _km_box(_CRASH_BOX, _CRASH_REF_LAT)
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
    X[n - n_bg:] = rng.uniform(city_lo, city_hi, size=(n_bg, 2))
    rng.shuffle(X)
    return np.clip(X, lo, hi)


def crash() -> Dataset:
    lo, hi = _km_box(_CRASH_BOX, _CRASH_REF_LAT)
    return Dataset("crash", city_like(1_860_785, seed=1), lo, hi, 0.100, 300,
                   "SYNTHETIC Crash stand-in: city-like mixture, n = 1,860,785, Crash box; (100 m, 300)")


def city_1e6() -> Dataset:
    lo, hi = _km_box(_CRASH_BOX, _CRASH_REF_LAT)
    return Dataset("city_1e6", city_like(1_000_000, seed=2), lo, hi, 0.100, 300,
                   "SYNTHETIC city-like mixture, n = 1e6, Crash box; (100 m, 300)")


CHEST_BOX = 4096.0
CHEST_ALPHA = 4.0 * math.sqrt(3) * CHEST_BOX / (4.0 * 1e8 ** (1.0 / 3))  # |X| = 1e8 at eta = 4


def chest() -> Dataset:
    import pandas as pd

    df = pd.read_csv(data_dir() / "chest_acc_subject15.csv")
    X = df[["x", "y", "z"]].to_numpy(np.float64)
    return Dataset("chest", X, (0.0,) * 3, (CHEST_BOX,) * 3, CHEST_ALPHA, 5,
                   f"chest accelerometer, 3-D raw counts in [0, 4096)^3, alpha = {CHEST_ALPHA:.2f} "
                   "(|X| = 1e8 rule), MinPts = 5")


def resample(X: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` rows drawn with replacement (for the scaling table)."""
    rng = np.random.default_rng(seed)
    return X[rng.integers(0, X.shape[0], size=n)]


LOADERS = {"cabs": cabs, "cabs_tiny": cabs_tiny, "crash": crash, "city_1e6": city_1e6, "chest": chest}


def load(name: str) -> Dataset:
    return LOADERS[name]()
