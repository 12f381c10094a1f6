"""The automatic mode's spans on Cabs (issue 13), beside a fixed-parameter
fit: one figure of two panels, each over its own release's noisy histogram.

    python experiments/auto_figures.py --out docs/images/cabs_auto.png

Secure noise (a fresh draw each run). Needs the Cabs file (benchmarks/bench_data.py
reads it once and caches the projected array under /tmp).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_data  # noqa: E402

from dpdbscan import DPDBSCAN  # noqa: E402
from dpdbscan.geometry.projection import format_km  # noqa: E402
from dpdbscan.render import plotting  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dpi", type=int, default=70)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    ds = bench_data.load("cabs")
    box, ref_lat, _ = bench_data._GEO["cabs"]
    proj = bench_data._projection(box, ref_lat)
    meta = {"projection": proj.to_dict(),
            "bounds_degrees": {"lower": list(box[:2]), "upper": list(box[2:])}}
    t0 = time.perf_counter()
    fixed = DPDBSCAN(ds.alpha, min_samples=ds.min_samples, epsilon=1.0,
                     bounds=ds.bounds).fit(ds.X).spans_
    t1 = time.perf_counter()
    auto = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=ds.bounds).fit(ds.X).spans_
    t2 = time.perf_counter()
    for m in (fixed, auto):
        m.metadata.update(meta)
    plt = plotting._plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 6.6), dpi=args.dpi)
    for ax, m, what in ((axes[0], fixed, "fixed"), (axes[1], auto, "automatic")):
        plotting.plot_model(m, "spans", ax=ax, n_labels=5)
        ax.set_title(f"{what}: eps={format_km(m.grid.alpha)}, MinPts={m.spec.min_samples}, "
                     f"{m.n_spans} span(s)", fontsize=10)
    fig.suptitle("Cabs (10,995,626 records), epsilon = 1: the paper's parameters (left) and "
                 "the automatic mode given only the bounds and epsilon (right)", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=args.dpi)
    print(f"fixed ({ds.alpha:g} km, {ds.min_samples}): {fixed.n_spans} spans, {t1 - t0:.2f} s; "
          f"auto chose ({auto.grid.alpha:.4g} km, {auto.min_samples}) from a release at "
          f"{auto.auto['base_eps']:.4g} km: {auto.n_spans} spans, {t2 - t1:.2f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
