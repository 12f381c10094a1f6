"""Each core test's words, found by the test's name: the model speaks for
the tests (:mod:`dpdbscan.post.coretests` compute, these modules state).

One entry per core test of :data:`dpdbscan.post.coretests.CORE_TESTS`
(tests/model/test_words.py checks they match).
"""

from __future__ import annotations

from .boundwords import BoundWords
from .coretestwords import CoreTestWords
from .densitywords import DensityWords

#: Every core test's words by the test's name.
WORDS: dict[str, CoreTestWords] = {w.name: w for w in (DensityWords(), BoundWords())}


def words_of(name: str) -> CoreTestWords:
    """The words of the core test called ``name`` (ValueError naming the known ones)."""
    try:
        return WORDS[name]
    except KeyError:
        raise ValueError(f"core must be one of {tuple(WORDS)}, got core={name!r}") from None


__all__ = ["WORDS", "words_of"]
