"""Warnings and errors of dpdbscan (one place, as ``sklearn.exceptions``)."""

from __future__ import annotations

import warnings
from typing import Any


class PrivacyLeakWarning(UserWarning):
    """Something computed from the private data would steer the mechanism."""


class UtilityWarning(UserWarning):
    """The release carries little information (e.g. no span at all)."""


class PrivateNoteWarning(UtilityWarning):
    """A utility note computed from the private points themselves, not from
    the release (e.g. no point given to ``predict`` lies inside the model's
    box): for the data owner only. The command line prints it as a private
    note, marked ``[private: do not publish]``."""


class WeakPrivacyWarning(UserWarning):
    """The privacy parameters give little protection (epsilon above about 10)."""


class InsecureRandomnessWarning(UserWarning):
    """A seeded, reproducible random source was used for a DP release."""


class BudgetExceeded(ValueError):
    """The requested spend would exceed the accountant's budget."""


class LedgerError(ValueError):
    """A privacy budget ledger is missing, not a ledger, damaged, locked too
    long, or has no such dataset: never taken for a fresh budget."""


def renamed(old: str, new: str) -> Any:
    """A read-only attribute ``old`` that gives ``new`` and warns
    (FutureWarning): a public name renamed so that one name means one
    quantity keeps working for one release."""

    def get(self: Any) -> Any:
        warnings.warn(
            f"{type(self).__name__}.{old} is renamed {new}; the old name goes in the next release",
            FutureWarning,
            stacklevel=2,
        )
        return getattr(self, new)

    return property(get, doc=f"Old name of :attr:`{new}` (FutureWarning).")


__all__ = [
    "renamed",
    "PrivacyLeakWarning",
    "UtilityWarning",
    "PrivateNoteWarning",
    "WeakPrivacyWarning",
    "InsecureRandomnessWarning",
    "BudgetExceeded",
    "LedgerError",
]
