"""Figures in the style of the paper: noisy histogram, neighbour sums, spans,
and labels of given points. Needs matplotlib (``pip install 'dpdbscan[plot]'``).

The histogram, sums and spans pictures are post-processing of the release and
may be published with it. A picture that draws points (``points=`` in
:func:`plot_spans`, or :func:`plot_labels`) shows private data and is not: it
says so in the picture itself (:func:`mark_private`: its title and a
watermark, and the PNG's Description when written by :func:`save`).

:func:`plot_model` draws any of the four from a saved model, over lon/lat when
the model is geographic. ``transform`` maps (m, 2) grid coordinates to display coordinates, e.g. km
back to lon/lat with :meth:`dpdbscan.geometry.projection.Equirectangular.inverse`. Image plots
(histogram, sums) transform only the corners of the box, which is exact for
the axis-aligned affine maps used here. ``aspect`` is matplotlib's (use
``Equirectangular.aspect`` for lon/lat axes).
"""

from __future__ import annotations

import contextlib
import math
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from .._optional import require
from ..geometry.projection import format_km, projection_of
from ..model.describe import min_samples_brief, protection_brief
from ..model.stats import span_stats
from ..post.coretests.bound.corecells import neighbour_sums
from . import spanplot
from .context import Context, load_context
from .mapstyle import PALETTE
from .spanplot import Aspect, Extent, Transform, add_scale_bar, check_extent
from .treeplot import check_tree, draw_condensed_tree

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap, LinearSegmentedColormap
    from matplotlib.path import Path as MPath

    from ..cells.histogram import NoisyHistogram
    from ..model.record import SpanModel

#: The colour of noise (label -1) in the labels picture: no span colour is grey.
NOISE_GREY = "0.7"

#: Largest image drawn cell for cell; bigger grids are shown in blocks.
MAX_PIXELS = 4_000_000


#: What a picture of the private points says about itself (title, watermark, PNG metadata).
PRIVATE_PICTURE = "PRIVATE: shows the data points; NOT a DP release, do not publish"
_WATERMARK = "private-watermark"


def _set_title(ax: Axes, text: str) -> None:
    """Set a 9-pt title wrapped to the width the axes leave it (a long line
    would be cut at the figure's edge): DejaVu Sans at 9 pt averages under
    0.62 em per character, and a title may use the axes' width and a little
    of the margins."""
    fig = ax.figure
    box = ax.get_position()
    points = fig.bbox.width * 72.0 / fig.dpi * min(1.0, box.width + 0.15)
    chars = max(30, int(points / (TITLE_POINTS * 0.62)))
    lines = [
        w for line in text.split("\n") for w in (textwrap.wrap(line, chars, break_on_hyphens=False) or [""])
    ]
    ax.set_title("\n".join(lines), fontsize=TITLE_POINTS)


#: The size of a picture's title, in points.
TITLE_POINTS = 9


def literal(text: str) -> str:
    """``text`` drawn as it is: a ``$`` escaped, so that matplotlib never
    reads a unit's or a column's name (a declared header's, public) as
    mathematics, which drew ``$x$`` in italics and failed the picture on
    ``$\\foo{$`` (round 16)."""
    return str(text).replace("$", r"\$")


def mark_private(ax: Axes) -> Axes:
    """Mark a picture that draws private points as such, inside the picture:
    the title starts with :data:`PRIVATE_PICTURE` and a large translucent
    "PRIVATE" is drawn across the axes. Idempotent (call it again after
    changing the title)."""
    title = ax.get_title()
    if not title.startswith(PRIVATE_PICTURE):
        ax.set_title(PRIVATE_PICTURE + ("\n" + title if title else ""), fontsize=9)
    if not any(t.get_gid() == _WATERMARK for t in ax.texts):
        ax.text(
            0.5,
            0.5,
            "PRIVATE\nnot a DP release",
            transform=ax.transAxes,
            ha="center",
            va="center",
            rotation=30,
            fontsize=28,
            fontweight="bold",
            color="tab:red",
            alpha=0.3,
            zorder=10,
            gid=_WATERMARK,
        )
    return ax


def _shows_private_points(fig) -> bool:
    return any(t.get_gid() == _WATERMARK for a in fig.axes for t in a.texts)


def _plt():
    matplotlib = require("matplotlib", "plotting")
    matplotlib.use("Agg", force=False)
    return require("matplotlib.pyplot", "plotting")


