"""Spans for other parameters from the same release: post-processing of the
released noisy histogram, at no privacy cost (docs/parameters.md)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import UtilityWarning
from ..geometry.projection import eps_text
from ..params.parameters import check_param
from ..params.validation import check_min_samples
from ..post.coretests import MarginOverride, core_test
from .build import model_of
from .record import SpanModel
from .shown import shown_spans

if TYPE_CHECKING:
    from ..cells.histogram import NoisyHistogram
    from ..params.specs import SpanSpec
    from ..post.coretests import Spans


def finest_eps(model: SpanModel) -> float:
    """The smallest eps this release resolves: the diagonal of its cells
    (eta = 4 against that radius), which is the release's own eps at the
    default eta = 4; or the release's own eps where that is smaller (the
    coarse release of 7-D/8-D, :mod:`dpdbscan.plan.coarserelease`, whose
    cells' diagonal is twice the eps it was made at)."""
    hg = model.release.grid
    return min(hg.eta * hg.eps / 4.0, float(model.release.eps))


def with_params(model: SpanModel, eps: float | None = None, min_samples: int | None = None) -> SpanModel:
    """Spans for another (eps, MinPts) from the released histogram alone:
    post-processing, no extra privacy cost.

    The cells stay the release's; an eps-ball is measured over them (the
    grid at eta' = eta * alpha / eps, :meth:`Grid.at_alpha`), the core test
    and its margins are recomputed for that ball, and the border radius
    follows the core test's rule (the density test's scales with eps).

    Parameters
    ----------
    eps : float, optional
        The new radius; at least :func:`finest_eps` (the release's eps at
        eta = 4). Default: unchanged.
    min_samples : int, optional
        The new MinPts. Default: unchanged.

    Where the automatic mode's second release split a span (its record
    :attr:`~dpdbscan.model.SpanModel.release_two`, docs/privacy.md 4.10),
    the split is carried over when the new parameters leave release one's
    core cells as they were (the same cells, grouped into the same spans):
    then release two's fine cells and keep rule, made for those spans, still
    describe them, and the model keeps the record (``second``, as
    post-processing: no new budget) with the same span ids. Otherwise the
    spans are release one's alone and a :class:`~dpdbscan.UtilityWarning`
    says that the split is not carried over.
    """
    if model.histogram is None:
        raise ValueError(
            "this model was saved without its noisy histogram; cannot re-threshold or re-parameterise it"
        )
    test = core_test(model.spec.core)
    m = model.spec.min_samples if min_samples is None else check_min_samples(min_samples)
    hist = model.histogram
    alpha = hist.grid.eps if eps is None else check_param("eps", eps)
    if alpha == "auto":
        raise ValueError("eps='auto' chooses eps when fitting; with_params needs a number")
    border = model.spec.border
    if alpha != hist.grid.eps:
        finest = finest_eps(model)
        if alpha < finest * (1 - 1e-12):
            # in the model's words: a geographic model's lengths on the ground ("100 m")
            raise ValueError(
                f"eps={eps_text(model, alpha)} is finer than this release can resolve: its cells have "
                f"diagonal {eps_text(model, finest)}, the smallest eps it supports (it was made at "
                f"eps={eps_text(model, model.release.eps)}); a smaller eps needs a new release"
            )
        grid = hist.grid.at_eps(alpha)
        if grid.kappa > test.max_kappa:
            raise ValueError(
                f"eps={eps_text(model, alpha)} is too large for this release's cells: an eps-neighbourhood "
                f"would hold {grid.kappa:,} of them, more than the {test.name} test weighs "
                f"({test.max_kappa:,}); use a smaller eps or a new release at a coarser eps"
            )
        hist = hist.on_grid(grid)
        border = test.border_at(border, model.grid.eps, alpha)
    spec = replace(model.spec, min_samples=m, border=float(border))
    if spec.border_cells == "own":
        # the automatic place mode's drawing is its selection's; a flat cut draws every border cell
        spec = replace(spec, border_cells="any")
    # margins that depend on the cells and alpha only are kept at the same alpha
    same = hist is model.histogram
    s = model.spans
    kept = MarginOverride(s.noise_margin, s.noise_margin_upper) if same else None
    spans = test.build(hist, spec, kept)
    second = model.release_two
    if second is not None:
        # (release two is 3-D and never geographic: no "occupied" border renumbers its spans)
        labels = None if spec.border_cells == "occupied" else split_labels(model, spans)
        if labels is None:
            second = None
            _warn_split_dropped(model)
        else:
            spans = replace(spans, labels=labels)
    out = remodel(model, hist, spans, spec, second=second)
    # a geographic map draws only the spans the release shows, as when fitted
    return shown_spans(out) if spec.border_cells == "occupied" else out


