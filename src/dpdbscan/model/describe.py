"""A release in numbers and in words: :func:`describe` (what ``dpdbscan info``
shows; ``--json`` prints exactly this) and :func:`summary` (the lines ``fit``
prints)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..geometry.projection import eps_text, format_km, projection_of
from ..laws.noise import shown_count
from ..params import sizing
from ..params.paramwords import grid_words, histogram_words
from ..params.sizing import ASSUMED_N, FINER_3D_FROM, LARGE_N, SMALL_N, joins_faces, sized_n
from ..post import sidebyside
from ..post.coretests import core_test
from ..post.coretests.density.densitymargin import swamped
from ..post.coretests.density.densitytest import density_margin
from .codec import jsonable, second_privacy, size_estimate_dict, unit_choice_dict
from .guarantee import eps_candidates, guarantee, own_eps_spans, unit_noun
from .levels import is_levels, level_lines
from .record import SpanModel
from .shown import shown_words
from .words import words_of

# the margin and what it was computed from, in report order
MARGIN_FIGURES = (
    "beta",
    "noise_margin",
    "noise_margin_upper",
    "margin",
    "kappa",
    "kappa_q",
    "n_events",
    "n_cells",
    "theta",
)


def margin_figures(model: SpanModel) -> dict:
    """The margin and the public numbers it was computed from: ``kappa`` is
    the cells within eps of a cell of the histogram grid, ``kappa_q`` the
    most within eps of one sub-cell (the noisy counts of one sub-cell's sum,
    which the margins cover)."""
    s, spec = model.spans, model.spec
    return {
        "beta": spec.beta,
        "noise_margin": s.noise_margin,
        "noise_margin_upper": s.noise_margin_upper,
        "margin": spec.margin,
        "kappa": model.release.grid.kappa,
        "kappa_q": s.kappa_q,
        "n_events": s.n_events,
        "n_cells": model.release.grid.n_cells,
        "theta": model.release.theta,
    }


#: How each noise is named to a reader.
NOISE_NAMES = {
    "discrete": "discrete Laplace",
    "laplace": "Laplace (floating point)",
    "gaussian": "discrete Gaussian",
}


def noise_name(noise: str) -> str:
    """The release's noise in words ("discrete Gaussian", ...)."""
    return NOISE_NAMES.get(noise, noise)


#: What every published sentence of a release whose bounds came from the data ends with.
VOID = "; NO differential privacy guarantee: the bounds were computed from the data"


def guarantee_void(model: SpanModel) -> bool:
    """Whether the release has no DP guarantee: its box was computed from
    the private data (``--bounds-from-data``, ``bounds=None``)."""
    return str(model.metadata.get("bounds_source", "")).startswith("data")


def protection(model: SpanModel) -> str:
    """Who the release protects, in plain words: each unit (person-level,
    with its contribution bound and zCDP rho) or each row (event-level);
    and that nothing is, when the bounds came from the data."""
    rel = model.release
    budget = f"(epsilon={rel.epsilon:g}, delta={rel.delta:g})"
    void = VOID if guarantee_void(model) else ""
    if rel.units is None:
        return f"event-level: each row is protected, not each person; {budget}{void}"
    who = "each unit" + _unit_source(model)
    k, m = rel.units.max_cells_per_unit, rel.units.max_points_per_cell
    rho = "" if rel.rho is None else f", rho={rel.rho:.3g} zCDP"
    return (
        f"person-level: {who} is protected: at most {k} cell{'s' if k != 1 else ''} and {m} "
        f"point{'s' if m != 1 else ''} per cell per unit; {budget}{rho}{void}"
    )


def _from_folder() -> dict[str, str]:
    """What one unit is when it comes from a folder of trace files (``--unit-from``)."""
    # the copy of ``fit`` that draws the picture imports this module and reads no file
    # lazy: the files package loads every reader (sqlite3, xml, the CSV reader's threads)
    from ..files.tracefolder import UNIT_WORDS

    return UNIT_WORDS


