"""The whole mechanism, one way: public parameters -> the release -> spans -> model.

:func:`fit` is the one entry point of the estimator and the command line:

1. resolve the parameters on the public box (:func:`dpdbscan.plan.resolve.resolve`),
   and say before anything is counted if the fit will be slow (an automatic
   fit that counts the points first says it on the grid the count sized);
2. check the accountant and hand the release to ``before_release`` (a ledger
   reserves its cost there), then release the noisy histogram: the one place
   the budget is spent (:func:`dpdbscan.release.mechanism.release_histogram`);
3. post-process it into spans (the core test, :mod:`dpdbscan.post`), choosing
   eps and MinPts from the release in the automatic mode;
4. charge the accountant and return the model (:mod:`dpdbscan.model`).

Nothing after step 2 reads the points.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from .cells.grid import Grid
from .cells.histogram import NoisyHistogram
from .exceptions import UtilityWarning, private_note
from .model.build import model_of
from .model.coretestwords import QuietRelease
from .model.describe import length_of, swamped_min_samples
from .model.guarantee import unit_noun
from .model.record import SpanModel
from .model.shown import shown_spans
from .model.words import words_of
from .params.sizing import sized_n
from .params.specs import ReleaseSpec, SpanSpec
from .plan.autoplan import (
    PLACE_JAM_SHARE,
    PLACE_MIN_RUNGS,
    PLACE_OWN_NEAR,
    PLACE_OWN_SDS,
    PLACE_OWN_SHARE,
    PLACE_PEAK_RANK,
    PLACE_PEAK_SHARE,
    Plan,
    place_candidates,
    place_extent,
)
from .plan.outlook import Forecast, forecast
from .plan.resolve import Resolved, costliest, resolve
from .post import auto, levelsearch, ownscale, sidebyside
from .post.coretests import Spans, build_spans, core_test
from .progress import stage
from .release.accountant import Accountant
from .release.backends import Backend
from .release.backends.base import PointsInput
from .release.bounding import count_distinct_units, factorize
from .release.mechanism import (
    NoiseAhead,
    Randomness,
    one_stream,
    release_choosing,
    release_count,
    release_fine_counts,
    release_fine_counts_units,
    release_histogram,
)
from .traces import Events, event_rows, group_codes, no_events_note, parsed_inputs, take_rows, unreadable_note

#: A delta within this factor of one over the number of units is "not far
#: below" it: the private note of :func:`_delta_note`.
DELTA_PER_UNIT_NOTE = 0.1


def refuse_lazy_text_reads(X: Any, units: Any = None, *others: Any) -> None:
    """Refuse, before any record is read or charged, a dask object (points
    ``X``, ``units``, times or a status column among ``others``) built on
    dask's text, SQL or Bag readers, which type a column from its first rows
    and fail the whole read on one later value of another type, and dask
    ``units`` read from Parquet with pandas' default integer types (one
    missing id makes the others floats and merges them). The Dask backend
    refused such points and unit columns of a frame where it reads them;
    beside points in memory (the numpy backend), or given as a Series or
    array, they were computed as they were, so one row decided whether a
    release happened, or merged units (docs/privacy.md section 8, round 15).
    Public: how each was built and its declared type, never a value."""
    for i, g in enumerate((X, units, *others)):
        if g is None or isinstance(g, str) or not hasattr(g, "__dask_graph__"):
            continue
        # lazy: dask is an optional extra; only a dask object (its graph) brings it here
        from .release.backends.dask_backend import check_frame_readers, check_lazy_units

        check_frame_readers(g)
        if i == 1:
            check_lazy_units(g)


def _delta_note(units: Any, delta: float) -> str | None:
    """A private note, after the release, when ``delta`` is not far below
    one over the number of units. That number is private: it must not
    decide whether a release happens, so it is counted only once the
    release is made, and only said (docs/privacy.md section 8, 0.3.0). The
    rows bound the units, so no count is made when even one unit per row
    would keep delta far below. None for a column name (a distributed
    backend's units, not counted twice)."""
    if units is None or isinstance(units, str) or not delta:
        return None
    if delta * len(units) < DELTA_PER_UNIT_NOTE:
        return None
    n = count_distinct_units(units)
    if delta * n < DELTA_PER_UNIT_NOTE:
        return None
    return (
        f"delta={delta:g} is not far below one over the number of units in these data (a private "
        f"figure: {n:,} units, 1/n = {1 / max(n, 1):.2g}); at this delta the release may show what one unit "
        "did with probability about delta. Choose delta from a public bound on the population "
        "(docs/parameters.md)"
    )


def _warn_slow(fc: Forecast, stacklevel: int) -> None:
    """Say when the forecast's grid makes the fit slow (public inputs)."""
    for note in fc.slow:
        warnings.warn(note, UtilityWarning, stacklevel=stacklevel + 1)


def _warn_merge(fc: Forecast, n: float, source: str, stacklevel: int) -> None:
    """Say when a dense release's noise will likely merge clusters
    (:meth:`Forecast.merge_note`); ``n`` is public (the user's guess) or a
    DP count already spent and counted."""
    note = fc.merge_note(n, source)
    if note:
        warnings.warn(note, UtilityWarning, stacklevel=stacklevel + 1)


def _warn_limit(fc: Forecast, stacklevel: int) -> None:
    """Say when the release will show too few cells for clusters exact
    DBSCAN finds (:meth:`Forecast.limit_note`; public inputs)."""
    note = fc.limit_note()
    if note:
        warnings.warn(note, UtilityWarning, stacklevel=stacklevel + 1)


def fit(
    X: PointsInput,
    lower: np.ndarray,
    upper: np.ndarray,
    p: Mapping[str, Any],
    *,
    backend: Backend,
    accountant: Accountant | None = None,
    metadata: Mapping[str, Any] | None = None,
    units: Any = None,
    times: Any = None,
    status: Any = None,
    before_release: Callable[[ReleaseSpec], object] | None = None,
    noise_ahead: NoiseAhead | None = None,
    stacklevel: int = 2,
) -> SpanModel:
    """Release DP spans of ``X`` inside the public box ``[lower, upper]`` with
    validated parameters ``p`` (:func:`dpdbscan.plan.resolve.validated`).
    Checks the accountant before and charges it after.

    With ``eps`` and/or ``min_samples`` "auto" the release is made at a base
    resolution chosen from public inputs (:mod:`dpdbscan.plan.autoplan`) and
    the parameters are then chosen from it (post-processing, no further
    budget); the model records the choice (``model.auto``).

    ``units``: the privacy unit of each row (a person-level release, each
    unit's contribution bounded first); None: each row is its own unit.
    With ``max_cells_per_unit="auto"`` the release chooses k privately among
    the candidates' releases (:func:`dpdbscan.release.mechanism.release_choosing`);
    the accountant is charged the whole release once, choice included.

    ``p["events"]`` (:class:`dpdbscan.traces.Stops` or ``TripEnds``, its
    lengths already in ``X``'s units): each unit's rows are replaced by its
    stops or trip ends (read with ``times`` and ``status``, one per row)
    before anything is bounded or counted (:func:`events_of`).

    ``before_release``: called with the resolved release (public) after the
    accountant's check and before the mechanism reads a point (or the events
    are made); it may refuse by raising (a ledger's reservation,
    :meth:`dpdbscan.ledger.Ledger.reserve`). Where the automatic mode's DP
    count may give a grid with another histogram, both are checked with, and
    given, the costlier release (:func:`dpdbscan.plan.resolve.costliest`);
    the accountant is charged after with the release made.

    ``noise_ahead``: a dense release's noise drawn before the points were
    read (:class:`dpdbscan.release.mechanism.NoiseAhead`); the release uses
    it only if it was drawn for this very release.

    The automatic mode without a guess of n (event level, outside
    geographic mode) first makes a DP count of the points for a share of
    the same budget (:data:`dpdbscan.plan.autoplan.COUNT_SHARE`) and sizes
    its grid from it
    (:func:`dpdbscan.plan.autoplan.sized_n`); the release's total (epsilon,
    delta), reserved and charged, is unchanged. Its histogram's noise then
    continues the count's stream of randomness, so noise drawn ahead is not
    used (it was drawn from the stream's start).
    """
    places = place_extent(dict(metadata or {}))
    r = resolve(p, lower, upper, units=units is not None, stacklevel=stacklevel + 1, places=places)
    if places is not None and r.auto is None:
        # a geographic map at the user's eps and MinPts publishes places: a
        # border cell joins only where the release shows points
        # (model.record.occupied_border; public metadata). The automatic mode
        # bounds its spans by the place prior instead (docs/places.md)
        r = replace(r, spans=replace(r.spans, border_cells="occupied"))
    fc = forecast(r.release, r.spans)
    # the merge warning (plan.outlook.Forecast.merge_note) at a fixed eps, event
    # level, where it was measured (not the automatic mode, which chooses eps
    # from the release); its number of points is public (n_expected) or, after
    # the release, the dense release's noisy total: never the data's own
    judged = r.auto is None and r.release.units is None
    n_public = p.get("n_expected") if judged else None
    if r.release.size_estimate is None:
        # public (kappa, |X|, d): said before anything is counted or spent
        _warn_slow(fc, stacklevel + 1)
    if n_public is not None:
        _warn_merge(fc, n_public, "n_expected", stacklevel + 1)
    if judged:
        _warn_limit(fc, stacklevel + 1)
    _in_memory_second(r, backend)
    # the automatic mode's DP count may give a grid with another histogram:
    # checked and reserved at the costlier (public)
    charged = costliest(r, p, lower, upper, units=units is not None, places=places)
    if accountant is not None:
        charge(accountant, charged, spend=False)
    if before_release is not None:
        before_release(charged)
    try:
        events = p.get("events")
        if events is not None:
            X, units = events_of(events, X, units, times, status)
            metadata = {
                **(metadata or {}),
                "events": {**events.record(), **dict(metadata or {}).get("events", {})},
            }
        random_state: Randomness | None = r.random_state
        # person level: release one's bounding key, for release two (docs/privacy.md 4.10)
        bounding: list = []
        if r.release.second is not None and r.release.units is not None:
            # one stream for both releases: release two continues release one's source
            random_state = one_stream(random_state)
        if r.release.size_estimate is not None:
            # the automatic mode's DP count of the points sizes the grid
            # (plan.autoplan.sized_n); it spends its share of the stated budget,
            # and its noise and the histogram's come from one source
            stage("counting the points (a DP count that sizes the grid)")
            count, random_state = release_count(
                r.release.size_estimate, r.release.grid, X, backend=backend, random_state=random_state
            )
            r = resolve(p, lower, upper, stacklevel=stacklevel + 1, places=places, size_estimate=count)
            # on the grid the count sized (public: the parameters and the DP
            # count), not the one for ASSUMED_N points the plan stood on before it
            _warn_slow(forecast(r.release, r.spans), stacklevel + 1)
        if r.choices:
            stage("counting cells, adding noise and choosing k")
            made, hist = release_choosing(
                r.choices,
                X,
                units=units,
                backend=backend,
                random_state=random_state,
                scored=_no_unit_note,
                bounding=bounding,
            )
            # the noise is the chosen k's from here on (the stand-in's was the largest k's)
            r = replace(r, release=made)
            fc = forecast(r.release, r.spans)
        else:
            stage("counting cells and adding noise")
            hist = release_histogram(
                r.release,
                X,
                backend=backend,
                random_state=random_state,
                units=units,
                ahead=noise_ahead,
                bounding=bounding,
            )
    except BaseException:
        # the mechanism has begun reading the points (and may have drawn
        # noise, a DP count): the release counts, as a ledger counts it failed
        if accountant is not None:
            charge(accountant, r.release, spend=True)
        raise
    if accountant is not None:
        charge(accountant, r.release, spend=True)
    if judged and n_public is None and hist.kind == "dense":
        # no public n: the dense release's noisy total counts the points
        # (post-processing of what was spent)
        _warn_merge(fc, float(np.sum(hist.values)), "the release's noisy total", stacklevel + 1)
    note = _delta_note(units, r.release.noise.delta)
    if note:
        private_note(note, stacklevel=stacklevel + 1)
    meta = dict(metadata or {})
    if r.auto is None:
        stage("core test and spans")
        spans = build_spans(hist, r.spans)
        fit_params = (r.release.grid.eps, r.release.grid.eta, r.spans.min_samples)
        model = _model_of(r, hist, spans, r.spans, fit=fit_params, auto=None, metadata=meta)
        if r.spans.border_cells == "occupied":
            # a geographic map draws only the spans the release shows (model.shown)
            model = shown_spans(model)
    else:
        stage("choosing eps and MinPts from the release")
        model = _auto_model(hist, r, r.auto, p, meta)
        if r.release.second is not None and model.histogram is not None:
            # release two (docs/privacy.md 4.10): its cells from release one alone, its
            # noise from the same stream, its share of epsilon already left by the
            # histogram's (the accountant was charged the pair's epsilon above)
            stage("a second, finer release where the first is dense")

            def event_counts(fine: Grid, cells: np.ndarray, epsilon: float) -> np.ndarray:
                return release_fine_counts(
                    fine, cells, epsilon, X, backend=backend, random_state=random_state
                )

            counts_of: sidebyside.FineCounts = event_counts
            if r.release.units is not None:
                counts_of = _person_fine_counts(r.release, X, units, bounding, random_state)
            model = sidebyside.split_model(model, counts_of, r.release.second)
        fc = forecast(
            replace(r.release, grid=model.release.grid), replace(r.spans, min_samples=model.spec.min_samples)
        )
    # public parameters and the release only (post-processing): safe to say
    released = model.histogram if model.histogram is not None else hist  # at the spans' eps
    noun = unit_noun(model)
    problems = core_test(model.spec.core).problems(released, model.spans, model.spec)
    note = words_of(model.spec.core).utility_note(
        QuietRelease(
            released,
            model.spans,
            model.spec,
            problems,
            fc.noise_std,
            noun,
            _ground(model),
            _events_noun(model),
        )
    )
    flat = swamped_min_samples(model)
    if note and flat is not None:
        # the automatic mode chose MinPts itself: say so rather than quote it as the user's
        which = "the chosen " if r.auto is not None else ""
        note += (
            f" Every min_samples from 1 to {flat:,} gives this same release: the noise margin, not "
            f"{which}min_samples={model.spec.min_samples}, decides which places are dense at these settings."
        )
    if note:
        warnings.warn(note, UtilityWarning, stacklevel=stacklevel + 1)
    return model


def _person_fine_counts(
    release: ReleaseSpec, X: Any, units: Any, bounding: list, random_state: Any
) -> Callable[[Grid, np.ndarray, float], np.ndarray]:
    """Release two's counts at person level (docs/privacy.md 4.10): the
    points release one's contribution bound kept, by its key (``bounding``),
    counted in the fine cells with the Gaussian noise of ``release.second``,
    continuing release one's source (``random_state``)."""
    second, bound = release.second, release.units
    if second is None or bound is None or len(bounding) != 1:
        raise RuntimeError("release two at person level needs release one's bound and key")

    def counts_of(fine: Grid, cells: np.ndarray, epsilon: float) -> np.ndarray:
        return release_fine_counts_units(
            release.grid, cells, second, X, units, bound, bounding[0], random_state=random_state
        )

    return counts_of


def _no_unit_note(n_units: int) -> None:
    """A private note when the private choice of k scored no unit: every
    candidate then scores the same, so the draw is uniform and k says
    nothing about the data (the release is still made: whether it happens
    never depends on the data)."""
    if n_units == 0:
        private_note(
            "no unit has a point to count (0 units with a cell in the box): every candidate for "
            "max_cells_per_unit scores the same, so k was drawn uniformly among them and says nothing "
            "about the data; the release holds noise alone, made all the same (whether a release is "
            "made never depends on the data)",
            stacklevel=2,
        )


def _events_noun(model: SpanModel) -> str | None:
    """ "stops" or "trip ends" where the points are events made from traces
    (the user's option, recorded in the model), else None."""
    kind = dict(model.metadata.get("events") or {}).get("kind")
    return None if kind is None else {"stops": "stops", "trip ends": "trip ends"}.get(str(kind), "events")


def _ground(model: SpanModel) -> Any:
    """How a ``--geo`` model's eps reads on the ground (metres), for its
    warnings; None for other data, whose lengths are their own."""
    return length_of(model) if (model.metadata or {}).get("projection") else None


def _in_memory_second(r: Resolved, backend: Backend | str | None) -> None:
    """Refuse, before anything is charged or read, a person-level release
    two (``research.person_second``, docs/privacy.md 4.10) on a distributed
    backend: its fine counts are made from release one's bounded points in
    memory (:func:`dpdbscan.release.mechanism.release_fine_counts_units`),
    which a backend reading files or partitions on workers does not hold.
    Public: the plan and the backend's name."""
    specs = [r.release, *(r.choices or ())]
    if r.release.units is None or all(s.second is None for s in specs):
        return
    name = backend if isinstance(backend, str) or backend is None else getattr(backend, "name", None)
    if name not in (None, "numpy"):
        raise ValueError(
            f"release two at person level (research.person_second, a research switch) is made in "
            f"memory only, not with the {name or type(backend).__name__} backend: fit with the "
            "numpy backend (points and units in memory), or turn the switch off; nothing was charged"
        )


def events_of(events: Events, X: Any, units: Any, times: Any, status: Any) -> tuple[np.ndarray, Any]:
    """``(X, units)`` of each unit's stops or trip ends (one row each).

    The single place where a release's rows become places: every door
    (the estimator, ``fit_lonlat``, the command line) passes through
    :func:`fit`. Each unit's events are a function of its own rows only
    (:mod:`dpdbscan.traces`), so neighbouring inputs (one unit's rows more
    or less) give neighbouring inputs to the mechanism: the unit-level
    guarantee holds unchanged (docs/privacy.md section 1)."""
    X = np.asarray(X, dtype=np.float64)
    rows = events_rows(events, X, units, times, status)
    return X[rows], take_rows(units, rows)


def events_rows(
    events: Events,
    X: np.ndarray,
    units: Any,
    times: Any,
    status: Any,
    notes: Callable[[str], Any] | None = None,
) -> np.ndarray:
    """The rows :func:`events_of` keeps (ascending), one per event: the
    event's first point (a series over time places it by that point's time).
    How many rows had no readable time or status goes to ``notes`` (private;
    by default a :class:`PrivateNoteWarning`)."""
    codes = group_codes(units)
    if codes is None:
        codes, _ = factorize(units)
    t, s = parsed_inputs(events, times, status)

    def say(note: str | None) -> None:
        if not note:
            return
        if notes is None:
            private_note(note, stacklevel=4)
        else:
            notes(note)

    say(unreadable_note(events, t, s))
    rows = event_rows(events, X, codes, t, s, parsed=True)
    if rows.size == 0:
        say(no_events_note(events, X.shape[0]))
    return rows


def charge(accountant: Accountant, release: ReleaseSpec, *, spend: bool) -> None:
    """Check (``spend`` False) or record a release's spend. A Gaussian release
    is charged as rho-zCDP to an accountant that composes in zCDP (one with
    ``check_rho``/``spend_rho``, :class:`dpdbscan.ZCDPAccountant`), with the
    stability threshold's delta if any (which the ZCDPAccountant refuses: not
    zCDP); any other accountant, and any Laplace release, is charged the
    stated (epsilon, delta)."""
    noise = release.noise
    if noise.rho is not None and hasattr(accountant, "check_rho") and hasattr(accountant, "spend_rho"):
        extra = release.delta_threshold
        if spend:
            accountant.spend_rho(noise.rho, extra)
        else:
            accountant.check_rho(noise.rho, extra)
        return
    if spend:
        accountant.spend(noise.epsilon, release.delta_spent)
    else:
        accountant.check(noise.epsilon, release.delta_spent)


def _auto_model(
    hist: NoisyHistogram, r: Resolved, plan: Plan, p: Mapping[str, Any], metadata: dict
) -> SpanModel:
    """The spans chosen from the release (post-processing): each cluster at
    its own level (``selection="levels"``, :mod:`dpdbscan.post.levelsearch`) or
    one flat cut at a chosen (eps, MinPts) (``"flat"``, :mod:`dpdbscan.post.auto`).
    The tree of levels is over MinPts: with a fixed MinPts, or a core test
    other than the density test, the choice is the flat cut.

    eps is chosen after the noise is drawn, among ``c = len(plan.eps)``
    candidates, and the accuracy event of the guarantee depends on eps: every
    candidate's margins take beta / c, so that the events of all candidates
    hold together, hence the chosen one's, with probability >= 1 - beta (a
    union bound; the model's guarantee reports it). The events do not depend
    on MinPts, so choosing MinPts, or one MinPts per span, costs nothing.
    """
    # geographic mode: spans at the scale of places (public prior, autoplan.PLACE_EXTENT_KM)
    extent = place_extent(metadata) if p["selection"] != "flat" and plan.min_samples is None else None
    plan = replace(plan, eps=place_candidates(plan.eps, extent, hist.grid.d, float(hist.grid.eta)))
    spec: SpanSpec = replace(r.spans, beta=r.spans.beta / len(plan.eps))
    chosen = [k for k, v in (("eps", len(plan.eps) > 1), ("min_samples", plan.min_samples is None)) if v]
    sel: levelsearch.LevelSpans | None = None
    choice: dict[str, Any] = {}
    if p["selection"] != "flat" and plan.min_samples is None and core_test(spec.core).selects_levels:
        # places counted in units: dense relative to the release's peak
        peak = PLACE_PEAK_SHARE if extent is not None and r.release.units is not None else None
        share_of = levelsearch.significance_of(hist.grid.d, r.release.units is not None, extent)
        own = ownscale.applies(hist.grid.d, r.release.units is not None, extent, len(plan.eps))
        ties = "largest"
        if own and p["selection"] == "levels":
            # each cluster at its own scale: spans of larger candidate eps beside the chosen's;
            # on the base a small DP count sized, near-ties of eps to the one the others bear out
            size = r.release.size_estimate
            ties = ownscale.ties_for(None if size is None else sized_n(size.value, hist.grid.d))
            sel = ownscale.select(hist, spec, plan.eps, share_of=share_of, ties=ties)
        else:
            sel = levelsearch.select_levels(
                hist,
                spec,
                plan.eps,
                max_extent=extent,
                peak_share=peak,
                share_of=share_of,
                peak_rank=PLACE_PEAK_RANK,
                noise_sds=levelsearch.PLACE_NOISE_SDS if peak is not None else None,
                min_rungs=PLACE_MIN_RUNGS if peak is not None else 1,
                jam_share=PLACE_JAM_SHARE if peak is not None else None,
                per_unit=levelsearch.unit_mass(r.release.units),
                own_share=PLACE_OWN_SHARE if peak is not None else None,
                own_sds=PLACE_OWN_SDS,
            )
        ladder = levelsearch.ladder(hist)
        alpha = sel.eps
        m = min((s.min_samples for s in sel.spans), default=ladder[0])
        record = {
            "criterion": levelsearch.CRITERION,
            "selection": "levels",
            "score": float(sel.tree.score),
            "clusters": sel.n_spans,
            "min_samples_candidates": ladder,
            **levelsearch.record(sel),
        }
        if ties != "largest":
            # recorded only where it is not the default (other models unchanged)
            record["ties"] = ties
        if own and p["selection"] == "one-eps":
            # recorded only where it is not the default (explore's alternative keeps one eps too)
            record["one_eps"] = True
        if share_of == "total" and extent is None:
            # recorded only where it is not the default (2-D models unchanged)
            record["share_of"] = share_of
        if extent is not None:
            record["max_extent"] = float(extent)
            if peak is not None:
                record["peak_share"] = float(peak)
                record["peak_rank"] = PLACE_PEAK_RANK
                record["noise_sds"] = levelsearch.PLACE_NOISE_SDS
                if PLACE_MIN_RUNGS > 1:
                    record["min_rungs"] = PLACE_MIN_RUNGS
                if PLACE_JAM_SHARE is not None:
                    record["jam_share"] = float(PLACE_JAM_SHARE)
                if PLACE_OWN_SHARE is not None:
                    record["own_share"] = float(PLACE_OWN_SHARE)
                    record["own_sds"] = float(PLACE_OWN_SDS)
                    record["own_near"] = float(PLACE_OWN_NEAR)
                    record["own_left_out"] = int(sel.own_left_out)
            for lv, s in zip(record["levels"], sel.spans):
                lv["fits"] = bool(s.fits)
                lv["piece"] = bool(s.piece)
    else:
        choice = auto.choose_params(
            hist, replace(spec, min_samples=plan.min_samples or 1), plan.eps, plan.min_samples
        )
        alpha, m = choice["eps"], choice["min_samples"]
        record = {
            "criterion": auto.CRITERION,
            "selection": "flat",
            "score": choice["score"],
            "clusters": choice["clusters"],
            "min_samples_candidates": choice["min_samples_candidates"],
        }
    test = core_test(spec.core)
    border = test.default_border(alpha, hist.grid.at_eps(alpha).eta, spec.subcells)
    if p["border"] != "auto":
        border = spec.border
    spec = replace(spec, min_samples=m, border=float(border))
    if "own_share" in record:
        # the border drawn over the spans' own units too (model.record.own_border)
        spec = replace(spec, border_cells="own")
    h = hist.on_grid(hist.grid.at_eps(alpha))
    # the spans the choice already has: the level selection's, or the flat
    # cut's sweep's at the chosen (eps, MinPts) where it was on the same
    # sub-cells by the density test (its spans there are build_spans')
    made: tuple[Any, np.ndarray, np.ndarray] | None = None
    if sel is not None:
        made = (sel.grid, sel.core_keys, sel.labels)
    elif choice.get("partition") is not None and test.selects_levels:
        made = (hist.grid.subdivided(spec.subcells), choice["partition"].keys, choice["partition"].labels)
    if made is None:
        spans = build_spans(h, spec)
    else:
        # the keys are in the base release's sub-cell grid; both encodings
        # are row-major, so the sorted order and the labels carry over
        grid, core_keys, labels = made
        keys = h.grid.subdivided(spec.subcells).encode(grid.decode(core_keys))
        spans = test.spans_of(h, spec, keys, labels)
    record = {
        **record,
        "base_eps": float(hist.grid.eps),
        "eps": float(alpha),
        "min_samples": int(m),
        "eps_candidates": [float(a) for a in plan.eps],
        "chosen": chosen,
    }
    fit_params = (float(hist.grid.eps), float(hist.grid.eta), m)
    return _model_of(r, h, spans, spec, fit=fit_params, auto=record, metadata=metadata)


def _model_of(r: Resolved, hist: NoisyHistogram, spans: Spans, spec: SpanSpec, **fit: Any) -> SpanModel:
    """The model of ``spans`` from the release ``r`` made (its zCDP rho,
    contribution bound and choice of k); ``fit``: the ``fit``, ``auto`` and
    ``metadata`` of :func:`~dpdbscan.model.build.model_of`."""
    rel = r.release
    return model_of(
        hist,
        spans,
        spec,
        rho=rel.noise.rho,
        units=rel.units,
        unit_choice=rel.unit_choice,
        size_estimate=rel.size_estimate,
        **fit,
    )


__all__ = ["fit", "refuse_lazy_text_reads"]
