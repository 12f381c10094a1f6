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
    title = " ".join(" ".join(t.get_text() for t in fig.texts).split())  # wrapped to the width
    assert "event-level: each row is protected, not each person" in title and "epsilon=1" in title
    path = tmp_path / "p.spans.json"
    save_model(m, path)
    rc, out, err = run(capsys, "explore", path, "--eps", "0.5", "1", "--min-samples", "10", "20")
    assert rc == 0, err
    assert protection_brief(m) in out.splitlines()[0]
    assert np.isfinite(m.spans.threshold)


def _person_model():
    """A person-level release (300 units x 10 points, seeded, Gaussian noise)."""
    X = blob_points()
    units = np.repeat(np.arange(300), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(
            eps=0.5,
            min_samples=20,
            bounds=([-2, -2], [11, 11]),
            random_state=1,
            delta=1e-6,
            max_cells_per_unit=4,
        )
        return est.fit(X, units=units).spans_


def test_the_explore_csv_says_what_it_protects_and_any_reader_reads_it(capsys, tmp_path):
    """Every row of explore's CSV names who the release protects (the
    level, the unit, k, m, epsilon, delta, rho) and that row's guarantee, in
    columns: a plain csv reader and pandas' defaults read a table whose
    first columns are the numbers, as before (a ``#`` line would have become
    the header). It said nothing of the protection before."""
    import csv

    import pandas as pd

    from dpdbscan.model import guarantee, with_params

    m = _person_model()
    path = tmp_path / "p.spans.json"
    save_model(m, path)
    rc, _, err = run(capsys, "explore", path, "--eps", "0.5", "1", "--min-samples", "10", "20", "--no-png")
    assert rc == 0, err
    table = tmp_path / "p.spans.explore.csv"
    with open(table, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 and list(rows[0]) == list(E.FILE_COLUMNS)
    brief = protection_brief(m)
    assert brief.startswith("person-level: each unit is protected (k=4 cells and m=1 point")
    assert "rho=" in brief
    for r in rows:
        assert r["protects"] == brief
        want = with_params(m, eps=float(r["eps"]), min_samples=int(r["min_samples"]))
        assert r["guarantee"] == guarantee(want)["statement"] and "person-level" in r["guarantee"]
    frame = pd.read_csv(table)
    assert list(frame.columns) == list(E.FILE_COLUMNS) and frame["eps"].dtype.kind == "f"
    assert frame["min_samples"].tolist() == [10, 20, 10, 20]


def test_the_explore_title_is_wrapped_to_the_figure():
    """A narrow grid (two MinPts, 5.2 inches) with a person-level, seeded
    release: its protection line was one line of ~300 characters, cut at
    both edges of the figure; now wrapped, inside the figure and above the
    panels."""
    import matplotlib.pyplot as plt

    m = _person_model()
    m.metadata["randomness"] = "seeded (insecure; seed not stored)"  # as the command line records it
    fig = E.figure(E.explore(m, [0.5, 1.0], [10, 20]), m)
    try:
        E.lay_out(fig)  # as save_figure does
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        title = fig._suptitle
        box = title.get_window_extent(renderer)
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height
        assert "seeded: not a private release" in " ".join(title.get_text().split())
        for ax in fig.axes:
            assert not box.overlaps(ax.title.get_window_extent(renderer)), ax.get_title()
    finally:
        plt.close(fig)


def test_the_table_says_what_its_share_is_and_is_not(capsys, tmp_path):
    """At person level the noise of the box's empty cells is most of the
    release's positive mass, so ``share`` (the core mass over it) is small
    however many points lie in spans: the table says what it measures (a
    newcomer read 0.6% as the share of the stops in the places)."""
    m = _person_model()
    path = tmp_path / "p.spans.json"
    save_model(m, path)
    rc, out, err = run(capsys, "explore", path, "--eps", "0.5", "1", "--min-samples", "20", "40", "--no-png")
    assert rc == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "share" in line and "stability" in line)
    assert lines[header + 5] == E.SHARE_LEGEND  # right under the table's four rows
    assert "the noise of empty cells included" in E.SHARE_LEGEND
    assert "not the share of the points in spans" in E.SHARE_LEGEND
