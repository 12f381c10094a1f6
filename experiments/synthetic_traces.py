"""A seeded synthetic city of GPS traces with ground truth: trace data that is not Cabs.

Cabs is one city, one fleet and one sampling rate (a fix about every minute).
This generator makes traces of another kind, to check that stops, trip ends
and the automatic mode are designed for traces in general:

* **the city** lies on a plane in km around a public centre (lon 13.40,
  lat 52.52 by default: another latitude than San Francisco, so the
  longitude scale differs) and is written as lon/lat degrees;
* **roads**: a grid every 0.8 km over the inner 16 x 16 km, three ring roads
  (radii 4, 9 and 13 km), eight radial roads to 14 km and an expressway to
  the airport; sampled every 100 m as a graph, grid streets at 30 km/h,
  rings and radials at 60, the expressway at 80 (each trip's speed scaled by
  a random factor, traffic);
* **places** of varied size, each a disc: one airport (radius 900 m, by the
  expressway), three railway stations (150 m), six malls (250-400 m), twenty
  medium places (hotels, hospitals: 60-150 m) and 120 small ones (shops,
  cafes: 20-60 m), denser towards the centre; **popularity** is heavy-tailed
  (Pareto weights, the airport and the stations heavier);
* **units** that drive along the roads (shortest paths by time) between
  places and stay at places, in one of two kinds:

  - ``taxi``: a shift of 8-12 h a day from home; free, it either queues at
    a rank (the airport, a station or a mall: 5 min to 1 h) or drives to a
    place where a passenger waits (1-3 min), then carries the passenger
    (``occupied`` = 1, from boarding until alighting) to another place;
    sometimes a break of 15-60 min at a small place;
  - ``people``: from home to places by popularity, staying 5 min to 2 h
    (lognormal), ``occupied`` = 1 while travelling (so a "pick-up" is a
    departure from a place, a "drop-off" an arrival);

  both sometimes wait in a jam on the road for 3-8 min (a stop that is no
  place: one unit's, at a random spot) and stay at home overnight (with the
  device on for half the units: their home is a place only they stop at);
* **sampling**: a fix every ``interval`` seconds (a few seconds to ten
  minutes), each interval jittered by +-30%, with gaps (about one every
  three hours, 5-45 min without a fix) and GPS noise (8 m, and 1% of fixes
  off by 60 m);
* **time**: unix seconds from Monday 2 March 2026 00:00 UTC, over ``days``
  days (a week, a month).

Ground truth (:class:`City`): which places are real (the places table), every
stay (unit, place or home or jam, start, end, position) and every pick-up
(the boarding point), and :func:`road_cells`: the cells units pass through
that lie far from every place and home.

    python -m experiments.synthetic_traces --units 200 --days 7 --interval 60 --seed 0 --out results/traces/a

writes ``traces.parquet`` (columns x = lon, y = lat, taxi, time, occupied:
the Cabs layout, which ``places_metric.py`` reads), ``places.csv`` and
``stays.csv`` (ground truth). Nothing is written into the repository by
default beyond ``results/traces/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: Monday 2 March 2026 00:00 UTC: the traces' first day.
START = 1_772_409_600
#: The city's public centre (lon, lat) and the half-width of its box in km.
CENTRE = (13.40, 52.52)
HALF_KM = 15.0
KM_PER_DEG = 111.32
#: Place kinds: (count, radius range in km, popularity factor).
KINDS = {
    "airport": (1, (0.9, 0.9), 6.0),
    "station": (3, (0.15, 0.15), 4.0),
    "mall": (6, (0.25, 0.4), 2.0),
    "medium": (20, (0.06, 0.15), 1.0),
    "small": (120, (0.02, 0.06), 0.5),
}
#: Other place mixes (``--hubs``): ``none``, a city with no dominant place
#: (no airport; the stations as popular as malls); ``many``, two airports
#: and six stations (several places of the airport's weight).
HUBS = {
    "default": KINDS,
    "none": {k: (v if k != "station" else (v[0], v[1], 2.0)) for k, v in KINDS.items() if k != "airport"},
    "many": {**KINDS, "airport": (2, (0.9, 0.9), 6.0), "station": (6, (0.15, 0.15), 4.0)},
}
#: Road layouts (``--roads``): ``grid``, a street grid every 0.8 km over the
#: inner 16 km with rings and radials; ``ring``, no grid: six ring roads and
#: sixteen radials (traffic on fewer, busier roads).
ROADS = ("grid", "ring")
#: How far from its rank a taxi queues when ranks are points (km).
RANK_KM = 0.04
#: Stay kinds in the truth besides places (their place id).
HOME, JAM = -1, -2


def box(centre: tuple[float, float] = CENTRE, half_km: float = HALF_KM) -> tuple[float, float, float, float]:
    """The city's public box (lon0, lat0, lon1, lat1)."""
    kx = KM_PER_DEG * math.cos(math.radians(centre[1]))
    dl, dp = half_km / kx, half_km / KM_PER_DEG
    return (centre[0] - dl, centre[1] - dp, centre[0] + dl, centre[1] + dp)


