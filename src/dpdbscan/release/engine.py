"""Where per-partition work runs: the primitives the counting is written over.

The mechanism's counting is written once, over partitions of rows (or of
(unit, cell) pairs), with three primitives an engine provides:

* ``map(f, parts)``: ``f`` applied to every partition, where it lives;
* ``gather(parts)``: small per-partition results brought to the driver;
* ``reduce(parts, merge)``: the partitions merged into one value, and a
  refusal if the merge did not take every partition exactly once (a partial
  count would be released as if it were the whole data).

:class:`LocalEngine` runs them in this process, on a list; the Dask backend's
engine (:class:`dpdbscan.release.backends.dask_backend.DaskEngine`) runs them
on a cluster, where it also runs the backend's planned reads of partitions
and shuffles pairs by unit. What is done with the partitions, the
contribution bounds above all (the cells':
:func:`dpdbscan.release.bounding.bound_parts`; a series' table:
:func:`dpdbscan.release.periodtable.bound_table_parts`), is the same code on both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..cells import keys as cell_keys


class Engine(Protocol):
    """The primitives :func:`dpdbscan.release.bounding.bound_parts` and its
    kind run on. Partitions are opaque to the caller: a list, futures on a
    cluster."""

    def map(self, f: Callable[[Any], Any], parts: Sequence[Any]) -> list[Any]: ...

    def gather(self, parts: Sequence[Any]) -> list[Any]: ...

    def reduce(self, parts: Sequence[Any], merge: Callable[..., Any]) -> Any: ...


class LocalEngine:
    """The primitives in this process: partitions are the values themselves."""

    def map(self, f: Callable[[Any], Any], parts: Sequence[Any]) -> list[Any]:
        return [f(p) for p in parts]

    def gather(self, parts: Sequence[Any]) -> list[Any]:
        return list(parts)

    def reduce(self, parts: Sequence[Any], merge: Callable[..., Any]) -> Any:
        if not parts:
            raise ValueError("nothing to reduce: no partition")
        return parts[0] if len(parts) == 1 else merge(*parts)


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
