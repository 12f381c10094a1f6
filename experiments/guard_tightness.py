"""How loose is the empty-space guard's union bound? (docs/places-study.md section 2)

The density test's guard G0 is the (1 - beta / (k^d |X|)) quantile of the
weighted noise N(q) = sum_Y W(q, Y) Z_Y of one sub-cell with nothing within
reach: by a union bound over the k^d |X| sub-cells of the box, no such
sub-cell is core anywhere with probability >= 1 - beta. Neighbouring
sub-cells share most of their cells, so the events overlap and the bound
is loose by some factor; this script measures the factor by simulation on a
release's own grid and noise: pure-noise fields on the box (Z rounded from
a normal of the release's sigma, close to the discrete Gaussian at sigma in
the tens), the four sub-positions' sums by FFT, and how often the largest
reaches G0 and fractions of it. A rigorous guard cannot go below the
fraction at which the simulated frequency reaches beta.

    python -m experiments.guard_tightness --events stops --reps 300

It fits one seeded automatic release (``places_draws``'s) to take its grid,
noise and guard; the simulation itself reads no data.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence

import numpy as np

from . import places_draws as pd

FRACTIONS = (1.0, 0.975, 0.95, 0.925, 0.9)


def kernels(d: int, eta: float, k: int) -> list[np.ndarray]:
    """W(q, .) of each sub-position laid out as a 2-D array for convolution
    (flipped: the sum at cell x is sum_o W(o) Z[x + o])."""
    from dpdbscan.research import ball_weights

    if d != 2:
        raise ValueError("the simulation is 2-D")
    w = ball_weights(d, eta, k)
    r = int(np.abs(w.offsets).max())
    out = []
    for p in range(len(w.positions)):
        grid = np.zeros((2 * r + 1, 2 * r + 1))
        grid[w.offsets[:, 0] + r, w.offsets[:, 1] + r] = w.row(p)
        out.append(grid[::-1, ::-1])
    return out


def maxima(
    shape: tuple[int, int], sigma: float, kern: Sequence[np.ndarray], reps: int, seed: int
) -> np.ndarray:
    """The largest N(q) over every sub-cell of a pure-noise box, ``reps`` times."""
    from scipy.signal import fftconvolve

    rng = np.random.default_rng(seed)
    out = np.empty(reps)
    for i in range(reps):
        z = np.rint(rng.normal(0.0, sigma, shape))
        out[i] = max(float(fftconvolve(z, w, mode="same").max()) for w in kern)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", default="stops")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    o = ap.parse_args(argv)
    lonlat, cabs, _, _ = pd.events(o.events)
    model = pd.fit(lonlat, cabs, o.seed, None)
    hist, spec = model.histogram, model.spec
    if hist.noise != "gaussian" or hist.kind != "dense":
        raise SystemExit("the simulation is of a dense release with Gaussian noise")
    sigma = math.sqrt(hist.scale)  # the discrete Gaussian's sigma^2
    guard = float(model.spans.extra["accuracy_margin"])  # dense: G0 = G, beta / (k^d |X|)
    k, (rows, cols) = int(spec.subcells), (int(n) for n in hist.grid.shape)
    shape = (rows, cols)
    events = int(np.prod(shape)) * k**hist.grid.d
    t0 = os.times()
    top = maxima(shape, sigma, kernels(hist.grid.d, float(hist.grid.eta), k), o.reps, o.seed)
    t1 = os.times()
    print(
        f"{o.events}, seed {o.seed}: grid {shape[0]} x {shape[1]} cells, {events:,} sub-cells, "
        f"noise sigma {sigma:.1f}, beta {spec.beta:g}, guard G0 = {guard:.1f}; "
        f"{o.reps} pure-noise boxes ({t1.user - t0.user:.0f} s CPU)"
    )
    for f in FRACTIONS:
        p = float(np.mean(top >= f * guard))
        half = 1.96 * math.sqrt(max(p * (1 - p), 1.0 / o.reps) / o.reps)
        print(f"  P(some sub-cell >= {f:.3f} G0 = {f * guard:6.1f}) = {p:.3f} +- {half:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
