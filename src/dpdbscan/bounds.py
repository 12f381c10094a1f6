"""The public margin Gamma and the additive error tau.

Notation (paper, Sections "Superset of Core Cells" and "Tighter Upper Bound"):

* kappa = |NB(X)|, the number of cells in an alpha-neighbourhood.
* |X|, the number of cells of the universe.
* beta, the failure probability of the accuracy guarantee.
* Gamma, a data-independent margin such that, with probability >= 1 - beta,
  every cell's noisy neighbour sum is within Gamma of its true neighbour sum.
* tau = 2 Gamma, the additive error of the sandwich guarantee.

Gamma_Lap = (2 sqrt 2 / epsilon) max(sqrt(kappa ln(2|X|/beta)), ln(2|X|/beta))
is the Laplace concentration bound of Chan, Shi and Song with a union bound
over all cells. It also holds for the discrete Laplace noise: its moment
generating function is dominated by the continuous one on |lambda| < epsilon
(docs/privacy.md), and the bound is proved from the MGF alone. Truncating
histograms (sparse, stability) lose up to theta per cell, hence
Gamma = kappa theta + Gamma_Lap there.
"""

from __future__ import annotations

import math


def gamma_laplace(epsilon: float, kappa: int, n_cells: int, beta: float) -> float:
    """Chan-Shi-Song concentration bound with a union bound over ``n_cells``."""
    if math.isinf(epsilon):
        return 0.0
    log_term = math.log(2.0) + math.log(n_cells) - math.log(beta)
    return 2.0 * math.sqrt(2.0) / epsilon * max(math.sqrt(kappa * log_term), log_term)


def gamma(epsilon: float, kappa: int, n_cells: int, beta: float, theta: float = 0.0) -> float:
    """Gamma for a histogram that truncates noisy counts below ``theta``."""
    trunc = kappa * max(theta, 0.0) if math.isfinite(theta) else 0.0
    return trunc + gamma_laplace(epsilon, kappa, n_cells, beta)


def tau(gamma_value: float) -> float:
    """Additive error of the sandwich guarantee: tau = 2 Gamma."""
    return 2.0 * gamma_value
