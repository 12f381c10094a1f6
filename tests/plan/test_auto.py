"""The automatic mode (issue 13): one release at a base resolution chosen
from public inputs only, then (eps, MinPts) chosen from the release without
labels; the choice is part of the release."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.cli import main
from dpdbscan.model import describe, guarantee, load_model, save_model, summary, with_params
from dpdbscan.params import sizing
from dpdbscan.params.parameters import PARAMETERS
from dpdbscan.plan import autoplan
from dpdbscan.post import auto
from dpdbscan.post.ladder import Partition

MAX_CELLS = PARAMETERS["max_cells"].default


def base_cells(epsilon, n_expected=None, max_cells=MAX_CELLS):
    return autoplan.base_cells(epsilon, n_expected, max_cells)


def plan(lower, upper, eta, eps, min_samples, epsilon=1.0, max_cells=MAX_CELLS, n_expected=None):
    return autoplan.plan(lower, upper, eta, eps, min_samples, epsilon, max_cells, n_expected)


quiet = pytest.mark.filterwarnings("ignore")  # seeded noise, small-data notes

BOX = (np.array([0.0, 0.0]), np.array([10.0, 8.0]))


def blobs(n=2000, seed=0, centres=((2, 2), (7, 6), (2.5, 6.5)), spread=0.35):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(c, spread, (n, 2)) for c in centres])
    y = np.repeat(np.arange(len(centres)), n)
    return X, y


@quiet
def test_the_release_grid_does_not_depend_on_the_data():
    # given the user's guess of n the plan reads nothing of the data
    X1, _ = blobs(1000, 0)
    X2, _ = blobs(300, 1, centres=((8, 1), (1, 7)), spread=1.0)
    fit = dict(min_samples="auto", bounds=BOX, n_expected=20_000)
    m1 = DPDBSCAN("auto", random_state=0, **fit).fit(X1).spans_
    m2 = DPDBSCAN("auto", random_state=1, **fit).fit(X2).spans_
    g1, g2 = m1.release.grid, m2.release.grid
    assert (g1.shape, g1.width) == (g2.shape, g2.width)
    np.testing.assert_array_equal(g1.lower, g2.lower)
    want = autoplan.base_eps(*BOX, 4.0, base_cells(1.0))
    assert m1.release.eps == m2.release.eps == want
    assert m1.auto["eps_candidates"] == m2.auto["eps_candidates"]
    assert m1.auto["base_eps"] == m1.release.eps
    assert m1.release.size_estimate is None and m1.release.noise_scale == pytest.approx(1.0)


@quiet
def test_without_a_guess_a_dp_count_sizes_the_grid(tmp_path):
    # small data: the base is sized for the DP count, which spends its share of epsilon
    X, _ = blobs(1000, 0)
    m = DPDBSCAN("auto", min_samples="auto", bounds=BOX, random_state=0).fit(X).spans_
    size = m.release.size_estimate
    assert size is not None and size.share == autoplan.COUNT_SHARE and size.noise == "discrete"
    assert abs(size.value - 3000) < 2_000  # 3,000 points, noise sd ~141
    assert size.scale + m.release.noise_scale <= 1.0 == m.release.epsilon
    assert m.release.noise_scale == pytest.approx(1.0 - autoplan.COUNT_SHARE, rel=1e-5)
    sized = base_cells(1.0, n_expected=autoplan.sized_n(size.value))
    assert (
        m.release.eps == autoplan.base_eps(*BOX, 4.0, sized) > autoplan.base_eps(*BOX, 4.0, base_cells(1.0))
    )
    save_model(m, tmp_path / "m.json")
    assert load_model(tmp_path / "m.json").release == m.release
    assert "a DP count of the points" in summary(m) and "sized the grid" in summary(m)
    # at SMALL_N and above (noise sd ~141 against 7,500 points): the base for ASSUMED_N
    big, _ = blobs(2500, 1)
    m = DPDBSCAN("auto", min_samples="auto", bounds=BOX, random_state=0).fit(big).spans_
    assert m.release.size_estimate.value >= autoplan.SMALL_N
    assert m.release.eps == autoplan.base_eps(*BOX, 4.0, base_cells(1.0))
    # the summary says the count left the grid as it was
    text = summary(m)
    assert "sized the grid" not in text and "the grid is the one for 20,000 points" in text
    # Gaussian noise: the count spends its share of rho
    m = (
        DPDBSCAN("auto", min_samples="auto", bounds=BOX, random_state=0, noise="gaussian", delta=1e-6)
        .fit(X)
        .spans_
    )
    size = m.release.size_estimate
    assert size.noise == "gaussian" and size.rho == pytest.approx(autoplan.COUNT_SHARE * m.release.rho)
    assert size.scale == pytest.approx(1.0 / (2.0 * size.rho))
    save_model(m, tmp_path / "g.json")
    assert load_model(tmp_path / "g.json").release == m.release


@quiet
def test_the_count_is_made_only_where_it_sizes_the_grid():
    from dpdbscan.plan.resolve import resolve, validated

    lo3, hi3 = np.zeros(3), np.ones(3)
    cases = [
        ({"eps": "auto", "min_samples": "auto"}, BOX, True),
        ({"eps": "auto", "min_samples": "auto", "n_expected": 3000}, BOX, False),
        ({"eps": 0.5, "min_samples": "auto"}, BOX, False),
        ({"eps": 0.5, "min_samples": 10}, BOX, False),
        ({"eps": "auto", "min_samples": "auto"}, (lo3, hi3), True),  # 3-D: for large sets
        ({"eps": "auto", "min_samples": "auto", "n_expected": 3000}, (lo3, hi3), False),
    ]
    for values, box, counts in cases:
        r = resolve(validated(values), *box)
        assert (r.release.size_estimate is not None) == counts, values
        if not counts:
            assert r.release.noise.scale == pytest.approx(1.0)
    assert not autoplan.counts_points("auto", None, True, None)  # person level
    assert not autoplan.counts_points("auto", None, False, 1.0)  # geographic mode
    assert autoplan.sized_n(None) is None and autoplan.sized_n(autoplan.SMALL_N) is None
    assert autoplan.sized_n(-50.0) == 1.0 and autoplan.sized_n(2000.0) == 2000.0
    # 3-D and up: the count sizes the base above LARGE_N only (finer cells)
    assert autoplan.sized_n(2000.0, 3) is None and autoplan.sized_n(autoplan.LARGE_N, 3) is None
    assert autoplan.sized_n(60_000.0, 3) == 60_000.0 == autoplan.sized_n(60_000.0, 5)
    assert autoplan.sized_n(60_000.0, 2) is None


@quiet
def test_a_3d_count_makes_the_base_finer_for_large_sets_only():
    from dpdbscan.plan.resolve import resolve, validated

    lo3, hi3 = np.zeros(3), np.ones(3)
    auto3 = validated({"eps": "auto", "min_samples": "auto"})
    assumed = autoplan.base_eps(lo3, hi3, 4.0, base_cells(1.0))
    finer = autoplan.FINER_3D
    cases = (
        (2_000.0, base_cells(1.0), 4),
        (30_000.0, base_cells(1.0, n_expected=30_000 * finer), 5),
        # from FINER_3D_UP_TO on the finer base stays that of FINER_3D_UP_TO's ...
        (80_000.0, base_cells(1.0, n_expected=autoplan.FINER_3D_UP_TO * finer), 5),
        # ... until the count's own is finer
        (200_000.0, base_cells(1.0, n_expected=200_000), 4),
    )
    for count, cells, n_candidates in cases:
        r = resolve(auto3, lo3, hi3, size_estimate=count)
        assert r.release.grid.eps == autoplan.base_eps(lo3, hi3, 4.0, cells), count
        assert len(r.auto.eps) == n_candidates, count
        assert r.release.size_estimate.value == count
        # from a count of SMALL_SECOND_FROM release two takes its share (docs/privacy.md 4.10)
        made = count >= autoplan.SMALL_SECOND_FROM
        second = autoplan.second_share(count) if made else 0.0
        assert (r.release.second is not None) == made
        assert r.release.noise.scale == pytest.approx(1.0 - autoplan.COUNT_SHARE - second, rel=1e-5)
    assert r.release.grid.eps < assumed  # the large set's base is finer
    # up to FINER_3D_UP_TO the finer ladder ends about where the count's did
    count_base = autoplan.base_eps(lo3, hi3, 4.0, base_cells(1.0, n_expected=30_000))
    fine = resolve(auto3, lo3, hi3, size_estimate=30_000.0).auto
    assert fine.eps[-1] == pytest.approx(count_base * 2**1.5, rel=0.03)
    assert fine.base_eps == pytest.approx(count_base / 2**0.5, rel=0.03)
    # 2-D and 4-D: no finer base
    assert sizing.finer_n(30_000.0, 2) is None and sizing.finer_n(30_000.0, 4) is None
    assert sizing.finer_n(autoplan.FINER_3D_FROM - 1, 3) is None
    # a fit records the count it spent its share on
    rng = np.random.default_rng(0)
    X = rng.uniform(0.2, 0.8, (3000, 3))
    m = DPDBSCAN("auto", min_samples="auto", bounds=(lo3, hi3), random_state=0).fit(X).spans_
    size = m.release.size_estimate
    assert size is not None and abs(size.value - 3000) < 2_000 and m.release.eps == assumed
    assert "a DP count of the points" in summary(m) and "sized the grid" not in summary(m)
    assert "at most 20,000 in 3-D and up, so the grid is the one for 20,000 points" in summary(m)
    # the summary names the finer base where the count made one (the size line reads the count alone)
    from dataclasses import replace

    big = replace(m, release=replace(m.release, size_estimate=replace(size, value=30_000.0)))
    line = next(x for x in summary(big).splitlines() if x.startswith("  count   :"))
    assert f"sized the grid for {30_000 * finer:,.0f} points (the finer 3-D base)" in line


def test_an_automatic_fit_that_counts_warns_of_slowness_on_the_grid_it_uses(monkeypatch):
    # the slowness notes come from the forecast of the grid the DP count
    # sized, not of the grid for ASSUMED_N the plan stood on before the count
    import warnings
    from dataclasses import replace

    from dpdbscan import pipeline
    from dpdbscan.exceptions import UtilityWarning

    real = pipeline.forecast
    seen = []

    def forecast(release, spans, **kw):
        fc = real(release, spans, **kw)
        seen.append(release.grid.n_cells)
        return replace(fc, slow=(f"slow on {release.grid.n_cells} cells",))

    monkeypatch.setattr(pipeline, "forecast", forecast)
    X, _ = blobs(1000, 0)  # 3,000 points: the count sizes a coarser grid
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPDBSCAN("auto", min_samples="auto", bounds=BOX, random_state=0).fit(X).spans_
    slow = [
        str(w.message)
        for w in caught
        if issubclass(w.category, UtilityWarning) and "slow on" in str(w.message)
    ]
    assert m.release.grid.n_cells < base_cells(1.0) and seen[0] != m.release.grid.n_cells
    assert slow == [f"slow on {m.release.grid.n_cells} cells"]


def test_the_base_is_sized_by_public_inputs():
    from dpdbscan.cells.grid import Grid

    cells = base_cells(1.0)
    assert cells == int(autoplan.ASSUMED_N / autoplan.POINTS_PER_CELL)
    b = autoplan.base_eps(*BOX, 4.0, cells)
    assert Grid(*BOX, b).n_cells <= cells < Grid(*BOX, b / 1.02).n_cells
    # fewer expected points or less budget: coarser cells; the cap bounds it
    assert base_cells(1.0, n_expected=2000) == int(2000 / autoplan.POINTS_PER_CELL)
    assert base_cells(0.5) == cells // 2 or base_cells(0.5) == int(cells / 2)
    assert base_cells(1.0, n_expected=1e9) == MAX_CELLS
    assert base_cells(1.0, n_expected=1e9, max_cells=1 << 12) == 1 << 12
    assert base_cells(1.0, n_expected=1) == autoplan.MIN_BASE_CELLS
    small = plan(*BOX, 4.0, "auto", "auto", 1.0, n_expected=2000).base_eps
    assert small > plan(*BOX, 4.0, "auto", "auto", 1.0).base_eps


def test_the_plan_is_public():
    p = plan(*BOX, 4.0, "auto", "auto")
    assert p.base_eps == autoplan.base_eps(*BOX, 4.0, base_cells(1.0))
    assert len(p.eps) == autoplan.EPS_STEPS and p.eps[-1] == pytest.approx(8 * p.base_eps)
    assert p.min_samples is None
    # 3-D: the same number of cells, and big neighbourhoods are skipped
    lo, hi = np.zeros(3), np.ones(3)
    p3 = plan(lo, hi, 4.0, "auto", "auto", max_cells=1 << 20)
    from dpdbscan.cells.grid import Grid

    cells = base_cells(1.0)
    assert Grid(lo, hi, p3.base_eps).n_cells <= cells < Grid(lo, hi, p3.base_eps / 1.02).n_cells
    assert len(p3.eps) < autoplan.EPS_STEPS
    assert all(Grid(lo, hi, p3.base_eps).at_eps(a).kappa <= autoplan.MAX_CANDIDATE_KAPPA for a in p3.eps)
    fixed = plan(*BOX, 4.0, 0.3, "auto")
    assert fixed.eps == (0.3,) and fixed.base_eps == 0.3
    assert plan(*BOX, 4.0, "auto", 40).min_samples == 40


def test_min_samples_ladder():
    assert auto.min_samples_ladder(40) == [5, 7, 10]
    lad = auto.min_samples_ladder(1e5)
    assert lad[0] == 5 and lad[-1] <= 0.25e5 and all(b > a for a, b in zip(lad, lad[1:]))


@quiet
def test_auto_finds_separated_blobs_and_records_its_choice(tmp_path):
    X, y = blobs(1000)
    # a small public cap keeps the test quick: the base release has at most 4096 cells. The
    # flat cut: one (eps, MinPts), which with_params reproduces (the level selection,
    # each span at its own MinPts: test_levels.py)
    est = DPDBSCAN(
        "auto", min_samples="auto", bounds=BOX, random_state=3, max_cells=1 << 12, selection="flat"
    ).fit(X)
    m = est.spans_
    assert m.n_spans == 3
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(y, est.predict(X)) > 0.95
    a = m.auto
    assert a["eps"] == m.grid.eps and a["min_samples"] == m.spec.min_samples
    assert a["eps"] in a["eps_candidates"] and a["min_samples"] in a["min_samples_candidates"]
    assert a["chosen"] == ["eps", "min_samples"] and a["clusters"] >= 2 and a["selection"] == "flat"
    # the chosen spans are with_params of the one release
    again = with_params(m, eps=m.grid.eps, min_samples=m.spec.min_samples)
    np.testing.assert_array_equal(again.core_keys, m.core_keys)
    assert m.spec.border == pytest.approx(m.grid.eps)
    # part of the release: JSON, summary, describe
    save_model(m, tmp_path / "a.json")
    loaded = load_model(tmp_path / "a.json")
    assert loaded.auto == json.loads(json.dumps(a))
    assert json.loads((tmp_path / "a.json").read_text())["auto"]["min_samples"] == m.spec.min_samples
    assert "auto    : eps and min_samples chosen from the release" in summary(loaded)
    assert describe(loaded)["auto"]["eps"] == m.grid.eps


@quiet
def test_the_chosen_eps_pays_for_its_candidates(tmp_path):
    """Issue 19, finding 5: eps is chosen after seeing the noise among c
    candidates, and the accuracy event of the guarantee depends on eps, so
    the stated 1 - beta needs a union bound over the candidates. Each
    candidate's margins take beta / c (the MinPts ladder needs nothing: the
    events do not depend on MinPts); the guarantee says so and states 1 -
    beta. Before the fix the margins used beta itself and the model claimed
    0.9 for a union over 7 candidates that covers only 1 - 7 beta = 0.3."""
    X, _ = blobs(1000)
    beta = 0.1
    m = (
        DPDBSCAN("auto", min_samples="auto", bounds=BOX, beta=beta, random_state=3, max_cells=1 << 12)
        .fit(X)
        .spans_
    )
    c = len(m.auto["eps_candidates"])
    assert c == autoplan.EPS_STEPS and m.auto["chosen"] == ["eps", "min_samples"]
    g = guarantee(m)
    assert g["eps_candidates"] == c
    assert m.spec.beta * c == pytest.approx(beta)  # the union over the candidates costs beta in all
    assert g["probability"] == pytest.approx(1 - (1 - m.spans.extra["probability"]) * c)
    assert g["probability"] >= 1 - 2 * beta - 1e-12
    assert f"union over {c} eps candidates" in g["statement"]
    # the margins are those of beta / c, recomputed from the saved model
    save_model(m, tmp_path / "a.json")
    loaded = load_model(tmp_path / "a.json")
    assert guarantee(loaded) == g and loaded.spans.noise_margin == m.spans.noise_margin
    # a model saved before the fix (margins at beta itself) reports what the union covers
    from dataclasses import replace

    old = replace(
        m,
        spec=replace(m.spec, beta=beta),
        spans=replace(m.spans, extra={**m.spans.extra, "probability": 1 - beta}),
    )
    assert guarantee(old)["probability"] == pytest.approx(1 - c * beta)  # 0.3
    void = replace(
        m,
        spec=replace(m.spec, beta=beta),
        spans=replace(m.spans, extra={**m.spans.extra, "probability": 1 - 2 * beta}),
    )
    assert guarantee(void)["probability"] is None
    words = guarantee(void)["statement"]  # each place alone still holds (c times its p); all at once, none
    assert words.startswith("each place alone: ") and "; all at once, no guarantee: " in words
    assert guarantee(void)["each_place"]["probability"] == pytest.approx(
        min(1.0, c * m.spans.extra["place_probability"])
    )
    assert "no guarantee" in summary(void)
    # eps fixed (MinPts chosen): one candidate, beta as given
    fixed = DPDBSCAN(0.3, min_samples="auto", bounds=BOX, beta=beta, random_state=0).fit(X).spans_
    assert fixed.spec.beta == beta and guarantee(fixed)["eps_candidates"] == 1


@quiet
def test_partly_automatic():
    X, _ = blobs(1000)
    m = DPDBSCAN(0.3, min_samples="auto", bounds=BOX, random_state=0).fit(X).spans_
    assert m.grid.eps == 0.3 and m.release.eps == 0.3 and m.auto["chosen"] == ["min_samples"]
    m2 = DPDBSCAN("auto", min_samples=40, bounds=BOX, random_state=0, max_cells=1 << 12).fit(X).spans_
    assert m2.spec.min_samples == 40 and m2.auto["chosen"] == ["eps"]


def _part(keys, labels, mass, m, thr):
    return Partition(
        1.0,
        m,
        np.asarray(keys, dtype=np.int64),
        np.asarray(labels, dtype=np.int64),
        np.asarray(mass, float),
        thr,
    )


def test_level_scores_follow_the_cluster_tree():
    # one cluster at T=10 splits at T=20 into two that live to T=40 (log-widths ln 2)
    L0 = _part([1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0], [10] * 6, 5, 10.0)
    L1 = _part([1, 2, 5, 6], [0, 0, 1, 1], [10] * 4, 5, 20.0)
    L2 = _part([1, 5], [0, 1], [10, 10], 5, 40.0)
    L3 = _part([], [], [], 5, 80.0)
    scores, counts = auto.level_scores([L0, L1, L2, L3])
    ln2 = np.log(2)
    # the children: 20 x ln 2 (level 1) + 10 x ln 2 (level 2) each
    assert counts == [1, 2, 2, 0]
    assert scores[0] == 0  # one cluster only
    assert scores[1] == pytest.approx(2 * 30 * ln2) and scores[2] == scores[1]
    table = {(1.0, 5): L0, (1.0, 6): L1, (1.0, 7): L2, (1.0, 8): L3}
    table = {k: Partition(1.0, k[1], p.keys, p.labels, p.mass, p.threshold) for k, p in table.items()}
    got = auto.choose(table, 2)
    assert (got["min_samples"], got["clusters"]) == (6, 2)  # the plateau's lowest level
    with pytest.raises(ValueError, match="nested"):
        auto.level_scores([L1, _part([9], [0], [10], 5, 30.0)])


def _ladder(alpha, thresholds, labels, mass):
    keys = [1, 2, 3, 4, 10, 11]  # P = {1..4} (C1 = {1, 2}, C2 = {3, 4}), O = {10, 11}
    return {
        (alpha, m): Partition(alpha, m, np.asarray(keys), np.asarray(lab), np.full(6, float(mass)), t)
        for m, t, lab in zip((5, 7, 10, 14), thresholds, labels)
    }


def test_a_merged_parent_at_a_larger_alpha_does_not_hide_its_children():
    # R15's failure in small: at alpha 2 the close blobs C1, C2 are one long-lived
    # parent P beside O; at alpha 1 they are separate clusters, with a little less
    # core mass (less coverage at the smaller radius)
    one, two = [0, 0, 0, 0, 1, 1], [0, 0, 1, 1, 2, 2]
    big = _ladder(2.0, (80.0, 160.0, 320.0, 640.0), [one] * 4, 10)
    small = _ladder(1.0, (40.0, 80.0, 160.0, 320.0), [two] * 4, 8)
    got = auto.choose({**big, **small}, 2)
    assert (got["eps"], got["clusters"]) == (1.0, 3)
    # in log T alone (the former criterion) the parent wins: its life is as long
    # and it holds more mass
    best_log = max(got["scores"], key=lambda r: (r[2], r[0]))
    assert (best_log[0], best_log[3]) == (2.0, 2)
    # when the larger alpha separates them too, it places the cut (more extent)
    big = _ladder(2.0, (80.0, 160.0, 320.0, 640.0), [one] + [two] * 3, 12)
    got = auto.choose({**big, **small}, 2)
    assert (got["eps"], got["min_samples"], got["clusters"]) == (2.0, 7, 3)


def test_hdbscan_lambda_is_one_scale_for_every_alpha():
    # the same density level (T / alpha^d) has the same lambda at every alpha
    assert auto.hdbscan_lambda(40.0, 1.0, 2) == pytest.approx(auto.hdbscan_lambda(160.0, 2.0, 2))
    assert auto.hdbscan_lambda(8.0, 1.0, 3) == pytest.approx(2.0)


@quiet
def test_cli_fit_auto_and_info(tmp_path, capsys):
    X, _ = blobs(800)
    path = tmp_path / "b.csv"
    path.write_text("x,y\n" + "\n".join(f"{float(a)!r},{float(b)!r}" for a, b in X) + "\n")
    rc = main(
        [
            "fit",
            str(path),
            "--header",
            "--eps",
            "auto",
            "--min-samples",
            "auto",
            "--bounds",
            "0",
            "0",
            "10",
            "8",
            "--seed",
            "0",
            "--out-dir",
            str(tmp_path),
            "--no-png",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "auto    : eps and min_samples chosen" in out
    m = load_model(tmp_path / "b.spans.json")
    assert m.auto is not None
    # 2,400 points: the base is sized for the DP count of them
    assert abs(m.release.size_estimate.value - 2400) < 2_000
    sized = base_cells(1.0, n_expected=autoplan.sized_n(m.release.size_estimate.value))
    assert m.release.eps == autoplan.base_eps(*BOX, 4.0, sized)
    # the same release as the estimator's at the same seed: the histogram's noise
    # continues the count's stream (no noise drawn ahead from the stream's start)
    est = DPDBSCAN("auto", min_samples="auto", bounds=BOX, random_state=0).fit(X).spans_
    assert est.release.size_estimate == m.release.size_estimate
    np.testing.assert_array_equal(est.predict(X), m.predict(X))
    assert main(["info", str(tmp_path / "b.spans.json")]) == 0
    info = capsys.readouterr().out
    assert "auto : eps and min_samples chosen from the release without labels" in info
    assert f"MinPts = {m.spec.min_samples}" in info
    assert main(["info", str(tmp_path / "b.spans.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["auto"]["min_samples"] == m.spec.min_samples


def test_the_forecast_says_the_automatic_mode_counts_the_points(capsys):
    box = ["--bounds", "0", "0", "10", "8"]
    assert main(["forecast", "--eps", "auto", "--min-samples", "auto", *box]) == 0
    assert "count     : without --n-expected the fit first spends 1% of the budget" in capsys.readouterr().out
    assert main(["forecast", "--eps", "auto", "--min-samples", "auto", "--n-expected", "3000", *box]) == 0
    assert "DP count" not in capsys.readouterr().out
    box3 = ["--bounds", "0", "0", "0", "10", "8", "6"]
    assert main(["forecast", "--eps", "auto", "--min-samples", "auto", *box3]) == 0
    assert "sizes its grid for the count where it is above 20,000 (finer cells)" in capsys.readouterr().out


@quiet
def test_a_3d_count_from_6000_to_20000_takes_the_finer_base_and_joins_faces():
    # issue 28 item 3 (results/scenes/strands-subcell.md): in 3-D from a count
    # of FINER_3D_FROM to LARGE_N the base is the finer base a count of LARGE_N
    # gets, three candidates, and the spans join core sub-cells by faces
    from dpdbscan.plan.resolve import resolve, validated

    lo3, hi3 = np.zeros(3), np.ones(3)
    auto3 = validated({"eps": "auto", "min_samples": "auto"})
    finer = autoplan.base_eps(lo3, hi3, 4.0, base_cells(1.0, n_expected=autoplan.LARGE_N * autoplan.FINER_3D))
    assumed = autoplan.base_eps(lo3, hi3, 4.0, base_cells(1.0))
    for count in (float(sizing.FINER_3D_FROM), 12_000.0, float(autoplan.LARGE_N)):
        r = resolve(auto3, lo3, hi3, size_estimate=count)
        assert r.release.grid.eps == finer, count
        assert len(r.auto.eps) == 3 and r.auto.eps[-1] == pytest.approx(assumed * 2**0.5, rel=0.03)
        assert r.spans.join == "face", count
        assert sizing.finer_n(count, 3) == autoplan.LARGE_N * autoplan.FINER_3D
        assert autoplan.candidate_kappa(count, 3) == autoplan.SMALL_FINER_CANDIDATE_KAPPA
    # outside the range: as before (eps join; the base for ASSUMED_N below, the count's finer base above)
    assert resolve(auto3, lo3, hi3, size_estimate=5_999.0).spans.join == "eps"
    assert resolve(auto3, lo3, hi3, size_estimate=5_999.0).release.grid.eps == assumed
    assert resolve(auto3, lo3, hi3, size_estimate=20_001.0).spans.join == "eps"
    assert len(resolve(auto3, lo3, hi3, size_estimate=20_001.0).auto.eps) == 5
    assert (
        resolve(validated({"eps": "auto", "min_samples": "auto"}), *BOX, size_estimate=12_000.0).spans.join
        == "eps"
    )
    given = validated({"eps": "auto", "min_samples": "auto", "n_expected": 12_000})
    assert resolve(given, lo3, hi3).spans.join == "eps"  # no count made
    assert resolve(auto3, lo3, hi3).spans.join == "eps"  # before the count
    assert not autoplan.joins_faces(12_000.0, 2) and not autoplan.joins_faces(12_000.0, 4)
    assert not autoplan.joins_faces(None, 3)


@quiet
def test_a_3d_automatic_fit_below_20000_points_records_the_face_join():
    from dpdbscan.model import model_from_dict, to_json

    rng = np.random.default_rng(3)
    lo3, hi3 = np.zeros(3), np.ones(3)
    X = rng.uniform(0.3, 0.7, (12_000, 3))
    m = DPDBSCAN("auto", min_samples="auto", bounds=(lo3, hi3), random_state=1).fit(X).spans_
    assert m.spec.join == "face"
    line = next(x for x in summary(m).splitlines() if x.startswith("  count   :"))
    assert "join core sub-cells only where they share a face" in line
    back = model_from_dict(json.loads(to_json(m)))
    assert back.spec.join == "face"
    assert np.array_equal(back.predict(X), m.predict(X))
    # a model outside the range writes no join (its files as before)
    m2 = DPDBSCAN("auto", min_samples="auto", bounds=(lo3, hi3), random_state=1).fit(X[:3000]).spans_
    assert m2.spec.join == "eps" and '"join"' not in to_json(m2)
