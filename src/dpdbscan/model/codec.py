"""Span models as JSON and GeoJSON.

The JSON file is the whole release: public parameters, the spans (core cells
by span) and, optionally, the noisy histogram (compressed arrays in base64).
Reading it back needs nothing else. GeoJSON holds the spans of 2-D models as
MultiPolygons, for GIS tools. Functions here read a model's public attributes
and build the keyword arguments of a new one; they never see training data.
"""

from __future__ import annotations

import base64
import binascii
import math
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..cells.grid import Grid
from ..cells.histogram import NoisyHistogram
from ..cells.subcells import SubcellLayout
from ..post.coretests.bound import margins as bounds
from .stats import is_geographic, span_stats

if TYPE_CHECKING:
    from .spanmodel import SpanModel

FORMAT = "dpdbscan.spans"
VERSION = 1


# --------------------------------------------------------------------------- #
# span model <-> dict


def model_to_dict(model: SpanModel, include_histogram: bool = True) -> dict:
    """The JSON document of a :class:`~dpdbscan.model.spanmodel.SpanModel`."""
    # cells grouped by span, each span's in key order (a stable sort by span)
    order = np.argsort(model.labels, kind="stable")
    cells = model.grid.decode(model.core_keys[order]).tolist()
    ends = np.cumsum(np.bincount(model.labels, minlength=model.n_spans)).tolist()
    spans = [
        {"id": s, "n_cells": b - a, "cells": cells[a:b]}
        for s, (a, b) in enumerate(zip([0] + ends[:-1], ends))
    ]
    out = {
        "format": FORMAT,
        "version": VERSION,
        "privacy": {
            "epsilon": model.epsilon,
            "delta": model.delta,
            "noise": model.noise,
            "histogram": model.histogram_kind,
        },
        "params": {
            "alpha": model.grid.alpha,
            "min_samples": model.min_samples,
            "eta": model.eta,
            "beta": model.beta,
            "raise_min_samples": model.raise_min_samples,
            "subcells": model.subcells,
            "border": model.border,
            "margin": model.margin,
            "core": model.core,
        },
        "bounds": {"lower": model.grid.lower.tolist(), "upper": model.grid.upper.tolist()},
        "grid": model.histogram_grid.to_dict(),
        "span_grid": {"width": model.grid.width, "shape": list(model.grid.shape)},
        "guarantee": jsonable(model.guarantee()),
        "tau": model.tau if model.core == "bound" else None,
        "beta": model.beta,
        "gamma": model.gamma,
        "gamma_upper": model.gamma_upper,
        "theta": json_number(model.theta),
        "spans": spans,
        "metadata": model.metadata,
        "release": model.release,
    }
    if model.auto is not None:
        out["auto"] = model.auto
    if include_histogram and model.histogram is not None:
        out["histogram"] = histogram_to_dict(model.histogram)
    return out


class MalformedModel(ValueError):
    """A model file that is JSON of the right format but not a valid model."""


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise MalformedModel(f"malformed dpdbscan span model: {what}")


