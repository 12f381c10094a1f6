"""The interface of a core test, and what every test shares.

A core test decides, from a released noisy histogram and public parameters
only, which (sub-)cells are core; it owns everything that depends on that
decision: its parameter rules and defaults, its margin, threshold and border
rule, its guarantee and the words that state it. Each test is one folder of
``post/coretests`` with a module ``<name>test.py`` defining a subclass of
:class:`CoreTest`; the registry (:mod:`dpdbscan.post.coretests`) maps names
to instances. Adding a test is that folder and one registry line.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ...cells.grid import Grid
from ...cells.histogram import NoisyHistogram
from ...cells.subcells import SubcellLayout
from ...spec.specs import ReleaseInfo, SpanSpec
from ..partition import Partition, sub_cell_mass


@dataclass(frozen=True)
class Spans:
    """Core (sub-)cells grouped into spans, and the quantities used to get them.

    Attributes
    ----------
    grid : Grid
        The grid of the spans: the histogram's, or its sub-cells.
    core_keys : ndarray
        Sorted keys (in ``grid``) of the core cells.
    labels : ndarray
        Span id of each core cell, numbered by smallest cell.
    gamma : float
        The margin of the core test: Gamma_low (bound test) or the largest
        m(q) (density test).
    gamma_upper : float or None
        Bound test: the upper margin Gamma_up; None otherwise.
    tau : float or None
        Bound test: the additive error Gamma_low + Gamma_up; None otherwise.
    threshold : float
        The (largest) core threshold: on UB~ for the bound test (MinPts + tau
        with the practical rule), on the estimate E~ for the density test.
    kappa_q : int
        The most cells within alpha of one (sub-)cell, max |NB(q)|: the noisy
        terms of a sub-cell's neighbour sum, which the margins' union bound
        covers. The histogram grid's ``kappa`` (cells within alpha of a whole
        cell, the paper's kappa) is ``release.grid.kappa``; they are equal
        without sub-cells.
    n_events : int
        Number of sums the union bounds cover (k^d |X|).
    rho : float
        Approximation ratio of the guarantee.
    extra : dict or None
        Density test: ``accuracy_margin`` (G), ``m_star`` (M*) and
        ``probability`` of its one-sided guarantee.
    """

    grid: Grid
    core_keys: np.ndarray
    labels: np.ndarray
    gamma: float
    gamma_upper: float | None
    tau: float | None
    threshold: float
    kappa_q: int
    n_events: int
    rho: float
    extra: Mapping[str, Any] | None

    @property
    def n_spans(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0


def spans_on(
    layout: SubcellLayout,
    core_keys: np.ndarray,
    labels: np.ndarray,
    *,
    gamma: float,
    gamma_upper: float | None,
    tau: float | None,
    threshold: float,
    extra: Mapping[str, Any] | None,
    grid: Grid | None = None,
) -> Spans:
    """:class:`Spans` on ``layout``'s sub-cells (or on ``grid``, the same
    cells as a saved model wrote them), with the layout's kappa_q, number of
    events and ratio (the fields every core test fills alike)."""
    return Spans(
        grid=layout.fine if grid is None else grid,
        core_keys=core_keys,
        labels=labels,
        gamma=float(gamma),
        gamma_upper=None if gamma_upper is None else float(gamma_upper),
        tau=None if tau is None else float(tau),
        threshold=float(threshold),
        kappa_q=int(layout.kappa_q),
        n_events=int(layout.n_events),
        rho=layout.rho,
        extra=extra,
    )


@dataclass(frozen=True)
class Stored:
    """What a saved model holds of its spans (read by the codec), with the
    public values that their margins follow from.

    ``grid`` is the histogram's grid, ``spans_grid`` its sub-cells' as
    saved; ``kind``, ``noise``, ``scale`` and
    ``theta`` are the release's; ``gamma`` and ``gamma_upper`` the margins
    the spans were made with, which :meth:`CoreTest.restore` checks.
    """

    grid: Grid
    spans_grid: Grid
    core_keys: np.ndarray
    labels: np.ndarray
    kind: str
    noise: str
    scale: float
    theta: float
    gamma: float
    gamma_upper: float | None


@dataclass(frozen=True)
class Figures:
    """What a release will show before it is made (the forecast's numbers).

    ``gamma``: the margin; ``noise_std``: the noise of one statistic the test
    thresholds; ``margin_value``: what the threshold adds to MinPts;
    ``terms``: noisy counts summed per candidate cell; ``kappa_q``: the most
    cells within eps of one sub-cell (:attr:`Spans.kappa_q`); ``margin_text``: what the margin is,
    in words."""

    gamma: float
    noise_std: float
    margin_value: float
    terms: int
    kappa_q: int
    margin_text: str

    def threshold(self, min_samples: int) -> float:
        return min_samples + self.margin_value


@dataclass(frozen=True)
class Statistic:
    """What a core test thresholds, per sub-position q of a cell: a weighted
    sum of released counts, sum_Y W(q, Y) x~_Y, against a threshold. What a
    release can detect follows from it (:mod:`dpdbscan.plan.detection`).

    ``weights[i]``: the multiset of weights of position i's sum (sorted, the
    zeros left out: the noise's law depends on nothing else); ``own[i]``: the
    weight of q's own cell in it; ``sums[i]``: the sum of the weights (the
    cells of an eps-ball); ``thresholds[i]``: what the sum must reach;
    ``occupancy``: (c, gamma) of a condition on the own cell's released value
    x~_0 as well, x~_0 > c or x~_0 >= gamma (the sum) / sums[i] (None: the
    test has no such condition)."""

    weights: tuple[tuple[float, ...], ...]
    own: tuple[float, ...]
    sums: tuple[float, ...]
    thresholds: tuple[float, ...]
    occupancy: tuple[float, float] | None


#: A function naming a parameter as the user wrote it (API or command line).
Namer = Callable[[str], str]


class CoreTest(ABC):
    """A core test: its name, rules and defaults, spans, guarantee and words."""

    #: The test's name: the ``core`` parameter's value and the model file's tag.
    name: ClassVar[str]
    #: How ``predict`` gives border points a span: the nearest core sub-cell
    #: "centres" within the border radius, or core "cells" within it.
    predict_to: ClassVar[str]
    #: The string margin rules the test accepts (besides "auto").
    margin_rules: ClassVar[tuple[str, ...]]
    #: The largest eps-neighbourhood (cells) the test can evaluate.
    max_kappa: ClassVar[int]
    #: Whether a number is a margin rule (c sigmas) besides the named rules.
    numeric_margin: ClassVar[bool]

    # -- parameters ---------------------------------------------------------
    @abstractmethod
    def check(self, values: Mapping[str, Any], opt: Namer, cli: bool) -> None:
        """Refuse combinations of parameters this test cannot use (public)."""

    @abstractmethod
    def resolve_margin(self, rule: str | float) -> str | float:
        """The margin rule "auto" stands for, or ``rule`` itself."""

    @abstractmethod
    def default_border(self, alpha: float, eta: float, subcells: int) -> float:
        """The border radius "auto" stands for."""

    @abstractmethod
    def border_at(self, border: float, alpha: float, new_alpha: float) -> float:
        """The border radius of the same spans re-measured at ``new_alpha``."""

    # -- spans --------------------------------------------------------------
    @abstractmethod
    def build(
        self,
        hist: NoisyHistogram,
        spec: SpanSpec,
        *,
        gamma: float | None = None,
        gamma_upper: float | None = None,
    ) -> Spans:
        """Core (sub-)cells and spans from the release (post-processing only).
        ``gamma``/``gamma_upper`` override the margins (tests; a
        re-parameterisation at the same alpha)."""

    @abstractmethod
    def spans_of(
        self, hist: NoisyHistogram, spec: SpanSpec, core_keys: np.ndarray, labels: np.ndarray
    ) -> Spans:
        """The :class:`Spans` of core (sub-)cells ``core_keys`` (sorted keys of
        ``hist.grid.subdivided(spec.subcells)``) grouped by ``labels``, with
        the margins and guarantee of ``hist``'s alpha and ``spec``: for cells
        that come from :meth:`ladder` rather than :meth:`build`."""

    @abstractmethod
    def restore(self, stored: Stored, spec: SpanSpec) -> Spans:
        """The :class:`Spans` of a saved release: the margins it stored are
        checked against its public parameters (ValueError if they disagree)
        and what follows from them is recomputed."""

    @abstractmethod
    def figures(
        self, grid: Grid, kind: str, noise: str, epsilon: float, theta: float, spec: SpanSpec
    ) -> Figures:
        """The margin and what it implies for a release with these public
        fields, before it is made (the forecast)."""

    @abstractmethod
    def statistic(
        self, grid: Grid, kind: str, noise: str, scale: float, theta: float, spec: SpanSpec
    ) -> Statistic:
        """The sum the test thresholds and its thresholds for a release with
        these public fields (what it can detect, before it is made)."""

    # -- guarantee and words ------------------------------------------------
    @abstractmethod
    def guarantee(self, spans: Spans, spec: SpanSpec, release: ReleaseInfo, candidates: int) -> dict:
        """The guarantee of these spans as a JSON-safe dict with a
        ``statement`` in words; ``candidates`` eps values were considered
        after the noise was drawn (1 when eps was given)."""

    # Every text below is a sentence a reader without the paper follows, with
    # the paper's symbol in brackets after the words.
    @abstractmethod
    def threshold_text(self, threshold: float, core: str, noun: str = "points") -> str:
        """What a (sub-)cell (``core`` names which) needs to be core, for the
        summary, ending in the symbol, e.g. ``... (threshold E~ >= 1002.9)``;
        ``noun`` names what the counts count (units at person level)."""

    @abstractmethod
    def margin_text(self, spans: Spans, spec: SpanSpec, noun: str = "points") -> str:
        """The margin in words for the summary, e.g. ``... (m(q) <= 2.93)``;
        ``noun`` as for :meth:`threshold_text`."""

    @abstractmethod
    def guarantee_line(self, g: dict, spans: Spans, candidates: int, length: Callable[[float], str]) -> str:
        """The summary's guarantee line from :meth:`guarantee`'s dict ``g``,
        lengths through ``length``."""

    @abstractmethod
    def rule_text(self, spans: Spans, spec: SpanSpec, noun: str = "points") -> str:
        """The core rule in words (``dpdbscan info``)."""

    @abstractmethod
    def tau_text(self, spans: Spans) -> str:
        """The additive error tau in words, or why there is none (``dpdbscan info``)."""

    @abstractmethod
    def guarantee_text(self, g: dict, spans: Spans, length: Callable[[float], str]) -> str:
        """The guarantee in words for ``dpdbscan info``, lengths through ``length``."""

    def ladder(
        self, hist: NoisyHistogram, spec: SpanSpec, alphas: Sequence[float], min_samples: Sequence[int]
    ) -> dict[tuple[float, int], Partition]:
        """The spans at every (alpha, MinPts) of the grid, from the release
        ``hist`` (post-processing). This one builds each pair's spans; a test
        may serve the ladder faster."""
        base = hist.grid
        k = int(spec.subcells)
        common = base.subdivided(k)
        out: dict[tuple[float, int], Partition] = {}
        for alpha in sorted({float(a) for a in alphas}):
            h = hist.on_grid(base.at_alpha(alpha))
            for m in sorted({int(m) for m in min_samples}):
                spans = self.build(h, replace(spec, min_samples=m))
                keys = common.encode(spans.grid.decode(spans.core_keys))
                out[(alpha, m)] = Partition(
                    alpha, m, keys, spans.labels, sub_cell_mass(hist, common, keys, k), spans.threshold
                )
        return out

    def utility_note(
        self, hist: NoisyHistogram, spans: Spans, spec: SpanSpec, noise_std: float, noun: str = "points"
    ) -> str | None:
        """A note on a release that is unlikely to be useful (post-processing
        of the release: safe to say), or None."""
        if spans.n_spans:
            return None
        return (
            f"the release has no span: a cell is core only when about {spans.threshold:.0f} noisy "
            f"points lie within eps of it (min_samples={spec.min_samples} plus the margin "
            f"{spans.threshold - spec.min_samples:.1f} for this epsilon). Small or sparse data "
            "need a larger eps, a larger epsilon or fewer dimensions; see docs/accuracy.md on "
            "small data sets."
        )


# --------------------------------------------------------------------------- #
# shared by the guarantees


def over_candidates(probability: float | None, candidates: int) -> float | None:
    """A guarantee's probability after the union bound over ``candidates``
    eps values, 1 - c (1 - p) for one candidate's p; None when that leaves
    nothing."""
    if probability is None:
        return None
    # rounded: c * (beta / c) is beta up to the last bit, and 0.9 should read 0.9
    p = round(1.0 - candidates * (1.0 - probability), 12)
    return p if p > 0 else None


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


def relaxed(alpha: float, min_samples: float | None) -> dict | None:
    """The (alpha, MinPts) of the clusters that contain the spans, or None
    when MinPts < 1 makes the statement empty. Counts are integers, so a
    MinPts in (0, 1) asks what MinPts = 1 asks; at MinPts <= 0 every location,
    empty space included, is core and one cluster spans everything."""
    if min_samples is None or math.ceil(min_samples) < 1:
        return None
    return {"alpha": alpha, "min_samples": min_samples}


def plain_length(value: float) -> str:
    """A length in the data's own units (what a model without a projection uses)."""
    return f"{value:g}"


