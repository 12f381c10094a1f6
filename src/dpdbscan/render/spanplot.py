"""The parts of the spans picture (:func:`dpdbscan.render.plotting.plot_spans`):
the view, the heat layer, colours, span ids, rings for small spans, and the
scale bar. Needs matplotlib, imported where it is used.

Everything here draws the release only (spans and noisy histogram).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from ..geometry.projection import format_km
from ..model.stats import SpanStats, span_stats
from .mapstyle import (
    MAX_HEAT_PIXELS,
    fit_aspect,
    heat_rgba,
    heat_scale,
    histogram_window,
    keep_in_box,
    nice_length,
    noise_floor,
    public_box,
    span_colours,
    span_extent,
    span_hex,
    span_neighbours,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

    from ..cells.histogram import NoisyHistogram
    from ..model.record import SpanModel
    from .context import Context

#: Model coordinates -> display coordinates, on (m, 2) arrays (e.g. km back to lon/lat).
Transform: TypeAlias = Callable[[np.ndarray], np.ndarray]
#: matplotlib's aspect: "equal", "auto" or the y/x scale ratio.
Aspect: TypeAlias = Literal["equal", "auto"] | float
#: The view of a spans picture: around the spans, the whole box, or (xmin, ymin, xmax, ymax).
Extent: TypeAlias = Literal["spans", "box"] | Sequence[float] | np.ndarray

#: A span drawn smaller than this many pixels, with no other span within
#: about this distance, gets a ring so that it can be found.
SMALL_SPAN_PX = 6.0


def isolated_small_spans(
    model: SpanModel, stats: SpanStats, in_view: np.ndarray, px_per_unit: float
) -> np.ndarray:
    """Spans in view that are drawn tiny and far from every other span. Tiny
    spans in a crowd are left without a ring: their outlines show, and rings
    there would only add clutter."""
    small = in_view & (np.max(stats.upper - stats.lower, axis=1) * px_per_unit < SMALL_SPAN_PX)
    if not small.any():
        return small
    cells_per_px = 1.0 / (px_per_unit * model.grid.width)
    radius = max(1, int(round(2 * SMALL_SPAN_PX * cells_per_px)))
    crowded = np.zeros(model.n_spans, dtype=bool)
    if not model.n_spans:
        return crowded  # no span: nothing to decode (an empty release's picture)
    keys, labels = model.regions()
    for a, b in span_neighbours(model.grid.decode(keys), labels, radius):
        crowded[a] = crowded[b] = True
    return small & ~crowded


def crowded_spans(model: SpanModel, px_per_unit: float, px: float) -> np.ndarray:
    """Spans with another span drawn within about ``px`` pixels (up to twice
    that: :func:`dpdbscan.render.mapstyle.span_neighbours`), by span id."""
    crowded = np.zeros(model.n_spans, dtype=bool)
    if not model.n_spans:
        return crowded  # no span: nothing to decode (an empty release's picture)
    keys, labels = model.regions()
    radius = max(1, int(round(px / (px_per_unit * model.grid.width))))
    for a, b in span_neighbours(model.grid.decode(keys), labels, radius):
        crowded[a] = crowded[b] = True
    return crowded


def y_scale(T: Transform, aspect: Aspect) -> float:
    """Length on screen of one model y unit relative to one model x unit."""
    o, ex, ey = T(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    a, c = ex[0] - o[0], ey[1] - o[1]
    return (1.0 if aspect in ("equal", "auto") else float(aspect)) * c / a


def axes_pixels(ax: Axes) -> tuple[float, float]:
    """Width and height of the axes in pixels (before any aspect adjustment)."""
    pos = ax.get_position()  # in the fractions of the (sub)figure the axes are in
    box = ax.figure.bbox  # that (sub)figure, in pixels: size in inches times dpi for a figure
    return pos.width * box.width, pos.height * box.height


def view(
    model: SpanModel, stats: SpanStats, ax: Axes, extent: Extent, y_ratio: float
) -> tuple[np.ndarray, np.ndarray]:
    """The box to show, in model coordinates: ``(lower, upper)``, inside the
    public box unless ``extent`` gives another."""
    if isinstance(extent, str):
        box_lo, box_hi = public_box(model)
        if extent == "box":
            return box_lo, box_hi
        if extent != "spans":
            raise ValueError(f"extent must be 'spans', 'box' or (xmin, ymin, xmax, ymax), got {extent!r}")
        lo, hi = span_extent(model, stats)
        w, h = axes_pixels(ax)
        return keep_in_box(*fit_aspect(lo, hi, w / h, y_ratio), box_lo, box_hi)
    e = check_extent(extent)
    return e[:2], e[2:]


def default_size(
    model: SpanModel, width: int, min_height: int = 500, max_height: int = 1200
) -> tuple[int, int]:
    """A picture ``width`` pixels wide whose height follows the shape of the
    spans' box (within the limits), so that a wide or tall set of spans does
    not sit in a square of white space. Geographic and plain models alike
    are drawn with equal x and y scales, so the box's own shape is the one."""
    lo, hi = span_extent(model, span_stats(model))
    ratio = float((hi[1] - lo[1]) / max(hi[0] - lo[0], 1e-300))
    # about 110 pixels of the height go to the title and the x axis
    return width, int(round(min(max(0.8 * width * ratio + 110, min_height), max_height)))


