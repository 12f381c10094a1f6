"""experiments/scenes.py and experiments/scene_bench.py: the generator is a
function of the seed, its scenes are labelled and boxed as documented, and
the benchmark's pieces (DBSCAN from one neighbour graph, the summary) work
on tiny inputs. The numbers themselves are in docs/parameters.md."""

from __future__ import annotations

import numpy as np
import pytest

from experiments import levels_eval, scene_bench, scenes

SEEDS = (10_000, 10_001, 10_002, 20_003, 7)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_scene_is_a_function_of_its_seed(seed):
    a, b = scenes.scene(seed), scenes.scene(seed)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.lower, b.lower)
    assert a.describe() == b.describe() and a.tags == b.tags


def test_different_seeds_give_different_scenes():
    a, b = scenes.scene(1), scenes.scene(2)
    assert a.X.shape != b.X.shape or not np.array_equal(a.X, b.X)


@pytest.mark.parametrize("seed", SEEDS)
def test_scene_labels_shapes_and_box(seed):
    sc = scenes.scene(seed)
    assert sc.d in (2, 3) and sc.X.shape == (sc.n, sc.d) and sc.y.shape == (sc.n,)
    assert scenes.N_MIN * 0.99 <= sc.n <= scenes.N_MAX * 1.01
    assert np.all(np.isfinite(sc.X))
    # labels 0..k-1 all present, noise -1
    assert set(np.unique(sc.y[sc.y >= 0]).tolist()) == set(range(sc.k))
    assert scenes.K_MIN <= sc.k <= scenes.K_MAX
    assert np.all(np.bincount(sc.y[sc.y >= 0]) >= scenes.MIN_CLUSTER_POINTS)
    # every point in the frame, the frame in the public box, padding as stated
    lo, hi = sc.frame
    assert np.all(sc.X >= lo) and np.all(sc.X <= hi)
    assert np.all(sc.lower <= lo) and np.all(hi <= sc.upper)
    np.testing.assert_allclose((sc.upper - sc.lower) / (hi - lo), 1 + sc.padding, rtol=1e-9)
    assert 0 <= sc.padding <= scenes.MAX_PADDING
    # background noise is a share of n; bridges add a little more noise
    assert (sc.y == -1).mean() >= round(sc.noise * sc.n) / sc.n - 1e-12
    assert (sc.y == -1).mean() <= sc.noise + 0.015 * 3 + 1e-9
    assert f"{sc.d}d" in sc.tags and len(sc.components) >= 1


def test_the_splits_are_disjoint_and_fixed():
    assert not set(scene_bench.TUNE_SEEDS) & set(scene_bench.HELDOUT_SEEDS)
    assert scene_bench.TUNE_SEEDS[0] == 10_000 and scene_bench.HELDOUT_SEEDS[0] == 20_000
    seeds = [set(s) for s in scene_bench.SPLITS.values()]
    assert sum(len(s) for s in seeds) == len(set().union(*seeds))
    assert scene_bench.CLOSE_TUNE_SEEDS[0] == 30_000 and scene_bench.CLOSE_HELDOUT_SEEDS[0] == 40_000


def test_a_dimension_filter_keeps_the_scenes_of_that_dimension():
    # the first draw of a scene's stream, without drawing the rest
    three = scene_bench.split_seeds("close-tune", 20, dims=3)
    assert three == [30_000, 30_017, 30_018]
    assert scene_bench.split_seeds("tune", 3, dims=3) == [10_001, 10_002]
    for seed in (30_000, 30_001):
        assert scenes.dimension(seed, close=True) == scene_bench.scene_of(seed).d
    assert scenes.dimension(10_000) == scenes.scene(10_000).d == 2


@pytest.mark.parametrize("seed", (30_001, 30_010, 30_015, 30_018))
def test_close_scenes_put_thin_shapes_next_to_each_other(seed):
    sc = scene_bench.scene_of(seed)
    again = scenes.close_scene(seed)
    np.testing.assert_array_equal(sc.X, again.X)
    assert scenes.CLOSE_N[0] * 0.99 <= sc.n <= scenes.CLOSE_N[1] * 1.01
    assert set(np.unique(sc.y[sc.y >= 0]).tolist()) == set(range(sc.k))
    assert sc.tags & {"spirals", "strands", "spiral", "curve"}


