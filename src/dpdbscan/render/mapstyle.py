"""What the spans picture and the interactive map share: colours that keep
neighbouring spans apart, the noisy histogram as a heat layer, the default
view, and round scale-bar lengths.

Only numpy: :mod:`dpdbscan.render.plotting` (matplotlib) and :mod:`dpdbscan.render.webmap`
(HTML) both draw with these. Everything is computed from the release (spans
and noisy histogram), never from points.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..laws.noise import variance as noise_variance
from ..model.stats import SpanStats, span_stats

if TYPE_CHECKING:
    from ..cells.histogram import NoisyHistogram
    from ..model.record import SpanModel

#: A qualitative palette (matplotlib's "tab10" without its grey, which the
#: heat layer uses). Greedy colouring rarely needs more than six of them.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")

#: Spans whose regions come within about this many eps of each other count
#: as neighbours and get different colours (:func:`span_colours`).
NEIGHBOUR_ALPHAS = 4.0

#: Largest heat image, in pixels; bigger windows are summed in blocks.
MAX_HEAT_PIXELS = 4_000_000


# --------------------------------------------------------------------------- #
# colours


def span_neighbours(cells: np.ndarray, labels: np.ndarray, radius: int) -> list[tuple[int, int]]:
    """Pairs ``(a, b)``, ``a < b``, of spans that lie close together.

    Cells are put in square blocks of ``radius`` cells; two spans are
    neighbours when they have cells in the same or adjacent blocks. So spans
    with cells at most ``radius`` cells apart (Chebyshev distance) are always
    neighbours, and spans more than ``2 * radius`` cells apart never are.
    Working on blocks keeps this linear in the number of cells.
    """
    cells = np.asarray(cells, dtype=np.int64).reshape(len(labels), -1)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.size == 0:
        return []
    r = max(1, int(radius))
    blocks = cells[:, :2] // r + 1  # +1 keeps block - 1 >= 0
    ny = int(blocks[:, 1].max()) + 2
    n_labels = int(labels.max()) + 1
    if int(labels.min()) >= 0 and (int(blocks[:, 0].max()) + 2) * ny * n_labels < 2**62:
        # distinct (block, span) pairs as one sorted int64 each: by block,
        # then span (several times faster than sorting rows)
        pair = np.unique((blocks[:, 0] * ny + blocks[:, 1]) * n_labels + labels)
        key, lab = pair // n_labels, pair % n_labels
    else:
        # distinct (block, span) rows: sorted, first of each run (np.unique
        # with axis=0 sorts rows as opaque bytes, many times slower)
        occ = np.column_stack([blocks, labels])
        occ = occ[np.lexsort(occ.T[::-1])]
        first = np.ones(occ.shape[0], dtype=bool)
        first[1:] = np.any(occ[1:] != occ[:-1], axis=1)
        occ = occ[first]
        key, lab = occ[:, 0] * ny + occ[:, 1], occ[:, 2]
    pairs: set[tuple[int, int]] = set()
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            target = key + dx * ny + dy
            lo = np.searchsorted(key, target, side="left")
            hi = np.searchsorted(key, target, side="right")
            # A block holds few spans, so the loop below is short.
            for run in range(int((hi - lo).max(initial=0))):
                has = lo + run < hi
                other = lab[np.minimum(lo + run, len(lab) - 1)]
                sel = has & (other != lab)
                a, b = lab[sel], other[sel]
                pairs.update(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    return sorted(pairs)


def greedy_colouring(
    n: int, edges: Iterable[tuple[int, int]], n_colours: int, order: Iterable[int] | None = None
) -> np.ndarray:
    """Colour indices in ``0..n_colours-1`` for ``n`` nodes, different on
    every edge whenever the greedy rule finds a free colour.

    Nodes are coloured in ``order`` (default 0..n-1). Each takes, among the
    colours no coloured neighbour has, the one used least so far (then the
    smallest index), so that colours vary across the map rather than all
    isolated nodes getting the first one. When no colour is free, it takes
    the one fewest coloured neighbours have (then the smallest index), so a
    too-small palette degrades gracefully instead of failing.
    """
    adj: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        if a != b:
            adj[a].append(b)
            adj[b].append(a)
    # plain lists: a few neighbours per node, where numpy's calls cost more
    # than the counting (20 ms for 500 spans, now a few)
    colour = [-1] * n
    uses = [0] * n_colours
    palette = range(n_colours)
    for v in range(n) if order is None else np.asarray(order).tolist():
        taken = [0] * n_colours
        for u in adj[v]:
            if colour[u] >= 0:
                taken[colour[u]] += 1
        free = [c for c in palette if taken[c] == 0]
        # min() keeps the first of equals: the smallest index on a tie
        c = min(free, key=uses.__getitem__) if free else min(palette, key=taken.__getitem__)
        colour[v] = c
        uses[c] += 1
    return np.asarray(colour, dtype=np.int64)


def span_colours(model: SpanModel, radius: int | None = None, n_colours: int = len(PALETTE)) -> np.ndarray:
    """A colour index per span id such that spans close together differ: the
    one colouring of the spans PNG, the labels picture, explore's panels and
    the HTML map (:func:`span_hex` gives the colours themselves).

    It depends on the spans alone (their regions and sizes), never on the
    picture: the same model gives every span the same colour everywhere.
    Two spans are neighbours when their regions (core and border cells, what
    the pictures draw) come within ``radius`` cells of ``model.grid``
    (:func:`span_neighbours`; default about :data:`NEIGHBOUR_ALPHAS` times eps).
    Larger spans are coloured first, so the few big ones take the first
    colours of :data:`PALETTE`; ties go to the smaller id.
    """
    n = model.n_spans
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    grid = model.grid
    if radius is None:
        radius = max(1, math.ceil(NEIGHBOUR_ALPHAS * grid.eps / grid.width - 1e-9))
    keys, labels = model.regions()
    edges = span_neighbours(grid.decode(keys), labels, radius)
    sizes = span_stats(model).n_cells
    order = np.lexsort((np.arange(n), -sizes))
    return greedy_colouring(n, edges, n_colours, order)


def span_hex(model: SpanModel) -> list[str]:
    """The colour of every span id as ``#rrggbb`` (:func:`span_colours` in
    :data:`PALETTE`): what every picture and the map paint span ``s`` with."""
    return [PALETTE[int(c) % len(PALETTE)] for c in span_colours(model)]


# --------------------------------------------------------------------------- #
# heat layer


def histogram_window(
    hist: NoisyHistogram, lo: ArrayLike, hi: ArrayLike, max_pixels: int = MAX_HEAT_PIXELS
) -> tuple[np.ndarray, int, np.ndarray]:
    """Noisy counts of the cells ``lo <= c < hi`` (integer cell coordinates,
    clipped to the grid) as a 2-D array indexed ``[i, j]``, summed over
    ``f x f`` blocks so that it has at most about ``max_pixels`` entries.

    Returns ``(image, f, lo)`` where ``lo`` is the (clipped) first cell; the
    image covers cells ``lo .. lo + f * image.shape``.
    """
    shape = np.asarray(hist.grid.shape, dtype=np.int64)
    lo = np.clip(np.asarray(lo, dtype=np.int64), 0, shape)
    hi = np.clip(np.asarray(hi, dtype=np.int64), lo, shape)
    size = np.maximum(hi - lo, 1)
    f = max(1, math.ceil(math.sqrt(float(size[0]) * float(size[1]) / max_pixels)))
    out_shape = tuple(int(s) for s in -(-size // f))
    img = np.zeros(out_shape, dtype=np.float64)
    if hist.kind == "dense":
        window = hist.values[lo[0] : hi[0], lo[1] : hi[1]]
        if window.size and window.dtype.kind in "iu":
            # integer counts: block sums without a padded float copy of the
            # window (the same sums, exact in float64 either way)
            if f > 1:
                window = _block_sums(_block_sums(window, f, 0), f, 1)
            return window.astype(np.float64), f, lo
        v = np.asarray(window, dtype=np.float64)
        pad = [(0, out_shape[0] * f - v.shape[0]), (0, out_shape[1] * f - v.shape[1])]
        if v.size:
            v = np.pad(v, pad)
            img = v.reshape(out_shape[0], f, out_shape[1], f).sum(axis=(1, 3))
        return img, f, lo
    keys, vals = hist.sparse()
    if len(keys):
        c = hist.grid.decode(keys)
        sel = np.all((c >= lo) & (c < hi), axis=1)
        b = (c[sel] - lo) // f
        np.add.at(img, (b[:, 0], b[:, 1]), np.asarray(vals, dtype=np.float64)[sel])
    return img, f, lo


def _block_sums(a: np.ndarray, f: int, axis: int) -> np.ndarray:
    """Sums of ``a`` over runs of ``f`` along ``axis`` (the last run may be
    shorter): ``np.add.reduceat`` at every ``f``-th index, as exact for
    integers, but the whole runs are summed on a reshaped view, which runs
    along memory several times faster than reduceat on a window of a larger
    array."""
    n = a.shape[axis]
    whole = n // f * f
    a = np.moveaxis(a, axis, 0)
    head = a[:whole]
    out = head.reshape(whole // f, f, *head.shape[1:]).sum(axis=1)
    if whole < n:
        out = np.concatenate([out, a[whole:].sum(axis=0, keepdims=True)])
    return np.moveaxis(out, 0, axis)


def noise_floor(hist: NoisyHistogram, f: int = 1, margin: float = 0.0) -> float:
    """Counts below this are drawn as empty: three standard deviations of the
    noise of a block of ``f x f`` cells (one cell's noise has standard
    deviation ``sigma``, e.g. ``sqrt(2)/epsilon`` for Laplace noise; a block
    sum of ``f**2`` cells ``f sigma``), or the core test's noise ``margin``
    (the model's noise_margin) when that is larger: a count the release cannot tell
    from noise at the spans' own standard is not drawn as something counted.
    0 without noise."""
    sigma = math.sqrt(noise_variance(hist.noise, hist.scale))
    return max(3.0 * f * sigma, float(margin))


def heat_scale(img: np.ndarray, floor: float = 0.0) -> float:
    """The count at which the heat layer saturates: the 99th percentile of
    the counts above ``floor``, so that a few very dense cells do not wash out
    the rest."""
    above = img[img > floor]
    if above.size == 0:
        return floor + 1.0
    return max(float(np.percentile(above, 99)), floor + 1.0)


def heat_rgba(img: np.ndarray, vmax: float, floor: float = 0.0) -> np.ndarray:
    """RGBA bytes (uint8, ``img.shape + (4,)``) of noisy counts: transparent
    at ``floor`` or below, dark grey and mostly opaque at ``vmax`` and above,
    on a log scale of the count above the floor (counts span orders of
    magnitude, and most empty cells carry only noise)."""
    excess = np.clip(np.asarray(img, dtype=np.float64) - floor, 0.0, None)
    t = np.clip(np.log1p(excess) / math.log1p(max(vmax - floor, 1e-9)), 0.0, 1.0)
    out = np.empty(img.shape + (4,), dtype=np.uint8)
    grey = np.round(185 - 135 * t)
    out[..., 0] = out[..., 1] = out[..., 2] = grey
    out[..., 3] = np.round(25 * (t > 0) + 155 * t)
    return out


# --------------------------------------------------------------------------- #
# views and scale bars


def public_box(model: SpanModel) -> tuple[np.ndarray, np.ndarray]:
    """The public box ``(lower, upper)`` of the model, in model coordinates
    (km for geographic models): the bounds the release was made for. Views
    and axes stay inside it (the last row of cells may reach a little past
    ``upper``; nothing was counted there)."""
    grid = model.grid
    return np.asarray(grid.lower, dtype=np.float64).copy(), np.asarray(grid.upper, dtype=np.float64).copy()


def span_extent(model: SpanModel, stats: SpanStats, margin: float = 0.08) -> tuple[np.ndarray, np.ndarray]:
    """A view around all spans (model coordinates): their bounding box,
    widened by ``margin`` of its larger side and by at least two histogram
    cells, clipped to the public box; the whole box when there is no span."""
    box_lo, box_hi = public_box(model)
    if stats.n_spans == 0:
        return box_lo, box_hi
    lo, hi = stats.lower.min(axis=0), stats.upper.max(axis=0)
    pad = max(margin * float(np.max(hi - lo)), 2 * _histogram_width(model))
    return np.maximum(lo - pad, box_lo), np.minimum(hi + pad, box_hi)


def _histogram_width(model: SpanModel) -> float:
    """Width of the released histogram's cells (the span grid's when the
    model was saved without its histogram)."""
    hist = model.histogram
    return float(model.grid.width if hist is None else hist.grid.width)


def fit_aspect(
    lo: ArrayLike, hi: ArrayLike, ratio: float, y_scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Widen the box ``[lo, hi]`` about its centre so that, drawn with one y
    unit ``y_scale`` times as long as one x unit, it is ``ratio`` times as wide
    as it is high."""
    lo, hi = np.asarray(lo, dtype=np.float64).copy(), np.asarray(hi, dtype=np.float64).copy()
    w, h = hi[0] - lo[0], (hi[1] - lo[1]) * y_scale
    if w <= 0 or h <= 0:
        return lo, hi
    if w / h < ratio:
        grow = (ratio * h - w) / 2
        lo[0], hi[0] = lo[0] - grow, hi[0] + grow
    else:
        grow = (w / ratio - h) / 2 / y_scale
        lo[1], hi[1] = lo[1] - grow, hi[1] + grow
    return lo, hi


