"""One output file written by a forked copy of the command, beside the rest.

``fit`` writes up to three files of one release, each a few tenths of a
second of Python (the picture most: matplotlib draws and encodes it while
holding the GIL). A thread would wait for the GIL; a copy of the process made
by ``fork`` has the release in memory already (copy on write, nothing
pickled) and draws on the machine's other core while the command writes the
JSON and GeoJSON.

The copy writes a temporary file beside the output and reports through a
pipe: the error it raised (pickled, so the command reports it as if it had
been raised at home) or success. The command renames the file into place
only once the release itself is safe (:func:`dpdbscan.cli.outputs.write_outputs`),
and removes it if anything failed, also when the copy died without a word.

Forking is done only where it is safe and useful: on Linux, with at least
two cores to run on, and when no other Python thread is running (a thread
holding a lock at the fork would leave the lock held for ever in the copy).
Elsewhere :func:`start` returns None and the caller writes the file itself.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from .common import Writer, temp_beside

#: Threads of the command that may be waited for before a fork: the
#: matplotlib import ``fit`` starts while reading (cli/fit.py).
JOINABLE = ("dpdbscan-preload",)


def can_fork() -> bool:
    """Whether :func:`start` may fork now: Linux, two cores or more, and no
    other Python thread alive once the joinable ones are done."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        if len(os.sched_getaffinity(0)) < 2:
            return False
    except (AttributeError, OSError):
        return False
    me = threading.current_thread()
    for t in threading.enumerate():
        if t is not me and t.name in JOINABLE:
            t.join()
    return threading.main_thread() is me and threading.active_count() == 1


@dataclass
class Forked:
    """A file being written by a forked copy: its process, the pipe it
    reports on, and the temporary file it writes."""

    pid: int
    pipe: int
    temp: Path
    done: bool = False

    def result(self) -> Path:
        """Wait for the copy; the temporary file it wrote, or raise what it
        raised (the temporary file removed)."""
        with os.fdopen(self.pipe, "rb") as f:
            report = f.read()
        _, status = os.waitpid(self.pid, 0)
        self.done = True
        code = os.waitstatus_to_exitcode(status)
        if code == 0 and report == b"ok" and self.temp.exists():
            return self.temp
        self.temp.unlink(missing_ok=True)
        if report and report != b"ok":
            raise _unpickled(report)
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        raise RuntimeError(f"the process drawing it {how}")

    def cancel(self) -> None:
        """Stop the copy (the command failed) and remove its file."""
        if not self.done:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            os.close(self.pipe)
            os.waitpid(self.pid, 0)
            self.done = True
        self.temp.unlink(missing_ok=True)


def _unpickled(report: bytes) -> BaseException:
    try:
        exc = pickle.loads(report)
    except Exception:  # noqa: BLE001 - an error that does not unpickle is still reported
        return RuntimeError(report.decode("utf-8", "replace"))
    return exc if isinstance(exc, BaseException) else RuntimeError(str(exc))


def start(path: Path, write: Writer) -> Forked | None:
    """``write(temp)`` in a forked copy of this process, ``temp`` a
    temporary file beside ``path``; None (nothing started) when
    :func:`can_fork` says no."""
    if not can_fork():
        return None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_beside(path, "fork")
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the copy: write, report, and leave without running any exit handler
        os.close(read_end)
        code = 1
        try:
            try:
                write(temp)
                report = b"ok"
                code = 0
            except BaseException as exc:  # noqa: BLE001 - reported to the command
                temp.unlink(missing_ok=True)
                report = _pickled(exc)
            view = memoryview(report)
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(code)
    os.close(write_end)
    return Forked(pid, read_end, temp)


def _pickled(exc: BaseException) -> bytes:
    """The error as the command can raise it again: pickled, or failing
    that its text in a RuntimeError."""
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
        return data
    except Exception:  # noqa: BLE001 - a local class, a lambda inside, ...
        return pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))


__all__ = ["Forked", "can_fork", "start", "JOINABLE"]
