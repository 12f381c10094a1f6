"""Statistics for the tests: the one place that turns a false-failure rate
into a test, and the empirical privacy audit's Clopper-Pearson bounds.

False failures. A randomised test states the probability that it fails when
the code is correct. The convention of the suite is :data:`P_FAIL` = 1e-6 per
test (a test that makes several checks splits it by a union bound), using:

* :func:`chi2_ok` (goodness of fit, bins merged to expected counts >= 20),
  :func:`assert_fits` (that plus exact binomial bounds on every bin) and
  :func:`binom_ok` (an exact binomial test) for distributions;
* :func:`z_limit` for the mean of many independent draws (a normal quantile,
  with the variance the test knows exactly);
* :func:`cp_lower` / :func:`cp_upper` for rates (exact Clopper-Pearson).

The privacy audit:

An audit runs a mechanism many times on two neighbouring datasets D and D'
and counts how often an event E happens (say "cell 7 is released"). If the
mechanism is (epsilon, delta)-DP then, for every event,

    P_D(E) <= exp(epsilon) P_D'(E) + delta        and the same with D, D' swapped.

Replacing P_D(E) by a lower confidence bound and P_D'(E) by an upper one gives
a statistically valid lower bound on epsilon:

    epsilon >= ln((lower(P_D) - delta) / upper(P_D')).

The bound is taken over both directions and over E and its complement. All
four ratios are built from the same four one-sided Clopper-Pearson bounds
(lower and upper for each of P_D and P_D'; the complement's bounds are
``1 - `` those), so if each bound fails with probability at most ``alpha``,
:func:`epsilon_lower_bound` exceeds the true epsilon with probability at most
``4 * alpha``. A test that checks ``k`` events at level ``alpha`` has a false
failure rate of at most ``4 * k * alpha`` (union bound).

This module is not used by the mechanism; it lives in the package so that
the audit in the test suite and the experiments share one implementation.

References
----------
Clopper and Pearson, "The use of confidence or fiducial limits illustrated in
the case of the binomial", Biometrika 1934. Jagielski, Ullman and Oprea,
"Auditing Differentially Private Machine Learning", NeurIPS 2020 (the
Clopper-Pearson lower bound on epsilon).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as _stats
from scipy.stats import beta as _beta

#: The false-failure rate of one randomised test (see the module docstring).
P_FAIL = 1e-6


def chi2_ok(counts, probs, alpha: float = P_FAIL, min_expected: float = 20.0):
    """Chi-square goodness of fit at level ``alpha``; tail bins are merged
    (from the right) until each expects ``min_expected``. Returns (p, ok);
    (1.0, True) when fewer than two bins are left to compare."""
    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    exp = probs * counts.sum()
    c, e = [], []
    acc_c = acc_e = 0.0
    for ci, ei in zip(counts[::-1], exp[::-1]):
        acc_c += ci
        acc_e += ei
        if acc_e >= min_expected:
            c.append(acc_c)
            e.append(acc_e)
            acc_c = acc_e = 0.0
    if acc_e and c:
        c[-1] += acc_c
        e[-1] += acc_e
    ca, ea = np.array(c[::-1]), np.array(e[::-1])
    if ca.size < 2:  # one bin (or none) after merging: nothing to test
        return 1.0, True
    ea *= ca.sum() / ea.sum()
    p = float(_stats.chisquare(ca, ea).pvalue)
    return p, p > alpha


def assert_fits(counts, probs, rate: float = P_FAIL) -> None:
    """Observed ``counts`` per bin against exact bin probabilities ``probs``
    (summing to 1): exact binomial bounds on every bin at ``rate / (4 bins)``
    per tail, and chi-square on the bins merged until each expects 20 at
    ``rate / 2`` (:func:`chi2_ok`). Fails by chance with probability <= ``rate``."""
    counts = np.asarray(counts, dtype=np.int64)
    probs = np.asarray(probs, dtype=np.float64)
    n = int(counts.sum())
    a = rate / (4 * probs.size)
    lo, hi = _stats.binom.ppf(a, n, probs), _stats.binom.isf(a, n, probs)
    bad = (counts < lo) | (counts > hi)
    assert not bad.any(), (np.flatnonzero(bad), counts[bad], (probs * n)[bad])
    p, ok = chi2_ok(counts, probs, alpha=rate / 2)
    assert ok, f"chi-square p = {p:.3g}"


def binom_ok(successes: int, n: int, p: float, alpha: float = P_FAIL) -> bool:
    """Exact two-sided binomial test of ``successes`` in ``n`` at level ``alpha``."""
    return _stats.binomtest(int(successes), int(n), float(p)).pvalue > alpha


def z_limit(alpha: float = P_FAIL) -> float:
    """Two-sided normal quantile: |mean - mu| > z_limit * sd has probability alpha."""
    return float(_stats.norm.isf(alpha / 2))


#: One-sided bounds per event used by :func:`epsilon_lower_bound`.
BOUNDS_PER_EVENT = 4


def _check_counts(k: int, n: int) -> None:
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k!r}, n={n!r}")


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got alpha={alpha!r}")


def cp_lower(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson lower bound: P(p < bound) <= alpha.

    The exact bound is the ``alpha`` quantile of Beta(k, n - k + 1), i.e. the
    p at which P(Bin(n, p) >= k) = alpha.
    """
    _check_counts(k, n)
    _check_alpha(alpha)
    if k == 0:
        return 0.0
    return float(_beta.ppf(alpha, k, n - k + 1))