@pytest.mark.parametrize("seed", (50_000, 50_005, 60_000))
def test_small_scenes_are_small_2d_sets_of_thin_shapes(seed):
    sc = scene_bench.scene_of(seed)
    np.testing.assert_array_equal(sc.X, scenes.small_scene(seed).X)
    assert sc.d == 2 and scenes.SMALL_N[0] * 0.99 <= sc.n <= scenes.SMALL_N[1] * 1.01
    assert scenes.SMALL_K[0] <= sc.k <= scenes.SMALL_K[1]
    assert set(np.unique(sc.y[sc.y >= 0]).tolist()) == set(range(sc.k))
    assert sc.tags & {"spirals", "strands", "spiral", "curve", "arc"}
    assert scene_bench.split_seeds("small-tune", 3, dims=2) == [50_000, 50_001, 50_002]
    assert scene_bench.split_seeds("small-tune", 3, dims=3) == []


def test_thin_scenes_span_both_sides_of_6000_points_in_2d_and_3d():
    seeds = list(scene_bench.THIN_TUNE_SEEDS[:12])
    drawn = [scene_bench.scene_of(s) for s in seeds]
    for seed, sc in zip(seeds, drawn):
        np.testing.assert_array_equal(sc.X, scenes.thin_scene(seed).X)
        assert scenes.THIN_N[0] * 0.99 <= sc.n <= scenes.THIN_N[1] * 1.01
        assert scenes.SMALL_K[0] <= sc.k <= scenes.SMALL_K[1]
        assert set(np.unique(sc.y[sc.y >= 0]).tolist()) == set(range(sc.k))
        assert sc.tags & {"spirals", "strands", "spiral", "curve", "arc"}
    # both dimensions and both sides of the automatic mode's 6,000 points
    assert {(sc.d, sc.n < 6_000) for sc in drawn} == {(2, True), (2, False), (3, True), (3, False)}
    three = scene_bench.split_seeds("thin-tune", 12, dims=3)
    assert three == [s for s, sc in zip(seeds, drawn) if sc.d == 3]
    # the other families' streams are untouched by the new argument
    assert scenes.close_scene(30_000).d == scenes.dimension(30_000, close=True)


def test_interleaved_spirals_and_strands_are_separate_thin_clusters():
    rng = np.random.default_rng(0)
    arms = scenes.spirals(rng, [2000, 2000, 2000], 1.0, 2, 2.0, 0.3)
    # arms 0.8 / (2 turns x 3 arms) apart, cross-section within 0.3 of that gap
    gap = 0.8 / 6
    from scipy.spatial import cKDTree

    for i in range(3):
        d, _ = cKDTree(arms[(i + 1) % 3]).query(arms[i])
        assert d.min() > gap * (1 - 2 * 0.3) * 0.5
    lines = scenes.strands(rng, [1000, 1000], 1.0, 2, 1.5, 0.2, 0.03, 0.15)
    assert abs(np.median(lines[1][:, 1] - lines[0][:, 1]) - 0.15) < 0.02
    # the offset is vertical: where the curves slope they come closer, yet
    # no two points of different strands are within a cross-section's half-width
    d, _ = cKDTree(lines[1]).query(lines[0])
    assert d.min() > 0.03


def _two_blobs(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 0.1, (n, 2)), rng.normal(2, 0.1, (n, 2)), [[10.0, 10.0]]])
    y = np.repeat([0, 1, -1], [n, n, 1])
    return X, y


def test_dbscan_from_one_graph_equals_scikit_learn():
    from sklearn.cluster import DBSCAN

    X, _ = _two_blobs()
    for (lab, core), m in zip(scene_bench.dbscan_levels(X, 0.1, [5, 20]), [5, 20]):
        ref = DBSCAN(eps=0.1, min_samples=m).fit(X)
        want_core = np.zeros(len(X), bool)
        want_core[ref.core_sample_indices_] = True
        np.testing.assert_array_equal(core, want_core)
        # the same partition of the core points (ids may differ); noise the same
        assert scene_bench.ari(ref.labels_[core], lab[core]) == pytest.approx(1.0)
        np.testing.assert_array_equal(lab == -1, ref.labels_ == -1)


def test_labels_extend_by_nearest_core_point_within_alpha():
    S = np.array([[0.0, 0.0], [1.0, 0.0]])
    lab, core = np.array([0, 1]), np.array([True, True])
    X = np.array([[0.1, 0.0], [0.9, 0.0], [5.0, 5.0]])
    np.testing.assert_array_equal(scene_bench.extend_by_core(S, lab, core, X, 0.2), [0, 1, -1])


