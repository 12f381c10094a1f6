"""Write the span-model files of dpdbscan 0.2.0 kept as test fixtures.

Run against a checkout of the tag v0.2.0, NOT today's code (the point is
files written by the old release)::

    git worktree add --detach /tmp/v020 v0.2.0
    PYTHONPATH=/tmp/v020/src python tests/model/fixtures_0_2_0/make_fixtures.py
    git worktree remove /tmp/v020

The script refuses to run unless ``dpdbscan.__version__`` is ``"0.2.0"``.
It writes, into its own folder, for each fixture NAME:

- ``NAME.spans.json``: the model file, as 0.2.0's ``dpdbscan fit`` (or its
  Python API) wrote it;
- ``NAME.expected.json``: the query points, the labels 0.2.0 predicted for
  them, the model's public facts as 0.2.0 read them, and its summary text.

The data are synthetic (Gaussian blobs drawn with fixed seeds), never the
shared data sets, and the noise is seeded (insecure, research only), so
re-running the script writes the same files. tests/model/test_old_model_files.py
loads them with today's code and checks that they predict the same.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

import dpdbscan
from dpdbscan import DPDBSCAN, load_model, predict_lonlat, save_model, summary, with_params
from dpdbscan.cli.command import main

HERE = Path(__file__).resolve().parent
BOX = (0.0, 0.0, 10.0, 10.0)
CENTRES = np.array([[2.5, 2.5], [7.0, 3.0], [5.0, 7.5]])
#: a small box in San Francisco (about 1.8 km x 2.2 km) for the --geo fixture
GEO_BOX = (-122.42, 37.77, -122.40, 37.79)
GEO_CENTRES = np.array([[-122.415, 37.775], [-122.405, 37.785]])


def blobs(seed: int, n: int = 800, spread: float = 0.35) -> np.ndarray:
    """``n`` points around each of the three centres."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(c, spread, (n, 2)) for c in CENTRES]).clip(0.0, 10.0)


def queries(box, centres, spread: float, seed: int) -> np.ndarray:
    """A 21 x 21 grid over the box and 20 points around each centre."""
    xs = np.linspace(box[0], box[2], 21)
    ys = np.linspace(box[1], box[3], 21)
    grid = np.array([(x, y) for x in xs for y in ys])
    rng = np.random.default_rng(seed)
    near = np.vstack([rng.normal(c, spread, (20, 2)) for c in centres])
    # rounded, so that the points stored are exactly those predicted
    return np.vstack([grid, near]).round(6)


