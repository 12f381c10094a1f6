"""Names renamed in this release keep working for one release behind a
FutureWarning: ``dpdbscan.testing`` is ``dpdbscan.research`` (the research
hooks) and ``dpdbscan.spec`` is ``dpdbscan.params`` (the parameter table)."""

from __future__ import annotations

import importlib
import sys

import pytest

import dpdbscan.params
import dpdbscan.research


def _fresh(monkeypatch, name: str):
    """Import ``name`` anew (its import is what warns), restoring the old
    modules afterwards."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        monkeypatch.delitem(sys.modules, key)
    return importlib.import_module(name)


def test_the_old_research_hooks_name_warns_and_gives_the_same_names(monkeypatch):
    with pytest.warns(FutureWarning, match="dpdbscan.testing is now dpdbscan.research"):
        old = _fresh(monkeypatch, "dpdbscan.testing")
    assert old.__all__ == dpdbscan.research.__all__
    assert all(getattr(old, name) is getattr(dpdbscan.research, name) for name in old.__all__)


def test_the_old_parameter_table_name_warns_and_gives_the_same_modules(monkeypatch):
    with pytest.warns(FutureWarning, match="dpdbscan.spec is now dpdbscan.params"):
        _fresh(monkeypatch, "dpdbscan.spec")
        from dpdbscan.spec.parameters import PARAMETERS
        from dpdbscan.spec.specs import SpanSpec
    assert PARAMETERS is dpdbscan.params.parameters.PARAMETERS
    assert SpanSpec is dpdbscan.params.specs.SpanSpec
