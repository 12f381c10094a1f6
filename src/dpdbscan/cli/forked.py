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

A copy can also be forked early and left waiting (:func:`wait_for_work`):
``fit`` forks one before it reads the file, while the process is still
small (a fork copies its page tables, and every page the command writes
afterwards that the copy still shares is copied once), lets it import
matplotlib while the file is read and the release made (in its own process
it does not hold up the read or the fit for the GIL, as an import on a
thread does; after the read it was still importing when the release was
ready, the fit having become shorter than the import) and then sends it
the release to draw: pickled, its arrays out of band, and written to the
copy by a thread, so that the command writes its other files meanwhile
even when the copy is still importing. Its large arrays (the noisy
histogram: 35 MB on Cabs) go through a shared memory file the copy
inherited at the fork (:func:`shared_file`), which it maps instead of
reading them through the pipe; they are written there as soon as the
release is made (:meth:`Waiting.stage`). A part of the job can follow it
(:meth:`Forked.follow`), which the copy reads when it needs it
(:func:`next_part`): the spans' outlines, which the copy draws last.

Forking is done only where it is safe and useful: on Linux, with at least
two cores to run on, and when no other Python thread is running (a thread
holding a lock at the fork would leave the lock held for ever in the copy).
Elsewhere :func:`start` returns None and the caller writes the file itself.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import mmap
import os
import pickle
import signal
import struct
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .tempfiles import Writer, temp_beside

#: Threads of the command that may be waited for before a fork: the
#: matplotlib import ``fit`` starts while reading (cli/fit.py) and the
#: noise it draws ahead (:class:`dpdbscan.release.mechanism.NoiseAhead`).
JOINABLE = ("dpdbscan-preload", "dpdbscan-noise")


