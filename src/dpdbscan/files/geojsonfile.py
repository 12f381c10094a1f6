"""Points from GeoJSON: a FeatureCollection of Point features.

GeoJSON (RFC 7946) writes every position as longitude, latitude in WGS 84,
so a file is read as lon/lat (``x``, ``y``); a legacy ``crs`` member is not
read. The file is parsed as a stream, one feature at a time
(:func:`features`), so memory holds one chunk of features, whatever the
file's size.

GeoJSON has no schema: each feature carries its own properties, and each
value its own JSON type. So nothing in the file decides how a value is read.
The coordinates are the Point geometry's first two numbers; a feature whose
geometry is missing, not a Point, or whose coordinates are not numbers is
dropped and counted. A property named by the user (``--unit``, ``--time``,
``--trip-ends``: public options) is read in each feature alone: a unit by
its JSON value (text by its characters, a number by its exact value; the
rule of :mod:`dpdbscan.files.unitids` for ids that are not typed; missing,
null, a list or an object: no unit, the row is dropped and counted), a time
or status as the text of a string, number or boolean. Properties are never
listed or quoted (their names are data here, not a schema), and a file that
is not JSON, or not a FeatureCollection, is refused without quoting it.

Unlike a CSV line, a JSON feature has no end that can be found without
parsing it. So a feature that is not valid JSON (one broken feature, a file
cut short) is dropped, and reading goes on at the next line that begins
with ``{`` (:func:`_recovering`; :class:`Damage` counts the breaks, for a
private note); the release is made. No JSON string holds a line break, so
in a file written one feature per line or pretty-printed, one unit's bytes,
whatever they are, never change how another unit's features are read
(docs/privacy.md §8 gives the argument); where features share a line, a
break loses those after it on its line. The envelope before the features
is the file writer's, not a unit's, and is checked when the file is opened
(:func:`check_head`): a file whose ``"type"`` there is not
``"FeatureCollection"``, with no ``"features"``, or not valid JSON there is
refused before anything is read or charged. A ``"type"`` after the features
only makes a note. Valid JSON that is not a point never stops the read, and
a valid file is read the same with or without the search (it runs only
after a break). A feature longer than :data:`MAX_RECORD` (64 Mi characters)
is a broken one, its text never held past about twice that; a value of the
envelope before the features that long refuses the file.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from .records import MAX_LINE
from .unitids import canonical_id, id_token

#: Features converted at a time.
CHUNK = 1 << 15
_READ = 1 << 20  # bytes read from the file at a time, at least
_WS = " \t\n\r"
#: The longest value read among the features, in characters of its text (a
#: feature: 64 Mi, as a CSV line and a GPX point, docs/privacy.md section 8,
#: round 9): a longer one is dropped as a broken feature, counted, and
#: reading goes on at the next line that begins with ``{``
#: (:func:`_recovering`), its text never held past about twice the limit.
MAX_RECORD = MAX_LINE


class _Stream:
    """Text of a file read in pieces, with a position; what is behind the
    position is dropped as the position moves on."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f, self.buf, self.pos, self.eof = f, "", 0, False
        # bytes that are not UTF-8 become U+DC80..U+DCFF (no valid UTF-8 gives
        # those): they break the value that holds them, never the piece read
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="surrogateescape")
        #: whether any text read held such bytes
        self.escaped = False
        #: where a record began (kept when the position moves on, until the
        #: record is read), or None
        self.mark: int | None = None

    def more(self) -> bool:
        """Read on. At least as much as is held is read at once, so that a
        long value, held and decoded again after each read until it is
        whole, costs time linear in its length (1 MB at a time, a 200 MB
        feature was copied and decoded 200 times over: minutes)."""
        if self.eof:
            return False
        keep = self.pos if self.mark is None else min(self.pos, self.mark)
        data = self.f.read(max(_READ, len(self.buf) - keep))
        self.eof = not data
        text = self.decoder.decode(data, final=self.eof)
        if not self.escaped and _ESCAPED.search(text) is not None:
            self.escaped = True
        self.buf = self.buf[keep:] + text
        self.pos -= keep
        if self.mark is not None:
            self.mark -= keep
        return True

    def next_record_line(self) -> bool:
        """Move to the first line after the one holding the mark whose
        first character (after spaces and tabs) is ``{``: where the next
        record may begin; the mark is dropped. False at the end of the
        file. Only line breaks and that character are looked at: no string
        or bracket of what lies between decides where the search stops."""
        assert self.mark is not None
        i, self.mark = self.mark, None
        while True:
            m = _RECORD_LINE.search(self.buf, i)
            if m is not None:
                self.pos = m.end() - 1
                return True
            j = max(self.buf.rfind("\n", i), self.buf.rfind("\r", i))
            self.pos = j if j >= 0 else len(self.buf)
            if not self.more():
                return False
            i = 0

    def skip_ws(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, chars: str) -> str:
        c = self.skip_ws()
        if c == "" or c not in chars:
            raise ValueError("not the expected JSON")
        self.pos += 1
        return c

    def more_of_value(self, start: int) -> bool:
        """:meth:`more` for a value begun at ``start`` and not whole yet:
        :class:`TooLong` once its text is more than :data:`MAX_RECORD`
        characters."""
        if len(self.buf) - start > MAX_RECORD:
            raise TooLong(f"a value longer than {MAX_RECORD:,} characters")
        return self.more()

    def value(self, decoder: json.JSONDecoder) -> Any:
        """The next JSON value, read whole. Valid JSON beyond a limit of
        Python's decoder is read all the same, that value alone as
        :data:`NO_VALUE`: an integer of more digits than Python reads
        (4,300), or a value nested deeper than its recursion limit (the
        whole value, skipped); never the end of the stream. A value longer
        than :data:`MAX_RECORD` is :class:`TooLong` (a ValueError)."""
        self.skip_ws()
        while True:
            try:
                value, end = decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # a line break at or after the error: no more text can mend it
                # (no JSON token holds one, and no string may)
                if _LINE_BREAK.search(self.buf, exc.pos) is None and self.more_of_value(self.pos):
                    continue
                raise ValueError("not JSON") from None
            except RecursionError:
                self.skip_nested()
                return NO_VALUE
            except ValueError:
                if decoder is _LENIENT:
                    raise ValueError("not JSON") from None
                decoder = _LENIENT  # an integer too long for int(): that one is no value
                continue
            if end == len(self.buf) and not self.eof and isinstance(value, (int, float, _NoValue)):
                # a number may go on in the next piece
                if self.more_of_value(self.pos):
                    continue
            if end - self.pos > MAX_RECORD:  # whole in one read, but too long all the same
                raise TooLong(f"a value longer than {MAX_RECORD:,} characters")
            self.not_utf8(end)
            self.pos = end
            return value

    def not_utf8(self, end: int) -> None:
        """ValueError when the text from the position to ``end`` held bytes
        that are not UTF-8: JSON text is UTF-8 (RFC 8259), so the value is
        not JSON. One value alone (a byte of 0xff in a unit's feature
        failed the whole piece read, 1 MB of other units' features, or the
        whole file within its first MB: docs/privacy.md section 8, round 10)."""
        if self.escaped and _ESCAPED.search(self.buf, self.pos, end) is not None:
            raise ValueError("not UTF-8")

    def skip_nested(self) -> None:
        """Move past the array or object at the position without building
        it (iteratively, at any depth); ValueError when its brackets or
        strings do not close, or a string holds a control character (a
        line break: as the decoder, so that no string goes on past its
        line). Scalars inside it are not checked."""
        if self.skip_ws() not in ("[", "{"):
            raise ValueError("not JSON")
        closers: list[str] = []
        i, in_string = self.pos, False
        while True:
            m = (_IN_STRING if in_string else _OUTSIDE).search(self.buf, i)
            if m is None or (m.group() == "\\" and m.end() == len(self.buf)):
                # the value goes on in the next piece (an escape's character too)
                off = i - self.pos
                if not self.more_of_value(self.pos):
                    raise ValueError("not JSON")
                i = self.pos + off
                continue
            c, i = m.group(), m.end()
            if c < " ":
                raise ValueError("not JSON")
            if c == "\\":
                i += 1  # the escaped character
            elif c == '"':
                in_string = not in_string
            elif c in "[{":
                closers.append("]" if c == "[" else "}")
            elif not closers or closers.pop() != c:
                raise ValueError("not JSON")
            if not closers and not in_string:
                if i - self.pos > MAX_RECORD:
                    raise TooLong(f"a value longer than {MAX_RECORD:,} characters")
                self.not_utf8(i)
                self.pos = i
                return


