"""The sparse density test's self-join alone (issue 30): captured from a
seeded fit, then timed in fresh processes of this tree and another,
interleaved, with a digest of its sums.

From 5-D up at coarser alphas the fit is mostly the self-join of the
released cells (``CellIndex.half_sums``, called by ``post.sums.reaching_sums``);
a whole fit's CPU time on a loaded machine hides a 10% change in it. This
benchmark fits the points of :func:`benchmarks.blobs_nd.points` once in
this process (seeded noise, ``random_state``), keeps the arguments of the
fit's last self-join (the released cells' coordinates and values, the
reach, the kernel's offset codes and weights, and whether its weights were
tabled) in a ``.npz`` file, and then, per round, times in a fresh process
of each tree (this one and ``--tree``, in turn, the order alternating):
the layout of the table of buckets (``CellIndex``) and the join on one
thread, user+sys CPU of each of ``--repeats`` runs after a warm-up. Each
child reports the SHA-256 of the sums: equal digests are the same sums bit
for bit. ``--pairs`` also counts the pairs within reach along every axis
and those whose offset weighs more than 0 (in chunks; 5-D at 2x alpha
holds 28.9M pairs).

    python -m benchmarks.bench_join --points 8:0.12:1,7:0.11:1,5:0.08:1 --tree ../base --rounds 3

``--bounds`` times nothing: per point, what deciding cells by cheaper bounds
could save (:func:`bounds`: the cells the join's sums keep against the cut
they were compared with, those a box or support mass would rule out, the
pairs of two kept cells).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from . import blobs_nd


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def capture(
    d: int, alpha: float, seed: int, out: str | Path, *, n: int | None = None, random_state: int = 7
) -> dict:
    """Fit the benchmark's points (``d``, ``seed``, ``n`` of them) at
    ``alpha`` (MinPts 20, epsilon 1, bounds (0, 1), the library's defaults,
    seeded noise) and save the arguments of the fit's last self-join to
    ``out`` (``.npz``); returns its sizes. Raises when the fit made none
    (a path other than the sparse self-join)."""
    from dpdbscan import DPDBSCAN
    from dpdbscan.research import DensityField
    from dpdbscan.research import cell_pairs as pairs

    calls: list[dict[str, Any]] = []
    cuts: list[float] = []
    join, core = pairs.CellIndex.half_sums, DensityField.core

    def spy_core(self, min_samples):
        # the cut the density test's join sums were compared with: the least
        # threshold of the field's MinPts, less the room of 1e-9 it leaves
        cuts.append(float(self.thresholds(self.min_samples).min()) * (1 - 1e-9))
        return core(self, min_samples)

    def spy(self, values, R, weight, threads=1):
        coords = np.empty_like(self.coords)
        coords[self.order] = self.coords  # the rows as given to the index
        tabled = weight.table.size > 0
        codes = np.flatnonzero(weight.table) if tabled else weight.codes
        w = weight.table[codes] if tabled else weight.weights
        vals = np.asarray(values, dtype=np.float64)
        calls.append(dict(coords=coords, values=vals, R=np.int64(R), codes=codes, weights=w, tabled=tabled))
        return join(self, values, R, weight, threads)

    X = blobs_nd.points(d, seed, n)
    m = blobs_nd.MIN_SAMPLES
    est = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0), random_state=random_state)
    pairs.CellIndex.half_sums = spy  # type: ignore[method-assign]
    DensityField.core = spy_core  # type: ignore[method-assign]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)
    finally:
        pairs.CellIndex.half_sums = join  # type: ignore[method-assign]
        DensityField.core = core  # type: ignore[method-assign]
    if not calls:
        raise RuntimeError(f"no self-join in the fit of {d}-D at alpha {alpha:g} (another path)")
    np.savez(out, threshold=np.float64(cuts[-1] if cuts else np.nan), **calls[-1])
    c = calls[-1]
    return {"cells": int(c["coords"].shape[0]), "d": d, "R": int(c["R"]), "offsets": int(c["codes"].size)}


def _weights(z: Any) -> tuple[Any, Any, int]:
    """The captured join's index arguments: ``(OffsetWeights, coords, R)``."""
    from dpdbscan.research import cell_pairs as pairs

    coords, R = np.ascontiguousarray(z["coords"]), int(z["R"])
    d = coords.shape[1]
    size = (2 * R + 1) ** d
    # the same lookup as the fit's: a table of the cube of codes, or the search
    weight = pairs.OffsetWeights(z["codes"], z["weights"], R, d, size if bool(z["tabled"]) else 0)
    return weight, coords, R


