"""A series' units given as a Python list are read id by id, as the
estimator reads them (files/unitids.py), never typed together by numpy.

Before (round 7): ``fit_series``, ``start_series`` and ``append_periods``
took their rows in the horizon with ``np.asarray(units)``, so a list of ids
near 2**60 became float64 when one other unit's id was 0.5, the ids rounded
to multiples of 256 and sixty units became one: the spot they share fell
from a noisy count of 60 (one span) to 1 (none) with one row of another
unit added elsewhere.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan.params.parameters import validate
from dpdbscan.series import SeriesInput, append_periods, fit_series, plan_series, start_series
from dpdbscan.traces.periods import Periods

LOWER, UPPER = np.zeros(2), np.full(2, 10.0)
SPOT = np.array([[2.5, 2.5]])
P = validate(dict(epsilon=2.0, delta=1e-5, eps=0.5, min_samples=10, max_cells_per_unit=4, random_state=3))
PERIODS = Periods("day", "2024-03-04", "2024-03-07")


def rows(extra: bool):
    """D: 60 units with ids 2**60 + i, three rows each at one spot over the
    first two days; D' adds one row of a unit whose id is 0.5, elsewhere."""
    ids: list = [2**60 + i for i in range(60) for _ in range(3)]
    xy = [[2.5, 2.5]] * len(ids)
    t = [1_709_510_400 + 3600 * (j % 40) for j in range(len(ids))]
    if extra:
        ids.append(0.5)
        xy.append([7.5, 7.5])
        t.append(1_709_510_400)
    return np.array(xy, dtype=float), ids, t


def spot(model) -> int:
    h = model.histogram
    return int(h.value_at(h.grid.keys_of_points(SPOT))[0])


def as_objects(ids: list) -> np.ndarray:
    arr = np.empty(len(ids), dtype=object)
    arr[:] = ids
    return arr


@pytest.mark.parametrize("how", ["fit_series", "start_series"])
def test_a_list_of_ids_is_read_id_by_id(how):
    got = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded research noise
        for extra in (False, True):
            for form in ("list", "objects"):
                X, ids, t = rows(extra)
                units = ids if form == "list" else as_objects(ids)
                if how == "fit_series":
                    s = fit_series(
                        SeriesInput(X, LOWER, UPPER, P, units, t), plan_series(P, LOWER, UPPER, PERIODS)
                    )
                else:
                    plan = plan_series(P, LOWER, UPPER, PERIODS, places=1)
                    s = start_series(SeriesInput(X, LOWER, UPPER, P, units, t), plan)
                got[extra, form] = (spot(s.model), s.model.n_spans, s.table.tolist())
    # the list reads as the object array does, with or without the other unit
    assert got[False, "list"] == got[False, "objects"]
    assert got[True, "list"] == got[True, "objects"]
    # the other unit's row, elsewhere, leaves the spot's sixty units as they were
    assert got[True, "list"][0] == got[False, "list"][0] > 30


def test_append_reads_a_list_of_ids_id_by_id():
    X, ids, t = rows(True)
    p = {**P, "epsilon": 8.0}  # the spans of the first day found, so that there is a table
    plan = plan_series(p, LOWER, UPPER, PERIODS, places=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = start_series(SeriesInput(X, LOWER, UPPER, p, as_objects(ids), t), plan, through="2024-03-05")
        later = [
            append_periods(s.model, X, units, t, random_state=5).table.tolist()
            for units in (ids, as_objects(ids))
        ]
    assert s.model.n_spans == 1
    assert later[0] == later[1]
    assert later[0][0][1] > 10  # the second day's column counts the spot's units, not one merged unit
