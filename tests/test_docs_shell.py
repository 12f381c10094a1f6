"""Every docs page's shell commands run as written, from a fresh clone.

The README's commands are tested with the README (tests/test_readme.py) and
docs/places.md's with that page (tests/test_places_doc.py); this runs the
other pages'. A page's ```console blocks hold commands (a line starting with
``$ ``, continued over lines ending in a backslash) and, under them, what
they print. Each page's commands run in order, each in its own shell, in a
``git clone`` of this repository (the pages say "from the repository root":
they read ``docs/examples/``), with the ``dpdbscan`` of this tree on the
PATH and ``$DPDBSCAN_DATA`` set as the README tells a reader to set it.
Every command must succeed and every shown output line keep its form (the
text before its first digit; a line ``...`` stands for lines left out). A
command whose line carries ``# slow`` (full Cabs, 11M rows) runs only under
``-m slow`` (``make test-slow``), with the page's other commands before it.
A page whose commands read a model that another page makes (docs/maps.md
maps the README's Cabs-tiny model) runs that page's first command before
its own.

Not run: the installation commands (``pip``, ``make``, ``apt-get``: they
change the environment) and docs/places-study.md's ```sh blocks, which run
the research experiments for minutes to hours.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, data_dir
from test_readme import Command, _shown_form, console_commands

DOCS = REPO / "docs"
#: Pages with their own test of their commands.
OWN_TEST = {"places.md"}
#: Commands that set up the environment rather than use the tool.
SETUP = ("pip ", "make ", "apt-get ")
PAGES = sorted(
    p.name
    for p in DOCS.glob("*.md")
    if p.name not in OWN_TEST and any(not c.text.startswith(SETUP) for c in console_commands(p.read_text()))
)
#: The file each page's commands read that another page's first command makes.
NEEDS = {"maps.md": ("user-guide.md", "out/cabs_tiny.spans.json")}


def commands(page: str) -> list[Command]:
    return [c for c in console_commands((DOCS / page).read_text()) if not c.text.startswith(SETUP)]


def test_the_pages_with_commands_are_found():
    assert {"user-guide.md", "maps.md", "parameters.md"} <= set(PAGES), PAGES
    texts = [c.text for c in commands("user-guide.md")]
    for name in ("fit", "check", "predict", "sweep", "plot", "info", "ledger"):
        assert any(t.startswith(f"dpdbscan {name} ") for t in texts), name
    # the data come from the variable, as in the README, never from its default spelt out
    for page in PAGES:
        assert all("../shared/data" not in c.text.split("#")[0] for c in commands(page)), page
    # the full-Cabs commands are the slow ones, and each page keeps quick ones
    for page in PAGES:
        marked = {c.text for c in commands(page) if c.slow}
        assert marked == {c.text for c in commands(page) if "cabs_sf" in c.text}, page
        assert len(marked) < len(commands(page)), page


@pytest.fixture
def clone(tmp_path):
    """A fresh clone of this repository, and the environment a reader has
    after following the README: dpdbscan on the PATH, DPDBSCAN_DATA set."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    data = data_dir().resolve()
    if not (data / "cabs_tiny.csv.gz").is_file():
        pytest.skip(f"shared data not found at {data} (set DPDBSCAN_DATA)")
    dest = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True)
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["DPDBSCAN_DATA"] = str(data)
    # this tree's library, whichever checkout the environment installed
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return dest, env


def _run(clone, page: str, slow: bool) -> None:
    dest, env = clone
    todo = [c for c in commands(page) if slow or not c.slow]
    if page in NEEDS:
        other, made = NEEDS[page]
        assert any(made in c.text for c in commands(page)), (page, made)
        todo = commands(other)[:1] + todo
        assert f"--out-dir {Path(made).parent}" in todo[0].text
    for c in todo:
        r = subprocess.run(["bash", "-c", c.text], cwd=dest, env=env, capture_output=True, text=True)
        assert r.returncode == 0, (page, c.text, r.stderr[-2000:])
        printed = (r.stdout + r.stderr).splitlines()
        for shown in c.shown:
            if shown.strip() in ("...", "…"):  # lines left out of what the page shows
                continue
            assert any(p.startswith(_shown_form(shown)) for p in printed), (page, c.text, shown, printed)
        # what a command writes where the page says it does
        for path in re.findall(r"(?:-o|--out-dir)\s+(\S+)", c.text):
            assert (dest / path).exists(), (page, c.text, path)


@pytest.mark.parametrize("page", PAGES)
def test_a_page_s_quick_commands_run_from_a_fresh_clone(clone, page):
    _run(clone, page, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if any(c.slow for c in commands(p))])
def test_a_page_s_commands_run_from_a_fresh_clone_full_cabs_too(clone, page):
    _run(clone, page, slow=True)
