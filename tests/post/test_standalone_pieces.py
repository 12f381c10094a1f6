"""A district's pieces must be dense without the places beside them
(post/levelsearch.py: standalone_pieces): the fringe of a busy place, cells
made core by the place's mass within eps of them, is not a place of its own."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from dpdbscan import fit_lonlat
from dpdbscan.post.ladder import sweep
from dpdbscan.post.levelsearch import Cluster, LevelTree, Piece, standalone_pieces, without_places

BOUNDS = (-122.50, 37.70, -122.40, 37.80)  # about 8.8 x 11.1 km
MS = 30


@pytest.fixture(scope="module")
def release():
    """A release's grid and noise (event level, eps 200 m) with crafted
    counts: a station (3 x 3 cells of 100), one cell of 5 beside it (what
    one cell's noise reaches now and then) and, 3 km off, a small place
    of its own (2 x 2 cells of 40)."""
    rng = np.random.default_rng(0)
    lonlat = np.column_stack([rng.uniform(-122.5, -122.4, 200), rng.uniform(37.7, 37.8, 200)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_lonlat(lonlat, bounds=BOUNDS, eps="200m", min_samples=MS, random_state=0)
    h = model.histogram
    values = np.zeros_like(h.values)
    values[20:23, 30:33] = 100  # the station
    values[23, 31] = 5  # beside it
    values[40:42, 30:32] = 40  # a place of its own
    return replace(h, values=values), model.spec


def _cells(keys, sub, k):
    return {tuple(c) for c in (sub.decode(keys) // k).tolist()}


def test_the_fringe_of_a_place_is_dropped_a_place_of_its_own_kept(release):
    hist, spec = release
    k = int(spec.subcells)
    sub = hist.grid.subdivided(k)
    eps = hist.grid.eps
    level = sweep(hist, spec, [eps], [MS])[(eps, MS)]
    cells = sub.decode(level.keys) // k
    station = np.all((cells >= (20, 30)) & (cells <= (22, 32)), axis=1)
    fringe = np.all(cells == (23, 31), axis=1)
    other = np.all((cells >= (40, 30)) & (cells <= (41, 31)), axis=1)
    # the core test makes the fringe cell core through the station beside it
    assert station.any() and fringe.any() and other.any()
    host_span = level.labels[station][0]
    assert np.all(level.labels[fringe] == host_span)
    host = Cluster(0, -1, 0, 0, (host_span,), (0.0,), 0.0, children=(1,), fits=False)
    child = Cluster(1, 0, 0, 0, (host_span,), (0.0,), 0.0)
    # the selected place: the station's sub-cells (its span at birth here)
    placed = replace(
        level,
        keys=level.keys[station],
        labels=np.zeros(int(station.sum()), dtype=np.int64),
        mass=level.mass[station],
    )
    pieces = (
        Piece(0, level.keys[fringe], float(level.mass[fringe].sum())),
        Piece(0, level.keys[other], float(level.mass[other].sum())),
    )
    tree = LevelTree(eps, (level, placed), (0.0, 1.0), (host, replace(child, birth=1, death=1)), (1,), 0.0)
    tree = replace(tree, pieces=pieces)
    kept = standalone_pieces(tree, hist, spec, sub)
    assert [_cells(p.keys, sub, k) for p in kept] == [{(40, 30), (40, 31), (41, 30), (41, 31)}]


def test_without_places_takes_the_places_share_of_each_cell(release):
    hist, spec = release
    k = int(spec.subcells)
    sub = hist.grid.subdivided(k)
    # one sub-cell of a station cell (a quarter of it) and all four of another
    keys = sub.encode(np.array([[40, 60], [42, 62], [42, 63], [43, 62], [43, 63]]))
    out = without_places(hist, sub, keys, k)
    assert out.values[20, 30] == 75 and out.values[21, 31] == 0
    assert out.values[22, 32] == 100 and out.values[40, 30] == 40
    assert hist.values[20, 30] == 100  # the release itself is unchanged
