"""CPU time and peak memory of a MinPts sweep of one release (issue 30 item 1).

Fits :mod:`benchmarks.same_release`'s case ``--case`` (seeded), then sweeps
its released histogram over ``--min-samples`` at ``--eps`` (the release's
eps by default; ``research.ladder_sweep``, the path of ``dpdbscan sweep``
and the automatic mode's candidates) and prints one JSON line: the fit's
and each sweep round's CPU time, the peak resident memory of the sweep
above the resident memory before it (``/proc/self/clear_refs`` resets the
peak), and a digest of every (eps, MinPts)'s span labels, so two trees
can be compared.

    python -m benchmarks.bench_sweep --case 5 --min-samples 20,25,30,40,60

Run it under ``ulimit -v`` (a sweep that holds runs x keys may ask for
tens of GB).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import blobs_nd
from .same_release import CASES, _points


def _status(field: str) -> int:
    found = re.search(field + r":\s+(\d+) kB", Path("/proc/self/status").read_text())
    if found is None:
        raise RuntimeError(f"/proc/self/status has no {field}")
    return int(found.group(1)) * 1024


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", type=int, required=True, help="a case of benchmarks.same_release.CASES")
    ap.add_argument("--min-samples", default="20,25,30,40,60", help="comma-separated MinPts")
    ap.add_argument("--eps", default=None, help="comma-separated eps (default: the release's)")
    ap.add_argument("--rounds", type=int, default=1, help="sweeps timed (the first one's memory)")
    args = ap.parse_args(argv)

    from dpdbscan import DPDBSCAN
    from dpdbscan.research import ladder_sweep

    name, d, (kind, n, seed), kw, person = CASES[args.case]
    if person or kw.get("eps") == "auto":
        raise SystemExit(f"case {args.case} ({name}) is not a fixed-eps event-level fit")
    X = _points(d, kind, n, seed)
    fit = dict(min_samples=blobs_nd.MIN_SAMPLES, epsilon=1.0, bounds=(0.0, 1.0), random_state=100 + args.case)
    fit.update(kw)
    est = DPDBSCAN(**fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c0 = time.process_time()
        est.fit(X)
        fit_cpu = time.process_time() - c0
    model = est.spans_
    hist, spec = model.histogram, model.spec
    alphas = [hist.grid.eps] if args.eps is None else [float(a) for a in args.eps.split(",")]
    ms = [int(m) for m in args.min_samples.split(",")]
    try:
        Path("/proc/self/clear_refs").write_text("5")
        reset = True
    except OSError:
        reset = False
    rss0 = _status("VmRSS")
    cpus, digest = [], ""
    for r in range(args.rounds):
        c0 = time.process_time()
        table = ladder_sweep(hist, spec, alphas, ms)
        cpus.append(time.process_time() - c0)
        if r == 0:
            hwm = _status("VmHWM")
            h = hashlib.sha256()
            for key in sorted(table):
                part = table[key]
                h.update(
                    repr(key).encode() + np.asarray(part.keys).tobytes() + np.asarray(part.labels).tobytes()
                )
            digest = h.hexdigest()
            spans = {f"{a:g},{m}": int(table[(a, m)].n_spans) for a, m in sorted(table)}
        del table
    out = {
        "case": args.case,
        "name": name,
        "alphas": alphas,
        "min_samples": ms,
        "fit_cpu_s": round(fit_cpu, 3),
        "sweep_cpu_s": [round(c, 3) for c in cpus],
        "sweep_peak_bytes": hwm - rss0,
        "rss_before": rss0,
        "peak_reset": reset,
        "spans": spans,
        "digest": digest,
    }
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