def keep_in_box(
    lo: ArrayLike, hi: ArrayLike, box_lo: ArrayLike, box_hi: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """Move the view ``[lo, hi]`` into the box along each axis where it fits,
    and clip it to the box where it does not."""
    lo, hi = np.asarray(lo, dtype=np.float64).copy(), np.asarray(hi, dtype=np.float64).copy()
    box_lo, box_hi = np.asarray(box_lo, dtype=np.float64), np.asarray(box_hi, dtype=np.float64)
    for i in range(lo.size):
        if hi[i] - lo[i] >= box_hi[i] - box_lo[i]:
            lo[i], hi[i] = box_lo[i], box_hi[i]
        elif lo[i] < box_lo[i]:
            lo[i], hi[i] = box_lo[i], hi[i] + box_lo[i] - lo[i]
        elif hi[i] > box_hi[i]:
            lo[i], hi[i] = lo[i] - (hi[i] - box_hi[i]), box_hi[i]
    return lo, hi


def nice_length(target: float) -> float:
    """The largest of 1, 2, 5 times a power of ten that is <= ``target`` (> 0)."""
    if not target > 0:
        raise ValueError("a scale bar needs a positive length")
    p = 10.0 ** math.floor(math.log10(target))
    for m in (5, 2, 1):
        if m * p <= target * (1 + 1e-9):
            return m * p
    return p


__all__ = [
    "PALETTE",
    "MAX_HEAT_PIXELS",
    "span_neighbours",
    "greedy_colouring",
    "span_colours",
    "span_hex",
    "NEIGHBOUR_ALPHAS",
    "histogram_window",
    "noise_floor",
    "heat_scale",
    "heat_rgba",
    "public_box",
    "span_extent",
    "fit_aspect",
    "keep_in_box",
    "nice_length",
]
