"""Noise for cell counts: exact discrete Laplace (default), continuous Laplace
(the paper's variant), none (only for the oracle test of the pipeline), and
the exact discrete Gaussian for L2-calibrated (zCDP) releases, which is built
by :func:`make_gaussian_noise` from sigma^2 rather than by :func:`make_noise`
from epsilon.

Each class answers the questions the histograms ask of a noise distribution Z:
draw ``n`` samples, the tail ``P(Z >= theta)`` (as a float, and as the exact
real number the empty-cell sampler of the sparse histogram needs), and draws
of ``Z`` conditioned on ``Z >= theta``.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from ...cells.grid import Grid
from ...laws import discretegaussian as _gaussian_law
from ...laws import noise as laws
from ...laws import zcdp
from ...params.specs import NoiseSpec
from ..samplers import gaussian as _gaussian
from ..samplers import integers as _random
from ..samplers.gaussian_tail import GaussianTailProbability
from ..samplers.integers import Source
from ..samplers.skipping import TailProbability


class DiscreteLaplace:
    """P(Z = z) proportional to exp(-epsilon |z|) on the integers (geometric mechanism).

    Sampled exactly with integer comparisons, for epsilon rounded *down* to
    a fraction with denominator at most 2**20: by inversion of a lazily
    refined uniform (:mod:`dpdbscan.release.samplers.inversion`), or below
    epsilon about 0.0027 by Canonne-Kamath-Steinke's rounds.
    """

    name = "discrete"
    integer = True

    def __init__(self, epsilon: float) -> None:
        self.fraction = _random.rational_epsilon(epsilon)
        self.epsilon = self.scale = float(self.fraction)

    def sample(self, source: Source, n: int) -> np.ndarray:
        return _random.discrete_laplace(source, int(n), self.fraction)

    def tail(self, theta: float) -> float:
        """P(Z >= theta): q^k / (1 + q) for k = ceil(theta) >= 1, q = exp(-epsilon)."""
        return laws.tail(self.name, self.epsilon, theta)

    def exact_tail(self, theta: float) -> TailProbability:
        """P(Z >= theta) = q^k / (1 + q) exactly, k = ceil(theta), for theta >= 0
        (epsilon is the rounded-down fraction the noise is drawn with)."""
        if not theta >= 0:
            raise ValueError(f"the exact tail needs theta >= 0, got theta={theta!r}")
        return TailProbability.discrete(self.fraction, theta)

    def sample_tail(self, source: Source, n: int, theta: float, compiled: bool = False) -> np.ndarray:
        """Z conditioned on Z >= theta (theta >= 0): theta + Geometric, exactly.
        ``compiled``: the geometric's rounds compiled, the same words and values."""
        k = math.ceil(theta)
        if k < 0:
            # below 0 the conditional law is not theta + Geometric
            raise ValueError(f"the discrete tail sampler needs theta >= 0, got theta={theta!r}")
        return k + _random.discrete_geometric(source, int(n), self.fraction, compiled)


class ContinuousLaplace:
    """Lap(1/epsilon) in floating point, as in the paper (not exact: see docs)."""

    name = "laplace"
    integer = False

    def __init__(self, epsilon: float) -> None:
        self.epsilon = self.scale = float(epsilon)

    def sample(self, source: Source, n: int) -> np.ndarray:
        u = _random.uniform01(source, int(n)) - 0.5
        # inverse CDF; u = -0.5 exactly has probability 2^-53 and maps to -inf, so nudge
        u = np.where(u == -0.5, -0.5 + 2.0**-54, u)
        return -np.sign(u) * np.log1p(-2.0 * np.abs(u)) / self.epsilon

    def tail(self, theta: float) -> float:
        return laws.tail(self.name, self.epsilon, theta)

    def exact_tail(self, theta: float) -> TailProbability:
        """P(Z >= theta) = exp(-epsilon theta) / 2 as a real number (theta >= 0):
        which empty cells are released is then exact; their values are not."""
        if not theta >= 0:
            raise ValueError(f"the exact tail needs theta >= 0, got theta={theta!r}")
        return TailProbability.continuous(self.epsilon, theta)

    def sample_tail(self, source: Source, n: int, theta: float) -> np.ndarray:
        if theta < 0:
            raise ValueError("the continuous tail sampler needs theta >= 0")
        u = _random.uniform01(source, int(n))
        return theta - np.log1p(-u) / self.epsilon


