"""Explore a release: spans over a grid of (eps, MinPts), a table and a
figure of small multiples, at no privacy cost.

Every panel and every row is post-processing of the one released histogram
(:func:`dpdbscan.post.ladder.sweep`): the spans at (eps, MinPts) are exactly
those of ``with_params(model, eps=..., min_samples=...)``. The table gives,
for every grid point:

* ``spans`` - the number of spans;
* ``core_mass`` - the noisy count in the core sub-cells (the mass of the
  spans), and ``core_share``, its share of the release's positive mass;
* ``stability`` - the mean mass-weighted adjusted Rand index between the
  spans there and the spans at the neighbouring grid points (next eps and
  next MinPts either way), on the release's sub-cells. 1 means that nudging
  either parameter leaves the spans as they are: the picture does not hinge
  on the exact value chosen. DBSCAN results are trusted where they sit on
  such a plateau (the same idea as HDBSCAN's cluster stability, measured here
  over both parameters).

A model whose spans the automatic mode took each at its own level
(``selection="levels"``) is shown with them, in a row of its own, and, when
the choice was unsure, beside the other answer (:func:`dpdbscan.model.levels.alternative`).
"""

from __future__ import annotations

import csv
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..cells.grid import Grid
from ..cells.histogram import NoisyHistogram
from ..geometry.projection import eps_text, projection_of
from ..model import SpanModel, finest_eps
from ..model.describe import protection_brief, swamped_min_samples
from ..model.guarantee import guarantee
from ..model.levels import alternative, is_levels, unsure_reasons
from ..model.reparam import remodel
from ..model.stats import span_stats
from ..post import ladder as _sweep
from ..post.coretests import core_test
from . import plotting, spanplot
from .mapstyle import public_box
from .spanplot import Aspect

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Row:
    """One grid point of the table."""

    eps: float
    min_samples: int
    threshold: float
    spans: int
    core_cells: int
    core_mass: float
    core_share: float
    stability: float


#: The figure's title's size in points.
TITLE_POINTS = 9

COLUMNS = ("eps", "min_samples", "threshold", "spans", "core_cells", "core_mass", "core_share", "stability")
#: The table file's columns: :data:`COLUMNS`, then what the release protects
#: (the same in every row: :func:`release_words`) and the guarantee of that
#: row's (eps, MinPts) in words. In columns, not ``#`` lines, so that every
#: CSV reader (a plain ``csv.reader``, pandas and spreadsheets without a
#: comment option) reads the file as a table and the statement travels with it.
FILE_COLUMNS = (*COLUMNS, "protects", "guarantee")


@dataclass
class Exploration:
    """The table and the spans of every grid point.

    ``models[(eps, MinPts)]`` is the :class:`SpanModel` that
    ``with_params(model, eps=..., min_samples=...)`` returns: the same cells,
    and the margin, threshold and guarantee of that eps and MinPts.
    ``selections``: (title, model) of a level selection's own spans and,
    when its choice was unsure, of the alternative.
    """

    eps: list[float]
    min_samples: list[int]
    rows: list[Row]
    models: dict
    selections: list[tuple[str, SpanModel]] = field(default_factory=list)


def default_grid(model: SpanModel) -> tuple[list[float], list[int]]:
    """Five eps and five MinPts from the model's own: MinPts x 2^j for j in
    -2..2 (when the noise margin swamps MinPts, so that every MinPts up to N
    gives the model's release, (N + 1) x sqrt(2)^j for j in 0..4 instead), and eps
    x sqrt(2)^i for i in -2..2 moved up by factors of sqrt(2)
    until the smallest is at or above the release's finest eps. A model at
    its release's finest eps (a fit at the default eta) gets eps x sqrt(2)^i
    for i in 0..4: eps to 4 eps."""
    finest = finest_eps(model)
    steps = [2 ** (i / 2) for i in range(-2, 3)]
    eps = [model.grid.eps * s for s in steps]
    while eps[0] < finest * (1 - 1e-12):
        eps = [e * math.sqrt(2) for e in eps]
    flat = swamped_min_samples(model)
    if flat is None:
        ms = sorted({max(1, int(round(model.spec.min_samples * 2.0**j))) for j in range(-2, 3)})
    else:
        # every MinPts up to flat gives this very release: show the ones that change it
        ms = sorted({int(round((flat + 1) * 2.0 ** (j / 2))) for j in range(0, 5)})
    return eps, ms