def _unit_source(model: SpanModel) -> str:
    """Where a unit comes from, in parentheses: its column, or the file or
    sub-folder of a folder of trace files; empty when not known."""
    source = _from_folder().get(str(model.metadata.get("unit_from")))
    if source is not None:
        return f" ({source})"
    column = model.metadata.get("unit_column")
    return f" (column {column})" if column else ""


def protection_brief(model: SpanModel, greek: bool = False) -> str:
    """Who the release protects, in one short line for what gets published
    (the picture's title, the map's legend): person- or event-level, the
    unit (its column's name when known), k and m, epsilon, delta and rho;
    for a series over time (``fit --per``) the lifetime budget and both
    parts' bounds (:func:`series_brief`). A seeded release says it is not
    a private one (:data:`SEEDED`). ``greek`` writes the symbols as Greek
    letters (the HTML map)."""
    rel = model.release
    e, d, r = _symbols(greek)
    flags = _flags(model)
    if rel.units is None:
        budget = f"{e}={rel.epsilon:g}, {d}={rel.delta:g}"
        return f"event-level: each row is protected, not each person; {budget}{flags}"
    who, source = _who(model)
    counted = counted_brief(model.metadata.get("events"), who, length_of(model))
    counted_words = f"; counted: {counted}" if counted else ""
    if model.metadata.get("series"):
        return series_brief(model, greek) + flags + counted_words
    k, m = rel.units.max_cells_per_unit, rel.units.max_points_per_cell
    zcdp = "" if rel.rho is None else f" ({r}={rel.rho:.3g} zCDP)"
    return (
        f"person-level: each {who}{source} is protected ({bound_brief(k, m, who)}); "
        f"{e}={rel.epsilon:g}, {d}={rel.delta:g}{zcdp}{flags}{counted_words}"
    )


#: What every published file of a seeded release says: its noise came from a
#: research seed (reproducible, not secure), so it is not a private release
#: (the fit's warning on standard error says the same).
SEEDED = "seeded: not a private release (reproducible, insecure noise: for research only)"


#: What a seeded fit's model records as its ``randomness`` (the command line
#: records "secure" otherwise; the Python API records nothing for a secure fit).
SEEDED_RECORD = "seeded (insecure; seed not stored)"


def seeded(model: SpanModel) -> bool:
    """Whether the release's noise came from a research seed, as its
    metadata records it (``randomness``, written by the command line and
    by a seeded fit of the Python API)."""
    return str(model.metadata.get("randomness", "")).startswith("seeded")


def _flags(model: SpanModel) -> str:
    """What a published line adds when the release is not what it seems:
    no guarantee (bounds from the data), seeded noise."""
    void = "; NO differential privacy guarantee (bounds from the data)" if guarantee_void(model) else ""
    return void + (f"; {SEEDED}" if seeded(model) else "")


def _symbols(greek: bool) -> tuple[str, str, str]:
    return ("ε", "δ", "ρ") if greek else ("epsilon", "delta", "rho")


def _who(model: SpanModel) -> tuple[str, str]:
    """The unit's name for a published line (its column's name when known,
    else "unit") and, for a folder of trace files, where it comes from."""
    from_folder = model.metadata.get("unit_from") in _from_folder()
    who = "unit" if from_folder else (model.metadata.get("unit_column") or "unit")
    return str(who), (_unit_source(model) if from_folder else "")


def bound_brief(
    k: int, m: int, who: str, thing: str = "cell", things: str = "cells", per: str = "cell"
) -> str:
    """A contribution bound in a few words: "k=8 cells and m=1 point per
    cell per cab" (``thing``/``things`` and ``per`` name what k counts)."""
    return f"k={k:,} {thing if k == 1 else things} and m={m} point{'s' if m != 1 else ''} per {per} per {who}"


