"""Core cells: cells whose noisy neighbour sum reaches the threshold.

Post-processing of the released histogram only. With noisy neighbour sum
S(X) = sum_{NB(X)} x~ and the noisy upper bound UB~(X) = S(X) + Gamma_low, the
paper's practical rule (Section "Choice of Parameters") raises the user's
MinPts by tau = Gamma_low + Gamma_up: X is core iff UB~(X) >= MinPts + tau,
that is S(X) >= MinPts + Gamma_up. The theoretical rule UB~(X) >= MinPts is
S(X) >= MinPts - Gamma_low. (The paper has Gamma_low = Gamma_up = Gamma,
which holds for the dense histogram only; bounds.margins.)
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

import numpy as np

from ....cells.grid import MAX_KAPPA, Grid, neighbour_offsets
from ....cells.histogram import NoisyHistogram
from ....cells.subcells import SubcellLayout, position_offsets, union_offsets
from ...pruning import core_candidates
from ...sums import SumsAt, dense_candidates, dense_neighbour_sums, neighbourhood, sparse_neighbour_sums
from .boundsums import run_sums
from .positionsums import SUMS_CHUNK, position_sums
from .triesums import core_cells_by_boxes


def sum_threshold(
    min_samples: float, gamma: float, raise_min_samples: bool = True, gamma_upper: float | None = None
) -> float:
    """Threshold on the noisy neighbour sum S(X): MinPts + Gamma_up (practical
    rule) or MinPts - Gamma_low (theoretical). ``gamma`` is Gamma_low;
    ``gamma_upper`` defaults to it (the dense histogram)."""
    if raise_min_samples:
        return min_samples + (gamma if gamma_upper is None else gamma_upper)
    return min_samples - gamma


def core_cells(
    hist: NoisyHistogram, threshold: float, layout: SubcellLayout | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys of core cells and their noisy neighbour sums.

    With a :class:`~dpdbscan.subcells.SubcellLayout` of ``k > 1`` the keys
    are of core *sub-cells* in ``layout.fine``.
    """
    unreachable = threshold > 0 and _below_all_sums(hist, threshold)
    # No sum over any subset of cells can reach the threshold (in high
    # dimension the margin alone can exceed all the released mass); or NB has
    # more cells than can be enumerated (d >= 9 at eta = 4): by a fixed,
    # public rule such a release has no core cell (mechanism.configure warns
    # before any budget is spent).
    if unreachable or hist.grid.kappa > MAX_KAPPA:
        fine = hist.grid if layout is None else layout.fine
        return np.empty(0, dtype=fine.key_dtype), np.zeros(0, dtype=hist.values.dtype)
    if layout is None or layout.k == 1:
        return _core_cells(hist, threshold, None, hist.grid.kappa)
    # Each NB(q) is a subset of NB(X), so a sub-cell's sum is at most the sum
    # of the positive values over NB(X): only cells where that reaches the
    # threshold can hold a core sub-cell (speed only; tests/post/test_core.py).
    cand = _candidate_cells(hist, threshold, layout)
    if hist.kind != "dense" and compiled(hist.grid):
        found: Iterable[tuple[np.ndarray, np.ndarray]] = _by_positions(hist, cand, threshold, layout)
    else:
        found = _by_offsets(hist, cand, threshold, layout)
    keys, sums = [], []
    # the positions in the order of layout.positions, without making their
    # offsets (in 8-D with two sub-cells, 256 lists of 593k offsets)
    for pos, (ck, cs) in zip(itertools.product(range(layout.k), repeat=hist.grid.d), found):
        fk = layout.fine_keys(ck, pos)
        # fine_keys drops sub-cells outside the box: keep sums aligned
        if fk.size != ck.size:
            c = hist.grid.decode(ck) * layout.k + np.asarray(pos)
            cs = cs[np.all(c < np.asarray(layout.fine.shape), axis=1)]
        keys.append(fk)
        sums.append(cs)
    all_keys, all_sums = np.concatenate(keys), np.concatenate(sums)
    order = np.argsort(all_keys, kind="stable")
    return all_keys[order], all_sums[order]


