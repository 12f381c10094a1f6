"""Points from GPX: the track points, route points and waypoints of a file.

A GPX file (1.0 or 1.1) is XML: each ``<trkpt>`` (in a ``<trk>``'s
``<trkseg>``), ``<rtept>`` (in a ``<rte>``) and ``<wpt>`` is one row, read
as a stream (:func:`chunks`), a block of text at a time, so memory holds
about one chunk of rows whatever the file's size: the stdlib's expat
checks that the text is well-formed, the plain track points (most
writers') are found in numpy steps, a scanner of its text reads the other
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
a point outside the public bounds is clipped as usual.

Each track and point is framed by its own start tag, found in the bytes
alone (:func:`framed_rows`): a point that is not well-formed XML (damaged,
cut, holding another point) is dropped alone, counted, and reading goes on
at the next ``<trk>``, ``<trkpt>``, ``<rtept>`` or ``<wpt>`` tag, so one
unit's bytes, whatever they are, hide no other unit's points and never
change how they are read (docs/privacy.md §8, "GPX"). Nothing is quoted.
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
from typing import Any, NamedTuple
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


def chunks(path: Path, damage: Any = None) -> Iterator[Chunk]:
    """The points of the file, in the file's order, :data:`CHUNK` at a time:
    the same as :func:`tree_rows` (the reference), read faster.

    A file of the usual shape (UTF-8; tags, attributes and text, no
    comment, CDATA section, DOCTYPE, processing instruction, entity or
    character reference in a value read, but for comments and instructions
    with no ``<`` in them before the root, :data:`_MISC`; each point's ``<time>`` and
    ``<ele>`` before any child that holds elements) is read by a scanner
    of its text (its plain track points in numpy steps,
    :func:`_plain_points`), after the stdlib's expat parser (no handlers:
    its C speed) has found the same text well-formed (runs of plain points
    in clean text, well-formed whatever their values, left out of its
    check). On anything else (a damaged file included) the file is read
    from its start by :func:`framed_rows` (the reference: each point read
    from its own bytes, a damaged one dropped and counted in
    ``damage.records``), its chunks already given skipped, so the rows and
    their order are those of the reference. (The scanner reads only
    well-formed text with no comment, CDATA or instruction, no point in a
    point and no track in a track, where the reference's rows are the
    whole document's, as :func:`tree_rows` reads them.)

    ValueError (quoting nothing) when the file is not GPX (before any
    point); OSError when it cannot be read."""
    done = 0
    try:
        for chunk in _scan(path):
            yield chunk
            done += 1
        return
    except _Unusual:
        pass
    for k, rows in enumerate(framed_rows(path, damage)):
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


_DECLARATION = re.compile(f"<\\?xml{_S}[^>]*\\?>".encode())
_ENCODING = re.compile(f"encoding{_S}*={_S}*[\"']([^\"']*)[\"']".encode())
#: A comment or processing instruction before the root (an exporter's
#: banner, a stylesheet) with no ``<`` in it: so no track or point tag
#: (:data:`_START`) in it either, and the framed reader's head holds it
#: whole. expat checks it is well-formed (no ``--`` in a comment); a
#: second XML declaration is left to the framed reader.
_MISC = re.compile(f"{_S}*(?:<!--[^<]*?-->|<\\?(?![xX][mM][lL]{_S})[^<]*?\\?>)".encode())
_ROOT = re.compile(f"{_S}*<([^ \\t\\r\\n/>:]+:)?gpx[ \\t\\r\\n/>]".encode())


class _Points:
    """The points scanned so far (their texts, as Arrow string arrays), and
    where the scan is: the tracks begun, the ``<trk>`` elements open."""

    def __init__(self) -> None:
        self.pieces: list[tuple[Any, ...]] = []  # lon, lat, time, ele
        self.track: list[np.ndarray] = []
        self.n = 0
        self.ele = self.empty_time = False  # whether a point so far may have an elevation, no time
        self.tracks, self.open_tracks = -1, 0

    def __len__(self) -> int:
        return self.n

    def add(self, found: list[tuple[str, ...]]) -> None:
        """The constructs of :func:`_token`'s pattern, in order: the points
        kept, each with its track (-1: none); the constructs between them
        (few: the ``<trk>``, ``<trkseg>``... tags) move the tracks' count."""
        import pyarrow as pa

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
                if not closing and self.open_tracks > 0:
                    raise _Unusual  # a track in a track: the reference frames it
                self.tracks += not closing
                self.open_tracks += -1 if closing else 1
        if len(gaps) == len(name):  # no point: tags between them
            return
        tracks.append(self.tracks)
        opened.append(self.open_tracks)
        ends = np.array(gaps, dtype=np.int64) - np.arange(len(gaps))  # points before each gap
        runs = np.diff(np.concatenate([[0], ends, [len(name) - len(gaps)]]))
        track = np.repeat(np.where(np.array(opened) > 0, tracks, -1), runs)
        names = _without(name, gaps)
        if names.count("trkpt") != len(names):  # a route point or a waypoint: in no track
            track[np.fromiter(map("trkpt".__ne__, names), bool, len(names))] = -1
        columns = [_without(c, gaps) for c in (lon, lat, time, ele)]
        texts = (pa.array(c, type=pa.string()) for c in columns)
        self._put(*texts, track=track, ele=any(columns[3]), empty_time="" in columns[2])

    def add_texts(self, texts: tuple[Any, ...], ele: bool, empty_time: bool) -> None:
        """Track points read by :func:`_plain_points` (their texts: lon,
        lat, time, elevation), in the track the scan is in; ``ele``: whether
        one may have an elevation, ``empty_time``: whether one may have no
        time or an empty one."""
        track = np.full(len(texts[0]), self.tracks if self.open_tracks > 0 else -1)
        self._put(*texts, track=track, ele=ele, empty_time=empty_time)

    def _put(self, *texts: Any, track: np.ndarray, ele: bool, empty_time: bool) -> None:
        if len(track):
            self.pieces.append(texts)
            self.track.append(track)
            self.n += len(track)
            self.ele |= ele
            self.empty_time |= empty_time

    def take(self, n: int) -> Chunk:
        """The first ``n`` points, as a chunk, removed."""
        import pyarrow as pa
        import pyarrow.compute as pc

        # concatenated even when one: arrays that start at offset 0 (pyarrow 14's if_else, in
        # coerce_texts, misreads a sliced string array)
        lon, lat, time, ele = (pa.concat_arrays(list(c)) for c in zip(*self.pieces))
        rest = (lon.slice(n), lat.slice(n), time.slice(n), ele.slice(n))
        track = np.concatenate(self.track) if len(self.track) > 1 else self.track[0]
        self.pieces, self.track, self.n = [rest] if len(rest[0]) else [], [track[n:]], self.n - n
        xy, bad = coerce_texts(pa.concat_arrays([lon.slice(0, n), lat.slice(0, n)]))
        ele_values = coerce_texts(ele.slice(0, n))[0] if self.ele else np.full(n, np.nan)
        time = time.slice(0, n)
        if self.empty_time:  # no time or an empty one: none
            empty = np.asarray(pc.binary_length(time)) == 0
            time = time.take(pa.array(np.arange(n), mask=empty))
        return Chunk(xy[:n], xy[n:], bad[:n] | bad[n:], time, ele_values, _tracks(track[:n]))


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


# ------------------------------------------- plain track points, in numpy steps
def _key(tag: bytes) -> int:
    return int.from_bytes(tag, "little")


#: The tags the plain read knows (``<trkpt `` then its attributes, as
#: written by most writers): their codes, bytes and lengths.
_TAGS = ((1, b"<trkpt "), (2, b"<time>"), (3, b"</time>"), (4, b"<ele>"), (5, b"</ele>"), (6, b"</trkpt>"))
#: Which tag may follow which (0: any other tag between points; 7: any other
#: tag within a point, after its elevation and time: an extension's).
_NEXT = np.zeros((8, 8), dtype=bool)
for _a, _b in (
    (1, 2),
    (1, 4),
    (1, 6),
    (4, 5),
    (5, 2),
    (5, 6),
    (2, 3),
    (3, 6),
    (6, 1),
    (6, 0),
    (0, 0),
    (0, 1),
    (1, 7),
    (3, 7),
    (5, 7),
    (7, 7),
    (7, 6),
):
    _NEXT[_a, _b] = True
#: The names :func:`_token`'s pattern reads wherever they are (``_READ``):
#: within a point, among its extensions, one of them is not plain.
_READ_NAMES = tuple(
    (name, _key(name), (1 << 8 * len(name)) - 1)
    for name in (b"time", b"ele", b"trk", b"trkpt", b"rtept", b"wpt")
)
#: The bytes that end a tag's name (XML's white space, ``/``, ``>``).
_NAME_END = np.zeros(256, dtype=bool)
_NAME_END[[ord(c) for c in " \t\r\n/>"]] = True
#: Byte classes: 1 ``&`` or a carriage return (in no text read), 2 ``(``
#: (in no number), 4 a tab or a line feed (in no lat/lon: normalised).
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[[ord("&"), ord("\r")]] = 1
_CLASS[ord("(")] = 2
_CLASS[[ord("\t"), ord("\n")]] = 4
#: The attributes' starts, as integers, and masks of their 5 and 6 bytes.
_LAT, _LON, _SPACE_LAT, _SPACE_LON = (_key(t) for t in (b'lat="', b'lon="', b' lat="', b' lon="'))
_MASK5, _MASK6 = (1 << 40) - 1, (1 << 48) - 1
#: The most runs of other tags a block read by :func:`_plain_points` may hold.
_MAX_GAPS = 64


def _words(a: np.ndarray) -> np.ndarray:
    """``a`` (ending in 7 zero bytes) as the little-endian 8-byte integer at
    each of its bytes (a view: unaligned reads)."""
    return np.ndarray((len(a) - 7,), dtype="<u8", buffer=a, strides=(1,))


class _Plain(NamedTuple):
    """The plain track points of a block (:func:`_plain_points`)."""

    gaps: list[tuple[int, int, int]]  # the runs of other tags: (start, end, points before), in bytes
    texts: tuple[Any, ...]  # lon, lat, time, elevation: Arrow string arrays
    ele: bool  # whether a point has an elevation
    empty_time: bool  # whether a point has no time or an empty one
    runs: list[tuple[int, int]]  # the runs of points expat need not check (bytes), or none


def _plain_points(data: bytes) -> _Plain | None:
    """The track points of ``data`` (whole tags, well-formed: expat's check)
    written plainly -- ``<trkpt lat="..." lon="...">`` (or lon first, one
    space apart), then optionally ``<ele>``, then optionally ``<time>``,
    then ``</trkpt>``, no other tag within -- found in numpy steps, their
    texts as Arrow arrays over ``data``, the gaps between them (the runs
    of other tags) for :func:`_token`'s pattern. None when a point is not
    plain (:func:`_token`'s pattern reads the block): a value with a
    reference, a tab, a line end, a ``(`` in a number, other quoting or
    spacing, a prefix. The texts are those the pattern would find.

    Where the block's text has no character that could make it not
    well-formed inside the points or between them (:func:`_clean`), the
    runs of plain points are well-formed elements whatever their values:
    expat's check may leave them out (:func:`_scan`)."""
    import pyarrow as pa

    a = np.frombuffer(data + bytes(8), dtype=np.uint8)
    words = _words(a)
    lt = np.flatnonzero(a == ord("<"))
    if not len(lt):
        return _Plain([], (), False, False, [])
    w = words[lt]
    code = np.zeros(len(lt), dtype=np.int64)
    for c, tag in _TAGS:
        code[(w & np.uint64((1 << 8 * len(tag)) - 1)) == np.uint64(_key(tag))] = c
    inner = _inner_tags(code)
    if inner.any():
        if not _plain_extensions(a, words, lt[inner]):
            return None
        code[inner] = 7
    if (
        code[0] not in (0, 1)
        or code[-1] not in (0, 6)
        or not _NEXT[code[:-1], code[1:]].all()
        or not (code == 1).any()
    ):
        return None
    gap_starts = np.flatnonzero((code == 0) & np.concatenate([[True], code[:-1] != 0]))
    if len(gap_starts) > _MAX_GAPS:
        return None
    first = np.flatnonzero(code == 1)  # each point's tags: its start, maybe ele, maybe time, its end
    at = lt[first]
    # the attributes: 'lat="' or 'lon="' right after '<trkpt ', the other one space after its value,
    # the start tag's first '>' right after
    quotes = np.flatnonzero(a == ord('"'))
    k = np.searchsorted(quotes, at + 11)
    if k[-1] + 3 >= len(quotes):
        return None
    q0, q1, q2, q3 = quotes[k], quotes[k + 1], quotes[k + 2], quotes[k + 3]
    gt = np.flatnonzero(a == ord(">"))
    ends = gt[np.minimum(np.searchsorted(gt, at), len(gt) - 1)]
    one, other = words[at + 7] & np.uint64(_MASK5), words[q1 + 1] & np.uint64(_MASK6)
    lat_first = (one == np.uint64(_LAT)) & (other == np.uint64(_SPACE_LON))
    if not (
        (q0 == at + 11).all()
        and (q2 == q1 + 6).all()
        and (q3 + 1 == ends).all()
        and (lat_first | (one == np.uint64(_LON)) & (other == np.uint64(_SPACE_LAT))).all()
    ):
        return None
    ele = _child(code, lt, first, 4, ends)
    time = _child(code, lt, first, 2, ele[1])
    # one string array over the data: per point, lat/lon values and the two texts, each then a gap
    offsets = np.column_stack([q0 + 1, q1, q2 + 1, q3, ele[0], ele[1], time[0], time[1]]).ravel()
    if _forbidden(data, a, offsets):
        return None
    texts = pa.StringArray.from_buffers(
        len(offsets) - 1, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)
    )
    step = np.arange(0, len(offsets), 8)
    lat = step + np.where(lat_first, 0, 2)
    n = len(step)
    picked = texts.take(pa.array(np.concatenate([2 * step + 2 - lat, lat, step + 6, step + 4])))
    before = np.searchsorted(first, gap_starts)  # the points before each gap, the next one its end
    bounds = [
        (int(lt[g]), int(at[b]) if b < len(at) else len(data), int(b)) for g, b in zip(gap_starts, before)
    ]
    runs = []
    if _clean(data, a[: len(data)]) and not inner.any():  # extensions: expat checks them
        stop = lt[np.flatnonzero(code == 6)] + len(b"</trkpt>")
        edges = [0, *before.tolist(), n]
        runs = [(int(at[i]), int(stop[j - 1])) for i, j in zip(edges, edges[1:]) if j > i]
    empty_time = bool((time[0] == time[1]).any())
    texts = tuple(picked.slice(j * n, n) for j in range(4))
    return _Plain(bounds, texts, bool((code == 4).any()), empty_time, runs)


