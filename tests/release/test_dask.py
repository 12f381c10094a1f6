"""The Dask backend against the in-memory reference, on a real LocalCluster.

The contract: ``DaskBackend.count(grid, X)`` equals
``NumpyBackend().count(grid, clean_points(grid, X_in_memory))`` exactly, so a
fit with the same seed releases the same spans and noisy histogram with
either backend.
"""

from __future__ import annotations

import gzip
import sys

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import distributed  # noqa: E402
import pandas as pd  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dpdbscan import DPDBSCAN, Grid  # noqa: E402
from dpdbscan.release.backends import NumpyBackend  # noqa: E402
from dpdbscan.release.backends.dask_backend import (  # noqa: E402
    DaskBackend,
    DaskEngine,
    count_block,
    file_format,
    merge_counts,
)
from dpdbscan.release.backends.numpy_backend import count_keys  # noqa: E402
from dpdbscan.release.points import clean_points  # noqa: E402

LOWER, UPPER = np.zeros(2), np.full(2, 10.0)
BOUNDS = (LOWER.tolist(), UPPER.tolist())
EPS = 0.5  # 29 x 29 cells: small enough for the dense histogram
# the fixtures cluster and client (a real LocalCluster) are in tests/conftest.py


def make_points(n=20_000, seed=0):
    """Three blobs plus background, with NaN/inf rows and points outside the box."""
    rng = np.random.default_rng(seed)
    centres = np.array([[2.0, 2.0], [7.0, 3.0], [5.0, 8.0]])
    X = centres[rng.integers(0, 3, n)] + rng.normal(scale=0.6, size=(n, 2))
    X[: n // 10] = rng.uniform(-1, 11, size=(n // 10, 2))  # some fall outside [0, 10]
    X[5::211, 0] = np.nan
    X[7::307, 1] = np.inf
    X[11::401, 0] = -np.inf
    rng.shuffle(X)
    return X


def frame(X, label=True):
    df = pd.DataFrame({"x": X[:, 0], "y": X[:, 1]})
    if label:
        df["label"] = np.arange(len(X)) % 3
    return df


def write_parquet(X, directory, parts=5, label=True):
    directory.mkdir()
    for i, chunk in enumerate(np.array_split(X, parts)):
        frame(chunk, label).to_parquet(directory / f"part-{i}.parquet", index=False)
    return directory


def write_csv(X, directory, parts=4, label=True, suffix=".csv"):
    directory.mkdir()
    for i, chunk in enumerate(np.array_split(X, parts)):
        # %.17g round-trips float64 exactly; NaN and inf are written as text
        frame(chunk, label).to_csv(directory / f"part-{i}{suffix}", index=False, float_format="%.17g")
    return directory


def reference(grid, X):
    return NumpyBackend().count(grid, clean_points(grid, X))


def assert_same_counts(got, want):
    assert got.keys.dtype == want.keys.dtype
    assert got.counts.dtype == np.int64
    np.testing.assert_array_equal(got.keys, want.keys)
    np.testing.assert_array_equal(got.counts, want.counts)


@pytest.fixture(scope="module")
def X():
    return make_points()


@pytest.fixture(scope="module")
def grid():
    return Grid(LOWER, UPPER, EPS)


# ------------------------------------------------------------ exact counts
def test_points_exercise_the_cleaning_rule(X):
    """The data must contain what the rule handles, or the tests below prove less."""
    assert (~np.isfinite(X)).any(axis=1).sum() > 50
    finite = X[np.isfinite(X).all(axis=1)]
    assert ((finite < 0) | (finite > 10)).any(axis=1).sum() > 50


@pytest.mark.parametrize("fmt", ["parquet", "csv", "csv.gz"])
def test_count_from_files_equals_reference(client, grid, X, tmp_path, fmt):
    if fmt == "parquet":
        d = write_parquet(X, tmp_path / "pq")
        sources = [str(d), str(d / "*.parquet"), sorted(d.glob("*.parquet"))]
    else:
        suffix = ".csv" if fmt == "csv" else ".csv.gz"
        d = write_csv(X, tmp_path / "csv", suffix=suffix)
        sources = [str(d / f"*{suffix}"), sorted(d.glob(f"*{suffix}"))]
    want = reference(grid, X)
    # a folder, a glob or a list of Parquet files names its columns (one file's schema may be a unit's)
    backend = DaskBackend(client=client, header=True if fmt != "parquet" else None, columns=["x", "y"])
    for source in sources:
        assert_same_counts(backend.count(grid, source), want)


def test_count_of_dask_collections_equals_reference(client, grid, X):
    backend = DaskBackend(client=client)
    want = reference(grid, X)
    ddf = dd.from_pandas(frame(X), npartitions=6)
    assert_same_counts(backend.count(grid, ddf), want)
    # chunks split the feature axis too: the backend must rechunk whole rows
    arr = da.from_array(X, chunks=(3_001, 1))
    assert_same_counts(backend.count(grid, arr), want)


def test_in_memory_input_is_counted_like_the_reference(grid, X):
    backend = DaskBackend(client=None)  # no cluster needed for driver-side data
    want = reference(grid, X)
    assert_same_counts(backend.count(grid, X), want)
    assert_same_counts(backend.count(grid, frame(X)), want)


def test_wide_keys_equal_reference(client, tmp_path):
    d = 6
    wide = Grid(np.zeros(d), np.full(d, 1e6), 1e-3)
    assert wide.wide
    rng = np.random.default_rng(1)
    X = np.round(rng.uniform(-10, 1e6 + 10, size=(4_000, d)) / 1e5) * 1e5  # repeats cells
    X[::97, 3] = np.nan
    path = tmp_path / "wide.parquet"
    pd.DataFrame(X, columns=[f"c{i}" for i in range(d)]).to_parquet(path)
    want = reference(wide, X)
    assert want.counts.max() > 1
    got = DaskBackend(client=client, split_every=2).count(wide, str(path))
    assert_same_counts(got, want)


def test_partitions_that_are_all_dropped(client, grid):
    X = np.full((50, 2), np.nan)
    ddf = dd.from_pandas(frame(X, label=False), npartitions=3)
    got = DaskBackend(client=client).count(grid, ddf)
    assert len(got) == 0 and got.keys.dtype == np.int64


# -------------------------------------------------------- same release
def fit(X, backend, histogram):
    est = DPDBSCAN(
        eps=EPS,
        min_samples=20,
        epsilon=1.0,
        bounds=BOUNDS,
        random_state=0,
        histogram=histogram,
        theta=3.0 if histogram == "sparse" else None,
        backend=backend,
    )
    return est.fit(X)


def assert_same_release(a, b):
    np.testing.assert_array_equal(a.spans_.core_keys, b.spans_.core_keys)
    np.testing.assert_array_equal(a.spans_.labels, b.spans_.labels)
    ha, hb = a.histogram_, b.histogram_
    assert ha.kind == hb.kind
    np.testing.assert_array_equal(ha.values, hb.values)
    if ha.keys is not None:
        np.testing.assert_array_equal(ha.keys, hb.keys)
    assert a.noise_margin_ == b.noise_margin_


@pytest.mark.parametrize("histogram", ["dense", "sparse"])
@pytest.mark.parametrize("source", ["parquet", "csv", "dask_dataframe", "dask_array"])
def test_same_release_as_in_memory(client, X, tmp_path, histogram, source):
    if source == "parquet":
        data = str(write_parquet(X, tmp_path / "pq", label=False))
    elif source == "csv":
        data = str(write_csv(X, tmp_path / "csv", label=False) / "*.csv")
    elif source == "dask_dataframe":
        data = dd.from_pandas(frame(X, label=False), npartitions=4)
    else:
        data = da.from_array(X, chunks=(4_000, 2))
    want = fit(X, "numpy", histogram)
    got = fit(
        data,
        DaskBackend(client=client, header=True if source == "csv" else None, columns=["x", "y"]),
        histogram,
    )
    assert want.spans_.core_keys.size > 0, "a release with no core cells proves little"
    assert_same_release(got, want)


def test_automatic_mode_counts_like_in_memory(client, X, tmp_path):
    """The automatic mode's DP count of the points (2-D, event level, no
    ``n_expected``) reads the Parquet parts once more on the cluster: the count, the
    grid it sizes and the release equal the in-memory fit's."""
    data = str(write_parquet(X, tmp_path / "pq", label=False))
    kw = dict(eps="auto", min_samples="auto", epsilon=1.0, bounds=BOUNDS, random_state=3)
    want = DPDBSCAN(**kw).fit(X)
    got = DPDBSCAN(**kw, backend=DaskBackend(client=client, columns=["x", "y"])).fit(data)
    a, b = got.spans_, want.spans_
    assert b.release.size_estimate is not None, "the automatic mode made no count: this test proves nothing"
    assert a.release.size_estimate == b.release.size_estimate
    assert a.release.eps == b.release.eps and a.auto["eps_candidates"] == b.auto["eps_candidates"]
    assert a.spec.min_samples == b.spec.min_samples
    assert_same_release(got, want)


@pytest.mark.slow  # 20-50 s; the in-memory wide path runs in tests/model/test_model.py
def test_same_release_with_wide_keys(client):
    """A grid too fine for int64 keys: packed keys all the way to the spans."""
    rng = np.random.default_rng(0)
    X = np.vstack([0.5 + 2e-6 * rng.random((30_000, 3)), rng.random((50, 3))])
    X[::501, 2] = np.nan
    kw = dict(
        eps=1e-6,
        min_samples=5,
        epsilon=2.0,
        bounds=([0.0] * 3, [1.0] * 3),
        random_state=0,
        histogram="sparse",
    )
    want = DPDBSCAN(**kw).fit(X)
    got = DPDBSCAN(**kw, backend=DaskBackend(client=client)).fit(da.from_array(X, chunks=8_000))
    assert want.histogram_.keys.dtype.kind == "V"
    assert want.spans_.core_keys.size > 0
    assert_same_release(got, want)


# ------------------------------------------------------------- columns
def test_default_columns_skip_label_and_refuse_non_numeric(client, grid, X, tmp_path):
    """The in-memory reader's rule (files.layout.schema_columns): the label
    is left out; a text column is not silently skipped, it must be named out."""
    from dpdbscan.files.reader import read_input

    df = frame(X).assign(name="a")[["label", "x", "name", "y"]]
    path = tmp_path / "t.parquet"
    df.to_parquet(path, index=False)
    for read in (lambda: DaskBackend(client=client).count(grid, str(path)), lambda: read_input(path)):
        with pytest.raises(ValueError, match=r"t.parquet: column\(s\) name are not numeric.*--columns"):
            read()
    df.drop(columns="name").to_parquet(path, index=False)
    backend = DaskBackend(client=client)
    assert backend.n_features(str(path)) == 2
    assert_same_counts(backend.count(grid, str(path)), reference(grid, X))


def test_explicit_columns_in_their_order(client, grid, X, tmp_path):
    path = tmp_path / "t.parquet"
    frame(X).rename(columns={"x": "lon", "y": "lat"}).to_parquet(path, index=False)
    got = DaskBackend(client=client, columns=["lat", "lon"]).count(grid, str(path))
    assert_same_counts(got, reference(grid, X[:, ::-1]))


def test_missing_column_is_a_clear_error(client, grid, X, tmp_path):
    path = tmp_path / "t.parquet"
    frame(X).to_parquet(path, index=False)
    with pytest.raises(ValueError, match=r"no column 'z' in .*t.parquet \(columns: 'x', 'y', 'label'\)"):
        DaskBackend(client=client, columns=["x", "z"]).count(grid, str(path))


def test_column_count_must_match_bounds(client, X, tmp_path):
    path = tmp_path / "t.parquet"
    frame(X).to_parquet(path, index=False)
    grid3 = Grid(np.zeros(3), np.full(3, 10.0), EPS)
    with pytest.raises(ValueError, match=r"d=3 dimensions.*2 coordinate columns.*columns="):
        DaskBackend(client=client).count(grid3, str(path))


@pytest.mark.parametrize(
    "paths, fmt",
    [
        (["a.parquet", "b.PQ"], "parquet"),
        (["s3://bucket/data/*.csv.gz"], "csv"),
        (["gs://bucket/dataset"], "parquet"),
    ],
)
def test_file_format_from_suffix(paths, fmt):
    assert file_format(paths) == fmt


def test_mixed_or_unknown_formats_are_errors(tmp_path):
    with pytest.raises(ValueError, match="mix Parquet and CSV"):
        file_format(["a.parquet", "b.csv"])
    odd = tmp_path / "points.dat"
    odd.write_text("x,y\n1,2\n")
    with pytest.raises(ValueError, match="pass --format"):
        file_format([str(odd)])
    assert file_format([str(odd)], "csv") == "csv"


def test_unsupported_input_type(grid):
    with pytest.raises(TypeError, match="dask DataFrames, dask arrays"):
        DaskBackend(client=None).count(grid, {"x": [1.0]})


# --------------------------------------------------- reduction by key
keys_strategy = st.lists(st.integers(0, 40), min_size=0, max_size=200)


@settings(max_examples=60, deadline=None)
@given(keys=keys_strategy, cuts=st.lists(st.integers(0, 200), max_size=6))
def test_merge_counts_equals_counting_everything(keys, cuts):
    keys = np.asarray(keys, dtype=np.int64)
    pieces = np.split(keys, sorted(c for c in cuts if c <= keys.size))
    parts = [(c.keys, c.counts) for c in (count_keys(p) for p in pieces)]
    got_k, got_c = merge_counts(*parts)
    want = count_keys(keys)
    np.testing.assert_array_equal(got_k, want.keys)
    np.testing.assert_array_equal(got_c, want.counts)


def test_merge_counts_wide_keys():
    wide = Grid(np.zeros(6), np.full(6, 1e6), 1e-3)
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, size=(500, 6)).astype(float)
    parts = [count_block(wide, p) for p in np.array_split(X, 4)]
    got_k, got_c = merge_counts(*parts)
    want = reference(wide, X)
    np.testing.assert_array_equal(got_k, want.keys)
    np.testing.assert_array_equal(got_c, want.counts)


