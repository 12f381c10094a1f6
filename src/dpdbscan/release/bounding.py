"""Contribution bounding per privacy unit, before anything is counted.

With a privacy unit (a person, a cab) the mechanism must hide everything one
unit contributes, not one row. Each unit's contribution to the cell counts is
bounded first:

* at most ``m = max_points_per_cell`` of its points count in any one cell
  (the count of a (unit, cell) pair is capped at m);
* at most ``k = max_cells_per_unit`` of the cells it occupies count at all,
  its busiest (``cell_choice="busiest"``) or k at random among them
  (``"uniform"``).

Adding or removing one unit then changes at most k counts, each by at most m:
the bounded count vector has L1 sensitivity k m and L2 sensitivity sqrt(k) m,
which is what the noise is calibrated to (:mod:`dpdbscan.plan.resolve`).

How the k cells are chosen: every (unit, cell) pair gets a random priority,
the first two 32-bit words of Philox4x32-10 at the counter (unit, cell) under
a 64-bit key drawn from the release's randomness source (the operating
system's CSPRNG unless a research seed is given), and each unit keeps its k
pairs of smallest priority: a uniformly random k-subset of its cells (ties
have probability about 2**-64 per pair and go to the smaller cell key). With
``cell_choice="busiest"`` it keeps its pairs of most points first, the
priority ordering only pairs of equal count: the busiest k, ties at random.
Either way a unit's choice reads its own pairs and the key, nothing else,
which is all the sensitivity argument needs (docs/privacy.md 1.2). The
priorities depend on the unit, the cell and the key only, never on the other
units or on the order or partitioning of the rows, so a backend that sees a
unit's rows together (the Dask backend, after a shuffle by unit) keeps exactly
the same pairs. The unit enters the counter as its integer value, the bits of
its float value, or a keyed BLAKE2b hash of its text; two units that share a
hash share priorities, which changes which cells are chosen, not the bound.

The per-record rule still applies first: a row with a non-finite coordinate
or a missing unit (None, NaN, an empty string is a unit like any other) is
dropped, every other row's point is clipped into the box.

Nothing here is released: the bounded counts go to exactly one noisy
histogram (:mod:`dpdbscan.release.mechanism`).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cells import keys as cell_keys
from ..cells.grid import Grid
from ..files.unitids import read_units
from ..params.specs import UnitBound
from .engine import Engine, LocalEngine, merge_counts
from .pairwords import CHUNK, Buckets, bucket_bits, bucketed, pair_runs, sorted_in_groups
from .samplers.integers import Source
from .samplers.philox import words64


@dataclass(frozen=True)
class BoundingKey:
    """The secret of one release's choice of cells: a Philox key and a
    BLAKE2b key for units given as text. Drawn once per release."""

    philox: tuple[int, int]
    text: bytes

    @classmethod
    def draw(cls, source: Source) -> BoundingKey:
        w = [int(x) for x in source.raw(3)]
        return cls((w[0] & 0xFFFFFFFF, w[0] >> 32), w[1].to_bytes(8, "little") + w[2].to_bytes(8, "little"))


@dataclass(frozen=True)
class Pairs:
    """The (unit, cell) pairs of a set of rows: for each, the unit's code
    (an index into ``uniques``), the cell's key and its number of points.
    Sorted by unit, then cell. ``unit_words``: each unit's word for the
    priorities (:func:`unit_words`). Private data."""

    units: np.ndarray
    keys: np.ndarray
    counts: np.ndarray
    unit_words: np.ndarray
    uniques: np.ndarray

    @classmethod
    def of_runs(
        cls, units: np.ndarray, keys: np.ndarray, counts: np.ndarray, uniques: np.ndarray, key: BoundingKey
    ) -> Pairs:
        """The pairs from the runs of a sort by (unit, cell): the units'
        codes, the cells' keys and their counts, in that order."""
        return cls(
            units=units, keys=keys, counts=counts, unit_words=unit_words(uniques, key), uniques=uniques
        )

    @property
    def n_units(self) -> int:
        return int(self.uniques.size)


