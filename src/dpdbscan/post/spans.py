"""The spans of a release: core (sub-)cells grouped into spans, with the
quantities of the core test that made them.

Post-processing only: a :class:`Spans` is computed by a core test
(:mod:`dpdbscan.post.coretests`, :func:`~dpdbscan.post.coretests.build_spans`)
from a :class:`~dpdbscan.cells.histogram.NoisyHistogram` (the release) and
public parameters, so it, and anything computed from it, is as private as the
histogram. Each derived quantity of the guarantee (the margins, the number of
noisy terms kappa per sum, the number of sums the union bound covers, rho) is
computed by the core test once and carried here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cells.grid import Grid
from ..cells.subcells import SubcellLayout


@dataclass(frozen=True)
class Spans:
    """Core (sub-)cells grouped into spans, and the quantities used to get them.

    Attributes
    ----------
    grid : Grid
        The grid of the spans: the histogram's, or its sub-cells.
    core_keys : ndarray
        Sorted keys (in ``grid``) of the core cells.
    labels : ndarray
        Span id of each core cell, numbered by smallest cell.
    gamma : float
        The margin of the core test: Gamma_low (bound test) or the largest
        m(q) (density test).
    gamma_upper : float or None
        Bound test: the upper margin Gamma_up; None otherwise.
    tau : float or None
        Bound test: the additive error Gamma_low + Gamma_up; None otherwise.
    threshold : float
        The (largest) core threshold: on UB~ for the bound test (MinPts + tau
        with the practical rule), on the estimate E~ for the density test.
    kappa_q : int
        The most cells within alpha of one (sub-)cell, max |NB(q)|: the noisy
        terms of a sub-cell's neighbour sum, which the margins' union bound
        covers. The histogram grid's ``kappa`` (cells within alpha of a whole
        cell, the paper's kappa) is ``release.grid.kappa``; they are equal
        without sub-cells.
    n_events : int
        Number of sums the union bounds cover (k^d |X|).
    rho : float
        Approximation ratio of the guarantee.
    extra : dict or None
        Density test: ``accuracy_margin`` (G), ``m_star`` (M*) and
        ``probability`` of its one-sided guarantee.
    """

    grid: Grid
    core_keys: np.ndarray
    labels: np.ndarray
    gamma: float
    gamma_upper: float | None
    tau: float | None
    threshold: float
    kappa_q: int
    n_events: int
    rho: float
    extra: Mapping[str, Any] | None

    @property
    def n_spans(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0


def spans_on(
    layout: SubcellLayout,
    core_keys: np.ndarray,
    labels: np.ndarray,
    *,
    gamma: float,
    gamma_upper: float | None,
    tau: float | None,
    threshold: float,
    extra: Mapping[str, Any] | None,
    grid: Grid | None = None,
) -> Spans:
    """:class:`Spans` on ``layout``'s sub-cells (or on ``grid``, the same
    cells as a saved model wrote them), with the layout's kappa_q, number of
    events and ratio (the fields every core test fills alike)."""
    return Spans(
        grid=layout.fine if grid is None else grid,
        core_keys=core_keys,
        labels=labels,
        gamma=float(gamma),
        gamma_upper=None if gamma_upper is None else float(gamma_upper),
        tau=None if tau is None else float(tau),
        threshold=float(threshold),
        kappa_q=int(layout.kappa_q),
        n_events=int(layout.n_events),
        rho=layout.rho,
        extra=extra,
    )


__all__ = ["Spans", "spans_on"]
