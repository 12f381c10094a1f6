"""Slow, obviously-correct reference implementations used by the tests."""

import itertools
import math

import numpy as np


def cell_min_distance(grid, a, b) -> float:
    """Minimum distance between two cells given by integer coordinates (floats)."""
    gaps = [max(abs(int(x) - int(y)) - 1, 0) for x, y in zip(a, b)]
    return grid.width * math.sqrt(sum(g * g for g in gaps))


def grid_dbscan(grid, counts: dict, min_samples: float):
    """The non-private grid procedure: UB(X) = sum of counts over cells within
    min distance < alpha; core iff UB >= min_samples; merge core cells at min
    distance < alpha. Returns {cell: span representative} over core cells."""
    cells = list(itertools.product(*[range(s) for s in grid.shape]))
    core = []
    for c in cells:
        ub = sum(v for o, v in counts.items() if cell_min_distance(grid, c, o) < grid.eps)
        if ub >= min_samples:
            core.append(c)
    return components(core, lambda a, b: cell_min_distance(grid, a, b) < grid.eps)


def components(items, linked):
    """{item: representative} of the connected components of ``linked`` (all pairs)."""
    parent = {c: c for c in items}

    def find(c):
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for a, b in itertools.combinations(items, 2):
        if linked(a, b):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[ra] = rb
    return {c: find(c) for c in items}


def exact_dbscan_core(X: np.ndarray, alpha: float, min_samples: float):
    """Core points and their cluster ids (strict < alpha, a point counts itself)."""
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    close = D < alpha
    core = close.sum(1) >= min_samples
    idx = np.flatnonzero(core)
    lab = -np.ones(X.shape[0], dtype=int)
    k = 0
    for i in idx:
        if lab[i] >= 0:
            continue
        stack = [i]
        lab[i] = k
        while stack:
            j = stack.pop()
            for t in np.flatnonzero(close[j] & core):
                if lab[t] < 0:
                    lab[t] = k
                    stack.append(t)
        k += 1
    return core, lab


def same_partition(a: dict, b: dict) -> bool:
    """Two {item: group} maps describe the same partition of the same items."""
    if set(a) != set(b):
        return False
    fwd, bwd = {}, {}
    for item in a:
        x, y = a[item], b[item]
        if fwd.setdefault(x, y) != y or bwd.setdefault(y, x) != x:
            return False
    return True


def subcell_grid_dbscan(grid, counts: dict, min_samples: float, k: int):
    """The non-private sub-cell procedure: sub-cell q of cell X (width w/k) is
    core iff the counts of cells at minimum distance < alpha from q reach
    min_samples; core sub-cells at minimum distance < alpha are merged.
    Returns {fine cell: representative}."""
    w = grid.width
    fine_shape = [math.ceil(round((hi - lo) / (w / k), 9)) for lo, hi in zip(grid.lower, grid.upper)]

    def box_gap(a_lo, a_hi, b_lo, b_hi):
        return math.sqrt(
            sum(max(bl - ah, al - bh, 0.0) ** 2 for al, ah, bl, bh in zip(a_lo, a_hi, b_lo, b_hi))
        )

    core = []
    for f in itertools.product(*[range(s) for s in fine_shape]):
        q_lo = [x * w / k for x in f]
        q_hi = [(x + 1) * w / k for x in f]
        ub = 0
        for c, v in counts.items():
            c_lo = [x * w for x in c]
            c_hi = [(x + 1) * w for x in c]
            if box_gap(q_lo, q_hi, c_lo, c_hi) < grid.eps * (1 - 1e-12):
                ub += v
        if ub >= min_samples:
            core.append(f)

    def linked(a, b):
        gaps = [max(abs(x - y) - 1, 0) for x, y in zip(a, b)]
        return (w / k) * math.sqrt(sum(g * g for g in gaps)) < grid.eps * (1 - 1e-12)

    return components(core, linked)