def _inner_tags(code: np.ndarray) -> np.ndarray:
    """Which tags of unknown code (0) lie within a point: after a
    ``<trkpt `` (1) with no ``</trkpt>`` (6) since."""
    marks = np.where((code == 1) | (code == 6), np.arange(len(code)), -1)
    last = np.maximum.accumulate(marks)
    before = np.concatenate([[-1], last[:-1]])
    return (code == 0) & (before >= 0) & (code[np.maximum(before, 0)] == 1)


def _plain_extensions(a: np.ndarray, words: np.ndarray, lt: np.ndarray) -> bool:
    """Whether the tags at ``lt`` (within points, after their children read)
    are elements' start or end tags whose names, with any one prefix, are
    none that :func:`_token`'s pattern reads (a time, an elevation, a track
    or a point): then the pattern passes over them, as ElementTree does.
    Not a comment, CDATA or an instruction (``<!``, ``<?``)."""
    start = lt + 1
    if np.isin(a[start], (ord("!"), ord("?"))).any():
        return False
    start = start + (a[start] == ord("/"))
    ends = np.flatnonzero(_NAME_END[a])
    end = ends[np.minimum(np.searchsorted(ends, start), len(ends) - 1)]
    colons = np.flatnonzero(a == ord(":"))
    if len(colons):
        colon = colons[np.minimum(np.searchsorted(colons, start), len(colons) - 1)]
        start = np.where((colon >= start) & (colon < end), colon + 1, start)
    size = end - start
    w = words[np.minimum(start, len(words) - 1)]
    for name, key, mask in _READ_NAMES:
        if ((size == len(name)) & ((w & np.uint64(mask)) == np.uint64(key))).any():
            return False
    return True


