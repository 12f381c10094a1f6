"""The person-level fits of ``benchmarks.bench_places`` (and the event-level
fit) in two source trees, alternated in the same run.

    python -m benchmarks.places_trees BASE_TREE NEW_TREE [--rounds 5]
        [--kinds person,stops,pickups,event] [--data PATH] [--json OUT]

Each round runs every kind in the base tree and in the new one, the
order swapped every other round (each tree a checkout with ``src/``, such
as ``git worktree add``), one fresh process each (:mod:`benchmarks.peakrss`:
wall, CPU as user + system, peak RSS), the tree's ``src`` first on the path.
The commands are ``bench_places``'
on full Cabs (``--unit cab``, eps 200 m, MinPts 30, ``--geo``,
``--max-cells-per-unit auto``; stops ``--stops 100m 5min``, pick-ups
``--trip-ends occupied``) and ``event``: the same without ``--unit``,
``--max-cells-per-unit`` and ``--delta``. Before the timed rounds both
trees' bytecode is written and one untimed round of every kind runs (the
file in the OS cache, numba's on-disk cache of the stop scanner). Prints
per kind and tree the medians, the new tree's ratio to the base's (of the
medians, and the median of the same-round ratios) and the 1-minute load
average read before every run (min / median / max).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bench_places import CLOCKS, cabs_case, command

REPO = Path(__file__).resolve().parent.parent
KINDS = ("person", "stops", "pickups", "event")
#: the person-level options that ``event`` leaves out (with their values)
PERSON_ONLY = {"--unit": 1, "--max-cells-per-unit": 1, "--delta": 1}


def fit_command(kind: str, out_dir: Path, name: str, data: Path | None) -> list[str]:
    """``python -m dpdbscan fit ...`` of ``kind`` (the tree comes from PYTHONPATH)."""
    cmd = command(cabs_case(data), out_dir, name, "person" if kind == "event" else kind)
    if kind == "event":
        kept: list[str] = []
        skip = 0
        for word in cmd:
            if skip:
                skip -= 1
            elif word in PERSON_ONLY:
                skip = PERSON_ONLY[word]
            else:
                kept.append(word)
        cmd = kept
    return [sys.executable, "-m", "dpdbscan", *cmd[1:]]


def timed(cmd: list[str], tree: Path) -> dict[str, Any]:
    """One fresh process of ``cmd`` with ``tree``'s source first on the path."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    res = subprocess.run(
        [sys.executable, "-m", "benchmarks.peakrss", *cmd], capture_output=True, text=True, cwd=REPO, env=env
    )
    m = json.loads(res.stdout.rstrip("\n").split("\n")[-1])
    if m["exit"] != 0:
        raise RuntimeError(f"{' '.join(cmd[2:5])} failed in {tree}: {res.stderr[-1000:]}")
    return m


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("trees", type=Path, nargs=2, help="the base tree, then the new one")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--data", type=Path, default=None, help="the Cabs file (default: the data folder's)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if any(k not in KINDS for k in kinds):
        ap.error(f"--kinds: each one of {', '.join(KINDS)}")
    trees = [t.resolve() for t in args.trees]
    for t in trees:
        compileall.compile_dir(str(t / "src" / "dpdbscan"), quiet=1)
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for kind in kinds:
            for i, tree in enumerate(trees):
                timed(fit_command(kind, out, f"warm{i}{kind}", args.data), tree)
        for r in range(args.rounds):
            for kind in kinds:
                # the trees' order swapped every other round: neither always runs
                # right after the other (whose freed memory the kernel is still reclaiming)
                for i in (0, 1) if r % 2 == 0 else (1, 0):
                    tree = trees[i]
                    load = os.getloadavg()[0]
                    got = timed(fit_command(kind, out, f"{kind}{i}r{r}", args.data), tree)
                    runs.setdefault(f"{i}:{kind}", []).append(got | {"load": load})
    summary: dict[str, Any] = {"trees": [str(t) for t in trees], "rounds": args.rounds, "kinds": {}}
    loads = [x["load"] for each in runs.values() for x in each]
    summary["load"] = {"min": min(loads), "median": statistics.median(loads), "max": max(loads)}
    keys = (*CLOCKS, "peak_rss_bytes", "minor_faults")
    for kind in kinds:
        base, new = runs[f"0:{kind}"], runs[f"1:{kind}"]
        row: dict[str, Any] = {}
        for i, done in enumerate((base, new)):
            row[f"tree{i}"] = {k: statistics.median(x[k] for x in done) for k in keys}
        row["ratio"] = {k: row["tree1"][k] / row["tree0"][k] for k in keys}
        row["round_ratio"] = {k: statistics.median(b[k] / a[k] for a, b in zip(base, new)) for k in keys}
        summary["kinds"][kind] = row
    summary["runs"] = runs
    print(markdown(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return summary


def markdown(summary: dict[str, Any]) -> str:
    load = summary["load"]
    lines = [
        f"{summary['rounds']} rounds, trees alternated; load {load['min']:.1f} / {load['median']:.1f} / "
        f"{load['max']:.1f} (min / median / max)",
        "",
        "| fit | tree | wall | CPU (user + sys) | user | sys | peak RSS | minor faults |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, row in summary["kinds"].items():
        for i, name in enumerate(("base", "new")):
            t = row[f"tree{i}"]
            lines.append(
                f"| {kind} | {name} | {t['wall_s']:.2f} s | {t['cpu_s']:.2f} s | {t['user_s']:.2f} s "
                f"| {t['sys_s']:.2f} s | {t['peak_rss_bytes'] / 1e6:.0f} MB | {t['minor_faults']:,.0f} |"
            )
        r, q = row["ratio"], row["round_ratio"]
        lines.append(
            f"| {kind} | new / base | {r['wall_s']:.2f} ({q['wall_s']:.2f}) | {r['cpu_s']:.2f} "
            f"({q['cpu_s']:.2f}) | {r['user_s']:.2f} ({q['user_s']:.2f}) | {r['sys_s']:.2f} "
            f"({q['sys_s']:.2f}) | {r['peak_rss_bytes']:.2f} ({q['peak_rss_bytes']:.2f}) "
            f"| {r['minor_faults']:.2f} ({q['minor_faults']:.2f}) |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
