"""Faults on a real Dask cluster: a scheduler and workers as separate processes.

tests/release/test_dask.py uses an in-process ``LocalCluster``. Here the test starts
``dask scheduler`` and two ``dask worker`` processes with ``subprocess`` on
loopback ports, as a user who outgrew one process would, and checks:

* a fit from a directory of Parquet files through the scheduler's address
  releases exactly what the in-memory numpy backend releases (same seed),
  event-level and person-level (a unit column, shuffled by unit between the
  worker processes);
* killing a worker (SIGKILL) while it reads a partition gives the same
  release (Dask re-runs the lost tasks on the other worker) or one clear
  error, never a partial release, at both levels;
* a stopped scheduler gives a clear ``ConnectionError`` within the backend's
  connect timeout, not a hang.

Partitions are made slow by a worker *preload* script written by the test
(it wraps the backend's partition function in the worker processes only), so
the library carries no test hook. Every process is killed in a ``finally``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
import distributed  # noqa: E402
import pandas as pd  # noqa: E402

import dpdbscan  # noqa: E402
from dpdbscan import DPDBSCAN  # noqa: E402
from dpdbscan.release.backends.dask_backend import DaskBackend  # noqa: E402

BOUNDS = ([0.0, 0.0], [10.0, 10.0])
N_PARTS = 10
START_TIMEOUT = 120  # s: generous, the test machine is shared and slow to import dask
FIT_TIMEOUT = 180  # s: only so that a hang fails the test instead of stalling the suite

PRELOAD = textwrap.dedent('''
    """Test-only worker preload: each partition leaves a marker, then sleeps."""
    import os
    import time
    import uuid
    from pathlib import Path

    from dpdbscan.release.backends import dask_backend


    def _slow(name):
        # distributed may import a preload twice: wrap the original only once.
        count = getattr(dask_backend, "_unwrapped" + name, getattr(dask_backend, name))
        setattr(dask_backend, "_unwrapped" + name, count)

        def slow(*args):
            marks = Path(os.environ["DPDBSCAN_TEST_MARKS"])
            (marks / f"{os.getpid()}-{uuid.uuid4().hex}").touch()
            time.sleep(float(os.environ["DPDBSCAN_TEST_DELAY"]))
            return count(*args)

        # Tasks name the function by module and name, so workers run this one.
        setattr(dask_backend, name, slow)


    _slow("_frame_part")  # a partition counted (event level)
    _slow("_frame_pairs")  # a partition reduced to its pairs (person level)
''')


def _dask_cli(module: str) -> list[str]:
    """The ``dask scheduler``/``dask worker`` command of this interpreter."""
    return [sys.executable, "-m", f"distributed.cli.{module}"]


class Cluster:
    """A scheduler and workers started as processes; ``stop()`` kills them."""

    def __init__(self, tmp: Path, n_workers: int, delay: float, procs: list):
        self.tmp = tmp
        self.procs = procs  # shared with the fixture, which kills them whatever happens
        self.workers: list[subprocess.Popen] = []
        self.marks = tmp / "marks"
        self.marks.mkdir()
        (tmp / "slow_parts.py").write_text(PRELOAD)
        src = str(Path(dpdbscan.__file__).resolve().parents[1])  # so workers import this dpdbscan
        self.env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join(
                [src] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
            ),
            DPDBSCAN_TEST_MARKS=str(self.marks),
            DPDBSCAN_TEST_DELAY=str(delay),
        )
        sched_file = tmp / "scheduler.json"
        self.scheduler = self._start(
            "scheduler",
            _dask_cli("dask_scheduler")
            + ["--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
        )
        self.address = self._wait_for_address(sched_file)
        for i in range(n_workers):
            self.workers.append(
                self._start(
                    f"worker{i}",
                    _dask_cli("dask_worker")
                    + [
                        self.address,
                        "--host",
                        "127.0.0.1",
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--name",
                        f"w{i}",
                        "--memory-limit",
                        "0",
                        "--death-timeout",
                        "60",
                        "--local-directory",
                        str(tmp / f"w{i}"),
                        "--preload",
                        str(tmp / "slow_parts.py"),
                    ],
                )
            )
        if n_workers:
            with distributed.Client(self.address, set_as_default=False, timeout=START_TIMEOUT) as c:
                c.wait_for_workers(n_workers, timeout=START_TIMEOUT)

    def _start(self, name, argv):
        log = open(self.tmp / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.tmp)
        log.close()
        self.procs.append(proc)
        return proc

    def _wait_for_address(self, path: Path) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.scheduler.poll() is not None:
                raise RuntimeError(f"the scheduler exited: {self.log('scheduler')}")
            try:
                return json.loads(path.read_text())["address"]
            except (FileNotFoundError, json.JSONDecodeError, KeyError):
                time.sleep(0.1)
        raise TimeoutError(f"no scheduler address after {START_TIMEOUT} s: {self.log('scheduler')}")

    def log(self, name: str) -> str:
        p = self.tmp / f"{name}.log"
        return p.read_text(errors="replace")[-2000:] if p.exists() else ""

    def marks_of(self, proc) -> int:
        return sum(1 for m in self.marks.iterdir() if m.name.startswith(f"{proc.pid}-"))

    def stop(self) -> None:
        _kill([self.scheduler, *self.workers])


def _kill(procs) -> None:
    """SIGKILL the given processes (only those this test started) and reap them."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - the kernel reaps SIGKILLed ones
            pass


