"""The linear-time pure-DP histogram (Algorithm 2 of the paper; Cormode et al.).

Noise is added to the occupied cells and those with a noisy count >= theta are
released. The empty cells are not touched one by one: the number of them that
the naive histogram would have released above theta is Binomial(M, p) with
p = P(Z >= theta); that many are drawn uniformly without replacement from the
empty cells, and their values from the tail of the noise above theta. The
output has the same distribution as the naive histogram truncated below theta,
so it is epsilon-DP by post-processing.

Exactness (see docs/privacy.md): noisy counts, the positions of empty cells and
their tail values are exact. The Binomial count uses numpy's floating-point
sampler (seeded from the OS CSPRNG in secure mode), and, when M >= 2**62,
Poisson(M p) in its place (total variation distance at most p).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _random
from ..grid import search_keys
from ..histogram import NoisyHistogram

_BINOMIAL_MAX = 1 << 62


def default_theta(n_cells: int, noise, max_empty: float) -> float:
    """Smallest theta (>= 1) whose expected number of released empty cells,
    ``n_cells * P(Z >= theta)``, is at most ``max_empty``. Public inputs only."""
    eps = noise.epsilon
    # P(Z >= theta) ~ exp(-eps theta) / 2 up to a constant in [1/2, 1]
    theta = max(1.0, math.log(max(n_cells, 1) / max(max_empty, 1.0)) / eps)
    if noise.integer:
        theta = float(math.ceil(theta))
    while n_cells * noise.tail(theta) > max_empty:
        theta += 1.0
    return theta


def sample_count(source, M: int, p: float) -> int:
    """m ~ Binomial(M, p) (documented floating-point approximation)."""
    if M <= 0 or p <= 0:
        return 0
    gen = source.numpy_generator()
    if M < _BINOMIAL_MAX:
        return int(gen.binomial(M, p))
    return int(gen.poisson(M * p))


def sample_empty_cells(grid, occupied_keys: np.ndarray, m: int, source) -> np.ndarray:
    """``m`` distinct cells, uniform without replacement among the empty ones.

    Cells are drawn i.i.d. uniformly from the universe (one exact uniform
    integer below |X| per cell, or one per coordinate when |X| >= 2**63) and
    the first ``m`` distinct empty cells of that stream are kept; that set is
    uniform over the m-subsets of the empty cells. The stream is drawn in
    batches of exactly the number still missing, so a batch never yields more
    than are needed and every new distinct empty cell of it is kept. Returned
    sorted by key.
    """
    chosen = np.empty(0, dtype=grid.key_dtype)
    while chosen.size < m:
        s = np.sort(_uniform_cells(grid, m - chosen.size, source))
        new = np.ones(s.size, dtype=bool)
        new[1:] = s[1:] != s[:-1]
        new &= ~_is_in(occupied_keys, s) & ~_is_in(chosen, s)
        chosen = _merge_sorted(chosen, s[new])
    return chosen


def _uniform_cells(grid, n: int, source) -> np.ndarray:
    """Keys of ``n`` i.i.d. uniform cells of the universe (exact)."""
    if grid.n_cells < 1 << 63 and not grid.wide:
        flat = _random.uniform_below(source, n, grid.n_cells)
        key = np.zeros(n, dtype=np.int64)
        for i in range(grid.d - 1, -1, -1):  # row-major: the last axis varies fastest
            flat, c = np.divmod(flat, grid.shape[i])
            key += c * grid._strides[i]
        return key
    shape = np.asarray(grid.shape, dtype=np.uint64)
    coords = np.stack(
        [_random.randbelow(source, np.full(n, s, dtype=np.uint64)) for s in shape], axis=1
    ).astype(np.int64)
    return grid.encode(coords)


def _is_in(sorted_keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    return search_keys(sorted_keys, query)[1]


def _merge_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Merge two sorted key arrays with no key in common."""
    if a.size == 0:
        return b
    if b.size == 0:
        return a
    pos = np.searchsorted(a, b) + np.arange(b.size)
    out = np.empty(a.size + b.size, dtype=a.dtype)
    from_b = np.zeros(out.size, dtype=bool)
    from_b[pos] = True
    out[pos] = b
    out[~from_b] = a
    return out


def sparse_histogram(grid, cells, noise, source, theta: float) -> NoisyHistogram:
    """Algorithm 2 on exact cell counts ``cells`` (a CellCounts)."""
    keys, counts = cells.keys, cells.counts
    z = noise.sample(source, keys.size)
    noisy = counts + z if noise.integer else counts.astype(np.float64) + z
    keep = noisy >= theta
    rel_keys, rel_vals = keys[keep], noisy[keep]

    M = grid.n_cells - int(keys.size)
    p = noise.tail(theta)
    m = sample_count(source, M, p)
    empty_keys = sample_empty_cells(grid, keys, m, source)
    empty_vals = noise.sample_tail(source, m, theta)
    if not noise.integer:
        empty_vals = empty_vals.astype(np.float64)

    # canonical (sorted) order reveals nothing: merge the two sorted parts
    pos = np.searchsorted(rel_keys, empty_keys) + np.arange(m)
    all_keys = np.empty(rel_keys.size + m, dtype=keys.dtype)
    all_vals = np.empty(rel_keys.size + m, dtype=rel_vals.dtype)
    from_empty = np.zeros(all_keys.size, dtype=bool)
    from_empty[pos] = True
    all_keys[pos], all_vals[pos] = empty_keys, empty_vals
    all_keys[~from_empty], all_vals[~from_empty] = rel_keys, rel_vals
    return NoisyHistogram(
        grid=grid, kind="sparse", values=all_vals, keys=all_keys,
        theta=float(theta), noise=noise.name, epsilon=noise.epsilon,
    )
