"""The backend interface: exact per-cell counts of points."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class CellCounts:
    """Exact counts of the occupied cells, keys sorted ascending (private data)."""

    keys: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return int(self.keys.size)


def get_backend(backend):
    """Resolve ``backend`` ("numpy", "dask", or an object with ``count``)."""
    if backend is None or backend == "numpy":
        from .numpy_backend import NumpyBackend

        return NumpyBackend()
    if backend == "dask":
        try:
            from .dask_backend import DaskBackend
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise ImportError(
                "backend='dask' needs the dask extra: pip install 'dpdbscan[dask]'"
            ) from exc
        return DaskBackend()
    if hasattr(backend, "count"):
        return backend
    raise ValueError(f"backend must be 'numpy', 'dask' or an object with count(), got {backend!r}")
