"""The ``dpdbscan`` command line (entry point :func:`main`).

The commands live in :mod:`.command` and load when :func:`main` runs: the
command itself (``argv`` None) first forks the copy that draws ``fit``'s
picture (:mod:`.early`), so that the copy imports matplotlib and the
library's drawing module on the machine's other core while the command
imports its own modules.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import early, forked

if TYPE_CHECKING:
    import argparse


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dpdbscan ARGV`` (``sys.argv`` when None: the command itself);
    the exit status (:func:`dpdbscan.cli.command.main`)."""
    if argv is None:
        # the command's own imports without the cyclic garbage collector
        # (:func:`.forked.collector_paused`; the copy forked meanwhile too)
        with forked.collector_paused():
            early.start(sys.argv[1:])
            # lazy: the command's modules load once its drawing copy is under way
            from .command import main as run
    else:
        # lazy: as above
        from .command import main as run

    return run(argv)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (:func:`dpdbscan.cli.command.build_parser`)."""
    # lazy: as main's
    from .command import build_parser as build

    return build()


__all__ = ["main", "build_parser"]
