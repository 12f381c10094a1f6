"""``dpdbscan ledger`` (init, show) and ``--ledger`` for the commands that spend.

A ledger is an SQLite file of lifetime budgets and the releases charged to
them (:mod:`dpdbscan.ledger`). ``fit`` and ``sweep`` (when it fits a data
file) reserve their release's cost with :func:`charging` after the public
options are checked and **before any record is read**; a refusal exits with
status 2 and nothing read or written. Everything else (``predict``, ``map``,
``plot``, ``info``, ``explore``, ``forecast``, ``check``, ``sweep --model``)
releases nothing new and spends nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files.tracefolder import LEDGER_UNIT, UNIT_FROM, UNIT_WORDS, unit_words
from ..ledger import (
    ACCOUNTINGS,
    SCHEMA_VERSION,
    Cost,
    Ledger,
    Reservation,
    read_ledger,
    release_cost,
    upper_cost,
)
from ..ledger.store import Account, Release
from ..model.describe import SEEDED_RECORD
from ..params.parameters import grid_eta
from ..plan.autoplan import PLACE_EXTENT_KM
from ..plan.resolve import costliest, resolve
from ..prepare import project_box, split_bounds
from ..prepare.door import declared_dimension
from .common import EXIT_OK, ArgTarget, WarningSink
from .fitoptions import FitOptions

if TYPE_CHECKING:
    from ..model.record import SpanModel

EXAMPLES = """examples:
  # a lifetime budget of epsilon = 5 for the dataset 'cabs'
  dpdbscan ledger init budget.ledger --dataset cabs --epsilon 5

  # person level: a lifetime (epsilon, delta) per cab, for fits with --unit cab, counted by
  # zCDP (rho's add: many Gaussian fits cost less than by the default basic composition)
  dpdbscan ledger init budget.ledger --dataset people --epsilon 2 --delta 1e-6 --unit cab --accounting zcdp

  # every fit charges it; the sixth at epsilon = 1 is refused (exit status 2)
  dpdbscan fit "$DPDBSCAN_DATA/cabs_tiny.csv.gz" --header --geo --bounds -122.48 37.72 -122.38 37.82 \\
      --eps 50m --min-samples 1000 --ledger budget.ledger --dataset cabs

  # spent and remaining per dataset, and every release
  dpdbscan ledger show budget.ledger
  dpdbscan ledger show budget.ledger --json

  # plan: the epsilon of each of 52 weekly fits within what the budget has left (nothing spent)
  dpdbscan forecast --geo --bounds -122.6 37.55 -122.3 37.85 --eps 200m --min-samples 30 \\
      --unit cab --max-cells-per-unit 50 --delta 1e-6 --periods 52 \\
      --ledger budget.ledger --dataset people
