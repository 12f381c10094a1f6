"""Periods of a public horizon: calendar, time zone, boundaries."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from dpdbscan.traces import parse_times
from dpdbscan.traces.periods import Periods


def _ts(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


def test_days_in_utc_and_the_half_open_boundaries():
    p = Periods("day", "2024-03-04", "2024-03-07")
    assert p.n_periods == 3
    t = np.array([_ts("2024-03-04T00:00:00+00:00"), _ts("2024-03-04T23:59:59+00:00"),
                  _ts("2024-03-05T00:00:00+00:00"), _ts("2024-03-06T23:59:59.5+00:00"),
                  _ts("2024-03-07T00:00:00+00:00"), _ts("2024-03-03T23:59:59+00:00"), np.nan])  # fmt: skip
    assert p.index(t).tolist() == [0, 0, 1, 2, -1, -1, -1]


def test_a_local_calendar_follows_daylight_saving():
    # New York sprang forward on 2024-03-10: that day has 23 hours
    p = Periods("day", "2024-03-09", "2024-03-12", "America/New_York")
    assert (np.diff(p.edges) / 3600).tolist() == [24.0, 23.0, 24.0]
    # 04:30 UTC on the 10th is still the 9th in New York (23:30 EST)
    assert p.index(np.array([_ts("2024-03-10T04:30:00+00:00")])).tolist() == [0]
    assert p.index(np.array([_ts("2024-03-10T05:00:00+00:00")])).tolist() == [1]
    assert p.starts[1] == "2024-03-10T00:00:00-05:00" and p.starts[2] == "2024-03-11T00:00:00-04:00"


def test_months_have_their_own_lengths():
    p = Periods("month", "2024-01-01", "2025-01-01")
    days = (np.diff(p.edges) / 86400).tolist()
    assert days == [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]  # 2024 is a leap year
    assert p.index(np.array([_ts("2024-02-29T12:00:00+00:00")])).tolist() == [1]


def test_weeks_and_hours():
    w = Periods("week", "2008-05-17", "2008-06-14")
    assert w.n_periods == 4 and np.all(np.diff(w.edges) == 7 * 86400)
    h = Periods("hour", "2024-03-10T00:00", "2024-03-10T06:00", "America/New_York")
    assert h.n_periods == 5  # the clock skips 02:00-03:00 local: 5 real hours
    assert np.all(np.diff(h.edges) == 3600)


def test_times_as_text_numbers_and_bad_values():
    p = Periods("day", "2024-03-04", "2024-03-06")
    got = p.index(parse_times(np.array(["2024-03-04T10:00:00Z", str(int(_ts("2024-03-05T01:00:00+00:00"))),
                                        "not a time", "2024-02-30", ""], dtype=object)))  # fmt: skip
    assert got.tolist() == [0, 1, -1, -1, -1]


@pytest.mark.parametrize(
    "args, words",
    [
        (("fortnight", "2024-01-01", "2024-02-01"), "--per"),
        (("day", "2024-01-02", "2024-01-01"), "empty"),
        (("week", "2024-01-01", "2024-01-10"), "not the start of a period"),
        (("month", "2024-01-31", "2024-03-31"), "day 1 to 28"),
        (("day", "2024-01-01", "2024-01-03", "Mars/Olympus"), "unknown time zone"),
        (("day", "01/01/2024", "2024-01-03"), "YYYY-MM-DD"),
    ],
)
def test_refusals_name_the_problem(args, words):
    with pytest.raises(ValueError, match=words):
        Periods(*args)
