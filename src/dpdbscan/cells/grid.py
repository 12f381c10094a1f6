"""The grid of cells, cell keys and the alpha-neighbourhood NB(X).

The grid covers the public box ``[lower, upper]`` with cubic cells of width
``w = eta * alpha / (4 * sqrt(d))`` anchored at ``lower``; ``eta = 4`` gives the
paper's default ``w = alpha / sqrt(d)``. Cell coordinates are integer vectors
``c`` with ``0 <= c[i] < shape[i]``.

Keys
----
Cells are identified by one sortable key per cell. When the padded universe fits
in an int64 the key is a mixed-radix integer whose radix in each dimension is
``shape[i] + reach``: the ``reach`` spare slots per dimension make every
neighbour offset a constant key difference that never aliases onto a real
cell of another row, so neighbour sums become lookups of contiguous key runs.
When the universe does not fit (a fine 3-D grid, d = 8 at a few hundred
cells per side), keys are the coordinate rows packed into as few 64-bit words
as their padded ranges need, stored big-endian as one numpy ``void`` whose
byte order is the lexicographic order of the coordinates
(:mod:`dpdbscan.cells.keys`): ``np.sort`` and ``==`` stay correct, and the
sorting and searching here run on the words as integers. Overflow is never
silent: a coordinate beyond the padding has no key.
"""

from __future__ import annotations

import functools
import math
import warnings
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any

import numpy as np

from ..exceptions import renamed
from . import keys as _keys

#: A 1-D sequence of numbers (a list, a tuple or an array).
Vector = Sequence[float] | np.ndarray

INT64_SAFE = 1 << 62  # head-room for negative offsets and sentinels


MAX_KAPPA = 2_000_000  # beyond this NB is counted but not enumerated
_BLOCK = 1 << 15  # rows per block when computing keys (two float buffers stay in cache)
#: The largest eta of a release's grid: a user's eta is at most 4; the coarse
#: release of 7-D/8-D (:mod:`dpdbscan.plan.coarserelease`) doubles it, cells
#: whose diagonal is twice eps.
MAX_RELEASE_ETA = 8.0
_WIDTH_TOL = 1e-9  # relative: widths that differ by rounding only describe the same cells


def _radius2(d: int, eta: float) -> float:
    r = 4.0 * math.sqrt(d) / eta
    return r * r


def gap2_limit(d: int, eta: float) -> int:
    """Largest integer sum of squared gaps that is still < (alpha/w)^2."""
    r2 = _radius2(d, eta)
    lim = int(math.floor(r2))
    if lim >= r2 - 1e-12 * max(r2, 1.0):  # strict inequality, robust to rounding
        lim -= 1
    return lim


def count_neighbours(d: int, eta: float) -> int:
    """kappa = |NB(X)| without enumerating the offsets (exact, any d)."""
    lim = gap2_limit(d, eta)
    reach = int(math.isqrt(lim)) + 1 if lim >= 0 else 0
    # multiplicity of each squared gap in one dimension
    per_dim = {0: 3 if reach >= 1 else 1}
    for g in range(1, reach):
        per_dim[g * g] = 2
    ways = [0] * (lim + 1)
    ways[0] = 1
    for _ in range(d):
        new = [0] * (lim + 1)
        for s, c in enumerate(ways):
            if c:
                for g2, mult in per_dim.items():
                    if s + g2 <= lim:
                        new[s + g2] += c * mult
        ways = new
    return sum(ways)


@functools.lru_cache(maxsize=32)
def neighbour_offsets(d: int, eta: float) -> np.ndarray:
    """Integer offsets o whose cell has minimum distance < alpha to cell 0.

    In units of the cell width, alpha is ``4 sqrt(d) / eta``. Two cells at
    offset o are at minimum distance ``sqrt(sum(max(|o_i| - 1, 0)^2))``. The
    strict inequality follows the paper (kappa = 21 for d = 2, 117 for d = 3 at
    eta = 4). Returns a read-only array of shape (kappa, d), sorted
    lexicographically, computed once per (d, eta) (1.28M offsets in 8-D).
    """
    kappa = count_neighbours(d, eta)
    if kappa > MAX_KAPPA:
        raise ValueError(
            f"the alpha-neighbourhood has kappa={kappa} cells in d={d} at eta={eta}; "
            f"more than {MAX_KAPPA} cannot be enumerated (and the noise margin would "
            "swamp any cluster): use fewer dimensions or a larger eta"
        )
    lim = gap2_limit(d, eta)
    reach = int(math.isqrt(lim)) + 1 if lim >= 0 else 0
    gaps = np.arange(-reach, reach + 1)
    out = offsets_within(gaps, np.maximum(np.abs(gaps) - 1, 0) ** 2, d, lim)
    out.setflags(write=False)
    return out