class TooLong(ValueError):
    """A value longer than :data:`MAX_RECORD` characters: not read."""


class _NoValue:
    """A valid JSON value that Python's decoder cannot hold (too long an
    integer, too deep a value): no coordinate, no unit, no time."""

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE = _NoValue()


def _int_or_none(text: str) -> Any:
    try:
        return int(text)
    except ValueError:  # more digits than int() reads (sys.get_int_max_str_digits)
        return NO_VALUE


#: The decoder for a value the default one refuses for a limit, not for its syntax.
_LENIENT = json.JSONDecoder(parse_int=_int_or_none)
_IN_STRING = re.compile(r'["\\\x00-\x1f]')
#: A line break (``\n``, ``\r\n`` or ``\r`` alone: no JSON string holds
#: either), then a line whose first character is ``{`` (after spaces and
#: tabs): where a record may begin after a broken one.
_RECORD_LINE = re.compile(r"[\n\r][ \t]*\{")
_LINE_BREAK = re.compile(r"[\n\r]")
#: A byte that is not UTF-8, as the stream's decoder writes it.
_ESCAPED = re.compile("[\udc80-\udcff]")
_OUTSIDE = re.compile(r'["\[\]{}]')


def features(path: Path, damage: Damage | None = None) -> Iterator[Any]:
    """The features of a GeoJSON FeatureCollection, one at a time.

    ValueError (quoting nothing) when the file is not JSON or not a
    FeatureCollection: its structure, not a feature's values. With
    ``damage``, a feature that is not valid JSON is dropped instead, and
    reading goes on at the next line that begins with ``{``
    (:func:`_recovering`; counted in ``damage``); only the envelope's own
    breaks still raise."""
    decoder = json.JSONDecoder()
    with open(path, "rb") as f:
        s = _Stream(f)
        s.expect("{")
        kind, seen = None, False
        if s.skip_ws() == "}":
            raise ValueError("not a FeatureCollection")
        while True:
            key = s.value(decoder)
            s.expect(":")
            if key == "features":
                seen = True
                s.expect("[")
                if damage is not None:
                    yield from _recovering(s, decoder, damage, kind)
                    return
                if s.skip_ws() == "]":
                    s.pos += 1
                else:
                    while True:
                        yield s.value(decoder)
                        if s.expect(",]") == "]":
                            break
            else:
                value = s.value(decoder)
                if key == "type":
                    kind = value
            if s.expect(",}") == "}":
                break
        if kind != "FeatureCollection" or not seen:
            raise ValueError("not a FeatureCollection")


