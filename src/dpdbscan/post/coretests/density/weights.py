"""Ball weights W(q, Y): the expected fraction of neighbour cell Y within alpha
of a uniform point of sub-cell q (or of its centre), for any dimension.

Post-processing constants: they depend on (d, eta, k) only.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from ....cells.grid import rows_from_links

ESTIMATES = ("average", "centre")
_BINS = 1 << 13  # bins of the squared distance per dimension (weights to ~1e-7)

# --------------------------------------------------------------------------- #
# ball weights


def _ramp_integral(z: np.ndarray) -> np.ndarray:
    """R(z) = integral_{-inf}^z clip(u, 0, 1) du."""
    return np.where(z < 0, 0.0, np.where(z <= 1, 0.5 * z * z, z - 0.5))


def _axis_cdf(o: int, s: int, k: int, centre: bool):
    """CDF F of D = y - p along one axis, in cell widths.

    y is uniform on the neighbour cell [o, o + 1]; p is uniform on the
    sub-cell [s/k, (s+1)/k] (or p is its centre with ``centre=True``).
    F(x) = E_p clip(x + p - o, 0, 1).
    """
    if centre:
        c = (s + 0.5) / k

        def F(x):
            return np.clip(x + c - o, 0.0, 1.0)
    else:
        a, b = s / k - o, (s + 1) / k - o

        def F(x):
            return k * (_ramp_integral(x + b) - _ramp_integral(x + a))

    return F


def _axis_sq_cdf(o: int, s: int, k: int, centre: bool):
    """G(t) = P(D^2 <= t) for t >= 0 (0 below)."""
    F = _axis_cdf(o, s, k, centre)

    def G(t):
        t = np.asarray(t, dtype=np.float64)
        r = np.sqrt(np.maximum(t, 0.0))
        return np.where(t < 0, 0.0, F(r) - F(-r))

    return G


def _canonical_axis(o: int, s: int, k: int) -> tuple[int, int]:
    """Reflection x -> 1 - x maps (o, s) to (-o, k-1-s) and leaves D^2's law unchanged."""
    return min((o, s), (-o, k - 1 - s))


@functools.lru_cache(maxsize=4096)
def _axis_law(o: int, s: int, k: int, centre: bool, A: float, N: int):
    """Mass and first moment of D^2 in each of N equal bins of [0, A].

    Masses are exact differences of the CDF; the moment of a bin is
    [t G(t)] - integral G dt over the bin with Simpson's rule for the integral.
    """
    G = _axis_sq_cdf(o, s, k, centre)
    t = np.linspace(0.0, A, N + 1)
    g = G(t)
    gm = G(0.5 * (t[:-1] + t[1:]))
    mass = np.diff(g)
    h = A / N
    integral = h / 6.0 * (g[:-1] + 4.0 * gm + g[1:])
    moment = t[1:] * g[1:] - t[:-1] * g[:-1] - integral
    return mass, np.clip(moment, t[:-1] * mass, t[1:] * mass)


@functools.lru_cache(maxsize=8192)
def _prefix_law(types: tuple, k: int, centre: bool, A: float, N: int):
    """Binned law (mass, moment) of the sum of D_i^2 over the given axis types,
    truncated to [0, A) (larger sums never count)."""
    if len(types) == 1:
        return _axis_law(*types[0], k, centre, A, N)
    m1, r1 = _prefix_law(types[:-1], k, centre, A, N)
    m2, r2 = _axis_law(*types[-1], k, centre, A, N)
    f1, f2 = np.fft.rfft(m1, 2 * N), np.fft.rfft(m2, 2 * N)
    g1, g2 = np.fft.rfft(r1, 2 * N), np.fft.rfft(r2, 2 * N)
    mass = np.maximum(np.fft.irfft(f1 * f2, 2 * N)[:N], 0.0)
    moment = np.maximum(np.fft.irfft(g1 * f2 + f1 * g2, 2 * N)[:N], 0.0)
    return mass, moment


