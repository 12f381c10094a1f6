"""The core tests, one folder each, behind one small interface
(:class:`~.coretest.CoreTest`).

This registry is the one place that maps a test's name (the ``core``
parameter, the model file's tag) to the test. To add a test: a folder with a
module defining a :class:`~.coretest.CoreTest` subclass, and one line here.
"""

from __future__ import annotations

from .bound.boundtest import BoundTest
from .coretest import CoreTest, Figures, Spans, Statistic, Stored
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


__all__ = ["CORE_TESTS", "FALLBACK", "CoreTest", "Figures", "Spans", "Statistic", "Stored", "core_test"]
