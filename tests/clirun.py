"""Helpers shared by the command-line tests."""

from __future__ import annotations

import numpy as np

from dpdbscan.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    """``dpdbscan ARGV`` in this process: (exit status, stdout, stderr)."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def blob_points(seed: int = 0) -> np.ndarray:
    """Two Gaussian blobs of 1,500 points each, around (2, 2) and (7, 6)."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal([2, 2], 0.3, (1500, 2)), rng.normal([7, 6], 0.4, (1500, 2))])
