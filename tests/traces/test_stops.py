"""Stops: the compiled scanner against a plain loop over each unit's
trace (the definition read literally, in Python), row-order invariance,
one unit's stops from its own rows only, and the edges of the radius and
the duration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdbscan.traces import Stops, event_rows, parse_radius
from dpdbscan.traces.order import trace_order
from dpdbscan.traces.stops import stop_rows


def reference_stops(X, codes, times, radius, duration):
    """The definition read literally: per unit in time order, from each
    anchor the longest run within the radius; a stop if it lasts."""
    out = []
    ok = (codes >= 0) & np.isfinite(times) & np.isfinite(X).all(axis=1)
    rows = np.flatnonzero(ok)
    rows = rows[np.lexsort((X[rows, 1], X[rows, 0], times[rows], codes[rows]))]
    n, k = rows.size, 0
    while k < n:
        j = k + 1
        while (
            j < n and codes[rows[j]] == codes[rows[k]] and np.sum((X[rows[j]] - X[rows[k]]) ** 2) <= radius**2
        ):
            j += 1
        if times[rows[j - 1]] - times[rows[k]] >= duration:
            out.append(rows[k])
            k = j
        else:
            k += 1
    return np.sort(np.asarray(out, dtype=np.int64))


def traces(rng, n_units, n_points, dt, jitter=0.02, speed=0.01):
    """Per unit, alternating stays (GPS jitter about a place) and drives
    (``speed`` km/s in a random direction), each lasting 1 to 20 minutes,
    sampled every ``dt`` seconds (jittered by half)."""
    xs, cs, ts = [], [], []
    for u in range(n_units):
        pos, t = rng.uniform(0, 10, 2), rng.uniform(0, 1000)
        standing, until = bool(rng.integers(2)), t + rng.uniform(60, 1200)
        heading = rng.normal(size=2)
        for _ in range(n_points):
            t += dt * rng.uniform(0.5, 1.5)
            if t > until:
                standing, until = not standing, t + rng.uniform(60, 1200)
                heading = rng.normal(size=2)
            if standing:
                xs.append(pos + rng.normal(0, jitter, 2))
            else:
                pos = pos + heading / np.hypot(*heading) * speed * dt
                xs.append(pos.copy())
            cs.append(u)
            ts.append(t)
    return np.array(xs), np.array(cs, dtype=np.int64), np.array(ts)


@pytest.mark.parametrize("dt", [2.0, 30.0, 60.0, 600.0])
def test_matches_the_definition_from_seconds_to_ten_minutes(dt):
    rng = np.random.default_rng(int(dt))
    X, c, t = traces(rng, 7, 400, dt)
    got = stop_rows(X, c, t, 0.1, 300.0)
    assert np.array_equal(got, reference_stops(X, c, t, 0.1, 300.0))
    assert got.size > 0  # the walks do pause


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**31 - 1),
    st.integers(1, 4),
    st.integers(1, 60),
    st.floats(0.01, 1.0),
    st.floats(1.0, 500.0),
)
def test_random_traces_match_the_definition(seed, n_units, n_points, radius, duration):
    rng = np.random.default_rng(seed)
    X, c, t = traces(rng, n_units, n_points, 60.0)
    t = np.round(t) if seed % 2 else t  # integral times take the int64 key
    assert np.array_equal(stop_rows(X, c, t, radius, duration), reference_stops(X, c, t, radius, duration))


def _points(X, rows):
    return sorted(map(tuple, X[rows].tolist()))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_invariant_to_row_order(seed):
    rng = np.random.default_rng(seed)
    X, c, t = traces(rng, 3, 80, 60.0)
    t = np.round(t / 120) * 120  # many equal times in one unit: the tie-break by place
    perm = rng.permutation(len(X))
    a = stop_rows(X, c, t, 0.2, 300.0)
    b = stop_rows(X[perm], c[perm], t[perm], 0.2, 300.0)
    assert _points(X, a) == _points(X[perm], b)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_a_units_stops_depend_on_its_rows_only(seed):
    rng = np.random.default_rng(seed)
    X, c, t = traces(rng, 4, 60, 60.0)
    full = stop_rows(X, c, t, 0.2, 300.0)
    # change everything about the other units: unit 0's stops stay
    other = c != 0
    X2 = X.copy()
    X2[other] = rng.uniform(0, 10, (int(other.sum()), 2))
    t2 = t.copy()
    t2[other] = rng.uniform(0, 1e5, int(other.sum()))
    again = stop_rows(X2, c, t2, 0.2, 300.0)
    mine = c == 0
    assert _points(X, full[mine[full]]) == _points(X2, again[mine[again]])
    alone = stop_rows(X[mine], c[mine], t[mine], 0.2, 300.0)
    assert _points(X, full[mine[full]]) == _points(X[mine], alone)


def test_radius_edge_is_inclusive():
    X = np.array([[0.0, 0.0], [0.1, 0.0], [0.1, 0.0], [0.3, 0.0]])
    c = np.zeros(4, dtype=np.int64)
    t = np.array([0.0, 100.0, 400.0, 500.0])
    assert stop_rows(X, c, t, 0.1, 300.0).tolist() == [0]  # exactly at the radius stays in
    assert stop_rows(X, c, t, 0.0999, 300.0).tolist() == [1]  # just inside: the run from 1


def test_duration_edge_is_inclusive():
    X = np.zeros((3, 2))
    c = np.zeros(3, dtype=np.int64)
    t = np.array([0.0, 150.0, 300.0])
    assert stop_rows(X, c, t, 0.1, 300.0).tolist() == [0]
    assert stop_rows(X, c, t, 0.1, 300.001).tolist() == []


def test_a_stop_ends_where_the_unit_leaves_and_the_next_may_begin_there():
    # at A for 10 min, then B for 10 min: two stops, anchored at each arrival
    X = np.array([[0, 0]] * 3 + [[5, 0]] * 3, dtype=float)
    c = np.zeros(6, dtype=np.int64)
    t = np.arange(6) * 300.0
    assert stop_rows(X, c, t, 0.1, 300.0).tolist() == [0, 3]


def test_runs_never_cross_units_and_bad_rows_are_dropped():
    X = np.zeros((6, 2))
    c = np.array([0, 0, 1, 1, -1, 0], dtype=np.int64)
    t = np.array([0.0, 100.0, 200.0, 600.0, 50.0, np.nan])
    # unit 0 lasts 100 s only (its third row has no time); unit 1 lasts 400 s
    assert stop_rows(X, c, t, 0.1, 300.0).tolist() == [2]
    X[1] = np.nan  # unit 0 keeps one usable row
    assert stop_rows(X, c, t, 0.1, 300.0).tolist() == [2]


def test_no_rows():
    assert stop_rows(np.zeros((0, 2)), np.zeros(0, dtype=np.int64), np.zeros(0), 0.1, 300.0).size == 0


def test_event_rows_parse_times_and_lengths():
    X = np.array([[0.0, 0.0], [0.00005, 0.0], [3.0, 0.0]])
    c = np.zeros(3, dtype=np.int64)
    times = np.array(["2008-05-17T10:00:00Z", "2008-05-17 10:06:00", "not a time"], dtype=object)
    assert event_rows(Stops(0.1, "5min"), X, c, times).tolist() == [0]
    assert Stops("100m", "5min").resolved(geo=True) == Stops(0.1, 300.0)


@pytest.mark.parametrize(
    "text,geo,match",
    [
        ("100m", False, "only makes sense for lon/lat"),
        ("100", True, "with a unit"),
        ("-1", False, "must be a number"),
        (0, False, "positive"),
        ("10 parsecs", True, "must be a number or a length"),
    ],
)
def test_bad_radius(text, geo, match):
    with pytest.raises(ValueError, match=match):
        parse_radius(text, geo=geo)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["grouped", "reversed", "mixed", "shuffled", "tied"]))
def test_each_unit_s_trace_is_the_same_whatever_the_file_s_order(seed, layout):
    """Grouped files take the no-sort path; every layout gives each unit
    the same sequence of rows as a full sort."""
    rng = np.random.default_rng(seed)
    X, c, t = traces(rng, 4, 30, 60.0)
    if layout == "reversed":
        X, c, t = X[::-1], c[::-1], t[::-1]
    elif layout == "mixed":  # units in blocks, some newest first
        parts = [np.flatnonzero(c == u)[:: 1 if u % 2 else -1] for u in rng.permutation(4)]
        p = np.concatenate(parts)
        X, c, t = X[p], c[p], t[p]
    elif layout == "shuffled":
        p = rng.permutation(len(c))
        X, c, t = X[p], c[p], t[p]
    elif layout == "tied":
        t = np.round(t / 300) * 300
    rows = trace_order(X, c, t)
    full = np.lexsort((X[:, 1], X[:, 0], t, c))
    for u in range(4):
        mine = rows[c[rows] == u]
        assert np.array_equal(X[mine], X[full[c[full] == u]])
        assert np.all(np.flatnonzero(c[rows] == u) == np.arange(len(mine)) + np.flatnonzero(c[rows] == u)[0])


def _events(X, c, t, rows):
    return sorted(zip(c[rows].tolist(), t[rows].tolist(), map(tuple, X[rows].tolist())))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**31 - 1),
    st.integers(1, 6),
    st.integers(1, 40),
    st.sampled_from([1.0, 2.0, 0.5]),
    st.sampled_from([1.0, 3.0, 5.0]),
    st.booleans(),
)
def test_lattice_traces_match_the_definition(seed, n_units, n_points, radius, duration, shuffle):
    """Integer places and times: steps of exactly the radius and of exactly
    twice it, durations met exactly, ties in time, repeated rows and units
    of one point; the same stops as the definition (as points: repeated
    rows are interchangeable)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, n_points + 1, n_units)
    sizes[0] = 1  # a unit of one point
    c = np.repeat(np.arange(n_units), sizes)
    steps = rng.choice([0, 0, 1, 2, 4], size=(c.size, 2)) * rng.choice([-1, 1], size=(c.size, 2))
    X = np.cumsum(steps, axis=0) * 0.5
    t = np.cumsum(rng.integers(0, 3, c.size)).astype(np.float64)  # 0: a tie in time
    if shuffle:
        perm = rng.permutation(c.size)
        X, c, t = X[perm], c[perm], t[perm]
    got = stop_rows(X, c, t, radius, duration)
    want = reference_stops(X, c, t, radius, duration)
    assert got.size == want.size
    assert _events(X, c, t, got) == _events(X, c, t, want)


