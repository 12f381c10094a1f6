"""Reading points from files and writing labels, for the command line.

Formats, told apart by content where possible:

* CSV, plain or gzip-compressed (detected by its magic bytes, whatever the
  name). The path ``-`` reads CSV from standard input.
* Parquet (``.parquet``, ``.pq`` or the ``PAR1`` magic).
* NumPy ``.npy`` holding a 2-D (or 1-D) numeric array; its columns are
  named ``"0"``, ``"1"``, ...

Span models are read with :func:`read_model`.

CSV and Parquet are read with pyarrow (``pip install 'dpdbscan[io]'``).

What is public and what is private. The header line of a CSV file (its
column names and delimiter) and a Parquet file's declared schema are the
file's *schema*, treated as public: they may decide which columns are read
and may appear in messages. The rows are private: no row decides the
columns, no message quotes a value, and a bad value never stops the read.
CSV values are read one record at a time (:mod:`dpdbscan.csvblocks`): a
value that is not a number reads as NaN and a malformed line as a row of
NaN, so the mechanism's per-record rule drops those rows; only their counts
are reported (:class:`InputPoints`), as notes for the data owner.

The CSV header. The delimiter is sniffed from the first line (comma,
semicolon, tab or pipe; the candidate that splits it into most fields) unless
given. With ``header=None`` the first line is the header unless every field
of it is a number (or empty), as in a file without a header; then it is read
as a row and :attr:`InputPoints.first_line_is_data` says so (``header=True``
or ``False`` decides instead). For a file without a header, pass
``header=False`` and a ``delimiter``: then no record can ever be taken for
column names.

Column selection: by default every column except one named ``label`` (the
benchmark files carry ground truth there) and unnamed index columns (an
empty name, ``Unnamed: 0`` or ``__index_level_0__``, as pandas writes them);
otherwise names or 0-based indices.
"""

from __future__ import annotations

import collections
import csv
import gzip
import io as _io
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from . import csvblocks as cb
from .csvblocks import BlockCounts, is_index_column, last_line_end, parse_block
from .geo import projection_of
from .model import SpanModel
from .progress import progress as progress_bar

#: Column excluded from the default selection (ground truth in benchmark files).
LABEL_COLUMN = "label"
_BATCH = 1 << 22  # bytes per CSV block: big enough to be fast, small enough to overlap well
_DEFAULT_DELIMITER = ","


ColumnChooser = Callable[[Sequence[str], Sequence[bool]], "list[str] | None"]
#: Columns to read: names or 0-based indices (ints or digit strings), one or several.
Columns: TypeAlias = str | int | Sequence[str | int]


@dataclass
class InputPoints:
    """Points read from a file, and what the data owner should know.

    Everything but ``names`` and ``delimiter`` is private: print it only as
    a local note (standard error), never in the release.

    Attributes
    ----------
    X : ndarray of shape (n, d)
        One row per record; missing, unparseable and malformed ones are NaN
        (the mechanism drops rows with NaN or inf).
    names : list of str
        The selected columns' names.
    n_unparseable : int
        Rows with a value that is neither a number nor missing (CSV).
    n_malformed : int
        CSV lines with a wrong number of fields (all NaN).
    first_line_is_data : bool
        The CSV's first line looked like numbers and was read as a row.
    skipped_columns : list of str
        Unnamed index columns left out of the default selection.
    delimiter : str or None
        The CSV delimiter used (None for other formats).
    """

    X: np.ndarray
    names: list[str]
    n_unparseable: int = 0
    n_malformed: int = 0
    first_line_is_data: bool = False
    skipped_columns: list[str] = field(default_factory=list)
    delimiter: str | None = None

    def notes(self) -> list[str]:
        """One line per thing the data owner should know (private notes)."""
        out = []
        if self.first_line_is_data:
            out.append(
                "the first line looks like data (all numbers): read as a row; "
                "pass --header or --no-header to decide"
            )
        if self.skipped_columns:
            shown = ", ".join(repr(c) for c in self.skipped_columns)
            out.append(f"skipped unnamed index column(s) {shown}; name them with --columns to use them")
        if self.n_unparseable:
            out.append(f"{self.n_unparseable:,} row(s) with values that are not numbers read as missing")
        if self.n_malformed:
            out.append(f"{self.n_malformed:,} line(s) with the wrong number of fields read as missing")
        return out


