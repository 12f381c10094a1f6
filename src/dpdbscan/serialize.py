"""Span models as JSON and GeoJSON.

The JSON file is the whole release: public parameters, the spans (core cells
by span) and, optionally, the noisy histogram (compressed arrays in base64).
Reading it back needs nothing else. GeoJSON holds the spans of 2-D models as
MultiPolygons, for GIS tools. Functions here read a model's public attributes
and build the keyword arguments of a new one; they never see training data.
"""

from __future__ import annotations

import base64
import math
import zlib
from typing import Any, Callable

import numpy as np

from .geometry import cells_to_polygons
from .grid import Grid
from .histogram import NoisyHistogram
from .spanstats import is_geographic, span_stats

FORMAT = "dpdbscan.spans"
VERSION = 1


# --------------------------------------------------------------------------- #
# span model <-> dict


def model_to_dict(model, include_histogram: bool = True) -> dict:
    """The JSON document of a :class:`~dpdbscan.model.SpanModel`."""
    spans = []
    coords = model.grid.decode(model.core_keys)
    for s in range(model.n_spans):
        sel = model.labels == s
        spans.append({"id": s, "n_cells": int(sel.sum()), "cells": coords[sel].tolist()})
    out = {
        "format": FORMAT, "version": VERSION,
        "privacy": {"epsilon": model.epsilon, "delta": model.delta, "noise": model.noise,
                    "histogram": model.histogram_kind},
        "params": {"alpha": model.grid.alpha, "min_samples": model.min_samples,
                   "eta": model.eta, "beta": model.beta,
                   "raise_min_samples": model.raise_min_samples,
                   "subcells": model.subcells, "border": model.border, "margin": model.margin},
        "bounds": {"lower": model.grid.lower.tolist(), "upper": model.grid.upper.tolist()},
        "grid": model.histogram_grid.to_dict(),
        "span_grid": {"width": model.grid.width, "shape": list(model.grid.shape)},
        "guarantee": jsonable(model.guarantee()),
        "tau": model.tau, "beta": model.beta, "gamma": model.gamma, "theta": json_number(model.theta),
        "spans": spans,
        "metadata": model.metadata,
    }
    if include_histogram and model.histogram is not None:
        out["histogram"] = histogram_to_dict(model.histogram)
    return out


