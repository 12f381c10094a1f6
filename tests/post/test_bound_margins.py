"""The margins of bounds.py: the truncation loss, the per-cell MGF of the
upper side and the two-sided margins of a release.

Randomised checks state their false-failure rate: each compares a count of
exceedances with an exact binomial quantile at 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpdbscan.post.coretests.bound import boundmargin as bounds
from dpdbscan.release.histograms import ContinuousLaplace, DiscreteLaplace
from dpdbscan.release.samplers.integers import SeededSource

P_FAIL = 1e-6


def test_truncation_loss():
    assert bounds.truncation_loss(-np.inf, True) == 0.0
    assert bounds.truncation_loss(0.0, True) == 0.0
    assert bounds.truncation_loss(1.0, True) == 0.0  # dropped means x + Z <= 0, error -x >= Z
    assert bounds.truncation_loss(2.5, True) == 2.0  # x + Z <= 2
    assert bounds.truncation_loss(5.0, True) == 4.0
    assert bounds.truncation_loss(2.5, False) == 2.5


def _direct_mgf_discrete(eps, lam, k, x):
    """E[exp(lam e)] with e = Z if x + Z >= k else -x, by summing the pmf."""
    q = math.exp(-eps)
    z = np.arange(-4000, 4001)
    log_pmf = math.log((1 - q) / (1 + q)) - eps * np.abs(z)
    e = np.where(x + z >= k, z, -x)
    return float(np.exp(log_pmf + lam * e).sum())


def _direct_mgf_laplace(eps, lam, theta, x):
    t = theta - x
    # closed forms of the integral of (eps/2) exp(lam z - eps |z|) over z >= t
    pos = 0.5 * eps * math.exp(-(eps - lam) * max(t, 0.0)) / (eps - lam)
    neg = 0.5 * eps * (1 - math.exp((eps + lam) * min(t, 0.0))) / (eps + lam)
    kept = pos + neg
    # and one numerical check of the closed form
    if x == 3:
        num = integrate.quad(
            lambda z: 0.5 * eps * math.exp(lam * z - eps * abs(z)),
            t,
            t + 200 / eps,
            points=[0.0] if t < 0 else None,
            limit=400,
        )[0]
        assert kept == pytest.approx(num, rel=1e-7)
    dropped = 0.5 * math.exp(eps * t) if t < 0 else 1 - 0.5 * math.exp(-eps * t)
    return kept + dropped * math.exp(-lam * x)


@pytest.mark.parametrize("eps, theta", [(1.0, 0.0), (1.0, 3.0), (0.5, 1.0), (2.0, 5.0)])
def test_upper_mgf_is_the_supremum_over_counts(eps, theta):
    """exp(_log_mgf_upper) is at least E[exp(lam e_x)] for every count x, and
    equal to the largest of them up to the tiny tail allowance."""
    for lam in (0.05 * eps, 0.4 * eps, 0.9 * eps):
        direct = [_direct_mgf_discrete(eps, lam, math.ceil(theta), x) for x in range(300)]
        bound = math.exp(bounds._log_mgf_upper("discrete", eps, lam, theta, "sparse"))
        assert bound >= max(direct) * (1 - 1e-12)
        assert bound <= max(direct) * (1 + 1e-9)
        # stability: an empty cell is never released, its error is 0
        stab = math.exp(bounds._log_mgf_upper("discrete", eps, lam, theta, "stability"))
        assert stab >= max(max(direct[1:]), 1.0) * (1 - 1e-12)
        direct_c = [_direct_mgf_laplace(eps, lam, theta, x) for x in range(80)]
        bound_c = math.exp(bounds._log_mgf_upper("laplace", eps, lam, theta, "sparse"))
        assert bound_c >= max(direct_c) * (1 - 1e-9)
        assert bound_c <= max(direct_c) * (1 + 1e-6)


def test_margins_structure():
    lo, up = bounds.margins("chernoff", "dense", "discrete", 1.0, 21, 1000, 0.1)
    assert lo == up == bounds.gamma_chernoff("discrete", 1.0, 21, 1000, 0.1)
    lo, up = bounds.margins("paper", "dense", "laplace", 1.0, 21, 1000, 0.1)
    assert lo == up == bounds.gamma_laplace(1.0, 21, 1000, 0.1)
    lo, up = bounds.margins("paper", "sparse", "discrete", 1.0, 21, 1000, 0.1, theta=3.0)
    assert lo == pytest.approx(21 * 2 + bounds.gamma_laplace(1.0, 21, 1000, 0.1))
    assert up == bounds.gamma_upper_chernoff("discrete", 1.0, 21, 1000, 0.1, "sparse", 3.0)
    assert bounds.margins("chernoff", "sparse", "none", math.inf, 21, 1000, 0.1, theta=3.0) == (42.0, 0.0)
    assert bounds.margins("chernoff", "dense", "none", math.inf, 21, 1000, 0.1) == (0.0, 0.0)
    # a low theta releases many empty cells: the upper margin is the larger one
    lo, up = bounds.margins("chernoff", "sparse", "discrete", 1.0, 117, 343000, 0.1, theta=0.0)
    assert up > lo * 1.2
    # a high theta: the worst cell is a full one whose error is Z, as in the dense case
    lo, up = bounds.margins("chernoff", "sparse", "discrete", 1.0, 117, 10**8, 0.1, theta=8.0)
    dense = bounds.gamma_chernoff("discrete", 1.0, 117, 10**8, 0.1)
    assert dense * (1 - 1e-9) <= up <= dense * 1.05 and lo > 117 * 7  # equal up to rounding
    assert bounds.tau(3.0, 5.0) == 8.0 and bounds.tau(3.0) == 6.0


def _truncated_errors(noise, src, n, kappa, counts, theta):
    """n sums of kappa per-cell errors (released - true) of a histogram
    truncated below theta, the cells holding ``counts`` (cycled) points."""
    z = noise.sample(src, n * kappa).reshape(n, kappa)
    x = np.resize(np.asarray(counts, dtype=np.float64), kappa)
    kept = x + z >= theta
    return np.where(kept, z, -x).sum(axis=1)


@pytest.mark.parametrize("kind", ["discrete", "laplace"])
@pytest.mark.parametrize("theta, counts", [(0.0, [0]), (2.0, [0, 1, 2, 50]), (3.0, [1, 2])])
def test_upper_margin_holds_and_the_old_one_did_not(kind, theta, counts):
    """One event (n_events = 1), beta = 0.05: the upper side may fail with
    probability <= 0.025 and the lower side too. 20000 simulated neighbour sums
    of kappa = 117 cells (d = 3); exceedances checked against the exact
    binomial quantile at 1e-6. With theta = 0 and empty cells, the old claim
    (the two-sided noise bound on both sides) is exceeded far more often."""
    noise = DiscreteLaplace(1.0) if kind == "discrete" else ContinuousLaplace(1.0)
    kappa, n, beta = 117, 20000, 0.05
    src = SeededSource(int(theta * 10) + len(counts))
    s = _truncated_errors(noise, src, n, kappa, counts, theta)
    lo, up = bounds.margins("chernoff", "sparse", kind, 1.0, kappa, 1, beta, theta)
    limit = stats.binom.ppf(1 - P_FAIL, n, beta / 2)
    assert int((s > up).sum()) <= limit
    assert int((s < -lo).sum()) <= limit
    if theta == 0.0:
        old = bounds.gamma_chernoff(kind, 1.0, kappa, 1, beta)
        assert int((s > old).sum()) > limit


@pytest.mark.parametrize("epsilon", [30.0, 700.0, 800.0, 1000.0, 1e4])
@pytest.mark.parametrize("noise", ["discrete", "laplace"])
@pytest.mark.parametrize("kind,theta", [("dense", 0.0), ("sparse", 0.0), ("sparse", 3.0), ("stability", 5.0)])
def test_margins_are_stable_at_extreme_epsilon(kind, theta, noise, epsilon):
    """Issue 19, finding 8: Gamma_low and Gamma_up at any accepted epsilon
    (up to params.MAX_EPSILON): before the fix exp(lam) overflowed (an
    OverflowError for sparse and stability releases from epsilon ~ 710).
    Finite, and never above their values at epsilon = 10."""
    for method in ("chernoff", "paper"):
        low, up = bounds.margins(method, kind, noise, epsilon, 15, 10_000, 0.1, theta)
        ref = bounds.margins(method, kind, noise, 10.0, 15, 10_000, 0.1, theta)
        assert math.isfinite(low) and math.isfinite(up) and low >= 0 and up >= 0
        assert low <= ref[0] + 1e-9 and up <= ref[1] + 1e-9
