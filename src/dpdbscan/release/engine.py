"""Where per-partition work runs: the primitives the counting is written over.

The mechanism's counting is written once, over partitions of rows (or of
(unit, cell) pairs), with the primitives an engine provides, as
PipelineDP's backends do:

* ``read(reads)``: the planned reads of the input's partitions run where the
  data lives, each giving a partition and its tally of rows;
* ``shuffle(parts, meta, on)``: frames regrouped by the column ``on``, so
  that each partition holds every row of its values (a unit's pairs
  together);
* ``map(f, parts)``: ``f`` applied to every partition, where it lives;
* ``gather(parts)``: small per-partition results brought to the driver;
* ``reduce(parts, merge)``: the partitions merged into one value, and a
  refusal if the merge did not take every partition exactly once (a partial
  count would be released as if it were the whole data).

:class:`LocalEngine` runs them in this process, on a list; the Dask backend's
engine (:class:`dpdbscan.release.backends.dask_backend.DaskEngine`) runs them
on a cluster. What is done with the partitions is the same code on both:
the way from the reads to partitions of pairs by unit (:func:`pairs_by_unit`),
and the contribution bounds above all (the cells':
:func:`dpdbscan.release.bounding.bound_parts`; a series' table:
:func:`dpdbscan.release.periodtable.bound_table_parts`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..cells import keys as cell_keys


class Engine(Protocol):
    """The primitives :func:`dpdbscan.release.bounding.bound_parts` and its
    kind run on. Partitions are opaque to the caller: a list, futures on a
    cluster. A read is the engine's own (a call here, a task on a cluster);
    ``read`` runs them, a partition each."""

    def read(self, reads: Sequence[Any]) -> list[Any]: ...

    def shuffle(self, parts: Sequence[Any], meta: Any, on: str) -> list[Any]: ...

    def map(self, f: Callable[[Any], Any], parts: Sequence[Any]) -> list[Any]: ...

    def gather(self, parts: Sequence[Any]) -> list[Any]: ...

    def reduce(self, parts: Sequence[Any], merge: Callable[..., Any]) -> Any: ...


class LocalEngine:
    """The primitives in this process: partitions are the values themselves,
    a read is a call that returns its partition."""

    def read(self, reads: Sequence[Callable[[], Any]]) -> list[Any]:
        return [read() for read in reads]

    def shuffle(self, parts: Sequence[Any], meta: Any, on: str) -> list[Any]:
        """pandas frames regrouped by the hash of their column ``on``: as many
        partitions, each holding every row of its values of ``on``."""
        import pandas as pd

        if not parts:
            return []
        frame = pd.concat(list(parts), ignore_index=True) if len(parts) > 1 else parts[0]
        owner = pd.util.hash_pandas_object(frame[on], index=False).to_numpy() % np.uint64(len(parts))
        return [frame[owner == i].astype(meta.dtypes.to_dict()) for i in range(len(parts))]

    def map(self, f: Callable[[Any], Any], parts: Sequence[Any]) -> list[Any]:
        return [f(p) for p in parts]

    def gather(self, parts: Sequence[Any]) -> list[Any]:
        return list(parts)

    def reduce(self, parts: Sequence[Any], merge: Callable[..., Any]) -> Any:
        if not parts:
            raise ValueError("nothing to reduce: no partition")
        return parts[0] if len(parts) == 1 else merge(*parts)


def pairs_by_unit(
    engine: Engine, reads: Sequence[Any], meta: Any, summed: Callable[[Any], Any], on: str = "unit"
) -> tuple[list[Any], np.ndarray]:
    """Partitions each holding every pair of its units, and the reads' tally
    summed: the ``reads`` run (each gives ``(pairs, tally)``: a partition of
    (unit, ..., count) pairs, frames like ``meta``, and its tally, whose
    first entry counts the partitions), their pairs shuffled by the unit
    column ``on``, and each shuffled partition's partial counts summed by
    ``summed``, kept where it lives. Refused unless the tally counted every
    read exactly once."""
    read = engine.read(reads)
    parts, tallies = engine.map(_pairs_of_read, read), engine.map(_tally_of_read, read)
    tally = np.asarray(engine.reduce(tallies, sum_arrays))
    merged_exactly_once(int(tally[0]), len(reads))
    return engine.map(summed, engine.shuffle(parts, meta, on)), tally


def _pairs_of_read(read: tuple[Any, np.ndarray]) -> Any:
    return read[0]


def _tally_of_read(read: tuple[Any, np.ndarray]) -> np.ndarray:
    return read[1]


def sum_arrays(*arrays: np.ndarray) -> np.ndarray:
    """Tallies, or the tables of disjoint sets of units, added up."""
    return np.sum(arrays, axis=0)


def merge_counts(*parts: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Merge sorted ``(keys, counts)`` pairs into one, summing equal keys.

    Works for int64 keys and for the packed keys of wide grids (sorted on
    their words, :mod:`dpdbscan.cells.keys`).
    """
    keys = np.concatenate([k for k, _ in parts])
    counts = np.concatenate([c for _, c in parts]).astype(np.int64, copy=False)
    if keys.size == 0:
        return keys, counts
    # The inputs are sorted runs; a stable sort (timsort/radix) exploits that.
    order = cell_keys.argsort(keys)
    keys, counts = keys[order], counts[order]
    starts = cell_keys.run_starts(keys)
    return keys[starts], np.add.reduceat(counts, starts)


def merged_exactly_once(merged: int, n_parts: int) -> None:
    """Refuse a reduce that did not merge every partition exactly once: a
    partial count would be released as if it were the whole data."""
    if merged != n_parts:
        raise RuntimeError(
            f"the reduce merged {merged} partition result(s) for {n_parts} "
            "partition(s); refusing to release a partial or doubled count"
        )
