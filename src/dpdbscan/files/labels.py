"""Writing labels (the output of ``predict``) as CSV."""

from __future__ import annotations

import csv
import io as _io
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from .formats import LABEL_COLUMN


def write_labels(
    path: Path | str,
    labels: ArrayLike,
    points: np.ndarray | None = None,
    names: Sequence[str] | None = None,
) -> None:
    """CSV of labels (``label`` column, -1 = noise), optionally after the points.

    ``path`` ``"-"`` writes to standard output.
    """
    labels = np.asarray(labels, dtype=np.int64)
    header_names = list(names or []) + [LABEL_COLUMN] if points is not None else [LABEL_COLUMN]
    buf = _io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(header_names)
    header = buf.getvalue().encode()
    out = sys.stdout.buffer if str(path) == "-" else open(path, "wb")  # noqa: SIM115
    try:
        out.write(header)
        try:
            import pyarrow as pa
            import pyarrow.csv as pacsv
        except ImportError:
            body = labels.reshape(-1, 1) if points is None else np.column_stack([points, labels])
            fmt = "%d" if points is None else ["%.17g"] * (body.shape[1] - 1) + ["%d"]
            np.savetxt(out, body, fmt=fmt, delimiter=",")
        else:
            cols = {} if points is None else {f"c{j}": points[:, j] for j in range(points.shape[1])}
            cols[LABEL_COLUMN] = labels
            pacsv.write_csv(pa.table(cols), out, write_options=pacsv.WriteOptions(include_header=False))
    finally:
        if out is not sys.stdout.buffer:
            out.close()
        else:
            out.flush()


__all__ = ["write_labels"]
