"""Release two's keep rule with a strand's fragments joined along its length,
from a 3-D DP count of 6,000 (issue 28 item 3; results/scenes/strands-join.md).

**The join** (:func:`groups`, :func:`pieces_joined`; research only: its
held-out gate failed and the library does not use it). Release two
(:mod:`dpdbscan.post.sidebyside`) keeps the fine cells of at least its
threshold and takes their components (cells touching by a face, edge or
corner); where a span holds thin strands side by side, each strand's kept
cells often fall into fragments along its length and no fragment covers
the span's extent. The join, before the significance and cover tests:
each component of at least ``min_cells`` kept fine cells gets an axis (the
first principal axis of its cells' centres, weighted by their noisy
counts); two components are joined when their nearest cells are at most
``gap`` fine cells apart, the step between those cells is within ``angle``
degrees of every defined axis, and two defined axes are within ``angle`` of
each other; joined components (by transitivity) count as one. It reads
the two releases alone (post-processing).

One fit per scene, the library's own path with release two made from a 3-D
DP count of 6,000 (``research.second_release_where({3: 6000})``, the
spirals study's ``3d6k``) and the scene's seed; the fit's release one model
and release two's noisy counts are kept, and every keep rule is replayed on
the same two releases (post-processing: ``sidebyside.split_model`` with the
recorded counts and the rule's ``pieces_of``), labels from ``predict``:

* ``today``: the library as it is (a separate fit: release one at all of epsilon);
* ``3d6k``: release two from 6,000 with the shipped keep rule;
* ``j<gap>a<angle>m<min_cells>``: the join rule (:func:`pieces_joined` below).

    PYTHONPATH=src:. python -m experiments.strands_join --seeds 70151,70166 --out R.jsonl
    python -m experiments.strands_join --gate R.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.research import second_release as sidebyside

from . import scene_bench, scenes, spirals_two


def _axis(pts: np.ndarray, w: np.ndarray) -> np.ndarray:
    return sidebyside.main_axis(pts, w)


def groups(lab: np.ndarray, arr: np.ndarray, nl: int, gap: float, angle: float, min_cells: int) -> np.ndarray:
    """For components 1..nl of ``lab`` (ndimage labels; ``arr`` the noisy
    counts on the same array), the group of each (index 0 unused): joined
    components share a group, the smallest member's label."""
    from scipy.spatial import cKDTree

    parent = np.arange(nl + 1)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    coords = np.argwhere(lab > 0)
    comp = lab[tuple(coords.T)]
    w = arr[tuple(coords.T)].astype(np.float64)
    pts = coords.astype(np.float64)
    cos_min = float(np.cos(np.radians(angle)))
    axes: dict[int, np.ndarray | None] = {}
    cells: dict[int, np.ndarray] = {}
    for c in range(1, nl + 1):
        sel = comp == c
        cells[c] = pts[sel]
        axes[c] = _axis(pts[sel], w[sel]) if sel.sum() >= min_cells else None
    tree = cKDTree(pts)
    pairs = tree.query_pairs(r=gap, output_type="ndarray")
    if pairs.size == 0:
        return parent
    ci, cj = comp[pairs[:, 0]], comp[pairs[:, 1]]
    cross = ci != cj
    pairs, ci, cj = pairs[cross], ci[cross], cj[cross]
    if pairs.size == 0:
        return parent
    # per component pair, its nearest cells
    dist = np.linalg.norm(pts[pairs[:, 0]] - pts[pairs[:, 1]], axis=1)
    lo, hi = np.minimum(ci, cj), np.maximum(ci, cj)
    order = np.lexsort((dist, hi, lo))
    seen: set[tuple[int, int]] = set()
    for k in order:
        key = (int(lo[k]), int(hi[k]))
        if key in seen:
            continue
        seen.add(key)
        u = pts[pairs[k, 1]] - pts[pairs[k, 0]]
        u = u / max(float(np.linalg.norm(u)), 1e-12)
        a, b = axes[key[0]], axes[key[1]]
        defined = [x for x in (a, b) if x is not None]
        if not defined:
            continue
        if any(abs(float(u @ x)) < cos_min for x in defined):
            continue
        if a is not None and b is not None and abs(float(a @ b)) < cos_min:
            continue
        ra, rb = find(key[0]), find(key[1])
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    for i in range(1, nl + 1):
        parent[i] = find(i)
    return parent