def preload(alone: bool = False) -> None:
    """Import what drawing a PNG needs (matplotlib's figure, Agg and image
    modules, and Pillow's image plugins, which matplotlib's PNG writer
    initialises on first use), so that a later picture does not pay for it;
    the command line runs this on a thread.

    Not pyplot: importing it reads matplotlib's style library under
    ``warnings.catch_warnings(record=True)``, which is process-wide in this
    Python, so a warning the fit gave meanwhile on the main thread was
    swallowed and re-logged as "In .../petroff8.mplstyle: ...".

    ``alone``: nothing else runs in this process meanwhile (the forked copy
    that only draws, :mod:`dpdbscan.cli.forked`), so pyplot and the rest of
    what the spans picture uses are imported too: in that copy they took
    0.1-0.2 s of the picture's own time, after the release was made. There
    the artists' long docstrings are left out while the modules load
    (:func:`_short_artist_docs`)."""
    matplotlib = require("matplotlib", "plotting")
    matplotlib.use("Agg", force=False)
    with _short_artist_docs(matplotlib, alone), _no_3d_axes(alone and _3d_axes_optional(matplotlib)):
        import matplotlib.backends.backend_agg
        import matplotlib.figure
        import matplotlib.image  # noqa: F401 - imported for their cost, here
        from PIL import Image  # a dependency of matplotlib

        Image.preinit()
        if alone:
            _plt()
            import matplotlib.collections
            import matplotlib.patheffects
            import mpl_toolkits.axes_grid1.anchored_artists  # noqa: F401 - the scale bar's
    if alone:
        _warm_up()


@contextlib.contextmanager
def _short_artist_docs(matplotlib: Any, alone: bool) -> Iterator[None]:
    """While matplotlib's drawing modules load in a process that only draws
    (``alone``): every artist class it defines gets a ``set()`` whose
    docstring lists each of its properties with their own docstrings
    (``matplotlib.artist.kwdoc``, run for each class as it is defined, and
    for the docstrings that quote such lists), about 0.08 s of the 0.35 s
    of CPU the drawing copy of ``fit`` spends importing. Nothing reads a
    docstring there, so they are made empty meanwhile; the function is put
    back afterwards. Drawing does not use them: the same picture, byte for
    byte (tests/render/test_plotting.py). Does nothing when not ``alone``
    or when this matplotlib has no such function."""
    artist = getattr(matplotlib, "artist", None)
    kwdoc = getattr(artist, "kwdoc", None)
    if not alone or artist is None or not callable(kwdoc):
        yield
        return
    artist.kwdoc = _no_kwdoc
    try:
        yield
    finally:
        artist.kwdoc = kwdoc


#: The module of matplotlib's 3-D axes, which :func:`_no_3d_axes` keeps out.
AXES_3D = "mpl_toolkits.mplot3d"


def _3d_axes_optional(matplotlib: Any) -> bool:
    """Whether this matplotlib loads without its 3-D axes: from 3.9 on,
    ``matplotlib.projections`` goes on with a warning when their import
    fails; before (3.7 and 3.8, which pyproject admits) it fails with it."""
    return tuple(matplotlib.__version_info__[:2]) >= (3, 9)


@contextlib.contextmanager
def _no_3d_axes(alone: bool) -> Iterator[None]:
    """While matplotlib's figure modules load in a process that only draws
    (``alone``): ``matplotlib.projections`` imports the 3-D axes
    (:data:`AXES_3D`, 0.03-0.05 s of CPU of the drawing copy's imports)
    only to register the ``"3d"`` projection, and goes on without it when
    that import fails, with a warning. The pictures of ``fit`` and ``sweep``
    are 2-D, so the module is marked absent meanwhile (a ``None`` entry in
    ``sys.modules``, which makes its import fail) and the warning is not
    shown; the mark is taken away afterwards. The same picture, byte for
    byte (tests/render/test_plotting.py). Does nothing when not ``alone``
    or when the projections are loaded already."""
    import sys
    import warnings

    if not alone or "matplotlib.projections" in sys.modules or AXES_3D in sys.modules:
        yield
        return
    sys.modules[AXES_3D] = None  # type: ignore[assignment]
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Unable to import Axes3D")
            yield
    finally:
        if sys.modules.get(AXES_3D, 0) is None:
            del sys.modules[AXES_3D]


