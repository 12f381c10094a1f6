"""Stops left straight on (a pause on the way, a jam) are dropped: the
vectorised walk against the definition read literally, and the rule's
cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_stops import reference_stops, traces

from dpdbscan.traces import STRAIGHT_ON, Stops, event_rows
from dpdbscan.traces.stops import CONTEXT_RADII, stop_rows


def reference_straight_on(X, codes, times, radius, duration, degrees):
    """The stops of ``reference_stops`` minus those whose unit's last fix
    before the run and first after it, each farther than CONTEXT_RADII
    radii from the anchor, turn by less than ``degrees`` through it."""
    anchors = reference_stops(X, codes, times, radius, duration)
    ok = (codes >= 0) & np.isfinite(times) & np.isfinite(X).all(axis=1)
    rows = np.flatnonzero(ok)
    rows = rows[np.lexsort((X[rows, 1], X[rows, 0], times[rows], codes[rows]))]
    at = {int(r): i for i, r in enumerate(rows)}
    far = CONTEXT_RADII * radius
    keep = []
    for a in anchors:
        i = at[int(a)]
        u, p = codes[a], X[a]

        def dist(j, p=p):
            return math.dist(X[rows[j]], p)

        j = i
        while j + 1 < rows.size and codes[rows[j + 1]] == u and dist(j + 1) <= radius:
            j += 1
        while j + 1 < rows.size and codes[rows[j + 1]] == u and dist(j + 1) <= far:
            j += 1
        b = i
        while b - 1 >= 0 and codes[rows[b - 1]] == u and dist(b - 1) <= far:
            b -= 1
        if j + 1 >= rows.size or codes[rows[j + 1]] != u or b - 1 < 0 or codes[rows[b - 1]] != u:
            keep.append(a)
            continue
        come, go = p - X[rows[b - 1]], X[rows[j + 1]] - p
        cos = float(np.dot(come, go)) / (math.hypot(*come) * math.hypot(*go))
        if not cos > math.cos(math.radians(degrees)):
            keep.append(a)
    return np.asarray(keep, dtype=np.int64)


@pytest.mark.parametrize("dt", [2.0, 60.0, 600.0])
@pytest.mark.parametrize("degrees", [30.0, 45.0, 90.0])
def test_matches_the_definition(dt, degrees):
    rng = np.random.default_rng(int(dt) + int(degrees))
    X, c, t = traces(rng, 7, 400, dt)
    got = stop_rows(X, c, t, 0.1, 300.0, degrees)
    want = reference_straight_on(X, c, t, 0.1, 300.0, degrees)
    assert np.array_equal(got, want)


def test_random_walks_lose_some_stops_not_all():
    # headings drawn afresh after each stay: about a quarter of the stays left within 45 degrees
    X, c, t = traces(np.random.default_rng(3), 30, 400, 60.0)
    every, kept = stop_rows(X, c, t, 0.1, 300.0).size, stop_rows(X, c, t, 0.1, 300.0, 45.0).size
    assert 0.5 * every < kept < every


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.floats(1.0, 400.0), st.floats(1.0, 179.0))
def test_any_traces(seed, units, dt, degrees):
    rng = np.random.default_rng(seed)
    X, c, t = traces(rng, units, 120, dt)
    got = stop_rows(X, c, t, 0.1, 300.0, degrees)
    assert np.array_equal(got, reference_straight_on(X, c, t, 0.1, 300.0, degrees))


def line(points, t0=0.0, dt=30.0):
    P = np.asarray(points, dtype=float)
    return P, np.zeros(len(P), np.int64), t0 + dt * np.arange(len(P))


def drive(a, b, n):
    return [tuple(np.asarray(a) + (np.asarray(b) - np.asarray(a)) * s) for s in np.linspace(0, 1, n)]


def test_a_jam_passed_straight_through_is_dropped_a_visit_is_kept():
    # 1 km east at 30 s a fix, 10 min still at (1, 0), then on east (a jam) or back west (a visit)
    come = drive((0, 0), (1, 0), 6)[:-1]
    still = [(1.0, 0.0)] * 21
    for after, kept in ((drive((1, 0), (2, 0), 6)[1:], False), (drive((1, 0), (0, 0), 6)[1:], True)):
        X, c, t = line(come + still + after)
        assert stop_rows(X, c, t, 0.1, 300.0).size == 1  # a stop by the run's definition
        got = event_rows(Stops(0.1, 300.0, 30), X, c, t)
        assert (got.size == 1) is kept
        # a right-angle turn is kept at the studied angle (30), dropped from 90 up
        X2, c2, t2 = line(come + still + drive((1, 0), (1, 1), 6)[1:])
        assert event_rows(Stops(0.1, 300.0, 30), X2, c2, t2).size == 1
        assert event_rows(Stops(0.1, 300.0, 91), X2, c2, t2).size == 0
        # 0 (the default) keeps every run
        assert event_rows(Stops(0.1, 300.0, 0), X, c, t).size == 1
        assert event_rows(Stops(0.1, 300.0), X, c, t).size == 1


def test_a_stop_at_a_trace_end_is_kept():
    X, c, t = line(drive((0, 0), (1, 0), 6)[:-1] + [(1.0, 0.0)] * 21)
    assert event_rows(Stops(0.1, 300.0, 30), X, c, t).size == 1


def test_the_default_and_the_record():
    # an option, off by default: the default's record is the one before the option
    assert STRAIGHT_ON == 0.0
    assert Stops("100m", "5min").resolved(geo=True).record() == {
        "kind": "stops",
        "radius": 0.1,
        "duration_s": 300.0,
    }
    assert Stops("100m", "5min", 30).resolved(geo=True).record()["straight_on_deg"] == 30.0
    for bad in (-1, 181, "x", True, float("nan")):
        with pytest.raises(ValueError, match="straight-on"):
            Stops(0.1, 300.0, bad).resolved(geo=False)


def test_one_unit_context_only():
    # another unit's fixes interleaved in time never serve as this unit's coming or going
    come = drive((0, 0), (1, 0), 6)[:-1]
    X, c, t = line(come + [(1.0, 0.0)] * 21)
    X2 = np.vstack([X, [[2.0, 0.0], [3.0, 0.0]]])
    c2 = np.r_[c, 1, 1]
    t2 = np.r_[t, t[-1] + 30, t[-1] + 60]
    assert event_rows(Stops(0.1, 300.0, 30), X2, c2, t2).size == 1


@pytest.mark.parametrize("dt", [2.0, 60.0, 600.0])
def test_the_compiled_walk_gives_the_same_flags(dt):
    from dpdbscan.traces.order import trace_order
    from dpdbscan.traces.stops import straight_on_runs
    from dpdbscan.traces.stopscan import stop_anchors, straight_on_flags

    X, c, t = traces(np.random.default_rng(7 + int(dt)), 12, 4000 if dt < 60 else 400, dt)
    rows = trace_order(X, c, t)
    anchors = stop_anchors(np.ascontiguousarray(X), rows, c, t, 0.01, 300.0)
    for deg in (30.0, 45.0, 120.0):
        want = straight_on_runs(X, rows, c, anchors, 0.1, deg)
        far2 = (CONTEXT_RADII * 0.1) ** 2
        got = straight_on_flags(X, rows, c, anchors, 0.01, far2, float(np.cos(np.radians(deg))))
        assert np.array_equal(got, want)
        assert want.any() or deg < 100  # not vacuous: some runs left within 120 degrees


def _on_the_far_edge(A: np.ndarray) -> np.ndarray:
    """A 3-D fix about three radii (1.0) ahead of ``A`` whose squared
    distance, summed over the axes in order, is at most 9 while numpy's
    ``einsum`` of the same differences rounds it above 9 (or the other way)."""
    rng = np.random.default_rng(0)
    for _ in range(200_000):
        v = np.array([3.0, 0.0, 0.0]) + rng.normal(0, 0.3, 3)
        v *= 3.0 / np.linalg.norm(v)
        v *= 1 + int(rng.integers(-3, 4)) * 1e-16
        d = (A + v - A)[None, :]
        in_order = d[0, 0] * d[0, 0] + d[0, 1] * d[0, 1] + d[0, 2] * d[0, 2]
        if (np.einsum("ij,ij->i", d, d)[0] <= 9.0) != (in_order <= 9.0):
            return A + v
    raise AssertionError("no fix on the edge found")  # pragma: no cover


def test_another_units_long_stay_never_changes_a_units_straight_on_test():
    """Which scan runs (numpy's rounds or the compiled one) depends on the
    whole data: a unit parked for 1,100 fixes sends every unit to the
    compiled walk. In 3-D numpy's walk summed the squared distances and
    the angle's products by ``einsum``, whose rounding differs from the
    compiled walk's sum in order: a fix that lay on the edge of the three
    radii was inside for one and outside for the other, and this unit's
    stop at A was kept without the parked unit and dropped with it. Both
    walks now sum the axes in order."""
    A = np.array([0.1, 0.2, 0.3])
    P = _on_the_far_edge(A)
    Q, C = A - [5.0, 0.0, 0.0], A + [5.0, 0.0, 0.0]
    X = np.array([Q, P] + [A] * 11 + [C])
    t = np.array([0.0, 60.0] + [120.0 + 60 * i for i in range(11)] + [840.0])
    alone = stop_rows(X, np.zeros(len(X), dtype=np.int64), t, 1.0, 300.0, straight_on=30.0)
    parked = np.full((1100, 3), 50.0)
    with_other = stop_rows(
        np.vstack([X, parked]),
        np.r_[np.zeros(len(X), dtype=np.int64), np.ones(1100, dtype=np.int64)],
        np.r_[t, np.arange(1100.0)],
        1.0,
        300.0,
        straight_on=30.0,
    )
    assert alone.tolist() == [r for r in with_other.tolist() if r < len(X)]
    # P is within three radii summed in order: B is Q, and A -> C goes straight on
    assert alone.size == 0