# ------------------------------------------------------ client lifecycle
def test_scheduler_address_connects_to_running_cluster(cluster, grid, X):
    backend = DaskBackend(scheduler=cluster.scheduler_address)
    ddf = dd.from_pandas(frame(X), npartitions=3)
    assert_same_counts(backend.count(grid, ddf), reference(grid, X))


class _Recording(distributed.LocalCluster):
    started: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _Recording.started.append(self)


@pytest.fixture
def recording(monkeypatch):
    _Recording.started = []
    monkeypatch.setattr(distributed, "LocalCluster", _Recording)
    return _Recording.started


def test_own_local_cluster_is_started_and_closed(recording, grid, X):
    ddf = dd.from_pandas(frame(X), npartitions=2)
    backend = DaskBackend(processes=False)
    assert_same_counts(backend.count(grid, ddf), reference(grid, X))
    assert len(recording) == 1
    assert recording[0].status.name == "closed"


def test_context_manager_reuses_one_cluster(recording, grid, X):
    ddf = dd.from_pandas(frame(X), npartitions=2)
    with DaskBackend(processes=False, n_workers=2) as backend:
        for _ in range(2):
            assert_same_counts(backend.count(grid, ddf), reference(grid, X))
        assert len(recording) == 1
        assert recording[0].status.name == "running"
    assert recording[0].status.name == "closed"


