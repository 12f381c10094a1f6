"""Issue 30: the sparse release's threshold theta against fit time and ARI.

For each (d, shape, seed) a fresh process makes the points (the benchmark's
blobs of :mod:`benchmarks.blobs_nd`, or ``wide``: the same blobs at twice
their sigma, whose clusters' cells hold few points each), and for each
alpha (``--scales`` times the benchmark's) fits the ``dbscan`` package
twice (the second timed, its labels the reference) and dpdbscan (epsilon 1,
bounds (0, 1), MinPts 20, the library's defaults otherwise) once to warm up,
then at every theta of ``--thetas`` (steps above the default's theta, or the
default's own with ``d``) in ``--rounds`` interleaved rounds. Reported per
fit: user+sys CPU of the process, the theta, the released cells, the expected released empty cells
of the grid and of one alpha-ball's ``kappa`` cells, and the ARI of
dpdbscan's predict labels against DBSCAN's, and the model's spans and
those that some input point is predicted into. With ``--rules`` each
sparse point is fitted at today's theta and at each rule's (:data:`RULES`),
and each dense point also as a sparse release at its default theta (for
the dense-or-sparse rules of :data:`KINDS`); without, dense releases are
fitted at the default only. One JSON object per line; ``--summarise FILE
--rules R --kinds K`` prints R (with K) against today's default (FILE plain
or gzip, as ``results/hdrule/decide.jsonl.gz``).

    python -m benchmarks.survey_theta --dims 5,8 --scales 1,2 --seeds 0 --thetas 0,1,2,3,4
    python -m benchmarks.survey_theta --dims 4,8 --seeds 3 --rules "reach 2^35" --out runs.jsonl
    python -m benchmarks.survey_theta --filter --dims 2,5,8 --shapes blobs,elongated --seeds 6,7,8

With ``--filter`` each point's seeded release is fitted with the span
filter off and on (:func:`run_filter`; ``--summarise FILE --filter``: its
table).

The ``dbscan`` package runs in a child process of its own, stopped between
its calls (:class:`benchmarks.peer.Peer`, as in ``sweep_dims`` and
``survey_dims``): its worker threads keep running after a call, and in this
process they were counted as dpdbscan's CPU (rows before branch hdmerge;
``dbscan_cpu`` is now the child's, its threads counted).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import math
import os
import subprocess
import sys
import warnings
from typing import Any

import numpy as np

from . import blobs_nd
from .peer import Peer
from .survey_dims import _timed

#: The function the peer process runs (:data:`benchmarks.peer.FUNCTIONS`; the tests' stand-in)
PEER = "dbscan"

SHAPES = {
    "blobs": blobs_nd.SIGMA,
    "wide": 2 * blobs_nd.SIGMA,
    "elongated": blobs_nd.SIGMA,
    # issue 30's "other shapes" (branch hdrule3): see :func:`points`
    "aniso": blobs_nd.SIGMA,
    "uneven": blobs_nd.SIGMA,
    "bg20": blobs_nd.SIGMA,
}
#: ``aniso``: each cluster's sds along its own random axes, log-uniform in this range
ANISO_SD = (0.003, 0.03)
#: ``uneven``: cluster i (from 1) holds a share proportional to 1 / i**UNEVEN_POWER
UNEVEN_POWER = 1.0
#: ``bg20``: the share of uniform background points
BG20 = 0.2


def points(d: int, shape: str, seed: int, n: int = 100_000) -> np.ndarray:
    """The survey's points: the benchmark's blobs (``blobs``, ``wide``) or
    ``elongated``: the same 30 centres, 90% of the points in Gaussian
    clusters of :func:`experiments.scenes.elongated` (sd 0.04 along a random
    axis, 0.01 across, truncated at 2.5 sd), 10% uniform, clipped to [0, 1]^d.
    Also (:func:`other`): ``aniso``, ``uneven`` and ``bg20``."""
    if shape in ("aniso", "uneven", "bg20"):
        return other(d, shape, seed, n)
    if shape != "elongated":
        return blobs_nd.blobs(n, d, seed, sigma=SHAPES[shape])
    from experiments import scenes

    rng = np.random.default_rng([seed, 7])
    c = rng.uniform(0.15, 0.85, size=(blobs_nd.N_CENTRES, d))
    n_bg = int(round(blobs_nd.BACKGROUND * n))
    sizes = np.bincount(rng.integers(0, len(c), size=n - n_bg), minlength=len(c))
    r = 4 * SHAPES[shape] * scenes.TRUNCATE
    parts = [ci + scenes.elongated(rng, int(k), r, d, 4.0) for ci, k in zip(c, sizes)]
    X = np.vstack(parts + [rng.uniform(0.0, 1.0, size=(n_bg, d))])
    return np.clip(X, 0.0, 1.0)


def other(d: int, shape: str, seed: int, n: int = 100_000) -> np.ndarray:
    """30 centres uniform in [0.15, 0.85]^d, as the benchmark's, and:

    * ``aniso``: 90% of the points in anisotropic Gaussian clusters, each
      with its own random rotation and sds log-uniform in :data:`ANISO_SD`
      along its axes; equal shares; 10% uniform;
    * ``uneven``: 90% in clusters of sigma 0.01 whose shares fall as
      1 / rank (:data:`UNEVEN_POWER`; the largest holds 22.6%, the smallest
      0.75% of the clustered points); 10% uniform;
    * ``bg20``: the benchmark's blobs with 20% uniform background
      (:data:`BG20`).

    Clipped to [0, 1]^d, from one generator seeded by (seed, 11)."""
    rng = np.random.default_rng([seed, 11])
    k = blobs_nd.N_CENTRES
    c = rng.uniform(0.15, 0.85, size=(k, d))
    n_bg = int(round((BG20 if shape == "bg20" else blobs_nd.BACKGROUND) * n))
    share = np.ones(k) if shape != "uneven" else 1.0 / np.arange(1, k + 1) ** UNEVEN_POWER
    sizes = rng.multinomial(n - n_bg, share / share.sum())
    parts = []
    for ci, m in zip(c, sizes):
        z = rng.normal(0.0, 1.0, size=(int(m), d))
        if shape == "aniso":
            q, _ = np.linalg.qr(rng.normal(size=(d, d)))
            sd = np.exp(rng.uniform(np.log(ANISO_SD[0]), np.log(ANISO_SD[1]), size=d))
            parts.append(ci + (z * sd) @ q.T)
        else:
            parts.append(ci + blobs_nd.SIGMA * z)
    X = np.vstack(parts + [rng.uniform(0.0, 1.0, size=(n_bg, d))])
    return np.clip(X, 0.0, 1.0)


def _tail(theta: float) -> float:
    """P(Z >= theta) of the discrete Laplace at epsilon 1 (what these fits draw)."""
    q = math.exp(-1.0)
    return q ** math.ceil(theta) / (1.0 + q)


def run_filter(d: int, shape: str, seed: int, scales: list[float]) -> None:
    """``--filter``: each alpha's release (the default histogram and theta,
    seeded) fitted with the span filter of :mod:`dpdbscan.post.noisespans`
    off and on, the same noise draws (where the release is not sparse the
    filter cannot act: one fit). Per fit: user+sys CPU, the ARI of predict
    labels against the ``dbscan`` package's, the spans and those that some
    input point is predicted into."""
    from sklearn.metrics import adjusted_rand_score

    from dpdbscan import DPDBSCAN
    from dpdbscan.research import span_noise_filter

    X = points(d, shape, seed)
    m = blobs_nd.MIN_SAMPLES
    with warnings.catch_warnings(), Peer(X, PEER) as other:
        warnings.simplefilter("ignore")
        for scale in scales:
            alpha = round(blobs_nd.ALPHA[d] * scale, 6)
            ref = other.labels(alpha, m)
            for on in (False, True):
                est = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed)
                with span_noise_filter(on):
                    cpu, _, _ = _timed(lambda e=est: e.fit(X))
                labels = est.predict(X)
                kind = str(est.histogram_.kind)
                row = {
                    "d": d,
                    "shape": shape,
                    "seed": seed,
                    "scale": scale,
                    "alpha": alpha,
                    "filter": on,
                    "histogram": kind,
                    "theta": float(est.theta_) if kind == "sparse" else None,
                    "cpu": cpu,
                    "ari": float(adjusted_rand_score(ref, labels)),
                    "dbscan_clusters": int(ref.max()) + 1,
                    "spans": int(est.spans_.n_spans),
                    "spans_with_points": int(np.unique(labels[labels >= 0]).size),
                    "load": os.getloadavg()[0],
                }
                print(json.dumps(row), flush=True)
                if kind != "sparse":
                    print(json.dumps({**row, "filter": True}), flush=True)
                    break


def _side(pairs: list, side: int, key: str) -> float:
    """The mean of ``key`` over the (off, on) ``pairs``' side ``side``."""
    return sum(float(p[side][key]) for p in pairs) / len(pairs)


