"""Clusters at their own density level, from one release.

A flat cut (one alpha, one MinPts) cannot serve clusters whose densities
differ: a MinPts low enough for the sparse ones joins the dense ones through
thin bridges, one high enough to split those loses the sparse ones. HDBSCAN
(Campello, Moulavi and Sander, 2013) picks each cluster at its own level of
the density tree. The release already holds that tree: at a fixed alpha the
core sub-cells of a growing MinPts are nested (the threshold T = MinPts +
m(q) only grows), so the spans over a ladder of MinPts form a tree of
density level sets (:mod:`.auto`), all post-processing of one
:class:`NoisyHistogram`.

This module builds that tree at one alpha and selects disjoint spans from
it, each at its own MinPts:

* the *condensed tree* (:func:`condensed_tree`): a span is significant when
  its noisy mass reaches max(MinPts, ``min_share`` x the released mass: its
  positive part, or its noisy total, :func:`significance_of`); a cluster is
  born at the lowest level or where its parent splits into two or more
  significant spans, lives while one significant span continues it, and its
  *stability* is its mass integrated over its life on the level scale
  lambda (HDBSCAN's excess of mass);
* the *selection* (:func:`select_clusters`): excess of mass, bottom-up, a
  cluster is kept when its stability is at least the total of the best
  selection below it; the root of a single tree is not selectable unless it
  never splits (HDBSCAN's ``allow_single_cluster=False``). A selected
  cluster is labelled by its span at birth (its largest extent, as HDBSCAN
  labels a selected cluster by its members at birth). Two selected clusters
  are never ancestor and descendant, so their spans are disjoint, and they
  lie in different spans of a common level, so no two core centres of
  different selected spans are within alpha (with ``SpanSpec.join ==
  "face"``: share no face): ``predict`` with border alpha labels points as
  it does for a flat model (the span of the nearest core centre). With a largest extent (places),
  the rest of a too-large cluster with places selected inside it is added in
  pieces that fit (:func:`district_pieces`): disjoint from the rest, side by
  side with each other, and ``predict`` gives a point its nearest core's;
  a piece is kept only where it is dense without the selected places beside
  it (:func:`standalone_pieces`);
* *which alpha* (:func:`choose_alpha`): every candidate alpha of the plan
  gets its own tree and selection (on cells), scored by its total selected
  stability on HDBSCAN's lambda (T^(1/d) / alpha, one scale for every alpha;
  :func:`.auto.hdbscan_lambda`). Among the alphas that select at least two
  clusters, the best score says how many clusters there are; alphas within
  CLOSE of it with at least as many clusters are ties, and ties go to the
  largest alpha (each cluster at its largest extent, the least noise per
  neighbourhood; on a small counted 2-D base, to the one the other
  candidates' selections agree with most, :func:`.ownscale.agreeing`).
  That alpha's tree is then rebuilt on sub-cells for the final spans, from
  one level below the lowest level at which the cells' tree selects a
  cluster.

A span is significant by default at :data:`MIN_SHARE` (0.2%) of the released
positive mass, or of the noisy total in 3-D and up and for places
(:func:`significance_of`); the design study and its numbers are in
docs/parameters.md (sections 6 and 7).

**Guarantee.** Every selected span is a span of the density test at its own
(alpha, MinPts) on the release. At one alpha the accuracy event of the
density test's one-sided guarantee ("the weighted noise of every sub-cell
is at most G(q)") does not depend on MinPts, so one event covers every
level of the ladder; the selection looked at ``c`` alphas, each with its
margins at beta / c, so a union bound over them gives: with probability at
least 1 - beta every selected span lies in the span of one (rho alpha,
M*)-cluster, M* = floor(MinPts + min_q (m(q) - G(q))) + 1 at its own MinPts
(:func:`level_guarantee`; docs/density-notes.md for one level).

Everything here reads the release and public parameters only.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..cells.grid import Grid
from ..cells.histogram import NoisyHistogram
from ..exceptions import renamed
from ..laws.noise import variance as noise_variance
from ..params.specs import SpanSpec
from .auto import _parents, hdbscan_lambda, min_samples_ladder
from .coretests import core_test
from .coretests.coretest import over_candidates, relaxed
from .coretests.density.densitytest import density_guarantee
from .ladder import sweep
from .partition import Partition

#: The criterion's name, for the model.
CRITERION = (
    "clusters at their own level: excess of mass over the MinPts tree; alpha by total stability on "
    "lambda, near-ties to the largest alpha"
)
#: A span is significant when its noisy mass reaches this share of the
#: released positive mass (and MinPts).
MIN_SHARE = 0.002
#: In the geographic mode at person level (places counted in units) a span
#: is also significant when its mass reaches this many standard deviations
#: of the noise of one sub-cell's mass (sigma_Z / k^d, sigma_Z one cell's
#: noise), whatever the share of the total: a small place is core at one
#: sub-cell or two, whose mass (a share of their cell's count each) is under
#: MIN_SHARE of the total the release counts in every cell each unit adds
#: to; a span that noise alone lifted over the core threshold seldom holds
#: that much (docs/places-study.md section 2).
PLACE_NOISE_SDS = 3.0
#: From this many dimensions on, an event-level selection takes MIN_SHARE of
#: the noisy total, not of the positive part (:func:`significance_of`).
TOTAL_SHARE_MIN_D = 3
#: Two choices are "close" when the runner-up's score is at least this share of the best.
CLOSE = 0.9
SCALES = ("lambda", "logT")


@dataclass(frozen=True)
class Cluster:
    """A node of the condensed tree at one alpha.

    Attributes
    ----------
    id, parent : int
        Its index in the tree; the parent's (-1 for a root).
    birth, death : int
        The first and last level (index in the MinPts ladder) it is alive at.
    spans : tuple of int
        Its span id at each level ``birth..death``.
    masses : tuple of float
        Its noisy mass at each of those levels.
    stability : float
        Mass integrated over its life on the level scale.
    children : tuple of int
        The clusters born where it splits.
    fits : bool
        Whether its span at birth is at most the largest extent a selected
        span may have (:func:`span_extents`; always True without one). A
        cluster that does not fit is never selected; where it shrinks to
        fit while still one span, a child is born there.
    """

    id: int
    parent: int
    birth: int
    death: int
    spans: tuple
    masses: tuple
    stability: float
    children: tuple = ()
    fits: bool = True


@dataclass(frozen=True)
class Piece:
    """A place-sized piece of a cluster too large to be selected whole.

    Attributes
    ----------
    cluster : int
        The too-large cluster's id (the piece's cells are core at its birth).
    keys : ndarray
        Sorted keys of its core sub-cells.
    mass : float
        Their noisy mass.
    """

    cluster: int
    keys: np.ndarray
    mass: float


@dataclass(frozen=True)
class LevelTree:
    """The condensed tree of one alpha's MinPts ladder and its selection.

    Attributes
    ----------
    eps : float
        The radius (the paper's alpha; old attribute name ``alpha``).
    levels : tuple of Partition
        The spans at each MinPts, by MinPts.
    scale : tuple of float
        The level of each entry of ``levels`` on the stability scale.
    clusters : tuple of Cluster
    selected : tuple of int
        Ids of the selected clusters.
    score : float
        Total stability of the selected clusters.
    close : tuple of int
        Clusters whose choice was close (kept with a stability below
        1 / CLOSE x its children's best, or dropped for children within CLOSE).
    pieces : tuple of Piece
        With a largest extent: place-sized pieces of the too-large clusters
        that places were selected inside (:func:`district_pieces`).
    extent : tuple or None
        (the grid of the partitions' keys, the largest extent) the tree was
        built with, or None; ``min_mass`` the significant mass.
    short : tuple of int
        Clusters left unselected as short-lived (:func:`short_lived`).
    """

    eps: float
    levels: tuple
    scale: tuple
    clusters: tuple
    selected: tuple
    score: float
    close: tuple = ()
    pieces: tuple = ()
    extent: tuple[Grid, float] | None = None
    min_mass: float = 0.0
    short: tuple = ()

    alpha = renamed("alpha", "eps")

    @property
    def min_samples(self) -> list[int]:
        return [p.min_samples for p in self.levels]


def level_scale(levels: Sequence[Partition], alpha: float, d: int, scale: str = "lambda") -> list[float]:
    """The level of each partition on ``scale``: HDBSCAN's lambda = T^(1/d) /
    alpha, or log T."""
    if scale == "lambda":
        return [hdbscan_lambda(p.threshold, alpha, d) for p in levels]
    if scale == "logT":
        return [math.log(max(p.threshold, 1e-300)) for p in levels]
    raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")


def condensed_tree(
    levels: Sequence[Partition],
    lam: Sequence[float],
    min_mass: float = 0.0,
    fits: Sequence[np.ndarray] | None = None,
) -> list[Cluster]:
    """The clusters of a nested MinPts ladder (module docstring).

    ``levels`` sorted by MinPts (core sub-cells nested), ``lam`` their level
    on the stability scale (non-decreasing); a span is significant when its
    mass reaches max(MinPts, ``min_mass``). Level j stands for [lam_j,
    lam_j+1); the top level for nothing (its width is unknown). ``fits``:
    per level, whether each span is small enough to be selected
    (:func:`span_extents`); a cluster that does not fit and continues as
    one span that does gives birth to a child there (its life as a
    selectable cluster starts where it fits).
    """
    n = len(levels)
    width = [lam[j + 1] - lam[j] for j in range(n - 1)] + [0.0]
    rec: list[dict] = []  # mutable clusters, frozen at the end
    alive: dict[int, int] = {}  # span id at the previous level -> cluster id
    prev: Partition | None = None
    for j, p in enumerate(levels):
        masses = p.span_masses()
        ok = np.ones(p.n_spans, dtype=bool) if fits is None else np.asarray(fits[j], dtype=bool)
        sig = np.flatnonzero(masses >= max(p.min_samples, min_mass))
        groups: dict[int, list[int]] = {}
        parent = None if prev is None else _parents(prev, p)
        for span in sig.tolist():
            groups.setdefault(-1 if parent is None else int(parent[span]), []).append(span)
        now: dict[int, int] = {}
        for par, kids in groups.items():
            owner = alive.get(par, -1)
            if len(kids) == 1 and owner >= 0 and (rec[owner]["fits"] or not ok[kids[0]]):
                now[kids[0]] = owner  # the cluster lives on
                continue
            for span in kids:
                now[span] = len(rec)
                rec.append(
                    {
                        "parent": owner,
                        "birth": j,
                        "spans": [],
                        "masses": [],
                        "stab": 0.0,
                        "fits": bool(ok[span]),
                    }
                )
        for span, c in now.items():
            rec[c]["spans"].append(span)
            rec[c]["masses"].append(float(masses[span]))
            rec[c]["stab"] += float(masses[span]) * width[j]
        alive, prev = now, p
    children: dict[int, list[int]] = {}
    for i, r in enumerate(rec):
        if r["parent"] >= 0:
            children.setdefault(r["parent"], []).append(i)
    return [
        Cluster(
            i,
            r["parent"],
            r["birth"],
            r["birth"] + len(r["spans"]) - 1,
            tuple(r["spans"]),
            tuple(r["masses"]),
            r["stab"],
            tuple(children.get(i, ())),
            r["fits"],
        )
        for i, r in enumerate(rec)
    ]


def span_extents(p: Partition, grid: Grid) -> np.ndarray:
    """How far across each span of ``p`` reaches as ``predict`` draws it: the
    widest extent of its core sub-cells' footprints (``grid``: the grid their
    keys are in), plus the border alpha on either side.

    The widest extent is the largest width of the footprints projected on
    :func:`directions` (in 2-D every 22.5 degrees: within 2% of the true
    diameter, never above it). The diagonal of the bounding box would
    overstate a round place by sqrt 2: a place at one point is core in a
    disc around its cell, as wide along the axes as along the diagonals.
    Post-processing: keys and public grid only."""
    if p.n_spans == 0:
        return np.zeros(0)
    order = np.argsort(p.labels, kind="stable")
    c = grid.decode(p.keys[order]).astype(np.float64)
    starts = np.flatnonzero(np.r_[True, p.labels[order][1:] != p.labels[order][:-1]])
    ids = p.labels[order][starts]
    widest = np.zeros(p.n_spans)
    for u in directions(grid.d):
        at = c @ u
        across = np.maximum.reduceat(at, starts) - np.minimum.reduceat(at, starts) + float(np.abs(u).sum())
        widest[ids] = np.maximum(widest[ids], across * float(grid.width))
    return widest + 2.0 * float(p.eps)


def directions(d: int) -> np.ndarray:
    """Unit vectors a span's width is measured along (:func:`span_extents`):
    in 2-D every 22.5 degrees; else the axes and the diagonals of every
    pair of axes."""
    if d == 2:
        a = np.arange(8) * math.pi / 8
        return np.column_stack([np.cos(a), np.sin(a)])
    out = list(np.eye(d))
    for i in range(d):
        for j in range(i + 1, d):
            for sign in (1.0, -1.0):
                v = np.zeros(d)
                v[i], v[j] = 1.0, sign
                out.append(v / math.sqrt(2.0))
    return np.asarray(out)


def cut_to_fit(coords: np.ndarray, mass: np.ndarray, width: float, most: float) -> list[np.ndarray]:
    """Indices of ``coords`` (sub-cell coordinates, cells ``width`` wide) in
    pieces whose bounding box's diagonal is at most ``most``: the box is cut
    across its longest side, in its middle half, between the two adjacent
    slices of least total ``mass`` (a valley of the release where there is
    one; ties nearest the middle), and each side again until it fits."""
    out: list[np.ndarray] = []
    todo = [np.arange(len(coords))]
    while todo:
        idx = todo.pop()
        c = coords[idx]
        lo, hi = c.min(axis=0), c.max(axis=0)
        n = hi - lo + 1
        if float(np.sqrt(((n * width) ** 2).sum())) <= most or int(n.max()) < 2:
            out.append(idx)
            continue
        ax = int(np.argmax(n))
        at = c[:, ax] - lo[ax]
        slices = np.bincount(at, weights=mass[idx], minlength=int(n[ax]))
        cuts = np.arange(max(1, int(n[ax]) // 4), int(n[ax]) - int(n[ax]) // 4 + 1)
        cuts = cuts[(cuts >= 1) & (cuts <= n[ax] - 1)]
        valley = slices[cuts - 1] + slices[cuts]
        cut = cuts[np.lexsort((np.abs(2 * cuts - n[ax]), valley))[0]]
        todo += [idx[at >= cut], idx[at < cut]]
    return sorted(out, key=lambda i: int(i.min()))


def district_pieces(
    clusters: Sequence[Cluster],
    selected: Sequence[int],
    levels: Sequence[Partition],
    grid: Grid,
    extent: float,
    min_mass: float = 0.0,
) -> list[Piece]:
    """What the places selected inside a too-large cluster leave of it, in
    place-sized pieces.

    A cluster that is larger than ``extent`` and has a selected cluster that
    fits below it is a district of places (downtown). Excess of mass keeps
    only the places inside it, at their higher levels; at a budget that
    shows one peak in a plateau that is the peak alone, and the district's
    other busy cells fall out. A too-large cluster with no place inside is
    selected itself (:func:`select_clusters`) and cut the same way, whole:
    the release cannot tell its places apart, and one span kilometres
    across would draw the streets between them as a place (:func:`district_hosts`).
    Its span at birth less its children's spans at theirs is cut
    into pieces that fit ``extent`` (:func:`cut_to_fit`, border eps
    included as in :func:`span_extents`); a piece is kept when its noisy
    mass is significant (max(MinPts of that level, ``min_mass``)). Every
    piece's sub-cells are core at the cluster's birth, so a piece lies in a
    span of the density test at that level (its guarantee); pieces, places
    and the children's spans are disjoint. Post-processing: keys, masses
    and the public grid.
    """
    out = []
    for h in sorted(district_hosts(clusters, selected)):
        c = clusters[h]
        p = levels[c.birth]
        inside = p.labels == c.spans[0]
        keys, mass = p.keys[inside], p.mass[inside]
        for k in c.children:
            q = levels[clusters[k].birth]
            keep = ~np.isin(keys, q.keys[q.labels == clusters[k].spans[0]], assume_unique=True)
            keys, mass = keys[keep], mass[keep]
        if keys.size == 0:
            continue
        least = max(float(p.min_samples), float(min_mass))
        for idx in cut_to_fit(grid.decode(keys), mass, float(grid.width), float(extent) - 2.0 * float(p.eps)):
            if float(mass[idx].sum()) >= least:
                out.append(Piece(h, keys[idx], float(mass[idx].sum())))
    return out


def district_hosts(clusters: Sequence[Cluster], selected: Sequence[int]) -> set[int]:
    """The too-large clusters :func:`district_pieces` cuts: those above a
    selected cluster that fits (a place inside them), a selected one that
    does not fit (the release shows no place inside it: its pieces are
    where its mass lies, not one span across a district), and those above
    it (what lies outside it and its siblings: before 0.3.0 left out, and
    with it places the flat cut holds, three top-20 pick-up cells of full
    Cabs on one seed)."""
    parent = {c.id: c.parent for c in clusters}
    hosts: set[int] = set()
    for i in selected:
        if not clusters[i].fits:
            hosts.add(i)
        j = parent[i]
        while j >= 0:
            if not clusters[j].fits:
                hosts.add(j)
            j = parent[j]
    return hosts


def select_clusters(
    clusters: Sequence[Cluster],
    method: str = "eom",
    flip: Collection[int] = (),
    short: Collection[int] = (),
) -> tuple[list[int], float, list[int]]:
    """Disjoint clusters of a condensed tree: excess of mass (``"eom"``) or
    the leaves (``"leaf"``). Returns (selected ids, their total stability,
    ids whose choice was close: the runner-up within CLOSE, and the choice
    matters for the result).

    A root is not selectable when it is the only one and splits (HDBSCAN's
    ``allow_single_cluster=False``): one cluster is what every data set
    shows at a low enough level. ``flip``: clusters whose keep-or-split
    choice is reversed (the alternative of a close call). ``short``:
    clusters that are never selected, nor anything below them
    (:func:`short_lived`).
    """
    roots = [c.id for c in clusters if c.parent < 0]
    single = len(roots) == 1
    best: dict[int, float] = {}
    chosen: dict[int, list[int]] = {}
    close: list[int] = []
    for c in sorted(clusters, key=lambda c: -c.birth):  # children before parents
        if c.id in short:
            best[c.id], chosen[c.id] = 0.0, []
            continue
        below = sum(best[k] for k in c.children)
        kids = [i for k in c.children for i in chosen[k]]
        if not c.fits:
            # larger than a selected span may be: what lies below it; else the
            # release cannot tell its places apart and it stands for them
            best[c.id], chosen[c.id] = (below, kids) if kids else (c.stability, [c.id])
            continue
        if not c.children:
            best[c.id], chosen[c.id] = c.stability, [c.id]
            continue
        if method == "leaf" or (single and c.parent < 0):
            best[c.id], chosen[c.id] = below, kids
            continue
        if (c.stability >= below) != (c.id in flip):
            best[c.id], chosen[c.id] = c.stability, [c.id]
            if below >= CLOSE * c.stability:
                close.append(c.id)
        else:
            best[c.id], chosen[c.id] = below, kids
            if c.stability >= CLOSE * below:
                close.append(c.id)
    selected = sorted(i for r in roots for i in chosen[r])
    # a close call matters only where it or a cluster below it is selected
    parent = {c.id: c.parent for c in clusters}
    above = set()
    for i in selected:
        while i >= 0:
            above.add(i)
            i = parent[i]
    return selected, float(sum(best[r] for r in roots)), [i for i in close if i in above]


def short_lived(
    clusters: Sequence[Cluster], min_samples: Sequence[int], rungs: int, born_at: int | None = None
) -> set[int]:
    """Clusters born at MinPts ``born_at`` (None: at any level) whose tree
    lives fewer than ``rungs`` levels of the ladder: the cluster and
    everything below it are gone (no span of them still significant) before
    the MinPts ``rungs`` levels above its birth (``min_samples``: the tree's
    ladder, a factor sqrt 2 a level). A cluster alive at the ladder's top
    level lives on (its life is not seen).

    Why, for places, at the floor of a tree cut by the peak share
    (:func:`above_peak`): a place is a peak of the release, whose units
    stand out over several levels above where the floor meets it; the jams
    on a busy road are a ridge as dense all along, which the floor cuts into
    small level sets that break up and vanish within a level or two,
    wherever the floor lands. Persistence in levels is a ratio of MinPts,
    the same at any fleet size and horizon. Not below a floor that binds:
    near the noise margin every level's threshold is mostly the margin, and
    real places live a level or two there too (full Cabs). Post-processing:
    the tree."""
    if rungs <= 1:
        return set()
    top = len(min_samples) - 1
    reach = {c.id: c.death for c in clusters}
    for c in sorted(clusters, key=lambda c: -c.birth):  # children before parents
        for k in c.children:
            reach[c.id] = max(reach[c.id], reach[k])
    return {
        c.id
        for c in clusters
        if reach[c.id] < top
        and reach[c.id] - c.birth + 1 < rungs
        and (born_at is None or min_samples[c.birth] == born_at)
    }


def level_tree(
    levels: Sequence[Partition],
    alpha: float,
    d: int,
    *,
    scale: str = "lambda",
    min_mass: float = 0.0,
    method: str = "eom",
    flip: Collection[int] = (),
    extent: tuple[Grid, float] | None = None,
    min_rungs: int = 1,
    born_at: int | None = None,
) -> LevelTree:
    """The condensed tree of one alpha's ladder and its selection (``flip``:
    :func:`select_clusters`). ``extent``: (the grid the partitions' keys
    are in, the largest extent a selected span may have,
    :func:`span_extents`), or None for no limit. ``min_rungs``: a cluster
    born at MinPts ``born_at`` (None: any) whose tree lives fewer levels is
    not selected (:func:`short_lived`)."""
    lam = level_scale(levels, alpha, d, scale)
    fits = None if extent is None else [span_extents(p, extent[0]) <= extent[1] for p in levels]
    clusters = condensed_tree(levels, lam, min_mass, fits)
    short = short_lived(clusters, [p.min_samples for p in levels], min_rungs, born_at)
    selected, score, close = select_clusters(clusters, method, flip, short)
    tree = LevelTree(
        float(alpha),
        tuple(levels),
        tuple(lam),
        tuple(clusters),
        (),
        score,
        tuple(close),
        extent=extent,
        min_mass=float(min_mass),
        short=tuple(sorted(short)),
    )
    return reselect(tree, selected, score)


def reselect(tree: LevelTree, selected: Sequence[int], score: float) -> LevelTree:
    """``tree`` with the selection ``selected`` (total stability ``score``)
    and, with a largest extent, the district pieces that go with it
    (:func:`district_pieces`)."""
    pieces: list[Piece] = []
    if tree.extent is not None:
        grid, most = tree.extent
        pieces = district_pieces(tree.clusters, selected, tree.levels, grid, most, tree.min_mass)
    cut = {piece.cluster for piece in pieces}
    keep = tuple(i for i in selected if i not in cut)
    return replace(tree, selected=keep, score=float(score), pieces=tuple(pieces))


@dataclass(frozen=True)
class SpanLevel:
    """Where a selected span comes from.

    Attributes
    ----------
    span : int
        Its id in :attr:`LevelSpans.labels`.
    eps, min_samples, threshold : float, int, float
        The level it was taken at: its cluster's birth, or the largest MinPts
        of the ladder above it at which the span has the same core sub-cells
        (where the empty-space guard holds the threshold, several MinPts do):
        the density test at (alpha, MinPts) with core threshold T.
    death_min_samples : int
        The last MinPts of the ladder at which it is still one significant
        span.
    stability : float
        Its cluster's stability (on the selection's scale).
    mass : float
        Its core mass at that level: the noisy mass of its core sub-cells
        (:func:`~.partition.sub_cell_mass`), not the GeoJSON's ``noisy_mass``.
    cluster : int
        Its cluster's id in the tree.
    fits : bool
        Whether it is at most the selection's largest extent (always True
        without one); False for a cluster kept whole because the release
        shows nothing that fits below it and no piece of it is significant
        (:func:`district_pieces`).
    piece : bool
        Whether it is a place-sized piece of a too-large cluster with places
        inside it (:func:`district_pieces`; ``cluster`` is that cluster,
        ``stability`` its stability times the piece's share of its mass).
    """

    span: int
    eps: float
    min_samples: int
    threshold: float
    death_min_samples: int
    stability: float
    mass: float
    cluster: int
    fits: bool = True
    piece: bool = False

    alpha = renamed("alpha", "eps")


@dataclass(frozen=True)
class LevelSpans:
    """Spans selected across levels of the tree, ready for ``predict``.

    Attributes
    ----------
    grid : Grid
        The sub-cell grid the keys are in (the release's cells subdivided
        ``subcells`` times; measured against ``alpha``).
    core_keys, labels : ndarray
        Sorted keys of the selected core sub-cells and their span id
        (0..n_spans-1, numbered by smallest key), as a flat model's.
    eps : float
        The chosen radius (alpha): of every selected span, but for those a
        larger candidate alpha gave (``taken``; each :class:`SpanLevel`
        has its own, ``predict``'s border radius for the span); old
        attribute name ``alpha``.
    spans : tuple of SpanLevel
        Per span id: the level it comes from.
    tree : LevelTree
        The chosen alpha's tree.
    alphas : tuple of (alpha, score, n_selected)
        Every candidate alpha's total selected stability (on lambda).
    candidates : int
        Number of alphas the choice looked at (``c`` of the guarantee).
    unsure : bool
        True when the choice was close: another alpha scored at least CLOSE x
        the best with another number of clusters, or a cluster's
        keep-or-split choice was within CLOSE (:func:`alternative`).
    runner_up : float or None
        That other alpha (:func:`choose_alpha`), or None.
    taken : tuple
        Per span id, how a span of another alpha was taken
        (:mod:`.ownscale`): "grown" from a span of ``eps``, or "added"
        where ``eps`` kept nothing; None for a span of ``eps``. Empty when
        every span is of ``eps``.
    own_left_out : int
        Core sub-cells left out of their span's drawing (:func:`own_cells`).
    """

    grid: Grid
    core_keys: np.ndarray
    labels: np.ndarray
    eps: float
    spans: tuple
    tree: LevelTree
    alphas: tuple
    candidates: int
    unsure: bool
    runner_up: float | None = None
    taken: tuple = ()
    own_left_out: int = 0

    alpha = renamed("alpha", "eps")

    @property
    def n_spans(self) -> int:
        return len(self.spans)


def spans_of(tree: LevelTree) -> tuple[np.ndarray, np.ndarray, list[SpanLevel]]:
    """The selected clusters' spans at birth and the pieces of too-large
    clusters (:attr:`LevelTree.pieces`): sorted keys, span ids numbered by
    smallest key, and each span's level."""
    parts, levels = [], []
    for cid in tree.selected:
        c = tree.clusters[cid]
        p = tree.levels[c.birth]
        keys = p.keys[p.labels == c.spans[0]]
        p = tree.levels[_same_cells_up_to(tree, c, keys)]
        parts.append(keys)
        levels.append((c, p, float(c.stability), float(c.masses[0]), bool(c.fits), False))
    for piece in tree.pieces:
        c = tree.clusters[piece.cluster]
        share = piece.mass / c.masses[0] if c.masses[0] > 0 else 0.0
        parts.append(piece.keys)
        levels.append((c, tree.levels[c.birth], float(c.stability) * share, piece.mass, True, True))
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    keys = np.concatenate(parts)
    raw = np.concatenate([np.full(k.size, i, dtype=np.int64) for i, k in enumerate(parts)])
    order = np.argsort(keys, kind="stable")
    keys, raw = keys[order], raw[order]
    if np.any(keys[1:] == keys[:-1]):
        raise AssertionError("selected spans overlap")  # impossible for a nested tree
    # canonical numbering: by smallest key
    first = np.full(len(parts), keys.size, dtype=np.int64)
    np.minimum.at(first, raw, np.arange(keys.size))
    rank = np.empty(len(parts), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(parts))
    spans = [
        SpanLevel(
            int(rank[i]),
            tree.eps,
            int(p.min_samples),
            float(p.threshold),
            int(tree.levels[c.death].min_samples),
            stability,
            mass,
            int(c.id),
            fits,
            piece,
        )
        for i, (c, p, stability, mass, fits, piece) in enumerate(levels)
    ]
    spans.sort(key=lambda s: s.span)
    return keys, rank[raw], spans


def _same_cells_up_to(tree: LevelTree, c: Cluster, keys: np.ndarray) -> int:
    """The highest level of ``c``'s life at which its span still has the core
    sub-cells ``keys`` of its birth."""
    j = c.birth
    while j < c.death:
        p = tree.levels[j + 1]
        if int(np.count_nonzero(p.labels == c.spans[j + 1 - c.birth])) != keys.size:
            break
        j += 1
    return j


def ladder(hist: NoisyHistogram, min_samples: int | None = None) -> list[int]:
    """The MinPts ladder of the release: the fixed ``min_samples``, or
    :func:`.auto.min_samples_ladder` of the released positive mass."""
    if min_samples is not None:
        return [int(min_samples)]
    return min_samples_ladder(float(np.maximum(hist.values, 0).sum()))


def alpha_scores(
    table: dict[tuple[float, int], Partition],
    d: int,
    *,
    min_mass: float = 0.0,
    method: str = "eom",
    extent: tuple[Grid, float] | None = None,
) -> list[tuple[float, float, int]]:
    """(alpha, total selected stability on lambda, clusters selected) for
    every alpha of a sweep ``table``; lambda is one scale for every alpha.
    ``extent`` as for :func:`level_tree`; with one, the score counts the
    selected clusters that fit it."""
    rows = []
    for a in sorted({x for x, _ in table}):
        levels = [table[key] for key in sorted(table) if key[0] == a]
        t = level_tree(levels, a, d, scale="lambda", min_mass=min_mass, method=method, extent=extent)
        # with a largest extent, alpha is chosen by the spans that fit it (a
        # cluster too large, kept whole where nothing fits below, is a
        # fallback, not a find)
        score = (
            t.score
            if extent is None
            else sum(t.clusters[i].stability for i in t.selected if t.clusters[i].fits)
        )
        rows.append((a, float(score), len(t.selected)))
    return rows


def choose_alpha(rows: Sequence[tuple[float, float, int]]) -> tuple[float, float | None]:
    """The alpha of the selection and the runner-up from every candidate's
    (alpha, total stability on lambda, clusters selected) (:func:`alpha_scores`).

    The highest total stability among the alphas that select at least two
    clusters says how many clusters there are; alphas
    scoring within CLOSE of it with at least that many clusters are ties,
    and ties go to the largest alpha: each cluster at its largest extent,
    and the least noise per neighbourhood (its signal grows as alpha^d, its
    noise as alpha^(d/2)). On lambda alone smaller alphas win (their
    ladders reach higher, noisier density peaks) with less of each cluster.
    The runner-up is the best-scoring alpha within CLOSE whose selection
    has another number of clusters (None when there is none): a different
    answer the release supports almost as well.
    """
    chosen = max(near_ties(rows), key=lambda r: r[0])
    return chosen[0], runner_up(rows, chosen[0])


def _pool(rows: Sequence[tuple[float, float, int]]) -> tuple[list, tuple[float, float, int]]:
    # one cluster is what every data set shows at a low enough level (HDBSCAN
    # does not select its root): alphas that select fewer than two compete
    # only when no alpha selects two
    pool = [r for r in rows if r[2] >= 2] or list(rows)
    return pool, max(pool, key=lambda r: (r[1], r[0]))


def near_ties(rows: Sequence[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """The rows of :func:`choose_alpha`'s near-ties: scoring within CLOSE of
    the best with at least as many clusters (the best among them)."""
    pool, best = _pool(rows)
    return [r for r in pool if r[1] >= CLOSE * best[1] and r[2] >= best[2]]


def runner_up(rows: Sequence[tuple[float, float, int]], chosen: float) -> float | None:
    """The best-scoring alpha within CLOSE of the best whose selection has
    another number of clusters than ``chosen``'s (None when there is none)."""
    pool, best = _pool(rows)
    n = next(r[2] for r in rows if r[0] == chosen)
    other = [r for r in pool if r[1] >= CLOSE * best[1] and r[2] != n]
    return max(other, key=lambda r: (r[1], r[0]))[0] if other and best[1] > 0 else None


def above_peak(
    levels: Sequence[Partition],
    share: float,
    rank: int = 1,
    jams: float | None = None,
    fleet: float | None = None,
) -> list[int]:
    """The MinPts of ``levels`` (one alpha's ladder on cells, by MinPts)
    whose core threshold is at least ``share`` of the peak: the highest
    threshold at which the release still has ``rank`` spans (the
    ``rank``-th densest place's; the most spans any level has where none
    has that many), at least the top level when none reaches it. ``jams``:
    the most units a busy road's jams may gather within eps
    (:func:`jam_reach`); where it is under the lowest level's threshold no
    jam can be core and every level is kept. None: the floor always.
    ``fleet``: where the floor binds, it is at least this many units (a
    share of the fleet, :func:`jam_reach`); None: the peak's share alone.

    Why, for places counted in units: an absolute MinPts cannot tell the
    places of a large fleet from where it merely passes. Stops (or trip
    ends) on a road grow with the traffic on it, as the units at a place
    grow with its popularity, and a release of the events alone does not
    see the traffic: with thousands of units, the few in a hundred of
    those passing a busy road who stop there (a jam) are hundreds of units
    in an alpha-ball, above the noise and above any MinPts a small fleet
    would call a place. The peak grows with the fleet and the horizon in
    the same way, so a share of it is "many units" at any size; where the
    noise margin is above that share of the peak (small fleets, short
    horizons, full Cabs) no level is left out.

    Why not the single densest place (``rank`` 1): one place (an airport,
    a main station) can be several times busier than the next, and by
    chance of the city, not of its traffic: two synthetic weeks of 10,000
    taxis (seeds 0 and 1 of the same generator) peak at thresholds 41,016
    and 20,541 on cells, while their second places peak at 14,538 and
    14,543. Post-processing: the thresholds of the release's partitions."""
    most = max((p.n_spans for p in levels), default=0)
    need = max(1, min(int(rank), most))
    if jams is not None and levels and float(jams) < levels[0].threshold:
        return [p.min_samples for p in levels]
    top = max((p.threshold for p in levels if p.n_spans >= need), default=0.0)
    cut = share * top if fleet is None else max(share * top, float(fleet))
    keep = [p.min_samples for p in levels if p.threshold >= cut]
    return keep or [levels[-1].min_samples]


def unit_mass(units: Any) -> float:
    """The most one unit adds to a release's total: k cells times m points
    (``units``: the release's bound, None at event level: 1). Public."""
    return 1.0 if units is None else float(units.max_cells_per_unit * units.max_points_per_cell)


def jam_reach(hist: NoisyHistogram, share: float, per_unit: float) -> float:
    """``share`` of the release's fleet, estimated as its noisy total over
    the most one unit adds to it (``per_unit``: k cells times m points):
    the most units a busy road's jams may gather within eps
    (:func:`above_peak`'s ``jams``).

    Why: the place floor is there for the jams of a large fleet, the few
    in a hundred of the units passing a busy road who stop there, and those
    are a share of the units that pass, so of the fleet. Where that share
    is under the noise margin no jam is core at any level, and the floor
    would only cut places: 2,000 synthetic taxis whose pick-ups are sharp
    (a fix every 10 s to 1 min) peak 13-16 times above the margin, so 8% of
    the second place's peak bound, and with the life rule it dropped real
    places (17 spans to 6, 34 to 11) where no jam reaches the margin.
    With k chosen privately most units keep k cells, so the total over k
    is about the fleet (2,000 synthetic taxis: 1,835-2,200; 10,000:
    9,171), less where units keep fewer. Post-processing: the release's
    total and the public k and m."""
    return float(share) * max(float(np.asarray(hist.values).sum()), 0.0) / max(float(per_unit), 1.0)


def significance_of(d: int, units: bool, max_extent: float | None) -> str:
    """Which released mass a span's significant share is of
    (``share_of`` of :func:`select_levels`): the noisy total with a largest
    extent (places), and in TOTAL_SHARE_MIN_D dimensions or more at event
    level; else the positive part.

    The automatic base release has about ASSUMED_N / POINTS_PER_CELL cells
    whatever n (:mod:`dpdbscan.plan.autoplan`), and the positive part of
    their noise is about 0.43 per cell at epsilon = 1, some 28,000 in all.
    In 2-D a small set's base is sized for its DP count, so the positive
    part stays about 2.4 n; in 3-D (no count) it stays at 28,000 + n, and
    0.2% of it is about 60 points, 3% of a 2,000-point set, whose small
    clusters are then never significant. The noisy total is unbiased for n
    at any size (3-D close-tune scenes: 7 of 40 better, none worse, +0.010
    mean ARI; docs/parameters.md section 7). Person-level releases keep the
    positive part (not measured there). Public inputs only."""
    if max_extent is not None or (d >= TOTAL_SHARE_MIN_D and not units):
        return "total"
    return "positive"


def select_levels(
    hist: NoisyHistogram,
    spec: SpanSpec,
    eps_candidates: Sequence[float],
    min_samples: int | None = None,
    *,
    scale: str = "lambda",
    min_share: float = MIN_SHARE,
    method: str = "eom",
    alpha: float | None = None,
    coarse: dict[tuple[float, int], Partition] | None = None,
    bottom: bool = False,
    max_extent: float | None = None,
    peak_share: float | None = None,
    share_of: str | None = None,
    peak_rank: int = 1,
    min_rungs: int = 1,
    jam_share: float | None = None,
    fleet_floor: float | None = None,
    per_unit: float = 1.0,
    noise_sds: float | None = None,
    own_share: float | None = None,
    own_sds: float = 0.0,
) -> LevelSpans:
    """Spans selected at their own levels from the release ``hist``.
    Post-processing only.

    One tree per candidate alpha over the MinPts ladder (:func:`ladder`), on
    cells; the alpha by :func:`choose_alpha`; then that alpha's tree on the
    sub-cells of ``spec``, its excess-of-mass selection, and each selected
    cluster's span at its birth.

    Parameters
    ----------
    hist : NoisyHistogram
        The release (its cells at any alpha: every candidate re-measures them).
    spec : SpanSpec
        The post-processing (density test; ``subcells`` of the final spans,
        ``beta`` and ``margin`` of the core test: the beta each candidate's
        margins take).
    eps_candidates : sequence of float
        The candidate alphas (public: the automatic plan's).
    min_samples : int, optional
        A fixed MinPts (a one-level tree); default: the ladder.
    scale : {"lambda", "logT"}
        The stability scale of the final tree.
    min_share : float
        A span is significant when its mass reaches this share of the
        released mass (``share_of``) and MinPts.
    method : {"eom", "leaf"}
        Excess of mass or the leaves of the tree.
    alpha : float, optional
        A fixed alpha instead of the choice (the guarantee then counts one
        candidate).
    coarse : dict, optional
        The sweep on cells (``subcells=1``) over the candidates and the
        ladder, when the caller has it.
    bottom : bool
        Build the sub-cells' tree over the whole ladder. By default it starts
        one level below the lowest level at which the cells' tree selects a
        cluster: the low levels hold the most core sub-cells and cost the
        most merges (Cabs: 1.8 s of 2.1), and nothing below them is selected
        on cells.
    max_extent : float, optional
        The largest extent a selected span may have (:func:`span_extents`,
        in the data's units; a public prior such as the size of a place):
        a cluster larger than that is never selected, its sub-clusters
        are, and a cluster that shrinks to fit while still one span is
        selectable from the level where it fits. None: no limit.
    peak_share : float, optional
        Leave out of the tree the levels whose core threshold is below this
        share of the release's peak at the chosen alpha (:func:`above_peak`):
        a cluster must be dense relative to the densest, not only above the
        noise. None: every level of the ladder.
    peak_rank : int
        Whose peak ``peak_share`` is a share of: the ``peak_rank``-th
        densest place's (:func:`above_peak`).
    min_rungs : int
        With ``peak_share``, where its floor leaves levels out: a cluster
        born at the floor whose tree lives fewer levels of the ladder is not
        selected (:func:`short_lived`); 1: every cluster may be.
    jam_share : float, optional
        With ``peak_share``: its floor binds only where this share of the
        fleet (:func:`jam_reach`, with ``per_unit`` the most one unit adds
        to the total, k m) reaches the lowest level's threshold, where a
        road's jams could be core. None: wherever it is above the margin.
    fleet_floor : float, optional
        With ``peak_share``, where its floor binds: the floor is at least
        this share of the fleet (:func:`jam_reach`). None: the peak's share
        alone.
    per_unit : float
        See ``jam_share`` and ``fleet_floor``.
    share_of : {"positive", "total"}, optional
        Which released mass ``min_share`` is a share of: its positive part
        or the noisy total (:func:`significance_of`). Default: the total
        with ``max_extent``, else the positive part.
    noise_sds : float, optional
        A span is also significant when its mass reaches this many standard
        deviations of one sub-cell's noisy mass (:func:`noise_mass`), where
        that is below ``min_share`` of the mass. None: the share alone.
    own_share, own_sds : float, optional
        Draw each span over its own units (:func:`own_cells`): a core
        sub-cell whose cell's noisy count is under ``own_share`` of its
        span's busiest cell by more than ``own_sds`` standard deviations of
        one cell's noise is left out. None: every core sub-cell.
    """
    if not core_test(spec.core).selects_levels:
        raise ValueError("level selection needs the density test (core='density')")
    ms = ladder(hist, min_samples)
    d = hist.grid.d
    if share_of is None:
        share_of = "positive" if max_extent is None else "total"
    if share_of == "positive":
        min_mass = min_share * float(np.maximum(hist.values, 0).sum())
    elif share_of == "total":
        # places are small against the whole: the share is of the noisy
        # total (unbiased), not of its positive part, which where most cells
        # are empty is mostly noise (Cabs at person level: 3.0 M against 0.2 M)
        min_mass = min_share * max(float(hist.values.sum()), 0.0)
    else:
        raise ValueError(f"share_of must be 'positive' or 'total', got {share_of!r}")
    if noise_sds is not None:
        min_mass = min(min_mass, noise_mass(hist, int(spec.subcells), noise_sds))
    cands = [float(a) for a in eps_candidates] if alpha is None else [float(alpha)]
    rows: list[tuple[float, float, int]] = []
    chosen, runner = cands[0], None
    if coarse is None:
        coarse = sweep(hist, replace(spec, subcells=1), cands, ms)
    on_cells = None if max_extent is None else (hist.grid, float(max_extent))
    if len(cands) > 1:
        rows = alpha_scores(coarse, d, min_mass=min_mass, method=method, extent=on_cells)
        chosen, runner = choose_alpha(rows)
    floor = None  # the MinPts where the peak share cut the ladder, if it did
    if peak_share is not None:
        jams = None if jam_share is None else jam_reach(hist, jam_share, per_unit)
        fleet = None if fleet_floor is None else jam_reach(hist, fleet_floor, per_unit)
        full, ms = ms, above_peak([coarse[(chosen, m)] for m in ms], peak_share, peak_rank, jams, fleet)
        floor = ms[0] if ms[0] > full[0] else None
    rungs = min_rungs if floor is not None else 1
    if not bottom:
        cells = level_tree(
            [coarse[(chosen, m)] for m in ms],
            chosen,
            d,
            min_mass=min_mass,
            method=method,
            extent=on_cells,
            min_rungs=rungs,
            born_at=floor,
        )
        born = [cells.clusters[i].birth for i in cells.selected]
        born += [cells.clusters[piece.cluster].birth for piece in cells.pieces]
        start = min(born, default=1) - 1
        ms = ms[max(start, 0) :]
    sub = hist.grid.subdivided(int(spec.subcells))
    if int(spec.subcells) == 1:
        # the final spans are on cells too: the cells' sweep holds them (the
        # same spans at every MinPts of the ladder; 8-D: its weighted sums,
        # half of the fit, are not computed twice)
        fine = coarse
    else:
        fine = sweep(hist, spec, [chosen], ms)
    tree = level_tree(
        [fine[(chosen, m)] for m in ms],
        chosen,
        d,
        scale=scale,
        min_mass=min_mass,
        method=method,
        extent=None if max_extent is None else (sub, float(max_extent)),
        min_rungs=rungs,
        born_at=floor,
    )
    if tree.pieces:
        tree = replace(tree, pieces=standalone_pieces(tree, hist, spec, sub))
    out = finish(tree, sub, rows, len(cands), runner)
    if own_share is not None:
        out = own_cells(out, hist, int(spec.subcells), own_share, own_sds)
    return out


def noise_mass(hist: NoisyHistogram, k: int, sds: float) -> float:
    """``sds`` standard deviations of one sub-cell's noisy mass, sigma_Z /
    k^d (a cell's noise shared by its k^d sub-cells, as a span's mass takes
    it, :func:`~.partition.sub_cell_mass`). Public: the release's noise law."""
    sigma = math.sqrt(noise_variance(hist.noise, hist.scale))
    return float(sds) * sigma / float(k**hist.grid.d)


def without_places(hist: NoisyHistogram, grid: Grid, keys: np.ndarray, k: int) -> NoisyHistogram:
    """``hist`` less the mass of the sub-cells ``keys`` (of ``grid``, ``k``
    per cell along an axis): each cell's noisy count times the share of its
    k^d sub-cells not among them (the sub-cells' share of a count, as
    :func:`~.partition.sub_cell_mass` takes it), rounded."""
    if keys.size == 0:
        return hist
    cells, per = np.unique(grid.decode(keys) // k, axis=0, return_counts=True)
    left = 1.0 - per / float(k**grid.d)
    if hist.kind == "dense":
        values = hist.values.copy()
        at = tuple(cells.T)
        values[at] = np.rint(values[at] * left).astype(values.dtype)
        return replace(hist, values=values)
    ck = hist.grid.encode(cells)
    idx = np.searchsorted(hist.released_keys, ck)
    idx = np.minimum(idx, max(hist.released_keys.size - 1, 0))
    hit = hist.released_keys[idx] == ck if hist.released_keys.size else np.zeros(ck.size, dtype=bool)
    values = hist.values.copy()
    values[idx[hit]] = np.rint(values[idx[hit]] * left[hit]).astype(values.dtype)
    return replace(hist, values=values)


def standalone_pieces(tree: LevelTree, hist: NoisyHistogram, spec: SpanSpec, grid: Grid) -> tuple:
    """The pieces of ``tree`` that are dense without the places beside
    them: a piece is kept when one of its sub-cells is still core at its
    cluster's birth level in the release less the mass of the selected
    clusters' spans (:func:`without_places`; the density test, the same
    margins). A piece's sub-cells are core through the mass within eps of
    them, and beside a busy place much of it is the place's: the fringe of
    a station is a ring of cells whose noise happened to be high enough
    (a synthetic day: 8 sub-cells of noisy counts 28 to 34, where one
    cell's noise has standard deviation 13.5, holding two stops). Pieces
    of a district of places, each holding its own units, stay. Post-processing:
    the release and public parameters."""
    k = int(spec.subcells)
    placed = [
        tree.levels[tree.clusters[i].birth].keys[
            tree.levels[tree.clusters[i].birth].labels == tree.clusters[i].spans[0]
        ]
        for i in tree.selected
    ]
    keys = np.unique(np.concatenate(placed)) if placed else np.zeros(0, dtype=np.int64)
    alone = without_places(hist, grid, keys, k)
    out = []
    cores: dict[int, np.ndarray] = {}
    for piece in tree.pieces:
        m = tree.levels[tree.clusters[piece.cluster].birth].min_samples
        if m not in cores:
            cores[m] = sweep(alone, spec, [tree.eps], [m])[(tree.eps, m)].keys
        if np.isin(piece.keys, cores[m], assume_unique=True).any():
            out.append(piece)
    return tuple(out)


def own_cells(sel: LevelSpans, hist: NoisyHistogram, k: int, share: float, sds: float) -> LevelSpans:
    """``sel`` with each span drawn over its own units only: a core sub-cell
    is left out when its cell's noisy count is under ``share`` of the
    busiest cell among its span's core sub-cells by more than ``sds``
    standard deviations of one cell's noise (count + sds sigma < share x
    peak). The sub-cells of the busiest cell always stay, so no span is
    lost; the spans are renumbered by smallest key (their levels with them).

    Why, for places: a sub-cell is core when the noisy estimate of its
    eps-ball reaches the threshold, and beside a busy place the ball holds
    the place: the road cells around a station that nearly the whole fleet
    passes and a few in a hundred of them stop in (synthetic weeks of
    5,000 and 10,000 taxis: 25-150 taxis stopping where the station's cell
    holds thousands) are core through the station's mass, and the span,
    drawn eps beyond its core, reaches the road. Their own counts are a
    few per cent of the station's; a place's own cells are not (full
    Cabs: the top-20 stop cells that are core hold 0.26-1 of their span's
    busiest, docs/places-study.md section 3). The model draws its border by the
    same rule (``border_cells="own"``, :func:`dpdbscan.model.record.own_border`).
    Every sub-cell left is core at its
    span's level, so each span still lies in the span of the density test
    there (its guarantee). Post-processing: the released counts and the
    public noise law."""
    if sel.core_keys.size == 0:
        return sel
    own = own_counts(hist, sel.grid, sel.core_keys, k)
    keep = own_keep(hist, own, span_peaks(own, sel.labels, sel.n_spans)[sel.labels], share, sds)
    if keep.all():
        return sel
    keys, old = sel.core_keys[keep], sel.labels[keep]
    # canonical numbering again: by smallest key (keys stay sorted)
    first = np.full(sel.n_spans, keys.size, dtype=np.int64)
    np.minimum.at(first, old, np.arange(keys.size))
    rank = np.empty(sel.n_spans, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(sel.n_spans)
    spans = sorted((replace(s, span=int(rank[s.span])) for s in sel.spans), key=lambda s: s.span)
    taken = tuple(sel.taken[i] for i in np.argsort(rank)) if sel.taken else ()
    left = sel.own_left_out + int(keep.size - keys.size)
    return replace(sel, core_keys=keys, labels=rank[old], spans=tuple(spans), taken=taken, own_left_out=left)


def own_counts(hist: NoisyHistogram, grid: Grid, keys: np.ndarray, k: int) -> np.ndarray:
    """The noisy count of the release cell of each sub-cell ``keys`` (of
    ``grid``, ``k`` per cell along an axis)."""
    return np.asarray(hist.value_at(hist.grid.encode(grid.decode(keys) // int(k))), dtype=np.float64)


def span_peaks(own: np.ndarray, labels: np.ndarray, n_spans: int) -> np.ndarray:
    """Per span, the largest of ``own`` (:func:`own_counts`) over its cells."""
    peak = np.full(int(n_spans), -np.inf)
    np.maximum.at(peak, labels, own)
    return peak


def own_keep(hist: NoisyHistogram, own: np.ndarray, peak: np.ndarray, share: float, sds: float) -> np.ndarray:
    """Which cells of noisy counts ``own`` a span of busiest cell ``peak``
    (per cell) draws (:func:`own_cells`): those not under ``share`` of the
    peak by more than ``sds`` standard deviations of one cell's noise, and
    the peak's own."""
    sigma = math.sqrt(noise_variance(hist.noise, hist.scale))
    return (own >= peak) | (own + float(sds) * sigma >= float(share) * peak)


def finish(
    tree: LevelTree,
    grid: Grid,
    rows: Sequence[tuple[float, float, int]],
    candidates: int,
    runner_up: float | None = None,
) -> LevelSpans:
    """The :class:`LevelSpans` of a tree's selection; ``rows`` are the
    candidate alphas' scores (:func:`alpha_scores`), ``candidates`` how many
    alphas the choice looked at."""
    keys, labels, spans = spans_of(tree)
    unsure = bool(tree.close) or runner_up is not None
    return LevelSpans(
        grid, keys, labels, tree.eps, tuple(spans), tree, tuple(rows), candidates, unsure, runner_up
    )


def alternative(
    sel: LevelSpans,
    hist: NoisyHistogram | None,
    spec: SpanSpec | None,
    eps_candidates: Sequence[float] = (),
    **kw: Any,
) -> LevelSpans | None:
    """The other answer of an unsure selection, for ``explore`` to show
    beside it: the runner-up alpha's selection (from ``hist`` and ``spec``),
    else the same tree with its close keep-or-split choices reversed; None
    when the choice was clear. ``kw`` as given to :func:`select_levels`."""
    if sel.runner_up is not None:
        if hist is None or spec is None:
            raise ValueError("the runner-up alpha's selection needs the release and its spec")
        other = select_levels(hist, spec, eps_candidates, alpha=sel.runner_up, **kw)
        return replace(other, alphas=sel.alphas, candidates=sel.candidates)
    if not sel.tree.close:
        return None
    t = sel.tree
    flipped, score, _ = select_clusters(t.clusters, kw.get("method", "eom"), flip=t.close, short=t.short)
    tree = replace(reselect(t, flipped, score), close=())
    if tree.pieces and hist is not None and spec is not None:
        # its pieces as the selection's own: dense without the places beside them
        tree = replace(tree, pieces=standalone_pieces(tree, hist, spec, sel.grid))
    out = finish(tree, sel.grid, sel.alphas, sel.candidates)
    if kw.get("own_share") is not None and hist is not None and spec is not None:
        # drawn over their own units, as the selection's own spans
        out = own_cells(out, hist, int(spec.subcells), kw["own_share"], kw.get("own_sds", 0.0))
    return out


def level_guarantee(
    grid: Grid,
    kind: str,
    noise: str,
    scale: float,
    theta: float,
    spec: SpanSpec,
    min_samples: int,
    candidates: int,
    rho: float,
) -> dict[str, Any]:
    """What a span taken at ``min_samples`` on the release (public fields:
    its ``grid`` at the span's alpha, ``kind``, ``noise``, noise ``scale``,
    ``theta``) is guaranteed to be, with ``spec``'s margins (beta: each
    candidate's share) and a union over ``candidates`` alphas.

    The density test's one-sided statement at that MinPts: the span lies in
    the span of one (rho alpha, M*)-cluster. Its accuracy event (and a
    truncating release's empty-space event) does not depend on MinPts, so
    one event covers every level of one alpha; the union bound runs over
    the alphas only. Returns ``min_samples``, ``m_star``, ``within_clusters_at``
    and ``probability`` (None when the statement is empty or the union
    leaves nothing).
    """
    _, extra = density_guarantee(grid, kind, noise, scale, theta, replace(spec, min_samples=int(min_samples)))
    m_star = extra["m_star"]
    within = relaxed(rho * grid.eps, m_star)
    probability = over_candidates(extra["probability"], candidates) if within is not None else None
    return {
        "min_samples": int(min_samples),
        "m_star": int(m_star),
        "within_clusters_at": within,
        "probability": probability,
    }


def record(sel: LevelSpans, digits: int = 6) -> dict[str, Any]:
    """The selection as the model records it (JSON-safe, public values only):
    each span's level, the candidates' scores, whether the choice was close
    and the condensed tree (for its plot)."""
    t = sel.tree
    ms = t.min_samples
    total = sum(s.stability for s in sel.spans) or 1.0

    def r(x: float) -> float:
        return float(f"{x:.{digits}g}")

    close = [
        {
            "min_samples": int(ms[t.clusters[i].birth]),
            "kept": i in t.selected,
            "children": len(t.clusters[i].children),
        }
        for i in t.close
    ]
    best = max((row[1] for row in sel.alphas), default=0.0)
    runner = None
    if sel.runner_up is not None:
        score = next(row[1] for row in sel.alphas if row[0] == sel.runner_up)
        runner = {"eps": float(sel.runner_up), "score_share": r(score / best) if best > 0 else 0.0}
    return {
        "levels": [
            {
                "span": s.span,
                "eps": float(s.eps),
                "min_samples": s.min_samples,
                "threshold": r(s.threshold),
                "last_min_samples": s.death_min_samples,
                "stability": r(s.stability),
                "stability_share": r(s.stability / total),
                "mass": r(s.mass),
                # a span of a larger alpha (.ownscale): absent from the others
                **({"taken": sel.taken[s.span]} if sel.taken and sel.taken[s.span] else {}),
            }
            for s in sel.spans
        ],
        "eps_scores": [[float(a), r(score), int(n)] for a, score, n in sel.alphas],
        "unsure": bool(sel.unsure),
        "runner_up": runner,
        "close": close,
        "tree": {
            "min_samples": [int(m) for m in ms],
            "lambda": [r(x) for x in t.scale],
            "clusters": [
                {"parent": c.parent, "birth": c.birth, "masses": [r(m) for m in c.masses]} for c in t.clusters
            ],
            "selected": [int(i) for i in t.selected],
        },
    }


__all__ = [
    "Cluster",
    "Piece",
    "LevelTree",
    "LevelSpans",
    "SpanLevel",
    "condensed_tree",
    "select_clusters",
    "level_tree",
    "level_scale",
    "select_levels",
    "ladder",
    "above_peak",
    "short_lived",
    "alpha_scores",
    "finish",
    "choose_alpha",
    "alternative",
    "spans_of",
    "span_extents",
    "directions",
    "cut_to_fit",
    "district_pieces",
    "standalone_pieces",
    "own_cells",
    "own_counts",
    "own_keep",
    "span_peaks",
    "without_places",
    "district_hosts",
    "reselect",
    "level_guarantee",
    "record",
    "CRITERION",
    "MIN_SHARE",
    "TOTAL_SHARE_MIN_D",
    "significance_of",
    "CLOSE",
    "near_ties",
    "runner_up",
]
