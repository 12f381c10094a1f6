"""Empirical privacy audit of text that is not UTF-8 (round 8): whether a
release is made must not hinge on one row.

Four neighbouring pairs, each D: 60 units (``p0`` .. ``p59``) with five
rows each near (2, 2) in the box [0, 5]^2, and D' = D plus one row of a new
unit ``zz`` at (4, 4) whose one text value is not UTF-8:

* ``sqlite``: an SQLite table whose ``TEXT`` unit value holds the bytes
  ``c3 ff 28`` (SQLite does not check its text);
* ``parquet``: a Parquet file whose string unit column holds them (Arrow
  does not check a file's strings);
* ``status``: a Parquet file, ``--trip-ends`` status ``free``/``hired``,
  the new row's status those bytes;
* ``geojson``: a GeoJSON file whose new feature's ``time`` is the JSON
  string ``"\\udcff"`` (a lone surrogate: valid JSON, no UTF-8).

Each is fitted ``runs`` times by ``dpdbscan fit`` (person level, k = 3,
eps = 0.3, MinPts = 5, epsilon = 1, delta = 1e-6; a different seed each
run). The event: a release is made (exit status 0). A Clopper-Pearson bound
at 95% on each side gives an epsilon lower bound at delta
(``audit_dask_ids.epsilon_bound``).

    python -m experiments.audit_non_utf8 --runs 50

Measured (docs/privacy.md section 8, round 8): see there.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sqlite3
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .audit_dask_ids import epsilon_bound

DELTA = 1e-6
BAD = b"\xc3\xff("
FIT = ["--bounds", "0", "0", "5", "5", "--eps", "0.3", "--min-samples", "5", "--max-cells-per-unit", "3"]
FIT += ["--delta", str(DELTA), "--no-png", "--no-geojson", "--no-progress", "--quiet"]


def _rows(extra: bool) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(0)
    X = rng.normal(2.0, 0.05, (300, 2))
    units = [f"p{i % 60}" for i in range(300)]
    if extra:
        X, units = np.vstack([X, [[4.0, 4.0]]]), [*units, "zz"]
    return X, units


def write(case: str, extra: bool, folder: Path) -> tuple[Path, list[str]]:
    """The input file of ``case`` (D', with ``extra``) and its options."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    X, units = _rows(extra)
    n = X.shape[0]
    times = [f"2023-11-14T22:{i % 60:02d}:00Z" for i in range(n)]
    status = [["free", "hired"][(i // 60) % 2] for i in range(n)]
    name = folder / f"{case}{int(extra)}"
    if case == "sqlite":
        path = name.with_suffix(".sqlite")
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE pts (x REAL, y REAL, person TEXT)")
        con.executemany("INSERT INTO pts VALUES (?, ?, ?)", [(*map(float, X[i]), units[i]) for i in range(n)])
        if extra:
            con.execute(f"UPDATE pts SET person = CAST(X'{BAD.hex()}' AS TEXT) WHERE person = 'zz'")
        con.commit()
        con.close()
        return path, ["--columns", "x", "y", "--unit", "person"]
    if case in ("parquet", "status"):
        raw_units = [u.encode() for u in units]
        raw_status = [s.encode() for s in status]
        if extra and case == "parquet":
            raw_units[-1] = BAD
        if extra and case == "status":
            raw_status[-1] = BAD
        table = pa.table(
            {
                "x": X[:, 0],
                "y": X[:, 1],
                "u": pa.array(raw_units, pa.binary()).view(pa.string()),
                "time": [1_700_000_000 + 60 * (i // 60) for i in range(n)],
                "s": pa.array(raw_status, pa.binary()).view(pa.string()),
            }
        )
        path = name.with_suffix(".parquet")
        pq.write_table(table, path)
        opts = ["--columns", "x", "y", "--unit", "u"]
        if case == "status":
            opts += ["--time", "time", "--trip-ends", "s", "--status-values", "free", "hired"]
        return path, opts
    lines = []
    for i in range(n):
        props = {"person": units[i], "time": "@@" if extra and i == n - 1 else times[i]}
        geometry = {"type": "Point", "coordinates": [float(X[i, 0]), float(X[i, 1])]}
        lines.append(json.dumps({"type": "Feature", "geometry": geometry, "properties": props}))
    path = name.with_suffix(".geojson")
    body = ",\n".join(lines).replace('"@@"', '"\\udcff"')
    path.write_text('{"type": "FeatureCollection", "features": [\n' + body + "\n]}\n")
    return path, ["--unit", "person", "--time", "time", "--stops", "0.5", "5min"]


def released(path: Path, opts: list[str], seed: int, out: Path) -> bool:
    """Whether ``dpdbscan fit`` makes a release (exit status 0)."""
    from dpdbscan.cli import main

    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        rc = main(["fit", str(path), *FIT, *opts, "--seed", str(seed), "--out-dir", str(out)])
    return rc == 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50, help="seeded fits of each input")
    ap.add_argument("--cases", nargs="+", default=["sqlite", "parquet", "status", "geojson"])
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for case in a.cases:
            hits = []
            for extra in (False, True):
                path, opts = write(case, extra, folder)
                seeds = range(1 + 100_000 * extra, 1 + 100_000 * extra + a.runs)
                hits.append(sum(released(path, opts, s, folder / "out") for s in seeds))
            eps = epsilon_bound(hits[0], hits[1], a.runs, DELTA)
            print(
                f"{case:8s} released {hits[0]}/{a.runs} of D, {hits[1]}/{a.runs} of D'; "
                f"epsilon >= {eps:.2f} at delta={DELTA:g} (stated epsilon = 1)"
            )


if __name__ == "__main__":
    main()