def summarise_filter(path: str) -> str:
    """``--filter`` rows: per (d, shape, alpha scale) the mean ARI off and
    on, the mean and worst fall (off less on) over the seeds, the spans over
    no point and the spans with points (DBSCAN's clusters), means over the
    seeds; then each d's mean fall over every shape, alpha and seed."""
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        rows = [json.loads(ln) for ln in f if ln.startswith("{") and "error" not in ln]
    by: dict[tuple, dict[bool, dict]] = {}
    for r in rows:
        by.setdefault((r["d"], r["shape"], r["scale"], r["seed"]), {})[r["filter"]] = r
    cells: dict[tuple, list] = {}
    for (d, shape, scale, _seed), pair in sorted(by.items()):
        if False in pair and True in pair:
            cells.setdefault((d, shape, scale), []).append((pair[False], pair[True]))
    out = [
        "| d | shape | α × | seeds | release | ARI off | ARI on | mean fall | worst fall | "
        "spans without points off -> on | spans with points off -> on (DBSCAN) |",
        "|" + "---|" * 11,
    ]
    per_d: dict[int, list[float]] = {}
    avg = lambda xs: sum(xs) / len(xs)  # noqa: E731
    for (d, shape, scale), c in cells.items():
        falls = [a["ari"] - b["ari"] for a, b in c]
        per_d.setdefault(d, []).extend(falls)
        kinds = sorted({a["histogram"] + (f" {a['theta']:g}" if a["theta"] else "") for a, _ in c})
        off = functools.partial(_side, c, 0)
        on = functools.partial(_side, c, 1)
        out.append(
            f"| {d} | {shape} | {scale:g} | {len(c)} | {', '.join(kinds)} | {off('ari'):.4f} | "
            f"{on('ari'):.4f} | {avg(falls):+.4f} | {max(falls):+.4f} | "
            f"{off('spans') - off('spans_with_points'):.1f} -> {on('spans') - on('spans_with_points'):.1f} | "
            f"{off('spans_with_points'):.1f} -> {on('spans_with_points'):.1f} "
            f"({off('dbscan_clusters'):.1f}) |"
        )
    out.append("")
    out.append("| d | fits | mean fall | worst fall |")
    out.append("|---|---|---|---|")
    for d, falls in sorted(per_d.items()):
        out.append(f"| {d} | {len(falls)} | {avg(falls):+.4f} | {max(falls):+.4f} |")
    return "\n".join(out)


