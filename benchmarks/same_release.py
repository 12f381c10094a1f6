"""The same release, bit for bit, from two source trees: seeded fits in 4 to
8 dimensions whose model files and predict labels must not change when a
step of the post-processing is made faster.

Each case fits seeded points with a fixed ``random_state`` (research
randomness: the noise is reproducible) and digests the model file
(``save_model``, histogram included) and the labels ``predict`` gives the
training points. The cases: d = 4, 5, 6, 7, 8; sparse and dense
histograms; one and two sub-cells; the density and bound core tests; person
level (``units=``); the points of ``benchmarks.bench_dims`` (d = 4, 5, 6, 8)
at the benchmark's settings and, in 4-D, other seeds and alphas (in 5-D
and 6-D 1.5x and 2x the benchmark's alpha, seeds 1 and 2: issue 30); the
automatic mode (eps and MinPts, or eps alone) in 2, 3, 4, 6 and 8-D; the
dense 3-D and 4-D releases of issue 30's other alphas (cases 40 and up);
the bound test with two sub-cells in 5-, 6- and 8-D (cases 54 and up); the
3-D and 2-D benchmark points, other seeds and alphas (cases 59 and up); the
benchmark's points at 1e4 and 3e4 (cases 65 and up); and
seeded ``dpdbscan fit`` runs of trace files read with their time (and
status) for ``--stops`` and ``--trip-ends`` (:data:`FILE_CASES`, numbered
after them: synthetic CSV, gzip CSV without a header and Parquet with bad
times and awkward lines, and Cabs-tiny when ``$DPDBSCAN_DATA`` holds it),
each command in a fresh process of the tree's command line, its model,
GeoJSON and PNG files digested.

    python -m benchmarks.same_release                 # this tree's digests
    python -m benchmarks.same_release --tree ../main  # this tree against another checkout
    python -m benchmarks.same_release --only 0,3      # some cases only

With ``--tree`` the cases also run in a child process with the other
tree's ``src`` first on the path, and every digest is compared; the exit
status is 1 when one differs or a case could not run there. If the other
tree's child fails (out of memory, say), each case it did not give runs
alone, and a case that fails alone is reported as not compared with the
last lines of its error output.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
import zlib
from pathlib import Path

import numpy as np

from . import blobs_nd


def _blobs(d: int, n: int, seed: int, spread: float = 0.02) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, (5, d))
    X = centres[rng.integers(0, 5, n)] + rng.normal(0, spread, (n, d))
    X[: n // 8] = rng.uniform(0, 1, (n // 8, d))
    return np.clip(X, 0.0, 1.0)


#: the automatic mode (eps and MinPts chosen from the release; "automatic
#: eps": MinPts fixed, the flat cut)
_AUTO: dict = dict(eps="auto", min_samples="auto")

#: (name, d, points, keyword arguments of DPDBSCAN, person level)
CASES: list[tuple[str, int, tuple[str, int, int], dict, bool]] = [
    (
        "5-D sparse density k=1",
        5,
        ("blobs", 20_000, 1),
        dict(eps=0.05, histogram="sparse", subcells=1),
        False,
    ),
    (
        "5-D sparse density k=2",
        5,
        ("blobs", 20_000, 2),
        dict(eps=0.06, histogram="sparse", subcells=2),
        False,
    ),
    ("5-D dense density k=1", 5, ("blobs", 20_000, 3), dict(eps=0.3, histogram="dense", subcells=1), False),
    ("5-D sparse bound", 5, ("blobs", 20_000, 4), dict(eps=0.05, histogram="sparse", core="bound"), False),
    (
        "6-D sparse density k=1",
        6,
        ("blobs", 20_000, 5),
        dict(eps=0.06, histogram="sparse", subcells=1),
        False,
    ),
    ("6-D dense density k=2", 6, ("blobs", 20_000, 6), dict(eps=0.45, histogram="dense", subcells=2), False),
    (
        "6-D sparse person level",
        6,
        ("blobs", 20_000, 7),
        dict(eps=0.06, histogram="sparse", delta=1e-6),
        True,
    ),
    ("7-D sparse density", 7, ("blobs", 20_000, 8), dict(eps=0.07, histogram="sparse"), False),
    ("7-D sparse bound", 7, ("blobs", 20_000, 9), dict(eps=0.07, histogram="sparse", core="bound"), False),
    ("8-D sparse density", 8, ("blobs", 20_000, 10), dict(eps=0.08, histogram="sparse"), False),
    (
        "8-D sparse density k=2",
        8,
        ("blobs", 10_000, 11),
        dict(eps=0.1, histogram="sparse", subcells=2),
        False,
    ),
    ("bench_dims 5-D", 5, ("bench", 0, 0), dict(eps=blobs_nd.ALPHA[5]), False),
    ("bench_dims 6-D", 6, ("bench", 0, 0), dict(eps=blobs_nd.ALPHA[6]), False),
    ("bench_dims 8-D", 8, ("bench", 0, 0), dict(eps=blobs_nd.ALPHA[8]), False),
    ("bench_dims 6-D seed 3", 6, ("bench", 0, 3), dict(eps=blobs_nd.ALPHA[6]), False),
    ("bench_dims 4-D", 4, ("bench", 0, 0), dict(eps=blobs_nd.ALPHA[4]), False),
    ("bench_dims 4-D seed 1 a=.02", 4, ("bench", 0, 1), dict(eps=0.02), False),
    ("bench_dims 4-D seed 2 a=.04", 4, ("bench", 0, 2), dict(eps=0.04), False),
    ("4-D bench dense a=.04 k=2", 4, ("bench", 0, 0), dict(eps=0.04, histogram="dense", subcells=2), False),
    ("4-D bench sparse a=.04 k=2", 4, ("bench", 0, 1), dict(eps=0.04, histogram="sparse", subcells=2), False),
    ("4-D dense density k=1", 4, ("blobs", 20_000, 12), dict(eps=0.1, histogram="dense", subcells=1), False),
    ("4-D sparse bound", 4, ("blobs", 20_000, 13), dict(eps=0.05, histogram="sparse", core="bound"), False),
    ("automatic 2-D", 2, ("blobs", 100_000, 14), _AUTO, False),
    ("automatic 3-D bench", 3, ("bench", 0, 0), _AUTO, False),
    ("automatic 4-D bench", 4, ("bench", 0, 0), _AUTO, False),
    ("automatic 6-D bench", 6, ("bench", 0, 0), _AUTO, False),
    ("automatic 8-D bench", 8, ("bench", 0, 0), _AUTO, False),
    ("automatic eps 2-D", 2, ("blobs", 100_000, 15), dict(eps="auto"), False),
    ("automatic eps 3-D bench", 3, ("bench", 0, 0), dict(eps="auto"), False),
    ("automatic eps 4-D bench", 4, ("bench", 0, 0), dict(eps="auto"), False),
    ("automatic eps 6-D bench", 6, ("bench", 0, 0), dict(eps="auto"), False),
    ("automatic eps 8-D bench", 8, ("bench", 0, 0), dict(eps="auto"), False),
    # issue 30's survey: 1.5x and 2x the benchmark's alpha, sparse, nearly all noise
    ("bench_dims 5-D seed 1 a=.06", 5, ("bench", 0, 1), dict(eps=0.06), False),
    ("bench_dims 5-D seed 2 a=.06", 5, ("bench", 0, 2), dict(eps=0.06), False),
    ("bench_dims 5-D seed 1 a=.08", 5, ("bench", 0, 1), dict(eps=0.08), False),
    ("bench_dims 5-D seed 2 a=.08", 5, ("bench", 0, 2), dict(eps=0.08), False),
    ("bench_dims 6-D seed 1 a=.075", 6, ("bench", 0, 1), dict(eps=0.075), False),
    ("bench_dims 6-D seed 2 a=.075", 6, ("bench", 0, 2), dict(eps=0.075), False),
    ("bench_dims 6-D seed 1 a=.1", 6, ("bench", 0, 1), dict(eps=0.1), False),
    ("bench_dims 6-D seed 2 a=.1", 6, ("bench", 0, 2), dict(eps=0.1), False),
    # issue 30's other alphas (dense releases of 1-5M cells)
    ("3-D bench a=.01 seed 1", 3, ("bench", 0, 1), dict(eps=0.01), False),
    ("3-D bench a=.01 seed 2 k=1", 3, ("bench", 0, 2), dict(eps=0.01, subcells=1), False),
    ("3-D bench a=.015 seed 2", 3, ("bench", 0, 2), dict(eps=0.015), False),
    ("3-D bench a=.01 bound", 3, ("bench", 0, 1), dict(eps=0.01, core="bound"), False),
    ("3-D a=.01 gaussian delta", 3, ("bench", 0, 2), dict(eps=0.01, noise="gaussian", delta=1e-6), False),
    ("3-D a=.01 laplace", 3, ("bench", 0, 1), dict(eps=0.01, noise="laplace"), False),
    ("4-D bench a=.045 seed 1", 4, ("bench", 0, 1), dict(eps=0.045), False),
    ("4-D bench a=.045 seed 2 k=2", 4, ("bench", 0, 2), dict(eps=0.045, subcells=2), False),
    ("4-D bench a=.06 seed 1 k=2", 4, ("bench", 0, 1), dict(eps=0.06, subcells=2), False),
    ("4-D bench a=.06 seed 2 k=1", 4, ("bench", 0, 2), dict(eps=0.06, subcells=1), False),
    ("4-D bench a=.04 seed 2 bound", 4, ("bench", 0, 2), dict(eps=0.04, core="bound"), False),
    ("4-D a=.045 gaussian delta", 4, ("bench", 0, 1), dict(eps=0.045, noise="gaussian", delta=1e-6), False),
    # issue 30's survey in 7-D and 8-D at 2x alpha: the self-join of about 500k noise cells at reach 3
    ("bench_dims 7-D seed 1 a=.11", 7, ("bench", 0, 1), dict(eps=0.11), False),
    ("bench_dims 8-D seed 1 a=.12", 8, ("bench", 0, 1), dict(eps=0.12), False),
    # the bound test with two sub-cells from 5-D on (sub-position sums, wide merge blocks)
    (
        "5-D sparse bound k=2",
        5,
        ("blobs", 20_000, 4),
        dict(eps=0.05, histogram="sparse", core="bound", subcells=2),
        False,
    ),
    (
        "6-D sparse bound k=2",
        6,
        ("blobs", 20_000, 5),
        dict(eps=0.06, histogram="sparse", core="bound", subcells=2),
        False,
    ),
    (
        "8-D sparse bound k=2",
        8,
        ("blobs", 10_000, 11),
        dict(eps=0.1, histogram="sparse", core="bound", subcells=2),
        False,
    ),
    ("5-D bench a=.04 bound k=2", 5, ("bench", 0, 0), dict(eps=0.04, core="bound", subcells=2), False),
    (
        "5-D person level bound k=2",
        5,
        ("blobs", 20_000, 7),
        dict(eps=0.06, histogram="sparse", delta=1e-6, core="bound", subcells=2),
        True,
    ),
    # the 3-D and 2-D benchmark points (numpy's steps: the merge of sub-cells
    # by blocks, the box cover), other seeds and alpha 0.75x / 1.5x
    ("bench_dims 3-D", 3, ("bench", 0, 0), dict(eps=blobs_nd.ALPHA[3]), False),
    ("bench_dims 3-D seed 1 a=.015", 3, ("bench", 0, 1), dict(eps=0.015), False),
    ("bench_dims 3-D seed 2 a=.03", 3, ("bench", 0, 2), dict(eps=0.03), False),
    ("bench_dims 3-D seed 1 sparse", 3, ("bench", 0, 1), dict(eps=0.02, histogram="sparse"), False),
    ("bench_dims 2-D", 2, ("bench", 0, 0), dict(eps=blobs_nd.ALPHA[2]), False),
    ("bench_dims 2-D seed 1 a=.003", 2, ("bench", 0, 1), dict(eps=0.003), False),
    # the benchmark's points at 1e4 and 3e4 (small n: releases of nearly all
    # noise cells, where a fit's fixed costs show)
    *[
        (f"bench_dims {d}-D n=1e4", d, ("bench", 10_000, 0), dict(eps=blobs_nd.ALPHA[d]), False)
        for d in (2, 3, 4, 5, 6, 8)
    ],
    ("bench_dims 7-D n=1e4 seed 1", 7, ("bench", 10_000, 1), dict(eps=blobs_nd.ALPHA[7]), False),
    *[
        (f"bench_dims {d}-D n=3e4 seed 2", d, ("bench", 30_000, 2), dict(eps=blobs_nd.ALPHA[d]), False)
        for d in (3, 5, 6, 8)
    ],
    ("bench_dims 6-D n=1e4 k=2", 6, ("bench", 10_000, 3), dict(eps=blobs_nd.ALPHA[6], subcells=2), False),
    ("bench_dims 5-D n=1e4 bound", 5, ("bench", 10_000, 4), dict(eps=blobs_nd.ALPHA[5], core="bound"), False),
    # the automatic mode's ladder in 3-D at small n: large dense gathers on
    # grids below the compiled size (weightedsums.gather_pays)
    ("automatic 3-D n=2e4 seed 5", 3, ("bench", 20_000, 5), _AUTO, False),
    ("automatic 3-D n=5e3 seed 6", 3, ("bench", 5_000, 6), _AUTO, False),
]


#: (name, file, the events): seeded ``dpdbscan fit`` runs of a trace file
#: (:func:`_trace_file`), numbered after :data:`CASES`.
FILE_CASES: list[tuple[str, str, str]] = [
    ("CLI stops, trace csv.gz", "csv.gz", "stops"),
    ("CLI pick-ups, trace csv.gz", "csv.gz", "pickups"),
    ("CLI stops, headerless CSV", "headerless", "stops"),
    ("CLI pick-ups, headerless CSV", "headerless", "pickups"),
    ("CLI stops, trace Parquet", "parquet", "stops"),
    ("CLI pick-ups, trace Parquet", "parquet", "pickups"),
    ("CLI stops, Cabs-tiny", "cabs-tiny", "stops"),
    ("CLI pick-ups, Cabs-tiny", "cabs-tiny", "pickups"),
    ("CLI stops, T-Drive folder", "tdrive", "stops"),
]

#: Times a trace file may hold besides unix seconds: ISO text and bad ones.
_ODD_TIMES = ("", "NA", "soon", "2008-05-17T10:00:00Z", '"1,5"', " 1211018407 ")


def _trace_lines(seed: int = 0, n_units: int = 200) -> list[tuple[float, float, str, str, str]]:
    """``(x, y, unit, time, status)`` of units that drive (fixes every
    minute) and stop for ten minutes at (0.3, 0.3), a passenger getting in
    at the stop's last fix; one time in 17 odd (:data:`_ODD_TIMES`)."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_units):
        pos = rng.uniform(0.2, 0.8, 2)
        for k in range(30):
            if 10 <= k < 21:
                p, status = np.array([0.3, 0.3]) + rng.normal(0, 0.001, 2), int(k == 20)
            else:
                pos = np.clip(pos + rng.normal(0, 0.05, 2), 0.01, 0.99)
                p, status = pos, 1
            i = u * 30 + k
            t = _ODD_TIMES[i // 17 % len(_ODD_TIMES)] if i % 17 == 0 else str(1_211_018_400 + 60 * k + u)
            rows.append((float(p[0]), float(p[1]), f"u{u}", t, str(status)))
    return rows


def _trace_file(kind: str, events: str, folder: Path) -> tuple[Path, list[str]] | None:
    """A trace file of ``kind`` written in ``folder`` and the options that
    read it and make its ``events`` ("stops" or "pickups"); None when it is
    the shared Cabs-tiny file and that is absent."""
    columns = ["--columns", "x", "y", "--unit", "cab"]
    time, status = "time", "occupied"
    fixed = "--bounds 0 0 1 1 --eps 0.05 --min-samples 20".split()
    radius = "0.01"
    if kind == "cabs-tiny":
        path = Path(os.environ.get("DPDBSCAN_DATA", "../shared/data")) / "cabs_tiny_cabs.csv.gz"
        if not path.exists():
            return None
        fixed = "--geo --bounds -122.6 37.55 -122.3 37.85 --eps 200m --min-samples 30".split()
        radius = "100m"
    elif kind == "tdrive":
        # T-Drive's layout: a folder of headerless files, one per unit, ISO text without a
        # zone; repeated fixes (ties in time), padded and bad times
        path = folder / "taxi_log"
        path.mkdir()
        by_unit: dict[str, list[str]] = {}
        for i, (x, y, u, t, _) in enumerate(_trace_lines()):
            if t.isdigit():
                t = str(np.datetime64(int(t), "s")).replace("T", " ")
                t = f" {t}" if i % 23 == 0 else t
            line = f"{u[1:]},{t},{x!r},{y!r}"
            by_unit.setdefault(u, []).append(line)
            if i % 13 == 0:  # the same fix again, or another fix at the same time
                by_unit[u].append(line if i % 2 else f"{u[1:]},{t},{x + 0.001!r},{y!r}")
        for u, lines in by_unit.items():
            (path / f"{u[1:]}.txt").write_text("\n".join(lines) + "\n")
        columns = "--unit-from file --format csv --no-header --fields 4 --columns 2 3".split()
        time = "1"
    elif kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        cols = list(zip(*_trace_lines()))
        table = pa.table(
            {
                "x": pa.array(cols[0]),
                "y": pa.array(cols[1]),
                "cab": pa.array(cols[2]).dictionary_encode(),
                "time": pa.array([int(t) if t.strip().isdigit() else None for t in cols[3]], type=pa.int64()),
                "occupied": pa.array([int(v) for v in cols[4]], type=pa.int8()),
            }
        )
        path = folder / "traces.parquet"
        pq.write_table(table, path, row_group_size=1000)
    else:
        lines = [f"{x!r},{y!r},{u},{t},{s}" for x, y, u, t, s in _trace_lines()]
        # too few and too many fields, an empty line, a coordinate that is not a number
        lines[100:100] = ["0.5,0.5,u1", '0.3,0.3,"u7",1211018400,1,9', "", "abc,0.3,u2,1211018400,0"]
        if kind == "headerless":
            # columns by index, a byte order mark, CRLF line ends
            path = folder / "traces.csv"
            path.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode())
            columns = ["--no-header", "--fields", "5", "--columns", "0", "1", "--unit", "2"]
            time, status = "3", "4"
        else:
            path = folder / "traces.csv.gz"
            text = "\n".join(["x,y,cab,time,occupied", *lines]) + "\n"
            path.write_bytes(gzip.compress(text.encode(), mtime=0))
    made = ["--stops", radius, "5min"] if events == "stops" else ["--trip-ends", status]
    return path, [*columns, *fixed, "--time", time, *made]


