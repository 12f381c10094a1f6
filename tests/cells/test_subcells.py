"""The sub-positions' neighbourhoods NB(q) of the bound test, made one
position at a time where holding them all would take gigabytes (8-D with two
sub-cells: 9.7 GB), against the enumerated tuple; the one superset of them
all that the candidate cells are checked on."""

import itertools

import numpy as np
import pytest

from dpdbscan.cells import subcells
from dpdbscan.cells.grid import Grid, neighbour_offsets
from dpdbscan.cells.subcells import SubcellLayout, _sub_offsets, position_offsets, union_offsets


def _rows(offsets: np.ndarray) -> set:
    return set(map(tuple, np.asarray(offsets).tolist()))


@pytest.mark.parametrize(
    "d,k,eta", [(1, 2, 4.0), (2, 2, 4.0), (2, 5, 1.0), (3, 2, 4.0), (3, 3, 2.0), (4, 2, 4.0), (4, 3, 3.0)]
)
def test_the_union_holds_every_position_and_lies_in_nb(d, k, eta):
    union = _rows(union_offsets(d, eta, k))
    every = set()
    for _, offsets in _sub_offsets(d, eta, k):
        every |= _rows(offsets)
    assert every <= union
    # the smallest gaps are those of some position along each axis, so every
    # offset of the union is in some NB(q): the union is exactly theirs
    assert union == every
    assert union <= _rows(neighbour_offsets(d, eta))


@pytest.mark.parametrize("d,k,eta", [(2, 3, 4.0), (3, 2, 2.0), (4, 2, 4.0)])
def test_positions_made_when_read_equal_the_held_ones(d, k, eta, monkeypatch):
    grid = Grid(np.zeros(d), np.ones(d), 0.3, eta)
    held = SubcellLayout(grid, k).positions
    assert isinstance(held, list)
    monkeypatch.setattr(subcells, "_HELD_OFFSETS", 0)
    lazy = SubcellLayout(grid, k).positions
    assert not isinstance(lazy, list) and len(lazy) == len(held) == k**d
    assert [p for p, _ in lazy] == list(itertools.product(range(k), repeat=d))
    for (p, a), (q, b) in zip(lazy, held):
        assert p == q and np.array_equal(a, b)
    assert np.array_equal(lazy[-1][1], position_offsets(d, eta, k, held[-1][0]))
    assert [p for p, _ in lazy[1:3]] == [p for p, _ in held[1:3]]
