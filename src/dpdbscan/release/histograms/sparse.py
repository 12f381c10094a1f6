"""The linear-time pure-DP histogram (Algorithm 2 of the paper; Cormode et al.).

Noise is added to the occupied cells and those with a noisy count >= theta are
released. The empty cells are not touched one by one: the naive histogram
truncated below theta releases each of them independently with probability
p = P(Z >= theta), with a value drawn from the tail of the noise above theta.
That is what is sampled here, exactly:

* which cells: every cell of the universe is "selected" independently with
  probability p by geometric skipping in linear-index (row-major) order
  (:func:`dpdbscan.release.samplers.skipping.bernoulli_positions`, exact for the real p);
  selected cells that are occupied are dropped, since the occupied cells have
  their own noise. The selected empty cells are then exactly an independent
  Bernoulli(p) choice of each empty cell.
* their values: the tail Z | Z >= theta, exactly for discrete noise
  (``DiscreteLaplace.sample_tail``).

So the output has exactly the distribution of the naive histogram truncated
below theta, and is epsilon-DP by post-processing (docs/privacy.md, 4.3). The
paper's Binomial count followed by a uniform choice of that many empty cells
gives the same law; the paper (Section 6) notes that an exact Binomial(M, p)
sampler for huge M is an open problem in the word-RAM model, which the
skipping avoids: the gaps are Geometric(p), sampled exactly in expected time
linear in the output.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...cells import keys as cell_keys
from ...cells.grid import Grid, search_keys
from ...cells.histogram import NoisyHistogram
from ..backends.base import CellCounts
from ..samplers import skipping as _bernoulli
from ..samplers.integers import Source
from .countnoise import Noise, compiled_tail, tail_values

_INT_SAFE = 1 << 62


def linear_to_coords(shape: tuple[int, ...], positions: Sequence[int] | np.ndarray) -> np.ndarray:
    """Row-major coordinates (int64, (m, d)) of linear indices of a grid of ``shape``.

    ``positions`` is an int64 array (universe below 2**62) or a sequence of
    Python ints (any size): those are split into groups of trailing axes
    whose product stays below 2**62, one exact integer division per group.
    """
    d = len(shape)
    if isinstance(positions, np.ndarray) and positions.dtype != object:
        flat = positions.astype(np.int64, copy=True)
        out = np.empty((flat.size, d), dtype=np.int64)
        for i in range(d - 1, -1, -1):  # row-major: the last axis varies fastest
            flat, out[:, i] = np.divmod(flat, shape[i])
        return out
    rest = np.array(list(positions), dtype=object)
    out = np.empty((rest.size, d), dtype=np.int64)
    i = d - 1
    while i >= 0:
        j, block = i, 1
        while j >= 0 and block * shape[j] < _INT_SAFE:
            block *= shape[j]
            j -= 1
        if j < 0:
            low = rest.astype(np.int64)
        else:
            low = (rest % block).astype(np.int64)  # object arrays: Python ints
            rest = rest // block
        for k in range(i, j, -1):
            low, out[:, k] = np.divmod(low, shape[k])
        i = j
    return out


def released_empty_cells(
    grid: Grid, occupied_keys: np.ndarray, noise: Noise, theta: float, source: Source, compiled: bool = False
) -> np.ndarray:
    """Sorted keys of the empty cells released above ``theta``: each empty
    cell independently with probability P(Z >= theta), exactly.

    ``occupied_keys`` must be sorted. Every cell of the universe is selected
    by an exact Bernoulli process over the linear indices and the occupied
    ones are dropped; row-major order is key order, so the keys come out
    sorted. ``compiled``: the gaps drawn through compiled steps
    (:func:`.countnoise.compiled_tail`), the same words and cells.
    """
    tail = noise.exact_tail(theta)
    positions: np.ndarray | list[int]
    if tail is None:  # no noise: every cell or none
        if noise.tail(theta) <= 0:
            return np.empty(0, dtype=grid.key_dtype)
        positions = np.arange(grid.n_cells, dtype=np.int64)
    else:
        positions = _bernoulli.bernoulli_positions(source, grid.n_cells, tail, compiled)
    if len(positions) == 0:
        return np.empty(0, dtype=grid.key_dtype)
    if compiled and isinstance(positions, np.ndarray) and not grid.wide:
        # lazy: numba loads only where a fit loads it anyway (countnoise.compiled_tail)
        from ..samplers.noiserounds import empty_cell_keys

        shape = np.asarray(grid.shape, dtype=np.int64)
        strides = np.array([grid.key_delta(e) for e in np.eye(grid.d, dtype=np.int64)], dtype=np.int64)
        return empty_cell_keys(positions, shape, strides, grid.reach, occupied_keys)
    if isinstance(positions, np.ndarray) and not grid.wide:
        keys = grid.keys_of_positions(positions)
    else:
        keys = grid.encode(linear_to_coords(grid.shape, positions))
    return keys[~_is_in(occupied_keys, keys)]


def _is_in(sorted_keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Which of the sorted, distinct ``query`` keys are among ``sorted_keys``
    (distinct too): the shorter array is looked up in the longer (a sparse
    release's 738k selected cells against 20k occupied ones in 4-D)."""
    if query.size <= sorted_keys.size:
        return search_keys(sorted_keys, query)[1]
    idx, hit = search_keys(query, sorted_keys)
    out = np.zeros(query.size, dtype=bool)
    out[idx[hit]] = True
    return out


