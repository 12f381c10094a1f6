"""A release that fails after the mechanism began is still charged to the
accountant (the red-team review of every door: before, the in-process
accountant was charged only after the histogram, so a fit that failed in
between, e.g. out of memory on the grid that the automatic mode's DP count
sized, had spent that count's share of the budget and recorded nothing; a
ledger already counts such a release as ``failed``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, BudgetAccountant
from dpdbscan.release.backends import NumpyBackend


class _FailsAfter(NumpyBackend):
    """Counts ``good`` times, then fails as a worker out of memory would."""

    def __init__(self, good: int) -> None:
        super().__init__()
        self.good = good

    def _one(self) -> None:
        if self.good <= 0:
            raise MemoryError("a worker ran out of memory")
        self.good -= 1

    def count(self, grid, X):
        self._one()
        return super().count(grid, X)

    def dense_counts(self, grid, X):
        self._one()
        return super().dense_counts(grid, X)


X = np.random.default_rng(2).uniform(0, 10, (500, 2))


def _fit(acc, backend, **kw):
    params = dict(epsilon=1.0, bounds=(0.0, 10.0), random_state=0, accountant=acc, backend=backend)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPDBSCAN(**params).fit(X)


def test_a_release_that_fails_after_its_dp_count_is_charged():
    # eps="auto" without n_expected: a DP count of the points (count 1), then the histogram (count 2)
    acc = BudgetAccountant(epsilon=10.0)
    with pytest.raises(MemoryError):
        _fit(acc, _FailsAfter(1), eps="auto", min_samples="auto")
    assert acc.total()[0] == pytest.approx(1.0)


def test_a_release_that_fails_while_counting_is_charged_as_the_ledger_counts_it():
    acc = BudgetAccountant(epsilon=10.0)
    with pytest.raises(MemoryError):
        _fit(acc, _FailsAfter(0), eps=0.5, min_samples=5)
    assert acc.total()[0] == pytest.approx(1.0)


def test_a_release_refused_before_reading_is_not_charged():
    acc = BudgetAccountant(epsilon=0.5)
    with pytest.raises(Exception, match="budget"):
        _fit(acc, _FailsAfter(5), eps=0.5, min_samples=5)
    assert acc.total()[0] == 0.0


def test_a_release_that_succeeds_is_charged_once():
    acc = BudgetAccountant(epsilon=10.0)
    _fit(acc, _FailsAfter(5), eps=0.5, min_samples=5)
    assert acc.total()[0] == pytest.approx(1.0)
    assert len(acc.spent_budget) == 1
