"""The ball weights held as a table of distinct values and an index
(issue 30: 8-D with two sub-cells ran out of memory building them): the
weights against a straightforward oracle, bit for bit; what is read from them
a row or a block at a time against the whole matrix; the sub-cells' kappa_q
counted against the enumerated neighbourhoods."""

import itertools
import math

import numpy as np
import pytest
from test_compiled_density import _release

from dpdbscan.cells.subcells import _kappa_q, _sub_offsets
from dpdbscan.post.coretests.density import ball_weights, weightedsums
from dpdbscan.post.coretests.density.densitymargin import _rounded, row_keys
from dpdbscan.post.coretests.density.weights import _BINS, _weight


def _oracle(d: int, eta: float, k: int, estimate: str):
    """Every offset of the (2 reach + 1)^d cube and every sub-position: the
    squared gaps added axis by axis from 0, an offset kept where some
    position's sum is below the limit, the weight of the position's sorted
    per-axis types (reflected to o <= 0) where its own sum is."""
    centre = estimate == "centre"
    A = (4.0 * math.sqrt(d) / eta) ** 2
    reach = int(math.ceil(math.sqrt(A))) + 1
    lim = A * (1 - 1e-12)

    def gap2(o: int, s: int) -> float:
        lo, hi = ((s + 0.5) / k, (s + 0.5) / k) if centre else (s / k, (s + 1) / k)
        return max(o - hi, lo - (o + 1), 0.0) ** 2

    positions = list(itertools.product(range(k), repeat=d))
    rows: dict[tuple, list[float]] = {}
    support = np.zeros(len(positions), dtype=np.int64)
    for o in itertools.product(range(-reach, reach + 1), repeat=d):
        ws, within = [], []
        for pos in positions:
            acc = 0.0
            for oi, s in zip(o, pos):
                acc += gap2(oi, s)
            within.append(acc < lim)
            types = tuple(sorted(min((oi, s), (-oi, k - 1 - s)) for oi, s in zip(o, pos)))
            ws.append(min(max(_weight(types, k, centre, A, _BINS), 0.0), 1.0) if acc < lim else 0.0)
        if any(within):
            rows[o] = ws
            support += np.array(within)
    offsets = np.array(sorted(rows), dtype=np.int64).reshape(-1, d)
    W = np.array([rows[tuple(o)] for o in offsets.tolist()]).T
    return positions, offsets, W, support


@pytest.mark.parametrize(
    "d,k,eta,estimate",
    [
        (1, 3, 4.0, "average"),
        (2, 2, 4.0, "average"),
        (2, 3, 2.0, "centre"),
        (2, 4, 4.0, "average"),
        (3, 2, 4.0, "average"),
        (3, 2, 3.0, "centre"),
        (3, 3, 4.0, "average"),
    ],
)
def test_the_weights_are_the_oracles_bit_for_bit(d, k, eta, estimate):
    positions, offsets, W, support = _oracle(d, eta, k, estimate)
    bw = ball_weights(d, eta, k, estimate)
    assert bw.positions == tuple(positions)
    assert np.array_equal(bw.offsets, offsets)
    assert np.array_equal(bw.W, W)
    assert np.array_equal(bw.support, support)


@pytest.mark.parametrize("d,k,eta", [(2, 3, 4.0), (3, 2, 4.0), (4, 2, 4.0), (3, 3, 2.0), (5, 2, 4.0)])
def test_rows_blocks_and_extremes_are_the_matrix_s(d, k, eta):
    """What the density test reads a row or a block at a time equals the
    whole matrix's, bit for bit (the row sums as W.sum(axis=1) adds them)."""
    bw = ball_weights(d, eta, k)
    W = np.asarray(bw.W)
    for r in range(W.shape[0]):
        assert np.array_equal(bw.row(r), W[r])
    assert np.array_equal(bw.transposed(), W.T) and bw.transposed().flags.c_contiguous
    assert np.array_equal(bw.transposed(1, 3), W[1:3].T)
    cols = np.array([0, W.shape[1] // 2, W.shape[1] - 1])
    assert np.array_equal(bw.columns(cols), W[:, cols])
    assert np.array_equal(bw.kmax, W.max(axis=0)) and np.array_equal(bw.kmin, W.min(axis=0))
    assert np.array_equal(bw.sums, W.sum(axis=1))
    assert np.array_equal(bw.sums_of_squares, (W * W).sum(axis=1))
    assert np.array_equal(bw.support, [np.count_nonzero(bw.index[r]) for r in range(W.shape[0])])


@pytest.mark.parametrize("d,k", [(2, 2), (2, 3), (3, 2), (3, 3), (4, 2)])
def test_rows_of_a_class_hold_one_multiset_and_share_one_key(d, k):
    bw = ball_weights(d, 4.0, k)
    W = np.asarray(bw.W)
    keys = row_keys(bw)
    assert row_keys(bw) is keys
    for r, c in enumerate(bw.row_classes.tolist()):
        assert c <= r and bw.row_classes[c] == c
        assert np.array_equal(np.sort(W[r]), np.sort(W[c]))
        assert keys[r] == _rounded(W[r].copy()) and keys[r] is keys[c]
    if k == 2:  # every row of two sub-cells is a reflection of the first
        assert set(bw.row_classes.tolist()) == {0}


@pytest.mark.parametrize(
    "d,k,eta", [(1, 2, 4.0), (2, 2, 4.0), (2, 5, 1.0), (3, 2, 4.0), (3, 3, 2.0), (3, 4, 3.0), (4, 3, 4.0)]
)
def test_kappa_q_is_counted_as_the_neighbourhoods_enumerate_it(d, k, eta):
    assert _kappa_q(d, eta, k) == max(len(o) for _, o in _sub_offsets(d, eta, k))
    assert _kappa_q(d, eta, k) == int(ball_weights(d, eta, k).support.max())


@pytest.mark.parametrize("d,k,side", [(4, 2, 6), (3, 3, 7)])
def test_the_run_sums_by_blocks_of_positions_are_the_whole_s(monkeypatch, d, k, side):
    """The compiled run sums read the weights a block of positions at a time:
    each sum is one query's and one position's, the same bit for bit."""
    hist = _release("sparse", d, side, False, 31 + d)
    g = hist.grid
    w = ball_weights(d, 4.0, k)
    query = g.encode(g.all_coords())
    rvals = hist.values.astype(np.float64)
    whole = weightedsums._compiled_run_sums(g, hist.released_keys, rvals, w, query)
    monkeypatch.setattr(weightedsums, "_WEIGHT_BLOCK", 3 * w.offsets.shape[0])
    blocks = weightedsums._compiled_run_sums(g, hist.released_keys, rvals, w, query)
    assert np.count_nonzero(whole) > 0 and np.array_equal(whole, blocks)
