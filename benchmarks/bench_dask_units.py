"""Person-level fit on Dask: a Parquet directory of 1e8 rows with 1e6 units (issue 20, item 4).

Two steps, each its own process (so the generator's memory is not the fit's)::

    python -m benchmarks.bench_dask_units write /tmp/units1e8 --n 100000000 --units 1000000
    python -m benchmarks.bench_dask_units fit /tmp/units1e8 [--memory-limit 8GiB] [--check]

``write`` makes a synthetic city: 60 hotspots of different sizes; each unit
(a person) has 3 places (home, work, another) drawn near hotspots, and a
heavy-tailed number of rows (lognormal weights, mean n / units). A row is
at one of its unit's places (jitter of 20 m on a 100 km square: a few cells)
or, one row in ten, anywhere near a hotspot (a trip). Rows are in random
order, as in a log, so every unit has rows in nearly every part: the shuffle
by unit has to move (almost) everything. Columns x, y (float64) and unit
(int64); 1e6 rows per part, one row group each.

``fit`` starts ``LocalCluster(n_workers=2, threads_per_worker=1,
processes=True, memory_limit=...)`` (no dashboard) and times one
``DPDBSCAN(..., noise="gaussian", max_cells_per_unit=K,
max_points_per_cell=M, backend=DaskBackend(client)).fit(DIR, units="unit")``
(``random_state=0``). Peak memory per worker is the kernel's high-water mark
of each worker process (``VmHWM``, reset through ``/proc/self/clear_refs``
just before the fit; the worker's own baseline is printed too), and its
resident memory sampled every 0.25 s through ``client.run``. ``--check``
then fits the same points in memory (numpy backend, same seed) in this
process after the cluster is closed and says whether the releases are
identical, with the peak memory of that process.

Nothing here is a test; the data never enter the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN, InsecureRandomnessWarning
from dpdbscan.research import dask_backend

SIDE = 100.0  # km: the city's square
PARAMS: dict[str, Any] = dict(
    eps=0.2,  # km: 200 m
    min_samples=100,
    epsilon=1.0,
    delta=1e-6,
    bounds=([0.0, 0.0], [SIDE, SIDE]),
    noise="gaussian",
    max_cells_per_unit=10,
    max_points_per_cell=2,
    histogram="sparse",
    random_state=0,
)
ROWS_PER_PART = 1_000_000


# ------------------------------------------------------------------ the data
def city(n: int, n_units: int, seed: int = 20) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The city's rows, ``ROWS_PER_PART`` at a time: (X, unit) per part."""
    rng = np.random.default_rng(seed)
    hot = rng.uniform(10, SIDE - 10, size=(60, 2))
    hot_size = rng.uniform(0.3, 3.0, size=60)
    hot_weight = rng.pareto(1.5, size=60) + 0.1
    hot_p = hot_weight / hot_weight.sum()

    def near_hotspots(m: int) -> np.ndarray:
        h = rng.choice(60, size=m, p=hot_p)
        return hot[h] + rng.normal(size=(m, 2)) * hot_size[h, None]

    places = near_hotspots(3 * n_units).reshape(n_units, 3, 2)
    weight = rng.lognormal(sigma=1.0, size=n_units)
    cum = np.cumsum(weight / weight.sum())
    for size in np.diff(np.append(np.arange(0, n, ROWS_PER_PART), n)):
        unit = np.minimum(np.searchsorted(cum, rng.random(size)), n_units - 1)
        which = rng.choice(3, size=size, p=[0.5, 0.3, 0.2])
        X = places[unit, which] + rng.normal(scale=0.02, size=(size, 2))
        trip = rng.random(size) < 0.1
        X[trip] = near_hotspots(int(trip.sum()))
        yield X, unit.astype(np.int64)


def write(directory: str, n: int, n_units: int, seed: int = 20) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=False)
    for i, (X, unit) in enumerate(city(n, n_units, seed)):
        table = pa.table({"x": X[:, 0], "y": X[:, 1], "unit": unit})
        pq.write_table(table, os.path.join(directory, f"part-{i:04d}.parquet"), row_group_size=len(unit))


def read_all(directory: str) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow.parquet as pq

    table = pq.read_table(directory, columns=["x", "y", "unit"])
    X = np.column_stack([table.column("x").to_numpy(), table.column("y").to_numpy()])
    return X, table.column("unit").to_numpy()


