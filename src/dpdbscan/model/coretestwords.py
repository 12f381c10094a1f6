"""What every core test's words share: the halves of a guarantee in words,
the union over eps candidates, and the interface each test's words implement.

A core test (:mod:`dpdbscan.post.coretests`) computes the spans and the
numbers of their guarantee; the sentences that state them live here and in
one module per test (:mod:`.boundwords`, :mod:`.densitywords`), found by the
test's name through :func:`dpdbscan.model.words.words_of`. Every text is a
sentence a reader without the paper follows, with the paper's symbol in
brackets after the words.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from ..cells.histogram import NoisyHistogram
from ..params.specs import ReleaseInfo, SpanSpec
from ..post.spans import Spans


def plain_length(value: float) -> str:
    """A length in the data's own units (what a model without a projection uses)."""
    return f"{value:g}"


@dataclass(frozen=True)
class QuietRelease:
    """What a note on a release that says little is written from: public
    parameters and the release only (post-processing). ``problems``: the
    test's (:meth:`~dpdbscan.post.coretests.CoreTest.problems`), empty when
    the release is useful; ``noise_std``: one estimate's noise (the
    forecast's); ``noun``: what the counts count (units at person level);
    ``length``: how eps reads on the ground (a ``--geo`` model's metres),
    None where lengths are the data's own; ``events``: the kind of events the
    points are (stops, trip ends), None for raw points."""

    hist: NoisyHistogram
    spans: Spans
    spec: SpanSpec
    problems: tuple[str, ...]
    noise_std: float
    noun: str = "points"
    length: Callable[[float], str] | None = None
    #: what each point is when the input was made into events before the
    #: release ("stops", "trip ends"; public: the user's option), else None
    events: str | None = None


class CoreTestWords(ABC):
    """The words of one core test: its rule, margin, threshold, guarantee and
    utility notes, for the summary, ``dpdbscan info`` and the model file."""

    #: The core test's name (:attr:`dpdbscan.post.coretests.CoreTest.name`).
    name: ClassVar[str]

    @abstractmethod
    def statement(
        self,
        g: dict,
        spans: Spans,
        spec: SpanSpec,
        release: ReleaseInfo,
        candidates: int,
        length: Callable[[float], str] = plain_length,
    ) -> str:
        """The guarantee's ``statement`` from the numbers of the test's
        :meth:`~dpdbscan.post.coretests.CoreTest.guarantee` ``g``, lengths
        through ``length`` (the model file's: plain numbers in the model's
        units; a published GeoJSON's: on the ground)."""

    @abstractmethod
    def threshold_text(self, threshold: float, core: str, noun: str = "points") -> str:
        """What a (sub-)cell (``core`` names which) needs to be core, for the
        summary, ending in the symbol, e.g. ``... (threshold E~ >= 1002.9)``;
        ``noun`` names what the counts count (units at person level)."""

    @abstractmethod
    def margin_text(self, spans: Spans, spec: SpanSpec, noun: str = "points") -> str:
        """The margin in words for the summary, e.g. ``... (m(q) <= 2.93)``;
        ``noun`` as for :meth:`threshold_text`."""

    def guarantee_line(self, g: dict, spans: Spans, candidates: int, length: Callable[[float], str]) -> str:
        """The summary's guarantee line from the guarantee's dict ``g``,
        lengths through ``length``: :meth:`guarantee_text`, then the core
        test's name with its additive error tau (a test without one records
        None) and the union over the eps candidates."""
        tau = "" if g["tau"] is None else f" (tau={g['tau']:.1f})"
        text = self.guarantee_text(g, spans, length)
        return f"  guarantee: {text}; core test: {self.name}{tau}{union_note(candidates)}"

    @abstractmethod
    def rule_text(self, spans: Spans, spec: SpanSpec, noun: str = "points") -> str:
        """The core rule in words (``dpdbscan info``)."""

    @abstractmethod
    def tau_text(self, spans: Spans) -> str:
        """The additive error tau in words, or why there is none (``dpdbscan info``)."""

    @abstractmethod
    def guarantee_text(self, g: dict, spans: Spans, length: Callable[[float], str]) -> str:
        """The guarantee in words for ``dpdbscan info``, lengths through ``length``."""

    def utility_note(self, r: QuietRelease) -> str | None:
        """A note on a release that is unlikely to be useful, from the test's
        ``r.problems``, or None."""
        if not r.problems:
            return None
        spans, spec = r.spans, r.spec
        return (
            f"the release has no span: a cell is core only when about {spans.threshold:.0f} noisy "
            f"points lie within eps of it (min_samples={spec.min_samples} plus the margin "
            f"{spans.threshold - spec.min_samples:.1f} for this epsilon). Small or sparse data "
            "need a larger eps, a larger epsilon or fewer dimensions; see docs/accuracy.md on "
            "small data sets."
        )