def _real(value, name: str, low=None, high=None, *, low_open=False, high_open=False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    _need(
        ok,
        f"{name} must be a finite number"
        + (f" {'>' if low_open else '>='} {low}" if low is not None else "")
        + (f" and {'<' if high_open else '<='} {high}" if high is not None else "")
        + f", got {value!r}",
    )
    return float(value)


def _int(value, name: str, low: int = 0) -> int:
    _need(
        isinstance(value, int) and not isinstance(value, bool) and value >= low,
        f"{name} must be an integer >= {low}, got {value!r}",
    )
    return int(value)


def _choice(value, name: str, options) -> str:
    _need(isinstance(value, str) and value in options, f"{name} must be one of {options}, got {value!r}")
    return value


def _cells(raw, d: int, shape, name: str) -> np.ndarray:
    """An (m, d) int64 array of cell coordinates inside ``shape``."""
    c = np.asarray(raw)
    _need(c.dtype.kind in "iu" or c.size == 0, f"{name} must hold integer cell coordinates")
    c = c.astype(np.int64).reshape(-1, d) if c.size else np.zeros((0, d), np.int64)
    _need(c.ndim == 2 and c.shape[1] == d, f"{name} must be rows of {d} coordinates")
    _need(bool(np.all((c >= 0) & (c < np.asarray(shape)))), f"{name} lie outside the grid")
    return c


def model_kwargs(data: Any) -> dict:
    """Keyword arguments of a SpanModel from its JSON document.

    Everything is checked: a corrupted or hand-edited file gives one clear
    ValueError, never a traceback or a silently wrong model.
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not a dpdbscan span model (missing format 'dpdbscan.spans')")
    if data.get("version") != VERSION:
        raise ValueError(f"unsupported dpdbscan model version {data.get('version')!r}")
    try:
        return _model_kwargs(data)
    except MalformedModel:
        raise
    except (
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
        ValueError,
        OverflowError,
        ZeroDivisionError,
        MemoryError,
        zlib.error,
        binascii.Error,
    ) as exc:
        text = f"missing {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise MalformedModel(f"malformed dpdbscan span model: {text}"[:300]) from None


def _model_kwargs(data: dict) -> dict:
    p, priv, box = data["params"], data["privacy"], data["bounds"]
    for name, part in (("params", p), ("privacy", priv), ("bounds", box)):
        _need(isinstance(part, dict), f"{name} must be an object")
    lower, upper = box["lower"], box["upper"]
    _need(
        isinstance(lower, list) and isinstance(upper, list) and 1 <= len(lower) == len(upper),
        "bounds must be two lists of the same length >= 1",
    )
    lower = [_real(v, "bounds.lower") for v in lower]
    upper = [_real(v, "bounds.upper") for v in upper]
    _need(all(lo < hi for lo, hi in zip(lower, upper)), "bounds must have lower < upper")
    alpha = _real(p["alpha"], "params.alpha", 0, low_open=True)
    eta = _real(p["eta"], "params.eta", 0, 4, low_open=True)
    k = _int(p.get("subcells", 1), "params.subcells", 1)
    _need(k ** len(lower) <= 4096, f"params.subcells={k} is too large for d={len(lower)}")
    # the stored widths, when they agree with (alpha, eta) up to rounding: a
    # re-parameterised model's cells are its release's bit for bit
    hgrid = Grid(
        np.asarray(lower), np.asarray(upper), alpha, eta, cell_width=_width(data.get("grid"), "grid.width")
    )
    grid = hgrid.subdivided(k)
    span_width = _width(data.get("span_grid"), "span_grid.width")
    if k > 1 and span_width is not None:
        grid = Grid(hgrid.lower, hgrid.upper, alpha, eta / k, cell_width=span_width)
    kind = _choice(priv["histogram"], "privacy.histogram", ("dense", "sparse", "stability"))
    spans = data["spans"]
    _need(isinstance(spans, list), "spans must be a list")
    cells, labels = [], []
    for i, span in enumerate(spans):
        _need(
            isinstance(span, dict) and span.get("id") == i,
            f"spans must be numbered 0, 1, ... in order (span {i})",
        )
        c = _cells(span["cells"], grid.d, grid.shape, f"the cells of span {i}")
        _need(c.shape[0] > 0, f"span {i} has no cells")
        cells.append(c)
        labels.append(np.full(c.shape[0], i, dtype=np.int64))
    coords = np.concatenate(cells) if cells else np.zeros((0, grid.d), np.int64)
    lab = np.concatenate(labels) if labels else np.zeros(0, np.int64)
    keys = grid.encode(coords)
    order = np.argsort(keys, kind="stable")
    keys, lab = keys[order], lab[order]
    _need(
        bool(np.all(keys[1:] != keys[:-1])) if keys.size > 1 else True,
        "a cell belongs to more than one span, or twice to one",
    )
    hist = histogram_from_dict(hgrid, data["histogram"]) if "histogram" in data else None
    _need(hist is None or hist.kind == kind, "histogram.kind differs from privacy.histogram")
    used = data.get("guarantee", {})
    _need(isinstance(used, dict), "guarantee must be an object")
    if "n_events" in used:  # what Gamma was computed with must be what the spans need
        layout = SubcellLayout(hgrid, k)
        _need(
            used.get("kappa") == layout.kappa and str(used["n_events"]) == str(layout.n_events),
            "guarantee.kappa / n_events do not match the grid and sub-cells",
        )
        used = {"kappa": layout.kappa, "n_events": layout.n_events}
    out = dict(
        grid=grid,
        core_keys=keys,
        labels=lab,
        min_samples=_int(p["min_samples"], "params.min_samples", 1),
        gamma=_real(data["gamma"], "gamma", 0),
        beta=_real(p["beta"], "params.beta", 0, 1, low_open=True, high_open=True),
        epsilon=_real(priv["epsilon"], "privacy.epsilon", 0, low_open=True),
        delta=_real(priv["delta"], "privacy.delta", 0, 1, high_open=True),
        raise_min_samples=p.get("raise_min_samples", True),
        histogram_kind=kind,
        noise=_choice(priv["noise"], "privacy.noise", ("discrete", "laplace", "none")),
        theta=_theta(data.get("theta")),
        histogram=hist,
        metadata=data.get("metadata", {}),
        subcells=k,
        border=_real(p.get("border", 0.0), "params.border", 0),
        margin=p.get("margin", "paper")
        if p.get("core") == "density"
        else _choice(p.get("margin", "paper"), "params.margin", ("chernoff", "paper")),
        eta=eta,
        kappa=used.get("kappa"),
        n_events=used.get("n_events"),
        hist_grid=hgrid,
        gamma_upper=None if data.get("gamma_upper") is None else _real(data["gamma_upper"], "gamma_upper", 0),
    )
    _need(isinstance(out["raise_min_samples"], bool), "params.raise_min_samples must be true or false")
    out["core"] = _choice(p.get("core", "bound"), "params.core", ("density", "bound"))
    if out["core"] == "bound" and out["gamma_upper"] is not None:
        # both margins are a function of public values: they must be the ones
        # the spans were made with
        layout = SubcellLayout(hgrid, k)
        theta = out["theta"] if kind != "dense" else 0.0
        want = bounds.margins(
            out["margin"],
            kind,
            out["noise"],
            out["epsilon"],
            layout.kappa,
            layout.n_events,
            out["beta"],
            theta,
        )
        _need(
            all(
                math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
                for a, b in zip((out["gamma"], out["gamma_upper"]), want)
            ),
            "gamma / gamma_upper are not the margins of the model's parameters",
        )
    rule = p.get("margin", "paper")
    if out["core"] == "density":
        out["margin"] = (
            _real(rule, "params.margin", 0)
            if not isinstance(rule, str)
            else _choice(rule, "params.margin", ("chernoff", "pointwise"))
        )
    _need(isinstance(out["metadata"], dict), "metadata must be an object")
    out["release"] = _release(data.get("release"), alpha, eta, out["min_samples"])
    auto = data.get("auto")
    _need(auto is None or isinstance(auto, dict), "auto must be an object")
    out["auto"] = auto
    return out


def _width(part, name: str):
    """A stored cell width (None when absent: older files)."""
    if not isinstance(part, dict) or "width" not in part:
        return None
    return _real(part["width"], name, 0, low_open=True)


def _release(raw, alpha: float, eta: float, min_samples: int) -> dict:
    """The parameters of the fit that spent the budget (older files: the model's own)."""
    if raw is None:
        return {"eps": alpha, "eta": eta, "min_samples": min_samples}
    _need(isinstance(raw, dict), "release must be an object")
    return {
        "eps": _real(raw["eps"], "release.eps", 0, low_open=True),
        "eta": _real(raw["eta"], "release.eta", 0, 4, low_open=True),
        "min_samples": _int(raw["min_samples"], "release.min_samples", 1),
    }


# --------------------------------------------------------------------------- #
# GeoJSON


def model_to_geojson(
    model: SpanModel,
    transform: Callable[[np.ndarray], np.ndarray] | None = None,
    precision: int | Literal["auto"] | None = "auto",
) -> dict:
    """Spans as GeoJSON MultiPolygons (2-D only).

    ``transform`` maps an (m, 2) array of grid-space coordinates to output
    coordinates (e.g. km back to lon/lat); identity by default.

    The polygons are the outlines of the spans' regions
    (:meth:`~dpdbscan.model.spanmodel.SpanModel.outlines`): exterior rings
    counter-clockwise, holes clockwise, every ring simple (RFC 7946).
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
    """
    grid = model.grid
    if grid.d != 2:
        raise ValueError(f"GeoJSON export needs 2-D spans, these are {grid.d}-D")
    stats = span_stats(model)
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
    if precision is not None:
        xy = np.round(xy, precision)
    points = xy.tolist()
    ro, po, go = (out.ring_offsets.tolist(), out.polygon_offsets.tolist(), out.group_offsets.tolist())
    features = []
    for s in range(model.n_spans):
        mp = [[points[ro[r] : ro[r + 1]] for r in range(po[p], po[p + 1])] for p in range(go[s], go[s + 1])]
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
            "epsilon": model.epsilon,
            "delta": model.delta,
            "alpha": grid.alpha,
            "min_samples": model.min_samples,
            "coordinate_decimals": precision,
        },
        "features": features,
    }


