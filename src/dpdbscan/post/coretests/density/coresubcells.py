"""The density core test: sub-cells whose estimated alpha-ball count reaches
MinPts + margin in an occupied cell, with candidate pruning, and the
small-data note. Post-processing of the release and public parameters only."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ....cells.grid import Grid, lookup
from ....cells.histogram import NoisyHistogram
from ....cells.pairs import plan
from ....laws.noise import tail as noise_tail
from ...pruning import live_cells
from ...sums import (
    chebyshev_radii,
    kernel_shells,
    kernel_sums_at,
    kernel_sums_from,
    reaching_sums,
    sparse_neighbour_sums,
)
from .cover import COMPILED_FROM_D, cover_pays, cover_sums, dense_cover_candidates, shell_cover
from .densitymargin import Margin, empty_truncation, margin, noise_variance
from .weightedsums import (
    ExactRows,
    WalkBounds,
    may_reach,
    reach_pays,
    run_bounds,
    walk_bounds,
    weighted_sums_at,
)
from .weights import BallWeights, ball_weights


@dataclass(frozen=True)
class DensityCore:
    """Core sub-cells of a release under the density test.

    Attributes
    ----------
    fine : Grid
        The sub-cell grid (width w / k).
    keys : ndarray
        Sorted keys (in ``fine``) of the core sub-cells.
    estimates : ndarray
        E~(q) of each core sub-cell.
    margin : Margin
        m(q) per sub-position; the threshold is ``min_samples + margin.values``.
    weights : BallWeights
    min_samples : float
    occupancy : float
        The occupancy share of the condition (0: none).
    """

    fine: Grid
    keys: np.ndarray
    estimates: np.ndarray
    margin: Margin
    weights: BallWeights
    min_samples: float
    occupancy: float


def fine_grid(grid: Grid, k: int) -> Grid:
    """The grid of sub-cells of width w / k (the histogram grid for k = 1)."""
    return grid.subdivided(k)


#: The density test weighs every cell of an eps-neighbourhood; beyond this many
#: cells (d > 8 at eta = 4, or an eps far above a release's resolution) it is
#: not attempted. Sparse releases in high dimension sum over the pairs of
#: released cells within reach (:mod:`dpdbscan.cells.pairs`), so the count
#: costs memory for the weights (a float per cell) but not time per cell.
MAX_KAPPA = 2_000_000

OCCUPANCY = 0.5  # share: a core sub-cell's cell holds >= share x the ball's mean count per cell
OCCUPANCY_SIGMAS = 2.0  # ... or at least this many standard deviations of one cell's noise


@dataclass
class Unsettled:
    """Estimates of a :class:`DensityField` that are the walk's sums
    (:class:`~.weightedsums.WalkBounds`, one sub-position) or the sums by
    runs (:func:`~.weightedsums.run_bounds`, 3-D), each within ``room`` of
    the matrix product's (``room`` 0 once it is the product's).
    The product's sums decide every comparison, so an estimate within
    twice its room of a threshold is replaced by the product's first
    (:meth:`settle`): the field decides the same cores, bit for bit, as
    from the product's sums everywhere, and a coarse 8-D grid (4^8 cells
    under a ball of 1.28M offsets, most of which leave it) computes the
    product for next to no cells.

    Attributes
    ----------
    exact : ExactRows
        The product's sums of the candidate cells, by row on demand.
    rows : ndarray
        Each estimate's row there.
    room : ndarray
        Each estimate's room.
    cols : ndarray
        Each estimate's column there (its sub-position).
    """

    exact: ExactRows
    rows: np.ndarray
    room: np.ndarray
    cols: np.ndarray

    def settle(self, estimates: np.ndarray, thresholds: np.ndarray) -> None:
        """Replace by the product's sums the ``estimates`` that lie within
        twice their room of ``thresholds`` (in place)."""
        near = (self.room > 0) & (np.abs(estimates - thresholds) <= 2.0 * self.room)
        self.fix(estimates, np.flatnonzero(near))

    def fix(self, estimates: np.ndarray, idx: np.ndarray) -> None:
        """Replace ``estimates[idx]`` by the product's sums (in place)."""
        if idx.size:
            estimates[idx] = self.exact.rows(self.rows[idx])[np.arange(idx.size), self.cols[idx]]
            self.room[idx] = 0.0


@dataclass(frozen=True)
class DensityField:
    """E~(q) of every occupied sub-cell that can be core at any MinPts >= the
    one the field was built for: one weighted-sum pass serves every MinPts.

    Attributes
    ----------
    hist : NoisyHistogram
    fine : Grid
    keys : ndarray
        Sorted keys (in ``fine``) of the occupied candidate sub-cells.
    estimates : ndarray
        E~(q) of each.
    position : ndarray
        Index of each one's sub-position (row of the weights).
    weights : BallWeights
    margin_rule, beta, guard, occupancy :
        The public rule of the margin and the occupancy condition.
    """

    hist: NoisyHistogram
    fine: Grid
    keys: np.ndarray
    estimates: np.ndarray
    position: np.ndarray
    weights: BallWeights
    margin_rule: str | float
    beta: float
    guard: bool
    occupancy: float
    min_samples: float
    unsettled: Unsettled | None = None

    def margin(self, min_samples: float) -> Margin:
        """m(q) per sub-position at this MinPts (public quantities only)."""
        h = self.hist
        return margin(
            self.margin_rule,
            self.weights,
            h.noise,
            h.scale,
            self.beta,
            h.grid.n_cells,
            min_samples=min_samples,
            truncation=empty_truncation(h.kind, h.theta),
            guard=self.guard,
        )

    def thresholds(self, min_samples: float) -> np.ndarray:
        """MinPts + m(q) per sub-position."""
        return min_samples + self.margin(min_samples).values

    def core_mask(self, min_samples: float) -> np.ndarray:
        """Which of ``keys`` are core at this MinPts."""
        if min_samples < self.min_samples:
            raise ValueError(
                f"this field was built for min_samples >= {self.min_samples:g}, got {min_samples:g}"
            )
        thresholds = self.thresholds(min_samples)[self.position]
        if self.unsettled is not None:
            self.unsettled.settle(self.estimates, thresholds)
        return self.estimates >= thresholds

    def core(self, min_samples: float) -> DensityCore:
        """The core sub-cells at this MinPts."""
        sel = self.core_mask(min_samples)
        return DensityCore(
            self.fine,
            self.keys[sel],
            self.estimates[sel],
            self.margin(min_samples),
            self.weights,
            float(min_samples),
            self.occupancy,
        )