def time_join(path: str | Path, repeats: int = 3, count_pairs: bool = False) -> dict:
    """The layout and the join (one thread) of a captured self-join, each
    timed ``repeats`` times after a warm-up, in this process's tree."""
    from dpdbscan.research import cell_pairs as pairs

    z = np.load(path)
    weight, coords, R = _weights(z)
    values = z["values"]
    index = pairs.CellIndex(coords, R)
    sums = index.half_sums(values, R, weight, 1)  # (warm-up: the kernels' load)
    layout, join = [], []
    for _ in range(repeats):
        c = _cpu()
        index = pairs.CellIndex(coords, R)
        layout.append(_cpu() - c)
        c = _cpu()
        again = index.half_sums(values, R, weight, 1)
        join.append(_cpu() - c)
        assert np.array_equal(again, sums)
    out = {
        "cells": int(coords.shape[0]),
        "layout": layout,
        "join": join,
        "digest": hashlib.sha256(np.ascontiguousarray(sums).tobytes()).hexdigest(),
        "load": os.getloadavg()[0],
    }
    if count_pairs:
        out.update(pair_counts(coords, R, weight))
    return out


def pair_counts(coords: np.ndarray, R: int, weight: Any, chunk: int = 1 << 20) -> dict:
    """The distinct pairs of rows within R along every axis, and those whose
    offset weighs more than 0 (either way), counted in chunks."""
    from dpdbscan.research import cell_pairs as pairs

    i, j = pairs.chebyshev_half_pairs(coords, R)
    weighed = 0
    for a in range(0, i.size, chunk):
        off = coords[j[a : a + chunk]] - coords[i[a : a + chunk]]
        forth = weight.of(pairs.offset_codes(off, R)) != 0
        back = weight.of(pairs.offset_codes(-off, R)) != 0
        weighed += int(np.count_nonzero(forth | back))
    return {"pairs": int(i.size), "weighed": weighed}


def bounds(path: str | Path, chunk: int = 1 << 20) -> dict:
    """What cheaper decisions could save in a captured join, against the cut
    its sums were compared with (``threshold`` of the capture): the cells
    the sums keep; those whose own weighted value clears the cut (dbscan's
    dense-cell shortcut: kept without their pairs); those ruled out by the
    box mass (every released value within reach along every axis, weight
    1: a bucket bound, whose buckets cover the box, is at least this) and
    by the support mass (weight 1 on the offsets of nonzero weight); and
    of the pairs within reach, those with both cells kept (the most an early
    stop of kept cells' sums could skip) and with both sums below half the
    cut. Every count from the pairs themselves, in chunks."""
    from dpdbscan.research import cell_pairs as pairs

    z = np.load(path)
    weight, coords, R = _weights(z)
    values = np.asarray(z["values"], dtype=np.float64)
    cut = float(z["threshold"])
    n = values.size
    sums = pairs.CellIndex(coords, R).half_sums(values, R, weight, 1)
    own = values * weight.at_zero
    box, support = own.copy(), own.copy()
    i, j = pairs.chebyshev_half_pairs(coords, R)
    kept = sums >= cut
    both = low = weighed = 0
    for a in range(0, i.size, chunk):
        p, q = i[a : a + chunk], j[a : a + chunk]
        off = coords[q] - coords[p]
        forth = weight.of(pairs.offset_codes(off, R)) != 0
        back = weight.of(pairs.offset_codes(-off, R)) != 0
        box += np.bincount(p, weights=values[q], minlength=n) + np.bincount(q, weights=values[p], minlength=n)
        support += np.bincount(p, weights=values[q] * forth, minlength=n)
        support += np.bincount(q, weights=values[p] * back, minlength=n)
        weighed += int(np.count_nonzero(forth | back))
        both += int(np.count_nonzero(kept[p] & kept[q]))
        low += int(np.count_nonzero((sums[p] < cut / 2) & (sums[q] < cut / 2)))
    return {
        "cells": n,
        "cut": cut,
        "kept": int(np.count_nonzero(kept)),
        "own_clears": int(np.count_nonzero(own >= cut)),
        "box_rules_out": int(np.count_nonzero(box < cut)),
        "support_rules_out": int(np.count_nonzero(support < cut)),
        "pairs": int(i.size),
        "weighed": weighed,
        "pairs_both_kept": both,
        "pairs_both_below_half": low,
    }


