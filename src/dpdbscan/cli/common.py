"""Helpers shared by the commands: parsing option values, reading points,
printing warnings once.

Conventions of the command line: standard output carries only the release
(summaries, tables, labels a user asked for); standard error carries progress
and local notes for the data owner, some of which are computed from the
private data (how many rows were read or clipped) and are therefore not part
of the release. Bad input gives one line ``dpdbscan COMMAND: error: ...`` on
stderr (:func:`error_prefix`) and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..exceptions import PrivacyLeakWarning, PrivateNoteWarning, WeakPrivacyWarning
from ..files import ReadOptions
from ..geometry import projection
from ..model import SpanModel, load_model
from ..prepare.box import read_length
from ..prepare.door import open_points
from ..prepare.notes import PRIVATE, Notes
from .tempfiles import Writer, temp_beside

EXIT_OK, EXIT_PARTIAL, EXIT_BAD_INPUT = 0, 1, 2


def keep_freed_memory() -> bool:
    """Ask glibc's allocator to reuse freed memory instead of returning it.

    By default glibc maps every large block (numpy arrays of more than a
    few MB) afresh from the kernel and unmaps it when freed, so the next
    array faults its pages in again. On the virtual machines this tool was
    measured on, first touching a page costs 1-3 ms per MB, more than the
    arithmetic done on it: a fit of the full Cabs file allocates well over a
    GB of temporaries. A command runs once and exits, so it keeps what it
    freed (peak memory is unchanged; the memory is returned at exit). Only
    the ``dpdbscan`` process itself calls this (not ``main(argv)`` in a
    library or test process). Returns whether the allocator took it (glibc
    only; elsewhere nothing happens).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    # blocks up to 1 GB come from the heap and freed ones stay there for reuse
    ok = mallopt(M_MMAP_THRESHOLD, 1 << 30) == 1
    return ok and mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1


def end_process(code: int) -> int:
    """End the command's process with status ``code`` now, without the
    interpreter's teardown; returns ``code`` only when it cannot.

    A fit of a large file leaves hundreds of MB of arrays and thousands of
    objects behind, and Python frees them one by one at exit (on the Cabs
    file, at load 8-15 on 2 cores, 0.1-0.25 s of wall time after the last
    file was written). The files are all written and closed
    by then; what the normal exit would still do is done here first: the
    exit handlers run (:mod:`atexit`: a waiting drawing copy cancelled,
    temporary folders removed, loggers flushed) and standard output and
    error are flushed. Only the ``dpdbscan`` process itself calls this
    (``main()`` without arguments), and only when no other thread runs:
    with one (a Dask cluster's, a pool not shut down) the normal exit, which
    waits for it, is left to do its work, and so it is under a profiler or
    a tracer (``python -m cProfile``, coverage), which write their results
    then. A flush that fails (a reader
    closed the pipe) also leaves the exit to Python, which reports it as
    it always has.
    """
    import atexit
    import threading

    if sys.getprofile() is not None or sys.gettrace() is not None:
        return code  # a profiler or coverage writes its results in the normal exit
    me = threading.current_thread()
    if me is not threading.main_thread() or any(t is not me and not t.daemon for t in threading.enumerate()):
        return code
    if not _flushed():
        return code  # Python's own exit says it (and sets the status)
    atexit._run_exitfuncs()
    # after the handlers there is no way back (the normal exit would run them again)
    os._exit(code if _flushed() else code or 120)  # 120: Python's status when the last flush fails


def _flushed() -> bool:
    """Flush standard output and error; whether both went through."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


#: What the option helpers add arguments to: a parser or one of its groups.
ArgTarget = argparse.ArgumentParser | argparse._ArgumentGroup


def atomic_write(path: Path, write: Writer) -> None:
    """``write(tmp_path)``, then rename onto ``path``: readers never see a
    half-written file, and a failure leaves any older file in place."""
    tmp = write_temp(path, write)
    try:
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_temp(path: Path, write: Writer) -> Path:
    """``write(tmp_path)`` to a temporary file beside ``path`` and return it,
    for a rename onto ``path`` later (``os.replace``); removed on failure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(path)
    try:
        write(tmp)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return tmp