def test_given_client_is_left_open(client, grid, X):
    ddf = dd.from_pandas(frame(X), npartitions=2)
    with DaskBackend(client=client) as backend:
        backend.count(grid, ddf)
    assert client.status == "running"


# ----------------------------------------------------------- arguments
def test_scheduler_and_client_are_exclusive(client):
    with pytest.raises(ValueError, match="either scheduler or client"):
        DaskBackend(scheduler="tcp://127.0.0.1:8786", client=client)


@pytest.mark.parametrize("bad", [1, 0, 2.5, "8"])
def test_split_every_is_checked(bad):
    with pytest.raises(ValueError, match=f"split_every={bad!r}"):
        DaskBackend(split_every=bad)


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"pip install 'dpdbscan\[dask\]'"):
        DaskBackend()


def test_resolve_backend_builds_the_dask_backend():
    from dpdbscan.release.backends import resolve_backend

    assert isinstance(resolve_backend("dask"), DaskBackend)


# ------------------------------------------- one record at a time (issue #14)
def _csv_text(X, header="x,y", bad=None):
    """CSV text of X with %.17g values; ``bad`` maps a row index to a raw line."""
    lines = [header] + [f"{a:.17g},{b:.17g}" for a, b in X]
    for i, line in (bad or {}).items():
        lines[i + 1] = line
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("gz", [False, True])
def test_late_unparseable_row_is_dropped_not_fatal(client, grid, X, tmp_path, gz, capfd):
    d = tmp_path / "csv"
    d.mkdir()
    parts = np.array_split(X, 3)
    bad_row = len(parts[2]) - 5  # late in the last file, far beyond the first block
    for i, part in enumerate(parts):
        text = _csv_text(part, bad={bad_row: "0.3,bob@example.com"} if i == 2 else None)
        name = d / f"part-{i}.csv{'.gz' if gz else ''}"
        name.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    backend = DaskBackend(client=client, blocksize=50_000, header=True)
    got = backend.count(grid, str(d / ("*.csv.gz" if gz else "*.csv")))
    want_X = np.vstack([parts[0], parts[1], np.delete(parts[2], bad_row, axis=0)])
    assert_same_counts(got, reference(grid, want_X))
    assert backend.input_counts.unparseable == 1 and backend.input_counts.rows == len(X)
    out, err = capfd.readouterr()
    assert "bob@example.com" not in out + err


