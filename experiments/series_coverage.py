"""Does a series' spans cover the busy (period, cell) pairs of Cabs pick-ups?

The check of docs/privacy.md §5.2's series on real traces: run ``dpdbscan
fit --per ... --trip-ends occupied`` on ``cabs_sf_cabs.parquet`` (commands in
the CHANGELOG), then

    python -m experiments.series_coverage OUT/NAME.spans.json

The runs of docs/privacy.md §5.2 ("Measured on Cabs"), one per seed S, per
P in week (--to 2008-06-14) and day (--to 2008-06-10), share H in 0.4, 0.5:

    dpdbscan fit cabs_sf_cabs.parquet --geo --columns x y \
        --bounds -122.6 37.55 -122.3 37.85 --unit cab --epsilon 1 --delta 1e-6 \
        --time time --trip-ends occupied --per P --from 2008-05-17 --to TO \
        --tz America/Los_Angeles --eps 300m --min-samples 30 \
        --max-cells-per-unit 500 --table-share H --seed S --out-dir OUT

takes the 5 cells (of the release's grid) with the most pick-ups over the
horizon and, for every (period, cell) among them where at least 100 distinct
cabs picked up in that period, whether the cell lies in one of THAT period's
spans (a span active in it, ``metadata.series.period_spans``; also reported:
in any span of the horizon). It reads the
private data to score a release (a measurement, not a release) and prints one
JSON line: the pairs, how many are covered and the share.

``coverage(model, traces, unit, min_units)`` scores a series of other traces
in the same layout (x, y, the unit's column, time, occupied): the synthetic
city's, in ``experiments.traces_check``.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from dpdbscan import TripEnds, load_model
from dpdbscan.research import Periods, events_rows, parse_times, predict_spans, projection_of

from .data import data_path

BUSIEST = 5
MIN_CABS = 100


def coverage(
    model_path: str, traces: str | None = None, unit: str = "cab", min_units: int = MIN_CABS
) -> dict:
    """The busy (period, cell) pairs of ``traces`` (default: full Cabs; columns
    x, y, ``unit``, time, occupied) and how many lie in their period's spans;
    busy: at least ``min_units`` distinct units picked up there that period."""
    import pyarrow.parquet as pq

    model = load_model(model_path)
    path = data_path("cabs_sf_cabs.parquet") if traces is None else traces
    t = pq.read_table(path, columns=["x", "y", unit, "time", "occupied"])
    X = np.column_stack([t["x"].to_numpy(), t["y"].to_numpy()]).astype(float)
    rows = events_rows(TripEnds("pickup").resolved(geo=True), X, t[unit], t["time"], t["occupied"])
    proj = projection_of(model)
    if proj is None:
        raise ValueError("a --geo model is needed")
    P = proj.forward(X[rows])
    cab = np.asarray(t[unit].take(rows).to_pylist())
    s = model.metadata["series"]["periods"]
    per = Periods(s["per"], s["from"], s["to"], None if s["tz"] == "UTC" else s["tz"])
    idx = per.index(parse_times(t["time"].take(rows)))
    grid = model.grid
    inside = grid.inside(P) & (idx >= 0)
    P, cab, idx = P[inside], cab[inside], idx[inside]
    keys = grid.keys_of_points(P)
    uk, cnt = np.unique(keys, return_counts=True)
    top = uk[np.argsort(-cnt)[:BUSIEST]]
    rk, rl = model.regions()
    pairs = covered = in_horizon = 0
    period_spans = [set(ids) for ids in model.metadata["series"]["period_spans"]]
    spans_of_top = []
    for key in top:
        sel = keys == key
        span = int(predict_spans(grid, rk, rl, P[sel][:1])[0])  # one cell: one label
        spans_of_top.append(span)
        for ti in range(per.n_periods):
            if np.unique(cab[sel & (idx == ti)]).size >= min_units:
                pairs += 1
                in_horizon += span >= 0
                covered += span in period_spans[ti]
    # the table against the unbounded truth: distinct cabs with a pick-up in
    # each span in each period (what m = 1 counts before the k-pair bound)
    labels = predict_spans(grid, rk, rl, np.clip(P, grid.lower, grid.upper))
    truth = np.zeros((model.n_spans, per.n_periods))
    for sp in range(model.n_spans):
        for ti in range(per.n_periods):
            truth[sp, ti] = np.unique(cab[(labels == sp) & (idx == ti)]).size
    noisy = np.array(model.metadata["series"]["table"]["noisy_mass"], dtype=float).reshape(truth.shape)
    big = truth >= min_units
    return {
        "per": s["per"],
        "table_median_noisy_over_distinct_cabs": (
            float(np.median(noisy[big] / truth[big])) if big.any() else None
        ),
        "table_entries_with_100_cabs": int(big.sum()),
        "table_median_abs_error_vs_distinct_cabs": float(np.median(np.abs(noisy - truth))),
        "n_periods": per.n_periods,
        "n_spans": model.n_spans,
        "busy_pairs": pairs,
        "covered": covered,
        "share": covered / max(pairs, 1),
        "in_horizon_spans": in_horizon,
        "cell_width_km": float(grid.width),
        "spans_area_km2": round(float(rk.shape[0] * grid.width**2), 2),
        "top_cell_spans": spans_of_top,
    }


if __name__ == "__main__":
    print(json.dumps(coverage(sys.argv[1])))