def offsets_within(steps: np.ndarray, part: np.ndarray, d: int, lim: float) -> np.ndarray:
    """The offsets in ``steps`` along each of ``d`` axes whose sum of
    ``part`` (a step's term, at its index) is at most ``lim``, as an (m, d)
    int64 array in lexicographic order. Built axis by axis, pruning the
    partial sums that already pass the limit (no product of all offsets);
    the sums add left to right, as a per-offset rule would."""
    acc = np.zeros(1)
    links = []  # per axis: each kept partial offset's parent and step
    for _ in range(d):
        new_acc = (acc[:, None] + part[None, :]).ravel()
        kept = np.flatnonzero(new_acc <= lim)
        acc = new_acc[kept]
        links.append(np.divmod(kept, steps.size))
    return rows_from_links(links, steps, acc.size)


def rows_from_links(links: list, steps: np.ndarray, n: int) -> np.ndarray:
    """The (n, d) int64 rows of offsets grown axis by axis from ``steps``,
    given per axis each kept partial row's (parent, step index), last axis
    first (growing the rows themselves copied them d times: half a second
    for the 1.28M offsets of d = 8)."""
    d = len(links)
    rows = np.empty((n, d), dtype=np.int64)
    at = np.arange(n)
    for axis in range(d - 1, -1, -1):
        parent, step = links[axis]
        rows[:, axis] = steps[step[at]]
        at = parent[at]
    return rows


def approximation_ratio(eta: float, subcells: int = 1) -> float:
    """rho of the guarantees: 3 + eta/2 + eta/(2k) for k sub-cells per cell
    and dimension; k = 1 gives the paper's 3 + eta (docs/accuracy.md). A core
    (sub-)cell's ball reaches at most rho alpha from the points it counts."""
    return 3.0 + eta / 2 + eta / (2 * subcells)


