"""The mechanisms the paper compares against, behind one small interface.

* :func:`dp_dbscan` - ours, the library's estimator with its defaults.
* :func:`dp_kmeans` - diffprivlib's DP k-means with the true k and the same
  public bounds (needs the ``baselines`` extra: diffprivlib 0.6.6 imports
  with scikit-learn < 1.9 only, so it lives in the Makefile's .venv-baselines).
* :func:`dbscan`, :func:`kmeans` - scikit-learn, non-private.
* :func:`noisy_distance_dbscan` - the label-publishing baseline that
  privatises the pairwise distance matrix (in the spirit of Ni et al. 2017,
  Wu et al. 2015, Ni et al. 2018, Jin et al. 2019) and then runs DBSCAN on it.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

import dpdbscan

if TYPE_CHECKING:
    from sklearn.cluster import DBSCAN, KMeans

    from .datasets import Dataset

Bounds = tuple[ArrayLike, ArrayLike]

#: Why DP-KMeans cannot run, for messages and skipped tests.
DIFFPRIVLIB_MISSING = (
    "DP-KMeans needs diffprivlib 0.6.6, which imports only with scikit-learn < 1.9: run the "
    "experiments in the Makefile's .venv-baselines (make accuracy, make reproduce, "
    "make test-experiments) or pip install -e '.[experiments,baselines]'"
)


def dp_dbscan(ds: Dataset, seed: int | None, **kwargs: Any) -> Any:
    """Fitted :class:`dpdbscan.DPDBSCAN` on ``ds`` (epsilon defaults to 1).

    ``seed=None`` uses the library's secure randomness; an int gives a
    reproducible (insecure) run, whose warning is expected here. A release
    without spans (the library's UtilityWarning) is a measured outcome in the
    sweeps, scored like any other, so that warning is silenced too, and so is
    the warning that the data look standardised: the paper's synthetic sets
    are standardised by their definition (``datasets._synthetic``), public
    benchmarks rather than private data.
    """
    kwargs.setdefault("epsilon", 1.0)
    est = dpdbscan.DPDBSCAN(
        eps=ds.alpha, min_samples=ds.min_samples, bounds=ds.bounds, random_state=seed, **kwargs
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpdbscan.InsecureRandomnessWarning)
        warnings.simplefilter("ignore", dpdbscan.UtilityWarning)
        warnings.filterwarnings("ignore", "every column of the data has mean 0", dpdbscan.PrivacyLeakWarning)
        return est.fit(ds.X)


def has_diffprivlib() -> bool:
    """Whether diffprivlib's DP k-means can be imported here."""
    try:
        from diffprivlib.models import KMeans  # noqa: F401
    except ImportError:
        return False
    return True


def dp_kmeans(X: np.ndarray, k: int, bounds: Bounds, epsilon: float = 1.0, seed: int | None = None) -> Any:
    """diffprivlib KMeans with public bounds; returns the fitted model."""
    try:
        from diffprivlib.models import KMeans as DPKMeans
    except ImportError as exc:  # depends on the environment (.venv-baselines)
        raise ImportError(DIFFPRIVLIB_MISSING) from exc
    lower, upper = (np.asarray(b, dtype=np.float64) for b in bounds)
    model = DPKMeans(n_clusters=k, epsilon=epsilon, bounds=(lower, upper), random_state=seed)
    from diffprivlib.utils import PrivacyLeakWarning

    with warnings.catch_warnings():
        # Silence diffprivlib's non-privacy chatter (deprecations of its
        # scikit-learn internals) but never a privacy leak warning.
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", PrivacyLeakWarning)
        return model.fit(np.clip(X, lower, upper))


def kmeans(X: np.ndarray, k: int, seed: int | None = None) -> KMeans:
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=k, random_state=seed).fit(X)


def dbscan(X: np.ndarray, alpha: float, min_samples: int) -> DBSCAN:
    """Fitted scikit-learn DBSCAN."""
    from sklearn.cluster import DBSCAN

    return DBSCAN(eps=alpha, min_samples=min_samples).fit(X)


def core_only_labels(model: DBSCAN) -> np.ndarray:
    """DBSCAN labels with border points set to noise (-1).

    This is the convention of the paper's code (its DBSCAN column): scikit-learn
    assigns a border point to whichever cluster reaches it first; the paper's
    code marks all non-core points as noise instead.
    """
    labels = np.full(model.labels_.shape, -1, dtype=np.int64)
    core = model.core_sample_indices_
    labels[core] = model.labels_[core]
    return labels


def diameter(bounds: Bounds) -> float:
    lower, upper = (np.asarray(b, dtype=np.float64) for b in bounds)
    return float(np.linalg.norm(upper - lower))


def noisy_distance_matrix(
    X: ArrayLike, bounds: Bounds, epsilon: float, rng: np.random.Generator, calibration: str = "row"
) -> tuple[np.ndarray, float]:
    """The pairwise distance matrix with Laplace noise, symmetric, clipped at 0.

    Replacing one record changes its n - 1 distances, each by at most the public
    box's diameter D, so the L1 sensitivity of the upper triangle is (n - 1) D
    and ``calibration="row"`` uses Laplace scale (n - 1) D / epsilon: epsilon-DP.
    ``calibration="entry"`` uses scale D / epsilon per entry, as if each
    distance were a separate release; it is *not* epsilon-DP for the matrix
    (it spends epsilon n(n-1)/2 in total) and is shown only as an optimistic
    variant. Negative noisy distances are clipped to 0 (post-processing).
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    D = diameter(bounds)
    if calibration == "row":
        scale = (n - 1) * D / epsilon
    elif calibration == "entry":
        scale = D / epsilon
    else:
        raise ValueError(f"calibration must be 'row' or 'entry', got {calibration!r}")
    from scipy.spatial.distance import pdist, squareform

    lower, upper = (np.asarray(b, dtype=np.float64) for b in bounds)
    condensed = pdist(np.clip(X, lower, upper))  # the upper triangle, row by row
    condensed += rng.laplace(0.0, scale, size=condensed.size)
    np.maximum(condensed, 0.0, out=condensed)
    return squareform(condensed), scale


def noisy_distance_dbscan(
    X: np.ndarray,
    alpha: float,
    min_samples: int,
    bounds: Bounds,
    epsilon: float = 1.0,
    seed: int = 0,
    calibration: str = "row",
) -> tuple[np.ndarray, float]:
    """DBSCAN (scikit-learn, precomputed metric) on the noisy distance matrix.

    Returns (labels, Laplace scale). The labels *are* the release of this
    baseline, which is what the paper proves cannot be useful.
    """
    from sklearn.cluster import DBSCAN

    rng = np.random.default_rng(seed)
    M, scale = noisy_distance_matrix(X, bounds, epsilon, rng, calibration)
    labels = DBSCAN(eps=alpha, min_samples=min_samples, metric="precomputed").fit_predict(M)
    return labels, scale


def n_clusters(labels: ArrayLike) -> int:
    """Number of clusters, noise (-1) excluded."""
    labels = np.asarray(labels)
    return int(np.unique(labels[labels >= 0]).size)


def density_preserving_alpha(alpha: float, n: int, m: int, d: int) -> float:
    """Radius at which a uniform m-point subsample of n points has, in
    expectation, as many points per ball as the full data at ``alpha``."""
    return alpha * (n / m) ** (1.0 / d)


def subsample(n_total: int, m: int, seed: int) -> np.ndarray:
    """Indices of a uniform subsample of size min(m, n_total), sorted."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_total, size=min(m, n_total), replace=False))
