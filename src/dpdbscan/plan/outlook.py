"""What a release will be able to see, from public inputs only, before any
budget is spent: the margin, the noise of one neighbourhood estimate, the
smallest neighbourhood count a core (sub-)cell needs, whether clusters of a
given density are detectable, and whether the fit will be slow or useless.

Every number is a function of the public grid (bounds, eps, eta), the noise
law (epsilon, discrete or continuous Laplace), the histogram the mechanism
will choose (from public inputs), beta, MinPts and the sub-cells: the same
functions the post-processing calls after a release, so a fit reports the
same numbers (``model.densitywords.DensityWords.utility_note``). ``n_expected`` is the user's
own public guess of the number of points; nothing here reads data.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from ..exceptions import renamed
from ..laws import noise as laws
from ..params.paramwords import grid_words, histogram_words
from ..params.specs import ReleaseSpec, SpanSpec
from ..post.coretests import core_test
from ..post.coretests.density.densitymargin import swamped
from ..post.coretests.density.densitytest import density_margin
from .clusterlimit import ClusterLimit, ball_share, cluster_limits, least_points, limits_words
from .detection import UnitForecast

#: Rough cost of one cell of a dense release, its draw and core test (issue
#: 30's 4-D points as a dense release: 1.6 s of CPU for 20.2M cells); the
#: forecast's times only warn before a fit that will take minutes.
DENSE_CORE_SECONDS_PER_CELL = 8e-8
#: Rough cost of one released cell of a sparse or stability release: its
#: sums walk the pairs of released cells within reach (output-sensitive,
#: issue 30), not every offset of the ball. 290-450 ns a released cell from
#: 5-D up (docs/benchmarks.md, hdsmall2); 6-D and 8-D fits of the issue's
#: 1e5 points (about 0.56M and 0.41M released cells) take 0.2-0.3 s.
SECONDS_PER_RELEASED_CELL = 4.5e-7
SLOW_SECONDS = 60.0
#: A density factor beyond this means only extreme hot spots can be found.
USELESS_FACTOR = 1000.0
#: A dense release merges clusters through its noise (issue 30, item 3;
#: docs/parameters.md, "When a fit cannot be useful"; ``benchmarks/survey_useful.py``)
#: where it puts noise on at least this many cells of every eps-ball (kappa:
#: 609 in 4-D, 3,903 in 5-D at eta 4) ...
MERGE_KAPPA = 600
#: ... on a box at most this many eps wide (the geometric mean of its sides
#: over eps: a coarse eps, whose neighbourhoods reach from cluster to cluster) ...
MERGE_WIDTHS = 12.0
#: ... where an eps-ball at the box's average density holds at least this many
#: points (n x V(ball) / V(box), n public or a DP count already spent).
#: Measured (30 blobs + 10% background in [0, 1]^d, three shapes, n 1e4-3e5,
#: MinPts 5-100, epsilon 0.3-3): ARI against DBSCAN 0.00-0.68 where all three
#: hold (4-D at 3x the benchmark's eps, 11 eps wide; 5-D at 2.5x and 3x, 10
#: and 8.3 wide); 0.58-0.88 with fewer points (1.3-3.2 in an eps-ball);
#: 0.37-1.00 on boxes 13 eps wide or more.
MERGE_EXPECTED = 3.5
#: A release that shows a cell only from a noisy count of theta loses
#: clusters exact DBSCAN finds (:mod:`.clusterlimit`): the fit warns from
#: this many dimensions where a Gaussian cluster of standard deviation eps/6
#: needs at least this many times the points exact DBSCAN needs (7-D: 25x
#: and 8-D: 65x at the benchmark's eps, epsilon 1; 6-D: 10x, 4-D: 3x).
#: Seed 73 of issue 30's sweep lost clusters in 7-D and 8-D only.
LIMIT_DIMS = 6
LIMIT_FACTOR = 20.0

#: The cost model of a whole fit (:func:`fit_cost`), after the file is read,
#: from straight lines fitted to the benchmarks (benchmarks/README-results.md,
#: docs/benchmarks.md: Cabs resampled to n = 1e5 .. 1e7, 2-D, 4.4M cells,
#: secure noise, one core of a shared 2-vCPU machine). Dense: 45 ns and 16 B
#: per point, plus noise on every cell (0.18 s and 120 MB for 4.4M cells);
#: sparse (and stability): 65 ns and 26 B per point after a fixed 0.09 s.
#: Higher dimensions cost more per cell (the naive histogram of the 3-D chest
#: release, 1e8 cells, took 11.7 s and 4.1 GB): an estimate, not a promise.
FIT_SECONDS_PER_POINT = {"dense": 45e-9, "sparse": 65e-9}
FIT_BYTES_PER_POINT = {"dense": 16.0, "sparse": 26.0}
DENSE_SECONDS_PER_CELL = 0.18 / 4.4e6
DENSE_BYTES_PER_CELL = 120e6 / 4.4e6
SPARSE_FIXED_SECONDS = 0.09
#: Noisy counts per candidate in the calibration (2-D, eta 4, 2x2 sub-cells):
#: a core test that sums more adds its own time estimate (``Forecast.seconds``)
#: and 4 B per point and term (measured on the 3-D chest data, 117 terms, and a
#: 4-D sample, 609 terms: peak memory within 20% of the model). Its time was
#: off by up to 6x either way there (0.3-4.3 s measured).
CALIBRATED_TERMS = 21
BYTES_PER_POINT_AND_TERM = 4.0


@dataclass(frozen=True)
class Forecast:
    """What a release at these public parameters can detect.

    Attributes
    ----------
    eps, min_samples, epsilon : the DBSCAN parameters and the budget.
    d, n_cells, subcells : the grid: dimension, cells (|X|), sub-cells per
        cell and dimension.
    kappa : int
        The cells within eps of one cell of the grid (the paper's kappa).
    kappa_q : int
        The most cells within eps of one sub-cell: the noisy counts in one
        sub-cell's neighbour sum (the model's ``kappa_q``; ``kappa`` without
        sub-cells).
    histogram, theta : the histogram the mechanism will use (public: |X|, d, kappa,
        delta, the core test and whether eps is fixed;
        :func:`dpdbscan.plan.histogramchoice.choose_kind`).
    core : "density" or "bound".
    noise_std : float
        Standard deviation of the noise of one eps-neighbourhood estimate
        (the largest over sub-positions): sigma(q) = sqrt(Var Z sum W^2) for
        the density test, sqrt(kappa_q Var Z) for the bound test's sum.
    margin : float
        Added to MinPts: the largest m(q) (density test, 1 sigma or the
        empty-space guard) or tau = Gamma_low + Gamma_up (bound test,
        practical rule).
    noise_margin : float
        What the model calls ``noise_margin``: the largest m(q), or Gamma_low
        (old name ``gamma``).
    threshold : float
        MinPts + margin: the smallest estimated eps-neighbourhood count a core
        (sub-)cell needs.
    n_expected : float or None
        The user's public guess of the number of points.
    expected_count : float or None
        n_expected x V(eps-ball) / V(box): what an eps-neighbourhood holds
        where the density is the box's average.
    density_factor : float or None
        threshold / expected_count: how many times the box's average density
        a cluster needs to be detected.
    terms_per_cell : int
        Noisy counts a candidate cell's core test reads: kappa for the
        density test (its sub-cells together read the whole cell's
        neighbourhood), kappa_q for the bound test's sum.
    seconds : float or None
        Rough time of the core test (with ``n_expected``, or for a dense
        release where every cell can be a candidate).
    slow, useless : tuple of str
        Warnings: a fit that will take long (public: kappa, |X|, d), or one
        that will likely find nothing (needs ``n_expected``, or a margin that
        dwarfs MinPts).
    units : UnitForecast or None
        A person-level release (``max_cells_per_unit``): what it detects in
        units, at its eps and over a ladder of eps
        (:mod:`dpdbscan.plan.detection`); its counts are bounded counts.
    ball_share : float
        V(eps-ball) / V(box), at most 1: an eps-ball's share of the box
        (public: the grid).
    box_widths : float
        The geometric mean of the box's sides over eps: how many eps wide
        the box is.
    merges : tuple of str
        The warning of :meth:`merge_note` at ``n_expected`` (also in
        ``useless``): a dense release whose noise merges clusters.
    cell_factor : float or None
        A sparse release with ``n_expected``: theta x |X| / n_expected, how
        many times the points of a cell at the box's average density a cell
        must hold to be shown at all (its noisy count must reach theta). A
        cluster whose densest cells are below that is not found, whatever
        MinPts.
    cell_width : float
        The grid's cell width w (the limits below read it).
    cluster_limits : tuple of ClusterLimit
        (Computed when first read.) The density test at event level: the
        least number of points a Gaussian cluster needs to be found at each
        spread of :data:`dpdbscan.plan.clusterlimit.SPREADS` (its standard
        deviation along every axis, eps/12 to eps/3), and what exact DBSCAN
        needs (:mod:`dpdbscan.plan.clusterlimit`): above 6-D the sparse
        release's theta, not the noise margin, decides. Empty otherwise.
    """

    eps: float
    min_samples: float
    epsilon: float
    d: int
    n_cells: int
    kappa: int
    kappa_q: int
    subcells: int
    histogram: str
    theta: float
    core: str
    noise_std: float
    margin: float
    noise_margin: float
    threshold: float
    n_expected: float | None
    expected_count: float | None
    density_factor: float | None
    terms_per_cell: int
    seconds: float | None
    slow: tuple
    useless: tuple
    margin_text: str
    units: UnitForecast | None
    ball_share: float
    box_widths: float
    merges: tuple
    cell_factor: float | None
    cell_width: float

    gamma = renamed("gamma", "noise_margin")

    def merge_note(self, n: float | None, source: str = "n_expected") -> str | None:
        """The warning that the release's noise will likely merge clusters,
        or None: a dense release (event level) that puts noise on at least
        :data:`MERGE_KAPPA` cells of every eps-ball, on a box at most
        :data:`MERGE_WIDTHS` eps wide, where an eps-ball at the box's
        average density holds at least :data:`MERGE_EXPECTED` of ``n``
        points. ``n`` must be public (the user's guess) or a DP count
        already spent and counted; ``source`` names it in the message, which
        quotes parameters and ``n`` (to two digits) only."""
        if n is None or self.units is not None or self.histogram != "dense" or self.kappa < MERGE_KAPPA:
            return None
        expected = float(n) * self.ball_share
        if self.box_widths > MERGE_WIDTHS or expected < MERGE_EXPECTED:
            return None
        finer = self.eps * self.box_widths / MERGE_WIDTHS
        return (
            f"this fit is unlikely to be useful: a dense release puts noise on all {self.kappa:,} cells "
            f"within eps of every cell (d={self.d}), the box is only about {self.box_widths:.2g} eps wide, "
            f"and with about {float(f'{n:.2g}'):,.0f} points ({source}) an eps-ball at the box's average "
            f"density holds about {expected:.2g}: neighbouring clusters are likely to merge through the "
            "noise (measured in 4-D and 5-D: ARI 0.00-0.68 against DBSCAN's labels). Use a smaller eps "
            f"(below about {finer:.3g}) or the sparse histogram"
        )

    @property
    def notes(self) -> tuple:
        limit = self.limit_note()
        return tuple(self.slow) + tuple(self.useless) + ((limit,) if limit else ())

    def sentence(self) -> str:
        """A plain sentence on what is detectable at this epsilon (in units
        for a person-level release)."""
        if self.units is not None:
            return self.units.sentence()
        core = "sub-cell" if self.subcells > 1 else "cell"
        head = (
            f"At epsilon={self.epsilon:g} a {core} is core when its eps-neighbourhood is "
            f"estimated to hold at least {self.threshold:.0f} points (min_samples="
            f"{self.min_samples:g} plus a noise margin of {self.margin:.1f}; one estimate's "
            f"noise has standard deviation {self.noise_std:.1f})."
        )
        if self.n_expected is None or self.expected_count is None:
            return head + (
                " Give the number of points you expect (n_expected, a public guess) "
                "to see which cluster densities that reaches."
            )
        n = self.n_expected
        if self.threshold > n:
            return head + (
                f" Clusters are not detectable: that is more than the {n:,.0f} points "
                "you expect in all. Use a larger eps or a larger epsilon."
            )
        f = self.density_factor or 0.0
        where = (
            f"With {n:,.0f} points an eps-neighbourhood holds about "
            f"{self.expected_count:.3g} at the box's average density, so clusters are "
            f"detectable where the density is at least {f:.3g} times that average"
        )
        if f <= 1:
            return head + " " + where + ": any region as dense as the average is detectable."
        share = min(1.0, 0.1 / f)
        tail = (
            f"; a cluster holding 10% of the points is found if it covers at most "
            f"{_percent(share)} of the box."
        )
        if f >= USELESS_FACTOR:
            tail += (
                " Only strongly concentrated clusters qualify:"
                " a larger eps or a larger epsilon lowers the bar."
            )
        return head + " " + where + tail

    def lines(
        self,
        n_name: str = "n_expected",
        length: Callable[[float], str] = "{:.4g}".format,
        volume: Callable[[float], str] = "{:.3g}".format,
    ) -> list[str]:
        """The forecast as lines of text (what ``dpdbscan forecast`` prints);
        ``n_name`` names the number of points (``check`` counts them);
        ``length`` and ``volume`` format the person-level table's lengths
        and a unit's area (km and km² for geographic boxes)."""
        core = "sub-cell" if self.subcells > 1 else "cell"
        # a person-level release counts each unit's points after bounding them;
        # with m = 1 a unit counts once in each cell it was in: the counts are of units
        units = self.units is not None and self.units.max_points_per_cell == 1
        counted = "units" if units else "points"
        points = (
            "points"
            if self.units is None
            else "units (each once per cell)"
            if units
            else "points of the bounded counts"
        )
        out = [
            f"grid      : {grid_words(self.n_cells, self.d, self.subcells, self.kappa, self.kappa_q)}; "
            f"noise on {histogram_words(self.histogram, self.theta)}",
            f"noise     : the estimated number of {counted} within eps of a {core} is off by "
            f"{self.noise_std:.2f} on a typical draw (one noise standard deviation, sigma)",
            f"margin    : {self.margin:.2f} {counted} are added to min_samples so that noise alone "
            f"rarely makes a {core} core: {self.margin_text}",
            f"threshold : a core {core} needs an estimated {self.threshold:.1f} {points} or more "
            f"within eps (min_samples={self.min_samples:g} plus the margin)",
        ]
        if self.units is not None:
            return out + self.units.lines(length, volume) + [f"warning: {n}" for n in self.notes]
        if self.expected_count is not None:
            out.append(
                f"expected  : about {self.expected_count:.3g} points lie within eps of a place at the "
                f"box's average density ({n_name}={self.n_expected:,.0f}); a cluster needs "
                f"{self.density_factor:.3g} times that density (the density factor)"
            )
        if self.cell_factor is not None:
            out.append(
                f"cells     : a cell is shown only when its noisy count reaches theta={self.theta:g}: a "
                f"cluster's cells must hold about that many points, {self.cell_factor:.3g} times what a "
                "cell holds at the box's average density"
            )
        if self.histogram != "dense" and self.cluster_limits:
            # a dense release's limit is the threshold itself (T over the ball's share)
            out.append(f"clusters  : {self.limits_text(length)}")
        if self.seconds is not None and self.histogram == "dense":
            out.append(
                f"time      : about {duration_text(self.seconds)} for the release and its core test "
                f"({self.n_cells:,} cells, {self.terms_per_cell:,} noisy counts per candidate cell)"
            )
        elif self.seconds is not None:
            out.append(
                f"time      : about {duration_text(self.seconds)} for the core test, more where "
                "occupied cells crowd within eps of each other (it walks the pairs of released "
                f"cells within reach, of up to {self.terms_per_cell:,} per cell)"
            )
        return out + [self.sentence()] + [f"warning: {n}" for n in self.notes]

    @property
    def coarse(self) -> bool:
        """Whether the release's cells are wider than eps / sqrt(d) (eta 4):
        the coarse release of 7-D/8-D (:mod:`dpdbscan.plan.coarserelease`),
        whose cells' diagonal is twice eps."""
        return math.isfinite(self.cell_width) and self.cell_width > self.eps / math.sqrt(self.d) * (1 + 1e-9)

    @functools.cached_property
    def cluster_limits(self) -> tuple[ClusterLimit, ...]:
        if not core_test(self.core).states_cluster_limits or self.units is not None:
            return ()
        # the model takes a cluster's eps-ball count at its centre, which a
        # cell of diagonal 2 eps averages over far more widely: it stated 98
        # points for an 8-D cluster of sd eps/6 that needed 200-1,000
        if not math.isfinite(self.cell_width) or self.coarse:
            return ()
        return cluster_limits(
            self.d, self.eps, self.cell_width, self.theta, self.threshold, float(self.min_samples)
        )

    def limit_note(self) -> str | None:
        """The warning that clusters exact DBSCAN finds will likely be lost,
        or None: a release that shows a cell only from a noisy count of
        theta (sparse, stability), in :data:`LIMIT_DIMS` or more dimensions,
        where a Gaussian cluster with standard deviation eps/6 along every
        axis needs at least :data:`LIMIT_FACTOR` times the points exact
        DBSCAN needs (public inputs only; :mod:`.clusterlimit`)."""
        if (
            self.histogram == "dense"
            or self.d < LIMIT_DIMS
            or not core_test(self.core).states_cluster_limits
            or self.units is not None
        ):
            return None
        if not math.isfinite(self.cell_width):
            return None
        if self.coarse:
            dbscan = float(self.min_samples) / max(ball_share(self.d, self.eps, self.eps / 6), 1e-300)
            return (
                f"clusters that exact DBSCAN finds may be lost here: in {self.d}-D the {self.histogram} "
                f"release shows a cell only when its noisy count reaches theta={self.theta:g}, on cells "
                "twice as wide as eps / sqrt(d) (the coarse release), and a core cell needs "
                f"{self.threshold:.0f} points within eps; a Gaussian cluster with standard deviation eps/6 "
                "along every axis needed 200 to 1,000 points, by where it lay against the cells, in "
                "7-D and 8-D at the benchmark's eps and epsilon 1 (measured; not modelled here; "
                f'exact DBSCAN: {_points(dbscan)}). docs/parameters.md, "What a release can detect above 6-D"'
            )
        sd = self.eps / 6
        need = least_points(self.d, self.eps, self.cell_width, sd, self.theta, self.threshold)
        dbscan = float(self.min_samples) / max(ball_share(self.d, self.eps, sd), 1e-300)
        if need is not None and need < LIMIT_FACTOR * dbscan:
            return None
        wider = least_points(self.d, self.eps, self.cell_width, self.eps / 4, self.theta, self.threshold)
        return (
            f"clusters that exact DBSCAN finds may be lost here: in {self.d}-D the {self.histogram} release "
            f"shows a cell only when its noisy count reaches theta={self.theta:g}, and a core cell needs "
            f"{self.threshold:.0f} points within eps, so a Gaussian cluster with standard deviation eps/6 "
            f"({sd:.3g}) along every axis needs about {_points(need)} points to be found (exact DBSCAN: "
            f"{_points(dbscan)}), one with eps/4 about {_points(wider)}; smaller or wider clusters are "
            "lost. 'dpdbscan forecast' lists more (docs/parameters.md, \"What a release can detect "
            'above 6-D")'
        )

    def limits_text(self, length: Callable[[float], str] | None = None) -> str:
        """The :attr:`cluster_limits` as words ("" without them); ``length``
        formats a standard deviation."""
        if not self.cluster_limits:
            return ""
        return limits_words(self.cluster_limits, self.theta, self.threshold, length)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["cluster_limits"] = [asdict(lim) for lim in self.cluster_limits]
        out["limit_note"] = self.limit_note()
        out["slow"], out["useless"] = list(self.slow), list(self.useless)
        out["merges"] = list(self.merges)
        out["units"] = None if self.units is None else self.units.to_dict()
        out["sentence"] = self.sentence()
        return out


def _percent(x: float) -> str:
    return f"{100 * x:.3g}%"


def _points(v: float | None) -> str:
    return "more than 10^12" if v is None or not math.isfinite(v) else f"{float(f'{v:.2g}'):,.0f}"


def two_digits(v: float) -> str:
    """``v`` to two significant digits, never in exponent form (130, not 1.3e+02)."""
    return f"{float(f'{v:.2g}'):g}" if abs(v) < 1e6 else f"{v:,.0f}"


def duration_text(s: float) -> str:
    """A duration in seconds, minutes or hours, to two significant digits."""
    if s < 120:
        return f"{two_digits(s)} s"
    return f"{two_digits(s / 60)} min" if s < 7200 else f"{two_digits(s / 3600)} h"


@dataclass(frozen=True)
class FitCost:
    """What a fit will roughly take, after its input is read (:func:`fit_cost`).

    Attributes
    ----------
    seconds : float
        Counting, noise and spans (the cost model's line), plus the core
        test's own estimate (``Forecast.seconds``) when it sums more noisy
        counts per cell than the calibration did. Within about 2x in 2-D;
        beyond, off by up to 6x either way.
    input_bytes : float
        The points as the fit holds them: 8 bytes per value.
    extra_bytes : float
        The fit's memory on top of the input.
    """

    seconds: float
    input_bytes: float
    extra_bytes: float

    def line(self) -> str:
        return (
            f"about {duration_text(self.seconds)} and {_size(self.input_bytes + self.extra_bytes)} of "
            f"memory (the points {_size(self.input_bytes)}, the fit {_size(self.extra_bytes)} more): "
            "an estimate from the benchmarks' cost model"
        )


def fit_cost(fc: Forecast, n: float) -> FitCost:
    """Rough time and peak memory of a fit of ``n`` points with the forecast
    ``fc``: the straight lines of :data:`FIT_SECONDS_PER_POINT` and the rest,
    from public sizes (n, |X|, d, the histogram) only."""
    kind = "dense" if fc.histogram == "dense" else "sparse"
    seconds = FIT_SECONDS_PER_POINT[kind] * n
    extra = FIT_BYTES_PER_POINT[kind] * n
    if kind == "dense":
        seconds += DENSE_SECONDS_PER_CELL * fc.n_cells
        extra += DENSE_BYTES_PER_CELL * fc.n_cells
    else:
        seconds += SPARSE_FIXED_SECONDS
    if fc.terms_per_cell > CALIBRATED_TERMS:
        # the line was measured in 2-D; a larger neighbourhood costs its core test on top
        if kind == "dense":
            seconds = max(seconds, fc.seconds or 0.0)
            extra += BYTES_PER_POINT_AND_TERM * fc.terms_per_cell * n
        else:
            # a sparse release's sums walk pairs of released cells within reach
            # (issue 30): memory linear in the released cells, not the ball's offsets
            seconds += fc.seconds or 0.0
    return FitCost(seconds=seconds, input_bytes=8.0 * fc.d * n, extra_bytes=extra)


def _size(b: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{two_digits(b / scale)} {unit}"
    return f"{b:.0f} B"


def _swamped(release: ReleaseSpec, spans: SpanSpec) -> int | None:
    """The largest MinPts that gives the same core test as ``spans``'s
    when the empty-space guard swamps MinPts (:func:`.margins.swamped`), or
    None. Public inputs only."""
    if not core_test(spans.core).guard_swamps:
        return None
    _, m = density_margin(
        release.grid, release.histogram, release.noise.kind, release.noise.scale, release.theta, spans
    )
    return swamped(m, spans.min_samples)


def forecast(release: ReleaseSpec, spans: SpanSpec, *, n_expected: float | None = None) -> Forecast:
    """The forecast of the release ``release`` and its spans ``spans`` (as
    :func:`dpdbscan.plan.resolve.resolve` makes them). Public inputs only;
    ``n_expected`` is the user's own guess of the number of points."""
    n_expected = None if n_expected is None else float(n_expected)  # any real, ints too
    grid, kind, theta = release.grid, release.histogram, release.theta
    d = grid.d
    k = int(spans.subcells)
    fig = core_test(spans.core).figures(grid, kind, release.noise.kind, release.noise.scale, theta, spans)
    gamma, noise_std, margin_value = fig.noise_margin, fig.noise_std, fig.margin_value
    threshold = fig.threshold(spans.min_samples)
    terms, kappa_q = fig.terms, fig.kappa_q
    params = spans
    # empty cells a sparse release adds in expectation (public: |X|, the noise,
    # theta; the default theta caps them over the grid and per alpha-ball)
    empty_cells = (
        grid.n_cells * laws.tail(release.noise.kind, release.noise.scale, theta) if kind == "sparse" else 0.0
    )
    expected = factor = None
    volume = math.prod(float(hi - lo) for lo, hi in zip(grid.lower, grid.upper))
    ball = math.pi ** (d / 2) / math.gamma(d / 2 + 1) * grid.eps**d
    share = min(ball / volume, 1.0)
    if n_expected is not None:
        expected = n_expected * share
        factor = threshold / expected if expected > 0 else math.inf
    slow, useless = [], []
    seconds: float | None
    if kind == "dense":
        # every cell is released: the sums cover the grid by boxes, a cost per
        # cell, not per offset of the ball (issue 30)
        seconds = DENSE_CORE_SECONDS_PER_CELL * float(grid.n_cells)
        if seconds > SLOW_SECONDS:
            slow.append(
                f"the release and its core test may take about {duration_text(seconds)}: a dense "
                f"release draws and sums every one of its {grid.n_cells:,} cells (d={d}, "
                f"eta={grid.eta:g}). Use fewer dimensions, a larger eta, a coarser eps or the "
                "sparse histogram"
            )
    else:
        # the sums walk the pairs of released cells within reach: their cost
        # follows the released cells (the points' plus the noise's), more
        # where many occupied cells crowd within eps of each other
        released = (n_expected or 0.0) + (empty_cells or 0.0)
        walk = SECONDS_PER_RELEASED_CELL * released
        seconds = None if n_expected is None else walk
        if walk > SLOW_SECONDS:
            slow.append(
                f"the core test may take about {duration_text(walk)} or more: it walks about "
                f"{released:,.0f} released cells (d={d}, eta={grid.eta:g}; "
                f"{empty_cells:,.0f} of them noise), more where occupied cells crowd within eps of "
                "each other. Use fewer dimensions, a larger eta, a higher theta or a coarser eps"
            )
    # at person level with m = 1 the counts are of units (each once per cell), as the lines say
    counted = "units" if release.units is not None and release.units.max_points_per_cell == 1 else "points"
    if factor is not None and threshold > (n_expected or 0):
        useless.append(
            f"the fit will likely find nothing: a core cell needs {threshold:.0f} {counted} "
            f"within eps, more than the {n_expected:,.0f} points expected in all"
        )
    elif factor is not None and factor >= USELESS_FACTOR:
        # not "finds nothing": Gaussian blobs in 6-D to 8-D are millions of
        # times the average density and found (ARI 1.0, benchmarks/survey_useful.py)
        useless.append(
            f"only very concentrated clusters can be found: a core cell needs {threshold:.0f} {counted} "
            f"within eps, {factor:.3g} times what the box's average density gives"
        )
    elif n_expected is None and margin_value >= 4 * params.min_samples:
        useless.append(
            f"the noise margin ({margin_value:.0f}) is {margin_value / params.min_samples:.3g}"
            " times min_samples: only dense clusters are found at this epsilon"
        )
    flat = _swamped(release, spans)
    if flat is not None:
        useless.append(
            f"every min_samples from 1 to {flat:,} gives the same release here: the noise margin, "
            f"not min_samples={params.min_samples:g}, decides which places are dense (a larger "
            "epsilon or eps lowers it)"
        )
    fc = Forecast(
        eps=float(grid.eps),
        min_samples=params.min_samples,
        epsilon=float(release.noise.epsilon),
        d=d,
        n_cells=grid.n_cells,
        kappa=int(grid.kappa),
        kappa_q=int(kappa_q),
        subcells=k,
        histogram=kind,
        theta=float(theta),
        core=params.core,
        noise_std=noise_std,
        margin=float(margin_value),
        noise_margin=float(gamma),
        threshold=float(threshold),
        n_expected=n_expected,
        expected_count=expected,
        density_factor=factor,
        terms_per_cell=terms,
        seconds=seconds,
        slow=tuple(slow),
        useless=tuple(useless),
        margin_text=fig.margin_text,
        units=None,
        ball_share=share,
        box_widths=volume ** (1.0 / d) / float(grid.eps),
        merges=(),
        cell_factor=None if n_expected is None or kind != "sparse" else theta * grid.n_cells / n_expected,
        cell_width=float(grid.width),
    )
    # person level: the counts are of bounded units, not of n_expected's points
    note = fc.merge_note(n_expected) if release.units is None else None
    if note is None:
        return fc
    return replace(fc, useless=(note, *fc.useless), merges=(note,))


__all__ = [
    "FitCost",
    "Forecast",
    "fit_cost",
    "forecast",
    "MERGE_EXPECTED",
    "MERGE_KAPPA",
    "MERGE_WIDTHS",
    "DENSE_CORE_SECONDS_PER_CELL",
    "SECONDS_PER_RELEASED_CELL",
    "duration_text",
    "two_digits",
]
