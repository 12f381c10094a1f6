"""A context layer under the spans: streets, coastlines or any lines the user
supplies as GeoJSON, since the map and the pictures work offline and cannot
fetch tiles.

The file is public input, like the bounds: it is read only to be drawn, and it
never reaches the release or the mechanism. It is clipped to the public box,
snapped to a fine grid (a quarter of a span cell), simplified to within that
step and limited in size, so that the map stays one reasonably small file. GeoJSON only: other vector formats
convert with GDAL, ``ogr2ogr -f GeoJSON -t_srs EPSG:4326 out.geojson in.shp``.

Coordinates are longitude and latitude in degrees (GeoJSON's own system) for
geographic models; for other models they are read in the model's data units.
LineString, MultiLineString, Polygon and MultiPolygon geometries are drawn as
lines (polygon rings as closed lines, not filled); points are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..geometry.projection import projection_of
from .mapstyle import public_box

if TYPE_CHECKING:
    from ..model.record import SpanModel

#: Largest context file read, in bytes (parsing GeoJSON takes about ten
#: times its size in memory).
MAX_CONTEXT_BYTES = 32 * 2**20

#: Most vertices kept after clipping and snapping: about 2 MB of the page.
MAX_CONTEXT_VERTICES = 200_000

#: Vertices are snapped to this fraction of the span grid's cell width, and
#: lines simplified to within it (every point read lies within about 1.7 of
#: these steps of the line drawn: a few metres at a city's eps).
SNAP_CELLS = 0.25

_LINES = {"LineString": 1, "MultiLineString": 2, "Polygon": 2, "MultiPolygon": 3}
_SKIPPED = {"Point", "MultiPoint"}
_MAX_DEPTH = 16
_CONVERT = "ogr2ogr -f GeoJSON -t_srs EPSG:4326 out.geojson in.shp converts other formats"


@dataclass(frozen=True)
class Context:
    """Lines of a context layer, clipped to the public box and snapped.

    Line ``i`` is ``vertices[offsets[i]:offsets[i + 1]]``, integer multiples
    of ``step`` from ``origin`` (model coordinates: km for geographic models).

    Attributes
    ----------
    origin : ndarray of shape (2,)
    step : float
    vertices : ndarray of int64, shape (n, 2)
    offsets : ndarray of int64, shape (n_lines + 1,)
    n_read : int
        Vertices read from the file (lines and rings).
    n_points : int
        Point geometries skipped.
    """

    origin: np.ndarray
    step: float
    vertices: np.ndarray
    offsets: np.ndarray
    n_read: int
    n_points: int

    @property
    def n_lines(self) -> int:
        return int(self.offsets.size - 1)

    def lines(self) -> list[np.ndarray]:
        """Every line as an (m, 2) array of model coordinates."""
        xy = self.origin + self.vertices.astype(np.float64) * self.step
        return [xy[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]

    def describe(self) -> str:
        """One line for the user: what was kept of the file."""
        skipped = f"; {self.n_points:,} point(s) skipped" if self.n_points else ""
        return (
            f"context layer: {self.n_lines:,} line(s), {int(self.vertices.shape[0]):,} of "
            f"{self.n_read:,} vertices kept (clipped to the public box and simplified){skipped}"
        )


def load_context(source: Path | str | dict, model: SpanModel) -> Context:
    """Read a GeoJSON file (or an already parsed GeoJSON object) as the
    context layer of ``model``'s pictures.

    Raises
    ------
    ValueError
        When the file is too big, is not GeoJSON, holds no line or polygon in
        the public box, or keeps more than :data:`MAX_CONTEXT_VERTICES`
        vertices. Messages name the file, never text read from it.
    """
    if model.grid.d != 2:
        raise ValueError(f"a context layer needs a 2-D model, this one is {model.grid.d}-D")
    name = "the context layer" if isinstance(source, dict) else str(source)
    data = source if isinstance(source, dict) else _read_json(Path(source))
    geo = projection_of(model)
    _check_crs(data, name, geo is not None)
    parts: list[np.ndarray] = []
    n_points = _collect(data, name, parts, 0)
    n_read = int(sum(p.shape[0] for p in parts))
    if not parts:
        raise ValueError(
            f"{name} holds no line or polygon (GeoJSON LineString, Polygon or their Multi- forms)"
        )
    xy = np.concatenate(parts)
    if geo is not None:
        if not (np.all(np.abs(xy[:, 0]) <= 180) and np.all(np.abs(xy[:, 1]) <= 90)):
            raise ValueError(
                f"{name}: coordinates beyond +-180 / +-90 are not longitude and latitude in "
                f"degrees, which GeoJSON and --geo models use; reproject it ({_CONVERT})"
            )
        xy = geo.forward(xy)
    starts = np.cumsum([0] + [p.shape[0] for p in parts])
    box_lo, box_hi = public_box(model)
    step = SNAP_CELLS * float(model.grid.width)
    vertices, offsets = _clip_and_snap(xy, starts, box_lo, box_hi, step)
    if offsets.size < 2:
        raise ValueError(
            f"{name}: none of its lines comes into the public box of the model: is it the right "
            "area, with longitude (or x) first?"
        )
    if vertices.shape[0] > MAX_CONTEXT_VERTICES:
        raise ValueError(
            f"{name} is too big for a context layer: {vertices.shape[0]:,} vertices in the public "
            f"box after simplifying (at most {MAX_CONTEXT_VERTICES:,}); keep fewer features "
            "(main roads only, say) or simplify it (ogr2ogr -simplify)"
        )
    return Context(box_lo, step, vertices, offsets, n_read, n_points)


# --------------------------------------------------------------------------- #
# reading


def _read_json(path: Path) -> Any:
    size = path.stat().st_size
    if size > MAX_CONTEXT_BYTES:
        raise ValueError(
            f"{path} is too big for a context layer: {size / 2**20:.0f} MB (at most "
            f"{MAX_CONTEXT_BYTES // 2**20} MB); clip it to the public box first "
            "(ogr2ogr -f GeoJSON -clipsrc XMIN YMIN XMAX YMAX small.geojson big.geojson)"
        )
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not GeoJSON: not UTF-8 text ({_CONVERT})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # exc.msg is the parser's own phrase, never the file's text
        raise ValueError(
            f"{path} is not GeoJSON: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            f"{_CONVERT}"
        ) from None
    except RecursionError:
        raise ValueError(f"{path} is not GeoJSON: nested too deeply") from None


def _check_crs(data: Any, name: str, geo: bool) -> None:
    """The 2008 GeoJSON draft's ``crs`` member: only WGS 84 lon/lat is read
    as such for geographic models."""
    crs = data.get("crs") if isinstance(data, dict) else None
    if crs is None or not geo:
        return
    label = json.dumps(crs)
    if not any(tag in label for tag in ("CRS84", "4326")):
        raise ValueError(
            f"{name} names a coordinate system other than longitude/latitude (WGS 84); "
            f"reproject it ({_CONVERT})"
        )


def _collect(obj: Any, name: str, out: list[np.ndarray], depth: int) -> int:
    """Append every line and ring of the GeoJSON object ``obj`` to ``out``;
    returns the number of point geometries skipped."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"{name} is not GeoJSON: geometries nested too deeply")
    kind = obj.get("type") if isinstance(obj, dict) else None
    if kind == "FeatureCollection":
        features = obj.get("features")
        if not isinstance(features, list):
            raise ValueError(f"{name} is not GeoJSON: a FeatureCollection without a list of features")
        return sum(_collect(f, name, out, depth + 1) for f in features)
    if kind == "Feature":
        geometry = obj.get("geometry")
        return 0 if geometry is None else _collect(geometry, name, out, depth + 1)
    if kind == "GeometryCollection":
        geometries = obj.get("geometries")
        if not isinstance(geometries, list):
            raise ValueError(f"{name} is not GeoJSON: a GeometryCollection without a list of geometries")
        return sum(_collect(g, name, out, depth + 1) for g in geometries)
    if kind in _SKIPPED:
        return 1
    if kind in _LINES:
        for line in _lines(obj.get("coordinates"), _LINES[kind], name):
            out.append(line)
        return 0
    raise ValueError(
        f"{name} is not GeoJSON: expected a FeatureCollection, a Feature or a geometry "
        "(LineString, Polygon, their Multi- forms, GeometryCollection)"
    )