def to_lonlat(P: np.ndarray, centre: tuple[float, float] = CENTRE) -> np.ndarray:
    """km on the city's plane -> lon/lat degrees (equirectangular at the centre)."""
    kx = KM_PER_DEG * math.cos(math.radians(centre[1]))
    return np.column_stack([centre[0] + P[:, 0] / kx, centre[1] + P[:, 1] / KM_PER_DEG])


def to_km(L: np.ndarray, centre: tuple[float, float] = CENTRE) -> np.ndarray:
    """lon/lat degrees -> km on the city's plane."""
    kx = KM_PER_DEG * math.cos(math.radians(centre[1]))
    return np.column_stack([(L[:, 0] - centre[0]) * kx, (L[:, 1] - centre[1]) * KM_PER_DEG])


# ------------------------------------------------------------------ roads
@dataclass
class Roads:
    """The road graph: nodes (km), their speed (km/s) and the edges' times."""

    nodes: np.ndarray
    graph: Any  # scipy.sparse csr of travel times (s)
    airport_dir: float

    @classmethod
    def build(cls, rng: np.random.Generator, layout: str = "grid") -> Roads:
        from scipy.sparse.csgraph import connected_components
        from scipy.spatial import cKDTree

        lines: list[tuple[np.ndarray, float]] = []
        step = 0.1
        ticks = np.round(np.arange(-8.0, 8.0 + 1e-9, step), 3)
        if layout == "grid":
            for k in range(-10, 11):
                c = round(0.8 * k, 3)
                lines.append((np.column_stack([np.full_like(ticks, c), ticks]), 30 / 3600))
                lines.append((np.column_stack([ticks, np.full_like(ticks, c)]), 30 / 3600))
        rings = (4.0, 9.0, 13.0) if layout == "grid" else (1.5, 3.0, 4.5, 6.5, 9.0, 13.0)
        for r in rings:
            n = int(math.ceil(2 * math.pi * r / step))
            a = np.linspace(0, 2 * math.pi, n + 1)
            lines.append((np.column_stack([r * np.cos(a), r * np.sin(a)]), 60 / 3600))
        radials = 22.5 + 45.0 * np.arange(8) if layout == "grid" else 11.25 + 22.5 * np.arange(16)
        for a in np.radians(radials):
            s = np.arange(0.0, 14.0 + 1e-9, step)
            lines.append((np.column_stack([s * math.cos(a), s * math.sin(a)]), 60 / 3600))
        airport_dir = math.radians(-40.0 + rng.uniform(-5, 5))
        s = np.arange(4.0, 12.0 + 1e-9, step)
        lines.append((np.column_stack([s * math.cos(airport_dir), s * math.sin(airport_dir)]), 80 / 3600))
        pts = np.concatenate([p for p, _ in lines])
        keys, node_of = np.unique(np.round(pts * 1000).astype(np.int64), axis=0, return_inverse=True)
        node_of = node_of.ravel()
        nodes = keys / 1000.0
        src, dst, tt = [], [], []
        at = 0
        for p, v in lines:
            ids = node_of[at : at + len(p)]
            at += len(p)
            d = np.hypot(*np.diff(p, axis=0).T)
            src.append(ids[:-1])
            dst.append(ids[1:])
            tt.append(d / v)
        pairs = cKDTree(nodes).query_pairs(0.075, output_type="ndarray")
        src.append(pairs[:, 0])
        dst.append(pairs[:, 1])
        tt.append(np.hypot(*(nodes[pairs[:, 0]] - nodes[pairs[:, 1]]).T) / (30 / 3600) + 5.0)
        s_, d_, t_ = (np.concatenate(a) for a in (src, dst, tt))
        keep = s_ != d_
        s_, d_, t_ = s_[keep], d_[keep], t_[keep]
        n = len(nodes)
        g = _symmetric_min(s_, d_, t_, n)  # one edge per pair: the faster road where two coincide
        _, comp = connected_components(g, directed=False)
        big = np.bincount(comp).argmax()
        if not np.all(comp == big):
            raise RuntimeError("the road graph is not connected")
        return cls(nodes, g, airport_dir)

    def nearest(self, P: np.ndarray) -> np.ndarray:
        from scipy.spatial import cKDTree

        return cKDTree(self.nodes).query(P)[1]


def _symmetric_min(s: np.ndarray, d: np.ndarray, t: np.ndarray, n: int):
    """A symmetric csr matrix with the smallest time of each node pair."""
    from scipy.sparse import csr_matrix

    a, b = np.minimum(s, d), np.maximum(s, d)
    key = a * n + b
    order = np.lexsort((t, key))
    key, t = key[order], t[order]
    first = np.r_[True, key[1:] != key[:-1]]
    key, t = key[first], t[first]
    a, b = key // n, key % n
    return csr_matrix((np.r_[t, t], (np.r_[a, b], np.r_[b, a])), shape=(n, n))