def _no_kwdoc(_artist: object) -> str:
    """The empty property list :func:`_short_artist_docs` puts in docstrings."""
    return ""


def _warm_up() -> None:
    """Draw a small picture of nothing to nowhere, with the kinds of
    artists the spans picture has (an image, a path collection, rings, a
    stroked bold label, a scale bar, titles, ticks, the tight layout, PNG
    encoding): the first picture a process draws loads fonts and glyphs
    and sets up Agg and the PNG writer, 0.03-0.04 s of the Cabs picture's
    0.26 s, which the drawing copy pays here while the release is made.
    Nothing of it reaches a later picture (matplotlib's caches only hold
    what it would compute again)."""
    import io

    import matplotlib.patheffects as pe
    from matplotlib.collections import PathCollection
    from matplotlib.path import Path as MPath

    fig, ax = _plt().subplots(figsize=(1.6, 1.6), dpi=60)
    try:
        ax.imshow(np.zeros((4, 4, 4)), origin="lower", extent=(0, 1, 0, 1), interpolation="nearest")
        square = MPath([(0.2, 0.2), (0.6, 0.2), (0.6, 0.6), (0.2, 0.2)], closed=True)
        ax.add_collection(PathCollection([square], facecolors=[(0.5, 0.2, 0.1, 0.45)], linewidths=0.9))
        ax.scatter([0.5], [0.5], s=40, facecolors="none", edgecolors=["k"], lw=1.0)
        stroke = [pe.withStroke(linewidth=2.5, foreground="white")]
        ax.text(0.3, 0.3, "0", fontsize=8, fontweight="bold", path_effects=stroke)
        add_scale_bar(ax, 1.0)
        _set_title(ax, "0123456789")
        ax.set_xlabel("longitude (degrees)")
        ax.set_ylabel("latitude (degrees)")
        fig.tight_layout()
        fig.set_layout_engine(None)
        fig.savefig(io.BytesIO(), format="png", dpi=60)
    finally:
        _plt().close(fig)


def _check_2d(grid):
    if grid.d != 2:
        raise ValueError(f"plots are drawn for 2-D grids, this one is {grid.d}-D")


def _corners(grid, factor: int = 1, shape=None):
    shape = np.asarray(grid.shape if shape is None else shape)
    lo = grid.lower
    hi = grid.lower + shape * factor * grid.width
    return np.array([lo, hi], dtype=np.float64)


def _extent(grid, transform=None, factor: int = 1, shape=None) -> tuple[float, float, float, float]:
    box = _corners(grid, factor, shape)
    if transform is not None:
        box = np.asarray(transform(box), dtype=np.float64)
    return (box[0, 0], box[1, 0], box[0, 1], box[1, 1])


def _block_factor(grid, max_pixels: int) -> int:
    """Cells per image pixel along each axis, so the image stays drawable."""
    return max(1, math.ceil(math.sqrt(grid.n_cells / max_pixels)))


def _cell_image(grid, keys, values, fill=np.nan, factor: int = 1, reduce: str = "sum"):
    """Image of per-cell values, summed (or averaged) over factor x factor blocks."""
    shape = tuple(math.ceil(s / factor) for s in grid.shape)
    img = np.full(shape, fill, dtype=np.float64)
    if keys is None or not len(keys):
        return img
    c = grid.decode(keys) // factor
    flat = c[:, 0] * shape[1] + c[:, 1]
    total = np.bincount(flat, weights=np.asarray(values, dtype=np.float64), minlength=img.size)
    seen = np.bincount(flat, minlength=img.size)
    if reduce == "mean":
        total = np.divide(total, seen, out=np.zeros_like(total), where=seen > 0)
    img = img.ravel()
    img[seen > 0] = total[seen > 0]
    return img.reshape(shape)


def paper_cmap() -> LinearSegmentedColormap:
    """Green for negative, red for positive counts; opacity grows with |value|
    (the paper's "cell transparency represents frequency")."""
    from matplotlib.colors import LinearSegmentedColormap

    green, red = (0.0, 0.55, 0.0), (0.85, 0.0, 0.0)
    return LinearSegmentedColormap.from_list(
        "dpdbscan_counts",
        [(0.0, (*green, 1.0)), (0.5, (*green, 0.0)), (0.5, (*red, 0.0)), (1.0, (*red, 1.0))],
        N=255,
    )  # odd, so that a count of exactly 0 falls on the transparent middle


