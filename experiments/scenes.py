"""Random labelled scenes for a benchmark that cannot be memorised (issue 21).

A scene is a seeded draw of 2 to 30 clusters in 2 or 3 dimensions, with
labels, a public box and a short description of its parts. Everything is
numpy and a function of the seed alone (``np.random.default_rng`` on a
:class:`numpy.random.SeedSequence` of the seed and a fixed tag), so
``scene(seed)`` is the same on every machine and numpy version that keeps
the ``PCG64`` stream.

How a scene is drawn (in this order, all from the scene's own generator):

* ``d``: 2 with probability 0.7, else 3. ``n``: log-uniform in
  [5,000, 200,000]. ``k``: the number of labelled clusters, log-uniform on
  the integers 2..30 (so small k are more frequent; median about 8).
* A *palette*: one to three shape families, each scene drawing its
  components from them only, so that scenes are coherent ("spirals",
  "blobs and rings", ...) and results can be broken down by family:

  ======================  ======================================================
  family                  components (clusters each)
  ======================  ======================================================
  ``blob``                isotropic Gaussian truncated at 2.5 sigma (1), or a
                          uniform ball (1)
  ``elongated``           Gaussian with axis ratio 2.5..8, rotated (1)
  ``ring``                circle (2-D) or ring in a random plane (3-D) with a
                          Gaussian cross-section (1)
  ``arc``                 90 to 270 degrees of a ring (1); in 2-D sometimes
                          two interleaved half rings, "moons" (2)
  ``curve``               a sine curve of 1 to 2.5 periods (1)
  ``spiral``              an Archimedean spiral of 1.5 to 3 turns (1)
  ``core_shell``          a dense Gaussian core inside a sparse ring (2-D) or
                          spherical shell (3-D) (2)
  ``linked``              3-D only: two interlocking rings (2)
  ======================  ======================================================

* Sizes and densities: a heterogeneity h in [0, 1]; a component's share
  of the clustered points is exp(U(-1.7 h, 1.7 h)) (up to 30x between
  clusters) and its radius exp(U(-0.7 h, 0.7 h)) times a common radius, so
  at h = 1 densities differ by orders of magnitude. Every cluster gets at
  least :data:`MIN_CLUSTER_POINTS` points.
* Placement: in the *frame*, a box of sides 1 x U(0.6, 1) (x U(0.6, 1) in
  3-D, axes shuffled), components are placed one by one (largest first) at
  uniform positions where their bounding balls keep a gap of g (r_i + r_j),
  g ~ U(0.05, 0.35), from every placed one; when a component finds no room
  in 400 tries every radius shrinks by 8% and placement restarts. The
  common radius is set so that the bounding balls fill a share U(0.12,
  0.3) of the frame.
* Thin bridges (probability 0.35): one to three segments of points between
  the nearest pairs of clusters, each 0.3% to 1.5% of n with a thin
  Gaussian cross-section. They are labelled noise (-1): a good clustering
  does not join its clusters through them.
* Background noise: a share U(0, 0.2) of n, uniform in the frame,
  labelled -1.
* Units and box: coordinates are scaled by 10^U(-1, 3) and shifted, so that
  nothing may depend on units. The *public box* is the frame padded by a
  share p ~ U(0, 1) of its side on each axis (split between the two ends at
  random): p = 1 doubles every side. :attr:`Scene.frame` is the frame in the
  same units: the region the scene was drawn in, which the benchmark's
  parameter grid for the hand-picked methods is scaled to.

Labels are 0..k-1 in the order of the components; noise (background and
bridges) is -1.

    python -m experiments.scenes 10000 10001      # describe scenes
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np

#: Seed-sequence tag, so that a scene's stream is not the stream of a bare seed.
TAG = 0x5CE7E5
N_MIN, N_MAX = 5_000, 200_000
K_MIN, K_MAX = 2, 30
MAX_NOISE = 0.2
MAX_PADDING = 1.0
MIN_CLUSTER_POINTS = 25
#: Gaussian clusters are truncated at this many standard deviations.
TRUNCATE = 2.5
FAMILIES = ("blob", "elongated", "ring", "arc", "curve", "spiral", "core_shell", "linked")
#: Thin shapes next to each other, each its own cluster: interleaved spirals
#: and parallel sine curves (:func:`close_scene`; the labelled sets where the
#: automatic mode trails HDBSCAN most). Not in :data:`FAMILIES`, so that the
#: scenes of :func:`scene` stay what they were.
CLOSE_FAMILIES = ("spirals", "strands")
#: Seed-sequence tag of :func:`close_scene`.
CLOSE_TAG = 0xC105E
#: n of :func:`close_scene`: the size of labelled benchmark sets (the dev
#: suite's 20,000, the paper's 2,000 to 10,000), where the gap shows.
CLOSE_N = (2_000, 20_000)
#: Seed-sequence tag of :func:`small_scene`.
SMALL_TAG = 0x5A11C
#: n of :func:`small_scene`: below the close scenes, the size of the small
#: labelled sets (a few hundred to 2,000 points: spirals, moons, paths).
SMALL_N = (300, 2_000)
#: k of :func:`small_scene`: such sets hold few clusters.
SMALL_K = (2, 8)
#: The palette of :func:`small_scene`: thin shapes side by side.
SMALL_FAMILIES = (*CLOSE_FAMILIES, "spiral", "curve", "arc")
#: Seed-sequence tag of :func:`thin_scene`.
THIN_TAG = 0x7A1C
#: n of :func:`thin_scene`: from the small labelled sets to five times the
#: dev suite's, across the 6,000 points where the automatic mode's base
#: changes (issue 28: where is the gap, by size).
THIN_N = (1_000, 50_000)
#: Share of 3-D scenes of :func:`thin_scene` (half: the gap by dimension).
THIN_SHARE_3D = 0.5
#: Seed-sequence tag of :func:`curves_scene`.
CURVES_TAG = 0xC0A7E5
#: The palette of :func:`curves_scene` (issue 28 item 3, results/scenes/curves.md):
#: thin shapes next to each other, harder than :data:`CLOSE_FAMILIES`:
#: ``tight`` interleaved spirals wound more tightly (3 to 5 turns: arms
#: nearer in the box's units, as thin relative to their spacing as
#: ``spirals``), ``parallel`` thin sine curves (half-width 0.8-3% of the
#: component's radius) at 1.5 to 4 times their width apart, ``graded``
#: parallel curves whose density falls along their length (up to 30x from
#: one end to the other).
CURVES_FAMILIES = ("tight", "parallel", "graded")
#: n of :func:`curves_scene`: the labelled sets' sizes (issue 28).
CURVES_N = (1_000, 20_000)
#: Share of 3-D scenes of :func:`curves_scene`.
CURVES_SHARE_3D = 0.3
#: Clusters per component of each kind.
CLUSTERS = {
    "blob": 1,
    "ball": 1,
    "elongated": 1,
    "ring": 1,
    "arc": 1,
    "moons": 2,
    "curve": 1,
    "spiral": 1,
    "core_shell": 2,
    "linked": 2,
    "spirals": 2,
    "spirals3": 3,
    "strands": 2,
    "strands3": 3,
    "tight": 2,
    "tight3": 3,
    "parallel": 2,
    "parallel3": 3,
    "graded": 2,
    "graded3": 3,
}


@dataclass(frozen=True)
class Scene:
    """One labelled scene.

    Attributes
    ----------
    seed : int
    X : ndarray (n, d)
        The points.
    y : ndarray (n,)
        Cluster labels 0..k-1, noise -1.
    lower, upper : ndarray (d,)
        The public box (contains every point).
    frame : tuple of ndarray
        (lower, upper) of the region the scene was drawn in (inside the box).
    k : int
        Number of labelled clusters.
    noise : float
        Share of background noise points.
    padding : float
        The box's padding as a share of the frame's side.
    bridges : int
        Number of thin bridges (their points are labelled noise).
    heterogeneity : float
        h of the module docstring (spread of sizes and densities).
    components : tuple of str
        One short description per component.
    tags : frozenset of str
        The families present, "bridges", "noise" (at least 5%), "varied"
        (h >= 0.6), "2d"/"3d".
    """

    seed: int
    X: np.ndarray
    y: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    frame: tuple
    k: int
    noise: float
    padding: float
    bridges: int
    heterogeneity: float
    components: tuple
    tags: frozenset

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def bounds(self) -> tuple:
        return self.lower, self.upper

    @property
    def frame_diagonal(self) -> float:
        return float(np.linalg.norm(self.frame[1] - self.frame[0]))

    def row_head(self, seed: int, variant: str) -> dict:
        """The first columns of a study's row for a fit of ``variant`` on this
        scene (drawn from ``seed``): seed, variant, d, n, k and tags."""
        return {
            "seed": seed,
            "variant": variant,
            "d": self.d,
            "n": self.n,
            "k": self.k,
            "tags": " ".join(sorted(self.tags)),
        }

    def describe(self) -> str:
        """One line: size, clusters, parts, noise, bridges, box."""
        parts = ", ".join(self.components)
        return (
            f"seed {self.seed}: {self.d}-D, n={self.n:,}, {self.k} clusters ({parts}); "
            f"noise {100 * self.noise:.0f}%, {self.bridges} bridge(s), "
            f"heterogeneity {self.heterogeneity:.2f}, box padding {100 * self.padding:.0f}%"
        )


# --------------------------------------------------------------------------- #
# shapes: points of one component centred at 0, inside the ball of radius r


def _rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A uniformly random rotation of R^d."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def _truncated_normal(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Standard normal vectors with norm <= TRUNCATE (rejection)."""
    out = np.empty((0, d))
    while out.shape[0] < n:
        z = rng.standard_normal((2 * (n - out.shape[0]) + 16, d))
        out = np.vstack([out, z[np.linalg.norm(z, axis=1) <= TRUNCATE]])
    return out[:n]


