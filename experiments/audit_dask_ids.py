"""Empirical privacy audit of the Dask backend's reading of a Parquet unit
column: one row without an id must not change how the other ids are read.

D: 60 units with int64 ids 2**60 + i, three points each at one spot (0.25,
0.25), written by pyarrow (no pandas metadata). D': D plus one row whose id
is null, elsewhere (0.75, 0.75): dropped, no one's. Both are fitted through
the Dask backend reading the file (``research.dask_backend``), person level
(k = 4, m = 1, epsilon = 1, delta = 1e-6, dense histogram, Gaussian noise),
``runs`` seeded fits each (research seeds, different for D and D'). The
event: the spot's noisy count is at least 31 (the midpoint between 60
units and the 1 they became when pandas made the column float64 and the
ids rounded to one). A Clopper-Pearson bound at 95% on each side gives an
epsilon lower bound at the stated delta; it must not exceed the stated
epsilon.

    python -m experiments.audit_dask_ids --runs 300

Measured (docs/privacy.md section 8, round 6): on the tree before the fix
300/300 against 0/300, epsilon >= 4.39; after it 100/100 against 100/100.

``--read-yourself``: the same files read by the caller with dask's defaults
(``dd.read_parquet(path)``) and the frame given to the fit (round 7): the
frame's unit column is declared int64 and its partition with the null is
float64, so the ids are rounded before the backend sees them. Measured on
the tree before round 7: 300/300 against 0/300, epsilon >= 4.39; refused
since. ``--read-yourself --nullable`` reads them as the refusal says
(``dtype_backend="numpy_nullable"``): 100/100 against 100/100.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np

from dpdbscan import DPDBSCAN
from dpdbscan.research import dask_backend

EPSILON, DELTA = 1.0, 1e-6
UNITS, POINTS = 60, 3
THRESHOLD = 31


def write(path: Path, with_null: bool) -> Path:
    """D (or D' with ``with_null``) as a Parquet file written by pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids: list[int | None] = [2**60 + i for i in range(UNITS) for _ in range(POINTS)]
    x = [0.25] * len(ids)
    if with_null:
        ids.append(None)
        x.append(0.75)
    pq.write_table(pa.table({"x": x, "y": x, "u": pa.array(ids, type=pa.int64())}), path)
    return path


def spot_count(path: Path, seed: int, client: object, yourself: str | None = None) -> int:
    """The spot's noisy count of one seeded person-level fit on Dask."""
    est = DPDBSCAN(
        eps=0.2,
        min_samples=5,
        bounds=([0, 0], [1, 1]),
        epsilon=EPSILON,
        delta=DELTA,
        histogram="dense",
        max_cells_per_unit=4,
        random_state=seed,
        backend=dask_backend(client=client, columns=["x", "y"]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if yourself:
            import dask.dataframe as dd

            kw = {} if yourself == "default" else {"dtype_backend": yourself}
            est.fit(dd.read_parquet(str(path), **kw), units="u")
        else:
            est.fit(str(path), units="u")
    hist = est.spans_.histogram
    return int(hist.value_at(hist.grid.keys_of_points(np.array([[0.25, 0.25]])))[0])


def epsilon_bound(hits_d: int, hits_d2: int, runs: int, delta: float = DELTA) -> float:
    """ln((lower bound of P[event | D]) - delta) / (upper bound of P[event | D'])),
    Clopper-Pearson at 95% on each side; -inf when it says nothing."""
    from scipy.stats import beta

    low = float(beta.ppf(0.025, hits_d, runs - hits_d + 1)) if hits_d > 0 else 0.0
    high = float(beta.ppf(0.975, hits_d2 + 1, runs - hits_d2)) if hits_d2 < runs else 1.0
    return math.log((low - delta) / high) if low > delta else -math.inf


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100, help="seeded fits of each input")
    ap.add_argument(
        "--read-yourself",
        action="store_true",
        help="fit the frame dd.read_parquet(path) gives (dask's default types), not the path",
    )
    ap.add_argument(
        "--nullable", action="store_true", help="with --read-yourself: dtype_backend='numpy_nullable'"
    )
    a = ap.parse_args(argv)
    yourself = None if not a.read_yourself else "numpy_nullable" if a.nullable else "default"
    from distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory() as tmp:
        d, d2 = write(Path(tmp) / "d.parquet", False), write(Path(tmp) / "d2.parquet", True)
        with (
            LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as lc,
            Client(lc) as client,
        ):
            try:
                counts_d = [spot_count(d, 1000 + s, client, yourself) for s in range(a.runs)]
            except ValueError as e:
                print(f"refused: {e}")
                return
            counts_d2 = [spot_count(d2, 5000 + s, client, yourself) for s in range(a.runs)]
    hits_d = sum(c >= THRESHOLD for c in counts_d)
    hits_d2 = sum(c >= THRESHOLD for c in counts_d2)
    print(
        f"runs {a.runs}: count >= {THRESHOLD} in {hits_d}/{a.runs} fits of D "
        f"(median {np.median(counts_d):g}), {hits_d2}/{a.runs} of D' (median {np.median(counts_d2):g})"
    )
    print(
        f"epsilon lower bound (95% each side, delta={DELTA:g}): {epsilon_bound(hits_d, hits_d2, a.runs):.2f}"
        f" (stated epsilon={EPSILON:g})"
    )


if __name__ == "__main__":
    main()
