"""``max_cells_per_unit="auto"``: what the private choice of k may choose
from, and what it costs. Public inputs only.

k, the most cells one privacy unit may add to, trades signal against noise:
with Gaussian noise the noise of a cell grows as sqrt(k), and the signal
of a dense cell (one most units visit) as the expected number of units kept
there, sum over units of min(1, k / c_u) with c_u the unit's number of
distinct cells. The best k is about a typical unit's own cell count, which
only the data know: :mod:`dpdbscan.release.unitchoice` chooses it with the
exponential mechanism, for :data:`SHARE` of the release's zCDP rho, among
the public :func:`candidates` decided here.

Why :data:`SHARE` = 0.1. The share costs signal to noise: the noise's rho
falls to 0.9 rho, its sigma rises by 1/sqrt(0.9) (5.4%). Too small a share
makes the choice blind. Measured on the cells per unit of full Cabs (536
cabs, release cells of 141 m, 57 candidates) at epsilon = 1, delta = 1e-6
(rho = 0.0244), from the mechanism's exact probabilities: the expected
signal to noise of the chosen k, relative to the best candidate's at the
whole rho, is 0.59 at a share of 0.02, 0.88 at 0.05, 0.94 at 0.1, 0.92 at
0.15 and 0.89 at 0.2; at 0.1 the best candidate (k = 2,435) is chosen with
probability 0.985. Larger budgets and more units choose better at any share.
"""

from __future__ import annotations

from ..cells.grid import Grid

#: The share of the release's zCDP rho spent on choosing k.
SHARE = 0.1

#: Candidates per doubling of k: the ladder 1, 2^(1/4), 2^(1/2), ... (rounded).
#: Near its best k the signal to noise is flat (on Cabs within 1.6% over a
#: ratio of 2^(1/8) either side), so a finer ladder buys little.
STEPS_PER_DOUBLING = 4

#: The largest candidate, whatever the grid: 2**32 cells per unit is more
#: than any unit visits, and the choice's arithmetic stays in 64 bits.
MAX_K = 2**32


def candidates(grid: Grid) -> tuple[int, ...]:
    """The public candidates for k on ``grid``: the geometric ladder
    round(2^(i/4)), i = 0, 1, ..., up to the grid's number of cells (no unit
    can occupy more) and :data:`MAX_K`; without repeats, ascending."""
    cap = min(int(grid.n_cells), MAX_K)
    out: list[int] = []
    i = 0
    while True:
        k = round(2.0 ** (i / STEPS_PER_DOUBLING))
        if k > cap:
            break
        if not out or k > out[-1]:
            out.append(k)
        i += 1
    return tuple(out)


__all__ = ["SHARE", "STEPS_PER_DOUBLING", "MAX_K", "candidates"]
