"""The ``dpdbscan`` command: fit, sweep, predict, plot, info, map, explore, forecast, check, ledger.

This module wires argparse (the shared option groups are in :mod:`.options`);
the commands live in :mod:`.fit` (fit), :mod:`.check` (check), :mod:`.sweep` and
:mod:`.inspect` (predict, plot, info), :mod:`.ledger` (ledger). See :mod:`.common` for the conventions
on standard output (the release) and standard error (private notes).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence

from .. import __version__
from . import forked
from .check import EXAMPLES as CHECK_EXAMPLES
from .check import add_arguments as add_check_arguments
from .check import cmd_check
from .common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    WarningSink,
    end_process,
    error_prefix,
    keep_freed_memory,
    one_line,
)
from .explore import EXAMPLES as EXPLORE_EXAMPLES
from .explore import add_arguments as add_explore_arguments
from .explore import cmd_explore
from .fit import cmd_fit
from .fitseries import add_period_options
from .forecast import EXAMPLES as FORECAST_EXAMPLES
from .forecast import add_arguments as add_forecast_arguments
from .forecast import cmd_forecast
from .inspect import cmd_info, cmd_plot, cmd_predict
from .ledger import EXAMPLES as LEDGER_EXAMPLES
from .ledger import register as register_ledger
from .maps import EXAMPLES as MAP_EXAMPLES
from .maps import add_picture_options
from .maps import register as register_map
from .options import add_fit_options, add_input_options
from .sweep import cmd_sweep

STREAMS = (
    "Standard output carries only the release (summaries, tables, labels you ask for). "
    "Standard error carries progress and private notes about the input, such as how many "
    "rows were read, dropped or clipped: they describe the private data, so never publish "
    "them (--quiet turns them off)."
)

DATA = '"$DPDBSCAN_DATA/cabs_tiny.csv.gz" --header'
BOX = "-122.48 37.72 -122.38 37.82"
CABS = '"$DPDBSCAN_DATA/cabs_tiny_cabs.csv.gz" --header --geo --columns x y'
PERSON = "--unit cab --max-cells-per-unit 500 --delta 1e-6"
STOPS = "--max-cells-per-unit auto --delta 1e-6 --time time --stops 100m 5min"
PLACES = f"--unit cab {STOPS}"
FOLDER = "--unit-from file --format gpx --geo --bounds LON0 LAT0 LON1 LAT1"

EXAMPLES = {
    "fit": f"""examples:
  # the shared data sets are read from $DPDBSCAN_DATA, as in the README:
  # export DPDBSCAN_DATA=/path/to/shared/data
  # Cabs-tiny as in the paper: lon/lat in degrees, alpha = 50 m, MinPts = 1000
  dpdbscan fit {DATA} --geo --bounds {BOX} --eps 50m --min-samples 1000 --out-dir out

  # plain coordinates with public bounds [0, 700] x [0, 500]
  dpdbscan fit points.csv --columns x y --bounds 0 0 700 500 --eps 12 --min-samples 20

  # person-level: protect each cab (column cab) with all its rows, not each row
  dpdbscan fit {CABS} --bounds {BOX} --eps 100m --min-samples 50 {PERSON}

  # places: where the cabs stop (within 100 m for 5 min or more), each cab protected,
  # k chosen privately (docs/places.md)
  dpdbscan fit {CABS} --bounds {BOX} --eps 200m --min-samples 30 {PLACES}

  # a folder of GPX files, one per vehicle (each file is one unit), the same places
  dpdbscan fit tracks/ {FOLDER} --eps 200m --min-samples 30 {STOPS}
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
    "check": CHECK_EXAMPLES,
    "explore": EXPLORE_EXAMPLES,
    "ledger": LEDGER_EXAMPLES,
}


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump) in the form every
    command uses (``dpdbscan COMMAND: error: ...``; its ``prog`` is
    ``dpdbscan COMMAND``) and exit status 2."""

    #: The command named on the line, for the errors the top-level parser
    #: reports (argparse leaves unrecognized arguments to it).
    command: str | None = None

    def error(self, message):
        prog = f"{self.prog} {self.command}" if self.command and self.prog == "dpdbscan" else self.prog
        self.exit(EXIT_BAD_INPUT, f"{prog}: error: {message}{argument_hint(message)} (see '{prog} --help')\n")


#: How an option of several values is written, for argparse's "expected 2
#: arguments" (its values, by the option's metavar, and an example).
SEVERAL = {"--stops": "--stops 100m 5min", "--status-values": "--status-values free hired"}

#: Units a newcomer writes apart from their number ("--stops 100m 5 min"):
#: argparse then finds the unit alone, an unrecognized argument.
LONE_UNITS = {"s", "sec", "secs", "min", "mins", "minutes", "h", "hr", "hours", "d", "days", "m", "km"}


def argument_hint(message: str) -> str:
    """What argparse's message about the command line leaves out: how an
    option of several values is written, or that a number and its unit are
    one value. The message quotes the command line only, never a file."""
    many = re.match(r"argument (--[\w-]+).*: expected (\d+) arguments?$", message)
    if many and many.group(1) in SEVERAL:
        return f"; write its values one after the other: {SEVERAL[many.group(1)]}"
    lone = re.match(r"unrecognized arguments: (.*)$", message)
    if lone and set(lone.group(1).split()) & LONE_UNITS:
        return "; a number and its unit are one value, without a space: 5min, 100m"
    return ""


def unknown_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """A message naming the long options of ``argv`` that the chosen command
    does not know (with the closest known one), or None. argparse reports a
    missing required option first, so a typo in one (``--min-smaples``) was
    reported only as the missing option."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    command = next((t for t in argv if not t.startswith("-")), None)
    if sub is None or command not in sub.choices:
        return None
    chosen = sub.choices[command]
    known = set(chosen._option_string_actions) | set(parser._option_string_actions)
    # a command with actions of its own (ledger init, ledger show): the action's options too
    nested = next((a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)), None)
    if nested is not None:
        action = next((t for t in argv if t in nested.choices), None)
        if action is not None:
            known |= set(nested.choices[action]._option_string_actions)
    bad = []
    for token in argv:
        if token == "--":
            break
        name = token.split("=", 1)[0]
        if name.startswith("--") and name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            bad.append(name + (f" (did you mean {close[0]}?)" if close else ""))
        elif _single_dash_long(name, known):
            # -epsilon for --epsilon; "-1" or "-122.4" are values, "-ofile" is -o with its value
            close = difflib.get_close_matches("-" + name, sorted(known), n=1)
            bad.append(name + (f" (did you mean {close[0]}?)" if close else ""))
    if not bad:
        return None
    return f"{error_prefix(command)} unknown option(s) {', '.join(bad)} (see 'dpdbscan {command} --help')"