class DiscreteGaussian:
    """P(Z = z) proportional to exp(-z^2 / (2 sigma^2)) on the integers.

    Sampled exactly with integer arithmetic (Canonne-Kamath-Steinke 2020,
    Algorithm 3; :mod:`dpdbscan.release.samplers.gaussian`). Calibrated by sigma^2, not
    epsilon: adding it to every cell of a histogram whose L2 sensitivity is
    Delta is ``Delta^2 / (2 sigma^2)``-zCDP (:meth:`rho`).

    Parameters
    ----------
    sigma2 : float or Fraction
        The variance parameter sigma^2 > 0. It is rounded *up* to a rational
        with denominator at most 2**20 on which the sampler runs vectorised
        (:func:`dpdbscan.release.samplers.gaussian.rational_sigma2`): more noise, never less,
        so the privacy guarantee computed from the requested sigma^2 still
        holds. The relative increase is below 1e-5 for 1 <= sigma <= 1e6
        (2^-20 / sigma^2 at most for small sigma); integers and Fractions
        with small denominators are kept as they are.

    Attributes
    ----------
    fraction : Fraction
        The sigma^2 the noise is drawn with.
    sigma2, sigma : float
        sigma^2 and sigma (floats of ``fraction``).
    """

    name = "gaussian"
    integer = True

    def __init__(self, sigma2: float | Fraction) -> None:
        self.fraction = _gaussian.rational_sigma2(sigma2)
        self.sigma2 = self.scale = float(self.fraction)
        self.sigma = math.sqrt(self.sigma2)

    @functools.cached_property
    def variance(self) -> float:
        """Var Z by summation: slightly below sigma^2 (by about
        8 pi^2 sigma^4 exp(-2 pi^2 sigma^2), 2e-7 at sigma = 1)."""
        return _gaussian_law.variance(self.sigma2)

    @property
    def std(self) -> float:
        return math.sqrt(self.variance)

    def rho(self, l2_sensitivity: float) -> float:
        """zCDP rho of adding this noise at L2 sensitivity Delta:
        Delta^2 / (2 sigma^2), exact for the drawn sigma^2, rounded up."""
        return zcdp.gaussian_rho(self.fraction, l2_sensitivity)

    def sample(self, source: Source, n: int) -> np.ndarray:
        return _gaussian.discrete_gaussian(source, int(n), self.fraction)

    def tail(self, theta: float) -> float:
        """P(Z >= theta) = P(Z >= ceil(theta)), summed in log space."""
        return _gaussian_law.tail(self.sigma2, theta)

    def log_tail(self, theta: float) -> float:
        """log P(Z >= theta), finite far below the smallest float."""
        return _gaussian_law.log_tail(self.sigma2, theta)

    def cdf(self, z: float) -> float:
        """P(Z <= z)."""
        return _gaussian_law.cdf(self.sigma2, z)

    def log_mgf(self, lam: ArrayLike) -> np.ndarray:
        """log E exp(lam Z) (elementwise), at most lam^2 sigma^2 / 2."""
        return _gaussian_law.log_mgf(self.sigma2, lam)

    def tail_mgf(self, t: float, lam: float) -> float:
        """E[exp(lam Z); Z >= t]."""
        return _gaussian_law.tail_mgf(self.sigma2, t, lam)

    def exact_tail(self, theta: float) -> GaussianTailProbability:
        """P(Z >= theta) as the exact real number of the empty-cell sampler
        (rigorous intervals; theta >= 0)."""
        if not theta >= 0:
            raise ValueError(f"the exact tail needs theta >= 0, got theta={theta!r}")
        return GaussianTailProbability(self.fraction, math.ceil(theta))

    def sample_tail(self, source: Source, n: int, theta: float) -> np.ndarray:
        """Z conditioned on Z >= theta (theta >= 0), exactly
        (:func:`dpdbscan.release.samplers.gaussian.discrete_gaussian_tail`)."""
        if not theta >= 0:
            raise ValueError(f"the discrete Gaussian tail sampler needs theta >= 0, got theta={theta!r}")
        return _gaussian.discrete_gaussian_tail(source, int(n), self.fraction, math.ceil(theta))


Noise = DiscreteLaplace | ContinuousLaplace | DiscreteGaussian