def check_writable(paths: Iterable[Path | str | None], source: str | None = None) -> None:
    """Fail now, before any budget is spent, if an output cannot be written:
    its folder cannot be made or written to, it is a folder, or it is the
    input file."""
    src = None
    if source and source != "-" and not any(c in source for c in "*?["):
        src = Path(source).resolve()
    for p in paths:
        if p is None:
            continue
        p = Path(p)
        if src is not None and p.resolve() == src:
            raise ValueError(f"output {p} would overwrite the input file")
        if p.is_dir():
            raise ValueError(f"output {p} is a folder, not a file")
        # Folders that do not exist yet are made when the outputs are written
        # (after the release): a command that fails first leaves none behind.
        # Probe the nearest folder that exists: if a file can be made there,
        # so can the missing folders below it.
        parent = p.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise ValueError(f"cannot write outputs to {p.parent}: {parent} is not a folder")
        probe = parent / f".{p.name}.probe-{os.getpid()}"
        try:
            probe.write_bytes(b"")
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write outputs to {p.parent} ({exc.strerror})") from None
        finally:
            if probe.exists():
                probe.unlink()
        if p.exists() and not os.access(p, os.W_OK):
            raise ValueError(f"output {p} exists and is not writable")


class WarningSink:
    """Collect warnings and print each distinct one once, as one line."""

    def __init__(self, err: TextIO) -> None:
        self.err, self.seen = err, set[str]()
        self._cm = warnings.catch_warnings(record=True)
        self._log: list = []

    def __enter__(self) -> WarningSink:
        # the recording list itself: it starts empty, so ``... or []`` would
        # swap in a fresh list and drop every warning
        log = self._cm.__enter__()
        assert log is not None  # catch_warnings(record=True) returns its list
        self._log = log
        warnings.simplefilter("always")
        return self

    def flush(self) -> None:
        """Print the warnings recorded since the last flush, each distinct one once."""
        for w in self._log:
            text = " ".join(str(w.message).split())
            if text in self.seen:
                continue
            self.seen.add(text)
            loud = issubclass(w.category, (PrivacyLeakWarning, WeakPrivacyWarning))
            # a note computed from the points themselves: for the data owner only
            mark = f"{PRIVATE} " if issubclass(w.category, PrivateNoteWarning) else ""
            print(f"{mark}dpdbscan: {'PRIVACY WARNING' if loud else 'warning'}: {text}", file=self.err)
        self._log.clear()

    def __exit__(self, *exc: Any) -> None:
        self.flush()
        self._cm.__exit__(*exc)


# --------------------------------------------------------------------------- #
# parsing helpers


def _tokens(values) -> list[str]:
    """``["1,2", "3"]`` -> ``["1", "2", "3"]`` (commas or spaces both work)."""
    return [t for v in values or [] for t in str(v).replace(",", " ").split()]


def floats(values: Iterable[object] | None, option: str) -> list[float]:
    """The numbers of an option's values (commas or spaces between them)."""
    out = []
    for t in _tokens(values):
        try:
            out.append(float(t))
        except ValueError:
            raise ValueError(f"{option} must be numbers, got {t!r}") from None
    return out


def column_tokens(values: Iterable[object] | None) -> list[str] | None:
    """Column names may contain spaces, so only commas split an argument."""
    toks = [t.strip() for v in values or [] for t in str(v).split(",") if t.strip()]
    return toks or None


#: Extensions an input's name loses to name the outputs (``trips.csv.gz`` -> ``trips``).
_INPUT_SUFFIXES = ".gz .csv .tsv .txt .parquet .pq .npy .sqlite .sqlite3 .db .gpkg .geojson .gpx".split()


def stem(path: str) -> str:
    if path == "-":
        return "stdin"
    if any(c in path for c in "*?["):
        return "spans"
    name = Path(path).name
    for suffix in _INPUT_SUFFIXES:
        name = name[: -len(suffix)] if name.lower().endswith(suffix) else name
    return name or "spans"


def error_prefix(command: str | None) -> str:
    """The start of every error line: ``dpdbscan fit: error:`` (argparse's
    own form, whose ``prog`` is ``dpdbscan fit``), or ``dpdbscan: error:``
    before a command is known."""
    return f"dpdbscan {command}: error:" if command else "dpdbscan: error:"