@pytest.mark.parametrize("end", ["\r", "\r\n"])
def test_csv_with_cr_line_ends_counts_as_with_lf(client, grid, X, tmp_path, end):
    """Lines ended by a carriage return alone (old Mac text) or CRLF: the
    same records as with ``\n`` (a bad row drops alone), though dask's
    blocks are cut at ``\n`` only (a CR-only file is then one block)."""
    bad = {len(X) - 7: "0.3,bob@example.com", 40: '"0.3,0.4'}
    path = tmp_path / "cr.csv"
    path.write_bytes(_csv_text(X, bad=bad).replace("\n", end).encode())
    backend = DaskBackend(client=client, blocksize=20_000, header=True)
    got = backend.count(grid, str(path))
    assert_same_counts(got, reference(grid, np.delete(X, sorted(bad), axis=0)))
    assert backend.input_counts.unparseable == 1 and backend.input_counts.malformed == 1
    assert backend.input_counts.rows == len(X)


def test_fit_with_a_bad_row_releases_like_numpy_without_it(client, X, tmp_path, caplog):
    path = tmp_path / "p.csv"
    path.write_text(_csv_text(X, bad={len(X) - 3: "0.3,bob@example.com"}))
    want = fit(np.delete(X, len(X) - 3, axis=0), "numpy", "dense")
    got = fit(str(path), DaskBackend(client=client, blocksize=100_000, header=True), "dense")
    assert want.spans_.core_keys.size > 0
    assert_same_release(got, want)
    assert "bob@example.com" not in caplog.text


