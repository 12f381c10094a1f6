"""Temporary files beside an output, for writing it atomically: stdlib only,
so that :mod:`dpdbscan.cli.forked` loads before the command's own imports
(:mod:`dpdbscan.cli.early`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

#: Writes one output file at the path it is given.
Writer = Callable[[Path], object]


def temp_beside(path: Path, tag: str = "") -> Path:
    """A temporary name for ``path``: the same folder (a rename is atomic
    there) and the same suffix (matplotlib reads it), named after this
    process (and ``tag``) so that two writers never share one."""
    path = Path(path)
    return path.with_name(f".{path.stem}.tmp-{os.getpid()}{tag and '-' + tag}{path.suffix}")


__all__ = ["Writer", "temp_beside"]