def _weight(types: tuple, k: int, centre: bool, A: float, N: int) -> float:
    """P(sum_i D_i^2 < A) for independent axes of the given types."""
    o, s = types[-1]
    G = _axis_sq_cdf(o, s, k, centre)
    if len(types) == 1:
        return float(G(A))
    mass, moment = _prefix_law(types[:-1], k, centre, A, N)
    n_prev = len(types) - 1
    h = A / N
    j = np.arange(N)
    # representative value of each bin of the partial sum: its mean, kept in the bin
    safe = mass > 1e-300
    mean = np.where(safe, moment / np.where(safe, mass, 1.0), (j + 0.5 * n_prev) * h)
    mean = np.clip(mean, j * h, (j + n_prev) * h)
    return float(np.sum(mass * G(A - mean)))


def _support(d: int, eta: float, k: int, centre: bool) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """(positions, offsets of cells at distance < alpha) per sub-position, the
    offsets in lexicographic order. Built axis by axis, dropping partial sums
    that already reach the limit (the sums add the same terms in the same
    order as a sum over each offset's axes)."""
    A = (4.0 * math.sqrt(d) / eta) ** 2
    reach = int(math.ceil(math.sqrt(A))) + 1
    steps = np.arange(-reach, reach + 1)
    lim = A * (1 - 1e-12)
    out = []
    for pos in itertools.product(range(k), repeat=d):
        acc = np.zeros(1)
        links = []  # per axis: each kept row's parent row and step
        for s in pos:
            lo, hi = ((s + 0.5) / k, (s + 0.5) / k) if centre else (s / k, (s + 1) / k)
            g2 = np.array([max(o - hi, lo - (o + 1), 0.0) ** 2 for o in steps.tolist()])
            new_acc = (acc[:, None] + g2[None, :]).ravel()
            kept = np.flatnonzero(new_acc < lim)
            acc = new_acc[kept]
            links.append(np.divmod(kept, steps.size))
        out.append((pos, rows_from_links(links, steps, acc.size)))
    return out


@dataclass(frozen=True)
class BallWeights:
    """W(q, Y) for every sub-position q of a cell and every neighbour offset.

    Attributes
    ----------
    d, eta, k, estimate :
        Dimension, grid parameter, sub-cells per axis and estimate definition.
    positions : tuple of tuple
        The k^d sub-positions, row-major.
    offsets : ndarray of shape (m, d)
        Union over positions of the offsets with W > 0, lexicographic.
    W : ndarray of shape (k^d, m)
        Weights (0 where an offset is outside a position's support).
    """

    d: int
    eta: float
    k: int
    estimate: str
    positions: tuple
    offsets: np.ndarray
    W: np.ndarray

    @property
    def ball_volume(self) -> float:
        """V_d (alpha / w)^d: what every row of W sums to."""
        a = 4.0 * math.sqrt(self.d) / self.eta
        return math.pi ** (self.d / 2) / math.gamma(self.d / 2 + 1) * a**self.d

    @property
    def sums(self) -> np.ndarray:
        return self.W.sum(axis=1)

    @property
    def sums_of_squares(self) -> np.ndarray:
        return (self.W * self.W).sum(axis=1)


def _unique_rows(a: np.ndarray) -> np.ndarray:
    """The distinct rows of an integer array, in lexicographic order."""
    if a.shape[0] == 0:
        return a
    lo = int(a.min())
    span = int(a.max()) - lo + 1
    c = np.zeros(a.shape[0], dtype=np.int64)
    for i in range(a.shape[1]):
        c = c * span + (a[:, i] - lo)
    if bool(np.all(c[1:] > c[:-1])):
        return a  # distinct and in order already (one sub-position)
    _, first = np.unique(c, return_index=True)
    return a[first]


