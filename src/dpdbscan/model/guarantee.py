"""The guarantee of a release's spans, in the paper's terms and in words.

The core test that made the spans states it (two-sided for the bound test,
one-sided for the density test; docs/accuracy.md); this module adds what
the model knows about how its parameters were chosen: when the automatic
mode chose eps after the noise was drawn among c candidates, each
candidate's margins took beta and the guarantee is a union bound over them.
A level selection (``selection="levels"``) adds each span's own statement
at its own MinPts (:mod:`.levels`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..geometry.projection import eps_text
from ..params.specs import UnitBound
from ..post.coretests import core_test
from .coretestwords import plain_length
from .densitywords import place_words
from .levels import level_guarantees
from .record import SpanModel
from .words import words_of

#: Spans whose own statement the guarantee's words list (all are in ``levels``).
LISTED = 6


def eps_candidates(model: SpanModel) -> int:
    """How many eps the automatic mode chose this model's eps from after
    the noise was drawn (1 when eps was given). Each candidate's margins took
    the model's ``beta`` (the user's beta / this number)."""
    a = model.auto or {}
    return len(a.get("eps_candidates") or [0]) if "eps" in (a.get("chosen") or []) else 1


def guarantee(model: SpanModel, length: Callable[[float], str] | None = None) -> dict:
    """The guarantee of the release as a JSON-safe dict, with a ``statement``
    in words (what ``dpdbscan info`` shows). A person-level release's
    statement says what it is relative to (:func:`unit_words`). ``length``:
    how the statement's lengths read (None: plain numbers in the model's own
    units, as the model file records them; a published GeoJSON of a
    geographic model gives them on the ground, "1.2 km")."""
    given, length = length, plain_length if length is None else length
    test = core_test(model.spec.core)
    c = eps_candidates(model)
    g = test.guarantee(model.spans, model.spec, model.release, c)
    g["statement"] = words_of(model.spec.core).statement(g, model.spans, model.spec, model.release, c, length)
    per_span = level_guarantees(model, c)
    if per_span:
        g["levels"] = per_span
        own = own_eps_spans(per_span, model.grid.eps)
        if own:
            # the all-at-once statement is at the chosen eps: not of the spans at their own
            g["statement"] = g["statement"].replace(
                "every span lies", f"every span at eps={eps_text(model, model.grid.eps)} lies", 1
            )
        g["statement"] += levels_words(per_span, model.grid.eps, given)
    noun = unit_noun(model)
    if noun != "points" and g.get("each_place"):
        # at person level with m = 1 the counts are of units: say so
        place = {**g["each_place"], "counted": noun}
        was, now = place_words(g["each_place"], length), place_words(place, length)
        statement = g["statement"].replace(was, now, 1)
        g = {**g, "each_place": place, "statement": statement}
    words = unit_words(model.release.units)
    return g if words is None else {**g, "statement": f"{g['statement']}; {words}"}


def own_eps_spans(per_span: list[dict], eps: float) -> list[dict]:
    """The spans of a level selection taken at an eps of their own (a larger
    candidate's, :mod:`dpdbscan.post.ownscale`), not the model's ``eps``."""
    return [s for s in per_span if not math.isclose(float(s["eps"]), eps, rel_tol=1e-9)]


def levels_words(
    per_span: list[dict] | None, eps: float | None = None, length: Callable[[float], str] | None = None
) -> str:
    """Each span's own statement in words (a level selection; "" for none);
    ``eps``: the model's, to name the spans taken at an eps of their own;
    ``length``: how their eps reads (None: ``.4g`` in the model's units)."""
    if not per_span:
        return ""
    held = [s for s in per_span if s["probability"] is not None]
    if not held:
        return "; no span has a statement of its own (M* < 1 at every selected level)"
    own = {s["span"] for s in own_eps_spans(per_span, eps)} if eps is not None else set()
    p = min(s["probability"] for s in held)
    shown = sorted(held, key=lambda s: (s["span"] not in own, -s["m_star"]))[:LISTED]
    parts = ", ".join(
        f"span {s['span']} ("
        + (own_eps(s["eps"], length) if s["span"] in own else "")
        + f"MinPts {s['min_samples']}): M* = {s['m_star']}"
        for s in shown
    )
    more = f", and {len(held) - len(shown)} more" if len(held) > len(shown) else ""
    if not own:
        return (
            f". Each span was taken at its own MinPts; with probability >= {p:g} (the same event: "
            "at one eps it does not depend on MinPts) each also lies in the span of one (ratio x eps, "
            f"M*)-cluster at its own level: {parts}{more}"
        )
    return (
        f". Each span was taken at its own MinPts, and {len(own)} at a larger candidate eps of its own "
        f"(where the chosen eps kept only a peak of it, or nothing); with probability >= {p:g} (the "
        "same event: every candidate eps's margins took their share of beta, and at one eps it does "
        "not depend on MinPts) each lies in the span of one (ratio x its own eps, M*)-cluster at its "
        f"own level: {parts}{more}"
    )


def own_eps(eps: float, length: Callable[[float], str] | None) -> str:
    """A span's own eps in :func:`levels_words` ("eps 0.3, ")."""
    return f"eps {eps:.4g}, " if length is None else f"eps {length(eps)}, "


def unit_noun(model: SpanModel) -> str:
    """What the release's counts count, as a plural noun: "points" at event
    level or with m > 1, the units at person level with m = 1 (each unit
    counts once in each cell it was in): "cabs" for a unit column named
    ``cab``, else "units"."""
    units = model.release.units
    if units is None or units.max_points_per_cell != 1:
        return "points"
    column = str(model.metadata.get("unit_column") or "")
    if model.metadata.get("unit_from") is not None:
        return "units"  # each file or sub-folder of a folder of traces: not a column's name
    if re.fullmatch(r"[a-z]{2,20}", column) and not column.endswith(("s", "id")):
        return column + "s"
    return "units"


def unit_words(units: UnitBound | None) -> str | None:
    """What a person-level guarantee is relative to, in words (None at
    event level): the clusters are those of the data as bounded per unit,
    and (epsilon, delta) protects each unit."""
    if units is None:
        return None
    k, m = units.max_cells_per_unit, units.max_points_per_cell
    # which k cells a unit with more keeps: its busiest (the default) or k at random
    chosen = "its busiest" if units.cell_choice == "busiest" else "chosen at random"
    return (
        f"person-level: (epsilon, delta) protects each privacy unit, and the clusters are those of "
        f"the data as bounded per unit (at most {k} cell{'s' if k != 1 else ''} per unit, {chosen}, "
        f"and {m} point{'s' if m != 1 else ''} per cell)"
    )


__all__ = ["eps_candidates", "guarantee", "levels_words", "own_eps_spans", "unit_noun", "unit_words"]