"""


_ACTIONS = {
    "init": (
        "register a dataset's lifetime budget (making the ledger file if there is none)",
        "Register a dataset's lifetime privacy budget in a ledger file (made if missing). "
        "A dataset is registered once; its budget is never reset.",
    ),
    "show": (
        "spent and remaining per dataset, and every release",
        "Print each dataset's lifetime budget, what its releases spent together (and by which "
        "composition), what remains, and every release.",
    ),
}


#: Each action's options after the ledger file: flag -> ``add_argument``'s keywords.
_OPTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "init": {
        "--dataset": {"metavar": "NAME", "required": True, "help": "the dataset's name"},
        "--epsilon": {"type": float, "required": True, "help": "the lifetime epsilon (> 0)"},
        "--delta": {
            "type": float,
            "default": 0.0,
            "help": "the lifetime delta (default 0; person-level releases need one, e.g. 1e-6)",
        },
        "--unit": {
            "metavar": "COLUMN",
            "help": "a budget per person: each value of this column (as fit's --unit) is protected "
            "for its lifetime, and only releases with --unit COLUMN are charged to it. Default: a "
            "budget per row (event level), for releases without --unit",
        },
        "--accounting": {
            "choices": ACCOUNTINGS,
            "help": "the rule that admits releases, fixed for the dataset's lifetime (valid however "
            "each release is chosen after the others): basic (default; epsilons add, deltas add; every "
            "kind of release) or zcdp (while all releases are pure their epsilons add, else their "
            "zCDP rho's add against the budget's, converted once: many Gaussian releases cost less; a "
            "release on the stability histogram is refused)",
        },
        "--unit-from": {
            "choices": UNIT_FROM,
            "help": "a budget per person where each file (file) or each first-level sub-folder (folder) "
            "of a folder of trace files is one unit, as fit's --unit-from: only such releases are "
            "charged to it",
        },
    },
    "show": {
        "--dataset": {"metavar": "NAME", "help": "only this dataset"},
        "--json": {"action": "store_true", "help": "machine-readable output"},
    },
}


def action_examples(name: str) -> str:
    """The examples of ``ledger NAME`` (those of :data:`EXAMPLES` that run it,
    with their comments), for its own --help."""
    blocks = EXAMPLES.removeprefix("examples:\n").split("\n\n")
    mine = [b.rstrip("\n") for b in blocks if f"dpdbscan ledger {name} " in b]
    return "examples:\n" + "\n\n".join(mine) + "\n"


def add_arguments(p: argparse.ArgumentParser, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """``ledger init`` and ``ledger show`` (each with the options of ``parents``)."""
    sub = p.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    for name, (short, long) in _ACTIONS.items():
        action = sub.add_parser(
            name,
            parents=list(parents),
            help=short,
            description=long,
            epilog=action_examples(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        action.add_argument("ledger", metavar="LEDGER", help="the ledger file (SQLite)")
        for flag, kw in _OPTIONS[name].items():
            action.add_argument(flag, **kw)


def cmd_ledger(args: argparse.Namespace, sink: WarningSink) -> int:
    if args.ledger_command == "init":
        if args.unit is not None and args.unit_from is not None:
            raise ValueError("ledger init: --unit COLUMN or --unit-from file|folder, not both")
        unit = args.unit if args.unit_from is None else LEDGER_UNIT[args.unit_from]
        accounting = "basic" if args.accounting is None else args.accounting
        led = Ledger.create(
            args.ledger, args.dataset, args.epsilon, args.delta, unit=unit, accounting=accounting
        )
        print(
            f"ledger {led.path}: dataset {led.dataset!r} registered with a lifetime budget of "
            f"epsilon={args.epsilon:g}, delta={args.delta:g} {_per(unit)}, accounting {accounting}"
        )
        if args.accounting is None and unit is not None and args.delta > 0:
            # public: from the options alone; said once, when the rule is fixed
            warnings.warn(
                f"dataset {led.dataset!r} is counted by basic composition (the default, fixed now): "
                "each release's epsilon and delta add, so two person-level fits at (epsilon=1, "
                "delta=1e-6) need a lifetime (2, 2e-6). Person-level releases use Gaussian noise by "
                "default, which 'ledger init --accounting zcdp' counts by its zCDP rho instead (those "
                "two cost epsilon 1.45 at delta 1e-6), at the price of refusing releases on the "
                "stability histogram (which --histogram auto picks on large grids; choose dense or "
                "sparse). A registered dataset's accounting never changes.",
                UserWarning,
                stacklevel=1,
            )
        return EXIT_OK
    if args.dataset is not None:
        accounts = [Ledger(args.ledger, args.dataset).account()]
    else:
        accounts = read_ledger(args.ledger)
    if args.json:
        doc = {"ledger": str(args.ledger), "schema_version": SCHEMA_VERSION}
        print(json.dumps({**doc, "datasets": [a.to_dict() for a in accounts]}, indent=2))
        return EXIT_OK
    print(f"ledger {args.ledger}: {len(accounts)} dataset(s)")
    for a in accounts:
        print("\n".join(account_lines(a)))
    return EXIT_OK


def _per(unit_column: str | None) -> str:
    if unit_column is None:
        return "per row (event level)"
    if unit_column in LEDGER_UNIT.values():
        return f"per person: {unit_words(unit_column)}"  # each file or sub-folder of a folder
    return f"per person ({unit_words(unit_column)})"


def _unit_cell(r: Release) -> str:
    """A release's unit in the table: event, or person and its column (or
    what one unit of a folder is)."""
    if r.unit_column is None:
        return r.unit
    folder = {LEDGER_UNIT[rule]: words for rule, words in UNIT_WORDS.items()}
    return f"{r.unit} ({folder.get(r.unit_column, r.unit_column)})"


def ledger_unit(opts: FitOptions) -> str | None:
    """The unit a release is charged with: its column's name, or for a
    folder of trace files (``--unit-from``) ``--unit-from file|folder``,
    which no column's name is confused with."""
    if opts.unit is None:
        return None
    rule = opts.read.unit_from
    return LEDGER_UNIT[rule] if rule is not None else str(opts.unit)


