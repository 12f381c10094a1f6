"""Longitude/latitude in degrees to kilometres, and lengths with units.

DBSCAN needs Euclidean distances, so geographic points are projected to a
local plane in km before the grid is laid, as in the paper (Section
"Experiments": 111.2 km per degree of latitude, longitude scaled by the cosine
of the latitude). The projection is equirectangular::

    x_km = (lon - lon0) * 111.195 * cos(ref_lat)
    y_km = (lat - lat0) * 111.195

Privacy: the origin ``(lon0, lat0)`` and ``ref_lat`` steer the grid, so they
must be public. :meth:`Equirectangular.from_bounds` takes them from the public
bounding box (its centre), never from the points. The projection is stored in
the model's metadata so that GeoJSON and plots map spans back to lon/lat and
``predict`` accepts lon/lat.

Accuracy: east-west distances are exact at ``ref_lat`` and off by the factor
``cos(lat) / cos(ref_lat)`` elsewhere, which is below 0.5 % within about 0.3
degrees of latitude of ``ref_lat`` at mid latitudes: fine for a city, not for
a continent (see :meth:`Equirectangular.max_scale_error`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Kilometres per degree of a great circle on the mean Earth sphere
#: (radius 6371.0088 km): 2 * pi * 6371.0088 / 360.
#: A 1-D sequence of numbers (a list, a tuple or an array).
Vector = Sequence[float] | np.ndarray

KM_PER_DEGREE = 111.195

#: Column names recognised as longitude and latitude (lower case).
LON_NAMES = ("lon", "lng", "long", "longitude")
LAT_NAMES = ("lat", "latitude")

_LENGTH = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zA-Z]*)\s*$")
_TO_KM = {"m": 1e-3, "km": 1.0}


def parse_length(text: str | float, *, geo: bool) -> float:
    """A length such as ``"50m"``, ``"0.05km"`` or ``"0.05"``.

    With ``geo=True`` the result is in km: a number (int or float) means km,
    and text needs a unit (``"50"`` is refused: 50 m or 50 km?). Without it,
    the result is in the data's own units and units are refused, because
    metres mean nothing for data that are not projected.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    m = _LENGTH.match(str(text))
    if not m:
        raise ValueError(f"eps must be a number, optionally with a unit (50m, 0.05km), got {text!r}")
    value, unit = float(m.group(1)), m.group(2).lower()
    if not unit:
        if geo:
            raise ValueError(
                f"with --geo give eps with a unit, such as {m.group(1)}m or {m.group(1)}km, got "
                f"{text!r} (a bare number would be km: {value:g} km)"
            )
        return value
    if unit not in _TO_KM:
        raise ValueError(f"eps has an unknown unit {m.group(2)!r} in {text!r}: use m or km")
    if not geo:
        raise ValueError(
            f"eps={text!r} has a unit, which only makes sense with --geo (lon/lat data); "
            "without --geo, eps is in the units of the data"
        )
    return value * _TO_KM[unit]


def format_km(km: float) -> str:
    """A length in km as a person writes it, to three significant digits:
    ``0.05`` -> ``"50 m"``, ``0.171573`` -> ``"172 m"``, ``0.0353553`` ->
    ``"35.4 m"``, ``1.2`` -> ``"1.2 km"``, ``190.4`` -> ``"190 km"``. For
    messages and summaries only: the model, its JSON and GeoJSON keep the
    exact values."""
    if not math.isfinite(km):
        return f"{km} km"
    metres = _three_digits(km * 1000)
    if abs(metres) < 1000:
        return f"{_plain(metres)} m"
    return f"{_plain(_three_digits(km))} km"


def latitude_text(lat: float, decimals: int = 4) -> str:
    """A latitude as a person writes it, with its hemisphere: ``37.77`` ->
    ``"37.7700 deg N"``, ``-33.45`` -> ``"33.4500 deg S"`` (not "-33.4500
    deg N", which reads as a latitude in the north)."""
    return f"{abs(lat):.{decimals}f} deg {'S' if lat < 0 else 'N'}"


def _three_digits(value: float) -> float:
    if value == 0:
        return 0.0
    return round(value, 2 - math.floor(math.log10(abs(value))))


