"""The ledger's composition rule (dpdbscan.ledger.composition).

The total is the tighter of basic composition and zCDP-plus-basic; a release
that is not zCDP (the stability histogram) enters only by basic composition.
Every expected number is recomputed here from the rule's definition, and the
costs come from real resolved releases (dense, sparse, stability; Laplace and
Gaussian), checked against what a fitted model records.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.laws import zcdp
from dpdbscan.ledger import BASIC, ZCDP, Cost, compose, pure, release_cost, upper_cost
from dpdbscan.ledger.composition import fits, largest_pure, largest_repeated
from dpdbscan.plan.resolve import resolve, validated

LOWER, UPPER = np.zeros(2), np.full(2, 10.0)


def spec(units: bool = False, **values):
    p = validated({"eps": 0.5, "min_samples": 5, **values})
    return resolve(p, LOWER, UPPER, units=units).release


def test_pure_releases_under_a_pure_budget_add_up():
    total = compose([pure(1.0)] * 5, 0.0)
    assert (total.epsilon, total.delta, total.method) == (5.0, 0.0, BASIC)
    assert total.zcdp is None  # no delta to convert with
    assert fits(total, 5.0, 0.0) and not fits(compose([pure(1.0)] * 6, 0.0), 5.0, 0.0)


def test_decimal_inputs_fit_exactly_at_the_budget():
    assert fits(compose([pure(0.1)] * 10, 0.0), 1.0, 0.0)
    assert not fits(compose([pure(0.1)] * 11, 0.0), 1.0, 0.0)


def test_many_small_pure_releases_compose_better_in_zcdp():
    # 100 releases at epsilon 0.1: rho = 100 * 0.005 = 0.5, converted at delta 1e-6
    total = compose([pure(0.1)] * 100, 1e-6)
    expected = zcdp.epsilon_for(math.fsum([zcdp.pure_rho(0.1)] * 100), 1e-6)
    assert total.method == ZCDP
    assert total.epsilon == pytest.approx(expected, rel=1e-12) and total.epsilon < 6
    assert total.delta == 1e-6 and total.basic == pytest.approx((10.0, 0.0))


def test_few_pure_releases_stay_basic_when_that_is_tighter():
    total = compose([pure(1.0)] * 5, 1e-6)
    assert total.method == BASIC and total.epsilon == 5.0 and total.delta == 0.0
    assert total.zcdp is not None and total.zcdp[0] > 5.0


def test_two_gaussian_person_level_releases_cost_1_45_not_2():
    g = release_cost(spec(units=True, epsilon=1.0, delta=1e-6, max_cells_per_unit=10))
    assert g.rho == pytest.approx(zcdp.rho_for(1.0, 1e-6)) and g.delta == 1e-6
    total = compose([g, g], 1e-6)
    assert total.method == ZCDP
    assert total.epsilon == pytest.approx(zcdp.epsilon_for(2 * g.rho, 1e-6), rel=1e-12)
    assert 1.44 < total.epsilon < 1.46
    # by basic composition the two would need delta 2e-6: more than the lifetime delta
    assert total.basic == (2.0, 2e-6)


def test_a_stability_release_is_not_zcdp():
    for noise, units, k in (("discrete", False, None), ("gaussian", True, 10)):
        s = spec(units=units, histogram="stability", delta=1e-6, noise=noise, max_cells_per_unit=k)
        c = release_cost(s)
        assert c.rho is None and (c.epsilon, c.delta) == (1.0, 1e-6), noise


def test_a_mixture_is_zcdp_for_the_zcdp_part_plus_basic_for_the_rest():
    g = release_cost(spec(units=True, epsilon=1.0, delta=1e-7, max_cells_per_unit=10))
    s = Cost(0.5, 2e-7, None)  # a stability release
    p = pure(0.3)
    budget_delta = 1e-6
    total = compose([g, s, p, g], budget_delta)
    rho = math.fsum([g.rho, p.rho, g.rho])
    # the zCDP part is converted with the delta the non-zCDP part leaves
    expected = zcdp.epsilon_for(rho, budget_delta - 2e-7) + 0.5
    assert total.zcdp == pytest.approx((expected, budget_delta), rel=1e-12)
    assert total.basic == pytest.approx((2.8, 1e-7 + 2e-7 + 0 + 1e-7))
    assert total.epsilon == min(expected, 2.8) and total.rho == pytest.approx(rho)


def test_no_zcdp_statement_when_the_other_releases_use_up_the_delta():
    g = release_cost(spec(units=True, epsilon=1.0, delta=1e-7, max_cells_per_unit=10))
    total = compose([g, Cost(1.0, 1e-6, None)], 1e-6)
    assert total.zcdp is None and total.method == BASIC
    assert total.basic == pytest.approx((2.0, 1.1e-6))
    assert not fits(total, 10.0, 1e-6)  # its delta is over the lifetime delta


def test_stability_releases_alone_compose_by_basic_composition():
    total = compose([Cost(1.0, 1e-7, None)] * 3, 1e-6)
    assert total.method == BASIC and total.zcdp is None
    assert total.basic == pytest.approx((3.0, 3e-7))


def test_the_total_is_the_smallest_valid_statement_and_never_falls():
    rng = random.Random(0)
    kinds = [
        lambda: pure(rng.uniform(0.01, 1)),
        lambda: Cost(1.0, 1e-7, zcdp.rho_for(1.0, 1e-7)),
        lambda: Cost(rng.uniform(0.1, 1), 1e-8, None),
    ]
    for trial in range(10):
        costs: list[Cost] = []
        previous = 0.0
        delta_budget = rng.choice([0.0, 1e-6, 1e-5])
        for _ in range(8):
            costs.append(rng.choice(kinds)())
            t = compose(costs, delta_budget)
            statements = [t.basic] + ([t.zcdp] if t.zcdp is not None else [])
            valid = [s for s in statements if s[1] <= delta_budget * (1 + 1e-12)]
            if valid:
                assert t.epsilon == min(s[0] for s in valid)
            assert t.epsilon >= previous - 1e-12, (trial, costs)
            previous = t.epsilon if valid else previous


def test_the_model_records_the_cost_that_was_resolved():
    X = np.random.default_rng(0).normal(5, 1, (500, 2))
    units = np.arange(500) % 50
    cases = [
        ({}, None),
        ({"histogram": "sparse"}, None),
        ({"histogram": "stability", "delta": 1e-6}, None),
        ({"noise": "laplace"}, None),
        ({"delta": 1e-6, "max_cells_per_unit": 4}, units),
        ({"delta": 1e-6, "max_cells_per_unit": 4, "histogram": "stability"}, units),
    ]
    for values, u in cases:
        est = DPDBSCAN(0.5, min_samples=5, bounds=(0, 10), random_state=1, **values).fit(X, units=u)
        expected = release_cost(spec(units=u is not None, **values))
        assert release_cost(est.spans_.release) == expected, values


def test_upper_cost_covers_every_release_at_that_epsilon_and_delta():
    assert upper_cost(1.0, 0.0) == pure(1.0)
    bound = upper_cost(1.0, 1e-6)
    assert bound.rho is None and (bound.epsilon, bound.delta) == (1.0, 1e-6)
    for values in ({"delta": 1e-6}, {"delta": 1e-6, "histogram": "stability"}):
        c = release_cost(spec(**values))
        assert c.epsilon <= bound.epsilon and c.delta <= bound.delta


@pytest.mark.parametrize(
    "epsilon,delta,rho",
    [(-1.0, 0.0, None), (math.inf, 0.0, None), (1.0, 1.0, None), (1.0, -1e-9, None), (1.0, 0.0, -0.5)],
)
def test_a_bad_cost_is_refused(epsilon, delta, rho):
    with pytest.raises(ValueError):
        Cost(epsilon, delta, rho)


def test_the_largest_further_pure_release():
    # basic: the budget minus what was spent
    assert largest_pure([pure(1.0)] * 3, 5.0, 0.0) == pytest.approx(2.0)
    assert largest_pure([pure(1.0)] * 5, 5.0, 0.0) == 0.0
    # zCDP: found by bisection; it fits, and a little more does not
    costs = [pure(0.1)] * 150
    left = largest_pure(costs, 7.0, 1e-6)
    assert 0 < left < 7.0
    assert fits(compose([*costs, pure(left)], 1e-6), 7.0, 1e-6)
    assert not fits(compose([*costs, pure(left * (1 + 1e-6))], 1e-6), 7.0, 1e-6)


@pytest.mark.parametrize("n", [1, 4, 52])
@pytest.mark.parametrize("delta_budget", [0.0, 1e-6])
def test_largest_repeated_is_the_largest_epsilon_whose_n_releases_fit(n, delta_budget):
    """N pure releases at the returned epsilon fit beside what was spent, N at
    a hair more do not; with no lifetime delta (no zCDP conversion) that is
    the budget left over N, with one never less (the tighter statement)."""
    spent = [pure(0.5)]
    e = largest_repeated(spent, pure, n, 3.0, delta_budget)
    assert fits(compose([*spent, *[pure(e)] * n], delta_budget), 3.0, delta_budget)
    assert not fits(compose([*spent, *[pure(e * (1 + 1e-6))] * n], delta_budget), 3.0, delta_budget)
    if delta_budget == 0.0:
        assert e == pytest.approx(2.5 / n)
    else:
        assert e >= 2.5 / n * (1 - 1e-9)
    if n == 1:
        assert e == largest_pure(spent, 3.0, delta_budget)


def test_many_releases_under_zcdp_get_more_than_the_budget_over_n():
    """365 daily pure releases within (2, 1e-6): rho's add, so each gets
    over three times 2 / 365 (basic composition's share); 52 weekly ones
    over 1.4 times 2 / 52."""
    for n, gain in ((365, 3.0), (52, 1.4)):
        e = largest_repeated([], pure, n, 2.0, 1e-6)
        assert e > gain * 2.0 / n
        assert compose([pure(e)] * n, 1e-6).method == ZCDP
