"""The counting written once over engine primitives (dpdbscan.release.engine):
the contribution bound over partitions of pairs equals the bound over all of
them, in this process and on a Dask cluster, and a reduce that loses a
partition is refused."""

from __future__ import annotations

import numpy as np
import pytest

from dpdbscan.cells.grid import Grid
from dpdbscan.params.specs import UnitBound
from dpdbscan.release import bounding
from dpdbscan.release.bounding import BoundingKey, bound_parts, count_units, pairs_of
from dpdbscan.release.engine import LocalEngine, merge_counts

GRID = Grid(np.zeros(2), np.full(2, 10.0), 0.5, 4.0)
BOUND = UnitBound(max_cells_per_unit=3, max_points_per_cell=2, cell_choice="busiest")
KEY = BoundingKey((12345, 678), bytes(range(16)))


def _rows(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 11, (5000, 2))  # some outside the box: clipped
    X[::97] = np.nan  # dropped
    units = rng.integers(0, 300, len(X))
    return X, units


def _parts_by_unit(X, units, n_parts):
    """The rows' pairs in partitions that each hold every row of their units
    (what a shuffle by unit gives)."""
    owner = units % n_parts
    return [pairs_of(GRID, X[owner == i], units[owner == i], KEY) for i in range(n_parts)]


@pytest.mark.parametrize("n_parts", [1, 2, 7])
def test_bounding_partitions_by_unit_equals_bounding_everything(n_parts):
    X, units = _rows()
    want = count_units(GRID, X, units, BOUND, KEY)
    got = bound_parts(LocalEngine(), _parts_by_unit(X, units, n_parts), GRID, KEY, bound=BOUND)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert want[1].sum() > 0


def test_the_choice_of_the_bound_sees_every_units_cells_once():
    X, units = _rows(1)
    seen = []

    def choose(cells):
        seen.append(np.sort(cells))
        return BOUND

    all_pairs = pairs_of(GRID, X, units, KEY)
    got = bound_parts(LocalEngine(), _parts_by_unit(X, units, 4), GRID, KEY, choose=choose)
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], np.sort(bounding.cells_per_unit(all_pairs)))
    want = count_units(GRID, X, units, BOUND, KEY)
    np.testing.assert_array_equal(got[1], want[1])


def test_a_bound_is_needed():
    with pytest.raises(ValueError, match="bound"):
        bound_parts(LocalEngine(), [], GRID, KEY)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as c,
        distributed.Client(c) as client,
    ):
        yield client


def test_the_dask_engine_bounds_as_in_memory_and_refuses_a_lost_partition(client, monkeypatch):
    from dpdbscan.release.backends import dask_backend
    from dpdbscan.release.backends.dask_backend import DaskEngine

    X, units = _rows(2)
    parts = client.scatter(_parts_by_unit(X, units, 5))
    want = count_units(GRID, X, units, BOUND, KEY)
    got = bound_parts(DaskEngine(client, split_every=2), parts, GRID, KEY, bound=BOUND)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])

    def lossy(merge, *parts):
        return dask_backend.__dict__["_merge_counted_kept"](merge, *parts[:-1])

    counts = client.scatter([_counts(X[i::5]) for i in range(5)])
    monkeypatch.setitem(dask_backend.__dict__, "_merge_counted_kept", dask_backend._merge_counted)
    monkeypatch.setattr(dask_backend, "_merge_counted", lossy)
    with pytest.raises(RuntimeError, match="merged 4 partition result.*for 5 partition"):
        DaskEngine(client, split_every=5).reduce(counts, merge_counts)


def _counts(X):
    from dpdbscan.release.backends.dask_backend import count_block

    return count_block(GRID, X)
