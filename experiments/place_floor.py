"""Where the person-level geographic automatic mode's tree starts (its place
floor), replayed on saved releases: the same noisy histogram, selected again
with the floor at ``share`` of the ``rank``-th densest place's peak
(``levelsearch.above_peak``), for each ``--rules`` pair. Post-processing of
the saved release only: no refit, the same noise.

A rule SHARE:RANK:RUNGS also selects no cluster born at a floor that binds
whose tree lives fewer than RUNGS levels (``levelsearch.short_lived``);
SHARE:RANK:RUNGS:FLEET lets the floor bind only where FLEET of the fleet
the release shows (its noisy total over k m) reaches the lowest level's
threshold (``levelsearch.jam_reach``; the library's rule is 0.08:2:3:0.1);
SHARE:RANK:RUNGS:FLEET:FLOOR also puts the floor, where it binds, at
least FLOOR of that fleet (``levelsearch.above_peak``'s ``fleet``; measured,
not the library's rule: docs/places-study.md section 3; FLEET may be left empty).
``--cached`` runs the shared metric once per model's traces and scores every
rule in process (its own cells; ``--unit`` and ``--box`` for Cabs); each
model's ladder on cells is printed first (margin, peaks, noisy total).

Each model must be an automatic ``--geo`` fit saved with its histogram (the
default). With ``--traces`` (the traces file the model was fitted from) each
selection is scored with the shared ``places_metric.py`` (slow on millions
of fixes: minutes per model); the rebuilt models are written to ``--out``.
``traces_check`` makes such models and traces (synthetic cities).

    python -m experiments.place_floor MODEL.spans.json --rules 0.025:1,0.08:2
    python -m experiments.place_floor MODEL.spans.json --rules 0.08:2:1,0.08:2:3 \\
        --traces TRACES.parquet --events stops --cached
    python -m experiments.place_floor MODEL.spans.json --traces TRACES.parquet --events stops \\
        --out results/floor

docs/places-study.md section 3 (a synthetic week of 10,000 taxis) has what it
measured.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import dpdbscan
from dpdbscan import research

from . import traces_check


def rebuilt(
    model: Any,
    share: float,
    rank: int,
    rungs: int = 1,
    fleet: float | None = None,
    floor: float | None = None,
    own: tuple[float, float] | None = None,
) -> tuple[Any, int]:
    """``model``'s release selected again with the floor at ``share`` of the
    ``rank``-th densest place's peak (binding only where ``fleet`` of the
    fleet the release shows reaches the lowest threshold,
    ``levelsearch.jam_reach``; None: always), selecting no
    cluster whose tree lives fewer than ``rungs`` levels
    (``levelsearch.short_lived``), the floor at least ``floor`` of the
    fleet where it binds (None: the peak's share alone), each span drawn
    over its own units at ``own`` (share, deviations; ``levelsearch.own_cells``;
    None: as the fit drew it): (the model, the tree's first MinPts)."""
    a, hist, spec = model.auto, model.histogram, model.spec
    if own is not None:
        a = {**a, "own_share": float(own[0]), "own_sds": float(own[1])}
    sel = research.levels_select(
        hist,
        spec,
        (),
        alpha=float(a["eps"]),
        max_extent=a["max_extent"],
        peak_share=share,
        share_of=a.get("share_of"),
        peak_rank=rank,
        min_rungs=rungs,
        jam_share=fleet,
        fleet_floor=floor,
        per_unit=research.levels_unit_mass(model.release.units),
        # the significance the fit took (models before it: the share alone)
        noise_sds=a.get("noise_sds"),
        # drawn over their own units as the fit drew them (models before it: every core sub-cell)
        own_share=a.get("own_share"),
        own_sds=float(a.get("own_sds", 0.0)),
    )
    test = research.core_test(spec.core)
    h = hist.on_grid(hist.grid.at_eps(sel.eps))
    m = min((s.min_samples for s in sel.spans), default=spec.min_samples)
    spec2 = replace(spec, min_samples=m, border=float(test.border_at(spec.border, model.grid.eps, sel.eps)))
    keys = h.grid.subdivided(spec2.subcells).encode(sel.grid.decode(sel.core_keys))
    record = {**a, **research.levels_record(sel), "peak_share": share, "peak_rank": rank}
    if "own_share" in a:
        record["own_left_out"] = int(sel.own_left_out)
    record.pop("min_rungs", None)
    record.pop("jam_share", None)
    record.pop("fleet_floor", None)
    if rungs > 1:
        record["min_rungs"] = rungs
    if fleet is not None:
        record["jam_share"] = fleet
    if floor is not None:
        record["fleet_floor"] = floor
    out = research.remodel(model, h, test.spans_of(h, spec2, keys, sel.labels), spec2, record)
    return out, int(sel.tree.levels[0].min_samples) if sel.tree.levels else 0


def ladder_facts(model: Any) -> str:
    """The release's ladder on cells at the model's eps: the noise margin
    (the first level's threshold less its MinPts), the peaks of the densest
    and second densest places (``levelsearch.above_peak``'s), the noisy
    total, and MinPts with spans at each level."""
    import numpy as np

    a, hist, spec = model.auto, model.histogram, model.spec
    eps = float(a["eps"])
    ms = research.levels_ladder(hist)
    table = research.ladder_sweep(hist, replace(spec, subcells=1), [eps], ms)
    levels = [table[(eps, m)] for m in ms]
    peak = [max((p.threshold for p in levels if p.n_spans >= r), default=0.0) for r in (1, 2)]
    total = float(np.asarray(hist.values).sum())
    spans = " ".join(f"{p.min_samples}:{p.n_spans}" for p in levels if p.n_spans)
    margin = levels[0].threshold - levels[0].min_samples
    out = f"margin {margin:.0f}, peak #1 {peak[0]:.0f}, #2 {peak[1]:.0f}, noisy total {total:.0f}"
    km = research.levels_unit_mass(model.release.units)
    out += f", k m {km:g}, fleet ~{total / km:,.0f}"
    return f"{out}; spans {spans}"


class Metric:
    """The shared ``places_metric.py`` run once on a traces file (its events,
    top-20 and passage cells, as its own code computes them), then any
    model scored against those cells in process: top-20 and passage shares
    as the tool prints them, and the largest share of a span's events from
    one unit."""

    def __init__(
        self,
        model: Path,
        traces: Path,
        events: str,
        unit: str = traces_check.UNIT,
        bounds: Sequence[float] = (),
    ) -> None:
        import runpy

        from .synthetic_traces import box

        argv = [str(traces_check.METRIC), str(model), str(traces), "--unit", unit, "--events", events]
        argv += ["--status", "occupied", "--box", *(f"{v:.6f}" for v in (bounds or box()))]
        saved, sys.argv = sys.argv, argv
        try:
            self.g = runpy.run_path(str(traces_check.METRIC), run_name="places_metric")
        finally:
            sys.argv = saved

    def score(self, model: Any) -> dict[str, float]:
        import numpy as np

        g = self.g
        top = float(np.mean(np.asarray(dpdbscan.predict_lonlat(model, g["centre"](g["top"]))) >= 0))
        passage = g["passage"]
        road = float(np.mean(np.asarray(dpdbscan.predict_lonlat(model, g["centre"](passage))) >= 0))
        i = g["i"]
        labels = np.asarray(dpdbscan.predict_lonlat(model, np.c_[g["x"][i], g["y"][i]]))
        share = traces_check.max_unit_share(labels, g["u"][i], model.n_spans)
        return {"top20": top, "passage": road, "one_unit": share}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument(
        "--rules",
        default="0.025:1,0.08:2",
        help="SHARE:RANK[:RUNGS[:FLEET[:FLOOR]]] (RUNGS: the least life; FLEET: the floor only where this "
        "share of the fleet reaches the lowest threshold, levelsearch.jam_reach; FLOOR: the floor at least "
        "this share of the fleet), comma-separated",
    )
    ap.add_argument("--traces", type=Path, default=None, help="score with places_metric.py (one model)")
    ap.add_argument(
        "--cached",
        action="store_true",
        help="with --traces: run the metric once, score every rule in process",
    )
    ap.add_argument("--events", choices=["stops", "pickups"], default="stops")
    ap.add_argument("--unit", default=traces_check.UNIT, help="the unit column (the metric's --unit)")
    ap.add_argument("--box", type=float, nargs=4, default=None, help="the metric's box (default: the city's)")
    ap.add_argument("--out", type=Path, default=Path("results/place_floor"))
    o = ap.parse_args(argv)
    rules = [
        (
            float(r[0]),
            int(r[1]),
            int(r[2]) if len(r) > 2 else 1,
            float(r[3]) if len(r) > 3 and r[3] else None,
            float(r[4]) if len(r) > 4 else None,
        )
        for r in (p.split(":") for p in o.rules.split(","))
    ]
    for path in o.models:
        model = dpdbscan.load_model(path)
        if not (model.auto or {}).get("max_extent") or model.histogram is None:
            print(f"{path}: not a geographic automatic model with its histogram; skipped", file=sys.stderr)
            continue
        print(f"{path}: {ladder_facts(model)}", flush=True)
        cached = None
        if o.cached and o.traces is not None:
            cached = Metric(path, o.traces, o.events, o.unit, o.box or ())
        for share, rank, rungs, fleet, least in rules:
            m, floor = rebuilt(model, share, rank, rungs, fleet, least)
            row = f"{path}: floor {100 * share:g}% of peak #{rank}, life >= {rungs}"
            row += "" if fleet is None else f", where {100 * fleet:g}% of the fleet is core"
            row += "" if least is None else f", at least {100 * least:g}% of the fleet"
            row += ": "
            row += f"final tree from MinPts {floor}, {m.n_spans} spans"
            if cached is not None:
                got = cached.score(m)
                row += f", top-20 {got['top20']:.2f}, passage {got['passage']:.2f}"
                row += f", one-unit {got['one_unit']:.3f}"
            elif o.traces is not None:
                o.out.mkdir(parents=True, exist_ok=True)
                saved = o.out / f"{path.name.split('.')[0]}-{share:g}-{rank}.spans.json"
                dpdbscan.save_model(m, saved)
                got = traces_check.metric(saved, o.traces, o.events)
                row += f", top-20 {got['top20']:.2f}, passage {got['passage']:.2f}"
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
