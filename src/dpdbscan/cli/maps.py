"""``dpdbscan map`` (the interactive HTML map) and the picture options
``--size`` and ``--extent`` of ``fit``, ``sweep`` and ``plot``.

Both read only the saved release, so they cost no privacy budget.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

from ..model import SpanModel
from ..model.levels import is_levels
from ..render.context import MAX_CONTEXT_BYTES, load_context
from ..render.tiles import DEFAULT_MAX_ZOOM, Tiles
from .common import EXIT_OK, ArgTarget, WarningSink, atomic_write, check_writable
from .common import read_model as load_model

TILES = "--tiles 'https://tile.example.org/{z}/{x}/{y}.png' --attribution \"(c) the tiles' owners\""

EXAMPLES = f"""examples:
  # one self-contained HTML file: pan, zoom, hover a span for its numbers
  dpdbscan map out/cabs_tiny.spans.json -o spans.html

  # default output: next to the model (out/cabs_tiny.spans.html)
  dpdbscan map out/cabs_tiny.spans.json --title "Cabs-tiny, epsilon = 1"

  # streets or a coastline under the spans, from a GeoJSON file of your own
  # (offline: the lines go into the one HTML file)
  dpdbscan map out/cabs_tiny.spans.json -o spans.html --context docs/examples/sf_context.geojson

  # a basemap of XYZ tiles from a tile server you may use (online: loaded while the page is viewed)
  dpdbscan map out/cabs_tiny.spans.json -o spans.html {TILES}
"""

CONTEXT_HELP = (
    "lines to draw under the spans, such as streets or a coastline: a GeoJSON file of "
    "LineStrings or Polygons in longitude/latitude (data units for models without --geo), "
    f"at most {MAX_CONTEXT_BYTES // 2**20} MB; clipped to the public box and simplified. "
    "Public input: it is not part of the release"
)

_SIZE = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*$")


def size_arg(text: str) -> tuple[int, int]:
    """``--size 1200x900`` -> (1200, 900)."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"--size must be WIDTHxHEIGHT in pixels, such as 1200x900, got {text!r}")
    w, h = int(m.group(1)), int(m.group(2))
    if not (16 <= w <= 20_000 and 16 <= h <= 20_000):
        raise ValueError(f"--size must be between 16 and 20000 pixels on each side, got {text!r}")
    return w, h


def add_picture_options(group: ArgTarget) -> None:
    """--size and --extent for the commands that draw the spans picture."""
    group.add_argument(
        "--size",
        metavar="WxH",
        help="picture size in pixels, such as 1200x900 (default: 900 wide, as high as the spans need)",
    )
    group.add_argument(
        "--extent",
        nargs=4,
        type=float,
        metavar=("XMIN", "YMIN", "XMAX", "YMAX"),
        help="show only this box (lon_min lat_min lon_max lat_max for --geo "
        "models; default: around the spans)",
    )


def picture_options(args: argparse.Namespace) -> dict:
    """Validated ``size``, ``extent`` and ``context`` keyword arguments for
    the picture (checked before any data is read); empty when none was given.
    ``context`` (the path of a context layer, :func:`dpdbscan.render.plotting.plot_model`)
    is taken from ``args.context`` when the command has that option."""
    out: dict = {}
    if getattr(args, "size", None) is not None:
        out["size"] = size_arg(args.size)
    if getattr(args, "extent", None) is not None:
        x0, y0, x1, y1 = args.extent
        if not all(map(math.isfinite, args.extent)) or not (x0 < x1 and y0 < y1):
            raise ValueError("--extent must be XMIN YMIN XMAX YMAX with XMIN < XMAX and YMIN < YMAX")
        out["extent"] = (x0, y0, x1, y1)
    if getattr(args, "context", None) is not None:
        # read with the model (it needs the projection); only its presence is checked here
        if not Path(args.context).is_file():
            raise ValueError(f"--context {args.context}: no such file")
        out["context"] = args.context
    if out and getattr(args, "no_png", False):
        raise ValueError("--size, --extent and --context shape the PNG; they cannot go with --no-png")
    return out


