"""The span x period table: each span's noisy mass in each period.

A series over time releases the spans once, over the whole horizon, and then
this table: for every span s and period t, how many points of the units fall
in s during t, bounded per unit and with noise. Which span a point is in is a
function of the point and of the released spans alone (public after their
release), which period a time is in a function of the time and of the public
plan of periods (:class:`dpdbscan.traces.periods.Periods`).

The contribution bound holds over the WHOLE horizon, not per period. The keys
are the (span, period) pairs, and each unit's contribution is bounded as the
cells' is (:mod:`dpdbscan.release.bounding`):

* at most ``m`` of its points count in any one (span, period) pair;
* at most ``k`` of the pairs it occupies count at all, its k pairs of
  smallest random priority (Philox at (unit, pair) under a key drawn for
  this table, as for cells: a uniformly random k-subset of its pairs).

Adding or removing one unit then changes at most k entries of the table, each
by at most m, whatever the number of periods: L1 sensitivity k m, L2
sensitivity sqrt(k) m. The discrete Gaussian with sigma^2 = (sqrt(k) m)^2 /
(2 rho) on EVERY entry (all S x T of them, zeros included, so that which
entries are released never depends on the data) makes the table rho-zCDP
for each unit (Bun and Steinke 2016, Canonne, Kamath and Steinke 2020).
With m = 1 an entry counts the distinct units seen in a span in a period
(each up to the k-pair bound), which is what "how many cabs picked up here
this week" asks.

Rows with a missing unit, a time in no period or a point in no span count
nowhere (the per-record rule). The exact table is private; only the noisy one
leaves this module.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..laws import discretegaussian as _law
from ..laws import zcdp
from ..params.specs import Seed
from . import unitchoice
from .bounding import BoundingKey, factorize, keep_smallest, run_length, unit_words
from .engine import Engine, LocalEngine
from .samplers.gaussian import discrete_gaussian, rational_sigma2
from .samplers.integers import SecureSource, SeededSource, make_source
from .samplers.philox import words64


@dataclass(frozen=True)
class TableBound:
    """The public plan of one table's exact counts: its ``shape`` (spans,
    periods) and each unit's bound, ``k`` (span, period) pairs of ``m``
    points each. Public: fixed once the spans are released."""

    shape: tuple[int, int]
    k: int
    m: int


#: The summed (unit code, pair key, count, unit words) of a set of rows
#: (:func:`summed_pairs`): one partition of the table's bounding.
TablePairs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def sensitivity(k: int, m: int) -> tuple[float, float]:
    """(L1, L2) sensitivity of the table under the bound (k pairs, m points):
    one unit changes at most k entries, each by at most m."""
    return float(k * m), math.sqrt(k) * m


def sigma2_for(rho: float, k: int, m: int) -> float:
    """sigma^2 of the table's discrete Gaussian at ``rho`` (rounded up)."""
    return zcdp.sigma2_for(rho, sensitivity(k, m)[1])


def rho_of(sigma2: float, k: int, m: int) -> float:
    """The zCDP rho the table spends with noise ``sigma2`` (as the sampler
    draws it, rounded up) under the bound (k, m)."""
    return zcdp.gaussian_rho(rational_sigma2(sigma2), sensitivity(k, m)[1])


def _pairs(
    units: Any, spans: np.ndarray, periods: np.ndarray, n_periods: int, key: BoundingKey
) -> TablePairs:
    """(unit code, pair key, count, unit words) of the (unit, span x period)
    pairs of rows, sorted by unit then key; pair key = span * n_periods + period."""
    codes, uniques = factorize(units)
    spans, periods = np.asarray(spans, dtype=np.int64), np.asarray(periods, dtype=np.int64)
    if not (codes.size == spans.size == periods.size):
        raise ValueError("units, spans and periods need one value per row each")
    ok, pair = pair_keys(codes >= 0, spans, periods, n_periods)
    return summed_pairs(codes[ok], pair, np.ones(pair.size, dtype=np.int64), uniques, key)


def pair_keys(
    keep: np.ndarray, spans: np.ndarray, periods: np.ndarray, n_periods: int
) -> tuple[np.ndarray, np.ndarray]:
    """The per-record rule of the table, in memory and on every partition of
    a cluster alike: a row counts when it is in ``keep`` (its unit is
    present), its point in a released span and its time in a period (-1:
    none). Returns the rows that count (a mask) and their pair keys, span *
    ``n_periods`` + period."""
    spans, periods = np.asarray(spans, dtype=np.int64), np.asarray(periods, dtype=np.int64)
    ok = keep & (spans >= 0) & (periods >= 0)
    return ok, spans[ok] * n_periods + periods[ok]


