"""The released span model: an immutable record of the release, plus predict.

A :class:`SpanModel` holds only public parameters and post-processing of the
noisy histogram: the spans (core cells grouped into spans, the margins), the
parameters that made them, the public facts of the release and (optionally)
the noisy histogram itself. It never holds training points, so saving,
sharing and querying it costs no privacy. Everything else is a function over
it, in the modules of this package: the guarantee (:mod:`.guarantee`), the
description and summary (:mod:`.describe`), other parameters from the same
release (:mod:`.reparam`), the file format (:mod:`.codec`) and GeoJSON
(:mod:`.geojson`).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..cells.grid import Grid
from ..cells.histogram import NoisyHistogram
from ..exceptions import PrivateNoteWarning
from ..geometry.outlines import Outlines, outlines
from ..laws.noise import shown_count
from ..params.specs import ReleaseInfo, SpanSpec
from ..params.validation import check_array
from ..post import levelsearch, sidebyside
from ..post.coretests import Spans, core_test
from .predict import (
    degrees_given,
    outside_note,
    predict_cells,
    predict_cells_each,
    predict_spans,
    regions_are_cheap,
    span_regions,
    span_regions_each,
)
from .stats import SpanStats, compute_stats


def predict_rows(X: ArrayLike, d: int, name: str = "X") -> np.ndarray:
    """The points to label, as a 2-D array: a list (or tuple) of rows of
    different lengths is read row by row, a row of another length than
    ``d`` (public: the model's dimension) a row of NaN, which every
    ``predict`` labels -1, so that the labels are one a row of the input
    (a note, :class:`~dpdbscan.PrivateNoteWarning`, counts them). An array
    of another width is refused, as before."""
    ragged = [0]
    X = check_array(X, name, width=d, ragged=ragged)
    if ragged[0]:
        warnings.warn(
            f"{ragged[0]:,} row(s) of {name} of another length than {d} are labelled -1 (noise)",
            PrivateNoteWarning,
            stacklevel=3,
        )
    return X


@dataclass(frozen=True, eq=False)
class SpanModel:
    """DP cluster spans (the release).

    Attributes
    ----------
    spans : Spans
        The core (sub-)cells, their span ids and the numbers of the core test
        that chose them (``gamma``, ``threshold``, ``kappa``, ``rho``, ...).
    spec : SpanSpec
        The post-processing parameters (``min_samples``, ``core``, ``beta``,
        ``subcells``, ``margin``, ``border``, ...).
    release : ReleaseInfo
        The public facts of the release: its grid, histogram kind, theta,
        noise, (epsilon, delta) and the parameters of the fit that spent the
        budget.
    histogram : NoisyHistogram or None
        The released noisy histogram (None when saved without it; then the
        spans cannot be re-parameterised).
    auto : mapping or None
        How the automatic mode chose eps and MinPts from the release, or None.
    metadata : mapping
        Public notes: the tool, the column names, the --geo projection, ...
    second : mapping or None
        The automatic mode's release two (docs/privacy.md 4.10) carried to
        spans at other parameters that keep release one's core cells
        (:func:`dpdbscan.model.with_params`): such a model is no automatic
        choice, so the record is not in ``auto``. None otherwise (an
        automatic choice holds its release two in ``auto["second"]``); read
        either through :attr:`release_two`.
    """

    spans: Spans
    spec: SpanSpec
    release: ReleaseInfo
    histogram: NoisyHistogram | None
    auto: Mapping[str, Any] | None
    metadata: Mapping[str, Any]
    second: Mapping[str, Any] | None

    @property
    def release_two(self) -> Mapping[str, Any] | None:
        """Release two's record (:mod:`dpdbscan.post.sidebyside`): the
        automatic choice's ``auto["second"]``, or :attr:`second`; None when
        the model carries none."""
        rec = (self.auto or {}).get(sidebyside.KEY)
        return self.second if rec is None else rec

    @property
    def grid(self) -> Grid:
        """The grid the spans are made of (sub-cells when ``subcells > 1``)."""
        return self.spans.grid

    @property
    def core_keys(self) -> np.ndarray:
        """Sorted keys (in :attr:`grid`) of the core cells."""
        return self.spans.core_keys

    @property
    def labels(self) -> np.ndarray:
        """Span id of each core cell (0..n_spans-1, numbered by smallest cell)."""
        return self.spans.labels

    @property
    def n_spans(self) -> int:
        return self.spans.n_spans

    @property
    def n_core_cells(self) -> int:
        return int(self.spans.core_keys.size)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Span id of each point, -1 for noise (outside every span or the box),
        one a row of ``X``: in a list of rows, a row of another length than
        the model's dimension is labelled -1 too (:func:`predict_rows`).

        Warns (:class:`~dpdbscan.PrivateNoteWarning`, a note about the points
        for their owner) when points were given and none lies inside the box;
        raises ValueError when a geographic model (km) is given what looks
        like longitude/latitude (:func:`~.predict.degrees_given`).
        """
        X = predict_rows(X, self.grid.d)
        if X.shape[1] != self.grid.d:
            raise ValueError(f"X has {X.shape[1]} features, but the model was fitted with {self.grid.d}")
        wrong = degrees_given(self.metadata, self.grid, X)
        if wrong:
            raise ValueError(wrong)
        note = outside_note(self.grid, X)
        if note:
            warnings.warn(note, PrivateNoteWarning, stacklevel=2)
        labels = self._predict_cells(X)
        # spans that release two split: each point to its nearest kept fine cell's piece
        return sidebyside.relabel_points(labels, X, self._split_pieces)

    @functools.cached_property
    def _split_pieces(self) -> list:
        """The spans release two split (:func:`dpdbscan.post.sidebyside.split_pieces`), or []."""
        rec = self.release_two
        return [] if rec is None else sidebyside.split_pieces(rec, self.release.grid)

    def _predict_cells(self, X: np.ndarray) -> np.ndarray:
        """The span of each point (checked) by the cells: release one's rule."""
        if (
            "_regions" not in self.__dict__
            and not regions_are_cheap(self.grid)
            and self.spec.border_cells != "own"
        ):
            # the points' cells alone: the same labels as the regions' (which
            # in high dimension hold millions of cells per core cell)
            to = core_test(self.spec.core).predict_to
            keep = None if self.spec.border_cells == "any" else (lambda keys: occupied_border(self, keys))
            each = self.span_borders
            if each is not None:
                return predict_cells_each(self.grid, self.core_keys, self.labels, X, each, to, keep)
            return predict_cells(self.grid, self.core_keys, self.labels, X, self.spec.border, to, keep)
        keys, labels = self.regions()
        return predict_spans(self.grid, keys, labels, X)

    def regions(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted keys of every span-grid cell ``predict`` maps to a span (core
        cells and border cells), with that span
        (:func:`dpdbscan.model.predict.span_regions`)."""
        return self._regions

    @functools.cached_property
    def span_borders(self) -> np.ndarray | None:
        """Each span's border radius where spans were taken at their own eps
        (a level selection's ``auto["levels"][i]["eps"]``: the core test's
        border at that eps), else None (one radius, ``spec.border``)."""
        levels = (self.auto or {}).get("levels") or []
        if (self.auto or {}).get("selection") != "levels" or len(levels) != self.n_spans:
            return None
        eps = np.array([float(lv["eps"]) for lv in levels])
        if np.allclose(eps, self.grid.eps, rtol=1e-9, atol=0.0):
            return None
        test = core_test(self.spec.core)
        return np.array([float(test.border_at(self.spec.border, self.grid.eps, e)) for e in eps])

    @functools.cached_property
    def _regions(self) -> tuple[np.ndarray, np.ndarray]:
        to = core_test(self.spec.core).predict_to
        each = self.span_borders
        if each is not None:
            keys, labels = span_regions_each(self.grid, self.core_keys, self.labels, each, to)
        else:
            keys, labels = span_regions(self.grid, self.core_keys, self.labels, self.spec.border, to)
        if self.spec.border_cells == "any":
            return keys, labels
        keep = (
            own_border(self, keys, labels) if self.spec.border_cells == "own" else occupied_border(self, keys)
        )
        return keys[keep], labels[keep]

    def outlines(self) -> Outlines:
        """The polygons of every span's region (2-D), in cell units of
        :attr:`grid`: group ``s`` of the result is span ``s``. The GeoJSON,
        the picture and the HTML map draw these."""
        if self.grid.d != 2:
            raise ValueError(f"outlines need 2-D spans, these are {self.grid.d}-D")
        return self._outlines

    @functools.cached_property
    def _outlines(self) -> Outlines:
        keys, labels = self.regions()
        return outlines(self.grid.decode(keys), labels, self.n_spans)

    @functools.cached_property
    def stats(self) -> SpanStats:
        """Free per-span figures: cells, area, noisy mass, extent
        (:mod:`dpdbscan.model.stats`)."""
        keys, labels = self.regions()
        return compute_stats(self.spans, self.spec.subcells, keys, labels, self.histogram)


def occupied_border(model: SpanModel, keys: np.ndarray) -> np.ndarray:
    """Which of the region cells ``keys`` (sorted span-grid keys) stay with
    ``border_cells="occupied"``: the core cells, and the border cells whose
    cell of the release shows points (its noisy count reaches
    :func:`dpdbscan.laws.noise.shown_count` of the release's noise).

    Why: DBSCAN's border points are points, within eps of a core point; on
    the grid every cell within the radius of a core centre would join, held
    points or not, and a core centre is itself up to eps from the points that
    make it core, so a published place would reach up to 2 eps beyond them:
    the streets around a rank. Post-processing of the release only."""
    hist = model.histogram
    if hist is None:
        raise ValueError(
            "this model's border cells are those the release shows holding points, and it has no "
            "histogram to read them from"
        )
    k = model.spec.subcells
    cells = hist.grid.encode(model.grid.decode(keys) // k)
    core = np.isin(keys, model.core_keys, assume_unique=True)
    return core | (hist.value_at(cells) >= shown_count(hist.noise, hist.scale))


def own_border(model: SpanModel, keys: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Which of the region cells ``keys`` (sorted span-grid keys, of spans
    ``labels``) stay with ``border_cells="own"`` (the automatic place mode):
    the core cells, those within ``auto["own_near"]`` release cell widths
    of a core centre (a place's units may lie anywhere in its cells, and a
    cell's edge is no edge of the place), and the border cells whose cell of
    the release is not under ``auto["own_share"]`` of their span's busiest
    core cell by more than ``auto["own_sds"]`` noise standard deviations,
    the rule its core sub-cells were kept by
    (:func:`dpdbscan.post.levelsearch.own_cells`).

    Why: a place's span reaches eps beyond its core, and beside a busy place
    that is the road its units pass (a synthetic week of 10,000 taxis'
    stops: 7 of the 10 passage cells in spans were border cells 40-200 m
    from their core, most with under 5% of its busiest cell's count).
    Post-processing of the release only."""
    hist, a = model.histogram, model.auto or {}
    if hist is None:
        raise ValueError(
            "this model's border cells are those of its spans' own units, and it has no histogram to "
            "read them from"
        )
    if a.get("own_share") is None:
        return np.ones(keys.size, dtype=bool)  # no rule recorded: every cell within the radius
    k = model.spec.subcells
    peak = levelsearch.span_peaks(
        levelsearch.own_counts(hist, model.grid, model.core_keys, k), model.labels, model.n_spans
    )
    core = np.isin(keys, model.core_keys, assume_unique=True)
    near = float(a.get("own_near", 0.0)) * float(hist.grid.width)
    if near > 0:
        to = core_test(model.spec.core).predict_to
        core |= np.isin(keys, span_regions(model.grid, model.core_keys, model.labels, near, to)[0])
    own = levelsearch.own_counts(hist, model.grid, keys, k)
    share, sds = float(a["own_share"]), float(a.get("own_sds", 0.0))
    return core | levelsearch.own_keep(hist, own, peak[labels], share, sds)


__all__ = ["SpanModel", "occupied_border", "own_border"]