def fork_helps() -> bool:
    """Whether a forked copy can run beside the command: Linux (where
    ``fork`` is safe for this library's modules), two cores or more."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except (AttributeError, OSError):
        return False


def can_fork() -> bool:
    """Whether :func:`start` may fork now: :func:`fork_helps`, and no other
    Python thread alive once the joinable ones are done."""
    if not fork_helps():
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
    sender: threading.Thread | None = None
    #: the shared memory file the job's large arrays went through (closed with the copy)
    shared: int | None = None
    #: the pipe a part that follows the job goes through (:meth:`follow`), until it is sent
    orders: int | None = None

    def follow(self, part: Any) -> None:
        """Send the copy a part of its job that follows it (sent with
        ``more=True``: :meth:`Waiting.send`), which the copy's work reads
        with :func:`next_part` when it needs it: pickled here, written on a
        thread once the job is. A second call does nothing."""
        if self.orders is None:
            return
        fd, self.orders = self.orders, None
        try:
            data = pickle.dumps(part, protocol=5)
        except Exception as exc:  # noqa: BLE001 - the copy raises it where it needs the part
            data = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"), protocol=5)
        job = self.sender
        self.sender = threading.Thread(
            target=_send_after,
            args=(job, fd, [_LENGTH.pack(len(data)), data]),
            name="dpdbscan-send",
            daemon=True,
        )
        self.sender.start()

    def result(self) -> Path:
        """Wait for the copy; the temporary file it wrote, or raise what it
        raised (the temporary file removed). A part that was to follow the
        job and was not sent is not coming: the copy reads the end of the
        pipe instead (:func:`next_part` raises)."""
        self._end_orders()
        with os.fdopen(self.pipe, "rb") as f:
            report = f.read()
        _, status = os.waitpid(self.pid, 0)
        self.done = True
        self._join_sender()
        self._close_shared()
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
        self._end_orders()
        self._join_sender()
        self._close_shared()
        self.temp.unlink(missing_ok=True)

    def _end_orders(self) -> None:
        # no part follows after all: the pipe is closed once the job is written
        if self.orders is not None:
            fd, self.orders = self.orders, None
            job = self.sender
            self.sender = threading.Thread(target=_send_after, args=(job, fd, []), daemon=True)
            self.sender.start()

    def _close_shared(self) -> None:
        if self.shared is not None:
            os.close(self.shared)
            self.shared = None

    def _join_sender(self) -> None:
        # the copy has left: the thread sending it the job ends too (at the
        # latest on the broken pipe)
        if self.sender is not None:
            self.sender.join()
            self.sender = None


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
    _flush_std()
    pid = _fork()
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
            _write_all(write_end, report)
        finally:
            os._exit(code)
    os.close(write_end)
    return Forked(pid, read_end, temp)


@dataclass
class Waiting:
    """A forked copy waiting for its one job (:func:`wait_for_work`): its
    process, the pipe it takes orders from and the pipe it reports on."""

    pid: int
    orders: int
    reports: int
    started: bool = False
    closed: bool = False
    #: forked at the command's start, importing its first part at once
    #: (:func:`wait_for_work`'s ``early``)
    early: bool = False
    #: a shared memory file both have open (:func:`shared_file`), or None
    shared: int | None = None
    #: the arrays :meth:`stage` is writing into the shared file, each with its offset
    staged: list[tuple[int, memoryview]] = field(default_factory=list)
    #: the thread writing them (joined before the job's pipe is written)
    stager: _Stager | None = None

    def go(self) -> None:
        """Let the copy prepare (import what it needs) now."""
        if not self.started:
            self.started = True
            os.write(self.orders, b"g")

    def send(self, payload: Any, path: Path, more: bool = False) -> Forked:
        """Hand the copy its job: ``work(payload, temp)``, ``temp`` a
        temporary file beside ``path``; its :meth:`Forked.result` says how
        it went. ``more``: a part of the job follows (:meth:`Forked.follow`),
        which the work reads with :func:`next_part`.

        The job is pickled here, its arrays out of band (not copied into the
        pickle: :func:`_packed`; the large ones through the shared memory
        file), and written to the copy by a thread: the copy may still be
        importing what it needs, and the command goes on with its other
        files meanwhile instead of waiting for it to read. The payload must
        not change until :meth:`Forked.result` (a release does not)."""
        self.go()
        temp = temp_beside(Path(path), "fork")
        self.closed = True
        try:
            parts, shared = _packed((payload, temp), self.shared is not None, self.staged)
        except BaseException:
            os.close(self.orders)
            if self.stager is not None:
                self.stager.join()
            Forked(self.pid, self.reports, temp, shared=self.shared).cancel()
            raise
        sender = threading.Thread(
            target=_send_parts,
            args=(self.orders, parts, self.shared, shared, self.stager, not more),
            name="dpdbscan-send",
            daemon=True,
        )
        sender.start()
        orders = self.orders if more else None
        return Forked(self.pid, self.reports, temp, sender=sender, shared=self.shared, orders=orders)

    def stage(self, part: Any) -> None:
        """Start writing the large arrays of ``part`` (those of
        :data:`_SHARED_MIN` bytes or more that pickling leaves out of band,
        such as a release's noisy histogram) into the shared memory file
        now, on a thread, before the job that holds them is sent: there
        they then go as their offsets alone (:func:`_packed`). ``fit``
        stages the release as soon as it is made, so that its arrays (40 MB
        on Cabs, 0.03-0.04 s to write, outside the GIL) are written on the
        other core while the command computes the spans' figures, rather
        than after the send, on the picture's path, and beside the
        GeoJSON's Python for the GIL. The arrays must not change until the job is
        drawn (a release's do not). Once only, before :meth:`send`; nothing
        without a shared file."""
        if self.shared is None or self.closed or self.stager is not None:
            return
        buffers: list[pickle.PickleBuffer] = []
        pickle.dumps(part, protocol=5, buffer_callback=buffers.append)
        end = 0
        for b in buffers:
            view = b.raw()
            if view.nbytes >= _SHARED_MIN:
                self.staged.append((end, view))
                end += -(-view.nbytes // _ALIGN) * _ALIGN
        if self.staged:
            self.stager = _Stager(self.shared, self.staged)

    def cancel(self) -> None:
        """No job after all: the copy leaves without doing anything."""
        if self.closed:
            return
        self.closed = True
        if self.stager is not None:
            self.stager.join()  # it writes into the shared file closed below
        try:
            os.kill(self.pid, signal.SIGTERM)  # it may be importing: no need to wait for that
        except ProcessLookupError:
            pass
        os.close(self.orders)
        os.close(self.reports)
        if self.shared is not None:
            os.close(self.shared)
        os.waitpid(self.pid, 0)


#: The copy :func:`wait_for_work` left waiting, until :func:`take_waiting`.
_waiting: Waiting | None = None


def wait_for_work(
    prepare: Callable[[], object],
    work: Callable[[Any, Path], object],
    early: Callable[[], object] | None = None,
) -> Waiting | None:
    """Fork a copy that waits: on :meth:`Waiting.go` it runs ``prepare()``
    (an error there is left for ``work`` to meet), then on
    :meth:`Waiting.send` ``work(payload, temp)``. ``early()``, if given,
    runs in the copy at once, before it waits for :meth:`Waiting.go` (an
    error there is left for ``prepare``). The copy is kept for
    :func:`take_waiting` (one at a time: an older one is cancelled). None
    when :func:`can_fork` says no."""
    global _waiting
    cancel_waiting()
    if not can_fork():
        return None
    take_orders, give_orders = os.pipe()
    read_reports, write_reports = os.pipe()
    shared = shared_file()
    _flush_std()
    pid = _fork()
    if pid == 0:  # the copy
        code = 1
        try:
            os.close(give_orders)
            os.close(read_reports)
            code = _serve(os.fdopen(take_orders, "rb"), write_reports, prepare, work, early, shared)
        finally:
            os._exit(code)
    os.close(take_orders)
    os.close(write_reports)
    _waiting = Waiting(pid, give_orders, read_reports, early=early is not None, shared=shared)
    return _waiting


def shared_file() -> int | None:
    """An empty anonymous shared memory file (Linux's ``memfd_create``),
    opened before a fork so that both processes have it: the command later
    writes a job's large arrays into it and the copy maps them, instead of
    reading them through the pipe (35 MB on Cabs: 550 hand-overs of the
    pipe's 64 kB, and a zeroed buffer to copy them into). None where there
    is none (the arrays then go through the pipe)."""
    create = getattr(os, "memfd_create", None)
    if create is None:
        return None
    try:
        return int(create("dpdbscan-job", getattr(os, "MFD_CLOEXEC", 1)))
    except OSError:
        return None


def _serve(
    orders,
    reports: int,
    prepare: Callable[[], object],
    work: Callable[[Any, Path], object],
    early: Callable[[], object] | None = None,
    shared: int | None = None,
) -> int:
    """The waiting copy's life: its exit status (0 also when no job came).

    Its steps (imports) run without Python's cyclic garbage collector
    (:func:`collector_paused`): what they make lives as long as the copy."""
    with collector_paused():
        for step, wait in ((early, False), (prepare, True)):
            if wait and orders.read(1) != b"g":
                return 0
            try:
                if step is not None:
                    step()
            except Exception:  # noqa: BLE001 - met again, and reported, by the work
                pass
    try:
        payload, temp = _unpacked(orders, shared)
    except EOFError:
        return 0
    global _orders
    _orders = orders
    code = 1
    try:
        work(payload, temp)
        report, code = b"ok", 0
    except BaseException as exc:  # noqa: BLE001 - reported to the command
        temp.unlink(missing_ok=True)
        report = _pickled(exc)
    _write_all(reports, report)
    return code


#: In a waiting copy at work: the pipe its job came through (:func:`next_part`).
_orders: Any = None


def next_part() -> Any:
    """In a waiting copy at work: the part of its job that the command
    sends after it (:meth:`Forked.follow`), waiting for it. Raises
    EOFError when none is coming (the command closed the pipe), and what
    the command could not pickle, as the copy's own error."""
    if _orders is None:
        raise EOFError("no part of the job follows here")
    part = pickle.loads(_read_exactly(_orders, _read_length(_orders)))
    if isinstance(part, BaseException):
        raise part
    return part


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off meanwhile, then on again, with
    what was made meanwhile (and before) frozen (:func:`gc.freeze`): never
    collected, nor looked at by later collections.

    For imports in a short-lived process: module-level objects live as long
    as the process, yet while they are made the collector runs every 700
    new objects and now and then walks all of them (the command's imports
    and those of its drawing copy took about 330 collections, 0.09 s of CPU,
    for nothing found worth freeing). Frozen, they are not walked again, and
    a copy forked afterwards does not write to their pages when it collects."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view) :]


def _packed(
    job: Any, share: bool = False, staged: Sequence[tuple[int, memoryview]] = ()
) -> tuple[list[bytes | memoryview], list[tuple[int, memoryview]]]:
    """``job`` as the pieces :func:`_unpacked` reads: its pickle (protocol
    5) with every large array left out of band, then for each array its
    length and where it is: after it in the pipe (:data:`_INLINE`), or,
    with ``share``, at an offset of the shared memory file when it is
    :data:`_SHARED_MIN` bytes or more. A release holds its noisy histogram,
    tens of MB: sent out of band it is neither copied into the pickle here
    nor out of it in the copy. ``staged``: arrays already written into the
    shared file (:meth:`Waiting.stage`), each with its offset; an array of
    the job that is one of them (the same object, whole) goes as that
    offset. Returns the pipe's pieces and the other arrays to write into
    the shared file first, each with its offset (after the staged ones)."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(job, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    parts: list[bytes | memoryview] = [_LENGTH.pack(len(views)), _LENGTH.pack(len(data)), data]
    shared: list[tuple[int, memoryview]] = []
    end = _staged_end(staged)
    for v in views:
        at = _staged_at(v, staged) if share else None
        if at is not None:
            parts += [_LENGTH.pack(v.nbytes), _LENGTH.pack(at)]
        elif share and v.nbytes >= _SHARED_MIN:
            shared.append((end, v))
            parts += [_LENGTH.pack(v.nbytes), _LENGTH.pack(end)]  # see _inlined
            end += -(-v.nbytes // _ALIGN) * _ALIGN
        else:
            parts += [_LENGTH.pack(v.nbytes), _LENGTH.pack(_INLINE), v]
    return parts, shared


def _staged_end(staged: Sequence[tuple[int, memoryview]]) -> int:
    """The first offset of the shared file after the ``staged`` arrays."""
    return max((at + -(-v.nbytes // _ALIGN) * _ALIGN for at, v in staged), default=0)


def _staged_at(view: memoryview, staged: Sequence[tuple[int, memoryview]]) -> int | None:
    """The offset of ``view`` (a job's out-of-band array) among the
    ``staged`` arrays: one staged whole from the same object; else None."""
    for at, v in staged:
        if view.obj is v.obj and view.nbytes == v.nbytes:
            return at
    return None


class _Stager(threading.Thread):
    """Writes arrays into a shared memory file (:meth:`Waiting.stage`);
    ``failed`` once done if there was no room (:func:`_send_parts` then
    sends them through the pipe)."""

    def __init__(self, fd: int, arrays: list[tuple[int, memoryview]]) -> None:
        super().__init__(name="dpdbscan-stage", daemon=True)
        self.fd, self.arrays, self.failed = fd, arrays, False
        self.start()

    def run(self) -> None:
        try:
            _write_shared(self.fd, self.arrays)
        except OSError:
            self.failed = True


#: Arrays of at least this many bytes go through the shared memory file.
_SHARED_MIN = 1 << 20
#: Their offsets there are multiples of this (any array's alignment).
_ALIGN = 4096
#: The offset word of an array that follows in the pipe.
_INLINE = (1 << 64) - 1


def _send_parts(
    fd: int,
    parts: list[bytes | memoryview],
    shared: int | None = None,
    arrays: list[tuple[int, memoryview]] | None = None,
    stager: _Stager | None = None,
    close: bool = True,
) -> None:
    """Write the large arrays into the shared memory file ``shared`` at
    their offsets, then the pieces to the copy, and close the pipe (on a
    thread: the writes release the GIL). A copy that left early breaks the
    pipe: what it says, or its death, is reported by :meth:`Forked.result`.

    All pieces go in one gathering write (``os.writev``), which returns only
    once the copy has read them all: a write per piece (45 for the Cabs
    release, most of them 8-byte lengths) took the GIL back after each, and
    the command's main thread, writing the GeoJSON in Python meanwhile, held
    it for up to the switch interval each time, so the copy got the release
    only once the GeoJSON was written."""
    try:
        if stager is not None:
            stager.join()  # the staged arrays are in the shared file before the copy maps it
            if stager.failed:
                parts = _inlined(parts, stager.arrays + (arrays or []))
                arrays = None
        if arrays:
            assert shared is not None
            try:
                _write_shared(shared, arrays)
            except OSError:  # no room for it (a small /dev/shm): through the pipe after all
                parts = _inlined(parts, arrays + (stager.arrays if stager is not None else []))
        _writev_all(fd, [memoryview(p).cast("B") for p in parts])
    except OSError:
        pass
    finally:
        if close:
            os.close(fd)


def _send_after(job: threading.Thread | None, fd: int, parts: list[bytes]) -> None:
    """Once the thread ``job`` has sent the job (and left the pipe
    open), write ``parts`` (a part that follows, or nothing) and close it."""
    if job is not None:
        job.join()
    try:
        _writev_all(fd, [memoryview(p).cast("B") for p in parts])
    except OSError:
        pass
    finally:
        os.close(fd)


def _inlined(
    parts: list[bytes | memoryview], arrays: list[tuple[int, memoryview]]
) -> list[bytes | memoryview]:
    """The pieces of :func:`_packed` with the arrays it put in the shared
    file sent in the pipe instead, each after its length and :data:`_INLINE`."""
    at = {_LENGTH.pack(offset): v for offset, v in arrays}
    inline = _LENGTH.pack(_INLINE)
    out: list[bytes | memoryview] = list(parts[:3])
    i = 3
    while i < len(parts):
        length, where = parts[i], parts[i + 1]
        if where == inline:  # its length, the marker and its bytes
            out += [length, where, parts[i + 2]]
            i += 3
        else:  # its length and its offset in the shared file
            out += [length, inline, at[bytes(where)]]
            i += 2
    return out


def _write_shared(fd: int, arrays: list[tuple[int, memoryview]]) -> None:
    """Size the shared memory file for ``arrays`` and write each at its offset."""
    last, view = arrays[-1]
    os.ftruncate(fd, last + view.nbytes)
    for offset, v in arrays:
        b = v.cast("B")
        done = 0
        while done < b.nbytes:
            done += os.pwrite(fd, b[done:], offset + done)


def _writev_all(fd: int, views: list[memoryview]) -> None:
    """Write ``views`` in order with as few ``writev`` calls as the system
    allows (at most :data:`_IOV_MAX` pieces a call; a call may also write
    part of them, when a signal comes)."""
    views = [v for v in views if v.nbytes]
    while views:
        n = os.writev(fd, views[:_IOV_MAX])
        while views and n >= views[0].nbytes:
            n -= views[0].nbytes
            views.pop(0)
        if n:
            views[0] = views[0][n:]


#: Pieces a ``writev`` call takes at most (POSIX guarantees 16; Linux 1024).
_IOV_MAX = max(16, min(1024, os.sysconf("SC_IOV_MAX"))) if hasattr(os, "sysconf") else 16


def _unpacked(orders, shared: int | None = None) -> Any:
    """The job :func:`_packed` made, read from the pipe ``orders``; its
    arrays in the shared memory file ``shared`` are mapped (copy on write:
    the job's arrays are the copy's own to change, as when read), not read."""
    n_buffers = _read_length(orders)
    data = _read_exactly(orders, _read_length(orders))
    buffers: list[bytearray | memoryview] = []
    mapped: memoryview | None = None
    for _ in range(n_buffers):
        n, where = _read_length(orders), _read_length(orders)
        if where == _INLINE:
            buffers.append(_read_exactly(orders, n))
            continue
        if shared is None:
            raise EOFError("the job's arrays are in a shared memory file this copy does not have")
        if mapped is None:
            mapped = memoryview(mmap.mmap(shared, os.fstat(shared).st_size, access=mmap.ACCESS_COPY))
        buffers.append(mapped[where : where + n])
    return pickle.loads(data, buffers=buffers)


def _read_length(orders) -> int:
    return int(_LENGTH.unpack(_read_exactly(orders, _LENGTH.size))[0])


def _read_exactly(orders, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = orders.readinto(view[got:])
        if not k:
            raise EOFError("the command closed the pipe before the whole job came")
        got += k
    return buf


#: Lengths in the job sent to a waiting copy: unsigned 64-bit, little-endian.
_LENGTH = struct.Struct("<Q")


def take_waiting() -> Waiting | None:
    """The copy left waiting, now the caller's to send or cancel (None if
    there is none)."""
    global _waiting
    waiting, _waiting = _waiting, None
    return waiting


def peek_waiting() -> Waiting | None:
    """The copy left waiting, still waiting (None if there is none)."""
    return _waiting


def cancel_waiting() -> None:
    """Cancel the copy left waiting, if any (the command ends without
    drawing, or failed before it could)."""
    waiting = take_waiting()
    if waiting is not None:
        waiting.cancel()


atexit.register(cancel_waiting)


def _flush_std() -> None:
    """Flush standard output and error before a fork (what is buffered
    would otherwise be written twice); either may be None (closed when the
    command started)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def _fork() -> int:
    """``os.fork()``, without the DeprecationWarning Python 3.12 and later
    give in a process with several threads: :func:`can_fork` has found no
    other Python thread, and the ones the warning also counts are native
    pools (OpenBLAS's, started with numpy) that wait idle between calls and
    set themselves up again in a forked process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _pickled(exc: BaseException) -> bytes:
    """The error as the command can raise it again: pickled, or failing
    that its text in a RuntimeError."""
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
        return data
    except Exception:  # noqa: BLE001 - a local class, a lambda inside, ...
        return pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))


__all__ = [
    "Forked",
    "Waiting",
    "can_fork",
    "fork_helps",
    "start",
    "wait_for_work",
    "take_waiting",
    "peek_waiting",
    "cancel_waiting",
    "JOINABLE",
    "shared_file",
    "collector_paused",
    "next_part",
]