@pytest.mark.parametrize("layout", ["fortran", "strided", "int32 codes", "3-D"])
def test_any_array_layout_gives_the_definition_s_stops(layout):
    """The scanner reads the points through the trace order: a column-major
    or strided X, narrower codes and a third axis change nothing."""
    rng = np.random.default_rng(7)
    X, c, t = traces(rng, 5, 300, 5.0)
    perm = rng.permutation(len(c))  # not grouped: the sorted order
    X, c, t = X[perm], c[perm], t[perm]
    if layout == "3-D":
        X = np.column_stack([X, rng.normal(0, 0.01, len(c))])
    want = reference_stops(X, c, t, 0.1, 300.0)
    if layout == "fortran":
        X = np.asfortranarray(X)
    elif layout == "strided":
        X = np.repeat(X, 2, axis=1)[:, ::2]
    elif layout == "int32 codes":
        c = c.astype(np.int32)
    got = stop_rows(X, c, t, 0.1, 300.0)
    assert got.size > 0 and np.array_equal(got, want)


def test_a_long_stay_sampled_every_second_is_one_stop():
    # two hours at one place, a fix a second with GPS noise, then a drive away
    rng = np.random.default_rng(3)
    stay = rng.normal(0, 0.005, (7200, 2))
    drive = np.column_stack([np.arange(1, 301) * 0.02, np.zeros(300)])
    X = np.vstack([stay, drive])
    c = np.zeros(len(X), dtype=np.int64)
    t = np.arange(len(X), dtype=np.float64)
    assert stop_rows(X, c, t, 0.1, 300.0).tolist() == reference_stops(X, c, t, 0.1, 300.0).tolist() == [0]


