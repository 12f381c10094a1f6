"""Reading points from files: CSV (plain, gzip or standard input), Parquet,
.npy, SQLite and GeoPackage (:mod:`.sqlitefile`, :mod:`.gpkgfile`), GeoJSON
and GPX (:mod:`.geojsonfile`, :mod:`.gpxfile`).

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

Column selection: by default every column except one named ``label``,
unnamed index columns (an empty name, ``Unnamed: 0`` or
``__index_level_0__``, as pandas writes them) and the privacy unit's column;
otherwise names (with a header) or 0-based indices.

The privacy unit (``ReadOptions.unit``, ``--unit``): one more column, read
beside the coordinates, one id per row (:attr:`InputPoints.units`). CSV
units are the fields' bytes (:mod:`dpdbscan.files.records`); Parquet units
keep their declared type, which must be integers, floats or text (a
dictionary of them too). A row whose unit is missing reads as NaN and is
dropped like a row with a missing coordinate, and counted for the notes.
No unit value is ever quoted.

A Parquet *dataset* (a directory of Parquet files, as Spark or Dask write
them) is read like one file; its schema is the files' metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..progress import progress as progress_bar
from . import csvfile, geojsonfile, gpkgfile, gpxfile, sqlitefile
from .formats import FileFormat, format_of
from .layout import (
    ColumnChooser,
    Columns,
    ReadOptions,
    csv_layout,
    resolve_columns,
    resolve_unit,
    schema_columns,
    skipped_index_columns,
)
from .records import BlockCounts, CsvLayout, unit_missing
from .unitids import unit_kind_of_arrow

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
    units : pyarrow.ChunkedArray or ndarray, optional
        The privacy unit of every row (None without ``ReadOptions.unit``):
        binary for CSV, the declared type for Parquet; null where missing.
    unit_name : str, optional
        The unit column's name (public: a declared header or the schema).
    n_missing_unit : int
        Rows, not already counted above, whose unit is missing (NaN).
    n_not_point : int
        GeoPackage rows whose geometry is not a point of the layer's SRS
        (or is empty or damaged).
    """

    X: np.ndarray
    names: list[str]
    n_unparseable: int = 0
    n_malformed: int = 0
    skipped_columns: list[str] = field(default_factory=list)
    units: Any = None
    unit_name: str | None = None
    n_missing_unit: int = 0
    n_not_point: int = 0

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
        if self.n_not_point:
            out.append(f"{self.n_not_point:,} row(s) whose geometry is not a point (or is empty) are dropped")
        if self.n_missing_unit:
            out.append(
                f"{self.n_missing_unit:,} row(s) with no unit (column {self.unit_name!r}, --unit) are dropped"
            )
        return out


