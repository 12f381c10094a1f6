"""Times and statuses given as Python objects are read one value at a time
(the red-team review of every door: before, an object array or list went
through Arrow's type inference over the whole column, so one added row of
another type changed how every other row was read: one time-zone-aware
datetime turned unix seconds into microseconds, one date truncated every
datetime to its day, one huge integer or one timedelta refused the whole
fit; and the stops, trip ends and periods of every unit changed with it).

D is a column of one type; D' adds one value of another type at the top.
Every other row must read the same in D and D', and nothing may raise.
"""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pandas as pd
import pytest

from dpdbscan.traces import parse_times
from dpdbscan.traces.tripends import parse_status

UTC = dt.UTC
BASES = {
    "naive datetimes": [dt.datetime(2020, 1, 1, 12, 0, i, 250_000) for i in range(6)],
    "aware datetimes": [
        dt.datetime(2020, 1, 1, 12, 0, i, tzinfo=dt.timezone(dt.timedelta(hours=-3))) for i in range(6)
    ],
    "unix seconds": [1_577_880_000 + i for i in range(6)],
    "float seconds": [1_577_880_000.5 + i for i in range(6)],
    "iso text": [f"2020-01-01T12:00:0{i}" for i in range(6)],
    "dates": [dt.date(2020, 1, i + 1) for i in range(6)],
    "timestamps": [pd.Timestamp("2020-01-01 12:00:00.000000123") + pd.Timedelta(seconds=i) for i in range(6)],
    "datetime64": [np.datetime64("2020-01-01T12:00:00") + i for i in range(6)],
}
ODD = [
    dt.datetime(2020, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5))),
    dt.datetime(2020, 1, 1, tzinfo=UTC),
    pd.Timestamp("2020-01-01", tz="US/Eastern"),
    dt.datetime(2020, 1, 1),
    dt.date(2020, 1, 1),
    np.datetime64("2020-01-01", "D"),
    np.datetime64("NaT"),
    pd.NaT,
    pd.NA,
    None,
    float("nan"),
    2**70,
    1.5,
    7,
    True,
    "x",
    b"2020-01-01",
    b"\xff",
    decimal.Decimal("1.5"),
    dt.timedelta(seconds=3),
    pd.Timedelta(seconds=5),
    np.timedelta64(5, "s"),
    dt.time(12, 0),
    1 + 2j,
    (1, 2),
    "\udcff",  # a lone surrogate (JSON's escape): no UTF-8, it failed the whole column (round 8)
    # instants outside datetime's years in UTC: an OverflowError failed the whole column
    dt.datetime(9999, 12, 31, 23, 59, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
    dt.datetime(1, 1, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=5))),
]


def _forms(values):
    """The ways an estimator user may hand over a column of Python objects."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    yield "list", list(values)
    yield "object array", arr
    yield "object Series", pd.Series(arr, dtype=object)


@pytest.mark.parametrize("base", list(BASES), ids=list(BASES))
def test_one_added_time_never_changes_how_the_others_are_read(base):
    values = BASES[base]
    for form, column in _forms(values):
        ref = parse_times(column)
        assert np.isfinite(ref).all(), (base, form)
        for odd in ODD:
            for _, neighbour in _forms([odd, *values]):
                got = parse_times(neighbour)
                assert got.shape == (len(values) + 1,)
                assert np.array_equal(got[1:], ref), (base, form, repr(odd))


def test_objects_read_as_their_typed_columns_do():
    """Each value of an object column reads as a typed column of its kind."""
    for base, values in BASES.items():
        if base in ("unix seconds", "float seconds", "iso text"):
            typed = np.asarray(values)
        elif base == "aware datetimes":
            typed = pd.Series(values).dt.tz_convert("UTC")
        elif base == "dates":
            typed = np.asarray(values, dtype="datetime64[D]")
        else:
            typed = pd.Series(values).to_numpy(dtype="datetime64[ns]")
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        assert np.array_equal(parse_times(arr), parse_times(typed)), base


def test_odd_values_are_no_time_each_on_its_own():
    got = parse_times(np.array(ODD, dtype=object))
    assert got.shape == (len(ODD),)
    # the times among them, at the time they name; everything else no time
    assert got[0] == dt.datetime(2019, 12, 31, 19, tzinfo=UTC).timestamp()
    assert got[1] == got[3] == got[4] == got[5] == got[16] == 1_577_836_800.0
    assert got[2] == 1_577_854_800.0
    assert got[11] == 2.0**70 and got[12] == 1.5 and got[13] == 7.0 and got[18] == 1.5
    assert np.isnan(got[[6, 7, 8, 9, 10, 14, 15, 17, 19, 20, 21, 22, 23, 24, 25, 26, 27]]).all()


@pytest.mark.parametrize("unit", ["ms", "us"])
def test_a_time_unit_scales_each_number_alone(unit):
    per = {"ms": 1e3, "us": 1e6}[unit]
    values = [1_577_880_000_000 + i for i in range(6)]
    ref = parse_times(np.array(values, dtype=object), unit)
    assert np.array_equal(ref, np.array(values) / per)
    for odd in ODD:
        got = parse_times(np.array([odd, *values], dtype=object), unit)
        assert np.array_equal(got[1:], ref), repr(odd)


STATUSES = {
    "ints": [0, 1, 1, 0, 1, 0],
    "bools": [False, True, True, False, True, False],
    "text": ["0", "1", "1", "0", "true", "FALSE"],
}


@pytest.mark.parametrize("base", list(STATUSES))
def test_one_added_status_never_changes_how_the_others_are_read(base):
    values = STATUSES[base]
    expected = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0])
    for form, column in _forms(values):
        assert np.array_equal(parse_status(column), expected), (base, form)
        for odd in ODD:
            for _, neighbour in _forms([odd, *values]):
                assert np.array_equal(parse_status(neighbour)[1:], expected), (base, form, repr(odd))


def test_numpy_bytes_in_milliseconds_are_scaled_as_text_is():
    # before: a bytes array's numbers were read as their repr ("b'...'") when
    # scaling, so a --time-unit other than s was ignored for them
    text = np.array(["1700000000000", "2023-11-14T22:13:20Z", "x"])
    assert np.array_equal(parse_times(text.astype("S"), "ms"), parse_times(text, "ms"), equal_nan=True)
    assert parse_times(text, "ms")[0] == 1_700_000_000.0
