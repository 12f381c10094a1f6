"""Points from GPX: the track points, route points and waypoints of a file.

A GPX file (1.0 or 1.1) is XML: each ``<trkpt>`` (in a ``<trk>``'s
``<trkseg>``), ``<rtept>`` (in a ``<rte>``) and ``<wpt>`` is one row, read
as a stream (:func:`rows`), one element at a time, so memory holds one
chunk of rows whatever the file's size. Its columns are fixed by the
format, not by the file (:data:`COLUMNS`, public): ``x`` and ``y``, the
point's ``lon`` and ``lat`` attributes (WGS 84 degrees), ``time`` (the
text of its ``<time>``, ISO 8601), ``ele`` (its ``<ele>``) and ``track``
(the 0-based number of its ``<trk>`` in the file; none for route points and
waypoints), which may be the privacy unit of a file that holds several
people's tracks.

Each value is read alone: a ``lat``/``lon`` or ``<ele>`` that is absent
or one of the CSV reader's missing values is missing; one that is not a
number by its grammar (:func:`dpdbscan.files.records.is_number`) is missing
too (the row is dropped, counted as a value that is not a number);
a point outside the public bounds is clipped as usual. A file that is not
well-formed XML is refused as damaged, without quoting it.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from .records import NULL_VALUES, is_number

#: The columns of every GPX file.
COLUMNS = ("x", "y", "time", "ele", "track")

#: Rows per chunk.
CHUNK = 1 << 15

_POINTS = frozenset(("trkpt", "rtept", "wpt"))
_DROPPED = _POINTS | {"trkseg", "trk", "rte"}

#: One row: lon, lat (NaN where missing), whether either was present but
#: not a number, the time's text, the elevation, the track's number.
Row = tuple[float, float, bool, "str | None", float, "int | None"]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _number(text: str | None) -> tuple[float, bool]:
    """A number of the file (NaN where missing), and whether a value was
    present but not a number."""
    if text is None or text in NULL_VALUES:
        return math.nan, False
    if not is_number(text):
        return math.nan, True
    return float(text.strip(" \t")), False


def rows(path: Path) -> Iterator[list[Row]]:
    """The points of the file, in the file's order, :data:`CHUNK` at a time.

    ValueError (quoting nothing) when the file is not well-formed XML or
    not GPX."""
    batch: list[Row] = []
    track = -1
    in_trk = 0  # how many <trk> elements are open around the current one
    stack: list[ET.Element] = []
    local: dict[str, str] = {}  # tag -> its name without the namespace
    try:
        for event, elem in ET.iterparse(path, events=("start", "end")):
            name = local.get(elem.tag) or local.setdefault(elem.tag, _local(elem.tag))
            if event == "start":
                if not stack and name != "gpx":
                    raise ValueError("not a GPX file (its root element is not <gpx>)")
                if name == "trk":
                    track += 1
                    in_trk += 1
                stack.append(elem)
                continue
            stack.pop()
            if name == "trk":
                in_trk -= 1
            if name in _POINTS:
                in_track = name == "trkpt" and in_trk > 0
                batch.append(_row(elem, track if in_track else None))
                if len(batch) == CHUNK:
                    yield batch
                    batch = []
            if stack and name in _DROPPED:
                stack[-1].remove(elem)  # read: dropped, so memory holds one element
    except ET.ParseError:
        raise ValueError("not well-formed XML") from None
    if batch:
        yield batch


def _row(elem: ET.Element, track: int | None) -> Row:
    lon, bad_lon = _number(elem.get("lon"))
    lat, bad_lat = _number(elem.get("lat"))
    time = ele_text = None
    for child in elem:
        kind = _local(child.tag)
        if kind == "time":
            time = child.text
        elif kind == "ele":
            ele_text = child.text
    ele, _ = _number(ele_text)
    return lon, lat, bad_lon or bad_lat, time, ele, track


__all__ = ["CHUNK", "COLUMNS", "Row", "rows"]