def test_csv_columns_come_from_the_header_not_the_values(client, grid, X, tmp_path):
    """A column whose first rows are text is still a coordinate: the header
    says so. (dask's dtype inference would have dropped it, changing d.)"""
    rows = {i: f"{X[i, 0]:.17g},n/a-{i}" for i in range(200)}
    path = tmp_path / "t.csv"
    path.write_text(_csv_text(X, bad=rows))
    backend = DaskBackend(client=client, blocksize=100_000, header=True)
    assert backend.n_features(str(path)) == 2
    got = backend.count(grid, str(path))
    assert_same_counts(got, reference(grid, X[200:]))
    assert backend.input_counts.unparseable == 200


@pytest.mark.parametrize("header, first", [(",x,y,label", "{i}"), ("Unnamed: 0;x;y", "{i}")])
def test_csv_index_columns_and_delimiter(client, grid, X, tmp_path, header, first):
    sep = ";" if ";" in header else ","
    extra = ",0" if header.endswith("label") else ""
    lines = [header] + [
        sep.join([first.format(i=i), f"{a:.17g}", f"{b:.17g}"]) + extra for i, (a, b) in enumerate(X)
    ]
    path = tmp_path / "i.csv"
    path.write_text("\n".join(lines) + "\n")
    backend = DaskBackend(client=client, header=True, delimiter=sep)
    assert_same_counts(backend.count(grid, str(path)), reference(grid, X))


