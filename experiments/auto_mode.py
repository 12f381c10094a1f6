"""The automatic mode on labelled data: ``DPDBSCAN(eps="auto",
min_samples="auto", epsilon=1, bounds=...)`` given only the public bounds and
epsilon, with its default ``selection="levels"`` (each cluster at its own
MinPts) and, from the same release (the same seed), the flat cut
(``selection="flat"``), beside the library's defaults at each set's
hand-picked (alpha, MinPts) and DP-KMeans given the true k (ARI of predict
labels, noise its own class, seeds 0-4). The numbers are in docs/parameters.md.

    python -m experiments.auto_mode                  # the dev suite
    python -m experiments.auto_mode --suite paper    # the paper's six sets (held out)
    python -m experiments.auto_mode --suite generalization   # scikit-learn generators (held out)
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from dpdbscan import DPDBSCAN, SpanModel
from dpdbscan.research import auto_points_per_cell

from . import baselines, datasets, devsuite, generalization, options
from .accuracy import scores


def auto_fit(ds: datasets.Dataset, seed: int, epsilon: float = 1.0, **kw: Any) -> tuple[SpanModel, float]:
    """The automatic mode's release on ``ds`` and its fit time in seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est = DPDBSCAN(
            "auto", min_samples="auto", epsilon=epsilon, bounds=ds.bounds, random_state=seed, **kw
        ).fit(ds.X)
        return est.spans_, time.perf_counter() - t0


def fixed_fit(ds: datasets.Dataset, seed: int, epsilon: float = 1.0) -> SpanModel:
    """A release at the set's hand-picked (alpha, MinPts), library defaults."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (
            DPDBSCAN(
                ds.alpha, min_samples=ds.min_samples, epsilon=epsilon, bounds=ds.bounds, random_state=seed
            )
            .fit(ds.X)
            .spans_
        )


def evaluate(
    sets: Sequence[datasets.Dataset],
    seeds: Iterable[int],
    epsilon: float | dict[str, float] = 1.0,
    kmeans: bool = True,
    guess_n: bool = False,
    flat: bool = True,
    beside: str = "flat",
) -> list[dict]:
    """One row per set: ARI of the automatic mode (``auto``: its default
    selection; ``flat``: the same release with ``selection=beside``, the flat
    cut by default, when ``flat``), of
    the hand-picked fit and of DP-KMeans per seed, and what the automatic
    mode chose. ``epsilon`` is one budget or one per set name (the
    generalization cases have their own)."""
    rows = []
    for ds in sets:
        y = ds.labels
        r: dict[str, list[Any]] = {
            "auto": [],
            "flat": [],
            "fixed": [],
            "kmeans": [],
            "chosen": [],
            "seconds": [],
        }
        eps = epsilon[ds.name] if isinstance(epsilon, dict) else epsilon
        for seed in seeds:
            extra = {"n_expected": float(ds.X.shape[0])} if guess_n else {}
            model, sec = auto_fit(ds, seed, eps, **extra)
            r["auto"].append(scores(y, model.predict(ds.X))["ARI"])
            r["chosen"].append((model.grid.eps, chosen_min_samples(model), model.n_spans))
            r["seconds"].append(sec)
            if flat:
                cut, _ = auto_fit(ds, seed, eps, selection=beside, **extra)
                r["flat"].append(scores(y, cut.predict(ds.X))["ARI"])
            r["fixed"].append(scores(y, fixed_fit(ds, seed, eps).predict(ds.X))["ARI"])
            if kmeans:
                lab = baselines.dp_kmeans(ds.X, ds.k, ds.bounds, eps, seed).labels_
                r["kmeans"].append(scores(y, lab)["ARI"])
        rows.append({"name": ds.name, **r})
        print(
            f"  {ds.name}: auto {np.mean(r['auto']):.3f}"
            + (f", flat cut {np.mean(r['flat']):.3f}" if flat else "")
            + f", hand-picked {np.mean(r['fixed']):.3f}"
            + (f", DP-KMeans {np.mean(r['kmeans']):.3f}" if kmeans else ""),
            file=sys.stderr,
            flush=True,
        )
    return rows


def chosen_min_samples(model: SpanModel) -> str:
    """The MinPts the automatic mode chose: one, or the range of a level selection's."""
    ms = sorted({int(lv["min_samples"]) for lv in (model.auto or {}).get("levels") or []})
    if len(ms) > 1:
        return f"{ms[0]}..{ms[-1]}"
    return str(ms[0] if ms else model.spec.min_samples)


