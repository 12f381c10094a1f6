"""The strands-join study's keep rule (experiments.strands_join): fragments
along two strands are joined and the span split where the rule without the
join leaves it whole; fragments of strands beside each other are not joined
(the angle test); one broken strand stays whole; the held-out sets follow
the spirals study's rules."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from dpdbscan.research import second_release as sidebyside
from dpdbscan.research import second_rule
from experiments import strands_join

JOIN = {"gap": 3.5, "angle": 45.0, "min_cells": 6}
#: release two's record around one span (the library's rule constants, discrete Laplace at 0.1)
REC = {**second_rule, "noise": "discrete", "count_epsilon": 0.1}
GRID = sidebyside.Grid(np.zeros(3), np.ones(3), 0.03, 1.0)


def broken_strands(rows: tuple[int, ...], length: int = 60, every: int = 12, hole: int = 2) -> dict:
    """One span's release two record: a strand of fine cells two thick along
    x at each y of ``rows`` (z = 1), noisy count 100 a cell, broken every
    ``every`` cells by ``hole`` cells of count 0; every other fine cell of
    its coarse cells (f = 3) 0."""
    f = 3
    hot = set()
    for y in rows:
        for x in range(length):
            if x % every < every - hole:
                hot.update({(x, y, 1), (x, y + 1, 1)})
    cells = np.array(sorted({(x // f, y // f, z // f) for x, y, z in hot}), dtype=np.int64)
    kids = sidebyside.children(cells, f)
    counts = np.array([100 if tuple(c) in hot else 0 for c in kids.tolist()], dtype=np.int64)
    return {
        "span": 0,
        "f": f,
        "cells": cells,
        "weights": np.full(len(cells), 300.0),
        "fine": kids,
        "counts": counts,
    }


def test_fragments_along_two_strands_are_joined_and_split():
    span = broken_strands((10, 14))
    # the library's rule: every fragment covers a sixth of the span: no split
    assert sidebyside.pieces_of(span, GRID, REC) is None
    got = strands_join.pieces_joined(span, GRID, REC, JOIN)
    assert got is not None
    kept, piece = got
    assert sorted(set(piece.tolist())) == [0, 1]
    ys = [sorted(set(kept[piece == p, 1].tolist())) for p in (0, 1)]
    assert sorted(ys) == [[10, 11], [14, 15]]


def test_strands_beside_each_other_are_not_joined():
    """Fragments of two strands three fine cells apart are within the gap,
    but the step between them is across the strands' axes: not joined."""
    span = broken_strands((10, 13))
    fine, noisy = span["fine"], span["counts"]
    lo = fine.min(axis=0)
    arr = np.zeros(tuple((fine.max(axis=0) - lo + 1).tolist()), dtype=np.int64)
    arr[tuple((fine - lo).T)] = noisy
    lab, nl = ndimage.label(arr >= 28, structure=np.ones((3, 3, 3)))
    grp = strands_join.groups(lab, arr, nl, 3.5, 45.0, 6)
    by_group: dict[int, set[int]] = {}
    for c in range(1, nl + 1):
        ys = set((np.argwhere(lab == c)[:, 1] + lo[1]).tolist())
        by_group.setdefault(int(grp[c]), set()).update(ys)
    assert sorted(map(sorted, by_group.values())) == [[10, 11], [13, 14]]
    # an angle test that passes every step (over 90 degrees) joins across at the same gap
    assert len(set(strands_join.groups(lab, arr, nl, 3.5, 91.0, 6)[1:].tolist())) == 1


def test_one_broken_strand_stays_whole():
    assert strands_join.pieces_joined(broken_strands((10,)), GRID, REC, JOIN) is None


def test_the_held_out_rules():
    r = {"d": 3, "n": 10_000, "k": 2, "tags": ["3d", "strands"]}
    assert strands_join.t_rule(r) and strands_join.g_rule(r)
    assert not strands_join.t_rule({**r, "n": 25_000})  # 3-D from 20,000: release two already
    assert strands_join.t_rule({**r, "d": 2, "n": 25_000})
    assert not strands_join.t_rule({**r, "k": 4})
    assert not strands_join.t_rule({**r, "tags": ["3d", "curve"]}) and strands_join.g_rule(r)
    assert strands_join.scene_of(90_001).tags == strands_join.scenes.thin_scene(90_001).tags
