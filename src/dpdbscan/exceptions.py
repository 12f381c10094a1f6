"""Warnings and errors of dpdbscan (one place, as ``sklearn.exceptions``)."""

from __future__ import annotations


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


__all__ = [
    "PrivacyLeakWarning",
    "UtilityWarning",
    "PrivateNoteWarning",
    "WeakPrivacyWarning",
    "InsecureRandomnessWarning",
    "BudgetExceeded",
    "LedgerError",
]