def _by_offsets(
    hist: NoisyHistogram, cand: np.ndarray, threshold: float, layout: SubcellLayout
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`_by_positions` position by position, each position's sums over
    its offsets (dense releases, and sparse ones without compiled kernels)."""
    sums_at = SumsAt(hist)
    per = _query_chunk(hist)
    for _, offsets in layout.positions:
        assert offsets is not None  # only k = 1 has a position without offsets
        yield _at_least(cand, functools.partial(sums_at, offsets=offsets), threshold, per)


def _by_positions(
    hist: NoisyHistogram, cand: np.ndarray, threshold: float, layout: SubcellLayout
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per sub-position (in ``layout.positions`` order), the sorted candidate
    cells whose sub-cell there has a sum reaching ``threshold``, and those
    sums: every position's sums of a chunk of candidates in one walk
    (:func:`~dpdbscan.post.coretests.bound.positionsums.position_sums`, the
    same sums as the run walk of each position's offsets)."""
    n_pos = layout.k**hist.grid.d
    parts: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(n_pos)]
    per = max(1, SUMS_CHUNK // n_pos)
    for start in range(0, cand.size, per):
        q = cand[start : start + per]
        s = position_sums(hist.grid, hist.released_keys, hist.values, q, layout.k)
        for p in range(n_pos):
            keep = s[:, p] >= threshold
            parts[p].append((q[keep], s[keep, p]))
    empty = (cand[:0], np.zeros(0, dtype=np.int64 if hist.values.dtype.kind in "iub" else np.float64))
    return [
        (np.concatenate([a for a, _ in got]), np.concatenate([b for _, b in got])) if got else empty
        for got in parts
    ]


def _below_all_sums(hist: NoisyHistogram, threshold: float) -> bool:
    """True when the positive released values together stay below the
    threshold, so that no neighbour sum can reach it."""
    v = hist.values
    mass = v[v > 0].sum()  # exact for integer counts
    if v.dtype.kind == "f":  # room for the rounding of float sums
        return float(mass) * (1 + 1e-9) + 1e-9 < threshold
    return int(mass) < threshold


def _candidate_cells(hist: NoisyHistogram, threshold: float, layout) -> np.ndarray:
    """Cells X whose positive neighbour sum sum_{NB(X)} max(x~, 0) reaches the
    threshold: a superset of the cells holding a core sub-cell."""
    grid, vals = hist.grid, hist.values
    if not _positions_within_nb(grid.d, float(grid.eta), layout.k):
        return _all_keys(hist)  # not a subset: every cell is a candidate
    if hist.kind == "dense":
        n_terms = layout.kappa_q  # the most offsets of one NB(q)
        cand = dense_candidates(grid, vals, threshold, n_terms)
        if cand is not None:
            return cand
    if vals.size and vals.min() < 0:
        hist = replace(hist, values=np.maximum(vals, 0))
    if vals.dtype.kind == "f" and threshold > 0:  # room for the rounding of prefix sums
        threshold = max(threshold - 1e-9 * (1.0 + float(np.abs(vals).sum())), threshold / 2)
    return _core_cells(hist, threshold, None, grid.kappa)[0]


@functools.lru_cache(maxsize=64)
def _positions_within_nb(d: int, eta: float, k: int) -> bool:
    """Whether every sub-position's NB(q) lies in the grid's NB (it does,
    NB(q) being the cells within alpha of a part of X): one check of a
    superset of them all, else each. Offsets compared as int64 codes (the
    void rows' ``np.isin`` took 10-30 s of CPU in 8-D)."""
    nb = neighbour_offsets(d, eta)
    top = int(np.abs(nb).max(initial=0))

    def codes(offsets: np.ndarray) -> np.ndarray | None:
        o = np.asarray(offsets, dtype=np.int64).reshape(-1, d)
        if o.size and int(np.abs(o).max()) > top:
            return None  # beyond NB's reach: not in it
        return (o + top) @ ((2 * top + 1) ** np.arange(d, dtype=np.int64))

    held = codes(nb)
    assert held is not None

    def within_nb(offsets: np.ndarray) -> bool:
        c = codes(offsets)
        return c is not None and bool(np.isin(c, held).all())

    if within_nb(union_offsets(d, eta, k)):
        return True
    return all(within_nb(position_offsets(d, eta, k, pos)) for pos in itertools.product(range(k), repeat=d))


def _all_keys(hist: NoisyHistogram) -> np.ndarray:
    grid = hist.grid
    if hist.kind == "dense":
        return grid.encode(grid.all_coords())
    return neighbourhood(grid, hist.sparse()[0])


def _core_cells(hist: NoisyHistogram, threshold: float, offsets, kappa: int):
    grid = hist.grid
    if hist.kind == "dense":
        # cells near a heavy enough cell, when few: same sums, fewer cells
        n_terms = grid.kappa if offsets is None else len(offsets)
        cand = dense_candidates(grid, hist.values, threshold, n_terms)
        if cand is not None:
            sums = SumsAt(hist)(cand, grid.offsets if offsets is None else offsets)
            mask = sums >= threshold
            return cand[mask], sums[mask]
        S = dense_neighbour_sums(grid, hist.values, offsets)
        mask = S >= threshold
        coords = np.argwhere(mask)
        return grid.encode(coords), S[mask]  # row-major order == key order
    keys, vals = hist.sparse()
    if threshold <= 0:
        raise ValueError(
            f"the core threshold on neighbour sums is {threshold:.3g} <= 0, so every cell "
            "of the universe would be core; raise min_samples or use raise_min_samples=True"
        )
    if offsets is None and compiled(grid) and vals.size and vals.min() >= 0:
        # boxes from coarse to fine, bounding their cells' sums (triesums.py)
        return core_cells_by_boxes(grid, keys, vals, threshold)
    if vals.size and vals.min() >= 0:
        # A sum of kappa non-negative values reaches the threshold only if one
        # of them reaches threshold / kappa: candidates lie around those.
        heavy = keys[vals * kappa >= threshold]
        if heavy.size * grid.kappa > _BUCKET_PRUNE_ABOVE:
            cand = core_candidates(grid, keys, vals, heavy, threshold)
        else:
            cand = neighbourhood(grid, heavy)
    else:
        cand = neighbourhood(grid, keys)
    if compiled(grid):
        return _at_least(
            cand, lambda q: run_sums(grid, keys, vals, q, offsets), threshold, _query_chunk(hist)
        )
    return _at_least(
        cand, lambda q: sparse_neighbour_sums(grid, keys, vals, q, offsets), threshold, _query_chunk(hist)
    )


def compiled(grid: Grid) -> bool:
    """Whether the compiled kernels take the sums of a sparse release on
    ``grid``: from 4-D up (below, numpy is fast and a fit must not import
    numba), with int64 keys."""
    return grid.d >= 4 and not grid.wide


_BUCKET_PRUNE_ABOVE = 4_000_000
#: Pairs (candidate, released cell within reach) a chunk of candidates may
#: hold at most (each a few int64s), counting kappa per candidate or every
#: released cell, whichever is fewer.
PAIRS_CHUNK = 1 << 24


def _query_chunk(hist: NoisyHistogram) -> int:
    """Candidates whose sums are taken at once: bounded by :data:`PAIRS_CHUNK`
    pairs, but never fewer than the released cells (each call also reads
    all of them once)."""
    n_released = hist.values.size if hist.kind == "dense" else hist.sparse()[0].size
    return max(1 << 12, n_released, PAIRS_CHUNK // max(1, min(hist.grid.kappa, n_released)))


def _at_least(
    cand: np.ndarray, sums_of: Callable[[np.ndarray], np.ndarray], threshold: float, per: int
) -> tuple[np.ndarray, np.ndarray]:
    """The candidates whose sum reaches ``threshold``, and those sums, taken
    ``per`` candidates at a time: a cell's sum does not depend on which
    other cells are asked with it, so the result is the same as in one go,
    with the pairs of one chunk in memory only."""
    keys, sums = [], []
    for start in range(0, max(cand.size, 1), per):
        q = cand[start : start + per]
        s = sums_of(q)
        keep = s >= threshold
        keys.append(q[keep])
        sums.append(s[keep])
    if len(keys) == 1:
        return keys[0], sums[0]
    return np.concatenate(keys), np.concatenate(sums)


def neighbour_sums(hist: NoisyHistogram) -> tuple[np.ndarray, np.ndarray]:
    """Noisy neighbour sums of every cell that has a released neighbour.

    Returns (keys, sums); for a dense histogram, every cell (for plots).
    """
    grid = hist.grid
    if hist.kind == "dense":
        S = dense_neighbour_sums(grid, hist.values)
        return grid.encode(grid.all_coords()), S.ravel()
    keys, vals = hist.sparse()
    cand = neighbourhood(grid, keys)
    return cand, sparse_neighbour_sums(grid, keys, vals, cand)
