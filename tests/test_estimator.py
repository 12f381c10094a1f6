import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from dpdbscan import DPDBSCAN, InsecureRandomnessWarning, PrivacyLeakWarning, SpanModel
from dpdbscan.model import geojson, predict_lonlat, save_model

X2 = np.random.default_rng(0).random((200, 2))


def fit(**kw):
    params = dict(eps=0.1, min_samples=5, epsilon=1.0, bounds=(0, 1), random_state=0)
    params.update(kw)
    return DPDBSCAN(**params).fit(X2)


@pytest.mark.parametrize(
    "kw,exc,match",
    [
        ({"bounds": (1, 0)}, ValueError, "lower"),
        ({"bounds": (0, 0)}, ValueError, "lower"),
        ({"bounds": ([0, 0, 0], [1, 1, 1])}, ValueError, "one value per feature"),
        ({"bounds": (0, np.inf)}, ValueError, "finite"),
        ({"bounds": (np.nan, 1)}, ValueError, "finite"),
        ({"bounds": 5}, ValueError, "pair"),
    ],
)
def test_invalid_bounds(kw, exc, match):
    # every other parameter: the one table of tests/spec/test_parameters.py
    with pytest.raises(exc, match=match):
        fit(**kw)


@pytest.mark.parametrize(
    "X,match",
    [
        (np.zeros(5), "2-D"),
        (np.zeros((2, 2, 2)), "2-D"),
        (np.array([["a", "b"], ["c", "d"]]), "numeric"),
        # a list with a row of another length drops that row, never refused:
        # tests/params/test_one_row_never_refuses.py
    ],
)
def test_bad_X(X, match):
    with pytest.raises(ValueError, match=match):
        DPDBSCAN(eps=0.1, bounds=(0, 1), random_state=0).fit(X)


def test_predict_before_fit_and_wrong_dimension():
    with pytest.raises(NotFittedError):
        DPDBSCAN(eps=0.1, bounds=(0, 1)).predict(X2)
    m = fit()
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros((3, 5)))


def test_contract_and_fitted_attributes():
    m = DPDBSCAN(eps=0.1, min_samples=5, epsilon=1.0, bounds=(0, 1), random_state=None)
    assert m.fit(X2) is m
    assert isinstance(m.spans_, SpanModel)
    lab = m.predict(X2)
    assert lab.dtype.kind == "i" and lab.shape == (200,) and lab.min() >= -1
    assert m.kappa_ == 21 and m.approx_ratio_ == 6.0 and m.beta_ == 0.1
    assert DPDBSCAN(eps=0.1, bounds=(0, 1), subcells=1).fit(X2).approx_ratio_ == 7.0
    assert m.tau_ is None  # the density test's guarantee has no tau
    b = DPDBSCAN(eps=0.1, bounds=(0, 1), core="bound").fit(X2)
    assert b.tau_ == pytest.approx(2 * b.noise_margin_)
    assert m.n_cells_ == m.spans_.release.grid.n_cells == m.histogram_.grid.n_cells
    assert m.budget_spent_ == (1.0, 0.0)
    for key in ("approx_ratio", "tau", "beta", "kappa_q", "n_cells", "epsilon", "delta"):
        assert key in m.guarantee_
    # two quantities, two names (issue 23): cells within eps of a cell, of a sub-cell
    assert "kappa" not in m.guarantee_ and m.guarantee_["kappa_q"] == 15
    assert m.n_features_in_ == 2
    assert np.array_equal(clone(m).get_params()["bounds"], (0, 1))


def test_seeded_mode_warns_and_is_reproducible():
    with pytest.warns(InsecureRandomnessWarning):
        a = DPDBSCAN(eps=0.1, bounds=(0, 1), random_state=3).fit(X2)
    with pytest.warns(InsecureRandomnessWarning):
        b = DPDBSCAN(eps=0.1, bounds=(0, 1), random_state=3).fit(X2)
    assert np.array_equal(a.histogram_.values, b.histogram_.values)


