"""The (unit, cell) pairs of many rows and their counts, by sorting 32-bit
words in buckets of units instead of one 64-bit word per row.

A person-level count groups its rows by (unit, cell). With a million units
and a fine grid there are too many combinations for a table, so the rows are
sorted: one word per row, ``unit * key_space + cell_key``, then run-length
counted. Sorting 1e8 int64 words is the slowest step of such a fit (about
80 ns a row here, three times the whole event-level fit), because the array
is far larger than the caches and every word is 8 bytes.

The same order, cheaper: the units are cut into buckets of ``2**b``
consecutive codes, with ``2**b * key_space <= 2**32``, so that within a
bucket ``(code mod 2**b) * key_space + cell_key`` fits a uint32. One pass
over the rows in cache-sized chunks scatters each row's 32-bit word to its
bucket (a stable radix argsort of the chunk's small bucket numbers, then one
scatter to consecutive places in each bucket); each bucket (about 2**16 to a
few hundred thousand words) is then sorted alone and run-length counted
while it is in the caches, on two threads when there are two cores (numpy's
sort releases the GIL; the buckets are disjoint). Buckets come in unit order and a bucket's
words in (unit, cell) order, so the runs are exactly those of sorting the
64-bit words: the same pairs, in the same order, with the same counts. Only
the speed depends on the buckets, never the result.

When the rows' cell keys are not already an array, :func:`row_words` makes
them a chunk at a time and keeps only each row's 32-bit word (4 bytes a row
instead of the keys' 8), and :func:`runs_of_row_words` scatters, sorts and
counts those words as :func:`pair_runs` does.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Rows per chunk of the scatter: its temporaries stay in the caches.
CHUNK = 1 << 20
#: At most this many buckets (uint16 bucket numbers).
_MAX_BUCKETS = 1 << 16
#: About this many words per bucket, when the units allow: a sort of 2**16
#: words runs in the caches, 40 % faster per word than one of 2**20.
_BUCKET_WORDS = 1 << 16
_WORD = 1 << 32


def bucket_bits(n_units: int, space: int, n_rows: int | None = None) -> int | None:
    """log2 of the units per bucket: no more than keep a bucket's words below
    2**32, nor than the units need, nor (given ``n_rows``) than make buckets
    of about 2**16 rows on average or, when that is more, 256 buckets (their
    numbers then fit a byte, which the stable argsort sorts in one radix
    pass); None when even one unit's cells do not fit 32 bits or there would
    be more than 2**16 buckets. Only the speed depends on it, never the pairs."""
    per = _WORD // max(space, 1)
    if per < 1:
        return None
    top = max(n_units - 1, 0)
    bits = min(per.bit_length() - 1, top.bit_length())
    if n_rows:
        small = max((_BUCKET_WORDS * max(n_units, 1) // n_rows).bit_length() - 1, 0)
        fewest = (top >> 8).bit_length()  # bits that keep the buckets <= 256 (one radix pass)
        bits = min(bits, max(small, fewest))
    if (top >> bits) + 1 > _MAX_BUCKETS:
        return None
    return bits


def pair_runs(
    codes: np.ndarray,
    keys: np.ndarray,
    n_units: int,
    space: int,
    *,
    chunk: int = CHUNK,
    bits: int | None = None,
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(units, cells, counts) of the distinct (code, key) pairs of rows, sorted
    by unit code then cell key: what run-length counting the sorted words
    ``codes * space + keys`` gives. ``codes`` in [0, n_units), ``keys`` in
    [0, space), both int64 and of one length; neither is modified. None when
    the words do not fit (:func:`bucket_bits`): the caller sorts int64 words.
    ``bits`` (units per bucket, log2) and ``chunk`` are for tests; ``threads``
    sorts the buckets on that many threads (default: two when the machine has
    them)."""
    if bits is None:
        bits = bucket_bits(n_units, space, int(codes.size))
        if bits is None:
            return None
    elif (1 << bits) * space > _WORD:
        raise ValueError(f"2**{bits} units of {space} cells do not fit 32-bit words")
    n = int(codes.size)
    per_chunk = _bucket_sizes(codes, n_units, bits, chunk)

    def words_of(a: int, c: np.ndarray) -> np.ndarray:
        w = c & np.int64((1 << bits) - 1)
        w *= space
        w += keys[a : a + c.size]
        return w.astype(np.uint32)

    return _runs(codes, words_of, per_chunk, space, bits, chunk, threads, n)