def test_csv_without_header_reads_its_first_line_as_data(client, grid, X, tmp_path):
    path = tmp_path / "h.csv"
    path.write_text(_csv_text(X)[len("x,y\n") :])
    got = DaskBackend(client=client, header=False).count(grid, str(path))  # d = 2 fields a line
    assert_same_counts(got, reference(grid, X))
    # header=True takes the first row for names
    got = DaskBackend(client=client, header=True, columns=None).count(grid, str(path))
    assert_same_counts(got, reference(grid, X[1:]))
    # undecided: refused before a record is read, naming both options
    with pytest.raises(ValueError, match="header=True.*header=False"):
        DaskBackend(client=client).count(grid, str(path))


@pytest.mark.parametrize(
    "start, header",
    [
        ("\ufeff", False),  # a byte order mark before the first record
        ("\ufeffx,y\n", True),
        ("\n\r\nx,y\n", True),  # empty lines before the header
        ("\ufeff\nx,y\r\n", True),
        ("", False),
    ],
)
def test_csv_file_starts_read_as_the_in_memory_reader_reads_them(client, grid, X, tmp_path, start, header):
    """One rule for a file's start (files.records.split_head): both doors read the same rows."""
    from dpdbscan.files.reader import read_input

    body = _csv_text(X[:500])[len("x,y\n") :]
    path = tmp_path / "s.csv"
    path.write_bytes((start + body).encode())
    want = read_input(path, header=header, d=2)
    assert len(want.X) == 500 and want.n_unparseable == want.n_malformed == 0
    got = DaskBackend(client=client, header=header, blocksize=2_000).count(grid, str(path))
    assert_same_counts(got, reference(grid, want.X))
    assert got.counts.sum() > 0


def test_csv_files_must_share_the_header(client, grid, X, tmp_path):
    d = tmp_path / "csv"
    d.mkdir()
    (d / "a.csv").write_text(_csv_text(X[:10]))
    (d / "b.csv").write_text(_csv_text(X[10:20], header="y,x"))
    with pytest.raises(ValueError, match=r"b.csv: its header differs from the first file's \(x, y\)"):
        DaskBackend(client=client, header=True).count(grid, str(d / "*.csv"))


def test_text_column_of_a_dataframe_is_read_value_by_value(client, grid, X):
    df = frame(X, label=False)
    text = df["y"].map(lambda v: f"{v:.17g}").astype(object)
    text.iloc[7] = "bob@example.com"
    text.iloc[9] = None
    df["y"] = text
    want = reference(grid, np.delete(X, [7, 9], axis=0))
    backend = DaskBackend(client=client, columns=["x", "y"])
    assert_same_counts(backend.count(grid, dd.from_pandas(df, npartitions=3)), want)
    assert backend.input_counts.unparseable == 1
    assert_same_counts(backend.count(grid, df), want)  # in memory too
    assert backend.input_counts.unparseable == 1


def test_parquet_text_column_is_a_schema_error(client, grid, X, tmp_path):
    path = tmp_path / "t.parquet"
    frame(X).assign(name="a").to_parquet(path, index=False)
    with pytest.raises(ValueError, match=r"t.parquet: column 'name' is not numeric \(type "):
        DaskBackend(client=client, columns=["x", "name"]).count(grid, str(path))


# --------------------------------------------------- no partial counts
def test_a_lost_partition_is_refused(client, grid, X, monkeypatch):
    """If the reduce ever merged fewer partitions than planned, the count is
    refused, not released."""
    original = DaskEngine.reduce

    def lossy(self, parts, merge):
        return original(self, parts[1:] if len(parts) > 1 else parts, merge)

    monkeypatch.setattr(DaskEngine, "reduce", lossy)
    ddf = dd.from_pandas(frame(X), npartitions=4)
    with pytest.raises(RuntimeError, match="merged 3 partition result.*for 4 partition"):
        DaskBackend(client=client).count(grid, ddf)


