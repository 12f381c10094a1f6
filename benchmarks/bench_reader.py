"""The CSV reader alone against pyarrow alone.

Times, interleaved in one process (so every variant sees the same machine
load), with one untimed warm-up round, then medians and same-run ratios of
the wall time, and the median CPU time (user + system, all threads: the work
done, which a busy shared machine distorts less than the wall time):

* ``pyarrow``   — ``pyarrow.csv.read_csv(path)``: pyarrow's own threaded read
                  with type inference, the reference the reader is held to;
* ``read_input``— ``read_input(path, header=True)``, the command line's reader
                  (per-record rules, float64 columns);
* ``before``    — with ``--before SRC``: ``read_points`` of another checkout's
                  ``src`` (e.g. the commit before the per-record reader), loaded
                  from its files under another name beside this one;
* ``dirty``     — with ``--dirty N``: ``read_input`` of a copy of the file
                  with N rows replaced by ``0.3,bob@example.com``, spread evenly
                  so that that many blocks take the slow path (the copy is
                  written once, gzip level 1, to a temporary directory).

    .venv/bin/python -m benchmarks.bench_reader [--file PATH] [--repeats 5]
                                                [--before OLD/src] [--dirty 100]

The default file is Cabs (``cabs_sf.csv.gz``) in the shared data folder
(experiments/data.py).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import importlib
import importlib.util
import inspect
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments import data


def _load_before(src: Path, tmp: Path) -> Callable[[Path], Any]:
    """``read_points`` of the package in ``src``, imported as ``dpdbscan_before``
    (its imports are relative, so a renamed copy loads beside this one): from
    ``files`` or, in older checkouts, ``io``."""
    shutil.copytree(src / "dpdbscan", tmp / "dpdbscan_before")
    init = tmp / "dpdbscan_before" / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        "dpdbscan_before", init, submodule_search_locations=[str(init.parent)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the package in {src}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["dpdbscan_before"] = module
    spec.loader.exec_module(module)
    for home in ("files", "io"):
        try:
            return importlib.import_module(f"dpdbscan_before.{home}").read_points
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"no read_points in {src / 'dpdbscan'} (files or io)")


def _dirty_copy(path: Path, n_bad: int, tmp: Path) -> Path:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    lines = raw.split(b"\n")
    step = max(1, (len(lines) - 2) // max(n_bad, 1))
    for i in range(1 + step // 2, len(lines) - 1, step)[:n_bad]:
        lines[i] = b"0.3,bob@example.com"
    out = tmp / ("dirty.csv.gz")
    with gzip.open(out, "wb", compresslevel=1) as fh:
        fh.write(b"\n".join(lines))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--file", type=Path, default=None, help="default: Cabs in the shared data folder")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--before", type=Path, default=None, help="src/ of another checkout")
    ap.add_argument("--dirty", type=int, default=0, help="rows to replace by junk in a copy")
    args = ap.parse_args(argv)
    path: Path = args.file or data.file_of("cabs")

    import pyarrow
    import pyarrow.csv as pacsv

    import dpdbscan
    from dpdbscan.research import read_input

    tmp = Path(tempfile.mkdtemp(prefix="bench_reader_"))
    try:
        variants: dict[str, Callable[[], int]] = {
            "pyarrow": lambda: pacsv.read_csv(path).num_rows,
            "read_input": lambda: read_input(path, header=True).X.shape[0],
        }
        if args.before is not None:
            before = _load_before(args.before, tmp)
            # newer readers need to be told about the header; older ones take no such option
            params = inspect.signature(before).parameters
            takes = "header" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
            header = {"header": True} if takes else {}
            variants["before"] = lambda: before(path, **header)[0].shape[0]
        if args.dirty:
            dirty = _dirty_copy(path, args.dirty, tmp)
            variants["dirty"] = lambda: read_input(dirty, header=True).X.shape[0]
        times: dict[str, list[float]] = {k: [] for k in variants}
        cpu: dict[str, list[float]] = {k: [] for k in variants}
        rows = {k: f() for k, f in variants.items()}  # warm-up: page cache, imports
        names = list(variants)
        for r in range(args.repeats):
            for k in names[r % len(names) :] + names[: r % len(names)]:  # rotate the order
                gc.collect()
                r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
                variants[k]()
                r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
                times[k].append(t1 - t0)
                cpu[k].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    base = statistics.median(times["pyarrow"])
    base_cpu = statistics.median(cpu["pyarrow"])
    print(
        f"file {path} ({path.stat().st_size / 2**20:.1f} MiB); pyarrow "
        f"{pyarrow.__version__}; dpdbscan from {Path(dpdbscan.__file__).parent}; "
        f"{args.repeats} interleaved repeats after one warm-up"
    )
    print(
        f"{'variant':<11} {'rows':>11} {'wall s':>7} {'x pyarrow':>9} {'cpu s':>6} "
        f"{'x pyarrow':>9}  wall runs (s)"
    )
    for k in names:
        med, med_cpu = statistics.median(times[k]), statistics.median(cpu[k])
        runs = ", ".join(f"{t:.2f}" for t in times[k])
        print(
            f"{k:<11} {rows[k]:>11,} {med:>7.3f} {med / base:>9.2f} {med_cpu:>6.2f} "
            f"{med_cpu / base_cpu:>9.2f}  {runs}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
