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
from . import csvfile, geojsonfile, gpkgfile, gpxfile, pltfile, sqlitefile, tracefolder
from .formats import FileFormat, format_of
from .layout import (
    ColumnChooser,
    Columns,
    ReadOptions,
    csv_layout,
    resolve_columns,
    resolve_trace_column,
    resolve_unit,
    schema_columns,
    skipped_index_columns,
    undecided_header,
)
from .parquetfiles import (
    ALSO,
    COORDINATE,
    UNIT,
    combined_column,
    combined_units,
    declared,
    declares,
    file_columns,
    files_differ,
    merged_schema,
    plain_type,
    readable,
    refuse_unnamed_columns,
)
from .records import BlockCounts, CsvLayout, unit_missing

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
    companions : tuple, optional
        The columns asked beside the points (``open_input``'s ``also``: a
        trace's time and status), row for row, when the reader read them in
        the same pass (None: read them with :func:`read_columns`): what
        :func:`read_columns` returns, value for value (CSV fields' bytes,
        Parquet columns as declared, ...).
    n_damaged_files, n_damaged_rows : int
        Files of a trace folder that could not be read, and the rows read
        from them before that: all dropped.
    n_cut_files, n_cut_rows : int
        Files of a trace folder that stop being valid part-way (a gzip CSV
        file cut short), and their rows before the break: kept (the rest of
        each is not read).
    n_skipped_files : int
        Files of a trace folder not of its format (by name), left alone.
    n_no_unit_property : bool
        GeoJSON with a ``--unit`` property: no feature had it (every row dropped).
    n_read_before_damage : int, optional
        A GeoJSON file whose envelope stopped being valid JSON, or a GPX
        file whose head is not GPX: the records read before (the rest is
        not read). None: read whole.
    n_damaged_records : int
        Places where a GeoJSON file's features are not valid JSON (a broken
        feature is dropped; reading went on at the next line that begins
        with ``{``).
    n_broken_points : int
        GPX points (in a file, or in a folder's files) whose element does
        not end before the next track or point tag: each dropped, reading
        going on at that tag.
    n_stray_files : int
        With ``--unit-from folder``: files lying directly in the folder, in
        no unit's sub-folder, left alone.
    n_query_failed : int
        Rows of the table an SQLite ``--query`` reads on which the query
        failed alone (an expression raised on the row's values): dropped
        (:meth:`.sqlitefile.Table.chunks`).
    n_read_before_cut : int, optional
        A gzip CSV file that ends early (cut part-way, as by an interrupted
        download): the rows read from the text before the cut, as a plain CSV
        file cut there reads them (a cut line by the same rules). None:
        read whole.
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
    companions: tuple[Any, ...] | None = None
    n_damaged_files: int = 0
    n_damaged_rows: int = 0
    n_cut_files: int = 0
    n_cut_rows: int = 0
    n_skipped_files: int = 0
    n_no_unit_property: bool = False
    n_read_before_damage: int | None = None
    n_read_before_cut: int | None = None
    n_damaged_records: int = 0
    n_broken_points: int = 0
    n_stray_files: int = 0
    n_query_failed: int = 0

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
                "(check --delimiter, --header and --fields; a line longer than 64 MiB is one, unread)"
            )
        if self.n_not_point:
            out.append(f"{self.n_not_point:,} row(s) whose geometry is not a point (or is empty) are dropped")
        if self.n_query_failed:
            out.append(
                f"{self.n_query_failed:,} row(s) on which the --query failed (an expression raised on the "
                "row's values) are dropped"
            )
        if self.n_read_before_damage is not None:
            out.append(
                f"the file stops being valid JSON or XML after {self.n_read_before_damage:,} "
                "record(s): the rest of it is not read (dropped); "
                "the release is made from the records before"
            )
        if self.n_damaged_records:
            out.append(
                f"the file is not valid JSON in {self.n_damaged_records:,} place(s) (a feature longer "
                "than 64 Mi characters is one, unread): a broken feature "
                "is dropped, with any feature written after it on its line; reading goes on at the "
                "next line that begins with '{' (write one feature per line, so that a broken one "
                "hides no other)"
            )
        if self.n_broken_points:
            out.append(
                f"{self.n_broken_points:,} GPX point(s) are not well-formed XML (damaged, cut, or "
                "holding another point) and are dropped; reading goes on at the next <trk>, "
                "<trkpt>, <rtept> or <wpt> tag, so a broken point or track hides no other"
            )
        if self.n_read_before_cut is not None:
            out.append(cut_note(self.n_read_before_cut))
        if self.n_damaged_files:
            rows = f": their {self.n_damaged_rows:,} row(s) read are dropped" if self.n_damaged_rows else ""
            out.append(
                f"{self.n_damaged_files:,} file(s) of the folder could not be read (damaged, or not "
                f"the --format){rows}"
            )
        if self.n_cut_files:
            out.append(
                f"{self.n_cut_files:,} file(s) of the folder stop being valid part-way: their "
                f"{self.n_cut_rows:,} row(s) before the break are kept, the rest of each is not read"
            )
        if self.n_skipped_files:
            out.append(
                f"{self.n_skipped_files:,} file(s) of the folder not named as --format files are left alone"
            )
        if self.n_stray_files:
            out.append(
                f"{self.n_stray_files:,} file(s) lie directly in the folder, in no unit's sub-folder "
                "(--unit-from folder): left alone"
            )
        if self.n_no_unit_property:
            out.append(
                f"no feature has the property {self.unit_name!r} (--unit): every row is dropped; "
                "check the property's name (GeoJSON units are properties, named exactly)"
            )
        elif self.n_missing_unit:
            out.append(
                f"{self.n_missing_unit:,} row(s) with no unit (column {self.unit_name!r}, --unit) are dropped"
            )
        return out


def cut_note(rows: int, files: int = 1) -> str:
    """The private note on gzip CSV files that end early (cut part-way):
    ``rows``, read before the cut, are kept (counts only, nothing quoted)."""
    if files == 1:
        return (
            f"the compressed file ends early (cut part-way, as by an interrupted download) after "
            f"{rows:,} row(s): the rows before the cut are kept, the rest is missing"
        )
    return (
        f"{files:,} compressed files end early (cut part-way, as by an interrupted download) after "
        f"{rows:,} row(s) in all: the rows before each cut are kept, the rest of each is missing"
    )


class InputPlan:
    """How a file will be read, decided before any record is read.

    ``names`` are the selected columns and ``d`` their number; ``where``
    names the file in messages. ``unit_name`` is the privacy unit's column
    (None: no unit is read) and ``schema_names`` every column's name when a
    declared header or a schema gives them (None otherwise): public.
    ``crs`` is the spatial reference a GeoPackage layer declares (``"EPSG:4326"``;
    None: the file declares none) and ``lonlat`` whether it is WGS 84
    longitude/latitude (None: not declared): metadata, public.
    ``companions``: whether :meth:`read` reads ``open_input``'s ``also``
    columns in its one pass (:attr:`InputPoints.companions`).
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
        companions: bool = False,
    ) -> None:
        self.where, self.format, self.names, self.skipped = where, fmt, names, skipped
        self.companions = companions
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
    also: Sequence[str | int] = (),
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
    also : names or 0-based indices
        Columns to read beside the points in the same pass (a trace's time
        and status), into :attr:`InputPoints.companions`, where the format
        reads them so (:attr:`InputPlan.companions`: every format but .npy,
        standard input included; a CSV column is read so only where that pass
        reads it exactly as :func:`read_columns` would, the same fields per
        line and not a coordinate, and a Parquet column only when the schema
        has it); otherwise they are left to :func:`read_columns`, which
        reads or refuses them as before. A column an SQLite table, a
        GeoPackage layer or the GPX and PLT formats lack is refused before
        any record is read.

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
            if options.unit_from is not None:
                _need_pyarrow("a folder of trace files")
                return _open_folder(Path(path), options, d, choose, also)
            # a dataset: its files' names (public) say it is one, never their bytes
            if options.file_format not in (None, "parquet") or not _has_parquet_files(Path(path)):
                raise IsADirectoryError(
                    f"input is a folder: {path}; a folder is read as a Parquet dataset (files named "
                    "*.parquet in it), or as trace files, one per person or vehicle, with --unit-from "
                    "file|folder and --format"
                )
            _need_pyarrow("Parquet")
            return _open_parquet(Path(path), FileFormat("parquet"), options, choose, also)
    if options.unit_from is not None:
        raise ValueError(
            f"{'standard input' if str(path) == '-' else path}: --unit-from (unit_from=) takes the unit "
            "from the files of a folder: give the folder"
        )
    fmt = format_of(path, options.file_format)
    if str(path) == "-":
        if not fmt.is_text:
            raise ValueError(
                f"standard input: only CSV can be read from '-'; pass the path of the {fmt.kind} file"
            )
        _need_pyarrow("CSV")
        stdin = csvfile.Source.stdin
        return _open_csv(lambda: stdin(fmt.gzip), "standard input", fmt, options, d, choose, also)
    _database_options(str(path), fmt, options)
    path = Path(path)
    if fmt.is_database:
        _need_pyarrow("SQLite")
        return _open_database(path, fmt, options, choose, also)
    if fmt.is_features:
        _need_pyarrow(_FEATURE_NAMES[fmt.kind])
        return _open_features(path, fmt, options, also)
    if fmt.kind == "npy":
        return _open_npy(path, fmt, options, choose)
    if fmt.kind == "parquet":
        _need_pyarrow("Parquet")
        return _open_parquet(path, fmt, options, choose, also)
    _need_pyarrow("CSV")
    return _open_csv(lambda: csvfile.Source.file(path, fmt.gzip), str(path), fmt, options, d, choose, also)


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
    unit_from: str | None = None,
    also: Sequence[str | int] = (),
    d: int | None = None,
    progress: bool | None = None,
    block_hook: BlockHook | None = None,
) -> InputPoints:
    """Read points from CSV, Parquet, .npy, SQLite or GeoPackage: :func:`open_input`, then
    :meth:`InputPlan.read`. The keywords are :class:`ReadOptions`' fields,
    ``d`` and ``choose`` of :func:`open_input`, and ``read``'s ``progress``
    and ``block_hook``, and ``also``, columns read beside the points in one
    pass where the format can (:attr:`InputPoints.companions`).

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
        unit_from=unit_from,
    )
    with open_input(path, options, d=d, choose=choose, also=also) as plan:
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
    p = Path(text)
    default = Path(DEFAULT_DATA)
    under_default = p.parent == default or str(p).startswith(DEFAULT_DATA + "/")
    if env:
        root = env.rstrip("/") + "/"
        if text.startswith(root) or text.startswith(env.rstrip("/") + os.sep):
            return f" (under DPDBSCAN_DATA={env}: set DPDBSCAN_DATA to the folder that holds the data)"
        if under_default:
            # a path copied with the variable's default spelled out, where the variable says otherwise
            return (
                f" ({DEFAULT_DATA} is only DPDBSCAN_DATA's default; here DPDBSCAN_DATA={env}: "
                f'write "$DPDBSCAN_DATA/{text[len(DEFAULT_DATA) + 1 :] or p.name}")'
            )
        return ""
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
    also: Sequence[str | int] = (),
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
            if source.cut and not head and source.last not in (b"\n", b"\r"):
                raise EOFError("the compressed text ends within the header line")
        else:
            header, head = None, csvfile.strip_bom(source)
        names, layout = csv_layout(fmt, options, header, d, choose, where=where)
        extra = _csv_companions(fmt, options, header, d, choose, layout, also, where)
    except (OSError, EOFError, pa.ArrowException, *csvfile.gzip_errors()) as exc:
        source.close()
        raise _io_error(where, "CSV", exc) from None
    except BaseException:
        source.close()
        raise
    if extra is not None:
        layout = replace(layout, also=extra)
    chosen = [names[i] for i in layout.usecols]
    skipped = skipped_index_columns(names, layout.usecols, options.columns)
    unit_name = None if layout.unit is None else names[layout.unit]

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        got = _read_csv(source, where, layout, head, chosen, skipped, progress, hook)
        got.unit_name = unit_name
        if extra is None:
            got.companions = None
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
        companions=extra is not None,
    )


