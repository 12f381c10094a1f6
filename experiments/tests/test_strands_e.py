"""The strands-E study (experiments.strands_e): its variants' blocks (the
research hook's ladder cap now reaches the range where the library joins by
faces), the held-out sets from a listing, and the gate's summary."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.research import finer_3d_from
from experiments import strands_e
from experiments.strands_fine import FINE_POINTS


def _strands(n: int, seed: int, d: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.1, 0.9, n)
    side = rng.integers(0, 2, n)
    cols = [t, 0.45 + 0.1 * side] + [np.full(n, 0.5)] * (d - 2)
    return np.clip(np.stack(cols, axis=1) + rng.normal(0, 0.005, (n, d)), 0, 1)


def _candidates(X: np.ndarray) -> list:
    d = X.shape[1]
    est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=([0] * d, [1] * d), random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list((est.fit(X).spans_.auto or {})["eps_candidates"])


def test_the_hooks_cap_reaches_the_face_joined_range_and_is_restored():
    # a DP count near 8,000: the library's finer base with spans joined by faces,
    # three candidates (its SMALL_FINER_CANDIDATE_KAPPA); the hook's cap of 200
    # leaves one, on a base for 4 x the points (eps / 4^(1/3))
    X = _strands(8_000, 1)
    today = _candidates(X)
    with finer_3d_from(6_000, 4 * FINE_POINTS, 200):
        fine = _candidates(X)
    assert len(today) == 3
    assert len(fine) == 1
    assert fine[0] == pytest.approx(today[0] / 4 ** (1 / 3), rel=0.02)
    assert _candidates(X) == today
    with strands_e.block("f8c2b"):  # 8 x the points, a cap of 350: two candidates
        assert len(_candidates(X)) == 2
    assert _candidates(X) == today


def test_the_sets_come_from_the_listing_alone():
    rows = [
        {"seed": 1, "d": 3, "n": 8_000, "k": 2, "tags": ["3d", "strands"]},
        {"seed": 2, "d": 3, "n": 8_000, "k": 4, "tags": ["3d", "strands"]},
        {"seed": 3, "d": 3, "n": 20_000, "k": 2, "tags": ["3d", "spirals"]},
        {"seed": 4, "d": 2, "n": 8_000, "k": 2, "tags": ["2d", "strands"]},
        {"seed": 5, "d": 3, "n": 6_000, "k": 3, "tags": ["3d", "blob", "spirals"]},
        {"seed": 6, "d": 3, "n": 19_999, "k": 1, "tags": ["3d", "curve"]},
    ]
    ht, hg = strands_e.sets_of(rows)
    assert hg == [1, 2, 5, 6]
    assert ht == [1, 5]


def test_the_gate_reads_paired_differences_families_and_cpu():
    def row(seed, variant, ari, tags, cpu):
        return {"seed": seed, "variant": variant, "ari": ari, "tags": tags, "cpu": cpu}

    rows = {}
    for seed, base, var, tags in (
        (1, 0.2, 0.5, "3d strands"),
        (2, 0.9, 0.85, "3d blob"),
        (3, 0.5, 0.5, "3d arc"),
    ):
        rows[(seed, "today")] = row(seed, "today", base, tags, 1.0)
        rows[(seed, "v")] = row(seed, "v", var, tags, 2.0 if seed == 1 else 1.0)
    g = strands_e.gate(rows, [1], [1, 2, 3], "v")
    assert g["HT"]["paired"] == pytest.approx(0.3)
    assert g["HT_passes"]
    assert g["HG"]["families"]["blob"] == (pytest.approx(-0.05), 1)
    assert not g["HG_passes"]  # blob down by 0.05
    assert g["HG"]["cpu_ratio"] == 1.0
    assert g["CPU_passes"]
    assert (g["HG"]["better"], g["HG"]["worse"]) == (1, 1)