def test_secure_mode_does_not_warn_and_differs_between_runs():
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureRandomnessWarning)
        warnings.simplefilter("error", PrivacyLeakWarning)
        a = DPDBSCAN(eps=0.1, bounds=(0, 1)).fit(X2)
        b = DPDBSCAN(eps=0.1, bounds=(0, 1)).fit(X2)
    assert not np.array_equal(a.histogram_.values, b.histogram_.values)


def test_missing_bounds_warn_loudly():
    with pytest.warns(PrivacyLeakWarning, match="bounds"):
        m = DPDBSCAN(eps=0.1, random_state=None).fit(X2)
    assert np.allclose(m.spans_.grid.lower, X2.min(0))


def test_scalar_and_sequence_bounds_agree():
    a = fit(bounds=(0, 1))
    b = fit(bounds=([0, 0], [1, 1]))
    assert a.spans_.grid.shape == b.spans_.grid.shape
    assert np.array_equal(a.histogram_.values, b.histogram_.values)


def test_out_of_bounds_points_are_clipped_and_nan_rows_dropped():
    X = np.array([[0.5, 0.5]] * 60 + [[5.0, 5.0]] * 60 + [[np.nan, 0.2], [np.inf, 1.0]])
    m = DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1), random_state=0, noise="discrete").fit(X)
    g = m.histogram_.grid
    counts = m.histogram_.values
    # grid was not widened by the outliers
    assert np.allclose(g.lower, 0) and np.allclose(g.upper, 1)
    # 60 clipped points land in the top-right cell: its noisy count is near 60
    top = counts[g.shape[0] - 1, g.shape[1] - 1]
    assert abs(top - 60) < 25
    assert np.isfinite(counts).all()


def test_empty_input_and_single_point():
    m = DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1), random_state=0).fit(np.zeros((0, 2)))
    assert m.spans_.n_spans == 0
    assert m.predict(np.zeros((0, 2))).shape == (0,)
    m = DPDBSCAN(eps=0.1, min_samples=1, bounds=(0, 1), random_state=0).fit(np.array([[0.5, 0.5]]))
    assert m.predict(np.array([[0.5, 0.5]])).shape == (1,)


def test_fit_predict_equals_fit_then_predict():
    m = DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1), random_state=1)
    a = m.fit_predict(X2)
    assert np.array_equal(a, m.predict(X2))


def test_histogram_choice_uses_public_size_only():
    small = DPDBSCAN(eps=0.1, bounds=(0, 1), random_state=0).fit(X2)
    assert small.histogram_.kind == "dense"
    big = DPDBSCAN(eps=1e-4, bounds=(0, 1), random_state=0).fit(X2)
    assert big.histogram_.kind == "sparse" and big.n_cells_ > 2**23
    # the same choice and theta for a dataset of a different size
    big2 = DPDBSCAN(eps=1e-4, bounds=(0, 1), random_state=0).fit(X2[:10])
    assert big2.histogram_.kind == "sparse" and big2.theta_ == big.theta_
    stab = DPDBSCAN(eps=1e-4, bounds=(0, 1), delta=1e-6, random_state=0).fit(X2)
    assert stab.histogram_.kind == "stability" and stab.budget_spent_ == (1.0, 1e-6)
    assert math.isfinite(stab.noise_margin_)


@pytest.mark.parametrize("theta", [-1.0, float("nan"), float("inf")])
def test_theta_must_be_non_negative_and_finite(theta):
    with pytest.raises(ValueError, match="theta"):
        fit(histogram="sparse", theta=theta)


def test_theta_that_would_flood_the_release_is_refused():
    with pytest.raises(ValueError, match="empty cells"):
        DPDBSCAN(eps=1e-5, bounds=(0, 1), histogram="sparse", theta=0.0, random_state=0).fit(X2)