def _need_pyarrow(what: str):
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"reading {what} needs pyarrow: pip install 'dpdbscan[io]'") from exc


def file_kind(path: Path | str) -> str:
    """ "npy", "parquet", "csv" or "csv.gz" from the first bytes and the name."""
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(6)
    kind = _kind_of_head(head)
    if kind != "csv":
        return kind
    suffix = path.suffix.lower()
    if suffix in (".npy", ".parquet", ".pq"):
        # The name promises a binary format that the bytes do not hold.
        raise ValueError(f"{path}: not a valid {suffix[1:]} file")
    return "csv"


def _kind_of_head(head: bytes) -> str:
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"\x1f\x8b"):
        return "csv.gz"
    return "csv"


def resolve_columns(
    names: Sequence[str],
    numeric: Sequence[bool],
    requested: Columns | None = None,
    choose: ColumnChooser | None = None,
    *,
    where: str = "the file",
) -> list[int]:
    """Indices of the columns to read.

    ``requested`` holds names or 0-based indices (ints or digit strings; a
    name that exists wins over an index). Without it, ``choose(names, numeric)``
    may pick names, else every column except ``label`` and unnamed index
    columns, which must all be numeric. ``numeric`` is the declared schema
    (Parquet, .npy); for CSV it is all True: no row may decide the columns.
    """
    names = [str(n) for n in names]
    listing = ", ".join(repr(n) for n in names[:12]) + (", ..." if len(names) > 12 else "")
    if requested is None:
        picked = choose(names, numeric) if choose is not None else None
        if picked is None:
            idx = [i for i, n in enumerate(names) if n.lower() != LABEL_COLUMN and not is_index_column(n)]
            bad = [names[i] for i in idx if not numeric[i]]
            if bad or not idx:
                # Skipping a non-numeric column would silently cluster in fewer
                # dimensions than the user expects, so ask instead.
                raise ValueError(
                    f"{where}: column(s) {', '.join(bad) or '(none)'} are not numeric "
                    f"(columns: {listing}); choose the coordinate columns with --columns"
                )
            return idx
        requested = picked
    if isinstance(requested, (str, int)):
        requested = [requested]
    out = []
    for tok in requested:
        if isinstance(tok, str) and tok in names:
            i = names.index(tok)
        elif isinstance(tok, (int, np.integer)) or (isinstance(tok, str) and tok.strip().isdigit()):
            i = int(tok)
            if not 0 <= i < len(names):
                raise ValueError(
                    f"column index {i} is out of range: {where} has {len(names)} column(s) ({listing})"
                )
        else:
            raise ValueError(f"no column {tok!r} in {where} (columns: {listing})")
        if i in out:
            raise ValueError(f"column {names[i]!r} is selected twice")
        out.append(i)
    if not out:
        raise ValueError("no columns selected")
    return out


def _skipped(names, idx, columns) -> list[str]:
    """Index columns the default selection left out (for a note)."""
    if columns is not None:
        return []
    return [str(n) for i, n in enumerate(names) if i not in idx and is_index_column(n)]


# --------------------------------------------------------------------------- #
# readers


def read_points(
    path: Path | str, columns: Columns | None = None, **options: Any
) -> tuple[np.ndarray, list[str]]:
    """Read an (n, d) float64 array of points and the names of its columns.

    ``(X, names)`` of :func:`read_input`, whose keyword arguments
    (``choose``, ``delimiter``, ``header``, ``no_header``, ``progress``) it
    passes on; :func:`read_input` also reports what was dropped or guessed.
    """
    got = read_input(path, columns, **options)
    return got.X, got.names


