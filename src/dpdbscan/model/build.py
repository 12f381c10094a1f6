"""A span model from a release and its spans: the one constructor the
mechanism, the automatic mode and re-parameterisation share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cells.histogram import NoisyHistogram
from ..post.coretests import Spans
from ..spec.specs import ReleaseInfo, SpanSpec, UnitBound
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
) -> SpanModel:
    """The model of ``spans``, made with ``spec`` from the release ``hist``
    (its grid at the spans' alpha). ``fit`` is (eps, eta, min_samples) of the
    fit that spent the budget; ``auto`` the automatic mode's record;
    ``rho`` and ``units`` the release's zCDP rho (Gaussian noise) and
    contribution bound (None: a row is the unit)."""
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
    )
    return SpanModel(
        spans=spans, spec=spec, release=release, histogram=hist, auto=auto, metadata=dict(metadata)
    )


def model_like(
    model: SpanModel,
    hist: NoisyHistogram,
    spans: Spans,
    spec: SpanSpec,
    auto: Mapping[str, Any] | None = None,
) -> SpanModel:
    """Another model of ``model``'s release: ``spans`` made with ``spec``
    from its histogram ``hist`` (re-measured at the spans' alpha), with the
    release's own facts (the fit that spent the budget, metadata, rho,
    contribution bound). Post-processing (re-parameterisation, explore)."""
    rel = model.release
    return model_of(
        hist,
        spans,
        spec,
        fit=(rel.eps, rel.eta, rel.min_samples),
        auto=auto,
        metadata=model.metadata,
        rho=rel.rho,
        units=rel.units,
    )


__all__ = ["model_of", "model_like"]
