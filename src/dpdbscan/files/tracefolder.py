"""A folder of trace files, one file (or one sub-folder) per person or vehicle.

Trace collections come as folders: a GPX export of many people, T-Drive's
one text file per taxi, GeoLife's ``Data/<user>/Trajectory/*.plt``. Such a
folder is read with ``--unit-from file`` (``ReadOptions.unit_from="file"``:
each file is one privacy unit, named by its path relative to the folder) or
``--unit-from folder`` (each first-level sub-folder is one unit, with all the
files under it: GeoLife's users).

What is read publicly, before any record: the folder's listing (the
files' names, never their bytes). The format is the user's, ``--format``
(csv, csv.gz, tsv, tsv.gz, gpx or plt; a folder of files of several
formats is one format's files plus others left alone); the files read are
those whose names end in that format's extensions (:data:`EXTENSIONS`),
in the order of their relative paths; hidden files and folders and names
starting with ``_`` are not data (as for Parquet datasets); the others
are skipped and counted in a private note, as are, with ``--unit-from
folder``, the files lying directly in the folder (in no unit's sub-folder). A unit's id is the text of its
path, typed as text whatever it looks like (``007`` and ``7`` are two
units), and never quoted.

Then the files are read one at a time, each alone by its format's
per-record rules: a bad row is dropped; a file that cannot be read (not
the format, a CSV header without the chosen columns, XML damaged before
its first point) is *damaged*: its rows are dropped and counted, never
fatal and never quoted, so whether a release happens never hinges on one
unit's file. A file cut part-way keeps its rows before the cut, as one
file alone does (a CSV or PLT file's cut line is malformed; a GPX file
whose XML breaks keeps the points before the break, counted in a note).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from .formats import FileFormat

#: How the unit is taken from a folder of trace files (``--unit-from``).
UNIT_FROM = ("file", "folder")
#: The formats a folder of trace files may hold (``--format``).
FOLDER_FORMATS = ("csv", "csv.gz", "tsv", "tsv.gz", "gpx", "plt")

#: What one unit is, in words, for each ``--unit-from`` (the release's
#: summary, the ledger).
UNIT_WORDS = {"file": "one file of the input folder", "folder": "one sub-folder of the input folder"}
#: How a ledger records a unit taken from a folder (not a column's name).
LEDGER_UNIT = {rule: f"--unit-from {rule}" for rule in UNIT_FROM}


def unit_words(unit_column: str | None) -> str:
    """Who a ledger's budget or release protects, from the unit it
    records: "each unit (one file of the input folder)" for ``--unit-from
    file``, "each unit (one sub-folder ...)" for ``folder``, else "each
    'COLUMN'" (a column's values)."""
    for rule, recorded in LEDGER_UNIT.items():
        if unit_column == recorded:
            return f"each unit ({UNIT_WORDS[rule]})"
    return f"each {unit_column!r}"


def unit_option(unit_column: str | None) -> str:
    """The option that gives a release the unit a ledger records."""
    if unit_column is not None and unit_column in LEDGER_UNIT.values():
        return unit_column
    return f"--unit {unit_column}"


#: The extensions of each format's files in a folder (lower case).
EXTENSIONS = {
    ("csv", ","): (".csv", ".txt"),
    ("csv", "\t"): (".tsv", ".tab"),
    ("gpx", ","): (".gpx",),
    ("plt", ","): (".plt",),
}


def folder_format(where: str, file_format: str | None) -> str:
    """The format of a trace folder's files: ``--format``, which must be
    given (a folder's files are not sniffed, and their names may be units)."""
    if file_format is None:
        raise ValueError(
            f"{where}: a folder of trace files is read in one format: pass --format "
            f"({', '.join(FOLDER_FORMATS)}; its files of other names are left alone)"
        )
    if file_format not in FOLDER_FORMATS:
        raise ValueError(
            f"{where}: a folder of trace files holds {', '.join(FOLDER_FORMATS)} files, not "
            f"--format {file_format} (a folder of Parquet files is read as one dataset, without --unit-from)"
        )
    return file_format


def _is_data(rel: PurePosixPath) -> bool:
    return not any(part.startswith((".", "_")) for part in rel.parts)


def listing(root: Path, fmt: FileFormat) -> tuple[list[PurePosixPath], int]:
    """``(files, skipped)``: the relative paths of the folder's files of
    format ``fmt`` (by name), sorted, and how many other data files it holds.
    Public: the names alone."""
    ends = tuple(e + (".gz" if fmt.gzip else "") for e in EXTENSIONS[(fmt.kind, fmt.delimiter)])
    found: list[PurePosixPath] = []
    skipped = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        base = PurePosixPath(Path(dirpath).relative_to(root).as_posix())
        for name in filenames:
            rel = base / name
            if not _is_data(rel):
                continue
            if name.lower().endswith(ends):
                found.append(rel)
            else:
                skipped += 1
    return sorted(found, key=lambda p: p.parts), skipped


def check_rule(where: str, rule: str, files: list[PurePosixPath]) -> tuple[list[PurePosixPath], int]:
    """``(files, stray)``: the files that belong to a unit under ``rule``,
    and how many do not. With ``--unit-from folder`` a file lying directly
    in the folder is in no unit's sub-folder: it is left alone and counted
    (a private note), never a refusal, so that whether a release happens
    never hinges on one stray file. ValueError for an unknown rule (an
    option)."""
    if rule not in UNIT_FROM:
        raise ValueError(f"unit_from must be one of {', '.join(UNIT_FROM)}, got {rule!r}")
    if rule != "folder":
        return files, 0
    kept = [rel for rel in files if len(rel.parts) > 1]
    return kept, len(files) - len(kept)


def unit_of(rel: PurePosixPath, rule: str) -> bytes:
    """The unit of a file at ``rel``: its relative path (``file``) or its
    first folder's name (``folder``), as text's bytes: an id typed as text."""
    text = rel.as_posix() if rule == "file" else rel.parts[0]
    return text.encode("utf-8", "surrogateescape")


__all__ = [
    "EXTENSIONS",
    "FOLDER_FORMATS",
    "LEDGER_UNIT",
    "UNIT_FROM",
    "UNIT_WORDS",
    "check_rule",
    "folder_format",
    "listing",
    "unit_of",
    "unit_option",
    "unit_words",
]