def _child(tree: Path, path: Path, repeats: int, count_pairs: bool) -> dict:
    env = dict(os.environ)
    here = Path(__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(here)])
    args = [sys.executable, "-m", "benchmarks.bench_join", "--time", str(path), "--repeats", str(repeats)]
    args += ["--pairs"] if count_pairs else []
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True, cwd=here)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", default="8:0.12:1,7:0.11:1,5:0.08:1", help="d:alpha:seed, comma-separated")
    ap.add_argument("--n", type=int, default=None, help="points (the benchmark's 1e5 by default)")
    ap.add_argument("--tree", type=Path, help="another checkout's root, timed in turn with this one")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pairs", action="store_true", help="count the pairs within reach and those weighed")
    ap.add_argument(
        "--bounds", action="store_true", help="what cheaper decisions could save, per point (no timing)"
    )
    ap.add_argument("--time", help="time one captured join (internal)")
    a = ap.parse_args(argv)
    if a.time:
        print(json.dumps(time_join(a.time, a.repeats, a.pairs)), flush=True)
        return 0
    if a.bounds:
        return _print_bounds(a.points, a.n)
    here = Path(__file__).resolve().parents[1]
    trees = [("this", here)] + ([("other", a.tree.resolve())] if a.tree else [])
    print("| d | alpha | seed | cells | tree | round | layout CPU | join CPU (runs) | sums | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.points.split(","):
            d, alpha, seed = (f(x) for f, x in zip((int, float, int), spec.split(":")))
            path = Path(tmp) / f"join_{d}_{alpha:g}_{seed}.npz"
            t0 = time.perf_counter()
            sizes = capture(d, alpha, seed, path, n=a.n)
            print(f"<!-- captured {sizes} in {time.perf_counter() - t0:.1f} s -->", flush=True)
            digests = set()
            for r in range(a.rounds):
                for name, tree in trees[:: 1 if r % 2 == 0 else -1]:
                    res = _child(tree, path, a.repeats, a.pairs and r == 0)
                    digests.add(res["digest"])
                    extra = f" pairs {res['pairs']:,}, weighed {res['weighed']:,};" if "pairs" in res else ""
                    print(
                        f"| {d} | {alpha:g} | {seed} | {res['cells']:,} | {name} | {r + 1} | "
                        f"{min(res['layout']):.3f} s | {min(res['join']):.3f} s "
                        f"({', '.join(f'{x:.3f}' for x in res['join'])}) |{extra} {res['digest'][:12]} | "
                        f"{res['load']:.1f} |",
                        flush=True,
                    )
            same = "the same sums" if len(digests) == 1 else "SUMS DIFFER"
            print(f"<!-- {d}-D alpha {alpha:g}: {same} -->")
    return 0


def _print_bounds(points: str, n: int | None) -> int:
    """The table of :func:`bounds`, one row per ``d:alpha:seed``."""
    print(
        "| d | alpha | seed | cells | cut | kept | own value clears | box mass rules out | "
        "support mass rules out | pairs within reach | weighed | both kept | both sums < cut/2 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in points.split(","):
            d, alpha, seed = (f(x) for f, x in zip((int, float, int), spec.split(":")))
            path = Path(tmp) / f"join_{d}_{alpha:g}_{seed}.npz"
            capture(d, alpha, seed, path, n=n)
            b = bounds(path)
            c, m = b["cells"], max(b["pairs"], 1)
            print(
                f"| {d} | {alpha:g} | {seed} | {c:,} | {b['cut']:.1f} | {b['kept']:,} | "
                f"{b['own_clears']:,} | "
                f"{b['box_rules_out'] / c:.1%} | {b['support_rules_out'] / c:.1%} | {b['pairs']:,} | "
                f"{b['weighed']:,} | {b['pairs_both_kept'] / m:.2%} | {b['pairs_both_below_half'] / m:.1%} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