def _kernel_anchors(X, c, t, radius, duration):
    """The compiled scan's anchors for the same trace order (rows)."""
    from dpdbscan.traces.stopscan import stop_anchors

    rows = trace_order(X, c, t)
    return rows, stop_anchors(np.ascontiguousarray(X), rows, c, t, float(radius) ** 2, float(duration))


@settings(max_examples=120, deadline=None)
@given(
    st.integers(0, 2**31 - 1),
    st.integers(1, 6),
    st.integers(1, 40),
    st.sampled_from([1.0, 2.0, 3.0]),
    st.sampled_from([2.0, 3.0, 5.0, 10.0]),
    st.booleans(),
)
def test_numpy_rounds_match_the_kernel_and_the_definition(
    seed, n_units, n_points, radius, duration, interleave
):
    """Integer lattice positions and integral times: distances exactly at the
    radius and runs lasting exactly the duration are common; units of one
    point, and units' rows interleaved in the file."""
    from dpdbscan.traces.stoprounds import stop_anchors_rounds

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, n_points + 1, n_units)
    c = np.repeat(np.arange(n_units), sizes).astype(np.int64)
    steps = rng.integers(-2, 3, (c.size, 2)) * (rng.random((c.size, 1)) < 0.4)
    X = np.cumsum(steps, axis=0).astype(np.float64)
    t = np.concatenate([np.cumsum(rng.integers(0, 4, s)) for s in sizes]).astype(np.float64)
    if interleave:
        order = rng.permutation(c.size)
        X, c, t = X[order], c[order], t[order]
    rows, want = _kernel_anchors(X, c, t, radius, duration)
    got = stop_anchors_rounds(X, rows, c, t, radius**2, duration)
    assert got is not None
    assert np.array_equal(got, want)
    assert np.array_equal(np.sort(rows[got]), reference_stops(X, c, t, radius, duration))