def summed_pairs(
    codes: np.ndarray, pair: np.ndarray, counts: np.ndarray, uniques: np.ndarray, key: BoundingKey
) -> TablePairs:
    """(unit code, pair key, count, unit words) of entries that each name a
    unit (``codes``, indices into ``uniques``), a pair and a number of
    points, equal (unit, pair) entries summed, sorted by unit then key: the
    rows in memory (one point each), or the partial counts a distributed
    backend gathered for a set of units. A unit's words depend on the unit
    and the key alone, so any set of units gives the same words."""
    codes, pair = np.asarray(codes, dtype=np.int64), np.asarray(pair, dtype=np.int64)
    order = np.lexsort((pair, codes))
    codes, pair, counts = codes[order], pair[order], np.asarray(counts, dtype=np.int64)[order]
    n = codes.size
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, unit_words(uniques, key)
    starts = np.flatnonzero(np.concatenate(([True], (codes[1:] != codes[:-1]) | (pair[1:] != pair[:-1]))))
    return codes[starts], pair[starts], np.add.reduceat(counts, starts), unit_words(uniques, key)


def bounded_pairs(pairs: TablePairs, bound: TableBound, key: BoundingKey) -> np.ndarray:
    """The exact bounded table (private) of summed pairs (:func:`summed_pairs`)
    holding every pair of their units: the sum over those units of
    min(count, m) over the k pairs each keeps. Tables of disjoint sets of
    units add up to the table of their union."""
    n_spans, n_periods = bound.shape
    u, pair, counts, words = pairs
    keep = keep_smallest(
        u, int(bound.k), lambda idx: words64(words[u[idx]], pair[idx].view(np.uint64), key.philox)
    )
    capped = np.minimum(counts[keep], int(bound.m))
    flat = np.bincount(pair[keep], weights=capped, minlength=n_spans * n_periods)
    return flat.astype(np.int64).reshape(n_spans, n_periods)


def bound_table_parts(
    engine: Engine, parts: Sequence[Any], bound: TableBound, key: BoundingKey
) -> np.ndarray:
    """The exact bounded table (private) of partitions of :data:`TablePairs`,
    each holding every pair of its units (the rows in memory: one
    partition; a cluster's: its pairs shuffled by unit), on the
    ``engine``'s primitives (:mod:`dpdbscan.release.engine`), as
    :func:`dpdbscan.release.bounding.bound_parts` bounds the cells: each
    partition bounded alone (a unit's priorities depend on the unit, the
    pair and the key only), the tables of disjoint sets of units added up.
    The one place the table's bound is applied."""
    if not parts:
        return np.zeros(bound.shape, dtype=np.int64)
    tables = engine.map(functools.partial(bounded_pairs, bound=bound, key=key), parts)
    return np.asarray(engine.reduce(tables, _sum_tables), dtype=np.int64).reshape(bound.shape)


def _sum_tables(*tables: np.ndarray) -> np.ndarray:
    return np.sum(tables, axis=0)


def bounded_table(
    units: Any, spans: np.ndarray, periods: np.ndarray, bound: TableBound, key: BoundingKey
) -> np.ndarray:
    """The exact bounded table (private), shape ``bound.shape``: the sum
    over units of min(count, m) over the k (span, period) pairs each keeps
    (rows in memory: :func:`bound_table_parts` of one partition)."""
    pairs = _pairs(units, spans, periods, bound.shape[1], key)
    return bound_table_parts(LocalEngine(), [pairs], bound, key)


def bounded_columns(
    units: Any,
    spans: np.ndarray,
    periods: np.ndarray,
    first: int,
    upto: int,
    bound: TableBound,
    key: BoundingKey,
) -> np.ndarray:
    """The exact columns (private) of periods ``first`` to ``upto - 1``,
    shape (n_spans, upto - first), EACH PERIOD BOUNDED ON ITS OWN: in each
    period a unit counts in at most k of its (span, that period) pairs, m
    points each. One unit changes each column by at most sqrt(k) m in L2,
    whatever it does in the other periods (an appendable series releases
    each column at its own rho)."""
    periods = np.asarray(periods, dtype=np.int64)
    spans = np.asarray(spans, dtype=np.int64)
    cols = [np.zeros(0, dtype=np.int64)][:0]
    for t in range(first, upto):
        sel = periods == t
        mine = units.filter(_arrow_mask(sel)) if _is_arrow(units) else np.asarray(units)[sel]
        cols.append(bounded_table(mine, spans[sel], periods[sel], bound, key)[:, t])
    return np.stack(cols, axis=1) if cols else np.zeros((bound.shape[0], 0), dtype=np.int64)


