"""The DP-DBSCAN mechanism: counts -> noisy histogram -> core cells -> spans.

This is the one place where epsilon is spent: :func:`release_histogram`, the
noisy histogram of cell counts. Everything after it is post-processing of its
output (:mod:`dpdbscan.post`) and never reads the points again. Every choice
that shapes the mechanism (grid, theta, dense or sparse) is a function of
public inputs only: bounds, alpha, eta, epsilon, delta, beta and the caps
below.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .cells.grid import MAX_KAPPA, Grid
from .cells.histogram import NoisyHistogram
from .exceptions import UtilityWarning
from .model.spanmodel import SpanModel
from .plan.forecast import Forecast
from .plan.forecast import forecast as _forecast
from .post import auto
from .post.coretests.density import MAX_KAPPA as DENSITY_MAX_KAPPA
from .post.coretests.density import utility_note
from .post.spans import SpanParams, build_spans
from .release.accountant import Accountant
from .release.backends import Backend, resolve_backend
from .release.backends.base import CellCounts, DenseBackend, PointsInput
from .release.histograms import (
    default_theta,
    dense_histogram,
    make_noise,
    sparse_histogram,
    stability_histogram,
    stability_theta,
)
from .release.histograms.noise import Noise
from .release.points import clean_points
from .release.samplers import integers as _random
from .release.samplers.integers import Source

HISTOGRAMS = ("auto", "dense", "sparse", "stability")
DENSE_MAX_CELLS = 1 << 23  # "auto" uses the naive histogram up to this |X|
MAX_EMPTY_CELLS = 1 << 20  # default cap on the expected number of released empty cells
MAX_EXPECTED_EMPTY = 1e8  # refuse an explicit theta that would release more
# DENSITY_MAX_KAPPA: the density test weighs every cell of NB (d <= 6 at eta = 4)

__all__ = [
    "MechanismConfig",
    "release_histogram",
    "fit_spans",
    "release",
    "configure",
    "forecast",
    "clean_points",
    "HISTOGRAMS",
]


@dataclass(frozen=True)
class MechanismConfig:
    """Public parameters of one release (histogram) and of its spans.

    ``epsilon`` ... ``dense_max_cells`` shape the release; ``beta``,
    ``subcells``, ``margin`` and ``border`` only the post-processing.
    """

    epsilon: float
    delta: float = 0.0
    histogram: str = "auto"
    noise: str = "discrete"
    beta: float = 0.5
    theta: float | None = None
    max_empty_cells: float = MAX_EMPTY_CELLS
    dense_max_cells: int = DENSE_MAX_CELLS
    subcells: int = 1
    margin: str | float = "paper"
    border: float = 0.0
    core: str = "bound"

    def choose_histogram(self, grid: Grid) -> str:
        """Dense or sparse from |X| alone (public); stability when asked."""
        if self.histogram != "auto":
            return self.histogram
        return "dense" if grid.n_cells <= self.dense_max_cells else "sparse"

    def theta_for(self, grid: Grid, noise: Noise) -> float:
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

    def release_theta(self, grid: Grid) -> float:
        """theta of the release this configuration makes on ``grid`` (public)."""
        kind = self.choose_histogram(grid)
        if kind == "dense":
            return float("-inf")
        noise = make_noise(self.noise, self.epsilon)
        if kind == "sparse":
            return self.theta_for(grid, noise)
        return stability_theta(noise, self.delta)

    def span_params(self, min_samples: int, raise_min_samples: bool = True) -> SpanParams:
        return SpanParams.from_attributes(self, min_samples=min_samples, raise_min_samples=raise_min_samples)


def release_histogram(
    grid: Grid,
    X: PointsInput,
    config: MechanismConfig,
    source: Source,
    backend: Backend | str | None = None,
) -> NoisyHistogram:
    """The epsilon-DP (or (epsilon, delta)-DP) histogram of cell counts.

    The backend counts the points after the per-record rule (its contract);
    the counts are checked (for duplicate keys, or the dense shape) before
    any noise is added, on every path: a duplicate would let one point change
    a count by more than 1. The dense path draws its noise while the points
    are counted, since the noise does not depend on them.
    """
    backend = resolve_backend(backend)
    noise = make_noise(config.noise, config.epsilon)
    kind = config.choose_histogram(grid)
    if kind not in HISTOGRAMS[1:]:
        raise ValueError(f"histogram must be one of {HISTOGRAMS}, got {kind!r}")
    if kind == "dense":
        if isinstance(backend, DenseBackend):
            # The noise does not depend on the data: it is drawn on a second
            # thread while the points are counted (Cabs: 0.30 s -> 0.18 s).
            with ThreadPoolExecutor(max_workers=1) as pool:
                drawn = pool.submit(noise.sample, source, grid.n_cells)
                counts = backend.dense_counts(grid, X)
                z = drawn.result()
            if counts.shape != grid.shape:
                raise ValueError(
                    f"the backend returned dense counts of shape {counts.shape}, expected {grid.shape}"
                )
            return dense_histogram(grid, counts, noise, source, z)
        else:
            cells = _canonical(backend.count(grid, X))
            counts = np.zeros(grid.shape, dtype=np.int64)
            if len(cells):
                counts[tuple(grid.decode(cells.keys).T)] = cells.counts
        return dense_histogram(grid, counts, noise, source)
    cells = _canonical(backend.count(grid, X))
    if kind == "sparse":
        return sparse_histogram(grid, cells, noise, source, config.theta_for(grid, noise))
    return stability_histogram(grid, cells, noise, source, config.delta)


def _canonical(cells: CellCounts) -> CellCounts:
    """Backends promise sorted unique keys. A custom one that does not would
    break empty-cell sampling and the canonical output order (so sort), or
    let one point count twice (so refuse duplicates)."""
    k = cells.keys
    if k.size < 2:
        return cells
    # void (wide) keys support argsort and ==, not <: compare through argsort
    order = np.argsort(k, kind="stable")
    if not np.array_equal(order, np.arange(k.size)):
        cells = CellCounts(k[order], cells.counts[order])
    if np.any(cells.keys[1:] == cells.keys[:-1]):
        raise ValueError(
            "the backend returned duplicate cell keys; a backend must return "
            "each occupied cell once with its total count"
        )
    return cells


def fit_spans(
    X: PointsInput,
    grid: Grid,
    min_samples: int,
    config: MechanismConfig,
    source: Source,
    *,
    raise_min_samples: bool = True,
    backend: Backend | str | None = None,
) -> SpanModel:
    """Run the whole mechanism: release the histogram (epsilon is spent here),
    then post-process it into the span model."""
    hist = release_histogram(grid, X, config, source, backend)
    params = config.span_params(min_samples, raise_min_samples)
    return SpanModel.from_spans(hist, build_spans(hist, params), params, delta=config.delta)


def configure(p: dict[str, Any], grid: Grid) -> tuple[MechanismConfig, float]:
    """The mechanism's configuration for validated parameters ``p`` (see
    :func:`dpdbscan.spec.parameters.validate`) on the public ``grid``, and the delta the
    release will spend. Every choice reads public inputs only: "auto" sub-cells
    from the dimension, the "auto" border from alpha and eta, the histogram
    from |X|."""
    alpha, eta = grid.alpha, grid.eta
    core = p.get("core", "density")
    if grid.kappa > MAX_KAPPA:
        warnings.warn(
            f"in d={grid.d} at eta={eta:g} an eps-neighbourhood has {grid.kappa:,} cells, more than "
            f"any core test can evaluate ({MAX_KAPPA:,}): the release will have no span. "
            "DP-DBSCAN cannot resolve clusters in this many dimensions; use fewer dimensions.",
            UtilityWarning,
            stacklevel=3,
        )
    elif core == "density" and grid.kappa > DENSITY_MAX_KAPPA:
        warnings.warn(
            f"in d={grid.d} at eta={eta:g} an eps-neighbourhood has {grid.kappa:,} cells, more "
            f"than the density test can weigh ({DENSITY_MAX_KAPPA:,}): the release uses "
            "core='bound', whose margin grows with that count and will likely swamp any "
            "cluster. Use fewer dimensions.",
            UtilityWarning,
            stacklevel=3,
        )
    if core == "density" and grid.kappa > DENSITY_MAX_KAPPA:
        # public (d, eta): the density test's weights cover every cell of an
        # eps-neighbourhood, far too many here; the bound test never enumerates them
        core = "bound"
        rule = p.get("margin", "auto")
        p = {**p, "margin": rule if rule in ("auto", "chernoff", "paper") else "auto"}
    k = p.get("subcells", "auto")
    k = (2 if grid.d <= 3 else 1) if k == "auto" else int(k)
    border = p.get("border", "auto")
    if border == "auto":
        # density: DBSCAN's border rule, alpha around core centres; bound: half
        # a sub-cell's diagonal around core sub-cells
        border = alpha if core == "density" else eta * alpha / (8.0 * k)
    rule = p.get("margin", "auto")
    if rule == "auto":
        rule = 1.0 if core == "density" else "chernoff"
    delta = p.get("delta", 0.0)
    config = MechanismConfig(
        epsilon=p["epsilon"],
        delta=delta,
        histogram=p.get("histogram", "auto"),
        noise=p.get("noise", "discrete"),
        beta=p.get("beta", 0.1),
        theta=p.get("theta"),
        max_empty_cells=p.get("max_empty_cells", MAX_EMPTY_CELLS),
        subcells=k,
        margin=rule,
        border=float(border),
        core=core,
    )
    if config.histogram == "auto" and delta > 0 and config.choose_histogram(grid) == "sparse":
        config = replace(config, histogram="stability")
    spent_delta = delta if config.choose_histogram(grid) == "stability" else 0.0
    return config, spent_delta


def _auto_model(
    hist: NoisyHistogram, config: MechanismConfig, plan: auto.Plan, p: dict[str, Any]
) -> SpanModel:
    """The spans at the (eps, MinPts) chosen from the release (post-processing).

    eps is chosen after the noise is drawn, among ``c = len(plan.eps)``
    candidates, and the accuracy event of the guarantee depends on eps: every
    candidate's margins take beta / c, so that the events of all candidates
    hold together, hence the chosen one's, with probability >= 1 - beta (a
    union bound; the model's guarantee reports it). The events do not depend
    on MinPts, so choosing MinPts costs nothing.
    """
    config = replace(config, beta=config.beta / len(plan.eps))
    choice = auto.choose_params(hist, config.span_params(plan.min_samples or 1), plan)
    alpha, m = choice["alpha"], choice["min_samples"]
    border = alpha if p.get("border", "auto") == "auto" else config.border
    params = replace(config.span_params(m), border=float(border))
    h = hist.on_grid(hist.grid.at_alpha(alpha))
    model = SpanModel.from_spans(h, build_spans(h, params), params, delta=config.delta)
    model.release = {"eps": float(hist.grid.alpha), "eta": float(hist.grid.eta), "min_samples": m}
    model.auto = {
        "criterion": auto.CRITERION,
        "base_eps": float(hist.grid.alpha),
        "eps": alpha,
        "min_samples": m,
        "score": choice["score"],
        "clusters": choice["clusters"],
        "eps_candidates": choice["eps_candidates"],
        "min_samples_candidates": choice["min_samples_candidates"],
        "chosen": [
            k for k, v in (("eps", len(plan.eps) > 1), ("min_samples", plan.min_samples is None)) if v
        ],
    }
    return model


def forecast(
    p: dict[str, Any],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    n_expected: float | None = None,
    n_points: float | None = None,
) -> Forecast:
    """What a release with validated parameters ``p`` in the public box would
    detect, before anything is spent (:mod:`dpdbscan.plan.forecast`): the
    configuration :func:`configure` chooses, then its margins. Public inputs
    only; ``n_expected`` is the user's guess of the number of points. With
    ``eps="auto"`` it is the base release's forecast (``min_samples="auto"``
    at its smallest candidate). ``n_expected`` defaults to ``p["n_expected"]``.

    ``n_points`` (default ``n_expected``): the number of points the
    detectability is measured against, for ``dpdbscan check``, which counts
    them for the data owner's private notes; the automatic plan still uses
    ``n_expected``, as a release does."""
    if n_expected is None:
        n_expected = p.get("n_expected")
    _, p = _planned(p, lower, upper, n_expected)
    grid = Grid(lower, upper, p["eps"], p["eta"])
    config, _ = configure(p, grid)
    return _forecast_of(grid, config, p, n_expected if n_points is None else n_points)


def _planned(
    p: dict[str, Any], lower: np.ndarray, upper: np.ndarray, n_expected: float | None
) -> tuple[auto.Plan | None, dict[str, Any]]:
    """With ``eps`` and/or ``min_samples`` "auto": the automatic mode's plan
    (public inputs only, :func:`dpdbscan.post.auto.plan`) and ``p`` at its base
    release (``min_samples="auto"`` at its smallest candidate). Otherwise
    ``(None, p)``."""
    if "auto" not in (p["eps"], p["min_samples"]):
        return None, p
    plan = auto.plan(
        lower,
        upper,
        p["eta"],
        p["eps"],
        p["min_samples"],
        p["epsilon"],
        p.get("max_cells", auto.MAX_CELLS),
        n_expected,
    )
    return plan, {**p, "eps": plan.base_eps, "min_samples": plan.min_samples or auto.MIN_SAMPLES_LOW}


def _forecast_of(
    grid: Grid, config: MechanismConfig, p: dict[str, Any], n_expected: float | None = None
) -> Forecast:
    params = config.span_params(p["min_samples"], p.get("raise_min_samples", True))
    return _forecast(
        grid,
        config.choose_histogram(grid),
        config.noise,
        config.epsilon,
        config.release_theta(grid),
        params,
        n_expected=n_expected,
        max_empty_cells=config.max_empty_cells,
    )


def release(
    X: PointsInput,
    lower: np.ndarray,
    upper: np.ndarray,
    p: dict[str, Any],
    *,
    backend: Backend,
    accountant: Accountant | None = None,
    stacklevel: int = 2,
) -> SpanModel:
    """Release DP spans of ``X`` inside the public box ``[lower, upper]`` with
    validated parameters ``p``: the one entry point of the estimator and the
    command line. Checks the accountant before and charges it after.

    With ``eps`` and/or ``min_samples`` "auto" the release is made at a base
    resolution chosen from public inputs (:func:`dpdbscan.post.auto.plan`) and
    the parameters are then chosen from it (post-processing, no further
    budget); the model records the choice (``model.auto``).
    """
    plan, p = _planned(p, lower, upper, p.get("n_expected"))
    grid = Grid(lower, upper, p["eps"], p["eta"])
    config, spent_delta = configure(p, grid)
    fc = _forecast_of(grid, config, p)
    for note in fc.slow:
        # public (kappa, |X|, d): said before anything is counted or spent
        warnings.warn(note, UtilityWarning, stacklevel=stacklevel + 1)
    if accountant is not None:
        accountant.check(config.epsilon, spent_delta)
    source = _random.make_source(p.get("random_state"))
    if plan is None:
        model = fit_spans(
            X,
            grid,
            p["min_samples"],
            config,
            source,
            raise_min_samples=p.get("raise_min_samples", True),
            backend=backend,
        )
    else:
        hist = release_histogram(grid, X, config, source, backend)
        model = _auto_model(hist, config, plan, p)
        p = {**p, "min_samples": model.min_samples}
        fc = _forecast_of(model.histogram_grid, replace(config, border=model.border), p)
    model.delta = spent_delta
    if accountant is not None:
        accountant.spend(config.epsilon, spent_delta)
    if model.core == "density":
        # public parameters and the release only (post-processing): safe to say
        assert model.histogram is not None
        note = utility_note(
            model.histogram,
            model.core_keys,
            model.subcells,
            model.n_spans,
            p["min_samples"],
            model.gamma,
            noise_std=fc.noise_std,
        )
        if note:
            warnings.warn(note, UtilityWarning, stacklevel=stacklevel + 1)
    elif model.n_spans == 0:
        # Post-processing of the release only: safe to say.
        warnings.warn(
            f"the release has no span: a cell is core only when about "
            f"{p['min_samples'] + model.gamma:.0f} noisy points (min_samples={p['min_samples']} "
            f"plus the margin Gamma={model.gamma:.1f} for epsilon={config.epsilon:g}) lie within "
            "eps of it. Small or sparse data need a larger eps, a larger epsilon or fewer "
            "dimensions; see docs/accuracy.md on small data sets.",
            UtilityWarning,
            stacklevel=stacklevel + 1,
        )
    return model
