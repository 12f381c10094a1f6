"""The synthetic city of traces (experiments.synthetic_traces), end to end: generator, stops, a fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import Stops, fit_lonlat, predict_lonlat
from experiments.person_level import one_unit_spans
from experiments.synthetic_traces import (
    HOME,
    JAM,
    box,
    generate,
    road_cells,
    to_lonlat,
    top_event_cells,
    top_places,
)

#: the metric's cells at eps 200 m (alpha / sqrt 2)
CELL_KM = 0.2 / np.sqrt(2)


@pytest.fixture(scope="module")
def city():
    return generate(units=60, days=2, interval=60.0, seed=0)


def _fit(city, seed: int, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise: research runs
        return fit_lonlat(
            city.lonlat, bounds=box(), eps="200m", delta=1e-6, units=city.unit, random_state=seed, **kw
        )


def _held(model, city, place: int) -> float:
    """Share of the place's true stays (>= 5 min) whose position predicts into a span."""
    s = city.stays[(city.stays[:, 1] == place) & (city.stays[:, 3] - city.stays[:, 2] >= 300)]
    return float(np.mean(np.asarray(predict_lonlat(model, to_lonlat(s[:, 4:6]))) >= 0))


def test_the_generator_is_seeded_samples_at_its_interval_and_inside_its_box(city):
    again = generate(units=60, days=2, interval=60.0, seed=0)
    assert np.array_equal(city.lonlat, again.lonlat) and np.array_equal(city.time, again.time)
    other = generate(units=60, days=2, interval=60.0, seed=1)
    assert not np.array_equal(city.places.centre, other.places.centre)
    lo, hi = np.array(box()[:2]), np.array(box()[2:])
    assert np.all((city.lonlat > lo) & (city.lonlat < hi))
    same = city.unit[1:] == city.unit[:-1]
    gaps = np.diff(city.time)[same]
    assert 50 <= np.median(gaps) <= 70  # jittered around the interval
    assert np.sum(gaps > 300) > 60  # gaps: about one every 3 h per unit, and nights off
    # rides: the status turns 0 -> 1, and the truth knows every kind of stay
    assert np.sum(same & (city.occupied[1:] == 1) & (city.occupied[:-1] == 0)) > 500
    kinds = set(np.unique(city.stays[:, 1]).astype(int))
    assert {HOME, JAM} <= kinds and len(kinds - {HOME, JAM}) > 50
    # places from tens of metres to about a kilometre, popularity heavy-tailed
    r = city.places.radius
    assert r.min() < 0.03 and r.max() > 0.8
    w = np.sort(city.places.weight)[::-1]
    assert w[: len(w) // 10].sum() > 0.3 * w.sum()


def test_stops_find_the_busiest_place_and_leave_the_roads_that_raw_traces_cover(city):
    """The same release settings on every fix and on the stops: the fixes'
    spans cover the busiest road cells far from any place, the stops' spans
    hold the busiest place (by distinct units staying 5 min or more) and no
    such road cell. A small fleet (60 units over two days) needs a large
    epsilon to show anything: this is a check of the pipeline on traces that
    are not Cabs, not of utility at epsilon 1 (experiments.traces_check)."""
    roads = road_cells(city, CELL_KM, n=20)
    busiest = int(top_places(city, 1)[0])
    common = dict(min_samples=10, epsilon=8.0, max_cells_per_unit=400)
    raw = [_fit(city, seed, **common) for seed in (0, 1)]
    assert min(np.mean(np.asarray(predict_lonlat(m, roads)) >= 0) for m in raw) >= 0.25
    for seed in (0, 1):
        m = _fit(city, seed, times=city.time, events=Stops("100m", "5min"), **common)
        assert m.n_spans >= 1
        assert _held(m, city, busiest) >= 0.5
        assert np.mean(np.asarray(predict_lonlat(m, roads)) >= 0) <= 0.1


@pytest.mark.slow
def test_a_week_of_500_taxis_at_epsilon_1():
    """The issue's settings (eps 200 m, MinPts 30, epsilon 1, k chosen
    privately) on a week of 500 taxis sampled every minute: of the 20 cells
    where the most taxis stop, at least 85% in spans (the target is 90%:
    one seeded release, a margin for its noise); none of the 50 busiest
    road cells far from every place; no span mostly one taxi's stops."""
    from dpdbscan.research import Equirectangular, event_rows

    city = generate(units=500, days=7, interval=60.0, seed=5)
    proj = Equirectangular.from_bounds(list(box()[:2]), list(box()[2:]))
    rows = event_rows(Stops(0.1, 300.0), proj.forward(city.lonlat), city.unit, city.time)
    m = _fit(
        city,
        0,
        min_samples=30,
        epsilon=1.0,
        max_cells_per_unit="auto",
        times=city.time,
        events=Stops("100m", "5min"),
    )
    assert np.mean(np.asarray(predict_lonlat(m, top_event_cells(city, rows, CELL_KM))) >= 0) >= 0.85
    assert np.mean(np.asarray(predict_lonlat(m, road_cells(city, CELL_KM))) >= 0) <= 0.1
    labels = np.asarray(predict_lonlat(m, city.lonlat[rows]))
    assert one_unit_spans(labels, city.unit[rows], m.n_spans)[0] == 0