def account_lines(a: Account) -> list[str]:
    """One dataset's account in words, then its releases as a table."""
    s = a.spent
    unfinished = sum(r.status == "reserved" for r in a.releases)
    failed = sum(r.status == "failed" for r in a.releases)
    counted = f"{len(a.releases)} release(s)"
    if unfinished or failed:
        counted += f", of which {unfinished} reserved and never finished and {failed} failed, all counted"
    lines = [
        f"dataset {a.dataset!r}: lifetime budget epsilon={a.epsilon:g}, delta={a.delta:g} "
        + _per(a.unit_column)
        + f", accounting {a.accounting}",
        f"  spent    : epsilon={s.epsilon:.6g}, delta={s.delta:.3g} by {s.method} ({counted})",
    ]
    beside = ""
    if a.periods_to_come and a.held is not None:
        h = a.held
        series = ", ".join(f"series {sid}: {n} period(s) to come" for sid, n in a.periods_to_come.items())
        lines.append(
            f"  held     : epsilon={h.epsilon:.6g}, delta={h.delta:.3g} by {h.method}: what was spent and "
            f"what the planned series may still release ({series}), kept for them"
        )
        beside = ", beside what the series hold"
    lines.append(
        f"  remaining: epsilon={a.remaining_epsilon:.6g} "
        f"(the largest further pure epsilon-DP release that fits{beside})"
    )
    if not a.releases:
        return lines
    units = [_unit_cell(r) for r in a.releases]
    wide = max(4, *map(len, units))
    commands = [_command(r) for r in a.releases]
    cmd = max(7, *map(len, commands))
    lines.append(
        f"  {'id':>4}  {'status':<8}  {'reserved (UTC)':<29}  {'command':<{cmd}}  {'unit':<{wide}}  "
        f"{'epsilon':>7}  {'delta':>7}  {'rho':>9}  files"
    )
    for r, unit, command in zip(a.releases, units, commands):
        rho = "-" if r.cost.rho is None else f"{r.cost.rho:.4g}"
        lines.append(
            f"  {r.id:>4}  {r.status:<8}  {r.reserved:<29}  {command:<{cmd}}  {unit:<{wide}}  "
            f"{r.cost.epsilon:>7g}  {r.cost.delta:>7.3g}  {rho:>9}  {', '.join(r.files) or '-'}"
        )
    return lines


def _command(r: Release) -> str:
    """The command, and for a release of a series its series and period
    (``spans`` for the series' places)."""
    if r.series_id is None:
        return r.command
    return f"{r.command} [series {r.series_id}: {'spans' if r.period is None else r.period[:16]}]"


# --------------------------------------------------------------------------- #
# charging a release


def public_cost(opts: FitOptions, p: dict[str, Any]) -> Cost:
    """The cost of the release the options describe, from public inputs
    only (the options and the public box; no record read). When the options
    leave the number of columns to the file (``--bounds`` with two numbers
    and no ``--columns``), the grid and so the histogram are not known yet:
    the cost is then :func:`dpdbscan.ledger.upper_cost`, which no release at
    this (epsilon, delta) exceeds."""
    box = public_box_of(opts)
    if box is None:
        return upper_cost(p["epsilon"], p["delta"])
    return cost_in_box(p, *box, units=opts.unit is not None, geo=bool(opts.geo))


def cost_in_box(p: dict[str, Any], lower: Any, upper: Any, *, units: bool, geo: bool) -> Cost:
    """The cost of the release of validated parameters ``p`` in the public
    box (km with ``geo``), planned as the fit plans it; public inputs only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fit itself says them
        # the fit's own plan: --geo looks for places (its base at person level)
        places = PLACE_EXTENT_KM if geo else None
        r = resolve(p, lower, upper, units=units, cli=True, places=places)
    return release_cost(costliest(r, p, lower, upper, units=units, cli=True, places=places))


def public_box_of(opts: FitOptions) -> tuple[Any, Any] | None:
    """The public box (lower, upper) in the fit's coordinates (km with
    --geo) from the options alone, or None when the number of columns is left
    to the file or there are no --bounds."""
    bounds = opts.bounds
    d = declared_dimension(opts.geo, bounds, opts.columns)
    if d is None or bounds is None:
        return None
    lower, upper = split_bounds(bounds, d, opts.geo)
    if opts.geo:
        _, lower, upper = project_box(lower, upper, opts.ref_lat)
    return lower, upper


def public_params(opts: FitOptions, p: dict[str, Any], command: str) -> dict[str, Any]:
    """What the ledger records of a release's parameters: the validated
    public ones, the input and the box as given; the seed only as whether
    there was one (it makes the noise predictable)."""
    keep = {k: v for k, v in p.items() if k not in ("random_state", "backend", "events")}
    return {
        "command": command,
        **keep,
        # public: what each unit's rows become before bounding (--stops, --trip-ends)
        "events": None if p.get("events") is None else p["events"].record(),
        "randomness": "secure" if p.get("random_state") is None else SEEDED_RECORD,
        "backend": str(opts.backend),
        "input": str(opts.input),
        "bounds": None if opts.bounds_text is None else list(opts.bounds_text),
        "geo": bool(opts.geo),
        "columns": None if opts.columns_text is None else list(opts.columns_text),
    }


def check_ledger_options(opts: FitOptions) -> tuple[str, str] | None:
    """``--ledger`` and ``--dataset`` (both or neither), checked with the
    input's path before anything is reserved; None without a ledger."""
    return _check_options(opts)


