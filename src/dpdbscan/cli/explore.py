"""``dpdbscan explore``: spans over a grid of (eps, MinPts) from a saved
release, as one figure of small multiples and a table. Reads the model only,
so it costs no privacy budget."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..geometry import projection
from ..model.describe import release_count, second_lines
from ..params.parameters import check_param
from ..prepare import read_length
from .common import EXIT_OK, EXIT_PARTIAL, ArgTarget, WarningSink, atomic_write, check_writable, one_line
from .common import read_model as load_model

EXAMPLES = """examples:
  # the default 5 x 5 grid, PNG and CSV next to the model: for a model fitted at
  # eps = 50m, MinPts = 1000, eps 50m 71m 100m 141m 200m x MinPts 250 .. 4000
  dpdbscan explore out/cabs_tiny.spans.json

  # the figure and the table in a folder of their own
  dpdbscan explore out/cabs_tiny.spans.json --out-dir explore

  # a chosen grid
  dpdbscan explore out/cabs_tiny.spans.json --eps 50m 70m 100m --min-samples 500 1000 2000 \\
      -o explore.png --table explore.csv
"""


def add_arguments(p: ArgTarget) -> None:
    p.add_argument("model", help="span model JSON saved with its noisy histogram")
    p.add_argument(
        "--eps",
        nargs="+",
        metavar="ALPHA",
        help="eps values, at or above the release's finest eps (the diagonal of its cells; "
        "with --geo models lengths like 50m). Default: five values, the model's eps x "
        "sqrt(2)^i for i = -2..2, moved up by factors of sqrt(2) until the smallest is at "
        "or above the finest eps; a model fitted at that eps (fit's default eta) gets "
        "eps x 1, 1.41, 2, 2.83, 4 (in 5-D and up, those whose neighbourhoods hold more cells "
        "than the core test weighs are left out, with a note)",
    )
    p.add_argument(
        "--min-samples",
        "--minpts",
        nargs="+",
        metavar="MINPTS",
        help="MinPts values; default: the model's MinPts x 2^j for j = -2..2 (x 1/4 .. x 4), or, "
        "when the noise margin swamps MinPts (every MinPts up to some N gives the same release), "
        "(N + 1) x sqrt(2)^j for j = 0..4: the MinPts that change the release",
    )
    p.add_argument("-o", "--output", help="figure PNG (default: MODEL.explore.png, in --out-dir if given)")
    p.add_argument("--table", help="table CSV (default: MODEL.explore.csv, in --out-dir if given)")
    p.add_argument(
        "--out-dir",
        help="folder for the figure and the table, as in fit and sweep (default: the model's folder)",
    )
    p.add_argument("--no-png", action="store_true", help="write the table only")
    p.add_argument("--dpi", type=int, default=100, help="resolution of the PNG (default 100)")


def cmd_explore(args: argparse.Namespace, sink: WarningSink) -> int:
    model = load_model(args.model)
    geo = projection.projection_of(model) is not None
    eps = None
    if args.eps:
        eps = [check_param("eps", read_length(t, geo=geo), cli=True) for t in args.eps]
        if "auto" in eps:
            raise ValueError("explore takes --eps numbers, not 'auto'")
    ms = None
    if args.min_samples:
        ms = []
        for t in args.min_samples:
            try:
                v = int(t)
            except ValueError:
                v = t
            m = check_param("min_samples", v, cli=True)
            if m == "auto":
                raise ValueError("explore takes --min-samples numbers, not 'auto'")
            ms.append(m)
    stem = Path(args.model).name.removesuffix(".json")
    base = (Path(args.out_dir) / stem) if args.out_dir else Path(args.model).with_name(stem)
    table = Path(args.table) if args.table else base.with_name(stem + ".explore.csv")
    png = (
        None if args.no_png else (Path(args.output) if args.output else base.with_name(stem + ".explore.png"))
    )
    if png is not None and model.grid.d != 2:
        raise ValueError(
            f"the explore figure needs a 2-D model, {args.model} is "
            f"{model.grid.d}-D: use --no-png for the table alone"
        )
    check_writable([table, png], source=args.model)
    # lazy: the drawing modules load only in the command that draws them
    from ..render import explorepanels as _explore

    ex = _explore.explore(model, eps, ms)
    left = [] if eps else sorted(set(_explore.default_grid(model)[0]) - set(ex.eps))
    if left:
        # the model's public grid alone decided it: no private note
        shown = ", ".join(projection.format_km(e) if geo else f"{e:.4g}" for e in left)
        print(
            f"dpdbscan: note: the default eps {shown} left out: in {model.grid.d}-D an "
            "eps-neighbourhood there holds more of this release's cells than the core test weighs "
            "(--eps chooses the values)",
            file=sys.stderr,
        )
    atomic_write(table, lambda t: _explore.write_table(ex, t))
    written, failed = [str(table)], []
    if png is not None:
        try:
            atomic_write(
                png, lambda t: _explore.save_figure(_explore.figure(ex, model, dpi=args.dpi), t, dpi=args.dpi)
            )
            written.append(str(png))
        except Exception as exc:  # the table is written: report the picture, keep the table
            failed.append(f"{png} ({one_line(exc)})")
    length = projection.format_km if geo else (lambda v: f"{v:g}")
    print(
        f"spans over {len(ex.eps)} eps x {len(ex.min_samples)} MinPts from {release_count(model)} "
        f"({_explore.release_words(model)}; made at eps={length(model.release.eps)}); exploring "
        "costs no budget"
    )
    two = second_lines(model)
    if two:
        print(two[0].strip())
        print(
            "explored: release one's histogram alone, so the table's spans are release one's (release two "
            "splits only the model's own spans)"
        )
    for line in _explore.table_lines(ex, model):
        print(line)
    for line in _explore.selection_lines(ex, model):
        print(line)
    print("wrote " + ", ".join(written))
    for f in failed:
        print(f"dpdbscan explore: error: could not write {f}", file=sys.stderr)
    return EXIT_PARTIAL if failed else EXIT_OK
