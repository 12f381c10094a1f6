"""The option groups the commands share (argparse), defined once: fit,
sweep and check read points and take the DBSCAN, domain and privacy options
alike, so that their parsing and their errors are the same."""

from __future__ import annotations

import argparse
from typing import Any

from ..files import FORMATS
from ..params.parameters import PARAMETERS
from ..post.coretests import CORE_TESTS
from .common import ArgTarget, number_or_text
from .maps import add_picture_options

#: The command line's defaults are the parameter table's.
DEFAULTS = {name: param.default for name, param in PARAMETERS.items()}


def add_table_option(g: ArgTarget, name: str, **kw: Any) -> None:
    """The option of the parameter table's ``name``: its flag and its default
    are the table's (:data:`~dpdbscan.params.parameters.PARAMETERS`), the
    rest (type, metavar, help) what ``kw`` says."""
    flag = PARAMETERS[name].cli
    if flag is None:
        raise ValueError(f"the parameter {name!r} has no command-line option")
    g.add_argument(flag, default=DEFAULTS[name], **kw)


def add_input_options(p: ArgTarget, *, dask: bool = False, model: bool = False) -> None:
    """How to read a points file: fit, sweep, predict, plot and check
    (``model``: predict and plot, whose points take a saved model's
    coordinates, not --bounds or --geo)."""
    g = p.add_argument_group("reading points")
    g.add_argument(
        "--columns",
        nargs="+",
        metavar="COL",
        help="columns to use, by name or 0-based index (default: every column except "
        "'label' and unnamed index columns; "
        + ("with a --geo model" if model else "with --geo")
        + ", columns named lon/lat if present"
        + ("; with --backend dask, names only)" if dask else ")"),
    )
    g.add_argument(
        "--delimiter",
        help="CSV separator (default: tab for .tsv/.tab files, else ','; never guessed from the file)",
    )
    h = g.add_mutually_exclusive_group()
    h.add_argument(
        "--header",
        action="store_true",
        help="the CSV's first line is a header naming the columns (CSV input needs --header or "
        "--no-header; --columns with names implies --header)",
    )
    h.add_argument(
        "--no-header",
        action="store_true",
        help="the CSV has no header: every line is a record (choose columns by 0-based index)",
    )
    g.add_argument(
        "--fields",
        type=int,
        metavar="N",
        help="fields on each line of a CSV without a header (default: the number of coordinates "
        + ("of the model" if model else "the bounds give")
        + "); lines with another number are dropped",
    )
    g.add_argument(
        "--format",
        choices=FORMATS,
        help="file format (default: from the file name's extension; standard input '-' is csv)",
    )
    t = g.add_mutually_exclusive_group()
    t.add_argument(
        "--table",
        metavar="NAME",
        help="SQLite or GeoPackage input: the table (or view) that holds the points (default: the "
        "file's only table; a GeoPackage's only feature table)",
    )
    t.add_argument(
        "--query",
        metavar="SQL",
        help="SQLite input: a SELECT statement whose result holds the points, run on the database "
        "opened read-only (its columns by name, as a table's)",
    )