def _clean(data: bytes, a: np.ndarray) -> bool:
    """Whether ``data`` (``a``: its bytes) holds no reference, no ``]]>``,
    no control character but a tab or a line end, no U+FFFE or U+FFFF:
    character data and plain points' values without a character that XML
    refuses there (its text is UTF-8: the scan's check)."""
    if b"&" in data or b"]" in data and b"]]>" in data:
        return False
    if not data.isascii() and (b"\xef\xbf\xbe" in data or b"\xef\xbf\xbf" in data):
        return False
    return not ((a < 32) & (a != ord("\n")) & (a != ord("\t")) & (a != ord("\r"))).any()


def _forbidden(data: bytes, a: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether a byte the pattern does not read there is in a text: a
    ``&`` or a carriage return in any, a ``(`` in a number, a tab or a
    line feed in a lat/lon. ``a``: ``data``'s bytes (and more), ``offsets``:
    each point's eight, the texts starting at the even ones (lat/lon,
    lat/lon, elevation, time)."""
    odd = a == ord("\n")
    if b"&" in data or b"\r" in data or b"(" in data or b"\t" in data:  # not in most files
        odd |= (a == ord("\t")) | (a == ord("\r")) | (a == ord("&")) | (a == ord("("))
    at = np.flatnonzero(odd)
    slot = (np.searchsorted(offsets, at, side="right") - 1) % 8  # 0, 2, 4, 6: in a text
    kind = _CLASS[a[at]]
    return bool(((slot < 4) & (slot % 2 == 0) | (slot == 4) & (kind < 4) | (slot == 6) & (kind == 1)).any())


def _child(
    code: np.ndarray, lt: np.ndarray, first: np.ndarray, tag: int, after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Where each point's ``<ele>`` (``tag`` 4) or ``<time>`` (2) text is,
    from its start tag to the next ``<``; an empty span at ``after`` where the
    point has none (so the spans stay in order)."""
    start, end = after.copy(), after.copy()
    where = np.flatnonzero(code == tag)
    owner = np.searchsorted(first, where) - 1  # the point each one is in
    start[owner] = lt[where] + (6 if tag == 2 else 5)
    end[owner] = lt[where + 1]
    return start, end


def _scan(path: Path) -> Iterator[Chunk]:
    """:func:`chunks` by the scanner; _Unusual where it stops."""
    parser = expat.ParserCreate(None, "}")  # as ElementTree's, without its handlers
    decoder = codecs.getincrementaldecoder("utf-8")()
    points = _Points()
    token: re.Pattern[str] | None = None
    prefix, text = "", b""
    closed = False  # whether the root may have ended: plain points after it are not well-formed
    with open(path, "rb") as f:
        final = False
        while not final:
            data = f.read(_BLOCK)
            final = len(data) < _BLOCK  # a file's read is short at its end only
            if b"\x00" in data:
                raise _Unusual  # UTF-16 without a mark, or not XML
            try:
                if not data.isascii() or decoder.getstate()[0] or final:
                    decoder.decode(data, final)  # UTF-8? (its text is decoded where the pattern reads it)
            except UnicodeDecodeError:
                raise _Unusual from None
            text += data
            start = 0
            if token is None:
                start = _prolog(text)
                root = _ROOT.match(text, start)
                if root is None:
                    if final or len(text) > _CARRY:
                        raise _Unusual  # the reference says why (not GPX), or reads it
                    continue
                prefix = (root.group(1) or b"").decode("utf-8")
                token = _token(prefix)
                _check(parser, text[:start], False)
            cut = len(text) if final else _cut(text, prefix.encode("utf-8"))
            if cut <= start and len(text) - start > _CARRY:
                raise _Unusual  # a point longer than _CARRY
            block = text[start:cut]
            plain = _plain_points(block) if not prefix else None
            _check(parser, _left_to_check(block, plain, closed), final)
            closed = closed or b"</gpx" in block
            _read(block, token, plain, points)
            text = text[cut:]
            while len(points) >= CHUNK:
                yield points.take(CHUNK)
    if len(points):
        yield points.take(len(points))


def _check(parser: Any, text: bytes, final: bool) -> None:
    """expat's check of the file's next text; _Unusual where it is not well-formed."""
    try:
        parser.Parse(text, final)
    except expat.ExpatError:
        raise _Unusual from None


def _left_to_check(block: bytes, plain: _Plain | None, closed: bool) -> bytes:
    """The text of ``block`` expat must check: without its runs of plain
    points, which are well-formed elements (:func:`_plain_points`), where
    they lie within the root (no ``</gpx`` before them, here or earlier)."""
    if plain is None or not plain.runs or closed:
        return block
    end = block.find(b"</gpx")
    if 0 <= end < plain.runs[-1][1]:
        return block
    keep = [0, *itertools.chain.from_iterable(plain.runs), len(block)]
    return b"".join(block[a:b] for a, b in zip(keep[::2], keep[1::2]))


def _read(block: bytes, token: re.Pattern[str], plain: _Plain | None, points: _Points) -> None:
    """The points of ``block`` (whole tags) into ``points``: the plain
    track points in numpy steps (``plain``: :func:`_plain_points`, in a file
    without a prefix), the rest by ``token``'s pattern."""
    if plain is None:
        _by_pattern(block, token, points)
        return
    done = 0
    for a, b, before in plain.gaps:
        if before > done:
            points.add_texts(
                tuple(c.slice(done, before - done) for c in plain.texts), plain.ele, plain.empty_time
            )
        _by_pattern(block[a:b], token, points)
        done = before
    if plain.texts and len(plain.texts[0]) > done:
        points.add_texts(tuple(c.slice(done) for c in plain.texts), plain.ele, plain.empty_time)


def _by_pattern(block: bytes, token: re.Pattern[str], points: _Points) -> None:
    found = token.findall(block.decode("utf-8"))
    if found:
        points.add(found)


def _cut(text: bytes, prefix: bytes) -> int:
    """Where to stop the scan of a block's text: at its last point's start
    (no point is cut in two), else at its last tag's (every tag is whole)."""
    at = max(text.rfind(b"<" + prefix + name) for name in (b"trkpt", b"rtept", b"wpt"))
    return max(at if at >= 0 else text.rfind(b"<"), 0)


def _prolog(text: bytes) -> int:
    """Where the scan of a file's text begins: after a byte-order mark, an
    XML declaration, which must name UTF-8 or no encoding, and comments and
    processing instructions with no ``<`` in them (:data:`_MISC`)."""
    start = len(codecs.BOM_UTF8) if text.startswith(codecs.BOM_UTF8) else 0
    decl = _DECLARATION.match(text, start)
    if decl is not None:
        encoding = _ENCODING.search(decl.group())
        if encoding is not None and encoding.group(1).lower() != b"utf-8":
            raise _Unusual
        start = decl.end()
    while (misc := _MISC.match(text, start)) is not None:
        start = misc.end()
    return start


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

    ValueError (quoting nothing) when the file is not GPX, or where it
    stops being well-formed XML: after the points whose elements ended
    before (given, the last chunk short)."""
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
        broken = True
    else:
        broken = False
    if batch:
        yield batch  # the points before a break too: each read alone
    if broken:
        raise ValueError("not well-formed XML")


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


# ------------------------------------------------------- the framed reader
#: Where a track or a point begins, found in the bytes alone: ``<``, any
#: prefix, the name, then white space, ``/`` or ``>``. No byte of a match but
#: its first is ``<``, so whether a ``<`` begins a match is decided by the
#: bytes after it up to the next ``<``: no byte before it can make or unmake
#: it (docs/privacy.md §8, "GPX").
_START = re.compile(b"<(?:[^ \\t\\r\\n<>/:]{1,4096}:)?(trk|trkpt|rtept|wpt)[ \\t\\r\\n/>]")
#: A track's end tag, found the same way.
_END_TRK = re.compile(b"</(?:[^ \\t\\r\\n<>/:]{1,4096}:)?trk[ \\t\\r\\n>]")
#: The longest segment (a point, or a track's start up to its first point)
#: held in memory: one longer is dropped as broken, read no further.
_SEGMENT = 1 << 26
_KEEP = 1 << 13  # bytes kept from an overlong segment's end: a match may run over it
_XML_ENCODING = re.compile(b"^\\s*(?:\\xef\\xbb\\xbf)?<\\?xml[^>]*?encoding\\s*=\\s*[\"']([^\"']*)[\"']")


class _HeadEnded(Exception):
    """The element a segment begins with has ended: its row is read."""


class _Segment:
    """What one segment's bytes give, parsed alone: whether the element
    it begins with ended within them (``ended``), and a point's ``lat``,
    ``lon``, ``<time>`` and ``<ele>`` texts (its last direct children of
    those names, as ElementTree's ``text``)."""

    def __init__(self, data: bytes, encoding: str | None) -> None:
        self.ended = False
        self.attrs: dict[str, str] = {}
        self.texts: dict[str, str | None] = {}
        self._depth, self._child, self._grandchild = 0, "", False
        self._parts: list[str] = []
        parser = expat.ParserCreate(encoding)
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._data
        parser.buffer_text = True
        try:
            parser.Parse(data, True)
        except (_HeadEnded, expat.ExpatError):
            pass

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self._depth += 1
        if self._depth == 1:
            self.attrs = attrs
        elif self._depth == 2:
            self._child, self._parts, self._grandchild = _local_name(name), [], False
        else:
            self._grandchild = True

    def _end(self, name: str) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.ended = True
            raise _HeadEnded
        if self._depth == 1 and self._child in ("time", "ele"):
            self.texts[self._child] = "".join(self._parts) if self._parts else None

    def _data(self, text: str) -> None:
        if self._depth == 2 and not self._grandchild:
            self._parts.append(text)


def _local_name(name: str) -> str:
    return name.rsplit(":", 1)[-1]


def framed_rows(path: Path, damage: Any = None) -> Iterator[list[Row]]:
    """The points of the file, in the file's order, :data:`CHUNK` at a
    time, each read from its own bytes: the reference of :func:`chunks`.

    The file is cut, by its bytes alone (:data:`_START`), at every start tag
    of a ``<trk>``, ``<trkpt>``, ``<rtept>`` or ``<wpt>`` (any prefix),
    wherever it is; each piece (a *segment*: from one such tag to the next)
    is parsed alone, so nothing before a segment changes how it is read. A
    point is a row when its element ends within its segment; one that does
    not (damaged, cut, or holding another point) is dropped, counted in
    ``damage.records`` (when given). A ``<trk>`` tag begins the next track
    (numbered from 0); a track point belongs to the last track begun unless
    that track's element ended in its own segment or a ``</trk>`` tag lies in
    a segment since. What is before the first such tag (the prolog, the
    ``<gpx>`` root's start tag, the metadata) is read for the root and
    the declared encoding only.

    On well-formed XML with no such tag in a comment, CDATA section,
    processing instruction or DOCTYPE, no point in a point and no track in
    a track (every file of the usual shape), the rows are :func:`tree_rows`'s.
    ValueError (quoting nothing) when the file is not GPX (its root, before
    any track or point, is not ``<gpx>``) or not in UTF-8 or a one-byte
    encoding; OSError when it cannot be read."""
    batch: list[Row] = []
    track, in_track = -1, False
    encoding: str | None = None
    buf, kind, overlong, closes = b"", b"", False, False  # kind b"": the file's head
    with open(path, "rb") as f:
        final = False
        while not final:
            data = f.read(_BLOCK)
            final = len(data) < _BLOCK
            buf += data
            ends = [m.start() for m in _START.finditer(buf, 1 if kind else 0)]
            if final:
                ends.append(len(buf))
            pos = 0
            for end in ends:
                seg = buf[pos:end]
                if not kind:
                    encoding = _head(seg)
                else:
                    closes = closes or _END_TRK.search(seg) is not None
                    got = None if overlong else _Segment(seg, encoding)
                    ended = got is not None and got.ended
                    if kind == b"trk":
                        track += 1
                        in_track = not (closes or ended)
                    else:
                        if got is None or not ended:
                            if damage is not None:
                                damage.records += 1
                        else:
                            batch.append(_segment_row(got, track if kind == b"trkpt" and in_track else None))
                            if len(batch) == CHUNK:
                                yield batch
                                batch = []
                        in_track = in_track and not closes
                if end < len(buf):
                    head = _START.match(buf, end)
                    assert head is not None
                    kind, overlong, closes = head.group(1), False, False
                pos = end
            buf = buf[pos:]
            if not final and len(buf) > _SEGMENT:
                if not kind:
                    raise ValueError("not a GPX file (no <gpx> root element in its first bytes)")
                # dropped as broken: only its track end tags still count (a match runs over no cut)
                overlong = True
                closes = closes or _END_TRK.search(buf, 0, len(buf) - _KEEP) is not None
                buf = b" " + buf[len(buf) - _KEEP :]
    if batch:
        yield batch


def check_head(path: Path) -> None:
    """Refuse the file from its head alone, before any record: its bytes
    before the first track or point tag (:data:`_START`), as
    :func:`framed_rows` reads them (the prolog, the root's start tag, the
    metadata: the envelope). ValueError (quoting nothing) where the head has
    no ``<gpx>`` root, is not well-formed, is not in UTF-8 or a one-byte
    encoding, or runs past :data:`_SEGMENT` bytes; :func:`framed_rows`
    raises the same there, at its first segment. OSError when the file
    cannot be read."""
    buf = b""
    with open(path, "rb") as f:
        while True:
            data = f.read(_BLOCK)
            # a match is at most 4,104 bytes long: it may begin in the last block read
            found = _START.search(buf + data, max(len(buf) - 8192, 0))
            buf += data
            if found is not None:
                buf = buf[: found.start()]
                break
            if len(data) < _BLOCK:
                break
            if len(buf) > _SEGMENT:
                raise ValueError("not a GPX file (no <gpx> root element in its first bytes)")
    _head(buf)


def _head(data: bytes) -> str | None:
    """The encoding the XML declaration of the file's head names (None:
    UTF-8); ValueError where the head has no ``<gpx>`` root or is not in
    UTF-8 or a one-byte encoding."""
    if b"\x00" in data:
        raise ValueError("not GPX in UTF-8 or a one-byte encoding (convert it to UTF-8)")
    m = _XML_ENCODING.match(data)
    encoding = m.group(1).decode("ascii", "replace") if m else None
    names: list[str] = []

    def start(name: str, attrs: Any) -> None:
        names.append(name)
        raise _HeadEnded

    parser = expat.ParserCreate(encoding)
    parser.StartElementHandler = start
    try:
        parser.Parse(data, False)
    except _HeadEnded:
        pass
    except (expat.ExpatError, LookupError):
        raise ValueError("not well-formed XML before its <gpx> root") from None
    if not names or _local_name(names[0]) != "gpx":
        raise ValueError("not a GPX file (its root element is not <gpx>)")
    return encoding


def _segment_row(got: _Segment, track: int | None) -> Row:
    lon, bad_lon = _number(got.attrs.get("lon"))
    lat, bad_lat = _number(got.attrs.get("lat"))
    ele, _ = _number(got.texts.get("ele"))
    return lon, lat, bad_lon or bad_lat, got.texts.get("time"), ele, track


__all__ = ["CHUNK", "COLUMNS", "Chunk", "Row", "check_head", "chunks", "columns", "framed_rows", "tree_rows"]