def _is_arrow(values: Any) -> bool:
    return type(values).__module__.split(".")[0] == "pyarrow"


def _arrow_mask(mask: np.ndarray) -> Any:
    import pyarrow as pa  # lazy: only for input the readers gave as Arrow

    return pa.array(mask)


def pairs_per_unit(units: Any, spans: np.ndarray, periods: np.ndarray, n_periods: int) -> np.ndarray:
    """How many (span, period) pairs each unit occupies before the bound
    (private: for tests and private notes)."""
    u, _, _, _ = _pairs(units, spans, periods, n_periods, BoundingKey((0, 0), bytes(16)))
    return run_length(u)[1]


def release_exact(
    exact_of: Callable[[BoundingKey], np.ndarray],
    sigma2: float,
    random_state: Seed | SecureSource | SeededSource | None = None,
) -> np.ndarray:
    """``exact_of(key)`` (the exact bounded table, computed in memory or on
    a cluster) plus discrete Gaussian noise with (at least) ``sigma2`` on
    every entry. The bound's key and then the noise come from
    ``random_state`` (None: the operating system's secure randomness), in
    that order whoever computes the table: the same seed, the same release."""
    source = make_source(random_state, warn=False)
    key = BoundingKey.draw(source)
    exact = np.asarray(exact_of(key), dtype=np.int64)
    # sigma^2 rounded up to the rational the exact sampler draws with
    noise = discrete_gaussian(source, exact.size, rational_sigma2(sigma2))
    return exact + noise.reshape(exact.shape).astype(np.int64)


def table_source(random_state: Seed | SecureSource | SeededSource | None) -> SecureSource | SeededSource:
    """The randomness of a table's release (None: the operating system's
    secure randomness), made once so that a private choice of k, the bound's
    key and the noise are drawn from it in that order."""
    return make_source(random_state, warn=False)


def choose_pairs_k(
    units: Any, spans: np.ndarray, periods: np.ndarray, n_periods: int, cap: int, rho: float, source: Any
) -> int:
    """k for the table chosen privately: the exponential mechanism of
    :mod:`.unitchoice` on each unit's number of (span, period) pairs
    (private), among the public ladder round(2^(i/4)) up to ``cap``, at
    ``rho`` (rho-zCDP for each unit: one unit adds or removes one count)."""
    ladder: list[int] = []
    i = 0
    while (k := round(2.0 ** (i / 4))) <= max(1, int(cap)):
        if not ladder or k > ladder[-1]:
            ladder.append(k)
        i += 1
    pairs = pairs_per_unit(units, spans, periods, n_periods)
    return ladder[unitchoice.choose(pairs, ladder, rho, source)]


def half_width(sigma2: float, level: float = 0.95) -> int:
    """The smallest integer h with P(|Z| > h) <= 1 - level for the discrete
    Gaussian Z of ``sigma2``: [noisy - h, noisy + h] holds the exact bounded
    mass with probability at least ``level`` (public: from sigma^2 alone)."""
    if not 0 < level < 1:
        raise ValueError(f"the interval's level must be in (0, 1), got {level!r}")
    s2 = float(rational_sigma2(sigma2))
    h = int(math.floor(math.sqrt(2 * s2 * math.log(2 / (1 - level))))) + 1  # Gaussian bound: enough
    while h > 0 and 2 * _law.tail(s2, h) <= 1 - level:  # P(|Z| > h - 1) = 2 P(Z >= h)
        h -= 1
    return h


def detectable(sigma2: float, level: float = 0.95) -> int:
    """The smallest bounded mass mu that is found active (noisy mass >= the
    half-width h of the ``level`` interval) with probability at least
    ``level``: mu = h + d, d the smallest integer >= 0 with
    P(Z >= d + 1) <= 1 - level (public: from sigma^2 alone)."""
    h = half_width(sigma2, level)
    s2 = float(rational_sigma2(sigma2))
    d = int(math.floor(math.sqrt(2 * s2 * math.log(1 / (1 - level))))) + 1  # Gaussian bound: enough
    while d > 0 and _law.tail(s2, d) <= 1 - level:  # P(Z >= (d - 1) + 1)
        d -= 1
    return h + d


__all__ = [
    "TableBound",
    "TablePairs",
    "bound_table_parts",
    "bounded_columns",
    "choose_pairs_k",
    "table_source",
    "detectable",
    "bounded_pairs",
    "bounded_table",
    "half_width",
    "pair_keys",
    "pairs_per_unit",
    "release_exact",
    "rho_of",
    "sensitivity",
    "sigma2_for",
    "summed_pairs",
]
