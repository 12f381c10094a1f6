"""Dask objects given beside points in memory (the numpy backend): a unit
column that is a dask array is read by its values, and a dask Series or
array built on dask's text readers is refused before any record is read, as
the Dask backend refuses it (docs/privacy.md section 8, round 15)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpdbscan import DPDBSCAN
from dpdbscan.ledger import Ledger

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpdbscan.exceptions.InsecureRandomnessWarning", "ignore::dpdbscan.exceptions.UtilityWarning"
)

PARAMS = dict(eps=0.1, min_samples=3, bounds=([0, 0], [1, 1]), delta=1e-6, max_cells_per_unit=2)


def _points(n: int = 600):
    X = np.random.default_rng(70_015).random((n, 2))
    return X, np.arange(n) % 60


def _fit(X, units, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPDBSCAN(**{**PARAMS, **kw}, random_state=5).fit(X, units=units)


@pytest.mark.parametrize("dtype", [np.int64, object])
def test_a_dask_array_of_units_beside_points_in_memory_is_read_by_its_values(dtype):
    # iterated, each id was a dask array of its own, no readable id: every
    # row was dropped as one without a unit, and nothing was released
    X, ids = _points()
    ref = _fit(X, ids).spans_.histogram.values
    got = _fit(X, da.from_array(ids.astype(dtype), chunks=100)).spans_.histogram.values
    assert np.array_equal(got, ref) and ref.sum() > 0


def test_a_masked_array_of_units_reads_a_masked_id_as_missing():
    X, ids = _points()
    masked = np.ma.masked_array(ids, mask=ids == 7)
    ref = _fit(X[ids != 7], ids[ids != 7]).spans_.histogram.values
    assert np.array_equal(_fit(X, masked).spans_.histogram.values, ref)


def test_a_masked_cell_of_x_is_missing_never_the_value_it_hides():
    X, ids = _points()
    hidden = X.copy()
    hidden[::5, 0] = 0.123  # hidden under the mask: never read
    masked = np.ma.masked_array(hidden, mask=np.zeros_like(hidden, dtype=bool))
    masked[::5, 0] = np.ma.masked
    keep = np.arange(len(X)) % 5 != 0
    ref = _fit(X[keep], ids[keep]).spans_.histogram.values
    assert np.array_equal(_fit(masked, ids).spans_.histogram.values, ref)


def _csv(tmp_path, name, ids):
    path = tmp_path / name
    path.write_text("u\n" + "\n".join(ids) + "\n")
    return dd.read_csv(str(path), blocksize=2000)["u"]


@pytest.mark.parametrize("as_array", [False, True])
def test_units_read_by_dask_read_csv_beside_points_in_memory_are_refused_before_the_ledger(
    tmp_path, as_array
):
    # D: integer ids, released; D': one more row whose id is text, past the
    # rows dask typed the column from: the read failed ("Mismatched dtypes"),
    # so one row decided whether a release happened. Now both are refused,
    # from how the column was built, before a ledger charges
    X, ids = _points()
    text = [str(i) for i in ids]
    ledger = Ledger.create(tmp_path / "b.ledger", "devices", 10.0, 1e-3, unit="unit")
    for name, x, rows in (("d.csv", X, text), ("d2.csv", np.vstack([X, [[0.5, 0.5]]]), [*text, "SECRET7"])):
        col = _csv(tmp_path, name, rows)
        units = col.to_dask_array() if as_array else col
        with pytest.raises(ValueError, match="read_csv") as err:
            _fit(x, units, ledger=ledger)
        assert "SECRET7" not in str(err.value)
    assert len(ledger.account().releases) == 0
    # the same ids in memory are released, and charged
    _fit(X, pd.Series(ids), ledger=ledger)
    assert len(ledger.account().releases) == 1


def test_fit_lonlat_refuses_units_read_by_dask_read_csv(tmp_path):
    from dpdbscan import fit_lonlat

    rng = np.random.default_rng(70_016)
    lonlat = np.column_stack([rng.uniform(116.3, 116.5, 300), rng.uniform(39.8, 40.0, 300)])
    units = _csv(tmp_path, "u.csv", [str(i % 30) for i in range(300)])
    with pytest.raises(ValueError, match="read_csv"):
        fit_lonlat(
            lonlat,
            eps="500m",
            bounds=(116.3, 39.8, 116.5, 40.0),
            units=units,
            max_cells_per_unit=2,
            delta=1e-6,
        )


def test_a_series_refuses_units_read_by_dask_read_csv(tmp_path):
    from dpdbscan.params.parameters import validate
    from dpdbscan.series import SeriesInput, fit_series, plan_series
    from dpdbscan.traces.periods import Periods

    lower, upper = np.zeros(2), np.full(2, 10.0)
    p = validate(dict(epsilon=2.0, delta=1e-5, eps=0.5, min_samples=10, max_cells_per_unit=4, random_state=3))
    periods = Periods("day", "2024-03-04", "2024-03-07")
    n = 180
    X = np.full((n, 2), 2.5)
    t = [1_709_510_400 + 3600 * (j % 40) for j in range(n)]
    units = _csv(tmp_path, "u.csv", [str(i // 3) for i in range(n)])
    with pytest.raises(ValueError, match="read_csv"):
        fit_series(SeriesInput(X, lower, upper, p, units, t), plan_series(p, lower, upper, periods))


def _parquet_ids(tmp_path, name, missing: bool):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    ids = [2**60 + i for i in range(60) for _ in range(3)] + ([None] if missing else [])
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(pa.table({"u": pa.array(ids, pa.int64())}), folder / "part.parquet")
    return str(folder)


def _lengths(col):
    """``col.to_dask_array(lengths=True)``, without dask's own use of a pandas
    keyword that pandas deprecates (a warning, an error under this suite)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return col.to_dask_array(lengths=True)