def split_labels(model: SpanModel, spans: Spans) -> np.ndarray | None:
    """The labels of ``spans`` (new parameters' spans of ``model``'s
    release) with release two's split carried over, or None where it cannot
    be: ``spans`` must have release one's core cells exactly (the same cells,
    grouped into the same spans; release one's spans are the model's with
    each split span's parts joined again). Then each core cell takes its
    label in ``model`` (the parts' ids). Public: both are post-processing of
    the releases."""
    old, new = model.spans, spans
    if (
        old.core_keys.size != new.core_keys.size
        or old.grid.width != new.grid.width
        or not np.array_equal(old.grid.lower, new.grid.lower)
    ):
        return None
    old_cells, new_cells = old.grid.decode(old.core_keys), new.grid.decode(new.core_keys)
    oi, ni = np.lexsort(old_cells.T[::-1]), np.lexsort(new_cells.T[::-1])
    if not np.array_equal(old_cells[oi], new_cells[ni]):
        return None
    rec = model.release_two or {}
    whole = np.arange(max(model.n_spans, 1))
    for sp in rec.get("spans") or []:
        if sp.get("split"):
            whole[np.asarray(sp["ids"], dtype=np.int64)] = int(sp["span"])
    one, two = whole[old.labels[oi]], new.labels[ni]
    # the same grouping: each of release one's spans is exactly one new span, and back
    pairs = np.unique(np.stack([one, two]), axis=1)
    if len(np.unique(pairs[0])) != pairs.shape[1] or len(np.unique(pairs[1])) != pairs.shape[1]:
        return None
    labels = np.empty_like(new.labels)
    labels[ni] = old.labels[oi]
    return labels


def _warn_split_dropped(model: SpanModel) -> None:
    """Warn that ``with_params`` leaves out release two's split, when the
    model has one (public: the model's own record)."""
    rec = model.release_two or {}
    split = [int(s) for s in rec.get("split") or []]
    if split:
        which = ", ".join(str(s) for s in split)
        warnings.warn(
            f"spans at other parameters (with_params, sweep --model) are release one's alone: the "
            "automatic mode's second release "
            f"split span(s) {which} of this model into parts side by side, and that split is not "
            "carried over: these parameters change release one's core cells, and release two's fine "
            "cells and keep rule were made for those (docs/privacy.md 4.10). Use the model itself, or "
            "parameters that keep its core cells, for the split spans",
            UtilityWarning,
            stacklevel=3,
        )


def remodel(
    model: SpanModel,
    hist: NoisyHistogram,
    spans: Spans,
    spec: SpanSpec,
    auto: Mapping[str, Any] | None = None,
    second: Mapping[str, Any] | None = None,
) -> SpanModel:
    """A model of the same release as ``model`` (its fit, privacy unit and
    metadata) with other spans: no longer an automatic choice unless ``auto``
    records one (the other answer of a level selection); ``second``: release
    two's record, carried to spans that keep release one's core cells.
    What release two spent stays a fact of the release either way
    (``privacy.releases`` says 2)."""
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
        unit_choice=rel.unit_choice,
        size_estimate=rel.size_estimate,
        second=second,
        # release two was spent whether or not these spans carry its record
        second_spent=rel.second,
    )


__all__ = ["finest_eps", "remodel", "with_params"]