def one_line(exc: BaseException) -> str:
    """An exception as the text after :func:`error_prefix`: one line, without
    Python's ``[Errno 13]`` prefix for an OS error."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc.strerror)
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


# --------------------------------------------------------------------------- #
# models, points and pictures


def _clean(exc: BaseException, limit: int = 160) -> str:
    """First line of an error, printable and short. Only for messages that
    cannot hold a data value (span models are public; OS errors)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = "".join(c if c.isprintable() and ord(c) < 0xFFFD else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_model(path: Path | str) -> SpanModel:
    """Load a :class:`~dpdbscan.model.record.SpanModel`, with a one-line error naming
    the file for anything that is not one (missing, binary, other JSON)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file not found: {p}")
    try:
        model = load_model(p)
        projection.projection_of(model)  # validate the metadata now, not halfway through a plot
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not a dpdbscan span model (not a text file)") from None
    except (ValueError, RecursionError) as exc:
        msg = _clean(exc, limit=300)
        raise ValueError(msg if msg.startswith(str(p)) else f"{p}: {msg}") from None
    return model


def read_options_from_args(args: argparse.Namespace) -> ReadOptions:
    """How to read the points file, from the command's options alone
    (``--columns``, ``--header``/``--no-header``, ``--delimiter``,
    ``--fields``, ``--format``, ``--unit``, ``--table``, ``--query``,
    ``--unit-from``),
    typed: a boundary between argparse and the rest of the command line."""
    columns = column_tokens(getattr(args, "columns", None))
    header = (
        True if getattr(args, "header", False) else (False if getattr(args, "no_header", False) else None)
    )
    return ReadOptions(
        columns=None if columns is None else tuple(columns),
        header=header,
        delimiter=getattr(args, "delimiter", None),
        fields=getattr(args, "fields", None),
        file_format=getattr(args, "format", None),
        unit=getattr(args, "unit", None),
        table=getattr(args, "table", None),
        query=getattr(args, "query", None),
        unit_from=getattr(args, "unit_from", None),
    )


def progress_flag(no_progress: bool) -> bool | None:
    """The progress bars' switch: off with ``--no-progress``, else None
    (on when standard error is a terminal)."""
    return False if no_progress else None


def number_or_text(text: Any) -> Any:
    """An option that takes a name or a number: the number when it parses, the
    text otherwise (the parameter table refuses what it does not accept)."""
    for convert in (int, float):
        try:
            return convert(text)
        except (TypeError, ValueError):
            pass
    return text


def border_value(text: object, *, geo: bool) -> float | str:
    """--border: 'auto', a number (data units, km with --geo) or a length like 10m."""
    if text is None or str(text) == "auto":
        return "auto"
    try:
        return read_length(str(text), geo=geo)
    except ValueError:
        raise ValueError(
            f"--border must be 'auto', a number >= 0 or (with --geo) a length like 10m, got {text!r}"
        ) from None


def draw_spans_png(
    model: SpanModel,
    path: Path | str,
    *,
    dpi: int = 120,
    size: tuple[int, int] | None = None,
    extent: Sequence[float] | None = None,
) -> None:
    """The spans' picture (``size`` in pixels, ``extent`` in the model's
    display units), written to ``path``."""
    # lazy: the drawing modules load only where a picture is drawn (fit: in its drawing copy)
    from ..render import plotting

    plotting.spans_png(model, path, dpi=dpi, size=size, extent=extent)


def points_for(
    model: SpanModel, path: str, read: ReadOptions, progress: bool | None, notes: Notes | None = None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Points of ``path`` in the model's coordinates (km for geo), as read,
    and the columns' names: the model's own columns by default, read by the
    door's reader (:func:`dpdbscan.prepare.door.open_points`)."""
    proj = projection.projection_of(model)
    preferred = model.metadata.get("columns") or None
    with open_points(path, read, d=int(model.grid.d), geo=proj is not None, preferred=preferred) as plan:
        got = plan.read(progress)
    for line in got.notes():
        (notes or Notes())(line)
    X, names = got.X, got.names
    if X.shape[1] != model.grid.d:
        raise ValueError(
            f"{path}: {X.shape[1]} column(s) selected ({', '.join(names)}), but the "
            f"model has {model.grid.d}; choose them with --columns"
        )
    return (X if proj is None else proj.forward(X)), X, names


def table_formats(geo: bool, d: int) -> tuple[Callable[[float], str], Callable[[float], str]]:
    """A length (3 significant digits; m or km with --geo) and a cell volume
    (km² with --geo) for the person-level table."""
    if geo:
        return (
            lambda km: f"{km * 1000:.3g} m" if km < 1 else f"{km:.3g} km",
            lambda a: f"{a:.3g} km²",
        )
    return (lambda v: f"{v:.3g}", lambda a: f"{a:.3g} (units^{d})" if d != 1 else f"{a:.3g}")
