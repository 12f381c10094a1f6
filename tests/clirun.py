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


def write_csv(path, X: np.ndarray, label=None):
    """``X`` as a CSV with header ``x,y`` (and a ``label`` column from
    ``label(x, y)`` when given), every value written exactly; returns ``path``."""
    head = "x,y" if label is None else "x,y,label"
    rows = [f"{float(a)!r},{float(b)!r}" + ("" if label is None else f",{label(a, b)}") for a, b in X]
    path.write_text("\n".join([head, *rows]) + "\n")
    return path