def check_head(path: Path) -> None:
    """Refuse (ValueError, quoting nothing) a file whose envelope, read up
    to its ``"features"`` member, is known not to be a FeatureCollection: a
    ``"type"`` member before the features that is not ``"FeatureCollection"``
    (a lone ``Feature``, a geometry, a TopoJSON ``Topology``), an object
    with no ``"features"`` member, or members before it that are not valid
    JSON. These bytes come before any feature, so they are the file's
    writer's, not a unit's: refusing on them makes no release hinge on one
    unit (docs/privacy.md §8). A ``"type"`` after the features is not read
    here: a feature's bytes can write a fake end of the collection and a
    ``"type"`` after it, so there it makes a note, never a refusal
    (:func:`_tail`). Only the head is read; no feature is."""
    decoder = json.JSONDecoder()
    try:
        with open(path, "rb") as f:
            s = _Stream(f)
            s.expect("{")
            if s.skip_ws() == "}":
                raise _NotACollection("it is an empty JSON object, not a FeatureCollection")
            while True:
                key = s.value(decoder)
                s.expect(":")
                if key == "features":
                    return
                value = s.value(decoder)
                if key == "type" and value != "FeatureCollection":
                    raise _NotACollection(
                        'its top-level "type" is not "FeatureCollection" (points are read from '
                        "a FeatureCollection of Point features)"
                    )
                if s.expect(",}") == "}":
                    raise _NotACollection('it has no "features" member: not a FeatureCollection')
    except _NotACollection:
        raise
    except TooLong:
        raise ValueError(
            f'a value before its "features" member is longer than {MAX_RECORD:,} characters'
        ) from None
    except ValueError:  # the stream's and the decoder's (UnicodeDecodeError too): quoted nothing
        raise ValueError('it is not valid JSON before its "features" member') from None


