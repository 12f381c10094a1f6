"""experiments/person_auto_k.py on a small synthetic city: the top cells are
the ones most units visit, the share is what predict says, the table adds up."""

from __future__ import annotations

import numpy as np

from experiments import person_auto_k


def _city(seed=0):
    """300 units downtown, each in a few cells; the first of them instead
    alone far away."""
    rng = np.random.default_rng(seed)
    units = np.repeat(np.arange(300), 30)
    lonlat = np.c_[rng.normal(-122.41, 0.002, units.size), rng.normal(37.79, 0.002, units.size)]
    lonlat[:30] = [-122.55, 37.6]
    return lonlat, units


def test_top_cells_are_the_most_visited_and_the_share_is_predict_s():
    lonlat, units = _city()
    model = person_auto_k.fit(lonlat, units, 40, 1.0, 0, eps="300m", min_samples=20)
    centres = person_auto_k.top_cells(model, lonlat, units, top=5)
    assert centres.shape == (5, 2)
    # every top cell is in the crowd, none at the lone unit's spot
    x0 = person_auto_k.top_cells(model, np.array([[-122.41, 37.79]]), np.array([0]), top=1)[0]
    assert np.all(np.abs(centres - x0).max(axis=1) < 1.0)
    share = person_auto_k.share_in_spans(model, centres)
    assert share == np.mean(model.predict(centres) >= 0)


def test_run_and_table():
    lonlat, units = _city(1)
    rows = person_auto_k.run(lonlat, units, ["auto", 8], [0, 1], 1.0)
    assert [(r["k"], r["seed"]) for r in rows] == [("auto", 0), ("auto", 1), (8, 0), (8, 1)]
    assert all(r["k used"] == 8 for r in rows if r["k"] == 8)
    text = person_auto_k.table(rows, 1.0)
    assert text.count("\n") == 3 and "| auto |" in text and "| 8 | 8 |" in text
