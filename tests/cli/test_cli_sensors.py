"""A newcomer with sensor readings, not locations: models of 3 to 6 dimensions through
``plot`` and ``explore``, whose refusals and defaults were written for 2-D maps."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, save_model

from clirun import run


def _six_d_model(path, seed: int = 70_070) -> None:
    """Four blobs of per-window features (6-D) in a public box of -2..2, at eps 0.3 (a sparse
    release whose default explore grid reaches 4 x eps = 1.2)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-1.0, 1.0, (4, 6))
    X = centres[rng.integers(0, 4, 8_000)] + rng.normal(0.0, 0.03, (8_000, 6))
    m = DPDBSCAN(eps=0.3, min_samples=30, epsilon=1.0, bounds=(-2.0, 2.0), random_state=seed + 1).fit(X)
    save_model(m.spans_, path)


@pytest.fixture(scope="module")
def six_d(tmp_path_factory):
    path = tmp_path_factory.mktemp("six") / "feat.spans.json"
    with pytest.warns(Warning):  # the research seed's warning
        _six_d_model(path)
    return path


@pytest.mark.parametrize("kind", ["histogram", "sums", "spans", "labels"])
def test_a_picture_of_a_six_d_model_is_refused_with_what_there_is_instead(capsys, six_d, kind):
    """It read "plots need a 2-D model, this one is 6-D" (or, for labels, first asked for
    --points, to refuse the picture after): nothing said what a 6-D model can be looked at with."""
    rc, out, err = run(capsys, "plot", six_d, "--kind", kind)
    assert rc == 2 and out == ""
    assert f"--kind {kind} draws a 2-D model's cells on the plane, and this model is 6-D" in err
    assert "--points" not in err
    assert "--kind tree draws the condensed tree of an automatic fit" in err and "this model has none" in err
    assert "'dpdbscan info'" in err and "'dpdbscan explore --no-png'" in err


def test_explore_of_a_six_d_model_leaves_out_the_default_eps_it_cannot_weigh(capsys, six_d, tmp_path):
    """The default grid (eps x 0.71 .. 4) was refused whole: "eps=1.2 is too large for this
    release's cells" (13.6M cells in a neighbourhood), with no word on what to pass instead."""
    rc, out, err = run(capsys, "explore", six_d, "--no-png", "--out-dir", tmp_path)
    assert rc == 0, err
    assert "dpdbscan: note: the default eps 0.8485, 1.2 left out: in 6-D" in err
    rows = [ln.split() for ln in out.splitlines() if ln.strip()[:1].isdigit()]
    assert {"0.3", "0.4243", "0.6"} <= {r[0] for r in rows} and max(float(r[0]) for r in rows) == 0.6
    # values the user chose are never dropped: refused, saying what to do
    rc, out, err = run(capsys, "explore", six_d, "--no-png", "--out-dir", tmp_path, "--eps", "0.3", "1.2")
    assert rc == 2 and "give smaller eps values (--eps), or make a new release at a coarser eps" in err


def test_a_person_level_forecast_counts_units_in_its_warning(capsys):
    """400 people's 6-D features, each in at most 4 cells, one count a cell: every line of the
    forecast spoke of units ("a core cell needs an estimated 235.1 units"), and its warning of
    "235 points within eps"."""
    rc, out, err = run(
        capsys, "forecast", "--bounds", "-2", "-2", "-2", "0", "0", "0", "2", "2", "2", "2", "5", "4",
        "--eps", "0.5", "--min-samples", "20", "--delta", "1e-6", "--unit", "person",
        "--max-cells-per-unit", "4", "--n-expected", "1600",
    )  # fmt: skip
    assert rc == 0, err
    said = [ln for ln in (out + err).splitlines() if "only very concentrated clusters can be found" in ln]
    assert len(said) == 1 and "a core cell needs 235 units within eps" in said[0]
    # event level: points, as before
    rc, out, err = run(
        capsys, "forecast", "--bounds", "-2", "-2", "-2", "0", "0", "0", "2", "2", "2", "2", "5", "4",
        "--eps", "0.1", "--min-samples", "200", "--n-expected", "1600",
    )  # fmt: skip
    assert rc == 0, err
    assert "points within eps" in out + err and "units within eps" not in out + err


def test_picture_options_on_three_d_readings_are_named_as_given(capsys, tmp_path):
    """`fit` of 3-D readings with --size (no --png) was refused as "--png needs 2-D data, got 3
    columns": an option the user had not given, and no word on what fit writes instead."""
    rng = np.random.default_rng(70_090)
    X = rng.normal(2000.0, 50.0, (300, 3))
    path = tmp_path / "acc.csv"
    path.write_text("x,y,z\n" + "\n".join(",".join(f"{v:.0f}" for v in row) for row in X) + "\n")
    base = ["fit", path, "--header", "--bounds", "0", "4095", "--eps", "20", "--min-samples", "5"]
    rc, out, err = run(capsys, *base, "--size", "800x600", "--out-dir", tmp_path / "o")
    assert rc == 2 and out == ""
    assert "--size needs 2-D data, got 3 columns" in err and "--png" not in err
    assert "without them fit writes the span model (JSON)" in err
    rc, out, err = run(capsys, *base, "--png", tmp_path / "a.png", "--extent", "0", "0", "9", "9")
    assert rc == 2 and "--png and --extent need 2-D data" in err
    assert not (tmp_path / "o").exists()
