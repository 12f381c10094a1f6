"""Trip ends: where a ride begins or ends, from a 0/1 status column.

A taxi's trace says at every point whether it carries a passenger (Cabs'
``occupied``). Per unit, in time order (:func:`dpdbscan.traces.order.trace_order`):

* a **pick-up** is the first point of a ride: a point with status 1 whose
  previous point has status 0;
* a **drop-off** is the last point of a ride: a point with status 1 whose
  next point has status 0.

Both are observed points aboard. A unit's first point is no pick-up and its
last no drop-off (the trace does not say whether the ride began or ended
there). The status of a row is 0 or 1 (numbers, booleans, or text such as
"0", "1", "true" and "false" in any case), or, with two public codes
``values=(free, carrying)`` (``--status-values free hired``), the text that
equals one of them; any other value, or none, drops that row alone, by the
per-record rule, before the order is read. Each value is read alone by a
rule fixed before any row is read: no value decides how another is read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .order import trace_steps
from .times import arrow_typed, as_column, combined, in_parts, parse_times, read_objects

#: The events a status column gives.
ENDS = ("pickup", "dropoff", "both")


def parse_status(values: Any, codes: tuple[str, str] | None = None) -> np.ndarray:
    """Each row's status as 0.0 or 1.0, NaN where it is neither (missing,
    text that is not a number, 2, -1, ...). ``codes``: the two public texts
    ``(free, carrying)`` read as 0 and 1 instead (the module docstring)."""
    parts = in_parts(values)
    if parts is not None:  # each value is read alone: part by part, the same values
        return np.concatenate([parse_status(part, codes) for part in parts])
    typed = arrow_typed(values)
    if typed is not None:  # pandas' Arrow dates as Arrow reads them (numpy failed on one value)
        values = typed
    if codes is not None:
        return _coded_status(values, codes)
    plain = _plain_digits(values)
    if plain is not None:
        # text: "0" and "1" as they are (most rows of a CSV status), the rest by the rules below
        s, rest = plain
        if rest.size:
            s[rest] = _full_status(_arrow(values).take(rest))
        return s
    return _full_status(values)


def _full_status(values: Any) -> np.ndarray:
    """:func:`parse_status`'s default rule for every value."""
    # numbers, booleans and numeric text by the time column's number rule;
    # an ISO date is a large number of seconds, hence no status
    s = _numbers(values)
    s[(s != 0.0) & (s != 1.0)] = np.nan
    words = _texts(values, lower=True)
    if words is not None:
        for word, value in (("false", 0.0), ("true", 1.0)):
            s[np.flatnonzero(words == word)] = value
    return s


def _numbers(values: Any) -> np.ndarray:
    """The status values by the time column's number rule; a column of a
    type no rule reads is refused as a status column (public: its type,
    never a value)."""
    try:
        return parse_times(values)
    except TypeError:
        t = getattr(values, "type", None)
        dtype = getattr(values, "dtype", type(values).__name__)
        kind = f"Arrow type {t}" if t is not None else f"dtype {dtype}"
        msg = f"a status column holds numbers, booleans or text (one per row), got {kind}"
        raise TypeError(msg) from None


