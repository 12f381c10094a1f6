"""scikit-learn's own estimator checks on DPDBSCAN.

Every check runs. The only expected failures are the ones differential
privacy requires, each with its reason; any other failure is a bug.
"""

from __future__ import annotations

import inspect
import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpdbscan import DPDBSCAN

# check name -> why DP-DBSCAN must differ from scikit-learn's expectation
DP_EXCEPTIONS = {
    "check_estimators_nan_inf": (
        "rows with NaN/inf are dropped by the documented per-record rule, not refused: whether a "
        "release happens must not hinge on one record"
    ),
    "check_dtype_object": (
        "a cell that is no number (a dict, text, pandas' NA) makes its row NaN, which the per-record "
        "rule drops, not a refusal: whether a release happens must not hinge on one record "
        "(tests/params/test_odd_cells.py)"
    ),
    "check_clustering": (
        "there is no labels_: labels of the training points are not a DP release (the paper "
        "proves no useful DP algorithm can publish them); use predict or fit_predict"
    ),
}


def _expected(estimator):
    return {k: v for k, v in DP_EXCEPTIONS.items() if v is not None}


def _as_list(mark):
    # parametrize_with_checks hands pytest a generator, which pytest 9 deprecates
    names, values = mark.args
    return pytest.mark.parametrize(names, list(values), **mark.kwargs)


def _checks():
    """The checks as one parametrize mark. scikit-learn before 1.6 (the oldest
    supported, ``make test-oldest``) has no ``expected_failed_checks``: the same
    exceptions are then marked xfail by the check's name."""
    with warnings.catch_warnings():
        # DPDBSCAN takes scikit-learn's protocol from dpdbscan.estimatorbase, not its base
        # class (importing scikit-learn cost 1.2 s of CPU at `import DPDBSCAN`): scikit-learn
        # 1.9 says so once when it lists the checks; every check below still runs
        warnings.filterwarnings("ignore", "Estimator DPDBSCAN does not inherit from", UserWarning)
        if "expected_failed_checks" in inspect.signature(parametrize_with_checks).parameters:
            return _as_list(parametrize_with_checks([DPDBSCAN()], expected_failed_checks=_expected))
        names, values = parametrize_with_checks([DPDBSCAN()]).args
    params = []
    for estimator, check in values:
        name = getattr(check, "func", check).__name__
        marks = [pytest.mark.xfail(reason=DP_EXCEPTIONS[name], strict=True)] if name in DP_EXCEPTIONS else []
        params.append(pytest.param(estimator, check, marks=marks))
    return pytest.mark.parametrize(names, params)


@pytest.mark.filterwarnings("ignore::dpdbscan.PrivacyLeakWarning")
@pytest.mark.filterwarnings("ignore::dpdbscan.InsecureRandomnessWarning")
@_checks()
def test_scikit_learn_checks(estimator, check):
    check(estimator)


# scikit-learn lists its clustering checks only for instances of its ClusterMixin, which
# DPDBSCAN does not inherit (dpdbscan.estimatorbase): they run here by name, as it runs them
CLUSTERING_CHECKS = [
    ("check_clusterer_compute_labels_predict", {}),
    ("check_estimators_partial_fit_n_features", {}),
    ("check_non_transformer_estimators_n_iter", {}),
    ("check_clustering", {}),
    ("check_clustering", {"readonly_memmap": True}),
]


@pytest.mark.filterwarnings("ignore::dpdbscan.PrivacyLeakWarning")
@pytest.mark.filterwarnings("ignore::dpdbscan.InsecureRandomnessWarning")
@pytest.mark.parametrize(("name", "kwargs"), CLUSTERING_CHECKS)
def test_scikit_learns_clustering_checks(name, kwargs):
    from sklearn.utils import estimator_checks

    check = getattr(estimator_checks, name)
    if name in DP_EXCEPTIONS:
        # the one DP exception among them: no labels_ (see DP_EXCEPTIONS)
        with pytest.raises(AttributeError, match="labels_"):
            check(name, DPDBSCAN(), **kwargs)
        return
    check(name, DPDBSCAN(), **kwargs)
