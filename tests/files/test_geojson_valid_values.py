"""Valid JSON drops only its own feature, however unusual its values (the
red-team review of every door: before, one feature with an integer of more
than 4,300 digits, Python's limit for reading one, or with a value nested a
few thousand levels deep, read as damaged JSON, so the file "ended" there and
every later feature, every other unit's rows, was not read at all: one
record decided how much of the file was released).

D is a GeoJSON file of 300 points; D' adds one feature at the top with an
unusual but valid value in a coordinate, the unit, the time or a property no
option names. D' must read as D plus that one row, that row dropped (no
point, no unit or no time) or kept, never the end of the file.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from pointfiles import feature

from dpdbscan.files import read_columns, read_input

pytest.importorskip("pyarrow")

BIG = "7" * 5000  # an integer beyond Python's 4,300 digits
DEEP = "[" * 20_000 + "]" * 20_000  # nested far beyond Python's recursion limit
_AT = '{"type": "Feature", "geometry": {"type": "Point", "coordinates": [%s, 39.9]}, "properties": {%s}}'
ADDED = {
    "big coordinate": _AT % (BIG, '"unit": "u1", "t": 5'),
    "big unit": _AT % ("116.3", f'"unit": {BIG}, "t": 5'),
    "big time": _AT % ("116.3", f'"unit": "u1", "t": {BIG}'),
    "big other": _AT % ("116.3", f'"unit": "u1", "t": 5, "x": -{BIG}'),
    "big float": _AT % ("116.3", f'"unit": "u1", "t": 5, "x": {BIG}.5e-3'),
    "deep other": _AT % ("116.3", f'"unit": "u1", "t": 5, "x": {DEEP}'),
    "deep feature": DEEP,
    "deep with text": '{"a": "]]}}\\"[[", "b": ' + "[" * 5000 + '"]]"' + "]" * 5000 + "}",
}


def _file(path, added):
    rng = np.random.default_rng(8)
    feats = [
        json.dumps(feature(float(x), float(y), {"unit": f"u{i % 17}", "t": 1_211_018_400 + 60 * i}))
        for i, (x, y) in enumerate(rng.uniform([116.0, 39.6], [116.6, 40.2], (300, 2)))
    ]
    rows = ([added] if added is not None else []) + feats
    path.write_text('{"type": "FeatureCollection", "features": [\n' + ",\n".join(rows) + "\n]}\n")
    return path


@pytest.mark.parametrize("name", list(ADDED))
def test_one_unusual_valid_feature_never_ends_the_file(tmp_path, name):
    d = read_input(_file(tmp_path / "d.geojson", None), unit="unit")
    d1 = read_input(_file(tmp_path / "d1.geojson", ADDED[name]), unit="unit")
    assert d1.X.shape[0] == d.X.shape[0] + 1
    assert d1.X[1:].tobytes() == d.X.tobytes()
    assert d1.units[1:].equals(d.units)
    assert not any("not read" in n for n in d1.notes())
    t = read_columns(tmp_path / "d.geojson", "t")[0].to_pylist()
    t1 = read_columns(tmp_path / "d1.geojson", "t")[0].to_pylist()
    assert t1[1:] == t


def test_a_huge_integer_is_no_value_and_an_ordinary_one_is_itself(tmp_path):
    d1 = read_input(_file(tmp_path / "d1.geojson", ADDED["big unit"]), unit="unit")
    assert d1.units[0].as_py() is None  # no unit: the row is dropped
    d1 = read_input(_file(tmp_path / "d2.geojson", ADDED["big coordinate"]), unit="unit")
    assert np.isnan(d1.X[0]).any()


def test_text_that_is_not_json_drops_its_feature_and_reading_goes_on(tmp_path):
    """A feature that is not valid JSON (here brackets that never close) is
    dropped; the features on the lines after it are read as without it."""
    broken = "[" * 5000 + "}"
    d = read_input(_file(tmp_path / "d.geojson", None), unit="unit")
    d1 = read_input(_file(tmp_path / "d1.geojson", broken), unit="unit")
    assert d1.X.tobytes() == d.X.tobytes() and d1.units.equals(d.units)
    assert d1.n_damaged_records == 1 and d.n_damaged_records == 0