def _plain(value: float) -> str:
    """A rounded value without an exponent or trailing zeros, thousands
    separated (``1,250``)."""
    decimals = 0 if value == 0 else max(0, 2 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def check_lonlat_box(lower: Vector, upper: Vector) -> None:
    """Refuse a degree box that cannot be (lon_min, lat_min, lon_max, lat_max)."""
    (lon_lo, lat_lo), (lon_hi, lat_hi) = lower, upper
    if not (-90 <= lat_lo < lat_hi <= 90):
        raise ValueError(
            f"--geo bounds must be lon_min lat_min lon_max lat_max in degrees with "
            f"-90 <= lat_min < lat_max <= 90, got latitudes {lat_lo:g}..{lat_hi:g}"
        )
    if not (-180 <= lon_lo < lon_hi <= 360):
        across = ""
        if -540 <= lon_lo < -180 < lon_hi <= 180:
            across = (
                f"; a box across the antimeridian is written east of 180: {lon_lo + 360:g} .. "
                f"{lon_hi + 360:g} (points at -179.9 or 180.1 are read alike)"
            )
        raise ValueError(
            f"--geo bounds must be lon_min lat_min lon_max lat_max in degrees with "
            f"-180 <= lon_min < lon_max <= 360, got longitudes {lon_lo:g}..{lon_hi:g}{across}"
        )


def check_lonlat_names(names: Sequence[object] | None, fix: str = "--columns {lon} {lat}") -> None:
    """Refuse, before any record is read, two coordinate columns whose public
    names say latitude first: ``y``/``lat``/``latitude`` in the longitude
    position or ``x``/``lon``/``lng``/``long``/``longitude`` in the
    latitude position. The names are public (``--columns``, a declared
    header, a Parquet schema, a DataFrame's columns); a release of swapped
    coordinates would spend the budget on a box the points mostly miss.
    ``fix`` says how to give them in order (``{lon}``, ``{lat}``: the names)."""
    if names is None or len(names) != 2:
        return
    first, second = (str(n).strip().lower() for n in names)
    if first in ("y", *LAT_NAMES) or second in ("x", *LON_NAMES):
        first_name, second_name = (str(n) for n in names)
        raise ValueError(
            f"the coordinates look swapped: {first_name!r} is in the longitude position and "
            f"{second_name!r} in the latitude position; longitude comes first: "
            f"{fix.format(lon=second_name, lat=first_name)}. Nothing was read or spent"
        )


def _the_short_way(east: np.ndarray) -> None:
    """Degrees east of the centre, in place, each the short way round: a
    value 180 or more degrees from the centre is the same meridian 360
    degrees the other way. Inside a box (less than 180 degrees either side
    of its centre) this changes nothing; it lets a box across the
    antimeridian (``--bounds 179.5 -17 180.5 -16``) hold points written from
    -180 to 180 (``-179.9``) and from 0 to 360 (``180.1``) alike. Each value
    alone, by the public centre: a per-record rule."""
    west = east < -180.0
    if west.any():
        east[west] += 360.0
    far_east = east >= 180.0
    if far_east.any():
        east[far_east] -= 360.0


@dataclass(frozen=True)
class Equirectangular:
    """Equirectangular projection of (lon, lat) degrees to (x, y) km.

    Parameters
    ----------
    lon0, lat0 : float
        Origin in degrees (maps to (0, 0) km). Public.
    ref_lat : float
        Latitude where east-west distances are exact. Public.
    """

    lon0: float
    lat0: float
    ref_lat: float

    def __post_init__(self) -> None:
        for name in ("lon0", "lat0", "ref_lat"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number of degrees, got {name}={v!r}")
        if not -89 <= self.ref_lat <= 89:
            raise ValueError(
                f"ref_lat must be within [-89, 89] degrees (the projection degenerates at "
                f"the poles), got ref_lat={self.ref_lat!r}"
            )

    @classmethod
    def from_bounds(cls, lower: Vector, upper: Vector, ref_lat: float | None = None) -> Equirectangular:
        """Centred on the public box ``[lower, upper]`` = (lon, lat) corners."""
        check_lonlat_box(lower, upper)
        lon0 = (float(lower[0]) + float(upper[0])) / 2
        lat0 = (float(lower[1]) + float(upper[1])) / 2
        return cls(lon0, lat0, lat0 if ref_lat is None else float(ref_lat))

    @property
    def kx(self) -> float:
        """km per degree of longitude at ``ref_lat``."""
        return KM_PER_DEGREE * math.cos(math.radians(self.ref_lat))

    @property
    def aspect(self) -> float:
        """Axis aspect for lon/lat plots that look right at ``ref_lat``."""
        return 1.0 / math.cos(math.radians(self.ref_lat))

    def forward(self, lonlat: Vector, out: np.ndarray | None = None) -> np.ndarray:
        """(n, 2) lon/lat in degrees -> (n, 2) x/y in km.

        ``out`` (optional, float64 of the same shape, may be ``lonlat``
        itself) receives the result, so a big array can be projected in place.
        """
        P = np.asarray(lonlat, dtype=np.float64)
        if P.ndim != 2 or P.shape[1] != 2:
            raise ValueError(f"geographic points must be (n, 2) lon/lat columns, got shape {P.shape}")
        if out is None:
            out = np.empty_like(P)
        # column by column, with scalars: broadcasting a pair over the rows
        # runs numpy's inner loop two values at a time (six times slower on
        # the blocks ``fit`` projects while reading); the same arithmetic per value
        for j, (origin, scale) in enumerate(((self.lon0, self.kx), (self.lat0, KM_PER_DEGREE))):
            col = out[:, j]
            np.subtract(P[:, j], origin, out=col)
            if j == 0:
                _the_short_way(col)
            # a coordinate near 1e308 becomes inf, which the clean rule drops
            # alone; numpy's warning of it would be one record's doing (and,
            # where warnings are errors, would stop the fit: docs/privacy.md
            # section 8, round 13)
            with np.errstate(over="ignore"):
                np.multiply(col, scale, out=col)
        return out

    def inverse(self, xy: Vector) -> np.ndarray:
        """(n, 2) x/y in km -> (n, 2) lon/lat in degrees."""
        P = np.asarray(xy, dtype=np.float64)
        out = np.empty_like(P)
        out[..., 0] = P[..., 0] / self.kx + self.lon0
        out[..., 1] = P[..., 1] / KM_PER_DEGREE + self.lat0
        return out

    def project_bounds(self, lower: Vector, upper: Vector) -> tuple[np.ndarray, np.ndarray]:
        """Degree box -> km box (exact: the projection is axis-aligned affine)."""
        km = self.forward(np.array([lower, upper], dtype=np.float64))
        return km[0], km[1]

    def max_scale_error(self, lower: Vector, upper: Vector) -> float:
        """Largest relative error of east-west distances inside the degree box."""
        c0 = math.cos(math.radians(self.ref_lat))
        errs = [abs(math.cos(math.radians(lat)) / c0 - 1) for lat in (lower[1], upper[1])]
        if lower[1] < 0 < upper[1]:
            errs.append(abs(1 / c0 - 1))
        return max(errs)

    def to_dict(self) -> dict:
        return {
            "kind": "equirectangular",
            "lon0": self.lon0,
            "lat0": self.lat0,
            "ref_lat": self.ref_lat,
            "km_per_degree": KM_PER_DEGREE,
            "units": "km",
        }

    @classmethod
    def from_dict(cls, d: dict) -> Equirectangular:
        if not isinstance(d, dict) or d.get("kind") != "equirectangular":
            raise ValueError(f"unknown projection in model metadata: {d!r}")
        if d.get("km_per_degree", KM_PER_DEGREE) != KM_PER_DEGREE:
            raise ValueError(
                f"model projection uses km_per_degree={d['km_per_degree']!r}, "
                f"this version uses {KM_PER_DEGREE}"
            )
        try:
            return cls(float(d["lon0"]), float(d["lat0"]), float(d["ref_lat"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed projection in model metadata: {exc!r}") from None


def projection_of(model: object) -> Equirectangular | None:
    """The projection stored in a span model's metadata, if any."""
    d = getattr(model, "metadata", {}).get("projection")
    return None if d is None else Equirectangular.from_dict(d)


def eps_text(model: object, value: float) -> str:
    """A length of the span model ``model`` as its summary says it: metres
    or km for a --geo model (:func:`format_km`, "172 m"), else the data's
    own units (``:g``)."""
    return format_km(value) if projection_of(model) is not None else f"{value:g}"


def default_geo_columns(names: Sequence[str]) -> list[str] | None:
    """(lon, lat) column names when the header names them, else None."""
    lower = {str(n).lower(): n for n in names}
    lon = next((lower[n] for n in LON_NAMES if n in lower), None)
    lat = next((lower[n] for n in LAT_NAMES if n in lower), None)
    return [lon, lat] if lon is not None and lat is not None else None


__all__ = [
    "KM_PER_DEGREE",
    "Equirectangular",
    "parse_length",
    "format_km",
    "projection_of",
    "default_geo_columns",
    "check_lonlat_box",
    "check_lonlat_names",
]
