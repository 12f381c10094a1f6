"""``dpdbscan.research.noiseless_twin``: the spans of a fitted release without
its noise, the reference of the accuracy studies (experiments/person_level.py).

The twin must count exactly what the release counted: at person level the
same contribution bound with the same bounding key. Checked against releases
whose noise is far below one count (epsilon = 1e4), where the noisy
histogram equals the exact one except with the probability stated in each
test.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN, with_params
from dpdbscan.exceptions import UtilityWarning, WeakPrivacyWarning
from dpdbscan.laws import discretegaussian as gaussian
from dpdbscan.research import noiseless_twin

pytestmark = pytest.mark.filterwarnings("ignore::dpdbscan.exceptions.InsecureRandomnessWarning")

BIG = 1e4  # the largest epsilon the parameter table accepts


def units_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """200 units, each with points in about 30 cells, so that k = 5 cells per
    unit makes the choice of cells matter."""
    rng = np.random.default_rng(seed)
    units = np.repeat(np.arange(200), 60)
    X = rng.normal([0.5, 0.5], 0.08, size=(units.size, 2)).clip(0, 1)
    return X, units


def fit(X, units=None, *, seed: int, epsilon: float = BIG, **kw):
    est = DPDBSCAN(0.05, min_samples=30, epsilon=epsilon, bounds=(0, 1), random_state=seed, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeakPrivacyWarning)
        warnings.simplefilter("ignore", UtilityWarning)
        return est.fit(X, units=units).spans_


def test_person_level_twin_counts_what_the_release_counted():
    """At epsilon 1e4, delta 1e-6 the Gaussian's sigma^2 is about 2.5e-4:
    P(Z != 0) per cell is below 2 exp(-1 / (2 sigma^2)) < 1e-800, so the
    noisy histogram is the exact bounded one (false failure below 1e-6)."""
    X, units = units_data()
    model = fit(X, units, seed=11, delta=1e-6, max_cells_per_unit=5)
    cells = model.release.grid.n_cells
    assert cells * 2 * gaussian.tail(model.release.noise_scale, 1.0) < 1e-6  # a union bound over the cells
    twin = noiseless_twin(model, X, units, random_state=11)
    assert twin.release.grid == model.release.grid and twin.release.units == model.release.units
    assert twin.histogram.noise == "none" and math.isinf(twin.histogram.epsilon)
    assert np.array_equal(twin.histogram.values, model.histogram.values)
    # each unit adds at most 5 cells of 1: the bound was applied
    assert twin.histogram.values.sum() == 200 * 5
    assert model.release.grid.n_cells == 29 * 29
    # power: another key keeps other cells, so this comparison can fail
    other = noiseless_twin(model, X, units, random_state=12)
    assert not np.array_equal(other.histogram.values, model.histogram.values)


def test_event_level_twin_is_the_exact_histogram_and_its_spans():
    """Discrete Laplace at epsilon 1e4: P(Z != 0) = 2q / (1 + q), q = e^-1e4,
    for each of the 841 cells: far below 1e-6."""
    X, _ = units_data(1)
    model = fit(X, seed=3)
    twin = noiseless_twin(model, X)
    assert np.array_equal(twin.histogram.values, model.histogram.values)
    grid = model.release.grid
    edges = [grid.lower[i] + grid.width * np.arange(grid.shape[i] + 1) for i in range(2)]
    exact, _, _ = np.histogram2d(X[:, 0], X[:, 1], bins=edges)
    assert np.array_equal(twin.histogram.values, exact.astype(np.int64))
    assert twin.n_spans >= 1 and twin.spans.noise_margin == 0.0
    assert twin.spec == model.spec


def test_the_twin_of_an_epsilon_one_release_differs_only_by_noise():
    X, units = units_data(2)
    model = fit(X, units, seed=5, epsilon=1.0, delta=1e-6, max_cells_per_unit=5)
    twin = noiseless_twin(model, X, units, random_state=5)
    diff = model.histogram.values - twin.histogram.values
    # the noise of every cell at sigma = sqrt(noise_scale): within 7 sigma
    # except with probability below cells * 2 * P(Z >= 7 sigma) < 1e-6
    sigma = math.sqrt(model.release.noise_scale)
    cells = model.release.grid.n_cells
    assert cells * 2 * gaussian.tail(model.release.noise_scale, 7 * sigma) < 1e-6
    assert np.abs(diff).max() <= 7 * sigma
    assert np.count_nonzero(diff) > 0


def test_the_twin_refuses_what_it_cannot_reproduce():
    X, units = units_data()
    person = fit(X, units, seed=1, delta=1e-6, max_cells_per_unit=5)
    with pytest.raises(ValueError, match="seed"):
        noiseless_twin(person, X, units)
    with pytest.raises(ValueError, match="seed"):
        noiseless_twin(person, X, random_state=1)
    event = fit(X, seed=1)
    with pytest.raises(ValueError, match="event-level"):
        noiseless_twin(event, X, units)
    with pytest.raises(ValueError, match="as fitted"):
        noiseless_twin(with_params(event, eps=0.08), X)


def test_a_person_level_twin_reads_a_list_of_ids_as_the_fit_did():
    """Sixty ids near 2**60 and one other unit's id 0.5, as a list: the fit
    reads each id on its own (sixty units at the spot); the twin took them
    with np.asarray, which made them floats and one unit (a count of 1)."""
    ids = [2**60 + i for i in range(60) for _ in range(3)] + [0.5]
    X = np.array([[2.5, 2.5]] * 180 + [[7.5, 7.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPDBSCAN(
            eps=0.5,
            min_samples=10,
            bounds=(0, 10),
            epsilon=2,
            delta=1e-5,
            max_cells_per_unit=4,
            random_state=3,
        ).fit(X, units=ids)
    h = noiseless_twin(m.spans_, X, ids, random_state=3).histogram
    assert int(h.value_at(h.grid.keys_of_points(np.array([[2.5, 2.5]])))[0]) == 60
