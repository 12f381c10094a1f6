"""The DP-DBSCAN mechanism: counts -> noisy histogram -> core cells -> spans.

This is the one place where epsilon is spent: the noisy histogram of cell
counts. Everything after :func:`release_histogram` is post-processing of its
output and never reads the points again. Every choice that shapes the
mechanism (grid, theta, dense or sparse) is a function of public inputs only:
bounds, alpha, eta, epsilon, delta, beta and the caps below.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import bounds as _bounds
from .backends import get_backend
from .grid import Grid
from .histograms import (
    NoisyHistogram, default_theta, dense_histogram, make_noise, sparse_histogram,
    stability_histogram,
)
from .spans import SpanModel, spans_from_histogram

HISTOGRAMS = ("auto", "dense", "sparse", "stability")
DENSE_MAX_CELLS = 1 << 23  # "auto" uses the naive histogram up to this |X|
MAX_EMPTY_CELLS = 1 << 20  # default cap on the expected number of released empty cells
MAX_EXPECTED_EMPTY = 1e8  # refuse an explicit theta that would release more


@dataclass(frozen=True)
class MechanismConfig:
    """Public parameters of one release."""

    epsilon: float
    delta: float = 0.0
    histogram: str = "auto"
    noise: str = "discrete"
    beta: float = 0.5
    theta: float | None = None
    max_empty_cells: float = MAX_EMPTY_CELLS
    dense_max_cells: int = DENSE_MAX_CELLS
    subcells: int = 1
    margin: str = "paper"
    border: float = 0.0

    def choose_histogram(self, grid: Grid) -> str:
        """Dense or sparse from |X| alone (public); stability when asked."""
        if self.histogram != "auto":
            return self.histogram
        return "dense" if grid.n_cells <= self.dense_max_cells else "sparse"

    def theta_for(self, grid: Grid, noise) -> float:
        """theta of the sparse histogram: given, or from the public cap."""
        if self.theta is None:
            return default_theta(grid.n_cells, noise, self.max_empty_cells)
        theta = float(self.theta)
        # Below 0 the tail sampler (theta + geometric) is not Z | Z >= theta, and
        # the release would hold about half of the universe anyway.
        if not theta >= 0:
            raise ValueError(f"theta must be >= 0 for the sparse histogram, got theta={self.theta!r}")
        expected = grid.n_cells * noise.tail(theta)
        if expected > MAX_EXPECTED_EMPTY:
            raise ValueError(
                f"theta={self.theta!r} would release about {expected:.3g} empty cells of the "
                f"{grid.n_cells} in the universe; raise theta or leave it to the default"
            )
        return theta


def clean_points(grid: Grid, X: np.ndarray, *, clip: bool = True) -> np.ndarray:
    """The documented per-record rule: drop rows with NaN/inf, clip the rest
    into the public box. Each record's fate depends on that record alone, so
    neighbouring datasets stay neighbouring (or become equal).

    ``clip=False`` skips the copy for backends whose cell keys already clip
    coordinates into the box (the numpy backend: ``Grid.keys_of_points``).
    """
    if not np.isfinite(X).all():
        X = X[np.isfinite(X).all(axis=1)]
    return np.clip(X, grid.lower, grid.upper) if clip else X


def release_histogram(grid: Grid, X, config: MechanismConfig, source, backend=None) -> NoisyHistogram:
    """The epsilon-DP (or (epsilon, delta)-DP) histogram of cell counts."""
    backend = get_backend(backend)
    noise = make_noise(config.noise, config.epsilon)
    kind = config.choose_histogram(grid)
    if isinstance(X, np.ndarray):
        from .backends.numpy_backend import NumpyBackend

        # the numpy backend's keys clip into the box (tested), so skip the copy
        X = clean_points(grid, X, clip=not isinstance(backend, NumpyBackend))
    if kind == "dense":
        if hasattr(backend, "dense_counts"):
            counts = backend.dense_counts(grid, X)
        else:
            cells = backend.count(grid, X)
            counts = np.zeros(grid.shape, dtype=np.int64)
            if len(cells):
                counts[tuple(grid.decode(cells.keys).T)] = cells.counts
        return dense_histogram(grid, counts, noise, source)
    cells = _sorted(backend.count(grid, X))
    if kind == "sparse":
        theta = config.theta_for(grid, noise)
        return sparse_histogram(grid, cells, noise, source, theta)
    if kind == "stability":
        return stability_histogram(grid, cells, noise, source, config.delta)
    raise ValueError(f"histogram must be one of {HISTOGRAMS}, got {kind!r}")


def _sorted(cells):
    """Backends promise sorted unique keys; a custom one that does not would
    break empty-cell sampling and the canonical output order, so enforce it."""
    k = cells.keys
    if k.size < 2:
        return cells
    # void (wide) keys support argsort and ==, not <: compare through argsort
    order = np.argsort(k, kind="stable")
    if not np.array_equal(order, np.arange(k.size)):
        cells.keys, cells.counts = k[order], cells.counts[order]
    if np.any(cells.keys[1:] == cells.keys[:-1]):
        raise ValueError("the backend returned duplicate cell keys")
    return cells


def margin(grid: Grid, hist: NoisyHistogram, config: MechanismConfig) -> tuple[float, float]:
    """(Gamma_low, Gamma_up) for this release: public (histogram kind, theta,
    kappa, |X|, beta); :func:`bounds.margins`.

    Both bound sums of ``kappa`` per-cell errors with a union bound over every
    (sub-)cell; truncating histograms have a lower margin with ``kappa`` times
    the truncation loss and a separate upper margin.
    """
    from .subcells import SubcellLayout

    layout = SubcellLayout(grid, config.subcells)
    theta = hist.theta if hist.kind != "dense" else 0.0
    # hist.epsilon is the epsilon the noise was drawn with (rounded down)
    return _bounds.margins(config.margin, hist.kind, hist.noise, hist.epsilon,
                           layout.kappa, layout.n_events, config.beta, theta)


def fit_spans(X, grid: Grid, min_samples: int, config: MechanismConfig, source,
              *, raise_min_samples: bool = True, backend=None) -> SpanModel:
    """Run the whole mechanism and return the released span model."""
    hist = release_histogram(grid, X, config, source, backend)
    g_low, g_up = margin(grid, hist, config)
    return spans_from_histogram(hist, min_samples, g_low, config.beta, gamma_upper=g_up,
                                raise_min_samples=raise_min_samples, delta=config.delta,
                                subcells=config.subcells, border=config.border,
                                margin=config.margin)
