"""A Parquet dataset's files, each read by its own schema.

A dataset (a folder of Parquet files) is often one file per person or
vehicle. Each file's schema is then that unit's data: a file whose unit
column is all missing is written with the ``null`` type, a file of one
writer may lack a column its records never fill, or declare the unit's ids
as floats where the others declare integers. Whether a release happens, and
how the other files' rows are read, must not hinge on one such file. So:

* the dataset's columns are the union of its files' columns
  (:func:`merged_schema`): a column is missing only when no file declares
  it (a typo is refused before anything is read);
* a column a file lacks, or declares with the ``null`` type, or with a type
  that cannot be read as what the column is read as (:func:`readable`: a
  coordinate is a number, a unit an integer, float or text, a time or
  status a number, timestamp, date or text), reads as missing values in that
  file's rows, which the per-record rule drops (and counts);
* where the files that declare a read column readably do not all declare it
  with one type (dictionary encoding and large offsets aside), every file is
  read alone (:func:`files_differ`) and each column of each file by its own
  type: coordinates to float64, a time or status by its own type
  (:class:`MixedColumn`), the units by the library's id rule
  (:func:`combined_units`).

The rules look at one file's schema at a time (public metadata, never a
record), so adding a file never changes how another file's rows are read.
The in-memory reader and the Dask backend both read so
(docs/privacy.md section 8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .unitids import canonical_ids, unit_kind_of_arrow

#: What a read column is read as.
COORDINATE, UNIT, ALSO = "coordinate", "unit", "also"


#: Why a dataset of several Parquet files needs its coordinate columns named.
NAME_THE_COLUMNS = (
    "a folder (or list, or glob) of Parquet files needs its coordinate columns named (--columns, or "
    "columns= of the Dask backend's read options): each file's schema may be one unit's data, so "
    "the columns are not taken from the schemas (one more file declaring one more number would "
    "add a dimension)"
)


def refuse_unnamed_columns(dataset: bool, columns: Any) -> None:
    """Refuse a dataset of Parquet files (``dataset``: the input names a
    folder, a glob or several paths; public) read without its coordinate
    columns named: the default (every numeric column) would be the files'
    schemas' together, so one unit's file could add a dimension or change
    the choice by names. A single file's schema is the file's header."""
    if dataset and columns is None:
        raise ValueError(NAME_THE_COLUMNS)


def plain_type(t: Any) -> Any:
    """An Arrow type without dictionary encoding or large offsets."""
    import pyarrow as pa

    t = t.value_type if pa.types.is_dictionary(t) else t
    if pa.types.is_large_string(t):
        return pa.string()
    return pa.binary() if pa.types.is_large_binary(t) else t


def readable(role: str, t: Any) -> bool:
    """Whether a file's column of declared type ``t`` is read as a
    ``role`` (:data:`COORDINATE`, :data:`UNIT`, :data:`ALSO`: a trace's time
    or status); the ``null`` type is not (its rows read as missing)."""
    import pyarrow as pa

    if t is None or pa.types.is_null(t):
        return False
    if role == COORDINATE:
        return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))
    if role == UNIT:
        return unit_kind_of_arrow(t) is not None
    t = t.value_type if pa.types.is_dictionary(t) else t
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_boolean(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_date(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _rank(t: Any) -> int:
    """Which declared type of a column the merged schema names first: a
    number, then a decimal, then any other type some column is read as,
    then the rest."""
    import pyarrow as pa

    t = t.value_type if pa.types.is_dictionary(t) else t
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return 0
    if pa.types.is_decimal(t):
        return 1
    return 2 if readable(ALSO, t) else 3


def merged_schema(schemas: Sequence[Any]) -> Any:
    """The schema of a dataset whose files' schemas are ``schemas`` (in the
    dataset's order): the first file's when every file's is the same;
    otherwise every column any file declares, in the order they first
    appear, each of the type the first file that declares it best declares
    (:func:`_rank`; ``null`` when every file declaring it says ``null``)."""
    import pyarrow as pa

    if not schemas:
        return pa.schema([])
    first = schemas[0]
    if all(s.equals(first) for s in schemas[1:]):
        return first
    names: list[str] = []
    for s in schemas:
        names += [n for n in s.names if n not in names]
    fields = []
    for name in names:
        declared = [s.field(name).type for s in schemas if name in s.names]
        typed = [t for t in declared if not pa.types.is_null(t)]
        best = min(typed, key=_rank) if typed else pa.null()
        fields.append(pa.field(name, best, True))
    return pa.schema(fields)


def declared(schema: Any, name: str) -> Any:
    """The type ``schema`` declares ``name`` with (None: it lacks it)."""
    return schema.field(name).type if name in schema.names else None


def declares(schemas: Sequence[Any], name: str, role: str) -> bool:
    """Whether some file of a dataset declares ``name`` with a type read as
    ``role``, or as ``null`` (all missing: its rows have no value there, as
    any other file's with a type not read as ``role``). A dataset is refused
    for the column's type only when neither holds: every file declaring it
    declares one that the column cannot be read as, the owner's choice for
    every file (as a single file's schema is)."""
    import pyarrow as pa

    return any(
        readable(role, t) or (t is not None and pa.types.is_null(t))
        for t in (declared(s, name) for s in schemas)
    )


def files_differ(schemas: Sequence[Any], roles: Mapping[str, str]) -> bool:
    """Whether the files declare a read column (``roles``: name to role)
    with more than one type (dictionary encoding and large offsets aside;
    a file lacking it, or declaring ``null``, aside): then each file is read
    alone, by its own types."""
    import pyarrow as pa

    for name in roles:
        types = {
            plain_type(t) for s in schemas if (t := declared(s, name)) is not None and not pa.types.is_null(t)
        }
        if len(types) > 1:
            return True
    return False


def file_columns(table: Any, roles: Mapping[str, str]) -> dict[str, Any]:
    """One file's read columns (``table``: the file's columns it declares),
    each by its role and the file's own type: a coordinate as float64 (a
    huge integer the nearest double), anything else as declared; a column
    the file lacks, or declares with a type not read as its role, as
    missing values (nulls)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    out: dict[str, Any] = {}
    for name, role in roles.items():
        col = table.column(name) if name in table.column_names else None
        if col is None or not readable(role, col.type):
            out[name] = pa.chunked_array([pa.nulls(n, pa.float64() if role == COORDINATE else pa.null())])
        elif role == COORDINATE:
            out[name] = pc.cast(col, pa.float64(), safe=False)
        else:
            out[name] = col
    return out


def combined_units(parts: Sequence[Any]) -> Any:
    """The unit ids of the files' unit columns ``parts`` (each a pyarrow
    array of its file's own type; nulls where the file has none), in
    order, by the library's id rule (docs/privacy.md, "How ids are read"):
    one type for all: that type; floats of several widths: float64; integers
    of several widths (none unsigned 64-bit): int64 (each value exact
    either way); otherwise every id by its own value
    (:func:`~dpdbscan.files.unitids.canonical_ids`: numbers by their exact
    value, so 1 and 1.0 are one unit; text by its characters, bytes by
    their bytes; text, bytes and numbers never one unit). Which of these
    depends on the types declared only, and each gives every id the
    unit it has in any other: adding one file never regroups another's
    rows."""
    import pyarrow as pa

    target = unit_target([p.type for p in parts])
    if target is not None:
        return pa.chunked_array([p.cast(target) for p in parts], type=target)
    return np.concatenate([canonical_ids(_values(p)) for p in parts]) if parts else canonical_ids([])


def unit_target(types: Sequence[Any]) -> Any:
    """The Arrow type :func:`combined_units` reads the files' unit columns
    of ``types`` as (None: every id by its own value)."""
    import pyarrow as pa

    kinds = {plain_type(t) for t in types if not pa.types.is_null(t)}
    if not kinds:
        return pa.null()
    if len(kinds) == 1:
        return next(iter(kinds))
    if all(pa.types.is_floating(t) for t in kinds):
        return pa.float64()
    if all(pa.types.is_integer(t) for t in kinds) and not any(t == pa.uint64() for t in kinds):
        return pa.int64()
    return None


def _values(part: Any) -> list:
    """A unit column's values as Python values (a dictionary's by its values)."""
    import pyarrow as pa

    if isinstance(part, pa.ChunkedArray):
        return [v for chunk in part.chunks for v in _values(chunk)]
    if pa.types.is_dictionary(part.type):
        part = part.cast(part.type.value_type)
    return part.to_pylist()


def combined_column(parts: Sequence[Any]) -> Any:
    """A time or status column of the files' ``parts`` (each of its file's
    own type, nulls where the file has none): a ChunkedArray when they
    share one type (nulls cast to it), else a :class:`MixedColumn` whose
    parts each keep their type (read part by part:
    :func:`dpdbscan.traces.times.in_parts`)."""
    import pyarrow as pa

    kinds = {plain_type(p.type) for p in parts if not pa.types.is_null(p.type)}
    if len(kinds) <= 1:
        target = next(iter(kinds)) if kinds else pa.null()
        return pa.chunked_array([p.cast(target) for p in parts], type=target)
    return MixedColumn([p if isinstance(p, pa.ChunkedArray) else pa.chunked_array([p]) for p in parts])


class MixedColumn:
    """A column of a dataset whose files declare it with different types:
    one pyarrow ChunkedArray per file, each of its own type, in order. The
    readers of times and statuses read each part alone
    (:func:`dpdbscan.traces.times.in_parts`, ``chunks_of``)."""

    def __init__(self, parts: list[Any]) -> None:
        self.file_parts = parts

    def __len__(self) -> int:
        return sum(len(p) for p in self.file_parts)


__all__ = [
    "ALSO",
    "COORDINATE",
    "NAME_THE_COLUMNS",
    "UNIT",
    "MixedColumn",
    "combined_column",
    "combined_units",
    "declared",
    "declares",
    "file_columns",
    "files_differ",
    "merged_schema",
    "plain_type",
    "refuse_unnamed_columns",
    "readable",
    "unit_target",
]