def _content(model: bytes) -> bytes:
    """A model file's JSON with each packed array (``zlib_base64``) replaced
    by its dtype, shape and the digest of its inflated bytes: what the file
    says, whatever deflate stream wrote its arrays."""

    def walk(x):
        if isinstance(x, dict):
            if "zlib_base64" in x:
                raw = zlib.decompress(base64.b64decode(x["zlib_base64"]))
                return {"dtype": x["dtype"], "shape": x["shape"], "sha256": hashlib.sha256(raw).hexdigest()}
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return json.dumps(walk(json.loads(model)), sort_keys=True).encode()


def run_file_case(i: int) -> dict:
    """File case i (:data:`FILE_CASES`): the digest of the files a seeded
    ``dpdbscan fit`` writes (model, GeoJSON, PNG; their names in
    ``labels``), run by this tree's command line in a fresh process."""
    from dpdbscan import load_model

    name, kind, events = FILE_CASES[i - len(CASES)]
    with tempfile.TemporaryDirectory() as tmp:
        made = _trace_file(kind, events, Path(tmp))
        if made is None:
            return {
                "case": i,
                "name": name,
                "model": "absent",
                "labels": "absent",
                "spans": 0,
                "seconds": 0.0,
            }
        path, options = made
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "dpdbscan", "fit", str(path), *options, "--max-cells-per-unit", "4"]
        cmd += [
            "--delta",
            "1e-6",
            "--seed",
            str(100 + i),
            "--no-progress",
            "--out-dir",
            str(out),
            "--name",
            "m",
        ]
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        seconds = time.perf_counter() - t0
        files = sorted(out.iterdir())
        digest, content = hashlib.sha256(), hashlib.sha256()
        for f in files:
            data = f.read_bytes()
            digest.update(f.name.encode() + b"\0" + data)
            content.update(
                f.name.encode() + b"\0" + (_content(data) if f.name.endswith(".spans.json") else data)
            )
        spans = load_model(out / "m.spans.json").n_spans
    return {
        "case": i,
        "name": name,
        "model": digest.hexdigest(),
        "content": content.hexdigest(),
        "labels": ",".join(f.name for f in files),
        "spans": spans,
        "seconds": round(seconds, 3),
        "cpu": 0.0,
    }


