"""The released noisy histogram: the data type of the DP release.

A :class:`NoisyHistogram` is what the mechanism (``dpdbscan.pipeline``)
publishes and what every later step reads. Building one spends epsilon
(``dpdbscan.release.histograms``); holding, reading or saving one does not. This
module only defines the container, so that post-processing can read a release
without importing the code that makes it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..laws.noise import TypedNoiseParameter
from .grid import Grid, lookup


@dataclass(frozen=True, eq=False)
class NoisyHistogram(TypedNoiseParameter):
    """A DP release of per-cell counts.

    ``kind == "dense"``: ``values`` has ``grid.shape`` and covers every cell.
    Otherwise (``"sparse"``, ``"stability"``): only cells with a noisy count
    ``>= theta`` are released, as sorted ``keys`` with ``values``; every other
    cell reads as 0.

    Attributes
    ----------
    grid : Grid
        The public grid of the cells.
    kind : {"dense", "sparse", "stability"}
    values : ndarray
        Noisy counts (int64 for discrete noise, float64 for continuous).
    keys : ndarray or None
        Sorted keys of the released cells (sparse and stability only).
    theta : float
        Release threshold (``-inf`` for dense).
    noise : {"discrete", "laplace", "gaussian"}
        The noise's kind (``"none"`` only in the tests' exact releases).
    scale : float
        The noise's parameter, as drawn: the epsilon of one count's discrete
        or continuous Laplace noise (rounded down), or the discrete
        Gaussian's sigma^2 (rounded up). The margins read it
        (:mod:`dpdbscan.laws.noise`, by family); :attr:`count_epsilon` and
        :attr:`sigma2` name it by family, as the model file does.
    epsilon, delta : float
        The privacy the release states.
    """

    grid: Grid
    kind: str
    values: np.ndarray
    keys: np.ndarray | None
    theta: float
    noise: str
    scale: float
    epsilon: float
    delta: float

    def _noise_parameter(self) -> tuple[str, float]:
        return self.noise, self.scale

    @property
    def released_keys(self) -> np.ndarray:
        """Sorted keys of the released cells of a sparse or stability release."""
        if self.keys is None:
            raise ValueError("a dense histogram covers every cell: it has no list of released keys")
        return self.keys

    @property
    def n_released(self) -> int:
        return int(self.values.size)

    def sparse(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted keys, values) of the cells with a non-zero noisy value."""
        if self.kind != "dense":
            assert self.keys is not None
            return self.keys, self.values
        flat = self.values.ravel()
        nz = np.flatnonzero(flat)
        coords = np.stack(np.unravel_index(nz, self.grid.shape), axis=1)
        keys = self.grid.encode(coords)
        order = np.argsort(keys, kind="stable")
        return keys[order], flat[nz][order]

    def on_grid(self, grid: Grid) -> NoisyHistogram:
        """The same release on ``grid``, a grid with the same cells measured
        against another radius (:meth:`Grid.at_alpha`): the values are
        unchanged, the keys re-encoded. Post-processing, no privacy cost."""
        old = self.grid
        if grid is old:
            return self
        if not (
            grid.shape == old.shape
            and grid.width == old.width
            and np.array_equal(grid.lower, old.lower)
            and np.array_equal(grid.upper, old.upper)
        ):
            raise ValueError("on_grid needs a grid with exactly the release's cells (use grid.at_eps(alpha))")
        keys = None if self.keys is None else grid.encode(old.decode(self.keys))
        return replace(self, grid=grid, keys=keys)

    def value_at(self, keys: np.ndarray) -> np.ndarray:
        """Noisy value of the cells with the given keys (0 if not released)."""
        if self.kind == "dense":
            # read straight from the array: listing its non-zero cells first
            # (:meth:`sparse`) costs a pass and a sort over every cell
            keys = np.asarray(keys, dtype=np.int64)
            coords = self.grid.decode(keys)
            ok = self.grid.valid(coords)
            out = np.zeros(keys.size, dtype=self.values.dtype if np.any(self.values) else np.int64)
            out[ok] = self.values[tuple(coords[ok].T)]
            return out
        k, v = self.sparse()
        return lookup(k, v, keys)


__all__ = ["NoisyHistogram"]
