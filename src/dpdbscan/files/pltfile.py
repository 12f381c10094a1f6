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
CSV grammar (:func:`dpdbscan.files.records.is_number`) too, counted as a
value that is not a number. Bytes that are not UTF-8 make their line
malformed. Nothing is quoted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .records import NULL_VALUES, is_number

#: The columns of every PLT file.
COLUMNS = ("x", "y", "time", "alt")
#: Lines of header before the first point (the format's, not the file's).
HEADER_LINES = 6
_FIELDS = 7
_NULLS = frozenset(NULL_VALUES)


def _number(text: str) -> tuple[float, bool]:
    """A field's number (NaN where missing), and whether it was present but not a number."""
    if text in _NULLS:
        return np.nan, False
    if not is_number(text):
        return np.nan, True
    return float(text.strip(" \t")), False


def read(path: Path) -> tuple[np.ndarray, np.ndarray, int, list[str | None], np.ndarray]:
    """``(X, bad, n_malformed, times, alt)`` of one file: the lon/lat rows
    (NaN where missing or malformed), the rows with a value that is not a
    number, how many lines were malformed, each row's time text (None on a
    malformed line) and altitude. One file at a time: a trace folder's files
    are each one person's. OSError when the file cannot be read."""
    data = path.read_bytes()
    lines = [line for line in data.splitlines()[HEADER_LINES:] if line.strip(b" \t")]
    X = np.full((len(lines), 2), np.nan)
    alt = np.full(len(lines), np.nan)
    bad = np.zeros(len(lines), dtype=bool)
    times: list[str | None] = [None] * len(lines)
    malformed = 0
    for i, raw in enumerate(lines):
        try:
            fields = raw.decode("utf-8").split(",")
        except UnicodeDecodeError:
            fields = []
        if len(fields) != _FIELDS:
            malformed += 1
            continue
        lat, bad_lat = _number(fields[0])
        lon, bad_lon = _number(fields[1])
        X[i] = lon, lat
        bad[i] = bad_lat or bad_lon
        alt[i] = _number(fields[3])[0]
        times[i] = fields[5].strip(" \t") + "T" + fields[6].strip(" \t")
    return X, bad, malformed, times, alt


__all__ = ["COLUMNS", "HEADER_LINES", "read"]