def write_csv(path: Path, cols: list[str], rows) -> Path:
    lines = [",".join(cols)] + [
        ",".join(repr(v) if isinstance(v, float) else str(v) for v in r) for r in rows
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(*argv) -> str:
    """``dpdbscan ARGV`` with 0.2.0's own command line; its standard output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main([str(a) for a in argv])
    if rc != 0:
        raise SystemExit(f"dpdbscan {' '.join(map(str, argv))} exited with {rc}")
    return out.getvalue()


def facts(model) -> dict:
    """The public facts of a model as 0.2.0 reads them."""
    rel, units = model.release, model.release.units
    return {
        "epsilon": rel.epsilon,
        "delta": rel.delta,
        "noise": rel.noise,
        "histogram": rel.histogram,
        "unit": "row" if units is None else "unit",
        "max_cells_per_unit": None if units is None else units.max_cells_per_unit,
        "max_points_per_cell": None if units is None else units.max_points_per_cell,
        "zcdp_rho": rel.rho,
        "unit_choice": rel.unit_choice is not None,
        "eps": model.grid.alpha,
        "release_eps": rel.eps,
        "min_samples": model.spec.min_samples,
        "core": model.spec.core,
        "subcells": model.spec.subcells,
        "n_spans": model.n_spans,
        "n_core_cells": model.n_core_cells,
        "auto": None if model.auto is None else model.auto.get("selection", "auto"),
        "has_histogram": model.histogram is not None,
        "geo": "projection" in model.metadata,
    }


def record(name: str, model_path: Path, points: np.ndarray, geo: bool = False) -> None:
    """``NAME.expected.json``: what 0.2.0 predicts for ``points`` and its facts."""
    model = load_model(model_path)
    labels = predict_lonlat(model, points) if geo else model.predict(points)
    expected = {
        "written_by": dpdbscan.__version__,
        "model": model_path.name,
        "geo": geo,
        "facts": facts(model),
        "points": points.tolist(),
        "labels": [int(v) for v in labels],
        "summary": summary(model),
    }
    # readable diffs: one point a line, the labels on one line
    text = json.dumps({**expected, "points": "@POINTS@", "labels": "@LABELS@"}, indent=1)
    text = text.replace(
        '"@POINTS@"', "[\n  " + ",\n  ".join(json.dumps(q) for q in expected["points"]) + "\n ]"
    )
    text = text.replace('"@LABELS@"', json.dumps(expected["labels"]))
    (HERE / f"{name}.expected.json").write_text(text + "\n")
    size = model_path.stat().st_size
    print(
        f"{name}: {size} bytes, {model.n_spans} spans, {int((labels >= 0).sum())} of {len(labels)} in a span"
    )


def fit(name: str, csv: Path, *options) -> Path:
    """``dpdbscan fit`` into ``NAME.spans.json`` (no GeoJSON, no picture)."""
    path = HERE / f"{name}.spans.json"
    cli("fit", csv, "--header", "-q", "--no-geojson", "--no-png", "--json", path, *options)
    return path


def main_() -> None:
    if dpdbscan.__version__ != "0.2.0":
        sys.exit(f"run against a v0.2.0 checkout (this dpdbscan is {dpdbscan.__version__})")
    Q = queries(BOX, CENTRES, 0.6, seed=7)
    box = [str(b) for b in BOX]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        X = blobs(seed=1)
        pts = write_csv(tmp / "points.csv", ["x", "y"], X.tolist())

        # (a) event level, dense histogram, floating-point Laplace noise, density core test
        p = fit(
            "event_dense_laplace",
            pts,
            "--bounds",
            *box,
            "--eps",
            "0.8",
            "--min-samples",
            "40",
            "--histogram",
            "dense",
            "--noise",
            "laplace",
            "--seed",
            "11",
        )
        record("event_dense_laplace", p, Q)

        # (b) event level, sparse histogram, exact discrete Laplace, the paper's bound core test
        p = fit(
            "event_sparse_bound",
            pts,
            "--bounds",
            *box,
            "--eps",
            "0.8",
            "--min-samples",
            "40",
            "--histogram",
            "sparse",
            "--noise",
            "discrete",
            "--core",
            "bound",
            "--margin",
            "paper",
            "--seed",
            "12",
        )
        record("event_sparse_bound", p, Q)

        # (b') event level, (epsilon, delta) stability histogram
        p = fit(
            "event_stability",
            pts,
            "--bounds",
            *box,
            "--eps",
            "0.8",
            "--min-samples",
            "40",
            "--histogram",
            "stability",
            "--delta",
            "1e-6",
            "--seed",
            "13",
        )
        record("event_stability", p, Q)

        # (c) person level: 300 units of 8 points each near one centre, k = 3, m = 2,
        # discrete Gaussian noise, zCDP
        rng = np.random.default_rng(2)
        homes = CENTRES[rng.integers(0, 3, 300)] + rng.normal(0, 0.3, (300, 2))
        rows = [
            (float(x), float(y), f"u{u}")
            for u, h in enumerate(homes)
            for x, y in np.clip(h + rng.normal(0, 0.25, (8, 2)), 0, 10)
        ]
        units = write_csv(tmp / "units.csv", ["x", "y", "unit"], rows)
        p = fit(
            "person_gaussian",
            units,
            "--columns",
            "x",
            "y",
            "--unit",
            "unit",
            "--bounds",
            *box,
            "--eps",
            "0.8",
            "--min-samples",
            "15",
            "--max-cells-per-unit",
            "3",
            "--max-points-per-cell",
            "2",
            "--delta",
            "1e-6",
            "--seed",
            "21",
        )
        record("person_gaussian", p, Q)

        # (c') person level with k chosen privately (exponential mechanism)
        p = fit(
            "person_auto_k",
            units,
            "--columns",
            "x",
            "y",
            "--unit",
            "unit",
            "--bounds",
            *box,
            "--eps",
            "0.8",
            "--min-samples",
            "15",
            "--max-cells-per-unit",
            "auto",
            "--delta",
            "1e-6",
            "--seed",
            "22",
        )
        record("person_auto_k", p, Q)

        # (d) automatic mode: eps and MinPts from one release, levels selection (the default)
        p = fit(
            "auto_levels",
            pts,
            "--bounds",
            *box,
            "--eps",
            "auto",
            "--min-samples",
            "auto",
            "--n-expected",
            "2400",
            "--max-cells",
            "1024",
            "--seed",
            "31",
        )
        record("auto_levels", p, Q)

        # (d') automatic mode, one (eps, MinPts) for all spans
        p = fit(
            "auto_flat",
            pts,
            "--bounds",
            *box,
            "--eps",
            "auto",
            "--min-samples",
            "auto",
            "--selection",
            "flat",
            "--n-expected",
            "2400",
            "--max-cells",
            "1024",
            "--seed",
            "32",
        )
        record("auto_flat", p, Q)

        # (e) --geo: lon/lat in degrees, projected to km; eps as a length
        rng = np.random.default_rng(3)
        lonlat = np.vstack([rng.normal(c, [0.0012, 0.0010], (600, 2)) for c in GEO_CENTRES])
        geo = write_csv(tmp / "lonlat.csv", ["lon", "lat"], lonlat.tolist())
        p = fit(
            "geo",
            geo,
            "--geo",
            "--bounds",
            *[str(b) for b in GEO_BOX],
            "--eps",
            "60m",
            "--min-samples",
            "30",
            "--seed",
            "41",
        )
        record("geo", p, queries(GEO_BOX, GEO_CENTRES, 0.0015, seed=8), geo=True)

    # (f) the Python API: the estimator, saved without its histogram
    est = DPDBSCAN(0.8, min_samples=40, epsilon=1.0, bounds=(BOX[:2], BOX[2:]), random_state=51)
    est.fit(blobs(seed=5))
    p = HERE / "estimator_no_histogram.spans.json"
    save_model(est.spans_, p, include_histogram=False)
    record("estimator_no_histogram", p, Q)

    # (g) a model re-parameterised from a release (other eps and MinPts, no budget)
    base = load_model(HERE / "event_dense_laplace.spans.json")
    p = HERE / "reparam.spans.json"
    save_model(with_params(base, eps=1.2, min_samples=60), p)
    record("reparam", p, Q)


if __name__ == "__main__":
    main_()