# ------------------------------------------------------------------ places
@dataclass
class Places:
    """The real places: kind, centre (km), radius (km), popularity weight, access node."""

    kind: list[str]
    centre: np.ndarray
    radius: np.ndarray
    weight: np.ndarray
    node: np.ndarray
    node_xy: np.ndarray  # where each place's access node is (km)

    @classmethod
    def build(cls, rng: np.random.Generator, roads: Roads, kinds: dict | None = None) -> Places:
        kind: list[str] = []
        centres: list[np.ndarray] = []
        radii: list[float] = []
        weights: list[float] = []
        for name, (count, (r0, r1), factor) in (KINDS if kinds is None else kinds).items():
            for i in range(count):
                r = rng.uniform(r0, r1)
                if name == "airport":  # a second one across the city
                    a = roads.airport_dir + math.pi * i
                    c = 12.8 * np.array([math.cos(a), math.sin(a)])
                elif name == "station" and i == 0:
                    c = np.array([0.4, 0.4]) + rng.normal(0, 0.05, 2)  # the central station
                else:
                    spread = 2.5 if name in ("small", "medium") else 5.0
                    while True:
                        c = rng.normal(0, spread, 2)
                        if np.all(np.abs(c) < HALF_KM - 2) and _clear(c, r, centres, radii):
                            break
                kind.append(name)
                centres.append(c)
                radii.append(r)
                weights.append(factor * (1 + rng.pareto(1.2)))
        centre = np.array(centres)
        radius = np.array(radii)
        node = roads.nearest(centre)
        return cls(kind, centre, radius, np.array(weights), node, roads.nodes[node])

    def __len__(self) -> int:
        return len(self.kind)

    def rank(self, rng: np.random.Generator, i: int) -> tuple[float, float]:
        """Where a taxi queues at place i when ranks are points: within
        RANK_KM of the rank, on the place's edge towards its access road
        (a terminal's taxi lane, a station's rank), not anywhere in the
        place. The same two draws as :meth:`spot`."""
        c = self.centre[i]
        to = self.node_xy[i] - c
        r = float(np.hypot(*to))
        at = c + (to / r * min(float(self.radius[i]), r) if r > 0 else 0.0)
        a, d = rng.uniform(0, 2 * math.pi), RANK_KM * math.sqrt(rng.uniform())
        return (float(at[0]) + d * math.cos(a), float(at[1]) + d * math.sin(a))

    def spot(self, rng: np.random.Generator, i: int) -> tuple[float, float]:
        """A uniform point of place i (where a unit stands in it)."""
        a, r = rng.uniform(0, 2 * math.pi), float(self.radius[i]) * math.sqrt(rng.uniform())
        return (float(self.centre[i, 0]) + r * math.cos(a), float(self.centre[i, 1]) + r * math.sin(a))


def _clear(c: np.ndarray, r: float, centres: list, radii: list) -> bool:
    return all(np.hypot(*(c - c2)) > r + r2 + 0.05 for c2, r2 in zip(centres, radii))


