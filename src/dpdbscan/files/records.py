"""CSV text to float columns, one record at a time.

The file reader (:mod:`dpdbscan.files.reader`) and the Dask backend both cut
CSV text into blocks of whole lines and hand each block to
:func:`parse_block`, with a :class:`CsvLayout` decided before any record is
read (:mod:`dpdbscan.files.layout`). The rules, which each apply to one
record alone:

* **A record is a line**, ended by ``\\n``, ``\\r\\n`` or ``\\r``; empty lines
  are no records. Quoted fields may hold the delimiter but not a line break
  (as with pyarrow's default ``newlines_in_values=False``).
* **A value is a number or missing.** Missing: an empty field or one of
  :data:`NULL_VALUES`. A number: what Arrow's float parser accepts after
  trimming spaces and tabs (:data:`NUMBER_PATTERN`; ``nan``, ``inf`` and
  ``infinity`` in any case count). Anything else is *unparseable* and reads
  as NaN, so the mechanism's per-record rule drops that row.
* **A malformed line** (a wrong number of fields) reads as a row of NaN in
  its place. A line whose quote does not close is read on its own, as if the
  quote closed where the line ends; it never swallows the lines after it.
  A line longer than :data:`MAX_LINE` (64 MiB) is malformed too, unread.
* **The privacy unit** (``CsvLayout.unit``, a person-level release's
  ``--unit`` column) is read as the field's bytes, exactly (quotes removed,
  nothing trimmed: ``"007"`` and ``"7"`` are two units), and never as a
  number. A missing one (an empty field or one of :data:`NULL_VALUES`, or a
  malformed line) makes the row's coordinates NaN, so that row is dropped
  like a row with a bad coordinate.

So the fate of a record never depends on another record, and a bad value
never stops the read. Only counts leave this module (:class:`BlockCounts`);
no message quotes a value.

Speed: a block whose selected columns all parse is read by one pyarrow call
with float64 columns. Only a block that fails is read again with its columns
as bytes, cast in runs of 16384 values; only a run that fails is converted
value by value (a regular expression mask, then a cast: vectorised Arrow
kernels). Only a block that contains a quote character is checked for quoted
fields running over a line end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

#: Field texts read as missing values (compared before any trimming).
NULL_VALUES = ["", "NA", "N/A", "NaN", "nan", "NULL", "null", "None"]

#: Exactly the texts Arrow's string-to-float64 parser accepts (fast_float's
#: grammar, checked against Arrow in tests/files/test_io.py), after trimming.
NUMBER_PATTERN = (
    r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?"
    r"|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?)$"
)
_NUMBER = re.compile(NUMBER_PATTERN)
# Arrow's CSV converter trims spaces and tabs around numbers, nothing else.
_TRIM = r"^[ \t]+|[ \t]+$"


@dataclass
class BlockCounts:
    """What happened to the records of some blocks (counts only: private).

    Attributes
    ----------
    rows : int
        Records read (non-empty lines), each one row of the result.
    unparseable : int
        Rows with at least one selected value that is neither a number nor
        missing; they read as NaN.
    malformed : int
        Lines with a wrong number of fields; they read as all NaN.
    missing_unit : int
        Rows, neither malformed nor unparseable, whose privacy unit is
        missing; they read as NaN.
    dropped : int
        Rows the per-record rule drops: a coordinate missing or not finite
        (the three above included), or no unit. Counted by the Dask
        backend's partitions (its ``input_counts``); the in-memory path
        counts them from the points it holds.
    no_period : int
        Rows of a time window (a series' read) whose time is missing, not a
        time, or outside the horizon: dropped from the series.
    outside, below, above : int, tuple of int
        Of the rows kept, those outside the public box (clipped onto it),
        and per column those below its lower and above its upper bound.
        Counted by the Dask backend's partitions, for the in-memory path's
        notes (:func:`dpdbscan.prepare.clipping.clipping_counts`); empty
        ``below`` and ``above``: not counted.
    fit_as_ranges, fit_swapped : int
        Of the rows kept (2-D only), those inside the box read as ``xmin
        xmax ymin ymax``, and those inside it with their two coordinates
        swapped: the in-memory hint's tests when most rows lie outside
        (:func:`dpdbscan.prepare.clipping.outside_hint`).
    """

    rows: int = 0
    unparseable: int = 0
    malformed: int = 0
    missing_unit: int = 0
    dropped: int = 0
    no_period: int = 0
    outside: int = 0
    below: tuple[int, ...] = ()
    above: tuple[int, ...] = ()
    fit_as_ranges: int = 0
    fit_swapped: int = 0

    def add(self, other: BlockCounts) -> BlockCounts:
        self.rows += other.rows
        self.unparseable += other.unparseable
        self.malformed += other.malformed
        self.missing_unit += other.missing_unit
        self.dropped += other.dropped
        self.no_period += other.no_period
        self.outside += other.outside
        self.below = _summed(self.below, other.below)
        self.above = _summed(self.above, other.above)
        self.fit_as_ranges += other.fit_as_ranges
        self.fit_swapped += other.fit_swapped
        return self


def _summed(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Per-column counts added (an empty tuple: none counted)."""
    if not a or not b:
        return a or b
    return tuple(x + y for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class CsvLayout:
    """The public shape of a CSV file: delimiter, field count, chosen fields
    (the coordinates), the field of the privacy unit (None: not read) and
    ``also``, fields read beside them as their bytes (a trace's time and
    status: null where missing and on a malformed line, exactly as the unit
    is read, but they change no row, no count and no coordinate). A field of
    ``also`` is never a coordinate (refused)."""

    delimiter: str
    n_fields: int
    usecols: tuple[int, ...]
    unit: int | None = None
    also: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if set(self.also) & set(self.usecols):
            raise ValueError("a field read beside the points (also) is not one of its coordinates")


# --------------------------------------------------------------- the header
def split_first_line(data: bytes) -> tuple[bytes, bytes]:
    """``(first line without its terminator, the rest)`` of ``data``."""
    cut = first_terminator(data)
    if cut < 0:
        return data, b""
    end = cut + 1
    if data[cut : cut + 2] == b"\r\n":
        end += 1
    return data[:cut], data[end:]


def first_terminator(data: bytes) -> int:
    """Index of the first line terminator of ``data`` (-1 if none)."""
    n, r = data.find(b"\n"), data.find(b"\r")
    return min(n, r) if n >= 0 and r >= 0 else max(n, r)


def last_line_end(data: bytes) -> int:
    """Index just past the last line terminator of ``data`` (0 if none).

    A ``\\r`` at the very end may be the first half of ``\\r\\n``; splitting
    there only leaves an empty line for the next block, and empty lines are
    not records.
    """
    return max(data.rfind(b"\n"), data.rfind(b"\r")) + 1


#: The longest line read as a record, in bytes without its line end (64
#: MiB, as for a GPX point): a longer line is malformed, a row of NaN
#: dropped and counted, and its bytes are never held whole nor handed to
#: pyarrow, whose CSV reader takes at most 2**31 - 1 bytes at once (one line
#: of 2 GiB failed the whole read: docs/privacy.md section 8, round 9).
MAX_LINE = 1 << 26

#: A UTF-8 byte order mark: an encoding mark of the file, not part of its first record.
BOM = b"\xef\xbb\xbf"


_TEXT = re.compile(rb"[^\r\n]")


def has_text(data: bytes) -> bool:
    """Whether ``data`` holds a byte other than line terminators: what
    ``data.strip(b"\r\n")`` being non-empty says, without its copy of the
    block (a 4 MB copy for every block of a file, made while the parsing
    thread holds the GIL: 0.02-0.05 s on the Cabs file)."""
    return _TEXT.search(data) is not None


def drop_bom(data: bytes) -> bytes:
    """``data`` without a leading byte order mark (:data:`BOM`)."""
    return data[3:] if data.startswith(BOM) else data


def header_start(data: bytes) -> bytes:
    """A file's first bytes from its first non-empty line on, a byte order
    mark dropped: where a declared header begins."""
    return drop_bom(data.lstrip(b"\r\n")).lstrip(b"\r\n")


def split_head(data: bytes, header: bool) -> tuple[bytes | None, bytes]:
    """``(header line or None, the records after it)`` of a CSV file's first
    bytes, by the one rule every reader of a file's start follows (a file
    read whole, or the first block of a file read in blocks): a byte order
    mark is dropped and, when the options *declare* a header (``header``),
    the first non-empty line is it (None for a file with no line). Without a
    declared header the first line is a record like any other."""
    if not header:
        return None, drop_bom(data)
    data = header_start(data)
    if not data:
        return None, b""
    return split_first_line(data)


def header_fields(line: bytes, delimiter: str) -> list[str]:
    """The fields of one line, as pyarrow tokenises them (quotes removed),
    stripped of surrounding whitespace."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    line = drop_bom(line)
    if not line.strip():
        return []
    # Names are the public schema; bytes that are not UTF-8 become U+FFFD.
    text = line.decode("utf-8", errors="replace").encode("utf-8")
    table = pacsv.read_csv(
        pa.py_buffer(text + b"\n"),
        read_options=pacsv.ReadOptions(use_threads=False, block_size=len(text) + 2),
        parse_options=pacsv.ParseOptions(delimiter=delimiter),
    )
    return [name.strip() for name in table.schema.names]


def is_number(text: str) -> bool:
    """True if ``text`` reads as a number under the rules above."""
    # fullmatch: Python's "$" would also match before a final newline
    return _NUMBER.fullmatch(text.strip(" \t")) is not None


# ---------------------------------------------------------------- the blocks
def parse_block(data: bytes, layout: CsvLayout) -> tuple[np.ndarray, BlockCounts]:
    """The selected columns of a block of whole lines as an (n, d) float array.

    One row per non-empty line, in order; missing and unparseable values and
    malformed lines are NaN, and so are rows whose unit is missing when the
    layout reads one. See the module docstring for the rules.
    """
    X, _, counts = parse_records(data, layout)
    return X, counts


def parse_records(
    data: bytes, layout: CsvLayout, out: np.ndarray | None = None
) -> tuple[np.ndarray, pa.Array | None, BlockCounts]:
    """:func:`parse_block`, and the privacy unit of every row: a binary Arrow
    array (null where missing), or None when the layout reads no unit.

    ``out``: an (n, d) float array to hold the rows when the block has
    exactly n records (the file reader's place for them in its result,
    which saves copying every block once more); the array returned is then
    ``out`` itself, else a new one."""
    X, units, counts, _ = parse_rows(data, layout, out)
    return X, units, counts


def parse_rows(
    data: bytes, layout: CsvLayout, out: np.ndarray | None = None
) -> tuple[np.ndarray, pa.Array | None, BlockCounts, tuple[pa.Array, ...]]:
    """:func:`parse_records`, and the fields of ``layout.also`` of every row,
    one binary Arrow array each (null where missing and on a malformed line):
    what :func:`parse_records` returns as the unit of a layout whose unit is
    that field, parsed in the same pass as the points."""
    import pyarrow as pa

    d = len(layout.usecols)
    if not has_text(data):
        return np.empty((0, d)), _no_units(layout, 0), BlockCounts(), _no_also(layout, 0)
    if len(data) > MAX_LINE:
        # pyarrow parses at most 2**31 - 1 bytes at once: a longer block (a
        # Dask backend's whole gzip file, or one line that long) failed the
        # whole read. Cut at line ends instead, each part parsed alone as any
        # block is; a single line longer than MAX_LINE is malformed.
        return _halves(data, layout, long=True)
    # pyarrow drops a byte order mark at the start of what it is given, and a
    # block (or a half of one) may start on a line that begins with one. The
    # file's own mark is gone before the first block; here it is a line's
    # bytes, read as anywhere else in the file. An empty line in front keeps
    # pyarrow from seeing it first and is itself skipped.
    given = b"\n" + data if data.startswith(BOM) else data
    try:
        X, units, counts, also = _parse(given, layout, out)
        # Only a quote can join lines; a block without one needs no check.
        joined = b'"' in data and counts.rows != count_lines(data)
    except pa.ArrowInvalid:
        # A line pyarrow cannot parse at all (a malformed line that is not
        # UTF-8 never reaches the row handler): find it by halving.
        joined = True
    if not joined:
        return X, units, counts, also
    return _halves(data, layout, long=False)


def _halves(
    data: bytes, layout: CsvLayout, long: bool
) -> tuple[np.ndarray, pa.Array | None, BlockCounts, tuple[pa.Array, ...]]:
    """:func:`parse_rows` of ``data`` cut in two at a line end near its
    middle, each part parsed alone. A single line (no line end to cut at)
    is malformed: one that does not parse (``long`` False), or one longer
    than :data:`MAX_LINE` (``long``; a shorter one, with more than
    ``MAX_LINE`` bytes of line ends after it, is parsed without them)."""
    import pyarrow as pa

    cut = _middle_line_end(data)
    if cut == 0:
        line = data.rstrip(b"\r\n") if long else data
        if long and len(line) <= MAX_LINE:
            return parse_rows(line, layout)
        # one line, which does not parse or is too long to be parsed
        return (
            np.full((1, len(layout.usecols)), np.nan),
            _no_units(layout, 1),
            BlockCounts(rows=1, malformed=1),
            _no_also(layout, 1),
        )
    X1, u1, c1, a1 = parse_rows(data[:cut], layout)
    X2, u2, c2, a2 = parse_rows(data[cut:], layout)
    units = None if u1 is None or u2 is None else pa.concat_arrays([u1, u2])
    also = tuple(pa.concat_arrays([f1, f2]) for f1, f2 in zip(a1, a2))
    return np.concatenate([X1, X2]), units, c1.add(c2), also


def _no_units(layout: CsvLayout, n: int) -> pa.Array | None:
    """``n`` missing units (None when the layout reads none)."""
    import pyarrow as pa

    return None if layout.unit is None else pa.nulls(n, pa.binary())


def _no_also(layout: CsvLayout, n: int) -> tuple[pa.Array, ...]:
    """``n`` missing values of each field of ``layout.also``."""
    import pyarrow as pa

    return tuple(pa.nulls(n, pa.binary()) for _ in layout.also)


def _parse(
    data: bytes, layout: CsvLayout, out: np.ndarray | None = None
) -> tuple[np.ndarray, pa.Array | None, BlockCounts, tuple[pa.Array, ...]]:
    import pyarrow as pa

    try:
        table, invalid = _arrow_read(data, layout, pa.float64())
        bad = None
    except pa.ArrowInvalid:
        # A selected value is not a number: read the block's selected columns
        # as bytes (which cannot fail) and convert value by value.
        table, invalid = _arrow_read(data, layout, pa.binary())
        bad = np.zeros(table.num_rows, dtype=bool)
    n = table.num_rows + len(invalid)
    d = len(layout.usecols)
    X = out if out is not None and out.shape == (n, d) and out.dtype == np.float64 else np.empty((n, d))
    rows: slice | np.ndarray = slice(None)
    valid = None
    if invalid:
        valid = np.ones(n, dtype=bool)
        valid[np.asarray(invalid, dtype=np.int64) - 1] = False  # row numbers are 1-based
        X[~valid] = np.nan
        rows = valid
    for j in range(len(layout.usecols)):
        col = table.column(j)
        if bad is None:
            X[rows, j] = float_values(col)
        else:
            values, unparseable = coerce_binary(col)
            X[rows, j] = values
            bad |= unparseable
    counts = BlockCounts(rows=n, unparseable=0 if bad is None else int(bad.sum()), malformed=len(invalid))
    units = None
    if layout.unit is not None:
        units = _field(table, layout.unit, valid)
        missing = unit_missing(units)
        if missing.any():
            X[missing] = np.nan
            fine = missing if valid is None else missing & valid
            if bad is not None:
                fine[rows] &= ~bad
            counts.missing_unit = int(np.count_nonzero(fine))
    return X, units, counts, tuple(_field(table, j, valid) for j in layout.also)


def _field(table: Any, j: int, valid: np.ndarray | None) -> pa.Array:
    """Field ``j``'s bytes of every record of ``table`` (read as binary by
    :func:`_arrow_read`), a null in the place of a malformed line (``valid``
    False; None: none)."""
    import pyarrow as pa

    values = table.column(f"f{j}").combine_chunks()
    if valid is None:
        return values
    return values.take(pa.array(np.cumsum(valid) - 1, mask=~valid))


def unit_missing(units: pa.Array) -> np.ndarray:
    """Which units of an Arrow array are missing (a boolean mask): nulls,
    NaN, and dictionary entries that are null or NaN."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(units.type):
        gone = unit_missing(units.dictionary)
        idx = pc.fill_null(units.indices, -1).to_numpy(zero_copy_only=False)
        return (idx < 0) | (gone[np.maximum(idx, 0)] if gone.size else True)
    missing = units.is_null()
    if pa.types.is_floating(units.type):
        missing = pc.or_(missing, pc.fill_null(pc.is_nan(units), False))
    return missing.to_numpy(zero_copy_only=False).astype(bool, copy=False)


def float_values(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of an Arrow float64 array or chunked array, NaN where null.

    Read straight from the Arrow buffers: pyarrow's own ``to_numpy`` imports
    pandas, which costs a cold start of the command line about 0.2 s.
    """
    chunks = col.chunks if hasattr(col, "chunks") else [col]
    parts = []
    for arr in chunks:
        n, off = len(arr), arr.offset
        validity, data = arr.buffers()[:2]
        values = np.frombuffer(data, dtype=np.float64, count=n, offset=off * 8) if n else np.empty(0)
        if arr.null_count:
            bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
            values = np.where(bits[off : off + n].view(bool), values, np.nan)
        parts.append(values)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0)


def _arrow_read(data: bytes, layout: CsvLayout, dtype):
    """Parse ``data`` with pyarrow: ``(table of the selected columns, the
    1-based numbers of the malformed lines among the non-empty ones)``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    invalid: list[int] = []

    def skip(row):  # called for a line with a wrong number of fields
        invalid.append(row.number)
        return "skip"

    names = [f"f{i}" for i in range(layout.n_fields)]
    chosen = [names[i] for i in layout.usecols]
    types = {c: dtype for c in chosen}
    for j in (layout.unit, *layout.also):
        if j is not None:
            # the unit (and a time or status) is text, whatever it looks like:
            # its bytes, never a number
            types[names[j]] = pa.binary()
    # pyarrow decodes a malformed line to text for the handler; one that is
    # not UTF-8 would fail there and be printed as an "ignored" exception.
    handler = skip if data.isascii() or _is_utf8(data) else None
    table = pacsv.read_csv(
        pa.py_buffer(data),
        # Serial, and one pyarrow block for the whole buffer: row numbers are
        # then known and a very long line never straddles two blocks. Callers
        # parallelise over blocks instead.
        read_options=pacsv.ReadOptions(column_names=names, use_threads=False, block_size=len(data) + 1),
        parse_options=pacsv.ParseOptions(delimiter=layout.delimiter, invalid_row_handler=handler),
        convert_options=pacsv.ConvertOptions(
            include_columns=list(types),
            column_types=types,
            null_values=NULL_VALUES,
            strings_can_be_null=True,
        ),
    )
    if None in invalid:  # pragma: no cover - pyarrow numbers rows when serial
        raise RuntimeError("pyarrow did not number a malformed CSV line")
    return table, invalid


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def coerce_binary(col: Any) -> tuple[np.ndarray, np.ndarray]:
    """Float64 values of a binary/string Arrow column, and a mask of the
    values that are present but not numbers (those become NaN).

    Null entries stay missing (NaN, not counted). Runs of values are cast in
    one go; only a run that holds a value the cast refuses is checked value
    by value, with a pattern that accepts exactly what the cast accepts after
    trimming, so a value reads the same here as in a block that parsed in one
    go.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.binary())
    values = np.empty(len(arr))
    unparseable = np.zeros(len(arr), dtype=bool)
    for start in range(0, len(arr), _RUN):
        run = arr.slice(start, _RUN)
        stop = start + len(run)
        try:
            values[start:stop] = float_values(pc.cast(run, pa.float64()))
        except pa.ArrowInvalid:
            values[start:stop], unparseable[start:stop] = _coerce_run(run)
    return values, unparseable


_RUN = 1 << 14  # values cast at once; a failing run is checked value by value


def _coerce_run(arr) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc

    trimmed = pc.replace_substring_regex(arr, _TRIM, b"")
    ok = pc.fill_null(pc.match_substring_regex(trimmed, NUMBER_PATTERN), False)
    candidates = pc.if_else(ok, trimmed, pa.scalar(None, type=arr.type))
    try:
        values = pc.cast(candidates, pa.float64())
    except pa.ArrowInvalid:  # pragma: no cover - the pattern and the cast disagree
        values = _cast_one_by_one(candidates)
    present = pc.fill_null(pc.is_valid(arr), False)
    unparseable = pc.and_(present, pc.invert(ok))
    return (
        values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False),
        unparseable.to_numpy(zero_copy_only=False).astype(bool, copy=False),
    )


def _cast_one_by_one(arr):  # pragma: no cover - see coerce_binary
    import pyarrow as pa

    out = []
    for v in arr:
        try:
            out.append(pa.array([v.as_py()], arr.type).cast(pa.float64())[0].as_py())
        except pa.ArrowInvalid:
            out.append(None)
    return pa.array(out, pa.float64())


def count_lines(data: bytes) -> int:
    """Non-empty lines of ``data`` (terminators ``\\n``, ``\\r\\n``, ``\\r``)."""
    b = np.frombuffer(data, dtype=np.uint8)
    nl, cr = b == 10, b == 13
    term = nl.copy()
    term[:-1] |= cr[:-1] & ~nl[1:]
    term[-1] |= cr[-1]
    ends = np.flatnonzero(term)
    # Where each line's content ends: before its terminator, and before the
    # \r of a \r\n pair.
    stop = ends - (nl[ends] & np.concatenate(([False], cr[:-1]))[ends])
    starts = np.concatenate(([0], ends[:-1] + 1))
    n = int(np.count_nonzero(stop > starts))
    tail = ends[-1] + 1 if ends.size else 0
    return n + (1 if tail < b.size else 0)


def _middle_line_end(data: bytes) -> int:
    """A line end near the middle of ``data`` that splits it in two
    non-empty parts, or 0 if it is a single line."""
    body = data.rstrip(b"\r\n")
    mid = len(body) // 2
    cut = max(body.rfind(b"\n", 0, mid), body.rfind(b"\r", 0, mid)) + 1
    if cut <= 0:
        n, r = body.find(b"\n", mid), body.find(b"\r", mid)
        found = [i for i in (n, r) if i >= 0]
        cut = min(found) + 1 if found else 0
    return cut


__all__ = [
    "BOM",
    "MAX_LINE",
    "drop_bom",
    "has_text",
    "header_start",
    "split_head",
    "NULL_VALUES",
    "NUMBER_PATTERN",
    "BlockCounts",
    "CsvLayout",
    "parse_block",
    "parse_records",
    "parse_rows",
    "unit_missing",
    "coerce_binary",
    "float_values",
    "header_fields",
    "is_number",
    "split_first_line",
    "first_terminator",
    "last_line_end",
]