def run(
    d: int, shape: str, seed: int, scales: list[float], steps: list[int], rounds: int, rules: list[str]
) -> None:
    from sklearn.metrics import adjusted_rand_score

    from dpdbscan import DPDBSCAN

    X = points(d, shape, seed)
    m = blobs_nd.MIN_SAMPLES
    # the dbscan package in a process of its own, stopped between its calls
    # (benchmarks/peer.py): its worker threads would count as dpdbscan's CPU
    with warnings.catch_warnings(), Peer(X, PEER) as other:
        warnings.simplefilter("ignore")
        for scale in scales:
            alpha = round(blobs_nd.ALPHA[d] * scale, 6)
            other.fit(alpha, m)  # warm-up
            db_cpu, _, out = other.fit(alpha, m, labels=True)
            assert out is not None
            ref = np.asarray(out)
            warm = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0)).fit(X)
            kind = str(warm.histogram_.kind)
            theta0 = float(warm.theta_)
            n, kappa = float(warm.n_cells_), int(warm.kappa_)
            # each variant: the estimator's extra arguments
            variants: list[dict[str, Any]] = [{}]
            if kind == "sparse":
                if RULES["ball 32"](n, kappa) != theta0:
                    print(f"d={d} alpha={alpha}: theta {theta0:g} is not ball 32's", file=sys.stderr)
                chosen = (
                    [theta0 + s for s in steps]
                    if not rules
                    else [theta0] + [RULES[x](n, kappa) for x in rules]
                )
                variants = [{"theta": t} for t in sorted(set(chosen))]
            elif rules:
                variants.append({"histogram": "sparse"})  # the sparse release at its default theta
            for r in range(rounds):
                for extra in variants:
                    est = DPDBSCAN(alpha, min_samples=m, epsilon=1.0, bounds=(0.0, 1.0), **extra)
                    cpu, wall, _ = _timed(lambda e=est: e.fit(X))
                    labels = est.predict(X)
                    got = str(est.histogram_.kind)
                    t = float(est.theta_) if got == "sparse" else None
                    row = {
                        "d": d,
                        "shape": shape,
                        "seed": seed,
                        "scale": scale,
                        "alpha": alpha,
                        "round": r,
                        "histogram": got,
                        "default_histogram": kind,
                        "n_cells": n,
                        "kappa": kappa,
                        "theta": t,
                        "step": t - theta0 if t is not None and kind == "sparse" else 0.0,
                        "released": int(est.histogram_.n_released),
                        "empty_grid": n * _tail(t) if t is not None else 0.0,
                        "empty_ball": kappa * _tail(t) if t is not None else 0.0,
                        "cpu": cpu,
                        "wall": wall,
                        "dbscan_cpu": db_cpu,
                        "ari": float(adjusted_rand_score(ref, labels)),
                        "dbscan_clusters": int(ref.max()) + 1,
                        # spans that no input point is predicted into
                        "spans": int(est.spans_.n_spans),
                        "spans_with_points": int(np.unique(labels[labels >= 0]).size),
                        **_filtered(est, labels, ref, m),
                        "load": os.getloadavg()[0],
                    }
                    print(json.dumps(row), flush=True)


