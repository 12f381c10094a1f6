"""zCDP conversions and the zCDP accountant (``dpdbscan.laws.zcdp``).

Deterministic: no randomness. The independent references are (a) the values
of OpenDP's own tests of its CKS conversion (``cdp_epsilon(1/32, 1e-3)`` and
``cdp_delta(1/32, 0)``, opendp 0.14 ``zCDP_to_approxDP/test.rs``), (b) the
classical bound ``rho + 2 sqrt(rho ln(1/delta))``, and (c) a brute-force
minimum of the CKS bound over a grid of alpha computed here.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdbscan.exceptions import BudgetExceeded
from dpdbscan.laws import zcdp
from dpdbscan.release.accountant import BudgetAccountant
from dpdbscan.release.histograms.countnoise import DiscreteGaussian

RHOS = [1e-4, 1e-3, 0.01, 1 / 32, 0.1, 0.5, 1.0, 5.0]
DELTAS = [1e-1, 1e-3, 1e-6, 1e-9, 1e-12]
EPSILONS = [0.0, 0.1, 0.5, 1.0, 3.0, 10.0]


def cks_log_bound(rho: float, epsilon: float, alpha: np.ndarray) -> np.ndarray:
    """log of the CKS delta at each alpha, straight from the formula."""
    return (alpha - 1) * (alpha * rho - epsilon) - np.log(alpha - 1) + alpha * np.log1p(-1 / alpha)


def test_matches_opendp_reference_values():
    """OpenDP's tests: rho = (1/4)^2 / 2 gives epsilon 0.6880024554878086 at
    delta = 1e-3 and delta 0.1508457845622862 at epsilon = 0. Ours may only
    be larger (the private side), by a relative 1e-7 at most."""
    rho = 1 / 32
    eps = zcdp.epsilon_for(rho, 1e-3)
    assert 0.6880024554878086 <= eps <= 0.6880024554878086 * (1 + 1e-7)
    d0 = zcdp.delta_for(rho, 0.0)
    assert 0.1508457845622862 <= d0 <= 0.1508457845622862 * (1 + 1e-7)


@pytest.mark.parametrize("rho", RHOS)
def test_classical_bound_is_never_below(rho):
    for delta in DELTAS:
        assert zcdp.epsilon_for(rho, delta) <= zcdp.classical_epsilon(rho, delta)


@pytest.mark.parametrize("rho", RHOS)
def test_delta_is_the_minimum_over_alpha(rho):
    """delta_for is a valid bound (>= the true infimum, hence within rounding
    of the grid minimum) and no alpha of a fine grid does better."""
    alphas = 1 + np.geomspace(1e-6, 1e4, 200_001)
    for eps in EPSILONS:
        grid = min(float(cks_log_bound(rho, eps, alphas).min()), 0.0)
        got = zcdp.delta_for(rho, eps)
        if grid > -700:  # both representable
            # never worse than the grid; below it only by the grid's coarseness
            assert grid - 1e-3 <= math.log(got) <= grid + 1e-9 * (1 + abs(grid))
        else:
            assert got <= 1e-300


def test_monotone_in_each_argument():
    for rho in RHOS:
        d = [zcdp.delta_for(rho, e) for e in EPSILONS]
        assert all(a >= b for a, b in zip(d, d[1:]))
        e = [zcdp.epsilon_for(rho, x) for x in DELTAS]
        assert all(a <= b for a, b in zip(e, e[1:]))
    for eps in EPSILONS[1:]:
        d = [zcdp.delta_for(r, eps) for r in RHOS]
        assert all(a <= b for a, b in zip(d, d[1:]))
        r = [zcdp.rho_for(eps, x) for x in DELTAS]
        assert all(a >= b for a, b in zip(r, r[1:]))
    for delta in DELTAS:
        e = [zcdp.epsilon_for(r, delta) for r in RHOS]
        assert all(a <= b for a, b in zip(e, e[1:]))
        r = [zcdp.rho_for(x, delta) for x in EPSILONS]
        assert all(a <= b for a, b in zip(r, r[1:]))


@pytest.mark.parametrize("delta", DELTAS)
def test_inverse_relations_err_on_the_private_side(delta):
    for rho in RHOS:
        eps = zcdp.epsilon_for(rho, delta)
        assert zcdp.delta_for(rho, eps) <= delta  # the epsilon returned holds
        if eps > 0:
            assert zcdp.delta_for(rho, eps * (1 - 1e-9)) > delta  # and is tight
    for eps in EPSILONS[1:]:
        rho = zcdp.rho_for(eps, delta)
        assert zcdp.delta_for(rho, eps) <= delta  # the rho returned implies no more
        assert zcdp.delta_for(rho * (1 + 1e-9), eps) > delta  # and is tight
        assert zcdp.epsilon_for(rho, delta) <= eps * (1 + 1e-12)


def test_edges_and_bad_arguments():
    assert zcdp.delta_for(0.0, 1.0) == 0.0
    assert zcdp.delta_for(math.inf, 1.0) == 1.0
    assert 0 < zcdp.delta_for(1e-4, 3.0) <= 1e-300  # an underflow reports > 0, not 0
    assert zcdp.epsilon_for(0.0, 1e-6) == 0.0 and zcdp.epsilon_for(1.0, 1.0) == 0.0
    assert zcdp.epsilon_for(1.0, 0.0) == math.inf
    assert zcdp.rho_for(1.0, 0.0) == 0.0 and zcdp.rho_for(1.0, 1.0) == math.inf
    for fn, args in [
        (zcdp.delta_for, (-1.0, 1.0)),
        (zcdp.delta_for, (1.0, -1.0)),
        (zcdp.epsilon_for, (float("nan"), 0.1)),
        (zcdp.rho_for, (1.0, -0.1)),
    ]:
        with pytest.raises(ValueError):
            fn(*args)


def test_pure_and_gaussian_rho():
    assert zcdp.pure_rho(1.0) >= 0.5 and zcdp.pure_rho(0.0) == 0.0
    assert zcdp.gaussian_rho(Fraction(1, 2), 1) == 1.0
    for rho in (1e-3, 0.1, 0.7, 2.0):
        for l2 in (1.0, math.sqrt(7), 12.5):
            s2 = zcdp.sigma2_for(rho, l2)
            assert Fraction(s2) >= Fraction(l2) ** 2 / (2 * Fraction(rho))
            assert zcdp.gaussian_rho(s2, l2) <= rho
            assert Fraction(zcdp.sigma_for(rho, l2)) ** 2 >= Fraction(l2) ** 2 / (2 * Fraction(rho))
            # the noise class rounds sigma^2 up again: still at most rho
            assert DiscreteGaussian(s2).rho(l2) <= rho
    with pytest.raises(ValueError):
        zcdp.sigma2_for(0.0, 1.0)


def test_accountant_agrees_with_basic_composition_for_pure_spends():
    ours, basic = zcdp.ZCDPAccountant(epsilon=1.0), BudgetAccountant(epsilon=1.0)
    for acc in (ours, basic):
        acc.spend(0.4, 0).spend(0.5, 0)
        with pytest.raises(BudgetExceeded):
            acc.check(0.2, 0)
        acc.spend(0.1, 0)
    assert ours.total() == (pytest.approx(1.0), 0.0)


def test_accountant_composes_rho_and_converts():
    acc = zcdp.ZCDPAccountant(epsilon=3.0, delta=1e-6)
    rho = 0.05
    for _ in range(3):
        acc.spend_rho(rho)
    eps, delta = acc.total()
    assert delta == 1e-6 and eps == zcdp.epsilon_for(3 * rho, 1e-6)
    left = acc.remaining_rho()
    assert left == pytest.approx(zcdp.rho_for(3.0, 1e-6) - 3 * rho)
    acc.check_rho(left * (1 - 1e-6))
    with pytest.raises(BudgetExceeded, match="rho"):
        acc.check_rho(left * 1.01)
    assert acc.rho == pytest.approx(3 * rho)  # check_rho records nothing


def test_accountant_many_small_pure_spends_beat_basic_composition():
    """100 spends of 0.1-DP: basic composition says 10; zCDP (rho = 0.5) says
    about 5.2 at delta = 1e-6, so a budget of 6 holds them."""
    acc = zcdp.ZCDPAccountant(epsilon=6.0, delta=1e-6)
    for _ in range(100):
        acc.spend(0.1, 0.0)
    eps, _ = acc.total()
    assert eps == pytest.approx(zcdp.epsilon_for(100 * zcdp.pure_rho(0.1), 1e-6))
    assert 5.0 < eps < 6.0


def test_accountant_refuses_what_is_not_zcdp_whatever_the_budget():
    """Before, an (epsilon, delta) spend counted as delta-approximate zCDP,
    converted at the budget's delta less the spent deltas, or by basic
    composition while no rho was spent: the smaller of two filters, not shown
    to be one for spends chosen adaptively. Now a spend that is not zCDP is
    refused, and the message says what to use instead."""
    acc = zcdp.ZCDPAccountant(epsilon=8.0, delta=1e-5)
    with pytest.raises(BudgetExceeded, match=r"not zCDP.*dpdbscan\.BudgetAccountant"):
        acc.check(1.0, 4e-6)  # admitted before
    with pytest.raises(BudgetExceeded, match=r"stability histogram.*dpdbscan\.BudgetAccountant"):
        acc.check_rho(0.1, 5e-7)  # the stability histogram's threshold: admitted before
    with pytest.raises(BudgetExceeded, match="not zCDP"):
        acc.spend(0.0, 1e-9)
    with pytest.raises(BudgetExceeded, match="stability histogram"):
        acc.spend_rho(0.0, 1e-9)
    assert acc.spent_budget == [] and acc.spent_rho == [] and acc.total() == (0.0, 0.0)
    # what is zCDP is counted as before
    acc.spend(1.0, 0.0).spend_rho(0.1)
    assert acc.total() == (zcdp.epsilon_for(zcdp.pure_rho(1.0) + 0.1, 1e-5), 1e-5)
    no_delta = zcdp.ZCDPAccountant(epsilon=10.0)
    with pytest.raises(BudgetExceeded, match="exceed"):
        no_delta.check_rho(0.01)  # rho-zCDP never gives pure DP
    no_delta.spend_rho(0.0).spend(10.0, 0.0)  # a 0-zCDP spend is 0-DP: (P) still holds
    assert no_delta.total() == (10.0, 0.0)
    with pytest.raises(ValueError):
        zcdp.ZCDPAccountant(delta=2.0)


def test_accountant_after_pure_spends_refuses_a_rho_spend_that_zcdp_cannot_hold():
    """Pure spends admitted by (P) (their epsilons add up within the budget)
    and then a rho-spend: the rho-spend ends (P) for good, so only (Z) can
    admit it, and (Z) counts the pure spends at epsilon^2 / 2 (0.205 here,
    beyond rho_budget = 0.0244 of (1, 1e-6)): refused, whatever its rho. A
    further pure spend is still admitted by (P)."""
    acc = zcdp.ZCDPAccountant(epsilon=1.0, delta=1e-6)
    acc.spend(0.5, 0.0).spend(0.4, 0.0)
    assert acc.total() == (pytest.approx(0.9), 0.0)
    assert acc.rho > zcdp.rho_for(1.0, 1e-6) and acc.remaining_rho() == 0.0
    with pytest.raises(BudgetExceeded, match="rho=1e-09"):
        acc.check_rho(1e-9)
    acc.spend(0.1, 0.0)
    with pytest.raises(BudgetExceeded):
        acc.check(1e-9, 0.0)
    # the other order: rho first, then pure spends count in (Z) only
    acc = zcdp.ZCDPAccountant(epsilon=1.0, delta=1e-6)
    acc.spend_rho(0.02)
    left = zcdp.rho_for(1.0, 1e-6) - 0.02
    acc.check(math.sqrt(2 * left) * (1 - 1e-6), 0.0)
    with pytest.raises(BudgetExceeded):
        acc.check(math.sqrt(2 * left) * (1 + 1e-6), 0.0)


def test_two_person_level_gaussian_releases_fit_a_budget_of_two():
    """docs/privacy.md §1.5: two releases at (1, 1e-6), each rho_for(1, 1e-6)
    -zCDP, cost epsilon 1.45 together at delta 1e-6 (not 2); a third brings
    it to 1.81, still within (2, 1e-6)."""
    rho = zcdp.rho_for(1.0, 1e-6)
    acc = zcdp.ZCDPAccountant(epsilon=2.0, delta=1e-6)
    acc.spend_rho(rho).spend_rho(rho)
    eps, delta = acc.total()
    assert round(eps, 2) == 1.45 and delta == 1e-6
    acc.spend_rho(rho)
    assert round(acc.total()[0], 2) == 1.81


def _independent_rule(
    pure: list[float], rhos: list[float], epsilon: float, delta: float
) -> tuple[bool, bool]:
    """(P) and (Z) as docs/privacy.md §5.1 states them, computed here: (Z)
    through rho_budget = rho_for(epsilon, delta) (the accountant converts
    the sum instead), so each is returned with a relative 1e-9 of room
    either way: (surely admitted, possibly admitted)."""
    total_rho = math.fsum(rhos) + math.fsum(e * e / 2 for e in pure)
    p_holds = not any(r > 0 for r in rhos) and math.fsum(pure) <= epsilon * (1 + 1e-12)
    rho_budget = zcdp.rho_for(epsilon, delta) if delta > 0 else -1.0
    return (
        p_holds or total_rho <= rho_budget * (1 - 1e-9),
        p_holds or total_rho <= rho_budget * (1 + 1e-9),
    )


@settings(max_examples=150, deadline=None)
@given(
    budget=st.tuples(st.sampled_from([0.3, 1.0, 2.0, 5.0]), st.sampled_from([0.0, 1e-9, 1e-6, 1e-3])),
    offers=st.lists(
        st.one_of(
            st.tuples(st.just("pure"), st.one_of(st.just(0.0), st.floats(1e-9, 1.5))),
            # not below 1e-9: the conversion of a rho of 1e-20 or less states far
            # more epsilon than it needs (valid, but not the rule's sum)
            st.tuples(st.just("rho"), st.one_of(st.just(0.0), st.floats(1e-9, 0.3))),
            st.tuples(st.just("delta"), st.floats(1e-12, 1e-3)),
            st.tuples(st.just("stability"), st.floats(1e-12, 1e-3)),
        ),
        max_size=14,
    ),
)
def test_accountant_is_the_filter_and_never_readmits(budget, offers):
    """Every sequence of offered spends (each spent if the accountant admits
    it): every admitted sequence satisfies (P) or (Z); an offer that neither
    would admit is refused; a spend that is not zCDP is always refused; and a
    refused offer stays refused after further admitted spends (monotone).
    total() never states more than the budget."""
    epsilon, delta = budget
    acc = zcdp.ZCDPAccountant(epsilon=epsilon, delta=delta)
    pure: list[float] = []
    rhos: list[float] = []
    refused: list[tuple[str, float]] = []

    def offer(kind: str, x: float) -> bool:
        try:
            if kind == "pure":
                acc.check(x, 0.0)
            elif kind == "rho":
                acc.check_rho(x)
            elif kind == "delta":
                acc.check(0.1, x)
            else:
                acc.check_rho(0.01, x)
        except BudgetExceeded:
            return False
        return True

    for kind, x in offers:
        admitted = offer(kind, x)
        if kind in ("delta", "stability"):
            assert not admitted
        else:
            with_it = (pure + [x], rhos) if kind == "pure" else (pure, rhos + [x])
            surely, possibly = _independent_rule(*with_it, epsilon, delta)
            assert admitted in ((True,) if surely else (False,) if not possibly else (True, False))
        if not admitted:
            refused.append((kind, x))
            continue
        if kind == "pure":
            acc.spend(x, 0.0)
            pure.append(x)
        else:
            acc.spend_rho(x)
            rhos.append(x)
        assert _independent_rule(pure, rhos, epsilon, delta)[1]
        assert all(not offer(k, y) for k, y in refused)
        e, d = acc.total()
        assert e <= epsilon * (1 + 1e-12) and d <= delta


def test_bisection_stops_early_with_the_answer_of_every_step(monkeypatch):
    """_boundary stops once lo and hi are neighbouring floats; the conversions
    are then bit for bit those of all _STEPS bisection steps."""

    def every_step(above, lo, hi):
        for _ in range(zcdp._STEPS):
            mid = 0.5 * (lo + hi)
            if above(mid):
                hi = mid
            else:
                lo = mid
        return lo, hi

    rng = np.random.default_rng(0)
    cases = [(1.0, 1e-6), (0.1, 1e-9), (8.0, 1e-5), (3.0, 0.5)]
    cases += [(float(e), float(d)) for e, d in zip(rng.uniform(0.01, 10, 12), 10 ** rng.uniform(-12, -2, 12))]
    fast = [
        (zcdp._rho_for.__wrapped__(e, d), zcdp.delta_for(e * e / 3, e), zcdp.epsilon_for(e * e / 5, d))
        for e, d in cases
    ]
    monkeypatch.setattr(zcdp, "_boundary", every_step)
    slow = [
        (zcdp._rho_for.__wrapped__(e, d), zcdp.delta_for(e * e / 3, e), zcdp.epsilon_for(e * e / 5, d))
        for e, d in cases
    ]
    assert fast == slow
