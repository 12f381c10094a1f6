"""The core tests, one folder each, behind one small interface
(:class:`~.coretest.CoreTest`).

This registry is the one place that maps a test's name (the ``core``
parameter, the model file's tag) to the test. To add a test: a folder with a
module defining a :class:`~.coretest.CoreTest` subclass, and one line here.
"""

from __future__ import annotations

from ...cells.histogram import NoisyHistogram
from ...params.specs import SpanSpec
from .bound.boundtest import BoundTest
from .coretest import CoreTest, Figures, MarginOverride, Spans, Statistic, Stored
from .density.densitytest import DensityTest

#: Every core test by name.
CORE_TESTS: dict[str, CoreTest] = {t.name: t for t in (DensityTest(), BoundTest())}
#: The test a release falls back to when the chosen one cannot weigh an
#: eps-neighbourhood of its grid (public: d and eta): the bound test never
#: enumerates the neighbourhood's cells.
FALLBACK = "bound"


def core_test(name: str) -> CoreTest:
    """The core test called ``name`` (ValueError naming the known ones)."""
    try:
        return CORE_TESTS[name]
    except KeyError:
        raise ValueError(f"core must be one of {tuple(CORE_TESTS)}, got core={name!r}") from None


def build_spans(
    hist: NoisyHistogram,
    spec: SpanSpec,
    noise_margin: float | None = None,
    noise_margin_upper: float | None = None,
) -> Spans:
    """Core cells (or sub-cells) and spans from a released histogram, by the
    core test ``spec.core`` names (post-processing only: the histogram and
    public parameters).

    ``noise_margin`` (and ``noise_margin_upper``) override the margins of a test that takes
    them (the bound test; tests use 0 for the noiseless oracle); by default
    they are the release's.
    """
    return core_test(spec.core).build(hist, spec, MarginOverride(noise_margin, noise_margin_upper))


__all__ = [
    "CORE_TESTS",
    "FALLBACK",
    "CoreTest",
    "Figures",
    "MarginOverride",
    "Spans",
    "Statistic",
    "Stored",
    "build_spans",
    "core_test",
]