def read_input(
    path: Path | str,
    columns: Columns | None = None,
    *,
    choose: ColumnChooser | None = None,
    delimiter: str | None = None,
    header: bool | None = None,
    no_header: bool = False,
    progress: bool | None = None,
    block_hook: Callable[[np.ndarray], None] | None = None,
) -> InputPoints:
    """Read points from CSV (a path, or ``"-"`` for standard input), Parquet or .npy.

    Parameters
    ----------
    path : str or Path
        A file, or ``"-"``: CSV (plain or gzip) from standard input.
    columns : sequence of str or int, optional
        Names or 0-based indices; default: every column except ``label`` and
        unnamed index columns.
    choose : callable, optional
        ``choose(names, numeric) -> names or None`` for the default selection
        (used for lon/lat detection and for a model's own columns).
    delimiter : str, optional
        CSV separator; default: sniffed from the header line (``,`` ``;``
        tab ``|``), else ``,`` (tab for ``.tsv``/``.tab``).
    header : bool, optional
        Whether the CSV's first line is a header. None (default): it is,
        unless all its fields are numbers. False: columns are named ``"0"``,
        ``"1"``, ... and the delimiter is not sniffed (no row decides it).
    no_header : bool, default False
        Same as ``header=False`` (kept for callers of the old signature).
    progress : bool, optional
        Draw a progress bar on stderr (default: only on a terminal).
    block_hook : callable, optional
        Called once on every block of rows, ``block_hook(X_block)``, before
        the block is copied into the result; it may change the block in place
        (the command line projects lon/lat there and counts rows outside the
        bounds). CSV blocks are handed to it on the parsing threads, so it
        must be thread-safe; other formats call it once on all rows.

    Returns
    -------
    InputPoints
        The points (missing, unparseable and malformed rows as NaN), their
        column names and counts for the data owner's notes.

    Raises
    ------
    FileNotFoundError, ValueError, ImportError
        With a one-line message naming the file; never quoting a value.
    """
    if no_header:
        if header is True:
            raise ValueError("header=True contradicts no_header=True")
        header = False
    if header not in (None, True, False):
        raise ValueError(f"header must be True, False or None, got header={header!r}")
    if delimiter is not None and (len(delimiter) != 1 or delimiter in '\r\n"'):
        raise ValueError(
            f"delimiter must be one character other than a quote or line break, got delimiter={delimiter!r}"
        )
    if str(path) == "-":
        _need_pyarrow("CSV")
        return _read_csv(
            _Source.stdin(),
            "standard input",
            columns,
            choose,
            delimiter,
            header,
            progress,
            block_hook=block_hook,
        )
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input file not found: {path}")
    if path.is_dir():
        raise IsADirectoryError(f"input is a directory, not a file: {path}")
    kind = file_kind(path)
    if kind in ("npy", "parquet"):
        if kind == "parquet":
            _need_pyarrow("Parquet")
        got = (
            _read_npy(path, columns, choose)
            if kind == "npy"
            else _read_parquet(path, columns, choose, progress)
        )
        if block_hook is not None:
            block_hook(got.X)
        return got
    _need_pyarrow("CSV")
    name = path.name.lower().removesuffix(".gz")
    default = "\t" if name.endswith((".tsv", ".tab")) else _DEFAULT_DELIMITER
    return _read_csv(
        _Source.file(path, kind == "csv.gz"),
        str(path),
        columns,
        choose,
        delimiter,
        header,
        progress,
        default_delimiter=default,
        block_hook=block_hook,
    )


def _read_npy(path, columns, choose):
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except (ValueError, OSError, EOFError):
        raise ValueError(
            f"{path}: cannot read as a numeric .npy array (numpy could not read its header)"
        ) from None
    if arr.dtype.kind not in "iuf" or arr.dtype.names:
        raise ValueError(f"{path}: .npy array must be numeric, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{path}: .npy array must be 2-D (n_samples, n_features), got shape {arr.shape}")
    names = [str(i) for i in range(arr.shape[1])]
    idx = resolve_columns(names, [True] * len(names), columns, choose, where=str(path))
    return InputPoints(np.asarray(arr[:, idx], dtype=np.float64), [names[i] for i in idx])


