"""Resolve once: public parameters -> the release and its spans, before any
file is read or any budget is spent.

:func:`validated` checks a set of parameter values against the table (every
default comes from there), the rules that tie them together and the core
test's own rules; :func:`resolve` turns the result and the public box into
frozen records (:class:`~dpdbscan.params.specs.ReleaseSpec`,
:class:`~dpdbscan.params.specs.SpanSpec`) and, in the automatic mode, its plan.
The estimator, the command line, the forecast and the experiments all go
through here, so a parameter means the same everywhere.

Every choice reads public inputs only: the grid from the bounds, eps and
eta; "auto" sub-cells from the dimension; the "auto" border and margin from
the core test; the histogram from |X|; theta from the noise law and the caps.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from ..cells.grid import MAX_KAPPA, Grid
from ..exceptions import UtilityWarning
from ..laws import noise as laws
from ..laws import zcdp
from ..params import sizing
from ..params.parameters import check_units, grid_eta, namer, validate
from ..params.specs import (
    NoiseSpec,
    ReleaseSpec,
    SecondRelease,
    Seed,
    SizeEstimate,
    SpanSpec,
    UnitBound,
    UnitChoice,
    split_delta,
)
from ..post.auto import MIN_SAMPLES_LOW
from ..post.coretests import CORE_TESTS, FALLBACK, CoreTest, core_test
from . import autoplan
from . import units as unit_plan
from .coarserelease import coarse_release
from .detection import unit_forecast
from .histogramchoice import choose_kind, sparse_theta, stability_theta
from .outlook import Forecast, forecast


def validated(
    values: Mapping[str, Any], *, cli: bool = False, stacklevel: int = 2, unit_name: str | None = None
) -> dict[str, Any]:
    """Every public parameter, checked and normalised, the ones not given at
    their table default; then the core test's own rules. Reads no data.
    ``unit_name``: the unit column's public name, for the warnings' words."""
    p = validate(dict(values), cli=cli, stacklevel=stacklevel + 1, unit_name=unit_name)
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
    choices : tuple of ReleaseSpec
        With ``max_cells_per_unit="auto"``: the release at each candidate k
        (:mod:`dpdbscan.plan.units`), one of which the mechanism makes after
        choosing k privately; ``release`` is then the last (largest k), which
        shares with every candidate all that does not depend on k (the grid,
        the histogram, the spend) and stands in for them before the choice.
        Empty otherwise.
    """

    release: ReleaseSpec
    spans: SpanSpec
    auto: autoplan.Plan | None
    random_state: Seed | None
    choices: tuple[ReleaseSpec, ...]


