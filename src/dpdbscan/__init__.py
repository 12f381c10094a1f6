"""dpdbscan: differentially private DBSCAN that publishes cluster spans.

Implements Qiu and Yi, "Approximate DBSCAN under Differential Privacy".
"""

from ._random import InsecureRandomnessWarning
from ._validation import PrivacyLeakWarning, UtilityWarning
from .accountant import BudgetAccountant, BudgetExceeded
from .estimator import DPDBSCAN
from .grid import Grid, neighbour_offsets
from .spans import SpanModel

__version__ = "0.1.0"

__all__ = [
    "DPDBSCAN", "SpanModel", "Grid", "neighbour_offsets", "BudgetAccountant",
    "BudgetExceeded", "PrivacyLeakWarning", "UtilityWarning", "InsecureRandomnessWarning", "__version__",
]
