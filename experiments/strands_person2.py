"""What limits release one at person level on thin 3-D scenes (issue 28
item 3; the person3d study, results/scenes/strands-person2.md).

The scenes and units are :mod:`experiments.strands_person`'s (a stretch of
U consecutive points of one strand a unit, U in 2-20; k = 4, m = 1, Gaussian
noise, epsilon 1, delta 1e-6). Three probes:

``--variants``: the person-level automatic fit with its 3-D base sized for
more points, its eps ladder capped, its spans joined by faces
(:func:`dpdbscan.research.person_base_3d`, :data:`VARIANTS`), next to
today's, per scene.

``--noiseless``: at the automatic fit's eps times each of :data:`FRACTIONS`,
a fixed-parameter person-level release and its noiseless twin
(:func:`dpdbscan.research.noiseless_twin`), each cut flat at every MinPts of
:data:`MIN_SAMPLES` (``with_params``): the best ARI of each. Where the
noiseless cut parts the strands and the noisy one does not, the noise is
the limit at that resolution; where neither does, the resolution is.

``--second``: release two at person level (``research.person_second``) off
and on, at k = 4 and k = 1 (a quarter of the noise's variance).

    PYTHONPATH=src:. python -m experiments.strands_person2 --variants today,n56e,n56f,n113f \\
        --out results/scenes/strands-person2-variants.jsonl
    PYTHONPATH=src:. python -m experiments.strands_person2 --noiseless --seeds 70538,70279 \\
        --out results/scenes/strands-person2-noiseless.jsonl
    PYTHONPATH=. python -m experiments.strands_person2 --summary results/scenes/strands-person2-variants.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from dpdbscan import DPDBSCAN, research, with_params

from . import scene_bench
from .strands_person import DELTA, EPSILON, HELDOUT, TUNE, K, M, person_scene

#: This study's tune scenes: strands-person's tune and its spent held-out set.
SEEDS: tuple[int, ...] = TUNE + HELDOUT
#: Variant -> (points the base is sized for, eps ladder's cap, join); None:
#: the library's. "today" is the library's person-level fit.
VARIANTS: dict[str, tuple[float | None, int | None, str] | None] = {
    "today": None,
    "tf": (None, None, "face"),
    "n28f": (2**0.5 * 20_000, 1_000, "face"),
    "n56e": (2**1.5 * 20_000, 2_000, "eps"),
    "n56f": (2**1.5 * 20_000, 500, "face"),
    "n113f": (2**2.5 * 20_000, 500, "face"),
    "n320e": (16 * 20_000, 2_000, "eps"),
    "n1280e": (64 * 20_000, 2_000, "eps"),
}
#: The noiseless probe's eps, as fractions of the automatic fit's.
FRACTIONS = (1.0, 0.5, 0.25)
#: The flat cuts' MinPts.
MIN_SAMPLES = (2, 3, 5, 7, 10, 14, 20, 28, 40, 57, 80, 113, 160, 226, 320, 453, 640, 905)


def _block(variant: str) -> contextlib.AbstractContextManager:
    v = VARIANTS[variant]
    return contextlib.nullcontext() if v is None else research.person_base_3d(*v)


def _fit(sc, units, eps="auto", min_samples="auto", k: int = K):
    return (
        DPDBSCAN(
            eps,
            min_samples=min_samples,
            epsilon=EPSILON,
            delta=DELTA,
            bounds=sc.bounds,
            max_cells_per_unit=k,
            max_points_per_cell=M,
            random_state=sc.seed,
        )
        .fit(sc.X, units=units)
        .spans_
    )


def variant_row(seed: int, variants: Iterable[str]) -> dict:
    """The scene's person-level automatic fit under each variant: ARI, CPU s
    (fit and predict), spans, the chosen eps and MinPts, the join."""
    sc, units, u = person_scene(seed)
    row: dict = {"seed": seed, "n": sc.n, "U": u, "tags": " ".join(sorted(sc.tags))}
    row["strands"] = any(t.startswith("strands") for t in sc.tags)
    for v in variants:
        with _block(v), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.process_time()
            model = _fit(sc, units)
            labels = model.predict(sc.X)
            cpu = time.process_time() - t
        auto = model.auto or {}
        row[v] = {
            "ari": scene_bench.ari(sc.y, labels),
            "cpu": cpu,
            "spans": model.n_spans,
            "eps": auto.get("eps"),
            "ms": auto.get("min_samples"),
            "join": model.spec.join,
        }
    return row


def noiseless_row(seed: int, fractions: Sequence[float] = FRACTIONS) -> dict:
    """At the automatic fit's eps times each fraction: the best flat-cut ARI
    over :data:`MIN_SAMPLES` of the noisy release and of its noiseless twin,
    with the MinPts that gave it."""
    sc, units, u = person_scene(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = _fit(sc, units)
        eps = float(auto.auto["eps"])
        row: dict = {"seed": seed, "U": u, "auto": scene_bench.ari(sc.y, auto.predict(sc.X)), "eps": eps}
        for f in fractions:
            noisy = _fit(sc, units, eps * f, MIN_SAMPLES[0])
            twin = research.noiseless_twin(noisy, sc.X, units=units, random_state=sc.seed)
            best = {}
            for name, model in (("noisy", noisy), ("noiseless", twin)):
                scores = [
                    (scene_bench.ari(sc.y, with_params(model, min_samples=g).predict(sc.X)), g)
                    for g in MIN_SAMPLES
                ]
                best[name] = max(scores)
            row[str(f)] = best
    return row


def second_row(seed: int) -> dict:
    """The automatic fit with release two off and on, at k = 4 and k = 1:
    ARI and the spans release two split."""
    sc, units, u = person_scene(seed)
    row: dict = {"seed": seed, "U": u}
    for k in (K, 1):
        for on in (False, True):
            with research.person_second(on), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = _fit(sc, units, k=k)
            split = list(((model.auto or {}).get("second") or {}).get("split", []))
            row[f"k{k}_{'on' if on else 'off'}"] = [scene_bench.ari(sc.y, model.predict(sc.X)), split]
    return row


def summary(rows: list[dict], base: str = "today") -> str:
    """Per variant against ``base``: paired mean ARI gain on the scenes with
    strands and over all, better / worse by 0.005, CPU ratio (median)."""
    names = sorted({k for r in rows for k, v in r.items() if isinstance(v, dict) and k != base})
    lines = [
        "| variant | scenes (strands) | gain, strands | gain, all | better / worse | CPU (median ratio) |",
        "|---|---|---|---|---|---|",
    ]
    for v in names:
        got = [r for r in rows if v in r and base in r]
        if not got:
            continue
        d = np.array([r[v]["ari"] - r[base]["ari"] for r in got])
        st = np.array([r["strands"] for r in got])
        cpu = np.median([r[v]["cpu"] / r[base]["cpu"] for r in got])
        gs = f"{d[st].mean():+.3f}" if st.any() else "-"
        lines.append(
            f"| {v} | {len(got)} ({int(st.sum())}) | {gs} | {d.mean():+.3f} | "
            f"{int((d > 0.005).sum())} / {int((d < -0.005).sum())} | {cpu:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="", help="comma-separated seeds (default: SEEDS)")
    ap.add_argument("--variants", default="", help="comma-separated names of VARIANTS")
    ap.add_argument("--noiseless", action="store_true", help="the noiseless probe instead")
    ap.add_argument("--fractions", default="", help="with --noiseless: comma-separated (default FRACTIONS)")
    ap.add_argument("--second", action="store_true", help="release two at k = 4 and 1 instead")
    ap.add_argument("--out", type=Path, help="JSON lines, one per scene (appended)")
    ap.add_argument("--summary", type=Path, help="print the summary of a --variants file and stop")
    args = ap.parse_args(argv)
    if args.summary:
        rows = [json.loads(line) for line in args.summary.read_text().splitlines() if line.strip()]
        print(summary(rows))
        return 0
    if args.out is None:
        ap.error("--out is required")
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variants: {', '.join(unknown)}")
    if not (variants or args.noiseless or args.second):
        ap.error("one of --variants, --noiseless, --second is required")
    seeds = [int(s) for s in args.seeds.split(",") if s] or list(SEEDS)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        if args.noiseless:
            row = noiseless_row(seed, [float(f) for f in args.fractions.split(",") if f] or FRACTIONS)
        elif args.second:
            row = second_row(seed)
        else:
            row = variant_row(seed, variants)
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps(row), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