class InputPlan:
    """How a file will be read, decided before any record is read.

    ``names`` are the selected columns and ``d`` their number; ``where``
    names the file in messages. ``unit_name`` is the privacy unit's column
    (None: no unit is read) and ``schema_names`` every column's name when a
    declared header or a schema gives them (None otherwise): public.
    ``crs`` is the spatial reference a GeoPackage layer declares (``"EPSG:4326"``;
    None: the file declares none) and ``lonlat`` whether it is WGS 84
    longitude/latitude (None: not declared): metadata, public.
    :meth:`read` reads the records (once); :meth:`close` releases the file
    without reading it. Use it as a context manager.
    """

    def __init__(
        self,
        where: str,
        fmt: FileFormat,
        names: list[str],
        skipped: list[str],
        reader: Callable[[bool | None, BlockHook | None], InputPoints],
        closer: Callable[[], None] = lambda: None,
        *,
        unit_name: str | None = None,
        schema_names: list[str] | None = None,
        crs: str | None = None,
        lonlat: bool | None = None,
    ) -> None:
        self.where, self.format, self.names, self.skipped = where, fmt, names, skipped
        self.unit_name, self.schema_names = unit_name, schema_names
        self.crs, self.lonlat = crs, lonlat
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
        thread-safe; SQLite and GeoPackage chunks in order; other formats
        call it once on all rows.
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
        A file, a directory of Parquet files (a dataset), or ``"-"``: CSV
        from standard input (gzip with ``file_format="csv.gz"``).
    options : ReadOptions
        Columns, the unit's column, header, delimiter, fields, format, and
        an SQLite or GeoPackage file's table or query (all public).
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
            raise FileNotFoundError(f"input file not found: {path}{data_hint(path)}")
        if Path(path).is_dir():
            # a dataset: its files' names (public) say it is one, never their bytes
            if options.file_format not in (None, "parquet") or not _has_parquet_files(Path(path)):
                raise IsADirectoryError(
                    f"input is a folder: {path}; a folder is read only as a Parquet dataset "
                    "(files named *.parquet in it)"
                )
            _need_pyarrow("Parquet")
            return _open_parquet(Path(path), FileFormat("parquet"), options, choose)
    fmt = format_of(path, options.file_format)
    if str(path) == "-":
        if not fmt.is_text:
            raise ValueError(
                f"standard input: only CSV can be read from '-'; pass the path of the {fmt.kind} file"
            )
        _need_pyarrow("CSV")
        return _open_csv(lambda: csvfile.Source.stdin(fmt.gzip), "standard input", fmt, options, d, choose)
    _database_options(str(path), fmt, options)
    path = Path(path)
    if fmt.is_database:
        _need_pyarrow("SQLite")
        return _open_database(path, fmt, options, choose)
    if fmt.is_features:
        _need_pyarrow(_FEATURE_NAMES[fmt.kind])
        return _open_features(path, fmt, options)
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
    unit: str | int | None = None,
    table: str | None = None,
    query: str | None = None,
    d: int | None = None,
    progress: bool | None = None,
    block_hook: BlockHook | None = None,
) -> InputPoints:
    """Read points from CSV, Parquet, .npy, SQLite or GeoPackage: :func:`open_input`, then
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
        unit=unit,
        table=table,
        query=query,
    )
    with open_input(path, options, d=d, choose=choose) as plan:
        return plan.read(progress, block_hook)


def _as_tuple(columns: Columns) -> tuple[str | int, ...]:
    return (columns,) if isinstance(columns, (str, int)) else tuple(columns)


#: Where the README's ``export DPDBSCAN_DATA=${DPDBSCAN_DATA:-../shared/data}`` points by default.
DEFAULT_DATA = "../shared/data"


def data_hint(path: Path | str) -> str:
    """What a missing input under the shared data's folder says about
    ``$DPDBSCAN_DATA`` (the README's commands read the data through it), or
    "": when the variable is unset and the path is under its default
    (``../shared/data``, relative to where the command runs) or was written
    ``"$DPDBSCAN_DATA/..."`` (and so became ``/name``), or when it is set and
    the path lies under it."""
    import os

    env = os.environ.get("DPDBSCAN_DATA")
    text = str(path)
    if env:
        root = env.rstrip("/") + "/"
        if text.startswith(root) or text.startswith(env.rstrip("/") + os.sep):
            return f" (under DPDBSCAN_DATA={env}: set DPDBSCAN_DATA to the folder that holds the data)"
        return ""
    p = Path(text)
    default = Path(DEFAULT_DATA)
    under_default = p.parent == default or str(p).startswith(DEFAULT_DATA + "/")
    from_empty_variable = p.parent == Path("/") and p.name != ""
    fix = (
        "set DPDBSCAN_DATA to the folder that holds the data, e.g. export DPDBSCAN_DATA=/path/to/shared/data"
    )
    if under_default:
        where = f"its default, {DEFAULT_DATA} from {Path.cwd()}"
        return f" (DPDBSCAN_DATA is not set and {where}, does not hold it: {fix})"
    if from_empty_variable:
        return f' (DPDBSCAN_DATA is not set, so a path written "$DPDBSCAN_DATA/{p.name}" became {p}: {fix})'
    return ""


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
    unit_name = None if layout.unit is None else names[layout.unit]

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        got = _read_csv(source, where, layout, head, chosen, skipped, progress, hook)
        got.unit_name = unit_name
        return got

    return InputPlan(
        where,
        fmt,
        chosen,
        skipped,
        read,
        source.close,
        unit_name=unit_name,
        schema_names=names if has_header else None,
    )


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
            X, units, counts = csvfile.read_blocks(source, head, layout, bar, hook)
    except (OSError, EOFError, pa.ArrowException, *csvfile.gzip_errors()) as exc:
        raise _io_error(where, "CSV", exc) from None
    finally:
        source.close()
    return InputPoints(
        X,
        names,
        n_unparseable=counts.unparseable,
        n_malformed=counts.malformed,
        skipped_columns=skipped,
        units=units,
        n_missing_unit=counts.missing_unit,
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


def _database_options(where: str, fmt: FileFormat, options: ReadOptions) -> None:
    """Refuse --table and --query where they do not apply (public: the options)."""
    given = [opt for opt, v in (("--table", options.table), ("--query", options.query)) if v is not None]
    if fmt.kind == "gpkg" and options.query is not None:
        raise ValueError(
            f"{where}: --query applies to SQLite files; a GeoPackage is an SQLite file: pass "
            "--format sqlite to query its tables (a geometry column is not read then)"
        )
    if given and not fmt.is_database:
        verb = "applies" if len(given) == 1 else "apply"
        raise ValueError(
            f"{where}: {' and '.join(given)} {verb} to SQLite and GeoPackage files only, not to {fmt.kind}"
        )


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
    unit = resolve_unit(names, options.unit, where=str(path))
    idx = resolve_columns(names, [True] * len(names), options.columns, choose, where=str(path), unit=unit)
    unit_name = None if unit is None else names[unit]

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        X = np.asarray(arr[:, idx], dtype=np.float64)
        units, n_missing = None, 0
        if unit is not None:
            # a numeric column: the unit is its value; NaN is missing
            units = np.array(arr[:, unit])
            missing = np.isnan(units) if units.dtype.kind == "f" else np.zeros(units.size, dtype=bool)
            X, n_missing = _drop_missing_units(X, missing)
        if hook is not None:
            hook(X)
        return InputPoints(
            X, [names[i] for i in idx], units=units, unit_name=unit_name, n_missing_unit=n_missing
        )

    return InputPlan(str(path), fmt, [names[i] for i in idx], [], read, unit_name=unit_name)


def _drop_missing_units(X: np.ndarray, missing: np.ndarray) -> tuple[np.ndarray, int]:
    """``X`` with the rows whose unit is ``missing`` set to NaN (dropped by
    the per-record rule), and how many of them had no other missing value."""
    if not missing.any():
        return X, 0
    n = int(np.count_nonzero(missing & ~np.isnan(X).any(axis=1)))
    X = X if X.flags.writeable else X.copy()
    X[missing] = np.nan
    return X, n


def _is_numeric(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t)


def _has_parquet_files(path: Path) -> bool:
    """Whether a directory holds a Parquet file (by name; hidden and
    ``_``-prefixed files are not data, as for pyarrow's datasets)."""
    return any(
        p.suffix.lower() in (".parquet", ".pq", ".parq") and not p.name.startswith((".", "_"))
        for p in path.rglob("*")
    )


class _ParquetSource:
    """A Parquet file, or a directory of them read as one dataset: the
    schema (metadata, public), the number of rows (metadata) and the rows
    in batches."""

    def __init__(self, path: Path) -> None:
        import pyarrow.dataset as pads
        import pyarrow.parquet as pq

        self.path = path
        if path.is_dir():
            self.dataset: Any = pads.dataset(path, format="parquet")
            self.file: Any = None
            self.schema = self.dataset.schema
        else:
            self.dataset, self.file = None, pq.ParquetFile(path)
            self.schema = self.file.schema_arrow

    def num_rows(self) -> int:
        return self.file.metadata.num_rows if self.file is not None else self.dataset.count_rows()

    def check_agreement(self, columns: Sequence[str]) -> None:
        """Refuse a dataset whose files declare ``columns`` with other types
        than the dataset's schema (taken from one of its files), from the
        files' schemas alone (public metadata), before any record is read.
        Reading them would cast each file's values to one type, and whether
        that cast succeeds (text ids to integers, microseconds to
        milliseconds, a large integer to a narrower one) depends on the
        values: one row could decide whether anything is released."""
        if self.dataset is None:
            return
        import pyarrow.parquet as pq

        schemas = [(Path(file).name, pq.read_schema(file)) for file in self.dataset.files]
        check_schemas_agree(self.schema, schemas, columns, where=str(self.path))
        if any(not got.equals(self.schema) for _, got in schemas):
            self._read_plain()

    def _read_plain(self) -> None:
        """Read the dataset with each field's plain type (dictionary encoding
        and large text aside): files that differ only in those (checked
        from their schemas) then read on every pyarrow, whose older versions
        cannot cast large text to a dictionary while scanning."""
        import pyarrow as pa
        import pyarrow.dataset as pads

        self.schema = pa.schema([pa.field(f.name, _plain_type(f.type), f.nullable) for f in self.schema])
        self.dataset = pads.dataset(self.path, format="parquet", schema=self.schema)

    def batches(self, columns: list[str]):
        if self.file is not None:
            return self.file.iter_batches(batch_size=1 << 20, columns=columns)
        return self.dataset.to_batches(columns=columns, batch_size=1 << 20)

    def close(self) -> None:
        if self.file is not None and hasattr(self.file, "close"):
            self.file.close()


def check_schemas_agree(
    schema: Any, schemas: Iterable[tuple[str, Any]], columns: Sequence[str], *, where: str
) -> None:
    """Refuse (ValueError, before any record is read) when a file of a
    Parquet dataset declares one of ``columns`` with another type than the
    dataset's ``schema``; ``schemas``: each file's (name, Arrow schema).
    Public: the schemas alone. See :meth:`_ParquetSource.check_agreement`."""
    for name_of_file, got_schema in schemas:
        for name in columns:
            if name not in got_schema.names or name not in schema.names:
                continue  # a column a file lacks reads as missing values in its rows
            got, want = got_schema.field(name).type, schema.field(name).type
            if not _same_values(got, want):
                raise ValueError(
                    f"{where}: the files of this dataset declare column {name!r} with different "
                    f"types ({want} in one, {got} in {name_of_file}); write every file with one "
                    "schema (each column one type) and read it again"
                )


def _plain_type(t: Any) -> Any:
    """An Arrow type without dictionary encoding or large offsets."""
    import pyarrow as pa

    t = t.value_type if pa.types.is_dictionary(t) else t
    if pa.types.is_large_string(t):
        return pa.string()
    return pa.binary() if pa.types.is_large_binary(t) else t


def _same_values(a: Any, b: Any) -> bool:
    """Whether two Arrow types hold the same values (dictionary encoding aside)."""
    return bool(_plain_type(a).equals(_plain_type(b)))


def _open_parquet(
    path: Path, fmt: FileFormat, options: ReadOptions, choose: ColumnChooser | None
) -> InputPlan:
    import pyarrow as pa

    _no_text_options(str(path), fmt, options)
    try:
        pf = _ParquetSource(path)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    schema = pf.schema
    numeric = [_is_numeric(f.type) for f in schema]
    types = [f.type for f in schema]
    idx, unit = schema_columns(
        schema.names, numeric, options.columns, options.unit, choose, types=types, where=str(path)
    )
    if unit is not None and unit_kind_of_arrow(schema[unit].type) is None:
        raise ValueError(
            f"{path}: the --unit column {schema.names[unit]!r} has type {schema[unit].type}; "
            "a unit must be integers, floats or text"
        )
    names = [schema.names[i] for i in idx]
    skipped = skipped_index_columns(schema.names, idx, options.columns)
    unit_name = None if unit is None else schema.names[unit]
    try:
        pf.check_agreement(names if unit_name is None else [*names, unit_name])
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        X, units, n_missing = _read_parquet(pf, path, names, unit_name, progress)
        if hook is not None:
            hook(X)
        return InputPoints(
            X, names, skipped_columns=skipped, units=units, unit_name=unit_name, n_missing_unit=n_missing
        )

    return InputPlan(
        str(path),
        fmt,
        names,
        skipped,
        read,
        pf.close,
        unit_name=unit_name,
        schema_names=list(schema.names),
    )


def _read_parquet(
    pf: _ParquetSource, path: Path, names: list[str], unit_name: str | None, progress: bool | None
) -> tuple[np.ndarray, Any, int]:
    """``(X, units, rows dropped for a missing unit)``; ``units`` a
    ChunkedArray of the unit column as declared (None without one)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts, units = [], []
    n_missing = 0
    columns = names if unit_name is None else [*names, unit_name]
    try:
        with progress_bar(f"reading {path.name}", total=pf.num_rows(), enabled=progress, unit="rows") as bar:
            for batch in pf.batches(columns):
                # safe=False: a huge int64 becomes the nearest double instead of
                # an error that would quote it.
                cols = [
                    pc.cast(batch.column(n), pa.float64(), safe=False).to_numpy(zero_copy_only=False)
                    for n in names
                ]
                X = np.column_stack(cols) if cols else np.zeros((batch.num_rows, 0))
                if unit_name is not None:
                    u = batch.column(unit_name)
                    X, missing = _drop_missing_units(X, unit_missing(u))
                    n_missing += missing
                    units.append(u)
                parts.append(X)
                bar.update(batch.num_rows)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    X = np.concatenate(parts) if parts else np.zeros((0, len(names)))
    if unit_name is None:
        return X, None, 0
    return X, pa.chunked_array(units, type=pf.schema.field(unit_name).type), n_missing


# --------------------------------------------------------------------------- #
# SQLite and GeoPackage: the schema and a GeoPackage's metadata, never the rows


def _connect(path: Path) -> Any:
    import sqlite3

    try:
        return sqlitefile.connect(path)
    except sqlite3.Error:
        raise sqlitefile.cannot_read(str(path)) from None


def _open_database(
    path: Path, fmt: FileFormat, options: ReadOptions, choose: ColumnChooser | None
) -> InputPlan:
    """An SQLite table, view or query (``fmt.kind == "sqlite"``), or a
    GeoPackage's point layer, opened read-only: the columns, the unit's and
    (GeoPackage) the layer's SRS from the schema; no row read."""
    where = str(path)
    _no_text_options(where, fmt, options)
    con = _connect(path)
    try:
        layer = None
        if fmt.kind == "gpkg":
            if options.columns is not None:
                raise ValueError(
                    f"{where}: a GeoPackage layer's coordinates are its point geometry (x, y), not "
                    "--columns; to read other columns read the file as SQLite: --format sqlite --table NAME"
                )
            layer = gpkgfile.layer_of(con, where, options.table)
        table = sqlitefile.Table(con, where, layer.table if layer else options.table, options.query)
        unit = resolve_unit(table.names, options.unit, where=where)
        if unit is not None and table.affinity(unit) not in sqlitefile.UNIT_KINDS:
            declared = table.declared[unit] or "without a type"
            raise ValueError(
                f"{where}: the --unit column {table.names[unit]!r} is declared {declared!r}; "
                "a unit is read by its column's declared type, which must be INTEGER, REAL or TEXT "
                "(a query's expression has none: select the table's column as it is)"
            )
        if layer is None:
            numeric = [table.affinity(i) in ("integer", "real", "numeric") for i in range(len(table.names))]
            idx = resolve_columns(table.names, numeric, options.columns, choose, where=where, unit=unit)
            names = [table.names[i] for i in idx]
        else:
            if unit is not None and table.names[unit] == layer.geometry:
                raise ValueError(f"{where}: the --unit column {layer.geometry!r} is the layer's geometry")
            idx, names = [], ["x", "y"]
    except BaseException:
        con.close()
        raise
    skipped = [] if layer else skipped_index_columns(table.names, idx, options.columns)
    unit_name = None if unit is None else table.names[unit]

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        got = _read_database(table, layer, idx, unit, path, progress, hook)
        got.names, got.skipped_columns, got.unit_name = names, skipped, unit_name
        return got

    return InputPlan(
        where,
        fmt,
        names,
        skipped,
        read,
        con.close,
        unit_name=unit_name,
        schema_names=list(table.names),
        crs=None if layer is None else layer.srs,
        lonlat=None if layer is None else layer.lonlat,
    )


def _read_database(
    table: sqlitefile.Table,
    layer: gpkgfile.Layer | None,
    idx: list[int],
    unit: int | None,
    path: Path,
    progress: bool | None,
    hook: BlockHook | None,
) -> InputPoints:
    """Every row of ``table``, one chunk at a time: the coordinates (the
    columns ``idx``, or the layer's points), the unit by its declared kind."""
    import pyarrow as pa

    affs = [table.affinity(i) for i in idx]
    if layer is None:
        pairs = [sqlitefile.coordinate_exprs(table.names[i], a) for i, a in zip(idx, affs)]
        exprs = [v for v, _ in pairs] + [sqlitefile.bad_expr([b for _, b in pairs])]
    else:
        exprs = [sqlitefile.quote(layer.geometry)]
    unit_type = None
    if unit is not None:
        aff = table.affinity(unit)
        exprs.append(sqlitefile.unit_expr(table.names[unit], aff))
        unit_type = pa.type_for_alias(sqlitefile.UNIT_KINDS[aff][1])
    d = 2 if layer else len(idx)

    def blocks() -> Iterator[tuple[np.ndarray, np.ndarray, Any]]:
        for rows in table.chunks(exprs):
            ids = [r[-1] for r in rows] if unit_type is not None else None
            if layer is None:
                yield (*sqlitefile.coordinates(rows, affs), ids)
            else:
                yield (*gpkgfile.points([r[0] for r in rows], layer.srs_id), ids)

    got = InputPoints(np.zeros((0, d)), [])
    return _gather(blocks(), got, layer is not None, unit_type, hook, path, progress)


def _gather(
    blocks: Iterable[tuple[np.ndarray, np.ndarray, Any]],
    got: InputPoints,
    not_points: bool,
    unit_type: Any,
    hook: BlockHook | None,
    path: Path,
    progress: bool | None,
) -> InputPoints:
    """``got`` with the points of ``blocks`` (each ``(X, bad rows, unit
    ids or None)``, in order): the bad rows counted as values that are not
    numbers, or (``not_points``) as geometries that are not points; the
    units typed ``unit_type`` (None: no unit), a row without one dropped."""
    import pyarrow as pa

    parts, units = [], []
    with progress_bar(f"reading {path.name}", enabled=progress, unit="rows") as bar:
        for X, bad, ids in blocks:
            n_bad = int(np.count_nonzero(bad))
            if not_points:
                got.n_not_point += n_bad
            else:
                got.n_unparseable += n_bad
            if unit_type is not None:
                u = pa.array(ids, type=unit_type, from_pandas=True)
                X, missing = _drop_missing_units(X, unit_missing(u))
                got.n_missing_unit += missing
                units.append(u)
            if hook is not None:
                hook(X)
            parts.append(X)
            bar.update(X.shape[0])
    got.X = np.concatenate(parts) if parts else got.X
    if unit_type is not None:
        got.units = pa.chunked_array(units, type=unit_type)
    return got


def _database_column(path: Path, fmt: FileFormat, options: ReadOptions, column: str | int) -> Any:
    """A time or status column of an SQLite table or query, or of a
    GeoPackage layer, row for row with the points (the same table, the same
    order): a pyarrow ChunkedArray (:func:`sqlitefile.companion_expr`)."""
    import pyarrow as pa

    where = str(path)
    con = _connect(path)
    try:
        layer = gpkgfile.layer_of(con, where, options.table) if fmt.kind == "gpkg" else None
        table = sqlitefile.Table(con, where, layer.table if layer else options.table, options.query)
        j = resolve_unit(table.names, column, where=where)
        assert j is not None  # a column was named
        expr, arrow = sqlitefile.companion_expr(table.names[j], table.affinity(j))
        kind = pa.type_for_alias(arrow)
        chunks = [pa.array(next(iter(zip(*rows))), type=kind) for rows in table.chunks([expr])]
    finally:
        con.close()
    return pa.chunked_array(chunks, type=kind)


# --------------------------------------------------------------------------- #
# GeoJSON and GPX: lon/lat points by the format's definition, read as a stream

_FEATURE_NAMES = {"geojson": "GeoJSON", "gpx": "GPX"}


def _feature_unit(where: str, fmt: FileFormat, unit: str | int | None) -> str | None:
    """The unit of a GeoJSON file (a property's name) or of a GPX file
    (``track``), from the options alone; refused otherwise."""
    if unit is None:
        return None
    if fmt.kind == "gpx":
        name = gpxfile.COLUMNS[resolve_unit(gpxfile.COLUMNS, unit, where=where) or 0]
        if name != "track":
            raise ValueError(f"{where}: a GPX file's unit is its track: --unit track (each <trk> one unit)")
        return name
    if not isinstance(unit, str) or unit.isdigit():
        raise ValueError(f"{where}: a GeoJSON unit is a property, named: --unit NAME (unit='NAME')")
    return unit


def _open_features(path: Path, fmt: FileFormat, options: ReadOptions) -> InputPlan:
    """A GeoJSON or GPX file: its points' lon/lat (x, y), the unit by the
    options alone; nothing is read before :meth:`InputPlan.read`."""
    where = str(path)
    _no_text_options(where, fmt, options)
    what = _FEATURE_NAMES[fmt.kind]
    if options.columns is not None:
        raise ValueError(
            f"{where}: the coordinates of a {what} file are its points' longitude and latitude "
            "(x, y), not --columns"
        )
    unit = _feature_unit(where, fmt, options.unit)
    names = ["x", "y"]

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        got = InputPoints(np.zeros((0, 2)), names, unit_name=unit)
        unit_type = None if unit is None else pa_type("int64" if fmt.kind == "gpx" else "binary")
        blocks = _feature_chunks(path, fmt, unit, where)
        return _gather(blocks, got, fmt.kind == "geojson", unit_type, hook, path, progress)

    schema = list(gpxfile.COLUMNS) if fmt.kind == "gpx" else None
    return InputPlan(
        where, fmt, names, [], read, unit_name=unit, schema_names=schema, crs="EPSG:4326", lonlat=True
    )


def _feature_chunks(path: Path, fmt: FileFormat, unit: str | None, where: str) -> Any:
    """``(X, bad, unit ids)`` chunk by chunk; the parsers' errors name no value."""
    try:
        if fmt.kind == "geojson":
            yield from geojsonfile.chunks(path, unit)
            return
        for rows in gpxfile.rows(path):
            X = np.array([(r[0], r[1]) for r in rows], dtype=np.float64).reshape(-1, 2)
            bad = np.array([r[2] for r in rows], dtype=bool)
            yield X, bad, [r[5] for r in rows]
    except ValueError as exc:
        raise ValueError(f"{where}: cannot read as {_FEATURE_NAMES[fmt.kind]}: {exc}") from None
    except OSError as exc:
        raise _io_error(where, _FEATURE_NAMES[fmt.kind], exc) from None


def _feature_column(path: Path, fmt: FileFormat, column: str | int) -> Any:
    """A time or status column of a GeoJSON file (a property's text) or of a
    GPX file (one of :data:`gpxfile.COLUMNS`), row for row with the points."""
    where = str(path)
    if fmt.kind == "geojson":
        if not isinstance(column, str):
            raise ValueError(f"{where}: a GeoJSON column is a property, named (not the index {column})")
        return _catching(
            where,
            fmt,
            lambda: chunked(
                [pa_array(c, pa_type("string")) for c in geojsonfile.column(path, column)], pa_type("string")
            ),
        )
    j = resolve_unit(gpxfile.COLUMNS, column, where=where)
    assert j is not None
    kind = {"x": "float64", "y": "float64", "time": "string", "ele": "float64", "track": "int64"}
    at = {"x": 0, "y": 1, "time": 3, "ele": 4, "track": 5}[gpxfile.COLUMNS[j]]
    t = pa_type(kind[gpxfile.COLUMNS[j]])
    return _catching(
        where, fmt, lambda: chunked([pa_array([r[at] for r in rows], t) for rows in gpxfile.rows(path)], t)
    )


def _catching(where: str, fmt: FileFormat, make: Callable[[], Any]) -> Any:
    try:
        return make()
    except ValueError as exc:
        raise ValueError(f"{where}: cannot read as {_FEATURE_NAMES[fmt.kind]}: {exc}") from None
    except OSError as exc:
        raise _io_error(where, _FEATURE_NAMES[fmt.kind], exc) from None


def pa_type(name: str) -> Any:
    import pyarrow as pa

    return pa.type_for_alias(name)


def pa_array(values: Any, t: Any) -> Any:
    import pyarrow as pa

    return pa.array(values, type=t, from_pandas=True)


def chunked(chunks: list[Any], t: Any) -> Any:
    import pyarrow as pa

    return pa.chunked_array(chunks, type=t)


# --------------------------------------------------------------------------- #
# A companion column: a trace's time or status, row for row with the points


def read_columns(
    path: Path | str,
    column: str | int,
    flag: str | int | None = None,
    options: ReadOptions | None = None,
    *,
    d: int | None = None,
    choose: ColumnChooser | None = None,
    progress: bool | None = None,
) -> tuple[Any, Any]:
    """Companion columns of ``path`` (a trace's time and, optionally, its
    0/1 status ``flag``), row for row with :func:`read_input`'s points under
    the same ``options``, in one more pass: ``(column, flag)``.

    ``column`` as read, nothing parsed: a pyarrow array of the CSV fields'
    bytes (null for a missing field or a malformed line), a Parquet column of
    its declared type, an SQLite column by its declared type
    (:func:`.sqlitefile.companion_expr`), or a .npy column. ``flag`` (None if not asked): the
    same. The columns are public input (names or 0-based indices),
    refused before any record is read when the file does not have them.
    Standard input cannot be read twice.
    """
    options = options or ReadOptions()
    if str(path) == "-":
        raise ValueError("standard input is read once; a time or status column needs a file (give its path)")
    fmt = FileFormat("parquet") if Path(path).is_dir() else format_of(path, options.file_format)
    if fmt.is_database:
        _need_pyarrow("SQLite")
        return _database_column(Path(path), fmt, options, column), (
            None if flag is None else _database_column(Path(path), fmt, options, flag)
        )
    if fmt.is_features:
        _need_pyarrow(_FEATURE_NAMES[fmt.kind])
        return _feature_column(Path(path), fmt, column), (
            None if flag is None else _feature_column(Path(path), fmt, flag)
        )
    if fmt.kind == "parquet":
        _need_pyarrow("Parquet")
        return _parquet_column(Path(path), column), (
            None if flag is None else _parquet_column(Path(path), flag)
        )
    if fmt.kind == "npy":
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
        arr = arr.reshape(-1, 1) if arr.ndim == 1 else arr
        names = [str(i) for i in range(arr.shape[1])]
        picked = [resolve_unit(names, c, where=str(path)) for c in (column, flag) if c is not None]
        cols = [np.array(arr[:, j]) for j in picked]
        return cols[0], (cols[1] if flag is not None else None)
    # CSV: the same reader, the column as a "unit" (its bytes, exactly, aligned
    # with the rows by the same per-record rules); the flag the same way in a
    # pass of its own, so that a status written as text (true/false, free/hired)
    # is read as text
    got = [_csv_field(path, c, options, d, choose, progress) for c in (column, flag) if c is not None]
    return got[0], (got[1] if flag is not None else None)


def _csv_field(
    path: Path | str,
    column: str | int,
    options: ReadOptions,
    d: int | None,
    choose: ColumnChooser | None,
    progress: bool | None,
) -> Any:
    """One CSV column's fields as bytes (null when missing), row for row with
    the points: read as the unit column is, beside the points' columns."""
    with open_input(path, replace(options, unit=column), d=d, choose=choose) as plan:
        return plan.read(progress).units


def check_parquet_columns(
    path: Path | str, columns: Sequence[str | int], options: ReadOptions | None = None
) -> None:
    """Refuse, from the files' schemas alone (no record read), a Parquet
    dataset whose files declare one of ``columns`` (names or 0-based
    indices: a trace's time and status) with different types, as
    :func:`read_columns` would once reading; other inputs pass. For the
    checks made before a ledger charges anything."""
    options = options or ReadOptions()
    if str(path) == "-" or not columns:
        return
    fmt = FileFormat("parquet") if Path(path).is_dir() else format_of(path, options.file_format)
    if fmt.kind != "parquet":
        return
    import pyarrow as pa

    _need_pyarrow("Parquet")
    try:
        pf = _ParquetSource(Path(path))
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    try:
        names = [pf.schema.names[resolve_unit(pf.schema.names, c, where=str(path))] for c in columns]
        pf.check_agreement(names)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    finally:
        pf.close()


def _parquet_column(path: Path, column: str | int) -> Any:
    import pyarrow as pa

    try:
        pf = _ParquetSource(path)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    try:
        j = resolve_unit(pf.schema.names, column, where=str(path))
        name = pf.schema.names[j]
        pf.check_agreement([name])
        chunks = [batch.column(name) for batch in pf.batches([name])]
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    finally:
        pf.close()
    return pa.chunked_array(chunks, type=pf.schema.field(name).type)


__all__ = [
    "InputPlan",
    "InputPoints",
    "open_input",
    "read_columns",
    "check_parquet_columns",
    "read_input",
    "read_points",
    "BlockCounts",
]