def series_brief(model: SpanModel, greek: bool = False) -> str:
    """Who a series over time protects, in one line for its published files
    (the pictures' titles, the map's legend, the GeoJSON, the table's CSV):
    each unit over the whole series at the lifetime (epsilon, delta) and
    rho, then each part with its bound: the spans' k cells and m points per
    cell at their (epsilon, delta, rho), the table's k (span, period) pairs
    and m points per pair at its rho. From the model's own record."""
    rel, series = model.release, model.metadata["series"]
    e, d, r = _symbols(greek)
    who, source = _who(model)
    if who == "unit" and not source and series.get("unit") not in (None, "the privacy unit"):
        who = str(series["unit"])  # the series' own record names it (fit_series' unit_name)
    life, cost, table = series["lifetime_budget"], series.get("cost") or {}, series["table"]
    rho = "" if cost.get("rho") is None else f", {r}={cost['rho']:.3g} zCDP"
    assert rel.units is not None  # a series is person-level
    spans_rho = "" if rel.rho is None else f", {r}={rel.rho:.3g}"
    k, m = rel.units.max_cells_per_unit, rel.units.max_points_per_cell
    pairs = table["max_pairs_per_unit"]
    over = table.get("bound_over", "the whole horizon")
    bound = (
        bound_brief(
            pairs, table["max_points_per_pair"], who, "(span, period) pair", "(span, period) pairs", "pair"
        )
        if isinstance(pairs, int)
        else f"pairs per {who}: {pairs}"
    )
    periods = series["periods"]
    horizon = (
        f"{periods['n_periods']} {periods['per']}(s) from {periods['from']} to {periods['to']}, "
        f"{periods.get('tz') or 'UTC'}"
    )
    places = (series.get("appendable") or {}).get("places_periods")
    planned, first = ("planned ", f" of the first {places} {periods['per']}(s)") if places else ("", "")
    return (
        f"person-level: each {who}{source} is protected over the whole {planned}series ({horizon}), "
        f"{e}={life['epsilon']:g}, {d}={life['delta']:g}{rho}, by {series['composition']}: the spans{first} "
        f"at {bound_brief(k, m, who)} ({e}={rel.epsilon:.3g}, {d}={rel.delta:g}{spans_rho}), the table at "
        f"{bound} over {over} ({r}={table['rho']:.3g})"
    )


def counted_brief(events: dict | None, who: str, length: Callable[[float], str]) -> str | None:
    """What each unit contributed when it was not its rows, in a few words
    for a title or a legend ("the stops of each cab (100 m, 5 min)"); None
    when the rows themselves were counted."""
    if not events:
        return None
    if events.get("kind") == "stops":
        return f"the stops of each {who} ({length(events['radius'])}, {events['duration_s'] / 60:g} min)"
    ends = {"pickup": "pick-ups", "dropoff": "drop-offs"}.get(
        events.get("ends", ""), "pick-ups and drop-offs"
    )
    return f"the {ends} of each {who}"


def protection_fields(model: SpanModel) -> dict:
    """What the release protects, as fields for a published file's
    top-level properties (the GeoJSON): the level, the unit column, k, m,
    epsilon, delta, rho, the sentence of :func:`protection`, whether
    the guarantee is void (:func:`guarantee_void`) and the randomness
    (:data:`SEEDED` for a seeded release, "secure", or None when the model
    does not record it)."""
    rel = model.release
    units = rel.units
    return {
        "privacy_level": "event" if units is None else "person",
        "protects": protection(model),
        "counted": _counted(model),
        "unit_column": None if units is None else model.metadata.get("unit_column"),
        "unit_from": None if units is None else model.metadata.get("unit_from"),
        "max_cells_per_unit": None if units is None else units.max_cells_per_unit,
        "max_points_per_cell": None if units is None else units.max_points_per_cell,
        "epsilon": rel.epsilon,
        "delta": rel.delta,
        "zcdp_rho": rel.rho,
        "guarantee_void": guarantee_void(model),
        "randomness": SEEDED if seeded(model) else model.metadata.get("randomness"),
    }


def _counted(model: SpanModel) -> str:
    """What one contribution is, for a published file: the rows (event
    level), each unit's rows, or each unit's stops or trip ends."""
    events = model.metadata.get("events")
    if events:
        # not needed to describe a release of rows, nor by the copy that draws it
        # lazy: the traces package parses times and makes stops
        from ..traces import event_words

        return f"counted {event_words(events, length_of(model))}"
    return "each row counted" if model.release.units is None else "each unit's rows counted"