def resolve(
    p: Mapping[str, Any],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    units: bool = False,
    cli: bool = False,
    stacklevel: int = 2,
    places: float | None = None,
    size_estimate: float | None = None,
) -> Resolved:
    """The release and spans of :func:`validated` parameters ``p`` in the
    public box ``[lower, upper]``; ``units``: whether the rows carry
    privacy-unit ids (:func:`release_spec`); ``places``: the place prior of
    a geographic fit (:func:`dpdbscan.plan.autoplan.place_extent`), which
    sets the automatic mode's base at person level when it selects levels
    (:func:`dpdbscan.plan.autoplan.plan`). Public inputs only; warns
    (UtilityWarning) of a grid no core test can use, and of Laplace noise
    at a contribution bound where Gaussian noise would be smaller.

    ``size_estimate``: the automatic mode's DP count of the points, once
    made (:func:`dpdbscan.plan.autoplan.counts_points` says when the plan
    makes one; the release's ``size_estimate`` records its share). Before
    the count the release stands on the grid for ASSUMED_N points, as it
    does when the count is SMALL_N or more (in 3-D and up: LARGE_N or
    less). In 3-D above LARGE_N the base is finer than the count's
    (:func:`dpdbscan.params.sizing.finer_n`); in 3-D from FINER_3D_FROM to
    LARGE_N it is the finer base of a count of LARGE_N, and the spans join
    core sub-cells only where they share a face
    (:func:`dpdbscan.plan.autoplan.joins_faces`)."""
    check_units(dict(p), units, cli=cli)
    plan = None
    counted = False
    join = "eps"
    eps, min_samples = p["eps"], p["min_samples"]
    if "auto" in (eps, min_samples):
        # the place prior holds where the spans are selected at their own levels
        prior = places if p["selection"] != "flat" and min_samples == "auto" else None
        d = np.asarray(lower).size
        counted = autoplan.counts_points(eps, p["n_expected"], units, places)
        finer = sizing.finer_n(size_estimate, d) if counted else None
        plan = autoplan.plan(
            lower,
            upper,
            grid_eta(p["eta"]),
            eps,
            min_samples,
            p["epsilon"],
            p["max_cells"],
            finer or (autoplan.sized_n(size_estimate, d) if counted else p["n_expected"]),
            places=prior,
            units=units,
            kappa=autoplan.candidate_kappa(size_estimate, d) if counted else autoplan.MAX_CANDIDATE_KAPPA,
        )
        # 3-D below a count of LARGE_N: spans join core sub-cells sharing a face
        join = "face" if counted and autoplan.joins_faces(size_estimate, d) else join
        eps, min_samples = plan.base_eps, plan.min_samples or MIN_SAMPLES_LOW
    check_scale(float(eps), lower, upper, cli=cli)
    grid = Grid(lower, upper, eps, grid_eta(p["eta"]))
    test = _usable_test(p["core"], grid, stacklevel + 1)
    # 7-D/8-D: the sparse release on cells twice as wide (results/coarse78/RULE.md)
    grid = coarse_release(
        grid,
        p,
        units=units,
        automatic=plan is not None,
        density=test.filters_noise_spans,
        theta_of=lambda g: release_spec(p, g, fixed_density=True).theta,
    )
    k = (2 if grid.d <= 3 else 1) if p["subcells"] == "auto" else int(p["subcells"])
    border = p["border"]
    if border == "auto":
        border = test.default_border(grid.eps, grid.eta, k)
    margin = p["margin"]
    if test.name != p["core"] and margin not in ("auto", *test.margin_rules):
        margin = "auto"
    spans = SpanSpec(
        min_samples=int(min_samples),
        beta=float(p["beta"]),
        subcells=k,
        margin=test.resolve_margin(margin),
        border=float(border),
        border_cells="any",
        raise_min_samples=bool(p["raise_min_samples"]),
        core=test.name,
        join=join,
    )
    choices: tuple[ReleaseSpec, ...] = ()
    second_units = units and autoplan.second_applies_units(grid.d, noise_kind(p, units), p["eps"])
    if units and p["max_cells_per_unit"] == "auto":
        choices = tuple(
            release_spec(p, grid, units=True, k=k, second_units=second_units)
            for k in unit_plan.candidates(grid)
        )
        release = choices[-1]
    else:
        release = release_spec(
            p,
            grid,
            units=units,
            count=counted,
            size_estimate=size_estimate,
            fixed_density=plan is None and test.filters_noise_spans,
            second_units=second_units,
        )
    _warn_laplace_units(release, p, namer(cli), stacklevel + 1)
    return Resolved(release, spans, plan, p["random_state"], choices)


