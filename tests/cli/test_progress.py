"""A fit on a terminal is never silent: a ticking bar says the stage the fit
is in and the time so far, also on a pseudo-terminal that reports no size
(tqdm drew nothing at all there: the automatic fit of a T-Drive-sized file
ran 41 s in silence)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import REPO

pty = pytest.importorskip("pty")


def _read_all(fd: int, proc: subprocess.Popen, timeout: float = 120.0) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out


def test_an_automatic_fit_on_an_unsized_pseudo_terminal_shows_its_stages(tmp_path):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.3, (4000, 2)) for c in ((-1, -1), (1, 1))])
    np.savetxt(tmp_path / "p.csv", X, delimiter=",", header="x,y", comments="")
    master, slave = pty.openpty()  # never sized: it reports 0 columns and 0 lines
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "DPDBSCAN_NO_PROGRESS")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpdbscan", "fit", str(tmp_path / "p.csv"), "--header", "--bounds", "-3", "3",
         "--eps", "auto", "--min-samples", "auto", "--out-dir", str(tmp_path / "out"), "--no-png"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env, cwd=tmp_path,
    )
    os.close(slave)
    try:
        text = _read_all(master, proc).decode("utf-8", "replace")
    finally:
        os.close(master)
        proc.wait(timeout=60)
    assert proc.returncode == 0
    assert "fitting: counting cells and adding noise" in text, text[-2000:]
    assert "fitting: the MinPts ladder at eps 1 of " in text and "fitting: done" in text
    assert "[00:0" in text  # the time so far


def test_a_fit_in_a_pipe_stays_quiet(tmp_path):
    X = np.random.default_rng(1).normal(0, 0.3, (2000, 2))
    np.savetxt(tmp_path / "p.csv", X, delimiter=",", header="x,y", comments="")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "DPDBSCAN_NO_PROGRESS")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, "-m", "dpdbscan", "fit", str(tmp_path / "p.csv"), "--header", "--bounds", "-3", "3",
         "--eps", "0.2", "--min-samples", "10", "--out-dir", str(tmp_path / "out"), "--no-png"],
        capture_output=True, text=True, env=env,
    )
    assert r.returncode == 0 and "fitting" not in r.stderr
