"""DP histograms over grid cells: naive (dense), linear-time sparse, stability."""

from .base import NoisyHistogram, dense_neighbour_sums, lookup, neighbourhood, sparse_neighbour_sums
from .dense import dense_histogram
from .noise import ContinuousLaplace, DiscreteLaplace, NoNoise, make_noise
from .sparse import default_theta, sparse_histogram
from .stability import stability_histogram, stability_theta

__all__ = [
    "NoisyHistogram", "dense_histogram", "sparse_histogram", "stability_histogram",
    "default_theta", "stability_theta", "make_noise", "DiscreteLaplace",
    "ContinuousLaplace", "NoNoise", "dense_neighbour_sums", "sparse_neighbour_sums",
    "lookup", "neighbourhood",
]
