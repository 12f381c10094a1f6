"""--time-format: a time column's text in a layout the user declares (day first, slashes, a
12-hour clock), read by Python's strptime value by value (issue 28, "a format a user would
expect to work"; the newcomer's pass on traces from a city that writes 02/03/2026 05:39:04)."""

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from dpdbscan.traces import parse_times
from dpdbscan.traces.times import check_time_format, parse_formatted

FORMATS = [
    "%d/%m/%Y %H:%M:%S",
    "%m/%d/%Y %I:%M:%S %p",
    "%Y%m%d%H%M%S",
    "%d.%m.%Y %H:%M",
    "%Y-%m-%d %H:%M:%S %z",
]


def reference(value, fmt):
    """datetime.strptime of one value, as --time-format documents it (UTC unless %z)."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return np.nan
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = str(int(value))
    if not isinstance(value, str):
        return np.nan
    try:
        when = dt.datetime.strptime(value.strip(" \t"), fmt)
    except ValueError:
        return np.nan
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def random_texts(rng, fmt, n=400):
    """Times written in ``fmt``, some damaged: impossible dates, cut, padded, not UTF-8."""
    out = []
    for _ in range(n):
        when = dt.datetime(2000, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-3))) + dt.timedelta(
            seconds=int(rng.integers(0, 40 * 365 * 86400))
        )
        text = when.strftime(fmt)
        kind = rng.integers(0, 9)
        if kind == 0:
            text = text.replace(when.strftime("%d"), "31", 1)  # often an impossible date
        elif kind == 1:
            text = text[: int(rng.integers(0, len(text)))]
        elif kind == 2:
            text = " \t" + text + " "
        elif kind == 3:
            out.append(text.encode() + b"\xff")
            continue
        elif kind == 4:
            out.append(None)
            continue
        out.append(text)
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_value_reads_as_strptime_reads_it(fmt):
    rng = np.random.default_rng(len(fmt))
    values = random_texts(rng, fmt)
    want = np.array([reference(v, fmt) for v in values])
    assert np.isfinite(want).sum() > 150 and np.isnan(want).sum() > 50  # both kinds are tested
    as_objects = np.array(values, dtype=object)
    np.testing.assert_array_equal(parse_times(as_objects, time_format=fmt), want)
    # as the readers give them: Arrow bytes (a CSV's raw fields), text, a dictionary, chunks
    raw = pa.array([v.encode() if isinstance(v, str) else v for v in values], type=pa.binary())
    np.testing.assert_array_equal(parse_formatted(raw, fmt), want)
    texts = [v for v in values if not isinstance(v, bytes)]
    want_texts = np.array([reference(v, fmt) for v in texts])
    arrow = pa.array(texts, type=pa.string())
    np.testing.assert_array_equal(parse_formatted(arrow, fmt), want_texts)
    np.testing.assert_array_equal(parse_formatted(arrow.dictionary_encode(), fmt), want_texts)
    chunked = pa.chunked_array([arrow[:100], arrow[100:]])
    np.testing.assert_array_equal(parse_formatted(chunked, fmt), want_texts)


def test_day_first_is_read_as_declared_and_an_impossible_date_is_no_time():
    got = parse_times(
        ["02/03/2026 05:39:04", "31/02/2026 05:39:04", "13/13/2026 00:00:00"], time_format="%d/%m/%Y %H:%M:%S"
    )
    assert got[0] == dt.datetime(2026, 3, 2, 5, 39, 4, tzinfo=dt.UTC).timestamp()
    assert np.isnan(got[1:]).all()  # Arrow's strptime would roll 31/02 over to 3 March


def test_an_offset_is_converted_to_utc_and_integers_read_as_their_digits():
    got = parse_times(
        ["2026-03-02 05:39:04 -0300", "2026-03-02 05:39:04 -03:00"], time_format="%Y-%m-%d %H:%M:%S %z"
    )
    assert (got == dt.datetime(2026, 3, 2, 8, 39, 4, tzinfo=dt.UTC).timestamp()).all()
    digits = parse_times(pa.array([20260302053904, None], pa.int64()), time_format="%Y%m%d%H%M%S")
    assert digits[0] == dt.datetime(2026, 3, 2, 5, 39, 4, tzinfo=dt.UTC).timestamp() and np.isnan(digits[1])
    # floats and booleans have no text of a layout: no time
    assert np.isnan(parse_times(np.array([1.5, True], dtype=object), time_format="%Y")).all()


def test_typed_timestamps_say_their_own_instants():
    ts = pa.array([1_772_429_944_000], pa.timestamp("ms", tz="America/Santiago"))
    assert parse_times(ts, time_format="%d/%m/%Y")[0] == 1_772_429_944.0


@pytest.mark.parametrize(
    "fmt, said",
    [
        ("", "needs a layout"),
        ("day", "no date or time code"),
        ("%d/%m/%Y %Q", "cannot be read by Python's strptime"),
        ("%d/%m/%Y %H:%M %Z", "%Z (a zone by name"),
        ("%c", "may not use %c"),
    ],
)
def test_a_format_that_reads_no_time_is_refused(fmt, said):
    with pytest.raises(ValueError, match="time-format|layout") as got:
        check_time_format(fmt)
    assert said in str(got.value)


def test_a_format_goes_with_seconds_only():
    with pytest.raises(ValueError, match="give one of them"):
        parse_times(["1"], "ms", time_format="%Y")


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_zone_aware_pandas_times_in_any_unit_are_read_as_one_column(monkeypatch, unit):
    # pandas 2 reads a Parquet timestamp[ms, tz] as datetime64[ms, tz]: it was read value by value
    # (a Timestamp's ISO text, then parsed: 86 s of CPU for 5.3M fixes against 3.5 s by the CLI)
    pd = pytest.importorskip("pandas")
    from dpdbscan.traces import times

    when = pd.Series(pd.to_datetime([1_772_429_944_123, 1_772_429_945_000, None], unit="ms", utc=True))
    when = when.dt.tz_convert("America/Santiago").astype(f"datetime64[{unit}, America/Santiago]")
    want = [1_772_429_944.123 if unit != "s" else 1_772_429_944.0, 1_772_429_945.0]

    def one_by_one(arr):
        raise AssertionError("read value by value")

    monkeypatch.setattr(times, "read_objects", one_by_one)
    got = parse_times(when)
    np.testing.assert_allclose(got[:2], want, rtol=0, atol=1e-6)
    assert np.isnan(got[2])
    index = pd.DatetimeIndex(when)
    np.testing.assert_array_equal(parse_times(index), got)
