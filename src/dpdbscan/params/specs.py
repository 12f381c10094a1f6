"""What the public parameters resolve to: frozen, fully typed records.

Every default lives in the parameter table (:data:`.parameters.PARAMETERS`);
these records have none of their own, so a record can only be built from
values that were resolved from the table (:func:`dpdbscan.plan.resolve`)
or read back from a saved release. ``tests/spec/test_specs.py`` checks that no
field here has a default.

* :class:`SpanSpec`: the post-processing (the core test and its settings).
* :class:`NoiseSpec`, :class:`UnitBound`, :class:`UnitChoice`,
  :class:`SizeEstimate` and :class:`ReleaseSpec`: the one release that
  spends the budget.
* :class:`ReleaseInfo`: the public facts of a release that its spans and
  guarantee refer to, kept by the model even when it is saved without its
  noisy histogram (with :class:`SecondSpend`, what release two spent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from ..cells.grid import Grid
from ..laws import zcdp
from ..laws.noise import TypedNoiseParameter, drawn_scale

#: A seed for reproducible (insecure) noise: an int or a numpy Generator.
Seed: TypeAlias = int | np.integer | np.random.Generator


@dataclass(frozen=True)
class SpanSpec:
    """The post-processing parameters of a release's spans.

    Attributes
    ----------
    min_samples : int
        The user's MinPts.
    beta : float
        Failure probability of the guarantee.
    subcells : int
        Sub-cells per cell and dimension (1 = the paper's cells).
    margin : str or float
        The core test's margin rule (see its folder in ``post/coretests``).
    border : float
        Border radius used by ``predict`` (labels only).
    border_cells : {"any", "occupied", "own"}
        Which cells within the border radius join a span: ``"any"`` (every
        one, DBSCAN's rule read on the grid), or ``"occupied"``: only those
        whose cell the release shows holding points (its noisy count at
        least what the noise alone reaches with probability
        :data:`dpdbscan.laws.noise.SHOWN_LEVEL`; geographic mode, where the
        spans are published as places), or ``"own"``: only those whose
        noisy count is not far under the span's busiest cell (the automatic
        place mode, :func:`dpdbscan.model.record.own_border`).
    raise_min_samples : bool
        Bound test: the paper's practical rule (core iff UB~ >= MinPts + tau).
    core : str
        The core test's name (its tag in the registry and in model files).
    join : {"eps", "face"}
        Density test: which core sub-cells a span joins: those whose
        centres are less than eps apart (``"eps"``, DBSCAN's rule read on
        the grid), or only those sharing a face (``"face"``: a finer
        partition of the same core sub-cells; the automatic mode in 3-D
        below a DP count of 20,000, :func:`dpdbscan.params.sizing.joins_faces`).
    """

    min_samples: int
    beta: float
    subcells: int
    margin: str | float
    border: float
    border_cells: str
    raise_min_samples: bool
    core: str
    join: str


@dataclass(frozen=True)
class NoiseSpec(TypedNoiseParameter):
    """The noise of a release: its family and how it is calibrated.

    Attributes
    ----------
    kind : {"discrete", "laplace", "gaussian"}
        Exact discrete Laplace, the paper's continuous Laplace, or the exact
        discrete Gaussian.
    epsilon, delta : float
        The (epsilon, delta) the release is stated with.
    scale : float
        Laplace: the epsilon the noise of one count is drawn with (epsilon
        divided by the L1 sensitivity). Gaussian: sigma^2. :attr:`count_epsilon`
        and :attr:`sigma2` name it by family.
    rho : float or None
        Gaussian: the zCDP rho the release spends.
    l1_sensitivity, l2_sensitivity : float
        How much one privacy unit can change the vector of cell counts.
    """

    kind: str
    epsilon: float
    delta: float
    scale: float
    rho: float | None
    l1_sensitivity: float
    l2_sensitivity: float

    @classmethod
    def calibrated(
        cls, kind: str, epsilon: float, delta: float, bound: UnitBound | None, rho: tuple[float, float] | None
    ) -> NoiseSpec:
        """The noise of ``kind`` for a release stated as (``epsilon``,
        ``delta``) whose units are bounded by ``bound`` (None: a row is the
        unit). The sensitivities: L1 k m, L2 sqrt(k) m (1 and 1 for a row).
        Laplace: one count's noise drawn at epsilon / L1, as the sampler
        draws it (rounded down). Gaussian: ``rho`` is (the rho the release
        spends, the part of it the noise gets), and sigma^2 = L2^2 / (2 rho
        of the noise), as the sampler draws it (rounded up, by < 1e-5
        relative: its histogram records it)."""
        k, m = (bound.max_cells_per_unit, bound.max_points_per_cell) if bound else (1, 1)
        l1, l2 = float(k * m), math.sqrt(k) * m
        if kind != "gaussian":
            return cls(kind, epsilon, delta, drawn_scale(kind, epsilon / l1), None, l1, l2)
        if rho is None:
            raise ValueError("Gaussian noise is calibrated to a zCDP rho")
        spent, for_noise = rho
        return cls(kind, epsilon, delta, zcdp.sigma2_for(for_noise, l2), spent, l1, l2)

    def _noise_parameter(self) -> tuple[str, float]:
        return self.kind, self.scale


@dataclass(frozen=True)
class UnitBound:
    """Contribution bounds per privacy unit (a person): at most
    ``max_points_per_cell`` points in any cell and ``max_cells_per_unit``
    cells, which a unit with more keeps by ``cell_choice``: "uniform" (k of
    its cells at random) or "busiest" (its k cells of most points, ties at
    random; :mod:`dpdbscan.release.bounding`)."""

    max_cells_per_unit: int
    max_points_per_cell: int
    cell_choice: str


@dataclass(frozen=True)
class UnitChoice:
    """How ``max_cells_per_unit="auto"`` chose k: privately, by the
    exponential mechanism over public candidates
    (:mod:`dpdbscan.release.unitchoice`), for a stated share of the budget.

    Attributes
    ----------
    candidates : tuple of int
        The public candidates for k (a geometric ladder, :mod:`dpdbscan.plan.units`).
    share : float
        The share of the release's zCDP rho spent on the choice.
    rho : float
        The rho the choice spends (``share`` times the release's rho); the
        noise is calibrated to the rest.
    """

    candidates: tuple[int, ...]
    share: float
    rho: float


@dataclass(frozen=True)
class SizeEstimate:
    """The automatic mode's DP count of the points, which sizes its release's
    grid (:func:`dpdbscan.plan.autoplan.sized_n`) when the user gives no
    guess of n: a noisy count of the rows the release counts, for a stated
    share of the budget, made before the histogram (one row changes it by
    at most 1). Event-level releases only.

    Attributes
    ----------
    share : float
        The share of the release's epsilon (Laplace noise) or zCDP rho
        (Gaussian noise) the count spends; the histogram's noise is
        calibrated to the rest.
    noise : {"discrete", "laplace", "gaussian"}
        The count's noise: the release's family.
    scale : float
        Its parameter, as :attr:`NoiseSpec.scale`: the epsilon the count's
        Laplace noise is drawn with, or the Gaussian's sigma^2.
    rho : float or None
        Gaussian: the rho the count spends (part of the release's rho).
    value : float or None
        The noisy count (a DP quantity, public once made); None before it is made.
    """

    share: float
    noise: str
    scale: float
    rho: float | None
    value: float | None


@dataclass(frozen=True)
class SecondRelease:
    """Release two of the automatic mode in 3-D (docs/privacy.md section
    4.10): discrete Laplace counts of ``fine``^d finer cells inside release
    one's dense span cells, chosen from release one alone, and the keep rule
    that splits a span only where its parts lie side by side
    (:mod:`dpdbscan.post.sidebyside`). Release one (the DP count and the
    histogram) spends ``1 - share`` of the stated epsilon, release two
    ``share``: the pair is the one release the accountant is charged.

    Attributes
    ----------
    share : float
        Release two's share of the stated epsilon.
    epsilon : float
        The epsilon its discrete Laplace noise is drawn with (one count a
        fine cell; a row is in at most one: sensitivity 1), rounded down.
    fine : int
        f: each selected cell of release one is split into f^d fine cells.
    select_sds, keep_sds, keep_top, cover, mass_share, mass_sds : float
        The rule's constants (:mod:`dpdbscan.post.sidebyside`).
    noise : str
        Release two's noise: "discrete" (Laplace, event level, at
        ``epsilon``) or "gaussian" (person level: the discrete Gaussian at
        ``sigma2``, ``share`` of the release's rho; docs/privacy.md 4.10).
    sigma2 : float
        With Gaussian noise, sigma^2 of one fine cell's noise: L2^2 / (2 rho
        of release two), L2 = sqrt(k) m as release one's (0 for Laplace).
    rho : float
        With Gaussian noise, the rho release two spends (0 for Laplace).
    """

    share: float
    epsilon: float
    fine: int
    select_sds: float
    keep_sds: float
    keep_top: float
    cover: float
    mass_share: float
    mass_sds: float
    noise: str
    sigma2: float
    rho: float

    @property
    def sd(self) -> float:
        """The standard deviation the keep rule measures release two's counts
        in: sqrt 2 / epsilon (discrete Laplace), sigma (Gaussian)."""
        if self.noise == "gaussian":
            return math.sqrt(self.sigma2)
        return math.sqrt(2.0) / self.epsilon


@dataclass(frozen=True)
class ReleaseSpec:
    """The one release that spends the budget, decided from public inputs.

    The delta the release spends, and how it splits between the noise and
    the stability histogram's threshold, follow from the histogram and the
    noise (:func:`split_delta`): :attr:`delta_spent`, :attr:`delta_threshold`.

    Attributes
    ----------
    grid : Grid
        The public grid of the cells counted.
    histogram : {"dense", "sparse", "stability"}
        Which DP histogram counts them (:mod:`dpdbscan.release.histograms`):
        every cell of the grid, the paper's linear-time sparse one, or the
        (epsilon, delta) stability histogram.
    theta : float
        Release threshold of a truncating histogram (-inf for dense).
    noise : NoiseSpec
        The noise's family and calibration.
    units : UnitBound or None
        None: each row is its own privacy unit.
    unit_choice : UnitChoice or None
        With ``max_cells_per_unit="auto"``: how k was chosen (this release is
        one of the candidates', its noise at the budget the choice left).
    size_estimate : SizeEstimate or None
        The automatic mode without a guess of n: the DP count that sized
        the grid (its noise at the budget the count left).
    second : SecondRelease or None
        The automatic mode in 3-D from a DP count of 6,000: release two
        (:class:`SecondRelease`), whose share of epsilon the histogram's
        noise leaves; None otherwise.
    """

    grid: Grid
    histogram: str
    theta: float
    noise: NoiseSpec
    units: UnitBound | None
    unit_choice: UnitChoice | None
    size_estimate: SizeEstimate | None
    second: SecondRelease | None

    @property
    def delta_spent(self) -> float:
        """The delta the release spends (0 for a pure epsilon-DP histogram)."""
        return self.noise.delta if (self.histogram == "stability" or self.noise.kind == "gaussian") else 0.0

    @property
    def delta_threshold(self) -> float:
        """The part of it the stability histogram's threshold spends: the
        probability that a cell only one unit occupies is released (0 for
        the dense and sparse histograms)."""
        return split_delta(self.histogram, self.noise.kind, self.noise.delta)[1]


def split_delta(histogram: str, noise: str, delta: float) -> tuple[float, float]:
    """(the delta the noise spends, the delta the threshold spends) of a
    release stated with ``delta``. Gaussian noise spends all of it, or half
    with the stability histogram, whose threshold spends the other half;
    Laplace noise spends none, and the stability histogram's threshold all
    of it. The dense and sparse histograms have no threshold that spends
    delta."""
    if noise == "gaussian":
        for_noise = delta / 2 if histogram == "stability" else delta
        return for_noise, delta - for_noise
    return 0.0, delta if histogram == "stability" else 0.0


@dataclass(frozen=True)
class SecondSpend:
    """What the automatic mode's release two spent (docs/privacy.md 4.10),
    kept by the model as a fact of its release (the file's
    ``privacy.second``), whether or not its spans still carry release two's
    record (:func:`dpdbscan.model.with_params` may leave the split out: the
    budget was spent all the same).

    Attributes
    ----------
    share : float
        Release two's share of the release's epsilon (Laplace) or rho
        (Gaussian); the pair spends the stated epsilon (and rho) together.
    noise : {"discrete", "gaussian"}
        Release two's noise.
    scale : float
        Its parameter, as :attr:`NoiseSpec.scale`: the epsilon its discrete
        Laplace noise is drawn with, or the discrete Gaussian's sigma^2.
    rho : float or None
        Gaussian: the rho release two spends (part of the release's rho).
    """

    share: float
    noise: str
    scale: float
    rho: float | None


@dataclass(frozen=True)
class ReleaseInfo(TypedNoiseParameter):
    """The public facts of a release that its spans refer to.

    Attributes
    ----------
    grid : Grid
        The grid of the noisy histogram (the cells that were counted).
    histogram : {"dense", "sparse", "stability"}
    theta : float
        Release threshold (-inf for dense).
    noise : str
        The noise's kind ("discrete", "laplace", "gaussian").
    noise_scale : float
        The noise's parameter: the epsilon one count's Laplace noise is
        drawn with (rounded down), or the Gaussian's sigma^2 (rounded up);
        :attr:`count_epsilon` and :attr:`sigma2` name it by family.
    epsilon, delta : float
        The privacy the release states (delta: what it spends).
    eps, eta, min_samples : float, float, int
        The parameters of the fit that spent the budget (the spans'
        own may differ after a re-parameterisation).
    rho : float or None
        Gaussian noise: the zCDP rho the release spends (its (epsilon,
        delta) is the tight conversion of rho).
    units : UnitBound or None
        The contribution bound per privacy unit; None: each row is its own
        unit (event-level).
    unit_choice : UnitChoice or None
        With ``max_cells_per_unit="auto"``: how k was chosen privately (its
        rho is part of ``rho``).
    size_estimate : SizeEstimate or None
        The automatic mode's DP count of the points, when it sized the
        grid (its share is part of ``epsilon`` / ``rho``).
    second : SecondSpend or None
        What the automatic mode's release two spent, when the release is
        two (its share is part of ``epsilon`` / ``rho``); None: one release.
    """

    grid: Grid
    histogram: str
    theta: float
    noise: str
    noise_scale: float
    epsilon: float
    delta: float
    eps: float
    eta: float
    min_samples: int
    rho: float | None
    units: UnitBound | None
    unit_choice: UnitChoice | None
    size_estimate: SizeEstimate | None
    second: SecondSpend | None

    def _noise_parameter(self) -> tuple[str, float]:
        return self.noise, self.noise_scale


__all__ = [
    "Seed",
    "SpanSpec",
    "NoiseSpec",
    "UnitBound",
    "UnitChoice",
    "SizeEstimate",
    "SecondSpend",
    "SecondRelease",
    "ReleaseSpec",
    "ReleaseInfo",
    "split_delta",
]
