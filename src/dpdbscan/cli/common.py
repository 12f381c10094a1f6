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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

from ..exceptions import PrivacyLeakWarning, PrivateNoteWarning, WeakPrivacyWarning
from ..files import InputPlan, InputPoints, ReadOptions, open_input, read_columns
from ..files.reader import BlockHook
from ..geometry import projection as _geo
from ..model import SpanModel, load_model
from ..render import plotting
from ..spec.validation import check_bounds

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


#: What the option helpers add arguments to: a parser or one of its groups.
ArgTarget = argparse.ArgumentParser | argparse._ArgumentGroup
#: Writes one output file at the path it is given.
Writer = Callable[[Path], object]

#: The mark that starts every private note ("private: do not publish").
PRIVATE = "[private: do not publish]"


class Notes:
    """Private notes for the data owner on standard error.

    They describe the private input (how many rows were read, dropped or
    clipped, which column looks wrong) and must never be published: each line
    starts with :data:`PRIVATE`. ``--quiet`` silences them; warnings about public
    things (a leaking option, seeded noise) are printed anyway.
    """

    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream

    def __call__(self, message: str) -> None:
        if not self.quiet:
            self.always(message)

    def always(self, message: str) -> None:
        """A private note printed even under ``--quiet``: for what would make
        a release useless, such as most rows lying outside the bounds."""
        print(f"{PRIVATE} {message}", file=self.stream or sys.stderr)


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
    # same folder (rename is atomic there), same suffix (matplotlib reads it)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
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


class _Warnings:
    """Collect warnings and print each distinct one once, as one line."""

    def __init__(self, err):
        self.err, self.seen = err, set()
        self._cm = warnings.catch_warnings(record=True)
        self._log: list = []

    def __enter__(self):
        # the recording list itself: it starts empty, so ``... or []`` would
        # swap in a fresh list and drop every warning
        log = self._cm.__enter__()
        assert log is not None  # catch_warnings(record=True) returns its list
        self._log = log
        warnings.simplefilter("always")
        return self

    def flush(self):
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

    def __exit__(self, *exc):
        self.flush()
        self._cm.__exit__(*exc)


# --------------------------------------------------------------------------- #
# parsing helpers


def _tokens(values) -> list[str]:
    """``["1,2", "3"]`` -> ``["1", "2", "3"]`` (commas or spaces both work)."""
    return [t for v in values or [] for t in str(v).replace(",", " ").split()]


def _floats(values, option: str) -> list[float]:
    out = []
    for t in _tokens(values):
        try:
            out.append(float(t))
        except ValueError:
            raise ValueError(f"{option} must be numbers, got {t!r}") from None
    return out


def _column_tokens(values):
    """Column names may contain spaces, so only commas split an argument."""
    toks = [t.strip() for v in values or [] for t in str(v).split(",") if t.strip()]
    return toks or None


def _split_bounds(values: list[float], d: int, geo: bool):
    """``lower_1..lower_d upper_1..upper_d`` (or one lower and one upper)."""
    if geo and len(values) != 4:
        raise ValueError(
            f"--bounds with --geo needs 4 numbers in degrees: lon_min lat_min lon_max lat_max, "
            f"got {len(values)}"
        )
    if len(values) == 2:
        return check_bounds((values[0], values[1]), d)
    if len(values) != 2 * d:
        raise ValueError(
            f"--bounds needs 2 numbers (one lower and one upper for every column) or "
            f"2*d = {2 * d} numbers (lower_1 .. lower_{d} upper_1 .. upper_{d}), got {len(values)}"
        )
    try:
        return check_bounds((values[:d], values[d:]), d)
    except ValueError as exc:
        # Suggest an order only when it is valid: the upper bounds given first,
        # or min_1 max_1 min_2 max_2 ... (public: the option's own values).
        readings = (
            ("the upper bounds came first", list(values[d:]) + list(values[:d])),
            ("the values are in the order xmin xmax ymin ymax", list(values[0::2]) + list(values[1::2])),
        )
        for why, order in readings:
            if all(lo < hi for lo, hi in zip(order[:d], order[d:])):
                shown = " ".join(f"{v:g}" for v in order)
                raise ValueError(
                    f"{exc}. It looks as if {why}: --bounds wants all lower bounds, then all upper "
                    f"bounds (xmin ymin xmax ymax): --bounds {shown}"
                ) from None
        raise


def _stem(path: str) -> str:
    if path == "-":
        return "stdin"
    if any(c in path for c in "*?["):
        return "spans"
    name = Path(path).name
    for suffix in (".gz", ".csv", ".tsv", ".txt", ".parquet", ".pq", ".npy"):
        name = name[: -len(suffix)] if name.lower().endswith(suffix) else name
    return name or "spans"


