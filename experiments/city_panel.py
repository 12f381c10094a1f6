"""A held-out panel of synthetic cities for issue 28's "trace data you do not have".

Fixed before any of its cities was generated or fitted (session of
2026-11-30, helper ``city``): new seeds (21-26; earlier studies used 0-5),
sampling from 5 s to 10 min, fleets of 1,000 to 10,000, with jams (always
on in the generator), red lights, point taxi ranks and depots. Each city is
run by :func:`experiments.traces_check.run` as a user would run the command
line: person level (``--unit taxi``), epsilon 1, delta 1e-6, k chosen
privately, stops (``--stops 100m 5min``) and pick-ups (``--trip-ends
occupied``), fixed (200 m, MinPts 30) and automatic, seeded noise (the
city's seed). Scored by the shared ``places_metric.py`` (top-20 >= 0.90,
passage <= 0.10) and the largest share of a span's events from one unit.

(Shrunk once, before any city was generated to the end or any fit made:
the first sizes, up to 10,000 taxis over a week, got about a tenth of a
core each at load 14-18 and could not have finished by the session's end.)

The rule a change must pass on this panel, also fixed in advance: on every
city and run, top-20 no lower than before by more than 0.05 and >= 0.90
where it was >= 0.90 before; passage no higher than before; and the jam
case (passage > 0.10 before) brought to <= 0.10, or the change is not kept.

    python -m experiments.city_panel --only C1,C2            # runs, appended to results/city_panel/runs.jsonl
    python -m experiments.city_panel --table                 # the runs as a markdown table
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import traces_check
from .synthetic_traces import parse_interval

#: name: (kind, units, days, interval, seed, options)
PANEL: dict[str, tuple[str, int, int, str, int, dict]] = {
    "C1": ("taxi", 1000, 1, "5", 21, {"lights": True, "ranks": "point"}),
    "C2": ("taxi", 2000, 1, "30", 22, {"lights": True, "depots": 4}),
    "C3": ("taxi", 4000, 1, "60", 23, {"lights": True, "ranks": "point", "depots": 6}),
    "C4": ("taxi", 10000, 3, "300", 24, {"lights": True, "depots": 8}),
    "C5": ("taxi", 3000, 3, "600", 25, {"ranks": "point", "roads": "ring"}),
    "C6": ("people", 1000, 2, "60-600", 26, {"lights": True}),
}


def run_city(name: str, root: Path, tag: str = "", kinds: Sequence[str] = ("stops", "pickups")) -> list:
    kind, units, days, interval, seed, opt = PANEL[name]
    out = root / (name + (f"-{tag}" if tag else ""))
    out.mkdir(parents=True, exist_ok=True)
    if tag:  # the same city's traces and truth as the untagged runs, fitted by this tree
        for first in (root / name).glob("*/city.pickle"):
            mine = out / first.parent.name
            mine.mkdir(exist_ok=True)
            for f in ("city.pickle", "traces.parquet"):
                if not (mine / f).exists():
                    (mine / f).symlink_to((first.parent / f).resolve())
    rows = traces_check.run(
        kind,
        units,
        days,
        parse_interval(interval),
        seed,
        out,
        False,
        ranks=opt.get("ranks", "spread"),
        roads=opt.get("roads", "grid"),
        lights=opt.get("lights", False),
        depots=opt.get("depots", 0),
        reuse=True,
        kinds=kinds,
    )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(PANEL))
    ap.add_argument("--out", type=Path, default=Path("results/city_panel"))
    ap.add_argument("--tag", default="", help="a label for this tree's runs (before, after)")
    ap.add_argument("--events", default="stops,pickups", help="which runs (stops, pickups)")
    ap.add_argument("--table", action="store_true")
    o = ap.parse_args(argv)
    if o.table:
        for folder in sorted(o.out.iterdir()):
            if (folder / "runs.jsonl").exists():
                print(f"### {folder.name}\n\n" + traces_check.table(folder / "runs.jsonl") + "\n")
        return 0
    for name in o.only.split(","):
        run_city(name, o.out, o.tag, o.events.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
