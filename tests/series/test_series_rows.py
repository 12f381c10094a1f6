"""A series' points given as a list of rows or a frame are read row by row,
as the estimator reads them (docs/privacy.md section 8, round 14).

Before: ``fit_series``, ``start_series`` and ``append_periods`` took their
points with ``np.asarray(X, dtype=float64)``, so one row of another length,
or one cell that is a word or a list, refused the whole input (numpy's
message quoting the word), after a ledger had reserved the series: D
released, D plus that one row not. Now such a row is a row of NaN, dropped
by the clean rule alone, and D' releases what D releases.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpdbscan.ledger import Ledger
from dpdbscan.params.parameters import validate
from dpdbscan.series import SeriesInput, append_periods, fit_series, plan_series, start_series
from dpdbscan.traces.periods import Periods

LOWER, UPPER = np.zeros(2), np.full(2, 10.0)
PERIODS = Periods("day", "2024-03-04", "2024-03-07")
SECRET = "bob@example.com"
ODD = {
    "three values": [5.0, 5.0, 5.0],
    "one value": [5.0],
    "a word": [SECRET, 5.0],
    "a list in a cell": [[1.0], 5.0],
}


def rows(odd=None):
    """60 units, three rows each at one spot over the first two days (a list
    of rows), and ``odd`` as one more unit's row on the first day."""
    rng = np.random.default_rng(0)
    ids = [i for i in range(60) for _ in range(3)]
    xy = [[float(a), float(b)] for a, b in rng.normal(2.5, 0.1, (len(ids), 2))]
    t = [1_709_510_400 + 3600 * (j % 40) for j in range(len(ids))]
    if odd is not None:
        ids.insert(90, 999)
        xy.insert(90, odd)
        t.insert(90, 1_709_510_400)
    return xy, ids, t


def as_frame(xy):
    """The rows as a pandas frame of two object columns."""
    return pd.DataFrame(xy, columns=["x", "y"], dtype=object)


def release(how, xy, ids, t, tmp_path=None):
    p = validate(dict(epsilon=8.0, delta=1e-5, eps=0.5, min_samples=10, max_cells_per_unit=4, random_state=3))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        if how == "fit_series":
            s = fit_series(SeriesInput(xy, LOWER, UPPER, p, ids, t), plan_series(p, LOWER, UPPER, PERIODS))
            out = s.model, s.table
        else:
            ledger = Ledger.create(tmp_path / "budget.ledger", "cabs", 20.0, 1e-4, unit="cab")
            plan = plan_series(p, LOWER, UPPER, PERIODS, places=1)
            s = start_series(
                SeriesInput(xy, LOWER, UPPER, p, ids, t),
                plan,
                through="2024-03-05",
                ledger=ledger,
                unit_name="cab",
            )
            if how == "append_periods":
                s = append_periods(s.model, xy, ids, t, ledger=ledger, random_state=5)
            assert all(r.status == "written" for r in ledger.account().releases)
            out = s.model, s.table
    assert not any(SECRET in str(w.message) for w in said)
    model, table = out
    return model.n_spans, [r.tolist() for r in model.regions()], np.asarray(table).tolist()


# a frame has one width: a row of another length is the frame's owner's to
# shape, so a frame's odd rows are its odd cells
CASES = [(odd, "list") for odd in ODD] + [("a word", "frame"), ("a list in a cell", "frame")]


@pytest.mark.parametrize(("odd", "form"), CASES, ids=[f"{o}-{f}" for o, f in CASES])
@pytest.mark.parametrize("how", ["fit_series", "start_series", "append_periods"])
def test_one_odd_row_never_stops_a_series(how, odd, form, tmp_path):
    """D and D plus one unit's odd row: the same release under one seed (the
    odd row dropped alone); on the code before D' raised ``ValueError``."""
    xy, ids, t = rows()
    xy1, ids1, t1 = rows(ODD[odd])
    if form == "frame":
        xy, xy1 = as_frame(xy), as_frame(xy1)
    (tmp_path / "d").mkdir()
    (tmp_path / "d1").mkdir()
    want = release(how, xy, ids, t, tmp_path / "d")
    assert want[0] >= 1
    assert release(how, xy1, ids1, t1, tmp_path / "d1") == want


def test_a_series_that_fails_after_reserving_marks_its_rows_failed(tmp_path):
    """The rows reserved for a series stay counted and say ``failed`` when
    the work after reserving raises (here: times of another length than
    the rows), as the command line marks its own; before, they stayed
    ``reserved``, which ``ledger show`` reads as never finished."""
    p = validate(dict(epsilon=8.0, delta=1e-5, eps=0.5, min_samples=10, max_cells_per_unit=4, random_state=3))
    ledger = Ledger.create(tmp_path / "budget.ledger", "cabs", 20.0, 1e-4, unit="cab")
    plan = plan_series(p, LOWER, UPPER, PERIODS, places=1)
    xy, ids, t = rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded research noise
        with pytest.raises(ValueError, match="times has"):
            start_series(
                SeriesInput(xy, LOWER, UPPER, p, ids, t[:-1]), plan, through="2024-03-05", ledger=ledger
            )
        assert {r.status for r in ledger.account().releases} == {"failed"}
        s = start_series(SeriesInput(xy, LOWER, UPPER, p, ids, t), plan, through="2024-03-05", ledger=ledger)
        with pytest.raises(ValueError, match="times has"):
            append_periods(s.model, xy, ids, t[:-1], ledger=ledger, random_state=5)
    statuses = [r.status for r in ledger.account().releases]
    assert statuses[-1] == "failed" and statuses.count("written") >= 2
