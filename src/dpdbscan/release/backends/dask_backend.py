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

Files are read by the same rules as the command line (:mod:`dpdbscan.files`):
the format comes from the ``file_format`` option or the file names, the CSV
layout from the options and a *declared* header (:func:`files.layout.csv_layout`),
or from the Parquet schema, never from a record; each CSV record is parsed
alone (:mod:`dpdbscan.files.records`): a value that is not a number reads as
NaN and its row is dropped; no error quotes a value. Every partition's result
carries a tally, and the driver refuses a reduce that did not merge every
partition exactly once.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any, Self

import numpy as np

from ..._optional import require
from ...cells.grid import Grid
from ...files.formats import LABEL_COLUMN, format_of, is_index_column
from ...files.layout import ReadOptions, csv_layout
from ...files.records import (
    BlockCounts,
    CsvLayout,
    coerce_binary,
    header_fields,
    parse_block,
    split_first_line,
)
from .base import CellCounts
from .numpy_backend import NumpyBackend

_BOM = b"\xef\xbb\xbf"


def _require_dask():
    """Import dask's dataframe and distributed parts, naming the extra if absent."""
    require("dask.dataframe", "the dask backend")
    require("distributed", "the dask backend")


# --------------------------------------------------------------- partitions
def count_block(grid: Grid, block: Any) -> tuple[np.ndarray, np.ndarray]:
    """Exact counts of one partition, by the same rule as in-memory data.

    ``clean_points`` drops rows with NaN/inf and clips the rest into the box;
    each record's fate depends on that record alone, so applying it partition
    by partition gives the same multiset of cleaned points as applying it once.
    """
    X = np.asarray(block, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != grid.d:
        raise ValueError(f"a partition has shape {X.shape}, expected (n, {grid.d}) for a {grid.d}-D grid")
    cells = NumpyBackend().count(grid, X)  # applies clean_points
    return cells.keys, cells.counts


def count_frame(grid: Grid, frame: Any, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`count_block` of the coordinate ``columns`` of a pandas partition."""
    X, _ = frame_points(frame, columns)
    return count_block(grid, X)


def frame_points(frame: Any, columns: Sequence[str]) -> tuple[np.ndarray, int]:
    """The ``columns`` of a pandas frame as floats, and how many rows had a
    value that is not a number. Numeric columns convert directly; others
    (text, objects) value by value, a value that is not a number becoming
    NaN: a conversion error would stop the count and quote the value."""
    import pandas as pd

    X = np.empty((len(frame), len(columns)))
    bad = np.zeros(len(frame), dtype=bool)
    for j, c in enumerate(columns):
        s = frame[c]
        if pd.api.types.is_numeric_dtype(s.dtype):
            X[:, j] = s.to_numpy(dtype=np.float64, na_value=np.nan)
            continue
        import pyarrow as pa

        missing = s.isna().to_numpy(dtype=bool)
        texts = s.astype(str).to_numpy(dtype=object)
        texts[missing] = None
        X[:, j], unparseable = coerce_binary(pa.array(texts, type=pa.string()))
        bad |= unparseable
    return X, int(bad.sum())


def merge_counts(*parts: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
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


# A partition's result is (keys, counts, tally); the tally is
# [partitions, rows read, rows with unparseable values, malformed lines],
# summed by the merges, so the driver can check that every partition was
# merged exactly once.
def _tally(rows: int, unparseable: int = 0, malformed: int = 0) -> np.ndarray:
    return np.array([1, rows, unparseable, malformed], dtype=np.int64)


def _frame_part(grid, frame, columns):
    X, bad = frame_points(frame, columns)
    return (*count_block(grid, X), _tally(len(X), bad))


def _array_part(grid, block):
    return (*count_block(grid, block), _tally(len(block)))


def _csv_part(grid, data: bytes, layout: CsvLayout, header: list | None, first: bool, where: str):
    """Count one block of CSV text. ``first`` marks a file's first block:
    a byte order mark is dropped there and, when ``header`` (the declared
    header's names) is given, the first line is checked and dropped."""
    if first:
        data = data[3:] if data.startswith(_BOM) else data
    if first and header is not None and data.strip(b"\r\n"):
        line, data = split_first_line(data.lstrip(b"\r\n"))
        if header_fields(line, layout.delimiter) != header:
            raise ValueError(
                f"{where}: its header differs from the first file's "
                f"({', '.join(header)}); count such files separately"
            )
    X, counts = parse_block(data, layout)
    return (*count_block(grid, X), _tally(counts.rows, counts.unparseable, counts.malformed))


def _merge_parts(*parts):
    keys, counts = merge_counts(*[(k, c) for k, c, _ in parts])
    return keys, counts, np.sum([t for _, _, t in parts], axis=0)


# ------------------------------------------------------------------ columns
def coordinate_columns(
    names: Sequence[str], numeric: Sequence[bool] | None, columns: Sequence[str] | str | None, d: int | None
) -> list:
    """The coordinate columns of a table: ``columns`` if given, else every
    column except one named ``"label"`` and unnamed index columns that is
    declared numeric (``numeric``: one flag per name, from the schema; None
    for CSV, whose header declares no types: every column counts). Their
    number must be ``d`` (not checked when ``d`` is None)."""
    names = list(names)
    numeric = [True] * len(names) if numeric is None else list(numeric)
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"columns {missing} not found; the data has columns {names}")
        chosen = columns
    else:
        chosen = [
            c
            for c, num in zip(names, numeric)
            if str(c).lower() != LABEL_COLUMN and not is_index_column(c) and num
        ]
    if d is not None and len(chosen) != d:
        raise ValueError(
            f"the grid has d={d} dimensions (from bounds) but {len(chosen)} coordinate "
            f"columns were selected: {chosen} (data columns: {names}); pass columns=[...]"
        )
    return chosen


def _numeric_flags(dtypes, names) -> list[bool]:
    """Declared-numeric flags of a dataframe's schema (bool is not a coordinate)."""
    import pandas as pd

    return [
        pd.api.types.is_numeric_dtype(dtypes[c]) and not pd.api.types.is_bool_dtype(dtypes[c]) for c in names
    ]


# -------------------------------------------------------------------- files
def _as_paths(X):
    """A list of path strings if ``X`` names files (str, PathLike or a list)."""
    if isinstance(X, (str, os.PathLike)):
        return [os.fspath(X)]
    if isinstance(X, (list, tuple)) and X and all(isinstance(p, (str, os.PathLike)) for p in X):
        return [os.fspath(p) for p in X]
    return None


def file_format(paths: Sequence[str], file_format: str | None = None) -> str:
    """ "parquet" or "csv", from ``file_format`` or the file names (never
    their contents, :func:`dpdbscan.files.format_of`).

    A local directory, or a path without a known extension that is not a
    local file (a URL of a dataset), is taken as a Parquet dataset directory.
    """
    kinds = set()
    for p in paths:
        try:
            kinds.add(format_of(p, file_format).kind)
        except ValueError:
            if os.path.isdir(p) or not os.path.exists(p):
                kinds.add("parquet")
            else:
                raise
    if kinds - {"csv", "parquet"}:
        raise ValueError(f"the dask backend reads Parquet and CSV files, not {sorted(kinds)}")
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
        Coordinate columns of files and dataframes. By default every column
        except one named ``"label"`` and unnamed index columns, in file
        order: for CSV every such column of the header, for Parquet and
        dataframes every such column whose declared type is numeric. Never
        decided by the values.
    client : distributed.Client, default=None
        An existing client to use (never closed by this backend).
    n_workers, threads_per_worker, processes : default 2, 1, False
        Shape of the ``LocalCluster`` started when no scheduler is given.
        Threads, not processes, by measurement (docs/dask.md): on one
        machine the work is numpy and pyarrow, which release the GIL, and a
        thread cluster starts in milliseconds instead of seconds.
    file_format : str, default=None
        Format of the files (``"parquet"``, ``"csv"``, ``"tsv"``, or with
        ``".gz"``); by default from their names, never their contents.
    split_every : int, default=8
        Fan-in of the tree that merges per-partition counts.
    blocksize : str or int, default="64MiB"
        Partition size for uncompressed CSV (compressed files: one per file).
    storage_options : dict, default=None
        Passed to fsspec (credentials and the like for ``s3://``, ``gs://``...).
    delimiter : str, default=None
        CSV delimiter; by default tab for ``.tsv`` files, else ``,``.
    header : bool, default=None
        Whether CSV files start with a header line. CSV input needs it (or
        column names in ``columns``, which imply a header): a file's own lines
        never decide how it is read (:mod:`dpdbscan.files.layout`).
    fields : int, default=None
        Fields on each line of CSV files without a header; by default the
        number of coordinates (``d``) when ``columns`` are not given.
    timeout : float, default=10
        Seconds to wait for the ``scheduler`` to answer before giving up with
        a ``ConnectionError`` (a stopped scheduler must not hang the fit).

    Attributes
    ----------
    input_counts : BlockCounts or None
        After a count of files or dask collections: rows read, rows with a
        value that is not a number, malformed CSV lines (all dropped by the
        per-record rule). Private: for the data owner's notes only.

    Notes
    -----
    ``count(grid, X)`` returns exactly
    ``NumpyBackend().count(grid, clean_points(grid, X_in_memory))``. Input
    already in the driver's memory (numpy, pandas) is counted on the driver
    with the numpy backend: shipping it to workers costs more than counting it.
    """

    name = "dask"

    def __init__(
        self,
        scheduler: str | None = None,
        columns: Sequence[str] | str | None = None,
        client: Any = None,
        *,
        n_workers: int = 2,
        threads_per_worker: int = 1,
        processes: bool = False,
        file_format: str | None = None,
        split_every: int = 8,
        blocksize: str | int = "64MiB",
        storage_options: dict | None = None,
        delimiter: str | None = None,
        header: bool | None = None,
        fields: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        _require_dask()
        if scheduler is not None and client is not None:
            raise ValueError("pass either scheduler or client, not both")
        if not isinstance(split_every, int) or split_every < 2:
            raise ValueError(f"split_every must be an integer >= 2, got split_every={split_every!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got timeout={timeout!r}")
        # checked now, not at the first fit
        self._read_options(columns, header, delimiter, fields, file_format)
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
        self.delimiter = delimiter
        self.header = header
        self.fields = fields
        self.timeout = timeout
        self.input_counts: BlockCounts | None = None
        self._session_client = None
        self._session_cluster = None

    # ----------------------------------------------------------- lifecycle
    def _connect(self):
        """A new (client, cluster-or-None); the caller closes both."""
        from distributed import Client, LocalCluster

        if self.scheduler is not None:
            try:
                return Client(self.scheduler, set_as_default=False, timeout=self.timeout), None
            except (OSError, TimeoutError) as exc:
                raise ConnectionError(
                    f"cannot reach the Dask scheduler at {self.scheduler} within "
                    f"{self.timeout:g} s ({type(exc).__name__}); is it running, and is the "
                    "address right? (DaskBackend(timeout=...) waits longer)"
                ) from None
        # The scheduler's HTTP server on a free port: 8787 may be taken by
        # another cluster on the machine, and the fallback warns.
        cluster = LocalCluster(
            n_workers=self.n_workers,
            threads_per_worker=self.threads_per_worker,
            processes=self.processes,
            dashboard_address=":0",
        )
        try:
            return Client(cluster, set_as_default=False), cluster
        except BaseException:
            cluster.close()
            raise

    def __enter__(self) -> Self:
        if self.client is None and self._session_client is None:
            self._session_client, self._session_cluster = self._connect()
        return self

    def __exit__(self, *exc: object) -> None:
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
    def count(self, grid: Grid, X: Any) -> CellCounts:
        """Exact counts of the occupied cells of ``X`` (keys sorted ascending)."""
        self.input_counts = None
        local = self._local_block(grid, X)
        if local is not None:
            return NumpyBackend().count(grid, local)
        tasks = self._partition_tasks(grid, X)
        if not tasks:
            self.input_counts = BlockCounts()
            return CellCounts(np.empty(0, dtype=grid.key_dtype), np.zeros(0, dtype=np.int64))
        final = self._tree(tasks)
        with self._client() as client:
            keys, counts, tally = client.compute(final, sync=True)
        check_tally(tally, len(tasks))
        self.input_counts = BlockCounts(
            rows=int(tally[1]), unparseable=int(tally[2]), malformed=int(tally[3])
        )
        return CellCounts(np.asarray(keys, dtype=grid.key_dtype), np.asarray(counts, dtype=np.int64))

    def _local_block(self, grid, X):
        """``X`` as a float array if it already sits in driver memory, else None."""
        import pandas as pd

        if isinstance(X, pd.DataFrame):
            cols = coordinate_columns(X.columns, _numeric_flags(X.dtypes, X.columns), self.columns, grid.d)
            points, bad = frame_points(X, cols)
            self.input_counts = BlockCounts(rows=len(points), unparseable=bad)
            return points
        if isinstance(X, np.ndarray):
            return np.asarray(X, dtype=np.float64)
        return None

    def _partition_tasks(self, grid, X) -> list:
        """One delayed ``(keys, counts, tally)`` per partition of ``X``."""
        import dask
        import dask.array as da
        import dask.dataframe as dd

        paths = _as_paths(X)
        if paths is not None:
            if file_format(paths, self.file_format) == "csv":
                return self._csv_tasks(grid, paths)
            X = self._read_parquet(paths, grid.d)
        if isinstance(X, dd.DataFrame):
            cols = coordinate_columns(X.columns, _numeric_flags(X.dtypes, X.columns), self.columns, grid.d)
            part = dask.delayed(_frame_part)
            return [part(grid, p, cols) for p in X[cols].to_delayed()]
        if isinstance(X, da.Array):
            if X.ndim != 2 or X.shape[1] != grid.d:
                raise ValueError(f"X must have shape (n, {grid.d}), got a dask array of shape {X.shape}")
            # A block must hold whole rows, so keep all features in one chunk.
            blocks = X.rechunk({1: -1}).to_delayed().ravel().tolist()
            return [dask.delayed(_array_part)(grid, b) for b in blocks]
        raise TypeError(
            "the dask backend counts paths or globs of Parquet/CSV files (any fsspec URL), "
            f"dask DataFrames, dask arrays, numpy arrays or pandas DataFrames; got {type(X).__name__}"
        )

    # ----------------------------------------------------------------- files
    def _read_parquet(self, paths, d):
        """Lazy dask DataFrame of the coordinate columns of Parquet files."""
        import dask.dataframe as dd

        schema = self._parquet_schema(paths)
        numeric = _numeric_flags(schema.dtypes, schema.columns)
        cols = coordinate_columns(schema.columns, numeric, self.columns, d)
        for c in cols:
            if not numeric[list(schema.columns).index(c)]:
                raise ValueError(
                    f"column {c!r} is not numeric in the Parquet schema "
                    f"(type {schema.dtypes[c]}); choose numeric columns"
                )
        return dd.read_parquet(paths, columns=cols, storage_options=self.storage_options)

    def _parquet_schema(self, paths):
        import dask.dataframe as dd

        return dd.read_parquet(paths, storage_options=self.storage_options)

    @staticmethod
    def _read_options(columns, header, delimiter, fields, file_format) -> ReadOptions:
        if columns is not None and not isinstance(columns, (str, list, tuple)):
            raise ValueError(f"columns must be a name or a list of names, got columns={columns!r}")
        return ReadOptions(
            columns=None if columns is None else ((columns,) if isinstance(columns, str) else tuple(columns)),
            header=header,
            delimiter=delimiter,
            fields=fields,
            file_format=file_format,
        )

    def _csv_plan(self, paths, d):
        """``(names, layout, declared header or None, files, blocks)`` of CSV
        files, from the options and, when declared, the first file's header
        line (:func:`dpdbscan.files.layout.csv_layout`); no record is read."""
        from dask.bytes import read_bytes

        options = self._read_options(self.columns, self.header, self.delimiter, self.fields, self.file_format)
        fmt = format_of(paths[0], self.file_format)
        declared = options.has_header
        if declared is None:
            csv_layout(fmt, options, None, d, where=str(paths[0]))  # refused: say which option
        try:
            sample, blocks, files = read_bytes(
                paths,
                delimiter=b"\n",
                blocksize=self._csv_blocksize(paths),
                # the first line is read only when it is a declared header
                sample="64 kiB" if declared else False,
                compression=("gzip" if fmt.gzip else None) if self.file_format else "infer",
                include_path=True,
                **(self.storage_options or {}),
            )
        except (OSError, ValueError) as exc:
            if isinstance(exc, FileNotFoundError) or "no files" in str(exc):
                raise FileNotFoundError(f"no CSV files found at {paths}") from None
            raise
        line = None
        if declared:
            sample = sample[3:] if sample.startswith(_BOM) else sample
            first, _ = split_first_line(sample.lstrip(b"\r\n"))
            line = first if first.strip() else None
        names, layout = csv_layout(fmt, options, line, d, where=str(files[0]) if files else str(paths[0]))
        return names, layout, (names if declared else None), files, blocks

    def _csv_tasks(self, grid, paths) -> list:
        import dask

        names, layout, header, files, blocks = self._csv_plan(paths, grid.d)
        if len(layout.usecols) != grid.d:
            chosen = [names[i] for i in layout.usecols]
            raise ValueError(
                f"the grid has d={grid.d} dimensions (from bounds) but {len(chosen)} coordinate "
                f"columns were selected: {chosen} (columns: {names}); pass columns=[...]"
            )
        part = dask.delayed(_csv_part)
        return [
            part(grid, block, layout, header, i == 0, where)
            for where, file_blocks in zip(files, blocks)
            for i, block in enumerate(file_blocks)
        ]

    def _csv_blocksize(self, paths):
        # Compressed text cannot be split into byte ranges: one partition per file.
        compressed = any(format_of(p, self.file_format).gzip for p in paths)
        return None if compressed else self.blocksize

    def n_features(self, X: Any) -> int | None:
        """Number of coordinates of ``X`` by the column rule (None if unknown).

        For files this reads their schema (a CSV header line, Parquet
        footers), never their rows; the estimator can use it when ``bounds``
        are scalars.
        """
        import dask.dataframe as dd
        import pandas as pd

        paths = _as_paths(X)
        if paths is not None:
            if file_format(paths, self.file_format) == "csv":
                if self.header is False and self.fields is None and self.columns is None:
                    return None  # as many as the bounds say (d fields a line)
                return len(self._csv_plan(paths, None)[1].usecols)
            X = self._parquet_schema(paths)
        if isinstance(X, (dd.DataFrame, pd.DataFrame)):
            return len(coordinate_columns(X.columns, _numeric_flags(X.dtypes, X.columns), self.columns, None))
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2:
            return int(shape[1])
        return None

    def _tree(self, tasks):
        """Merge per-partition results ``split_every`` at a time."""
        import dask

        merge = dask.delayed(_merge_parts)
        level = tasks
        while len(level) > 1:
            level = [merge(*level[i : i + self.split_every]) for i in range(0, len(level), self.split_every)]
        return level[0]

    def __repr__(self) -> str:
        where = self.scheduler or ("client" if self.client is not None else "LocalCluster")
        return f"DaskBackend({where!r}, columns={self.columns!r})"


def check_tally(tally: np.ndarray, n_partitions: int) -> None:
    """Refuse a reduce that did not merge every partition exactly once: a
    partial count would be released as if it were the whole data."""
    merged = int(np.asarray(tally)[0])
    if merged != n_partitions:
        raise RuntimeError(
            f"the Dask reduce merged {merged} partition result(s) for {n_partitions} "
            "partition(s); refusing to release a partial or doubled count"
        )