def _filtered(est: Any, labels: np.ndarray, ref: np.ndarray, min_samples: int) -> dict[str, Any]:
    """A span filter measured, not applied (issue 30, gap (c)): drop the
    spans of a sparse release whose own released mass (the values of their
    core cells) is at most the 0.99 quantile of k released noise cells'
    (k theta + a negative binomial of k draws at epsilon 1: each released
    empty cell is theta + Geometric), k the span's cells; or below MinPts.
    The ARI and spans after each, the dropped spans' points as noise."""
    from scipy import stats
    from sklearn.metrics import adjusted_rand_score

    if str(est.histogram_.kind) != "sparse" or est.spans_.grid != est.histogram_.grid:
        return {}
    span, theta = est.spans_.labels, float(est.theta_)
    mass = np.bincount(
        span, weights=est.histogram_.value_at(est.spans_.core_keys), minlength=est.spans_.n_spans
    )
    k = np.bincount(span, minlength=est.spans_.n_spans)
    q = math.exp(-1.0)
    law = k * theta + stats.nbinom.ppf(0.99, k, 1.0 - q)
    out: dict[str, Any] = {}
    for name, drop in (("law", mass <= law), ("minpts", mass < min_samples)):
        kept = np.where(np.isin(labels, np.flatnonzero(drop)), -1, labels)
        out[f"{name}_ari"] = float(adjusted_rand_score(ref, kept))
        out[f"{name}_spans"] = int((~drop).sum())
        out[f"{name}_spans_with_points"] = int(np.unique(kept[kept >= 0]).size)
    return out


def _least(bound: float, cells: float) -> float:
    """theta as the library's universe cap finds it for ``cells`` cells and
    the cap ``bound`` (a guess from the tail's decay, then up)."""
    guess = math.log(max(cells, 1) / max(bound, 1.0))
    t = float(math.ceil(max(1.0, guess)))
    while cells * _tail(t) > bound:
        t += 1.0
    return t


def _ball(bound: float, kappa: int) -> float:
    """The least integer theta >= 1 with ``kappa * P(Z >= theta) <= bound``."""
    t = 1.0
    while kappa * _tail(t) > bound:
        t += 1.0
    return t


def _today(n: float, k: int) -> float:
    """The default theta before this survey's rules: 2^20 over the grid and 32 per ball."""
    return max(_least(2.0**20, n), _ball(32, k))


