"""Person-level Cabs (cab as the unit) with max_cells_per_unit fixed or
"auto": the k used and the share of the 50 release cells seen by the most
cabs whose centre lies in a span (issue 20's moonshot; docs/parameters.md
section 5).

    python -m experiments.person_auto_k                          # auto and 1000, seeds 0-4, epsilon 1
    python -m experiments.person_auto_k --k auto 200 --epsilon 2 --seeds 0-1

The fits run one after another (full Cabs: about 10 s each on a loaded
two-core machine). The top cells are counted from the data for the
evaluation only; nothing of them reaches a fit.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

import numpy as np

import dpdbscan
from dpdbscan.research import Equirectangular

from . import options
from .data import GEO_BOXES, data_path

CABS_UNITS = "cabs_sf_cabs.parquet"
TOP = 50


def read_cabs() -> tuple[np.ndarray, np.ndarray]:
    """Full Cabs' lon/lat and the cab of each row."""
    import pyarrow.parquet as pq

    t = pq.read_table(data_path(CABS_UNITS), columns=["x", "y", "cab"])
    lonlat = np.column_stack([t["x"].to_numpy(), t["y"].to_numpy()])
    return lonlat, np.asarray(t["cab"].to_numpy(zero_copy_only=False))


def top_cells(model: dpdbscan.SpanModel, lonlat: np.ndarray, units: np.ndarray, top: int = TOP) -> np.ndarray:
    """Centres (in the model's km) of the ``top`` release cells seen by the
    most distinct units (ties: the smaller cell key)."""
    grid = model.release.grid
    km = Equirectangular.from_dict(model.metadata["projection"]).forward(lonlat)
    keys = grid.keys_of_points(np.clip(km, grid.lower, grid.upper))
    _, unit_codes = np.unique(units, return_inverse=True)
    pairs = np.unique(np.column_stack([keys.astype(np.int64), unit_codes.ravel()]), axis=0)
    cells, seen = np.unique(pairs[:, 0], return_counts=True)
    best = cells[np.argsort(-seen, kind="stable")[:top]]
    return grid.cell_centres(grid.decode(best))


def share_in_spans(model: dpdbscan.SpanModel, centres: np.ndarray) -> float:
    """The share of ``centres`` that ``predict`` puts in a span."""
    return float(np.mean(model.predict(centres) >= 0))


def fit(
    lonlat: np.ndarray, units: np.ndarray, k: int | str, epsilon: float, seed: int, **kw
) -> dpdbscan.SpanModel:
    """The issue's person-level fit of Cabs at k (a number or "auto")."""
    box = GEO_BOXES["cabs"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded (research) fits
        return dpdbscan.fit_lonlat(
            lonlat,
            eps=kw.pop("eps", "200m"),
            min_samples=kw.pop("min_samples", 100),
            bounds=(box.lon_min, box.lat_min, box.lon_max, box.lat_max),
            epsilon=epsilon,
            delta=1e-6,
            units=units,
            max_cells_per_unit=k,
            random_state=seed,
            **kw,
        )


def run(
    lonlat: np.ndarray, units: np.ndarray, ks: Sequence[int | str], seeds: Sequence[int], epsilon: float
) -> list[dict]:
    rows, centres = [], None
    for k in ks:
        for seed in seeds:
            model = fit(lonlat, units, k, epsilon, seed)
            if centres is None:
                centres = top_cells(model, lonlat, units)
            bound = model.release.units
            if bound is None:
                raise RuntimeError("a person-level fit records its contribution bound")
            row = {
                "k": k,
                "seed": seed,
                "k used": bound.max_cells_per_unit,
                "share": share_in_spans(model, centres),
                "spans": model.n_spans,
            }
            print(f"  {row}", file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def table(rows: list[dict], epsilon: float) -> str:
    lines = [
        f"| k (epsilon={epsilon:g}, delta=1e-6) | k used | share of the top {TOP} cells in spans | mean |",
        "|---|---|---|---|",
    ]
    for k in dict.fromkeys(r["k"] for r in rows):
        rs = [r for r in rows if r["k"] == k]
        used = ", ".join(f"{u:,}" for u in sorted({r["k used"] for r in rs}))
        shares = [r["share"] for r in rs]
        listed = ", ".join(f"{s:.2f}" for s in shares)
        lines.append(f"| {k} | {used} | {listed} | {np.mean(shares):.3f} |")
    return "\n".join(lines)


def _k(text: str) -> int | str:
    return "auto" if text == "auto" else int(text)


def main(argv: Sequence[str] | None = None) -> int:
    p = options.parser(__doc__)
    p.add_argument("--k", nargs="+", type=_k, default=["auto", 1000], help="max_cells_per_unit values")
    p.add_argument("--seeds", type=options.seed_range, default=range(5), help="e.g. 0-4")
    p.add_argument("--epsilon", type=float, default=1.0)
    a = p.parse_args(argv)
    lonlat, units = read_cabs()
    print(table(run(lonlat, units, a.k, list(a.seeds), a.epsilon), a.epsilon))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
