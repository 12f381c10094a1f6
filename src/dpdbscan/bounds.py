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

import functools
import math


def gamma_laplace(epsilon: float, kappa: int, n_cells: int, beta: float) -> float:
    """Chan-Shi-Song concentration bound with a union bound over ``n_cells``."""
    if math.isinf(epsilon):
        return 0.0
    log_term = math.log(2.0) + math.log(n_cells) - math.log(beta)
    return 2.0 * math.sqrt(2.0) / epsilon * max(math.sqrt(kappa * log_term), log_term)


def gamma(epsilon: float, kappa: int, n_events: int, beta: float, theta: float = 0.0, *,
          method: str = "paper", noise: str = "laplace") -> float:
    """Gamma for sums of ``kappa`` noisy counts, union bound over ``n_events``
    sums, for a histogram that truncates noisy counts below ``theta`` (the
    sparse and stability ones; ``theta <= 0`` for the dense one).

    ``method`` is "paper" (Chan-Shi-Song, :func:`gamma_laplace`) or "chernoff"
    (:func:`gamma_chernoff` with the exact MGF of ``noise``).
    """
    trunc = kappa * max(theta, 0.0) if math.isfinite(theta) else 0.0
    return trunc + noise_margin(method, noise, epsilon, kappa, n_events, beta)


def tau(gamma_value: float) -> float:
    """Additive error of the sandwich guarantee: tau = 2 Gamma."""
    return 2.0 * gamma_value


def approximation_ratio(eta: float, subcells: int = 1) -> float:
    """rho of the sandwich guarantee: 3 + eta/2 + eta/(2k) for k sub-cells per
    cell and dimension; k = 1 gives the paper's 3 + eta (docs/accuracy.md)."""
    return 3.0 + eta / 2 + eta / (2 * subcells)


# --------------------------------------------------------------------------- #
# Chernoff bound with the exact moment generating function of the noise


def _log_mgf(noise: str, epsilon: float, lam: float) -> float:
    """log E[exp(lam Z)] for one noise term, 0 <= lam < epsilon."""
    if noise == "discrete":
        # M = (1-q)^2 / ((1 - q e^lam)(1 - q e^-lam)), q = e^-epsilon: in logs,
        # so that no term overflows for large epsilon
        return (2.0 * math.log1p(-math.exp(-epsilon)) - math.log1p(-math.exp(lam - epsilon))
                - math.log1p(-math.exp(-lam - epsilon)))
    return -math.log1p(-((lam / epsilon) ** 2))


@functools.lru_cache(maxsize=256)
def gamma_chernoff(noise: str, epsilon: float, kappa: int, n_events: int, beta: float) -> float:
    """Smallest g with P(|sum of kappa noise terms| > g) <= beta / n_events by
    the Chernoff bound 2 min_lam exp(-lam g) M(lam)^kappa, M the exact MGF of
    the discrete (or continuous) Laplace noise.

    Rigorous like the paper's Gamma_Lap (which is a looser bound of the same
    kind) and about 20-25% smaller at the paper's parameters.
    """
    if math.isinf(epsilon):
        return 0.0
    from scipy.optimize import minimize_scalar

    target = math.log(beta) - math.log(n_events) - math.log(2.0)

    def log_tail(g: float) -> float:
        res = minimize_scalar(
            lambda lam: -lam * g + kappa * _log_mgf(noise, epsilon, lam),
            bounds=(1e-12 * epsilon, epsilon * (1 - 1e-9)), method="bounded",
            options={"xatol": 1e-10 * epsilon},
        )
        return min(res.fun, 0.0)

    hi = gamma_laplace(epsilon, kappa, n_events, beta)  # always sufficient
    lo = 0.0
    if log_tail(hi) > target:  # numerical safety: never exceed the paper's bound
        return hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if log_tail(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


MARGINS = ("chernoff", "paper")


def noise_margin(method: str, noise: str, epsilon: float, kappa: int, n_events: int,
                 beta: float) -> float:
    """Margin for the noise alone (no truncation) by the chosen bound."""
    if method == "paper":
        return gamma_laplace(epsilon, kappa, n_events, beta)
    if method == "chernoff":
        return gamma_chernoff(noise, epsilon, kappa, n_events, beta)
    raise ValueError(f"margin must be one of {MARGINS}, got margin={method!r}")