#: the rules compared: name -> theta from (grid cells, kappa)
RULES: dict[str, Any] = {
    "2^20": lambda n, k: _least(2.0**20, n),
    "2^16": lambda n, k: _least(2.0**16, n),
    "2^14": lambda n, k: _least(2.0**14, n),
    **{
        f"ball {c:g}": (lambda n, k, c=c: max(_least(2.0**20, n), _ball(c, k)))
        for c in (0.25, 0.5, 1, 2, 4, 4.5, 8, 16, 32)
    },
    # ... and at most 2^K expected empty cells times kappa (released noise
    # cells times the cells within alpha of each: the density test's pairs)
    **{f"reach 2^{e}": (lambda n, k, e=e: max(_today(n, k), _least(2.0**e / k, n))) for e in (34, 35, 36)},
    # ... only where today's theta leaves at least half a released noise cell
    # per alpha-ball in expectation (hdrule3's second candidate: the first
    # changed 1x too, where the reach rules cost accuracy and saved little)
    "reach 2^36 coarse": lambda n, k: _coarse(n, k, 2.0**36, 0.5),
}


def _coarse(n: float, k: int, reach: float, per_ball: float) -> float:
    """Today's theta, raised to the reach cap's only where today's leaves at
    least ``per_ball`` released empty cells in expectation per alpha-ball."""
    today = _today(n, k)
    return today if k * _tail(today) < per_ball else max(today, _least(reach / k, n))


#: the dense-or-sparse rules compared: name -> whether a grid of at most
#: 2^23 cells is released sparse, from (grid cells, kappa)
KINDS: dict[str, Any] = {
    "dense": lambda n, k: False,
    **{f"work 2^{e}": (lambda n, k, e=e: n * k > 2.0**e) for e in (30, 31, 32, 33)},
    "kappa 2^8": lambda n, k: k > 2**8,
}


def summarise(path: str, rule: str, kinds: str, last: int) -> str:
    """The rule ``rule`` (with the dense-or-sparse rule ``kinds``) against
    today's default per (d, shape, alpha scale): theta, mean CPU of round
    ``last`` and its ratio to the ``dbscan`` package's, mean ARI over the
    rounds, the mean and the worst (d, shape, alpha, seed) fall, and the
    mean number of spans that no input point is predicted into."""
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        rows = [json.loads(ln) for ln in f if ln.startswith("{") and "error" not in ln]
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["d"], r["shape"], r["scale"], r["seed"]), []).append(r)
    cells: dict[tuple, list] = {}
    for (d, shape, scale, _seed), rs in sorted(by.items()):
        base = [r for r in rs if r["histogram"] == r["default_histogram"] and r["step"] == 0]
        if not base:
            continue
        n, k = base[0]["n_cells"], base[0]["kappa"]
        if base[0]["default_histogram"] == "sparse":
            want = ("sparse", RULES[rule](n, k))
        else:
            want = ("sparse", _today(n, k)) if KINDS[kinds](n, k) else ("dense", None)
        pick = [r for r in rs if (r["histogram"], r["theta"]) == want]
        if not pick:
            continue
        cells.setdefault((d, shape, scale), []).append((base, pick))
    mean = lambda key, rr: sum(float(r[key]) for r in rr) / len(rr)  # noqa: E731
    out = [
        "| d | shape | α × | seeds | theta today -> rule | CPU today | CPU rule | ratio to `dbscan` | "
        "ARI today | ARI rule | mean fall | worst fall | spans without points |",
        "|" + "---|" * 13,
    ]
    for (d, shape, scale), c in cells.items():
        th = lambda rr: "dense" if rr[0]["theta"] is None else f"{rr[0]['theta']:g}"  # noqa: E731
        cpu0 = sum(mean("cpu", [r for r in b if r["round"] == last] or b) for b, _ in c) / len(c)
        cpu1 = sum(mean("cpu", [r for r in p if r["round"] == last] or p) for _, p in c) / len(c)
        dbc = sum(mean("dbscan_cpu", b) for b, _ in c) / len(c)
        falls = [mean("ari", b) - mean("ari", p) for b, p in c]
        a0 = sum(mean("ari", b) for b, _ in c) / len(c)
        a1 = sum(mean("ari", p) for _, p in c) / len(c)
        e0 = sum(mean("spans", b) - mean("spans_with_points", b) for b, _ in c) / len(c)
        e1 = sum(mean("spans", p) - mean("spans_with_points", p) for _, p in c) / len(c)
        out.append(
            f"| {d} | {shape} | {scale:g} | {len(c)} | {th(c[0][0])} -> {th(c[0][1])} | {cpu0:.3f} s | "
            f"{cpu1:.3f} s | {cpu0 / dbc:.1f}x -> {cpu1 / dbc:.1f}x | {a0:.4f} | {a1:.4f} | "
            f"{sum(falls) / len(falls):+.4f} | {max(falls):+.4f} | {e0:.1f} -> {e1:.1f} |"
        )
    return "\n".join(out)