def explore(
    model: SpanModel, eps: Sequence[float] | None = None, min_samples: Sequence[int] | None = None
) -> Exploration:
    """Spans, table and stability over the (eps, MinPts) grid, from the
    model's released histogram alone."""
    if model.histogram is None:
        raise ValueError("this model was saved without its noisy histogram; cannot explore it")
    test = core_test(model.spec.core)
    d_eps, d_ms = default_grid(model)
    chosen = bool(eps)
    eps = sorted({float(e) for e in (eps or d_eps)})
    ms = sorted({int(m) for m in (min_samples or d_ms)})
    if not chosen and model.histogram is not None:
        # the default grid reaches 4x the model's eps: in 5-D and up its neighbourhoods can
        # outgrow what the test weighs (6-D at eps 0.3: 13.6M cells at 1.2); keep the eps
        # values that fit (public: the grid alone) rather than refuse the whole table
        fits = [e for e in eps if model.histogram.grid.at_eps(e).kappa <= test.max_kappa]
        eps = fits or eps[:1]
    finest = finest_eps(model)
    if eps[0] < finest * (1 - 1e-12):
        raise ValueError(
            f"eps={eps_text(model, eps[0])} is finer than this release can resolve (its smallest eps "
            f"is {eps_text(model, finest)}; a smaller eps needs a new release)"
        )
    hist = model.histogram
    top = hist.grid.at_eps(eps[-1]).kappa
    if top > test.max_kappa:
        raise ValueError(
            f"eps={eps_text(model, eps[-1])} is too large for this release's cells: an "
            f"eps-neighbourhood would hold {top:,} of them (at most {test.max_kappa:,}); give "
            "smaller eps values (--eps), or make a new release at a coarser eps"
        )
    table = _sweep.sweep(hist, model.spec, eps, ms)
    stab = _sweep.stability(table)
    total = float(np.maximum(np.asarray(hist.values, dtype=np.float64), 0).sum())
    fine = hist.grid.subdivided(model.spec.subcells)
    rows, models = [], {}
    at_alpha = {a: hist.on_grid(hist.grid.at_eps(a)) for a in eps}
    for (a, m), p in sorted(table.items()):
        rows.append(
            Row(
                a,
                m,
                p.threshold,
                p.n_spans,
                int(p.keys.size),
                p.core_mass,
                p.core_mass / total if total > 0 else 0.0,
                stab[(a, m)],
            )
        )
        models[(a, m)] = _panel(model, at_alpha[a], fine, p)
    return Exploration(eps, ms, rows, models, level_selections(model))


def level_selections(model: SpanModel) -> list[tuple[str, SpanModel]]:
    """A level selection's own spans and, when its choice was unsure, the
    other answer (empty for any other model)."""
    if not is_levels(model):
        return []
    out = [("chosen: each span at its own MinPts", model)]
    alt = alternative(model)
    if alt is not None:
        out.append(("the alternative (the choice was unsure)", alt))
    return out


def selection_lines(ex: Exploration, model: SpanModel) -> list[str]:
    """What explore prints about a level selection and its alternative."""
    length = _length(model)
    out = []
    for title, m in ex.selections:
        ms = sorted({int(lv["min_samples"]) for lv in (m.auto or {}).get("levels") or []})
        used = ", ".join(str(x) for x in ms) or "none"
        out.append(f"{title}: eps={length(m.grid.eps)}, {m.n_spans} span(s) at MinPts {used}")
    why = unsure_reasons(model)
    if why:
        out.append("unsure: " + "; ".join(why))
    return out


def _panel(model: SpanModel, hist: NoisyHistogram, fine: Grid, p: _sweep.Partition) -> SpanModel:
    """The model of one grid point: what ``with_params(model, eps, MinPts)``
    returns (its alpha, margin, threshold, border and guarantee), with the
    sweep's cells. ``hist`` is the release re-measured at that eps, ``fine``
    the release's sub-cell grid the partition's keys are in. (In 0.1
    a panel was the base model with new cells and kept the base guarantee.)"""
    test = core_test(model.spec.core)
    spec = replace(
        model.spec,
        min_samples=p.min_samples,
        border=test.border_at(model.spec.border, model.grid.eps, p.eps),
    )
    # keys differ between the two encodings (the padding grows with alpha);
    # both are row-major, so the sorted order and the labels carry over
    keys = hist.grid.subdivided(spec.subcells).encode(fine.decode(p.keys))
    return remodel(model, hist, test.spans_of(hist, spec, keys, p.labels), spec)