class _NotACollection(ValueError):
    """A head that is valid JSON but no FeatureCollection's (:func:`check_head`)."""


def _recovering(s: _Stream, decoder: json.JSONDecoder, damage: Damage, kind: Any) -> Iterator[Any]:
    """The features after the ``[`` of ``"features"``, each one a JSON
    object followed by ``,`` or ``]``. Where that breaks (a feature that is
    not valid JSON is dropped; one followed by anything else, or cut after,
    is kept, and what follows is not read as a feature), a place is counted
    in ``damage.records``, and reading goes on at the next line after the
    one where the feature began whose first character is ``{``
    (:meth:`_Stream.next_record_line`). A ``]`` ends nothing for sure (a
    broken feature can write one, and a fake end of the collection after
    it): the rest of the envelope is read for its ``type``, then the lines
    after the ``]`` are searched for features the same way (there, an
    object that is not a ``Feature`` is no record: an envelope's foreign
    member written over several lines is read as before).

    Why a unit's bytes cannot hide the next feature (docs/privacy.md §8):
    no JSON string holds a line break (the decoder refuses a control
    character in a string), so a feature that begins a line is tokenised
    the same whatever came before it; a value begun earlier that took it in
    would have to close at the collection's final ``}`` (its own ``{``
    cannot close on a ``]``, and every feature in between is balanced), and
    nothing after that is a ``,`` or ``]``, so the search for a record line
    starts again on the line after that value began (the value itself, begun
    in the unit's bytes, is one record of them). A value that is not an
    object (an array) can close on the features' ``]``; what follows that is
    the envelope's ``}`` or a member's name, which breaks there, so a break
    after a run of values that are not objects searches from the line after
    the run's first value began."""
    after_end = False  # past a "]": only features are records there
    if s.skip_ws() == "]":  # no features, or a broken first one's doing: read on after it too
        after_end = True
        s.mark = s.pos
        s.pos += 1
        kind = _tail(s, decoder, damage, kind)
        if not s.next_record_line():
            return
    run = False  # in a run of values that are not objects (the mark: where it began)
    while True:
        c = s.skip_ws()
        if c == "":  # cut after a feature's ","
            damage.records += 1
            return
        if not run:
            s.mark = s.pos  # where this record begins, kept until it is read
        ok = False
        try:
            value = s.value(decoder)
            ok = True
        except ValueError:
            pass
        if ok:
            if not after_end or _is_feature(value):
                yield value
            try:
                sep = s.expect(",]")
            except ValueError:
                ok = False
        if not ok:
            damage.records += 1
            run = False
            if not s.next_record_line():
                return
            continue
        run = c != "{"
        if not run:
            s.mark = None
        if sep == "]":
            after_end, run = True, False
            s.mark = s.pos - 1
            kind = _tail(s, decoder, damage, kind)
            if not s.next_record_line():
                return