def _rows_in(table: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Index in the lexicographically sorted unique ``table`` of each of ``rows``."""
    lo = min(int(table.min()), int(rows.min())) if table.size else 0
    span = (max(int(table.max()), int(rows.max())) - lo + 1) if table.size else 1

    def code(a):
        c = np.zeros(a.shape[0], dtype=np.int64)
        for i in range(a.shape[1]):
            c = c * span + (a[:, i] - lo)
        return c

    if table is rows:
        return np.arange(rows.shape[0])
    return np.searchsorted(code(table), code(rows))


def ball_weights(d: int, eta: float, k: int = 1, estimate: str = "average", bins: int = _BINS) -> BallWeights:
    """The weights W(q, Y), computed once per (d, eta, k, estimate).

    One cache entry whatever the spelling of the call (``lru_cache`` keys
    ``f(d, eta, 1)`` and ``f(d, eta, 1, "average")`` apart: the density
    test and its figures computed the 8-D weights twice, and every cache
    keyed by the weights' arrays after them held two copies).

    Exact in d = 1; in higher d by deterministic numerical integration: the
    law of the squared distance along each axis is binned exactly (CDF
    differences, with each bin's mean), the first d - 1 axes are convolved
    (FFT) and the last one is integrated against its exact CDF. The weight
    depends only on the multiset of per-axis types, so each distinct multiset
    is computed once. Accuracy about 1e-7 (tests/post/test_density.py checks the
    row sums against the ball volume, symmetry and a Monte Carlo estimate).
    """
    if estimate not in ESTIMATES:
        raise ValueError(f"estimate must be one of {ESTIMATES}, got estimate={estimate!r}")
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"subcells must be an integer >= 1, got subcells={k!r}")
    k = int(k)
    if k**d > 4096:
        raise ValueError(
            f"subcells={k} gives {k**d} sub-cells per cell in d={d}; use fewer sub-cells in high dimension"
        )
    return _ball_weights(int(d), float(eta), k, str(estimate), int(bins))


@functools.lru_cache(maxsize=64)
def _ball_weights(d: int, eta: float, k: int, estimate: str, bins: int) -> BallWeights:
    centre = estimate == "centre"
    A = (4.0 * math.sqrt(d) / eta) ** 2
    support = _support(d, float(eta), k, centre)
    every = support[0][1] if len(support) == 1 else np.concatenate([offs for _, offs in support])
    union = _unique_rows(every)  # lexicographic
    W = np.zeros((len(support), union.shape[0]))
    memo: dict[tuple, float] = {}
    span = 2 * (int(np.abs(union).max()) if union.size else 0) + 1
    for r, (pos, offs) in enumerate(support):
        # each offset's multiset of per-axis types as one row of sorted codes
        # (code order = the tuples' order), each distinct row weighed once
        # (codes below (span + 1) k: int16 when they fit, a quarter of the
        # memory traffic of int64 over the 1.28M x 8 offsets of d = 8)
        small: type[np.signedinteger] = np.int16 if (span + 1) * k < 1 << 15 else np.int64
        o: np.ndarray = offs.astype(small)
        p: np.ndarray = np.asarray(pos, dtype=small)
        flip = (o > 0) | ((o == 0) & (p[None, :] > k - 1 - p[None, :]))
        o_c = np.where(flip, -o, o)
        s_c = np.where(flip, k - 1 - p[None, :], p[None, :]).astype(small)
        codes = np.sort((o_c + small(span)) * small(k) + s_c, axis=1)
        base = (span + 1) * k
        flat = np.zeros(codes.shape[0], dtype=np.int64)
        for i in range(d):
            flat = flat * base + codes[:, i]
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
        uniq = codes[first]
        vals = np.empty(uniq.shape[0])
        for u, row in enumerate(uniq.tolist()):
            types = tuple((c // k - span, c % k) for c in row)
            if types not in memo:
                memo[types] = min(max(_weight(types, k, centre, A, bins), 0.0), 1.0)
            vals[u] = memo[types]
        cols = _rows_in(union, offs)
        W[r, cols] = vals[inverse.ravel()]
    offsets = np.ascontiguousarray(union, dtype=np.int64).reshape(-1, d)
    W.setflags(write=False)
    offsets.setflags(write=False)
    return BallWeights(d, float(eta), k, estimate, tuple(p for p, _ in support), offsets, W)
