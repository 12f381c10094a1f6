"""Trip ends: pick-ups and drop-offs in time order, per unit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpdbscan.traces import TripEnds, event_rows, parse_status
from dpdbscan.traces.tripends import trip_end_rows

pa = pytest.importorskip("pyarrow")


def test_pickups_and_dropoffs():
    # one cab, rows given newest first as in the Cabs source files
    status = np.array([0, 1, 1, 0, 0, 1, 1], dtype=float)[::-1]
    t = np.arange(7.0)[::-1]
    X = np.arange(14.0).reshape(7, 2)[::-1]
    c = np.zeros(7, dtype=np.int64)
    # in time order: 0 1 1 0 0 1 1 -> pick-ups at times 1 and 5, one drop-off at time 2
    assert sorted(t[trip_end_rows(X, c, t, status, "pickup")]) == [1.0, 5.0]
    assert sorted(t[trip_end_rows(X, c, t, status, "dropoff")]) == [2.0]
    assert sorted(t[trip_end_rows(X, c, t, status, "both")]) == [1.0, 2.0, 5.0]


def test_no_ride_across_units_and_bad_status_rows_dropped():
    X = np.zeros((5, 2))
    c = np.array([0, 1, 1, 1, 1], dtype=np.int64)
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    status = parse_status(np.array(["0", "1", "2", "0", "1"], dtype=object))
    # unit 1: 1, (2 dropped), 0, 1 -> one pick-up at time 4; unit 0's 0 never meets unit 1's 1
    assert trip_end_rows(X, c, t, status, "pickup").tolist() == [4]
    assert trip_end_rows(X, c, t, status, "dropoff").tolist() == [1]


def test_status_values():
    got = parse_status(np.array([0, 1, 2, -1, np.nan]))
    assert got[:2].tolist() == [0.0, 1.0] and np.isnan(got[2:]).all()
    assert parse_status(np.array([True, False])).tolist() == [1.0, 0.0]


def test_event_rows_needs_a_status():
    with pytest.raises(ValueError, match="status"):
        event_rows(TripEnds(), np.zeros((2, 2)), np.zeros(2, dtype=np.int64), np.arange(2.0))


def test_bad_ends():
    with pytest.raises(ValueError, match="pickup, dropoff, both"):
        TripEnds("start").resolved(geo=True)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_invariant_to_row_order_and_per_unit(seed):
    rng = np.random.default_rng(seed)
    n = 60
    X = rng.uniform(0, 1, (n, 2))
    c = rng.integers(0, 3, n)
    t = rng.integers(0, 40, n).astype(float)
    s = rng.integers(0, 2, n).astype(float)
    perm = rng.permutation(n)
    for ends in ("pickup", "dropoff", "both"):
        a = trip_end_rows(X, c, t, s, ends)
        b = trip_end_rows(X[perm], c[perm], t[perm], s[perm], ends)
        assert sorted(map(tuple, X[a].tolist())) == sorted(map(tuple, X[perm][b].tolist()))
        mine = c == 0
        alone = trip_end_rows(X[mine], c[mine], t[mine], s[mine], ends)
        assert sorted(map(tuple, X[a[mine[a]]].tolist())) == sorted(map(tuple, X[mine][alone].tolist()))


def test_status_as_text_true_false_any_case_and_trimmed():
    # pandas writes a boolean column to CSV as True/False: each value read alone
    got = parse_status(np.array(["True", "false", " TRUE\t", "0", "1", "yes", "", None], dtype=object))
    assert got[:5].tolist() == [1.0, 0.0, 1.0, 0.0, 1.0] and np.isnan(got[5:]).all()
    got = parse_status(pa.array([b"true", b"\xff", None]))
    assert got[0] == 1.0 and np.isnan(got[1:]).all()


@pytest.mark.parametrize(
    "values,codes,want",
    [
        (
            ["free", "hired", " hired ", "Hired", "unknown", None],
            ("free", "hired"),
            [0, 1, 1, None, None, None],
        ),
        ([1, 2, 3, None], ("1", "2"), [0, 1, None, None]),
        ([1.0, 2.0, 2.5, float("nan")], (1, 2), [0, 1, None, None]),
        ([True, False, None], ("false", "true"), [1, 0, None]),
    ],
)
def test_status_codes_read_each_value_alone(values, codes, want):
    for arr in (pa.array(values), np.array(values, dtype=object), pa.array(values).dictionary_encode()):
        if (
            isinstance(arr, pa.Array)
            and pa.types.is_dictionary(arr.type)
            and pa.types.is_floating(arr.type.value_type)
        ):
            continue
        got = parse_status(arr, codes)
        assert [None if np.isnan(v) else int(v) for v in got] == want


def test_status_codes_of_one_row_never_change_the_others():
    # adding one row of any value leaves every other row's status as it was
    base = ["free", "hired", "free", "1", "true"]
    ref = parse_status(np.array(base, dtype=object), ("free", "hired"))
    for extra in ["hired", "free", "1", 2, None, b"\xff", 3.5, True]:
        got = parse_status(np.array([*base, extra], dtype=object), ("free", "hired"))
        np.testing.assert_array_equal(got[:-1], ref)


def test_trip_ends_with_codes_record_them_and_refuse_bad_codes():
    te = TripEnds("pickup", ("free", "hired")).resolved(geo=False)
    assert te.record() == {"kind": "trip ends", "ends": "pickup", "status_values": ["free", "hired"]}
    X, c, t = np.zeros((4, 2)), np.zeros(4, dtype=np.int64), np.arange(4.0)
    rows = event_rows(te, X, c, t, np.array(["free", "hired", "hired", "free"], dtype=object))
    assert rows.tolist() == [1]
    for bad in (("free", "free"), ("free",), "fh", ("", "x")):
        with pytest.raises(ValueError, match="two"):
            TripEnds("pickup", bad).resolved(geo=False)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.sampled_from(["0", "1", " 1", "1.0", "true", "False", "2", "", "x", "0 "]),
            st.text(max_size=4),
        ),
        max_size=30,
    )
)
def test_the_text_fast_path_reads_each_value_as_the_full_rule_does(words):
    from dpdbscan.traces.tripends import _full_status

    for arr in (pa.array(words, pa.string()), pa.array([None if w is None else w.encode() for w in words])):
        np.testing.assert_array_equal(parse_status(arr), _full_status(arr))
        np.testing.assert_array_equal(parse_status(pa.chunked_array([arr])), _full_status(arr))


def test_trip_ends_of_a_grouped_file_allocate_little_beyond_the_order():
    """On a file that keeps each unit's rows together in time order (as
    trace files do) with every status readable, finding the trip ends copies
    neither the times nor the statuses as floats: fresh memory is what the
    command's system time pays for on large files (benchmarks.bench_places).
    Peak of about 3 eight-byte words a row (the order, the units in it and
    booleans), where copying the times and gathering the float statuses
    took about 4.1."""
    import tracemalloc

    n = 200_000
    rng = np.random.default_rng(0)
    c = np.repeat(np.arange(100), n // 100).astype(np.int64)
    t = np.tile(np.arange(n // 100, dtype=np.float64) * 60.0, 100)
    X = rng.random((n, 2))
    status = (rng.random(n) < 0.5).astype(np.float64)
    want = trip_end_rows(X, c, t, status, "pickup")
    tracemalloc.start()
    try:
        got = trip_end_rows(X, c, t, status, "pickup")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(got, want) and got.size > 0
    assert peak < 3.5 * 8 * n, peak / (8 * n)
    # a row without a status is still dropped (its time no longer counts)
    bad = status.copy()
    bad[want[0]] = np.nan
    assert want[0] not in trip_end_rows(X, c, t, bad, "pickup")


@pytest.mark.parametrize("codes", [None, ("free", "hired")])
def test_a_status_column_of_a_type_no_rule_reads_is_refused_as_a_status(codes):
    # the message named times, from the time rule the status reuses
    pa = pytest.importorskip("pyarrow")
    for values in (pa.array([1, 0], type=pa.duration("s")), np.array([1, 0], dtype="timedelta64[s]")):
        with pytest.raises(TypeError, match="^a status column holds numbers, booleans or text"):
            parse_status(values, codes)


@pytest.mark.parametrize("layout", ["grouped", "reversed", "mixed"])
@pytest.mark.parametrize("ends", ["pickup", "dropoff", "both"])
def test_a_file_in_trace_order_or_backwards_gives_the_shuffled_file_s_trip_ends(layout, ends):
    """A file that reads in trace order as it lies, or backwards (full Cabs,
    newest first), is read through views with no index of its rows: the
    same rows as the same file shuffled (read through its sorted rows)."""
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 40, 12)
    c = np.repeat(np.arange(12), sizes).astype(np.int32)
    t = np.concatenate([np.cumsum(rng.integers(1, 90, k)) for k in sizes]).astype(np.float64)
    X = rng.random((c.size, 2))
    status = (rng.random(c.size) < 0.5).astype(np.float64)
    if layout == "reversed":
        X, c, t, status = X[::-1], c[::-1], t[::-1], status[::-1]
    elif layout == "mixed":  # some units newest first
        p = np.concatenate([np.flatnonzero(c == u)[:: 1 if u % 2 else -1] for u in range(12)])
        X, c, t, status = X[p], c[p], t[p], status[p]
    got = trip_end_rows(X, c, t, status, ends)
    perm = rng.permutation(c.size)
    shuffled = np.sort(perm[trip_end_rows(X[perm], c[perm], t[perm], status[perm], ends)])
    want = []  # the definition, unit by unit in time order
    for u in range(12):
        mine = np.flatnonzero(c == u)
        mine = mine[np.argsort(t[mine])]
        for a, b in zip(mine[:-1], mine[1:]):
            if ends != "dropoff" and status[a] == 0 and status[b] == 1:
                want.append(b)
            if ends != "pickup" and status[a] == 1 and status[b] == 0:
                want.append(a)
    assert got.dtype == np.int64 and got.size > 10 and np.array_equal(got, np.sort(want))
    assert np.array_equal(shuffled, got)
