"""``clipping_counts`` (the private note of rows the per-record rule drops
or clips) against a straightforward count: all rows inside (answered from
each column's min and max), rows outside, NaN and inf rows, an empty array."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.prepare.clipping import clipping_counts


def _plain(X, lower, upper):
    finite = np.isfinite(X).all(axis=1)
    inside = ((X >= lower) & (X <= upper)).all(axis=1)
    out = finite & ~inside
    return {
        "n_bad": int((~finite).sum()),
        "n_ok": int(finite.sum()),
        "outside": int(out.sum()),
        "below": (X[out] < lower).sum(axis=0),
        "above": (X[out] > upper).sum(axis=0),
    }


@pytest.mark.parametrize("case", ["inside", "on the faces", "outside", "nan", "inf", "empty", "one row out"])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_clipping_counts_are_the_plain_counts(case, d):
    rng = np.random.default_rng(d)
    lower, upper = np.full(d, -1.0), np.full(d, 2.0)
    X = rng.uniform(-1, 2, (150_000, d))
    if case == "on the faces":
        X[::7, 0], X[::11, -1] = -1.0, 2.0
    elif case == "outside":
        X[::13] *= 3.0
    elif case == "nan":
        X[5, -1] = np.nan
    elif case == "inf":
        X[7, 0] = np.inf
        X[9, -1] = -np.inf
    elif case == "empty":
        X = X[:0]
    elif case == "one row out":
        X[-1, -1] = 2.0 + 1e-12
    got, want = clipping_counts(X, lower, upper), _plain(X, lower, upper)
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
