"""The naive Laplace histogram: independent noise on every one of the |X| cells.

epsilon-DP under add/remove-one-point: the count vector has l1-sensitivity 1
(Theorem "Laplace histogram"; with integer noise, the geometric mechanism).
O(|X|) time and memory, so it is only used for small universes.
"""

from __future__ import annotations

import numpy as np

from ...cells.grid import Grid
from ...cells.histogram import NoisyHistogram
from ..samplers.integers import Source
from .countnoise import Noise, dense_noise


def dense_histogram(
    grid: Grid,
    counts: np.ndarray,
    noise: Noise,
    source: Source,
    epsilon: float,
    delta: float,
    z: np.ndarray | None = None,
) -> NoisyHistogram:
    """Release ``counts`` (array of ``grid.shape``) plus noise on every cell,
    a release stated as (``epsilon``, ``delta``)-DP.

    ``z``, when given, is ``dense_noise(noise, source, grid)`` drawn
    beforehand (it does not depend on the data), used once, here: the noisy
    counts may be written into it.
    """
    if z is None:
        z = dense_noise(noise, source, grid)
    z = z.reshape(counts.shape)
    if noise.integer and np.result_type(counts, z) == z.dtype:
        # the noise was drawn for this release alone: the sum goes into its
        # array (one large array fewer to allocate and first touch)
        values = np.add(z, counts, out=z)
    else:
        values = counts + z if noise.integer else counts.astype(np.float64) + z
    return NoisyHistogram(
        grid=grid,
        kind="dense",
        values=values,
        keys=None,
        theta=-np.inf,
        noise=noise.name,
        scale=noise.scale,
        epsilon=epsilon,
        delta=delta,
    )
