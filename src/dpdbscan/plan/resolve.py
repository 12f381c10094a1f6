"""Resolve once: public parameters -> the release and its spans, before any
file is read or any budget is spent.

:func:`validated` checks a set of parameter values against the table (every
default comes from there), the rules that tie them together and the core
test's own rules; :func:`resolve` turns the result and the public box into
frozen records (:class:`~dpdbscan.spec.specs.ReleaseSpec`,
:class:`~dpdbscan.spec.specs.SpanSpec`) and, in the automatic mode, its plan.
The estimator, the command line, the forecast and the experiments all go
through here, so a parameter means the same everywhere.

Every choice reads public inputs only: the grid from the bounds, eps and
eta; "auto" sub-cells from the dimension; the "auto" border and margin from
the core test; the histogram from |X|; theta from the noise law and the caps.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cells.grid import MAX_KAPPA, Grid
from ..exceptions import UtilityWarning
from ..laws import noise as laws
from ..laws import zcdp
from ..post.auto import MIN_SAMPLES_LOW
from ..post.coretests import CORE_TESTS, FALLBACK, CoreTest, core_test
from ..spec.parameters import check_units, namer, validate
from ..spec.specs import NoiseSpec, ReleaseSpec, Seed, SpanSpec, UnitBound
from . import autoplan
from .forecast import Forecast, forecast
from .histogram import choose_kind, sparse_theta, stability_theta


def validated(values: Mapping[str, Any], *, cli: bool = False, stacklevel: int = 2) -> dict[str, Any]:
    """Every public parameter, checked and normalised, the ones not given at
    their table default; then the core test's own rules. Reads no data."""
    p = validate(dict(values), cli=cli, stacklevel=stacklevel + 1)
    if p["core"] not in CORE_TESTS:
        shown = f"--core {p['core']}" if cli else f"core={p['core']!r}"
        known = ", ".join(repr(name) for name in CORE_TESTS)
        raise ValueError(f"{namer(cli)('core')} must be one of {known}, got {shown}")
    core_test(p["core"]).check(p, namer(cli), cli)
    return p


@dataclass(frozen=True)
class Resolved:
    """What validated parameters resolve to on a public box.

    Attributes
    ----------
    release : ReleaseSpec
        The one release that spends the budget.
    spans : SpanSpec
        Its post-processing (at the automatic mode's base MinPts when MinPts
        is chosen from the release).
    auto : autoplan.Plan or None
        The automatic mode's plan (eps and/or min_samples "auto").
    random_state : Seed or None
        None: secure randomness.
    """

    release: ReleaseSpec
    spans: SpanSpec
    auto: autoplan.Plan | None
    random_state: Seed | None


def resolve(
    p: Mapping[str, Any],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    units: bool = False,
    cli: bool = False,
    stacklevel: int = 2,
) -> Resolved:
    """The release and spans of :func:`validated` parameters ``p`` in the
    public box ``[lower, upper]``; ``units``: whether the rows carry
    privacy-unit ids (:func:`release_spec`). Public inputs only; warns
    (UtilityWarning) of a grid no core test can use, and of Laplace noise
    at a contribution bound where Gaussian noise would be smaller."""
    check_units(dict(p), units, cli=cli)
    plan = None
    eps, min_samples = p["eps"], p["min_samples"]
    if "auto" in (eps, min_samples):
        plan = autoplan.plan(
            lower, upper, p["eta"], eps, min_samples, p["epsilon"], p["max_cells"], p["n_expected"]
        )
        eps, min_samples = plan.base_eps, plan.min_samples or MIN_SAMPLES_LOW
    check_scale(float(eps), lower, upper, cli=cli)
    grid = Grid(lower, upper, eps, p["eta"])
    test = _usable_test(p["core"], grid, stacklevel + 1)
    k = (2 if grid.d <= 3 else 1) if p["subcells"] == "auto" else int(p["subcells"])
    border = p["border"]
    if border == "auto":
        border = test.default_border(grid.alpha, grid.eta, k)
    margin = p["margin"]
    if test.name != p["core"] and margin not in ("auto", *test.margin_rules):
        margin = "auto"
    spans = SpanSpec(
        min_samples=int(min_samples),
        beta=float(p["beta"]),
        subcells=k,
        margin=test.resolve_margin(margin),
        border=float(border),
        raise_min_samples=bool(p["raise_min_samples"]),
        core=test.name,
    )
    release = release_spec(p, grid, units=units)
    _warn_laplace_units(release, p, namer(cli), stacklevel + 1)
    return Resolved(release, spans, plan, p["random_state"])


