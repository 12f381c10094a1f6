"""Times without an offset read as a zone's local clock (``--tz``; the
naivetz helper): exactly as ``datetime(..., tzinfo=ZoneInfo(zone))`` with
fold=0 reads each, vectorised by the zone's table of offsets; instants
(unix seconds, times with an offset or a zone) unchanged; no zone, UTC."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dpdbscan.traces import parse_times
from dpdbscan.traces.localclock import to_utc
from dpdbscan.traces.times import parse_formatted, seconds_of_parts

SHANGHAI, LA = "Asia/Shanghai", "America/Los_Angeles"
#: 2008-02-03 23:30 in Beijing (UTC+8): 15:30 UTC
EVENING = dt.datetime(2008, 2, 3, 15, 30, tzinfo=dt.UTC).timestamp()


def wall(*args: int) -> float:
    """A wall-clock time's seconds as if UTC (how a naive time is read without a zone)."""
    return dt.datetime(*args, tzinfo=dt.UTC).timestamp()


def zoneinfo_reading(w: float, name: str) -> float:
    naive = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=w)
    return naive.replace(tzinfo=ZoneInfo(name)).timestamp()


@pytest.mark.parametrize("name", [LA, SHANGHAI, "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago"])
def test_the_table_reads_each_wall_time_as_zoneinfo_does_with_fold_zero(name):
    rng = np.random.default_rng(70_001)
    # every minute around each change of LA-like zones in 2008, and random times of 1900 to 2100
    near = [zoneinfo_reading(wall(y, m, 1), name) for y in (1950, 2008, 2099) for m in range(1, 13)]
    around = (np.array(near)[:, None] + np.arange(-40 * 86400, 40 * 86400, 3571.0)[None, :]).ravel()
    w = np.concatenate([around, rng.uniform(wall(1900, 1, 3), wall(2099, 12, 29), 5000).round(), [np.nan]])
    got = to_utc(w, name)
    want = np.array([np.nan if np.isnan(v) else zoneinfo_reading(v, name) for v in w])
    np.testing.assert_array_equal(got, want)


def test_a_fold_reads_its_first_occurrence_and_a_gap_moves_forward():
    # 2008-11-02 01:30 happens twice in Los Angeles (PDT, then PST): the first, 08:30 UTC
    assert to_utc(np.array([wall(2008, 11, 2, 1, 30)]), LA)[0] == wall(2008, 11, 2, 8, 30)
    # 01:59:59 PDT and 02:00 PST: an hour and a second apart
    got = to_utc(np.array([wall(2008, 11, 2, 1, 59, 59), wall(2008, 11, 2, 2)]), LA)
    assert got.tolist() == [wall(2008, 11, 2, 8, 59, 59), wall(2008, 11, 2, 10)]
    # 2008-03-09 02:30 never happens (02:00 PST -> 03:00 PDT): read at PST, 10:30 UTC = 03:30 PDT
    assert to_utc(np.array([wall(2008, 3, 9, 2, 30)]), LA)[0] == wall(2008, 3, 9, 10, 30)
    assert to_utc(np.array([wall(2008, 3, 9, 3, 0)]), LA)[0] == wall(2008, 3, 9, 10, 0)


def test_times_outside_the_tabled_years_ask_the_zone():
    w = np.array([wall(2150, 7, 1, 12), wall(2150, 1, 1, 12), wall(1850, 7, 1), wall(1850, 7, 1)])
    got = to_utc(w, LA)
    assert got.tolist() == [zoneinfo_reading(v, LA) for v in w]
    assert got[0] == wall(2150, 7, 1, 19)  # daylight time in 2150 by the zone's rule