@dataclass(frozen=True)
class Grid:
    """A public grid over the box ``[lower, upper]``.

    Parameters
    ----------
    lower, upper : array of shape (d,)
        Public bounds of the data domain.
    eps : float
        The DBSCAN radius: the paper's alpha, scikit-learn's ``eps`` (old
        attribute name ``alpha``, FutureWarning).
    eta : float, default 4.0
        Grid parameter in (0, 4]; cell width ``w = eta * eps / (4 sqrt(d))``.
        The approximation ratio is ``rho = 3 + eta``.
    cell_width : float, optional
        The cell width itself, when it must be bit for bit the width of
        another grid (the same cells measured against another radius, see
        :meth:`at_eps`); it must agree with ``eta * eps / (4 sqrt(d))`` up
        to rounding. By default that formula.

    Attributes
    ----------
    width : float
        Cell width ``w``.
    shape : tuple of int
        Number of cells per dimension.
    n_cells : int
        ``|X|``, the number of cells (a Python int; it may exceed 2**63).
    offsets : ndarray of shape (kappa, d)
        The alpha-neighbourhood ``NB`` as integer offsets.
    kappa : int
        ``|NB(X)|``.
    wide : bool
        True when keys are packed coordinate rows instead of int64.
    """

    lower: np.ndarray
    upper: np.ndarray
    eps: float
    eta: float = 4.0
    cell_width: InitVar[float | None] = None
    width: float = field(init=False)
    shape: tuple = field(init=False)
    reach: int = field(init=False)
    wide: bool = field(init=False)
    _radix: tuple = field(init=False, repr=False)
    _strides: np.ndarray = field(init=False, repr=False)
    _packing: _keys.Packing | None = field(init=False, repr=False)

    def __post_init__(self, cell_width: float | None = None) -> None:
        lower = np.asarray(self.lower, dtype=np.float64).ravel()
        upper = np.asarray(self.upper, dtype=np.float64).ravel()
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        d = lower.size
        w = self.eta * self.eps / (4.0 * math.sqrt(d))
        if cell_width is not None:
            # the same cells as another grid: only rounding may tell the widths apart
            if not (math.isfinite(cell_width) and abs(cell_width - w) <= _WIDTH_TOL * w):
                raise ValueError(
                    f"cell_width={cell_width!r} is not eta * eps / (4 sqrt(d)) = "
                    f"{w!r} for eps={self.eps!r}, eta={self.eta!r}"
                )
            w = float(cell_width)
        shape = tuple(max(1, int(math.ceil((hi - lo) / w))) for lo, hi in zip(lower, upper))
        lim = gap2_limit(d, self.eta)
        reach = int(math.isqrt(lim)) + 1 if lim >= 0 else 0
        radix = tuple(s + reach for s in shape)
        total = 1
        for r in radix:
            total *= r
        wide = total >= INT64_SAFE
        strides = np.ones(d, dtype=np.int64)
        if not wide:
            for i in range(d - 2, -1, -1):
                strides[i] = strides[i + 1] * radix[i + 1]
        # packed keys: coordinates from -bias to shape + bias (twice the reach
        # of NB and one more: room for offsets of sub-cell neighbourhoods)
        bias = 2 * reach + 1
        packing = _keys.Packing.for_ranges(bias, tuple(s + 2 * bias for s in shape)) if wide else None
        for name, val in [
            ("_packing", packing),
            ("width", w),
            ("shape", shape),
            ("reach", reach),
            ("wide", wide),
            ("_radix", radix),
            ("_strides", strides),
        ]:
            object.__setattr__(self, name, val)

    def __eq__(self, other: object) -> bool:
        """Equal grids have the same box, eps, eta and cells."""
        if not isinstance(other, Grid):
            return NotImplemented
        return (
            self.eps == other.eps
            and self.eta == other.eta
            and self.width == other.width
            and self.shape == other.shape
            and np.array_equal(self.lower, other.lower)
            and np.array_equal(self.upper, other.upper)
        )

    __hash__ = None  # type: ignore[assignment]  # arrays: a grid is not a dict key

    # ------------------------------------------------------- the same cells
    def at_eps(self, eps: float) -> Grid:
        """The same cells (corner, width and shape bit for bit) measured
        against the radius ``eps``: ``eta' = eta * self.eps / eps``.

        Keys differ (the padding ``reach`` grows with eps / w): re-encode
        coordinates, never reuse keys across the two grids.
        """
        eps = float(eps)
        if eps == self.eps:
            return self
        return Grid(self.lower, self.upper, eps, self.eta * self.eps / eps, cell_width=self.width)

    alpha = renamed("alpha", "eps")

    def at_alpha(self, alpha: float) -> Grid:
        """Old name of :meth:`at_eps` (FutureWarning)."""
        warnings.warn(
            "Grid.at_alpha is renamed at_eps; the old name goes in the next release", FutureWarning, 2
        )
        return self.at_eps(alpha)

    def subdivided(self, k: int) -> Grid:
        """The grid of sub-cells of width ``w / k`` (``self`` for k = 1)."""
        if k == 1:
            return self
        return Grid(self.lower, self.upper, self.eps, self.eta / k, cell_width=self.width / k)

    # ------------------------------------------------------------------ sizes
    @property
    def d(self) -> int:
        return self.lower.size

    @functools.cached_property
    def offsets(self) -> np.ndarray:
        """NB as integer offsets, shape (kappa, d)."""
        return neighbour_offsets(self.d, self.eta)

    @functools.cached_property
    def kappa(self) -> int:
        return count_neighbours(self.d, self.eta)

    @property
    def n_cells(self) -> int:
        return math.prod(self.shape)

    @property
    def key_space(self) -> int:
        """Number of int64 keys of real and padding cells (int64 keys only)."""
        return math.prod(self._radix)

    @property
    def approx_ratio(self) -> float:
        """The paper's approximation ratio 3 + eta for this grid's cells."""
        return approximation_ratio(self.eta)

    # ------------------------------------------------------------ coordinates
    def coords(self, X: np.ndarray) -> np.ndarray:
        """Cell coordinates of points already inside the box (int64, (n, d))."""
        out = np.empty(X.shape, dtype=np.int64)
        for i in range(self.d):
            out[:, i] = self._axis_coords(X[:, i], i)
        return out

    def _axis_coords(self, x: np.ndarray, i: int) -> np.ndarray:
        c = np.empty(x.shape, dtype=np.float64)
        return self._axis_cells(x, i, c).astype(np.int64)

    def _axis_cells(self, x: np.ndarray, i: int, out: np.ndarray) -> np.ndarray:
        """Cell coordinate along axis ``i`` as whole floats, written to ``out``.

        ``floor((x - lower) / w)`` clamped to ``[0, shape - 1]``: clamping
        first and truncating after gives the same integers (the top face of the
        box belongs to the last cell), with in-place ufuncs only. One clip
        pass: ``np.maximum`` then ``np.minimum`` took three times as long
        (about 0.02 s of CPU when the Cabs file's cells are counted).
        """
        # Finite coordinates far outside the box (1e308) overflow to inf here;
        # the clamp below maps them to the border cell, so the overflow is
        # expected and must not surface as a data-dependent warning.
        with np.errstate(over="ignore"):
            np.subtract(x, self.lower[i], out=out)
            out /= self.width
        np.clip(out, 0.0, float(self.shape[i] - 1), out=out)
        return np.trunc(out, out=out)

    def linear_index(self, X: np.ndarray, strides: Vector) -> np.ndarray:
        """``sum_i coord_i(X) * strides[i]`` as int64, for points in the box.

        Works through the points in cache-sized blocks with two float buffers
        (exact while the largest index is below 2**53), so an (n, d) input
        costs one int64 output and no full-size temporaries.
        """
        n = X.shape[0]
        out = np.empty(n, dtype=np.int64)
        istrides = [int(s) for s in strides]
        top = sum((s - 1) * st for s, st in zip(self.shape, istrides))
        if n == 0:
            return out
        if top >= 1 << 53:  # float sums would round: integer accumulation
            out[:] = 0
            for i in range(self.d):
                out += self._axis_coords(X[:, i], i) * istrides[i]
            return out
        block = min(n, _BLOCK)
        acc, tmp = np.empty(block), np.empty(block)
        for start in range(0, n, block):
            stop = min(n, start + block)
            a, t = acc[: stop - start], tmp[: stop - start]
            for i in range(self.d):
                dst = a if i == 0 else t
                self._axis_cells(X[start:stop, i], i, dst)
                if istrides[i] != 1:
                    dst *= float(istrides[i])
                if i:
                    a += t
            out[start:stop] = a
        return out

    def keys_of_points(self, X: np.ndarray) -> np.ndarray:
        """Keys of the cells holding points ``X`` (points must be inside the box)."""
        if self.wide:
            return self.encode(self.coords(X))
        return self.linear_index(X, self._strides)

    def inside(self, X: np.ndarray) -> np.ndarray:
        """Rows of ``X`` that are finite and inside the closed box."""
        return np.all((X >= self.lower) & (X <= self.upper), axis=1)

    def cell_lower(self, coords: np.ndarray) -> np.ndarray:
        """Lower corner of each cell (float, (m, d))."""
        return self.lower + np.asarray(coords, dtype=np.float64) * self.width

    def cell_centres(self, coords: np.ndarray) -> np.ndarray:
        return self.cell_lower(coords) + self.width / 2

    # ------------------------------------------------------------------- keys
    @property
    def key_dtype(self) -> np.dtype:
        return self._packing.dtype if self._packing is not None else np.dtype(np.int64)

    def encode(self, coords: np.ndarray) -> np.ndarray:
        """Keys of integer coordinate rows (which may lie in the padding)."""
        coords = np.asarray(coords, dtype=np.int64).reshape(-1, self.d)
        if not self.wide:
            # a sum of columns times strides (int64 matmul has no fast kernel)
            key = coords[:, -1].copy()
            for i in range(self.d - 1):
                key += coords[:, i] * int(self._strides[i])
            return key
        assert self._packing is not None
        return self._packing.encode(coords)

    def decode(self, keys: np.ndarray) -> np.ndarray:
        """Coordinates of keys (inverse of :meth:`encode`)."""
        if self._packing is not None:
            return self._packing.decode(keys).reshape(-1, self.d)
        keys = np.asarray(keys, dtype=np.int64).ravel()
        out = np.empty((keys.size, self.d), dtype=np.int64)
        rem = keys.copy()
        for i in range(self.d - 1):
            # a floor division by a scalar and a product: numpy divides by a
            # scalar 10x faster than np.divmod computes both
            q = rem // int(self._strides[i])
            out[:, i] = q
            q *= int(self._strides[i])
            rem -= q
        out[:, -1] = rem
        return out

    def keys_of_positions(self, positions: np.ndarray) -> np.ndarray:
        """Keys (int64 keys only) of cells given by their row-major index
        among the grid's cells (the order of the universe's Bernoulli trials
        in a sparse release): with L_i and K_i the row-major strides of the
        shape and of the key radix (shape + reach), a cell's key is

            p + reach * sum_{i < d - 1} (p // L_i) * K_{i + 1},

        since its coordinate c_i = p // L_i - shape_i * (p // L_{i - 1}) and
        K_i - shape_{i + 1} K_{i + 1} = reach K_{i + 1}: d - 1 divisions by
        a scalar, where the coordinates would take d divmods and an encode.
        """
        if self.wide:
            raise ValueError("keys_of_positions needs int64 keys (this grid packs its keys)")
        p = np.asarray(positions, dtype=np.int64).ravel()
        key = p.copy()
        step = 1  # L_i, from the last axis up
        for i in range(self.d - 2, -1, -1):
            step *= self.shape[i + 1]
            m = p // step
            m *= self.reach * int(self._strides[i + 1])
            key += m
        return key

    def valid(self, coords: np.ndarray) -> np.ndarray:
        """Rows of integer coordinates that name a cell of the grid."""
        coords = np.asarray(coords, dtype=np.int64).reshape(-1, self.d)
        ok = np.ones(coords.shape[0], dtype=bool)
        for i, s in enumerate(self.shape):
            # one unsigned comparison per axis: negatives wrap to huge values
            ok &= coords[:, i].view(np.uint64) < np.uint64(s)
        return ok

    def key_delta(self, offset: Vector) -> int:
        """Key difference of an integer offset (int64 keys only)."""
        return int(np.dot(np.asarray(offset, dtype=np.int64), self._strides))

    def all_coords(self) -> np.ndarray:
        """Every cell of the universe, row-major (only for small universes)."""
        axes = [np.arange(s) for s in self.shape]
        return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, self.d)

    def to_dict(self) -> dict:
        return {
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "eps": self.eps,
            "eta": self.eta,
            "width": self.width,
            "shape": list(self.shape),
            "kappa": self.kappa,
            "n_cells": str(self.n_cells),
        }


