"""Points from GPX: the track points, route points and waypoints of a file.

A GPX file (1.0 or 1.1) is XML: each ``<trkpt>`` (in a ``<trk>``'s
``<trkseg>``), ``<rtept>`` (in a ``<rte>``) and ``<wpt>`` is one row, read
as a stream (:func:`chunks`), a block of text at a time, so memory holds
about one chunk of rows whatever the file's size: the stdlib's expat
checks that the text is well-formed, a scanner of its text reads the
points of a file of the usual shape, and ElementTree (:func:`tree_rows`,
the reference) reads any other. Its columns are fixed by the
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

import codecs
import functools
import itertools
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from xml.parsers import expat

import numpy as np

from .pltfile import coerce_texts
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


class Chunk(NamedTuple):
    """Up to :data:`CHUNK` points, column by column: lon, lat (NaN where
    missing), whether either was present but not a number, the time's text,
    the elevation and the track's number (None out of a ``<trk>``)."""

    lon: np.ndarray
    lat: np.ndarray
    bad: np.ndarray
    time: list[str | None]
    ele: np.ndarray
    track: list[int | None]

    def column(self, name: str) -> np.ndarray | list:
        """The column of :data:`COLUMNS` named ``name``."""
        columns: dict[str, np.ndarray | list] = {
            "x": self.lon,
            "y": self.lat,
            "time": self.time,
            "ele": self.ele,
            "track": self.track,
        }
        return columns[name]


def chunks(path: Path) -> Iterator[Chunk]:
    """The points of the file, in the file's order, :data:`CHUNK` at a time:
    the same as :func:`tree_rows` (the reference), read faster.

    A file of the usual shape (UTF-8; tags, attributes and text, no
    comment, CDATA section, DOCTYPE, processing instruction, entity or
    character reference in a value read; each point's ``<time>`` and
    ``<ele>`` before any child that holds elements) is read by a scanner
    of its text, after the stdlib's expat parser (no handlers: its C speed)
    has found the same text well-formed. On anything else (a damaged file
    included) the file is read from its start by :func:`tree_rows`, its
    chunks already given skipped, so the rows, their order and the point
    where damage ends the read are those of the reference.

    ValueError (quoting nothing) when the file is not well-formed XML or
    not GPX; OSError when it cannot be read."""
    done = 0
    try:
        for chunk in _scan(path):
            yield chunk
            done += 1
        return
    except _Unusual:
        pass
    for k, rows in enumerate(tree_rows(path)):
        if k >= done:
            yield columns(rows)


def columns(rows: list[Row]) -> Chunk:
    """Rows of :func:`tree_rows` as a chunk."""
    lon, lat, bad, time, ele, track = zip(*rows) if rows else ((),) * 6
    return Chunk(
        np.array(lon, dtype=np.float64),
        np.array(lat, dtype=np.float64),
        np.array(bad, dtype=bool),
        list(time),
        np.array(ele, dtype=np.float64),
        list(track),
    )


# ---------------------------------------------------------------- the scanner
class _Unusual(Exception):
    """Text the scanner does not read: the reference reads the file."""


#: Bytes read at a time. A block's text is scanned up to its last point's
#: start (the rest is read with the next block); a point longer than
#: :data:`_CARRY` characters is unusual.
_BLOCK = 1 << 20
_CARRY = 1 << 16

_S = "[ \\t\\r\\n]"  # XML's white space
_NAME = "[^ \\t\\r\\n/>!?<]++"  # in well-formed XML, a name ends at white space, / or >; never ! ?
_ANY_PREFIX = "(?:[^ \\t\\r\\n/>:]++:)?"
_VALUE = "(?:\"[^\"]*+\"|'[^']*+')"
_ATTRS = f"(?:{_S}++[^ \\t\\r\\n=/>]++{_S}*+={_S}*+{_VALUE})*+"
#: A lat or lon value the scanner reads: double-quoted, nothing to replace
#: or normalise, no ``(`` (``nan(...)``: the reference's float() refuses it).
_NUMBER = '"([^"&\\t\\n\\r(]*+)"'
_POINT_ATTRS = (
    f"(?:{_S}++(?:lat{_S}*+={_S}*+{_NUMBER}"
    f"|lon{_S}*+={_S}*+{_NUMBER}"
    f"|(?!l(?:at|on){_S}*=)[^ \\t\\r\\n=/>]++{_S}*+={_S}*+{_VALUE}))*+"
)
#: Elements of the names read, whatever their prefix: where the scanner
#: meets one it does not read in place, the file is unusual.
_TRACKS = f"{_ANY_PREFIX}(?:trk|trkpt|rtept|wpt)[ \\t\\r\\n/>]"
_READ = f"{_ANY_PREFIX}(?:time|ele|trk|trkpt|rtept|wpt)[ \\t\\r\\n/>]"


