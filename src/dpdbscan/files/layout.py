"""How a file is read, decided before any record is read.

Everything that shapes the parse of a CSV file, its delimiter, whether its
first line is a header, how many fields a line has and which of them are
coordinates, comes from public input: the options (:class:`ReadOptions`),
the file name's extension (:mod:`dpdbscan.files.formats`), the number of
coordinates ``d`` fixed by the public bounds, and a header line *the user
declared*. A declared header is the file's public schema: its names may pick
the columns and may appear in messages and in the release. Records never
decide anything: a file without a declared header is never looked at before
its records are parsed one by one, so two files that differ in one record
are read alike except for that record.

What these inputs cannot decide is refused before a record is read, with
the option to pass:

* whether the first line is a header: ``header=True`` / ``--header`` or
  ``header=False`` / ``--no-header`` (column names in ``columns`` imply a
  header, since only a header can name columns);
* without a header, how many fields a line has: ``fields`` / ``--fields``,
  by default ``d`` when every field is a coordinate (``d + 1`` with a
  privacy unit and no ``columns``: the coordinates and the unit).

The privacy unit (``unit`` / ``--unit``, a person-level release) is one more
column, chosen like the coordinates: by a name of the declared header or
schema, or by 0-based index (a file without a header has only indices). It
is never a coordinate: the default selection leaves it out, and naming it in
``columns`` too is refused. A unit column the file does not have is refused
here, before any record is read, naming ``--unit``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from .formats import FORMATS, LABEL_COLUMN, FileFormat, is_index_column
from .records import CsvLayout, header_fields

ColumnChooser = Callable[[Sequence[str], Sequence[bool]], "list[str] | None"]
#: Columns to read: names or 0-based indices (ints or digit strings), one or several.
Columns: TypeAlias = str | int | Sequence[str | int]


def _is_index_token(tok: object) -> bool:
    return isinstance(tok, numbers.Integral) or (isinstance(tok, str) and tok.strip().isdigit())


@dataclass(frozen=True)
class ReadOptions:
    """Public choices on how to read a points file.

    Parameters
    ----------
    columns : names or 0-based indices, optional
        The coordinate columns. Names need a header (and imply one).
    header : bool, optional
        Whether a CSV file's first line is a header. Must be decided (here or
        by names in ``columns``) for CSV input: the file's lines never decide.
    delimiter : str, optional
        One character; default from the format (tab for ``.tsv``, else ``,``).
    fields : int, optional
        Fields per line of a CSV file without a header; default ``d`` when no
        ``columns`` are given. Lines with another number of fields are read
        as missing (and dropped), one at a time.
    file_format : str, optional
        One of :data:`~dpdbscan.files.formats.FORMATS`; default from the
        file name's extension.
    unit : str or int, optional
        The privacy unit's column (person-level releases): a name (needs a
        header or a schema) or a 0-based index. Read as text for CSV, as its
        declared type for Parquet and SQLite; a row without one is dropped.
    table : str, optional
        The table (or view) of an SQLite database, or the feature table of a
        GeoPackage, that holds the points (``--table``). Default: the only
        table of the file (the only feature table of a GeoPackage).
    query : str, optional
        A ``SELECT`` statement of the user's, run on an SQLite database
        opened read-only (``--query``); its result's columns are the
        columns. Not with ``table``.
    unit_from : {"file", "folder"}, optional
        A folder of trace files, one per unit (``--unit-from``): each file
        is one unit (``"file"``, named by its path in the folder), or each
        first-level sub-folder with its files (``"folder"``). Not with
        ``unit`` (:mod:`dpdbscan.files.tracefolder`).
    """

    columns: tuple[str | int, ...] | None = None
    header: bool | None = None
    delimiter: str | None = None
    fields: int | None = None
    file_format: str | None = None
    unit: str | int | None = None
    table: str | None = None
    query: str | None = None
    unit_from: str | None = None

    def __post_init__(self) -> None:
        cols = self.columns
        if cols is not None and not isinstance(cols, tuple):
            cols = (cols,) if isinstance(cols, (str, int)) else tuple(cols)
            object.__setattr__(self, "columns", cols)
        if cols is not None and not cols:
            raise ValueError("columns must name at least one column")
        if self.header not in (None, True, False):
            raise ValueError(f"header must be True, False or None, got header={self.header!r}")
        d = self.delimiter
        if d is not None and (not isinstance(d, str) or len(d) != 1 or d in '\r\n"'):
            raise ValueError(
                f"delimiter must be one character other than a quote or line break, got delimiter={d!r}"
            )
        f = self.fields
        if f is not None and (isinstance(f, bool) or not isinstance(f, numbers.Integral) or f < 1):
            raise ValueError(f"fields must be an integer >= 1, got fields={f!r}")
        if self.file_format is not None and self.file_format not in FORMATS:
            raise ValueError(f"file_format must be one of {', '.join(FORMATS)}, got {self.file_format!r}")
        if self.header is False and self.named_columns:
            raise ValueError(
                "column names need a header line: with --no-header (header=False) choose "
                "columns by 0-based index"
            )
        u = self.unit
        if u is not None and (isinstance(u, bool) or not isinstance(u, (str, numbers.Integral)) or u == ""):
            raise ValueError(f"unit must be a column name or a 0-based index, got unit={u!r}")
        if self.header is True and self.fields is not None:
            raise ValueError("--fields (fields=) is for files without a header; a header gives the fields")
        for name, value in (("table", self.table), ("query", self.query)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a non-empty text, got {name}={value!r}")
        if self.table is not None and self.query is not None:
            raise ValueError("give either --table (table=) or --query (query=), not both")
        if self.unit_from is not None and self.unit_from not in ("file", "folder"):
            raise ValueError(f"unit_from must be 'file' or 'folder', got unit_from={self.unit_from!r}")
        if self.unit_from is not None and self.unit is not None:
            raise ValueError(
                "give either --unit (unit=: a column) or --unit-from (unit_from=: each file or "
                "sub-folder of a folder is one unit), not both"
            )

    @property
    def named_columns(self) -> bool:
        """Some column (a coordinate or the unit) is chosen by name, which
        only a header can give."""
        named = self.columns is not None and any(not _is_index_token(c) for c in self.columns)
        return named or (self.unit is not None and not _is_index_token(self.unit))

    @property
    def has_header(self) -> bool | None:
        """Whether the first line is a header, as the options decide (None: undecided)."""
        if self.header is not None:
            return self.header
        return True if self.named_columns else None


def undecided_header(where: str) -> ValueError:
    return ValueError(
        f"{where}: say whether the first line of this CSV file is a header: pass --header "
        "(header=True: it names the columns) or --no-header (header=False: every line is a "
        "record); the file's own lines never decide how it is read"
    )


def csv_layout(
    fmt: FileFormat,
    options: ReadOptions,
    header_line: bytes | None,
    d: int | None,
    choose: ColumnChooser | None = None,
    *,
    where: str = "the file",
) -> tuple[list[str], CsvLayout]:
    """``(names, layout)`` of a CSV file from public input only.

    ``header_line`` is the first line when the options declare a header
    (:attr:`ReadOptions.has_header`), else None: the caller must not read it.
    ``d`` is the public number of coordinates (None if not fixed yet).
    """
    has_header = options.has_header
    if has_header is None:
        raise undecided_header(where)
    delimiter = options.delimiter or fmt.delimiter
    if has_header:
        if header_line is None:
            raise ValueError(f"{where}: empty CSV file (no header line)")
        if any(b < 32 and b != 9 for b in header_line[:4096]):
            raise ValueError(
                f"{where}: cannot read as CSV: its header line holds control bytes (not a text "
                "file; a compressed file needs the .gz extension or --format csv.gz)"
            )
        names = header_fields(header_line, delimiter)
        if not names:
            raise ValueError(f"{where}: empty CSV file (no header line)")
    else:
        n = options.fields
        if n is None:
            if options.columns is not None:
                raise ValueError(
                    f"{where}: without a header, give the number of fields on each line "
                    "with --fields (fields=) to choose --columns by index"
                )
            if d is None:
                raise ValueError(
                    f"{where}: without a header, give the number of fields on each line with "
                    "--fields (fields=), or bounds with one value per coordinate"
                )
            # every field a coordinate, and one more for the unit
            n = d if options.unit is None else d + 1
        names = [str(i) for i in range(n)]
    if has_header and len(names) == 1 and options.delimiter is None:
        # before any column is looked up by name: a one-field header names no column
        _hint_delimiter(names[0], delimiter, d, where)
    unit = resolve_unit(names, options.unit, where=where)
    idx = resolve_columns(names, [True] * len(names), options.columns, choose, where=where, unit=unit)
    return names, CsvLayout(delimiter, len(names), tuple(idx), unit)


def _hint_delimiter(name: str, delimiter: str, d: int | None, where: str) -> None:
    """A one-field header that holds another delimiter, when more than one
    coordinate is expected: the delimiter is wrong (public: the header)."""
    if d is not None and d > 1:
        others = [c for c in (",", ";", "\t", "|") if c != delimiter and c in name]
        if others:
            shown = "tab" if others[0] == "\t" else others[0]
            raise ValueError(
                f"{where}: the header is one field with the delimiter {delimiter!r} but the bounds "
                f"have {d} coordinates; pass --delimiter '{shown}' (delimiter=)"
            )


def _listing(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names[:12]) + (", ..." if len(names) > 12 else "")


def _index_of(names: list[str], tok: str | int, where: str, what: str) -> int:
    """The column ``tok`` names: a name that exists, else a 0-based index."""
    if isinstance(tok, str) and tok in names:
        return names.index(tok)
    if _is_index_token(tok):
        i = int(tok)
        if not 0 <= i < len(names):
            raise ValueError(
                f"{what}column index {i} is out of range: {where} has {len(names)} column(s) "
                f"({_listing(names)})"
            )
        return i
    raise ValueError(f"{what}no column {tok!r} in {where} (columns: {_listing(names)})")


def resolve_unit(names: Sequence[str], unit: str | int | None, *, where: str = "the file") -> int | None:
    """The index of the privacy unit's column (None when there is none),
    from public names (a declared header, a schema, or ``"0"``, ``"1"``, ...);
    a name or a 0-based index, like ``--columns``. Refused, naming
    ``--unit``, when the file has no such column."""
    if unit is None:
        return None
    return _index_of([str(n) for n in names], unit, where, "--unit (unit=): ")


def resolve_trace_column(names: Sequence[str], column: str | int, *, where: str = "the file") -> int:
    """The index of a trace's time or status column (``--time``,
    ``--trip-ends``) among public names; refused, naming those options,
    when the file has no such column."""
    return _index_of([str(n) for n in names], column, where, "--time/--trip-ends (a trace's column): ")


def resolve_columns(
    names: Sequence[str],
    numeric: Sequence[bool],
    requested: Columns | None = None,
    choose: ColumnChooser | None = None,
    *,
    where: str = "the file",
    unit: int | None = None,
) -> list[int]:
    """Indices of the columns to read.

    ``requested`` holds names or 0-based indices (ints or digit strings; a
    name that exists wins over an index). Without it, ``choose(names, numeric)``
    may pick names, else every column except ``label``, unnamed index
    columns and the unit's column ``unit`` (an index), which must all be
    numeric. ``names`` come from a declared header or a schema (or are
    ``"0"``, ``"1"``, ...); ``numeric`` is the declared schema (Parquet,
    .npy); for CSV it is all True: no row may decide the columns. The unit's
    column is never a coordinate: choosing it is refused.
    """
    names = [str(n) for n in names]
    listing = _listing(names)
    if requested is None:
        picked = choose(names, numeric) if choose is not None else None
        if picked is None:
            idx = [
                i
                for i, n in enumerate(names)
                if n.lower() != LABEL_COLUMN and not is_index_column(n) and i != unit
            ]
            bad = [names[i] for i in idx if not numeric[i]]
            if bad or not idx:
                # Skipping a non-numeric column would silently cluster in fewer
                # dimensions than the user expects, so ask instead.
                raise ValueError(
                    f"{where}: column(s) {', '.join(bad) or '(none)'} are not numeric "
                    f"(columns: {listing}); choose the coordinate columns with --columns"
                    + _geometry_hint(bad)
                )
            return idx
        requested = picked
    if isinstance(requested, (str, int)):
        requested = [requested]
    out = []
    for tok in requested:
        i = _index_of(names, tok, where, "")
        if i in out:
            raise ValueError(f"column {names[i]!r} is selected twice")
        if i == unit:
            raise ValueError(
                f"column {names[i]!r} is the privacy unit (--unit) and a coordinate (--columns): "
                "a unit names a person, it is not a coordinate; leave it out of --columns"
            )
        out.append(i)
    if not out:
        raise ValueError("no columns selected")
    return out


#: Names GeoParquet and GIS exports give a column of encoded geometries.
_GEOMETRY_NAMES = ("geometry", "geom", "the_geom", "wkb_geometry", "wkt", "wkb", "geog", "geography")


#: Names trip tables give a column that holds each trip's points as one
#: JSON list (the Porto taxi trips' ``POLYLINE``: ``[[lon, lat], ...]``).
_POLYLINE_NAMES = ("polyline",)


def check_polyline_columns(names: Sequence[str]) -> None:
    """Refuse, from the chosen coordinates' public names (a declared header,
    a schema), a column that holds each trip's points as one list: read as a
    coordinate it is no number, so every row would be dropped and the
    release empty. The message says how to get one row per point."""
    polylines = [str(n) for n in names if str(n).lower() in _POLYLINE_NAMES]
    if polylines:
        raise ValueError(
            f"column {polylines[0]!r} holds each trip's points as one list (one row per trip, as in "
            "Porto's taxi trips), not a coordinate: dpdbscan reads one row per point. " + _POLYLINE_WAY_OUT
        )


_POLYLINE_WAY_OUT = (
    "Convert the trips to one row per point first, each with its unit and its time (the trip's "
    "start plus 15 s times the point's index in Porto's data), e.g. python "
    "docs/examples/polyline_points.py train.csv points.csv (docs/user-guide.md, 'One row per trip'), "
    "then fit points.csv with --header --columns lon lat --unit taxi --time time"
)


def _geometry_hint(names: Sequence[str]) -> str:
    """What to do with a column of encoded geometries (GeoParquet's WKB) or
    of trips' points (a polyline), by its public name; "" for other columns."""
    if any(str(n).lower() in _POLYLINE_NAMES for n in names):
        return "; a polyline column (each trip's points as one list) is not read. " + _POLYLINE_WAY_OUT
    if not any(str(n).lower() in _GEOMETRY_NAMES for n in names):
        return ""
    return (
        "; a geometry column (GeoParquet's WKB, WKT) is not read: write each point's longitude and "
        "latitude as two numeric columns (with geopandas: df['lon'], df['lat'] = df.geometry.x, "
        "df.geometry.y) and give them with --columns"
    )


def schema_columns(
    names: Sequence[str],
    numeric: Sequence[bool],
    columns: Columns | None,
    unit: str | int | None,
    choose: ColumnChooser | None = None,
    *,
    types: Sequence[object] | None = None,
    where: str = "the file",
) -> tuple[list[int], int | None]:
    """``(coordinate columns, the unit's column or None)``, as indices, of a
    table whose schema declares its columns' types (a Parquet file or
    dataset, a dataframe): the unit by :func:`resolve_unit`, the coordinates
    by :func:`resolve_columns` from ``numeric`` (one flag per name). With
    ``types`` (a file's schema, public like the names) a named coordinate
    that is not declared numeric is refused, naming its type; without them
    (a dataframe) its values are read one by one. The same rule for every
    reader of such a table, in memory or on a cluster."""
    unit_at = resolve_unit(names, unit, where=where)
    idx = resolve_columns(names, numeric, columns, choose, where=where, unit=unit_at)
    for i in idx:
        if types is not None and not numeric[i]:
            raise ValueError(
                f"{where}: column {str(names[i])!r} is not numeric (type {types[i]}); choose the "
                "coordinate columns with --columns" + _geometry_hint([names[i]])
            )
    return idx, unit_at


def skipped_index_columns(names: Sequence[str], idx: Sequence[int], columns: Columns | None) -> list[str]:
    """Index columns the default selection left out (for a note)."""
    if columns is not None:
        return []
    return [str(n) for i, n in enumerate(names) if i not in idx and is_index_column(n)]


__all__ = [
    "ColumnChooser",
    "Columns",
    "ReadOptions",
    "csv_layout",
    "resolve_columns",
    "resolve_unit",
    "schema_columns",
    "skipped_index_columns",
    "undecided_header",
]