def costliest(
    r: Resolved,
    p: Mapping[str, Any],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    units: bool = False,
    cli: bool = False,
    places: float | None = None,
) -> ReleaseSpec:
    """The release whose cost bounds that of every release ``r`` may become,
    to be charged before the data are read: ``r.release``, unless a DP count
    of the points is still to size its grid (the automatic mode,
    :func:`dpdbscan.plan.autoplan.counts_points`) and the largest grid a count
    can give, at ``max_cells`` cells, takes another histogram: with delta > 0
    and histogram "auto", the stability histogram above
    :data:`~dpdbscan.plan.histogramchoice.DENSE_MAX_CELLS` cells, which costs
    (epsilon, delta) where the dense release's Laplace noise costs (epsilon,
    0), and which is not zCDP. Then that release. A grid grows with the
    count, so the histogram of every count is the one of the pre-count grid
    or of the largest. Public inputs only; the count's noise is not read."""
    size = r.release.size_estimate
    if size is None or size.value is not None:
        return r.release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # resolve(...) said them of r
        largest = resolve(
            p, lower, upper, units=units, cli=cli, places=places, size_estimate=math.inf
        ).release
    return largest if largest.histogram != r.release.histogram else r.release


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
            f"clusters, so nothing is released. Use an eps well below the box's size (say "
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


def unit_bound(p: Mapping[str, Any], units: bool, k: int | None = None) -> UnitBound | None:
    """The contribution bound of a person-level release (None: a row is the
    unit); with ``max_cells_per_unit="auto"``, the bound at the candidate
    ``k`` (:mod:`dpdbscan.plan.units`)."""
    if not units:
        return None
    given = p["max_cells_per_unit"]
    if (given == "auto") != (k is not None):
        raise ValueError("a candidate k goes with max_cells_per_unit='auto', and only with it")
    cells = int(k if k is not None else given)
    return UnitBound(
        max_cells_per_unit=cells,
        max_points_per_cell=int(p["max_points_per_cell"]),
        cell_choice=str(p["cell_choice"]),
    )


def _second_rule() -> dict[str, Any]:
    """Release two's rule constants (:data:`dpdbscan.plan.autoplan.SECOND_RULE`)."""
    return dict(autoplan.SECOND_RULE)


def _split_rho(rho: float, share: float) -> tuple[float, float]:
    """(rho of the choice of k, rho of the noise): ``share`` of ``rho`` and the
    rest, rounded so that the two add up to no more than ``rho`` (an epsilon
    splits the same way)."""
    choice = rho * share
    noise = rho - choice
    while Fraction(noise) + Fraction(choice) > Fraction(rho):
        noise = math.nextafter(noise, 0.0)
    return choice, noise