def union_void(candidates: int, beta: float) -> str:
    return (
        f"no guarantee: eps was chosen after the noise among {candidates} candidates, and the union "
        f"bound over them at beta = {beta:g} each leaves no probability"
    )


def union_words(candidates: int, beta: float) -> str:
    if candidates == 1:
        return ""
    return (
        f" (union over {candidates} eps candidates: eps was chosen after the noise, and each "
        f"candidate's margins took beta = {beta:.4g})"
    )


def union_note(candidates: int) -> str:
    return "" if candidates == 1 else f"; eps chosen among {candidates} candidates, beta/{candidates} each"


def within_words(
    within: Mapping[str, float], ratio: float, length: Callable[[float], str] = plain_length
) -> str:
    """ "Every span lies within R of one cluster ...": the half of a guarantee
    that keeps spans inside the clusters of exact DBSCAN at radius R = ratio
    x eps (the approximation ratio) and MinPts M (``within``: ``eps`` = R,
    ``min_samples`` = M), in words.

    A threshold decides whether that is a statement about density. At MinPts
    = 1 every point of the data is a core point of DBSCAN (its own
    R-neighbourhood holds it), so an (R, 1)-cluster is any group of points
    chained at steps under R: the statement then says only that a span stays
    within R of one such group (no span in empty space or across a gap of R
    or more) and certifies no density at all. At M >= 2 every core point of
    the cluster has M - 1 other points within R, a density certificate that
    grows with M. So M >= 2 (after rounding up: counts are integers) is where
    the words speak of density, and M = 1 says plainly that this all-at-once
    statement certifies no density at these settings (M < 1 is
    :func:`no_guarantee`); the density test states what holds for each place
    alone beside it.
    """
    r, m = within["eps"], within["min_samples"]
    radius = f"{length(r)} ({ratio:g} x eps, MinPts={_count(m)})"
    if math.ceil(m) <= 1:
        return (
            f"every span lies within {radius} of one group of points chained at steps under "
            f"{length(r)}: no span lies in empty space or bridges a gap that wide (for every place "
            "at once the noise of the worst of them absorbs MinPts, so this part certifies no density "
            "beyond MinPts=1; a larger min_samples or epsilon raises it)"
        )
    return (
        f"every span lies within {length(r)} of one cluster of points that each have at least "
        f"{_count(m)} points within {radius}"
    )


def covers_words(covers: Mapping[str, float], length: Callable[[float], str] = plain_length) -> str:
    """ "Every cluster ... lies in one span": the covering half of the bound
    test's guarantee (clusters of exact DBSCAN at eps and MinPts'), in words."""
    m = covers["min_samples"]
    return (
        f"every cluster of points that each have at least {_count(m)} points within "
        f"{length(covers['eps'])} lies inside one span (MinPts={_count(m)})"
    )


def _count(m: float) -> str:
    return f"{m:g}" if float(m).is_integer() else f"{m:.1f}"


def no_guarantee(min_samples: float | None, what: str = "") -> str:
    """Why a relaxed-cluster statement says nothing, in words."""
    shown = "unknown" if min_samples is None else f"{min_samples:.4g}"
    return (
        f"no guarantee{' ' + what if what else ''}: the clusters that would contain the spans "
        f"need MinPts = {shown} < 1, which every location of the space meets, so spans may lie "
        "in empty space"
    )


__all__ = [
    "CoreTestWords",
    "covers_words",
    "no_guarantee",
    "plain_length",
    "union_note",
    "union_void",
    "union_words",
    "within_words",
]
