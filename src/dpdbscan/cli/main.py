"""The ``dpdbscan`` command: fit, sweep, predict, plot, info, map, explore, forecast.

This module wires argparse; the commands live in :mod:`.fit` (fit), :mod:`.sweep` and
:mod:`.inspect` (predict, plot, info). See :mod:`.common` for the conventions
on standard output (the release) and standard error (private notes).
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from .common import EXIT_BAD_INPUT, EXIT_OK, _one_line, _Warnings, keep_freed_memory
from .explore import EXAMPLES as EXPLORE_EXAMPLES
from .explore import add_arguments as add_explore_arguments
from .explore import cmd_explore
from .fit import _number_or_text, _subcells_arg, cmd_fit
from .forecast import EXAMPLES as FORECAST_EXAMPLES
from .forecast import add_arguments as add_forecast_arguments
from .forecast import cmd_forecast
from .inspect import cmd_info, cmd_plot, cmd_predict
from .maps import EXAMPLES as MAP_EXAMPLES
from .maps import add_picture_options
from .maps import register as register_map
from .sweep import cmd_sweep

STREAMS = (
    "Standard output carries only the release (summaries, tables, labels you ask for). "
    "Standard error carries progress and private notes about the input, such as how many "
    "rows were read, dropped or clipped: they describe the private data, so never publish "
    "them (--quiet turns them off)."
)

DATA = "../shared/data/cabs_tiny.csv.gz"
BOX = "-122.48 37.72 -122.38 37.82"

EXAMPLES = {
    "fit": f"""examples:
  # Cabs-tiny as in the paper: lon/lat in degrees, alpha = 50 m, MinPts = 1000
  dpdbscan fit {DATA} --geo --bounds {BOX} --eps 50m --min-samples 1000 --out-dir out

  # plain coordinates with public bounds [0, 700] x [0, 500]
  dpdbscan fit points.csv --columns x y --bounds 0 0 700 500 --eps 12 --min-samples 20
""",
    "predict": f"""examples:
  dpdbscan predict out/cabs_tiny.spans.json {DATA} -o labels.csv
  dpdbscan predict model.json new_points.parquet --with-points > labelled.csv
""",
    "sweep": f"""examples:
  # one release, spans for three MinPts (no extra privacy budget)
  dpdbscan sweep {DATA} --geo --bounds {BOX} --eps 50m --min-samples 500 1000 2000 --out-dir sweep

  # every pair of three eps and two MinPts, from one release made at 50 m
  dpdbscan sweep {DATA} --geo --bounds {BOX} --eps 50m 75m 100m --min-samples 1000 2000 --out-dir sweep

  # re-parameterise a saved model
  dpdbscan sweep --model out/cabs_tiny.spans.json --eps 50m 100m --min-samples 1500 3000 --out-dir sweep
""",
    "plot": f"""examples:
  dpdbscan plot out/cabs_tiny.spans.json --kind histogram -o hist.png
  dpdbscan plot out/cabs_tiny.spans.json --kind sums
  dpdbscan plot out/cabs_tiny.spans.json --kind labels --points {DATA} -o labels.png
  dpdbscan plot out/cabs_tiny.spans.json --extent -122.42 37.78 -122.39 37.81 --size 1200x900
""",
    "info": """examples:
  dpdbscan info out/cabs_tiny.spans.json
  dpdbscan info out/cabs_tiny.spans.json --json