@dataclass(frozen=True)
class RowWords:
    """Each row's 32-bit word ``(code mod 2**bits) * space + key``, in row
    order, and how many rows of each chunk fall in each bucket: the first
    pass of :func:`pair_runs`, kept with the ``codes``, ``space``, ``bits``
    and ``chunk`` it was made with, so that :meth:`runs` finishes it the
    same way (:func:`row_words` makes one)."""

    codes: np.ndarray
    words: np.ndarray
    per_chunk: np.ndarray
    space: int
    bits: int
    chunk: int

    def runs(self, *, threads: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`pair_runs` from the words: the same pairs, order and counts
        (``threads`` as there)."""
        words = self.words
        return _runs(
            self.codes,
            lambda a, c: words[a : a + c.size],
            self.per_chunk,
            self.space,
            self.bits,
            self.chunk,
            threads,
            int(self.codes.size),
        )

    def keys(self) -> np.ndarray:
        """The rows' int64 cell keys, read back from their words (a word's
        remainder by ``space``)."""
        keys = np.empty(self.words.size, dtype=np.int64)
        np.remainder(self.words, np.uint32(self.space), out=keys, casting="unsafe")
        return keys


def row_words(
    codes: np.ndarray,
    keys_of: Callable[[int, int], np.ndarray | None],
    n_units: int,
    space: int,
    bits: int,
    *,
    chunk: int = CHUNK,
) -> RowWords | None:
    """The first pass of :func:`pair_runs` when the cell keys are not an
    array but made a chunk at a time (``keys_of(a, b)``: the int64 keys of
    rows a to b, or None to give up, e.g. on a non-finite point): each row's
    32-bit word and the chunks' bucket sizes (:class:`RowWords`); None when
    ``keys_of`` gave up. The keys never exist for all rows at once (8 bytes
    a row), only their words (4). :meth:`RowWords.runs` finishes."""
    n = int(codes.size)
    low = np.int64((1 << bits) - 1)
    n_buckets = (max(n_units - 1, 0) >> bits) + 1
    words = np.empty(n, dtype=np.uint32)
    per_chunk = np.empty((len(range(0, n, chunk)), n_buckets), dtype=np.int64)
    for i, a in enumerate(range(0, n, chunk)):
        c = codes[a : a + chunk]
        k = keys_of(a, a + c.size)
        if k is None:
            return None
        w = c & low
        w *= space
        w += k
        words[a : a + c.size] = w
        per_chunk[i] = np.bincount(c >> bits, minlength=n_buckets)
    return RowWords(codes, words, per_chunk, space, bits, chunk)


def _bucket_sizes(codes: np.ndarray, n_units: int, bits: int, chunk: int) -> np.ndarray:
    """How many rows of each chunk go to each bucket."""
    n_buckets = (max(n_units - 1, 0) >> bits) + 1
    starts_of = range(0, int(codes.size), chunk)
    per_chunk = np.empty((len(starts_of), n_buckets), dtype=np.int64)
    for i, a in enumerate(starts_of):
        per_chunk[i] = np.bincount(codes[a : a + chunk] >> bits, minlength=n_buckets)
    return per_chunk


def _runs(
    codes: np.ndarray,
    words_of: Callable[[int, np.ndarray], np.ndarray],
    per_chunk: np.ndarray,
    space: int,
    bits: int,
    chunk: int,
    threads: int | None,
    n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scatter every chunk's 32-bit words (``words_of(start, codes of the
    chunk)``) to their buckets, then sort and run-length count each bucket."""
    n_buckets = per_chunk.shape[1]
    small = np.uint8 if n_buckets <= 256 else np.uint16
    size = per_chunk.sum(axis=0)
    end = np.cumsum(size)
    start = end - size
    words = np.empty(n, dtype=np.uint32)
    at = start.copy()
    for i, a in enumerate(range(0, n, chunk)):
        c = codes[a : a + chunk]
        w32 = words_of(a, c)
        if n_buckets == 1:
            words[a : a + c.size] = w32
            continue
        order = np.argsort((c >> bits).astype(small), kind="stable")  # a radix sort
        counts = per_chunk[i]
        # the chunk's rows of bucket j, in order, go to at[j], at[j] + 1, ...
        dest = np.repeat(at - (np.cumsum(counts) - counts), counts)
        dest += np.arange(c.size)
        words[dest] = w32[order]
        at += counts
    # each bucket sorted and run-length counted while it is in the caches
    runs = _for_buckets(
        functools.partial(_bucket_runs, words, space=space, bits=bits), start, end, threads, n
    )
    del words
    if not runs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    units, cells, counts_of = (np.concatenate(part) for part in zip(*runs))
    return units, cells, counts_of