def _is_feature(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "Feature"


def _tail(s: _Stream, decoder: json.JSONDecoder, damage: Damage, kind: Any) -> Any:
    """Read the envelope's members after the features' ``]`` (its
    ``type``, if it comes there): a place counted in ``damage.records``
    when they are not valid JSON, ``damage.ended`` when the file is no
    FeatureCollection (notes: every feature is read all the same)."""
    try:
        while s.expect(",}") == ",":
            key = s.value(decoder)
            s.expect(":")
            value = s.value(decoder)
            if key == "type":
                kind = value
    except ValueError:
        damage.records += 1
        return kind
    if kind != "FeatureCollection":
        damage.ended = True
    return kind


def point(feature: Any) -> tuple[float, float] | None:
    """``(lon, lat)`` of a Point feature, or None (one feature alone)."""
    if not isinstance(feature, dict):
        return None
    geometry = feature.get("geometry")
    if not isinstance(geometry, dict) or geometry.get("type") != "Point":
        return None
    xy = geometry.get("coordinates")
    if not isinstance(xy, list) or len(xy) < 2:
        return None
    x, y = xy[0], xy[1]
    if type(x) not in (int, float) or type(y) not in (int, float):
        return None
    try:
        x, y = float(x), float(y)
    except OverflowError:  # an integer beyond any float
        return None
    return None if math.isnan(x) or math.isnan(y) else (x, y)


def prop(feature: Any, name: str) -> Any:
    """The property ``name`` of a feature (None where it has none)."""
    props = feature.get("properties") if isinstance(feature, dict) else None
    return props.get(name) if isinstance(props, dict) else None


def unit_token(value: Any) -> bytes | None:
    """A unit id's token (:func:`dpdbscan.files.unitids.id_token`), or
    None for no unit: null, a list, an object."""
    if not isinstance(value, (str, int, float)):
        return None
    got = canonical_id(value)
    return None if got is None else id_token(got)


def text_of(value: Any) -> str | None:
    """A time's or status's text: a string as it is, a boolean as
    ``true``/``false``, a number as Python writes it; None otherwise, and
    for a string that is no text: one holding a lone surrogate (JSON's
    ``"\\udcff"`` escape is valid JSON, but no UTF-8), which failed the
    whole read before (round 8)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return None
        return value
    if isinstance(value, (int, float)):
        return repr(value)
    return None


class Damage:
    """Where a stream of features was damaged: ``ended`` is True when the
    file stopped being valid JSON (or a FeatureCollection) after ``rows``
    features; ``records`` counts the features dropped for not being valid
    JSON (a GeoJSON file read on after them). Private: a note for the data
    owner, never a refusal."""

    def __init__(self) -> None:
        self.ended, self.rows, self.units_seen, self.records = False, 0, 0, 0


def until_damaged(
    items: Iterator[Any], damage: Damage, rows: Callable[[Any], int] | None = None
) -> Iterator[Any]:
    """``items`` until a ValueError (the parser's: it quotes nothing), which
    ends the stream and is recorded in ``damage``; ``rows``: how many rows
    an item holds (one, by default)."""
    try:
        for item in items:
            damage.rows += 1 if rows is None else rows(item)
            yield item
    except ValueError:
        damage.ended = True


Chunk = tuple[np.ndarray, np.ndarray, "list[bytes | None] | None", "list[list[str | None]]"]


def chunks(
    path: Path, unit: str | None, also: tuple[str, ...] = (), damage: Damage | None = None
) -> Iterator[Chunk]:
    """``(X, not a point, unit tokens, texts of the properties ``also``)``
    of :data:`CHUNK` features at a time; with ``damage``, text that is not
    valid JSON ends the stream (recorded there) instead of raising."""
    batch: list[Any] = []
    stream = features(path) if damage is None else until_damaged(features(path, damage), damage)
    for feature in stream:
        batch.append(feature)
        if len(batch) == CHUNK:
            yield _convert(batch, unit, also, damage)
            batch = []
    if batch:
        yield _convert(batch, unit, also, damage)


def _convert(batch: list[Any], unit: str | None, also: tuple[str, ...], damage: Damage | None) -> Chunk:
    X = np.full((len(batch), 2), np.nan)
    bad = np.zeros(len(batch), dtype=bool)
    for i, feature in enumerate(batch):
        got = point(feature)
        if got is None:
            bad[i] = True
        else:
            X[i] = got
    units = None if unit is None else [unit_token(prop(f, unit)) for f in batch]
    if unit is not None and damage is not None:
        damage.units_seen += sum(1 for f in batch if has_prop(f, unit))
    return X, bad, units, [[text_of(prop(f, name)) for f in batch] for name in also]


def has_prop(feature: Any, name: str) -> bool:
    """Whether a feature has the property ``name`` (whatever its value)."""
    props = feature.get("properties") if isinstance(feature, dict) else None
    return isinstance(props, dict) and name in props


def column(path: Path, name: str) -> Iterator[list[str | None]]:
    """The texts of the property ``name`` (:func:`text_of`), feature for
    feature, :data:`CHUNK` at a time."""
    batch: list[str | None] = []
    for feature in features(path):
        batch.append(text_of(prop(feature, name)))
        if len(batch) == CHUNK:
            yield batch
            batch = []
    if batch:
        yield batch


__all__ = [
    "CHUNK",
    "Damage",
    "chunks",
    "column",
    "features",
    "has_prop",
    "point",
    "prop",
    "text_of",
    "unit_token",
    "until_damaged",
]
