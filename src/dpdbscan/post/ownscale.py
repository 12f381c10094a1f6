"""Each cluster at its own scale: spans of larger candidate alphas beside
the chosen alpha's, from the same release.

The level selection (:mod:`.levelsearch`) takes one alpha for the whole
release, and every candidate alpha's tree comes from the same release. A
small or sparse cluster that the chosen alpha keeps only a peak of, or
drops, is often one span of its own at a larger candidate alpha. This rule
keeps the chosen alpha's selection and, span by span:

* *grows* a kept span to the span a larger candidate alpha selects over it
  (candidates in increasing order, one step at a time), while exactly one
  selected span of that alpha holds some of its core sub-cells, that span
  comes within ``gap`` x (alpha' + alpha'') of no other kept span (nor
  shares a sub-cell with one), and the kept span holds less than
  :data:`GROW_SHARE` of its noisy mass (the chosen alpha kept only a peak
  of it);
* *adds* the spans larger candidate alphas select where nothing is kept
  (nearest candidate first): a span of alpha' is added when none of its
  core sub-cell centres lies within :data:`GAP` x (alpha' + alpha'') of a
  kept span of alpha''.

On the base a small DP count sized (:func:`ties_for`), the chosen alpha
itself is the near-tie whose selection the other candidates bear out most
(:func:`agreeing`), not the largest.

Every span so taken is a span of the density test at its own (alpha',
MinPts) on the one release, among the candidates whose margins already
took beta / c: post-processing, no extra budget; its guarantee is at its
own (rho alpha', M*) (:func:`.levelsearch.level_guarantee` on the grid at
alpha'). Each larger candidate costs the sweep of its own ladder on the
sub-cells. ``predict`` labels a point by the nearest core sub-cell centre
within the span's own alpha. The design study and its numbers are in
docs/parameters.md (section 7, "each cluster at its own scale").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..cells.grid import Grid
from ..cells.histogram import NoisyHistogram
from ..params.sizing import SMALL_N
from ..params.specs import SpanSpec
from . import levelsearch as _levels
from .ladder import sweep

#: A kept span grows to a larger alpha's span only while it holds less than
#: this share of that span's noisy mass (fixed on the first 60 small 2-D tune scenes).
GROW_SHARE = 0.5
#: A larger alpha's span is kept only when none of its core centres lies
#: within GAP x (its alpha + the other's) of a kept span.
GAP = 0.5
#: The dimensions the rule runs in. It was measured in 2-D and 3-D, but in
#: 3-D it bought +0.004 on 2 of 19 close-tune scenes for 3-4x the CPU of an
#: automatic fit (docs/parameters.md section 7), so elsewhere the selection
#: keeps one alpha.
DIMS = (2,)


@dataclass(frozen=True)
class _Span:
    """A selected span and where it comes from (one alpha's selection)."""

    keys: np.ndarray
    level: _levels.SpanLevel
    how: str | None = None  # None: the chosen alpha's, kept; "grown" or "added"

    @property
    def eps(self) -> float:
        return float(self.level.eps)


def applies(d: int, units: bool, max_extent: float | None, candidates: int) -> bool:
    """Whether the automatic mode's level selection takes spans of other
    alphas: at event level, outside the place search (geographic mode), in
    :data:`DIMS`, with more than one candidate alpha. Public inputs only."""
    return d in DIMS and not units and max_extent is None and candidates > 1


def ties_for(counted: float | None) -> str:
    """Where the near-ties of the alpha choice go when spans are taken at
    their own alpha: "agree" (:func:`agreeing`) where the base release was
    sized for the DP count ``counted`` (the count's n from
    :func:`dpdbscan.params.sizing.sized_n`: a 2-D set below SMALL_N
    points), else "largest", as with one alpha (:func:`.levelsearch.choose_alpha`).

    Why: on a small set the largest alpha of the near-ties also runs thin
    shapes a little apart together, and which tie holds them apart is not
    the smallest always (that rule lost on held-out scenes) but the one the
    other scales of the same release bear out. On sets of 20,000 points (the
    dev suite) smaller ties split rings, so the rule is for the small sets'
    base only (docs/parameters.md section 7). Public: the DP count and fixed
    constants."""
    return "agree" if counted is not None and counted < SMALL_N else "largest"


def agreement(a: _levels.LevelSpans, b: _levels.LevelSpans) -> float:
    """How far two selections of one release (on the same sub-cell grid)
    say the same: the adjusted Rand index over the sub-cells core in
    either, a sub-cell outside one's spans labelled -1 there."""
    keys = np.union1d(a.core_keys, b.core_keys)
    if keys.size < 2:
        return 0.0
    la, lb = _labels_at(a, keys), _labels_at(b, keys)
    return adjusted_rand(la, lb)


def _labels_at(sel: _levels.LevelSpans, keys: np.ndarray) -> np.ndarray:
    out = np.full(keys.size, -1, dtype=np.int64)
    if sel.core_keys.size:
        i = np.minimum(np.searchsorted(sel.core_keys, keys), sel.core_keys.size - 1)
        hit = sel.core_keys[i] == keys
        out[hit] = sel.labels[i[hit]]
    return out


def adjusted_rand(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted Rand index of two labellings (Hubert and Arabie, 1985); 1.0
    where both put everything in one class."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((int(ia.max()) + 1, int(ib.max()) + 1), dtype=np.float64)
    np.add.at(table, (ia, ib), 1.0)

    def pairs(x: np.ndarray) -> float:
        return float(np.sum(x * (x - 1) / 2))

    n = float(a.size)
    both, rows, cols = pairs(table), pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    expected = rows * cols / (n * (n - 1) / 2)
    top = (rows + cols) / 2
    return 1.0 if top == expected else (both - expected) / (top - expected)


def agreeing(sels: Mapping[float, _levels.LevelSpans], ties: Sequence[float]) -> float:
    """Of the near-ties ``ties``, the alpha whose selection agrees best (mean
    :func:`agreement`) with every other candidate's in ``sels``; equal
    agreement to the larger alpha. Post-processing: the selections only."""
    alphas = sorted(sels)

    def mean(a: float) -> float:
        return (
            float(np.mean([agreement(sels[a], sels[b]) for b in alphas if b != a]))
            if len(alphas) > 1
            else 0.0
        )

    return max(sorted(ties), key=lambda a: (mean(a), a))


def select(
    hist: NoisyHistogram,
    spec: SpanSpec,
    eps_candidates: Sequence[float],
    *,
    alpha: float | None = None,
    share_of: str | None = None,
    ties: str = "largest",
) -> _levels.LevelSpans:
    """:func:`.levelsearch.select_levels` (the chosen alpha, or ``alpha``;
    near-ties to ``ties``, :func:`ties_for`), then each larger candidate's
    own selection from the same release and :func:`widen`. Post-processing
    only."""
    if ties not in ("largest", "agree"):
        raise ValueError(f"ties must be 'largest' or 'agree', got {ties!r}")
    cands = [float(a) for a in eps_candidates]
    coarse = sweep(hist, replace(spec, subcells=1), cands, _levels.ladder(hist))
    sel = _levels.select_levels(hist, spec, cands, alpha=alpha, coarse=coarse, share_of=share_of)
    if ties == "agree" and alpha is None and len(_levels.near_ties(sel.alphas)) > 1:
        # every candidate's own selection (those above the choice are needed anyway)
        sels = {
            a: _levels.select_levels(hist, spec, cands, alpha=a, coarse=coarse, share_of=share_of)
            for a in cands
        }
        sels[sel.eps] = sel
        pick = agreeing(sels, [r[0] for r in _levels.near_ties(sel.alphas)])
        if pick != sel.eps:
            runner = _levels.runner_up(sel.alphas, pick)
            chosen = sels[pick]
            sel = replace(
                chosen,
                alphas=sel.alphas,
                candidates=sel.candidates,
                unsure=bool(chosen.tree.close) or runner is not None,
                runner_up=runner,
            )
        return widen(sel, {a: s for a, s in sels.items() if a > sel.eps})
    return widen(sel, larger_selections(hist, spec, cands, sel.eps, share_of=share_of, coarse=coarse))


def larger_selections(
    hist: NoisyHistogram,
    spec: SpanSpec,
    eps_candidates: Sequence[float],
    above: float,
    *,
    share_of: str | None = None,
    coarse: dict | None = None,
) -> dict[float, _levels.LevelSpans]:
    """Each candidate alpha above ``above``: its own level selection from
    the release (its tree on cells, then on sub-cells: one sweep each).
    ``coarse``: the sweep on cells over the candidates, when the caller has it."""
    larger = [float(a) for a in eps_candidates if float(a) > above]
    if not larger:
        return {}
    if coarse is None:
        coarse = sweep(hist, replace(spec, subcells=1), larger, _levels.ladder(hist))
    return {
        a: _levels.select_levels(hist, spec, larger, alpha=a, coarse=coarse, share_of=share_of)
        for a in larger
    }


def widen(sel: _levels.LevelSpans, per: Mapping[float, _levels.LevelSpans]) -> _levels.LevelSpans:
    """``sel`` (one alpha's selection) with its spans grown and spans added
    from the selections of larger alphas ``per`` (module docstring). ``sel``
    itself when the rule takes nothing."""
    grid = sel.grid
    kept = [_Span(k, s) for k, s in zip(_span_keys(sel), sel.spans)]
    larger = {a: [_Span(k, s) for k, s in zip(_span_keys(o), o.spans)] for a, o in per.items() if a > sel.eps}
    order = sorted(larger)
    for i in range(len(kept)):
        cur = kept[i]
        others = kept[:i] + kept[i + 1 :]
        for a in order:
            over = [c for c in larger[a] if np.isin(c.keys, cur.keys).any()]
            if len(over) != 1 or _near(grid, others, over[0].keys, a, GAP):
                break
            if cur.level.mass >= GROW_SHARE * over[0].level.mass:
                break
            cur = replace(over[0], how="grown")
        kept[i] = cur
    trees = [(_tree(grid, s.keys), s.eps) for s in kept]
    for a in order:  # nearest the chosen alpha first
        for c in larger[a]:
            pts = grid.cell_centres(grid.decode(c.keys))
            if any(np.isfinite(t.query(pts, distance_upper_bound=GAP * (a + e))[0]).any() for t, e in trees):
                continue
            kept.append(replace(c, how="added"))
            trees.append((_tree(grid, c.keys), a))
    if all(s.how is None for s in kept):
        return sel
    return _relabelled(sel, kept)


def _span_keys(sel: _levels.LevelSpans) -> list[np.ndarray]:
    return [sel.core_keys[sel.labels == s.span] for s in sel.spans]


def _tree(grid: Grid, keys: np.ndarray):
    # lazy: scipy.spatial costs its import on fits that never take another alpha
    from scipy.spatial import cKDTree

    return cKDTree(grid.cell_centres(grid.decode(keys)))


def _near(grid: Grid, spans: Sequence[_Span], keys: np.ndarray, eps: float, gap: float) -> bool:
    """Whether a core sub-cell centre of ``keys`` (a span of ``eps``) is within
    ``gap`` x (``eps`` + their alpha) of one of ``spans``' (or shares a key)."""
    pts = grid.cell_centres(grid.decode(keys))
    for t in spans:
        if np.isin(keys, t.keys).any():
            return True
        if np.isfinite(_tree(grid, t.keys).query(pts, distance_upper_bound=gap * (eps + t.eps))[0]).any():
            return True
    return False


def _relabelled(sel: _levels.LevelSpans, spans: Sequence[_Span]) -> _levels.LevelSpans:
    """A :class:`~.levelsearch.LevelSpans` of ``spans`` (disjoint), numbered by
    smallest key as :func:`.levelsearch.spans_of` numbers them."""
    keys = np.concatenate([s.keys for s in spans])
    raw = np.concatenate([np.full(s.keys.size, i, dtype=np.int64) for i, s in enumerate(spans)])
    order = np.argsort(keys, kind="stable")
    keys, raw = keys[order], raw[order]
    if np.any(keys[1:] == keys[:-1]):
        raise AssertionError("spans of different alphas overlap")  # the gap rule keeps them apart
    first = np.full(len(spans), keys.size, dtype=np.int64)
    np.minimum.at(first, raw, np.arange(keys.size))
    rank = np.empty(len(spans), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(spans))
    levels: list[_levels.SpanLevel | None] = [None] * len(spans)
    how: list[str | None] = [None] * len(spans)
    for i, s in enumerate(spans):
        levels[int(rank[i])] = replace(s.level, span=int(rank[i]))
        how[int(rank[i])] = s.how
    return replace(sel, core_keys=keys, labels=rank[raw], spans=tuple(levels), taken=tuple(how))


__all__ = [
    "GROW_SHARE",
    "GAP",
    "DIMS",
    "applies",
    "ties_for",
    "agreement",
    "agreeing",
    "adjusted_rand",
    "select",
    "larger_selections",
    "widen",
]
