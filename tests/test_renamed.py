"""Names renamed in this release keep working for one release behind a
FutureWarning: ``dpdbscan.testing`` is ``dpdbscan.research`` (the research
hooks) and ``dpdbscan.spec`` is ``dpdbscan.params`` (the parameter table);
and, one name per quantity (the glossary of docs/architecture.md), the
approximation ratio is ``approx_ratio`` (was ``rho``, now zCDP's only), the
core test's margin ``noise_margin`` (was ``gamma``) and the radius ``eps``
(was ``alpha`` on the grid). The model file is version 2 with those names;
files of version 1 load (``tests/model/test_old_model_files.py``)."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import dpdbscan.params
import dpdbscan.research
from dpdbscan import DPDBSCAN, Grid
from dpdbscan.model.codec import VERSION, model_to_dict


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


def _fit(**kw) -> DPDBSCAN:
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.03, size=(300, 2)) for c in (0.3, 0.7)])
    return DPDBSCAN(eps=0.1, min_samples=20, bounds=([0, 0], [1, 1]), random_state=0, **kw).fit(X)


@pytest.mark.parametrize("core", ["bound", "density"])
def test_the_old_attribute_names_warn_and_give_the_new_values(core):
    est = _fit(core=core)
    s = est.spans_.spans
    pairs = [
        (s, "rho", "approx_ratio"),
        (s, "gamma", "noise_margin"),
        (s, "gamma_upper", "noise_margin_upper"),
        (est, "rho_", "approx_ratio_"),
        (est, "gamma_", "noise_margin_"),
        (est, "gamma_upper_", "noise_margin_upper_"),
        (est.spans_.grid, "alpha", "eps"),
    ]
    for obj, old, new in pairs:
        with pytest.warns(FutureWarning, match=f"{old} is renamed {new}"):
            value = getattr(obj, old)
        assert value == getattr(obj, new), old
    assert est.approx_ratio_ == 6.0 and est.spans_.grid.eps == 0.1
    with pytest.warns(FutureWarning, match="at_alpha is renamed at_eps"):
        assert est.spans_.grid.at_alpha(0.2) == est.spans_.grid.at_eps(0.2)


def test_the_forecast_s_old_margin_name_warns():
    fc = DPDBSCAN(eps=0.1, min_samples=20, bounds=([0, 0], [1, 1])).forecast(n_expected=600, n_features=2)
    with pytest.warns(FutureWarning, match="gamma is renamed noise_margin"):
        assert fc.gamma == fc.noise_margin


def test_a_grid_takes_its_radius_as_eps():
    g = Grid([0.0, 0.0], [1.0, 1.0], eps=0.1)
    assert g.eps == 0.1 and g.to_dict()["eps"] == 0.1 and "alpha" not in g.to_dict()
    with pytest.warns(FutureWarning, match=r"Grid\(alpha=...\) is renamed Grid\(eps=...\)"):
        old = Grid([0.0, 0.0], [1.0, 1.0], alpha=0.1)
    assert old == g


def _keys(d, prefix=""):
    for k, v in d.items():
        yield prefix + k
        if isinstance(v, dict):
            yield from _keys(v, prefix + k + ".")


@pytest.mark.parametrize(("noise", "key"), [("laplace", "count_epsilon"), ("gaussian", "sigma2")])
def test_the_model_file_writes_one_name_per_quantity(noise, key):
    """Version 2: the noise's parameter is named by its family; the radius
    is eps; rho is zCDP's only; no key of version 1's renamed ones is written."""
    kw = {"noise": noise, "delta": 1e-6} if noise == "gaussian" else {"noise": noise}
    est = _fit(core="bound", **kw)
    doc = model_to_dict(est.spans_)
    keys = set(_keys(doc))
    assert doc["version"] == VERSION == 2
    assert {f"privacy.{key}", f"histogram.{key}", "params.eps", "grid.eps", "noise_margin"} <= keys
    assert {"guarantee.approx_ratio", "guarantee.gamma_low", "guarantee.gamma_up"} <= keys
    old = {"privacy.noise_scale", "histogram.scale", "params.alpha", "grid.alpha", "gamma", "gamma_upper"}
    old |= {"guarantee.rho", "guarantee.gamma", "guarantee.gamma_lower", "guarantee.gamma_upper"}
    assert not keys & old
    assert ("privacy.rho" in keys) == (noise == "gaussian")
    rel, hist = est.spans_.release, est.spans_.histogram
    assert (
        doc["privacy"][key] == rel.noise_scale == (rel.sigma2 if noise == "gaussian" else rel.count_epsilon)
    )
    assert (hist.sigma2 is None) == (noise != "gaussian") and (hist.count_epsilon is None) == (
        noise == "gaussian"
    )


def test_the_level_records_old_radius_name_warns():
    from dpdbscan.post.levelsearch import select_levels

    est = _fit(core="density")
    m = est.spans_
    sel = select_levels(m.histogram, m.spec, (), alpha=0.1)
    for obj in (sel, sel.tree, sel.spans[0], sel.tree.levels[0]):
        with pytest.warns(FutureWarning, match="alpha is renamed eps"):
            assert obj.alpha == obj.eps == 0.1
