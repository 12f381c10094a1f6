"""An interactive map of a span model: one self-contained HTML file.

A series over time (``fit --per``) gets a period control in the panel: each
period shows its active spans filled and the others dashed (the same spans,
ids and colours in every period), from the released table alone.

:func:`map_html` writes the spans as SVG polygons over the released noisy
histogram (a PNG heat layer inlined as a data URI), in the colours of every
picture (:func:`dpdbscan.render.mapstyle.span_hex`) and with the ids of the
largest spans in view written on them, with pan and zoom (mouse wheel, drag,
pinch) kept inside the public box, lon/lat axes in margins of their own and a
scale bar for geographic models, and a tooltip with each span's id, cell
count, area and noisy mass (:mod:`dpdbscan.model.stats`). An optional context
layer (streets, a coastline: :mod:`dpdbscan.render.context`) is drawn under
the spans. Everything, script and style included, is in the one file: it
opens from disk with no network and no server. The page's script and style
are in ``templates/webmap.html``, next to this module.

The map shows only the release (spans and noisy histogram) and the public
context layer, so it may be published with the model.
"""

from __future__ import annotations

import base64
import html
import json
import re
import struct
import zlib
from importlib import resources
from pathlib import Path

import numpy as np

from ..geometry.projection import KM_PER_DEGREE, format_km, projection_of
from ..model.describe import protection_brief, published_statement, swamp_brief
from ..model.record import SpanModel
from ..model.stats import format_area, span_stats
from .context import Context, svg_path
from .mapstyle import heat_rgba, heat_scale, histogram_window, noise_floor, public_box, span_extent, span_hex
from .tiles import Tiles

#: Largest heat layer embedded in a page, in pixels (bigger grids are summed
#: in blocks); about 1-2 MB of PNG for city-sized data.
MAX_MAP_HEAT_PIXELS = 4_000_000


def map_html(
    model: SpanModel,
    *,
    title: str | None = None,
    context: Context | None = None,
    n_labels: int = 10,
    tiles: Tiles | None = None,
) -> str:
    """The HTML page of ``model`` (a 2-D :class:`~dpdbscan.model.record.SpanModel`).

    Parameters
    ----------
    title : str, optional
        The page's title (default: the number of spans and epsilon).
    context : Context, optional
        Lines drawn under the spans (streets, a coastline), from
        :func:`dpdbscan.render.context.load_context`; they are public input
        and embedded in the page, which stays one offline file.
    n_labels : int
        The ids of up to this many of the largest spans in view are written
        on the map, as in the spans picture.
    tiles : Tiles, optional
        A basemap of XYZ tiles (:mod:`dpdbscan.render.tiles`) under the heat
        layer, loaded from the given server while the page is viewed; only
        for geographic models. Without it the page is offline.
    """
    grid = model.grid
    if grid.d != 2:
        raise ValueError(f"the map needs a 2-D model, this one is {grid.d}-D")
    proj = projection_of(model)
    if tiles is not None and proj is None:
        raise ValueError(
            "a tile basemap needs a geographic model (fitted with --geo or fit_lonlat): tiles are in "
            "longitude/latitude"
        )
    stats = span_stats(model)
    box_lo, box_hi = public_box(model)
    view_lo, view_hi = span_extent(model, stats)
    alpha = format_km(grid.eps) if proj is not None else f"{grid.eps:g}"
    # largest first, ties to the smaller id: the order the ids are placed in
    order = np.lexsort((np.arange(stats.n_spans), -stats.n_cells))
    config = {
        "box": [*map(float, box_lo), *map(float, box_hi)],
        "view": [*map(float, view_lo), *map(float, view_hi)],
        "cell": float(grid.width),
        "geo": None
        if proj is None
        else {"lon0": proj.lon0, "lat0": proj.lat0, "kx": proj.kx, "ky": KM_PER_DEGREE},
        "axes": _axis_names(model, proj is not None),
        "n_spans": model.n_spans,
        "n_labels": int(n_labels),
        # each span's id, where it goes (a point in it) and its box (lower, upper), by size
        "labels": [
            [int(s), *(float(v) for v in (*stats.anchor[s], *stats.lower[s], *stats.upper[s]))] for s in order
        ],
        "tiles": None if tiles is None else tiles.config(),
        "periods": _periods_config(model),
    }
    heat_svg, heat_note = _heat_layer(model)
    title = title or f"DP spans: {model.n_spans} span(s), epsilon={model.release.epsilon:g}"
    items = [
        f"{model.n_spans} span(s) from {int(stats.n_cells.sum()):,} cell(s)",
        f"α = {alpha}",
        f"MinPts = {model.spec.min_samples}",
    ]
    # no line breaks inside an item such as "α = 50 m"
    facts = " · ".join(i.replace(" ", "\u00a0") for i in items)
    if swamp := swamp_brief(model):
        # a sentence: it may wrap
        facts += f" · {swamp}"
    width, height = box_hi - box_lo
    values = {
        "TITLE": html.escape(title),
        "FACTS": html.escape(facts),
        "PROTECTS": html.escape(protection_brief(model, greek=True)),
        "GUARANTEE": html.escape(published_statement(model)),
        "HEAT_NOTE": html.escape(heat_note),
        "CONFIG": _script_json(config),
        "HEAT": heat_svg,
        "BOX_RECT": (
            f'x="{_num(box_lo[0])}" y="{_num(-box_hi[1])}" width="{_num(width)}" height="{_num(height)}"'
        ),
        "SPANS": _spans_svg(model, stats, proj is not None),
        "SPAN_TRANSFORM": (
            f"matrix({_num(grid.width)} 0 0 {_num(-grid.width)} {_num(grid.lower[0])} {_num(-grid.lower[1])})"
        ),
        "PERIODS": _periods_control(model),
        **_context_parts(context),
        **_tiles_parts(tiles),
    }
    template = resources.files("dpdbscan.render").joinpath("templates/webmap.html").read_text("utf-8")
    return re.sub(r"%%([A-Z_]+)%%", lambda m: values[m.group(1)], template)


