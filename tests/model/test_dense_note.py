"""The note on a release whose spans cover under half of its counts (issue 28: a week of 10,250
T-Drive-like taxis' stops at 200 m / MinPts 30): where the release is far from short of data, the
note must not tell the user that the data are small or sparse and need a larger eps or epsilon."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from dpdbscan.model.coretestwords import QuietRelease
from dpdbscan.model.densitywords import DENSE_TIMES, DensityWords


def _note(busiest: float, min_samples: float = 30, margin: float = 213.0) -> str:
    hist = SimpleNamespace(values=np.array([0.0, 12.0, busiest]), epsilon=1.0, grid=SimpleNamespace(eps=0.2))
    spans = SimpleNamespace(noise_margin=margin, threshold=min_samples + margin)
    spec = SimpleNamespace(min_samples=min_samples)
    r = QuietRelease(hist, spans, spec, ("uncovered",), 49.5, "units", lambda km: f"{1000 * km:.0f} m")  # type: ignore[arg-type]
    note = DensityWords().utility_note(r)
    assert note is not None
    return note


def test_a_release_far_above_its_threshold_is_not_called_small_or_sparse():
    dense = _note(243.0 * DENSE_TIMES + 1)
    assert "not small or sparse" in dense and "need a larger eps" not in dense
    assert "less than half of the noisy counts" in dense and "243 units within 200 m" in dense
    assert str(243 * DENSE_TIMES + 1) not in dense.replace(",", "")  # no released value quoted
    sparse = _note(243.0 * DENSE_TIMES - 1)
    assert "the margin dominates: the data are small or sparse" in sparse
    assert "Small or sparse data need a larger eps or a larger epsilon" in sparse


def test_a_threshold_that_is_mostly_min_samples_is_not_blamed_on_the_noise():
    """MinPts 1,028 on the same stops (margin 49.5, the busiest cell 9.5 times the
    threshold): the note said "Small or sparse data need a larger eps or a larger
    epsilon", though a larger epsilon only trims a margin of 49.5."""
    note = _note(1077.5 * 9.5, min_samples=1028, margin=49.5)
    assert "need a larger eps or a larger epsilon" not in note and "margin dominates" not in note
    assert "mostly min_samples itself" in note and "a larger epsilon would change little" in note
    assert "dpdbscan forecast" in note