def other_views(model: SpanModel) -> str:
    """What a model beyond 2-D (3-D readings, 6-D features) can be looked
    at with, where the pictures and the map of the plane cannot draw it:
    ``plot --kind tree`` for an automatic fit's levels, ``info``,
    ``explore --no-png``, and ``predict``'s labels to draw yourself."""
    tree = (
        "dpdbscan plot --kind tree draws this model's condensed tree (any dimension); "
        if is_levels(model)
        else "dpdbscan plot --kind tree draws the condensed tree of an automatic fit "
        "(--min-samples auto) in any dimension, and this model has none; "
    )
    return (
        f"{tree}'dpdbscan info' describes its spans and 'dpdbscan explore --no-png' tabulates them at "
        "other eps and min_samples; to look at the points, label them with 'dpdbscan predict' and draw "
        "two columns at a time with a plotting tool of yours (the labels are not a DP release)"
    )


def cmd_map(args: argparse.Namespace, sink: WarningSink) -> int:
    """Write the interactive map of a saved model."""
    model = load_model(args.model)
    if model.grid.d != 2:
        raise ValueError(f"the map needs a 2-D model, {args.model} is {model.grid.d}-D: {other_views(model)}")
    out = Path(args.output) if args.output else Path(args.model).with_suffix(".html")
    check_writable([out], source=args.model)
    tiles = None
    if args.tiles is not None:
        tiles = Tiles(args.tiles, args.attribution, args.tiles_max_zoom)
        if model.metadata.get("projection") is None:
            raise ValueError(
                f"--tiles needs a geographic model (fitted with --geo): {args.model} is in data units"
            )
    elif args.attribution is not None or args.tiles_max_zoom != DEFAULT_MAX_ZOOM:
        raise ValueError("--attribution and --tiles-max-zoom go with --tiles")
    context = None
    if args.context is not None:
        context = load_context(args.context, model)
        print(f"note: {context.describe()}", file=sys.stderr)
    # lazy: the map's modules load only in the command that writes one
    from ..render.webmap import map_html

    text = map_html(model, title=args.title, context=context, tiles=tiles)
    atomic_write(out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    print(f"wrote {out}")
    return EXIT_OK


def register(sub: object, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add the ``map`` subcommand (``add`` is main's helper for subparsers)."""
    p = add(
        "map",
        "write an interactive HTML map of a saved model (one self-contained file; offline unless --tiles)",
        cmd_map,
    )
    p.add_argument("model", help="span model JSON written by 'dpdbscan fit' (2-D)")
    p.add_argument("-o", "--output", help="HTML path (default: MODEL with .html)")
    p.add_argument("--title", help="title of the page (default: number of spans and epsilon)")
    p.add_argument("--context", metavar="GEOJSON", help=CONTEXT_HELP)
    p.add_argument(
        "--tiles",
        metavar="URL",
        help="a basemap of XYZ tiles under the spans, from this URL template with {z}, {x} and {y} "
        "(such as https://tile.example.org/{z}/{x}/{y}.png; geographic models only). The page then "
        "loads tiles from that server while it is viewed; without --tiles it is offline",
    )
    p.add_argument(
        "--attribution",
        metavar="TEXT",
        help="the credit the tile source asks for, shown in the map's corner (default: its host)",
    )
    p.add_argument(
        "--tiles-max-zoom",
        type=int,
        default=DEFAULT_MAX_ZOOM,
        metavar="Z",
        help=f"the deepest zoom level the tile source serves (default {DEFAULT_MAX_ZOOM}; deeper views "
        "stretch its tiles)",
    )


__all__ = ["EXAMPLES", "add_picture_options", "picture_options", "size_arg", "cmd_map", "register"]
