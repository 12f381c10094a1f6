"""The words of the paper's bound test (``core="bound"``): its rule, margins,
threshold and two-sided ("sandwich") guarantee.

The numbers are the test's (:mod:`dpdbscan.post.coretests.bound.boundtest`);
this module only states them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..params.specs import ReleaseInfo, SpanSpec
from ..post.coretests.bound.boundtest import BoundTest, no_upper_margin
from ..post.spans import Spans
from .coretestwords import (
    CoreTestWords,
    covers_words,
    no_guarantee,
    plain_length,
    union_void,
    union_words,
    within_words,
)


class BoundWords(CoreTestWords):
    name = BoundTest.name

    def statement(
        self,
        g: dict,
        spans: Spans,
        spec: SpanSpec,
        release: ReleaseInfo,
        candidates: int,
        length: Callable[[float], str] = plain_length,
    ) -> str:
        if no_upper_margin(spans, release):
            return (
                "no guarantee established: this model was saved before the upper margin of "
                f"its {release.histogram} histogram was recorded"
            )
        if g["probability"] is None:
            return union_void(candidates, spec.beta)
        # upper - tau, without the float residue of adding and taking tau back
        lower = float(spec.min_samples) - (0.0 if spec.raise_min_samples else g["tau"])
        covers, within = g["covers_clusters_at"], g["within_clusters_at"]
        return sandwich_sentence(
            g["probability"], covers, within, lower, spans.approx_ratio, length
        ) + union_words(candidates, spec.beta)

    def threshold_text(self, threshold: float, core: str, noun: str = "points") -> str:
        return (
            f"a {core} is core when a noisy upper bound of its {noun} within eps reaches "
            f"{threshold:.1f} (threshold UB~ >= {threshold:.1f})"
        )

    def margin_text(self, spans: Spans, spec: SpanSpec, noun: str = "points") -> str:
        up = spans.noise_margin if spans.noise_margin_upper is None else spans.noise_margin_upper
        symbols = (
            f"Gamma={spans.noise_margin:.2f}"
            if up == spans.noise_margin
            else f"Gamma_low={spans.noise_margin:.2f}, Gamma_up={up:.2f}"
        )
        return (
            f"with probability >= {1 - spec.beta:g} the noise of every upper bound stays within "
            f"{spans.noise_margin:.2f} below and {up:.2f} above ({symbols}, the {spec.margin} rule)"
        )

    def rule_text(self, spans: Spans, spec: SpanSpec, noun: str = "points") -> str:
        what = "min_samples plus the additive error tau" if spec.raise_min_samples else "min_samples"
        return (
            f"bound (the paper's test): a cell is core when a noisy upper bound of its {noun} within "
            f"eps reaches {what}, {spans.threshold:.1f} (UB~ >= "
            + ("MinPts + tau)" if spec.raise_min_samples else "MinPts)")
        )

    def tau_text(self, spans: Spans) -> str:
        return (
            f"{spans.tau:.2f} points: how far the noisy upper bound may be off, both ways together "
            "(tau = Gamma_low + Gamma_up)"
        )

    def guarantee_text(self, g: dict, spans: Spans, length: Callable[[float], str]) -> str:
        if g["probability"] is None:
            return g["statement"]
        lower = g["covers_clusters_at"]["min_samples"] - g["tau"]
        return sandwich_sentence(
            g["probability"],
            g["covers_clusters_at"],
            g["within_clusters_at"],
            lower,
            spans.approx_ratio,
            length,
        )


def sandwich_sentence(
    probability: float,
    covers: Mapping[str, float],
    within: Mapping[str, float] | None,
    lower: float,
    rho: float,
    length: Callable[[float], str] = plain_length,
) -> str:
    """The bound test's two-sided ("sandwich") guarantee in words: clusters
    are found whole, and spans stay within clusters (or why they need not,
    when MinPts - tau < 1)."""
    head = f"with probability >= {probability:g}, both ways (the paper's sandwich): " + covers_words(
        covers, length
    )
    if within is None:
        return head + "; " + no_guarantee(lower, "that spans stay within clusters")
    return head + ", and " + within_words(within, rho, length)


__all__ = ["BoundWords", "sandwich_sentence"]
