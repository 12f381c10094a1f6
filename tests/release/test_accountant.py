"""The privacy budget: our accountant, diffprivlib's, and what the estimator spends.

Deterministic tests (no statistics): a spend either happens or it does not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, BudgetAccountant, BudgetExceeded
from dpdbscan.model import with_params

BOUNDS = (0.0, 10.0)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(3, 0.3, size=(n, 2)), rng.normal(7, 0.3, size=(n, 2))])


def _est(**kw):
    params = dict(eps=0.5, min_samples=5, epsilon=1.0, bounds=BOUNDS, random_state=0)
    params.update(kw)
    return DPDBSCAN(**params)


# --------------------------------------------------------------------------- #
# our BudgetAccountant


def test_accountant_check_spend_total_remaining():
    acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    assert acc.check(1.5, 1e-5) is True
    assert acc.spent_budget == []  # check does not spend
    acc.spend(1.5, 0.0)
    assert acc.total() == (1.5, 0.0)
    assert acc.remaining() == (0.5, 1e-5)
    with pytest.raises(BudgetExceeded, match="exceed"):
        acc.check(0.6, 0.0)
    with pytest.raises(BudgetExceeded):
        acc.spend(0.0, 2e-5)  # delta alone can run out
    assert acc.spent_budget == [(1.5, 0.0)]  # a refused spend leaves no trace
    acc.spend(0.5, 1e-5)  # exactly the rest is allowed
    assert acc.remaining() == (0.0, 0.0)
    assert issubclass(BudgetExceeded, ValueError)


def test_accountant_defaults_are_unlimited():
    acc = BudgetAccountant()
    for _ in range(100):
        acc.spend(10.0, 0.0)
    assert acc.total()[0] == 1000.0


# --------------------------------------------------------------------------- #
# the estimator and the accountant


def test_fit_records_and_spends_budget():
    acc = BudgetAccountant(epsilon=3.0)
    est = _est(epsilon=0.75, accountant=acc).fit(_data())
    assert est.budget_spent_ == (0.75, 0.0)
    assert acc.spent_budget == [(0.75, 0.0)]
    assert est.spans_.release.epsilon <= 0.75  # the release is at least as private as charged


def test_budget_runs_out_and_the_refused_fit_releases_nothing():
    acc = BudgetAccountant(epsilon=2.5)
    X = _data()
    _est(accountant=acc).fit(X)
    _est(accountant=acc).fit(X)
    refused = _est(accountant=acc)
    with pytest.raises(BudgetExceeded):
        refused.fit(X)
    assert not hasattr(refused, "spans_") and not hasattr(refused, "budget_spent_")
    assert acc.total() == (2.0, 0.0)
    # a smaller release still fits in what is left
    _est(epsilon=0.5, accountant=acc).fit(X)
    assert acc.total() == (2.5, 0.0)


def test_several_alphas_compose():
    """One release per alpha; basic composition adds their epsilons."""
    acc = BudgetAccountant(epsilon=10.0)
    X = _data()
    alphas = [0.3, 0.5, 1.0]
    for a in alphas:
        _est(eps=a, epsilon=0.4, accountant=acc).fit(X)
    assert acc.total()[0] == pytest.approx(0.4 * len(alphas))
    assert len(acc.spent_budget) == len(alphas)


def test_rethresholding_min_samples_is_free():
    """with_min_samples reads only the released histogram: it equals a fresh
    fit at the new MinPts on the same noise (the histogram does not depend on
    MinPts), and spends nothing."""
    acc = BudgetAccountant(epsilon=1.0)
    X = _data()
    model = _est(min_samples=5, random_state=7, accountant=acc).fit(X).spans_
    assert acc.total() == (1.0, 0.0)
    for m in (2, 10, 40):
        again = with_params(model, min_samples=m)
        fresh = _est(min_samples=m, random_state=7).fit(X).spans_
        assert np.array_equal(again.core_keys, fresh.core_keys)
        assert np.array_equal(again.labels, fresh.labels)
    assert acc.total() == (1.0, 0.0)
    # and it did not need the data: the model carries no points
    assert not any(isinstance(v, np.ndarray) and v.shape == X.shape for v in vars(model).values())


@pytest.mark.parametrize(
    "histogram,delta,spent_delta",
    [
        ("stability", 1e-6, 1e-6),  # delta is spent only by the stability histogram
        ("auto", 1e-6, 0.0),  # small grid: auto picks the dense histogram, pure DP
    ],
)
def test_delta_is_charged_only_when_spent(histogram, delta, spent_delta):
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    est = _est(histogram=histogram, delta=delta, accountant=acc).fit(_data())
    assert est.budget_spent_ == (1.0, spent_delta)
    assert acc.total() == (1.0, spent_delta)


@pytest.mark.parametrize("histogram", ["sparse", "dense"])
def test_delta_with_a_pure_histogram_is_refused_before_spending(histogram):
    # issue 15: a delta that the chosen histogram would silently ignore
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="only by Gaussian noise .*, by the stability histogram"):
        _est(histogram=histogram, delta=1e-6, accountant=acc).fit(_data())
    assert acc.total() == (0.0, 0.0)


def test_auto_with_delta_on_a_huge_grid_uses_stability_and_charges_delta():
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    est = _est(eps=1e-4, delta=1e-7, accountant=acc, histogram="auto").fit(_data())
    assert est.n_cells_ > 1 << 23 and est.histogram_.kind == "stability"
    assert acc.total() == (1.0, 1e-7)


def test_pure_accountant_refuses_delta():
    acc = BudgetAccountant(epsilon=5.0, delta=0.0)
    with pytest.raises(BudgetExceeded):
        _est(histogram="stability", delta=1e-6, accountant=acc).fit(_data())
    assert acc.spent_budget == []


def test_failed_argument_check_spends_nothing():
    acc = BudgetAccountant(epsilon=1.0)
    with pytest.raises(ValueError):
        _est(histogram="bogus", accountant=acc).fit(_data())
    with pytest.raises(ValueError):
        _est(epsilon=-1.0, accountant=acc).fit(_data())
    assert acc.spent_budget == []


# --------------------------------------------------------------------------- #
# diffprivlib's own BudgetAccountant


def _diffprivlib():
    # diffprivlib 0.6.6 raises ImportError with scikit-learn >= 1.9, which make
    # test uses: these tests run in .venv-baselines (make test-experiments)
    return pytest.importorskip(
        "diffprivlib.accountant",
        reason="diffprivlib (baselines extra; make test-experiments runs these)",
        exc_type=ImportError,
    )


def test_diffprivlib_accountant_is_accepted_and_spent():
    dpl = _diffprivlib()
    acc = dpl.BudgetAccountant(epsilon=2.0, delta=0.0)
    est = _est(epsilon=0.8, accountant=acc).fit(_data())
    assert acc.spent_budget == [(0.8, 0.0)]
    eps_spent, delta_spent = acc.total()
    assert eps_spent == pytest.approx(0.8) and delta_spent == 0.0
    assert est.budget_spent_ == (0.8, 0.0)


def test_diffprivlib_budget_runs_out():
    dpl = _diffprivlib()
    from diffprivlib.utils import BudgetError

    acc = dpl.BudgetAccountant(epsilon=1.5)
    X = _data()
    _est(accountant=acc).fit(X)
    refused = _est(accountant=acc)
    with pytest.raises(BudgetError):
        refused.fit(X)
    assert not hasattr(refused, "spans_")
    assert acc.spent_budget == [(1.0, 0.0)]
    assert acc.remaining()[0] == pytest.approx(0.5)


def test_diffprivlib_accountant_with_delta():
    dpl = _diffprivlib()
    from diffprivlib.utils import BudgetError

    acc = dpl.BudgetAccountant(epsilon=3.0, delta=1e-6)
    _est(histogram="stability", delta=1e-6, accountant=acc).fit(_data())
    assert acc.spent_budget == [(1.0, 1e-6)]
    with pytest.raises(BudgetError):  # delta is used up
        _est(histogram="stability", delta=1e-6, accountant=acc).fit(_data())
    _est(histogram="sparse", accountant=acc).fit(_data())  # pure DP still fits
    eps_spent, delta_spent = acc.total()
    assert math.isclose(eps_spent, 2.0) and delta_spent == pytest.approx(1e-6)


# --------------------------------------------------------------------------- #
# the automatic mode's DP count sizes the grid: checked at the costlier release


def _counted_3d(**kw):
    """An automatic 3-D release whose grid a DP count of the points sizes:
    at max_cells 2^26 a count of millions gives a grid over DENSE_MAX_CELLS,
    so the stability histogram (delta spent), a small count the dense one."""
    params = dict(
        eps="auto",
        min_samples="auto",
        epsilon=1.0,
        delta=1e-6,
        bounds=([0.0] * 3, [1.0] * 3),
        max_cells=2**26,
    )
    return DPDBSCAN(**{**params, **kw})


def test_a_count_that_may_lead_to_the_stability_histogram_is_checked_before_it_is_made(monkeypatch, tmp_path):
    """Before, the accountant was checked with the release before the count
    (dense, Laplace: (1, 0)) and charged after with the one the count led to:
    on millions of points the stability histogram's (1, 1e-6), refused only
    after the noise was drawn by an accountant without that delta (and never
    admitted by the ZCDPAccountant). Now both are checked, and a ledger
    reserves, the costlier before anything is read, whatever the data."""
    import dpdbscan.pipeline as pipeline
    from dpdbscan import Ledger, ZCDPAccountant

    X = np.random.default_rng(0).uniform(0, 1, (300, 3))
    with monkeypatch.context() as m:

        def reached(*a, **k):
            raise AssertionError("the count was reached")

        m.setattr(pipeline, "release_count", reached)
        for acc in (ZCDPAccountant(epsilon=10.0, delta=1e-5), BudgetAccountant(epsilon=10.0, delta=0.0)):
            with pytest.raises(BudgetExceeded):
                _counted_3d(accountant=acc).fit(X)
            assert acc.spent_budget == []
        zledger = Ledger.create(tmp_path / "z.ledger", "pts", 10.0, 1e-5, accounting="zcdp")
        with pytest.raises(BudgetExceeded, match="not zCDP"):
            _counted_3d(ledger=zledger).fit(X)
    # on few points the count leads to the dense release: charged (1, 0) after
    basic = BudgetAccountant(epsilon=10.0, delta=1e-5)
    ledger = Ledger.create(tmp_path / "b.ledger", "pts", 10.0, 1e-5)
    est = _counted_3d(accountant=basic, ledger=ledger).fit(X)
    assert est.histogram_.kind == "dense" and basic.total() == (1.0, 0.0)
    assert [(r.cost.epsilon, r.cost.delta) for r in ledger.account().releases] == [(1.0, 1e-6)]


@pytest.mark.parametrize("max_cells,kind", [(2**23, "dense"), (2**26, "stability")])
def test_costliest_is_the_release_unless_a_count_may_change_its_histogram(max_cells, kind):
    """At max_cells 2^23 no count leaves the dense histogram: the release is
    checked as before; at 2^26 the release at the largest grid is."""
    from dpdbscan.plan.resolve import costliest, resolve, validated

    lower, upper = np.zeros(3), np.ones(3)
    p = validated(_counted_3d(max_cells=max_cells).get_params())
    r = resolve(p, lower, upper)
    assert r.release.histogram == "dense"
    got = costliest(r, p, lower, upper)
    assert got.histogram == kind and (got is r.release) == (kind == "dense")
    assert got.grid.n_cells <= max_cells and got.delta_spent == (0.0 if kind == "dense" else 1e-6)
    # after the count (or without one) the release is its own bound
    assert costliest(resolve(p, lower, upper, size_estimate=300.0), p, lower, upper).histogram == "dense"
