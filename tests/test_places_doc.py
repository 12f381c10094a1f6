"""docs/places.md runs as written, on Cabs-tiny.

The page's ```console commands run in order in an empty folder, with
``dpdbscan`` on the PATH, ``DPDBSCAN_DATA`` set and ``TRACES`` pointing at
Cabs-tiny with its cabs (``cabs_tiny_cabs.csv.gz``: the same columns as full
Cabs, read by name) instead of full Cabs; every shown output line must keep
its form (the text before its first digit), as for the README (under
``-m slow``, ``make test-slow``: the seven commands take minutes on a loaded
machine). Then the page's Python block runs. Skipped when the shared data
are absent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, data_dir
from test_readme import _shown_form, console_commands, python_blocks

PAGE = REPO / "docs" / "places.md"
TINY = "cabs_tiny_cabs.csv.gz"


@pytest.fixture
def env(tmp_path):
    data = data_dir().resolve()
    if not (data / TINY).is_file():
        pytest.skip(f"shared data not found at {data} (set DPDBSCAN_DATA)")
    out = dict(os.environ)
    out["PATH"] = str(Path(sys.executable).parent) + os.pathsep + out.get("PATH", "")
    out["DPDBSCAN_DATA"] = str(data)
    out["PYTHONPATH"] = str(REPO / "src") + os.pathsep + out.get("PYTHONPATH", "")
    return out


def test_the_page_s_commands_are_found():
    texts = [c.text for c in console_commands(PAGE.read_text())]
    assert any("--stops 100m 5min" in t and t.startswith("dpdbscan fit") for t in texts)
    assert any("--trip-ends occupied" in t and t.startswith("dpdbscan fit") for t in texts)
    assert sum(t.startswith("dpdbscan plot") for t in texts) == 3
    # a weekly map: the series (places fixed once) and the plan of one fit per week
    assert any("--places-periods 1" in t and "--ledger places.ledger" in t for t in texts)
    assert any(t.startswith("dpdbscan forecast") and "--periods 4" in t for t in texts)
    for name in ("traces", "pickups", "stops"):
        assert (REPO / "docs" / "images" / f"places_{name}.png").is_file()


@pytest.mark.slow  # seven commands on 845,685 rows: about a minute, minutes on a loaded machine
def test_the_page_s_commands_run_on_cabs_tiny(tmp_path, env):
    for c in console_commands(PAGE.read_text()):
        text = c.text
        if text.startswith("export TRACES="):
            text = f'export TRACES="$DPDBSCAN_DATA/{TINY}"'
        r = subprocess.run(
            ["bash", "-c", "set -e\n" + "\n".join(_exports(PAGE.read_text())) + "\n" + text],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, (text, r.stderr[-2000:])
        printed = (r.stdout + r.stderr).splitlines()
        for shown in c.shown:
            assert any(p.startswith(_shown_form(shown)) for p in printed), (text, shown, printed)
    for name in ("traces", "pickups", "stops"):
        assert (tmp_path / "places" / f"{name}.png").is_file()
        assert (tmp_path / "places" / f"{name}.spans.geojson").is_file()


def _exports(page: str) -> list[str]:
    """The page's exports, each command running in a fresh shell."""
    out = []
    for c in console_commands(page):
        if c.text.startswith("export TRACES="):
            out.append(f'export TRACES="$DPDBSCAN_DATA/{TINY}"')
        elif c.text.startswith("export "):
            out.append(c.text)
    return out


def test_the_page_s_python_runs(tmp_path, env, monkeypatch):
    block, forecast = python_blocks(PAGE.read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPDBSCAN_DATA", env["DPDBSCAN_DATA"])
    scope: dict = {}
    with pytest.warns(Warning):  # a release of Cabs-tiny's few stops warns that it is sparse
        exec(compile(block, str(PAGE), "exec"), scope)
    assert scope["pickups"].metadata["events"]["kind"] == "trip ends"
    assert scope["stops"].metadata["events"] == {
        "kind": "stops",
        "radius": 0.1,
        "duration_s": 300.0,
    }
    # the forecast of the geographic automatic mode at person level: its base at the place radius
    from dpdbscan.plan.autoplan import PLACE_EXTENT_KM, place_radius

    exec(compile(forecast, str(PAGE), "exec"), scope)
    assert scope["fc"].eps == pytest.approx(place_radius(PLACE_EXTENT_KM, 2, 4.0))
