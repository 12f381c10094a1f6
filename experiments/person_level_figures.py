"""The README's two Cabs pictures: the spans of an event-level and a
person-level release of full Cabs at the same parameters, each over its own
noisy histogram, in two PNG files of the same size and view.

    .venv/bin/python -m experiments.person_level_figures --out-dir docs/images

Both fits are those of the README's commands (``fit_lonlat`` with eps 200 m,
MinPts 100, epsilon 1, the MANIFEST box): event level with the default
noise (the exact discrete Laplace, each row protected); person level with
the cab as the unit, ``max_cells_per_unit=1000``, ``max_points_per_cell=1``,
the exact discrete Gaussian, delta 1e-6. Secure noise (a fresh draw each
run), as the command line uses. Needs ``cabs_sf_cabs.parquet`` (pyarrow, in
``.venv``). Writes ``cabs_event_level.png`` and ``cabs_person_level.png``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpdbscan import SpanModel
from dpdbscan.research import plot_model, save_figure

from . import data, options
from .person_level import cabs_fit, level_params

# San Francisco and the airport, inside the public box: public, the same for both pictures
VIEW = (-122.53, 37.60, -122.35, 37.83)
FILES = {"event": "cabs_event_level.png", "person": "cabs_person_level.png"}
TITLES = {
    "event": "event level: each GPS point protected (epsilon = 1)",
    "person": (
        "person level: each cab's whole month protected\n(epsilon = 1, delta = 1e-6, k = 1,000 cells per cab)"
    ),
}


def fit(level: str, lonlat: np.ndarray, units: np.ndarray) -> SpanModel:
    """The README's release at ``level`` ("event" or "person"), secure noise."""
    # the same keyword arguments as the table's fits (noise "discrete" is what "auto" picks without units)
    extra = level_params(level)
    if level == "person":
        extra["units"] = units
    with warnings.catch_warnings():
        # UtilityWarning of a person-level release: the table in docs/accuracy.md says what it costs
        warnings.simplefilter("ignore")
        return cabs_fit(lonlat, 1.0, **extra)


def main(argv: Sequence[str] | None = None) -> int:
    ap = options.parser(__doc__)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--size", type=int, nargs=2, default=(600, 720), metavar=("WIDTH", "HEIGHT"))
    ap.add_argument("--dpi", type=int, default=100)
    args = ap.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    lonlat, units = data.cabs_with_units()
    for level in ("event", "person"):
        t0 = time.perf_counter()
        model = fit(level, lonlat, units)
        seconds = time.perf_counter() - t0
        ax = plot_model(model, "spans", extent=VIEW, size=tuple(args.size), dpi=args.dpi, n_labels=0)
        ax.set_title(f"{TITLES[level]}: {model.n_spans} span(s)", fontsize=9)
        path = args.out_dir / FILES[level]
        save_figure(ax, path, dpi=args.dpi)
        print(f"{level} level: {model.n_spans} spans, fit {seconds:.1f} s; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