#: Decimals of lon/lat in GeoJSON: 1e-7 degree is about 1.1 cm (latitude).
GEO_DECIMALS = 7


# --------------------------------------------------------------------------- #
# helpers


def json_number(x: float) -> float | str | None:
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
    return {
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "zlib_base64": base64.b64encode(_deflate(arr.tobytes())).decode("ascii"),
    }


def _deflate(raw: bytes) -> bytes:
    """A zlib stream of ``raw`` at level 1: by ISA-L when ``isal`` is installed
    (about 4 times faster: 0.04 s against 0.15 s for the 17.6 MB histogram of
    full Cabs here, within 1% of the size), else by zlib. Either is read back
    by ``zlib.decompress``."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.compress(raw, 1)
    return isal_zlib.compress(raw, 1)


def unpack(d: dict) -> np.ndarray:
    _need(
        isinstance(d, dict) and isinstance(d.get("dtype"), str) and isinstance(d.get("shape"), list),
        "a packed array needs dtype, shape and zlib_base64",
    )
    dtype = np.dtype(d["dtype"])
    _need(dtype.kind in "iuf" and dtype.itemsize <= 8, f"packed arrays hold numbers, not {dtype}")
    raw = zlib.decompress(base64.b64decode(d["zlib_base64"], validate=True))
    arr = np.frombuffer(raw, dtype=dtype).reshape(d["shape"])
    return arr.astype(np.int64) if arr.dtype.kind in "iu" else arr.copy()


def histogram_to_dict(h: NoisyHistogram) -> dict:
    out = {
        "kind": h.kind,
        "theta": json_number(h.theta),
        "noise": h.noise,
        "epsilon": h.epsilon,
        "delta": h.delta,
        "values": pack(h.values),
    }
    if h.kind != "dense":
        keys, _ = h.sparse()
        out["cells"] = pack(h.grid.decode(keys))
    return out


def _theta(value) -> float:
    """theta as saved: a number, "-inf" (dense) or null (unknown)."""
    if value is None:
        return float("nan")
    _need(
        value in ("-inf", "inf") or (isinstance(value, (int, float)) and not isinstance(value, bool)),
        f"theta must be a number or null, got {value!r}",
    )
    return float(value)


def histogram_from_dict(grid: Grid, d: dict) -> NoisyHistogram:
    """The released histogram of a model file, checked against its grid."""
    _need(isinstance(d, dict), "histogram must be an object")
    kind = _choice(d["kind"], "histogram.kind", ("dense", "sparse", "stability"))
    theta = _theta(d.get("theta"))
    values = unpack(d["values"])
    _need(
        values.dtype.kind in "iuf" and bool(np.all(np.isfinite(values))),
        "histogram values must be finite numbers",
    )
    keys = None
    if kind != "dense":
        _need(values.ndim == 1, "histogram values must be a list")
        c = _cells(unpack(d["cells"]), grid.d, grid.shape, "histogram cells")
        _need(c.shape[0] == values.size, "histogram cells and values differ in number")
        keys = grid.encode(c)
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        _need(bool(np.all(keys[1:] != keys[:-1])) if keys.size > 1 else True, "histogram cells repeat")
    else:
        _need(tuple(values.shape) == tuple(grid.shape), "histogram shape does not match the grid")
    return NoisyHistogram(
        grid=grid,
        kind=kind,
        values=values,
        keys=keys,
        theta=theta,
        noise=_choice(d["noise"], "histogram.noise", ("discrete", "laplace", "none")),
        epsilon=_real(d["epsilon"], "histogram.epsilon", 0, low_open=True),
        delta=_real(d.get("delta", 0.0), "histogram.delta", 0, 1, high_open=True),
    )


__all__ = [
    "FORMAT",
    "VERSION",
    "model_to_dict",
    "model_kwargs",
    "model_to_geojson",
    "histogram_to_dict",
    "histogram_from_dict",
    "jsonable",
    "json_number",
]
