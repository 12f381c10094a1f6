"""What tells a jam span from a place, measured on saved releases: for each
span of a person-level geographic automatic model (the same selection the
fit made, selected again from its saved histogram), what the release alone
shows of it, beside what the shared ``places_metric.py`` says it holds (its
top-20 event cells and its passage cells).

Per span, from the release only (post-processing): the level it was born
at and died at (MinPts) and its life in rungs of the ladder (a factor sqrt 2
each); its stability and noisy mass; its release cells (those of its core
sub-cells) and their own noisy counts: the busiest one (``peak``, also in
standard deviations of one cell's noise and as a share of the fleet the
release shows, its noisy total over k m), the busiest cell's share of the
span's positive own counts (``conc``), how many cells of the busiest one's
count the span's counts make (``ncells_eff`` = sum / peak), the median
cell's share of the busiest (``flat``), and the spread of its cells along
and across their main axis (``elong``: the ratio of the weighted standard
deviations, weights the positive own counts; ``length_m``: four standard
deviations along; a cell's own spread added, so one cell is 1). From the
traces (not the release): ``top`` and ``passage``, how many of the metric's
top-20 and passage cell centres the span holds; for a synthetic city's
stops, ``jam`` and ``home``, the shares of the truth's stays of 5 min or
more inside the span that are jams and homes (``synthetic_traces``).
``--own SHARE:SDS,...`` selects each release again with its spans drawn
over their own units at other settings (``levelsearch.own_cells``) and
scores them on the metric's cells.

``--cache DIR`` keeps the metric's cells per traces (``DIR/NAME.npz``), so
a model is measured again without the metric's stop scan (6 GB on 20M
fixes). ``--json`` appends one line per span to a file, with the city's name
(``--name``), for :func:`compare`.

    python -m experiments.jam_spans results/traces/taxi_u10000_d7_i180_s4/stops-auto.spans.json \\
        --traces results/traces/taxi_u10000_d7_i180_s4/traces.parquet --events stops \\
        --cache results/jam_spans --name s4-stops --json results/jam_spans/spans.jsonl
    python -m experiments.jam_spans --compare results/jam_spans/spans.jsonl

docs/places-study.md section 3 ("Jam spans and places") has what it measured.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import dpdbscan
from dpdbscan import research

from . import traces_check
from .place_floor import Metric, rebuilt

FEATURES = (
    "born",
    "death",
    "life",
    "stability",
    "mass",
    "piece",
    "ncells",
    "peak",
    "peak_sd",
    "peak_fleet",
    "conc",
    "ncells_eff",
    "flat",
    "elong",
    "length_m",
)


def selection(model: Any) -> Any:
    """The selection ``model``'s fit made, again from its saved release."""
    a, hist, spec = model.auto, model.histogram, model.spec
    return research.levels_select(
        hist,
        spec,
        (),
        alpha=float(a["eps"]),
        max_extent=a["max_extent"],
        peak_share=a.get("peak_share"),
        share_of=a.get("share_of"),
        peak_rank=int(a.get("peak_rank", 1)),
        min_rungs=int(a.get("min_rungs", 1)),
        jam_share=a.get("jam_share"),
        per_unit=research.levels_unit_mass(model.release.units),
        noise_sds=a.get("noise_sds"),
        own_share=a.get("own_share"),
        own_sds=float(a.get("own_sds", 0.0)),
    )


