"""The "uncovered" utility problem (less than half of the release's counts in the spans' cells,
"most points will be labelled noise") must not count the noise of empty cells as data: on a dense
histogram of many cells the positive parts of that noise outweighed the points, and on a sparse
histogram the cells that noise alone lifts over theta did, so releases whose spans hold nearly
every point were warned that most points would be labelled noise (a chest accelerometer in 3-D,
per-window sensor features in 6-D)."""

from __future__ import annotations

import warnings

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.exceptions import UtilityWarning


def _blobs(d: int, n: int, seed: int, centres: np.ndarray, sd: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    which = rng.integers(0, len(centres), n)
    return centres[which] + rng.normal(0.0, sd, (n, d))


def _fit(X: np.ndarray, seed: int, **kw) -> tuple[DPDBSCAN, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPDBSCAN(epsilon=1.0, random_state=seed, **kw).fit(X)
    return m, [str(w.message) for w in caught if issubclass(w.category, UtilityWarning)]


def test_dense_grid_whose_spans_hold_the_points_is_not_called_uncovered():
    # 3-D, 20,000 points in two tight blobs of a 0..100 box: 456,533 cells of noise
    centres = np.array([[40.0, 40.0, 40.0], [60.0, 60.0, 60.0]])
    X = _blobs(3, 20_000, 70_051, centres, 1.0)
    m, notes = _fit(X, 70_052, eps=2.25, min_samples=20, bounds=(0.0, 100.0))
    assert m.spans_.histogram.kind == "dense"
    assert np.mean(m.predict(X) >= 0) > 0.95
    assert not any("less than half of the noisy counts" in t for t in notes), notes


def test_sparse_grid_whose_spans_hold_the_points_is_not_called_uncovered():
    # 6-D, 20,000 points in four blobs: a sparse release of about 9 x 10^8 cells, theta lifting noise cells
    centres = np.array([[0.3] * 6, [0.7] * 6, [0.3, 0.7] * 3, [0.7, 0.3] * 3])
    X = _blobs(6, 20_000, 70_053, centres, 0.01)
    m, notes = _fit(X, 70_054, eps=0.08, min_samples=30, bounds=(0.0, 1.0))
    assert m.spans_.histogram.kind == "sparse"
    assert m.spans_.n_spans == 4 and np.mean(m.predict(X) >= 0) > 0.95
    assert not any("less than half of the noisy counts" in t for t in notes), notes


def test_spans_that_do_leave_most_points_out_are_still_called_uncovered():
    # the same 3-D points with a third of them spread over the box, at a MinPts only the
    # blobs' cores reach: the spans leave most of the counted mass out
    centres = np.array([[40.0, 40.0, 40.0], [60.0, 60.0, 60.0]])
    rng = np.random.default_rng(70_055)
    X = np.vstack([_blobs(3, 4_000, 70_056, centres, 6.0), rng.uniform(0, 100, (16_000, 3))])
    m, notes = _fit(X, 70_057, eps=2.25, min_samples=20, bounds=(0.0, 100.0))
    assert np.mean(m.predict(X) >= 0) < 0.5
    assert any("less than half of the noisy counts" in t for t in notes), notes
