"""What a person-level release can detect, from public inputs only (issue 20).

With privacy units each unit adds to at most k cells, at most m to each, so a
cell's bounded count is at most m times the number of units seen there, and
the noise of one cell (its standard deviation grows as sqrt(k) m for the
Gaussian) is the same at every eps. The core test sums the noisy counts of an
eps-ball with weights (:class:`~dpdbscan.post.coretests.Statistic`); from
that sum's threshold and the exact law of its noise this module derives, for
a release at one eps:

* the **spot** count: the smallest bounded count in one cell that makes a
  (sub-)cell of it core with probability >= 1 - beta, whatever else lies
  around it (rigorous: below); in units, ceil(spot / m) units seen in one
  cell. Compared with N, the user's public guess of the number of units,
  it says whether one place can be a span at all;
* the **per-cell** count: about what each cell of a cluster that fills an
  eps-ball must hold on average (the threshold plus the noise's 1 - beta
  quantile, over the ball's weight S(q) = sum_Y W(q, Y)). As a share of N it
  says what share of all units must be seen in each cell *after bounding*;
  a unit that visits c > k cells keeps each with probability k / c, so a
  cluster every unit visits is found only if units visit at most
  k / share cells: that count of cells, times a cell's volume, is the area
  a unit may roam and still be seen in full. The cells grow with eps, so
  that area does: this is what makes person-level clusters need a coarser
  eps, while the counts themselves barely change with eps (an eps-ball
  spans the same number of cells at a fixed eta).

Why the spot count is rigorous. Let the unit's cell Y0 hold x (bounded) and
q be a sub-cell of Y0 at position i. Dense release (or a truncating one with
theta <= 0, where every released value R_Y satisfies R_Y - x_Y >= Z_Y):
E~(q) >= W_i(Y0) x + N_i with N_i = sum_Y W_i(Y) Z_Y, so x >= (T_i + g_i) /
W_i(Y0), with P(N_i >= g_i) <= beta (:func:`weighted_quantile`, exact up to
conservative binning; the noise is symmetric), makes E~(q) >= T_i with
probability >= 1 - beta; the density test's occupancy condition (its cell
reads above c sigma) takes a share of beta, computed exactly. Truncating
release with theta > 0: every released value is >= 0, so E~(q) >= W_i(Y0)
R_0 and q is core once x + Z_0 >= max(T_i / W_i(Y0), theta, occupancy): one
noise term's quantile. Other points nearby only add to E~(q).

Every number here reads the public grid, the noise law, the histogram's
kind and theta, MinPts, beta, k, m and N, never data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

from ..laws import noise as laws
from ..post.coretests import Statistic, core_test
from ..post.coretests.density import weighted_quantile
from ..spec.specs import ReleaseSpec, SpanSpec

#: The share of beta the density test's occupancy condition may take at the
#: spot count before the split falls back to beta / 2 each (a spot that
#: clears its threshold reads far above the occupancy cut: far below this).
OCCUPANCY_SHARE = 1e-3

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
        The histogram the mechanism would choose (from |X| alone).
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
        About the mean bounded count per cell of a cluster that fills an
        eps-ball and is detected with probability 1 - beta.
    per_cell_units : float
        per_cell / m.
    share : float or None
        per_cell_units / N: the share of all units each cell must keep after
        bounding (None without N).
    max_unit_cells : float or None
        k / share: the most cells a unit may visit so that a cell every unit
        visits still keeps per_cell_units of them in expectation (inf when
        share <= 0; None without N or when share > 1: nothing is detectable).
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
    per_cell_units: float
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
    spot = _spot(st, noise.kind, noise.scale, beta, release.theta if truncating else None)
    per_cell = min((t + _quantile(noise.kind, noise.scale, w, beta)) / s for w, s, t in _rows(st))
    if truncating:
        per_cell = max(per_cell, release.theta + _quantile(noise.kind, noise.scale, (1.0,), beta))
    bound = release.units
    k, m = bound.max_cells_per_unit, bound.max_points_per_cell
    per_unit = per_cell / m
    share = most = volume = None
    if n_units is not None:
        share = per_unit / float(n_units)
        if share <= 1:
            most = k / share if share > 0 else math.inf
            volume = most * grid.width**grid.d
    return Detection(
        eps=float(grid.alpha),
        cell_width=float(grid.width),
        n_cells=int(grid.n_cells),
        histogram=release.histogram,
        threshold=max(st.thresholds),
        spot=spot,
        spot_units=int(math.ceil(spot / m - 1e-9)),
        ball_cells=max(st.sums),
        per_cell=per_cell,
        per_cell_units=per_unit,
        share=share,
        max_unit_cells=most,
        max_unit_volume=volume,
    )


def _rows(st: Statistic):
    return zip(st.weights, st.sums, st.thresholds)


def _quantile(kind: str, scale: float, weights: tuple, level: float) -> float:
    """g with P(sum W Z >= g) <= level (so P(sum W Z <= -g) <= level: the
    noise is symmetric)."""
    return weighted_quantile(kind, float(scale), tuple(weights), float(level))


def _spot(st: Statistic, kind: str, scale: float, beta: float, theta: float | None) -> float:
    """The spot count of the module docstring; ``theta``: the threshold of a
    truncating release (> 0), None for the dense law."""
    occ = st.occupancy
    if theta is not None:
        need = min(max(t / own, theta) for t, own in zip(st.thresholds, st.own))
        if occ is not None:
            need = max(need, occ)
        return need + _quantile(kind, scale, (1.0,), beta)

    def clears(level: float) -> float:
        return min(
            (t + _quantile(kind, scale, w, level)) / own
            for w, own, t in zip(st.weights, st.own, st.thresholds)
        )

    x = clears(beta)
    if occ is None:
        return x
    # P(the own cell reads <= occ) = P(Z <= occ - x) = P(Z >= x - occ)
    missed = laws.tail(kind, scale, x - occ)
    if missed <= OCCUPANCY_SHARE * beta:
        # a larger x only lowers the occupancy's share: x at beta - missed covers both
        return clears(beta - missed)
    return max(clears(beta / 2), occ + _quantile(kind, scale, (1.0,), beta / 2))


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
        head = (
            f"Person-level: each unit adds to at most {k:,} cell{_s(k)} and at most {m} point{_s(m)} "
            f"per cell, and each cell's count gets {NOISE_WORDS.get(self.noise, self.noise)} noise "
            f"with standard deviation {self.cell_sigma:.3g}. At eps {length(d.eps)} (cells of "
            f"{length(d.cell_width)}) a core needs about {d.spot_units:,} units seen in one cell "
            f"(detected with probability >= {conf})"
        )
        spread = (
            f"a cluster that fills an eps-ball ({d.ball_cells:.3g} cells) is detected where each "
            f"of its cells keeps about {d.per_cell_units:,.0f} units after bounding"
        )
        if self.n_units is None or d.share is None:
            return (
                head
                + "; "
                + spread
                + (". Give the number of units you expect (a public guess) to compare these with it.")
            )
        n = self.n_units
        if d.spot_units > n:
            head += f", more than the {n:,.0f} units expected: no single place is a span"
        if d.share > 1:
            return (
                head
                + ". "
                + _cap(spread)
                + (
                    f", more than the {n:,.0f} units expected: no cluster is detectable at this "
                    "epsilon, at any eps (the noise is per cell and an eps-ball spans about as many "
                    "cells at every eps). Use a larger epsilon."
                )
            )
        most = d.max_unit_cells or math.inf
        tail = (
            f" ({d.share:.0%} of the {n:,.0f}). A unit that visits more than {k:,} cells keeps "
            f"{k:,} of them at random, so a cluster every unit visits is found only if units visit "
            f"at most {most:,.0f} cells of {length(d.cell_width)} ({volume(d.max_unit_volume or math.inf)})."
        )
        return head + "; " + spread + tail + self._ladder_words(length, volume)

    def _ladder_words(self, length, volume) -> str:
        rows = [r for r in self.ladder if r.max_unit_volume is not None]
        if len(rows) < 2:
            return ""
        steps = "; ".join(f"{length(r.eps)}: {volume(r.max_unit_volume)}" for r in rows)
        return (
            f" That area grows with eps ({steps}): units that roam more need a coarser eps, a "
            "larger epsilon, or a larger k (the area grows as the square root of k while units "
            "visit more cells than k)."
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
            f"units     : k={self.max_cells_per_unit:,} cells per unit, m={self.max_points_per_cell} "
            f"per cell; noise std {self.cell_sigma:.4g} per cell{rho}"
            + ("" if self.n_units is None else f"; {self.n_units:,.0f} units expected"),
            f"{'eps':>9}  {'cell':>9}  {'units in one cell':>17}  {'units per cell':>14}  "
            f"{'share':>6}  {'cells per unit':>14}  {'area':>10}",
        ]
        for r in self.ladder:
            share = "-" if r.share is None else f"{r.share:.0%}"
            cells = "-" if r.max_unit_cells is None else f"{r.max_unit_cells:,.0f}"
            area = "-" if r.max_unit_volume is None else volume(r.max_unit_volume)
            mark = "*" if r.eps == self.at.eps else " "
            out.append(
                f"{length(r.eps):>8}{mark}  {length(r.cell_width):>9}  {r.spot_units:>17,}  "
                f"{r.per_cell_units:>14,.0f}  {share:>6}  {cells:>14}  {area:>10}"
            )
        out.append(
            "  (units in one cell: detected there with probability >= "
            f"{1 - self.beta:.3g}; units per cell: about, in each cell of a cluster filling an "
            "eps-ball, after bounding; share: of the units expected; cells per unit: the most a "
            "unit may visit and keep that many in a cell every unit visits; * the release's eps)"
        )
        return out + [self.sentence(length, volume)]

    def to_dict(self) -> dict:
        out = asdict(self)
        out["sentence"] = self.sentence()
        return out


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


__all__ = ["Detection", "UnitForecast", "detection", "unit_forecast", "OCCUPANCY_SHARE"]
