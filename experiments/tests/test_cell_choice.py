"""experiments/cell_choice.py: the synthetic traces are what the module says
(sampling step, dwells and drives, each unit in time order) and the ground
truth finds dwell cells and drive-only cells."""

from __future__ import annotations

import numpy as np

from experiments import cell_choice


def test_traces_are_sampled_per_unit_in_time_order():
    t = cell_choice.traces(20, 60.0, 0)
    assert set(t) == {"x", "y", "unit", "time", "dwell"}
    for u in range(20):
        times = t["time"][t["unit"] == u]
        assert np.allclose(np.diff(times), 60.0)
        assert times[-1] < cell_choice.HOURS * 3600.0
    assert 0.3 < t["dwell"].mean() < 0.99  # both dwells and drives
    assert t["x"].min() >= 0 and t["x"].max() <= cell_choice.SIDE


def test_truth_top_cells_are_dwells_and_passage_cells_are_drives():
    t = cell_choice.traces(200, 60.0, 1)
    top, passage = cell_choice.truth(t)
    assert top.shape == (20, 2) and passage.shape[1] == 2 and len(passage) > 0
    w = cell_choice.EPS / np.sqrt(2)

    def dwell_share(c):
        near = (np.abs(t["x"] - c[0]) < w / 2) & (np.abs(t["y"] - c[1]) < w / 2)
        return t["dwell"][near].mean()

    assert np.mean([dwell_share(c) for c in top]) > 0.5
    assert np.mean([dwell_share(c) for c in passage]) < 0.5
