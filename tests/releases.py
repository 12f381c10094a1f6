"""Releases for the tests, in a few keywords.

The library resolves every parameter once from its table
(:func:`dpdbscan.plan.resolve.resolve`); many tests instead pin a histogram,
a core test and its settings directly. :class:`Config` holds those settings
with the paper's procedure as its defaults (the bound test, the paper's
margin, beta 0.5, whole cells, no border): what these tests were written
against. :func:`library` gives the library's own defaults instead.

``noise="none"`` gives exact counts, for the oracle tests only: the library
cannot make such a release (:func:`exact_histogram`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpdbscan.cells.grid import Grid
from dpdbscan.cells.histogram import NoisyHistogram
from dpdbscan.model.build import model_of
from dpdbscan.model.record import SpanModel
from dpdbscan.params.parameters import PARAMETERS
from dpdbscan.params.specs import ReleaseSpec, SpanSpec
from dpdbscan.plan.resolve import release_spec
from dpdbscan.post.coretests import build_spans
from dpdbscan.release.backends import NumpyBackend
from dpdbscan.release.mechanism import release_histogram as _release_histogram
from dpdbscan.release.points import clean_points


@dataclass(frozen=True)
class Config:
    """A release and its post-processing, pinned (the paper's procedure by default)."""

    epsilon: float
    delta: float = 0.0
    histogram: str = "dense"
    noise: str = "discrete"
    theta: float | None = None
    max_empty_cells: float = 2.0**20
    beta: float = 0.5
    subcells: int = 1
    margin: str | float = "paper"
    border: float = 0.0
    core: str = "bound"

    def release_spec(self, grid: Grid) -> ReleaseSpec:
        """The release of these settings on ``grid``: resolved as the library
        does, but without the table's checks (tests pick large epsilons and a
        delta of 0.05 on purpose, to make effects measurable)."""
        p = {name: param.default for name, param in PARAMETERS.items()}
        p.update(
            {
                "epsilon": self.epsilon,
                "delta": self.delta,
                "histogram": self.histogram,
                "noise": "discrete" if self.noise == "none" else self.noise,
                "theta": self.theta,
                "max_empty_cells": self.max_empty_cells,
            }
        )
        return release_spec(p, grid)

    def span_spec(self, min_samples: int, raise_min_samples: bool = True) -> SpanSpec:
        return SpanSpec(
            min_samples=int(min_samples),
            beta=self.beta,
            subcells=self.subcells,
            margin=self.margin,
            border=float(self.border),
            border_cells="any",
            raise_min_samples=raise_min_samples,
            core=self.core,
            join="eps",
        )


def library(epsilon: float, **kw) -> Config:
    """The library's defaults for these keywords: the density test, 1 sigma,
    beta 0.1, 2 x 2 sub-cells below d = 4 and the border eps (the caller
    gives border=grid.eps for that)."""
    return Config(epsilon=epsilon, beta=0.1, subcells=2, margin=1.0, core="density", **kw)


def exact_histogram(
    grid: Grid, X: np.ndarray, kind: str = "dense", theta: float | None = None
) -> NoisyHistogram:
    """The exact counts of ``X`` as a release without noise (oracle tests):
    dense, or the cells with a count >= theta (1 by default)."""
    cells = NumpyBackend().count(grid, clean_points(grid, X))
    if kind == "dense":
        values = np.zeros(grid.shape, dtype=np.int64)
        if len(cells):
            values[tuple(grid.decode(cells.keys).T)] = cells.counts
        return NoisyHistogram(grid, "dense", values, None, float("-inf"), "none", float("inf"), 1.0, 0.0)
    t = 1.0 if theta is None else float(theta)
    keep = cells.counts >= t
    return NoisyHistogram(grid, kind, cells.counts[keep], cells.keys[keep], t, "none", float("inf"), 1.0, 0.0)


def release_histogram(grid: Grid, X: np.ndarray, config: Config, source=None) -> NoisyHistogram:
    """The release of ``X`` on ``grid`` with ``config`` (``source``: a seed or
    a source of random words; exact counts for ``noise="none"``)."""
    if config.noise == "none":
        theta = None if config.histogram == "dense" else (config.theta if config.theta is not None else 1.0)
        return exact_histogram(grid, X, config.histogram, theta)
    return _release_histogram(config.release_spec(grid), X, random_state=source)


def model(hist: NoisyHistogram, spans_spec: SpanSpec, gamma=None, gamma_upper=None) -> SpanModel:
    """The span model of a release (post-processing only)."""
    spans = build_spans(hist, spans_spec, noise_margin=gamma, noise_margin_upper=gamma_upper)
    return model_of(
        hist,
        spans,
        spans_spec,
        fit=(hist.grid.eps, hist.grid.eta, spans_spec.min_samples),
        auto=None,
        metadata={},
        rho=None,
        units=None,
        unit_choice=None,
    )


def fit_spans(
    X, grid: Grid, min_samples: int, config: Config, source=None, *, raise_min_samples: bool = True
) -> SpanModel:
    """Release, then the spans of ``config``'s core test."""
    hist = release_histogram(grid, X, config, source)
    return model(hist, config.span_spec(min_samples, raise_min_samples))


def spans_from_histogram(
    hist: NoisyHistogram,
    min_samples: int,
    gamma: float | None,
    beta: float,
    *,
    raise_min_samples: bool = True,
    subcells: int = 1,
    border: float = 0.0,
    margin: str | float = "paper",
    core: str = "bound",
) -> SpanModel:
    """The span model of a released histogram with these settings;
    ``gamma`` (bound test) overrides both margins when given."""
    spec = SpanSpec(
        min_samples=int(min_samples),
        beta=beta,
        subcells=subcells,
        margin=margin,
        border=float(border),
        border_cells="any",
        raise_min_samples=raise_min_samples,
        core=core,
        join="eps",
    )
    return model(hist, spec, gamma=gamma, gamma_upper=gamma)


def make_histogram(
    grid: Grid,
    kind: str,
    values,
    keys=None,
    theta: float = 0.0,
    noise: str = "discrete",
    epsilon: float = 1.0,
    delta: float = 0.0,
) -> NoisyHistogram:
    """A hand-made release (discrete Laplace noise at epsilon 1 unless told)."""
    return NoisyHistogram(
        grid=grid,
        kind=kind,
        values=np.asarray(values),
        keys=keys,
        theta=theta,
        noise=noise,
        scale=epsilon,
        epsilon=epsilon,
        delta=delta,
    )


def span_cells(model: SpanModel, span_id: int | None = None) -> np.ndarray:
    """Integer coordinates of the core cells of one span (or of all)."""
    keys = model.core_keys if span_id is None else model.core_keys[model.labels == span_id]
    return model.grid.decode(keys)


def span_region(model: SpanModel, span_id: int) -> np.ndarray:
    """Integer coordinates of every cell ``predict`` maps to span ``span_id``."""
    keys, labels = model.regions()
    return model.grid.decode(keys[labels == span_id])
