"""From a released histogram to spans: the core test chosen by name.

Post-processing only: :func:`build_spans` reads nothing but a
:class:`~dpdbscan.cells.histogram.NoisyHistogram` (the release) and public
parameters (:class:`~dpdbscan.spec.specs.SpanSpec`), so its output, and
anything computed from it, is as private as the histogram. Each derived
quantity of the guarantee (the margins, the number of noisy terms kappa per
sum, the number of sums the union bound covers, rho) is computed by the core
test once and carried in the :class:`~dpdbscan.post.coretests.Spans`.
"""

from __future__ import annotations

from ..cells.histogram import NoisyHistogram
from ..spec.specs import SpanSpec
from .coretests import Spans, core_test


def build_spans(
    hist: NoisyHistogram, spec: SpanSpec, gamma: float | None = None, gamma_upper: float | None = None
) -> Spans:
    """Core cells (or sub-cells) and spans from a released histogram.

    ``gamma`` (and ``gamma_upper``) override the margins of a test that takes
    them (the bound test; tests use 0 for the noiseless oracle); by default
    they are the release's.
    """
    return core_test(spec.core).build(hist, spec, gamma=gamma, gamma_upper=gamma_upper)


__all__ = ["Spans", "build_spans"]