def test_summary_reports_means_intervals_and_pairs():
    rows = [
        {
            "seed": str(s),
            "n": "6000",
            "tags": "2d blob" if s % 2 else "3d ring",
            "auto": str(a),
            "auto_s": "1",
            "hdbscan": str(h),
            "hdbscan_s": "2",
        }
        for s, a, h in [(1, 0.9, 0.8), (2, 0.5, 0.7), (3, 1.0, 0.9), (4, 0.7, 0.7)]
    ]
    text = scene_bench.summary(rows, "tune")
    assert "4 scenes" in text
    assert "| **0.775** |" in text  # auto's mean
    assert "auto - hdbscan | -0.000 |" in text or "auto - hdbscan | +0.000 |" in text
    assert "| blob | 2 |" in text and "| ring | 2 |" in text
    mean, lo, hi = scene_bench.mean_ci([0.9, 0.5, 1.0, 0.7])
    assert lo <= mean <= hi and lo >= 0.5 and hi <= 1.0


@pytest.mark.filterwarnings("ignore")
def test_run_scene_on_a_small_scene(monkeypatch):
    # a small scene (the smallest n of the first seeds) through the cheap methods
    monkeypatch.setattr(scene_bench, "DBSCAN_SAMPLE", 3_000)
    monkeypatch.setattr(scene_bench, "HDBSCAN_SAMPLE", 2_000)
    row = scene_bench.run_scene(10_003, ("hand", "dbscan", "hdbscan"))
    assert row["n"] == scenes.scene(10_003).n
    for m in ("hand", "dbscan", "hdbscan"):
        assert -1.0 <= row[m] <= 1.0
    alpha, minpts, sample = row["hand_params"].split("/")
    assert (float(alpha), int(minpts)) in [
        (pytest.approx(a, rel=1e-4), m) for a, m in scene_bench.grid_of(scenes.scene(10_003))
    ]
    assert int(sample) <= 3_000


def test_small_2d_seeds_are_the_split_s_small_2d_scenes():
    # the close-tune split from its 81st seed: only 2-D scenes below 6,000 points, in order
    seeds = scene_bench.small_2d_seeds("close-tune", 80, 5)
    assert seeds == [30_082, 30_083, 30_084, 30_085, 30_088]
    for seed in range(30_080, seeds[-1] + 1):
        sc = scene_bench.scene_of(seed)
        assert (seed in seeds) == (sc.d == 2 and sc.n < scene_bench.SMALL_2D_N)
    # large=True: the 2-D scenes of 6,000 points or more from the split's start
    large = scene_bench.small_2d_seeds("close-tune", 0, 3, large=True)
    for seed in range(30_000, large[-1] + 1):
        sc = scene_bench.scene_of(seed)
        assert (seed in large) == (sc.d == 2 and sc.n >= scene_bench.SMALL_2D_N)
    assert len(large) == 3


def _blobs():
    # 7,000 points: the DP count is above 6,000, so near-ties of eps go to the
    # largest, the study's rule (below it they go to the one the others agree with)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal((2, 2), 0.3, (3500, 2)), rng.normal((7, 6), 0.5, (3500, 2))])
    return X, np.repeat([0, 1], 3500), (np.zeros(2), np.array([10.0, 8.0]))


def test_both_selections_come_from_one_release():
    X, y, box = _blobs()
    flat, lev = levels_eval.both(X, box, 0)
    assert flat.auto is not None and lev.auto is not None and flat.histogram is not None
    assert lev.histogram is not None
    assert flat.auto["selection"] == "flat" and lev.auto["selection"] == "levels"
    # the same seed, the same release: the selection is post-processing
    np.testing.assert_array_equal(flat.histogram.values, lev.histogram.values)
    assert flat.release.eps == lev.release.eps
    assert scene_bench.ari(y, lev.predict(X)) > 0.9  # two blobs far apart, 3,500 points each
    assert levels_eval.own_levels(lev) == "/".join(
        str(m) for m in sorted({lv["min_samples"] for lv in lev.auto["levels"]})
    )


def test_the_study_s_levels_variant_is_the_shipped_selection():
    X, y, box = _blobs()
    flat, lev = levels_eval.both(X, box, 0)
    assert lev.auto is not None
    case = levels_eval.Case("blobs", X, y, flat)
    sel = levels_eval.VARIANTS["levels"](case)
    assert sel.eps == lev.grid.eps and sel.n_spans == lev.n_spans
    assert [s.min_samples for s in sel.spans] == [lv["min_samples"] for lv in lev.auto["levels"]]
    assert case.score(sel) == pytest.approx(scene_bench.ari(case.y, lev.predict(case.X)))
    assert case.flat == pytest.approx(scene_bench.ari(case.y, flat.predict(case.X)))


