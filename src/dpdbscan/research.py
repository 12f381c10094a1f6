"""Research hooks: the parts of the mechanism that experiments/ and benchmarks/ study.

Not the library's API. The experiments and benchmarks of this repository look
inside the mechanism (the counting floor, the noise samplers, the density
field, spans over a ladder of (eps, MinPts) from one release) and take those
parts from this module and from nowhere else inside the package, so that the
package can be reorganised by keeping this one module working. **Everything
here is for research and may change or go away without notice**; to use the
library, use :class:`dpdbscan.DPDBSCAN` and :class:`dpdbscan.SpanModel`. Each
name is re-exported from its home in the package, where its docstring says
how it works:

Counting and noise (benchmarks)
    ``run_length``: unique keys and counts of sorted cell keys (the counting floor).
    ``SecureSource``: the secure generators (the OS's; OpenSSL's for large draws), the default noise source.
    ``SeededSource``: a seeded, reproducible and NOT secure noise source.
    ``discrete_laplace``: exact discrete Laplace draws at a rational epsilon.
    ``rational_epsilon``: the rational epsilon (rounded down) that noise is drawn with.
    ``discrete_gaussian``: exact discrete Gaussian draws N_Z(0, sigma^2).
    ``discrete_gaussian_tail``: exact draws of Z | Z >= k (released empty cells).
    ``floor_sigma``: floor(sigma) of a rational sigma^2 (the Gaussian's proposal).
    ``dask_backend``: a Dask backend instance (needs the ``dask`` extra).
    ``read_input``: points of a file by the command line's reader.

Post-processing of one release (studies of the density test and the automatic mode)
    ``density_field``: the density core test's field (every MinPts from one pass).
    ``DensityField``: its class (``thresholds(m)``: MinPts + the margin per sub-position).
    ``ball_weights``: the density test's weights W(q, Y) per sub-position and offset.
    ``cell_pairs``: the sparse path's self-join of released cells (``CellIndex``,
    ``OffsetWeights``, ``offset_codes``, ``chebyshev_half_pairs``; benchmarks/bench_join.py).
    ``merge_centres``: span labels of core sub-cells merged by centre distance.
    ``span_regions``: the sub-cells each span claims within a border radius.
    ``predict_spans``: span labels of points from released regions (predict's rule).
    ``ladder_sweep``: spans at every (alpha, MinPts) of a grid from one release.
    ``ladder_stability``: agreement of each grid point's spans with its neighbours'.
    ``auto_choose``: the automatic mode's label-free choice of (alpha, MinPts).
    ``auto_base_eps``: the smallest eps whose grid has at most a number of cells.
    ``AUTO_MAX_CELLS``: the automatic mode's default cap on its base release's cells.
    ``auto_points_per_cell``: a block in which the automatic mode's points per
    base cell take another value.
    ``finer_3d_from``: a block in which the automatic mode's 3-D base below a
    DP count of 20,000 is sized for another number of points.
    ``second_release_where``: a block in which the automatic mode makes its
    release two (docs/privacy.md 4.10) from other DP counts, in other
    dimensions, or with another f (the spirals study).
    ``span_parents``: the span of a lower MinPts level holding each span of a higher one.
    ``levels_select``: spans selected at their own levels from one release (the design study).
    ``levels_tree``: the condensed tree and selection of one alpha's MinPts ladder.
    ``levels_record``: what the model records of a level selection (``auto``).
    ``core_test``: the core test of a name (its spans, border and guarantee words).
    ``remodel``: a model with the spans of another selection from its own release.
    ``levels_finish``: the selected spans of a tree.
    ``levels_alpha_scores``: every candidate alpha's total selected stability.
    ``levels_ladder``: the MinPts ladder of a release.
    ``levels_unit_mass``: the most one unit adds to a release's total (k m).
    ``noise_variance``: the variance of one noise term of a release (its law and scale).
    ``levels_scale``: the level of each partition on the stability scale.
    ``ownscale_widen``, ``OWNSCALE_DIMS``: the 2-D own-alpha widening of a
    selection by the larger candidates' (and the dimensions it runs in).
    ``second_release``: the module of the automatic mode's release two (its
    record, keep rule, split and ``Grid``); ``second_rule``: the keep rule's
    constants (a copy): the strands-join study replays the rule on recorded
    releases.
    ``person_second``: release two at person level on or off inside a block.
    ``person_base_3d``: a person-level 3-D automatic fit's base, eps ladder and
    join set inside a block.
    ``span_noise_filter``: the density test's filter of spans that the noise
    alone explains on (the default) or off inside a block; ``noise_spans``:
    which spans of a release it drops; ``empty_sum_quantile``: its quantile.
    ``noiseless_twin``: the spans a fitted model's release would give without
    noise (the same grid, contribution bound and bounding key; exact counts;
    the same core test), the reference of accuracy studies.
    ``NoisyHistogram``, ``NumpyBackend``: a release's histogram (to build an
    exact one) and the in-memory counting backend.
    ``weighted_sums_at``: the density test's E~(q) at given cells of a release;
    ``density_margin``: its ball weights and margin m(q) for a release's public fields.
    ``cell_log_masses``, ``shown_share``, ``ball_share``: the parts of the
    forecast's cluster limit (``plan.clusterlimit``; benchmarks/diagnose_hd.py).

Traces and units (the places studies' ground truth, recomputed from the private file)
    ``count_units``, ``BoundingKey``, ``UnitBound``, ``make_source``: the
    per-unit contribution bound's cell counts, with its key, bound and noise source.
    ``offered_k``: the private choice of k offered one candidate inside a block.
    ``factorize``: each row's unit as a code, read id by id (the release's own reading).
    ``parse_times``: a time column (unix seconds, ISO text, timestamps) as unix seconds.
    ``event_rows``: the rows that are stops or trip ends, given each row's unit code.
    ``stop_rows``, ``trace_order``: the stops' runs before the straight-on rule, and the
    rows in each unit's time order (``experiments.jam_cause``).
    ``events_rows``: the same for every unit of a file (what ``--stops``/``--trip-ends`` count).
    ``Periods``: the calendar periods of a series over time (``--per``).

Geometry and figures (the experiments' data and pictures)
    ``Equirectangular``: lon/lat <-> km, the library's projection.
    ``projection_of``: the projection a saved `--geo` model was made in (None otherwise).
    ``format_km``: a length in km as text ("50 m", "1.2 km").
    ``plot_labels``, ``plot_histogram``, ``plot_neighbour_sums``, ``plot_spans``,
    ``plot_model``, ``plot_condensed_tree``: the library's figures (``dpdbscan plot``).
    ``save_figure``: write a figure the way ``dpdbscan fit`` writes its picture.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .cells import pairs as cell_pairs
from .cells.histogram import NoisyHistogram
from .files import read_input
from .files.unitids import read_units
from .geometry.projection import Equirectangular, format_km, projection_of
from .laws.noise import variance as noise_variance
from .model.build import model_of
from .model.predict import predict_spans, span_regions
from .model.record import SpanModel
from .model.reparam import remodel
from .params import sizing
from .params.parameters import PARAMETERS
from .params.specs import UnitBound
from .pipeline import events_rows
from .plan import autoplan, resolve
from .plan import units as unit_plan
from .plan.autoplan import base_eps as auto_base_eps
from .plan.clusterlimit import ball_share, cell_log_masses, shown_share
from .post import noisespans, ownscale
from .post import sidebyside as second_release
from .post.auto import _parents as span_parents
from .post.auto import choose as auto_choose
from .post.coretests import build_spans, core_test
from .post.coretests.density import DensityField, density_field
from .post.coretests.density.densitytest import density_margin
from .post.coretests.density.weightedsums import weighted_sums_at
from .post.coretests.density.weights import ball_weights
from .post.ladder import stability as ladder_stability
from .post.ladder import sweep as ladder_sweep
from .post.levelsearch import alpha_scores as levels_alpha_scores
from .post.levelsearch import finish as levels_finish
from .post.levelsearch import ladder as levels_ladder
from .post.levelsearch import level_scale as levels_scale
from .post.levelsearch import level_tree as levels_tree
from .post.levelsearch import record as levels_record
from .post.levelsearch import select_levels as levels_select
from .post.levelsearch import unit_mass as levels_unit_mass
from .post.merge import merge_centres
from .post.noisespans import empty_sum_quantile, noise_spans
from .release.backends import NumpyBackend
from .release.bounding import BoundingKey, count_units, factorize, run_length
from .release.samplers.gaussian import discrete_gaussian, discrete_gaussian_tail, floor_sigma
from .release.samplers.integers import (
    SecureSource,
    SeededSource,
    discrete_laplace,
    make_source,
    rational_epsilon,
)
from .render.plotting import (
    plot_condensed_tree,
    plot_histogram,
    plot_labels,
    plot_model,
    plot_neighbour_sums,
    plot_spans,
)
from .render.plotting import save as save_figure
from .traces import event_rows, parse_times
from .traces.order import trace_order
from .traces.periods import Periods
from .traces.stops import stop_rows

#: The automatic mode's default cap on its base release's cells (the table's).
AUTO_MAX_CELLS = PARAMETERS["max_cells"].default
#: Release two's keep rule's constants (``plan.autoplan.SECOND_RULE``), a copy.
second_rule = dict(autoplan.SECOND_RULE)
#: The 2-D own-alpha widening (``ownscale.widen``) and the dimensions it runs in.
ownscale_widen = ownscale.widen
OWNSCALE_DIMS = ownscale.DIMS

__all__ = [
    "NoisyHistogram",
    "NumpyBackend",
    "ball_share",
    "cell_log_masses",
    "density_margin",
    "shown_share",
    "weighted_sums_at",
    "core_test",
    "levels_record",
    "remodel",
    "AUTO_MAX_CELLS",
    "BoundingKey",
    "OWNSCALE_DIMS",
    "UnitBound",
    "count_units",
    "make_source",
    "offered_k",
    "ownscale_widen",
    "Equirectangular",
    "Periods",
    "event_rows",
    "stop_rows",
    "trace_order",
    "events_rows",
    "factorize",
    "parse_times",
    "projection_of",
    "SecureSource",
    "SeededSource",
    "auto_base_eps",
    "auto_choose",
    "auto_points_per_cell",
    "finer_3d_from",
    "second_release_where",
    "second_release",
    "second_rule",
    "dask_backend",
    "density_field",
    "DensityField",
    "discrete_gaussian",
    "ball_weights",
    "cell_pairs",
    "discrete_gaussian_tail",
    "discrete_laplace",
    "floor_sigma",
    "format_km",
    "ladder_stability",
    "ladder_sweep",
    "levels_alpha_scores",
    "levels_finish",
    "levels_ladder",
    "levels_scale",
    "levels_select",
    "levels_unit_mass",
    "noise_variance",
    "levels_tree",
    "merge_centres",
    "noiseless_twin",
    "plot_condensed_tree",
    "plot_histogram",
    "plot_labels",
    "plot_model",
    "plot_neighbour_sums",
    "plot_spans",
    "predict_spans",
    "rational_epsilon",
    "read_input",
    "run_length",
    "save_figure",
    "span_noise_filter",
    "person_second",
    "person_base_3d",
    "noise_spans",
    "empty_sum_quantile",
    "span_parents",
    "span_regions",
]


@contextmanager
def auto_points_per_cell(value: float) -> Iterator[None]:
    """Research: the automatic mode's points per base cell set to ``value``
    inside the block (a study of its design); may change."""
    old = autoplan.POINTS_PER_CELL
    autoplan.POINTS_PER_CELL = float(value)
    try:
        yield
    finally:
        autoplan.POINTS_PER_CELL = old


@contextmanager
def second_release_where(
    least: dict[int, float], fine: int | None = None, share: float | None = None
) -> Iterator[None]:
    """Research: inside the block the automatic mode makes release two where
    the data are ``d``-dimensional with ``d`` in ``least``, the noise is
    Laplace and its DP count is at least ``least[d]`` (the library: 3-D from
    ``autoplan.SMALL_SECOND_FROM``), with f = ``fine`` and a share ``share``
    of epsilon at every count (defaults: the library's at each count,
    ``autoplan.second_fine`` and ``autoplan.second_share``); still public
    inputs only; a study of the rule; may change."""
    old = (autoplan.second_applies, autoplan.second_fine, autoplan.second_share)
    at = {int(d): float(c) for d, c in least.items()}

    def applies(d: int, count: float | None, noise: str) -> bool:
        return d in at and noise in ("discrete", "laplace") and count is not None and count >= at[d]

    autoplan.second_applies = applies
    if fine is not None:
        f = int(fine)
        autoplan.second_fine = lambda count: f
    if share is not None:
        s = float(share)
        autoplan.second_share = lambda count: s
    try:
        yield
    finally:
        autoplan.second_applies, autoplan.second_fine, autoplan.second_share = old


@contextmanager
def finer_3d_from(least: float, points: float, kappa: int | None = None) -> Iterator[None]:
    """Research: inside the block the automatic mode's 3-D base, where its
    DP count is at least ``least`` and at most ``sizing.LARGE_N`` (where the
    library keeps the base for ASSUMED_N), is sized for ``points`` points,
    with the eps ladder's cap ``kappa`` (default: the library's,
    ``autoplan.FINER_CANDIDATE_KAPPA`` on the finer base and
    ``autoplan.SMALL_FINER_CANDIDATE_KAPPA`` where the library joins by
    faces; ``kappa`` replaces both inside the block); elsewhere the
    library's rule. Public inputs only (d and the DP count); a study of
    release one's resolution below 20,000 points (the strands-fine and
    strands-E studies); may change."""
    old = sizing.finer_n
    lo, at = float(least), float(points)

    def finer(estimate: float | None, d: int = 2) -> float | None:
        if d == 3 and estimate is not None and lo <= estimate <= autoplan.LARGE_N:
            return at
        return old(estimate, d)

    old_kappa = (autoplan.FINER_CANDIDATE_KAPPA, autoplan.SMALL_FINER_CANDIDATE_KAPPA)
    # the one name the fit, its plan and its summary look up (sizing.finer_n)
    sizing.finer_n = finer
    if kappa is not None:
        autoplan.FINER_CANDIDATE_KAPPA = autoplan.SMALL_FINER_CANDIDATE_KAPPA = int(kappa)
    try:
        yield
    finally:
        sizing.finer_n = old
        autoplan.FINER_CANDIDATE_KAPPA, autoplan.SMALL_FINER_CANDIDATE_KAPPA = old_kappa


@contextmanager
def span_noise_filter(on: bool) -> Iterator[None]:
    """Research: the density test's filter of spans that the release's noise
    alone explains (:mod:`dpdbscan.post.noisespans`) on or off inside the
    block (the same release with and without it); may change."""
    old = noisespans.ACTIVE
    noisespans.ACTIVE = bool(on)
    try:
        yield
    finally:
        noisespans.ACTIVE = old


@contextmanager
def offered_k(k: int) -> Iterator[None]:
    """Research: the private choice of k (``max_cells_per_unit="auto"``)
    offered the one candidate ``k`` inside the block (a study of the choice);
    may change."""
    old = unit_plan.candidates
    unit_plan.candidates = lambda grid: (int(k),)
    try:
        yield
    finally:
        unit_plan.candidates = old


@contextmanager
def person_second(on: bool, share: float | None = None, fine: int | None = None) -> Iterator[None]:
    """Research: release two at person level (a 3-D automatic fit with
    privacy units and Gaussian noise; docs/privacy.md 4.10) on or off inside
    the block, at its share of rho and f (None: the library's) (the
    person-level study of ``experiments.strands_person``); may change."""
    old = autoplan.SECOND_UNITS, autoplan.SECOND_UNITS_SHARE, autoplan.SECOND_UNITS_FINE
    autoplan.SECOND_UNITS = bool(on)
    if share is not None:
        autoplan.SECOND_UNITS_SHARE = float(share)
    if fine is not None:
        autoplan.SECOND_UNITS_FINE = int(fine)
    try:
        yield
    finally:
        autoplan.SECOND_UNITS, autoplan.SECOND_UNITS_SHARE, autoplan.SECOND_UNITS_FINE = old


@contextmanager
def person_base_3d(points: float | None, kappa: int | None = None, join: str = "eps") -> Iterator[None]:
    """Research: inside the block a person-level automatic fit in 3-D (privacy
    units, eps "auto", no place prior, no ``n_expected``) has its base sized
    for ``points`` points (None: the library's, for ASSUMED_N), its eps
    ladder capped at ``kappa`` cells a neighbourhood (default the library's)
    and its spans joined by ``join`` ("eps" or "face"); every other fit is
    the library's. Public inputs only (d, the parameters); a study of
    release one's resolution at person level (``experiments.strands_person2``,
    results/scenes/strands-person2.md); may change."""
    if join not in ("eps", "face"):
        raise ValueError(f"join must be 'eps' or 'face', not {join!r}")
    old_plan, old_spec = autoplan.plan, resolve.SpanSpec
    state = {"on": False}

    def plan(lower: Any, upper: Any, eta: float, eps: Any, min_samples: Any, *args: Any, **kw: Any) -> Any:
        n_expected = args[2] if len(args) > 2 else kw.get("n_expected")
        state["on"] = (
            bool(kw.get("units"))
            and kw.get("places") is None
            and n_expected is None
            and eps == "auto"
            and np.asarray(lower).size == 3
        )
        if state["on"]:
            if points is not None and len(args) > 2:
                args = (*args[:2], float(points), *args[3:])
            if kappa is not None:
                kw["kappa"] = int(kappa)
        return old_plan(lower, upper, eta, eps, min_samples, *args, **kw)

    def spec(**kw: Any) -> Any:
        if state["on"]:
            kw["join"] = join
        return old_spec(**kw)

    autoplan.plan, resolve.SpanSpec = plan, spec  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        autoplan.plan, resolve.SpanSpec = old_plan, old_spec  # type: ignore[misc]


def dask_backend(**kwargs: Any) -> Any:
    """Research: a Dask backend (``DaskBackend(**kwargs)``) for benchmarks; may
    change. Needs the ``dask`` extra."""
    # lazy: dask is an optional dependency
    from .release.backends.dask_backend import DaskBackend

    return DaskBackend(**kwargs)


def noiseless_twin(model: SpanModel, X: Any, units: Any = None, random_state: int | None = None) -> SpanModel:
    """Research: the spans ``model``'s release would have given without noise.

    The same grid, histogram kind and contribution bound as the release that
    made ``model``, the exact (bounded) counts of ``X`` in place of the noisy
    ones, post-processed by the same core test with the same span parameters
    (every margin is 0 for a release without noise). The reference of
    accuracy studies: the spans differ from ``model``'s by the noise alone.
    Not a DP release: it reads the data without noise.

    Parameters
    ----------
    model : SpanModel
        A fitted model (not the automatic mode's, not re-parameterised to
        another eps; another MinPts is fine).
    X : array of shape (n, d)
        The points ``model`` was fitted on, in its coordinates (km for a
        ``fit_lonlat`` model: project them with its projection).
    units : array of shape (n,), optional
        The privacy unit of each row, for a person-level ``model``.
    random_state : int, optional
        The seed ``model`` was fitted with (person-level only): the release
        draws its bounding key first from that seed's source, so the same key
        keeps the same cells of every unit here. A secure release's key is
        gone with it: there is no twin of a release fitted with
        ``random_state=None``.

    Returns
    -------
    SpanModel
        Its histogram has noise ``"none"`` and epsilon ``inf``; a truncating
        release (sparse, stability) becomes the occupied cells (theta 1).
    """
    release = model.release
    # the cells' keys (and with them the bounding priorities) are those of the fit's grid
    if model.auto is not None or (release.grid.eps, release.grid.eta) != (release.eps, release.eta):
        raise ValueError("noiseless_twin needs a model as fitted (not the automatic mode's, not another eps)")
    grid = release.grid
    X = np.asarray(X, dtype=np.float64)
    if release.units is None:
        if units is not None:
            raise ValueError("units were given for an event-level model")
        cells = NumpyBackend().count(grid, X)
        keys, counts = cells.keys, cells.counts
    else:
        if units is None or random_state is None:
            raise ValueError("a person-level model's twin needs its units and the seed it was fitted with")
        # the order of release.mechanism.release_histogram: the key is the source's first draw
        key = BoundingKey.draw(make_source(random_state, warn=False))
        # each id read on its own, as the fit read them (never typed together by numpy)
        keys, counts = count_units(grid, X, read_units(units), release.units, key)
    if release.histogram == "dense":
        values = np.zeros(grid.shape, dtype=np.int64)
        if keys.size:
            values[tuple(grid.decode(keys).T)] = counts
        hist = NoisyHistogram(grid, "dense", values, None, -math.inf, "none", math.inf, math.inf, 0.0)
    else:
        hist = NoisyHistogram(
            grid,
            release.histogram,
            np.asarray(counts, dtype=np.int64),
            keys,
            1.0,
            "none",
            math.inf,
            math.inf,
            0.0,
        )
    spans = build_spans(hist, model.spec)
    return model_of(
        hist,
        spans,
        model.spec,
        fit=(release.eps, release.eta, release.min_samples),
        auto=None,
        metadata=model.metadata,
        rho=None,
        units=release.units,
        unit_choice=release.unit_choice,
        size_estimate=release.size_estimate,
    )
