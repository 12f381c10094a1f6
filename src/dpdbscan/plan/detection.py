"""What a person-level release can detect, from public inputs only.

With privacy units each unit adds to at most k cells, at most m to each, so a
cell's bounded count is at most m times the number of units seen there, and
the noise of one cell (its standard deviation grows as sqrt(k) m for the
Gaussian) is the same at every eps. The core test sums the noisy counts of an
eps-ball with weights and thresholds the sum
(:class:`~dpdbscan.post.coretests.Statistic`); from that and the exact law of
the noise this module derives, for a release at one eps, two counts that make
a sub-cell core with probability >= 1 - beta:

* the **spot** count: the bounded count in one cell that makes a sub-cell of
  it core, whatever else lies around it; in units, ceil(spot / m) units seen
  in one cell. Compared with N, the user's public guess of the number of
  units, it says whether one place can be a span at all;
* the **per-cell** count: what every cell of an eps-ball must hold for a
  sub-cell at its centre to be core (a cluster that fills the ball). As a
  share of N it says what share of all units each cell must keep *after
  bounding*. A unit that visits c > k cells keeps each with probability
  k / c, so a cluster that every unit visits is found only where units visit
  at most k / share cells: that many cells, times a cell's volume, is the
  area a unit may roam and still be seen. The cells grow with eps and so
  does that area: this is why person-level clusters need a coarser eps,
  while the counts themselves barely change with eps (an eps-ball spans the
  same cells at a fixed eta, and the noise is per cell).

Why the counts hold. Let the planted cells hold x each (bounded counts) and
q be a sub-cell at position i of its cell Y0; its sum weighs them c_i
(W_i(Y0) for the spot, S_i = sum_Y W_i(Y) for the filled ball). Dense
release, or a truncating one with theta <= 0, where every released value has
R_Y - x_Y >= Z_Y: the sum is at least c_i x + N_i with N_i = sum_Y W_i(Y)
Z_Y (more points elsewhere only add), so x >= (T_i + g) / c_i with
P(N_i >= g) <= beta' (:func:`weighted_quantile`: exact up to conservative
binning; the noise is symmetric) reaches the threshold T_i with probability
>= 1 - beta'. Truncating release with theta > 0: every released value is
>= 0, so the spot's sum is at least W_i(Y0) R_0 and one noise term decides;
a filled ball needs each of its n cells released, x + Z >= theta, and then
its sum is c_i x + N_i. The density test also needs q's cell to read as
occupied (above c sigma, or, for the filled ball, at least gamma times the
ball's mean: a weighted sum of the same noises). Beta is split between the
sum and these side conditions (:data:`SPLITS`, a union bound for each
split; the smallest count is kept).

Every number here reads the public grid, the noise law, the histogram's
kind and theta, MinPts, beta, k, m and N, never data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

from ..laws import noise as laws
from ..params.specs import ReleaseSpec, SpanSpec
from ..post.coretests import Statistic, core_test
from ..post.coretests.density import weighted_quantile

#: The shares of beta tried for the side conditions of a detection (the
#: density test's occupancy, a truncating release's theta); the sum's
#: threshold takes the rest, and the smallest count over the splits is kept.
SPLITS = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99)

NOISE_WORDS = {"gaussian": "discrete Gaussian", "discrete": "discrete Laplace", "laplace": "Laplace"}


@dataclass(frozen=True)
class Detection:
    """What a person-level release at one eps can detect.

    Attributes
    ----------
    eps, cell_width : float
        The release's eps and the width of its cells.
    n_cells : int
        |X|, the cells of the public box.
    histogram : str
        The histogram the mechanism would choose (public inputs only).
    threshold : float
        The largest threshold of the core test's sum (as
        :attr:`Forecast.threshold`).
    spot : float
        The smallest bounded count in one cell that makes a sub-cell of it
        core with probability >= 1 - beta (module docstring).
    spot_units : int
        ceil(spot / m): units seen in that one cell.
    ball_cells : float
        S(q), the cells an eps-ball weighs (the weights' sum).
    per_cell : float
        The bounded count every cell within eps of a cell must hold for a
        sub-cell of it to be core with probability >= 1 - beta (a cluster
        that fills the eps-ball).
    per_cell_units : int
        ceil(per_cell / m): units seen in each of those cells.
    share : float or None
        per_cell_units / N: the share of all units each cell must keep after
        bounding (None without N).
    max_unit_cells : float or None
        k / share: the most cells a unit may visit so that a cell every unit
        visits still keeps per_cell_units of them in expectation (None
        without N, or when share > 1: nothing is detectable).
    max_unit_volume : float or None
        max_unit_cells x cell_width^d (an area in 2-D).
    """

    eps: float
    cell_width: float
    n_cells: int
    histogram: str
    threshold: float
    spot: float
    spot_units: int
    ball_cells: float
    per_cell: float
    per_cell_units: int
    share: float | None
    max_unit_cells: float | None
    max_unit_volume: float | None


def detection(release: ReleaseSpec, spans: SpanSpec, n_units: float | None) -> Detection:
    """The :class:`Detection` of ``release`` (person-level) and its ``spans``;
    ``n_units``: the user's public guess of the number of units (or None)."""
    if release.units is None:
        raise ValueError("detection in units needs a person-level release (max_cells_per_unit)")
    grid, noise = release.grid, release.noise
    st = core_test(spans.core).statistic(
        grid, release.histogram, noise.kind, noise.scale, release.theta, spans
    )
    beta = float(spans.beta)
    truncating = release.histogram != "dense" and release.theta > 0
    if release.histogram == "stability" and not truncating:
        raise ValueError(f"a stability release has a positive threshold, got theta={release.theta:g}")
    law = (noise.kind, float(noise.scale))
    if truncating:
        spot = _spot_truncated(st, law, beta, release.theta)
        # each cell of the ball must be released: x + Z_Y >= theta for each of its terms
        floor = (release.theta, max(len(w) for w in st.weights))
        per_cell = _count(st, st.sums, law, beta, floor, filled=True)
    else:
        spot = _count(st, st.own, law, beta, None, filled=False)
        per_cell = _count(st, st.sums, law, beta, None, filled=True)
    bound = release.units
    k, m = bound.max_cells_per_unit, bound.max_points_per_cell
    per_unit = math.ceil(per_cell / m)
    share = most = volume = None
    if n_units is not None:
        share = per_unit / float(n_units)
        if share <= 1:
            most = k / share
            volume = most * grid.width**grid.d
    return Detection(
        eps=float(grid.eps),
        cell_width=float(grid.width),
        n_cells=int(grid.n_cells),
        histogram=release.histogram,
        threshold=max(st.thresholds),
        spot=spot,
        spot_units=math.ceil(spot / m),
        ball_cells=max(st.sums),
        per_cell=per_cell,
        per_cell_units=per_unit,
        share=share,
        max_unit_cells=most,
        max_unit_volume=volume,
    )


#: A noise law: its kind and scale (:mod:`dpdbscan.laws.noise`).
Law = tuple[str, float]


def _quantile(law: Law, weights: tuple, level: float) -> float:
    """g with P(sum W Z >= g) <= level (so P(sum W Z <= -g) <= level: the
    noise is symmetric)."""
    return weighted_quantile(law[0], law[1], tuple(weights), float(level))


def _clears(st: Statistic, coef: tuple, law: Law, level: float) -> float:
    """The smallest x with P(coef_i x + N_i < T_i) <= level at the best position i."""
    return min((t + _quantile(law, w, level)) / c for w, c, t in zip(st.weights, coef, st.thresholds))


def _count(
    st: Statistic, coef: tuple, law: Law, beta: float, floor: tuple[float, int] | None, *, filled: bool
) -> float:
    """The smallest count x per planted cell, each weighing ``coef[i]`` in
    the sum at position i, that makes a sub-cell core with probability
    >= 1 - beta: the sum reaches its threshold, the own cell reads as
    occupied, and with ``floor`` = (theta, n) each of the sum's n cells is
    released (x + Z >= theta). Dense law of the sum's noise given that
    (module docstring). ``filled``: every cell of the sum holds x (else only
    the own cell is known, and only the occupancy's first branch counts).
    Beta is split between the sum and the side conditions in each of
    :data:`SPLITS` and the smallest count kept: each split is a valid union
    bound."""
    sides = (st.occupancy is not None) + (floor is not None)
    if not sides:
        return _clears(st, coef, law, beta)
    best = math.inf
    for f in SPLITS:
        side = beta * f / sides
        for i, (w, c, t) in enumerate(zip(st.weights, coef, st.thresholds)):
            x = (t + _quantile(law, w, beta * (1 - f))) / c
            if floor is not None:
                x = max(x, floor[0] + _quantile(law, (1.0,), side / floor[1]))
            if st.occupancy is not None:
                x = max(x, _occupied(st, i, law, side, filled))
            best = min(best, x)
    return best


def _occupied(st: Statistic, i: int, law: Law, level: float, filled: bool) -> float:
    """The smallest x with P(the own cell fails the occupancy condition at
    position i) <= level: what branch one needs, or with ``filled`` the
    smaller of what either branch needs.

    Branch one: x + Z_0 > c. Branch two, every cell of the ball holding x:
    x + Z_0 >= gamma (S x + N) / S, i.e. V = Z_0 - gamma N / S >=
    -(1 - gamma) x, where V is a weighted sum of the independent noises with
    weights 1 - gamma W_0 / S (own cell) and -gamma W_Y / S; the noise is
    symmetric, so V's law is that of the same sum with the weights'
    absolute values."""
    assert st.occupancy is not None
    cut, gamma = st.occupancy
    first = cut + _quantile(law, (1.0,), level)
    if not filled or gamma >= 1:
        return first
    s, own = st.sums[i], st.own[i]
    rest = list(st.weights[i])
    rest.remove(own)
    a = sorted([1 - gamma * own / s] + [gamma * v / s for v in rest])
    return min(first, _quantile(law, tuple(a), level) / (1 - gamma))


def _spot_truncated(st: Statistic, law: Law, beta: float, theta: float) -> float:
    """The spot count of a release that reads every cell >= 0 (theta > 0):
    the own cell alone must read x + Z_0 >= max(T_i / W_i(Y0), theta) and
    above the occupancy cut, one noise term's 1 - beta quantile."""
    need = min(max(t / own, theta) for t, own in zip(st.thresholds, st.own))
    if st.occupancy is not None:
        need = max(need, st.occupancy[0])
    return need + _quantile(law, (1.0,), beta)


@dataclass(frozen=True)
class UnitForecast:
    """What a person-level release can detect, at its eps and over a ladder
    of eps values (public inputs only).

    Attributes
    ----------
    max_cells_per_unit, max_points_per_cell : int
        The contribution bound k and m.
    noise : str
        The noise's kind.
    cell_sigma : float
        The standard deviation of one cell's noise.
    epsilon, delta, beta : float
    rho : float or None
        Gaussian noise: the zCDP rho.
    n_units : float or None
        The user's public guess of the number of units.
    at : Detection
        At the release's own eps.
    ladder : tuple of Detection
        At each eps of the ladder (the release's own among them).
    """

    max_cells_per_unit: int
    max_points_per_cell: int
    noise: str
    cell_sigma: float
    epsilon: float
    delta: float
    beta: float
    rho: float | None
    n_units: float | None
    at: Detection
    ladder: tuple[Detection, ...]

    def sentence(
        self,
        length: Callable[[float], str] = "{:.4g}".format,
        volume: Callable[[float], str] = "{:.3g}".format,
    ) -> str:
        """What the release can detect, in plain words; ``length`` and
        ``volume`` format a length and a cell volume (km and km² for
        geographic boxes)."""
        k, m, d = self.max_cells_per_unit, self.max_points_per_cell, self.at
        conf = f"{1 - self.beta:.3g}"
        out = (
            f"Person-level: each unit adds to at most {k:,} cell{_s(k)} and {m} point{_s(m)} per "
            f"cell; each cell's count gets {NOISE_WORDS.get(self.noise, self.noise)} noise with "
            f"standard deviation {self.cell_sigma:.3g}. At eps {length(d.eps)} (cells of "
            f"{length(d.cell_width)}) a place is core with probability >= {conf} once "
            f"{d.spot_units:,} units are seen in its cell"
        )
        n = self.n_units
        if n is not None and d.spot_units > n:
            out += f", more than the {n:,.0f} units expected: no place that lies in one cell can be a span"
        out += (
            f". A cell inside a cluster is core with the same probability once every cell within "
            f"eps of it keeps {d.per_cell_units:,} units after bounding"
        )
        if n is None or d.share is None:
            return out + ". Give the number of units you expect (a public guess) to compare these with it."
        out += f" ({_percent(d.share)} of the {n:,.0f})"
        if d.max_unit_cells is None:
            return out + (
                ": more than the units expected, so nothing is detectable at this epsilon, at this "
                "eps or any other (the noise is per cell and an eps-ball spans about the same cells "
                "at every eps). Use a larger epsilon."
            )
        if d.max_unit_cells >= d.n_cells:
            return out + ", however many of the box's cells units visit."
        return (
            out + f". A unit that visits more than {k:,} cells keeps {k:,} of them (counted here as "
            "if at random, --cell-choice uniform; the default keeps its busiest, which favours the places "
            f"it returns to), so this holds only where units visit at most {d.max_unit_cells:,.0f} cells of "
            f"{length(d.cell_width)} ({volume(d.max_unit_volume or math.inf)})."
            + self._ladder_words(length, volume)
        )

    def _ladder_words(self, length, volume) -> str:
        rows = [r for r in self.ladder if r.max_unit_volume is not None]
        if len(rows) < 2:
            return ""
        steps = "; ".join(f"{length(r.eps)}: {volume(r.max_unit_volume)}" for r in rows)
        return (
            f" That area grows with eps ({steps}): units that roam more need a coarser eps, a "
            "larger epsilon, or a larger k (while units visit more than k cells, the area grows "
            "about as the square root of k)."
        )

    def lines(
        self,
        length: Callable[[float], str] = "{:.4g}".format,
        volume: Callable[[float], str] = "{:.3g}".format,
    ) -> list[str]:
        """The ladder as a table and the sentence (what ``dpdbscan forecast``
        prints for a person-level release)."""
        rho = "" if self.rho is None else f", rho={self.rho:.4g} zCDP"
        out = [
            f"per unit  : k={self.max_cells_per_unit:,} cells per unit, m={self.max_points_per_cell} "
            f"per cell; noise std {self.cell_sigma:.4g} per cell{rho}"
            + ("" if self.n_units is None else f"; {self.n_units:,.0f} units expected"),
            f"{'eps':>9}  {'cell':>9}  {'units in one cell':>17}  {'units per cell':>14}  "
            f"{'share':>6}  {'cells per unit':>14}  {'area':>10}",
        ]
        for r in self.ladder:
            share = "-" if r.share is None else _percent(r.share)
            cells = "-" if r.max_unit_cells is None else f"{r.max_unit_cells:,.0f}"
            area = "-" if r.max_unit_volume is None else volume(r.max_unit_volume)
            mark = "*" if r.eps == self.at.eps else " "
            out.append(
                f"{length(r.eps):>8}{mark}  {length(r.cell_width):>9}  {r.spot_units:>17,}  "
                f"{r.per_cell_units:>14,.0f}  {share:>6}  {cells:>14}  {area:>10}"
            )
        out.append(
            "  (units in one cell: detected there with probability >= "
            f"{1 - self.beta:.3g}; units per cell: in every cell within eps of a cell, after "
            "bounding, for it to be core with that probability; share: of the units expected; "
            "cells per unit: the most a unit may visit and a cell every unit visits still keep "
            "that many; * the release's eps)"
        )
        return out + [self.sentence(length, volume)]

    def to_dict(self) -> dict:
        out = asdict(self)
        out["sentence"] = self.sentence()
        return out


def _percent(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 else f"{100 * x:.2g}%"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def unit_forecast(
    releases: list[tuple[ReleaseSpec, SpanSpec]], at: int, n_units: float | None
) -> UnitForecast:
    """The :class:`UnitForecast` of person-level ``releases`` (one per eps of
    the ladder, as :func:`dpdbscan.plan.resolve.resolve` makes them), the
    ``at``-th being the release's own."""
    rows = tuple(detection(r, s, n_units) for r, s in releases)
    release, spans = releases[at]
    noise, bound = release.noise, release.units
    assert bound is not None  # detection() refused an event-level release
    return UnitForecast(
        max_cells_per_unit=bound.max_cells_per_unit,
        max_points_per_cell=bound.max_points_per_cell,
        noise=noise.kind,
        cell_sigma=math.sqrt(laws.variance(noise.kind, noise.scale)),
        epsilon=noise.epsilon,
        delta=noise.delta,
        beta=float(spans.beta),
        rho=noise.rho,
        n_units=None if n_units is None else float(n_units),
        at=rows[at],
        ladder=rows,
    )


__all__ = ["Detection", "UnitForecast", "detection", "unit_forecast", "SPLITS"]
