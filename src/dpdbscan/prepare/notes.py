"""Private notes for the data owner, on standard error.

What the door (:mod:`dpdbscan.prepare`) learns from the private input while
preparing it (how many rows were read, dropped or clipped, which column looks
wrong) is said here and nowhere else: never on standard output, never in a
release, each line marked :data:`PRIVATE`.
"""

from __future__ import annotations

import sys
from typing import TextIO

#: The mark that starts every private note ("private: do not publish").
PRIVATE = "[private: do not publish]"


class Notes:
    """Private notes for the data owner on standard error.

    They describe the private input (how many rows were read, dropped or
    clipped, which column looks wrong) and must never be published: each line
    starts with :data:`PRIVATE`. ``--quiet`` silences them; warnings about public
    things (a leaking option, seeded noise) are printed anyway.
    """

    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream

    def __call__(self, message: str) -> None:
        if not self.quiet:
            self.always(message)

    def always(self, message: str) -> None:
        """A private note printed even under ``--quiet``: for what would make
        a release useless, such as most rows lying outside the bounds."""
        print(f"{PRIVATE} {message}", file=self.stream or sys.stderr)