def factorize(units: Any) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques): ``codes[i]`` the index of row i's unit in ``uniques``,
    -1 for a missing unit (None, NaN, null). The ids are read first by
    :func:`dpdbscan.files.unitids.read_units`, each on its own: an array typed
    by its owner (numpy, pandas, pyarrow) by that type, anything else (a list,
    an object array) id by id, so that no id decides how another is read.
    Numbers and text of a typed array are sorted; ids read one by one are
    kept in order of appearance."""
    u = read_units(units)
    if not isinstance(u, np.ndarray):
        return _factorize_arrow_array(u)
    if u.dtype.kind in "iub":
        return _factorize_ints(u.ravel())
    if u.dtype.kind in "US":
        uniq, codes = np.unique(u, return_inverse=True)
        return codes.astype(np.int64).ravel(), uniq
    if u.dtype.kind == "f":
        ok = ~np.isnan(u)
        uniq, inv = np.unique(u[ok], return_inverse=True)
        codes = np.full(u.size, -1, dtype=np.int64)
        codes[ok] = inv.ravel()
        return codes, uniq
    # canonical ids (read_units): one unit per distinct value, None missing
    fast = _factorize_text(u)
    if fast is not None:
        return fast
    index: dict = {}
    codes = np.empty(u.size, dtype=np.int64)
    for i, v in enumerate(u.tolist()):
        codes[i] = -1 if v is None else index.setdefault(v, len(index))
    uniq = np.empty(len(index), dtype=object)
    uniq[:] = list(index)
    return codes, uniq


def count_distinct_units(units: Any) -> int:
    """The number of distinct units with an id (private: for the data
    owner's notes after a release, never for a decision before one)."""
    u = read_units(units)
    if isinstance(u, np.ndarray) and u.dtype.kind in "iub":
        return int(_factorize_ints(u.ravel(), codes=False)[1].size)  # every value is a unit
    codes, uniques = factorize(u)
    # by counting, not np.unique: a codes' range is the uniques', and
    # numpy's hash-based unique is many times slower than a sort here
    return int(np.count_nonzero(np.bincount(codes[codes >= 0], minlength=len(uniques))))


def _factorize_ints(u: np.ndarray, codes: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """:func:`factorize` of integers (or booleans): the sorted distinct
    values and each row's index among them, by a lookup table over the
    values' range when it is not much larger than the rows (ids 0..n_units,
    the usual case: linear time), else by sorting. The same codes and
    uniques either way; ``codes=False``: the uniques only (empty codes)."""
    if u.size == 0:
        return np.zeros(0, dtype=np.int64), u[:0].copy()
    if u.dtype.kind == "b":
        u = u.view(np.uint8)
        found, uniq = _factorize_ints(u, codes)
        return found, uniq.astype(bool)
    lo, hi = int(u.min()), int(u.max())
    if hi - lo >= max(_BINCOUNT_MAX, u.size // 2):
        if not codes:  # sorted, not np.unique's hash table (slow on many values)
            s = np.sort(u)
            return np.zeros(0, dtype=np.int64), s[np.concatenate(([True], s[1:] != s[:-1]))]
        uniq, inverse = np.unique(u, return_inverse=True)
        return inverse.astype(np.int64).ravel(), uniq
    present = np.zeros(hi - lo + 1, dtype=bool)
    for start in range(0, u.size, _CHUNK):
        present[_offsets(u[start : start + _CHUNK], lo)] = True
    uniq = np.flatnonzero(present).astype(u.dtype) + u.dtype.type(lo)
    if not codes:
        return np.zeros(0, dtype=np.int64), uniq
    if uniq.size == present.size and lo == 0 and u.dtype == np.int64:
        # ids 0..n-1 are their own codes: a read-only view, not an 8-byte-a-row copy
        same = u.view()
        same.flags.writeable = False
        return same, uniq
    out = np.empty(u.size, dtype=np.int64)
    if uniq.size == present.size:  # every value of the range is an id: the codes are the offsets
        for start in range(0, u.size, _CHUNK):
            out[start : start + _CHUNK] = _offsets(u[start : start + _CHUNK], lo)
        return out, uniq
    lut = np.cumsum(present) - 1
    for start in range(0, u.size, _CHUNK):  # in chunks: no row-sized temporary
        # every offset is within the table: "wrap" never wraps, and unlike
        # "raise" it writes to ``out`` without an intermediate buffer
        np.take(lut, _offsets(u[start : start + _CHUNK], lo), out=out[start : start + _CHUNK], mode="wrap")
    return out, uniq


#: Rows per chunk where a row-sized temporary is avoided.
_CHUNK = 1 << 20


def _offsets(u: np.ndarray, lo: int) -> np.ndarray:
    """``u - lo`` as int64, for integers within 2**26 above ``lo`` (no wrap,
    uint64 included); ``u`` itself when that is it (not to be written to)."""
    if u.dtype == np.uint64:
        return (u - np.uint64(lo)).view(np.int64)
    if u.dtype == np.int64 and lo == 0:
        return u  # read only by the callers: no copy
    offset = u.astype(np.int64)
    offset -= lo
    return offset


def _factorize_text(u: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Canonical ids that are all text, or all integers within int64 (or
    missing), by pyarrow (about 10x faster than a Python loop on 11 million
    cab ids), when pyarrow is installed; None otherwise. Only these two
    cases are taken this way: each value is read as it would be alone (a
    str as its text, an int as its value, the word :func:`_word` gives it)."""
    try:
        import pyarrow as pa
    except ImportError:
        return None
    try:
        arr = pa.array(u, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, UnicodeError, OverflowError):
        return None
    if pa.types.is_int64(arr.type):
        return _factorize_arrow_array(pa.chunked_array([arr]))
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return None
    enc = arr.dictionary_encode()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    codes = np.where(np.isnan(codes), -1, codes) if codes.dtype.kind == "f" else codes
    uniq = np.empty(len(enc.dictionary), dtype=object)
    uniq[:] = enc.dictionary.to_pylist()
    return codes.astype(np.int64), uniq


#: Units of more bytes of text are hashed with 64-bit offsets (:func:`_factorize_arrow_array`).
LARGE_BYTES = 1 << 30


def _factorize_arrow_array(arr: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`factorize` of a pyarrow ChunkedArray, without a Python object
    per row. Text and binary by Arrow's hash table, their uniques as str or
    bytes (the same words as in memory, :func:`unit_words`); numbers through
    numpy (so 0.0 and -0.0 are one unit, as in memory); a dictionary column
    through its dictionary. Nulls, and NaN, are missing (-1)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = arr.type
    if pa.types.is_null(t):
        return np.full(len(arr), -1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if pa.types.is_dictionary(t):
        # every chunk's own dictionary, factorized together by value (a
        # dictionary may repeat a value, chunks may share or differ), not
        # unify_dictionaries: its one 32-bit dictionary overflows past 2 GiB
        # of distinct text (ArrowCapacityError: a traceback, one unit's long
        # id more than the read before; docs/privacy.md section 8, round 11)
        chunks = [c for c in arr.chunks if len(c)]
        dcodes, uniques = _factorize_arrow_array(
            pa.chunked_array([c.dictionary for c in chunks], t.value_type)
        )
        start = np.cumsum([0] + [len(c.dictionary) for c in chunks])
        codes = np.full(len(arr), -1, dtype=np.int64)
        at = 0
        for c, first in zip(chunks, start[:-1]):
            idx = pc.fill_null(c.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
            ok = idx >= 0
            codes[at : at + idx.size][ok] = dcodes[first + idx[ok]]
            at += idx.size
        return codes, uniques
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    ):
        if arr.nbytes > LARGE_BYTES and not (pa.types.is_large_string(t) or pa.types.is_large_binary(t)):
            # the distinct ids may hold more than the 2 GiB of a text array
            # (ArrowCapacityError: a traceback, one unit's 64 MiB id more than
            # the read before: docs/privacy.md section 8, round 10)
            arr = arr.cast(pa.large_string() if pa.types.is_string(t) else pa.large_binary())
        uniq = pc.drop_null(pc.unique(arr))
        found = pc.index_in(arr, value_set=uniq)
        if found.null_count:  # else fill_null would take 0.7 s over a folder's 10,250 chunks for nothing
            found = pc.fill_null(found, -1)
        codes = found.to_numpy().astype(np.int64)
        out = np.empty(len(uniq), dtype=object)
        out[:] = _texts(uniq)
        return codes, out
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_floating(t):
        missing = pc.is_null(arr, nan_is_null=True).to_numpy()
        target = (
            pa.float64()
            if pa.types.is_floating(t)
            else pa.uint64()
            if pa.types.is_unsigned_integer(t)
            else pa.int64()
        )
        values = pc.fill_null(arr.cast(target), pa.scalar(0, target)).to_numpy()
        uniq, inv = np.unique(values[~missing], return_inverse=True)
        codes = np.full(values.size, -1, dtype=np.int64)
        codes[~missing] = inv.ravel()
        return codes, uniq
    raise TypeError(f"units must be numbers or text (one id per row), got Arrow type {t}")


def _texts(uniq: Any) -> list:
    """The distinct ids of a text or binary Arrow array as Python values:
    str (or bytes) each. A text id whose bytes are not UTF-8 (Arrow does not
    check a Parquet file's strings) is its bytes, a unit as a CSV field's
    bytes are: one such id never fails the others' reading, and its word
    (:func:`unit_words`, its bytes hashed) is its own, as a valid id's text
    is hashed by its UTF-8 bytes."""
    try:
        return uniq.to_pylist()
    except UnicodeDecodeError:
        import pyarrow as pa

        raw = uniq.cast(pa.large_binary() if pa.types.is_large_string(uniq.type) else pa.binary())
        return [_text_or_bytes(b) for b in raw.to_pylist()]


def _text_or_bytes(b: bytes) -> str | bytes:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def unit_words(uniques: np.ndarray, key: BoundingKey) -> np.ndarray:
    """One 64-bit word per unit for the priorities' counter: an integer's
    value (modulo 2**64), a float's bits (-0.0 as 0.0), or a BLAKE2b hash of
    the text or bytes keyed with the release's key (the same in every
    process). Each unit's word depends on that unit alone, never on the
    other units: a word that moved with the others would move their cells."""
    u = np.asarray(uniques)
    if u.dtype.kind in "iub":
        return u.astype(np.int64).view(np.uint64)
    if u.dtype.kind == "f":
        return (u.astype(np.float64) + 0.0).view(np.uint64)
    out = np.empty(u.size, dtype=np.uint64)
    for i, v in enumerate(u.tolist()):
        out[i] = _word(v, key)
    return out


def _word(v: Any, key: BoundingKey) -> int:
    """:func:`unit_words` of one id (an int, a float, text or bytes)."""
    if isinstance(v, int) and -(2**63) <= v < 2**64:
        return v & 0xFFFFFFFFFFFFFFFF
    if isinstance(v, float):
        return int(np.float64(v + 0.0).view(np.uint64))
    text = v if isinstance(v, bytes) else str(v).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8, key=key.text).digest(), "little")


def cell_words(grid: Grid, keys: np.ndarray) -> np.ndarray:
    """One 64-bit word per cell key: the key itself, or (a universe too large
    for int64 keys) the key's coordinates folded through Philox."""
    if not grid.wide:
        return keys.view(np.uint64)
    coords = grid.decode(keys).view(np.uint64)
    w = coords[:, 0].copy()
    for i in range(1, grid.d):
        w = words64(w, coords[:, i], (0x243F6A88, 0x85A308D3))
    return w


def pairs_of(grid: Grid, X: np.ndarray, units: np.ndarray, key: BoundingKey) -> Pairs:
    """The (unit, cell) pairs of the rows of ``X`` (after the per-record rule)
    and their counts."""
    X = _rows_of(X, units)
    codes, uniques = factorize(units)
    return _pairs_of_codes(grid, X, codes, uniques, key, _bucketed_rows(grid, X, codes))


def _rows_of(X: Any, units: Any) -> np.ndarray:
    """``X`` as float64 rows, refused unless ``units`` has one id per row."""
    X = np.asarray(X, dtype=np.float64)
    if len(units) != X.shape[0]:
        raise ValueError(f"units has {len(units)} ids for {X.shape[0]} rows: give one id per row")
    return X


def _pairs_of_codes(
    grid: Grid,
    X: np.ndarray,
    codes: np.ndarray,
    uniques: np.ndarray,
    key: BoundingKey,
    bucketed_rows: tuple[Buckets, bool] | None,
) -> Pairs:
    """:func:`pairs_of` of rows whose units are coded (``codes`` indices into
    ``uniques``, -1 missing), from their words in buckets when
    :func:`_bucketed_rows` made them, else from the rows' whole key array."""
    if bucketed_rows is not None:
        return _pairs_of_buckets(grid, *bucketed_rows, uniques, key)
    keep, keys = kept_keys(grid, X, codes >= 0)
    if not keep.all():
        codes = codes[keep]
    elif not codes.flags.writeable:
        codes = codes.copy()
    direct = _sorted_row_pairs(grid, codes, keys, uniques, key)
    if direct is not None:
        return direct
    return summed_pairs(grid, codes, keys, None, uniques, key)


def kept_keys(grid: Grid, X: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-record rule of a person-level count, in memory and on every
    partition of a cluster alike: a row outside ``keep`` (its unit is
    missing) or with a non-finite coordinate is dropped, every other row's
    point is clipped into the box. Returns the rows kept (a mask) and their
    cell keys."""
    if not _all_finite(X):  # one pass in chunks; the rows' mask only when needed
        keep = keep & np.isfinite(X).all(axis=1)
    kept = X if keep.all() else X[keep]
    # every kept row is finite now: the keys clip into the box (clean_points'
    # rule, without its second pass over the points)
    return keep, grid.keys_of_points(kept)


def _all_finite(X: np.ndarray) -> bool:
    """``np.isfinite(X).all()`` without a temporary as large as ``X``."""
    flat = X.reshape(-1) if X.flags.c_contiguous else X
    step = _CHUNK if flat.ndim == 1 else max(1, _CHUNK // max(X.shape[1], 1))
    return all(bool(np.isfinite(flat[a : a + step]).all()) for a in range(0, flat.shape[0], step))


def summed_pairs(
    grid: Grid,
    codes: np.ndarray,
    keys: np.ndarray,
    counts: np.ndarray | None,
    uniques: np.ndarray,
    key: BoundingKey,
) -> Pairs:
    """The (unit, cell) pairs of entries that each name a unit (``codes``,
    indices into ``uniques``), a cell (``keys``) and a number of points
    (``counts``; None: one point each, a row), equal pairs summed: the
    :class:`Pairs` of the rows in memory (:func:`pairs_of`), or of the
    partial pairs a distributed backend gathered for a set of units (the
    Dask backend, after its shuffle by unit). Sorted by unit code, then cell
    key: the order :func:`kept_pairs` breaks priority ties in."""
    cell_keys, cell_codes = _codes(grid, keys)
    n_cells = max(int(cell_keys.size), 1)
    # (unit, cell) pairs as one int64 each: < n_rows * n_cells < 2**63 for any input that fits
    pair = codes * n_cells + cell_codes
    space = max(int(codes.max(initial=-1)) + 1, 1) * n_cells
    if counts is None and space <= max(_BINCOUNT_MAX, 4 * pair.size):
        # few units times few cells (Cabs: 536 x 44,000): counting beats sorting
        per_pair = np.bincount(pair, minlength=space)
        first = np.flatnonzero(per_pair)
        summed = per_pair[first].astype(np.int64)
    elif counts is None:
        pair.sort()
        first, summed = run_length(pair)
    else:
        order = np.argsort(pair)  # equal pairs are summed: no need for a stable sort
        pair = pair[order]
        starts = np.flatnonzero(np.concatenate(([pair.size > 0], pair[1:] != pair[:-1])))
        first = pair[starts]
        weights = np.asarray(counts, dtype=np.int64)[order]
        summed = np.add.reduceat(weights, starts) if starts.size else weights
    return Pairs.of_runs(first // n_cells, cell_keys[first % n_cells], summed, uniques, key)


_BINCOUNT_MAX = 1 << 26


def _sorted_row_pairs(
    grid: Grid, codes: np.ndarray, keys: np.ndarray, uniques: np.ndarray, key: BoundingKey
) -> Pairs | None:
    """:func:`summed_pairs` of rows (one point each) when there are too
    many (unit, cell) combinations to count in a table: one int64 word per
    row, unit code times the grid's key space plus the cell key itself (no
    lookup of the cells' ranks), sorted as 32-bit words in buckets of units
    (:func:`dpdbscan.release.pairwords.pair_runs`) or, when those do not
    fit, made in ``codes``' own memory (which this then overwrites) and
    sorted in place; then run-length counted. The same pairs, in the same
    order, as :func:`summed_pairs`. None (``codes`` untouched) when the table is small
    enough (:func:`summed_pairs` counts it) or the words would not fit in
    int64 (wide grids)."""
    if grid.wide or codes.size == 0:
        return None
    n_units = int(codes.max()) + 1
    space = grid.key_space
    if n_units * space >= 2**62:
        return None
    limit = max(_BINCOUNT_MAX, 4 * codes.size)
    if n_units * space <= limit:
        return None  # counted in a table of (unit, cell rank)
    if space <= limit and n_units * np.count_nonzero(np.bincount(keys, minlength=space)) <= limit:
        return None  # few occupied cells: the same table over the cells' ranks
    runs = pair_runs(codes, keys, n_units, space)
    if runs is not None:
        units, cells, summed = runs
    else:
        pair = codes
        pair *= space
        pair += keys
        pair.sort()
        first, summed = run_length(pair)
        del pair
        units, cells = np.divmod(first, space)
    return Pairs.of_runs(units, cells.astype(keys.dtype, copy=False), summed, uniques, key)


def _bucketed_rows(
    grid: Grid,
    X: np.ndarray,
    codes: np.ndarray,
    n_units: int | None = None,
    *,
    chunk: int = CHUNK,
    bits: int | None = None,
) -> tuple[Buckets, bool] | None:
    """The rows' 32-bit (unit, cell) words in buckets of units
    (:func:`dpdbscan.release.pairwords.bucketed`), without the rows' cell
    keys as one array (8 bytes a row): each chunk of rows gets its keys and
    at once its words, while it is in the caches. Also whether a table is
    smaller than sorting them (few units times the occupied cells, marked on
    the way until there are too many): then :func:`summed_pairs` counts the
    rows (:func:`_pairs_of_buckets`). ``n_units``: every code is known to be
    in [0, n_units) (None: read from ``codes``). None (nothing made) for the
    other paths of :func:`pairs_of`: when a row's unit is missing or a chunk
    has a non-finite point (the rows are then dropped first), when the table
    of units times the key space is small, when the words do not fit 32
    bits, or on wide grids. Which path runs depends on sizes and the rows'
    validity only, never the pairs it gives. ``chunk`` and ``bits`` (units
    per bucket, log2) are for tests."""
    if grid.wide or codes.size == 0:
        return None
    if n_units is None:
        if int(codes.min()) < 0:
            return None
        n_units = int(codes.max()) + 1
    space = grid.key_space
    limit = max(_BINCOUNT_MAX, 4 * codes.size)
    if n_units * space >= 2**62 or n_units * space <= limit:
        return None
    bits = bucket_bits(n_units, space, int(codes.size)) if bits is None else bits
    if bits is None:
        return None
    # the table of occupied cells serves when they are at most ``cap``: they
    # are marked until more than that are seen (then the words are sorted)
    cap = limit // n_units if space <= limit else -1
    occupied = np.zeros(space, dtype=bool) if cap >= 0 else None
    many = threading.Event()  # only ever set: the same answer whatever order the chunks come in
    if cap < 0:
        many.set()

    def keys_of(a: int, b: int) -> np.ndarray | None:
        rows = X[a:b]
        if not np.isfinite(rows).all():
            return None
        k = grid.keys_of_points(rows)
        if not many.is_set():
            assert occupied is not None
            occupied[k] = True  # chunks on two threads only ever write True
            if int(np.count_nonzero(occupied)) > cap:
                many.set()
        return k

    buckets = bucketed(codes, keys_of, n_units, space, bits, chunk=chunk)
    return None if buckets is None else (buckets, not many.is_set())


def _pairs_of_buckets(
    grid: Grid, buckets: Buckets, few: bool, uniques: np.ndarray, key: BoundingKey
) -> Pairs:
    """The pairs of :func:`_bucketed_rows`' words: each bucket sorted and
    run-length counted, or (``few``) the rows' codes and keys read back from
    the words and counted in :func:`summed_pairs`' table. The same pairs,
    order and counts as :func:`pairs_of`'s other paths."""
    if few:  # n_units * occupied cells <= limit
        codes, keys = buckets.codes_and_keys()
        return summed_pairs(grid, codes, keys, None, uniques, key)
    units, cells, summed = buckets.pairs()
    return Pairs.of_runs(units, cells.astype(grid.key_dtype, copy=False), summed, uniques, key)


def _row_pairs_of_points(
    grid: Grid,
    X: np.ndarray,
    codes: np.ndarray,
    uniques: np.ndarray,
    key: BoundingKey,
    *,
    chunk: int = CHUNK,
    bits: int | None = None,
) -> Pairs | None:
    """:func:`pairs_of` by :func:`_bucketed_rows`, or None when that path
    does not serve."""
    made = _bucketed_rows(grid, X, codes, chunk=chunk, bits=bits)
    return None if made is None else _pairs_of_buckets(grid, *made, uniques, key)


def run_length(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique keys and their multiplicities of an already sorted array."""
    n = sorted_keys.size
    if n == 0:
        return sorted_keys[:0], np.zeros(0, dtype=np.int64)
    starts = cell_keys.run_starts(sorted_keys)
    counts = np.diff(np.append(starts, n))
    return sorted_keys[starts], counts.astype(np.int64)


def _codes(grid: Grid, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique keys, each key's index among them): by a lookup table
    when the key space is small, else by sorting."""
    if not grid.wide and keys.size and grid.key_space <= max(_BINCOUNT_MAX, 4 * keys.size):
        occupied = np.flatnonzero(np.bincount(keys, minlength=grid.key_space))
        lut = np.empty(grid.key_space, dtype=np.int64)
        lut[occupied] = np.arange(occupied.size)
        return occupied.astype(keys.dtype), lut[keys]
    return cell_keys.unique(keys)


def kept_pairs(grid: Grid, pairs: Pairs, bound: UnitBound, key: BoundingKey) -> np.ndarray:
    """Which pairs the bound keeps: each unit's ``max_cells_per_unit`` pairs
    of smallest priority, or with ``cell_choice="busiest"`` of most points
    first (ties by priority); a boolean mask over ``pairs``."""

    def priorities(idx: np.ndarray) -> np.ndarray:
        return words64(pairs.unit_words[pairs.units[idx]], cell_words(grid, pairs.keys[idx]), key.philox)

    busiest = pairs.counts if bound.cell_choice == "busiest" else None
    return keep_smallest(pairs.units, int(bound.max_cells_per_unit), priorities, busiest=busiest)


def keep_smallest(
    units: np.ndarray,
    k: int,
    priorities: Callable[[np.ndarray], np.ndarray],
    *,
    busiest: np.ndarray | None = None,
) -> np.ndarray:
    """A mask keeping each unit's ``k`` pairs of smallest priority, over pairs
    sorted by unit (then key). ``priorities(idx)`` gives the priorities of the
    pairs at ``idx``; it is called only for the units with more than k pairs
    (the others keep them all). With ``busiest`` (each pair's own number of
    points), a unit keeps its pairs of most points first and the priority
    only breaks ties: still a choice that reads nothing but the unit's own
    pairs. Shared by the cells' bound and the periods'
    (:mod:`dpdbscan.release.periodtable`)."""
    n = units.size
    if n == 0:
        return np.zeros(0, dtype=bool)
    start = np.flatnonzero(np.concatenate(([True], units[1:] != units[:-1])))
    size = np.diff(np.append(start, n))
    over = np.repeat(size > k, size)
    keep = ~over
    if over.any():
        idx = np.flatnonzero(over)
        prio = priorities(idx)
        fewer = None
        if busiest is not None:
            points = np.asarray(busiest, dtype=np.int64)[idx]
            fewer = points.max() - points  # most points first: fewest missing
        fast = _smallest_by_threshold(size[size > k], k, prio, fewer)
        if fast is not None:
            keep[idx] = fast
            return keep
        # by unit, then (busiest: most points first) priority (then key, already the order within a unit)
        order = np.lexsort((prio, units[idx]) if fewer is None else (prio, fewer, units[idx]))
        u = units[idx][order]
        first = np.flatnonzero(np.concatenate(([True], u[1:] != u[:-1])))
        rank = np.arange(idx.size) - np.repeat(first, np.diff(np.append(first, idx.size)))
        keep[idx[order[rank < k]]] = True
    return keep


def _smallest_by_threshold(
    sizes: np.ndarray, k: int, prio: np.ndarray, major: np.ndarray | None = None
) -> np.ndarray | None:
    """:func:`keep_smallest` of consecutive groups of ``sizes`` pairs (each
    more than k) with 64-bit priorities ``prio``, by one sort of int64 words
    (the group's index in the high bits, then ``major`` if given, a
    non-negative rank that orders before the priority, then the priority's
    top bits) and a threshold per group: each group keeps the pairs at or
    below its k-th smallest word. Exact when no two words are equal (then the
    words order each group as (major, full priority) do); None when two are,
    or when too few bits are left for the priority, for the caller's sort by
    (unit, major, priority, key), which breaks such ties."""
    groups = int(sizes.size)
    bits = max(groups - 1, 1).bit_length()
    major_bits = 0 if major is None else int(major.max()).bit_length()
    if 63 - bits - major_bits < 16:
        return None
    g = np.repeat(np.arange(groups, dtype=np.int64), sizes)
    words = (np.asarray(prio, dtype=np.uint64) >> np.uint64(bits + major_bits + 1)).view(np.int64)
    words |= g << (63 - bits)
    del g
    if major is not None and major_bits:
        words |= np.asarray(major, dtype=np.int64) << (63 - bits - major_bits)
    # the group's index is in the high bits; runs of ~1,000 words sort 2.5 times cheaper a word than 2**16
    ordered = sorted_in_groups(words, sizes, block=1 << 10)
    if (ordered[1:] == ordered[:-1]).any():
        return None
    first = np.cumsum(sizes) - sizes
    threshold = ordered[first + (k - 1)]
    del ordered
    return words <= np.repeat(threshold, sizes)


def bounded_counts(
    grid: Grid, pairs: Pairs, bound: UnitBound, key: BoundingKey
) -> tuple[np.ndarray, np.ndarray]:
    """The cell counts after the contribution bound: the sum over units of
    min(count, max_points_per_cell) over the cells each unit keeps, as
    (sorted unique keys, counts); cells no kept pair touches are absent."""
    return summed_by_key(grid, *kept_capped(grid, pairs, bound, key))


def kept_capped(
    grid: Grid, pairs: Pairs, bound: UnitBound, key: BoundingKey
) -> tuple[np.ndarray, np.ndarray]:
    """The cell keys of the pairs the bound keeps (:func:`kept_pairs`) and
    their counts capped at ``max_points_per_cell``, in the pairs' order."""
    keep = kept_pairs(grid, pairs, bound, key)
    return pairs.keys[keep], np.minimum(pairs.counts[keep], int(bound.max_points_per_cell))


def summed_by_key(grid: Grid, keys: np.ndarray, capped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique keys, summed counts) of kept pairs' keys and capped counts."""
    if keys.size == 0:
        return keys, capped
    if not grid.wide and grid.key_space <= max(_BINCOUNT_MAX, 4 * keys.size):
        # a table over the key space (every kept pair counts at least 1 point)
        table = np.bincount(keys, weights=capped, minlength=grid.key_space)
        uniq = np.flatnonzero(table)
        return uniq.astype(keys.dtype, copy=False), table[uniq].astype(np.int64)
    uniq, inv = cell_keys.unique(keys)
    return uniq, np.bincount(inv, weights=capped, minlength=uniq.size).astype(np.int64)


def bound_parts(
    engine: Engine,
    parts: Sequence[Any],
    grid: Grid,
    key: BoundingKey,
    *,
    bound: UnitBound | None = None,
    choose: Callable[[np.ndarray], UnitBound] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The bounded cell counts of partitions of :class:`Pairs`, each holding
    every pair of its units (the rows in memory: one partition; a cluster's:
    its pairs shuffled by unit), as (sorted unique keys, counts), on the
    ``engine``'s primitives (:mod:`dpdbscan.release.engine`).

    The bound is ``bound``, or ``choose(cells per unit)`` (the private choice
    of k, :mod:`.unitchoice`), called once with every unit's number of cells
    (:func:`cells_per_unit`, gathered from the partitions). Each partition
    is bounded alone (a unit's priorities depend on the unit, the cell and
    the key only) and the bounded counts are merged: units in different
    partitions are different units, so the sums are the counts of bounding
    all the pairs at once. The bound itself is :func:`kept_capped`, here and
    in :func:`count_units`' buckets of units."""
    if choose is not None:
        cells = engine.gather(engine.map(cells_per_unit, parts))
        bound = choose(np.concatenate(cells) if cells else np.zeros(0, dtype=np.int64))
    if bound is None:
        raise ValueError("bound_parts needs a bound or a choice of it")
    bounded = engine.map(functools.partial(_bounded_part, grid=grid, bound=bound, key=key), parts)
    return engine.reduce(bounded, merge_counts)


def _bounded_part(
    pairs: Pairs, grid: Grid, bound: UnitBound, key: BoundingKey
) -> tuple[np.ndarray, np.ndarray]:
    keys, counts = bounded_counts(grid, pairs, bound, key)
    return np.asarray(keys, dtype=grid.key_dtype), np.asarray(counts, dtype=np.int64)


def count_units(
    grid: Grid, X: np.ndarray, units: np.ndarray, bound: UnitBound, key: BoundingKey
) -> tuple[np.ndarray, np.ndarray]:
    """The bounded cell counts of in-memory points ``X`` with one unit id per
    row: the reference of ``UnitBackend.count_units``.

    When the rows' words go to buckets of units (:func:`_bucketed_rows`),
    each bucket is a partition of whole units, as in :func:`bound_parts`: it
    is sorted, counted and bounded while it is in the caches, and its kept
    pairs' capped counts are added to the cells' table as it comes (the
    units' pairs, and the kept ones, never exist all at once). The same
    counts as bounding all the pairs at once: a unit's choice reads its own
    pairs and the key only."""
    X = _rows_of(X, units)
    codes, uniques, n_units = _unit_codes(units)
    made = _bucketed_rows(grid, X, codes, n_units)
    if made is not None and not made[1]:
        words = unit_words(uniques, key)

        def bounded(units: np.ndarray, cells: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, ...]:
            pairs = Pairs(units, cells.astype(grid.key_dtype, copy=False), counts, words, uniques)
            return kept_capped(grid, pairs, bound, key)

        kept = made[0].runs(bounded)
        if grid.key_space > _BINCOUNT_MAX:
            parts = list(kept)
            if not parts:
                return summed_by_key(grid, np.zeros(0, dtype=grid.key_dtype), np.zeros(0, dtype=np.int64))
            return summed_by_key(grid, *(np.concatenate(part) for part in zip(*parts)))
        # summed as each bucket is bounded: no array of every kept pair
        table = np.zeros(grid.key_space, dtype=np.int64)
        for cells, capped in kept:
            np.add.at(table, cells, capped)
        uniq = np.flatnonzero(table)  # every kept pair counts at least 1 point
        return uniq.astype(grid.key_dtype, copy=False), table[uniq]
    pairs = _pairs_of_codes(grid, X, codes, uniques, key, made)
    return bound_parts(LocalEngine(), [pairs], grid, key, bound=bound)


def bounded_fine_coords(
    grid: Grid, f: int, X: np.ndarray, units: Any, bound: UnitBound, key: BoundingKey
) -> np.ndarray:
    """The points the contribution bound keeps on ``grid`` (the per-record
    rule, each unit's ``max_cells_per_unit`` cells by ``key``, as
    :func:`count_units` keeps them), each cell's first min(count,
    ``max_points_per_cell``) rows of the unit in input order, as their cells'
    coordinates on ``grid.subdivided(f)``: each point's fine cell is found
    inside its own cell of ``grid`` (its offset clipped to 0..f-1 and to the
    fine grid), so a cell's points stay in its f^d fine cells. Release two at
    person level (:func:`dpdbscan.release.mechanism.release_fine_counts_units`).
    Summed by cell of ``grid``, these are :func:`count_units`' counts. Private."""
    X = _rows_of(X, units)
    fine = grid.subdivided(int(f))
    codes, uniques = factorize(units)
    keep, keys = kept_keys(grid, X, codes >= 0)
    rows = np.flatnonzero(keep)
    codes = codes[keep]
    if rows.size == 0:
        return np.zeros((0, grid.d), dtype=np.int64)
    pairs = summed_pairs(grid, codes, keys, None, uniques, key)
    chosen = kept_pairs(grid, pairs, bound, key)
    # the rows in the pairs' order (unit code, then cell), input order within a pair
    cells, rank = _codes(grid, keys)
    word = codes.astype(np.int64) * max(int(cells.size), 1) + rank
    order = np.argsort(word, kind="stable")
    w = word[order]
    first = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))
    if first.size != chosen.size:
        raise RuntimeError("the rows' pairs do not match the bound's pairs")
    run = np.cumsum(np.isin(np.arange(w.size), first)) - 1
    within = np.arange(w.size) - first[run]
    sel = order[chosen[run] & (within < int(bound.max_points_per_cell))]
    coarse = grid.decode(keys[sel])
    pts = np.clip(X[rows[sel]], grid.lower, grid.upper)
    step = float(grid.width) / int(f)
    off = np.floor((pts - grid.cell_lower(coarse)) / step).astype(np.int64)
    out = coarse * int(f) + np.clip(off, 0, int(f) - 1)
    return np.minimum(out, np.asarray(fine.shape, dtype=np.int64) - 1)


def _unit_codes(units: Any) -> tuple[np.ndarray, np.ndarray, int | None]:
    """:func:`factorize` for a count, and the number of codes when every row
    has one (None: not known). Integer ids whose range is not much wider
    than the rows (at most 2**20 values or an eighth of the rows) are coded
    by their offset from the smallest, without first marking which values
    occur (a pass over the rows): ``uniques`` is then the whole range, and a
    value no row has is a unit without pairs, which nothing counts. Ids
    0..n-1 are their own codes (a read-only view). Everything else is
    factorized."""
    u = read_units(units)
    if isinstance(u, np.ndarray) and u.dtype.kind in "iu" and u.size:
        u = u.ravel()
        lo, hi = int(u.min()), int(u.max())
        if hi - lo < max(1 << 20, u.size // 8):
            uniques = np.arange(hi - lo + 1).astype(u.dtype) + u.dtype.type(lo)
            if lo == 0 and u.dtype == np.int64:
                codes = u.view()
                codes.flags.writeable = False
            else:
                codes = np.empty(u.size, dtype=np.int64)
                for start in range(0, u.size, _CHUNK):
                    codes[start : start + _CHUNK] = _offsets(u[start : start + _CHUNK], lo)
            return codes, uniques, int(uniques.size)
    codes, uniques = factorize(u)
    return codes, uniques, None


def cells_per_unit(pairs: Pairs) -> np.ndarray:
    """The number of distinct cells of every unit that has a row left after
    the per-record rule (private: it steers only the private choice of k)."""
    c = np.bincount(pairs.units, minlength=pairs.n_units)
    return c[c > 0]


def count_units_choosing(
    grid: Grid,
    X: np.ndarray,
    units: np.ndarray,
    choose: Callable[[np.ndarray], UnitBound],
    key: BoundingKey,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`count_units` with the bound chosen from the cells per unit:
    ``choose`` (the private choice of k, :mod:`.unitchoice`) is called once
    with :func:`cells_per_unit` and returns the bound the counts are made
    with. The reference of ``UnitChoiceBackend.count_units_choosing``."""
    X = _rows_of(X, units)
    codes, uniques, n_units = _unit_codes(units)
    pairs = _pairs_of_codes(grid, X, codes, uniques, key, _bucketed_rows(grid, X, codes, n_units))
    return bound_parts(LocalEngine(), [pairs], grid, key, choose=choose)


__all__ = [
    "BoundingKey",
    "Pairs",
    "bound_parts",
    "bounded_counts",
    "cells_per_unit",
    "count_distinct_units",
    "count_units",
    "count_units_choosing",
    "factorize",
    "keep_smallest",
    "kept_capped",
    "kept_keys",
    "kept_pairs",
    "pairs_of",
    "run_length",
    "summed_by_key",
    "summed_pairs",
    "unit_words",
]
