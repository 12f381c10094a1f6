"""Points from GeoPackage point layers (dpdbscan.files.gpkgfile).

The layer, its geometry column and its spatial reference come from the
GeoPackage's metadata tables, before any row is read; each geometry blob
(the GeoPackage header and a WKB point) is parsed alone. A layer must give
the points of the same lon/lat written as CSV, bit for bit, and so the same
seeded release; a row whose geometry is not a point is dropped and counted,
never quoted; --geo on a layer in another reference system is refused
before a ledger reserves anything.
"""

from __future__ import annotations

import sqlite3
import struct

import numpy as np
import pytest
from pointfiles import BOX, SECRET, gp_point, make_gpkg

from dpdbscan import load_model
from dpdbscan.files import read_columns, read_input
from dpdbscan.files.gpkgfile import point_of
from dpdbscan.model.codec import model_to_dict

from clirun import run

pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

FIT = ["--geo", "--eps", "300m", "--min-samples", "20", *BOX, "--seed", "5", "--no-png", "--no-geojson"]


def lonlat(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    return np.vstack(
        [rng.normal([116.3, 39.9], 0.004, (n, 2)), rng.uniform([116, 39.6], [116.6, 40.2], (500, 2))]
    )


def same_release(a, b) -> bool:
    a, b = model_to_dict(a), model_to_dict(b)
    return a["histogram"] == b["histogram"] and a["spans"] == b["spans"]


def test_a_point_layer_is_the_same_csv(capsys, tmp_path):
    P = lonlat()
    rows = [
        (gp_point(x, y, envelope=i % 3 == 0, big=i % 5 == 0), f"p{i % 100}") for i, (x, y) in enumerate(P)
    ]
    path = make_gpkg(tmp_path / "p.gpkg", rows)
    got = read_input(path)
    assert got.names == ["x", "y"] and got.X.tobytes() == P.tobytes() and got.notes() == []
    csv = tmp_path / "p.csv"
    csv.write_text("lon,lat\n" + "".join(f"{float(x)!r},{float(y)!r}\n" for x, y in P))
    rc, out, err = run(capsys, "fit", path, *FIT, "--out-dir", tmp_path, "--name", "g")
    assert rc == 0, err
    rc, _, err = run(capsys, "fit", csv, "--header", *FIT, "--out-dir", tmp_path, "--name", "c")
    assert rc == 0, err
    g, c = load_model(tmp_path / "g.spans.json"), load_model(tmp_path / "c.spans.json")
    assert g.n_spans >= 1 and same_release(g, c)


def test_the_header_and_wkb_as_shapely_writes_them():
    shapely = pytest.importorskip("shapely")
    for geom, want in [(shapely.Point(1.5, -2.25), (1.5, -2.25)), (shapely.Point(3, 4, 5), (3.0, 4.0))]:
        for order in (0, 1):
            wkb = shapely.to_wkb(geom, byte_order=order, flavor="iso")
            head = b"GP" + bytes([0, order]) + struct.pack("<i" if order else ">i", 4326)
            assert point_of(head + wkb, 4326) == want
    line = shapely.to_wkb(shapely.LineString([(0, 0), (1, 1)]))
    assert point_of(b"GP\x00\x01" + struct.pack("<i", 4326) + line, 4326) is None
    empty = b"GP\x00\x11" + struct.pack("<i", 4326) + shapely.to_wkb(shapely.Point())
    assert point_of(empty, 4326) is None


def test_rows_without_a_point_are_dropped_and_counted(tmp_path):
    P = lonlat(1, 100)
    rows = [(gp_point(x, y), f"p{i}") for i, (x, y) in enumerate(P)]
    rows[0] = (gp_point(P[0, 0], P[0, 1], srs=3857), "p0")  # another SRS than the layer's
    rows[1] = (b"GP\x00\x11" + struct.pack("<i", 4326) + struct.pack("<BIdd", 1, 1, np.nan, np.nan), "p1")
    rows[2] = (SECRET.encode(), "p2")  # not a geometry
    rows[3] = (None, "p3")  # missing (not counted: a missing value)
    rows[4] = (gp_point(1, 2)[:-4], "p4")  # cut short
    path = make_gpkg(tmp_path / "p.gpkg", rows, kind="GEOMETRY")
    got = read_input(path, unit="person")
    assert np.isnan(got.X[:5]).all() and np.array_equal(got.X[5:], P[5:])
    assert got.n_not_point == 4
    assert got.notes() == ["4 row(s) whose geometry is not a point (or is empty) are dropped"]
    assert got.units.to_pylist() == [f"p{i}" for i in range(len(P))]
    assert read_columns(path, "person")[0].to_pylist() == got.units.to_pylist()


@pytest.mark.parametrize(
    "make, kw, match",
    [
        ({"kind": "LINESTRING"}, {}, "holds linestring geometries; dpdbscan reads points"),
        ({}, {"table": "nope"}, r"'nope' \(--table\) is not a feature table"),
        ({}, {"columns": ["x", "y"]}, "coordinates are its point geometry"),
        ({}, {"query": "SELECT 1"}, "--query applies to SQLite files"),
    ],
)
def test_refused_from_the_metadata(tmp_path, make, kw, match):
    path = make_gpkg(tmp_path / "p.gpkg", [(SECRET.encode(), SECRET)], **make)
    with pytest.raises(ValueError, match=match) as info:
        read_input(path, **kw)
    assert SECRET not in str(info.value)


def test_not_a_geopackage(tmp_path):
    con = sqlite3.connect(tmp_path / "p.gpkg")
    con.execute("CREATE TABLE t (x REAL)")
    con.close()
    with pytest.raises(ValueError, match="not a GeoPackage .* --format sqlite"):
        read_input(tmp_path / "p.gpkg")


def test_geo_needs_wgs84_and_is_refused_before_the_ledger_reserves(capsys, tmp_path):
    P = lonlat(2, 200)
    path = make_gpkg(tmp_path / "p.gpkg", [(gp_point(x, y, srs=3857), "a") for x, y in P], srs=3857)
    ledger = tmp_path / "budget.ledger"
    rc, _, err = run(capsys, "ledger", "init", ledger, "--dataset", "d", "--epsilon", "5")
    assert rc == 0, err
    rc, out, err = run(capsys, "fit", path, *FIT, "--out-dir", tmp_path, "--ledger", ledger, "--dataset", "d")
    assert rc == 2 and "the layer's coordinates are in EPSG:3857; reproject" in err, err
    con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    assert con.execute("SELECT count(*) FROM releases").fetchone() == (0,)
    con.close()
    # without --geo the layer's own coordinates are fitted as they are
    X = read_input(path).X
    assert X.tobytes() == P.tobytes()


def test_text_that_is_not_utf8_drops_its_own_row(tmp_path):
    # round 8: SQLite does not check that TEXT is UTF-8, and Python's decoding
    # of one such value failed the whole read ("cannot read as SQLite"): one
    # row decided whether anything was released. Now such a unit is missing
    # and such a geometry (text, not a blob) no point, each dropping its row.
    P = lonlat(1, 100)
    path = make_gpkg(tmp_path / "p.gpkg", [(gp_point(x, y), f"p{i}") for i, (x, y) in enumerate(P)])
    con = sqlite3.connect(path)
    con.execute("INSERT INTO trips (geom, person) VALUES (?, CAST(X'FF' AS TEXT))", (gp_point(*P[0]),))
    good = gp_point(*P[1]).hex()
    con.execute(f"INSERT INTO trips (geom, person) VALUES (CAST(X'{good}' AS TEXT), 'q')")
    con.commit()
    con.close()
    got = read_input(path, unit="person")
    n = len(P)
    assert np.array_equal(got.X[:n], P) and np.isnan(got.X[n:]).all()  # no unit; no point
    assert got.units.to_pylist() == [f"p{i}" for i in range(n)] + [None, "q"]
    assert got.n_missing_unit == 1 and got.n_not_point == 1
    assert read_columns(path, "person")[0].to_pylist() == got.units.to_pylist()
