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