@pytest.fixture
def start_cluster(tmp_path):
    """``start(n_workers=2, delay=0.0) -> Cluster``; all killed at teardown,
    also those of a cluster that failed to start."""
    procs: list[subprocess.Popen] = []

    def start(n_workers=2, delay=0.0):
        d = tmp_path / f"cluster{len(list(tmp_path.glob('cluster*')))}"
        d.mkdir()
        return Cluster(d, n_workers, delay, procs)

    try:
        yield start
    finally:
        _kill(procs)


def make_points(n=60_000, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[2.0, 2.0], [7.0, 3.0], [5.0, 8.0]])
    X = centres[rng.integers(0, 3, n)] + rng.normal(scale=0.6, size=(n, 2))
    X[: n // 10] = rng.uniform(-1, 11, size=(n // 10, 2))
    X[5::211, 0] = np.nan
    rng.shuffle(X)
    return X


@pytest.fixture(scope="module")
def points():
    return make_points()


@pytest.fixture(scope="module")
def units(points):
    """A privacy unit per row: 500 cabs, each with rows in every partition
    (text, so that the event-level fits' default columns leave it out)."""
    ids = np.random.default_rng(1).integers(0, 500, len(points))
    return np.array([f"cab-{i}" for i in ids], dtype=object)


@pytest.fixture
def parquet_dir(tmp_path, points, units):
    d = tmp_path / "parts"
    d.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(points)), N_PARTS)):
        pd.DataFrame({"x": points[rows, 0], "y": points[rows, 1], "cab": units[rows]}).to_parquet(
            d / f"part-{i:02d}.parquet", index=False
        )
    return d


#: The coordinates of parquet_dir: its text "cab" column is not one, and an event-level read
#: would refuse it from the default selection (the reader's rule, files.layout.schema_columns).
COORDS = ["x", "y"]


def fit(X, backend, units=None):
    """An event-level fit, or with ``units`` a person-level one."""
    person = (
        {}
        if units is None
        else dict(noise="gaussian", delta=1e-6, max_cells_per_unit=20, max_points_per_cell=2)
    )
    return DPDBSCAN(
        eps=0.5,
        min_samples=20,
        epsilon=1.0,
        bounds=BOUNDS,
        random_state=0,
        histogram="sparse",
        theta=3.0,
        backend=backend,
        **person,
    ).fit(X, units=units)


