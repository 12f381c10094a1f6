"""One row's unit id, or one row's length, never refuses the fit (the
privacy review's open cases: before, one id of an exotic type, a Decimal,
a Fraction or any object, in a list or an object column of ids, refused the
whole person-level fit, and one row of another length in a list of rows
refused the estimator's fit, so whether a release happened hinged on one
record).

D holds 300 rows of 30 units; D' adds one row whose unit id, or whose
length, is odd. D' drops that row alone, says how many in a private note
that quotes nothing, and a seeded fit of D' releases what the fit of D
releases.
"""

from __future__ import annotations

import decimal
import fractions
import warnings

import numpy as np
import pandas as pd
import pytest

from dpdbscan import DPDBSCAN, fit_lonlat
from dpdbscan.exceptions import PrivateNoteWarning
from dpdbscan.files.unitids import read_units
from dpdbscan.model.codec import model_to_dict
from dpdbscan.params.validation import check_array

_RNG = np.random.default_rng(21)
D = np.vstack([_RNG.normal(0.3, 0.02, (150, 2)), _RNG.normal(0.7, 0.02, (150, 2))]).clip(0, 1)
UNITS = [f"u{i % 30}" for i in range(300)]
ODD_IDS = [decimal.Decimal("1.5"), fractions.Fraction(1, 3), 1j, (1, 2), object(), np.longdouble(0.5)]


def _fit(X, units=None, bounds=(0.0, 1.0)):
    """A seeded fit's release (histogram and spans), and the private notes."""
    kw = {"delta": 1e-6, "max_cells_per_unit": 2} if units is not None else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPDBSCAN(eps=0.1, min_samples=5, bounds=bounds, random_state=7, **kw).fit(X, units=units)
    notes = [str(w.message) for w in caught if issubclass(w.category, PrivateNoteWarning)]
    got = model_to_dict(m.spans_)
    return (got["histogram"], got["spans"]), notes


def _id_forms(odd):
    """D' 's ids as the caller may hold them: a list, an object array, an
    object Series."""
    ids = [*UNITS, odd]
    arr = np.empty(len(ids), dtype=object)
    arr[:] = ids
    yield "list", ids
    yield "object array", arr
    yield "object Series", pd.Series(arr, dtype=object)


@pytest.mark.parametrize("odd", ODD_IDS, ids=lambda o: type(o).__name__)
def test_one_id_of_no_readable_type_drops_its_row_alone(odd):
    want, quiet = _fit(D, UNITS)
    assert not any("readable type" in n for n in quiet)
    X1 = np.vstack([D, [[0.3, 0.3]]])
    for form, ids in _id_forms(odd):
        got, notes = _fit(X1, ids)
        assert got == want, form
        assert any(n.startswith("1 unit id(s) of no readable type") for n in notes), (form, notes)
        assert not any(repr(odd) in n or str(odd) in n for n in notes), form


def test_an_id_of_no_readable_type_is_missing_and_counted():
    unreadable = [0]
    got = read_units([*UNITS[:3], decimal.Decimal(2), None], unreadable)
    assert got.tolist() == ["u0", "u1", "u2", None, None] and unreadable == [1]


def test_an_array_whose_dtype_cannot_hold_ids_is_still_refused():
    """A dtype is the caller's choice, public: refused for D and every
    neighbour alike."""
    with pytest.raises(TypeError, match="cannot be read exactly"):
        read_units(np.zeros(3, dtype=np.longdouble))


@pytest.mark.parametrize(
    "row",
    [[0.3, 0.3, 0.3], [0.3], [], 0.3, "ab", {"x": 1, "y": 2}],
    ids=["longer", "shorter", "empty", "scalar", "text", "dict"],
)
def test_one_row_of_another_length_drops_its_row_alone(row):
    rows = D.tolist()
    want, quiet = _fit(rows)
    assert not quiet
    for at in (0, 150, 300):
        got, notes = _fit([*rows[:at], row, *rows[at:]])
        assert got == want, at
        assert notes == ["1 row(s) of X of another length than the others (or than the bounds) are dropped"]
    units_want, _ = _fit(rows, UNITS)
    got, _ = _fit([*rows, row], [*UNITS, "u0"])
    assert got == units_want


def test_the_bounds_give_a_ragged_lists_width():
    """With one lower and one upper bound per column the width is public:
    rows of another length drop, however many they are."""
    X = [[0.5, 0.5, 0.5]] * 3 + [[0.5, 0.5]] * 2
    ragged = [0]
    got = check_array(X, width=2, ragged=ragged)
    assert got.shape == (5, 2) and ragged == [3] and np.isnan(got[:3]).all() and (got[3:] == 0.5).all()
    ragged = [0]
    got = check_array(X, ragged=ragged)  # without: the length most rows have
    assert got.shape == (5, 3) and ragged == [2]


def test_fit_lonlat_drops_a_row_of_another_length_than_two():
    ll = (np.array([116.3, 39.9]) + 0.002 * D).tolist()
    kw = {"bounds": [116.0, 39.6, 116.6, 40.2], "eps": "300m", "min_samples": 5, "random_state": 7}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model_to_dict(fit_lonlat(ll, **kw))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = model_to_dict(fit_lonlat([*ll, [116.3, 39.9, 1.0]], **kw))
    assert got["spans"] == want["spans"] and got["histogram"] == want["histogram"]
    assert any("1 row(s) of lonlat of another length than 2" in str(w.message) for w in caught)
