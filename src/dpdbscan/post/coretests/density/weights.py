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

from ....cells.grid import offsets_within
from . import weightcache

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


def _axis_gaps(steps: np.ndarray, k: int, centre: bool) -> np.ndarray:
    """(k, steps) squared gaps along one axis between sub-cell s (or its
    centre) and the cell at each step, in cell widths."""
    out = []
    for s in range(k):
        lo, hi = ((s + 0.5) / k, (s + 0.5) / k) if centre else (s / k, (s + 1) / k)
        out.append([max(o - hi, lo - (o + 1), 0.0) ** 2 for o in steps.tolist()])
    return np.array(out)


def _axis_types(steps: np.ndarray, k: int, span: int) -> np.ndarray:
    """(k, steps) code of each (step, sub-position)'s axis type, canonical under
    the reflection of :func:`_canonical_axis`: ``(o_c + span) k + s_c``, whose
    order is the order of the (o_c, s_c) tuples."""
    o = steps[None, :]
    s = np.arange(k)[:, None]
    flip = (o > 0) | ((o == 0) & (s > k - 1 - s))
    return ((np.where(flip, -o, o) + span) * k + np.where(flip, k - 1 - s, s)).astype(np.int64)


@dataclass(frozen=True)
class BallWeights:
    """W(q, Y) for every sub-position q of a cell and every neighbour offset.

    The weights are held as a small table of distinct values and, per
    sub-position and offset, an index into it (2 bytes where the table
    allows): in d = 8 with two sub-cells per side W has 256 x 1.28M
    entries, 2.6 GB as float64 against 0.66 GB of indices. :attr:`W`
    lays the whole matrix out (small cases, tests); the density test reads
    it a row or a block of rows at a time (:meth:`row`, :meth:`transposed`)
    and its column extremes (:attr:`kmax`, :attr:`kmin`).

    Attributes
    ----------
    d, eta, k, estimate :
        Dimension, grid parameter, sub-cells per axis and estimate definition.
    positions : tuple of tuple
        The k^d sub-positions, row-major.
    offsets : ndarray of shape (m, d)
        Union over positions of the offsets with W > 0, lexicographic.
    index : ndarray of shape (k^d, m)
        Row of ``table`` of each weight (0 where an offset is outside a
        position's support).
    table : ndarray
        The distinct weights, ``table[0] = 0``.
    support : ndarray of shape (k^d,)
        The offsets within alpha of each sub-position (|NB(q)|).
    """

    d: int
    eta: float
    k: int
    estimate: str
    positions: tuple
    offsets: np.ndarray
    index: np.ndarray
    table: np.ndarray
    support: np.ndarray

    @property
    def ball_volume(self) -> float:
        """V_d (alpha / w)^d: what every row of W sums to."""
        a = 4.0 * math.sqrt(self.d) / self.eta
        return math.pi ** (self.d / 2) / math.gamma(self.d / 2 + 1) * a**self.d

    def row(self, r: int) -> np.ndarray:
        """W[r]: the weights of sub-position r over every offset (a new array)."""
        return self.table[self.index[r]]

    def transposed(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """W[lo:hi].T, C-contiguous: (offsets, positions lo..hi)."""
        return np.ascontiguousarray(self.table[self.index[lo:hi]].T)

    def columns(self, cols: np.ndarray | int) -> np.ndarray:
        """W[:, cols]."""
        return self.table[self.index[:, cols]]

    @functools.cached_property
    def W(self) -> np.ndarray:
        """The whole (k^d, m) matrix, read-only (2.6 GB in d = 8 with two
        sub-cells: the density test reads rows and blocks instead)."""
        W = self.table[self.index]
        W.setflags(write=False)
        return W

    @functools.cached_property
    def kmax(self) -> np.ndarray:
        """max_q W(q, o) per offset: the kernel that bounds every position."""
        return self._extreme(np.maximum)

    @functools.cached_property
    def kmin(self) -> np.ndarray:
        """min_q W(q, o) per offset."""
        return self._extreme(np.minimum)

    def _extreme(self, op: np.ufunc) -> np.ndarray:
        out = self.row(0)
        for r in range(1, self.index.shape[0]):
            op(out, self.row(r), out=out)
        out.setflags(write=False)
        return out

    @functools.cached_property
    def sums(self) -> np.ndarray:
        """sum_Y W(q, Y) per sub-position (each row's sum, as W.sum(axis=1) adds it)."""
        return self._row_sums(False)

    @functools.cached_property
    def sums_of_squares(self) -> np.ndarray:
        return self._row_sums(True)

    def _row_sums(self, squares: bool) -> np.ndarray:
        out = np.empty(self.index.shape[0])
        for r in range(out.size):
            w = self.row(r)
            out[r] = (w * w).sum() if squares else w.sum()
        out.setflags(write=False)
        return out

    @functools.cached_property
    def row_classes(self) -> np.ndarray:
        """Per sub-position, the first sub-position whose row holds the same
        multiset of weights (the same count of every table entry): rows
        that are reflections of one another (every row for k = 2) share
        one class, so what depends on a row's multiset is computed once."""
        first: dict[bytes, int] = {}
        out = np.empty(self.index.shape[0], dtype=np.int64)
        for r in range(out.size):
            counts = np.bincount(self.index[r], minlength=self.table.size).tobytes()
            out[r] = first.setdefault(counts, r)
        out.setflags(write=False)
        return out


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
    # kept across processes (weightcache): public inputs only, the same arrays
    key = weightcache.key_of(d, eta, k, estimate, bins)
    held = weightcache.load(key, d, k)
    if held is not None:
        positions = tuple(itertools.product(range(k), repeat=d))
        return BallWeights(
            d, eta, k, estimate, positions, held["offsets"], held["index"], held["table"], held["support"]
        )
    weights = _computed_ball_weights(d, eta, k, estimate, bins)
    weightcache.store(key, weights.offsets, weights.index, weights.table, weights.support)
    return weights


def _computed_ball_weights(d: int, eta: float, k: int, estimate: str, bins: int) -> BallWeights:
    centre = estimate == "centre"
    A = (4.0 * math.sqrt(d) / eta) ** 2
    reach = int(math.ceil(math.sqrt(A))) + 1
    steps = np.arange(-reach, reach + 1)
    lim = A * (1 - 1e-12)
    gaps = _axis_gaps(steps, k, centre)
    # the union of the supports, without them: an offset is within alpha of
    # some sub-position iff the sum of its per-axis smallest gaps is (that
    # position's sum adds those very floats, and a sum of larger terms is
    # no smaller in floating point too); the same sums, axis by axis, as
    # each position's support adds
    union = offsets_within(steps, gaps.min(axis=0), d, float(np.nextafter(lim, -np.inf)))
    # each offset's step index per axis, an axis a row (contiguous gathers)
    at = np.ascontiguousarray((union + reach).T.astype(np.intp))
    span = 2 * (int(np.abs(union).max()) if union.size else 0) + 1
    types = _axis_types(steps, k, span)
    positions = tuple(itertools.product(range(k), repeat=d))
    table = _WeightTable(k, centre, A, bins, span)
    index = np.zeros((len(positions), union.shape[0]), dtype=np.uint16)
    support = np.empty(len(positions), dtype=np.int64)
    # (k = 1 reflects nothing)
    flips = _axis_flips(union, reach, gaps) if k > 1 else None
    row_of = {pos: r for r, pos in enumerate(positions)}
    for r, pos in enumerate(positions):
        i = next((i for i, s in enumerate(pos) if 2 * s > k - 1), None)
        if flips is not None and i is not None:
            # a reflection of a position before it (s -> k-1-s on axis i):
            # the same gaps and types at the reflected offsets
            mirror = row_of[pos[:i] + (k - 1 - pos[i],) + pos[i + 1 :]]
            index[r] = index[mirror][flips[i]]
            support[r] = support[mirror]
            continue
        cols, ids = _direct_row(pos, at, gaps, types, lim, table)
        support[r] = cols.size
        if ids.size and int(ids.max()) > np.iinfo(index.dtype).max:
            index = index.astype(np.int32)
        index[r, cols] = ids
    offsets = np.ascontiguousarray(union, dtype=np.int64).reshape(-1, d)
    values = np.asarray(table.values)
    for a in (offsets, index, values, support):
        a.setflags(write=False)
    return BallWeights(d, float(eta), k, estimate, positions, offsets, index, values, support)


def _direct_row(pos: tuple, at: np.ndarray, gaps: np.ndarray, types: np.ndarray, lim: float, table):
    """The columns of sub-position ``pos``'s support (its squared gaps added
    axis by axis from 0, below ``lim``) and each one's entry in the table."""
    acc = np.zeros(at.shape[1])
    for i, s in enumerate(pos):
        acc += gaps[s][at[i]]
    cols = np.flatnonzero(acc < lim)
    every = cols.size == at.shape[1]
    # each offset's multiset of per-axis types as one row of sorted codes
    # (int16 where they fit: a quarter of int64's memory traffic)
    base = int(types.max()) + 1
    codes = np.empty((cols.size, len(pos)), dtype=np.int16 if base < 1 << 15 else np.int64)
    for i, s in enumerate(pos):
        codes[:, i] = types[s][at[i] if every else at[i, cols]]
    codes.sort(axis=1)
    flat = np.zeros(cols.size, dtype=np.int64)
    for i in range(len(pos)):
        flat = flat * base + codes[:, i]
    return cols, table.ids(flat, codes)


def _axis_flips(union: np.ndarray, reach: int, gaps: np.ndarray) -> list[np.ndarray] | None:
    """Per axis i, the column of each offset reflected on axis i (o_i -> -o_i),
    when the gaps are reflections of one another bit for bit (sub-position
    s at step o and k-1-s at -o: true where s/k is exact, as for k = 2 or
    4): then a reflected position's sums add the same floats and its weights
    are the reflected offsets' (in d = 8 with two sub-cells, 255 of the 256
    rows). None otherwise (k = 3: 1/3 and 2/3 round apart), or where the
    offsets' codes would not fit an int64."""
    d = union.shape[1]
    width = 2 * reach + 1
    if not np.array_equal(gaps, gaps[::-1, ::-1]) or width**d >= 1 << 62:
        return None
    radix = width ** np.arange(d - 1, -1, -1, dtype=np.int64)
    code = (union + reach) @ radix  # increasing: the union is lexicographic
    return [np.searchsorted(code, code - 2 * union[:, i] * radix[i]) for i in range(d)]


class _WeightTable:
    """The distinct weights met so far, by the code of their multiset of
    axis types (``table.values[0]`` is 0: outside a support)."""

    def __init__(self, k: int, centre: bool, A: float, bins: int, span: int) -> None:
        self.args = (k, centre, A, bins)
        self.span = span
        self.codes = np.empty(0, dtype=np.int64)  # sorted
        self.rows = np.empty(0, dtype=np.int64)  # each code's entry in values
        self.values: list[float] = [0.0]

    def ids(self, flat: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The entries of the weights of the multisets ``flat`` (their sorted
        type codes ``codes``), computing the new ones."""
        at = np.minimum(np.searchsorted(self.codes, flat), max(self.codes.size - 1, 0))
        new = self.codes[at] != flat if self.codes.size else np.ones(flat.size, dtype=bool)
        if new.any():
            fresh, first = np.unique(flat[new], return_index=True)
            k, centre, A, bins = self.args
            rows = np.arange(len(self.values), len(self.values) + fresh.size)
            for row in codes[np.flatnonzero(new)[first]].tolist():
                types = tuple((c // k - self.span, c % k) for c in row)
                self.values.append(min(max(_weight(types, k, centre, A, bins), 0.0), 1.0))
            order = np.argsort(np.concatenate([self.codes, fresh]), kind="stable")
            self.codes = np.concatenate([self.codes, fresh])[order]
            self.rows = np.concatenate([self.rows, rows])[order]
            at = np.searchsorted(self.codes, flat)
        return self.rows[at]
