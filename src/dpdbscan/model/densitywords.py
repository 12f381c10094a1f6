"""The words of the density test (``core="density"``, the default): its rule,
margin, threshold, one-sided guarantee (every span at once, and each place
alone) and the note on a release that says little.

The numbers are the test's (:mod:`dpdbscan.post.coretests.density`); this
module only states them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..params.paramwords import margin_rule_words
from ..params.specs import ReleaseInfo, SpanSpec
from ..post.coretests.density.densitytest import DensityTest
from ..post.spans import Spans
from .coretestwords import (
    CoreTestWords,
    QuietRelease,
    no_guarantee,
    plain_length,
    union_void,
    union_words,
    within_words,
)

ONE_SIDED = "spans need not cover every cluster (one-sided)"


class DensityWords(CoreTestWords):
    name = DensityTest.name

    def statement(
        self,
        g: dict,
        spans: Spans,
        spec: SpanSpec,
        release: ReleaseInfo,
        candidates: int,
        length: Callable[[float], str] = plain_length,
    ) -> str:
        within, probability, place = g["within_clusters_at"], g["probability"], g["each_place"]
        alone = place_words(place, length)
        at_once = "all at once, " if alone else ""
        if within is None:
            return alone + at_once + no_guarantee((spans.extra or {}).get("m_star"))
        if probability is None:
            return alone + at_once + union_void(candidates, spec.beta)
        return density_sentence(probability, within, spans.approx_ratio, length, place) + union_words(
            candidates, spec.beta
        )

    def threshold_text(self, threshold: float, core: str, noun: str = "points") -> str:
        return (
            f"with the noise margin a {core} needs an estimated {threshold:.1f} {noun} or more "
            f"within eps (threshold E~ >= {threshold:.1f})"
        )

    def margin_text(self, spans: Spans, spec: SpanSpec, noun: str = "points") -> str:
        return (
            f"at most {spans.noise_margin:.2f} {noun} are added to min_samples so that noise alone rarely "
            f"makes a place core (m(q) <= {spans.noise_margin:.2f}): {margin_rule_words(spec.margin)}"
        )

    def rule_text(self, spans: Spans, spec: SpanSpec, noun: str = "points") -> str:
        return (
            f"density: a sub-cell is core when its estimated number of {noun} within eps, from the "
            "noisy counts of the cells around it, reaches min_samples plus a noise margin, at most "
            f"{spans.threshold:.1f} {noun} (E~ >= MinPts + m(q), m(q) <= {spans.noise_margin:.2f}), "
            "in a cell "
            "the release shows as occupied; core sub-cells whose centres lie within eps of each other "
            f"form one span. The margin is {margin_rule_words(spec.margin)}"
        )

    def tau_text(self, spans: Spans) -> str:
        return (
            "none: the density test promises that spans stay within dense clusters, not that every "
            "cluster is found (one-sided, no tau)"
        )

    def guarantee_text(self, g: dict, spans: Spans, length: Callable[[float], str]) -> str:
        within = g["within_clusters_at"]
        if g["probability"] is None or within is None:
            return g["statement"]
        return density_sentence(g["probability"], within, spans.approx_ratio, length, g.get("each_place"))

    def utility_note(self, r: QuietRelease) -> str | None:
        """A warning text when the release says little (the problems of
        :func:`dpdbscan.post.coretests.density.coresubcells.utility_problems`),
        or None. Quotes no released value: the text names the threshold's
        parts, and says so when the noise margin is at least min_samples,
        unless the release is far from short of data (its busiest cell over
        :data:`DENSE_TIMES` times the threshold, as in a week of 10,250 taxis'
        stops at MinPts 30): then most counts lie spread beside the places,
        and "small or sparse data need a larger eps or epsilon" would be
        wrong advice. Where the margin is below min_samples, the threshold is
        mostly min_samples and a larger epsilon would change little: the note
        says so instead (MinPts 1,028 on the same stops; MinPts 1000 on
        Cabs-tiny in the README)."""
        if not r.problems:
            return None
        hist, problems, noise_std, noun = r.hist, r.problems, r.noise_std, r.noun
        said = {p: PROBLEMS[p] for p in problems}
        if r.events is not None and "uncovered" in said:
            # a map of places: most events are one unit's own or along the way
            said["uncovered"] = EVENTS_UNCOVERED.format(events=r.events, noun=noun)
        min_samples, margin_value = r.spec.min_samples, r.spans.noise_margin
        threshold = min_samples + margin_value
        # on the ground where lengths read so: "a place needs about N taxis within 172 m"
        within = "" if r.length is None else f" within {r.length(hist.grid.eps)}"
        cause = (
            f"A sub-cell is core only when its estimated eps-neighbourhood holds about "
            f"{threshold:.0f} {noun}{within}: min_samples={min_samples:g} plus the noise margin "
            f"{margin_value:.1f} at epsilon={hist.epsilon:g}"
            + ("" if noise_std is None else f" (one estimate's noise has standard deviation {noise_std:.1f})")
        )
        busiest = float(np.max(np.asarray(hist.values), initial=0.0))
        if r.spans.threshold > 0 and r.spans.threshold * DENSE_TIMES < busiest:
            # not short of data (a large fleet's stops): the rest is spread thin beside its places
            dense = (
                "; ".join(said.values())
                + ". "
                + cause
                + f". The data are not small or sparse: the release's busiest cell counts over {DENSE_TIMES} "
                "times that. "
            )
            if "single_span" in problems and "uncovered" not in problems:
                # one span that holds the data (the chest accelerometer's one span at the
                # automatic eps holds 99% of its points): no "what the spans leave out"
                return (
                    dense + "The single span is not for want of data: clusters that lie within eps of "
                    "each other form one span, and a smaller eps may part them (a new release, "
                    "at a new cost in epsilon)."
                )
            # a unit's stops and passage only where the points are events of units
            beside = " (a unit's own stops, passage)" if r.events is not None else ""
            return (
                dense + f"What the spans leave out is spread thin beside the dense places{beside}, "
                "not too few to see: a larger eps or epsilon is not what it needs."
            )
        forecast = (
            "'dpdbscan forecast' shows what a release can detect before it is made (docs/parameters.md)."
        )
        if margin_value >= min_samples and r.events is not None:
            # few units for this epsilon: places that fewer share stay out, whatever eps
            cause += f" (the margin dominates: few {noun} for this epsilon)"
            advice = (
                f". Places that fewer {noun} share stay out of the spans; "
                "a larger epsilon lowers the margin; "
            )
        elif margin_value >= min_samples:
            cause += " (the margin dominates: the data are small or sparse for this epsilon)"
            advice = ". Small or sparse data need a larger eps or a larger epsilon; "
        else:
            # the threshold is mostly the user's min_samples: a larger epsilon
            # only trims the margin (the README's Cabs-tiny at MinPts 1000)
            advice = (
                ". That threshold is mostly min_samples itself, not the noise: a larger epsilon would "
                "change little; a smaller min_samples or a larger eps puts more of the data in spans, "
                "if that is what is wanted; "
            )
        return "; ".join(said.values()) + ". " + cause + advice + forecast


#: A release whose busiest cell's noisy count is over this many times the core
#: threshold is not short of data (the summary's ``fleet`` line: a tenth).
DENSE_TIMES = 10


#: "uncovered" where the points are events (stops, trip ends): expected of
#: a map of places, not a failure (a newcomer's fleet of 1,000 taxis read
#: "most points will be labelled noise" beside a map that found its places).
EVENTS_UNCOVERED = (
    "most {events} lie outside the spans (less than half of the noisy counts are in their cells): "
    "usual for a map of places, where most {events} are one unit's own (a home, a depot) or spread "
    "along the way, and the spans are where many {noun} come together"
)

#: The problems of a release that says little, in words.
PROBLEMS = {
    "no_span": "the release has no span",
    "single_span": "the release has a single span (one cluster, or clusters that merged, "
    "or only one dense enough to pass)",
    "uncovered": "less than half of the noisy counts lie in cells of the spans, so "
    "most points will be labelled noise",
}


def density_sentence(
    probability: float,
    within: Mapping[str, float],
    rho: float,
    length: Callable[[float], str] = plain_length,
    place: Mapping[str, Any] | None = None,
) -> str:
    """The density test's guarantee in words: every span at once (see
    :func:`~.coretestwords.within_words`), led by what holds for each place
    alone (``place``, :func:`place_words`) when the all-at-once statement
    certifies no density (MinPts = 1 there)."""
    alone = place_words(place, length) if math.ceil(within["min_samples"]) <= 1 else ""
    at_once = f"with probability >= {probability:g}, {within_words(within, rho, length)}"
    if alone:
        at_once = f"all at once, {at_once}"
    return f"{alone}{at_once}; {ONE_SIDED}"


def place_words(place: Mapping[str, Any] | None, length: Callable[[float], str] = plain_length) -> str:
    """ "Each place alone: ..." (with its closing "; "), or "" when the margin
    buys no statement for a single place (a probability of 1/2 or more)."""
    if not place or place.get("probability") is None or place["probability"] >= 0.5:
        return ""
    m, counted = place["min_samples"], str(place.get("counted") or "points")
    if counted != "points":
        counted += " counted (each once per cell)"
    needs = place.get("needs")
    more = (
        ""
        if not needs
        else f", and one with fewer than {needs['min_samples']:,} at most {needs['probability']:g}"
    )
    return (
        f"each place alone: one with fewer than {m:,.0f} {counted} within {length(place['eps'])} "
        f"is core with probability at most {place['probability']:g}{more}; "
    )


__all__ = ["EVENTS_UNCOVERED", "ONE_SIDED", "DensityWords", "PROBLEMS", "density_sentence", "place_words"]
