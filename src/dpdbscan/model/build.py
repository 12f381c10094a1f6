"""A span model from a release and its spans: the one constructor the
mechanism, the automatic mode and re-parameterisation share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cells.histogram import NoisyHistogram
from ..params.specs import ReleaseInfo, SecondSpend, SizeEstimate, SpanSpec, UnitBound, UnitChoice
from ..post import sidebyside
from ..post.coretests import Spans
from .record import SpanModel


def model_of(
    hist: NoisyHistogram,
    spans: Spans,
    spec: SpanSpec,
    *,
    fit: tuple[float, float, int],
    auto: Mapping[str, Any] | None,
    metadata: Mapping[str, Any],
    rho: float | None,
    units: UnitBound | None,
    unit_choice: UnitChoice | None,
    size_estimate: SizeEstimate | None = None,
    second: Mapping[str, Any] | None = None,
    second_spent: SecondSpend | None = None,
) -> SpanModel:
    """The model of ``spans``, made with ``spec`` from the release ``hist``
    (its grid at the spans' alpha). ``fit`` is (eps, eta, min_samples) of the
    fit that spent the budget; ``auto`` the automatic mode's record;
    ``rho`` and ``units`` the release's zCDP rho (Gaussian noise) and
    contribution bound (None: a row is the unit); ``unit_choice`` how k was
    chosen privately (``max_cells_per_unit="auto"``), else None;
    ``size_estimate`` the automatic mode's DP count of the points, when it
    made one (to size its grid, which the count may leave as it is);
    ``second`` release two's record carried to spans that are no automatic
    choice (:attr:`SpanModel.second`); ``second_spent`` what release two
    spent where the spans carry no record of it (spans at other parameters
    that leave its split out: the release is still two)."""
    eps, eta, min_samples = fit
    release = ReleaseInfo(
        grid=hist.grid,
        histogram=hist.kind,
        theta=float(hist.theta),
        noise=hist.noise,
        noise_scale=float(hist.scale),
        epsilon=float(hist.epsilon),
        delta=float(hist.delta),
        eps=float(eps),
        eta=float(eta),
        min_samples=int(min_samples),
        rho=None if rho is None else float(rho),
        units=units,
        unit_choice=unit_choice,
        size_estimate=size_estimate,
        second=second_spent if second is None else sidebyside.spend_of(second),
    )
    return SpanModel(
        spans=spans,
        spec=spec,
        release=release,
        histogram=hist,
        auto=auto,
        metadata=dict(metadata),
        second=None if second is None else dict(second),
    )


__all__ = ["model_of"]
