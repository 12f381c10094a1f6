"""Backends count points per cell: the only stage that reads the raw points.

A backend is any object with ``count(grid, X) -> CellCounts``; everything after
it (noise, neighbour sums, merging) runs on cells, on the driver. The numpy
backend is the reference.
"""

from .base import CellCounts, get_backend
from .numpy_backend import NumpyBackend

__all__ = ["CellCounts", "NumpyBackend", "get_backend"]
