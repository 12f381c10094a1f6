"""`make accuracy`: ARI / AMI of DP-DBSCAN on the paper's labelled data sets.

Settings: epsilon = 1, the paper's (alpha, MinPts), fixed public bounds per
data set (experiments/datasets.py), library defaults otherwise. Score: mean +-
std over seeds of ARI and AMI of the labels from ``predict`` (noise -1 kept as
its own class), beside the paper's numbers and non-private DBSCAN. The column
"DP-DBSCAN core=bound" runs the library with the paper's upper-bound core test
(``core="bound"``) and its other defaults, "DP-DBSCAN paper proc." with the
paper's whole procedure (``paper.PROCEDURE``), for comparison.

Examples::

    python -m experiments.accuracy                      # 6 sets x seeds 0-9
    python -m experiments.accuracy --seeds 0-2 --datasets moons,t4 --eta 3
    python -m experiments.accuracy --param noise=laplace --param max_empty_cells=1e5

Importable: :func:`evaluate` returns the table as data, :func:`markdown`
renders it.
"""

from __future__ import annotations

import argparse
import ast
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import baselines, data, datasets, options, paper

DEFAULT_DATASETS = datasets.SYNTHETIC + datasets.CLUTO
PAPER_DP = "DP-DBSCAN paper proc."  # the library run with paper.PROCEDURE
BOUND_DP = "DP-DBSCAN core=bound"  # the library run with core="bound"
METHODS = ("DP-DBSCAN", BOUND_DP, PAPER_DP, "DP-KMeans", "DBSCAN", "DBSCAN core-only", "KMeans")
DP_METHODS = ("DP-DBSCAN", BOUND_DP, PAPER_DP)
DETERMINISTIC = ("DBSCAN", "DBSCAN core-only")
# Which paper column each of our methods is compared with. The paper's DBSCAN
# column used core-only labels (its code marks border points as noise).
PAPER_COLUMN = {
    "DP-DBSCAN": "DP-DBSCAN",
    BOUND_DP: "DP-DBSCAN",
    PAPER_DP: "DP-DBSCAN",
    "DP-KMeans": "DP-KMeans",
    "DBSCAN core-only": "DBSCAN",
    "KMeans": "KMeans",
}
METHOD_KEYS = {
    "dpdbscan": "DP-DBSCAN",
    "dpdbscan-bound": BOUND_DP,
    "dpdbscan-paper": PAPER_DP,
    "dpkmeans": "DP-KMeans",
    "dbscan": "DBSCAN",
    "dbscan-core": "DBSCAN core-only",
    "kmeans": "KMeans",
}


