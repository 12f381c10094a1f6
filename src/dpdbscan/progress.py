"""Progress bars on standard error for the command line, drawn by tqdm.

A bar shows only when standard error is a terminal, so pipes, log files and
CI stay quiet; ``CI`` or ``DPDBSCAN_NO_PROGRESS`` in the environment switch it
off too. tqdm is a dependency of the package (pyproject.toml), not an optional
one: a bar asked for is a bar drawn.
"""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from typing import Any


def progress_wanted(stream: Any = None) -> bool:
    """True when ``stream`` (stderr by default) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    if os.environ.get("CI") or os.environ.get("DPDBSCAN_NO_PROGRESS"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed or odd stream
        return False


class _Silent:
    """The part of tqdm's interface the package uses, doing nothing."""

    n: float = 0

    def update(self, n: float = 1) -> None:
        self.n += n

    def set_description(self, desc: str) -> None:
        pass


def progress(desc: str, total: float | None = None, *, enabled: bool | None = None, unit: str = "B") -> Any:
    """A context manager yielding a tqdm bar (or a silent stand-in)."""
    if enabled is None:
        enabled = progress_wanted()
    if not enabled:
        return nullcontext(_Silent())
    # imported here: about 0.1 s that a command in a pipe or a script never needs
    from tqdm import tqdm

    return tqdm(
        desc=desc, total=total, unit=unit, unit_scale=True, leave=True, file=sys.stderr, dynamic_ncols=True
    )


__all__ = ["progress", "progress_wanted"]
