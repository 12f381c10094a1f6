"""Where the time of one ``dpdbscan fit`` goes, stage by stage, in one fresh process.

Runs the steps of ``dpdbscan fit FILE --header --geo --bounds ... --eps ...
--min-samples ...`` with the library's own functions, one after another, and
prints one JSON line. The command overlaps them: it projects each block while
reading, forks a copy of itself before the read that imports matplotlib while
the file is read and the release made and then draws the picture, and writes the JSON on a
second thread while it writes the GeoJSON. Here each stage is timed alone, in
this one process:

* ``import``  — importing the command line's commands (``dpdbscan.cli.command``), its cold start;
* ``read``    — reading the file with the command line's reader (and only
  reading: the command also projects each block and counts its cells on the
  reading threads);
* ``fit``     — the release: ``fit_lonlat`` with ``--geo`` (projecting to km
  included), else ``DPDBSCAN.fit``. It includes what the command does beside
  the read (projecting, counting the cells, drawing the noise of every cell
  on a thread), so this stage overstates the command's fit, and the sum of
  the stages the command: ``benchmarks.run``'s csv section times the
  command itself, JSON only, with the GeoJSON and with all three;
* ``json``, ``geojson``, ``png`` — writing each output as the command does
  (the GeoJSON includes the spans' regions, outlines and figures, which the
  picture then reuses; the picture includes importing matplotlib, which the
  command does in its forked copy while the file is read);
* ``peak_rss_bytes`` — the process's peak resident memory.

    .venv/bin/python -m benchmarks.cli_stages FILE.csv.gz --header --geo \\
        --bounds -122.6 37.55 -122.3 37.85 --eps 20m --min-samples 500

Takes the options of ``dpdbscan fit`` that the benchmarks use.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

T0 = time.perf_counter()

#: The command's picture: ``dpdbscan plot``'s spans at its default resolution.
PNG_DPI = 120


def parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("input", type=Path)
    ap.add_argument("--header", action="store_true")
    ap.add_argument("--geo", action="store_true", help="longitude/latitude in degrees, eps as a length")
    ap.add_argument("--bounds", type=float, nargs="+", required=True, help="lower values, then upper values")
    ap.add_argument("--eps", required=True)
    ap.add_argument("--min-samples", type=int, required=True)
    ap.add_argument("--epsilon", type=float, default=1.0)
    return ap.parse_args(argv)


def main(argv: Sequence[str]) -> dict[str, Any]:
    args = parse(argv)
    t: dict[str, Any] = {}
    start = time.perf_counter()
    importlib.import_module("dpdbscan.cli.command")
    t["import"] = time.perf_counter() - start

    from dpdbscan import DPDBSCAN, SpanModel, fit_lonlat, save_geojson, save_model
    from dpdbscan.research import plot_model, read_input, save_figure

    s = time.perf_counter()
    X = read_input(args.input, header=args.header, progress=False).X
    t["read"] = time.perf_counter() - s

    s = time.perf_counter()
    half = len(args.bounds) // 2
    if args.geo:
        model = fit_lonlat(
            X, bounds=args.bounds, eps=args.eps, min_samples=args.min_samples, epsilon=args.epsilon
        )
    else:
        bounds = (args.bounds[:half], args.bounds[half:])
        est = DPDBSCAN(float(args.eps), min_samples=args.min_samples, epsilon=args.epsilon, bounds=bounds)
        model = est.fit(X).spans_
    assert isinstance(model, SpanModel)
    t["fit"] = time.perf_counter() - s

    def png(path: Path) -> None:
        save_figure(plot_model(model, "spans", dpi=PNG_DPI), path, dpi=PNG_DPI)

    stages: dict[str, Callable[[Path], None]] = {
        "json": lambda path: save_model(model, path),
        "geojson": lambda path: save_geojson(model, path),
        "png": png,
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, write in stages.items():
            s = time.perf_counter()
            write(Path(tmp) / f"bench.{name}")
            t[name] = time.perf_counter() - s
    t["total"] = time.perf_counter() - T0
    from .peakrss import own_peak_bytes  # after the timed stages

    t["peak_rss_bytes"] = own_peak_bytes()
    t["n_spans"] = model.n_spans
    return t


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