def cp_upper(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound: P(p > bound) <= alpha."""
    _check_counts(k, n)
    _check_alpha(alpha)
    if k == n:
        return 1.0
    return float(_beta.ppf(1.0 - alpha, k + 1, n - k))


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Two-sided interval with ``alpha`` in each tail (coverage >= 1 - 2 alpha)."""
    return cp_lower(k, n, alpha), cp_upper(k, n, alpha)


def _log_ratio(num: float, den: float) -> float:
    if num <= 0:
        return -math.inf
    if den <= 0:  # cannot happen for k < n, kept for safety
        return math.inf
    return math.log(num / den)


@dataclass(frozen=True)
class EventAudit:
    """Counts of one event over ``n1`` runs on D and ``n2`` runs on D'."""

    name: str
    k1: int
    n1: int
    k2: int
    n2: int

    @property
    def p1(self) -> float:
        return self.k1 / self.n1

    @property
    def p2(self) -> float:
        return self.k2 / self.n2

    def epsilon_lower(self, alpha: float, delta: float = 0.0) -> float:
        return epsilon_lower_bound(self.k1, self.n1, self.k2, self.n2, alpha, delta)

    def point_estimate(self) -> float:
        """max |ln(p1/p2)| over the event and its complement (no confidence)."""
        vals = []
        for a, b in ((self.p1, self.p2), (1 - self.p1, 1 - self.p2)):
            if a > 0 and b > 0:
                vals.append(abs(math.log(a / b)))
        return max(vals, default=math.inf)


def epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, alpha: float, delta: float = 0.0) -> float:
    """Lower confidence bound on epsilon from event counts ``k1/n1`` on D and
    ``k2/n2`` on D'.

    Returns ``max(0, ...)`` of ``ln((lower(P_a) - delta) / upper(P_b))`` over
    both directions (a, b) and over the event and its complement. Exceeds the
    true epsilon of an (epsilon, delta)-DP mechanism with probability at most
    ``4 * alpha`` (see the module docstring).
    """
    lo1, hi1 = cp_lower(k1, n1, alpha), cp_upper(k1, n1, alpha)
    lo2, hi2 = cp_lower(k2, n2, alpha), cp_upper(k2, n2, alpha)
    # Complement E^c: its bounds are 1 - the event's (Clopper-Pearson is symmetric).
    candidates = [
        _log_ratio(lo1 - delta, hi2),
        _log_ratio(lo2 - delta, hi1),
        _log_ratio((1 - hi1) - delta, 1 - lo2),
        _log_ratio((1 - hi2) - delta, 1 - lo1),
    ]
    return max(0.0, max(candidates))