def describe(model: SpanModel) -> dict:
    """The parameters and guarantees of the release as a JSON-safe dict.

    ``eta``, ``cell_width`` and ``shape`` are the histogram grid's (the cells
    that were counted); ``span_cell_width`` and ``span_shape`` the grid the
    spans are made of (sub-cells when ``subcells > 1``).
    """
    g, hg, s, spec, rel = model.grid, model.release.grid, model.spans, model.spec, model.release
    info = {
        "epsilon": rel.epsilon,
        "delta": rel.delta,
        "noise": rel.noise,
        "histogram": rel.histogram,
        "protects": protection(model),
        "unit": "row" if rel.units is None else "unit",
        "unit_column": model.metadata.get("unit_column"),
        "max_cells_per_unit": None if rel.units is None else rel.units.max_cells_per_unit,
        "max_points_per_cell": None if rel.units is None else rel.units.max_points_per_cell,
        "cell_choice": None if rel.units is None else rel.units.cell_choice,
        "zcdp_rho": rel.rho,
        "eps": g.eps,
        "min_samples": spec.min_samples,
        "threshold": s.threshold,
        "approx_ratio": s.approx_ratio,
        "tau": s.tau,
        **margin_figures(model),
        "core": spec.core,
        "guarantee": guarantee(model),
        "eta": hg.eta,
        "cell_width": hg.width,
        "shape": list(hg.shape),
        "d": g.d,
        "subcells": spec.subcells,
        "span_cell_width": g.width,
        "span_shape": list(g.shape),
        "border": spec.border,
        "border_cells": spec.border_cells,
        **({} if spec.join == "eps" else {"join": spec.join}),
        "n_spans": model.n_spans,
        "n_core_cells": model.n_core_cells,
        "bounds": {"lower": g.lower.tolist(), "upper": g.upper.tolist()},
        "has_histogram": model.histogram is not None,
        "metadata": dict(model.metadata),
        "release": {"eps": rel.eps, "eta": rel.eta, "min_samples": rel.min_samples},
        "auto": None if model.auto is None else dict(model.auto),
        "unit_choice": None if rel.unit_choice is None else unit_choice_dict(rel.unit_choice),
        "size_estimate": None if rel.size_estimate is None else size_estimate_dict(rel.size_estimate),
        **second_privacy(model),
    }
    if model.metadata.get("projection") is not None:
        info["units"] = "km"
    return jsonable(info)


def length_of(model: SpanModel) -> Callable[[float], str]:
    """How the model's lengths read: metres or km for a --geo model, else
    the data's own units."""
    return format_km if projection_of(model) is not None else (lambda v: f"{v:.4g}")


def published_statement(model: SpanModel) -> str:
    """The guarantee sentence of the published GeoJSON and HTML map: the
    model file's, with a geographic model's lengths on the ground ("within
    1.2 km", where the model file, in its km, says "within 1.2")."""
    geo = projection_of(model) is not None
    return guarantee(model, length_of(model) if geo else None)["statement"]


def noise_words(model: SpanModel) -> str:
    """The noise and where it is drawn, in words with the histogram's name
    (the summary's and ``info``'s noise line)."""
    rel = model.release
    return f"{noise_name(rel.noise)}, drawn on {histogram_words(rel.histogram, rel.theta)}"


def dense_words(model: SpanModel) -> str:
    """ "A place is dense (core) when at least MinPts ... lie within eps of
    it", in the units the counts are in."""
    g, spec, units = model.grid, model.spec, model.release.units
    length = length_of(model)
    symbols = f"min_samples={spec.min_samples}, eps={length(g.eps)}"
    if units is None:
        at_least = f"at least {spec.min_samples} points lie within {length(g.eps)} of it"
        return f"a place is dense (core) when {at_least} ({symbols})"
    noun = unit_noun(model)
    one = noun[:-1] if noun != "units" else "unit"
    k, m = units.max_cells_per_unit, units.max_points_per_cell
    if m == 1:
        return (
            f"a place is dense (core) when at least {spec.min_samples} {noun} are counted within "
            f"{length(g.eps)} of it, a {one} once in each cell it was in ({symbols}; m=1, k={k:,})"
        )
    return (
        f"a place is dense (core) when at least {spec.min_samples} points lie within {length(g.eps)} "
        f"of it, counting at most {m} of a {'unit' if noun == 'points' else one}'s points in a cell "
        f"({symbols}; m={m}, k={k:,})"
    )