def _bucket_runs(
    words: np.ndarray, j: int, a: int, b: int, *, space: int, bits: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bucket ``j`` (``words[a:b]``) sorted in place, then its (units, cells,
    counts): a run of equal words is one pair (runs never cross buckets)."""
    seg = words[a:b]
    seg.sort()
    new = np.empty(seg.size, dtype=bool)
    new[0] = True
    np.not_equal(seg[1:], seg[:-1], out=new[1:])
    first = np.flatnonzero(new)
    counts = np.diff(first, append=seg.size).astype(np.int64)
    units, cells = np.divmod(seg[first].astype(np.int64), space)
    units += j << bits
    return units, cells, counts


def sorted_in_groups(words: np.ndarray, sizes: np.ndarray, *, block: int = 1 << 16) -> np.ndarray:
    """``np.sort(words)`` for words already in order between consecutive
    groups of ``sizes`` (every word of a group below every word of the next,
    e.g. the group's index in the high bits), unequal only within groups:
    each run of whole groups of about ``block`` words is sorted alone (in
    the caches, on two threads for large inputs), which gives the same
    array as one sort of all of them."""
    ordered = np.array(words, copy=True)
    if ordered.size <= block:
        ordered.sort()
        return ordered
    ends = np.cumsum(sizes)
    # cut after the last group that ends by each multiple of ``block``
    cuts = np.unique(ends[np.searchsorted(ends, np.arange(block, ordered.size, block), side="right") - 1])
    bounds = np.concatenate(([0], cuts[(cuts > 0) & (cuts < ordered.size)], [ordered.size]))
    bounds = np.unique(bounds)
    _sort_buckets(ordered, bounds[:-1], bounds[1:], None)
    return ordered


def _sort_buckets(words: np.ndarray, start: np.ndarray, end: np.ndarray, threads: int | None) -> None:
    """Sort ``words[start[j]:end[j]]`` in place for every bucket j."""

    def sort(words: np.ndarray, j: int, a: int, b: int) -> None:
        words[a:b].sort()

    _for_buckets(functools.partial(sort, words), start, end, threads, int(words.size))


def _for_buckets(
    work: Callable[[int, int, int], Any], start: np.ndarray, end: np.ndarray, threads: int | None, n: int
) -> list:
    """``work(j, start[j], end[j])`` for every non-empty bucket j, in order,
    on ``threads`` threads (default: two when the machine has two cores and
    there are 2**22 words or more); the results in bucket order."""
    spans = [(j, int(a), int(b)) for j, (a, b) in enumerate(zip(start, end)) if b > a]
    if threads is None:
        threads = 2 if (os.cpu_count() or 1) >= 2 and n >= 1 << 22 else 1
    if threads <= 1 or len(spans) < 2:
        return [work(*s) for s in spans]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda s: work(*s), spans))


__all__ = ["CHUNK", "RowWords", "bucket_bits", "pair_runs", "row_words", "sorted_in_groups"]