def _csv_companions(
    fmt: FileFormat,
    options: ReadOptions,
    header: bytes | None,
    d: int | None,
    choose: ColumnChooser | None,
    layout: CsvLayout,
    also: Sequence[str | int],
    where: str,
) -> tuple[int, ...] | None:
    """The fields of a CSV file's ``also`` columns (a trace's time and
    status) when the points' own pass reads them exactly as
    :func:`read_columns` reads each in a pass of its own (the column as the
    layout's unit, :func:`_csv_field`): the same fields per line and
    delimiter, and not a coordinate. None (no ``also``, or a column that
    pass would read otherwise or refuse): they are left to
    :func:`read_columns`, which reads or refuses them as before. Public: the
    options, the declared header and ``d`` alone."""
    if not also:
        return None
    fields = []
    for column in also:
        try:
            _, alone = csv_layout(fmt, replace(options, unit=column), header, d, choose, where=where)
        except ValueError:
            return None
        same = (alone.n_fields, alone.delimiter) == (layout.n_fields, layout.delimiter)
        if not same or alone.unit is None or alone.unit in layout.usecols:
            return None
        fields.append(alone.unit)
    return tuple(fields)


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
            X, units, counts, also = csvfile.read_blocks(source, head, layout, bar, hook)
        if source.cut and X.shape[0] - (source.last not in (b"\n", b"\r")) <= 0:
            raise EOFError("the compressed text ends before its first complete record")
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
        companions=also,
        n_read_before_cut=X.shape[0] if source.cut else None,
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