def _image_axes(grid, ax, max_pixels: int):
    """The axes to draw the cells of the 2-D ``grid`` on (new ones for None)
    and the cells per image pixel along each axis."""
    plt = _plt()
    _check_2d(grid)
    return ax or plt.subplots(figsize=(6, 6))[1], _block_factor(grid, max_pixels)


def _show_cells(ax, img, grid, factor: int, title, transform, aspect, **style):
    """Draw the cell image ``img`` (blocks of ``factor`` x ``factor`` cells,
    :func:`_cell_image`) with a colour bar; the title says the blocking."""
    im = ax.imshow(
        img.T,
        origin="lower",
        extent=_extent(grid, transform, factor, img.shape),
        interpolation="nearest",
        **style,
    )
    if factor > 1:
        title = f"{title} ({factor}x{factor} cells per pixel)"
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    ax.set_aspect(aspect)
    ax.set_title(title)
    return ax


def plot_histogram(
    hist: NoisyHistogram,
    ax: Axes | None = None,
    title: str = "noisy histogram",
    cmap: str | Colormap | None = None,
    *,
    transform: Transform | None = None,
    aspect: Aspect = "equal",
    max_pixels: int = MAX_PIXELS,
) -> Axes:
    """The released noisy counts per cell.

    With ``cmap=None`` positive counts are red and negative ones green, more
    opaque the larger they are, as in the paper; the scale saturates at the
    99th percentile of |count| so that a few dense cells do not wash out the
    rest. Grids with more than ``max_pixels`` cells are drawn in blocks
    (sums of counts).
    """
    from matplotlib.colors import Normalize

    grid = hist.grid
    ax, f = _image_axes(grid, ax, max_pixels)
    if hist.kind == "dense" and f == 1:
        img = hist.values.astype(np.float64)
    else:
        keys, vals = hist.sparse()
        img = _cell_image(grid, keys, vals, fill=0.0, factor=f)
    nz = np.abs(img[img != 0])
    vmax = float(np.percentile(nz, 99)) if nz.size else 1.0
    vmax = vmax if vmax > 0 else 1.0
    style = {"cmap": cmap or paper_cmap(), "norm": Normalize(-vmax, vmax)}
    return _show_cells(ax, img, grid, f, title, transform, aspect, **style)


def plot_neighbour_sums(
    hist: NoisyHistogram,
    ax: Axes | None = None,
    title: str = "noisy neighbour sums",
    cmap: str | Colormap = "magma",
    *,
    transform: Transform | None = None,
    aspect: Aspect = "equal",
    max_pixels: int = MAX_PIXELS,
) -> Axes:
    """The sum of the noisy counts over NB(X), per cell (what the core test
    compares with the threshold). Cells with no released neighbour are blank;
    big grids are drawn in blocks (mean of the sums)."""
    grid = hist.grid
    ax, f = _image_axes(grid, ax, max_pixels)
    keys, sums = neighbour_sums(hist)
    img = _cell_image(grid, keys, sums, fill=np.nan, factor=f, reduce="mean")
    return _show_cells(ax, np.ma.masked_invalid(img), grid, f, title, transform, aspect, cmap=cmap)


