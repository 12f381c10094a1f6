"""dpdbscan: differentially private DBSCAN that publishes cluster spans.

Implements Qiu and Yi, "Approximate DBSCAN under Differential Privacy".
The estimator (which imports scikit-learn) is loaded on first use, so the
command line starts quickly. docs/architecture.md maps the modules.
"""

from __future__ import annotations

from typing import Any

from .cells.grid import Grid, neighbour_offsets
from .exceptions import (
    BudgetExceeded,
    InsecureRandomnessWarning,
    LedgerError,
    PrivacyLeakWarning,
    PrivateNoteWarning,
    UtilityWarning,
    WeakPrivacyWarning,
)
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


def __getattr__(name: str) -> Any:
    if name in ("DPDBSCAN", "fit_lonlat", "forecast_lonlat"):
        # lazy: scikit-learn takes about a second to import; the CLI never needs it
        from . import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module 'dpdbscan' has no attribute {name!r}")