def error_prefix(command: str | None) -> str:
    """The start of every error line: ``dpdbscan fit: error:`` (argparse's
    own form, whose ``prog`` is ``dpdbscan fit``), or ``dpdbscan: error:``
    before a command is known."""
    return f"dpdbscan {command}: error:" if command else "dpdbscan: error:"


def _one_line(exc: BaseException) -> str:
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
        _geo.projection_of(model)  # validate the metadata now, not halfway through a plot
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not a dpdbscan span model (not a text file)") from None
    except (ValueError, RecursionError) as exc:
        msg = _clean(exc, limit=300)
        raise ValueError(msg if msg.startswith(str(p)) else f"{p}: {msg}") from None
    return model


def read_options(args: argparse.Namespace, columns: list[str] | None) -> ReadOptions:
    """How to read the points file, from the command's options alone."""
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
    )


def public_dimension(
    args: argparse.Namespace, columns: list[str] | None, model: SpanModel | None = None
) -> int | None:
    """The number of coordinates public input fixes before the file is
    opened: a model's d, 2 with --geo, one lower and one upper bound per
    column in --bounds, or the --columns given; None when none of them does."""
    if model is not None:
        return int(model.grid.d)
    if getattr(args, "geo", False):
        return 2
    bounds = getattr(args, "bounds", None)
    if bounds is not None and len(bounds) > 2 and len(bounds) % 2 == 0:
        return len(bounds) // 2
    return len(columns) if columns else None


def _open(path, columns, args, *, model=None, geo=False) -> InputPlan:
    """How ``path`` will be read, decided from public input only (no record
    read): :func:`dpdbscan.files.open_input` with the command's options."""
    preferred = (model.metadata.get("columns") if model is not None else None) or None

    def choose(names, numeric):
        if preferred and all(c in names for c in preferred):
            return list(preferred)
        return _geo.default_geo_columns(names) if geo else None

    return open_input(
        path, read_options(args, columns), d=public_dimension(args, columns, model), choose=choose
    )


def read_trace_columns(
    args: argparse.Namespace, columns: list[str] | None, time: str, status: str | None
) -> tuple[Any, Any]:
    """A trace's time and status columns of ``args.input``, row for row with
    the points :func:`_open` reads with the same options, in one more pass
    (:func:`dpdbscan.files.read_columns`; nothing parsed)."""

    def token(column: str) -> str | int:
        return int(column) if str(column).isdigit() else column

    geo = bool(getattr(args, "geo", False))

    def choose(names, numeric):
        return _geo.default_geo_columns(names) if geo else None

    return read_columns(
        args.input,
        token(time),
        None if status is None else token(status),
        read_options(args, columns),
        d=public_dimension(args, columns),
        choose=choose,
        progress=_progress_flag(args),
    )


def read_plan(
    plan: InputPlan,
    args: argparse.Namespace,
    notes: Notes | None = None,
    block_hook: BlockHook | None = None,
) -> InputPoints:
    """Read every record of an opened plan; what the reader dropped goes to
    ``notes`` (private)."""
    got = plan.read(_progress_flag(args), block_hook)
    for line in got.notes():
        (notes or Notes(getattr(args, "quiet", False)))(line)
    return got


def _read_plan(plan: InputPlan, args, notes: Notes | None = None, block_hook=None):
    """:func:`read_plan`'s points and column names."""
    got = read_plan(plan, args, notes, block_hook)
    return got.X, got.names


def _read(path, columns, args, *, model=None, geo=False, notes: Notes | None = None, block_hook=None):
    """Points of ``path`` in display coordinates (lon/lat for geo) and names;
    what the reader dropped goes to ``notes`` (private)."""
    with _open(path, columns, args, model=model, geo=geo) as plan:
        return _read_plan(plan, args, notes, block_hook)


def _say_read(path, X, names, notes: Notes):
    # After the checks that may still fail, so that bad input gets one line.
    where = "standard input" if str(path) == "-" else path
    notes(f"read {X.shape[0]:,} rows x {X.shape[1]} column(s) ({', '.join(names)}) from {where}")


def _progress_flag(args):
    return False if getattr(args, "no_progress", False) else None


def _draw_spans_png(model, path, *, dpi=120, size=None, extent=None):
    ax = plotting.plot_model(model, "spans", size=size, extent=extent, dpi=dpi)
    plotting.save(ax, path, dpi=dpi)


def _points_for(model, path, args):
    """Points of ``path`` in the model's coordinates (km for geo) and as read."""
    proj = _geo.projection_of(model)
    X, names = _read(path, _column_tokens(args.columns), args, model=model, geo=proj is not None)
    if X.shape[1] != model.grid.d:
        raise ValueError(
            f"{path}: {X.shape[1]} column(s) selected ({', '.join(names)}), but the "
            f"model has {model.grid.d}; choose them with --columns"
        )
    return (X if proj is None else proj.forward(X)), X, names