#: The most rows of a Parquet batch (a row group's end also ends one).
BATCH_ROWS = 1 << 20


class _ParquetSource:
    """A Parquet file, or a directory of them read as one dataset: the
    schema (metadata, public), the number of rows (metadata) and the rows
    in batches. A dataset's schema is its files' together
    (:func:`~dpdbscan.files.parquetfiles.merged_schema`: a column any file
    declares), read from every file's metadata, never a record."""

    def __init__(self, path: Path) -> None:
        import pyarrow.dataset as pads
        import pyarrow.parquet as pq

        self.path = path
        #: each file of a dataset with its schema, in the dataset's order
        self.files: list[tuple[str, Any]] = []
        #: the read columns' roles, when each file is read alone (:meth:`plan_read`)
        self.alone: dict[str, str] | None = None
        if path.is_dir():
            self.dataset: Any = pads.dataset(path, format="parquet")
            self.file: Any = None
            self.files = [(file, pq.read_schema(file)) for file in self.dataset.files]
            self.schema = merged_schema([s for _, s in self.files]) if self.files else self.dataset.schema
        else:
            self.dataset, self.file = None, pq.ParquetFile(path)
            self.schema = self.file.schema_arrow

    def num_rows(self) -> int:
        return self.file.metadata.num_rows if self.file is not None else self.dataset.count_rows()

    def declares(self, name: str, role: str) -> bool:
        """Whether the file declares ``name`` with a type read as ``role``,
        or some file of the dataset does or declares it ``null``
        (:func:`~dpdbscan.files.parquetfiles.declares`; public: the schemas)."""
        if self.dataset is None:
            return readable(role, declared(self.schema, name))
        return declares([s for _, s in self.files], name, role)

    def plan_read(self, roles: dict[str, str]) -> None:
        """How a dataset's read columns (``roles``: name to role) are read,
        from the files' schemas alone (public metadata), before any record
        is read. Where the files that declare each column agree on its type
        (a file lacking it, or declaring the ``null`` type, reads as
        missing values in its rows), together, as one dataset of the merged
        schema's plain types; otherwise each file alone, by its own types
        (:mod:`dpdbscan.files.parquetfiles`). Before, the files were cast to
        one file's type, or refused when they disagreed: one unit's file,
        its unit column all missing (typed ``null``) or its ids declared as
        floats, decided whether anything was released (docs/privacy.md
        section 8)."""
        if self.dataset is None:
            return
        schemas = [s for _, s in self.files]
        if files_differ(schemas, roles):
            self.alone = dict(roles)
        elif any(not got.equals(self.schema) for got in schemas):
            self._read_plain()

    def _read_plain(self) -> None:
        """Read the dataset with each field's plain type (dictionary encoding
        and large text aside): files that differ only in those (checked
        from their schemas) then read on every pyarrow, whose older versions
        cannot cast large text to a dictionary while scanning."""
        import pyarrow as pa
        import pyarrow.dataset as pads

        self.schema = pa.schema([pa.field(f.name, plain_type(f.type), f.nullable) for f in self.schema])
        self.dataset = pads.dataset(self.path, format="parquet", schema=self.schema)

    def batches(self, columns: list[str]):
        if self.file is not None:
            return self.file.iter_batches(batch_size=BATCH_ROWS, columns=columns)
        return self.dataset.to_batches(columns=columns, batch_size=BATCH_ROWS)

    def file_batches(self) -> Iterator[dict[str, Any]]:
        """Each file's batches alone, in the dataset's order (:attr:`alone`):
        each read column of each batch by its role and the file's own type
        (:func:`~dpdbscan.files.parquetfiles.file_columns`)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        assert self.alone is not None
        for file, schema in self.files:
            have = [c for c in self.alone if c in schema.names]
            one = pq.ParquetFile(file)
            try:
                for batch in one.iter_batches(batch_size=BATCH_ROWS, columns=have):
                    yield file_columns(pa.Table.from_batches([batch]), self.alone)
            finally:
                one.close()

    def close(self) -> None:
        if self.file is not None and hasattr(self.file, "close"):
            self.file.close()


def _open_parquet(
    path: Path,
    fmt: FileFormat,
    options: ReadOptions,
    choose: ColumnChooser | None,
    also: Sequence[str | int] = (),
) -> InputPlan:
    import pyarrow as pa

    _no_text_options(str(path), fmt, options)
    try:
        pf = _ParquetSource(path)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    refuse_unnamed_columns(pf.dataset is not None, options.columns)  # public: a folder, the option
    schema = pf.schema
    numeric = [_is_numeric(f.type) for f in schema]
    types = [f.type for f in schema]
    idx, unit = schema_columns(
        schema.names, numeric, options.columns, options.unit, choose, types=types, where=str(path)
    )
    if (
        unit is not None
        and not pf.declares(schema.names[unit], UNIT)
        and not pa.types.is_null(schema[unit].type)
    ):
        # a unit column of the null type (how pandas and pyarrow write one
        # that is all missing) reads as no unit, its rows dropped, as in a
        # dataset's file: with one more row that has an id it would be typed
        # and read, so refusing it let one unit decide whether anything was
        # released
        raise ValueError(
            f"{path}: the --unit column {schema.names[unit]!r} has type {schema[unit].type}; "
            "a unit must be integers, floats or text"
        )
    names = [schema.names[i] for i in idx]
    skipped = skipped_index_columns(schema.names, idx, options.columns)
    unit_name = None if unit is None else schema.names[unit]
    extra = _parquet_companions(schema.names, also)
    one_pass = bool(also) and len(extra) == len(also)
    pf.plan_read(_roles(names, unit_name, extra))

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        X, units, n_missing, more = _read_parquet(pf, path, names, unit_name, progress, extra)
        if hook is not None:
            hook(X)
        return InputPoints(
            X,
            names,
            skipped_columns=skipped,
            units=units,
            unit_name=unit_name,
            n_missing_unit=n_missing,
            companions=more if one_pass else None,
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
        companions=one_pass,
    )


def _parquet_companions(names: Sequence[str], also: Sequence[str | int]) -> list[str]:
    """The names of a Parquet schema's ``also`` columns (a trace's time and
    status), read in the points' own batches; none when one is not in the
    schema (left to :func:`read_columns`, which refuses it as before)."""
    try:
        return [names[resolve_trace_column(names, c)] for c in also]
    except ValueError:
        return []


def _roles(names: Sequence[str], unit_name: str | None, also: Sequence[str] = ()) -> dict[str, str]:
    """The read columns of a Parquet file or dataset and what each is read as."""
    roles = dict.fromkeys(names, COORDINATE)
    if unit_name is not None:
        roles.setdefault(unit_name, UNIT)
    for name in also:
        roles.setdefault(name, ALSO)
    return roles


def _read_parquet(
    pf: _ParquetSource,
    path: Path,
    names: list[str],
    unit_name: str | None,
    progress: bool | None,
    also: Sequence[str] = (),
) -> tuple[np.ndarray, Any, int, tuple[Any, ...]]:
    """``(X, units, rows dropped for a missing unit, the columns also)``;
    ``units`` a ChunkedArray of the unit column as declared (None without
    one), and each column of ``also`` (a trace's time and status) one, as
    declared, from the same batches.

    Each batch's columns are written straight into their rows of ``X``,
    sized by the metadata's row count: no per-batch copy of the points and
    no concatenation of them (each a copy of every point, 176 MB of fresh
    memory for full Cabs). The rows are the batches' however many the
    metadata says (a file whose batches hold more grows ``X``; one that
    holds fewer is cut to them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    units: list[Any] = []
    more: list[list[Any]] = [[] for _ in also]
    n_missing = 0
    columns = list(dict.fromkeys([*names, *([] if unit_name is None else [unit_name]), *also]))
    try:
        n_rows = pf.num_rows()
        X = np.empty((n_rows, len(names)))
        at = 0
        # each file alone, by its own types, where the files disagree (plan_read)
        batches = pf.batches(columns) if pf.alone is None else pf.file_batches()
        with progress_bar(f"reading {path.name}", total=n_rows, enabled=progress, unit="rows") as bar:
            for batch in batches:
                if isinstance(batch, dict):
                    batch = _Columns(batch)
                m = batch.num_rows
                if at + m > X.shape[0]:
                    X = _grown(X, at, at + m)
                rows = X[at : at + m]
                for j, name in enumerate(names):
                    # safe=False: a huge int64 becomes the nearest double instead of
                    # an error that would quote it.
                    rows[:, j] = pc.cast(batch.column(name), pa.float64(), safe=False).to_numpy(
                        zero_copy_only=False
                    )
                if unit_name is not None:
                    u = batch.column(unit_name)
                    # in place: ``rows`` is a writeable view of X
                    n_missing += _drop_missing_units(rows, unit_missing(u))[1]
                    units.append(u)
                for k, name in enumerate(also):
                    more[k].append(batch.column(name))
                at += m
                bar.update(m)
    except (pa.ArrowException, OSError) as exc:
        raise _io_error(str(path), "Parquet", exc) from None
    X = X[:at] if at < X.shape[0] else X
    release_arrow_memory()  # the batches' coordinates, freed
    if pf.alone is not None:
        typed = tuple(combined_column(m) for m in more)
        return X, None if unit_name is None else combined_units(units), n_missing, typed
    typed = tuple(pa.chunked_array(m, type=pf.schema.field(n).type) for m, n in zip(more, also))
    if unit_name is None:
        return X, None, 0, typed
    return X, pa.chunked_array(units, type=pf.schema.field(unit_name).type), n_missing, typed


class _Columns:
    """One file's batch of columns read alone (:meth:`_ParquetSource.file_batches`),
    as a batch is read: ``num_rows`` and ``column(name)``."""

    def __init__(self, columns: dict[str, Any]) -> None:
        self.columns = columns
        self.num_rows = len(next(iter(columns.values()))) if columns else 0

    def column(self, name: str) -> Any:
        col = self.columns[name]
        return col.combine_chunks() if hasattr(col, "combine_chunks") else col


def release_arrow_memory() -> None:
    """Have Arrow's memory pool return what it freed to the system now.

    Its allocator (mimalloc) returns freed pages after a delay, so whether
    the Arrow buffers a read let go (the batches' coordinates, a time column
    read into seconds) still counted in the process's peak depended on the
    timing: full Cabs' stops peaked at 0.73 or 0.88 GB, run by run. A few
    microseconds."""
    import sys

    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


def _grown(X: np.ndarray, kept: int, need: int) -> np.ndarray:
    """``X`` with room for at least ``need`` rows, its first ``kept`` rows copied."""
    out = np.empty((max(need, 2 * X.shape[0]), X.shape[1]))
    out[:kept] = X[:kept]
    return out


# --------------------------------------------------------------------------- #
# SQLite and GeoPackage: the schema and a GeoPackage's metadata, never the rows


def _connect(path: Path) -> Any:
    import sqlite3

    try:
        return sqlitefile.connect(path)
    except sqlite3.Error:
        raise sqlitefile.cannot_read(str(path)) from None


def _open_database(
    path: Path,
    fmt: FileFormat,
    options: ReadOptions,
    choose: ColumnChooser | None,
    also: Sequence[str | int] = (),
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
        extra = [_companion_index(table.names, c, where) for c in also]
    except BaseException:
        con.close()
        raise
    skipped = [] if layer else skipped_index_columns(table.names, idx, options.columns)
    unit_name = None if unit is None else table.names[unit]

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        got = _read_database(table, layer, idx, unit, extra, path, progress, hook)
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
        companions=True,
    )


def _companion_index(names: Sequence[str], column: str | int, where: str) -> int:
    """The index of a time or status column among public ``names``."""
    return resolve_trace_column(names, column, where=where)


def _read_database(
    table: sqlitefile.Table,
    layer: gpkgfile.Layer | None,
    idx: list[int],
    unit: int | None,
    extra: list[int],
    path: Path,
    progress: bool | None,
    hook: BlockHook | None,
) -> InputPoints:
    """Every row of ``table``, one chunk at a time: the coordinates (the
    columns ``idx``, or the layer's points), the unit by its declared kind,
    and the ``extra`` columns (a trace's time and status,
    :func:`sqlitefile.companion_expr`), all in one query: one pass, so the
    rows cannot come in another order for one column than for another."""
    import pyarrow as pa

    affs = [table.affinity(i) for i in idx]
    if layer is None:
        pairs = [sqlitefile.coordinate_exprs(table.names[i], a) for i, a in zip(idx, affs)]
        exprs = [v for v, _ in pairs] + [sqlitefile.bad_expr([b for _, b in pairs])]
    else:
        g = sqlitefile.quote(layer.geometry)
        # a geometry is a blob: any other value (text, fetched as bytes too) is no point
        exprs = [f"CASE WHEN typeof({g}) IN ('blob', 'null') THEN {g} ELSE x'' END"]
    unit_type = None
    if unit is not None:
        aff = table.affinity(unit)
        exprs.append(sqlitefile.unit_expr(table.names[unit], aff))
        unit_type = pa.type_for_alias(sqlitefile.UNIT_KINDS[aff][1])
    at = len(exprs)
    kinds = []
    for j in extra:
        expr, arrow = sqlitefile.companion_expr(table.names[j], table.affinity(j))
        exprs.append(expr)
        kinds.append(pa.type_for_alias(arrow))
    d = 2 if layer else len(idx)

    def blocks() -> Iterator[Block]:
        # every column in this one pass: a row the query fails on is left out of all of them
        for rows in table.chunks(exprs, isolate=True):
            # text as bytes: one that is not UTF-8 is no unit, time or status
            ids = (
                None
                if unit_type is None
                else sqlitefile.text_array([r[at - 1] for r in rows], unit_type, from_pandas=True)
            )
            more = [sqlitefile.text_array([r[at + k] for r in rows], kinds[k]) for k in range(len(extra))]
            if layer is None:
                yield (*sqlitefile.coordinates(rows, affs), ids, more)
            else:
                yield (*gpkgfile.points([r[0] for r in rows], layer.srs_id), ids, more)

    got = InputPoints(np.zeros((0, d)), [])
    got = _gather(blocks(), got, layer is not None, unit_type, hook, path, progress, kinds)
    got.n_query_failed = table.n_failed
    return got


#: A block of rows: ``(X, bad rows, unit ids or None, the companion
#: columns' values)``.
Block = tuple[np.ndarray, np.ndarray, Any, list[Any]]


def _gather(
    blocks: Iterable[Block],
    got: InputPoints,
    not_points: bool,
    unit_type: Any,
    hook: BlockHook | None,
    path: Path,
    progress: bool | None,
    kinds: Sequence[Any] | None = None,
) -> InputPoints:
    """``got`` with the points of ``blocks`` (:data:`Block`, in order): the
    bad rows counted as values that are not numbers, or (``not_points``) as
    geometries that are not points; the units typed ``unit_type`` (None: no
    unit), a row without one dropped; the companion columns typed ``kinds``
    (None: none read) into :attr:`InputPoints.companions`."""
    import pyarrow as pa

    parts, units = [], []
    more: list[list[Any]] = [[] for _ in kinds or ()]
    with progress_bar(f"reading {path.name}", enabled=progress, unit="rows") as bar:
        for X, bad, ids, values in blocks:
            for k, t in enumerate(kinds or ()):
                more[k].append(values[k] if isinstance(values[k], pa.Array) else pa.array(values[k], type=t))
            n_bad = int(np.count_nonzero(bad))
            if not_points:
                got.n_not_point += n_bad
            else:
                got.n_unparseable += n_bad
            if unit_type is not None:
                u = ids if isinstance(ids, pa.Array) else pa.array(ids, type=unit_type, from_pandas=True)
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
    if kinds is not None:
        got.companions = tuple(pa.chunked_array(m, type=t) for m, t in zip(more, kinds))
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
        j = _companion_index(table.names, column, where)
        expr, arrow = sqlitefile.companion_expr(table.names[j], table.affinity(j))
        kind = pa.type_for_alias(arrow)
        # a query's rows as the points' pass reads them: the same rows left out
        rows_of = table.chunks([expr], isolate=True)
        chunks = [sqlitefile.text_array([r[0] for r in rows], kind) for rows in rows_of]
    finally:
        con.close()
    return pa.chunked_array(chunks, type=kind)


# --------------------------------------------------------------------------- #
# GeoJSON and GPX: lon/lat points by the format's definition, read as a stream

_FEATURE_NAMES = {"geojson": "GeoJSON", "gpx": "GPX", "plt": "PLT"}


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


def _open_features(
    path: Path, fmt: FileFormat, options: ReadOptions, also: Sequence[str | int] = ()
) -> InputPlan:
    """A GeoJSON, GPX or PLT file: its points' lon/lat (x, y), the unit and
    the ``also`` columns by the options alone; nothing is read before
    :meth:`InputPlan.read` but the file's envelope before its first record
    (:func:`_check_envelope`)."""
    where = str(path)
    _no_text_options(where, fmt, options)
    what = _FEATURE_NAMES[fmt.kind]
    if options.columns is not None:
        raise ValueError(
            f"{where}: the coordinates of a {what} file are its points' longitude and latitude "
            "(x, y), not --columns"
        )
    unit = _feature_unit(where, fmt, options.unit)
    extra = tuple(_feature_companion(where, fmt, c) for c in also)
    _check_envelope(path, fmt)
    names = ["x", "y"]

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        got = InputPoints(np.zeros((0, 2)), names, unit_name=unit)
        unit_type = None if unit is None else pa_type("int64" if fmt.kind == "gpx" else "binary")
        damage = geojsonfile.Damage()
        blocks = _feature_chunks(path, fmt, unit, where, extra, damage)
        kinds = [pa_type(_feature_kind(fmt, c)) for c in extra]
        got = _gather(blocks, got, fmt.kind == "geojson", unit_type, hook, path, progress, kinds)
        if damage.ended:
            got.n_read_before_damage = damage.rows
        if fmt.kind == "gpx":
            got.n_broken_points = damage.records
        else:
            got.n_damaged_records = damage.records
        got.n_no_unit_property = (
            fmt.kind == "geojson" and unit is not None and damage.rows > 0 and not damage.units_seen
        )
        return got

    schema = {"gpx": list(gpxfile.COLUMNS), "plt": list(pltfile.COLUMNS)}.get(fmt.kind)
    return InputPlan(
        where,
        fmt,
        names,
        [],
        read,
        unit_name=unit,
        schema_names=schema,
        crs="EPSG:4326",
        lonlat=True,
        companions=True,
    )


def _check_envelope(path: Path, fmt: FileFormat) -> None:
    """Refuse, before a record is read, a GeoJSON file whose first
    character is not ``{`` or a GPX file whose first is not ``<``, a GPX
    file whose head (its bytes before the first track or point tag) has no
    ``<gpx>`` root or is not well-formed (:func:`gpxfile.check_head`), and
    a GeoJSON file whose members before its features say it is not a
    FeatureCollection (:func:`geojsonfile.check_head`): the envelope around
    the records, not a record. A file of a trace folder is not
    checked here: one unit's file that is not GPX drops its own rows."""
    if fmt.kind == "plt":
        return
    try:
        with open(path, "rb") as f:
            start = f.read(4096).lstrip(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    except OSError as exc:
        raise _io_error(str(path), _FEATURE_NAMES[fmt.kind], exc) from None
    head = start[:1]
    want = b"{" if fmt.kind == "geojson" else b"<"
    if fmt.kind == "gpx" and start[:2] == b"<\x00":
        # UTF-16 (little-endian, no byte order mark): no byte framing holds in it (docs/privacy.md §8)
        raise ValueError(f"{path}: cannot read as GPX: it is in UTF-16; convert it to UTF-8")
    if head != want:
        raise ValueError(
            f"{path}: cannot read as {_FEATURE_NAMES[fmt.kind]}: it does not begin with "
            f"{want.decode()!r} ({'a JSON object' if want == b'{' else 'XML'})"
        )
    try:
        if fmt.kind == "gpx":
            gpxfile.check_head(path)  # its root, from the bytes before any track or point
        else:
            geojsonfile.check_head(path)  # its members before the features: a FeatureCollection's?
    except ValueError as exc:
        raise ValueError(f"{path}: cannot read as {_FEATURE_NAMES[fmt.kind]}: {exc}") from None
    except OSError as exc:
        raise _io_error(str(path), _FEATURE_NAMES[fmt.kind], exc) from None


#: The columns of the formats whose columns are the format's, by kind, with their Arrow types.
_FIXED_COLUMNS = {
    "gpx": {"x": "float64", "y": "float64", "time": "string", "ele": "float64", "track": "int64"},
    "plt": {"x": "float64", "y": "float64", "time": "string", "alt": "float64"},
}


def _feature_companion(where: str, fmt: FileFormat, column: str | int) -> str:
    """A time or status column of a feature file, by the options alone: a
    GeoJSON property (named), or one of a GPX's or PLT's fixed columns."""
    if fmt.kind == "geojson":
        if not isinstance(column, str) or column.isdigit():
            raise ValueError(f"{where}: a GeoJSON column is a property, named (not the index {column})")
        return column
    names = list(_FIXED_COLUMNS[fmt.kind])
    return names[_companion_index(names, column, where)]


def _feature_kind(fmt: FileFormat, column: str) -> str:
    return "string" if fmt.kind == "geojson" else _FIXED_COLUMNS[fmt.kind][column]


def _feature_chunks(
    path: Path,
    fmt: FileFormat,
    unit: str | None,
    where: str,
    also: tuple[str, ...] = (),
    damage: geojsonfile.Damage | None = None,
) -> Iterator[Block]:
    """:data:`Block` by block; with ``damage``, text that is not the format
    ends the stream (recorded there); without, it is refused. The parsers'
    errors name no value."""
    try:
        if fmt.kind == "geojson":
            for X, bad, ids, more in geojsonfile.chunks(path, unit, also, damage):
                yield X, bad, ids, more
        elif fmt.kind == "plt":
            X, bad, _, times, alt = pltfile.read(path)
            by = {"x": X[:, 0], "y": X[:, 1], "time": times, "alt": alt}
            yield X, bad, None, [by[c] for c in also]
        else:
            points = gpxfile.chunks(path, damage)
            for c in points if damage is None else geojsonfile.until_damaged(points, damage, _points):
                yield np.column_stack([c.lon, c.lat]), c.bad, c.track, [c.column(n) for n in also]
    except ValueError as exc:
        raise ValueError(f"{where}: cannot read as {_FEATURE_NAMES[fmt.kind]}: {exc}") from None
    except OSError as exc:
        raise _io_error(where, _FEATURE_NAMES[fmt.kind], exc) from None


def _points(chunk: gpxfile.Chunk) -> int:
    return len(chunk.lon)


def _feature_column(path: Path, fmt: FileFormat, column: str | int) -> Any:
    """A time or status column of a GeoJSON file (a property's text) or of a
    GPX or PLT file (one of its fixed columns), row for row with the points."""
    name = _feature_companion(str(path), fmt, column)
    t = pa_type(_feature_kind(fmt, name))
    damage = geojsonfile.Damage()
    blocks = _feature_chunks(path, fmt, None, str(path), (name,), damage)
    return chunked([pa_array(more[0], t) for _, _, _, more in blocks], t)


def pa_type(name: str) -> Any:
    import pyarrow as pa

    return pa.type_for_alias(name)


def pa_array(values: Any, t: Any) -> Any:
    import pyarrow as pa

    if isinstance(values, pa.Array):
        return values.cast(t)
    return pa.array(values, type=t, from_pandas=True)


def pa_chunks(values: Any, t: Any) -> list[Any]:
    """``values`` (an Arrow array or chunked array, a NumPy array or a list)
    as Arrow arrays of type ``t``: a chunked array (a CSV file's field, read
    in blocks) cast chunk by chunk, never through ``pa.array``, which
    converts it value by value through Python objects (1.6 s for the 1.4M
    times of a folder of 1,025 T-Drive files)."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        return values.cast(t).chunks
    return [pa_array(values, t)]


def chunked(chunks: list[Any], t: Any) -> Any:
    import pyarrow as pa

    return pa.chunked_array(chunks, type=t)


# --------------------------------------------------------------------------- #
# A folder of trace files, one per unit (--unit-from): :mod:`.tracefolder`


def _open_folder(
    root: Path, options: ReadOptions, d: int | None, choose: ColumnChooser | None, also: Sequence[str | int]
) -> InputPlan:
    """A folder of trace files of one format, each file (or first-level
    sub-folder) one unit: the listing and the options decide everything
    (:mod:`.tracefolder`); nothing of a file is read before
    :meth:`InputPlan.read`, which reads them one at a time."""
    where = str(root)
    kind = tracefolder.folder_format(where, options.file_format)
    fmt = format_of(where, kind)
    _database_options(where, fmt, options)
    rule = options.unit_from
    assert rule is not None
    files, skipped = tracefolder.listing(root, fmt)
    files, stray = tracefolder.check_rule(where, rule, files)
    if fmt.is_text:
        names, one, kinds = _folder_csv(where, fmt, options, d, choose, also)
        schema = None
    else:
        _no_text_options(where, fmt, options)
        if options.columns is not None:
            raise ValueError(
                f"{where}: the coordinates of {kind.upper()} files are their points' (x, y), not --columns"
            )
        extra = tuple(_feature_companion(where, fmt, c) for c in also)
        names, schema = ["x", "y"], list(_FIXED_COLUMNS[kind])
        kinds = [pa_type(_feature_kind(fmt, c)) for c in extra]

        def one(path: Path, rows: list[int]) -> tuple[np.ndarray, int, int, list[Any]]:
            return _trace_file(path, fmt, extra, rows)

    def read(progress: bool | None, hook: BlockHook | None) -> InputPoints:
        got = InputPoints(
            np.zeros((0, len(names))), names, unit_name=rule, n_skipped_files=skipped, n_stray_files=stray
        )
        return _read_folder(root, files, rule, one, kinds, got, progress, hook)

    return InputPlan(
        where,
        fmt,
        names,
        [],
        read,
        unit_name=rule,
        schema_names=schema,
        crs="EPSG:4326" if not fmt.is_text else None,
        lonlat=True if not fmt.is_text else None,
        companions=True,
    )


#: One trace file read: ``(X, rows with a value that is not a number,
#: malformed lines, the companion columns)``; ValueError or OSError when the
#: file is damaged, after counting in ``rows[0]`` the rows read before;
#: ``rows[1]`` set to 1 when the file stopped being valid part-way, its rows
#: before kept (a cut file); ``rows[2]``: a GPX file's broken points, each
#: dropped alone (:func:`gpxfile.framed_rows`).
FileReader = Callable[[Path, list[int]], tuple[np.ndarray, int, int, list[Any]]]


def _read_folder(
    root: Path,
    files: Sequence[Any],
    rule: str,
    one: FileReader,
    kinds: Sequence[Any],
    got: InputPoints,
    progress: bool | None,
    hook: BlockHook | None,
) -> InputPoints:
    """Every file in ``files`` (relative paths, in order), one at a time, its
    rows given the file's unit; a damaged file's rows dropped and counted."""
    import pyarrow as pa

    parts, units = [], []
    more: list[list[Any]] = [[] for _ in kinds]
    with progress_bar(f"reading {root.name}", total=len(files), enabled=progress, unit="files") as bar:
        for rel in files:
            rows = [0, 0, 0]
            try:
                X, n_bad, n_malformed, values = one(root / rel, rows)
                columns = [pa_chunks(v, t) for v, t in zip(values, kinds)]
            except (ValueError, OSError, pa.ArrowException):
                got.n_damaged_files += 1
                got.n_damaged_rows += rows[0]
                bar.update(1)
                continue
            got.n_unparseable += n_bad
            got.n_malformed += n_malformed
            got.n_broken_points += rows[2]
            if rows[1]:
                got.n_cut_files += 1
                got.n_cut_rows += X.shape[0]
            if hook is not None:
                hook(X)
            parts.append(X)
            units.append(_repeated(tracefolder.unit_of(rel, rule), X.shape[0]))
            for k, c in enumerate(columns):
                more[k].extend(c)
            bar.update(1)
    got.X = np.concatenate(parts) if parts else got.X
    got.units = pa.chunked_array(units, type=pa.binary())
    got.companions = tuple(pa.chunked_array(m, type=t) for m, t in zip(more, kinds))
    return got


def _repeated(value: bytes, n: int) -> Any:
    """A binary Arrow array of ``value`` ``n`` times (built from its buffers)."""
    import pyarrow as pa

    if len(value) * n >= 1 << 31:  # beyond 32-bit offsets: pyarrow's own build
        return pa.array([value] * n, type=pa.binary())
    offsets = (np.arange(n + 1, dtype=np.int64) * len(value)).astype(np.int32)
    return pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(value * n)])


def _trace_file(
    path: Path, fmt: FileFormat, also: tuple[str, ...], rows: list[int]
) -> tuple[np.ndarray, int, int, list[Any]]:
    """One GPX or PLT file of a folder, whole (one unit's trace)."""
    if fmt.kind == "plt":
        X, bad, malformed, times, alt = pltfile.read(path)
        by: dict[str, Any] = {"x": X[:, 0], "y": X[:, 1], "time": times, "alt": alt}
        return X, int(np.count_nonzero(bad)), malformed, [by[c] for c in also]
    damage = geojsonfile.Damage()
    got = list(gpxfile.chunks(path, damage))  # ValueError: not GPX (its head alone decides)
    rows[2] = damage.records
    got = got or [gpxfile.columns([])]
    X = np.column_stack([np.concatenate([c.lon for c in got]), np.concatenate([c.lat for c in got])])
    n_bad = sum(int(np.count_nonzero(c.bad)) for c in got)
    return X, n_bad, 0, [_joined([c.column(n) for c in got]) for n in also]


def _joined(parts: list[Any]) -> Any:
    """Chunks' columns (NumPy or Arrow arrays, or lists) end to end."""
    if parts and isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    if parts and not isinstance(parts[0], list):  # Arrow arrays (the GPX scanner's times)
        import pyarrow as pa

        return pa.concat_arrays(parts)
    return [v for part in parts for v in part]


def _folder_csv(
    where: str,
    fmt: FileFormat,
    options: ReadOptions,
    d: int | None,
    choose: ColumnChooser | None,
    also: Sequence[str | int],
) -> tuple[list[str], FileReader, list[Any]]:
    """The names, the reader of one file and the companions' types of a
    folder of CSV files: each file read by the CSV reader under the same
    options (its own header, when declared, names its own columns: one
    unit's file decides only how that file is read)."""
    one_file = replace(options, unit_from=None)
    d = d if d is not None else (len(options.columns) if options.columns else None)
    if options.has_header is None:
        raise undecided_header(where)
    if d is None:
        raise ValueError(
            f"{where}: a folder of CSV files is read one file at a time, each with its own header: "
            "give the coordinates' number with --columns or --bounds (one lower and one upper value "
            "per coordinate), or --geo"
        )
    if not options.has_header:
        csv_layout(fmt, one_file, None, d, choose, where=where)  # the options alone
    names = [str(c) for c in options.columns] if options.columns else [str(i) for i in range(d)]

    def one(path: Path, rows: list[int]) -> tuple[np.ndarray, int, int, list[Any]]:
        with open_input(path, one_file, d=d, choose=choose, also=also) as plan:
            if plan.d != d:
                raise ValueError("another number of columns")
            got = plan.read(False)
        rows[0] = got.X.shape[0]
        if got.n_read_before_cut is not None:
            rows[1] = 1  # a gzip file cut part-way: its rows before the cut are kept
        if got.companions is not None:  # read in the points' own pass
            values = list(got.companions)
        else:
            values = [_csv_field(path, c, one_file, d, choose, False) for c in also]
        return got.X, got.n_unparseable, got.n_malformed, values

    return names, one, [pa_type("binary") for _ in also]


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
    the same ``options``, in one more pass: ``(column, flag)``. (Reading the
    points with ``also=`` gives the same values in their own pass, where the
    format can: :attr:`InputPoints.companions`.)

    ``column`` as read, nothing parsed: a pyarrow array of the CSV fields'
    bytes (null for a missing field or a malformed line), a Parquet column of
    its declared type (a dataset whose files declare it with different
    types: a :class:`~dpdbscan.files.parquetfiles.MixedColumn` of each
    file's part, of its own type), an SQLite column by its declared type
    (:func:`.sqlitefile.companion_expr`), or a .npy column. ``flag`` (None if not asked): the
    same. The columns are public input (names or 0-based indices),
    refused before any record is read when the file does not have them.
    Standard input cannot be read twice: its columns are read in the points'
    own pass (``open_input(also=)``), or refused here.
    """
    options = options or ReadOptions()
    if str(path) == "-":
        raise ValueError(
            "standard input is read once: a time or status column is read from it in the points' own "
            "pass, which cannot read this one (one of the coordinates, or a line of another number of "
            "fields); save the input to a file and give its path"
        )
    if options.unit_from is not None:
        # a folder of trace files reads them beside the points, in one pass
        wanted = [c for c in (column, flag) if c is not None]
        with open_input(path, options, d=d, choose=choose, also=wanted) as plan:
            read = plan.read(progress).companions or ()
        return read[0], (read[1] if flag is not None else None)
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
    file or dataset none of whose files declares one of ``columns`` (names
    or 0-based indices: a trace's time and status), as :func:`read_columns`
    would once reading (files that declare one with different types are
    read, each by its own: :mod:`dpdbscan.files.parquetfiles`); other
    inputs pass. For the checks made before a ledger charges anything."""
    options = options or ReadOptions()
    if str(path) == "-" or not columns or options.unit_from is not None:
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
        # a column no file declares is refused here; the files' types are
        # read file by file (plan_read), never refused
        for c in columns:
            resolve_unit(pf.schema.names, c, where=str(path))
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
        pf.plan_read({name: ALSO})
        if pf.alone is not None:
            return combined_column([batch[name] for batch in pf.file_batches()])
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
    "cut_note",
]
