"""Fixtures of the experiments' tests: the shared data folder and the DP-KMeans baseline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from experiments import baselines, data


@pytest.fixture
def shared_data() -> Path:
    """The shared data folder; the test skips when it is not there (a fresh clone elsewhere)."""
    d = data.data_dir()
    if not d.is_dir():
        pytest.skip(f"shared data not found at {d} (set {data.ENV})")
    return d


@pytest.fixture
def dev_data(shared_data: Path) -> Path:
    """The development suite's folder in the shared data."""
    if not (shared_data / "dev" / "params.json").is_file():
        pytest.skip("the dev suite is not in the shared data folder")
    return shared_data / "dev"


@pytest.fixture(scope="session")
def diffprivlib() -> None:
    """DP-KMeans can run: skips with the reason otherwise, or fails when
    DPDBSCAN_REQUIRE_BASELINES is set (make test-experiments sets it)."""
    if baselines.has_diffprivlib():
        return
    if os.environ.get("DPDBSCAN_REQUIRE_BASELINES"):
        pytest.fail(baselines.DIFFPRIVLIB_MISSING)
    pytest.skip(baselines.DIFFPRIVLIB_MISSING)