def density_field(
    hist: NoisyHistogram,
    min_samples: float,
    *,
    subcells: int = 2,
    margin_rule: str | float = 1.0,
    beta: float = 0.1,
    estimate: str = "average",
    occupancy: float = OCCUPANCY,
    occupancy_sigmas: float = OCCUPANCY_SIGMAS,
    guard: bool = True,
) -> DensityField:
    """The :class:`DensityField` of a release for every MinPts >= ``min_samples``;
    ``density_field(...).core(m)`` is the density test at MinPts m: the
    sub-cells q with E~(q) >= m + m(q) whose cell is occupied.

    Occupancy: DBSCAN's core points are data points, so an empty spot between
    two clusters is never core even when MinPts points lie within alpha of
    it. The release resolves occupancy only per cell, and the cell-uniform
    model behind E~ would put points in every sub-cell of a cell holding any.
    So a sub-cell of cell X is core only if also

        x~_X > c_1 sigma_Z   or   x~_X >= share * E~(q) / S(q),   S(q) = sum_Y W(q, Y),

    i.e. X reads as clearly non-empty (c_1 = ``occupancy_sigmas`` standard
    deviations of one cell's noise, 2 by default) or holds at least
    ``share`` times the mean count per cell of q's alpha-ball. A cell in a
    gap beside clusters fails both (x_X ~ 0 while the ball is full); a cell
    inside a cluster or on a thin filament passes the second (its density is
    about the ball's, or more), a sparse edge cell of a dense cluster the
    first. ``occupancy=0`` drops the condition; ``occupancy_sigmas < 0`` drops
    the first alternative.

    Post-processing of ``hist`` and public parameters only. Candidate cells:
    with share > 0 a core sub-cell's own cell holds x~_X >= share T / max S
    (T the smallest threshold), so only those cells are evaluated; with
    share = 0, the cells within reach of a cell holding >= T / max S.
    """
    grid = hist.grid
    k = int(subcells)
    share = float(occupancy)
    occupancy_sigmas = float(occupancy_sigmas)
    if not (math.isfinite(share) and share >= 0):
        raise ValueError(f"occupancy must be a number >= 0, got occupancy={occupancy!r}")
    weights = ball_weights(grid.d, float(grid.eta), k, estimate)
    m = margin(
        margin_rule,
        weights,
        hist.noise,
        hist.scale,
        beta,
        grid.n_cells,
        min_samples=min_samples,
        truncation=empty_truncation(hist.kind, hist.theta),
        guard=guard,
    )
    thresholds = min_samples + m.values
    fine = fine_grid(grid, k)
    tmin = float(thresholds.min())
    if tmin <= 0:
        raise ValueError(
            f"the density threshold is {tmin:.3g} <= 0, so every sub-cell of the universe "
            "would be core; raise min_samples"
        )
    # the thresholds only grow with MinPts (m(q) = max(c sigma, G_0 - MinPts) with
    # the guard), so cells that fail the smallest fail every larger MinPts
    S = weights.sums
    if share > 0:
        # (own > c sigma_Z or own >= share E/S) and E >= T imply own >= min(c sigma_Z, share T/S)
        occ_abs = occupancy_sigmas * math.sqrt(noise_variance(hist.noise, hist.scale))
        cut = (
            min(occ_abs, share * tmin / float(S.max()))
            if occupancy_sigmas >= 0
            else share * tmin / float(S.max())
        )
        occupied_cut = max(cut, 1e-12) * (1 - 1e-9)
        heavy_cut = tmin / float(S.max()) * (1 - 1e-9)
        # a large dense 3-D integer release: the steps below in three
        # compiled passes over the grid, the same cells (cover.py)
        fused = dense_cover_candidates(
            hist,
            weights,
            occupied_cut,
            heavy_cut,
            tmin * (1 - 1e-9),
            lambda: _cover_beats_noise(hist, weights, tmin),
        )
        if fused is not None:
            cand, own = fused
        else:
            if hist.kind == "dense":
                # row-major indices first, keys only of the cells kept
                cand_flat, own = _occupied_flat(hist.values, occupied_cut)
                if cand_flat.size:
                    # E~(q) >= T needs a cell in NB(X) holding >= T / max S: among
                    # the occupied cells when that cut is the higher (the same
                    # cells as a scan of every value, without one)
                    if heavy_cut >= occupied_cut:
                        heavy = cand_flat[at_least(own, heavy_cut)]
                    else:
                        heavy = np.flatnonzero(at_least(hist.values.ravel(), heavy_cut))
                    if heavy.size * weights.offsets.shape[0] < cand_flat.size:
                        near = np.ascontiguousarray(_dense_near_mask(grid, heavy, weights.offsets))
                        keep = near.reshape(-1)[cand_flat]
                        cand_flat, own = cand_flat[keep], own[keep]
                cand = _keys_of_flat(grid, cand_flat)
            else:
                cand, own = _occupied_cells(hist, occupied_cut)
            if hist.kind == "dense" and cand.size:
                pays = cover_pays(grid.shape, weights.offsets, cand.size)
                if pays and _cover_beats_noise(hist, weights, tmin):
                    # cells whose noise clears the cut: the box cover of the
                    # positive parts rules most of them out (cover.py)
                    bound = cover_sums(hist, cand, weights, own, tmin * (1 - 1e-9))
                    if bound is not None:
                        keep = bound >= tmin * (1 - 1e-9)
                        cand, own = cand[keep], own[keep]
            elif cand.size and hist.values.min() >= 0:
                keep = _reachable(hist, cand, tmin * (1 - 1e-9), weights, own)
                cand, own = cand[keep], own[keep]
    else:
        cand = _candidates(hist, weights, tmin)
        own = None
    E = unsettled = exact = None
    bounds: WalkBounds | None = None
    if reach_pays(hist, weights.offsets, cand.size):
        # an upper bound of every sub-position's sum in one compiled pass: the
        # exact sums below only for the cells it cannot rule out
        bounds = walk_bounds(hist, weights, cand)
        keep = may_reach(hist, weights, cand, tmin) if bounds is None else bounds.reach(tmin)
        cand = cand[keep]
        own = None if own is None else own[keep]
        if bounds is not None:
            bounds = WalkBounds(bounds.sums[keep], bounds.room[keep])
    else:
        # 3-D, one sub-position, large gathers: the sums by runs (the
        # candidates kept whole: the product's blocks are those of all of them)
        bounds = run_bounds(hist, weights, cand)
    if bounds is not None and hist.kind == "dense" and bounds.sums.size == cand.size * len(weights.positions):
        # the sums themselves (the walk's with one sub-position, the runs'
        # with any), in their own order; the product's sums only where the
        # comparisons below (and the field's at a larger MinPts, Unsettled)
        # are too close to call: the whole row of a cell where any of its
        # sub-positions is
        E, room = bounds.sums.reshape(cand.size, len(weights.positions)), bounds.room
        exact = ExactRows(hist, weights, cand)
        near = np.any(np.abs(E - thresholds[None, :]) <= 2.0 * room[:, None], axis=1)
        if own is not None:
            lo = share * (E - 2.0 * room[:, None]) / S[None, :]
            hi = share * (E + 2.0 * room[:, None]) / S[None, :]
            near |= np.any((own[:, None] >= lo) & (own[:, None] < hi), axis=1)
        fix = np.flatnonzero(near)
        if fix.size:
            E[fix] = exact.rows(fix)
            room[fix] = 0.0
    if E is None:
        E = weighted_sums_at(hist, weights, cand)
    live = E >= thresholds[None, :]
    if own is not None:
        occupied = own[:, None] >= share * E / S[None, :]
        if occupancy_sigmas >= 0:
            occupied |= (own > occ_abs)[:, None]
        live &= occupied
    rows, cols = np.nonzero(live)
    pos = np.asarray(weights.positions, dtype=np.int64).reshape(-1, grid.d)
    fc = grid.decode(cand[rows]) * k + pos[cols]
    inside = np.all(fc < np.asarray(fine.shape), axis=1)
    fkeys = fine.encode(fc[inside])
    est = E[rows, cols][inside]
    position = cols[inside]
    order = np.argsort(fkeys, kind="stable")
    if exact is not None:
        at = rows[inside][order]
        if room[at].any():
            unsettled = Unsettled(exact, at, room[at], position[order])
    return DensityField(
        hist,
        fine,
        fkeys[order],
        est[order],
        position[order],
        weights,
        margin_rule,
        float(beta),
        bool(guard),
        share,
        float(min_samples),
        unsettled,
    )


