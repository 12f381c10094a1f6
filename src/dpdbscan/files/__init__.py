"""Files: points in (CSV, Parquet, .npy), labels out, saved models back in.

How a points file is read is decided from public input only, before any
record is read (:mod:`.layout`, :mod:`.formats`); its records are then read
one at a time by the per-record rules of :mod:`.records`.
"""

from .formats import FORMATS, LABEL_COLUMN, FileFormat, format_of, is_index_column
from .labels import write_labels
from .layout import ReadOptions, resolve_columns
from .reader import (
    InputPlan,
    InputPoints,
    check_parquet_columns,
    open_input,
    read_columns,
    read_input,
    read_points,
)

__all__ = [
    "FORMATS",
    "LABEL_COLUMN",
    "FileFormat",
    "InputPlan",
    "InputPoints",
    "ReadOptions",
    "format_of",
    "is_index_column",
    "open_input",
    "read_columns",
    "check_parquet_columns",
    "read_input",
    "read_points",
    "resolve_columns",
    "write_labels",
]