def _plain_digits(values: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """For text or bytes values: ``(status, rows)``, the status 0.0/1.0
    where a value is exactly ``0`` or ``1`` and the rows of every other value
    (to read by the full rule); None for values that are not text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if type(values).__module__.split(".")[0] != "pyarrow":
        return None
    arr = _arrow(values)
    t = arr.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        zero, one = pa.scalar(b"0", t), pa.scalar(b"1", t)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        zero, one = pa.scalar("0", t), pa.scalar("1", t)
    else:
        return None
    is_one = pc.fill_null(pc.equal(arr, one), False).to_numpy(zero_copy_only=False)
    is_zero = pc.fill_null(pc.equal(arr, zero), False).to_numpy(zero_copy_only=False)
    s = np.full(len(arr), np.nan)
    s[is_zero] = 0.0
    s[is_one] = 1.0
    return s, np.flatnonzero(~(is_zero | is_one))


def _coded_status(values: Any, codes: tuple[str, str]) -> np.ndarray:
    """0.0 where a value's text (trimmed of spaces and tabs) is ``codes[0]``,
    1.0 where it is ``codes[1]``, NaN elsewhere. Numbers match a code that
    is the same number (``2`` and ``2.0`` alike), booleans ``true`` and
    ``false``."""
    free, carrying = (str(c).strip(" \t") for c in codes)
    words = _texts(values, lower=False)
    if words is not None:
        out = np.full(words.shape[0], np.nan)
        out[words == free] = 0.0
        out[words == carrying] = 1.0
        objects = _objects(values)
        if objects is not None:
            # Python objects: each number by its value, each text above
            _number_codes(out, read_objects(objects)[0], (free, carrying))
        return out
    import pyarrow as pa

    arr = _arrow(values)
    if pa.types.is_boolean(arr.type):
        return _coded_status(arr.cast(pa.string()), (free, carrying))
    numbers = _numbers(arr)  # numbers as they are, NaN where missing
    out = np.full(numbers.shape[0], np.nan)
    _number_codes(out, numbers, (free, carrying))
    return out


def _number_codes(out: np.ndarray, numbers: np.ndarray, codes: tuple[str, str]) -> None:
    """0.0 / 1.0 into ``out`` where a number equals the code ``codes[0]`` /
    ``codes[1]`` read as a number (a code that is no number matches none)."""
    for code, value in zip(codes, (0.0, 1.0)):
        as_number = parse_times([code])[0]
        if np.isfinite(as_number):
            out[numbers == as_number] = value


def _objects(values: Any) -> np.ndarray | None:
    """``values`` as an object array when they are Python objects (a list,
    a tuple, an object array or Series), else None."""
    if type(values).__module__.split(".")[0] == "pyarrow":
        return None
    raw = as_column(values)
    return raw if raw.dtype.kind == "O" else None


def _arrow(values: Any) -> Any:
    """``values`` as one pyarrow Array (a dictionary decoded to its values)."""
    import pyarrow as pa

    if type(values).__module__.split(".")[0] == "pyarrow":
        arr = combined(values)
    else:
        raw = as_column(values)
        if raw.dtype.kind == "O":
            # each value by its own type (dpdbscan.traces.times.read_objects):
            # text, bytes, booleans as words; numbers are no text
            arr = pa.array(read_objects(raw)[1], type=pa.string())
        else:
            try:
                arr = pa.array(raw.astype(str) if raw.dtype.kind == "S" else raw)
            except (UnicodeError, pa.ArrowInvalid):
                # text with a value that is no UTF-8 (bytes, a lone surrogate): each alone
                arr = pa.array(read_objects(raw.astype(object))[1], type=pa.string())
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _texts(values: Any, *, lower: bool) -> np.ndarray | None:
    """Each value's text, trimmed of spaces and tabs (lower-cased with
    ``lower``; "" where missing or not UTF-8), or None when the values are
    not text (numbers, booleans, timestamps)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _arrow(values)
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        # Arrow does not check a Parquet file's text: read it as its bytes
        # below, so that one value that is not UTF-8 is "" (no status) and
        # fails nothing (it failed the whole fit before, round 8)
        arr = arr.cast(pa.large_binary() if pa.types.is_large_string(t) else pa.binary())
        t = arr.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        try:
            arr = arr.cast(pa.string())
        except pa.ArrowInvalid:
            arr = pa.array([_utf8(v) for v in arr.to_pylist()], type=pa.string())
    elif not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return None
    arr = pc.utf8_trim(arr, " \t")
    if lower:
        arr = pc.utf8_lower(arr)
    return np.asarray(pc.fill_null(arr, "").to_numpy(zero_copy_only=False), dtype=object)


def _utf8(raw: bytes | None) -> str | None:
    try:
        return None if raw is None else raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def trip_end_rows(
    X: np.ndarray, codes: np.ndarray, times: np.ndarray, status: np.ndarray, ends: str = "pickup"
) -> np.ndarray:
    """The rows (indices into ``X``, ascending) that are pick-ups, drop-offs
    or both (``ends``) by the module docstring's rules. ``status``: 0.0 or
    1.0 per row, NaN for a bad one (:func:`parse_status`); ``codes`` and
    ``times`` as for :func:`dpdbscan.traces.stops.stop_rows`."""
    if ends not in ENDS:
        raise ValueError(f"ends must be one of {', '.join(ENDS)}, got {ends!r}")
    X = np.asarray(X, dtype=np.float64)
    status = np.asarray(status, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    bad = np.isnan(status)
    if bad.any():  # a row without a status is dropped (no copy of the times when none is)
        times = np.where(bad, np.nan, times)
    del bad
    codes = np.asarray(codes)
    order = trace_steps(X, codes, times)
    if isinstance(order, np.ndarray):
        if order.size < 2:
            return np.zeros(0, dtype=np.int64)
        c = codes[order]
        s = (status == 1.0)[order]  # booleans gathered: an eighth of the fresh memory of the floats
    else:  # the file in trace order as it lies, or backwards: views, no index of every row
        c = codes[::order]
        s = (status == 1.0)[::order]
    same = c[1:] == c[:-1]
    out = []
    if ends in ("pickup", "both"):
        out.append(np.flatnonzero(same & ~s[:-1] & s[1:]) + 1)
    if ends in ("dropoff", "both"):
        out.append(np.flatnonzero(same & s[:-1] & ~s[1:]))
    at = np.concatenate(out)  # positions in the trace order
    if isinstance(order, np.ndarray):
        return np.sort(order[at])
    return np.sort(at if order > 0 else (codes.shape[0] - 1) - at)


__all__ = ["ENDS", "parse_status", "trip_end_rows"]