_grid_init = Grid.__init__


@functools.wraps(_grid_init)
def _init_taking_alpha(self: Grid, *args: Any, alpha: float | None = None, **kw: Any) -> None:
    """``Grid(..., alpha=...)``, the 0.2.0 keyword of the radius, keeps
    working for one release (FutureWarning); the radius is ``eps``."""
    if alpha is not None:
        warnings.warn(
            "Grid(alpha=...) is renamed Grid(eps=...); the old name goes in the next release",
            FutureWarning,
            2,
        )
        kw["eps"] = alpha
    _grid_init(self, *args, **kw)


Grid.__init__ = _init_taking_alpha  # type: ignore[method-assign]


def offset_runs(offsets: np.ndarray) -> Iterator[tuple[np.ndarray, int, int]]:
    """Group integer offsets into runs contiguous in the last dimension.

    Yields ``(prefix, lo, hi)`` such that the offsets are exactly the
    ``prefix + (j,)`` with ``lo <= j <= hi`` over all runs, in lexicographic
    order. A set that is not contiguous for some prefix is split into several
    runs. Prefix sums along the last axis turn each run into one difference,
    and with int64 keys each run is one interval of keys.
    """
    off, run = sorted_runs(offsets)
    if off.shape[0] == 0:
        return
    starts = np.flatnonzero(np.concatenate(([True], run[1:] != run[:-1])))
    ends = np.append(starts[1:], off.shape[0]) - 1
    for a, b in zip(starts.tolist(), ends.tolist()):
        yield off[a, :-1], int(off[a, -1]), int(off[b, -1])