def test_small_data_is_not_silently_empty():
    from dpdbscan import UtilityWarning

    rng = np.random.default_rng(0)
    few = 0.5 + 0.05 * rng.standard_normal((12, 2))
    # 12 points: no span in about 4 of 5 seeds (0-59: 46 with the inversion
    # noise, 48 with the CKS noise); seed 3 gives none with both
    with pytest.warns(UtilityWarning, match="no span"):
        m = DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1), random_state=3).fit(few)
    assert m.spans_.n_spans == 0
    # two clusters, enough points: no warning (one cluster would warn "single span")
    many = np.vstack(
        [0.3 + 0.05 * rng.standard_normal((3000, 2)), 0.7 + 0.05 * rng.standard_normal((3000, 2))]
    )
    # (two spans from the two clusters in about 2 of 3 seeds, with either
    # noise; seed 1 gives one and two with both)
    with pytest.warns(UtilityWarning, match="single span"):
        DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1), random_state=1).fit(many[:3000])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        m = DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1), random_state=1).fit(many)
    assert m.spans_.n_spans == 2


def test_custom_backend_keys_are_put_in_canonical_order():
    from dpdbscan.release.backends import CellCounts, NumpyBackend

    class Shuffled:
        def count(self, grid, X):
            c = NumpyBackend().count(grid, X)
            order = np.random.default_rng(0).permutation(c.keys.size)
            return CellCounts(c.keys[order], c.counts[order])

    class Duplicated(Shuffled):
        def count(self, grid, X):
            c = NumpyBackend().count(grid, X)
            return CellCounts(np.concatenate([c.keys, c.keys[:1]]), np.concatenate([c.counts, [1]]))

    X = np.random.default_rng(1).random((500, 2))
    ref = DPDBSCAN(eps=1e-4, bounds=(0, 1), random_state=0, histogram="sparse", max_empty_cells=1000).fit(X)
    got = DPDBSCAN(
        eps=1e-4, bounds=(0, 1), random_state=0, histogram="sparse", max_empty_cells=1000, backend=Shuffled()
    ).fit(X)
    assert np.array_equal(ref.histogram_.keys, got.histogram_.keys)
    assert np.array_equal(ref.histogram_.values, got.histogram_.values)
    with pytest.raises(ValueError, match="duplicate"):
        DPDBSCAN(
            eps=1e-4,
            bounds=(0, 1),
            random_state=0,
            histogram="sparse",
            max_empty_cells=1000,
            backend=Duplicated(),
        ).fit(X)


def test_subcells_auto_depends_on_dimension_only():
    m2 = fit()
    assert m2.spans_.spec.subcells == 2 and m2.approx_ratio_ == 6.0
    X4 = np.random.default_rng(0).random((100, 4))
    m4 = DPDBSCAN(eps=0.5, bounds=(0, 1), random_state=0).fit(X4)
    assert m4.spans_.spec.subcells == 1 and m4.approx_ratio_ == 7.0
    # border "auto": eps around core sub-cell centres (density), half a sub-cell diameter (bound)
    assert m2.spans_.spec.border == pytest.approx(0.1)
    assert fit(core="bound").spans_.spec.border == pytest.approx(4 * 0.1 / 16)


def test_fit_lonlat_is_the_python_side_of_fit_geo(tmp_path):
    """Issue 15: the geo workflow in Python took six lines of projection code and
    gave a model whose info showed 'bounds (deg) None .. None'."""
    from dpdbscan import fit_lonlat
    from dpdbscan.cli import main

    rng = np.random.default_rng(0)
    hot = np.array([[-122.41, 37.79], [-122.44, 37.76]])
    lonlat = np.vstack([rng.normal(c, [0.0004, 0.0003], (2000, 2)) for c in hot])
    box = (-122.48, 37.72, -122.38, 37.82)
    m = fit_lonlat(lonlat, bounds=box, eps="50m", min_samples=20, random_state=0)
    assert m.grid.eps == pytest.approx(0.05) and m.n_spans == 2
    assert sorted(predict_lonlat(m, hot).tolist()) == [0, 1]
    assert m.metadata["bounds_degrees"] == {"lower": [-122.48, 37.72], "upper": [-122.38, 37.82]}
    ring = np.asarray(geojson(m)["features"][0]["geometry"]["coordinates"][0][0])
    assert np.all((ring[:, 0] > -122.48) & (ring[:, 0] < -122.38))  # GeoJSON in lon/lat
    save_model(m, tmp_path / "m.json")
    assert main(["info", str(tmp_path / "m.json")]) == 0
    with pytest.raises(ValueError, match="geographic model"):
        predict_lonlat(fit(core="bound").spans_, hot)
    with pytest.raises(ValueError, match="lon_min, lat_min, lon_max, lat_max"):
        fit_lonlat(lonlat, bounds=(0, 1), eps="50m")


