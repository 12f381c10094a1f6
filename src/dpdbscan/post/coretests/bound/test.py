"""The paper's core test (``core="bound"``): a cell is core when a noisy upper
bound of its alpha-neighbourhood count, the noisy neighbour sum plus the
margin Gamma_low, clears MinPts (plus tau with the practical rule). Its
guarantee is the paper's two-sided sandwich.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ....cells.grid import MAX_KAPPA, Grid
from ....cells.histogram import NoisyHistogram
from ....cells.subcells import SubcellLayout
from ....laws.noise import variance as noise_variance
from ....spec.specs import ReleaseInfo, SpanSpec
from ...merge import merge_cells
from ..base import (
    CoreTest,
    Figures,
    Namer,
    Spans,
    no_guarantee,
    over_candidates,
    relaxed,
    union_note,
    union_void,
    union_words,
)
from . import margins as bounds
from .core import core_cells, sum_threshold


def bound_margins(
    kind: str, theta: float, noise: str, epsilon: float, layout: SubcellLayout, method: str, beta: float
) -> tuple[float, float]:
    """(Gamma_low, Gamma_up) from the public fields of a release: both bound
    sums of ``layout.kappa`` per-cell errors with a union bound over every
    (sub-)cell. Dense: both are the two-sided bound of the noise. Truncating
    histograms (sparse, stability): the lower side adds kappa times the
    truncation loss, the upper side bounds sums of max(Z, 0). ``epsilon`` is
    the epsilon the noise was drawn with (rounded down)."""
    theta = theta if kind != "dense" else 0.0
    return bounds.margins(method, kind, noise, epsilon, layout.kappa, layout.n_events, beta, theta)


class BoundTest(CoreTest):
    name = "bound"
    predict_to = "cells"
    margin_rules = ("chernoff", "paper")
    max_kappa = MAX_KAPPA
    numeric_margin = False

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

    def build(
        self,
        hist: NoisyHistogram,
        spec: SpanSpec,
        *,
        gamma: float | None = None,
        gamma_upper: float | None = None,
    ) -> Spans:
        layout = SubcellLayout(hist.grid, spec.subcells)
        if gamma is None:
            gamma, gamma_upper = bound_margins(
                hist.kind, hist.theta, hist.noise, hist.scale, layout, str(spec.margin), spec.beta
            )
        thr = sum_threshold(spec.min_samples, gamma, spec.raise_min_samples, gamma_upper)
        keys, _ = core_cells(hist, thr, layout)
        tau = bounds.tau(gamma, gamma_upper)
        return Spans(
            grid=layout.fine,
            core_keys=keys,
            labels=merge_cells(layout.fine, keys),
            gamma=float(gamma),
            gamma_upper=None if gamma_upper is None else float(gamma_upper),
            tau=float(tau),
            threshold=float(spec.min_samples + (tau if spec.raise_min_samples else 0.0)),
            kappa=int(layout.kappa),
            n_events=int(layout.n_events),
            rho=layout.rho,
            extra=None,
        )

    def spans_of(
        self, hist: NoisyHistogram, spec: SpanSpec, core_keys: np.ndarray, labels: np.ndarray
    ) -> Spans:
        layout = SubcellLayout(hist.grid, spec.subcells)
        gamma, gamma_upper = bound_margins(
            hist.kind, hist.theta, hist.noise, hist.scale, layout, str(spec.margin), spec.beta
        )
        return self.restore(
            hist.grid,
            layout.fine,
            core_keys,
            labels,
            hist.kind,
            hist.noise,
            hist.scale,
            hist.theta,
            spec,
            gamma,
            gamma_upper,
        )

    def restore(
        self,
        hist_grid: Grid,
        spans_grid: Grid,
        core_keys: np.ndarray,
        labels: np.ndarray,
        kind: str,
        noise: str,
        scale: float,
        theta: float,
        spec: SpanSpec,
        gamma: float,
        gamma_upper: float | None,
    ) -> Spans:
        layout = SubcellLayout(hist_grid, spec.subcells)
        if gamma_upper is not None:
            # both margins are a function of public values: they must be the
            # ones the spans were made with
            want = bound_margins(kind, theta, noise, scale, layout, str(spec.margin), spec.beta)
            if not all(
                math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) for a, b in zip((gamma, gamma_upper), want)
            ):
                raise ValueError("gamma / gamma_upper are not the margins of the model's parameters")
        tau = bounds.tau(gamma, gamma_upper)
        return Spans(
            grid=spans_grid,
            core_keys=core_keys,
            labels=labels,
            gamma=float(gamma),
            gamma_upper=gamma_upper,
            tau=float(tau),
            threshold=float(spec.min_samples + (tau if spec.raise_min_samples else 0.0)),
            kappa=int(layout.kappa),
            n_events=int(layout.n_events),
            rho=layout.rho,
            extra=None,
        )

    def figures(
        self, grid: Grid, kind: str, noise: str, epsilon: float, theta: float, spec: SpanSpec
    ) -> Figures:
        layout = SubcellLayout(grid, spec.subcells)
        gamma, gamma_upper = bound_margins(kind, theta, noise, epsilon, layout, str(spec.margin), spec.beta)
        return Figures(
            gamma=gamma,
            noise_std=math.sqrt(noise_variance(noise, epsilon) * layout.kappa),
            # the practical rule's threshold is MinPts + tau
            margin_value=bounds.tau(gamma, gamma_upper) if spec.raise_min_samples else 0.0,
            terms=int(layout.kappa),
            kappa=int(layout.kappa),
            margin_text="tau = Gamma_low + Gamma_up",
        )

    def guarantee(self, spans: Spans, spec: SpanSpec, release: ReleaseInfo, candidates: int) -> dict:
        """The sandwich guarantee, in the paper's terms.

        With probability >= 1 - beta every (alpha, MinPts')-cluster lies in one
        span and every span lies in the span of one (rho alpha, MinPts' - tau)
        cluster, where MinPts' = min_samples + tau with the practical rule and
        min_samples with the theoretical one. ``kappa`` and ``n_events`` are the
        ones Gamma was computed with. A model saved before the upper margin was
        recorded (sparse and stability histograms) has no established guarantee.
        """
        tau = spans.tau if spans.tau is not None else bounds.tau(spans.gamma, spans.gamma_upper)
        upper = spec.min_samples + (tau if spec.raise_min_samples else 0.0)
        legacy = spans.gamma_upper is None and release.histogram != "dense"
        probability = None if legacy else over_candidates(1.0 - spec.beta, candidates)
        alpha = spans.grid.alpha
        covers = {"alpha": alpha, "min_samples": upper}
        # upper - tau, without the float residue of adding and taking tau back
        lower = float(spec.min_samples) - (0.0 if spec.raise_min_samples else tau)
        within = relaxed(spans.rho * alpha, lower)
        if legacy:
            statement = (
                "no guarantee established: this model was saved before the upper margin of "
                f"its {release.histogram} histogram was recorded"
            )
        elif probability is None:
            statement = union_void(candidates, spec.beta)
        else:
            statement = (
                f"with probability >= {probability:g}, every (alpha, MinPts = {upper:.1f})-cluster "
                "lies in one span"
                + (
                    f", and every span lies in the span of one (rho alpha = {spans.rho:g} alpha, "
                    f"MinPts = {lower:.1f})-cluster"
                    if within is not None
                    else "; " + no_guarantee(lower, "that spans stay within clusters")
                )
                + union_words(candidates, spec.beta)
            )
        return {
            "core": self.name,
            "probability": probability,
            "gamma_lower": spans.gamma,
            "gamma_upper": spans.gamma
            if release.histogram == "dense" and spans.gamma_upper is None
            else spans.gamma_upper,
            "rho": spans.rho,
            "tau": tau,
            "beta": spec.beta,
            "gamma": spans.gamma,
            "kappa": spans.kappa,
            "n_events": spans.n_events,
            "n_cells": release.grid.n_cells,
            "theta": release.theta,
            "subcells": spec.subcells,
            "margin": spec.margin,
            "covers_clusters_at": covers,
            "within_clusters_at": within,
            "eps_candidates": candidates,
            "statement": statement,
            "epsilon": release.epsilon,
            "delta": release.delta,
        }

    def threshold_text(self, threshold: float) -> str:
        return f"UB~ >= {threshold:.1f}"

    def margin_text(self, spans: Spans, spec: SpanSpec) -> str:
        upper = (
            ""
            if spans.gamma_upper is None or spans.gamma_upper == spans.gamma
            else f" (lower), {spans.gamma_upper:.2f} (upper)"
        )
        return f"Gamma={spans.gamma:.2f}{upper} ({spec.margin})"

    def rule_text(self, spans: Spans, spec: SpanSpec) -> str:
        return f"bound: UB~ >= {spans.threshold:.1f}" + (
            " (MinPts + tau)" if spec.raise_min_samples else " (MinPts)"
        )

    def tau_text(self, spans: Spans) -> str:
        return f"{spans.tau:.2f} (= Gamma_low + Gamma_up)"

    def guarantee_text(self, g: dict, spans: Spans, length: Callable[[float], str]) -> str:
        if g["probability"] is None:
            return g["statement"]
        within, covers = g["within_clusters_at"], g["covers_clusters_at"]
        text = (
            f"with probability >= {g['probability']:g}: every ({length(covers['alpha'])}, "
            f"{covers['min_samples']:.1f})-cluster lies in one span"
        )
        if within is None:
            return (
                text + f"; no guarantee that spans stay within clusters (MinPts - tau = "
                f"{covers['min_samples'] - g['tau']:.1f} < 1: spans may lie in empty space)"
            )
        return (
            text + f", and every span lies in the span of one ({length(within['alpha'])}, "
            f"{within['min_samples']:.1f})-cluster"
        )

    def guarantee_line(self, g: dict, spans: Spans, candidates: int) -> str:
        if g["within_clusters_at"] is None or g["probability"] is None:
            return f"  guarantee: {g['statement']} (core test: bound)"
        return (
            f"  guarantee: (rho={spans.rho:g}, tau={g['tau']:.1f}) with probability "
            f">= {g['probability']:g} (core test: bound{union_note(candidates)})"
        )


__all__ = ["BoundTest", "bound_margins"]
