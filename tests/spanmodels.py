"""Span models built by hand, for tests of pictures, maps and span figures.

A real fit decides the spans from noise; these tests need spans placed
exactly (touching, far apart, tiny, of known size), so they assemble a
:class:`~dpdbscan.model.record.SpanModel` from given cells and a given histogram.
"""

from __future__ import annotations

import math

import numpy as np

from dpdbscan.cells.grid import Grid
from dpdbscan.cells.subcells import SubcellLayout
from dpdbscan.geometry.projection import Equirectangular
from dpdbscan.model.record import SpanModel
from dpdbscan.params.specs import ReleaseInfo, SpanSpec
from dpdbscan.post.coretests import Spans

from releases import make_histogram

SF_BOX = ((-122.48, 37.72), (-122.38, 37.82))


def hand_model(
    spans,
    *,
    shape=(40, 40),
    width=1.0,
    subcells=1,
    values=None,
    geo=False,
    histogram=True,
    sparse=False,
    noise="discrete",
    epsilon=1.0,
):
    """A 2-D model whose span ``i`` is the list of cells ``spans[i]``.

    Cells are integer coordinates of the span grid (sub-cells of width
    ``width / subcells`` when ``subcells > 1``). The histogram grid has cell
    width ``width`` and ``shape`` cells from the origin (from the projected
    San Francisco box with ``geo=True``, width then in km); ``values`` are its
    noisy counts (default: 0). ``sparse=True`` releases only the non-zero ones.
    """
    proj = Equirectangular.from_bounds(*SF_BOX) if geo else None
    if geo:
        lower, _ = proj.project_bounds(*SF_BOX)
    else:
        lower = np.zeros(2)
    upper = lower + np.asarray(shape, dtype=np.float64) * width - 1e-9 * width
    alpha = width * math.sqrt(2.0)  # eta = 4: w = alpha / sqrt(d)
    hgrid = Grid(lower, upper, alpha, 4.0)
    assert hgrid.shape == tuple(shape)
    grid = hgrid if subcells == 1 else Grid(lower, upper, alpha, 4.0 / subcells)
    cells = np.concatenate([np.asarray(c, dtype=np.int64).reshape(-1, 2) for c in spans])
    labels = np.concatenate([np.full(len(c), i, dtype=np.int64) for i, c in enumerate(spans)])
    keys = grid.encode(cells)
    order = np.argsort(keys, kind="stable")
    hist = None
    if histogram:
        v = np.zeros(shape, dtype=np.int64) if values is None else np.asarray(values)
        if sparse:
            nz = np.argwhere(v != 0)
            hk = hgrid.encode(nz)
            o = np.argsort(hk)
            hist = make_histogram(
                hgrid, "sparse", v[tuple(nz.T)][o], keys=hk[o], theta=1.0, noise=noise, epsilon=epsilon
            )
        else:
            hist = make_histogram(hgrid, "dense", v, noise=noise, epsilon=epsilon)
    meta = {"projection": proj.to_dict()} if geo else {}
    layout = SubcellLayout(hgrid, subcells)
    spans_ = Spans(
        grid,
        keys[order],
        labels[order],
        5.0,
        None,
        10.0,
        20.0,
        int(layout.kappa_q),
        int(layout.n_events),
        layout.approx_ratio,
        None,
    )
    spec = SpanSpec(
        min_samples=10,
        beta=0.1,
        subcells=subcells,
        margin="paper",
        border=0.0,
        border_cells="any",
        raise_min_samples=True,
        core="bound",
        join="eps",
    )
    release = ReleaseInfo(
        hgrid,
        "sparse" if sparse else "dense",
        1.0 if sparse else float("-inf"),
        noise,
        epsilon,
        epsilon,
        0.0,
        alpha,
        4.0,
        10,
        None,
        None,
        None,
        None,
        None,
    )
    return SpanModel(
        spans=spans_, spec=spec, release=release, histogram=hist, auto=None, metadata=meta, second=None
    )


def square(x0, y0, side):
    """The ``side x side`` block of cells with corner (x0, y0)."""
    return [(x0 + i, y0 + j) for i in range(side) for j in range(side)]