def plot_spans(
    model: SpanModel,
    ax: Axes | None = None,
    title: str | None = None,
    points: np.ndarray | Sequence[Sequence[float]] | None = None,
    transform: Transform | None = None,
    cmap: str | None = None,
    *,
    aspect: Aspect = "equal",
    max_points: int | None = 200_000,
    extent: Extent = "spans",
    heat: bool = True,
    n_labels: int = 10,
    context: Context | None = None,
) -> Axes:
    """Spans as outlined cell unions over the noisy histogram, cropped to the spans.

    Parameters
    ----------
    model : SpanModel
    transform : callable, optional
        Model coordinates -> display coordinates (axis-aligned affine).
    cmap : str, optional
        A matplotlib colormap to take the span colours from; by default the
        qualitative :data:`dpdbscan.render.mapstyle.PALETTE`. Either way spans close
        together get different colours (:func:`dpdbscan.render.mapstyle.span_colours`).
    extent : "spans", "box" or (xmin, ymin, xmax, ymax)
        The view, in model coordinates: around all spans (widened to the
        axes' shape), the whole grid box, or the given box.
    heat : bool
        Draw the released noisy histogram under the spans (grey, log scale
        above the noise floor, saturating at :func:`dpdbscan.render.mapstyle.heat_scale`
        of the cells in view). It is part of the release, so this costs nothing.
    n_labels : int
        Label the ``n_labels`` largest spans in view with their ids (labels
        that would overlap one already drawn are left out).
    context : Context, optional
        Lines drawn over the heat layer and under the spans (streets, a
        coastline: :func:`dpdbscan.render.context.load_context`). Public
        input: the picture stays a release picture.
    points : array of shape (n, 2), optional
        In the model's grid coordinates (they are transformed like the
        spans). They are private: such a picture is not part of the release.
        At most ``max_points`` of them are drawn (a fixed-seed subsample).

    Notes
    -----
    Every span gets an outline of constant width, and spans drawn smaller
    than a few pixels, far from other spans, also a ring, so that small spans
    next to a dominant one stay visible. The parts are in
    :mod:`dpdbscan.render.spanplot`; docs/maps.md describes the picture.
    """
    plt = _plt()

    grid = model.grid
    _check_2d(grid)
    ax = ax or plt.subplots(figsize=(6, 6))[1]
    T = (lambda xy: np.asarray(xy, dtype=np.float64)) if transform is None else transform
    stats = span_stats(model)
    y_scale = spanplot.y_scale(T, aspect)
    lo, hi = spanplot.view(model, stats, ax, extent, y_scale)
    px_per_unit = spanplot.axes_pixels(ax)[0] / max(hi[0] - lo[0], 1e-300)

    if points is not None and len(points):
        P = T(_subsample(np.asarray(points, dtype=np.float64), max_points))
        ax.scatter(P[:, 0], P[:, 1], s=1, c="0.75", lw=0, rasterized=True, zorder=1)
    if heat and model.histogram is not None:
        spanplot.draw_heat(ax, model.histogram, lo, hi, T, model.spans.noise_margin)
    if context is not None:
        spanplot.draw_context(ax, context, T)

    colours = spanplot.span_palette(model, cmap)
    in_view = np.all((stats.upper > lo) & (stats.lower < hi), axis=1)
    small = spanplot.isolated_small_spans(model, stats, in_view, px_per_unit)
    if small.any():
        A = T(stats.anchor[small])
        ax.scatter(
            A[:, 0],
            A[:, 1],
            s=40,
            facecolors="none",
            edgecolors=[spanplot.darker(colours[s]) for s in np.flatnonzero(small)],
            lw=1.0,
            zorder=3,
            gid="small-spans",
        )
    inside = np.all((stats.anchor >= lo) & (stats.anchor <= hi), axis=1)
    # the scale the spans are drawn at once the aspect is set: a given extent of another shape than
    # the axes is drawn smaller than their width says
    w, h = spanplot.axes_pixels(ax)
    px_drawn = min(px_per_unit, h / max(float(hi[1] - lo[1]) * abs(y_scale), 1e-300))
    crowded = spanplot.crowded_spans(model, px_drawn, spanplot.LABEL_CROWD_PX)
    spanplot.label_spans(ax, stats, in_view & inside, n_labels, T, px_per_unit, y_scale, px_drawn, crowded)

    (x0, y0), (x1, y1) = T(np.array([lo, hi]))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect(aspect)
    _set_title(ax, title or f"{model.n_spans} DP span(s)\n{literal(protection_brief(model))}")
    if points is not None and len(points):
        mark_private(ax)
    shown = np.flatnonzero(in_view)
    if shown.size:
        # last: the outlines are the one part the command's drawing copy
        # may be sent after the release (cli/sentrelease.py), and each
        # artist has a z-order of its own, so the order they are added in
        # does not change the picture. One path per span (its polygons,
        # holes and all) in one collection: a single artist draws fast
        # however many spans there are
        from matplotlib.collections import PathCollection

        face = [(*colours[s], 0.45) for s in shown]
        edge = [spanplot.darker(colours[s]) for s in shown]
        ax.add_collection(
            PathCollection(
                span_paths(model, shown, T),
                facecolors=face,
                edgecolors=edge,
                linewidths=0.9,
                zorder=2,
                gid="spans",
            ),
            autolim=False,
        )
    return ax


