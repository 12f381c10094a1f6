"""The private note on standardised data (:func:`dpdbscan.params.validation.standardised_note`):
the cases its column sums must get right, whatever way they are summed."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.params.validation import standardised_note


def _standardised(n: int = 1000, d: int = 2, seed: int = 0) -> np.ndarray:
    Z = np.random.default_rng(seed).normal(size=(n, d))
    return (Z - Z.mean(axis=0)) / Z.std(axis=0)


def test_standardised_columns_are_noted():
    assert "mean 0 and standard deviation 1" in standardised_note(_standardised(), "--bounds")
    assert "--bounds" in standardised_note(_standardised(d=3), "--bounds")


@pytest.mark.parametrize("shift", [1e-3, -1e-3])
def test_one_shifted_column_is_not(shift):
    Z = _standardised()
    Z[:, 1] += shift
    assert standardised_note(Z) is None


def test_rows_with_nan_or_inf_are_left_out_of_the_sums():
    Z = _standardised()
    with_bad = np.vstack([Z[:500], [[np.nan, 5.0], [np.inf, 0.0], [1.0, -np.inf]], Z[500:]])
    assert standardised_note(with_bad) is not None
    assert standardised_note(np.full((10, 2), np.nan)) is None


def test_other_dtypes_and_shapes():
    assert standardised_note(_standardised().astype(np.float32)) is not None
    assert standardised_note(np.arange(20, dtype=np.int64).reshape(10, 2)) is None
    assert standardised_note(np.asfortranarray(_standardised())) is not None
    assert standardised_note(_standardised()[::2]) is None  # a strided view: its own mean and std
    assert standardised_note(np.zeros((1, 2))) is None
    assert standardised_note(np.zeros(5)) is None
