"""Exact per-cell counts on a Dask cluster (dask.distributed).

Counting points per cell is the only stage that is linear in the number of
points, and the only one that reads them. This backend runs it where the data
lives: each partition (a Parquet or CSV part, a block of a dask array) is
cleaned by the documented per-record rule, turned into sorted ``(keys,
counts)`` by the numpy reference backend, and the partial results are merged
by key in a tree of ``split_every``-way merges. The driver receives only the
exact counts of the occupied cells; noise, empty-cell sampling, neighbour sums
and merging stay on the driver (``mechanism.release_histogram``), so noise is
added once, after the global reduce.

Nothing here steers the mechanism: the grid comes from public parameters, and
partitioning only changes where records are counted, not the counts.

Files are read by the same rules as the command line (:mod:`dpdbscan.files`):
the format comes from the ``file_format`` option or the file names, the CSV
layout from the options and a *declared* header (:func:`files.layout.csv_layout`),
or from the Parquet schema, never from a record; each CSV record is parsed
alone (:mod:`dpdbscan.files.records`): a value that is not a number reads as
NaN and its row is dropped; no error quotes a value. Every partition's result
carries a tally, and the driver refuses a reduce that did not merge every
partition exactly once.

Person-level counts (:meth:`DaskBackend.count_units`) bound each privacy
unit's contribution first, which needs all of a unit's rows in one place:
each partition's (unit, cell) pairs are shuffled by unit, then bounded per
shuffled partition exactly as in memory (see the "units" section below).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Self

import numpy as np

from ..._optional import require
from ...cells.grid import Grid
from ...exceptions import private_note
from ...files.csvfile import GzipText
from ...files.formats import format_of
from ...files.layout import Columns, ReadOptions, csv_layout, schema_columns
from ...files.parquetfiles import (
    ALSO,
    COORDINATE,
    UNIT,
    combined_units,
    declared,
    declares,
    file_columns,
    merged_schema,
    plain_type,
    readable,
    refuse_unnamed_columns,
    unit_target,
)
from ...files.reader import cut_note
from ...files.records import (
    BlockCounts,
    CsvLayout,
    coerce_binary,
    header_fields,
    header_start,
    last_line_end,
    parse_block,
    parse_rows,
    split_head,
    unit_missing,
)
from ...files.unitids import canonical_ids, id_token, read_units, token_id, unit_kind_of_arrow
from ...params.specs import UnitBound
from .. import bounding, periodtable
from ..bounding import BoundingKey
from ..engine import merge_counts, merged_exactly_once, pairs_by_unit
from .base import CellCounts
from .numpy_backend import NumpyBackend


def _require_dask():
    """Import dask's dataframe and distributed parts, naming the extra if absent."""
    require("dask.dataframe", "the dask backend")
    require("distributed", "the dask backend")


