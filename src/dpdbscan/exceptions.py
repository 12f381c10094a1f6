"""Warnings and errors of dpdbscan (one place, as ``sklearn.exceptions``)."""

from __future__ import annotations

import sys
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


def private_note(text: str, stacklevel: int = 1) -> None:
    """Say ``text``, a count of something in the private data, as a
    :class:`PrivateNoteWarning` (``stacklevel`` as for :func:`warnings.warn`,
    from the caller), which never raises.

    Such a note (rows of another length dropped, ids of no readable type,
    rows without a readable time, no unit in the box) is said while the
    points are prepared or counted. Where the caller's filters turn warnings
    into errors (``python -W error``, pytest's ``filterwarnings = error``,
    ``warnings.simplefilter("error")``), raised, it stopped the fit of D plus
    one odd row where D was released: whether a release is made hinged on
    one record (docs/privacy.md section 8, round 13). So a note those
    filters would raise is said as a warning instead (shown, or recorded by
    ``catch_warnings(record=True)``), as "always" says it; a filter that
    ignores it still does.

    The caller's module globals are not handed to the warning machinery:
    for a program run as ``python -m package.module`` its ``__main__``
    module's loader refuses to give the source of ``__main__``
    (``ImportError``), so a note said to such a program's frame (the
    person-level delta note, counted from the private number of units)
    failed the fit that had made a release (docs/privacy.md section 8)."""
    try:
        frame = sys._getframe(stacklevel)
    except ValueError:  # a stack not that deep: where warnings.warn says it from then
        filename, lineno, g = "sys", 1, sys.__dict__
    else:
        # where it is said from, not the frame itself (whose locals may hold the data)
        filename, lineno, g = frame.f_code.co_filename, frame.f_lineno, frame.f_globals
        del frame

    def say() -> None:
        warnings.warn_explicit(
            text,
            PrivateNoteWarning,
            filename,
            lineno,
            module=g.get("__name__"),
            registry=g.setdefault("__warningregistry__", {}),
        )

    try:
        say()
    except PrivateNoteWarning:
        with warnings.catch_warnings():
            warnings.simplefilter("always", PrivateNoteWarning)
            say()


__all__ = [
    "private_note",
    "renamed",
    "PrivacyLeakWarning",
    "UtilityWarning",
    "PrivateNoteWarning",
    "WeakPrivacyWarning",
    "InsecureRandomnessWarning",
    "BudgetExceeded",
    "LedgerError",
]
