"""Time of the level selection (issue 21: the automatic mode on Cabs takes at
most 3x a fixed-parameter fit) and what it returns on the geographic sets.

For each data set of ``bench_data``, after one warm-up of each, ``--repeats``
rounds of: a fixed fit (the set's own (alpha, MinPts), library defaults), an
automatic fit (``eps="auto", min_samples="auto"``, the flat cut), and on that
automatic fit's release, the parts the flat cut and the level selection do
not share, timed apart:

* ``choose``: the flat cut's choice, ``auto.choose_params`` (the sweep on
  cells over every candidate (eps, MinPts) and the criterion);
* ``final``: the flat cut's spans at the chosen pair on sub-cells;
* ``levels``: ``levels.select_levels`` (its own sweep on cells, the tree at
  the chosen eps on sub-cells, the selection).

An automatic fit that selects levels instead costs ``auto - choose - final
+ levels`` (the release and the bookkeeping are the same); that estimate is
printed against the fixed fit, with the share of the released mass and of
the box's area that the largest span covers. Secure noise.

    .venv/bin/python benchmarks/bench_levels.py [--sets cabs_tiny,cabs] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_data  # noqa: E402
from bench_auto import fit_seconds  # noqa: E402

from dpdbscan.post import auto, levels  # noqa: E402
from dpdbscan.post.spans import build_spans  # noqa: E402


def timed(f):
    gc.collect()
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def one_round(ds):
    fixed, _ = fit_seconds(ds, False)
    t_auto, est = fit_seconds(ds, True)
    model = est.spans_
    hist, params = model.histogram, model.params
    plan = auto.Plan(model.auto["base_eps"], tuple(model.auto["eps_candidates"]), None)
    t_choose, choice = timed(lambda: auto.choose_params(hist, replace(params, min_samples=1), plan))
    h = hist.on_grid(hist.grid.at_alpha(choice["alpha"]))
    t_final, _ = timed(lambda: build_spans(h, replace(params, min_samples=choice["min_samples"])))
    t_levels, sel = timed(lambda: levels.select_levels(hist, params, plan))
    return {"fixed": fixed, "auto": t_auto, "choose": t_choose, "final": t_final, "levels": t_levels,
            "model": model, "sel": sel}


def largest_share(sel: levels.LevelSpans, hist) -> tuple[float, float]:
    """Share of the released positive mass and of the box's cells in the
    largest selected span (by sub-cells)."""
    if sel.n_spans == 0:
        return 0.0, 0.0
    sizes = np.bincount(sel.labels)
    big = int(np.argmax(sizes))
    mass = max(s.mass for s in sel.spans if s.span == big)
    total = float(np.maximum(hist.values, 0).sum())
    return mass / total, sizes[big] / sel.grid.n_cells


def measure(name: str, repeats: int) -> str:
    """One table row (and the selection's description) for a data set."""
    ds = bench_data.load(name)
    one_round(ds)  # warm-up
    rounds = [one_round(ds) for _ in range(repeats)]
    med = {k: statistics.median(r[k] for r in rounds) for k in ("fixed", "auto", "choose", "final", "levels")}
    est = med["auto"] - med["choose"] - med["final"] + med["levels"]
    last = rounds[-1]
    mass, area = largest_share(last["sel"], last["model"].histogram)
    row = (f"| {name} | {ds.n:,} | {med['fixed']:.2f} s | {med['auto']:.2f} s | {med['choose']:.2f} s | "
           f"{med['final']:.2f} s | {med['levels']:.2f} s | {est:.2f} s | {est / med['fixed']:.2f} | "
           f"{last['model'].n_spans} / {last['sel'].n_spans} | {100 * mass:.1f}%, {100 * area:.2f}% |")
    return "\n".join([row] + ["  " + x for x in levels.describe(last["sel"])])


HEADER = ("| data | n | fixed | auto (flat) | choose | final | levels | auto with levels (estimate) | "
          "ratio to fixed | spans flat / levels | largest level span: mass, area |\n"
          + "|---" * 11 + "|")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="cabs_tiny,cabs", type=lambda text: text.split(","))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")  # small-data notes are not timed
    print(HEADER)
    for name in args.sets:
        print(measure(name, args.repeats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
