"""Markdown tables for results/REPORT.md: formatting only, no experiment runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import paper


def table(head: Sequence[Any], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table; pipes inside cells (as in |X|) are escaped."""

    def line(cells: Sequence[Any]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    out = [line(head), "|" + "---|" * len(head)] + [line(r) for r in rows]
    return "\n".join(out) + "\n"


def seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def geo_table(geo: list[dict]) -> str:
    rows = []
    for g in geo:
        pv = paper.GEO_SPANS.get(g["dataset"], {}).get(g["kind"])
        rows.append(
            [
                g["title"],
                g["variant"],
                g["kind"],
                f"{g['n']:,}",
                f"{g['n_cells']:,}",
                f"{g['gamma']:.1f}",
                g["n_spans"],
                "-" if pv is None else pv,
            ]
        )
    return table(
        ["Dataset", "DP-DBSCAN", "histogram", "n", "|X|", "Γ", "spans (ours)", "spans (paper)"], rows
    )


def timing_table(rows: list[dict]) -> str:
    head = ["Dataset", "n", "d", "|X|"] + [f"{c} ours (paper)" for c in paper.TIME_COLUMNS]
    out = []
    for r in rows:
        cells = [r["title"], f"{r['n']:,}", r["d"], f"{r['n_cells']:.3g}"]
        ref = paper.TIMES.get(r["dataset"], (None,) * 5)
        for col, pv in zip(paper.TIME_COLUMNS, ref):
            c = r["cols"].get(col, {"skipped": "not run"})
            ours = "skipped" if "skipped" in c else seconds(c["median"])
            if "times" in c and len(c["times"]) > 1:
                ours += f" (×{len(c['times'])})"
            paper_txt = "-" if pv is None else seconds(pv)
            cells.append(f"{ours} ({paper_txt})")
        out.append(cells)
    return table(head, out)
