"""experiments/gap3d.py: the loss decomposition adds up and names the part
that is wrong."""

from __future__ import annotations

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
