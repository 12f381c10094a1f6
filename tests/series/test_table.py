"""The span x period table: the bound over the whole horizon, its sensitivity,
the noise it is calibrated to."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdbscan.laws import zcdp
from dpdbscan.release import periodtable
from dpdbscan.release.bounding import BoundingKey
from dpdbscan.release.periodtable import TableBound


def _key(seed: int = 0) -> BoundingKey:
    return BoundingKey((seed, seed + 1), bytes(range(16)))


def test_a_unit_in_every_period_counts_in_at_most_k_pairs():
    # unit 0 is in both spans in every one of 30 periods, many times each
    T, k = 30, 5
    spans = np.tile(np.repeat([0, 1], 3), T)
    periods = np.repeat(np.arange(T), 6)
    units = np.zeros(spans.size, dtype=np.int64)
    assert periodtable.pairs_per_unit(units, spans, periods, T).tolist() == [2 * T]
    for m in (1, 2):
        table = periodtable.bounded_table(units, spans, periods, TableBound((2, T), k, m), _key())
        assert np.count_nonzero(table) == k  # k pairs kept over the whole horizon
        assert table.sum() == k * m  # m points each (3 > m are there)


def test_one_unit_changes_the_table_by_the_stated_sensitivity():
    rng = np.random.default_rng(1)
    T, S, k, m = 12, 4, 3, 2
    n = 4000
    units = rng.integers(0, 50, n)
    spans = rng.integers(-1, S, n)  # -1: in no span, counted nowhere
    periods = rng.integers(-1, T, n)  # -1: outside the horizon
    key = _key(3)
    full = periodtable.bounded_table(units, spans, periods, TableBound((S, T), k, m), key)
    l1, l2 = periodtable.sensitivity(k, m)
    assert (l1, l2) == (k * m, math.sqrt(k) * m)
    worst = 0.0
    for u in range(50):
        keep = units != u
        diff = full - periodtable.bounded_table(
            units[keep], spans[keep], periods[keep], TableBound((S, T), k, m), key
        )
        assert np.abs(diff).sum() <= l1
        worst = max(worst, float(np.sqrt((diff.astype(float) ** 2).sum())))
    assert worst <= l2 + 1e-12
    assert worst == pytest.approx(l2)  # some unit uses its whole bound: the bound is tight here


def test_rows_outside_spans_or_periods_count_nowhere():
    units = np.array([1, 1, 2, 2, 3])
    spans = np.array([0, -1, 0, 1, 0])
    periods = np.array([0, 0, -1, 1, 1])
    got = periodtable.bounded_table(units, spans, periods, TableBound((2, 2), 10, 1), _key())
    assert got.tolist() == [[1, 1], [0, 1]]


def test_the_noise_is_calibrated_to_the_l2_sensitivity():
    k, m, rho = 7, 1, 0.05
    s2 = periodtable.sigma2_for(rho, k, m)
    assert s2 == pytest.approx(k * m * m / (2 * rho))
    assert periodtable.rho_of(s2, k, m) <= rho * (1 + 1e-12)
    # the drawn noise has that variance (20,000 zero entries)
    n = 20000
    noisy = periodtable.release_exact(lambda key: np.zeros((n, 1), dtype=np.int64), s2, 7)
    assert noisy.var() == pytest.approx(s2, rel=0.05)
    assert abs(noisy.mean()) < 4 * math.sqrt(s2 / n)


def test_the_interval_holds_its_level():
    s2 = 64.0
    h = periodtable.half_width(s2, 0.95)
    noise = periodtable.release_exact(lambda key: np.zeros((40000, 1), dtype=np.int64), s2, 11)
    outside = float(np.mean(np.abs(noise) > h))
    assert outside <= 0.05 + 0.005
    assert float(np.mean(np.abs(noise) > h - 1)) > 0.05 - 0.005  # and is the smallest such
    assert h == math.ceil(1.96 * 8) or h == math.floor(1.96 * 8)


def test_plan_splits_the_lifetime_budget():
    from dpdbscan.params.parameters import validate
    from dpdbscan.series import plan_series
    from dpdbscan.traces.periods import Periods

    p = validate(dict(eps=0.5, min_samples=20, epsilon=1.0, delta=1e-6, max_cells_per_unit=4))
    weeks = Periods("week", "2024-01-01", "2024-02-05")
    every = plan_series(p, np.zeros(2), np.full(2, 10.0), weeks)  # k: every pair, once S is known
    assert every.k is None and every.sigma2 is None
    assert every.calibrated(3).k == 15 and every.calibrated(3).sigma2 == periodtable.sigma2_for(
        every.table_rho, 15, 1
    )
    plan = plan_series(p, np.zeros(2), np.full(2, 10.0), weeks, max_pairs_per_unit=5)
    assert plan.table_rho == every.table_rho and plan.cost == every.cost  # k does not change the cost
    assert plan.sigma2 == periodtable.sigma2_for(plan.table_rho, 5, 1)
    rho = zcdp.rho_for(1.0, 1e-6)
    rho_a = zcdp.rho_for(plan.spans_epsilon, 1e-6)
    assert plan.k == 5 and plan.m == 1
    assert rho_a + plan.table_rho <= rho
    # the default share: 0.4 of rho to the table, 0.6 to the spans
    assert rho_a == pytest.approx(0.6 * rho, rel=1e-6)
    assert plan.table_rho == pytest.approx(0.4 * rho, rel=1e-6)
    assert zcdp.epsilon_for(rho_a + plan.table_rho, 1e-6) <= 1.0
    assert plan.cost.epsilon == 1.0 and plan.cost.rho == rho


def test_plan_with_the_stability_histogram_splits_by_basic_composition():
    from dpdbscan.params.parameters import validate
    from dpdbscan.series import plan_series
    from dpdbscan.traces.periods import Periods

    p = validate(dict(eps=0.5, min_samples=20, epsilon=1.0, delta=1e-6, max_cells_per_unit=4,
                      histogram="stability"))  # fmt: skip
    plan = plan_series(
        p, np.zeros(2), np.full(2, 10.0), Periods("day", "2024-01-01", "2024-01-03"), share=0.25
    )
    assert plan.method.startswith("basic")
    assert (plan.spans_epsilon, plan.spans_delta) == (0.75, 5e-7)
    assert plan.table_rho == zcdp.rho_for(0.25, 5e-7)
    assert plan.cost.rho is None and (plan.cost.epsilon, plan.cost.delta) == (1.0, 1e-6)


def test_a_bound_above_every_pair_is_lowered_to_spans_times_periods():
    from dpdbscan.params.parameters import validate
    from dpdbscan.series import plan_series
    from dpdbscan.traces.periods import Periods

    p = validate(dict(eps=0.5, min_samples=20, epsilon=1.0, delta=1e-6, max_cells_per_unit=4))
    weeks = Periods("week", "2024-01-01", "2024-02-05")  # 5 weeks
    plan = plan_series(p, np.zeros(2), np.full(2, 10.0), weeks, max_pairs_per_unit=50)
    assert plan.k == 50  # before the spans: as given
    three = plan.calibrated(3)  # 15 pairs exist: no unit has more, k = 50 would only add noise
    assert three.k == 15 and three.sigma2 == periodtable.sigma2_for(plan.table_rho, 15, 1)
    assert plan.calibrated(20).k == 50  # 100 pairs: the bound as given
    assert three.cost == plan.cost  # the cost is rho_b's either way
