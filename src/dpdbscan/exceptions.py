"""Warnings and errors of dpdbscan (one place, as ``sklearn.exceptions``)."""

from __future__ import annotations


class PrivacyLeakWarning(UserWarning):
    """Something computed from the private data would steer the mechanism."""


class UtilityWarning(UserWarning):
    """The release carries little information (e.g. no span at all)."""


class WeakPrivacyWarning(UserWarning):
    """The privacy parameters give little protection (epsilon above about 10)."""


class InsecureRandomnessWarning(UserWarning):
    """A seeded, reproducible random source was used for a DP release."""


class BudgetExceeded(ValueError):
    """The requested spend would exceed the accountant's budget."""


__all__ = [
    "PrivacyLeakWarning",
    "UtilityWarning",
    "WeakPrivacyWarning",
    "InsecureRandomnessWarning",
    "BudgetExceeded",
]
