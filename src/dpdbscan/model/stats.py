"""Free per-span figures of a release: cell count, area, noisy mass, extent.

Everything here reads only the released model (the spans and the noisy
histogram), so it is post-processing and may be published with the model at
no privacy cost. GeoJSON properties (:mod:`dpdbscan.model.codec`), the spans
picture (:mod:`dpdbscan.render.plotting`) and the interactive map
(:mod:`dpdbscan.render.webmap`) all take their numbers from :func:`span_stats`, so
the three agree.

Definitions
-----------
``n_cells``
    The number of core cells of the span in ``model.grid`` (the sub-cells
    when the model was fitted with ``subcells > 1``).
``area``
    The area of the span's *region*: the cells ``predict`` maps to it, core
    and border cells (``SpanModel.span_region``, the polygons drawn), times
    ``w**d`` for the span grid's cell width ``w``, in squared model units (km²
    for ``--geo`` models, whose plane is the local equirectangular
    projection; exact at its reference latitude). Cells at the upper edge of
    the box count whole.
``noisy_mass``
    The sum of the released noisy counts of the *histogram* cells that
    intersect the span: with sub-cells, a histogram cell counts once when any
    of its sub-cells belongs to the span, and a histogram cell shared by two
    spans counts towards both. Cells a sparse or stability histogram did not
    release count 0. It estimates the number of points in those histogram
    cells (with ``m`` cells, Laplace noise of scale ``1/epsilon`` adds a
    standard deviation of ``sqrt(2 m) / epsilon``; cells under theta bias it
    down). ``None`` when the model was saved without its histogram.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cells.histogram import NoisyHistogram
from ..post.coretests import Spans


@dataclass(frozen=True)
class SpanStats:
    """Per-span figures, indexed by span id (0..n_spans-1).

    Attributes
    ----------
    n_cells : ndarray of int64, shape (n_spans,)
    area : ndarray of float64, shape (n_spans,)
        Squared model units (km² for geographic models).
    noisy_mass : ndarray of float64, shape (n_spans,), or None
        See the module docstring; None without a histogram.
    lower, upper : ndarray of float64, shape (n_spans, d)
        Bounding box of the span's region in model coordinates.
    anchor : ndarray of float64, shape (n_spans, d)
        The centre of the span cell nearest the mean of its cell centres: a
        point inside the span, for a label.
    """

    n_cells: np.ndarray
    area: np.ndarray
    noisy_mass: np.ndarray | None
    lower: np.ndarray
    upper: np.ndarray
    anchor: np.ndarray

    @property
    def n_spans(self) -> int:
        return int(self.n_cells.size)


def span_stats(model: Any) -> SpanStats:
    """The :class:`SpanStats` of a span model (computed once per model, its
    ``stats``: the GeoJSON and the picture both ask)."""
    return model.stats


def compute_stats(
    spans: Spans, subcells: int, rkeys: np.ndarray, rlabels: np.ndarray, histogram: NoisyHistogram | None
) -> SpanStats:
    """The :class:`SpanStats` of ``spans`` whose regions (core and border
    cells, as ``predict`` maps them) are ``rkeys`` with span ids ``rlabels``."""
    grid = spans.grid
    n = spans.n_spans
    d = grid.d
    labels = np.asarray(spans.labels, dtype=np.int64)
    coords = grid.decode(spans.core_keys).astype(np.int64).reshape(-1, d)
    n_cells = np.bincount(labels, minlength=n).astype(np.int64)
    area = np.bincount(rlabels, minlength=n).astype(np.float64) * float(grid.width) ** d
    if n == 0:
        empty = np.zeros((0, d))
        mass = None if histogram is None else np.zeros(0)
        return SpanStats(n_cells, area, mass, empty, empty, empty)

    rorder = np.argsort(rlabels, kind="stable")
    rlab, rc = rlabels[rorder], grid.decode(rkeys)[rorder]
    rstarts = np.flatnonzero(np.r_[True, rlab[1:] != rlab[:-1]])
    lower = grid.lower + np.minimum.reduceat(rc, rstarts, axis=0) * grid.width
    upper = grid.lower + (np.maximum.reduceat(rc, rstarts, axis=0) + 1) * grid.width

    order = np.argsort(labels, kind="stable")
    lab, c = labels[order], coords[order]
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])

    centres = grid.lower + (c + 0.5) * grid.width
    mean = np.add.reduceat(centres, starts, axis=0) / n_cells[:, None]
    dist = np.sum((centres - mean[lab]) ** 2, axis=1)
    nearest = np.lexsort((dist, lab))  # by span, then by distance
    first = nearest[np.r_[True, lab[nearest][1:] != lab[nearest][:-1]]]
    anchor = centres[first]

    mass = None if histogram is None else _noisy_mass(histogram, subcells, labels, coords, n)
    return SpanStats(n_cells, area, mass, lower, upper, anchor)


def _noisy_mass(hist: NoisyHistogram, k: int, labels: np.ndarray, coords: np.ndarray, n: int) -> np.ndarray:
    # A sub-cell c lies in histogram cell c // k: both grids start at `lower`
    # and the sub-cell width is the histogram width / k.
    pairs = np.column_stack([labels, coords // k])
    # distinct (span, histogram cell) rows: sort them, keep the first of each run
    pairs = pairs[np.lexsort(pairs.T[::-1])]
    first = np.ones(pairs.shape[0], dtype=bool)
    first[1:] = np.any(pairs[1:] != pairs[:-1], axis=1)
    pairs = pairs[first]
    hc = pairs[:, 1:]
    if hist.kind == "dense":
        values = hist.values[tuple(hc.T)]
    else:
        values = hist.value_at(hist.grid.encode(hc))
    return np.bincount(pairs[:, 0], weights=np.asarray(values, dtype=np.float64), minlength=n)


def is_geographic(model: object) -> bool:
    """True for models fitted with ``--geo`` (a projection in the metadata)."""
    return getattr(model, "metadata", {}).get("projection") is not None


def format_area(value: float, *, geo: bool) -> str:
    """An area for people: ``"0.031 km²"``/``"3,125 m²"`` for geo (value in
    km²), else the number in squared data units."""
    if not geo:
        text = f"{value:,.0f}" if 1e4 <= abs(value) < 1e15 else f"{value:.4g}"
        return f"{text} (data units)²"
    if value < 0.1:
        return f"{value * 1e6:,.0f} m²"
    return f"{value:.3g} km²" if value < 100 else f"{value:,.0f} km²"


__all__ = ["SpanStats", "compute_stats", "span_stats", "is_geographic", "format_area"]