def markdown(rows: list[dict], sets: Sequence[Any]) -> str:
    hand = {ds.name: (ds.alpha, ds.min_samples) for ds in sets}
    flat = bool(rows and rows[0].get("flat"))
    out = [
        "| set | auto ARI | chosen (alpha, MinPts), spans (seed 0) | "
        + ("flat cut ARI | " if flat else "")
        + "hand-picked ARI (alpha, MinPts) | DP-KMeans (true k) | auto >= DP-KMeans | auto s |",
        "|---|---|---|---|---|---|---|" + ("---|" if flat else ""),
    ]
    wins = 0
    for r in rows:
        a, f = np.mean(r["auto"]), np.mean(r["fixed"])
        k = np.mean(r["kmeans"]) if r["kmeans"] else float("nan")
        win = a >= k
        wins += bool(win)
        al, m, n = r["chosen"][0]
        ha, hm = hand[r["name"]]
        cut = f"{np.mean(r['flat']):.3f} ± {np.std(r['flat']):.3f} | " if flat else ""
        out.append(
            f"| {r['name']} | {a:.3f} ± {np.std(r['auto']):.3f} | ({al:.4g}, {m}), {n} | {cut}"
            f"{f:.3f} ({ha:.4g}, {hm}) | {k:.3f} | {'yes' if win else 'no'} | "
            f"{np.median(r['seconds']):.2f} |"
        )

    def mean(key: str) -> float:
        return float(np.mean([np.mean(r[key]) for r in rows]))

    km = mean("kmeans") if rows[0]["kmeans"] else float("nan")
    cut = f"**{mean('flat'):.3f}** | " if flat else ""
    out.append(
        f"| mean | **{mean('auto'):.3f}** | | {cut}**{mean('fixed'):.3f}** | **{km:.3f}** | "
        f"{wins} of {len(rows)} | |"
    )
    return "\n".join(out)


def load(suite: str, names: list[str] | None = None) -> tuple[list[datasets.Dataset], dict[str, float]]:
    """The sets of a suite and the budget of each set that has its own."""
    if suite == "dev":
        return devsuite.load_dev(names or devsuite.DEV_NAMES), {}
    if suite == "paper":
        return devsuite.load_paper(names or devsuite.PAPER_NAMES), {}
    sets, budgets = [], {}
    for name, X, y, eps in generalization.cases():
        _, alpha, minpts = generalization.dbscan_params(X, y)
        k = len(set(y.tolist()) - {-1})
        sets.append(datasets.Dataset(name, X, y, alpha, minpts, (np.full(2, -4.0), np.full(2, 4.0)), k))
        budgets[name] = eps  # the case's own budget
    return sets, budgets


def main(argv: Sequence[str] | None = None) -> int:
    ap = options.parser(__doc__)
    ap.add_argument("--suite", default="dev", choices=("dev", "paper", "generalization"))
    ap.add_argument("--sets", default=None)
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument(
        "--points-per-cell",
        type=float,
        default=None,
        help="study only: the automatic mode's points per base cell",
    )
    ap.add_argument("--no-kmeans", action="store_true")
    ap.add_argument(
        "--no-flat", action="store_true", help="skip the flat cut (selection='flat') of the same release"
    )
    ap.add_argument(
        "--beside",
        default="flat",
        choices=("flat", "one-eps"),
        help="the selection fitted beside the default from the same release (its column 'flat cut ARI')",
    )
    ap.add_argument(
        "--guess-n", action="store_true", help="pass the set's size as the user's public guess n_expected"
    )
    args = ap.parse_args(argv)
    sets, budgets = load(args.suite, options.names(args.sets, ()) or None)
    epsilon = {ds.name: budgets.get(ds.name, args.epsilon) for ds in sets}
    t0 = time.perf_counter()
    with auto_points_per_cell(args.points_per_cell) if args.points_per_cell else contextlib.nullcontext():
        rows = evaluate(
            sets,
            options.seed_range(args.seeds),
            epsilon,
            kmeans=not args.no_kmeans,
            guess_n=args.guess_n,
            flat=not args.no_flat,
            beside=args.beside,
        )
    print(
        f"automatic mode, {args.suite} sets, epsilon = {args.epsilon:g}, seeds {args.seeds}, "
        "ARI of predict labels (noise its own class)"
        + (", n_expected = the set's size" if args.guess_n else ", given only bounds and epsilon")
        + "\n"
    )
    print(markdown(rows, sets))
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