def test_runs_too_long_for_rounds_go_to_the_kernel(monkeypatch):
    """Past the rounds' limits the compiled scan gives the stops (the same)."""
    from dpdbscan.traces import stoprounds

    rng = np.random.default_rng(3)
    X, c, t = traces(rng, 4, 300, 2.0)
    rows, want = _kernel_anchors(X, c, t, 0.1, 300.0)
    assert stoprounds.stop_anchors_rounds(X, rows, c, t, 0.01, 300.0) is not None
    monkeypatch.setattr(stoprounds, "MAX_ROUNDS", 3)
    assert stoprounds.stop_anchors_rounds(X, rows, c, t, 0.01, 300.0) is None
    assert np.array_equal(stop_rows(X, c, t, 0.1, 300.0), np.sort(rows[want]))
    monkeypatch.setattr(stoprounds, "MAX_ROUNDS", 1000)
    monkeypatch.setattr(stoprounds, "MAX_WORK", 2 * X.shape[0] - 1)
    assert stoprounds.stop_anchors_rounds(X, rows, c, t, 0.01, 300.0) is None
    assert np.array_equal(stop_rows(X, c, t, 0.1, 300.0), np.sort(rows[want]))


@pytest.mark.parametrize("layout", ["grouped", "reversed", "mixed"])
@pytest.mark.parametrize("codes_type", [np.int64, np.int32])
def test_the_kernel_reads_a_file_in_its_own_order_as_through_the_rows(monkeypatch, layout, codes_type):
    """A file that reads in trace order as it lies, or backwards (full Cabs,
    newest first), is scanned by the compiled kernel with no array of its
    rows (``step`` 1 or -1): the same stops, with and without the straight-on
    rule, as the definition and as the kernel reading the rows of the same
    file shuffled."""
    from dpdbscan.traces import stoprounds
    from dpdbscan.traces.order import trace_steps

    rng = np.random.default_rng(11)
    X, c, t = traces(rng, 5, 400, 20.0)
    if layout == "reversed":
        X, c, t = X[::-1], c[::-1], t[::-1]
    elif layout == "mixed":  # some units newest first: an order of rows (step 0)
        p = np.concatenate([np.flatnonzero(c == u)[:: 1 if u % 2 else -1] for u in range(5)])
        X, c, t = X[p], c[p], t[p]
    c = c.astype(codes_type)
    step = trace_steps(X, c, t)
    if layout == "mixed":
        assert isinstance(step, np.ndarray) and step.size == c.size
    else:
        assert step == {"grouped": 1, "reversed": -1}[layout]
    want = reference_stops(X, c, t, 0.1, 300.0)
    perm = rng.permutation(c.size)
    via_rounds = [perm[stop_rows(X[perm], c[perm], t[perm], 0.1, 300.0, deg)] for deg in (0.0, 30.0)]
    monkeypatch.setattr(stoprounds, "MAX_WORK", 2 * c.size - 1)  # the kernel, at once
    got = stop_rows(X, c, t, 0.1, 300.0)
    assert want.size > 5 and np.array_equal(got, want)
    shuffled = perm[stop_rows(X[perm], c[perm], t[perm], 0.1, 300.0)]  # through the rows (step 0)
    assert np.array_equal(np.sort(shuffled), want) and np.array_equal(np.sort(via_rounds[0]), want)
    straight = stop_rows(X, c, t, 0.1, 300.0, 30.0)
    assert 0 < straight.size < want.size
    assert np.array_equal(straight, np.sort(perm[stop_rows(X[perm], c[perm], t[perm], 0.1, 300.0, 30.0)]))
    assert np.array_equal(straight, np.sort(via_rounds[1]))


