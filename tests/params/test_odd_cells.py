"""One odd cell of X drops its row; it never refuses the fit (the red-team
review of every door: before, one text cell, one pandas NA in a nullable
``Float64`` column or one complex number refused the whole fit, so whether a
release happened hinged on one record; a Python list with one text cell was
typed as text as a whole).

D is numeric; D' adds one row with one odd cell. ``check_array`` reads every
other row of D' as in D and the odd row as not finite (the clean rule drops
it), and a seeded fit of D' releases what the fit of D releases.
"""

from __future__ import annotations

import datetime as dt
import warnings

import numpy as np
import pandas as pd
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.params.validation import check_array

D = np.random.default_rng(3).uniform(0, 1, (200, 2))
ODD = ["abc", "", None, pd.NA, pd.NaT, {"foo": "bar"}, 1j, [1, 2], dt.date(2020, 1, 1), 2**2000, b"\xff"]


def _neighbours(odd):
    """D' as the caller may hold it: a list, an object array, DataFrames."""
    rows = [[odd, 0.5], *D.tolist()]
    arr = np.empty((len(rows), 2), dtype=object)
    for i, row in enumerate(rows):
        arr[i, 0], arr[i, 1] = row
    yield "list", rows
    yield "object array", arr
    if not isinstance(odd, int):  # (pandas 2.1 cannot hold 2**2000 in an object column)
        yield "object DataFrame", pd.DataFrame(arr, columns=["x", "y"])
    if odd is pd.NA or odd is None:
        typed = pd.DataFrame(D, columns=["x", "y"]).astype("Float64")
        head = pd.DataFrame({"x": pd.array([odd], dtype="Float64"), "y": pd.array([0.5], dtype="Float64")})
        yield "nullable Float64 DataFrame", pd.concat([head, typed], ignore_index=True)


@pytest.mark.parametrize("odd", ODD, ids=[repr(o)[:20] for o in ODD])
def test_one_odd_cell_makes_its_row_not_finite_and_nothing_else(odd):
    for form, X in _neighbours(odd):
        got = check_array(X)
        assert got.shape == (D.shape[0] + 1, 2), form
        assert not np.isfinite(got[0]).all(), form
        assert got[0, 1] == 0.5, form
        assert np.array_equal(got[1:], D), form


def test_a_cell_reads_alike_whether_or_not_another_cell_is_bad():
    """Each cell by float() alone: numpy's astype, which reads a datetime64
    as a number float() refuses, is never a fast path taken only when every
    cell converts."""
    for cell in (np.datetime64("2020-01-01"), np.timedelta64(5, "s"), " 1.5 ", True, b"2"):
        rows = [[cell, 0.5], *D.tolist()]
        alone = check_array(np.array(rows, dtype=object))
        beside_a_bad_cell = check_array(np.array([*rows, ["abc", 0.5]], dtype=object))
        np.testing.assert_array_equal(alone, beside_a_bad_cell[:-1])


def _release(X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPDBSCAN(eps=0.2, min_samples=8, bounds=([0, 0], [1, 1]), random_state=11).fit(X)
        return m.predict(np.random.default_rng(4).uniform(0, 1, (300, 2)))


def test_a_fit_with_one_odd_cell_releases_what_d_releases():
    want = _release(D)
    for odd in ("abc", pd.NA, {"foo": "bar"}):
        for form, X in _neighbours(odd):
            assert np.array_equal(_release(X), want), (repr(odd), form)


def test_typed_text_and_complex_arrays_are_still_refused():
    """A whole array of text or complex numbers is the caller's type, not a
    value: refused, as before, for D and every neighbour alike."""
    with pytest.raises(ValueError, match="must be numeric"):
        check_array(np.array([["0.5", "0.5"]]))
    with pytest.raises(ValueError, match="Complex data"):
        check_array(np.array([[1j, 0.5]]))
