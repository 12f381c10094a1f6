"""Spans the release shows: a geographic map at the user's eps and MinPts
draws a span only where the release shows points (units at person level)
in it, beyond what the noise alone puts there.

Why: the density test calls a sub-cell core when the noisy estimate of its
eps-ball count reaches MinPts plus a margin; across the tens of thousands of
sub-cells near a city's roads a few pass by noise alone, and each is a span
of one or two sub-cells whose cells hold a unit or none (a synthetic day of
2,000 taxis' pick-ups at 200 m / MinPts 30: one or two such spans in each
of five releases, noisy counts 15 to 34 where one cell's noise has a
standard deviation of 16 taxis; docs/places-study.md section 1). What such a
span draws is the noise, and its few events may be one unit's.

The rule: span ``s`` is kept when the noisy counts of the histogram cells of
its region (its core sub-cells' cells and the border cells that join it,
each cell once, as ``predict`` draws it) add up to at least

    t sqrt(n),

``n`` the number of those cells and ``t`` the count one cell's noise alone
reaches with probability at most 1% (:func:`dpdbscan.laws.noise.shown_count`,
the level at which a border cell joins; for one cell the rule is that
one's). For the Gaussian noise of a person-level release ``t sqrt(n)`` is
the same level for the sum of ``n`` terms; for Laplace noise it is above it
(a sum of Laplace terms has lighter tails than one term scaled). The floor
does not depend on MinPts, so where the margin swamps MinPts every MinPts
below it still gives the same spans. The spans left are renumbered in
order (still by smallest cell).

Post-processing: the released counts and public parameters (the noise's law
and scale) only. Used where the border rule is ``border_cells="occupied"``
(a geographic map at a given eps and MinPts, :func:`dpdbscan.pipeline.fit`
and :func:`dpdbscan.model.reparam.with_params`); the automatic mode bounds
its spans by the place prior and its significance instead.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..laws.noise import shown_count
from .record import SpanModel


def shown_mass(model: SpanModel) -> tuple[np.ndarray, np.ndarray]:
    """(noisy mass, number of histogram cells) of each span's region: the
    sum of the released counts of the histogram cells ``predict`` maps to
    the span (each cell once per span)."""
    hist = model.histogram
    if hist is None:
        raise ValueError("which spans the release shows is read from its histogram, and this model has none")
    n = model.n_spans
    if n == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    keys, labels = model.regions()
    cells = hist.grid.encode(model.grid.decode(keys) // model.spec.subcells).astype(np.int64)
    span, cell = _distinct_pairs(labels.astype(np.int64), cells)
    values = np.asarray(hist.value_at(cell), dtype=np.float64)
    mass = np.bincount(span, weights=values, minlength=n)
    count = np.bincount(span, minlength=n)
    return mass, count


def _distinct_pairs(span: np.ndarray, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (span, cell) pairs, sorted by span and then cell: the
    rows of ``np.unique(np.column_stack([span, cell]), axis=0)``, in the
    same order (so the masses add up in the same order, bit for bit), by
    an indirect sort of the two columns. ``np.unique`` with ``axis`` sorts
    the rows as opaque records, 30 times slower (0.18 s of the Cabs fit's
    0.5 s after the read)."""
    order = np.lexsort((cell, span))
    span, cell = span[order], cell[order]
    first = np.ones(span.size, dtype=bool)
    first[1:] = (span[1:] != span[:-1]) | (cell[1:] != cell[:-1])
    return span[first], cell[first]


def shown_floor(model: SpanModel, n_cells: np.ndarray) -> np.ndarray:
    """The mass a span of ``n_cells`` histogram cells must reach: ``t
    sqrt(n)`` (module docstring). Public."""
    hist = model.histogram
    if hist is None:
        raise ValueError("which spans the release shows is read from its histogram, and this model has none")
    t = shown_count(hist.noise, hist.scale)
    return t * np.sqrt(np.asarray(n_cells, dtype=np.float64))


def shown_spans(model: SpanModel) -> SpanModel:
    """``model`` with only the spans the release shows (module docstring);
    the same model when every span is shown."""
    if model.n_spans == 0:
        return model
    mass, count = shown_mass(model)
    keep = mass >= shown_floor(model, count)
    if keep.all():
        return model
    new_id = np.cumsum(keep) - 1
    cells = keep[model.labels]
    spans = replace(model.spans, core_keys=model.core_keys[cells], labels=new_id[model.labels[cells]])
    return replace(model, spans=spans)


def shown_words(model: SpanModel, noun: str) -> str:
    """The rule in words, for the summary ("" when it does not apply)."""
    h = model.histogram
    if model.spec.border_cells != "occupied" or h is None:
        return ""
    t = shown_count(h.noise, h.scale)
    return (
        f"a span is drawn only where the release shows {noun} in it: its cells' noisy counts add up "
        f"to at least {t:,} times the square root of their number"
    )


__all__ = ["shown_floor", "shown_mass", "shown_spans", "shown_words"]
