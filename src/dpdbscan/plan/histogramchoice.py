"""Which histogram a release uses, and its threshold theta, from public inputs.

* dense (the naive histogram over every cell) when the universe |X| is at
  most :data:`DENSE_MAX_CELLS` -- for an event-level release at a fixed eps
  and MinPts with delta = 0 and the density core test in
  :data:`SPARSE_DIMS` dimensions, only while kappa is at most
  :data:`DENSE_MAX_KAPPA` too --, else sparse (the paper's Algorithm 2), or
  the (epsilon, delta) stability histogram when delta is given or asked for;
* theta of the sparse histogram: the smallest value that releases at most
  ``max_empty_cells`` empty cells in expectation over the universe and at
  most :data:`MAX_EMPTY_PER_BALL` among the kappa cells of one alpha-ball
  (or the user's, checked);
* theta of the stability histogram: the smallest value a cell that only one
  record (or one unit's contribution) creates reaches with probability at
  most delta.

Every choice reads the grid's size, the noise law and the public caps, never
the data.
"""

from __future__ import annotations

import math

from ..cells.grid import Grid
from ..laws import noise as laws

#: "auto" uses the naive histogram up to this |X|.
DENSE_MAX_CELLS = 1 << 23
#: An explicit theta may not release more empty cells than this in expectation.
MAX_EXPECTED_EMPTY = 1e8
#: The default theta of the sparse histogram releases at most this many empty
#: cells in expectation among the kappa cells that can lie within alpha of a
#: cell (issue 30): at coarse alphas from 5-D up the universe's cap alone
#: left a hundred or more released noise cells in every alpha-ball, which the
#: density test had to sum (slow) and whose noise raised its margin (less
#: accurate). Not lower: 4-D at the benchmark's alpha holds 22 per ball at
#: epsilon 1, and raising its theta costs clusters of few points per cell
#: accuracy (docs/benchmarks.md, "The sparse release's theta at coarser
#: alphas"). Public: kappa (d, eta), the noise law and its scale.
MAX_EMPTY_PER_BALL = 32.0
#: Issue 30 (rule K of results/hdrule3/RULE.md): an event-level release at a
#: fixed eps and MinPts, with delta = 0 and the density core test, in
#: :data:`SPARSE_DIMS` dimensions, uses the naive histogram only while kappa
#: (the cells within alpha of a cell) is at most this -- never in 4-D to 8-D
#: at the default eta 4 (kappa 609 in 4-D). The dense release puts noise on
#: all kappa cells of every alpha-ball, whose sum swamps MinPts at coarse 4-D
#: and 5-D grids (ARI 0.03-0.43 at 3x the benchmark's alpha, up to 25x the
#: ``dbscan`` package's time); the sparse release with the span filter of
#: :mod:`dpdbscan.post.noisespans` was faster and closer to DBSCAN at every
#: point measured, in two runs on fresh seeds (docs/benchmarks.md, "Dense or
#: sparse at coarse 4-D/5-D: the confirmatory run"). Person level, delta > 0
#: (whose alternative is the stability histogram), the bound core test and
#: the automatic mode's base grid keep the rule on |X| alone: not measured.
DENSE_MAX_KAPPA = 256
#: The dimensions :data:`DENSE_MAX_KAPPA` acts in: measured in 4-D and 5-D;
#: 6-D to 8-D grids of at most 2^23 cells are coarser still (issue 30's
#: scope). 1-D to 3-D keep the dense release; so does 9-D and up (not
#: measured).
SPARSE_DIMS = range(4, 9)
#: Issue 30 (results/hd9/RULE.md): at coarse 6-D to 8-D grids the sparse
#: release's empty cells are so dense in the universe that the density test's
#: self-join over the reach box, (2 reach + 1)^d cells, finds millions of
#: pairs of them (7-D at twice the benchmark's alpha: 551,761 released cells,
#: 12.5M pairs, 5-15x the ``dbscan`` package's time). Where today's default
#: theta leaves more than :data:`COARSE_PAIRS` such pairs in expectation,
#: ``E^2 (2 reach + 1)^d / (2 |X|)`` with ``E = |X| P(Z >= theta)``, theta
#: is raised until at most :data:`COARSE_EMPTY` empty cells are released in
#: expectation over the universe. Public: d, |X|, reach (d, eta), the noise
#: law and its scale. Scoped as measured: an event-level release at a fixed
#: eps and MinPts with the density core test, in :data:`COARSE_DIMS`.
COARSE_PAIRS = float(2**21)
#: The universe's cap on expected released empty cells where
#: :data:`COARSE_PAIRS` binds.
COARSE_EMPTY = float(2**17)
#: The dimensions the cap of :data:`COARSE_PAIRS` acts in (6-D to 8-D were
#: measured; 4-D and 5-D at their coarse alphas were within the bar).
COARSE_DIMS = range(6, 9)


