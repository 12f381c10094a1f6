"""The synthetic city of traces (experiments.synthetic_traces), end to end: generator, stops, a fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import Stops, TripEnds, fit_lonlat, predict_lonlat
from experiments.person_level import one_unit_spans
from experiments.synthetic_traces import (
    HOME,
    JAM,
    box,
    generate,
    interval_tag,
    road_cells,
    to_km,
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


#: sampling intervals (s) of the small cities below: every 10 s, a minute, ten
#: minutes, and each unit its own between 10 s and ten minutes
RATES: list[float | tuple[float, float]] = [10.0, 60.0, 600.0, (10.0, 600.0)]


@pytest.fixture(scope="module")
def cities():
    return {rate: generate(units=150, days=2, interval=rate, seed=1) for rate in RATES}


@pytest.mark.parametrize(
    ("kind", "rate"),
    [("stops", r) for r in RATES] + [("pickups", r) for r in RATES if r != 600.0],
    ids=lambda v: v if isinstance(v, str) else f"{interval_tag(v)}s",
)
def test_stops_and_pickups_are_places_at_every_sampling_rate(cities, rate, kind):
    """The places pipeline (events per unit, person level, k cells per unit)
    on a small generated city sampled from every 10 s to every 10 min, each
    unit protected: the 5 cells where the most distinct units stop (pick up)
    lie in spans (at least 4 of 5 in each of two seeded releases; over six
    seeds 0.8-1.0 for stops at every rate and pick-ups up to a minute or
    mixed) and none of the 20 busiest road cells far from any place.
    Pick-ups at a fix every ten minutes are left out: a ride's first occupied
    fix then lies a median 1.5 km down the road from the boarding
    (docs/places-study.md section 3), so the busiest pick-up cells are scattered
    and the same settings find 0.2-0.6 of them."""
    from dpdbscan.research import Equirectangular, event_rows

    city = cities[rate]
    events = Stops(0.1, 300.0) if kind == "stops" else TripEnds("pickup")
    proj = Equirectangular.from_bounds(list(box()[:2]), list(box()[2:]))
    rows = event_rows(events, proj.forward(city.lonlat), city.unit, city.time, city.occupied)
    top = top_event_cells(city, rows, CELL_KM, n=5)
    roads = road_cells(city, CELL_KM, n=20)
    for seed in (0, 1):
        m = _fit(
            city,
            seed,
            min_samples=15,
            epsilon=4.0,
            max_cells_per_unit=30,
            times=city.time,
            status=city.occupied,
            events=events,
        )
        assert np.mean(np.asarray(predict_lonlat(m, top)) >= 0) >= 0.8
        assert np.mean(np.asarray(predict_lonlat(m, roads)) >= 0) <= 0.1
        labels = np.asarray(predict_lonlat(m, city.lonlat[rows]))
        assert one_unit_spans(labels, city.unit[rows], m.n_spans)[0] == 0


def test_per_unit_rates_and_times_as_text(cities):
    """Each unit its own interval (log-uniform over the range, from a stream
    of its own: a fixed interval leaves the traces as they were), and the
    times written as text without a zone (as T-Drive's files give them,
    "2026-03-02 08:15:00") release the same stops as unix seconds."""
    from experiments.synthetic_traces import unit_intervals

    city = cities[(10.0, 600.0)]
    assert city.interval.min() >= 10.0 and city.interval.max() <= 600.0
    assert np.array_equal(city.interval, unit_intervals(150, (10.0, 600.0), 1))
    same = city.unit[1:] == city.unit[:-1]
    gaps = np.diff(city.time)[same]
    per_unit = np.array([np.median(gaps[city.unit[1:][same] == u]) for u in range(150)])
    assert np.corrcoef(np.log(per_unit), np.log(city.interval))[0, 1] > 0.95
    assert np.array_equal(generate(units=20, days=1, interval=60.0, seed=1).interval, np.full(20, 60.0))
    text = np.datetime_as_string(city.time.astype("datetime64[s]")).astype(object)
    text = np.array([t.replace("T", " ") for t in text], dtype=object)
    common = dict(min_samples=15, epsilon=4.0, max_cells_per_unit=30, events=Stops("100m", "5min"))
    a = _fit(city, 0, times=city.time, **common)
    b = _fit(city, 0, times=text, **common)
    assert a.n_spans >= 1
    assert np.array_equal(a.histogram.values, b.histogram.values) and a.n_spans == b.n_spans


def test_heavy_gaps_keep_the_trajectories_and_switch_the_device_off_at_long_stays():
    """``gaps="heavy"`` (T-Drive's kind of trace) draws its gaps and steps
    from a stream of its own: the same stays and pick-ups as ``"light"``,
    fewer fixes, irregular steps, gaps of hours, and long stays with no fix
    inside but one at each end (a stop across a gap)."""
    light = generate(units=30, days=2, interval=60.0, seed=3)
    heavy = generate(units=30, days=2, interval=60.0, seed=3, gaps="heavy")
    again = generate(units=30, days=2, interval=60.0, seed=3, gaps="heavy")
    assert np.array_equal(heavy.time, again.time) and np.array_equal(heavy.lonlat, again.lonlat)
    assert np.array_equal(light.stays, heavy.stays) and np.array_equal(light.pickups, heavy.pickups)
    assert 0.3 * len(light.time) < len(heavy.time) < 0.9 * len(light.time)
    same_l, same_h = (c.unit[1:] == c.unit[:-1] for c in (light, heavy))
    steps_l, steps_h = np.diff(light.time)[same_l], np.diff(heavy.time)[same_h]
    assert np.mean(steps_h > 3600) > 3 * np.mean(steps_l > 3600)  # gaps of hours
    short_l, short_h = steps_l[steps_l < 300], steps_h[steps_h < 300]
    assert np.std(short_h) > 2 * np.std(short_l)  # irregular steps, not +-30%
    # a long stay at a place with the device off: a fix as it goes off and as it comes on, none
    # between (a stop across a gap), at about half the long stays
    s = heavy.stays[(heavy.stays[:, 1] >= 0) & (heavy.stays[:, 3] - heavy.stays[:, 2] >= 1800)]
    dark = 0
    for unit, _, t0, t1, *_ in s:
        t = heavy.time[heavy.unit == unit]
        ends = np.any(np.abs(t - (t0 + 60)) <= 1) and np.any(np.abs(t - (t1 - 60)) <= 1)
        dark += int(ends and not np.any((t > t0 + 62) & (t < t1 - 62)))
    assert 0.3 * len(s) <= dark <= 0.7 * len(s)
    rows = Stops(0.1, 300.0).rows(to_km(heavy.lonlat), heavy.unit, heavy.time.astype(float))
    light_rows = Stops(0.1, 300.0).rows(to_km(light.lonlat), light.unit, light.time.astype(float))
    assert 0.5 * len(light_rows) < len(rows) < len(light_rows)  # gaps lose short stays, not the dark ones
    with pytest.raises(ValueError, match="gaps"):
        generate(units=2, days=1, gaps="none")


def test_the_largest_one_unit_share_of_a_span():
    """traces_check's max_unit_share against a count by hand: span 0 holds
    events of units 7, 7, 7, 2 (share 0.75), span 1 of units 2 and 5 (0.5);
    outside spans (-1) nothing counts; no event in a span gives 0."""
    from experiments.traces_check import max_unit_share

    labels = np.array([0, 0, 0, 0, 1, 1, -1, -1, -1])
    units = np.array([7, 7, 7, 2, 2, 5, 5, 5, 5])
    assert max_unit_share(labels, units, 2) == 0.75
    assert max_unit_share(labels[4:], units[4:], 2) == 0.5
    assert max_unit_share(np.full(3, -1), np.arange(3), 0) == 0.0


@pytest.mark.parametrize(("roads", "hubs"), [("ring", "default"), ("grid", "none"), ("grid", "many")])
def test_other_city_layouts(roads, hubs):
    """``--roads ring`` (rings and radials, no street grid) and ``--hubs``
    (no airport; two airports and six stations): the place mix is as
    declared, the road graph connected, and the traces stay in the box."""
    city = generate(units=6, days=1, interval=60.0, seed=4, roads_layout=roads, hubs=hubs)
    kinds = list(city.places.kind)
    want = {"none": (0, 3), "many": (2, 6), "default": (1, 3)}[hubs]
    assert (kinds.count("airport"), kinds.count("station")) == want
    lo, hi = np.array(box()[:2]), np.array(box()[2:])
    assert np.all((city.lonlat >= lo) & (city.lonlat <= hi))
    street = np.count_nonzero(np.isclose(city.roads.nodes[:, 0], 0.8))  # a grid street: 161 nodes
    assert (street > 100) == (roads == "grid")
    if hubs == "many":  # the second airport across the city from the first
        a = city.places.centre[[i for i, k in enumerate(kinds) if k == "airport"]]
        assert np.hypot(*(a[0] - a[1])) == pytest.approx(25.6, abs=1e-6)
    with pytest.raises(ValueError):
        generate(units=1, days=1, roads_layout="spiral")


def test_red_lights_and_depots_are_off_by_default_and_do_what_they_say():
    from experiments.jam_cause import study
    from experiments.synthetic_traces import LIGHT_WAIT, _red_lights

    plain = generate(units=20, days=1, interval=10.0, seed=5)
    again = generate(units=20, days=1, interval=10.0, seed=5, lights=False, depots=0)
    assert np.array_equal(plain.lonlat, again.lonlat) and np.array_equal(plain.time, again.time)
    # a path along a grid street through three crossings (0.8 km apart) and its ends
    X = [0.0, 0.4, 0.8, 1.2, 1.6, 2.0, 2.4]
    T = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    side = np.random.default_rng(0)
    t2, x2, y2, end = _red_lights(side, T, X, [0.8] * 7, 70.0)
    waits = len(t2) - len(T)  # each red crossing's vertex repeated, the later times shifted by its wait
    assert waits >= 1 and end - 70.0 == t2[-1] - 60.0
    assert LIGHT_WAIT[0] * waits <= end - 70.0 <= LIGHT_WAIT[1] * waits
    assert sorted(set(x2)) == X and np.all(np.diff(t2) > 0)
    # lights make no stop of 5 min: every stop of a lit city is at a place, a home or a jam
    lit = generate(units=20, days=1, interval=10.0, seed=5, lights=True)
    assert study(lit, 10.0)["stops_moving"] <= 0.01
    dep = generate(units=20, days=2, interval=10.0, seed=5, depots=3)
    depots = [i for i, k in enumerate(dep.places.kind) if k == "depot"]
    assert len(depots) == 3 and np.all(dep.places.weight[depots] == 0)
    at = dep.stays[np.isin(dep.stays[:, 1], depots)]
    # every taxi begins and ends each of its two shifts at its depot
    assert np.all(np.bincount(at[:, 0].astype(int), minlength=20) == 4)
    r = np.hypot(*dep.places.centre[depots].T)
    assert np.all((r >= 5.0) & (r <= 12.0))
