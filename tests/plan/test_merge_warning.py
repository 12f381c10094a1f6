"""Issue 30, item 3: a fit that cannot be useful says so. A dense release
that puts noise on every cell of a large eps-ball, on a box that holds few
such neighbourhoods, merges clusters through its noise: the forecast, the
estimator's fit and the CLI say so from public inputs (n_expected) before
anything is spent, or from the release's own noisy total after it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cli import main
from dpdbscan.exceptions import UtilityWarning
from dpdbscan.plan.outlook import MERGE_EXPECTED, MERGE_KAPPA, MERGE_WIDTHS

# 4-D at three times the benchmark's eps: a dense release, kappa 609, the box
# 11 eps wide (measured ARI 0.07-0.34 at 1e5 points). Asked for by hand: at a
# fixed eps "auto" releases 4-D and up sparse (plan.histogramchoice.DENSE_MAX_KAPPA)
COARSE_4D = dict(eps=0.09, min_samples=20, bounds=(0.0, 1.0), histogram="dense")


class _Refuses:
    """A backend that fails if asked to count: what was said before is what
    the user sees before anything is spent."""

    def count(self, grid, X):
        raise RuntimeError("counted")


def _merge_warnings(rec):
    return [
        str(w.message)
        for w in rec
        if issubclass(w.category, UtilityWarning) and "unlikely to be useful" in str(w.message)
    ]


def test_the_forecast_says_a_coarse_dense_release_merges():
    fc = DPDBSCAN(**COARSE_4D).forecast(1e5, n_features=4)
    assert fc.histogram == "dense" and fc.kappa >= MERGE_KAPPA
    assert fc.box_widths == pytest.approx(1 / 0.09) and fc.box_widths <= MERGE_WIDTHS
    assert fc.expected_count >= MERGE_EXPECTED
    (note,) = fc.merges
    assert note in fc.useless and f"warning: {note}" in fc.lines()
    assert "100,000 points (n_expected)" in note and "609 cells" in note
    # the smaller eps it names is one where the rule is silent
    finer = float(note.split("below about ")[1].split(")")[0])
    assert finer < COARSE_4D["eps"]
    assert not DPDBSCAN(**{**COARSE_4D, "eps": finer * 0.99}).forecast(1e5, n_features=4).merges
    # a few points: an eps-ball at the average density holds fewer than MERGE_EXPECTED
    assert not DPDBSCAN(**COARSE_4D).forecast(5e3, n_features=4).merges
    # no n: nothing to say before the fit
    assert not DPDBSCAN(**COARSE_4D).forecast(n_features=4).merges


@pytest.mark.parametrize(
    "kw,d,n",
    [
        (dict(eps=0.2, min_samples=7, epsilon=1.0, bounds=(-3, 3)), 2, 1e5),  # the README's example
        (dict(eps=0.5, min_samples=20, epsilon=0.5, bounds=(0, 10)), 3, 2e4),  # docs/parameters.md
        (dict(eps=0.002, min_samples=20, bounds=(0, 1)), 2, 1e6),  # the benchmark's points
        (dict(eps=0.03, min_samples=20, bounds=(0, 1)), 4, 1e5),
        (dict(eps=0.04, min_samples=20, bounds=(0, 1)), 5, 1e5),
    ],
)
def test_silent_where_fits_are_useful(kw, d, n):
    assert not DPDBSCAN(**kw).forecast(n, n_features=d).merges


def test_only_dense_event_level_releases_are_judged():
    assert not DPDBSCAN(**{**COARSE_4D, "histogram": "sparse"}).forecast(1e5, n_features=4).merges
    # the default at a fixed eps is the sparse release in 4-D to 8-D: nothing to say
    auto = DPDBSCAN(**{**COARSE_4D, "histogram": "auto"}).forecast(1e5, n_features=4)
    assert auto.histogram == "sparse" and not auto.merges
    person = DPDBSCAN(**{**COARSE_4D, "histogram": "auto"}, max_cells_per_unit=5, delta=1e-6).forecast(
        1e5, n_features=4, eps_ladder=[COARSE_4D["eps"]]
    )
    assert not person.merges and person.merge_note(1e5) is None


def test_the_fit_warns_before_counting_with_n_expected():
    est = DPDBSCAN(**COARSE_4D, n_expected=1e5, backend=_Refuses())
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="counted"):
            est.fit(np.random.default_rng(0).random((50, 4)))
    assert any("(n_expected)" in m for m in _merge_warnings(rec)), [str(w.message) for w in rec]


# the plumbing of the fits, in 2-D (no 4-D kernels to compile): the rule with
# its kappa floor lowered to 2-D's 21, on a unit square 10 eps wide
PLANE = dict(eps=0.1, min_samples=20, bounds=(0.0, 1.0))


def test_without_n_the_release_total_speaks_after_the_release(monkeypatch):
    from dpdbscan.plan import outlook

    monkeypatch.setattr(outlook, "MERGE_KAPPA", 21)
    # 2,000 points: an eps-ball at the average density holds about 63
    X = np.random.default_rng(1).random((2_000, 2))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        DPDBSCAN(**PLANE, random_state=0).fit(X)
    got = _merge_warnings(rec)
    assert len(got) == 1 and "(the release's noisy total)" in got[0]
    # the same fit with fewer points is silent (about 1.6 in an eps-ball)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        DPDBSCAN(**PLANE, random_state=0).fit(X[:50])
    assert not _merge_warnings(rec)
    # with n_expected, it is said before the release and not again after it
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        DPDBSCAN(**PLANE, random_state=0, n_expected=2_000).fit(X)
    got = _merge_warnings(rec)
    assert len(got) == 1 and "(n_expected)" in got[0]


def test_cli_forecast_prints_it(capsys):
    argv = ["forecast", "--bounds", "0", "1", "--dims", "4", "--eps", "0.09", "--min-samples", "20"]
    argv += ["--histogram", "dense"]
    assert main([*argv, "--n-expected", "1e5"]) == 0
    out, _ = capsys.readouterr()
    assert "warning: this fit is unlikely to be useful" in out
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    assert "unlikely to be useful" not in out


def test_cli_fit_says_it_on_standard_error(tmp_path, capsys, monkeypatch):
    from dpdbscan.plan import outlook

    monkeypatch.setattr(outlook, "MERGE_KAPPA", 21)
    X = np.random.default_rng(2).random((2_000, 2))
    path = tmp_path / "points.csv"
    np.savetxt(path, X, delimiter=",", fmt="%.6f")
    argv = ["fit", str(path), "--bounds", "0", "0", "1", "1", "--eps", "0.1", "--min-samples", "20"]
    rc = main([*argv, "--no-header", "--seed", "0", "--out-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "unlikely to be useful" in err and "noisy total" in err
    assert "unlikely to be useful" not in out
