import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
