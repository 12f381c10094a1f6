"""The condensed tree of a level selection (``selection="levels"``), in the
style of the hdbscan package's condensed-tree plot: each cluster a column
whose width is its noisy mass at each level, the level (HDBSCAN's lambda,
density) growing downwards, the selected clusters in colour.

It reads the tree the model records (``model.auto["tree"]``), so it needs
neither the histogram nor the points: post-processing of the release, and
part of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.levels import is_levels

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..model.record import SpanModel

#: The selected clusters' colour; the others are grey.
SELECTED = "tab:red"


def tree_layout(tree: dict[str, Any]) -> dict[int, tuple[float, float]]:
    """Where each cluster's column goes: (centre in [0, 1], x units per unit
    of mass). Each root, then each cluster's children, share their parent's
    width in proportion to their mass at birth."""
    clusters = tree["clusters"]
    kids: dict[int, list[int]] = {}
    for i, c in enumerate(clusters):
        kids.setdefault(int(c["parent"]), []).append(i)
    place: dict[int, tuple[float, float]] = {}
    todo = [(kids.get(-1, []), 0.0, 1.0)]
    while todo:
        ids, lo, hi = todo.pop()
        total = sum(clusters[i]["masses"][0] for i in ids) or 1.0
        x = lo
        for i in ids:
            w = (hi - lo) * clusters[i]["masses"][0] / total
            place[i] = (x + w / 2, w / max(clusters[i]["masses"][0], 1e-12))
            todo.append((kids.get(i, []), x, x + w))
            x += w
    return place


def check_tree(model: SpanModel) -> None:
    """ValueError unless the model records a condensed tree."""
    if not is_levels(model):
        raise ValueError(
            "the condensed tree is recorded by the automatic mode's level selection "
            "(min_samples='auto', selection='levels'); this model has none"
        )


def draw_condensed_tree(model: SpanModel, ax: Axes) -> Axes:
    """The condensed tree of a level-selection model at its eps on ``ax``:
    one column per cluster (width: noisy mass at each MinPts level), lambda
    growing downwards with the MinPts on the right axis, the selected
    clusters (the model's spans) in colour
    (:func:`dpdbscan.render.plotting.plot_condensed_tree` makes the axes)."""
    check_tree(model)
    from matplotlib.patches import Rectangle

    tree = (model.auto or {})["tree"]
    lam = np.asarray(tree["lambda"], dtype=np.float64)
    if lam.size == 0 or not tree["clusters"]:
        ax.set_title("condensed tree: no significant cluster at any level")
        return ax
    step = np.diff(lam)
    step = np.append(step, step[-1:] if step.size else [1.0])
    top = lam + np.maximum(step, 1e-12 * max(1.0, float(np.abs(lam).max())))
    place = tree_layout(tree)
    selected = set(tree["selected"])
    last = 0
    for i, c in enumerate(tree["clusters"]):
        centre, per_mass = place[i]
        chosen = i in selected
        for j, m in enumerate(c["masses"]):
            lvl = int(c["birth"]) + j
            w = m * per_mass
            ax.add_patch(
                Rectangle(
                    (centre - w / 2, lam[lvl]),
                    w,
                    top[lvl] - lam[lvl],
                    facecolor=SELECTED if chosen else "0.6",
                    alpha=0.85 if chosen else 0.5,
                    edgecolor="none",
                )
            )
        last = max(last, int(c["birth"]) + len(c["masses"]) - 1)
        if c["parent"] >= 0:
            parent_centre, _ = place[int(c["parent"])]
            ax.plot([parent_centre, centre], [lam[int(c["birth"])]] * 2, color="0.3", lw=0.6)
    ax.set_xlim(0, 1)
    ax.set_ylim(top[last], lam.min())
    ax.set_xticks([])
    ax.set_ylabel("level lambda (density)")
    twin = ax.twinx()
    twin.set_ylim(ax.get_ylim())
    ticks, at = [], -np.inf
    for i in range(last + 1):  # MinPts labels at least 4% of the axis apart
        if lam[i] - at >= 0.04 * (top[last] - lam.min()):
            ticks.append(i)
            at = lam[i]
    twin.set_yticks(lam[ticks])
    twin.set_yticklabels([str(tree["min_samples"][i]) for i in ticks])
    twin.set_ylabel("MinPts")
    ax.set_title(
        f"condensed tree at eps={model.grid.eps:.4g}: {len(selected)} selected "
        f"of {len(tree['clusters'])} clusters (red: the spans)",
        fontsize=9,
    )
    return ax


__all__ = ["draw_condensed_tree", "check_tree", "tree_layout", "SELECTED"]
