"""Points from PLT files, the format of Microsoft Research's GeoLife traces.

A PLT file is text: 6 lines of header (fixed by the format, never read),
then one point a line, ``lat,lon,0,altitude,days,date,time``: latitude
first, by the format; ``days`` counts days since 1899-12-30, ``date`` and
``time`` say the same instant as ``YYYY-MM-DD`` and ``hh:mm:ss``. Its
columns are fixed by the format, not by the file (:data:`COLUMNS`, public):
``x`` (the longitude, the line's second field), ``y`` (the latitude, its
first), ``time`` (``dateTtime``, ISO 8601 text, read by
:func:`dpdbscan.traces.parse_times` as UTC) and ``alt`` (the altitude, in
feet).

Each line is read alone, by the CSV reader's rules
(:mod:`dpdbscan.files.records`): an empty line is no record; a line without
exactly 7 fields is malformed (a row of NaN, counted); a latitude or a
longitude that is missing reads as NaN and one that is not a number by the
CSV grammar (:func:`dpdbscan.files.records.coerce_binary`) too, counted as a
value that is not a number. Bytes that are not UTF-8 make their line
malformed, and so does a line longer than 64 MiB (as in a CSV file). Nothing is quoted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from .records import MAX_LINE, NULL_VALUES, coerce_binary, float_values

#: The columns of every PLT file.
COLUMNS = ("x", "y", "time", "alt")
#: Lines of header before the first point (the format's, not the file's).
HEADER_LINES = 6
_FIELDS = 7
_NULLS = frozenset(NULL_VALUES)


def read(path: Path) -> tuple[np.ndarray, np.ndarray, int, Any, np.ndarray]:
    """``(X, bad, n_malformed, times, alt)`` of one file: the lon/lat rows
    (NaN where missing or malformed), the rows with a value that is not a
    number, how many lines were malformed, each row's time text (None on a
    malformed line; a list or an Arrow string array) and altitude. One file
    at a time: a trace folder's files are each one person's. OSError when
    the file cannot be read.

    A file whose lines are all UTF-8 with 7 fields is read in vectorised
    steps (Arrow's string kernels); another, line by line
    (:func:`read_lines`, the reference): the same values either way."""
    data = path.read_bytes()
    return _read_whole(data) or _read_lines(data)


def read_lines(path: Path) -> tuple[np.ndarray, np.ndarray, int, list[str | None], np.ndarray]:
    """:func:`read`, one line at a time: the reference."""
    return _read_lines(path.read_bytes())


def _read_whole(data: bytes) -> tuple[np.ndarray, np.ndarray, int, Any, np.ndarray] | None:
    """:func:`read` of a file whose lines are all UTF-8 with 7 fields (none
    empty but the last), in vectorised steps: the fields are cut where the
    commas and line ends are (NumPy), as one Arrow string array over the
    file's bytes; None for another file (or one without points)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    start = 0
    for _ in range(HEADER_LINES):  # the header's lines, as bytes.splitlines() cuts them
        found = _LINE_END.search(data, start)
        if found is None:
            return None
        start = found.end()
    body = data[start:]
    if b"\r" in body:
        body = body.replace(b"\r\n", b"\n")
        if b"\r" in body:
            return None
    if not body.endswith(b"\n"):
        body += b"\n"
    if body.startswith(b"\n") or b"\n\n" in body or len(body) >= 1 << 31:
        return None
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    raw = np.frombuffer(body, dtype=np.uint8)
    cuts = np.flatnonzero((raw == ord(",")) | (raw == ord("\n")))
    n = body.count(b"\n")
    if len(cuts) != _FIELDS * n or not (raw[cuts[_FIELDS - 1 :: _FIELDS]] == ord("\n")).all():
        return None  # a line without 7 fields
    ends = cuts[_FIELDS - 1 :: _FIELDS]
    if len(body) > MAX_LINE and np.diff(ends, prepend=-1).max(initial=0) > MAX_LINE + 1:
        return None  # a line longer than MAX_LINE: malformed, read by _read_lines
    # field k is body[at[k] : at[k + 1] - 1]: each value with its comma or line end, cut below
    at = np.concatenate([[0], cuts + 1]).astype(np.int32)
    fields = pa.StringArray.from_buffers(len(cuts), pa.py_buffer(at), pa.py_buffer(body))
    rows = np.arange(0, _FIELDS * n, _FIELDS)

    def picked(*js: int) -> Any:
        return pc.utf8_slice_codeunits(fields.take(pa.array(np.concatenate([rows + j for j in js]))), 0, -1)

    numbers, bad = coerce_texts(picked(0, 1, 3))
    lat, lon, alt = numbers[:n], numbers[n : 2 * n], numbers[2 * n :]
    when = pc.utf8_trim(picked(5, 6), " \t")
    times = pc.binary_join_element_wise(when[:n], when[n:], "T")
    return np.column_stack([lon, lat]), bad[:n] | bad[n : 2 * n], 0, times, alt


_LINE_END = re.compile(rb"\r\n|\r|\n")


def coerce_texts(texts: Any) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow string column as numbers by the CSV reader's rules, in
    vectorised steps: NaN where missing (one of
    :data:`~dpdbscan.files.records.NULL_VALUES`, the empty text included)
    and the mask of the texts that are not numbers
    (:func:`~dpdbscan.files.records.coerce_binary`). The same values as
    mapping each missing text to None first: a column that casts whole
    holds no missing text but ``nan`` and ``NaN``, which cast to the NaN a
    missing value reads as."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return float_values(pc.cast(texts, pa.float64())), np.zeros(len(texts), dtype=bool)
    except pa.ArrowInvalid:
        pass
    missing = pc.is_in(texts, value_set=pa.array(NULL_VALUES, type=pa.string()))
    return coerce_binary(pc.if_else(missing, pa.scalar(None, pa.string()), texts))


def _read_lines(data: bytes) -> tuple[np.ndarray, np.ndarray, int, list[str | None], np.ndarray]:
    lines = [line for line in data.splitlines()[HEADER_LINES:] if line]
    fields: list[list[str] | None] = []
    for raw in lines:
        try:
            # a line longer than MAX_LINE is malformed, as in a CSV file (one
            # of 2 GiB failed the whole read: privacy.md section 8, round 9)
            got = raw.decode("utf-8").split(",") if len(raw) <= MAX_LINE else []
        except UnicodeDecodeError:
            got = []
        fields.append(got if len(got) == _FIELDS else None)
    lat, bad_lat = _numbers(fields, 0)
    lon, bad_lon = _numbers(fields, 1)
    alt, _ = _numbers(fields, 3)
    times = [None if f is None else f[5].strip(" \t") + "T" + f[6].strip(" \t") for f in fields]
    X = np.column_stack([lon, lat]) if lines else np.zeros((0, 2))
    return X, bad_lat | bad_lon, sum(1 for f in fields if f is None), times, alt


def _numbers(fields: list[list[str] | None], j: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``j``-th field of every line as numbers, by the CSV grammar, in
    one vectorised step (:func:`dpdbscan.files.records.coerce_binary`): NaN
    where missing or malformed, and a mask of the values that are not numbers."""
    import pyarrow as pa

    texts = [None if f is None or f[j] in _NULLS else f[j] for f in fields]
    return coerce_binary(pa.array(texts, type=pa.string()))


__all__ = ["COLUMNS", "HEADER_LINES", "coerce_texts", "read", "read_lines"]
