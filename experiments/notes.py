"""The notes of results/REPORT.md that explain each difference from the paper.

Every note is computed from the measured results it comments on, so it cannot
claim something the run did not show. TOLERANCE decides what counts as a
difference.
"""

from __future__ import annotations

import numpy as np

from . import accuracy, paper, sweeps
from .accuracy import mean_std

TOLERANCE = 0.05  # |ours - paper| above this gets a note


# ----------------------------------------------------------------- accuracy
def accuracy_notes(rows: list[dict], quick: bool) -> list[str]:
    """One bullet per (data set, method, metric) that differs from the paper
    by more than TOLERANCE, with the measured facts that explain it."""
    notes = []
    for r in rows:
        name, sc = r["dataset"], r["scores"]
        for method in accuracy.DP_METHODS + ("DP-KMeans", "DBSCAN core-only", "KMeans"):
            if method not in sc:
                continue
            diffs = []
            for metric in ("ARI", "AMI"):
                pv = accuracy.paper_value(method, name, metric)
                if pv is None:
                    continue
                m, s = mean_std(sc[method][metric])
                if abs(m - pv) > TOLERANCE:
                    diffs.append(f"{metric} {m:.2f} vs {pv:.2f}")
            if diffs:
                why = _why(method, r, quick)
                notes.append(f"- **{r['title']}, {method}** ({'; '.join(diffs)}): {why}")
    if "DBSCAN" in rows[0]["scores"] and "DBSCAN core-only" in rows[0]["scores"]:
        gaps = []
        for r in rows:
            if r["dataset"] in paper.SCORES["DBSCAN"] and r["dataset"] != "chest":
                core = r["scores"]["DBSCAN core-only"]["ARI"][0]
                gaps.append(abs(core - paper.SCORES["DBSCAN"][r["dataset"]][0]))
        if gaps:
            notes.append(
                "- **DBSCAN column.** The paper's code labels every non-core (border) point "
                "as noise; scikit-learn attaches border points to a cluster. Our "
                "'DBSCAN core-only' column uses the paper's convention and matches its DBSCAN "
                f"ARI to within {max(gaps):.3f} on the six benchmark sets; the plain "
                "scikit-learn labels ('DBSCAN') differ most on Cluto-t5 and t7, where many "
                "border points sit between clusters."
            )
    return notes


def _why(method: str, row: dict, quick: bool) -> str:
    name, sc = row["dataset"], row["scores"]
    seeds = row["seeds"]
    if name == "chest":
        return (
            "different data: the paper's row is HAR70+ (back sensor, in g), ours the UCI "
            "chest accelerometer in raw counts with alpha from the |X| = 1e8 rule; the "
            "numbers are not comparable, only the ordering of methods is."
            + (" Quick mode also subsamples it." if quick else "")
        )
    if method in accuracy.DP_METHODS:
        ari = np.asarray(sc[method]["ARI"])
        spans = np.asarray(row["n_spans"][method])
        k = {"circles": 2, "moons": 2, "blobs": 3, "cluto_t4": 6, "cluto_t5": 6, "cluto_t7": 9}.get(name)
        first3 = float(ari[:3].mean()) if len(ari) >= 3 else float(ari.mean())
        parts = [
            f"per-seed ARI ranges {ari.min():.2f}–{ari.max():.2f} "
            f"(spans per seed: {', '.join(map(str, spans))}; {k} true clusters)"
        ]
        if k and (spans < k).any():
            parts.append(
                f"in {(spans < k).sum()} of {len(spans)} seeds there are fewer spans "
                "than true clusters (clusters joined by a bridge of core cells)"
            )
        if k and (spans > k).any():
            parts.append(
                f"in {(spans > k).sum()} of {len(spans)} seeds there are more spans "
                "than true clusters (a cluster split where its density dips)"
            )
        parts.append(
            f"our seeds 0–2 alone average {first3:.2f}; the paper averaged its own "
            "seeds 0–2 (a different random stream)"
        )
        if method == "DP-DBSCAN":
            other = sc.get(accuracy.PAPER_DP)
            alt = f" (that column: ARI {mean_std(other['ARI'])[0]:.2f})" if other else ""
            parts.append(
                "this column uses the library's defaults: the density core test "
                "(an estimate of the α-ball count instead of the paper's upper bound), "
                "sub-cells, border labels, β = 0.1; the "
                f"'{accuracy.PAPER_DP}' column runs the paper's procedure{alt}"
            )
        if name == "circles":
            parts.append(
                "the paper's code runs Circles with MinPts = 7 and cell width "
                "0.8 α/√d (η = 3.2), not the table's (0.2, 10); see the diagnostic "
                "table below"
            )
        parts.append(
            "the grid is laid over the public box rather than the data's min/max, "
            "which moves cell borders and adds empty cells (larger |X|, larger Γ)"
        )
        return "; ".join(parts) + "."
    if method == "DP-KMeans":
        return (
            "diffprivlib's k-means is seeded differently and, here, given the public box "
            "instead of the data's min/max (a larger box means more noise per centre); "
            f"our std over {len(seeds)} seeds is {mean_std(sc[method]['ARI'])[1]:.2f}."
        )
    if method == "KMeans":
        return (
            "scikit-learn ≥ 1.4 runs k-means++ with n_init='auto' (one start); the paper's "
            "older scikit-learn used 10 starts, so local optima differ."
        )
    if method == "DBSCAN core-only":
        return "DBSCAN is deterministic; a difference here would mean different data."
    return "see the notes below."


