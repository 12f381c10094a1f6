"""The person3d study's research hook and summary (experiments.strands_person2)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, SpanModel, research
from experiments import strands_person2


def _blobs(d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(c, 0.03, (800, d)) for c in (0.3, 0.7)])
    return np.clip(X, 0.0, 1.0), np.arange(X.shape[0]) // 4


def _fit(X: np.ndarray, units: np.ndarray | None) -> SpanModel:
    d = X.shape[1]
    person = {"delta": 1e-6, "max_cells_per_unit": 4, "max_points_per_cell": 1} if units is not None else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(
            "auto",
            min_samples="auto",
            epsilon=1.0,
            bounds=(np.zeros(d), np.ones(d)),
            random_state=3,
            **person,
        )
        return est.fit(X, units=units).spans_


def _base(model: SpanModel) -> float:
    assert model.auto is not None
    return float(model.auto["base_eps"])


def test_person_base_3d_sizes_the_person_level_3d_base_and_joins_faces():
    X, units = _blobs()
    X2, units2 = _blobs(d=2)
    today = [_fit(X, units), _fit(X, None), _fit(X2, units2)]
    with research.person_base_3d(2**1.5 * 20_000, 500, "face"):
        inside = [_fit(X, units), _fit(X, None), _fit(X2, units2)]
    after = _fit(X, units)  # put back: the library's fit again
    assert _base(after) == _base(today[0]) and after.spec.join == "eps"
    # the person-level 3-D fit: a finer base, spans joined by faces
    assert _base(inside[0]) < _base(today[0]) / 1.3
    assert inside[0].spec.join == "face" and today[0].spec.join == "eps"
    # event level in 3-D and person level in 2-D: the library's fit
    for a, b, pts in zip(today[1:], inside[1:], (X, X2), strict=True):
        assert _base(a) == _base(b) and a.spec.join == b.spec.join == "eps"
        assert np.array_equal(a.predict(pts), b.predict(pts))


def test_person_base_3d_refuses_an_unknown_join():
    with pytest.raises(ValueError, match="join"):
        with research.person_base_3d(None, None, "corner"):
            pass


def test_summary_pairs_each_variant_with_today():
    rows = [
        {"seed": 1, "strands": True, "today": {"ari": 0.2, "cpu": 1.0}, "v": {"ari": 0.5, "cpu": 2.0}},
        {"seed": 2, "strands": False, "today": {"ari": 0.9, "cpu": 2.0}, "v": {"ari": 0.8, "cpu": 2.0}},
    ]
    text = strands_person2.summary(rows)
    assert "| v | 2 (1) | +0.300 | +0.100 | 1 / 1 | 1.50x |" in text