def check_extent(extent: ArrayLike) -> np.ndarray:
    """``(xmin, ymin, xmax, ymax)`` as a float array, refusing empty boxes."""
    e = np.asarray(extent, dtype=np.float64).ravel()
    if e.size != 4 or not np.all(np.isfinite(e)):
        raise ValueError("extent must be 4 finite numbers: xmin ymin xmax ymax")
    if not (e[0] < e[2] and e[1] < e[3]):
        raise ValueError("extent must be xmin ymin xmax ymax with xmin < xmax and ymin < ymax")
    return e


def draw_heat(
    ax: Axes, hist: NoisyHistogram, lo: np.ndarray, hi: np.ndarray, T: Transform, margin: float = 0.0
) -> None:
    """The noisy histogram of the cells in ``[lo, hi]`` as a grey image under
    the spans; counts below :func:`~.mapstyle.noise_floor` (at least the
    core test's ``margin``) are left out."""
    hg = hist.grid
    c_lo = np.floor((lo - hg.lower) / hg.width).astype(np.int64)
    c_hi = np.ceil((hi - hg.lower) / hg.width).astype(np.int64)
    w, h = axes_pixels(ax)
    # About one block per pixel: block sums keep thin roads that a finer
    # image would lose when resampled to the screen.
    img, f, first = histogram_window(hist, c_lo, c_hi, max_pixels=int(min(MAX_HEAT_PIXELS, w * h)))
    floor = noise_floor(hist, f, margin)
    if img.size == 0 or not np.any(img > floor):
        return None
    vmax = heat_scale(img, floor)
    box = hg.lower + np.array([first, first + np.asarray(img.shape) * f]) * hg.width
    (x0, y0), (x1, y1) = T(box)
    per = "cell" if f == 1 else f"{f}x{f} cells"
    ax.imshow(
        np.transpose(heat_rgba(img, vmax, floor), (1, 0, 2)),
        origin="lower",
        extent=(x0, x1, y0, y1),
        interpolation="nearest",
        zorder=0,
        gid="heat",
        label=(
            f"noisy histogram (grey, log scale, darkest at >= {vmax:,.0f} per {per}; "
            f"below {floor:,.4g}, noise: not drawn)"
        ),
    )


#: The colour of context lines (streets, coastlines): neither grey (the heat
#: layer, noise) nor one of the span colours.
CONTEXT_COLOUR = "#1b3a57"


def draw_context(ax: Axes, context: Context, T: Transform) -> None:
    """The context layer's lines, over the heat layer and under the spans."""
    from matplotlib.collections import LineCollection

    lines = [T(line) for line in context.lines()]
    ax.add_collection(
        LineCollection(lines, colors=CONTEXT_COLOUR, linewidths=0.7, alpha=0.6, zorder=1, gid="context"),
        autolim=False,
    )


def span_palette(model: SpanModel, cmap: str | None = None) -> list[tuple[float, float, float]]:
    """An RGB colour per span id: :func:`dpdbscan.render.mapstyle.span_hex`,
    the colours of every picture and the map (neighbours apart, never grey).
    ``cmap`` takes the colours from a matplotlib colormap instead, indexed
    the same way."""
    from matplotlib.colors import to_rgb

    if cmap is None:
        return [to_rgb(c) for c in span_hex(model)]
    from matplotlib import colormaps

    cm = colormaps[cmap]
    return [_rgb(cm(int(i) % cm.N)) for i in span_colours(model)]


def _rgb(rgba: tuple[float, float, float, float]) -> tuple[float, float, float]:
    r, g, b, _ = rgba
    return r, g, b


def darker(rgb: tuple[float, float, float], k: float = 0.7) -> tuple[float, float, float]:
    r, g, b = rgb
    return float(r) * k, float(g) * k, float(b) * k


def drawn_small(stats: SpanStats, s: int, px_per_unit: float, y_ratio: float = 1.0) -> bool:
    """Whether span ``s`` is drawn narrower or lower than
    :data:`LABEL_INSIDE_PX`: an id written on it would hide most of it."""
    size = (stats.upper[s] - stats.lower[s]) * px_per_unit * np.array([1.0, abs(y_ratio)])
    return bool(np.min(size) < LABEL_INSIDE_PX)