def _points(d: int, kind: str, n: int, seed: int) -> np.ndarray:
    return blobs_nd.points(d, seed, n or None) if kind == "bench" else _blobs(d, n, seed)


def run_case(i: int) -> dict:
    """Fit case i; the digests of its model file and predict labels."""
    from dpdbscan import DPDBSCAN, save_model

    if i >= len(CASES):
        return run_file_case(i)
    name, d, (kind, n, seed), kw, person = CASES[i]
    X = _points(d, kind, n, seed)
    args = dict(min_samples=blobs_nd.MIN_SAMPLES, epsilon=1.0, bounds=(0.0, 1.0), random_state=100 + i)
    args.update(kw)
    if person:
        args.update(max_cells_per_unit=2)
    est = DPDBSCAN(**args)
    units = np.arange(X.shape[0]) // 3 if person else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0, c0 = time.perf_counter(), time.process_time()
        est.fit(X, units=units)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        labels = np.asarray(est.predict(X), dtype=np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.json"
        save_model(est.spans_, path)
        model = path.read_bytes()
    return {
        "case": i,
        "name": name,
        "model": hashlib.sha256(model).hexdigest(),
        "content": hashlib.sha256(_content(model)).hexdigest(),
        "labels": hashlib.sha256(labels.tobytes()).hexdigest(),
        "spans": int(labels.max()) + 1 if labels.size else 0,
        "seconds": round(seconds, 3),
        "cpu": round(cpu, 3),
    }


def _child(tree: Path, cases: list[int]) -> tuple[list[dict], dict[int, str]]:
    """The other tree's rows, and for each case it could not give, the last
    lines of its error output. The cases run in one child; if that child
    fails, each case it did not give runs alone, so one case that fails
    there (out of memory, say) does not hide the others."""
    env = dict(os.environ)
    here = Path(__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(here)])

    def run(some: list[int]) -> tuple[list[dict], str]:
        args = [sys.executable, "-m", "benchmarks.same_release", "--json", "--only", ",".join(map(str, some))]
        out = subprocess.run(args, env=env, capture_output=True, text=True, cwd=here)
        rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        return rows, "" if out.returncode == 0 else "\n".join(out.stderr.strip().splitlines()[-3:])

    rows, err = run(cases)
    failed: dict[int, str] = {}
    if err:
        done = {r["case"] for r in rows}
        for i in cases:
            if i not in done:
                alone, err = run([i])
                rows += alone
                if err and not alone:
                    failed[i] = err
    return rows, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, help="another checkout's root: compare its digests with this tree's")
    ap.add_argument("--only", help="comma-separated case numbers (all by default)")
    ap.add_argument("--json", action="store_true", help="one JSON line per case (what --tree reads)")
    a = ap.parse_args(argv)
    cases = [int(c) for c in a.only.split(",")] if a.only else list(range(len(CASES) + len(FILE_CASES)))
    if a.tree is None:
        for i in cases:
            r = run_case(i)
            print(
                json.dumps(r) if a.json else f"{i:2d} {r['name']:26s} {r['model'][:16]} {r['labels'][:16]}",
                flush=True,
            )
        return 0
    rows, failed = _child(a.tree, cases)
    theirs = {r["case"]: r for r in rows}
    differ = 0
    for i in cases:
        if i not in theirs:
            differ += 1
            print(f"{i:2d} {'':26s} NOT COMPARED: the other tree's run failed", flush=True)
            for line in failed.get(i, "").splitlines():
                print(f"   there: {line}", flush=True)
            continue
        r, t = run_case(i), theirs[i]
        same = r["model"] == t["model"] and r["labels"] == t["labels"]
        differ += not same
        print(
            f"{i:2d} {r['name']:26s} {'same' if same else 'DIFFERENT'}  spans {r['spans']}/{t['spans']}"
            f"  fit {r['seconds']:.2f} s here, {t['seconds']:.2f} s there",
            flush=True,
        )
        if not same:
            # both sides' digests, so that a rerun tells which side moved
            for side, x in (("here", r), ("there", t)):
                print(f"   {side:5s} model {x['model'][:16]} labels {x['labels'][:16]}", flush=True)
            if r.get("content") == t.get("content") and r["labels"] == t["labels"]:
                print(
                    "   the same content and labels: only the packed arrays' deflate bytes differ", flush=True
                )
    print(f"{len(cases) - differ} of {len(cases)} cases the same bit for bit")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
