"""dpdbscan: differentially private DBSCAN that publishes cluster spans.

Implements Qiu and Yi, "Approximate DBSCAN under Differential Privacy".
The estimator (which imports scikit-learn) is loaded on first use, so the
command line's ``info``/``predict``/``plot`` start quickly.
"""

from ._random import InsecureRandomnessWarning
from ._validation import PrivacyLeakWarning, UtilityWarning
from .accountant import BudgetAccountant, BudgetExceeded
from .grid import Grid, neighbour_offsets
from .spans import SpanModel

__version__ = "0.1.0"

__all__ = [
    "DPDBSCAN", "SpanModel", "Grid", "neighbour_offsets", "BudgetAccountant",
    "BudgetExceeded", "PrivacyLeakWarning", "UtilityWarning", "InsecureRandomnessWarning",
    "__version__",
]


def __getattr__(name):
    if name == "DPDBSCAN":
        from .estimator import DPDBSCAN

        return DPDBSCAN
    raise AttributeError(f"module 'dpdbscan' has no attribute {name!r}")
