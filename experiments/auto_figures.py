"""The automatic mode's spans on Cabs beside a fixed-parameter fit: one
figure of two panels, each over its own release's noisy histogram.

    python -m experiments.auto_figures --out docs/images/cabs_auto.png [--selection flat]

Secure noise (a fresh draw each run). Needs the Cabs file of the shared data
folder (experiments/data.py).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from dpdbscan import DPDBSCAN
from dpdbscan.research import format_km, plot_model

from . import datasets, options
from .data import GEO_BOXES
from .figures import pyplot


def main(argv: Sequence[str] | None = None) -> int:
    ap = options.parser(__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dpi", type=int, default=70)
    ap.add_argument("--selection", choices=("levels", "flat"), default="levels")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    ds = datasets.load("cabs")
    box = GEO_BOXES["cabs"]
    meta = {
        "projection": box.projection().to_dict(),
        "bounds_degrees": {"lower": list(box.degrees[:2]), "upper": list(box.degrees[2:])},
    }
    t0 = time.perf_counter()
    fixed = DPDBSCAN(ds.alpha, min_samples=ds.min_samples, epsilon=1.0, bounds=ds.bounds).fit(ds.X).spans_
    t1 = time.perf_counter()
    auto = (
        DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=ds.bounds, selection=args.selection)
        .fit(ds.X)
        .spans_
    )
    t2 = time.perf_counter()
    for m in (fixed, auto):
        m.metadata.update(meta)
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 6.6), dpi=args.dpi)
    for ax, m, what in ((axes[0], fixed, "fixed"), (axes[1], auto, "automatic")):
        plot_model(m, "spans", ax=ax, n_labels=5)
        ax.set_title(
            f"{what}: eps={format_km(m.grid.alpha)}, MinPts={m.spec.min_samples}, {m.n_spans} span(s)",
            fontsize=10,
        )
    fig.suptitle(
        "Cabs (10,995,626 records), epsilon = 1: the paper's parameters (left) and "
        "the automatic mode given only the bounds and epsilon (right)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(args.out, dpi=args.dpi)
    print(
        f"fixed ({ds.alpha:g} km, {ds.min_samples}): {fixed.n_spans} spans, {t1 - t0:.2f} s; "
        f"auto ({args.selection}) chose ({auto.grid.alpha:.4g} km, {auto.spec.min_samples}) from a "
        f"release at {auto.auto['base_eps']:.4g} km: {auto.n_spans} spans, {t2 - t1:.2f} s; wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
