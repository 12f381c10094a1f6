"""experiments.strands_split: release two splits a span only side by side."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN
from experiments import scene_bench, strands_split

VARIANT = (3, 0.5, 0.1, 2.0)


def _ribbons(n: int, gap: float, cut: float = 0.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two flat parallel ribbons in 3-D, ``gap`` apart along y (one when
    ``gap`` is 0); with ``cut``, one ribbon cut across its length at x = 5
    into two pieces ``cut`` apart (the labels: the two pieces)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(1.0, 9.0 - cut, n)
    y = np.where(np.arange(n) < n // 2, 5.0, 5.0 + gap) + rng.normal(0, 0.03, n)
    if cut:
        x = np.where(x > 5.0, x + cut, x)
        y = 5.0 + rng.normal(0, 0.03, n)
        labels = (x > 5.0).astype(np.int64)
    else:
        labels = (np.arange(n) >= n // 2).astype(np.int64)
    return np.stack([x, y, np.full(n, 5.0)], axis=1), labels


def _fit(X: np.ndarray, eps: float, epsilon: float) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        box = (np.zeros(3), np.full(3, 10.0))
        return DPDBSCAN(eps, min_samples=50, epsilon=epsilon, bounds=box, random_state=1).fit(X).spans_


def test_parallel_ribbons_are_split():
    X, y = _ribbons(20_000, 0.8)
    one = _fit(X, 1.2, 0.9)  # a ball of eps 1.2 between the ribbons holds both
    assert scene_bench.ari(y, one.predict(X)) < 0.1
    rel = strands_split.releases_of(one, X, 0.1, seed=3)
    labels, split = strands_split.split_labels(rel, X, 0.1, VARIANT)
    assert split == 1
    assert scene_bench.ari(y, labels) > 0.95


def test_pieces_along_one_ribbon_stay_whole():
    # the two pieces lie end to end: each covers under half of the span's
    # extent along its main axis, so the rule keeps the span whole
    X, y = _ribbons(20_000, 0.0, cut=0.6)
    one = _fit(X, 1.2, 0.9)
    assert scene_bench.ari(y, one.predict(X)) < 0.1  # release one joins the pieces
    rel = strands_split.releases_of(one, X, 0.1, seed=3)
    labels, split = strands_split.split_labels(rel, X, 0.1, VARIANT)
    assert split == 0
    assert np.array_equal(labels, one.predict(X))
    # the same release two with no side-by-side condition (c = 0) splits it
    _, split_any = strands_split.split_labels(rel, X, 0.1, (3, 0.0, 0.1, 2.0))
    assert split_any == 1


def test_f_from_the_released_size():
    sd = np.sqrt(2.0) / 0.1
    assert strands_split.choose_f(3, 1.0, sd) == 3
    assert strands_split.choose_f("m2", 4 * 2 * sd, sd) == 4
    assert strands_split.choose_f("m2", 3 * 2 * sd, sd) == 3
    assert strands_split.choose_f("m4", 2 * 4 * sd - 1, sd) is None