# ---------------------------------------------------------------- the memory
def _hwm_reset() -> int:
    """Reset this process's peak-RSS counter; its resident bytes now."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status("VmRSS")


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _rss() -> int:
    return _status("VmRSS")


def _hwm() -> int:
    return _status("VmHWM")


def _disk_usage(directory: str) -> int:
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):  # a shuffle file removed meanwhile
                total += os.stat(os.path.join(root, name)).st_size
    return total


class Sampler:
    """Each worker's resident memory through ``client.run`` every ``period``
    s, and the bytes in the workers' scratch directory (the shuffle's files)."""

    def __init__(self, client: Any, scratch: str, period: float = 0.25) -> None:
        self.client, self.scratch, self.period = client, scratch, period
        self.peak: dict[str, int] = {}
        self.disk = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for w, rss in self.client.run(_rss).items():
                    self.peak[w] = max(self.peak.get(w, 0), rss)
                self.disk = max(self.disk, _disk_usage(self.scratch))
                self.samples += 1
            except Exception:  # a worker restarting: the next sample will say
                pass
            self._stop.wait(self.period)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# -------------------------------------------------------------------- the fit
def fit(directory: str, memory_limit: str, check: bool) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    warnings.filterwarnings("ignore", category=InsecureRandomnessWarning)
    scratch = tempfile.mkdtemp(prefix="dpdbscan-units-scratch-")
    params = {k: v for k, v in PARAMS.items() if k != "bounds"}
    out: dict[str, Any] = {"directory": directory, "params": params}
    try:
        with (
            LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                memory_limit=memory_limit,
                dashboard_address=None,
                local_directory=scratch,
            ) as cluster,
            Client(cluster) as client,
        ):
            backend = dask_backend(client=client)
            # workers import dpdbscan, pandas and pyarrow first, untimed
            client.run(lambda: __import__("dpdbscan.release.backends.dask_backend"))
            base = client.run(_hwm_reset)
            driver_base = _hwm_reset()
            out["load_before"] = os.getloadavg()
            with Sampler(client, scratch) as sampler:
                t = time.perf_counter()
                est = DPDBSCAN(**PARAMS, backend=backend).fit(directory, units="unit")
                out["wall_s"] = time.perf_counter() - t
            peaks = client.run(_hwm)
            out["workers"] = {
                w: {
                    "rss_before_GiB": base[w] / 2**30,
                    "peak_rss_GiB": peaks[w] / 2**30,
                    "sampled_peak_rss_GiB": sampler.peak.get(w, 0) / 2**30,
                }
                for w in sorted(peaks)
            }
            out["samples"] = sampler.samples
            out["load_after"] = os.getloadavg()
            out["scratch_peak_GiB"] = sampler.disk / 2**30
            out["driver_peak_rss_GiB"] = _hwm() / 2**30
            out["driver_rss_before_GiB"] = driver_base / 2**30
            out["memory_limit"] = memory_limit
            c = backend.input_counts
            out["rows"], out["missing_unit"] = c.rows, c.missing_unit
            out["cells_released"] = int(est.histogram_.values.size)
            out["spans"] = int(est.spans_.n_spans)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if check:
        before = _hwm_reset()
        t = time.perf_counter()
        X, units = read_all(directory)
        ref = DPDBSCAN(**PARAMS).fit(X, units=units)
        out["in_memory_fit_s"] = time.perf_counter() - t
        out["in_memory_peak_rss_GiB"] = _hwm() / 2**30
        out["in_memory_rss_before_GiB"] = before / 2**30
        del X, units
        h, r = est.histogram_, ref.histogram_
        out["identical_release"] = bool(
            np.array_equal(h.keys, r.keys)
            and np.array_equal(h.values, r.values)
            and np.array_equal(est.spans_.core_keys, ref.spans_.core_keys)
            and np.array_equal(est.spans_.labels, ref.spans_.labels)
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="step", required=True)
    w = sub.add_parser("write", help="write the Parquet directory (outside the repository)")
    w.add_argument("directory")
    w.add_argument("--n", type=int, default=100_000_000)
    w.add_argument("--units", type=int, default=1_000_000)
    f = sub.add_parser("fit", help="time a person-level fit of the directory on 2 workers")
    f.add_argument("directory")
    f.add_argument("--memory-limit", default="8GiB")
    f.add_argument("--check", action="store_true", help="also fit in memory and compare the releases")
    args = p.parse_args(argv)
    if args.step == "write":
        t = time.perf_counter()
        write(args.directory, args.n, args.units)
        size = sum(e.stat().st_size for e in os.scandir(args.directory))
        took = time.perf_counter() - t
        print(f"{args.n:,} rows, {args.units:,} units: {size / 2**30:.2f} GiB in {took:.0f} s")
        return 0
    print(json.dumps(fit(args.directory, args.memory_limit, args.check), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
