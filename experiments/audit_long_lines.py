"""Empirical privacy audit of CSV text too long for pyarrow (round 9):
whether a release is made must not hinge on one row.

pyarrow's CSV reader takes at most 2**31 - 1 bytes at once. Two
neighbouring pairs:

* ``line`` (the in-memory reader, person level): D is 60 units (``p0`` ..
  ``p59``) of five rows each near (2, 2) in the box [0, 5]^2, a CSV file with
  the header ``x,y,u``; D' is D and one row of a new unit at (4, 4) whose
  unit field is 2**31 bytes long (one unit's record). Fitted by ``dpdbscan
  fit --unit u`` (k = 3, eps = 0.3, MinPts = 5, epsilon = 1, delta = 1e-6).
* ``short-first`` (the in-memory reader, person level): the result's
  first size was guessed from the first block's bytes per record. D is 8 GB
  of rows ``x,y,u,note`` of 60 units (7.8 million rows of about 1,020
  bytes); D' is D and, first, one new unit's 838,861 rows ``,,z,`` (5
  bytes each, coordinates missing). The guess for D' is 1.6 billion rows
  (26 GB), which Linux refuses outright (more than the machine's memory and
  swap, 23 GB here: ``vm.overcommit_memory`` 0). Fitted as ``line``.
* ``dask-gz`` (``--backend dask``, event level): D is a gzip CSV file whose
  records after the header are 2**31 - 1,023 bytes of text (2,095,105 rows
  ``x,y,note`` near (2, 2), a note of 1,010 letters); D' is D and one more
  such row. The Dask backend parses a gzip file's whole text at once. Fitted
  by ``dpdbscan fit --backend dask --columns x y`` (eps = 0.3, MinPts = 5,
  epsilon = 1).

The event: a release is made (exit status 0; a raised error is none). A
Clopper-Pearson bound at 95% on each side gives an epsilon lower bound at
delta (:func:`epsilon_bound`). The refusal of D' comes before
any random draw, so one run of it shows it as well as many; the runs are
few because each reads 2 GiB (and on the tree before, the in-memory reader
joined the long line chunk by chunk, minutes a run).

    python -m experiments.audit_long_lines --runs 5 --runs-d2 2

Writes about 2 GiB (``line``), 8 GB (``short-first``) and 4 MB (``dask-gz``)
to a temporary folder; a ``dask-gz`` run of D holds about 8 GB. The
``short-first`` case shows the break only where one allocation of 26 GB is
refused (a machine of less than about 26 GB of memory and swap).

* ``times`` (round 10; the in-memory reader, person level, ``--time t
  --stops``): the time column's blocks were combined into one Arrow array
  before the times were read, which fails past 2**31 bytes of text. D holds
  35 rows whose time is 60,000,000 letters (2.1e9 bytes of time text), D'
  one more such unit (:func:`write_times`; 2.2 GB written).

Measured (docs/privacy.md section 8, rounds 9 and 10): see there.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np

DELTA = 1e-6
LIMIT = 2**31 - 1  # pyarrow's most bytes at once (ReadOptions.block_size is an int32)
FIT = ["--bounds", "0", "0", "5", "5", "--eps", "0.3", "--min-samples", "5", "--delta", str(DELTA)]
FIT += ["--no-png", "--no-geojson", "--no-progress", "--quiet", "--header"]
NOTE_ROW = 1025  # bytes of a dask-gz row: "x.xxxx,y.yyyy," + 1,010 letters + "\n"


def write_line(extra: bool, folder: Path) -> tuple[Path, list[str]]:
    """The ``line`` case's file (D', with ``extra``) and its options."""
    rng = np.random.default_rng(0)
    X = rng.normal(2.0, 0.05, (300, 2))
    rows = "".join(f"{a:.6f},{b:.6f},p{i % 60}\n" for i, (a, b) in enumerate(X))
    path = folder / f"line{int(extra)}.csv"
    with open(path, "wb") as fh:
        fh.write(("x,y,u\n" + rows).encode())
        if extra:
            fh.write(b"4.0,4.0,")
            piece = b"z" * (1 << 24)
            for _ in range(LIMIT // len(piece) + 1):  # 2**31 bytes: one more than pyarrow takes
                fh.write(piece)
            fh.write(b"\n")
    return path, ["--columns", "x", "y", "--unit", "u", "--max-cells-per-unit", "3"]


def write_dask_gz(extra: bool, folder: Path) -> tuple[Path, list[str]]:
    """The ``dask-gz`` case's file: gzip members of 1,024 rows each (the
    same text repeated, written once and copied: a multi-member gzip file,
    read as one text), then the rest of the rows in a last member."""
    rng = np.random.default_rng(0)
    X = rng.normal(2.0, 0.05, (1024, 2))
    rows = [f"{a:.4f},{b:.4f},".encode() + b"n" * 1010 + b"\n" for a, b in X]
    assert all(len(r) == NOTE_ROW for r in rows)
    n = (LIMIT - 1022) // NOTE_ROW + int(extra)  # D: 1,022 bytes below the limit
    member = gzip.compress(b"".join(rows), compresslevel=1)
    path = folder / f"dask{int(extra)}.csv.gz"
    with open(path, "wb") as fh:
        fh.write(gzip.compress(b"x,y,note\n"))
        for _ in range(n // 1024):
            fh.write(member)
        fh.write(gzip.compress(b"".join(rows[: n % 1024])))
    return path, ["--columns", "x", "y", "--backend", "dask"]


def epsilon_bound(hits_d: int, runs_d: int, hits_d2: int, runs_d2: int, delta: float) -> float:
    """ln((lower bound of P[release | D] - delta) / (upper bound of
    P[release | D'])), Clopper-Pearson at 95% on each side, each with its
    own number of runs (``audit_dask_ids.epsilon_bound`` takes one);
    -inf when it says nothing."""
    from scipy.stats import beta

    low = float(beta.ppf(0.025, hits_d, runs_d - hits_d + 1)) if hits_d > 0 else 0.0
    high = float(beta.ppf(0.975, hits_d2 + 1, runs_d2 - hits_d2)) if hits_d2 < runs_d2 else 1.0
    return math.log((low - delta) / high) if low > delta else -math.inf


def released(path: Path, opts: list[str], seed: int, out: Path) -> bool:
    """Whether ``dpdbscan fit`` makes a release (exit status 0)."""
    from dpdbscan.cli import main

    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        try:
            rc = main(["fit", str(path), *FIT, *opts, "--seed", str(seed), "--out-dir", str(out)])
        except Exception:  # a traceback: no release
            return False
    return rc == 0


SHORT_FIRST_TEXT = 8 * 10**9  # bytes of D's text: 8 GB


def write_short_first(extra: bool, folder: Path) -> tuple[Path, list[str]]:
    """The ``short-first`` case's file: D is 8 GB of rows ``x,y,u,note`` of
    60 units near (2, 2) (a note of 1,000 letters: 7.8 million rows); D' is
    D and, first, 838,861 rows ``,,z,`` of one new unit ``z`` (4 MB, its
    coordinates missing: dropped)."""
    rng = np.random.default_rng(0)
    X = rng.normal(2.0, 0.05, (1020, 2))
    block = "".join(f"{a:.4f},{b:.4f},p{i % 60},{'n' * 1000}\n" for i, (a, b) in enumerate(X)).encode()
    path = folder / f"short{int(extra)}.csv"
    with open(path, "wb") as fh:
        fh.write(b"x,y,u,note\n")
        if extra:
            fh.write(b",,z,\n" * ((1 << 22) // 5))
        for _ in range(SHORT_FIRST_TEXT // len(block)):
            fh.write(block)
    return path, ["--columns", "x", "y", "--unit", "u", "--max-cells-per-unit", "3"]


#: Bytes of each long time text of the ``times`` case: under the 64 MiB a line may hold.
TIME_TEXT = 60_000_000


def write_times(extra: bool, folder: Path) -> tuple[Path, list[str]]:
    """The ``times`` case's file (round 10): 300 rows ``x,y,u,t`` of 60 units
    near (2, 2) with ISO times, then 35 rows of as many units whose time is
    60,000,000 letters (no time: each row dropped), 2.1e9 bytes of time text
    in all, under the 2**31 an Arrow text array holds; D' is D and one more
    such unit, 2.16e9 bytes. Fitted with ``--time t --stops 0.2 5min``."""
    rng = np.random.default_rng(0)
    X = rng.normal(2.0, 0.05, (300, 2))
    rows = "".join(
        f"{a:.6f},{b:.6f},p{i % 60},2026-03-02T05:{(i // 60) * 10:02d}:00\n" for i, (a, b) in enumerate(X)
    )
    text = b"n" * TIME_TEXT
    path = folder / f"times{int(extra)}.csv"
    with open(path, "wb") as fh:
        fh.write(("x,y,u,t\n" + rows).encode())
        for i in range(35 + int(extra)):
            fh.write(f"4.0,4.0,w{i},".encode() + text + b"\n")
    opts = ["--columns", "x", "y", "--unit", "u", "--max-cells-per-unit", "3", "--time", "t"]
    return path, [*opts, "--stops", "0.2", "5min"]


WRITERS = {
    "line": write_line,
    "dask-gz": write_dask_gz,
    "short-first": write_short_first,
    "times": write_times,
}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="seeded fits of D")
    ap.add_argument("--runs-d2", type=int, default=2, help="seeded fits of D'")
    ap.add_argument("--cases", nargs="+", default=list(WRITERS), choices=list(WRITERS))
    ap.add_argument("--tmp", default=None, help="a folder for the files (default: the system's)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        folder = Path(tmp)
        for case in a.cases:
            hits = []
            for extra, runs in ((False, a.runs), (True, a.runs_d2)):
                path, opts = WRITERS[case](extra, folder)
                seeds = range(1 + 100_000 * extra, 1 + 100_000 * extra + runs)
                hits.append(sum(released(path, opts, s, folder / "out") for s in seeds))
                path.unlink()
            eps = epsilon_bound(hits[0], a.runs, hits[1], a.runs_d2, DELTA)
            print(
                f"{case:8s} released {hits[0]}/{a.runs} of D, {hits[1]}/{a.runs_d2} of D'; "
                f"epsilon >= {eps:.2f} at delta={DELTA:g} (stated epsilon = 1)",
                flush=True,
            )


if __name__ == "__main__":
    main()
