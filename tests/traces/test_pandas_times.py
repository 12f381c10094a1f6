"""Times, trip-end statuses and coordinates given in pandas' extension
types (nullable floats and booleans, Arrow-backed columns, categoricals):
one missing value never changes how the other values are read, nor whether
the fit releases (docs/privacy.md section 8, round 15)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpdbscan import DPDBSCAN, Stops, TripEnds
from dpdbscan.params.validation import check_array
from dpdbscan.traces.times import parse_times
from dpdbscan.traces.tripends import parse_status

pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

T0 = 1_211_018_400

#: pandas containers of times, each as it is (D) and with one missing value more (D').
FLOAT_TIMES = {
    "Float64 Index": lambda v: pd.Index(v, dtype="Float64"),
    "Float64 array": lambda v: pd.array(v, dtype="Float64"),
    "double[pyarrow] Series": lambda v: pd.Series(v, dtype="double[pyarrow]"),
    "double[pyarrow] Index": lambda v: pd.Index(v, dtype="double[pyarrow]"),
    "float[pyarrow] Series": lambda v: pd.Series(v, dtype="float[pyarrow]"),
}

BOOLEANS = {
    "boolean Series": lambda v: pd.Series(v, dtype="boolean"),
    "boolean Index": lambda v: pd.Index(v, dtype="boolean"),
    "bool[pyarrow] Series": lambda v: pd.Series(v, dtype="bool[pyarrow]"),
    "categorical of booleans": lambda v: pd.Series(pd.Categorical(v)),
    # numpy's bool: pandas makes the Series object to hold a missing value
    "bool Series": lambda v: pd.Series(v),
}


@pytest.mark.parametrize("make", FLOAT_TIMES.values(), ids=FLOAT_TIMES.keys())
def test_float_times_read_the_same_with_and_without_a_missing_value(make):
    # without a missing value pandas gave a read-only view of the numbers,
    # which the reader failed to write (ValueError): one missing value
    # decided whether the times were read at all
    v = [0.0, 60.5, np.inf]
    d, d2 = parse_times(make(v)), parse_times(make([*v, None]))
    assert np.array_equal(d, [0.0, 60.5, np.nan], equal_nan=True)
    assert np.array_equal(d2, [0.0, 60.5, np.nan, np.nan], equal_nan=True)
    assert np.array_equal(parse_status(make([0.0, 1.0, 2.0])), [0.0, 1.0, np.nan], equal_nan=True)


@pytest.mark.parametrize("make", BOOLEANS.values(), ids=BOOLEANS.keys())
def test_booleans_read_the_same_with_and_without_a_missing_value(make):
    # without a missing value pandas gave numpy booleans, read as the times
    # 0 s and 1 s; with one, objects, every boolean no time
    v = [True, False, True]
    d, d2 = parse_times(make(v)), parse_times(make([*v, None]))
    assert np.array_equal(d2[:3], d, equal_nan=True)
    assert np.isnan(d).all()  # a boolean is no time, as in a list
    # a status: a boolean is one, with or without a missing value beside it
    assert np.array_equal(parse_status(make(v)), [1.0, 0.0, 1.0])
    assert np.array_equal(parse_status(make([*v, None])), [1.0, 0.0, 1.0, np.nan], equal_nan=True)


def _traces(n_units: int = 40):
    """Each unit stops ten minutes at (0.3, 0.3) (fixes every 60 s)."""
    rng = np.random.default_rng(70_015)
    X, units, times = [], [], []
    for u in range(n_units):
        pos = rng.uniform(0.2, 0.8, 2)
        for k in range(30):
            if 10 <= k < 21:
                p = np.array([0.3, 0.3]) + rng.normal(0, 0.001, 2)
            else:
                pos = np.clip(pos + rng.normal(0, 0.05, 2), 0.01, 0.99)
                p = pos
            X.append(p)
            units.append(f"p{u}")
            times.append(float(T0 + 60 * k + u))
    return np.array(X), np.array(units, dtype=object), np.array(times)


PARAMS = dict(eps=0.05, min_samples=5, bounds=([0, 0], [1, 1]), delta=1e-6, max_cells_per_unit=4)


@pytest.mark.parametrize("dtype", ["double[pyarrow]", "Float64"])
def test_the_estimator_releases_stops_of_arrow_times_with_or_without_a_missing_one(dtype):
    X, units, times = _traces()
    X2, units2, times2 = np.vstack([X, [[0.5, 0.5]]]), np.append(units, "q"), [*times, None]
    fits = []
    for x, u, t in ((X, units, times), (X2, units2, times2)):
        est = DPDBSCAN(**PARAMS, events=Stops(0.01, "5min"), random_state=3)
        fits.append(est.fit(x, units=u, times=pd.Index(t, dtype=dtype)))
    assert all(f.spans_.metadata["events"]["kind"] == "stops" for f in fits)
    # the times were read as numpy's are: the same release under the same seed
    ref = DPDBSCAN(**PARAMS, events=Stops(0.01, "5min"), random_state=3).fit(X, units=units, times=times)
    assert np.array_equal(fits[0].spans_.histogram.values, ref.spans_.histogram.values)
    assert fits[0].spans_.histogram.values.sum() > 0


def test_the_estimator_reads_trip_ends_of_nullable_booleans_with_or_without_a_missing_one():
    X, units, times = _traces()
    status = (np.arange(len(X)) % 30 >= 21).tolist()
    for x, u, t, s in (
        (X, units, times, status),
        (np.vstack([X, [[0.5, 0.5]]]), np.append(units, "q"), [*times, T0], [*status, None]),
    ):
        est = DPDBSCAN(**PARAMS, events=TripEnds("pickup"), random_state=3)
        est.fit(x, units=u, times=t, status=pd.Series(s, dtype="boolean"))
        assert est.spans_.metadata["events"]["kind"] == "trip ends"


@pytest.mark.parametrize("dtype", ["boolean", "bool[pyarrow]"])
def test_a_column_of_nullable_booleans_is_read_with_or_without_a_missing_value(dtype):
    # a one-column frame of pandas' booleans was numpy's bool (refused: "X must be
    # numeric") without a missing value and objects (released) with one: one row
    # decided whether the fit was refused
    v = [True, False] * 25
    frames = [
        pd.DataFrame({"x": pd.array(v, dtype=dtype)}),
        pd.DataFrame({"x": pd.array([*v, None], dtype=dtype)}),
    ]
    a, b = (check_array(f) for f in frames)
    assert np.array_equal(b[:50], a) and np.isnan(b[50, 0])
    for f in frames:
        est = DPDBSCAN(eps=0.1, min_samples=3, bounds=(0, 1), random_state=3).fit(f)
        assert est.n_features_in_ == 1


@pytest.mark.parametrize("kind", ["table", "batch"])
def test_a_pyarrow_column_of_booleans_is_read_with_or_without_a_null(kind):
    # numpy's array of a one-column table of booleans was bool (refused)
    # without a null and float (released) with one
    for values in ([True, False] * 25, [True, False] * 25 + [None]):
        t = pa.table({"x": pa.array(values, pa.bool_())})
        X = t if kind == "table" else t.to_batches()[0]
        got = check_array(X, every_row=True)
        assert np.array_equal(got[:50, 0], [1.0, 0.0] * 25)
        est = DPDBSCAN(eps=0.1, min_samples=3, bounds=(0, 1), random_state=3).fit(X)
        assert est.n_features_in_ == 1


#: pandas columns of Arrow dates and zoned timestamps (``pd.read_parquet(...,
#: dtype_backend="pyarrow")``, a Dask worker's Parquet date column), each with
#: the value added in D' (round 17): numpy made each value a Python date or
#: Timestamp, and one beyond their years raised for the whole column.
ARROW_TYPED = {
    "date32, its largest day": (pa.date32(), [18_000 + i for i in range(4)], 2**31 - 1),
    "date32, its smallest day": (pa.date32(), [18_000 + i for i in range(4)], -(2**31)),
    "date64, its largest": (pa.date64(), [(18_000 + i) * 86_400_000 for i in range(4)], 2**63 - 1),
    "dictionary of date32, a missing one": (
        pa.dictionary(pa.int32(), pa.date32()),
        [18_000 + i for i in range(4)],
        None,
    ),
    "timestamp[s, tz], 2**62": (pa.timestamp("s", tz="Etc/GMT+12"), [T0 + 60 * i for i in range(4)], 2**62),
    "timestamp[us, tz], its largest": (
        pa.timestamp("us", tz="Australia/Lord_Howe"),
        [(T0 + 60 * i) * 1_000_000 + 250_000 for i in range(4)],
        2**63 - 1,
    ),
}


def _arrow_typed(arrow_type, values):
    if pa.types.is_dictionary(arrow_type):
        array = pa.array(values, arrow_type.value_type).dictionary_encode()
    else:
        array = pa.array(values, arrow_type)
    return pd.Series(pd.array(array, dtype=pd.ArrowDtype(arrow_type)))


@pytest.mark.parametrize("name", list(ARROW_TYPED))
def test_arrow_dates_and_zoned_timestamps_in_pandas_read_each_value_alone(name):
    """D: four values; D': one more, beyond Python's years (or a missing
    one in a dictionary of dates). Nothing raises, and the four read as in
    D, as the command line's in-memory reader reads the same Arrow column."""
    from dpdbscan.traces.times import parse_formatted

    arrow_type, values, odd = ARROW_TYPED[name]
    d, d2 = _arrow_typed(arrow_type, values), _arrow_typed(arrow_type, [*values, odd])
    plain = pa.array(values, arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type)
    for tz in (None, "Pacific/Apia"):
        for read in (
            lambda v, tz=tz: parse_times(v, tz=tz),
            lambda v, tz=tz: parse_times(v, unit="ms", tz=tz),  # typed times say their own unit
            lambda v, tz=tz: parse_formatted(v, "%Y-%m-%d", tz=tz),  # and their own layout
        ):
            got, got2 = read(d), read(d2)
            assert np.array_equal(got2[:4], got) and np.isfinite(got).all()
            assert np.array_equal(got, parse_times(plain, tz=tz))
    # a status column of them: no status, with or without the added value
    assert np.isnan(parse_status(d2)).all()


def test_the_estimator_releases_stops_of_arrow_dates_with_or_without_one_beyond_the_years():
    """Neighbouring inputs: D, and D plus one more unit's row whose date is
    date32's largest day (5.9 million years on). It raised OverflowError in
    every fit; now that unit has no stop, and D' releases D's release."""
    X, units, times = _traces()
    days = [int(t) // 60 for t in times]  # each fix's minute as a day: a stop of ten days
    X2, units2, days2 = np.vstack([X, [[0.3, 0.3]]]), np.append(units, "q"), [*days, 2**31 - 1]
    fits = []
    for x, u, t in ((X, units, days), (X2, units2, days2)):
        est = DPDBSCAN(**PARAMS, events=Stops(0.01, "5d"), random_state=3)
        fits.append(est.fit(x, units=u, times=_arrow_typed(pa.date32(), t)))
    assert fits[0].spans_.histogram.values.sum() > 0
    assert np.array_equal(fits[1].spans_.histogram.values, fits[0].spans_.histogram.values)
