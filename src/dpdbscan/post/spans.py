"""From a released histogram to spans: margin, core (sub-)cells, merging.

Post-processing only: :func:`build_spans` reads nothing but a
:class:`~dpdbscan.histogram.NoisyHistogram` (the release) and public
parameters, so its output, and anything computed from it, is as private as
the histogram. Each derived quantity of the guarantee (Gamma, the number of
noisy terms kappa per sum, the number of sums the union bound covers, rho) is
computed here once and carried in the result; the model reports what was used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import bounds
from ..grid import Grid
from ..histogram import NoisyHistogram
from .core import core_cells, sum_threshold
from .merge import merge_cells
from .subcells import SubcellLayout

MARGINS = bounds.MARGINS


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
    margin : {"chernoff", "paper"}
        How Gamma bounds the noise of a neighbour sum.
    border : float
        Border radius used by ``predict`` (labels only).
    raise_min_samples : bool
        The paper's practical rule: core iff UB~ >= MinPts + tau.
    """

    min_samples: int
    beta: float = 0.5
    subcells: int = 1
    margin: str = "paper"
    border: float = 0.0
    raise_min_samples: bool = True


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
        The margin Gamma used by the core test.
    kappa : int
        Number of noisy terms in each neighbour sum (max |NB(q)| with sub-cells).
    n_events : int
        Number of sums Gamma's union bound covers (k^d |X|).
    rho : float
        Approximation ratio of the sandwich guarantee.
    """

    grid: Grid
    core_keys: np.ndarray
    labels: np.ndarray
    gamma: float
    kappa: int
    n_events: int
    rho: float


def margin(hist: NoisyHistogram, layout: SubcellLayout, method: str, beta: float) -> float:
    """Gamma for this release: public (histogram kind, theta, noise, epsilon,
    kappa, |X|, beta).

    The noise part bounds a sum of ``layout.kappa`` noise terms with a union
    bound over every (sub-)cell; truncating histograms add ``kappa * theta``.
    ``hist.epsilon`` is the epsilon the noise was drawn with (rounded down).
    """
    theta = hist.theta if hist.kind != "dense" else 0.0
    return bounds.gamma(hist.epsilon, layout.kappa, layout.n_events, beta, theta,
                        method=method, noise=hist.noise)


def build_spans(hist: NoisyHistogram, params: SpanParams, gamma: float | None = None) -> Spans:
    """Core cells (or sub-cells) and spans from a released histogram.

    ``gamma`` overrides the margin (tests use 0 for the noiseless oracle); by
    default it is :func:`margin` of the release.
    """
    layout = SubcellLayout(hist.grid, params.subcells)
    if gamma is None:
        gamma = margin(hist, layout, params.margin, params.beta)
    thr = sum_threshold(params.min_samples, gamma, params.raise_min_samples)
    keys, _ = core_cells(hist, thr, layout)
    return Spans(grid=layout.fine, core_keys=keys, labels=merge_cells(layout.fine, keys),
                 gamma=float(gamma), kappa=int(layout.kappa), n_events=int(layout.n_events),
                 rho=layout.rho)


__all__ = ["SpanParams", "Spans", "build_spans", "margin", "MARGINS"]