def _cover_beats_noise(hist: NoisyHistogram, weights: BallWeights, threshold: float) -> bool:
    """Whether the box cover can rule out a cell of a dense release that
    holds noise alone: there its bound is about the cover's total weight
    times the mean positive part of the noise, E Z+ = E|Z| / 2 <= sigma / 2,
    which must stay below the threshold (a public estimate: the weights,
    the noise's law and scale). Below :data:`~.cover.COMPILED_FROM_D` always
    (nothing else rules those cells out before the exact sums). 3-D: 35
    cells' worth of weight; 4-D: 156, and at the benchmark's noise (sigma
    1.36) a bound near 106 against a threshold of 54: at eps = 0.04 it kept
    1.36M of 1.69M candidates for 1 s of CPU, and the compiled bound of
    :func:`~.weightedsums.may_reach`, which reads the signed values, decides
    them alone (6,455 kept)."""
    if hist.grid.d < COMPILED_FROM_D:
        return True
    R = max(int(weights.offsets.max()), -int(weights.offsets.min())) if weights.offsets.size else 0
    cube = (
        np.array(np.meshgrid(*[np.arange(-R, R + 1)] * hist.grid.d, indexing="ij")).reshape(hist.grid.d, -1).T
    )
    weight = float(shell_cover(weights.offsets, weights.kmax).pointwise(cube).sum())
    return weight * math.sqrt(noise_variance(hist.noise, hist.scale)) / 2 < threshold