def swamped_min_samples(model: SpanModel) -> int | None:
    """The largest MinPts that gives exactly this release's core sub-cells,
    when it is above the model's own: the empty-space guard raises the
    threshold MinPts + m(q) to G0(q) at every sub-position, so every MinPts
    up to min_q (G0(q) - the rule's own m(q)) has the same threshold. None
    when MinPts matters (the guard does not bind everywhere) or for the
    bound test. Public values only."""
    spec, rel = model.spec, model.release
    if not core_test(spec.core).guard_swamps:
        return None
    grid = model.histogram.grid if model.histogram is not None else rel.grid.at_eps(model.grid.eps)
    _, m = density_margin(grid, rel.histogram, rel.noise, rel.noise_scale, rel.theta, spec)
    return swamped(m, spec.min_samples)


def swamped_words(model: SpanModel) -> str:
    """ "Swamped by the noise margin: every min_samples from 1 to N gives this
    same release", or "" when MinPts is not swamped."""
    flat = swamped_min_samples(model)
    if flat is None:
        return ""
    return f"swamped by the noise margin: every min_samples from 1 to {flat:,} gives this same release"


def swamp_brief(model: SpanModel) -> str:
    """What a place really needs when the noise margin swamps MinPts ("swamped:
    a place needs about 340 cabs within eps"), or "" when MinPts matters;
    the published files say it beside MinPts, so that a map or a PNG never
    suggests a density the release cannot detect. Public values only."""
    if swamped_min_samples(model) is None:
        return ""
    return f"swamped: a place needs about {model.spans.threshold:,.0f} {unit_noun(model)} within eps"


def min_samples_brief(model: SpanModel) -> str:
    """ "MinPts=30", with :func:`swamp_brief` after it when it applies."""
    swamp = swamp_brief(model)
    return f"MinPts={model.spec.min_samples}" + (f", {swamp}" if swamp else "")


def swamp_line(model: SpanModel, noun: str) -> list[str]:
    """The summary's plain warning when the noise margin swamps MinPts."""
    flat = swamped_min_samples(model)
    if flat is None:
        return []
    s, spec = model.spans, model.spec
    return [
        f"  MinPts  : swamped by the noise margin, so every min_samples from 1 to {flat:,} gives this "
        f"same release: the empty-space guard raises the threshold at every place to at most "
        f"{s.threshold:,.1f} {noun} within eps, above min_samples={spec.min_samples} plus the margin; "
        f"a place needs about {s.threshold:,.0f} {noun} within eps to be found (a larger epsilon or "
        "eps lowers the guard)"
    ]


#: A person-level release whose core threshold is under this share of its
#: busiest cell's noisy count says that MinPts is small beside the fleet.
FLEET_SHARE = 0.1


def fleet_line(model: SpanModel, noun: str) -> list[str]:
    """The summary's note when a fixed MinPts, counted in units, is small
    beside the release: the core threshold (MinPts plus the margin, units
    within eps) under FLEET_SHARE of the busiest cell's noisy count.

    Why: an absolute MinPts cannot tell a large fleet's places from where it
    merely passes. Stops or trip ends on a road grow with the traffic on
    it: with thousands of units, the few in a hundred of those passing a
    busy road who stop there (a jam) are hundreds of units within eps, over
    a MinPts such as 30 that makes places of a fleet of hundreds (10,000
    synthetic taxis a week, MinPts 30: 0.78 of the busiest passage cells in
    spans, the threshold 2.9% of the busiest cell; MinPts 1,000: 0.18 and
    11%; the automatic mode 0.02; 2,000 taxis, MinPts 30: 0.00 to 0.02 and
    12-21%; docs/places-study.md section 3). The release does not see the traffic;
    its busiest cell grows with the fleet and the horizon as the roads' stops
    do, so a share of it is "many units" at any size. MinPts is the user's:
    this only says so, and the least a fixed MinPts would need. Post-processing: the
    noisy histogram and the release's threshold, nothing else."""
    h, units = model.histogram, model.release.units
    if units is None or units.max_points_per_cell != 1 or model.auto is not None or h is None:
        return []
    if not core_test(model.spec.core).guard_swamps:  # the density test: a threshold in units within eps
        return []
    busiest = float(np.max(np.asarray(h.values), initial=0.0))
    threshold = float(model.spans.threshold)
    if not (threshold > 0 and threshold < FLEET_SHARE * busiest):
        return []
    return [
        f"  fleet   : MinPts={model.spec.min_samples} is small beside this release: its busiest cell "
        f"counts about {busiest:,.0f} {noun}, {busiest / threshold:,.0f} times the core threshold "
        f"({threshold:,.0f} {noun} within eps); in a fleet this large the few in a hundred of the "
        f"{noun} passing a busy road who stop there can pass it, so spans may follow roads. The automatic "
        "mode (eps and min_samples auto) leaves out what is small beside its peak; a fixed MinPts must be "
        f"far larger: at least {FLEET_SHARE:.0%} of the busiest cell (about {FLEET_SHARE * busiest:,.0f})"
    ]