@pytest.mark.filterwarnings("ignore")
def test_run_scene_fits_both_selections():
    row = scene_bench.run_scene(10_003, ("auto", "levels"))
    assert -1.0 <= row["auto"] <= 1.0 and -1.0 <= row["levels"] <= 1.0
    alpha, spans, *rest = row["levels_params"].split("/")
    assert float(alpha) > 0 and int(spans) >= 0 and row["levels_s"] > 0


def test_small_scenes_are_broken_down_where_the_gap_is():
    rows = [
        {"seed": str(s), "n": str(n), "tags": "2d strands", "levels": str(v), "levels_s": "1"}
        for s, n, v in [(1, 2_500, 0.5), (2, 5_999, 0.7), (3, 6_000, 0.9), (4, 19_000, 0.8)]
    ]
    text = scene_bench.summary(rows, "close-tune")
    assert "| n in [2,000, 6,000] | 2 | 0.600 |" in text
    assert "| n in [6,000, 20,000] | 2 | 0.850 |" in text
    big = scene_bench.summary([{**r, "n": str(int(r["n"]) * 10)} for r in rows], "tune")
    assert "| n in [20,000, 60,000] | 2 |" in big and "[2,000, 6,000]" not in big


@pytest.mark.filterwarnings("ignore")
def test_the_guess_of_n_or_the_dp_count_sizes_the_base_release():
    """A 2-D scene of 2,592 points: given as n_expected, or counted with DP
    when no guess is given, n sizes a base coarser than one for 20,000."""
    from dpdbscan import DPDBSCAN

    sc = scenes.close_scene(30_001)
    assert sc.X.shape[1] == 2 and sc.n < 6_000
    plain, guess = scene_bench.auto_model(sc), scene_bench.auto_model(sc, guess_n=True)
    big = (
        DPDBSCAN(
            "auto",
            min_samples="auto",
            epsilon=scene_bench.EPSILON,
            bounds=sc.bounds,
            random_state=sc.seed,
            n_expected=20_000.0,
        )
        .fit(sc.X)
        .spans_
    )
    assert guess.auto is not None and plain.auto is not None and big.auto is not None
    assert guess.auto["base_eps"] > 2 * big.auto["base_eps"]
    assert plain.auto["base_eps"] > 2 * big.auto["base_eps"]
    assert plain.auto["base_eps"] == pytest.approx(guess.auto["base_eps"], rel=0.1)


def test_curves_scenes_put_thinner_shapes_nearer_in_2d_and_3d():
    seeds = range(70_000, 70_012)
    drawn = [scenes.curves_scene(s) for s in seeds]
    for seed, sc in zip(seeds, drawn):
        np.testing.assert_array_equal(sc.X, scenes.curves_scene(seed).X)
        assert scenes.CURVES_N[0] * 0.99 <= sc.n <= scenes.CURVES_N[1] * 1.01
        assert scenes.SMALL_K[0] <= sc.k <= scenes.SMALL_K[1]
        assert set(np.unique(sc.y[sc.y >= 0]).tolist()) == set(range(sc.k))
        assert sc.tags & set(scenes.CURVES_FAMILIES)
        assert np.all(sc.X >= sc.lower) and np.all(sc.X <= sc.upper)
    assert {sc.d for sc in drawn} == {2, 3}
    # the other generators' streams are untouched by the new families
    assert not (scenes.thin_scene(70_000).tags & set(scenes.CURVES_FAMILIES))


def test_graded_curves_fall_in_density_along_their_length():
    rng = np.random.default_rng(1)
    a, b = scenes.graded(rng, [4_000, 4_000], 1.0, 2, 1.0, 0.2, 0.02, 0.1, 20.0)
    # the first curve is dense at its low-x end, the second at its high-x end
    for part, dense_low in ((a, True), (b, False)):
        x = part[:, 0]
        low, high = (x < np.quantile(x, 0) + 0.2 * np.ptp(x)).sum(), (x > x.max() - 0.2 * np.ptp(x)).sum()
        assert (low > 3 * high) if dense_low else (high > 3 * low)
    # parallel: at the same x the curves lie the gap apart
    mid_a, mid_b = a[np.abs(a[:, 0]) < 0.02, 1], b[np.abs(b[:, 0]) < 0.02, 1]
    assert abs(np.median(mid_b) - np.median(mid_a) - 0.1) < 0.01
