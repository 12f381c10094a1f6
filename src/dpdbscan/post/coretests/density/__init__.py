"""Core sub-cells from an estimate of the alpha-ball count (``core="density"``).

The paper calls a cell core when the noisy *upper bound* UB~(X), the noisy
counts of all kappa cells within alpha of X, reaches a threshold. Those kappa
cells cover several times the volume of an alpha-ball, so core regions swell
past the data and close clusters merge. This module instead *estimates* the
number of points within alpha of the points of each sub-cell q:

    E~(q) = sum_Y W(q, Y) x~_Y,

where x~_Y is the released noisy count of cell Y and the weight

    W(q, Y) = E_{p ~ U(q)} |B(p, alpha) & Y| / |Y|

is the expected fraction of Y within alpha of a uniform point of q. If points
were uniform inside each cell, E(q) (the same sum over the true counts) would
be the expected alpha-ball count of a uniform point of q, the quantity DBSCAN
thresholds at MinPts. ``estimate="centre"`` uses the ball around q's centre
instead of the average over q.

A sub-cell is core iff E~(q) >= MinPts + m(q), where the margin m(q) depends
only on public quantities: the weights, the noise law of the release
(discrete or continuous Laplace at its epsilon), beta and the number of
sub-cells k^d |X| (see :func:`margin`).

Privacy
-------
Everything here is post-processing of the released :class:`NoisyHistogram`
together with public parameters (grid, MinPts, beta, the margin rule): no
function reads the points, so the output inherits the release's
(epsilon, delta)-DP guarantee unchanged.

Facts used by the guarantee (docs/density-notes.md)
---------------------------------------------------
* ``0 <= W(q, Y) <= 1`` and ``W(q, Y) > 0`` only for Y in NB(q), the cells at
  minimum distance < alpha from q. Hence E(q) <= UB(q) = sum_{NB(q)} x_Y.
* ``W(q, Y) = 1`` when every point of Y is within alpha of every point of q.
* ``sum_Y W(q, Y) = V_d (alpha / w)^d``, the volume of the alpha-ball in cells.
"""

from .coresubcells import DensityCore, DensityField, density_field, fine_grid, utility_problems
from .densitymargin import (
    Margin,
    accuracy_margin,
    empty_truncation,
    margin,
    noise_variance,
    weighted_quantile,
    weighted_tail_bound,
)
from .weightedsums import dense_weighted_sums, weighted_sums_at
from .weights import BallWeights, ball_weights

__all__ = [
    "BallWeights",
    "DensityCore",
    "DensityField",
    "Margin",
    "accuracy_margin",
    "ball_weights",
    "density_field",
    "dense_weighted_sums",
    "empty_truncation",
    "fine_grid",
    "margin",
    "noise_variance",
    "utility_problems",
    "weighted_quantile",
    "weighted_sums_at",
    "weighted_tail_bound",
]