#: The dimension from which a dense release of at least
#: :data:`COMPILED_NOISE_CELLS` cells draws its discrete Laplace noise with
#: compiled bookkeeping (:func:`compiled_noise`): there the density test
#: loads numba anyway (its kernels from 4-D up)
COMPILED_NOISE_FROM_D = 4
COMPILED_NOISE_CELLS = 1 << 20
#: ... and in 3-D from this many cells, where the density test's compiled
#: steps on large dense grids begin (``post.coretests.density.cover.COMPILED_DENSE_CELLS``)
COMPILED_NOISE_CELLS_3D = 1 << 21


def compiled_noise(grid: Grid) -> bool:
    """Whether a dense release on ``grid`` draws its discrete Laplace noise
    through the compiled rounds (:func:`~dpdbscan.release.samplers.integers.discrete_laplace`
    with ``compiled``): the same words and the same values, in less CPU
    (4-D, 4.1M cells: 0.11 s to 0.06 s). Only the CKS rounds have compiled
    steps, so this matters only below epsilon about 0.0027; above it the
    inversion sampler draws the noise either way (0.03 s for 3.8M cells).
    Public sizes only; a 2-D release never loads numba."""
    if grid.d >= COMPILED_NOISE_FROM_D:
        return grid.n_cells >= COMPILED_NOISE_CELLS
    return grid.d == 3 and grid.n_cells >= COMPILED_NOISE_CELLS_3D


#: The expected number of empty cells a sparse release selects (public: its
#: cells times P(Z >= theta)) from which, from :data:`COMPILED_NOISE_FROM_D`
#: up, their positions and values are drawn with compiled steps
#: (:func:`compiled_tail`)
COMPILED_TAIL_CELLS = 1 << 16


def compiled_tail(grid: Grid, noise: Noise, theta: float) -> bool:
    """Whether a sparse release on ``grid`` draws the empty cells it
    releases (each with probability P(Z >= ``theta``)) through compiled steps: the
    geometric gaps' digits (:func:`~dpdbscan.release.samplers.skipping.bernoulli_positions`)
    and, for discrete Laplace noise, the tail values' rounds
    (:func:`tail_values`): the same words and the same release, in less
    CPU. From 4-D up, where the density test loads numba anyway, and many
    expected cells (public sizes only)."""
    if grid.d < COMPILED_NOISE_FROM_D or not theta >= 0:
        return False
    return grid.n_cells * noise.tail(theta) >= COMPILED_TAIL_CELLS


def tail_values(noise: Noise, source: Source, n: int, theta: float, compiled: bool) -> np.ndarray:
    """``noise.sample_tail(source, n, theta)``, the values of the empty
    cells a sparse release selects, through the compiled rounds with
    ``compiled`` (discrete Laplace): the same values from the same words."""
    if compiled and isinstance(noise, DiscreteLaplace):
        return noise.sample_tail(source, n, theta, compiled=True)
    return noise.sample_tail(source, n, theta)


def dense_noise(noise: Noise, source: Source, grid: Grid) -> np.ndarray:
    """``noise.sample(source, grid.n_cells)``, the noise of every cell of a
    dense release, through the compiled rounds where :func:`compiled_noise`
    says so (discrete Laplace): the same noise from the same words."""
    if isinstance(noise, DiscreteLaplace) and compiled_noise(grid):
        return _random.discrete_laplace(source, grid.n_cells, noise.fraction, compiled=True)
    return noise.sample(source, grid.n_cells)


def noise_of(spec: NoiseSpec) -> Noise:
    """The noise a release's :class:`~dpdbscan.params.specs.NoiseSpec` describes:
    one count's Laplace noise at ``scale`` (epsilon over the L1 sensitivity),
    or the discrete Gaussian with sigma^2 = ``scale``."""
    return noise_at(spec.kind, spec.scale)


def noise_at(kind: str, scale: float) -> Noise:
    """The noise of family ``kind`` at its parameter ``scale`` (Laplace: the
    epsilon one count is drawn with; Gaussian: sigma^2)."""
    if kind == "discrete":
        return DiscreteLaplace(scale)
    if kind == "laplace":
        return ContinuousLaplace(scale)
    if kind == "gaussian":
        return DiscreteGaussian(scale)
    raise ValueError(f"noise must be 'discrete', 'laplace' or 'gaussian', got {kind!r}")


__all__ = [
    "DiscreteLaplace",
    "ContinuousLaplace",
    "DiscreteGaussian",
    "Noise",
    "compiled_noise",
    "compiled_tail",
    "dense_noise",
    "noise_at",
    "tail_values",
    "noise_of",
]
