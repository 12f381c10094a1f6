"""The released span model: unions of grid cells that classify any point.

A :class:`SpanModel` holds only public parameters and post-processing of the
noisy histogram: the grid, the core cells grouped into spans and (optionally)
the noisy histogram itself. It never holds training points, so saving,
sharing and querying it costs no privacy. It serves the release: labels
(:mod:`dpdbscan.model.predict`), JSON and GeoJSON (:mod:`dpdbscan.model.codec`), a
description, and spans for other parameters re-computed from the released
histogram by the post-processing (:mod:`dpdbscan.post`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Self

import numpy as np
from numpy.typing import ArrayLike

from ..cells.grid import Grid
from ..cells.histogram import NoisyHistogram
from ..cells.subcells import SubcellLayout
from ..geometry.outlines import Outlines, outlines
from ..geometry.projection import projection_of
from ..post.coretests.bound import margins as _bounds
from ..post.coretests.density import MAX_KAPPA
from ..post.spans import SpanParams, Spans, build_spans, density_guarantee
from ..spec.parameters import check_array, check_min_samples, check_param
from . import codec as serialize
from .predict import predict_spans, span_regions

# the margin and what it was computed from (beta, kappa, |X|, theta), in report order
_MARGIN_FIGURES = ("beta", "gamma", "gamma_upper", "margin", "kappa", "n_events", "n_cells", "theta")


def _relaxed(alpha: float, min_samples: float | None) -> dict | None:
    """The (alpha, MinPts) of the clusters that contain the spans, or None
    when MinPts < 1 makes the statement empty. Counts are integers, so a
    MinPts in (0, 1) asks what MinPts = 1 asks; at MinPts <= 0 every location,
    empty space included, is core and one cluster spans everything."""
    if min_samples is None or math.ceil(min_samples) < 1:
        return None
    return {"alpha": alpha, "min_samples": min_samples}


def _no_guarantee(min_samples: float | None, what: str = "") -> str:
    """Why a relaxed-cluster statement says nothing, in words."""
    shown = "unknown" if min_samples is None else f"{min_samples:.4g}"
    return (
        f"no guarantee{' ' + what if what else ''}: the clusters that would contain the spans "
        f"need MinPts = {shown} < 1, which every location of the space meets, so spans may lie "
        "in empty space"
    )


def density_rule(margin: str | float) -> str:
    """The density test's margin rule in words (summary, ``dpdbscan info``)."""
    if margin == "pointwise":
        rule = "pointwise Chernoff bound at beta"
    elif margin == "chernoff":
        rule = "Chernoff bound, union over every sub-cell"
    else:
        rule = f"{margin} sigma"
    return rule + " with the empty-space guard"


