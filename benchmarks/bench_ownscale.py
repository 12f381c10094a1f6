"""Fit time of spans at their own eps (``selection="levels"``, the default)
against one eps (``selection="one-eps"``) on the same data and seed: CPU time
(user + sys) of this process per fit, interleaved one-eps, levels, levels,
one-eps after a warm-up fit on each data set, with the load average.

    python -m benchmarks.bench_ownscale

The data: small 2-D and 3-D scenes of ``experiments.scene_bench`` (the
close-tune split) and the points of ``benchmarks.same_release`` cases 22 and
23 (2-D blobs and 3-D benchmark points, 100,000 each). The numbers are in
docs/parameters.md section 7 ("each cluster at its own scale").
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from dpdbscan import DPDBSCAN

from . import same_release

SCENES_2D = (30120, 30257, 30189, 30244, 30093)


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def fit(X: np.ndarray, bounds, seed: int, selection: str):
    c = cpu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(
            "auto", min_samples="auto", epsilon=1.0, bounds=bounds, random_state=seed, selection=selection
        )
        model = est.fit(X).spans_
    return cpu() - c, model


def cases():
    # lazy: the scenes live with the experiments, not the benchmarks
    from experiments import scene_bench

    out = []
    for s in SCENES_2D:
        sc = scene_bench.scene_of(s)
        out.append((f"scene {s} (n={sc.n})", sc.X, sc.bounds, s))
    for s in scene_bench.split_seeds("close-tune", 60, dims=3)[-3:]:
        sc = scene_bench.scene_of(s)
        out.append((f"3-D scene {s} (n={sc.n})", sc.X, sc.bounds, s))
    out.append(
        ("2-D blobs 100k (same_release 22)", same_release._points(2, "blobs", 100_000, 14), (0.0, 1.0), 122)
    )
    out.append(("3-D bench 1e5 (same_release 23)", same_release._points(3, "bench", 0, 0), (0.0, 1.0), 123))
    return out


def main() -> int:
    for name, X, bounds, seed in cases():
        fit(X, bounds, seed, "levels")  # warm-up on this data
        t: dict[str, list[float]] = {"one-eps": [], "levels": []}
        taken = larger = 0
        for sel in ("one-eps", "levels", "levels", "one-eps"):
            dt, m = fit(X, bounds, seed, sel)
            t[sel].append(dt)
            if sel == "levels":
                taken = sum(1 for lv in m.auto["levels"] if lv.get("taken"))
                larger = sum(1 for a in m.auto["eps_candidates"] if a > m.grid.eps)
        one, own = float(np.mean(t["one-eps"])), float(np.mean(t["levels"]))
        print(
            f"{name}: one-eps {one:.2f} s, levels {own:.2f} s (x{own / one:.2f}; {larger} larger "
            f"candidates, {taken} spans taken); load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