def timing_notes(rows: list[dict]) -> list[str]:
    notes = []
    for r in rows:
        for col, c in r["cols"].items():
            if "skipped" in c:
                notes.append(f"- {r['title']}, {col}: skipped — {c['skipped']}.")
    ratios = []
    for r in rows:
        c = r["cols"]
        if "median" in c.get("DP-DBSCAN naive", {}) and "median" in c.get("DP-DBSCAN linear", {}):
            ratios.append((r["title"], c["DP-DBSCAN naive"]["median"] / c["DP-DBSCAN linear"]["median"]))
    if ratios:
        txt = ", ".join(f"{t} {x:.2g}×" for t, x in ratios)
        notes.append(
            f"- Naive / linear time ratio: {txt}. The paper's naive histogram was a "
            "Python loop over cells; ours is vectorised numpy, so the gap is smaller "
            "on small grids and the dense histogram stays feasible on Cabs "
            "(|X| ≈ 4.4e6), where the paper's could not run."
        )
    return notes


def epsilon_notes(eps_sweeps: dict[str, dict]) -> list[str]:
    """Check the paper's claim "DP-DBSCAN beats DP-KMeans as long as eps >= 1"."""
    notes = []
    for title, p in eps_sweeps.items():
        km, _ = sweeps.summary(p, "DP-KMeans", "ARI")
        for variant in sweeps.VARIANTS:
            dp, _ = sweeps.summary(p, variant, "ARI")
            big = [
                (x, a, b, float(np.mean(s)))
                for x, a, b, s in zip(p["x"], dp, km, p["spans"][variant])
                if x >= 1
            ]
            fails = [f"ε = {x:g} ({a:.2f} vs {b:.2f}, {s:.1f} spans)" for x, a, b, s in big if a <= b]
            if fails:
                notes.append(
                    f"- {title}, {variant}: the paper says DP-DBSCAN beats DP-KMeans for every "
                    f"ε ≥ 1; here it does not at {', '.join(fails)}. The core threshold is "
                    "MinPts + τ and τ shrinks as 1/ε, while the grid's neighbour sum already "
                    "over-counts the α-ball (its cells reach beyond α): with a small τ, cells "
                    "between nearby clusters become core and clusters merge (fewer spans). At a "
                    "fixed MinPts a larger ε is not always better."
                )
            elif big:
                notes.append(
                    f"- {title}, {variant}: as in the paper, DP-DBSCAN beats DP-KMeans "
                    f"at every ε ≥ 1 tried ({', '.join(f'{x:g}' for x, *_ in big)})."
                )
    notes.append("")
    return notes


def geo_notes(rows: list[dict]) -> list[str]:
    """Compare span counts with the paper's 38 on Cabs-tiny and the two
    histograms with each other."""
    out = []
    by: dict[tuple[str, str], dict[str, dict]] = {}
    for g in rows:
        by.setdefault((g["dataset"], g["variant"]), {})[g["kind"]] = g
    for (name, variant), kinds in by.items():
        title = next(iter(kinds.values()))["title"]
        lin, nai = kinds.get("linear"), kinds.get("naive")
        ref = paper.GEO_SPANS.get(name, {}).get("linear")
        txt = f"- {title}, {variant}: "
        if lin and nai:
            txt += (
                f"{lin['n_spans']} spans with the linear-time histogram, {nai['n_spans']} "
                f"with the naive one (Γ {lin['gamma']:.1f} vs {nai['gamma']:.1f}: the "
                "linear-time histogram drops noisy counts below θ and adds κθ to Γ)"
            )
        if ref is not None:
            txt += f"; the paper found {ref} with either histogram"
        if name == "cabs":
            txt += (
                "; the paper's naive histogram could not run here, ours is vectorised and "
                "runs on the 4.4e6-cell grid"
            )
        out.append(txt + ".")
    out.append("")
    return out
