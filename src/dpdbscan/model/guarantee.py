"""The guarantee of a release's spans, in the paper's terms and in words.

The core test that made the spans states it (two-sided for the bound test,
one-sided for the density test; docs/accuracy.md); this module adds what
the model knows about how its parameters were chosen: when the automatic
mode chose eps after the noise was drawn among c candidates, each
candidate's margins took beta and the guarantee is a union bound over them.
"""

from __future__ import annotations

from ..post.coretests import core_test
from .record import SpanModel


def eps_candidates(model: SpanModel) -> int:
    """How many eps the automatic mode chose this model's eps from after
    the noise was drawn (1 when eps was given). Each candidate's margins took
    the model's ``beta`` (the user's beta / this number)."""
    a = model.auto or {}
    return len(a.get("eps_candidates") or [0]) if "eps" in (a.get("chosen") or []) else 1


def guarantee(model: SpanModel) -> dict:
    """The guarantee of the release as a JSON-safe dict, with a ``statement``
    in words (what ``dpdbscan info`` shows)."""
    test = core_test(model.spec.core)
    return test.guarantee(model.spans, model.spec, model.release, eps_candidates(model))


__all__ = ["eps_candidates", "guarantee"]
