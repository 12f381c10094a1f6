"""The released span model: unions of grid cells that classify any point.

A :class:`SpanModel` holds only public parameters and post-processing of the
noisy histogram: the grid, the core cells grouped into spans and (optionally)
the noisy histogram itself. It never holds training points, so saving,
sharing and querying it costs no privacy.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import bounds as _bounds
from .core import core_cells, sum_threshold
from .grid import Grid
from .histograms.base import NoisyHistogram
from .merge import merge_cells
from ._validation import check_array, check_min_samples

FORMAT = "dpdbscan.spans"
VERSION = 1


@dataclass
class SpanModel:
    """DP cluster spans (the release).

    Attributes
    ----------
    grid : Grid
        The grid the spans are made of: the histogram's grid, or its sub-cells
        when ``subcells > 1``.
    core_keys : ndarray
        Sorted keys (in ``grid``) of the core cells.
    labels : ndarray
        Span id of each core cell (0..n_spans-1, numbered by smallest cell).
    min_samples : int
        The user's (non-private) MinPts.
    gamma, gamma_upper : float
        The lower margin Gamma_low (UB~ = noisy sum + Gamma_low bounds the true
        sum from above) and the upper margin Gamma_up (the noisy sum exceeds
        the true one by at most Gamma_up), both with probability >= 1 - beta
        together. ``gamma_upper`` is None in models saved before it was
        recorded: their tau is the old 2 Gamma, valid for dense histograms only.
    tau, beta : float
        Additive error tau = Gamma_low + Gamma_up and failure probability.
    threshold : float
        Core threshold on the noisy upper bound UB~ (MinPts + tau by default).
    epsilon, delta : float
        Privacy parameters of the release.
    histogram : NoisyHistogram or None
        The released noisy histogram (enables re-thresholding).
    subcells : int
        Sub-cells per histogram cell and dimension (1 = the paper's cells).
    border : float
        ``predict`` also assigns a point within this distance of a span's
        cells to the nearest such span (0 = cell membership only).
    margin : str
        How Gamma was bounded: "chernoff" (exact MGF) or "paper".
    eta : float
        Grid parameter of the histogram grid.
    """

    def __post_init__(self):
        if self.eta is None:
            self.eta = self.grid.eta * self.subcells

    @property
    def histogram_grid(self) -> Grid:
        """The grid of the noisy histogram (cell width eta alpha / (4 sqrt d))."""
        if self.subcells == 1:
            return self.grid
        return Grid(self.grid.lower, self.grid.upper, self.grid.alpha, self.eta)


    grid: Grid
    core_keys: np.ndarray
    labels: np.ndarray
    min_samples: int
    gamma: float
    beta: float
    epsilon: float
    delta: float = 0.0
    raise_min_samples: bool = True
    histogram_kind: str = "dense"
    noise: str = "discrete"
    theta: float = 0.0
    histogram: NoisyHistogram | None = field(default=None, repr=False)
    metadata: dict = field(default_factory=dict)
    subcells: int = 1
    border: float = 0.0
    margin: str = "paper"
    eta: float | None = None
    gamma_upper: float | None = None

    # ----------------------------------------------------------- guarantees
    @property
    def tau(self) -> float:
        return _bounds.tau(self.gamma, self.gamma_upper)

    @property
    def threshold(self) -> float:
        """Core threshold on UB~(X) = sum + Gamma."""
        return self.min_samples + (self.tau if self.raise_min_samples else 0.0)

    @property
    def rho(self) -> float:
        k, eta = self.subcells, self.eta
        return 3.0 + eta / 2 + eta / (2 * k) if k > 1 else 3.0 + eta

    @property
    def kappa(self) -> int:
        """|NB(X)| of the histogram grid."""
        from .grid import count_neighbours

        return count_neighbours(self.grid.d, self.eta)

    @property
    def n_cells(self) -> int:
        """|X|, the number of cells of the histogram's universe."""
        return self.histogram_grid.n_cells

    @property
    def n_spans(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0

    @property
    def n_core_cells(self) -> int:
        return int(self.core_keys.size)

    def guarantee(self) -> dict:
        """The sandwich guarantee, in the paper's terms.

        With probability >= 1 - beta every (alpha, MinPts')-cluster lies in one
        span and every span lies in the span of one (rho alpha, MinPts' - tau)
        cluster, where MinPts' = min_samples + tau with the practical rule and
        min_samples with the theoretical one. tau = gamma_lower + gamma_upper:
        the lower margin keeps every true core cell, the upper one bounds how
        far the noisy sums of the other cells can exceed their true sums.
        """
        upper = self.min_samples + (self.tau if self.raise_min_samples else 0.0)
        return {
            "rho": self.rho, "tau": self.tau, "beta": self.beta, "gamma": self.gamma,
            "gamma_lower": self.gamma, "gamma_upper": self.gamma_upper,
            "kappa": self.kappa, "n_cells": self.n_cells, "theta": self.theta,
            "subcells": self.subcells, "margin": self.margin,
            "covers_clusters_at": {"alpha": self.grid.alpha, "min_samples": upper},
            "within_clusters_at": {"alpha": self.rho * self.grid.alpha, "min_samples": upper - self.tau},
            "epsilon": self.epsilon, "delta": self.delta,
        }

    # -------------------------------------------------------------- predict
    def predict(self, X) -> np.ndarray:
        """Span id of each point, -1 for noise (outside every span or the box)."""
        X = check_array(X)
        if X.shape[1] != self.grid.d:
            raise ValueError(
                f"X has {X.shape[1]} features, but the model was fitted with {self.grid.d}"
            )
        out = np.full(X.shape[0], -1, dtype=np.int64)
        if X.shape[0] == 0 or self.core_keys.size == 0:
            return out
        with np.errstate(invalid="ignore"):
            inside = self.grid.inside(X)
        P = X[inside]
        keys = self.grid.keys_of_points(P)
        idx = np.minimum(np.searchsorted(self.core_keys, keys), self.core_keys.size - 1)
        hit = self.core_keys[idx] == keys
        lab = np.full(keys.size, -1, dtype=np.int64)
        lab[hit] = self.labels[idx[hit]]
        if self.border > 0 and not hit.all():
            miss = np.flatnonzero(~hit)
            lab[miss] = self._border_labels(P[miss])
        out[inside] = lab
        return out

    def _border_labels(self, P: np.ndarray) -> np.ndarray:
        """Span of the nearest core cell within ``border`` of each point, else -1.

        Ties go to the smaller span id. Uses only the released cells.
        """
        g = self.grid
        c = g.coords(P)
        best = np.full(P.shape[0], np.inf)
        lab = np.full(P.shape[0], -1, dtype=np.int64)
        for o in _ball_offsets(g.d, self.border / g.width):
            t = c + o
            ok = np.flatnonzero(g.valid(t))
            if ok.size == 0:
                continue
            k = g.encode(t[ok])
            idx = np.minimum(np.searchsorted(self.core_keys, k), self.core_keys.size - 1)
            hit = self.core_keys[idx] == k
            rows = ok[hit]
            lo = g.cell_lower(t[rows])
            gap = np.maximum(np.maximum(lo - P[rows], P[rows] - (lo + g.width)), 0.0)
            dist = np.sqrt((gap * gap).sum(axis=1))
            span = self.labels[idx[hit]]
            better = (dist < self.border) & (
                (dist < best[rows]) | ((dist == best[rows]) & (span < lab[rows])))
            best[rows[better]] = dist[better]
            lab[rows[better]] = span[better]
        return lab

    def span_cells(self, span_id: int | None = None) -> np.ndarray:
        """Integer coordinates of the cells of one span (or of all core cells)."""
        keys = self.core_keys if span_id is None else self.core_keys[self.labels == span_id]
        return self.grid.decode(keys)

    # -------------------------------------------------------- re-threshold
    def with_min_samples(self, min_samples: int) -> "SpanModel":
        """Spans for another MinPts at the same alpha, from the released
        histogram: post-processing, no extra privacy cost."""
        if self.histogram is None:
            raise ValueError("this model was saved without its noisy histogram; cannot re-threshold")
        m = check_min_samples(min_samples)
        return spans_from_histogram(
            self.histogram, m, self.gamma, self.beta,
            raise_min_samples=self.raise_min_samples, delta=self.delta, metadata=dict(self.metadata),
            subcells=self.subcells, border=self.border, margin=self.margin,
            gamma_upper=self.gamma_upper,
        )

    # -------------------------------------------------------------- summary
    def summary(self) -> str:
        g = self.grid
        lines = [
            f"DP-DBSCAN spans: {self.n_spans} span(s) from {self.n_core_cells} core cell(s)",
            f"  privacy : epsilon={self.epsilon:g}, delta={self.delta:g} ({self.noise} noise, "
            f"{self.histogram_kind} histogram)",
            f"  DBSCAN  : alpha={g.alpha:g}, min_samples={self.min_samples}, threshold "
            f"UB~ >= {self.threshold:.1f}",
            f"  grid    : d={g.d}, cell width w={self.histogram_grid.width:.4g}, "
            f"|X|={self.n_cells}, kappa={self.kappa}, sub-cells {self.subcells}^{g.d}",
            f"  margin  : Gamma={self.gamma:.2f}"
            + ("" if self.gamma_upper is None or self.gamma_upper == self.gamma
               else f" (lower), {self.gamma_upper:.2f} (upper)") + f" ({self.margin})"
            + (f", theta={self.theta:g}" if self.histogram_kind != "dense" else "")
            + f", border={self.border:.4g}",
            f"  guarantee: (rho={self.rho:g}, tau={self.tau:.1f}) with probability >= {1 - self.beta:g}",
        ]
        return "\n".join(lines)

    # ----------------------------------------------------------------- JSON
    def to_dict(self, include_histogram: bool = True) -> dict:
        spans = []
        coords = self.grid.decode(self.core_keys)
        for s in range(self.n_spans):
            sel = self.labels == s
            spans.append({"id": s, "n_cells": int(sel.sum()), "cells": coords[sel].tolist()})
        out = {
            "format": FORMAT, "version": VERSION,
            "privacy": {"epsilon": self.epsilon, "delta": self.delta, "noise": self.noise,
                        "histogram": self.histogram_kind},
            "params": {"alpha": self.grid.alpha, "min_samples": self.min_samples,
                       "eta": self.eta, "beta": self.beta,
                       "raise_min_samples": self.raise_min_samples,
                       "subcells": self.subcells, "border": self.border, "margin": self.margin},
            "bounds": {"lower": self.grid.lower.tolist(), "upper": self.grid.upper.tolist()},
            "grid": self.histogram_grid.to_dict(),
            "span_grid": {"width": self.grid.width, "shape": list(self.grid.shape)},
            "guarantee": _jsonable(self.guarantee()),
            "tau": self.tau, "beta": self.beta, "gamma": self.gamma, "theta": _num(self.theta),
            "gamma_upper": self.gamma_upper,
            "spans": spans,
            "metadata": self.metadata,
        }
        if include_histogram and self.histogram is not None:
            out["histogram"] = _histogram_to_dict(self.histogram)
        return out

    def to_json(self, include_histogram: bool = True) -> str:
        return json.dumps(self.to_dict(include_histogram))

    def save(self, path, include_histogram: bool = True) -> None:
        Path(path).write_text(self.to_json(include_histogram))

    @classmethod
    def from_dict(cls, data: dict) -> "SpanModel":
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
            hist = _histogram_from_dict(hgrid, data["histogram"]) if "histogram" in data else None
            priv = data["privacy"]
            return cls(
                grid=grid, core_keys=keys[order], labels=lab[order],
                min_samples=int(p["min_samples"]), gamma=float(data["gamma"]),
                beta=float(p["beta"]), epsilon=float(priv["epsilon"]), delta=float(priv["delta"]),
                raise_min_samples=bool(p.get("raise_min_samples", True)),
                histogram_kind=priv["histogram"], noise=priv["noise"],
                theta=float(data.get("theta") if data.get("theta") is not None else "nan"),
                histogram=hist, metadata=dict(data.get("metadata", {})), subcells=k,
                border=float(p.get("border", 0.0)), margin=str(p.get("margin", "paper")),
                eta=float(p["eta"]),
                gamma_upper=None if data.get("gamma_upper") is None else float(data["gamma_upper"]),
            )
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            raise ValueError(f"malformed dpdbscan span model: {exc!r}") from None

    @classmethod
    def load(cls, path) -> "SpanModel":
        text = Path(path).read_text()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"{path}: not a dpdbscan span model (not JSON)") from None
        return cls.from_dict(data)

    # -------------------------------------------------------------- GeoJSON
    def to_geojson(self, transform=None) -> dict:
        """Spans as GeoJSON MultiPolygons (2-D only).

        ``transform`` maps an (m, 2) array of grid-space coordinates to output
        coordinates (e.g. km back to lon/lat); identity by default.
        """
        if self.grid.d != 2:
            raise ValueError(f"GeoJSON export needs 2-D spans, these are {self.grid.d}-D")
        from .geometry import cells_to_polygons

        features = []
        for s in range(self.n_spans):
            polys = cells_to_polygons(self.span_cells(s))
            mp = []
            for rings in polys:
                out_rings = []
                for ring in rings:
                    xy = self.grid.lower + np.asarray(ring, dtype=np.float64) * self.grid.width
                    if transform is not None:
                        xy = np.asarray(transform(xy), dtype=np.float64)
                    out_rings.append(xy.tolist())
                mp.append(out_rings)
            features.append({
                "type": "Feature",
                "properties": {"span": s, "n_cells": int((self.labels == s).sum())},
                "geometry": {"type": "MultiPolygon", "coordinates": mp},
            })
        return {
            "type": "FeatureCollection",
            "properties": {"epsilon": self.epsilon, "delta": self.delta,
                           "alpha": self.grid.alpha, "min_samples": self.min_samples},
            "features": features,
        }

    def save_geojson(self, path, transform=None) -> None:
        Path(path).write_text(json.dumps(self.to_geojson(transform)))


def spans_from_histogram(hist: NoisyHistogram, min_samples: int, gamma: float, beta: float,
                         *, raise_min_samples: bool = True, delta: float = 0.0,
                         metadata: dict | None = None, subcells: int = 1, border: float = 0.0,
                         margin: str = "paper", gamma_upper: float | None = None) -> SpanModel:
    """Core cells (or sub-cells) and spans from a released histogram.

    ``gamma`` is the lower margin Gamma_low and ``gamma_upper`` the upper one
    (default: the same, as for the dense histogram; see bounds.margins).
    Post-processing only: reads nothing but ``hist`` and public parameters.
    """
    from .subcells import SubcellLayout

    layout = SubcellLayout(hist.grid, subcells)
    thr = sum_threshold(min_samples, gamma, raise_min_samples, gamma_upper)
    keys, _ = core_cells(hist, thr, layout)
    labels = merge_cells(layout.fine, keys)
    return SpanModel(
        grid=layout.fine, core_keys=keys, labels=labels, min_samples=min_samples,
        gamma=gamma, beta=beta, epsilon=hist.epsilon, delta=delta,
        raise_min_samples=raise_min_samples, histogram_kind=hist.kind, noise=hist.noise,
        theta=hist.theta, histogram=hist, metadata=metadata or {}, subcells=layout.k,
        border=float(border), margin=margin, eta=hist.grid.eta, gamma_upper=gamma_upper,
    )


@functools.lru_cache(maxsize=32)
def _ball_offsets(d: int, radius_cells: float):
    """Integer offsets of cells at minimum distance < radius (in cell widths)."""
    import itertools

    R = int(math.ceil(radius_cells))
    steps = range(-R, R + 1)
    offs = [o for o in itertools.product(steps, repeat=d)
            if sum(max(abs(x) - 1, 0) ** 2 for x in o) < radius_cells**2]
    offs.sort(key=lambda o: sum(x * x for x in o))
    return tuple(np.array(o, dtype=np.int64) for o in offs)


# --------------------------------------------------------------------------- #
# serialisation helpers


def _num(x: float):
    return x if math.isfinite(x) else (None if math.isnan(x) else str(x))


def _jsonable(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = _jsonable(v)
        elif isinstance(v, float):
            out[k] = _num(v)
        elif isinstance(v, int) and abs(v) > 2**53:
            out[k] = str(v)
        else:
            out[k] = v
    return out


def _pack(arr: np.ndarray) -> dict:
    arr = np.ascontiguousarray(arr)
    # noisy counts and cell coordinates nearly always fit in int32: half the bytes
    if arr.dtype == np.int64 and arr.size and -(2**31) <= arr.min() and arr.max() < 2**31:
        arr = arr.astype(np.int32)
    return {"dtype": arr.dtype.str, "shape": list(arr.shape),
            "zlib_base64": base64.b64encode(zlib.compress(arr.tobytes(), 1)).decode("ascii")}


def _unpack(d: dict) -> np.ndarray:
    raw = zlib.decompress(base64.b64decode(d["zlib_base64"]))
    arr = np.frombuffer(raw, dtype=np.dtype(d["dtype"])).reshape(d["shape"])
    return arr.astype(np.int64) if arr.dtype.kind in "iu" else arr.copy()


def _histogram_to_dict(h: NoisyHistogram) -> dict:
    out = {"kind": h.kind, "theta": _num(h.theta), "noise": h.noise,
           "epsilon": h.epsilon, "delta": h.delta, "values": _pack(h.values)}
    if h.kind != "dense":
        out["cells"] = _pack(h.grid.decode(h.keys))
    return out


def _histogram_from_dict(grid: Grid, d: dict) -> NoisyHistogram:
    theta = d.get("theta")
    theta = float(theta) if theta is not None else float("nan")
    values = _unpack(d["values"])
    keys = None
    if d["kind"] != "dense":
        keys = grid.encode(_unpack(d["cells"]).reshape(-1, grid.d))
    elif tuple(values.shape) != tuple(grid.shape):
        raise ValueError("malformed dpdbscan span model: histogram shape does not match the grid")
    return NoisyHistogram(grid=grid, kind=d["kind"], values=values, keys=keys, theta=theta,
                          noise=d["noise"], epsilon=float(d["epsilon"]), delta=float(d.get("delta", 0.0)))


__all__ = ["SpanModel", "spans_from_histogram"]
