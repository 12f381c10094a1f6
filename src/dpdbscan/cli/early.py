"""``dpdbscan fit``'s drawing copy, forked before the command's own imports.

``fit`` draws its picture in a forked copy of itself
(:func:`dpdbscan.cli.outputs.wait_to_draw`), which imports matplotlib
(about 0.45 s of CPU) before it can draw. The command's own imports (numpy,
the library: 0.2-0.3 s) keep one core busy and leave the other idle; the
read then keeps both busy; the fit after it one again. So the copy is
forked here, first thing (after numpy, which both need), when the words
of the command line say it is ``fit`` with a picture, and it imports
matplotlib itself at once, and the library's drawing module with the
library modules a release is made of (:mod:`dpdbscan.render.plotting`,
which it needs to take the release it is sent), beside the command's own
modules: about as long as those. The rest of what it needs (matplotlib's
figure and Agg modules, pyplot, a first picture of nothing) it imports
when ``fit`` tells it to go, once the file is read
(:func:`dpdbscan.cli.fit.fit_model`), beside the fit: there the command
keeps one core busy again. (With the library's modules left to then too,
the copy was still importing when the release was ready, 0.2 s of CPU
after it, and the picture waited for it.)

Only the words are looked at here, before the command's parser exists;
``fit`` decides later, from its parsed options, whether it draws at all,
and a copy it does not use is cancelled (:func:`dpdbscan.cli.forked.cancel_waiting`).
Only the standard library (and numpy, to fork) is imported here and in
:mod:`.forked`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import forked

#: Options every command takes before its name.
_LEADING = frozenset({"-q", "--quiet", "--no-progress"})
#: Words after which the command draws no picture (or only prints help).
_NO_PICTURE = frozenset({"-h", "--help", "--version", "--no-png"})


def draws_picture(words: Sequence[str]) -> bool:
    """Whether ``dpdbscan WORDS`` is ``fit`` that, by its words, draws a
    picture: the command ``fit``, no ``--no-png`` (or an abbreviation of it)
    and no help."""
    i = 0
    while i < len(words) and words[i] in _LEADING:
        i += 1
    if i == len(words) or words[i] != "fit":
        return False
    return not any(w in _NO_PICTURE or w.startswith("--no-pn") for w in words)


def start(words: Sequence[str]) -> bool:
    """Fork the drawing copy now if ``dpdbscan WORDS`` draws a picture
    (:func:`draws_picture`) and forking helps here; whether it was forked."""
    if not draws_picture(words):
        return False
    # numpy first, here: the command needs it anyway, and the copy then has
    # it without importing it again
    import numpy  # noqa: F401

    return forked.wait_for_work(_prepare, _draw, early=_import_matplotlib) is not None


def _import_matplotlib() -> None:
    """In the copy, at once: matplotlib itself and the library's drawing
    module (without matplotlib's figure modules, which it imports when it
    draws), together about as long as the command's own imports; the
    figure and Agg modules follow with the rest (:func:`_prepare`) beside
    the fit, where they do not take a core from the read. Its warnings are
    not the command's (the copy that ``fit`` forks itself records them and
    never prints them either)."""
    warnings.simplefilter("ignore")
    import matplotlib

    matplotlib.use("Agg", force=False)
    # lazy: in the drawing copy only, beside the command's own imports
    from ..render import plotting  # noqa: F401 - imported for its cost, here


def _prepare() -> None:
    """In the copy, told to go: the rest of what drawing needs (as
    :func:`dpdbscan.cli.outputs.prepare_to_draw`, without the command's
    other modules, which the copy does not need)."""
    # lazy: in the drawing copy only, once the command has read its input
    from ..render import plotting

    plotting.preload(alone=True)


def _draw(payload: Any, temp: Path) -> None:
    """In the copy, sent the release: its picture, the spans' outlines
    taken from the command last (as :func:`dpdbscan.cli.outputs.draw_sent`)."""
    # lazy: as _prepare's
    from ..render import plotting

    # lazy: as _prepare's (the model's modules, which plotting has imported)
    from .sentrelease import awaiting_outlines

    model, picture = payload
    plotting.spans_png(awaiting_outlines(model), temp, **(picture or {}))


__all__ = ["draws_picture", "start"]