def span_rows(model: Any, sel: Any) -> list[dict[str, Any]]:
    """Each span's measures from the release (the module's docstring)."""
    hist = model.histogram
    k = int(model.spec.subcells)
    sigma = math.sqrt(research.noise_variance(hist.noise, hist.scale))
    fleet = float(np.asarray(hist.values).sum()) / research.levels_unit_mass(model.release.units)
    width_m = float(hist.grid.width) * 1000.0
    cells = hist.grid.encode(sel.grid.decode(sel.core_keys) // k)
    rows = []
    for s in sel.spans:
        mine = np.unique(cells[sel.labels == s.span])
        own = np.asarray(hist.value_at(mine), dtype=np.float64)
        pos = np.maximum(own, 0.0)
        peak = float(own.max())
        xy = hist.grid.decode(mine).astype(np.float64) * width_m
        w = pos / pos.sum() if pos.sum() > 0 else np.full(own.size, 1.0 / own.size)
        mean = w @ xy
        # a cell's own spread (width^2 / 12 along each axis) keeps a line of cells finite
        cov = (xy - mean).T @ ((xy - mean) * w[:, None]) + np.eye(2) * width_m**2 / 12.0
        lo, hi = np.sqrt(np.maximum(np.linalg.eigvalsh(cov), 0.0))
        rows.append(
            {
                "span": int(s.span),
                "born": int(s.min_samples),
                "death": int(s.death_min_samples),
                "life": round(2.0 * math.log2(max(s.death_min_samples, 1) / max(s.min_samples, 1)), 1),
                "stability": round(float(s.stability), 4),
                "mass": round(float(s.mass), 1),
                "piece": bool(s.piece),
                "ncells": int(mine.size),
                "peak": round(peak, 1),
                "peak_sd": round(peak / sigma, 2) if sigma > 0 else math.inf,
                "peak_fleet": round(peak / fleet, 4) if fleet > 0 else math.nan,
                "conc": round(peak / float(pos.sum()), 3) if pos.sum() > 0 else 1.0,
                "ncells_eff": round(float(pos.sum()) / peak, 2) if peak > 0 else math.nan,
                "flat": round(float(np.median(own)) / peak, 3) if peak > 0 else math.nan,
                "elong": round(float(hi / lo), 2),
                "length_m": round(4.0 * float(hi), 0),
            }
        )
    return rows


def _projection(model: Any) -> Any:
    proj = research.projection_of(model)
    if proj is None:
        raise SystemExit("not a --geo model: its spans are not places")
    return proj


def cell_rows(model: Any, sel: Any, centres: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Each metric cell (top-20 and passage centres) that a span holds: its
    release cell's own noisy count, as a share of its span's busiest cell
    (``share``) and in noise standard deviations (``sds``), and whether a
    core sub-cell of the span lies in that cell (``core``; else a border
    cell)."""
    hist = model.histogram
    k = int(model.spec.subcells)
    sigma = math.sqrt(research.noise_variance(hist.noise, hist.scale))
    cells = hist.grid.encode(sel.grid.decode(sel.core_keys) // k)
    peaks: dict[int, tuple[float, set[int]]] = {}
    for s in sel.spans:
        keys = np.unique(cells[sel.labels == s.span])
        peaks[s.span] = (float(np.max(hist.value_at(keys))), set(keys.tolist()))
    proj = _projection(model)
    out = []
    for key in ("top", "passage"):
        lab = np.asarray(dpdbscan.predict_lonlat(model, centres[key]))
        at = hist.grid.keys_of_points(proj.forward(centres[key]))
        own = np.asarray(hist.value_at(at), dtype=np.float64)
        for i in np.flatnonzero(lab >= 0):
            peak, mine = peaks[int(lab[i])]
            out.append(
                {
                    "kind": key,
                    "span": int(lab[i]),
                    "own": round(float(own[i]), 1),
                    "share": round(float(own[i]) / peak, 3),
                    "sds": round(float(own[i]) / sigma, 2),
                    "peak_sds": round(peak / sigma, 2),
                    "core": int(at[i]) in mine,
                }
            )
    return out


def metric_cells(
    model_path: Path, traces: Path, events: str, cache: Path | None, unit: str, bounds: Sequence[float]
) -> dict[str, np.ndarray]:
    """The metric's top-20 and passage cell centres (lon, lat) for ``traces``,
    from ``cache`` if there."""
    saved = None if cache is None else cache / f"{traces.parent.name}-{traces.stem}-{events}.npz"
    if saved is not None and saved.exists():
        with np.load(saved) as z:
            return {key: z[key] for key in z.files}
    g = Metric(model_path, traces, events, unit, bounds).g
    out = {"top": g["centre"](g["top"]), "passage": g["centre"](g["passage"])}
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        np.savez(saved, **out)
    return out


def measure(model_path: Path, centres: dict[str, np.ndarray]) -> tuple[Any, list[dict[str, Any]]]:
    """The model's spans, each with its measures and the metric's cells it holds."""
    model = dpdbscan.load_model(model_path)
    sel = selection(model)
    if sel.n_spans != model.n_spans:
        raise SystemExit(f"{model_path}: selected again {sel.n_spans} spans, the model has {model.n_spans}")
    rows = span_rows(model, sel)
    for key in ("top", "passage"):
        lab = np.asarray(dpdbscan.predict_lonlat(model, centres[key]))
        for r in rows:
            r[key] = int(np.count_nonzero(lab == r["span"]))
    return model, rows


def replay(model: Any, centres: dict[str, np.ndarray], own: tuple[float, float]) -> dict[str, Any]:
    """``model``'s release selected again with its own rules but each span
    drawn over its own units at ``own`` (share, deviations): spans, top-20
    and passage shares on the metric's cells."""
    a = model.auto
    m, _ = rebuilt(
        model,
        float(a["peak_share"]),
        int(a.get("peak_rank", 1)),
        int(a.get("min_rungs", 1)),
        a.get("jam_share"),
        None,
        own,
    )
    got: dict[str, Any] = {"spans": int(m.n_spans)}
    for key in ("top", "passage"):
        got[key] = round(float(np.mean(np.asarray(dpdbscan.predict_lonlat(m, centres[key])) >= 0)), 2)
    return got


def truth(model: Any, folder: Path, rows: list[dict[str, Any]]) -> None:
    """For a synthetic city (``folder/stays.csv`` of ``synthetic_traces``):
    per span, the stays of 5 min or more inside it, and the share of them
    that are jams (``jam``), homes (``home``) or places (the rest)."""
    from .synthetic_traces import HOME, JAM, to_lonlat

    path = folder / "stays.csv"
    if not path.exists():
        return
    st = np.loadtxt(path, delimiter=",", comments="#", ndmin=2)
    st = st[st[:, 3] - st[:, 2] >= 300]
    lab = np.asarray(dpdbscan.predict_lonlat(model, to_lonlat(st[:, 4:6])))
    for r in rows:
        mine = st[lab == r["span"], 1]
        r["stays"] = int(mine.size)
        r["jam"] = round(float(np.mean(mine == JAM)), 3) if mine.size else 0.0
        r["home"] = round(float(np.mean(mine == HOME)), 3) if mine.size else 0.0


def one_unit(model: Any, traces: Path, events: str, unit: str) -> float:
    """The largest share of a span's events from one unit, the events as the
    library counts them (``research.events_rows``: its compiled stops, not
    the metric's Python scan, which needs 6 GB on 20M fixes)."""
    import pyarrow.parquet as pq

    ev = dpdbscan.Stops(0.1, 300.0) if events == "stops" else dpdbscan.TripEnds("pickup")
    t = pq.read_table(traces, columns=["x", "y", unit, "time", "occupied"])
    lonlat = np.c_[t.column("x").to_numpy(), t.column("y").to_numpy()]
    units = t.column(unit).to_numpy()
    proj = _projection(model)
    rows = research.events_rows(
        ev,
        proj.forward(lonlat),
        units,
        t.column("time").to_numpy(),
        t.column("occupied").to_numpy(),
        notes=lambda _: None,
    )
    labels = np.asarray(dpdbscan.predict_lonlat(model, lonlat[rows]))
    return traces_check.max_unit_share(labels, research.factorize(units[rows])[0], model.n_spans)


def kind(row: dict[str, Any]) -> str:
    """ "place" (holds a top-20 cell), "jam" (a passage cell and no top-20
    cell, or, in a synthetic city, most of its stays are jams) or "other"."""
    if row["top"]:
        return "place"
    return "jam" if row["passage"] or row.get("jam", 0.0) > 0.5 else "other"


def compare(path: Path) -> str:
    """Per city, each feature's range over its place spans, its jam spans and
    the others (``--json`` lines)."""
    rows = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    out = []
    for city in dict.fromkeys(r["city"] for r in rows):
        mine = [r for r in rows if r["city"] == city]
        out.append(f"## {city}: {len(mine)} spans")
        for k in ("place", "jam", "other"):
            group = [r for r in mine if kind(r) == k]
            if not group:
                continue
            parts = []
            for f in FEATURES:
                v = np.array([float(r[f]) for r in group])
                parts.append(f"{f} {np.min(v):.3g}-{np.max(v):.3g}")
            out.append(f"  {k} ({len(group)}): " + ", ".join(parts))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", type=Path)
    ap.add_argument("--traces", type=Path)
    ap.add_argument("--events", choices=["stops", "pickups"], default="stops")
    ap.add_argument("--unit", default=traces_check.UNIT, help="the unit column (the metric's --unit)")
    ap.add_argument("--box", type=float, nargs=4, default=None, help="the metric's box (default: the city's)")
    ap.add_argument("--cache", type=Path, default=None, help="keep the metric's cells here")
    ap.add_argument("--name", default=None, help="the city's name in --json")
    ap.add_argument("--json", type=Path, default=None, help="append one line per span")
    ap.add_argument("--own", default=None, help="SHARE:SDS,...: replay each span drawn at these")
    ap.add_argument(
        "--one-unit", action="store_true", help="also the largest share of a span's events from one unit"
    )
    ap.add_argument("--compare", type=Path, default=None, help="print the ranges of a --json file")
    o = ap.parse_args(argv)
    if o.compare is not None:
        print(compare(o.compare))
        return 0
    if o.model is None or o.traces is None:
        ap.error("a model and --traces are needed (or --compare)")
    from .synthetic_traces import box

    centres = metric_cells(o.model, o.traces, o.events, o.cache, o.unit, o.box or box())
    model, rows = measure(o.model, centres)
    if o.events == "stops":  # the truth's stays are what stops count
        truth(model, o.model.parent, rows)
    name = o.name or o.model.stem
    if o.one_unit:
        share = one_unit(model, o.traces, o.events, o.unit)
        print(f"{name}: largest share of a span's {o.events} from one unit {share:.3f}")
    for pair in o.own.split(",") if o.own else ():
        share, sds = (float(v) for v in pair.split(":"))
        got = replay(model, centres, (share, sds))
        print(f"{name}: own {share:g}:{sds:g}: " + ", ".join(f"{k} {v}" for k, v in got.items()), flush=True)
        if o.json is not None:
            with o.json.with_suffix(".own.jsonl").open("a") as f:
                f.write(json.dumps({"city": name, "share": share, "sds": sds, **got}) + "\n")
    if o.own:
        return 0
    for c in cell_rows(model, selection(model), centres):
        print(f"  cell {' '.join(f'{k}={v}' for k, v in c.items())}")
        if o.json is not None:
            o.json.parent.mkdir(parents=True, exist_ok=True)
            with o.json.with_suffix(".cells.jsonl").open("a") as f:
                f.write(json.dumps({"city": name, **c}) + "\n")
    print(f"{name}: {model.n_spans} spans; " + " ".join(f"{k}" for k in ("kind", "span", *FEATURES)))
    for r in sorted(rows, key=lambda r: (kind(r), -r["peak"])):
        print(
            f"  {kind(r):5s} "
            + " ".join(f"{k}={r.get(k)}" for k in ("span", *FEATURES, "top", "passage", "jam", "home"))
        )
    if o.json is not None:
        o.json.parent.mkdir(parents=True, exist_ok=True)
        with o.json.open("a") as f:
            for r in rows:
                f.write(json.dumps({"city": name, **r}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