def release_spec(
    p: Mapping[str, Any],
    grid: Grid,
    *,
    units: bool = False,
    k: int | None = None,
    count: bool = False,
    size_estimate: float | None = None,
    fixed_density: bool = False,
    second_units: bool = False,
) -> ReleaseSpec:
    """The release of parameters ``p`` on the public ``grid``: its noise, the
    histogram (:func:`dpdbscan.plan.histogramchoice.choose_kind`) and theta
    (from the noise law and the caps).

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

    ``k``: with ``max_cells_per_unit="auto"``, the release at that candidate
    (:func:`resolve` makes one per candidate). The private choice of k then
    spends :data:`dpdbscan.plan.units.SHARE` of rho and the noise is
    calibrated to the rest; the total rho is what the release spends and
    records (``noise.rho``), the choice's part in ``unit_choice``.

    ``count``: the automatic mode counts the points first
    (:func:`dpdbscan.plan.autoplan.counts_points`, event-level only): the
    count spends :data:`dpdbscan.plan.autoplan.COUNT_SHARE` of epsilon
    (Laplace; basic composition) or of rho (Gaussian; zCDP composition) at
    sensitivity 1, and the histogram's noise is calibrated to the rest; the
    release is stated with the whole (epsilon, delta). ``size_estimate``:
    the count, once made (recorded in ``size_estimate.value``).

    ``fixed_density``: eps and MinPts are the user's (not the automatic
    mode's plan) and the core test is the density test; with ``units`` false
    and delta = 0 the "auto" histogram then also reads d and kappa
    (:func:`dpdbscan.plan.histogramchoice.choose_kind`).

    ``second_units``: a person-level automatic fit makes release two
    (:func:`dpdbscan.plan.autoplan.second_applies_units`; docs/privacy.md
    4.10): with Gaussian noise it spends
    :data:`dpdbscan.plan.autoplan.SECOND_SHARE` of rho, at release one's L2
    sensitivity sqrt(k) m, and the histogram's noise is calibrated to the
    rest (after the choice of k's share, if any).
    """
    epsilon, delta = float(p["epsilon"]), float(p["delta"])
    chosen = k is not None
    bound = unit_bound(p, units, k)
    kind_noise = noise_kind(p, units)
    kind = choose_kind(p["histogram"], grid, delta, fixed_density=fixed_density and not units)
    rhos = None  # Gaussian: (the rho spent, the noise's part of it)
    choice = None
    size = None
    second = None
    if chosen and kind_noise != "gaussian":
        raise ValueError("max_cells_per_unit='auto' chooses k for Gaussian noise only")
    if count and (units or chosen):
        raise ValueError("the automatic mode counts the points of event-level releases only")
    delta_noise, delta_threshold = split_delta(kind, kind_noise, delta)
    epsilon_noise = epsilon
    if kind_noise == "gaussian":
        rho = zcdp.rho_for(epsilon, delta_noise)
        rhos = (rho, rho)
        if chosen:
            rho_choice, rho_noise = _split_rho(rho, unit_plan.SHARE)
            rhos = (rho, rho_noise)
            choice = UnitChoice(candidates=unit_plan.candidates(grid), share=unit_plan.SHARE, rho=rho_choice)
        if second_units and bound is not None:
            # release two (docs/privacy.md 4.10) takes its share of the whole rho from the
            # histogram's: choice of k + histogram + release two <= rho
            share = autoplan.SECOND_UNITS_SHARE
            rho_second, rho_noise = _split_rho(rhos[1], share * rho / rhos[1])
            rhos = (rho, rho_noise)
            l2 = math.sqrt(bound.max_cells_per_unit) * bound.max_points_per_cell
            second = SecondRelease(
                share=share,
                epsilon=epsilon * share,
                fine=autoplan.SECOND_UNITS_FINE,
                **_second_rule(),
                noise="gaussian",
                sigma2=zcdp.sigma2_for(rho_second, l2),
                rho=rho_second,
            )
        if count:
            rho_count, rho_noise = _split_rho(rho, autoplan.COUNT_SHARE)
            rhos = (rho, rho_noise)
            sigma2 = zcdp.sigma2_for(rho_count, 1.0)
            size = SizeEstimate(autoplan.COUNT_SHARE, kind_noise, sigma2, rho_count, size_estimate)
    elif count:
        epsilon_count, epsilon_noise = _split_rho(epsilon, autoplan.COUNT_SHARE)
        scale = laws.drawn_scale(kind_noise, epsilon_count)
        size = SizeEstimate(autoplan.COUNT_SHARE, kind_noise, scale, None, size_estimate)
        if autoplan.second_applies(grid.d, size_estimate, kind_noise):
            # release two (docs/privacy.md 4.10) takes its share of the whole
            # epsilon from the histogram's: count + histogram + release two <= epsilon
            assert size_estimate is not None  # second_applies
            share = autoplan.second_share(size_estimate)
            epsilon_second, epsilon_noise = _split_rho(epsilon_noise, share * epsilon / epsilon_noise)
            second = SecondRelease(
                share=share,
                epsilon=laws.drawn_scale("discrete", epsilon_second),
                fine=autoplan.second_fine(size_estimate),
                **_second_rule(),
                noise="discrete",
                sigma2=0.0,
                rho=0.0,
            )
    noise = NoiseSpec.calibrated(kind_noise, epsilon_noise, delta, bound, rhos)
    if epsilon_noise != epsilon:
        # stated with the whole epsilon: the count spent the rest
        noise = replace(noise, epsilon=epsilon)
    if kind == "dense":
        theta = float("-inf")
    elif kind == "sparse":
        theta = sparse_theta(
            p["theta"],
            grid,
            kind_noise,
            noise.scale,
            p["max_empty_cells"],
            coarse=fixed_density and not units and delta == 0,
        )
    else:
        k, m = (bound.max_cells_per_unit, bound.max_points_per_cell) if bound else (1, 1)
        theta = stability_theta(kind_noise, noise.scale, delta_threshold, step=m, cells=k)
    return ReleaseSpec(
        grid=grid,
        histogram=kind,
        theta=theta,
        noise=noise,
        units=bound,
        unit_choice=choice,
        size_estimate=size,
        second=second,
    )


