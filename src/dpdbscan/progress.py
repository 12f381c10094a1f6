"""A tiny progress indicator on stderr for the command line.

It draws only when the stream is a terminal, so pipes, log files and CI stay
quiet; ``CI`` or ``DPDBSCAN_NO_PROGRESS`` in the environment switch it off too.
Two shapes: a bar when the total is known (bytes of a file being read) and a
spinner with the elapsed time when it is not (counting cells).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

_SPIN = "|/-\\"
_BAR = 24


def progress_wanted(stream: TextIO | None = None) -> bool:
    """True when ``stream`` (stderr by default) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    if os.environ.get("CI") or os.environ.get("DPDBSCAN_NO_PROGRESS"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed or odd stream
        return False


class Progress:
    """One line of progress, redrawn in place with a carriage return.

    Parameters
    ----------
    label : str
        What is happening ("reading cabs.csv.gz").
    total : float, optional
        Amount of work when known; then ``update(done)`` draws a bar.
    stream : text stream, default sys.stderr
    enabled : bool, optional
        Force drawing on or off; by default only on a terminal.
    interval : float, default 0.1
        Minimum seconds between redraws (a redraw per batch would flicker).
    """

    def __init__(self, label: str, total: float | None = None, *, stream: TextIO | None = None,
                 enabled: bool | None = None, interval: float = 0.1):
        self.label = label
        self.total = total
        self.stream = sys.stderr if stream is None else stream
        self.enabled = progress_wanted(self.stream) if enabled is None else bool(enabled)
        self.interval = interval
        self.start = time.monotonic()
        self._last = -1.0
        self._tick = 0
        self._width = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # ------------------------------------------------------------- drawing
    def _write(self, text: str) -> None:
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def update(self, done: float | None = None, *, force: bool = False) -> None:
        """Redraw with ``done`` units of ``total`` finished (or a spinner tick)."""
        if not self.enabled:
            return
        now = time.monotonic()
        with self._lock:
            if not force and now - self._last < self.interval:
                return
            self._last = now
            elapsed = now - self.start
            if self.total and done is not None:
                frac = min(max(done / self.total, 0.0), 1.0)
                fill = int(round(frac * _BAR))
                text = f"{self.label} [{'#' * fill}{'.' * (_BAR - fill)}] {frac:4.0%} {elapsed:5.1f}s"
            else:
                self._tick += 1
                text = f"{self.label} {_SPIN[self._tick % len(_SPIN)]} {elapsed:5.1f}s"
            self._write(text)

    def set_label(self, label: str) -> None:
        self.label = label
        self.update(force=True)

    # ------------------------------------------------------------- spinner
    def spin(self) -> "Progress":
        """Redraw from a background thread until :meth:`close` (for steps
        that report no progress of their own, such as counting cells)."""
        if self.enabled and self._thread is None:
            def run():
                while not self._stop.wait(self.interval):
                    self.update(force=True)

            self._thread = threading.Thread(target=run, name="dpdbscan-progress", daemon=True)
            self._thread.start()
        return self

    def close(self, message: str | None = None) -> None:
        """Stop, and leave ``message`` (or "<label> done") on the line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if not self.enabled:
            return
        with self._lock:
            elapsed = time.monotonic() - self.start
            self._write(message or f"{self.label}: done in {elapsed:.1f}s")
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False  # close() twice draws once

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self.enabled:
            # Leave the line clean before the error message is printed.
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
            self._write("")
            self.stream.write("\r")
            self.enabled = False
            return
        self.close()


__all__ = ["Progress", "progress_wanted"]