def summary(model: SpanModel) -> str:
    """The release in a few lines (what ``dpdbscan fit`` prints): each a
    sentence, with the paper's symbols in brackets."""
    g, s, spec, rel = model.grid, model.spans, model.spec, model.release
    test = words_of(spec.core)
    length = length_of(model)
    core = "sub-cell" if spec.subcells > 1 else "cell"
    noun = unit_noun(model)
    lines = [
        f"DP-DBSCAN spans: {model.n_spans} span(s) from {model.n_core_cells} core {core}(s)",
        f"  privacy : {protection(model)}",
        f"  noise   : {noise_words(model)}",
        f"  DBSCAN  : {dense_words(model)}; " + test.threshold_text(s.threshold, core, noun),
        "  grid    : "
        + grid_words(rel.grid.n_cells, g.d, spec.subcells, rel.grid.kappa, s.kappa_q, length(rel.grid.width)),
        "  margin  : "
        + test.margin_text(s, spec, noun)
        + f"; points within {length(spec.border)} of a core {core} join its span "
        + border_cells_words(model)
        + f"(border={length(spec.border)})"
        + (f"; {shown}" if (shown := shown_words(model, noun)) else ""),
        *swamp_line(model, noun),
        *fleet_line(model, noun),
        own_eps_words(model, test.guarantee_line(guarantee(model), s, eps_candidates(model), length)),
    ]
    return "\n".join(
        lines
        + bound_lines(model)
        + size_lines(model)
        + second_lines(model)
        + second_left_out_lines(model)
        + event_lines(model)
        + origin_lines(model)
    )


def own_eps_words(model: SpanModel, line: str) -> str:
    """The guarantee line of a level selection with spans at an eps of their
    own (:mod:`dpdbscan.post.ownscale`): its all-at-once statement is of
    the spans at the model's eps; the others' are at their own eps."""
    own = own_eps_spans(guarantee(model).get("levels") or [], model.grid.eps)
    if not own:
        return line
    return (
        line.replace("every span lies", f"every span at eps={eps_text(model, model.grid.eps)} lies", 1)
        + f"; the {len(own)} span(s) at a larger eps of their own each lie within one (ratio x its eps, "
        "M*)-cluster at its own level, with the same probability (levels below)"
    )


def bound_lines(model: SpanModel) -> list[str]:
    """The contribution bound of a person-level release, and how k was
    chosen when the release chose it."""
    rel = model.release
    if rel.units is None:
        return []
    b, c = rel.units, rel.unit_choice
    line = (
        f"  units   : each unit adds to at most k={b.max_cells_per_unit:,} cell(s)"
        f"{' (its busiest)' if b.cell_choice == 'busiest' else ''}, "
        f"at most m={b.max_points_per_cell} point(s) to each"
    )
    if c is not None:
        line += (
            f"; k chosen privately among {len(c.candidates)} candidates ({c.candidates[0]:,} to "
            f"{c.candidates[-1]:,}) by the exponential mechanism, for {c.share:.0%} of rho (where "
            "few units are counted every candidate scores about the same and the draw is close to "
            "uniform: k then says little about the data)"
        )
    # the accuracy statement is about what was counted, not the raw rows
    return [line + "; the guarantee's clusters are those of the data so bounded"]


