"""The interface of a core test, and what every test shares.

A core test decides, from a released noisy histogram and public parameters
only, which (sub-)cells are core; it owns everything that depends on that
decision: its parameter rules and defaults, its margin, threshold and border
rule and its guarantee (the words that state it are the model's:
:mod:`dpdbscan.model.coretestwords`). Each test is one folder of
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
from ...params.specs import ReleaseInfo, SpanSpec
from ..partition import Partition, sub_cell_mass
from ..spans import Spans, spans_on


@dataclass(frozen=True)
class Stored:
    """What a saved model holds of its spans (read by the codec), with the
    public values that their margins follow from.

    ``grid`` is the histogram's grid, ``spans_grid`` its sub-cells' as
    saved; ``kind``, ``noise``, ``scale`` and
    ``theta`` are the release's; ``noise_margin`` and ``noise_margin_upper`` the margins
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
    noise_margin: float
    noise_margin_upper: float | None


@dataclass(frozen=True)
class MarginOverride:
    """Noise margins that replace the release's in :meth:`CoreTest.build`
    (tests use 0 for the noiseless oracle; a re-parameterisation at the same
    alpha keeps the margins it had). None: the release's own; a test whose
    margin is not a single number (density) ignores them."""

    lower: float | None = None
    upper: float | None = None


@dataclass(frozen=True)
class Figures:
    """What a release will show before it is made (the forecast's numbers).

    ``noise_margin``: the margin (Gamma_low or the largest m(q)); ``noise_std``:
    the noise of one statistic the test thresholds; ``margin_value``: what the threshold adds to MinPts;
    ``terms``: noisy counts summed per candidate cell; ``kappa_q``: the most
    cells within eps of one sub-cell (:attr:`Spans.kappa_q`); ``margin_text``: what the margin is,
    in words."""

    noise_margin: float
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
    ``occupancy``: (c, share) of a condition on the own cell's released value
    x~_0 as well, x~_0 > c or x~_0 >= share (the sum) / sums[i] (None: the
    test has no such condition)."""

    weights: tuple[tuple[float, ...], ...]
    own: tuple[float, ...]
    sums: tuple[float, ...]
    thresholds: tuple[float, ...]
    occupancy: tuple[float, float] | None


#: A function naming a parameter as the user wrote it (API or command line).
Namer = Callable[[str], str]


class CoreTest(ABC):
    """A core test: its name, rules and defaults, spans and guarantee."""

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
    #: Whether the automatic mode's level selection (one MinPts per span,
    #: :mod:`dpdbscan.post.levelsearch`) can choose from this test's spans.
    selects_levels: ClassVar[bool]
    #: Whether the margin's empty-space guard can swamp MinPts (every MinPts
    #: below some value then gives the same release; :func:`.density.swamped`).
    guard_swamps: ClassVar[bool]
    #: Whether the test's sparse Laplace spans are filtered of those the
    #: release's noise alone explains (:mod:`dpdbscan.post.noisespans`): such
    #: a test takes the sparse release on coarse 4-D to 8-D grids at a fixed
    #: eps and MinPts (rule K, :func:`dpdbscan.plan.histogramchoice.choose_kind`).
    filters_noise_spans: ClassVar[bool]
    #: Whether the forecast states the least Gaussian cluster the test finds
    #: (:mod:`dpdbscan.plan.clusterlimit`: the estimate E~ against its threshold).
    states_cluster_limits: ClassVar[bool] = False

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
    def build(self, hist: NoisyHistogram, spec: SpanSpec, margins: MarginOverride | None = None) -> Spans:
        """Core (sub-)cells and spans from the release (post-processing only);
        ``margins`` override the release's (:class:`MarginOverride`; None: none)."""

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

    # -- guarantee -----------------------------------------------------------
    @abstractmethod
    def guarantee(self, spans: Spans, spec: SpanSpec, release: ReleaseInfo, candidates: int) -> dict:
        """The guarantee of these spans as a JSON-safe dict; its ``statement``
        is None here, for the model's words to fill
        (:func:`dpdbscan.model.guarantee.guarantee`); ``candidates`` eps values
        were considered after the noise was drawn (1 when eps was given)."""

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
            h = hist.on_grid(base.at_eps(alpha))
            for m in sorted({int(m) for m in min_samples}):
                spans = self.build(h, replace(spec, min_samples=m))
                keys = common.encode(spans.grid.decode(spans.core_keys))
                out[(alpha, m)] = Partition(
                    alpha, m, keys, spans.labels, sub_cell_mass(hist, common, keys, k), spans.threshold
                )
        return out

    def problems(self, hist: NoisyHistogram, spans: Spans, spec: SpanSpec) -> tuple[str, ...]:
        """What makes a release unlikely to be useful, as codes the model's
        words state (post-processing of the release: safe to say): here
        ``"no_span"`` alone; empty when nothing is wrong."""
        return () if spans.n_spans else ("no_span",)


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


def relaxed(alpha: float, min_samples: float | None) -> dict | None:
    """The (alpha, MinPts) of the clusters that contain the spans, or None
    when MinPts < 1 makes the statement empty. Counts are integers, so a
    MinPts in (0, 1) asks what MinPts = 1 asks; at MinPts <= 0 every location,
    empty space included, is core and one cluster spans everything."""
    if min_samples is None or math.ceil(min_samples) < 1:
        return None
    return {"eps": alpha, "min_samples": min_samples}


__all__ = [
    "CoreTest",
    "Figures",
    "Namer",
    "Statistic",
    "Spans",
    "Stored",
    "over_candidates",
    "relaxed",
    "spans_on",
]
