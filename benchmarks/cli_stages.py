"""Where the time of one ``dpdbscan fit`` goes, stage by stage, in one fresh process.

Runs the command line's own functions in the order ``dpdbscan fit`` runs
them, but one after another (the command writes the JSON on a second thread
while it draws the GeoJSON and the picture; here each stage is timed alone),
and prints one JSON line:

* ``import``  — importing the command line (``dpdbscan.cli``);
* ``read``    — reading the file, with the per-block work done while reading
  (projecting lon/lat to km, counting rows outside the bounds);
* ``fit``     — the rest of ``fit_from_args``: notes and the release itself;
* ``json``, ``geojson``, ``png`` — writing each output (the picture includes
  importing matplotlib, which the command starts on a thread while reading);
* ``peak_rss_bytes`` — the process's peak resident memory.

    .venv/bin/python benchmarks/cli_stages.py FILE.csv.gz --geo --bounds ... --eps 20m \\
        --min-samples 500 [--out-dir DIR]

All arguments are those of ``dpdbscan fit``.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from dpdbscan.model import save_geojson

T0 = time.perf_counter()


def main(argv: list[str]) -> dict:
    t = {}
    start = time.perf_counter()
    from dpdbscan.cli import common, fit
    from dpdbscan.cli.main import build_parser

    keep = getattr(common, "keep_freed_memory", None)  # absent before issue 15.5
    if keep is not None:
        keep()  # as the command does
    t["import"] = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        args = build_parser().parse_args(["fit", *argv, "--out-dir", tmp, "--quiet",
                                          "--no-progress"])
        args.no_progress, args.quiet = True, True
        picture = fit.picture_options(args)
        args.png_requested, args.geojson_requested = bool(args.png or picture), bool(args.geojson)
        p = fit.check_fit_params(args)
        paths = fit._out_paths(args, "bench")
        read = fit._read

        def timed_read(*a, **k):
            s = time.perf_counter()
            out = read(*a, **k)
            t["read"] = time.perf_counter() - s
            return out

        fit._read = timed_read
        s = time.perf_counter()
        with common._Warnings(sys.stderr) as sink:
            model = fit.fit_from_args(args, sink, p, p["min_samples"], common.Notes(True))
        t["fit"] = time.perf_counter() - s - t["read"]
        proj = fit._geo.projection_of(model)
        stages = (("json", model.save),
                  ("geojson", lambda q: save_geojson(model, 
                      q, transform=None if proj is None else proj.inverse)),
                  ("png", lambda q: common._draw_spans_png(model, q, **(picture or {}))))
        for name, write in stages:
            if paths[name] is None:
                continue
            s = time.perf_counter()
            common.atomic_write(paths[name], write)
            t[name] = time.perf_counter() - s
    t["total"] = time.perf_counter() - T0
    t["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t["n_spans"] = model.n_spans
    return t


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
