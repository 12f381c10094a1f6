"""Every docs page's Python blocks run as written.

A reader copies a page's ```python blocks in order into one script; run
from an empty directory with ``$DPDBSCAN_DATA`` set (as the README tells a
reader to set it), the script must succeed: the blocks make what they need
themselves (their data, the model files they read). The README's own block
is tested with the README (tests/test_readme.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import REPO, data_dir

DOCS = REPO / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md") if "```python" in p.read_text())
#: Pages whose script starts a Dask cluster or fits the full Cabs-tiny file:
#: run under ``-m slow`` as well as here when they stay quick.
SLOW: set[str] = set()


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.M | re.S)


def test_the_pages_with_python_are_found():
    assert {"user-guide.md", "accuracy.md", "parameters.md", "dask.md"} <= set(PAGES), PAGES


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW else p for p in PAGES])
def test_a_page_s_python_blocks_run_in_order_from_an_empty_directory(page, tmp_path):
    data = data_dir().resolve()
    if not (data / "cabs_tiny.csv.gz").is_file():
        pytest.skip(f"shared data not found at {data} (set DPDBSCAN_DATA)")
    script = "\n\n".join(python_blocks((DOCS / page).read_text()))
    (tmp_path / "page.py").write_text(script)
    env = dict(os.environ, DPDBSCAN_DATA=str(data), MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    run = tmp_path / "run"
    run.mkdir()
    r = subprocess.run(
        [sys.executable, str(tmp_path / "page.py")], cwd=run, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, (page, r.stderr[-3000:])
