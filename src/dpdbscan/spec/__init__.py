"""The old name of :mod:`dpdbscan.params` (the parameter table, its checks and
the records parameters resolve to), kept for one release: importing it (or
``dpdbscan.spec.parameters``, ``.specs``, ``.validation``) warns
(FutureWarning) and gives the same modules."""

from __future__ import annotations

import sys
import warnings

from ..params import parameters, specs, validation

warnings.warn(
    "dpdbscan.spec is now dpdbscan.params (the parameter table); the old name goes away in the next release",
    FutureWarning,
    stacklevel=2,
)
for _module in (parameters, specs, validation):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module

__all__ = ["parameters", "specs", "validation"]