def size_lines(model: SpanModel) -> list[str]:
    """The automatic mode's DP count of the points, when it made one, and
    whether it sized the grid (:func:`~dpdbscan.params.sizing.sized_n`: in
    2-D only below SMALL_N, in 3-D and up only above LARGE_N, and in 3-D from
    FINER_3D_FROM to LARGE_N for the finer base with spans joined by faces,
    :func:`~dpdbscan.params.sizing.joins_faces`; elsewhere the
    grid is the one for ASSUMED_N points, as without a count)."""
    size = model.release.size_estimate
    if size is None or size.value is None:
        return []
    part = "rho" if size.rho is not None else "epsilon"
    spent = f"for {size.share:.0%} of {part}, part of the budget above"
    d = model.release.grid.d
    # the finer 3-D base: a grid for more points than were counted, looked up
    # as the fit does (sizing.finer_n, which a research block may replace)
    finer = sizing.finer_n(size.value, d)
    if joins_faces(size.value, d) and finer is not None:
        return [
            f"  count   : a DP count of the points, {size.value:,.0f}, sized the grid for "
            f"{finer:,.0f} points (the finer 3-D base from {FINER_3D_FROM:,} to "
            f"{LARGE_N:,}), and the spans join core sub-cells only where they share a face ({spent})"
        ]
    if finer is not None or sized_n(size.value, d) is not None:
        how = "" if finer is None else f" for {finer:,.0f} points (the finer 3-D base)"
        return [f"  count   : a DP count of the points, {size.value:,.0f}, sized the grid{how} ({spent})"]
    where = f"at most {LARGE_N:,} in 3-D and up" if model.release.grid.d >= 3 else f"at least {SMALL_N:,}"
    return [
        f"  count   : a DP count of the points, {size.value:,.0f} ({spent}); {where}, so the grid "
        f"is the one for {ASSUMED_N:,} points, as without a count"
    ]


def second_lines(model: SpanModel, *, spans: bool = True) -> list[str]:
    """Release two of the automatic mode in 3-D (docs/privacy.md 4.10), when
    it made one: two releases, what each spent, and (``spans``) which spans
    it split (or, spans at other parameters that left its split out, that
    they are release one's alone)."""
    spent = model.release.second
    if spent is None:
        return []
    rec = model.release_two if spans else None
    eps = model.release.epsilon
    if rec is None:
        detail = ""
        what = (
            "these spans, at other parameters than the automatic choice's, are release one's alone: "
            "release two's split is not carried over to them"
            if spans
            else ""
        )
    else:
        f = int(rec["fine"])
        split = [sp for sp in rec["spans"] if sp.get("split")]
        parts = "; ".join(
            f"span {sp['span']} into {', '.join(str(i) for i in sp['ids'][:-1])} and {sp['ids'][-1]}"
            for sp in split
        )
        what = f"it split {parts} (their parts lie side by side)" if split else "it split no span"
        cells = (
            f"{f}^{model.grid.d} in each of release one's dense cells in spans, chosen from release one alone"
        )
        counted = (
            f"discrete Gaussian counts of {rec['n_fine_cells']:,} cells of each unit's bounded points"
            if spent.noise == "gaussian"
            else f"discrete Laplace counts of {rec['n_fine_cells']:,} cells"
        )
        detail = f" ({counted}, {cells})"
    if spent.noise == "gaussian":
        # person level (research.person_second, off by default): shares of rho
        rho, two = model.release.rho or 0.0, spent.rho or 0.0
        return [
            f"  releases: two, which together spend rho={rho:.4g} (epsilon={eps:g}): release one (the "
            f"histogram) rho={rho - two:.4g}, release two rho={two:.4g}{detail}"
            + (f"; {what}" if what else "")
        ]
    return [
        f"  releases: two, which together spend epsilon={eps:g}: release one (the DP count and the "
        f"histogram) epsilon={eps * (1 - spent.share):.3g}, release two epsilon={eps * spent.share:.3g}"
        f"{detail}" + (f"; {what}" if what else "")
    ]


