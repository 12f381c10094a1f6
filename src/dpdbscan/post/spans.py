"""From a released histogram to spans: margin, core (sub-)cells, merging.

Post-processing only: :func:`build_spans` reads nothing but a
:class:`~dpdbscan.cells.histogram.NoisyHistogram` (the release) and public
parameters, so its output, and anything computed from it, is as private as
the histogram. Each derived quantity of the guarantee (Gamma, the number of
noisy terms kappa per sum, the number of sums the union bound covers, rho) is
computed here once and carried in the result; the model reports what was used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..cells.grid import Grid
from ..cells.histogram import NoisyHistogram
from ..cells.subcells import SubcellLayout
from .coretests import density
from .coretests.bound import margins as bounds
from .coretests.bound.core import core_cells, sum_threshold
from .merge import merge_cells, merge_centres

CORE_TESTS = ("density", "bound")


@dataclass(frozen=True)
class SpanParams:
    """Public parameters of the post-processing.

    Attributes
    ----------
    min_samples : int
        The user's MinPts.
    beta : float
        Failure probability of the guarantee (Gamma's union bound).
    subcells : int
        Sub-cells per cell and dimension (1 = the paper's cells).
    margin : str or float
        Bound test: how Gamma bounds the noise of a neighbour sum, "chernoff"
        or "paper". Density test: the number c of the margin c sigma(q), or
        "pointwise"/"chernoff" (study only); each with the empty-space guard.
    border : float
        Border radius used by ``predict`` (labels only).
    raise_min_samples : bool
        Bound test only: the paper's practical rule, core iff UB~ >= MinPts + tau.
    core : {"density", "bound"}
        The core test: an estimate of the alpha-ball count (:mod:`.density`) or
        the paper's noisy upper bound (:mod:`.core`).
    """

    min_samples: int
    beta: float = 0.5
    subcells: int = 1
    margin: str | float = "paper"
    border: float = 0.0
    raise_min_samples: bool = True
    core: str = "bound"

    @classmethod
    def from_attributes(cls, source: object, **given: Any) -> SpanParams:
        """The parameters of the same names as attributes of ``source`` (a
        span model, a mechanism configuration), except those ``given``."""
        taken = {f.name: getattr(source, f.name) for f in fields(cls) if f.name not in given}
        return cls(**taken, **given)


@dataclass
class Spans:
    """Core (sub-)cells grouped into spans, and the quantities used to get them.

    Attributes
    ----------
    grid : Grid
        The grid of the spans: the histogram's, or its sub-cells.
    core_keys : ndarray
        Sorted keys (in ``grid``) of the core cells.
    labels : ndarray
        Span id of each core cell, numbered by smallest cell.
    gamma : float
        The margin used by the core test: Gamma (bound test) or the largest
        m(q) (density test).
    kappa : int
        Number of noisy terms in each neighbour sum (max |NB(q)| with sub-cells).
    n_events : int
        Number of sums the union bounds cover (k^d |X|).
    rho : float
        Approximation ratio of the guarantee.
    threshold : float
        The (largest) core threshold: on UB~ for the bound test (MinPts + tau
        with the practical rule), on the estimate E~ for the density test.
    extra : dict
        Density test: ``accuracy_margin`` (G), ``m_star`` (M*) and
        ``probability`` of its one-sided guarantee.
    gamma_upper : float or None
        Bound test: the upper margin Gamma_up (``gamma`` is Gamma_low); tau =
        Gamma_low + Gamma_up.
    """

    grid: Grid
    core_keys: np.ndarray
    labels: np.ndarray
    gamma: float
    kappa: int
    n_events: int
    rho: float
    threshold: float = math.nan
    extra: dict[str, Any] | None = None
    gamma_upper: float | None = None


def margin(hist: NoisyHistogram, layout: SubcellLayout, method: str, beta: float) -> tuple[float, float]:
    """(Gamma_low, Gamma_up) for this release: public (histogram kind, theta,
    noise, epsilon, kappa, |X|, beta); :func:`dpdbscan.post.coretests.bound.margins.margins`.

    Both bound sums of ``layout.kappa`` per-cell errors with a union bound over
    every (sub-)cell. Dense: both are the two-sided bound of the noise.
    Truncating histograms (sparse, stability): the lower side adds kappa times
    the truncation loss, the upper side bounds sums of max(Z, 0).
    ``hist.epsilon`` is the epsilon the noise was drawn with (rounded down).
    """
    return bound_margins(hist.kind, hist.theta, hist.noise, hist.epsilon, layout, method, beta)


def bound_margins(
    kind: str, theta: float, noise: str, epsilon: float, layout: SubcellLayout, method: str, beta: float
) -> tuple[float, float]:
    """(Gamma_low, Gamma_up) from the public fields of a release
    (:func:`margin`); the forecast calls it before any release."""
    theta = theta if kind != "dense" else 0.0
    return bounds.margins(method, kind, noise, epsilon, layout.kappa, layout.n_events, beta, theta)


def build_spans(
    hist: NoisyHistogram, params: SpanParams, gamma: float | None = None, gamma_upper: float | None = None
) -> Spans:
    """Core cells (or sub-cells) and spans from a released histogram.

    ``gamma`` (and ``gamma_upper``, the same by default) override the bound
    test's margins (tests use 0 for the noiseless oracle); by default they are
    :func:`margin` of the release.
    """
    if params.core not in CORE_TESTS:
        raise ValueError(f"core must be one of {CORE_TESTS}, got core={params.core!r}")
    layout = SubcellLayout(hist.grid, params.subcells)
    if params.core == "density":
        return _density_spans(hist, params, layout)
    if gamma is None:
        gamma, gamma_upper = margin(hist, layout, str(params.margin), params.beta)
    thr = sum_threshold(params.min_samples, gamma, params.raise_min_samples, gamma_upper)
    keys, _ = core_cells(hist, thr, layout)
    tau = bounds.tau(gamma, gamma_upper)
    upper = params.min_samples + (tau if params.raise_min_samples else 0.0)
    return Spans(
        grid=layout.fine,
        core_keys=keys,
        labels=merge_cells(layout.fine, keys),
        gamma=float(gamma),
        kappa=int(layout.kappa),
        n_events=int(layout.n_events),
        rho=layout.rho,
        threshold=float(upper),
        gamma_upper=None if gamma_upper is None else float(gamma_upper),
    )


def _density_spans(hist: NoisyHistogram, params: SpanParams, layout: SubcellLayout) -> Spans:
    """The density test: core sub-cells whose estimated alpha-ball count
    reaches MinPts + m(q) in an occupied cell, joined when their centres are
    within alpha; and the quantities of its one-sided guarantee."""
    dc = density.density_field(
        hist, params.min_samples, subcells=layout.k, margin_rule=params.margin, beta=params.beta
    ).core(params.min_samples)
    return density_spans(hist, params, dc.keys, merge_centres(dc.fine, dc.keys))


def density_spans(
    hist: NoisyHistogram, params: SpanParams, core_keys: np.ndarray, labels: np.ndarray
) -> Spans:
    """The :class:`Spans` of the density test's core sub-cells ``core_keys``
    (sorted keys of ``hist.grid.subdivided(params.subcells)``) grouped by
    ``labels``, with the margin and guarantee of ``hist``'s own alpha and
    ``params``: one place for what a density model reports, whether its
    cells come from :func:`build_spans` or from a sweep."""
    layout = SubcellLayout(hist.grid, params.subcells)
    gamma, extra = density_guarantee(hist.grid, hist.kind, hist.noise, hist.epsilon, hist.theta, params)
    return Spans(
        grid=layout.fine,
        core_keys=core_keys,
        labels=labels,
        gamma=gamma,
        kappa=int(layout.kappa),
        n_events=int(layout.n_events),
        rho=layout.rho,
        threshold=float(params.min_samples + gamma),
        extra=extra,
    )


def density_margin(
    grid: Grid, kind: str, noise: str, epsilon: float, theta: float, params: SpanParams
) -> tuple[density.BallWeights, density.Margin]:
    """The ball weights of the density test and its margin m(q) for a release
    with these public fields (the largest m(q) is the model's ``gamma``)."""
    weights = density.ball_weights(grid.d, float(grid.eta), params.subcells)
    m = density.margin(
        params.margin,
        weights,
        noise,
        epsilon,
        params.beta,
        grid.n_cells,
        min_samples=params.min_samples,
        truncation=density.empty_truncation(kind, theta),
    )
    return weights, m


def density_guarantee(
    grid: Grid, kind: str, noise: str, epsilon: float, theta: float, params: SpanParams
) -> tuple[float, dict[str, Any]]:
    """The one-sided guarantee of a density release (docs/density-notes.md).

    Let G(q) bound the weighted noise of every sub-cell at once (exact
    quantiles, union over the k^d |X| sub-cells at beta). On that event a core
    sub-cell has UB(q) >= E(q) > MinPts + m(q) - G(q), so every span lies in
    the span of one (rho alpha, M*)-cluster with M* = floor(MinPts +
    min_q (m(q) - G(q))) + 1, and M* >= 1 by the empty-space guard, which
    every margin rule has (for a truncating release that is a second event:
    probability >= 1 - 2 beta). There is no covering statement; an M* < 1
    (possible only without the guard) is reported as no guarantee
    (:meth:`SpanModel.guarantee`).

    Returns the largest margin m(q) and a dict of ``accuracy_margin`` (the
    largest G(q)), ``m_star`` and ``probability``. Reads public values only
    (the release's grid, kind, noise, epsilon and theta), so a saved model
    recomputes exactly what its spans were made with.
    """
    weights, m = density_margin(grid, kind, noise, epsilon, theta, params)
    G = density.accuracy_margin(weights, noise, epsilon, params.beta, grid.n_cells, kind)
    from_accuracy = math.floor(params.min_samples + float((m.values - G).min())) + 1
    guarded = bool(np.any(m.empty > 0)) or kind == "stability"
    m_star = max(from_accuracy, 1) if guarded else from_accuracy
    two_events = kind == "sparse" and from_accuracy < 1 and guarded
    return float(m.values.max()), {
        "accuracy_margin": float(G.max()),
        "m_star": int(m_star),
        "probability": 1.0 - (2 if two_events else 1) * params.beta,
    }


__all__ = [
    "SpanParams",
    "Spans",
    "build_spans",
    "density_spans",
    "margin",
    "bound_margins",
    "density_margin",
    "density_guarantee",
    "CORE_TESTS",
]
