"""Points from GeoJSON and GPX files (dpdbscan.files.geojsonfile, .gpxfile).

Both are lon/lat by their definition and read as streams, one feature or
one point element at a time. A file must give the points of the same rows
written as CSV, bit for bit, and the same seeded release; a feature without
a point, a value that is not a number, a unit that is not an id drop their
row alone, counted and never quoted; a file that is not GeoJSON or GPX is
refused without quoting it.
"""

from __future__ import annotations

import json
import math
import sqlite3
import tracemalloc

import numpy as np
import pytest
from pointfiles import BOX, SECRET, feature, fit, same_release, write_geojson, write_gpx, write_points

from dpdbscan.files import geojsonfile, open_input, read_columns, read_input

from clirun import run

pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

UNIT = ["--max-cells-per-unit", "3", "--delta", "1e-6"]
T0 = 1_211_018_400


def traces(seed=0, n_units=300, per_unit=25):
    """Each unit waits 15 minutes at one of two places, then drives; a fix a minute."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_units):
        spot = np.array([[116.30, 39.90], [116.40, 39.95]][u % 3 == 0])
        pos = rng.uniform([116.1, 39.7], [116.5, 40.1])
        for k in range(per_unit):
            p = spot + rng.normal(0, 2e-4, 2) if k < 15 else pos + rng.normal(0, 0.01, 2) * k
            rows.append((float(p[0]), float(p[1]), u, T0 + 60 * k))
    return rows


def write_csv(path, rows):
    path.write_text("lon,lat,unit,time\n" + "".join(f"{x!r},{y!r},u{u},{t}\n" for x, y, u, t in rows))
    return path


def iso(t: int) -> str:
    return str(np.datetime64(t, "s")) + "Z"


# --------------------------------------------------------------------------- #
# GeoJSON


def test_geojson_gives_the_points_units_and_release_of_the_same_csv(capsys, tmp_path):
    rows = traces()
    csv = write_csv(tmp_path / "t.csv", rows)
    path = write_geojson(
        tmp_path / "t.geojson",
        [feature(x, y, {"unit": f"u{u}", "time": iso(t)}) for x, y, u, t in rows],
        name="layer",
        crs={"type": "name", "properties": {"name": "urn:ogc:def:crs:OGC:1.3:CRS84"}},
    )
    got, want = read_input(path, unit="unit"), read_input(csv, ["lon", "lat"], unit="unit")
    assert got.X.tobytes() == want.X.tobytes() and got.units.equals(want.units) and got.notes() == []
    stops = ["--unit", "unit", *UNIT, "--time", "time", "--stops", "100m", "5min"]
    a, out, err = fit(capsys, tmp_path, path, *stops, name="g")
    b, _, _ = fit(capsys, tmp_path, csv, "--header", *stops, name="c")
    assert a.n_spans >= 1 and same_release(a, b) and "each unit's stops" in out


def test_geojson_is_read_as_a_stream(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    P = rng.uniform(-180, 180, (2000, 2))
    feats = [feature(float(x), float(y), {"n": i, "s": "x" * (i % 50)}) for i, (x, y) in enumerate(P)]
    path = write_geojson(tmp_path / "p.geojson", feats, bbox=[-180, -90, 180, 90])
    monkeypatch.setattr(geojsonfile, "_READ", 61)  # pieces that cut numbers, strings and features
    assert list(geojsonfile.features(path)) == json.loads(path.read_text())["features"]
    monkeypatch.setattr(geojsonfile, "CHUNK", 300)
    got = read_input(path, block_hook=lambda X: None)
    assert got.X.tobytes() == P.tobytes()


def _big_geojson(path, n):
    with open(path, "w") as f:
        f.write('{"type": "FeatureCollection", "features": [\n')
        f.write(
            ",\n".join(
                json.dumps(feature(i * 1e-6, 1.0, {"unit": i // 10, "note": "x" * 40})) for i in range(n)
            )
        )
        f.write("\n]}\n")


def test_geojson_memory_is_bounded(tmp_path, monkeypatch):
    n = 30_000
    _big_geojson(tmp_path / "big.geojson", n)
    monkeypatch.setattr(geojsonfile, "CHUNK", 1_000)
    # imports done, on a file of the same features, three chunks long (reading
    # the big file a first time for that took a third of the test's CPU)
    _big_geojson(tmp_path / "warm.geojson", 3_000)
    assert read_input(tmp_path / "warm.geojson", unit="unit").units.num_chunks == 3
    tracemalloc.start()
    try:
        got = read_input(tmp_path / "big.geojson", unit="unit")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.X.shape == (n, 2) and got.units.num_chunks == n // 1_000
    # the points (0.5 MB), the units and one chunk of features: 5.3 MB here;
    # the whole file's features at once (3.3 MB of text) peak at 40 MB
    assert peak < 12e6, peak


def test_geojson_features_without_a_point_or_unit_are_dropped_and_counted(capsys, tmp_path):
    rows = traces(1)
    feats = [feature(x, y, {"unit": u}) for x, y, u, _ in rows]
    feats[0]["geometry"] = {"type": "LineString", "coordinates": [[1, 2], [3, 4]]}
    feats[1]["geometry"] = None
    feats[2]["geometry"]["coordinates"] = [SECRET, 39.9]
    feats[3]["geometry"]["coordinates"] = [math.nan, 39.9]
    feats[4]["properties"] = {"unit": [SECRET]}
    feats[5]["properties"] = {"other": SECRET}
    feats[6]["properties"] = None
    feats[7]["geometry"]["coordinates"] = [10**400, 39.9]  # beyond any float
    path = write_geojson(tmp_path / "t.geojson", feats)
    got = read_input(path, unit="unit")
    assert np.isnan(got.X[:8]).all() and not np.isnan(got.X[8:]).any()
    assert got.n_not_point == 5 and got.n_missing_unit == 3
    model, out, err = fit(capsys, tmp_path, path, "--unit", "unit", *UNIT, name="g")
    assert "5 row(s) whose geometry is not a point (or is empty) are dropped" in err
    assert "3 row(s) with no unit (column 'unit', --unit) are dropped" in err
    assert SECRET not in out + err


# --------------------------------------------------------------------------- #
# GPX


def test_gpx_tracks_give_the_points_and_release_of_the_same_csv(capsys, tmp_path):
    rows = traces(2)
    tracks = [[(x, y, iso(t)) for x, y, u, t in rows if u == k] for k in range(300)]
    path = write_gpx(tmp_path / "t.gpx", tracks, name=SECRET)
    csv = tmp_path / "t.csv"
    csv.write_text("lon,lat,track,time\n" + "".join(f"{x!r},{y!r},{u},{iso(t)}\n" for x, y, u, t in rows))
    got = read_input(path, unit="track")
    assert got.X.tobytes() == read_input(csv, ["lon", "lat"]).X.tobytes() and got.notes() == []
    assert got.units.type == pa.int64() and got.units.to_pylist() == [r[2] for r in rows]
    assert read_columns(path, "time")[0].to_pylist() == [iso(r[3]) for r in rows]
    stops = ["--unit", "track", *UNIT, "--time", "time", "--stops", "100m", "5min"]
    a, out, err = fit(capsys, tmp_path, path, *stops, name="g")
    # the same tracks as integer units of a database (the CSV's units are text)
    db = tmp_path / "t.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (lon REAL, lat REAL, track INTEGER, time TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [(x, y, u, iso(t)) for x, y, u, t in rows])
    con.commit()
    con.close()
    b, _, _ = fit(capsys, tmp_path, db, "--columns", "lon", "lat", *stops, name="d")
    assert a.n_spans >= 1 and same_release(a, b) and SECRET not in out + err


def test_gpx_waypoints_and_bad_values(tmp_path):
    tracks = [[(116.3, 39.9, "2008-05-17T10:00:00Z"), (SECRET, 39.9, "x"), (116.4, "", "y")]]
    path = write_gpx(tmp_path / "t.gpx", tracks, waypoints=[(116.1, 39.8)], name=SECRET)
    got = read_input(path)
    np.testing.assert_array_equal(got.X[[0, 1]], [[116.1, 39.8], [116.3, 39.9]])
    assert np.isnan(got.X[2:]).any(axis=1).all() and got.n_unparseable == 1
    got = read_input(path, unit="track")
    assert np.isnan(got.X[0]).all() and got.n_missing_unit == 1  # the waypoint has no track
    assert read_columns(path, "ele")[0].to_pylist() == [None, 12.5, 12.5, 12.5]


@pytest.mark.parametrize(
    "name, text",
    [
        ("p.geojson", f"lon,lat\n{SECRET},1\n"),
        ("p.geojson", f"  \n[{SECRET}]"),
        ("p.gpx", f"{SECRET} <gpx></gpx>"),
    ],
)
def test_a_file_whose_envelope_is_of_another_kind_is_refused_before_reading(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    what = "GPX" if name.endswith(".gpx") else "GeoJSON"
    with pytest.raises(ValueError, match=f"cannot read as {what}: it does not begin with") as info:
        open_input(path).close()
    assert SECRET not in str(info.value)


GOOD = [feature(116.3, 39.9, {"unit": "a"}), feature(116.31, 39.91, {"unit": "b"})]


FEATURES = ",\n".join(json.dumps(f) for f in GOOD)


@pytest.mark.parametrize(
    "text, why",
    [
        (f'{{"type": "Feature", "properties": {{"a": "{SECRET}"}}}}', 'top-level "type" is not'),
        (f'{{"type": "{SECRET}", "features": [\n{FEATURES}\n]}}', 'top-level "type" is not'),
        (f'{{"type": "Topology", "objects": {{"a": "{SECRET}"}}}}', 'top-level "type" is not'),
        ('{"bbox": [1, 2], "type": "FeatureCollection"}', 'has no "features" member'),
        (f'{{"name": "{SECRET}"}}', 'no "features" member'),
        ("{ }", "an empty JSON object"),
        (f'{{"name": "{SECRET}\n", "type": "FeatureCollection", "features": []}}', "not valid JSON"),
        (f'{{"type": "FeatureCollection", "name": "{SECRET}', "not valid JSON"),
        ('{"type": "FeatureCollection", "n": "\xff", "features": []}', "not valid JSON"),
    ],
)
def test_a_geojson_file_whose_head_is_no_feature_collection_is_refused_before_reading(tmp_path, text, why):
    """A GeoJSON file whose members before its features say it is not a
    FeatureCollection (its ``"type"``, no ``"features"`` at all, or not
    valid JSON there) ended with a note and no rows, after the release was
    charged; it is refused when opened, before any feature is read, quoting
    nothing. Those bytes come before any feature: the file writer's, not a
    unit's (docs/privacy.md §8)."""
    path = tmp_path / "p.geojson"
    path.write_bytes(text.encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    with pytest.raises(ValueError, match="cannot read as GeoJSON: ") as info:
        open_input(path).close()
    assert why in str(info.value) and SECRET not in str(info.value)


def test_a_geojson_file_refused_by_its_head_charges_nothing(capsys, tmp_path):
    path = tmp_path / "feature.geojson"
    path.write_text(json.dumps(feature(116.3, 39.9, {"unit": SECRET})))
    ledger = tmp_path / "b.ledger"
    rc, _, err = run(capsys, "ledger", "init", ledger, "--dataset", "d", "--epsilon", 2)
    assert rc == 0, err
    rc, _, err = run(
        capsys, "fit", path, "--eps", "0.1", "--min-samples", "5", *BOX, "--ledger", ledger,
        "--dataset", "d", "--out-dir", tmp_path / "o",
    )  # fmt: skip
    assert rc == 2 and 'top-level "type" is not "FeatureCollection"' in err and SECRET not in err
    rc, out, err = run(capsys, "ledger", "show", ledger)
    assert rc == 0 and "spent" in out.lower() and "charged" not in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize(
    "text, kept",
    [
        (f'{{"features": [\n{FEATURES}\n], "type": "Feature", "a": "{SECRET}"}}', 2),
        (f'{{"features": [\n{FEATURES}\n], "a": "{SECRET}"}}', 2),
        (f'{{"type": "FeatureCollection", "features": [\n{FEATURES}\n], "type": "{SECRET}"}}', 2),
    ],
)
def test_a_type_after_the_features_ends_the_stream_with_a_note(tmp_path, text, kept):
    """A GeoJSON file's ``"type"`` that comes after its features (or none):
    the features are read, and a note says the file is no FeatureCollection;
    nothing is refused, since a feature's bytes can write a fake end of the
    collection and a ``"type"`` after it (a release never hinges on a
    record), and nothing is quoted. (Before the features, the head is
    checked when the file is opened: refused, above.)"""
    path = tmp_path / "p.geojson"
    path.write_text(text)
    got = read_input(path)
    assert got.X.shape[0] == kept
    assert got.n_read_before_damage == kept
    notes = " ".join(got.notes())
    assert "the rest of it is not read" in notes and SECRET not in notes


@pytest.mark.parametrize(
    "text, kept, broken",
    [
        (f'<gpx><trk><trkseg><trkpt lat="39.9" lon="116.3"/>{SECRET}</gpx>', 1, 0),
        (f'<gpx><trkpt lat="39.9" lon="116.3"></trkpt><wpt lat="1" lon="2"/><{SECRET}', 2, 0),
        (f'<gpx><wpt lat="1" lon="2"><{SECRET}</wpt><wpt lat="3" lon="4"/></gpx>', 1, 1),
        (f"<gpx><metadata>{SECRET}<</metadata><trk><trkpt lat='1' lon='2'/></trk></gpx>", 1, 0),
        (
            f'<gpx><trk><trkpt lat="1" lon="2"><ele>{SECRET}<</ele></trkpt></trk>'
            '<trk><trkpt lat="3" lon="4"/>',
            1,
            1,
        ),
    ],
)
def test_gpx_damage_drops_the_broken_point_alone_with_a_note(tmp_path, text, kept, broken):
    """Not well-formed XML among a GPX file's points drops the point it is
    in (if any) and nothing else: reading goes on at the next track or
    point tag; a note counts the points dropped, quoting nothing."""
    path = tmp_path / "p.gpx"
    path.write_text(text)
    got = read_input(path)
    assert got.X.shape[0] == kept and got.n_read_before_damage is None
    assert got.n_broken_points == broken
    notes = " ".join(got.notes())
    assert (f"{broken} GPX point(s) are not well-formed XML" in notes) == (broken > 0) and SECRET not in notes


@pytest.mark.parametrize(
    "text, kept",
    [
        (f'{{"type": "FeatureCollection", "features": [{{"a": "{SECRET}"}} {{}}]}}', 1),
        (f'{{"type": "FeatureCollection", "features": [{{"a": "{SECRET}', 0),
        (json.dumps({"type": "FeatureCollection", "features": GOOD})[:-30] + SECRET, 1),
    ],
)
def test_a_break_among_features_on_one_line_loses_the_rest_of_that_line(tmp_path, text, kept):
    """Features written on one line: a break loses what follows it on its
    line (no line after it begins a feature), said in a note, quoting
    nothing; the release is made."""
    path = tmp_path / "p.geojson"
    path.write_text(text)
    got = read_input(path)
    assert got.X.shape[0] == kept
    assert got.n_damaged_records == 1 and got.n_read_before_damage is None
    notes = " ".join(got.notes())
    assert "not valid JSON in 1 place(s)" in notes and SECRET not in notes


def test_a_cut_geojson_still_gives_a_release_charged_as_reserved(capsys, tmp_path):
    feats = [feature(116.3 + 1e-4 * (i % 7), 39.9, {"unit": f"u{i}"}) for i in range(60)]
    path = tmp_path / "cut.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats})[:-200])
    ledger = tmp_path / "b.ledger"
    rc, _, err = run(capsys, "ledger", "init", ledger, "--dataset", "d", "--epsilon", 2)
    assert rc == 0, err
    _, _, err = fit(capsys, tmp_path, path, "--ledger", ledger, "--dataset", "d", name="m")
    assert "not valid JSON in 1 place(s)" in err and "charged to 'd'" in err


@pytest.mark.parametrize(
    "name, kw, match",
    [
        ("p.gpx", {"unit": "time"}, "a GPX file's unit is its track"),
        ("p.gpx", {"unit": "nope"}, "no column 'nope'"),
        ("p.geojson", {"unit": 0}, "a GeoJSON unit is a property, named"),
        ("p.geojson", {"columns": ["x", "y"]}, "its points' longitude and latitude"),
        ("p.geojson", {"table": "t"}, "--table applies to SQLite and GeoPackage files only"),
    ],
)
def test_refused_from_the_options_before_reading(tmp_path, name, kw, match):
    path = tmp_path / name
    path.write_text(SECRET)  # never read
    with pytest.raises(ValueError, match=match):
        read_input(path, **kw)


def test_dask_is_refused_before_anything_is_read(capsys, tmp_path):
    path = write_geojson(tmp_path / "t.geojson", [feature(116.3, 39.9, {})])
    rc, out, err = run(capsys, "fit", path, "--eps", "0.1", "--min-samples", "5", *BOX, "--backend", "dask")
    assert rc == 2 and "--backend dask reads CSV and Parquet files, not GeoJSON" in err, err


# --------------------------------------------------------------------------- #
# neighbours: one more record is read as that record alone


@pytest.mark.parametrize(
    "kind, added",
    [
        (kind, added)
        for kind in ("sqlite", "gpkg", "geojson", "gpx")
        for added in ("point", "text", "no unit")
        if (kind, added) != ("gpx", "no unit")  # every GPX track point has its track
    ],
)
def test_a_file_with_one_more_record_is_read_like_the_file_and_that_record(tmp_path, kind, added):
    rng = np.random.default_rng(7)
    P = list(rng.uniform([116.0, 39.6], [116.6, 40.2], (600, 2)))
    units = [f"u{i % 13}" for i in range(600)]
    extra = {"point": ([116.3, 39.9], "u1"), "text": (None, "u2"), "no unit": ([116.3, 39.9], None)}[added]
    unit = "track" if kind == "gpx" else "unit"
    if kind == "gpx":
        # a track is a unit: the record is the first point of the first track
        units = [f"u{i // 60}" for i in range(600)]
        extra = (extra[0], "u0")
    write_points(tmp_path / f"d.{kind}", kind, P, units)
    write_points(tmp_path / f"d1.{kind}", kind, [extra[0], *P], [extra[1], *units])
    d, d1 = read_input(tmp_path / f"d.{kind}", unit=unit), read_input(tmp_path / f"d1.{kind}", unit=unit)
    assert d1.X[1:].tobytes() == d.X.tobytes()
    assert d1.units[1:].equals(d.units)
    row = d1.X[0]
    if added == "point":
        assert row.tolist() == [116.3, 39.9] and d1.notes() == d.notes()
    else:
        assert np.isnan(row).any() and len(d1.notes()) == len(d.notes()) + 1
        assert "SECRET" not in " ".join(d1.notes())


@pytest.mark.parametrize(
    "text, why",
    [
        (f"<kml><Placemark>{SECRET}</Placemark></kml>", "root element is not <gpx>"),
        (f'<?xml version="1.0"?>\n<!-- {SECRET} -->\n<{SECRET}><trk><trkpt lat="1" lon="2"/>', "not <gpx>"),
        (f"<?xml version='1.0'?><& {SECRET}><gpx><trk><trkseg></trkseg></trk></gpx>", "well-formed"),
        (f"<gpx><metadata><name>{SECRET}</name></metadata></gpx>", None),  # GPX without a point: read
    ],
)
def test_a_gpx_file_whose_head_is_not_gpx_is_refused_before_reading(tmp_path, text, why):
    """The head of a GPX file (its bytes before the first track or point
    tag: the root's start tag, the metadata) is its envelope, before any
    record: a file whose root is not ``<gpx>`` (or whose head is not
    well-formed XML) is the wrong format, refused when opened, before
    anything is read or reserved, quoting nothing; before, it was read as
    an empty file, "not valid XML after 0 record(s)" in a note."""
    path = tmp_path / "p.gpx"
    path.write_text(text)
    if why is None:
        got = read_input(path)
        assert got.X.shape[0] == 0 and got.n_read_before_damage is None
        return
    with pytest.raises(ValueError, match=f"cannot read as GPX: .*{why}") as info:
        open_input(path).close()
    assert SECRET not in str(info.value)


def test_a_folders_gpx_file_whose_root_is_not_gpx_drops_its_own_rows(tmp_path):
    """In a trace folder, a file that is not GPX is one unit's: its rows
    are dropped and counted, never a refusal of the release."""
    folder = tmp_path / "f"
    folder.mkdir()
    write_gpx(folder / "a.gpx", [[(116.3, 39.9, "2008-05-17T10:00:00Z")]])
    (folder / "b.gpx").write_text(f"<kml><Placemark>{SECRET}</Placemark></kml>")
    got = read_input(folder, unit_from="file", file_format="gpx")
    assert got.X.shape == (1, 2) and got.n_damaged_files == 1 and SECRET not in " ".join(got.notes())
