"""Writers of points files in the formats the reader takes besides CSV and
Parquet (SQLite, GeoPackage, GeoJSON, GPX), for the tests of those readers."""

from __future__ import annotations

import json
import sqlite3
import struct

from dpdbscan import load_model
from dpdbscan.model.codec import model_to_dict

from clirun import run

#: Text that must never leave a file.
SECRET = "SECRET-VALUE-7"
#: Public bounds around the test points (lon/lat, Beijing).
BOX = ["--bounds", "116.0", "39.6", "116.6", "40.2"]
#: A seeded geographic fit in that box, writing only the model file.
FIT = ["--geo", "--eps", "300m", "--min-samples", "10", *BOX, "--seed", "5", "--no-png", "--no-geojson"]


def same_release(a, b) -> bool:
    """Whether two models hold the same noisy histogram, spans and privacy."""
    a, b = model_to_dict(a), model_to_dict(b)
    return a["histogram"] == b["histogram"] and a["spans"] == b["spans"] and a["privacy"] == b["privacy"]


def fit(capsys, tmp_path, path, *extra, name):
    """``dpdbscan fit PATH`` with :data:`FIT` and ``extra``: (model, stdout, stderr)."""
    rc, out, err = run(capsys, "fit", path, *FIT, "--out-dir", tmp_path, "--name", name, *extra)
    assert rc == 0, err
    return load_model(tmp_path / f"{name}.spans.json"), out, err


def make_db(path, schema: str, rows, table: str = "pts"):
    """A database at ``path`` with one table ``table`` declared ``schema``
    holding ``rows``; returns ``path``."""
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE {table} ({schema})")
    width = len(schema.split(","))
    con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * width)})", rows)
    con.commit()
    con.close()
    return path


def gp_point(x: float, y: float, srs: int = 4326, *, envelope: bool = False, big: bool = False) -> bytes:
    """A GeoPackage binary point: header (version 0, flags, SRS id, an
    optional xy envelope) and a WKB point, little- or big-endian."""
    order = ">" if big else "<"
    flags = (0 if big else 1) | (0b010 if envelope else 0)
    head = b"GP" + bytes([0, flags]) + struct.pack(order + "i", srs)
    if envelope:
        head += struct.pack(order + "4d", x, x, y, y)
    return head + struct.pack(order + "BIdd", 0 if big else 1, 1, x, y)


def make_gpkg(path, rows, *, srs=4326, org="EPSG", kind="POINT", extra="person TEXT", table="trips"):
    """A GeoPackage with one feature table ``table`` (geometry column
    ``geom`` of geometry type ``kind`` in SRS ``srs``) and ``rows``
    (geometry blob, then the ``extra`` columns)."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT, srs_id INTEGER PRIMARY KEY, organization TEXT,
            organization_coordsys_id INTEGER, definition TEXT, description TEXT);
        CREATE TABLE gpkg_contents (table_name TEXT PRIMARY KEY, data_type TEXT, identifier TEXT,
            description TEXT, last_change TEXT, min_x REAL, min_y REAL, max_x REAL, max_y REAL,
            srs_id INTEGER);
        CREATE TABLE gpkg_geometry_columns (table_name TEXT, column_name TEXT, geometry_type_name TEXT,
            srs_id INTEGER, z TINYINT, m TINYINT);
        """
    )
    con.execute("INSERT INTO gpkg_spatial_ref_sys VALUES ('a', ?, ?, ?, '', '')", (srs, org, srs))
    con.execute(
        "INSERT INTO gpkg_contents (table_name, data_type, srs_id) VALUES (?, 'features', ?)", (table, srs)
    )
    con.execute("INSERT INTO gpkg_geometry_columns VALUES (?, 'geom', ?, ?, 0, 0)", (table, kind, srs))
    con.execute(f"CREATE TABLE {table} (fid INTEGER PRIMARY KEY, geom {kind}, {extra})")
    width = 1 + len(extra.split(","))
    con.executemany(
        f"INSERT INTO {table} (geom, {', '.join(c.split()[0] for c in extra.split(','))}) "
        f"VALUES ({', '.join('?' * width)})",
        rows,
    )
    con.commit()
    con.close()
    return path


def feature(x, y, props):
    return {"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, y]}, "properties": props}


def write_geojson(path, features, **top):
    path.write_text(json.dumps({"type": "FeatureCollection", **top, "features": features}, indent=1))
    return path


def write_gpx(path, tracks, waypoints=(), name="a name"):
    """``tracks``: lists of (lon, lat, time) per track, each one <trk>;
    ``name`` the name of every track and waypoint."""
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1">',
    ]
    out += [f'<wpt lat="{y!r}" lon="{x!r}"><name>{name}</name></wpt>' for x, y in waypoints]
    for points in tracks:
        out.append(f"<trk><name>{name}</name><trkseg>")
        out += [f'<trkpt lat="{y}" lon="{x}"><ele>12.5</ele><time>{t}</time></trkpt>' for x, y, t in points]
        out.append("</trkseg></trk>")
    path.write_text("\n".join([*out, "</gpx>"]) + "\n")
    return path


def write_points(path, kind: str, P, units) -> None:
    """Lon/lat points ``P`` (an entry None: a record whose point is text
    that is not a number) with ``units`` (text, None where missing) written
    as ``kind``: "sqlite", "gpkg", "geojson" or "gpx" (units: tracks, by
    their number)."""
    if kind == "sqlite":
        rows = [(SECRET, 1.0, u) if p is None else (float(p[0]), float(p[1]), u) for p, u in zip(P, units)]
        make_db(path, "x REAL, y REAL, unit TEXT", rows)
    elif kind == "gpkg":
        rows = [(SECRET.encode() if p is None else gp_point(*map(float, p)), u) for p, u in zip(P, units)]
        make_gpkg(path, rows, kind="GEOMETRY", extra="unit TEXT")
    elif kind == "geojson":
        feats = [
            feature(*(map(float, p) if p is not None else (SECRET, 1.0)), {"unit": u})
            for p, u in zip(P, units)
        ]
        write_geojson(path, feats)
    else:
        tracks: dict = {}
        for p, u in zip(P, units):
            tracks.setdefault(u, []).append(
                (SECRET, 1.0, "") if p is None else (float(p[0]), float(p[1]), "")
            )
        write_gpx(path, list(tracks.values()))