def _single_dash_long(token: str, known: set[str]) -> bool:
    """Whether ``token`` is a long option written with one dash (``-epsilon``):
    a dash, a letter, more letters, and no known short option in front
    (``-inf`` is a number)."""
    try:
        float(token)
        return False
    except ValueError:
        pass
    return (
        len(token) > 2
        and token[0] == "-"
        and token[1].isalpha()
        and token[1:].replace("-", "").isalpha()
        and token[:2] not in known
    )


def _command_of(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (its first word that is one), or None."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    return next((t for t in argv if sub is not None and t in sub.choices), None)


# --------------------------------------------------------------------------- #
# the parser


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
        help="a data file: CSV (optionally gzipped; - reads standard input), Parquet, .npy, SQLite, "
        "GeoPackage, GeoJSON, GPX or PLT (by its extension or --format); a folder of trace files, one per "
        "person or vehicle, with --unit-from; with --backend dask a path or glob",
    )
    add_input_options(p, dask=True)
    add_fit_options(p, sweep=False)
    add_period_options(p)

    p = add(
        "predict",
        "label points with a saved model (-1 = noise); CSV out, not a DP release (labels of the "
        "fitted data are not protected)",
        cmd_predict,
    )
    p.add_argument("model", help="span model JSON written by 'dpdbscan fit'")
    p.add_argument("points", help="points to label (lon/lat for a --geo model)")
    p.add_argument("-o", "--output", default="-", help="labels CSV (default: standard output)")
    p.add_argument("--with-points", action="store_true", help="write the point columns before the label")
    add_input_options(p, model=True)

    p = add("sweep", "spans for several eps and MinPts from one release, at no extra budget", cmd_sweep)
    p.add_argument("input", nargs="?", help="data file to fit once (or use --model)")
    p.add_argument("--model", help="re-parameterise this saved model instead of fitting")
    add_input_options(p, dask=True)
    add_fit_options(p, sweep=True)
    p.add_argument(
        "--per",
        default=None,
        metavar="PERIOD",
        help="not for sweep (a series' table is a release per set of spans: the error says why); "
        "use 'fit --per', and 'forecast --per' or 'check --per' to see what each period could detect",
    )
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
        choices=["histogram", "sums", "spans", "labels", "tree"],
        default="spans",
        help="what to draw: the noisy histogram, its neighbour sums, the spans "
        "(default), the labels of --points, or the condensed tree of an automatic fit's "
        "level selection; all but 'labels' (and spans over "
        "--points) are part of the release; those two are marked PRIVATE in the picture",
    )
    p.add_argument("--points", help="points to label (--kind labels) or to draw under the spans")
    p.add_argument(
        "-o",
        "--output",
        help="PNG path (default: MODEL.KIND.png; MODEL.PRIVATE-KIND.png for a picture of --points)",
    )
    p.add_argument("--dpi", type=int, default=120, help="resolution of the PNG (default 120)")
    p.add_argument(
        "--max-points",
        type=int,
        default=200_000,
        help="subsample big point files for drawing: at most this many points (default 200,000)",
    )
    add_picture_options(p)
    add_input_options(p, model=True)

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

    p = add(
        "check",
        "dry run for the data owner: read a file as fit does and say, as private notes, what a "
        "fit would see (spends nothing, releases nothing)",
        cmd_check,
    )
    add_check_arguments(p)

    register_ledger(sub, add, parents=[common])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpdbscan`` command; returns the exit status.

    ``argv=None`` (the command itself: the console script or ``python -m
    dpdbscan``) reads ``sys.argv`` and also tunes the allocator for a
    short-lived process (:func:`.common.keep_freed_memory`).
    """
    if argv is None:
        keep_freed_memory()
        return end_process(_run(None))
    return _run(argv)


def _run(argv: Sequence[str] | None) -> int:
    try:
        return _parsed_and_run(argv)
    finally:
        # a copy forked to draw a picture that was never sent (forked at
        # the start, :mod:`.early`, also when the words were refused)
        forked.cancel_waiting()


def _parsed_and_run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    words = sys.argv[1:] if argv is None else [str(a) for a in argv]
    if isinstance(parser, _Parser):
        parser.command = _command_of(parser, words)
    unknown = unknown_options(parser, words)
    if unknown:
        print(unknown, file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_BAD_INPUT
    # given before or after the command name (or not at all)
    args.no_progress = getattr(args, "no_progress", False)
    args.quiet = getattr(args, "quiet", False)
    try:
        with WarningSink(sys.stderr) as sink:
            return args.func(args, sink)
    except BrokenPipeError:
        # A reader such as `head` closed the pipe: not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"{error_prefix(args.command)} {one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("dpdbscan: interrupted", file=sys.stderr)
        return 130


__all__ = ["main", "build_parser"]
