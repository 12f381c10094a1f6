"""Forecast before spending (issue 13): the numbers a fit will report, from
public inputs only, and the warnings about slow or useless fits."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cli import main
from dpdbscan.exceptions import UtilityWarning


def _clusters(d, n, seed=0, spread=0.03):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, (3, d))
    return np.clip(np.vstack([c + spread * rng.standard_normal((n // 3, d)) for c in centres]), 0, 1)


SETUPS = [
    dict(eps=0.03, min_samples=20),
    dict(eps=0.03, min_samples=5, epsilon=0.5),
    dict(eps=0.02, min_samples=20, histogram="sparse"),
    dict(eps=0.1, min_samples=10, core="bound"),
    dict(eps=0.12, min_samples=8, subcells=1),
]


@pytest.mark.parametrize("kw", SETUPS, ids=[str(s) for s in SETUPS])
@pytest.mark.filterwarnings("ignore")
def test_forecast_numbers_equal_what_a_fit_reports(kw):
    d = 3 if kw.get("eps") == 0.12 else 2
    est = DPDBSCAN(**{"bounds": (np.zeros(d), np.ones(d)), "random_state": 0, **kw})
    fc = est.forecast(n_expected=3000)
    model = est.fit(_clusters(d, 3000)).spans_
    assert fc.noise_margin == pytest.approx(model.spans.noise_margin, rel=1e-12)
    assert fc.threshold == pytest.approx(model.spans.threshold, rel=1e-12)
    assert (fc.n_cells, fc.kappa, fc.kappa_q, fc.histogram, fc.subcells, fc.d) == (
        model.release.grid.n_cells,
        model.release.grid.kappa,
        model.spans.kappa_q,
        model.release.histogram,
        model.spec.subcells,
        d,
    )
    if fc.histogram != "dense":
        assert fc.theta == model.release.theta
    assert fc.eps == model.grid.eps and fc.min_samples == model.spec.min_samples


def test_the_utility_warning_quotes_the_forecast():
    # 300 points at epsilon 0.5: the margin dominates and the fit says so
    est = DPDBSCAN(eps=0.05, min_samples=5, epsilon=0.5, bounds=(0, 1), random_state=1)
    X = _clusters(2, 300, spread=0.08)
    fc = est.forecast(n_expected=300, n_features=2)
    with pytest.warns(UtilityWarning) as rec:
        est.fit(X)
    texts = [str(w.message) for w in rec if issubclass(w.category, UtilityWarning)]
    note = next(t for t in texts if "noise margin" in t)
    assert f"holds about {fc.threshold:.0f} points" in note
    assert f"noise margin {fc.margin:.1f}" in note
    assert f"standard deviation {fc.noise_std:.1f}" in note
    assert "dpdbscan forecast" in note


def test_forecast_needs_bounds_and_reads_no_data():
    with pytest.raises(ValueError, match="bounds"):
        DPDBSCAN(eps=0.1, min_samples=5).forecast()
    with pytest.raises(ValueError, match="n_expected"):
        DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1)).forecast(n_expected=-3)


def test_the_sentence_covers_the_cases():
    est = DPDBSCAN(eps=0.05, min_samples=20, bounds=([0, 0], [1, 1]))
    assert "Give the number of points" in est.forecast().sentence()
    assert "not detectable" in est.forecast(n_expected=10).sentence()
    # 10^7 points: average density alone reaches the threshold
    assert "any region as dense as the average" in est.forecast(n_expected=1e7).sentence()
    s = est.forecast(n_expected=2_000).sentence()
    m = re.search(r"at least ([0-9.e+]+) times that average", s)
    assert m and float(m.group(1)) > 1 and "covers at most" in s
    fc = est.forecast(n_expected=20_000)
    ball = np.pi * 0.05**2
    assert fc.expected_count == pytest.approx(20_000 * ball)
    assert fc.density_factor == pytest.approx(fc.threshold / fc.expected_count)


def test_a_hopeless_fit_is_called_useless():
    # the threshold (23 points within eps) is more than the 20 points expected in all
    fc = DPDBSCAN(eps=0.01, min_samples=20, bounds=(0, 1)).forecast(n_expected=20, n_features=2)
    assert fc.useless and "likely find nothing" in fc.useless[0]
    # 60 points: a cluster needs 1,200 times the average density; concentrated
    # clusters are found (Gaussian blobs in 6-D to 8-D at ARI 1.0: benchmarks/survey_useful.py)
    fc = DPDBSCAN(eps=0.01, min_samples=20, bounds=(0, 1)).forecast(n_expected=60, n_features=2)
    assert fc.useless and "only very concentrated clusters" in fc.useless[0]


class _Refuses:
    """A backend that fails if asked to count: whatever was said before the
    counting started is what the user sees before anything is spent."""

    def count(self, grid, X):
        raise RuntimeError("counted")


def test_slow_fits_warn_before_counting():
    # d = 6 at eta = 4: 28,197 cells within reach of a cell, a sparse universe.
    # The sums walk the pairs of released cells within reach (issue 30), so
    # the ball's size alone is no longer a reason to warn ...
    fc = DPDBSCAN(eps=0.02, min_samples=5, bounds=(0, 1)).forecast(n_features=6)
    assert fc.histogram == "sparse" and fc.terms_per_cell == 28_197 and not fc.slow
    # ... the 8-D points are 0.2 s of core test, not hours (on the
    # eta-4 cells, theta given; by default the coarse release's cells)
    fc = DPDBSCAN(eps=0.06, min_samples=20, bounds=(0, 1), theta=18).forecast(
        n_expected=100_000, n_features=8
    )
    assert fc.terms_per_cell == 1_278_129 and not fc.slow and fc.seconds < 1.0
    fc = DPDBSCAN(eps=0.06, min_samples=20, bounds=(0, 1)).forecast(n_expected=100_000, n_features=8)
    assert fc.terms_per_cell == 41_553 and not fc.slow and fc.seconds < 1.0
    # a billion expected points are a billion released cells to walk
    fc = DPDBSCAN(eps=0.02, min_samples=5, bounds=(0, 1)).forecast(n_expected=1e9, n_features=6)
    assert fc.slow and "released cells" in fc.slow[0] and "1,000," in fc.slow[0]
    # a dense release draws and sums every cell: 20M cells in 4-D are seconds
    # (1.6 s measured), not the 4 minutes that a sum over every offset gave
    fc = DPDBSCAN(eps=0.03, min_samples=20, bounds=(0, 1), histogram="dense").forecast(n_features=4)
    assert fc.n_cells == 20_151_121 and not fc.slow and fc.seconds < 10
    # 17.6G cells in 5-D are not: the fit says so before it counts
    est = DPDBSCAN(eps=0.02, min_samples=5, bounds=(0, 1), histogram="dense", backend=_Refuses())
    fc = est.forecast(n_features=5)
    assert fc.slow and "17,623,416,832 cells" in fc.slow[0]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="counted"):
            est.fit(np.random.default_rng(0).random((100, 5)))
    slow = [w for w in rec if issubclass(w.category, UtilityWarning) and "dense" in str(w.message)]
    assert slow, [str(w.message) for w in rec]
    # 2-D defaults say nothing of the kind
    assert not DPDBSCAN(eps=0.02, min_samples=5, bounds=(0, 1)).forecast(n_features=2).slow


def test_auto_forecast_is_the_base_release():
    from dpdbscan.plan import autoplan as auto

    box = ([0, 0], [3, 4])
    est = DPDBSCAN("auto", min_samples="auto", bounds=box)
    fc = est.forecast(n_expected=2_000)
    assert fc.eps == auto.base_eps(*map(np.asarray, box), 4.0, auto.base_cells(1.0, 2_000, 2**20))
    assert fc.min_samples == 5
    # without a guess: the assumed size
    assert est.forecast().eps == auto.base_eps(*map(np.asarray, box), 4.0, auto.base_cells(1.0, None, 2**20))


def test_cli_forecast(capsys):
    rc = main(
        [
            "forecast",
            "--geo",
            "--bounds",
            "-122.48",
            "37.72",
            "-122.38",
            "37.82",
            "--eps",
            "50m",
            "--min-samples",
            "1000",
            "--n-expected",
            "4e5",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "eps=50 m" in out and "threshold" in out and "detectable" in out
    rc = main(
        [
            "forecast",
            "--bounds",
            "0",
            "1",
            "--dims",
            "2",
            "--eps",
            "0.05",
            "--min-samples",
            "20",
            "--n-expected",
            "20000",
            "--json",
        ]
    )
    out, _ = capsys.readouterr()
    got = json.loads(out)
    want = DPDBSCAN(eps=0.05, min_samples=20, bounds=(0, 1)).forecast(20_000, n_features=2)
    assert got["threshold"] == pytest.approx(want.threshold)
    assert got["noise_std"] == pytest.approx(want.noise_std)
    assert got["sentence"] == want.sentence()


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--bounds", "0", "1", "--eps", "0.1", "--min-samples", "5"], "--dims"),
        (["--bounds", "0", "0", "1", "1", "--eps", "0", "--min-samples", "5"], "--eps 0"),
        (
            ["--bounds", "0", "0", "1", "1", "--eps", "0.1", "--min-samples", "5", "--n-expected", "-1"],
            "--n-expected",
        ),
    ],
)
def test_cli_forecast_refuses_bad_input(capsys, argv, match):
    rc = main(["forecast", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and match in err, err


def test_fit_cost_follows_the_benchmarks_lines():
    from dpdbscan.plan.outlook import fit_cost

    # 2-D, dense: 45 ns and 16 B per point, plus 0.18 s and 120 MB per 4.4M cells
    fc = DPDBSCAN(eps=0.05, min_samples=20, bounds=(0, 1)).forecast(1e6, n_features=2)
    assert fc.histogram == "dense" and fc.terms_per_cell == 21
    cost = fit_cost(fc, 1e6)
    assert cost.seconds == pytest.approx(0.045 + 0.18 * fc.n_cells / 4.4e6)
    assert cost.extra_bytes == pytest.approx(16e6 + 120e6 * fc.n_cells / 4.4e6)
    assert cost.input_bytes == 16e6
    assert "estimate" in cost.line() and "MB" in cost.line()
    # sparse: 65 ns and 26 B per point after 0.09 s; a 4-D neighbourhood adds its core test
    fc4 = DPDBSCAN(eps=0.05, min_samples=20, bounds=(0, 1), histogram="sparse").forecast(1e5, n_features=4)
    assert fc4.terms_per_cell > 21 and fc4.seconds
    assert fit_cost(fc4, 1e5).seconds == pytest.approx(0.09 + 65e-9 * 1e5 + fc4.seconds)
    # its sums walk pairs of released cells: no memory per offset of the ball (issue 30)
    assert fit_cost(fc4, 1e5).extra_bytes == pytest.approx(26 * 1e5)


def test_durations_and_sizes_read_without_exponents():
    """check's `reading took 1.3e+02 s` and `1.4e+02 kB` (a 134 s read of a GPX
    folder on a loaded machine) read as 130 s and 140 kB."""
    from dpdbscan.plan.outlook import _size, duration_text, two_digits

    assert [two_digits(v) for v in (0.041, 1.34, 13.4, 134.0, 99.6)] == ["0.041", "1.3", "13", "130", "100"]
    times = [duration_text(s) for s in (0.041, 134.0, 6000.0, 20000.0)]
    assert times == ["0.041 s", "2.2 min", "100 min", "5.6 h"]
    assert _size(1.4e5) == "140 kB" and _size(2.9e7) == "29 MB" and _size(512) == "512 B"
    from dpdbscan.plan.outlook import FitCost

    line = FitCost(seconds=134.0, input_bytes=1.4e5, extra_bytes=1.4e6).line()
    assert "about 2.2 min and 1.5 MB of memory (the points 140 kB, the fit 1.4 MB more)" in line


@pytest.mark.parametrize(
    "extra,level,unit,words",
    [
        ([], "event", None, "event-level: each row would be protected, not each person; epsilon=1, delta=0"),
        (
            ["--unit", "cab", "--max-cells-per-unit", "4", "--delta", "1e-6"],
            "person",
            "cab",
            "person-level: each cab would be protected (k=4 cells and m=1 point per cell per cab); "
            "epsilon=1, delta=1e-06 (rho=",
        ),
        (
            ["--unit", "cab", "--max-cells-per-unit", "4", "--delta", "1e-6", "--time", "t", "--per", "day",
             "--from", "2024-03-01", "--to", "2024-03-08"],
            "person",
            "cab",
            "person-level: (epsilon=1, delta=1e-06)-differential privacy for each cab over the whole series",
        ),
    ],
)  # fmt: skip
def test_forecast_json_says_who_the_release_would_protect(capsys, extra, level, unit, words):
    """``forecast --json`` says the level, the unit column and who would be
    protected at what k, m, epsilon, delta and rho, as the published files
    do (it said epsilon alone, and the units' numbers without a level)."""
    rc = main(
        [
            "forecast",
            "--bounds",
            "0",
            "0",
            "10",
            "10",
            "--eps",
            "0.5",
            "--min-samples",
            "20",
            *extra,
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    got = json.loads(out)
    assert got["privacy_level"] == level and got["unit_column"] == unit
    assert got["protects"].startswith(words) and got["protects"].endswith("nothing is read or released)")