def _merge_sorted(a: np.ndarray, b: np.ndarray, *values: tuple[np.ndarray, np.ndarray]):
    """Merge two sorted key arrays with no key in common, and with each
    ``(of_a, of_b)`` pair of value arrays in ``values`` the values alike
    (then a tuple: the keys, then each merged value array, of of_a's dtype).
    The shorter array's keys are looked up in the longer: a key's place is
    the number of keys of the other array below it plus its own index."""
    if a.size < b.size:
        small, big, first = a, b, True
    else:
        small, big, first = b, a, False
    pos = cell_keys.searchsorted(big, small) + np.arange(small.size)
    from_small = np.zeros(a.size + b.size, dtype=bool)
    from_small[pos] = True
    from_big = ~from_small
    out = np.empty(a.size + b.size, dtype=a.dtype)
    out[pos], out[from_big] = small, big
    if not values:
        return out
    merged = [out]
    for of_a, of_b in values:
        v = np.empty(out.size, dtype=of_a.dtype)
        v[pos], v[from_big] = (of_a, of_b) if first else (of_b, of_a)
        merged.append(v)
    return tuple(merged)


def sparse_histogram(
    grid: Grid, cells: CellCounts, noise: Noise, source: Source, theta: float, epsilon: float, delta: float
) -> NoisyHistogram:
    """Algorithm 2 on exact cell counts ``cells`` (a CellCounts, sorted keys),
    a release stated as (``epsilon``, ``delta``)-DP."""
    keys, counts = cells.keys, cells.counts
    z = noise.sample(source, keys.size)
    noisy = counts + z if noise.integer else counts.astype(np.float64) + z
    keep = noisy >= theta
    rel_keys, rel_vals = keys[keep], noisy[keep]

    compiled = compiled_tail(grid, noise, theta)
    empty_keys = released_empty_cells(grid, keys, noise, theta, source, compiled)
    m = empty_keys.size
    empty_vals = tail_values(noise, source, m, theta, compiled)
    if not noise.integer:
        empty_vals = empty_vals.astype(np.float64)

    # canonical (sorted) order reveals nothing: merge the two sorted parts
    if compiled and not grid.wide and rel_vals.dtype == empty_vals.dtype:
        # lazy: numba loads only where a fit loads it anyway (countnoise.compiled_tail)
        from ..samplers.noiserounds import merge_disjoint

        all_keys, all_vals = merge_disjoint(rel_keys, rel_vals, empty_keys, empty_vals)
    else:
        all_keys, all_vals = _merge_sorted(rel_keys, empty_keys, (rel_vals, empty_vals))
    return NoisyHistogram(
        grid=grid,
        kind="sparse",
        values=all_vals,
        keys=all_keys,
        theta=float(theta),
        noise=noise.name,
        scale=noise.scale,
        epsilon=epsilon,
        delta=delta,
    )