def _lines(coords: Any, depth: int, name: str) -> Iterator[np.ndarray]:
    """The position lists ``depth`` levels down ``coords`` (1: a LineString,
    2: a Polygon or MultiLineString, 3: a MultiPolygon) as (m, 2) arrays."""
    if not isinstance(coords, list):
        raise ValueError(f"{name} is not GeoJSON: a geometry without a list of coordinates")
    if depth > 1:
        for c in coords:
            yield from _lines(c, depth - 1, name)
        return
    try:
        xy = np.asarray(coords, dtype=np.float64)
        if xy.ndim != 2 or xy.shape[1] < 2:
            raise ValueError  # positions of mixed lengths (some with an altitude)
        xy = xy[:, :2]
    except (TypeError, ValueError):
        try:
            xy = np.array([(float(p[0]), float(p[1])) for p in coords], dtype=np.float64).reshape(-1, 2)
        except (TypeError, ValueError, IndexError, KeyError):
            raise ValueError(f"{name} is not GeoJSON: a position that is not two or more numbers") from None
    if not np.all(np.isfinite(xy)):
        raise ValueError(f"{name} is not GeoJSON: a coordinate that is not a finite number")
    if xy.shape[0] >= 2:
        yield xy


# --------------------------------------------------------------------------- #
# clipping and snapping


