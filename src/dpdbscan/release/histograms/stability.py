"""The stability-based (thresholded) histogram: (epsilon, delta)-DP.

Noise is added to occupied cells only and a cell is released when its noisy
count is at least theta_delta. A cell that exists in one neighbour and not in
the other holds one point; it is released with probability
P(1 + Z >= theta_delta) <= delta, which is where delta is spent (Korolova et
al. 2009; Balcer and Vadhan 2019). Linear time, no empty cells.
"""

from __future__ import annotations

import numpy as np

from ...cells.grid import Grid
from ...cells.histogram import NoisyHistogram
from ..backends.base import CellCounts
from ..samplers.integers import Source
from .countnoise import Noise


def stability_histogram(
    grid: Grid, cells: CellCounts, noise: Noise, source: Source, theta: float, epsilon: float, delta: float
) -> NoisyHistogram:
    """Noise on the occupied cells; those with a noisy count >= ``theta``
    (:func:`dpdbscan.plan.histogramchoice.stability_theta` for ``delta``) are
    released, a release stated as (``epsilon``, ``delta``)-DP."""
    z = noise.sample(source, cells.keys.size)
    noisy = cells.counts + z if noise.integer else cells.counts.astype(np.float64) + z
    keep = noisy >= theta
    return NoisyHistogram(
        grid=grid,
        kind="stability",
        values=noisy[keep],
        keys=cells.keys[keep],
        theta=theta,
        noise=noise.name,
        scale=noise.scale,
        epsilon=epsilon,
        delta=delta,
    )
