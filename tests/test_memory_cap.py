"""A fit runs within a memory cap in high dimension (not a timing test).

In 5-D a sparse release holds hundreds of thousands of small noisy values
scattered over the universe; the bound test once listed every cell of every
bucket those made live (tens of GiB) and died with a MemoryError on a few
thousand points. The fit runs in a child process under an address-space
limit, so a regression fails here instead of taking the machine's memory.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")

#: Address space of the child (Python, numpy and the fit): the fit itself
#: needs a few hundred MB; the regression asked for 52 GiB.
CAP_BYTES = 2 << 30

_CHILD = """
import numpy as np
from dpdbscan import DPDBSCAN

rng = np.random.default_rng(0)
d = 5
centres = rng.uniform(0.2, 0.8, (4, d))
X = np.concatenate([c + rng.normal(0, 0.01, (900, d)) for c in centres] + [rng.uniform(0, 1, (400, d))])
X = np.clip(X, 0, 1)
m = DPDBSCAN(eps=0.04, min_samples=20, epsilon=1.0, bounds=(0, 1), core="bound",
             histogram="sparse", subcells=1, random_state=0)
labels = m.fit_predict(X)
print(len(set(labels[labels >= 0].tolist())), int((labels[:3600] >= 0).sum()))
"""


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
def test_bound_fit_in_5d_stays_within_a_memory_cap():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    r = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, preexec_fn=_cap, timeout=600
    )
    assert r.returncode == 0, r.stderr[-2000:]
    n_clusters, n_in_blobs = map(int, r.stdout.split())
    # the four blobs are found (a fit that gave up would label nothing)
    assert n_clusters == 4
    assert n_in_blobs > 3000
