"""Progress bars on standard error for the command line, drawn by tqdm.

A bar shows only when standard error is a terminal, so pipes, log files and
CI stay quiet; ``CI`` or ``DPDBSCAN_NO_PROGRESS`` in the environment switch it
off too. tqdm is a dependency of the package (pyproject.toml), not an optional
one: a bar asked for is a bar drawn.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
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


def progress(
    desc: str,
    total: float | None = None,
    *,
    enabled: bool | None = None,
    unit: str = "B",
    ticking: bool = False,
) -> Any:
    """A context manager yielding a tqdm bar (or a silent stand-in).

    ``ticking``: a bar for work without a count (a fit): it shows the stage
    the work is in (:func:`stage`) and the time so far, redrawn every half
    second, so a long fit is never silent on a terminal."""
    if enabled is None:
        enabled = progress_wanted()
    if not enabled:
        return nullcontext(_Silent())
    # imported here: about 0.1 s that a command in a pipe or a script never needs
    from tqdm import tqdm

    if ticking:
        return _ticking(desc)
    return tqdm(desc=desc, total=total, unit=unit, unit_scale=True, leave=True, file=sys.stderr, **_width())


def _width() -> dict:
    """tqdm's size: the terminal's, followed as it changes; 80 x 20 when the
    terminal reports none (a pseudo-terminal nobody sized reports 0 x 0,
    and tqdm then draws nothing at all: a fit under ``script`` was silent)."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        size = os.terminal_size((0, 0))
    return {"dynamic_ncols": True} if size.columns > 0 and size.lines > 0 else {"ncols": 80, "nrows": 20}


#: The ticking bar of the running fit, for :func:`stage` (None: no bar).
_CURRENT: ContextVar[Any] = ContextVar("dpdbscan_progress_bar", default=None)

#: Seconds between two redraws of a ticking bar.
TICK = 0.5


@contextmanager
def _ticking(desc: str):
    from tqdm import tqdm

    bar = tqdm(desc=desc, bar_format="{desc} [{elapsed}]", leave=True, file=sys.stderr, **_width())
    bar.dpdbscan_desc = desc
    done = threading.Event()

    def tick() -> None:
        while not done.wait(TICK):
            bar.refresh()

    thread = threading.Thread(target=tick, name="dpdbscan-progress", daemon=True)
    token = _CURRENT.set(bar)
    thread.start()
    try:
        yield bar
    finally:
        done.set()
        thread.join()
        _CURRENT.reset(token)
        bar.set_description(f"{desc}: done", refresh=False)
        bar.close()


def stage(text: str) -> None:
    """Say on the running fit's bar what it is doing now ("counting cells",
    "the MinPts ladder at eps 3 of 7"); nothing without a bar. Public words
    only: a stage never quotes a count or a value of the data."""
    bar = _CURRENT.get()
    if bar is not None:
        bar.set_description(f"{bar.dpdbscan_desc}: {text}", refresh=True)


__all__ = ["TICK", "progress", "progress_wanted", "stage"]