def choose_kind(requested: str, grid: Grid, delta: float, *, fixed_density: bool = False) -> str:
    """Dense or sparse from public inputs; stability when asked, or when
    delta is given and the universe is too large for the dense histogram.

    "auto": dense while |X| is at most :data:`DENSE_MAX_CELLS`, and, where
    ``fixed_density`` (an event-level release at a fixed eps and MinPts with
    the density core test), delta = 0 and d is in :data:`SPARSE_DIMS`, while
    kappa is at most :data:`DENSE_MAX_KAPPA`."""
    if requested != "auto":
        return requested
    coarse = fixed_density and delta == 0 and grid.d in SPARSE_DIMS and grid.kappa > DENSE_MAX_KAPPA
    if grid.n_cells <= DENSE_MAX_CELLS and not coarse:
        return "dense"
    return "stability" if delta > 0 else "sparse"


def default_theta(n_cells: int, noise: str, scale: float, max_empty: float, kappa: int = 0) -> float:
    """theta of the sparse histogram from public inputs: the larger of the
    universe's (:func:`capped_theta` of ``n_cells`` and ``max_empty``) and,
    given ``kappa`` (the cells within alpha of a cell), the alpha-ball's: the
    least theta >= 1 releasing at most :data:`MAX_EMPTY_PER_BALL` of those
    ``kappa`` cells empty in expectation (:func:`ball_theta`). ``scale`` is
    the one the noise is drawn with."""
    theta = capped_theta(n_cells, noise, scale, max_empty)
    if kappa > 0:
        theta = max(theta, ball_theta(kappa, noise, scale))
    return theta


def capped_theta(n_cells: int, noise: str, scale: float, max_empty: float) -> float:
    """theta (>= 1) whose expected number of released empty cells,
    ``n_cells * P(Z >= theta)``, is at most ``max_empty``: a first guess from
    the tail's decay, raised one step at a time while above the cap (the
    least such integer theta with integer noise, or one more where the
    guess overshoots)."""
    # a first guess from the tail's decay, then up one step at a time
    if noise == "gaussian":
        guess = math.sqrt(2.0 * scale * max(math.log(max(n_cells, 1) / max(max_empty, 1.0)), 0.0))
    else:
        # P(Z >= theta) ~ exp(-eps theta) / 2 up to a constant in [1/2, 1]
        guess = math.log(max(n_cells, 1) / max(max_empty, 1.0)) / scale
    theta = max(1.0, guess if math.isfinite(guess) else 1.0)
    if laws.is_integer(noise):
        theta = float(math.ceil(theta))
    while n_cells * laws.tail(noise, scale, theta) > max_empty:
        theta += 1.0
    return theta


def ball_theta(kappa: int, noise: str, scale: float, per_ball: float = MAX_EMPTY_PER_BALL) -> float:
    """The least theta >= 1 (on :func:`capped_theta`'s steps of 1) with
    ``kappa * P(Z >= theta) <= per_ball``: at most ``per_ball`` released empty
    cells in expectation among the ``kappa`` cells of an alpha-ball."""
    theta = capped_theta(kappa, noise, scale, per_ball)
    while theta - 1.0 >= 1.0 and kappa * laws.tail(noise, scale, theta - 1.0) <= per_ball:
        theta -= 1.0
    return theta