def gates(path: str, rule: str, kinds: str, last: int = 1) -> tuple[str, bool]:
    """results/hdrule3/RULE.md's gates 2-4 for the theta rule ``rule`` with
    the dense-or-sparse rule ``kinds``, over the points either changes: per
    (d, shape, alpha) the mean ARI over the seeds (both rounds) and its
    worst seed's fall, the CPU ratio to the ``dbscan`` package (round
    ``last``, means over the seeds) today and under the rule, and the spans
    over no point; then whether each gate holds. Gate 2 exempts a point whose
    mean ARI today is below :data:`USELESS_ARI` (judged by time only)."""
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        rows = [json.loads(ln) for ln in f if ln.startswith("{") and "error" not in ln]
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["d"], r["shape"], r["scale"], r["seed"]), []).append(r)
    cells: dict[tuple, list] = {}
    for (d, shape, scale, _seed), rs in sorted(by.items()):
        base = [r for r in rs if r["histogram"] == r["default_histogram"] and r["step"] == 0]
        if not base:
            continue
        n, k = base[0]["n_cells"], base[0]["kappa"]
        if base[0]["default_histogram"] == "sparse":
            want: tuple = ("sparse", RULES[rule](n, k))
        else:
            want = ("sparse", _today(n, k)) if KINDS[kinds](n, k) else ("dense", None)
        pick = [r for r in rs if (r["histogram"], r["theta"]) == want]
        if pick and (pick[0]["histogram"], pick[0]["theta"]) != (base[0]["histogram"], base[0]["theta"]):
            cells.setdefault((d, shape, scale), []).append((base, pick))
    mean = lambda key, rr: sum(float(r[key]) for r in rr) / len(rr)  # noqa: E731
    lastr = lambda rr: [r for r in rr if r["round"] == last] or rr  # noqa: E731
    out = [
        "| d | shape | α × | seeds | release today -> rule | ratio to `dbscan` today -> rule | "
        "ARI today -> rule | mean / worst fall | spans over no point | gate 2 | gate 3 |",
        "|" + "---|" * 11,
    ]
    ok2 = ok3 = True
    cpu_t = cpu_r = spans_t = spans_r = 0.0
    for (d, shape, scale), c in cells.items():
        th = lambda rr: "dense" if rr[0]["theta"] is None else f"sparse {rr[0]['theta']:g}"  # noqa: E731
        dbc = sum(mean("dbscan_cpu", b) for b, _ in c) / len(c)
        c0 = sum(mean("cpu", lastr(b)) for b, _ in c) / len(c)
        c1 = sum(mean("cpu", lastr(p)) for _, p in c) / len(c)
        falls = [mean("ari", b) - mean("ari", p) for b, p in c]
        a0 = sum(mean("ari", b) for b, _ in c) / len(c)
        a1 = sum(mean("ari", p) for _, p in c) / len(c)
        e0 = sum(mean("spans", b) - mean("spans_with_points", b) for b, _ in c) / len(c)
        e1 = sum(mean("spans", p) - mean("spans_with_points", p) for _, p in c) / len(c)
        cpu_t, cpu_r, spans_t, spans_r = cpu_t + c0 / dbc, cpu_r + c1 / dbc, spans_t + e0, spans_r + e1
        g2 = a0 < USELESS_ARI or (sum(falls) / len(falls) <= 0.005 and max(falls) <= 0.02)
        g3 = c1 / dbc <= 1.10 * c0 / dbc
        ok2, ok3 = ok2 and g2, ok3 and g3
        out.append(
            f"| {d} | {shape} | {scale:g} | {len(c)} | {th(c[0][0])} -> {th(c[0][1])} | "
            f"{c0 / dbc:.2f}x -> {c1 / dbc:.2f}x | {a0:.4f} -> {a1:.4f} | "
            f"{sum(falls) / len(falls):+.4f} / {max(falls):+.4f} | {e0:.1f} -> {e1:.1f} | "
            f"{'ok' if g2 else 'FAIL'}{' (exempt)' if a0 < USELESS_ARI else ''} | {'ok' if g3 else 'FAIL'} |"
        )
    ok3 = ok3 and cpu_r < cpu_t
    ok4 = spans_r <= spans_t
    out.append("")
    out.append(
        f"{len(cells)} changed points; sum of ratios to `dbscan` {cpu_t:.1f} -> {cpu_r:.1f}; "
        f"spans over no point {spans_t:.1f} -> {spans_r:.1f} (means over seeds, summed). "
        f"Gate 2 {'holds' if ok2 else 'FAILS'}, gate 3 {'holds' if ok3 else 'FAILS'}, "
        f"gate 4 {'holds' if ok4 else 'FAILS'}."
    )
    return "\n".join(out), ok2 and ok3 and ok4