def test_stops_of_a_file_in_trace_order_allocate_no_index_of_its_rows(monkeypatch):
    """On a file that reads in trace order backwards (full Cabs: newest
    first, 11M fixes) with int32 unit codes (a Parquet dictionary's), the
    compiled scan's stops allocate about 3.3 bytes a row here (6% of the
    rows are stops): which rows are usable (1) and the kernel's output,
    grown as stops are found (it took 8 bytes a row, one entry per row,
    before: 9.0 in all); no int64 copy of the codes, no array of the rows'
    indices (8 each) and no full-length booleans of the grouped check. The
    code before those took 25. Fresh memory is what a fit's system time pays for
    on large files (benchmarks.bench_places)."""
    import tracemalloc

    from dpdbscan.traces import stoprounds

    monkeypatch.setattr(stoprounds, "MAX_WORK", 1000)  # the kernel, without its 1M rows
    n = 400_000
    rng = np.random.default_rng(0)
    c = np.repeat(np.arange(100), n // 100).astype(np.int32)[::-1]
    t = np.tile(np.arange(n // 100, dtype=np.float64) * 60.0, 100)[::-1].copy()
    X = np.cumsum(rng.normal(0, 0.05, (n, 2)) * (rng.random((n, 1)) < 0.3), axis=0)
    want = stop_rows(X, c, t, 0.1, 300.0)  # numba loaded, the kernel compiled
    tracemalloc.start()
    try:
        got = stop_rows(X, c, t, 0.1, 300.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(got, want) and got.size > 100
    assert np.array_equal(got, reference_stops(X, c.astype(np.int64), t, 0.1, 300.0))
    assert peak < 4.5 * n, peak / n


@pytest.mark.parametrize("layout", ["grouped", "reversed", "shuffled"])
def test_the_kernel_grows_its_output_past_its_first_room(monkeypatch, layout):
    """More stops than the kernel first makes room for (it grows its output
    as it finds them, twice here): every one of them, as the definition and
    numpy's rounds give them, whether the file is read as it lies,
    backwards or through an order of its rows."""
    from dpdbscan.traces import stoprounds, stopscan

    places = 2 * stopscan.FIRST_ROOM + 500
    n_units = 10
    per = -(-places // n_units)
    c = np.repeat(np.arange(n_units), 2 * per)
    place = np.repeat(np.arange(n_units * per), 2)  # each place seen twice, 300 s apart: a stop
    X = np.column_stack([place * 1.0, np.zeros(place.size)])
    t = np.arange(place.size) * 300.0
    if layout == "reversed":
        X, c, t = X[::-1].copy(), c[::-1].copy(), t[::-1].copy()
    elif layout == "shuffled":
        p = np.random.default_rng(5).permutation(c.size)
        X, c, t = X[p], c[p], t[p]
    want = reference_stops(X, c, t, 0.1, 300.0)
    assert want.size == n_units * per > 2 * stopscan.FIRST_ROOM
    assert np.array_equal(stop_rows(X, c, t, 0.1, 300.0), want)  # numpy's rounds
    monkeypatch.setattr(stoprounds, "MAX_WORK", 2 * c.size - 1)  # the kernel
    assert np.array_equal(stop_rows(X, c, t, 0.1, 300.0), want)
