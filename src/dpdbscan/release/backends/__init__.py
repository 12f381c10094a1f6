"""Backends count points per cell: the only stage that reads the raw points.

:func:`resolve_backend` turns the ``backend`` parameter ("numpy", "dask" or an
object satisfying :class:`Backend`) into a backend, once per fit.
"""

from __future__ import annotations

from ..._optional import require
from .base import Backend, CellCounts
from .numpy_backend import NumpyBackend


def resolve_backend(backend: Backend | str | None = None) -> Backend:
    """``None``/"numpy" -> :class:`NumpyBackend`; "dask" -> a new
    :class:`~dpdbscan.release.backends.dask_backend.DaskBackend`; a :class:`Backend`
    is returned as is."""
    if backend is None or backend == "numpy":
        return NumpyBackend()
    if backend == "dask":
        # dask is an optional extra, slow to import: load it only when asked for
        return require(f"{__name__}.dask_backend", "backend='dask'", package="dask").DaskBackend()
    if isinstance(backend, Backend):
        return backend
    raise ValueError(f"backend must be 'numpy', 'dask' or an object with count(), got {backend!r}")


__all__ = ["Backend", "CellCounts", "NumpyBackend", "resolve_backend"]
