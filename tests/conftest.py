import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]

# The margins' quantiles cached across processes (density/lawcache.py) go to
# a directory of this run, never the user's cache: on, so that the suite
# (and the CLI runs it starts) read and write them as users' fits do.
# The process that makes the directory (pytest's, or xdist's controller:
# its workers inherit the variable) removes it when it exits.
if not os.environ.get("DPDBSCAN_CACHE_DIR"):
    os.environ["DPDBSCAN_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpdbscan-cache-")
    atexit.register(shutil.rmtree, os.environ["DPDBSCAN_CACHE_DIR"], ignore_errors=True)

# The property tests (hypothesis) draw the same examples on every run: each
# test's are seeded by a hash of its own code, as hypothesis' "ci" profile
# does, so that a run's time and what it checks do not depend on the draw (a
# fresh draw could take a costly shape, 90-406 s for one module on a loaded
# machine). The shapes a test must always meet are its explicit @example
# cases. No deadline: a loaded machine is slow, not wrong. A new random search
# is one option away: `pytest --hypothesis-profile=explore` (the failures it
# finds are kept in .hypothesis/ and tried first on its next runs).
settings.register_profile(
    "dpdbscan",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore", derandomize=False, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("dpdbscan")


def data_dir() -> Path:
    """Shared datasets: $DPDBSCAN_DATA or ../shared/data beside the repo."""
    env = os.environ.get("DPDBSCAN_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    d = data_dir()
    if not d.is_dir():
        pytest.skip(f"shared data not found at {d} (set DPDBSCAN_DATA)")
    return d


# The Dask tests (tests/release/test_dask*.py) share one real LocalCluster per
# test module (worker processes, so data is pickled as on a real cluster) and a
# client on it. Here rather than in a tests/release/conftest.py: a second module
# named conftest would shadow this one for `from conftest import ...`. Dask is
# optional: a test asking for them is skipped without it.
@pytest.fixture(scope="module")
def cluster():
    """A real two-worker LocalCluster (worker processes, so data is pickled)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as lc:
        yield lc


@pytest.fixture(scope="module")
def client(cluster):
    distributed = pytest.importorskip("distributed")
    with distributed.Client(cluster, set_as_default=False) as c:
        yield c
