"""experiments/gap3d.py: the loss decomposition adds up and names the part
that is wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments import gap3d, scene_bench


def truth() -> np.ndarray:
    return np.array([0] * 50 + [1] * 50 + [2] * 40 + [-1] * 20)


def test_every_repair_together_gives_the_truth_and_the_parts_add_up():
    rng = np.random.default_rng(5)
    for _ in range(30):
        y = rng.integers(-1, 4, 200)
        p = np.where(rng.random(200) < 0.6, y + (y >= 0) * rng.integers(0, 2, 200), rng.integers(-1, 6, 200))
        assert scene_bench.ari(y, gap3d.repaired(y, p, frozenset(gap3d.PARTS))) == pytest.approx(1.0)
        parts = gap3d.decompose(y, p)
        assert sum(parts[k] for k in gap3d.PARTS) == pytest.approx(1 - parts["ari"])


@pytest.mark.parametrize(
    ("name", "spoil"),
    [
        ("coverage", lambda p: np.where(np.arange(p.size) < 20, -1, p)),
        ("merge", lambda p: np.where(p == 1, 0, p)),
        ("split", lambda p: np.where(np.arange(p.size) < 20, 7, p)),
        ("bleed", lambda p: np.where(p < 0, 2, p)),
    ],
)
def test_one_kind_of_error_is_charged_to_its_part_alone(name, spoil):
    y = truth()
    parts = gap3d.decompose(y, spoil(y.copy()))
    assert parts["ari"] < 0.95
    assert parts[name] == pytest.approx(1 - parts["ari"])
    assert all(parts[k] == pytest.approx(0.0, abs=1e-12) for k in gap3d.PARTS if k != name)


def test_a_span_of_noise_beside_the_clusters_is_spurious():
    y = truth()
    p = y.copy()
    p[-20:] = 9  # the noise as a span
    p[:5] = 9  # with a few points of cluster 0
    parts = gap3d.decompose(y, p)
    assert parts["spurious"] > 0 and parts["spurious"] == pytest.approx(1 - parts["ari"])
    assert gap3d.counts(y, p)["spurious_spans"] == 1


def test_the_gate_table_pairs_draws_and_sees_same_labels(tmp_path):
    rows = [
        {"gen": "curves", "seed": 1, "d": 3, "variant": v, "ari": a, "digest": g}
        for v, a, g in (
            ("today", 0.5, "x"),
            ("two1s5f4", 0.7, "y"),
            ("today@1", 0.5, "x"),
            ("two1s5f4@1", 0.5, "x"),
            ("today@2", 0.4, "z"),  # draw 2 has no candidate: left out
        )
    ] + [
        {"gen": "curves", "seed": 2, "d": 3, "variant": v, "ari": 0.3, "digest": "s"}
        for v in ("today", "two1s5f4")
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = gap3d.gate_table(str(path)).splitlines()[-1]
    # scene 1: 0.5 -> 0.6 over its two paired draws; scene 2 unchanged, same labels
    assert line.startswith("| curves | 3 | 2 (2) | 0.400 | 0.450 | +0.0500 | 1 / 0 |")
    assert line.endswith("| 1 |")