def scores(y: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import adjusted_mutual_info_score, adjusted_rand_score

    return {"ARI": float(adjusted_rand_score(y, labels)), "AMI": float(adjusted_mutual_info_score(y, labels))}


class ScoreTable:
    """ARI and AMI of each method's labels against one ground truth, a list
    per method (one entry per run)."""

    def __init__(self, y: np.ndarray, methods: Iterable[str]) -> None:
        self.y = y
        self.scores: dict[str, dict[str, list[float]]] = {m: {"ARI": [], "AMI": []} for m in methods}

    def add(self, method: str, labels: np.ndarray) -> None:
        for key, val in scores(self.y, labels).items():
            self.scores[method][key].append(val)


def evaluate(
    names: Sequence[str] = DEFAULT_DATASETS,
    seeds: Iterable[int] = range(10),
    methods: Sequence[str] = ("DP-DBSCAN", "DBSCAN"),
    epsilon: float = 1.0,
    max_rows: int | None = None,
    **dp_kwargs: Any,
) -> list[dict]:
    """Score each method on each data set; one dict per data set.

    ``dp_kwargs`` go to :class:`dpdbscan.DPDBSCAN` unchanged (eta, beta,
    histogram, ...); the paper-procedure column overrides them with
    ``paper.PROCEDURE``. Randomised methods are run once per seed (DP-DBSCAN
    and DP-KMeans with ``random_state=seed``, KMeans too); DBSCAN once.
    ``max_rows`` subsamples large sets (quick runs only).

    Row keys: dataset, title, n, alpha, min_samples, seeds, scores
    (method -> {"ARI": [...], "AMI": [...]}), n_spans (DP method -> per-seed
    span counts), seconds.
    """
    seeds = list(seeds)
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose from {METHODS}")
    rows = []
    for name in names:
        ds = datasets.load(name, max_rows=max_rows)
        t0 = time.perf_counter()
        table = ScoreTable(ds.labels, methods)
        add = table.add
        n_spans: dict[str, list[int]] = {m: [] for m in DP_METHODS if m in methods}
        settings = {
            "DP-DBSCAN": dp_kwargs,
            BOUND_DP: {**dp_kwargs, "core": "bound"},
            PAPER_DP: {**dp_kwargs, **paper.PROCEDURE},
        }

        for seed in seeds:
            for m in n_spans:
                model = baselines.dp_dbscan(ds, seed, epsilon=epsilon, **settings[m])
                n_spans[m].append(model.spans_.n_spans)
                add(m, model.predict(ds.X))
            if "DP-KMeans" in methods:
                add("DP-KMeans", baselines.dp_kmeans(ds.X, ds.k, ds.bounds, epsilon, seed).labels_)
            if "KMeans" in methods:
                add("KMeans", baselines.kmeans(ds.X, ds.k, seed).labels_)
        if set(DETERMINISTIC) & set(methods):
            db = baselines.dbscan(ds.X, ds.alpha, ds.min_samples)
            if "DBSCAN" in methods:
                add("DBSCAN", db.labels_)
            if "DBSCAN core-only" in methods:
                add("DBSCAN core-only", baselines.core_only_labels(db))
        rows.append(
            {
                "dataset": ds.name,
                "title": ds.title,
                "n": ds.n,
                "alpha": ds.alpha,
                "min_samples": ds.min_samples,
                "seeds": seeds,
                "scores": table.scores,
                "n_spans": n_spans,
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """(mean, sample std); std is 0 for a single value."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def fmt(values: Sequence[float]) -> str:
    if not len(values):
        return "-"
    m, s = mean_std(values)
    return f"{m:.2f}" if len(values) == 1 else f"{m:.2f} ± {s:.2f}"


def paper_value(method: str, dataset: str, metric: str) -> float | None:
    col = PAPER_COLUMN.get(method)
    val = paper.SCORES.get(col, {}).get(dataset) if col else None
    return None if val is None else val[0 if metric == "ARI" else 1]


def markdown(rows: list[dict], metrics: Sequence[str] = ("ARI", "AMI"), with_paper: bool = True) -> str:
    """One table per metric: rows = data sets, our method columns each
    followed by the paper's number where the paper has one."""
    methods = [m for m in METHODS if rows and m in rows[0]["scores"]]
    out = []
    for metric in metrics:
        head = ["Dataset", "(α, MinPts)"]
        for m in methods:
            head.append(m)
            if with_paper and _paper_after(m, methods):
                head.append(f"paper {PAPER_COLUMN[m]}")
        dps = [m for m in DP_METHODS if m in methods]
        head += [f"spans {m}" for m in dps]
        out.append(f"**{metric}** (mean ± std over seeds {seed_text(rows[0]['seeds']) if rows else ''})\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for r in rows:
            cells = [r["title"], f"({r['alpha']:.3g}, {r['min_samples']})"]
            for m in methods:
                cells.append(fmt(r["scores"][m][metric]))
                if with_paper and _paper_after(m, methods):
                    pv = paper_value(m, r["dataset"], metric)
                    cells.append("-" if pv is None else f"{pv:.2f}")
            cells += [f"{np.mean(r['n_spans'][m]):.1f}" for m in dps]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _paper_after(method: str, methods: Sequence[str]) -> bool:
    """Whether the paper's column goes right after ``method``: once per paper
    column, after the last of our methods compared with it."""
    col = PAPER_COLUMN.get(method)
    if col is None:
        return False
    later = methods[list(methods).index(method) + 1 :]
    return not any(PAPER_COLUMN.get(m) == col for m in later)


def seed_text(seeds: Iterable[int]) -> str:
    """Seeds as text: ``0–9`` for a run of three or more, else listed."""
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


# ----------------------------------------------------------------- command line
def parse_seeds(text: str) -> list[int]:
    """``"0-9"`` (inclusive range), ``"0,3,7"`` or ``"5"`` (= seeds 0-4)."""
    text = text.strip()
    try:
        if "," in text:
            return [int(s) for s in text.split(",") if s.strip()]
        if "-" in text:
            a, b = text.split("-", 1)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError
            return list(range(lo, hi + 1))
        n = int(text)
        if n <= 0:
            raise ValueError
        return list(range(n))
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"--seeds takes 'a-b', 'a,b,c' or a count, got {text!r}") from None


def parse_param(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as a Python literal when it is one."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param takes key=value, got {text!r}")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--param key must be a name, got {key!r}")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key, value


def build_parser() -> argparse.ArgumentParser:
    ap = options.parser(__doc__, argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--seeds", type=parse_seeds, default=list(range(10)), help="'0-9' (default), '0,1,2' or a count"
    )
    ap.add_argument(
        "--datasets",
        default=",".join(DEFAULT_DATASETS),
        help="comma-separated names or aliases (t4, t5, t7, chest)",
    )
    ap.add_argument(
        "--methods",
        default="dpdbscan,dpdbscan-bound,dpdbscan-paper,dbscan,dbscan-core",
        help=f"comma-separated from {', '.join(METHOD_KEYS)}",
    )
    ap.add_argument("--epsilon", type=float, default=1.0)
    for name, typ in [
        ("eta", float),
        ("beta", float),
        ("histogram", str),
        ("noise", str),
        ("theta", float),
        ("delta", float),
        ("max-empty-cells", float),
    ]:
        ap.add_argument(
            f"--{name}", type=typ, default=None, help="passed to DPDBSCAN (library default when omitted)"
        )
    ap.add_argument(
        "--no-raise-min-samples",
        action="store_true",
        help="DPDBSCAN(raise_min_samples=False): the theoretical threshold",
    )
    ap.add_argument(
        "--param",
        type=parse_param,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other DPDBSCAN keyword; repeatable",
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the raw rows here")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    kwargs: dict[str, Any] = {}
    for name in ("eta", "beta", "histogram", "noise", "theta", "delta", "max_empty_cells"):
        val = getattr(args, name)
        if val is not None:
            kwargs[name] = val
    if args.no_raise_min_samples:
        kwargs["raise_min_samples"] = False
    kwargs.update(dict(args.param))
    names = [datasets.canonical(n) for n in args.datasets.split(",") if n.strip()]
    try:
        methods = tuple(METHOD_KEYS[m.strip()] for m in args.methods.split(",") if m.strip())
    except KeyError as exc:
        raise SystemExit(f"unknown method {exc}; choose from {', '.join(METHOD_KEYS)}") from None
    t0 = time.perf_counter()
    try:
        rows = evaluate(names, args.seeds, methods, epsilon=args.epsilon, **kwargs)
    except data.MissingDataError as exc:
        raise SystemExit(str(exc)) from None
    shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "library defaults"
    print(f"DP-DBSCAN, epsilon={args.epsilon:g}, {shown}; public bounds per data set\n")
    print(markdown(rows))
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
