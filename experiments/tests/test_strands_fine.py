"""The strands-fine study (experiments.strands_fine): the research block
sizes the 3-D base below a DP count of 20,000 for other points and restores
the library's after; the variants' blocks; the tune gate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, summary
from dpdbscan.research import finer_3d_from
from experiments import strands_fine


def _strands(n: int, seed: int, d: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.1, 0.9, n)
    side = rng.integers(0, 2, n)
    cols = [t, 0.45 + 0.1 * side] + [np.full(n, 0.5)] * (d - 2)
    return np.clip(np.stack(cols, axis=1) + rng.normal(0, 0.005, (n, d)), 0, 1)


def _auto(X: np.ndarray) -> dict:
    d = X.shape[1]
    est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=([0] * d, [1] * d), random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict(est.fit(X).spans_.auto or {})


def test_the_block_sizes_the_3d_base_below_20000_and_restores_the_library():
    # a DP count near 5,000, below the library's own finer range (sizing.FINER_3D_FROM,
    # 6,000): the library keeps the base for 20,000 there
    X = _strands(5_000, 1)
    today = _auto(X)["eps_candidates"]
    with finer_3d_from(4_000, 2**1.5 * 20_000, 500):
        fine = _auto(X)["eps_candidates"]
    # eps / sqrt 2 (to the 1% of the base's search) and three candidates, not four
    assert fine[0] == pytest.approx(today[0] / 2**0.5, rel=0.02)
    assert (len(today), len(fine)) == (4, 3)
    with finer_3d_from(9_000, 2**1.5 * 20_000):  # the count is below the block's least
        assert _auto(X)["eps_candidates"] == today
    assert _auto(X)["eps_candidates"] == today


def test_the_block_leaves_2d_alone():
    X = _strands(8_000, 1, d=2)
    today = _auto(X)["eps_candidates"]
    with finer_3d_from(6_000, 2**1.5 * 20_000, 500):
        assert _auto(X)["eps_candidates"] == today


def test_a_release_two_variant_sets_release_two_below_20000():
    X = _strands(8_000, 1)
    # since the strands-share rule the library makes release two from a count of 6,000 (f = 2)
    assert _auto(X)["second"]["fine"] == 2
    with strands_fine.block("f2c3two"):
        auto = _auto(X)
    assert auto["second"]["fine"] == 3
    assert _auto(X)["second"]["fine"] == 2


def _row(seed: int, variant: str, ari: float, tags: str = "strands") -> dict:
    return {"seed": seed, "variant": variant, "ari": ari, "d": 3, "n": 10_000, "tags": tags, "cpu": 1.0}


def test_the_tune_gate_counts_unfitted_scenes_as_zero_and_fails_a_family_that_loses():
    rows = {}
    for s, (base, new, tags) in enumerate(((0.2, 0.8, "strands"), (0.9, 0.85, "blob"), (0.5, 0.5, "arc"))):
        rows[(s, "today")] = _row(s, "today", base, tags)
        rows[(s, "v")] = _row(s, "v", new, tags)
    g = strands_fine.gate(rows, "v", [0, 1, 7], [2])  # scene 7 not fitted: 0
    assert g["T"][0] == pytest.approx((0.6 - 0.05) / 3)
    assert g["families"]["blob"][0] == pytest.approx(-0.05)
    assert not g["meets"]
    rows[(1, "v")] = _row(1, "v", 0.9, "blob")
    assert strands_fine.gate(rows, "v", [0, 1, 7], [2])["meets"]


def test_the_held_out_gates_need_every_scene_fitted_and_fail_a_family_that_loses():
    rows = {}
    a3 = [s for s in strands_fine.HT_SEEDS if s in strands_fine.HG_SEEDS]  # in both (A) and (B)
    for s in set(strands_fine.HT_SEEDS[:19]) | set(strands_fine.HG_SEEDS):
        rows[(s, "today")] = _row(s, "today", 0.5, "strands")
        rows[(s, "f2c3twof2")] = _row(s, "f2c3twof2", 0.6, "strands")
    for s in (x for xs in strands_fine.HC_SETS.values() for x in xs):
        rows[(s, "today")] = _row(s, "today", 0.5)
        rows[(s, "f2c3twof2")] = _row(s, "f2c3twof2", 0.5)
    h = strands_fine.heldout(rows)
    assert h["A"]["fitted"] == 19 and h["A"]["paired"] == pytest.approx(0.1 * 19 / 45)
    assert h["A_passes"] and h["B_passes"] and h["C_passes"] and h["E_passes"]
    s = a3[0]  # one blob scene down 0.3: (A)'s and (B)'s blob family fails
    rows[(s, "today")] = _row(s, "today", 0.9, "blob")
    rows[(s, "f2c3twof2")] = _row(s, "f2c3twof2", 0.6, "blob")
    h = strands_fine.heldout(rows)
    assert h["A"]["families"]["blob"] == (pytest.approx(-0.3), 1)
    assert not h["A_passes"] and not h["B_passes"] and h["C_passes"]
    del rows[(strands_fine.HC_SETS["heldout"][0], "f2c3twof2")]  # a scene not run fails (C)
    assert not strands_fine.heldout(rows)["C_passes"]


def _count_line(X: np.ndarray) -> str:
    d = X.shape[1]
    est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=([0] * d, [1] * d), random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = summary(est.fit(X).spans_)
    return next(line for line in text.splitlines() if line.strip().startswith("count"))


def test_the_summary_names_the_base_the_block_sized():
    # the summary takes the finer base's n where the fit does, so a block's
    # base is the one it names (it named the library's before)
    X = _strands(8_000, 1)  # a count in the library's finer range (6,000 to 20,000)
    assert "56,569 points" in _count_line(X)
    with finer_3d_from(6_000, 40_000):
        assert "40,000 points" in _count_line(X)
    X = _strands(5_000, 1)  # below it: the library keeps the base for 20,000
    assert "the one for 20,000 points" in _count_line(X)
    with finer_3d_from(4_000, 2**1.5 * 20_000, 500):
        assert "sized the grid for 56,569 points (the finer 3-D base)" in _count_line(X)