def label_at(
    ax: Axes,
    stats: SpanStats,
    s: int,
    T: Transform,
    px_per_unit: float,
    y_ratio: float = 1.0,
    crowded: np.ndarray | None = None,
) -> tuple[np.ndarray, dict]:
    """Where span ``s``'s id goes: at a point inside it (centred), or, for a
    span drawn smaller than its id (:func:`drawn_small`) with no other span
    near it (``crowded[s]`` false; :func:`crowded_spans`), just beside its
    upper right corner, so that the id and its halo leave the span in sight.
    In a crowd an id beside a span could name any of its neighbours, so it
    stays on the span. The point in model coordinates and the text's
    placement."""
    from matplotlib.transforms import ScaledTranslation

    near = crowded is not None and bool(crowded[s])
    if near or not drawn_small(stats, s, px_per_unit, y_ratio):
        return stats.anchor[s], {"ha": "center", "va": "center"}
    shift = LABEL_BESIDE_PT / 72.0  # points -> inches
    beside = ax.transData + ScaledTranslation(shift, shift, ax.figure.dpi_scale_trans)
    return stats.upper[s], {"ha": "left", "va": "bottom", "transform": beside}


def label_spans(
    ax: Axes,
    stats: SpanStats,
    candidates: np.ndarray,
    n_labels: int,
    T: Transform,
    px_per_unit: float,
    y_ratio: float = 1.0,
    px_drawn: float | None = None,
    crowded: np.ndarray | None = None,
) -> None:
    """Ids of the largest ``candidates`` spans, at a point inside each (or
    beside a span drawn smaller than its id: :func:`label_at`, at
    ``px_drawn`` pixels per model unit, the scale the axes draw at once
    their aspect is set; default ``px_per_unit``; ``crowded``: spans with
    neighbours, whose ids stay on them), skipping any label that would sit
    on one already drawn."""
    import matplotlib.patheffects as pe

    cand = np.flatnonzero(candidates)
    cand = cand[np.lexsort((cand, -stats.n_cells[cand]))]
    placed: list[np.ndarray] = []
    for s in cand:
        if len(placed) >= n_labels:
            break
        scale = px_per_unit if px_drawn is None else px_drawn
        p, where = label_at(ax, stats, int(s), T, scale, y_ratio, crowded)
        if any(np.max(np.abs(p - q)) * px_per_unit < LABEL_GAP_PX for q in placed):
            continue
        placed.append(p)
        x, y = T(p[None, :])[0]
        ax.text(
            x,
            y,
            str(int(s)),
            fontsize=8,
            fontweight="bold",
            zorder=4,
            gid=f"span-label-{int(s)}",
            clip_on=True,
            path_effects=[pe.withStroke(linewidth=2.5, foreground="white")],
            **where,
        )


#: Smallest distance between two span labels, in pixels.
LABEL_GAP_PX = 18.0

#: A span drawn narrower or lower than this many pixels gets its id
#: beside it, not on it (an 8-point bold id of two digits with its white halo
#: is about 20 x 15 pixels at 120 dpi: on a place a few hundred metres wide
#: in a city's box it hid most or all of the span it named). Larger spans keep
#: their id on them, where a crowd of spans leaves no doubt which it names.
LABEL_INSIDE_PX = 24.0

#: How far from a small span's upper right corner its id is written, in points.
LABEL_BESIDE_PT = 1.5

#: A span with another within about this many pixels (up to twice that) is in a crowd: its id
#: stays on it (beside it, it could name a neighbour).
LABEL_CROWD_PX = 6.0


#: How far below the axes an outside scale bar hangs, in its font's sizes:
#: clear of the x tick labels (6-point labels, 3.5-point ticks and pad).
BELOW_TICKS = 2.4


def add_scale_bar(
    ax: Axes, km_per_x_unit: float, fraction: float = 0.2, *, outside: bool = False
) -> AnchoredSizeBar:
    """A scale bar in m or km in the lower right corner: a round length near
    ``fraction`` of the axes' width, for axes whose x unit is
    ``km_per_x_unit`` kilometres (at the reference latitude for lon/lat).
    ``outside``: under the axes' lower right corner, below its tick labels,
    so that it covers nothing drawn (small panels, where a bar inside would
    lie over the spans)."""
    from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

    x0, x1 = ax.get_xlim()
    km = nice_length(abs(x1 - x0) * km_per_x_unit * fraction)
    place: dict = {"loc": "lower right", "borderpad": 0.8}
    if outside:
        place = {"loc": "upper right", "borderpad": BELOW_TICKS}
        place.update(bbox_to_anchor=(1.0, 0.0), bbox_transform=ax.transAxes)
    bar = AnchoredSizeBar(
        ax.transData,
        km / km_per_x_unit,
        format_km(km),
        pad=0.4,
        **place,
        sep=3,
        frameon=True,
        size_vertical=0,
        fontproperties={"size": 8},
    )
    bar.patch.set_alpha(0.8)
    bar.set_gid("scale-bar")
    bar.scale_km = km
    ax.add_artist(bar)
    return bar


__all__ = [
    "check_extent",
    "default_size",
    "add_scale_bar",
    "view",
    "draw_heat",
    "draw_context",
    "CONTEXT_COLOUR",
    "span_palette",
    "darker",
    "isolated_small_spans",
    "label_spans",
    "label_at",
    "drawn_small",
    "crowded_spans",
    "LABEL_CROWD_PX",
    "LABEL_INSIDE_PX",
    "y_scale",
    "axes_pixels",
    "SMALL_SPAN_PX",
    "LABEL_GAP_PX",
]
