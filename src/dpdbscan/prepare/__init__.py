"""The door: the private input prepared once, for the estimator and the
command line alike (:mod:`.door`).

Points or files, the columns, the units, the public box and the lon/lat
projection (:mod:`.box`), the per-unit preparation steps
(:data:`~dpdbscan.prepare.prepared.Transform`) and the private notes
(:mod:`.notes`, :mod:`.clipping`). Public inputs steer everything here; what
is read from the points is said only as a private note on standard error.
"""

from .box import Box, project_box, public_box, read_length, split_bounds
from .door import (
    Source,
    check_layout_early,
    check_source,
    check_unit_ids,
    in_memory,
    local_formats_only,
    n_features_of,
    prepare,
    read_file,
)
from .notes import PRIVATE, Notes
from .prepared import Points, Transform

__all__ = [
    "PRIVATE",
    "Box",
    "Notes",
    "Points",
    "Source",
    "Transform",
    "check_layout_early",
    "check_unit_ids",
    "in_memory",
    "read_length",
    "local_formats_only",
    "n_features_of",
    "prepare",
    "project_box",
    "public_box",
    "read_file",
    "check_source",
    "split_bounds",
]
