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
bucket ``(code mod 2**b) * key_space + cell_key`` fits a uint32.
:func:`bucketed` makes each row's word a chunk of rows at a time, with the
chunk's cell keys (which never exist for all rows at once), and scatters it
at once to its bucket: a stable radix argsort of the chunk's bucket numbers
(one byte each), then one slice copy per bucket; a first pass over the unit
codes has counted each chunk's rows per bucket. Each bucket (about 2**16 to
a few hundred thousand words) is then sorted and run-length counted while
it is in the caches, on two threads when there are two cores (numpy's sort
releases the GIL; the buckets are disjoint). A large bucket is sorted in
parts of consecutive units (:func:`_sorted_bucket`): a sort's cost per word
grows with its length. Buckets come in unit order and a bucket's words in
(unit, cell) order, so the runs are exactly those of sorting the 64-bit
words: the same pairs, in the same order, with the same counts. Only the
speed depends on the buckets, never the result.

A bucket holds whole units, so a person-level count can bound each bucket
alone as it comes (:meth:`Buckets.runs`, :func:`dpdbscan.release.bounding.count_units`):
the pairs of all units never exist at once.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Rows per chunk of the scatter: its temporaries stay in the caches (the
#: argsort of a chunk's bucket numbers and the gather of its words cost
#: 5 ns a row at 2**16 rows, 14 ns at 2**20 here).
CHUNK = 1 << 17
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


@dataclass(frozen=True)
class Buckets:
    """Rows' 32-bit (unit, cell) words grouped by bucket of units:
    ``words[start[j]:end[j]]`` holds bucket j's words ``(code mod 2**bits) *
    space + key``, the units of the bucket ``j * 2**bits`` to ``(j + 1) *
    2**bits - 1``. Private data."""

    words: np.ndarray
    start: np.ndarray
    end: np.ndarray
    bits: int
    space: int

    def codes_and_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """Every row's unit code and cell key (int64), bucket by bucket."""
        size = self.end - self.start
        codes = np.repeat(np.arange(size.size, dtype=np.int64) << self.bits, size)
        codes += self.words // np.uint32(self.space)
        keys = np.empty(self.words.size, dtype=np.int64)
        np.remainder(self.words, np.uint32(self.space), out=keys, casting="unsafe")
        return codes, keys

    def runs(
        self, work: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], threads: int | None = None
    ) -> Iterator[Any]:
        """``work(units, cells, counts)`` of every non-empty bucket, in order
        (yielded as they are done): the bucket sorted and run-length counted
        while it is in the caches (a run of equal words is one (unit, cell)
        pair; runs never cross buckets), its pairs sorted by unit code then
        cell key, all int64. On ``threads`` threads (default: two when the
        machine has two cores and there are 2**22 words or more)."""

        def one(j: int, a: int, b: int) -> Any:
            return work(*_bucket_runs(self.words, j, a, b, space=self.space, bits=self.bits))

        return _for_buckets(one, self.start, self.end, threads, int(self.words.size))

    def pairs(self, threads: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(units, cells, counts) of every bucket's runs, as three arrays:
        what run-length counting the sorted 64-bit words gives."""
        runs = list(self.runs(_as_is, threads))
        if not runs:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty.copy(), empty.copy()
        units, cells, counts = (np.concatenate(part) for part in zip(*runs))
        return units, cells, counts


def bucketed(
    codes: np.ndarray,
    keys_of: Callable[[int, int], np.ndarray | None],
    n_units: int,
    space: int,
    bits: int,
    *,
    chunk: int = CHUNK,
    threads: int | None = None,
) -> Buckets | None:
    """Every row's 32-bit word, scattered to its bucket in one pass over the
    rows in chunks: ``keys_of(a, b)`` gives the int64 cell keys of rows a to
    b (or None to give up, e.g. on a non-finite point: then None), made a
    chunk at a time, so that the keys never exist for all rows at once (8
    bytes a row), nor the words in row order; ``codes`` the rows' unit codes
    in [0, n_units). A first pass over ``codes`` counts each chunk's rows
    per bucket, which places every chunk's rows in every bucket. In a chunk
    the words are ordered by bucket (a stable radix argsort of the bucket
    numbers, one byte each up to 256 buckets) and copied to the buckets as
    slices. The chunks go to ``threads`` threads (default: as for the
    buckets' sorts), each writing its own places; ``keys_of`` must then be
    safe to call from two threads at once, in any order of the chunks."""
    n = int(codes.size)
    low = np.int64((1 << bits) - 1)
    per_chunk = _bucket_sizes(codes, n_units, bits, chunk)
    n_buckets = per_chunk.shape[1]
    small = np.uint8 if n_buckets <= 256 else np.uint16
    size = per_chunk.sum(axis=0)
    end = np.cumsum(size)
    start = end - size
    # where chunk i's rows of bucket j begin: after the earlier chunks' rows of j
    at_of = np.cumsum(per_chunk, axis=0)
    at_of -= per_chunk
    at_of += start
    words = np.empty(n, dtype=np.uint32)
    if n_buckets > 1:
        # touched in order first: the scattered first writes to fresh pages
        # below cost ten times more
        words.fill(0)
    gave_up = threading.Event()

    def scatter(i: int) -> None:
        a = i * chunk
        c = codes[a : a + chunk]
        k = None if gave_up.is_set() else keys_of(a, a + c.size)
        if k is None:
            gave_up.set()
            return
        w = c & low
        w *= space
        w += k
        if n_buckets == 1:
            words[a : a + c.size] = w
            return
        counts = per_chunk[i]
        by_bucket = w.astype(np.uint32)[np.argsort((c >> bits).astype(small), kind="stable")]
        at = at_of[i]
        if n_buckets <= _SLICED_BUCKETS:
            # the chunk's rows of bucket j, in order, go to at[j], at[j] + 1, ...
            o = 0
            for j in np.flatnonzero(counts).tolist():
                m = int(counts[j])
                t = int(at[j])
                words[t : t + m] = by_bucket[o : o + m]
                o += m
        else:
            dest = np.repeat(at - (np.cumsum(counts) - counts), counts)
            dest += np.arange(c.size)
            words[dest] = by_bucket

    for _ in _for_buckets(
        lambda i, a, b: scatter(i),
        np.arange(per_chunk.shape[0]),
        np.arange(per_chunk.shape[0]) + 1,
        threads,
        n,
    ):
        if gave_up.is_set():
            break
    return None if gave_up.is_set() else Buckets(words, start, end, bits, space)


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
    buckets = bucketed(codes, lambda a, b: keys[a:b], n_units, space, bits, chunk=chunk)
    assert buckets is not None  # keys_of never gives up
    return buckets.pairs(threads)


def _as_is(*runs: np.ndarray) -> tuple[np.ndarray, ...]:
    return runs


#: Up to this many buckets a chunk's words go to them as slices (a Python
#: loop over the buckets), above it by one scatter.
_SLICED_BUCKETS = 4096


def _bucket_sizes(codes: np.ndarray, n_units: int, bits: int, chunk: int) -> np.ndarray:
    """How many rows of each chunk go to each bucket."""
    n_buckets = (max(n_units - 1, 0) >> bits) + 1
    starts_of = range(0, int(codes.size), chunk)
    per_chunk = np.empty((len(starts_of), n_buckets), dtype=np.int64)
    for i, a in enumerate(starts_of):
        per_chunk[i] = np.bincount(codes[a : a + chunk] >> bits, minlength=n_buckets)
    return per_chunk


def _bucket_runs(
    words: np.ndarray, j: int, a: int, b: int, *, space: int, bits: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bucket ``j`` (``words[a:b]``) sorted (:func:`_sorted_bucket`), then its
    (units, cells, counts): a run of equal words is one pair (runs never
    cross buckets)."""
    seg = _sorted_bucket(words[a:b], space, bits)
    new = np.empty(seg.size, dtype=bool)
    new[0] = True
    np.not_equal(seg[1:], seg[:-1], out=new[1:])
    first = np.flatnonzero(new)
    counts = np.diff(first, append=seg.size).astype(np.int64)
    units, cells = np.divmod(seg[first].astype(np.int64), space)
    units += j << bits
    return units, cells, counts


#: Buckets of at least this many words are sorted in parts (:func:`_sorted_bucket`).
_SPLIT_WORDS = 1 << 14


def _sorted_bucket(seg: np.ndarray, space: int, bits: int) -> np.ndarray:
    """The words of one bucket of ``2**bits`` units, sorted: in place, or
    (large buckets) as a new array made in two steps. The words are split
    by their unit's top bits into up to 256 parts of consecutive units (a
    stable radix argsort of one byte, while the bucket is in the caches),
    and each part, about a thousand words, is sorted alone: a sort costs
    about 2.5 ns a word more for every doubling of its length (10 ns a word
    at 2**12 words, 26 ns at 2**18 here), and the parts come in unit order,
    so the result is the one sort of the whole bucket."""
    top = min(bits, 8)
    if seg.size < _SPLIT_WORDS or top == 0:
        seg.sort()
        return seg
    # a word is unit * space + key (key < space): its unit's top bits
    part = seg // np.uint32(space << (bits - top))
    sizes = np.bincount(part, minlength=1 << top)
    out = seg[np.argsort(part.astype(np.uint8), kind="stable")]
    a = 0
    for b in np.cumsum(sizes).tolist():
        if b - a > 1:
            out[a:b].sort()
        a = b
    return out


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

    for _ in _for_buckets(functools.partial(sort, words), start, end, threads, int(words.size)):
        pass


def _for_buckets(
    work: Callable[[int, int, int], Any], start: np.ndarray, end: np.ndarray, threads: int | None, n: int
) -> Iterator[Any]:
    """``work(j, start[j], end[j])`` for every non-empty bucket j, in order,
    on ``threads`` threads (default: two when the machine has two cores and
    there are 2**22 words or more); the results yielded in bucket order."""
    spans = [(j, int(a), int(b)) for j, (a, b) in enumerate(zip(start, end)) if b > a]
    if threads is None:
        threads = 2 if (os.cpu_count() or 1) >= 2 and n >= 1 << 22 else 1
    if threads <= 1 or len(spans) < 2:
        yield from (work(*s) for s in spans)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        yield from pool.map(lambda s: work(*s), spans)


__all__ = ["CHUNK", "Buckets", "bucket_bits", "bucketed", "pair_runs", "sorted_in_groups"]
