"""The spirals study's variants (experiments.spirals_two): the research block
moves release two's gate and restores the library's after; the variants read
from ``today`` and ``all6k``; the tune gate."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.research import second_release_where
from experiments import spirals_two


def _strands(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.1, 0.9, n)
    side = rng.integers(0, 2, n)
    X = np.stack([t, 0.45 + 0.1 * side, np.full(n, 0.5)], axis=1)
    return np.clip(X + rng.normal(0, 0.005, (n, 3)), 0, 1)


def _second(X: np.ndarray) -> bool:
    est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=([0, 0, 0], [1, 1, 1]), random_state=3)
    return "second" in (est.fit(X).spans_.auto or {})


@pytest.mark.filterwarnings("ignore")
def test_the_block_makes_release_two_from_its_count_and_restores_the_library():
    X = _strands(8_000, 1)  # a DP count near 8,000: release two since strands-share (from 6,000)
    assert _second(X)
    with second_release_where({3: 9_000}):  # the block's count: above this scene's
        assert not _second(X)
    with second_release_where({2: 6_000}):  # 3-D not in the block's dimensions
        assert not _second(X)
    assert _second(X)


def _row(seed: int, variant: str, ari: float, d: int, n: int = 10_000, tags: str = "strands") -> dict:
    return {"seed": seed, "variant": variant, "ari": ari, "d": d, "n": n, "tags": tags, "cpu": 1.0}


def test_the_variants_are_read_from_today_and_all6k():
    rows = {}
    for s, d, n in ((1, 2, 8_000), (2, 3, 8_000), (3, 2, 30_000)):
        rows[(s, "today")] = _row(s, "today", 0.5, d, n)
        rows[(s, "all6k")] = _row(s, "all6k", 0.9, d, n)
    out = spirals_two.derive(rows)
    assert [out[(s, "2d6k")]["ari"] for s in (1, 2, 3)] == [0.9, 0.5, 0.9]
    assert [out[(s, "3d6k")]["ari"] for s in (1, 2, 3)] == [0.5, 0.9, 0.5]
    assert [out[(s, "2d20k")]["ari"] for s in (1, 2, 3)] == [0.5, 0.5, 0.9]


def test_the_tune_gate_fails_a_family_that_loses():
    rows = {}
    for s, (base, new, tags) in enumerate(((0.2, 0.8, "strands"), (0.9, 0.85, "curve"), (0.5, 0.5, "arc"))):
        rows[(s, "today")] = _row(s, "today", base, 3, tags=tags)
        rows[(s, "v")] = _row(s, "v", new, 3, tags=tags)
    g = spirals_two.gate(rows, "v", [0, 1], [2])
    assert g["T"][0] == pytest.approx(0.275)
    assert g["families"]["curve"][0] == pytest.approx(-0.05)
    assert not g["meets"]
    rows[(1, "v")] = _row(1, "v", 0.9, 3, tags="curve")
    assert spirals_two.gate(rows, "v", [0, 1], [2])["meets"]
