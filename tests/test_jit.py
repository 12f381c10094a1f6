"""The compiled kernels' module (dpdbscan._jit) and what may import numba.

numba's import and first dispatch cost about 0.4 s: a 2-D fit must not pay
them, so only paths of 4-D and up import the kernels, inside functions.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from dpdbscan._jit import kernel

TWO_D_FIT = """
import sys, warnings
import numpy as np
from dpdbscan import DPDBSCAN
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = rng.random((5000, 2))
est = DPDBSCAN(0.02, min_samples=10, epsilon=1.0, bounds=(0.0, 1.0), random_state=0).fit(X)
est.predict(X)
print("numba" in sys.modules)
"""


def test_a_two_dimensional_fit_never_imports_numba():
    out = subprocess.run([sys.executable, "-c", TWO_D_FIT], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_kernel_compiles_and_runs_as_python_would():
    def running_max(a):
        out = np.empty_like(a)
        best = a[0]
        for i in range(a.shape[0]):
            if a[i] > best:
                best = a[i]
            out[i] = best
        return out

    a = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int64)
    compiled = kernel(running_max)
    np.testing.assert_array_equal(compiled(a), running_max(a))
    np.testing.assert_array_equal(compiled(a), np.maximum.accumulate(a))


TRIP_ENDS_THEN_STOPS = """
import sys, warnings
import numpy as np
from dpdbscan import DPDBSCAN, Stops, TripEnds
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
n = 4000
X = rng.random((n, 2)) * 0.01 + 0.5
units = np.repeat(np.arange(40), n // 40)
times = np.tile(np.arange(n // 40) * 30.0, 40)
status = (np.arange(n) // 7) % 2
kw = dict(eps=0.05, min_samples=5, epsilon=1.0, delta=1e-6, bounds=(0.0, 1.0), max_cells_per_unit=4)
DPDBSCAN(**kw, events=TripEnds("pickup"), random_state=0).fit(X, units=units, times=times, status=status)
print("numba" in sys.modules)
DPDBSCAN(**kw, events=Stops(0.1, 300.0), random_state=0).fit(X, units=units, times=times)
print("numba" in sys.modules)
# one unit parked for 40 min with a fix every second: runs of 2,400 points
m = 2400
Y = rng.random((m, 2)) * 0.01 + 0.5
parked = DPDBSCAN(**kw, events=Stops(0.1, 300.0), random_state=0)
parked.fit(Y, units=np.zeros(m, int), times=np.arange(m) * 1.0)
print("numba" in sys.modules)
"""


def test_only_the_stops_long_runs_import_numba_on_traces():
    """Trip ends stay on numpy; so do stops whose runs are short (numpy's
    rounds, dpdbscan.traces.stoprounds); runs longer than its rounds load
    numba (the compiled scanner, imported inside ``stop_rows``)."""
    out = subprocess.run(
        [sys.executable, "-c", TRIP_ENDS_THEN_STOPS], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False", "True"]
