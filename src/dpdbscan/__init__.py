"""dpdbscan: differentially private DBSCAN that publishes cluster spans.

Implements Qiu and Yi, "Approximate DBSCAN under Differential Privacy".
Its public names are loaded on first use, so the command line starts
quickly; the estimator follows scikit-learn's protocol without importing it
(:mod:`dpdbscan.estimatorbase`). docs/architecture.md maps the modules.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .exceptions import (
    BudgetExceeded,
    InsecureRandomnessWarning,
    LedgerError,
    PrivacyLeakWarning,
    PrivateNoteWarning,
    UtilityWarning,
    WeakPrivacyWarning,
)

if TYPE_CHECKING:
    from .cells.grid import Grid, neighbour_offsets
    from .laws.zcdp import ZCDPAccountant
    from .ledger import Ledger
    from .model import (
        SpanModel,
        describe,
        geojson,
        guarantee,
        load_model,
        predict_lonlat,
        save_geojson,
        save_model,
        summary,
        with_params,
    )
    from .release.accountant import BudgetAccountant
    from .traces import Stops, TripEnds

#: The one version source (pyproject.toml reads it from here).
__version__ = "0.3.0.dev0"

__all__ = [
    "DPDBSCAN",
    "fit_lonlat",
    "forecast_lonlat",
    "Stops",
    "TripEnds",
    "SpanModel",
    "describe",
    "geojson",
    "guarantee",
    "load_model",
    "predict_lonlat",
    "save_geojson",
    "save_model",
    "summary",
    "with_params",
    "Grid",
    "neighbour_offsets",
    "BudgetAccountant",
    "ZCDPAccountant",
    "Ledger",
    "BudgetExceeded",
    "LedgerError",
    "PrivacyLeakWarning",
    "UtilityWarning",
    "PrivateNoteWarning",
    "WeakPrivacyWarning",
    "InsecureRandomnessWarning",
    "__version__",
]


#: Where each public name lives, imported on first use (PEP 562): ``import
#: dpdbscan`` alone loads no numpy, so the command line can start its drawing
#: copy before its own imports (:mod:`dpdbscan.cli`). Nothing here imports
#: scikit-learn, which takes about a second of CPU (:mod:`dpdbscan.estimatorbase`).
_LAZY = {
    **dict.fromkeys(("DPDBSCAN", "fit_lonlat", "forecast_lonlat"), "estimator"),
    **dict.fromkeys(("Grid", "neighbour_offsets"), "cells.grid"),
    "ZCDPAccountant": "laws.zcdp",
    "Ledger": "ledger",
    **dict.fromkeys(
        (
            "SpanModel",
            "describe",
            "geojson",
            "guarantee",
            "load_model",
            "predict_lonlat",
            "save_geojson",
            "save_model",
            "summary",
            "with_params",
        ),
        "model",
    ),
    "BudgetAccountant": "release.accountant",
    **dict.fromkeys(("Stops", "TripEnds"), "traces"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dpdbscan' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once: later look-ups find it here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