def pieces_joined(span: dict, grid: Any, rec: dict, join: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`dpdbscan.post.sidebyside.pieces_of` with fragments joined
    (module docstring) before the significance and cover tests: (the kept
    fine cells' coords, the piece of each) where the span is split, else None."""
    from scipy import ndimage

    j = join
    f = int(span["f"])
    fine_cells, noisy = np.asarray(span["fine"]), np.asarray(span["counts"], dtype=np.int64)
    if fine_cells.shape[0] == 0:
        return None
    sd2 = sidebyside.record_sd(rec)
    lo = fine_cells.min(axis=0)
    shape = tuple((fine_cells.max(axis=0) - lo + 1).tolist())
    mask = np.zeros(shape, dtype=bool)
    arr = np.zeros(shape, dtype=np.int64)
    idx = tuple((fine_cells - lo).T)
    mask[idx] = True
    arr[idx] = noisy
    t = max(float(rec["keep_sds"]) * sd2, float(rec["keep_top"]) * float(np.percentile(noisy, 95)))
    lab, nl = ndimage.label(mask & (arr >= t), structure=np.ones((3,) * grid.d))
    if nl < 2:
        return None
    grp = groups(lab, arr, nl, float(j["gap"]), float(j["angle"]), int(j["min_cells"]))
    lab = np.where(lab > 0, grp[lab], 0)
    ids = np.unique(lab[lab > 0])
    if ids.size < 2:
        return None
    mass = np.asarray(ndimage.sum(arr, lab, index=ids), dtype=np.float64)
    size = np.asarray(ndimage.sum(np.ones_like(arr), lab, index=ids), dtype=np.float64)
    big = ids[
        (mass >= float(rec["mass_share"]) * mass.sum())
        & (mass >= float(rec["mass_sds"]) * sd2 * np.sqrt(size))
    ]
    if big.size < 2:
        return None
    kept = np.argwhere(np.isin(lab, big))
    comp = lab[tuple(kept.T)]
    width = float(grid.width)
    centres = grid.lower + (kept + lo + 0.5) * (width / f)
    coarse = grid.lower + (np.asarray(span["cells"]) + 0.5) * width
    axis = sidebyside.main_axis(coarse, np.asarray(span["weights"], dtype=np.float64))
    proj = coarse @ axis
    extent = max(float(proj.max() - proj.min()) + width, 1e-12)
    p = centres @ axis
    cover = min(float(p[comp == b].max() - p[comp == b].min()) / extent for b in big)
    if cover < float(rec["cover"]):
        return None
    return kept + lo, np.searchsorted(big, comp)


#: the join variants: (gap, angle, min_cells)
JOINS = {
    f"j{g:g}a{a:g}m{m}": {"gap": g, "angle": a, "min_cells": m}
    for g in (2.5, 3.5, 5.0, 7.0)
    for a in (20.0, 30.0, 45.0)
    for m in (3, 6)
}


@contextlib.contextmanager
def captured(store: dict) -> Iterator[None]:
    """Keep release one's model, release two's spec and its noisy counts."""
    orig = sidebyside.split_model

    def capture(model, counts_of, second):
        def rec_counts(fine, kids, eps):
            out = counts_of(fine, kids, eps)
            store["counts"] = np.asarray(out).copy()
            return out

        res = orig(model, rec_counts, second)
        store.update(model=model, second=second)
        return res

    sidebyside.split_model = capture
    try:
        yield
    finally:
        sidebyside.split_model = orig


def replay(store: dict, pieces: Any) -> Any:
    """The split model of the captured releases under keep rule ``pieces``."""
    orig = sidebyside.pieces_of
    sidebyside.pieces_of = pieces
    try:
        counts = store["counts"]
        return sidebyside.split_model(store["model"], lambda *a: counts, store["second"])
    finally:
        sidebyside.pieces_of = orig


#: the fresh held-out range of this study (``thin_scene``'s generator beyond the
#: thin splits; the strandsB study uses 91,000-91,599)
FRESH = range(90_000, 90_600)


def scene_of(seed: int):
    """The thin generator's scene for the fresh range, else ``scene_bench``'s."""
    if 90_000 <= seed < 92_000:
        return scenes.thin_scene(seed)
    return scene_bench.scene_of(seed)


def hdbscan_row(seed: int) -> dict:
    sc = scene_of(seed)
    t = time.process_time()
    a = scene_bench.hdbscan_ari(sc)
    base = {"seed": seed, "d": sc.d, "n": sc.n, "k": sc.k, "tags": " ".join(sorted(sc.tags))}
    return {**base, "variant": "hdbscan", "ari": a, "cpu": time.process_time() - t}


def describe(first: int, count: int) -> list[dict]:
    """The scenes of seeds first..first+count (descriptions only, no fit)."""
    out = []
    for seed in range(first, first + count):
        sc = scene_of(seed)
        out.append({"seed": seed, "d": sc.d, "n": sc.n, "k": sc.k, "tags": sorted(sc.tags)})
    return out


def t_rule(r: dict) -> bool:
    """The spirals study's T/HT rule: spirals or strands, k <= 3, n >= 6,000, 2-D or 3-D below 20,000."""
    fam = {"spirals", "strands"} & set(r["tags"])
    return bool(fam) and r["k"] <= 3 and r["n"] >= 6_000 and (r["d"] == 2 or r["n"] < 20_000)


def g_rule(r: dict) -> bool:
    """The spirals study's G/HG rule (on the first 80 seeds): n >= 6,000, 2-D or 3-D below 20,000."""
    return r["n"] >= 6_000 and (r["d"] == 2 or r["n"] < 20_000)


def fit(sc, seed: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = DPDBSCAN("auto", min_samples="auto", epsilon=1.0, bounds=sc.bounds, random_state=seed)
        model = est.fit(sc.X).spans_
        labels = model.predict(sc.X)
        return model, labels, time.process_time() - t


def rows_of(seed: int, joins: dict[str, dict]) -> list[dict]:
    from dpdbscan.research import second_release_where

    sc = scene_of(seed)
    base = {"seed": seed, "d": sc.d, "n": sc.n, "k": sc.k, "tags": " ".join(sorted(sc.tags))}
    out = []
    model, labels, cpu = fit(sc, seed)
    out.append(
        {
            **base,
            "variant": "today",
            "ari": scene_bench.ari(sc.y, labels),
            "cpu": cpu,
            "spans": int(model.n_spans),
        }
    )
    store: dict = {}
    with second_release_where({3: 6000}), captured(store):
        model, labels, cpu = fit(sc, seed)
    second = (model.auto or {}).get("second") or {}
    out.append(
        {
            **base,
            "variant": "3d6k",
            "ari": scene_bench.ari(sc.y, labels),
            "cpu": cpu,
            "spans": int(model.n_spans),
            "split": list(second.get("split", [])),
        }
    )
    if "model" not in store:
        for name in joins:
            out.append({**out[-1], "variant": name, "cpu_post": 0.0})
        return out
    check = replay(store, sidebyside.pieces_of)
    same = scene_bench.ari(sc.y, check.predict(sc.X))
    out[-1]["replay_ari"] = same
    for name, j in joins.items():
        t = time.process_time()
        m = replay(store, lambda span, grid, rec, j=j: pieces_joined(span, grid, rec, j))
        lab = m.predict(sc.X)
        post = time.process_time() - t
        sec = (m.auto or {}).get("second") or {}
        out.append(
            {
                **base,
                "variant": name,
                "ari": scene_bench.ari(sc.y, lab),
                "cpu": cpu,
                "cpu_post": post,
                "spans": int(m.n_spans),
                "split": list(sec.get("split", [])),
            }
        )
    return out


def read(paths: Sequence[Path]) -> dict[tuple[int, str], dict]:
    return spirals_two.read(paths)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--gate", type=Path, nargs="*")
    ap.add_argument("--list", nargs=2, type=int, metavar=("FIRST", "COUNT"), help="scene descriptions")
    ap.add_argument("--hdbscan", action="store_true", help="also non-private HDBSCAN rows")
    ap.add_argument(
        "--plain",
        metavar="LABEL",
        help="held out: only the library's own fit, its row named LABEL (a tree's)",
    )
    ap.add_argument("--heldout", type=Path, nargs="*", help="the held-out gate's table of these rows")
    args = ap.parse_args(argv)
    if args.list:
        for r in describe(*args.list):
            print(json.dumps(r))
        return 0
    if args.gate:
        print(gate_table(read(args.gate)))
        return 0
    if args.heldout:
        print(heldout(read(args.heldout)))
        return 0
    assert args.out is not None
    if args.plain:
        return plain(args, args.plain)
    done = {s for s, _ in read([args.out])} if args.out.exists() else set()
    for seed in (int(s) for s in args.seeds.split(",") if s):
        if seed in done:
            continue
        rows = rows_of(seed, JOINS)
        if args.hdbscan:
            rows.append(hdbscan_row(seed))
        with args.out.open("a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
        best = max(rows[2:], key=lambda r: r["ari"]) if len(rows) > 2 else rows[-1]
        print(
            f"{seed} today {rows[0]['ari']:.3f} 3d6k {rows[1]['ari']:.3f} "
            f"(replay {rows[1].get('replay_ari')}) best {best['variant']} {best['ari']:.3f}",
            file=sys.stderr,
        )
    return 0


def plain(args: argparse.Namespace, label: str) -> int:
    """Held out: each seed's fit by the library on PYTHONPATH (row ``label``),
    and HDBSCAN (``--hdbscan``) where it has no row yet."""
    done = set(read([args.out])) if args.out.exists() else set()
    for seed in (int(s) for s in args.seeds.split(",") if s):
        rows = []
        if (seed, label) not in done:
            sc = scene_of(seed)
            model, labels, cpu = fit(sc, seed)
            sec = (model.auto or {}).get("second") or {}
            base = {"seed": seed, "d": sc.d, "n": sc.n, "k": sc.k, "tags": " ".join(sorted(sc.tags))}
            rows.append(
                {
                    **base,
                    "variant": label,
                    "ari": scene_bench.ari(sc.y, labels),
                    "cpu": cpu,
                    "spans": int(model.n_spans),
                    "second": bool(sec),
                    "join": sec.get("join"),
                    "split": list(sec.get("split", [])),
                }
            )
        if args.hdbscan and (seed, "hdbscan") not in done:
            rows.append(hdbscan_row(seed))
        with args.out.open("a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
        for r in rows:
            print(
                f"{seed} {r['variant']}: {r['ari']:.3f} split {r.get('split')} cpu {r['cpu']:.2f}",
                file=sys.stderr,
            )
    return 0


#: the held-out sets of results/scenes/strands-join-seeds.md (from ``--list`` descriptions, before any fit)
HT_SEEDS = (
    90007, 90040, 90051, 90060, 90085, 90108, 90109, 90112, 90120, 90129,
    90136, 90137, 90160, 90174, 90175, 90191, 90202, 90220, 90222, 90247,
    90308, 90309, 90312, 90315, 90319, 90321, 90330, 90356, 90450, 90460,
    90474, 90476, 90488, 90501, 90507, 90509, 90514, 90517, 90526, 90528,
    90533, 90540, 90550, 90566, 90568, 90572, 90589,
)  # fmt: skip
HG_SEEDS = (
    90002, 90005, 90006, 90007, 90011, 90016, 90020, 90022, 90023, 90025,
    90027, 90032, 90033, 90034, 90035, 90036, 90037, 90038, 90040, 90044,
    90047, 90049, 90051, 90056, 90060, 90061, 90062, 90065, 90067, 90068,
    90072, 90076, 90077,
)  # fmt: skip


def heldout(rows: dict[tuple[int, str], dict], a: str = "base", b: str = "lever") -> str:
    """The held-out gate's numbers: per set, a scene not fitted on both trees
    counts as 0 (the same release by construction), its family from its description."""
    sets = {
        "HT": HT_SEEDS,
        "HG": HG_SEEDS,
        "C heldout": tuple(s for s in spirals_two.C_SEEDS if s < 30_000),
        "C close-heldout": tuple(s for s in spirals_two.C_SEEDS if s >= 30_000),
    }
    lines = [
        "| set | scenes (fitted) | paired | better | worse | worst | fitted: base, lever, hdbscan "
        "| CPU ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fams = ["", "| set | family | scenes | paired |", "|---|---|---|---|"]
    for name, seeds in sets.items():
        fit_ = [s for s in seeds if (s, a) in rows and (s, b) in rows]
        if not fit_:
            continue
        diff = {s: rows[(s, b)]["ari"] - rows[(s, a)]["ari"] for s in fit_}
        d = np.array([diff.get(s, 0.0) for s in seeds])
        means = [
            np.mean([rows[(s, v)]["ari"] for s in fit_ if (s, v) in rows] or [np.nan])
            for v in (a, b, "hdbscan")
        ]
        ratio = np.median([rows[(s, b)]["cpu"] / max(rows[(s, a)]["cpu"], 1e-9) for s in fit_])
        w = int(np.argmin(d))
        lines.append(
            f"| {name} | {len(seeds)} ({len(fit_)}) | {d.mean():+.4f} | {int((d > 0.005).sum())} | "
            f"{int((d < -0.005).sum())} | {d[w]:+.3f} ({seeds[w]}) | "
            f"{means[0]:.3f}, {means[1]:.3f}, {means[2]:.3f} | {ratio:.2f} |"
        )
        tags = {s: set(rows[(s, a)]["tags"].split()) if s in diff else scene_of(s).tags for s in seeds}
        for f in spirals_two.FAMILIES:
            idx = [i for i, s in enumerate(seeds) if f in tags[s]]
            if idx:
                fams.append(f"| {name} | {f} | {len(idx)} | {d[idx].mean():+.4f} |")
    return "\n".join(lines + fams) + "\n"


#: T and G of the spirals study, their 3-D scenes (2-D scenes: the same release by construction)
def gate_table(rows: dict[tuple[int, str], dict], base: str = "today") -> str:
    variants = sorted({v for _, v in rows} - {base, "hdbscan"})
    out = [
        "| variant | T paired | T b/w | G paired | fam worst | worst | meets |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in variants:
        g = spirals_two.gate(rows, v, spirals_two.T_SEEDS, spirals_two.G_SEEDS)
        fam = min((m, f) for f, (m, *_r) in g["families"].items() if not np.isnan(m))
        ss = [
            s
            for s in set(spirals_two.T_SEEDS) | set(spirals_two.G_SEEDS)
            if (s, v) in rows and (s, base) in rows
        ]
        diff = {s: rows[(s, v)]["ari"] - rows[(s, base)]["ari"] for s in ss}
        w = min(diff, key=lambda s: diff[s])
        out.append(
            f"| {v} | {g['T'][0]:+.4f} ({g['T'][1]}) | {g['T'][2]}/{g['T'][3]} | "
            f"{g['G'][0]:+.4f} ({g['G'][1]}) | {fam[1]} {fam[0]:+.4f} | {diff[w]:+.3f} ({w}) | {g['meets']} |"
        )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
