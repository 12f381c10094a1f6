"""experiments.strands_level2: a finer second release where the first is dense."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN
from experiments import scene_bench, strands_level2


def _ribbons(n: int, gap: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two flat parallel ribbons in 3-D, ``gap`` apart along y."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(1.0, 9.0, n)
    y = np.where(np.arange(n) < n // 2, 5.0, 5.0 + gap) + rng.normal(0, 0.03, n)
    X = np.stack([x, y, np.full(n, 5.0)], axis=1)
    return X, (np.arange(n) >= n // 2).astype(np.int64)


def _fit(X: np.ndarray, eps: float, epsilon: float) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        box = (np.zeros(3), np.full(3, 10.0))
        est = DPDBSCAN(eps, min_samples=50, epsilon=epsilon, bounds=box, random_state=1)
        return est.fit(X).spans_


def test_release_two_parts_ribbons_that_one_span_joins():
    X, y = _ribbons(20_000, 0.5)
    one = _fit(X, 1.2, 0.75)  # a ball of eps 1.2 between the ribbons holds both
    assert scene_bench.ari(y, one.predict(X)) < 0.1
    labels, released, split = strands_level2.split_labels(one, X, 4, 0.25, seed=3, z2=4.0, q=0.1)
    cells, _ = strands_level2.selected_cells(one)
    # release two covers exactly the selected cells, f^3 fine cells each
    assert released == cells.shape[0] * 4**3
    assert split == 1
    assert scene_bench.ari(y, labels) > 0.95


def test_one_ribbon_is_left_whole():
    X, y = _ribbons(20_000, 0.0)
    one = _fit(X, 1.2, 0.75)
    labels, _, split = strands_level2.split_labels(one, X, 4, 0.25, seed=3, z2=4.0, q=0.1)
    assert split == 0
    assert np.array_equal(labels, one.predict(X))