#: results/hdrule3/RULE.md gate 2: a point whose release today scores a
#: mean ARI below this finds none of DBSCAN's clusters; judged by time only
USELESS_ARI = 0.05


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="5,8")
    ap.add_argument("--shapes", default="blobs,wide")
    ap.add_argument("--scales", default="1,1.5,2,3")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--thetas", default="0,1,2,3,4", help="steps above the default theta")
    ap.add_argument("--rules", default="", help="comma-separated RULES: fit at today's theta and theirs")
    ap.add_argument(
        "--kinds", default="dense", choices=list(KINDS), help="the dense-or-sparse rule summarised"
    )
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", help="append the JSON lines to this file")
    ap.add_argument("--child", help="one (d, shape, seed) as JSON (internal)")
    ap.add_argument("--summarise", help="a JSON lines file of earlier runs: the rules' table")
    ap.add_argument("--filter", action="store_true", help="the span filter off and on, the same release")
    ap.add_argument("--gates", action="store_true", help="with --summarise: results/hdrule3's gates 2-4")
    a = ap.parse_args(argv)
    if a.summarise and a.gates:
        for rule in a.rules.split(","):
            table, ok = gates(a.summarise, rule, a.kinds, a.rounds - 1)
            print(f"rule {rule}, {a.kinds}: {'PASS' if ok else 'FAIL'}\n{table}\n")
        return 0
    if a.summarise and a.filter:
        print(summarise_filter(a.summarise))
        return 0
    if a.summarise:
        for rule in a.rules.split(","):
            print(f"rule {rule}, {a.kinds}:\n" + summarise(a.summarise, rule, a.kinds, a.rounds - 1))
        return 0
    scales = [float(x) for x in a.scales.split(",")]
    steps = [int(x) for x in a.thetas.split(",")]
    if a.child:
        p = json.loads(a.child)
        if a.filter:
            for seed in p["seeds"]:
                run_filter(p["d"], p["shape"], seed, scales)
            return 0
        run(p["d"], p["shape"], p["seed"], scales, steps, a.rounds, [x for x in a.rules.split(",") if x])
        return 0
    for d in (int(x) for x in a.dims.split(",")):
        for shape in a.shapes.split(","):
            seeds = [int(x) for x in a.seeds.split(",")]
            # --filter: one process per (d, shape), its seeds in turn (the compiled steps once)
            for seed in [seeds] if a.filter else seeds:
                spec = json.dumps({"d": d, "shape": shape, "seed": seed, "seeds": seed})
                cmd = [sys.executable, "-m", "benchmarks.survey_theta", "--child", spec]
                cmd += [f"--scales={a.scales}", f"--thetas={a.thetas}", f"--rounds={a.rounds}"]
                cmd += [f"--rules={a.rules}"] + (["--filter"] if a.filter else [])
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                if proc.returncode != 0:
                    err = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
                    lines.append(json.dumps({"d": d, "shape": shape, "seed": seed, "error": err[0][:160]}))
                for ln in lines:
                    print(ln, flush=True)
                    if a.out:
                        with open(a.out, "a") as f:
                            f.write(ln + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