""",
    "map": MAP_EXAMPLES,
    "forecast": FORECAST_EXAMPLES,
    "explore": EXPLORE_EXAMPLES,
}


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump) and exit status 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# --------------------------------------------------------------------------- #
# the parser


def _add_input_options(p, *, dask: bool = False):
    g = p.add_argument_group("reading points")
    g.add_argument(
        "--columns",
        nargs="+",
        metavar="COL",
        help="columns to use, by name or 0-based index (default: every column except "
        "'label' and unnamed index columns; with --geo, columns named lon/lat if "
        "present" + ("; with --backend dask, names only)" if dask else ")"),
    )
    g.add_argument(
        "--delimiter",
        default=None,
        help="CSV separator (default: sniffed from the header line among , ; tab |)",
    )
    h = g.add_mutually_exclusive_group()
    h.add_argument(
        "--header",
        action="store_true",
        help="the CSV's first line is a header (default: a first line of numbers only is read as data)",
    )
    h.add_argument("--no-header", action="store_true", help="the CSV has no header row")


def _common_options() -> _Parser:
    """Options every command takes, before or after its name."""
    c = _Parser(add_help=False)
    c.add_argument(
        "--no-progress",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bars (they only show on a terminal anyway)",
    )
    c.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no private notes on standard error (row counts and the like)",
    )
    return c


def _add_fit_options(p, *, sweep: bool):
    g = p.add_argument_group("DBSCAN")
    g.add_argument(
        "--eps",
        "--alpha",
        required=True,
        metavar="ALPHA",
        nargs="+" if sweep else None,
        help="radius alpha; with --geo a length such as 50m or 0.05km (plain = km)"
        + (
            "; several values: one release at the smallest, the others re-parameterise "
            "it (with --model: any eps >= the model's release eps)"
            if sweep
            else "; 'auto': one release at a base resolution from public inputs, then eps "
            "chosen from it without labels"
        ),
    )
    if not sweep:
        g.add_argument(
            "--max-cells",
            type=_number_or_text,
            default=2**20,
            metavar="N",
            help="--eps auto: public cap on the cells of its one release (default 2^20)",
        )
        g.add_argument(
            "--n-expected",
            type=_number_or_text,
            default=None,
            metavar="N",
            help="your public guess of the number of points: --eps auto sizes its "
            "release to it (about N epsilon / 0.3 cells; 20,000 assumed)",
        )
    g.add_argument(
        "--min-samples",
        "--minpts",
        type=int if sweep else _number_or_text,
        required=True,
        nargs="+" if sweep else None,
        metavar="MINPTS",
        help="MinPts (a point counts itself)"
        + (
            "; several values"
            if sweep
            else "; 'auto' with --eps auto chooses both from one release (docs/parameters.md)"
        ),
    )
    g.add_argument(
        "--eta",
        type=float,
        default=4.0,
        help="grid parameter in (0, 4]; cell width eta*eps/(4 sqrt d) (default 4)",
    )
    g.add_argument(
        "--subcells",
        type=_subcells_arg,
        default="auto",
        help="decide core cells and merge on sub-cells of width w/SUBCELLS "
        "('auto' = 2 for d <= 3, else 1; 1 = the paper's procedure); no privacy cost",
    )
    g.add_argument(
        "--core",
        default="density",
        metavar="{density,bound}",
        help="core test: 'density' (default) estimates each sub-cell's "
        "eps-neighbourhood count and labels like DBSCAN (one-sided guarantee: no "
        "span reaches beyond the clusters); 'bound' is the paper's noisy upper "
        "bound with its two-sided sandwich guarantee",
    )
    g.add_argument(
        "--margin",
        default="auto",
        type=_number_or_text,
        metavar="MARGIN",
        help="density test: c of the margin c sigma ('auto' = 1); bound test: Gamma by "
        "'chernoff' (exact MGF; 'auto') or 'paper'",
    )
    g.add_argument(
        "--border",
        default="auto",
        help="predict: a point within this distance of a core sub-cell centre (density) "
        "or core sub-cell (bound) joins its span ('auto' = eps for density, half a "
        "sub-cell diameter for bound; 0 = cell membership only; with --geo a length "
        "like 10m)",
    )
    g.add_argument(
        "--theoretical-threshold",
        action="store_true",
        help="bound test: core iff UB~ >= MinPts (default: the paper's practical MinPts + tau)",
    )
    b = p.add_argument_group("domain (public)")
    b.add_argument(
        "--bounds",
        nargs="+",
        metavar="B",
        help="public bounds: lower_1 .. lower_d upper_1 .. upper_d, or one lower and one "
        "upper for all columns; with --geo: lon_min lat_min lon_max lat_max",
    )
    b.add_argument(
        "--bounds-from-data",
        action="store_true",
        help="take the bounds from the data: leaks privacy, voids the guarantee",
    )
    b.add_argument(
        "--geo", action="store_true", help="columns are longitude, latitude in degrees; project to km"
    )
    b.add_argument(
        "--ref-lat",
        type=float,
        default=None,
        help="public latitude where the projection is exact (default: centre of --bounds)",
    )
    q = p.add_argument_group("privacy")
    q.add_argument("--epsilon", type=float, default=1.0, help="privacy budget (default 1)")
    q.add_argument("--delta", type=float, default=0.0, help="delta, for the stability histogram (default 0)")
    q.add_argument(
        "--beta",
        type=float,
        default=0.1,
        help="failure probability of the guarantee (default 0.1; the paper's code used 0.5)",
    )
    q.add_argument(
        "--histogram",
        default="auto",
        metavar="{auto,dense,sparse,stability}",
        help="naive histogram over all cells (dense), the paper's linear-time one "
        "(sparse) or the (epsilon, delta) stability one; 'auto' picks dense or "
        "sparse from the number of cells alone (public) (default auto)",
    )
    q.add_argument(
        "--noise",
        default="discrete",
        metavar="{discrete,laplace}",
        help="exact discrete Laplace noise from the OS's secure randomness (default), "
        "or the paper's floating-point Laplace (not exact)",
    )
    q.add_argument("--theta", type=float, default=None, help="threshold of the sparse histogram")
    q.add_argument(
        "--seed",
        type=int,
        default=None,
        help="reproducible but INSECURE noise (research only; default: OS randomness)",
    )
    c = p.add_argument_group("computing")
    c.add_argument(
        "--backend",
        default="numpy",
        metavar="{numpy,dask}",
        help="count cells in memory (numpy, default) or on a Dask cluster",
    )
    c.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler address (--backend dask)")
    o = p.add_argument_group("output")
    o.add_argument("--out-dir", default=".", help="folder for the outputs (default: current folder)")
    o.add_argument("--name", help="base name of the outputs (default: input file name)")
    if not sweep:
        o.add_argument("--json", help="path of the span model (default OUT_DIR/NAME.spans.json)")
        o.add_argument("--geojson", help="path of the GeoJSON (default OUT_DIR/NAME.spans.geojson)")
        o.add_argument("--png", help="path of the picture (default OUT_DIR/NAME.spans.png)")
    o.add_argument("--no-geojson", action="store_true", help="do not write GeoJSON")
    o.add_argument("--no-png", action="store_true", help="do not draw the picture")
    add_picture_options(o)


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    common = _common_options()
    parser = _Parser(
        prog="dpdbscan",
        formatter_class=fmt,
        parents=[common],
        description="Differentially private DBSCAN that publishes cluster spans "
        "(Qiu and Yi, 'Approximate DBSCAN under Differential Privacy').\n\n" + STREAMS,
        epilog=EXAMPLES["fit"] + "\nsee 'dpdbscan COMMAND --help' for each command",
    )
    parser.add_argument("--version", action="version", version=f"dpdbscan {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name, help_, func):
        p = sub.add_parser(
            name,
            help=help_,
            description=help_ + "\n\n" + STREAMS,
            epilog=EXAMPLES[name],
            formatter_class=fmt,
            parents=[common],
        )
        p.set_defaults(func=func)
        return p

    p = add("fit", "release DP spans of a data file; write JSON, GeoJSON and PNG", cmd_fit)
    p.add_argument(
        "input",
        help="CSV (optionally gzipped; - reads standard input), Parquet or .npy; "
        "with --backend dask a path or glob",
    )
    _add_input_options(p, dask=True)
    _add_fit_options(p, sweep=False)

    p = add("predict", "label points with a saved model (-1 = noise); CSV out", cmd_predict)
    p.add_argument("model", help="span model JSON written by 'dpdbscan fit'")
    p.add_argument("points", help="points to label (lon/lat for a --geo model)")
    p.add_argument("-o", "--output", default="-", help="labels CSV (default: standard output)")
    p.add_argument("--with-points", action="store_true", help="write the point columns before the label")
    _add_input_options(p)

    p = add("sweep", "spans for several eps and MinPts from one release, at no extra budget", cmd_sweep)
    p.add_argument("input", nargs="?", help="data file to fit once (or use --model)")
    p.add_argument("--model", help="re-parameterise this saved model instead of fitting")
    _add_input_options(p, dask=True)
    _add_fit_options(p, sweep=True)
    # With --model the DBSCAN radius defaults to the model's.
    for a in p._actions:
        if a.dest == "eps":
            a.required = False
    # so that sweep --model can refuse options that would shape a new release
    p.set_defaults(option_defaults={a.dest: a.default for a in p._actions})

    p = add("plot", "draw the noisy histogram, neighbour sums, spans or labels", cmd_plot)
    p.add_argument("model", help="span model JSON")
    p.add_argument(
        "--kind",
        choices=["histogram", "sums", "spans", "labels"],
        default="spans",
        help="what to draw: the noisy histogram, its neighbour sums, the spans "
        "(default) or the labels of --points; all but 'labels' (and spans over "
        "--points) are part of the release",
    )
    p.add_argument("--points", help="points to label (--kind labels) or to draw under the spans")
    p.add_argument("-o", "--output", help="PNG path (default: MODEL.KIND.png)")
    p.add_argument("--dpi", type=int, default=120, help="resolution of the PNG (default 120)")
    p.add_argument("--max-points", type=int, default=200_000, help="subsample big point files for drawing")
    add_picture_options(p)
    _add_input_options(p)

    p = add("info", "print a model's parameters and guarantees", cmd_info)
    p.add_argument("model", help="span model JSON")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    register_map(sub, add)

    p = add(
        "explore",
        "spans over a grid of (eps, MinPts) from a saved release: figure and table (no budget)",
        cmd_explore,
    )
    add_explore_arguments(p)

    p = add(
        "forecast", "what a release would detect, before any budget is spent (reads no data)", cmd_forecast
    )
    add_forecast_arguments(p)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``dpdbscan`` command; returns the exit status.

    ``argv=None`` (the command itself: the console script or ``python -m
    dpdbscan``) reads ``sys.argv`` and also tunes the allocator for a
    short-lived process (:func:`.common.keep_freed_memory`).
    """
    if argv is None:
        keep_freed_memory()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_BAD_INPUT
    # given before or after the command name (or not at all)
    args.no_progress = getattr(args, "no_progress", False)
    args.quiet = getattr(args, "quiet", False)
    try:
        with _Warnings(sys.stderr) as sink:
            return args.func(args, sink)
    except BrokenPipeError:
        # A reader such as `head` closed the pipe: not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"dpdbscan: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("dpdbscan: interrupted", file=sys.stderr)
        return 130


__all__ = ["main", "build_parser"]
