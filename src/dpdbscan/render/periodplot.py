"""Small multiples of a series over time: one panel per period.

A series (``fit --per``) releases the spans once over the horizon and each
span's noisy mass per period; a period's spans are the spans active in it
(``metadata["series"]["period_spans"]``, :func:`dpdbscan.series.active_spans`).
Every panel has the same view, and a span the same colour and id in every
panel (the same place): filled where it is one of that period's spans,
a thin grey outline where it is not. Everything drawn is released (the
spans, the table's activity and the public plan of periods), so the picture
may be published with the model; its title says what unit is protected, the
lifetime budget and each part's bound
(:func:`dpdbscan.model.describe.protection_brief`). Needs matplotlib,
imported where it is used.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..geometry.projection import projection_of
from ..model.describe import protection_brief
from ..model.record import SpanModel
from ..model.stats import span_stats
from . import spanplot
from .plotting import _plt, add_scale_bar, literal, span_paths

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: At most this many panels in a row.
MAX_COLUMNS = 7
#: One panel's width in inches.
PANEL_INCHES = 2.6
#: The figure is at least this many panels wide, so that the guarantee above
#: the panels stays a few lines (one period: a 12-line column over a 2.6-inch panel).
MIN_WIDE = 3


def period_spans(model: SpanModel) -> list[list[int]]:
    """Each period's span ids, as the series recorded them."""
    series = model.metadata.get("series")
    if not series or "period_spans" not in series:
        raise ValueError("this model is not a series over time (fit --per): it has no periods to draw")
    return [[int(s) for s in ids] for ids in series["period_spans"]]


def plot_periods(model: SpanModel, *, dpi: float = 110) -> Figure:
    """The small multiples of ``model`` (a 2-D series): a matplotlib figure,
    one panel per period in calendar order, titled by the period's start."""
    plt = _plt()
    from matplotlib.collections import PathCollection
    from matplotlib.ticker import MaxNLocator

    if model.grid.d != 2:
        raise ValueError(f"the periods' picture needs a 2-D model, this one is {model.grid.d}-D")
    active = period_spans(model)
    series = model.metadata["series"]
    starts = series["periods"]["starts"]
    n = len(active)
    cols = min(n, MAX_COLUMNS)
    rows = math.ceil(n / cols)
    proj = projection_of(model)
    T = (lambda xy: np.asarray(xy, dtype=np.float64)) if proj is None else proj.inverse
    aspect: spanplot.Aspect = "equal" if proj is None else proj.aspect
    stats = span_stats(model)
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(max(cols, MIN_WIDE) * PANEL_INCHES, rows * PANEL_INCHES + 1.2),
        dpi=dpi,
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    y_ratio = spanplot.y_scale(T, aspect)
    lo, hi = spanplot.view(model, stats, axes[0, 0], "spans", y_ratio)
    w, h = spanplot.axes_pixels(axes[0, 0])
    px_per_unit = min(
        w / max(float(hi[0] - lo[0]), 1e-300), h / max(float(hi[1] - lo[1]) * abs(y_ratio), 1e-300)
    )
    crowded = spanplot.crowded_spans(model, px_per_unit, spanplot.LABEL_CROWD_PX)
    (x0, y0), (x1, y1) = T(np.array([lo, hi]))
    colours = spanplot.span_palette(model)
    everyone = np.arange(model.n_spans)
    paths = span_paths(model, everyone, T)
    for t, ax in enumerate(axes.ravel()):
        if t >= n:
            ax.set_axis_off()
            continue
        on = np.zeros(model.n_spans, dtype=bool)
        on[active[t]] = True
        ax.add_collection(
            PathCollection(
                paths,
                facecolors=[(*colours[s], 0.55) if on[s] else (0, 0, 0, 0) for s in everyone],
                edgecolors=[spanplot.darker(colours[s]) if on[s] else (0.7, 0.7, 0.7) for s in everyone],
                linewidths=[0.8 if on[s] else 0.4 for s in everyone],
                gid=f"period-{t}",
            ),
            autolim=False,
        )
        for s in np.flatnonzero(on):
            # on the span, or beside one drawn smaller than its id (which would hide it)
            p, where = spanplot.label_at(ax, stats, int(s), T, px_per_unit, y_ratio, crowded)
            ax.text(*T(p[None, :])[0], str(s), fontsize=6, gid=f"span-label-{int(s)}", **where)
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.set_aspect(aspect)
        ax.set_title(f"{starts[t][:16].replace('T', ' ')}  ({int(on.sum())} active)", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.xaxis.set_major_locator(MaxNLocator(3))  # a 2.6-inch panel: labels that do not run together
        # whole numbers on every label: an offset or a power of ten ("1e6") is
        # written at the axis' end in a larger font, over the panel's title
        ax.ticklabel_format(style="plain", useOffset=False)
    for t, ax in enumerate(axes.ravel()[:n]):
        if t + cols >= n:
            # no panel under it (the last row, or a column the last row leaves
            # empty): its column's x tick labels go here, or that column has none
            ax.tick_params(axis="x", labelbottom=True)
    if proj is not None:
        # under the first panel of the last row, below its tick labels: inside
        # a 2.6-inch panel a bar lies over the spans
        add_scale_bar(axes[-1, 0], proj.kx, outside=True)
    head = (
        f"{model.n_spans} DP span(s) found once over the horizon; filled: the period's spans (active: "
        f"the 95% interval of the noisy mass above 0). {protection_brief(model)}"
    )
    # about 14 characters an inch at 8 points: the guarantee is never cut off
    fig.suptitle(literal(textwrap.fill(head, width=int(max(cols, MIN_WIDE) * PANEL_INCHES * 14))), fontsize=8)
    return fig


def save_periods(model: SpanModel, path: Path | str, *, dpi: float = 110) -> Path:
    """Write :func:`plot_periods` as a PNG to ``path``; returns the path."""
    fig = plot_periods(model, dpi=dpi)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi, format="png")
    _plt().close(fig)
    return Path(path)


__all__ = ["MAX_COLUMNS", "period_spans", "plot_periods", "save_periods"]