def add_dbscan_options(p: ArgTarget, *, sweep: bool = False, required: bool = True) -> None:
    """eps, MinPts and what shapes the core test (``required=False``: check)."""
    g = p.add_argument_group("DBSCAN")
    g.add_argument(
        "--eps",
        "--alpha",
        required=required,
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
        add_table_option(
            g,
            "max_cells",
            type=number_or_text,
            metavar="N",
            help="--eps auto: public cap on the cells of its one release (default 2^20)",
        )
        g.add_argument(
            "--n-expected",
            type=number_or_text,
            metavar="N",
            help="your public guess of the number of points: --eps auto sizes its "
            "release to it (about N epsilon / 0.3 cells; 20,000 assumed), and a fit "
            "warns before counting when a dense release would merge clusters through its noise",
        )
        add_table_option(
            g,
            "selection",
            choices=("levels", "one-eps", "flat"),
            help="--min-samples auto: 'levels' (default) takes each cluster at its own MinPts "
            "of the release's density tree, and at a larger candidate eps where only that eps "
            "shows it whole (event level, 2-D); 'one-eps' every span at the chosen eps; "
            "'flat' one (eps, MinPts) for all",
        )
    g.add_argument(
        "--min-samples",
        "--minpts",
        type=int if sweep else number_or_text,
        required=required,
        nargs="+" if sweep else None,
        metavar="MINPTS",
        help="MinPts (a point counts itself)"
        + (
            "; several values"
            if sweep
            else "; 'auto' with --eps auto chooses both from one release (docs/parameters.md)"
        ),
    )
    add_table_option(
        g,
        "eta",
        type=number_or_text,
        help="grid parameter in (0, 4]: cell width eta*eps/(4 sqrt d); 'auto' (default): 4, or in "
        "7-D/8-D where the coarse release acts 8 (docs/parameters.md); a number, 4 included, is kept",
    )
    add_table_option(
        g,
        "subcells",
        type=number_or_text,
        help="decide core cells and merge on sub-cells of width w/SUBCELLS "
        "('auto' = 2 for d <= 3, else 1; 1 = the paper's procedure); no privacy cost",
    )
    add_table_option(
        g,
        "core",
        metavar="{" + ",".join(CORE_TESTS) + "}",
        help="core test: 'density' (default) estimates each sub-cell's "
        "eps-neighbourhood count and labels like DBSCAN (one-sided guarantee: no "
        "span reaches beyond the clusters); 'bound' is the paper's noisy upper "
        "bound with its two-sided sandwich guarantee",
    )
    add_table_option(
        g,
        "margin",
        type=number_or_text,
        metavar="MARGIN",
        help="density test: c of the margin c sigma ('auto' = 1); bound test: Gamma by "
        "'chernoff' (exact MGF; 'auto') or 'paper'",
    )
    add_table_option(
        g,
        "border",
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


def add_domain_options(p: ArgTarget, *, from_data: bool = True) -> None:
    """The public box and the projection (``from_data=False``: --bounds is
    required and --bounds-from-data not offered)."""
    b = p.add_argument_group("domain (public)")
    b.add_argument(
        "--bounds",
        nargs="+",
        required=not from_data,
        metavar="B",
        help="public bounds: lower_1 .. lower_d upper_1 .. upper_d, or one lower and one "
        "upper for all columns; with --geo: lon_min lat_min lon_max lat_max",
    )
    if from_data:
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
        help="public latitude where the projection is exact (default: centre of --bounds)",
    )
    b.add_argument(
        "--outside",
        choices=("clip", "drop"),
        help="a point outside the public --bounds: clipped onto the box's edge (clip, the default) or "
        "dropped (drop), each row alone. Clipped points pile up on the edge, where many (GPS fixes at "
        "(0, 0), a trip out of town) can make a span that is no place: drop them (before --stops or "
        "--trip-ends, which then see the unit's other rows)",
    )


def add_privacy_options(p: ArgTarget, *, seed: bool = True) -> None:
    """The budget and the histogram (``seed=False``: no noise is drawn)."""
    q = p.add_argument_group("privacy")
    add_table_option(q, "epsilon", type=float, help="privacy budget (default 1)")
    add_table_option(
        q,
        "delta",
        type=float,
        help="delta of an (epsilon, delta) release: needed by Gaussian noise (with --unit) "
        "and the stability histogram; say 1e-6 (default 0)",
    )
    add_table_option(
        q,
        "beta",
        type=float,
        help="failure probability of the guarantee (default 0.1; the paper's code used 0.5)",
    )
    add_table_option(
        q,
        "histogram",
        metavar="{auto,dense,sparse,stability}",
        help="naive histogram over all cells (dense), the paper's linear-time one "
        "(sparse) or the (epsilon, delta) stability one; 'auto' picks dense or "
        "sparse from public inputs: the number of cells, and in 4-D to 8-D at a "
        "fixed --eps and --min-samples (event level, delta 0, --core density) "
        "the cells within eps of a cell (more than 256: sparse) (default auto)",
    )
    add_table_option(
        q,
        "noise",
        metavar="{auto,discrete,laplace,gaussian}",
        help="exact discrete Laplace noise from the OS's secure randomness, the paper's "
        "floating-point Laplace (not exact), or the exact discrete Gaussian (needs --delta); "
        "'auto': Laplace when each row is its own unit, Gaussian with --unit (default auto)",
    )
    q.add_argument("--theta", type=float, help="threshold of the sparse histogram")
    if seed:
        q.add_argument(
            "--seed",
            type=int,
            help="reproducible but INSECURE noise (research only; default: OS randomness)",
        )


def add_unit_options(p: ArgTarget, *, column: bool = True) -> None:
    """The privacy unit and its contribution bounds (person-level releases);
    ``column``: with ``--unit`` (commands that read data)."""
    u = p.add_argument_group("privacy unit (person-level)")
    when = "with --unit: " if column else "a person-level release: "
    if column:
        u.add_argument(
            "--unit",
            metavar="COLUMN",
            help="the column that names each row's person (a cab, a user), by name (header or "
            "schema) or 0-based index: every row of one unit is protected together; rows without "
            "one are dropped. Without it each row is protected, not each person",
        )
        u.add_argument(
            "--unit-from",
            choices=("file", "folder"),
            help="the input is a folder of trace files, one per person or vehicle (GPX, CSV, "
            "GeoLife's PLT; --format says which): each file is one unit ('file', named by its path "
            "in the folder), or each first-level sub-folder with all its files ('folder'). Not "
            "with --unit",
        )
    add_table_option(
        u,
        "max_cells_per_unit",
        metavar="K",
        type=_int_or_auto,
        help=when
        + "the most cells one unit adds to (which ones: --cell-choice) "
        + (
            "(a number, or 'auto': chosen privately for 10%% of the budget, docs/parameters.md); "
            "required with --unit"
            if column
            else "(a number)"
        ),
    )
    add_table_option(
        u,
        "max_points_per_cell",
        metavar="M",
        type=_int_or_auto,
        help=when + "the most points one unit adds to a cell (default 1: a cell counts people)",
    )
    if column:
        add_table_option(
            u,
            "cell_choice",
            choices=("busiest", "uniform"),
            help="which K cells a unit with more keeps: its busiest (most points first, ties at "
            "random; the places it returns to) or K at random (default %(default)s; the guarantee "
            "is the same, docs/privacy.md)",
        )
    add_trace_options(p)


def add_trace_options(p: ArgTarget) -> None:
    """Places, not passage: each unit's stops or trip ends instead of its
    rows (dpdbscan.traces), before its contribution is bounded."""
    t = p.add_argument_group("places from traces (person-level: with --unit; docs/places.md)")
    t.add_argument(
        "--time",
        metavar="COLUMN",
        help="the column of each row's time, by name or 0-based index: unix seconds, ISO 8601 text "
        "(UTC unless it says otherwise; --tz's clock with --per) or a Parquet timestamp; a row with "
        "a bad time is dropped",
    )
    t.add_argument(
        "--time-unit",
        choices=("s", "ms", "us", "ns"),
        default="s",
        help="what a number in the --time column counts since 1970-01-01 UTC: seconds (s, the "
        "default), milliseconds (ms), microseconds (us) or nanoseconds (ns); ISO text and typed "
        "timestamps say their own",
    )
    t.add_argument(
        "--time-format",
        metavar="FORMAT",
        help="the layout of the --time column's text when it is not ISO 8601, in the codes of "
        "Python's datetime.strptime: e.g. '%%d/%%m/%%Y %%H:%%M:%%S' (day first), '%%m/%%d/%%Y "
        "%%I:%%M:%%S %%p'; UTC unless it has an offset (%%z) or --tz is given; a time that does not match is "
        "dropped with its row",
    )
    t.add_argument(
        "--stops",
        nargs=2,
        metavar=("RADIUS", "DURATION"),
        help="count each unit's stops instead of its rows: runs of its points (in time order) that "
        "stay within RADIUS of where they began for at least DURATION, one point (the first) per "
        "stop; e.g. --stops 100m 5min (RADIUS in the data's units without --geo)",
    )
    t.add_argument(
        "--straight-on",
        type=float,
        default=None,
        metavar="DEGREES",
        help="with --stops: a run the unit leaves going on the way it came (turning by less than "
        "DEGREES between its fixes three radii before and after) is a pause on the way, such as a "
        "jam, not a stop, and is dropped (default 0: every run is kept; 30 is the studied angle, "
        "docs/places.md)",
    )
    t.add_argument(
        "--trip-ends",
        metavar="COLUMN",
        help="count each unit's trip ends instead of its rows, from this status column: 0/1 "
        "(1: carrying; Cabs' occupied), booleans or the text true/false, or the two codes of "
        "--status-values; see --ends",
    )
    t.add_argument(
        "--status-values",
        nargs=2,
        metavar=("FREE", "CARRYING"),
        help="with --trip-ends: the status column's two codes, e.g. --status-values free hired "
        "(numbers too: --status-values 1 2); any other value drops its row",
    )
    t.add_argument(
        "--ends",
        choices=("pickup", "dropoff", "both"),
        help="with --trip-ends: a ride's first point (pickup, the default), its last (dropoff) or both",
    )


def _int_or_auto(text: str) -> int | str:
    """An option's integer (checked by the parameter table later), or 'auto'."""
    t = text.strip()
    if t.lower() == "auto":
        return "auto"
    try:
        return int(t)
    except ValueError:
        try:
            return float(t)  # type: ignore[return-value]  # the table says what is wrong with it
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number or 'auto', got {t!r}") from None


def add_ledger_options(p: ArgTarget) -> None:
    """--ledger and --dataset: charge the release to a lifetime budget."""
    g = p.add_argument_group("lifetime budget")
    g.add_argument(
        "--ledger",
        metavar="LEDGER",
        help="charge this release to a privacy budget ledger (made by 'dpdbscan ledger init'): its "
        "cost is reserved before any record is read, and the command is refused (exit status 2, "
        "nothing read or written) when the dataset's lifetime budget would be exceeded",
    )
    g.add_argument("--dataset", metavar="NAME", help="with --ledger: the dataset whose budget is charged")


def add_fit_options(p: ArgTarget, *, sweep: bool) -> None:
    """Every option of fit (and, with ``sweep``, of sweep)."""
    add_dbscan_options(p, sweep=sweep)
    add_domain_options(p)
    add_privacy_options(p)
    add_unit_options(p)
    add_ledger_options(p)
    c = p.add_argument_group("computing")
    add_table_option(
        c,
        "backend",
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
