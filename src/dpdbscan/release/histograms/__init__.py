"""DP histograms over grid cells, where the budget is spent: the naive (dense)
histogram, the linear-time sparse one (the paper's Algorithm 2), the (epsilon,
delta) stability histogram, and the noise they draw.

Only :mod:`dpdbscan.release.mechanism` calls these; post-processing reads their
output, :class:`~dpdbscan.cells.histogram.NoisyHistogram`, and never imports them.
"""

from .countnoise import ContinuousLaplace, DiscreteGaussian, DiscreteLaplace, noise_of
from .dense import dense_histogram
from .sparse import sparse_histogram
from .stability import stability_histogram

__all__ = [
    "dense_histogram",
    "sparse_histogram",
    "stability_histogram",
    "noise_of",
    "DiscreteLaplace",
    "ContinuousLaplace",
    "DiscreteGaussian",
]
