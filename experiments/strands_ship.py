"""The library's automatic mode on the thin-heldout 3-D scenes of 20,000
points or more (strands2's held-out list), as shipped: one fit a scene at
epsilon 1 (``random_state`` = the seed), its ARI, the spans release two
split and the fit's CPU time. Run with a tree's ``src`` first on
PYTHONPATH to measure that tree (results/scenes/strands-ship.md).

    PYTHONPATH=src:. python -m experiments.strands_ship --out results/scenes/strands-ship.jsonl --tag ship
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import dpdbscan
from dpdbscan import DPDBSCAN

from . import scene_bench

#: strands2's held-out scenes (results/scenes/strands2-tune.md, "Held out")
SEEDS: tuple[int, ...] = (80005, 80007, 80012, 80038, 80039, 80041, 80043, 80046, 80055, 80066, 80071)
SEEDS += (80087, 80090, 80095, 80107, 80133, 80134, 80151, 80152, 80168, 80181, 80189)


def row_of(seed: int, tag: str) -> dict:
    """One scene's automatic fit at epsilon 1."""
    sc = scene_bench.scene_of(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed)
        model = est.fit(sc.X).spans_
        labels = model.predict(sc.X)
        cpu = time.process_time() - t
    second = (model.auto or {}).get("second") or {}
    return {
        "seed": seed,
        "tag": tag,
        "n": sc.n,
        "tags": " ".join(sorted(sc.tags)),
        "ari": scene_bench.ari(sc.y, labels),
        "spans": model.n_spans,
        "split": list(second.get("split", [])),
        "fine_cells": second.get("n_fine_cells"),
        "cpu": cpu,
        "library": str(Path(dpdbscan.__file__).parent),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated scene seeds")
    ap.add_argument("--tag", default="", help="a name for the tree measured")
    ap.add_argument("--out", type=Path, required=True, help="JSON lines, one per scene (appended)")
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",") if s):
        row = row_of(seed, args.tag)
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{seed}: {row['ari']:.3f} split {row['split']} cpu {row['cpu']:.1f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
