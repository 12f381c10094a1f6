"""The ledger's composition rule (dpdbscan.ledger.composition).

The ledger's rule is a privacy filter fixed per dataset (its accounting):
"basic" (basic composition) or "zcdp" (basic composition while every release
is pure, else rho's add against the budget's rho; a release that is not zCDP,
the stability histogram, is refused). For releases fixed in advance,
compose_fixed states the tighter of basic composition and zCDP-plus-basic.
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
from dpdbscan.ledger import (
    BASIC,
    ZCDP,
    ZCDP_FILTER,
    Cost,
    compose,
    compose_fixed,
    pure,
    release_cost,
    upper_cost,
)
from dpdbscan.ledger.composition import NOT_ZCDP, fits, largest_pure, largest_repeated
from dpdbscan.plan.resolve import resolve, validated

LOWER, UPPER = np.zeros(2), np.full(2, 10.0)


def spec(units: bool = False, **values):
    p = validated({"eps": 0.5, "min_samples": 5, **values})
    return resolve(p, LOWER, UPPER, units=units).release


@pytest.mark.parametrize("accounting", ["basic", "zcdp"])
def test_pure_releases_under_a_pure_budget_add_up(accounting):
    total = compose([pure(1.0)] * 5, 0.0, accounting)
    assert (total.epsilon, total.delta, total.method) == (5.0, 0.0, BASIC)
    assert total.zcdp is None  # no delta to convert with
    assert fits(total, 5.0, 0.0) and not fits(compose([pure(1.0)] * 6, 0.0, accounting), 5.0, 0.0)


@pytest.mark.parametrize("accounting", ["basic", "zcdp"])
def test_decimal_inputs_fit_exactly_at_the_budget(accounting):
    for delta in (0.0, 1e-6):
        assert fits(compose([pure(0.1)] * 10, delta, accounting), 1.0, delta)
        assert not fits(compose([pure(0.1)] * 11, delta, accounting), 1.0, delta)


def test_many_small_pure_releases_compose_better_in_zcdp():
    # 100 releases at epsilon 0.1: rho = 100 * 0.005 = 0.5, converted at delta 1e-6
    total = compose([pure(0.1)] * 100, 1e-6, "zcdp")
    expected = zcdp.epsilon_for(math.fsum([zcdp.pure_rho(0.1)] * 100), 1e-6)
    assert total.method == ZCDP_FILTER
    assert total.epsilon == pytest.approx(expected, rel=1e-12) and total.epsilon < 6
    assert total.delta == 1e-6 and total.basic == pytest.approx((10.0, 0.0))
    # the accounting "basic" says what basic composition says
    assert compose([pure(0.1)] * 100, 1e-6).epsilon == pytest.approx(10.0)


def test_few_pure_releases_stay_basic_when_that_is_tighter():
    total = compose([pure(1.0)] * 5, 1e-6, "zcdp")
    assert total.method == BASIC and total.epsilon == 5.0 and total.delta == 0.0
    assert total.zcdp is not None and total.zcdp[0] > 5.0


def test_two_gaussian_person_level_releases_cost_1_45_not_2():
    g = release_cost(spec(units=True, epsilon=1.0, delta=1e-6, max_cells_per_unit=10))
    assert g.rho == pytest.approx(zcdp.rho_for(1.0, 1e-6)) and g.delta == 1e-6
    total = compose([g, g], 1e-6, "zcdp")
    assert total.method == ZCDP_FILTER
    assert total.epsilon == pytest.approx(zcdp.epsilon_for(2 * g.rho, 1e-6), rel=1e-12)
    assert 1.44 < total.epsilon < 1.46
    # by basic composition the two would need delta 2e-6: more than the lifetime delta
    assert total.basic == (2.0, 2e-6)
    basic = compose([g, g], 1e-6)
    assert (basic.epsilon, basic.delta, basic.method) == (2.0, 2e-6, BASIC) and not fits(basic, 10.0, 1e-6)


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
    total = compose_fixed([g, s, p, g], budget_delta)
    rho = math.fsum([g.rho, p.rho, g.rho])
    # the zCDP part is converted with the delta the non-zCDP part leaves
    expected = zcdp.epsilon_for(rho, budget_delta - 2e-7) + 0.5
    assert total.zcdp == pytest.approx((expected, budget_delta), rel=1e-12)
    assert total.basic == pytest.approx((2.8, 1e-7 + 2e-7 + 0 + 1e-7))
    assert total.epsilon == min(expected, 2.8) and total.rho == pytest.approx(rho)


def test_no_zcdp_statement_when_the_other_releases_use_up_the_delta():
    g = release_cost(spec(units=True, epsilon=1.0, delta=1e-7, max_cells_per_unit=10))
    total = compose_fixed([g, Cost(1.0, 1e-6, None)], 1e-6)
    assert total.zcdp is None and total.method == BASIC
    assert total.basic == pytest.approx((2.0, 1.1e-6))
    assert not fits(total, 10.0, 1e-6)  # its delta is over the lifetime delta


def test_stability_releases_alone_compose_by_basic_composition():
    total = compose_fixed([Cost(1.0, 1e-7, None)] * 3, 1e-6)
    assert total.method == BASIC and total.zcdp is None
    assert total.basic == pytest.approx((3.0, 3e-7))
    assert compose([Cost(1.0, 1e-7, None)] * 3, 1e-6).basic == total.basic
    # the accounting "zcdp" never admits them: no rho to add
    refused = compose([pure(0.1), Cost(1.0, 1e-7, None)], 1e-6, "zcdp")
    assert refused.method == NOT_ZCDP and refused.epsilon == math.inf and not fits(refused, 100.0, 0.5)


def test_the_fixed_total_is_the_smallest_valid_statement_and_never_falls():
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
            t = compose_fixed(costs, delta_budget)
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
    left = largest_pure(costs, 7.0, 1e-6, "zcdp")
    assert 0 < left < 7.0
    assert fits(compose([*costs, pure(left)], 1e-6, "zcdp"), 7.0, 1e-6)
    assert not fits(compose([*costs, pure(left * (1 + 1e-6))], 1e-6, "zcdp"), 7.0, 1e-6)
    assert largest_pure(costs, 7.0, 1e-6) == 0.0  # basic: 150 x 0.1 is over 7 already


@pytest.mark.parametrize("n", [1, 4, 52])
@pytest.mark.parametrize("delta_budget", [0.0, 1e-6])
@pytest.mark.parametrize("accounting", ["basic", "zcdp"])
def test_largest_repeated_is_the_largest_epsilon_whose_n_releases_fit(n, delta_budget, accounting):
    """N pure releases at the returned epsilon fit beside what was spent, N at
    a hair more do not; with no lifetime delta (no zCDP conversion) or by
    basic composition that is the budget left over N, by zCDP never less."""
    spent = [pure(0.5)]
    e = largest_repeated(spent, pure, n, 3.0, delta_budget, accounting)
    assert fits(compose([*spent, *[pure(e)] * n], delta_budget, accounting), 3.0, delta_budget)
    assert not fits(
        compose([*spent, *[pure(e * (1 + 1e-6))] * n], delta_budget, accounting), 3.0, delta_budget
    )
    if delta_budget == 0.0 or accounting == "basic":
        assert e == pytest.approx(2.5 / n)
    else:
        assert e >= 2.5 / n * (1 - 1e-9)
    if n == 1:
        assert e == largest_pure(spent, 3.0, delta_budget, accounting)


def test_many_releases_under_zcdp_get_more_than_the_budget_over_n():
    """365 daily pure releases within (2, 1e-6): rho's add, so each gets
    over three times 2 / 365 (basic composition's share); 52 weekly ones
    over 1.4 times 2 / 52."""
    for n, gain in ((365, 3.0), (52, 1.4)):
        e = largest_repeated([], pure, n, 2.0, 1e-6, "zcdp")
        assert e > gain * 2.0 / n
        assert compose([pure(e)] * n, 1e-6, "zcdp").method == ZCDP_FILTER
        assert largest_repeated([], pure, n, 2.0, 1e-6) == pytest.approx(2.0 / n)  # basic
        # releases fixed in advance (a plan, no ledger): the tighter statement, as zCDP here
        assert largest_repeated([], pure, n, 2.0, 1e-6, None) == pytest.approx(e, rel=1e-6)
        assert compose_fixed([pure(e)] * n, 1e-6).method == ZCDP


def test_the_default_releases_each_fit_a_budget_of_1_and_1e_6():
    """One release at (1, 1e-6) of each kind the library makes fits a
    lifetime (1, 1e-6) by the default accounting; by "zcdp" all but the
    stability histogram's, which it refuses."""
    costs = {
        "laplace": release_cost(spec(epsilon=1.0)),
        "gaussian, person level": release_cost(
            spec(units=True, epsilon=1.0, delta=1e-6, max_cells_per_unit=10)
        ),
        "stability": release_cost(spec(histogram="stability", epsilon=1.0, delta=1e-6)),
        "stability, person level": release_cost(
            spec(units=True, histogram="stability", epsilon=1.0, delta=1e-6, max_cells_per_unit=10)
        ),
    }
    for kind, c in costs.items():
        assert fits(compose([c], 1e-6), 1.0, 1e-6), kind
        assert fits(compose([c], 1e-6, "zcdp"), 1.0, 1e-6) == (c.rho is not None), kind
    assert costs["laplace"].delta == 0 and costs["gaussian, person level"].rho is not None


def test_an_adaptive_sequence_the_old_rule_admitted_is_refused():
    """The old rule (compose_fixed, the smaller of two statements) admitted
    20 Gaussian releases at (0.5, 1e-6) and then a stability release under
    (5, 1e-6), the zCDP part converted at the delta the stability release
    left: a delta chosen after the Gaussian releases' outputs. Neither
    accounting admits that sequence."""
    g = Cost(0.5, 1e-6, zcdp.rho_for(0.5, 1e-6))
    s = Cost(2.0, 5e-7, None)
    seq = [g] * 20 + [s]
    assert all(fits(compose_fixed(seq[: i + 1], 1e-6), 5.0, 1e-6) for i in range(len(seq)))
    for accounting in ("basic", "zcdp"):
        admitted = [fits(compose(seq[: i + 1], 1e-6, accounting), 5.0, 1e-6) for i in range(len(seq))]
        assert not all(admitted), accounting
    # basic refuses the second Gaussian release (deltas add); zcdp admits the 20, refuses the stability one
    assert [fits(compose(seq[: i + 1], 1e-6), 5.0, 1e-6) for i in range(3)] == [True, False, False]
    assert [fits(compose(seq[: i + 1], 1e-6, "zcdp"), 5.0, 1e-6) for i in (19, 20)] == [True, False]


@pytest.mark.parametrize("accounting", ["basic", "zcdp"])
@pytest.mark.parametrize("seed", range(6))
def test_the_rule_is_monotone(accounting, seed):
    """Adding a release never lowers the total, and a sequence that does not
    fit never fits again with more releases: refusing a release is the same
    as checking each prefix (what a filter needs)."""
    rng = random.Random(seed)
    kinds = [
        lambda: pure(rng.uniform(0.0, 0.5)),
        lambda: Cost(rng.uniform(0.1, 1), 1e-7, zcdp.rho_for(1.0, 1e-7) * rng.uniform(0.1, 1)),
        lambda: Cost(rng.uniform(0.1, 1), 1e-8, None),
        lambda: upper_cost(rng.uniform(0.0, 0.5), 0.0),
    ]
    delta_budget = rng.choice([0.0, 1e-7, 1e-6])
    eps_budget = rng.uniform(0.5, 4.0)
    costs: list[Cost] = []
    previous, was_fitting = 0.0, True
    for _ in range(30):
        costs.append(rng.choice(kinds)())
        t = compose(costs, delta_budget, accounting)
        assert t.epsilon >= previous - 1e-12 and t.delta >= 0
        ok = fits(t, eps_budget, delta_budget)
        assert was_fitting or not ok, costs
        previous, was_fitting = t.epsilon, ok