def _reachable(
    hist: NoisyHistogram,
    cand: np.ndarray,
    threshold: float,
    weights: BallWeights,
    own: np.ndarray | None = None,
) -> np.ndarray:
    """Mask of candidate cells X whose released mass over NB(X) (weighted by
    the kernel max_q W(q, o) where the self-join of the released cells is
    the way) reaches the threshold. On a non-negative release E~(q) <=
    sum_o max_q W(q, o) x~_{X+o} <= sum_{NB(X)} x~ (W <= 1 and NB(q) within
    NB(X)), so the others cannot hold a core sub-cell.

    A sparse release scatters many lone empty cells over the universe. On a
    small universe the box bound of :mod:`.cover` (sum_o max_q W(q, o) x~_{X+o}
    from above, a few box sums of one summed-area table) rules out nearly
    all of them; elsewhere a block sum over buckets of ``side >= reach``
    cells (NB(X) lies in the 3^d buckets around X's) discards some at the
    cost of one small dense array, then the exact sums by runs decide the rest.

    From :data:`JOIN_FIRST_FROM_D` up the self-join goes first and the cover
    only where it is not the way: there the cover's boxes hold far more than
    the ball (5-D: 16,807 cells around a ball of 3,903), so on a release of
    many noise cells it keeps most of them (5-D at eps = 0.08, 628k released
    cells: 1.1 s of CPU, 260k kept, then 3.4 s of exact sums), where the
    join gives their kernel sums (1.5 s, 2,858 kept) or, at eps = 0.06,
    0.2-0.3 s against the cover's 0.7 s.
    """
    mask = np.ones(cand.size, dtype=bool)
    join_first = hist.grid.d >= JOIN_FIRST_FROM_D
    if not join_first:
        cover = cover_sums(hist, cand, weights, own, threshold)
        if cover is not None:
            # within 2x of the weighted sums themselves (156 cells' worth of weight
            # against 79 in 4-D), where the NB sums weigh 609 cells by 1: they
            # would discard next to nothing more; the weighted sums decide the rest
            return cover >= threshold
    joined = _joined_kernel_sums(hist, cand, weights, threshold)
    if joined is not None:
        return joined
    if join_first:
        cover = cover_sums(hist, cand, weights, own, threshold)
        if cover is not None:
            return cover >= threshold
    blocks = _bucket_block_sums(hist, cand)
    if blocks is not None:
        mask = blocks >= threshold
    idx = np.flatnonzero(mask)
    if idx.size:
        sums = sparse_neighbour_sums(hist.grid, hist.released_keys, hist.values, cand[idx])
        mask[idx[sums < threshold]] = False
    return mask


#: The dimension from which :func:`_reachable` tries the self-join of the
#: released cells before the box cover (measured in 4-D and 5-D on the
#: benchmark's points: in 4-D the cover is 3-4x cheaper, 0.08 s against
#: 0.28 s at eps = 0.03, and as tight; in 5-D at eps = 0.06 and 0.08 the
#: join costs 0.3 and 1.5 s where the cover and the exact sums of what it
#: keeps cost 0.7 and 4.5 s)
JOIN_FIRST_FROM_D = 5


def _joined_kernel_sums(
    hist: NoisyHistogram, cand: np.ndarray, weights: BallWeights, threshold: float
) -> np.ndarray | None:
    """Mask of the candidates whose kernel sums from a self-join of the
    released cells (see :func:`_reachable`) reach the threshold, or None
    where the join is not the way (public sizes)."""
    # most candidates are most released cells: their kernel sums from one
    # self-join of the released cells, each pair used both ways. The kernel
    # K(o) = max_q W(q, o) bounds every position's weights, so on a
    # non-negative release E~(q) <= sum_o K(o) x~_{X+o}, far tighter than
    # the NB sum (294 cells' worth of weight against 3,903 cells in 5-D)
    kernel = (weights.offsets, weights.kmax)
    inner = _inner_kernel(hist.grid, *kernel, n_keys=hist.released_keys.size)
    capped = _capped_shell_sums(hist, cand, kernel, threshold, light=inner is not None)
    if capped is not None:
        return capped
    if inner is not None:
        # the kernel is all but zero on its outer shell (5-D: at most 0.7%
        # at Chebyshev radius 3): the sums over the inner offsets from a
        # self-join of reach R - 1, plus that weight times the block sum
        # around the cell (which holds the shell), a bound all the same
        off_in, k_in, w_out = inner
        sums = reaching_sums(hist.grid, hist.released_keys, hist.values, cand, (off_in, k_in))
        if sums is not None:
            blocks = _bucket_block_sums(hist, cand)
            assert blocks is not None  # (the inner kernel is chosen only when they fit)
            keep = sums + w_out * blocks >= threshold
            # where the blocks leave many (a release of many noise cells:
            # 5-D at eps = 0.08, 67,662 of 628k), the mass of the cube of
            # side 2R + 1 around each from a summed-area table of small
            # buckets (5-D: 8^5 cells against the blocks' 9^5; 12,496
            # left), then the shell's own sums at those cells, walked from
            # the same table of buckets: the whole kernel's sums (2,858 kept)
            idx = np.flatnonzero(keep)
            cube = _cube_masses(hist, cand[idx], int(np.abs(kernel[0]).max()))
            if cube is not None:
                keep[idx] = sums[idx] + w_out * cube >= threshold
                idx = idx[keep[idx]]
            if idx.size:
                # the shell: the kernel's offsets beyond the inner ones
                # (radius R; held with the kernel, as the inner part is)
                _, _, off_shell, k_shell = kernel_shells(*kernel)
                out = kernel_sums_at(
                    hist.grid, hist.released_keys, hist.values, cand[idx], (off_shell, k_shell)
                )
                keep[idx] = sums[idx] + out >= threshold
            return keep
    sums = reaching_sums(hist.grid, hist.released_keys, hist.values, cand, kernel)
    if sums is not None:
        return sums >= threshold
    return None


