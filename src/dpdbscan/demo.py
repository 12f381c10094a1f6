"""`make demo`: fit DP-DBSCAN on built-in synthetic data and write the release.

Writes spans.json, spans.geojson and spans.png into --out: the release only.
The picture shows the spans over the released noisy histogram, never the
points; what the spans do to the demo's own points is a private note on
standard error, as the command line does it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .estimator import DPDBSCAN
from .model import save_geojson, save_model, summary
from .prepare.notes import PRIVATE
from .render import plotting


def demo_data(seed: int = 30) -> np.ndarray:
    """Two moons and a blob, 6,000 points in [-3, 3]^2 (built in, no files)."""
    from sklearn.datasets import make_blobs, make_moons

    moons, _ = make_moons(4000, noise=0.05, random_state=seed)
    blob, _ = make_blobs(2000, centers=[[1.6, -2.1]], cluster_std=0.2, random_state=seed)
    X = np.vstack([moons * 1.5 - [0.75, 0.0], blob])
    return X


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="demo_output", help="output folder")
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    X = demo_data()
    bounds = (-3.0, 3.0)  # public: fixed before looking at the data
    model = DPDBSCAN(eps=0.15, min_samples=10, epsilon=args.epsilon, bounds=bounds).fit(X)
    spans = model.spans_
    print(f"fitted {X.shape[0]} points in [-3, 3]^2 (secure randomness)")
    print(summary(spans))
    labels = model.predict(X)
    # exact counts of the training points per span: not part of the release
    print(
        f"{PRIVATE} span sizes of the demo points: {np.bincount(labels[labels >= 0]).tolist()}, "
        f"noise: {(labels < 0).sum()}",
        file=sys.stderr,
    )
    save_model(spans, out / "spans.json")
    save_geojson(spans, out / "spans.geojson")
    ax = plotting.plot_spans(spans)  # the spans over the noisy histogram: part of the release
    plotting.save(ax, out / "spans.png")
    print(f"wrote {out / 'spans.json'}, {out / 'spans.geojson'}, {out / 'spans.png'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
