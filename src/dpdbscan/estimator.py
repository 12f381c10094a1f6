"""The scikit-learn style estimator."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal, NoReturn, Self

import numpy as np
from numpy.typing import ArrayLike

from .estimatorbase import EstimatorBase
from .exceptions import PrivacyLeakWarning, private_note, renamed
from .geometry.projection import check_lonlat_names
from .ledger import Ledger, Reservation, release_cost
from .model import SpanModel, guarantee
from .model.describe import SEEDED_RECORD
from .model.record import predict_rows
from .params.parameters import PARAMETERS, check_units, grid_eta
from .params.specs import ReleaseSpec, Seed
from .params.validation import check_array, check_bounds, check_positive, standardised_note
from .pipeline import fit as fit_release
from .pipeline import refuse_lazy_text_reads
from .plan.autoplan import place_extent
from .plan.outlook import Forecast
from .plan.resolve import forecast_of, validated
from .prepare import Points, Source, in_memory, prepare, public_box, read_length
from .prepare.clipping import (
    clipping_counts,
    counted_clipping,
    drop_outside_step,
    most_outside,
    outside_warning,
)
from .release.accountant import Accountant
from .release.backends import Backend, NumpyBackend, resolve_backend
from .release.backends.base import PointsInput
from .traces import Stops, TripEnds


class DPDBSCAN(EstimatorBase):
    """Differentially private DBSCAN that publishes cluster spans.

    The release is a set of spans, unions of grid cells, that classify any
    point; labels of the training points are *not* a DP release (the paper
    proves no useful DP algorithm can publish them).

    Parameters
    ----------
    eps : float or "auto", default=0.5
        DBSCAN radius alpha. "auto": one release at a base resolution chosen
        from public inputs (the bounds, ``max_cells``), then eps chosen from
        it without labels (docs/parameters.md); no extra budget.
    min_samples : int or "auto", default=5
        The user's non-private MinPts (a point counts itself, as in
        scikit-learn). "auto": chosen from the release (with ``eps``).
    selection : {"levels", "one-eps", "flat"}, default="levels"
        With ``min_samples="auto"``: "levels" takes each cluster at its own
        level of the release's density tree (its own MinPts at the chosen
        eps; HDBSCAN's excess of mass) and, at event level in 2-D and 3-D
        outside the geographic mode, a cluster that the chosen eps keeps
        only a peak of, or misses, at a larger candidate eps where one span
        holds it (its own eps); "one-eps" every span at the chosen eps;
        "flat" one (eps, MinPts) for all. Post-processing of the same
        release: no extra budget. The model records each span's level and
        eps (``spans_.auto["levels"]``) and the guarantee states each
        span's (docs/parameters.md).
    epsilon : float, default=1.0
        Privacy budget.
    bounds : tuple (lower, upper), default=None
        Public bounds of the data domain: scalars or one value per feature.
        If omitted they are taken from the data with a ``PrivacyLeakWarning``,
        which voids the guarantee. Points outside are clipped into the box
        (or dropped: ``outside``) and rows with NaN/inf are dropped (a
        per-record rule; docs/privacy.md). When most rows lie outside, ``fit``
        says so after the release (a ``PrivateNoteWarning``: a private note,
        the command line's words), with either backend.
    outside : {"clip", "drop"}, default="clip"
        A point outside the public ``bounds``: clipped onto the box's edge,
        or dropped (``dpdbscan fit --outside drop``). Clipped points pile up
        on the edges, where many (GPS fixes at (0, 0), a trip out of town)
        can make a span that is no place; "drop" leaves them out. Each row is
        dropped by its own values and the public box alone, with its unit,
        time and status, before ``events`` and before each unit's
        contribution is bounded, so the guarantee is unchanged
        (docs/privacy.md section 4.1); a ``PrivateNoteWarning`` counts the
        rows dropped. Needs public ``bounds``; with a distributed backend,
        the points as an array in memory (files, data frames and dask
        collections it reads itself are clipped, so "drop" is refused). The
        model records ``metadata["outside"] = "drop"``.
    random_state : None, int or numpy Generator, default=None
        None uses a cryptographically secure generator (the operating
        system's; for large draws OpenSSL's, seeded from it: docs/privacy.md
        4.5). A seed gives reproducible, insecure noise for research and warns.
    core : {"density", "bound"}, default="density"
        The core test, applied to the same DP release (docs/accuracy.md).
        "density": a sub-cell is core when its estimated eps-neighbourhood
        count (a weighted sum of the noisy cell counts) reaches MinPts plus a
        margin of about one standard deviation of its noise, in a cell that
        reads as occupied; core sub-cells whose centres are within eps form a
        span, and ``predict`` labels a point with the span of the nearest core
        centre within eps, as DBSCAN labels border points. One-sided
        guarantee: no span reaches beyond the clusters. "bound": the paper's
        noisy upper bound with its two-sided (rho, tau) sandwich guarantee.
    eta : "auto" or float, default="auto"
        Grid parameter in (0, 4]: cell width ``eta * eps / (4 sqrt(d))``.
        "auto" is eta 4, except in 7-D and 8-D (an event-level fit at a
        fixed eps and MinPts with the density test, delta 0, default theta
        and sub-cells, where the eta-4 release's theta would be 13 or more),
        where the sparse release's cells are twice as wide (the release's
        grid at eta 8; approximation ratio 11): docs/parameters.md, "The
        coarse release of 7-D and 8-D". A number, 4 included, is the grid
        used (approximation ratio 3 + eta). The model records the eta the
        release was made at (``release_.grid.eta``).
    beta : float, default=0.1
        Failure probability of the guarantee. The paper's code used 0.5. With
        ``eps="auto"`` eps is chosen after the noise among c candidates, so
        each candidate's margins take beta / c and the guarantee, a union
        bound over them, keeps 1 - beta (``spans_.spec.beta`` is then beta / c).
    histogram : {"auto", "dense", "sparse", "stability"}, default="auto"
        Naive Laplace histogram over all cells, the linear-time sparse one
        (Algorithm 2) or the (epsilon, delta) stability histogram. "auto"
        picks from public quantities only: dense when |X| <= 2**23 cells
        (in 4-D to 8-D at a fixed ``eps`` and ``min_samples``, event level,
        ``delta=0`` and ``core="density"``: only while kappa <= 256, that is
        never at the default ``eta``), otherwise sparse (stability if
        ``delta > 0``).
    delta : float, default=0.0
        The delta of an (epsilon, delta)-DP release: needed by Gaussian noise
        (person-level releases) and by the stability histogram ("auto" may
        pick it); must be below 0.01. Say 1e-6, far below one over the
        number of rows or people.
    noise : {"auto", "discrete", "laplace", "gaussian"}, default="auto"
        Exact discrete Laplace (integer arithmetic), the paper's continuous
        Laplace in floating point, or the exact discrete Gaussian (needs
        ``delta > 0``; calibrated through zCDP, docs/privacy.md). "auto":
        discrete Laplace when each row is its own unit, Gaussian when
        ``fit`` is given ``units`` (its noise grows as sqrt(k) with the cells
        a unit may add to, Laplace's as k).
    max_cells_per_unit : int or "auto", default=None
        Person-level releases (``fit(X, units=...)``): at most this many
        cells k count each unit's points, chosen among the cells the unit
        occupies by ``cell_choice``. Required with units. "auto" chooses k
        privately with the exponential mechanism, for 10% of the budget's
        zCDP rho, among public candidates (1, 2^(1/4), 2^(1/2), ... up to
        the grid's cells), favouring the one that maximises the signal to
        noise of the cells most units visit (Gaussian noise only; the
        release records the choice; docs/parameters.md section 5).
    max_points_per_cell : int, default=1
        Person-level releases: at most this many points m of one unit count
        in a cell. A cell's count is then at most m times the number of
        units seen there (with m = 1: the number of people).
    cell_choice : {"busiest", "uniform"}, default="busiest"
        Person-level releases: which k cells a unit with more than k keeps:
        its busiest (the cells where it has the most points, ties at random)
        or k at random. Each unit's choice reads its own rows only, so the
        guarantee is the same either way (docs/privacy.md); the busiest
        cells keep the places a unit returns to (docs/parameters.md).
    events : Stops or TripEnds, default=None
        Person-level releases of places, not passage: count each unit's
        stops (``Stops(radius, duration)``: runs of its points within
        ``radius`` of their first point for at least ``duration`` seconds,
        one point each) or its trip ends (``TripEnds("pickup")``, from a 0/1
        ``status``, or ``TripEnds("pickup", values=("free", "hired"))``)
        instead of all its rows, before its contribution is bounded.
        Needs ``units`` and ``times`` in ``fit`` (and ``status``
        for trip ends); each unit's events come from its own rows alone, so
        the unit-level guarantee is unchanged (docs/places.md,
        docs/privacy.md section 1). ``radius`` is in the data's units
        (km, or text such as "100m", with :func:`fit_lonlat`).
    theta : float, default=None
        Threshold of the sparse histogram; by default the smallest value that
        releases at most ``max_empty_cells`` empty cells in expectation over
        the grid and at most 32 among the kappa cells within ``eps`` of a
        cell (from 5-D up at coarse ``eps`` the second is the larger), and,
        at coarse 6-D to 8-D grids where those leave many pairs of released
        empty cells within reach of each other, at most 2**17 over the grid
        (docs/parameters.md section 1).
    max_empty_cells : float, default=2**20
        Public cap on the empty cells a sparse release holds in expectation,
        used to choose theta.
    max_cells : int, default=2**20
        Automatic mode only: public cap on the cells of its one release.
    n_expected : float, default=None
        Your own public guess of the number of points. The automatic mode
        sizes its base release to it (about ``n_expected * epsilon / 0.3``
        cells, at most ``max_cells``), and :meth:`forecast` reports which
        cluster densities it can detect. When it is None, an event-level
        automatic fit (not ``fit_lonlat``) spends 1% of its budget on a DP
        count of the points and sizes its base for the count where it is
        below 6,000 in 1-D and 2-D, above 20,000 in 3-D and up
        (docs/privacy.md section 1.7a); otherwise 20,000 points are
        assumed. A fit also reads it (before anything is counted) to warn
        when a dense release will likely merge clusters through its noise
        (:meth:`dpdbscan.plan.outlook.Forecast.merge_note`; without it, the
        dense release's own noisy total is used after the release). Nothing
        else uses it.
    raise_min_samples : bool, default=True
        Bound test only: the paper's practical rule (core iff UB~ >= MinPts +
        tau). False gives the theoretical rule (UB~ >= MinPts).
    subcells : "auto" or int, default="auto"
        Core-ness and merging are decided on sub-cells of width w / subcells;
        the histogram stays on cells of width w. Post-processing: no privacy
        cost. "auto" is 2 for d <= 3 and 1 above, where the 2^d sub-cells per
        cell would cost more time than they give. 1 is the paper's procedure.
    margin : "auto", "chernoff", "paper", "pointwise" or float, default="auto"
        Density test: the number c of the margin c sigma(q) ("auto" = 1), or
        union ("chernoff") or pointwise ("pointwise") Chernoff bounds, for
        study; every rule is raised where needed (the empty-space guard) so
        that, with probability >= 1 - beta, no sub-cell with no point in reach
        is core. Bound test: how Gamma is bounded,
        Chernoff with the exact noise MGF ("auto") or the paper's Laplace
        concentration bound ("paper").
    border : "auto" or float, default="auto"
        ``predict`` also gives a point within this distance the span of the
        nearest core sub-cell centre (density test; "auto" = eps, DBSCAN's
        border rule, and 1.5 eps on the coarse release of 7-D/8-D, whose
        cells' half-diagonal is eps) or core sub-cell (bound test; "auto" = half a sub-cell's
        diameter, ``eta * eps / (8 * subcells)``; 0 is the paper's cell
        membership). Labels only: the spans are unchanged.
    paper procedure:
        ``core="bound", subcells=1, margin="paper", border=0, beta=0.5``
        (add ``noise="laplace"`` for its floating-point noise);
        docs/accuracy.md compares it with the defaults.
    accountant : object with ``check`` and ``spend``, default=None
        A budget accountant (ours or diffprivlib's).
    ledger : dpdbscan.Ledger, default=None
        A dataset's lifetime budget in a ledger file
        (``Ledger(path, dataset)``, made by ``Ledger.create`` or ``dpdbscan
        ledger init``). ``fit`` reserves the release's cost in the file
        before the mechanism reads a point, atomically with the check
        against the budget, and raises ``BudgetExceeded`` (nothing released,
        no fitted attributes) when the total would exceed it. A constructor
        parameter like ``accountant``, and never changed by ``fit``: the
        object is an immutable handle (a path and a name) and the budget
        lives in the file, so ``clone`` and ``set_params`` copy the handle
        and every copy charges the same budget; a grid search's fits are all
        counted. Needs public ``bounds``.
    backend : "numpy", "dask" or an object with ``count``, default="numpy"
        Where the per-cell counts are computed.

    What is protected: without ``units`` each row (event-level: one row more
    or less changes the release's probabilities by at most a factor
    e^epsilon, plus delta). A person with many rows is protected only by
    group privacy, which is weak: pass ``units`` (one id per row, e.g. the
    cab or user) to protect each person, whatever their number of rows.

    Attributes
    ----------
    spans_ : SpanModel
        The DP release.
    histogram_ : NoisyHistogram
        The released noisy histogram (part of the release).
    noise_margin_, noise_margin_upper_, tau_, kappa_, theta_, n_cells_, approx_ratio_, beta_ :
        Margins (bound test: Gamma_low and Gamma_up; density test: the largest
        m(q) and None), additive error tau = Gamma_low + Gamma_up (bound test;
        None for density), kappa (the cells within eps of one cell of the
        histogram grid, the paper's kappa; ``guarantee_["kappa_q"]`` is the most
        within eps of one sub-cell), sparse threshold, |X|, approximation ratio
        and failure probability.
    guarantee_ : dict
        The guarantee of the core test and the privacy parameters.
    budget_spent_ : tuple (epsilon, delta)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        The column names of ``X`` when it was a DataFrame whose columns all
        have string names (scikit-learn's convention; absent otherwise).
        ``predict`` then wants the same names in the same order.

    Notes
    -----
    Scaling is part of the mechanism. The grid is laid over ``bounds`` in the
    units ``fit`` receives, so a scaler fitted on the private data (e.g.
    ``make_pipeline(StandardScaler(), DPDBSCAN(..., bounds=(-3, 3)))``) puts
    every point where the data's own mean and standard deviation say: one
    row moves every other row's cell, and the release has no DP guarantee.
    Pass the raw data with public bounds in its own units (the box does the
    scaling), or scale by public constants, e.g.
    ``FunctionTransformer(lambda X: X / public_scale)``. ``fit`` warns
    (``PrivacyLeakWarning``, after the release, which it does not change) when
    every column has mean 0 and standard deviation 1 to within 1e-6.

    Why no ``labels_``: scikit-learn's clusterers label the training points
    after ``fit``. Here those labels are not part of the release: the paper
    proves that no useful DP algorithm can publish them, so the release is the
    spans (``spans_``), which label any point with ``predict``.

    Time O(n log n) for counting (sort) or O(n) (bincount on small grids),
    then O(|X|) for the dense histogram or O(n) for the sparse one; kappa
    neighbour sums per candidate cell. Bound test: with probability
    >= 1 - beta the spans are (rho, tau)-approximate (Definition "Sandwich Quality Guarantee for
    Spans").

    References
    ----------
    Qiu and Yi, "Approximate DBSCAN under Differential Privacy".
    """

    # old names of attributes, kept for one release (FutureWarning)
    gamma_ = renamed("gamma_", "noise_margin_")
    gamma_upper_ = renamed("gamma_upper_", "noise_margin_upper_")
    rho_ = renamed("rho_", "approx_ratio_")

    def __init__(
        self,
        eps: float | Literal["auto"] = 0.5,
        *,
        min_samples: int | Literal["auto"] = 5,
        epsilon: float = 1.0,
        bounds: tuple[ArrayLike, ArrayLike] | None = None,
        outside: Literal["clip", "drop"] = "clip",
        random_state: Seed | None = None,
        eta: float | Literal["auto"] = "auto",
        beta: float = 0.1,
        histogram: Literal["auto", "dense", "sparse", "stability"] = "auto",
        delta: float = 0.0,
        noise: Literal["auto", "discrete", "laplace", "gaussian"] = "auto",
        theta: float | None = None,
        max_empty_cells: float = 2**20,
        max_cells: int = 2**20,
        n_expected: float | None = None,
        selection: Literal["levels", "one-eps", "flat"] = "levels",
        raise_min_samples: bool = True,
        subcells: int | Literal["auto"] = "auto",
        margin: Literal["auto", "chernoff", "paper", "pointwise"] | float = "auto",
        border: float | Literal["auto"] = "auto",
        core: Literal["density", "bound"] = "density",
        max_cells_per_unit: int | Literal["auto"] | None = None,
        max_points_per_cell: int = 1,
        cell_choice: Literal["busiest", "uniform"] = "busiest",
        events: Stops | TripEnds | None = None,
        accountant: Accountant | None = None,
        ledger: Ledger | None = None,
        backend: Backend | Literal["numpy", "dask"] | None = "numpy",
    ) -> None:
        self.eps = eps
        self.min_samples = min_samples
        self.epsilon = epsilon
        self.bounds = bounds
        self.outside = outside
        self.random_state = random_state
        self.eta = eta
        self.beta = beta
        self.histogram = histogram
        self.delta = delta
        self.noise = noise
        self.theta = theta
        self.max_empty_cells = max_empty_cells
        self.max_cells = max_cells
        self.n_expected = n_expected
        self.selection = selection
        self.raise_min_samples = raise_min_samples
        self.subcells = subcells
        self.margin = margin
        self.border = border
        self.core = core
        self.max_cells_per_unit = max_cells_per_unit
        self.max_points_per_cell = max_points_per_cell
        self.cell_choice = cell_choice
        self.events = events
        self.accountant = accountant
        self.ledger = ledger
        self.backend = backend

    def _validated(self, stacklevel: int = 3, unit_name: str | None = None) -> dict[str, Any]:
        """Every parameter checked against the one table (dpdbscan.params.parameters)."""
        names = [n for n in PARAMETERS if n != "bounds"]
        # a warning (a weak epsilon) points at the line that called fit or forecast
        return validated({n: getattr(self, n) for n in names}, stacklevel=stacklevel, unit_name=unit_name)

    def fit(
        self,
        X: PointsInput,
        y: object = None,
        *,
        units: ArrayLike | str | None = None,
        times: ArrayLike | None = None,
        status: ArrayLike | None = None,
        unit_name: str | None = None,
    ) -> Self:
        """Release DP spans of ``X``. Returns self.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or files/dask objects
            The private points. With a distributed backend: paths or globs of
            Parquet/CSV files, dask DataFrames or arrays.
        y : ignored
        units : array-like of shape (n_samples,), default=None
            The privacy unit of each row (a person, a device, a cab):
            numbers, text or bytes; a row with a missing unit (None, NaN,
            pandas' NA) is dropped. Each id is read on its own, never through
            a type chosen from the others: a numpy, pandas or pyarrow array
            by its dtype, a list or an object array id by id (``1`` and
            ``'1'`` are two units; :mod:`dpdbscan.files.unitids`). The release
            then protects each unit with all its rows (person-level), after
            bounding its contribution
            (``max_cells_per_unit``, ``max_points_per_cell``). With the Dask
            backend: the name of the unit column. None: each row is its own
            unit (event-level).
        times : array-like of shape (n_samples,), default=None
            With ``events``: each row's time (unix seconds, ISO 8601 text, or
            timestamps); a row whose time is missing or unreadable is dropped.
        status : array-like of shape (n_samples,), default=None
            With ``events=TripEnds(...)``: each row's 0/1 status (0 free,
            1 carrying; booleans and the text true/false too), or one of the
            two codes of ``TripEnds(values=(free, carrying))``; any other
            value drops the row. Numbers of ``times`` are unix seconds:
            divide milliseconds by 1000 (or give timestamps).
        unit_name : str, default=None
            The name of the unit column, as ``dpdbscan fit --unit taxi``
            gives it: the model records it (``metadata["unit_column"]``;
            the summary, the GeoJSON, the picture's title and the map's
            legend say "each unit (column taxi)"), and a warning names one
            unit by it. Only a name you give is recorded (and a Dask
            column's name, ``units="taxi"``): never a pandas Series' name,
            which may be text of the data (``pd.read_csv`` of a file without
            a header names its columns by the first record).
        """
        return self._fit(X, {}, units, times, status, unit_name=unit_name)

    def _fit(
        self,
        X: PointsInput,
        metadata: dict[str, Any],
        units: Any = None,
        times: Any = None,
        status: Any = None,
        command: str = "DPDBSCAN.fit",
        unit_name: str | None = None,
    ) -> Self:
        """:meth:`fit`, with public ``metadata`` for the model (fit_lonlat's
        projection): the model is made once, with everything it records.
        ``command``: what the ledger records as the caller; ``unit_name``:
        the unit column's name as the caller gave it."""
        name = _unit_name(units, unit_name)
        p = self._validated(stacklevel=4, unit_name=name)  # fit -> _fit -> here
        if p["ledger"] is not None and self.bounds is None:
            raise ValueError(
                "a ledger charges differentially private releases, and bounds taken from the data "
                "void the guarantee: give public bounds=(lower, upper)"
            )
        if p["outside"] == "drop" and self.bounds is None:
            raise ValueError(
                "outside='drop' needs public bounds=(lower, upper), the box the points are kept "
                "inside (bounds taken from the data hold every point)"
            )
        _check_events(p, units, times, status, geo="projection" in metadata)
        refuse_lazy_text_reads(X, units, times, status)
        names = _feature_names(X)
        backend = resolve_backend(p["backend"])
        door = None if isinstance(backend, NumpyBackend) else backend
        said: list[str] = []
        source = _source(p, X, said, times, status, bounds=self.bounds, units=units)
        if p["outside"] == "drop" and not in_memory(source, door):
            # public: the kind of X and the backend
            raise ValueError(
                "outside='drop' drops each row outside the box with the points in memory; a "
                "distributed backend reads paths, data frames and dask collections itself and "
                "clips their rows onto the box: pass X as a numpy array, or leave outside='clip'"
            )
        pts = prepare(source, eta=grid_eta(p["eta"]), backend=door, stacklevel=3)  # fit -> _fit -> prepare
        for note in said:
            private_note(note, stacklevel=3)  # fit -> _fit -> here
        return self._release(
            pts,
            p,
            backend,
            {**metadata, **pts.meta, **_outside_record(p), **_unit_record(name)},
            names,
            stacklevel=4,
            command=command,
            times=pts.times,
            status=pts.status,
        )

    def _release(
        self,
        pts: Points,
        p: dict[str, Any],
        backend: Backend,
        metadata: dict[str, Any],
        names: np.ndarray | None = None,
        stacklevel: int = 3,
        command: str = "DPDBSCAN.fit",
        times: Any = None,
        status: Any = None,
    ) -> Self:
        """Release the prepared points ``pts`` (:func:`dpdbscan.prepare.prepare`)
        and set the fitted attributes; ``stacklevel`` places the release's
        warnings (as for :func:`warnings.warn`, counted from here);
        ``command``: what the ledger records as the caller; ``times`` and
        ``status``: each row's, for ``events`` (the pipeline makes them)."""
        epsilon, X, units, n_features = p["epsilon"], pts.X, pts.units, pts.d
        lower, upper = pts.lower, pts.upper
        if p["random_state"] is not None:
            # a research seed: the model records it, so its files say "seeded: not a private
            # release" as the command line's do; secure fits record nothing, as before
            metadata = {**metadata, "randomness": SEEDED_RECORD}
        charge = _LedgerCharge(p["ledger"], command, p, lower, upper, metadata, units is not None)
        try:
            model = fit_release(
                X,
                lower,
                upper,
                p,
                backend=backend,
                accountant=self.accountant,
                metadata=metadata,
                units=units,
                times=times,
                status=status,
                before_release=charge.reserve,
                stacklevel=stacklevel,
            )
        except BaseException:
            charge.failed()
            raise
        charge.written()
        self.spans_ = model
        self.histogram_ = model.histogram
        s = model.spans
        self.noise_margin_ = s.noise_margin
        self.noise_margin_upper_ = s.noise_margin_upper
        self.tau_ = s.tau
        self.kappa_ = model.release.grid.kappa
        self.theta_ = model.release.theta
        self.n_cells_ = model.release.grid.n_cells
        self.approx_ratio_ = s.approx_ratio
        self.beta_ = model.spec.beta
        self.guarantee_ = guarantee(model)
        self.budget_spent_ = (epsilon, model.release.delta)
        self.n_features_in_ = n_features
        # scikit-learn's convention: the names of the columns fitted, only
        # when every column has a string name (and none from an earlier fit)
        if names is not None and names.size == n_features:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        # read from the private data: said only after the release is made and
        # stored, so that it cannot change whether a release happens or what it holds
        note = standardised_note(X) if isinstance(X, np.ndarray) else None
        if note:
            warnings.warn(note, PrivacyLeakWarning, stacklevel=stacklevel - 1)
        outside = _outside_note(pts, backend)
        if outside:
            private_note(outside, stacklevel=stacklevel)
        return self

    def forecast(
        self,
        n_expected: float | None = None,
        *,
        n_features: int | None = None,
        n_units_expected: float | None = None,
        eps_ladder: Sequence[float] | None = None,
    ) -> Forecast:
        """What a fit with these parameters would detect, before any budget
        is spent: the margin, the noise of one neighbourhood estimate, the
        smallest neighbourhood count a core sub-cell needs, and a sentence on
        which cluster densities are detectable (a
        :class:`dpdbscan.plan.outlook.Forecast`).

        Public inputs only: ``bounds`` are required, and ``n_expected`` is
        your own guess of the number of points (the forecast reads no
        data; without it, an automatic fit may count the points privately,
        see ``n_expected`` above). ``n_features`` is needed only when the bounds are two scalars.
        With ``eps="auto"`` the forecast is for the base release;
        ``min_samples="auto"`` is forecast at its smallest candidate.

        Person-level (``max_cells_per_unit`` given, as for ``fit(X,
        units=...)``): the forecast's ``units``
        (:class:`dpdbscan.plan.detection.UnitForecast`) give the noise per
        cell, the units one cell must hold to be core with probability
        >= 1 - beta, what each cell of a cluster must hold, and, against
        ``n_units_expected`` (your own guess of the number of units), how far
        a unit may roam and still be seen, at each eps of ``eps_ladder``
        (default: eps x 1/4 .. x 4).

        This plans the release of :meth:`fit`; for longitude/latitude
        points forecast with :func:`forecast_lonlat`, which plans what
        :func:`fit_lonlat` does (its box in km and its place prior).
        """
        return self._forecast(n_expected, n_features, n_units_expected, eps_ladder, places=None)

    def _forecast(
        self,
        n_expected: float | None,
        n_features: int | None,
        n_units_expected: float | None,
        eps_ladder: Sequence[float] | None,
        *,
        places: float | None,
    ) -> Forecast:
        """:meth:`forecast`, with the place prior of a geographic fit
        (``places``, :func:`dpdbscan.plan.autoplan.place_extent`)."""
        p = self._validated(stacklevel=4)
        if self.bounds is None:
            raise ValueError("forecast needs public bounds=(lower, upper): it reads no data")
        if n_expected is not None:
            n_expected = check_positive("n_expected", n_expected)
        else:
            n_expected = p.get("n_expected")
        if n_units_expected is not None:
            n_units_expected = check_positive("n_units_expected", n_units_expected)
        if eps_ladder is not None:
            eps_ladder = [check_positive("eps_ladder", e) for e in eps_ladder]
        lower, upper = check_bounds(self.bounds, n_features)
        return forecast_of(
            p,
            lower,
            upper,
            n_expected=n_expected,
            n_units_expected=n_units_expected,
            eps_ladder=eps_ladder,
            places=places,
        )

    @property
    def labels_(self) -> NoReturn:
        """Not available: see the class docstring ("Why no labels_")."""
        raise AttributeError(
            "DPDBSCAN has no labels_: labels of the training points are not part of the DP "
            "release (no useful DP algorithm can publish them; Qiu and Yi prove it). The release "
            "is spans_; label any points with predict(X), or fit_predict(X), knowing that the "
            "labels of private points are not covered by the privacy guarantee if published."
        )

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Span id of each point of ``X`` (-1 = noise), from the spans alone:
        one label a row. In a list of rows, a row of another length than the
        fit's is labelled -1 and counted in a note
        (:class:`~dpdbscan.PrivateNoteWarning`); an array of another width
        is refused."""
        if not hasattr(self, "spans_"):
            raise _not_fitted()
        _check_feature_names(getattr(self, "feature_names_in_", None), _feature_names(X))
        X = predict_rows(X, self.n_features_in_)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but DPDBSCAN is expecting "
                f"{self.n_features_in_} features as input."
            )
        return self.spans_.predict(X)

    def fit_predict(
        self, X: ArrayLike, y: object = None, *, units: ArrayLike | None = None, unit_name: str | None = None
    ) -> np.ndarray:
        """Fit (with ``units`` and ``unit_name`` as in :meth:`fit`), then
        label ``X`` with the released spans.

        These labels are post-processing of the release applied to the user's
        own data; publishing them is not covered by the DP guarantee.
        """
        return self.fit(X, units=units, unit_name=unit_name).predict(X)


def fit_lonlat(
    lonlat: ArrayLike,
    *,
    bounds: Sequence[float],
    eps: float | str,
    min_samples: int = 5,
    epsilon: float = 1.0,
    ref_lat: float | None = None,
    units: ArrayLike | None = None,
    times: ArrayLike | None = None,
    status: ArrayLike | None = None,
    unit_name: str | None = None,
    **kwargs: Any,
) -> SpanModel:
    """Release DP spans of longitude/latitude points, the Python side of
    ``dpdbscan fit --geo``.

    Parameters
    ----------
    lonlat : array of shape (n, 2)
        Longitude and latitude in degrees (private).
    bounds : (lon_min, lat_min, lon_max, lat_max)
        The public box in degrees (the GeoJSON bbox order).
    eps : float or str
        The DBSCAN radius: a length such as ``"50m"`` or ``"0.05km"``, a
        number of km, or "auto".
    min_samples, epsilon, **kwargs
        As for :class:`DPDBSCAN` (``random_state``, ``core``, ``ledger``,
        ``outside``, ...). ``outside="drop"`` drops each point outside the
        box in degrees instead of clipping it onto the edge, as ``dpdbscan fit
        --geo --outside drop`` does (before ``events``, so a stop is made of
        the unit's other rows).
    ref_lat : float, optional
        The public latitude where the projection is exact (default: the box's
        centre).
    units : array-like of shape (n,), optional
        The privacy unit of each row, as for :meth:`DPDBSCAN.fit` (with
        ``max_cells_per_unit`` among the keyword arguments).
    unit_name : str, optional
        The unit column's name, recorded as :meth:`DPDBSCAN.fit` records it
        (``--unit`` of the command line); a pandas Series' name is not.
    times, status : array-like of shape (n,), optional
        With ``events=Stops("100m", "5min")`` or ``events=TripEnds(...)``
        among the keyword arguments: as for :meth:`DPDBSCAN.fit`. The stop
        radius is a length on the ground ("100m") or a number of km.

    Returns
    -------
    SpanModel
        With the projection and the degree bounds in its metadata, so that its
        GeoJSON and pictures are in lon/lat, ``predict_lonlat`` takes degrees,
        and ``dpdbscan info``/``predict``/``plot``/``map`` treat it as a
        geographic model. The projection's origin is the centre of the public
        box, never of the data.
    """
    if not (isinstance(bounds, (tuple, list)) and len(bounds) == 4):
        raise ValueError(
            f"bounds must be (lon_min, lat_min, lon_max, lat_max) in degrees, got bounds={bounds!r}"
        )
    km = read_length(eps, geo=True, auto=True)
    est = DPDBSCAN(km, min_samples=min_samples, epsilon=epsilon, **kwargs)
    name = _unit_name(units, unit_name)
    p = est._validated(unit_name=name)
    _check_events(p, units, times, status, geo=True)
    refuse_lazy_text_reads(lonlat, units, times, status)
    names = _feature_names(lonlat)
    if names is not None:
        # public column names that say latitude first: refused before a value is read
        check_lonlat_names(list(names), fix="fit_lonlat(df[['{lon}', '{lat}']], ...)")
    ragged = [0]
    X = check_array(lonlat, width=2, ragged=ragged, every_row=True)
    if ragged[0]:
        private_note(f"{ragged[0]:,} row(s) of lonlat of another length than 2 are dropped", stacklevel=2)
    if X.shape[1] != 2:
        raise ValueError(f"lonlat must have 2 columns (longitude, latitude), got {X.shape[1]}")
    said: list[str] = []
    box = [float(v) for v in bounds]
    source = _source(
        p, X, said, times, status, bounds=box, flat_bounds=True, geo=True, ref_lat=ref_lat, units=units
    )
    pts = prepare(source, eta=grid_eta(p["eta"]))
    for note in said:
        private_note(note, stacklevel=2)
    metadata = {
        **pts.meta,
        "bounds_source": "public (fit_lonlat bounds)",
        "eps_text": str(eps),
        **_outside_record(p),
        **_unit_record(name),
    }
    est.bounds = (pts.lower, pts.upper)  # the box the model records, in km
    return est._release(
        pts,
        p,
        resolve_backend(p["backend"]),
        metadata,
        command="fit_lonlat",
        times=pts.times,
        status=pts.status,
    ).spans_


def forecast_lonlat(
    *,
    bounds: Sequence[float],
    eps: float | str,
    min_samples: int | Literal["auto"] = 5,
    epsilon: float = 1.0,
    ref_lat: float | None = None,
    n_expected: float | None = None,
    n_units_expected: float | None = None,
    eps_ladder: Sequence[float | str] | None = None,
    **kwargs: Any,
) -> Forecast:
    """What :func:`fit_lonlat` with these parameters would detect, before
    any budget is spent: the Python side of ``dpdbscan forecast --geo``.

    The same plan as the fit's: the public box in degrees projected to km
    as :func:`fit_lonlat` projects it, and, as a geographic fit looks for
    places, the place prior of the automatic mode (at person level its base
    release is at the largest eps that draws a place within a kilometre;
    docs/places.md). :meth:`DPDBSCAN.forecast` plans :meth:`DPDBSCAN.fit`,
    which has no such prior, and would forecast another release.

    Public inputs only. ``bounds``, ``eps``, ``ref_lat`` and the keyword
    arguments as for :func:`fit_lonlat`; ``eps_ladder``: lengths ("100m")
    or km; ``n_expected``, ``n_units_expected``: your own guesses, as for
    :meth:`DPDBSCAN.forecast` (lengths in the forecast are km).
    """
    if not (isinstance(bounds, (tuple, list)) and len(bounds) == 4):
        raise ValueError(
            f"bounds must be (lon_min, lat_min, lon_max, lat_max) in degrees, got bounds={bounds!r}"
        )
    box = public_box([float(v) for v in bounds], 2, flat=True, geo=True, ref_lat=ref_lat)
    km = read_length(eps, geo=True, auto=True)
    ladder = None if eps_ladder is None else [float(read_length(e, geo=True)) for e in eps_ladder]
    est = DPDBSCAN(km, min_samples=min_samples, epsilon=epsilon, bounds=(box.lower, box.upper), **kwargs)
    return est._forecast(n_expected, 2, n_units_expected, ladder, places=place_extent(box.meta))


def _source(p: dict[str, Any], X: Any, said: list[str], times: Any, status: Any, **public: Any) -> Source:
    """What the door prepares for :meth:`DPDBSCAN.fit` and :func:`fit_lonlat`:
    ``X`` with the ``public`` choices (the box, the projection, the units);
    with ``events``, the times and status beside it, row for row; with
    ``outside="drop"``, the command line's step that drops each row outside
    the box (:func:`~dpdbscan.prepare.clipping.drop_outside_step`), its
    private note kept in ``said`` for the caller to warn."""
    events = p["events"] is not None
    steps = (drop_outside_step(said.append, "outside='drop'"),) if p["outside"] == "drop" else ()
    return Source(
        X,
        times=times if events else None,
        status=status if events else None,
        transforms=steps,
        **public,
    )


def _outside_record(p: dict[str, Any]) -> dict[str, str]:
    """What the model records of ``outside`` (public: the parameter), as the
    command line records ``--outside drop``: nothing for the default."""
    return {"outside": "drop"} if p["outside"] == "drop" else {}


def _check_events(p: dict[str, Any], units: Any, times: Any, status: Any, *, geo: bool) -> None:
    """The events' public checks (``events=``), before X is looked at: units
    are needed, and each row's time (and status for trip ends); the events'
    radius is resolved in km with ``geo``."""
    check_units(p, units is not None)
    if p["events"] is not None:
        # public: the user's parameters; refused before X is looked at
        p["events"] = p["events"].resolved(geo=geo)
        if times is None:
            raise ValueError("events= needs each row's time: pass times= to fit()")
        if p["events"].needs_status and status is None:
            raise ValueError("events=TripEnds(...) needs each row's 0/1 status: pass status= to fit()")
        if not isinstance(resolve_backend(p["backend"]), NumpyBackend):
            raise ValueError("events= (stops, trip ends) run on the numpy backend only, for now")


class _LedgerCharge:
    """The estimator's side of a ledger (``ledger=``): reserve the release's
    cost when the pipeline has resolved it (before a point is read), mark it
    written once the model is made or failed if the fit raised after
    reserving (it stays counted). Does nothing without a ledger."""

    def __init__(
        self,
        ledger: Ledger | None,
        command: str,
        p: dict[str, Any],
        lower: np.ndarray,
        upper: np.ndarray,
        metadata: dict[str, Any],
        person: bool,
    ) -> None:
        self.ledger, self.command, self.person = ledger, command, person
        skip = ("random_state", "accountant", "ledger", "backend", "events")
        self.params: dict[str, Any] = {
            **{k: v for k, v in p.items() if k not in skip},
            # public: what each unit's rows become before bounding (a record, not the object)
            "events": None if p.get("events") is None else p["events"].record(),
            "randomness": "secure" if p["random_state"] is None else SEEDED_RECORD,
            "bounds": {"lower": [float(v) for v in lower], "upper": [float(v) for v in upper]},
            **{k: metadata[k] for k in ("bounds_degrees", "eps_text") if k in metadata},
        }
        self.reservation: Reservation | None = None

    def reserve(self, release: ReleaseSpec) -> None:
        if self.ledger is None:
            return
        self.reservation = self.ledger.reserve(
            release_cost(release),
            command=self.command,
            params=self.params,
            unit="person" if self.person else "event",
        )

    def written(self) -> None:
        if self.reservation is not None:
            self.reservation.written(())

    def failed(self) -> None:
        if self.reservation is not None:
            self.reservation.failed()


def _outside_note(pts: Points, backend: Backend) -> str | None:
    """The private note when most rows lie outside the public box (the
    command line says it even under --quiet: the release then says little),
    in its words, from the points in memory or from what a distributed
    backend counted (its ``input_counts``); None otherwise. The command
    line's other notes (rows dropped, a few clipped) are not warned: that is
    the documented per-record rule. Read after the release, which it cannot
    change."""
    d = pts.d
    if isinstance(pts.X, np.ndarray):
        c: dict | None = clipping_counts(pts.X, pts.lower, pts.upper) if pts.X.shape[0] else None
    else:
        c = counted_clipping(getattr(backend, "input_counts", None), d)
    if c is None or not most_outside(c):
        return None
    # public names only (a declared header, a Parquet schema, columns=): a
    # DataFrame's own column names are never said, since pd.read_csv of a
    # file without a header names them by its first line, a record (round 18)
    columns = pts.names or pts.read_names
    lower, upper = pts.lower, pts.upper
    check = "bounds=(lower, upper): one value per column of X, in the order of X's columns"
    degrees = pts.meta.get("bounds_degrees") if pts.proj is not None else None
    if degrees is not None:
        # fit_lonlat: the box as the caller gave it, in degrees
        lower, upper = np.asarray(degrees["lower"]), np.asarray(degrees["upper"])
        columns = columns or ["longitude", "latitude"]
        check = "bounds=(lon_min, lat_min, lon_max, lat_max) and that lonlat is longitude first"
    return outside_warning(c, columns or [str(j) for j in range(d)], lower, upper, check)


def _feature_names(X: object) -> np.ndarray | None:
    """The column names of a DataFrame whose columns are all strings
    (scikit-learn's ``feature_names_in_``), else None. Public: the schema."""
    cols = getattr(X, "columns", None)
    if cols is None or not hasattr(X, "iloc"):
        return None
    names = list(cols)
    if not names or not all(isinstance(c, str) for c in names):
        return None
    return np.asarray(names, dtype=object)


def _check_feature_names(fitted: np.ndarray | None, given: np.ndarray | None) -> None:
    """scikit-learn's contract for column names at predict time: the same
    names in the same order as in fit (ValueError otherwise), and a
    UserWarning when only one of fit and predict had names. Public: the
    schema, never the values."""
    if fitted is None and given is None:
        return
    if fitted is None:
        # stacklevel 3: the line that called predict
        warnings.warn(
            "X has feature names, but DPDBSCAN was fitted without feature names", UserWarning, stacklevel=3
        )
        return
    if given is None:
        warnings.warn(
            "X does not have valid feature names, but DPDBSCAN was fitted with feature names",
            UserWarning,
            stacklevel=3,
        )
        return
    if list(fitted) == list(given):
        return
    unseen = [n for n in given if n not in set(fitted)]
    missing = [n for n in fitted if n not in set(given)]
    if unseen or missing:
        parts = (("unseen at fit time", unseen), ("seen at fit time, yet now missing", missing))
        detail = "".join(
            f"Feature names {what}:\n" + "".join(f"- {n}\n" for n in names) for what, names in parts if names
        )
    else:
        detail = "Feature names must be in the same order as they were in fit.\n"
    raise ValueError("The feature names should match those that were passed during fit.\n" + detail)


def _unit_record(name: str | None) -> dict[str, str]:
    """The model's record of the unit column's name (:func:`_unit_name`),
    as the command line's ``--unit`` gives it (``metadata["unit_column"]``:
    the summary, the picture's title, the map's legend and the GeoJSON say
    "each taxi (column taxi)"); nothing without one."""
    return {} if name is None else {"unit_column": name}


def _unit_name(units: Any, unit_name: str | None = None) -> str | None:
    """The unit column's name as the caller typed it: ``unit_name``, or the
    Dask backend's column name (``units="taxi"``); None without units.
    Never a name the units carry (a pandas Series' name): ``pd.read_csv``
    of a file without a header names its columns by the file's first
    record, so such a name may be text of the data, which no release or
    message may quote (docs/privacy.md section 8, round 18). The command
    line records only ``--unit`` too."""
    if unit_name is not None:
        if not isinstance(unit_name, str) or not unit_name:
            got = repr(unit_name) if isinstance(unit_name, str) else type(unit_name).__name__
            raise TypeError(f"unit_name must be a non-empty str (the unit column's name), got {got}")
        if units is None:
            raise ValueError("unit_name names the units= column: give units= too (or leave unit_name out)")
        return unit_name
    return units if isinstance(units, str) and units else None


def _not_fitted() -> Exception:
    from sklearn.exceptions import NotFittedError

    return NotFittedError("This DPDBSCAN instance is not fitted yet. Call 'fit' before 'predict'.")
