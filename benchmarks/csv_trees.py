"""Issue 30's target 5a in two source trees, measured in the same run.

    python -m benchmarks.csv_trees BASE_TREE NEW_TREE [--rounds 7] [--json OUT]

``benchmarks.run --only csv`` times the whole ``dpdbscan fit`` on the
gzipped Cabs CSV (JSON, GeoJSON and PNG, the default outputs; also JSON
only and JSON + GeoJSON) against pyarrow reading the same file, for the
tree it runs from. This runs the same commands for two trees (each a
checkout with ``src/``, such as ``git worktree add --detach``), one fresh
process each, interleaved round by round with pyarrow's read, so that a
change is judged against its base under the same load. It also runs
:mod:`benchmarks.cli_stages` in each tree every round (each stage alone,
in one process). It prints the medians of wall and CPU time (the command's
process and its drawing copy: ``wait4``'s children included) and the
ratios to pyarrow's bare ``read_csv`` call and to its whole process.
Writes each tree's bytecode first, as ``benchmarks.run`` does its own.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from experiments import data, paper

from .run import PYARROW_READ
from .timing import med

REPO = Path(__file__).resolve().parent.parent
#: the fit's variants, by the options that leave outputs out
VARIANTS = {"all": [], "json": ["--no-geojson", "--no-png"], "json+geojson": ["--no-png"]}
STAGES = ("import", "read", "fit", "json", "geojson", "png")


def _child(cmd: list[str], tree: Path | None = None) -> dict[str, Any]:
    """Wall, CPU and the last stdout line of one fresh process
    (:mod:`benchmarks.peakrss`), with ``tree``'s ``src`` first on the path."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "src")
    res = subprocess.run(
        [sys.executable, "-m", "benchmarks.peakrss", *cmd], capture_output=True, text=True, cwd=REPO, env=env
    )
    lines = res.stdout.rstrip("\n").split("\n")
    m = json.loads(lines[-1])
    if m["exit"] != 0:
        raise RuntimeError(f"{cmd[:4]} failed in {tree}: {res.stderr[-1000:]}")
    return {"wall_s": m["wall_s"], "cpu_s": m["cpu_s"], "stdout": "\n".join(lines[:-1])}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("trees", type=Path, nargs=2, help="the base tree, then the new one")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    trees = [t.resolve() for t in args.trees]
    for t in trees:
        compileall.compile_dir(str(t / "src" / "dpdbscan"), quiet=1)
    path = data.file_of("cabs")
    alpha, min_samples = paper.PARAMS["cabs"]
    box = [repr(v) for v in data.GEO_BOXES["cabs"].degrees]
    fit_args = [str(path), "--header", "--geo", "--bounds", *box]
    fit_args += ["--eps", f"{round(alpha * 1000)}m", "--min-samples", str(min_samples)]
    runs: dict[str, list[dict[str, Any]]] = {"pyarrow": []}
    load = [os.getloadavg()[0]]
    out_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"csv_trees_{os.getpid()}"
    for _ in range(args.rounds):
        r = _child([sys.executable, "-c", PYARROW_READ, str(path)])
        r["read_s"] = float(r.pop("stdout").split()[0])
        runs["pyarrow"].append(r)
        for i, tree in enumerate(trees):
            for k, extra in VARIANTS.items():
                cmd = [sys.executable, "-m", "dpdbscan", "fit", *fit_args, *extra]
                cmd += ["--out-dir", str(out_dir / str(i)), "--quiet", "--no-progress"]
                r = _child(cmd, tree)
                r.pop("stdout")
                runs.setdefault(f"{i}:{k}", []).append(r)
            r = _child([sys.executable, "-m", "benchmarks.cli_stages", *fit_args], tree)
            runs.setdefault(f"{i}:stages", []).append(json.loads(r["stdout"].strip().splitlines()[-1]))
        load.append(os.getloadavg()[0])
    read = med([r["read_s"] for r in runs["pyarrow"]])
    process = med([r["wall_s"] for r in runs["pyarrow"]])
    summary: dict[str, Any] = {
        "load_1min": load,
        "pyarrow_read_s": read,
        "pyarrow_process_s": process,
        "pyarrow_cpu_s": med([r["cpu_s"] for r in runs["pyarrow"]]),
    }
    print(
        f"pyarrow: read_csv {read:.3f} s, its process {process:.3f} s; load {min(load):.1f}-{max(load):.1f}"
    )
    for i, tree in enumerate(trees):
        row: dict[str, Any] = {"tree": str(tree)}
        for k in VARIANTS:
            wall = med([r["wall_s"] for r in runs[f"{i}:{k}"]])
            cpu = med([r["cpu_s"] for r in runs[f"{i}:{k}"]])
            row[k] = {"wall_s": wall, "cpu_s": cpu, "per_read": wall / read, "per_process": wall / process}
            print(
                f"{tree.name:>12} {k:>13}: wall {wall:.3f} s ({wall / read:.2f}x read_csv, "
                f"{wall / process:.2f}x its process), CPU {cpu:.3f} s"
            )
        row["stages_s"] = {s: med([r[s] for r in runs[f"{i}:stages"]]) for s in STAGES}
        print(f"{tree.name:>12} stages: " + ", ".join(f"{s} {v:.3f}" for s, v in row["stages_s"].items()))
        summary[f"tree{i}"] = row
    summary["runs"] = runs
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
