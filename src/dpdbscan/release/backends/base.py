"""The backend interface: exact per-cell counts of points.

Counting points per cell is the only stage that reads the raw points and the
only one linear in their number; everything after it (noise, neighbour sums,
merging) runs on cells, on the driver. A backend is anything that satisfies
:class:`Backend`; the numpy backend is the reference.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from ...cells.grid import Grid

if TYPE_CHECKING:
    import dask.array as da
    import dask.dataframe as dd

#: The points a backend reads: an array-like of points or, with a distributed
#: backend, paths or globs of Parquet/CSV files, dask DataFrames or dask arrays.
PointsInput: TypeAlias = (
    "ArrayLike | str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | dd.DataFrame | da.Array"
)


@dataclass
class CellCounts:
    """Exact counts of the occupied cells, keys sorted ascending (private data)."""

    keys: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return int(self.keys.size)


@runtime_checkable
class Backend(Protocol):
    """Counts the points of ``X`` per cell of ``grid``.

    Contract: ``count(grid, X)`` equals the counts of
    ``clean_points(grid, X)`` (:mod:`dpdbscan.release.points`: rows with NaN/inf
    dropped, the rest clipped into the box), as sorted unique keys with their
    counts. The mechanism checks the keys are unique (a duplicate would change
    a count's sensitivity) and puts them in order.

    A backend that also has ``dense_counts`` is a :class:`DenseBackend`.
    """

    def count(self, grid: Grid, X: Any) -> CellCounts: ...


@runtime_checkable
class DenseBackend(Backend, Protocol):
    """A backend that can also return the counts of every cell as an array of
    ``grid.shape`` (faster for small universes than keys and counts)."""

    def dense_counts(self, grid: Grid, X: Any) -> np.ndarray: ...


@runtime_checkable
class UnitBackend(Backend, Protocol):
    """A backend that can bound each privacy unit's contribution before
    counting (:mod:`dpdbscan.release.bounding`).

    Contract: ``count_units(grid, X, units, bound, key)`` equals
    :func:`dpdbscan.release.bounding.count_units` on the same rows and the
    same key: the pairs each unit keeps depend on the unit, its cells and the
    key only, so a backend that sees each unit's rows together gets the same
    counts however the rows are split.
    """

    def count_units(self, grid: Grid, X: Any, units: Any, bound: Any, key: Any) -> CellCounts: ...


@runtime_checkable
class UnitChoiceBackend(UnitBackend, Protocol):
    """A backend that can also let the bound be chosen from the number of
    cells of each unit (``max_cells_per_unit="auto"``) in the same pass.

    Contract: ``count_units_choosing(grid, X, units, choose, key)`` calls
    ``choose`` exactly once, with the number of distinct cells of every unit
    that has a row after the per-record rule (any order), and returns what
    ``count_units(grid, X, units, choose(...), key)`` would:
    :func:`dpdbscan.release.bounding.count_units_choosing` on the same rows.
    """

    def count_units_choosing(self, grid: Grid, X: Any, units: Any, choose: Any, key: Any) -> CellCounts: ...


__all__ = ["Backend", "DenseBackend", "UnitBackend", "UnitChoiceBackend", "CellCounts", "PointsInput"]
