"""Core cells: cells whose noisy neighbour sum reaches the threshold.

Post-processing of the released histogram only. With noisy neighbour sum
S(X) = sum_{NB(X)} x~ and the noisy upper bound UB~(X) = S(X) + Gamma, the
paper's practical rule (Section "Choice of Parameters") raises the user's
MinPts by tau = 2 Gamma: X is core iff UB~(X) >= MinPts + tau, that is
S(X) >= MinPts + Gamma. The theoretical rule UB~(X) >= MinPts is S(X) >=
MinPts - Gamma.
"""

from __future__ import annotations

import numpy as np

from .histograms.base import (
    NoisyHistogram, dense_neighbour_sums, neighbourhood, sparse_neighbour_sums,
)


def sum_threshold(min_samples: float, gamma: float, raise_min_samples: bool = True) -> float:
    """Threshold on the noisy neighbour sum S(X)."""
    return min_samples + gamma if raise_min_samples else min_samples - gamma


def core_cells(hist: NoisyHistogram, threshold: float):
    """Sorted keys of core cells and their noisy neighbour sums."""
    grid = hist.grid
    if hist.kind == "dense":
        S = dense_neighbour_sums(grid, hist.values)
        mask = S >= threshold
        coords = np.argwhere(mask)
        return grid.encode(coords), S[mask]  # row-major order == key order
    keys, vals = hist.keys, hist.values
    if threshold <= 0:
        raise ValueError(
            f"the core threshold on neighbour sums is {threshold:.3g} <= 0, so every cell "
            "of the universe would be core; raise min_samples or use raise_min_samples=True"
        )
    if vals.size and vals.min() >= 0:
        # A sum of kappa non-negative values reaches the threshold only if one
        # of them reaches threshold / kappa: candidates lie around those.
        heavy = keys[vals * grid.kappa >= threshold]
    else:
        heavy = keys
    cand = neighbourhood(grid, heavy)
    sums = sparse_neighbour_sums(grid, keys, vals, cand)
    mask = sums >= threshold
    return cand[mask], sums[mask]


def neighbour_sums(hist: NoisyHistogram):
    """Noisy neighbour sums of every cell that has a released neighbour.

    Returns (keys, sums); for a dense histogram, every cell (for plots).
    """
    grid = hist.grid
    if hist.kind == "dense":
        S = dense_neighbour_sums(grid, hist.values)
        return grid.encode(grid.all_coords()), S.ravel()
    cand = neighbourhood(grid, hist.keys)
    return cand, sparse_neighbour_sums(grid, hist.keys, hist.values, cand)