# --------------------------------------------------------------- partitions
def count_block(grid: Grid, block: Any) -> tuple[np.ndarray, np.ndarray]:
    """Exact counts of one partition, by the same rule as in-memory data.

    ``clean_points`` drops rows with NaN/inf and clips the rest into the box;
    each record's fate depends on that record alone, so applying it partition
    by partition gives the same multiset of cleaned points as applying it once.
    """
    X = np.asarray(block, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != grid.d:
        raise ValueError(f"a partition has shape {X.shape}, expected (n, {grid.d}) for a {grid.d}-D grid")
    cells = NumpyBackend().count(grid, X)  # applies clean_points
    return cells.keys, cells.counts


def frame_points(frame: Any, columns: Sequence[str]) -> tuple[np.ndarray, int]:
    """The ``columns`` of a pandas frame as floats, and how many rows had a
    value that is not a number (:func:`frame_values`)."""
    X, bad = frame_values(frame, columns)
    return X, int(bad.sum())


def frame_values(frame: Any, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The ``columns`` of a pandas frame as floats, and a mask of the rows
    that had a value that is not a number. Numeric columns convert directly;
    others (text, objects) value by value, a value that is not a number
    becoming NaN: a conversion error would stop the count and quote the value."""
    import pandas as pd

    X = np.empty((len(frame), len(columns)))
    bad = np.zeros(len(frame), dtype=bool)
    for j, c in enumerate(columns):
        s = frame[c]
        if pd.api.types.is_numeric_dtype(s.dtype):
            X[:, j] = s.to_numpy(dtype=np.float64, na_value=np.nan)
            continue
        import pyarrow as pa

        missing = s.isna().to_numpy(dtype=bool)
        texts = s.astype(str).to_numpy(dtype=object)
        texts[missing] = None
        X[:, j], unparseable = coerce_binary(pa.array(texts, type=pa.string()))
        bad |= unparseable
    return X, bad


# A partition's result is (keys, counts, tally); the tally is
# [partitions, rows read, rows with unparseable values, malformed lines,
# rows whose privacy unit is missing, gzip files cut part-way, their rows,
# rows dropped by the per-record rule (a coordinate missing or not finite,
# or no unit), rows of a time window whose time is in no period, then the
# clipping counts of the rows kept (:func:`_clipped`)], summed by the
# merges, so the driver can check that every partition was merged exactly
# once.
def _tally(
    rows: int,
    unparseable: int = 0,
    malformed: int = 0,
    missing_unit: int = 0,
    cut: bool = False,
    dropped: int = 0,
    period: np.ndarray | None = None,
    *,
    clip: np.ndarray,
) -> np.ndarray:
    no_period = 0 if period is None else int(np.count_nonzero(period < 0))
    head = [1, rows, unparseable, malformed, missing_unit, int(cut), rows if cut else 0, dropped, no_period]
    return np.concatenate([np.array(head, dtype=np.int64), clip])


def _kept(X: np.ndarray, unit: np.ndarray | None = None) -> np.ndarray:
    """The rows of ``X`` the per-record rule keeps (:func:`dpdbscan.release.bounding.kept_keys`,
    ``clean_points``): every coordinate finite and (``unit``: its presence)
    a unit. The in-memory path's total note counts the others
    (:func:`dpdbscan.prepare.clipping.clipping_counts`' ``n_bad``)."""
    if X.ndim != 2:
        keep = np.ones(len(X), dtype=bool)
    else:
        keep = _columns_all(X, np.isfinite)
    return keep if unit is None else keep & unit


def _columns_all(X: np.ndarray, test: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``test`` of each column of ``X``, and-ed over the columns, one column
    at a time (quicker than over the rows of a few columns)."""
    out = np.ones(X.shape[0], dtype=bool)
    for j in range(X.shape[1]):
        out &= test(X[:, j])
    return out


def _dropped(X: Any, unit: np.ndarray | None = None) -> int:
    """How many rows of ``X`` the per-record rule drops (:func:`_kept`)."""
    keep = _kept(np.asarray(X, dtype=np.float64), unit)
    return int(keep.size - np.count_nonzero(keep))


def _clipped(lower: np.ndarray, upper: np.ndarray, X: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """What the per-record rule does to the kept rows of ``X`` (counts only,
    for the data owner's private notes, as in memory,
    :func:`dpdbscan.prepare.clipping.clipping_counts`): ``[outside the box,
    inside it read as xmin xmax ymin ymax, inside it with the two
    coordinates swapped, below each column's lower bound (d), above each
    upper bound (d)]``. The two fits are the in-memory hint's
    (:func:`dpdbscan.prepare.clipping.outside_hint`), counted in 2-D only
    (else 0). Nothing here changes a count of the release."""
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    d = lower.size
    out = np.zeros(3 + 2 * d, dtype=np.int64)
    F = X if keep.all() else X[keep]
    if F.shape[0] == 0 or F.ndim != 2 or F.shape[1] != d:
        return out

    def within(lo: np.ndarray, hi: np.ndarray, cols: Sequence[int]) -> np.ndarray:
        got = np.ones(F.shape[0], dtype=bool)
        for j, c in enumerate(cols):
            got &= F[:, c] >= lo[j]
            got &= F[:, c] <= hi[j]
        return got

    inside = within(lower, upper, range(d))
    out[0] = F.shape[0] - np.count_nonzero(inside)
    if out[0]:
        outer = F[~inside]
        for j in range(d):
            out[3 + j] = np.count_nonzero(outer[:, j] < lower[j])
            out[3 + d + j] = np.count_nonzero(outer[:, j] > upper[j])
    if d == 2:
        out[1] = np.count_nonzero(
            within(np.array([lower[0], upper[0]]), np.array([lower[1], upper[1]]), (0, 1))
        )
        out[2] = np.count_nonzero(within(lower, upper, (1, 0)))
    return out


def _rule_tally(
    box: tuple[np.ndarray, np.ndarray], X: Any, unit: np.ndarray | None = None
) -> tuple[int, np.ndarray]:
    """``(rows dropped, clipping counts)`` of one partition's rows by the
    per-record rule (:func:`_kept`, :func:`_clipped`)."""
    X = np.asarray(X, dtype=np.float64)
    keep = _kept(X, unit)
    return int(keep.size - np.count_nonzero(keep)), _clipped(box[0], box[1], X, keep)


def _frame_part(grid, frame, columns):
    X, bad = frame_points(frame, columns)
    dropped, clip = _rule_tally(_box(grid), X)
    return (*count_block(grid, X), _tally(len(X), bad, dropped=dropped, clip=clip))


def _array_part(grid, block):
    dropped, clip = _rule_tally(_box(grid), block)
    return (*count_block(grid, block), _tally(len(block), dropped=dropped, clip=clip))


def _box(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """The public box of ``grid`` (the one the rows are clipped onto)."""
    return grid.lower, grid.upper


def _csv_part(grid, data: Any, layout: CsvLayout, header: list | None, first: bool, where: str):
    """Count one block of CSV text (:func:`_csv_body`)."""
    body, cut = _csv_body(data, layout, header, first, where)
    X, counts = parse_block(body, layout)
    dropped, clip = _rule_tally(_box(grid), X)
    tally = _tally(counts.rows, counts.unparseable, counts.malformed, cut=cut, dropped=dropped, clip=clip)
    return (*count_block(grid, X), tally)


@dataclasses.dataclass(frozen=True)
class _Inflated:
    """The text of a whole gzip file (one block) and whether the file ends
    early (cut part-way, as by an interrupted download)."""

    text: bytes
    cut: bool


def _inflate(fs: Any, path: str, where: str) -> _Inflated:
    """The text of the gzip file ``path`` as the in-memory reader reads it
    (:class:`dpdbscan.files.csvfile.GzipText`): a file cut part-way keeps
    its text before the cut; a damaged one is refused in that reader's words,
    quoting nothing."""
    try:
        with fs.open(path, "rb") as fh:
            inflated = GzipText(fh, own=False)
            return _Inflated(inflated.read_all(), inflated.cut)
    except OSError:
        raise ValueError(f"{where}: cannot read as CSV (the file is damaged or not CSV)") from None


def _csv_body(
    data: Any, layout: CsvLayout, header: list | None, first: bool, where: str
) -> tuple[bytes, bool]:
    """The records of one block of CSV text (bytes, or a gzip file's
    :class:`_Inflated` text), and whether its file was cut part-way.
    ``first`` marks a file's first block, whose start is read as the
    in-memory reader reads a file's (:func:`dpdbscan.files.records.split_head`):
    a byte order mark dropped and, when ``header`` (the declared header's
    names) is given, the header line split off, and refused unless it names
    the first file's fields. A gzip file cut within its header line has no
    records (the first file's header is read whole before the release,
    :meth:`DaskBackend._csv_plan`): its rows before the cut are none."""
    cut = isinstance(data, _Inflated) and data.cut
    if isinstance(data, _Inflated):
        data = data.text
    if not first:
        return data, cut
    if cut and header is not None and not last_line_end(header_start(data)):
        return b"", cut
    line, body = split_head(data, header is not None)
    if line is not None and header is not None and header_fields(line, layout.delimiter) != header:
        raise ValueError(
            f"{where}: its header differs from the first file's "
            f"({', '.join(header)}); count such files separately"
        )
    return body, cut


def _merge_parts(*parts):
    keys, counts = merge_counts(*[(k, c) for k, c, _ in parts])
    return keys, counts, np.sum([t for _, _, t in parts], axis=0)


# -------------------------------------------------------------------- units
# Person-level counts (DaskBackend.count_units). Bounding needs all of a
# unit's rows in one place. Each input partition is first reduced to its
# (unit, cell, count) pairs after the per-record rule (as bounding.pairs_of
# does in memory): one row per pair instead of one per point, and the
# coordinates never leave the partition. The pairs are shuffled by unit; each shuffled partition then
# holds every pair of its units, adds up their partial counts and bounds them
# with bounding.bounded_counts, as in memory. A unit's priorities depend on
# the unit, the cell and the key only, so the kept pairs are the in-memory
# ones; shuffled partitions hold disjoint sets of units, so their bounded
# per-cell counts add up to the in-memory counts.
_UNIT, _COUNT, _PAIR = "unit", "count", "pair"


def exact_integers(t: Any) -> Any:
    """The pandas dtype a Parquet file's Arrow integer column is read as:
    pandas' nullable integers of its width (None for any other type: the
    default). pandas' default makes an integer column with one null float64
    in that partition, which rounds every id above 2**53 (sixty ids near
    2**60 become one unit): one row without an id would merge other units.
    Read so, each value stays itself and a null is missing, as the
    in-memory reader (Arrow) reads them."""
    import pandas as pd
    import pyarrow as pa

    if not pa.types.is_integer(t):
        return None
    return pd.api.types.pandas_dtype(("U" if pa.types.is_unsigned_integer(t) else "") + f"Int{t.bit_width}")


def _to_pandas(col: Any) -> Any:
    """A pyarrow column as dask reads a Parquet file's: integers nullable,
    text as pandas' Arrow-backed strings, dates as pandas' Arrow dates (each
    value's own integer, read so by :func:`dpdbscan.traces.parse_times`).
    pandas' default made each date a Python ``date``, and one past year 9999
    (a ``date32`` holds 2**31 - 1 days) failed the whole file's read, and the
    fit, where the in-memory reader drops that row alone (docs/privacy.md
    section 8, round 18)."""
    import pandas as pd
    import pyarrow as pa

    def mapper(t: Any) -> Any:
        if pa.types.is_date(t):
            return pd.ArrowDtype(t)
        return pd.StringDtype("pyarrow") if pa.types.is_string(t) else exact_integers(t)

    return col.to_pandas(types_mapper=mapper)


def _empty_frame(schema: Any) -> Any:
    """An empty pandas frame of an Arrow ``schema`` (its columns and their
    dtypes as this backend reads them: integers nullable)."""
    return schema.empty_table().to_pandas(types_mapper=exact_integers)


def _parquet_file_frame(
    file: tuple[str, Any] | None,
    *,
    fs: Any,
    roles: dict[str, str],
    target: Any,
    schemas: Sequence[Any] = (),
) -> Any:
    """One Parquet file's read columns as a pandas frame, read alone by its
    own schema (:meth:`DaskBackend._files_alone`; ``file``: its path and
    schema; None: the frame's meta, empty, of the files' ``schemas``):
    coordinates float64, the unit column as ``target`` (an Arrow type) or,
    when None, each id by its own value (an object column of canonical ids,
    :func:`dpdbscan.files.parquetfiles.combined_units`), any other column
    (a time) by the file's own type, or nulls where the file has none."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    if file is None:
        columns = file_columns(pa.table({"_": pa.nulls(0)}), roles)
        kinds = {name: [declared(s, name) for s in schemas] for name in roles}
    else:
        path, schema = file
        with fs.open(path, "rb") as handle:
            table = pq.read_table(handle, columns=[c for c in roles if c in schema.names])
        columns = file_columns(table, roles)
        kinds = {}
    out = {}
    for name, role in roles.items():
        col = columns[name]
        if role == COORDINATE:
            out[name] = pd.Series(col.to_numpy(), dtype=np.float64)
        elif role == UNIT and target is not None:
            out[name] = _to_pandas(col.cast(target))
        elif role == UNIT:
            out[name] = pd.Series(combined_units([col]), dtype=object)
        elif file is None:
            # one type (dictionary encoding aside) in every file that declares
            # it: that type; else object (each partition keeps its file's own)
            types = {plain_type(t) for t in kinds[name] if t is not None and not pa.types.is_null(t)}
            t = next(iter(types)) if len(types) == 1 else None
            empty = pd.Series([], dtype=object) if t is None else _to_pandas(pa.chunked_array([], type=t))
            out[name] = empty
        else:
            out[name] = _to_pandas(col.cast(plain_type(col.type)))
    n = len(next(iter(out.values()))) if out else 0
    return pd.DataFrame({k: v.reset_index(drop=True) for k, v in out.items()}, index=pd.RangeIndex(n))


def unit_kind(dtype: Any, name: str = "units") -> str:
    """How the values of a unit column become units, from its *declared*
    type (a Parquet schema, a dataframe's or an array's dtype; never its
    values): the rule of the reader's Parquet files
    (:func:`dpdbscan.files.unitids.unit_kind_of_arrow`: ``"int"``,
    ``"float"`` or ``"text"``) on the dtype's Arrow type, or ``"object"``
    (an ``object`` column, whose values were never typed together: each by
    its own type, as in memory, :func:`dpdbscan.files.unitids.read_units`,
    and shuffled as its :func:`~dpdbscan.files.unitids.id_token`). A
    categorical column is read as its categories' type."""
    import pandas as pd

    if isinstance(dtype, pd.CategoricalDtype):
        return unit_kind(dtype.categories.dtype, name)
    if pd.api.types.is_object_dtype(dtype):
        return "object"
    arrow = _arrow_type(dtype)
    kind = None if arrow is None else unit_kind_of_arrow(arrow)
    if kind is None:
        raise TypeError(f"the unit column {name!r} has type {dtype}; units must be numbers or text")
    return kind


#: How the backend's own read of Parquet paths takes folder names: as no
#: column, as the in-memory reader (``pyarrow.dataset.dataset``) does. dask
#: reads ``name=value`` folders (hive partitions) as a column by default,
#: its type inferred from every folder's value: one more unit's folder
#: ``cab=1`` beside ``cab=01`` made two equal integers and failed the whole
#: read, event level too (round 14).
_NO_PARTITIONS = {"partitioning": None}

#: What each of dask's readers that type a column from its first values is
#: called in the refusal (:func:`check_frame_readers`), and the way to read
#: the data instead.
_TEXT_READERS = {
    "csv": (
        "dask's read_csv (or read_table, read_fwf)",
        "give the CSV files' paths to the fit instead, which reads each record alone and drops a bad one",
    ),
    "json": ("dask's read_json", "write the records to Parquet or CSV first"),
    "bag": ("a dask Bag's to_dataframe", "write the records to Parquet or CSV first"),
    "sql": (
        "dask's read_sql_table (or read_sql_query, read_sql)",
        "give an SQLite file's path to the fit of the numpy backend, which reads each value by its "
        "column's declared type and drops a bad row, or write the table to Parquet first",
    ),
}


def check_frame_readers(X: Any) -> None:
    """Refuse a dask DataFrame that one of dask's own text readers reads:
    ``read_csv``, ``read_table`` and ``read_fwf`` (pandas' parser on each
    block, its columns typed from the first rows and every later block
    coerced to those types) and ``read_json`` (pandas' on each file or
    block, checked against the first's types). One record decides there
    whether the whole read succeeds: a row of three fields among rows of
    two, a quote left open, an empty field in a column typed integer, a
    word in a column typed float, a byte that is not UTF-8 each fail the
    fit when its block is read, after a ledger has reserved the release, and
    dask's error quotes the value (docs/privacy.md section 8, round 13).
    No option of the frame's makes every such record one bad row, so the
    frame is refused, from its graph alone (public: how it was built, never
    a value), before anything is read: the files' paths, given to the fit,
    are read by the backend itself, one record at a time
    (:mod:`dpdbscan.files.records`).

    ``read_sql_table`` (and ``read_sql_query``, ``read_sql``) the same: it
    types the columns from the first rows (``head_rows``) and casts each
    partition's ``pandas.read_sql`` to those types, so one value of another
    type (SQLite keeps a word in a ``REAL`` column as text), or a NULL in a
    column the first rows made integer, fails the whole read, its value
    quoted (round 14). A Bag's ``to_dataframe`` too: it types the columns
    from the first record (or the caller's ``meta``) and casts each
    partition's records to those types.

    A dask array (or a unit array) made from such a frame
    (``frame.to_dask_array()``, ``frame.values``) runs the same reader inside
    the fit: its graph's tasks are searched for the readers' functions
    (:func:`_graph_readers`; round 14)."""
    import dask.dataframe as dd

    found = {kind for _, kind in _frame_readers(X)} if isinstance(X, dd.DataFrame) else _graph_readers(X)
    kinds = sorted(found & set(_TEXT_READERS))
    if kinds:
        what = (
            "DataFrame" if isinstance(X, dd.DataFrame) else "Series" if isinstance(X, dd.Series) else "array"
        )
        raise ValueError(
            f"this dask {what} is read by {' and '.join(_TEXT_READERS[k][0] for k in kinds)}, which "
            "fails the whole read on one malformed record (a row of another length, a quote left "
            "open, a value not of the type its first rows gave the column): "
            + "; ".join(_TEXT_READERS[k][1] for k in kinds)
        )


def check_frame_units(X: Any, unit: str) -> None:
    """Refuse a dask DataFrame whose unit column dask's Parquet reader types
    from the values: read with pandas' default types, an integer column is
    declared int64 but is float64 in every partition that holds a null (ids
    above 2**53 rounded, units merged: one row without an id would merge
    others). Public: the frame's declared types and the readers in its
    graph, never a value. A frame typed in memory (``dd.from_pandas``),
    or read with nullable types, passes. (A frame of dask's text readers is
    refused whatever its columns: :func:`check_frame_readers`.)"""
    readers = [(node, kind) for node, kind in _frame_readers(X) if kind == "parquet"]
    if not readers:
        return
    declared = [X.dtypes[unit]] if unit in X.columns else []
    for node, _ in readers:
        meta = getattr(node, "_meta", None)
        if meta is not None and unit in getattr(meta, "columns", ()):
            declared.append(meta.dtypes[unit])  # as read, before any astype of the caller's
    if not any(isinstance(t, np.dtype) and t.kind in "iu" for t in declared):
        return
    raise ValueError(
        f"the unit column {unit!r} was read from Parquet with pandas' default types: an integer "
        "column is then float64 in each partition that holds a missing id, which rounds ids above "
        "2**53 and merges units. Read it with dd.read_parquet(..., dtype_backend='numpy_nullable') "
        "(or give the files' paths to the fit)"
    )


def check_lazy_units(units: Any) -> None:
    """Refuse a dask Series or array of unit ids (beside points in memory,
    or with the Dask backend) that dask's Parquet reader types from the
    values: read with pandas' default types, an integer column is declared
    int64 but is float64 in every partition that holds a null, so ids above
    2**53 are rounded and units merged when one row has no id, as
    :func:`check_frame_units` refuses for a frame's unit column (round 15).
    Public: the declared types and the readers in the graph."""
    import dask.dataframe as dd

    if isinstance(units, dd.Series):
        readers = [node for node, kind in _frame_readers(units) if kind == "parquet"]
        declared = [units.dtype]
        for node in readers:
            meta = getattr(node, "_meta", None)
            if meta is not None and units.name in getattr(meta, "columns", ()):
                declared.append(meta.dtypes[units.name])  # as read, before any astype of the caller's
        found = bool(readers)
    else:
        found = "parquet" in _graph_readers(units)
        declared = [getattr(units, "dtype", None)]
    if found and any(isinstance(t, np.dtype) and t.kind in "iu" for t in declared):
        raise ValueError(
            "these units were read from Parquet with pandas' default types: an integer column is "
            "then float64 in each partition that holds a missing id, which rounds ids above 2**53 "
            "and merges units. Read it with dd.read_parquet(..., dtype_backend='numpy_nullable') "
            "(or give the files' paths to the fit)"
        )


#: The names of the delayed tasks with which dask's read_json reads a file
#: or a block, and read_sql_table, read_sql_query and read_sql a partition
#: (its graph's keys begin with them).
_JSON_TASKS = ("read_json_file-", "read_json_chunk-")
_SQL_TASKS = ("_read_sql_chunk-",)
#: The name of the tasks with which a dask Bag's to_dataframe makes each
#: partition (a legacy graph's layer and the expressions' output keys).
_BAG_TASKS = ("to_dataframe-",)
#: The layer names of dask's readers in a legacy graph, by kind.
_LEGACY_LAYERS = (
    ("parquet", ("read-parquet-",)),
    ("csv", ("read-csv-",)),
    ("json", _JSON_TASKS),
    ("sql", _SQL_TASKS),
    ("bag", _BAG_TASKS),
)


def _frame_readers(X: Any) -> list[tuple[Any, str]]:
    """The nodes of a dask DataFrame's graph that read files with dask's own
    Parquet, CSV, JSON or SQL reader, each with ``"parquet"``, ``"csv"``
    (also ``read_table`` and ``read_fwf``, which are read_csv's), ``"json"``
    or ``"sql"`` (``read_sql_table``, ``read_sql_query``, ``read_sql``),
    and a Bag's ``to_dataframe`` as ``"bag"`` (public: how the frame was
    built)."""
    expr = getattr(X, "expr", None)
    walk = getattr(expr, "walk", None)
    if not callable(walk):
        return _legacy_frame_readers(X)
    out = []
    for node in walk():
        names = {c.__name__ for c in type(node).__mro__}
        if "ReadParquet" in names:
            out.append((node, "parquet"))
        elif "FromMap" in names:
            func = _operand(node, "func")
            inner = getattr(func, "func", func)
            if getattr(inner, "__name__", "") == "_read_csv":
                out.append((node, "csv"))
        elif "DelayedsExpr" in names:
            keys = [str(getattr(d, "key", "")) for d in getattr(node, "operands", ())]
            if any(k.startswith(_JSON_TASKS) for k in keys):
                out.append((node, "json"))
            if any(k.startswith(_SQL_TASKS) for k in keys):
                out.append((node, "sql"))
        elif "FromGraph" in names:
            outputs = _operand(node, "keys") or ()
            if any(str(k[0] if isinstance(k, tuple) else k).startswith(_BAG_TASKS) for k in outputs):
                out.append((node, "bag"))
    return out


#: The functions with which dask's text and SQL readers and a Bag's
#: to_dataframe read a partition, by kind (:func:`_graph_readers`).
_READER_FUNCTIONS: dict[tuple[Any, Any], str] = {
    ("dask.dataframe.io.csv", "_read_csv"): "csv",
    ("dask.dataframe.io.json", "read_json_file"): "json",
    ("dask.dataframe.io.json", "read_json_chunk"): "json",
    ("dask.dataframe.io.sql", "_read_sql_chunk"): "sql",
    ("dask.bag.core", "to_dataframe"): "bag",
    # an object that reads a Parquet part (its class, not a function)
    ("dask.dataframe.io.parquet.core", "ParquetFunctionWrapper"): "parquet",
}


def _graph_readers(X: Any) -> set[str]:
    """The kinds of :data:`_READER_FUNCTIONS` among the tasks of a dask
    collection's graph (an array made from a frame: its tasks run the
    frame's reader), and of the layers a legacy graph names
    (:func:`_legacy_frame_readers`). Public: how the collection was built."""
    graph = getattr(X, "__dask_graph__", None)
    if not callable(graph):
        return set()
    found = {kind for _, kind in _legacy_frame_readers(X)}
    pending = list(dict(graph()).values())
    seen = 0
    while pending and seen < 1_000_000:
        task = pending.pop()
        seen += 1
        if isinstance(task, tuple) and task and callable(task[0]):
            func, args = task[0], list(task[1:])
        else:
            func, args = getattr(task, "func", None), list(getattr(task, "args", ()) or ())
        inner = getattr(func, "func", func)  # a functools.partial's function
        for f in (func, inner):
            name = getattr(f, "__name__", None) or type(f).__name__
            kind = _READER_FUNCTIONS.get((getattr(f, "__module__", None), name))
            if kind is not None:
                found.add(kind)
        for a in args:
            if isinstance(a, Mapping):  # a fused subgraph
                pending.extend(a.values())
            elif hasattr(a, "func"):  # a task among the arguments
                pending.append(a)
            elif isinstance(a, (tuple, list)) and len(a) <= 256:  # a legacy task, or tasks
                pending.extend([a] if a and callable(a[0]) else a)
    return found


def _legacy_frame_readers(X: Any) -> list[tuple[Any, str]]:
    """:func:`_frame_readers` for dask before its expressions (2024.1, the
    oldest supported): the input layers of the frame's high-level graph that
    dask's ``read_parquet`` and ``read_csv`` name ``read-parquet-*`` and
    ``read-csv-*``, each with the types as read (its reading function's
    ``meta``, before any astype of the caller's), and the layers of
    ``read_json``'s and ``read_sql``'s tasks."""
    import types

    graph = getattr(X, "__dask_graph__", None)
    layers = getattr(graph() if callable(graph) else None, "layers", None)
    if not isinstance(layers, Mapping):
        return []
    out = []
    for name, layer in layers.items():
        text = str(name)
        for kind, prefixes in _LEGACY_LAYERS:
            if not text.startswith(prefixes):
                continue
            meta = getattr(getattr(layer, "io_func", None), "meta", None)
            out.append((types.SimpleNamespace(_meta=meta), kind))
    return out


def _operand(node: Any, name: str) -> Any:
    try:
        return node.operand(name)
    except (ValueError, AttributeError, IndexError):
        return None


def _arrow_type(dtype: Any) -> Any:
    """The Arrow type of a pandas or numpy dtype (None when it has none)."""
    import pandas as pd
    import pyarrow as pa

    if isinstance(dtype, pd.ArrowDtype):
        return dtype.pyarrow_dtype
    if isinstance(dtype, pd.StringDtype):
        return pa.string()
    try:
        return pa.from_numpy_dtype(getattr(dtype, "numpy_dtype", dtype))
    except (pa.ArrowNotImplementedError, TypeError):
        return None


def _unit_type(kind: str) -> Any:
    """The Arrow type units of ``kind`` are shuffled in."""
    import pyarrow as pa

    # text as bytes with 64-bit offsets: a partition (a gzip file is one)
    # may hold more than the 2 GiB of text 32-bit offsets can address, and
    # whether a fit happens must not hinge on one unit's id pushing it over
    return {"int": pa.int64(), "float": pa.float64(), "text": pa.large_binary(), "object": pa.large_binary()}[
        kind
    ]


def unit_array(values: Any, kind: str) -> Any:
    """Units (a pandas Series, a numpy array or an Arrow array) as an Arrow
    array of :func:`_unit_type`: integers as int64 (uint64 by their bits,
    as in memory), floats as float64 with -0.0 as 0.0 (one unit in memory,
    two hashes in a shuffle), text as its UTF-8 bytes, an object column's
    values as their id tokens (an Arrow binary array is taken as tokens
    already). Missing values (None, NaN, NA) become nulls or stay NaN
    (:func:`unit_missing`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == "object":
        return _object_tokens(values)
    arr = None
    with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        arr = (
            values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, from_pandas=True)
        )
        if kind == "text" and _is_text(arr.type):
            # bytes with 64-bit offsets, a dictionary's decoded, chunk by
            # chunk: no 2 GiB limit when they are combined
            arr = arr.cast(pa.large_binary())
        if isinstance(arr, pa.ChunkedArray) and pa.types.is_dictionary(arr.type):
            # decoded chunk by chunk: combining unifies the dictionaries, which
            # refuses a null dictionary value (docs/privacy.md section 8, round 11)
            arr = pa.chunked_array([c.dictionary_decode() for c in arr.chunks], arr.type.value_type)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if kind == "int" and pa.types.is_unsigned_integer(arr.type):
            arr = pc.cast(pc.cast(arr, pa.uint64()), pa.int64(), safe=False)  # wraps: the bits
        elif kind == "float":
            arr = pc.add(pc.cast(arr, pa.float64()), 0.0)
        elif kind == "text" and not (
            pa.types.is_string(arr.type)
            or pa.types.is_large_string(arr.type)
            or pa.types.is_binary(arr.type)
            or pa.types.is_large_binary(arr.type)
        ):
            arr = None
        if arr is not None:
            return pc.cast(arr, _unit_type(kind))
    # never the Arrow message: it may quote a value
    raise TypeError(f"the units do not convert to {kind} values: give one number or text per row")


def _object_tokens(values: Any) -> Any:
    """An object column's ids as an Arrow binary array of their tokens, each
    read on its own (:func:`dpdbscan.files.unitids.read_units`)."""
    import pyarrow as pa

    large = pa.large_binary()
    if isinstance(values, pa.ChunkedArray):
        if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
            values = values.cast(large)  # chunk by chunk: no 2 GiB limit when combined
        values = values.combine_chunks()
    if isinstance(values, pa.Array) and (
        pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)
    ):
        return values.cast(large)  # tokens already (a shuffled column)
    if hasattr(values, "to_numpy") and not isinstance(values, (np.ndarray, pa.Array)):
        values = values.to_numpy(dtype=object, na_value=None)
    ids = canonical_ids(np.asarray(values, dtype=object).tolist())
    with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError, OverflowError):
        text = pa.array(ids)  # past 2 GiB of text: a ChunkedArray
        if pa.types.is_string(text.type) or pa.types.is_null(text.type):
            text = text.cast(large)  # all text: its bytes are its tokens
            return text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text
    return pa.array([None if v is None else id_token(v) for v in ids.tolist()], type=large)


def _is_text(t: Any) -> bool:
    """Whether the Arrow type ``t`` holds text or bytes (or a dictionary of them)."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _pairs_meta(grid: Grid, kind: str) -> Any:
    """The empty frame of pairs: the schema every partition's pairs share."""
    import pyarrow as pa

    columns = {_UNIT: pa.array([], type=_unit_type(kind))}
    columns.update({c: pa.array([], type=pa.int64()) for c in [*_cell_columns(grid), _COUNT]})
    return _pairs_frame(pa.table(columns), kind)


def _cell_columns(grid: Grid) -> list[str]:
    """The cell key as columns: one int64, or (wide grids) the words of
    its packed bytes, read back bit for bit."""
    return [f"cell{i}" for i in range(grid.key_dtype.itemsize // 8)] if grid.wide else ["cell"]


def _cell_words(grid: Grid, keys: np.ndarray) -> np.ndarray:
    """Cell keys as the int64 words of :func:`_cell_columns`, one row per key."""
    return np.ascontiguousarray(keys).view(np.int64).reshape(len(keys), len(_cell_columns(grid)))


def _pairs_frame(table: Any, kind: str) -> Any:
    """A pandas frame of a pairs table; text units stay Arrow bytes."""
    import pandas as pd

    if kind not in ("text", "object"):
        return table.to_pandas()
    binary = table.schema.field(_UNIT).type
    return table.to_pandas(types_mapper=lambda t: pd.ArrowDtype(t) if t == binary else None)


def _pairs(grid: Grid, X: np.ndarray, units: Any, keep: np.ndarray, kind: str) -> Any:
    """The (unit, cell, count) pairs of one partition's rows, a frame of
    :func:`_pairs_meta`'s columns (``units``: an Arrow array of
    :func:`unit_array`). The per-record rule first, the one of
    ``bounding.pairs_of`` (:func:`dpdbscan.release.bounding.kept_keys`):
    rows outside ``keep`` (a missing unit) or with a non-finite coordinate
    are dropped, the others' keys clip into the box."""
    import pyarrow as pa

    keep, keys = bounding.kept_keys(grid, X, keep)
    if not keep.all():
        units = units.filter(pa.array(keep))
    words = _cell_words(grid, keys)
    cells = _cell_columns(grid)
    table = pa.table({_UNIT: units, **{c: words[:, j] for j, c in enumerate(cells)}})
    # a hash aggregation: the order of the pairs does not matter before the shuffle
    counted = table.group_by([_UNIT, *cells], use_threads=False).aggregate([([], "count_all")])
    # rename by list: pyarrow before 17 (14 is the oldest supported) takes no mapping
    names = [_COUNT if n == "count_all" else n for n in counted.column_names]
    return _pairs_frame(counted.rename_columns(names).select([_UNIT, *cells, _COUNT]), kind)


def _frame_pairs(grid, frame, columns, unit, kind, window=None):
    """One partition of a dataframe: its pairs and its tally (``window``:
    the rows whose time is in no period are dropped, :meth:`DaskBackend.windowed`)."""
    X, units, keep, period, tally = _frame_rows(_box(grid), frame, columns, unit, kind, window)
    return _pairs(grid, X, units, keep if period is None else keep & (period >= 0), kind), tally


def _frame_rows(box, frame, columns, unit, kind, window=None):
    """``(points, units, unit present, period or None, tally)`` of one
    partition of a dataframe; the period of each row by ``window``
    (``(time column, period_of)``), -1 outside the horizon; the tally's
    clipping counts against ``box``, the public ``(lower, upper)``."""
    X, bad = frame_values(frame, columns)
    units = unit_array(frame[unit], kind)
    missing = unit_missing(units)
    period = None if window is None else np.asarray(window[1](frame[window[0]]), dtype=np.int64)
    dropped, clip = _rule_tally(box, X, ~missing)
    tally = _tally(
        len(frame),
        int(bad.sum()),
        missing_unit=int(np.count_nonzero(missing & ~bad)),
        dropped=dropped,
        period=period,
        clip=clip,
    )
    return X, units, ~missing, period, tally


def _array_pairs(grid, block, units, kind):
    """One block of a dask array and its block of units: pairs and tally."""
    X = np.asarray(block, dtype=np.float64)
    units = unit_array(np.asarray(units), kind)
    missing = unit_missing(units)
    dropped, clip = _rule_tally(_box(grid), X, ~missing)
    tally = _tally(len(X), missing_unit=int(np.count_nonzero(missing)), dropped=dropped, clip=clip)
    return _pairs(grid, X, units, ~missing, kind), tally


def _csv_pairs(grid, data, layout, header, first, where, window=None):
    """One block of CSV text: its pairs and its tally. A row whose unit is
    missing reads as NaN (:func:`records.parse_records`), so it is dropped;
    so is one whose time is in no period (``window``: ``(time field, period_of)``)."""
    X, units, keep, period, tally = _csv_rows(_box(grid), data, layout, header, first, where, window)
    return _pairs(grid, X, units, keep if period is None else keep & (period >= 0), "text"), tally


def _csv_rows(box, data, layout, header, first, where, window=None):
    """:func:`_frame_rows` of one block of CSV text. The time field is read
    as the in-memory reader reads it (:func:`dpdbscan.files.reader.read_columns`):
    its text, null when missing and on a malformed line, row for row with
    the points, in the points' own parse (:func:`records.parse_rows`'
    fields read beside them: the bytes the unit field would give)."""
    body, cut = _csv_body(data, layout, header, first, where)
    also = () if window is None else (window[0],)
    X, units, counts, fields = parse_rows(body, dataclasses.replace(layout, also=layout.also + also))
    units = unit_array(units, "text")
    dropped, clip = _rule_tally(box, X, ~unit_missing(units))
    period = None
    if window is not None:
        period = np.asarray(window[1](fields[-1]), dtype=np.int64)
    tally = _tally(
        counts.rows,
        counts.unparseable,
        counts.malformed,
        counts.missing_unit,
        cut,
        dropped,
        period,
        clip=clip,
    )
    return X, units, ~unit_missing(units), period, tally


def _table_pairs(rows, span_of, n_periods, kind):
    """The (unit, pair, count) rows of one partition for the span x period
    table, by the rule of the rows in memory
    (:func:`dpdbscan.release.periodtable.pair_keys`: a row counts when its
    unit is present, its point in a released span, ``span_of``, public after
    the spans' release, and its time in a period); and its tally."""
    import pyarrow as pa

    X, units, keep, period, tally = rows
    keep, pair = periodtable.pair_keys(keep, span_of(X), period, n_periods)
    table = pa.table({_UNIT: units.filter(pa.array(keep)), _PAIR: pair})
    counted = table.group_by([_UNIT, _PAIR], use_threads=False).aggregate([([], "count_all")])
    names = [_COUNT if n == "count_all" else n for n in counted.column_names]
    return _pairs_frame(counted.rename_columns(names).select([_UNIT, _PAIR, _COUNT]), kind), tally


def _frame_table(box, frame, columns, unit, kind, window, span_of, n_periods):
    rows = _frame_rows(box, frame, columns, unit, kind, window)
    return _table_pairs(rows, span_of, n_periods, kind)


def _csv_table(box, data, layout, header, first, where, window, span_of, n_periods):
    rows = _csv_rows(box, data, layout, header, first, where, window)
    return _table_pairs(rows, span_of, n_periods, "text")


def _table_meta(kind: str) -> Any:
    """The empty frame of the table's pairs (:func:`_table_pairs`)."""
    import pyarrow as pa

    columns = {_UNIT: pa.array([], type=_unit_type(kind))}
    columns.update({c: pa.array([], type=pa.int64()) for c in (_PAIR, _COUNT)})
    return _pairs_frame(pa.table(columns), kind)


def _summed_table_pairs(frame: Any, kind: str, key: BoundingKey) -> periodtable.TablePairs:
    """The table's pairs of one shuffled partition, which holds every pair of
    its units: their partial counts summed by the function that sums the
    rows in memory (:func:`dpdbscan.release.periodtable.summed_pairs`)."""
    codes, uniques = _shuffled_units(frame, kind)
    pair, counts = frame[_PAIR].to_numpy(dtype=np.int64), frame[_COUNT].to_numpy(dtype=np.int64)
    return periodtable.summed_pairs(codes, pair, counts, uniques, key)


def _summed_pairs(frame: Any, grid: Grid, kind: str, key: BoundingKey) -> bounding.Pairs:
    """The pairs of one shuffled partition, which holds every pair of its
    units: their partial counts summed by ``bounding.summed_pairs``, the
    function that makes the in-memory pairs (``bounding.pairs_of``)."""
    codes, uniques = _shuffled_units(frame, kind)
    words = np.ascontiguousarray(frame[_cell_columns(grid)].to_numpy(dtype=np.int64))
    keys = words.view(grid.key_dtype).ravel() if grid.wide else words.ravel()
    counts = frame[_COUNT].to_numpy(dtype=np.int64)
    return bounding.summed_pairs(grid, codes, keys, counts, uniques, key)


def _shuffled_units(frame: Any, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) of a shuffled partition's units, the uniques as in
    memory (an object column's tokens back to their ids) so that their
    words are the in-memory ones."""
    import pyarrow as pa

    enc = unit_array(pa.array(frame[_UNIT]), kind).dictionary_encode()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    uniques = enc.dictionary.to_numpy(zero_copy_only=False)
    if kind == "object":
        uniques = _token_ids(uniques)
    return codes, uniques


def _token_ids(tokens: np.ndarray) -> np.ndarray:
    """The canonical ids of shuffled tokens (so their words are the in-memory ones)."""
    out = np.empty(len(tokens), dtype=object)
    out[:] = [token_id(t) for t in tokens.tolist()]
    return out


class DaskEngine:
    """The engine primitives (:mod:`dpdbscan.release.engine`) on a Dask
    cluster: partitions are futures held by the workers. Besides ``map``,
    ``gather`` and ``reduce`` (partitions merged ``split_every`` at a time in
    a tree, refused unless every partition was merged exactly once: the one
    tree every count of the backend is reduced in), it runs the reads of the
    partitions the backend planned (``read``, :meth:`DaskBackend._pair_tasks`)
    and shuffles pairs by unit (``shuffle``), so that what is done with them (the
    contribution bounds, :func:`dpdbscan.release.bounding.bound_parts` and
    :func:`dpdbscan.release.periodtable.bound_table_parts`) is written once,
    above the engine, for memory and cluster alike."""

    def __init__(self, client: Any, split_every: int = 8) -> None:
        self.client, self.split_every = client, split_every

    def read(self, reads: Sequence[Any]) -> list[Any]:
        """The planned reads (delayed, one a partition) run on the workers:
        one future each, computed in one graph."""
        return self.client.compute(list(reads))

    def shuffle(self, parts: Sequence[Any], meta: Any, on: str = _UNIT) -> list[Any]:
        """Frames (partitions like ``meta``) shuffled by their column ``on``:
        as many partitions, each holding every row of its values of ``on``."""
        import dask.dataframe as dd

        frame = dd.from_delayed(list(parts), meta=meta, verify_meta=False)
        # P2P, named: dask's default without a *default* client (ours is not
        # one) is "disk", a partd directory on the driver's machine that the
        # workers of a multi-machine cluster cannot share.
        shuffled = frame.shuffle(on=on, npartitions=len(parts), shuffle_method="p2p")
        return self.client.compute(shuffled.to_delayed())

    def map(self, f: Callable[[Any], Any], parts: Sequence[Any]) -> list[Any]:
        return self.client.map(f, parts)

    def gather(self, parts: Sequence[Any]) -> list[Any]:
        return self.client.gather(list(parts))

    def reduce(self, parts: Sequence[Any], merge: Callable[..., Any]) -> Any:
        level = self.client.map(_counted, parts)
        while len(level) > 1:
            level = [
                self.client.submit(_merge_counted, merge, *level[i : i + self.split_every])
                for i in range(0, len(level), self.split_every)
            ]
        value, merged = level[0].result()
        merged_exactly_once(merged, len(parts))
        return value


def _counted(part: Any) -> tuple[Any, int]:
    return part, 1


def _merge_counted(merge: Callable[..., Any], *parts: tuple[Any, int]) -> tuple[Any, int]:
    return merge(*[v for v, _ in parts]), sum(n for _, n in parts)


class _ShuffleNotes(logging.Filter):
    """Drops distributed's notes that a P2P shuffle started or ended (logged
    as warnings on every shuffle, to the driver's standard error when the
    scheduler runs in this process); anything else passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("Shuffle %s initialized", "Shuffle %s deactivated"))


@contextlib.contextmanager
def _quiet_shuffle_notes():
    logger = logging.getLogger("distributed.shuffle._scheduler_plugin")
    note = _ShuffleNotes()
    logger.addFilter(note)
    try:
        with warnings.catch_warnings():
            # dask's own shuffle calls a pandas API that pandas 3.1 deprecates;
            # the user can do nothing about it
            warnings.filterwarnings("ignore", message="The inplace keyword in DataFrame.reset_index")
            yield
    finally:
        logger.removeFilter(note)


# ------------------------------------------------------------------ columns
def coordinate_columns(
    names: Sequence[str],
    dtypes: Any,
    columns: Columns | None,
    d: int | None,
    unit: str | None = None,
    *,
    file: str | None = None,
) -> list:
    """The coordinate columns of a table with a schema (``dtypes``: its
    declared types by name), by the in-memory reader's rule
    (:func:`dpdbscan.files.layout.schema_columns`): ``columns`` if given
    (names or 0-based indices), else every column except one named
    ``"label"``, unnamed index columns and the unit column ``unit``, each
    declared numeric; the unit column never a coordinate. A Parquet ``file``
    (its name, for messages) also refuses a named column not declared
    numeric; a dataframe's is read value by value (:func:`frame_values`).
    Their number must be ``d`` (not checked when ``d`` is None)."""
    names = list(names)
    types = [dtypes[c] for c in names]
    idx, _ = schema_columns(
        names,
        _numeric_flags(dtypes, names),
        columns,
        unit,
        types=None if file is None else types,
        where="the dataframe" if file is None else file,
    )
    return _as_many_as_bounds([names[i] for i in idx], d, names)


def _as_many_as_bounds(chosen: list, d: int | None, names: Sequence) -> list:
    """``chosen``, refused unless they are ``d`` coordinates (not checked
    when ``d`` is None); ``names``: every column (public)."""
    if d is not None and len(chosen) != d:
        raise ValueError(
            f"the grid has d={d} dimensions (from bounds) but {len(chosen)} coordinate "
            f"columns were selected: {chosen} (data columns: {list(names)}); pass columns=[...]"
        )
    return chosen


def _numeric_flags(dtypes, names) -> list[bool]:
    """Declared-numeric flags of a dataframe's schema (bool is not a coordinate)."""
    import pandas as pd

    return [
        pd.api.types.is_numeric_dtype(dtypes[c]) and not pd.api.types.is_bool_dtype(dtypes[c]) for c in names
    ]


# -------------------------------------------------------------------- files
def _as_paths(X):
    """A list of path strings if ``X`` names files (str, PathLike or a list)."""
    if isinstance(X, (str, os.PathLike)):
        return [os.fspath(X)]
    if isinstance(X, (list, tuple)) and X and all(isinstance(p, (str, os.PathLike)) for p in X):
        return [os.fspath(p) for p in X]
    return None


def _names_a_dataset(paths: Sequence[str]) -> bool:
    """Whether ``paths`` (as given: public) name a dataset of Parquet files
    rather than one file: several paths, a glob, or a local directory."""
    import glob

    return len(paths) > 1 or any(glob.has_magic(p) or os.path.isdir(p) for p in paths)


def file_format(paths: Sequence[str], file_format: str | None = None) -> str:
    """ "parquet" or "csv", from ``file_format`` or the file names (never
    their contents, :func:`dpdbscan.files.format_of`).

    A local directory, or a path without a known extension that is not a
    local file (a URL of a dataset), is taken as a Parquet dataset directory.
    """
    kinds = set()
    for p in paths:
        try:
            kinds.add(format_of(p, file_format).kind)
        except ValueError:
            if os.path.isdir(p) or not os.path.exists(p):
                kinds.add("parquet")
            else:
                raise
    if kinds - {"csv", "parquet"}:
        raise ValueError(f"the dask backend reads Parquet and CSV files, not {sorted(kinds)}")
    if len(kinds) != 1:
        raise ValueError(f"paths mix Parquet and CSV files: {paths}; count them separately")
    return kinds.pop()


class DaskBackend:
    """Counts cells on a Dask cluster: files, dask DataFrames or dask arrays.

    Parameters
    ----------
    scheduler : str, default=None
        Address of a running scheduler, e.g. ``"tcp://scheduler.example.org:8786"``. With
        neither ``scheduler`` nor ``client``, each :meth:`count` starts a
        ``LocalCluster`` and closes it afterwards; use the backend as a context
        manager to keep one cluster for several fits.
    columns : list of str, default=None
        Coordinate columns of files and dataframes. By default every column
        except one named ``"label"`` and unnamed index columns, in file
        order: for CSV every such column of the header, for Parquet and
        dataframes every such column whose declared type is numeric. Never
        decided by the values.
    client : distributed.Client, default=None
        An existing client to use (never closed by this backend).
    n_workers, threads_per_worker, processes : default 2, 1, False
        Shape of the ``LocalCluster`` started when no scheduler is given.
        Threads, not processes, by measurement (docs/dask.md): on one
        machine the work is numpy and pyarrow, which release the GIL, and a
        thread cluster starts in milliseconds instead of seconds.
    file_format : str, default=None
        Format of the files (``"parquet"``, ``"csv"``, ``"tsv"``, or with
        ``".gz"``); by default from their names, never their contents.
    split_every : int, default=8
        Fan-in of the tree that merges per-partition counts.
    blocksize : str or int, default="64MiB"
        Partition size for uncompressed CSV (compressed files: one per file).
    storage_options : dict, default=None
        Passed to fsspec (credentials and the like for ``s3://``, ``gs://``...).
    delimiter : str, default=None
        CSV delimiter; by default tab for ``.tsv`` files, else ``,``.
    header : bool, default=None
        Whether CSV files start with a header line. CSV input needs it (or
        column names in ``columns``, which imply a header): a file's own lines
        never decide how it is read (:mod:`dpdbscan.files.layout`).
    fields : int, default=None
        Fields on each line of CSV files without a header; by default the
        number of coordinates (``d``) when ``columns`` are not given.
    timeout : float, default=10
        Seconds to wait for the ``scheduler`` to answer before giving up with
        a ``ConnectionError`` (a stopped scheduler must not hang the fit).
    read : ReadOptions, default=None
        The reading options above as one record, as the command line's
        reader takes them (:class:`dpdbscan.files.layout.ReadOptions`; its
        ``unit`` is ignored: each count names its unit column). Not with
        ``columns``, ``header``, ``delimiter``, ``fields`` or ``file_format``.

    Attributes
    ----------
    read : ReadOptions
        How files are read (the reading parameters, checked).
    input_counts : BlockCounts or None
        After a count of files or dask collections: rows read, rows with a
        value that is not a number, malformed CSV lines and (person-level
        counts) rows whose unit is missing, all dropped by the per-record
        rule. Private: for the data owner's notes only.

    Notes
    -----
    ``count(grid, X)`` returns exactly
    ``NumpyBackend().count(grid, clean_points(grid, X_in_memory))``, and
    ``count_units`` (person-level releases, :meth:`count_units`) exactly
    ``bounding.count_units`` of the same rows, after a shuffle by unit. Input
    already in the driver's memory (numpy, pandas) is counted on the driver
    with the numpy backend: shipping it to workers costs more than counting it.
    """

    name = "dask"

    def __init__(
        self,
        scheduler: str | None = None,
        columns: Sequence[str] | str | None = None,
        client: Any = None,
        *,
        n_workers: int = 2,
        threads_per_worker: int = 1,
        processes: bool = False,
        file_format: str | None = None,
        split_every: int = 8,
        blocksize: str | int = "64MiB",
        storage_options: dict | None = None,
        delimiter: str | None = None,
        header: bool | None = None,
        fields: int | None = None,
        timeout: float = 10.0,
        read: ReadOptions | None = None,
    ) -> None:
        _require_dask()
        if scheduler is not None and client is not None:
            raise ValueError("pass either scheduler or client, not both")
        if not isinstance(split_every, int) or split_every < 2:
            raise ValueError(f"split_every must be an integer >= 2, got split_every={split_every!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got timeout={timeout!r}")
        if columns is not None and not isinstance(columns, (str, list, tuple)):
            raise ValueError(f"columns must be a name or a list of names, got columns={columns!r}")
        cols = None if columns is None else ((columns,) if isinstance(columns, str) else tuple(columns))
        # ReadOptions' field order; checked now, not at the first fit
        given = (cols, header, delimiter, fields, file_format)
        if read is not None and any(v is not None for v in given):
            raise ValueError(
                "pass read=ReadOptions(...) or columns, header, delimiter, fields and file_format, not both"
            )
        # the unit column is named per count
        self.read = dataclasses.replace(read, unit=None) if read is not None else ReadOptions(*given)
        self.scheduler = scheduler
        self.client = client
        self.n_workers = n_workers
        self.threads_per_worker = threads_per_worker
        self.processes = processes
        self.split_every = split_every
        self.blocksize = blocksize
        self.storage_options = storage_options
        self.timeout = timeout
        self.input_counts: BlockCounts | None = None
        # (time column, period_of): the rows read (windowed)
        self.window: tuple[str, Callable[[Any], np.ndarray]] | None = None
        self._session_client = None
        self._session_cluster = None

    # ----------------------------------------------------------- lifecycle
    def _connect(self):
        """A new (client, cluster-or-None); the caller closes both."""
        from distributed import Client, LocalCluster

        if self.scheduler is not None:
            try:
                return Client(self.scheduler, set_as_default=False, timeout=self.timeout), None
            except (OSError, TimeoutError) as exc:
                raise ConnectionError(
                    f"cannot reach the Dask scheduler at {self.scheduler} within "
                    f"{self.timeout:g} s ({type(exc).__name__}); is it running, and is the "
                    "address right? (DaskBackend(timeout=...) waits longer)"
                ) from None
        # The scheduler's HTTP server on a free port: 8787 may be taken by
        # another cluster on the machine, and the fallback warns.
        cluster = LocalCluster(
            n_workers=self.n_workers,
            threads_per_worker=self.threads_per_worker,
            processes=self.processes,
            dashboard_address=":0",
        )
        try:
            return Client(cluster, set_as_default=False), cluster
        except BaseException:
            cluster.close()
            raise

    def __enter__(self) -> Self:
        if self.client is None and self._session_client is None:
            self._session_client, self._session_cluster = self._connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client and cluster this backend started (if any)."""
        client, cluster = self._session_client, self._session_cluster
        self._session_client = self._session_cluster = None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    @contextlib.contextmanager
    def _client(self):
        if self.client is not None:
            yield self.client
        elif self._session_client is not None:
            yield self._session_client
        else:
            client, cluster = self._connect()
            try:
                yield client
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()

    # -------------------------------------------------------------- counting
    def count(self, grid: Grid, X: Any) -> CellCounts:
        """Exact counts of the occupied cells of ``X`` (keys sorted ascending)."""
        if self.window is not None:
            raise ValueError("a time window is read for person-level counts (with units) only")
        self.input_counts = None
        local = self._local_block(grid, X)
        if local is not None:
            return NumpyBackend().count(grid, local)
        tasks = self._partition_tasks(grid, X)
        if not tasks:
            self.input_counts = BlockCounts()
            return _no_cells(grid)
        with self._engine() as engine:
            keys, counts, tally = engine.reduce(engine.read(tasks), _merge_parts)
        check_tally(tally, len(tasks))
        self.input_counts = _input_counts(tally)
        return CellCounts(np.asarray(keys, dtype=grid.key_dtype), np.asarray(counts, dtype=np.int64))

    def count_units(self, grid: Grid, X: Any, units: Any, bound: UnitBound, key: BoundingKey) -> CellCounts:
        """Exact counts of the occupied cells after each privacy unit's
        contribution bound (:mod:`dpdbscan.release.bounding`), keys sorted.

        ``units`` is the name of the unit column of files and dataframes (a
        CSV file's declared header names it), or one id per row of an array
        (numpy or dask). The unit column's declared type says how its values
        are units (:func:`unit_kind`); a CSV unit is the field's text. A row
        whose unit is missing is dropped. The result equals
        :func:`dpdbscan.release.bounding.count_units` on the same rows with
        the same ``key``: each partition's (unit, cell) pairs are shuffled by
        unit, and each unit is bounded where all its pairs are.
        """
        return self._count_units(grid, X, units, key, bound=bound)

    def count_units_choosing(
        self, grid: Grid, X: Any, units: Any, choose: Callable[[np.ndarray], UnitBound], key: BoundingKey
    ) -> CellCounts:
        """:meth:`count_units` with the bound chosen from the cells per unit
        (``max_cells_per_unit="auto"``, the ``UnitChoiceBackend`` protocol).

        Two passes over the shuffled pairs, which stay on the workers in
        between: the number of distinct cells of every unit goes to the
        driver, where ``choose`` (the private choice of k) is called once;
        then each shuffled partition is bounded by the chosen bound. Equals
        :func:`dpdbscan.release.bounding.count_units_choosing` on the same
        rows with the same key, and ``choose`` sees the same numbers.
        """
        return self._count_units(grid, X, units, key, choose=choose)

    def _count_units(self, grid, X, units, key, *, bound=None, choose=None) -> CellCounts:
        """:meth:`count_units` (``bound``) or :meth:`count_units_choosing` (``choose``)."""
        self.input_counts = None
        local = self._local_units(grid, X, units)
        if local is not None:
            points, ids = local
            if choose is None:
                return NumpyBackend().count_units(grid, points, ids, bound, key)
            return NumpyBackend().count_units_choosing(grid, points, ids, choose, key)
        kind, tasks = self._pair_tasks(grid, X, units)
        if not tasks:
            if choose is not None:
                choose(np.zeros(0, dtype=np.int64))  # the choice is made once, even on no data
            self.input_counts = BlockCounts()
            return _no_cells(grid)
        with self._engine() as engine:
            summed = functools.partial(_summed_pairs, grid=grid, kind=kind, key=key)
            pairs = self._by_unit(engine, tasks, _pairs_meta(grid, kind), summed)
            keys, counts = bounding.bound_parts(engine, pairs, grid, key, bound=bound, choose=choose)
        return CellCounts(np.asarray(keys, dtype=grid.key_dtype), np.asarray(counts, dtype=np.int64))

    def _local_block(self, grid, X):
        """``X`` as a float array if it already sits in driver memory, else None."""
        local = self._local_units(grid, X, None)
        return None if local is None else local[0]

    def _local_units(self, grid, X, units):
        """``(points, units)`` if ``X`` already sits in driver memory, else
        None (``units`` None: a count without units)."""
        import pandas as pd

        if self.window is not None:
            if isinstance(X, (pd.DataFrame, np.ndarray)):
                raise ValueError(
                    "a time window is read by the workers: give files or a dask DataFrame "
                    "(points in memory take the numpy backend)"
                )
            return None

        if isinstance(X, pd.DataFrame):
            unit = units if isinstance(units, str) else None
            cols = coordinate_columns(X.columns, X.dtypes, self.read.columns, grid.d, unit)
            points, bad = frame_points(X, cols)
            dropped, clip = _rule_tally(_box(grid), points)
            self.input_counts = _input_counts(_tally(len(points), bad, dropped=dropped, clip=clip))
            return points, (read_units(X[unit]) if unit is not None else units)
        if isinstance(X, np.ndarray):
            if isinstance(units, str):
                raise ValueError(
                    f"units={units!r} names a column, but X is an array without column names: "
                    "pass one unit id per row"
                )
            return np.asarray(X, dtype=np.float64), units
        return None

    def _partition_tasks(self, grid, X) -> list:
        """One delayed ``(keys, counts, tally)`` per partition of ``X``."""
        import dask
        import dask.array as da
        import dask.dataframe as dd

        paths = _as_paths(X)
        if paths is not None:
            if file_format(paths, self.read.file_format) == "csv":
                layout, header, blocks, _ = self._csv_blocks(grid.d, paths)
                part = dask.delayed(_csv_part)
                return [part(grid, block, layout, header, first, where) for block, first, where in blocks]
            X = self._read_parquet(paths, grid.d)
        if isinstance(X, dd.DataFrame):
            check_frame_readers(X)
            cols = coordinate_columns(X.columns, X.dtypes, self.read.columns, grid.d)
            part = dask.delayed(_frame_part)
            return [part(grid, p, cols) for p in X[cols].to_delayed()]
        if isinstance(X, da.Array):
            check_frame_readers(X)
            blocks = _row_blocks(grid, X)
            return [dask.delayed(_array_part)(grid, b) for b in blocks.to_delayed().ravel().tolist()]
        raise _unsupported(X)

    def _pair_tasks(self, grid, X, units, table=None) -> tuple[str, list]:
        """The units' kind, and one delayed ``(pairs, tally)`` per partition
        of ``X`` (:func:`_pairs`; ``table``, ``(span_of, n_periods)``: the
        span x period table's pairs instead, :func:`_table_pairs`). With a
        time window (:meth:`windowed`) the rows whose time is in no period
        are dropped."""
        import dask
        import dask.array as da
        import dask.dataframe as dd

        window = self.window
        paths = _as_paths(X)
        if paths is not None:
            unit = _unit_name(units)
            if file_format(paths, self.read.file_format) == "csv":
                time = None if window is None else window[0]
                layout, header, blocks, field = self._csv_blocks(grid.d, paths, unit, time)
                w = None if window is None else (field, window[1])
                if table is None:
                    part = dask.delayed(_csv_pairs, nout=2)
                    return "text", [
                        part(grid, b, layout, header, first, where, w) for b, first, where in blocks
                    ]
                part = dask.delayed(_csv_table, nout=2)
                return "text", [
                    part(_box(grid), b, layout, header, first, where, w, *table) for b, first, where in blocks
                ]
            X = self._read_parquet(paths, grid.d, unit, None if window is None else window[0])
        if isinstance(X, dd.DataFrame):
            unit = _unit_name(units)
            cols = coordinate_columns(X.columns, X.dtypes, self.read.columns, grid.d, unit)
            check_frame_readers(X)
            check_frame_units(X, unit)
            kind = unit_kind(X.dtypes[unit], unit)
            wanted = [*cols, unit]
            if window is not None:
                _check_time_column(X.columns, cols, window[0])
                wanted.append(window[0])
            # files read each by its own schema may give an object column of
            # ids of several types (read id by id): dask before 2024.12 turned
            # it to text when planning the reads, so the integer 20 and the
            # text '20' were one unit; the backend's own frame keeps its objects
            own = paths is not None and X.dtypes[unit] == np.dtype(object)
            with dask.config.set({"dataframe.convert-string": False}) if own else contextlib.nullcontext():
                frames = X[wanted].to_delayed()
            if table is None:
                part = dask.delayed(_frame_pairs, nout=2)
                return kind, [part(grid, p, cols, unit, kind, window) for p in frames]
            part = dask.delayed(_frame_table, nout=2)
            return kind, [part(_box(grid), p, cols, unit, kind, window, *table) for p in frames]
        if isinstance(X, da.Array):
            if window is not None:
                raise ValueError(
                    "a time window reads each row's time from a column: give files or a dask "
                    "DataFrame, not a dask array"
                )
            if isinstance(units, str):
                raise ValueError(
                    f"units={units!r} names a column, but X is a dask array: pass one id per row"
                )
            check_frame_readers(X)
            if isinstance(units, da.Array):
                check_frame_readers(units)
            blocks = _row_blocks(grid, X)
            u = units if isinstance(units, da.Array) else da.from_array(np.asarray(units), chunks=-1)
            if u.ndim != 1 or u.shape[0] != X.shape[0]:
                raise ValueError(f"units must hold one id per row of X ({X.shape[0]}), got shape {u.shape}")
            kind = unit_kind(u.dtype)
            part = dask.delayed(_array_pairs, nout=2)
            return kind, [
                part(grid, b, ub, kind)
                for b, ub in zip(
                    blocks.to_delayed().ravel().tolist(), u.rechunk((blocks.chunks[0],)).to_delayed()
                )
            ]
        raise _unsupported(X)

    def period_table(
        self,
        grid: Grid,
        X: Any,
        units: str,
        span_of: Callable[[np.ndarray], np.ndarray],
        bound: periodtable.TableBound,
        key: BoundingKey,
    ) -> np.ndarray:
        """The exact span x period table of a series over time, bounded per
        unit (private), shape ``bound.shape``: the rows of :meth:`windowed`'s
        window (its period from its time), each in the released span
        ``span_of`` gives its point (-1: none; a public function of the
        released spans, shipped to the workers). Each partition's (unit,
        pair, count) rows are shuffled by unit; each shuffled partition,
        holding every pair of its units, is summed and bounded by the
        functions that do it in memory
        (:func:`dpdbscan.release.periodtable.bound_table_parts`), with the
        same key: the same pairs are kept, and the partitions' tables
        (disjoint units) add up to
        :func:`~dpdbscan.release.periodtable.bounded_table` of the same rows."""
        if self.window is None:
            raise ValueError(
                "the span x period table needs a time window: DaskBackend.windowed(time, period_of)"
            )
        self.input_counts = None
        kind, tasks = self._pair_tasks(grid, X, units, (span_of, bound.shape[1]))
        if not tasks:
            self.input_counts = BlockCounts()
            return np.zeros(bound.shape, dtype=np.int64)
        with self._engine() as engine:
            summed = functools.partial(_summed_table_pairs, kind=kind, key=key)
            pairs = self._by_unit(engine, tasks, _table_meta(kind), summed)
            return periodtable.bound_table_parts(engine, pairs, bound, key)

    def _by_unit(self, engine: DaskEngine, tasks: list, meta: Any, summed: Callable[[Any], Any]) -> list:
        """:func:`dpdbscan.release.engine.pairs_by_unit` of the planned reads
        ``tasks`` (``(pairs, tally)`` each, :meth:`_pair_tasks`), the reads'
        tally kept (:attr:`input_counts`)."""
        pairs, tally = pairs_by_unit(engine, tasks, meta, summed, _UNIT)
        self.input_counts = _input_counts(tally)
        return pairs

    @contextlib.contextmanager
    def _engine(self) -> Iterator[DaskEngine]:
        """The engine on this backend's cluster, its shuffles' notes quiet."""
        with self._client() as client, _quiet_shuffle_notes():
            yield DaskEngine(client, self.split_every)

    def windowed(self, time: str, period_of: Callable[[Any], np.ndarray]) -> DaskBackend:
        """This backend (same cluster and options) reading only the rows of a
        public time window: ``time`` names the time column (a Parquet or
        dataframe column, a declared CSV header's field), ``period_of`` maps
        a partition's time values (a pandas Series, or the CSV field's text
        as an Arrow array, as the in-memory reader gives it) to each row's
        period, -1 outside the horizon (such a row is dropped, as a missing
        unit is). For a series over time (:func:`dpdbscan.series.fit_series`)."""
        if not isinstance(time, str):
            raise TypeError(f"the time column is a column's name (a str), not {type(time).__name__}")
        other = copy.copy(self)
        other.window = (time, period_of)
        return other

    # ----------------------------------------------------------------- files
    def _read_parquet(self, paths, d, unit=None, time=None):
        """Lazy dask DataFrame of the coordinate columns of Parquet files
        (and of the unit column ``unit``, whose declared type must be one a
        unit can have, and of the time column ``time``). Where the files'
        schemas (public) differ, the columns are those any file declares,
        and a file is read alone where it lacks a read column, declares it
        ``null``, or the files declare it with different types
        (:meth:`_files_alone`), as the in-memory reader reads them."""
        import dask.dataframe as dd

        refuse_unnamed_columns(_names_a_dataset(paths), self.read.columns)  # public: the paths as given
        fs, files = self._parquet_files(paths)
        schemas = [s for _, s in files]
        merged = None if not schemas or all(s.equals(schemas[0]) for s in schemas) else merged_schema(schemas)
        schema = self._parquet_schema(paths) if merged is None else _empty_frame(merged)
        cols = coordinate_columns(
            schema.columns, schema.dtypes, self.read.columns, d, unit, file=str(paths[0])
        )
        if unit is not None:
            if merged is None:
                unit_kind(schema.dtypes[unit], unit)
            elif unit not in schema.columns or not declares(schemas, unit, UNIT):
                raise TypeError(
                    f"the unit column {unit!r} has type {merged.field(unit).type} in the files that "
                    "declare it; units must be numbers or text"
                )
            cols = [*cols, unit]
        if time is not None:
            _check_time_column(schema.columns, cols, time)
            cols = [*cols, time]
        roles = dict.fromkeys(cols, COORDINATE)
        if unit is not None:
            roles[unit] = UNIT
        if time is not None:
            roles[time] = ALSO
        if merged is None:
            return dd.read_parquet(
                paths,
                columns=cols,
                storage_options=self.storage_options,
                arrow_to_pandas={"types_mapper": exact_integers},
                dataset=_NO_PARTITIONS,
            )
        return self._files_alone(fs, files, roles)

    def _files_alone(self, fs: Any, files: list[tuple[str, Any]], roles: dict[str, str]) -> Any:
        """The files' read columns (``roles``: name to role), each file read
        alone by its own schema (:func:`dpdbscan.files.parquetfiles.file_columns`,
        the in-memory reader's rule): a column a file lacks, declares
        ``null`` or with a type not read as its role, missing in its rows;
        coordinates as float64; the units of every file by the library's id
        rule (:func:`~dpdbscan.files.parquetfiles.unit_target`: one type when
        the files' types allow it, else each id by its own value, an
        ``object`` column); a time column each file by its own type (one
        partition per file, read alone by the window's ``period_of``).
        Before, dask read the files together with the first one's columns
        and types: a file without the unit column failed ("not in index",
        round 16), one declaring it ``null`` or as floats was refused, and
        the first file's schema decided which columns existed: one unit's
        file decided whether anything was released (docs/privacy.md
        section 8)."""
        import dask
        import dask.dataframe as dd
        import pyarrow as pa

        unit = next((c for c, r in roles.items() if r == UNIT), None)
        target = None
        if unit is not None:
            target = unit_target(
                [t if readable(UNIT, t := declared(s, unit)) else pa.null() for _, s in files]
            )
        load = functools.partial(_parquet_file_frame, fs=fs, roles=roles, target=target)
        meta = _parquet_file_frame(None, fs=fs, roles=roles, target=target, schemas=[s for _, s in files])
        # an object column stays one: dask's string conversion would make
        # the ids 1 and '1' one unit, and each file's times text
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_map(load, list(files), meta=meta, enforce_metadata=False)

    def check_files(
        self, X: Any, d: int, unit: str | None = None, time: str | None = None
    ) -> list[str] | None:
        """Refuse, from their schemas alone (no record read), Parquet files
        that :meth:`count` or :meth:`unit_pairs` would refuse when reading:
        columns that no file declares, or a unit column no file declares
        with a type a unit can have (or ``null``);
        and CSV files whose plan the count would refuse (:meth:`_csv_blocks`:
        the options, the first file's declared header line, which a gzip
        file cut part-way may not hold whole). Called when the points are
        prepared, before a ledger charges the release
        (:func:`dpdbscan.prepare.prepare`). A dask array or Series (of
        points, or of units) made from a frame of dask's text or SQL readers
        is refused as that frame is (:func:`check_frame_readers`). Other
        inputs pass.

        Returns the coordinate columns the count will read, as the in-memory
        reader names them: by the declared header or the Parquet schema
        (public), or a header-less CSV file's 0-based field numbers; a dask
        DataFrame's by its columns; None for other inputs."""
        import dask.array as da
        import dask.dataframe as dd

        paths = _as_paths(X)
        if paths is None:
            if isinstance(X, (da.Array, dd.Series)):
                check_frame_readers(X)  # an array of points or a unit column: its readers
            if isinstance(X, dd.DataFrame):
                check_frame_readers(X)
                if unit is not None:
                    check_frame_units(X, unit)
                return [str(c) for c in coordinate_columns(X.columns, X.dtypes, self.read.columns, d, unit)]
            return None
        if file_format(paths, self.read.file_format) == "csv":
            layout, header, _, _ = self._csv_blocks(d, paths, unit, time)
            return [str(header[i]) if header else str(i) for i in layout.usecols]
        frame = self._read_parquet(paths, d, unit, time)
        return [str(c) for c in list(frame.columns)[:d]]  # the coordinates come first

    def _parquet_files(self, paths) -> tuple[Any, list[tuple[str, Any]]]:
        """The file system of ``paths`` and each Parquet file of them (when
        there are two or more) with its schema (public metadata), in the
        order dask reads them; none for one file."""
        import fsspec  # type: ignore[import-untyped]
        import pyarrow.parquet as pq

        fs, _, found = fsspec.core.get_fs_token_paths(list(paths), storage_options=self.storage_options)
        files = []
        for p in sorted(found):
            if fs.isdir(p):
                files += sorted(
                    f for f in fs.find(p) if not f.rsplit("/", 1)[-1].startswith(("_", ".")) and fs.isfile(f)
                )
            else:
                files.append(p)
        if len(files) < 2:
            return fs, []

        def schema_of(f):
            with fs.open(f, "rb") as handle:
                return pq.read_schema(handle)

        return fs, [(f, schema_of(f)) for f in files]

    def _parquet_schema(self, paths):
        import dask.dataframe as dd

        return dd.read_parquet(paths, storage_options=self.storage_options, dataset=_NO_PARTITIONS)

    def _csv_plan(self, paths, d, unit=None):
        """``(names, layout, declared header or None, files, blocks)`` of CSV
        files, by the in-memory reader's plan: the layout from the options
        and, when declared, the first file's header line
        (:func:`dpdbscan.files.layout.csv_layout`, which also places the
        privacy unit's field ``unit`` and refuses it as a coordinate), the
        header line found as that reader finds it
        (:func:`dpdbscan.files.records.split_head`); no record is read. Only
        the blocks are this backend's own: byte ranges of whole lines, read
        by the workers."""
        import dask
        import fsspec
        from dask.bytes import read_bytes

        options = dataclasses.replace(self.read, unit=unit)
        fmt = format_of(paths[0], self.read.file_format)
        declared = options.has_header
        if declared is None:
            csv_layout(fmt, options, None, d, where=str(paths[0]))  # refused: say which option
        try:
            sample, blocks, files = read_bytes(
                paths,
                delimiter=b"\n",
                blocksize=self._csv_blocksize(paths),
                sample=False,  # the header line: _csv_head
                compression=None if self.read.file_format else "infer",
                include_path=True,
                **(self.storage_options or {}),
            )
        except (OSError, ValueError) as exc:
            if isinstance(exc, FileNotFoundError) or "no files" in str(exc):
                raise FileNotFoundError(f"no CSV files found at {paths}") from None
            raise
        where = str(files[0]) if files else str(paths[0])
        fs, _, _ = fsspec.core.get_fs_token_paths(
            list(paths), mode="rb", storage_options=self.storage_options
        )
        # a gzip file's one block is inflated by _inflate on a worker (a file
        # cut part-way keeps its text before the cut, as in memory), in place
        # of fsspec's inflater, which fails on such a file
        inflate = dask.delayed(_inflate)
        blocks = [
            [inflate(fs, f, str(f))] if self._gzip(f) else file_blocks
            for f, file_blocks in zip(files, blocks)
        ]
        # the first line is read only when it is a declared header
        line = split_head(self._csv_head(fs, files[0]), True)[0] if declared and files else None
        names, layout = csv_layout(fmt, options, line, d, where=where)
        return names, layout, (names if declared else None), files, blocks

    def _gzip(self, path) -> bool:
        """Whether the CSV file ``path`` is gzip-compressed: by ``file_format``
        or its name (public)."""
        if self.read.file_format:
            return format_of(path, self.read.file_format).gzip
        return _inferred_compression(path) == "gzip"

    def _csv_head(self, fs: Any, path: str) -> bytes:
        """The text of the CSV file ``path`` up to its first non-empty line's
        end, read on the driver (a declared header is public); refused, as
        in memory, when the file is damaged or a gzip file ends (cut
        part-way) before that line is whole."""
        try:
            if self._gzip(path):
                text = GzipText(fs.open(path, "rb"))
            else:
                compression = None if self.read.file_format else _inferred_compression(path)
                text = fs.open(path, "rb", compression=compression)
            with contextlib.closing(text):
                head = b""
                while chunk := text.read(1 << 16):
                    head += chunk
                    if last_line_end(header_start(head)):
                        return head
                if not getattr(text, "cut", False):
                    return head
        except (OSError, EOFError):
            pass
        raise ValueError(f"{path}: cannot read as CSV (the file is damaged or not CSV)")

    def _csv_blocks(self, d, paths, unit=None, time=None):
        """``(layout, header, [(block, first block of its file, file), ...],
        time field)`` of CSV files (:meth:`_csv_plan`), with ``d``
        coordinates; the time field: the index of the field ``time`` names
        in the header (None without ``time``)."""
        names, layout, header, files, blocks = self._csv_plan(paths, d, unit)
        field = None
        if time is not None:
            _check_time_column(names, [names[i] for i in layout.usecols], time)
            field = names.index(time)
        _as_many_as_bounds([names[i] for i in layout.usecols], d, names)
        parts = [
            (block, i == 0, where)
            for where, file_blocks in zip(files, blocks)
            for i, block in enumerate(file_blocks)
        ]
        return layout, header, parts, field

    def _csv_blocksize(self, paths):
        # Compressed text cannot be split into byte ranges: one partition per file.
        compressed = any(format_of(p, self.read.file_format).gzip for p in paths)
        return None if compressed else self.blocksize

    def n_features(self, X: Any, unit: str | None = None) -> int | None:
        """Number of coordinates of ``X`` by the column rule (None if unknown);
        ``unit``: the name of the unit column, which is not a coordinate.

        For files this reads their schema (a CSV header line, Parquet
        footers), never their rows; the estimator can use it when ``bounds``
        are scalars.
        """
        import dask.dataframe as dd
        import pandas as pd

        paths = _as_paths(X)
        if paths is not None:
            if file_format(paths, self.read.file_format) == "csv":
                if self.read.header is False and self.read.fields is None and self.read.columns is None:
                    return None  # as many as the bounds say (d fields a line)
                return len(self._csv_plan(paths, None, unit)[1].usecols)
            refuse_unnamed_columns(_names_a_dataset(paths), self.read.columns)  # public: the paths
            schema = self._parquet_schema(paths)
            return len(
                coordinate_columns(
                    schema.columns, schema.dtypes, self.read.columns, None, unit, file=paths[0]
                )
            )
        if isinstance(X, (dd.DataFrame, pd.DataFrame)):
            return len(coordinate_columns(X.columns, X.dtypes, self.read.columns, None, unit))
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2:
            return int(shape[1])
        return None

    def __repr__(self) -> str:
        where = self.scheduler or ("client" if self.client is not None else "LocalCluster")
        return f"DaskBackend({where!r}, read={self.read!r})"


def _inferred_compression(path: str) -> str | None:
    """The compression fsspec infers from the name of ``path`` (None: none)."""
    from fsspec.utils import infer_compression  # type: ignore[import-untyped]

    return infer_compression(path)


def _check_time_column(names: Sequence, columns: Sequence, time: str) -> None:
    """The time column exists (public names: a header or a schema) and is
    not a coordinate."""
    if time not in list(names):
        raise ValueError(f"no time column {time!r}; the data has columns {list(names)}")
    if time in list(columns):
        raise ValueError(
            f"the time column {time!r} is also a coordinate column; name the coordinates in columns="
        )


def _unit_name(units: Any) -> str:
    if not isinstance(units, str):
        raise TypeError(
            "with files or dask dataframes, units must be the name of the unit column "
            f"(a str), not {type(units).__name__}"
        )
    return units


def _row_blocks(grid: Grid, X: Any) -> Any:
    """A dask array of points rechunked so that a block holds whole rows."""
    if X.ndim != 2 or X.shape[1] != grid.d:
        raise ValueError(f"X must have shape (n, {grid.d}), got a dask array of shape {X.shape}")
    return X.rechunk({1: -1})


def _unsupported(X: Any) -> TypeError:
    return TypeError(
        "the dask backend counts paths or globs of Parquet/CSV files (any fsspec URL), "
        f"dask DataFrames, dask arrays, numpy arrays or pandas DataFrames; got {type(X).__name__}"
    )


def _no_cells(grid: Grid) -> CellCounts:
    return CellCounts(np.empty(0, dtype=grid.key_dtype), np.zeros(0, dtype=np.int64))


def _input_counts(tally: np.ndarray) -> BlockCounts:
    """The rows' counts of a tally; a private note (:class:`PrivateNoteWarning`)
    when gzip files were cut part-way, in the in-memory reader's words
    (:func:`dpdbscan.files.reader.cut_note`): their rows before the cut are
    kept."""
    t = [int(v) for v in np.asarray(tally)]
    if t[5]:
        private_note(cut_note(t[6], t[5]), stacklevel=4)
    d = (len(t) - 12) // 2
    return BlockCounts(
        rows=t[1],
        unparseable=t[2],
        malformed=t[3],
        missing_unit=t[4],
        dropped=t[7],
        no_period=t[8],
        outside=t[9],
        fit_as_ranges=t[10],
        fit_swapped=t[11],
        below=tuple(t[12 : 12 + d]),
        above=tuple(t[12 + d :]),
    )


def check_tally(tally: np.ndarray, n_partitions: int) -> None:
    """Refuse a reduce that did not merge every partition exactly once: a
    partial count would be released as if it were the whole data."""
    merged_exactly_once(int(np.asarray(tally)[0]), n_partitions)