def model_kwargs(data: Any) -> dict:
    """Keyword arguments of a SpanModel from its JSON document (validated)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not a dpdbscan span model (missing format 'dpdbscan.spans')")
    if data.get("version") != VERSION:
        raise ValueError(f"unsupported dpdbscan model version {data.get('version')!r}")
    try:
        p = data["params"]
        k = int(p.get("subcells", 1))
        hgrid = Grid(data["bounds"]["lower"], data["bounds"]["upper"], float(p["alpha"]), float(p["eta"]))
        grid = hgrid if k == 1 else Grid(hgrid.lower, hgrid.upper, hgrid.alpha, hgrid.eta / k)
        cells, labels = [], []
        for s in data["spans"]:
            c = np.asarray(s["cells"], dtype=np.int64).reshape(-1, grid.d)
            cells.append(c)
            labels.append(np.full(c.shape[0], int(s["id"]), dtype=np.int64))
        coords = np.concatenate(cells) if cells else np.zeros((0, grid.d), np.int64)
        lab = np.concatenate(labels) if labels else np.zeros(0, np.int64)
        keys = grid.encode(coords)
        order = np.argsort(keys, kind="stable")
        hist = histogram_from_dict(hgrid, data["histogram"]) if "histogram" in data else None
        priv = data["privacy"]
        used = data.get("guarantee", {})
        return dict(
            grid=grid, core_keys=keys[order], labels=lab[order],
            min_samples=int(p["min_samples"]), gamma=float(data["gamma"]),
            beta=float(p["beta"]), epsilon=float(priv["epsilon"]), delta=float(priv["delta"]),
            raise_min_samples=bool(p.get("raise_min_samples", True)),
            histogram_kind=priv["histogram"], noise=priv["noise"],
            theta=float(data.get("theta") if data.get("theta") is not None else "nan"),
            histogram=hist, metadata=dict(data.get("metadata", {})), subcells=k,
            border=float(p.get("border", 0.0)), margin=str(p.get("margin", "paper")),
            eta=float(p["eta"]),
            kappa=int(used["kappa"]) if "n_events" in used else None,
            n_events=int(used["n_events"]) if "n_events" in used else None,
        )
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ValueError(f"malformed dpdbscan span model: {exc!r}") from None


# --------------------------------------------------------------------------- #
# GeoJSON


def model_to_geojson(model, transform: Callable[[np.ndarray], np.ndarray] | None = None) -> dict:
    """Spans as GeoJSON MultiPolygons (2-D only).

    ``transform`` maps an (m, 2) array of grid-space coordinates to output
    coordinates (e.g. km back to lon/lat); identity by default.

    Each feature's properties are free post-processing of the release (see
    :mod:`dpdbscan.spanstats` for the definitions): ``span`` (id),
    ``n_cells``, ``area_m2`` for geographic models (in the local projection)
    or ``area`` in squared data units otherwise, and ``noisy_mass`` (the sum
    of the released noisy counts of the histogram cells the span touches;
    null when the model has no histogram).
    """
    grid = model.grid
    if grid.d != 2:
        raise ValueError(f"GeoJSON export needs 2-D spans, these are {grid.d}-D")
    stats = span_stats(model)
    geo = is_geographic(model)
    integer_mass = model.histogram is not None and model.histogram.values.dtype.kind in "iu"
    features = []
    for s in range(model.n_spans):
        mp = []
        for rings in cells_to_polygons(model.span_cells(s)):
            out_rings = []
            for ring in rings:
                xy = grid.lower + np.asarray(ring, dtype=np.float64) * grid.width
                if transform is not None:
                    xy = np.asarray(transform(xy), dtype=np.float64)
                out_rings.append(xy.tolist())
            mp.append(out_rings)
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
        features.append({
            "type": "Feature",
            "properties": props,
            "geometry": {"type": "MultiPolygon", "coordinates": mp},
        })
    return {
        "type": "FeatureCollection",
        "properties": {"epsilon": model.epsilon, "delta": model.delta,
                       "alpha": grid.alpha, "min_samples": model.min_samples},
        "features": features,
    }


# --------------------------------------------------------------------------- #
# helpers


def json_number(x: float):
    """A float as JSON allows it: NaN -> null, +-inf -> "inf"/"-inf"."""
    return x if math.isfinite(x) else (None if math.isnan(x) else str(x))


def jsonable(d: dict) -> dict:
    """A nested dict with non-finite floats and huge ints made JSON-safe."""
    out: dict = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = jsonable(v)
        elif isinstance(v, float):
            out[k] = json_number(v)
        elif isinstance(v, int) and abs(v) > 2**53:
            out[k] = str(v)
        else:
            out[k] = v
    return out


def pack(arr: np.ndarray) -> dict:
    arr = np.ascontiguousarray(arr)
    # noisy counts and cell coordinates nearly always fit in int32: half the bytes
    if arr.dtype == np.int64 and arr.size and -(2**31) <= arr.min() and arr.max() < 2**31:
        arr = arr.astype(np.int32)
    return {"dtype": arr.dtype.str, "shape": list(arr.shape),
            "zlib_base64": base64.b64encode(zlib.compress(arr.tobytes(), 1)).decode("ascii")}


def unpack(d: dict) -> np.ndarray:
    raw = zlib.decompress(base64.b64decode(d["zlib_base64"]))
    arr = np.frombuffer(raw, dtype=np.dtype(d["dtype"])).reshape(d["shape"])
    return arr.astype(np.int64) if arr.dtype.kind in "iu" else arr.copy()


def histogram_to_dict(h: NoisyHistogram) -> dict:
    out = {"kind": h.kind, "theta": json_number(h.theta), "noise": h.noise,
           "epsilon": h.epsilon, "delta": h.delta, "values": pack(h.values)}
    if h.kind != "dense":
        out["cells"] = pack(h.grid.decode(h.keys))
    return out


def histogram_from_dict(grid: Grid, d: dict) -> NoisyHistogram:
    theta = d.get("theta")
    theta = float(theta) if theta is not None else float("nan")
    values = unpack(d["values"])
    keys = None
    if d["kind"] != "dense":
        keys = grid.encode(unpack(d["cells"]).reshape(-1, grid.d))
    elif tuple(values.shape) != tuple(grid.shape):
        raise ValueError("malformed dpdbscan span model: histogram shape does not match the grid")
    return NoisyHistogram(grid=grid, kind=d["kind"], values=values, keys=keys, theta=theta,
                          noise=d["noise"], epsilon=float(d["epsilon"]), delta=float(d.get("delta", 0.0)))


__all__ = ["FORMAT", "VERSION", "model_to_dict", "model_kwargs", "model_to_geojson",
           "histogram_to_dict", "histogram_from_dict", "jsonable", "json_number"]
