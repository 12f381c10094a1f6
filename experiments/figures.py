"""Experiment-specific figures (the library's own plots come through dpdbscan.research).

Each function draws one figure of the paper's Experiments section into a PNG
and returns nothing; the numbers behind the figures are computed elsewhere.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from dpdbscan.research import (
    Equirectangular,
    plot_histogram,
    plot_labels,
    plot_neighbour_sums,
    plot_spans,
)

from .data import SF_LATITUDE
from .datasets import Bounds, Dataset

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 110  # keeps every committed PNG well under 400 KB


def pyplot() -> ModuleType:
    """matplotlib.pyplot with the non-interactive Agg backend (files only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: Path, dpi: int = DPI) -> None:
    """PNG with a 256-colour palette: scatter plots of thousands of
    anti-aliased dots compress badly in full RGB, and plots use few colours."""
    import io

    from PIL import Image

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    pyplot().close(fig)
    buf.seek(0)
    with Image.open(buf) as img:
        img.convert("RGB").quantize(colors=256).save(path, format="PNG", optimize=True)


#: The paper's spans panels: spans over the (grey) points in the whole box,
#: without the analyst's heat layer and span ids of ``dpdbscan plot``.
PAPER_SPANS: dict[str, Any] = {"heat": False, "n_labels": 0, "extent": "box"}


