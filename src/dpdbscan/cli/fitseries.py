"""``fit --per``: hotspots over time under one lifetime budget per unit.

The options (``--per``, ``--from``, ``--to``, ``--tz``, the table's share and
bound) are public and checked, with the whole plan made
(:func:`dpdbscan.series.plan_series`), before any record is read; ``--ledger``
is then charged ONCE at the series' total cost. Besides the spans' files
(JSON, GeoJSON, PNG), ``<stem>.periods.csv`` holds the span x period table;
every file states the unit protected and the lifetime budget.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..render.periodplot import save_periods
from ..series import DEFAULT_SHARE, LEVEL, SeriesPlan, plan_series
from ..traces.periods import KINDS, Periods
from .common import ArgTarget, atomic_write, check_writable, one_line
from .ledger import ChargedOptions, public_box_of

if TYPE_CHECKING:
    from ..model.record import SpanModel
    from .outputs import Outputs


def add_period_options(p: ArgTarget) -> None:
    """The options of a series over time (fit only)."""
    g = p.add_argument_group(
        "hotspots over time (with --unit and --time; one lifetime budget per unit for the whole series)"
    )
    g.add_argument(
        "--per",
        choices=KINDS,
        help="find the spans once over the horizon, then release each span's noisy mass per period "
        "(<stem>.periods.csv); --epsilon/--delta are the lifetime budget of each unit for it all",
    )
    g.add_argument(
        "--from", dest="period_from", metavar="DATE", help="the horizon's start (YYYY-MM-DD[Thh:mm])"
    )
    g.add_argument(
        "--to", dest="period_to", metavar="DATE", help="the horizon's end (excluded; a period's start)"
    )
    g.add_argument("--tz", metavar="ZONE", help="the calendar's time zone (IANA name; default UTC)")
    g.add_argument(
        "--table-share",
        type=float,
        default=DEFAULT_SHARE,
        metavar="S",
        help=f"the share of the lifetime budget spent on the span x period table (default {DEFAULT_SHARE})",
    )
    g.add_argument(
        "--max-pairs-per-unit",
        type=_int_or_all,
        default="all",
        metavar="K",
        help="each unit counts in at most K (span, period) pairs over the whole horizon (default all: "
        "K = spans x periods, fixed once the spans are released; no unit is cut, the noise grows as "
        "sqrt(K))",
    )
    g.add_argument(
        "--max-points-per-pair",
        type=int,
        default=1,
        metavar="M",
        help="each unit adds at most M to a span's mass in one period (default 1: distinct units)",
    )


def _int_or_all(text: str) -> int | str:
    if text.strip().lower() == "all":
        return "all"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'all', got {text!r}") from None


class SeriesInputs(ChargedOptions, Protocol):
    """What planning a series reads of a command's typed options
    (:class:`dpdbscan.cli.fit.FitOptions` has it all). Public."""

    @property
    def time(self) -> str | None: ...


@dataclass(frozen=True)
class SeriesOptions:
    """The options of a series over time (``--per`` and its horizon, the
    table's share and bounds), typed at the command's entry. Public."""

    per: str
    period_from: str | None
    period_to: str | None
    tz: str | None
    table_share: float
    max_pairs_per_unit: int | str
    max_points_per_pair: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SeriesOptions | None:
        """The series' options, or None without ``--per`` (the boundary with argparse)."""
        if getattr(args, "per", None) is None:
            return None
        return cls(
            per=args.per,
            period_from=args.period_from,
            period_to=args.period_to,
            tz=args.tz,
            table_share=args.table_share,
            max_pairs_per_unit=args.max_pairs_per_unit,
            max_points_per_pair=args.max_points_per_pair,
        )


def check_series(s: SeriesOptions, opts: SeriesInputs, p: dict[str, Any]) -> SeriesPlan:
    """The series' public plan, or a refusal naming the option, before any
    record is read."""
    if opts.unit is None:
        raise ValueError("--per protects each unit over the whole series: give --unit COLUMN")
    if opts.time is None:
        raise ValueError("--per needs --time COLUMN: each row's time decides its period")
    if s.period_from is None or s.period_to is None:
        raise ValueError("--per needs a public horizon: --from DATE --to DATE (not taken from the data)")
    if p.get("max_cells_per_unit") is None:
        raise ValueError("--per needs --max-cells-per-unit K (the spans' own bound)")
    periods = Periods(s.per, s.period_from, s.period_to, s.tz)
    box = public_box_of(opts)
    if box is None:
        raise ValueError(
            "--per plans its budget before reading: give --bounds with one lower and one upper value per "
            "column, or --columns, or --geo"
        )
    return plan_series(
        p,
        *box,
        periods,
        share=s.table_share,
        max_pairs_per_unit=s.max_pairs_per_unit,
        max_points_per_pair=s.max_points_per_pair,
    )


def periods_path(outputs: Outputs, name: str) -> Path:
    path = Path(outputs.out_dir) / f"{name}.periods.csv"
    check_writable([path], outputs.input)
    return path


def periods_png_path(outputs: Outputs, name: str) -> Path | None:
    """Where the small multiples go (``<stem>.periods.png`` beside the
    table), None with ``--no-png``; checked writable before any record is read."""
    if outputs.no_png:
        return None
    path = Path(outputs.out_dir) / f"{name}.periods.png"
    check_writable([path], outputs.input)
    return path


def write_periods_png(model: SpanModel, path: Path, failed: list[str]) -> bool:
    """The small multiples (:mod:`dpdbscan.render.periodplot`), written
    atomically; a failure is added to ``failed`` (the release is kept)."""
    if model.grid.d != 2:
        return False
    try:
        atomic_write(path, lambda target: save_periods(model, target))
    except Exception as exc:  # the release is safe: report, do not lose it
        failed.append(f"{path} ({one_line(exc)})")
        return False
    return True


def write_periods_csv(model: SpanModel, path: Path) -> None:
    """The table as CSV: one row per (span, period), with the interval; the
    first lines (``#``) state the unit protected and the lifetime budget."""
    rec = model.metadata["series"]
    t = rec["table"]
    h, starts = int(t["interval_half_width"]), rec["periods"]["starts"]
    active = [set(ids) for ids in rec["period_spans"]]

    def write(target: Path) -> None:
        with open(target, "w", newline="", encoding="utf-8") as f:
            f.write(f"# dpdbscan series: {rec['statement']}\n")
            f.write(
                f"# unit protected: {rec['unit']}; lifetime budget per unit: epsilon="
                f"{rec['lifetime_budget']['epsilon']:g}, delta={rec['lifetime_budget']['delta']:g}; "
                f"at most {t['max_pairs_per_unit']} (span, period) pair(s) per unit over the horizon, "
                f"{t['max_points_per_pair']} point(s) each; discrete Gaussian sigma^2={t['sigma2']:.6g}\n"
            )
            f.write(
                f"# low and high: a {LEVEL:.0%} interval of the bounded mass (noisy +- {h}); "
                "periods start at period_start; active 1: the span is one of the period's spans "
                "(low > 0, from the noisy mass alone)\n"
            )
            w = csv.writer(f)
            w.writerow(["span", "period_start", "noisy_mass", "low", "high", "active"])
            for s, row in enumerate(t["noisy_mass"]):
                for i, v in enumerate(row):
                    w.writerow([s, starts[i], v, v - h, v + h, int(s in active[i])])

    atomic_write(path, write)


__all__ = [
    "SeriesOptions",
    "add_period_options",
    "check_series",
    "periods_path",
    "periods_png_path",
    "write_periods_csv",
    "write_periods_png",
]
