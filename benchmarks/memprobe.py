"""Peak memory of one fit, measured in a fresh process (called by benchmarks.run).

Loads the data set (and resamples it if ``--n`` is given), then resets the
kernel's peak-RSS counter (``/proc/self/clear_refs``), fits once and reports
``VmHWM - VmRSS(before the fit)``: the extra resident memory the fit needed
on top of the input array and the interpreter. ``tracemalloc`` (which sees
numpy's allocations) gives a second, allocation-level figure in a second fit.
Prints one JSON line.

    python -m benchmarks.memprobe cabs [--n 1000000] [--histogram auto]
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import time
import tracemalloc
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import bench_data
from .timing import estimator


def _status(field: str) -> int:
    text = Path("/proc/self/status").read_text()
    found = re.search(field + r":\s+(\d+) kB", text)
    if found is None:
        raise RuntimeError(f"/proc/self/status has no {field}")
    return int(found.group(1)) * 1024


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--histogram", default="auto")
    ap.add_argument("--no-tracemalloc", action="store_true")
    args = ap.parse_args(argv)

    ds = bench_data.load(args.dataset)
    X = ds.X if args.n is None else bench_data.resample(ds.X, args.n, seed=args.n)
    del ds.X
    # warm the imports and code paths on a tiny sample, outside the measurement
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator(ds).fit(X[:1000])
    gc.collect()

    def make() -> Any:
        return estimator(ds, histogram=args.histogram)

    reset = True
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        reset = False
    rss0 = _status("VmRSS")
    hwm0 = _status("VmHWM")
    t0 = time.perf_counter()
    make().fit(X)
    seconds = time.perf_counter() - t0
    hwm = _status("VmHWM")
    out = {
        "dataset": args.dataset,
        "n": int(X.shape[0]),
        "histogram": args.histogram,
        "input_bytes": int(X.nbytes),
        "rss_before": rss0,
        "hwm_before": hwm0,
        "hwm": hwm,
        "peak_reset": reset,
        "rss_delta": hwm - rss0,
        "seconds": seconds,
    }
    if not args.no_tracemalloc:
        gc.collect()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tracemalloc.start()
            make().fit(X)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        out["tracemalloc_peak"] = peak
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
