"""The ``dbscan`` package timed in a process of its own.

After a call, the ``dbscan`` package's worker threads keep running: on this
machine about 0.15 s of CPU for every second the process then spends on
anything else (sleeping included), more the longer that takes. A benchmark
that calls it and then times dpdbscan's fit by the CPU of the same process
charges those threads to dpdbscan: 6-D at 1e4 points, 0.23 s of fit read
0.31 s right after a ``dbscan`` call (load 13). Even from another process
those spinning threads slow a fit on this 2-core machine: 0.23 s -> 0.28 s.

:class:`Peer` runs the package in a child process that holds the points,
and stops that process (SIGSTOP) between calls, so that nothing of it runs
while the parent times dpdbscan. Each call returns the child's user+sys CPU
(its threads counted) and wall time of that call; rounds can still be
interleaved.

    with Peer(X) as peer:
        cpu, wall, labels = peer.fit(alpha, 20, labels=True)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _dbscan(X: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    import dbscan

    return np.asarray(dbscan.DBSCAN(X, eps=eps, min_samples=min_samples)[0])


def _busy(X: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """A stand-in peer for the tests: returns at once and leaves a thread
    spinning behind it, as the ``dbscan`` package's workers do."""

    def spin() -> None:
        end = time.perf_counter() + 5.0
        while time.perf_counter() < end:
            pass

    threading.Thread(target=spin, daemon=True).start()
    return np.zeros(X.shape[0], dtype=np.int64)


#: the functions a child can run, by name
FUNCTIONS = {"dbscan": _dbscan, "busy": _busy}


class Peer:
    """A child process that holds ``X`` and runs ``FUNCTIONS[function]`` on it."""

    def __init__(self, X: np.ndarray, function: str = "dbscan") -> None:
        if function not in FUNCTIONS:
            raise ValueError(f"no peer function {function!r}")
        self._tmp = tempfile.TemporaryDirectory()
        path = Path(self._tmp.name) / "points.npy"
        np.save(path, np.ascontiguousarray(X))
        here = Path(__file__).resolve().parents[1]
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.peer", str(path), function],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=here,
        )

    def fit(
        self, eps: float, min_samples: int, labels: bool = False
    ) -> tuple[float, float, np.ndarray | None]:
        """CPU seconds (the child's, its threads counted) and wall seconds of
        one call; the labels too with ``labels``."""
        out = str(Path(self._tmp.name) / "labels.npy") if labels else None
        assert self._proc.stdin is not None and self._proc.stdout is not None
        os.kill(self._proc.pid, signal.SIGCONT)
        self._proc.stdin.write(json.dumps({"eps": eps, "min_samples": min_samples, "labels": out}) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the peer process ended (exit {self._proc.wait()})")
        os.kill(self._proc.pid, signal.SIGSTOP)  # its threads idle no more until the next call
        r = json.loads(line)
        return r["cpu"], r["wall"], (np.load(out) if out else None)

    def labels(self, eps: float, min_samples: int) -> np.ndarray:
        """The labels of one call (its times dropped)."""
        out = self.fit(eps, min_samples, labels=True)[2]
        assert out is not None
        return out

    def close(self) -> None:
        if self._proc.poll() is None:
            os.kill(self._proc.pid, signal.SIGCONT)
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._tmp.cleanup()

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def child(path: str, function: str) -> None:
    X = np.load(path)
    fn = FUNCTIONS[function]
    for line in sys.stdin:
        req = json.loads(line)
        c, t = _cpu(), time.perf_counter()
        labels = fn(X, req["eps"], req["min_samples"])
        cpu, wall = _cpu() - c, time.perf_counter() - t
        if req["labels"]:
            np.save(req["labels"], labels)
        print(json.dumps({"cpu": cpu, "wall": wall}), flush=True)


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2])