def _check_options(opts: FitOptions) -> tuple[str, str] | None:
    path, dataset = opts.ledger, opts.dataset
    if path is None and dataset is None:
        return None
    if path is None:
        raise ValueError("--dataset names a budget in a ledger: give --ledger LEDGER too")
    if dataset is None:
        raise ValueError(
            "--ledger needs --dataset NAME, the dataset whose lifetime budget this release is charged to"
        )
    if opts.bounds_from_data:
        raise ValueError(
            "--ledger charges differentially private releases, and --bounds-from-data has no "
            "guarantee to charge: give public --bounds"
        )
    source = str(opts.input)
    if opts.backend != "dask" and source != "-" and not Path(source).exists():
        # said before reserving, so that a mistyped path costs nothing
        raise FileNotFoundError(f"no such file: {source}")
    return path, dataset


@contextmanager
def charging(
    opts: FitOptions,
    p: dict[str, Any],
    command: str,
    *,
    cost: Cost | None = None,
    extra: dict | None = None,
) -> Iterator[Callable[[SpanModel, Sequence[str]], None]]:
    """Reserve the release's cost in ``--ledger`` now, before any record is
    read (nothing happens without ``--ledger``), and yield the function to
    call once the files are written, with the model and the files. A command
    that fails after reserving marks the release failed; it stays counted,
    as does one killed outright (then it stays "reserved"). ``cost``: the
    whole command's cost when it is more than one release (a series over
    time, charged once); ``extra``: public parameters recorded beside the
    options."""
    given = _check_options(opts)
    if given is None:
        yield lambda model, files: None
        return
    # what public input refuses is refused before the ledger charges anything
    opts.check_input(grid_eta(p["eta"]))
    units = ledger_unit(opts)
    reservation = Ledger(*given).reserve(
        public_cost(opts, p) if cost is None else cost,
        command=command,
        params={**public_params(opts, p, command), **(extra or {})},
        unit="event" if units is None else "person",
        unit_column=units,
    )
    _say_reserved(reservation)
    done = False

    def written(model: SpanModel, files: Sequence[str]) -> None:
        nonlocal done
        _record(reservation, model, files)
        done = True

    try:
        yield written
    except BaseException:
        if not done:
            reservation.failed()
            print(
                f"dpdbscan: ledger {reservation.ledger.path}: release #{reservation.id} stays charged "
                "(status failed): the command failed after reserving, possibly after reading data. "
                "'dpdbscan check' reads a file as fit does and spends nothing",
                file=sys.stderr,
            )
        raise


def _say_reserved(r: Reservation) -> None:
    t = r.total
    print(
        f"dpdbscan: ledger {r.ledger.path}: release #{r.id} charged to {r.ledger.dataset!r} at "
        f"(epsilon={r.cost.epsilon:g}, delta={r.cost.delta:g}); the dataset's total is now "
        f"(epsilon={t.epsilon:.6g}, delta={t.delta:.3g}) by {t.method}",
        file=sys.stderr,
    )


def _record(r: Reservation, model: SpanModel, files: Sequence[str]) -> None:
    """Mark the release written. Its cost was resolved from the same public
    inputs as the release, so the model's own cost is never larger; if it
    were, the ledger records the larger one and says so."""
    actual = release_cost(model.release)
    res = r.cost
    covered = (
        actual.epsilon <= res.epsilon
        and actual.delta <= res.delta
        and (res.rho is None or (actual.rho is not None and actual.rho <= res.rho))
    )
    r.written(files, cost=None if covered else actual)
    if not covered:
        print(
            f"dpdbscan: error: the release cost (epsilon={actual.epsilon:g}, delta={actual.delta:g}) "
            f"more than its reservation (epsilon={res.epsilon:g}, delta={res.delta:g}); the ledger now "
            "records the release's own cost. Please report this",
            file=sys.stderr,
        )


def register(
    sub: Any, add: Callable[..., argparse.ArgumentParser], parents: Sequence[argparse.ArgumentParser] = ()
) -> ArgTarget:
    what = "a privacy budget that lasts across runs: register budgets, show what was spent"
    p = add("ledger", what, cmd_ledger)
    add_arguments(p, parents)
    return p
