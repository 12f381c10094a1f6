"""The old name of :mod:`dpdbscan.research` (the research hooks), kept for one
release: importing it warns (FutureWarning) and gives research's names."""

from __future__ import annotations

import warnings

from . import research
from .research import *  # noqa: F403

warnings.warn(
    "dpdbscan.testing is now dpdbscan.research (the research hooks); the old name goes away "
    "in the next release",
    FutureWarning,
    stacklevel=2,
)
__doc__ = f"{__doc__}\n\n{research.__doc__}"
__all__ = list(research.__all__)