def write_map(
    model: SpanModel,
    path: Path | str,
    *,
    title: str | None = None,
    context: Context | None = None,
    tiles: Tiles | None = None,
) -> Path:
    """Write :func:`map_html` to ``path`` (UTF-8); returns the path."""
    path = Path(path)
    path.write_text(map_html(model, title=title, context=context, tiles=tiles), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- #
# pieces of the page


def _axis_names(model, geo: bool) -> list[str]:
    if geo:
        return ["longitude (degrees)", "latitude (degrees)"]
    cols = model.metadata.get("columns") or []
    return [str(c) for c in cols] if len(cols) == 2 else ["x", "y"]


def _periods_config(model: SpanModel) -> dict | None:
    """A series' periods for the page's period control (None otherwise):
    each period's start, its active spans, and the noisy masses, shape
    (spans, periods), with the interval's half-width. All of it released."""
    series = model.metadata.get("series")
    if not series or "period_spans" not in series:
        return None
    table = series["table"]
    return {
        "per": series["periods"]["per"],
        # an appendable series released so far: its released periods only
        "starts": list(series["periods"]["starts"])[: len(series["period_spans"])],
        "active": [[int(s) for s in ids] for ids in series["period_spans"]],
        "mass": [[int(v) for v in row] for row in table["noisy_mass"]],
        "half_width": int(table["interval_half_width"]),
    }


def _periods_control(model: SpanModel) -> str:
    """The panel's period control (a select: the whole horizon, then each
    period), with the series' guarantee; empty for a model of one release."""
    cfg = _periods_config(model)
    if cfg is None:
        return ""
    options = ['<option value="-1">whole horizon (all spans)</option>'] + [
        f'<option value="{t}">{html.escape(start[:16].replace("T", " "))} '
        f"({len(cfg['active'][t])} active)</option>"
        for t, start in enumerate(cfg["starts"])
    ]
    statement = html.escape(model.metadata["series"]["statement"])
    return (
        f'<p class="note">Series over time: the spans are found once over the horizon; a '
        f"{html.escape(cfg['per'])}'s spans are those whose noisy mass that {html.escape(cfg['per'])} "
        f"has a 95% interval above 0 (filled; the others dashed). {statement}.</p>"
        f'<label>{html.escape(cfg["per"])} <select id="period">' + "".join(options) + "</select></label>"
    )


def _context_parts(context: Context | None) -> dict[str, str]:
    """The context layer's group, its note and its switch in the panel."""
    if context is None:
        return {"CONTEXT": "", "CONTEXT_NOTE": "", "CONTEXT_TOGGLE": ""}
    o, q = context.origin, context.step
    group = (
        f'<g id="context" transform="matrix({_num(q)} 0 0 {_num(-q)} {_num(o[0])} {_num(-o[1])})">'
        f'<path d="{svg_path(context)}"/></g>'
    )
    note = '<p class="note">Dark blue lines: the context layer you gave (not part of the release).</p>'
    toggle = '<label><input type="checkbox" id="show-context" checked> context layer</label>'
    return {"CONTEXT": group, "CONTEXT_NOTE": note, "CONTEXT_TOGGLE": toggle}


def _tiles_parts(tiles: Tiles | None) -> dict[str, str]:
    """The basemap's credit in the corner, its note and its switch in the panel."""
    if tiles is None:
        return {"TILES_CREDIT": "", "TILES_NOTE": "", "TILES_TOGGLE": ""}
    credit = f'<div id="attribution">{html.escape(tiles.credit)}</div>'
    note = (
        f'<p class="note">Basemap: tiles from {html.escape(tiles.host)}, loaded while the page is viewed '
        "(not part of the release; the tile server sees which area is in view).</p>"
    )
    toggle = '<label><input type="checkbox" id="show-tiles" checked> basemap</label>'
    return {"TILES_CREDIT": credit, "TILES_NOTE": note, "TILES_TOGGLE": toggle}


def _spans_svg(model, stats, geo: bool) -> str:
    """One ``<path>`` per span in cell units (integers: exact and compact;
    the enclosing group maps cells to model coordinates), in the colour of
    its id in every picture (:func:`dpdbscan.render.mapstyle.span_hex`)."""
    colours = span_hex(model)
    integer = model.histogram is not None and model.histogram.values.dtype.kind in "iu"
    out = []
    outlines = model.outlines()
    for s in range(model.n_spans):
        d = "".join(_ring_path(ring) for rings in outlines.polygons(s) for ring in rings)
        if stats.noisy_mass is None:
            mass = "not saved"
        else:
            m = float(stats.noisy_mass[s])
            mass = f"{round(m):,}" if integer else f"{m:,.1f}"
        colour = colours[s]
        attrs = {
            "class": "span",
            "d": d,
            "fill": colour,
            "stroke": colour,
            "data-id": str(s),
            "data-cells": f"{int(stats.n_cells[s]):,}",
            "data-area": format_area(float(stats.area[s]), geo=geo),
            "data-mass": mass,
        }
        out.append("<path " + " ".join(f'{k}="{html.escape(v)}"' for k, v in attrs.items()) + "/>")
    return "\n".join(out)


def _ring_path(ring) -> str:
    """A closed rectilinear ring as ``M x y`` then ``H``/``V`` steps."""
    pts = [(int(x), int(y)) for x, y in ring]
    parts = [f"M{pts[0][0]} {pts[0][1]}"]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:-1] if pts[-1] == pts[0] else pts[1:]):
        parts.append(f"H{x1}" if y1 == y0 else f"V{y1}" if x1 == x0 else f"L{x1} {y1}")
    return "".join(parts) + "Z"


