"""The interface every sampler draws its random words through (the sources
themselves are in :mod:`.integers`; this module lets the samplers that
:mod:`.integers` imports name the interface without importing it back)."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Source(Protocol):
    """Where random bits come from: ``raw(n)`` gives ``n`` uniform 64-bit words."""

    secure: bool

    def raw(self, n: int) -> np.ndarray: ...
