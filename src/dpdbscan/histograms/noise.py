"""Noise for cell counts: exact discrete Laplace (default), continuous Laplace
(the paper's variant) or none (only for the oracle test of the pipeline).

Each class answers the questions the histograms ask of a noise distribution Z:
draw ``n`` samples, the tail ``P(Z >= theta)`` (as a float, and as the exact
real number the empty-cell sampler of the sparse histogram needs), and draws
of ``Z`` conditioned on ``Z >= theta``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _random
from .._bernoulli import TailProbability
from .._random import Source


class DiscreteLaplace:
    """P(Z = z) proportional to exp(-epsilon |z|) on the integers (geometric mechanism).

    Sampled exactly with integer arithmetic (Canonne-Kamath-Steinke), for
    epsilon rounded *down* to a fraction with denominator at most 2**20.
    """

    name = "discrete"
    integer = True

    def __init__(self, epsilon: float) -> None:
        self.fraction = _random.rational_epsilon(epsilon)
        self.epsilon = float(self.fraction)

    def sample(self, source: Source, n: int) -> np.ndarray:
        return _random.discrete_laplace(source, int(n), self.fraction)

    def tail(self, theta: float) -> float:
        """P(Z >= theta) for theta >= 1: q^theta / (1 + q), q = exp(-epsilon)."""
        k = math.ceil(theta)
        q = math.exp(-self.epsilon)
        if k <= 0:
            return 1.0 - (q ** (-k + 1)) / (1.0 + q) if k < 0 else 1.0 / (1.0 + q)
        return q**k / (1.0 + q)

    def exact_tail(self, theta: float) -> TailProbability:
        """P(Z >= theta) = q^k / (1 + q) exactly, k = ceil(theta), for theta >= 0
        (epsilon is the rounded-down fraction the noise is drawn with)."""
        if not theta >= 0:
            raise ValueError(f"the exact tail needs theta >= 0, got theta={theta!r}")
        return TailProbability.discrete(self.fraction, theta)

    def sample_tail(self, source: Source, n: int, theta: float) -> np.ndarray:
        """Z conditioned on Z >= theta (theta >= 0): theta + Geometric, exactly."""
        k = math.ceil(theta)
        if k < 0:
            # below 0 the conditional law is not theta + Geometric
            raise ValueError(f"the discrete tail sampler needs theta >= 0, got theta={theta!r}")
        return k + _random.discrete_geometric(source, int(n), self.fraction)


class ContinuousLaplace:
    """Lap(1/epsilon) in floating point, as in the paper (not exact: see docs)."""

    name = "laplace"
    integer = False

    def __init__(self, epsilon: float) -> None:
        self.epsilon = float(epsilon)

    def sample(self, source: Source, n: int) -> np.ndarray:
        u = _random.uniform01(source, int(n)) - 0.5
        # inverse CDF; u = -0.5 exactly has probability 2^-53 and maps to -inf, so nudge
        u = np.where(u == -0.5, -0.5 + 2.0**-54, u)
        return -np.sign(u) * np.log1p(-2.0 * np.abs(u)) / self.epsilon

    def tail(self, theta: float) -> float:
        if theta >= 0:
            return 0.5 * math.exp(-self.epsilon * theta)
        return 1.0 - 0.5 * math.exp(self.epsilon * theta)

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


class NoNoise:
    """Exact counts. Not differentially private: for tests of the pipeline only."""

    name = "none"
    integer = True
    epsilon = math.inf

    def sample(self, source: Source, n: int) -> np.ndarray:
        return np.zeros(int(n), dtype=np.int64)

    def tail(self, theta: float) -> float:
        return 0.0 if theta > 0 else 1.0

    def exact_tail(self, theta: float) -> None:
        """None: without noise every empty cell or none is released."""

    def sample_tail(self, source: Source, n: int, theta: float) -> np.ndarray:
        if n:
            raise AssertionError("no empty cell is released without noise")
        return np.zeros(0, dtype=np.int64)


NOISES = {"discrete": DiscreteLaplace, "laplace": ContinuousLaplace, "none": NoNoise}


Noise = DiscreteLaplace | ContinuousLaplace | NoNoise


def make_noise(kind: str, epsilon: float) -> Noise:
    try:
        cls = NOISES[kind]
    except KeyError:
        raise ValueError(f"noise must be one of {sorted(NOISES)}, got {kind!r}") from None
    return cls(epsilon) if cls is not NoNoise else NoNoise()
