"""The paper's core test (``core="bound"``): a cell is core when a noisy upper
bound of its alpha-neighbourhood count, the noisy neighbour sum plus the
margin Gamma_low, clears MinPts (plus tau with the practical rule). Its
guarantee is the paper's two-sided sandwich.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ....cells.grid import MAX_KAPPA, Grid
from ....cells.histogram import NoisyHistogram
from ....cells.subcells import SubcellLayout
from ....laws.noise import variance as noise_variance
from ....params.paramwords import threshold_rule_words
from ....params.specs import ReleaseInfo, SpanSpec
from ...merge import merge_cells
from ...spans import Spans, spans_on
from ..coretest import CoreTest, Figures, MarginOverride, Namer, Statistic, Stored, over_candidates, relaxed
from . import boundmargin as bounds
from .boundmerge import merge_core_cells
from .corecells import compiled, core_cells, sum_threshold


def bound_margins(
    kind: str, theta: float, noise: str, epsilon: float, layout: SubcellLayout, method: str, beta: float
) -> tuple[float, float]:
    """(Gamma_low, Gamma_up) from the public fields of a release: both bound
    sums of ``layout.kappa_q`` per-cell errors with a union bound over every
    (sub-)cell. Dense: both are the two-sided bound of the noise. Truncating
    histograms (sparse, stability): the lower side adds kappa_q times the
    truncation loss, the upper side bounds sums of max(Z, 0). ``epsilon`` is
    the epsilon the noise was drawn with (rounded down)."""
    theta = theta if kind != "dense" else 0.0
    return bounds.margins(method, kind, noise, epsilon, layout.kappa_q, layout.n_events, beta, theta)


class BoundTest(CoreTest):
    name = "bound"
    predict_to = "cells"
    margin_rules = ("chernoff", "paper")
    max_kappa = MAX_KAPPA
    numeric_margin = False
    selects_levels = False
    guard_swamps = False
    filters_noise_spans = False

    def check(self, values: Mapping[str, Any], opt: Namer, cli: bool) -> None:
        rule = values["margin"]
        if rule != "auto" and rule not in self.margin_rules:
            raise ValueError(
                f"{opt('margin')} {rule!r} is a rule of the density test; the bound test "
                "takes 'auto', 'chernoff' or 'paper'"
            )
        if "auto" in (values["eps"], values["min_samples"]):
            raise ValueError(
                f"the automatic mode ({opt('eps')} or {opt('min_samples')} 'auto') "
                f"chooses from the density test's spans; drop {opt('core')} bound"
            )

    def resolve_margin(self, rule: str | float) -> str | float:
        return "chernoff" if rule == "auto" else rule

    def default_border(self, alpha: float, eta: float, subcells: int) -> float:
        # half a sub-cell's diagonal around core sub-cells
        return eta * alpha / (8.0 * subcells)

    def border_at(self, border: float, alpha: float, new_alpha: float) -> float:
        return border  # a cell size: the cells stay the release's

    def build(self, hist: NoisyHistogram, spec: SpanSpec, margins: MarginOverride | None = None) -> Spans:
        layout = SubcellLayout(hist.grid, spec.subcells)
        gamma, gamma_upper = (margins.lower, margins.upper) if margins else (None, None)
        if gamma is None:
            gamma, gamma_upper = bound_margins(
                hist.kind, hist.theta, hist.noise, hist.scale, layout, str(spec.margin), spec.beta
            )
        thr = sum_threshold(spec.min_samples, gamma, spec.raise_min_samples, gamma_upper)
        keys, _ = core_cells(hist, thr, layout)
        return _spans(
            layout,
            keys,
            merge_core_cells(layout.fine, keys) if compiled(layout.fine) else merge_cells(layout.fine, keys),
            gamma,
            gamma_upper,
            spec,
        )

    def spans_of(
        self, hist: NoisyHistogram, spec: SpanSpec, core_keys: np.ndarray, labels: np.ndarray
    ) -> Spans:
        layout = SubcellLayout(hist.grid, spec.subcells)
        gamma, gamma_upper = bound_margins(
            hist.kind, hist.theta, hist.noise, hist.scale, layout, str(spec.margin), spec.beta
        )
        return _spans(layout, core_keys, labels, gamma, gamma_upper, spec)

    def restore(self, stored: Stored, spec: SpanSpec) -> Spans:
        layout = SubcellLayout(stored.grid, spec.subcells)
        gamma, gamma_upper = stored.noise_margin, stored.noise_margin_upper
        if gamma_upper is not None:
            # both margins are a function of public values: they must be the
            # ones the spans were made with
            want = bound_margins(
                stored.kind, stored.theta, stored.noise, stored.scale, layout, str(spec.margin), spec.beta
            )
            if not all(
                math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) for a, b in zip((gamma, gamma_upper), want)
            ):
                raise ValueError("Gamma_low / Gamma_up are not the margins of the model's parameters")
        return _spans(layout, stored.core_keys, stored.labels, gamma, gamma_upper, spec, stored.spans_grid)

    def figures(
        self, grid: Grid, kind: str, noise: str, epsilon: float, theta: float, spec: SpanSpec
    ) -> Figures:
        layout = SubcellLayout(grid, spec.subcells)
        gamma, gamma_upper = bound_margins(kind, theta, noise, epsilon, layout, str(spec.margin), spec.beta)
        return Figures(
            noise_margin=gamma,
            noise_std=math.sqrt(noise_variance(noise, epsilon) * layout.kappa_q),
            # the practical rule's threshold is MinPts + tau
            margin_value=bounds.tau(gamma, gamma_upper) if spec.raise_min_samples else 0.0,
            terms=int(layout.kappa_q),
            kappa_q=int(layout.kappa_q),
            margin_text=threshold_rule_words(spec.raise_min_samples),
        )

    def statistic(
        self, grid: Grid, kind: str, noise: str, scale: float, theta: float, spec: SpanSpec
    ) -> Statistic:
        """The noisy neighbour sum S(q) over NB(q) (weights 1; the largest
        NB(q), kappa_q cells) against MinPts + Gamma_up (practical rule) or
        MinPts - Gamma_low; no occupancy condition."""
        layout = SubcellLayout(grid, spec.subcells)
        gamma, gamma_upper = bound_margins(kind, theta, noise, scale, layout, str(spec.margin), spec.beta)
        kappa_q = int(layout.kappa_q)
        return Statistic(
            weights=((1.0,) * kappa_q,),
            own=(1.0,),
            sums=(float(kappa_q),),
            thresholds=(sum_threshold(spec.min_samples, gamma, spec.raise_min_samples, gamma_upper),),
            occupancy=None,
        )

    def guarantee(self, spans: Spans, spec: SpanSpec, release: ReleaseInfo, candidates: int) -> dict:
        """The sandwich guarantee, in the paper's terms.

        With probability >= 1 - beta every (alpha, MinPts')-cluster lies in one
        span and every span lies in the span of one (rho alpha, MinPts' - tau)
        cluster, where MinPts' = min_samples + tau with the practical rule and
        min_samples with the theoretical one. ``kappa_q`` and ``n_events`` are the
        ones Gamma was computed with. A model saved before the upper margin was
        recorded (sparse and stability histograms) has no established guarantee.
        """
        tau = spans.tau if spans.tau is not None else bounds.tau(spans.noise_margin, spans.noise_margin_upper)
        upper = spec.min_samples + (tau if spec.raise_min_samples else 0.0)
        legacy = no_upper_margin(spans, release)
        probability = None if legacy else over_candidates(1.0 - spec.beta, candidates)
        alpha = spans.grid.eps
        covers = {"eps": alpha, "min_samples": upper}
        # upper - tau, without the float residue of adding and taking tau back
        lower = float(spec.min_samples) - (0.0 if spec.raise_min_samples else tau)
        within = relaxed(spans.approx_ratio * alpha, lower)
        return {
            "core": self.name,
            "probability": probability,
            "gamma_low": spans.noise_margin,
            "gamma_up": spans.noise_margin
            if release.histogram == "dense" and spans.noise_margin_upper is None
            else spans.noise_margin_upper,
            "approx_ratio": spans.approx_ratio,
            "tau": tau,
            "beta": spec.beta,
            "kappa_q": spans.kappa_q,
            "n_events": spans.n_events,
            "n_cells": release.grid.n_cells,
            "theta": release.theta,
            "subcells": spec.subcells,
            "margin": spec.margin,
            "covers_clusters_at": covers,
            "within_clusters_at": within,
            "eps_candidates": candidates,
            "statement": None,  # the model's words (model.boundwords)
            "epsilon": release.epsilon,
            "delta": release.delta,
        }


def no_upper_margin(spans: Spans, release: ReleaseInfo) -> bool:
    """Whether the spans come from a model saved before the upper margin of
    a truncating (sparse or stability) histogram was recorded: such a model
    has no established guarantee."""
    return spans.noise_margin_upper is None and release.histogram != "dense"


def _spans(
    layout: SubcellLayout,
    keys: np.ndarray,
    labels: np.ndarray,
    gamma: float,
    gamma_upper: float | None,
    spec: SpanSpec,
    grid: Grid | None = None,
) -> Spans:
    """The bound test's :class:`Spans`: tau and the threshold from the margins."""
    tau = bounds.tau(gamma, gamma_upper)
    return spans_on(
        layout,
        keys,
        labels,
        noise_margin=gamma,
        noise_margin_upper=gamma_upper,
        tau=tau,
        threshold=spec.min_samples + (tau if spec.raise_min_samples else 0.0),
        extra=None,
        grid=grid,
    )


__all__ = ["BoundTest", "bound_margins", "no_upper_margin"]
