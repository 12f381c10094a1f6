"""The one place where the budget is spent: the noisy histogram of cell counts.

:func:`release_histogram` counts the points (after the per-record rule, and
per privacy unit after its contribution bound), checks the counts, and calls
exactly one histogram of :mod:`.histograms` with the noise the
:class:`~dpdbscan.params.specs.ReleaseSpec` calibrated. Everything that shapes
it (grid, histogram kind, theta, noise scale, bounds) was decided from public
inputs before (:mod:`dpdbscan.plan.resolve`). Nothing after it reads the
points again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeAlias

import numpy as np

from ..cells import keys as cell_keys
from ..cells.grid import Grid, lookup
from ..cells.histogram import NoisyHistogram
from ..params.specs import ReleaseSpec, SecondRelease, Seed, SizeEstimate, UnitBound
from . import unitchoice
from .backends import Backend, resolve_backend
from .backends.base import CellCounts, DenseBackend, PointsInput, UnitBackend, UnitChoiceBackend
from .bounding import BoundingKey, bounded_fine_coords
from .histograms import dense_histogram, sparse_histogram, stability_histogram
from .histograms.countnoise import Noise, dense_noise, noise_at, noise_of
from .samplers.integers import SecureSource, SeededSource, Source, make_source

HISTOGRAMS = ("dense", "sparse", "stability")

#: What a release draws its noise from: a seed (research), or a source
#: already drawn from (the automatic mode's count, :func:`release_count`).
Randomness: TypeAlias = Seed | SecureSource | SeededSource

#: From this many cells on, a dense release draws its noise on a second
#: thread while the points are counted.
THREADED_NOISE_CELLS = 1 << 16


class NoiseAhead:
    """The noise of one dense release, drawn on a thread before the points
    are counted.

    A dense histogram's noise depends on the release's noise law, its number
    of cells and the randomness alone, never on the data. The command line
    knows all three from its public options before it reads a file, so it
    starts the draw then, and the noise is drawn while the file is read
    (the reading leaves part of a second core idle) instead of after it.

    :func:`release_histogram` takes the noise (:meth:`take`) once, and only
    for a release with the same noise law, number of cells and randomness;
    otherwise it draws its own, as it would without. Either way the noise is
    what it draws itself: a seed gives the same words from a source of its
    own, and secure words are as secure drawn early as late. Only ``None``
    (secure) or an integer seed: a numpy Generator is shared state, which an
    early draw would advance.
    """

    #: The drawing thread's name: a fork waits for it to end
    #: (:data:`dpdbscan.cli.forked.JOINABLE`).
    THREAD = "dpdbscan-noise"

    def __init__(self, spec: ReleaseSpec, random_state: int | None) -> None:
        if random_state is not None and (
            isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer))
        ):
            raise TypeError(f"noise is drawn ahead for None or an integer seed, got {random_state!r}")
        grid = spec.grid
        self._key = (spec.noise, grid.n_cells, random_state)
        self._z: np.ndarray | None = None
        noise, source = noise_of(spec.noise), make_source(random_state, warn=False)

        def draw() -> None:
            try:
                self._z = dense_noise(noise, source, grid)
            except Exception:  # noqa: BLE001 - the release draws its own (and meets it there)
                self._z = None

        self._thread = threading.Thread(target=draw, name=self.THREAD, daemon=True)
        self._thread.start()

    def take(self, spec: ReleaseSpec, random_state: Randomness | None) -> np.ndarray | None:
        """The noise, if drawn for this release's noise, cells and
        randomness (None otherwise: a source already drawn from, as after
        the automatic mode's count, is not the randomness it was drawn
        with); never the same noise twice."""
        self._thread.join()
        z, self._z = self._z, None
        if z is None or (spec.noise, spec.grid.n_cells, random_state) != self._key:
            return None
        return z


def one_stream(random_state: Randomness | None) -> SecureSource | SeededSource:
    """The source of ``random_state`` (:func:`make_source`), for a fit whose
    releases share one stream (person level with release two: release one
    draws from it first, release two continues it, as
    :func:`release_count` returns its source for the histogram)."""
    return make_source(random_state)


def release_histogram(
    spec: ReleaseSpec,
    X: PointsInput,
    *,
    backend: Backend | str | None = None,
    random_state: Randomness | None = None,
    units: Any = None,
    ahead: NoiseAhead | None = None,
    bounding: list | None = None,
) -> NoisyHistogram:
    """The DP histogram of the cell counts of ``X`` that ``spec`` describes.

    The backend counts the points after the per-record rule (its contract);
    the counts are checked (for duplicate keys, or the dense shape) before
    any noise is added, on every path: a duplicate would let one point change
    a count by more than 1. The dense path draws its noise while the points
    are counted, since the noise does not depend on them. ``random_state``
    None draws from a secure generator (:class:`SecureSource`); a seed is for research.

    With a contribution bound (``spec.units``), ``units`` gives the privacy
    unit of each row (for the in-memory backend, one id per row; a
    distributed backend may take a column name) and the backend counts after
    bounding each unit's contribution (:mod:`.bounding`), with a bounding key
    drawn here from the same source as the noise.

    ``ahead``: the noise of a dense release drawn beforehand
    (:class:`NoiseAhead`), used if it was drawn for this release.

    ``bounding``: a list the bounding key is appended to (person level), for
    release two (:func:`release_fine_counts_units`), which bounds the units
    by the same key. Private: it never leaves the fit.
    """
    backend = resolve_backend(backend)
    noise = noise_of(spec.noise)
    source = make_source(random_state)
    grid, kind = spec.grid, spec.histogram
    stated = (spec.noise.epsilon, spec.delta_spent)
    if kind not in HISTOGRAMS:
        raise ValueError(f"histogram must be one of {HISTOGRAMS}, got {kind!r}")
    if spec.unit_choice is not None:
        raise ValueError("a release whose k is chosen privately is made by release_choosing")
    if (spec.units is None) != (units is None):
        raise ValueError(
            "units were given without a contribution bound"
            if spec.units is None
            else "a person-level release needs the units of the rows"
        )
    if spec.units is not None:
        if not isinstance(backend, UnitBackend):
            raise TypeError(f"the {type(backend).__name__} backend cannot bound contributions per unit")
        key = BoundingKey.draw(source)
        if bounding is not None:
            bounding.append(key)
        cells = _canonical(backend.count_units(grid, X, units, spec.units, key))
        return _release(spec, grid, cells, noise, source, stated)
    if kind == "dense":
        if isinstance(backend, DenseBackend):
            # The noise does not depend on the data: on a large grid it is
            # drawn on a second thread while the points are counted (Cabs:
            # 0.30 s -> 0.18 s); on a small one a thread costs more than it
            # saves. The source draws the same noise either way.
            z = None if ahead is None else ahead.take(spec, random_state)
            if z is not None:
                counts = backend.dense_counts(grid, X)
            elif grid.n_cells >= THREADED_NOISE_CELLS:
                with ThreadPoolExecutor(max_workers=1) as pool:
                    drawn = pool.submit(dense_noise, noise, source, grid)
                    counts = backend.dense_counts(grid, X)
                    z = drawn.result()
            else:
                z = dense_noise(noise, source, grid)
                counts = backend.dense_counts(grid, X)
            if counts.shape != grid.shape:
                raise ValueError(
                    f"the backend returned dense counts of shape {counts.shape}, expected {grid.shape}"
                )
            return dense_histogram(grid, counts, noise, source, *stated, z)
    return _release(spec, grid, _canonical(backend.count(grid, X)), noise, source, stated)


def release_count(
    size: SizeEstimate,
    grid: Grid,
    X: PointsInput,
    *,
    backend: Backend | str | None = None,
    random_state: Randomness | None = None,
) -> tuple[float, SecureSource | SeededSource]:
    """The automatic mode's DP count of the points (``size``, from
    :func:`dpdbscan.plan.resolve.release_spec`): the rows the release on
    ``grid``'s box will count (after the per-record rule) plus one draw of
    the count's noise, at sensitivity 1 (each row is its own unit).

    Returns the count and the source it drew from, from which the caller
    draws the histogram's noise next (``random_state`` of
    :func:`release_histogram`): one stream, so the two are independent
    (two sources of one seed would repeat each other). Counted on one cell
    over the whole box: only the total is needed."""
    backend = resolve_backend(backend)
    source = make_source(random_state)
    side = float(np.max(grid.upper - grid.lower))
    # a cell at least as wide as the box: eta eps / (4 sqrt d) >= side
    whole = Grid(grid.lower, grid.upper, 4.0 * np.sqrt(grid.d) * side / grid.eta * 1.01, grid.eta)
    n = int(np.sum(backend.count(whole, X).counts, dtype=np.int64))
    z = noise_at(size.noise, size.scale).sample(source, 1)
    return float(n + z[0]), source


def release_fine_counts(
    fine: Grid,
    cells: np.ndarray,
    epsilon: float,
    X: PointsInput,
    *,
    backend: Backend | str | None = None,
    random_state: Randomness | None = None,
) -> np.ndarray:
    """Release two of the automatic mode in 3-D (docs/privacy.md 4.10;
    chosen by :mod:`dpdbscan.post.sidebyside` from release one alone): the
    points' counts in the fine cells ``cells`` (coords on ``fine``), after the
    per-record rule, each plus one draw of discrete Laplace noise at
    ``epsilon`` (a point lies in at most one fine cell: sensitivity 1). A fine
    cell outside the grid holds no point of the box: its count is 0 before
    the noise. ``random_state``: release one's source, continued (one stream,
    as :func:`release_count` and :func:`release_histogram` share one)."""
    backend = resolve_backend(backend)
    source = make_source(random_state)
    out = np.zeros(cells.shape[0], dtype=np.int64)
    ok = fine.valid(cells)
    if ok.any():
        counted = backend.count(fine, X)
        out[ok] = lookup(
            np.asarray(counted.keys), np.asarray(counted.counts, dtype=np.int64), fine.encode(cells[ok])
        )
    if out.size:
        out += np.asarray(noise_at("discrete", float(epsilon)).sample(source, out.size), np.int64)
    return out


def release_fine_counts_units(
    grid: Grid,
    cells: np.ndarray,
    second: SecondRelease,
    X: PointsInput,
    units: Any,
    bound: UnitBound,
    key: BoundingKey,
    *,
    random_state: Randomness | None = None,
) -> np.ndarray:
    """Release two at person level (docs/privacy.md 4.10): the counts, in
    the fine cells ``cells`` (coords on ``grid.subdivided(f)``, release
    one's grid ``grid`` split f = ``second.fine`` times along each axis), of
    the points release one's contribution bound kept (the same per-record
    rule, the same k cells of each unit by the same ``key``, and in each
    kept cell the unit's first min(count, m) rows in input order;
    :func:`dpdbscan.release.bounding.bounded_fine_coords`), each plus one
    draw of the discrete Gaussian at ``second.sigma2``.

    Sensitivity: a unit's kept points lie in at most k cells of release
    one's grid, at most m in each, and each point's fine cell is found
    inside its own coarse cell, so the f^d fine cells of a coarse cell hold
    at most m of the unit's points between them. Adding or removing the unit
    changes the fine counts by a vector whose entries, block by coarse cell,
    sum to at most m in absolute value: L2 <= sqrt(k m^2) = sqrt(k) m
    whatever f (the worst case puts a block's m points in one fine cell),
    the same as release one's; L1 <= k m. The units' choices read their own
    rows and the key only. In-memory points, one id per row (``units``).
    ``random_state``: release one's source, continued."""
    source = make_source(random_state)
    f = int(second.fine)
    fine = grid.subdivided(f)
    out = np.zeros(cells.shape[0], dtype=np.int64)
    kept = bounded_fine_coords(grid, f, np.asarray(X, dtype=np.float64), units, bound, key)
    ok = fine.valid(cells)
    if ok.any() and kept.shape[0]:
        uniq, inv = cell_keys.unique(fine.encode(kept))
        counts = np.bincount(inv, minlength=len(uniq)).astype(np.int64)
        out[ok] = lookup(uniq, counts, fine.encode(cells[ok]))
    if out.size:
        out += np.asarray(noise_at("gaussian", float(second.sigma2)).sample(source, out.size), np.int64)
    return out


def release_choosing(
    choices: Sequence[ReleaseSpec],
    X: PointsInput,
    *,
    units: Any,
    backend: Backend | str | None = None,
    random_state: Randomness | None = None,
    scored: Callable[[int], object] | None = None,
    bounding: list | None = None,
) -> tuple[ReleaseSpec, NoisyHistogram]:
    """``max_cells_per_unit="auto"``: choose k privately, then release the
    histogram at it. Returns the release made (one of ``choices``) and its
    histogram. ``bounding``: as :func:`release_histogram`'s. ``scored``
    (None: nothing) is told how many units the choice scored (private: for
    a private note; with none, every candidate scores the same and the draw
    is uniform).

    ``choices`` holds the release at each public candidate k
    (:func:`dpdbscan.plan.resolve.resolve`), all with the same
    :class:`~dpdbscan.params.specs.UnitChoice`. The backend counts each unit's
    distinct cells and, in the same pass, bounds the units by the k that
    :func:`.unitchoice.choose` draws from them (the exponential mechanism,
    ``unit_choice.rho``-zCDP); the noise of the chosen release spends the rest
    of the budget. One source draws the bounding key, the choice and the
    noise, in that order.
    """
    backend = resolve_backend(backend)
    if not choices:
        raise ValueError("release_choosing needs the release at each candidate k")
    choice = choices[0].unit_choice
    if choice is None or any(c.unit_choice != choice for c in choices):
        raise ValueError("the candidate releases must share one private choice of k")
    if [c.units.max_cells_per_unit if c.units else None for c in choices] != list(choice.candidates):
        raise ValueError("the candidate releases must be at the candidates' k, in their order")
    if units is None:
        raise ValueError("a person-level release needs the units of the rows")
    if not isinstance(backend, UnitChoiceBackend):
        raise TypeError(f"the {type(backend).__name__} backend cannot choose max_cells_per_unit")
    source = make_source(random_state)
    key = BoundingKey.draw(source)
    if bounding is not None:
        bounding.append(key)
    picked: list[ReleaseSpec] = []

    def choose(cells):
        if picked:
            raise RuntimeError("the backend asked for the choice of k twice; it is made once")
        picked.append(choices[unitchoice.choose(cells, choice.candidates, choice.rho, source)])
        if scored is not None:
            scored(int(np.count_nonzero(np.asarray(cells) > 0)))
        return picked[0].units

    counts = backend.count_units_choosing(choices[0].grid, X, units, choose, key)
    if len(picked) != 1:
        raise RuntimeError("the backend counted without choosing max_cells_per_unit")
    spec = picked[0]
    cells = _canonical(counts)
    return spec, _release(
        spec, spec.grid, cells, noise_of(spec.noise), source, (spec.noise.epsilon, spec.delta_spent)
    )


def _release(
    spec: ReleaseSpec,
    grid: Grid,
    cells: CellCounts,
    noise: Noise,
    source: Source,
    stated: tuple[float, float],
) -> NoisyHistogram:
    """The histogram of ``spec`` on exact (or bounded) cell counts."""
    if spec.histogram == "dense":
        counts = np.zeros(grid.shape, dtype=np.int64)
        if len(cells):
            counts[tuple(grid.decode(cells.keys).T)] = cells.counts
        return dense_histogram(grid, counts, noise, source, *stated)
    if spec.histogram == "sparse":
        return sparse_histogram(grid, cells, noise, source, spec.theta, *stated)
    return stability_histogram(grid, cells, noise, source, spec.theta, *stated)


def _canonical(cells: CellCounts) -> CellCounts:
    """Backends promise sorted unique keys. A custom one that does not would
    break empty-cell sampling and the canonical output order (so sort), or
    let one point count twice (so refuse duplicates)."""
    k = cells.keys
    if k.size < 2:
        return cells
    # packed (wide) keys have no <: compare through a stable argsort
    order = cell_keys.argsort(k)
    if not np.array_equal(order, np.arange(k.size)):
        cells = CellCounts(k[order], cells.counts[order])
    if cell_keys.run_starts(cells.keys).size != k.size:
        raise ValueError(
            "the backend returned duplicate cell keys; a backend must return "
            "each occupied cell once with its total count"
        )
    return cells


__all__ = [
    "HISTOGRAMS",
    "NoiseAhead",
    "Randomness",
    "one_stream",
    "release_choosing",
    "release_count",
    "release_fine_counts",
    "release_fine_counts_units",
    "release_histogram",
]