@functools.lru_cache(maxsize=8)
def _token(prefix: str) -> re.Pattern[str]:
    """The scanner's pattern for a file whose root is ``<{prefix}gpx>``: one
    match a construct, its groups (all empty for a construct not read):
    a point's name, lat, lon, time and elevation texts; a track's start
    or end tag; text the scanner does not read (``<``: a comment, CDATA, a
    DOCTYPE, an instruction, an empty ``<trk/>``...)."""
    p = re.escape(prefix)
    # a time or elevation text the scanner reads: no reference, no carriage
    # return, no ``(`` in an elevation; before any child that holds elements
    children = (
        "(?>[^<]*+(?:(?:"
        f"<{p}time{_ATTRS}{_S}*+>([^<&\\r]*+)</[^>]*+>"
        f"|<{p}ele{_ATTRS}{_S}*+>([^<&\\r(]*+)</[^>]*+>"
        f"|<(?!/|{_READ}){_NAME}{_ATTRS}{_S}*+(?:/>|>[^<]*+</[^>]*+>)"
        ")[^<]*+)*+)"
    )
    # then children that hold elements: none a time, an elevation, a track or a point
    tail = f"(?:<(?!/{p}(?:trkpt|rtept|wpt){_S}*+>|/?{_READ})[^<]*+)*+"  # the end tag first: the usual
    return re.compile(
        f"<{p}(trkpt|rtept|wpt){_POINT_ATTRS}{_S}*+(?:/>|>{children}{tail}</{p}\\1{_S}*+>)"
        f"|(<{p}trk{_ATTRS}{_S}*+>|</{p}trk{_S}*+>)"
        f"|<(?!/|{_TRACKS}){_NAME}{_ATTRS}{_S}*+/?>|</[^>]*+>"
        "|(<)",
        re.ASCII,
    )


_DECLARATION = re.compile(f"<\\?xml{_S}[^>]*\\?>", re.ASCII)
_ENCODING = re.compile(f"encoding{_S}*={_S}*[\"']([^\"']*)[\"']", re.ASCII)
_ROOT = re.compile(f"{_S}*<([^ \\t\\r\\n/>:]+:)?gpx[ \\t\\r\\n/>]", re.ASCII)


class _Points:
    """The points scanned so far (their texts), and where the scan is: the
    tracks begun, the ``<trk>`` elements open."""

    def __init__(self) -> None:
        self.lon: list[str] = []
        self.lat: list[str] = []
        self.time: list[str] = []
        self.ele: list[str] = []
        self.track: list[np.ndarray] = []
        self.tracks, self.open_tracks = -1, 0

    def __len__(self) -> int:
        return len(self.lon)

    def add(self, found: list[tuple[str, ...]]) -> None:
        """The constructs of :func:`_token`'s pattern, in order: the points
        kept, each with its track (-1: none); the constructs between them
        (few: the ``<trk>``, ``<trkseg>``... tags) move the tracks' count."""
        name, lat, lon, time, ele, trk, unusual = zip(*found)
        if any(unusual):
            raise _Unusual
        gaps, at = [], -1  # where the constructs that are not points are
        for _ in range(name.count("")):
            at = name.index("", at + 1)
            gaps.append(at)
        tracks, opened = [], []  # the count and the open tracks before each gap, and at the end
        for g in gaps:
            tracks.append(self.tracks)
            opened.append(self.open_tracks)
            if trk[g]:
                closing = trk[g].startswith("</")
                self.tracks += not closing
                self.open_tracks += -1 if closing else 1
        tracks.append(self.tracks)
        opened.append(self.open_tracks)
        ends = np.array(gaps, dtype=np.int64) - np.arange(len(gaps))  # points before each gap
        runs = np.diff(np.concatenate([[0], ends, [len(name) - len(gaps)]]))
        track = np.repeat(np.where(np.array(opened) > 0, tracks, -1), runs)
        names = _without(name, gaps)
        if names.count("trkpt") != len(names):  # a route point or a waypoint: in no track
            track[np.fromiter(map("trkpt".__ne__, names), bool, len(names))] = -1
        self.lon += _without(lon, gaps)
        self.lat += _without(lat, gaps)
        self.time += _without(time, gaps)
        self.ele += _without(ele, gaps)
        self.track.append(track)

    def take(self, n: int) -> Chunk:
        """The first ``n`` points, as a chunk, removed."""
        lon, lat, ele, time = self.lon[:n], self.lat[:n], self.ele[:n], self.time[:n]
        del self.lon[:n], self.lat[:n], self.ele[:n], self.time[:n]
        track = np.concatenate(self.track) if self.track else np.zeros(0, np.int64)
        self.track = [track[n:]]
        x, bad_x = _numbers(lon)
        y, bad_y = _numbers(lat)
        ele_values = _numbers(ele)[0] if any(ele) else np.full(n, np.nan)
        return Chunk(x, y, bad_x | bad_y, [t or None for t in time], ele_values, _tracks(track[:n]))


