"""The automatic mode's plan, from public inputs only: the resolution of its
one release and the eps candidates it will choose among
(``eps="auto"`` / ``min_samples="auto"``; the choice itself is
post-processing of the release, :mod:`dpdbscan.post.auto`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ..cells.grid import Grid, count_neighbours
from ..params import sizing
from ..params.sizing import (
    ASSUMED_N,
    FINER_3D,
    FINER_3D_FROM,
    FINER_3D_UP_TO,
    LARGE_N,
    SMALL_N,
    joins_faces,
    sized_n,
)

#: eps candidates: the base resolution times sqrt(2)^i
EPS_STEPS = 7
#: eps candidates stop where an eps-neighbourhood would hold more cells than this
#: (public: d and eta); in 3-D that is eps <= 2.8 x the base
MAX_CANDIDATE_KAPPA = 2_000
#: ... and on the finer 3-D base (:func:`~dpdbscan.params.sizing.finer_n`)
#: where it holds more cells than this: one more candidate (five in 3-D at
#: eta = 4), so that up to a count of 50,000 the largest is still about
#: 2.8 x the count's base
FINER_CANDIDATE_KAPPA = 2_400
#: ... and on the finer 3-D base below a count of LARGE_N
#: (:func:`~dpdbscan.params.sizing.joins_faces`): three candidates, to 1.4 x
#: the base for ASSUMED_N, so that the fit costs no more than on that base
#: (the density field's sums grow as cells x cells per neighbourhood)
SMALL_FINER_CANDIDATE_KAPPA = 500
#: The base release has about n epsilon / POINTS_PER_CELL cells (capped by
#: max_cells): re-measuring it at eps = f x base sums ~ f^d cells of noise per
#: neighbourhood, so the signal-to-noise ratio of a candidate depends on the
#: points per cell times epsilon. n is the user's public guess n_expected, or
#: ASSUMED_N (the size at which DP clustering at epsilon ~ 1 makes sense).
POINTS_PER_CELL = 0.3
MIN_BASE_CELLS = 1 << 10
#: Without a guess of n, an event-level automatic fit spends this share of
#: its budget (of epsilon, or of rho with Gaussian noise) on a DP count of
#: the points (:class:`dpdbscan.params.specs.SizeEstimate`), and sizes its
#: base from that count (:func:`~dpdbscan.params.sizing.sized_n`: in 1-D
#: and 2-D for the count below SMALL_N, in 3-D and up above LARGE_N, else
#: for ASSUMED_N). At epsilon = 1 the count's noise has a standard deviation
#: of about 140 points (discrete Laplace at 0.01), and the histogram's grows
#: by 1%.
COUNT_SHARE = 0.01
#: A second, finer release where the first is dense (issue 28 item 3; the
#: strands2 study, results/scenes/strands2-tune.md; docs/privacy.md section
#: 4.10): in 3-D, where the automatic mode's DP count of the points is at
#: least SECOND_MIN_COUNT, release one (the count and the histogram) spends
#: 1 - SECOND_SHARE of epsilon and release two, the counts of finer cells
#: inside release one's dense span cells (:mod:`dpdbscan.post.sidebyside`),
#: the rest. Public: d, the DP count, the noise's family (Laplace).
SECOND_SHARE = 0.1
SECOND_MIN_COUNT = 20_000
SECOND_DIMS = 3
#: Below SECOND_MIN_COUNT, from a 3-D DP count of SMALL_SECOND_FROM, release
#: two spends SMALL_SECOND_SHARE of epsilon on cells of SMALL_SECOND_FINE^3
#: fine cells (the strands-share study, results/scenes/strands-share.md: at
#: 0.1 epsilon its fine counts sat under the keep threshold there; held out
#: on 92,600-93,199). Public: d, the DP count, constants.
SMALL_SECOND_FROM = 6_000
SMALL_SECOND_SHARE = 0.15
SMALL_SECOND_FINE = 2
#: Release two's rule (kept by the strands2 study): f (SECOND_FINE), then the selection's,
#: the keep threshold's, the side-by-side cover's and the significance's
#: constants (:class:`dpdbscan.params.specs.SecondRelease`).
SECOND_FINE = 3
SECOND_RULE = {
    "select_sds": 3.0,
    "keep_sds": 2.0,
    "keep_top": 0.1,
    "cover": 0.5,
    "mass_share": 0.1,
    "mass_sds": 3.0,
}
#: In geographic mode (lon/lat projected to km) the automatic mode looks for
#: places: a selected span reaches at most this far across (km), as
#: ``predict`` draws it. A place (a station, a hotel's entrance, a terminal,
#: a square) is tens of metres to about a kilometre: a public prior about
#: cities, not a fact read from the data. Without it the level selection
#: takes the most massive long-lived level set, "the city".
PLACE_EXTENT_KM = 1.0
#: The most cells a person-level search for places may release at the place
#: radius (:func:`place_radius`; or ``max_cells`` if larger): the dense
#: histogram's largest universe, as a fit at a fixed eps may use. A box as
#: wide as a whole region (190 km at 121 m cells: 2.6 million) keeps the
#: place radius; under the default ``max_cells`` (2^20) its base grew to
#: 270 m, whose spans cannot be places (a synthetic week of 2,000 taxis'
#: stops: 146 spans and 0.28 of the passage cells in them, against 18 and
#: 0.04 at the place radius). Public: d, eta, the box.
PLACE_MAX_CELLS = 1 << 23
#: A person-level search for places keeps the levels whose core threshold is
#: at least this share of the release's peak (the threshold of its
#: :data:`PLACE_PEAK_RANK`-th densest place;
#: :func:`dpdbscan.post.levelsearch.above_peak`): "a place many units go"
#: is relative to the fleet and the horizon, which the release alone does
#: not state. A public prior, like :data:`PLACE_EXTENT_KM`; it leaves out
#: only levels above the noise margin where that peak is 12 times the
#: margin or more (on full Cabs and fleets of hundreds it leaves out none).
#: Synthetic weeks of 5,000 and 10,000 taxis' stops (a fix every 1-10 min
#: or every 3 min): the jams on busy roads (hundreds of distinct taxis
#: within 172 m) are spans that hold 0.3-0.4 of the passage cells when
#: every level is kept (docs/places-study.md section 2).
PLACE_PEAK_SHARE = 0.08
#: Whose peak :data:`PLACE_PEAK_SHARE` is a share of: the second densest
#: place's, not the densest's, which one airport or main station can put
#: several times above every other place (10,000 taxis: the densest place
#: peaked at 41,016 on one seed and 20,541 on the next, the second at
#: 14,538 and 14,543).
PLACE_PEAK_RANK = 2
#: Where :data:`PLACE_PEAK_SHARE` leaves levels out, a cluster born at the
#: tree's first level (the floor) whose tree lives fewer than this many
#: levels of the MinPts ladder (a factor sqrt 2 a level: it is gone before
#: twice the floor's MinPts) is not selected
#: (:func:`dpdbscan.post.levelsearch.short_lived`): a place is a peak that
#: stands out over several levels, a busy road's jams a ridge the floor cuts
#: into level sets that vanish within a level or two. It makes the share's
#: window a level wider on the low side, where the jams come in (synthetic
#: weeks of 5,000 and 10,000 taxis' stops, docs/places-study.md section 3). 1: no
#: limit. A ratio of MinPts: the same at any fleet size and horizon.
PLACE_MIN_RUNGS = 3
#: The place floor (:data:`PLACE_PEAK_SHARE`) binds only where this share
#: of the fleet the release shows (its noisy total over k m, about the
#: number of units when k is chosen privately;
#: :func:`dpdbscan.post.levelsearch.jam_reach`) reaches the lowest level's
#: threshold: the floor is there for a large fleet's jams, the few in a
#: hundred of the units passing a busy road who stop there, and those are a
#: share of the fleet (the jams that came in under the floor: 5-7% of
#: 5,000 and 10,000 synthetic taxis within eps). Where the second place
#: stands far above the noise margin but the fleet is small (2,000
#: synthetic taxis' pick-ups at a fix every 10 s to 1 min: 13-16 times the
#: margin), the floor and the life rule cut real places and no jam (17
#: spans to 6, 34 to 11; docs/places-study.md section 3). A prior, like
#: :data:`PLACE_PEAK_SHARE`; None: the floor wherever it is above the margin.
PLACE_JAM_SHARE: float | None = 0.1
#: A person-level search for places draws each span over its own units
#: (:func:`dpdbscan.post.levelsearch.own_cells`): a core sub-cell whose
#: cell's noisy count is under this share of the busiest cell of its span,
#: by more than :data:`PLACE_OWN_SDS` standard deviations of one cell's
#: noise, is left out. Beside a busy place the road cells are core because
#: their eps-ball holds the place, not their own units: synthetic weeks of
#: 5,000 and 10,000 taxis' stops, road cells that 3,500-9,400 taxis pass and
#: 25-150 stop in, 1-8% of the station's cell (docs/places-study.md section 3).
#: A place's own cells that are core hold 26-100% of their span's busiest
#: (full Cabs' top-20 stop cells). A public prior, like
#: :data:`PLACE_PEAK_SHARE`; None: every core sub-cell.
PLACE_OWN_SHARE: float | None = 0.2
#: How far (in standard deviations of one cell's noise) a cell's count must
#: lie under :data:`PLACE_OWN_SHARE` of its span's busiest before it is left
#: out: where the busiest cell is not far above the noise (fleets of
#: hundreds, full Cabs) nothing is.
PLACE_OWN_SDS = 3.0
#: With :data:`PLACE_OWN_SHARE`, a border cell within this many release
#: cell widths of a core sub-cell's centre that stays is drawn whatever its
#: count: a place's units may lie anywhere in its cells, and a cell's edge
#: is no edge of the place (a synthetic week of 2,000 taxis: two of the
#: top-20 stop cells lay in cells of 46 and 78 taxis beside one of 1,866,
#: their stops across the cells' edge; docs/places-study.md section 3).
PLACE_OWN_NEAR = 0.5


@dataclass(frozen=True)
class Plan:
    """The automatic mode's public choices: the base release's eps and the
    candidates for eps (MinPts candidates depend on the release's total mass,
    a post-processing quantity: :func:`min_samples_ladder`).

    Attributes
    ----------
    base_eps : float
        The eps of the one release (eta as given).
    eps : tuple of float
        Candidate eps (just the given one when eps is fixed).
    min_samples : int or None
        The fixed MinPts, or None to choose it.
    """

    base_eps: float
    eps: tuple
    min_samples: int | None


def base_cells(epsilon: float, n_expected: float | None, max_cells: int) -> int:
    """How many cells the base release may have: n epsilon / POINTS_PER_CELL
    (n = ``n_expected`` or ASSUMED_N), between MIN_BASE_CELLS and
    ``max_cells``. Public inputs only."""
    n = ASSUMED_N if n_expected is None else float(n_expected)
    target = n * float(epsilon) / POINTS_PER_CELL
    return int(max(MIN_BASE_CELLS, min(float(max_cells), target)))


def counts_points(eps: float | str, n_expected: float | None, units: bool, places: float | None) -> bool:
    """Whether the plan sizes its base from a DP count of the points: eps
    "auto" without the user's guess ``n_expected``, at event level (a
    person-level count would need a bound on each unit's rows) and outside
    geographic mode (whose place prior was designed on the base for
    ASSUMED_N), in any dimension (:func:`sized_n` says how the count is
    used there). Public inputs only."""
    return eps == "auto" and n_expected is None and not units and places is None


def base_eps(lower: ArrayLike, upper: ArrayLike, eta: float, cells: int) -> float:
    """The smallest eps (at this eta) whose grid over the public box has at
    most ``cells`` cells, to 1%."""
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    d = lower.size
    # n_cells ~ prod(L_i / w) with w = eta eps / (4 sqrt d): start just below
    w = (float(np.prod(upper - lower)) / cells) ** (1.0 / d)
    eps = 4.0 * math.sqrt(d) * w / eta * 0.9
    while Grid(lower, upper, eps, eta).n_cells > cells:
        eps *= 1.01
    return float(eps)


def place_extent(metadata: dict | None) -> float | None:
    """The largest extent of a selected span in the automatic mode: the
    place prior :data:`PLACE_EXTENT_KM` for a model whose coordinates are a
    projection to km (``fit_lonlat``, ``dpdbscan fit --geo``; public
    metadata), else None (no prior: the units of other data mean nothing
    to the library)."""
    proj = (metadata or {}).get("projection")
    if isinstance(proj, dict) and proj.get("units", "km") == "km":
        return PLACE_EXTENT_KM
    return None


def place_radius(extent: float, d: int, eta: float) -> float:
    """The largest eps at which a place as small as a point is drawn within
    ``extent``, even counted by its bounding box: its core sub-cells are
    those within eps of its cell (a box eps + w + eps wide, w = eta eps /
    (4 sqrt d) the cell's width, so a diagonal of sqrt(d) (2 eps + w)) and
    ``predict`` adds eps on either side. Its widest extent
    (:func:`dpdbscan.post.levelsearch.span_extents`) is less, about the
    cell's diagonal plus 4 eps (5 eps at eta = 4): a place at one point
    fits with room to spare. Public: the prior, d and eta."""
    return float(extent) / (2.0 * math.sqrt(d) + eta / 4.0 + 2.0)


def place_candidates(eps: tuple, extent: float | None, d: int = 2, eta: float = 4.0) -> tuple:
    """The eps candidates that can draw a place within ``extent``: from the
    smallest candidate (the release's own eps) to :func:`place_radius` in
    quarter-octave steps (at most as many candidates as ``eps``, none above
    its largest). Above that radius even a place at a single point is wider
    than the prior while it is whole: its core is the disc eps around it,
    so such a candidate scores only the peaks of its places (Cabs and a
    synthetic city: 0 at 2 and 2.8 times the base). The range that remains
    is narrow, hence the finer steps. Only the smallest when none fits; all
    of ``eps`` without a place prior."""
    if extent is None:
        return tuple(eps)
    base = float(eps[0])
    top = min(float(max(eps)), place_radius(extent, d, eta))
    if top <= base:
        return (eps[0],)
    n = min(len(eps), 1 + int(math.floor(4.0 * math.log2(top / base) + 1e-9)))
    return tuple(base * 2 ** (i / 4) for i in range(n))


def candidate_kappa(estimate: float | None, d: int) -> int:
    """The eps ladder's cap on a neighbourhood's cells for the automatic
    mode's DP count ``estimate`` in ``d`` dimensions: on the finer 3-D
    base :data:`FINER_CANDIDATE_KAPPA`, or :data:`SMALL_FINER_CANDIDATE_KAPPA`
    where it stands for a count of at most LARGE_N
    (:func:`~dpdbscan.params.sizing.joins_faces`); else
    :data:`MAX_CANDIDATE_KAPPA`. Public: d and the count."""
    if joins_faces(estimate, d):
        return SMALL_FINER_CANDIDATE_KAPPA
    return MAX_CANDIDATE_KAPPA if sizing.finer_n(estimate, d) is None else FINER_CANDIDATE_KAPPA


def plan(
    lower: ArrayLike,
    upper: ArrayLike,
    eta: float,
    eps: float | Literal["auto"],
    min_samples: int | Literal["auto"],
    epsilon: float,
    max_cells: int,
    n_expected: float | None,
    *,
    places: float | None = None,
    units: bool = False,
    kappa: int = MAX_CANDIDATE_KAPPA,
) -> Plan:
    """The public plan of an automatic fit (``eps`` and/or ``min_samples``
    "auto"): the base eps from the box, epsilon, the cap and the user's
    guess ``n_expected`` (:func:`base_cells`), and the eps candidates.

    ``places``: the place prior's extent (:func:`place_extent`) when the
    automatic mode looks for places. A person-level release (``units``)
    then has its base at :func:`place_radius` (no finer than
    :data:`PLACE_MAX_CELLS` or ``max_cells``, the larger, allows), whatever
    ``n_expected``: its counts are distinct units per
    cell, each unit adding to at most k cells, so every cell's noise is that
    of k (not of the rows' number), and a neighbourhood sums the noise of
    as many cells at any eps (eta fixed). A place's units in an eps-ball
    grow with eps, so the largest eps that still draws a place at one point
    within the prior sees the most places over the noise (full Cabs, each
    cab protected: the three busy stop cells that are never core at 163 m,
    the points-per-cell base, are at 182 m; docs/parameters.md section 6).
    That one candidate is left (:func:`place_candidates`).

    ``kappa``: the eps candidates stop where a neighbourhood holds more
    cells than this (:data:`FINER_CANDIDATE_KAPPA` on the finer 3-D base)."""
    if eps == "auto":
        b = base_eps(lower, upper, eta, base_cells(epsilon, n_expected, max_cells))
        d = np.asarray(lower).size
        if places is not None and units:
            cap = max(int(max_cells), PLACE_MAX_CELLS)
            b = max(place_radius(places, d, eta), base_eps(lower, upper, eta, cap))
        cands = tuple(
            b * 2 ** (i / 2)
            for i in range(EPS_STEPS)
            if i == 0 or count_neighbours(d, eta / 2 ** (i / 2)) <= kappa
        )
    else:
        b = float(eps)
        cands = (b,)
    return Plan(b, cands, None if min_samples == "auto" else int(min_samples))


#: Release two at person level (docs/privacy.md 4.10): off until a study of
#: person-level scenes shows it helps (``dpdbscan.research.person_second``
#: turns it on for that study).
SECOND_UNITS = False
#: Its share of the release's rho and its f (the study's candidates).
SECOND_UNITS_SHARE = SECOND_SHARE
SECOND_UNITS_FINE = SECOND_FINE


def second_applies_units(d: int, noise: str, eps: float | str) -> bool:
    """Whether a person-level automatic fit makes release two: in ``d`` = 3,
    with Gaussian noise, eps chosen by the automatic mode, and
    :data:`SECOND_UNITS` on. Public: d, the noise, the parameters."""
    return SECOND_UNITS and d == SECOND_DIMS and noise == "gaussian" and eps == "auto"


def second_applies(d: int, count: float | None, noise: str) -> bool:
    """Whether the automatic mode makes release two (:func:`second_share`):
    in ``d`` = 3, Laplace noise (discrete or continuous), a DP count of at
    least :data:`SMALL_SECOND_FROM`. Public: d, the noise, the DP count."""
    return (
        d == SECOND_DIMS
        and noise in ("discrete", "laplace")
        and count is not None
        and count >= SMALL_SECOND_FROM
    )


def second_share(count: float) -> float:
    """Release two's share of epsilon at a DP count ``count``:
    :data:`SECOND_SHARE` from :data:`SECOND_MIN_COUNT`, else
    :data:`SMALL_SECOND_SHARE`. Public: the DP count."""
    return SECOND_SHARE if count >= SECOND_MIN_COUNT else SMALL_SECOND_SHARE


def second_fine(count: float) -> int:
    """Release two's f at a DP count ``count``: :data:`SECOND_FINE` from
    :data:`SECOND_MIN_COUNT`, else :data:`SMALL_SECOND_FINE`."""
    return SECOND_FINE if count >= SECOND_MIN_COUNT else SMALL_SECOND_FINE


__all__ = [
    "Plan",
    "plan",
    "base_cells",
    "base_eps",
    "place_extent",
    "place_candidates",
    "place_radius",
    "ASSUMED_N",
    "COUNT_SHARE",
    "SECOND_SHARE",
    "SECOND_MIN_COUNT",
    "SECOND_DIMS",
    "SECOND_RULE",
    "SECOND_FINE",
    "SMALL_SECOND_FROM",
    "SMALL_SECOND_SHARE",
    "SMALL_SECOND_FINE",
    "second_applies",
    "second_share",
    "second_fine",
    "second_applies_units",
    "SECOND_UNITS",
    "SECOND_UNITS_SHARE",
    "SECOND_UNITS_FINE",
    "SMALL_N",
    "LARGE_N",
    "counts_points",
    "sized_n",
    "joins_faces",
    "candidate_kappa",
    "SMALL_FINER_CANDIDATE_KAPPA",
    "FINER_3D",
    "FINER_3D_UP_TO",
    "FINER_3D_FROM",
    "FINER_CANDIDATE_KAPPA",
    "PLACE_EXTENT_KM",
    "PLACE_MAX_CELLS",
    "PLACE_PEAK_SHARE",
    "PLACE_PEAK_RANK",
    "PLACE_MIN_RUNGS",
    "PLACE_JAM_SHARE",
    "PLACE_OWN_SHARE",
    "PLACE_OWN_SDS",
    "PLACE_OWN_NEAR",
]
