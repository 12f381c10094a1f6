"""Points from a GeoPackage: a point layer's geometries.

A GeoPackage (``.gpkg``) is an SQLite database with tables that describe
its layers (OGC 12-128r18): ``gpkg_contents`` lists the feature tables,
``gpkg_geometry_columns`` names each one's geometry column, its geometry
type and its spatial reference system (SRS), and ``gpkg_spatial_ref_sys``
says which SRS that is. All of it is metadata, public like a Parquet
schema: the layer (``--table``, else the only feature table), its geometry
column, and whether its SRS is WGS 84 longitude/latitude (EPSG:4326, which
``--geo`` needs) are decided from it before any row is read. A layer whose
declared geometry type cannot be a point (a line, a polygon, a multipoint)
is refused then.

Each row's geometry is a GeoPackage binary blob: the header (``GP``, a
version, a flags byte, the SRS id, an optional envelope) and a WKB point,
parsed here (:func:`point_of`). The point's x is the longitude (or
easting), y the latitude (or northing), as GeoPackage orders every SRS's
axes. A row whose geometry is missing, empty, not a point, damaged, or
written in another SRS than the layer's is dropped by the per-record rule
and counted; no value is quoted.
"""

from __future__ import annotations

import math
import sqlite3
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .sqlitefile import cannot_read

#: Declared geometry types whose rows may hold points (others are refused).
POINT_TYPES = ("POINT", "GEOMETRY")

#: Bytes of the envelope after the 8-byte header, by the flags' envelope code.
_ENVELOPE = {0: 0, 1: 32, 2: 48, 3: 48, 4: 64}


@dataclass(frozen=True)
class Layer:
    """A GeoPackage feature table: its name, geometry column, SRS id and
    the SRS's organization and code (``"EPSG"``, 4326), from the metadata."""

    table: str
    geometry: str
    srs_id: int
    organization: str
    code: int | None

    @property
    def lonlat(self) -> bool:
        """Whether the SRS is WGS 84 longitude/latitude (EPSG:4326)."""
        return self.organization.upper() == "EPSG" and self.code == 4326

    @property
    def srs(self) -> str:
        code = "?" if self.code is None else self.code
        return f"{self.organization}:{code}" if self.organization else f"SRS id {self.srs_id}"


def _listing(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names[:12]) + (", ..." if len(names) > 12 else "")


def layer_of(con: sqlite3.Connection, where: str, table: str | None) -> Layer:
    """The point layer of ``table`` (``--table``), else the only feature
    table, from the GeoPackage's metadata; refused (ValueError) otherwise."""
    try:
        features = [
            str(r[0])
            for r in con.execute(
                "SELECT table_name FROM gpkg_contents WHERE data_type = 'features' ORDER BY table_name"
            )
        ]
    except sqlite3.DatabaseError as exc:
        if "no such table" in str(exc):
            raise ValueError(
                f"{where}: not a GeoPackage (no gpkg_contents table); an SQLite database is read "
                "with --format sqlite"
            ) from None
        raise cannot_read(where) from None
    if table is None:
        if len(features) != 1:
            raise ValueError(
                f"{where}: the GeoPackage has {len(features)} feature tables"
                + (f" ({_listing(features)})" if features else "")
                + "; name the point layer with --table (table=)"
            )
        table = features[0]
    elif table not in features:
        raise ValueError(
            f"{where}: {table!r} (--table) is not a feature table of the GeoPackage (feature tables: "
            f"{_listing(features)}); an attribute table is read with --format sqlite"
        )
    try:
        row = con.execute(
            "SELECT g.column_name, upper(g.geometry_type_name), g.srs_id, s.organization, "
            "s.organization_coordsys_id FROM gpkg_geometry_columns AS g LEFT JOIN "
            "gpkg_spatial_ref_sys AS s ON s.srs_id = g.srs_id WHERE g.table_name = ?",
            (table,),
        ).fetchone()
    except sqlite3.DatabaseError:
        raise cannot_read(where) from None
    if row is None:
        raise ValueError(
            f"{where}: the feature table {table!r} has no geometry column (gpkg_geometry_columns)"
        )
    column, kind, srs_id, org, code = row
    if kind not in POINT_TYPES:
        raise ValueError(
            f"{where}: the layer {table!r} holds {str(kind).lower()} geometries; dpdbscan reads points "
            "(a layer of geometry type POINT)"
        )
    return Layer(table, str(column), int(srs_id), str(org or ""), None if code is None else int(code))


def point_of(blob: Any, srs_id: int) -> tuple[float, float] | None:
    """``(x, y)`` of a GeoPackage binary point in the SRS ``srs_id``, or
    None for anything else (missing, empty, another geometry or SRS,
    damaged). Reads the one blob alone."""
    if not isinstance(blob, bytes) or len(blob) < 8 or blob[:2] != b"GP":
        return None
    flags = blob[3]
    if flags & 0x30:  # an empty geometry, or an extended (non-standard) one
        return None
    envelope = _ENVELOPE.get((flags >> 1) & 0x07)
    if envelope is None:
        return None
    (srs,) = struct.unpack_from("<i" if flags & 1 else ">i", blob, 4)
    start = 8 + envelope
    if srs != srs_id or len(blob) < start + 21 or blob[start] not in (0, 1):
        return None
    order = "<" if blob[start] == 1 else ">"
    (kind,) = struct.unpack_from(order + "I", blob, start + 1)
    # a point: ISO WKB 1, 1001 (Z), 2001 (M), 3001 (ZM); or EWKB's Z/M flags on 1
    if (kind & 0x0FFFFFFF) % 1000 != 1 or (kind & 0x0FFFFFFF) > 3001:
        return None
    x, y = struct.unpack_from(order + "dd", blob, start + 5)
    if math.isnan(x) or math.isnan(y):  # WKB writes an empty point as NaN
        return None
    return x, y


def points(blobs: Sequence[Any], srs_id: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, not a point)`` of one chunk of geometries: X of shape (n, 2),
    NaN where the row holds no point; the mask marks the rows whose
    geometry is present but not a point of the layer's SRS."""
    X = np.full((len(blobs), 2), np.nan)
    bad = np.zeros(len(blobs), dtype=bool)
    for i, blob in enumerate(blobs):
        got = point_of(blob, srs_id)
        if got is not None:
            X[i] = got
        elif blob is not None:
            bad[i] = True
    return X, bad


__all__ = ["POINT_TYPES", "Layer", "layer_of", "point_of", "points"]