NAIVE_AND_INSTANTS = [
    ("naive ISO text", pa.array(["2008-02-03 23:30:00"]), True),
    ("naive ISO text with T", np.array(["2008-02-03T23:30"]), True),
    ("ISO text with an offset", pa.array(["2008-02-03T23:30:00+08:00"]), False),
    ("ISO text in UTC", pa.array(["2008-02-03 15:30:00Z"]), False),
    ("unix seconds as text", pa.array([f"{EVENING:.0f}"]), False),
    ("unix seconds", np.array([EVENING]), False),
    ("a naive Arrow timestamp", pa.array([dt.datetime(2008, 2, 3, 23, 30)], pa.timestamp("ms")), True),
    (
        "an Arrow timestamp with a zone",
        pa.array([dt.datetime(2008, 2, 3, 15, 30)], pa.timestamp("us", tz="UTC")),
        False,
    ),
    ("a naive datetime64", np.array(["2008-02-03T23:30"], dtype="datetime64[s]"), True),
    ("a naive pandas column", pd.Series(pd.to_datetime(["2008-02-03 23:30"])), True),
    (
        "a pandas column with a zone",
        pd.Series(pd.to_datetime(["2008-02-03 23:30"]).tz_localize(SHANGHAI)),
        False,
    ),
    ("a naive datetime", [dt.datetime(2008, 2, 3, 23, 30)], True),
    ("a datetime with a zone", [dt.datetime(2008, 2, 3, 23, 30, tzinfo=ZoneInfo(SHANGHAI))], False),
    (
        "pandas Timestamps with a zone",
        pd.Series(pd.to_datetime(["2008-02-03 23:30"]).tz_localize(SHANGHAI)).astype(object),
        False,
    ),
    ("a dictionary of naive text", pa.array(["2008-02-03 23:30:00"]).dictionary_encode(), True),
]


@pytest.mark.parametrize(
    ("what", "values", "naive"), NAIVE_AND_INSTANTS, ids=[c[0] for c in NAIVE_AND_INSTANTS]
)
def test_only_times_without_an_offset_are_read_as_the_zones_clock(what, values, naive):
    without, utc, local = parse_times(values), parse_times(values, tz="UTC"), parse_times(values, tz=SHANGHAI)
    np.testing.assert_array_equal(utc, without)  # "UTC" is no zone: as today
    if naive:
        assert without[0] == wall(2008, 2, 3, 23, 30) and local[0] == EVENING
    else:
        assert without[0] == local[0] == EVENING


def test_dates_are_the_zones_local_midnight():
    dates = pa.array([dt.date(2008, 2, 3)], pa.date32())
    assert parse_times(dates)[0] == wall(2008, 2, 3)
    assert parse_times(dates, tz=SHANGHAI)[0] == wall(2008, 2, 2, 16)
    assert parse_times([dt.date(2008, 2, 3)], tz=SHANGHAI)[0] == wall(2008, 2, 2, 16)


def test_a_mixed_column_reads_each_value_by_its_own_text():
    text = pa.array(
        [
            "2008-02-03 23:30",
            "2008-02-03T23:30:00+08:00",
            f"{EVENING:.0f}",
            None,
            "no time",
            "2008-02-30 01:00",
        ]
    )
    got = parse_times(text, tz=SHANGHAI)
    assert got[:3].tolist() == [EVENING] * 3 and np.isnan(got[3:]).all()
    ms = pa.array(["2008-02-03 23:30", f"{EVENING * 1000:.0f}"])
    assert parse_times(ms, "ms", tz=SHANGHAI).tolist() == [EVENING] * 2


def test_a_time_format_without_an_offset_is_the_zones_clock():
    texts = pa.array(["03/02/2008 23:30", "03/02/2008 23:30 +0800", "31/02/2008 23:30"])
    got = parse_formatted(texts[:1], "%d/%m/%Y %H:%M", SHANGHAI)
    assert got.tolist() == [EVENING]
    assert parse_formatted(texts[:1], "%d/%m/%Y %H:%M").tolist() == [wall(2008, 2, 3, 23, 30)]
    with_z = parse_formatted(texts[1:], "%d/%m/%Y %H:%M %z", SHANGHAI)
    assert with_z[0] == EVENING and np.isnan(with_z[1])
    assert parse_times(texts[:1], time_format="%d/%m/%Y %H:%M", tz=SHANGHAI).tolist() == [EVENING]


def test_the_doors_chunks_read_alike_with_a_zone():
    column = pa.chunked_array([["2008-02-03 23:30:00", "2008-03-09 02:30:00"], ["2008-11-02 01:30:00"]])
    got = seconds_of_parts(list(column.chunks), tz=LA)
    assert got.tolist() == parse_times(column, tz=LA).tolist()
    assert got[1:].tolist() == [wall(2008, 3, 9, 10, 30), wall(2008, 11, 2, 8, 30)]


def test_an_unknown_zone_is_refused_before_any_value_is_read():
    with pytest.raises(ValueError, match="--tz: unknown time zone"):
        parse_times(pa.array(["2008-02-03 23:30"]), tz="Mars/Olympus")
