"""Reading points from files: CSV (plain, gzip or standard input), Parquet, .npy.

Reading happens in two steps. :func:`open_input` decides *how* the file is
read from public input only (the options, the file name's extension, the
public number of coordinates ``d``, and a header line the user declared or a
Parquet/.npy schema) and reads no record; :meth:`InputPlan.read` then reads
every record by the per-record rules of :mod:`dpdbscan.files.records`. So the
caller can refuse a bad layout (the wrong number of columns, say) before a
record is read, and two files that differ in one record are read alike
except for that record (docs/privacy.md, "how a file is read").

What is public and what is private. The format, the delimiter, the header
(when declared) and a Parquet file's schema are public: they may pick the
columns and appear in messages and in the release. The rows are private: no
row decides anything, no message quotes a value, and a bad value never stops
the read: a value that is not a number reads as NaN and a malformed line as a
row of NaN, which the mechanism's per-record rule drops; only their counts are
reported (:class:`InputPoints`), as notes for the data owner.

Column selection: by default every column except one named ``label`` and
unnamed index columns (an empty name, ``Unnamed: 0`` or
``__index_level_0__``, as pandas writes them); otherwise names (with a
header) or 0-based indices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..progress import progress as progress_bar
from . import csvfile
from .formats import FileFormat, format_of
from .layout import ColumnChooser, Columns, ReadOptions, csv_layout, resolve_columns, skipped_index_columns
from .records import BlockCounts, CsvLayout

BlockHook = Callable[[np.ndarray], None]


@dataclass
class InputPoints:
    """Points read from a file, and what the data owner should know.

    Everything but ``names`` is private: print it only as a local note
    (standard error), never in the release.

    Attributes
    ----------
    X : ndarray of shape (n, d)
        One row per record; missing, unparseable and malformed ones are NaN
        (the mechanism drops rows with NaN or inf).
    names : list of str
        The selected columns' names (from a declared header or a schema, else
        ``"0"``, ``"1"``, ...).
    n_unparseable : int
        Rows with a value that is neither a number nor missing (CSV).
    n_malformed : int
        CSV lines with a wrong number of fields (all NaN).
    skipped_columns : list of str
        Unnamed index columns left out of the default selection.
    """

    X: np.ndarray
    names: list[str]
    n_unparseable: int = 0
    n_malformed: int = 0
    skipped_columns: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        """One line per thing the data owner should know (private notes)."""
        out = []
        if self.skipped_columns:
            shown = ", ".join(repr(c) for c in self.skipped_columns)
            out.append(f"skipped unnamed index column(s) {shown}; name them with --columns to use them")
        if self.n_unparseable:
            out.append(f"{self.n_unparseable:,} row(s) with values that are not numbers read as missing")
        if self.n_malformed:
            out.append(
                f"{self.n_malformed:,} line(s) with the wrong number of fields read as missing "
                "(check --delimiter, --header and --fields)"
            )
        return out


class InputPlan:
    """How a file will be read, decided before any record is read.

    ``names`` are the selected columns and ``d`` their number; ``where``
    names the file in messages. :meth:`read` reads the records (once);
    :meth:`close` releases the file without reading it. Use it as a context
    manager.
    """

    def __init__(
        self,
        where: str,
        fmt: FileFormat,
        names: list[str],
        skipped: list[str],
        reader: Callable[[bool | None, BlockHook | None], InputPoints],
        closer: Callable[[], None] = lambda: None,
    ) -> None:
        self.where, self.format, self.names, self.skipped = where, fmt, names, skipped
        self._reader, self._closer = reader, closer
        self._used = False

    @property
    def d(self) -> int:
        return len(self.names)

    def read(self, progress: bool | None = None, block_hook: BlockHook | None = None) -> InputPoints:
        """Every record, by the per-record rules.

        ``block_hook(X_block)`` is called once on every block of rows before
        it is copied into the result and may change it in place (the command
        line projects lon/lat there and counts rows outside the bounds). CSV
        blocks are handed to it on the parsing threads, so it must be
        thread-safe; other formats call it once on all rows.
        """
        if self._used:
            raise RuntimeError("an InputPlan is read once")
        self._used = True
        try:
            return self._reader(progress, block_hook)
        finally:
            self.close()

    def close(self) -> None:
        self._used = True
        closer, self._closer = self._closer, lambda: None
        closer()

    def __enter__(self) -> InputPlan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _need_pyarrow(what: str) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"reading {what} needs pyarrow: pip install 'dpdbscan[io]'") from exc


def open_input(
    path: Path | str,
    options: ReadOptions | None = None,
    *,
    d: int | None = None,
    choose: ColumnChooser | None = None,
) -> InputPlan:
    """Decide how ``path`` is read, from public input only; read no record.

    Parameters
    ----------
    path : str or Path
        A file, or ``"-"``: CSV from standard input (gzip with
        ``file_format="csv.gz"``).
    options : ReadOptions
        Columns, header, delimiter, fields and format (all public).
    d : int, optional
        The public number of coordinates (from the bounds), if fixed: the
        default field count of a CSV file without a header.
    choose : callable, optional
        ``choose(names, numeric) -> names or None`` for the default
        selection from a declared header or schema (lon/lat detection, a
        model's own columns).

    Raises
    ------
    FileNotFoundError, ValueError, ImportError
        With a one-line message naming the file and the option to pass;
        never quoting a record.
    """
    options = options or ReadOptions()
    if str(path) != "-":
        if not Path(path).exists():
            raise FileNotFoundError(f"input file not found: {path}")
        if Path(path).is_dir():
            raise IsADirectoryError(f"input is a directory, not a file: {path}")
    fmt = format_of(path, options.file_format)
    if str(path) == "-":
        if not fmt.is_text:
            raise ValueError(
                f"standard input: only CSV can be read from '-'; pass the path of the {fmt.kind} file"
            )
        _need_pyarrow("CSV")
        return _open_csv(lambda: csvfile.Source.stdin(fmt.gzip), "standard input", fmt, options, d, choose)
    path = Path(path)
    if fmt.kind == "npy":
        return _open_npy(path, fmt, options, choose)
    if fmt.kind == "parquet":
        _need_pyarrow("Parquet")
        return _open_parquet(path, fmt, options, choose)
    _need_pyarrow("CSV")
    return _open_csv(lambda: csvfile.Source.file(path, fmt.gzip), str(path), fmt, options, d, choose)


def read_input(
    path: Path | str,
    columns: Columns | None = None,
    *,
    choose: ColumnChooser | None = None,
    delimiter: str | None = None,
    header: bool | None = None,
    fields: int | None = None,
    file_format: str | None = None,
    d: int | None = None,
    progress: bool | None = None,
    block_hook: BlockHook | None = None,
) -> InputPoints:
    """Read points from CSV, Parquet or .npy: :func:`open_input`, then
    :meth:`InputPlan.read`. The keywords are :class:`ReadOptions`' fields,
    ``d`` and ``choose`` of :func:`open_input`, and ``read``'s ``progress``
    and ``block_hook``.

    A CSV file needs ``header=True`` or ``header=False`` (column names in
    ``columns`` imply a header): its own lines never decide.
    """
    options = ReadOptions(
        columns=None if columns is None else (columns if isinstance(columns, tuple) else _as_tuple(columns)),
        header=header,
        delimiter=delimiter,
        fields=fields,
        file_format=file_format,
    )
    with open_input(path, options, d=d, choose=choose) as plan:
        return plan.read(progress, block_hook)


def _as_tuple(columns: Columns) -> tuple[str | int, ...]:
    return (columns,) if isinstance(columns, (str, int)) else tuple(columns)


def read_points(
    path: Path | str, columns: Columns | None = None, **options: Any
) -> tuple[np.ndarray, list[str]]:
    """``(X, names)`` of :func:`read_input`, which takes the same arguments."""
    got = read_input(path, columns, **options)
    return got.X, got.names


# --------------------------------------------------------------------------- #
# CSV


def _open_csv(
    make_source: Callable[[], csvfile.Source],
    where: str,
    fmt: FileFormat,
    options: ReadOptions,
    d: int | None,
    choose: ColumnChooser | None,
) -> InputPlan:
    import pyarrow as pa

    has_header = options.has_header
    if has_header is None:
        # refused before the file is even opened
        csv_layout(fmt, options, None, d, choose, where=where)
    source = make_source()
    try:
        if has_header:
            header, head = csvfile.first_line(source)
        else:
            header, head = None, csvfile.strip_bom(source)
        names, layout = csv_layout(fmt, options, header, d, choose, where=where)
    except (OSError, EOFError, pa.ArrowException, *csvfile.gzip_errors()) as exc:
        source.close()
        raise _io_error(where, "CSV", exc) from None
    except BaseException:
        source.close()
        raise
    chosen = [names[i] for i in layout.usecols]
    skipped = skipped_index_columns(names, layout.usecols, options.columns)

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        return _read_csv(source, where, layout, head, chosen, skipped, progress, hook)

    return InputPlan(where, fmt, chosen, skipped, read, source.close)


def _read_csv(
    source: csvfile.Source,
    where: str,
    layout: CsvLayout,
    head: bytes,
    names: list[str],
    skipped: list[str],
    progress: bool | None,
    hook: BlockHook | None,
) -> InputPoints:
    import pyarrow as pa

    try:
        with progress_bar(f"reading {source.label}", total=source.total, enabled=progress) as bar:
            X, counts = csvfile.read_blocks(source, head, layout, bar, hook)
    except (OSError, EOFError, pa.ArrowException, *csvfile.gzip_errors()) as exc:
        raise _io_error(where, "CSV", exc) from None
    finally:
        source.close()
    return InputPoints(
        X, names, n_unparseable=counts.unparseable, n_malformed=counts.malformed, skipped_columns=skipped
    )


def _io_error(where: str, what: str, exc: BaseException) -> ValueError:
    """A ValueError for a failed read that never quotes the data: pyarrow's
    and zlib's messages may hold bytes of the file, so only an OS error's
    own text (permission denied, ...) is passed on."""
    if isinstance(exc, OSError) and exc.strerror and not type(exc).__module__.startswith("pyarrow"):
        return ValueError(f"{where}: cannot read as {what}: {exc.strerror}")
    return ValueError(f"{where}: cannot read as {what} (the file is damaged or not {what})")


# --------------------------------------------------------------------------- #
# Parquet and .npy: the schema is in the file's metadata, never in its rows


def _no_text_options(where: str, fmt: FileFormat, options: ReadOptions) -> None:
    given = [
        opt for opt, v in (("--delimiter", options.delimiter), ("--fields", options.fields)) if v is not None
    ]
    if options.header is not None:
        given.append("--header/--no-header")
    if given:
        raise ValueError(f"{where}: {', '.join(given)} apply to CSV files only, not to {fmt.kind}")


def _open_npy(path: Path, fmt: FileFormat, options: ReadOptions, choose: ColumnChooser | None) -> InputPlan:
    _no_text_options(str(path), fmt, options)
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
    idx = resolve_columns(names, [True] * len(names), options.columns, choose, where=str(path))

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        X = np.asarray(arr[:, idx], dtype=np.float64)
        if hook is not None:
            hook(X)
        return InputPoints(X, [names[i] for i in idx])

    return InputPlan(str(path), fmt, [names[i] for i in idx], [], read)


def _is_numeric(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)


def _open_parquet(
    path: Path, fmt: FileFormat, options: ReadOptions, choose: ColumnChooser | None
) -> InputPlan:
    import pyarrow as pa
    import pyarrow.parquet as pq

    _no_text_options(str(path), fmt, options)
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    schema = pf.schema_arrow
    numeric = [_is_numeric(f.type) for f in schema]
    idx = resolve_columns(schema.names, numeric, options.columns, choose, where=str(path))
    for i in idx:
        if not numeric[i]:
            raise ValueError(f"{path}: column {schema.names[i]!r} is not numeric (type {schema[i].type})")
    names = [schema.names[i] for i in idx]
    skipped = skipped_index_columns(schema.names, idx, options.columns)

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        X = _read_parquet(pf, path, names, progress)
        if hook is not None:
            hook(X)
        return InputPoints(X, names, skipped_columns=skipped)

    return InputPlan(str(path), fmt, names, skipped, read, pf.close if hasattr(pf, "close") else lambda: None)


def _read_parquet(pf: Any, path: Path, names: list[str], progress: bool | None) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

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
    return np.concatenate(parts) if parts else np.zeros((0, len(names)))


__all__ = ["InputPlan", "InputPoints", "open_input", "read_input", "read_points", "BlockCounts"]
