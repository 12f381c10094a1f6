"""Exploring a release (issue 13): spans over an (eps, MinPts) grid, the
table and the figure, at no privacy cost."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cli import main
from dpdbscan.model import describe, finest_eps, guarantee, save_model, summary, with_params
from dpdbscan.post.ladder import Partition, agreement
from dpdbscan.render import explorepanels as E

PNG = b"\x89PNG\r\n\x1a\n"


def _model(seed=0, d=2):
    rng = np.random.default_rng(seed)
    centres = [[0.3, 0.3], [0.7, 0.6], [0.35, 0.75]] if d == 2 else [[0.3] * d, [0.7] * d]
    X = np.vstack([rng.normal(c, 0.04, (1500, d)) for c in centres]).clip(0, 1)
    est = DPDBSCAN(eps=0.02, min_samples=20, bounds=(0, 1), random_state=seed)
    with pytest.warns(Warning):  # seeded noise
        return est.fit(X).spans_


@pytest.fixture(scope="module")
def model():
    return _model()


def test_every_grid_point_has_the_spans_of_with_params(model):
    eps, ms = [0.02, 0.03, 0.05], [10, 40]
    ex = E.explore(model, eps, ms)
    assert [(r.eps, r.min_samples) for r in ex.rows] == [(a, m) for a in eps for m in ms]
    for r in ex.rows:
        want = with_params(model, eps=r.eps, min_samples=r.min_samples)
        got = ex.models[(r.eps, r.min_samples)]
        np.testing.assert_array_equal(got.grid.decode(got.core_keys), want.grid.decode(want.core_keys))
        np.testing.assert_array_equal(got.labels, want.labels)
        assert r.spans == want.n_spans and r.core_cells == want.n_core_cells
        assert r.threshold == pytest.approx(want.spans.threshold)
        assert 0 <= r.core_share <= 1 and -1 <= r.stability <= 1
    # more MinPts, less core mass at every eps
    for a in eps:
        masses = [r.core_mass for r in ex.rows if r.eps == a]
        assert masses == sorted(masses, reverse=True)


def test_panels_carry_the_guarantee_of_their_own_parameters(model):
    """Issue 19, finding 4: each panel model was the base model with new
    cells, so it kept the base eps, margin, threshold and guarantee (at eps
    0.12, MinPts 40 of a 0.02 release: threshold 45.7 against 57.2, and the
    relaxed clusters at 0.18 against 0.45). Now a panel is what
    ``with_params`` returns, field for field."""
    ex = E.explore(model, [0.02, 0.05, 0.12], [10, 40])
    for (a, m), got in ex.models.items():
        want = with_params(model, eps=a, min_samples=m)
        assert got.grid.eps == pytest.approx(a) and got.spec.min_samples == m
        assert got.spans.threshold == pytest.approx(want.spans.threshold)
        assert got.spans.noise_margin == pytest.approx(want.spans.noise_margin)
        assert guarantee(got) == guarantee(want)
        assert describe(got) == describe(want)
        assert summary(got) == summary(want)
        np.testing.assert_array_equal(got.predict(_grid_points(model)), want.predict(_grid_points(model)))
    # the figure's common view: the box of every panel's span regions (what
    # the panels draw: core and border cells), padded by 5%
    regions = [with_params(model, eps=a, min_samples=m).regions()[0] for a, m in ex.models]
    c = model.grid.decode(np.concatenate(regions))
    g = model.grid
    lo, hi = g.lower + c.min(0) * g.width, g.lower + (c.max(0) + 1) * g.width
    pad = 0.05 * (hi - lo).max()
    view = E._common_view(ex, model)
    np.testing.assert_allclose(view[0], np.maximum(lo - pad, g.lower))
    np.testing.assert_allclose(view[1], np.minimum(hi + pad, g.upper))


def _grid_points(model, n=60):
    t = (np.arange(n) + 0.5) / n
    return np.stack(np.meshgrid(t, t), axis=-1).reshape(-1, 2)


def test_default_grid_stays_at_or_above_the_release(model):
    eps, ms = E.default_grid(model)
    assert min(eps) == pytest.approx(0.02) and len(eps) == 5 and max(eps) == pytest.approx(0.08)
    assert ms == [5, 10, 20, 40, 80]
    coarse = with_params(model, eps=0.08)
    eps2, _ = E.default_grid(coarse)
    assert eps2[0] == pytest.approx(0.04) and eps2[2] == pytest.approx(0.08)


def test_help_says_what_the_default_grid_is(model, tmp_path, capsys):
    """Issue 23: the help described eps x sqrt(2)^i, i = -2..2 around the
    model's eps, but explore ran 50 m to 200 m on a 50 m release. The help
    now gives the rule and the values a model at its finest eps gets; check
    both against what explore does."""
    assert model.grid.eps == pytest.approx(finest_eps(model))  # a fit at the default eta
    assert main(["explore", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "sqrt(2)^i for i = -2..2, moved up by factors of sqrt(2)" in text
    assert "eps x 1, 1.41, 2, 2.83, 4" in text and "MinPts x 2^j for j = -2..2" in text
    path = tmp_path / "m.spans.json"
    save_model(model, path)
    assert main(["explore", str(path), "--no-png"]) == 0
    printed = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()[:1].isdigit()]
    eps = sorted({float(r[0]) for r in printed})
    assert eps == pytest.approx([0.02 * f for f in (1, 1.41, 2, 2.83, 4)], rel=4e-3)
    assert sorted({int(r[1]) for r in printed}) == [20 // 4, 20 // 2, 20, 40, 80]


def _p(keys, labels, mass=None):
    keys = np.asarray(keys)
    return Partition(
        1.0,
        5,
        keys,
        np.asarray(labels),
        np.ones(keys.size) if mass is None else np.asarray(mass, dtype=float),
        0.0,
    )


def test_agreement():
    a = _p([1, 2, 3, 4], [0, 0, 1, 1])
    assert agreement(a, a) == pytest.approx(1.0)
    assert agreement(a, _p([1, 2, 3, 4], [1, 1, 0, 0])) == pytest.approx(1.0)  # ids do not matter
    assert agreement(a, _p([1, 2, 3], [0, 0, 1])) == pytest.approx(1.0)  # a span shrank
    merged = _p([1, 2, 3, 4], [0, 0, 0, 0])
    assert agreement(a, merged) == pytest.approx(0.0)
    split = _p([1, 2, 3, 4], [0, 1, 2, 2])
    assert 0 < agreement(a, split) < 1
    assert agreement(a, _p([], [])) == 0.0 and agreement(_p([], []), _p([], [])) == 1.0


def test_table_and_figure_files(model, tmp_path):
    ex = E.explore(model, [0.02, 0.04], [10, 20, 40])
    E.write_table(ex, tmp_path / "t.csv")
    rows = list(csv.reader((tmp_path / "t.csv").read_text().splitlines()))
    assert tuple(rows[0]) == E.FILE_COLUMNS and len(rows) == 1 + 6
    fig = E.figure(ex, model)
    assert len(fig.axes) == 6
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("eps=0.02, MinPts=10") and "span(s)" in titles[0]
    assert f"{ex.rows[0].spans} span(s)" in titles[0]
    E.save_figure(fig, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:8] == PNG


def test_cli_explore(model, tmp_path, capsys):
    path = tmp_path / "m.spans.json"
    save_model(model, path)
    rc = main(["explore", str(path), "--eps", "0.02", "0.03", "--min-samples", "10", "40"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    png, table = tmp_path / "m.spans.explore.png", tmp_path / "m.spans.explore.csv"
    assert png.read_bytes()[:8] == PNG
    rows = list(csv.reader(table.read_text().splitlines()))
    assert tuple(rows[0]) == E.FILE_COLUMNS and len(rows) == 5
    printed = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [(float(r[0]), int(r[1])) for r in printed] == [(0.02, 10), (0.02, 40), (0.03, 10), (0.03, 40)]
    assert "costs no budget" in out
    # the spans count printed is the one of with_params
    assert int(printed[1][3]) == with_params(model, eps=0.02, min_samples=40).n_spans


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--eps", "0.01"], "finer than this release"),
        (["--eps", "20"], "too large"),
        (["--min-samples", "0"], "--min-samples 0"),
    ],
)
def test_cli_explore_refuses(model, tmp_path, capsys, argv, match):
    path = tmp_path / "m.spans.json"
    save_model(model, path)
    rc = main(["explore", str(path), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and match in err, err


def test_cli_explore_3d_table_only(tmp_path, capsys):
    m = _model(1, d=3)
    path = tmp_path / "m3.spans.json"
    save_model(m, path)
    assert main(["explore", str(path)]) == 2
    assert "--no-png" in capsys.readouterr().err
    assert main(["explore", str(path), "--no-png", "--eps", "0.02", "--min-samples", "20"]) == 0
    assert (tmp_path / "m3.spans.explore.csv").exists()


# --------------------------------------------------------------------------- #
# a person-level release (issue 20, item 7)


@pytest.fixture(scope="module")
def person_model():
    """Three blobs of 300 units x 10 points each, every unit bounded to 4
    cells and 2 points per cell, Gaussian noise."""
    rng = np.random.default_rng(3)
    centres = [[0.3, 0.3], [0.7, 0.6], [0.35, 0.75]]
    X = np.vstack([rng.normal(c, 0.04, (3000, 2)) for c in centres]).clip(0, 1)
    units = np.repeat(np.arange(900), 10)
    est = DPDBSCAN(
        eps=0.04,
        min_samples=20,
        bounds=(0, 1),
        random_state=3,
        delta=1e-6,
        max_cells_per_unit=4,
        max_points_per_cell=2,
    )
    with pytest.warns(Warning):  # seeded noise
        return est.fit(X, units=units).spans_


def test_a_person_level_release_explores_as_with_params(person_model, tmp_path, capsys):
    m = person_model
    assert m.release.units is not None and m.release.noise == "gaussian" and m.n_spans >= 1
    eps, ms = [0.04, 0.06, 0.1], [10, 40, 160]
    ex = E.explore(m, eps, ms)
    assert sum(r.spans for r in ex.rows) > 0
    for r in ex.rows:
        want = with_params(m, eps=r.eps, min_samples=r.min_samples)
        got = ex.models[(r.eps, r.min_samples)]
        np.testing.assert_array_equal(got.grid.decode(got.core_keys), want.grid.decode(want.core_keys))
        np.testing.assert_array_equal(got.labels, want.labels)
        assert r.threshold == pytest.approx(want.spans.threshold)
        assert got.release.units == m.release.units and got.release.rho == m.release.rho
        assert guarantee(got) == guarantee(want) and summary(got) == summary(want)
        # every panel's guarantee says whom it protects and what the clusters are of
        statement = guarantee(got)["statement"]
        assert "person-level" in statement and "at most 4 cells per unit" in statement
        assert "2 points per cell" in statement
    # the figure and the command line say so too, and the table is the same
    fig = E.figure(ex, m)
    assert any("person-level" in t.get_text() for t in fig.texts)  # the suptitle
    E.save_figure(fig, tmp_path / "p.png")
    path = tmp_path / "p.spans.json"
    save_model(m, path)
    assert main(["explore", str(path), "--eps", "0.04", "0.1", "--min-samples", "10", "40"]) == 0
    out = capsys.readouterr().out
    want = "person-level: each unit is protected (k=4 cells and m=2 points per cell per unit); epsilon=1"
    assert f"{want}, delta=1e-06" in out
    printed = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[3]) for r in printed] == [
        with_params(m, eps=a, min_samples=k).n_spans for a in (0.04, 0.1) for k in (10, 40)
    ]


def test_an_event_level_guarantee_says_nothing_of_units(model):
    assert "person-level" not in guarantee(model)["statement"]


def test_explore_says_when_no_grid_point_has_a_span(model, tmp_path, capsys):
    """A release where nothing reaches a threshold (here MinPts far above
    every count; likewise a release of zero events) is said in words below
    the table, from the release alone; one with spans says nothing of it."""
    path = tmp_path / "m.spans.json"
    save_model(model, path)
    rc = main(["explore", str(path), "--eps", "0.02", "--min-samples", "100000", "200000", "--no-png"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "no span at any of these (eps, MinPts)" in out
    rc = main(["explore", str(path), "--eps", "0.02", "--min-samples", "10", "100000", "--no-png"])
    out, err = capsys.readouterr()
    assert rc == 0 and "no span at any" not in out, err
