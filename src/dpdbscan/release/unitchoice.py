"""The private choice of k = ``max_cells_per_unit`` ("auto"): the exponential
mechanism over public candidates, scored by the signal to noise that k gives
the densest cells.

What is scored. Let c_u be the number of distinct release cells of unit u.
Keeping k of them at random, a cell that u visits is kept with probability
min(1, k / c_u); the Gaussian noise of a cell has sigma proportional to
sqrt(k) (L2 sensitivity sqrt(k) m). In a cell that every unit visits (the
densest cells, which the clusters are made of) the signal to noise is then
proportional to

    f(k) = sum_u t(c_u, k),    t(c, k) = min(1, k / c) / sqrt(k),

which grows as sqrt(k) while k is below most units' own counts and falls
as 1 / sqrt(k) once it is above them all. Units that keep their busiest
cells (``cell_choice="busiest"``, the default) keep at least the share
min(1, k / c_u) of their points, so f is then a lower bound of what k keeps;
a score of the share of each unit's points in its k busiest cells was
measured and dropped (it chose tiny k where each unit's busiest cells are
its own, docs/parameters.md section 5). On full Cabs (536 cabs, cells of
141 m) f is largest at k = 2,539, the 48th percentile of c_u, 1.42 times
f(1000); the 90th percentile (2,860) gives 1.38 times. A fixed quantile
is right for one distribution and not another (over lognormal, uniform,
Pareto and two-point distributions of c_u the best k lies between the 13th
and 53rd percentiles), so the score is f itself, made private:

* D_ij = (F_i - F_j) / S_ij compares candidates k_i and k_j, with F_i the
  sum over units of T(c_u, k_i) = round(Q t(c_u, k_i)) (exact integers,
  Q = 2**24) and S_ij = Q |1/sqrt(k_i) - 1/sqrt(k_j)| + 2, which bounds what
  one unit can change F_i - F_j by: |t(c, k_i) - t(c, k_j)| is largest,
  |1/sqrt(k_i) - 1/sqrt(k_j)|, for c <= min(k_i, k_j), and the two roundings
  add at most 1 (the other 1 covers the floating point of Q t). D_ij is the
  number of units by which k_i beats k_j.
* A floor: (R_i - N / 5) / (1 - 1/5) = (5 R_i - N) / 4, with R_i the
  number of units with c_u <= 2 k_i (units of which k_i keeps at least half
  the cells) and N the number of units. Below half the 20th percentile of
  c_u the score cannot rise above minus the units missing to it, each
  counted 5/4: adding a unit changes 5 R_i - N by 4 or -1 and removing one
  by -4 or 1, so the floor changes by at most 1, the whole sensitivity the
  score is allowed (R_i - N / 5 itself changed by at most 4/5 and left a
  fifth unused: on the stops of full Cabs k <= 20 was drawn with
  probability 0.0058, one of 250 seeded draws took k = 3 and found 2 spans
  and 0.15 of the top-20 stop cells; 0.0015 with the whole sensitivity,
  and 0.0089 -> 0.0015 for the pick-ups). Why: f can peak at a tiny k
  because a handful of units with very few cells add their whole count at
  very little noise (on Cabs about ten added one-cell units would make k = 1
  the maximum of f), and no choice at a tenth of the budget can tell that
  from noise, so without the floor the mechanism spreads its mass over the
  small candidates (expected f of the choice 0.34 of the best on Cabs; 0.99
  with the floor). Why 2 k_i and not k_i: where the units are alike, f
  peaks just above the smallest c_u, below the 20th percentile, and a
  floor at k_i scored that best candidate almost as low as k = 1 (a month
  of 500 synthetic taxis, 204 to 262 pick-up cells each: -72 against -100,
  k <= 10 drawn with probability 0.42; 0.008 with the floor at 2 k_i, and
  on Cabs the same 0.99).

The score of k_i is u_i = min(0, min_j D_ij, (5 R_i - N) / 4): 0 for the
best candidate by f that clears the floor, minus the units it falls short by
for the others. Adding or removing one unit changes every D_ij and the floor
by at most 1, so u has sensitivity 1.

The mechanism. Candidate i is drawn with probability proportional to
exp(-a_i / 2**20), a_i = ceil(2**20 lambda (max_j u_j - u_i)): the
exponential mechanism (McSherry and Talwar 2007) with lambda a rational at
most eps_em / 2 - 2**-20, eps_em = sqrt(8 rho) for the rho it is given.
Its privacy loss at outcome i, between neighbouring datasets, is
lambda (u_i - u'_i) - (r_i - r'_i) minus a term common to all outcomes,
with rounding r_i in [0, 2**-20): over the outcomes it ranges over an
interval no longer than 2 lambda + 2**-19 <= eps_em. The mechanism is
eps_em-bounded range (Durfee and Rogers 2019), hence eps_em^2 / 8 = rho-zCDP
(Cesar and Rogers 2021, bounded range implies zCDP with a quarter of the
pure-DP constant eps^2 / 2). The sampler is exact: a candidate uniform at
random (:func:`~.samplers.integers.randbelow`), accepted with probability
exp(-a_i / 2**20) by exact Bernoulli(exp(-gamma)) trials
(:func:`~.samplers.integers.bernoulli_exp_neg`), repeated until one is
accepted (the best candidate, a_i = 0, always is: fewer than ``len(candidates)``
proposals on average). As with the library's other samplers, how long it
runs is not hidden.

Privacy statement (person-level, k chosen): the release with
``max_cells_per_unit="auto"`` is the composition of this choice (SHARE rho)
and the Gaussian histogram at the chosen k, calibrated to the rest of rho
(each candidate's noise at (1 - SHARE) rho, at that candidate's L2
sensitivity sqrt(k) m): rho-zCDP in total with respect to adding or removing
one unit (adaptive composition of zCDP, Bun and Steinke 2016), stated as
the (epsilon, delta) that rho converts to. The candidates, the share and
the floor are public; only the choice among them reads the data.

References
----------
McSherry and Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.
Durfee and Rogers, "Practical Differentially Private Top-k Selection with
Pay-what-you-get Composition", NeurIPS 2019 (bounded range). Cesar and
Rogers, "Bounding, Concentrating, and Truncating: Unifying Privacy Loss
Composition for Data Analytics", ALT 2021 (eps-bounded range implies
eps^2 / 8-zCDP). Bun and Steinke, "Concentrated Differential Privacy",
TCC 2016.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from .samplers.integers import Source, bernoulli_exp_neg, randbelow

#: Fixed-point scale of a unit's term T(c, k) = round(Q t(c, k)), t <= 1.
Q = 1 << 24
#: Denominator of the exponents a_i / DEN the candidates are drawn with.
DEN = 1 << 20
#: The floor: below half this quantile of cells per unit the score is minus the units missing
#: to it, each counted 1 / (1 - FLOOR) (the floor's sensitivity is then 1; FLOOR <= 1/2).
FLOOR = Fraction(1, 5)


def _terms(cells: np.ndarray, k: int) -> np.ndarray:
    """T(c, k) = round(Q min(1, k / c) / sqrt(k)) for every c in ``cells``."""
    c = cells.astype(np.float64)
    t = np.minimum(c, float(k)) / (c * math.sqrt(k))
    return np.rint(Q * t).astype(np.int64)


def scores(cells: np.ndarray, candidates: Sequence[int]) -> list[Fraction]:
    """The score u_i of every candidate (sensitivity 1; see the module).

    ``cells``: the number of distinct cells of every unit that has one
    (private); ``candidates``: the public candidates for k, ascending."""
    c = np.asarray(cells, dtype=np.int64)
    c = c[c > 0]
    ks = [int(k) for k in candidates]
    # units with the same cell count have the same terms: sum by distinct count
    values, mult = np.unique(c, return_counts=True)
    F = [int(np.dot(_terms(values, k), mult)) if values.size else 0 for k in ks]
    # the floor's R_i: units of which k_i keeps at least half the cells
    ranks = np.searchsorted(np.sort(c), 2 * np.asarray(ks, dtype=np.int64), side="right")
    n = int(c.size)
    inv = [1.0 / math.sqrt(k) for k in ks]
    out = []
    for i in range(len(ks)):
        # (R_i - FLOOR n) / (1 - FLOOR): one unit moves it by at most 1 (FLOOR <= 1/2)
        u = min(Fraction(0), (int(ranks[i]) - FLOOR * n) / (1 - FLOOR))
        for j in range(len(ks)):
            if j != i:
                s = Fraction(Q * abs(inv[i] - inv[j]) + 2.0)
                u = min(u, Fraction(F[i] - F[j]) / s)
        out.append(u)
    return out


def _lambda(rho: float) -> Fraction:
    """The exponential mechanism's weight: a rational at most
    sqrt(8 rho) / 2 - 2**-20 (0 when rho is too small to choose at all)."""
    half = Fraction(math.sqrt(8.0 * rho) / 2.0)
    # sqrt and the division are rounded to nearest: step down past their error
    lam = half * (1 - Fraction(1, 1 << 40)) - Fraction(1, DEN)
    return max(lam, Fraction(0))


def exponents(cells: np.ndarray, candidates: Sequence[int], rho: float) -> list[int]:
    """a_i: candidate i is drawn with probability proportional to exp(-a_i / 2**20)."""
    u = scores(cells, candidates)
    lam, top = _lambda(rho), max(u)
    return [math.ceil(lam * (top - ui) * DEN) for ui in u]


def probabilities(cells: np.ndarray, candidates: Sequence[int], rho: float) -> np.ndarray:
    """The probability that :func:`choose` picks each candidate (floats of the
    exact law), for tests and reports."""
    a = np.asarray(exponents(cells, candidates, rho), dtype=np.float64) / DEN
    w = np.exp(-(a - a.min()))
    return w / w.sum()


def _accept(source: Source, a: int) -> bool:
    """Bernoulli(exp(-a / 2**20)), exactly: floor(a / 2**20) Bernoulli(exp(-1))
    trials and one Bernoulli(exp(-(a mod 2**20) / 2**20)), all successes."""
    whole, rest = divmod(int(a), DEN)
    if not bool(bernoulli_exp_neg(source, [rest], DEN)[0]):
        return False
    while whole > 0:
        n = min(whole, 64)
        if not bool(bernoulli_exp_neg(source, [DEN] * n, DEN).all()):
            return False
        whole -= n
    return True


def draw(a: Sequence[int], source: Source) -> int:
    """An index i drawn with probability proportional to exp(-a_i / 2**20)
    (integers a_i >= 0, one of them 0), exactly: a uniform proposal accepted
    with probability exp(-a_i / 2**20), until one is accepted."""
    n = len(a)
    if n == 0 or min(a) != 0:
        raise ValueError("draw needs exponents a_i >= 0 with a smallest of 0")
    while True:
        i = int(randbelow(source, n)) if n > 1 else 0
        if _accept(source, a[i]):
            return i


def choose(cells: np.ndarray, candidates: Sequence[int], rho: float, source: Source) -> int:
    """The index of the chosen candidate: the exponential mechanism on
    :func:`scores`, rho-zCDP with respect to adding or removing one unit's
    ``cells`` entry (see the module)."""
    if not candidates:
        raise ValueError("no candidates for max_cells_per_unit")
    return draw(exponents(cells, candidates, rho), source)


__all__ = ["Q", "DEN", "FLOOR", "scores", "exponents", "probabilities", "draw", "choose"]
