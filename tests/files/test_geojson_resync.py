"""A broken feature of one unit never hides another unit's features
(privacy review: before, text that was not valid JSON ended the read, so a
unit that added one damaged record to a file of several units removed every
later feature, other units' included, and the two inputs were not
neighbours).

D is a GeoJSON FeatureCollection of several units, written one feature per
line (as GDAL, QGIS and geopandas' ``to_file`` write it), pretty-printed
(``json.dump(..., indent=2)``), or with members after its features. D' adds,
anywhere among the features, the bytes of one unit "A" that an adversary
chose: an unterminated string, brackets that never close or that close the
features array early and open a member after it, a cut feature. The other
units' rows read from D' are D's rows, value for value; A's bytes can only
add A's own records (or records of whatever unit A's bytes name).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from pointfiles import FIT, feature

from dpdbscan.files import geojsonfile, read_input

from clirun import run

pytest.importorskip("pyarrow")

GOOD = [
    feature(116.3 + 0.001 * (i % 9), 39.9 + 0.001 * (i % 5), {"unit": f"u{i % 4}", "t": i}) for i in range(24)
]
_A = '"properties": {"unit": "A"}, "geometry": {"type": "Point", "coordinates": [116.31, 39.91]}'
#: One unit's bytes, each not valid JSON in its place.
BROKEN = {
    "open string": '{"type": "Feature", "properties": {"unit": "A", "x": "no end',
    "open array": '{"type": "Feature", ' + _A + ', "x": [',
    "open object": '{"type": "Feature", ' + _A + ', "x": {"y": ',
    "early end, open member": '{"type": "Feature", ' + _A + '}], "x": [0',
    "early end": '{"type": "Feature", ' + _A + "}]",
    "early end of all": '{"type": "Feature", ' + _A + "}\n]\n}",
    "array swallowing": "[1, ",
    "bare open array": "[",
    "escape at the end": '{"a": "\\',
    "a quote": '"',
    "valid, then open": '{"type": "Feature", ' + _A + "}, [",
    "lines of its own": '{"a": "\n{"b": [1, {\n{"type": "Feature", "properties": {"unit": "A"}, "x": [',
    "deep and open": '{"a": ' + "[" * 3000 + '"\n',
    "cut": '{"type": "Feature", "geometry": {"type": "Poi',
}


def _one_per_line(lines):
    return '{\n"type": "FeatureCollection",\n"features": [\n' + ",\n".join(lines) + "\n]\n}\n"


def _pretty(lines):
    return '{\n  "type": "FeatureCollection",\n  "features": [\n' + ",\n".join(lines) + "\n  ]\n}\n"


def _members_after(lines):
    return (
        '{\n"type": "FeatureCollection",\n"features": [\n'
        + ",\r\n".join(lines)
        + '\n],\n"bbox": [116.0, 39.6, 116.6, 40.2],\n"name": "x"\n}\n'
    )


def _cr(wrap):
    """``wrap`` with every line ended by a carriage return alone (old Mac
    text): a line break as ``\n`` is, for JSON and for the search."""
    return lambda lines: wrap(lines).replace("\r\n", "\n").replace("\n", "\r")


LAYOUTS = {
    "one per line": (_one_per_line, [json.dumps(f) for f in GOOD]),
    "pretty": (_pretty, [json.dumps(f, indent=2) for f in GOOD]),
    "members after, CRLF": (_members_after, [json.dumps(f) for f in GOOD]),
    "one per line, CR": (_cr(_one_per_line), [json.dumps(f) for f in GOOD]),
    "pretty, CR": (_cr(_pretty), [json.dumps(f, indent=2).replace("\n", "\r") for f in GOOD]),
}


def _others(got):
    """The rows of every unit but A (rows with a point and a unit)."""
    units = got.units.to_pylist()
    keep = np.array([u is not None and u != b"A" for u in units]) & np.isfinite(got.X).all(axis=1)
    return got.X[keep], [u for u, k in zip(units, keep) if k]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("broken", list(BROKEN))
def test_one_units_broken_bytes_leave_the_other_units_rows_as_they_are(tmp_path, layout, broken):
    wrap, lines = LAYOUTS[layout]
    path = tmp_path / "d.geojson"
    path.write_text(wrap(lines))
    d = read_input(path, unit="unit")
    assert d.X.shape == (len(GOOD), 2) and d.n_damaged_records == 0
    for at in (0, 1, len(lines) // 2, len(lines)):
        path.write_text(wrap(lines[:at] + [BROKEN[broken]] + lines[at:]))
        d1 = read_input(path, unit="unit")
        X, units = _others(d1)
        assert X.tobytes() == d.X.tobytes(), at
        assert units == d.units.to_pylist(), at


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_unit_whose_only_record_is_broken_leaves_the_release_as_it_was(capsys, tmp_path, layout):
    """End to end: a seeded person-level fit of D' (one more unit, whose
    only feature is broken) releases exactly what the fit of D releases,
    charged the same; the note counts the break."""
    wrap, lines = LAYOUTS[layout]
    d, d1 = tmp_path / "d.geojson", tmp_path / "d1.geojson"
    d.write_text(wrap(lines))
    d1.write_text(wrap(lines[:5] + [BROKEN["open array"]] + lines[5:]))
    opts = ["--unit", "unit", "--delta", "1e-6", "--max-cells-per-unit", "2", "--min-samples", "2"]
    rc, _, err = run(capsys, "fit", d, *FIT, *opts, "--out-dir", tmp_path, "--name", "a")
    assert rc == 0, err
    rc, _, err1 = run(capsys, "fit", d1, *FIT, *opts, "--out-dir", tmp_path, "--name", "b")
    assert rc == 0, err1
    a, b = (json.loads((tmp_path / f"{n}.spans.json").read_text()) for n in "ab")
    assert a["histogram"] and a["histogram"] == b["histogram"] and a["spans"] == b["spans"]
    assert a["privacy"] == b["privacy"]
    assert "not valid JSON in 1 place(s)" in err1 and "not valid JSON" not in err


@pytest.mark.parametrize("indent", [None, 1, 2, "\t"])
@pytest.mark.parametrize("after", [False, True])
def test_a_valid_file_reads_the_same_with_or_without_the_search(tmp_path, indent, after):
    """Valid JSON never breaks, so the reader that goes on after a break
    reads exactly the features the strict one reads, in any layout
    (objects of an envelope's member written over lines included)."""
    feats = [*GOOD, [1, 2], {"type": "Feature"}, "text", {"a": [{"b": ']}"{['}]}]
    top = {"type": "FeatureCollection", "features": feats}
    if after:
        top = {"features": feats, "type": "FeatureCollection", "foo": [{"type": "Point"}, {"b": [2]}]}
    path = tmp_path / "v.geojson"
    path.write_text(json.dumps(top, indent=indent))
    damage = geojsonfile.Damage()
    assert list(geojsonfile.features(path, damage)) == list(geojsonfile.features(path)) == feats
    assert damage.records == 0 and not damage.ended


def test_features_in_a_member_after_the_features_are_read(tmp_path):
    """After the features' ``]``, a line that begins a Feature is read as
    one: that is where a unit's bytes that close the array early
    (``}], "x": [``) leave the other units' features, in a file that is
    then valid JSON. A writer's own member after the features holds no
    Feature (objects of other types there are no records)."""
    lines = [json.dumps(f) for f in GOOD[:3]]
    hidden = '{"type": "Feature", ' + _A + '}], "x": [0,\n' + ",\n".join(lines) + "\n]}\n"
    path = tmp_path / "h.geojson"
    path.write_text('{"type": "FeatureCollection", "features": [\n' + hidden)
    json.loads(path.read_text())  # valid JSON, whose features are A's alone
    got = read_input(path, unit="unit")
    assert got.X.shape == (4, 2) and got.units.to_pylist()[1:] == [b"u0", b"u1", b"u2"]


# --------------------------------------------------------------------------- long features

LIMIT = 400  # geojsonfile.MAX_RECORD in these tests (64 Mi characters in the library)


def _long_feature(length: int, indent) -> str:
    """A valid feature of unit A whose text (in the layout's indent) is ``length`` characters."""
    f = {"type": "Feature", "properties": {"unit": "A", "note": ""}, "geometry": GOOD[0]["geometry"]}
    f["properties"]["note"] = "n" * (length - len(json.dumps(f, indent=indent)))
    text = json.dumps(f, indent=indent)
    assert len(text) == length
    return text


@pytest.mark.parametrize("layout", ["one per line", "pretty", "pretty, CR"])
@pytest.mark.parametrize("at", [0, 11, 24])
@pytest.mark.parametrize("piece", [16, 1 << 20])
def test_a_feature_longer_than_the_limit_is_one_broken_feature(tmp_path, monkeypatch, layout, at, piece):
    """A feature longer than the limit is dropped as a broken one is,
    counted, and reading goes on after it: the other units' rows are the
    file's; one at the limit is read. Whatever the pieces the file is read
    in (a feature of 2 GiB was held and decoded whole, minutes and gigabytes
    for one unit's record; the rule of CSV lines, docs/privacy.md section 8)."""
    monkeypatch.setattr(geojsonfile, "MAX_RECORD", LIMIT, raising=False)
    monkeypatch.setattr(geojsonfile, "_READ", piece)
    wrap, lines = LAYOUTS[layout]
    indent = 2 if layout.startswith("pretty") else None
    cr = (lambda t: t.replace("\n", "\r")) if layout.endswith("CR") else (lambda t: t)
    assert max(len(t) for t in lines) < LIMIT
    base = tmp_path / "base.geojson"
    base.write_text(wrap(lines), newline="")
    longer = tmp_path / "long.geojson"
    extra = [cr(_long_feature(LIMIT + 1, indent)), cr(_long_feature(LIMIT, indent))]
    longer.write_text(wrap([*lines[:at], *extra, *lines[at:]]), newline="")
    damage = geojsonfile.Damage()
    got = [f for f in geojsonfile.features(longer, damage) if f["properties"]["unit"] == "A"]
    assert damage.records == 1 and len(got) == 1 and len(got[0]["properties"]["note"]) > 0
    a, b = read_input(base, unit="unit"), read_input(longer, unit="unit")
    X, units = _others(b)
    assert (X.tobytes(), units) == (a.X.tobytes(), a.units.to_pylist())
    assert b.n_damaged_records == 1 and "longer than 64 Mi characters is one" in " ".join(b.notes())


def test_a_long_feature_is_read_in_time_linear_in_its_length(tmp_path, monkeypatch):
    """The stream held a value's text so far and decoded it again after each
    piece read (1 MB), copying it each time: a feature of n pieces cost n^2 / 2
    pieces of work (a 64 MB feature 7.6 s of CPU, 200 MB minutes). Each read
    now takes at least what is held, so the text held after each read adds
    up to a few times the file."""
    monkeypatch.setattr(geojsonfile, "_READ", 64)
    path = tmp_path / "one.geojson"
    path.write_text(_one_per_line([json.dumps(GOOD[0]), _long_feature(1 << 16, None), json.dumps(GOOD[1])]))
    held = []
    more = geojsonfile._Stream.more

    def counted(self):
        got = more(self)
        held.append(len(self.buf))
        return got

    monkeypatch.setattr(geojsonfile._Stream, "more", counted)
    assert len(list(geojsonfile.features(path, geojsonfile.Damage()))) == 3
    assert sum(held) < 8 * path.stat().st_size


def test_a_member_before_the_features_longer_than_the_limit_is_refused_quoting_nothing(tmp_path, monkeypatch):
    """The envelope is the writer's, read before any feature: too long a
    member there refuses the file (as a CSV header too long), naming nothing."""
    monkeypatch.setattr(geojsonfile, "MAX_RECORD", LIMIT, raising=False)
    path = tmp_path / "head.geojson"
    path.write_text('{"type": "FeatureCollection", "name": "' + "s" * LIMIT + '", "features": []}')
    with pytest.raises(ValueError, match="longer than 400 characters") as err:
        read_input(path)
    assert "sss" not in str(err.value)


# --------------------------------------------------------------------------- bytes that are not UTF-8

#: One unit's feature holding a byte that is not UTF-8 (written as U+00FF, then made 0xff)
NOT_UTF8 = {
    "in a string": '{"type": "Feature", "properties": {"unit": "A", "name": "caf\u00ff"}, '
    + '"geometry": {"type": "Point", "coordinates": [116.31, 39.91]}}',
    "between tokens": '{"type": "Feature", ' + _A + "\u00ff}",
    "a line of its own": '{"type": "Feature", ' + _A + "}\n\u00ff\u00ff",
}


def _bytes(text: str) -> bytes:
    return text.encode("utf-8").replace("\u00ff".encode(), b"\xff")


@pytest.mark.parametrize("layout", ["one per line", "pretty", "members after, CRLF", "one per line, CR"])
@pytest.mark.parametrize("bad", list(NOT_UTF8))
@pytest.mark.parametrize("piece", [16, 1 << 20])
def test_a_byte_that_is_not_utf8_breaks_its_own_feature_only(tmp_path, monkeypatch, layout, bad, piece):
    """A byte that is not UTF-8 in one unit's feature failed the decoding of
    the whole piece read (1 MB): within the file's first MB the file was
    refused as not JSON before its features (no release), later the piece's
    other features were lost, or every later one (docs/privacy.md section 8,
    round 10). Now it breaks the value that holds it alone."""
    monkeypatch.setattr(geojsonfile, "_READ", piece)
    wrap, lines = LAYOUTS[layout]
    path = tmp_path / "d.geojson"
    path.write_text(wrap(lines), newline="")
    d = read_input(path, unit="unit")
    for at in (0, len(lines) // 2, len(lines)):
        text = wrap(lines[:at] + [NOT_UTF8[bad]] + lines[at:])
        path.write_bytes(_bytes(text.replace("\n", "\r") if layout.endswith("CR") else text))
        d1 = read_input(path, unit="unit")
        X, units = _others(d1)
        assert (X.tobytes(), units) == (d.X.tobytes(), d.units.to_pylist()), at
        assert d1.n_damaged_records >= 1 and d1.n_read_before_damage is None


def test_a_unit_whose_feature_is_not_utf8_leaves_the_release_as_it_was(capsys, tmp_path):
    """End to end, the feature first (within the file's first MB: the file
    was refused before): a seeded person-level fit of D' releases D's."""
    wrap, lines = LAYOUTS["one per line"]
    d, d1 = tmp_path / "d.geojson", tmp_path / "d1.geojson"
    d.write_text(wrap(lines))
    d1.write_bytes(_bytes(wrap([NOT_UTF8["in a string"], *lines])))
    opts = ["--unit", "unit", "--delta", "1e-6", "--max-cells-per-unit", "2", "--min-samples", "2"]
    rc, _, err = run(capsys, "fit", d, *FIT, *opts, "--out-dir", tmp_path, "--name", "a")
    assert rc == 0, err
    rc, _, err1 = run(capsys, "fit", d1, *FIT, *opts, "--out-dir", tmp_path, "--name", "b")
    assert rc == 0, err1
    a, b = (json.loads((tmp_path / f"{n}.spans.json").read_text()) for n in "ab")
    assert a["histogram"] and a["histogram"] == b["histogram"] and a["spans"] == b["spans"]
    assert "not valid JSON in 1 place(s)" in err1