def _capped_shell_sums(
    hist: NoisyHistogram,
    cand: np.ndarray,
    kernel: tuple[np.ndarray, np.ndarray],
    threshold: float,
    *,
    light: bool = False,
) -> np.ndarray | None:
    """Mask of the candidates whose kernel sums reach the threshold, by a
    self-join of reach R - 1 and a bound of the kernel's outer shell
    (Chebyshev radius R) that caps the released values, or None where that
    is not the way (:func:`_capped_pays`, public sizes and the release).

    6-D at 2x the benchmark's alpha: the shell weighs up to 0.042 per
    offset and 5.02 in all (12,636 offsets, one coordinate at +-3), too
    much for the block sums of :func:`_inner_kernel` (9^6 cells around a
    cell hold a cluster or hundreds of noise cells), but the release is
    nearly all noise cells at theta or a little more. With a cap h, every
    released value is min(x, h) + (x - h)+, so on a non-negative release

        shell(X) <= h sum_shell K + sum_Y K(Y - X) (x_Y - h)+,

    the second sum over the few cells above the cap (the heavy ones), each
    walking the held table of buckets once (:func:`kernel_sums_from`). The
    cap is chosen from the R - 1 sums: the fewest heavy cells plus cells
    the bound cannot rule out (each costs a walk). Those left get their
    shell's own sums (:func:`kernel_sums_at`), so the kept set is the
    whole kernel's (6-D, alpha 0.1: 1,404 of 442,493; the R - 1 join and
    the bound cost about a third of the reach-R join).

    ``light``: the shell is light enough for the block sums of
    :func:`_inner_kernel` (5-D), so the R - 1 join is the way anyway and
    the cap takes the blocks' place where its walks cost less (5-D, alpha
    0.08: a cap of 106, 200 heavy cells, 3,331 cells left to the shell's
    sums, where the blocks and cube masses left about 12k).
    """
    grid, keys, values = hist.grid, hist.released_keys, hist.values
    offsets, weights = kernel
    cheb = chebyshev_radii(offsets)
    R = int(cheb.max()) if cheb.size else 0
    if R < 2 or grid.wide or keys.size == 0 or cand.size == 0:
        return None
    shell = cheb == R
    w_shell = float(weights[shell].sum()) * (1 + 1e-12)
    if w_shell <= 0 or not _capped_pays(grid, values, R, threshold, w_shell, light):
        return None
    # (the parts held with the kernel: their offset codes and classes too)
    off_in, w_in, off_shell, w_on_shell = kernel_shells(offsets, weights)
    sums = reaching_sums(grid, keys, values, cand, (off_in, w_in))
    if sums is None:
        return None
    h = _cap(values, sums, w_shell, threshold)
    heavy = np.flatnonzero(values > h)
    excess = kernel_sums_from(grid, keys, np.maximum(values - h, 0), heavy, (off_shell, w_on_shell))
    # (the join's sums are given for released cells only; the candidates
    # are most often all of them, in order)
    every = cand.size == keys.size and np.array_equal(cand, keys)
    keep = (
        sums + h * w_shell + (excess if every else excess[np.searchsorted(keys, cand)]) * (1 + 1e-12)
        >= threshold
    )
    idx = np.flatnonzero(keep)
    if idx.size:
        out = kernel_sums_at(grid, keys, values, cand[idx], (off_shell, w_on_shell))
        keep[idx] = sums[idx] + out >= threshold
    return keep


#: Caps tried by :func:`_cap`, as fractions of the one whose shell bound is
#: half the threshold
_CAPS = (0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5)


def _cap(values: np.ndarray, sums: np.ndarray, w_shell: float, threshold: float) -> float:
    """The cap of :func:`_capped_shell_sums` among :data:`_CAPS` that
    leaves the fewest walks: the cells above it plus the candidates whose
    R - 1 sums alone reach the threshold less the capped shell (the rest of
    the bound only adds to those)."""
    h0 = threshold / (2.0 * w_shell)
    best, at = -1, h0
    for f in _CAPS:
        h = f * h0
        if values.dtype.kind in "iu":
            h = float(math.floor(h))
        walks = int(np.count_nonzero(values > h)) + int(np.count_nonzero(sums >= threshold - h * w_shell))
        if best < 0 or walks < best:
            best, at = walks, h
    return at


#: Heavy cells and cells left (walks of the shell, about twice a cell's
#: share of the reach-R self-join each) beyond the cost of the R - 1 join
#: that :func:`_capped_pays` expects, per heavy cell
_LEFT_PER_HEAVY = 0.25


