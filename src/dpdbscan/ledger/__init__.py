"""A privacy budget that lasts: a ledger file of lifetime budgets and the
releases charged to them (:mod:`.store`), composed by :mod:`.composition`.

Nothing here reads data or draws noise: a ledger holds public facts (the
budgets, each release's public parameters and cost, the files written).
"""

from __future__ import annotations

from .composition import (
    ACCOUNTINGS,
    BASIC,
    ZCDP,
    ZCDP_FILTER,
    Cost,
    Total,
    compose,
    compose_fixed,
    largest_repeated,
    pure,
    release_cost,
    upper_cost,
)
from .store import SCHEMA_VERSION, Account, Ledger, Release, Reservation, read_ledger

__all__ = [
    "ACCOUNTINGS",
    "BASIC",
    "ZCDP",
    "ZCDP_FILTER",
    "SCHEMA_VERSION",
    "Account",
    "Cost",
    "Ledger",
    "Release",
    "Reservation",
    "Total",
    "compose",
    "compose_fixed",
    "largest_repeated",
    "pure",
    "read_ledger",
    "release_cost",
    "upper_cost",
]