def span_paths(model: SpanModel, spans: Iterable[int], transform: Transform | None = None) -> list[MPath]:
    """One matplotlib ``Path`` per span in ``spans``: the outlines of its
    region (:meth:`~dpdbscan.model.record.SpanModel.outlines`), exteriors
    counter-clockwise and holes clockwise, so holes stay empty under
    matplotlib's fill rule; ``transform`` maps model to display coordinates."""
    from matplotlib.path import Path as MPath

    grid = model.grid
    out = model.outlines()
    xy = grid.lower + out.vertices.astype(np.float64) * grid.width
    if transform is not None and xy.shape[0]:
        xy = np.asarray(transform(xy), dtype=np.float64)
    codes = np.full(xy.shape[0], MPath.LINETO, dtype=MPath.code_type)
    codes[out.ring_offsets[:-1]] = MPath.MOVETO
    codes[out.ring_offsets[1:] - 1] = MPath.CLOSEPOLY
    first = out.ring_offsets[out.polygon_offsets[out.group_offsets]]  # vertex range per span
    return [MPath(xy[first[s] : first[s + 1]], codes[first[s] : first[s + 1]]) for s in spans]


def plot_labels(
    X: ArrayLike,
    labels: ArrayLike,
    ax: Axes | None = None,
    title: str = "labels",
    cmap: str | Colormap | None = None,
    *,
    aspect: Aspect = "equal",
    max_points: int | None = 200_000,
    colours: Sequence[Sequence[float]] | None = None,
) -> Axes:
    """Points coloured by label; -1 (noise) in grey, the only grey. The
    points are private, and the picture says so (:func:`mark_private`).

    ``colours`` gives the RGB colour of each span id (``colours[label]``);
    :func:`plot_model` passes the spans' own
    (:func:`dpdbscan.render.spanplot.span_palette`), so that a span has the
    colour of the spans picture and the map. Without it, label ``s`` takes
    ``PALETTE[s % 9]`` (:data:`dpdbscan.render.mapstyle.PALETTE`), or colour
    ``s % 20`` of ``cmap`` when one is given.

    At most ``max_points`` are drawn (a fixed-seed subsample keeps big files
    quick to draw and the picture reproducible).
    """
    plt = _plt()
    P = np.asarray(X, dtype=np.float64)
    lab = np.asarray(labels)
    if P.ndim != 2 or P.shape[1] < 2:
        raise ValueError(f"plot_labels needs points with 2 columns, got shape {P.shape}")
    if lab.shape != (P.shape[0],):
        raise ValueError(f"labels must have one entry per point ({P.shape[0]}), got shape {lab.shape}")
    idx = _subsample_index(P.shape[0], max_points)
    P, lab = P[idx], lab[idx].astype(np.int64)
    ax = ax or plt.subplots(figsize=(6, 6))[1]
    noise = lab < 0
    ax.scatter(P[noise, 0], P[noise, 1], s=2, c=NOISE_GREY, lw=0, rasterized=True, gid="noise")
    inside = lab[~noise]
    style: dict = {"vmin": 0, "vmax": 19, "cmap": cmap, "c": inside % 20}
    if colours is not None:
        table = np.asarray(colours, dtype=np.float64).reshape(-1, 3)
        if inside.size and inside.max() >= len(table):
            raise ValueError(f"colours has {len(table)} entries, but a label is {int(inside.max())}")
        style = {"c": table[inside]}
    elif cmap is None:
        from matplotlib.colors import to_rgb

        style = {"c": np.array([to_rgb(c) for c in PALETTE])[inside % len(PALETTE)]}
    ax.scatter(P[~noise, 0], P[~noise, 1], s=2, lw=0, rasterized=True, gid="labelled", **style)
    ax.set_aspect(aspect)
    ax.set_title(title)
    return mark_private(ax)


def _subsample_index(n: int, max_points: int | None) -> np.ndarray:
    if max_points is None or n <= max_points:
        return np.arange(n)
    # Display only: a fixed seed makes the same file give the same picture.
    return np.sort(np.random.default_rng(0).choice(n, size=max_points, replace=False))


def _subsample(P: np.ndarray, max_points: int | None) -> np.ndarray:
    return P[_subsample_index(P.shape[0], max_points)]


KINDS = ("histogram", "sums", "spans", "labels")
#: ``KINDS`` are pictures of the data space; the condensed tree is not.
ALL_KINDS = (*KINDS, "tree")