class Background:
    """``fn(*args)`` on a daemon thread: a hung fit fails the test after
    ``FIT_TIMEOUT`` instead of stalling the suite (or its exit)."""

    def __init__(self, fn, *args):
        self._out: list = []
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._thread.start()

    def _run(self, fn, args):
        try:
            self._out.append((True, fn(*args)))
        except BaseException as exc:  # handed to the test thread by result()
            self._out.append((False, exc))

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self, timeout=FIT_TIMEOUT):
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"no result after {timeout} s: the fit hangs")
        ok, value = self._out[0]
        if not ok:
            raise value
        return value


def assert_same_release(got, want):
    assert want.spans_.core_keys.size > 0, "a release with no core cells proves little"
    np.testing.assert_array_equal(got.histogram_.keys, want.histogram_.keys)
    np.testing.assert_array_equal(got.histogram_.values, want.histogram_.values)
    np.testing.assert_array_equal(got.spans_.core_keys, want.spans_.core_keys)
    np.testing.assert_array_equal(got.spans_.labels, want.spans_.labels)
    assert got.noise_margin_ == want.noise_margin_


def test_fit_through_a_scheduler_address_equals_in_memory(start_cluster, parquet_dir, points, units):
    # One cluster for both levels (a cluster's processes cost 4-12 s to start on a loaded machine).
    cluster = start_cluster()
    for round_, (column, ids) in enumerate([(None, None), ("cab", units)], start=1):
        backend = DaskBackend(scheduler=cluster.address, columns=COORDS)
        got = Background(fit, str(parquet_dir), backend, column).result()
        assert_same_release(got, fit(points, "numpy", ids))
        assert backend.input_counts.rows == len(points)
        # the partitions ran in the worker processes, not in this one
        assert sum(cluster.marks_of(w) for w in cluster.workers) == round_ * N_PARTS


@pytest.mark.slow  # 25 s a level: a worker killed and its tasks retried
@pytest.mark.parametrize("level", ["event", "person"])
def test_killing_a_worker_mid_fit_gives_the_same_release_or_one_clear_error(
    start_cluster, parquet_dir, points, units, level
):
    cluster = start_cluster(delay=0.8)
    victim, survivor = cluster.workers
    column, ids = ("cab", units) if level == "person" else (None, None)
    want = fit(points, "numpy", ids)
    job = Background(fit, str(parquet_dir), DaskBackend(scheduler=cluster.address, columns=COORDS), column)
    deadline = time.monotonic() + FIT_TIMEOUT
    while cluster.marks_of(victim) == 0:  # wait until the victim is counting a partition
        assert not job.done(), "the fit ended before the victim started a partition"
        assert time.monotonic() < deadline, "the victim never started a partition"
        time.sleep(0.02)
    os.kill(victim.pid, signal.SIGKILL)
    assert victim.wait(timeout=30) == -signal.SIGKILL
    try:
        got = job.result()
    except (distributed.scheduler.KilledWorker, ConnectionError, RuntimeError) as exc:
        # The other allowed outcome: one clear error, no release at all.
        print(f"outcome: error {type(exc).__name__}: {exc}")
        assert str(exc).strip() and "\n" not in str(exc).strip()
        return
    print("outcome: the fit finished after the kill")
    assert_same_release(got, want)
    # Not vacuous: the partition the victim was counting was counted again.
    assert cluster.marks_of(victim) + cluster.marks_of(survivor) > N_PARTS
    assert survivor.poll() is None


def test_stopped_scheduler_is_a_clear_error_not_a_hang(start_cluster, parquet_dir):
    cluster = start_cluster(n_workers=0)
    address = cluster.address
    cluster.stop()
    assert cluster.scheduler.poll() is not None
    backend = DaskBackend(scheduler=address, timeout=3, columns=COORDS)
    job = Background(fit, str(parquet_dir), backend)
    # FIT_TIMEOUT only turns a hang into a failure; the error comes after ~3 s.
    with pytest.raises(ConnectionError, match=f"cannot reach the Dask scheduler at {address} within 3 s"):
        job.result()
