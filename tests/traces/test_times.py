"""Times and durations: each value read alone, bad ones NaN, never an error."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dpdbscan.traces import parse_duration, parse_times

T0 = 1211018400.0  # 2008-05-17T10:00:00Z


@pytest.mark.parametrize(
    "text,expected",
    [
        ("1211018400", T0),
        (" 1211018400.5\t", T0 + 0.5),
        ("2008-05-17T10:00:00", T0),
        ("2008-05-17 10:00:00.25", T0 + 0.25),
        ("2008-05-17T10:00", T0),
        ("2008-05-17", T0 - 10 * 3600),
        ("2008-05-17T10:00:00Z", T0),
        ("2008-05-17T12:00:00+02:00", T0),
        ("2008-05-17T05:00:00-0500", T0),
        ("2008-05-17 12:00:00+02", T0),  # PostgreSQL's text of a timestamptz
        ("2008-05-17T03:00:00-07", T0),
        ("2008-05-17T12:00:00+2", np.nan),
        ("2008-05-17T12:00:00+02:0", np.nan),
        ("2008-02-30T10:00:00", np.nan),  # no such day
        ("2008-05-17T25:00:00", np.nan),
        ("17/05/2008 10:00", np.nan),
        ("nan", np.nan),
        ("inf", np.nan),
        ("", np.nan),
        (None, np.nan),
        ("yesterday", np.nan),
    ],
)
def test_text(text, expected):
    got = parse_times(np.array([text, "1211018400"], dtype=object))
    assert got[1] == T0  # a bad neighbour never changes another value
    if np.isnan(expected):
        assert np.isnan(got[0])
    else:
        assert got[0] == pytest.approx(expected, abs=1e-6)


def test_one_bad_value_among_many_costs_only_itself():
    values = ["2008-05-17T10:00:00"] * 1000
    values[517] = "2008-13-01T00:00:00"
    got = parse_times(pa.array(values))
    assert np.isnan(got[517]) and np.count_nonzero(np.isnan(got)) == 1


@pytest.mark.parametrize(
    "values",
    [
        pa.array([T0, None], type=pa.float64()),
        pa.array([int(T0), None], type=pa.int64()),
        pa.chunked_array([pa.array([int(T0)], pa.uint32()), pa.array([None], pa.uint32())]),
        pa.array([int(T0) * 1000, None], type=pa.timestamp("ms")),
        pa.array([int(T0) * 10**9, None], type=pa.timestamp("ns", tz="UTC")),
        pa.chunked_array([pa.array([str(int(T0)), None]).cast(pa.binary())]),
        pa.array(["2008-05-17T10:00:00", None]).dictionary_encode(),
        np.array(["2008-05-17T10:00:00", "NaT"], dtype="datetime64[s]"),
        np.array([T0, np.inf]),
        np.array(["1211018400", "x"]),
    ],
)
def test_types(values):
    got = parse_times(values)
    assert got[0] == T0 and np.isnan(got[1])


def test_an_integer_beyond_float_precision_is_one_value_not_a_failure():
    # Arrow's cast refuses a whole int64 column over one value past 2^53
    got = parse_times(pa.array([int(T0), 2**60 + 1, None], type=pa.int64()))
    assert got[0] == T0 and got[1] == float(2**60) and np.isnan(got[2])


def test_a_date64_of_a_part_of_a_day_is_one_value_not_a_failure():
    # date64 counts milliseconds and Arrow does not check that they are whole
    # days: a cast of the column to seconds refused it over one such value,
    # so one row decided whether any time was read
    day = int(T0) // 86400 * 86400
    got = parse_times(pa.array([day * 1000, day * 1000 + 1, None], type=pa.date64()))
    assert got[0] == day and got[1] == day + 0.001 and np.isnan(got[2])
    got = parse_times(pa.array([day // 86400, 2**31 - 1, None], type=pa.date32()))
    assert got[0] == day and got[1] == (2**31 - 1) * 86400.0 and np.isnan(got[2])


@pytest.mark.parametrize("unit", ["D", "h", "m", "s", "ms", "us", "W", "M", "Y", "10s"])
def test_numpy_times_beyond_the_nanosecond_range_keep_their_instants(unit):
    # a cast to datetime64[ns] wrapped dates before 1678 or after 2261 round
    # to other times, silently
    dates = np.array(["1500-01-01", "2008-05-17", "9999-01-01", "NaT"], dtype="datetime64[D]")
    got = parse_times(dates.astype(f"datetime64[{unit}]"))
    want = dates.astype(f"datetime64[{unit}]").astype("datetime64[D]") - np.datetime64("1970-01-01", "D")
    assert np.array_equal(got[:3], want[:3].astype(np.int64) * 86400.0) and np.isnan(got[3])


def test_pandas_time_zones():
    pd = pytest.importorskip("pandas")
    s = pd.Series(pd.to_datetime(["2008-05-17 12:00"]).tz_localize("Europe/Berlin"))
    assert parse_times(s)[0] == T0


@pytest.mark.parametrize(
    "text,seconds",
    [
        ("5min", 300),
        ("300s", 300),
        ("1.5h", 5400),
        ("1d", 86400),
        (90, 90),
        # the spellings a newcomer writes: --stops 100m 5mins, "10 minutes", 2hrs
        ("5mins", 300),
        ("5 minutes", 300),
        ("1 minute", 60),
        ("30secs", 30),
        ("2hrs", 7200),
        ("1 hour", 3600),
        ("2days", 172800),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0s", "-5min", "fast", "5 parsecs", True])
def test_bad_durations(text):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_minutes_written_m_are_refused_with_the_reason():
    """ "5m" is 5 metres wherever a length is read (--eps 50m), so a duration
    of "5m" is refused, and the message says how minutes are written."""
    with pytest.raises(ValueError, match=r"got '5m': m is metres, minutes are min"):
        parse_duration("5m")


def test_numbers_in_other_units_and_text_and_timestamps_as_they_are():
    pa = pytest.importorskip("pyarrow")
    ms = T0 * 1000
    for unit, per in (("ms", 1e3), ("us", 1e6), ("ns", 1e9)):
        n = int(T0 * per)
        got = parse_times(np.array([str(n), "2008-05-17T10:00:00Z", "x", None], dtype=object), unit)
        np.testing.assert_array_equal(got[:2], [T0, T0])
        assert np.isnan(got[2:]).all()
        np.testing.assert_array_equal(parse_times(np.array([n, n + per]), unit), [T0, T0 + 1])
        np.testing.assert_array_equal(parse_times(pa.chunked_array([[n, None]]), unit)[:1], [T0])
    stamps = pa.array([ms], pa.int64()).cast(pa.timestamp("ms"))
    typed = np.array([ms], np.int64).astype("datetime64[ms]")
    assert parse_times(stamps, "ms")[0] == T0 == parse_times(typed, "ms")[0]
    assert parse_times(pa.array([str(ms).encode()]), "ms")[0] == T0
    with pytest.raises(ValueError, match="time unit"):
        parse_times([1], "min")


def test_a_time_column_mostly_unreadable_says_what_to_check():
    """ISO text with a zone name ("2008-06-10 00:41:55 PDT") is not read: when
    most rows have no readable time the private note says to check the
    column and how a zone is written; a few bad rows are only counted. The
    note quotes no value."""
    from dpdbscan.traces import Stops, unreadable_note

    text = np.array(["2008-06-10 00:41:55 PDT"] * 9 + ["2008-06-10T07:41:55Z"], dtype=object)
    note = unreadable_note(Stops("100m", "5min"), parse_times(text), None)
    assert note.startswith("9 of 10 row(s) have no readable time")
    assert "check that --time names the time column" in note and "not by name (PDT" in note
    assert "00:41:55" not in note
    most = unreadable_note(Stops("100m", "5min"), parse_times(text[::-1][:3]), None)
    assert most.startswith("2 of 3 row(s)") and "check that --time" in most
    one = unreadable_note(Stops("100m", "5min"), parse_times(np.array([text[0]] + [text[-1]] * 3)), None)
    assert one.startswith("1 of 4 row(s)") and "check that" not in one


@pytest.mark.parametrize("unit", ["s", "ms"])
def test_nullable_integers_read_as_arrow_integers(unit):
    """A pandas ``Int64`` column (how the Dask backend reads a Parquet
    file's integer column, so that a null keeps the others exact) reads
    value for value as the Arrow integer column the in-memory reader gives;
    with ``--time-unit ms`` it was refused (numpy cannot type ``Int64``)."""
    import pandas as pd

    values = [1_709_510_400, None, 2**60 + 1, -5]
    got = parse_times(pd.Series(pd.array(values, dtype="Int64")), unit)
    want = parse_times(pa.array(values, type=pa.int64()), unit)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isnan(got[1]) and got[0] == 1_709_510_400 / (1 if unit == "s" else 1000)
