"""Spans as GeoJSON MultiPolygons (2-D models), for GIS tools, and the
lon/lat side of a geographic model.

A geographic model (one with a projection in its metadata, such as
:func:`dpdbscan.fit_lonlat` and ``dpdbscan fit --geo`` make) is written in
longitude/latitude; ``predict_lonlat`` labels points given in degrees.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from ..geometry.outlines import Outlines, outlines
from ..geometry.projection import Equirectangular, projection_of
from .describe import protection_brief, protection_fields, published_statement, swamped_min_samples
from .record import SpanModel, predict_rows
from .stats import is_geographic


def to_geojson(
    model: SpanModel,
    transform: Callable[[np.ndarray], np.ndarray] | None = None,
    precision: int | Literal["auto"] | None = "auto",
) -> dict:
    """Spans as GeoJSON MultiPolygons (2-D only).

    ``transform`` maps an (m, 2) array of grid-space coordinates to output
    coordinates (e.g. km back to lon/lat); identity by default.

    The polygons are the outlines of the spans' regions
    (:meth:`~dpdbscan.model.record.SpanModel.outlines`): exterior rings
    counter-clockwise, holes clockwise, every ring simple (RFC 7946).
    In longitude/latitude (``transform`` the model's own projection's
    ``inverse``, as :func:`geojson` passes it) a span across the antimeridian
    is cut there in two (RFC 7946 3.1.9), its part east of 180 written from
    -180, and a span wholly east of 180 is written from -180 too: every
    longitude lies in [-180, 180]. Another ``transform``'s output is kept as
    it comes.
    ``precision`` is the number of decimals coordinates are rounded to: with
    "auto" (default), 7 for a geographic model drawn through a ``transform``
    (degrees: 1e-7 degree is about 1 cm, far below a cell) and none (full
    float precision) otherwise. The collection's ``properties`` record it as
    ``coordinate_decimals`` (null when not rounded).

    Each feature's properties are free post-processing of the release (see
    :mod:`dpdbscan.model.stats` for the definitions): ``span`` (id),
    ``n_cells``, ``area_m2`` for geographic models (in the local projection)
    or ``area`` in squared data units otherwise, and ``noisy_mass`` (the sum
    of the released noisy counts of the histogram cells the span touches;
    null when the model has no histogram).

    The spans of a series over time (``metadata["series"]``) also state the
    unit protected, the lifetime budget and its statement, and the table's
    bound (pairs per unit, points per pair) and rho: ``epsilon``,
    ``max_cells_per_unit`` and ``max_points_per_cell`` above are then the
    spans' part of it, and ``protects`` says both parts
    (:func:`~dpdbscan.model.describe.series_brief`).
    """
    grid = model.grid
    if grid.d != 2:
        raise ValueError(f"GeoJSON export needs 2-D spans, these are {grid.d}-D")
    stats = model.stats
    geo = is_geographic(model)
    if precision == "auto":
        precision = GEO_DECIMALS if geo and transform is not None else None
    if precision is not None and (
        isinstance(precision, bool) or not isinstance(precision, int) or not 0 <= precision <= 15
    ):
        raise ValueError(f"precision must be 'auto', None or an int in 0..15, got {precision!r}")
    integer_mass = model.histogram is not None and model.histogram.values.dtype.kind in "iu"
    out = model.outlines()
    # every vertex at once: scale, transform, round
    xy = grid.lower + out.vertices.astype(np.float64) * grid.width
    if transform is not None and xy.shape[0]:
        xy = np.asarray(transform(xy), dtype=np.float64)
    proj = projection_of(model)
    groups = [[s] for s in range(model.n_spans)]  # the outline groups of each span
    lonlat = proj is not None and coordinate_fields(model, transform)["coordinates"] == LONLAT
    if proj is not None and lonlat and xy.shape[0] and float(xy[:, 0].max()) > 180.0:
        out, xy = _cut_at_antimeridian(model, proj, precision)
        groups = [[s, s + model.n_spans] for s in range(model.n_spans)]
    if precision is not None:
        xy = np.round(xy, precision)
    points = xy.tolist()
    ro, po, go = (out.ring_offsets.tolist(), out.polygon_offsets.tolist(), out.group_offsets.tolist())
    features = []
    for s in range(model.n_spans):
        mp = [
            [points[ro[r] : ro[r + 1]] for r in range(po[p], po[p + 1])]
            for g in groups[s]
            for p in range(go[g], go[g + 1])
        ]
        props: dict[str, Any] = {"span": s, "n_cells": int(stats.n_cells[s])}
        if geo:
            props["area_m2"] = float(stats.area[s]) * 1e6  # km^2 -> m^2
        else:
            props["area"] = float(stats.area[s])
        if stats.noisy_mass is None:
            props["noisy_mass"] = None
        else:
            mass = float(stats.noisy_mass[s])
            props["noisy_mass"] = int(round(mass)) if integer_mass else mass
        features.append(
            {
                "type": "Feature",
                "properties": props,
                "geometry": {"type": "MultiPolygon", "coordinates": mp},
            }
        )
    return {
        "type": "FeatureCollection",
        "properties": {
            **protection_fields(model),
            # what the spans guarantee, in the words of the summary (lengths on the ground)
            "guarantee": published_statement(model),
            "eps": grid.eps,
            "eps_units": "km on the ground (the model's local projection)" if geo else "the data's own units",
            "min_samples": model.spec.min_samples,
            # when the noise margin swamps MinPts, what a place really needs
            "core_threshold": _finite(model.spans.threshold),
            "min_samples_swamped_up_to": swamped_min_samples(model),
            **coordinate_fields(model, transform),
            "coordinate_decimals": precision,
            **_series_properties(model),
        },
        "features": features,
    }


def _cut_at_antimeridian(
    model: SpanModel, proj: Equirectangular, precision: int | None
) -> tuple[Outlines, np.ndarray]:
    """The spans' outlines cut at the antimeridian, in lon/lat (RFC 7946
    3.1.9: each part's longitudes in [-180, 180]): group ``s`` is span
    ``s``'s part west of 180 and group ``n_spans + s`` its part east of it,
    moved by -360 degrees.

    The regions' cells are split by the line: a cell wholly west of it goes
    west, one wholly east goes east, and the column of cells the line runs
    through goes to both, each side's outline then moved onto the line
    (a vertex on that column's far side moved to it). That move keeps the
    order of every x (the line lies strictly inside the column), so the
    rings stay simple and closed, as the tracer made them. Where the line
    runs within the output's precision of a cell side it is taken to run
    along that side, so that no part is a sliver the rounding would close."""
    grid = model.grid
    n = model.n_spans
    keys, labels = model.regions()
    cells = grid.decode(keys).astype(np.int64).reshape(-1, 2)
    # the line x = line in cell units of the span grid (lon = lon0 + x_km / kx, affine)
    line = ((180.0 - proj.lon0) * proj.kx - float(grid.lower[0])) / float(grid.width)
    side = round(line)
    tol = 10.0 ** -(precision if precision is not None else 9)  # degrees
    if abs(line - side) * float(grid.width) / proj.kx < tol:
        line = float(side)
    west, east = cells[:, 0] < line, cells[:, 0] + 1 > line
    out = outlines(
        np.concatenate([cells[west], cells[east]]), np.concatenate([labels[west], labels[east] + n]), 2 * n
    )
    v = out.vertices.astype(np.float64)
    rings_per_group = np.diff(out.polygon_offsets[out.group_offsets])
    ring_group = np.repeat(np.arange(2 * n), rings_per_group)
    on_east = np.repeat(ring_group >= n, np.diff(out.ring_offsets))
    v[:, 0] = np.where(on_east, np.maximum(v[:, 0], line), np.minimum(v[:, 0], line))
    xy = proj.inverse(grid.lower + v * grid.width)
    lon = xy[:, 0]
    xy[:, 0] = np.where(on_east, np.maximum(lon, 180.0) - 360.0, np.minimum(lon, 180.0))
    return out, xy


def _finite(x: float) -> float | None:
    """A float for JSON, None when it is not finite (JSON has no infinity)."""
    return float(x) if np.isfinite(x) else None


def _series_properties(model: SpanModel) -> dict:
    """What a series' GeoJSON says of its guarantee (empty for one release)."""
    series = model.metadata.get("series")
    if not series:
        return {}
    table = series["table"]
    return {
        # each part's bound and the whole series' budget (the spans' own
        # k, m, epsilon and rho are the fields above)
        "protects": protection_brief(model),
        "unit_protected": series["unit"],
        "lifetime_budget": dict(series["lifetime_budget"]),
        "lifetime_zcdp_rho": (series.get("cost") or {}).get("rho"),
        "max_pairs_per_unit": table["max_pairs_per_unit"],
        "max_points_per_pair": table["max_points_per_pair"],
        "table_zcdp_rho": table["rho"],
        "privacy": series["statement"],
        "periods": {k: series["periods"][k] for k in ("per", "from", "to", "tz", "n_periods")},
        **({"released_periods": series["released_periods"]} if "released_periods" in series else {}),
    }


#: What a geographic model's coordinates are in GeoJSON written through its projection.
LONLAT = "longitude, latitude in degrees (WGS 84, RFC 7946)"


def coordinate_fields(model: SpanModel, transform: Callable[[np.ndarray], np.ndarray] | None) -> dict:
    """What the file's coordinates are (``coordinates``, and the projection
    when they are not lon/lat): RFC 7946 readers take every GeoJSON as
    lon/lat, so a file in km or in the data's own units says so. A
    geographic model written without its projection is in km east and north
    of the projection's origin, which a GIS would misplace silently."""
    proj = projection_of(model)
    if proj is not None and transform is not None:
        inverse = getattr(transform, "__func__", None) is type(proj).inverse
        if inverse and getattr(transform, "__self__", None) == proj:
            return {"coordinates": LONLAT}
        return {"coordinates": "the caller's transform of km east and north of the projection's origin"}
    if proj is not None:
        return {
            "coordinates": "km east and north of (lon0, lat0) in the model's equirectangular projection, "
            "NOT longitude/latitude: write it with dpdbscan.geojson (or dpdbscan map/plot) for lon/lat",
            "projection": proj.to_dict(),
        }
    columns = model.metadata.get("columns") or []
    named = f" (columns {', '.join(map(str, columns))})" if len(columns) == 2 else ""
    how = "the caller's transform of " if transform is not None else ""
    return {"coordinates": f"{how}the data's own units{named}, not longitude/latitude"}


#: Decimals of lon/lat in GeoJSON: 1e-7 degree is about 1.1 cm (latitude).
GEO_DECIMALS = 7


def geojson(
    model: SpanModel,
    transform: Callable[[np.ndarray], np.ndarray] | None = None,
    precision: int | Literal["auto"] | None = "auto",
) -> dict:
    """:func:`to_geojson` in longitude/latitude for a geographic model unless
    ``transform`` says otherwise."""
    if transform is None:
        proj = projection_of(model)
        transform = None if proj is None else proj.inverse
    return to_geojson(model, transform, precision)


def save_geojson(
    model: SpanModel,
    path: Path | str,
    transform: Callable[[np.ndarray], np.ndarray] | None = None,
    precision: int | Literal["auto"] | None = "auto",
) -> None:
    """Write :func:`geojson` of ``model`` to ``path``."""
    Path(path).write_text(json.dumps(geojson(model, transform, precision)))


def predict_lonlat(model: SpanModel, lonlat: ArrayLike) -> np.ndarray:
    """Span id of each (longitude, latitude) point in degrees, for a
    geographic model: the points go through the model's own (public)
    projection first."""
    proj = projection_of(model)
    if proj is None:
        raise ValueError(
            "predict_lonlat needs a geographic model (fitted with fit_lonlat or "
            "'dpdbscan fit --geo'); use predict for data coordinates"
        )
    return model.predict(proj.forward(predict_rows(lonlat, 2, "lonlat")))


__all__ = [
    "GEO_DECIMALS",
    "LONLAT",
    "coordinate_fields",
    "to_geojson",
    "geojson",
    "save_geojson",
    "predict_lonlat",
]
