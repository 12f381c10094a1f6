"""The release as ``fit``'s drawing copy has it: its outlines follow it.

``fit`` sends the waiting copy (:mod:`dpdbscan.cli.forked`) the release as
soon as it is made, before the spans' outlines (0.06-0.1 s on Cabs), and
then the outlines, computed in the command for the GeoJSON
(:func:`dpdbscan.cli.outputs.write_outputs`). The copy meanwhile does the
rest of the picture (the spans' figures, the heat layer, the labels, the
scale bar: :func:`dpdbscan.render.plotting.plot_spans` draws the outlines
last) and takes the outlines only where it draws them
(:func:`awaiting_outlines`). Both processes compute nothing twice but the
figures, which are cheap, and the outlines are the command's, byte for
byte the ones the copy would compute.
"""

from __future__ import annotations

import functools

from ..geometry.outlines import Outlines
from ..model.record import SpanModel
from . import forked


class _OutlinesToCome(SpanModel):
    """A release whose outlines the command sends after it."""

    @functools.cached_property
    def _outlines(self) -> Outlines:
        got = forked.next_part()
        if not isinstance(got, Outlines):
            raise TypeError(f"the drawing copy was sent {type(got).__name__}, not the spans' outlines")
        return got


def awaiting_outlines(model: SpanModel) -> SpanModel:
    """``model`` (in the drawing copy, sent without its outlines) as a
    release whose :meth:`~dpdbscan.model.record.SpanModel.outlines` are
    read from the command (:func:`dpdbscan.cli.forked.next_part`) the
    first time they are asked for: the same fields and cached figures."""
    if "_outlines" in vars(model):
        return model  # computed before it was sent
    late = object.__new__(_OutlinesToCome)
    vars(late).update(vars(model))
    return late


__all__ = ["awaiting_outlines"]
