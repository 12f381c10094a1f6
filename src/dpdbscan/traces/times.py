"""Times of trace points to seconds, one value at a time.

A trace's time column may hold unix seconds (numbers), ISO 8601 text or a
typed timestamp (a Parquet ``timestamp``, a numpy ``datetime64``). Every
value becomes float seconds since 1970-01-01 UTC, or NaN when it is missing
or not a time; a NaN time drops its row by the per-record rule, exactly as a
bad coordinate does. The rules are fixed in advance and apply to each value
alone: no value decides how another is read (docs/privacy.md, "how a file is
read"), and no message quotes one.

The text rule, after trimming spaces and tabs:

* a number (the CSV reader's grammar, :data:`NUMBER_PATTERN`) is unix
  seconds; ``nan`` and ``inf`` are no time;
* ``YYYY-MM-DD``, optionally followed by ``T`` or a space and ``hh:mm``,
  ``hh:mm:ss`` or ``hh:mm:ss.fff...``, optionally followed by ``Z`` or an
  offset ``+hh:mm`` / ``-hhmm`` / ``+hh`` (as PostgreSQL writes a
  ``timestamptz``): ISO 8601. Without an offset the time is
  read as UTC, or as the local clock of the zone given (``tz``, below);
* anything else, and an impossible date such as ``2008-02-30``, is no time.

A timestamp with a time zone is converted to UTC; one without is read as
UTC. Dates (Arrow ``date32``/``date64``) are midnight UTC.

Times without an offset and a zone (naive ISO text, a ``--time-format``
without ``%z``, a naive timestamp, a date) say a wall clock, not an instant.
Given a zone (``tz``: ``--tz`` of ``fit --per``, the zone of a series'
periods), they are read as that zone's local clock
(:mod:`dpdbscan.traces.localclock`: a time in a fall-back fold is its first
occurrence, one in a spring-forward gap is moved forward by the gap);
without one, as UTC, as always. Unix seconds and times with an offset or a
zone are instants, read alike with or without a zone. Only the option and
the value's own type or text decide which a value is.

Python objects (a list, a tuple, an object array or Series) are read one
value at a time by each value's own type (:func:`read_objects`), never by a
type inferred for the whole column: a number is unix seconds, a ``datetime``
(a pandas ``Timestamp``), ``date`` or ``numpy.datetime64`` the instant it
names, text and UTF-8 bytes by the text rule, anything else (a ``timedelta``,
a ``time``, a complex number, a boolean) no time.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import re
from typing import Any

import numpy as np

from .localclock import to_utc
from .periods import zone

#: Unix seconds written as text: the CSV reader's number grammar
#: (``dpdbscan.files.records.NUMBER_PATTERN``, repeated here so that this
#: module imports nothing of the package outside :mod:`dpdbscan.traces`).
NUMBER_PATTERN = (
    r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?"
    r"|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?)$"
)
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_HMS = r"[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?"
_ZONE = r"(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?)"
#: ISO 8601 text without an offset (read as UTC) and with one.
ISO_LOCAL = rf"^{_DATE}(?:{_HMS})?$"
ISO_ZONED = rf"^{_DATE}{_HMS}{_ZONE}$"
_TRIM = r"^[ \t]+|[ \t]+$"


#: The dtype of time-zone-aware pandas times (``DatetimeTZDtype``), in any unit.
_ZONED_PANDAS = re.compile(r"^datetime64\[(s|ms|us|ns), .+\]$")

#: The units a number of a time column may count since 1970-01-01 UTC
#: (``--time-unit``), in parts of a second.
TIME_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}


#: The most bytes of a pyarrow ChunkedArray read as one array at a time
#: (:func:`in_parts`): an Arrow text array holds at most 2 GiB, and combining
#: more failed the read of the whole column (ArrowInvalid "offset overflow"),
#: so that one record more (up to 64 MiB of text) could decide whether a
#: long file's times or status were read (docs/privacy.md section 8, round 10).
COMBINE_BYTES = 1 << 30


def in_parts(values: Any) -> list[Any] | None:
    """A pyarrow ChunkedArray of more than :data:`COMBINE_BYTES` as
    consecutive ChunkedArrays of its chunks, each of at most that many bytes
    (a chunk larger alone), and a Parquet dataset's column of files of
    different types as its files' parts; None for any other input (read whole). The
    readers' chunks are blocks of a file, so a part is never more than a
    block over the bound."""
    import pyarrow as pa

    files = getattr(values, "file_parts", None)
    if files is not None:
        # a Parquet dataset's column whose files declare it with different
        # types (:class:`dpdbscan.files.parquetfiles.MixedColumn`): each
        # file's part by its own type
        return [q for part in files for q in (in_parts(part) or [part])]
    if not isinstance(values, pa.ChunkedArray) or values.num_chunks < 2 or values.nbytes <= COMBINE_BYTES:
        return None
    parts: list[Any] = []
    held: list[Any] = []
    size = 0
    for chunk in values.chunks:
        if held and size + chunk.nbytes > COMBINE_BYTES:
            parts.append(pa.chunked_array(held, type=values.type))
            held, size = [], 0
        held.append(chunk)
        size += chunk.nbytes
    if held:
        parts.append(pa.chunked_array(held, type=values.type))
    return parts if len(parts) > 1 else None


def parse_times(
    values: Any, unit: str = "s", time_format: str | None = None, tz: str | None = None
) -> np.ndarray:
    """Float seconds since 1970-01-01 UTC for each value, NaN where the value
    is missing or not a time (the module docstring's rules).

    ``values``: a numpy array (numbers, ``datetime64``, text or objects), a
    pyarrow Array or ChunkedArray (numbers, timestamps, dates, text, bytes,
    or a dictionary of them), a pandas Series or a list. ``unit``: what a
    number counts (:data:`TIME_UNITS`: unix seconds by default, ``"ms"`` for
    milliseconds, ...); typed timestamps and ISO text say their own.
    ``time_format`` (``--time-format``): the text's layout instead, in the
    codes of Python's ``datetime.strptime`` (:func:`parse_formatted`); it
    goes with the unit ``"s"`` only. ``tz`` (``--tz``, an IANA name): a
    time without an offset (ISO text without one, a format without ``%z``,
    a naive timestamp, a date) is that zone's local clock
    (:func:`dpdbscan.traces.localclock.to_utc`), not UTC; unix seconds and
    times with an offset or a zone are instants, read alike either way.
    """
    if unit not in TIME_UNITS:
        raise ValueError(f"a time unit is one of {', '.join(TIME_UNITS)}, got {unit!r}")
    tz = local_zone(tz)
    parts = in_parts(values)
    if parts is not None:  # each value is read alone: part by part, the same values
        return np.concatenate([parse_times(part, unit, time_format, tz) for part in parts])
    if time_format is not None:
        if unit != "s":
            raise ValueError("a time format reads text, and a time unit numbers: give one of them")
        return parse_formatted(values, time_format, tz)
    per = TIME_UNITS[unit]
    if per != 1.0:
        return parse_times(values, tz=tz) if _typed_times(values) else _scaled(values, per, tz)
    if type(values).__module__.split(".")[0] == "pyarrow":
        return _parse_arrow(values, tz)
    typed = arrow_typed(values)
    if typed is not None:
        return _parse_arrow(typed, tz)
    masked = _masked_numbers(values)
    if masked is not None:
        return masked
    if _ZONED_PANDAS.match(str(getattr(values, "dtype", ""))):
        # time-zone-aware pandas times, in any unit (pandas 2 reads a Parquet timestamp[ms, tz]
        # as datetime64[ms, tz]): their UTC instants, as one datetime64 column
        if hasattr(values, "dt"):  # a Series
            values = values.dt.tz_convert("UTC").dt.tz_localize(None)
        else:  # a DatetimeIndex or DatetimeArray
            values = values.tz_convert("UTC").tz_localize(None)
        tz = None  # instants: no local clock
    arr = as_column(values)
    if arr.ndim != 1:
        raise ValueError(f"times must be one-dimensional, one time per row; got shape {arr.shape}")
    if arr.dtype.kind == "M":
        return _local(_datetime64_seconds(arr), tz)
    if arr.dtype.kind in "iub":
        return arr.astype(np.float64)
    if arr.dtype.kind == "f":
        out = arr.astype(np.float64)
        out[~np.isfinite(out)] = np.nan
        return out
    if arr.dtype.kind == "O":
        numbers, texts = read_objects(arr)
        text = np.array([t is not None for t in texts], dtype=bool)
        if text.any():
            import pyarrow as pa

            numbers[text] = _parse_arrow(pa.array([t for t in texts if t is not None], type=pa.string()), tz)
        return numbers
    if arr.dtype.kind in "US":
        import pyarrow as pa

        try:
            return _parse_arrow(pa.array(arr.astype(str) if arr.dtype.kind == "S" else arr), tz)
        except (UnicodeError, pa.ArrowInvalid):
            # a value that is no UTF-8 (bytes, a lone surrogate): each alone
            return parse_times(arr.astype(object), tz=tz)
    raise TypeError(f"times must be numbers, timestamps or text (one per row), got dtype {arr.dtype}")


def local_zone(tz: str | None) -> str | None:
    """``tz`` as :func:`parse_times` uses it: None for no zone or UTC (a time
    without an offset is then read as UTC, as it always was), else the
    zone's name, checked (ValueError naming ``--tz`` for an unknown one)."""
    if tz is None or str(tz).upper() == "UTC":
        return None
    zone(tz)
    return str(tz)


def _local(seconds: np.ndarray, tz: str | None) -> np.ndarray:
    """Seconds of times without an offset, read as if UTC: as zone ``tz``'s
    local clock (None: as they are)."""
    if tz is None:
        return seconds
    return to_utc(seconds, tz)


def chunks_of(values: Any) -> list[Any]:
    """A pyarrow ChunkedArray of at least one chunk as the list of its
    chunks, for :func:`seconds_of_parts` (a Parquet dataset's column of
    files of different types, each file's chunks); any other input as a
    list of itself."""
    import pyarrow as pa

    files = getattr(values, "file_parts", None)
    if files is not None:  # each file's chunks by its own type (a MixedColumn)
        return [chunk for part in files for chunk in chunks_of(part)]
    if isinstance(values, pa.ChunkedArray) and values.num_chunks:
        return list(values.chunks)
    return [values]


def seconds_of_parts(
    parts: list[Any], unit: str = "s", time_format: str | None = None, tz: str | None = None
) -> np.ndarray:
    """:func:`parse_times` of consecutive ``parts`` of a column (:func:`chunks_of`),
    in one array: each value is read alone, so part by part gives the same
    values. Each part is let go (its place in ``parts`` set to None) once
    read, so that a caller holding the column only through ``parts`` never
    holds it whole beside its seconds (full Cabs: 88 MB)."""
    if len(parts) == 1:
        return parse_times(parts.pop(), unit, time_format=time_format, tz=tz)
    out = np.empty(sum(len(p) for p in parts))
    at = 0
    for i in range(len(parts)):
        part, parts[i] = parts[i], None
        out[at : at + len(part)] = parse_times(part, unit, time_format=time_format, tz=tz)
        at += len(part)
        del part
    return out


#: Values per block of :func:`read_as_they_are`'s check (no full-length temporary).
_CHECK_BLOCK = 1 << 18


def read_as_they_are(values: Any) -> bool:
    """Whether :func:`parse_times` reads ``values`` as they are: a plain
    one-dimensional float64 numpy array without an infinity (float seconds,
    as the readers leave a time column, :func:`dpdbscan.prepare.door.read_file`),
    of which it would return a copy of the same values (NaN where NaN). A
    caller that only reads the times may use them without that copy (88 MB
    for full Cabs)."""
    if type(values) is not np.ndarray or values.dtype != np.float64 or values.ndim != 1:
        return False
    for lo in range(0, values.shape[0], _CHECK_BLOCK):
        if np.isinf(values[lo : lo + _CHECK_BLOCK]).any():
            return False
    return True


#: Seconds in one step of each linear numpy datetime64 unit of a second or
#: more, and steps in a second of the finer ones (divided by, as the
#: typed Arrow timestamps are: the same floats).
_DATETIME64_SECONDS = {"W": 604800.0, "D": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_DATETIME64_PER_SECOND = {"ms": 1e3, "us": 1e6, "ns": 1e9, "ps": 1e12, "fs": 1e15, "as": 1e18}


def _datetime64_seconds(arr: np.ndarray) -> np.ndarray:
    """A numpy datetime64 array as float seconds, NaN where NaT, each value
    by its own unit's step: a cast to nanoseconds wrapped values beyond
    the years 1678-2261 round to other times, silently. Years and months
    (not a fixed number of seconds) go through days first."""
    unit, count = np.datetime_data(arr.dtype)
    if unit not in _DATETIME64_SECONDS and unit not in _DATETIME64_PER_SECOND:  # "Y", "M", generic
        arr = arr.astype("datetime64[D]")
        unit, count = "D", 1
    steps = arr.view(np.int64).astype(np.float64)
    if unit in _DATETIME64_SECONDS:
        out = steps * (_DATETIME64_SECONDS[unit] * count)
    else:
        out = (steps * count if count != 1 else steps) / _DATETIME64_PER_SECOND[unit]
    out[np.isnat(arr)] = np.nan
    return out


def arrow_typed(values: Any) -> Any:
    """A pandas Series, Index or array of Arrow dates or zoned timestamps
    (``date32[day][pyarrow]``, ``timestamp[s, tz=...][pyarrow]``, or a
    dictionary of them: ``pd.read_parquet(..., dtype_backend="pyarrow")``,
    a Dask worker's Parquet date column) as its Arrow array, for
    :func:`_parse_arrow` to read each value's own integer; None for any
    other input. numpy made each value a Python ``date`` or a Timestamp,
    and one beyond their years (a date32's 2**31 - 1 days, a timestamp[s]
    of 2**62) raised for the whole column, as did a dictionary of dates with
    a missing value (docs/privacy.md section 8, round 17)."""
    if type(values).__module__.split(".")[0] != "pandas":
        return None
    arrow_type = getattr(getattr(values, "dtype", None), "pyarrow_dtype", None)
    if arrow_type is None:
        return None
    import pyarrow as pa

    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if pa.types.is_date(t) or (pa.types.is_timestamp(t) and t.tz is not None):
        return pa.array(values)
    return None


def _masked_numbers(values: Any) -> np.ndarray | None:
    """A pandas Series or array of nullable integers or floats (``Int64``,
    ``Float64``: how the Dask backend reads a Parquet file's integer
    column) as float seconds, NaN where missing or not finite, each value
    as Arrow's integer column reads it; None for any other input."""
    if type(values).__module__.split(".")[0] != "pandas":
        return None
    dtype = getattr(values, "dtype", None)
    if isinstance(dtype, np.dtype) or getattr(dtype, "kind", "") not in ("i", "u", "f"):
        return None
    if getattr(dtype, "numpy_dtype", None) is None:
        return None
    # a copy: without a missing value pandas gives a read-only view of the
    # values (a Float64 Index, an Arrow double column), which the line below
    # failed to write, so that one missing value decided whether the times
    # were read (docs/privacy.md section 8, round 15)
    out = np.array(values.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64, copy=True)
    out[~np.isfinite(out)] = np.nan
    return out


def as_column(values: Any) -> np.ndarray:
    """``values`` as a one-dimensional numpy array, a list or tuple as an
    object array of its own values: ``np.asarray`` would type a list's values
    together (``[1, "x"]`` all text, ``[1, 1j]`` all complex), so that one
    value would decide how the others are read."""
    if isinstance(values, (list, tuple)):
        return np.fromiter(values, dtype=object, count=len(values))
    arr = np.asarray(values)
    if arr.dtype.kind == "b" and type(values).__module__.split(".")[0] == "pandas":
        # pandas' booleans (``bool``, ``boolean``, ``bool[pyarrow]``, a
        # categorical of booleans) are a numpy bool array without a missing
        # value and an object array with one (pandas makes a ``bool`` Series
        # ``object`` to hold it): read them as objects always, so that one
        # missing value never changes how the others are read
        # (docs/privacy.md section 8, round 15)
        arr = arr.astype(object)
    return arr


def combined(values: Any) -> Any:
    """A pyarrow ChunkedArray as one Array, a dictionary column decoded chunk
    by chunk first: combining dictionary chunks unifies their dictionaries,
    which refuses a null dictionary value (``null_encoding="encode"``), so
    one missing value would fail the read (docs/privacy.md section 8,
    round 11). An Array is returned as it is."""
    import pyarrow as pa

    if not isinstance(values, pa.ChunkedArray):
        return values
    if pa.types.is_dictionary(values.type):
        values = pa.chunked_array([c.dictionary_decode() for c in values.chunks], values.type.value_type)
    return values.combine_chunks()


def read_objects(arr: np.ndarray) -> tuple[np.ndarray, list[str | None]]:
    """The values of an object array, each by its own type: ``(numbers,
    texts)``, where ``numbers`` holds each number's float value (NaN
    elsewhere) and ``texts`` each other value's text for the text rule
    (None for a number, a missing value or anything that is no time)."""
    numbers = np.full(arr.shape[0], np.nan)
    texts: list[str | None] = [None] * arr.shape[0]
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, (bool, np.bool_)):
            texts[i] = "true" if v else "false"  # as Arrow writes a boolean: no time, a status word
        elif isinstance(v, np.timedelta64):
            continue  # a duration (numpy counts it among the integers): no time
        elif isinstance(v, (int, float, np.integer, np.floating, decimal.Decimal)):
            try:
                numbers[i] = float(v)
            except (OverflowError, ValueError, TypeError):
                pass
        elif isinstance(v, str):
            texts[i] = text_or_none(v)
        elif isinstance(v, bytes):
            texts[i] = _utf8(v)
        elif isinstance(v, np.datetime64):
            texts[i] = _datetime64_text(v)
        elif isinstance(v, _dt.datetime):
            texts[i] = _datetime_text(v)
        elif isinstance(v, _dt.date):
            texts[i] = v.isoformat()
    numbers[~np.isfinite(numbers)] = np.nan
    return numbers, texts


def _datetime_text(v: _dt.datetime) -> str | None:
    """A datetime (a pandas Timestamp) as ISO text, in UTC with ``Z`` when
    it has a zone (an instant, whatever ``--tz`` says of times without one);
    None for NaT."""
    if v != v:  # pandas' NaT
        return None
    if v.utcoffset() is not None:
        try:
            v = v.astimezone(_dt.UTC)
        except OverflowError:
            # an instant past year 9999 or before year 1 in UTC (9999-12-31
            # 23:59 at -05:00): no time, this row alone (it failed the read)
            return None
        return v.replace(tzinfo=None).isoformat(sep=" ") + "Z"
    return v.isoformat(sep=" ")


def _datetime64_text(v: np.datetime64) -> str | None:
    """A numpy datetime64 as ISO text (to the minute at least); None for NaT."""
    if np.isnat(v):
        return None
    if np.datetime_data(v.dtype)[0] in ("Y", "M", "W", "D", "h"):
        v = v.astype("datetime64[m]")
    return str(np.datetime_as_string(v))


def _typed_times(values: Any) -> bool:
    """Whether ``values`` are typed timestamps or dates (they say their own unit)."""
    if type(values).__module__.split(".")[0] == "pyarrow":
        import pyarrow as pa

        t = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
        return bool(pa.types.is_timestamp(t) or pa.types.is_date(t))
    if arrow_typed(values) is not None:  # a pandas column of Arrow dates or zoned timestamps
        return True
    dtype = getattr(values, "dtype", None)
    # a pandas extension dtype (nullable integers) is no numpy dtype: its kind says
    return str(dtype).startswith("datetime64") or getattr(dtype, "kind", "") == "M"


def _scaled(values: Any, per: float, tz: str | None = None) -> np.ndarray:
    """Seconds of values whose numbers count ``per`` parts of a second: each
    number divided by ``per``, each ISO text as it is (one value at a time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = parse_times(values, tz=tz)
    if type(values).__module__.split(".")[0] == "pyarrow":
        arr = combined(values)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
    else:
        raw = as_column(values)
        if raw.dtype.kind in "iufb" or _masked_numbers(values) is not None:
            return out / per
        if raw.dtype.kind in "OS":
            # numbers scaled here, each other value's text below (a bool's
            # word or a datetime's ISO text is no number; numpy bytes are
            # text, not their repr)
            numbers, texts = read_objects(raw.astype(object))
            out[np.isfinite(numbers)] /= per
            arr = pa.array(texts, type=pa.string())
        else:
            arr = pa.array(
                [None if v is None else text_or_none(str(v)) for v in raw.tolist()], type=pa.string()
            )
    t = arr.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)):
        return out / per  # numbers
    if pa.types.is_binary(t):
        arr = pa.array([_utf8(v) for v in arr.to_pylist()], type=pa.string())
    text = pc.replace_substring_regex(arr, _TRIM, "")
    number = pc.fill_null(pc.match_substring_regex(text, NUMBER_PATTERN), False).to_numpy(
        zero_copy_only=False
    )
    out[number] /= per
    return out


def _parse_arrow(values: Any, tz: str | None = None) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        if pa.types.is_integer(values.type):
            # chunk by chunk into one array: no combined copy of the column
            out = np.empty(len(values))
            at = 0
            for chunk in values.chunks:
                _integer_seconds(chunk, out[at : at + len(chunk)])
                at += len(chunk)
            return out
        values = combined(values) if values.num_chunks != 1 else values.chunk(0)
    t = values.type
    if pa.types.is_dictionary(t):
        inner = _parse_arrow(values.dictionary, tz)
        idx = pc.fill_null(values.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        out = np.full(idx.size, np.nan)
        ok = idx >= 0
        out[ok] = inner[idx[ok]]
        return out
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        # each value's own integer, scaled: a cast of date64 to a timestamp
        # refused the whole column when one value was not whole seconds
        if pa.types.is_date32(t):
            ints = pc.fill_null(values.cast(pa.int32()), 0).to_numpy(zero_copy_only=False)
            out = ints.astype(np.float64) * 86400.0
        else:
            per_second = 1e3 if pa.types.is_date64(t) else {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}[t.unit]
            ints = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
            out = ints.astype(np.float64) / per_second
        out[values.is_null().to_numpy(zero_copy_only=False)] = np.nan
        # a timestamp without a zone, or a date, is a wall-clock reading; one with a zone an instant
        return out if pa.types.is_timestamp(t) and t.tz is not None else _local(out, tz)
    if pa.types.is_integer(t):
        return _integer_seconds(values, np.empty(len(values)))
    if pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t):
        out = pc.fill_null(values.cast(pa.float64()), float("nan")).to_numpy(zero_copy_only=False)
        out = np.array(out, dtype=np.float64)
        out[~np.isfinite(out)] = np.nan
        return out
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        # text in bytes (the CSV reader's raw fields); bytes that are not
        # UTF-8 are no time, value by value
        try:
            values = values.cast(pa.string())
        except pa.ArrowInvalid:
            values = pa.array([_utf8(v) for v in values.to_pylist()], type=pa.string())
        t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        numbers = _all_numbers(values)
        return _parse_text(values, tz) if numbers is None else numbers
    if pa.types.is_null(t):
        return np.full(len(values), np.nan)
    raise TypeError(f"times must be numbers, timestamps or text (one per row), got Arrow type {t}")


def _integer_seconds(values: Any, out: np.ndarray) -> np.ndarray:
    """An Arrow integer array as float seconds into ``out``, NaN where null.

    numpy's conversion, value by value: Arrow's cast refuses the whole
    column when one integer is beyond 2^53 (a bad value must drop its row,
    not the file), and it takes one pass instead of three."""
    import pyarrow.compute as pc

    nulls = values.null_count
    out[:] = (pc.fill_null(values, 0) if nulls else values).to_numpy(zero_copy_only=False)
    if nulls:
        out[values.is_null().to_numpy(zero_copy_only=False)] = np.nan
    return out


def text_or_none(v: str) -> str | None:
    """A str as it is, or None when it is no text Arrow can hold: a lone
    surrogate (JSON's ``"\\udcff"``, a file name read with
    ``surrogateescape``) has no UTF-8. Such a value is no time or status,
    value by value; before, one failed the whole column (round 8)."""
    if v.isascii():
        return v
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return v


def _utf8(raw: bytes | None) -> str | None:
    try:
        return None if raw is None else raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _all_numbers(values: Any) -> np.ndarray | None:
    """Text that is all numbers (or missing) as :func:`_parse_text` reads
    it, by one cast of the whole column (unix seconds in a CSV file: about
    a tenth of the patterns' time); None when the cast refuses a value (a
    space around it, ISO text, anything else), and the rule then reads each
    value. Arrow's cast accepts exactly :data:`NUMBER_PATTERN` untrimmed
    (tests/traces/test_times.py checks it), so each value reads alike; an
    infinity is no time either way."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        # the first values first: a column of ISO text fails there, where
        # the whole column's cast would parse all of it before it refuses
        # (0.5 s for the 1.4M times of 1,025 T-Drive files); the same answer
        values.slice(0, 64).cast(pa.float64())
        got = values.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    out = np.array(pc.fill_null(got, float("nan")).to_numpy(zero_copy_only=False), dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return out


def _parse_text(values: Any, tz: str | None = None) -> np.ndarray:
    """The text rule of the module docstring, vectorised: each pattern
    selects its values, which are cast together; a cast that fails (an
    impossible date) is retried on halves, so one bad value costs
    O(log n) casts and never touches the others."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(values)
    out = np.full(n, np.nan)
    text = values.cast(pa.string())
    if _any_padded(text):  # else trimming changes nothing (and takes a regex pass)
        text = pc.replace_substring_regex(text, _TRIM, "")
    # the patterns exclude each other: each looks at what the ones before left, ISO text first
    # (a column that is not all numbers is mostly text: one pass of one pattern, T-Drive's)
    left = np.ones(n, dtype=bool)
    for pattern, target in (
        (ISO_LOCAL, pa.timestamp("ns")),
        (ISO_ZONED, pa.timestamp("ns", tz="UTC")),
        (NUMBER_PATTERN, pa.float64()),
    ):
        if not left.any():
            break
        everything = left.all()
        rest = text if everything else text.filter(pa.array(left))
        matched = pc.match_substring_regex(rest, pattern)
        if everything and matched.null_count == 0 and pc.all(matched).as_py():
            out[:] = _cast_halving(rest, target)  # every value is of this pattern (T-Drive's times)
            if pattern == ISO_LOCAL:
                out = _local(out, tz)
            break
        mask = pc.fill_null(matched, False).to_numpy(zero_copy_only=False)
        if not mask.any():
            continue
        rows = np.flatnonzero(left)[mask]
        chosen = rest if mask.all() else rest.filter(pa.array(mask))
        out[rows] = (
            _cast_halving(chosen, target)
            if pattern != ISO_LOCAL
            else _local(_cast_halving(chosen, target), tz)
        )
        left[rows] = False
    out[~np.isfinite(out)] = np.nan
    return out


def _any_padded(text: Any) -> bool:
    """Whether a value of ``text`` begins or ends with a space or a tab."""
    import pyarrow.compute as pc

    return any(bool(pc.any(f(text, c)).as_py()) for f in (pc.starts_with, pc.ends_with) for c in (" ", "\t"))


def _cast_halving(text: Any, target: Any) -> np.ndarray:
    """``text`` cast to ``target`` as float seconds (numbers as they are),
    NaN for a value that does not cast."""
    import pyarrow as pa

    try:
        got = text.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if len(text) == 1:
            return np.array([np.nan])
        half = len(text) // 2
        return np.concatenate([_cast_halving(text[:half], target), _cast_halving(text[half:], target)])
    if pa.types.is_timestamp(target):
        return got.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.float64) / 1e9
    return np.asarray(got.to_numpy(zero_copy_only=False), dtype=np.float64)


_DURATION = re.compile(r"^\s*([+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zA-Z]*)\s*$")
_SECONDS = {"": 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
# the spellings a user writes for the same units ("5mins", "10 minutes", "2hrs")
for _unit, _names in {
    "s": ("secs", "second", "seconds"),
    "min": ("mins", "minute", "minutes"),
    "h": ("hr", "hrs", "hour", "hours"),
    "d": ("day", "days"),
}.items():
    _SECONDS.update(dict.fromkeys(_names, _SECONDS[_unit]))


def parse_duration(text: str | float) -> float:
    """A duration such as ``"5min"``, ``"300s"``, ``"1.5h"``, ``"1d"`` or a
    number of seconds, in seconds (> 0, finite)."""
    if isinstance(text, (int, float, np.integer, np.floating)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _DURATION.match(str(text))
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _SECONDS:
            # "5m" is 5 metres wherever a length is read: minutes are "min"
            hint = ": m is metres, minutes are min" if unit == "m" else ""
            raise ValueError(
                f"a duration must be a number of seconds or a number with s, min, h or d (5min, 300s), "
                f"got {text!r}{hint}"
            )
        value = float(m.group(1)) * _SECONDS[unit]
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"a duration must be a positive number of seconds, got {text!r}")
    return value


__all__ = [
    "parse_times",
    "parse_duration",
    "NUMBER_PATTERN",
    "ISO_LOCAL",
    "ISO_ZONED",
    "TIME_UNITS",
    "text_or_none",
]


#: Codes a time format may not hold: a zone by name (``%Z``: which names
#: read depends on the machine's own zone, so two machines could read one
#: file differently) and the locale's whole layouts (``%c``, ``%x``, ``%X``).
_FORMAT_REFUSED = {"Z": "%Z (a zone by name: give the offset, %z)", "c": "%c", "x": "%x", "X": "%X"}
#: Codes that say a date or a time (at least one must be there).
_FORMAT_TIME_CODES = frozenset("dmyYHIMSjbBfzpaAUWwGuV")


def check_time_format(time_format: str) -> None:
    """Refuse, before anything is read, a ``--time-format`` that cannot read
    times: without a date or time code, with a code that Python's
    ``strptime`` does not know or that reads differently on another machine
    (:data:`_FORMAT_REFUSED`), or that cannot read back a time it wrote
    itself. Public: the option alone."""
    if not isinstance(time_format, str) or not time_format.strip():
        raise ValueError("--time-format needs a layout such as '%d/%m/%Y %H:%M:%S'")
    codes = re.findall(r"%(.)", time_format.replace("%%", ""))
    for code in codes:
        if code in _FORMAT_REFUSED:
            raise ValueError(
                f"--time-format may not use {_FORMAT_REFUSED[code]}: it reads differently from one "
                "machine to another"
            )
    if not any(code in _FORMAT_TIME_CODES for code in codes):
        raise ValueError(
            f"--time-format {time_format!r} has no date or time code (%d, %m, %Y, %H, %M, %S, %z, "
            "...): give the layout of the time column's text, e.g. '%d/%m/%Y %H:%M:%S'"
        )
    sample = _dt.datetime(2001, 2, 13, 14, 5, 6, 789000, tzinfo=_dt.UTC)
    try:
        _dt.datetime.strptime(sample.strftime(time_format), time_format)
    except ValueError as exc:
        raise ValueError(
            f"--time-format {time_format!r} cannot be read by Python's strptime ({exc}); its codes "
            "are those of datetime.strptime, e.g. '%d/%m/%Y %H:%M:%S'"
        ) from None


def parse_formatted(values: Any, time_format: str, tz: str | None = None) -> np.ndarray:
    """Float seconds of each value read by ``datetime.strptime(text,
    time_format)``, NaN where it does not match (a value alone: an
    impossible date such as 31/02 is no time, as strptime says).

    Each value's text, after trimming spaces and tabs as the text rule
    does: text as it is, bytes as UTF-8 (no time where they are not), an
    integer as its digits (``20260302053904`` with ``%Y%m%d%H%M%S``), any
    other value no time. A column of typed timestamps or dates (a Parquet
    ``timestamp``, ``datetime64``) says its own instants and is read as
    :func:`parse_times` reads it. A time with an offset (``%z``) is
    converted to UTC; one without is read as UTC, as ISO text without one is
    (as zone ``tz``'s local clock where one is given, :func:`parse_times`).

    Each distinct text is parsed once (a trace's times repeat across its
    units: 5.3M fixes of 1,000 taxis over two days hold about 170,000)."""
    check_time_format(time_format)
    tz = local_zone(tz)
    if _typed_times(values):
        return parse_times(values, tz=tz)
    import pyarrow.compute as pc

    texts = _texts_of(values)
    codes = texts.dictionary_encode()
    uniques = codes.dictionary.to_pylist()
    seconds = np.full(len(uniques) + 1, np.nan)  # the last one: a missing value
    naive = np.zeros(len(uniques) + 1, dtype=bool)
    parse = _dt.datetime.strptime
    for i, text in enumerate(uniques):
        text = text.strip(" \t")
        try:
            when = parse(text, time_format)
        except ValueError:
            continue
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.UTC)
            naive[i] = True
        seconds[i] = when.timestamp()
    if tz is not None and naive.any():
        seconds[naive] = _local(seconds[naive], tz)
    idx = pc.fill_null(codes.indices, len(uniques)).to_numpy(zero_copy_only=False).astype(np.int64)
    return seconds[idx]


def _texts_of(values: Any) -> Any:
    """Each value's text for :func:`parse_formatted`, as one Arrow string
    array (null: no text)."""
    import pyarrow as pa

    if type(values).__module__.split(".")[0] == "pyarrow":
        arr = combined(values)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        t = arr.type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return arr.cast(pa.string())
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            try:
                return arr.cast(pa.string())
            except pa.ArrowInvalid:
                return pa.array([_utf8(v) for v in arr.to_pylist()], type=pa.string())
        if pa.types.is_integer(t):
            return arr.cast(pa.string())
        return pa.nulls(len(arr), pa.string())
    texts: list[str | None] = []
    for v in as_column(values).tolist():
        if isinstance(v, str):
            texts.append(text_or_none(v))
        elif isinstance(v, bytes):
            texts.append(_utf8(v))
        elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            texts.append(str(int(v)))
        else:
            texts.append(None)
    return pa.array(texts, type=pa.string())
