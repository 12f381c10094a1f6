"""The released noisy histogram and the neighbour sums computed from it.

Everything in this module is post-processing of the released histogram: it
never sees the points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..grid import Grid


@dataclass
class NoisyHistogram:
    """A DP release of per-cell counts.

    ``kind == "dense"``: ``values`` has ``grid.shape`` and covers every cell.
    Otherwise (``"sparse"``, ``"stability"``): only cells with a noisy count
    ``>= theta`` are released, as sorted ``keys`` with ``values``; every other
    cell reads as 0.
    """

    grid: Grid
    kind: str
    values: np.ndarray
    keys: np.ndarray | None = None
    theta: float = 0.0
    noise: str = "discrete"
    epsilon: float = 1.0
    delta: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def n_released(self) -> int:
        return int(self.values.size)

    def sparse(self):
        """(sorted keys, values) of the cells with a non-zero noisy value."""
        if self.kind != "dense":
            return self.keys, self.values
        flat = self.values.ravel()
        nz = np.flatnonzero(flat)
        coords = np.stack(np.unravel_index(nz, self.grid.shape), axis=1)
        keys = self.grid.encode(coords)
        order = np.argsort(keys, kind="stable")
        return keys[order], flat[nz][order]

    def value_at(self, keys: np.ndarray) -> np.ndarray:
        """Noisy value of the cells with the given keys (0 if not released)."""
        k, v = self.sparse()
        return lookup(k, v, keys)


def lookup(sorted_keys, values, query):
    """values[sorted_keys == q] for each q, 0 where absent."""
    out = np.zeros(query.size, dtype=values.dtype if values.size else np.int64)
    if sorted_keys.size == 0 or query.size == 0:
        return out
    idx = np.searchsorted(sorted_keys, query)
    idx = np.minimum(idx, sorted_keys.size - 1)
    hit = sorted_keys[idx] == query
    out[hit] = values[idx[hit]]
    return out


# --------------------------------------------------------------------------- #
# neighbour sums


def dense_neighbour_sums(grid: Grid, values: np.ndarray) -> np.ndarray:
    """sum over NB(X) of ``values`` for every cell, on the dense array.

    Prefix sums along the last axis turn each run of offsets that is
    contiguous in the last dimension into one difference.
    """
    R = grid.reach
    d = grid.d
    shape = grid.shape
    acc_dtype = np.int64 if values.dtype.kind in "iub" else np.float64
    P = np.zeros(tuple(s + 2 * R for s in shape), dtype=acc_dtype)
    P[tuple(slice(R, R + s) for s in shape)] = values
    C = np.zeros(P.shape[:-1] + (P.shape[-1] + 1,), dtype=acc_dtype)
    np.cumsum(P, axis=-1, out=C[..., 1:])
    out = np.zeros(shape, dtype=acc_dtype)
    L = shape[-1]
    for prefix, lo, hi in grid.offset_runs():
        sl = tuple(slice(R + int(p), R + int(p) + shape[i]) for i, p in enumerate(prefix))
        out += C[sl + (slice(R + hi + 1, R + hi + 1 + L),)]
        out -= C[sl + (slice(R + lo, R + lo + L),)]
    assert out.ndim == d
    return out


def sparse_neighbour_sums(grid: Grid, keys, values, query) -> np.ndarray:
    """sum over NB(q) of the released values, for each query key ``q``.

    ``keys`` must be sorted. With int64 keys each run of NB contiguous in the
    last dimension is one key interval: two searchsorted calls and a prefix
    sum per run. Packed (wide) keys fall back to one lookup per offset.
    """
    acc_dtype = np.int64 if values.dtype.kind in "iub" else np.float64
    out = np.zeros(query.size, dtype=acc_dtype)
    if keys.size == 0 or query.size == 0:
        return out
    if grid.wide:
        qc = grid.decode(query)
        for o in grid.offsets:
            out += lookup(keys, values, grid.encode(qc + o))
        return out
    cs = np.zeros(values.size + 1, dtype=acc_dtype)
    np.cumsum(values, out=cs[1:])
    for prefix, lo, hi in grid.offset_runs():
        base = grid.key_delta(np.append(prefix, 0))
        a = np.searchsorted(keys, query + (base + lo), side="left")
        b = np.searchsorted(keys, query + (base + hi), side="right")
        out += cs[b] - cs[a]
    return out


def neighbourhood(grid: Grid, keys: np.ndarray) -> np.ndarray:
    """Sorted unique keys of every valid cell in NB of the given cells."""
    if keys.size == 0:
        return keys
    coords = grid.decode(keys)
    parts = []
    for o in grid.offsets:
        c = coords + o
        parts.append(c[grid.valid(c)])
    allc = np.concatenate(parts)
    cand = np.sort(grid.encode(allc))
    if cand.size:
        keep = np.concatenate(([True], cand[1:] != cand[:-1]))
        cand = cand[keep]
    return cand
