"""Where the CPU of a warm in-memory fit goes, stage by stage, at the
points of :mod:`benchmarks.sweep_dims` (issue 30's small-n and fine-alpha
misses).

Each case runs in a fresh process: it makes the sweep's points, fits once
(the first fit of the process, ``cold``: numba's start and the per-process
caches such as the ball weights), then ``--rounds`` warm fits with the
library's functions of :data:`STAGES` wrapped, each adding the process's
CPU time (user + sys, so the threads a stage starts are counted) spent
inside it. A stage includes the stages called within it (the table is
inclusive: ``self-join`` is within ``bound of every cell``, which is within
``density field``). Reported per case: the median CPU of a warm fit, the
mean CPU per fit of every stage, the released cells and the CPU of the
largest inner stage per released cell, and the load. No ``dbscan`` package
here (``sweep_dims`` gives the ratios); the wrappers add about a
microsecond per call, which the stages called a few times per fit do not
feel.

    python -m benchmarks.fit_stages [--cases 3:1:10000,3:0.5:100000] [--rounds 7] [--out FILE]
    python -m benchmarks.fit_stages --table stages.jsonl
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from typing import Any

#: (label, module, attribute): the stages timed, outermost first
STAGES: tuple[tuple[str, str, str], ...] = (
    ("release (counts, noise)", "dpdbscan.release.mechanism", "release_histogram"),
    ("released empty cells", "dpdbscan.release.histograms.sparse", "released_empty_cells"),
    ("density field", "dpdbscan.post.coretests.density.coresubcells", "density_field"),
    ("occupied cells", "dpdbscan.post.coretests.density.coresubcells", "_occupied_cells"),
    ("bound of every cell", "dpdbscan.post.coretests.density.coresubcells", "_reachable"),
    ("box cover", "dpdbscan.post.coretests.density.cover", "cover_sums"),
    ("fused cover (dense 3-D)", "dpdbscan.post.coretests.density.cover", "dense_cover_candidates"),
    ("self-join", "dpdbscan.post.sums", "reaching_sums"),
    ("table of buckets", "dpdbscan.post.sums", "_index_of"),
    ("weighted sums", "dpdbscan.post.coretests.density.weightedsums", "weighted_sums_at"),
    ("merge", "dpdbscan.post.merge", "merge_cells"),
    ("utility checks", "dpdbscan.post.coretests.density.coresubcells", "utility_problems"),
)

#: the issue's misses this was written for: (d, alpha scale, n)
CASES = ((3, 1.0, 10_000), (4, 1.0, 10_000), (5, 1.0, 10_000), (6, 1.0, 10_000), (7, 1.0, 10_000),
         (8, 1.0, 10_000), (3, 0.5, 100_000))  # fmt: skip


def _cpu() -> float:
    return time.process_time()


def _timed(f: Any, label: str, spent: dict[str, float], calls: dict[str, int]) -> Any:
    @functools.wraps(f)
    def timed(*args: Any, **kwargs: Any) -> Any:
        c = _cpu()
        try:
            return f(*args, **kwargs)
        finally:
            spent[label] += _cpu() - c
            calls[label] += 1

    return timed


def wrap(spent: dict[str, float], calls: dict[str, int]) -> Callable[[], None]:
    """Wrap every stage of :data:`STAGES` in its module (and in the modules
    that imported it by name) so that ``spent[label]`` adds its CPU;
    returns the function that puts the originals back."""
    undo: list[tuple[Any, str, Any]] = []
    for label, module, name in STAGES:
        mod = importlib.import_module(module)
        original = getattr(mod, name)

        timed = _timed(original, label, spent, calls)
        for other in list(sys.modules.values()):
            if other is not None and getattr(other, "__name__", "").startswith("dpdbscan"):
                if other.__dict__.get(name) is original:
                    undo.append((other, name, original))
                    setattr(other, name, timed)

    def restore() -> None:
        for owner, name, original in undo:
            setattr(owner, name, original)

    return restore


def one(d: int, scale: float, n: int, seed: int, rounds: int, shape: str = "blobs") -> dict:
    """The stages of one case, in this process (see the module's docstring)."""
    from dpdbscan import DPDBSCAN

    from . import blobs_nd, sweep_dims

    X = sweep_dims.points(d, shape, seed, n)
    alpha = round(blobs_nd.ALPHA[d] * scale, 6)
    load = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPDBSCAN(
            alpha, min_samples=blobs_nd.MIN_SAMPLES, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed
        )
        c = _cpu()
        est.fit(X)
        cold = _cpu() - c
        spent: dict[str, float] = defaultdict(float)
        calls: dict[str, int] = defaultdict(int)
        restore = wrap(spent, calls)
        try:
            fits = []
            for _ in range(rounds):
                c = _cpu()
                est.fit(X)
                fits.append(_cpu() - c)
        finally:
            restore()
    released = int(est.histogram_.values.size)
    stages = {label: spent[label] / rounds for label, _, _ in STAGES}
    inner = max(("box cover", "self-join", "weighted sums"), key=lambda k: stages[k])
    return {
        "d": d,
        "scale": scale,
        "n": n,
        "shape": shape,
        "seed": seed,
        "alpha": alpha,
        "histogram": str(est.histogram_.kind),
        "released": released,
        "cold_cpu": cold,
        "fit_cpu": statistics.median(fits),
        "stages": stages,
        "calls": {label: calls[label] / rounds for label, _, _ in STAGES},
        "largest_inner": inner,
        "ns_per_released_cell": 1e9 * stages[inner] / max(released, 1),
        "load": [load, os.getloadavg()[0]],
    }


def table(rows: list[dict]) -> str:
    """The stages of each case as a markdown table (ms of CPU per warm fit)."""
    labels = [label for label, _, _ in STAGES]
    head = "| case | histogram | released cells | warm fit | first fit | " + " | ".join(labels) + " | load |"
    out = [head, "|" + "---|" * (len(labels) + 6)]
    for r in rows:
        case = f"{r['d']}-D, {r['scale']:g}x α, {r['n']:,}, {r.get('shape', 'blobs')}"
        cells = " | ".join(f"{1e3 * r['stages'][k]:.1f}" if r["stages"][k] else "–" for k in labels)
        out.append(
            f"| {case} | {r['histogram']} | {r['released']:,} | {1e3 * r['fit_cpu']:.1f} ms | "
            f"{r['cold_cpu']:.2f} s | {cells} | {r['load'][0]:.1f} |"
        )
    return "\n".join(out) + "\n"


def _parse(spec: str) -> list[tuple[int, float, int]]:
    out = []
    for part in spec.split(","):
        d, scale, n = part.split(":")
        out.append((int(d), float(scale), int(n)))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(f"{d}:{s:g}:{n}" for d, s, n in CASES), help="d:scale:n,...")
    p.add_argument("--seed", type=int, default=60)
    p.add_argument("--shape", default="blobs", help="a shape of benchmarks.sweep_dims.SHAPES")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", help="append one JSON line per case")
    p.add_argument("--table", metavar="FILE", help="print the table of a run and exit")
    p.add_argument("--one", help=argparse.SUPPRESS)  # d:scale:n, in this process
    a = p.parse_args(argv)
    if a.table:
        with open(a.table) as f:
            print(table([json.loads(ln) for ln in f if ln.startswith("{")]), end="")
        return
    if a.one:
        (d, scale, n) = _parse(a.one)[0]
        print(json.dumps(one(d, scale, n, a.seed, a.rounds, a.shape)), flush=True)
        return
    rows = []
    for d, scale, n in _parse(a.cases):
        cmd = [sys.executable, "-m", "benchmarks.fit_stages", "--one", f"{d}:{scale:g}:{n}"]
        cmd += ["--seed", str(a.seed), "--rounds", str(a.rounds), "--shape", a.shape]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode or not lines:
            print(f"{d}-D x{scale:g} {n}: failed\n{done.stderr[-400:]}", file=sys.stderr)
            continue
        row = json.loads(lines[-1])
        rows.append(row)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
        print(f"{d}-D x{scale:g} {n:,}: warm {row['fit_cpu']:.3f} s", file=sys.stderr, flush=True)
    print(table(rows), end="")


if __name__ == "__main__":
    main()