def _heat_layer(model) -> tuple[str, str]:
    """The noisy histogram as an SVG ``<image>`` holding a PNG data URI."""
    hist = model.histogram
    if hist is None:
        return "", "This model was saved without its noisy histogram."
    g = hist.grid
    img, f, first = histogram_window(hist, (0, 0), g.shape, MAX_MAP_HEAT_PIXELS)
    floor = noise_floor(hist, f, model.spans.noise_margin)
    vmax = heat_scale(img, floor)
    rgba = heat_rgba(img, vmax, floor)
    # PNG rows run top to bottom: highest y first.
    png = _png(np.ascontiguousarray(np.transpose(rgba, (1, 0, 2))[::-1]))
    lo = g.lower + np.asarray(first) * g.width
    hi = lo + np.asarray(img.shape) * f * g.width
    per = "cell" if f == 1 else f"{f}×{f} cells"
    note = (
        f"Grey: the released noisy histogram, log scale, darkest at ≥ {vmax:,.0f} per {per}; "
        f"counts below {floor:,.4g} (the noise margin) are noise and not drawn "
        "(part of the release: no privacy cost)."
    )
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    svg = (
        f'<image id="heat" href="{uri}" x="{_num(lo[0])}" y="{_num(-hi[1])}" '
        f'width="{_num(hi[0] - lo[0])}" height="{_num(hi[1] - lo[1])}" '
        f'preserveAspectRatio="none"/>'
    )
    return svg, note


def _png(rgba: np.ndarray) -> bytes:
    """PNG bytes of an (h, w, 4) uint8 image (8-bit RGBA, no filtering)."""
    h, w, _ = rgba.shape
    raw = np.zeros((h, 1 + 4 * w), dtype=np.uint8)  # each row starts with filter type 0
    raw[:, 1:] = rgba.reshape(h, 4 * w)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + chunk(b"IEND", b"")
    )


def _num(x: float) -> str:
    return f"{float(x):.10g}"


def _script_json(obj) -> str:
    # "</script>" inside a JSON string would end the script element early.
    return json.dumps(obj, allow_nan=False).replace("<", "\\u003c")


__all__ = ["map_html", "write_map", "MAX_MAP_HEAT_PIXELS"]
