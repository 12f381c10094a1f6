"""DPDBSCAN keeps scikit-learn's estimator protocol without importing
scikit-learn (dpdbscan.estimatorbase): importing it loads no scikit-learn,
pandas or scipy.stats, and clone, Pipeline, GridSearchCV, get_params /
set_params and the tags work as with scikit-learn's base classes.
scikit-learn's own checks: tests/test_sklearn_checks.py."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

from dpdbscan import DPDBSCAN


def blobs(n=600, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(c, 0.03, (n // 2, 2)) for c in ((0.3, 0.3), (0.7, 0.7))])


def est(**kw):
    return DPDBSCAN(**{"eps": 0.1, "min_samples": 20, "bounds": (0.0, 1.0), "random_state": 0, **kw})


def test_importing_the_estimator_loads_no_scikit_learn():
    code = (
        "import sys; from dpdbscan import DPDBSCAN; DPDBSCAN(0.1).get_params();"
        "print(sorted(m for m in ('sklearn', 'pandas', 'scipy.stats') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_get_params_and_set_params_follow_init():
    e = est()
    params = e.get_params()
    assert list(params) == sorted(params) and params["eps"] == 0.1 and params["min_samples"] == 20
    assert set(params) == set(DPDBSCAN().get_params())
    assert e.set_params(min_samples=30, epsilon=0.5) is e
    assert (e.min_samples, e.epsilon) == (30, 0.5)
    with pytest.raises(ValueError, match=r"Invalid parameter 'min_pts' for estimator DPDBSCAN.*'min_sam"):
        e.set_params(min_pts=3)
    assert e.set_params() is e


def test_repr_names_the_parameters_that_differ_from_their_defaults():
    assert repr(DPDBSCAN()) == "DPDBSCAN()"
    assert repr(DPDBSCAN(0.2, min_samples=7)) == "DPDBSCAN(eps=0.2, min_samples=7)"
    lo = np.zeros(2)
    assert repr(DPDBSCAN(bounds=(lo, lo + 1))).startswith("DPDBSCAN(bounds=(array(")


def test_clone_copies_the_parameters_not_the_fit():
    from sklearn.base import clone

    e = est().fit(blobs())
    c = clone(e)
    assert type(c) is DPDBSCAN and c.get_params() == e.get_params() and not hasattr(c, "spans_")


def test_eta_auto_and_an_eta_of_4_given_stay_apart_through_the_protocol():
    from sklearn.base import clone

    # the default is "auto" (the coarse release of 7-D/8-D may widen its cells),
    # an eta given (4 included) is kept as given through every door
    assert DPDBSCAN().get_params()["eta"] == "auto" and repr(DPDBSCAN(eta=4)) == "DPDBSCAN(eta=4)"
    e = est(eta=4)
    assert clone(e).eta == 4 and clone(e).get_params() == e.get_params()
    assert e.set_params(eta="auto").eta == "auto" and clone(e).eta == "auto"
    assert e.set_params(eta=4.0).get_params()["eta"] == 4.0


def test_a_pipeline_fits_and_predicts_through_it():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    X = blobs()
    pipe = make_pipeline(FunctionTransformer(lambda A: A / 2.0), est(bounds=(0.0, 0.5), eps=0.05))
    labels = pipe.fit(X).predict(X)
    direct = est(bounds=(0.0, 0.5), eps=0.05).fit(X / 2.0).predict(X / 2.0)
    assert np.array_equal(labels, direct) and labels.max() >= 1
    assert np.array_equal(pipe.fit_predict(X), direct)
    pipe.set_params(dpdbscan__min_samples=25)
    assert pipe.get_params()["dpdbscan__min_samples"] == 25


def test_grid_search_fits_each_candidate():
    from sklearn.model_selection import GridSearchCV

    X = blobs()

    def n_spans(estimator, X_test, y=None):
        return float(estimator.spans_.n_spans)

    search = GridSearchCV(est(), {"min_samples": [10, 40]}, scoring=n_spans, cv=2, refit=True)
    search.fit(X)
    assert [p["min_samples"] for p in search.cv_results_["params"]] == [10, 40]
    assert search.best_estimator_.min_samples in (10, 40) and hasattr(search.best_estimator_, "spans_")
    assert search.predict(X).shape == (len(X),)


def test_scikit_learn_sees_a_clusterer():
    from sklearn.base import is_classifier, is_regressor

    assert not is_classifier(est()) and not is_regressor(est())
    try:
        from sklearn.base import is_clusterer  # scikit-learn 1.6 and later: by the tags
    except ImportError:  # before: by the estimator's type
        assert est()._estimator_type == "clusterer"
    else:
        assert is_clusterer(est())


def test_a_fitted_estimator_pickles_with_its_release():
    X = blobs()
    e = est().fit(X)
    back = pickle.loads(pickle.dumps(e))
    assert np.array_equal(back.predict(X), e.predict(X)) and back.get_params() == e.get_params()


def test_predict_before_fit_is_scikit_learns_not_fitted_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        est().predict(blobs())


def test_a_pipeline_shows_in_a_notebook():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.utils import estimator_html_repr

    html = estimator_html_repr(make_pipeline(FunctionTransformer(), est()))
    assert "DPDBSCAN" in html


def test_grid_search_routes_the_units_when_asked():
    """With scikit-learn's metadata routing on, ``set_fit_request(units=True)``
    makes a search pass each fold's units to ``fit`` (person-level fits); a
    search given units the estimator did not request refuses them."""
    import sklearn
    from sklearn.model_selection import GridSearchCV

    X = blobs()
    units = np.arange(len(X)) % 50
    e = est(max_cells_per_unit=2, delta=1e-6, min_samples=5)
    with pytest.raises(RuntimeError, match="metadata routing"):
        e.set_fit_request(units=True)
    with sklearn.config_context(enable_metadata_routing=True):

        def n_spans(estimator, X_test, y=None):
            return float(estimator.spans_.n_spans)

        if tuple(int(v) for v in sklearn.__version__.split(".")[:2]) >= (1, 4):
            # searches route metadata since scikit-learn 1.4 (1.3 passes fit's keywords on as they are)
            with pytest.raises(ValueError, match="units"):
                GridSearchCV(e, {"min_samples": [3, 5]}, scoring=n_spans, cv=2).fit(X, units=units)
        with pytest.raises(TypeError, match="fit does not take"):
            e.set_fit_request(cab=True)
        search = GridSearchCV(e.set_fit_request(units=True), {"min_samples": [3, 5]}, scoring=n_spans, cv=2)
        search.fit(X, units=units)
    assert search.best_estimator_.spans_.release.units is not None  # person level: the units arrived
