"""A seeded dense release is the same model whatever the threads do.

``benchmarks.same_release`` case 47 (dense 4-D, two sub-cells) was reported
different once in 90 runs and never again (issue 30). Its path has three
places where threads meet: the noise drawn on a thread while the points are
counted (``release.mechanism``), the staged bound of the sums in two threads
(``weightedsums.may_reach``) and the exact sums' matrix products (the BLAS,
whose last bits do depend on its thread count). This fits the same shape of
release, smaller, down every one of them and in a process with one BLAS and
one numba thread, and compares the model files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.post.test_density import _model_digest

ALPHA = 0.06  # 1.34M cells in 4-D: the compiled noise, drawn on a thread
SEED = 47


def _points() -> np.ndarray:
    """Gaussian blobs and a uniform background in [0, 1]^4 (the benchmark's shape)."""
    rng = np.random.default_rng(3)
    centres = rng.uniform(0.15, 0.85, (12, 4))
    X = centres[rng.integers(0, 12, 30_000)] + rng.normal(0.0, 0.01, (30_000, 4))
    X[:3_000] = rng.uniform(0.0, 1.0, (3_000, 4))
    return np.clip(X, 0.0, 1.0)


def _digest() -> str:
    return _model_digest(_points(), ALPHA, SEED, histogram="dense", subcells=2)


def test_a_seeded_dense_release_does_not_depend_on_its_threads(monkeypatch):
    from dpdbscan.post.coretests.density import cover, weightedsums
    from dpdbscan.release import mechanism

    threaded = _digest()
    assert _digest() == threaded
    # the noise drawn inline after the counting, the bound and the cover in one thread
    monkeypatch.setattr(mechanism, "THREADED_NOISE_CELLS", 1 << 62)
    monkeypatch.setattr(weightedsums.os, "cpu_count", lambda: 1)
    monkeypatch.setattr(cover.os, "cpu_count", lambda: 1)
    assert _digest() == threaded
    # a process with one BLAS thread and one numba thread
    import dpdbscan

    src = Path(dpdbscan.__file__).resolve().parents[1]
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(src), str(root), str(root / "tests")])
    code = "from tests.post.test_seeded_threads import _digest; print(_digest())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.split()[-1] == threaded
