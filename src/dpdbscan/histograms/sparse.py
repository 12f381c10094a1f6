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
from .base import NoisyHistogram

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

    Coordinates are drawn uniformly per dimension (exact), then duplicates and
    occupied cells are rejected and redrawn; the accepted set is uniform over
    m-subsets of the empty cells.
    """
    if m == 0:
        return np.empty(0, dtype=grid.key_dtype)
    chosen = np.empty(0, dtype=grid.key_dtype)
    shape = np.asarray(grid.shape, dtype=np.uint64)
    while chosen.size < m:
        need = m - chosen.size
        draw = max(16, int(need * 1.1) + 8)
        coords = np.stack(
            [_random.randbelow(source, np.full(draw, s, dtype=np.uint64)) for s in shape], axis=1
        ).astype(np.int64)
        cand = grid.encode(coords)
        # reject occupied cells
        if occupied_keys.size:
            idx = np.minimum(np.searchsorted(occupied_keys, cand), occupied_keys.size - 1)
            cand = cand[occupied_keys[idx] != cand]
        # keep first occurrences in draw order, then drop ones already chosen
        _, first = np.unique(cand, return_index=True)
        cand = cand[np.sort(first)]
        if chosen.size:
            cs = np.sort(chosen)
            idx = np.minimum(np.searchsorted(cs, cand), cs.size - 1)
            cand = cand[cs[idx] != cand]
        chosen = np.concatenate([chosen, cand[:need]])
    return chosen


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

    all_keys = np.concatenate([rel_keys, empty_keys])
    all_vals = np.concatenate([rel_vals, empty_vals.astype(rel_vals.dtype)])
    order = np.argsort(all_keys, kind="stable")  # canonical order reveals nothing
    return NoisyHistogram(
        grid=grid, kind="sparse", values=all_vals[order], keys=all_keys[order],
        theta=float(theta), noise=noise.name, epsilon=noise.epsilon,
    )