def write_table(ex: Exploration, path: Path | str) -> None:
    """The table as CSV (one row per grid point, :data:`FILE_COLUMNS`): the
    numbers, then who the release protects and the row's guarantee, so that
    the file says what it protects wherever it is published."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(FILE_COLUMNS)
        for r in ex.rows:
            panel = ex.models[(r.eps, r.min_samples)]
            w.writerow(
                [
                    f"{r.eps:.6g}",
                    r.min_samples,
                    f"{r.threshold:.4g}",
                    r.spans,
                    r.core_cells,
                    f"{r.core_mass:.6g}",
                    f"{r.core_share:.4f}",
                    f"{r.stability:.4f}",
                    release_words(panel),
                    guarantee(panel)["statement"],
                ]
            )


#: What the table's ``share`` is, and is not (said under the table: at person
#: level the noise of the box's empty cells is most of the positive mass).
SHARE_LEGEND = (
    "(share: core_mass over the sum of the release's positive noisy counts, the noise of empty cells "
    "included: small where the box is mostly empty or the noise large, as at person level; it is not "
    "the share of the points in spans)"
)


def table_lines(ex: Exploration, model: SpanModel) -> list[str]:
    """The table as aligned text (eps in m/km for geographic models)."""
    length = _length(model)
    out = [
        f"{'eps':>10}  {'min_samples':>11}  {'threshold':>9}  {'spans':>5}  {'core_cells':>10}  "
        f"{'core_mass':>10}  {'share':>6}  {'stability':>9}"
    ]
    for r in ex.rows:
        out.append(
            f"{length(r.eps):>10}  {r.min_samples:>11}  {r.threshold:>9.1f}  {r.spans:>5}  "
            f"{r.core_cells:>10}  {r.core_mass:>10.0f}  {r.core_share:>6.1%}  "
            f"{r.stability:>9.3f}"
        )
    if ex.rows:
        out.append(SHARE_LEGEND)
    if ex.rows and not any(r.spans for r in ex.rows):
        # from the release alone (post-processing): said, not left to a column of zeros
        out.append(
            "no span at any of these (eps, MinPts): no place reaches its threshold in this release "
            "(the noise margin dominates; a larger epsilon or eps lowers it, and 'dpdbscan forecast' "
            "says what a release can detect before it is made)"
        )
    return out


def release_words(model: SpanModel) -> str:
    """Who the release protects and at what budget, as the spans picture
    and the map say it (:func:`dpdbscan.model.describe.protection_brief`:
    the level, the unit, k, m, epsilon, delta, rho): what every panel's
    guarantee is relative to."""
    return protection_brief(model)


def _length(model):
    """eps as text: 3 significant digits (m or km) for geographic models, 4 otherwise."""
    if projection_of(model) is not None:
        return lambda km: f"{km * 1000:.3g} m" if km < 1 else f"{km:.3g} km"
    return lambda v: f"{v:.4g}"


def figure(ex: Exploration, model: SpanModel, *, panel_inches: float = 2.6, dpi: float = 100) -> Figure:
    """Small multiples: one panel per grid point (rows: eps, columns:
    MinPts), each titled with its parameters and span count, all on the same
    view (around every panel's spans) over the noisy histogram. Spans are
    drawn as a raster of their sub-cells (coloured so that neighbouring spans
    differ), which stays fast for many panels."""
    if model.grid.d != 2:
        raise ValueError(f"the explore figure needs a 2-D model, this one is {model.grid.d}-D")
    plt = plotting._plt()
    proj = projection_of(model)
    T = (lambda xy: np.asarray(xy, dtype=np.float64)) if proj is None else proj.inverse
    aspect: Aspect = "equal" if proj is None else proj.aspect
    lo, hi = _common_view(ex, model)
    nr, nc = len(ex.eps) + (1 if ex.selections else 0), max(len(ex.min_samples), len(ex.selections))
    fig, axes = plt.subplots(nr, nc, figsize=(panel_inches * nc, panel_inches * nr), dpi=dpi, squeeze=False)
    length = _length(model)
    px = int(panel_inches * dpi)

    def draw(ax, panel: SpanModel, title: str, size: float) -> None:
        if model.histogram is not None:
            spanplot.draw_heat(ax, model.histogram, lo, hi, T, model.spans.noise_margin)
        _draw_span_raster(ax, panel, lo, hi, T, px)
        (x0, y0), (x1, y1) = T(np.array([lo, hi]))
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.set_aspect(aspect)
        ax.set_title(title, fontsize=size)
        ax.set_xticks([])
        ax.set_yticks([])

    for i, a in enumerate(ex.eps):
        for j, m in enumerate(ex.min_samples):
            panel = ex.models[(a, m)]
            draw(axes[i][j], panel, f"eps={length(a)}, MinPts={m}\n{panel.n_spans} span(s)", 8)
    for j in range(len(ex.min_samples), nc):
        for i in range(len(ex.eps)):
            axes[i][j].set_axis_off()
    for j in range(nc if ex.selections else 0):
        ax = axes[nr - 1][j]
        if j >= len(ex.selections):
            ax.set_axis_off()
            continue
        title, panel = ex.selections[j]
        ms = sorted({int(lv["min_samples"]) for lv in (panel.auto or {}).get("levels") or []})
        shown = f"MinPts {ms[0]}..{ms[-1]}" if len(ms) > 1 else f"MinPts {ms[0] if ms else '-'}"
        draw(ax, panel, f"{title}\neps={length(panel.grid.eps)}, {shown}, {panel.n_spans} span(s)", 7)
    head = f"spans from one release ({release_words(model)}); rows: eps, columns: MinPts; no extra budget"
    # wrapped to the figure's width (DejaVu Sans at 9 pt averages under 0.62
    # em a character): a narrow grid cut the protection line at both edges
    chars = max(30, int(fig.get_figwidth() * 72.0 / (TITLE_POINTS * 0.62)))
    fig.suptitle(plotting.literal(textwrap.fill(head, chars, break_on_hyphens=False)), fontsize=TITLE_POINTS)
    return fig


def _draw_span_raster(ax, panel: SpanModel, lo, hi, T, max_side: int) -> None:
    """The panel's span regions (the cells ``predict`` maps to each span, as
    the spans picture and the map draw them) inside [lo, hi] as one RGBA
    image in the spans' own colours
    (:func:`dpdbscan.render.spanplot.span_palette`), at most about
    ``max_side`` pixels a side (blocks of sub-cells: a block shows a span if
    any of its sub-cells is in one)."""
    if panel.n_spans == 0:
        return
    g = panel.grid
    keys, labels = panel.regions()
    c = g.decode(keys)
    c_lo = np.floor((lo - g.lower) / g.width).astype(np.int64)
    c_hi = np.ceil((hi - g.lower) / g.width).astype(np.int64)
    keep = np.all((c >= c_lo) & (c < c_hi), axis=1)
    if not keep.any():
        return
    f = max(1, int(math.ceil(float((c_hi - c_lo).max()) / max(max_side, 1))))
    shape = tuple(int(v) for v in -(-(c_hi - c_lo) // f))
    rgba = np.zeros(shape + (4,))
    colours = np.asarray(spanplot.span_palette(panel), dtype=np.float64)
    b = (c[keep] - c_lo) // f
    rgba[b[:, 0], b[:, 1], :3] = colours[labels[keep]]
    rgba[b[:, 0], b[:, 1], 3] = 0.8
    box = g.lower + np.array([c_lo, c_lo + np.asarray(shape) * f]) * g.width
    (x0, y0), (x1, y1) = T(box)
    ax.imshow(
        np.transpose(rgba, (1, 0, 2)),
        origin="lower",
        extent=[x0, x1, y0, y1],
        interpolation="nearest",
        zorder=2,
        gid="span-raster",
    )


def _common_view(ex: Exploration, model: SpanModel) -> tuple[np.ndarray, np.ndarray]:
    """(lower corner, upper corner) in model coordinates around every panel's
    spans, inside the public box (the whole box when no panel has a span)."""
    box_lo, box_hi = public_box(model)
    panels = [*ex.models.values(), *(m for _, m in ex.selections)]
    boxes = [span_stats(p) for p in panels if p.n_spans]
    if not boxes:
        return box_lo, box_hi
    lo = np.min([b.lower.min(axis=0) for b in boxes], axis=0)
    hi = np.max([b.upper.max(axis=0) for b in boxes], axis=0)
    pad = 0.05 * (hi - lo).max()
    return np.maximum(lo - pad, box_lo), np.minimum(hi + pad, box_hi)


def lay_out(fig: Figure) -> None:
    """Place the panels below the title's lines (9 pt at 1.25 line
    spacing, and a margin)."""
    # Figure.get_suptitle is matplotlib 3.8's; the suptitle's Text is there from 3.7 on
    text = getattr(fig, "_suptitle", None)
    title = text.get_text() if text is not None else ""
    lines = title.count("\n") + 1
    top = 1 - (lines * TITLE_POINTS * 1.25 + 8) / 72.0 / fig.get_figheight()
    fig.tight_layout(rect=(0, 0, 1, min(0.97, top)))


def save_figure(fig: Figure, path: Path | str, dpi: float = 100) -> None:
    lay_out(fig)
    fig.savefig(path, dpi=dpi)
    plotting._plt().close(fig)


__all__ = [
    "explore",
    "Exploration",
    "Row",
    "COLUMNS",
    "FILE_COLUMNS",
    "default_grid",
    "write_table",
    "table_lines",
    "selection_lines",
    "level_selections",
    "release_words",
    "figure",
    "lay_out",
    "save_figure",
]