def release_count(model: SpanModel) -> str:
    """The words "one release", or "two releases" where the automatic mode's release
    two was spent (docs/privacy.md 4.10), whether or not these spans carry
    its split (spans at other parameters): what a command that re-uses the
    release says it came from. Public: the model's own record."""
    return "one release" if model.release.second is None else "two releases"


def second_left_out_lines(model: SpanModel) -> list[str]:
    """Where the automatic mode's release two (docs/privacy.md 4.10) could
    split side-by-side strands but was not made: a person-level automatic
    choice of eps in 3-D without ``auto["second"]``. Says so in words, so
    that a reader of a person-level summary does not take one release as the
    event level's two (the privacy line already states the one release's
    spend). Public: the model's own record."""
    a = model.auto or {}
    if (
        model.release.units is None
        or model.grid.d != 3  # release two's dimension (dpdbscan.plan.autoplan.SECOND_DIMS)
        or "eps" not in (a.get("chosen") or [])
        or sidebyside.KEY in a
    ):
        return []
    return [
        "  releases: one; the automatic mode's second, finer release, which splits a 3-D span where "
        "its parts lie side by side, was not made for this person-level release (docs/privacy.md "
        "4.10 says why), so side-by-side strands may be one span"
    ]


def event_lines(model: SpanModel) -> list[str]:
    """What a person-level release counted when each unit's events (its
    stops, its trip ends) stood for its rows."""
    events = model.metadata.get("events")
    if model.release.units is None or not events:
        return []
    # lazy: as _counted's
    from ..traces import event_words

    return [
        f"  events  : counted {event_words(events, length_of(model))}; each unit's from its own rows "
        "alone, so the protection of each unit is unchanged"
    ]


def origin_lines(model: SpanModel) -> list[str]:
    """Where the parameters came from: the automatic mode's choice, or a
    re-parameterised release."""
    rel = model.release
    if model.auto is not None:
        a = model.auto
        chosen = " and ".join(a.get("chosen", [])) or "nothing"
        if is_levels(model):
            what = f"min_samples per span, lowest {model.spec.min_samples}"
        else:
            what = f"min_samples={model.spec.min_samples}"
        return [
            f"  auto    : {chosen} chosen from the release without labels "
            f"(eps={eps_text(model, model.grid.eps)}, {what}; {a.get('criterion')},"
            f" score {a.get('score', 0):.3g}, {a.get('clusters')} cluster(s)); base release "
            f"at eps={eps_text(model, a.get('base_eps', rel.eps))}, no extra budget",
            *level_lines(model, guarantee(model).get("levels")),
        ]
    if rel.eps != model.grid.eps or rel.min_samples != model.spec.min_samples:
        return [
            f"  release : made at eps={eps_text(model, rel.eps)}, min_samples={rel.min_samples}; "
            "these spans re-parameterise it (no extra budget)"
        ]
    return []


def border_cells_words(model: SpanModel) -> str:
    """ "where the release shows ... " (with its trailing space) when only
    cells that show points join as border (``border_cells="occupied"``),
    else ""."""
    h = model.histogram
    a = model.auto or {}
    if model.spec.border_cells == "own" and h is not None and a.get("own_share") is not None:
        return (
            f"where their own noisy count is not under {100 * float(a['own_share']):g}% of the span's "
            f"busiest cell by more than {float(a.get('own_sds', 0.0)):g} noise standard deviations "
            f"(or within {float(a.get('own_near', 0.0)):g} cell of a core centre) "
        )
    if model.spec.border_cells != "occupied" or h is None:
        return ""
    t = shown_count(h.noise, h.scale)
    return f"where the release shows them (a cell's noisy count at least {t:,} {unit_noun(model)}) "


__all__ = [
    "published_statement",
    "describe",
    "summary",
    "margin_figures",
    "length_of",
    "noise_name",
    "noise_words",
    "origin_lines",
    "protection",
    "protection_brief",
    "series_brief",
    "bound_brief",
    "seeded",
    "SEEDED",
    "guarantee_void",
    "protection_fields",
    "bound_lines",
    "event_lines",
    "second_left_out_lines",
    "release_count",
    "MARGIN_FIGURES",
    "NOISE_NAMES",
]
