"""The strands-share study (experiments.strands_share): its variants' blocks
(the research hook's new share reaches release two's spend and is restored),
the averaging over draws, and the gate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from experiments import strands_share


def _strands(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.1, 0.9, n)
    side = rng.integers(0, 2, n)
    X = np.stack([t, 0.45 + 0.1 * side, np.full(n, 0.5)], axis=1)
    return np.clip(X + rng.normal(0, 0.005, (n, 3)), 0, 1)


def _second(X: np.ndarray) -> dict:
    est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=([0] * 3, [1] * 3), random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict((est.fit(X).spans_.auto or {}).get("second") or {})


def test_the_variant_sets_release_two_share_and_f_and_is_restored():
    X = _strands(8_000, 1)
    lib = _second(X)  # the library: from a DP count of 6,000, 0.15 of epsilon, f = 2
    assert lib["share"] == pytest.approx(0.15) and lib["fine"] == 2
    with strands_share.block("s3f3@2"):  # a draw's suffix names the same variant
        rec = _second(X)
    assert rec["share"] == pytest.approx(0.3)
    assert rec["fine"] == 3
    with strands_share.block("s1f4"):
        rec = _second(X)
    assert rec["share"] == pytest.approx(0.1)
    assert rec["fine"] == 4
    back = _second(X)  # restored
    assert back["share"] == pytest.approx(0.15) and back["fine"] == 2
    with pytest.raises(ValueError):
        strands_share.block("f8")


def test_averaged_needs_every_draw_and_means_them():
    rows = {
        (1, "today"): {"seed": 1, "variant": "today", "ari": 0.2, "cpu": 1.0},
        (1, "today@1"): {"seed": 1, "variant": "today@1", "ari": 0.4, "cpu": 3.0},
        (1, "s2f2"): {"seed": 1, "variant": "s2f2", "ari": 0.5, "cpu": 1.0},
    }
    out = strands_share.averaged(rows, 2)
    assert out[(1, "today~")]["ari"] == pytest.approx(0.3)
    assert out[(1, "today~")]["cpu"] == pytest.approx(2.0)
    assert (1, "s2f2~") not in out  # its draw 1 is missing


def _rows(diffs: dict[int, float], tags: str = "3d strands") -> dict:
    rows = {}
    for s, d in diffs.items():
        rows[(s, "today")] = {"seed": s, "variant": "today", "ari": 0.5, "cpu": 1.0, "tags": tags}
        rows[(s, "v")] = {"seed": s, "variant": "v", "ari": 0.5 + d, "cpu": 1.1, "tags": tags}
    return rows


def test_the_gate_counts_better_and_worse_beyond_0_02():
    # +0.03 mean: two better, one worse beyond 0.02, one change under it
    rows = _rows({1: 0.1, 2: 0.05, 3: -0.03, 4: -0.01})
    g = strands_share.gate(rows, [1, 2, 3, 4], [1, 2, 3, 4], "v")
    assert g["HT"]["better"] == 2 and g["HT"]["worse"] == 1
    assert g["HT_passes"]
    assert g["CPU_passes"]
    assert g["HG_passes"]  # paired +0.0275, the one family up
    rows = _rows({1: 0.1, 2: -0.03, 3: -0.03})  # +0.013 and 1 : 2
    assert not strands_share.gate(rows, [1, 2, 3], [1, 2, 3], "v")["HT_passes"]
    rows = _rows({1: 0.0, 2: -0.03})  # a family down by 0.015
    assert not strands_share.gate(rows, [1], [1, 2], "v")["HG_passes"]
