"""Exact per-cell counts on a Dask cluster (dask.distributed).

Counting points per cell is the only stage that is linear in the number of
points, and the only one that reads them. This backend runs it where the data
lives: each partition (a Parquet or CSV part, a block of a dask array) is
cleaned by the documented per-record rule, turned into sorted ``(keys,
counts)`` by the numpy reference backend, and the partial results are merged
by key in a tree of ``split_every``-way merges. The driver receives only the
exact counts of the occupied cells; noise, empty-cell sampling, neighbour sums
and merging stay on the driver (``mechanism.release_histogram``), so noise is
added once, after the global reduce.

Nothing here steers the mechanism: the grid comes from public parameters, and
partitioning only changes where records are counted, not the counts.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from .._optional import require
from .base import CellCounts
from .numpy_backend import NumpyBackend

_PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")
_CSV_SUFFIXES = (".csv", ".tsv", ".txt")
# Compressed text cannot be split into byte ranges: one partition per file.
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zip")
LABEL_COLUMN = "label"


def _require_dask():
    """Import dask's dataframe and distributed parts, naming the extra if absent."""
    require("dask.dataframe", "the dask backend")
    require("distributed", "the dask backend")


# --------------------------------------------------------------- partitions
def count_block(grid, block) -> tuple[np.ndarray, np.ndarray]:
    """Exact counts of one partition, by the same rule as in-memory data.

    ``clean_points`` drops rows with NaN/inf and clips the rest into the box;
    each record's fate depends on that record alone, so applying it partition
    by partition gives the same multiset of cleaned points as applying it once.
    """
    X = np.asarray(block, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != grid.d:
        raise ValueError(
            f"a partition has shape {X.shape}, expected (n, {grid.d}) for a {grid.d}-D grid"
        )
    cells = NumpyBackend().count(grid, X)  # applies clean_points
    return cells.keys, cells.counts


def count_frame(grid, frame, columns) -> tuple[np.ndarray, np.ndarray]:
    """:func:`count_block` of the coordinate ``columns`` of a pandas partition."""
    X = frame[list(columns)].to_numpy(dtype=np.float64, na_value=np.nan)
    return count_block(grid, X)


def merge_counts(*parts) -> tuple[np.ndarray, np.ndarray]:
    """Merge sorted ``(keys, counts)`` pairs into one, summing equal keys.

    Works for int64 keys and for the packed ``void`` keys of wide grids (their
    byte order is the order of the coordinates, so a stable sort is enough).
    """
    keys = np.concatenate([k for k, _ in parts])
    counts = np.concatenate([c for _, c in parts]).astype(np.int64, copy=False)
    if keys.size == 0:
        return keys, counts
    # The inputs are sorted runs; a stable sort (timsort/radix) exploits that.
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return keys[starts], np.add.reduceat(counts, starts)


# ------------------------------------------------------------------ columns
def coordinate_columns(names, dtypes, columns, d: int | None) -> list:
    """The coordinate columns of a table: ``columns`` if given, else every
    numeric column except one named ``"label"``; their number must be ``d``
    (not checked when ``d`` is None)."""
    import pandas as pd

    names = list(names)
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"columns {missing} not found; the data has columns {names}")
        chosen = columns
    else:
        chosen = [
            c for c in names
            if c != LABEL_COLUMN and pd.api.types.is_numeric_dtype(dtypes[c])
            and not pd.api.types.is_bool_dtype(dtypes[c])
        ]
    if d is not None and len(chosen) != d:
        raise ValueError(
            f"the grid has d={d} dimensions (from bounds) but {len(chosen)} coordinate "
            f"columns were selected: {chosen} (data columns: {names}); pass columns=[...]"
        )
    return chosen


# -------------------------------------------------------------------- files
def _as_paths(X):
    """A list of path strings if ``X`` names files (str, PathLike or a list)."""
    if isinstance(X, (str, os.PathLike)):
        return [os.fspath(X)]
    if isinstance(X, (list, tuple)) and X and all(isinstance(p, (str, os.PathLike)) for p in X):
        return [os.fspath(p) for p in X]
    return None


def _strip_compression(path: str) -> str:
    low = path.lower().rstrip("/")
    for suf in _COMPRESSION_SUFFIXES:
        if low.endswith(suf):
            return low[: -len(suf)]
    return low