def _without(column: tuple[str, ...], gaps: list[int]) -> list[str]:
    """``column`` without the entries at ``gaps`` (sorted)."""
    bounds = [-1, *gaps, len(column)]
    return list(itertools.chain.from_iterable(column[a + 1 : b] for a, b in zip(bounds, bounds[1:])))


def _tracks(track: np.ndarray) -> list[int | None]:
    """The tracks' numbers, None for -1 (a point out of any track)."""
    if not track.size or track.max() < 0:
        return [None] * track.size
    if track.min() >= 0:
        return track.tolist()
    return [None if t < 0 else t for t in track.tolist()]


def _numbers(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The texts as numbers by :func:`_number`'s rules, in one vectorised
    step (:func:`~dpdbscan.files.pltfile.coerce_texts`): NaN where missing
    (empty, as for an absent value, or one of the missing values), and the
    mask of the texts that are not numbers."""
    import pyarrow as pa

    return coerce_texts(pa.array(texts, type=pa.string()))


def _scan(path: Path) -> Iterator[Chunk]:
    """:func:`chunks` by the scanner; _Unusual where it stops."""
    parser = expat.ParserCreate(None, "}")  # as ElementTree's, without its handlers
    decoder = codecs.getincrementaldecoder("utf-8")()
    points = _Points()
    token: re.Pattern[str] | None = None
    prefix, text = "", ""
    with open(path, "rb") as f:
        final = False
        while not final:
            data = f.read(_BLOCK)
            final = len(data) < _BLOCK  # a file's read is short at its end only
            if b"\x00" in data:
                raise _Unusual  # UTF-16 without a mark, or not XML
            try:
                parser.Parse(data, final)
                text += decoder.decode(data, final)
            except (expat.ExpatError, UnicodeDecodeError):
                raise _Unusual from None
            start = 0
            if token is None:
                start = _prolog(text)
                root = _ROOT.match(text, start)
                if root is None:
                    if final or len(text) > _CARRY:
                        raise _Unusual  # the reference says why (not GPX), or reads it
                    continue
                token, prefix = _token(root.group(1) or ""), root.group(1) or ""
            cut = len(text) if final else _cut(text, prefix)
            if cut <= start and len(text) - start > _CARRY:
                raise _Unusual  # a point longer than _CARRY
            found = token.findall(text, start, cut)
            if found:
                points.add(found)
            text = text[cut:]
            while len(points) >= CHUNK:
                yield points.take(CHUNK)
    if len(points):
        yield points.take(len(points))


def _cut(text: str, prefix: str) -> int:
    """Where to stop the scan of a block's text: at its last point's start
    (no point is cut in two), else at its last tag's (every tag is whole)."""
    at = max(text.rfind(f"<{prefix}{name}") for name in ("trkpt", "rtept", "wpt"))
    return max(at if at >= 0 else text.rfind("<"), 0)


def _prolog(text: str) -> int:
    """Where the scan of a file's text begins: after a byte-order mark and
    an XML declaration, which must name UTF-8 or no encoding."""
    start = 1 if text.startswith("\ufeff") else 0
    decl = _DECLARATION.match(text, start)
    if decl is None:
        return start
    encoding = _ENCODING.search(decl.group())
    if encoding is not None and encoding.group(1).lower() != "utf-8":
        raise _Unusual
    return decl.end()


# ------------------------------------------------------- the reference reader
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


def tree_rows(path: Path) -> Iterator[list[Row]]:
    """The points of the file, in the file's order, :data:`CHUNK` at a time,
    by ElementTree: the reference of :func:`chunks`, and its reader of the
    files the scanner leaves.

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


__all__ = ["CHUNK", "COLUMNS", "Chunk", "Row", "chunks", "columns", "tree_rows"]