def plot_condensed_tree(model: SpanModel, ax: Axes | None = None, *, dpi: float = 120) -> Axes:
    """The condensed tree of a model whose spans were each taken at their
    own level (``selection="levels"``), in the style of the hdbscan
    package's condensed-tree plot (:mod:`dpdbscan.render.treeplot`). Reads
    the tree the model records: part of the release, any dimension."""
    check_tree(model)
    if ax is None:
        w, h = DEFAULT_SIZE
        ax = _plt().subplots(figsize=(w / dpi, h / dpi * 0.7), dpi=dpi)[1]
    ax = draw_condensed_tree(model, ax)
    # a picture of the release says whom it protects, as every other one does
    _set_title(ax, f"{ax.get_title()}\n{literal(protection_brief(model))}")
    return ax


#: Default picture size in pixels (width, height).
DEFAULT_SIZE = (900, 900)


def plot_model(
    model: SpanModel,
    kind: Literal["histogram", "sums", "spans", "labels", "tree"] = "spans",
    points: ArrayLike | None = None,
    ax: Axes | None = None,
    *,
    max_points: int | None = 200_000,
    extent: ArrayLike | None = None,
    size: tuple[int, int] | None = None,
    dpi: float = 120,
    n_labels: int = 10,
    context: Context | Path | str | None = None,
) -> Axes:
    """One of the paper's pictures of a span model, with the axes it needs.

    A model with a projection in its metadata (``dpdbscan fit --geo``) is
    drawn over longitude and latitude with a scale bar, and ``points`` and
    ``extent`` are then lon/lat.

    Parameters
    ----------
    model : SpanModel
    kind : {"histogram", "sums", "spans", "labels", "tree"}
        The released noisy histogram, its neighbour sums, the spans (over the
        noisy histogram, see :func:`plot_spans`), ``points`` coloured by
        the span they fall in, or the condensed tree of a level selection
        (:func:`plot_condensed_tree`; any dimension).
    points : array of shape (n, 2), optional
        Needed for "labels"; drawn under the spans for "spans". Such pictures
        show private points and are not part of the release.
    extent : (xmin, ymin, xmax, ymax), optional
        The part to show, in display coordinates (lon/lat for geo models).
        By default "spans" is cropped to the spans and the other kinds show
        the whole box.
    size : (width, height), optional
        Size of a new figure in pixels at ``dpi``; ignored when ``ax`` is
        given. By default :data:`DEFAULT_SIZE`, except that the spans picture
        cropped to the spans is as high as their box needs (500 to 1200
        pixels for a width of 900).
    n_labels : int
        How many of the largest spans get their id written on them ("spans").
    context : Context or path, optional
        A context layer under the spans ("spans"): a GeoJSON file of lines or
        polygons (lon/lat for geo models), read by
        :func:`dpdbscan.render.context.load_context`.
    """
    if kind not in ALL_KINDS:
        raise ValueError(f"kind must be one of {ALL_KINDS}, got kind={kind!r}")
    if kind == "tree":
        return plot_condensed_tree(model, ax, dpi=dpi)
    _check_2d(model.grid)
    proj = projection_of(model)
    transform = None if proj is None else proj.inverse
    aspect: Aspect = "equal" if proj is None else proj.aspect
    if kind in ("histogram", "sums") and model.histogram is None:
        raise ValueError(f"this model was saved without its noisy histogram; cannot plot {kind}")
    if kind == "labels" and points is None:
        raise ValueError("kind='labels' needs points to label")
    shown = None if extent is None else check_extent(extent)
    if context is not None and not isinstance(context, Context):
        context = load_context(context, model)
    if ax is None:
        if size is None:
            size = spanplot.default_size(model, DEFAULT_SIZE[0]) if kind == "spans" else DEFAULT_SIZE
        w, h = _check_size(size)
        ax = _plt().subplots(figsize=(w / dpi, h / dpi), dpi=dpi)[1]
    P = None if points is None else np.asarray(points, dtype=np.float64)
    P_model = None if P is None or proj is None else proj.forward(P)
    P_model = P if P_model is None else P_model
    if kind == "histogram":
        assert model.histogram is not None  # checked above
        ax = plot_histogram(model.histogram, ax, transform=transform, aspect=aspect)
        _set_title(ax, f"{ax.get_title()}\n{literal(protection_brief(model))}")
    elif kind == "sums":
        assert model.histogram is not None  # checked above
        ax = plot_neighbour_sums(model.histogram, ax, transform=transform, aspect=aspect)
        _set_title(ax, f"{ax.get_title()}\n{literal(protection_brief(model))}")
    elif kind == "spans":
        alpha = format_km(model.grid.eps) if proj is not None else f"{model.grid.eps:g}"
        view: Extent = "spans"
        if shown is not None:
            corners = shown.reshape(2, 2) if proj is None else proj.forward(shown.reshape(2, 2))
            view = corners.ravel()
        ax = plot_spans(
            model,
            ax,
            points=P_model,
            transform=transform,
            aspect=aspect,
            max_points=max_points,
            extent=view,
            n_labels=n_labels,
            context=context,
        )
        title = (
            f"{model.n_spans} DP span(s), eps={alpha}, {min_samples_brief(model)}\n"
            f"{literal(protection_brief(model))}"
        )
        heat = [im for im in ax.images if im.get_gid() == "heat"]
        if heat:
            title += f"\nover the {heat[0].get_label()}"
        _set_title(ax, title)
        if P_model is not None and len(P_model):
            mark_private(ax)
    else:
        assert P is not None and P_model is not None  # kind "labels" needs points: checked above
        ax = plot_labels(
            P,
            model.predict(P_model),
            ax,
            title="points labelled by the DP spans",
            aspect=aspect,
            max_points=max_points,
            colours=spanplot.span_palette(model),
        )
    if shown is not None and kind != "spans":
        ax.set_xlim(shown[0], shown[2])
        ax.set_ylim(shown[1], shown[3])
    if proj is not None:
        ax.set_xlabel("longitude (degrees)")
        ax.set_ylabel("latitude (degrees)")
        ax.locator_params(axis="x", nbins=5)  # long tick labels such as -122.44 collide
        # degrees as they are: near 180 matplotlib would write 0.05 and "+1.8e2" apart
        ax.ticklabel_format(style="plain", useOffset=False)
        add_scale_bar(ax, proj.kx)
    elif len(model.metadata.get("columns") or []) == 2:
        ax.set_xlabel(literal(model.metadata["columns"][0]))
        ax.set_ylabel(literal(model.metadata["columns"][1]))
    return ax


