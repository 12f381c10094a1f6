"""The density core test (``core="density"``, the default): a sub-cell is core
when its estimated alpha-ball count E~(q) reaches MinPts plus a margin m(q)
of about one noise standard deviation; core sub-cells whose centres are
within alpha form a span. Its guarantee is one-sided (docs/density-notes.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ....cells.grid import Grid
from ....cells.histogram import NoisyHistogram
from ....cells.subcells import SubcellLayout
from ....params.paramwords import margin_rule_words, shown_margin_words
from ....params.specs import ReleaseInfo, SpanSpec
from ....progress import stage
from ...merge import centre_merge, merge_centres
from ...noisespans import without_noise_spans
from ...partition import Partition, sub_cell_mass
from ...spans import Spans, spans_on
from ..coretest import CoreTest, Figures, MarginOverride, Namer, Statistic, Stored, over_candidates, relaxed
from .coresubcells import MAX_KAPPA, OCCUPANCY, OCCUPANCY_SIGMAS, density_field, utility_problems
from .densitymargin import (
    MARGINS,
    Margin,
    accuracy_margin,
    empty_truncation,
    margin,
    noise_variance,
    place_count,
    place_tail,
)
from .weights import BallWeights, ball_weights


def density_margin(
    grid: Grid, kind: str, noise: str, epsilon: float, theta: float, spec: SpanSpec, shown: bool = True
) -> tuple[BallWeights, Margin]:
    """The ball weights of the density test and its margin m(q) for a release
    with these public fields (the largest m(q) is the spans' ``noise_margin``).
    ``shown=False``: a sparse release's margin as before 0.3.0, of every
    cell's noise (model files written then)."""
    weights = ball_weights(grid.d, float(grid.eta), spec.subcells)
    m = margin(
        spec.margin,
        weights,
        noise,
        epsilon,
        spec.beta,
        grid.n_cells,
        min_samples=spec.min_samples,
        truncation=empty_truncation(kind, theta),
        shown=shown,
    )
    return weights, m


def density_guarantee(
    grid: Grid, kind: str, noise: str, epsilon: float, theta: float, spec: SpanSpec, shown: bool = True
) -> tuple[float, dict[str, Any]]:
    """The one-sided guarantee of a density release (docs/density-notes.md).

    Let G(q) bound the weighted noise of every sub-cell at once (exact
    quantiles, union over the k^d |X| sub-cells at beta). On that event a core
    sub-cell has UB(q) >= E(q) > MinPts + m(q) - G(q), so every span lies in
    the span of one (rho alpha, M*)-cluster with M* = floor(MinPts +
    min_q (m(q) - G(q))) + 1, and M* >= 1 by the empty-space guard, which
    every margin rule has (for a truncating release that is a second event:
    probability >= 1 - 2 beta). There is no covering statement; an M* < 1
    (possible only without the guard) is reported as no guarantee.

    That statement holds for every sub-cell at once, so G(q) is a quantile
    at beta / (k^d |X|): with thousands of sub-cells it is several times the
    one-sigma margin and can absorb all of MinPts (M* = 1 at the demo's
    MinPts 10). What the margin buys each place alone is stated beside it:
    a place with fewer than MinPts points within rho alpha is core with
    probability at most ``place_probability`` (:func:`.margins.place_tail`;
    about 0.16 at the default one-sigma margin).

    Returns the largest margin m(q) and a dict of ``accuracy_margin`` (the
    largest G(q)), ``m_star``, ``probability`` and ``place_probability``. Reads public values only
    (the release's grid, kind, noise, epsilon and theta), so a saved model
    recomputes exactly what its spans were made with.
    """
    weights, m = density_margin(grid, kind, noise, epsilon, theta, spec, shown)
    G = accuracy_margin(weights, noise, epsilon, spec.beta, grid.n_cells, kind)
    from_accuracy = math.floor(spec.min_samples + float((m.values - G).min())) + 1
    guarded = bool(np.any(m.empty > 0)) or kind == "stability"
    m_star = max(from_accuracy, 1) if guarded else from_accuracy
    two_events = kind == "sparse" and from_accuracy < 1 and guarded
    return float(m.values.max()), {
        "accuracy_margin": float(G.max()),
        "m_star": int(m_star),
        "probability": 1.0 - (2 if two_events else 1) * spec.beta,
        "place_probability": place_tail(weights, m, noise, epsilon, kind),
        "place_count": place_count(weights, m, noise, epsilon, spec.min_samples, spec.beta, kind),
    }


def density_spans(hist: NoisyHistogram, spec: SpanSpec, core_keys: np.ndarray, labels: np.ndarray) -> Spans:
    """The :class:`Spans` of the density test's core sub-cells ``core_keys``
    (sorted keys of ``hist.grid.subdivided(spec.subcells)``) grouped by
    ``labels``, with the margin and guarantee of ``hist``'s own alpha and
    ``spec``: one place for what a density model reports, whether its cells
    come from :meth:`DensityTest.build` or from a ladder of parameters."""
    max_m, extra = density_guarantee(hist.grid, hist.kind, hist.noise, hist.scale, hist.theta, spec)
    return _spans(SubcellLayout(hist.grid, spec.subcells), core_keys, labels, max_m, extra, spec)


def _spans(
    layout: SubcellLayout,
    keys: np.ndarray,
    labels: np.ndarray,
    max_m: float,
    extra: dict,
    spec: SpanSpec,
    grid: Grid | None = None,
) -> Spans:
    """The density test's :class:`Spans`: no upper margin, the threshold on E~."""
    return spans_on(
        layout,
        keys,
        labels,
        noise_margin=max_m,
        noise_margin_upper=None,
        tau=None,
        threshold=spec.min_samples + max_m,
        extra=extra,
        grid=grid,
    )


def each_place(
    extra: Mapping[str, Any], min_samples: float, radius: float, candidates: int, beta: float
) -> dict | None:
    """The statement for one place (``each_place`` of the guarantee): a
    sub-cell with fewer than MinPts points within ``radius`` (rho alpha) is
    core with probability at most ``probability``; over ``candidates`` eps
    chosen after the noise, each candidate adds its own."""
    p = extra.get("place_probability")
    if p is None:
        return None
    out = {"eps": radius, "min_samples": min_samples, "probability": min(1.0, round(candidates * p, 12))}
    count = extra.get("place_count")
    if count is not None and count > min_samples:
        # where the guard sets the threshold: what a place needs, at beta (c beta over candidates)
        out["needs"] = {"min_samples": int(count), "probability": min(1.0, round(candidates * beta, 12))}
    return out


class DensityTest(CoreTest):
    name = "density"
    predict_to = "centres"
    margin_rules = MARGINS
    max_kappa = MAX_KAPPA
    numeric_margin = True
    selects_levels = True
    guard_swamps = True
    states_cluster_limits = True
    filters_noise_spans = True

    def check(self, values: Mapping[str, Any], opt: Namer, cli: bool) -> None:
        if values["margin"] == "paper":
            raise ValueError(
                f"{opt('margin')} 'paper' is the bound test's Gamma; with the density test "
                "use 'auto' (1 sigma) or a number c of sigmas"
            )
        if values["raise_min_samples"] is False:
            what = "--theoretical-threshold" if cli else "raise_min_samples=False"
            other = "--core bound" if cli else "core='bound'"
            raise ValueError(
                f"{what} is the bound test's theoretical rule; the density test has no "
                f"such rule: drop it or choose {other}"
            )

    def resolve_margin(self, rule: str | float) -> str | float:
        return 1.0 if rule == "auto" else rule

    def default_border(self, alpha: float, eta: float, subcells: int) -> float:
        # DBSCAN's border rule: alpha around core centres; on the coarse
        # release's cells (eta 8, plan/coarserelease.py) as far beyond a core
        # cell's corner as at eta 4: alpha plus the half-diagonal it gained
        return alpha * max(1.0, 0.5 + eta / 8.0)

    def border_at(self, border: float, alpha: float, new_alpha: float) -> float:
        return border * new_alpha / alpha

    def build(self, hist: NoisyHistogram, spec: SpanSpec, margins: MarginOverride | None = None) -> Spans:
        dc = density_field(
            hist, spec.min_samples, subcells=spec.subcells, margin_rule=spec.margin, beta=spec.beta
        ).core(spec.min_samples)
        # spans that the release's noise alone explains are dropped (post-processing)
        keys, labels = without_noise_spans(
            hist, spec.subcells, dc.keys, merge_centres(dc.fine, dc.keys, join=spec.join)
        )
        return density_spans(hist, spec, keys, labels)

    def spans_of(
        self, hist: NoisyHistogram, spec: SpanSpec, core_keys: np.ndarray, labels: np.ndarray
    ) -> Spans:
        return density_spans(hist, spec, core_keys, labels)

    def restore(self, stored: Stored, spec: SpanSpec) -> Spans:
        # the guarantee's numbers from public values: the margin must be the stored one
        want, extra = density_guarantee(
            stored.grid, stored.kind, stored.noise, stored.scale, stored.theta, spec
        )
        same = math.isclose(want, stored.noise_margin, rel_tol=1e-6, abs_tol=1e-9)
        if not same and stored.kind == "sparse":
            # a sparse model written before the margin counted only the shown
            # cells' noise (densitymargin.shown_threshold): its spans were made
            # with the margin of every cell's noise, and its guarantee says so
            want, extra = density_guarantee(
                stored.grid, stored.kind, stored.noise, stored.scale, stored.theta, spec, shown=False
            )
        if not math.isclose(want, stored.noise_margin, rel_tol=1e-6, abs_tol=1e-9):
            raise ValueError(f"max m(q)={stored.noise_margin:g} is not the margin {want:g} of its parameters")
        return _spans(
            SubcellLayout(stored.grid, spec.subcells),
            stored.core_keys,
            stored.labels,
            stored.noise_margin,
            extra,
            spec,
            stored.spans_grid,
        )

    def figures(
        self, grid: Grid, kind: str, noise: str, epsilon: float, theta: float, spec: SpanSpec
    ) -> Figures:
        weights, m = density_margin(grid, kind, noise, epsilon, theta, spec)
        max_m = float(m.values.max())
        std = float(m.sigma.max())
        text = margin_rule_words(spec.margin, "the largest m(q); ")
        if m.shown is not None:
            # a sparse release: only the cells it shows carry noise, at most
            # Var Z T / theta of it at the threshold T (densitymargin.shown_threshold)
            std = min(std, math.sqrt(noise_variance(noise, epsilon) * (spec.min_samples + max_m) / theta))
            text += shown_margin_words(theta)
        return Figures(
            noise_margin=max_m,
            noise_std=std,
            margin_value=max_m,
            terms=int(weights.offsets.shape[0]),
            kappa_q=int(SubcellLayout(grid, spec.subcells).kappa_q),
            margin_text=text,
        )

    def statistic(
        self, grid: Grid, kind: str, noise: str, scale: float, theta: float, spec: SpanSpec
    ) -> Statistic:
        """E~(q) = sum_Y W(q, Y) x~_Y against MinPts + m(q); the own cell must
        also read as occupied (:func:`~.core.density_field`: above
        ``OCCUPANCY_SIGMAS`` noise standard deviations, or at least
        ``OCCUPANCY`` times the ball's mean count per cell)."""
        weights, m = density_margin(grid, kind, noise, scale, theta, spec)
        own = int(np.flatnonzero(~weights.offsets.any(axis=1))[0])
        # one tuple per class of rows with the same multiset (every row for k = 2)
        made: dict[int, tuple] = {}
        for c in weights.row_classes.tolist():
            if c not in made:
                row = weights.row(c)
                made[c] = tuple(sorted(float(x) for x in row[row > 0]))
        return Statistic(
            weights=tuple(made[c] for c in weights.row_classes.tolist()),
            own=tuple(float(x) for x in weights.columns(own)),
            sums=tuple(float(x) for x in weights.sums),
            thresholds=tuple(float(spec.min_samples + v) for v in m.values),
            occupancy=(OCCUPANCY_SIGMAS * math.sqrt(noise_variance(noise, scale)), OCCUPANCY),
        )

    def guarantee(self, spans: Spans, spec: SpanSpec, release: ReleaseInfo, candidates: int) -> dict:
        """One-sided: with probability >= ``probability`` every span lies in
        the span of one (rho alpha, M*)-cluster; no covering statement.

        With M* < 1 that says nothing (every location of the space is then
        core), so ``probability`` and ``within_clusters_at`` are None and
        the model's words read "no guarantee"."""
        extra = spans.extra or {}
        m_star = extra.get("m_star")
        within = relaxed(spans.approx_ratio * spans.grid.eps, m_star)
        probability = over_candidates(extra.get("probability"), candidates) if within is not None else None
        place = each_place(
            extra, spec.min_samples, spans.approx_ratio * spans.grid.eps, candidates, spec.beta
        )
        return {
            "core": self.name,
            "approx_ratio": spans.approx_ratio,
            "tau": None,
            "beta": spec.beta,
            "max_m": spans.noise_margin,
            "margin": spec.margin,
            "kappa_q": spans.kappa_q,
            "n_events": spans.n_events,
            "n_cells": release.grid.n_cells,
            "theta": release.theta,
            "subcells": spec.subcells,
            "accuracy_margin": extra.get("accuracy_margin"),
            "probability": probability,
            "covers_clusters_at": None,
            "within_clusters_at": within,
            "each_place": place,
            "eps_candidates": candidates,
            "statement": None,  # the model's words (model.densitywords)
            "epsilon": release.epsilon,
            "delta": release.delta,
        }

    def ladder(
        self, hist: NoisyHistogram, spec: SpanSpec, alphas: Sequence[float], min_samples: Sequence[int]
    ) -> dict[tuple[float, int], Partition]:
        """One :func:`density_field` per alpha at the smallest MinPts serves
        every MinPts: a threshold and a merge each."""
        base = hist.grid
        k = int(spec.subcells)
        common = base.subdivided(k)
        ms = sorted({int(m) for m in min_samples})
        out: dict[tuple[float, int], Partition] = {}
        steps = sorted({float(a) for a in alphas})
        for i, alpha in enumerate(steps):
            stage(f"the MinPts ladder at eps {i + 1} of {len(steps)}")
            h = hist.on_grid(base.at_eps(alpha))
            field = density_field(h, ms[0], subcells=k, margin_rule=spec.margin, beta=spec.beta)
            keys_all = common.encode(field.fine.decode(field.keys))
            mass_all = sub_cell_mass(hist, common, keys_all, k)
            # neighbour lookups once per alpha
            merge = centre_merge(field.fine, field.keys, join=spec.join)
            last: tuple[np.ndarray, np.ndarray] | None = None
            for m in ms:
                sel = field.core_mask(m)
                # where the empty-space guard holds the threshold, several
                # MinPts have the same core cells: merge them once
                if last is None or not np.array_equal(sel, last[0]):
                    last = (sel, merge.labels(sel))
                thr = float(field.thresholds(m).max())
                out[(alpha, m)] = Partition(alpha, m, keys_all[sel], last[1], mass_all[sel], thr)
        return out

    def problems(self, hist: NoisyHistogram, spans: Spans, spec: SpanSpec) -> tuple[str, ...]:
        return utility_problems(hist, spans.core_keys, spec.subcells, spans.n_spans)


__all__ = [
    "DensityTest",
    "density_guarantee",
    "density_margin",
    "density_spans",
    "each_place",
]
