"""explore's figure and summary say whom the release protects, as the spans
picture and the map do (the red-team review: before, an event-level release
was explored under "epsilon=1" alone, with no word that each row, not each
person, is protected; a person-level one named no unit column and no rho)."""

from __future__ import annotations

import warnings

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.model import save_model
from dpdbscan.model.describe import protection_brief
from dpdbscan.render import explorepanels as E

from clirun import blob_points, run


def _model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(eps=0.5, min_samples=20, bounds=([-2, -2], [11, 11]), random_state=1)
        return est.fit(blob_points()).spans_


def test_an_event_level_exploration_says_each_row_is_protected(capsys, tmp_path):
    m = _model()
    fig = E.figure(E.explore(m, [0.5, 1.0], [10, 20]), m)
    title = " ".join(t.get_text() for t in fig.texts)
    assert "event-level: each row is protected, not each person" in title and "epsilon=1" in title
    path = tmp_path / "p.spans.json"
    save_model(m, path)
    rc, out, err = run(capsys, "explore", path, "--eps", "0.5", "1", "--min-samples", "10", "20")
    assert rc == 0, err
    assert protection_brief(m) in out.splitlines()[0]
    assert np.isfinite(m.spans.threshold)