@pytest.mark.parametrize("bad", [0, -1, "10", float("nan"), True])
def test_timeout_is_checked(bad):
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        DaskBackend(timeout=bad)


# --------------------------------------------- gzip files cut part-way
def _write_gz(path, text: str, cut: int | None = None):
    data = gzip.compress(text.encode())
    path.write_bytes(data if cut is None else data[: cut if cut > 0 else len(data) + cut])
    return path


def test_cut_gzip_files_keep_their_rows_before_the_cut_as_in_memory(client, grid, X, tmp_path):
    """An interrupted download: the in-memory reader keeps a cut gzip file's
    rows before the cut (its oracle: zlib's inflation, tests/files/test_io.py);
    the workers keep the same rows, counted in a private note that quotes
    nothing, and the other files are read whole."""
    from dpdbscan import PrivateNoteWarning
    from dpdbscan.files import read_input

    d = tmp_path / "gz"
    d.mkdir()
    parts = np.array_split(X, 3)
    texts = [_csv_text(p, bad={7: "0.3,bob@example.com"} if i == 1 else None) for i, p in enumerate(parts)]
    files = [
        _write_gz(d / "part-0.csv.gz", texts[0]),
        _write_gz(d / "part-1.csv.gz", texts[1], cut=len(gzip.compress(texts[1].encode())) // 2),
        _write_gz(d / "part-2.csv.gz", texts[2], cut=-9),  # only the trailer lost
    ]
    read = [read_input(f, header=True) for f in files]
    assert [r.n_read_before_cut is not None for r in read] == [False, True, True]
    backend = DaskBackend(client=client, header=True)
    with pytest.warns(PrivateNoteWarning) as notes:
        got = backend.count(grid, str(d / "*.csv.gz"))
    assert_same_counts(got, reference(grid, np.vstack([r.X for r in read])))
    assert backend.input_counts.rows == sum(r.X.shape[0] for r in read)
    assert backend.input_counts.unparseable == 1
    cut_rows = read[1].X.shape[0] + read[2].X.shape[0]
    said = " ".join(str(n.message) for n in notes)
    words = "2 compressed files end early (cut part-way, as by an interrupted download) after"
    assert f"{words} {cut_rows:,} row(s)" in said
    assert "bob" not in said


def test_a_cut_gzip_header_is_refused_before_the_count_or_read_as_no_rows(client, grid, X, tmp_path):
    """The first file's declared header is read before the release (public):
    cut within it, the files are refused then, quoting nothing, as in memory.
    A later file cut within its header line has no rows before the cut; a
    damaged gzip file is refused in the in-memory reader's words, not with
    zlib's."""
    from dpdbscan import PrivateNoteWarning

    text = _csv_text(X[:2000], header="x,y,secret-name")
    text = text.replace("\n", ",1\n").replace("secret-name,1", "secret-name", 1)
    d = tmp_path / "h"
    d.mkdir()
    first = _write_gz(d / "a.csv.gz", text, cut=12)  # the header is cut
    _write_gz(d / "b.csv.gz", text)
    backend = DaskBackend(client=client, header=True, columns=["x", "y"])
    with pytest.raises(ValueError, match=r"a.csv.gz: cannot read as CSV \(the file is damaged") as info:
        backend.check_files(str(d / "*.csv.gz"), 2)
    assert "secret" not in str(info.value)
    _write_gz(first, text)
    _write_gz(d / "c.csv.gz", text, cut=12)
    with pytest.warns(PrivateNoteWarning, match=r"the compressed file ends early .* after 0 row\(s\)"):
        got = backend.count(grid, str(d / "*.csv.gz"))
    assert_same_counts(got, reference(grid, np.vstack([X[:2000], X[:2000]])))
    assert backend.input_counts.rows == 4000
    damaged = bytearray(gzip.compress(text.encode()))
    damaged[400:420] = b"\xff" * 20
    (d / "c.csv.gz").write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match=r"c.csv.gz: cannot read as CSV \(the file is damaged") as info:
        backend.count(grid, str(d / "*.csv.gz"))
    assert "secret" not in str(info.value)
