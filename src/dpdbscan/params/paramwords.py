"""The public structures and parameters of a release in words: the grid, the
histogram's kind and the core tests' margin rules.

Both the forecast (:mod:`dpdbscan.plan.outlook`, before a release) and the
model's words (:mod:`dpdbscan.model.describe`, after it) state them, so they
live below both; each reads public values only.
"""

from __future__ import annotations


def grid_words(
    n_cells: int, d: int, subcells: int, kappa: int, kappa_q: int, width: str | None = None
) -> str:
    """The grid in words with its symbols: the cells (|X|) and their
    ``width`` (w) when given, the sub-cells, and how many cells lie within
    eps of a cell (kappa) and of a sub-cell (kappa_q)."""
    wide = "" if width is None else f" {width} wide"
    symbols = "|X|" if width is None else "|X|, w"
    split = f", each split into {' x '.join([str(subcells)] * d)} sub-cells" if subcells > 1 else ""
    near = (
        f"{kappa} cells lie within eps of a cell, at most {kappa_q} within eps of a sub-cell "
        f"(kappa={kappa}, kappa_q={kappa_q})"
        if subcells > 1
        else f"{kappa} cells lie within eps of a cell (kappa={kappa})"
    )
    return f"{n_cells:,} cells{wide} in {d} dimension(s) ({symbols}){split}; {near}"


def histogram_words(kind: str, theta: float) -> str:
    """Which cells get noise and which are released, in words, with the
    histogram's name: what follows "noise on"."""
    if kind == "dense":
        return "every cell of the box (dense histogram)"
    if kind == "sparse":
        return f"every cell, releasing only counts of at least theta={theta:g} (sparse histogram)"
    return f"occupied cells only, releasing only counts of at least theta={theta:g} (stability histogram)"


def margin_rule_words(rule: str | float, symbol: str = "") -> str:
    """The density test's margin rule in words (summary, ``dpdbscan info``,
    the forecast); ``symbol`` starts the closing bracket (e.g. the
    forecast's "the largest m(q); ")."""
    if rule == "pointwise":
        words, name = "a Chernoff bound at beta for each sub-cell", "pointwise"
    elif rule == "chernoff":
        words, name = "a Chernoff bound over every sub-cell at once", "chernoff"
    else:
        c = float(rule)
        words = f"{c:g} standard deviation{'' if c == 1 else 's'} of the estimate's noise"
        name = f"{c:g} sigma"
    return f"{words}, more where little was counted nearby ({symbol}margin={name} with the empty-space guard)"


def shown_margin_words(theta: float) -> str:
    """What the density test's margin counts on a sparse release (the
    forecast's margin line, after :func:`margin_rule_words`)."""
    return (
        f"; a sparse release counts only the noise of the cells it shows, each with at least theta={theta:g}"
    )


def threshold_rule_words(raise_min_samples: bool) -> str:
    """What the bound test's threshold adds to min_samples, in words (the
    forecast's margin): tau with the practical rule, nothing with the
    theoretical one."""
    if raise_min_samples:
        return "how far the noisy upper bound may be off, both ways together (tau = Gamma_low + Gamma_up)"
    return "none: the theoretical rule compares the noisy upper bound with min_samples itself"


__all__ = ["grid_words", "histogram_words", "margin_rule_words", "shown_margin_words", "threshold_rule_words"]