def _spot(model) -> int:
    h = model.histogram
    return int(h.value_at(h.grid.keys_of_points(np.array([[0.25, 0.25]])))[0])


@pytest.mark.parametrize("as_array", [False, True])
def test_units_read_from_parquet_with_default_types_beside_points_in_memory_are_refused(tmp_path, as_array):
    # D: 60 units with ids 2**60 + i at one spot; D': one more row without an
    # id. pandas' default types made D''s column float64, the sixty ids one
    # unit: the spot's noisy count fell from 48 to -11 under one seed. Now
    # refused from the declared type and the reader, before any read; read
    # with nullable types, both count the sixty units
    X = np.full((180, 2), 0.25)
    X2 = np.vstack([X, [[0.75, 0.75]]])
    for name, x, missing in (("d", X, False), ("d2", X2, True)):
        folder = _parquet_ids(tmp_path, name, missing)
        col = dd.read_parquet(folder)["u"]
        units = _lengths(col) if as_array else col
        with pytest.raises(ValueError, match="numpy_nullable"):
            _fit(x, units, max_cells_per_unit=4)
    spots = []
    for name, x in (("d", X), ("d2", X2)):
        col = dd.read_parquet(str(tmp_path / name), dtype_backend="numpy_nullable")["u"]
        units = _lengths(col) if as_array else col
        spots.append(_spot(_fit(x, units, max_cells_per_unit=4).spans_))
    assert spots[0] == spots[1] > 30


def test_a_text_id_with_a_lone_surrogate_in_pandas_strings_never_fails_the_fit():
    # pandas' python-stored strings hold a lone surrogate, which Arrow's
    # conversion refused (UnicodeEncodeError, the character quoted): D
    # released, D' (one more row of such a unit) failed
    X, ids = _points()
    text = [f"p{i}" for i in ids]
    ref = _fit(X, pd.Series(text, dtype=pd.StringDtype("python"))).spans_.histogram.values
    odd = pd.Series([*text, "\ud800"], dtype=pd.StringDtype("python"))
    got = _fit(np.vstack([X, [[0.95, 0.95]]]), odd).spans_
    assert got.histogram.values.shape == ref.shape
    # the same units as the same ids read one by one (a list)
    again = _fit(np.vstack([X, [[0.95, 0.95]]]), [*text, "\ud800"]).spans_.histogram.values
    assert np.array_equal(got.histogram.values, again)
