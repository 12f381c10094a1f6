"""DP histograms over grid cells, where epsilon is spent: the naive (dense)
Laplace histogram, the linear-time sparse one (the paper's Algorithm 2), the
(epsilon, delta) stability histogram, and the noise they draw.

Only :mod:`dpdbscan.pipeline` calls these; post-processing reads their
output, :class:`~dpdbscan.cells.histogram.NoisyHistogram`, and never imports them.
"""

from .dense import dense_histogram
from .noise import ContinuousLaplace, DiscreteLaplace, NoNoise, make_noise
from .sparse import default_theta, sparse_histogram
from .stability import stability_histogram, stability_theta

__all__ = [
    "dense_histogram",
    "sparse_histogram",
    "stability_histogram",
    "default_theta",
    "stability_theta",
    "make_noise",
    "DiscreteLaplace",
    "ContinuousLaplace",
    "NoNoise",
]
