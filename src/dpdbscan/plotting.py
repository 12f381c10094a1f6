"""Figures in the style of the paper: noisy histogram, neighbour sums, spans,
and labels of given points. Needs matplotlib (``pip install 'dpdbscan[plot]'``).
"""

from __future__ import annotations

import numpy as np


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ImportError("plotting needs matplotlib: pip install 'dpdbscan[plot]'") from exc
    return plt


def _check_2d(grid):
    if grid.d != 2:
        raise ValueError(f"plots are drawn for 2-D grids, this one is {grid.d}-D")


def _extent(grid):
    return [grid.lower[0], grid.lower[0] + grid.shape[0] * grid.width,
            grid.lower[1], grid.lower[1] + grid.shape[1] * grid.width]


def _cell_image(grid, keys, values, fill=np.nan):
    img = np.full(grid.shape, fill, dtype=np.float64)
    if keys is not None and len(keys):
        c = grid.decode(keys)
        img[c[:, 0], c[:, 1]] = values
    return img


def plot_histogram(hist, ax=None, title="noisy histogram", cmap="viridis"):
    """The released noisy counts per cell."""
    plt = _plt()
    _check_2d(hist.grid)
    ax = ax or plt.subplots(figsize=(6, 6))[1]
    if hist.kind == "dense":
        img = hist.values.astype(np.float64)
    else:
        img = _cell_image(hist.grid, hist.keys, hist.values, fill=0.0)
    im = ax.imshow(img.T, origin="lower", extent=_extent(hist.grid), cmap=cmap, aspect="equal")
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title(title)
    return ax


def plot_neighbour_sums(hist, ax=None, title="noisy neighbour sums", cmap="magma"):
    """sum over NB(X) of the noisy counts, per cell."""
    from .core import neighbour_sums

    plt = _plt()
    _check_2d(hist.grid)
    ax = ax or plt.subplots(figsize=(6, 6))[1]
    keys, sums = neighbour_sums(hist)
    img = _cell_image(hist.grid, keys, sums, fill=0.0)
    im = ax.imshow(img.T, origin="lower", extent=_extent(hist.grid), cmap=cmap, aspect="equal")
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title(title)
    return ax


def plot_spans(model, ax=None, title=None, points=None, transform=None, cmap="tab20"):
    """Spans as filled cell unions (optionally over a light scatter of points)."""
    plt = _plt()
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path as MPath

    from .geometry import cells_to_polygons

    grid = model.grid
    _check_2d(grid)
    ax = ax or plt.subplots(figsize=(6, 6))[1]
    if points is not None and len(points):
        P = np.asarray(points, dtype=np.float64)
        if transform is not None:
            P = transform(P)
        ax.scatter(P[:, 0], P[:, 1], s=1, c="0.75", lw=0, rasterized=True)
    colours = plt.get_cmap(cmap)
    for s in range(model.n_spans):
        for rings in cells_to_polygons(model.span_cells(s)):
            verts, codes = [], []
            for ring in rings:
                xy = grid.lower + np.asarray(ring, dtype=np.float64) * grid.width
                if transform is not None:
                    xy = transform(xy)
                verts.extend(xy.tolist())
                codes.extend([MPath.MOVETO] + [MPath.LINETO] * (len(xy) - 2) + [MPath.CLOSEPOLY])
            patch = PathPatch(MPath(verts, codes), facecolor=colours(s % 20), edgecolor="k",
                              lw=0.3, alpha=0.6)
            ax.add_patch(patch)
    lo = grid.lower
    hi = grid.lower + np.asarray(grid.shape) * grid.width
    box = np.array([lo, hi])
    if transform is not None:
        box = transform(box)
    ax.set_xlim(box[0, 0], box[1, 0])
    ax.set_ylim(box[0, 1], box[1, 1])
    ax.set_aspect("equal")
    ax.set_title(title or f"{model.n_spans} DP span(s), epsilon={model.epsilon:g}")
    return ax


def plot_labels(X, labels, ax=None, title="labels", cmap="tab20"):
    """Points coloured by label; -1 (noise) in grey."""
    plt = _plt()
    X = np.asarray(X, dtype=np.float64)
    ax = ax or plt.subplots(figsize=(6, 6))[1]
    labels = np.asarray(labels)
    noise = labels < 0
    ax.scatter(X[noise, 0], X[noise, 1], s=2, c="0.7", lw=0, rasterized=True)
    ax.scatter(X[~noise, 0], X[~noise, 1], s=2, c=labels[~noise] % 20, cmap=cmap,
               vmin=0, vmax=19, lw=0, rasterized=True)
    ax.set_aspect("equal")
    ax.set_title(title)
    return ax


def save(ax, path, dpi=150):
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=dpi)
    _plt().close(ax.figure)