def _tube(rng: np.random.Generator, centre: np.ndarray, sigma: float) -> np.ndarray:
    """Points of a curve (rows of ``centre``) with a Gaussian cross-section
    of standard deviation ``sigma`` in every direction, truncated."""
    return centre + sigma * _truncated_normal(rng, centre.shape[0], centre.shape[1])


def _planar(points2: np.ndarray, d: int) -> np.ndarray:
    """2-D points as d-dimensional ones in the first two axes."""
    return np.hstack([points2, np.zeros((points2.shape[0], d - 2))])


def _circle(theta: np.ndarray, radius: float) -> np.ndarray:
    return radius * np.stack([np.cos(theta), np.sin(theta)], axis=1)


def blob(rng, n, r, d):
    return r / TRUNCATE * _truncated_normal(rng, n, d)


def ball(rng, n, r, d):
    v = rng.standard_normal((n, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v * r * rng.random(n)[:, None] ** (1.0 / d)


def elongated(rng, n, r, d, ratio):
    scale = np.full(d, r / TRUNCATE / ratio)
    scale[0] = r / TRUNCATE
    return (_truncated_normal(rng, n, d) * scale) @ _rotation(rng, d).T


def ring(rng, n, r, d, width, span=2 * math.pi):
    """A ring of radius r (1 - width) and cross-section sigma = r width /
    TRUNCATE; ``span`` < 2 pi makes an arc."""
    theta = rng.uniform(0, span, n)
    centre = _planar(_circle(theta, r * (1 - width)), d)
    return _tube(rng, centre, r * width / TRUNCATE)


def curve(rng, n, r, d, periods, amplitude, width):
    """A sine curve y = a sin(2 pi periods x / L) over x in [-L/2, L/2],
    points uniform along its length (rejection on the arc-length density)."""
    half = r * 0.95 * (1 - width) / math.sqrt(1 + amplitude**2)
    a = amplitude * half
    w = 2 * math.pi * periods / (2 * half)
    top = math.sqrt(1 + (a * w) ** 2)
    x = np.empty(0)
    while x.size < n:
        cand = rng.uniform(-half, half, 2 * n)
        keep = rng.random(cand.size) * top <= np.sqrt(1 + (a * w * np.cos(w * cand)) ** 2)
        x = np.concatenate([x, cand[keep]])
    x = x[:n]
    centre = _planar(np.stack([x, a * np.sin(w * x)], axis=1), d)
    return _tube(rng, centre, r * width / TRUNCATE)


def spiral(rng, n, r, d, turns, spacing_share):
    """An Archimedean spiral from radius 0.1 r to 0.9 r over ``turns``
    turns, points uniform along its length, cross-section sigma = the gap
    between its arms x ``spacing_share`` / TRUNCATE."""
    r0, r1 = 0.1 * r, 0.9 * r
    # uniform along the length: the radius (prop. to the angle) has density ~ radius
    u = rng.random(n)
    rad = np.sqrt(r0**2 + u * (r1**2 - r0**2))
    theta = (rad - r0) / (r1 - r0) * turns * 2 * math.pi
    gap = (r1 - r0) / turns
    centre = _planar(np.stack([rad * np.cos(theta), rad * np.sin(theta)], axis=1), d)
    return _tube(rng, centre, gap * spacing_share / TRUNCATE)


def spirals(rng, counts, r, d, turns, spacing_share):
    """Interleaved Archimedean spirals, one cluster per arm (len(counts)
    arms, phases 2 pi j / arms), from radius 0.1 r to 0.9 r over ``turns``
    turns, points uniform along each arm; cross-section sigma = the gap
    between neighbouring arms x ``spacing_share`` / TRUNCATE."""
    arms = len(counts)
    r0, r1 = 0.1 * r, 0.9 * r
    gap = (r1 - r0) / (turns * arms)
    out = []
    for j, n in enumerate(counts):
        rad = np.sqrt(r0**2 + rng.random(n) * (r1**2 - r0**2))
        theta = (rad - r0) / (r1 - r0) * turns * 2 * math.pi + 2 * math.pi * j / arms
        centre = _planar(np.stack([rad * np.cos(theta), rad * np.sin(theta)], axis=1), d)
        out.append(_tube(rng, centre, gap * spacing_share / TRUNCATE))
    return out


def strands(rng, counts, r, d, periods, amplitude, width, gap):
    """Parallel sine curves, one cluster each (len(counts) of them), ``gap``
    x r apart (centre line to centre line), each a :func:`curve` of
    cross-section half-width ``width`` x r (at TRUNCATE sigma)."""
    m = len(counts)
    inner = r * 0.95 / (1 + (m - 1) * gap / 2)
    out = []
    for j, n in enumerate(counts):
        c = curve(rng, n, inner, 2, periods, amplitude, width * r / inner)
        c[:, 1] += (j - (m - 1) / 2) * gap * r
        out.append(_planar(c, d))
    return out


def graded(rng, counts, r, d, periods, amplitude, width, gap, fall):
    """:func:`strands` whose density falls along their length: each curve's
    points are drawn from 4x as many of a :func:`strands` curve, weighted by
    ``fall`` ^ -(x share along the curve), so one end is ``fall`` times as
    dense as the other (the ends alternate between curves)."""
    out = []
    for j, (n, c) in enumerate(
        zip(counts, strands(rng, [4 * n for n in counts], r, 2, periods, amplitude, width, gap))
    ):
        t = (c[:, 0] - c[:, 0].min()) / max(float(np.ptp(c[:, 0])), 1e-300)
        w = fall ** -(t if j % 2 == 0 else 1 - t)
        out.append(_planar(c[rng.choice(c.shape[0], n, replace=False, p=w / w.sum())], d))
    return out


def moons(rng, n0, n1, r, d, width):
    """Two interleaved half rings (2 clusters of n0 and n1 points): radius
    R = r / 1.6, the second turned over and shifted, as scikit-learn's moons."""
    R = r / 1.6
    t0, t1 = rng.uniform(0, math.pi, n0), rng.uniform(0, math.pi, n1)
    a = _circle(t0, R) - [R / 2, -R / 4]
    b = _circle(t1, R) * [1, -1] + [R / 2, -R / 4]
    pts = [_tube(rng, _planar(c, d), R * width / TRUNCATE) for c in (a, b)]
    return pts


def core_shell(rng, n_core, n_shell, r, d, core_share, width):
    """A dense Gaussian core of radius ``core_share`` r inside a shell of
    radius r (1 - width): a ring in 2-D, a sphere in 3-D (2 clusters)."""
    core = (core_share * r / TRUNCATE) * _truncated_normal(rng, n_core, d)
    v = rng.standard_normal((n_shell, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    shell = _tube(rng, v * r * (1 - width), r * width / TRUNCATE)
    return [core, shell]


def linked(rng, n0, n1, r, width):
    """Two interlocking rings (3-D; 2 clusters of n0 and n1 points): each of
    radius R = r / 1.55 (so both fit in the ball of radius r), one in the
    xy-plane, the other in the xz-plane through the first's rim."""
    R = r / 1.55
    a = np.hstack([_circle(rng.uniform(0, 2 * math.pi, n0), R), np.zeros((n0, 1))])
    c = _circle(rng.uniform(0, 2 * math.pi, n1), R)
    b = np.stack([c[:, 0] + R, np.zeros(n1), c[:, 1]], axis=1)
    shift = np.array([R / 2, 0.0, 0.0])
    sig = R * width / TRUNCATE
    return [_tube(rng, a - shift, sig), _tube(rng, b - shift, sig)]


# --------------------------------------------------------------------------- #
# components: (kind, clusters, radius factor, weight) -> points per cluster


@dataclass
class _Component:
    kind: str
    radius: float
    weights: list  # one per cluster
    params: dict

    @property
    def clusters(self) -> int:
        return CLUSTERS[self.kind]


def _draw_component(rng: np.random.Generator, family: str, d: int, slots: int, h: float) -> _Component:
    """A component of ``family`` using at most ``slots`` clusters."""
    size = math.exp(rng.uniform(-0.7 * h, 0.7 * h))

    def weight():
        return math.exp(rng.uniform(-1.7 * h, 1.7 * h))

    kind, p = family, {}
    if family == "blob":
        kind = "ball" if rng.random() < 0.3 else "blob"
    elif family == "elongated":
        p["ratio"] = float(rng.uniform(2.5, 8))
    elif family == "ring":
        p["width"] = float(rng.uniform(0.05, 0.18))
    elif family == "arc":
        if d == 2 and slots >= 2 and rng.random() < 0.35:
            kind = "moons"
            p["width"] = float(rng.uniform(0.08, 0.22))
        else:
            p["width"] = float(rng.uniform(0.06, 0.2))
            p["span"] = float(rng.uniform(0.5, 1.5) * math.pi)
    elif family == "curve":
        p.update(
            periods=float(rng.uniform(1, 2.5)),
            amplitude=float(rng.uniform(0.15, 0.45)),
            width=float(rng.uniform(0.04, 0.1)),
        )
    elif family == "spiral":
        p.update(turns=float(rng.uniform(1.5, 3)), spacing_share=float(rng.uniform(0.12, 0.3)))
    elif family == "core_shell":
        p.update(core_share=float(rng.uniform(0.2, 0.4)), width=float(rng.uniform(0.06, 0.14)))
    elif family == "linked":
        p["width"] = float(rng.uniform(0.08, 0.16))
    elif family == "spirals":
        kind = "spirals3" if slots >= 3 and rng.random() < 0.4 else "spirals"
        p.update(turns=float(rng.uniform(1.5, 3)), spacing_share=float(rng.uniform(0.15, 0.35)))
    elif family == "strands":
        kind = "strands3" if slots >= 3 and rng.random() < 0.4 else "strands"
        p.update(
            periods=float(rng.uniform(1, 2)),
            amplitude=float(rng.uniform(0.1, 0.3)),
            width=float(rng.uniform(0.02, 0.045)),
            gap=float(rng.uniform(0.12, 0.22)),
        )
    elif family == "tight":
        kind = "tight3" if slots >= 3 and rng.random() < 0.4 else "tight"
        p.update(turns=float(rng.uniform(3, 5)), spacing_share=float(rng.uniform(0.15, 0.3)))
    elif family in ("parallel", "graded"):
        kind = family + "3" if slots >= 3 and rng.random() < 0.4 else family
        width = float(rng.uniform(0.008, 0.03))
        p.update(
            periods=float(rng.uniform(1, 2)),
            amplitude=float(rng.uniform(0.1, 0.3)),
            width=width,
            gap=float(2 * width * rng.uniform(1.5, 4)),
        )
        if family == "graded":
            p["fall"] = float(rng.uniform(3, 30))
    if CLUSTERS[kind] > slots:  # no room for a pair: a single cluster instead
        kind, p = "blob", {}
    w = [weight() for _ in range(CLUSTERS[kind])]
    if kind == "core_shell":
        # dense core, sparse shell: the core holds 0.7..2x the shell's points
        # in a much smaller volume
        w = [w[0], w[0] / rng.uniform(0.7, 2.0)]
    return _Component(kind, size, w, p)


def _points(rng: np.random.Generator, comp: _Component, counts: list, r: float, d: int) -> list:
    """Points of each cluster of ``comp`` at radius ``r``, centred at 0, rotated."""
    k, p = comp.kind, comp.params
    if k == "blob":
        parts = [blob(rng, counts[0], r, d)]
    elif k == "ball":
        parts = [ball(rng, counts[0], r, d)]
    elif k == "elongated":
        return [elongated(rng, counts[0], r, d, p["ratio"])]  # rotated already
    elif k in ("ring", "arc"):
        parts = [ring(rng, counts[0], r, d, p["width"], p.get("span", 2 * math.pi))]
    elif k == "curve":
        parts = [curve(rng, counts[0], r, d, p["periods"], p["amplitude"], p["width"])]
    elif k == "spiral":
        parts = [spiral(rng, counts[0], r, d, p["turns"], p["spacing_share"])]
    elif k == "moons":
        parts = moons(rng, counts[0], counts[1], r, d, p["width"])
    elif k.startswith("spirals"):
        parts = spirals(rng, counts, r, d, p["turns"], p["spacing_share"])
    elif k.startswith("tight"):
        parts = spirals(rng, counts, r, d, p["turns"], p["spacing_share"])
    elif k.startswith("parallel"):
        parts = strands(rng, counts, r, d, p["periods"], p["amplitude"], p["width"], p["gap"])
    elif k.startswith("graded"):
        parts = graded(rng, counts, r, d, p["periods"], p["amplitude"], p["width"], p["gap"], p["fall"])
    elif k.startswith("strands"):
        parts = strands(rng, counts, r, d, p["periods"], p["amplitude"], p["width"], p["gap"])
    elif k == "core_shell":
        parts = core_shell(rng, counts[0], counts[1], r, d, p["core_share"], p["width"])
    else:  # linked
        parts = linked(rng, counts[0], counts[1], r, p["width"])
    rot = _rotation(rng, d)
    return [q @ rot.T for q in parts]


def _describe(comp: _Component, counts: list, r: float) -> str:
    extra = {
        "elongated": lambda p: f" ratio {p['ratio']:.1f}",
        "arc": lambda p: f" {math.degrees(p['span']):.0f} deg",
        "spiral": lambda p: f" {p['turns']:.1f} turns",
        "spirals": lambda p: f" {p['turns']:.1f} turns",
        "spirals3": lambda p: f" {p['turns']:.1f} turns",
        "strands": lambda p: f" gap {p['gap']:.2f}",
        "strands3": lambda p: f" gap {p['gap']:.2f}",
        "curve": lambda p: f" {p['periods']:.1f} periods",
        "tight": lambda p: f" {p['turns']:.1f} turns, spacing {p['spacing_share']:.2f}",
        "tight3": lambda p: f" {p['turns']:.1f} turns, spacing {p['spacing_share']:.2f}",
        "parallel": lambda p: f" gap {p['gap']:.3f} width {p['width']:.3f}",
        "parallel3": lambda p: f" gap {p['gap']:.3f} width {p['width']:.3f}",
        "graded": lambda p: f" gap {p['gap']:.3f} width {p['width']:.3f} fall {p['fall']:.0f}x",
        "graded3": lambda p: f" gap {p['gap']:.3f} width {p['width']:.3f} fall {p['fall']:.0f}x",
    }.get(comp.kind, lambda p: "")
    pts = "+".join(f"{c:,}" for c in counts)
    return f"{comp.kind}{extra(comp.params)} (r {r:.3f}, {pts} pts)"


def _place(rng: np.random.Generator, radii: np.ndarray, sides: np.ndarray, gap: float):
    """Centres in the frame [0, sides] with bounding balls g (r_i + r_j)
    apart; shrinks the radii by 8% and restarts when one finds no room.
    Returns (centres, radii)."""
    order = np.argsort(-radii, kind="stable")
    for _ in range(200):
        centres = np.zeros((radii.size, sides.size))
        placed: list[int] = []
        ok = True
        for i in order:
            lo, hi = radii[i] * np.ones_like(sides), sides - radii[i]
            if np.any(hi <= lo):
                ok = False
                break
            for _ in range(400):
                c = rng.uniform(lo, hi)
                if all(np.linalg.norm(c - centres[j]) >= (1 + gap) * (radii[i] + radii[j]) for j in placed):
                    break
            else:
                ok = False
                break
            centres[i] = c
            placed.append(i)
        if ok:
            return centres, radii
        radii = radii * 0.92
    raise RuntimeError("could not place the components")  # pragma: no cover - radii shrink to 0


def _bridge(rng, a, b, ra, rb, n, sigma, d):
    """Points on the segment between the rims of two placed components
    (reaching 30% of each radius into it), with a thin cross-section."""
    u = (b - a) / np.linalg.norm(b - a)
    p0, p1 = a + 0.7 * ra * u, b - 0.7 * rb * u
    t = rng.random(n)[:, None]
    return _tube(rng, p0 + t * (p1 - p0), sigma)


def scene(seed: int) -> Scene:
    """The labelled scene of ``seed`` (module docstring)."""
    return _scene(seed, TAG, None, (N_MIN, N_MAX))  # bit for bit as before the close and small families


def close_scene(seed: int) -> Scene:
    """A labelled scene of thin shapes next to each other (``seed``'s own
    stream, tag :data:`CLOSE_TAG`): drawn as :func:`scene` draws, its
    palette from :data:`CLOSE_FAMILIES` (interleaved spirals, parallel
    curves) and the plain ``spiral`` and ``curve`` families, n log-uniform
    in :data:`CLOSE_N`."""
    return _scene(seed, CLOSE_TAG, (*CLOSE_FAMILIES, "spiral", "curve"), CLOSE_N)


def small_scene(seed: int) -> Scene:
    """A small labelled 2-D scene of thin shapes side by side (``seed``'s
    own stream, tag :data:`SMALL_TAG`; issue 28): drawn as :func:`scene`
    draws, its palette from :data:`SMALL_FAMILIES` (interleaved spirals,
    parallel curves, single spirals and curves, arcs and moons), n
    log-uniform in :data:`SMALL_N` and k in :data:`SMALL_K`, always 2-D
    (the dimension draw is made and ignored, so the stream is the close
    scenes' in shape)."""
    return _scene(seed, SMALL_TAG, SMALL_FAMILIES, SMALL_N, SMALL_K, only_2d=True)


def thin_scene(seed: int) -> Scene:
    """A labelled scene of thin shapes side by side at every size and in 2-D
    and 3-D alike (``seed``'s own stream, tag :data:`THIN_TAG`; issue 28):
    the palette of :func:`small_scene` (:data:`SMALL_FAMILIES`), k in
    :data:`SMALL_K`, n log-uniform in :data:`THIN_N`, 3-D with probability
    :data:`THIN_SHARE_3D`."""
    return _scene(seed, THIN_TAG, SMALL_FAMILIES, THIN_N, SMALL_K, share_3d=THIN_SHARE_3D)


def curves_scene(seed: int) -> Scene:
    """A labelled scene of thin shapes nearer each other than
    :func:`thin_scene`'s (``seed``'s own stream, tag :data:`CURVES_TAG`;
    issue 28 item 3, results/scenes/curves.md): drawn as :func:`scene`
    draws, its palette from :data:`CURVES_FAMILIES` (tightly wound
    interleaved spirals, parallel thin curves of varying gap, parallel
    curves of varying density), k in :data:`SMALL_K`, n log-uniform in
    :data:`CURVES_N`, 3-D with probability :data:`CURVES_SHARE_3D`."""
    return _scene(seed, CURVES_TAG, CURVES_FAMILIES, CURVES_N, SMALL_K, share_3d=CURVES_SHARE_3D)


def dimension(seed: int, close: bool = False) -> int:
    """The dimension of :func:`scene` (``close``: :func:`close_scene`) of
    ``seed``, the first draw of its stream, without drawing the rest."""
    return _dimension(np.random.default_rng(np.random.SeedSequence([CLOSE_TAG if close else TAG, int(seed)])))


def _dimension(rng: np.random.Generator) -> int:
    return 2 if rng.random() < 0.7 else 3


def _scene(
    seed: int,
    tag: int,
    palette_from: tuple | None,
    n_range: tuple,
    k_range: tuple = (K_MIN, K_MAX),
    only_2d: bool = False,
    share_3d: float | None = None,
) -> Scene:
    rng = np.random.default_rng(np.random.SeedSequence([tag, int(seed)]))
    d = _dimension(rng) if share_3d is None else (3 if rng.random() < share_3d else 2)
    d = 2 if only_2d else d  # only_2d: the draw is made all the same
    n = int(round(math.exp(rng.uniform(math.log(n_range[0]), math.log(n_range[1])))))
    k = int(math.floor(math.exp(rng.uniform(math.log(k_range[0]), math.log(k_range[1] + 1)))))
    k = min(max(k, k_range[0]), k_range[1])
    families = [f for f in (palette_from or FAMILIES) if d == 3 or f != "linked"]
    palette = list(rng.choice(families, size=int(rng.integers(1, 4)), replace=False))
    h = float(rng.random())
    noise = float(rng.uniform(0, MAX_NOISE))
    sides = np.ones(d)
    sides[1:] = rng.uniform(0.6, 1.0, d - 1)
    sides = rng.permutation(sides)

    comps: list[_Component] = []
    slots = k
    while slots > 0:
        c = _draw_component(rng, str(rng.choice(palette)), d, slots, h)
        comps.append(c)
        slots -= c.clusters

    # common radius: the bounding balls fill a share phi of the frame
    phi = rng.uniform(0.12, 0.3)
    unit = math.pi ** (d / 2) / math.gamma(d / 2 + 1)
    size = np.array([c.radius for c in comps])
    r0 = (phi * float(np.prod(sides)) / (unit * float(np.sum(size**d)))) ** (1 / d)
    gap = float(rng.uniform(0.05, 0.35))
    centres, radii = _place(rng, r0 * size, sides, gap)

    n_bridges = int(rng.integers(1, 4)) if rng.random() < 0.35 else 0
    bridge_share = rng.uniform(0.003, 0.015, n_bridges)
    n_noise = int(round(noise * n))
    n_bridge = [int(round(s * n)) for s in bridge_share]
    n_clustered = n - n_noise - sum(n_bridge)
    w = np.array([x for c in comps for x in c.weights])
    counts = np.maximum(np.floor(w / w.sum() * n_clustered).astype(np.int64), MIN_CLUSTER_POINTS)

    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    desc = []
    label, at = 0, 0
    for c, centre, r in zip(comps, centres, radii):
        cc = [int(x) for x in counts[at : at + c.clusters]]
        at += c.clusters
        for part in _points(rng, c, cc, r, d):
            xs.append(part + centre)
            ys.append(np.full(part.shape[0], label))
            label += 1
        desc.append(_describe(c, cc, r))

    if n_bridges:
        # the nearest pairs of distinct components
        dist = np.linalg.norm(centres[:, None] - centres[None], axis=2) - radii[:, None] - radii[None]
        iu = np.triu_indices(len(comps), 1)
        pairs = np.argsort(dist[iu], kind="stable")[:n_bridges]
        for m, i, j in zip(n_bridge, iu[0][pairs], iu[1][pairs]):
            sigma = float(rng.uniform(0.002, 0.006))
            xs.append(_bridge(rng, centres[i], centres[j], radii[i], radii[j], m, sigma, d))
            ys.append(np.full(m, -1))
        n_bridges = len(pairs)
    xs.append(rng.uniform(0, sides, (n_noise, d)))
    ys.append(np.full(n_noise, -1))
    X = np.clip(np.vstack(xs), 0, sides)
    y = np.concatenate(ys).astype(np.int64)
    perm = rng.permutation(y.size)
    X, y = X[perm], y[perm]

    # units and the public box
    scale = 10 ** rng.uniform(-1, 3)
    shift = rng.uniform(-5, 5, d) * scale
    padding = float(rng.uniform(0, MAX_PADDING))
    split = rng.random(d)
    frame = (shift, sides * scale + shift)
    lower = shift - split * padding * sides * scale
    upper = frame[1] + (1 - split) * padding * sides * scale
    X = X * scale + shift
    X = np.clip(X, frame[0], frame[1])  # rounding: stay inside the frame

    tags = {f"{d}d"} | {_family(c.kind) for c in comps}
    if n_bridges:
        tags.add("bridges")
    if noise >= 0.05:
        tags.add("noise")
    if h >= 0.6:
        tags.add("varied")
    return Scene(
        int(seed),
        X,
        y,
        lower,
        upper,
        frame,
        label,
        noise,
        padding,
        n_bridges,
        h,
        tuple(desc),
        frozenset(tags),
    )


def _family(kind: str) -> str:
    return {
        "ball": "blob",
        "moons": "arc",
        "spirals3": "spirals",
        "strands3": "strands",
        "tight3": "tight",
        "parallel3": "parallel",
        "graded3": "graded",
    }.get(kind, kind)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="describe scenes")
    ap.add_argument("seeds", type=int, nargs="+")
    args = ap.parse_args(argv)
    for s in args.seeds:
        print(scene(s).describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
