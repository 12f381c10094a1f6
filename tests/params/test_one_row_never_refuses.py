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


@pytest.mark.parametrize(
    "bad",
    [[0.5, 0.5, 0.5], 0.5, [[0.5], [0.5]], []],
    ids=["longer", "scalar", "nested", "empty"],
)
def test_a_list_whose_every_row_has_another_length_is_released_as_an_empty_one(bad):
    """With per-column bounds the width is public: a list whose every row
    has another length than the bounds (or is no row) drops them all and is
    released as an empty list is; before, numpy's shape of such a list
    refused the fit, and one added row of the right length made it release
    (round 7: whether a release happened hinged on one row)."""
    bounds = ([0.0, 0.0], [1.0, 1.0])
    want, _ = _fit(np.zeros((0, 2)), bounds=bounds)
    assert _fit([], bounds=bounds)[0] == want
    got, notes = _fit([bad] * 40, bounds=bounds)
    assert got == want
    ragged_note = "40 row(s) of X of another length than the others (or than the bounds) are dropped"
    # rows of two lists have the bounds' length: their cells are no numbers (dropped by the clean rule)
    assert notes == ([] if bad == [[0.5], [0.5]] else [ragged_note])
    one, _ = _fit([np.array([0.5, 0.5])], bounds=bounds)
    assert _fit([bad] * 40 + [[0.5, 0.5]], bounds=bounds)[0] == one  # D' releases as its one good row
    ragged = [0]
    assert check_array([], width=3, ragged=ragged, every_row=True).shape == (0, 3) and ragged == [0]


def test_fit_lonlat_of_rows_all_of_another_length_than_two_releases():
    """fit_lonlat's width is 2: rows of three values are dropped, every one
    of them, never a refusal that one row of two values would lift."""
    kw = {"bounds": [116.0, 39.6, 116.6, 40.2], "eps": "300m", "min_samples": 5, "random_state": 7}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model_to_dict(fit_lonlat(np.zeros((0, 2)), **kw))
        got = model_to_dict(fit_lonlat([[116.3, 39.9, 1.0]] * 40, **kw))
    assert got["spans"] == want["spans"] and got["histogram"] == want["histogram"]


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


def _fitted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPDBSCAN(eps=0.1, min_samples=5, bounds=(0.0, 1.0), random_state=7).fit(D)


@pytest.mark.parametrize(
    "odd",
    [[0.3], [0.3, 0.3, 0.3], [], [[0.3, 0.3]]],
    ids=["short", "long", "empty", "nested"],
)
@pytest.mark.parametrize("share", [1, 2, 3])  # the odd rows among 4: one, half, most
def test_predict_gives_one_label_a_row_and_minus_one_to_rows_of_another_length(tmp_path, odd, share):
    """predict (the estimator's, the model's, a loaded model's) on a list
    of rows with rows of another length than the fit's: as many labels as
    rows, -1 for each odd row, the others labelled as alone; a note counts
    the odd rows. Before, when the odd rows were as many as the others or
    more, predict refused ("X has 1 features"); the length is the model's,
    public."""
    from dpdbscan import load_model, save_model

    m = _fitted()
    good = [[0.3, 0.3], [0.7, 0.7], [0.5, 0.05], [0.31, 0.29]]
    rows = [odd if i < share else good[i] for i in range(4)]
    want = m.predict(np.array([r if i >= share else good[0] for i, r in enumerate(rows)]))
    want[:share] = -1
    path = tmp_path / "m.json"
    save_model(m.spans_, path)
    for predict in (m.predict, m.spans_.predict, load_model(path).predict):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = predict(rows)
        assert got.shape == (4,) and got.tolist() == want.tolist()
        notes = [str(w.message) for w in caught if issubclass(w.category, PrivateNoteWarning)]
        assert f"{share} row(s) of X of another length than 2 are labelled -1 (noise)" in notes


def test_predict_lonlat_gives_one_label_a_row():
    from dpdbscan import predict_lonlat

    ll = (np.array([116.3, 39.9]) + 0.002 * D).tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_lonlat(ll, bounds=[116.0, 39.6, 116.6, 40.2], eps="300m", min_samples=5, random_state=7)
    query = [ll[0], [116.3], [116.3, 39.9, 7.0], ll[200]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = predict_lonlat(model, query)
    want = predict_lonlat(model, [ll[0], ll[200]])
    assert got.tolist() == [want[0], -1, -1, want[1]]
    assert any("2 row(s) of lonlat of another length than 2" in str(w.message) for w in caught)


def test_predict_still_refuses_an_array_of_another_width():
    """The caller's array shape, not a row: refused, as scikit-learn does."""
    m = _fitted()
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="features"):
        m.predict([[0.5], [0.5]])
