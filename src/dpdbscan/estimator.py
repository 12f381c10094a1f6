"""The scikit-learn style estimator."""

from __future__ import annotations

import numbers
import os
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from . import _random
from ._validation import (
    UtilityWarning, bounds_from_data, check_array, check_bounds, check_delta, check_epsilon, check_min_samples,
    check_positive,
)
from .grid import Grid
from .mechanism import HISTOGRAMS, MechanismConfig, fit_spans


class DPDBSCAN(ClusterMixin, BaseEstimator):
    """Differentially private DBSCAN that publishes cluster spans.

    The release is a set of spans, unions of grid cells, that classify any
    point; labels of the training points are *not* a DP release (the paper
    proves no useful DP algorithm can publish them).

    Parameters
    ----------
    eps : float, default=0.5
        DBSCAN radius alpha.
    min_samples : int, default=5
        The user's non-private MinPts (a point counts itself, as in
        scikit-learn). With ``raise_min_samples=True`` the mechanism uses
        MinPts + tau, as in the paper's experiments.
    epsilon : float, default=1.0
        Privacy budget.
    bounds : tuple (lower, upper), default=None
        Public bounds of the data domain: scalars or one value per feature.
        If omitted they are taken from the data with a ``PrivacyLeakWarning``,
        which voids the guarantee. Points outside are clipped into the box and
        rows with NaN/inf are dropped (a per-record rule; docs/privacy.md).
    random_state : None, int or numpy Generator, default=None
        None uses the operating system's CSPRNG. A seed gives reproducible,
        insecure noise for research and warns.
    eta : float, default=4.0
        Grid parameter in (0, 4]: cell width ``eta * eps / (4 sqrt(d))``;
        approximation ratio rho = 3 + eta.
    beta : float, default=0.1
        Failure probability of the accuracy guarantee: with probability
        >= 1 - beta the spans are (rho, tau)-approximate. The paper's code
        used 0.5; 0.1 gives a meaningful guarantee and a larger margin.
    histogram : {"auto", "dense", "sparse", "stability"}, default="auto"
        Naive Laplace histogram over all cells, the linear-time sparse one
        (Algorithm 2) or the (epsilon, delta) stability histogram. "auto"
        picks from public quantities only: dense when |X| <= 2**23 cells,
        otherwise sparse (stability if ``delta > 0``).
    delta : float, default=0.0
        Used only by the stability histogram.
    noise : {"discrete", "laplace"}, default="discrete"
        Exact discrete Laplace (integer arithmetic) or the paper's continuous
        Laplace in floating point.
    theta : float, default=None
        Threshold of the sparse histogram; by default the smallest value that
        releases at most ``max_empty_cells`` empty cells in expectation.
    max_empty_cells : float, default=2**20
        Public cap used to choose theta.
    raise_min_samples : bool, default=True
        The paper's practical rule (core iff UB~ >= MinPts + tau). False gives
        the theoretical rule (UB~ >= MinPts).
    subcells : "auto" or int, default="auto"
        Core-ness and merging are decided on sub-cells of width w / subcells
        (each with its own, smaller neighbourhood), the histogram stays on
        cells of width w. Post-processing: no privacy cost; the sandwich
        guarantee holds with rho = 3 + eta/2 + eta/(2 subcells).
        1 is the paper's procedure. "auto" is 2 for d <= 3 and 1 above, where
        the 2^d sub-cells per cell would cost more time than they give.
    margin : {"chernoff", "paper"}, default="chernoff"
        How Gamma is bounded: Chernoff with the exact moment generating
        function of the noise (rigorous, about 20% smaller) or the paper's
        Laplace concentration bound.
    border : "auto" or float, default="auto"
        ``predict`` also gives a point within this distance of a span's cells
        that span (the nearest), like DBSCAN's border points. "auto" is half
        the diameter of a span cell, ``eta * eps / (8 * subcells)``; 0 is the
        paper's cell membership. Labels only: the spans are unchanged.
    paper defaults:
        ``subcells=1, margin="paper", border=0`` reproduce the paper's
        procedure exactly (docs/accuracy.md compares both).
    accountant : object with ``check`` and ``spend``, default=None
        A budget accountant (ours or diffprivlib's).
    backend : "numpy", "dask" or an object with ``count``, default="numpy"
        Where the per-cell counts are computed.

    Attributes
    ----------
    spans_ : SpanModel
        The DP release.
    histogram_ : NoisyHistogram
        The released noisy histogram (part of the release).
    gamma_, gamma_upper_, tau_, kappa_, theta_, n_cells_, rho_, beta_ :
        Lower and upper margins Gamma_low and Gamma_up, additive error
        tau = Gamma_low + Gamma_up, |NB(X)|, sparse threshold, |X|,
        approximation ratio and failure probability.
    guarantee_ : dict
        The (rho, tau, beta) sandwich guarantee and privacy parameters.
    budget_spent_ : tuple (epsilon, delta)
    n_features_in_ : int

    Notes
    -----
    Time O(n log n) for counting (sort) or O(n) (bincount on small grids),
    then O(|X|) for the dense histogram or O(n) for the sparse one; kappa
    neighbour sums per candidate cell. With probability >= 1 - beta the spans
    are (rho, tau)-approximate (Definition "Sandwich Quality Guarantee for
    Spans").

    References
    ----------
    Qiu and Yi, "Approximate DBSCAN under Differential Privacy".
    """

    def __init__(self, eps=0.5, min_samples=5, epsilon=1.0, bounds=None, random_state=None, *,
                 eta=4.0, beta=0.1, histogram="auto", delta=0.0, noise="discrete", theta=None,
                 max_empty_cells=2**20, raise_min_samples=True, subcells="auto", margin="chernoff",
                 border="auto", accountant=None, backend="numpy"):
        self.eps = eps
        self.min_samples = min_samples
        self.epsilon = epsilon
        self.bounds = bounds
        self.random_state = random_state
        self.eta = eta
        self.beta = beta
        self.histogram = histogram
        self.delta = delta
        self.noise = noise
        self.theta = theta
        self.max_empty_cells = max_empty_cells
        self.raise_min_samples = raise_min_samples
        self.subcells = subcells
        self.margin = margin
        self.border = border
        self.accountant = accountant
        self.backend = backend

    def _config(self, epsilon, delta) -> MechanismConfig:
        if self.histogram not in HISTOGRAMS:
            raise ValueError(f"histogram must be one of {HISTOGRAMS}, got histogram={self.histogram!r}")
        if self.noise not in ("discrete", "laplace"):
            raise ValueError(f"noise must be 'discrete' or 'laplace', got noise={self.noise!r}")
        beta = check_positive("beta", self.beta, upper=1.0, upper_inclusive=False)
        if self.theta is not None and not (
            isinstance(self.theta, numbers.Real) and np.isfinite(self.theta) and self.theta >= 0
        ):
            raise ValueError(f"theta must be a finite number >= 0 or None, got theta={self.theta!r}")
        max_empty = check_positive("max_empty_cells", self.max_empty_cells)
        histogram = self.histogram
        if histogram == "stability" and delta == 0:
            raise ValueError("histogram='stability' needs delta > 0, got delta=0.0")
        if not (self.subcells == "auto" if isinstance(self.subcells, str) else (
                isinstance(self.subcells, numbers.Integral) and not isinstance(self.subcells, bool)
                and self.subcells >= 1)):
            raise ValueError(f"subcells must be 'auto' or an integer >= 1, got subcells={self.subcells!r}")
        if self.margin not in ("chernoff", "paper"):
            raise ValueError(f"margin must be 'chernoff' or 'paper', got margin={self.margin!r}")
        return MechanismConfig(
            epsilon=epsilon, delta=delta, histogram=histogram, noise=self.noise, beta=beta,
            theta=None if self.theta is None else float(self.theta), max_empty_cells=max_empty,
            margin=self.margin,
        )

    def _subcells(self, d: int) -> int:
        if isinstance(self.subcells, str):  # "auto": public, from the dimension only
            return 2 if d <= 3 else 1
        return int(self.subcells)

    def _border(self, alpha: float, eta: float, k: int) -> float:
        if isinstance(self.border, str):
            if self.border != "auto":
                raise ValueError(f"border must be 'auto' or a number >= 0, got border={self.border!r}")
            return eta * alpha / (8.0 * k)
        if isinstance(self.border, bool) or not isinstance(self.border, numbers.Real) \
                or not (np.isfinite(self.border) and self.border >= 0):
            raise ValueError(f"border must be 'auto' or a number >= 0, got border={self.border!r}")
        return float(self.border)

    def fit(self, X, y=None):
        """Release DP spans of ``X``. Returns self."""
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta)
        alpha = check_positive("eps", self.eps)
        min_samples = check_min_samples(self.min_samples)
        eta = check_positive("eta", self.eta, upper=4.0)
        config = self._config(epsilon, delta)
        if not isinstance(self.raise_min_samples, (bool, np.bool_)):
            raise TypeError(f"raise_min_samples must be a bool, got {self.raise_min_samples!r}")

        local = self.backend in (None, "numpy")
        paths = isinstance(X, (str, os.PathLike)) or (
            isinstance(X, (list, tuple)) and len(X) > 0
            and all(isinstance(p, (str, os.PathLike)) for p in X))
        if local or isinstance(X, np.ndarray) or (isinstance(X, (list, tuple)) and not paths):
            X = check_array(X)
            n_features = X.shape[1]
        else:
            from .backends import get_backend

            backend = get_backend(self.backend)
            n_features = _n_features_of(X, self.bounds, backend)
        if self.bounds is None:
            if not isinstance(X, np.ndarray):
                raise ValueError("bounds are required with a distributed backend")
            lower, upper = bounds_from_data(X)
        else:
            lower, upper = check_bounds(self.bounds, n_features)

        grid = Grid(lower, upper, alpha, eta)
        k = self._subcells(grid.d)
        config = MechanismConfig(**{**config.__dict__, "subcells": k,
                                    "border": self._border(alpha, eta, k)})
        kind = config.choose_histogram(grid)
        if config.histogram == "auto" and delta > 0 and kind == "sparse":
            config = MechanismConfig(**{**config.__dict__, "histogram": "stability"})
        spent_delta = delta if config.choose_histogram(grid) == "stability" else 0.0
        if self.accountant is not None:
            self.accountant.check(epsilon, spent_delta)
        source = _random.make_source(self.random_state)
        spans = fit_spans(X, grid, min_samples, config, source,
                          raise_min_samples=bool(self.raise_min_samples), backend=self.backend)
        spans.delta = spent_delta
        if self.accountant is not None:
            self.accountant.spend(epsilon, spent_delta)

        if spans.n_spans == 0:
            # Post-processing of the release only: safe to say.
            warnings.warn(
                f"the release has no span: a cell is core only when about "
                f"{spans.threshold - spans.gamma:.0f} noisy points (min_samples={min_samples} "
                f"{'plus' if spans.raise_min_samples else 'minus'} the margin "
                f"{(spans.tau - spans.gamma) if spans.raise_min_samples else spans.gamma:.1f} "
                f"for epsilon={epsilon:g}) lie within eps of it. "
                "Small or sparse data need a larger eps, a larger epsilon or fewer dimensions; "
                "see docs/accuracy.md on small data sets.",
                UtilityWarning, stacklevel=2,
            )
        self.spans_ = spans
        self.histogram_ = spans.histogram
        self.gamma_ = spans.gamma
        self.gamma_upper_ = spans.gamma_upper
        self.tau_ = spans.tau
        self.kappa_ = grid.kappa
        self.theta_ = spans.theta
        self.n_cells_ = grid.n_cells
        self.rho_ = spans.rho
        self.beta_ = spans.beta
        self.guarantee_ = spans.guarantee()
        self.budget_spent_ = (epsilon, spent_delta)
        self.n_features_in_ = n_features
        return self

    def predict(self, X):
        """Span id of each point of ``X`` (-1 = noise), from the spans alone."""
        if not hasattr(self, "spans_"):
            raise _not_fitted()
        return self.spans_.predict(X)

    def fit_predict(self, X, y=None):
        """Fit, then label ``X`` with the released spans.

        These labels are post-processing of the release applied to the user's
        own data; publishing them is not covered by the DP guarantee.
        """
        return self.fit(X).predict(X)


def _n_features_of(X, bounds, backend=None):
    """Number of coordinates of non-numpy X: the backend's column rule first
    (it knows which columns it will read), then shape, columns or bounds."""
    counter = getattr(backend, "n_features", None)
    if callable(counter):
        n = counter(X)
        if isinstance(n, numbers.Integral):
            return int(n)
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and isinstance(shape[1], numbers.Integral):
        return int(shape[1])
    cols = getattr(X, "columns", None)
    if cols is not None:
        return len(cols)
    if bounds is not None:
        lo = np.atleast_1d(np.asarray(bounds[0]))
        return lo.size
    raise ValueError("cannot tell the number of features of X; pass bounds")


def _not_fitted():
    from sklearn.exceptions import NotFittedError

    return NotFittedError(
        "This DPDBSCAN instance is not fitted yet. Call 'fit' before 'predict'."
    )
