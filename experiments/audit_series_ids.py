"""Empirical privacy audit of a series' units given as a Python list
(round 7): one more unit must not change how the other ids are read.

D: 60 units with ids 2**60 + i, three rows each at one spot (2.5, 2.5)
over the first two days of a three-day horizon. D': D plus one row of a
unit whose id is 0.5, elsewhere (7.5, 7.5). Both released by
``series.fit_series`` with the ids as a Python list (lifetime epsilon = 2,
delta = 1e-5, k = 4 cells for the spans), ``runs`` seeded fits each
(different seeds for D and D'). The event: the spans' noisy count at the
spot is at least 31. A Clopper-Pearson bound at 95% on each side gives an
epsilon lower bound at the stated delta (``audit_dask_ids.epsilon_bound``).

    python -m experiments.audit_series_ids --runs 200

Measured (docs/privacy.md section 8, round 7): on the tree before the fix,
where numpy typed the list together (float64 in D', the ids rounded to one
unit), 300/300 against 0/300 (medians 60 and 1), epsilon >= 4.39 against
the lifetime epsilon = 2 stated; after it 300/300 against 300/300.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from dpdbscan.params.parameters import validate
from dpdbscan.research import Periods
from dpdbscan.series import SeriesInput, fit_series, plan_series

from .audit_dask_ids import epsilon_bound

EPSILON, DELTA = 2.0, 1e-5
THRESHOLD = 31
LOWER, UPPER = np.zeros(2), np.full(2, 10.0)
PERIODS = Periods("day", "2024-03-04", "2024-03-07")


def rows(extra: bool) -> tuple[np.ndarray, list, list]:
    ids: list = [2**60 + i for i in range(60) for _ in range(3)]
    xy = [[2.5, 2.5]] * len(ids)
    t = [1_709_510_400 + 3600 * (j % 40) for j in range(len(ids))]
    if extra:
        ids.append(0.5)
        xy.append([7.5, 7.5])
        t.append(1_709_510_400)
    return np.array(xy, dtype=float), ids, t


def spot_count(extra: bool, seed: int) -> int:
    p = validate(
        dict(epsilon=EPSILON, delta=DELTA, eps=0.5, min_samples=10, max_cells_per_unit=4, random_state=seed)
    )
    X, ids, t = rows(extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = fit_series(SeriesInput(X, LOWER, UPPER, p, ids, t), plan_series(p, LOWER, UPPER, PERIODS))
    h = s.model.histogram
    assert h is not None  # a series keeps its spans' histogram
    return int(h.value_at(h.grid.keys_of_points(np.array([[2.5, 2.5]])))[0])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100, help="seeded fits of each input")
    a = ap.parse_args(argv)
    counts_d = [spot_count(False, 1000 + s) for s in range(a.runs)]
    counts_d2 = [spot_count(True, 5000 + s) for s in range(a.runs)]
    hits_d = sum(c >= THRESHOLD for c in counts_d)
    hits_d2 = sum(c >= THRESHOLD for c in counts_d2)
    print(
        f"runs {a.runs}: count >= {THRESHOLD} in {hits_d}/{a.runs} fits of D "
        f"(median {np.median(counts_d):g}), {hits_d2}/{a.runs} of D' (median {np.median(counts_d2):g})"
    )
    bound = epsilon_bound(hits_d, hits_d2, a.runs, DELTA)
    print(f"epsilon lower bound (95% each side, delta={DELTA:g}): {bound:.2f} (stated epsilon={EPSILON:g})")


if __name__ == "__main__":
    main()
