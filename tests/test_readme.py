"""The README's commands run as written, from a fresh clone (issue 23).

The README shows commands in ```console blocks: a line starting with ``$ ``
is a command (continued over lines ending in a backslash), the lines after
it are what it printed. Every command runs here, in order, in a ``git
clone`` of this repository, with the ``dpdbscan`` of the environment running
the tests on the PATH and the shared data where ``$DPDBSCAN_DATA`` says
(``../shared/data`` beside the repository by default), exactly as the README
tells a reader to set it. A command whose line carries ``# slow`` (the full
Cabs file) runs only under ``-m slow`` (``make test-slow``).

Each shown line of output must still have the form the command prints: the
text before its first digit starts a line the command printed (the numbers
move with the noise; the words must not), and a shown line without digits is
printed whole.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, data_dir

README = REPO / "README.md"


@dataclass
class Command:
    text: str
    shown: list[str]
    slow: bool


def console_commands(markdown: str) -> list[Command]:
    """The commands of the ```console blocks, each with the output shown under it."""
    commands: list[Command] = []
    for block in re.findall(r"^```console\n(.*?)^```", markdown, flags=re.M | re.S):
        lines = block.splitlines()
        if not any(line.startswith("$ ") for line in lines):
            continue  # commands listed without prompts (the README's quick start), or output alone
        i = 0
        current: Command | None = None  # output belongs to a command of its own block
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.startswith("$ "):
                if line.strip():
                    if current is None:
                        raise ValueError(f"a ```console block shows output before any command: {line[:60]!r}")
                    current.shown.append(line)
                continue
            parts = [line[2:]]
            while parts[-1].rstrip().endswith("\\") and i < len(lines):
                parts.append(lines[i])
                i += 1
            text = "\n".join(parts)
            current = Command(text, [], bool(re.search(r"#\s*slow\b", text)))
            commands.append(current)
    return commands


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.M | re.S)


COMMANDS = console_commands(README.read_text())


def test_the_readme_s_commands_are_found_and_use_the_data_variable():
    texts = [c.text for c in COMMANDS]
    assert len(COMMANDS) >= 8, texts
    assert texts[0].startswith("export DPDBSCAN_DATA=")
    for name in ("dpdbscan fit", "dpdbscan check", "dpdbscan sweep", "dpdbscan info", "dpdbscan predict"):
        assert any(t.startswith(name) for t in texts), name
    # data come from the variable, set once (its default is the only literal path)
    assert all("../shared/data" not in t for t in texts[1:]), texts
    assert sum(c.slow for c in COMMANDS) >= 1 and not all(c.slow for c in COMMANDS)


def _shown_form(line: str) -> str:
    """The part of a shown output line that must not change from run to run."""
    m = re.search(r"\d", line)
    return line if m is None else line[: m.start()]


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
    return dest, env


def _run_all(clone, commands: list[Command]) -> None:
    dest, env = clone
    for c in commands:
        r = subprocess.run(["bash", "-c", c.text], cwd=dest, env=env, capture_output=True, text=True)
        assert r.returncode == 0, (c.text, r.stderr[-2000:])
        printed = (r.stdout + r.stderr).splitlines()
        for shown in c.shown:
            form = _shown_form(shown)
            assert any(p.startswith(form) for p in printed), (c.text, shown, printed)


def test_the_readme_s_commands_run_from_a_fresh_clone(clone):
    _run_all(clone, [c for c in COMMANDS if not c.slow])
    dest, _ = clone
    assert (dest / "out" / "cabs_tiny.spans.json").is_file() and (dest / "labels.csv").is_file()


@pytest.mark.slow
def test_the_readme_s_slow_commands_run_from_a_fresh_clone(clone):
    # the export first: the slow commands read the data through it too
    _run_all(clone, [COMMANDS[0]] + [c for c in COMMANDS if c.slow])


def test_the_readme_s_python_runs(tmp_path, monkeypatch):
    """The Python block, with the X and X_new it names (two moons-like blobs
    in the box it gives)."""
    (block,) = [b for b in python_blocks(README.read_text()) if "DPDBSCAN(" in b]
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.3, (1000, 2)) for c in ([-1, -1], [1, 1])])
    monkeypatch.chdir(tmp_path)
    scope = {"X": X, "X_new": X[:10]}
    exec(compile(block, str(README), "exec"), scope)
    assert (tmp_path / "spans.json").is_file() and (tmp_path / "spans.geojson").is_file()
    assert scope["labels"].shape == (10,)


def test_a_console_block_s_output_belongs_to_a_command_of_its_own_block():
    """Output shown in a ```console block with no command before it is an
    error, and a block without commands is not the previous block's command's
    output (docs/parameters.md had a warning in a block of its own, read as
    the output of the forecast shown in the block above)."""
    ok = "```console\n$ echo a\na\n```\n\n```console\n$ echo b\nb\n```\n"
    assert [c.shown for c in console_commands(ok)] == [["a"], ["b"]]
    alone = "```console\n$ echo a\na\n```\n\n```console\nwarning: x\n```\n"
    assert [c.shown for c in console_commands(alone)] == [["a"]]
    with pytest.raises(ValueError, match="before any command"):
        console_commands("```console\nwarning: x\n$ echo a\n```\n")
    for page in [README, *sorted((README.parent / "docs").glob("*.md"))]:
        console_commands(page.read_text())  # every page's blocks start with a command