def forecast_of(
    p: Mapping[str, Any],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    n_expected: float | None = None,
    n_points: float | None = None,
    units: bool | None = None,
    n_units_expected: float | None = None,
    eps_ladder: Sequence[float] | None = None,
    cli: bool = False,
    places: float | None = None,
) -> Forecast:
    """What a release with :func:`validated` parameters ``p`` in the public box
    would detect, before anything is spent (:mod:`dpdbscan.plan.outlook`).
    Public inputs only; ``n_expected`` (default ``p["n_expected"]``) is the
    user's guess of the number of points. With ``eps="auto"`` it is the base
    release's forecast (``min_samples="auto"`` at its smallest candidate).

    ``n_points`` (default ``n_expected``): the number of points the
    detectability is measured against, for ``dpdbscan check``, which counts
    them for the data owner's private notes; the automatic plan still uses
    ``n_expected``, as a release does.

    Person-level (``units``; default: whether ``max_cells_per_unit`` is
    given): the forecast's ``units`` say what the release detects in units
    (:mod:`dpdbscan.plan.detection`) at its eps and at each eps of
    ``eps_ladder`` (default: eps x 1/4, 1/2, 1, 2, 4, those below the box's
    longest side); ``n_units_expected`` is the user's public guess of the
    number of units. ``cli``: messages name the command line's options;
    ``places``: the place prior of a geographic fit, as :func:`resolve`
    takes it (the automatic mode's base at person level)."""
    opt = namer(cli)
    if n_expected is None:
        n_expected = p["n_expected"]
    if units is None:
        units = p["max_cells_per_unit"] is not None
    if units and p["max_cells_per_unit"] == "auto":
        raise ValueError(
            f"the forecast needs {opt('max_cells_per_unit')} as a number: 'auto' chooses it from "
            "the data when fitting; forecast the values of k you have in mind"
        )
    if not units and (n_units_expected is not None or eps_ladder is not None):
        given = "--n-units-expected or --eps-ladder" if cli else "n_units_expected or eps_ladder"
        raise ValueError(
            f"{given} forecast a person-level release: give {opt('max_cells_per_unit')} (the most "
            "cells one unit adds to)"
        )
    r = resolve(
        {**p, "n_expected": n_expected}, lower, upper, units=units, cli=cli, stacklevel=3, places=places
    )
    fc = forecast(r.release, r.spans, n_expected=n_expected if n_points is None else n_points)
    if not units:
        return fc
    base = float(r.release.grid.eps)
    side = float(np.max(np.asarray(upper, dtype=np.float64) - np.asarray(lower, dtype=np.float64)))
    ladder = [base * 2.0**j for j in range(-2, 3)] if eps_ladder is None else [float(e) for e in eps_ladder]
    ladder = sorted({e for e in ladder if e < side or eps_ladder is not None} | {base})
    releases = []
    for e in ladder:
        if e == base:
            releases.append((r.release, r.spans))
            continue
        with warnings.catch_warnings():
            # the release's own eps has warned already; a ladder step is a what-if
            warnings.simplefilter("ignore", UtilityWarning)
            step = resolve({**p, "eps": e, "n_expected": n_expected}, lower, upper, units=True, cli=cli)
        releases.append((step.release, step.spans))
    return replace(fc, units=unit_forecast(releases, ladder.index(base), n_units_expected))


__all__ = ["Resolved", "check_scale", "costliest", "forecast_of", "release_spec", "resolve", "validated"]