def within_words(
    within: Mapping[str, float], rho: float, length: Callable[[float], str] = plain_length
) -> str:
    """ "Every span lies within R of one cluster ...": the half of a guarantee
    that keeps spans inside the clusters of exact DBSCAN at radius R = rho
    eps and MinPts M (``within``: ``alpha`` = R, ``min_samples`` = M), in words.

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
    r, m = within["alpha"], within["min_samples"]
    radius = f"{length(r)} ({rho:g} x eps: rho={rho:g}, MinPts={_count(m)})"
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
        f"{length(covers['alpha'])} lies inside one span (MinPts={_count(m)})"
    )


def grid_words(
    n_cells: int, d: int, subcells: int, kappa: int, kappa_q: int, width: str | None = None
) -> str:
    """The grid in words with its symbols: the cells (|X|) and their
    ``width`` (w) when given, the sub-cells, and how many cells lie within
    eps of a cell (kappa) and of a sub-cell (kappa_q)."""
    wide = "" if width is None else f" {width} wide"
    symbols = "|X|" if width is None else "|X|, w"
    split = f", each split into {' x '.join([str(subcells)] * d)} sub-cells" if subcells > 1 else ""
    near = (
        f"{kappa} cells lie within eps of a cell, at most {kappa_q} within eps of a sub-cell "
        f"(kappa={kappa}, kappa_q={kappa_q})"
        if subcells > 1
        else f"{kappa} cells lie within eps of a cell (kappa={kappa})"
    )
    return f"{n_cells:,} cells{wide} in {d} dimension(s) ({symbols}){split}; {near}"


def histogram_words(kind: str, theta: float) -> str:
    """Which cells get noise and which are released, in words, with the
    histogram's name: what follows "noise on"."""
    if kind == "dense":
        return "every cell of the box (dense histogram)"
    if kind == "sparse":
        return f"every cell, releasing only counts of at least theta={theta:g} (sparse histogram)"
    return f"occupied cells only, releasing only counts of at least theta={theta:g} (stability histogram)"


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
    "CoreTest",
    "Figures",
    "Namer",
    "Statistic",
    "Spans",
    "over_candidates",
    "union_void",
    "union_words",
    "union_note",
    "relaxed",
    "no_guarantee",
    "plain_length",
    "within_words",
    "covers_words",
    "grid_words",
    "histogram_words",
]