@pytest.mark.filterwarnings("ignore::dpdbscan.InsecureRandomnessWarning")
def test_standardised_data_warn_after_an_unchanged_release():
    """Issue 19, finding 7: make_pipeline(StandardScaler(), DPDBSCAN(...,
    bounds=(-3, 3))) ran without a word, although the scaler's mean and
    standard deviation come from the private data and place every point on
    the grid. Now fit warns (PrivacyLeakWarning) when every column has mean 0
    and standard deviation 1 to within 1e-6. The warning is issued after the
    release is made and stored: even when it is turned into an error, the
    release is the one made without it."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal([10, 200], [1, 30], (300, 2)), rng.normal([14, 260], [1, 30], (300, 2))])
    pipe = make_pipeline(StandardScaler(), DPDBSCAN(0.3, min_samples=5, bounds=(-3, 3), random_state=0))
    with pytest.warns(Warning) as rec:  # the release may add a UtilityWarning
        pipe.fit(X)
    leaks = [w for w in rec if w.category is PrivacyLeakWarning]
    assert len(leaks) == 1 and "mean 0 and standard deviation 1" in str(leaks[0].message)
    assert "StandardScaler" in str(leaks[0].message)
    Z = StandardScaler().fit_transform(X)
    strict = DPDBSCAN(0.3, min_samples=5, bounds=(-3, 3), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(PrivacyLeakWarning):
            strict.fit(Z)
    np.testing.assert_array_equal(strict.spans_.core_keys, pipe[-1].spans_.core_keys)
    np.testing.assert_array_equal(strict.spans_.histogram.values, pipe[-1].spans_.histogram.values)
    # raw data in their own units with public bounds: no word (any warning fails here)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPDBSCAN(3.0, min_samples=5, bounds=([0, 0], [30, 400]), random_state=0).fit(X)


def test_feature_names_follow_scikit_learn():
    """Issue 23: feature_names_in_ after a DataFrame fit (scikit-learn's
    convention), dropped by a later fit on an array; predict wants the same
    names in the same order and warns when only one side has names."""
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).random((300, 2))
    df = pd.DataFrame(X, columns=["lon", "lat"])
    m = DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1)).fit(df)
    assert m.feature_names_in_.tolist() == ["lon", "lat"] and m.feature_names_in_.dtype == object
    assert np.array_equal(m.predict(df), m.spans_.predict(X))
    with pytest.raises(ValueError, match="same order as they were in fit"):
        m.predict(df[["lat", "lon"]])
    with pytest.raises(ValueError, match="unseen at fit time:\n- x\n"):
        m.predict(df.rename(columns={"lon": "x"}))
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        m.predict(X)
    m.fit(X)
    assert not hasattr(m, "feature_names_in_")
    with pytest.warns(UserWarning, match="X has feature names, but DPDBSCAN was fitted without"):
        m.predict(df)
    # integer column names are not feature names (scikit-learn's rule)
    assert not hasattr(
        DPDBSCAN(eps=0.1, min_samples=5, bounds=(0, 1)).fit(pd.DataFrame(X)), "feature_names_in_"
    )


def test_predict_warns_when_no_point_is_inside_the_box():
    """Issue 23: predict returned all noise silently for points in the wrong
    order; now a PrivateNoteWarning (about the points, for their owner)."""
    from dpdbscan import PrivateNoteWarning, UtilityWarning

    X = np.random.default_rng(0).random((300, 2))
    m = DPDBSCAN(eps=0.1, min_samples=5, bounds=([0, 0], [1, 2])).fit(X)
    with pytest.warns(PrivateNoteWarning, match="no point of the 2 given lies inside the model's bounds"):
        assert m.predict([[5.0, 5.0], [np.nan, 0.5]]).tolist() == [-1, -1]
    assert issubclass(PrivateNoteWarning, UtilityWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.predict([[5.0, 5.0], [0.5, 1.5]])  # one point inside: no note
        m.predict(np.empty((0, 2)))