def _warn_laplace_units(release: ReleaseSpec, p: Mapping[str, Any], opt, stacklevel: int) -> None:
    """Laplace noise grows as k with the contribution bound, Gaussian noise as
    sqrt(k): say so, with both standard deviations, when the user chose
    Laplace for a person-level release where the Gaussian's is smaller."""
    noise = release.noise
    if release.units is None or noise.kind == "gaussian":
        return
    delta = float(p["delta"]) or 1e-6
    rho = zcdp.rho_for(noise.epsilon, delta)
    gauss = math.sqrt(zcdp.sigma2_for(rho, noise.l2_sensitivity))
    lap = math.sqrt(laws.variance(noise.kind, noise.scale))
    if gauss < lap:
        warnings.warn(
            f"{opt('noise')} {noise.kind} with privacy units: its noise grows with the number of cells a "
            f"unit may add to ({opt('max_cells_per_unit')} {release.units.max_cells_per_unit}), "
            f"to a standard deviation of {lap:.3g} per cell; Gaussian noise grows with its square "
            f"root: {gauss:.3g} at the same epsilon and delta={delta:g}. Use {opt('noise')} gaussian "
            f"(with {opt('delta')} > 0) unless each unit adds to very few cells.",
            UtilityWarning,
            stacklevel=stacklevel + 1,
        )


def check_scale(eps: float, lower: np.ndarray, upper: np.ndarray, *, cli: bool = False) -> None:
    """Refuse an eps at least as large as the public box's longest side
    (public inputs only, before anything is read or spent): every point of
    the box is then within eps of most others, the grid has a handful of
    cells at most, and the release could not separate any clusters. Seen as
    ``--geo --eps 50`` (50 km) over a city."""
    side = float(np.max(np.asarray(upper, dtype=np.float64) - np.asarray(lower, dtype=np.float64)))
    if eps >= side:
        shown = f"--eps {eps:g}" if cli else f"eps={eps:g}"
        raise ValueError(
            f"{shown} is at least the public box's longest side ({side:g}, in the same units): "
            "every point would be within eps of the others and the release could not separate "
            f"clusters, so no budget is spent on it. Use an eps well below the box's size (say "
            f"{side / 20:.3g} or less)"
        )


def _usable_test(name: str, grid: Grid, stacklevel: int) -> CoreTest:
    """The core test ``name``, or the fallback when ``name`` cannot weigh an
    eps-neighbourhood of ``grid`` (public: d and eta); warns either way when
    the neighbourhood is too large for any test."""
    test = core_test(name)
    if grid.kappa > MAX_KAPPA:
        warnings.warn(
            f"in d={grid.d} at eta={grid.eta:g} an eps-neighbourhood has {grid.kappa:,} cells, more than "
            f"any core test can evaluate ({MAX_KAPPA:,}): the release will have no span. "
            "DP-DBSCAN cannot resolve clusters in this many dimensions; use fewer dimensions.",
            UtilityWarning,
            stacklevel=stacklevel + 1,
        )
    elif grid.kappa > test.max_kappa:
        warnings.warn(
            f"in d={grid.d} at eta={grid.eta:g} an eps-neighbourhood has {grid.kappa:,} cells, more "
            f"than the {name} test can weigh ({test.max_kappa:,}): the release uses "
            f"core='{FALLBACK}', whose margin grows with that count and will likely swamp any "
            "cluster. Use fewer dimensions.",
            UtilityWarning,
            stacklevel=stacklevel + 1,
        )
    # public (d, eta): the bound test never enumerates the neighbourhood's cells
    return core_test(FALLBACK) if grid.kappa > test.max_kappa else test


def noise_kind(p: Mapping[str, Any], units: bool) -> str:
    """The noise of a release: the user's, or for "auto" the exact discrete
    Laplace when each row is its own unit and the exact discrete Gaussian
    with privacy units (its noise grows as sqrt(k) with the cells a unit may
    add to, Laplace's as k)."""
    kind = str(p["noise"])
    if kind != "auto":
        return kind
    return "gaussian" if units else "discrete"