def _is_numeric(t) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)


def _clean(exc, limit: int = 160) -> str:
    """First line of an error, printable and short. Only for messages that
    cannot hold a data value (span models are public; OS errors)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = "".join(c if c.isprintable() and ord(c) < 0xFFFD else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _io_error(where: str, what: str, exc) -> ValueError:
    """A ValueError for a failed read that never quotes the data: pyarrow's
    and zlib's messages may hold bytes of the file, so only an OS error's
    own text (permission denied, ...) is passed on."""
    if isinstance(exc, OSError) and exc.strerror and not type(exc).__module__.startswith("pyarrow"):
        return ValueError(f"{where}: cannot read as {what}: {exc.strerror}")
    return ValueError(f"{where}: cannot read as {what} (the file is damaged or not {what})")


def _read_parquet(path, columns, choose, progress):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    schema = pf.schema_arrow
    numeric = [_is_numeric(f.type) for f in schema]
    idx = resolve_columns(schema.names, numeric, columns, choose, where=str(path))
    for i in idx:
        if not numeric[i]:
            raise ValueError(f"{path}: column {schema.names[i]!r} is not numeric (type {schema[i].type})")
    names = [schema.names[i] for i in idx]
    parts = []
    try:
        with progress_bar(
            f"reading {path.name}", total=pf.metadata.num_rows, enabled=progress, unit="rows"
        ) as bar:
            for batch in pf.iter_batches(batch_size=1 << 20, columns=names):
                # safe=False: a huge int64 becomes the nearest double instead of
                # an error that would quote it.
                cols = [
                    pc.cast(batch.column(n), pa.float64(), safe=False).to_numpy(zero_copy_only=False)
                    for n in names
                ]
                parts.append(np.column_stack(cols) if cols else np.zeros((batch.num_rows, 0)))
                bar.update(batch.num_rows)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    X = np.concatenate(parts) if parts else np.zeros((0, len(idx)))
    return InputPoints(X, names, skipped_columns=_skipped(schema.names, idx, columns))


# --------------------------------------------------------------------------- #
# CSV


class _Prepend(_io.RawIOBase):
    """A byte stream that first returns ``head``, then reads ``rest``."""

    def __init__(self, head: bytes, rest):
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(b))
        b[: len(data)] = data
        return len(data)


class _Source:
    """Decompressed bytes of a CSV file in chunks, and how far the raw bytes
    have been consumed (for the progress bar)."""

    def __init__(self, stream, raw=None, total=None, label="standard input", text_bytes=None):
        self.stream, self.raw, self.total, self.label = stream, raw, total, label
        self.text_bytes = text_bytes  # about how many bytes of text follow (None: unknown)

    @classmethod
    def file(cls, path: Path, gz: bool):
        import pyarrow as pa

        size = os.path.getsize(path)
        text = size
        if gz and size >= 18:
            # gzip's trailer holds the text's length modulo 2**32 (of the last
            # member only): a hint for sizing the result, never trusted
            with open(path, "rb") as fh:
                fh.seek(-4, os.SEEK_END)
                text = int.from_bytes(fh.read(4), "little")
        if gz and _igzip() is not None:
            fh = open(path, "rb")  # noqa: SIM115 - closed by close()
            return cls(_igzip().IGzipFile(fileobj=fh, mode="rb"), fh, size, path.name, text)
        raw = pa.OSFile(str(path))
        stream = pa.CompressedInputStream(raw, "gzip") if gz else raw
        return cls(stream, raw, size, path.name, text)

    @classmethod
    def stdin(cls):
        buf = sys.stdin.buffer
        head = buf.read(6)
        kind = _kind_of_head(head)
        if kind in ("npy", "parquet"):
            raise ValueError(
                "standard input: only CSV can be read from '-'; pass the path of a "
                f"{'.npy' if kind == 'npy' else 'Parquet'} file"
            )
        plain = _io.BufferedReader(_Prepend(head, buf), buffer_size=1 << 20)
        if kind != "csv.gz":
            return cls(plain)
        igzip = _igzip()
        return cls(
            igzip.IGzipFile(fileobj=plain, mode="rb")
            if igzip is not None
            else gzip.GzipFile(fileobj=plain, mode="rb")
        )

    def read(self, n: int) -> bytes:
        return self.stream.read(n)

    def done(self) -> int | None:
        return self.raw.tell() if self.raw is not None else None

    def close(self) -> None:
        for s in (self.stream, self.raw):
            if s is not None:
                s.close()


def _igzip():
    """``isal.igzip`` when installed (``pip install 'dpdbscan[io]'``), else None.

    ISA-L inflates gzip about 2.5 times faster than zlib (0.17 s against
    0.48 s for the 52 MB Cabs file here) and releases the GIL while it does,
    so the parsing threads keep up. Reading a gzip file is otherwise the
    slowest serial step of ``dpdbscan fit``.
    """
    try:
        from isal import igzip
    except ImportError:
        return None
    return igzip


def _gzip_errors() -> tuple:
    igzip = _igzip()
    return () if igzip is None else (igzip.isal_zlib.error,)


def _read_csv(
    source: _Source,
    where: str,
    columns,
    choose,
    delimiter,
    header,
    progress,
    *,
    default_delimiter: str = _DEFAULT_DELIMITER,
    block_hook=None,
) -> InputPoints:
    import pyarrow as pa

    what = "CSV"
    try:
        with progress_bar(f"reading {source.label}", total=source.total, enabled=progress) as bar:
            first = b""
            while True:  # up to the end of the first non-empty line
                chunk = source.read(1 << 16)
                first = (first + chunk).lstrip(b"\r\n")
                if first.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
                    first = first[3:].lstrip(b"\r\n")
                if not chunk or cb.last_line_end(first):
                    break
            if not first.strip(b"\r\n"):
                raise ValueError(f"{where}: empty CSV file (no header line)")
            line, rest = cb.split_first_line(first)
            try:
                delimiter, names, first_is_data = cb.read_header(
                    line, delimiter=delimiter, header=header, default_delimiter=default_delimiter
                )
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            idx = resolve_columns(names, [True] * len(names), columns, choose, where=where)
            layout = cb.CsvLayout(delimiter, len(names), tuple(idx))
            X, counts = _parse_blocks(source, first if first_is_data else rest, layout, bar, block_hook)
    except (OSError, EOFError, pa.ArrowException, *_gzip_errors()) as exc:
        raise _io_error(where, what, exc) from None
    finally:
        source.close()
    return InputPoints(
        X,
        [names[i] for i in idx],
        n_unparseable=counts.unparseable,
        n_malformed=counts.malformed,
        first_line_is_data=first_is_data and header is None,
        skipped_columns=_skipped(names, idx, columns),
        delimiter=delimiter,
    )


def _blocks(source: _Source, head: bytes):
    """Blocks of whole lines: ``head`` and then what ``source`` reads."""
    rest = head
    while True:
        chunk = source.read(_BATCH)
        if not chunk:
            break
        cut = last_line_end(chunk)
        if cut == 0:  # a line longer than a chunk
            rest += chunk
            continue
        yield (
            b"".join((rest, memoryview(chunk)[:cut]))
            if rest
            else (chunk if cut == len(chunk) else chunk[:cut])
        )
        rest = chunk[cut:]
    if rest.strip(b"\r\n"):
        yield rest


class _Rows:
    """The rows of all blocks, in file order, in one growing array.

    Each block's place is reserved when it is handed to a parsing thread
    (its records are counted first), so that the thread writes its rows
    straight into place: the blocks are neither kept nor concatenated
    (which would hold the points twice), and the copying is spread over
    the threads. Sized from the first block's bytes per record and the
    text's expected length; pages past the end are never touched.
    """

    def __init__(self, d: int, text_bytes: int | None):
        self.d, self.text_bytes, self.n = d, text_bytes, 0
        self.X: np.ndarray | None = None

    def reserve(self, k: int, block_bytes: int, drain) -> np.ndarray:
        """The rows ``n .. n + k`` of the result, for the next block.
        ``drain()`` waits for the blocks in flight before the array moves."""
        if self.X is None or self.n + k > self.X.shape[0]:
            guess = 0
            if self.X is None and self.text_bytes and k:
                guess = int(self.text_bytes / max(block_bytes / k, 1.0) * 1.02) + 1024
            cap = max(self.n + k, guess, 2 * (0 if self.X is None else self.X.shape[0]), 1024)
            drain()
            grown = np.empty((cap, self.d))
            if self.X is not None:
                grown[: self.n] = self.X[: self.n]
            self.X = grown
        dest = self.X[self.n : self.n + k]
        self.n += k
        return dest

    def result(self) -> np.ndarray:
        return np.zeros((0, self.d)) if self.X is None else self.X[: self.n]


def _records(block: bytes) -> int:
    """The number of records (non-empty lines) of a block, as parse_block
    returns them; a quick count when no line is empty."""
    if b"\r" not in block and b"\n\n" not in block and not block.startswith(b"\n"):
        return block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
    return cb._count_lines(block)


def _parse_into(block: bytes, layout, hook, dest: np.ndarray) -> BlockCounts:
    X, counts = parse_block(block, layout)
    if X.shape[0] != dest.shape[0]:  # pragma: no cover - parse_block returns one row a record
        raise RuntimeError("a CSV block held a different number of records than counted")
    if hook is not None:
        hook(X)
    dest[...] = X
    return counts


def _parse_blocks(source: _Source, head: bytes, layout, bar, hook=None):
    """Parse blocks on a few threads (pyarrow releases the GIL) while this
    thread reads and decompresses the next ones; each thread writes its rows
    into place in the result. ``hook`` runs on each parsed block first."""
    workers = max(1, min(4, os.cpu_count() or 1))
    rows, counts = _Rows(len(layout.usecols), source.text_bytes), BlockCounts()
    pending: collections.deque = collections.deque()

    def collect():
        counts.add(pending.popleft().result())

    def drain():
        while pending:
            collect()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for block in _blocks(source, head):
                dest = rows.reserve(_records(block), len(block), drain)
                pending.append(pool.submit(_parse_into, block, layout, hook, dest))
                while len(pending) > workers:  # bounded memory
                    collect()
                done = source.done()
                if done is not None:
                    bar.update(done - bar.n)
            drain()
        finally:
            for f in pending:
                f.cancel()
    return rows.result(), counts


def read_model(path: Path | str) -> SpanModel:
    """Load a :class:`~dpdbscan.spans.SpanModel`, with a one-line error naming
    the file for anything that is not one (missing, binary, other JSON)."""

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file not found: {p}")
    try:
        model = SpanModel.load(p)
        projection_of(model)  # validate the metadata now, not halfway through a plot
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not a dpdbscan span model (not a text file)") from None
    except (ValueError, RecursionError) as exc:
        msg = _clean(exc, limit=300)
        raise ValueError(msg if msg.startswith(str(p)) else f"{p}: {msg}") from None
    return model


# --------------------------------------------------------------------------- #
# writing


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
    header_names = list(names or []) + ["label"] if points is not None else ["label"]
    buf = _io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(header_names)
    header = buf.getvalue().encode()
    out = sys.stdout.buffer if str(path) == "-" else open(path, "wb")
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
            cols["label"] = labels
            pacsv.write_csv(pa.table(cols), out, write_options=pacsv.WriteOptions(include_header=False))
    finally:
        if out is not sys.stdout.buffer:
            out.close()
        else:
            out.flush()


__all__ = [
    "read_points",
    "read_input",
    "InputPoints",
    "read_model",
    "resolve_columns",
    "file_kind",
    "is_index_column",
    "write_labels",
    "LABEL_COLUMN",
]