def _capped_pays(
    grid: Grid, values: np.ndarray, R: int, threshold: float, w_shell: float, light: bool = False
) -> bool:
    """Whether the self-join of reach R - 1 and the capped shell of
    :func:`_capped_shell_sums` should cost less than the self-join of reach
    R (the cost model of :func:`~dpdbscan.cells.pairs.plan` on the grid's
    shape, the released cells and those above the cap of half the
    threshold; a public model of sizes and the release). 6-D at alpha 0.1:
    22,904 of 442,493 cells above a cap of 8, 0.19 s and about 0.07 s of
    walks against 0.64 s; at alpha 0.075 the cap falls below theta, every
    cell is above it, and the reach-R join (0.17 s) stays. ``light``
    (5-D): against the block sums instead (alpha 0.08: 102 of 628k
    cells above a cap of 214)."""
    n = values.size
    h0 = threshold / (2.0 * w_shell)
    n_heavy = int(np.count_nonzero(values > h0))
    if n_heavy >= n // 4:
        return False
    extents = list(grid.shape)
    full = plan(grid.d, R, n, n, extents)[2]
    walks = 2.0 * full / n * n_heavy * (1 + _LEFT_PER_HEAVY)
    if light:
        # the R - 1 join is the way anyway: the cap against the block sums
        blocks = grid.d * math.prod(-(-s // R) + 2 for s in grid.shape) * _BLOCK_NS
        return walks < blocks
    return plan(grid.d, R - 1, n, n, extents)[2] + walks < full


_MAX_BUCKETS = 1 << 24  # at most 128 MB (float64 bincount, transient) + 2 x 64 MB (float32)
_OUTER_KERNEL = 0.01  # the kernel's largest weight on the shell left to the block sums
#: CPU costs of the two ways to the shell (measured in 5-D on the benchmark's
#: release, 368k cells and 4.1M buckets): the block sums, per bucket and
#: axis (a pass over the array each), against the self-join's shell, per
#: released cell (reach R against R - 1: 0.156 s against 0.113 s)
_BLOCK_NS, _SHELL_NS = 3.5, 120.0


def _inner_kernel(grid: Grid, offsets: np.ndarray, kernel: np.ndarray, n_keys: int | None = None):
    """``(offsets, weights, w_out)``: the kernel's offsets within Chebyshev
    radius R - 1 (R its reach) and its largest weight beyond, when that is
    below :data:`_OUTER_KERNEL` and the bucket block sums of side R fit their
    dense array and, given the released cells ``n_keys``, cost less than
    the whole kernel's self-join would more; else None. Public: the
    weights, the grid's shape and the number of released cells only."""
    R = max(int(offsets.max()), -int(offsets.min())) if offsets.size else 0
    buckets = math.prod(-(-s // R) + 2 for s in grid.shape) if R else 0
    if R < 2 or buckets > _MAX_BUCKETS:
        return None
    if n_keys is not None and grid.d * buckets * _BLOCK_NS > n_keys * _SHELL_NS:
        return None  # (a sparse release on a large universe: the join's shell is cheaper)
    off_in, k_in, _, k_out = kernel_shells(offsets, kernel)  # (held: radius < R, and R)
    w_out = float(k_out.max()) if k_out.size else 0.0
    if w_out > _OUTER_KERNEL:
        return None
    return off_in, k_in, w_out


def _bucket_block_sums(hist: NoisyHistogram, cand: np.ndarray):
    """Released mass in the 3^d block of buckets around each candidate's bucket
    (an upper bound of its NB sum), or None when the bucket array would be
    too large (huge universes: the exact sums alone are used)."""
    grid = hist.grid
    side = max(grid.reach, 1)
    while True:
        nb = [-(-s // side) + 2 for s in grid.shape]
        if math.prod(nb) <= _MAX_BUCKETS:
            break
        side *= 2
        if side > max(grid.shape):
            return None
    strides = np.ones(grid.d, dtype=np.int64)
    for i in range(grid.d - 2, -1, -1):
        strides[i] = strides[i + 1] * nb[i + 1]
    flat = (grid.decode(hist.released_keys) // side + 1) @ strides
    B = np.bincount(flat, weights=hist.values, minlength=math.prod(nb)).astype(np.float32)
    B = B.reshape(nb)
    for axis in range(grid.d):  # box sum of width 3 buckets along each axis
        C = B.copy()
        a, b = [slice(None)] * grid.d, [slice(None)] * grid.d
        a[axis], b[axis] = slice(1, None), slice(None, -1)
        C[tuple(a)] += B[tuple(b)]
        C[tuple(b)] += B[tuple(a)]
        B = C
    qc = grid.decode(cand) // side + 1
    # float32 rounding: a relative slack keeps the bound an upper bound
    return B[tuple(qc.T)].astype(np.float64) * (1 + 1e-5) + 1e-3


#: Buckets of the summed-area table of :func:`_cube_masses` at most (int64 or float64: 32 MB)
_MAX_CUBE_BUCKETS = 1 << 22
#: Table entries times axes per candidate up to which :func:`_cube_masses`
#: lays its table out: a candidate's walk of the shell costs about 8 us
#: (5-D, eps = 0.08: 67,662 of them in 0.55 s), an entry and axis of the
#: table a few ns (5-D, eps = 0.06: 3.2M buckets in 0.1 s for 2,074
#: candidates, which the walks finish in 6 ms: not laid out)
_CUBE_ENTRIES_PER_CELL = 1000


def _cube_masses(hist: NoisyHistogram, cand: np.ndarray, R: int) -> np.ndarray | None:
    """An upper bound of the released positive mass in the cube of half-side
    R around each candidate: the mass of the buckets (side s, the smallest
    whose table fits :data:`_MAX_CUBE_BUCKETS`) that the cube meets, from
    one summed-area table of the buckets (2^d corners per cell), or None
    when no side fits or the table would cost more than the walks it may
    save (a public cost model of the sizes: :data:`_CUBE_ENTRIES_PER_CELL`
    entries and axes per candidate). Sums of integer values are exact;
    float ones get room for the rounding of their prefix sums."""
    grid = hist.grid
    if cand.size == 0 or grid.wide:
        return None
    side = 1
    while math.prod(-(-s // side) + 1 for s in grid.shape) > _MAX_CUBE_BUCKETS:
        side *= 2
        if side > max(grid.shape):
            return None
    if math.prod(-(-s // side) + 1 for s in grid.shape) * grid.d > _CUBE_ENTRIES_PER_CELL * cand.size:
        return None
    nb = np.array([-(-s // side) for s in grid.shape], dtype=np.int64)
    dims = nb + 1  # index i holds the buckets below i
    strides = np.array([math.prod(dims[i + 1 :].tolist()) for i in range(grid.d)], dtype=np.int64)
    values = np.maximum(hist.values, 0)
    exact = values.dtype.kind in "iu"
    flat = (grid.decode(hist.released_keys) // side + 1) @ strides
    S = np.bincount(flat, weights=values, minlength=int(np.prod(dims))).reshape(tuple(dims.tolist()))
    if exact:
        S = S.astype(np.int64)
    for axis in range(grid.d):
        np.cumsum(S, axis=axis, out=S)
    S = S.ravel()
    q = grid.decode(cand)
    lo = np.clip((q - R) // side, 0, nb)
    hi = np.clip((q + R) // side + 1, 0, nb)
    out = np.zeros(cand.size, dtype=S.dtype)
    for corner in range(1 << grid.d):
        at = np.zeros(cand.size, dtype=np.int64)
        sign = 1
        for i in range(grid.d):
            if corner >> i & 1:
                at += hi[:, i] * strides[i]
            else:
                at += lo[:, i] * strides[i]
                sign = -sign
        if sign > 0:
            out += S[at]
        else:
            out -= S[at]
    if exact:
        return out.astype(np.float64)
    total = float(S[-1]) if S.size else 0.0
    return out + 2.0**grid.d * 1e-12 * (total + 1.0)


def at_least(values: np.ndarray, cut: float, out: np.ndarray | None = None) -> np.ndarray:
    """``values >= cut`` (a float cut): for integer values (a discrete
    release's) against the integer ``ceil(cut)``, the same booleans (an
    integer v is >= c exactly when v >= ceil(c); numpy compares them as
    floats, exact below 2^53) without converting every value to a float
    first (3.76M values: 3.6 ms to 1.4 ms of CPU). ``out``: a bool array
    to write them to."""
    if values.dtype.kind == "i" and math.isfinite(cut) and abs(cut) < 2.0**53:
        return np.greater_equal(values, np.int64(math.ceil(cut)), out=out)
    return np.greater_equal(values, cut, out=out)


#: Values of a dense release scanned at a time for the occupied cells
#: (:func:`_occupied_flat`): the comparisons, their indices and the values
#: at them while the chunk is in the cache (3.76M values: 6.2 -> 5.1 ms)
OCCUPIED_CHUNK = 1 << 17


def _occupied_flat(values: np.ndarray, cut: float) -> tuple[np.ndarray, np.ndarray]:
    """Row-major indices (so sorted by key) and values of the cells of a
    dense release whose noisy count is >= cut > 0."""
    flat = values.ravel()
    if flat.size <= OCCUPIED_CHUNK:
        idx = np.flatnonzero(at_least(flat, cut))
        return idx, flat[idx]
    mask = np.empty(OCCUPIED_CHUNK, dtype=bool)
    idx_parts, value_parts = [], []
    for a in range(0, flat.size, OCCUPIED_CHUNK):
        part = flat[a : a + OCCUPIED_CHUNK]
        at = np.flatnonzero(at_least(part, cut, out=mask[: part.size]))
        value_parts.append(part[at])
        at += a
        idx_parts.append(at)
    return np.concatenate(idx_parts), np.concatenate(value_parts)


def _occupied_cells(hist: NoisyHistogram, cut: float):
    """Sorted keys and values of the cells whose noisy count is >= cut > 0
    (unreleased cells of a sparse release read 0 and never pass)."""
    grid = hist.grid
    if hist.kind == "dense":
        idx, own = _occupied_flat(hist.values, cut)
        return _keys_of_flat(grid, idx), own
    values = hist.values
    if values.size and values.min() >= cut:
        # every released cell (a sparse release's values are >= theta, and
        # the cut is often below it: 737k cells in 4-D), not copied
        return hist.released_keys, values
    sel = values >= cut
    return hist.released_keys[sel], values[sel]


def _candidates(hist: NoisyHistogram, weights: BallWeights, threshold: float) -> np.ndarray:
    """Sorted keys of the cells that can hold a sub-cell with E~ >= threshold."""
    grid = hist.grid
    smax = float(weights.sums.max())
    if threshold <= 0:
        raise ValueError(
            f"the density threshold is {threshold:.3g} <= 0, so every sub-cell of the "
            "universe would be core; raise min_samples"
        )
    # the W-weighted sum over at most smax "cells' worth" of values: some term
    # must reach threshold / smax (with room for rounding)
    cut = threshold / smax * (1 - 1e-9)
    if hist.kind == "dense":
        heavy_mask = hist.values >= cut
        heavy = np.flatnonzero(heavy_mask.ravel())
        if heavy.size * weights.offsets.shape[0] > hist.values.size // 4:
            return grid.encode(grid.all_coords())
        return _dense_near(grid, heavy, weights.offsets)
    keys, vals = hist.released_keys, hist.values
    heavy = keys[vals >= cut]
    if vals.size and vals.min() >= 0 and heavy.size * weights.offsets.shape[0] > 1_000_000:
        # E~(q) <= sum of released values over NB(X) <= the bucket block sum
        heavy = heavy[live_cells(grid, keys, vals, heavy, threshold * (1 - 1e-9))]
    return _sparse_near(grid, heavy, weights.offsets)


def _dense_near(grid: Grid, heavy_flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sorted keys of the cells X with X + o heavy for some offset o (the
    reflected neighbourhood: X's sum reads X + o)."""
    idx = np.flatnonzero(_dense_near_mask(grid, heavy_flat, offsets))
    return _keys_of_flat(grid, idx)


def _keys_of_flat(grid: Grid, idx: np.ndarray) -> np.ndarray:
    """Keys of cells given by their row-major index in a dense histogram:
    from the index itself where the keys are int64 (no coordinates: on the
    4-D dense release at eps = 0.04 the coordinates of 1.69M candidates
    cost 0.05 s), else by the coordinates."""
    if not grid.wide:
        return grid.keys_of_positions(idx)
    return grid.encode(np.stack(np.unravel_index(idx, grid.shape), axis=1))


def _dense_near_mask(grid: Grid, heavy_flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Boolean array of grid.shape: X + o is heavy for some offset o."""
    R = max(int(offsets.max()), -int(offsets.min()), 1)
    shape = grid.shape
    mask = np.zeros(tuple(s + 2 * R for s in shape), dtype=bool)
    pstrides = np.array(mask.strides, dtype=np.int64)
    base = (np.stack(np.unravel_index(heavy_flat, shape), axis=1) + R) @ pstrides
    flat = mask.ravel()
    for delta in (-offsets) @ pstrides:
        flat[base + delta] = True
    return mask[tuple(slice(R, R + s) for s in shape)]


def _sparse_near(grid: Grid, heavy: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    if heavy.size == 0:
        return heavy
    coords = grid.decode(heavy)
    parts = []
    for o in offsets:
        c = coords - o
        parts.append(c[grid.valid(c)])
    allc = np.concatenate(parts)
    cand = np.unique(grid.encode(allc))
    return cand


def utility_problems(hist: NoisyHistogram, core_keys: np.ndarray, k: int, n_spans: int) -> tuple[str, ...]:
    """What makes a release say little, as codes (the model states them:
    :mod:`dpdbscan.model.densitywords`): ``"no_span"``, ``"single_span"``
    (one cluster, or clusters that merged, or only one dense enough to pass),
    ``"uncovered"`` (the positive noisy counts of the cells that hold a
    core sub-cell add up to less than half of all the released counts: most
    of the data would be labelled noise, the threshold dwarfs their
    estimated neighbourhood counts). Empty when none.

    All the released counts are summed with their signs: the noise of the
    empty cells, drawn on every cell of a dense histogram, then cancels
    (zero mean) instead of adding about half a noise scale per cell. Their
    positive parts alone counted that noise as data: on the chest
    accelerometer's 456,533 cells (3-D, eps 92) about 250,000 against
    103,500 points, so a span holding 99% of the points was called
    "uncovered, most points will be labelled noise". A sparse histogram
    draws noise on every cell too but releases only the counts of at least
    theta, so every cell that noise alone lifts over theta adds: their
    expected mass (public: the grid's cells times E[Z; Z >= theta],
    :func:`_noise_mass`) is taken off the total. In 6-D at eps 0.3
    (826,586,937 cells, theta 9) about 75,000 such cells held 700,000 of
    the 763,558 released against 59,515 points, and four spans holding 97%
    of the points were called "uncovered". The stability histogram draws
    noise on occupied cells only: nothing to take off.

    Reads public parameters and the release only.
    """
    problems = []
    if n_spans == 0:
        problems.append("no_span")
    elif n_spans == 1:
        problems.append("single_span")
    values = np.asarray(hist.values)
    total = _signed_mass(values) - _noise_mass(hist)
    if total > 0 and n_spans > 0:
        grid = hist.grid
        keys = np.sort(grid.encode(fine_grid(grid, k).decode(core_keys) // k))
        # the distinct cells (np.unique without flags first imports numpy.ma: 50 ms)
        keys = keys[np.r_[True, keys[1:] != keys[:-1]]] if keys.size else keys
        if hist.kind == "dense":
            inside = values[tuple(grid.decode(keys).T)]
        else:
            inside = lookup(hist.released_keys, values, keys)
        covered = float(np.maximum(inside, 0).sum(dtype=np.float64))
        if covered < 0.5 * total:
            problems.append("uncovered")
    return tuple(problems)


def _noise_mass(hist: NoisyHistogram) -> float:
    """The expected mass a sparse histogram releases in cells that hold no
    point: each of the grid's cells reaches theta by noise alone with
    probability P(Z >= theta) and then shows Z, at least theta (for discrete
    Laplace noise exactly E[Z | Z >= theta] = ceil(theta) + q / (1 - q),
    q = exp(-epsilon); for the other noises theta, which takes off less).
    Zero for a dense histogram (its noise cancels in the signed sum) and for
    the stability histogram (noise on occupied cells only). Public: the grid
    and the noise alone."""
    if hist.kind != "sparse" or hist.noise not in ("discrete", "laplace", "gaussian"):
        return 0.0
    theta = float(hist.theta)
    if not math.isfinite(theta):
        return 0.0
    mean = theta
    if hist.noise == "discrete":
        q = math.exp(-float(hist.scale))
        mean = math.ceil(theta) + q / (1.0 - q)
    return float(hist.grid.n_cells) * noise_tail(hist.noise, float(hist.scale), theta) * mean


def _signed_mass(values: np.ndarray) -> float:
    """Sum of the released counts with their signs, in float64 (no copy of a
    dense histogram): the noise of empty cells cancels out."""
    return float(np.asarray(values).sum(dtype=np.float64))
