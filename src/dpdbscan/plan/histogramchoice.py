"""Which histogram a release uses, and its threshold theta, from public inputs.

* dense (the naive histogram over every cell) when the universe |X| is at
  most :data:`DENSE_MAX_CELLS`, else sparse (the paper's Algorithm 2), or
  the (epsilon, delta) stability histogram when delta is given or asked for;
* theta of the sparse histogram: the smallest value that releases at most
  ``max_empty_cells`` empty cells in expectation (or the user's, checked);
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


def choose_kind(requested: str, grid: Grid, delta: float) -> str:
    """Dense or sparse from |X| alone (public); stability when asked, or when
    delta is given and the universe is too large for the dense histogram."""
    if requested != "auto":
        return requested
    if grid.n_cells <= DENSE_MAX_CELLS:
        return "dense"
    return "stability" if delta > 0 else "sparse"


def default_theta(n_cells: int, noise: str, scale: float, max_empty: float) -> float:
    """Smallest theta (>= 1) whose expected number of released empty cells,
    ``n_cells * P(Z >= theta)``, is at most ``max_empty``. Public inputs only;
    ``scale`` is the one the noise is drawn with."""
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


def sparse_theta(given: float | None, grid: Grid, noise: str, scale: float, max_empty_cells: float) -> float:
    """theta of the sparse histogram: the user's (checked) or from the public cap."""
    if given is None:
        return default_theta(grid.n_cells, noise, scale, max_empty_cells)
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
    "MAX_EXPECTED_EMPTY",
    "choose_kind",
    "default_theta",
    "sparse_theta",
    "stability_theta",
]