def unit_bound(p: Mapping[str, Any], units: bool) -> UnitBound | None:
    """The contribution bound of a person-level release (None: a row is the unit)."""
    if not units:
        return None
    k = p["max_cells_per_unit"]
    if k == "auto":
        raise NotImplementedError("max_cells_per_unit='auto' is resolved by the release (plan.units)")
    return UnitBound(max_cells_per_unit=int(k), max_points_per_cell=int(p["max_points_per_cell"]))


def release_spec(p: Mapping[str, Any], grid: Grid, *, units: bool = False) -> ReleaseSpec:
    """The release of parameters ``p`` on the public ``grid``: its noise, the
    histogram (from |X|) and theta (from the noise law and the caps).

    ``units``: whether the rows carry privacy-unit ids (person-level). Each
    unit then adds to at most k = ``max_cells_per_unit`` cells, at most
    m = ``max_points_per_cell`` to each: the counts have L1 sensitivity k m
    and L2 sensitivity sqrt(k) m (1 and 1 for a row).

    Calibration. Laplace: one count's noise at epsilon / (k m). Gaussian: the
    release is stated as (epsilon, delta) like every other; it is
    rho-zCDP with the largest rho that converts to (epsilon, delta_noise)
    (:func:`dpdbscan.laws.zcdp.rho_for`, the tight conversion) and
    sigma^2 = (sqrt(k) m)^2 / (2 rho). delta_noise is delta, or delta / 2
    when the stability histogram spends the other half on its threshold.
    """
    epsilon, delta = float(p["epsilon"]), float(p["delta"])
    bound = unit_bound(p, units)
    k, m = (bound.max_cells_per_unit, bound.max_points_per_cell) if bound else (1, 1)
    l1, l2 = float(k * m), math.sqrt(k) * m
    kind_noise = noise_kind(p, units)
    kind = choose_kind(p["histogram"], grid, delta)
    delta_threshold = 0.0
    rho = None
    if kind_noise == "gaussian":
        delta_noise = delta / 2 if kind == "stability" else delta
        delta_threshold = delta - delta_noise
        rho = zcdp.rho_for(epsilon, delta_noise)
        # the sampler rounds sigma^2 up (by < 1e-5 relative): its histogram records it
        scale = zcdp.sigma2_for(rho, l2)
    else:
        delta_threshold = delta if kind == "stability" else 0.0
        scale = laws.drawn_scale(kind_noise, epsilon / l1)
    noise = NoiseSpec(
        kind=kind_noise,
        epsilon=epsilon,
        delta=delta,
        scale=scale,
        rho=rho,
        l1_sensitivity=l1,
        l2_sensitivity=l2,
    )
    if kind == "dense":
        theta = float("-inf")
    elif kind == "sparse":
        theta = sparse_theta(p["theta"], grid, kind_noise, scale, p["max_empty_cells"])
    else:
        theta = stability_theta(kind_noise, scale, delta_threshold, step=m, cells=k)
    return ReleaseSpec(
        grid=grid,
        histogram=kind,
        theta=theta,
        noise=noise,
        units=bound,
        delta_spent=delta if (kind == "stability" or kind_noise == "gaussian") else 0.0,
        delta_threshold=delta_threshold,
    )


def forecast_of(
    p: Mapping[str, Any],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    n_expected: float | None = None,
    n_points: float | None = None,
    units: bool = False,
) -> Forecast:
    """What a release with :func:`validated` parameters ``p`` in the public box
    would detect, before anything is spent (:mod:`dpdbscan.plan.forecast`).
    Public inputs only; ``n_expected`` (default ``p["n_expected"]``) is the
    user's guess of the number of points. With ``eps="auto"`` it is the base
    release's forecast (``min_samples="auto"`` at its smallest candidate).

    ``n_points`` (default ``n_expected``): the number of points the
    detectability is measured against, for ``dpdbscan check``, which counts
    them for the data owner's private notes; the automatic plan still uses
    ``n_expected``, as a release does."""
    if n_expected is None:
        n_expected = p["n_expected"]
    r = resolve({**p, "n_expected": n_expected}, lower, upper, units=units, stacklevel=3)
    return forecast(r.release, r.spans, n_expected=n_expected if n_points is None else n_points)


__all__ = ["Resolved", "check_scale", "forecast_of", "release_spec", "resolve", "validated"]
