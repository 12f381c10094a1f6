"""The public box a fit's grid is laid over, and the lengths given with it.

Everything here is computed from public input (the bounds, the options),
with one marked exception: ``--bounds-from-data``, which reads the points and
voids the guarantee. The lon/lat projection is built here only
(:func:`project_box`), from the public box and never from the points, and a
length such as ``"200m"`` is read here only (:func:`length`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..exceptions import PrivacyLeakWarning
from ..geometry.projection import Equirectangular, Vector, parse_length
from ..params.validation import bounds_from_data, check_bounds


def read_length(text: str | float, *, geo: bool, auto: bool = False) -> float | Literal["auto"]:
    """A length option: ``"200m"``, ``"0.2km"`` or a number (km with
    ``geo``, else the data's own units); ``"auto"`` (any case) when ``auto``
    allows it. The one place a length is read."""
    if auto and isinstance(text, str) and text.strip().lower() == "auto":
        return "auto"
    return parse_length(text, geo=geo)


def split_bounds(
    values: Sequence[float], d: int, geo: bool, from_input: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``lower_1..lower_d upper_1..upper_d`` (or one lower and one upper).
    ``from_input``: d is the number of columns read from the input (the
    command line without --columns takes every column but ``label``), so a
    count that does not match says how to choose the columns."""
    if geo and len(values) != 4:
        raise ValueError(
            f"--bounds with --geo needs 4 numbers in degrees: lon_min lat_min lon_max lat_max, "
            f"got {len(values)}"
        )
    if len(values) == 2:
        return check_bounds((values[0], values[1]), d)
    if len(values) != 2 * d:
        more = ""
        if from_input and len(values) % 2 == 0:
            # a table of readings with an id or a class column beside its features
            more = (
                f". The input gives d = {d} columns to cluster (without --columns, every column but "
                f"one named label, ids and classes too): if the data have {len(values) // 2} "
                "coordinates, name them with --columns (names or 0-based indices)"
            )
        raise ValueError(
            f"--bounds needs 2 numbers (one lower and one upper for every column) or "
            f"2*d = {2 * d} numbers (lower_1 .. lower_{d} upper_1 .. upper_{d}), got {len(values)}{more}"
        )
    try:
        return check_bounds((values[:d], values[d:]), d)
    except ValueError as exc:
        # Suggest an order only when it is valid: the upper bounds given first,
        # or min_1 max_1 min_2 max_2 ... (public: the option's own values).
        readings = (
            ("the upper bounds came first", list(values[d:]) + list(values[:d])),
            ("the values are in the order xmin xmax ymin ymax", list(values[0::2]) + list(values[1::2])),
        )
        for why, order in readings:
            if all(lo < hi for lo, hi in zip(order[:d], order[d:])):
                shown = " ".join(f"{v:g}" for v in order)
                raise ValueError(
                    f"{exc}. It looks as if {why}: --bounds wants all lower bounds, then all upper "
                    f"bounds (xmin ymin xmax ymax): --bounds {shown}"
                ) from None
        raise


def project_box(
    lower: Vector, upper: Vector, ref_lat: float | None
) -> tuple[Equirectangular, np.ndarray, np.ndarray]:
    """The lon/lat projection of a public box in degrees (centred on the box,
    exact at ``ref_lat``, default its middle latitude) and the box in km.
    The one place the projection is built."""
    proj = Equirectangular.from_bounds(lower, upper, ref_lat)
    lo, hi = proj.project_bounds(lower, upper)
    return proj, lo, hi


@dataclass
class Box:
    """The public box in the fit's coordinates (km with a projection), the
    projection (or None) and what the model records about them (``meta``:
    ``bounds_source``, ``projection``, ``bounds_degrees``, in that order)."""

    lower: np.ndarray
    upper: np.ndarray
    proj: Equirectangular | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def public_box(
    bounds: Any,
    d: int,
    *,
    flat: bool,
    geo: bool = False,
    ref_lat: float | None = None,
    X: np.ndarray | None = None,
    label: str | None = None,
    cli: bool = False,
    stacklevel: int = 2,
) -> Box:
    """The box from public ``bounds``, projected to km with ``geo``.

    ``bounds``: the flat list ``lower_1 .. lower_d upper_1 .. upper_d`` (or
    two numbers) of ``--bounds`` and :func:`~dpdbscan.estimator.fit_lonlat`
    (``flat``), or the estimator's pair ``(lower, upper)``. None takes the
    box from ``X`` (the private points, which voids the guarantee: warned).
    ``label`` names where public bounds came from in the model's
    ``bounds_source`` (None: not recorded, as ``DPDBSCAN.fit`` never did);
    bounds from the data are always recorded, and every published file
    then says the guarantee is void (:func:`dpdbscan.model.describe.guarantee_void`).
    ``cli``: the warnings in the command line's words, on standard error;
    else ``stacklevel`` (as for :func:`warnings.warn`) places the warning.
    """
    meta: dict[str, Any] = {}
    if bounds is not None:
        lower, upper = split_bounds(bounds, d, geo) if flat else check_bounds(bounds, d)
        if label is not None:
            meta["bounds_source"] = f"public ({label})"
    else:
        if X is None:  # a distributed backend reads the data only in the fit
            raise ValueError(
                "--bounds-from-data needs the points in memory; give --bounds"
                if cli
                else "bounds are required with a distributed backend"
            )
        if cli:
            with warnings.catch_warnings():
                # Said once below, in the command line's own words.
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                lower, upper = bounds_from_data(X)
            print(
                "dpdbscan: PRIVACY WARNING: --bounds-from-data computes the bounds from the private "
                "data: this leaks information and the release has NO differential privacy guarantee",
                file=sys.stderr,
            )
            meta["bounds_source"] = "data (--bounds-from-data): NO differential privacy guarantee"
        else:
            lower, upper = bounds_from_data(X, stacklevel=stacklevel + 1)
            meta["bounds_source"] = "data (bounds=None): NO differential privacy guarantee"
    proj = None
    if geo:
        proj, lo_km, hi_km = project_box(lower, upper, ref_lat)
        err = proj.max_scale_error(lower, upper)
        if cli and err > 0.01:
            print(
                f"dpdbscan: warning: the --geo box spans latitudes {lower[1]:g}..{upper[1]:g}; "
                f"east-west distances are off by up to {err:.1%} at its edges "
                "(equirectangular projection)",
                file=sys.stderr,
            )
        meta["projection"] = proj.to_dict()
        meta["bounds_degrees"] = {"lower": list(map(float, lower)), "upper": list(map(float, upper))}
        lower, upper = lo_km, hi_km
    return Box(lower, upper, proj, meta)
