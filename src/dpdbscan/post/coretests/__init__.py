"""The core tests, one folder each, behind one small interface
(:class:`~.base.CoreTest`).

This registry is the one place that maps a test's name (the ``core``
parameter, the model file's tag) to the test. To add a test: a folder with a
``test.py`` defining a :class:`~.base.CoreTest` subclass, and one line here.
"""

from __future__ import annotations

from .base import CoreTest, Figures, Spans, Statistic, Stored
from .bound.test import BoundTest
from .density.test import DensityTest

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