# ------------------------------------------------------------------ the city
@dataclass
class City:
    """A generated city: the roads, the places, the traces and the truth."""

    roads: Roads
    places: Places
    homes: np.ndarray  # km, one per unit
    lonlat: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    unit: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    time: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    occupied: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    #: every stay: unit, place (>= 0, HOME or JAM), start, end (unix s), x, y (km)
    stays: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))
    #: every pick-up (boarding): unit, place, time, x, y (km)
    pickups: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    #: each unit's sampling interval (s, before jitter)
    interval: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def write(self, out: Path, unit_column: str = "taxi") -> Path:
        """traces.parquet (x, y, <unit>, time, occupied), places.csv, stays.csv, pickups.csv."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        out.mkdir(parents=True, exist_ok=True)
        table = pa.table(
            {
                "x": self.lonlat[:, 0],
                "y": self.lonlat[:, 1],
                unit_column: pa.array([f"u{u:05d}" for u in self.unit]).dictionary_encode(),
                "time": self.time,
                "occupied": self.occupied,
            }
        )
        pq.write_table(table, out / "traces.parquet")
        pl = to_lonlat(self.places.centre)
        with open(out / "places.csv", "w") as f:
            f.write("place,kind,lon,lat,radius_m,weight\n")
            for i, k in enumerate(self.places.kind):
                f.write(f"{i},{k},{pl[i, 0]:.6f},{pl[i, 1]:.6f},{1000 * self.places.radius[i]:.0f},")
                f.write(f"{self.places.weight[i]:.4f}\n")
        np.savetxt(
            out / "stays.csv", self.stays, delimiter=",", fmt="%.4f", header="unit,place,start,end,x_km,y_km"
        )
        np.savetxt(
            out / "pickups.csv", self.pickups, delimiter=",", fmt="%.4f", header="unit,place,time,x_km,y_km"
        )
        return out / "traces.parquet"


#: walking pace off the road (km/s), from the road to a spot in a place and back
WALK = 15 / 3600


class _Trace:
    """One unit's piecewise-linear trajectory: vertices (time, x, y, status),
    the status of a vertex being that of the leg from it on. Plain lists,
    extended a path at a time: a week of thousands of units is generated in
    a minute or so."""

    def __init__(self, t: float, p: np.ndarray) -> None:
        self.T: list[float] = [t]
        self.X: list[float] = [float(p[0])]
        self.Y: list[float] = [float(p[1])]
        self.S: list[int] = [0]
        self.now = t
        self.pos = (float(p[0]), float(p[1]))
        self.unit, self.node = 0, 0
        self.router: _Router
        self.rng: np.random.Generator
        self.stays: list[tuple] = []
        #: traffic lights (``lights``): a stream of their own, None when off
        self.lights: np.random.Generator | None = None

    def stay(self, seconds: float, status: int) -> None:
        self.S[-1] = status
        self.now += seconds
        self.T.append(self.now)
        self.X.append(self.pos[0])
        self.Y.append(self.pos[1])
        self.S.append(status)

    def drive(self, to_node: int, status: int, spot: tuple[float, float] | np.ndarray, speed: float) -> None:
        """Along the roads from where it is to ``to_node``, then to ``spot``
        (walking pace off the road), sometimes waiting in a jam on the way."""
        P, ct, X, Y = self.router.path(self.node, to_node)
        px, py = self.pos
        sx, sy = float(spot[0]), float(spot[1])
        # each leg takes its time plus a millisecond (no two vertices at one time)
        t0 = self.now + math.hypot(P[0, 0] - px, P[0, 1] - py) / WALK + 1e-3
        t = t0 + ct / speed + 1e-3 * np.arange(len(P))
        t_end = float(t[-1]) + math.hypot(sx - P[-1, 0], sy - P[-1, 1]) / WALK + 1e-3
        T = t.tolist()
        if len(P) + 2 > 8 and self.rng.uniform() < 0.15:  # a jam on the way, at a road node
            j = int(self.rng.integers(2, len(P))) - 1
            jam = self.rng.uniform(180, 480)
            self.stays.append((self.unit, JAM, T[j], T[j] + jam, X[j], Y[j]))
            T = T[: j + 1] + [v + jam for v in T[j:]]
            X, Y = X[: j + 1] + X[j:], Y[: j + 1] + Y[j:]
            t_end += jam
        if self.lights is not None:  # red lights at grid crossings: waits that are no stops
            T, X, Y, t_end = _red_lights(self.lights, T, X, Y, t_end)
        self.S[-1] = status
        self.T += T
        self.T.append(t_end)
        self.X += X
        self.X.append(sx)
        self.Y += Y
        self.Y.append(sy)
        self.S += [status] * (len(T) + 1)
        self.now, self.pos, self.node = t_end, (sx, sy), to_node

    def dwell(self, place: int, seconds: float, status: int) -> None:
        """Stay at a place (recorded in the truth)."""
        t0 = self.now
        self.stay(seconds, status)
        self.stays.append((self.unit, place, t0, self.now, *self.pos))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.array(self.T), np.column_stack([self.X, self.Y]), np.array(self.S, dtype=float)


#: traffic lights: the share of grid crossings passed at red, and the wait there (s)
LIGHT_RED, LIGHT_WAIT = 0.4, (15.0, 100.0)


def _red_lights(
    side: np.random.Generator, T: list[float], X: list[float], Y: list[float], t_end: float
) -> tuple[list[float], list[float], list[float], float]:
    """A path's vertices with a wait at each grid crossing passed at red (the
    crossings of the street grid every 0.8 km over the inner 16 km, not the
    path's ends; ``side``, a stream of its own, so the main draws are those
    without lights): the vertex repeated, the later times shifted."""
    q = np.column_stack([X, Y]) / 0.8
    cross = np.all(np.abs(q - np.round(q)) < 1e-6, axis=1) & np.all(np.abs(q) <= 10.0 + 1e-9, axis=1)
    cross[0] = cross[-1] = False
    red = np.flatnonzero(cross)
    red = red[side.uniform(size=red.size) < LIGHT_RED]
    if red.size == 0:
        return T, X, Y, t_end
    add = np.zeros(len(T))
    add[red] = side.uniform(*LIGHT_WAIT, size=red.size)
    shift = np.cumsum(add)
    t2: list[float] = []
    x2: list[float] = []
    y2: list[float] = []
    for j, (v, x, y) in enumerate(zip(T, X, Y)):
        if add[j]:
            t2.append(v + shift[j] - add[j])
            x2.append(x)
            y2.append(y)
        t2.append(v + float(shift[j]))
        x2.append(x)
        y2.append(y)
    return t2, x2, y2, t_end + float(shift[-1])


class _Router:
    """Shortest paths (by time) between road nodes, cached per pair."""

    def __init__(self, roads: Roads, sources: np.ndarray) -> None:
        from scipy.sparse.csgraph import dijkstra

        self.roads = roads
        self.sources = {int(s): i for i, s in enumerate(sources)}
        self.dist, self.pred = dijkstra(roads.graph, indices=sources, return_predecessors=True)
        self.cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, list[float], list[float]]] = {}

    def path(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, list[float], list[float]]:
        """(points km, cumulative seconds from the first, and the points' x and
        y as lists) from node a to node b; one of them a source."""
        key = (a, b)
        if key in self.cache:
            return self.cache[key]
        flip = a not in self.sources
        s, t = (b, a) if flip else (a, b)
        row = self.pred[self.sources[s]]
        ids = [t]
        while ids[-1] != s:
            ids.append(int(row[ids[-1]]))
        ids = ids if flip else ids[::-1]
        idx = np.array(ids)
        d = self.dist[self.sources[s], idx]  # times from the source along its shortest path
        ct = d[0] - d if flip else d
        P = self.roads.nodes[idx]
        out = (P, ct, P[:, 0].tolist(), P[:, 1].tolist())
        self.cache[key] = out
        return out


def places_queue(ranks: str):
    """Where a taxi queues at a rank: :meth:`Places.spot` or :meth:`Places.rank`."""
    return Places.rank if ranks == "point" else Places.spot


def unit_intervals(units: int, interval: float | tuple[float, float], seed: int) -> np.ndarray:
    """Each unit's sampling interval (s): ``interval`` for all, or for a
    range (lo, hi) one drawn per unit log-uniformly (as fleets mix devices:
    a fix every few seconds on some, every few minutes on most), from a
    stream of its own so a fixed interval leaves the traces as they were."""
    if isinstance(interval, tuple):
        lo, hi = interval
        if not 0 < lo <= hi:
            raise ValueError(f"an interval range needs 0 < lo <= hi, got {interval}")
        u = np.random.default_rng([seed, 1]).uniform(size=units)
        return np.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
    return np.full(units, float(interval))


def generate(
    units: int = 200,
    days: int = 7,
    interval: float | tuple[float, float] = 60.0,
    seed: int = 0,
    kind: str = "taxi",
    noise_m: float = 8.0,
    ranks: str = "spread",
    gaps: str = "light",
    roads_layout: str = "grid",
    hubs: str = "default",
    lights: bool = False,
    depots: int = 0,
) -> City:
    """A city, its units' traces sampled every ``interval`` seconds (jittered,
    with gaps, with GPS noise; a range (lo, hi): each unit its own interval,
    :func:`unit_intervals`) over ``days`` days, and the truth.

    ``ranks``: where taxis queue at a rank (the airport, a station, a
    mall): ``"spread"`` anywhere in the place, uniformly (the airport's
    queue over a disc 1.8 km across; the traces of earlier runs), or
    ``"point"`` within RANK_KM of one rank on the place's edge towards its
    road (:meth:`Places.rank`; the same random draws otherwise).

    ``gaps``: ``"light"`` (a gap of 5-45 min about every three hours, the
    traces of earlier runs) or ``"heavy"`` (:func:`_heavy_gaps`: about one
    an hour, up to 4 h, the device off during half the long stays, and
    irregular steps; drawn from a stream of their own, so the trajectories
    are those of ``"light"``).

    ``roads_layout`` (:data:`ROADS`) and ``hubs`` (:data:`HUBS`): other city
    layouts; the defaults give the traces of earlier runs bit for bit.

    ``lights``: red lights at the street grid's crossings (:func:`_red_lights`:
    40% of crossings passed at red, a wait of 15-100 s; a stream of its own).
    ``depots``: that many depots (kind ``"depot"`` in the places table, 80 m,
    never a passenger's place) at road nodes 5-12 km from the centre; each
    taxi belongs to one and begins and ends every shift there (10-30 min,
    5-20 min; a stay at a place in the truth). Both off by default."""
    if kind not in ("taxi", "people"):
        raise ValueError(f"kind must be taxi or people, got {kind!r}")
    if ranks not in ("spread", "point"):
        raise ValueError(f"ranks must be spread or point, got {ranks!r}")
    if gaps not in ("light", "heavy"):
        raise ValueError(f"gaps must be light or heavy, got {gaps!r}")
    if roads_layout not in ROADS or hubs not in HUBS:
        raise ValueError(f"roads must be one of {ROADS} and hubs one of {tuple(HUBS)}")
    rng = np.random.default_rng(seed)
    queue_at = places_queue(ranks)
    every = unit_intervals(units, interval, seed)
    roads = Roads.build(rng, roads_layout)
    places = Places.build(rng, roads, HUBS[hubs])
    depot_of = _add_depots(np.random.default_rng([seed, 4]), roads, places, depots, units) if depots else None
    home_nodes = rng.choice(len(roads.nodes), size=units)
    homes = roads.nodes[home_nodes] + rng.normal(0, 0.03, (units, 2))
    router = _Router(roads, np.unique(places.node))
    p = places.weight / places.weight.sum()
    at_ranks = np.flatnonzero([k in ("airport", "station", "mall") for k in places.kind])
    pr = p[at_ranks] / p[at_ranks].sum()
    # rng.choice(n, p=q) draws one rng.random() into q's normalised cumulative sum:
    # the same draws, without its per-call checks
    cdf, cdf_r = p.cumsum(), pr.cumsum()
    cdf, cdf_r = cdf / cdf[-1], cdf_r / cdf_r[-1]

    def pick() -> int:
        return int(cdf.searchsorted(rng.random(), side="right"))

    def pick_rank() -> int:
        return int(at_ranks[cdf_r.searchsorted(rng.random(), side="right")])

    smalls = np.flatnonzero([k == "small" for k in places.kind])
    home_on = rng.uniform(size=units) < 0.5
    cols: list[list[np.ndarray]] = [[], [], [], [], []]
    stays: list[tuple] = []
    pickups: list[tuple] = []
    for u in range(units):
        first_stay = len(stays)
        tr = _Trace(START + rng.uniform(4, 7) * 3600, homes[u])
        tr.unit, tr.node, tr.router, tr.rng, tr.stays = u, int(home_nodes[u]), router, rng, stays
        if lights:
            tr.lights = np.random.default_rng([seed, 3, u])
        drive, dwell = tr.drive, tr.dwell
        off: list[tuple[float, float]] = []  # device-off intervals (home, units without it)

        for day in range(days):
            day0 = START + day * 86400
            start = day0 + rng.uniform(5, 15) * 3600 if kind == "taxi" else day0 + rng.uniform(6, 10) * 3600
            end = start + rng.uniform(8, 12) * 3600
            if start > tr.now:
                t0 = tr.now
                tr.stay(start - tr.now, 0)
                stays.append((u, HOME, t0, tr.now, *tr.pos))
                if not home_on[u]:
                    off.append((t0 + 60, tr.now - 60))
            if depot_of is not None and kind == "taxi":  # the shift begins at the depot
                dp = int(depot_of[u])
                drive(int(places.node[dp]), 0, places.spot(rng, dp), 1.0)
                dwell(dp, rng.uniform(600, 1800), 0)
            while tr.now < end:
                speed = rng.uniform(0.6, 1.1)
                if kind == "taxi":
                    if rng.uniform() < 0.35:
                        a = pick_rank()
                        drive(int(places.node[a]), 0, queue_at(places, rng, a), speed)
                        airport = places.kind[a] == "airport"
                        wait = rng.uniform(1800, 3600) if airport else rng.uniform(300, 1800)
                    else:
                        a = pick()
                        drive(int(places.node[a]), 0, places.spot(rng, a), speed)
                        wait = rng.uniform(60, 180)
                    t0 = tr.now
                    tr.stay(wait, 0)
                    pickups.append((u, a, tr.now, *tr.pos))
                    tr.stay(rng.uniform(20, 60), 1)  # boarding
                    stays.append((u, a, t0, tr.now, *tr.pos))
                    b = a
                    while b == a:
                        b = pick()
                    drive(int(places.node[b]), 1, places.spot(rng, b), speed)
                    dwell(b, rng.uniform(30, 120), 0)
                    if rng.uniform() < 0.1:
                        c = int(rng.choice(smalls))
                        drive(int(places.node[c]), 0, places.spot(rng, c), speed)
                        dwell(c, rng.uniform(900, 3600), 0)
                else:
                    a = pick()
                    drive(int(places.node[a]), 1, places.spot(rng, a), speed)
                    dwell(a, float(np.clip(rng.lognormal(math.log(1800), 0.8), 300, 7200)), 0)
                    pickups.append((u, a, tr.now, *tr.pos))  # a trip begins: the departure
            if depot_of is not None and kind == "taxi":  # and ends there
                dp = int(depot_of[u])
                drive(int(places.node[dp]), 0, places.spot(rng, dp), 1.0)
                dwell(dp, rng.uniform(300, 1200), 0)
            drive(int(home_nodes[u]), 0, homes[u], 1.0)
        t, P, s = tr.arrays()
        ts, pos = _fixes(rng, t, P, float(every[u]), off, noise_m)
        if gaps == "heavy":  # the same main draws made and set aside: the next units' trajectories unchanged
            side = np.random.default_rng([seed, 2, u])
            dark, pins = _heavy_gaps(side, t[0], t[-1], stays[first_stay:])
            ts, pos = _fixes(side, t, P, float(every[u]), off + dark, noise_m, irregular=True, pins=pins)
        st = s[np.clip(np.searchsorted(t, ts, side="right") - 1, 0, len(s) - 1)]
        cols[0].append(pos)
        cols[1].append(np.full(len(ts), u))
        cols[2].append(np.round(ts).astype(np.int64))
        cols[3].append(st.astype(np.int8))
    city = City(roads, places, homes)
    city.lonlat = to_lonlat(np.concatenate(cols[0]))
    city.unit = np.concatenate(cols[1])
    city.time = np.concatenate(cols[2])
    city.occupied = np.concatenate(cols[3])
    city.stays = np.array(stays, dtype=float)
    city.pickups = np.array(pickups, dtype=float)
    city.interval = every
    return city


def _add_depots(side: np.random.Generator, roads: Roads, places: Places, n: int, units: int) -> np.ndarray:
    """Append ``n`` depots to ``places`` (weight 0: no passenger's place) at
    road nodes 5-12 km from the centre; returns each unit's depot (its place
    index). ``side``: a stream of its own."""
    r = np.hypot(*roads.nodes.T)
    ring = np.flatnonzero((r >= 5.0) & (r <= 12.0))
    node = side.choice(ring, size=n, replace=False)
    first = len(places)
    places.kind += ["depot"] * n
    places.centre = np.vstack([places.centre, roads.nodes[node]])
    places.radius = np.r_[places.radius, np.full(n, 0.08)]
    places.weight = np.r_[places.weight, np.zeros(n)]
    places.node = np.r_[places.node, node]
    places.node_xy = np.vstack([places.node_xy, roads.nodes[node]])
    return first + side.integers(0, n, size=units)


def _fixes(
    rng: np.random.Generator,
    t: np.ndarray,
    P: np.ndarray,
    interval: float,
    off: list[tuple[float, float]],
    noise_m: float,
    irregular: bool = False,
    pins: Sequence[float] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """A trajectory's fix times (:func:`_sample_times`, and ``pins``: fixes
    at given times) and noisy positions (km)."""
    ts = _sample_times(rng, t[0], t[-1], interval, off, irregular)
    if len(pins):
        ts = np.unique(np.r_[ts, np.clip(pins, t[0], t[-1])])
    pos = np.column_stack([np.interp(ts, t, P[:, 0]), np.interp(ts, t, P[:, 1])])
    sd = np.where(rng.uniform(size=len(ts)) < 0.01, 60.0, noise_m) / 1000
    pos += rng.normal(0, 1, pos.shape) * sd[:, None]
    return ts, pos


def _heavy_gaps(
    side: np.random.Generator, t0: float, t1: float, stays: list[tuple]
) -> tuple[list[tuple[float, float]], list[float]]:
    """The device-off spans of ``gaps="heavy"`` (T-Drive's kind of trace):
    about one gap an hour of 2 min to several hours (lognormal, median
    10 min, at most 4 h), wherever the unit is, and, at half of its stays
    of 10 min or more (a break, a long queue, a night at home), the device
    switched off from a minute after arriving until a minute before leaving,
    with a fix at each (a device reports as it is switched off and on): a
    gap with the same place on both sides. Returns the spans and those fixes'
    times."""
    n = side.poisson((t1 - t0) / 3600)
    a = side.uniform(t0, t1, n)
    length = np.minimum(side.lognormal(math.log(600), 1.0, n), 4 * 3600)
    spans = [(float(x), float(x + g)) for x, g in zip(a, length)]
    pins: list[float] = []
    for st in stays:
        if st[3] - st[2] >= 600 and side.uniform() < 0.5:
            spans.append((st[2] + 60, st[3] - 60))
            pins += [st[2] + 60, st[3] - 60]
    return spans, pins


def _sample_times(
    rng: np.random.Generator,
    t0: float,
    t1: float,
    interval: float,
    off: list[tuple[float, float]],
    irregular: bool = False,
) -> np.ndarray:
    """Fix times every ``interval`` (+-30%), minus gaps and device-off spans;
    ``irregular``: each step also scaled by a lognormal factor of mean 1
    (sigma 0.7, as T-Drive's steps vary)."""
    n = int((t1 - t0) / interval * 1.05) + 2
    step = interval * rng.uniform(0.7, 1.3, n)
    if irregular:  # twice as many steps: their sum may fall short of t1
        step = np.r_[step, interval * rng.uniform(0.7, 1.3, n)] * rng.lognormal(-0.245, 0.7, 2 * n)
    ts = t0 + np.cumsum(step)
    ts = ts[ts <= t1]
    n_gaps = rng.poisson((t1 - t0) / (3 * 3600))
    g0 = rng.uniform(t0, t1, n_gaps)
    spans = [(a, a + rng.uniform(300, 2700)) for a in g0] + off
    keep = np.ones(len(ts), bool)
    for a, b in spans:
        keep[np.searchsorted(ts, a) : np.searchsorted(ts, b)] = False
    return ts[keep]


# ------------------------------------------------------------------ the truth's cells
def road_cells(city: City, width_km: float, n: int = 50, clear_km: float = 0.3) -> np.ndarray:
    """Centres (lon/lat) of the ``n`` cells (side ``width_km`` on the city's
    plane, from the box's south-west corner) that the most distinct units
    pass through among those farther than ``clear_km`` beyond every place's
    edge and every home: passage, no place."""
    P = to_km(city.lonlat)
    lo = to_km(np.array([box()[:2]]))[0]
    ij = np.floor((P - lo) / width_km).astype(np.int64)
    key = ij[:, 0] * 1_000_000 + ij[:, 1]
    pair = np.unique(city.unit.astype(np.int64) * 10**12 + key)
    cells, nu = np.unique(pair % 10**12, return_counts=True)
    C = lo + (np.column_stack([cells // 1_000_000, cells % 1_000_000]) + 0.5) * width_km
    from scipy.spatial import cKDTree

    d, i = cKDTree(city.places.centre).query(C)
    far = d > city.places.radius[i] + clear_km + width_km
    far &= cKDTree(city.homes).query(C)[0] > clear_km + width_km
    order = np.argsort(-nu[far])[:n]
    return to_lonlat(C[far][order])


def top_event_cells(city: City, rows: np.ndarray, width_km: float, n: int = 20) -> np.ndarray:
    """Centres (lon/lat) of the ``n`` cells (as :func:`road_cells`) where the
    most distinct units have an event (``rows``: the events' rows), as the
    shared places metric ranks them."""
    lo = to_km(np.array([box()[:2]]))[0]
    ij = np.floor((to_km(city.lonlat[rows]) - lo) / width_km).astype(np.int64)
    pair = np.unique(city.unit[rows].astype(np.int64) * 10**12 + ij[:, 0] * 1_000_000 + ij[:, 1])
    cells, nu = np.unique(pair % 10**12, return_counts=True)
    top = cells[np.argsort(-nu, kind="stable")[:n]]
    return to_lonlat(lo + (np.column_stack([top // 1_000_000, top % 1_000_000]) + 0.5) * width_km)


def top_places(city: City, n: int = 20, min_s: float = 300.0) -> np.ndarray:
    """The ``n`` real places where the most distinct units stayed at least ``min_s``."""
    s = city.stays
    s = s[(s[:, 1] >= 0) & (s[:, 3] - s[:, 2] >= min_s)]
    pair = np.unique(s[:, 1].astype(np.int64) * 10**6 + s[:, 0].astype(np.int64))
    pl, nu = np.unique(pair // 10**6, return_counts=True)
    return pl[np.argsort(-nu)[:n]]


def parse_interval(text: str) -> float | tuple[float, float]:
    """``"60"`` -> 60.0 (every unit); ``"5-600"`` -> (5.0, 600.0) (a range, one per unit)."""
    lo, sep, hi = text.partition("-")
    return (float(lo), float(hi)) if sep else float(lo)


def interval_tag(interval: float | tuple[float, float]) -> str:
    """``60`` or ``5-600``: an interval as a folder name shows it."""
    return f"{interval[0]:g}-{interval[1]:g}" if isinstance(interval, tuple) else f"{interval:g}"


def city_options(ap: argparse.ArgumentParser) -> None:
    """``--ranks`` and ``--gaps``, the generator's options (also traces_check's,
    whose folders then end in ``_rpoint`` and ``_gheavy``)."""
    ap.add_argument(
        "--ranks",
        choices=["spread", "point"],
        default="spread",
        help="taxis queue anywhere in a rank place (spread, as before) or at one rank on its edge (point)",
    )
    ap.add_argument(
        "--gaps",
        choices=["light", "heavy"],
        default="light",
        help="gaps of 5-45 min every ~3 h (light, as before) or T-Drive's kind: ~1 an hour up to 4 h, "
        "the device off during half the long stays, irregular steps (heavy)",
    )
    ap.add_argument(
        "--roads", choices=ROADS, default="grid", help="a street grid with rings (grid), or rings and radials"
    )
    ap.add_argument(
        "--hubs",
        choices=tuple(HUBS),
        default="default",
        help="the place mix: one airport and three stations (default), no dominant place (none), "
        "two airports and six stations (many)",
    )
    ap.add_argument("--lights", action="store_true", help="red lights at the grid's crossings (15-100 s)")
    ap.add_argument("--depots", type=int, default=0, help="depots where each taxi begins and ends its shifts")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=200)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument(
        "--interval",
        type=parse_interval,
        default=60.0,
        help="seconds between fixes (before jitter), or LO-HI: each unit its own, log-uniform (5-600)",
    )
    ap.add_argument("--kind", choices=["taxi", "people"], default="taxi")
    ap.add_argument("--seed", type=int, default=0)
    city_options(ap)
    ap.add_argument("--out", type=Path, default=Path("results/traces/city"))
    o = ap.parse_args(argv)
    city = generate(
        o.units,
        o.days,
        o.interval,
        o.seed,
        o.kind,
        ranks=o.ranks,
        gaps=o.gaps,
        roads_layout=o.roads,
        hubs=o.hubs,
        lights=o.lights,
        depots=o.depots,
    )
    path = city.write(o.out)
    print(
        f"{path}: {len(city.time):,} fixes of {o.units} units, {len(city.pickups):,} pick-ups, "
        f"{len(city.stays):,} stays, intervals {interval_tag(o.interval)} s; "
        f"box {' '.join(f'{b:.5f}' for b in box())}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