def _check_size(size) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in size)
    except (TypeError, ValueError):
        raise ValueError("size must be (width, height) in pixels") from None
    if not (16 <= w <= 20_000 and 16 <= h <= 20_000):
        raise ValueError("size must be between 16 and 20000 pixels on each side")
    return w, h


def save(ax: Axes, path: Path | str, dpi: float = 150) -> None:
    """Write the figure of ``ax`` to ``path`` and close it."""
    from matplotlib.figure import SubFigure

    fig = ax.figure
    root = fig.figure if isinstance(fig, SubFigure) else fig  # a subfigure is saved with its figure
    root.tight_layout()
    # The layout is done: without this, the placeholder engine tight_layout
    # leaves behind makes savefig draw the whole figure twice.
    root.set_layout_engine(None)
    png = str(path).lower().endswith(".png")
    extra: dict = {"pil_kwargs": {"compress_level": PNG_COMPRESS_LEVEL}} if png else {}
    if _shows_private_points(root) and png:
        root.savefig(path, dpi=dpi, metadata={"Description": PRIVATE_PICTURE}, **extra)
    else:
        root.savefig(path, dpi=dpi, **extra)
    _plt().close(root)


#: zlib's level for the PNG files :func:`save` writes: the same pixels as
#: the default level 6 in two thirds of the time (the Cabs picture of
#: ``dpdbscan fit``: 30 ms against 43 ms, the last step of the command's
#: longest chain) for a file 2.6 % larger (228 kB against 222 kB).
PNG_COMPRESS_LEVEL = 3


def spans_png(
    model: SpanModel,
    path: Path | str,
    *,
    dpi: int = 120,
    size: tuple[int, int] | None = None,
    extent: Sequence[float] | None = None,
) -> None:
    """The spans' picture ``dpdbscan fit`` writes (``size`` in pixels,
    ``extent`` in the model's display units), written to ``path``."""
    ax = plot_model(model, "spans", size=size, extent=extent, dpi=dpi)
    save(ax, path, dpi=dpi)


__all__ = [
    "preload",
    "spans_png",
    "plot_histogram",
    "plot_neighbour_sums",
    "plot_spans",
    "plot_labels",
    "mark_private",
    "PRIVATE_PICTURE",
    "span_paths",
    "plot_model",
    "plot_condensed_tree",
    "save",
    "paper_cmap",
    "add_scale_bar",
    "check_extent",
    "KINDS",
    "ALL_KINDS",
    "DEFAULT_SIZE",
]