def moons_pipeline(
    ds: Dataset, model: Any, dbscan_labels: np.ndarray, dp_labels: np.ndarray, path: Path, seed: int = 0
) -> None:
    """Five panels: DBSCAN, noisy histogram, neighbour sums, spans, labels."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 5, figsize=(22, 4.6))
    plot_labels(
        ds.X, dbscan_labels, ax=axes[0], title=f"(a) DBSCAN (α={ds.alpha:g}, MinPts={ds.min_samples})"
    )
    plot_histogram(
        model.histogram_, ax=axes[1], title=f"(b) noisy histogram, ε={model.spans_.release.epsilon:g}"
    )
    plot_neighbour_sums(model.histogram_, ax=axes[2], title=f"(c) neighbour sums (κ={model.kappa_})")
    plot_spans(
        model.spans_,
        ax=axes[3],
        points=ds.X,
        **PAPER_SPANS,
        title=f"(d) {model.spans_.n_spans} approx. span(s)",
    )
    plot_labels(ds.X, dp_labels, ax=axes[4], title="(e) extracted labels")
    lo, hi = ds.bounds
    for ax in (axes[0], axes[4]):
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
    fig.suptitle(f"DP-DBSCAN on Moons (seed {seed}, public box [{lo[0]:g}, {hi[0]:g}]²)")
    _save(fig, path)


def voronoi(ax: Axes, centers: np.ndarray, bounds: Bounds, title: str, resolution: int = 300) -> None:
    """DP-KMeans output: its centres and their Voronoi cells over the box."""
    lo, hi = bounds
    gx = np.linspace(lo[0], hi[0], resolution)
    gy = np.linspace(lo[1], hi[1], resolution)
    mx, my = np.meshgrid(gx, gy)
    pts = np.column_stack([mx.ravel(), my.ravel()])
    d2 = ((pts[:, None, :] - centers[None, :, :2]) ** 2).sum(axis=-1)
    cell = d2.argmin(axis=1).reshape(mx.shape)
    ax.imshow(
        cell,
        origin="lower",
        extent=(lo[0], hi[0], lo[1], hi[1]),
        cmap="tab20",
        vmin=0,
        vmax=19,
        alpha=0.45,
        aspect="equal",
        interpolation="nearest",
    )
    ax.scatter(centers[:, 0], centers[:, 1], marker="x", c="k", s=60)
    ax.set_title(title)


def cluto_comparison(p: dict[str, Any], path: Path) -> None:
    """One data set, six panels: ground truth, DBSCAN, DP-DBSCAN spans,
    DP-KMeans Voronoi cells, DP-DBSCAN labels, DP-KMeans labels.

    ``p``: dict with ds, dbscan_labels, dp_model, dp_labels, km_centers, km_labels.
    """
    plt = pyplot()
    ds = p["ds"]
    lo, hi = ds.bounds
    aspect = (hi[1] - lo[1]) / (hi[0] - lo[0])
    fig, axes = plt.subplots(2, 3, figsize=(18, 2 * (0.9 + 5.6 * aspect)))
    axes = axes.ravel()
    plot_labels(ds.X, ds.y, ax=axes[0], title=f"ground truth ({ds.title})")
    plot_labels(ds.X, p["dbscan_labels"], ax=axes[1], title="DBSCAN")
    plot_spans(
        p["dp_model"].spans_,
        ax=axes[2],
        points=ds.X,
        **PAPER_SPANS,
        title=f"DP-DBSCAN: {p['dp_model'].spans_.n_spans} spans",
    )
    voronoi(axes[3], p["km_centers"], ds.bounds, f"DP-KMeans centres, k = {ds.k}")
    plot_labels(ds.X, p["dp_labels"], ax=axes[4], title="DP-DBSCAN labels")
    plot_labels(ds.X, p["km_labels"], ax=axes[5], title="DP-KMeans labels")
    for ax in axes:
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
    fig.suptitle(f"{ds.title}: DBSCAN vs DP-DBSCAN vs DP-KMeans (ε = 1, seed 0, public box)")
    _save(fig, path, dpi=80)


def sweep(panels: list[dict[str, Any]], path: Path, suptitle: str, ncols: int = 2) -> None:
    """Line plots with ±1 std bands.

    ``panels``: list of dicts with title, xlabel, ylabel, x (list),
    series {label: (means, stds)} and refs {label: value} (horizontal lines),
    optional xscale.
    """
    plt = pyplot()
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 4.4 * nrows), squeeze=False)
    for ax, p in zip(axes.ravel(), panels):
        x = np.asarray(p["x"], dtype=np.float64)
        for label, (means, stds) in p["series"].items():
            means, stds = np.asarray(means), np.asarray(stds)
            (line,) = ax.plot(x, means, marker="o", label=label)
            ax.fill_between(x, means - stds, means + stds, color=line.get_color(), alpha=0.2)
        for k, (label, value) in enumerate(p.get("refs", {}).items()):
            ax.axhline(value, ls=["--", ":", "-."][k % 3], c="0.4", label=label)
        ax.set_xscale(p.get("xscale", "linear"))
        if p.get("xscale") == "log":
            from matplotlib.ticker import NullFormatter, ScalarFormatter

            ax.set_xticks(x)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(p["xlabel"])
        ax.set_ylabel(p["ylabel"])
        ax.set_ylim(-0.1, 1.05)
        ax.set_title(p["title"])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(suptitle)
    _save(fig, path)


def geo_spans(panels: list[dict[str, Any]], path: Path, max_points: int = 150_000) -> None:
    """DP spans over a grey sample of the points, in lon/lat.

    ``panels``: list of dicts with title, ds, model.
    """
    plt = pyplot()
    ncol = min(2, len(panels))
    nrow = math.ceil(len(panels) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(7.0 * ncol, 7.0 * nrow), squeeze=False)
    rng = np.random.default_rng(0)  # which points are drawn in grey: cosmetic only
    for ax, p in zip(axes.ravel(), panels):
        ds = p["ds"]
        idx = rng.choice(ds.n, size=min(max_points, ds.n), replace=False)
        plot_spans(
            p["model"].spans_,
            ax=ax,
            points=ds.X[idx],
            transform=ds.to_lonlat,
            title=p["title"],
            **PAPER_SPANS,
        )
        ax.set_aspect(Equirectangular(0.0, 0.0, SF_LATITUDE).aspect)  # lon/lat look like km
        ax.set_xlabel("longitude")
        ax.set_ylabel("latitude")
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle("DP-DBSCAN spans on geographic data (ε = 1)")
    _save(fig, path)
