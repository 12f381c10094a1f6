"""Which format a file is in, decided from public input only.

The format comes from the ``format`` option when it is given, else from the
file name's extension; never from the file's bytes. A first record that
starts with ``PAR1`` or the gzip magic must not turn a CSV file into a
Parquet or gzip one (two files that differ in one record are read alike).
A name with no known extension is refused before anything is read, with the
option to pass.

=========================  ===========  ===========
name                       format       delimiter
=========================  ===========  ===========
``.csv`` ``.txt``          ``csv``      ``,``
``.tsv`` ``.tab``          ``tsv``      tab
either + ``.gz``           gzip text    as above
``.parquet`` ``.pq``       ``parquet``
``.npy``                   ``npy``
``.sqlite`` ``.sqlite3``   ``sqlite``
``.db``                    ``sqlite``
``.gpkg``                  ``gpkg``
``.geojson``               ``geojson``
``.gpx``                   ``gpx``
``.plt``                   ``plt``
``-`` (standard input)     ``csv``      ``,``
=========================  ===========  ===========
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import PurePath

#: Column excluded from the default selection (ground truth in benchmark files).
LABEL_COLUMN = "label"

#: Formats by name, as the ``format`` option takes them.
FORMATS = ("csv", "csv.gz", "tsv", "tsv.gz", "parquet", "npy", "sqlite", "gpkg", "geojson", "gpx", "plt")

_TEXT = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".tab": "tsv"}
_BINARY = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".parq": "parquet",
    ".npy": "npy",
    ".sqlite": "sqlite",
    ".sqlite3": "sqlite",
    ".db": "sqlite",
    ".gpkg": "gpkg",
    ".geojson": "geojson",
    ".gpx": "gpx",
    ".plt": "plt",
}
#: Formats that are databases: a table (or a query) in them holds the points.
DATABASES = ("sqlite", "gpkg")
#: Formats of geographic features whose coordinates are lon/lat points (WGS 84),
#: by the format's definition (PLT: GeoLife's traces, latitude first in the file).
FEATURES = ("geojson", "gpx", "plt")
#: Compressions other than gzip that a name may carry; refused with a hint.
_OTHER_COMPRESSION = (".bz2", ".xz", ".zst", ".zip")

#: Formats that are not read, by extension, with what they are: named in the
#: refusal with the way to a format that is (public: the file's name).
_NOT_READ = {
    ".json": "JSON",
    ".jsonl": "JSON lines",
    ".ndjson": "JSON lines",
    ".kml": "KML",
    ".shp": "a shapefile",
    ".xlsx": "an Excel workbook",
    ".xls": "an Excel workbook",
    ".feather": "Arrow/Feather",
    ".arrow": "Arrow/Feather",
    ".orc": "ORC",
}

_INDEX_NAME = re.compile(r"^(?:|Unnamed: \d+|__index_level_\d+__)$")


#: Column names that usually name a person or what one person carries or drives.
UNIT_NAMES = frozenset(
    "id uid uuid guid user users userid username person people driver drivers cab cabs taxi taxis "
    "vehicle vehicles car device devices imei customer client patient subject member account "
    "owner visitor passenger".split()
)
# a name ending in an id: user_id, cab-id, "device id", userId, CabID (not grid, valid)
_UNIT_SUFFIX = re.compile(r"(?:[_\-\s.]id|[a-z]Id|[a-z]ID)$")


def looks_like_unit(name: str) -> bool:
    """True for a column name that looks like the id of a person, a vehicle
    or a device (``id``, ``user``, ``cab``, ``*_id``, ``userId``...). Names
    only: they are the public schema (a declared header, a Parquet schema);
    the values are never looked at."""
    text = str(name).strip()
    low = text.lower()
    if low in UNIT_NAMES:
        return True
    stem = re.sub(r"(?:_?(?:id|ids|no|num|number|key|code|name|hash))$", "", low)
    return stem in UNIT_NAMES or _UNIT_SUFFIX.search(text) is not None


def is_index_column(name: str) -> bool:
    """True for the names pandas gives an index column: ``""``,
    ``Unnamed: 0`` (read back from CSV), ``__index_level_0__`` (Parquet)."""
    return _INDEX_NAME.match(str(name).strip()) is not None


@dataclass(frozen=True)
class FileFormat:
    """A file's format: ``kind`` ("csv", "parquet", "npy", "sqlite",
    "gpkg", "geojson", "gpx" or "plt"), whether the text is gzip-compressed, and the default delimiter
    of a text format."""

    kind: str
    gzip: bool = False
    delimiter: str = ","

    @property
    def is_text(self) -> bool:
        return self.kind == "csv"

    @property
    def is_database(self) -> bool:
        return self.kind in DATABASES

    @property
    def is_features(self) -> bool:
        return self.kind in FEATURES


def _parse_format(fmt: str) -> FileFormat:
    base, _, gz = fmt.partition(".")
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got format={fmt!r}")
    if base in ("csv", "tsv"):
        return FileFormat("csv", gzip=bool(gz), delimiter="\t" if base == "tsv" else ",")
    return FileFormat(base)


def format_of(path: str | os.PathLike[str], fmt: str | None = None) -> FileFormat:
    """The format of ``path`` from ``fmt`` (one of :data:`FORMATS`) or its name.

    ``"-"`` (standard input) is plain CSV unless ``fmt`` says otherwise.
    Raises ValueError, naming the option, when neither decides. Reads nothing.
    """
    if fmt is not None:
        return _parse_format(fmt)
    text = os.fspath(path)
    if text == "-":
        return FileFormat("csv")
    name = PurePath(text.rstrip("/")).name.lower()
    gz = name.endswith(".gz")
    stem = name[:-3] if gz else name
    suffix = PurePath(stem).suffix
    if suffix in _TEXT:
        kind = _TEXT[suffix]
        return FileFormat("csv", gzip=gz, delimiter="\t" if kind == "tsv" else ",")
    if suffix in _BINARY and not gz:
        return FileFormat(_BINARY[suffix])
    if name.endswith(_OTHER_COMPRESSION):
        raise ValueError(f"{text}: only gzip compression (.gz) is read; decompress the file first")
    if suffix in _NOT_READ:
        raise ValueError(
            f"{text}: {_NOT_READ[suffix]} is not read (dpdbscan reads CSV, Parquet, .npy, SQLite, "
            "GeoPackage, GeoJSON, GPX and PLT); export "
            "the points as CSV or Parquet with one row per point and numeric columns (longitude and "
            "latitude with --geo; a unit, time or status column beside them), e.g. with pandas or "
            "GDAL's ogr2ogr, and fit that file (a CSV or Parquet file under this name: pass --format "
            "(" + ", ".join(FORMATS) + "))"
        )
    raise ValueError(
        f"{text}: cannot tell the format from the file name (known: .csv, .tsv, .txt, .tab, their "
        ".gz, .parquet, .pq, .npy, .sqlite, .sqlite3, .db, .gpkg, .geojson, .gpx, .plt); pass --format ("
        + ", ".join(FORMATS)
        + ")"
    )


__all__ = [
    "DATABASES",
    "FEATURES",
    "FORMATS",
    "LABEL_COLUMN",
    "UNIT_NAMES",
    "FileFormat",
    "format_of",
    "is_index_column",
    "looks_like_unit",
]