def coarse_pairs(grid: Grid, noise: str, scale: float, theta: float) -> float:
    """The expected number of pairs of released empty cells within one
    reach box of each other at ``theta``: ``E^2 (2 reach + 1)^d / (2 |X|)``,
    ``E = |X| P(Z >= theta)`` (public: the grid and the noise law)."""
    n = float(grid.n_cells)
    empty = n * laws.tail(noise, scale, theta)
    return empty * empty * float(2 * grid.reach + 1) ** grid.d / (2.0 * n)


def coarse_theta(grid: Grid, noise: str, scale: float, theta: float, max_empty_cells: float) -> float:
    """:data:`COARSE_PAIRS`' rule: ``theta``, or where it leaves more than
    :data:`COARSE_PAIRS` pairs of released empty cells within a reach box
    (:func:`coarse_pairs`) in :data:`COARSE_DIMS`, the least theta >= it on
    steps of 1 releasing at most :data:`COARSE_EMPTY` (or ``max_empty_cells`` if
    lower) empty cells in expectation over the universe."""
    if grid.d not in COARSE_DIMS or coarse_pairs(grid, noise, scale, theta) <= COARSE_PAIRS:
        return theta
    cap = min(max_empty_cells, COARSE_EMPTY)
    # up one step at a time from today's theta: the least such theta on its steps
    while grid.n_cells * laws.tail(noise, scale, theta) > cap:
        theta += 1.0
    return theta


def sparse_theta(
    given: float | None,
    grid: Grid,
    noise: str,
    scale: float,
    max_empty_cells: float,
    *,
    coarse: bool = False,
) -> float:
    """theta of the sparse histogram: the user's (checked) or from the public
    caps; ``coarse`` (an event-level release at a fixed eps and MinPts with
    the density core test) adds :func:`coarse_theta`'s."""
    if given is None:
        theta = default_theta(grid.n_cells, noise, scale, max_empty_cells, grid.kappa)
        return coarse_theta(grid, noise, scale, theta, max_empty_cells) if coarse else theta
    theta = float(given)
    # Below 0 the tail sampler (theta + geometric) is not Z | Z >= theta, and
    # the release would hold about half of the universe anyway.
    if not theta >= 0:
        raise ValueError(f"theta must be >= 0 for the sparse histogram, got theta={given!r}")
    expected = grid.n_cells * laws.tail(noise, scale, theta)
    if expected > MAX_EXPECTED_EMPTY:
        raise ValueError(
            f"theta={given!r} would release about {expected:.3g} empty cells of the "
            f"{grid.n_cells} in the universe; raise theta or leave it to the default"
        )
    return theta


def stability_theta(noise: str, scale: float, delta: float, step: int = 1, cells: int = 1) -> float:
    """Smallest theta with ``cells * P(Z >= theta - step) <= delta``: a cell
    that exists in one neighbour only holds at most ``step`` points (1 for a
    row; ``max_points_per_cell`` for a unit, which may create ``cells`` such
    cells), and is released with probability at most delta in all.

    With Gaussian noise and units the release passes half of its delta here
    (:func:`dpdbscan.plan.resolve.release_spec`) and the other half to the
    rho -> (epsilon, delta) conversion of the noise on the cells both
    neighbours share: the unit's at most ``cells`` new cells, of at most
    ``step`` points each, are released with probability at most delta / 2,
    and the deltas add (docs/privacy.md section 4.4, "With Gaussian noise")."""
    if not 0 < delta < 1:
        raise ValueError(f"the stability histogram needs 0 < delta < 1, got delta={delta!r}")
    target = delta / cells
    if laws.is_integer(noise):
        k = 1
        while laws.tail(noise, scale, k) > target:
            k += 1
        return float(step + k)
    return step + math.log(1.0 / (2.0 * target)) / scale


__all__ = [
    "DENSE_MAX_CELLS",
    "DENSE_MAX_KAPPA",
    "SPARSE_DIMS",
    "MAX_EXPECTED_EMPTY",
    "choose_kind",
    "COARSE_DIMS",
    "COARSE_EMPTY",
    "COARSE_PAIRS",
    "coarse_pairs",
    "coarse_theta",
    "MAX_EMPTY_PER_BALL",
    "ball_theta",
    "capped_theta",
    "default_theta",
    "sparse_theta",
    "stability_theta",
]