def file_format(paths, file_format=None) -> str:
    """"parquet" or "csv", from ``file_format`` or the file suffixes.

    A local directory, or a path without a known suffix that is not a local
    file, is taken as a Parquet dataset directory.
    """
    if file_format is not None:
        if file_format not in ("parquet", "csv"):
            raise ValueError(f"file_format must be 'parquet', 'csv' or None, got {file_format!r}")
        return file_format
    kinds = set()
    for p in paths:
        base = _strip_compression(p)
        if base.endswith(_PARQUET_SUFFIXES):
            kinds.add("parquet")
        elif base.endswith(_CSV_SUFFIXES):
            kinds.add("csv")
        elif os.path.isdir(p) or not os.path.exists(p):
            kinds.add("parquet")
        else:
            raise ValueError(f"cannot tell the format of {p!r}; pass file_format='parquet' or 'csv'")
    if len(kinds) != 1:
        raise ValueError(f"paths mix Parquet and CSV files: {paths}; count them separately")
    return kinds.pop()


class DaskBackend:
    """Counts cells on a Dask cluster: files, dask DataFrames or dask arrays.

    Parameters
    ----------
    scheduler : str, default=None
        Address of a running scheduler, e.g. ``"tcp://scheduler.example.org:8786"``. With
        neither ``scheduler`` nor ``client``, each :meth:`count` starts a
        ``LocalCluster`` and closes it afterwards; use the backend as a context
        manager to keep one cluster for several fits.
    columns : list of str, default=None
        Coordinate columns of files and dataframes. By default every numeric
        column except one named ``"label"``, in file order. For CSV the
        numeric test uses dask's dtype inference on the first block; pass
        ``columns`` to make the choice independent of the data.
    client : distributed.Client, default=None
        An existing client to use (never closed by this backend).
    n_workers, threads_per_worker, processes : default 2, 1, False
        Shape of the ``LocalCluster`` started when no scheduler is given.
        Threads, not processes, by measurement (docs/dask.md): on one
        machine the work is numpy and pyarrow, which release the GIL, and a
        thread cluster starts in milliseconds instead of seconds.
    file_format : {"parquet", "csv"}, default=None
        Format of the files; by default from their suffix.
    split_every : int, default=8
        Fan-in of the tree that merges per-partition counts.
    blocksize : str or int, default="64MiB"
        Partition size for uncompressed CSV (compressed files: one per file).
    storage_options : dict, default=None
        Passed to fsspec (credentials and the like for ``s3://``, ``gs://``...).

    Notes
    -----
    ``count(grid, X)`` returns exactly
    ``NumpyBackend().count(grid, clean_points(grid, X_in_memory))``. Input
    already in the driver's memory (numpy, pandas) is counted on the driver
    with the numpy backend: shipping it to workers costs more than counting it.
    """

    name = "dask"

    def __init__(self, scheduler=None, columns=None, client=None, *, n_workers=2,
                 threads_per_worker=1, processes=False, file_format=None, split_every=8,
                 blocksize="64MiB", storage_options=None):
        _require_dask()
        if scheduler is not None and client is not None:
            raise ValueError("pass either scheduler or client, not both")
        if not isinstance(split_every, int) or split_every < 2:
            raise ValueError(f"split_every must be an integer >= 2, got split_every={split_every!r}")
        self.scheduler = scheduler
        self.columns = columns
        self.client = client
        self.n_workers = n_workers
        self.threads_per_worker = threads_per_worker
        self.processes = processes
        self.file_format = file_format
        self.split_every = split_every
        self.blocksize = blocksize
        self.storage_options = storage_options
        self._session_client = None
        self._session_cluster = None

    # ----------------------------------------------------------- lifecycle
    def _connect(self):
        """A new (client, cluster-or-None); the caller closes both."""
        from distributed import Client, LocalCluster

        if self.scheduler is not None:
            return Client(self.scheduler, set_as_default=False), None
        # The scheduler's HTTP server on a free port: 8787 may be taken by
        # another cluster on the machine, and the fallback warns.
        cluster = LocalCluster(
            n_workers=self.n_workers, threads_per_worker=self.threads_per_worker,
            processes=self.processes, dashboard_address=":0",
        )
        try:
            return Client(cluster, set_as_default=False), cluster
        except BaseException:
            cluster.close()
            raise

    def __enter__(self):
        if self.client is None and self._session_client is None:
            self._session_client, self._session_cluster = self._connect()
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Close the client and cluster this backend started (if any)."""
        client, cluster = self._session_client, self._session_cluster
        self._session_client = self._session_cluster = None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    @contextlib.contextmanager
    def _client(self):
        if self.client is not None:
            yield self.client
        elif self._session_client is not None:
            yield self._session_client
        else:
            client, cluster = self._connect()
            try:
                yield client
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()

    # -------------------------------------------------------------- counting
    def count(self, grid, X) -> CellCounts:
        """Exact counts of the occupied cells of ``X`` (keys sorted ascending)."""
        local = self._local_block(grid, X)
        if local is not None:
            return NumpyBackend().count(grid, local)
        tasks = self._partition_tasks(grid, X)
        if not tasks:
            return CellCounts(np.empty(0, dtype=grid.key_dtype), np.zeros(0, dtype=np.int64))
        final = self._tree(tasks)
        with self._client() as client:
            keys, counts = client.compute(final, sync=True)
        return CellCounts(np.asarray(keys, dtype=grid.key_dtype), np.asarray(counts, dtype=np.int64))

    def _local_block(self, grid, X):
        """``X`` as a float array if it already sits in driver memory, else None."""
        import pandas as pd

        if isinstance(X, pd.DataFrame):
            cols = coordinate_columns(X.columns, X.dtypes, self.columns, grid.d)
            return X[cols].to_numpy(dtype=np.float64, na_value=np.nan)
        if isinstance(X, np.ndarray):
            return np.asarray(X, dtype=np.float64)
        return None

    def _partition_tasks(self, grid, X) -> list:
        """One delayed ``(keys, counts)`` per partition of ``X``."""
        import dask
        import dask.array as da
        import dask.dataframe as dd

        count = dask.delayed(count_frame)
        paths = _as_paths(X)
        if paths is not None:
            X = self._read(paths, grid.d)
        if isinstance(X, dd.DataFrame):
            cols = coordinate_columns(X.columns, X.dtypes, self.columns, grid.d)
            return [count(grid, part, cols) for part in X[cols].to_delayed()]
        if isinstance(X, da.Array):
            if X.ndim != 2 or X.shape[1] != grid.d:
                raise ValueError(f"X must have shape (n, {grid.d}), got a dask array of shape {X.shape}")
            # A block must hold whole rows, so keep all features in one chunk.
            blocks = X.rechunk({1: -1}).to_delayed().ravel().tolist()
            return [dask.delayed(count_block)(grid, b) for b in blocks]
        raise TypeError(
            "the dask backend counts paths or globs of Parquet/CSV files (any fsspec URL), "
            f"dask DataFrames, dask arrays, numpy arrays or pandas DataFrames; got {type(X).__name__}"
        )

    def _read(self, paths, d):
        """Lazy dask DataFrame of the coordinate columns of the files."""
        import dask.dataframe as dd

        fmt = file_format(paths, self.file_format)
        schema = self._schema(paths, fmt)
        cols = coordinate_columns(schema.columns, schema.dtypes, self.columns, d)
        if fmt == "parquet":
            return dd.read_parquet(paths, columns=cols, storage_options=self.storage_options)
        # Read coordinates as float64 whatever the first block looked like,
        # so a part whose first rows are integers cannot change the dtype.
        return dd.read_csv(paths, usecols=cols, dtype={c: "float64" for c in cols},
                           blocksize=self._csv_blocksize(paths),
                           storage_options=self.storage_options)

    def _schema(self, paths, fmt):
        """Lazy dataframe whose columns and dtypes describe the files."""
        import dask.dataframe as dd

        if fmt == "parquet":
            return dd.read_parquet(paths, storage_options=self.storage_options)
        return dd.read_csv(paths, blocksize=self._csv_blocksize(paths),
                           storage_options=self.storage_options)

    def _csv_blocksize(self, paths):
        compressed = any(p.lower().endswith(_COMPRESSION_SUFFIXES) for p in paths)
        return None if compressed else self.blocksize

    def n_features(self, X) -> int | None:
        """Number of coordinates of ``X`` by the column rule (None if unknown).

        For files this reads their schema (column names and types), never
        their rows; the estimator can use it when ``bounds`` are scalars.
        """
        import dask.dataframe as dd
        import pandas as pd

        paths = _as_paths(X)
        if paths is not None:
            X = self._schema(paths, file_format(paths, self.file_format))
        if isinstance(X, (dd.DataFrame, pd.DataFrame)):
            return len(coordinate_columns(X.columns, X.dtypes, self.columns, None))
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2:
            return int(shape[1])
        return None

    def _tree(self, tasks):
        """Merge per-partition results ``split_every`` at a time."""
        import dask

        merge = dask.delayed(merge_counts)
        level = tasks
        while len(level) > 1:
            level = [merge(*level[i:i + self.split_every])
                     for i in range(0, len(level), self.split_every)]
        return level[0]

    def __repr__(self) -> str:
        where = self.scheduler or ("client" if self.client is not None else "LocalCluster")
        return f"DaskBackend({where!r}, columns={self.columns!r})"
