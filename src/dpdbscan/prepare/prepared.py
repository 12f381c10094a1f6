"""The prepared input: what the door hands to the mechanism."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..geometry.projection import Equirectangular


@dataclass
class Points:
    """A fit's input as the mechanism receives it.

    ``X`` is in the fit's coordinates (km with ``--geo``): a float array for
    the in-memory (numpy) path, else what a distributed backend reads itself
    (paths, dask objects). ``lower`` and ``upper`` are the public box in the
    same coordinates, ``proj`` the lon/lat projection (or None), ``d`` the
    number of coordinates. ``counts``: :func:`~dpdbscan.prepare.clipping.clipping_counts`
    of ``X`` when the reader already made them (else None). ``units`` the
    privacy unit of every row (None: each row is its own unit; a column's
    name for a distributed backend), as given or read: a numpy array from
    memory, a pyarrow array from a file (binary for CSV, the declared type
    for Parquet; :func:`dpdbscan.release.bounding.factorize` takes both),
    and ``unit_name`` its column;
    ``names`` the coordinate columns (``geometry``: the format, e.g.
    ``"GeoJSON"``, when they are its points' geometry, not columns a user can
    name, else None) and ``schema_names`` every column's
    name from a declared header or schema (None: none declared). ``meta``
    is what the model records about the box (public). ``times`` and
    ``status``: a trace's times as float seconds (:func:`dpdbscan.traces.parse_times`
    of the column as read; NaN: no time) and its 0/1 status column as read (row for row
    with ``X``; None unless :attr:`~dpdbscan.prepare.door.Source.time_column`
    asks for them), for the per-unit steps that make stops or trip ends.
    ``read_names``: the coordinate columns a distributed backend will read
    where ``names`` is None (no columns given): from the declared header or
    schema as the in-memory reader names them (public), for the private
    notes and the model's ``metadata.columns``, as ``names`` in memory.

    Private but for the box, the names and ``meta``.
    """

    X: Any
    names: list | None
    lower: np.ndarray
    upper: np.ndarray
    proj: Equirectangular | None = None
    counts: dict | None = None
    units: Any = None
    unit_name: str | None = None
    schema_names: list | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    times: Any = None
    status: Any = None
    geometry: str | None = None
    read_names: list | None = None

    @property
    def d(self) -> int:
        return int(np.asarray(self.lower).size)

    @property
    def in_memory(self) -> bool:
        return isinstance(self.X, np.ndarray)


#: A per-unit (or per-row) step of the preparation, applied by the door after
#: the points are read and projected and before the release bounds each
#: unit's contribution (:data:`dpdbscan.prepare.door.Source.transforms`).
#: It takes the prepared points (in memory, in the fit's coordinates, km with
#: ``--geo``) and returns new ones, e.g. with one row per detected stop.
#: It must be a per-unit rule: what it makes of one unit's rows may depend on
#: those rows and on public parameters only, never on another unit's rows
#: (then adding or removing a unit changes only that unit's output rows, and
#: the contribution bound after it keeps the release's sensitivity). It must
#: not fail on any rows: a row it cannot use is dropped, never fatal, so that
#: whether a release happens cannot hinge on one record; an error it raises on
#: public input (a bad option) quotes no value read from the data.
Transform = Callable[[Points], Points]