def _clip_and_snap(
    xy: np.ndarray, starts: np.ndarray, lo: np.ndarray, hi: np.ndarray, step: float
) -> tuple[np.ndarray, np.ndarray]:
    """Keep the segments whose bounding box meets the box ``[lo, hi]``
    (splitting lines where segments are dropped), snap the vertices to
    multiples of ``step`` from ``lo``, drop repeated vertices, and simplify
    each line to within one ``step`` (Douglas-Peucker). Returns (vertices,
    offsets) in units of ``step``."""
    n = xy.shape[0]
    line_start = np.zeros(n, dtype=bool)
    line_start[starts[:-1]] = True
    a, b = xy[:-1], xy[1:]
    seg_lo, seg_hi = np.minimum(a, b), np.maximum(a, b)
    kept = ~line_start[1:] & np.all((seg_hi >= lo) & (seg_lo <= hi), axis=1)
    prev = np.r_[False, kept[:-1]]
    nxt = np.r_[kept[1:], False]
    run_s = np.flatnonzero(kept & ~prev)  # first segment of a run
    run_e = np.flatnonzero(kept & ~nxt)  # last segment of a run
    if run_s.size == 0:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(1, dtype=np.int64)
    idx, run = _ranges(run_s, run_e + 2)
    q = np.rint((xy[idx] - lo) / step).astype(np.int64)
    first = np.r_[True, run[1:] != run[:-1]]
    keep = first | np.any(q != np.roll(q, 1, axis=0), axis=1)
    q, run = q[keep], run[keep]
    bounds = np.r_[0, np.cumsum(np.bincount(run, minlength=run_s.size))]
    keep = _douglas_peucker(q.astype(np.float64), bounds, 1.0)
    q, run = q[keep], run[keep]
    counts = np.bincount(run, minlength=run_s.size)
    long_enough = counts >= 2
    q = q[long_enough[run]]
    offsets = np.r_[0, np.cumsum(counts[long_enough])].astype(np.int64)
    return q, offsets


def _douglas_peucker(p: np.ndarray, bounds: np.ndarray, tol: float) -> np.ndarray:
    """Which vertices the Douglas-Peucker rule keeps, for every line
    ``p[bounds[i]:bounds[i + 1]]`` at once: each dropped vertex lies within
    ``tol`` of the segment of the simplified line that replaces it, and the
    ends of every line are kept. All lines are split one level per pass (the
    rule's sub-problems are independent), so the loop runs as many times as
    the deepest split, not once per line."""
    keep = np.zeros(p.shape[0], dtype=bool)
    keep[bounds[:-1]] = keep[bounds[1:] - 1] = True
    a, b = bounds[:-1], bounds[1:] - 1
    while True:
        a, b = a[b - a >= 2], b[b - a >= 2]
        if a.size == 0:
            return keep
        idx, which = _ranges(a + 1, b)  # the inner vertices of every open interval
        start, seg = p[a][which], p[b][which] - p[a][which]
        rel = p[idx] - start
        length2 = np.sum(seg * seg, axis=1)
        # distance to the segment (a ring's ends coincide: distance to that point)
        t = np.clip(np.sum(rel * seg, axis=1) / np.where(length2 > 0, length2, 1.0), 0.0, 1.0)
        dist = np.hypot(*(rel - t[:, None] * seg).T)
        far = np.maximum.reduceat(dist, np.r_[0, np.cumsum(b - a - 1)[:-1]])
        at_max = dist == far[which]
        first = np.r_[True, which[at_max][1:] != which[at_max][:-1]]
        split = idx[at_max][first]  # the farthest inner vertex of each interval
        cut = far > tol
        keep[split[cut]] = True
        a, b = np.r_[a[cut], split[cut]], np.r_[split[cut], b[cut]]


def _ranges(start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated ``arange(start[i], stop[i])`` and the ``i`` of each entry."""
    lengths = stop - start
    run = np.repeat(np.arange(start.size), lengths)
    begin = np.r_[0, np.cumsum(lengths)[:-1]]
    return start[run] + np.arange(int(lengths.sum())) - begin[run], run


def svg_path(context: Context) -> str:
    """The lines as one SVG path in the snapped integer units (``M`` then
    relative ``l`` steps): the enclosing group maps them to the map."""
    out = []
    v = context.vertices
    for a, b in zip(context.offsets[:-1].tolist(), context.offsets[1:].tolist()):
        d = np.diff(v[a:b], axis=0)
        out.append(f"M{v[a, 0]} {v[a, 1]}l" + " ".join(f"{x} {y}" for x, y in d.tolist()))
    return "".join(out)


__all__ = ["Context", "load_context", "svg_path", "MAX_CONTEXT_BYTES", "MAX_CONTEXT_VERTICES", "SNAP_CELLS"]