#: :func:`sorted_runs` of read-only offset arrays (NB of a grid, the ball
#: weights' support: computed once per process), by the array's identity.
_RUNS: dict[int, tuple[weakref.ref, tuple[np.ndarray | None, np.ndarray]]] = {}


def sorted_runs(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The offsets in lexicographic order and the index of the run of
    :func:`offset_runs` each belongs to (runs numbered in that order).
    Read-only arrays in and out for read-only offsets (held: sorting the
    1.28M offsets of d = 8 took a second per call)."""
    held = isinstance(offsets, np.ndarray) and not offsets.flags.writeable
    if held:
        hit = _RUNS.get(id(offsets))
        if hit is not None and hit[0]() is offsets:
            off, run = hit[1]
            return (offsets if off is None else off), run
    off, run, same = _sorted_runs(offsets)
    if not held:
        return (off.copy() if same else off), run  # (a writable input may change)
    # offsets sorted already (2-D int64) are their own sorted copy: the entry
    # holds None for them (holding them, or a view, would keep them alive)
    same = same and offsets.dtype == np.int64 and offsets.ndim == 2
    if not same and off.base is not None:
        off = off.copy()
    off.setflags(write=False)
    run.setflags(write=False)
    at = id(offsets)
    _RUNS[at] = (weakref.ref(offsets, functools.partial(_forget, _RUNS, at)), (None if same else off, run))
    return (offsets if same else off), run


def _forget(table: dict, at: Any, _ref: object) -> None:
    """Weak-reference callback: the array held at ``at`` is gone."""
    table.pop(at, None)


def _sorted_runs(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """The sorted offsets (the input, or a view of it, when sorted already),
    the run of each and whether they were sorted already."""
    off = np.asarray(offsets, dtype=np.int64)
    off = off.reshape(-1, off.shape[-1]) if off.ndim > 1 else off.reshape(-1, 1)
    order = _lexicographic_order(off)
    same = isinstance(order, slice)
    if not same:
        off = off[order]
    if off.shape[0] == 0:
        return off, np.zeros(0, dtype=np.int64), same
    new = np.ones(off.shape[0], dtype=bool)
    new[1:] = np.any(off[1:, :-1] != off[:-1, :-1], axis=1) | (off[1:, -1] != off[:-1, -1] + 1)
    return off, np.cumsum(new) - 1, same


def _lexicographic_order(rows: np.ndarray) -> np.ndarray | slice:
    """The order of ``np.lexsort(rows.T[::-1])`` (rows in lexicographic
    order, ties in their order), or ``slice(None)`` when they are in it
    already (the ball weights' support is built sorted). One stable argsort
    of a linear code when the rows' code fits an int64: a lexsort of the
    1.28M offsets of d = 8 over their 8 columns took 0.7 s."""
    n, d = rows.shape
    if n < 2 or d == 0:
        return slice(None)
    lo = int(rows.min())
    span = int(rows.max()) - lo + 1
    if span**d >= 1 << 62:
        return np.lexsort(rows.T[::-1])
    code = np.zeros(n, dtype=np.int64)
    for k in range(d):
        code *= span
        code += rows[:, k] - lo
    if bool(np.all(code[1:] >= code[:-1])):
        return slice(None)
    return np.argsort(code, kind="stable")


def search_keys(sorted_keys: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each query key sits in ``sorted_keys``: ``(idx, hit)``.

    ``hit[i]`` is True when ``sorted_keys[idx[i]] == query[i]``; ``idx`` is
    clipped into range so it can always be used as an index. Works for int64
    and packed keys (on their words, :mod:`dpdbscan.cells.keys`). The one
    sorted-key lookup of the package.
    """
    query = np.asarray(query)
    if sorted_keys.size == 0:
        return np.zeros(query.shape, dtype=np.intp), np.zeros(query.shape, dtype=bool)
    idx = np.minimum(_keys.searchsorted(sorted_keys, query), sorted_keys.size - 1)
    return idx, _keys.equal_at(sorted_keys, idx, query)


def lookup(sorted_keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``values[sorted_keys == q]`` for each query key ``q``, 0 where absent."""
    out = np.zeros(np.asarray(query).size, dtype=values.dtype if values.size else np.int64)
    if query.size == 0:
        return out
    idx, hit = search_keys(sorted_keys, query)
    out[hit] = values[idx[hit]]
    return out
