"""The public margin Gamma and the additive error tau.

Notation (paper, Sections "Superset of Core Cells" and "Tighter Upper Bound"):

* kappa = |NB(X)|, the number of cells in an alpha-neighbourhood.
* |X|, the number of cells of the universe.
* beta, the failure probability of the accuracy guarantee.
* Gamma_low and Gamma_up, data-independent margins such that, with probability
  >= 1 - beta, every cell's noisy neighbour sum S(X) satisfies
  UB(X) - Gamma_low <= S(X) <= UB(X) + Gamma_up (UB(X) the true sum).
* tau = Gamma_low + Gamma_up, the additive error of the sandwich guarantee
  (2 Gamma for the dense histogram, where both sides are the same).

Gamma_Lap = (2 sqrt 2 / epsilon) max(sqrt(kappa ln(2|X|/beta)), ln(2|X|/beta))
is the Laplace concentration bound of Chan, Shi and Song with a union bound
over all cells. It also holds for the discrete Laplace noise: its moment
generating function is dominated by the continuous one on |lambda| < epsilon
(docs/privacy.md), and the bound is proved from the MGF alone. Truncating
histograms (sparse, stability) lose up to theta per cell, hence
Gamma = kappa theta + Gamma_Lap there.

That is the *lower* side only. A truncating histogram's error on one cell,
released minus true value, is the noise Z when the cell is released and -x
(x the true count) when it is not: it is at least Z - theta but at most
max(Z, 0), and a sum of kappa copies of max(Z, 0) has a positive mean and a
heavier upper tail than the two-sided bound covers. :func:`margins` bounds the
two sides separately (docs/accuracy.md §3.5, "Two margins for the sparse and
stability histograms"); ``Gamma`` alone (:func:`gamma`) is the lower margin.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ....laws import discretegaussian as _gaussian
from ....laws.noise import is_integer, lam_top, log_mgf, reach


def gamma_subgaussian(sigma2: float, kappa: int, n_cells: int, beta: float) -> float:
    """The two-sided bound for sums of ``kappa`` discrete Gaussian terms
    (sigma-subgaussian: E exp(lam Z) <= exp(lam^2 sigma^2 / 2)), union bound
    over ``n_cells``: sigma sqrt(2 kappa ln(2 |X| / beta))."""
    log_term = math.log(2.0) + math.log(n_cells) - math.log(beta)
    return math.sqrt(2.0 * kappa * sigma2 * log_term)


def _start(noise: str, scale: float, kappa: int, n_events: int, beta: float) -> float:
    """A two-sided margin that always suffices: the paper's Gamma_Lap for
    Laplace noise, the subgaussian bound for the Gaussian."""
    if noise == "gaussian":
        return gamma_subgaussian(scale, kappa, n_events, beta)
    return gamma_laplace(scale, kappa, n_events, beta)


def gamma_laplace(epsilon: float, kappa: int, n_cells: int, beta: float) -> float:
    """Chan-Shi-Song concentration bound with a union bound over ``n_cells``."""
    if math.isinf(epsilon):
        return 0.0
    log_term = math.log(2.0) + math.log(n_cells) - math.log(beta)
    return 2.0 * math.sqrt(2.0) / epsilon * max(math.sqrt(kappa * log_term), log_term)


def gamma(
    epsilon: float,
    kappa: int,
    n_events: int,
    beta: float,
    theta: float = 0.0,
    *,
    method: str = "paper",
    noise: str = "laplace",
) -> float:
    """Gamma for sums of ``kappa`` noisy counts, union bound over ``n_events``
    sums, for a histogram that truncates noisy counts below ``theta`` (the
    sparse and stability ones; ``theta <= 0`` for the dense one).

    ``method`` is "paper" (Chan-Shi-Song, :func:`gamma_laplace`) or "chernoff"
    (:func:`gamma_chernoff` with the exact MGF of ``noise``).
    """
    trunc = kappa * max(theta, 0.0) if math.isfinite(theta) else 0.0
    return trunc + noise_margin(method, noise, epsilon, kappa, n_events, beta)


def tau(gamma_value: float, gamma_upper: float | None = None) -> float:
    """Additive error of the sandwich guarantee: Gamma_low + Gamma_up
    (2 Gamma when the upper margin is not given, as for the dense histogram)."""
    return gamma_value + (gamma_value if gamma_upper is None else gamma_upper)


def truncation_loss(theta: float, integer: bool) -> float:
    """How far below ``Z`` a truncating histogram can put one cell's error.

    A cell that is not released has ``x + Z < theta`` and reads as 0, so its
    error ``-x`` exceeds ``Z - theta``. With integer counts and integer noise
    ``x + Z <= ceil(theta) - 1``, so the error is at least ``Z - (ceil(theta) - 1)``.
    Released cells have error exactly ``Z``. Returns the per-cell loss
    (0 without truncation).
    """
    if not math.isfinite(theta) or theta <= 0:
        return 0.0
    return float(max(math.ceil(theta) - 1, 0)) if integer else float(theta)


# --------------------------------------------------------------------------- #
# Chernoff bound with the exact moment generating function of the noise


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
    return _chernoff_margin(
        lambda lam: log_mgf(noise, epsilon, lam),
        noise,
        epsilon,
        kappa,
        n_events,
        beta,
        lam_low=1e-12,
        grow=False,
    )


def _chernoff_margin(
    log_mgf: Callable[[float], float],
    noise: str,
    epsilon: float,
    kappa: int,
    n_events: int,
    beta: float,
    *,
    lam_low: float,
    grow: bool,
) -> float:
    """Smallest g (60 bisection steps) with min_lam exp(-lam g) M(lam)^kappa
    <= beta / (2 n_events), ``log_mgf`` = log M of one term of ``noise`` at
    ``epsilon`` (its scale), lam searched from ``lam_low`` times the top of
    :func:`dpdbscan.laws.noise.lam_top` (the pole of Laplace's MGF) up.

    The search starts from the paper's Gamma_Lap (the subgaussian bound for
    the Gaussian). With ``grow`` it doubles that start until it suffices;
    without, a start that does not suffice is returned as it is (the
    two-sided bound: numerical safety, never exceed the start, which always
    suffices).
    """
    from scipy.optimize import minimize_scalar

    target = math.log(beta) - math.log(n_events) - math.log(2.0)
    top = lam_top(noise, epsilon, target)

    def log_tail(g: float) -> float:
        res = minimize_scalar(
            lambda lam: -lam * g + kappa * log_mgf(lam),
            bounds=(lam_low * top, top * (1 - 1e-9)),
            method="bounded",
            options={"xatol": 1e-10 * top},
        )
        return min(res.fun, 0.0)

    hi = _start(noise, epsilon, kappa, n_events, beta)
    if grow:
        while log_tail(hi) > target:
            hi *= 2.0
    elif log_tail(hi) > target:
        return hi
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if log_tail(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


MARGINS = ("chernoff", "paper")


def noise_margin(method: str, noise: str, epsilon: float, kappa: int, n_events: int, beta: float) -> float:
    """Margin for the noise alone (no truncation) by the chosen bound."""
    if method == "paper":
        if noise == "gaussian":
            raise ValueError("margin 'paper' is the paper's bound for Laplace noise; use 'chernoff'")
        return gamma_laplace(epsilon, kappa, n_events, beta)
    if method == "chernoff":
        return gamma_chernoff(noise, epsilon, kappa, n_events, beta)
    raise ValueError(f"margin must be one of {MARGINS}, got margin={method!r}")


# --------------------------------------------------------------------------- #
# the upper margin of truncating histograms


def _tail_mgf(noise: str, epsilon: float, t: np.ndarray, lam: float) -> np.ndarray:
    """E[exp(lam Z); Z >= t] for each threshold in ``t`` (0 <= lam < epsilon).

    Discrete Laplace (``t`` integers): P(Z = z) = c q^|z|, c = (1-q)/(1+q).
    Continuous Laplace: density (epsilon/2) exp(-epsilon |z|). Discrete
    Gaussian (``epsilon`` is sigma^2): summed (:func:`dpdbscan.laws.discretegaussian.tail_mgfs`).
    """
    t = np.asarray(t, dtype=np.float64)
    if noise == "gaussian":
        return _gaussian.tail_mgfs(epsilon, t, lam)
    if noise == "discrete":
        q = math.exp(-epsilon)
        c = (1.0 - q) / (1.0 + q)
        up = math.exp(lam - epsilon)  # q e^lam < 1; exp(lam) alone overflows beyond 709
        down = math.exp(-lam - epsilon)
        pos = c * up ** np.maximum(t, 0.0) / (1.0 - up)
        neg = c / (1.0 - up) + c * down * (1.0 - down ** np.maximum(-t, 0.0)) / (1.0 - down)
        return np.where(t >= 0, pos, neg)
    half = 0.5 * epsilon
    pos = half * np.exp(-(epsilon - lam) * np.maximum(t, 0.0)) / (epsilon - lam)
    neg = half / (epsilon - lam) + half * (1.0 - np.exp((epsilon + lam) * np.minimum(t, 0.0))) / (
        epsilon + lam
    )
    return np.where(t >= 0, pos, neg)


def _log_mgf_upper(noise: str, epsilon: float, lam: float, theta: float, kind: str) -> float:
    """log of an upper bound on sup_x E[exp(lam e_x)], e_x = released - true value
    of one cell holding ``x`` points in a histogram truncated below ``theta``.

    ``e_x = Z`` if ``x + Z >= theta`` (released) and ``-x`` otherwise. Cells are
    independent, so a sum over kappa cells has an MGF at most this to the power
    kappa whatever the counts are. ``x`` runs over 0 .. x0 - 1; beyond, every
    M_x is at most M_Z(lam) + P(Z < theta - x0) (the released part is at most
    the full MGF, the dropped part at most its probability). The stability
    histogram never releases an empty cell: there M_0 = 1.
    """
    far = int(math.ceil(reach(noise, epsilon, -40.0)))
    if is_integer(noise):
        k = float(max(math.ceil(theta), 0))
        x0 = int(k) + far + 2
        x = np.arange(x0, dtype=np.float64)
        t = k - x  # released iff Z >= k - x
    else:
        x0 = int(math.ceil(max(theta, 0.0))) + far + 2
        x = np.arange(x0, dtype=np.float64)
        t = theta - x
    released = _tail_mgf(noise, epsilon, t, lam)
    dropped = 1.0 - _tail_mgf(noise, epsilon, t, 0.0)  # P(Z < t)
    m = released + np.maximum(dropped, 0.0) * np.exp(-lam * x)
    if kind == "stability":
        m[0] = 1.0
    full = math.exp(log_mgf(noise, epsilon, lam))
    beyond = full + max(float(1.0 - _tail_mgf(noise, epsilon, np.array([t[-1] - 1.0]), 0.0)[0]), 0.0)
    return math.log(max(float(m.max()), beyond))


@functools.lru_cache(maxsize=256)
def gamma_upper_chernoff(
    noise: str, epsilon: float, kappa: int, n_events: int, beta: float, kind: str, theta: float
) -> float:
    """Smallest g with P(sum of kappa errors > g) <= beta / (2 n_events) by the
    Chernoff bound min_lam exp(-lam g) M(lam)^kappa, M from :func:`_log_mgf_upper`.

    The upper side of a truncating histogram (``kind`` "sparse" or
    "stability"); the lower side takes the other beta / (2 n_events).
    """
    if math.isinf(epsilon):
        return 0.0
    return _chernoff_margin(
        lambda lam: _log_mgf_upper(noise, epsilon, lam, theta, kind),
        noise,
        epsilon,
        kappa,
        n_events,
        beta,
        lam_low=1e-9,
        grow=True,
    )


def margins(
    method: str,
    kind: str,
    noise: str,
    epsilon: float,
    kappa: int,
    n_events: int,
    beta: float,
    theta: float = 0.0,
) -> tuple[float, float]:
    """(Gamma_low, Gamma_up) of one release; public inputs only.

    With probability >= 1 - beta, for all ``n_events`` neighbour sums of at
    most ``kappa`` cells, ``-Gamma_low <= noisy sum - true sum <= Gamma_up``.

    * dense: the error of each cell is its noise Z, symmetric, so both sides
      are the two-sided bound of the noise (``method``: "chernoff" or "paper"),
      beta / n_events per sum.
    * sparse / stability (truncated below ``theta``): the error of a cell is at
      least Z - :func:`truncation_loss`, so Gamma_low = kappa * loss + the
      one-sided noise bound at beta / (2 n_events) (the same number as the
      two-sided bound at beta / n_events, the noise being symmetric). The
      error is at most max(Z, 0) but depends on the count; Gamma_up is the
      Chernoff bound of :func:`gamma_upper_chernoff` at beta / (2 n_events).
      The paper gives no upper bound, so "paper" changes the lower side only.
    """
    if kind == "dense":
        g = 0.0 if noise == "none" else noise_margin(method, noise, epsilon, kappa, n_events, beta)
        return g, g
    loss = truncation_loss(theta, integer=is_integer(noise))
    if noise == "none":
        return kappa * loss, 0.0
    low = kappa * loss + noise_margin(method, noise, epsilon, kappa, n_events, beta)
    up = gamma_upper_chernoff(
        noise, float(epsilon), int(kappa), int(n_events), float(beta), kind, float(max(theta, 0.0))
    )
    return low, up