@dataclass
class SpanModel:
    """DP cluster spans (the release).

    Attributes
    ----------
    grid : Grid
        The grid the spans are made of: the histogram's grid, or its sub-cells
        when ``subcells > 1``.
    core_keys : ndarray
        Sorted keys (in ``grid``) of the core cells.
    labels : ndarray
        Span id of each core cell (0..n_spans-1, numbered by smallest cell).
    min_samples : int
        The user's (non-private) MinPts.
    gamma, beta : float
        Margin and failure probability. Bound test: Gamma_low (UB~ = noisy sum
        + Gamma_low bounds the true sum from above); density test: the largest
        margin m(q).
    gamma_upper : float or None
        Bound test: the upper margin Gamma_up (a noisy sum exceeds the true one
        by at most Gamma_up); tau = Gamma_low + Gamma_up. None in models saved
        before it was recorded: their sandwich guarantee is established only
        for the dense histogram (docs/privacy.md).
    epsilon, delta : float
        Privacy parameters of the release.
    histogram : NoisyHistogram or None
        The released noisy histogram (enables re-thresholding).
    subcells : int
        Sub-cells per histogram cell and dimension (1 = the paper's cells).
    border : float
        ``predict`` also assigns a point within this distance of a span's cells
        to the nearest such span (0 = cell membership only).
    margin : str
        How Gamma was bounded: "chernoff" (exact MGF) or "paper".
    eta : float
        Grid parameter of the histogram grid.
    kappa : int
        Number of noisy terms in each neighbour sum that Gamma bounds
        (max |NB(q)| over sub-cells q; |NB(X)| with the paper's cells).
    n_events : int
        Number of sums Gamma's union bound covers (k^d |X|).
    core : {"density", "bound"}
        The core test that made the spans. "density": an estimate of the
        alpha-ball count, spans join sub-cells whose centres are within alpha,
        ``predict`` uses the nearest core centre within ``border``; ``gamma``
        is the largest margin m(q). "bound": the paper's noisy upper bound
        with its sandwich guarantee.
    extra : dict
        Density test: the numbers of its one-sided guarantee
        (``accuracy_margin``, ``m_star``, ``probability``), recomputed from
        public values when a model is loaded.
    hist_grid : Grid
        The grid of the noisy histogram (set from ``histogram``, or from
        ``grid`` and ``eta``, when not given).
    release : dict
        The parameters of the fit that spent the budget (``eps``, ``eta``,
        ``min_samples``): the spans' own ``alpha`` and ``min_samples`` differ
        from them after :meth:`with_params`.
    auto : dict or None
        How the automatic mode chose ``alpha`` and ``min_samples`` from the
        release (the criterion, its score and the candidates), or None.
    """

    grid: Grid
    core_keys: np.ndarray
    labels: np.ndarray
    min_samples: int
    gamma: float
    beta: float
    epsilon: float
    delta: float = 0.0
    raise_min_samples: bool = True
    histogram_kind: str = "dense"
    noise: str = "discrete"
    theta: float = 0.0
    histogram: NoisyHistogram | None = field(default=None, repr=False)
    metadata: dict = field(default_factory=dict)
    subcells: int = 1
    border: float = 0.0
    margin: str | float = "paper"
    eta: float | None = None
    kappa: int | None = None
    n_events: int | None = None
    core: str = "bound"
    extra: dict | None = None
    gamma_upper: float | None = None
    hist_grid: Grid | None = field(default=None, repr=False)
    release: dict | None = None
    auto: dict | None = None

    def __post_init__(self) -> None:
        if self.eta is None:
            self.eta = self.grid.eta * self.subcells
        if self.histogram is not None:
            self.hist_grid = self.histogram.grid
        elif self.hist_grid is None:
            self.hist_grid = Grid(self.grid.lower, self.grid.upper, self.grid.alpha, self._eta)
        if self.release is None:
            self.release = {
                "eps": float(self.grid.alpha),
                "eta": float(self._eta),
                "min_samples": int(self.min_samples),
            }
        if self.kappa is None or self.n_events is None:
            # A model saved before these were stored: recompute what Gamma used.
            layout = SubcellLayout(self.histogram_grid, self.subcells)
            self.kappa, self.n_events = int(layout.kappa), int(layout.n_events)
        if self.core == "density" and self.extra is None:
            # loaded from a file: the guarantee's numbers from public values
            gamma, self.extra = density_guarantee(
                self.histogram_grid, self.histogram_kind, self.noise, self.epsilon, self.theta, self.params
            )
            if not math.isclose(gamma, self.gamma, rel_tol=1e-6, abs_tol=1e-9):
                raise ValueError(
                    f"malformed dpdbscan span model: gamma={self.gamma:g} is not the "
                    f"margin {gamma:g} of its parameters"
                )

    @classmethod
    def from_spans(
        cls,
        hist: NoisyHistogram,
        spans: Spans,
        params: SpanParams,
        *,
        delta: float = 0.0,
        metadata: dict | None = None,
    ) -> SpanModel:
        """The model of ``spans`` built from the release ``hist``."""
        return cls(
            grid=spans.grid,
            core_keys=spans.core_keys,
            labels=spans.labels,
            min_samples=params.min_samples,
            gamma=spans.gamma,
            beta=params.beta,
            epsilon=hist.epsilon,
            delta=delta,
            raise_min_samples=params.raise_min_samples,
            histogram_kind=hist.kind,
            noise=hist.noise,
            theta=hist.theta,
            histogram=hist,
            metadata=metadata or {},
            subcells=params.subcells,
            border=float(params.border),
            margin=params.margin,
            eta=hist.grid.eta,
            kappa=spans.kappa,
            n_events=spans.n_events,
            core=params.core,
            extra=spans.extra,
            gamma_upper=spans.gamma_upper,
        )

    @property
    def _eta(self) -> float:
        """eta of the histogram grid (set by __post_init__ when not given)."""
        assert self.eta is not None
        return float(self.eta)

    @property
    def histogram_grid(self) -> Grid:
        """The grid of the noisy histogram (cell width eta alpha / (4 sqrt d))."""
        assert self.hist_grid is not None
        return self.hist_grid

    @property
    def params(self) -> SpanParams:
        """The post-processing parameters of these spans."""
        return SpanParams.from_attributes(self)

    # ----------------------------------------------------------- guarantees
    @property
    def tau(self) -> float:
        """Bound test: tau = Gamma_low + Gamma_up (2 Gamma for the dense histogram)."""
        return _bounds.tau(self.gamma, self.gamma_upper)

    @property
    def threshold(self) -> float:
        """Core threshold: on UB~(X) = sum + Gamma (bound test), or the largest
        MinPts + m(q) on the estimate E~(q) (density test)."""
        if self.core == "density":
            return self.min_samples + self.gamma
        return self.min_samples + (self.tau if self.raise_min_samples else 0.0)

    @property
    def rho(self) -> float:
        return _bounds.approximation_ratio(self._eta, self.subcells)

    @property
    def n_cells(self) -> int:
        """|X|, the number of cells of the histogram's universe."""
        return self.histogram_grid.n_cells

    @property
    def n_spans(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0

    @property
    def n_core_cells(self) -> int:
        return int(self.core_keys.size)

    def guarantee(self) -> dict:
        """The guarantee of the release, in the paper's terms (see
        docs/accuracy.md: two-sided for the bound test, one-sided for the
        density test)."""
        if self.core == "density":
            return self._density_guarantee()
        return self._bound_guarantee()

    @property
    def eps_candidates(self) -> int:
        """How many eps the automatic mode chose this model's eps from after
        the noise was drawn (1 when eps was given). Each candidate's margins
        took ``beta`` (which is then the user's beta / this number), and the
        guarantee is a union bound over them."""
        a = self.auto or {}
        return len(a.get("eps_candidates") or [0]) if "eps" in (a.get("chosen") or []) else 1

    def _over_candidates(self, probability: float | None) -> float | None:
        """The guarantee's probability after the union bound over
        :attr:`eps_candidates`, 1 - c (1 - p) for one candidate's p; None when
        that leaves nothing (a model saved before the margins took beta / c)."""
        if probability is None:
            return None
        # rounded: c * (beta / c) is beta up to the last bit, and 0.9 should read 0.9
        p = round(1.0 - self.eps_candidates * (1.0 - probability), 12)
        return p if p > 0 else None

    def _union_void(self) -> str:
        c = self.eps_candidates
        return (
            f"no guarantee: eps was chosen after the noise among {c} candidates, and the union "
            f"bound over them at beta = {self.beta:g} each leaves no probability"
        )

    def _union_note(self) -> str:
        c = self.eps_candidates
        return "" if c == 1 else f"; eps chosen among {c} candidates, beta/{c} each"

    def _union_words(self) -> str:
        c = self.eps_candidates
        if c == 1:
            return ""
        return (
            f" (union over {c} eps candidates: eps was chosen after the noise, and each "
            f"candidate's margins took beta = {self.beta:.4g})"
        )

    def _margin_figures(self) -> dict:
        """The margin and the public numbers it was computed from, as
        :meth:`describe` and the density guarantee report them."""
        return {name: getattr(self, name) for name in _MARGIN_FIGURES}

    def _density_guarantee(self) -> dict:
        """One-sided: with probability >= ``probability`` every span lies in
        the span of one (rho alpha, M*)-cluster; no covering statement.

        With M* < 1 that says nothing (every location of the space is then
        core), so ``probability`` and ``within_clusters_at`` are None and
        ``statement`` reads "no guarantee"."""
        extra = self.extra or {}
        m_star = extra.get("m_star")
        within = _relaxed(self.rho * self.grid.alpha, m_star)
        probability = self._over_candidates(extra.get("probability")) if within is not None else None
        return {
            "core": "density",
            "rho": self.rho,
            "tau": None,
            **self._margin_figures(),
            "subcells": self.subcells,
            "accuracy_margin": extra.get("accuracy_margin"),
            "probability": probability,
            "covers_clusters_at": None,
            "within_clusters_at": within,
            "eps_candidates": self.eps_candidates,
            "statement": (
                _no_guarantee(m_star)
                if within is None
                else self._union_void()
                if probability is None
                else f"with probability >= {probability:g}, every span lies in the span of one "
                f"(rho alpha = {self.rho:g} alpha, MinPts = {m_star})-cluster of exact DBSCAN "
                "(one-sided: no covering statement)" + self._union_words()
            ),
            "epsilon": self.epsilon,
            "delta": self.delta,
        }

    def _bound_guarantee(self) -> dict:
        """The sandwich guarantee, in the paper's terms.

        With probability >= 1 - beta every (alpha, MinPts')-cluster lies in one
        span and every span lies in the span of one (rho alpha, MinPts' - tau)
        cluster, where MinPts' = min_samples + tau with the practical rule and
        min_samples with the theoretical one. ``kappa`` and ``n_events`` are the
        ones Gamma was computed with.
        """
        upper = self.min_samples + (self.tau if self.raise_min_samples else 0.0)
        legacy = self.gamma_upper is None and self.histogram_kind != "dense"
        probability = None if legacy else self._over_candidates(1.0 - self.beta)
        covers = {"alpha": self.grid.alpha, "min_samples": upper}
        # upper - tau, without the float residue of adding and taking tau back
        lower = float(self.min_samples) - (0.0 if self.raise_min_samples else self.tau)
        within = _relaxed(self.rho * self.grid.alpha, lower)
        if legacy:
            statement = (
                "no guarantee established: this model was saved before the upper margin of "
                f"its {self.histogram_kind} histogram was recorded"
            )
        elif probability is None:
            statement = self._union_void()
        else:
            statement = (
                f"with probability >= {probability:g}, every (alpha, MinPts = {upper:.1f})-cluster "
                "lies in one span"
                + (
                    f", and every span lies in the span of one (rho alpha = {self.rho:g} alpha, "
                    f"MinPts = {lower:.1f})-cluster"
                    if within is not None
                    else "; " + _no_guarantee(lower, "that spans stay within clusters")
                )
                + self._union_words()
            )
        return {
            "core": "bound",
            "probability": probability,
            "gamma_lower": self.gamma,
            "gamma_upper": self.gamma
            if self.histogram_kind == "dense" and self.gamma_upper is None
            else self.gamma_upper,
            "rho": self.rho,
            "tau": self.tau,
            "beta": self.beta,
            "gamma": self.gamma,
            "kappa": self.kappa,
            "n_events": self.n_events,
            "n_cells": self.n_cells,
            "theta": self.theta,
            "subcells": self.subcells,
            "margin": self.margin,
            "covers_clusters_at": covers,
            "within_clusters_at": within,
            "eps_candidates": self.eps_candidates,
            "statement": statement,
            "epsilon": self.epsilon,
            "delta": self.delta,
        }

    # -------------------------------------------------------------- predict
    def predict(self, X: ArrayLike) -> np.ndarray:
        """Span id of each point, -1 for noise (outside every span or the box)."""
        X = check_array(X)
        if X.shape[1] != self.grid.d:
            raise ValueError(f"X has {X.shape[1]} features, but the model was fitted with {self.grid.d}")
        keys, labels = self.regions()
        return predict_spans(self.grid, keys, labels, X)

    def regions(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted keys of every span-grid cell ``predict`` maps to a span (core
        cells and border cells), with that span: computed once from the
        released spans (:func:`dpdbscan.model.predict.span_regions`)."""
        cached = self.__dict__.get("_regions")
        key = (self.border, self.core, self.core_keys.size)
        if cached is None or cached[0] != key:
            to = "centres" if self.core == "density" else "cells"
            cached = (key, span_regions(self.grid, self.core_keys, self.labels, self.border, to))
            self.__dict__["_regions"] = cached
        return cached[1]

    def outlines(self) -> Outlines:
        """The polygons of every span's region (2-D), in cell units of
        ``grid``, computed once for all spans: group ``s`` of the result
        (:meth:`dpdbscan.geometry.outlines.Outlines.polygons`) is span ``s``. The
        GeoJSON, the picture and the HTML map draw these."""
        if self.grid.d != 2:
            raise ValueError(f"outlines need 2-D spans, these are {self.grid.d}-D")
        keys, labels = self.regions()
        cached = self.__dict__.get("_outlines")
        if cached is None or cached[0] is not keys:
            cached = (keys, outlines(self.grid.decode(keys), labels, self.n_spans))
            self.__dict__["_outlines"] = cached
        return cached[1]

    def span_cells(self, span_id: int | None = None) -> np.ndarray:
        """Integer coordinates of the core cells of one span (or of all)."""
        keys = self.core_keys if span_id is None else self.core_keys[self.labels == span_id]
        return self.grid.decode(keys)

    def span_region(self, span_id: int) -> np.ndarray:
        """Integer coordinates of every cell ``predict`` maps to span
        ``span_id``: its core cells and its border cells (what the GeoJSON and
        the pictures draw)."""
        keys, labels = self.regions()
        return self.grid.decode(keys[labels == span_id])

    # ---------------------------------------------------- re-parameterise
    @property
    def finest_eps(self) -> float:
        """The smallest eps this release resolves: the diagonal of its cells
        (eta = 4 against that radius), which is the release's own eps at the
        default eta = 4."""
        hg = self.histogram_grid
        return hg.eta * hg.alpha / 4.0

    def with_params(self, eps: float | None = None, min_samples: int | None = None) -> SpanModel:
        """Spans for another (eps, MinPts) from the released histogram alone:
        post-processing, no extra privacy cost.

        The cells stay the release's; an eps-ball is measured over them (the
        grid at eta' = eta * alpha / eps, :meth:`Grid.at_alpha`), the core test
        and its margins are recomputed for that ball, core sub-cells are joined
        when their centres are within eps, and the border radius of the density
        test scales with eps (the bound test's is a cell size and stays).

        Parameters
        ----------
        eps : float, optional
            The new radius; at least :attr:`finest_eps` (the release's eps at
            eta = 4). Default: unchanged.
        min_samples : int, optional
            The new MinPts. Default: unchanged.
        """
        if self.histogram is None:
            raise ValueError(
                "this model was saved without its noisy histogram; cannot re-threshold or re-parameterise it"
            )
        m = self.min_samples if min_samples is None else check_min_samples(min_samples)
        hist = self.histogram
        alpha = hist.grid.alpha if eps is None else check_param("eps", eps)
        if alpha == "auto":
            raise ValueError("eps='auto' chooses eps when fitting; with_params needs a number")
        border = self.border
        if alpha != hist.grid.alpha:
            finest = self.finest_eps
            if alpha < finest * (1 - 1e-12):
                raise ValueError(
                    f"eps={alpha:g} is finer than this release can resolve: its cells have "
                    f"diagonal {finest:g}, the smallest eps it supports (it was made at "
                    f"eps={self.release_eps:g}); a smaller eps needs a new release"
                )
            grid = hist.grid.at_alpha(alpha)
            if self.core == "density" and grid.kappa > MAX_KAPPA:
                raise ValueError(
                    f"eps={alpha:g} is too large for this release's cells: an eps-neighbourhood "
                    f"would hold {grid.kappa:,} of them, more than the density test weighs "
                    f"({MAX_KAPPA:,}); use a smaller eps or a new release at a coarser eps"
                )
            hist = hist.on_grid(grid)
            if self.core == "density":
                border = self.border * alpha / self.grid.alpha
        params = replace(self.params, min_samples=m, border=float(border))
        # the bound test's margins depend on the cells and alpha only: kept at the same alpha
        same = self.core == "bound" and hist is self.histogram
        spans = build_spans(
            hist, params, gamma=self.gamma if same else None, gamma_upper=self.gamma_upper if same else None
        )
        model = SpanModel.from_spans(hist, spans, params, delta=self.delta, metadata=dict(self.metadata))
        model.release = dict(self.release or {})
        return model

    def with_min_samples(self, min_samples: int) -> SpanModel:
        """Spans for another MinPts at the same alpha (:meth:`with_params`)."""
        return self.with_params(min_samples=min_samples)

    @property
    def release_eps(self) -> float:
        """The eps of the fit that spent the budget."""
        return float((self.release or {}).get("eps", self.grid.alpha))

    # ---------------------------------------------------------- description
    def describe(self) -> dict:
        """The parameters and guarantees of the release as a JSON-safe dict
        (what ``dpdbscan info`` shows; ``--json`` prints exactly this).

        ``eta``, ``cell_width`` and ``shape`` are the histogram grid's (the
        cells that were counted); ``span_cell_width`` and ``span_shape`` the
        grid the spans are made of (sub-cells when ``subcells > 1``).
        """
        g, hg = self.grid, self.histogram_grid
        info = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "noise": self.noise,
            "histogram": self.histogram_kind,
            "alpha": g.alpha,
            "min_samples": self.min_samples,
            "threshold": self.threshold,
            "rho": self.rho,
            "tau": self.tau if self.core == "bound" else None,
            **self._margin_figures(),
            "core": self.core,
            "guarantee": self.guarantee(),
            "eta": self._eta,
            "cell_width": hg.width,
            "shape": list(hg.shape),
            "d": g.d,
            "subcells": self.subcells,
            "span_cell_width": g.width,
            "span_shape": list(g.shape),
            "border": self.border,
            "n_spans": self.n_spans,
            "n_core_cells": self.n_core_cells,
            "bounds": {"lower": g.lower.tolist(), "upper": g.upper.tolist()},
            "has_histogram": self.histogram is not None,
            "metadata": self.metadata,
            "release": self.release,
            "auto": self.auto,
        }
        if self.metadata.get("projection") is not None:
            info["units"] = "km"
        return serialize.jsonable(info)

    def summary(self) -> str:
        g = self.grid
        lines = [
            f"DP-DBSCAN spans: {self.n_spans} span(s) from {self.n_core_cells} core cell(s)",
            f"  privacy : epsilon={self.epsilon:g}, delta={self.delta:g} ({self.noise} noise, "
            f"{self.histogram_kind} histogram)",
            f"  DBSCAN  : alpha={g.alpha:g}, min_samples={self.min_samples}, threshold "
            + (
                f"E~ >= {self.threshold:.1f} (estimated eps-neighbourhood count)"
                if self.core == "density"
                else f"UB~ >= {self.threshold:.1f}"
            ),
            f"  grid    : d={g.d}, cell width w={self.histogram_grid.width:.4g}, "
            f"|X|={self.n_cells}, kappa={self.kappa}, sub-cells {self.subcells}^{g.d}",
            (
                f"  margin  : m(q) <= {self.gamma:.2f} ({density_rule(self.margin)})"
                if self.core == "density"
                else f"  margin  : Gamma={self.gamma:.2f}"
                + (
                    ""
                    if self.gamma_upper is None or self.gamma_upper == self.gamma
                    else f" (lower), {self.gamma_upper:.2f} (upper)"
                )
                + f" ({self.margin})"
            )
            + (f", theta={self.theta:g}" if self.histogram_kind != "dense" else "")
            + f", border={self.border:.4g}",
            self._guarantee_line(),
        ]
        lines += self._origin_lines()
        return "\n".join(lines)

    def _origin_lines(self) -> list[str]:
        """Where the parameters came from: the automatic mode's choice, or a
        re-parameterised release."""
        r = self.release or {}
        if self.auto is not None:
            a = self.auto
            chosen = " and ".join(a.get("chosen", [])) or "nothing"
            return [
                f"  auto    : {chosen} chosen from the release without labels "
                f"(eps={self.grid.alpha:g}, min_samples={self.min_samples}; {a.get('criterion')},"
                f" score {a.get('score', 0):.3g}, {a.get('clusters')} cluster(s)); base release "
                f"at eps={a.get('base_eps', r.get('eps', 0)):g}, no extra budget"
            ]
        if r and (r.get("eps") != self.grid.alpha or r.get("min_samples") != self.min_samples):
            return [
                f"  release : made at eps={r.get('eps'):g}, min_samples={r.get('min_samples')}; "
                "these spans re-parameterise it (no extra budget)"
            ]
        return []

    def _guarantee_line(self) -> str:
        g = self.guarantee()
        within = g["within_clusters_at"]
        if self.core == "density":
            if within is None or g["probability"] is None:
                return f"  guarantee: {g['statement']} (core test: density)"
            return (
                f"  guarantee: every span within one (rho={self.rho:g}, "
                f"MinPts={within['min_samples']})-cluster with probability "
                f">= {g['probability']:g} (one-sided; core test: density{self._union_note()})"
            )
        if within is None or g["probability"] is None:
            return f"  guarantee: {g['statement']} (core test: bound)"
        return (
            f"  guarantee: (rho={self.rho:g}, tau={self.tau:.1f}) with probability "
            f">= {g['probability']:g} (core test: bound{self._union_note()})"
        )

    # ------------------------------------------------------ serialisation
    def to_dict(self, include_histogram: bool = True) -> dict:
        return serialize.model_to_dict(self, include_histogram)

    def to_json(self, include_histogram: bool = True) -> str:
        return json.dumps(self.to_dict(include_histogram))

    def save(self, path: Path | str, include_histogram: bool = True) -> None:
        Path(path).write_text(self.to_json(include_histogram))

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        return cls(**serialize.model_kwargs(data))

    @classmethod
    def load(cls, path: Path | str) -> Self:
        text = Path(path).read_text()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"{path}: not a dpdbscan span model (not JSON)") from None
        return cls.from_dict(data)

    def to_geojson(
        self,
        transform: Callable[[np.ndarray], np.ndarray] | None = None,
        precision: int | Literal["auto"] | None = "auto",
    ) -> dict:
        """Spans as GeoJSON MultiPolygons (2-D only); see :func:`serialize.model_to_geojson`.

        A geographic model (one with a projection in its metadata, such as
        :func:`dpdbscan.fit_lonlat` and ``dpdbscan fit --geo`` make) is written
        in longitude/latitude unless ``transform`` says otherwise; ``precision``
        ("auto": 7 decimals for longitude/latitude) rounds the coordinates.
        """
        if transform is None:
            proj = projection_of(self)
            transform = None if proj is None else proj.inverse
        return serialize.model_to_geojson(self, transform, precision)

    def predict_lonlat(self, lonlat: ArrayLike) -> np.ndarray:
        """Span id of each (longitude, latitude) point in degrees, for a
        geographic model: the points go through the model's own (public)
        projection first."""
        proj = projection_of(self)
        if proj is None:
            raise ValueError(
                "predict_lonlat needs a geographic model (fitted with fit_lonlat or "
                "'dpdbscan fit --geo'); use predict for data coordinates"
            )
        return self.predict(proj.forward(check_array(lonlat)))

    def save_geojson(
        self,
        path: Path | str,
        transform: Callable[[np.ndarray], np.ndarray] | None = None,
        precision: int | Literal["auto"] | None = "auto",
    ) -> None:
        Path(path).write_text(json.dumps(self.to_geojson(transform, precision)))


def spans_from_histogram(
    hist: NoisyHistogram,
    min_samples: int,
    gamma: float | None,
    beta: float,
    *,
    raise_min_samples: bool = True,
    delta: float = 0.0,
    metadata: dict | None = None,
    subcells: int = 1,
    border: float = 0.0,
    margin: str | float = "paper",
    core: str = "bound",
) -> SpanModel:
    """The span model of a released histogram (post-processing only).

    ``gamma=None`` computes the margin of the release; a number overrides it
    (bound test only).
    """
    params = SpanParams(
        min_samples=min_samples,
        beta=beta,
        subcells=subcells,
        margin=margin,
        border=float(border),
        raise_min_samples=raise_min_samples,
        core=core,
    )
    spans = build_spans(hist, params, gamma=gamma)
    return SpanModel.from_spans(hist, spans, params, delta=delta, metadata=metadata)


__all__ = ["SpanModel", "spans_from_histogram"]
